//! What the viewer's pages fetch: the index of experiments and sweeps, and one experiment's plan,
//! status, headline and sessions, read from the results folder as it is now.

use std::path::Path;
use std::sync::Arc;

use records::ExperimentManifest;
use serde::Serialize;

use std::collections::BTreeSet;

use super::status::{SessionKey, planned_sessions};
use super::{App, ExpRef, Listing, exp_url, reports, status};

#[derive(Serialize)]
pub(super) struct IndexView {
    results_dir: String,
    exists: bool,
    experiments: Vec<ExperimentView>,
    groups: Vec<GroupView>,
}

#[derive(Serialize)]
pub(super) struct GroupView {
    name: String,
    /// `scale`, `size`, `catalogue` or `distractors` for a sweep's levels.
    factor: Option<&'static str>,
    levels: Vec<ExperimentView>,
    /// The files `pipeline sweep` wrote beside the levels, if it did.
    sweep_report: Option<SweepFiles>,
}

#[derive(Serialize)]
pub(super) struct SweepFiles {
    /// Links to sweep.md, sweep.json and sweep.svg as written (those present).
    files: Vec<(String, String)>,
    written_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Levels with a record newer than the sweep's files: they are not in it.
    newer_levels: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct ExperimentView {
    id: String,
    url: String,
    plan: Option<PlanView>,
    /// The manifest could not be read (verbatim), or there is none.
    plan_problem: Option<String>,
    status: status::Status,
    progress: status::Progress,
    /// The newest record's end, if any.
    last_session_at: Option<chrono::DateTime<chrono::Utc>>,
    headline: reports::Headline,
    /// Changes whenever a file of the experiment changes (the page reloads its report then).
    state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sessions: Option<SessionsView>,
}

#[derive(Serialize)]
pub(super) struct PlanView {
    models: Vec<String>,
    arms: Vec<ArmView>,
    /// Per module: its dev and held-out tasks.
    modules: Vec<ModuleView>,
    tasks: usize,
    k: u32,
    split: Option<String>,
    transport: String,
    session_mode: String,
    shard: Option<String>,
    jobs: u32,
    created_at: chrono::DateTime<chrono::Utc>,
    binary_version: Option<String>,
    base_url: Option<String>,
    /// The run's trace export (`--otlp-endpoint`), as the manifest records it.
    otlp: Option<records::manifest::OtlpExport>,
    command: String,
}

#[derive(Serialize)]
pub(super) struct ArmView {
    name: String,
    module: String,
    role: String,
}

#[derive(Serialize)]
pub(super) struct ModuleView {
    module: String,
    dev: usize,
    held_out: usize,
}

#[derive(Serialize)]
pub(super) struct SessionsView {
    /// Newest first, at most [`SESSIONS_SHOWN`].
    newest: Vec<SessionRow>,
    total: usize,
}

pub(super) const SESSIONS_SHOWN: usize = 100;

#[derive(Serialize)]
pub(super) struct SessionRow {
    model: String,
    server: String,
    role: String,
    task: String,
    rep: u32,
    outcome: &'static str,
    invalid_reason: Option<String>,
    ended_at: chrono::DateTime<chrono::Utc>,
    /// The session's conversation in the report.
    href: String,
}

pub(super) fn plan_view(m: &ExperimentManifest) -> PlanView {
    let mut modules: Vec<ModuleView> = Vec::new();
    for s in &m.servers {
        if modules.iter().any(|x| x.module == s.module) {
            continue;
        }
        let of =
            |split: records::Split| m.tasks.iter().filter(|t| t.split == split && t.key.strip_prefix(&s.module).is_some_and(|r| r.starts_with('/'))).count();
        modules.push(ModuleView { module: s.module.clone(), dev: of(records::Split::Dev), held_out: of(records::Split::HeldOut) });
    }
    PlanView {
        models: m.models.iter().map(|x| x.id.clone()).collect(),
        arms: m.servers.iter().map(|s| ArmView { name: s.name.clone(), module: s.module.clone(), role: s.role.to_string() }).collect(),
        modules,
        tasks: m.tasks.len(),
        k: m.k,
        split: m.split.clone(),
        transport: m.transport.to_string(),
        session_mode: m.session_mode.unwrap_or_default().as_str().to_owned(),
        shard: m.shard.as_ref().map(|s| format!("{}/{} ({})", s.index, s.count, s.source)),
        jobs: m.jobs,
        created_at: m.created_at,
        binary_version: m.binary_version.clone(),
        base_url: m.base_url.clone(),
        otlp: m.otlp.clone(),
        command: aggregate::document::format::shell_line(&m.command),
    }
}

impl App {
    /// Reads one experiment's state (its changed records only) and what the lists show of it;
    /// starts rendering its headline when it is not running and has none for its current files.
    pub(super) fn experiment_view(self: &Arc<Self>, e: &ExpRef, with_sessions: bool) -> ExperimentView {
        let holder = status::holder(&e.dir);
        let mut states = self.experiments.lock().expect("view state");
        let st = states.entry(e.id.clone()).or_default();
        st.scan.refresh(&e.dir);
        let path = e.dir.join(records::manifest::FILE);
        let meta = std::fs::metadata(&path).ok();
        let stamp = (meta.as_ref().and_then(|m| m.modified().ok()), meta.as_ref().map_or(0, |m| m.len()));
        if st.manifest.as_ref().is_none_or(|(t, l, _)| (*t, *l) != stamp) {
            let read = ExperimentManifest::read(&e.dir).map_err(|e| format!("malformed experiment manifest: {e}"));
            st.manifest = Some((stamp.0, stamp.1, read));
        }
        let manifest_read = &st.manifest.as_ref().expect("just read").2;
        let manifest = manifest_read.as_ref().ok().and_then(Option::as_ref);
        let planned: Result<BTreeSet<SessionKey>, String> = match manifest_read {
            Ok(Some(m)) => planned_sessions(m),
            Ok(None) => Err("no manifest.json (written before manifests existed): the plan is unknown".into()),
            Err(e) => Err(e.clone()),
        };
        let progress = status::progress(&st.scan, &planned);
        let status = status::status(holder, manifest, &progress);
        let state = st.scan.state;
        let mut briefs: Vec<(&String, &status::Brief)> = st.scan.briefs().filter_map(|(p, b)| b.as_ref().ok().map(|b| (p, b))).collect();
        briefs.sort_by(|a, b| b.1.ended_at.cmp(&a.1.ended_at).then_with(|| a.0.cmp(b.0)));
        let last_session_at = briefs.first().map(|(_, b)| b.ended_at);
        let sessions = with_sessions.then(|| SessionsView {
            total: briefs.len(),
            newest: briefs
                .iter()
                .take(SESSIONS_SHOWN)
                .map(|(path, b)| SessionRow {
                    model: b.key.0.clone(),
                    server: b.key.1.clone(),
                    role: b.role.to_string(),
                    task: b.key.2.clone(),
                    rep: b.key.3,
                    outcome: b.outcome,
                    invalid_reason: b.invalid_reason.clone(),
                    ended_at: b.ended_at,
                    href: format!("{}session/{}", exp_url(&e.id), aggregate::html::href(path)),
                })
                .collect(),
        });
        let plan = manifest.map(plan_view);
        let plan_problem = match manifest_read {
            Ok(Some(_)) => None,
            Ok(None) => Some("no manifest.json: the plan was not recorded (a run written before manifests existed)".into()),
            Err(e) => Some(e.clone()),
        };
        drop(states);
        let headline = if matches!(status, status::Status::Running { .. }) { reports::Headline::Running } else { self.headline(e, state) };
        ExperimentView {
            id: e.id.clone(),
            url: exp_url(&e.id),
            plan,
            plan_problem,
            status,
            progress,
            last_session_at,
            headline,
            state: format!("{state:016x}"),
            sessions,
        }
    }

