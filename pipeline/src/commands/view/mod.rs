//! `pipeline view`: a local web app over the results folder. Every experiment and sweep with its
//! plan, status (running, stopped and why, complete, incomplete) and headline; a running
//! experiment updating in place; each experiment's report and its sessions as conversations; two
//! experiments compared. See `docs/view.md`.
//!
//! It only reads: records, transcripts and manifests, through the same loading `aggregate` does.
//! Nothing under the results folder is created, written, locked or renamed — whether a run is
//! writing an experiment is read from the kernel's lock table ([`status::holder`]), not by
//! taking the lock. Reports are `aggregate`'s own pages, rendered in this process and served from
//! memory (`reports.rs`); nothing here renders a number of its own.
//!
//! Pages update by polling: each page fetches a small JSON document every second while
//! something is running (every few seconds otherwise) and redraws what changed. A poll is a
//! directory scan plus the records that changed since the last one, so it costs the same
//! whether a browser watches or not, needs no connection held open, and passes any proxy.

mod api;
mod folder;
mod reports;
pub mod status;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use records::ExperimentManifest;
use serde::{Deserialize, Serialize};

pub use folder::{ExpRef, Listing};
pub use status::{SessionKey, planned_sessions};

/// The port `pipeline view` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 8347;

#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// The results folder to show (read only).
    #[arg(long, visible_alias = "results", default_value = "results")]
    pub results_dir: PathBuf,
    /// The port to listen on; 0 picks a free one (the line printed on start names it).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The address to listen on. Loopback by default: the viewer has no login, and shows
    /// whatever the records hold (answers, tool results, command lines).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// A `Host` value to accept besides loopback (`host` or `host:port`), e.g. behind a proxy
    /// or in a container; repeatable. A request with any other `Host` gets 403.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// An `Origin` to accept besides loopback (`scheme://host:port`, `:*` for any port);
    /// repeatable. A request from any other site gets 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const EXPERIMENT_HTML: &str = include_str!("assets/experiment.html");
const VIEW_JS: &str = include_str!("assets/view.js");
const VIEW_CSS: &str = include_str!("assets/view.css");

/// The viewer's own pages: scripts and styles from this server only, nothing fetched elsewhere.
const CSP_VIEWER: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'";
/// aggregate's pages: their inline style and script, nothing fetched.
const CSP_REPORT: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'";
/// Files from the results folder (records, transcripts, an SVG): never run as a page.
const CSP_FILE: &str = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox";

struct App {
    results: PathBuf,
    check: servers::launch::HostOriginCheck,
    /// The viewer's command line (redacted), the provenance of the reports it renders.
    command: Vec<String>,
    experiments: Mutex<HashMap<String, ExpState>>,
    cache: Mutex<reports::Cache>,
    /// One `aggregate` render at a time.
    renders: tokio::sync::Semaphore,
}

/// What was last read of one experiment.
#[derive(Default)]
struct ExpState {
    scan: status::Scan,
    manifest: Option<ManifestRead>,
}

/// The manifest's modification time and length when read, and what was read (or why not).
type ManifestRead = (Option<std::time::SystemTime>, u64, Result<Option<ExperimentManifest>, String>);

