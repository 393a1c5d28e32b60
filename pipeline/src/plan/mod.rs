//! The run plan: everything one run will do, typed. Both front doors lower into a [`RunPlan`] —
//! flags (`pipeline --module … --k 3`, [`RunPlan::from_flags`]) and specs (`pipeline run SPEC`,
//! [`RunPlan::from_spec`]) — and nothing downstream sees either: no string round trip, no
//! fields patched in afterwards.
//!
//! A plan knows its sessions ([`RunPlan::sessions`]: every (task, rep) pair with both arms in
//! rotated ABBA order) and the [`Fingerprint`] of each: what must be equal for two sessions to
//! be the same measurement. Resume and `aggregate` compare fingerprints, never names alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use records::{Fingerprint, SessionMode, Transport};
use servers::registry::{Role, ServerEntry};
use tasks::Task;

use crate::build_info::BuildInfo;

mod lower;
mod model;
mod select;
#[cfg(test)]
mod tests;

pub use lower::{SpecRunOptions, check_experiment_name, model_plan};
pub use model::{Endpoint, ModelPlan, SIM_PREFIX};
pub use select::{arms_of, check_external_plans, check_runnable, select_tasks};

/// The tasks of one module, in the order they run.
#[derive(Debug, Clone)]
pub struct ModuleTasks {
    pub module: String,
    pub tasks: Vec<Arc<Task>>,
}

/// One session to run.
#[derive(Debug, Clone)]
pub struct PlannedSession {
    /// Index into [`RunPlan::models`].
    pub model: usize,
    pub task: Arc<Task>,
    pub rep: u32,
    pub server: &'static ServerEntry,
    /// 1 if this arm goes first in its (task, rep) pair, 2 if second.
    pub arm_position: u32,
    /// A sequential experiment's pair: its place in the draw order, from 1.
    pub draw: Option<u32>,
}

/// `--until-decided`: pairs drawn one at a time, each a task chosen uniformly with replacement
/// from its module's tasks, until the verdict is reached or the cap (docs/adr/0021).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sequential {
    pub rule: aggregate::sequential::Rule,
}

impl Sequential {
    /// The fingerprint's `design`: what makes a sequential session another measurement than a
    /// fixed design's (the draw scheme's version with it).
    pub const DESIGN: &'static str = "sequential-v1";
    /// How a draw picks its task, for the manifest.
    pub const DRAW: &'static str = "task index = the first 8 bytes of sha256(\"mcp-pattern-bench/draw\\0\" + module + \"\\0\" + split + \"\\0\" + draw number in decimal), big-endian, modulo the task count of the module's split, its tasks in run order";

    /// The task index of draw `number` (from 1) among `tasks` tasks of `module`'s `split`.
    pub fn draw(module: &str, split: records::Split, number: u32, tasks: usize) -> usize {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(b"mcp-pattern-bench/draw\0")
            .chain_update(module.as_bytes())
            .chain_update(b"\0")
            .chain_update(split.as_str().as_bytes())
            .chain_update(b"\0")
            .chain_update(number.to_string().as_bytes())
            .finalize();
        let head = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        (head % tasks as u64) as usize
    }

    /// The manifest's record of the design.
    pub fn manifest(&self) -> records::manifest::ManifestSequential {
        let opts = aggregate::Options::default();
        records::manifest::ManifestSequential {
            max_pairs: self.rule.max_pairs,
            min_pairs: self.rule.min_pairs,
            alpha: aggregate::sequential::ALPHA,
            success_margin: opts.success_margin,
            draw: Self::DRAW.into(),
            rule: self.rule.describe(&opts),
        }
    }
}

/// What stops a run early besides a quota answer and an interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// This many sessions in a row invalid for the same reason stop the run.
    pub max_consecutive_invalid: u32,
}

