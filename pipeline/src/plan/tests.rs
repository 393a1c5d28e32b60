use records::{Dialect, MaxTokensParam, Temperature};

use super::*;
use crate::input::flags::RunArgs;
use crate::input::spec::InputDirs;

fn flags(args: &[&str]) -> RunArgs {
    RunArgs::from_flags(args).unwrap()
}

#[derive(clap::Parser)]
struct Freeze {
    #[command(flatten)]
    args: crate::commands::freeze::FreezeArgs,
}

#[tokio::test]
async fn pairs_run_both_arms_and_alternate_which_goes_first() {
    let plan = RunPlan::from_flags(&flags(&["--module", "tool_orchestrator", "--models", "oracle", "--k", "3"])).await.unwrap();
    let sessions = plan.sessions();
    let tasks = plan.all_tasks().count();
    assert_eq!(sessions.len(), tasks * 3 * 2);
    let mut pattern_first = 0;
    for (i, pair) in sessions.chunks(2).enumerate() {
        assert_eq!((pair[0].task.id.as_str(), pair[0].rep), (pair[1].task.id.as_str(), pair[1].rep), "a pair is one (task, rep)");
        assert_ne!(pair[0].server.name, pair[1].server.name, "both arms");
        assert_eq!((pair[0].arm_position, pair[1].arm_position), (1, 2));
        let first_is_pattern = pair[0].server.role == Role::Pattern;
        assert_eq!(first_is_pattern, i % 2 == 0, "ABBA: the first arm alternates from pair to pair");
        pattern_first += usize::from(first_is_pattern);
    }
    // 17 tasks × 3 reps is an odd number of pairs: the pattern, first in the first pair, then
    // goes first once more than the control.
    let pairs = sessions.len() / 2;
    assert_eq!(pattern_first, pairs.div_ceil(2), "each arm goes first in half the pairs");
}

#[tokio::test]
async fn a_spec_and_the_same_flags_make_the_same_plan() {
    use clap::Parser;
    let model = [
        "--models",
        "m",
        "--temperature",
        "0.7",
        "--seed",
        "3",
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--k",
        "2",
        "--reasoning-effort",
        "low",
        "--max-tokens",
        "500",
    ];
    let mut freeze_args = vec!["freeze", "--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--exp-name", "same"];
    freeze_args.extend(model);
    let spec = crate::commands::freeze::freeze(&Freeze::parse_from(freeze_args).args).await.unwrap();
    let options = SpecRunOptions {
        results_dir: "results".into(),
        retry_invalid: false,
        skip_preflight: false,
        max_consecutive_invalid: 3,
        request_timeout_secs: 120,
        headers: vec![],
        check: None,
        shard: None,
        otlp_endpoint: None,
        budget: Default::default(),
    };
    let dirs = InputDirs { tasks_dir: None, build_dir: None };
    let from_spec = RunPlan::from_spec(&spec, &dirs, &options).await.unwrap();
    assert!(from_spec.budgets.is_empty(), "no budget unless one is set");
    // A spec pins its budget; the command line may not give another beside it.
    let mut pinned = spec.clone();
    pinned.budget_tokens = Some(5000);
    let plan = RunPlan::from_spec(&pinned, &dirs, &options).await.unwrap();
    assert!(matches!(plan.budgets[..], [crate::budget::Limit::Tokens(5000)]), "{:?}", plan.budgets);
    let both = SpecRunOptions { budget: crate::input::flags::BudgetFlags { budget_tokens: Some(10), ..Default::default() }, ..options.clone() };
    let e = RunPlan::from_spec(&pinned, &dirs, &both).await.unwrap_err().to_string();
    assert!(e.contains("the spec pins its budget") && e.contains("--budget-tokens"), "{e}");
    pinned.budget_tokens = None;
    pinned.budget_usd = Some(2.0);
    let e = RunPlan::from_spec(&pinned, &dirs, &options).await.unwrap_err().to_string();
    assert!(e.contains("--budget-usd 2 needs --prices FILE"), "{e}");
    let mut flag_args = vec!["--module", "tool_orchestrator", "--tasks", "lena_goes_on_leave", "--exp-name", "same"];
    flag_args.extend(model);
    let from_flags = RunPlan::from_flags(&flags(&flag_args)).await.unwrap();

    assert_eq!(from_spec.experiment, from_flags.experiment);
    assert_eq!(from_spec.exp_dir, from_flags.exp_dir);
    assert_eq!((from_spec.reps, from_spec.jobs, from_spec.transport), (from_flags.reps, from_flags.jobs, from_flags.transport));
    assert_eq!(from_spec.manifests, from_flags.manifests);
    let (a, b) = (from_spec.sessions(), from_flags.sessions());
    assert_eq!(a.len(), 4);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.server.name, x.task.id.as_str(), x.rep, x.arm_position), (y.server.name, y.task.id.as_str(), y.rep, y.arm_position));
        let (fx, fy) = (from_spec.fingerprint(x), from_flags.fingerprint(y));
        assert_eq!(fx, fy, "{:?}", fx.differences(&fy));
        assert_eq!(fx.model.temperature, Some(Temperature::Value(0.7)), "the pinned value exactly, not a float32 round trip");
        assert_eq!(
            (fx.model.dialect, fx.model.max_tokens_param, fx.model.reasoning_effort.as_deref()),
            (Some(Dialect::Compatible), Some(MaxTokensParam::MaxTokens), Some("low"))
        );
    }
}

