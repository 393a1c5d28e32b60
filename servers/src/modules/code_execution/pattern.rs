//! `code_execution`: the pattern server of the code_execution module.
//!
//! One tool, `run_script`: the model writes a short JavaScript program against a typed API of
//! the backend (declared, TypeScript-style, in the tool's description) and gets back only what
//! the program prints. Filtering, counting, joining and looping over a computed set happen in
//! the program, so intermediate rows never pass through the model's context; the price is that
//! the model must write (output tokens) and debug a program. The program runs in the sandbox of
//! [`crate::sandbox`] (limits on wall time, memory, stack, API calls and printed bytes), and
//! every API call goes through the same typed arguments and the same backend endpoints as the
//! control's flat tools, so the two arms differ only in tools vs code (ADR 0013).

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::backend_client::{BackendClient, tool_error};
use crate::flat;
use crate::launch::BenchServer;
use crate::sandbox::{Limits, Outcome};

#[derive(Debug, Clone)]
pub struct CodeExecutionPattern {
    backend: BackendClient,
    tool_router: ToolRouter<Self>,
}

impl BenchServer for CodeExecutionPattern {
    fn new(backend: BackendClient) -> Self {
        Self { backend, tool_router: crate::schema::plain_tools(Self::tools()) }
    }
}

#[tool_handler(router = self.tool_router, name = "code_execution", version = "0.1.0")]
impl rmcp::ServerHandler for CodeExecutionPattern {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunScript {
    /// The JavaScript program. Call the API synchronously; print() what you need back.
    pub script: String,
}

/// The API's declarations, as the tool's description shows them: one line each, the types a
/// TypeScript reader expects.
pub const API: &str = r#"Runs a JavaScript program (ES2020, synchronous calls) against the API below and returns only what it prints with print(...) or console.log(...): filter, count and join inside the program and print just the result. Limits: 5 s, 32 MiB, 100 API calls, 16 KiB printed; no modules, network, files or clock (Date.now() throws). An API error is thrown as an Error you can catch.

type Page<T> = { data: T[]; total: number; limit: number; offset: number; next_offset: number | null }; // limit 1–200 (default 50); next page: offset = next_offset
type Status = "open" | "in_progress" | "resolved" | "closed"; type Priority = "low" | "medium" | "high" | "urgent";
type Customer = { id: number; name: string; tier: "free" | "standard" | "enterprise"; region: string; contact_email: string; created_at: string };
type User = { id: number; name: string; email: string; team: string; on_call: boolean };
type Ticket = { id: number; title: string; description: string; status: Status; priority: Priority; customer_id: number | null; assignee_id: number | null; version: number; created_at: string; updated_at: string };
type Notification = { id: number; user_id: number; ticket_id: number | null; message: string; read: boolean; created_at: string };
declare const customers: {
  list(f?: { name?: string /* exact, case-insensitive */; q?: string /* name substring */; tier?: string; region?: string; limit?: number; offset?: number }): Page<Customer>;
  get(id: number): Customer };
declare const users: {
  list(f?: { team?: string; on_call?: boolean; q?: string /* name substring */; limit?: number; offset?: number }): Page<User>;
  get(id: number): User };
declare const tickets: {
  list(f?: { status?: Status; priority?: Priority; customer_id?: number; assignee_id?: number; q?: string /* title substring */; limit?: number; offset?: number }): Page<Ticket>; // newest first
  get(id: number): Ticket;
  create(t: { title: string; description?: string; priority?: Priority; status?: Status; customer_id?: number; assignee_id?: number }): Ticket;
  update(id: number, fields: { title?: string; description?: string; status?: Status; priority?: Priority; customer_id?: number | null; assignee_id?: number | null }): Ticket }; // fields left out keep their value; null clears
declare const notifications: {
  list(f?: { user_id?: number; ticket_id?: number; read?: boolean; limit?: number; offset?: number }): Page<Notification>; // newest first
  create(n: { user_id: number; ticket_id?: number; message: string }): Notification };"#;

/// Every function of the API, as a program calls it; [`CodeExecutionPattern::host`] serves each
/// (the capability-parity test checks that each one is declared and reaches the backend).
pub const API_FUNCTIONS: &[&str] = &[
    "customers.list",
    "customers.get",
    "users.list",
    "users.get",
    "tickets.list",
    "tickets.get",
    "tickets.create",
    "tickets.update",
    "notifications.list",
    "notifications.create",
];

/// The API in the sandbox: each function sends its operation's name and arguments to the host.
const PRELUDE: &str = r#"(function () {
  const host = __host;
  const call = (op, args) => JSON.parse(host(op, JSON.stringify(args === undefined ? null : args)));
  globalThis.customers = Object.freeze({ list: (f) => call("customers.list", f), get: (id) => call("customers.get", { id }) });
  globalThis.users = Object.freeze({ list: (f) => call("users.list", f), get: (id) => call("users.get", { id }) });
  globalThis.tickets = Object.freeze({
    list: (f) => call("tickets.list", f),
    get: (id) => call("tickets.get", { id }),
    create: (t) => call("tickets.create", t),
    update: (id, fields) => call("tickets.update", Object.assign({}, fields, { id })),
  });
  globalThis.notifications = Object.freeze({ list: (f) => call("notifications.list", f), create: (n) => call("notifications.create", n) });
})();"#;

