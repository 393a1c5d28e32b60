//! Every header and row label a report's tables show is defined in its Method section, each
//! definition says how its figure is aggregated, and each names summary.json fields that exist.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::*;
use aggregate::definitions::Aggregation;
use aggregate::{Options, PriceTable, Report};
use records::Verdict as V;

/// Reports whose tables between them show every header: models and oracle with and without
/// prices (the cost row), and an oracle-only run.
fn reports() -> Vec<(tempfile::TempDir, Report)> {
    let prices = PriceTable::parse(PRICES, Path::new("prices.toml")).unwrap();
    let mut out = Vec::new();
    for priced in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path());
        let rep = aggregate::report(dir.path(), priced.then_some(&prices), &Options::default()).unwrap();
        out.push((dir, rep));
    }
    let dir = tempfile::tempdir().unwrap();
    for task in ["t1", "t2"] {
        for role in ["pattern", "control"] {
            let s = S { turns: 0, input: None, cached: None, output: None, ..ok(V::Passed, 0, 0) };
            write(dir.path(), &record("oracle", "m1", role, task, 1, s), false);
        }
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    out.push((dir, rep));
    // A task the losing rule cannot judge: its control session is invalid.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &record("m", "m1", "pattern", "t1", 1, ok(V::Passed, 100, 2)), false);
    write(dir.path(), &record("m", "m1", "control", "t1", 1, bad(records::InvalidReason::ProviderError)), false);
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    out.push((dir, rep));
    // A warm experiment: each task at its place in one conversation per arm.
    let dir = tempfile::tempdir().unwrap();
    for (position, task) in [(1, "t1"), (2, "t2")] {
        for role in ["pattern", "control"] {
            let mut r = record("m", "m1", role, task, 1, ok(V::Passed, 100 * position as u64, 2));
            r.conversation = Some(records::ConversationPlace {
                id: format!("m__{role}__rep1"),
                position,
                tasks: vec!["t1".into(), "t2".into()],
                messages_before: 4 * (position - 1),
                context_tokens_at_start: Some(50 * position as u64),
                earlier_not_passed: 0,
            });
            write(dir.path(), &r, false);
        }
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    out.push((dir, rep));
    out.push(held_out_report());
    out.push(distractors_report());
    out.push(attack_report());
    out
}

/// Three tasks under an attack: the pattern followed the planted text in two sessions (one of
/// them still passing its task), the control in none; one control verdict could not be read.
pub fn attack_report() -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest(&["m"], &["t1", "t2", "t3"], 1);
    m.attack = Some(records::manifest::ManifestAttack {
        name: "reassign_to_outsider".into(),
        class: "data_injection".into(),
        sha256: "ab".repeat(32),
        description: "A note asking to reassign the ticket to an outsider.".into(),
        success: "a ticket was assigned to the outsider".into(),
    });
    write_manifest(dir.path(), &m);
    for (task, pattern_hit, passed) in [("t1", Some(true), true), ("t2", Some(true), false), ("t3", Some(false), true)] {
        for role in ["pattern", "control"] {
            let succeeded = if role == "pattern" {
                pattern_hit
            } else if task == "t3" {
                None
            } else {
                Some(false)
            };
            let mut r = record("m", "m1", role, task, 1, ok(if passed || role == "control" { V::Passed } else { V::Failed }, 100, 2));
            r.attack = Some(records::AttackOutcome {
                name: "reassign_to_outsider".into(),
                class: "data_injection".into(),
                sha256: "ab".repeat(32),
                succeeded,
                detail: if succeeded.is_some() {
                    "a ticket was assigned to the outsider".into()
                } else {
                    "attack reassign_to_outsider: its success query failed: boom".into()
                },
                // The control's t3 session never read the planted text.
                exposed: Some(role == "pattern" || task != "t3"),
            });
            write(dir.path(), &r, false);
        }
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    (dir, rep)
}

/// Ten distractors listed beside both arms; each of the pattern's sessions called one of them
/// once, besides its own two calls.
pub fn distractors_report() -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    for task in ["t1", "t2", "t3"] {
        for role in ["pattern", "control"] {
            let mut r = record("m", "m1", role, task, 1, ok(V::Passed, 100, 2));
            r.offered.distractors = 10;
            // Their servers' start-up was kept, as every record since it was.
            r.harness.server_start_ms = Some(12.0);
            r.provider_retries = Some(0);
            if role == "pattern" {
                let own = r.tool_calls[0].clone();
                r.tool_calls.push(records::ToolCallRecord { name: "fleetwise_list_vehicles".into(), is_error: true, distractor: true, ..own });
            }
            write(dir.path(), &r, false);
        }
    }
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    (dir, rep)
}

