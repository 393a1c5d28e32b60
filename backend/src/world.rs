//! Databases: seeded templates, isolated world databases cloned from them, and fast reset.
//!
//! A **template** is a database migrated and seeded once per (schema fingerprint, seed, scale).
//! A **world** is a database cloned from a template with `CREATE DATABASE … TEMPLATE`, which
//! copies files instead of replaying inserts. Many worlds can live at once, so sessions can run
//! in parallel on isolated data.
//!
//! A **reset** brings a world back to its seeded state before every session, in one of two ways
//! ([`ResetMode`]). Where the role is a superuser (the embedded cluster's is), the copy is
//! **rewound in place**: the triggers that note each row a write touches keep its first state
//! (`world_undo`), and `rewind_world()` puts those rows and the sequences back, with the same
//! connections serving the next session. Otherwise, or when a copy holds a change a rewind cannot
//! undo (a TRUNCATE, a schema change), a **fresh copy** is swapped in and the old one dropped.
//! A rewind costs a few statements on connections already open; a fresh copy costs a file copy
//! of the template, a drop, and new Postgres backends (docs/performance.md).

use std::collections::{HashSet, VecDeque};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

use crate::seed::{self, MAX_SCALE, WorldSpec};

/// The migrations (`migrations/`), embedded by `build.rs`: (version, description, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

static MIGRATOR: std::sync::LazyLock<sqlx::migrate::Migrator> = std::sync::LazyLock::new(|| {
    use sqlx::SqlSafeStr as _;
    sqlx::migrate::Migrator::with_migrations(
        MIGRATIONS
            .iter()
            .map(|&(version, description, sql)| {
                sqlx::migrate::Migration::new(version, description.into(), sqlx::migrate::MigrationType::Simple, sql.into_sql_str(), false)
            })
            .collect(),
    )
});

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("database error while {doing}: {source}")]
    Database { doing: String, source: sqlx::Error },
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("invalid database URL: {0}")]
    Url(sqlx::Error),
    #[error("scale must be between 1 and {MAX_SCALE}, got {0}")]
    Scale(u32),
    #[error("world name {0:?} must be 1–40 characters of a-z, 0-9 and _")]
    Name(String),
    #[error("a background task of the world (cloning a spare copy or dropping a retired one) stopped: {0}")]
    Background(String),
}

fn db_err(doing: impl Into<String>) -> impl FnOnce(sqlx::Error) -> WorldError {
    let doing = doing.into();
    move |source| WorldError::Database { doing, source }
}

/// A Postgres server on which templates and worlds are created. Needs the CREATEDB privilege.
#[derive(Debug)]
pub struct Cluster {
    base: PgConnectOptions,
    admin: PgPool,
    fingerprint: String,
    built: tokio::sync::Mutex<HashSet<WorldSpec>>,
    /// Whether its worlds are reset by rewinding in place ([`ResetMode`]): the role is a
    /// superuser (the embedded cluster's is), which the rewind needs.
    rewinds: bool,
}

/// How a [`World`] is brought back to its seeded state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    /// In place: the rows written since the copy was cloned are put back as they were, and the
    /// sequences (`rewind_world()`, migrations/0003_world_rewind.sql). The same connections
    /// serve the next session. Needs a superuser; falls back to [`Self::Clone`] for a copy that
    /// cannot be rewound (a TRUNCATE or a schema change reached it) or a changed spec.
    Rewind,
    /// A fresh copy of the template per reset, cloned in the background, the old one dropped.
    Clone,
}

/// The most connections one world's pool opens: what a run must leave room for, a world each.
pub const WORLD_POOL_MAX: u32 = 8;
/// The most connections a cluster's admin pool opens (cloning and dropping world copies).
pub const ADMIN_POOL_MAX: u32 = 16;

