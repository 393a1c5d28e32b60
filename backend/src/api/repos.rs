//! `/repos` and `/services`: source repositories and the services deployed from them.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Page, Window, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_repos)).routes(routes!(get_repo)).routes(routes!(list_services)).routes(routes!(get_service))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Repo {
    pub id: i64,
    pub owner: String,
    pub name: String,
    pub description: String,
    pub default_branch: String,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Repo { id, owner, name, description, default_branch }; default total);
super::counted!(Repo);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RepoQuery {
    pub owner: Option<String>,
    /// Exact repository name (several owners may have one of that name).
    pub name: Option<String>,
    /// Case-insensitive substring of the name.
    pub q: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List repositories by id.
#[utoipa::path(get, path = "/repos", tag = "repos", params(RepoQuery),
    responses((status = 200, description = "One page of repositories", body = Page<Repo>)))]
async fn list_repos(State(state): State<AppState>, ApiQuery(q): ApiQuery<RepoQuery>) -> ApiResult<Json<Page<Repo>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Repo> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM repos
         WHERE ($1::text IS NULL OR owner = $1)
           AND ($2::text IS NULL OR name = $2)
           AND ($3::text IS NULL OR strpos(lower(name), lower($3)) > 0)
         ORDER BY id LIMIT $4 OFFSET $5",
    )
    .bind(q.owner)
    .bind(q.name)
    .bind(q.q)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one repository.
#[utoipa::path(get, path = "/repos/{id}", tag = "repos", params(("id" = i64, Path)),
    responses((status = 200, description = "The repository", body = Repo), (status = 404, description = "No repository has this id", body = ErrorBody)))]
async fn get_repo(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Repo>> {
    sqlx::query_as("SELECT * FROM repos WHERE id = $1").bind(id).fetch_optional(&state.pool()).await?.map(Json).ok_or_else(|| ApiError::not_found("repo", id))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Service {
    pub id: i64,
    pub name: String,
    pub team: String,
    pub repo_id: Option<i64>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Service { id, name, team, repo_id }; default total);
super::counted!(Service);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ServiceQuery {
    /// Exact service name.
    pub name: Option<String>,
    pub team: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List services by id.
#[utoipa::path(get, path = "/services", tag = "services", params(ServiceQuery),
    responses((status = 200, description = "One page of services", body = Page<Service>)))]
async fn list_services(State(state): State<AppState>, ApiQuery(q): ApiQuery<ServiceQuery>) -> ApiResult<Json<Page<Service>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Service> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM services
         WHERE ($1::text IS NULL OR name = $1) AND ($2::text IS NULL OR team = $2)
         ORDER BY id LIMIT $3 OFFSET $4",
    )
    .bind(q.name)
    .bind(q.team)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one service.
#[utoipa::path(get, path = "/services/{id}", tag = "services", params(("id" = i64, Path)),
    responses((status = 200, description = "The service", body = Service), (status = 404, description = "No service has this id", body = ErrorBody)))]
async fn get_service(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Service>> {
    sqlx::query_as("SELECT * FROM services WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("service", id))
}
