//! Verifiers on a real world: `same_as_seeded` compares with the freshly seeded value, at any scale.

use backend::postgres::PostgresSource;
use backend::{Cluster, World, WorldSpec};
use tasks::{Verdict, Verifier};

#[tokio::test]
async fn same_as_seeded_holds_at_any_scale_and_catches_a_change() {
    let source = PostgresSource::from_env().await.unwrap_or_else(|e| panic!("{e}"));
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let world = World::create(cluster.clone(), &format!("verify{}", std::process::id()), WorldSpec { seed: 42, scale: 3 }).await.unwrap();
    let verifier: Verifier = toml::from_str(
        r#"
        [[sql]]
        name = "no deploy was added"
        query = "SELECT count(*) FROM deploys"
        same_as_seeded = true

        [[sql]]
        name = "no deploy changed status"
        query = "SELECT md5(string_agg(id || ':' || status, ',' ORDER BY id)) FROM deploys"
        same_as_seeded = true
        "#,
    )
    .unwrap();
    verifier.check().unwrap();
    let pool = world.pool();
    let baseline = verifier.baseline(&pool).await.unwrap();
    let untouched = verifier.verify(&pool, &baseline, "").await;
    assert_eq!(untouched.verdict, Verdict::Passed, "{:?}", untouched.reasons);

    // A change deep in the scale-3 rows, which no fixed count written for scale 1 would see.
    sqlx::query("UPDATE deploys SET status = CASE status WHEN 'failed' THEN 'succeeded' ELSE 'failed' END WHERE id = (SELECT max(id) FROM deploys)")
        .execute(&pool)
        .await
        .unwrap();
    let changed = verifier.verify(&pool, &baseline, "").await;
    assert_eq!(changed.verdict, Verdict::Failed);
    assert_eq!(changed.reasons.len(), 1, "{:?}", changed.reasons);
    assert!(changed.reasons[0].starts_with("no deploy changed status: expected") && changed.reasons[0].contains("(as seeded)"), "{:?}", changed.reasons);

    world.destroy().await.unwrap();
    cluster.close().await;
    source.shutdown().unwrap();
}

/// `Task::prepare`: the reset world plus the task's own `seed.sql` (here a family's n tickets);
/// a seed that fails names its task and leaves nothing half-written.
#[tokio::test]
async fn a_task_seed_adds_its_rows_to_the_reset_world() {
    let source = PostgresSource::from_env().await.unwrap_or_else(|e| panic!("{e}"));
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let world = World::create(cluster.clone(), &format!("seed{}", std::process::id()), WorldSpec::default()).await.unwrap();
    let tasks = tasks::load_module(&tasks::default_tasks_dir(), "tool_orchestrator").unwrap();
    let four = tasks.iter().find(|t| t.id == "initech_handover_n4").expect("the family's size 4");
    let seeded = "SELECT count(*) FROM tickets WHERE customer_id = 6 AND assignee_id = 6 AND status = 'open'";
    let count = |pool| async move { sqlx::query_scalar::<_, i64>(seeded).fetch_one(&pool).await.unwrap() };
    four.prepare(&world).await.unwrap();
    assert_eq!(count(world.pool()).await, 4);
    // Prepared again (the next session), the world holds the seed once, not twice.
    four.prepare(&world).await.unwrap();
    assert_eq!(count(world.pool()).await, 4);

    let mut broken = four.clone();
    broken.seed_sql = Some(
        "INSERT INTO tickets (title, description, status, priority, created_at, updated_at) VALUES ('a', 'b', 'open', 'low', now(), now());\n\
         INSERT INTO nowhere VALUES (1);"
            .into(),
    );
    let e = broken.prepare(&world).await.unwrap_err();
    assert!(e.contains("tool_orchestrator/initech_handover_n4") && e.contains("seed.sql"), "{e}");
    let untitled = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM tickets WHERE title = 'a'").fetch_one(&world.pool()).await.unwrap();
    assert_eq!(untitled, 0, "all of the seed or nothing");

    world.destroy().await.unwrap();
    cluster.close().await;
    source.shutdown().unwrap();
}
