//! The review drafts the control hands to the agent to carry: the whole working state (change
//! request, reviewer, comments so far) as readable JSON, plus an integrity tag, so the server
//! holds nothing between calls.
//!
//! The tag is HMAC-SHA256, truncated to 128 bits (as long as the pattern's handle), over the
//! draft's canonical form under a random key drawn once per process. It exists to keep the two
//! arms' operations the same size: without it an agent could write a draft holding every
//! comment in one go and submit it, which is the one-call write this module no longer offers.
//! The tag covers the content, not the bytes, so a draft re-serialised with other spacing or key
//! order is still accepted. A draft from another server process carries another key's tag and
//! is refused like a forged one.

use std::io::Read;
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;

use super::drafts::{Comment, MAX_COMMENTS, validate};

/// Bytes of the truncated tag (32 hex digits).
const TAG_BYTES: usize = 16;
/// Prefix of the signed bytes, so a tag made for anything else never verifies here.
const DOMAIN: &str = "mcp-pattern-bench review draft v1";

/// The fix every refusal of a draft names.
pub const PASS_IT_BACK: &str = "pass the draft exactly as the last start_review or add_review_comment returned it";

/// A draft whose tag was checked (or that was just made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub change_request_id: i64,
    pub reviewer_id: i64,
    pub comments: Vec<Comment>,
}

/// A draft as it travels: the state and its tag.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    change_request_id: i64,
    reviewer_id: i64,
    comments: Vec<Comment>,
    tag: String,
}

/// Why a draft the agent passed cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CarriedError {
    #[error("draft: expected the JSON object the last call returned, with change_request_id, reviewer_id, comments and tag ({0}); {PASS_IT_BACK}")]
    Shape(String),
    #[error(
        "the draft's tag does not match its contents: {PASS_IT_BACK}, without changing it (a draft is also refused by any \
         server process other than the one that made it: after a restart, start the review again)"
    )]
    Tag,
    #[error("{0}")]
    Invalid(String),
}

/// This process's signing key: 256 bits from the OS, drawn on first use.
fn key() -> std::io::Result<&'static [u8; 32]> {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    if let Some(k) = KEY.get() {
        return Ok(k);
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(KEY.get_or_init(|| bytes))
}

fn mac(d: &Draft) -> std::io::Result<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key()?).expect("HMAC takes a key of any length");
    // A typed tuple serialises the same way every time: this is the canonical form.
    let canonical = serde_json::to_vec(&(DOMAIN, d.change_request_id, d.reviewer_id, &d.comments)).expect("a draft serialises");
    mac.update(&canonical);
    Ok(mac)
}

impl Draft {
    pub fn new(change_request_id: i64, reviewer_id: i64) -> Self {
        Self { change_request_id, reviewer_id, comments: Vec::new() }
    }

    /// The draft as the agent carries it: readable state plus its tag.
    pub fn seal(&self) -> std::io::Result<Value> {
        let tag = hex::encode(&mac(self)?.finalize().into_bytes()[..TAG_BYTES]);
        Ok(json!({
            "change_request_id": self.change_request_id,
            "reviewer_id": self.reviewer_id,
            "comments": self.comments,
            "tag": tag,
        }))
    }

    /// Checks a carried draft's shape and tag. Models sometimes pass an object as a JSON string;
    /// that is accepted too, since the content is what is checked.
    pub fn open(carried: &Value) -> Result<Self, CarriedError> {
        let parsed;
        let carried = match carried {
            Value::String(s) => {
                parsed = serde_json::from_str::<Value>(s).map_err(|_| CarriedError::Shape("got a string that is not JSON".into()))?;
                &parsed
            }
            v => v,
        };
        if !carried.is_object() {
            return Err(CarriedError::Shape(format!("got {}", kind(carried))));
        }
        let w: Wire = serde_json::from_value(carried.clone()).map_err(|e| CarriedError::Shape(e.to_string()))?;
        let tag = hex::decode(&w.tag).ok().filter(|t| t.len() == TAG_BYTES).ok_or(CarriedError::Tag)?;
        let d = Draft { change_request_id: w.change_request_id, reviewer_id: w.reviewer_id, comments: w.comments };
        mac(&d).map_err(|e| CarriedError::Invalid(format!("reading the signing key: {e}")))?.verify_truncated_left(&tag).map_err(|_| CarriedError::Tag)?;
        Ok(d)
    }