impl Cluster {
    /// Connects to the server named by `url`; its database is used for administration only.
    pub async fn connect(url: &str) -> Result<Arc<Self>, WorldError> {
        // `client_min_messages=warning`: the server keeps its NOTICEs (`database "build_…" does
        // not exist, skipping` for every `DROP … IF EXISTS`) to itself; sqlx would log each at
        // INFO, noise about a condition that is expected.
        let base = PgConnectOptions::from_str(url).map_err(WorldError::Url)?.disable_statement_logging().options([("client_min_messages", "warning")]);
        // Each world clones spares and drops retired copies in the background, a few statements
        // at once per world; with one world per parallel worker, 4 connections made those
        // queue behind each other.
        let admin = PgPoolOptions::new()
            .max_connections(ADMIN_POOL_MAX)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(base.clone())
            .await
            .map_err(db_err("connecting to Postgres"))?;
        let rewinds: bool = sqlx::query_scalar("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            .fetch_optional(&admin)
            .await
            .map_err(db_err("looking up the role's privileges"))?
            .unwrap_or(false);
        Ok(Arc::new(Self { base, admin, fingerprint: schema_fingerprint(), built: Default::default(), rewinds }))
    }

    /// How its worlds are reset unless told otherwise: [`ResetMode::Rewind`] when the role may
    /// (a superuser), else [`ResetMode::Clone`].
    pub fn default_reset_mode(&self) -> ResetMode {
        if self.rewinds { ResetMode::Rewind } else { ResetMode::Clone }
    }

    /// Connection options for one database of this server.
    pub fn options_for(&self, database: &str) -> PgConnectOptions {
        self.base.clone().database(database)
    }

    pub fn template_name(&self, spec: WorldSpec) -> String {
        format!("tmpl_{}_{}_{}", &self.fingerprint[..12], spec.seed, spec.scale)
    }

    /// Builds the template for `spec` unless it exists. Safe to call from several processes at
    /// once: an advisory lock serialises builders, and a template only gets its final name once
    /// it is complete, so a crash mid-build never leaves a half-seeded template behind.
    pub async fn ensure_template(&self, spec: WorldSpec) -> Result<String, WorldError> {
        if !(1..=MAX_SCALE).contains(&spec.scale) {
            return Err(WorldError::Scale(spec.scale));
        }
        let name = self.template_name(spec);
        let mut built = self.built.lock().await;
        if built.contains(&spec) {
            return Ok(name);
        }
        let mut conn = self.admin.acquire().await.map_err(db_err("acquiring an admin connection"))?;
        sqlx::query("SELECT pg_advisory_lock(hashtext($1))").bind(&name).execute(&mut *conn).await.map_err(db_err("locking"))?;
        let result = self.build_template_locked(&mut conn, spec, &name).await;
        sqlx::query("SELECT pg_advisory_unlock(hashtext($1))").bind(&name).execute(&mut *conn).await.map_err(db_err("unlocking"))?;
        result?;
        built.insert(spec);
        Ok(name)
    }

    async fn build_template_locked(&self, conn: &mut sqlx::PgConnection, spec: WorldSpec, name: &str) -> Result<(), WorldError> {
        if database_exists(conn, name).await? {
            return Ok(());
        }
        let building = format!("build_{}", &name[5..]);
        let started = Instant::now();
        exec(conn, &format!("DROP DATABASE IF EXISTS \"{building}\" WITH (FORCE)")).await?;
        exec(conn, &format!("CREATE DATABASE \"{building}\"")).await?;
        {
            // A pool rather than a bare connection: `Migrator::run` on `&mut PgConnection` makes
            // the future non-`Send` (sqlx's higher-ranked `Acquire` bound).
            let db =
                PgPoolOptions::new().max_connections(1).connect_with(self.options_for(&building)).await.map_err(db_err("connecting to the new template"))?;
            MIGRATOR.run(&db).await?;
            let world = seed::generate(spec);
            let mut tx = db.begin().await.map_err(db_err("seeding"))?;
            seed::insert(&mut tx, &world).await.map_err(db_err("seeding"))?;
            // From here on every write of a row is noted: the seeding is the world, not a change.
            sqlx::raw_sql(sqlx::AssertSqlSafe(change_log_triggers())).execute(&mut *tx).await.map_err(db_err("arming the change log"))?;
            // What a rewind puts the sequences back to; and, where the role may create them,
            // the guards that mark a copy a rewind cannot restore (a TRUNCATE, a schema change).
            sqlx::raw_sql(sqlx::AssertSqlSafe(sequence_snapshot())).execute(&mut *tx).await.map_err(db_err("noting the sequences"))?;
            if self.rewinds {
                sqlx::raw_sql(sqlx::AssertSqlSafe(rewind_guards())).execute(&mut *tx).await.map_err(db_err("arming the rewind's guards"))?;
            }
            tx.commit().await.map_err(db_err("seeding"))?;
            sqlx::query("VACUUM ANALYZE").execute(&db).await.map_err(db_err("vacuuming the template"))?;
            db.close().await;
        }
        // One more backend on the finished template writes its relcache init file
        // (`pg_internal.init`), which every clone then copies with the data. Without it, the
        // first backend on each copy rebuilt it from the catalogs: 4 % of all CPU in a
        // `--jobs 4` oracle suite, once per session.
        let mut warm = self.options_for(&building).connect().await.map_err(db_err("connecting to the new template"))?;
        sqlx::query("SELECT 1").execute(&mut warm).await.map_err(db_err("connecting to the new template"))?;
        warm.close().await.map_err(db_err("connecting to the new template"))?;
        exec(conn, &format!("ALTER DATABASE \"{building}\" RENAME TO \"{name}\"")).await?;
        // Nobody may connect to a template: a connected session would make cloning fail.
        exec(conn, &format!("ALTER DATABASE \"{name}\" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")).await?;
        tracing::info!(template = name, ms = started.elapsed().as_millis() as u64, "built template");
        Ok(())
    }

    /// Creates database `db` as a fresh copy of `spec`'s template. `FILE_COPY` copies the
    /// template's files directly; on the 9 MB scale-1 template it is ~12 ms against ~19 ms for
    /// Postgres 15's default `WAL_LOG` strategy.
    async fn clone_template(&self, db: &str, spec: WorldSpec) -> Result<(), WorldError> {
        let template = self.ensure_template(spec).await?;
        let mut conn = self.admin.acquire().await.map_err(db_err("acquiring an admin connection"))?;
        exec(&mut conn, &format!("CREATE DATABASE \"{db}\" TEMPLATE \"{template}\" STRATEGY FILE_COPY")).await
    }

    /// Drops `db` once no backend is connected to it. `DROP DATABASE` itself polls for the
    /// backends it has to wait for only every 100 ms: a copy dropped right after its pool was
    /// closed (its backends still exiting) took 100–160 ms to drop instead of 10–30 ms, and
    /// four drops in ten took that long. Polling here every 2 ms avoids that.
    async fn drop_when_drained(&self, db: &str) -> Result<(), WorldError> {
        let started = Instant::now();
        while started.elapsed() < DRAIN_LIMIT {
            let busy: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = $1)")
                .bind(db)
                .fetch_one(&self.admin)
                .await
                .map_err(db_err("looking for connections to a retired world copy"))?;
            if !busy {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let drained_ms = started.elapsed().as_secs_f64() * 1000.0;
        // Past the limit, whatever is still connected is forced off.
        self.drop_database(db).await?;
        tracing::debug!(db, drained_ms, dropped_ms = started.elapsed().as_secs_f64() * 1000.0, "retired copy dropped");
        Ok(())
    }

    async fn drop_database(&self, db: &str) -> Result<(), WorldError> {
        let mut conn = self.admin.acquire().await.map_err(db_err("acquiring an admin connection"))?;
        exec(&mut conn, &format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)")).await
    }

    /// Drops every database left by an earlier world of this name (a crashed run, say).
    async fn drop_world_databases(&self, world: &str) -> Result<(), WorldError> {
        let names: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname ~ $1")
            // Names are [a-z0-9_] and generations are digits, so this matches this world only.
            .bind(format!("^world_{world}_[0-9]+$"))
            .fetch_all(&self.admin)
            .await
            .map_err(db_err("listing world databases"))?;
        for db in names {
            self.drop_database(&db).await?;
        }
        Ok(())
    }

    /// A world copy's pool. No ping before handing out an idle connection: a copy lives for one
    /// session, and a connection that died (Postgres gone) fails its statement either way, so
    /// the ping was a round trip per statement bought for nothing.
    fn pool_for(&self, db: &str) -> PgPool {
        PgPoolOptions::new()
            .max_connections(WORLD_POOL_MAX)
            .acquire_timeout(Duration::from_secs(10))
            .test_before_acquire(false)
            .connect_lazy_with(self.options_for(db))
    }

    pub async fn close(&self) {
        self.admin.close().await;
    }
}

fn world_db(world: &str, generation: u64) -> String {
    format!("world_{world}_{generation}")
}

fn check_world_name(name: &str) -> Result<(), WorldError> {
    let ok = !name.is_empty() && name.len() <= 40 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok { Ok(()) } else { Err(WorldError::Name(name.to_owned())) }
}

async fn database_exists(conn: &mut sqlx::PgConnection, name: &str) -> Result<bool, WorldError> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)").bind(name).fetch_one(conn).await.map_err(db_err("looking up a database"))
}

