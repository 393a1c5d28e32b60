//! The tool manifest: everything a server offers a model — tools (name, description, input
//! schema) and resource templates — as canonical JSON, and its sha256. Two arms differ exactly
//! where their manifests differ; the hash goes into every session record.
//!
//! It is computed by asking the running server over MCP (in-process), so it is what a client
//! really sees, not what the code meant to declare. Resource *lists* are excluded: they are data
//! read from the backend, not part of the design.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::launch::ArmSettings;
use crate::registry::ServerEntry;

/// A backend URL nothing answers (the discard port): for work that never calls the backend.
pub const NO_BACKEND: &str = "http://127.0.0.1:9";

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolManifest {
    pub server: String,
    pub tools: Vec<ManifestTool>,
    pub resource_templates: Vec<ManifestTemplate>,
    /// Whether the server offers MCP resources: it declares the capability and has something to
    /// list (a template, or a resource) — see [`offers_resources`].
    pub resources: bool,
    /// What the design offers beyond listings (e.g. operations behind a discovery tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ManifestTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ManifestTemplate {
    pub uri_template: String,
    pub name: String,
    pub description: String,
}

impl ToolManifest {
    /// Lists `entry`'s tools and resource templates through an MCP session (in-process for a
    /// built-in server, its own process for an external arm). Listing never calls the backend,
    /// so `backend_url` need not answer.
    pub async fn of(entry: &ServerEntry, backend_url: &str) -> anyhow::Result<Self> {
        Self::of_with(entry, backend_url, ArmSettings::default()).await
    }

    /// [`Self::of`] for a server started with the run's `settings` (a catalogue module lists
    /// the catalogue the run chose).
    pub async fn of_with(entry: &ServerEntry, backend_url: &str, settings: ArmSettings) -> anyhow::Result<Self> {
        let arm = crate::client::ArmClient::open_with(entry, backend_url, settings).await?;
        let manifest = Self::list_with(entry, &arm.client, settings).await;
        arm.close().await?;
        manifest
    }

    /// [`Self::of`] without a backend: listing never calls it, so the client points at the
    /// discard port, where nothing answers. The one place that relies on that.
    pub async fn offline(entry: &ServerEntry) -> anyhow::Result<Self> {
        Self::of(entry, NO_BACKEND).await
    }

    /// [`Self::offline`] with the run's settings.
    pub async fn offline_with(entry: &ServerEntry, settings: ArmSettings) -> anyhow::Result<Self> {
        Self::of_with(entry, NO_BACKEND, settings).await
    }

    /// Lists what the server behind `client` offers: the manifest as any client sees it.
    pub async fn list<H: rmcp::ClientHandler>(entry: &ServerEntry, client: &rmcp::service::RunningService<rmcp::RoleClient, H>) -> anyhow::Result<Self> {
        Self::list_with(entry, client, ArmSettings::default()).await
    }

    /// [`Self::list`] of a server started with `settings`.
    pub async fn list_with<H: rmcp::ClientHandler>(
        entry: &ServerEntry,
        client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
        settings: ArmSettings,
    ) -> anyhow::Result<Self> {
        let mut tools: Vec<ManifestTool> = client
            .list_all_tools()
            .await?
            .into_iter()
            .map(|t| ManifestTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let declared = client.peer_info().is_some_and(|i| i.capabilities.resources.is_some());
        let mut resource_templates = Vec::new();
        if declared {
            resource_templates = client
                .list_all_resource_templates()
                .await?
                .into_iter()
                .map(|t| ManifestTemplate {
                    uri_template: t.uri_template.clone(),
                    name: t.name.clone(),
                    description: t.description.clone().unwrap_or_default(),
                })
                .collect();
            resource_templates.sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
        }
        let resources = offers_resources(client).await;
        Ok(Self { server: entry.name.to_owned(), tools, resource_templates, resources, extra: entry.launcher().and_then(|l| l.manifest_extra(settings)) })
    }

    /// Whether `phrase` is in a description of the tool list or the resource templates — what a
    /// client sends a model with every request (not what a discovery tool answers when asked).
    pub fn lists(&self, phrase: &str) -> bool {
        self.tools.iter().any(|t| t.description.contains(phrase)) || self.resource_templates.iter().any(|t| t.description.contains(phrase))
    }

    /// Canonical JSON: object keys sorted at every depth, no insignificant whitespace.
    pub fn canonical_json(&self) -> String {
        canonical(&serde_json::to_value(self).expect("manifest serializes")).to_string()
    }

    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_json().as_bytes()))
    }

    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// `value` with every object's keys in sorted order (independent of serde_json's map features).
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, canonical(v))).collect();
            let mut out = serde_json::Map::new();
            for (k, v) in sorted {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Whether the server behind `client` has resources to offer: it declares the capability, and
/// lists a resource template or (first page) a resource. A server that declares the capability
/// with nothing behind it — generated servers always declare it — is offered no resource
/// functions: they would cost every turn their definitions for nothing. Templates are asked
/// first (listing them never needs the backend); a listing that fails counts as something to
/// offer, as the declared capability says.
pub async fn offers_resources(client: &rmcp::service::Peer<rmcp::RoleClient>) -> bool {
    if client.peer_info().is_none_or(|i| i.capabilities.resources.is_none()) {
        return false;
    }
    match client.list_resource_templates(None).await {
        Ok(t) if !t.resource_templates.is_empty() || t.next_cursor.is_some() => return true,
        Ok(_) => {}
        Err(_) => return true,
    }
    match client.list_resources(None).await {
        Ok(r) => !r.resources.is_empty() || r.next_cursor.is_some(),
        Err(_) => true,
    }
}
