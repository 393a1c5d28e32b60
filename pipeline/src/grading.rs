//! Which verifier and grader an outcome was graded under (`records::Graded`), and the stored
//! final states a regrade reads (docs/regrade.md).

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// sha256 over the grading rules' source: the verifier's checks and the grounding extractor
/// (`tasks`), the outcome class and the claims it reads (`aggregate`). Any change to them is a new
/// grader.
pub fn grader_sha256() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let mut h = Sha256::new();
        for source in tasks::RULE_SOURCES.iter().chain(aggregate::graders::RULE_SOURCES.iter()) {
            h.update((source.len() as u64).to_le_bytes());
            h.update(source.as_bytes());
        }
        hex::encode(h.finalize())
    })
}

/// The versions `task` is graded under by this binary now.
pub fn graded(task: &tasks::Task, regraded_at: Option<chrono::DateTime<chrono::Utc>>) -> records::Graded {
    records::Graded { verifier_sha256: task.verifier.sha256(), grader_sha256: grader_sha256().to_owned(), regraded_at, judge: None }
}

/// The versions `task` is graded under when `judge` gives the outcome classes: the rules for the
/// rest, so the grader's hash covers both, and the judge's identity (model, endpoint,
/// instructions) beside it.
pub fn judged(task: &tasks::Task, regraded_at: Option<chrono::DateTime<chrono::Utc>>, judge: &records::JudgeInfo) -> records::Graded {
    let mut h = Sha256::new();
    for part in [grader_sha256(), "judge", &judge.model, &judge.base_url, &judge.prompt_sha256] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    records::Graded { grader_sha256: hex::encode(h.finalize()), judge: Some(judge.clone()), ..graded(task, regraded_at) }
}

/// The rows of a transcript's `world` event (`session::world_event`) as the session left them:
/// what a regrade writes back into a fresh world. `None` when the event is not one.
pub fn writes_of(event: &serde_json::Value) -> Option<Vec<backend::world::RowWrite>> {
    if event["event"] != "world" {
        return None;
    }
    event["changes"]
        .as_array()?
        .iter()
        .map(|c| {
            let values = c["columns"].as_object()?.iter().map(|(k, v)| Some((k.clone(), v.as_array()?.get(1)?.clone()))).collect::<Option<_>>()?;
            Some(backend::world::RowWrite { table: c["table"].as_str()?.to_owned(), id: c["id"].as_i64()?, op: c["op"].as_str()?.to_owned(), values })
        })
        .collect()
}
