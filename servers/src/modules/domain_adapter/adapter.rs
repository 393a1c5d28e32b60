//! `domain_adapter`: tools that speak the support desk's language. Customers, people and
//! tickets are named the way a person names them (a name, a title, or `#id`) and resolved
//! server-side; results carry names next to ids.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::resolve;
use crate::backend_client::{BackendClient, json_result, tool_error};
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct DomainAdapter {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

impl BenchServer for DomainAdapter {
    fn new(backend: BackendClient) -> Self {
        Self { backend, tool_router: crate::schema::plain_tools(Self::domain()) }
    }
}

#[tool_handler(router = self.tool_router, name = "domain_adapter", version = "0.1.0")]
impl rmcp::ServerHandler for DomainAdapter {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerArg {
    /// Customer name or `#id`. Part of a name works if only one customer matches.
    pub customer: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonArg {
    /// Person's name or `#id`. Part of a name works if only one person matches.
    pub person: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketArg {
    /// Ticket title or `#id`. Titles repeat: if several tickets match, retry with the `#id`.
    pub ticket: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindTickets {
    /// Customer name or `#id`.
    #[serde(default)]
    pub customer: Option<String>,
    /// Assignee's name or `#id`.
    #[serde(default)]
    pub assignee: Option<String>,
    /// `open`, `in_progress`, `resolved` or `closed`.
    #[serde(default)]
    pub status: Option<String>,
    /// `low`, `medium`, `high` or `urgent`.
    #[serde(default)]
    pub priority: Option<String>,
    /// Case-insensitive substring of the title.
    #[serde(default)]
    pub title: Option<String>,
    /// Page size, 1–200 (default 50).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[serde(default)]
    pub offset: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenTicket {
    /// 1–200 characters.
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default)]
    pub description: Option<String>,
    /// `low`, `medium` (default), `high` or `urgent`.
    #[serde(default)]
    pub priority: Option<String>,
    /// Customer name or `#id`.
    #[serde(default)]
    pub customer: Option<String>,
    /// Assignee's name or `#id`.
    #[serde(default)]
    pub assignee: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTicket {
    /// Ticket title or `#id`. Titles repeat: if several tickets match, retry with the `#id`.
    pub ticket: String,
    /// `open`, `in_progress`, `resolved` or `closed`.
    #[serde(default)]
    pub status: Option<String>,
    /// `low`, `medium`, `high` or `urgent`.
    #[serde(default)]
    pub priority: Option<String>,
    /// New assignee: name or `#id`, or null to unassign.
    #[serde(default, deserialize_with = "crate::flat::nullable")]
    #[schemars(with = "Option<String>", extend("x-null-clears" = true))]
    pub assignee: Option<Option<String>>,
    /// New customer: name or `#id`, or null to detach the customer.
    #[serde(default, deserialize_with = "crate::flat::nullable")]
    #[schemars(with = "Option<String>", extend("x-null-clears" = true))]
    pub customer: Option<Option<String>>,
    #[serde(default)]
    pub new_title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// `Ok(v)` or return the resolver's message as a tool error.
macro_rules! resolved {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(message) => return Ok(tool_error(message)),
        }
    };
}

/// Resolves an optional reference to the record's id.
async fn optional_id<'a, F>(reference: Option<&'a str>, resolve: impl FnOnce(&'a str) -> F) -> Result<Option<i64>, String>
where
    F: Future<Output = resolve::Resolved>,
{
    match reference {
        Some(r) => Ok(resolve(r).await?["id"].as_i64()),
        None => Ok(None),
    }
}

#[tool_router(router = domain)]
impl DomainAdapter {
    #[tool(description = "One customer by name or #id, with how many of their tickets are in each status.")]
    async fn find_customer(&self, Parameters(a): Parameters<CustomerArg>) -> Result<CallToolResult, ErrorData> {
        let c = resolved!(resolve::customer(&self.backend, &a.customer).await);
        let counts = resolved!(resolve::counts_by_status(&self.backend, "customer_id", c["id"].as_i64().unwrap_or_default()).await);
        Ok(json_result(&json!({ "customer": c, "tickets_by_status": counts })))
    }

    #[tool(description = "One person (staff user) by name or #id, with how many tickets assigned to them are in each status.")]
    async fn find_person(&self, Parameters(a): Parameters<PersonArg>) -> Result<CallToolResult, ErrorData> {
        let p = resolved!(resolve::person(&self.backend, &a.person).await);
        let counts = resolved!(resolve::counts_by_status(&self.backend, "assignee_id", p["id"].as_i64().unwrap_or_default()).await);
        Ok(json_result(&json!({ "person": p, "assigned_tickets_by_status": counts })))
    }

    #[tool(description = "List tickets, newest first, with customer and assignee names. Filters: customer, assignee (names or #id), \
                          status, priority, title; paged with limit/offset.")]
    async fn find_tickets(&self, Parameters(a): Parameters<FindTickets>) -> Result<CallToolResult, ErrorData> {
        let b = &self.backend;
        let customer_id = resolved!(optional_id(a.customer.as_deref(), |r| resolve::customer(b, r)).await);
        let assignee_id = resolved!(optional_id(a.assignee.as_deref(), |r| resolve::person(b, r)).await);
        let query = json!({
            "customer_id": customer_id, "assignee_id": assignee_id, "status": a.status, "priority": a.priority,
            "q": a.title, "limit": a.limit, "offset": a.offset,
        });
        let mut page = match b.get("/tickets", &without_nulls(query)).await {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(e.to_string())),
        };
        let rows = page["data"].as_array().cloned().unwrap_or_default();
        page["data"] = Value::Array(resolve::with_names(b, rows).await);
        Ok(json_result(&page))
    }

    #[tool(description = "One ticket by title or #id, with its customer and assignee names.")]
    async fn ticket_details(&self, Parameters(a): Parameters<TicketArg>) -> Result<CallToolResult, ErrorData> {
        let t = resolved!(resolve::ticket(&self.backend, &a.ticket).await);
        Ok(json_result(&resolve::with_names_one(&self.backend, t).await))
    }

    #[tool(description = "Create a ticket, optionally for a customer and assigned to a person (names or #id). Returns it with names.")]
    async fn open_ticket(&self, Parameters(a): Parameters<OpenTicket>) -> Result<CallToolResult, ErrorData> {
        let b = &self.backend;
        let customer_id = resolved!(optional_id(a.customer.as_deref(), |r| resolve::customer(b, r)).await);
        let assignee_id = resolved!(optional_id(a.assignee.as_deref(), |r| resolve::person(b, r)).await);
        let body = json!({
            "title": a.title, "description": a.description, "priority": a.priority,
            "customer_id": customer_id, "assignee_id": assignee_id,
        });
        match b.post("/tickets", &without_nulls(body)).await {
            Ok(t) => Ok(json_result(&resolve::with_names_one(b, t).await)),
            Err(e) => Ok(tool_error(e.to_string())),
        }
    }

    #[tool(description = "Change a ticket found by title or #id: status, priority, assignee, customer (names or #id; null \
                          unassigns or detaches), title or description. Fields left out keep their value. Returns it with names.")]
    async fn update_ticket(&self, Parameters(a): Parameters<UpdateTicket>) -> Result<CallToolResult, ErrorData> {
        let b = &self.backend;
        let nothing =
            a.status.is_none() && a.priority.is_none() && a.assignee.is_none() && a.customer.is_none() && a.new_title.is_none() && a.description.is_none();
        if nothing {
            return Ok(tool_error("Name at least one field to change."));
        }
        let t = resolved!(resolve::ticket(b, &a.ticket).await);
        let mut body = without_nulls(json!({
            "status": a.status, "priority": a.priority, "title": a.new_title, "description": a.description,
        }));
        // A reference resolves to an id; an explicit null goes to the backend as null (clear).
        if let Some(customer) = &a.customer {
            body["customer_id"] = json!(resolved!(optional_id(customer.as_deref(), |r| resolve::customer(b, r)).await));
        }
        if let Some(assignee) = &a.assignee {
            body["assignee_id"] = json!(resolved!(optional_id(assignee.as_deref(), |r| resolve::person(b, r)).await));
        }
        match b.patch(&format!("/tickets/{}", t["id"]), &body).await {
            Ok(t) => Ok(json_result(&resolve::with_names_one(b, t).await)),
            Err(e) => Ok(tool_error(e.to_string())),
        }
    }
}

/// The object without its null fields (the backend reads an explicit null as "clear it").
fn without_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        v => v,
    }
}
