//! The task gates (`docs/honesty-rules.md` §2) that look at tasks themselves: G5 neutrality and G7 ground
//! truth. The pipeline runs them before spending anything; the test suite runs them over every
//! task of every module.

use rmcp::transport::TokioChildProcess;
use servers::ToolManifest;
use servers::registry::{self, ServerEntry};

use crate::load::Task;
use crate::replay::replay;
use crate::verify::Verdict;

/// A word a task text must not contain, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BannedTerm {
    pub term: String,
    /// E.g. "tool of wrapper", "resource of resource_gateway", "term of tool_orchestrator".
    pub source: String,
}

/// Every tool, resource template and resource name of both built-in arms of `module` and of
/// the `extra` arms that answer its tasks (external arms of the run), and the module's specific
/// terms. Resource names are listed from the running backend at `backend_url`.
pub async fn banned_terms(module: &str, extra: &[&ServerEntry], backend_url: &str) -> anyhow::Result<Vec<BannedTerm>> {
    let (pattern, control) = registry::arms(module).ok_or_else(|| anyhow::anyhow!("unknown module {module}"))?;
    let mut out = Vec::new();
    let mut arms = vec![pattern, control];
    arms.extend(extra.iter().copied().filter(|a| a.module == module && a.name != pattern.name && a.name != control.name));
    // A module with a catalogue is checked at its largest: every smaller catalogue is inside it.
    let largest = servers::launch::ArmSettings { catalogue: registry::module(module).and_then(|m| m.catalogue).map(|c| c.max), poison: None };
    for arm in arms {
        let manifest = ToolManifest::of_with(arm, backend_url, largest).await?;
        for t in &manifest.tools {
            out.push(BannedTerm { term: t.name.clone(), source: format!("tool of {}", arm.name) });
        }
        for t in &manifest.resource_templates {
            out.push(BannedTerm { term: t.name.clone(), source: format!("resource template of {}", arm.name) });
        }
        if manifest.resources {
            for name in resource_names(arm, backend_url).await? {
                out.push(BannedTerm { term: name, source: format!("resource of {}", arm.name) });
            }
        }
    }
    // A run may list distractors beside either arm: a task naming one, or its system, would
    // point the model at it (or away from it), whatever the level.
    for term in servers::distractors::banned_names() {
        out.push(BannedTerm { term, source: "a distractor (a tool of another server the client may list)".into() });
    }
    if let Some(m) = registry::module(module) {
        for t in m.specific_terms {
            out.push(BannedTerm { term: (*t).to_owned(), source: format!("term of {module}") });
        }
    }
    Ok(out)
}

async fn resource_names(arm: &ServerEntry, backend_url: &str) -> anyhow::Result<Vec<String>> {
    let session = servers::client::ArmClient::open(arm, backend_url).await?;
    let names = session.client.list_all_resources().await.map(|r| r.into_iter().map(|r| r.name.clone()).collect());
    session.close().await?;
    Ok(names?)
}

/// G5: the banned terms `task`'s text contains as words (case-insensitive). Empty means
/// neutral.
pub fn neutrality_violations(task: &Task, banned: &[BannedTerm]) -> Vec<BannedTerm> {
    let text = task.text.to_lowercase();
    banned.iter().filter(|b| contains_word(&text, &b.term.to_lowercase())).cloned().collect()
}

/// Whether `term` occurs in `text` as a word: not inside a longer word, so a banned `resolve`
/// does not ban the status `resolved`, nor `tickets_list` the name `tickets_list_all`. Letters,
/// digits and `_` make up words (tool names are snake_case); anything else bounds one.
pub fn contains_word(text: &str, term: &str) -> bool {
    if term.is_empty() {
        return false;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(term).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + term.len()..].chars().next();
        // A term that itself starts or ends with a non-word character needs no boundary there.
        let starts = !term.starts_with(word) || before.is_none_or(|c| !word(c));
        let ends = !term.ends_with(word) || after.is_none_or(|c| !word(c));
        starts && ends
    })
}

#[cfg(test)]
mod word_tests {
    use super::contains_word;

    #[test]
    fn a_term_is_matched_as_a_word_only() {
        assert!(contains_word("please resolve ticket 5", "resolve"));
        assert!(contains_word("resolve it.", "resolve"));
        assert!(contains_word("(resolve)", "resolve"));
        assert!(!contains_word("it is resolved now", "resolve"));
        assert!(!contains_word("unresolve", "resolve"));
        assert!(contains_word("call tickets_list first", "tickets_list"));
        assert!(!contains_word("call tickets_list_all first", "tickets_list"));
        assert!(contains_word("use the search tools here", "search tools"));
        assert!(!contains_word("research toolset", "search tools"));
        // A later occurrence counts when an earlier one is inside a word.
        assert!(contains_word("resolved, then resolve", "resolve"));
        assert!(contains_word("runbooks://service/x", "runbooks://"));
        assert!(!contains_word("anything", ""));
    }
}

