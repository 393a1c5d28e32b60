//! Capability parity (`docs/patterns.md`, "Capability parity"): per module, a committed table
//! (`src/modules/<module>/parity.toml`) of the backend operations each arm can reach, checked
//! here against the real arms over stdio and a real backend that records every request's
//! operation signature (`backend::recorder`).
//!
//! For every row and every arm that declares calls, the calls are made and the backend must
//! have seen the row's operation (`reaches`); an arm that cannot must say why (`absent`), and the
//! row must be in the doc's parity tables. Every tool an arm lists, every operation behind the
//! proxy's discovery tools, every function of the code-execution API and every resource template
//! must be used by some row, so a new one cannot slip in undeclared. The doc's tables are
//! rendered from the files (`UPDATE_SNAPSHOTS=1` rewrites them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use backend::WorldSpec;
use backend::local::LocalBackend;
use backend::recorder::{Recorder, Signature};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use serde::Deserialize;
use serde_json::Value;

use crate::common::{self, Client, Via};

/// One module's parity file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParityFile {
    /// Tools that reach no backend operation (discovery, a draft held by the server): name →
    /// what they do instead. They are exempt from coverage by a row.
    #[serde(default)]
    no_backend: BTreeMap<String, String>,
    capability: Vec<Capability>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Capability {
    /// What can be done, in words.
    name: String,
    kind: Kind,
    /// The backend operation it takes: `GET /repos ?q`, `PATCH /tickets/{id} {assignee_id=null}`.
    reaches: String,
    pattern: Reach,
    control: Reach,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Read,
    Filter,
    Write,
    Clear,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Filter => "filter",
            Self::Write => "write",
            Self::Clear => "clear",
        }
    }
}

/// How one arm does a capability: the MCP calls, or why it cannot.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Reach {
    Calls(Vec<Step>),
    Absent { absent: String },
}

/// One MCP call, in the form of an oracle plan's step (`tasks::oracle`), plus `null`: JSON
/// pointers into the arguments set to `null` (TOML has none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    tool: Option<String>,
    #[serde(default)]
    args: toml::Table,
    #[serde(default)]
    null: Vec<String>,
    read: Option<String>,
    #[serde(default)]
    list_resources: bool,
    #[serde(default)]
    save: BTreeMap<String, String>,
}

fn module_dir(module: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/modules").join(module)
}

fn parity_file(module: &str) -> ParityFile {
    let path = module_dir(module).join("parity.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}; every module declares its arms' parity", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn patterns_doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/patterns.md")
}

const BEGIN: &str = "<!-- parity tables: generated from src/modules/*/parity.toml by servers/tests/it/parity.rs -->";
const END: &str = "<!-- end of parity tables -->";

/// The doc's tables: one per module, a row per capability, each arm's tool (or "—" and why).
fn rendered_tables() -> String {
    let mut out = String::new();
    for m in servers::registry::MODULES {
        let file = parity_file(m.name);
        out.push_str(&format!("\n**`{}`** (`{}` / `{}`)\n\n", m.name, m.pattern.name, m.control.name));
        out.push_str("| capability | kind | backend operation | pattern | control |\n| --- | --- | --- | --- | --- |\n");
        for c in &file.capability {
            let cell = |r: &Reach| match r {
                Reach::Calls(steps) => steps.iter().map(step_label).collect::<Vec<_>>().join(" → "),
                Reach::Absent { absent } => format!("— {}", absent.replace('|', "\\|")),
            };
            out.push_str(&format!("| {} | {} | `{}` | {} | {} |\n", c.name, c.kind.as_str(), c.reaches, cell(&c.pattern), cell(&c.control)));
        }
    }
    out.push('\n');
    out
}

/// A step as the doc names it: the tool, the operation behind a meta-tool, or the resource.
fn step_label(s: &Step) -> String {
    let args = toml_json(&s.args);
    match (s.tool.as_deref(), &s.read) {
        (Some("call_backend"), _) => format!("`call_backend` {}.{}", args["backend"].as_str().unwrap_or("?"), args["operation"].as_str().unwrap_or("?")),
        (Some("call_tool"), _) => format!("`call_tool` {}", args["name"].as_str().unwrap_or("?")),
        (Some("run_script"), _) => {
            let fns: Vec<&str> = servers::modules::code_execution::API_FUNCTIONS.iter().copied().filter(|f| calls(&args, f)).collect();
            format!("`run_script` {}", fns.join(", "))
        }
        (Some(tool), _) => format!("`{tool}`"),
        (None, Some(uri)) => format!("read `{}`", uri.split("://").next().unwrap_or(uri)),
        (None, None) => "list resources".to_owned(),
    }
}

/// Whether a `run_script` step's program calls API function `f` (`tickets.update(`).
fn calls(args: &Value, f: &str) -> bool {
    args["script"].as_str().is_some_and(|s| s.contains(&format!("{f}(")))
}

fn toml_json(t: &toml::Table) -> Value {
    serde_json::to_value(t).expect("TOML is JSON")
}

#[test]
fn the_docs_parity_tables_are_the_parity_files() {
    let path = patterns_doc();
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else { panic!("{} has no parity tables between {BEGIN:?} and {END:?}", path.display()) };
    let tables = rendered_tables();
    let current = &doc[begin + BEGIN.len()..end];
    if current != tables && std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{}{BEGIN}{tables}{}", &doc[..begin], &doc[end..])).unwrap();
        return;
    }
    assert_eq!(current, tables, "docs/patterns.md's parity tables are not the parity files'; rerun with UPDATE_SNAPSHOTS=1");
}