pub async fn run(args: ViewArgs) -> anyhow::Result<()> {
    if args.results_dir.exists() {
        anyhow::ensure!(args.results_dir.is_dir(), "{} is not a folder: give the results folder with --results-dir DIR", args.results_dir.display());
    }
    let options = servers::launch::HttpOptions {
        allowed_origins: args.allowed_origins.clone(),
        allowed_hosts: servers::launch::LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).chain(args.allowed_hosts.iter().cloned()).collect(),
    };
    let app = Arc::new(App {
        results: args.results_dir.clone(),
        check: servers::launch::HostOriginCheck::new(&options),
        command: crate::redact::command_line(std::env::args()),
        experiments: Mutex::default(),
        cache: Mutex::default(),
        renders: tokio::sync::Semaphore::new(1),
    });
    let router = axum::Router::new()
        .route("/", get(index_page))
        .route("/static/view.js", get(|| async { asset(VIEW_JS, "text/javascript; charset=utf-8") }))
        .route("/static/view.css", get(|| async { asset(VIEW_CSS, "text/css; charset=utf-8") }))
        .route("/api/index", get(api_index))
        .route("/api/e/{*id}", get(api_experiment))
        .route("/e/{*path}", get(experiment_path))
        .route("/compare", get(compare_page))
        .route("/sweep/{name}/{file}", get(sweep_file))
        .fallback(|| async { refusal(StatusCode::NOT_FOUND, "Not found", "Nothing is served at this address.", None) })
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app);
    let addr = SocketAddr::new(args.bind, args.port);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen on {addr}{}", if args.port == DEFAULT_PORT { "; give another --port, or --port 0 for any free one" } else { "" })
    })?;
    let bound = listener.local_addr()?;
    let shutdown = backend::cli::shutdown_signal();
    let missing = if args.results_dir.is_dir() { "" } else { " — it does not exist yet" };
    eprintln!("view: http://{bound}/ (results: {}{missing}; Ctrl-C stops)", args.results_dir.display());
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await.context("serving")?;
    eprintln!("view: stopped");
    Ok(())
}

/// The transport's `Host`/`Origin` check, then read-only methods only.
async fn guard(State(app): State<Arc<App>>, request: Request, next: axum::middleware::Next) -> Response {
    if let Err((status, reason)) = app.check.check(request.uri(), request.headers()).await {
        return (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], reason).into_response();
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, HEAD")], "the viewer only reads").into_response();
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

fn with_type(body: impl IntoResponse, content_type: &'static str, csp: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CONTENT_SECURITY_POLICY, csp)], body).into_response()
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    with_type(body, content_type, CSP_VIEWER)
}

fn html(body: String) -> Response {
    with_type(body, "text/html; charset=utf-8", CSP_VIEWER)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A page saying what was refused and why (`detail` verbatim, preformatted).
fn refusal(status: StatusCode, title: &str, lead: &str, detail: Option<&str>) -> Response {
    let detail = detail.map(|d| format!("<pre class=\"refusal\">{}</pre>", escape(d))).unwrap_or_default();
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title><link rel=\"stylesheet\" href=\"/static/view.css\"></head><body><p><a href=\"/\">all experiments</a></p><h1>{t}</h1><p>{lead}</p>{detail}</body></html>",
        t = escape(title),
        lead = escape(lead),
    );
    (status, html(body)).into_response()
}

/// `/e/<id>/` with each component percent-encoded.
fn exp_url(id: &str) -> String {
    format!("/e/{}/", aggregate::html::href(id))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("a view task panicked")
}

fn json(value: &impl Serialize) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => with_type(body, "application/json", CSP_VIEWER),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn index_page() -> Response {
    html(INDEX_HTML.to_owned())
}

async fn api_index(State(app): State<Arc<App>>) -> Response {
    let rt = tokio::runtime::Handle::current();
    let view = blocking(move || {
        let _enter = rt.enter();
        app.index()
    })
    .await;
    json(&view)
}

async fn api_experiment(State(app): State<Arc<App>>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    let rt = tokio::runtime::Handle::current();
    let view = blocking(move || {
        let _enter = rt.enter();
        let listing = Listing::read(&app.results);
        listing.find(&id).map(|e| app.experiment_view(e, true))
    })
    .await;
    match view {
        Some(v) => json(&v),
        None => (StatusCode::NOT_FOUND, "no such experiment in the results folder").into_response(),
    }
}

/// Everything under `/e/`: the experiment's page, its report's pages and files, its records.
async fn experiment_path(State(app): State<Arc<App>>, axum::extract::Path(path): axum::extract::Path<String>) -> Response {
    let listing = {
        let results = app.results.clone();
        blocking(move || Listing::read(&results)).await
    };
    let Some((e, rest)) = listing.split(&path) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "No such experiment",
            "The address names no experiment of the results folder (an experiment is a folder there, or in a sweep's folder, with a manifest.json or record folders).",
            None,
        );
    };
    let e = e.clone();
    if rest.is_empty() && !path.ends_with('/') {
        return Redirect::permanent(&exp_url(&e.id)).into_response();
    }
    match rest {
        "" => html(EXPERIMENT_HTML.to_owned()),
        "chart.png" => refusal(
            StatusCode::NOT_FOUND,
            "chart.png is drawn when the report is written",
            "pipeline aggregate draws chart.png into the experiment folder; the viewer writes nothing, and serves the same chart as chart.svg (and inline in the report).",
            None,
        ),
        "report.html" | "report.md" | "summary.json" | "chart.svg" => {
            let state = {
                let (app, e) = (app.clone(), e.clone());
                blocking(move || app.state_of(&e)).await
            };
            let rendered = app.report(&e, state).await;
            match (rest, rendered.as_ref()) {
                (_, Err(no)) => refusal(no.status(), &format!("No report of {}", e.id), &no.lead(None), Some(no.text())),
                ("report.html", Ok(r)) => with_type(r.html.clone(), "text/html; charset=utf-8", CSP_REPORT),
                ("report.md", Ok(r)) => with_type(r.markdown.clone(), "text/plain; charset=utf-8", CSP_FILE),
                ("summary.json", Ok(r)) => with_type(r.json.clone(), "application/json", CSP_FILE),
                (_, Ok(r)) => with_type(r.svg.clone(), "image/svg+xml", CSP_FILE),
            }
        }
        _ => {
            if let Some(page) = rest.strip_prefix(&format!("{}/", aggregate::html::SESSION_DIR)) {
                return session_page(&app, &e, page).await;
            }
            if let Some(record) = rest.strip_prefix("session/") {
                return session_redirect(&app, &e, record).await;
            }
            let (dir, rel) = (e.dir.clone(), rest.to_owned());
            let file = blocking(move || folder::record_file(&dir, &rel).map(|p| (std::fs::read(&p), p))).await;
            match file {
                Some((Ok(bytes), p)) => {
                    let kind = if p.extension().is_some_and(|x| x == "json") { "application/json" } else { "text/plain; charset=utf-8" };
                    with_type(bytes, kind, CSP_FILE)
                }
                Some((Err(err), _)) => (StatusCode::INTERNAL_SERVER_ERROR, format!("cannot read it: {err}")).into_response(),
                None => refusal(
                    StatusCode::NOT_FOUND,
                    "Not found",
                    "Only an experiment's page, its report (report.html, report.md, summary.json, chart.svg, report-sessions/), its manifest and its records and transcripts are served.",
                    None,
                ),
            }
        }
    }
}

