//! `pipeline bench …`: timings of the harness's own steps, printed as a table or, with `--json`,
//! one JSON object per figure per line. Targets live in `docs/performance.md`; these are
//! measurements, not tests, because shared machines are noisy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use backend::postgres::PostgresSource;
use backend::{Cluster, ResetMode, World, WorldSpec};
use serde::Serialize;
use sha2::Digest;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Reset a world to its seeded state (swap to a spare copy, or wait for one, + first query).
    Reset {
        /// Scales to measure.
        #[arg(long, value_delimiter = ',', default_values_t = [1u32, 10])]
        scales: Vec<u32>,
        /// Resets per scale.
        #[arg(long, default_value_t = 50)]
        n: usize,
        #[arg(long)]
        json: bool,
    },
    /// One tool call through the whole stack (client → stdio → server → HTTP → backend →
    /// Postgres → back), and a server's cold start (spawn until `tools/list` answers).
    Toolcall {
        /// Calls (and cold starts) to time.
        #[arg(long, default_value_t = 200)]
        n: usize,
        /// Server to run.
        #[arg(long, default_value = "wrapper")]
        server: String,
        /// Tool to call [default: `tickets_get`, else the server's first `…_get` tool].
        #[arg(long)]
        tool: Option<String>,
        /// The tool's arguments, a JSON object [default: `{"id": 1}`].
        #[arg(long, value_parser = parse_object)]
        args: Option<serde_json::Map<String, serde_json::Value>>,
        #[arg(long)]
        json: bool,
    },
    /// The whole oracle suite (every module × both arms × every task × k reps) end to end,
    /// with resets, server starts and verification, at each `--jobs` value.
    Suite {
        /// Repetitions per task and arm.
        #[arg(long, default_value_t = 3)]
        k: u32,
        /// Parallel sessions to time, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [1u32, 4])]
        jobs: Vec<u32>,
        #[arg(long)]
        json: bool,
    },
    /// What keeping each session's changes costs, at each world scale and number of rows
    /// written: the writes with the change log's triggers and without, reading the changes
    /// (`world_diff`), and turning them into the transcript's event, its hash and the
    /// collateral count.
    Diff {
        /// Scales to measure.
        #[arg(long, value_delimiter = ',', default_values_t = [1u32, 16])]
        scales: Vec<u32>,
        /// Rows a session writes, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [1usize, 10, 100])]
        rows: Vec<usize>,
        /// Samples per scale and row count.
        #[arg(long, default_value_t = 30)]
        n: usize,
        #[arg(long)]
        json: bool,
    },
    /// Embedded Postgres cold start (initdb + start until ready), and stop.
    Embedded {
        #[arg(long, default_value_t = 5)]
        n: usize,
        #[arg(long)]
        json: bool,
    },
}

/// One measured figure.
#[derive(Debug, Serialize)]
pub struct Figure {
    pub name: String,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub n: usize,
    /// The target for p50 from docs/performance.md, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_p50_ms: Option<f64>,
}

impl Figure {
    pub fn from_samples(name: impl Into<String>, samples: &[Duration], target_p50_ms: Option<f64>) -> Self {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        Self { name: name.into(), p50_ms: percentile(&ms, 50.0), p95_ms: percentile(&ms, 95.0), n: ms.len(), target_p50_ms }
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn print(figures: &[Figure], json: bool) -> anyhow::Result<()> {
    if json {
        for f in figures {
            println!("{}", serde_json::to_string(f)?);
        }
        return Ok(());
    }
    let w = figures.iter().map(|f| f.name.chars().count()).max().unwrap_or(0).max(28);
    println!("{:<w$} {:>10} {:>10} {:>6} {:>12}", "figure", "p50 ms", "p95 ms", "n", "target p50");
    for f in figures {
        let target = f.target_p50_ms.map_or("-".to_owned(), |t| format!("≤ {t}"));
        let verdict = match f.target_p50_ms {
            Some(t) if f.p50_ms <= t => "  met",
            Some(_) => "  MISSED",
            None => "",
        };
        println!("{:<w$} {:>10.2} {:>10.2} {:>6} {:>12}{verdict}", f.name, f.p50_ms, f.p95_ms, f.n, target);
    }
    Ok(())
}

pub async fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Reset { scales, n, json } => {
            let figures = bench_reset(&scales, n).await?;
            print(&figures, json)
        }
        BenchCommand::Toolcall { n, server, tool, args, json } => {
            let figures = bench_toolcall(&server, tool.as_deref(), args, n).await?;
            print(&figures, json)
        }
        BenchCommand::Suite { k, jobs, json } => {
            let figures = bench_suite(k, &jobs).await?;
            print(&figures, json)
        }
        BenchCommand::Diff { scales, rows, n, json } => {
            let figures = bench_diff(&scales, &rows, n).await?;
            print(&figures, json)
        }
        BenchCommand::Embedded { n, json } => {
            let figures = bench_embedded(n).await?;
            print(&figures, json)
        }
    }
}

