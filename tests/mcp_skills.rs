//! Skills (`tdsl serve --mcp --plans --skills DIR`, SPEC §16, `docs/plans.md` "Skills"),
//! driven by the official Python SDK's client (`tests/mcp_py/skills.py`), and the command
//! line around them.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

/// A copy of `tests/data/mcp/tools` under a fresh root (the skills are written next to it).
fn root_with_tools(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("root");
    let status = Command::new("cp").arg("-R").arg(repo().join("tests/data/mcp/tools")).arg(root.join("tools")).status();
    assert!(status.is_ok_and(|s| s.success()), "cannot copy the tools");
    root
}

fn tdsl_out(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(tdsl()).args(args).env("NO_COLOR", "1").output().expect("tdsl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An MCP client saves a plan, sees the tool appear in the same session (after
/// `notifications/tools/list_changed`), calls it and calls it from a second plan, restarts the
/// server and calls it again; the refusals (names, a plan with an error, a second save
/// without `replace`, a skill calling itself), versions, `tdsl://skills`, a skill broken at
/// start, delete. Then the history shows every save and delete, with the client's name.
#[test]
fn a_client_saves_a_skill_and_calls_it_after_a_restart() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let history = work.path().join("history.db");
    let mut cmd = Command::new(common::python::python());
    cmd.arg(repo().join("tests/mcp_py/skills.py")).arg("session").arg(tdsl()).arg(&root).arg(&history);
    let mut process = common::process::Process::spawn("skills.py session", &mut cmd);
    let status = process.exit_within(std::time::Duration::from_secs(240));
    assert!(status.success(), "skills.py session failed ({status}):\n{}", process.output());

    // The skill file is an ordinary composite `.tool` file: `tdsl check` accepts it. (The
    // session deleted it at its end; its last version is kept, and is the same text.)
    let versions = root.join("skills/.versions/pause_twice");
    let mut kept: Vec<PathBuf> =
        std::fs::read_dir(&versions).expect("versions").filter_map(Result::ok).map(|e| e.path()).collect();
    kept.sort();
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(!root.join("skills/pause_twice.tool").exists());
    let file = work.path().join("pause_twice.tool");
    std::fs::copy(&kept[2], &file).expect("copy");
    let (code, out, err) = tdsl_out(&["check", file.to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "tdsl check of the skill file:\n{out}{err}");
    let text = std::fs::read_to_string(&file).expect("the skill file");
    assert!(text.contains("\"tool_definition_path\": \"/tools/pause.tool\""), "{text}");
    assert!(text.contains("\"description\": \"Adds one to n\""), "{text}");

    // Every save and delete is in the history, with who made it.
    let db = history.to_str().expect("utf-8");
    let (code, out, err) = tdsl_out(&["history", "list", "--history", db, "--format", "json", "--tool", "*_skill"]);
    assert_eq!(code, 0, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).expect("json");
    let tools: Vec<&str> = runs.as_array().expect("runs").iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(tools.iter().filter(|t| **t == "save_skill").count(), 5, "{out}");
    assert_eq!(tools.iter().filter(|t| **t == "delete_skill").count(), 2, "{out}");
    assert!(out.contains("\"client\"") && out.contains("\"skill\""), "who and which skill: {out}");
    // A run of a skill is recorded under its name and version.
    let (code, out, err) = tdsl_out(&["history", "list", "--history", db, "--tool", "pause_twice*"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pause_twice (skill v1)") && out.contains("pause_twice (skill v2)"), "{out}");
    // …and the report of such a run names the skill and its version.
    let (code, out, err) =
        tdsl_out(&["history", "list", "--history", db, "--format", "json", "--tool", "pause_twice*"]);
    assert_eq!(code, 0, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).expect("json");
    let id = runs.as_array().expect("runs").iter().find(|r| r["tool"] == "pause_twice (skill v2)").expect("a v2 run")
        ["id"]
        .to_string();
    let page = work.path().join("report.html");
    let (code, _, err) = tdsl_out(&["report", "--run", &id, "--history", db, "-o", page.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).expect("the report");
    assert!(html.contains("pause_twice (skill v2)"), "the report does not name the skill");
}

/// `--skills` needs a folder under the root, and `--max-skills` is in its range.
#[test]
fn the_skills_folder_and_limit_are_checked_before_serving() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let outside = work.path().join("elsewhere");
    let r = root.to_str().expect("utf-8");
    let (code, _, err) = tdsl_out(&[
        "serve",
        "--mcp",
        "--plans",
        "--no-history",
        "--root",
        r,
        "--skills",
        outside.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must be under the tool root"), "{err}");
    let inside = root.join("skills");
    let s = inside.to_str().expect("utf-8");
    let (code, _, err) =
        tdsl_out(&["serve", "--mcp", "--plans", "--no-history", "--root", r, "--skills", s, "--max-skills", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-skills 0"), "{err}");
    let (code, _, err) = tdsl_out(&["serve", "--mcp", "--root", r, "--skills", s]);
    assert_eq!(code, 2, "--skills needs --plans: {err}");
}

/// `check --plan --upstream`: a plan or skill file that calls an upstream server's tools
/// checks outside the server too (SPEC §16); without `--upstream` its tool is unknown.
#[test]
fn check_plan_takes_upstream_servers() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let plan = work.path().join("skill.tool");
    let write = |tool: &str| {
        let text = format!(
            r#"{{"description": "calls up", "instructions": [
                {{"execution_id": "a", "tool_definition_path": "{tool}", "arguments": {{"n": 1}}}}],
                "response_reference_map": {{"n": "REF:a.n"}}}}"#
        );
        std::fs::write(&plan, text).expect("write");
    };
    let upstream = format!(
        "up='{}' serve --mcp --no-history --root '{}'",
        tdsl().display(),
        repo().join("tests/data/mcp").display()
    );
    let args = |with_upstream: bool| -> (i32, String, String) {
        let mut a = vec!["check", "--plan", plan.to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")];
        if with_upstream {
            a.extend(["--upstream", upstream.as_str()]);
        }
        tdsl_out(&a)
    };
    write("up/pause");
    let (code, out, err) = args(true);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = args(false);
    assert_eq!(code, 1, "without --upstream: {err}");
    assert!(err.contains("E1306"), "{err}");
    // Without `--plan` the option would be ignored (clap waives `requires` beside PATHs): refused.
    let (code, _, err) = tdsl_out(&["check", "--upstream", upstream.as_str(), plan.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--upstream applies to `--plan FILE.json` only"), "{err}");
    write("up/pasue");
    let (code, _, err) = args(true);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E1306") && err.contains("up/pause"), "the nearest name: {err}");
}
