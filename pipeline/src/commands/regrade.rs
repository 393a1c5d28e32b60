//! `pipeline regrade EXP`: grade an experiment's sessions again with the current verifiers and
//! graders, over the final states their transcripts kept, without any model call
//! (docs/regrade.md). Each session's world is rebuilt — the task's fresh world, then every row
//! the session changed, as it left them — and checked against the record's own hash of those
//! changes before anything is graded; the outcome it had moves to `earlier_grades`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use sha2::Digest;

use records::{SessionRecord, Verdict, VerifierOutcome};

use crate::exit::Exit;

#[derive(Debug, Args)]
pub struct RegradeArgs {
    /// The experiment folder (`<results-dir>/<exp-name>`).
    pub exp: PathBuf,
    /// Print what was regraded as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Grade again even the sessions these verifiers and this grader already graded: a check that
    /// their final states rebuild and grade as they did.
    #[arg(long)]
    pub all: bool,
    /// A model that judges the outcome classes instead of the rules (OpenAI-compatible chat
    /// completions, pinned at temperature 0 and seed 0). It is graded on the gold set's held-out
    /// part first, and its agreement goes into every record it classes and every report.
    #[arg(long, value_name = "MODEL", requires = "judge_base_url")]
    pub judge: Option<String>,
    /// The judge's endpoint, including the version path (e.g. `http://127.0.0.1:8080/v1`).
    #[arg(long, value_name = "URL", requires = "judge")]
    pub judge_base_url: Option<String>,
    /// The environment variable that holds the judge's API key (a local endpoint needs none).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub judge_api_key_env: String,
}

/// The judge, and what it is recorded as.
struct Judge {
    provider: agent::OpenAiCompatible,
    info: records::JudgeInfo,
}

/// Sets up the judge and grades it on the gold set's held-out part, both layers: each case's
/// class (its answer over its end state as the task's verifier judged it) and the references it
/// finds in the answer, resolved against that state, against the hand grades.
async fn judge_of(args: &RegradeArgs) -> anyhow::Result<Option<Judge>> {
    let (Some(model), Some(base_url)) = (&args.judge, &args.judge_base_url) else { return Ok(None) };
    let mut config = agent::ProviderConfig::new(base_url.clone(), args.judge_api_key_env.clone(), model.clone());
    agent::judge::pin(&mut config);
    let provider = agent::OpenAiCompatible::new(config).map_err(|e| anyhow::anyhow!("the judge {model}: {e}"))?;
    eprintln!("grading the judge {model} on the gold set's held-out part first…");
    let (mut classes, mut references) = (Vec::new(), Vec::new());
    let (mut class_unanswered, mut reference_unanswered) = (0, 0);
    let mut first_failure = None;
    crate::gold::each_applied(crate::gold::Part::HeldOut, true, async |case: &crate::gold::Case, task: &tasks::Task, pool: &backend::PgPool, outcome| {
        let Some(outcome) = outcome else { return Ok(()) };
        let judged = match agent::judge::judge_class(&provider, &task.text, &outcome, Some(&case.answer)).await {
            None => "none (could not score)".to_owned(),
            Some(Ok(note)) => crate::gold::label(&note.class),
            Some(Err(e)) => {
                class_unanswered += 1;
                first_failure.get_or_insert_with(|| format!("{}: {e}", case.id));
                "unanswered".to_owned()
            }
        };
        // Asked: a failed session with an answer (the rest the definitions fix).
        let asked = outcome.verdict == records::Verdict::Failed && !case.answer.trim().is_empty();
        classes.push((crate::gold::label(&case.class), judged, asked));
        // The references it finds, resolved against the case's end state by the rules that
        // resolve the extractor's.
        let grounding = match agent::judge::judge_references(&provider, &case.answer).await {
            Ok(found) => Some(judge_grounding_in(pool, &case.answer, &found).await?),
            Err(e) => {
                reference_unanswered += 1;
                first_failure.get_or_insert_with(|| format!("{}: {e}", case.id));
                None
            }
        };
        references.extend(crate::gold::pair_references(&case.grounding, grounding.as_ref()).into_iter().map(|(_, h, j)| (h, j, true)));
        Ok(())
    })
    .await
    .context("applying the gold set's held-out part")?;
    anyhow::ensure!(!classes.is_empty(), "the gold set's held-out part has no case to grade the judge on");
    let agreement = |items: &[(String, String, bool)], unanswered| {
        let share =
            |pairs: &[&(String, String, bool)]| (!pairs.is_empty()).then(|| pairs.iter().filter(|(h, j, _)| h == j).count() as f64 / pairs.len() as f64);
        let kappa =
            |pairs: &[&(String, String, bool)]| aggregate::stats::cohen_kappa(&pairs.iter().map(|(h, j, _)| (h.as_str(), j.as_str())).collect::<Vec<_>>());
        let all: Vec<&(String, String, bool)> = items.iter().collect();
        let asked: Vec<&(String, String, bool)> = items.iter().filter(|x| x.2).collect();
        records::JudgeAgreement {
            items: all.len(),
            accuracy: share(&all),
            kappa: kappa(&all),
            unanswered,
            asked: asked.len(),
            asked_accuracy: share(&asked),
            asked_kappa: kappa(&asked),
        }
    };
    let info = records::JudgeInfo {
        model: model.clone(),
        base_url: base_url.clone(),
        prompt_sha256: agent::judge::judge_prompt_sha256(),
        class: agreement(&classes, class_unanswered),
        grounding: agreement(&references, reference_unanswered),
    };
    if let Some(f) = first_failure {
        eprintln!("  the judge gave nothing usable for {f}");
    }
    for (layer, a) in [("classes", &info.class), ("references", &info.grounding)] {
        eprintln!(
            "the judge {model} agreed with the hand grade on {} of {} held-out {layer} (κ {}); on the {} it decided itself, {} (κ {}); {} answers unanswered",
            a.accuracy.map_or("— (none)".into(), |x| format!("{:.0} %", 100.0 * x)),
            a.items,
            a.kappa.map_or("undefined".into(), |k| format!("{k:.2}")),
            a.asked,
            a.asked_accuracy.map_or("—".into(), |x| format!("{:.0} %", 100.0 * x)),
            a.asked_kappa.map_or("undefined".into(), |k| format!("{k:.2}")),
            a.unanswered
        );
    }
    Ok(Some(Judge { provider, info }))
}