#[tokio::test]
async fn a_catalogue_reaches_its_modules_fingerprints_and_manifests_and_nothing_else() {
    let chosen = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle", "--catalogue", "400"])).await.unwrap();
    let plain = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle"])).await.unwrap();
    for s in chosen.sessions() {
        let want = (s.server.module == "tool_search").then_some(400);
        assert_eq!(chosen.fingerprint(&s).catalogue, want, "{}", s.server.name);
    }
    assert!(plain.sessions().iter().filter(|s| s.server.module == "tool_search").all(|s| plain.fingerprint(s).catalogue == Some(100)));
    // The servers list what the run chose: the control's manifest changes, the other module's does not.
    assert_ne!(chosen.manifests["tool_search_wrapper"], plain.manifests["tool_search_wrapper"]);
    assert_eq!(chosen.manifests["code_execution"], plain.manifests["code_execution"]);
    let (a, b) = (&chosen.sessions()[0], &plain.sessions()[0]);
    let d: Vec<String> = chosen.fingerprint(a).differences(&plain.fingerprint(b)).into_iter().map(|d| d.field).collect();
    assert!(d.contains(&"catalogue".to_owned()), "{d:?}");
}

#[tokio::test]
async fn distractors_reach_every_fingerprint_and_are_refused_past_the_pool_or_as_a_series() {
    let chosen = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle", "--distractors", "10"])).await.unwrap();
    let plain = RunPlan::from_flags(&flags(&["--module", "tool_search,code_execution", "--models", "oracle"])).await.unwrap();
    let sha = servers::distractors::Distractors::draw(10).unwrap().sha256();
    assert!(sha.is_some());
    for s in chosen.sessions() {
        let f = chosen.fingerprint(&s);
        assert_eq!((f.distractors, &f.distractors_sha256), (Some(10), &sha), "every module's sessions, {}", s.server.name);
    }
    assert!(plain.sessions().iter().all(|s| plain.fingerprint(s).distractors.is_none() && plain.fingerprint(s).distractors_sha256.is_none()));
    // The arms' own manifests do not change: distractors are the client's, not the servers'.
    assert_eq!(chosen.manifests, plain.manifests);
    let (a, b) = (&chosen.sessions()[0], &plain.sessions()[0]);
    let d: Vec<String> = chosen.fingerprint(a).differences(&plain.fingerprint(b)).into_iter().map(|d| d.field).collect();
    assert_eq!(d, ["distractors", "distractors_sha256"]);
    let max = servers::distractors::MAX;
    let e = RunPlan::from_flags(&flags(&["--module", "code_execution", "--models", "oracle", "--distractors", &(max + 1).to_string()]))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("--distractors {}", max + 1)) && e.contains(&format!("at most {max}")), "{e}");
    let e = RunPlan::from_flags(&flags(&["--module", "code_execution", "--models", "oracle", "--distractors", "10,50"])).await.unwrap_err().to_string();
    assert!(e.contains("sweep") && e.contains("--distractors"), "{e}");
}

#[test]
fn an_arm_with_a_tool_under_a_distractors_name_is_refused_naming_both() {
    let taken = servers::distractors::Distractors::draw(5).unwrap().names().nth(4).unwrap().to_owned();
    let manifest = |names: &[&str]| servers::ToolManifest {
        server: "mine".into(),
        tools: names
            .iter()
            .map(|n| servers::manifest::ManifestTool { name: (*n).into(), description: String::new(), input_schema: serde_json::json!({}) })
            .collect(),
        resource_templates: vec![],
        resources: false,
        extra: None,
    };
    let arms = std::collections::BTreeMap::from([("mine".to_owned(), manifest(&["lookup", &taken]))]);
    let e = super::lower::drawn(5, &arms).unwrap_err().to_string();
    assert!(e.contains("--distractors 5") && e.contains("arm mine") && e.contains(&taken) && e.contains("rename"), "{e}");
    // One distractor fewer leaves that name out of the draw: nothing shares a name.
    assert_eq!(super::lower::drawn(4, &arms).unwrap().len(), 4);
}