/// Runs `bench` on a cluster of the Postgres the environment names (or an embedded one), then
/// closes it and stops the server it started, whatever `bench` returned.
async fn on_cluster(bench: impl AsyncFnOnce(Arc<Cluster>) -> anyhow::Result<Vec<Figure>>) -> anyhow::Result<Vec<Figure>> {
    let source = PostgresSource::from_env().await.context("no Postgres to benchmark on")?;
    eprintln!("postgres: {}", source.describe());
    let result = async {
        let cluster = Cluster::connect(&source.admin_url()).await?;
        let figures = bench(cluster.clone()).await;
        cluster.close().await;
        figures
    }
    .await;
    source.shutdown()?;
    result
}

async fn bench_reset(scales: &[u32], n: usize) -> anyhow::Result<Vec<Figure>> {
    anyhow::ensure!(n > 0, "--n must be at least 1");
    on_cluster(async |cluster: Arc<Cluster>| {
        let mut figures = Vec::new();
        for &scale in scales {
            let spec = WorldSpec { seed: WorldSpec::default().seed, scale };
            let started = Instant::now();
            cluster.ensure_template(spec).await?;
            figures.push(Figure::from_samples(format!("template_build.scale{scale}"), &[started.elapsed()], None));
            // Targets of docs/performance.md: 20 ms at scale 1, 50 ms at scale 16.
            let target = match scale {
                1 => Some(20.0),
                16 => Some(50.0),
                _ => None,
            };
            // The cluster's own way first (a rewind where the role may), then a fresh copy per
            // reset, which is what a role that is not a superuser gets.
            let default = cluster.default_reset_mode();
            let modes = [(default, ""), (ResetMode::Clone, ".clone")];
            for (mode, suffix) in modes.into_iter().filter(|&(mode, suffix)| suffix.is_empty() || mode != default) {
                let world = World::create_with(cluster.clone(), &format!("bench_{}", std::process::id()), spec, mode).await?;
                // Back to back: cloning, the resets use up the spare copies, then each waits.
                let back_to_back = time_resets(&world, spec, n, Duration::ZERO).await?;
                // As in a run: sessions take seconds, so a spare is ready when the reset comes.
                let between = time_resets(&world, spec, n, SESSION_GAP).await?;
                figures.push(Figure::from_samples(format!("reset.scale{scale}{suffix}"), &between, target));
                figures.push(Figure::from_samples(format!("reset.scale{scale}{suffix}.back_to_back"), &back_to_back, None));
                world.destroy().await?;
            }
        }
        anyhow::Ok(figures)
    })
    .await
}

async fn bench_diff(scales: &[u32], rows: &[usize], n: usize) -> anyhow::Result<Vec<Figure>> {
    anyhow::ensure!(n > 0, "--n must be at least 1");
    anyhow::ensure!(rows.iter().all(|&r| (1..=400).contains(&r)), "--rows must be between 1 and 400 (the tickets of a scale-1 world)");
    on_cluster(async |cluster: Arc<Cluster>| {
        let mut figures = Vec::new();
        for &scale in scales {
            let spec = WorldSpec { seed: WorldSpec::default().seed, scale };
            cluster.ensure_template(spec).await?;
            // Reset by cloning: half of the writes below are made with the triggers off, so the
            // change log never sees them, and a rewind would leave them in the next "fresh" world.
            let world = World::create_with(cluster.clone(), &format!("bench_diff_{}", std::process::id()), spec, ResetMode::Clone).await?;
            for &w in rows {
                let (mut logged, mut unlogged, mut read, mut event) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for _ in 0..n {
                    // The same writes twice, on fresh worlds: once noted by the triggers, once
                    // with triggers off for the transaction (what the log adds to each write).
                    for log in [false, true] {
                        world.reset(spec).await?;
                        let pool = world.pool();
                        let mut tx = pool.begin().await?;
                        if !log {
                            sqlx::query("SET LOCAL session_replication_role = replica")
                                .execute(&mut *tx)
                                .await
                                .context("turning triggers off (needs a superuser)")?;
                        }
                        let started = Instant::now();
                        sqlx::query("UPDATE tickets SET title = title || ' (bench)', version = version + 1 WHERE id <= $1")
                            .bind(w as i64)
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await?;
                        if log { &mut logged } else { &mut unlogged }.push(started.elapsed());
                    }
                    // As the verifier reads it: one more query in the transaction its checks
                    // already opened (here, one check that reads the ticket table).
                    let pool = world.pool();
                    let mut ro = backend::world::ReadOnly::begin(&pool).await?;
                    ro.rows(&["SELECT count(*) FROM tickets".to_owned()]).await?;
                    let started = Instant::now();
                    let diff = ro.world_diff().await?;
                    read.push(started.elapsed());
                    ro.end().await?;
                    anyhow::ensure!(diff.len() == w, "{w} rows written, {} read back", diff.len());
                    let started = Instant::now();
                    let e = crate::session::world_event(&diff);
                    let hash = hex::encode(sha2::Sha256::digest(e.to_string().as_bytes()));
                    // Against a footprint of all but the last row: one collateral write.
                    let writes = tasks::collateral::collateral(&diff, &diff[..w - 1]);
                    std::hint::black_box((hash, writes));
                    event.push(started.elapsed());
                }
                let name = |what: &str| format!("diff.scale{scale}.rows{w}.{what}");
                figures.push(Figure::from_samples(name("writes_logged"), &logged, None));
                figures.push(Figure::from_samples(name("writes_unlogged"), &unlogged, None));
                figures.push(Figure::from_samples(name("read"), &read, None));
                figures.push(Figure::from_samples(name("event_hash_collateral"), &event, None));
            }
            world.destroy().await?;
        }
        anyhow::Ok(figures)
    })
    .await
}

