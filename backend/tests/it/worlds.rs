//! Deterministic seeding, reset to the exact seeded state, isolated parallel worlds, and the
//! admin reset endpoint's access rule.

use crate::common;

use crate::common::{TestBackend, unique_world};
use backend::postgres::PostgresSource;
use backend::world::{RETIRING, SPARES};
use backend::{AppState, Cluster, ResetMode, World, WorldSpec};
use serde_json::json;

/// The same (seed, scale) built twice — here on two separate Postgres clusters — gives
/// byte-identical data; another seed does not.
#[tokio::test]
async fn seeding_is_deterministic_across_builds() {
    let spec = WorldSpec { seed: 7, scale: 1 };
    let mut hashes = Vec::new();
    for _ in 0..2 {
        let source = PostgresSource::embedded().await.unwrap();
        let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
        let a = World::create(cluster.clone(), &unique_world(), spec).await.unwrap();
        let b = World::create(cluster.clone(), &unique_world(), WorldSpec { seed: 8, scale: 1 }).await.unwrap();
        hashes.push((backend::world::canonical_dump_hash(&a.pool()).await.unwrap(), backend::world::canonical_dump_hash(&b.pool()).await.unwrap()));
        a.destroy().await.unwrap();
        b.destroy().await.unwrap();
        cluster.close().await;
        source.shutdown().unwrap();
    }
    assert_eq!(hashes[0].0, hashes[1].0, "same seed, different data");
    assert_eq!(hashes[0].1, hashes[1].1, "same seed, different data");
    assert_ne!(hashes[0].0, hashes[0].1, "different seeds, same data");
}

#[tokio::test]
async fn reset_restores_exactly_the_seeded_state() {
    let b = TestBackend::start().await;
    let seeded = b.dump_hash().await;
    let (_, t) = b.post("/tickets", json!({"title": "scribble"})).await;
    b.patch("/tickets/1", json!({"status": "closed", "assignee_id": null})).await;
    b.post("/change_requests/2/reviews", json!({"reviewer_id": 1, "verdict": "approve", "comments": [{"path": "x", "line": 3, "body": "b"}]})).await;
    b.post("/deploys", json!({"service_id": 2, "version": "9.9.9", "environment": "production"})).await;
    b.patch("/users/1", json!({"on_call": false})).await;
    assert_ne!(b.dump_hash().await, seeded);

    b.world.reset(b.world.spec()).await.unwrap();
    assert_eq!(b.dump_hash().await, seeded);
    let (s, _) = b.get(&format!("/tickets/{}", t["id"])).await;
    assert_eq!(s, 404);
    // New rows after a reset get the same ids as on a fresh world.
    let (_, again) = b.post("/tickets", json!({"title": "scribble"})).await;
    assert_eq!(again["id"], t["id"]);

    // Reset to another scale through the control plane's HTTP endpoint (loopback is allowed).
    let (s, r) = b.admin_post("/admin/reset", json!({"scale": 2})).await;
    assert_eq!((s, r["scale"].as_u64()), (200, Some(2)), "{r}");
    let (_, page) = b.get("/tickets?limit=1").await;
    assert_eq!(page["total"], 800);
    let (s, r) = b.admin_post("/admin/reset", json!({"scale": 0})).await;
    assert_eq!((s, r["field"].as_str()), (422, Some("scale")));
    b.shutdown().await;
}

#[tokio::test]
async fn parallel_worlds_are_isolated() {
    let source = PostgresSource::from_env().await.unwrap();
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let spec = WorldSpec::default();
    let worlds = futures_util::future::try_join_all((0..4).map(|_| {
        let (cluster, name) = (cluster.clone(), unique_world());
        async move { World::create(cluster, &name, spec).await }
    }))
    .await
    .unwrap();
    // Each world takes a different write, concurrently.
    futures_util::future::try_join_all(
        worlds
            .iter()
            .enumerate()
            .map(|(i, w)| async move { sqlx::query("UPDATE tickets SET title = $1 WHERE id = 1").bind(format!("world {i}")).execute(&w.pool()).await }),
    )
    .await
    .unwrap();
    for (i, w) in worlds.iter().enumerate() {
        let title: String = sqlx::query_scalar("SELECT title FROM tickets WHERE id = 1").fetch_one(&w.pool()).await.unwrap();
        assert_eq!(title, format!("world {i}"));
    }
    // Resetting all of them at once is fine too.
    futures_util::future::try_join_all(worlds.iter().map(|w| w.reset(spec))).await.unwrap();
    let fresh: Vec<String> =
        futures_util::future::try_join_all(worlds.iter().map(|w| async move { backend::world::canonical_dump_hash(&w.pool()).await })).await.unwrap();
    assert!(fresh.windows(2).all(|p| p[0] == p[1]));
    for w in &worlds {
        w.destroy().await.unwrap();
    }
    cluster.close().await;
    source.shutdown().unwrap();
}