/// Runs one statement built from identifiers this module generated and checked.
async fn exec(conn: &mut sqlx::PgConnection, sql: &str) -> Result<(), WorldError> {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(conn).await.map_err(db_err(format!("running `{sql}`")))?;
    Ok(())
}

/// Hash of the migrations and the generator version: a template built by another version of
/// the code is never reused.
fn schema_fingerprint() -> String {
    let mut h = Sha256::new();
    for m in MIGRATOR.iter() {
        h.update(m.version.to_le_bytes());
        h.update(&m.checksum);
    }
    h.update(seed::GENERATOR_VERSION.to_le_bytes());
    h.update(change_log_triggers().as_bytes());
    h.update(sequence_snapshot().as_bytes());
    h.update(rewind_guards().as_bytes());
    hex::encode(h.finalize())
}

/// The triggers that note, in `world_changes` (migrations/0002_world_changes.sql), every row a
/// statement inserts, updates or deletes in a table of the world; created after the seeding.
fn change_log_triggers() -> String {
    seed::TABLES
        .iter()
        .map(|t| format!("CREATE TRIGGER {t}_changes AFTER INSERT OR UPDATE OR DELETE ON {t} FOR EACH ROW EXECUTE FUNCTION note_world_change();\n"))
        .collect()
}

/// Notes each table's id sequence as the seeding left it in `world_sequences`, what
/// `rewind_world()` sets them back to.
fn sequence_snapshot() -> String {
    let tables = seed::TABLES.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
    format!(
        "DO $$ DECLARE t TEXT; s TEXT; BEGIN \
           FOREACH t IN ARRAY ARRAY[{tables}] LOOP \
             s := pg_get_serial_sequence(t, 'id'); \
             EXECUTE format('INSERT INTO world_sequences SELECT %L, last_value, is_called FROM %s', s, s); \
           END LOOP; \
         END $$;"
    )
}

