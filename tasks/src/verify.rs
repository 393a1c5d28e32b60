//! Verifiers: judge the final backend state (and the final answer text), never the transcript.
//!
//! Declarative first: SQL assertions with expected values, answer-text checks, and the typed
//! escape hatch `unchanged` (tables whose rows must equal the freshly seeded state, which SQL
//! alone cannot see). An assertion with `same_as_seeded = true` instead of `expect` compares its
//! query's value with the value it had right after the reset: "no deploy was added" is then true
//! at every world scale, where a fixed count would hold at one only. A verifier that cannot run — bad SQL, backend gone — is
//! [`Verdict::CouldNotScore`], a different outcome from [`Verdict::Failed`].

use std::collections::BTreeMap;
use std::time::Instant;

use backend::PgPool;
use backend::world::{ReadOnly, RowChange};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `verify.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Verifier {
    /// Assertions over the final state.
    #[serde(default)]
    pub sql: Vec<SqlAssertion>,
    /// Tables whose rows must be exactly as seeded (e.g. "nothing was deployed"); `"*"` is every
    /// table of the world, which a verifier with no `[[sql]]` (a question, or a request that
    /// must be refused) must use: nothing anywhere may change.
    #[serde(default)]
    pub unchanged: Vec<String>,
    /// Checks on the agent's final answer.
    #[serde(default)]
    pub answer: AnswerChecks,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlAssertion {
    /// What is being checked, in words (shown when it fails).
    pub name: String,
    /// A read-only query. One row of one column compares as that value; one row as an object
    /// of its columns; several rows as an array of those; no row as null.
    pub query: String,
    /// The value the query must give …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<toml::Value>,
    /// … or `true`: the value it gave on the freshly seeded world, before the session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_as_seeded: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AnswerChecks {
    /// Each must appear in the answer (case-insensitive).
    #[serde(default)]
    pub must_mention: Vec<String>,
    /// For each group, at least one must appear (case-insensitive).
    #[serde(default)]
    pub must_mention_any: Vec<Vec<String>>,
    /// None may appear (case-insensitive): leaks, wrong picks.
    #[serde(default)]
    pub must_not_contain: Vec<String>,
    /// Relations, as `[name, value]` or `[name, [value, value, …]]` (any of them relates it): the
    /// name must appear, and at one of its mentions the nearest of all the pairs' values of the
    /// same kind (numbers compete with numbers, words with words; within the name's clause, else
    /// its sentence, else anywhere) must be its own. "Mateo Okafor has #121, Wen Nakamura #146"
    /// relates each name to its ticket; the same words with the numbers swapped do not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<Vec<PairPart>>,
}

/// One side of a pair: a phrase, or (for the value) any of several.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum PairPart {
    One(String),
    Any(Vec<String>),
}

impl PairPart {
    fn phrases(&self) -> Vec<&str> {
        match self {
            Self::One(p) => vec![p.as_str()],
            Self::Any(ps) => ps.iter().map(String::as_str).collect(),
        }
    }
}

pub use records::{Check, CheckKind, Verdict, VerifierOutcome as Outcome};

/// What the seeded world looked like right after the reset, before the session: the hashes of
/// the tables `unchanged` names and the values of the `same_as_seeded` queries (by index).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    tables: BTreeMap<String, String>,
    values: BTreeMap<usize, Value>,
}

/// `unchanged`'s word for every table of the world.
pub const EVERY_TABLE: &str = "*";

impl Verifier {
    /// Static sanity checks done at load time.
    pub fn check(&self) -> Result<(), String> {
        if self.sql.is_empty() && self.unchanged.is_empty() && self.answer == AnswerChecks::default() {
            return Err("the verifier checks nothing".into());
        }
        let well_formed = |p: &Vec<PairPart>| {
            p.len() == 2 && matches!(&p[0], PairPart::One(_)) && p.iter().all(|x| !x.phrases().is_empty() && x.phrases().iter().all(|w| !w.trim().is_empty()))
        };
        if let Some(p) = self.answer.pairs.iter().find(|p| !well_formed(p)) {
            return Err(format!("[answer] pairs: each pair is [name, value] or [name, [value, …]], none empty, not {p:?}"));
        }
        for a in &self.sql {
            if a.name.trim().is_empty() || a.query.trim().is_empty() {
                return Err("every [[sql]] needs a name and a query".into());
            }
            if a.expect.is_some() == a.same_as_seeded {
                return Err(format!("[[sql]] {:?}: give exactly one of `expect = …` or `same_as_seeded = true`", a.name));
            }
            if a.query.contains(';') {
                return Err(format!("[[sql]] {:?}: one statement per query, no ';'", a.name));
            }
        }
        for t in &self.unchanged {
            if t != EVERY_TABLE && !backend::seed::TABLES.contains(&t.as_str()) {
                return Err(format!("unchanged: unknown table {t:?} (tables: {}, or \"*\" for every one)", backend::seed::TABLES.join(", ")));
            }
        }
        if self.sql.is_empty() && !self.unchanged.iter().any(|t| t == EVERY_TABLE) {
            return Err(format!(
                "the verifier asserts no state ([[sql]]), so the task changes nothing, and then nothing anywhere may change: write `unchanged = [\"*\"]` (today {:?})",
                self.unchanged
            ));
        }
        Ok(())
    }

    /// Records what `unchanged` compares against. Call it right after the reset.
    pub async fn baseline(&self, pool: &PgPool) -> Result<Baseline, String> {
        let mut read = ReadOnly::begin(pool).await.map_err(|e| e.to_string())?;
        let mut tables = BTreeMap::new();
        for t in &self.unchanged {
            if t != EVERY_TABLE {
                tables.insert(t.clone(), read.table_hash(t).await.map_err(|e| e.to_string())?);
            }
        }
        let seeded: Vec<(usize, String)> = self.sql.iter().enumerate().filter(|(_, a)| a.same_as_seeded).map(|(i, a)| (i, a.query.clone())).collect();
        let queries: Vec<String> = seeded.iter().map(|(_, q)| q.clone()).collect();
        let rows = read.rows(&queries).await.map_err(|e| e.to_string())?;
        read.end().await.map_err(|e| e.to_string())?;
        let values = seeded.into_iter().map(|(i, _)| i).zip(rows.into_iter().map(shape)).collect();
        Ok(Baseline { tables, values })
    }

    /// sha256 of this verifier as loaded: its checks, whatever the file's comments and layout
    /// (`records::Graded::verifier_sha256`).
    pub fn sha256(&self) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(serde_json::to_string(self).expect("a verifier serialises").as_bytes()))
    }

    /// Judges the final state in `pool` and the final `answer`.
    pub async fn verify(&self, pool: &PgPool, baseline: &Baseline, answer: &str) -> Outcome {
        self.verify_with_changes(pool, baseline, answer).await.0
    }

    /// [`Self::verify`], and every row the session changed, read in the same snapshot the checks
    /// read (empty when it could not score).
    pub async fn verify_with_changes(&self, pool: &PgPool, baseline: &Baseline, answer: &str) -> (Outcome, Vec<RowChange>) {
        let started = Instant::now();
        let (result, grounding) = match ReadOnly::begin(pool).await {
            Ok(mut read) => {
                let result = self.judge(&mut read, baseline, answer).await;
                // Read in the same snapshot the checks read; a failure to read it leaves
                // grounding missing (null), never empty, and does not change the verdict.
                let grounding = match &result {
                    Ok(_) => crate::grounding::ground_in(&mut read, answer).await.ok(),
                    Err(_) => None,
                };
                // Ending a transaction that only read cannot lose anything; a failure to end
                // it is the connection's, and the pool drops that connection.
                let _ = read.end().await;
                (result, grounding)
            }
            Err(e) => (Err(e.to_string()), None),
        };
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match result {
            Ok((reasons, checks, diff)) => {
                let outcome = Outcome {
                    verdict: if reasons.is_empty() { Verdict::Passed } else { Verdict::Failed },
                    reasons,
                    elapsed_ms,
                    checks,
                    grounding,
                    class: None,
                    changed_tables: Some(backend::world::tables_of(&diff)),
                    world_diff_sha256: None,
                    graded: None,
                    collateral: None,
                };
                (outcome, diff)
            }
            Err(e) => {
                let outcome = Outcome {
                    verdict: Verdict::CouldNotScore,
                    reasons: vec![e],
                    elapsed_ms,
                    checks: Vec::new(),
                    grounding,
                    class: None,
                    changed_tables: None,
                    world_diff_sha256: None,
                    graded: None,
                    collateral: None,
                };
                (outcome, Vec::new())
            }
        }
    }

    /// Every check, held or not, and the reason of each that failed.
    async fn judge(&self, read: &mut ReadOnly, baseline: &Baseline, answer: &str) -> Result<(Vec<String>, Vec<Check>, Vec<RowChange>), String> {
        let mut failed = Vec::new();
        let mut checks = Vec::new();
        let mut check = |name: String, kind: CheckKind, negative: bool, why: Option<String>| {
            checks.push(Check { name, kind, held: why.is_none(), negative });
            failed.extend(why);
        };
        let queries: Vec<String> = self.sql.iter().map(|a| a.query.clone()).collect();
        let results = read.rows(&queries).await.map_err(|e| e.to_string())?;
        for (i, (a, rows)) in self.sql.iter().zip(results).enumerate() {
            let got = shape(rows);
            let want = match &a.expect {
                Some(v) => serde_json::to_value(v).map_err(|e| e.to_string())?,
                None => baseline.values.get(&i).cloned().ok_or_else(|| format!("no seeded value was recorded for {:?}", a.name))?,
            };
            let seeded = if a.same_as_seeded { " (as seeded)" } else { "" };
            let why = (!same(&got, &want)).then(|| format!("{}: expected {want}{seeded}, got {got}", a.name));
            check(a.name.clone(), CheckKind::State, a.same_as_seeded, why);
        }
        // Written by any statement since the world was fresh (the schema's triggers note them).
        let diff = read.world_diff().await.map_err(|e| e.to_string())?;
        let changed = backend::world::tables_of(&diff);
        if self.unchanged.iter().any(|t| t == EVERY_TABLE) {
            let why = (!changed.is_empty()).then(|| format!("{} changed, but the task must leave the world as it was", listed_tables(&changed)));
            check("every table unchanged".into(), CheckKind::State, true, why);
        } else {
            // A named table keeps its content: compared by hash, so a write that put every row
            // back as it was leaves it unchanged.
            for t in &self.unchanged {
                let before = baseline.tables.get(t).ok_or_else(|| format!("no baseline was recorded for table {t}"))?;
                let now = read.table_hash(t).await.map_err(|e| e.to_string())?;
                let why = (&now != before).then(|| format!("table {t} changed, but the task must leave it as it was"));
                check(format!("table {t} unchanged"), CheckKind::State, true, why);
            }
        }
        let lower = answer.to_lowercase();
        for m in &self.answer.must_mention {
            let why = (!mentions(&lower, m)).then(|| format!("the answer does not mention {m:?}"));
            check(format!("mentions {m:?}"), CheckKind::Answer, false, why);
        }
        for group in &self.answer.must_mention_any {
            let why = (!group.iter().any(|m| mentions(&lower, m))).then(|| format!("the answer mentions none of {group:?}"));
            check(format!("mentions one of {group:?}"), CheckKind::Answer, false, why);
        }
        for m in &self.answer.must_not_contain {
            let why = mentions(&lower, m).then(|| format!("the answer contains {m:?}, which it must not"));
            check(format!("does not contain {m:?}"), CheckKind::Answer, true, why);
        }
        let pairs: Vec<(&str, Vec<&str>)> = self.answer.pairs.iter().map(|p| (p[0].phrases()[0], p[1].phrases())).collect();
        for ((name, own), related) in pairs.iter().zip(relations(&lower, &pairs)) {
            // Two checks a pair: that the name comes with its value (an omission fails only this
            // one), and that it does not come with another (a wrong relation, said: an answer
            // that says what it must not).
            let want = match own.as_slice() {
                [one] => format!("{one:?}"),
                many => format!("one of {many:?}"),
            };
            let (given, other) = match &related {
                Related::Yes => (None, None),
                Related::NotMentioned => (Some(format!("the answer does not mention {name:?}")), None),
                Related::Nearest(other) if other.is_empty() => (Some(format!("the answer gives no value near {name:?} (wanted {want})")), None),
                Related::Nearest(other) => {
                    (Some(format!("the answer does not give {name:?} with {want}")), Some(format!("the answer gives {name:?} with {other:?}, not {want}")))
                }
            };
            check(format!("gives {name:?} with {want}"), CheckKind::Answer, false, given);
            check(format!("does not give {name:?} with another value"), CheckKind::Answer, true, other);
        }
        Ok((failed, checks, diff))
    }
}

