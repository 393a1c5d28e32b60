//! The review drafts one server instance holds: an in-memory map from unguessable handle to
//! draft, with an idle timeout checked lazily on every access (no background task, so a
//! throwaway instance costs nothing).

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Most comments one review may carry (the backend's limit, checked when adding).
pub const MAX_COMMENTS: usize = 100;
/// The backend's limits on a comment's path and body.
pub const PATH_MAX: usize = 300;
pub const BODY_MAX: usize = 4000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comment {
    pub path: String,
    pub line: i32,
    pub body: String,
}

#[derive(Debug, Clone)]
pub struct Draft {
    pub change_request_id: i64,
    pub reviewer_id: i64,
    pub comments: Vec<Comment>,
    last_used: Instant,
    /// A submit of this draft is waiting for the backend.
    submitting: bool,
}

/// Why a draft could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    #[error(
        "no open review draft {0}: a draft ends when submitted or discarded, expires after {1} idle, \
         and is visible only in the connection that started it"
    )]
    Unknown(String, String),
    #[error("review draft {0} is being submitted; wait for that call to finish")]
    Submitting(String),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone)]
pub struct Drafts {
    inner: Arc<Mutex<HashMap<String, Draft>>>,
    ttl: Duration,
}

impl Drafts {
    pub fn new(ttl: Duration) -> Self {
        Self { inner: Arc::default(), ttl }
    }

    /// The map with every expired draft removed. A draft being submitted never expires.
    fn live(&self) -> MutexGuard<'_, HashMap<String, Draft>> {
        // A poisoned lock only means a panic elsewhere; the map itself is still consistent.
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.ttl;
        map.retain(|_, d| d.submitting || d.last_used.elapsed() <= ttl);
        map
    }

    fn unknown(&self, handle: &str) -> DraftError {
        DraftError::Unknown(handle.to_owned(), describe(self.ttl))
    }

    /// Opens an empty draft and returns its handle.
    pub fn open(&self, change_request_id: i64, reviewer_id: i64) -> std::io::Result<String> {
        let handle = new_handle()?;
        let draft = Draft { change_request_id, reviewer_id, comments: Vec::new(), last_used: Instant::now(), submitting: false };
        self.live().insert(handle.clone(), draft);
        Ok(handle)
    }

    /// Runs `f` on an open draft that is not being submitted, and marks it used.
    fn with_draft<T>(&self, handle: &str, f: impl FnOnce(&mut Draft) -> Result<T, DraftError>) -> Result<T, DraftError> {
        let mut map = self.live();
        let draft = map.get_mut(handle).ok_or_else(|| self.unknown(handle))?;
        if draft.submitting {
            return Err(DraftError::Submitting(handle.to_owned()));
        }
        draft.last_used = Instant::now();
        f(draft)
    }

    /// Adds a comment after checking it as the backend would; returns the new count.
    pub fn add(&self, handle: &str, comment: Comment) -> Result<usize, DraftError> {
        validate(&comment)?;
        self.with_draft(handle, |d| {
            if d.comments.len() >= MAX_COMMENTS {
                return Err(DraftError::Invalid(format!("a review can carry at most {MAX_COMMENTS} comments; this draft is full")));
            }
            d.comments.push(comment);
            Ok(d.comments.len())
        })
    }

    /// A copy of an open draft (a draft being submitted can still be looked at).
    pub fn show(&self, handle: &str) -> Result<Draft, DraftError> {
        let mut map = self.live();
        let draft = map.get_mut(handle).ok_or_else(|| self.unknown(handle))?;
        draft.last_used = Instant::now();
        Ok(draft.clone())
    }

    /// Removes a draft; returns what it held.
    pub fn discard(&self, handle: &str) -> Result<Draft, DraftError> {
        let mut map = self.live();
        match map.get(handle) {
            Some(d) if d.submitting => Err(DraftError::Submitting(handle.to_owned())),
            _ => map.remove(handle).ok_or_else(|| self.unknown(handle)),
        }
    }

    /// Marks a draft as being submitted and returns a copy to send.
    pub fn begin_submit(&self, handle: &str) -> Result<Draft, DraftError> {
        self.with_draft(handle, |d| {
            d.submitting = true;
            Ok(d.clone())
        })
    }

    /// Ends a submit: the draft goes if it was written, else it stays open as it was.
    pub fn end_submit(&self, handle: &str, written: bool) {
        let mut map = self.live();
        if written {
            map.remove(handle);
        } else if let Some(d) = map.get_mut(handle) {
            d.submitting = false;
            d.last_used = Instant::now();
        }
    }
}