/// How one arm fared in G7.
#[derive(Debug, Clone)]
pub struct GroundTruth {
    pub server: String,
    pub calls: usize,
    /// What the plan's replay sent and received, call by call.
    pub replay: crate::replay::ReplayReport,
    /// What the plan changed in the world, row by row: the task's expected footprint through
    /// this arm ([`crate::collateral`]).
    pub footprint: Vec<backend::world::RowChange>,
}

/// G7 for one task and one arm: on a freshly reset world the verifier must say *failed* (not
/// passed, not could-not-score); after the arm's oracle plan is replayed through the server, it
/// must pass. A built-in server runs over stdio, spawned with `command` + `NAME --transport
/// stdio --backend-url URL`; an external arm as its own process, as a session starts it.
pub async fn ground_truth(task: &Task, arm: &ServerEntry, world: &backend::World, backend_url: &str, command: &[String]) -> Result<GroundTruth, String> {
    ground_truth_with(task, arm, world, backend_url, command, Under::default()).await
}

/// What a run chooses that G7 replays under: the servers' settings, the attack planted, and how
/// the client reaches a built-in server — the run's transport and MCP revision, so that a design
/// that cannot work over them (state held per session, on a revision without sessions) is
/// refused before a session is spent, not found out by its sessions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Under<'a> {
    pub settings: servers::launch::ArmSettings,
    pub attack: Option<&'a crate::attack::Attack>,
    pub transport: Option<records::Transport>,
    pub protocol: servers::client::Protocol,
}

impl Under<'_> {
    /// `stdio`, or the transport named.
    fn transport(&self) -> records::Transport {
        self.transport.unwrap_or(records::Transport::Stdio)
    }
}

/// [`ground_truth`] with the servers started as the run starts them (its catalogue size, say),
/// and the world under the run's attack, if any (`--attack`: the task must stay solvable under it).
/// A plan that changes the world is replayed twice: the task's footprint through the arm (what
/// side effects are counted against, [`crate::collateral`]) is what the plan changes, so the
/// second replay may change nothing outside the first's, nor leave out anything the first changed.
pub async fn ground_truth_with(
    task: &Task,
    arm: &ServerEntry,
    world: &backend::World,
    backend_url: &str,
    command: &[String],
    under: Under<'_>,
) -> Result<GroundTruth, String> {
    let first = ground_truth_once(task, arm, world, backend_url, command, under).await?;
    if first.footprint.is_empty() {
        return Ok(first);
    }
    let second = ground_truth_once(task, arm, world, backend_url, command, under).await?;
    let beyond: Vec<String> = crate::collateral::collateral(&second.footprint, &first.footprint)
        .into_iter()
        .chain(crate::collateral::collateral(&first.footprint, &second.footprint))
        .map(|w| format!("{} {} {}", w.table, w.id, w.op))
        .collect();
    if !beyond.is_empty() {
        return Err(format!(
            "the oracle plan through {} changes other rows from one replay to the next ({}): its footprint, which side effects are counted against, is not its own",
            arm.name,
            beyond.join(", ")
        ));
    }
    Ok(first)
}