/// The operation's arguments, typed as the control's tool takes them: a wrong field or type is
/// the same named error in both arms.
fn typed<T: DeserializeOwned>(op: &str, args: Value) -> Result<T, String> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args };
    serde_json::from_value(args).map_err(|e| format!("{op}: the arguments could not be used: {e}"))
}

impl CodeExecutionPattern {
    /// Serves one API call of a program, on the sandbox's thread (blocking on the runtime).
    fn host(&self, handle: &tokio::runtime::Handle, op: &str, args: Value) -> Result<Value, String> {
        let backend = &self.backend;
        let result = match op {
            "customers.list" => handle.block_on(backend.get("/customers", &typed::<flat::CustomersList>(op, args)?)),
            "customers.get" => handle.block_on(backend.get(&format!("/customers/{}", typed::<flat::ById>(op, args)?.id), &())),
            "users.list" => handle.block_on(backend.get("/users", &typed::<flat::UsersList>(op, args)?)),
            "users.get" => handle.block_on(backend.get(&format!("/users/{}", typed::<flat::ById>(op, args)?.id), &())),
            "tickets.list" => handle.block_on(backend.get("/tickets", &typed::<flat::TicketsList>(op, args)?)),
            "tickets.get" => handle.block_on(backend.get(&format!("/tickets/{}", typed::<flat::ById>(op, args)?.id), &())),
            "tickets.create" => handle.block_on(backend.post("/tickets", &typed::<flat::TicketsCreate>(op, args)?)),
            "tickets.update" => {
                let a = typed::<flat::TicketsUpdate>(op, args)?;
                handle.block_on(backend.patch(&format!("/tickets/{}", a.id), &a.body()))
            }
            "notifications.list" => handle.block_on(backend.get("/notifications", &typed::<flat::NotificationsList>(op, args)?)),
            "notifications.create" => handle.block_on(backend.post("/notifications", &typed::<flat::NotificationsCreate>(op, args)?)),
            other => return Err(format!("{other} is not an API function")),
        };
        result.map_err(|e| format!("{op}: {e}"))
    }
}

/// What the model reads back: the printed text, or the error and what was printed before it.
fn answer(outcome: Outcome) -> CallToolResult {
    match outcome.error {
        None if outcome.printed.is_empty() => {
            CallToolResult::success(vec![rmcp::model::ContentBlock::text("The program ran and printed nothing: print() the values you need.")])
        }
        None => CallToolResult::success(vec![rmcp::model::ContentBlock::text(outcome.printed)]),
        Some(e) if outcome.printed.is_empty() => tool_error(e.message),
        Some(e) => tool_error(format!("{}\nPrinted before it stopped:\n{}", e.message, outcome.printed)),
    }
}

#[tool_router(router = tools)]
impl CodeExecutionPattern {
    #[tool(description = API)]
    async fn run_script(&self, Parameters(a): Parameters<RunScript>) -> Result<CallToolResult, ErrorData> {
        let server = self.clone();
        let handle = tokio::runtime::Handle::current();
        let ran =
            tokio::task::spawn_blocking(move || crate::sandbox::run(PRELUDE, &a.script, &Limits::default(), &mut |op, args| server.host(&handle, op, args)))
                .await;
        Ok(match ran {
            Ok(outcome) => answer(outcome),
            Err(e) => tool_error(format!("the program could not be run: {e}")),
        })
    }
}
