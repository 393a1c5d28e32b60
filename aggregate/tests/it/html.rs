//! The page a person reads: headline first, a chart drawn at the size shown, provenance, and
//! every session as a conversation (the browser test in pipeline/tests/it/report_browser.rs renders
//! it for real).

use std::path::Path;

use crate::common::*;
use records::{InvalidReason, TurnRecord, Usage, Verdict as V};

/// What the agent writes for a session that looked a user up, got an error for a ticket and
/// answered: the event shapes of agent/src/session.rs.
fn model_transcript() -> String {
    [
        r#"{"event":"start","params":{"model":"m","temperature":0.0},"turn_cap":20}"#,
        r#"{"event":"offered","functions":["users_list","tickets_get"],"definitions":[{"type":"function","function":{"name":"users_list","description":"DEFINITION-TEXT-NOT-INLINED"}}]}"#,
        r#"{"event":"message","turn":0,"message":{"role":"system","content":"You are an assistant that completes the user's request.\nSecond line."}}"#,
        r#"{"event":"message","turn":0,"message":{"role":"user","content":"Move Lena's open tickets to Jonas."}}"#,
        r#"{"event":"response","turn":1,"latency_ms":812.0,"retries":0,"body":{"usage":{"prompt_tokens":1123}}}"#,
        r#"{"event":"message","turn":1,"message":{"role":"assistant","content":"Let me look her up.","tool_calls":[{"id":"c1","type":"function","function":{"name":"users_list","arguments":"{\"q\":\"Lena Novak\"}"}},{"id":"c2","type":"function","function":{"name":"tickets_get","arguments":"{\"id\": 7"}}]}}"#,
        r#"{"event":"call","turn":1,"tool_call_id":"c1","name":"users_list","arguments":"{\"q\":\"Lena Novak\"}","result":"{\"data\":[{\"id\":7,\"name\":\"Lena Novak\"}]}","is_error":false,"invalid_arguments":false,"unknown_tool":false,"latency_ms":3.0}"#,
        r#"{"event":"message","turn":1,"message":{"role":"tool","tool_call_id":"c1","content":"{\"data\":[{\"id\":7,\"name\":\"Lena Novak\"}]}"}}"#,
        r#"{"event":"call","turn":1,"tool_call_id":"c2","name":"tickets_get","arguments":"{\"id\": 7","result":"Error: the arguments for tickets_get could not be used","is_error":true,"invalid_arguments":true,"unknown_tool":false,"latency_ms":0.0}"#,
        r#"{"event":"response","turn":2,"latency_ms":640.0,"retries":1,"body":{}}"#,
        r#"{"event":"message","turn":2,"message":{"role":"assistant","content":"Done: <moved> & notified."}}"#,
        r#"{"event":"end","validity":{"class":"valid"},"final_answer":"Done: <moved> & notified."}"#,
        r#"{"event":"world","changes":[{"table":"customers","id":4,"op":"updated","columns":{"tier":["gold","bronze"]}},{"table":"tickets","id":301,"op":"updated","columns":{"assignee_id":[7,9]}}]}"#,
    ]
    .join("\n")
        + "\n"
}

fn oracle_transcript() -> String {
    [
        r#"{"event":"start","provider":"oracle","task":"Move Lena's open tickets to Jonas."}"#,
        r#"{"event":"call","name":"users_list","arguments":{"q":"Lena Novak"},"result":"{\"data\":[]}","is_error":false}"#,
        r#"{"event":"answer","text":"Moved 2 tickets."}"#,
    ]
    .join("\n")
        + "\n"
}

fn turns() -> Vec<TurnRecord> {
    let turn = |index, prompt, cached, completion, retries, latency_ms| TurnRecord {
        index,
        usage: Usage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            cached_prompt_tokens: Some(cached),
            reasoning_tokens: None,
            total_tokens: None,
        },
        retries,
        latency_ms,
        at_ms: None,
        finish_reason: None,
        tool_calls: 0,
        extras: Default::default(),
    };
    vec![turn(1, 1123, 561, 40, 0, 812.0), turn(2, 1290, 1100, 12, 1, 640.0)]
}