/// Rejects a comment the backend would reject, so the mistake shows where it was made.
pub(super) fn validate(c: &Comment) -> Result<(), DraftError> {
    let invalid = |m: String| Err(DraftError::Invalid(m));
    for (field, value, max) in [("path", &c.path, PATH_MAX), ("body", &c.body, BODY_MAX)] {
        if value.trim().is_empty() {
            return invalid(format!("{field}: must not be blank"));
        }
        let n = value.chars().count();
        if n > max {
            return invalid(format!("{field}: must be at most {max} characters, got {n}"));
        }
        if value.contains('\0') {
            return invalid(format!("{field}: must not contain NUL characters"));
        }
    }
    if c.line < 1 {
        return invalid(format!("line: must be ≥ 1, got {}", c.line));
    }
    Ok(())
}

/// 128 bits from the OS's random source, as 32 hex digits.
fn new_handle() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}

fn describe(ttl: Duration) -> String {
    let s = ttl.as_secs();
    if s >= 60 && s.is_multiple_of(60) { format!("{} minutes", s / 60) } else { format!("{:.0?}", ttl) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(line: i32) -> Comment {
        Comment { path: "src/lib.rs".into(), line, body: "nit".into() }
    }

    #[test]
    fn handles_are_random_and_not_sequential() {
        let d = Drafts::new(Duration::from_secs(60));
        let (a, b) = (d.open(1, 1).unwrap(), d.open(1, 1).unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn drafts_of_one_instance_are_invisible_to_another() {
        let (one, two) = (Drafts::new(Duration::from_secs(60)), Drafts::new(Duration::from_secs(60)));
        let h = one.open(1, 1).unwrap();
        assert!(matches!(two.show(&h), Err(DraftError::Unknown(..))));
        assert!(matches!(two.add(&h, comment(1)), Err(DraftError::Unknown(..))));
        assert_eq!(one.add(&h, comment(1)).unwrap(), 1);
    }

    #[test]
    fn bad_comments_and_a_full_draft_are_rejected() {
        let d = Drafts::new(Duration::from_secs(60));
        let h = d.open(1, 1).unwrap();
        assert!(d.add(&h, comment(0)).unwrap_err().to_string().contains("line"));
        assert!(d.add(&h, Comment { path: " ".into(), ..comment(1) }).unwrap_err().to_string().contains("path"));
        assert!(d.add(&h, Comment { body: "x".repeat(BODY_MAX + 1), ..comment(1) }).unwrap_err().to_string().contains("body"));
        for i in 1..=MAX_COMMENTS {
            assert_eq!(d.add(&h, comment(i as i32)).unwrap(), i);
        }
        assert!(d.add(&h, comment(1)).unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn a_draft_being_submitted_is_locked_then_kept_or_gone() {
        let d = Drafts::new(Duration::from_secs(60));
        let h = d.open(1, 1).unwrap();
        d.begin_submit(&h).unwrap();
        assert!(matches!(d.add(&h, comment(1)), Err(DraftError::Submitting(_))));
        assert!(matches!(d.begin_submit(&h), Err(DraftError::Submitting(_))));
        d.end_submit(&h, false);
        assert_eq!(d.add(&h, comment(1)).unwrap(), 1);
        d.begin_submit(&h).unwrap();
        d.end_submit(&h, true);
        assert!(matches!(d.show(&h), Err(DraftError::Unknown(..))));
    }

    #[test]
    fn an_idle_draft_expires() {
        let d = Drafts::new(Duration::from_millis(1));
        let h = d.open(1, 1).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(d.show(&h), Err(DraftError::Unknown(..))));
    }
}