/// A statement-level TRUNCATE trigger on every table and an event trigger on every schema
/// change, each noting in `world_unrewindable` why the copy can no longer be rewound (its rows
/// would not be in `world_undo`). An event trigger needs a superuser, as the rewind does.
fn rewind_guards() -> String {
    let mut sql: String = seed::TABLES
        .iter()
        .map(|t| format!("CREATE TRIGGER {t}_truncated AFTER TRUNCATE ON {t} FOR EACH STATEMENT EXECUTE FUNCTION note_unrewindable();\n"))
        .collect();
    sql.push_str(
        "CREATE FUNCTION note_schema_change() RETURNS event_trigger LANGUAGE plpgsql AS $$ \
         BEGIN INSERT INTO world_unrewindable VALUES ('a schema change: ' || tg_tag); END $$;\n\
         CREATE EVENT TRIGGER world_schema_changes ON ddl_command_end EXECUTE FUNCTION note_schema_change();\n",
    );
    sql
}

/// The tables `diff` ([`ReadOnly::world_diff`], in [`seed::TABLES`] order) lists a row of, in
/// that order.
pub fn tables_of(diff: &[RowChange]) -> Vec<String> {
    let mut tables: Vec<String> = diff.iter().map(|c| c.table.clone()).collect();
    tables.dedup();
    tables
}

/// One row a session changed, as it was and as it is (`None`: it did not exist).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RowChange {
    pub table: String,
    pub id: i64,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

impl RowChange {
    /// `inserted`, `updated` or `deleted`.
    pub fn op(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "inserted",
            (_, None) => "deleted",
            _ => "updated",
        }
    }

    /// The columns an update changed, each with its value before and after (every column of an
    /// inserted or deleted row that is not null).
    pub fn columns(&self) -> std::collections::BTreeMap<String, (serde_json::Value, serde_json::Value)> {
        let empty = serde_json::Map::new();
        let before = self.before.as_ref().and_then(|v| v.as_object()).unwrap_or(&empty);
        let after = self.after.as_ref().and_then(|v| v.as_object()).unwrap_or(&empty);
        let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        keys.into_iter()
            .filter_map(|k| {
                let (b, a) = (before.get(k).cloned().unwrap_or_default(), after.get(k).cloned().unwrap_or_default());
                (b != a).then(|| (k.clone(), (b, a)))
            })
            .collect()
    }
}

/// Copies of the template each world keeps cloned and connected ahead of its resets. Two, not
/// one: a clone now and then takes several times its median (p50 16 ms, p95 27–33 ms, max
/// 48–93 ms in oracle suites), and with one spare 1 reset in 10 still waited for it; a second
/// copy lets the next reset take the one already waiting instead.
pub const SPARES: usize = 2;

/// Retired copies that may be waiting to be dropped at once. A reset waits for a slot when all
/// are taken, so a burst of resets cannot pile up databases faster than Postgres drops them.
pub const RETIRING: usize = 2;

/// How long a retired copy's drop waits for its connections to go away before it forces them.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// A world: the database the API serves right now, rewound in place by a reset, or (resetting
/// by [`ResetMode::Clone`]) swapped for one of the spare copies kept ready.
///
/// Every copy is its own database (`world_<name>_<generation>`, generations never reused)
/// cloned from the template. A rewind keeps the copy and its pool. A swap moves the pool over to
/// a **spare**: a copy cloned and connected in the background and never served before (cloned
/// on the spot when the spec changed, or when rewinding, which keeps no spares). The retired copy
/// is dropped in the background, after its connections are gone.
#[derive(Debug)]
pub struct World {
    cluster: Arc<Cluster>,
    name: String,
    state: RwLock<Current>,
    next_generation: AtomicU64,
    /// Requests for the control plane that reached this world's data plane since its last reset
    /// (see [`crate::api::admin::refuse`]): an MCP server trying to reset or inspect the world
    /// it is measured on.
    control_plane_attempts: AtomicU64,
    /// Spares being cloned or ready, oldest first; a reset takes the front one.
    spares: tokio::sync::Mutex<VecDeque<tokio::task::JoinHandle<Result<Spare, WorldError>>>>,
    /// Drops of retired copies still running or not yet looked at.
    retiring: std::sync::Mutex<Vec<tokio::task::JoinHandle<Result<(), WorldError>>>>,
    retire_slots: Arc<tokio::sync::Semaphore>,
    /// How [`Self::reset`] restores the seeded state.
    mode: ResetMode,
    /// Held shared by every data-plane request for as long as it runs ([`Self::serving`]), and
    /// exclusively by a rewind: a request still running when a reset starts finishes first, and
    /// none writes into the world while it is rewound.
    gate: Arc<tokio::sync::RwLock<()>>,
}

/// How long a rewind waits for the data-plane requests still running to finish before it gives
/// up and clones a fresh copy instead (a request that outlives its session finishes on the old
/// copy then, as with [`ResetMode::Clone`]).
const GATE_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
struct Current {
    spec: WorldSpec,
    generation: u64,
    pool: PgPool,
}

/// A fresh, never-served copy of a template, with its first connection open.
#[derive(Debug)]
struct Spare {
    spec: WorldSpec,
    generation: u64,
    pool: PgPool,
}

