//! The fixture experiment of `common::fixture`, with known answers: null usage, invalid sessions
//! of several reasons, an unpaired session, a could-not-score, two models and oracle floors.

use std::path::Path;

use crate::common::*;
use aggregate::metrics::Verdict;
use aggregate::{Options, PriceTable};
use records::{Role, Verdict as V};

fn build() -> (tempfile::TempDir, aggregate::Report) {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let prices = PriceTable::parse(PRICES, Path::new("prices.toml")).unwrap();
    let rep = aggregate::report(dir.path(), Some(&prices), &Options::default()).unwrap();
    (dir, rep)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn metrics_have_the_known_answers() {
    let (_dir, rep) = build();
    let s = &rep.summary;
    assert_eq!(s.models.len(), 2, "models are never pooled");
    assert_eq!(s.attrition.len(), 6);
    let a = &s.models[0];
    assert_eq!(a.model, "model-a");
    let m = &a.modules[0];
    let p = m.pattern.as_ref().unwrap();
    let c = m.control.as_ref().unwrap();
    assert_eq!((p.attempted, p.valid), (7, 6));
    assert_eq!(p.invalid.get("provider_error"), Some(&1));
    assert_eq!((p.passed, p.failed, p.could_not_score), (4, 1, 1));
    assert_eq!((p.context_exceeded, p.turn_cap_hits), (1, 0), "an overflow is a valid failure, counted apart");
    assert_eq!((p.success.successes, p.success.n), (4, 6));
    assert_eq!((p.input_tokens.n, p.input_tokens.missing), (5, 1), "null usage is counted, not zero");
    assert_eq!(p.input_tokens.median, Some(110.0));
    assert_eq!(p.input_tokens.mean, Some(110.0));
    assert_eq!((c.attempted, c.valid, c.passed), (6, 5, 5));
    assert_eq!(c.invalid.get("mcp_transport"), Some(&1));
    assert_eq!(c.tool_call_errors, 3);
    // Cost: priced for model-a, null where cached or any usage is null.
    assert_eq!((p.cost_usd.n, p.cost_usd.missing), (4, 2));
    assert!(close(p.cost_usd.median.unwrap(), 130.0 / 1e6));
    assert_eq!(s.models[1].modules[0].pattern.as_ref().unwrap().cost_usd.n, 0, "unpriced model → null, never 0");

    // Pairs: 7 keys; t2 rep3 (pattern invalid), t1 rep2 (control invalid), t2 rep4 (no control).
    let pr = &m.paired;
    assert_eq!((pr.pairs_seen, pr.pairs_used), (7, 4));
    assert_eq!(pr.dropped.get("pattern invalid (provider_error)"), Some(&1));
    assert_eq!(pr.dropped.get("control invalid (mcp_transport)"), Some(&1));
    assert_eq!(pr.dropped.get("control missing"), Some(&1));
    // Input tokens over tasks: t1's pairs −100 and −90 (mean −95), t2's one pair −90 (its other
    // is null); the mean over the two tasks is −92.5 (the pooled pair mean would weigh t1 twice),
    // and the interval is the t interval over those two task means (1 degree of freedom).
    let tok = pr.input_tokens.as_ref().unwrap();
    assert_eq!((tok.n, tok.tasks, tok.missing), (3, 2, 1));
    assert!(close(tok.mean, -92.5));
    let ci = tok.ci95.unwrap();
    let half = 12.706_204_736 * 2.5;
    assert!(close(ci.lo, -92.5 - half) && close(ci.hi, -92.5 + half), "{ci:?}");
    let suc = pr.success.as_ref().unwrap();
    assert!(close(suc.mean, -0.25));
    let turns = pr.turns.as_ref().unwrap();
    assert_eq!((turns.mean, turns.ci95.unwrap().lo, turns.ci95.unwrap().hi), (-2.0, -2.0, -2.0));

    assert_eq!(m.verdict, Verdict::Inconclusive, "4 pairs < 10");
    assert!(!m.model_too_strong, "an invalid control session means 'every time' is unknown");
    let pw = m.power.as_ref().unwrap();
    assert_eq!(pw.tasks, 2);
    assert!(pw.pairs_needed >= 2);

    // Per-task pass@k / pass^k.
    // No manifest: k is the most reps a task of the arm has — t2's 4 on the pattern arm — so
    // t1's 3 passing reps may be 3 of 4, and pass^k is unknown.
    let t1 = &m.tasks[0];
    assert_eq!((t1.pattern.k, t1.pattern.pass_at_k, t1.pattern.pass_all_k), (3, Some(true), None));
    assert_eq!((t1.control.k, t1.control.pass_at_k, t1.control.pass_all_k), (3, Some(true), None));
    let t2 = &m.tasks[1];
    assert_eq!((t2.pattern.k, t2.pattern.passed, t2.pattern.could_not_score), (4, 1, 1));
    assert_eq!((t2.pattern.pass_at_k, t2.pattern.pass_all_k), (Some(true), Some(false)));

    // Model B: control passes 1/2, so not "too strong".
    let b = &s.models[1].modules[0];
    assert_eq!(b.pattern.as_ref().unwrap().invalid.get("harness_error"), Some(&1));

    // Oracle floors kept apart.
    assert_eq!(s.oracle_floors.len(), 1);
    assert_eq!(s.oracle_floors[0].total_estimated_tokens.get(&Role::Pattern), Some(&320));
    assert_eq!(s.oracle_floors[0].total_estimated_input_tokens.get(&Role::Control), Some(&1800));
    assert_eq!(s.oracle_floors[0].total_estimated_input_tokens.get(&Role::Pattern), None, "a partial sum is no total");
    assert!(s.oracle_floors[0].rows.iter().all(|r| r.estimated_output_tokens == Some(10)), "(40 argument bytes + no answer) / 4");
    assert_eq!(s.oracle_floors[0].per_session[&Role::Control].estimated_output_tokens, Some(10.0));
    assert!(s.models.iter().all(|m| m.provider != records::Provider::Oracle));
}

#[test]
fn verdicts_follow_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    // 12 pairs over 6 tasks: same success, pattern saves ~30% tokens → confirmed; module m2
    // regresses → negative.
    for rep in 1..=2 {
        for task in ["t1", "t2", "t3", "t4", "t5", "t6"] {
            let t = task[1..].parse::<u64>().unwrap();
            let j = t * 13 + rep as u64 * 7;
            write(dir.path(), &record("m", "m1", "pattern", task, rep, ok(V::Passed, 700 + j, 2)), false);
            write(dir.path(), &record("m", "m1", "control", task, rep, ok(V::Passed, 1000 + 2 * j, 3)), false);
            let pv = if t <= 5 { V::Failed } else { V::Passed };
            write(dir.path(), &record("m", "m2", "pattern", task, rep, ok(pv, 500, 2)), false);
            write(dir.path(), &record("m", "m2", "control", task, rep, ok(V::Passed, 1000, 3)), false);
        }
    }
    // At the default margin six tasks cannot show the pattern within 10 points of the control.
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let ms = &rep.summary.models[0].modules;
    assert_eq!(ms[0].verdict, Verdict::Inconclusive, "{}", ms[0].verdict_reason);
    assert!(ms[0].verdict_reason.starts_with("input tokens are lower, but success is not shown within 10 points of the control's"), "{}", ms[0].verdict_reason);
    assert!(rep.markdown.contains("the margin of 10 points"), "the rules state the margin");
    assert_eq!(rep.summary.method.success_margin, Some(0.10));
    assert_eq!(ms[1].verdict, Verdict::Negative, "a token saving with a success regression is negative");
    // A margin the design can show (its interval starts at −28 points) confirms.
    let wide = aggregate::report(dir.path(), None, &Options { success_margin: 0.30, ..Options::default() }).unwrap();
    let ms = &wide.summary.models[0].modules;
    assert_eq!(ms[0].verdict, Verdict::Confirmed, "{}", ms[0].verdict_reason);
    assert!(ms[0].verdict_reason.starts_with("success shown not worse than the control's by more than 30 points"), "{}", ms[0].verdict_reason);
    assert!(ms[0].model_too_strong);
    assert!(wide.markdown.contains("too strong"));
    assert_eq!(ms[1].verdict, Verdict::Negative, "a token saving with a success regression is negative, whatever the margin");
}

