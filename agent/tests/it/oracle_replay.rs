//! The oracle's plan meeting an arm that answers otherwise than the plan expects: the arm's
//! failure (`arm_unexpected_result`), named by step, with the calls made so far kept.

use agent::record::{InvalidReason, Validity};

use crate::common::{backend, wrapper_http};

#[tokio::test]
async fn a_step_the_arm_answers_otherwise_is_the_arms_failure_and_the_calls_made_stay() {
    let b = backend().await;
    let server = wrapper_http(b.url()).await;
    // Step 2 expects an error where the arm (rightly) answers: the plan and the arm disagree on
    // what the arm returns, as when a third-party arm answers a step differently.
    let plan: tasks::OraclePlan = toml::from_str(
        r#"
        answer = "never given"
        [[steps]]
        tool = "customers_get"
        args = { id = 1 }
        [[steps]]
        tool = "customers_get"
        args = { id = 2 }
        expect_error = true
        [[steps]]
        tool = "customers_get"
        args = { id = 3 }
        "#,
    )
    .unwrap();
    let out = agent::oracle::run(&server.conn, "What are customers 1 and 2 called?", &plan).await;
    match &out.validity {
        Validity::Invalid { reason: InvalidReason::ArmUnexpectedResult, detail } => {
            assert!(detail.contains("step 2 (customers_get)") && detail.contains("expected to fail but succeeded"), "{detail}")
        }
        other => panic!("expected arm_unexpected_result, got {other:?}"),
    }
    assert_eq!(out.tool_calls.len(), 2, "both calls made stay recorded, the third was never made");
    assert!(out.tool_calls.iter().all(|c| !c.is_error));
    assert_eq!(out.transcript.iter().filter(|e| e["event"] == "call").count(), 2);
    assert_eq!(out.final_answer, None);
    drop(server);
    b.shutdown().await.unwrap();
}