#[test]
fn every_module_has_a_parity_file_and_every_absence_a_reason() {
    for m in servers::registry::MODULES {
        let file = parity_file(m.name);
        assert!(!file.capability.is_empty(), "{}: no capability declared", m.name);
        let mut names = BTreeSet::new();
        for c in &file.capability {
            assert!(names.insert(&c.name), "{}: `{}` declared twice", m.name, c.name);
            let signature = Signature::parse(&c.reaches).unwrap_or_else(|e| panic!("{}: `{}`: {e}", m.name, c.name));
            let clears = signature.body.values().any(|v| *v == backend::recorder::BodyValue::Null);
            assert_eq!(c.kind == Kind::Clear, clears, "{}: `{}`: a clear reaches a `key=null`, and only a clear does", m.name, c.name);
            for (arm, reach) in [("pattern", &c.pattern), ("control", &c.control)] {
                match reach {
                    Reach::Absent { absent } => assert!(absent.trim().len() > 10, "{}: `{}`: the {arm} must say why it cannot", m.name, c.name),
                    Reach::Calls(steps) => assert!(!steps.is_empty(), "{}: `{}`: the {arm} declares no call", m.name, c.name),
                }
            }
        }
        for (tool, why) in &file.no_backend {
            assert!(!why.trim().is_empty(), "{}: `{tool}` reaches no backend operation: say what it does instead", m.name);
        }
    }
}

/// Runs `steps` through `client`; `Err` names the first that failed.
async fn run(client: &Client, steps: &[Step]) -> Result<(), String> {
    let mut vars: BTreeMap<String, Value> = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        let (text, failed) = if let Some(tool) = &step.tool {
            let mut args = substitute(toml_json(&step.args), &vars);
            for pointer in &step.null {
                *args.pointer_mut(pointer).ok_or_else(|| format!("step {}: no argument at {pointer}", i + 1))? = Value::Null;
            }
            let params = CallToolRequestParams::new(tool.clone()).with_arguments(args.as_object().cloned().unwrap_or_default());
            let r = client.call_tool(params).await.map_err(|e| format!("step {} ({tool}): {e}", i + 1))?;
            (common::text(&r), r.is_error == Some(true))
        } else if let Some(uri) = &step.read {
            let r = client.read_resource(ReadResourceRequestParams::new(uri.clone())).await.map_err(|e| format!("step {} ({uri}): {e}", i + 1))?;
            let text =
                r.contents.iter().map(|c| if let ResourceContents::TextResourceContents { text, .. } = c { text.clone() } else { String::new() }).collect();
            (text, false)
        } else if step.list_resources {
            let all = client.list_all_resources().await.map_err(|e| format!("step {} (list resources): {e}", i + 1))?;
            (serde_json::to_string(&all).unwrap_or_default(), false)
        } else {
            return Err(format!("step {}: neither a tool, a read nor a listing", i + 1));
        };
        if failed {
            return Err(format!("step {} failed: {}", i + 1, text.chars().take(300).collect::<String>()));
        }
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        for (var, pointer) in &step.save {
            let v = parsed.pointer(pointer).cloned().ok_or_else(|| format!("step {}: nothing at {pointer} to save as {var}", i + 1))?;
            vars.insert(var.clone(), v);
        }
    }
    Ok(())
}

/// `${name}` as a whole string becomes the saved value; inside text, its text.
fn substitute(v: Value, vars: &BTreeMap<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
                && let Some(v) = vars.get(name)
            {
                return v.clone();
            }
            let mut s = s;
            for (name, v) in vars {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                s = s.replace(&format!("${{{name}}}"), &text);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, substitute(v, vars))).collect()),
        v => v,
    }
}