/// The judge's `found` references in `answer`, resolved against the world at `pool` by the same
/// rules as the extractor's (`tasks::grounding::resolve`); words the answer does not hold are
/// dropped.
async fn judge_grounding_in(pool: &backend::PgPool, answer: &str, found: &[(String, records::ReferenceKind)]) -> anyhow::Result<records::Grounding> {
    let mentions: Vec<tasks::grounding::Mention> = found.iter().filter_map(|(text, kind)| tasks::grounding::mention_of(answer, text, *kind)).collect();
    let mut read = backend::world::ReadOnly::begin(pool).await?;
    let known = tasks::grounding::read_known(&mut read, &mentions).await.map_err(|e| anyhow::anyhow!(e));
    read.end().await?;
    Ok(tasks::grounding::resolve(answer, &mentions, &known?))
}

/// What became of one session.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Regraded {
    pub record: PathBuf,
    pub task: String,
    pub server: String,
    pub rep: u32,
    /// `regraded` (a new outcome, verdict unchanged), `verdict_changed`, `unchanged` (graded
    /// under the same versions already: nothing to do), `left` (left as graded, with why).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

pub async fn run(args: RegradeArgs) -> anyhow::Result<Exit> {
    let dir = &args.exp;
    if !dir.join(records::manifest::FILE).is_file() {
        anyhow::bail!("{} is not an experiment folder (no {}): give the folder a run wrote, e.g. results/<exp-name>", dir.display(), records::manifest::FILE);
    }
    // No run may write the records while they are graded again.
    let _lock = crate::experiment::Experiment::lock(dir)?;
    let exp = aggregate::load::load_experiment(dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let root = tasks::default_tasks_dir();
    let mut by_key: BTreeMap<(String, String), tasks::Task> = BTreeMap::new();
    let modules: std::collections::BTreeSet<&str> = exp.sessions.iter().map(|s| s.record.module.as_str()).collect();
    for m in modules {
        for t in tasks::load_module(&root, m).with_context(|| format!("loading the tasks of {m} from {}", root.display()))? {
            by_key.insert((t.module.clone(), t.id.clone()), t);
        }
    }
    let judge = judge_of(&args).await?;
    let backend = backend::local::LocalBackend::start(backend::WorldSpec::default()).await.context("starting the backend the final states are rebuilt in")?;
    let now = chrono::Utc::now();
    let mut out = Vec::new();
    let mut judge_failures: Vec<String> = Vec::new();
    for s in &exp.sessions {
        let r = &s.record;
        let Some(old) = r.verifier.as_ref().filter(|_| r.validity.is_valid()) else { continue };
        let mut note = |status, from, to, why: Option<String>| {
            out.push(Regraded { record: s.path.clone(), task: r.task.clone(), server: r.server.clone(), rep: r.rep, status, from, to, why })
        };
        let Some(task) = by_key.get(&(r.module.clone(), r.task.clone())) else {
            note("left", Some(old.verdict), None, Some(format!("task {}/{} is no longer in {}", r.module, r.task, root.display())));
            continue;
        };
        let mut task = task.clone();
        (task.meta.seed, task.meta.scale) = (r.world_seed, r.world_scale);
        let current = crate::grading::graded(&task, None);
        if !args.all
            && judge.is_none()
            && old.graded.as_ref().is_some_and(|g| g.verifier_sha256 == current.verifier_sha256 && g.grader_sha256 == current.grader_sha256)
        {
            note("unchanged", Some(old.verdict), Some(old.verdict), None);
            continue;
        }
        match regrade_one(&task, r, old, &s.transcript_path(), &backend, judge.as_ref().map(|j| (j, &mut judge_failures))).await {
            Err(why) => note("left", Some(old.verdict), None, Some(why)),
            Ok(mut new) => {
                new.graded = Some(crate::grading::graded(&task, Some(now)));
                if let Some(j) = &judge {
                    new.graded = Some(crate::grading::judged(&task, Some(now), &j.info));
                }
                let status = if new.verdict == old.verdict { "regraded" } else { "verdict_changed" };
                note(status, Some(old.verdict), Some(new.verdict), None);
                let mut record: SessionRecord = r.clone();
                record.earlier_grades.push(old.clone());
                record.verifier = Some(new);
                records::write_atomically(&s.path, &serde_json::to_vec_pretty(&record)?).with_context(|| format!("writing {}", s.path.display()))?;
            }
        }
    }
    backend.shutdown().await.context("stopping the backend")?;
    let count = |status: &str| out.iter().filter(|x| x.status == status).count();
    eprintln!(
        "regraded {}: {} session(s) graded again ({} with another verdict), {} already graded by these verifiers and graders, {} left as graded",
        dir.display(),
        count("regraded") + count("verdict_changed"),
        count("verdict_changed"),
        count("unchanged"),
        count("left")
    );
    for x in out.iter().filter(|x| x.status == "verdict_changed") {
        eprintln!("  {} on {} rep {}: {:?} → {:?}", x.task, x.server, x.rep, x.from.unwrap_or(Verdict::CouldNotScore), x.to.unwrap_or(Verdict::CouldNotScore));
    }
    if let Some(j) = &judge {
        eprintln!(
            "outcome classes and references by the judge {} ({} time(s) it gave nothing usable: that class or grounding is missing)",
            j.info.model,
            judge_failures.len()
        );
        for f in judge_failures.iter().take(10) {
            eprintln!("  no class: {f}");
        }
    }
    for x in out.iter().filter(|x| x.status == "left") {
        eprintln!("  left as graded: {} on {} rep {}: {}", x.task, x.server, x.rep, x.why.as_deref().unwrap_or(""));
    }
    if args.json {
        let judge = judge.as_ref().map(|j| &j.info);
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "experiment": dir, "judge": judge, "sessions": out }))?);
    }
    Ok(Exit::Ok)
}

