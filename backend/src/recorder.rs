//! An opt-in record of which operations of the API were reached, for the capability-parity test
//! (`docs/patterns.md`, "Capability parity"): both arms of a module must reach the same backend
//! operations, and the backend is the one place every arm — built-in or external, over any
//! transport — has to go through.
//!
//! An operation's [`Signature`] is what it did, not what it carried: the method, the path with
//! every numeric segment as `{id}`, the names of the query parameters present, and the JSON
//! body's top-level keys, each marked whether it was `null` (how a PATCH says "clear this").
//! Values are left out, so two arms that reach the same operation with different ids match.
//!
//! Nothing records unless a [`Recorder`] is layered onto the router ([`Recorder::layer`]);
//! `app` and `serve` never do, so a run pays nothing for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// A body key's value, as far as an operation's shape is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BodyValue {
    /// Any value but `null`.
    Set,
    /// `null`: for a PATCH, "clear this field".
    Null,
}

/// The shape of one request: `PATCH /tickets/{id} {assignee_id=null, status}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    pub method: String,
    /// The path with each all-digit segment written `{id}`.
    pub path: String,
    /// Names of the query parameters present.
    pub query: BTreeSet<String>,
    /// Top-level keys of a JSON object body.
    pub body: BTreeMap<String, BodyValue>,
}

#[derive(Debug, thiserror::Error)]
#[error("`{text}` is not an operation signature ({problem}); write e.g. `GET /repos ?q` or `PATCH /tickets/{{id}} {{assignee_id=null}}`")]
pub struct SignatureError {
    text: String,
    problem: &'static str,
}

impl Signature {
    /// Whether `self`, a declared signature, is met by `seen`: the same method and path, and
    /// every query parameter and body key `self` names present in `seen` (with `null` where
    /// `self` says `=null`). `seen` may carry more: paging, the other fields of an update.
    pub fn is_met_by(&self, seen: &Signature) -> bool {
        self.method == seen.method
            && self.path == seen.path
            && self.query.is_subset(&seen.query)
            && self.body.iter().all(|(k, v)| seen.body.get(k).is_some_and(|s| s == v))
    }

    /// Parses the form [`Signature`]'s `Display` writes: `METHOD /path[ ?a&b][ {k, k=null}]`.
    pub fn parse(text: &str) -> Result<Self, SignatureError> {
        let fail = |problem| SignatureError { text: text.to_owned(), problem };
        let mut rest = text.trim();
        let (method, after) = rest.split_once(' ').ok_or_else(|| fail("no path after the method"))?;
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(fail("the method must be upper case"));
        }
        rest = after.trim_start();
        let end = rest.find(' ').unwrap_or(rest.len());
        let (path, after) = rest.split_at(end);
        if !path.starts_with('/') {
            return Err(fail("the path must start with /"));
        }
        rest = after.trim();
        let mut query = BTreeSet::new();
        if let Some(q) = rest.strip_prefix('?') {
            let end = q.find(' ').unwrap_or(q.len());
            query = q[..end].split('&').filter(|n| !n.is_empty()).map(str::to_owned).collect();
            rest = q[end..].trim();
        }
        let mut body = BTreeMap::new();
        if !rest.is_empty() {
            let inner = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).ok_or_else(|| fail("a body is written {key, key=null}"))?;
            for key in inner.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                match key.split_once('=') {
                    Some((k, "null")) => body.insert(k.trim().to_owned(), BodyValue::Null),
                    Some(_) => return Err(fail("a body key is `key` or `key=null`")),
                    None => body.insert(key.to_owned(), BodyValue::Set),
                };
            }
        }
        Ok(Self { method: method.to_owned(), path: path.to_owned(), query, body })
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if !self.query.is_empty() {
            write!(f, " ?{}", self.query.iter().cloned().collect::<Vec<_>>().join("&"))?;
        }
        if !self.body.is_empty() {
            let keys: Vec<String> = self
                .body
                .iter()
                .map(|(k, v)| match v {
                    BodyValue::Set => k.clone(),
                    BodyValue::Null => format!("{k}=null"),
                })
                .collect();
            write!(f, " {{{}}}", keys.join(", "))?;
        }
        Ok(())
    }
}

/// The path with each all-digit segment written `{id}`.
pub fn path_template(path: &str) -> String {
    path.split('/').map(|s| if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) { "{id}" } else { s }).collect::<Vec<_>>().join("/")
}

/// The signatures of the requests a router served, in order, shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    seen: Arc<Mutex<Vec<Signature>>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// `router`, recording each request's signature here before handling it.
    pub fn layer(&self, router: axum::Router) -> axum::Router {
        let me = self.clone();
        router.layer(axum::middleware::from_fn(move |req: Request, next: Next| {
            let me = me.clone();
            async move { me.record(req, next).await }
        }))
    }

    /// Every signature recorded since the last [`Self::take`], and forgets them.
    pub fn take(&self) -> Vec<Signature> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn record(&self, req: Request, next: Next) -> Response {
        let (parts, body) = req.into_parts();
        // Bounded like every handler's read: a body over the limit is recorded without keys and
        // refused by the handler as usual.
        let bytes = axum::body::to_bytes(body, crate::extract::MAX_BODY_BYTES).await.unwrap_or_default();
        let query = parts.uri.query().map(|q| form_urlencoded::parse(q.as_bytes()).map(|(k, _)| k.into_owned()).collect()).unwrap_or_default();
        let body_keys = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(m)) => m.into_iter().map(|(k, v)| (k, if v.is_null() { BodyValue::Null } else { BodyValue::Set })).collect(),
            _ => BTreeMap::new(),
        };
        let signature = Signature { method: parts.method.to_string(), path: path_template(parts.uri.path()), query, body: body_keys };
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(signature);
        next.run(Request::from_parts(parts, Body::from(bytes))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_reads_back_as_written() {
        for text in ["GET /repos ?q", "GET /tickets/{id}", "PATCH /tickets/{id} {assignee_id=null, status}", "GET /services ?limit&team {x}"] {
            assert_eq!(Signature::parse(text).unwrap().to_string(), text);
        }
        assert!(Signature::parse("get /repos").is_err());
        assert!(Signature::parse("GET repos").is_err());
        assert!(Signature::parse("PATCH /tickets/{id} {assignee_id=3}").is_err());
    }

    #[test]
    fn a_declared_signature_is_met_by_more_but_not_by_a_set_value_for_null() {
        let declared = Signature::parse("PATCH /tickets/{id} {assignee_id=null}").unwrap();
        assert!(declared.is_met_by(&Signature::parse("PATCH /tickets/{id} {assignee_id=null, status}").unwrap()));
        assert!(!declared.is_met_by(&Signature::parse("PATCH /tickets/{id} {assignee_id}").unwrap()));
        assert!(!declared.is_met_by(&Signature::parse("PATCH /tickets/{id} {status}").unwrap()));
        let search = Signature::parse("GET /repos ?q").unwrap();
        assert!(search.is_met_by(&Signature::parse("GET /repos ?limit&q").unwrap()));
        assert!(!search.is_met_by(&Signature::parse("GET /repos ?name").unwrap()));
        assert_eq!(path_template("/change_requests/12/comments"), "/change_requests/{id}/comments");
    }
}
