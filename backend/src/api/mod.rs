//! The flat, vendor-shaped REST API: one module per resource, each with its own router.

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::AppState;
use crate::error::{ApiError, ApiResult};

pub mod admin;
pub mod customers;
pub mod deploys;
pub mod notifications;
pub mod repos;
pub mod reviews;
pub mod runbooks;
pub mod tickets;
pub mod users;

/// How the API writes every timestamp: RFC 3339 in UTC, whole seconds as they are (`…:00Z`, every
/// seeded time), anything finer always with six digits (`…:05.120000Z`). chrono's own form drops
/// trailing zero digits, so a time from the clock came out 3 or 6 digits long by chance, and the
/// same call's reply differed in length — and in tokens — from one session to the next.
pub(crate) fn timestamp<S: serde::Serializer>(t: &chrono::DateTime<chrono::Utc>, s: S) -> Result<S::Ok, S::Error> {
    use chrono::Timelike;
    let form = if t.nanosecond() == 0 { chrono::SecondsFormat::Secs } else { chrono::SecondsFormat::Micros };
    s.serialize_str(&t.to_rfc3339_opts(form, true))
}

/// Default page size when a list request gives no `limit`.
pub const DEFAULT_LIMIT: i64 = 50;
/// Largest `limit` a list request may ask for.
pub const MAX_LIMIT: i64 = 200;

#[cfg(test)]
mod tests {
    #[test]
    fn a_timestamp_is_as_long_whatever_its_digits() {
        use chrono::TimeZone;
        #[derive(serde::Serialize)]
        struct T(#[serde(serialize_with = "super::timestamp")] chrono::DateTime<chrono::Utc>);
        let at = |micros: u32| {
            serde_json::to_string(&T(chrono::Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap() + chrono::Duration::microseconds(micros.into()))).unwrap()
        };
        assert_eq!(at(0), "\"2026-01-02T03:04:05Z\"", "whole seconds, as seeded");
        assert_eq!(at(120_000), "\"2026-01-02T03:04:05.120000Z\"");
        assert_eq!(at(123_000).len(), at(123_456).len(), "chrono's default would write .123Z");
        assert_eq!(at(1).len(), at(999_999).len());
    }

    #[test]
    fn blank_covers_rust_whitespace_and_the_other_definitions() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if c.is_whitespace() {
                assert!(super::is_blank_char(c), "{:?} is whitespace to Rust", c);
            }
        }
        for c in ['\u{1C}', '\u{1F}', '\u{FEFF}', ' '] {
            assert!(super::is_blank_char(c), "{c:?}");
        }
        assert!(!super::is_blank_char('a') && !super::is_blank_char('\0') && !super::is_blank_char('\u{200B}'));
    }
}

/// All resource routers, merged: the data plane, what an MCP server is given. Each carries its
/// OpenAPI paths with it. The control plane ([`admin`]) is not among them.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(customers::router())
        .merge(users::router())
        .merge(tickets::router())
        .merge(notifications::router())
        .merge(repos::router())
        .merge(reviews::router())
        .merge(runbooks::router())
        .merge(deploys::router())
}

/// One page of a list endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub data: Vec<T>,
    /// Rows matching the filters, across all pages.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    /// Offset of the next page, or null on the last page.
    pub next_offset: Option<i64>,
}

impl<T> Page<T> {
    fn new(data: Vec<T>, total: i64, window: Window) -> Self {
        let next = window.offset + data.len() as i64;
        Self { next_offset: (next < total).then_some(next), data, total, limit: window.limit, offset: window.offset }
    }
}

/// Validated `limit`/`offset` of a list request.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub limit: i64,
    pub offset: i64,
}

impl Window {
    pub fn from_query(limit: Option<i64>, offset: Option<i64>) -> ApiResult<Self> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::BadRequest { field: Some("limit".into()), message: format!("limit must be between 1 and {MAX_LIMIT}, got {limit}") });
        }
        let offset = offset.unwrap_or(0);
        if offset < 0 {
            return Err(ApiError::BadRequest { field: Some("offset".into()), message: format!("offset must be ≥ 0, got {offset}") });
        }
        Ok(Self { limit, offset })
    }
}

/// A row of a list query that also carries `count(*) OVER ()`.
pub trait Counted {
    fn total(&self) -> i64;
}

pub fn page_of<R: Counted, T: From<R>>(rows: Vec<R>, window: Window) -> Page<T> {
    let total = rows.first().map_or(0, Counted::total);
    Page::new(rows.into_iter().map(T::from).collect(), total, window)
}

