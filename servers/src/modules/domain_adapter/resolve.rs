//! Turning business references (a customer's name, a person's name, a ticket's title, or
//! `#id`) into records, through the backend's list filters, and ids back into names.
//!
//! The rule, the same for every kind: `#id` (or bare digits) is that record; otherwise an exact
//! case-insensitive match wins; otherwise a unique substring match; otherwise the reference is
//! refused with a message listing the candidates, so the caller can pick one. Never a guess.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::backend_client::{BackendClient, CallError};

/// How many candidates an ambiguity message lists.
pub const SHOWN: usize = 10;
/// Page size used to look for exact matches among substring matches.
const SCAN: usize = 200;

/// The record a reference named, or a message for the model saying why there is none.
pub type Resolved = Result<Value, String>;

/// One page of a backend list.
struct Page {
    data: Vec<Value>,
    total: usize,
}

async fn list(b: &BackendClient, path: &str, query: &Value) -> Result<Page, String> {
    let v = b.get(path, query).await.map_err(|e| e.to_string())?;
    let data = v["data"].as_array().cloned().unwrap_or_default();
    let total = v["total"].as_u64().map_or(data.len(), |n| n as usize);
    Ok(Page { data, total })
}

/// `#12` or `12` → 12.
fn id_ref(reference: &str) -> Option<i64> {
    reference.strip_prefix('#').unwrap_or(reference).trim().parse().ok()
}