/// The databases of world `name` that exist right now.
async fn databases_of(admin: &sqlx::PgPool, name: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname ~ $1").bind(format!("^world_{name}_[0-9]+$")).fetch_all(admin).await.unwrap()
}

/// Reset by cloning ([`ResetMode::Clone`], what a role that is not a superuser gets): every reset
/// serves a copy never served before (spares are handed out once, dirty copies are only ever
/// dropped), in exactly the seeded state, also across a change of spec; the copies dropped in
/// the background are bounded while they wait and all gone after `destroy`.
#[tokio::test]
async fn each_reset_serves_a_never_served_copy_in_the_seeded_state() {
    let source = PostgresSource::from_env().await.unwrap();
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let admin = sqlx::PgPool::connect(&source.admin_url()).await.unwrap();
    let spec = WorldSpec::default();
    let other = WorldSpec { scale: 2, ..spec };
    let name = unique_world();
    let world = World::create_with(cluster.clone(), &name, spec, ResetMode::Clone).await.unwrap();
    assert_eq!(world.reset_mode(), ResetMode::Clone);
    let seeded = backend::world::canonical_dump_hash(&world.pool()).await.unwrap();
    let mut served = std::collections::HashSet::from([world.database()]);
    // More resets than spares and drop slots, back to back, with a spec change in the middle.
    let specs = [spec, spec, spec, other, other, spec, spec, spec, spec];
    for (i, &next) in specs.iter().enumerate() {
        // Dirty the copy being served, so handing it out again would show.
        sqlx::query("UPDATE tickets SET title = $1 WHERE id = 1").bind(format!("dirty {i}")).execute(&world.pool()).await.unwrap();
        world.reset(next).await.unwrap();
        assert!(served.insert(world.database()), "reset {i} served {} again", world.database());
        assert_eq!(world.spec(), next);
        let hash = backend::world::canonical_dump_hash(&world.pool()).await.unwrap();
        if next == spec {
            assert_eq!(hash, seeded, "reset {i} did not serve the seeded state");
        } else {
            assert_ne!(hash, seeded, "reset {i} to scale 2 served scale 1");
        }
        let copies = databases_of(&admin, &name).await;
        assert!(copies.len() <= 1 + SPARES + RETIRING, "reset {i} left {} copies: {copies:?}", copies.len());
    }
    world.destroy().await.unwrap();
    assert_eq!(databases_of(&admin, &name).await, Vec::<String>::new(), "destroy left copies behind");
    admin.close().await;
    cluster.close().await;
    source.shutdown().unwrap();
}

/// Worlds reset by cloning at the same time on one cluster (one per parallel worker) never serve
/// the same database, and a write to one never shows in another's fresh copy.
#[tokio::test]
async fn concurrent_worlds_never_share_a_database() {
    let source = PostgresSource::from_env().await.unwrap();
    let cluster = Cluster::connect(&source.admin_url()).await.unwrap();
    let spec = WorldSpec::default();
    let worlds = futures_util::future::try_join_all((0..3).map(|_| {
        let (cluster, name) = (cluster.clone(), unique_world());
        async move { World::create_with(cluster, &name, spec, ResetMode::Clone).await }
    }))
    .await
    .unwrap();
    let seeded = backend::world::canonical_dump_hash(&worlds[0].pool()).await.unwrap();
    let rounds = futures_util::future::try_join_all(worlds.iter().enumerate().map(|(w, world)| {
        let seeded = seeded.clone();
        async move {
            let mut served = vec![world.database()];
            for round in 0..4 {
                sqlx::query("UPDATE tickets SET title = $1 WHERE id = 1").bind(format!("world {w} round {round}")).execute(&world.pool()).await?;
                world.reset(spec).await?;
                let hash = backend::world::canonical_dump_hash(&world.pool()).await?;
                assert_eq!(hash, seeded, "world {w} round {round}: the fresh copy is not the seeded state");
                served.push(world.database());
            }
            anyhow::Ok(served)
        }
    }))
    .await
    .unwrap();
    let all: Vec<&String> = rounds.iter().flatten().collect();
    let distinct: std::collections::HashSet<&String> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "a database was served twice: {all:?}");
    for w in &worlds {
        w.destroy().await.unwrap();
    }
    cluster.close().await;
    source.shutdown().unwrap();
}