#[test]
fn snapshots_of_markdown_and_json() {
    let (_dir, rep) = build();
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    for (name, got) in [("fixture.md", &rep.markdown), ("fixture.json", &rep.json)] {
        let path = snap.join(name);
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&path, got).unwrap();
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != &want {
            let first = got.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(got.lines().count().min(want.lines().count()));
            panic!(
                "{name} changed at line {}:\n  got:  {:?}\n  want: {:?}\nrerun with UPDATE_SNAPSHOTS=1 and review the diff",
                first + 1,
                got.lines().nth(first),
                want.lines().nth(first)
            );
        }
    }
    // The JSON reads back into the same summary (roles and providers as their record strings).
    // (Compared field by field: floats do not survive a decimal round trip bit for bit.)
    let back: aggregate::Summary = serde_json::from_str(&rep.json).unwrap();
    let roles = |s: &aggregate::Summary| s.attrition.iter().map(|r| (r.provider, r.role)).collect::<Vec<_>>();
    assert_eq!(roles(&back), roles(&rep.summary));
    assert_eq!(back.oracle_floors[0].total_estimated_tokens, rep.summary.oracle_floors[0].total_estimated_tokens);
    assert!(rep.json.contains("\"role\": \"pattern\"") && rep.json.contains("\"provider\": \"openai_compatible\""));
    // What was found comes first, and each module's headline says attempted vs valid sessions
    // (with the invalid reasons) before any metric; the attrition table comes before the
    // per-model details.
    let md = &rep.markdown;
    let (notices, headline, attr, model) =
        (md.find("> No record has a fingerprint").unwrap(), md.find("## Headline").unwrap(), md.find("## Attrition").unwrap(), md.find("\n## Model").unwrap());
    assert!(notices < headline && headline < attr && attr < model);
    let valid = md.find("- sessions, valid / attempted: pattern 6/7 (provider_error: 1) · control 5/6 (mcp_transport: 1)").unwrap();
    assert!(headline < valid && valid < md.find("- success rate [Wilson 95%]: pattern 66.7%").unwrap());
    // The MCP revision the sessions spoke, counted from what each server answered.
    let sessions = rep.summary.attrition.iter().map(|a| a.attempted).sum::<usize>();
    assert_eq!(rep.summary.provenance.protocols.get("2025-11-25"), Some(&sessions), "{:?}", rep.summary.provenance.protocols);
    assert!(md.contains(&format!("| MCP revision spoken | 2025-11-25 ({sessions} sessions) |")), "{md}");
}

