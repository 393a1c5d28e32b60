//! `/tickets`: the support queue. Conditional updates (`If-Match: <version>`) prevent lost updates.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Counted, Page, Table, Window, check_len, check_ref, check_text, non_null, nullable, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_tickets, create_ticket)).routes(routes!(get_ticket, update_ticket, delete_ticket))
}

pub const TITLE_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 4000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    Open,
    InProgress,
    Resolved,
    Closed,
}

impl TicketStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::InProgress => "in_progress",
            Self::Resolved => "resolved",
            Self::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Medium,
    High,
    Urgent,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Urgent => "urgent",
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Ticket {
    pub id: i64,
    pub title: String,
    pub description: String,
    /// `open`, `in_progress`, `resolved` or `closed`.
    pub status: String,
    /// `low`, `medium`, `high` or `urgent`.
    pub priority: String,
    pub customer_id: Option<i64>,
    pub assignee_id: Option<i64>,
    /// Incremented by every update; send it back in `If-Match` for a conditional update.
    pub version: i32,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "super::timestamp")]
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug)]
struct TicketRow {
    id: i64,
    title: String,
    description: String,
    status: String,
    priority: String,
    customer_id: Option<i64>,
    assignee_id: Option<i64>,
    version: i32,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    total: i64,
}
super::from_row!(TicketRow { id, title, description, status, priority, customer_id, assignee_id, version, created_at, updated_at }; default total);

impl Counted for TicketRow {
    fn total(&self) -> i64 {
        self.total
    }
}

impl From<TicketRow> for Ticket {
    fn from(r: TicketRow) -> Self {
        Self {
            id: r.id,
            title: r.title,
            description: r.description,
            status: r.status,
            priority: r.priority,
            customer_id: r.customer_id,
            assignee_id: r.assignee_id,
            version: r.version,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const COLUMNS: &str = "id, title, description, status, priority, customer_id, assignee_id, version, created_at, updated_at";

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TicketQuery {
    pub status: Option<TicketStatus>,
    pub priority: Option<Priority>,
    pub customer_id: Option<i64>,
    pub assignee_id: Option<i64>,
    /// Case-insensitive substring of the title.
    pub q: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List tickets, newest first.
#[utoipa::path(get, path = "/tickets", tag = "tickets", params(TicketQuery),
    responses((status = 200, description = "One page of tickets", body = Page<Ticket>)))]
async fn list_tickets(State(state): State<AppState>, ApiQuery(q): ApiQuery<TicketQuery>) -> ApiResult<Json<Page<Ticket>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<TicketRow> = sqlx::query_as(
        "SELECT id, title, description, status, priority, customer_id, assignee_id, version, created_at, updated_at,
                count(*) OVER () AS total
         FROM tickets
         WHERE ($1::text IS NULL OR status = $1)
           AND ($2::text IS NULL OR priority = $2)
           AND ($3::bigint IS NULL OR customer_id = $3)
           AND ($4::bigint IS NULL OR assignee_id = $4)
           AND ($5::text IS NULL OR strpos(lower(title), lower($5)) > 0)
         ORDER BY created_at DESC, id DESC
         LIMIT $6 OFFSET $7",
    )
    .bind(q.status.map(TicketStatus::as_str))
    .bind(q.priority.map(Priority::as_str))
    .bind(q.customer_id)
    .bind(q.assignee_id)
    .bind(q.q)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one ticket.
#[utoipa::path(get, path = "/tickets/{id}", tag = "tickets", params(("id" = i64, Path)),
    responses((status = 200, description = "The ticket", body = Ticket), (status = 404, description = "No ticket has this id", body = ErrorBody)))]
async fn get_ticket(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Ticket>> {
    fetch(&mut *state.db().await?, id).await?.map(Json).ok_or_else(|| ApiError::not_found("ticket", id))
}

async fn fetch(db: &mut sqlx::PgConnection, id: i64) -> ApiResult<Option<Ticket>> {
    let row: Option<TicketRow> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM tickets WHERE id = $1"))).bind(id).fetch_optional(db).await?;
    Ok(row.map(Ticket::from))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTicket {
    /// 1–200 characters, not all blank.
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub description: String,
    /// Defaults to `medium`.
    pub priority: Option<Priority>,
    /// Defaults to `open`.
    pub status: Option<TicketStatus>,
    #[schema(example = 1)]
    pub customer_id: Option<i64>,
    #[schema(example = 1)]
    pub assignee_id: Option<i64>,
}

/// Create a ticket.
#[utoipa::path(post, path = "/tickets", tag = "tickets", request_body = NewTicket,
    responses((status = 201, description = "The ticket, created", body = Ticket)))]
