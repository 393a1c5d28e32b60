//! The graders' gold set (`tasks/gold/`, docs/gold-set.md): final answers with the end state each
//! session left, graded by hand, in two parts — `dev`, which the rules may be tuned against, and
//! `held_out`, written after the rules were frozen. Read here for the tests that measure the
//! rules (`tests/it/gold.rs`) and for a model judge, which is graded on the held-out part before
//! it grades anything (`pipeline regrade --judge`, docs/regrade.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use backend::postgres::PostgresSource;
use backend::{Cluster, PgPool, World, WorldSpec};
use records::{Groundedness, OutcomeClass, ReferenceKind, Split, VerifierOutcome};
use serde::{Deserialize, Serialize};

/// `tasks/gold/<part>.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldSet {
    case: Vec<Case>,
}

/// One graded answer (the file's header says what each field means).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    pub source: String,
    pub module: String,
    pub task: String,
    /// SQL run after the task's start state, in one transaction: the session's writes.
    pub end_state: String,
    pub answer: String,
    pub verdict: HumanVerdict,
    pub class: OutcomeClass,
    /// `[text, kind, status]`, in the answer's order.
    pub grounding: Vec<(String, ReferenceKind, Groundedness)>,
    #[serde(default)]
    pub note: String,
}

/// A person says a session passed or failed; "could not score" is a grader's state, never a grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanVerdict {
    Passed,
    Failed,
}

/// The two parts of the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Dev,
    HeldOut,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Part::Dev => "dev",
            Part::HeldOut => "held_out",
        }
    }

    pub fn path(self) -> PathBuf {
        let file = match self {
            Part::Dev => "cases.toml",
            Part::HeldOut => "held_out.toml",
        };
        tasks::default_tasks_dir().join("gold").join(file)
    }
}

/// The snake_case label serde gives `x` (how records and the gold file spell it).
pub fn label<T: Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

/// The gold set's `part` with each case's task, after every check that needs no database; or
/// every problem found, each naming its case.
pub fn load(part: Part) -> Result<Vec<(Case, tasks::Task)>, Vec<String>> {
    let path = part.path();
    let text = std::fs::read_to_string(&path).map_err(|e| vec![format!("cannot read the gold set {}: {e}", path.display())])?;
    let gold: GoldSet = toml::from_str(&text).map_err(|e| vec![format!("{}: {e}", path.display())])?;
    let root = tasks::default_tasks_dir();
    let mut modules: BTreeMap<String, Result<Vec<tasks::Task>, String>> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for case in gold.case {
        let id = case.id.clone();
        if !ids.insert(id.clone()) {
            problems.push(format!("{id}: the id repeats; give every case its own"));
        }
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            problems.push(format!("{id:?}: an id is snake_case (lowercase letters, digits, _)"));
        }
        if case.source.trim().is_empty() {
            problems.push(format!("{id}: say where the answer comes from (source = …)"));
        }
        // The two definitions that tie the layers together, as the human must apply them too.
        if (case.verdict == HumanVerdict::Passed) != (case.class == OutcomeClass::Correct) {
            problems.push(format!("{id}: class `correct` goes with verdict `passed` and only with it (got {} / {})", label(&case.verdict), label(&case.class)));
        }
        if case.answer.trim().is_empty() && case.verdict == HumanVerdict::Failed && case.class != OutcomeClass::NoAnswer {
            problems.push(format!("{id}: a failed session without an answer is `no_answer`"));
        }
        if case.answer.trim().is_empty() && !case.grounding.is_empty() {
            problems.push(format!("{id}: an empty answer makes no reference"));
        }
        if servers::registry::module(&case.module).is_none() {
            problems.push(format!("{id}: {:?} is not a registered module (modules: {})", case.module, servers::registry::modules().join(", ")));
            continue;
        }
        let loaded = modules.entry(case.module.clone()).or_insert_with(|| tasks::load_module(&root, &case.module).map_err(|e| e.to_string()));
        let task = match loaded {
            Err(e) => {
                problems.push(format!("{id}: module {:?} does not load: {e}", case.module));
                continue;
            }
            Ok(tasks) => match tasks.iter().find(|t| t.id == case.task) {
                Some(t) => t.clone(),
                None => {
                    problems.push(format!("{id}: no task {:?} in module {} (tasks are folder names under tasks/{})", case.task, case.module, case.module));
                    continue;
                }
            },
        };
        if task.meta.split != Split::Dev {
            problems.push(format!("{id}: {} is a held-out task; held-out tasks are never used for grading development, pick a dev task", task.key()));
        }
        out.push((case, task));
    }
    if problems.is_empty() { Ok(out) } else { Err(problems.into_iter().map(|p| format!("{}: {p}", path.display())).collect()) }
}