    /// The headline at `state`, or `Pending` after starting its render.
    pub(super) fn headline(self: &Arc<Self>, e: &ExpRef, state: u64) -> reports::Headline {
        let mut cache = self.cache.lock().expect("view cache");
        match cache.headline(&e.id, state) {
            Ok(h) => h,
            Err(true) => reports::Headline::Pending,
            Err(false) => {
                cache.mark_pending(&e.id, state);
                let (app, e) = (self.clone(), e.clone());
                tokio::spawn(async move {
                    let _ = app.report(&e, state).await;
                });
                reports::Headline::Pending
            }
        }
    }

    /// The experiment's report at `state`: from the cache, or rendered now (one at a time).
    pub(super) async fn report(self: &Arc<Self>, e: &ExpRef, state: u64) -> Arc<reports::Rendered> {
        if let Some(r) = self.cache.lock().expect("view cache").report(&e.id, state) {
            return r;
        }
        let _turn = self.renders.acquire().await.expect("the semaphore is never closed");
        // Rendered meanwhile by the request ahead of this one?
        if let Some(r) = self.cache.lock().expect("view cache").report(&e.id, state) {
            return r;
        }
        let (dir, command) = (e.dir.clone(), self.command.clone());
        let started = std::time::Instant::now();
        let rendered = reports::off_thread(move || reports::render(&dir, &command)).await;
        let ms = started.elapsed().as_millis();
        let sessions = rendered.as_ref().map(|r| r.session_links.len()).unwrap_or(0);
        tracing::info!("rendered the report of {} ({sessions} sessions) in {ms} ms", e.id);
        let rendered = Arc::new(rendered);
        let mut cache = self.cache.lock().expect("view cache");
        cache.last_render_ms = Some(ms);
        cache.put_report(&e.id, state, rendered.clone());
        rendered
    }