#[tokio::test]
async fn a_catalogue_is_refused_where_no_module_lists_one_or_out_of_range() {
    let e = RunPlan::from_flags(&flags(&["--module", "code_execution", "--models", "oracle", "--catalogue", "100"])).await.unwrap_err().to_string();
    assert!(e.contains("--catalogue 100") && e.contains("tool_search"), "{e}");
    for bad in ["5000", "10"] {
        let e = RunPlan::from_flags(&flags(&["--module", "tool_search", "--models", "oracle", "--catalogue", bad])).await.unwrap_err().to_string();
        assert!(e.contains(&format!("--catalogue {bad}")) && e.contains("25 to 800"), "{e}");
    }
    let e = RunPlan::from_flags(&flags(&["--module", "tool_search", "--models", "oracle", "--catalogue", "25,50"])).await.unwrap_err().to_string();
    assert!(e.contains("sweep"), "{e}");
}

#[tokio::test]
async fn a_scale_override_reaches_every_fingerprint() {
    let plan = RunPlan::from_flags(&flags(&["--mcp", "orchestrator", "--models", "oracle", "--scale", "4"])).await.unwrap();
    assert!(plan.sessions().iter().all(|s| plan.fingerprint(s).world_scale == 4));
    let plain = RunPlan::from_flags(&flags(&["--mcp", "orchestrator", "--models", "oracle"])).await.unwrap();
    let (s, p) = (&plan.sessions()[0], &plain.sessions()[0]);
    let d = plan.fingerprint(s).differences(&plain.fingerprint(p));
    assert_eq!(d.iter().map(|d| d.field.as_str()).collect::<Vec<_>>(), ["world_scale", "world_scale_override"]);
}

#[tokio::test]
async fn a_seed_no_endpoint_takes_is_refused_and_the_largest_one_is_sent_as_pinned() {
    let too_big = (i64::MAX as u64 + 1).to_string();
    let err = RunPlan::from_flags(&flags(&["--module", "tool_orchestrator", "--models", "m", "--temperature", "0", "--seed", &too_big])).await.unwrap_err();
    assert!(format!("{err:#}").contains(&format!("seed {too_big} is larger than an endpoint takes")), "{err:#}");
    let largest = i64::MAX.to_string();
    let plan = RunPlan::from_flags(&flags(&["--module", "tool_orchestrator", "--models", "m", "--temperature", "0", "--seed", &largest])).await.unwrap();
    let config = plan.models[0].provider_config().unwrap();
    assert_eq!(config.seed, Some(i64::MAX));
    assert_eq!(plan.models[0].spec.seed, Some(i64::MAX as u64));
}

#[tokio::test]
async fn the_oracle_counts_in_the_encoding_its_run_s_models_share_and_else_estimates() {
    let oracle_tokenizer = |models: &str| {
        let models = models.to_owned();
        async move {
            let plan =
                RunPlan::from_flags(&flags(&["--module", "resource_gateway", "--models", &models, "--base-url", "http://127.0.0.1:9/v1"])).await.unwrap();
            plan.models.iter().find(|m| m.is_oracle()).unwrap().spec.tokenizer.clone()
        }
    };
    assert_eq!(oracle_tokenizer("oracle,gpt-4o").await.as_deref(), Some("o200k_base"));
    assert_eq!(oracle_tokenizer("oracle,gpt-4.1-mini,o3").await.as_deref(), Some("o200k_base"), "one encoding, two models");
    assert_eq!(oracle_tokenizer("oracle,gpt-4").await.as_deref(), Some("cl100k_base"));
    // Two encodings, a model no encoding is known for, or no model at all: the estimate alone.
    assert_eq!(oracle_tokenizer("oracle,gpt-4o,gpt-4").await, None);
    assert_eq!(oracle_tokenizer("oracle,gpt-4o,qwen2.5-coder-1.5b").await, None);
    assert_eq!(oracle_tokenizer("oracle").await, None);
    // A model is never given one: only the oracle's floors are counted.
    let plan =
        RunPlan::from_flags(&flags(&["--module", "resource_gateway", "--models", "oracle,gpt-4o", "--base-url", "http://127.0.0.1:9/v1"])).await.unwrap();
    assert!(plan.models.iter().filter(|m| !m.is_oracle()).all(|m| m.spec.tokenizer.is_none()));
    // --tokens names it whatever the models are.
    let plan = RunPlan::from_flags(&flags(&[
        "--module",
        "resource_gateway",
        "--models",
        "oracle,gpt-4o",
        "--tokens",
        "cl100k_base",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]))
    .await
    .unwrap();
    assert_eq!(plan.models[0].spec.tokenizer.as_deref(), Some("cl100k_base"));
}
