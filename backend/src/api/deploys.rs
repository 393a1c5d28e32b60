//! `/deploys`: releases of a service to an environment. The synthetic deployer is instant: a new
//! deploy is recorded as `succeeded`; the only later transition is a rollback.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Page, Table, Window, check_ref, check_text, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_deploys, create_deploy)).routes(routes!(get_deploy, update_deploy))
}

pub const VERSION_MAX: usize = 50;

#[derive(Debug, Serialize, ToSchema)]
pub struct Deploy {
    pub id: i64,
    pub service_id: i64,
    pub version: String,
    /// `staging` or `production`.
    pub environment: String,
    /// `pending`, `succeeded`, `failed` or `rolled_back`.
    pub status: String,
    pub deployed_by: Option<i64>,
    #[serde(serialize_with = "super::timestamp")]
    pub started_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Deploy { id, service_id, version, environment, status, deployed_by, started_at }; default total);
super::counted!(Deploy);

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    Staging,
    Production,
}

impl Environment {
    fn as_str(self) -> &'static str {
        match self {
            Self::Staging => "staging",
            Self::Production => "production",
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeployQuery {
    pub service_id: Option<i64>,
    pub environment: Option<Environment>,
    pub status: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List deploys, newest first.
#[utoipa::path(get, path = "/deploys", tag = "deploys", params(DeployQuery),
    responses((status = 200, description = "One page of deploys", body = Page<Deploy>)))]
async fn list_deploys(State(state): State<AppState>, ApiQuery(q): ApiQuery<DeployQuery>) -> ApiResult<Json<Page<Deploy>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Deploy> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM deploys
         WHERE ($1::bigint IS NULL OR service_id = $1)
           AND ($2::text IS NULL OR environment = $2)
           AND ($3::text IS NULL OR status = $3)
         ORDER BY started_at DESC, id DESC LIMIT $4 OFFSET $5",
    )
    .bind(q.service_id)
    .bind(q.environment.map(Environment::as_str))
    .bind(q.status)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one deploy.
#[utoipa::path(get, path = "/deploys/{id}", tag = "deploys", params(("id" = i64, Path)),
    responses((status = 200, description = "The deploy", body = Deploy), (status = 404, description = "No deploy has this id", body = ErrorBody)))]
async fn get_deploy(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Deploy>> {
    sqlx::query_as("SELECT * FROM deploys WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("deploy", id))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDeploy {
    #[schema(example = 1)]
    pub service_id: i64,
    /// 1–50 characters, not all blank, e.g. `1.4.2`.
    #[schema(min_length = 1, max_length = 50)]
    pub version: String,
    pub environment: Environment,
    #[schema(example = 1)]
    pub deployed_by: Option<i64>,
}

/// Deploy a version of a service to an environment.
#[utoipa::path(post, path = "/deploys", tag = "deploys", request_body = NewDeploy,
    responses((status = 201, description = "The deploy, recorded as `succeeded`", body = Deploy)))]
async fn create_deploy(State(state): State<AppState>, ApiJson(d): ApiJson<NewDeploy>) -> ApiResult<(StatusCode, Json<Deploy>)> {
    check_text("version", &d.version, VERSION_MAX)?;
    let mut db = state.db().await?;
    check_ref(&mut db, Table::Services, "service_id", d.service_id).await?;
    if let Some(u) = d.deployed_by {
        check_ref(&mut db, Table::Users, "deployed_by", u).await?;
    }
    let row: Deploy = sqlx::query_as(
        "INSERT INTO deploys (service_id, version, environment, status, deployed_by, started_at)
         VALUES ($1, $2, $3, 'succeeded', $4, now()) RETURNING *",
    )
    .bind(d.service_id)
    .bind(&d.version)
    .bind(d.environment.as_str())
    .bind(d.deployed_by)
    .fetch_one(&mut *db)
    .await?;
    Ok((StatusCode::CREATED, Json(row)))
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeployTransition {
    RolledBack,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeployPatch {
    /// Only `rolled_back`, and only from `succeeded`.
    pub status: DeployTransition,
}

/// Roll back a succeeded deploy.
#[utoipa::path(patch, path = "/deploys/{id}", tag = "deploys", request_body = DeployPatch, params(("id" = i64, Path)),
    responses((status = 200, description = "The deploy, now `rolled_back`", body = Deploy), (status = 404, description = "No deploy has this id", body = ErrorBody), (status = 409, description = "The deploy is not `succeeded`, so it cannot be rolled back", body = ErrorBody)))]
async fn update_deploy(State(state): State<AppState>, ApiPath(id): ApiPath<i64>, ApiJson(p): ApiJson<DeployPatch>) -> ApiResult<Json<Deploy>> {
    let DeployTransition::RolledBack = p.status;
    let mut db = state.db().await?;
    let row: Option<Deploy> = sqlx::query_as("UPDATE deploys SET status = 'rolled_back' WHERE id = $1 AND status = 'succeeded' RETURNING *")
        .bind(id)
        .fetch_optional(&mut *db)
        .await?;
    if let Some(row) = row {
        return Ok(Json(row));
    }
    let current: Option<String> = sqlx::query_scalar("SELECT status FROM deploys WHERE id = $1").bind(id).fetch_optional(&mut *db).await?;
    match current {
        None => Err(ApiError::not_found("deploy", id)),
        Some(status) => Err(ApiError::Conflict(format!("deploy {id} is {status}; only a succeeded deploy can be rolled back"))),
    }
}
