//! `/customers`: the companies tickets are filed for (read-only).

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
    OpenApiRouter::new().routes(routes!(list_customers)).routes(routes!(get_customer))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Customer {
    pub id: i64,
    pub name: String,
    /// `free`, `standard` or `enterprise`.
    pub tier: String,
    pub region: String,
    pub contact_email: String,
    #[serde(serialize_with = "super::timestamp")]
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub total: i64,
}
super::from_row!(Customer { id, name, tier, region, contact_email, created_at }; default total);
super::counted!(Customer);

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CustomerQuery {
    /// Exact name, case-insensitive.
    pub name: Option<String>,
    /// Case-insensitive substring of the name.
    pub q: Option<String>,
    pub tier: Option<String>,
    pub region: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List customers by id.
#[utoipa::path(get, path = "/customers", tag = "customers", params(CustomerQuery),
    responses((status = 200, description = "One page of customers", body = Page<Customer>)))]
async fn list_customers(State(state): State<AppState>, ApiQuery(q): ApiQuery<CustomerQuery>) -> ApiResult<Json<Page<Customer>>> {
    let window = Window::from_query(q.limit, q.offset)?;
    let rows: Vec<Customer> = sqlx::query_as(
        "SELECT *, count(*) OVER () AS total FROM customers
         WHERE ($1::text IS NULL OR lower(name) = lower($1))
           AND ($2::text IS NULL OR strpos(lower(name), lower($2)) > 0)
           AND ($3::text IS NULL OR tier = $3)
           AND ($4::text IS NULL OR region = $4)
         ORDER BY id LIMIT $5 OFFSET $6",
    )
    .bind(q.name)
    .bind(q.q)
    .bind(q.tier)
    .bind(q.region)
    .bind(window.limit)
    .bind(window.offset)
    .fetch_all(&state.pool())
    .await?;
    Ok(Json(page_of(rows, window)))
}

/// Get one customer.
#[utoipa::path(get, path = "/customers/{id}", tag = "customers", params(("id" = i64, Path)),
    responses((status = 200, description = "The customer", body = Customer), (status = 404, description = "No customer has this id", body = ErrorBody)))]
async fn get_customer(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Json<Customer>> {
    sqlx::query_as("SELECT * FROM customers WHERE id = $1")
        .bind(id)
        .fetch_optional(&state.pool())
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("customer", id))
}