impl World {
    /// Creates world `name` seeded with `spec`, replacing any databases of an earlier world of
    /// that name.
    pub async fn create(cluster: Arc<Cluster>, name: &str, spec: WorldSpec) -> Result<Arc<Self>, WorldError> {
        let mode = cluster.default_reset_mode();
        Self::create_in(cluster, name, spec, mode).await
    }

    async fn create_in(cluster: Arc<Cluster>, name: &str, spec: WorldSpec, cluster_mode: ResetMode) -> Result<Arc<Self>, WorldError> {
        check_world_name(name)?;
        cluster.drop_world_databases(name).await?;
        let db = world_db(name, 0);
        cluster.clone_template(&db, spec).await?;
        let pool = cluster.pool_for(&db);
        let world = Arc::new(Self {
            cluster,
            name: name.to_owned(),
            state: RwLock::new(Current { spec, generation: 0, pool }),
            next_generation: AtomicU64::new(1),
            control_plane_attempts: AtomicU64::new(0),
            spares: Default::default(),
            retiring: Default::default(),
            retire_slots: Arc::new(tokio::sync::Semaphore::new(RETIRING)),
            mode: cluster_mode,
            gate: Default::default(),
        });
        if world.mode == ResetMode::Clone {
            world.refill(&mut *world.spares.lock().await, spec);
        }
        Ok(world)
    }

    /// As [`Self::create`], reset by `mode` instead of the cluster's default
    /// ([`Cluster::default_reset_mode`]); [`ResetMode::Rewind`] on a cluster that cannot rewind
    /// is [`ResetMode::Clone`].
    pub async fn create_with(cluster: Arc<Cluster>, name: &str, spec: WorldSpec, mode: ResetMode) -> Result<Arc<Self>, WorldError> {
        let mode = if cluster.rewinds { mode } else { ResetMode::Clone };
        Self::create_in(cluster, name, spec, mode).await
    }

    /// How this world is reset.
    pub fn reset_mode(&self) -> ResetMode {
        self.mode
    }

    /// A shared hold on the world for one data-plane request ([`Self::reset`] waits for it).
    pub async fn serving(&self) -> tokio::sync::OwnedRwLockReadGuard<()> {
        self.gate.clone().read_owned().await
    }

    fn current(&self) -> Current {
        self.state.read().expect("world lock").clone()
    }

    pub fn pool(&self) -> PgPool {
        self.current().pool
    }