/// The characters that make text blank: whitespace as Rust, ECMAScript and Python each define
/// it (their union), so that the pattern the OpenAPI document gives a non-blank field
/// ([`crate::openapi`]) and [`check_text`] agree in any client's regex engine.
pub const BLANK_RANGES: &[(char, char)] = &[
    ('\u{09}', '\u{0D}'),
    ('\u{1C}', '\u{20}'),
    ('\u{85}', '\u{85}'),
    ('\u{A0}', '\u{A0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200A}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202F}', '\u{202F}'),
    ('\u{205F}', '\u{205F}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{FEFF}', '\u{FEFF}'),
];

/// Whether `c` is one of [`BLANK_RANGES`].
pub fn is_blank_char(c: char) -> bool {
    BLANK_RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Non-blank text of at most `max` characters.
pub fn check_text(field: &str, value: &str, max: usize) -> ApiResult<()> {
    if value.chars().all(is_blank_char) {
        return Err(ApiError::invalid(field, "must not be blank"));
    }
    check_len(field, value, max)
}

/// Text (possibly empty) of at most `max` characters.
pub fn check_len(field: &str, value: &str, max: usize) -> ApiResult<()> {
    let n = value.chars().count();
    if n > max {
        return Err(ApiError::invalid(field, format!("must be at most {max} characters, got {n}")));
    }
    // NUL characters never get this far: the extractors refuse them for every handler.
    Ok(())
}

/// Fails with a 422 naming `field` unless a row with `id` exists in `table`.
pub async fn check_ref(db: &mut sqlx::PgConnection, table: Table, field: &str, id: i64) -> ApiResult<()> {
    let exists: bool = sqlx::query_scalar(table.exists_sql()).bind(id).fetch_one(db).await?;
    if exists { Ok(()) } else { Err(ApiError::invalid(field, format!("no {} with id {id}", table.noun()))) }
}

/// Tables other rows refer to by id.
#[derive(Debug, Clone, Copy)]
pub enum Table {
    Customers,
    Users,
    Tickets,
    Services,
    Repos,
}

impl Table {
    fn exists_sql(self) -> &'static str {
        match self {
            Self::Customers => "SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1)",
            Self::Users => "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)",
            Self::Tickets => "SELECT EXISTS (SELECT 1 FROM tickets WHERE id = $1)",
            Self::Services => "SELECT EXISTS (SELECT 1 FROM services WHERE id = $1)",
            Self::Repos => "SELECT EXISTS (SELECT 1 FROM repos WHERE id = $1)",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Self::Customers => "customer",
            Self::Users => "user",
            Self::Tickets => "ticket",
            Self::Services => "service",
            Self::Repos => "repo",
        }
    }
}

/// For PATCH bodies: absent → `None` (leave unchanged), `null` → `Some(None)` (clear).
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// For PATCH fields that cannot be cleared: absent → `None` (leave unchanged); `null` is refused
/// with the field's name, rather than read as "absent" (which would let `{"status": null}`
/// pass as an update that names a field yet changes nothing).
pub fn non_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Implements [`Counted`] for a row type with a `total` column.
macro_rules! counted {
    ($t:ty) => {
        impl $crate::api::Counted for $t {
            fn total(&self) -> i64 {
                self.total
            }
        }
    };
}
pub(crate) use counted;

/// `sqlx::FromRow` for a row struct: each field read from the column of its name; the fields
/// after `default` take their `Default` when the query has no such column (`total`, which only
/// a list's query selects). Written out instead of sqlx's derive, whose proc-macro crate builds
/// a second copy of sqlx, tokio and their dependencies for the compiler (docs/performance.md).
/// A field left out, or one the struct does not have, fails to compile.
macro_rules! from_row {
    ($t:ident { $($field:ident),* $(,)? } $(; default $($or_default:ident),* $(,)?)?) => {
        impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for $t {
            fn from_row(row: &'r sqlx::postgres::PgRow) -> Result<Self, sqlx::Error> {
                use sqlx::Row as _;
                Ok(Self {
                    $($field: row.try_get(stringify!($field))?,)*
                    $($($or_default: match row.try_get(stringify!($or_default)) {
                        Err(sqlx::Error::ColumnNotFound(_)) => Default::default(),
                        read => read?,
                    },)*)?
                })
            }
        }
    };
}
pub(crate) use from_row;