/// Everything one run will do.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub experiment: String,
    /// `results_dir/experiment`.
    pub exp_dir: PathBuf,
    /// The selected servers, pattern before control within a module.
    pub arms: Vec<&'static ServerEntry>,
    pub tasks: Vec<ModuleTasks>,
    /// Repetitions of every task on every arm (the spec's `reps`, the flag `--k`).
    pub reps: u32,
    pub models: Vec<ModelPlan>,
    pub transport: Transport,
    /// `--protocol`: the MCP revision the client speaks.
    pub protocol: servers::client::Protocol,
    /// A fresh conversation per task, or one per (model, arm, rep) through every task.
    pub session_mode: SessionMode,
    pub jobs: u32,
    /// `--scale`: one world scale for every task, chosen by the run.
    pub scale_override: Option<u32>,
    /// `--catalogue`: the catalogue size of modules that list one, chosen by the run.
    pub catalogue: Option<u32>,
    /// `--distractors`: the tools of other servers the client lists beside every arm's own
    /// (none: the arm's alone).
    pub distractors: servers::distractors::Distractors,
    /// `--budget-tokens`, `--budget-usd` (or a spec's): what this run may spend; none: no limit.
    /// Not part of any fingerprint: it changes no session.
    pub budgets: Vec<crate::budget::Limit>,
    /// sha256 of each arm's tool manifest, by server name.
    pub manifests: BTreeMap<String, String>,
    /// Under a tool-poisoning attack: the arms whose tool list itself carries the poisoned
    /// description, so that every model offered it met the planted text (what a transcript
    /// without the offered definitions cannot show). Empty otherwise.
    pub poisoned_lists: std::collections::BTreeSet<String>,
    /// The binary that runs the sessions.
    pub build: BuildInfo,
    pub preflight_skipped: bool,
    /// Rerun sessions recorded invalid (the old records are kept as superseded).
    pub retry_invalid: bool,
    pub breaker: Breaker,
    /// The command line, redacted.
    pub command: Vec<String>,
    /// For `pipeline run SPEC`: the gate results the run starts from.
    pub check: Option<serde_json::Value>,
    /// The part of the plan this run is, when it is one shard of several.
    pub shard: Option<crate::shard::Shard>,
    /// Which tasks were selected by split (`--split`, a spec's `split`).
    pub split: crate::split::SplitSelection,
    /// The seal the held-out tasks were checked against; `None` when the plan has none.
    pub seal: Option<records::manifest::ManifestSeal>,
    /// Where the sessions are exported as traces (`--otlp-endpoint` or the OTLP variables); none:
    /// no export. Not part of any fingerprint: it changes nothing a session does.
    pub otlp: Option<crate::otlp::Target>,
    /// `--until-decided`: a sequential experiment (cold sessions only); `None`: the fixed design
    /// of `reps` per task.
    pub sequential: Option<Sequential>,
    /// `--attack NAME`: what is planted in every session's world (docs/security.md); none by
    /// default.
    pub attack: Option<Arc<tasks::attack::Attack>>,
}

