//! The synthetic backend: one flat, vendor-shaped HTTP API over Postgres that every MCP server
//! in the bench fronts (`docs/patterns.md`).
//!
//! * [`seed`] generates the synthetic company deterministically from a seed and a scale.
//! * [`world`] turns that into databases: a seeded template per (seed, scale), and isolated
//!   world databases cloned from it in milliseconds, so every session starts from the same state.
//! * [`postgres`] finds a server: `DATABASE_URL`, else a throwaway embedded cluster.
//! * [`app`] is the data plane's axum router (testable without a socket), the API every MCP
//!   server is given; [`serve`] binds it. [`control_app`] is the control plane (reset, health),
//!   served on a listener of its own ([`serve_control`]) that no server is given; the harness
//!   resets its worlds in-process and serves no control plane at all.
//! * [`recorder`] records, when asked, which operations of the API a client reached (the
//!   capability-parity test's evidence); nothing records by default.
//!
//! Run it with `pipeline backend` (or the `backend` binary); `GET /openapi.json` describes it.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub mod api;
pub mod cli;
pub mod conn;
pub mod error;
pub mod extract;
pub mod local;
pub mod openapi;
pub mod postgres;
pub mod recorder;
pub mod seed;
pub mod world;

pub use seed::WorldSpec;
pub use sqlx::PgPool;
pub use world::{Cluster, ResetMode, World};

use error::ApiError;

/// What every handler can reach: the world it serves, and the admin token if one is set.
#[derive(Debug, Clone)]
pub struct AppState {
    pub world: Arc<World>,
    pub admin_token: Option<String>,
}

impl AppState {
    pub fn new(world: Arc<World>) -> Self {
        Self { world, admin_token: None }
    }

    pub fn with_admin_token(mut self, token: Option<String>) -> Self {
        self.admin_token = token.filter(|t| !t.is_empty());
        self
    }

    /// The pool of the current database (a reset swaps it).
    pub fn pool(&self) -> sqlx::PgPool {
        self.world.pool()
    }

    /// One connection of the current database, for a handler that runs more than one
    /// statement. Back-to-back statements on the pool would each take a connection, and the
    /// one just used goes back in a task of its own, so the next often found none idle and
    /// opened another: a new Postgres backend for the second statement of a request.
    pub async fn db(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, ApiError> {
        Ok(self.world.pool().acquire().await?)
    }
}

#[derive(OpenApi)]
#[openapi(info(
    title = "mcp-pattern-bench synthetic backend",
    description = "A flat, vendor-shaped API over one synthetic company: customers, users, tickets, \
                   notifications, repos, services, change requests, reviews, runbooks and deploys."
))]
struct ApiDoc;

/// The data plane's routes and their OpenAPI document, built together so they cannot disagree.
/// The document carries the error responses every operation shares ([`openapi`]).
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi()).merge(api::routes()).split_for_parts();
    openapi::add_shared_responses(&mut doc);
    (routes, doc)
}

/// The OpenAPI 3.1 document `GET /openapi.json` serves: [`api`]'s, with the text patterns the
/// API enforces added to its string schemas.
pub fn openapi_document() -> serde_json::Value {
    let mut doc = serde_json::to_value(api().1).expect("the OpenAPI document serialises");
    openapi::add_text_patterns(&mut doc);
    doc
}

/// The data plane for `state`: the API, its document, `/health` (read-only, left out of the
/// document so that a server generated from it does not offer it as a tool), and a refusal for
/// anything under `/admin` ([`api::admin::refuse`]).
pub fn app(state: AppState) -> Router {
    let (routes, _) = api();
    let doc = Arc::new(openapi_document());
    let routes = routes
        .route("/openapi.json", axum::routing::get(move || async move { axum::Json(doc.as_ref().clone()) }))
        .route("/health", axum::routing::get(api::admin::health))
        .route("/admin", axum::routing::any(api::admin::refuse))
        .route("/admin/{*rest}", axum::routing::any(api::admin::refuse))
        .layer(axum::middleware::from_fn_with_state(state.clone(), hold_world));
    finish(routes, state)
}

/// Holds the world for as long as a data-plane request runs, so that a reset that rewinds it in
/// place waits for the request instead of racing it ([`World::serving`]).
async fn hold_world(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let _serving = state.world.serving().await;
    next.run(request).await
}

/// The control plane for `state`: `POST /admin/reset` and `GET /health`, for the operator of a
/// standalone backend (never given to an MCP server).
pub fn control_app(state: AppState) -> Router {
    let (routes, _) = OpenApiRouter::new().merge(api::admin::router()).split_for_parts();
    finish(routes, state)
}

fn finish(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .fallback(|| async { ApiError::NotFound("no such route; see GET /openapi.json".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed("method not allowed on this route; see GET /openapi.json".into()) })
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(conn::limit_headers))
        .with_state(state)
}

/// Serves `app` on `listener` until `shutdown` resolves. Connections go through
/// [`conn::JsonErrorListener`], so even the errors hyper answers itself carry a JSON body.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_router(listener, app(state), shutdown).await
}

/// Serves the control plane ([`control_app`]) on `listener` until `shutdown` resolves.
pub async fn serve_control(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_router(listener, control_app(state), shutdown).await
}

/// Serves any router of this crate's (say, [`app`] under a [`recorder::Recorder`]) on
/// `listener` until `shutdown` resolves, through the same listener as [`serve`].
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = conn::JsonErrorListener(listener);
    axum::serve(listener, router.into_make_service_with_connect_info::<conn::PeerAddr>()).with_graceful_shutdown(shutdown).await
}