#[test]
fn charts_render() {
    let (dir, rep) = build();
    assert!(rep.svg.trim_start().starts_with("<svg") && rep.svg.contains("</svg>"));
    let bars = aggregate::chart::bar_count(&rep.summary);
    assert_eq!(bars, 2 * 3 * 2, "2 models × 3 panels × 2 arms");
    assert!(rep.svg.matches("<rect").count() >= bars);
    let w = rep.write(dir.path()).unwrap();
    let png = std::fs::read(&w.png).unwrap();
    assert!(png.len() > 1000);
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // The written outputs do not break a re-read of the folder.
    aggregate::report(dir.path(), None, &Options::default()).unwrap();
}

#[test]
fn html_is_self_contained() {
    let (_dir, rep) = build();
    let h = &rep.html;
    // Nothing the page could fetch: no URL, no linked stylesheet or font, no external script.
    assert!(!h.contains("://"), "no URL at all");
    assert!(!h.contains("<link") && !h.contains(" src=") && !h.contains("url(") && !h.contains("@import"));
    assert_eq!(h.matches("<script").count(), 1, "one small inline script");
    let script = &h[h.find("<script>").unwrap()..h.find("</script>").unwrap()];
    assert!(!script.contains("fetch(") && !script.contains("XMLHttpRequest") && !script.contains("import("), "{script}");
    assert!(script.len() < 4096, "small: {} bytes", script.len());
    assert!(h.contains("<svg") && h.contains("<table>"));
    assert!(h.contains("&#60;do the task&#62; &#38; report"), "transcripts inline and escaped");
    assert_eq!(h.matches("<details class=\"session\"").count(), 21, "one conversation per session of the fixture");
    assert!(rep.session_pages.is_empty(), "a small experiment keeps every conversation inline");
}