/// "table t", or "tables a, b and c".
fn listed_tables(tables: &[String]) -> String {
    match tables {
        [one] => format!("table {one}"),
        [init @ .., last] => format!("tables {} and {last}", init.join(", ")),
        [] => "no table".into(),
    }
}

/// How a name stands to its value in an answer.
#[derive(Debug, PartialEq)]
enum Related {
    Yes,
    NotMentioned,
    /// Mentioned, but another value is nearest (empty: no value at all).
    Nearest(String),
}

/// How each `(name, value)` pair stands in the (lower-cased) answer: at one of the name's
/// mentions, the nearest value (of all the pairs', either side, not overlapping the name) is its
/// own. Nearest is looked for first within the name's clause, then its sentence, then the whole
/// answer, the first of these that holds any value. A clause ends where a sentence does (a line
/// end, `;`, or `.`, `!`, `?` before a space), at a comma not followed by a digit, and at " and ":
/// "Mateo Okafor has #121 and Wen Nakamura has #146", "#121: Mateo Okafor", "the payments team
/// owns the ledger service. The auth-lib repository is owned by checkout" each relate every pair.
fn relations(lower: &str, pairs: &[(&str, Vec<&str>)]) -> Vec<Related> {
    let spans = |term: &str| {
        let len = term.to_lowercase().len();
        occurrences(lower, term).into_iter().map(move |i| (i, i + len)).collect::<Vec<_>>()
    };
    // A number ("121", "#3") competes only with numbers, a word only with words: a title's own
    // number does not stand in the way of its status.
    let numeric = |v: &str| v.trim_start_matches('#').chars().all(|c| c.is_ascii_digit());
    let found: Vec<(usize, usize, &str)> =
        pairs.iter().flat_map(|(_, vs)| vs.iter().flat_map(|v| spans(v).into_iter().map(move |(a, b)| (a, b, *v)))).collect();
    let (sentences, clauses) = (cuts(lower, false), cuts(lower, true));
    // The segment of `cut` positions that holds byte `i`: (start, end).
    let segment = |cut: &[usize], i: usize| {
        let k = cut.partition_point(|&c| c <= i);
        (if k == 0 { 0 } else { cut[k - 1] }, cut.get(k).copied().unwrap_or(lower.len()))
    };
    pairs
        .iter()
        .map(|(name, own)| {
            let names = spans(name);
            if names.is_empty() {
                return Related::NotMentioned;
            }
            let kind = own.iter().all(|v| numeric(v));
            let mut seen = String::new();
            for &(s, e) in &names {
                let apart: Vec<&(usize, usize, &str)> = found.iter().filter(|f| (f.1 <= s || f.0 >= e) && numeric(f.2) == kind).collect();
                let within =
                    |(from, to): (usize, usize)| -> Vec<&(usize, usize, &str)> { apart.iter().copied().filter(|f| f.0 >= from && f.1 <= to).collect() };
                let pool =
                    [within(segment(&clauses, s)), within(segment(&sentences, s)), apart.clone()].into_iter().find(|p| !p.is_empty()).unwrap_or_default();
                match pool.into_iter().min_by_key(|f| if f.0 >= e { f.0 - e } else { s - f.1 }) {
                    Some(f) if own.iter().any(|o| f.2.eq_ignore_ascii_case(o)) => return Related::Yes,
                    Some(f) if seen.is_empty() => seen = f.2.to_owned(),
                    _ => {}
                }
            }
            Related::Nearest(seen)
        })
        .collect()
}