/// Twelve pairs of model "m" with conversations, one failed and one invalid session, plus the
/// oracle.
fn experiment(dir: &Path) {
    write_manifest(dir, &manifest(&["m", "oracle"], &["t1", "t2"], 6));
    pairs(dir, "m", &["t1", "t2"], 1..=6, |mut r| {
        if r.task == "t1" && r.rep == 2 && r.role == records::Role::Pattern {
            r.verifier = Some(records::VerifierOutcome {
                verdict: V::Failed,
                reasons: vec!["ticket 301 is still assigned to Lena".into()],
                elapsed_ms: 2.0,
                checks: vec![],
                grounding: None,
                class: None,
                changed_tables: None,
                world_diff_sha256: None,
                graded: None,
                collateral: None,
            });
        }
        r.turn_records = turns();
        r
    });
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "json") && !entry.ends_with("manifest.json") {
            std::fs::write(entry.with_extension("transcript.jsonl"), model_transcript()).unwrap();
        }
    }
    // It replaces the passing session of t2 rep 6, and left no transcript.
    let invalid = record("m", "m1", "pattern", "t2", 6, bad(InvalidReason::ProviderError));
    std::fs::remove_file(write(dir, &invalid, false).with_extension("transcript.jsonl")).unwrap();
    for role in ["pattern", "control"] {
        let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
        let path = write(dir, &record("oracle", "m1", role, "t1", 1, s), false);
        std::fs::write(path.with_extension("transcript.jsonl"), oracle_transcript()).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

fn report(dir: &Path) -> aggregate::Report {
    aggregate::report(dir, None, &opts()).unwrap()
}

#[test]
fn the_page_says_what_was_found_first() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path());
    let h = report(dir.path()).html;
    assert!(h.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"));
    let at = |needle: &str| h.find(needle).unwrap_or_else(|| panic!("{needle} missing"));
    let order = ["id=\"headline\"", "id=\"chart\"", "id=\"attrition\"", "id=\"provenance\"", "id=\"method\"", "id=\"sessions\""].map(at);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "headline, chart, tables, provenance, method, sessions: {order:?}");
    // The headline: per module the verdict, the three metrics with intervals, attempted vs valid.
    let headline = &h[order[0]..order[1]];
    assert!(headline.contains("class=\"badge v-"), "{headline}");
    for metric in ["success rate [Wilson 95%]", "turns per session, mean [95% CI]", "input tokens per session, mean [95% CI]"] {
        assert!(headline.contains(metric), "{metric}");
    }
    assert!(headline.contains("valid / attempted sessions: pattern 11/12 (provider_error: 1) · control 12/12"), "{headline}");
    assert!(headline.contains("difference, the 10 pairs where both passed"), "the cost of success is beside the all-pairs difference");
    // Every table scrolls inside its own box on a narrow screen.
    assert_eq!(h.matches("<table>").count(), h.matches("<div class=\"table-wrap\"><table>").count(), "every table in its scrolling box");
    assert!(h.contains("<div class=\"table-wrap\"><table>\n<tr><th>experiment</th>"));
}