    pub fn spec(&self) -> WorldSpec {
        self.current().spec
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database currently served.
    pub fn database(&self) -> String {
        world_db(&self.name, self.current().generation)
    }

    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// Control-plane requests the data plane refused since the last [`Self::reset`].
    pub fn control_plane_attempts(&self) -> u64 {
        self.control_plane_attempts.load(Ordering::Relaxed)
    }

    pub(crate) fn note_control_plane_attempt(&self) {
        self.control_plane_attempts.fetch_add(1, Ordering::Relaxed);
    }

    /// Brings the world back to the freshly seeded state of `spec`. Rewound in place
    /// ([`ResetMode::Rewind`]), requests already running finish first; swapped to a fresh copy,
    /// they finish on the old one. Every request after this returns sees the seeded state.
    pub async fn reset(&self, spec: WorldSpec) -> Result<(), WorldError> {
        let started = Instant::now();
        let mut spares = self.spares.lock().await;
        // A failed drop of an earlier copy is reported here, by the next reset that can see it.
        self.collect_retired().await?;
        if self.mode == ResetMode::Rewind && self.current().spec == spec {
            match self.rewind().await {
                Ok(rows) => {
                    self.control_plane_attempts.store(0, Ordering::Relaxed);
                    tracing::debug!(world = self.name, rows, total_ms = started.elapsed().as_secs_f64() * 1000.0, "reset by rewinding");
                    return Ok(());
                }
                // A fresh copy is as good, and tells nothing apart from the time it costs.
                Err(why) => tracing::info!(world = self.name, "cloning a fresh copy instead of rewinding: {why}"),
            }
        }
        let mut chosen = None;
        while let Some(task) = spares.pop_front() {
            let spare = task.await.map_err(|e| WorldError::Background(e.to_string()))??;
            if spare.spec == spec {
                chosen = Some(spare);
                break;
            }
            // Cloned for another spec: never served, dropped off the reset's path.
            self.retire(spare.pool, spare.generation).await;
        }
        let spare = match chosen {
            Some(spare) => spare,
            None => prepare_spare(self.cluster.clone(), self.name.clone(), self.next_generation.fetch_add(1, Ordering::Relaxed), spec).await?,
        };
        // Time spent waiting for a spare (or cloning one): the part of a reset that is not a swap.
        let waited_ms = started.elapsed().as_secs_f64() * 1000.0;
        // A ready spare needs no statement from Postgres, so without this a reset would succeed
        // on a dead server and the session after it would fail in its tool calls instead, which
        // a run does not take for the infrastructure failure that it is (and keeps going).
        let db = world_db(&self.name, spare.generation);
        let mut conn = spare.pool.acquire().await.map_err(db_err(format!("connecting to {db}")))?;
        sqlx::query("SELECT 1").execute(&mut *conn).await.map_err(db_err(format!("checking that {db} answers")))?;
        // Handed back before the reset returns: dropped, it would go back in a task of its own,
        // and the task's seed or the verifier's baseline right after would open a second
        // backend for want of an idle one.
        conn.return_to_pool().await;
        let served = Current { spec, generation: spare.generation, pool: spare.pool };
        self.control_plane_attempts.store(0, Ordering::Relaxed);
        let retired = std::mem::replace(&mut *self.state.write().expect("world lock"), served);
        if self.mode == ResetMode::Clone {
            self.refill(&mut spares, spec);
        }
        self.retire(retired.pool, retired.generation).await;
        tracing::debug!(world = self.name, waited_ms, total_ms = started.elapsed().as_secs_f64() * 1000.0, "reset");
        Ok(())
    }

    /// Rewinds the copy served now to the state it was cloned in, once the requests running on
    /// it have finished; the rows put back.
    async fn rewind(&self) -> Result<i64, String> {
        let _exclusive =
            tokio::time::timeout(GATE_WAIT, self.gate.write()).await.map_err(|_| format!("requests to the world were still running after {GATE_WAIT:?}"))?;
        let mut conn = self.pool().acquire().await.map_err(|e| e.to_string())?;
        let rows = sqlx::query_scalar("SELECT rewind_world()").fetch_one(&mut *conn).await.map_err(|e| e.to_string())?;
        // Handed back before the reset returns, as a swap's check is (see `reset`): the task's
        // seed and the verifier's baseline right after reuse this backend instead of opening one.
        conn.return_to_pool().await;
        Ok(rows)
    }

    /// Starts cloning spares of `spec` until [`SPARES`] are ready or on their way.
    fn refill(&self, spares: &mut VecDeque<tokio::task::JoinHandle<Result<Spare, WorldError>>>, spec: WorldSpec) {
        while spares.len() < SPARES {
            let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
            spares.push_back(tokio::spawn(prepare_spare(self.cluster.clone(), self.name.clone(), generation, spec)));
        }
    }

    /// Drops copy `generation` in the background once its pool is closed, waiting first for
    /// a free slot (see [`RETIRING`]).
    async fn retire(&self, pool: PgPool, generation: u64) {
        let slot = self.retire_slots.clone().acquire_owned().await.expect("the retire semaphore is never closed");
        let cluster = self.cluster.clone();
        let db = world_db(&self.name, generation);
        let task = tokio::spawn(async move {
            let _slot = slot;
            // Returns once every connection is back and closed (requests still running on the
            // old copy finish first).
            pool.close().await;
            cluster.drop_when_drained(&db).await
        });
        self.retiring.lock().expect("retiring lock").push(task);
    }

    /// Takes the drops that have finished and returns the first error among them.
    async fn collect_retired(&self) -> Result<(), WorldError> {
        let done: Vec<_> = {
            let mut retiring = self.retiring.lock().expect("retiring lock");
            let (done, running) = std::mem::take(&mut *retiring).into_iter().partition(|t| t.is_finished());
            *retiring = running;
            done
        };
        for task in done {
            task.await.map_err(|e| WorldError::Background(e.to_string()))??;
        }
        Ok(())
    }

    /// Closes the pools and drops all of the world's databases, spares included.
    pub async fn destroy(&self) -> Result<(), WorldError> {
        let spares = std::mem::take(&mut *self.spares.lock().await);
        for task in spares {
            // Their outcome does not matter: everything of this world is dropped below.
            if let Ok(Ok(spare)) = task.await {
                spare.pool.close().await;
            }
        }
        let retiring = std::mem::take(&mut *self.retiring.lock().expect("retiring lock"));
        for task in retiring {
            let _ = task.await;
        }
        self.pool().close().await;
        self.cluster.drop_world_databases(&self.name).await
    }
}

/// Clones copy `generation` of world `name` and opens its first connection: a connection costs
/// a backend start (≈ 3–5 ms), which would otherwise land on the first query after the reset.
async fn prepare_spare(cluster: Arc<Cluster>, name: String, generation: u64, spec: WorldSpec) -> Result<Spare, WorldError> {
    let started = Instant::now();
    let db = world_db(&name, generation);
    cluster.clone_template(&db, spec).await?;
    let cloned_ms = started.elapsed().as_secs_f64() * 1000.0;
    let pool = cluster.pool_for(&db);
    pool.acquire().await.map_err(db_err(format!("connecting to {db}")))?.return_to_pool().await;
    tracing::debug!(db, cloned_ms, ready_ms = started.elapsed().as_secs_f64() * 1000.0, "spare ready");
    Ok(Spare { spec, generation, pool })
}

/// sha256 over every table's rows as JSON in id order: equal hashes mean equal data.
pub async fn canonical_dump_hash(pool: &PgPool) -> Result<String, WorldError> {
    let mut conn = pool.acquire().await.map_err(db_err("dumping"))?;
    let mut tx = conn.begin().await.map_err(db_err("dumping"))?;
    // Timestamps render in the session's time zone: pin it so the hash is server-independent.
    sqlx::query("SET LOCAL TimeZone = 'UTC'").execute(&mut *tx).await.map_err(db_err("dumping"))?;
    let mut h = Sha256::new();
    for table in seed::TABLES {
        let json: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT coalesce(json_agg(t ORDER BY t.id), '[]'::json)::text FROM {table} t")))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err(format!("dumping {table}")))?;
        h.update(table.as_bytes());
        h.update([0]);
        h.update(json.as_bytes());
        h.update([0]);
    }
    tx.rollback().await.map_err(db_err("dumping"))?;
    Ok(hex::encode(h.finalize()))
}

/// Runs read queries in one READ ONLY transaction (a query that tries to write fails) and
/// returns each query's rows as JSON objects. For verifiers, which must only read state.
pub async fn read_only_rows(pool: &PgPool, queries: &[String]) -> Result<Vec<Vec<serde_json::Value>>, WorldError> {
    let mut read = ReadOnly::begin(pool).await?;
    let out = read.rows(queries).await?;
    read.end().await?;
    Ok(out)
}

/// One READ ONLY transaction on one connection, time zone pinned to UTC: what a verifier reads
/// the world through, so that everything one verdict reads (its checks, its table hashes, the
/// grounding of the answer) comes from one snapshot and one Postgres backend.
///
/// The connection goes back to its pool before [`ReadOnly::end`] returns. Dropped, a pooled
/// connection goes back in a task of its own, and a query right after that finds none idle
/// and opens another: a new Postgres backend, whose start costs more than most reads.
pub struct ReadOnly {
    conn: Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
}

impl ReadOnly {
    pub async fn begin(pool: &PgPool) -> Result<Self, WorldError> {
        let mut conn = pool.acquire().await.map_err(db_err("starting a read-only transaction"))?;
        // One round trip: BEGIN and the SET go as one simple query. Should the SET fail, the
        // connection is inside an aborted transaction: closed, never handed to the next user.
        if let Err(e) = sqlx::raw_sql("BEGIN READ ONLY; SET LOCAL TimeZone = 'UTC'").execute(&mut *conn).await {
            conn.close_on_drop();
            return Err(db_err("starting a read-only transaction")(e));
        }
        Ok(Self { conn: Some(conn) })
    }