/// What `arm` offers that a row must cover: its tools (less `no_backend` and, for the tool
/// search catalogue, the tools of unconnected systems), the operations behind the proxy's
/// discovery, the code-execution API's functions, its resource templates.
async fn offered(entry: &servers::registry::ServerEntry, client: &Client, file: &ParityFile) -> BTreeSet<String> {
    let manifest = servers::manifest::ToolManifest::list(entry, client).await.unwrap();
    let foreign: BTreeSet<&str> = servers::modules::tool_search::catalogue::names(servers::modules::tool_search::catalogue::MAX).collect();
    let mut offered: BTreeSet<String> =
        manifest.tool_names().into_iter().filter(|t| !file.no_backend.contains_key(*t) && !foreign.contains(t)).map(|t| format!("tool {t}")).collect();
    if let Some(Value::Array(backends)) = &manifest.extra {
        offered.remove("tool call_backend");
        for b in backends {
            for o in b["operations"].as_array().into_iter().flatten() {
                offered.insert(format!("operation {}.{}", b["backend"].as_str().unwrap_or("?"), o["operation"].as_str().unwrap_or("?")));
            }
        }
    }
    if manifest.tool_names().contains(&"run_script") {
        offered.remove("tool run_script");
        offered.extend(servers::modules::code_execution::API_FUNCTIONS.iter().map(|f| format!("function {f}")));
    }
    if manifest.tool_names().contains(&"call_tool") {
        // What `call_tool` runs is the control's catalogue: its connected tools are the offer.
        offered.remove("tool call_tool");
        let control = servers::registry::find(entry.paired).unwrap();
        let listed = servers::manifest::ToolManifest::offline(control).await.unwrap();
        offered.extend(listed.tool_names().into_iter().filter(|t| !foreign.contains(t)).map(|t| format!("called {t}")));
    }
    for t in &manifest.resource_templates {
        offered.insert(format!("template {}", t.uri_template.split('{').next().unwrap_or_default()));
    }
    if manifest.resources {
        offered.insert("resource listing".to_owned());
    }
    offered
}

/// What `steps` use, in [`offered`]'s terms.
fn used(steps: &[Step]) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for s in steps {
        let args = toml_json(&s.args);
        match (s.tool.as_deref(), &s.read) {
            (Some("call_backend"), _) => {
                used.insert(format!("operation {}.{}", args["backend"].as_str().unwrap_or("?"), args["operation"].as_str().unwrap_or("?")));
            }
            (Some("run_script"), _) => {
                used.extend(servers::modules::code_execution::API_FUNCTIONS.iter().filter(|f| calls(&args, f)).map(|f| format!("function {f}")));
            }
            (Some("call_tool"), _) => {
                used.insert(format!("called {}", args["name"].as_str().unwrap_or("?")));
            }
            (Some(tool), _) => {
                used.insert(format!("tool {tool}"));
            }
            (None, Some(uri)) => {
                used.insert(format!("read {uri}"));
            }
            (None, None) => {
                used.insert("resource listing".to_owned());
            }
        }
    }
    used
}

#[tokio::test]
async fn every_capability_reaches_its_operation_through_both_arms() {
    let recorder = Recorder::new();
    let b = LocalBackend::start_recorded(WorldSpec::default(), &recorder).await.expect("a backend on real Postgres");
    let mut failures = Vec::new();
    let mut checked = 0;
    for m in servers::registry::MODULES {
        let file = parity_file(m.name);
        for (arm, entry) in [("pattern", &m.pattern), ("control", &m.control)] {
            let c = common::connect(entry.name, b.url(), Via::Stdio).await;
            let mut covered = BTreeSet::new();
            for cap in &file.capability {
                let Reach::Calls(steps) = (if arm == "pattern" { &cap.pattern } else { &cap.control }) else { continue };
                covered.extend(used(steps));
                recorder.take();
                if let Err(e) = run(&c.client, steps).await {
                    failures.push(format!("{} {}: `{}`: {e}", m.name, entry.name, cap.name));
                    continue;
                }
                let declared = Signature::parse(&cap.reaches).unwrap();
                let seen = recorder.take();
                if !seen.iter().any(|s| declared.is_met_by(s)) {
                    let seen: Vec<String> = seen.iter().map(ToString::to_string).collect();
                    failures.push(format!("{} {}: `{}` should reach `{declared}`; the backend saw [{}]", m.name, entry.name, cap.name, seen.join("; ")));
                }
                checked += 1;
            }
            let offered = offered(entry, &c.client, &file).await;
            let reads: Vec<&str> = covered.iter().filter_map(|u| u.strip_prefix("read ")).collect();
            let by_a_read = |o: &String| o.strip_prefix("template ").is_some_and(|prefix| reads.iter().any(|u| u.starts_with(prefix)));
            for missing in offered.iter().filter(|o| !covered.contains(*o) && !by_a_read(o)) {
                failures.push(format!("{} {}: {missing} is in no row of parity.toml", m.name, entry.name));
            }
            c.close().await;
        }
    }
    b.shutdown().await.unwrap();
    assert!(failures.is_empty(), "{} failures over {checked} calls:\n{}", failures.len(), failures.join("\n"));
}