#[test]
fn malformed_record_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let bad = dir.path().join("model-a__m1_pattern/t9__rep1.json");
    std::fs::write(&bad, "{\"experiment\": 1}").unwrap();
    let e = aggregate::report(dir.path(), None, &Options::default()).unwrap_err();
    assert!(matches!(e, aggregate::AggregateError::MalformedRecord { .. }));
    assert!(e.to_string().contains("t9__rep1.json"), "{e}");
    // A folder with neither a manifest nor record folders is no experiment at all.
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(aggregate::report(empty.path(), None, &Options::default()), Err(aggregate::AggregateError::NotAnExperiment { .. })));
}

#[test]
fn the_example_price_table_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("prices.example.toml");
    let t = PriceTable::load(&path).unwrap();
    assert!(t.models.contains_key("example-model-id"));
    let bad = PriceTable::parse("[models.x]\ninput = -1.0\noutput = 1.0\n", Path::new("p.toml")).unwrap_err();
    assert!(bad.to_string().contains("p.toml"), "{bad}");
}

/// A catalogue module's records carry retrieval: the module table shows, per arm, how many needed
/// tools a search found (and at what rank) and the calls to unconnected tools — beside success,
/// which they do not change; an arm that searched nothing reads "listed, not searched".
#[test]
fn retrieval_is_reported_beside_success_and_never_folded_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let with = |r: records::SessionRecord| {
        let searched = r.role == Role::Pattern;
        let retrieval = records::Retrieval {
            needed: vec!["customers_list".into(), "tickets_create".into()],
            best_rank: if searched { vec![Some(1), if r.rep == 1 { Some(3) } else { None }] } else { vec![None, None] },
            searches: if searched { 2 } else { 0 },
            unconnected_calls: if searched { 0 } else { 1 },
        };
        records::SessionRecord { retrieval: Some(retrieval), ..r }
    };
    pairs(dir.path(), "m", &["t1", "t2"], 1..=2, with);
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let m = &rep.summary.models[0].modules[0];
    let (p, c) = (m.pattern.as_ref().unwrap().retrieval.as_ref().unwrap(), m.control.as_ref().unwrap().retrieval.as_ref().unwrap());
    // Four pattern sessions need two tools each: 4 + 2 found (rep 1 found the second at rank 3).
    assert_eq!((p.needed, p.found, p.searches, p.unconnected_calls), (8, 6, 8, 0));
    assert!(close(p.recall.unwrap(), 0.75) && close(p.mean_best_rank.unwrap(), (4.0 + 2.0 * 3.0) / 6.0), "{p:?}");
    assert_eq!((c.recall, c.found, c.unconnected_calls), (None, 0, 4));
    assert_eq!(m.pattern.as_ref().unwrap().success.rate, Some(1.0), "retrieval does not move success");
    let table = tables(&rep.document).into_iter().find(|t| t.rows.iter().any(|r| r[0].starts_with("needed tools found"))).expect("the retrieval rows");
    let row = |label: &str| table.rows.iter().find(|r| r[0].starts_with(label)).unwrap().clone();
    assert_eq!(row("needed tools found")[1], "6/8 (75.0%), mean rank 1.7");
    assert_eq!(row("needed tools found")[2], "listed, not searched");
    assert_eq!(row("calls to unconnected tools")[2], "4 in 0 searches");
    // A module without a catalogue has no such rows.
    let plain = tempfile::tempdir().unwrap();
    pairs(plain.path(), "m", &["t1"], 1..=2, |r| r);
    let rep = aggregate::report(plain.path(), None, &Options::default()).unwrap();
    assert!(tables(&rep.document).iter().all(|t| t.rows.iter().all(|r| !r[0].starts_with("needed tools found"))));
}

