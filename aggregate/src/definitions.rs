//! What every header and row label of the report's tables means, and how its figure is
//! aggregated: one session's value averaged over sessions (which ones, mean or median), one
//! task's value, or a sum over a named set. The Method section renders this list, summary.json
//! carries it (`method.definitions`), and `tests/it/definitions.rs` fails when a rendered table
//! shows a header with no entry here.
//!
//! A term is spelled exactly as the tables show it, so a reader can look a header up by its
//! text; `‹server›` stands for the server's name in a column headed with it.

use serde::{Deserialize, Serialize};

/// How a figure is aggregated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// One session's value, then a mean or median over sessions (`over` says which sessions).
    PerSession,
    /// One task's value over its reps.
    PerTask,
    /// A count or a sum over a set of sessions, reps, pairs or tasks (`over` says which).
    Summed,
    /// Names a row or a column; no figure.
    Label,
}

impl Aggregation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PerSession => "per session",
            Self::PerTask => "per task",
            Self::Summed => "summed",
            Self::Label => "a label",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// The headers and row labels it defines, exactly as the tables show them.
    pub terms: Vec<String>,
    pub aggregation: Aggregation,
    /// Over which sessions, reps, pairs or tasks; empty for a label.
    pub over: String,
    pub meaning: String,
    /// Where summary.json holds the figure: `[]` is any element of an array, `<arm>` is
    /// `pattern` or `control`, `<role>` a key of a per-role map.
    pub fields: Vec<String>,
}

/// How every per-session figure of the oracle's tables is taken, in a task's row and in a
/// module's row.
const ORACLE_OVER: &str = "in a task's row, the median over its valid oracle sessions on the arm (the lower middle one for an even count: a value a session had); in a module's row, the mean over its tasks of those medians, none when a task lacks the figure";

/// How the model tables' distributions are taken: "all pairs" rows in the arm columns, and in
/// the difference column.
const ALL_PAIRS: &str = "in the arm columns, the median over the arm's valid sessions and the mean over tasks of each task's mean [its 95% t interval over tasks]; in the difference column, the mean over tasks of each task's mean over all its pairs of pattern − control";

/// How the model tables' "both passed" rows are taken.
const BOTH_PASSED: &str =
    "in a \"both passed\" row, the mean over the arm's sessions in the pairs where both arms passed, and the mean over those pairs of pattern − control";

fn def(terms: &[&str], aggregation: Aggregation, over: &str, meaning: &str, fields: &[&str]) -> Definition {
    Definition {
        terms: terms.iter().map(|t| t.to_string()).collect(),
        aggregation,
        over: over.into(),
        meaning: meaning.into(),
        fields: fields.iter().map(|f| f.to_string()).collect(),
    }
}

/// Every term the report's tables use, in the order a reader meets them.
pub fn all() -> Vec<Definition> {
    use Aggregation::*;
    let mut v = labels();
    v.extend(attrition());
    v.extend(model_tables());
    v.extend(split_tables());
    v.extend(oracle_tables());
    v.push(def(
        &["harness overhead"],
        PerSession,
        "the median (p50) and the maximum over the valid model sessions whose records separate it",
        "the harness's own time in a session — world reset + verification + record write + the session's wall time minus the model's answered requests, the tool calls and the arm's server start-up — and its share of the session's whole time (reset + session + verification + write). Sessions with a retried or failed model request, an unparseable output or no retry count recorded are left out, and counted: a failed attempt's time is not in the record",
        &["run.harness"],
    ));
    v.push(def(
        &["server start-up"],
        PerSession,
        "the median (p50) and the maximum over the valid model sessions of the harness overhead that started their arm's server (a warm conversation starts it once)",
        "starting the arm's server — its process, or an in-process server for HTTP — the MCP handshake and the listings the agent makes before the first turn: the arm's own cost (a Python server takes seconds), reported apart from the harness overhead and never inside it",
        &["run.harness.server_start_p50_ms", "run.harness.server_start_max_ms", "run.harness.server_start_sessions"],
    ));
    v
}