/// Idle time between resets standing in for a session (real ones take seconds).
const SESSION_GAP: Duration = Duration::from_millis(150);

/// Times `n` resets, each until the world answers a query again (the first connection counts).
async fn time_resets(world: &World, spec: WorldSpec, n: usize, gap: Duration) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        tokio::time::sleep(gap).await;
        // What a session's writes leave for the reset to undo: a row changed, a row added.
        let pool = world.pool();
        sqlx::query("UPDATE tickets SET status = 'closed', version = version + 1 WHERE id = 1").execute(&pool).await?;
        sqlx::query("INSERT INTO notifications (user_id, message, read, created_at) VALUES (1, $1, false, now())")
            .bind(format!("bench {i}"))
            .execute(&pool)
            .await?;
        let started = Instant::now();
        world.reset(spec).await?;
        sqlx::query("SELECT 1").execute(&world.pool()).await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

fn parse_object(s: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("a JSON object is needed, not {other}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// The tool to time: the one asked for, else `tickets_get`, else the first `…_get` tool offered.
fn pick_tool(server: &str, offered: &[String], asked: Option<&str>) -> anyhow::Result<String> {
    if let Some(t) = asked {
        anyhow::ensure!(offered.iter().any(|o| o == t), "{server} offers no tool {t:?}; it offers: {}", offered.join(", "));
        return Ok(t.to_owned());
    }
    let get = offered.iter().find(|t| *t == "tickets_get").or_else(|| offered.iter().find(|t| t.ends_with("_get")));
    get.cloned().with_context(|| {
        let offered = if offered.is_empty() { "no tools".to_owned() } else { offered.join(", ") };
        format!("{server} has no `…_get` tool to time by default; pass --tool NAME --args JSON (it offers: {offered})")
    })
}

async fn bench_toolcall(server: &str, tool: Option<&str>, args: Option<serde_json::Map<String, serde_json::Value>>, n: usize) -> anyhow::Result<Vec<Figure>> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    anyhow::ensure!(n > 0, "--n must be at least 1");
    anyhow::ensure!(servers::registry::find(server).is_some(), "no server named {server:?}");
    let backend = backend::local::LocalBackend::start(WorldSpec::default()).await.context("starting the backend")?;
    let url = backend.url().to_owned();
    let spawn = || -> anyhow::Result<rmcp::transport::TokioChildProcess> {
        let argv = crate::commands::servers::stdio_command(server, &url)?;
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]).env("RUST_LOG", "warn");
        Ok(rmcp::transport::TokioChildProcess::new(cmd)?)
    };
    let result = async {
        let mut cold = Vec::with_capacity(n.min(50));
        let mut shutdown = Vec::with_capacity(n.min(50));
        for _ in 0..n.min(50) {
            let started = Instant::now();
            let client = servers::client::config().serve(spawn()?).await?;
            client.list_all_tools().await?;
            cold.push(started.elapsed());
            let stopping = Instant::now();
            client.cancel().await?;
            shutdown.push(stopping.elapsed());
        }
        let client = servers::client::config().serve(spawn()?).await?;
        let offered: Vec<String> = client.list_all_tools().await?.into_iter().map(|t| t.name.to_string()).collect();
        let tool = pick_tool(server, &offered, tool)?;
        let args = args.unwrap_or_else(|| serde_json::json!({ "id": 1 }).as_object().cloned().unwrap_or_default());
        let mut calls = Vec::with_capacity(n);
        for i in 0..n + 10 {
            let started = Instant::now();
            let r = client.call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(args.clone())).await?;
            anyhow::ensure!(r.is_error != Some(true), "the benchmarked call failed: {:?}", r.content);
            // The first calls warm up connection pools on both hops.
            if i >= 10 {
                calls.push(started.elapsed());
            }
        }
        client.cancel().await?;
        anyhow::Ok(vec![
            Figure::from_samples(format!("toolcall.{server}.{tool}"), &calls, Some(2.0)),
            Figure::from_samples(format!("server.{server}.cold_start"), &cold, Some(15.0)),
            Figure::from_samples(format!("server.{server}.shutdown"), &shutdown, None),
        ])
    }
    .await;
    backend.shutdown().await?;
    result
}

