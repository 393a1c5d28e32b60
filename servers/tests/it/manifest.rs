//! Tool manifests are stable: the same bytes in-process, in another process over stdio, and
//! across runs; and every registered server starts and lists something.

use crate::common;

use servers::ToolManifest;
use servers::registry::servers;

#[tokio::test]
async fn manifests_are_stable_across_runs_and_processes() {
    // Listing never calls the backend, so nothing needs to listen here.
    let url = "http://127.0.0.1:9";
    for entry in servers() {
        let a = ToolManifest::of(entry, url).await.unwrap();
        let b = ToolManifest::of(entry, url).await.unwrap();
        assert_eq!(a.canonical_json(), b.canonical_json(), "{}: two in-process listings differ", entry.name);
        let child = common::connect(entry.name, url, common::Via::Stdio).await;
        let c = ToolManifest::list(entry, &child.client).await.unwrap();
        child.close().await;
        assert_eq!(a.sha256(), c.sha256(), "{}: in-process and child-process manifests differ", entry.name);
        assert!(!a.tools.is_empty() || a.resources, "{} offers nothing", entry.name);
        assert_eq!(a.sha256().len(), 64);
        // Canonical JSON has its keys sorted (checked at the top level).
        let json = a.canonical_json();
        let at = |k: &str| json.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} missing"));
        assert!(at("resource_templates") < at("resources") && at("resources") < at("server") && at("server") < at("tools"), "{json}");
    }
    // Designs that hide operations behind a discovery tool carry them in the manifest.
    let proxy = ToolManifest::of(servers::registry::find("proxy_aggregator").unwrap(), url).await.unwrap();
    assert!(proxy.canonical_json().contains("create_deploy"), "the proxy's operations are hashed");
    // Different servers have different manifests.
    let hashes: std::collections::HashSet<String> =
        futures_join(servers().map(|e| ToolManifest::of(e, url))).await.into_iter().map(|m| m.unwrap().sha256()).collect();
    assert_eq!(hashes.len(), servers().count());
}

async fn futures_join<F: std::future::Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut out = Vec::new();
    for f in fs {
        out.push(f.await);
    }
    out
}

#[tokio::test]
async fn no_server_offers_a_parameter_schema_that_admits_null() {
    // Clients that handle one type per parameter (the Inspector CLI, OpenAI-style functions)
    // cannot fill `["integer", "null"]`; see servers::schema.
    for entry in servers() {
        let m = ToolManifest::offline(entry).await.unwrap();
        for tool in &m.tools {
            assert!(!servers::schema::admits_null_anywhere(&tool.input_schema), "{}.{}: {}", entry.name, tool.name, tool.input_schema);
        }
        // Operations a discovery tool shows are parameter schemas too.
        if let Some(extra) = &m.extra {
            assert!(!servers::schema::admits_null_anywhere(extra), "{}: {extra}", entry.name);
        }
    }
    // The rewrite kept the parameters: an optional limit is still there, as a plain integer.
    let wrapper = ToolManifest::offline(servers::registry::find("wrapper").unwrap()).await.unwrap();
    let list = wrapper.tools.iter().find(|t| t.name == "tickets_list").unwrap();
    assert_eq!(list.input_schema["properties"]["limit"]["type"], "integer");
    assert!(list.input_schema.get("required").is_none_or(|r| !r.as_array().unwrap().iter().any(|n| n == "limit")));
}

#[tokio::test]
async fn a_manifest_gives_the_definitions_a_live_listing_gives() {
    // `pipeline servers` measures each server's footprint from its manifest: it must be what the
    // agent offers a model, definition for definition.
    let url = "http://127.0.0.1:9";
    for entry in servers::registry::builtin() {
        let manifest = ToolManifest::of(entry, url).await.unwrap();
        let arm = servers::client::ArmClient::open(entry, url).await.unwrap();
        let (tools, resources) = servers::offered::of_server(arm.client.peer()).await.unwrap();
        arm.close().await.unwrap();
        let live: std::collections::BTreeSet<String> = servers::offered::definitions(&tools, resources.as_deref()).iter().map(|d| d.to_string()).collect();
        let from_manifest: std::collections::BTreeSet<String> = servers::offered::definitions_of_manifest(&manifest).iter().map(|d| d.to_string()).collect();
        assert_eq!(live, from_manifest, "{}", entry.name);
        assert_eq!(live.len(), tools.len() + if resources.is_some() { 2 } else { 0 }, "{}: no two definitions alike", entry.name);
    }
}