    /// The experiment's current state key (a fresh scan).
    pub(super) fn state_of(&self, e: &ExpRef) -> u64 {
        let mut states = self.experiments.lock().expect("view state");
        let st = states.entry(e.id.clone()).or_default();
        st.scan.refresh(&e.dir);
        st.scan.state
    }

    pub(super) fn index(self: &Arc<Self>) -> IndexView {
        let listing = Listing::read(&self.results);
        let ids: Vec<&str> = listing.all().map(|e| e.id.as_str()).collect();
        self.cache.lock().expect("view cache").keep_only(&ids);
        self.experiments.lock().expect("view state").retain(|id, _| ids.contains(&id.as_str()));
        let experiments = listing.experiments.iter().map(|e| self.experiment_view(e, false)).collect();
        let groups = listing
            .groups
            .iter()
            .map(|g| {
                let levels: Vec<ExperimentView> = g.levels.iter().map(|e| self.experiment_view(e, false)).collect();
                let sweep_report = sweep_files(&g.name, &g.dir, &levels);
                GroupView { name: g.name.clone(), factor: g.factor, levels, sweep_report }
            })
            .collect();
        IndexView { results_dir: self.results.display().to_string(), exists: self.results.is_dir(), experiments, groups }
    }
}

/// The sweep's own files (`pipeline sweep` writes them after its last level), and which levels
/// have records newer than them.
pub(super) fn sweep_files(name: &str, dir: &Path, levels: &[ExperimentView]) -> Option<SweepFiles> {
    let present: Vec<(String, std::fs::Metadata)> = ["sweep.md", "sweep.json", "sweep.svg"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok().filter(|m| m.is_file()).map(|m| (f.to_string(), m)))
        .collect();
    if present.is_empty() {
        return None;
    }
    let written_at: Option<chrono::DateTime<chrono::Utc>> = present.iter().filter_map(|(_, m)| m.modified().ok()).min().map(Into::into);
    let newer_levels = levels.iter().filter(|l| l.last_session_at.zip(written_at).is_some_and(|(s, w)| s > w)).map(|l| l.id.clone()).collect();
    Some(SweepFiles {
        files: present.into_iter().map(|(f, _)| (f.clone(), format!("/sweep/{}/{f}", aggregate::html::href(name)))).collect(),
        written_at,
        newer_levels,
    })
}
