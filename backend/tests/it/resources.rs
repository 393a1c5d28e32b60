//! Happy paths of every resource, over real HTTP against real Postgres.

use crate::common;

use crate::common::TestBackend;
use serde_json::json;

#[tokio::test]
async fn every_resource_lists_gets_and_writes() {
    let b = TestBackend::start().await;

    // Lists: default page size, totals, pagination and filters.
    let (s, page) = b.get("/customers").await;
    assert_eq!(s, 200);
    assert_eq!(page["data"].as_array().unwrap().len(), 50);
    assert_eq!(page["limit"], 50);
    assert!(page["total"].as_i64().unwrap() >= 100, "scale 1 has hundreds of rows");
    assert_eq!(page["next_offset"], 50);
    let (_, near) = b.get("/customers?q=northwind").await;
    let names: Vec<&str> = near["data"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Northwind Traders", "Northwind Trading Co"]);
    let (_, exact) = b.get("/customers?name=northwind%20traders").await;
    assert_eq!(exact["total"], 1);
    let (s, c) = b.get("/customers/1").await;
    assert_eq!((s, c["name"].as_str()), (200, Some("Northwind Traders")));

    let (_, on_call) = b.get("/users?on_call=true&team=payments&limit=200").await;
    assert!(on_call["data"].as_array().unwrap().iter().all(|u| u["on_call"] == true && u["team"] == "payments"));
    let (s, u) = b.patch("/users/4", json!({"on_call": true})).await;
    assert_eq!((s, &u["on_call"]), (200, &json!(true)));

    let (_, tickets) = b.get("/tickets?status=open&limit=200").await;
    assert!(tickets["total"].as_i64().unwrap() > 50);
    assert!(tickets["data"].as_array().unwrap().iter().all(|t| t["status"] == "open"));
    let (_, all) = b.get("/tickets").await;
    let (_, last) = b.get(&format!("/tickets?offset={}", all["total"].as_i64().unwrap() - 1)).await;
    assert_eq!(last["data"].as_array().unwrap().len(), 1);
    let (s, created) = b.post("/tickets", json!({"title": "Printer on fire", "priority": "urgent", "customer_id": 1, "assignee_id": 2})).await;
    assert_eq!(s, 201, "{created}");
    assert_eq!((created["status"].as_str(), created["version"].as_i64()), (Some("open"), Some(1)));
    let id = created["id"].as_i64().unwrap();
    let (s, patched) = b.patch(&format!("/tickets/{id}"), json!({"status": "in_progress", "assignee_id": null})).await;
    assert_eq!(s, 200);
    assert_eq!((patched["status"].as_str(), &patched["assignee_id"], patched["version"].as_i64()), (Some("in_progress"), &json!(null), Some(2)));
    assert_eq!(patched["customer_id"], 1, "fields not named in a patch keep their value");
    let (_, got) = b.get(&format!("/tickets/{id}")).await;
    assert_eq!(got, patched);
    assert!(last["next_offset"].is_null());

    let (s, n) = b.post("/notifications", json!({"user_id": 2, "ticket_id": id, "message": "You have a new ticket"})).await;
    assert_eq!((s, n["read"].as_bool()), (201, Some(false)));
    let (s, n) = b.patch(&format!("/notifications/{}", n["id"]), json!({"read": true})).await;
    assert_eq!((s, n["read"].as_bool()), (200, Some(true)));
    let (_, mine) = b.get(&format!("/notifications?user_id=2&ticket_id={id}")).await;
    assert_eq!(mine["total"], 1);

    let (_, repos) = b.get("/repos?name=payments-api").await;
    let owners: Vec<&str> = repos["data"].as_array().unwrap().iter().map(|r| r["owner"].as_str().unwrap()).collect();
    assert_eq!(owners, ["platform", "legacy"], "two repos share a name on purpose");
    let (s, _) = b.get("/repos/1").await;
    assert_eq!(s, 200);
    let (_, svc) = b.get("/services?name=checkout").await;
    assert_eq!(svc["total"], 1);
    let service_id = svc["data"][0]["id"].as_i64().unwrap();
    let (s, _) = b.get(&format!("/services/{service_id}")).await;
    assert_eq!(s, 200);

    // An open one: a merged or closed change request takes no review.
    let (_, crs) = b.get("/change_requests?status=open&limit=1").await;
    let cr = crs["data"][0]["id"].as_i64().unwrap();
    let (_, comments) = b.get(&format!("/change_requests/{cr}/comments")).await;
    let (_, reviews) = b.get(&format!("/change_requests/{cr}/reviews")).await;
    let (comments_before, reviews_before) = (comments["total"].as_i64().unwrap(), reviews["total"].as_i64().unwrap());
    let (s, _) = b.get(&format!("/change_requests/{cr}")).await;
    assert_eq!(s, 200);
    let (s, c) = b.post(&format!("/change_requests/{cr}/comments"), json!({"author_id": 3, "path": "src/lib.rs", "line": 7, "body": "typo"})).await;
    assert_eq!((s, &c["review_id"]), (201, &json!(null)));
    let (s, r) = b
        .post(
            &format!("/change_requests/{cr}/reviews"),
            json!({"reviewer_id": 4, "verdict": "request_changes", "body": "see comments",
                   "comments": [{"path": "a.rs", "line": 1, "body": "one"}, {"path": "b.rs", "line": 2, "body": "two"}]}),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    assert_eq!(r["comments"].as_array().unwrap().len(), 2);
    assert_eq!(r["comments"][1]["body"], "two", "comments keep their order");
    let (_, comments) = b.get(&format!("/change_requests/{cr}/comments")).await;
    assert_eq!(comments["total"].as_i64(), Some(comments_before + 3), "one standalone comment and the review's two");
    let (_, reviews) = b.get(&format!("/change_requests/{cr}/reviews")).await;
    assert_eq!(reviews["total"].as_i64(), Some(reviews_before + 1));

    let (_, rbs) = b.get("/runbooks?service=checkout").await;
    assert!(rbs["data"][0]["internal_notes"].as_str().unwrap().contains("INTERNAL"), "the vendor API does not withhold notes");
    let (s, _) = b.get(&format!("/runbooks/{}", rbs["data"][0]["id"])).await;
    assert_eq!(s, 200);

    let (s, d) = b.post("/deploys", json!({"service_id": service_id, "version": "2.0.0", "environment": "staging", "deployed_by": 2})).await;
    assert_eq!((s, d["status"].as_str()), (201, Some("succeeded")));
    let (s, d2) = b.patch(&format!("/deploys/{}", d["id"]), json!({"status": "rolled_back"})).await;
    assert_eq!((s, d2["status"].as_str()), (200, Some("rolled_back")));
    let (s, again) = b.patch(&format!("/deploys/{}", d["id"]), json!({"status": "rolled_back"})).await;
    assert_eq!((s, again["error"].as_str()), (409, Some("conflict")));
    let (_, ds) = b.get(&format!("/deploys?service_id={service_id}&environment=staging")).await;
    assert_eq!(ds["data"][0]["version"], "2.0.0", "newest first");
    let (s, _) = b.get(&format!("/deploys/{}", d["id"])).await;
    assert_eq!(s, 200);

    // Deleting a ticket takes its notifications with it.
    let resp = b.client.delete(b.url(&format!("/tickets/{id}"))).send().await.unwrap();
    let (s, gone) = common::decode(resp).await;
    assert_eq!((s, gone["deleted"].as_i64()), (200, Some(id)));
    let (_, left) = b.get(&format!("/notifications?ticket_id={id}")).await;
    assert_eq!(left["total"], 0);
    let (s, _) = b.get(&format!("/tickets/{id}")).await;
    assert_eq!(s, 404);

    let (s, h) = b.get("/health").await;
    assert_eq!((s, h["status"].as_str()), (200, Some("ok")));
    b.shutdown().await;
}

#[tokio::test]
async fn openapi_documents_exactly_the_served_routes() {
    let b = TestBackend::start().await;
    let (s, doc) = b.get("/openapi.json").await;
    assert_eq!(s, 200);
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 15, "{} paths", paths.len());
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            let concrete = path.replace("{id}", "1");
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let resp = b.client.request(m, b.url(&concrete)).json(&serde_json::json!({})).send().await.unwrap();
            let status = resp.status().as_u16();
            let body: serde_json::Value = resp.json().await.unwrap();
            // Any answer but "no such route" / "method not allowed" proves the route is served.
            assert!(
                !(status == 405 || (status == 404 && body["message"].as_str().unwrap_or("").starts_with("no such route"))),
                "{method} {path} is documented but not served: {status} {body}"
            );
        }
    }
    let (s, body) = b.get("/no/such/route").await;
    assert_eq!((s, body["error"].as_str()), (404, Some("not_found")));
    let resp = b.client.put(b.url("/tickets")).send().await.unwrap();
    let (s, body) = common::decode(resp).await;
    assert_eq!((s, body["error"].as_str()), (405, Some("method_not_allowed")));
    b.shutdown().await;
}