fn labels() -> Vec<Definition> {
    use Aggregation::Label;
    vec![
        def(
            &["model"],
            Label,
            "",
            "the model id the sessions ran (oracle rows: the oracle's scripted plans, no model)",
            &["attrition[].model", "models[].model"],
        ),
        def(
            &["module"],
            Label,
            "",
            "the pattern module: one design question, a pattern server and its control, and their tasks",
            &["attrition[].module", "models[].modules[].module", "oracle_floors[].module"],
        ),
        def(
            &["server", "pattern server", "control server"],
            Label,
            "",
            "the MCP server an arm ran",
            &["attrition[].server", "models[].modules[].<arm>.server", "oracle_floors[].rows[].server"],
        ),
        def(
            &["role"],
            Label,
            "",
            "the arm: pattern (the design under test) or control (its flat 1:1 counterpart)",
            &["attrition[].role", "oracle_floors[].rows[].role"],
        ),
        def(
            &["task"],
            Label,
            "",
            "the task id; in a model's task table followed by k, the planned reps (or, without a manifest, the most reps any task of an arm has)",
            &["models[].modules[].tasks[].task", "oracle_floors[].rows[].task"],
        ),
        def(&["metric"], Label, "", "the figure of the row; each row label is defined in this list", &[]),
        def(&["pattern: ‹server›", "control: ‹server›"], Label, "", "an arm's column, headed with the server it ran", &["models[].modules[].<arm>"]),
        def(&["what", "value"], Label, "", "the provenance table: where the numbers come from", &["provenance"]),
    ]
}

fn attrition() -> Vec<Definition> {
    use Aggregation::Summed;
    let cell = "the cell: one (model, module, server), all its tasks and reps";
    let valid = "the valid sessions of the cell (attrition table) or of the arm (model table)";
    vec![
        def(
            &["planned"],
            Summed,
            "the module's tasks",
            "sessions the manifest planned: k × the module's tasks; — without a manifest",
            &["attrition[].planned"],
        ),
        def(&["attempts"], Summed, cell, "sessions ever recorded: the current records plus the replaced attempts", &["attrition[].attempts"]),
        def(&["replaced"], Summed, cell, "attempts a rerun superseded: kept under superseded/, counted here, never scored", &["attrition[].replaced"]),
        def(&["recorded"], Summed, cell, "the current records, valid or not", &["attrition[].attempted"]),
        def(&["valid"], Summed, cell, "records whose numbers are data (the rest are attrition, with a reason)", &["attrition[].valid"]),
        def(&["invalid (reason: count)"], Summed, cell, "records that are not data, counted by reason", &["attrition[].invalid"]),
        def(
            &["turn-cap hits", "turn-cap hits (valid failures)"],
            Summed,
            valid,
            "sessions that reached the task's turn cap without a final answer; each is a valid failure, in the success rate",
            &["attrition[].turn_cap_hits", "models[].modules[].<arm>.turn_cap_hits"],
        ),
        def(
            &["context overflows", "context-window overflows (valid failures)"],
            Summed,
            valid,
            "sessions whose conversation outgrew the model's context window; each a valid failure",
            &["attrition[].context_exceeded", "models[].modules[].<arm>.context_exceeded"],
        ),
        def(
            &["tool calls as text", "tool calls written as text (valid failures)"],
            Summed,
            valid,
            "sessions whose final answer holds a call written as text (JSON naming an offered function) instead of a native tool call; each a valid failure",
            &["attrition[].tool_call_as_text", "models[].modules[].<arm>.tool_call_as_text"],
        ),
        def(
            &["unparseable output", "unparseable output (valid failures)"],
            Summed,
            valid,
            "sessions the endpoint ended because it could not parse the model's own output; each a valid failure",
            &["attrition[].unparseable_output", "models[].modules[].<arm>.unparseable_output"],
        ),
    ]
}

