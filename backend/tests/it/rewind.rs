//! Resetting a world by rewinding it in place ([`ResetMode::Rewind`], the embedded cluster's
//! default): the truth it is held to is a fresh copy of the template — the same rows, hashed,
//! and the same sequences — after writes of every kind to every table.

use std::time::Duration;

use crate::common::{TestBackend, unique_world};
use backend::postgres::PostgresSource;
use backend::world::canonical_dump_hash;
use backend::{Cluster, ResetMode, World, WorldSpec};
use sqlx::PgPool;

/// A small deterministic generator (xorshift64*), so a failing round can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Every table's id sequence: (last value, called).
async fn sequences(pool: &PgPool) -> Vec<(i64, bool)> {
    let mut out = Vec::new();
    for t in backend::seed::TABLES {
        out.push(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT last_value, is_called FROM {t}_id_seq"))).fetch_one(pool).await.unwrap());
    }
    out
}

/// One random write, of a kind a session or a task's seed makes, or a raw one no API route
/// makes (a delete of a row others reference, an explicit id, a failed insert that still takes
/// a sequence value).
async fn random_write(pool: &PgPool, rng: &mut Rng, tag: u64) {
    let k = 1 + rng.below(20) as i64;
    let sql: Vec<String> = match rng.below(12) {
        0 => vec![format!(
            "INSERT INTO tickets (title, description, status, priority, customer_id, assignee_id) VALUES ('rw {tag}', 'd', 'open', 'low', {k}, {k})"
        )],
        1 => vec![format!("UPDATE tickets SET status = 'closed', title = title || ' {tag}', version = version + 1, updated_at = now() WHERE id = {k}")],
        2 => vec![format!("DELETE FROM notifications WHERE ticket_id = {k}"), format!("DELETE FROM tickets WHERE id = {k}")],
        3 => vec![format!(
            "INSERT INTO customers (name, tier, region, contact_email, created_at) VALUES ('Rewind {tag}', 'free', 'eu-west', 'r{tag}@x.example', now())"
        )],
        4 => vec![format!("UPDATE tickets SET customer_id = NULL WHERE customer_id = {k}"), format!("DELETE FROM customers WHERE id = {k}")],
        5 => vec![format!("UPDATE users SET on_call = NOT on_call, team = team || '{tag}' WHERE id = {k}")],
        6 => vec![
            format!("DELETE FROM review_comments WHERE change_request_id = {k}"),
            format!("UPDATE reviews SET body = 'rw {tag}' WHERE change_request_id = {k}"),
        ],
        7 => vec![format!("UPDATE runbooks SET body = body || ' {tag}', internal_notes = NULL WHERE id = {}", 1 + k % 5)],
        8 => vec![format!(
            "INSERT INTO deploys (service_id, version, environment, status, deployed_by, started_at) VALUES ({}, '{tag}.0.0', 'staging', 'succeeded', {k}, now())",
            1 + k % 5
        )],
        9 => vec![format!("UPDATE repos SET description = 'rw {tag}' WHERE id = {}", 1 + k % 5)],
        // An explicit id far past the sequence, then a row written twice.
        10 => vec![
            format!("INSERT INTO notifications (id, user_id, ticket_id, message, read, created_at) VALUES ({}, {k}, NULL, 'rw', false, now())", 900_000 + tag),
            format!("UPDATE notifications SET read = true WHERE id = {}", 900_000 + tag),
        ],
        // A failed insert (a duplicate email) still takes a value of the sequence.
        _ => vec![format!("INSERT INTO users (name, email, team, on_call) SELECT 'dup', email, 'x', false FROM users WHERE id = {k}")],
    };
    for statement in sql {
        // Some writes fail on purpose (the duplicate) or on what an earlier round left.
        let _ = sqlx::query(sqlx::AssertSqlSafe(statement)).execute(pool).await;
    }
}

/// Rounds of random writes — a task's seed among them, then a session's — each ended by a reset:
/// every reset serves the same database again, holding exactly the template's rows, sequences as
/// a fresh copy has them, and empty change logs.
#[tokio::test]
async fn a_rewound_world_equals_a_fresh_copy_after_writes_of_every_kind() {
    let b = TestBackend::start().await;
    let world = &b.world;
    assert_eq!(world.reset_mode(), ResetMode::Rewind, "the embedded cluster's role is a superuser");
    let (database, seeded, fresh_sequences) = (world.database(), b.dump_hash().await, sequences(&world.pool()).await);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut written = 0;
    for round in 0..12u64 {
        let pool = world.pool();
        backend::world::apply_task_seed(&pool, &format!("UPDATE users SET name = name || ' seed {round}' WHERE id = {}", 1 + round)).await.unwrap();
        for i in 0..1 + rng.below(12) {
            random_write(&pool, &mut rng, round * 100 + i).await;
        }
        let undo: i64 = sqlx::query_scalar("SELECT count(*) FROM world_undo").fetch_one(&pool).await.unwrap();
        written += undo;
        assert_ne!(b.dump_hash().await, seeded, "round {round} changed nothing to rewind");
        world.reset(world.spec()).await.unwrap();
        assert_eq!(world.database(), database, "round {round}: the reset cloned a copy instead of rewinding");
        assert_eq!(b.dump_hash().await, seeded, "round {round}: the rewound rows are not the template's");
        assert_eq!(sequences(&world.pool()).await, fresh_sequences, "round {round}: the sequences are not a fresh copy's");
        let logs: (i64, i64) =
            sqlx::query_as("SELECT (SELECT count(*) FROM world_undo), (SELECT count(*) FROM world_changes)").fetch_one(&world.pool()).await.unwrap();
        assert_eq!(logs, (0, 0), "round {round}: the change logs were not emptied");
    }
    assert!(written > 40, "the rounds touched only {written} rows");
    b.shutdown().await;
}

/// A TRUNCATE or a schema change leaves rows a rewind cannot put back: the reset notices and
/// clones a fresh copy instead, in the seeded state, and the copy after it rewinds again.
#[tokio::test]
async fn what_a_rewind_cannot_undo_makes_the_reset_clone_instead() {
    let b = TestBackend::start().await;
    let seeded = b.dump_hash().await;
    for (what, sql) in [
        ("a TRUNCATE", "TRUNCATE notifications"),
        ("a new table", "CREATE TABLE scratch (x int)"),
        ("a changed column", "ALTER TABLE tickets ALTER COLUMN title SET DEFAULT 'x'"),
    ] {
        let before = b.world.database();
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&b.world.pool()).await.unwrap();
        b.world.reset(b.world.spec()).await.unwrap();
        assert_ne!(b.world.database(), before, "{what}: the reset rewound a copy it cannot restore");
        assert_eq!(b.dump_hash().await, seeded, "{what}: the fresh copy is not the seeded state");
        let kept = b.world.database();
        sqlx::query("UPDATE tickets SET title = 'again' WHERE id = 1").execute(&b.world.pool()).await.unwrap();
        b.world.reset(b.world.spec()).await.unwrap();
        assert_eq!((b.world.database(), b.dump_hash().await), (kept, seeded.clone()), "{what}: the fresh copy is rewound again");
    }
    b.shutdown().await;
}

