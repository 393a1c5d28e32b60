//! The flat, vendor-named 1:1 wrapper tools every control server is built from (`docs/patterns.md`).
//!
//! One tool per backend endpoint, named after it (`tickets_list` ↔ `GET /tickets`), taking
//! exactly the endpoint's parameters and returning its JSON unchanged: the wrapper a team
//! generates first. Each group is a macro that emits a `#[tool_router]` impl on the given
//! server type (which must have a `backend: BackendClient` field), so a control composes the
//! groups it needs with `+` and pattern servers can reuse a group where the design is the same.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Path parameter of `…_get` tools.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ById {
    /// Numeric id of the record.
    pub id: i64,
}

/// Shared paging parameters (the backend's defaults apply when omitted).
macro_rules! paged_query {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fm])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<$ty>,)*
            /// Page size, 1–200 (default 50).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub limit: Option<i64>,
            /// Rows to skip (default 0).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub offset: Option<i64>,
        }
    };
}

paged_query!(CustomersList {
    /// Exact name, case-insensitive.
    name: String,
    /// Case-insensitive substring of the name.
    q: String,
    /// `free`, `standard` or `enterprise`.
    tier: String,
    region: String,
});
paged_query!(UsersList {
    team: String,
    on_call: bool,
    /// Case-insensitive substring of the name.
    q: String,
});
paged_query!(TicketsList {
    /// `open`, `in_progress`, `resolved` or `closed`.
    status: String,
    /// `low`, `medium`, `high` or `urgent`.
    priority: String,
    customer_id: i64,
    assignee_id: i64,
    /// Case-insensitive substring of the title.
    q: String,
});
paged_query!(NotificationsList { user_id: i64, ticket_id: i64, read: bool });
paged_query!(ReposList {
    owner: String,
    /// Exact repository name.
    name: String,
    /// Case-insensitive substring of the name.
    q: String,
});
paged_query!(ServicesList {
    /// Exact service name.
    name: String,
    team: String,
});
paged_query!(ChangeRequestsList {
    repo_id: i64,
    /// `open`, `merged` or `closed`.
    status: String,
    author_id: i64,
});
paged_query!(RunbooksList {
    service: String,
    slug: String,
    /// Case-insensitive substring of the title.
    q: String,
});
paged_query!(DeploysList {
    service_id: i64,
    /// `staging` or `production`.
    environment: String,
    /// `pending`, `succeeded`, `failed` or `rolled_back`.
    status: String,
});

/// Paging of a sub-list (comments, reviews) of one change request.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRequestPage {
    /// Id of the change request.
    pub id: i64,
    /// Page size, 1–200 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
}

