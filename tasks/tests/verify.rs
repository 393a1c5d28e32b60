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