#[test]
fn sessions_read_as_conversations() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path());
    let h = report(dir.path()).html;
    let first = &h[h.find("<details class=\"session\" id=\"s0\"").unwrap()..];
    let first = &first[..first.find("</details>\n<details").unwrap()];
    // Filters and sorting read these.
    assert!(first.contains("data-model=\"m\" data-module=\"m1\" data-arm=\"control\" data-task=\"t1\" data-outcome=\"passed\" data-tokens=\"202\" data-turns=\"4\" data-calls=\"1\""), "{first}");
    // The messages in order, by role.
    let classes: Vec<&str> = first.match_indices("<div class=\"msg ").map(|(i, m)| first[i + m.len()..].split('"').next().unwrap()).collect();
    assert_eq!(
        classes,
        ["system", "system", "user", "assistant", "tool", "tool error", "assistant", "world"],
        "offered, system, user, assistant, two results, answer, the world's changes"
    );
    // What the session changed; none of it outside the footprint in this session's record.
    assert!(first.contains("2 rows changed, all inside the task's footprint"), "{first}");
    assert!(first.contains("<code>assignee_id</code>: 7 → 9") && !first.contains("class=\"collateral\""), "{first}");
    // The fixture's one collateral write (t1, pattern, rep 1: customer 4's tier) is marked.
    let pattern = &h[h.find("data-arm=\"pattern\" data-task=\"t1\" data-outcome=\"passed\"").unwrap()..];
    let pattern = &pattern[..pattern.find("\n<details class=\"session\"").unwrap()];
    assert!(pattern.contains("1 outside the task's footprint (collateral)"), "{pattern}");
    assert!(
        pattern.contains("<tr class=\"collateral\"><td>customers</td><td>4</td><td>updated · <span class=\"err\">collateral: untouched table</span>"),
        "{pattern}"
    );
    assert!(pattern.contains("<div class=\"outside\"><code>tier</code>: &#34;gold&#34; → &#34;bronze&#34;</div>"), "{pattern}");
    assert!(pattern.contains("<tr><td>tickets</td><td>301</td>"), "{pattern}");
    assert!(
        first.contains("calls <span class=\"name\">users_list</span><pre>{\n  &#34;q&#34;: &#34;Lena Novak&#34;\n}</pre>"),
        "arguments pretty-printed: {first}"
    );
    assert!(first.contains("calls <span class=\"name\">tickets_get</span> <span class=\"err\">arguments are not a JSON object</span>"));
    assert!(first.contains("result of tickets_get · 0 ms · <span class=\"err\">refused: arguments not usable</span>"));
    assert!(first.contains("&#34;name&#34;: &#34;Lena Novak&#34;"), "the result pretty-printed");
    assert!(first.contains("assistant · turn 1<span class=\"usage\">input 1,123 (cached 561) · output 40 · 812 ms</span>"), "{first}");
    assert!(first.contains("input 1,290 (cached 1,100) · output 12 · 640 ms · 1 retry"));
    assert!(first.contains("Done: &#60;moved&#62; &#38; notified."), "escaped");
    assert!(!h.contains("DEFINITION-TEXT-NOT-INLINED"), "function definitions stay in the transcript file");
    assert!(first.contains("2 functions, "), "{first}");
    assert!(first.contains("<a href=\"m__m1_control/t1__rep1.transcript.jsonl\">transcript</a>"), "links beside the report");
    // The verifier's reasons beside the failed session.
    let failed = &h[h.find("data-task=\"t1\" data-outcome=\"failed\"").unwrap()..];
    assert!(
        failed[..failed.find("\n<details class=\"session\"").unwrap()]
            .contains("<dt>verifier's reasons</dt><dd><ul><li>ticket 301 is still assigned to Lena</li>")
    );
    // The invalid one says why, and has no transcript.
    let invalid = &h[h.find("data-outcome=\"invalid\"").unwrap()..];
    let invalid = &invalid[..invalid.find("</details>").unwrap()];
    assert!(invalid.contains("invalid: provider_error</span> — boom") && invalid.contains("No transcript beside this record."), "{invalid}");
}

#[test]
fn oracle_sessions_show_their_plan_and_a_labelled_estimate() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path());
    let h = report(dir.path()).html;
    let o = &h[h.find("data-model=\"oracle\"").unwrap()..];
    let o = &o[..o.find("</details>").unwrap()];
    assert!(o.contains("data-tokens=\"900\" data-turns=\"\" data-calls=\"1\""), "sorted by its estimate, no turns: {o}");
    assert!(o.contains("<span>oracle plan, 1 call</span><span>≈900 input tokens (estimate)</span>"), "{o}");
    assert!(!o.contains("turns 0") && !o.contains("null"), "{o}");
    assert!(o.contains("<div class=\"msg user\"><div class=\"who\">task</div>"));
    assert!(o.contains("oracle call · users_list") && o.contains("&#34;q&#34;: &#34;Lena Novak&#34;"));
    assert!(o.contains("<div class=\"who\">answer</div><div class=\"text\">Moved 2 tickets.</div>"));
    assert!(o.contains("≈900 — an estimate (turns)"), "{o}");
}

#[test]
fn past_the_budget_conversations_get_pages_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    // 40 sessions of 100 KB of results each: more than the page keeps inline.
    let big = "x".repeat(10_000);
    pairs(dir.path(), "m", &["t1", "t2"], 1..=10, |r| r);
    let line = format!(r#"{{"event":"call","turn":1,"tool_call_id":"c","name":"n","arguments":"{{}}","result":"{big}","is_error":false}}"#);
    let transcript = std::iter::repeat_n(line.as_str(), 10).collect::<Vec<_>>().join("\n");
    for p in walk(dir.path()) {
        std::fs::write(p.with_extension("transcript.jsonl"), &transcript).unwrap();
    }
    let rep = report(dir.path());
    assert!(!rep.session_pages.is_empty() && rep.session_pages.len() < 40, "some inline, the rest linked: {}", rep.session_pages.len());
    assert!(rep.html.len() < aggregate::html::INLINE_BUDGET + 512 * 1024, "{} bytes", rep.html.len());
    let (name, page) = &rep.session_pages[0];
    assert!(rep.html.contains(&format!("<a href=\"report-sessions/{name}\">open it</a>")), "{name}");
    assert!(
        page.contains("<a href=\"../report.html#s") && page.contains(&big) && page.contains("href=\"../m__m1_"),
        "links back and to the files beside the report"
    );
    let w = rep.write(dir.path()).unwrap();
    assert_eq!(w.session_pages.len(), rep.session_pages.len());
    assert!(w.session_pages.iter().all(|p| p.is_file()));
    // The report's own pages are not records, nor strays of the layout.
    let again = report(dir.path());
    assert_eq!(again.markdown, rep.markdown);
    // A second write leaves no stale page behind.
    std::fs::write(dir.path().join("report-sessions/stale.html"), "old").unwrap();
    again.write(dir.path()).unwrap();
    assert!(!dir.path().join("report-sessions/stale.html").exists());
}