    /// Appends a comment after checking it as the backend would (the same checks as the pattern's).
    pub fn add(&mut self, comment: Comment) -> Result<usize, CarriedError> {
        validate(&comment).map_err(|e| CarriedError::Invalid(e.to_string()))?;
        if self.comments.len() >= MAX_COMMENTS {
            return Err(CarriedError::Invalid(format!("a review can carry at most {MAX_COMMENTS} comments; this draft is full")));
        }
        self.comments.push(comment);
        Ok(self.comments.len())
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(line: i32) -> Comment {
        Comment { path: "src/lib.rs".into(), line, body: "nit".into() }
    }

    #[test]
    fn a_sealed_draft_opens_and_keeps_its_content() {
        let mut d = Draft::new(3, 2);
        d.add(comment(1)).unwrap();
        let sealed = d.seal().unwrap();
        assert_eq!(sealed["tag"].as_str().unwrap().len(), 2 * TAG_BYTES);
        assert_eq!(Draft::open(&sealed).unwrap(), d);
        // Other spacing, or the object sent as a JSON string, carries the same content.
        assert_eq!(Draft::open(&Value::String(serde_json::to_string_pretty(&sealed).unwrap())).unwrap(), d);
    }

    #[test]
    fn any_change_to_the_content_or_the_tag_is_refused() {
        let mut d = Draft::new(3, 2);
        d.add(comment(1)).unwrap();
        let sealed = d.seal().unwrap();
        let mut edits: Vec<Value> = Vec::new();
        for (pointer, value) in
            [("/change_request_id", json!(4)), ("/reviewer_id", json!(1)), ("/comments/0/line", json!(2)), ("/comments/0/body", json!("nit!"))]
        {
            let mut e = sealed.clone();
            *e.pointer_mut(pointer).unwrap() = value;
            edits.push(e);
        }
        let mut more = sealed.clone();
        more["comments"].as_array_mut().unwrap().push(json!({"path": "a.rs", "line": 1, "body": "forged"}));
        edits.push(more);
        let mut retagged = sealed.clone();
        let t = retagged["tag"].as_str().unwrap().to_owned();
        retagged["tag"] = json!(format!("{}{}", if t.starts_with('0') { "1" } else { "0" }, &t[1..]));
        edits.push(retagged);
        let mut short = sealed.clone();
        short["tag"] = json!(&t[..16]);
        edits.push(short);
        for e in edits {
            assert!(matches!(Draft::open(&e), Err(CarriedError::Tag)), "{e}");
        }
        let mut untagged = sealed.clone();
        untagged.as_object_mut().unwrap().remove("tag");
        assert!(matches!(Draft::open(&untagged), Err(CarriedError::Shape(_))));
        for bad in [json!(null), json!("abc"), json!([1])] {
            let e = Draft::open(&bad).unwrap_err().to_string();
            assert!(e.contains(PASS_IT_BACK), "{e}");
        }
        assert!(Draft::open(&sealed).is_ok(), "the original still opens");
    }

    #[test]
    fn bad_comments_and_a_full_draft_are_rejected() {
        let mut d = Draft::new(1, 1);
        assert!(d.add(comment(0)).unwrap_err().to_string().starts_with("line"));
        for i in 1..=MAX_COMMENTS {
            assert_eq!(d.add(comment(i as i32)).unwrap(), i);
        }
        assert!(d.add(comment(1)).unwrap_err().to_string().contains("at most"));
    }
}