impl RunPlan {
    /// What the run chose about its servers' world, passed to every server it starts.
    /// What G7 and footprint replays run under: the servers' settings, the attack, and the
    /// run's transport and MCP revision.
    pub fn under(&self) -> tasks::gates::Under<'_> {
        tasks::gates::Under { settings: self.settings(), attack: self.attack.as_deref(), transport: Some(self.transport), protocol: self.protocol }
    }

    pub fn settings(&self) -> servers::launch::ArmSettings {
        servers::launch::ArmSettings { catalogue: self.catalogue, poison: self.attack.as_ref().and_then(|a| a.poison) }
    }

    /// Every session, in the order the run starts them (see [`Self::conversations`]).
    pub fn sessions(&self) -> Vec<PlannedSession> {
        self.conversations().into_iter().flatten().collect()
    }

    /// What the run hands a worker at a time. Cold: every session alone — per model, per module,
    /// per task, per rep, both arms, the arm that goes first alternating from one pair to the
    /// next (ABBA…), so neither arm always meets a cold provider cache or a warm one. Warm: per
    /// model, module, split and rep, one conversation per arm through every task of the module's
    /// split (dev and held-out tasks never share one), in the
    /// module's task order rotated by the rep (rep 1 starts at the first task, rep 2 at the
    /// second…) and the same for both arms, the arm that goes first alternating from rep to rep.
    /// A session's `arm_position` is its arm's place in its pair either way.
    pub fn conversations(&self) -> Vec<Vec<PlannedSession>> {
        let all = self.all_conversations();
        let Some(shard) = self.shard else { return all };
        // A unit keeps both arms of a pair (cold) or every conversation of a rep (warm) together.
        let keys: Vec<String> = all.iter().map(|c| self.pair_key(&c[0])).collect();
        let picked: std::collections::BTreeSet<usize> = shard.select(&keys).into_iter().collect();
        all.into_iter().enumerate().filter(|(i, _)| picked.contains(i)).map(|(_, c)| c).collect()
    }

    /// The pair `s` belongs to: both arms of one task and rep (cold), every conversation of one
    /// rep (warm). Shards and budgets never split one.
    pub fn pair_key(&self, s: &PlannedSession) -> String {
        let model = &self.models[s.model].spec.id;
        match self.session_mode {
            SessionMode::Cold => format!("{model}\u{0}{}\u{0}{}\u{0}{}", s.task.module, s.task.id, s.rep),
            SessionMode::Warm => format!("{model}\u{0}{}\u{0}{}\u{0}{}", s.task.module, s.task.meta.split, s.rep),
        }
    }

    /// [`Self::conversations`] of the whole plan, whatever the shard.
    fn all_conversations(&self) -> Vec<Vec<PlannedSession>> {
        let mut out = Vec::new();
        for model in 0..self.models.len() {
            let mut pair = 0usize;
            for m in &self.tasks {
                let mut arms: Vec<&'static ServerEntry> = self.arms.iter().copied().filter(|s| s.module == m.module).collect();
                // Patterns first, then controls (a stable sort: the order given within a role).
                arms.sort_by_key(|s| s.role != Role::Pattern);
                let ordered =
                    |pair: usize| -> Vec<&'static ServerEntry> { if pair.is_multiple_of(2) { arms.clone() } else { arms.iter().rev().copied().collect() } };
                match self.session_mode {
                    SessionMode::Cold if self.sequential.is_some() => {}
                    SessionMode::Cold => {
                        for task in &m.tasks {
                            for rep in 1..=self.reps {
                                let order = ordered(pair);
                                pair += 1;
                                for (i, server) in order.into_iter().enumerate() {
                                    out.push(vec![PlannedSession { model, task: task.clone(), rep, server, arm_position: i as u32 + 1, draw: None }]);
                                }
                            }
                        }
                    }
                    SessionMode::Warm => {
                        // Dev and held-out tasks never share a conversation: a held-out task's
                        // context must not carry the dev tasks (nor the reverse).
                        for split in [records::Split::Dev, records::Split::HeldOut] {
                            let of_split: Vec<&Arc<Task>> = m.tasks.iter().filter(|t| t.meta.split == split).collect();
                            if of_split.is_empty() {
                                continue;
                            }
                            for rep in 1..=self.reps {
                                let shift = (rep as usize - 1) % of_split.len();
                                let tasks: Vec<&Arc<Task>> = of_split.iter().copied().cycle().skip(shift).take(of_split.len()).collect();
                                let order = ordered(pair);
                                pair += 1;
                                for (i, server) in order.into_iter().enumerate() {
                                    out.push(
                                        tasks
                                            .iter()
                                            .map(|task| PlannedSession { model, task: (*task).clone(), rep, server, arm_position: i as u32 + 1, draw: None })
                                            .collect(),
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        if let Some(seq) = self.sequential {
            out.extend(self.draws(seq));
        }
        out
    }

    /// A sequential experiment's pairs, in draw order: draw 1 of every (model, module), then
    /// draw 2…, so every comparison advances together; the arm that goes first alternates from
    /// one draw to the next. A task drawn again is its next rep.
    fn draws(&self, seq: Sequential) -> Vec<Vec<PlannedSession>> {
        let mut out = Vec::new();
        let mut reps: BTreeMap<(usize, &str, &str), u32> = BTreeMap::new();
        // Each split of a module is its own comparison (the report never pools them).
        let groups: Vec<(&ModuleTasks, records::Split, Vec<&Arc<Task>>)> = self
            .tasks
            .iter()
            .flat_map(|m| {
                [records::Split::Dev, records::Split::HeldOut]
                    .into_iter()
                    .map(move |split| (m, split, m.tasks.iter().filter(|t| t.meta.split == split).collect::<Vec<_>>()))
            })
            .filter(|(_, _, tasks)| !tasks.is_empty())
            .collect();
        for number in 1..=seq.rule.max_pairs {
            for model in 0..self.models.len() {
                for (m, split, tasks) in &groups {
                    let task = tasks[Sequential::draw(&m.module, *split, number, tasks.len())];
                    let rep = reps.entry((model, m.module.as_str(), task.id.as_str())).or_default();
                    *rep += 1;
                    let mut arms: Vec<&'static ServerEntry> = self.arms.iter().copied().filter(|s| s.module == m.module).collect();
                    arms.sort_by_key(|s| s.role != Role::Pattern);
                    if number.is_multiple_of(2) {
                        arms.reverse();
                    }
                    for (i, server) in arms.into_iter().enumerate() {
                        out.push(vec![PlannedSession { model, task: task.clone(), rep: *rep, server, arm_position: i as u32 + 1, draw: Some(number) }]);
                    }
                }
            }
        }
        out
    }

    /// What must be equal for a recorded session to count as this one.
    pub fn fingerprint(&self, s: &PlannedSession) -> Fingerprint {
        let model = &self.models[s.model];
        // The oracle and a simulated agent send no prompt and ask no endpoint anything.
        let oracle = !model.spec.needs_endpoint();
        Fingerprint {
            model: model.spec.clone(),
            base_url: model.endpoint.as_ref().map(|e| records::fingerprint::url_without_userinfo(&e.base_url)),
            transport: self.transport,
            world_seed: s.task.meta.seed,
            world_scale: s.task.meta.scale,
            world_scale_override: self.scale_override,
            catalogue: servers::registry::module(s.server.module).and_then(|m| m.catalogue_size(self.settings())),
            distractors: (!self.distractors.is_empty()).then(|| self.distractors.len()),
            distractors_sha256: self.distractors.sha256(),
            task_sha256: s.task.sha256.clone(),
            turn_cap: s.task.meta.turn_cap,
            manifest_sha256: self.manifests.get(s.server.name).cloned().unwrap_or_default(),
            arm_sha256: s.server.external().map(|a| a.sha256.clone()),
            system_prompt_sha256: (!oracle).then(agent::system_prompt_sha256),
            build_commit: self.build.commit.clone(),
            build_dirty: self.build.dirty,
            // The oracle asks no endpoint anything: there is nothing to preflight.
            preflight_skipped: !oracle && self.preflight_skipped,
            session_mode: (self.session_mode == SessionMode::Warm).then_some(SessionMode::Warm),
            design: self.sequential.map(|_| Sequential::DESIGN.to_owned()),
            attack: self.attack.as_ref().map(|a| a.name.clone()),
            attack_sha256: self.attack.as_ref().map(|a| a.sha256.clone()),
            protocol: (!self.protocol.is_default()).then(|| self.protocol.as_str().to_owned()),
        }
    }

    /// Every task of the plan.
    pub fn all_tasks(&self) -> impl Iterator<Item = &Arc<Task>> {
        self.tasks.iter().flat_map(|m| m.tasks.iter())
    }

    /// The models that need an endpoint.
    pub fn endpoint_models(&self) -> impl Iterator<Item = &ModelPlan> {
        self.models.iter().filter(|m| m.spec.needs_endpoint())
    }
}
