//! What a model is offered for a server, as a client shows it: each tool as an OpenAI-style
//! function definition, and — when the server has resources — two generic functions to list and
//! read them, whose description also gives the address forms (resource templates) the server
//! advertises. The agent offers exactly this, the oracle's floors count its bytes, and G7's
//! discoverability check reads it as what a model can know before its first call: one builder,
//! so the three never drift apart.

use rmcp::RoleClient;
use rmcp::model::{ResourceTemplate, Tool};
use rmcp::service::Peer;
use serde_json::{Value, json};

pub const LIST_RESOURCES: &str = "list_resources";
pub const READ_RESOURCE: &str = "read_resource";

/// An MCP tool as an OpenAI `tools[]` entry; `$schema` is dropped (providers reject it).
pub fn function_definition(tool: &Tool) -> Value {
    let mut schema = Value::Object((*tool.input_schema).clone());
    if let Some(m) = schema.as_object_mut() {
        m.remove("$schema");
    }
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description.as_deref().unwrap_or(""),
            "parameters": schema,
        }
    })
}

/// The two generic resource functions; `templates` (the server's resource templates) are named in
/// the read function's description, so a model learns the address forms without a listing.
pub fn resource_functions(templates: &[ResourceTemplate]) -> [Value; 2] {
    let mut read = "Read one resource of the connected server by its URI.".to_owned();
    if !templates.is_empty() {
        let forms: Vec<String> = templates
            .iter()
            .map(|t| match t.description.as_deref().filter(|d| !d.is_empty()) {
                Some(d) => format!("{} ({d})", t.uri_template),
                None => t.uri_template.clone(),
            })
            .collect();
        read.push_str(&format!(" Besides the URIs the list gives, the server reads addresses of these forms, a {{name}} filled in: {}.", forms.join("; ")));
    }
    [
        json!({
            "type": "function",
            "function": {
                "name": LIST_RESOURCES,
                "description": "List the resources (documents) the connected server offers: URI, name, title, description.",
                "parameters": { "type": "object", "properties": {}, "additionalProperties": false }
            }
        }),
        json!({
            "type": "function",
            "function": {
                "name": READ_RESOURCE,
                "description": read,
                "parameters": {
                    "type": "object",
                    "properties": { "uri": { "type": "string", "description": "The resource URI." } },
                    "required": ["uri"],
                    "additionalProperties": false
                }
            }
        }),
    ]
}

/// What `tools` and the server's resources make: the function definitions, and whether the
/// resource functions are among them.
pub fn definitions(tools: &[Tool], resources: Option<&[ResourceTemplate]>) -> Vec<Value> {
    let mut out: Vec<Value> = tools.iter().map(function_definition).collect();
    if let Some(templates) = resources {
        out.extend(resource_functions(templates));
    }
    out
}

/// The definitions of the server a manifest describes, as [`definitions`] makes them from a
/// live listing: the same JSON per definition, its tools in the manifest's order (by name). What
/// `pipeline servers` measures a footprint from without a second listing.
pub fn definitions_of_manifest(manifest: &crate::ToolManifest) -> Vec<Value> {
    let tools: Vec<Tool> = manifest
        .tools
        .iter()
        .map(|t| {
            let schema = t.input_schema.as_object().cloned().unwrap_or_default();
            Tool::new(t.name.clone(), t.description.clone(), std::sync::Arc::new(schema))
        })
        .collect();
    let templates: Vec<ResourceTemplate> = manifest
        .resource_templates
        .iter()
        .map(|t| {
            let mut template = ResourceTemplate::new(t.uri_template.clone(), t.name.clone());
            template.description = Some(t.description.clone()).filter(|d| !d.is_empty());
            template
        })
        .collect();
    definitions(&tools, manifest.resources.then_some(templates.as_slice()))
}

/// Lists the server's tools, whether it has resources and its resource templates, and builds
/// what a model is offered; `Err` when the tools cannot be listed.
pub async fn of_server(peer: &Peer<RoleClient>) -> Result<(Vec<Tool>, Option<Vec<ResourceTemplate>>), rmcp::ServiceError> {
    let tools = peer.list_all_tools().await?;
    let resources = if crate::manifest::offers_resources(peer).await {
        // A server that fails to list its templates has none a model could learn.
        Some(peer.list_all_resource_templates().await.unwrap_or_default())
    } else {
        None
    };
    Ok((tools, resources))
}