#[test]
fn provenance_is_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest(&["m"], &["t1"], 2);
    m.command = vec!["pipeline".into(), "--models".into(), "m".into(), "--header".into(), "X-Key=<redacted>".into(), "--task".into(), "two words".into()];
    m.git_commit = Some("0123456789abcdef".into());
    m.git_dirty = Some(true);
    m.models[0].seed = Some(u64::MAX);
    m.models[0].max_tokens = Some(512);
    m.preflight = Some(
        serde_json::json!({"m": {"passed": true, "checks": [{"name": "endpoint", "passed": true, "detail": ""}, {"name": "native_tool_calls", "passed": true, "detail": ""}]}}),
    );
    write_manifest(dir.path(), &m);
    pairs(dir.path(), "m", &["t1"], 1..=2, fingerprinted);
    let inv = aggregate::Invocation {
        generator: Some("pipeline 9.9.9".into()),
        command: Some(vec!["pipeline".into(), "aggregate".into()]),
        generated_at: Some(chrono::DateTime::from_timestamp(1_800_000_500, 0).unwrap()),
        report_dir: None,
    };
    let exp = aggregate::load_experiment(dir.path()).unwrap();
    let rep = aggregate::report_with(&exp, None, &opts(), &inv).unwrap();
    let md = &rep.markdown;
    for row in [
        "| run command | `pipeline --models m --header 'X-Key=<redacted>' --task 'two words'` |",
        "| run dates | started 2027-01-15T08:00:00Z; sessions from 2027-01-15T08:00:00Z to 2027-01-15T08:00:00Z |",
        "| work tree | 0123456789abcdef (with uncommitted changes) |",
        "| binary build | c0ffee (clean) — 4 sessions |",
        "| binary version | not recorded by the run |",
        "| k (reps per task and arm) | 2 (run with 1 parallel jobs) |",
        "| models and parameters | m (openai_compatible): temperature 0, max tokens 512, seed 18446744073709551615, reasoning effort not sent |",
        "| world seeds | seed 1, scale 1 (1 tasks) |",
        "| bootstrap seed | 7882267113055153763 |",
        "| spec | none: a run from flags, not from a spec |",
        "| endpoint preflight | passed — m: endpoint passed, native_tool_calls passed |",
        "| this report | aggregate 0.1.0, via pipeline 9.9.9, generated 2027-01-15T08:08:20Z: `pipeline aggregate` |",
    ] {
        assert!(md.contains(row), "{row}\n{md}");
    }
    let j: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    let p = &j["provenance"];
    assert_eq!((p["k"].as_u64(), p["git_dirty"].as_bool(), p["models"][0]["seed"].as_str()), (Some(2), Some(true), Some("18446744073709551615")));
    assert_eq!(p["report"]["generator"], "pipeline 9.9.9");
    assert!(p["binary_version"].is_null(), "not recorded stays null");
    assert!(rep.html.contains("<tr><th>work tree</th><td>0123456789abcdef (with uncommitted changes)</td></tr>"));
    assert!(rep.html.contains("commit <code>0123456789ab</code> (uncommitted changes) · k = 2 · models: m · preflight passed"), "the line under the title");
    // The markdown links the chart files.
    assert!(md.contains("![Success rate, turns and input tokens per module and arm](chart.svg)") && md.contains("[PNG](chart.png)"));
}

/// Every `font-size="…"` in the SVG, in pixels.
fn font_sizes(svg: &str) -> Vec<f64> {
    svg.match_indices("font-size=\"").map(|(i, m)| svg[i + m.len()..].split('"').next().unwrap().parse().unwrap()).collect()
}

