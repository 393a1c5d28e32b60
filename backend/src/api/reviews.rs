//! `/change_requests` with their review comments and reviews. Submitting a review with its
//! comments is one transaction: either all rows are written or none.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::Connection;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Page, Table, Window, check_len, check_ref, check_text, page_of};
use crate::AppState;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_change_requests))
        .routes(routes!(get_change_request))
        .routes(routes!(list_comments, create_comment))
        .routes(routes!(list_reviews, create_review))
}

pub const BODY_MAX: usize = 4000;
pub const PATH_MAX: usize = 300;
/// Most comments one review may carry.
pub const MAX_REVIEW_COMMENTS: usize = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct ChangeRequest {
    pub id: i64,
    pub repo_id: i64,
    /// Number within its repository.
    pub number: i32,
    pub title: String,
    pub description: String,
    pub author_id: i64,
    /// `open`, `merged` or `closed`.
    pub status: String,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(ChangeRequest { id, repo_id, number, title, description, author_id, status, created_at }; default total);
super::counted!(ChangeRequest);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChangeRequestQuery {
    pub repo_id: Option<i64>,
    pub status: Option<String>,
    pub author_id: Option<i64>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List change requests by id.
#[utoipa::path(get, path = "/change_requests", tag = "change_requests", params(ChangeRequestQuery),
    responses((status = 200, description = "One page of change requests", body = Page<ChangeRequest>)))]
async fn list_change_requests(State(state): State<AppState>, ApiQuery(q): ApiQuery<ChangeRequestQuery>) -> ApiResult<Json<Page<ChangeRequest>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<ChangeRequest> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM change_requests
         WHERE ($1::bigint IS NULL OR repo_id = $1)
           AND ($2::text IS NULL OR status = $2)
           AND ($3::bigint IS NULL OR author_id = $3)
         ORDER BY id LIMIT $4 OFFSET $5",
    )
    .bind(q.repo_id)
    .bind(q.status)
    .bind(q.author_id)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one change request.
#[utoipa::path(get, path = "/change_requests/{id}", tag = "change_requests", params(("id" = i64, Path)),
    responses((status = 200, description = "The change request", body = ChangeRequest), (status = 404, description = "No change request has this id", body = ErrorBody)))]
async fn get_change_request(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<ChangeRequest>> {
    sqlx::query_as("SELECT * FROM change_requests WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("change request", id))
}

async fn require_change_request(db: &mut sqlx::PgConnection, id: i64) -> ApiResult<()> {
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM change_requests WHERE id = $1)").bind(id).fetch_one(db).await?;
    if exists { Ok(()) } else { Err(ApiError::not_found("change request", id)) }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewComment {
    pub id: i64,
    pub change_request_id: i64,
    /// The review this comment was submitted with, or null for a standalone comment.
    pub review_id: Option<i64>,
    pub author_id: i64,
    pub path: String,
    pub line: i32,
    pub body: String,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(ReviewComment { id, change_request_id, review_id, author_id, path, line, body, created_at }; default total);
super::counted!(ReviewComment);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List the review comments on a change request, oldest first.
#[utoipa::path(get, path = "/change_requests/{id}/comments", tag = "change_requests", params(("id" = i64, Path), PageQuery),
    responses((status = 200, description = "One page of the change request's review comments", body = Page<ReviewComment>), (status = 404, description = "No change request has this id", body = ErrorBody)))]
async fn list_comments(State(state): State<AppState>, ApiPath(id): ApiPath<i64>, ApiQuery(q): ApiQuery<PageQuery>) -> ApiResult<Json<Page<ReviewComment>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let mut db = state.db().await?;
    require_change_request(&mut db, id).await?;
    let rows: Vec<ReviewComment> =
        sqlx::query_as("SELECT *, count(*) OVER () AS total FROM review_comments WHERE change_request_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3")
            .bind(id)
            .bind(window.limit)
            .bind(window.offset)
            .fetch_all(&mut *db)
            .await?;
    Ok(Json(page_of(rows, window)))
}

/// A comment on one line of one file.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentInput {
    /// File path, 1–300 characters, not all blank.
    #[schema(min_length = 1, max_length = 300)]
    pub path: String,
    /// Line number, ≥ 1.
    #[schema(minimum = 1)]
    pub line: i32,
    /// 1–4000 characters, not all blank.
    #[schema(min_length = 1, max_length = 4000)]
    pub body: String,
}

impl CommentInput {
    fn validate(&self, prefix: &str) -> ApiResult<()> {
        validate_comment(prefix, &self.path, self.line, &self.body)
    }
}

fn validate_comment(prefix: &str, path: &str, line: i32, body: &str) -> ApiResult<()> {
    check_text(&format!("{prefix}path"), path, PATH_MAX)?;
    check_text(&format!("{prefix}body"), body, BODY_MAX)?;
    if line < 1 {
        return Err(ApiError::invalid(format!("{prefix}line"), format!("must be ≥ 1, got {line}")));
    }
    Ok(())
}

/// A standalone comment: [`CommentInput`]'s fields plus the author. Spelled out rather than
/// `#[serde(flatten)]`ed, because serde cannot deny unknown fields through a flatten and the
/// generated schema (`allOf` of two closed objects) could never be satisfied.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewComment {
    #[schema(example = 1)]
    pub author_id: i64,
    /// File path, 1–300 characters, not all blank.
    #[schema(min_length = 1, max_length = 300)]
    pub path: String,
    /// Line number, ≥ 1.
    #[schema(minimum = 1)]
    pub line: i32,
    /// 1–4000 characters, not all blank.
    #[schema(min_length = 1, max_length = 4000)]
    pub body: String,
}