/// A conversation past the report's inline budget: its own page, from the rendered report.
async fn session_page(app: &Arc<App>, e: &ExpRef, page: &str) -> Response {
    let state = {
        let (app, e) = (app.clone(), e.clone());
        blocking(move || app.state_of(&e)).await
    };
    let rendered = app.report(e, state).await;
    match rendered.as_ref() {
        Ok(r) => match r.session_pages.iter().find(|(name, _)| name == page) {
            Some((_, body)) => with_type(body.clone(), "text/html; charset=utf-8", CSP_REPORT),
            None => refusal(StatusCode::NOT_FOUND, "No such session page", "The report as rendered now has no page by that name.", None),
        },
        Err(no) => refusal(no.status(), &format!("No report of {}", e.id), &no.lead(None), Some(no.text())),
    }
}

/// A session's conversation, wherever the report put it: `report.html#s<i>` or its own page.
async fn session_redirect(app: &Arc<App>, e: &ExpRef, record: &str) -> Response {
    let state = {
        let (app, e) = (app.clone(), e.clone());
        blocking(move || app.state_of(&e)).await
    };
    let rendered = app.report(e, state).await;
    let target = match rendered.as_ref() {
        Err(no) => {
            return refusal(no.status(), &format!("No report of {}", e.id), &no.lead(Some("The conversation is shown in the report")), Some(no.text()));
        }
        Ok(r) => r.session_links.iter().find(|(p, _)| p.strip_prefix(&e.dir).is_ok_and(|rel| rel.to_string_lossy() == record)).map(|(_, link)| link.clone()),
    };
    match target {
        Some(link) => Redirect::to(&format!("{}{link}", exp_url(&e.id))).into_response(),
        None => refusal(StatusCode::NOT_FOUND, "No such session", "The experiment's report has no scored session recorded at that path.", None),
    }
}