/// CPU time (user + system) of this process and of every child it has reaped.
fn process_tree_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let time = |who| {
        getrusage(who).map_or(Duration::ZERO, |u| {
            let t = |tv: nix::sys::time::TimeVal| Duration::new(tv.tv_sec().max(0) as u64, (tv.tv_usec().max(0) as u32) * 1000);
            t(u.user_time()) + t(u.system_time())
        })
    };
    time(UsageWho::RUSAGE_SELF) + time(UsageWho::RUSAGE_CHILDREN)
}

async fn bench_suite(k: u32, jobs: &[u32]) -> anyhow::Result<Vec<Figure>> {
    let mut figures = Vec::new();
    for &j in jobs {
        let dir = tempfile::tempdir().context("a scratch results folder")?;
        let args = crate::input::flags::RunArgs::from_flags(&[
            "--all",
            "--models",
            "oracle",
            "--k",
            &k.to_string(),
            "--jobs",
            &j.to_string(),
            "--exp-name",
            &format!("bench_suite_jobs{j}"),
            "--results-dir",
            &dir.path().display().to_string(),
        ])?;
        let started = Instant::now();
        let cpu_before = process_tree_cpu();
        let plan = crate::plan::RunPlan::from_flags(&args).await?;
        let summary = crate::run::run(plan, |_| Ok(())).await?;
        let wall = started.elapsed();
        let cpu = process_tree_cpu().saturating_sub(cpu_before);
        anyhow::ensure!(
            summary.valid == summary.ran && summary.passed == summary.ran,
            "the oracle suite must be all valid and all passed; got {} run, {} valid, {} passed",
            summary.ran,
            summary.valid,
            summary.passed
        );
        figures.push(Figure::from_samples(format!("suite.jobs{j}.wall ({} sessions)", summary.ran), &[wall], Some(60_000.0)));
        let overhead: Vec<Duration> = summary.harness_ms.iter().map(|ms| Duration::from_secs_f64(ms / 1000.0)).collect();
        figures.push(Figure::from_samples(format!("suite.jobs{j}.harness_per_session"), &overhead, Some(50.0)));
        // Starting each session's server (a `pipeline serve` child, the handshake, the listings):
        // the arm's cost, outside the harness figure above since it was kept apart.
        let starts: Vec<Duration> = summary.server_start_ms.iter().map(|ms| Duration::from_secs_f64(ms / 1000.0)).collect();
        figures.push(Figure::from_samples(format!("suite.jobs{j}.server_start_per_session"), &starts, None));
        // What the whole process tree spent — the harness, the servers it started, the embedded
        // Postgres and its backends — per session, and the wall time no --jobs can beat on this
        // machine's cores: every child of the run has exited (and been reaped) when it returns.
        let sessions = u32::try_from(summary.ran.max(1)).unwrap_or(u32::MAX);
        figures.push(Figure { n: summary.ran, ..Figure::from_samples(format!("suite.jobs{j}.cpu_per_session"), &[cpu / sessions], Some(30.0)) });
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) as u32;
        let floor = cpu / cores;
        figures.push(Figure::from_samples(
            format!("suite.jobs{j}.cpu_floor ({cores} cores; wall is {:.2}× it)", wall.as_secs_f64() / floor.as_secs_f64().max(1e-9)),
            &[floor],
            None,
        ));
    }
    Ok(figures)
}

async fn bench_embedded(n: usize) -> anyhow::Result<Vec<Figure>> {
    anyhow::ensure!(n > 0, "--n must be at least 1");
    let mut starts = Vec::with_capacity(n);
    let mut stops = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let pg = tokio::task::spawn_blocking(embedded_pg::EmbeddedPostgres::start).await??;
        starts.push(started.elapsed());
        let stopping = Instant::now();
        tokio::task::spawn_blocking(move || pg.stop()).await??;
        stops.push(stopping.elapsed());
    }
    Ok(vec![Figure::from_samples("embedded.cold_start", &starts, Some(3000.0)), Figure::from_samples("embedded.stop", &stops, None)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 95.0), 19.0);
        assert_eq!(percentile(&[3.0], 95.0), 3.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