    fn conn(&mut self) -> &mut sqlx::PgConnection {
        self.conn.as_deref_mut().expect("a ReadOnly holds its connection until it ends")
    }

    /// Each query's rows as JSON objects.
    pub async fn rows(&mut self, queries: &[String]) -> Result<Vec<Vec<serde_json::Value>>, WorldError> {
        let mut out = Vec::with_capacity(queries.len());
        for q in queries {
            let wrapped = format!("SELECT to_json(x) FROM ({q}) x");
            let rows: Vec<serde_json::Value> = sqlx::query_scalar(sqlx::AssertSqlSafe(wrapped))
                .fetch_all(self.conn())
                .await
                .map_err(|source| WorldError::Database { doing: format!("running `{q}`"), source })?;
            out.push(rows);
        }
        Ok(out)
    }

    /// sha256 (hex) of one table's rows as JSON in id order, the bytes [`canonical_dump_hash`]
    /// hashes for that table. Hashed by Postgres, so the dump never crosses the socket.
    pub async fn table_hash(&mut self, table: &str) -> Result<String, WorldError> {
        if !seed::TABLES.contains(&table) {
            return Err(WorldError::Name(table.to_owned()));
        }
        let sql = format!("SELECT encode(sha256(convert_to(coalesce(json_agg(t ORDER BY t.id), '[]'::json)::text, 'UTF8')), 'hex') FROM {table} t");
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(self.conn()).await.map_err(db_err(format!("hashing {table}")))
    }

    /// Every row changed since the world was fresh (a reset, and the task's own seed rows), net:
    /// a row written back as it was, or inserted and deleted again, is not listed. In
    /// [`seed::TABLES`] order, then by id. Noted by the schema's triggers as writes commit, so
    /// reading it costs one small query, whatever the world's size.
    pub async fn world_diff(&mut self) -> Result<Vec<RowChange>, WorldError> {
        let rows: Vec<(String, i64, Option<serde_json::Value>, Option<serde_json::Value>)> =
            sqlx::query_as("SELECT tbl, id, before, after FROM world_changes WHERE before IS DISTINCT FROM after")
                .fetch_all(self.conn())
                .await
                .map_err(db_err("reading the world's changes"))?;
        let mut out: Vec<RowChange> = rows.into_iter().map(|(table, id, before, after)| RowChange { table, id, before, after }).collect();
        out.sort_by_key(|c| (seed::TABLES.iter().position(|t| *t == c.table), c.id));
        Ok(out)
    }

