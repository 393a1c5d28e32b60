//! `agent-conformance-client URL`: the agent's MCP client as the client under test of the MCP
//! project's official conformance suite (`conformance client --command agent-conformance-client`,
//! which appends the URL of its scenario's server; agent/tests/it/conformance.rs).
//!
//! It does what every session does, nothing specific to a scenario: connects over streamable HTTP
//! (`agent::mcp::connect`, speaking the revision in `MCPBENCH_PROTOCOL`, else the default), lists
//! what the server offers (`Toolbox::from_server`), calls each offered tool once through
//! `agent::mcp::execute` with its required arguments filled from its schema, and closes. It
//! prints one JSON line per call and exits non-zero when the session could not be had.

use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    agent::config::install_crypto_provider();
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let url = std::env::args().nth(1).ok_or_else(|| anyhow::anyhow!("usage: agent-conformance-client URL"))?;
    let protocol = match std::env::var("MCPBENCH_PROTOCOL") {
        Ok(p) => {
            serde_json::from_value(json!(p)).map_err(|_| anyhow::anyhow!("MCPBENCH_PROTOCOL={p}: not a revision the client speaks (2025-11-25, 2026-07-28)"))?
        }
        Err(_) => agent::mcp::Protocol::default(),
    };
    let (client, _process) = agent::mcp::connect(&agent::mcp::ServerConnection::Http { url, protocol }).await?;
    let toolbox = agent::mcp::Toolbox::from_server(&client).await?;
    for definition in &toolbox.definitions {
        let Some(name) = definition["function"]["name"].as_str() else { continue };
        let arguments = required_arguments(&definition["function"]["parameters"]);
        let result = agent::mcp::execute(&client, name, &arguments).await?;
        println!("{}", json!({ "tool": name, "arguments": arguments, "is_error": result.is_error, "text": result.text }));
    }
    client.cancel().await?;
    Ok(())
}

/// A value for each required property of `schema`, of its declared type (the first of a list);
/// an enum's first member, a default where the schema gives one.
fn required_arguments(schema: &Value) -> Value {
    let mut arguments = Map::new();
    for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let property = &schema["properties"][name];
        let value = if let Some(default) = property.get("default") {
            default.clone()
        } else if let Some(first) = property["enum"].as_array().and_then(|e| e.first()) {
            first.clone()
        } else {
            let kind = match &property["type"] {
                Value::Array(kinds) => kinds.iter().find_map(Value::as_str).unwrap_or("string"),
                kind => kind.as_str().unwrap_or("string"),
            };
            match kind {
                "number" | "integer" => json!(1),
                "boolean" => json!(true),
                "object" => required_arguments(property),
                "array" => json!([]),
                "null" => Value::Null,
                _ => json!("x"),
            }
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
