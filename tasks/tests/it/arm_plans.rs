//! An external arm's oracle plans: its own `oracle/<task_id>.toml`, or the plans of the built-in
//! server its `arm.toml` names in `oracle_from` — the own file winning where both exist — and a
//! change to a borrowed plan noticed in the task's hash.

use std::fs;
use std::path::{Path, PathBuf};

use servers::external::ExternalArm;
use tasks::load::{Task, attach_arm_plans, load_module};

const WHICH_WEN: &str = "which_wen_for_globex_checkout";

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() { copy_dir(&p, &dest) } else { fs::copy(&p, &dest).map(|_| ()).unwrap() }
    }
}

/// An arm folder `root/port` answering `module`, with `extra` lines in its `arm.toml`.
fn arm(root: &Path, module: &str, extra: &str) -> ExternalArm {
    let dir = root.join("port");
    fs::create_dir_all(dir.join("oracle")).unwrap();
    let toml = format!("name = \"port\"\nmodule = \"{module}\"\nrole = \"pattern\"\n{extra}\n[serve]\ntransport = \"stdio\"\ncommand = [\"sh\"]\n");
    fs::write(dir.join("arm.toml"), toml).unwrap();
    ExternalArm::load(&dir).unwrap()
}

fn with_plans(root: &Path, module: &str, arm: &ExternalArm) -> Vec<Task> {
    let mut tasks = load_module(root, module).unwrap();
    attach_arm_plans(arm, &mut tasks).unwrap();
    tasks
}

#[test]
fn an_arm_borrows_the_built_in_plans_and_its_own_file_overrides_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tasks::default_tasks_dir();
    let a = arm(tmp.path(), "domain_adapter", "oracle_from = \"domain_adapter\"");
    let own = a.plan_path(WHICH_WEN);
    fs::write(&own, "answer = \"Mine.\"\n\n[[steps]]\ntool = \"my_own_lookup\"\nargs = {}\n").unwrap();
    let tasks = with_plans(&root, "domain_adapter", &a);
    assert!(tasks.len() > 1);
    for t in &tasks {
        let plan = t.plan_for("port").unwrap_or_else(|| panic!("{} has no plan for the arm", t.id));
        if t.id == WHICH_WEN {
            assert_eq!((plan.answer.as_str(), plan.steps[0].tool.as_deref()), ("Mine.", Some("my_own_lookup")), "the own file overrides");
            assert_eq!(t.plan_file("port"), Some(own.as_path()));
        } else {
            assert_eq!(Some(plan), t.plan_for("domain_adapter"), "{}: the built-in plan, borrowed", t.id);
            assert_eq!(t.plan_file("port"), Some(t.dir.join("oracle/domain_adapter.toml").as_path()));
        }
        assert_eq!(t.plan_file("domain_wrapper"), Some(t.dir.join("oracle/domain_wrapper.toml").as_path()));
    }

    // Without oracle_from, the arm has its own plans only.
    let a = arm(tmp.path(), "domain_adapter", "");
    let tasks = with_plans(&root, "domain_adapter", &a);
    let planned: Vec<&str> = tasks.iter().filter(|t| t.plan_for("port").is_some()).map(|t| t.id.as_str()).collect();
    assert_eq!(planned, [WHICH_WEN]);

    // A plan named after no task of the module is still refused, borrowing or not.
    let a = arm(tmp.path(), "domain_adapter", "oracle_from = \"domain_wrapper\"");
    fs::write(a.plan_path("no_such_task"), "answer = \"x\"\n\n[[steps]]\ntool = \"t\"\n").unwrap();
    let mut tasks = load_module(&root, "domain_adapter").unwrap();
    let e = attach_arm_plans(&a, &mut tasks).unwrap_err().to_string();
    assert!(e.contains("no_such_task.toml") && e.contains("no task \"no_such_task\" in domain_adapter"), "{e}");
}