/// `GET /{plural}/{id}`, with a 404 said in the domain's words.
async fn by_id(b: &BackendClient, plural: &str, what: &str, id: i64) -> Resolved {
    match b.get(&format!("/{plural}/{id}"), &()).await {
        Ok(v) => Ok(v),
        Err(CallError::Status { status: 404, .. }) => Err(format!("There is no {what} #{id}.")),
        Err(e) => Err(e.to_string()),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn same(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// `#1 Northwind Traders (enterprise, eu-west)`
pub fn customer_label(c: &Value) -> String {
    format!("#{} {} ({}, {})", c["id"], str_of(c, "name"), str_of(c, "tier"), str_of(c, "region"))
}

/// `#2 Marcus Chen (platform)`
pub fn person_label(u: &Value) -> String {
    format!("#{} {} ({})", u["id"], str_of(u, "name"), str_of(u, "team"))
}

/// `#12 Checkout page times out on submit (Northwind Traders, open)`
fn ticket_label(t: &Value, customers: &HashMap<i64, String>) -> String {
    let customer = t["customer_id"].as_i64().and_then(|id| customers.get(&id)).map_or("no customer", String::as_str);
    format!("#{} {} ({customer}, {})", t["id"], str_of(t, "title"), str_of(t, "status"))
}

/// The refusal of a reference that matches several records: says so and lists them.
fn ambiguous(reference: &str, kind: &str, total: usize, labels: &[String]) -> String {
    let shown = if total > labels.len() { format!(" (showing {} of {total})", labels.len()) } else { String::new() };
    let retry = if kind == "tickets" { "the #id" } else { "the full name or the #id" };
    format!("\"{reference}\" matches {total} {kind}{shown}; nothing was done. Be more specific: retry with {retry} of one of:\n{}", labels.join("\n"))
}

fn empty(what: &str) -> String {
    format!("The {what} reference is empty; give a name or #id.")
}

/// Near matches for a reference that matched nothing: what its words match, longest word
/// first, trying at most three words.
async fn near(b: &BackendClient, path: &str, reference: &str, label: fn(&Value) -> String) -> String {
    let mut words: Vec<&str> = reference.split_whitespace().filter(|w| w.len() >= 3).collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    for word in words.into_iter().take(3) {
        if let Ok(p) = list(b, path, &json!({ "q": word, "limit": 5 })).await
            && !p.data.is_empty()
        {
            return format!(" Similar: {}.", p.data.iter().map(label).collect::<Vec<_>>().join("; "));
        }
    }
    String::new()
}

/// A customer by name or `#id`.
pub async fn customer(b: &BackendClient, reference: &str) -> Resolved {
    let r = reference.trim();
    if r.is_empty() {
        return Err(empty("customer"));
    }
    if let Some(id) = id_ref(r) {
        return by_id(b, "customers", "customer", id).await;
    }
    let exact = list(b, "/customers", &json!({ "name": r, "limit": SHOWN })).await?;
    match exact.total {
        1 => return Ok(exact.data[0].clone()),
        0 => {}
        n => return Err(ambiguous(r, "customers", n, &exact.data.iter().map(customer_label).collect::<Vec<_>>())),
    }
    let sub = list(b, "/customers", &json!({ "q": r, "limit": SHOWN })).await?;
    match sub.total {
        0 => Err(format!("No customer is named \"{r}\" or has it in their name.{}", near(b, "/customers", r, customer_label).await)),
        1 => Ok(sub.data[0].clone()),
        n => Err(ambiguous(r, "customers", n, &sub.data.iter().map(customer_label).collect::<Vec<_>>())),
    }
}

/// A person (user) by name or `#id`. The backend has only a substring filter for names, so
/// the exact match is picked out of the substring matches here.
pub async fn person(b: &BackendClient, reference: &str) -> Resolved {
    let r = reference.trim();
    if r.is_empty() {
        return Err(empty("person"));
    }
    if let Some(id) = id_ref(r) {
        return by_id(b, "users", "person", id).await;
    }
    let sub = list(b, "/users", &json!({ "q": r, "limit": SCAN })).await?;
    let exact: Vec<&Value> = sub.data.iter().filter(|u| same(str_of(u, "name"), r)).collect();
    if let [one] = exact.as_slice() {
        return Ok((*one).clone());
    }
    match sub.total {
        0 => Err(format!("No person is named \"{r}\" or has it in their name.{}", near(b, "/users", r, person_label).await)),
        1 => Ok(sub.data[0].clone()),
        n => Err(ambiguous(r, "people", n, &sub.data.iter().take(SHOWN).map(person_label).collect::<Vec<_>>())),
    }
}

/// A ticket by title or `#id`. Titles repeat, so several exact matches are ambiguous too; the
/// message lists `#id title (customer, status)` so the caller can retry with the `#id`.
pub async fn ticket(b: &BackendClient, reference: &str) -> Resolved {
    let r = reference.trim();
    if r.is_empty() {
        return Err(empty("ticket"));
    }
    if let Some(id) = id_ref(r) {
        return by_id(b, "tickets", "ticket", id).await;
    }
    let sub = list(b, "/tickets", &json!({ "q": r, "limit": SCAN })).await?;
    let exact: Vec<Value> = sub.data.iter().filter(|t| same(str_of(t, "title"), r)).cloned().collect();
    let (candidates, total) = match exact.len() {
        1 => return Ok(exact[0].clone()),
        0 => match sub.total {
            0 => return Err(format!("No ticket title is or contains \"{r}\". Search with find_tickets, or give the ticket's #id.")),
            1 => return Ok(sub.data[0].clone()),
            n => (sub.data, n),
        },
        n => (exact, n),
    };
    let shown: Vec<Value> = candidates.into_iter().take(SHOWN).collect();
    let names = names(b, "customers", shown.iter().filter_map(|t| t["customer_id"].as_i64())).await;
    Err(ambiguous(r, "tickets", total, &shown.iter().map(|t| ticket_label(t, &names)).collect::<Vec<_>>()))
}

/// Names of the records `ids` of `/{plural}`, looked up concurrently. Unknown ids are left out.
pub async fn names(b: &BackendClient, plural: &str, ids: impl IntoIterator<Item = i64>) -> HashMap<i64, String> {
    let mut ids: Vec<i64> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut set = JoinSet::new();
    for id in ids {
        let (b, path) = (b.clone(), format!("/{plural}/{id}"));
        set.spawn(async move { (id, b.get(&path, &()).await) });
    }
    let mut out = HashMap::new();
    while let Some(joined) = set.join_next().await {
        if let Ok((id, Ok(v))) = joined
            && let Some(name) = v["name"].as_str()
        {
            out.insert(id, name.to_owned());
        }
    }
    out
}

/// `{ "id": 2, "name": "Marcus Chen" }`, or null for no reference.
fn named(id: &Value, names: &HashMap<i64, String>) -> Value {
    match id.as_i64() {
        Some(id) => json!({ "id": id, "name": names.get(&id) }),
        None => Value::Null,
    }
}

/// Tickets as the backend returns them, with `customer_id`/`assignee_id` replaced by
/// `customer`/`assignee` objects carrying both id and name.
pub async fn with_names(b: &BackendClient, tickets: Vec<Value>) -> Vec<Value> {
    let ids = |key: &'static str| tickets.iter().filter_map(move |t| t[key].as_i64()).collect::<Vec<_>>();
    let (customers, people) = tokio::join!(names(b, "customers", ids("customer_id")), names(b, "users", ids("assignee_id")));
    tickets
        .into_iter()
        .map(|mut t| {
            if let Some(m) = t.as_object_mut() {
                let c = m.remove("customer_id").unwrap_or_default();
                let a = m.remove("assignee_id").unwrap_or_default();
                m.insert("customer".into(), named(&c, &customers));
                m.insert("assignee".into(), named(&a, &people));
            }
            t
        })
        .collect()
}

/// One ticket with names.
pub async fn with_names_one(b: &BackendClient, ticket: Value) -> Value {
    with_names(b, vec![ticket]).await.pop().unwrap_or_default()
}

/// How many tickets matching `filter` (e.g. `customer_id`) are in each status.
pub async fn counts_by_status(b: &BackendClient, key: &str, id: i64) -> Result<Value, String> {
    let mut set = JoinSet::new();
    for status in ["open", "in_progress", "resolved", "closed"] {
        let (b, query) = (b.clone(), json!({ key: id, "status": status, "limit": 1 }));
        set.spawn(async move { (status, list(&b, "/tickets", &query).await) });
    }
    let mut out = serde_json::Map::new();
    while let Some(joined) = set.join_next().await {
        let (status, page) = joined.map_err(|e| format!("counting tickets failed: {e}"))?;
        out.insert(status.to_owned(), json!(page?.total));
    }
    Ok(Value::Object(out))
}