/// Every case of `part` applied to its task's fresh world (the task's start state, then the
/// case's end state) and judged there by the task's verifier, as a session's verification would:
/// the verdict, its checks and the answer's grounding. `grade` false only applies them (what a
/// writer of cases runs to check the SQL, without seeing any grader's output).
pub async fn verified(part: Part, grade: bool) -> anyhow::Result<Vec<(Case, tasks::Task, Option<VerifierOutcome>)>> {
    each_applied(part, grade, async |case: &Case, task: &tasks::Task, _: &PgPool, outcome: Option<VerifierOutcome>| Ok((case.clone(), task.clone(), outcome)))
        .await
}

/// [`verified`], with `each` called on every case while its world holds the case's end state
/// (what a judge's references are resolved against).
pub async fn each_applied<T>(
    part: Part,
    grade: bool,
    mut each: impl AsyncFnMut(&Case, &tasks::Task, &PgPool, Option<VerifierOutcome>) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let cases = load(part).map_err(|p| anyhow::anyhow!("the gold set does not load:\n  {}", p.join("\n  ")))?;
    let source = PostgresSource::from_env().await?;
    let result = async {
        let cluster = Cluster::connect(&source.admin_url()).await?;
        let world = World::create(cluster.clone(), &format!("gold{}{}", part.name().replace('_', ""), std::process::id()), WorldSpec::default()).await?;
        let mut out = Vec::new();
        for (case, task) in &cases {
            task.prepare(&world).await.map_err(|e| anyhow::anyhow!("{}: preparing {}: {e}", case.id, task.key()))?;
            // A reset swaps the world's database: the pool is the new one's.
            let pool = world.pool();
            let baseline = task.verifier.baseline(&pool).await.map_err(|e| anyhow::anyhow!("{}: the verifier's baseline of {}: {e}", case.id, task.key()))?;
            if !case.end_state.trim().is_empty() {
                let mut tx = pool.begin().await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(case.end_state.clone()))
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}: its end_state does not apply to {}'s start state (fix the SQL): {e}", case.id, task.key()))?;
                tx.commit().await?;
            }
            let outcome = if grade { Some(task.verifier.verify(&pool, &baseline, &case.answer).await) } else { None };
            out.push(each(case, task, &pool, outcome).await?);
        }
        world.destroy().await?;
        cluster.close().await;
        anyhow::Ok(out)
    }
    .await;
    source.shutdown()?;
    result
}

/// The label a reference gets on the side of the rater (human or extractor) that did not list it.
pub const MISSING: &str = "missing";

/// Pairs the human's references with the grader's by text and kind, in order; a reference only
/// one of them lists is paired with [`MISSING`] on the other side.
pub fn pair_references(human: &[(String, ReferenceKind, Groundedness)], grader: Option<&records::Grounding>) -> Vec<(String, String, String)> {
    let grader: Vec<(String, ReferenceKind, Groundedness)> =
        grader.map(|g| g.references.iter().map(|r| (r.text.clone(), r.kind, r.status)).collect()).unwrap_or_default();
    let mut used = vec![false; grader.len()];
    let mut out = Vec::new();
    for (text, kind, status) in human {
        let found = (0..grader.len()).find(|&i| !used[i] && grader[i].0 == *text && grader[i].1 == *kind);
        let theirs = match found {
            Some(i) => {
                used[i] = true;
                label(&grader[i].2)
            }
            None => MISSING.to_owned(),
        };
        out.push((format!("{text:?} ({})", label(kind)), label(status), theirs));
    }
    for (i, (text, kind, status)) in grader.iter().enumerate() {
        if !used[i] {
            out.push((format!("{text:?} ({})", label(kind)), MISSING.to_owned(), label(status)));
        }
    }
    out
}