#[test]
fn a_family_instance_borrows_the_plan_rendered_for_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let a = arm(tmp.path(), "tool_orchestrator", "oracle_from = \"wrapper\"");
    let tasks = with_plans(&tasks::default_tasks_dir(), "tool_orchestrator", &a);
    let batch: Vec<&Task> = tasks.iter().filter(|t| t.family.as_ref().is_some_and(|f| f.id == "globex_ticket_batch")).collect();
    assert!(batch.len() >= 2, "the family has several sizes");
    for t in &batch {
        assert_eq!(t.plan_for("port"), t.plan_for("wrapper"), "{}", t.id);
        assert_eq!(t.plan_file("port"), Some(t.dir.join("oracle/wrapper.toml").as_path()), "the family's template");
    }
    let lengths: Vec<usize> = batch.iter().map(|t| t.plan_for("port").unwrap().steps.len()).collect();
    assert!(lengths.windows(2).all(|w| w[0] < w[1]), "each size its own rendering: {lengths:?}");
}

/// The arm's identity need not hash what it borrows: the borrowed plan is a file of the task
/// folder, and the task's hash (in every fingerprint and frozen spec) changes with it.
#[test]
fn a_changed_borrowed_plan_changes_the_tasks_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tasks");
    let src = tasks::default_tasks_dir();
    copy_dir(&src.join("domain_adapter").join(WHICH_WEN), &root.join("domain_adapter").join(WHICH_WEN));
    copy_dir(&src.join("tool_orchestrator/globex_ticket_batch"), &root.join("tool_orchestrator/globex_ticket_batch"));
    let da = arm(tmp.path(), "domain_adapter", "oracle_from = \"domain_adapter\"");
    let before = with_plans(&root, "domain_adapter", &da).remove(0);

    let plan: PathBuf = root.join("domain_adapter").join(WHICH_WEN).join("oracle/domain_adapter.toml");
    let text = fs::read_to_string(&plan).unwrap();
    let changed = text.replacen("answer = \"", "answer = \"Changed. ", 1);
    assert_ne!(changed, text);
    fs::write(&plan, changed).unwrap();
    let after = with_plans(&root, "domain_adapter", &da).remove(0);
    assert!(after.plan_for("port").unwrap().answer.starts_with("Changed. "), "the arm replays the changed plan");
    assert_ne!(after.sha256, before.sha256, "the task's hash notices the change");
    assert_eq!(ExternalArm::load(&da.dir).unwrap().sha256, da.sha256, "the arm folder itself did not change");

    // A family's instances: the template is in the family folder their hashes cover.
    let to = arm(tmp.path(), "tool_orchestrator", "oracle_from = \"wrapper\"");
    let before: Vec<String> = with_plans(&root, "tool_orchestrator", &to).into_iter().map(|t| t.sha256).collect();
    let template = root.join("tool_orchestrator/globex_ticket_batch/oracle/wrapper.toml");
    fs::write(&template, fs::read_to_string(&template).unwrap() + "# changed\n").unwrap();
    let after: Vec<String> = with_plans(&root, "tool_orchestrator", &to).into_iter().map(|t| t.sha256).collect();
    assert_eq!(before.len(), after.len());
    assert!(before.iter().zip(&after).all(|(b, a)| b != a), "every instance's hash changes with the template");
}

