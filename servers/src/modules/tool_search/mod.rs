//! Tool search ("deferred loading", "dynamic toolsets"): list every tool up front, or list a
//! search tool and load definitions on demand? The answer depends on how many tools there are:
//! a company connects many systems, and every listed tool is input the model pays for on every
//! turn, while a search costs a call and can miss. Both arms offer the same catalogue — the
//! backend's own operations plus `N` tools of other, unconnected systems ([`catalogue`]) — and
//! run every call through the same code; they differ only in how the catalogue reaches the model.
//! `N` is chosen by the run (`--catalogue N`, default [`DEFAULT_CATALOGUE`]) and swept like world
//! scale (`pipeline sweep --catalogue 25,50,…`).
//!
//! * [`ToolSearchPattern`] (pattern): `search_tools` (BM25 over names, descriptions and argument
//!   names) returns the full definitions of the best matches; `call_tool` calls one by name.
//! * [`ToolSearchControl`] (control): every catalogue tool listed up front.

pub mod catalogue;
mod control;
mod pattern;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::Tool;

use crate::backend_client::{BackendClient, tool_error};
use crate::launch::{Launch, Launcher};
use crate::registry::{CatalogueSizes, ModuleEntry};

pub use control::ToolSearchControl;
pub use pattern::ToolSearchPattern;

/// How many tools of other systems both arms list when the run does not say.
pub const DEFAULT_CATALOGUE: u32 = 100;

/// Words specific to either server of this module. Task texts must not use them (gate G5,
/// besides every tool and resource name of both arms, at the largest catalogue): the pattern's
/// vocabulary, and every other system's name — a task that said "Deskflow" would point at a
/// tool. "search" is not listed: G5 matches substrings, and the search tool's own name is
/// checked anyway.
pub const SPECIFIC_TERMS: &[&str] = &[
    "catalogue",
    "catalog",
    "deskflow",
    "trackly",
    "ledgerly",
    "pipewise",
    "peoplebase",
    "calendo",
    "docuvault",
    "chatter",
    "pagerline",
    "stockroom",
    "shipnest",
    "payrolla",
    "expensio",
    "mailcraft",
    "signet",
    "wikiwise",
    "metricly",
    "statusboard",
    "procuro",
    "learnly",
];

/// The pattern server: the name `--mcp` takes, and how to start it.
const PATTERN: (&str, &dyn Launch) = ("tool_search", &Launcher::<ToolSearchPattern>::NEW);
/// The control server.
const CONTROL: (&str, &dyn Launch) = ("tool_search_wrapper", &Launcher::<ToolSearchControl>::NEW);

/// This module's line in the registry (`crate::registry::MODULES`).
pub static MODULE: ModuleEntry = ModuleEntry::new("tool_search", SPECIFIC_TERMS, PATTERN, CONTROL).with_catalogue(CatalogueSizes {
    min: catalogue::MIN,
    default: DEFAULT_CATALOGUE,
    max: catalogue::MAX,
});

/// The catalogue size a server of this module was started with.
fn size_of(backend: &BackendClient) -> u32 {
    backend.settings().catalogue.unwrap_or(DEFAULT_CATALOGUE).clamp(catalogue::MIN, catalogue::MAX)
}

/// The catalogue as a router over `S`: the backend's own operations (`own`, flat tools that
/// really run) and the first `n` tools of other systems, each answering that its system is not
/// connected. Both arms execute every call through a router built here.
fn router<S: Send + Sync + 'static>(own: ToolRouter<S>, n: u32) -> ToolRouter<S> {
    let mut router = crate::schema::plain_tools(own);
    for f in catalogue::foreign(n) {
        let message = Arc::new(format!("{} ({}) is not connected to this workspace, so {} cannot be called here.", f.system, f.kind, f.tool.name));
        router.add_route(ToolRoute::new_dyn(f.tool.clone(), move |_| {
            let message = message.clone();
            Box::pin(async move { Ok(tool_error(message.as_str()).into()) })
        }));
    }
    router
}

/// The backend's own operations, as both arms offer them.
macro_rules! own_tools {
    ($server:ty) => {
        crate::flat_tools!($server: customers, users, tickets_read, tickets_write, notifications, repos, services, change_requests_read, change_requests_write, runbooks, deploys);
        impl $server {
            fn own() -> rmcp::handler::server::router::tool::ToolRouter<Self> {
                Self::flat_customers()
                    + Self::flat_users()
                    + Self::flat_tickets_read()
                    + Self::flat_tickets_write()
                    + Self::flat_notifications()
                    + Self::flat_repos()
                    + Self::flat_services()
                    + Self::flat_change_requests_read()
                    + Self::flat_change_requests_write()
                    + Self::flat_runbooks()
                    + Self::flat_deploys()
            }
        }
    };
}
use own_tools;

/// A ranked index over one catalogue: BM25 (the `bm25` crate: a maintained, dependency-light
/// implementation with English stemming and stop words) over each tool's name, description and
/// argument names. Ties keep the catalogue's order, so a search always answers the same.
pub struct Index {
    tools: Vec<Tool>,
    engine: bm25::SearchEngine<usize>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("tools", &self.tools.len()).finish()
    }
}