#[test]
fn the_chart_is_readable_at_the_size_it_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    experiment(dir.path());
    // A second module whose control has no sessions (outside the plan, so without one): its
    // slot says so.
    std::fs::remove_file(dir.path().join("manifest.json")).unwrap();
    write(dir.path(), &record("m", "m2", "pattern", "t1", 1, ok(V::Failed, 12_000, 3)), false);
    let rep = aggregate::report(dir.path(), None, &opts()).unwrap();
    let svg = &rep.svg;
    assert!(svg.starts_with("<svg width=\"960\""), "drawn at the width the page shows it: {}", &svg[..60]);
    let sizes = font_sizes(svg);
    assert!(!sizes.is_empty() && sizes.iter().all(|s| *s >= 11.99), "every text ≥ 12 px: {sizes:?}");
    for title in ["success rate (%)", "turns per session", "input tokens per session"] {
        assert!(svg.contains(title), "axis title {title}");
    }
    assert!(svg.contains("12,000"), "formatted numbers");
    assert!(!svg.contains(".0\n</text>") && !svg.contains("000.0"), "no float-formatted ticks");
    assert!(svg.contains("no sessions"), "an empty slot has a note");
    assert!(svg.contains("0%\n</text>"), "a 0% bar is labelled");
    assert!(svg.contains("est.") && svg.contains("oracle plan, estimated (bytes / 4) — not a measurement"), "the oracle estimate is labelled");

    // Oracle only: the estimate panel says it is one, and its bars are dashed outlines.
    let only = tempfile::tempdir().unwrap();
    for role in ["pattern", "control"] {
        let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
        write(only.path(), &record("oracle", "m1", role, "t1", 1, s), false);
    }
    let rep = aggregate::report(only.path(), None, &opts()).unwrap();
    assert!(rep.svg.contains("Input tokens per session — an ESTIMATE from bytes / 4, not a measurement"));
    assert!(rep.svg.contains("≈300") && rep.svg.contains("≈900"), "labelled as approximate");
    // Dashes are drawn as short segments: two dashed bars make dozens of them, solid bars none.
    assert!(rep.svg.matches("<polyline").count() > 30, "dashed outlines");
    assert!(font_sizes(&rep.svg).iter().all(|s| *s >= 11.99));
}

#[test]
fn every_table_row_keeps_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let rep = aggregate::report(dir.path(), None, &aggregate::Options::default()).unwrap();
    let h = &rep.html;
    // An empty cell (the arm columns of "pair outcomes") stays a cell under its header.
    let at = h.find(">pair outcomes</td>").expect("pair outcomes row");
    assert!(h[at..].starts_with(">pair outcomes</td><td></td><td></td><td>3 both passed"), "pair outcomes row: {}", &h[at..at + 120]);
    for table in h.split("<table>").skip(1).map(|t| &t[..t.find("</table>").unwrap()]) {
        let rows: Vec<&str> = table.split("<tr>").skip(1).collect();
        let width = |r: &str| r.matches("<th").count() + r.matches("<td").count();
        for row in &rows {
            assert_eq!(width(row), width(rows[0]), "a row of another width than its header: {row}");
        }
    }
}

/// A `|` inside a value stays inside its cell: the document holds it whole, the Markdown writer
/// escapes it for its pipe table, and the page shows it in one cell.
#[test]
fn a_pipe_in_a_value_stays_inside_its_table_cell() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest(&["m"], &["t1"], 1);
    m.command = vec!["pipeline".into(), "--exp-name".into(), "a|b".into()];
    write_manifest(dir.path(), &m);
    pairs(dir.path(), "m", &["t1"], 1..=1, |r| r);
    let rep = report(dir.path());
    let provenance = tables(&rep.document).into_iter().find(|t| t.h2 == "Provenance").expect("a provenance table");
    let row = provenance.rows.iter().find(|r| r[0] == "run command").expect("a run command row");
    assert_eq!(row, &["run command".to_string(), "pipeline --exp-name 'a|b'".to_string()]);
    let line = rep.markdown.lines().find(|l| l.starts_with("| run command |")).unwrap();
    assert_eq!(line, r"| run command | `pipeline --exp-name 'a\|b'` |", "the Markdown escapes it, so the row keeps two columns");
    assert!(rep.html.contains("run command</th><td><code>pipeline --exp-name &#39;a|b&#39;</code></td>"), "the page shows it whole in one cell");
}