/// Outcome classes, from the verifier's checks and the final answer's text alone: each class
/// once, counted per arm with Wilson intervals, shown in their own table; success unchanged.
#[test]
fn outcome_classes_read_the_checks_and_the_answer_only() {
    use records::{Check, CheckKind::*};
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, kind, held| Check { name: name.into(), kind, held, negative: false };
    let with = |r: records::SessionRecord, answer: Option<&str>, checks: Vec<Check>| {
        let mut r = r;
        r.final_answer = answer.map(str::to_owned);
        if let Some(v) = r.verifier.as_mut() {
            v.checks = checks;
        }
        r
    };
    let failed = |task: &str| record("m", "m1", "pattern", task, 1, ok(V::Failed, 100, 2));
    let cases = [
        // A passed session is correct whatever its answer says.
        with(record("m", "m1", "pattern", "t1", 1, ok(V::Passed, 100, 2)), Some("I could not, sorry."), vec![check("row", State, true)]),
        // The work was done, the answer misses a name it had to mention.
        with(failed("t2"), Some("Done: the ticket is assigned."), vec![check("row", State, true), check("mentions \"Lena\"", Answer, false)]),
        // It says it is done; the state says otherwise.
        with(failed("t3"), Some("Ticket 77 is now resolved."), vec![check("ticket 77 is resolved", State, false), check("mentions \"77\"", Answer, true)]),
        // It says it could not.
        with(failed("t4"), Some("I couldn't find a customer by that name."), vec![check("row", State, false)]),
        // It hedges.
        with(failed("t5"), Some("I think it might be resolved now."), vec![check("row", State, false)]),
        // No answer at all.
        with(failed("t6"), None, vec![check("row", State, false)]),
    ];
    for r in &cases {
        write(dir.path(), r, false);
        let mut c = r.clone();
        c.role = Role::Control;
        c.server = "m1_control".into();
        write(dir.path(), &c, false);
    }
    // The words of a tool call earn nothing: the transcript says "could not", the answer states.
    let t7 = with(failed("t7"), Some("All three tickets were closed."), vec![check("closed", State, false)]);
    write(dir.path(), &t7, false);
    std::fs::write(
        cell_dir(dir.path(), &t7).join("t7__rep1.transcript.jsonl"),
        "{\"event\":\"call\",\"name\":\"tickets_update\",\"result\":\"could not update: no such ticket\"}\n",
    )
    .unwrap();
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let p = &rep.summary.models[0].modules[0].pattern.as_ref().unwrap().outcome_classes;
    let n = |label: &str| p.classes.iter().find(|k| serde_json::to_value(k.class).unwrap() == label).unwrap().n;
    assert_eq!(p.scored, 7);
    assert_eq!([n("correct"), n("partial"), n("wrong_confident"), n("honest_failure"), n("ambiguous"), n("no_answer")], [1, 1, 2, 1, 1, 1], "{p:?}");
    assert!(close(p.partial_checks_held_mean.unwrap(), 0.5));
    assert_eq!(rep.summary.models[0].modules[0].pattern.as_ref().unwrap().success.successes, 1, "success is unchanged");
    let table = tables(&rep.document).into_iter().find(|t| t.header[0] == "outcome class").expect("the classes table");
    let row = table.rows.iter().find(|r| r[0] == "wrong but confident").unwrap();
    assert!(row[1].starts_with("2 / 7 (28.6%) ["), "{row:?}");
    assert!(row[2].starts_with("1 / 6 (16.7%) ["), "{row:?}");
}