impl Index {
    /// The index of a catalogue listing `tools`.
    pub fn new(tools: Vec<Tool>) -> Self {
        let documents: Vec<bm25::Document<usize>> = tools.iter().enumerate().map(|(i, t)| bm25::Document::new(i, document(t))).collect();
        let engine = bm25::SearchEngineBuilder::<usize>::with_documents(bm25::Language::English, documents).build();
        Self { tools, engine }
    }

    /// The index of the catalogue of size `n`, whose tools `tools` lists (built once per size
    /// and process).
    pub fn of(n: u32, tools: impl FnOnce() -> Vec<Tool>) -> Arc<Self> {
        static BY_SIZE: OnceLock<Mutex<BTreeMap<u32, Arc<Index>>>> = OnceLock::new();
        let mut cache = BY_SIZE.get_or_init(Default::default).lock().expect("the index cache is never poisoned");
        cache.entry(n).or_insert_with(|| Arc::new(Self::new(tools()))).clone()
    }

    /// How many tools the catalogue holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The best `limit` matches for `query`, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Tool> {
        let mut hits: Vec<(f32, usize)> = self.engine.search(query, None).into_iter().map(|r| (r.score, r.document.id)).collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.into_iter().take(limit).map(|(_, i)| &self.tools[i]).collect()
    }

    /// Whether the catalogue lists a tool called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }
}

/// What the index reads of a tool: its name as words, its description, its arguments' names.
fn document(tool: &Tool) -> String {
    let arguments =
        tool.input_schema.get("properties").and_then(|p| p.as_object()).map(|p| p.keys().map(|k| k.replace('_', " ")).collect::<Vec<_>>().join(" "));
    format!("{} {} {}", tool.name.replace('_', " "), tool.description.as_deref().unwrap_or_default(), arguments.unwrap_or_default())
}

/// One call of a session, as its transcript holds it: the tool's name, its arguments, the text
/// it returned.
#[derive(Debug, Clone, Copy)]
pub struct SeenCall<'a> {
    pub name: &'a str,
    pub arguments: &'a serde_json::Value,
    pub result: &'a str,
}

/// The names of the tools a `search_tools` result returned, best first (none for an error or
/// anything else that is not a search result).
pub fn found(result: &str) -> Vec<String> {
    let hits: serde_json::Value = serde_json::from_str(result).unwrap_or_default();
    hits["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// How a session came by the tools its task needs (`needed`): the best rank at which its
/// searches returned each (null when none did; all null for the control, which searches
/// nothing), how many searches it made, and how many calls went to a tool of an unconnected
/// system — directly (the control) or through `call_tool` (the pattern).
pub fn retrieval(needed: &[String], calls: &[SeenCall<'_>]) -> records::Retrieval {
    let foreign: std::collections::HashSet<&str> = catalogue::names(catalogue::MAX).collect();
    let mut best_rank: Vec<Option<u32>> = vec![None; needed.len()];
    let (mut searches, mut unconnected_calls) = (0, 0);
    for call in calls {
        match call.name {
            "search_tools" => {
                searches += 1;
                for (rank, tool) in found(call.result).iter().enumerate() {
                    let rank = rank as u32 + 1;
                    if let Some(i) = needed.iter().position(|n| n == tool) {
                        best_rank[i] = Some(best_rank[i].map_or(rank, |r| r.min(rank)));
                    }
                }
            }
            "call_tool" if call.arguments["name"].as_str().is_some_and(|n| foreign.contains(n)) => unconnected_calls += 1,
            name if foreign.contains(name) => unconnected_calls += 1,
            _ => {}
        }
    }
    records::Retrieval { needed: needed.to_vec(), best_rank, searches, unconnected_calls }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn retrieval_reads_ranks_off_searches_and_counts_unconnected_calls() {
        let needed = vec!["customers_list".to_owned(), "tickets_create".to_owned(), "users_list".to_owned()];
        let first = json!({"tools": [{"name": "deskflow_create_ticket"}, {"name": "tickets_create"}]}).to_string();
        let second = json!({"tools": [{"name": "tickets_create"}, {"name": "pipewise_list_accounts"}, {"name": "customers_list"}]}).to_string();
        let none = json!({});
        let args = |name: &str| json!({"name": name});
        let (a, b, c) = (args("deskflow_create_ticket"), args("tickets_create"), json!("not an object"));
        let calls = [
            SeenCall { name: "search_tools", arguments: &none, result: &first },
            SeenCall { name: "call_tool", arguments: &a, result: "Deskflow … is not connected" },
            SeenCall { name: "search_tools", arguments: &none, result: &second },
            SeenCall { name: "call_tool", arguments: &b, result: "{}" },
            SeenCall { name: "search_tools", arguments: &none, result: "no tool matches" },
            SeenCall { name: "call_tool", arguments: &c, result: "" },
        ];
        let r = retrieval(&needed, &calls);
        assert_eq!(r.best_rank, [Some(3), Some(1), None]);
        assert_eq!((r.searches, r.unconnected_calls), (3, 1));
        // The control searches nothing; a near-miss called by name is counted.
        let direct =
            [SeenCall { name: "pipewise_list_accounts", arguments: &none, result: "" }, SeenCall { name: "customers_list", arguments: &none, result: "" }];
        let r = retrieval(&needed, &direct);
        assert_eq!((r.best_rank, r.searches, r.unconnected_calls), (vec![None, None, None], 0, 1));
    }
}