#[derive(Deserialize)]
struct CompareQuery {
    #[serde(default)]
    a: String,
    #[serde(default)]
    b: String,
    #[serde(default)]
    along: String,
}

/// `aggregate --compare A B --along …` in memory: its page, or its refusal verbatim.
async fn compare_page(State(app): State<Arc<App>>, Query(q): Query<CompareQuery>) -> Response {
    let listing = {
        let results = app.results.clone();
        blocking(move || Listing::read(&results)).await
    };
    let (Some(a), Some(b)) = (listing.find(&q.a).cloned(), listing.find(&q.b).cloned()) else {
        let missing: Vec<&str> = [&q.a, &q.b].into_iter().filter(|n| listing.find(n).is_none()).map(String::as_str).collect();
        return refusal(
            StatusCode::NOT_FOUND,
            "Nothing to compare",
            &format!("Pick two experiments of the results folder; not one: {}", missing.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ")),
            None,
        );
    };
    let along: Vec<String> = q.along.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let (sa, sb) = {
        let (app, a, b) = (app.clone(), a.clone(), b.clone());
        blocking(move || (app.state_of(&a), app.state_of(&b))).await
    };
    let key: reports::CompareKey = (a.id.clone(), sa, b.id.clone(), sb, along.clone());
    let cached = app.cache.lock().expect("view cache").comparison(&key);
    let result = match cached {
        Some(c) => c,
        None => {
            let _turn = app.renders.acquire().await.expect("the semaphore is never closed");
            let (da, db, al) = (a.dir.clone(), b.dir.clone(), along.clone());
            let c = Arc::new(reports::off_thread(move || reports::compare(&da, &db, &al)).await);
            app.cache.lock().expect("view cache").put_comparison(key, c.clone());
            c
        }
    };
    match result.as_ref() {
        Ok(page) => with_type(page.clone(), "text/html; charset=utf-8", CSP_REPORT),
        Err(reports::NoReport::Refused(error)) => refusal(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("{} and {} are not compared", a.id, b.id),
            &format!(
                "pipeline aggregate --compare refuses{}; what it says:",
                if along.is_empty() { " (no declared difference)".to_string() } else { format!(" along {}", along.join(", ")) }
            ),
            Some(error.as_str()),
        ),
        Err(no) => refusal(
            no.status(),
            &format!("{} and {} are not compared", a.id, b.id),
            "Comparing them failed inside the viewer — a bug in pipeline, not a refusal; the experiments' files are untouched. What failed:",
            Some(no.text()),
        ),
    }
}

/// A file `pipeline sweep` wrote beside its levels (sweep.md, sweep.json, sweep.svg), as written.
async fn sweep_file(State(app): State<Arc<App>>, axum::extract::Path((name, file)): axum::extract::Path<(String, String)>) -> Response {
    let kind = match file.as_str() {
        "sweep.md" => "text/plain; charset=utf-8",
        "sweep.json" => "application/json",
        "sweep.svg" => "image/svg+xml",
        _ => return refusal(StatusCode::NOT_FOUND, "Not found", "A sweep's folder serves sweep.md, sweep.json and sweep.svg only.", None),
    };
    let results = app.results.clone();
    let bytes = blocking(move || {
        let listing = Listing::read(&results);
        let group = listing.groups.into_iter().find(|g| g.name == name)?;
        std::fs::read(group.dir.join(file)).ok()
    })
    .await;
    match bytes {
        Some(b) => with_type(b, kind, CSP_FILE),
        None => refusal(StatusCode::NOT_FOUND, "Not found", "No such sweep, or the sweep has not written that file.", None),
    }
}
