//! `orchestrator`: composite tools that run the create → attach → assign → notify sequence.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::backend_client::{BackendClient, CallError, json_result, tool_error};
use crate::launch::BenchServer;

#[derive(Debug, Clone)]
pub struct Orchestrator {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

crate::flat_tools!(Orchestrator: customers, users, tickets_read);

impl BenchServer for Orchestrator {
    fn new(backend: BackendClient) -> Self {
        let tool_router = crate::schema::plain_tools(Self::flat_customers() + Self::flat_users() + Self::flat_tickets_read() + Self::composite());
        Self { backend, tool_router }
    }
}

#[tool_handler(router = self.tool_router, name = "orchestrator", version = "0.1.0")]
impl rmcp::ServerHandler for Orchestrator {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAssignedTicket {
    /// 1–200 characters.
    pub title: String,
    /// Up to 4000 characters.
    #[serde(default)]
    pub description: Option<String>,
    /// `low`, `medium` (default), `high` or `urgent`.
    #[serde(default)]
    pub priority: Option<String>,
    /// The customer the ticket is for.
    pub customer_id: i64,
    /// The user who will work on it; they are notified.
    pub assignee_id: i64,
    /// Notification text; a default naming the ticket is sent when omitted.
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReassignTicket {
    pub ticket_id: i64,
    /// The new assignee; they are notified.
    pub assignee_id: i64,
    /// Notification text; a default naming the ticket is sent when omitted.
    #[serde(default)]
    pub message: Option<String>,
}

/// Which step of the sequence failed, for a message the model can act on.
fn step_failed(step: &str, e: &CallError) -> String {
    format!("{step} failed: {e}")
}

#[tool_router(router = composite)]
impl Orchestrator {
    #[tool(description = "Create a ticket for a customer, assign it and notify the assignee, in one call. \
                          Runs create → attach customer → assign → notify; if any step fails, the new ticket \
                          is removed again and nothing is left half-done. Returns the ticket and the notification.")]
    async fn create_assigned_ticket(&self, Parameters(a): Parameters<CreateAssignedTicket>) -> Result<CallToolResult, ErrorData> {
        // Check both references first: most failures never create anything.
        if let Err(e) = self.backend.get(&format!("/customers/{}", a.customer_id), &()).await {
            return Ok(tool_error(step_failed(&format!("looking up customer {}", a.customer_id), &e)));
        }
        if let Err(e) = self.backend.get(&format!("/users/{}", a.assignee_id), &()).await {
            return Ok(tool_error(step_failed(&format!("looking up user {}", a.assignee_id), &e)));
        }
        let mut body = json!({ "title": a.title });
        if let Some(d) = &a.description {
            body["description"] = json!(d);
        }
        if let Some(p) = &a.priority {
            body["priority"] = json!(p);
        }
        let ticket = match self.backend.post("/tickets", &body).await {
            Ok(t) => t,
            Err(e) => return Ok(tool_error(step_failed("creating the ticket", &e))),
        };
        let id = ticket["id"].as_i64().unwrap_or_default();
        match self.finish_sequence(id, a.customer_id, a.assignee_id, a.message.as_deref(), &a.title).await {
            Ok((ticket, notification)) => Ok(json_result(&json!({ "ticket": ticket, "notification": notification }))),
            Err(message) => {
                let undo = match self.backend.delete(&format!("/tickets/{id}")).await {
                    Ok(_) => format!("ticket {id} was removed again; nothing was changed"),
                    Err(e) => format!("removing ticket {id} also failed ({e}); it may need cleaning up"),
                };
                Ok(tool_error(format!("{message}; {undo}")))
            }
        }
    }

    #[tool(description = "Reassign a ticket to another user and notify them, in one call.")]
    async fn reassign_ticket(&self, Parameters(a): Parameters<ReassignTicket>) -> Result<CallToolResult, ErrorData> {
        let ticket = match self.backend.get(&format!("/tickets/{}", a.ticket_id), &()).await {
            Ok(t) => t,
            Err(e) => return Ok(tool_error(step_failed(&format!("looking up ticket {}", a.ticket_id), &e))),
        };
        if let Err(e) = self.backend.get(&format!("/users/{}", a.assignee_id), &()).await {
            return Ok(tool_error(step_failed(&format!("looking up user {}", a.assignee_id), &e)));
        }
        let previous = ticket["assignee_id"].clone();
        let title = ticket["title"].as_str().unwrap_or_default().to_owned();
        // Already theirs: nothing to write (a write would bump the ticket's version and time for
        // no change), only the notification.
        let unchanged = previous.as_i64() == Some(a.assignee_id);
        let updated = if unchanged {
            ticket
        } else {
            match self.backend.patch(&format!("/tickets/{}", a.ticket_id), &json!({ "assignee_id": a.assignee_id })).await {
                Ok(t) => t,
                Err(e) => return Ok(tool_error(step_failed("assigning", &e))),
            }
        };
        match self.notify(a.assignee_id, a.ticket_id, a.message.as_deref(), &title).await {
            Ok(notification) => Ok(json_result(&json!({ "ticket": updated, "notification": notification }))),
            Err(e) if unchanged => Ok(tool_error(format!("{}; the ticket was not changed", step_failed("notifying", &e)))),
            Err(e) => {
                // Put the old assignee back so the ticket is not reassigned silently.
                let undo = self.backend.patch(&format!("/tickets/{}", a.ticket_id), &json!({ "assignee_id": previous })).await;
                let undo = if undo.is_ok() { "the previous assignee was restored" } else { "restoring the previous assignee also failed" };
                Ok(tool_error(format!("{}; {undo}", step_failed("notifying", &e))))
            }
        }
    }
}

impl Orchestrator {
    /// Attach, assign and notify for a freshly created ticket; `Err` names the failed step.
    async fn finish_sequence(&self, id: i64, customer_id: i64, assignee_id: i64, message: Option<&str>, title: &str) -> Result<(Value, Value), String> {
        let path = format!("/tickets/{id}");
        self.backend.patch(&path, &json!({ "customer_id": customer_id })).await.map_err(|e| step_failed("attaching the customer", &e))?;
        let ticket = self.backend.patch(&path, &json!({ "assignee_id": assignee_id })).await.map_err(|e| step_failed("assigning", &e))?;
        let notification = self.notify(assignee_id, id, message, title).await.map_err(|e| step_failed("notifying the assignee", &e))?;
        Ok((ticket, notification))
    }

    async fn notify(&self, user_id: i64, ticket_id: i64, message: Option<&str>, title: &str) -> Result<Value, CallError> {
        let text = message.map(str::to_owned).unwrap_or_else(|| format!("You have been assigned ticket #{ticket_id}: {title}"));
        self.backend.post("/notifications", &json!({ "user_id": user_id, "ticket_id": ticket_id, "message": text })).await
    }
}
