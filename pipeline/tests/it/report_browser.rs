//! report.html in a real browser. `pipeline aggregate` writes the report of a fixture
//! experiment; Debian's headless Chromium (`/usr/bin/chromium`, or `$MCPBENCH_CHROMIUM`; installed
//! by `.ci/test-tools`) renders it. From `--dump-dom` and over the DevTools protocol (on a pipe,
//! `--remote-debugging-pipe`) the test asserts what a person sees: the headline, the chart at a
//! readable size, the provenance, a rendered conversation, a filter and a sort that work, a page
//! that fits a phone — and that nothing is fetched from the network. Screenshots at 1280×2000
//! and 390×844 land in the target's tmp folder for a person to look at.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::chromium::{Browser, chromium, png_size};
use crate::common::pipeline;
use serde_json::json;

// ---------------------------------------------------------------------------------------------

/// The experiment and its report, written by the real CLI.
fn report(root: &Path) -> (PathBuf, usize) {
    let exp = root.join("browser");
    let sessions = common::fixture::write(&exp, "browser");
    let out = pipeline().args(["aggregate", "--result-dir"]).arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (exp.join("report.html"), sessions)
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn shots() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_dom_after_load_has_the_headline_chart_provenance_and_a_conversation() {
    let root = tempfile::tempdir().unwrap();
    let (html, sessions) = report(root.path());
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", root.path().join("profile").display()))
        .arg(url(&html))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = |needle: &str| dom.find(needle).unwrap_or_else(|| panic!("{needle} is not in the DOM"));
    // What was found, first: the verdict card of the module.
    assert!(at("id=\"headline\"") < at("id=\"chart\""));
    assert!(dom.contains("<h3>tool_orchestrator</h3><span class=\"badge v-"), "a verdict card");
    assert!(dom.contains("valid / attempted sessions: pattern 12/12 · control 11/12 (provider_error: 1)"));
    // The chart, inline.
    assert!(dom[at("id=\"chart\"")..].contains("<svg role=\"img\""));
    // The provenance.
    assert!(dom.contains("<th>work tree</th><td>05c1580457ce1a0702ca9fdf64ab3881fcff4ca2 (clean)</td>"));
    assert!(dom.contains("--header 'X-Token=&lt;redacted&gt;'"), "the recorded command, redacted");
    assert!(dom.contains("<th>endpoint preflight</th><td>passed — fake-model: endpoint passed, model passed, native_tool_calls passed</td>"));
    // A rendered conversation, and the script has run (the controls shown, the count written).
    assert!(dom.contains("<div class=\"msg assistant\"><div class=\"who\">assistant · turn 1"));
    assert!(dom.contains("result of tickets_get · 2 ms · <span class=\"err\">error</span>"));
    assert!(dom.contains(&format!("<span id=\"session-count\">{sessions} of {sessions} sessions shown</span>")), "the script ran");
    assert!(!dom.contains("<div id=\"session-controls\" hidden"), "the controls are shown once the script runs");
}

#[test]
fn in_chromium_the_report_reads_filters_sorts_fits_a_phone_and_fetches_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (html, sessions) = report(root.path());
    let started = Instant::now();
    let mut b = Browser::start(root.path());
    b.call("Network.enable", json!({}), true);
    b.call("Page.enable", json!({}), true);

    // Desktop, 1280 px wide.
    b.viewport(1280, 2000, false);
    let load = Instant::now();
    b.navigate(&url(&html));
    eprintln!("report.html of {sessions} sessions loaded in {:?} ({} bytes)", load.elapsed(), std::fs::metadata(&html).unwrap().len());
    let (w, h) = png_size(&b.screenshot(&shots().join("report-1280x2000.png")));
    assert_eq!((w, h), (1280, 2000));
    // The chart is shown at the size it was drawn, so its smallest text is what it says.
    let chart = b.eval(
        "(function(){var s=document.querySelector('#chart svg');var k=s.getBoundingClientRect().width/s.width.baseVal.value;\
         var f=[].map.call(s.querySelectorAll('text'),function(t){return parseFloat(t.getAttribute('font-size'))*k;});\
         return {width:s.getBoundingClientRect().width,min:Math.min.apply(null,f),texts:f.length};})()",
    );
    assert_eq!(chart["width"], 960, "{chart}");
    assert!(chart["min"].as_f64().unwrap() >= 11.99 && chart["texts"].as_u64().unwrap() > 20, "chart text ≥ 12 px at 1280 px: {chart}");
    let smallest_cell =
        b.eval("Math.min.apply(null,[].map.call(document.querySelectorAll('td,th'),function(c){return parseFloat(getComputedStyle(c).fontSize);}))");
    assert!(smallest_cell.as_f64().unwrap() >= 12.0, "table text ≥ 12 px: {smallest_cell}");
    let headline_first = b.eval("document.querySelector('main').firstElementChild.id || document.querySelector('section').id");
    assert_eq!(headline_first, "headline", "nothing stands before what was found but the run's notices");

    // A filter: the outcome "failed" leaves the one failed session.
    let count = "document.getElementById('session-count').textContent";
    assert_eq!(b.eval(count), format!("{sessions} of {sessions} sessions shown"));
    b.eval("(function(){var s=document.querySelector('select[data-filter=outcome]');s.value='failed';s.dispatchEvent(new Event('change'));})()");
    assert_eq!(b.eval(count), format!("1 of {sessions} sessions shown"));
    let visible = "[].filter.call(document.querySelectorAll('details.session'),function(d){return !d.hidden&&d.offsetHeight>0;}).map(function(d){return d.dataset.outcome+'/'+d.dataset.arm+'/'+d.dataset.task;})";
    assert_eq!(b.eval(visible), json!(["failed/pattern/lena_goes_on_leave"]));
    assert_eq!(b.eval("location.hash"), "#outcome=failed", "the view can be shared");
    // Opening it with a real click shows its conversation and the verifier's reasons.
    b.click("details.session[data-outcome=failed] > summary");
    let opened = b.eval(
        "(function(){var d=document.querySelector('details.session[data-outcome=failed]');\
         return {open:d.open,msgs:d.querySelectorAll('.msg').length,errors:d.querySelectorAll('.msg.error').length,\
         reasons:d.querySelector('.meta').textContent.indexOf('ticket 301 is still assigned to Lena Novak')>=0,\
         height:d.querySelector('.conversation').getBoundingClientRect().height};})()",
    );
    assert_eq!((opened["open"].as_bool(), opened["errors"].as_u64(), opened["reasons"].as_bool()), (Some(true), Some(1), Some(true)), "{opened}");
    assert!(opened["msgs"].as_u64().unwrap() >= 6 && opened["height"].as_f64().unwrap() > 200.0, "{opened}");

    // Back to all, then a sort by input tokens with a real click: most expensive first.
    b.eval("(function(){var s=document.querySelector('select[data-filter=outcome]');s.value='';s.dispatchEvent(new Event('change'));})()");
    b.eval("(function(){var s=document.querySelector('select[data-filter=model]');s.value='fake-model';s.dispatchEvent(new Event('change'));})()");
    b.click("button[data-sort=tokens]");
    let tokens = b.eval("[].filter.call(document.querySelectorAll('details.session'),function(d){return !d.hidden;}).map(function(d){return d.dataset.tokens===''?null:+d.dataset.tokens;})");
    let tokens: Vec<Option<u64>> = serde_json::from_value(tokens).unwrap();
    assert_eq!(tokens.len(), sessions - 4, "the model's sessions, the oracle's filtered out");
    let known: Vec<u64> = tokens.iter().flatten().copied().collect();
    assert!(known.windows(2).all(|w| w[0] >= w[1]) && known.len() > 10, "descending: {tokens:?}");
    assert_eq!(b.eval("location.hash"), "#model=fake-model&sort=tokens-desc");
    // A shared view opens as it was left (from another page: a fragment-only change would not
    // load the page again).
    b.navigate("about:blank");
    b.navigate(&format!("{}#arm=control&task=lena_goes_on_leave", url(&html)));
    assert_eq!(b.eval(count), format!("7 of {sessions} sessions shown"), "6 model sessions and the oracle's");

    // A phone, 390 px wide: laid out at its width (the viewport meta), nothing wider than the
    // screen but the tables and the chart, which scroll in their own boxes.
    b.viewport(390, 844, true);
    b.navigate(&url(&html));
    let (w, h) = png_size(&b.screenshot(&shots().join("report-390x844.png")));
    assert_eq!((w, h), (780, 1688), "390×844 at a device pixel ratio of 2");
    let phone = b.eval(
        "(function(){var d=document.documentElement;var wraps=[].filter.call(document.querySelectorAll('.table-wrap,.chart'),function(w){return w.scrollWidth>w.clientWidth+1;}).length;\
         return {layout:d.clientWidth,page:d.scrollWidth,scrolling_boxes:wraps,\
         text:Math.min.apply(null,[].map.call(document.querySelectorAll('td,th,p,li'),function(c){return parseFloat(getComputedStyle(c).fontSize);}))};})()",
    );
    assert_eq!(phone["layout"], 390, "the layout viewport is the phone's width: {phone}");
    assert!(phone["page"].as_u64().unwrap() <= 390, "no sideways scrolling of the page: {phone}");
    assert!(phone["scrolling_boxes"].as_u64().unwrap() >= 2, "wide tables scroll in their own box: {phone}");
    assert!(phone["text"].as_f64().unwrap() >= 12.0, "{phone}");

    // Nothing left the machine: every request is the file itself, and the page fetched no
    // resource at all.
    let requests = b.requests();
    assert!(!requests.is_empty(), "the network log works");
    assert!(requests.iter().all(|u| u.starts_with("file://") && u.contains("report.html")), "{requests:?}");
    assert_eq!(b.eval("performance.getEntriesByType('resource').length"), 0);
    // The log would have seen a fetch: the instrument is checked, not trusted.
    let before = b.requests().len();
    b.eval("fetch('http://127.0.0.1:9/probe').then(function(){},function(){}).then(function(){return 1;})");
    std::thread::sleep(Duration::from_millis(300));
    b.call("Runtime.evaluate", json!({"expression": "1"}), true);
    assert!(b.requests()[before..].iter().any(|u| u.starts_with("http://127.0.0.1:9/probe")), "{:?}", b.requests());
    eprintln!("browser checks took {:?}; screenshots in {}", started.elapsed(), shots().display());
}