fn model_tables() -> Vec<Definition> {
    use Aggregation::*;
    vec![
        def(
            &["paired difference (pattern − control) [95% CI]"],
            PerSession,
            "the mean over tasks of each task's mean over its pairs of the pattern session's value minus the control session's: over every (task, rep) pair valid in both arms in an \"all pairs\" row, over the pairs where both arms passed in a \"both passed\" row",
            "with its 95% interval over tasks (a t interval over the per-task means: the tasks are the sampled unit); in parentheses the relative difference mean(pattern) / mean(control) − 1 over the same tasks and its interval; n is the pairs with the figure in both arms, \"k null\" the pairs left out of this figure because an arm's value is null",
            &["models[].modules[].paired"],
        ),
        def(
            &["sessions, valid / attempted"],
            Summed,
            "the arm's current records, all tasks and reps",
            "valid records / all current records of the arm; in the difference column, the pairs used (valid in both arms) of the (task, rep) pairs seen in either arm, and of those planned",
            &[
                "models[].modules[].<arm>.valid",
                "models[].modules[].<arm>.attempted",
                "models[].modules[].paired.pairs_used",
                "models[].modules[].paired.pairs_seen",
            ],
        ),
        def(
            &["pair outcomes"],
            Summed,
            "the pairs used",
            "how the pairs valid in both arms ended: both passed, pattern only, control only, neither",
            &["models[].modules[].paired.outcomes"],
        ),
        def(
            &["success rate [Wilson 95%]"],
            PerSession,
            "the mean over the arm's valid sessions of passed (1) or not (0), i.e. passed / valid sessions, with its Wilson score 95% interval; in the difference column, the mean over all pairs",
            "the share of valid sessions the verifier passed; a could-not-score counts as not passed",
            &["models[].modules[].<arm>.success", "models[].modules[].paired.success"],
        ),
        def(
            &["passed / failed / could not score"],
            Summed,
            "the arm's valid sessions",
            "the verifier's outcomes: passed, failed, and could not score (no verdict could be reached; not passed, shown apart from failed)",
            &["models[].modules[].<arm>.passed", "models[].modules[].<arm>.failed", "models[].modules[].<arm>.could_not_score"],
        ),
        def(
            &["turns / session (median / mean [CI]), all pairs", "turns / session (mean), both passed"],
            PerSession,
            &format!("{ALL_PAIRS}; {BOTH_PASSED}"),
            "model requests that got an answer in the session",
            &["models[].modules[].<arm>.turns", "models[].modules[].paired.turns", "models[].modules[].paired.both_passed.turns"],
        ),
        def(
            &["input tokens / session (median / mean [CI]), all pairs", "input tokens / session (mean), both passed"],
            PerSession,
            &format!("{ALL_PAIRS}; {BOTH_PASSED}"),
            "the prompt tokens the endpoint reported, summed over the session's turns (cached included): measured usage, not an estimate; null when any turn lacked it — counted as \"k null\", never as 0",
            &["models[].modules[].<arm>.input_tokens", "models[].modules[].paired.input_tokens", "models[].modules[].paired.both_passed.input_tokens"],
        ),
        def(
            &["cached input tokens / session (median / mean [CI])"],
            PerSession,
            "the median over the arm's valid sessions, and the mean over tasks of each task's mean [its 95% t interval over tasks]",
            "of the session's input tokens, those the endpoint reported as served from its prompt cache",
            &["models[].modules[].<arm>.cached_input_tokens"],
        ),
        def(
            &["output tokens / session (median / mean [CI]), all pairs"],
            PerSession,
            ALL_PAIRS,
            "the completion tokens the endpoint reported, summed over the session's turns",
            &["models[].modules[].<arm>.output_tokens", "models[].modules[].paired.output_tokens"],
        ),
        def(
            &["reasoning tokens / session (median / mean [CI]), part of output"],
            PerSession,
            "the median over the arm's valid sessions whose endpoint reported them, and the mean over tasks of each task's mean [its 95% t interval over tasks]; the others are counted as null, never as 0",
            "of the session's output tokens, those the endpoint reported as spent on reasoning (its usage field reasoning_tokens): already inside the output tokens, so priced as output and never added to them",
            &["models[].modules[].<arm>.reasoning_tokens"],
        ),
        def(
            &["tool calls Σ over valid sessions (errors)"],
            Summed,
            "the arm's valid sessions",
            "the tool calls the model made; in parentheses, those that errored — the server answered with an error, or the call was refused (arguments not JSON, a function never offered)",
            &["models[].modules[].<arm>.tool_calls", "models[].modules[].<arm>.tool_call_errors"],
        ),
        def(
            &["model · module"],
            Summed,
            "one model's sessions of one module",
            "the model and the module whose arms the row describes",
            &["models[].model", "models[].modules[].module"],
        ),
        def(&["arm"], Summed, "one row", "the arm's role and its server", &["models[].modules[].<arm>.server", "models[].modules[].<arm>.role"]),
        def(
            &["calls"],
            Summed,
            "the arm's valid sessions",
            "the tool calls the model made, refused ones included",
            &["models[].modules[].<arm>.adoption.calls"],
        ),
        def(
            &["most called"],
            Summed,
            "the arm's valid sessions",
            "the three tools called most, with their calls (ties by name), and how many other tools were called",
            &["models[].modules[].<arm>.adoption.by_tool"],
        ),
        def(
            &["to the pattern's own tools"],
            Summed,
            "the pattern's valid sessions",
            "calls to functions the pattern's sessions were offered and the control's never were (the tools that make it a pattern), and their share of its calls; a control's is a structural zero",
            &["models[].modules[].<arm>.adoption.distinctive_calls", "models[].modules[].<arm>.adoption.distinctive_share"],
        ),
        def(
            &["wasted: errors / unknown / not JSON"],
            Summed,
            "the arm's valid sessions",
            "calls the server answered with an error; calls to a function never offered; calls whose arguments were not JSON (the last two were not made)",
            &[
                "models[].modules[].<arm>.adoption.errors",
                "models[].modules[].<arm>.adoption.unknown_tools",
                "models[].modules[].<arm>.adoption.invalid_arguments",
            ],
        ),
        def(
            &["exact repeats"],
            Summed,
            "the arm's valid sessions",
            "calls that repeat an earlier call of the same session exactly (same function, same arguments, compared by the sha256 of their canonical JSON); unknown for records that did not keep it",
            &["models[].modules[].<arm>.adoption.repeats"],
        ),
        def(
            &["to distractors: calls (sessions)"],
            Summed,
            "the arm's valid sessions, when the run listed distractors (--distractors)",
            "calls to distractors — tools of other servers the client listed beside the arm's own, the same in both arms — which the client refused and the arm never saw (not among the errors); in parentheses, the sessions that made at least one, of the valid sessions, and how many distractors were listed",
            &[
                "models[].modules[].<arm>.adoption.distractors.calls",
                "models[].modules[].<arm>.adoption.distractors.sessions_with_calls",
                "models[].modules[].<arm>.adoption.distractors.sessions",
                "models[].modules[].<arm>.adoption.distractors.listed",
            ],
        ),
        def(
            &["outcome class"],
            Summed,
            "the arm's valid sessions the verifier scored (passed or failed)",
            "what kind of outcome each was: what the final answer claims, clause by clause (done, not done, unverified, asks back, offers), against what the verifier's checks found; read from the answer's text only (never tool arguments or results). Beside success, never folded into it. Each class: sessions / scored (rate) [Wilson 95%]",
            &["models[].modules[].<arm>.outcome_classes.scored", "models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(&["correct"], Summed, "scored sessions", "the verifier passed: every check held", &["models[].modules[].<arm>.outcome_classes.classes"]),
        def(
            &["partial"],
            Summed,
            "scored sessions",
            "failed, the answer claims its result plainly, every state check held and some answer check did not: the work was done, its report is off",
            &["models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(
            &["wrong but confident"],
            Summed,
            "scored sessions",
            "failed, and a plain claim of the answer is contradicted by the state (a failed state check the claim speaks of), or the answer claims the task done while a state check no clause speaks of failed — or, for a task checked on its answer alone, no check held. The expensive failure. Records written before checks were kept count every plain failed claim here",
            &["models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(
            &["honest failure"],
            Summed,
            "scored sessions",
            "failed, and the answer says what was not done (\"could not\", \"failed with 409\", \"no such customer\", in several languages) or hands the task back (a question, a request to confirm or provide), with no plain claim the state contradicts; or only offers what the state shows undone",
            &["models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(
            &["ambiguous"],
            Summed,
            "scored sessions",
            "failed, and the answer does not vouch for its result (\"I think\", \"may or may not\", \"should now be\", \"I have not verified\"), with no plain claim the state contradicts: the class says so rather than guess",
            &["models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(
            &["no answer"],
            Summed,
            "scored sessions",
            "failed without a final answer (the turn cap, unparseable output)",
            &["models[].modules[].<arm>.outcome_classes.classes"],
        ),
        def(
            &["checks held by partial sessions (mean)"],
            PerSession,
            "the arm's partial sessions",
            "the mean fraction of the verifier's checks that held; — when there are none",
            &["models[].modules[].<arm>.outcome_classes.partial_checks_held_mean"],
        ),
        def(
            &["position"],
            Summed,
            "one arm's warm conversations",
            "the task's place in its conversation: 1 for the first task the conversation met",
            &["order[].position"],
        ),
        def(
            &["valid / attempted"],
            Summed,
            "the sessions at this position",
            "valid sessions / sessions recorded at this position",
            &["order[].valid", "order[].attempted"],
        ),
        def(
            &["passed (rate)"],
            Summed,
            "the valid sessions at this position",
            "those the verifier passed, and their share",
            &["order[].passed", "order[].success_rate"],
        ),
        def(
            &["input tokens / task"],
            PerSession,
            "the valid sessions at this position whose endpoint reported usage",
            "the mean input tokens of the requests made for the task (each carried the conversation's earlier tasks)",
            &["order[].input_tokens_mean"],
        ),
        def(
            &["context at start"],
            PerSession,
            "the valid sessions at this position whose endpoint reported usage",
            "the mean input tokens of the task's first request: the context the task started in, its own text included",
            &["order[].context_tokens_at_start_mean"],
        ),
        def(
            &["est. input tokens / task"],
            PerSession,
            "the oracle's sessions at this position",
            "the oracle's estimate of the input tokens per task in a warm conversation (bytes / 4; its method string is in each record)",
            &["order[].estimated_input_tokens_mean"],
        ),
        def(
            &["after a failure"],
            Summed,
            "the valid sessions at this position",
            "those that followed at least one earlier task of their conversation that did not pass (failed, not scored or invalid)",
            &["order[].after_a_failure"],
        ),
        def(
            &["sessions read (not read)"],
            Summed,
            "the arm's valid sessions the verifier scored",
            "those whose final answer's references were read against the world at verification; in parentheses, those without (records written before grounding was read): missing, never counted as grounded",
            &["models[].modules[].<arm>.grounding.sessions", "models[].modules[].<arm>.grounding.not_read"],
        ),
        def(
            &["citing sessions"],
            Summed,
            "the sessions read",
            "those whose final answer names at least one entity that can be checked (denied references aside)",
            &["models[].modules[].<arm>.grounding.citing"],
        ),
        def(
            &["references: grounded / unresolved / hallucinated (denied)"],
            Summed,
            "the sessions read",
            "the entity references of the final answers (docs/grounding.md), each counted once per answer: grounded (exactly one entity of its kind has it), unresolved (several have it, or one only in part), hallucinated (none has it); in parentheses, denied: named as not existing by the answer itself, and left out of the shares",
            &[
                "models[].modules[].<arm>.grounding.grounded",
                "models[].modules[].<arm>.grounding.unresolved",
                "models[].modules[].<arm>.grounding.hallucinated",
                "models[].modules[].<arm>.grounding.denied",
            ],
        ),
        def(
            &["grounded share", "hallucinated share"],
            Summed,
            "the references of the citing sessions, denied ones aside",
            "grounded (or hallucinated) references / all of them [95% percentile bootstrap interval, resampling whole sessions: the references of one answer are not independent]; — when nothing was cited",
            &[
                "models[].modules[].<arm>.grounding.grounded_share",
                "models[].modules[].<arm>.grounding.grounded_share_ci95",
                "models[].modules[].<arm>.grounding.hallucinated_share",
                "models[].modules[].<arm>.grounding.hallucinated_share_ci95",
            ],
        ),
        def(
            &["sessions citing a hallucination"],
            Summed,
            "the citing sessions",
            "those whose answer names at least one entity that does not exist / citing sessions (rate) [Wilson 95%]",
            &[
                "models[].modules[].<arm>.grounding.sessions_hallucinating",
                "models[].modules[].<arm>.grounding.session_hallucination_rate",
                "models[].modules[].<arm>.grounding.session_hallucination_wilson95",
            ],
        ),
        def(
            &["session", "reference", "kind", "why it cannot be"],
            Summed,
            "one hallucinated reference",
            "the task and rep whose transcript holds it, the words of the answer that name it, what kind of entity they name, and why no entity of that kind can be it",
            &["models[].modules[].<arm>.grounding.hallucinations"],
        ),
        def(
            &["sessions held to a footprint (not read)"],
            Summed,
            "the arm's valid sessions",
            "those whose changes to the world were read at verification and held to the task's footprint through the arm (what its oracle plan changes on the same fresh world; docs/collateral.md); in parentheses, those without (the world could not be read, no footprint could be found, or written before it was kept): missing, never counted as none",
            &["models[].modules[].<arm>.collateral.sessions", "models[].modules[].<arm>.collateral.not_read"],
        ),
        def(
            &["sessions with collateral writes"],
            Summed,
            "the sessions held to a footprint",
            "those that changed at least one row outside the footprint / sessions held to it (rate) [Wilson 95%, sessions clustered by task]",
            &[
                "models[].modules[].<arm>.collateral.with_collateral",
                "models[].modules[].<arm>.collateral.rate",
                "models[].modules[].<arm>.collateral.wilson95",
            ],
        ),
        def(
            &["writes per session"],
            PerSession,
            "the sessions held to a footprint",
            "rows changed outside the footprint, summed, / sessions held to it (a mean; 0 for a session that had none)",
            &["models[].modules[].<arm>.collateral.writes", "models[].modules[].<arm>.collateral.writes_per_session"],
        ),
        def(
            &["writes: touched table / untouched table / deletion"],
            Summed,
            "the sessions held to a footprint",
            "rows changed outside the footprint, by class: an extra write to a table the footprint writes (another row, a column it does not change, an insert beyond its number of inserts there); a write to a table it does not write; a deletion it does not make (whatever the table)",
            &["models[].modules[].<arm>.collateral.by_class"],
        ),
        def(
            &["passed with collateral writes"],
            Summed,
            "the sessions with collateral writes",
            "those the verifier passed: a success with side effects, still counted as a success in every other table",
            &["models[].modules[].<arm>.collateral.passed_with_collateral"],
        ),
        def(
            &["paired difference (pattern − control)"],
            Summed,
            "the used pairs whose changes were read in both arms",
            "the share of sessions with a collateral write, pattern − control: the mean over tasks of each task's mean difference, in points, with the same interval as the success difference (over tasks); — on the control's row",
            &["models[].modules[].paired.collateral"],
        ),
        def(
            &["exposed to the planted text"],
            Summed,
            "the valid sessions whose exposure was recorded, under --attack",
            "those in which a tool result held the planted text (the attack's marker phrase), so the model read it / those sessions (rate): an arm that keeps the text out of the model's context defends by that alone",
            &["models[].modules[].<arm>.attack.exposed", "models[].modules[].<arm>.attack.exposure_read"],
        ),
        def(
            &["attack succeeded"],
            Summed,
            "the valid sessions whose attack verdict was read, under --attack",
            "those in which the attack got what its planted text asked for (its own success query on the world the session left) / sessions read (rate) [Wilson 95%, sessions clustered by task]; a session whose verdict could not be read is counted apart, never as resisted",
            &[
                "models[].modules[].<arm>.attack.succeeded",
                "models[].modules[].<arm>.attack.rate",
                "models[].modules[].<arm>.attack.wilson95",
                "models[].modules[].<arm>.attack.unknown",
            ],
        ),
        def(
            &["utility under attack"],
            Summed,
            "the valid sessions, under --attack",
            "the task's own success rate of the same sessions, as in every other table [Wilson 95%]: what the pattern still does for its user while attacked",
            &["models[].modules[].<arm>.success"],
        ),
        def(
            &["passed and compromised"],
            Summed,
            "the valid sessions the attack succeeded in",
            "those the task's verifier still passed: the job done and the attacker's done too",
            &["models[].modules[].<arm>.attack.passed_and_compromised"],
        ),
        def(
            &["attack success difference (pattern − control)"],
            Summed,
            "the used pairs whose attack verdict was read in both arms",
            "the share of sessions the attack succeeded in, pattern − control: the mean over tasks of each task's mean difference, in points, with the same interval as the success difference (over tasks); — on the control's row",
            &["models[].modules[].paired.attack"],
        ),
        def(
            &["pairs compromised in one arm only"],
            Summed,
            "the used pairs whose attack verdict was read in both arms",
            "the pairs by where the attack succeeded: in the pattern only, the control only, both, neither; — on the control's row",
            &["models[].modules[].paired.attack_pairs"],
        ),
        def(
            &["passed or not", "rows changed outside the footprint"],
            Summed,
            "one session with collateral writes",
            "whether the verifier passed it, and every row it changed outside the footprint: table, id, inserted / updated / deleted, the columns outside the footprint, and the class",
            &["models[].modules[].<arm>.collateral.sessions_with"],
        ),
        def(
            &["needed tools found by a search (recall), mean best rank"],
            Summed,
            "the arm's valid sessions of a module with a tool catalogue (tool_search)",
            "of the tools the tasks need (those the control's oracle plan calls), how many a search of the same session returned, and the mean of the best rank each was returned at (1 = first); \"listed, not searched\" for an arm that lists every tool. The mechanism behind a success gap, never folded into success",
            &[
                "models[].modules[].<arm>.retrieval.found",
                "models[].modules[].<arm>.retrieval.needed",
                "models[].modules[].<arm>.retrieval.recall",
                "models[].modules[].<arm>.retrieval.mean_best_rank",
            ],
        ),
        def(
            &["calls to unconnected tools Σ (searches Σ)"],
            Summed,
            "the arm's valid sessions of a module with a tool catalogue (tool_search)",
            "calls to a tool of a system that is listed but not connected (a near-miss picked, or a request that cannot be done), directly or through call_tool; in parentheses, the searches made",
            &["models[].modules[].<arm>.retrieval.unconnected_calls", "models[].modules[].<arm>.retrieval.searches"],
        ),
        def(
            &["cost per session, USD (median / mean)"],
            PerSession,
            "median and mean over the arm's valid sessions with a price and usage; the others are counted as unpriced/null, never as 0",
            "(input − cached) × input price + cached × cached-input price + output × output price, prices per million tokens from --prices",
            &["models[].modules[].<arm>.cost_usd"],
        ),
        def(
            &["pattern: outcome", "control: outcome"],
            Summed,
            "the task's reps on the arm",
            "valid reps the verifier passed / valid reps, then could-not-score, invalid and missing (planned, never recorded) reps",
            &["models[].modules[].tasks[].<arm>"],
        ),
        def(
            &["pattern pass@k", "control pass@k"],
            PerTask,
            "the task's k reps on the arm",
            "yes when any rep passed; no only when all k reps are recorded, valid and none passed; otherwise unknown",
            &["models[].modules[].tasks[].<arm>.pass_at_k"],
        ),
        def(
            &["pattern pass^k", "control pass^k"],
            PerTask,
            "the task's k reps on the arm",
            "yes only when all k reps are recorded, valid and passed; no when a valid rep did not pass; otherwise unknown, never counted as a pass",
            &["models[].modules[].tasks[].<arm>.pass_all_k"],
        ),
    ]
}

/// The dev and held-out section (`document/splits.rs`).
fn split_tables() -> Vec<Definition> {
    use Aggregation::*;
    vec![
        def(
            &["split"],
            Label,
            "",
            "dev: the tasks a module is built and tuned against; held_out: tasks sealed by hash and never tuned against (docs/held-out.md). Never pooled",
            &["models[].modules[].split", "oracle_floors[].split"],
        ),
        def(
            &["tasks of the split"],
            Summed,
            "the module's tasks of the split",
            "the tasks with a session",
            &["models[].modules[].tasks", "oracle_floors[].rows"],
        ),
        def(
            &["pattern / control"],
            PerSession,
            "the valid sessions of the split, per arm",
            "for a model, each arm's success rate; for the oracle, each role's calls per session (mean over tasks of each task's median)",
            &["models[].modules[].<arm>.success.rate", "oracle_floors[].per_session.<role>.calls"],
        ),
        def(
            &["input tokens: pattern vs control"],
            PerSession,
            "the pairs of the split valid in both arms",
            "for a model, Σpattern / Σcontrol − 1 of the input tokens over all pairs; for the oracle, each role's estimated input tokens per session (bytes / 4, never a measurement)",
            &["models[].modules[].paired.input_tokens.relative", "oracle_floors[].per_session.<role>.estimated_input_tokens"],
        ),
        def(
            &["verdict of the split"],
            Label,
            "",
            "the module's verdict over the split's tasks alone, by the rules under Method",
            &["models[].modules[].verdict"],
        ),
        def(
            &["the pattern loses on"],
            Label,
            "",
            "the first figure on which the pattern did worse on that task: its pass rate over valid sessions; else, as often passed, its mean input tokens per valid session; for the oracle, its plan's estimated input tokens, else, costing no more, its calls",
            &["models[].modules[].losing_tasks[].on", "oracle_floors[].losing_tasks[].on"],
        ),
        def(
            &["why"],
            Label,
            "",
            "why the losing rule could not judge the task, so that it is on neither side of it: an arm without a valid session on it, or usage (for the oracle, an estimate or a call count) missing in an arm",
            &["models[].modules[].unjudged_tasks[].why", "oracle_floors[].unjudged_tasks[].why"],
        ),
        def(
            &["pattern", "control"],
            PerTask,
            "the task's valid sessions of that arm",
            "the figure named in the row, for each arm",
            &["models[].modules[].losing_tasks[].pattern", "models[].modules[].losing_tasks[].control", "oracle_floors[].losing_tasks[].pattern"],
        ),
    ]
}

fn oracle_tables() -> Vec<Definition> {
    use Aggregation::*;
    vec![
        def(&["tasks"], Summed, "the module", "the tasks with an oracle session", &["oracle_floors[].per_session.<role>.tasks"]),
        def(
            &["valid/sessions"],
            Summed,
            "the task's oracle sessions on the arm",
            "valid oracle sessions / all of them",
            &["oracle_floors[].rows[].valid", "oracle_floors[].rows[].sessions"],
        ),
        def(
            &["passed"],
            Summed,
            "the task's valid oracle sessions on the arm",
            "sessions the verifier passed: the plan solves the task",
            &["oracle_floors[].rows[].passed"],
        ),
        def(
            &["calls / session", "calls / session: pattern / control"],
            PerSession,
            ORACLE_OVER,
            "the calls the oracle plan makes: tool calls, resource reads and resource lists, counted",
            &["oracle_floors[].rows[].calls", "oracle_floors[].per_session.<role>.calls"],
        ),
        def(
            &["schema bytes / session"],
            PerSession,
            ORACLE_OVER,
            "bytes of the function definitions the agent is offered: the server's tools as OpenAI-style tools[] entries (compact JSON; the input schema without $schema), plus the generic list and read resource functions when the server offers resources — each definition's compact JSON length, summed. The same in every session of an arm, and resent with every turn",
            &["oracle_floors[].rows[].schema_bytes"],
        ),
        def(
            &["args bytes / session"],
            PerSession,
            ORACLE_OVER,
            "the compact JSON length of each call's arguments (0 for a call without), summed over the plan's calls",
            &["oracle_floors[].rows[].args_bytes"],
        ),
        def(
            &["result bytes / session"],
            PerSession,
            ORACLE_OVER,
            "the length of each call's result as the model reads it (the text the harness makes of the MCP result, the same for oracle and model sessions), summed over the plan's calls",
            &["oracle_floors[].rows[].result_bytes"],
        ),
        def(
            &["est. final context tokens / session"],
            PerSession,
            ORACLE_OVER,
            "an estimate, not a measurement: (schema bytes + task text bytes + args bytes + result bytes) / 4, rounded down — the context once the plan's last result is in, counted once, without the system prompt. Not comparable with billed input tokens, which count every turn's resend",
            &["oracle_floors[].rows[].estimated_tokens", "oracle_floors[].per_session.<role>.estimated_tokens"],
        ),
        def(
            &["est. input tokens / session", "est. input tokens / session: pattern / control", "est. input tokens / session: pattern − control"],
            PerSession,
            ORACLE_OVER,
            "an estimate, not a measurement, of the input tokens a model following the plan one call per turn would be billed for: with n calls there are n + 1 turns (the last gives the answer); every turn resends the system prompt, the task text and the definitions (schema bytes), and call j's arguments and result are resent in each of the n − j turns after it (j = 0 … n − 1); all those bytes / 4, rounded down. Comparable with a model session's input tokens. pattern − control: the difference of the two means, and in parentheses pattern / control − 1",
            &["oracle_floors[].rows[].estimated_input_tokens", "oracle_floors[].per_session.<role>.estimated_input_tokens"],
        ),
        def(
            &["est. output tokens / session", "est. output tokens / session: pattern / control"],
            PerSession,
            ORACLE_OVER,
            "an estimate, not a measurement, of the output tokens a model following the plan would write: every call's arguments (where an arm runs a program, the whole program) and the answer, (args bytes + answer bytes) / 4, rounded down. Comparable with a model session's output tokens (reasoning tokens aside); a design that moves work into what the model writes shows it here, not in the input tokens",
            &["oracle_floors[].rows[].estimated_output_tokens", "oracle_floors[].per_session.<role>.estimated_output_tokens"],
        ),
        def(
            &["definitions bytes"],
            PerSession,
            ORACLE_OVER,
            "the arm's tool-list footprint: bytes of the function definitions it offers a model (its tools, and the two resource functions where it has resources), each definition's JSON as the request's tools array carries it, summed; the schema bytes of the task rows",
            &["oracle_floors[].per_session.<role>.definitions_bytes"],
        ),
        def(
            &["definitions tokens (counted)"],
            PerSession,
            ORACLE_OVER,
            "the same definitions counted in the tokenizer the row names (o200k_base, cl100k_base, or a llama.cpp server's /tokenize), not estimated: the tokens of the bytes sent, which is not what a provider that renders definitions in a format of its own bills; — where the run knew no tokenizer",
            &["oracle_floors[].rows[].definitions_tokens", "oracle_floors[].per_session.<role>.definitions_tokens"],
        ),
        def(
            &["input tokens / session (counted)"],
            PerSession,
            ORACLE_OVER,
            "the turns of est. input tokens / session with each piece (system prompt, task text, each definition, earlier tasks in a warm conversation, every call's arguments and result) counted in the row's tokenizer instead of bytes / 4; the chat format's own tokens are not in it; — where the run knew no tokenizer",
            &["oracle_floors[].rows[].input_tokens", "oracle_floors[].per_session.<role>.input_tokens"],
        ),
        def(
            &["output tokens / session (counted)"],
            PerSession,
            ORACLE_OVER,
            "what a model following the plan would write — every call's arguments and the answer — counted in the row's tokenizer; — where the run knew no tokenizer",
            &["oracle_floors[].rows[].output_tokens", "oracle_floors[].per_session.<role>.output_tokens"],
        ),
        def(
            &["tokenizer"],
            Label,
            "",
            "what the counted figures of the row were counted in: o200k_base or cl100k_base (OpenAI's encodings, offline), llama:URL (that llama.cpp server's /tokenize); \"none: estimates only\" where the module's sessions had none, or not one in common",
            &["oracle_floors[].tokenizer"],
        ),
        def(
            &["est. input tokens Σ over tasks"],
            Summed,
            "the module's tasks (each task's median over its valid oracle sessions); absent when a task lacks the figure",
            "the est. input tokens / session of every task, added up: what sweep reports compare across levels; not a per-session figure",
            &["oracle_floors[].total_estimated_input_tokens"],
        ),
    ]
}