async fn create_ticket(State(state): State<AppState>, ApiJson(t): ApiJson<NewTicket>) -> ApiResult<(StatusCode, Json<Ticket>)> {
    check_text("title", &t.title, TITLE_MAX)?;
    check_len("description", &t.description, DESCRIPTION_MAX)?;
    let mut db = state.db().await?;
    if let Some(id) = t.customer_id {
        check_ref(&mut db, Table::Customers, "customer_id", id).await?;
    }
    if let Some(id) = t.assignee_id {
        check_ref(&mut db, Table::Users, "assignee_id", id).await?;
    }
    let row: TicketRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO tickets (title, description, status, priority, customer_id, assignee_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, now(), now()) RETURNING {COLUMNS}"
    )))
    .bind(&t.title)
    .bind(&t.description)
    .bind(t.status.unwrap_or(TicketStatus::Open).as_str())
    .bind(t.priority.unwrap_or(Priority::Medium).as_str())
    .bind(t.customer_id)
    .bind(t.assignee_id)
    .fetch_one(&mut *db)
    .await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// At least one field: an update that changes nothing is refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct TicketPatch {
    /// 1–200 characters, not all blank.
    #[serde(default, deserialize_with = "non_null")]
    #[schema(min_length = 1, max_length = 200, nullable = false)]
    pub title: Option<String>,
    /// Up to 4000 characters.
    #[serde(default, deserialize_with = "non_null")]
    #[schema(max_length = 4000, nullable = false)]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "non_null")]
    #[schema(nullable = false)]
    pub status: Option<TicketStatus>,
    #[serde(default, deserialize_with = "non_null")]
    #[schema(nullable = false)]
    pub priority: Option<Priority>,
    /// A customer id, or null to detach the customer.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub customer_id: Option<Option<i64>>,
    /// A user id, or null to unassign.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub assignee_id: Option<Option<i64>>,
}

impl TicketPatch {
    fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.description.is_none()
            && self.status.is_none()
            && self.priority.is_none()
            && self.customer_id.is_none()
            && self.assignee_id.is_none()
    }
}

/// Update some fields of a ticket. Fields left out keep their value, so two clients changing
/// different fields never overwrite each other. With `If-Match: <version>` the update applies
/// only if nobody changed the ticket since that version (412 otherwise).
#[utoipa::path(patch, path = "/tickets/{id}", tag = "tickets", request_body = TicketPatch,
    params(("id" = i64, Path), ("If-Match" = Option<i32>, Header, description = "Expected current version")),
    responses((status = 200, description = "The ticket after the update", body = Ticket), (status = 404, description = "No ticket has this id", body = ErrorBody), (status = 412, description = "`If-Match` names another version than the current one; re-read the ticket and retry", body = ErrorBody)))]
async fn update_ticket(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<TicketPatch>,
) -> ApiResult<Json<Ticket>> {
    let expected_version = if_match(&headers)?;
    if p.is_empty() {
        return Err(ApiError::BadRequest { field: None, message: "the update names no field to change".into() });
    }
    if let Some(title) = &p.title {
        check_text("title", title, TITLE_MAX)?;
    }
    if let Some(description) = &p.description {
        check_len("description", description, DESCRIPTION_MAX)?;
    }
    let mut db = state.db().await?;
    if let Some(Some(cid)) = p.customer_id {
        check_ref(&mut db, Table::Customers, "customer_id", cid).await?;
    }
    if let Some(Some(uid)) = p.assignee_id {
        check_ref(&mut db, Table::Users, "assignee_id", uid).await?;
    }
    // One statement, column by column: the row lock serialises concurrent writers and each
    // only touches the columns it names.
    let row: Option<TicketRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE tickets SET
            title = COALESCE($2, title),
            description = COALESCE($3, description),
            status = COALESCE($4, status),
            priority = COALESCE($5, priority),
            customer_id = CASE WHEN $6 THEN $7 ELSE customer_id END,
            assignee_id = CASE WHEN $8 THEN $9 ELSE assignee_id END,
            version = version + 1,
            updated_at = now()
         WHERE id = $1 AND ($10::int IS NULL OR version = $10)
         RETURNING {COLUMNS}"
    )))
    .bind(id)
    .bind(&p.title)
    .bind(&p.description)
    .bind(p.status.map(TicketStatus::as_str))
    .bind(p.priority.map(Priority::as_str))
    .bind(p.customer_id.is_some())
    .bind(p.customer_id.flatten())
    .bind(p.assignee_id.is_some())
    .bind(p.assignee_id.flatten())
    .bind(expected_version)
    .fetch_optional(&mut *db)
    .await?;
    match row {
        Some(row) => Ok(Json(row.into())),
        None => match fetch(&mut db, id).await? {
            None => Err(ApiError::not_found("ticket", id)),
            Some(current) => Err(ApiError::PreconditionFailed(format!(
                "ticket {id} is at version {}, not the version {} given in If-Match; re-read it and retry",
                current.version,
                expected_version.unwrap_or_default()
            ))),
        },
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    pub deleted: i64,
}

/// Delete a ticket and the notifications about it, in one transaction.
#[utoipa::path(delete, path = "/tickets/{id}", tag = "tickets", params(("id" = i64, Path)),
    responses((status = 200, description = "The id of the deleted ticket", body = Deleted), (status = 404, description = "No ticket has this id", body = ErrorBody)))]
async fn delete_ticket(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Deleted>> {
    let mut tx = state.pool().begin().await?;
    sqlx::query("DELETE FROM notifications WHERE ticket_id = $1").bind(id).execute(&mut *tx).await?;
    let deleted: Option<i64> = sqlx::query_scalar("DELETE FROM tickets WHERE id = $1 RETURNING id").bind(id).fetch_optional(&mut *tx).await?;
    let Some(deleted) = deleted else { return Err(ApiError::not_found("ticket", id)) };
    tx.commit().await?;
    Ok(Json(Deleted { deleted }))
}

fn if_match(headers: &HeaderMap) -> ApiResult<Option<i32>> {
    let Some(value) = headers.get(axum::http::header::IF_MATCH) else { return Ok(None) };
    let text = value.to_str().unwrap_or("").trim().trim_matches('"');
    text.parse::<i32>()
        .map(Some)
        .map_err(|_| ApiError::BadRequest { field: Some("If-Match".into()), message: format!("If-Match must be a ticket version number, got {text:?}") })
}