    /// Ends the transaction (it only read: nothing to keep) and hands the connection back.
    pub async fn end(mut self) -> Result<(), WorldError> {
        let mut conn = self.conn.take().expect("a ReadOnly holds its connection until it ends");
        if let Err(e) = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await {
            conn.close_on_drop();
            return Err(db_err("ending a read-only transaction")(e));
        }
        conn.return_to_pool().await;
        Ok(())
    }
}

impl Drop for ReadOnly {
    /// Not ended (an error on the way, or a cancelled future): the connection is still inside
    /// the transaction, so it is closed rather than handed to the next user.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.as_mut() {
            conn.close_on_drop();
        }
    }
}

/// Runs a task's extra seed rows (`seed.sql`: INSERTs, UPDATEs) on a freshly reset world, in one
/// transaction: all of it or nothing.
pub async fn apply_task_seed(pool: &PgPool, sql: &str) -> Result<(), WorldError> {
    let mut conn = pool.acquire().await.map_err(db_err("starting the task's seed"))?;
    let mut tx = conn.begin().await.map_err(db_err("starting the task's seed"))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut *tx)
        .await
        .map_err(|source| WorldError::Database { doing: "running the task's seed.sql".into(), source })?;
    // The task's rows are part of its fresh world, not a change a session made.
    sqlx::query("DELETE FROM world_changes").execute(&mut *tx).await.map_err(db_err("running the task's seed.sql"))?;
    tx.commit().await.map_err(db_err("committing the task's seed"))?;
    // Handed back now (see [`ReadOnly`]): the baseline is read right after.
    conn.return_to_pool().await;
    Ok(())
}

/// One row of a session's final state as the transcript's `world` event keeps it: what became of
/// it (`inserted`, `updated`, `deleted`) and, for an insert or an update, the values it was left
/// with (an insert's absent columns are null; an update's, unchanged).
#[derive(Debug, Clone, PartialEq)]
pub struct RowWrite {
    pub table: String,
    pub id: i64,
    pub op: String,
    pub values: serde_json::Map<String, serde_json::Value>,
}

/// Rebuilds a session's final state on a freshly prepared world: every row of `writes` written
/// as the session left it, in one transaction (inserts parents first, then updates, then
/// deletions children first), through the same triggers, so the world's changes read afterwards
/// are the session's own again. Values are cast by the table's own row type
/// (`jsonb_populate_record`). A table outside the world, a column name that is not one, or a
/// row that does not apply is an error and nothing is written.
pub async fn apply_changes(pool: &PgPool, writes: &[RowWrite]) -> Result<(), WorldError> {
    let order = |w: &RowWrite| seed::TABLES.iter().position(|t| *t == w.table);
    let word = |c: &str| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_');
    for w in writes {
        if order(w).is_none() {
            return Err(WorldError::Name(w.table.clone()));
        }
        if let Some(bad) = w.values.keys().find(|c| !word(c)) {
            return Err(WorldError::Name(bad.clone()));
        }
    }
    let mut sorted: Vec<&RowWrite> = writes.iter().collect();
    let rank = |w: &RowWrite| match w.op.as_str() {
        "inserted" => (0, order(w).unwrap_or(0) as i64),
        "updated" => (1, order(w).unwrap_or(0) as i64),
        _ => (2, -(order(w).unwrap_or(0) as i64)),
    };
    sorted.sort_by_key(|w| (rank(w), w.id));
    let mut conn = pool.acquire().await.map_err(db_err("rebuilding a final state"))?;
    let mut tx = conn.begin().await.map_err(db_err("rebuilding a final state"))?;
    for w in sorted {
        let t = &w.table;
        let query = match w.op.as_str() {
            "inserted" => {
                let mut row = w.values.clone();
                row.insert("id".into(), w.id.into());
                sqlx::query(sqlx::AssertSqlSafe(format!("INSERT INTO {t} SELECT * FROM jsonb_populate_record(NULL::{t}, $1)")))
                    .bind(serde_json::Value::Object(row))
            }
            "updated" => {
                let set: Vec<String> = w.values.keys().map(|c| format!("{c} = r.{c}")).collect();
                if set.is_empty() {
                    continue;
                }
                let sql = format!("UPDATE {t} SET {} FROM jsonb_populate_record(NULL::{t}, $1) AS r WHERE {t}.id = $2", set.join(", "));
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(serde_json::Value::Object(w.values.clone())).bind(w.id)
            }
            "deleted" => sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {t} WHERE id = $1"))).bind(w.id),
            other => return Err(WorldError::Name(other.to_owned())),
        };
        let done = query.execute(&mut *tx).await.map_err(db_err(format!("writing {t} {} as {}", w.id, w.op)))?;
        if done.rows_affected() != 1 {
            return Err(WorldError::Database { doing: format!("writing {t} {} as {}", w.id, w.op), source: sqlx::Error::RowNotFound });
        }
    }
    tx.commit().await.map_err(db_err("committing a rebuilt final state"))?;
    conn.return_to_pool().await;
    Ok(())
}

/// sha256 of one table's rows in id order (see [`canonical_dump_hash`]).
pub async fn table_hash(pool: &PgPool, table: &str) -> Result<String, WorldError> {
    let mut read = ReadOnly::begin(pool).await?;
    let hash = read.table_hash(table).await?;
    read.end().await?;
    Ok(hash)
}
