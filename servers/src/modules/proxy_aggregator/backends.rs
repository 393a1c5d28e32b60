//! The three backends the aggregator fronts. Each holds its own client and declares its
//! operations (name, one-line description, argument struct); the argument struct is both the
//! parser of a call and the source of the schema `describe_backend` shows.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::backend_client::BackendClient;
use crate::flat::{ById, ChangeRequestPage, ChangeRequestsList, DeploysCreate, DeploysList, ReposList, RunbooksList, ServicesList};

/// An operation's answer: the backend's JSON, or a message the model can act on.
pub type Outcome = Result<Value, String>;

/// One operation a backend offers.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    pub name: &'static str,
    pub description: &'static str,
    schema: fn() -> Result<Arc<JsonObject>, String>,
}

impl Operation {
    const fn of<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Self {
        Self { name, description, schema: schema_for_input::<T> }
    }

    /// The JSON schema of the operation's arguments, generated and made plain exactly as for a
    /// tool's input ([`crate::schema`]).
    pub fn parameters(&self) -> Value {
        match (self.schema)() {
            Ok(schema) => {
                let mut schema = (*schema).clone();
                crate::schema::plain_optionals(&mut schema);
                Value::Object(schema)
            }
            Err(e) => json!({ "error": e }),
        }
    }
}

/// What `list_backends` and `describe_backend` say about a backend.
#[derive(Debug)]
pub struct BackendInfo {
    pub name: &'static str,
    pub purpose: &'static str,
    pub operations: &'static [Operation],
}

impl BackendInfo {
    pub fn operation(&self, name: &str) -> Option<&'static Operation> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// The error for an operation this backend does not have, naming the ones it has.
    pub fn unknown_operation(&self, name: &str) -> String {
        let names: Vec<_> = self.operations.iter().map(|o| o.name).collect();
        format!("backend `{}` has no operation `{name}`; its operations: {}", self.name, names.join(", "))
    }
}

/// Every backend, in the order `list_backends` shows them.
pub const BACKENDS: &[&BackendInfo] = &[&Repos::INFO, &Runbooks::INFO, &Deploys::INFO];

/// The backend called `name` (case and surrounding spaces ignored).
pub fn backend_info(name: &str) -> Option<&'static BackendInfo> {
    let name = name.trim().to_ascii_lowercase();
    BACKENDS.iter().copied().find(|b| b.name == name)
}

/// The error for a backend that does not exist, naming the ones that do.
pub fn unknown_backend(name: &str) -> String {
    let names: Vec<_> = BACKENDS.iter().map(|b| b.name).collect();
    format!("unknown backend `{name}`; backends: {}", names.join(", "))
}

/// Parses an operation's arguments. serde names a missing or unknown field itself; for a value
/// of the wrong type it does not, so the field is found by parsing each argument on its own.
fn parse<T: DeserializeOwned>(backend: &str, operation: &str, args: &Map<String, Value>) -> Result<T, String> {
    let fail = |detail: String| format!("invalid arguments for {backend}.{operation}: {detail} (see describe_backend(\"{backend}\"))");
    let err = match serde_json::from_value::<T>(Value::Object(args.clone())) {
        Ok(v) => return Ok(v),
        Err(e) => readable(e),
    };
    if err.contains("field `") {
        return Err(fail(err));
    }
    for (key, value) in args {
        let alone = Map::from_iter([(key.clone(), value.clone())]);
        if let Err(e) = serde_json::from_value::<T>(Value::Object(alone)) {
            let e = readable(e);
            if !e.starts_with("missing field") {
                return Err(fail(format!("field `{key}`: {e}")));
            }
        }
    }
    Err(fail(err))
}

/// serde's message, with the one that names a Rust type put in the caller's terms.
fn readable(e: serde_json::Error) -> String {
    let e = e.to_string();
    if e.contains("untagged enum ServiceRef") { "expected a service name or numeric id".to_owned() } else { e }
}

