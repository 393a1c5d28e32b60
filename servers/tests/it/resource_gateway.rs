//! Resource gateway module: both servers over both transports against the real backend.

use crate::common;

use crate::common::{BOTH, Client, Via, call, connect, err_text, ok_json, sql};
use rmcp::ServiceError;
use rmcp::model::{ErrorCode, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

const MARKERS: &[&str] = &["INTERNAL ONLY", "RB-INT-"];

/// The text and mime type of a resource read; panics on a protocol error.
async fn read(client: &Client, uri: &str) -> (String, Option<String>) {
    let r = client.read_resource(ReadResourceRequestParams::new(uri)).await.unwrap_or_else(|e| panic!("reading {uri}: {e}"));
    assert_eq!(r.contents.len(), 1, "{uri}");
    match &r.contents[0] {
        ResourceContents::TextResourceContents { uri: u, mime_type, text, .. } => {
            assert_eq!(u, uri);
            (text.clone(), mime_type.clone())
        }
        other => panic!("{uri}: not text: {other:?}"),
    }
}

/// The MCP error of a read that must fail.
async fn read_err(client: &Client, uri: &str) -> rmcp::ErrorData {
    match client.read_resource(ReadResourceRequestParams::new(uri)).await {
        Err(ServiceError::McpError(e)) => e,
        other => panic!("{uri}: expected an MCP error, got {other:?}"),
    }
}

/// Every runbook's internal notes, from the database.
async fn all_notes(b: &backend::local::LocalBackend) -> Vec<String> {
    let v = sql(b, "SELECT json_agg(internal_notes ORDER BY id) AS notes FROM runbooks").await;
    let notes: Vec<String> = serde_json::from_value(v["notes"].clone()).unwrap();
    assert!(notes.len() > 10 && notes.iter().all(|n| n.contains("INTERNAL ONLY")), "{notes:?}");
    notes
}

fn assert_no_leak(what: &str, text: &str, notes: &[String]) {
    for m in MARKERS {
        assert!(!text.contains(m), "{what} contains {m}: {text}");
    }
    for n in notes {
        assert!(!text.contains(n.as_str()), "{what} contains internal notes {n}");
    }
}

/// Every runbook as (slug, title, service, body), in id order, from the database.
async fn db_runbooks(b: &backend::local::LocalBackend) -> Vec<Value> {
    let v = sql(b, "SELECT json_agg(json_build_object('slug', slug, 'title', title, 'service', service, 'body', body) ORDER BY id) AS r FROM runbooks").await;
    v["r"].as_array().unwrap().clone()
}

#[tokio::test]
async fn every_tool_of_the_control_works_over_both_transports() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("resource_wrapper", b.url(), via).await;
        let mut tools: Vec<String> = c.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        tools.sort();
        assert_eq!(tools, ["runbooks_get", "runbooks_list", "services_get", "services_list"], "{via:?}");
        let page = ok_json(&call(&c.client, "runbooks_list", json!({"service": "checkout", "limit": 200})).await);
        assert!(page["data"].as_array().unwrap().iter().all(|r| r["service"] == "checkout"), "{page}");
        let page = ok_json(&call(&c.client, "runbooks_list", json!({"slug": "checkout-high-latency"})).await);
        assert_eq!(page["total"], 1);
        let page = ok_json(&call(&c.client, "runbooks_list", json!({"q": "LATENCY", "limit": 2})).await);
        assert!(page["total"].as_i64().unwrap() >= 1 && page["data"].as_array().unwrap().len() <= 2, "{page}");
        // The raw design: the full record, internal notes included.
        let r = ok_json(&call(&c.client, "runbooks_get", json!({"id": 1})).await);
        assert_eq!(r["slug"], "checkout-high-latency");
        assert!(r["internal_notes"].as_str().unwrap().contains("INTERNAL ONLY (ref RB-INT-0001)"), "{r}");
        let s = ok_json(&call(&c.client, "services_list", json!({"name": "checkout"})).await);
        assert_eq!((s["total"].as_i64(), s["data"][0]["team"].as_str()), (Some(1), Some("checkout")));
        let id = s["data"][0]["id"].as_i64().unwrap();
        assert_eq!(ok_json(&call(&c.client, "services_get", json!({"id": id})).await)["name"], "checkout");
        // A backend 4xx is a tool error naming the problem.
        let e = err_text(&call(&c.client, "runbooks_get", json!({"id": 999999})).await);
        assert!(e.contains("999999"), "{e}");
        let e = err_text(&call(&c.client, "runbooks_list", json!({"limit": 500})).await);
        assert!(e.contains("limit"), "{e}");
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn gateway_lists_and_reads_over_both_transports() {
    let b = common::backend().await;
    let db = db_runbooks(&b).await;
    for via in BOTH {
        let c = connect("resource_gateway", b.url(), via).await;
        let info = c.client.peer_info().unwrap();
        assert!(info.capabilities.resources.is_some() && info.capabilities.tools.is_none(), "{via:?}");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("resource_gateway"));
        assert!(c.client.list_all_tools().await.unwrap().is_empty(), "{via:?}: resources only");

        let resources = c.client.list_all_resources().await.unwrap();
        assert_eq!(resources.len(), db.len(), "{via:?}: one resource per runbook");
        for (r, d) in resources.iter().zip(&db) {
            let slug = d["slug"].as_str().unwrap();
            assert_eq!(r.uri, format!("runbook://{slug}"));
            assert_eq!(r.name, slug);
            assert_eq!(r.title.as_deref(), d["title"].as_str());
            assert_eq!(r.description.as_deref(), Some(format!("{} service", d["service"].as_str().unwrap()).as_str()));
            assert_eq!(r.mime_type.as_deref(), Some("text/markdown"));
        }

        let mut templates: Vec<String> = c.client.list_all_resource_templates().await.unwrap().into_iter().map(|t| t.uri_template).collect();
        templates.sort();
        assert_eq!(templates, ["runbook://{slug}", "runbooks://service/{service}"]);

        let (md, mime) = read(&c.client, "runbook://checkout-high-latency").await;
        assert_eq!(mime.as_deref(), Some("text/markdown"));
        assert!(md.starts_with("# Checkout: high latency\n"), "{md}");
        assert!(md.contains("- Service: checkout\n") && md.contains("- Last updated: "), "{md}");
        assert!(md.contains("scale the checkout deployment out by two replicas"), "{md}");

        let (index, _) = read(&c.client, "runbooks://service/checkout").await;
        let checkout: Vec<&Value> = db.iter().filter(|d| d["service"] == "checkout").collect();
        assert!(!checkout.is_empty());
        for d in &checkout {
            let line = format!("- [{}](runbook://{})", d["title"].as_str().unwrap(), d["slug"].as_str().unwrap());
            assert!(index.contains(&line), "{line} not in {index}");
        }
        assert_eq!(index.lines().filter(|l| l.starts_with("- [")).count(), checkout.len(), "{index}");
        // Every URI in the index reads.
        let first = index.lines().find_map(|l| l.split("](").nth(1)).unwrap().trim_end_matches(')');
        read(&c.client, first).await;
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// No gateway output, over either transport, carries any runbook's internal notes.
#[tokio::test]
async fn gateway_never_returns_internal_notes() {
    let b = common::backend().await;
    let notes = all_notes(&b).await;
    let services: Vec<String> = serde_json::from_value(sql(&b, "SELECT json_agg(name ORDER BY id) AS n FROM services").await["n"].clone()).unwrap();
    for via in BOTH {
        let c = connect("resource_gateway", b.url(), via).await;
        let resources = c.client.list_all_resources().await.unwrap();
        assert_no_leak("resource list", &serde_json::to_string(&resources).unwrap(), &notes);
        let templates = c.client.list_all_resource_templates().await.unwrap();
        assert_no_leak("template list", &serde_json::to_string(&templates).unwrap(), &notes);
        for r in &resources {
            let (md, _) = read(&c.client, &r.uri).await;
            assert_no_leak(&r.uri, &md, &notes);
        }
        for s in &services {
            let uri = format!("runbooks://service/{s}");
            let (md, _) = read(&c.client, &uri).await;
            assert_no_leak(&uri, &md, &notes);
        }
        for uri in ["runbook://no-such-runbook", "runbooks://service/no-such-service", "runbook://", "https://example.com/x"] {
            let e = read_err(&c.client, uri).await;
            assert_no_leak(uri, &serde_json::to_string(&e).unwrap(), &notes);
        }
        c.close().await;
    }
    // The control is the raw design: the same notes come back through its tools.
    let c = connect("resource_wrapper", b.url(), Via::Stdio).await;
    let page = ok_json(&call(&c.client, "runbooks_list", json!({"limit": 200})).await);
    assert!(page["next_offset"].is_null(), "one page holds every runbook at scale 1");
    let returned: Vec<&str> = page["data"].as_array().unwrap().iter().map(|r| r["internal_notes"].as_str().unwrap()).collect();
    assert_eq!(returned, notes, "the control returns every note");
    c.close().await;
    b.shutdown().await.unwrap();
}

/// Both arms answer the same question with the same text: every runbook body the control
/// returns is in the gateway's read of that runbook, and both list the same runbooks.
#[tokio::test]
async fn both_arms_give_the_same_runbook_text() {
    let b = common::backend().await;
    let before = sql(&b, "SELECT md5(string_agg(r::text, '|' ORDER BY id)) AS h FROM runbooks r").await;
    let w = connect("resource_wrapper", b.url(), Via::Stdio).await;
    let g = connect("resource_gateway", b.url(), Via::Stdio).await;

    let r = ok_json(&call(&w.client, "runbooks_list", json!({"slug": "checkout-high-latency"})).await);
    let body = r["data"][0]["body"].as_str().unwrap();
    let (md, _) = read(&g.client, "runbook://checkout-high-latency").await;
    assert!(md.contains(body), "{body:?} not in {md:?}");

    let mut control = Vec::new();
    let mut offset = 0;
    loop {
        let page = ok_json(&call(&w.client, "runbooks_list", json!({"limit": 200, "offset": offset})).await);
        control.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_offset"].as_i64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    let resources = g.client.list_all_resources().await.unwrap();
    let slugs: Vec<&str> = resources.iter().map(|r| r.name.as_str()).collect();
    let control_slugs: Vec<&str> = control.iter().map(|r| r["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, control_slugs);
    for r in &control {
        let (md, _) = read(&g.client, &format!("runbook://{}", r["slug"].as_str().unwrap())).await;
        assert!(md.contains(r["title"].as_str().unwrap()) && md.contains(r["body"].as_str().unwrap()), "{r} vs {md}");
        assert!(md.contains(r["updated_at"].as_str().unwrap()), "{r} vs {md}");
    }
    w.close().await;
    g.close().await;
    // Reading changes nothing, through either arm.
    assert_eq!(sql(&b, "SELECT md5(string_agg(r::text, '|' ORDER BY id)) AS h FROM runbooks r").await, before);
    b.shutdown().await.unwrap();
}

/// Unknown URIs and slugs are MCP resource-not-found errors naming the URI.
#[tokio::test]
async fn unknown_uris_are_mcp_errors() {
    let b = common::backend().await;
    for via in BOTH {
        let c = connect("resource_gateway", b.url(), via).await;
        for uri in [
            "runbook://no-such-runbook",
            "runbook://",
            "runbook://checkout-high-latency/extra",
            "runbooks://service/no-such-service",
            "runbooks://service/",
            "runbooks://checkout",
            "file:///etc/passwd",
        ] {
            let e = read_err(&c.client, uri).await;
            assert!(e.code == ErrorCode::RESOURCE_NOT_FOUND || e.code == ErrorCode::INVALID_PARAMS, "{via:?} {uri}: {:?}", e.code);
            assert_eq!(e.message, format!("resource not found: {uri}"), "{via:?}");
        }
        c.close().await;
    }
    b.shutdown().await.unwrap();
}

/// The manifest sees the gateway's resources and templates, and no tools.
#[tokio::test]
async fn manifest_lists_the_templates() {
    let entry = servers::registry::find("resource_gateway").unwrap();
    let m = servers::ToolManifest::of(entry, "http://127.0.0.1:9").await.unwrap();
    assert!(m.resources && m.tools.is_empty(), "{m:?}");
    let uris: Vec<&str> = m.resource_templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["runbook://{slug}", "runbooks://service/{service}"]);
    assert!(m.resource_templates.iter().all(|t| !t.description.is_empty()));
    let c = servers::ToolManifest::of(servers::registry::find("resource_wrapper").unwrap(), "http://127.0.0.1:9").await.unwrap();
    assert!(!c.resources && c.tools.len() == 4, "{c:?}");
}

/// An unreachable backend is a prompt protocol error, not a hang or a crash.
#[tokio::test]
async fn unreachable_backend_is_an_error() {
    let dead = "http://127.0.0.1:9";
    for via in BOTH {
        let c = connect("resource_gateway", dead, via).await;
        let started = std::time::Instant::now();
        match c.client.list_all_resources().await {
            Err(ServiceError::McpError(e)) => assert!(e.message.contains("could not be reached"), "{e:?}"),
            other => panic!("{via:?}: {other:?}"),
        }
        let e = read_err(&c.client, "runbook://checkout-high-latency").await;
        assert!(e.message.contains("could not be reached"), "{e:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        c.close().await;
    }
}