/// Where sentences (or, with `clauses`, clauses) of `text` begin: the byte after each boundary.
fn cuts(text: &str, clauses: bool) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let next = bytes.get(i + 1).copied();
        let ends = match b {
            b'\n' | b';' => true,
            b'.' | b'!' | b'?' => next.is_none_or(|n| n.is_ascii_whitespace()),
            b',' => clauses && !next.is_some_and(|n| n.is_ascii_digit()),
            _ => clauses && bytes[i..].starts_with(b" and "),
        };
        if ends {
            out.push(i + 1);
        }
    }
    out
}

/// Whether the (lower-cased) answer mentions `term`, case-insensitively. A number is a whole
/// number: a term that starts (ends) with a digit does not match where a digit precedes (follows)
/// it, so "5" is not found in "15", "#1" not in "#10", "1.5.0" not in "11.5.0" — while "ticket
/// 5," and "v1.5.0." still match.
pub fn mentions(lower_answer: &str, term: &str) -> bool {
    term.is_empty() || !occurrences(lower_answer, term).is_empty()
}

/// Where `term` is mentioned in the (lower-cased) answer by [`mentions`]' rule: byte offsets.
fn occurrences(lower_answer: &str, term: &str) -> Vec<usize> {
    let term = term.to_lowercase();
    if term.is_empty() {
        return vec![];
    }
    let starts_digit = term.starts_with(|c: char| c.is_ascii_digit());
    let ends_digit = term.ends_with(|c: char| c.is_ascii_digit());
    lower_answer
        .match_indices(&term)
        .filter(|(i, _)| {
            let before = lower_answer[..*i].chars().next_back();
            let after = lower_answer[i + term.len()..].chars().next();
            let glued_before = starts_digit && before.is_some_and(|c| c.is_ascii_digit());
            let glued_after = ends_digit && after.is_some_and(|c| c.is_ascii_digit());
            !(glued_before || glued_after)
        })
        .map(|(i, _)| i)
        .collect()
}