/// Without a connect-info peer (as behind a proxy) a reset needs the token.
#[tokio::test]
async fn reset_off_loopback_needs_the_token() {
    use tower::ServiceExt;
    let b = TestBackend::start_with(WorldSpec::default(), Some("s3cret-token")).await;
    let app = backend::control_app(AppState::new(b.world.clone()).with_admin_token(Some("s3cret-token".into())));
    let request = |auth: Option<&str>| {
        let mut r = axum::http::Request::post("/admin/reset").header("content-type", "application/json");
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        r.body(axum::body::Body::from("{}")).unwrap()
    };
    assert_eq!(app.clone().oneshot(request(None)).await.unwrap().status(), 403);
    assert_eq!(app.clone().oneshot(request(Some("Bearer wrong"))).await.unwrap().status(), 403);
    assert_eq!(app.clone().oneshot(request(Some("Bearer s3cret-token"))).await.unwrap().status(), 200);
    let no_token = backend::control_app(AppState::new(b.world.clone()));
    assert_eq!(no_token.oneshot(request(Some("Bearer s3cret-token"))).await.unwrap().status(), 403);
    b.shutdown().await;
}

/// A session's statements share one Postgres backend of its world copy: the reset's check, a
/// task's seed and the verifier's reads, back to back, and requests that each run several
/// statements (a ticket's references checked, then the write). A pooled connection goes back to
/// its pool in a task of its own (sqlx pings it first), so statements issued back to back on
/// the pool found none idle and opened another backend — a process start each, on a database no
/// backend had read yet; sessions used two to four. Requests here come 50 ms apart, as a
/// model's calls come seconds apart: two requests closer than a connection's return can still
/// take two backends, as two concurrent ones must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_work_on_a_world_uses_one_backend_of_its_copy() {
    use backend::world::ReadOnly;
    use sqlx::Connection;
    let b = TestBackend::start().await;
    b.world.reset(WorldSpec::default()).await.unwrap();
    let pool = b.world.pool();
    backend::world::apply_task_seed(
        &pool,
        "INSERT INTO customers (name, tier, region, contact_email, created_at) VALUES ('Backend Count Ltd', 'standard', 'eu-west', 'it@count.example', now())",
    )
    .await
    .unwrap();
    for _ in 0..3 {
        let mut read = ReadOnly::begin(&pool).await.unwrap();
        let rows = read.rows(&["SELECT count(*) AS n FROM customers WHERE name = 'Backend Count Ltd'".to_owned()]).await.unwrap();
        assert_eq!(rows[0][0]["n"], 1);
        assert_eq!(read.table_hash("tickets").await.unwrap().len(), 64);
        read.end().await.unwrap();
    }
    for i in 0..10 {
        let (status, ticket) = b.post("/tickets", json!({ "title": format!("count {i}"), "customer_id": 1, "assignee_id": 2 })).await;
        assert_eq!(status, 201, "{ticket}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let (status, patched) = b.patch(&format!("/tickets/{}", ticket["id"]), json!({ "customer_id": 2, "assignee_id": 3 })).await;
        assert_eq!(status, 200, "{patched}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut admin = sqlx::PgConnection::connect(&b.admin_url()).await.unwrap();
    let backends: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1").bind(b.world.database()).fetch_one(&mut admin).await.unwrap();
    assert_eq!(backends, 1, "backends connected to {}", b.world.database());
    admin.close().await.unwrap();
    b.shutdown().await;
}

/// A template carries its relcache init file (`pg_internal.init`), so every copy gets it with the
/// data and the first backend on a copy reads it instead of rebuilding it from the catalogs (4 %
/// of all CPU in a `--jobs 4` oracle suite when each copy rebuilt it).
#[tokio::test]
async fn templates_carry_their_relcache_init_file() {
    use sqlx::Connection;
    let b = TestBackend::start().await;
    let mut admin = sqlx::PgConnection::connect(&b.admin_url()).await.unwrap();
    let template = b.cluster.template_name(WorldSpec::default());
    let oid: i64 = sqlx::query_scalar("SELECT oid::int8 FROM pg_database WHERE datname = $1").bind(&template).fetch_one(&mut admin).await.unwrap();
    let size: Option<i64> =
        sqlx::query_scalar("SELECT (pg_stat_file($1, true)).size").bind(format!("base/{oid}/pg_internal.init")).fetch_one(&mut admin).await.unwrap();
    assert!(size.is_some_and(|n| n > 0), "template {template} has no relcache init file");
    admin.close().await.unwrap();
    b.shutdown().await;
}

/// A verifier read that fails (here: a query that tries to write) leaves its connection inside
/// an aborted transaction; that connection is closed, never handed to the next read, which
/// would otherwise fail with "current transaction is aborted" on a world nothing is wrong with.
#[tokio::test]
async fn a_failed_read_never_hands_its_aborted_transaction_to_the_next() {
    use backend::world::ReadOnly;
    let b = TestBackend::start().await;
    let pool = b.world.pool();
    for _ in 0..3 {
        let mut read = ReadOnly::begin(&pool).await.unwrap();
        let refused = read.rows(&["SELECT nextval('tickets_id_seq') AS n".to_owned()]).await;
        let why = refused.expect_err("a write inside READ ONLY must fail").to_string();
        assert!(why.contains("read-only"), "{why}");
        drop(read);
        let mut next = ReadOnly::begin(&pool).await.unwrap();
        let rows = next.rows(&["SELECT count(*) AS n FROM tickets".to_owned()]).await.unwrap();
        assert!(rows[0][0]["n"].as_i64().is_some_and(|n| n > 0), "{rows:?}");
        next.end().await.unwrap();
    }
    b.shutdown().await;
}

/// The data plane — what every MCP server is given — has no control plane: any `/admin/…`
/// request, from loopback and with the operator's token alike, is refused with a 403 naming the
/// rule, changes nothing, and is counted on the world (a session reads the count as its arm's
/// failure) until the next reset. Neither `/admin/reset` nor `/health` is in the document a
/// server generated from the API would read.
#[tokio::test]
async fn the_data_plane_refuses_the_control_plane_and_counts_every_attempt() {
    let b = TestBackend::start_with(WorldSpec::default(), Some("s3cret-token")).await;
    let (_, t) = b.post("/tickets", json!({"title": "written before the attempts"})).await;
    let before = b.dump_hash().await;
    assert_eq!(b.world.control_plane_attempts(), 0);
    let attempts = [
        (reqwest::Method::POST, "/admin/reset", Some(json!({}))),
        (reqwest::Method::POST, "/admin/reset", Some(json!({"seed": 1, "scale": 1}))),
        (reqwest::Method::GET, "/admin/reset", None),
        (reqwest::Method::DELETE, "/admin", None),
        (reqwest::Method::PUT, "/admin/anything/else", Some(json!([]))),
    ];
    for (i, (method, path, body)) in attempts.iter().enumerate() {
        let mut r = b.client.request(method.clone(), b.url(path)).header("authorization", "Bearer s3cret-token");
        if let Some(body) = body {
            r = r.json(body);
        }
        let (s, e) = common::decode(r.send().await.unwrap()).await;
        assert_eq!((s, e["error"].as_str()), (403, Some("forbidden")), "{method} {path}: {e}");
        assert!(e["message"].as_str().unwrap().contains("control plane is not part of this API"), "{e}");
        assert_eq!(b.world.control_plane_attempts(), i as u64 + 1);
    }
    assert_eq!(b.dump_hash().await, before, "nothing was reset");
    let (s, _) = b.get(&format!("/tickets/{}", t["id"])).await;
    assert_eq!(s, 200, "the ticket written before the attempts is still there");
    // The read-only health check stays on the data plane (container health checks use it).
    let (s, h) = b.get("/health").await;
    assert_eq!((s, h["status"].as_str()), (200, Some("ok")));
    assert_eq!(b.world.control_plane_attempts(), 5, "health is not an attempt");
    let (_, doc) = b.get("/openapi.json").await;
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    assert!(paths.iter().all(|p| !p.starts_with("/admin") && *p != "/health"), "{paths:?}");
    // The control plane itself still resets, and a reset clears the count.
    let (s, _) = b.admin_post("/admin/reset", json!({})).await;
    assert_eq!(s, 200);
    assert_eq!(b.world.control_plane_attempts(), 0);
    b.shutdown().await;
}

/// The embedded cluster takes only its own password: a local process that finds its socket (an
/// MCP server under test that lists /dev/shm, say) cannot log in and write the world behind the
/// backend's back, with no password or with a wrong one; the harness's own URL works.
#[tokio::test]
async fn the_embedded_cluster_refuses_a_login_without_its_password() {
    use sqlx::Connection;
    let source = PostgresSource::embedded().await.unwrap();
    let url = source.admin_url();
    let (head, tail) = url.split_once('@').unwrap();
    let user = head.rsplit_once(':').map(|(u, _)| u).unwrap();
    for wrong in [format!("{user}@{tail}"), format!("{user}:not-the-password@{tail}")] {
        let e = sqlx::PgConnection::connect(&wrong).await.err().unwrap_or_else(|| panic!("{wrong} logged in"));
        assert!(e.to_string().contains("password authentication failed") || e.to_string().contains("password"), "{e}");
    }
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1").fetch_one(&mut c).await.unwrap();
    assert_eq!(one, 1);
    c.close().await.unwrap();
    source.shutdown().unwrap();
}

/// The tables a session wrote, as the schema's triggers note them: none on a fresh world (the
/// seeding and a task's own seed rows are the world, not a change to it), each table a write
/// through the API touched, nothing for a write that matched no row, and none again after a reset.
#[tokio::test]
async fn the_world_notes_which_tables_were_written_since_it_was_fresh() {
    async fn changed(b: &TestBackend) -> Vec<String> {
        let mut read = backend::world::ReadOnly::begin(&b.world.pool()).await.unwrap();
        let diff = read.world_diff().await.unwrap();
        read.end().await.unwrap();
        backend::world::tables_of(&diff)
    }
    let b = TestBackend::start().await;
    assert_eq!(changed(&b).await, Vec::<String>::new(), "a fresh world");
    backend::world::apply_task_seed(&b.world.pool(), "UPDATE users SET on_call = NOT on_call WHERE id = 2").await.unwrap();
    assert_eq!(changed(&b).await, Vec::<String>::new(), "a task's seed rows are its world");
    b.patch("/tickets/1", json!({"status": "closed"})).await;
    b.post("/deploys", json!({"service_id": 2, "version": "9.9.9", "environment": "production"})).await;
    sqlx::query("UPDATE customers SET name = 'x' WHERE id = -1").execute(&b.world.pool()).await.unwrap();
    // Written back as it was, or inserted and deleted again: no change.
    sqlx::query("UPDATE users SET name = name WHERE id = 3").execute(&b.world.pool()).await.unwrap();
    sqlx::query("INSERT INTO customers (id, name, tier, region, contact_email, created_at) VALUES (99999, 'y', 'free', 'eu', 'y@x', now())")
        .execute(&b.world.pool())
        .await
        .unwrap();
    sqlx::query("DELETE FROM customers WHERE id = 99999").execute(&b.world.pool()).await.unwrap();
    assert_eq!(changed(&b).await, ["tickets", "deploys"], "the tables written, in world order; a write of no row, or one undone, notes nothing");
    let mut read = backend::world::ReadOnly::begin(&b.world.pool()).await.unwrap();
    let diff = read.world_diff().await.unwrap();
    read.end().await.unwrap();
    let ops: Vec<(&str, &str)> = diff.iter().map(|c| (c.table.as_str(), c.op())).collect();
    assert_eq!(ops, [("tickets", "updated"), ("deploys", "inserted")], "{diff:?}");
    let ticket = diff[0].columns();
    assert_eq!((diff[0].id, ticket["status"].1.as_str()), (1, Some("closed")), "{ticket:?}");
    assert!(!ticket.contains_key("title"), "only the columns that changed: {ticket:?}");
    assert_eq!(diff[1].after.as_ref().unwrap()["version"], "9.9.9");
    b.world.reset(b.world.spec()).await.unwrap();
    assert_eq!(changed(&b).await, Vec::<String>::new(), "after a reset");
    b.shutdown().await;
}
