//! `/runbooks`: operational procedures. The vendor API returns `internal_notes` like any other
//! field; withholding them is the business of whoever fronts this API.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Page, Window, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_runbooks)).routes(routes!(get_runbook))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Runbook {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub service: String,
    pub body: String,
    /// Internal only: escalation details not meant for customers.
    pub internal_notes: String,
    #[serde(serialize_with = "super::timestamp")]
    pub updated_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Runbook { id, slug, title, service, body, internal_notes, updated_at }; default total);
super::counted!(Runbook);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunbookQuery {
    pub service: Option<String>,
    pub slug: Option<String>,
    /// Case-insensitive substring of the title.
    pub q: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List runbooks by id.
#[utoipa::path(get, path = "/runbooks", tag = "runbooks", params(RunbookQuery),
    responses((status = 200, description = "One page of runbooks", body = Page<Runbook>)))]
async fn list_runbooks(State(state): State<AppState>, ApiQuery(q): ApiQuery<RunbookQuery>) -> ApiResult<Json<Page<Runbook>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Runbook> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM runbooks
         WHERE ($1::text IS NULL OR service = $1)
           AND ($2::text IS NULL OR slug = $2)
           AND ($3::text IS NULL OR strpos(lower(title), lower($3)) > 0)
         ORDER BY id LIMIT $4 OFFSET $5",
    )
    .bind(q.service)
    .bind(q.slug)
    .bind(q.q)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one runbook.
#[utoipa::path(get, path = "/runbooks/{id}", tag = "runbooks", params(("id" = i64, Path)),
    responses((status = 200, description = "The runbook", body = Runbook), (status = 404, description = "No runbook has this id", body = ErrorBody)))]
async fn get_runbook(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Runbook>> {
    sqlx::query_as("SELECT * FROM runbooks WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("runbook", id))
}
