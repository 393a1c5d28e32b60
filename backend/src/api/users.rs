//! `/users`: engineers and support staff, with their team and on-call flag.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Page, Window, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_users)).routes(routes!(get_user, update_user))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub team: String,
    pub on_call: bool,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(User { id, name, email, team, on_call }; default total);
super::counted!(User);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    pub team: Option<String>,
    pub on_call: Option<bool>,
    /// Case-insensitive substring of the name.
    pub q: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List users by id.
#[utoipa::path(get, path = "/users", tag = "users", params(UserQuery),
    responses((status = 200, description = "One page of users", body = Page<User>)))]
async fn list_users(State(state): State<AppState>, ApiQuery(q): ApiQuery<UserQuery>) -> ApiResult<Json<Page<User>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<User> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM users
         WHERE ($1::text IS NULL OR team = $1)
           AND ($2::bool IS NULL OR on_call = $2)
           AND ($3::text IS NULL OR strpos(lower(name), lower($3)) > 0)
         ORDER BY id LIMIT $4 OFFSET $5",
    )
    .bind(q.team)
    .bind(q.on_call)
    .bind(q.q)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one user.
#[utoipa::path(get, path = "/users/{id}", tag = "users", params(("id" = i64, Path)),
    responses((status = 200, description = "The user", body = User), (status = 404, description = "No user has this id", body = ErrorBody)))]
async fn get_user(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<User>> {
    sqlx::query_as("SELECT * FROM users WHERE id = $1").bind(id).fetch_optional(&state.pool()).await?.map(Json).ok_or_else(|| ApiError::not_found("user", id))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPatch {
    pub on_call: bool,
}

/// Set a user's on-call flag.
#[utoipa::path(patch, path = "/users/{id}", tag = "users", request_body = UserPatch, params(("id" = i64, Path)),
    responses((status = 200, description = "The user with its new on-call flag", body = User), (status = 404, description = "No user has this id", body = ErrorBody)))]
async fn update_user(State(state): State<AppState>, ApiPath(id): ApiPath<i64>, ApiJson(p): ApiJson<UserPatch>) -> ApiResult<Json<User>> {
    sqlx::query_as("UPDATE users SET on_call = $2 WHERE id = $1 RETURNING *")
        .bind(id)
        .bind(p.on_call)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("user", id))
}
