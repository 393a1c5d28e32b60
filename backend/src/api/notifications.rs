//! `/notifications`: messages to users, usually about a ticket.

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
    OpenApiRouter::new().routes(routes!(list_notifications, create_notification)).routes(routes!(get_notification, update_notification))
}

pub const MESSAGE_MAX: usize = 1000;

#[derive(Debug, Serialize, ToSchema)]
pub struct Notification {
    pub id: i64,
    pub user_id: i64,
    pub ticket_id: Option<i64>,
    pub message: String,
    pub read: bool,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Notification { id, user_id, ticket_id, message, read, created_at }; default total);
super::counted!(Notification);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NotificationQuery {
    pub user_id: Option<i64>,
    pub ticket_id: Option<i64>,
    pub read: Option<bool>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List notifications, newest first.
#[utoipa::path(get, path = "/notifications", tag = "notifications", params(NotificationQuery),
    responses((status = 200, description = "One page of notifications", body = Page<Notification>)))]
async fn list_notifications(State(state): State<AppState>, ApiQuery(q): ApiQuery<NotificationQuery>) -> ApiResult<Json<Page<Notification>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Notification> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM notifications
         WHERE ($1::bigint IS NULL OR user_id = $1)
           AND ($2::bigint IS NULL OR ticket_id = $2)
           AND ($3::bool IS NULL OR read = $3)
         ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5",
    )
    .bind(q.user_id)
    .bind(q.ticket_id)
    .bind(q.read)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one notification.
#[utoipa::path(get, path = "/notifications/{id}", tag = "notifications", params(("id" = i64, Path)),
    responses((status = 200, description = "The notification", body = Notification), (status = 404, description = "No notification has this id", body = ErrorBody)))]
async fn get_notification(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Notification>> {
    sqlx::query_as("SELECT * FROM notifications WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("notification", id))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewNotification {
    #[schema(example = 1)]
    pub user_id: i64,
    #[schema(example = 1)]
    pub ticket_id: Option<i64>,
    /// 1–1000 characters, not all blank.
    #[schema(min_length = 1, max_length = 1000)]
    pub message: String,
}

/// Send a notification to a user.
#[utoipa::path(post, path = "/notifications", tag = "notifications", request_body = NewNotification,
    responses((status = 201, description = "The notification, sent", body = Notification)))]
async fn create_notification(State(state): State<AppState>, ApiJson(n): ApiJson<NewNotification>) -> ApiResult<(StatusCode, Json<Notification>)> {
    check_text("message", &n.message, MESSAGE_MAX)?;
    let mut db = state.db().await?;
    check_ref(&mut db, Table::Users, "user_id", n.user_id).await?;
    if let Some(t) = n.ticket_id {
        check_ref(&mut db, Table::Tickets, "ticket_id", t).await?;
    }
    let row: Notification = sqlx::query_as("INSERT INTO notifications (user_id, ticket_id, message, created_at) VALUES ($1, $2, $3, now()) RETURNING *")
        .bind(n.user_id)
        .bind(n.ticket_id)
        .bind(&n.message)
        .fetch_one(&mut *db)
        .await?;
    Ok((StatusCode::CREATED, Json(row)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationPatch {
    pub read: bool,
}

/// Mark a notification read or unread.
#[utoipa::path(patch, path = "/notifications/{id}", tag = "notifications", request_body = NotificationPatch, params(("id" = i64, Path)),
    responses((status = 200, description = "The notification with its new `read` flag", body = Notification), (status = 404, description = "No notification has this id", body = ErrorBody)))]
async fn update_notification(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(p): ApiJson<NotificationPatch>,
) -> ApiResult<Json<Notification>> {
    sqlx::query_as("UPDATE notifications SET read = $2 WHERE id = $1 RETURNING *")
        .bind(id)
        .bind(p.read)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("notification", id))
}