/// Query rows (JSON objects) in the comparison shape documented on [`SqlAssertion::query`].
fn shape(rows: Vec<Value>) -> Value {
    let single = |row: Value| match row {
        Value::Object(m) if m.len() == 1 => m.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Null),
        other => other,
    };
    match rows.len() {
        0 => Value::Null,
        1 => single(rows.into_iter().next().unwrap_or(Value::Null)),
        _ => Value::Array(rows.into_iter().map(single).collect()),
    }
}

/// JSON equality where numbers compare by value (Postgres may return 2 where TOML says 2.0).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_number_is_mentioned_only_as_a_whole_number() {
        let a = "ticket #10 has 15 comments; version 11.5.0 shipped, then v1.5.0. ticket 5, yes.";
        assert!(!mentions(a, "#1") && mentions(a, "#10"), "#1 is not #10");
        assert!(mentions(a, "5") && !mentions("it has 15 comments", "5"), "a 5 stands alone once in a");
        assert!(mentions(a, "1.5.0") && !mentions("version 11.5.0 shipped", "1.5.0") && !mentions("1.5.01", "1.5.0"));
        assert!(mentions(a, "TICKET") && mentions("priya raman", "Priya Raman"), "case-insensitive as before");
        assert!(mentions("on-call: yes", "on-call") && mentions("paymentsteam", "payments"), "words are still substrings");
    }

    #[test]
    fn rows_take_the_documented_shape() {
        assert_eq!(shape(vec![]), Value::Null);
        assert_eq!(shape(vec![json!({"n": 3})]), json!(3));
        assert_eq!(shape(vec![json!({"a": 1, "b": "x"})]), json!({"a": 1, "b": "x"}));
        assert_eq!(shape(vec![json!({"n": 1}), json!({"n": 2})]), json!([1, 2]));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(same(&json!(2), &json!(2.0)));
        assert!(!same(&json!(2), &json!("2")));
        assert!(same(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn empty_and_multi_statement_verifiers_are_rejected() {
        let empty: Verifier = toml::from_str("").unwrap();
        assert!(empty.check().unwrap_err().contains("checks nothing"));
        let two: Verifier = toml::from_str("[[sql]]\nname = \"x\"\nquery = \"SELECT 1; DELETE FROM tickets\"\nexpect = 1\n").unwrap();
        assert!(two.check().unwrap_err().contains("one statement"));
        let bad: Verifier = toml::from_str("unchanged = [\"nope\"]").unwrap();
        assert!(bad.check().unwrap_err().contains("unknown table"));
        let both: Verifier = toml::from_str("[[sql]]\nname = \"x\"\nquery = \"SELECT 1\"\nexpect = 1\nsame_as_seeded = true\n").unwrap();
        assert!(both.check().unwrap_err().contains("exactly one of"));
        let neither: Verifier = toml::from_str("[[sql]]\nname = \"x\"\nquery = \"SELECT 1\"\n").unwrap();
        assert!(neither.check().unwrap_err().contains("exactly one of"));
    }

    /// Relations are read by nearness: each name with its own value, in a list, a table, a
    /// sentence; swapped values, or a name given with no value, fail.
    #[test]
    fn pairs_relate_each_name_to_its_own_value() {
        let pairs = [("Mateo Okafor", vec!["121"]), ("Wen Nakamura", vec!["146"])];
        let rel = |answer: &str, name: &str, _value: &str| {
            let i = pairs.iter().position(|p| p.0 == name).unwrap();
            relations(&answer.to_lowercase(), &pairs).swap_remove(i)
        };
        for answer in [
            "Mateo Okafor has #121 and Wen Nakamura has #146.",
            "- #121: Mateo Okafor\n- #146: Wen Nakamura",
            "| Mateo Okafor | 121 |\n| Wen Nakamura | 146 |",
            "Ticket 121 is Mateo Okafor's; ticket 146 is Wen Nakamura's.",
            "Mateo Okafor (#121), Wen Nakamura (#146).",
            "#121 belongs to Mateo Okafor. Wen Nakamura has 146.",
        ] {
            assert_eq!(rel(answer, "Mateo Okafor", "121"), Related::Yes, "{answer}");
            assert_eq!(rel(answer, "Wen Nakamura", "146"), Related::Yes, "{answer}");
        }
        // Swapped, in any layout: not every pair holds.
        for swapped in
            ["Mateo Okafor has #146 and Wen Nakamura has #121.", "#146: Mateo Okafor\n#121: Wen Nakamura", "| Mateo Okafor | 146 |\n| Wen Nakamura | 121 |"]
        {
            let read = relations(&swapped.to_lowercase(), &pairs);
            assert!(read.iter().any(|r| *r != Related::Yes), "{swapped}: {read:?}");
        }
        assert_eq!(rel("Mateo Okafor has #146 and Wen Nakamura has #121.", "Mateo Okafor", "121"), Related::Nearest("146".into()));
        assert_eq!(rel("Mateo Okafor and Wen Nakamura work on them.", "Mateo Okafor", "121"), Related::Nearest(String::new()));
        assert_eq!(rel("Wen Nakamura has #146.", "Mateo Okafor", "121"), Related::NotMentioned);
        // A whole number: 1210 is not 121.
        assert_eq!(rel("Mateo Okafor has #1210, Wen Nakamura #146.", "Mateo Okafor", "121"), Related::Nearest("146".into()));
        // Any text: not a byte of it is a boundary by accident.
        assert_eq!(rel("Mateo Okafor — #121 … and Wen Nakamura → #146 ünd so", "Wen Nakamura", "146"), Related::Yes);
        // Values and names in two heaps relate nobody to anybody: not every pair holds.
        let heaps = relations("#146 and #121 are open: Mateo Okafor, Wen Nakamura.", &pairs);
        assert!(heaps.iter().any(|r| *r != Related::Yes), "{heaps:?}");
        let bad: Verifier = toml::from_str("unchanged = [\"*\"]\n[answer]\npairs = [[\"Mateo Okafor\"]]").unwrap();
        assert!(bad.check().unwrap_err().contains("[name, value]"));
        let bad: Verifier = toml::from_str("unchanged = [\"*\"]\n[answer]\npairs = [[\"ledger\", []]]").unwrap();
        assert!(bad.check().is_err(), "an empty set of values");
    }

    #[test]
    fn a_pair_may_take_any_of_several_values_and_numbers_compete_only_with_numbers() {
        // Any of the alternatives relates the name; a value of another pair does not.
        let pairs = [("billing", vec!["replica"]), ("ledger", vec!["does not have", "no runbook", "none"])];
        let right = "Billing has one: scale out by one replica. Ledger does not have one.";
        assert_eq!(relations(&right.to_lowercase(), &pairs), [Related::Yes, Related::Yes]);
        let swapped = relations(&"Ledger: scale out by one replica; billing has none.".to_lowercase(), &pairs);
        assert_eq!(swapped, [Related::Nearest("none".into()), Related::Nearest("replica".into())]);
        // A title with its number and its status: the number next to the title does not hide the
        // status, and each is checked against its own kind.
        let pairs =
            [("bump dependencies", vec!["merged"]), ("bump dependencies", vec!["2"]), ("log request ids", vec!["open"]), ("log request ids", vec!["1"])];
        let answer = "#1 \"Log request ids\" (open), #2 \"Bump dependencies\" (merged).";
        assert_eq!(relations(&answer.to_lowercase(), &pairs), [Related::Yes, Related::Yes, Related::Yes, Related::Yes]);
        let numbers_swapped = "#2 \"Log request ids\" (open), #1 \"Bump dependencies\" (merged).";
        let read = relations(&numbers_swapped.to_lowercase(), &pairs);
        assert_eq!((&read[0], &read[2]), (&Related::Yes, &Related::Yes), "the statuses still hold: {read:?}");
        assert_eq!((&read[1], &read[3]), (&Related::Nearest("1".into()), &Related::Nearest("2".into())), "{read:?}");
        // Written as TOML, both shapes.
        let v: Verifier =
            toml::from_str("unchanged = [\"*\"]\n[answer]\npairs = [[\"ledger\", [\"none\", \"no runbook\"]], [\"billing\", \"replica\"]]").unwrap();
        v.check().unwrap();
        assert_eq!(v.answer.pairs[0][1], PairPart::Any(vec!["none".into(), "no runbook".into()]));
    }

    /// A question (no state assertion) must keep the whole world: a list of a few tables left
    /// the others writable unseen.
    #[test]
    fn a_verifier_without_state_assertions_keeps_every_table() {
        let few: Verifier = toml::from_str("unchanged = [\"tickets\"]\n[answer]\nmust_mention = [\"x\"]").unwrap();
        let e = few.check().unwrap_err();
        assert!(e.contains(r#"unchanged = ["*"]"#) && e.contains("tickets"), "{e}");
        let answer_only: Verifier = toml::from_str("[answer]\nmust_mention = [\"x\"]").unwrap();
        assert!(answer_only.check().unwrap_err().contains(r#"unchanged = ["*"]"#));
        let all: Verifier = toml::from_str("unchanged = [\"*\"]\n[answer]\nmust_mention = [\"x\"]").unwrap();
        assert_eq!(all.check(), Ok(()));
        let write: Verifier = toml::from_str("unchanged = [\"deploys\"]\n[[sql]]\nname = \"x\"\nquery = \"SELECT 1\"\nexpect = 1\n").unwrap();
        assert_eq!(write.check(), Ok(()));
    }
}