/// Adoption: per arm the tools called, the pattern's calls to the functions only it is offered
/// (a control's share is a structural zero), and wasted calls — errors, and exact repeats by the
/// arguments' hash; unknown where a record did not keep it.
#[test]
fn adoption_counts_own_tools_waste_and_exact_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let call = |name: &str, args: Option<&str>, is_error: bool| records::ToolCallRecord {
        turn: 1,
        kind: records::CallKind::Tool,
        name: name.into(),
        args_bytes: 2,
        result_bytes: 2,
        is_error,
        invalid_arguments: false,
        unknown_tool: false,
        distractor: false,
        latency_ms: 1.0,
        at_ms: None,
        arguments_sha256: args.map(records::outcome::arguments_sha256),
    };
    let mut p = record("m", "m1", "pattern", "t1", 1, ok(V::Passed, 100, 2));
    p.offered.functions = vec!["run_plan".into(), "customers_list".into()];
    p.tool_calls = vec![
        call("customers_list", Some(r#"{"name": "Globex"}"#), false),
        call("run_plan", Some(r#"{"a": 1, "b": 2}"#), true),
        call("run_plan", Some(r#"{"b": 2, "a": 1}"#), false),
        call("run_plan", Some(r#"{"a": 3}"#), false),
    ];
    let mut c = record("m", "m1", "control", "t1", 1, ok(V::Passed, 200, 4));
    c.offered.functions = vec!["customers_list".into(), "tickets_create".into()];
    c.tool_calls = vec![call("customers_list", None, false), call("tickets_create", Some("{}"), false)];
    write(dir.path(), &p, false);
    write(dir.path(), &c, false);
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    let m = &rep.summary.models[0].modules[0];
    let (pa, ca) = (&m.pattern.as_ref().unwrap().adoption, &m.control.as_ref().unwrap().adoption);
    assert_eq!((pa.calls, pa.distinctive_calls, pa.errors, pa.repeats), (4, Some(3), 1, Some(1)), "{pa:?}");
    assert!(close(pa.distinctive_share.unwrap(), 0.75));
    assert_eq!((pa.by_tool[0].tool.as_str(), pa.by_tool[0].calls), ("run_plan", 3));
    assert_eq!((ca.distinctive_calls, ca.repeats), (None, None), "the control has no own tools; one call kept no arguments");
    let table = tables(&rep.document).into_iter().find(|t| t.h2 == "Adoption").expect("the adoption section");
    assert_eq!(table.rows[0][4], "3 (75.0%)");
    assert_eq!(table.rows[1][4], "structural 0");
    assert_eq!(table.rows[1][6], "unknown (arguments not kept)");
}

/// Oracle records counted in `tokenizers` (one per task and arm, in order t1 pattern, t1
/// control, t2 pattern, t2 control), as a run with a known tokenizer writes them.
fn counted_oracle(tokenizers: [Option<&str>; 4]) -> aggregate::Report {
    let dir = tempfile::tempdir().unwrap();
    let cells = [("pattern", "t1"), ("control", "t1"), ("pattern", "t2"), ("control", "t2")];
    for ((role, task), tokenizer) in cells.into_iter().zip(tokenizers) {
        let mut r = record("oracle", "m1", role, task, 1, S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) });
        let o = r.oracle.as_mut().unwrap();
        o.estimated_input_tokens = Some(1000);
        o.tokenizer = tokenizer.map(str::to_owned);
        if tokenizer.is_some() {
            (o.definitions_tokens, o.input_tokens, o.output_tokens) = (Some(90), Some(if task == "t1" { 800 } else { 1000 }), Some(12));
        }
        write(dir.path(), &r, true);
    }
    aggregate::report(dir.path(), None, &Options::default()).unwrap()
}

#[test]
fn oracle_counts_are_shown_with_their_tokenizer_and_never_mixed() {
    let rep = counted_oracle([Some("o200k_base"); 4]);
    let f = &rep.summary.oracle_floors[0];
    assert_eq!(f.tokenizer.as_deref(), Some("o200k_base"));
    let p = &f.per_session[&Role::Pattern];
    assert_eq!((p.definitions_bytes, p.definitions_tokens, p.input_tokens, p.output_tokens), (Some(400.0), Some(90.0), Some(900.0), Some(12.0)));
    // The estimate stays beside the count.
    assert_eq!(p.estimated_input_tokens, Some(1000.0));
    let footprint =
        tables(&rep.document).into_iter().find(|t| t.header.first().is_some_and(|h| h == "module") && t.header.contains(&"tokenizer".to_string())).unwrap();
    assert_eq!(footprint.rows[0], ["m1", "pattern", "m1_pattern", "400", "90", "900", "12", "o200k_base"]);
    assert!(rep.markdown.contains("Counted, not estimated, where the run knew the tokenizer (o200k_base)"), "the label is in the text");

    // Two tokenizers in one module, or one arm without: no count at all, never a mixed one.
    for tokenizers in [[Some("o200k_base"), Some("o200k_base"), Some("cl100k_base"), Some("o200k_base")], [Some("o200k_base"), None, Some("o200k_base"), None]]
    {
        let rep = counted_oracle(tokenizers);
        let f = &rep.summary.oracle_floors[0];
        assert_eq!(f.tokenizer, None, "{tokenizers:?}");
        assert!(f.per_session.values().all(|m| m.input_tokens.is_none() && m.definitions_tokens.is_none()), "{tokenizers:?}");
        assert!(f.per_session.values().all(|m| m.estimated_input_tokens == Some(1000.0)), "the estimates stay");
    }
    let rep = counted_oracle([None; 4]);
    let footprint = tables(&rep.document).into_iter().find(|t| t.header.contains(&"tokenizer".to_string())).unwrap();
    assert_eq!(footprint.rows[0], ["m1", "pattern", "m1_pattern", "400", "—", "—", "—", "none: estimates only"]);
}