impl ChangeRequestPage {
    /// The query string: paging only (the id is in the path; unset fields are left out).
    pub fn query(&self) -> Value {
        without_id(self)
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketsCreate {
    /// 1–200 characters.
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `low`, `medium` (default), `high` or `urgent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// `open` (default), `in_progress`, `resolved` or `closed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<i64>,
}

/// `PATCH /tickets/{id}`: fields left out keep their value.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketsUpdate {
    /// Id of the ticket to update.
    pub id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `open`, `in_progress`, `resolved` or `closed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `low`, `medium`, `high` or `urgent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// A customer id, or null to detach the customer.
    #[serde(default, deserialize_with = "nullable", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<i64>", extend("x-null-clears" = true))]
    pub customer_id: Option<Option<i64>>,
    /// A user id, or null to unassign.
    #[serde(default, deserialize_with = "nullable", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<i64>", extend("x-null-clears" = true))]
    pub assignee_id: Option<Option<i64>>,
}

/// For an update's field that `null` clears: absent → `None` (leave unchanged), `null` →
/// `Some(None)` (clear), a value → `Some(Some(v))`; serialised back the same way, so the PATCH
/// body keeps an explicit `null` ([`crate::schema`] keeps `null` in such a field's schema).
pub fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

impl TicketsUpdate {
    /// The PATCH body: every field but the id.
    pub fn body(&self) -> Value {
        without_id(self)
    }
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationsCreate {
    /// Recipient.
    pub user_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket_id: Option<i64>,
    /// 1–1000 characters.
    pub message: String,
}

/// One line comment.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LineComment {
    /// File path.
    pub path: String,
    /// Line number, ≥ 1.
    pub line: i32,
    pub body: String,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentsCreate {
    /// Id of the change request.
    pub id: i64,
    pub author_id: i64,
    /// File path.
    pub path: String,
    /// Line number, ≥ 1.
    pub line: i32,
    pub body: String,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewsCreate {
    /// Id of the change request.
    pub id: i64,
    pub reviewer_id: i64,
    /// `approve`, `request_changes` or `comment`.
    pub verdict: String,
    /// Summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Line comments submitted with the review.
    #[serde(default)]
    pub comments: Vec<LineComment>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeploysCreate {
    pub service_id: i64,
    /// Version to deploy, e.g. `1.4.2`.
    pub version: String,
    /// `staging` or `production`.
    pub environment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_by: Option<i64>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeploysUpdate {
    /// Id of the deploy.
    pub id: i64,
    /// The only transition: `rolled_back` (from `succeeded`).
    pub status: String,
}

/// Body of a POST whose path carries the first field (`id`).
pub fn without_id(value: &impl Serialize) -> Value {
    let mut v = serde_json::to_value(value).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.remove("id");
    }
    v
}

/// Emits flat tool groups on a server type. Usage: `flat_tools!(MyServer: customers, tickets_read);`
/// then compose `Self::flat_customers() + Self::flat_tickets_read()`. Groups: `customers`,
/// `users`, `tickets_read`, `tickets_write`, `notifications`, `repos`, `services`,
/// `change_requests_read`, `change_requests_write`, `runbooks`, `deploys`.
#[macro_export]
macro_rules! flat_tools {
    ($server:ty : $($group:ident),+ $(,)?) => { $( $crate::flat_tools!(@group $server, $group); )+ };

    (@group $server:ty, customers) => {
        #[rmcp::tool_router(router = flat_customers)]
        impl $server {
            #[rmcp::tool(description = "GET /customers — list customers by id. Filters: name (exact, case-insensitive), q (substring), tier, region; paged with limit/offset.")]
            async fn customers_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::CustomersList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/customers", &a).await))
            }
            #[rmcp::tool(description = "GET /customers/{id} — one customer.")]
            async fn customers_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/customers/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, users) => {
        #[rmcp::tool_router(router = flat_users)]
        impl $server {
            #[rmcp::tool(description = "GET /users — list users by id. Filters: team, on_call, q (name substring); paged with limit/offset.")]
            async fn users_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::UsersList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/users", &a).await))
            }
            #[rmcp::tool(description = "GET /users/{id} — one user.")]
            async fn users_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/users/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, tickets_read) => {
        #[rmcp::tool_router(router = flat_tickets_read)]
        impl $server {
            #[rmcp::tool(description = "GET /tickets — list tickets, newest first. Filters: status, priority, customer_id, assignee_id, q (title substring); paged with limit/offset.")]
            async fn tickets_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::TicketsList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/tickets", &a).await))
            }
            #[rmcp::tool(description = "GET /tickets/{id} — one ticket.")]
            async fn tickets_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/tickets/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, tickets_write) => {
        #[rmcp::tool_router(router = flat_tickets_write)]
        impl $server {
            #[rmcp::tool(description = "POST /tickets — create a ticket.")]
            async fn tickets_create(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::TicketsCreate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.post("/tickets", &a).await))
            }
            #[rmcp::tool(description = "PATCH /tickets/{id} — update fields of a ticket; fields left out keep their value, assignee_id or customer_id null clears it.")]
            async fn tickets_update(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::TicketsUpdate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.patch(&format!("/tickets/{}", a.id), &a.body()).await))
            }
        }
    };
    (@group $server:ty, notifications) => {
        #[rmcp::tool_router(router = flat_notifications)]
        impl $server {
            #[rmcp::tool(description = "GET /notifications — list notifications, newest first. Filters: user_id, ticket_id, read; paged with limit/offset.")]
            async fn notifications_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::NotificationsList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/notifications", &a).await))
            }
            #[rmcp::tool(description = "POST /notifications — send a notification to a user.")]
            async fn notifications_create(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::NotificationsCreate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.post("/notifications", &a).await))
            }
        }
    };
    (@group $server:ty, repos) => {
        #[rmcp::tool_router(router = flat_repos)]
        impl $server {
            #[rmcp::tool(description = "GET /repos — list repositories by id. Filters: owner, name (exact), q (name substring); paged with limit/offset.")]
            async fn repos_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ReposList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/repos", &a).await))
            }
            #[rmcp::tool(description = "GET /repos/{id} — one repository.")]
            async fn repos_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/repos/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, services) => {
        #[rmcp::tool_router(router = flat_services)]
        impl $server {
            #[rmcp::tool(description = "GET /services — list services by id. Filters: name (exact), team; paged with limit/offset.")]
            async fn services_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ServicesList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/services", &a).await))
            }
            #[rmcp::tool(description = "GET /services/{id} — one service.")]
            async fn services_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/services/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, change_requests_read) => {
        #[rmcp::tool_router(router = flat_change_requests_read)]
        impl $server {
            #[rmcp::tool(description = "GET /change_requests — list change requests by id. Filters: repo_id, status, author_id; paged with limit/offset.")]
            async fn change_requests_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ChangeRequestsList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/change_requests", &a).await))
            }
            #[rmcp::tool(description = "GET /change_requests/{id} — one change request.")]
            async fn change_requests_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/change_requests/{}", a.id), &()).await))
            }
            #[rmcp::tool(description = "GET /change_requests/{id}/comments — review comments of a change request, oldest first.")]
            async fn change_requests_comments_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ChangeRequestPage>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/change_requests/{}/comments", a.id), &a.query()).await))
            }
            #[rmcp::tool(description = "GET /change_requests/{id}/reviews — reviews of a change request, oldest first.")]
            async fn change_requests_reviews_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ChangeRequestPage>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/change_requests/{}/reviews", a.id), &a.query()).await))
            }
        }
    };
    (@group $server:ty, change_requests_write) => {
        #[rmcp::tool_router(router = flat_change_requests_write)]
        impl $server {
            #[rmcp::tool(description = "POST /change_requests/{id}/comments — add one standalone line comment.")]
            async fn change_requests_comments_create(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::CommentsCreate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.post(&format!("/change_requests/{}/comments", a.id), &$crate::flat::without_id(&a)).await))
            }
            #[rmcp::tool(description = "POST /change_requests/{id}/reviews — submit a review with its line comments in one request.")]
            async fn change_requests_reviews_create(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ReviewsCreate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.post(&format!("/change_requests/{}/reviews", a.id), &$crate::flat::without_id(&a)).await))
            }
        }
    };
    (@group $server:ty, runbooks) => {
        #[rmcp::tool_router(router = flat_runbooks)]
        impl $server {
            #[rmcp::tool(description = "GET /runbooks — list runbooks by id (full records). Filters: service, slug, q (title substring); paged with limit/offset.")]
            async fn runbooks_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::RunbooksList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/runbooks", &a).await))
            }
            #[rmcp::tool(description = "GET /runbooks/{id} — one runbook (full record).")]
            async fn runbooks_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/runbooks/{}", a.id), &()).await))
            }
        }
    };
    (@group $server:ty, deploys) => {
        #[rmcp::tool_router(router = flat_deploys)]
        impl $server {
            #[rmcp::tool(description = "GET /deploys — list deploys, newest first. Filters: service_id, environment, status; paged with limit/offset.")]
            async fn deploys_list(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::DeploysList>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get("/deploys", &a).await))
            }
            #[rmcp::tool(description = "GET /deploys/{id} — one deploy.")]
            async fn deploys_get(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::ById>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.get(&format!("/deploys/{}", a.id), &()).await))
            }
            #[rmcp::tool(description = "POST /deploys — deploy a version of a service to an environment.")]
            async fn deploys_create(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::DeploysCreate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.post("/deploys", &a).await))
            }
            #[rmcp::tool(description = "PATCH /deploys/{id} — change a deploy's status (only `rolled_back`).")]
            async fn deploys_update(&self, rmcp::handler::server::wrapper::Parameters(a): rmcp::handler::server::wrapper::Parameters<$crate::flat::DeploysUpdate>) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
                Ok($crate::backend_client::to_result(self.backend.patch(&format!("/deploys/{}", a.id), &$crate::flat::without_id(&a)).await))
            }
        }
    };
}
