//! Plans over MCP (`tdsl serve --mcp --plans`, SPEC §13) with the official Python SDK's
//! client (`tests/mcp_py/plans.py`), over stdio and over `--listen`, with upstream servers
//! that are second `tdsl serve --mcp`s; and the command line's refusals.
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

/// Runs one scenario of `plans.py` (with `--http` first when `http`).
fn plans(http: bool, scenario: &str, extra: &[&Path]) {
    let script = repo().join("tests/mcp_py/plans.py");
    let mut cmd = Command::new(common::python::python());
    cmd.arg(&script);
    if http {
        cmd.arg("--http");
    }
    cmd.arg(scenario).arg(tdsl()).arg(repo()).args(extra);
    let mut process = common::process::Process::spawn(&format!("plans.py {scenario}"), &mut cmd);
    let status = process.exit_within(std::time::Duration::from_secs(240));
    assert!(status.success(), "plans.py {scenario} failed ({status}):\n{}", process.output());
}

/// Over stdio: the tools, resources and prompt; a model's mistake located; the repaired
/// plan run with a served and an upstream tool, with progress; a failing upstream step; a
/// cancelled run_plan (the upstream's program ends); an upstream that hangs (the step's
/// timeout) and one that dies mid-call (a clear error, and the next plan starts it again).
#[test]
fn a_plan_session_over_stdio() {
    let work = tempfile::tempdir().expect("tempdir");
    plans(false, "session", &[work.path()]);
}

/// The same session over Streamable HTTP (`serve --listen`), ended with SIGTERM.
#[test]
fn a_plan_session_over_http() {
    let work = tempfile::tempdir().expect("tempdir");
    plans(true, "session", &[work.path()]);
}

/// The guide's three worked plans, read from `tdsl://guide` as a model reads them, check and
/// run to the expected results.
#[test]
fn the_guides_worked_plans_check_and_run() {
    plans(false, "guide", &[]);
}

/// The corpus of plans with the mistakes models make (`tests/data/plans/cases`): each gets
/// its expected diagnostics from `check_plan`, is refused by `run_plan`, and its repair runs,
/// all through the Python SDK client, with the upstream server `weather` a second tdsl.
#[test]
fn the_plan_corpus_through_the_python_client() {
    plans(false, "corpus", &[]);
}

/// The corpus over HTTP too.
#[test]
fn the_plan_corpus_over_http() {
    plans(true, "corpus", &[]);
}

fn serve(args: &[&str]) -> (i32, String) {
    let out = Command::new(tdsl())
        .args(["serve", "--mcp", "--no-history", "--root"])
        .arg(repo().join("examples/document-analysis"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("tdsl runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Out-of-range limits, bad upstreams and tokens, options without `--plans`: usage errors
/// (exit 2) that say why, before anything starts.
#[test]
fn serve_refuses_bad_plan_options() {
    let token = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(token.path(), "secret").expect("write");
    let token_arg = format!("web={}", token.path().display());
    let cases: &[(&[&str], &str)] = &[
        (&["--plans", "--max-plan-steps", "0"], "plan steps"),
        (&["--plans", "--max-plan-steps", "2000"], "plan steps"),
        (&["--plans", "--max-plan-bytes", "10"], "plan size"),
        (&["--plans", "--max-fan-out", "1.5"], "whole number"),
        (&["--plans", "--plan-deadline", "0"], "deadline"),
        (&["--plans", "--upstream", "docs"], "NAME=COMMAND"),
        (&["--plans", "--upstream", "a/b=x"], "must be 1 to 64"),
        (&["--plans", "--upstream", "a=https://example.org/mcp"], "https://"),
        (&["--plans", "--upstream", "a=x", "--upstream", "a=y"], "two upstream"),
        (&["--plans", "--upstream", "web=srv", "--upstream-token", &token_arg], "started as a command"),
        (&["--plans", "--files", "/nonexistent/dir"], "not a folder"),
        (&["--upstream", "a=x"], "--plans"),
        (&["--files", "."], "--plans"),
    ];
    for (args, says) in cases {
        let (code, stderr) = serve(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} should say {says:?}: {stderr}");
    }
    // A token file others can read is refused, as --token-file's is.
    let url_token = format!("web={}", token.path().display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(token.path(), std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let (code, stderr) =
            serve(&["--plans", "--upstream", "web=http://127.0.0.1:9/mcp", "--upstream-token", &url_token]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("readable by other users"), "{stderr}");
    }
}