/// The session's outcome under the current verifier and graders, over its final state rebuilt
/// from its transcript; or why that state cannot be rebuilt.
async fn regrade_one(
    task: &tasks::Task,
    r: &SessionRecord,
    old: &VerifierOutcome,
    transcript: &std::path::Path,
    backend: &backend::local::LocalBackend,
    judge: Option<(&Judge, &mut Vec<String>)>,
) -> Result<VerifierOutcome, String> {
    let Some(kept) = old.world_diff_sha256.as_deref() else {
        return Err("its record kept no hash of its final state (written before final states were kept, or the world could not be read)".into());
    };
    let text = std::fs::read_to_string(transcript).map_err(|e| format!("reading {}: {e}", transcript.display()))?;
    let event = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok().filter(|e| e["event"] == "world"))
        .ok_or_else(|| format!("{} holds no `world` event", transcript.display()))?;
    if hex::encode(sha2::Sha256::digest(event.to_string().as_bytes())) != kept {
        return Err(format!("the `world` event of {} is not the one its record hashed", transcript.display()));
    }
    let writes = crate::grading::writes_of(&event).ok_or("its `world` event is malformed")?;
    let world = backend.world();
    // An attacked session's world had the attack planted: the same plant, or nothing is graded.
    let attack = match &r.attack {
        None => None,
        Some(a) => {
            let tasks_dir = task.dir.parent().and_then(std::path::Path::parent).ok_or("the task's folder has no tasks folder above it")?;
            let now = tasks::attack::Attack::load(tasks_dir, &a.name)?;
            if now.sha256 != a.sha256 {
                return Err(format!("attack {} changed since the session ({} now, {} then): its world cannot be rebuilt", a.name, now.sha256, a.sha256));
            }
            Some(now)
        }
    };
    task.prepare_under(world, attack.as_ref()).await?;
    let pool = world.pool();
    let baseline = task.verifier.baseline(&pool).await.map_err(|e| format!("reading the baseline: {e}"))?;
    backend::world::apply_changes(&pool, &writes).await.map_err(|e| format!("rebuilding its final state: {e}"))?;
    let answer = r.final_answer.as_deref().unwrap_or("");
    let (mut new, diff) = task.verifier.verify_with_changes(&pool, &baseline, answer).await;
    if new.changed_tables.is_none() {
        return Err(format!("the verifier could not read the rebuilt state: {}", new.reasons.join("; ")));
    }
    // The rebuilt world must be the one the session left, row for row, or nothing is graded.
    let rebuilt = crate::session::world_event(&diff);
    if hex::encode(sha2::Sha256::digest(rebuilt.to_string().as_bytes())) != kept {
        return Err("its final state could not be rebuilt exactly from the rows its transcript kept".into());
    }
    // What the verifier does not decide stays as the run found it: the arm's reach for the
    // control plane, and the side effects (held to the footprint of the run's oracle plans).
    if let Some(check) = old.checks.iter().find(|c| c.name == crate::session::CONTROL_PLANE_CHECK) {
        new.checks.push(check.clone());
        new.reasons.extend(old.reasons.iter().filter(|x| x.contains("control plane")).cloned());
        if new.verdict == Verdict::Passed && !check.held {
            new.verdict = Verdict::Failed;
        }
    }
    new.class = aggregate::metrics::classes::explain_answer(&new, r.final_answer.as_deref());
    if let Some((j, failures)) = judge {
        // The judge's class and references, or none: what it did not give is missing, never the
        // rules' in its place (their outcome stays in `earlier_grades`).
        let mut failed = |what: &str, e: agent::judge::JudgeError| failures.push(format!("{} on {} rep {} ({what}): {e}", r.task, r.server, r.rep));
        new.class = match agent::judge::judge_class(&j.provider, &task.text, &new, r.final_answer.as_deref()).await {
            None => None,
            Some(Ok(note)) => Some(note),
            Some(Err(e)) => {
                failed("class", e);
                None
            }
        };
        new.grounding = match agent::judge::judge_references(&j.provider, answer).await {
            Ok(found) => Some(judge_grounding_in(&pool, answer, &found).await.map_err(|e| format!("resolving the judge's references: {e:#}"))?),
            Err(e) => {
                failed("references", e);
                None
            }
        };
    }
    new.world_diff_sha256 = Some(kept.to_owned());
    new.collateral = old.collateral.clone();
    Ok(new)
}