/// The rows of a backend page (`{data, total, …}`).
fn rows(page: &Value) -> Vec<Value> {
    page["data"].as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// repos

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindRepo {
    /// Exact repository name, e.g. `payments-api`.
    pub name: String,
    /// Owner; required when several owners have a repository of that name.
    #[serde(default)]
    pub owner: Option<String>,
}

/// Repositories and their change requests.
#[derive(Debug, Clone)]
pub struct Repos {
    client: BackendClient,
}

impl Repos {
    pub const INFO: BackendInfo = BackendInfo {
        name: "repos",
        purpose: "Source repositories and their change requests (with review comments and reviews).",
        operations: &[
            Operation::of::<FindRepo>("find_repo", "A repository by exact name (and owner). Fails, listing the candidates, if the name is ambiguous."),
            Operation::of::<ById>("get_repo", "One repository by id."),
            Operation::of::<ReposList>("list_repos", "Repositories by id. Filters: owner, name (exact), q (name substring); paged with limit/offset."),
            Operation::of::<ChangeRequestsList>("list_change_requests", "Change requests by id. Filters: repo_id, status, author_id; paged with limit/offset."),
            Operation::of::<ById>("get_change_request", "One change request by id."),
            Operation::of::<ChangeRequestPage>("list_comments", "Review comments of a change request, oldest first."),
            Operation::of::<ChangeRequestPage>("list_reviews", "Reviews of a change request, oldest first."),
        ],
    };

    pub fn new(client: BackendClient) -> Self {
        Self { client }
    }

    pub async fn call(&self, op: &str, args: &Map<String, Value>) -> Outcome {
        let name = Self::INFO.name;
        let c = &self.client;
        let outcome = match op {
            "find_repo" => return self.find_repo(parse(name, op, args)?).await,
            "get_repo" => c.get(&format!("/repos/{}", parse::<ById>(name, op, args)?.id), &()).await,
            "list_repos" => c.get("/repos", &parse::<ReposList>(name, op, args)?).await,
            "list_change_requests" => c.get("/change_requests", &parse::<ChangeRequestsList>(name, op, args)?).await,
            "get_change_request" => c.get(&format!("/change_requests/{}", parse::<ById>(name, op, args)?.id), &()).await,
            "list_comments" | "list_reviews" => {
                let a: ChangeRequestPage = parse(name, op, args)?;
                let sub = if op == "list_comments" { "comments" } else { "reviews" };
                c.get(&format!("/change_requests/{}/{sub}", a.id), &a.query()).await
            }
            _ => return Err(Self::INFO.unknown_operation(op)),
        };
        outcome.map_err(|e| e.to_string())
    }

    /// Exactly one repository, or an error naming every candidate: never a guess.
    async fn find_repo(&self, a: FindRepo) -> Outcome {
        let query = ReposList { name: Some(a.name.clone()), owner: a.owner.clone(), limit: Some(200), ..Default::default() };
        let found = rows(&self.client.get("/repos", &query).await.map_err(|e| e.to_string())?);
        let whose = a.owner.as_deref().map(|o| format!(" owned by `{o}`")).unwrap_or_default();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => {
                let like = ReposList { q: Some(a.name.clone()), limit: Some(5), ..Default::default() };
                let similar: Vec<String> = match self.client.get("/repos", &like).await {
                    Ok(page) => rows(&page)
                        .iter()
                        .map(|r| format!("{}/{} (id {})", r["owner"].as_str().unwrap_or("?"), r["name"].as_str().unwrap_or("?"), r["id"]))
                        .collect(),
                    Err(_) => Vec::new(),
                };
                let hint = if similar.is_empty() { String::new() } else { format!("; names containing it: {}", similar.join(", ")) };
                Err(format!("no repository named `{}`{whose}{hint}", a.name))
            }
            many => {
                let listed: Vec<String> = many
                    .iter()
                    .map(|r| {
                        format!(
                            "{}/{} (id {}): {}",
                            r["owner"].as_str().unwrap_or("?"),
                            r["name"].as_str().unwrap_or("?"),
                            r["id"],
                            r["description"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                Err(format!("`{}` is ambiguous: {} repositories have that name; pass `owner`. {}", a.name, many.len(), listed.join("; ")))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// runbooks

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRunbook {
    /// Numeric id of the runbook; give this or `slug`.
    #[serde(default)]
    pub id: Option<i64>,
    /// Slug of the runbook, e.g. `checkout-high-latency`; give this or `id`.
    #[serde(default)]
    pub slug: Option<String>,
}

/// Operational runbooks.
#[derive(Debug, Clone)]
pub struct Runbooks {
    client: BackendClient,
}

impl Runbooks {
    pub const INFO: BackendInfo = BackendInfo {
        name: "runbooks",
        purpose: "Operational runbooks: procedures for a service's incidents.",
        operations: &[
            Operation::of::<RunbooksList>(
                "find_runbooks",
                "Runbooks by id (full records). Filters: service, slug, q (title substring); paged with limit/offset.",
            ),
            Operation::of::<GetRunbook>("get_runbook", "One runbook (full record) by id or slug."),
        ],
    };

    pub fn new(client: BackendClient) -> Self {
        Self { client }
    }

    pub async fn call(&self, op: &str, args: &Map<String, Value>) -> Outcome {
        let name = Self::INFO.name;
        match op {
            "find_runbooks" => self.client.get("/runbooks", &parse::<RunbooksList>(name, op, args)?).await.map_err(|e| e.to_string()),
            "get_runbook" => self.get_runbook(parse(name, op, args)?).await,
            _ => Err(Self::INFO.unknown_operation(op)),
        }
    }

    async fn get_runbook(&self, a: GetRunbook) -> Outcome {
        match (a.id, a.slug) {
            (Some(id), None) => self.client.get(&format!("/runbooks/{id}"), &()).await.map_err(|e| e.to_string()),
            (None, Some(slug)) => {
                let query = RunbooksList { slug: Some(slug.clone()), ..Default::default() };
                let page = self.client.get("/runbooks", &query).await.map_err(|e| e.to_string())?;
                rows(&page).into_iter().next().ok_or_else(|| format!("no runbook with slug `{slug}`"))
            }
            _ => Err("invalid arguments for runbooks.get_runbook: give exactly one of `id` and `slug`".to_owned()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// deploys

/// A service by name or by numeric id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ServiceRef {
    Id(i64),
    Name(String),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindService {
    /// Exact service name, e.g. `checkout`.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDeploys {
    /// Service name or id; all services when omitted.
    #[serde(default)]
    pub service: Option<ServiceRef>,
    /// `staging` or `production`.
    #[serde(default)]
    pub environment: Option<String>,
    /// `pending`, `succeeded`, `failed` or `rolled_back`.
    #[serde(default)]
    pub status: Option<String>,
    /// Page size, 1–200 (default 50).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Rows to skip (default 0).
    #[serde(default)]
    pub offset: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDeploy {
    /// Service name or id.
    pub service: ServiceRef,
    /// Version to deploy, e.g. `1.4.2`.
    pub version: String,
    /// `staging` or `production`.
    pub environment: String,
    /// Id of the user deploying.
    #[serde(default)]
    pub deployed_by: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackDeploy {
    /// Id of a succeeded deploy.
    pub deploy_id: i64,
}

/// Services and their deploys.
#[derive(Debug, Clone)]
pub struct Deploys {
    client: BackendClient,
}

impl Deploys {
    pub const INFO: BackendInfo = BackendInfo {
        name: "deploys",
        purpose: "Services and their deploys to staging and production: look up, deploy, roll back.",
        operations: &[
            Operation::of::<FindService>("find_service", "A service by exact name."),
            Operation::of::<ById>("get_service", "One service by id."),
            Operation::of::<ServicesList>("list_services", "Services by id. Filters: name (exact), team; paged with limit/offset."),
            Operation::of::<ListDeploys>("list_deploys", "Deploys, newest first. Filters: service, environment, status; paged with limit/offset."),
            Operation::of::<ById>("get_deploy", "One deploy by id."),
            Operation::of::<CreateDeploy>("create_deploy", "Deploy a version of a service to an environment. Returns the new deploy."),
            Operation::of::<RollbackDeploy>("rollback_deploy", "Roll back a succeeded deploy. Returns the updated deploy."),
        ],
    };

    pub fn new(client: BackendClient) -> Self {
        Self { client }
    }

    pub async fn call(&self, op: &str, args: &Map<String, Value>) -> Outcome {
        let name = Self::INFO.name;
        let c = &self.client;
        let outcome = match op {
            "find_service" => return self.find_service(&parse::<FindService>(name, op, args)?.name).await,
            "get_service" => c.get(&format!("/services/{}", parse::<ById>(name, op, args)?.id), &()).await,
            "list_services" => c.get("/services", &parse::<ServicesList>(name, op, args)?).await,
            "list_deploys" => {
                let a: ListDeploys = parse(name, op, args)?;
                let service_id = match &a.service {
                    Some(s) => Some(self.service_id(s).await?),
                    None => None,
                };
                let query = DeploysList { service_id, environment: a.environment, status: a.status, limit: a.limit, offset: a.offset };
                c.get("/deploys", &query).await
            }
            "get_deploy" => c.get(&format!("/deploys/{}", parse::<ById>(name, op, args)?.id), &()).await,
            "create_deploy" => {
                let a: CreateDeploy = parse(name, op, args)?;
                // Resolve first: an unknown service is an error before anything is written.
                let service_id = self.service_id(&a.service).await?;
                let body = DeploysCreate { service_id, version: a.version, environment: a.environment, deployed_by: a.deployed_by };
                c.post("/deploys", &body).await
            }
            "rollback_deploy" => {
                let id = parse::<RollbackDeploy>(name, op, args)?.deploy_id;
                c.patch(&format!("/deploys/{id}"), &json!({ "status": "rolled_back" })).await
            }
            _ => return Err(Self::INFO.unknown_operation(op)),
        };
        outcome.map_err(|e| e.to_string())
    }

    /// The service called `name`, or an error listing the services there are.
    async fn find_service(&self, name: &str) -> Outcome {
        let query = ServicesList { name: Some(name.to_owned()), ..Default::default() };
        let found = rows(&self.client.get("/services", &query).await.map_err(|e| e.to_string())?);
        if let [one] = found.as_slice() {
            return Ok(one.clone());
        }
        let all = ServicesList { limit: Some(200), ..Default::default() };
        let names: Vec<String> = match self.client.get("/services", &all).await {
            Ok(page) => rows(&page).iter().filter_map(|s| s["name"].as_str().map(str::to_owned)).collect(),
            Err(_) => Vec::new(),
        };
        Err(format!("no service named `{name}`; services: {}", names.join(", ")))
    }

    /// The id of an existing service; a numeric string counts as an id.
    async fn service_id(&self, service: &ServiceRef) -> Result<i64, String> {
        let id = match service {
            ServiceRef::Id(id) => *id,
            ServiceRef::Name(n) => match n.trim().parse::<i64>() {
                Ok(id) => id,
                Err(_) => return self.find_service(n.trim()).await?["id"].as_i64().ok_or_else(|| format!("service `{n}` has no id")),
            },
        };
        self.client.get(&format!("/services/{id}"), &()).await.map_err(|e| e.to_string())?;
        Ok(id)
    }
}
