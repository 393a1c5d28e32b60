//! Grounding on a real world: answers from real transcripts (`grounding/answers.toml`: the local
//! model's, the fake model's, the oracle's) judged against the world each task prepares, and the
//! verifier carrying the grounding it read.

use backend::postgres::PostgresSource;
use backend::{Cluster, World, WorldSpec};
use records::{Groundedness, ReferenceKind};
use serde::Deserialize;
use tasks::{Verdict, Verifier};

#[derive(Deserialize)]
struct Answers {
    answer: Vec<Answer>,
}

#[derive(Deserialize)]
struct Answer {
    /// Where the answer comes from (a model and run, the fake model, an oracle plan).
    source: String,
    module: String,
    task: String,
    text: String,
    /// Every reference, in order: [text, kind, status].
    expect: Vec<[String; 3]>,
}

#[tokio::test]
async fn answers_of_real_transcripts_are_grounded_as_written_down() {
    let answers: Answers = toml::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grounding/answers.toml")).unwrap()).unwrap();
    assert!(answers.answer.len() >= 10, "the fixture holds its answers");
    let source = PostgresSource::from_env().await.unwrap_or_else(|e| panic!("{e}"));
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let world = World::create(cluster.clone(), &format!("ground{}", std::process::id()), WorldSpec::default()).await.unwrap();
    let root = tasks::default_tasks_dir();
    let mut failures = Vec::new();
    for a in &answers.answer {
        let task =
            tasks::load_module(&root, &a.module).unwrap().into_iter().find(|t| t.id == a.task).unwrap_or_else(|| panic!("no task {}/{}", a.module, a.task));
        task.prepare(&world).await.unwrap();
        let g = tasks::grounding::ground(&world.pool(), &a.text).await.unwrap();
        let got: Vec<[String; 3]> = g.references.iter().map(|r| [r.text.clone(), json(&r.kind), json(&r.status)]).collect();
        if got != a.expect {
            failures.push(format!("{} ({}): {:?}\n  got:  {got:?}\n  want: {:?}", a.task, a.source, a.text, a.expect));
        }
    }
    world.destroy().await.unwrap();
    cluster.close().await;
    source.shutdown().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn json<T: serde::Serialize>(x: &T) -> String {
    serde_json::to_value(x).unwrap().as_str().unwrap().to_owned()
}

/// The verifier reads grounding in the state it judges; it has none when it could not score.
#[tokio::test]
async fn the_verifier_keeps_the_grounding_it_read() {
    let source = PostgresSource::from_env().await.unwrap_or_else(|e| panic!("{e}"));
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let world = World::create(cluster.clone(), &format!("groundv{}", std::process::id()), WorldSpec::default()).await.unwrap();
    let pool = world.pool();
    let verifier: Verifier = toml::from_str("[answer]\nmust_mention = [\"resolved\"]\n").unwrap();
    let baseline = verifier.baseline(&pool).await.unwrap();
    let outcome = verifier.verify(&pool, &baseline, "Ticket 77 is resolved, and so is ticket 99999.").await;
    assert_eq!(outcome.verdict, Verdict::Passed);
    let g = outcome.grounding.expect("read");
    let kinds: Vec<(ReferenceKind, Groundedness)> = g.references.iter().map(|r| (r.kind, r.status)).collect();
    assert_eq!(kinds, vec![(ReferenceKind::Ticket, Groundedness::Grounded), (ReferenceKind::Ticket, Groundedness::Hallucinated)]);
    assert_eq!(g.references[1].detail.as_deref(), Some("no ticket 99999"));

    // A ticket the session created is grounded: the world is read as the session left it.
    sqlx::query("INSERT INTO tickets (title, description, status, priority, created_at, updated_at) VALUES ('x', 'x', 'open', 'low', now(), now())")
        .execute(&pool)
        .await
        .unwrap();
    let created: i64 = sqlx::query_scalar("SELECT max(id) FROM tickets").fetch_one(&pool).await.unwrap();
    let outcome = verifier.verify(&pool, &baseline, &format!("Opened ticket #{created}; it is resolved.")).await;
    assert_eq!(outcome.grounding.expect("read").count(Groundedness::Grounded), 1);

    let broken: Verifier = toml::from_str("[[sql]]\nname = \"bad\"\nquery = \"SELECT nope FROM nowhere\"\nexpect = 1\n").unwrap();
    let outcome = broken.verify(&pool, &tasks::verify::Baseline::default(), "Ticket 77 is resolved.").await;
    assert_eq!(outcome.verdict, Verdict::CouldNotScore);
    assert_eq!(outcome.grounding, None, "no grounding where nothing could be scored");
    world.destroy().await.unwrap();
    cluster.close().await;
    source.shutdown().unwrap();
}