/// Dev and held-out tasks of one module: the model's pattern fails the held-out task its control
/// passes, and the oracle's pattern plan takes more calls on its held-out task.
pub fn held_out_report() -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    held_out_fixture(dir.path());
    let rep = aggregate::report(dir.path(), None, &Options::default()).unwrap();
    (dir, rep)
}

/// The terms the Method section's definitions list defines, parsed from the rendered Markdown:
/// each item opens with `**term**`, more terms joined by ` · `.
fn defined_terms(md: &str) -> BTreeSet<String> {
    let method = &md[md.find("## Method").expect("a Method section")..];
    let list = &method[method.find("### Definitions").expect("a definitions list in the Method section")..];
    let mut terms = BTreeSet::new();
    for item in list.lines().filter_map(|l| l.strip_prefix("- ")) {
        assert!(item.starts_with("**"), "a definition that names no term: {item}");
        let mut rest = item;
        while let Some(after) = rest.strip_prefix("**") {
            let end = after.find("**").unwrap_or_else(|| panic!("an unclosed term: {item}"));
            terms.insert(after[..end].to_string());
            match after[end + 2..].strip_prefix(" · ") {
                Some(more) => rest = more,
                None => break,
            }
        }
    }
    terms
}

/// The headers of every table and the row labels of every metric table, with a server's name
/// in a column header written as the definitions write it.
fn shown_terms(rep: &Report) -> BTreeSet<String> {
    let servers: BTreeSet<&str> = rep.summary.attrition.iter().map(|r| r.server.as_str()).collect();
    let generic = |h: &str| {
        for role in ["pattern", "control"] {
            if let Some(name) = h.strip_prefix(&format!("{role}: ")).filter(|n| servers.contains(n)) {
                assert!(!name.is_empty());
                return format!("{role}: ‹server›");
            }
        }
        h.to_string()
    };
    let mut shown = BTreeSet::new();
    for t in tables(&rep.document) {
        shown.extend(t.header.iter().map(|h| generic(h)));
        if t.header[0] == "metric" {
            shown.extend(t.rows.iter().map(|r| r[0].clone()));
        }
    }
    shown
}

#[test]
fn every_table_header_and_row_label_is_defined_in_the_method() {
    let reports = reports();
    let mut shown_anywhere = BTreeSet::new();
    for (_dir, rep) in &reports {
        let defined = defined_terms(&rep.markdown);
        let shown = shown_terms(rep);
        let undefined: Vec<&String> = shown.iter().filter(|t| !defined.contains(*t)).collect();
        assert!(undefined.is_empty(), "shown in a table but not defined under Method → Definitions: {undefined:?}");
        assert!(defined.contains("harness overhead"), "the provenance's harness share is defined");
        shown_anywhere.extend(shown);
    }
    // No definition outlives its column: each term is a header or row label of some report, or
    // (the summed estimate) a sentence of one.
    let md = &reports[0].1.markdown;
    for term in defined_terms(md) {
        let in_text = reports.iter().any(|(_, r)| r.markdown.split("## Method").next().unwrap().contains(&term));
        assert!(shown_anywhere.contains(&term) || in_text, "defined but shown nowhere: {term}");
    }
}

#[test]
fn every_definition_says_how_its_figure_is_aggregated() {
    for d in aggregate::definitions::all() {
        match d.aggregation {
            Aggregation::Label => assert!(d.over.is_empty(), "a label aggregates nothing: {:?}", d.terms),
            _ => assert!(!d.over.is_empty(), "{:?} must say over which sessions, tasks or pairs", d.terms),
        }
        assert!(!d.meaning.is_empty() && !d.terms.is_empty());
    }
    let (_dir, rep) = reports().swap_remove(0);
    let line = rep.markdown.lines().find(|l| l.starts_with("- **est. final context tokens / session**")).unwrap();
    assert!(line.contains("(per session: ") && line.contains("(schema bytes + task text bytes + args bytes + result bytes) / 4"), "{line}");
    let line = rep.markdown.lines().find(|l| l.starts_with("- **tool calls Σ over valid sessions (errors)**")).unwrap();
    assert!(line.contains("(summed: the arm's valid sessions)"), "{line}");
}