/// A data-plane request still running when a reset starts finishes first: the rewind waits for
/// it. One that runs past the wait's bound is left to finish on the old copy, and the reset
/// clones a fresh one instead of racing it.
#[tokio::test]
async fn a_rewind_waits_for_the_requests_still_running() {
    let b = TestBackend::start().await;
    let world = b.world.clone();
    let before = world.database();
    let request = world.serving().await;
    let reset = tokio::spawn({
        let world = world.clone();
        async move { world.reset(world.spec()).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!reset.is_finished(), "the reset did not wait for the request");
    drop(request);
    reset.await.unwrap().unwrap();
    assert_eq!(world.database(), before, "rewound in place once the request ended");

    let _stuck = world.serving().await;
    tokio::time::timeout(Duration::from_secs(10), world.reset(world.spec())).await.expect("the reset gave up waiting").unwrap();
    assert_ne!(world.database(), before, "a request that outlived the wait: a fresh copy");
    b.shutdown().await;
}

/// A role that is not a superuser cannot rewind (it may not turn foreign keys off): its worlds
/// are reset by cloning, and asking for a rewind gets a clone too.
#[tokio::test]
async fn a_role_that_is_not_a_superuser_resets_by_cloning() {
    let source = PostgresSource::from_env().await.unwrap();
    let admin = Cluster::connect(&source.admin_url()).await.unwrap();
    assert_eq!(admin.default_reset_mode(), ResetMode::Rewind);
    let role = unique_world();
    let url = source.admin_url();
    let root = PgPool::connect(&url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE ROLE {role} LOGIN CREATEDB PASSWORD 'pw-{role}'"))).execute(&root).await.unwrap();
    let (head, tail) = url.split_once('@').unwrap();
    let scheme = &head[..head.find("://").unwrap() + 3];
    let cluster = Cluster::connect(&format!("{scheme}{role}:pw-{role}@{tail}")).await.unwrap();
    assert_eq!(cluster.default_reset_mode(), ResetMode::Clone);
    let world = World::create_with(cluster.clone(), &unique_world(), WorldSpec::default(), ResetMode::Rewind).await.unwrap();
    assert_eq!(world.reset_mode(), ResetMode::Clone);
    let seeded = canonical_dump_hash(&world.pool()).await.unwrap();
    let before = world.database();
    sqlx::query("UPDATE tickets SET title = 'x' WHERE id = 1").execute(&world.pool()).await.unwrap();
    world.reset(world.spec()).await.unwrap();
    assert_ne!(world.database(), before);
    assert_eq!(canonical_dump_hash(&world.pool()).await.unwrap(), seeded);
    world.destroy().await.unwrap();
    cluster.close().await;
    admin.close().await;
    root.close().await;
    source.shutdown().unwrap();
}