/// Add a standalone review comment to a change request.
#[utoipa::path(post, path = "/change_requests/{id}/comments", tag = "change_requests", params(("id" = i64, Path)), request_body = NewComment,
    responses((status = 201, description = "The comment, created", body = ReviewComment), (status = 404, description = "No change request has this id", body = ErrorBody)))]
async fn create_comment(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(c): ApiJson<NewComment>,
) -> ApiResult<(StatusCode, Json<ReviewComment>)> {
    validate_comment("", &c.path, c.line, &c.body)?;
    let mut db = state.db().await?;
    require_change_request(&mut db, id).await?;
    check_ref(&mut db, Table::Users, "author_id", c.author_id).await?;
    let row: ReviewComment = sqlx::query_as(
        "INSERT INTO review_comments (change_request_id, author_id, path, line, body, created_at)
         VALUES ($1, $2, $3, $4, $5, now()) RETURNING *",
    )
    .bind(id)
    .bind(c.author_id)
    .bind(&c.path)
    .bind(c.line)
    .bind(&c.body)
    .fetch_one(&mut *db)
    .await?;
    Ok((StatusCode::CREATED, Json(row)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Review {
    pub id: i64,
    pub change_request_id: i64,
    pub reviewer_id: i64,
    /// `approve`, `request_changes` or `comment`.
    pub verdict: String,
    pub body: String,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Review { id, change_request_id, reviewer_id, verdict, body, created_at }; default total);
super::counted!(Review);

/// List the reviews of a change request, oldest first.
#[utoipa::path(get, path = "/change_requests/{id}/reviews", tag = "change_requests", params(("id" = i64, Path), PageQuery),
    responses((status = 200, description = "One page of the change request's reviews", body = Page<Review>), (status = 404, description = "No change request has this id", body = ErrorBody)))]
async fn list_reviews(State(state): State<AppState>, ApiPath(id): ApiPath<i64>, ApiQuery(q): ApiQuery<PageQuery>) -> ApiResult<Json<Page<Review>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let mut db = state.db().await?;
    require_change_request(&mut db, id).await?;
    let rows: Vec<Review> =
        sqlx::query_as("SELECT *, count(*) OVER () AS total FROM reviews WHERE change_request_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3")
            .bind(id)
            .bind(window.limit)
            .bind(window.offset)
            .fetch_all(&mut *db)
            .await?;
    Ok(Json(page_of(rows, window)))
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    RequestChanges,
    Comment,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::RequestChanges => "request_changes",
            Self::Comment => "comment",
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewReview {
    #[schema(example = 1)]
    pub reviewer_id: i64,
    pub verdict: Verdict,
    /// Summary, up to 4000 characters.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub body: String,
    /// Line comments submitted with the review (at most 100).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub comments: Vec<CommentInput>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubmittedReview {
    pub review: Review,
    pub comments: Vec<ReviewComment>,
}

/// Submit a review with its line comments, all at once.
#[utoipa::path(post, path = "/change_requests/{id}/reviews", tag = "change_requests", params(("id" = i64, Path)), request_body = NewReview,
    responses((status = 201, description = "The review and its comments, written in one transaction", body = SubmittedReview), (status = 404, description = "No change request has this id", body = ErrorBody), (status = 409, description = "The change request is merged or closed: only an open one takes reviews", body = ErrorBody)))]
async fn create_review(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    ApiJson(r): ApiJson<NewReview>,
) -> ApiResult<(StatusCode, Json<SubmittedReview>)> {
    check_len("body", &r.body, BODY_MAX)?;
    if r.comments.len() > MAX_REVIEW_COMMENTS {
        return Err(ApiError::invalid("comments", format!("at most {MAX_REVIEW_COMMENTS} comments per review, got {}", r.comments.len())));
    }
    for (i, c) in r.comments.iter().enumerate() {
        c.validate(&format!("comments[{i}]."))?;
    }
    let mut db = state.db().await?;
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM change_requests WHERE id = $1").bind(id).fetch_optional(&mut *db).await?;
    let Some(status) = status else { return Err(ApiError::not_found("change request", id)) };
    // A bad request is named as one (422) before the state it would meet (409).
    check_ref(&mut db, Table::Users, "reviewer_id", r.reviewer_id).await?;
    if status != "open" {
        return Err(ApiError::Conflict(format!("change request {id} is {status}; only an open change request takes reviews")));
    }
    let mut tx = db.begin().await?;
    let review: Review =
        sqlx::query_as("INSERT INTO reviews (change_request_id, reviewer_id, verdict, body, created_at) VALUES ($1, $2, $3, $4, now()) RETURNING *")
            .bind(id)
            .bind(r.reviewer_id)
            .bind(r.verdict.as_str())
            .bind(&r.body)
            .fetch_one(&mut *tx)
            .await?;
    let comments: Vec<ReviewComment> = sqlx::query_as(
        "INSERT INTO review_comments (change_request_id, review_id, author_id, path, line, body, created_at)
         SELECT $1, $2, $3, p, l, b, now() FROM UNNEST($4::text[], $5::int[], $6::text[]) WITH ORDINALITY AS x(p, l, b, n)
         ORDER BY n RETURNING *",
    )
    .bind(id)
    .bind(review.id)
    .bind(r.reviewer_id)
    .bind(r.comments.iter().map(|c| c.path.as_str()).collect::<Vec<_>>())
    .bind(r.comments.iter().map(|c| c.line).collect::<Vec<_>>())
    .bind(r.comments.iter().map(|c| c.body.as_str()).collect::<Vec<_>>())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(SubmittedReview { review, comments })))
}
