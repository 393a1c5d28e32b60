//! The control plane: `/admin/reset` and `/health`, served on a listener of their own
//! ([`crate::control_app`]), never on the data plane the MCP servers are given. Reset answers
//! only on loopback, or anywhere with the configured bearer token (for a backend in a container,
//! where the caller is never loopback).
//!
//! The data plane answers any `/admin/…` request with [`refuse`]: a 403 that names the rule, and
//! a count on the world, which a session reads as its arm's failure (an MCP server that offers
//! the harness's reset as a tool could otherwise re-seed the world it is measured on).

use std::net::SocketAddr;
use std::time::Instant;

use axum::Json;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;
use crate::conn::PeerAddr;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::ApiJson;
use crate::seed::{MAX_SCALE, WorldSpec};

/// The control plane's routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(reset)).routes(routes!(health))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    /// Seed of the world to restore, 0 to 2^64 − 1; defaults to the current one.
    // utoipa calls a u64 `int64`, which tells clients the seeds above 2^63 − 1 are invalid.
    #[schema(format = "uint64", minimum = 0)]
    pub seed: Option<u64>,
    /// Scale of the world to restore, 1–100; defaults to the current one.
    #[schema(minimum = 1, maximum = 100)]
    pub scale: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResetResponse {
    pub seed: u64,
    pub scale: u32,
    pub elapsed_ms: f64,
}

/// Restore the freshly seeded state (drops every write since).
#[utoipa::path(post, path = "/admin/reset", tag = "admin", request_body = ResetRequest,
    responses((status = 200, description = "The world was restored to its seeded state", body = ResetResponse), (status = 403, description = "Not from loopback, and no valid `Authorization: Bearer <BACKEND_ADMIN_TOKEN>`", body = ErrorBody)))]
async fn reset(State(state): State<AppState>, Peer(peer): Peer, headers: HeaderMap, ApiJson(r): ApiJson<ResetRequest>) -> ApiResult<Json<ResetResponse>> {
    authorize(&state, peer, &headers)?;
    let current = state.world.spec();
    let spec = WorldSpec { seed: r.seed.unwrap_or(current.seed), scale: r.scale.unwrap_or(current.scale) };
    if !(1..=MAX_SCALE).contains(&spec.scale) {
        return Err(ApiError::invalid("scale", format!("must be between 1 and {MAX_SCALE}, got {}", spec.scale)));
    }
    let started = Instant::now();
    state.world.reset(spec).await.map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(ResetResponse { seed: spec.seed, scale: spec.scale, elapsed_ms: started.elapsed().as_secs_f64() * 1000.0 }))
}

/// The TCP peer, when the server was started with connect info: [`crate::serve`]'s
/// [`PeerAddr`], or a plain `SocketAddr` for a caller serving [`crate::app`] with axum itself.
/// Absent when a test drives the router directly, which then counts as remote.
#[derive(Debug)]
pub struct Peer(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ours = parts.extensions.get::<ConnectInfo<PeerAddr>>().map(|c| c.0.0);
        Ok(Self(ours.or_else(|| parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0))))
    }
}

fn authorize(state: &AppState, peer: Option<SocketAddr>, headers: &HeaderMap) -> ApiResult<()> {
    if peer.is_some_and(|addr| addr.ip().is_loopback()) {
        return Ok(());
    }
    let given = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    match state.admin_token.as_deref() {
        Some(token) if given == Some(token) => Ok(()),
        Some(_) => Err(ApiError::Forbidden("reset from a non-loopback address needs `Authorization: Bearer <BACKEND_ADMIN_TOKEN>`".into())),
        None => Err(ApiError::Forbidden("reset answers only on loopback unless the backend was started with BACKEND_ADMIN_TOKEN".into())),
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
    pub seed: u64,
    pub scale: u32,
}

/// Liveness and database check.
#[utoipa::path(get, path = "/health", tag = "admin", responses((status = 200, description = "The backend and its database answer", body = Health), (status = 500, description = "The database did not answer", body = ErrorBody)))]
pub async fn health(State(state): State<AppState>) -> ApiResult<Json<Health>> {
    sqlx::query("SELECT 1").execute(&state.pool()).await?;
    let spec = state.world.spec();
    Ok(Json(Health { status: "ok", seed: spec.seed, scale: spec.scale }))
}

/// What the data plane answers to any `/admin/…` request: 403, and the attempt counted on the
/// world (see [`crate::World::control_plane_attempts`]).
pub async fn refuse(State(state): State<AppState>) -> ApiError {
    state.world.note_control_plane_attempt();
    ApiError::Forbidden(
        "the backend's control plane is not part of this API: an MCP server may not reset or administer the world it serves \
         (the harness resets worlds itself; a standalone backend serves /admin/reset on its admin port)"
            .into(),
    )
}