/// `[oracle_rename]`: an arm whose tools are a built-in server's under other names (a server
/// generated from the API's OpenAPI document) borrows that server's plans with each step's tool
/// renamed, and only those the table names; without `oracle_from` the table is refused.
#[test]
fn a_borrowed_plan_calls_the_arms_names_for_the_tools_its_table_renames() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tasks::default_tasks_dir();
    let a =
        arm(tmp.path(), "domain_adapter", "oracle_from = \"domain_wrapper\"\n[oracle_rename]\ntickets_update = \"update_ticket\"\nusers_list = \"list_users\"");
    let tasks = with_plans(&root, "domain_adapter", &a);
    let (mut renamed, mut kept) = (0, 0);
    for t in &tasks {
        let (mine, theirs) = (t.plan_for("port").unwrap(), t.plan_for("domain_wrapper").unwrap());
        assert_eq!((mine.answer.as_str(), mine.steps.len()), (theirs.answer.as_str(), theirs.steps.len()), "{}", t.id);
        for (m, o) in mine.steps.iter().zip(&theirs.steps) {
            let expected = match o.tool.as_deref() {
                Some("tickets_update") => Some("update_ticket"),
                Some("users_list") => Some("list_users"),
                other => other,
            };
            assert_eq!(m.tool.as_deref(), expected, "{}", t.id);
            assert_eq!((&m.args, &m.save), (&o.args, &o.save), "{}: only the tool's name changes", t.id);
            if m.tool != o.tool { renamed += 1 } else { kept += 1 }
        }
    }
    assert!(renamed > 0 && kept > 0, "the module's plans exercise both: {renamed} renamed, {kept} kept");

    let dir = tmp.path().join("port");
    fs::write(
        dir.join("arm.toml"),
        "name = \"port\"\nmodule = \"domain_adapter\"\nrole = \"control\"\n[oracle_rename]\na = \"b\"\n[serve]\ntransport = \"stdio\"\ncommand = [\"sh\"]\n",
    )
    .unwrap();
    let refused = ExternalArm::load(&dir).unwrap_err().to_string();
    assert!(refused.contains("oracle_rename") && refused.contains("oracle_from"), "{refused}");
}

/// A folder with `[[variant]]`s: the file's own arm keeps its plans in `oracle/`, each variant in
/// `oracle/<variant name>/`, so a variant of another module is neither refused for the own arm's
/// files nor given them, and a stray file in a variant's folder is refused naming that folder.
#[test]
fn a_variants_own_plans_are_in_a_folder_of_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tasks::default_tasks_dir();
    let dir = tmp.path().join("port");
    fs::create_dir_all(dir.join("oracle/port2")).unwrap();
    let toml = "name = \"port\"\nmodule = \"domain_adapter\"\nrole = \"pattern\"\noracle_from = \"domain_adapter\"\n[serve]\ntransport = \"stdio\"\ncommand = [\"sh\"]\n\n[[variant]]\nname = \"port2\"\nmodule = \"resource_gateway\"\noracle_from = \"resource_gateway\"\n";
    fs::write(dir.join("arm.toml"), toml).unwrap();
    let plan = |tool: &str| format!("answer = \"Mine.\"\n\n[[steps]]\ntool = \"{tool}\"\nargs = {{}}\n");
    fs::write(dir.join(format!("oracle/{WHICH_WEN}.toml")), plan("own_lookup")).unwrap();
    let gateway = load_module(&root, "resource_gateway").unwrap();
    let theirs = gateway[0].id.clone();
    fs::write(dir.join(format!("oracle/port2/{theirs}.toml")), plan("variant_lookup")).unwrap();
    let arms = ExternalArm::load_all(&dir).unwrap();
    let (own, variant) = (&arms[0], &arms[1]);
    assert_eq!((own.plan_dir(), variant.plan_dir()), (dir.canonicalize().unwrap().join("oracle"), dir.canonicalize().unwrap().join("oracle/port2")));

    let tasks = with_plans(&root, "domain_adapter", own);
    let which = tasks.iter().find(|t| t.id == WHICH_WEN).unwrap();
    assert_eq!(which.plan_for("port").unwrap().steps[0].tool.as_deref(), Some("own_lookup"));
    let tasks = with_plans(&root, "resource_gateway", variant);
    for t in &tasks {
        let p = t.plan_for("port2").unwrap();
        if t.id == theirs {
            assert_eq!(p.steps[0].tool.as_deref(), Some("variant_lookup"), "the variant's own file");
        } else {
            assert_eq!(Some(p), t.plan_for("resource_gateway"), "{}: borrowed", t.id);
        }
    }

    fs::write(dir.join(format!("oracle/port2/{WHICH_WEN}.toml")), plan("x")).unwrap();
    let mut tasks = load_module(&root, "resource_gateway").unwrap();
    let e = attach_arm_plans(&ExternalArm::load_all(&dir).unwrap()[1], &mut tasks).unwrap_err().to_string();
    assert!(e.contains("oracle/port2") && e.contains("no task"), "{e}");
}