async fn ground_truth_once(
    task: &Task,
    arm: &ServerEntry,
    world: &backend::World,
    backend_url: &str,
    command: &[String],
    under: Under<'_>,
) -> Result<GroundTruth, String> {
    let Under { settings, attack, protocol, .. } = under;
    let server = arm.name;
    let plan = match (task.plan_for(server), arm.external()) {
        (Some(plan), _) => plan,
        (None, Some(ext)) => {
            return Err(format!("no oracle plan for {server}: write {} (every task the arm answers needs one)", ext.plan_path(&task.id).display()));
        }
        (None, None) => return Err(format!("no oracle plan for {server}")),
    };
    task.prepare_under(world, attack).await?;
    let pool = world.pool();
    let baseline = task.verifier.baseline(&pool).await?;
    let fresh = task.verifier.verify(&pool, &baseline, "").await;
    match fresh.verdict {
        Verdict::Failed => {}
        Verdict::Passed => return Err("the verifier passes on the untouched seeded state".into()),
        Verdict::CouldNotScore => return Err(format!("the verifier could not score the seeded state: {:?}", fresh.reasons)),
    }
    let report = if arm.external().is_some() {
        let session = servers::client::ArmClient::open_with(arm, backend_url, settings).await.map_err(|e| format!("starting {server}: {e:#}"))?;
        let report = shown_and_replayed(plan, &session.client).await;
        let stderr = session.stderr();
        let _ = session.close().await;
        report.map_err(|e| format!("oracle replay through {server}: {e}{}", servers::external::stderr_note(&stderr)))?
    } else if under.transport() == records::Transport::Http {
        let (url, serving) =
            servers::launch::serve_http_in_process_with(arm, backend_url, settings).await.map_err(|e| format!("serving {server} over HTTP: {e}"))?;
        let connected = servers::client::open_session(servers::tls::http_transport(url), protocol).await;
        let report = match connected {
            Ok(client) => {
                let report = shown_and_replayed(plan, &client).await;
                let _ = client.cancel().await;
                report.map_err(|e| format!("oracle replay through {server} (streamable HTTP, MCP {}): {e}", protocol.as_str()))
            }
            Err(e) => Err(format!("connecting to {server} over HTTP: {e}")),
        };
        serving.abort();
        report?
    } else {
        let (program, prefix) = command.split_first().ok_or("empty server command")?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(prefix).args(servers::launch::stdio_args_with(server, backend_url, settings));
        cmd.env("RUST_LOG", "warn");
        let transport = TokioChildProcess::new(cmd).map_err(|e| format!("spawning {server}: {e}"))?;
        let client = servers::client::open_session(transport, protocol).await.map_err(|e| format!("connecting to {server}: {e}"))?;
        let report = shown_and_replayed(plan, &client).await;
        let _ = client.cancel().await;
        report.map_err(|e| format!("oracle replay through {server}: {e}"))?
    };
    let (report, definitions) = report;
    let hidden = crate::discover::undiscoverable(plan, &crate::discover::Shown { task_text: &task.text, definitions: &definitions }, &report);
    if !hidden.is_empty() {
        let list: Vec<String> = hidden.iter().map(ToString::to_string).collect();
        return Err(format!(
            "the oracle plan through {server} uses what no model could know: {} (learnable values come from the task text, the functions the arm offers or an earlier result; make the arm show it, or the plan find it)",
            list.join("; ")
        ));
    }
    let (after, footprint) = task.verifier.verify_with_changes(&pool, &baseline, &report.answer).await;
    match after.verdict {
        // The oracle's answer is right by construction: a reference in it that the grounding
        // check does not find means the extractor is wrong (or the answer is).
        Verdict::Passed if ungrounded(&after).is_some() => {
            Err(format!("the oracle's answer through {server} is correct but not grounded: {}", ungrounded(&after).unwrap_or_default()))
        }
        Verdict::Passed => Ok(GroundTruth { server: server.to_owned(), calls: report.calls.len(), replay: report, footprint }),
        _ => Err(format!("after the oracle plan through {server}, the verifier says {:?}: {:?}", after.verdict, after.reasons)),
    }
}

/// The functions the server offers, as a model sees them ([`servers::offered`]: the agent offers
/// exactly these), then `plan` replayed.
async fn shown_and_replayed(
    plan: &crate::OraclePlan,
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
) -> Result<(crate::replay::ReplayReport, String), crate::replay::ReplayError> {
    let shown = match servers::offered::of_server(peer).await {
        Ok((tools, resources)) => serde_json::to_string(&servers::offered::definitions(&tools, resources.as_deref())).unwrap_or_default(),
        // A server that cannot list its tools fails the replay's first call by itself.
        Err(_) => String::new(),
    };
    replay(plan, peer).await.map(|r| (r, shown))
}

/// The references of a verified answer that are not grounded (denied ones are fine: the answer
/// says they do not exist), or none.
fn ungrounded(outcome: &records::VerifierOutcome) -> Option<String> {
    let Some(g) = &outcome.grounding else { return Some("its grounding could not be read".into()) };
    let bad: Vec<String> = g
        .references
        .iter()
        .filter(|r| matches!(r.status, records::Groundedness::Hallucinated | records::Groundedness::Unresolved))
        .map(|r| format!("{:?} ({}, {:?}: {})", r.text, r.kind.as_str(), r.status, r.detail.as_deref().unwrap_or("")))
        .collect();
    (!bad.is_empty()).then(|| bad.join("; "))
}