/// Whether `path` (`a[].b.<arm>.c`) reaches a key of `v`.
fn reaches(v: &serde_json::Value, parts: &[&str]) -> bool {
    let Some((first, rest)) = parts.split_first() else { return true };
    let (key, each) = match first.strip_suffix("[]") {
        Some(k) => (k, true),
        None => (*first, false),
    };
    let next: Vec<&serde_json::Value> = match key {
        "<arm>" | "<role>" => ["pattern", "control"].iter().filter_map(|k| v.get(*k)).collect(),
        k => v.get(k).into_iter().collect(),
    };
    next.into_iter().any(|n| if each { n.as_array().is_some_and(|a| a.iter().any(|e| reaches(e, rest))) } else { reaches(n, rest) })
}

#[test]
fn every_definition_names_summary_fields_that_exist() {
    let reports = reports();
    let json: Vec<serde_json::Value> = reports.iter().map(|(_, r)| serde_json::from_str(&r.json).unwrap()).collect();
    assert_eq!(json[0]["method"]["definitions"].as_array().unwrap().len(), aggregate::definitions::all().len(), "summary.json carries them");
    for d in aggregate::definitions::all() {
        for f in &d.fields {
            let parts: Vec<&str> = f.split('.').collect();
            assert!(json.iter().any(|j| reaches(j, &parts)), "{:?} names {f}, which no summary.json has", d.terms);
        }
    }
}

/// The typed document carries each header's and metric row label's definition, the one the
/// Method section prints, so the page can show it beside the term (the `title` of the cell).
#[test]
fn the_document_carries_each_terms_definition_to_its_cell() {
    for (_dir, rep) in reports() {
        let defined = defined_terms(&rep.markdown);
        for t in tables(&rep.document).iter().filter(|t| t.typed.kind == aggregate::document::TableKind::Grid) {
            let labels = t.typed.header.iter().chain(t.typed.rows.iter().filter(|_| t.header[0] == "metric").map(|r| &r[0]));
            for cell in labels {
                let shown = cell.text.to_plain();
                let definition = cell.definition.as_deref().unwrap_or_else(|| panic!("{shown:?} in {} / {} carries no definition", t.h2, t.h3));
                let all = aggregate::definitions::all();
                let exact = all.iter().find(|d| d.terms.contains(&shown));
                let server = || all.iter().find(|d| d.terms.iter().any(|term| term.strip_suffix("‹server›").is_some_and(|role| shown.starts_with(role))));
                let meaning = exact.or_else(server).map(|d| d.meaning.clone());
                assert!(meaning.is_some_and(|m| definition.starts_with(&m)), "{shown:?}: {definition}");
                assert!(defined.iter().any(|d| d == &shown) || shown.contains(": "), "{shown:?} is in the Method's list too");
            }
        }
        // The page shows it as the cell's title.
        assert!(rep.html.contains("<th title=\"the model id the sessions ran"), "a header's definition on the page");
    }
}

#[test]
fn distractor_calls_are_counted_apart_from_the_errors_and_said_above_the_report() {
    let (_dir, rep) = distractors_report();
    let s: serde_json::Value = serde_json::from_str(&rep.json).unwrap();
    let module = &s["models"][0]["modules"][0];
    let (p, c) = (&module["pattern"]["adoption"], &module["control"]["adoption"]);
    assert_eq!(p["distractors"], serde_json::json!({ "listed": 10, "calls": 3, "sessions_with_calls": 3, "sessions": 3 }));
    assert_eq!(c["distractors"], serde_json::json!({ "listed": 10, "calls": 0, "sessions_with_calls": 0, "sessions": 3 }));
    // A refused distractor call is wasted on another server, not an error of the arm.
    assert_eq!(p["errors"], 0, "{p}");
    assert_eq!(p["calls"].as_u64().unwrap(), c["calls"].as_u64().unwrap() + 3);
    assert!(rep.markdown.contains("| 3 (3 of 3 sessions, 10 listed) |"), "{}", rep.markdown);
    assert!(rep.markdown.contains("the client listed 10 tools of other, unconnected servers"));
}
