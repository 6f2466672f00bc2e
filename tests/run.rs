//! `tdsl run` and `tdsl replay`, tested by running the real binary with real `exec:` tools
//! (POSIX sh scripts in `tests/data/run/tools/bin`).

mod common;
use common::tdsl;
use std::path::PathBuf;

const ROOT: &str = "tests/data/run";

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdsl-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

#[test]
fn run_prints_the_result_of_exec_and_builtin_tools() {
    let o = tdsl(&["run", "tests/data/run/echo.tool", "--root", ROOT, "--arg", r#"name="ada""#]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"name": "ada", "text": "hello", "shout": "ADA"}"#));
    assert_eq!(o.stderr, "", "no progress when standard error is not a terminal");
}

#[test]
fn a_tool_path_under_the_root_and_an_arguments_file() {
    let dir = temp("args");
    let args = dir.join("args.json");
    std::fs::write(&args, r#"{"name": "bob"}"#).unwrap();
    let o = tdsl(&["run", "/echo.tool", "--root", ROOT, "--args", args.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout)["shout"], "BOB");
}

#[test]
fn a_tool_that_fails_transiently_is_retried_until_it_answers() {
    let dir = temp("flaky");
    let state = dir.join("calls");
    let trace = dir.join("trace.json");
    let state_arg = format!("state={:?}", state.to_str().unwrap());
    let o = tdsl(&[
        "run",
        "tests/data/run/flaky.tool",
        "--root",
        ROOT,
        "--arg",
        &state_arg,
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"calls": 3}"#));
    let t = json(&std::fs::read_to_string(&trace).unwrap());
    assert_eq!(t["total_retries"], 2);
    let attempts = t["steps"][0]["attempts"].as_array().unwrap();
    assert_eq!(
        attempts.iter().map(|a| a["outcome"].as_str().unwrap()).collect::<Vec<_>>(),
        ["transient", "transient", "ok"]
    );
    assert!(attempts[0]["error"].as_str().unwrap().ends_with("exited with status 75 (try again): busy, call 1"));

    // The trace replays with no tool calls: the state file is not touched again.
    let o = tdsl(&["replay", trace.to_str().unwrap(), "--root", ROOT]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"calls": 3}"#));
    assert!(o.stderr.contains("replay matches the recording (SUCCESS)"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(&state).unwrap().trim(), "3");
}

#[test]
fn a_hanging_tool_is_killed_at_its_timeout() {
    let o = tdsl(&["run", "tests/data/run/hang.tool", "--root", ROOT]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(o.stdout, "");
    assert!(
        o.stderr.contains("error: TIMEOUT: step `stuck` failed: the call timed out after 0.3 s [E0804]"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_permanent_failure_names_the_step_with_the_tools_stderr() {
    let o = tdsl(&["run", "tests/data/run/broken.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("error: FAILED: step `burn` failed: `/tools/broken.tool`: "), "{}", o.stderr);
    assert!(o.stderr.contains("broken.sh exited with status 3: the disk is on fire [E0803]"), "{}", o.stderr);
}

#[test]
fn a_mock_answers_for_tools_with_no_file_and_scripts_failures() {
    let o = tdsl(&["run", "tests/data/run/mocked.tool", "--root", ROOT, "--mock", "tests/data/run/mock.json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"a": 42, "b": 1}"#));

    // Without the mock, the missing tool is reported before the run.
    let o = tdsl(&["run", "tests/data/run/mocked.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("`/tools/not_written_yet.tool` does not resolve"), "{}", o.stderr);
}

#[test]
fn guards_refuse_before_the_run() {
    let o = tdsl(&[
        "run",
        "tests/data/run/echo.tool",
        "--root",
        ROOT,
        "--arg",
        r#"name="x""#,
        "--allow-tool",
        "/tools/echo.tool",
    ]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(
            "refused before the run: step `again` calls `/tools/builtin_echo.tool`, which no allowed tool pattern matches"
        ),
        "{}",
        o.stderr
    );
    let o = tdsl(&["run", "tests/data/run/echo.tool", "--root", ROOT, "--arg", r#"name="x""#, "--max-steps", "1"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("[E0808]"), "{}", o.stderr);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["run", "tests/data/run/echo.tool", "--root", ROOT, "--arg", "name=ada"][..],
        &["run", "tests/data/run/nope.tool"],
        &["run", "tests/data/run/echo.tool", "--root", ROOT, "--mock", "tests/data/run/tools/bin/echo.sh"],
        &["replay", "tests/data/run/echo.tool"],
    ] {
        let o = tdsl(args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error: "), "{}", o.stderr);
    }
}

#[test]
fn a_definition_with_errors_is_rendered_and_exits_1() {
    let dir = temp("bad");
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "a", "tool_definition_path": "/x.tool", "arguments": {"v": "REF:b.v"}}]}"#,
    )
    .unwrap();
    let o = tdsl(&["run", dir.join("main.tool").to_str().unwrap(), "--root", dir.to_str().unwrap()]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("E0108"), "{}", o.stderr);
}

#[test]
fn replay_reports_divergence_after_the_definition_changes() {
    let dir = temp("diverge");
    std::fs::create_dir_all(dir.join("tools/bin")).unwrap();
    for f in ["tools/echo.tool", "tools/builtin_echo.tool", "tools/bin/echo.sh", "echo.tool"] {
        std::fs::copy(format!("{ROOT}/{f}"), dir.join(f)).unwrap();
    }
    let trace = dir.join("trace.json");
    let root = dir.to_str().unwrap();
    let main = dir.join("echo.tool");
    let o = tdsl(&[
        "run",
        main.to_str().unwrap(),
        "--root",
        root,
        "--arg",
        r#"name="ada""#,
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = std::fs::read_to_string(&main).unwrap().replace(r#""greeting": "hello""#, r#""greeting": "hi""#);
    std::fs::write(&main, text).unwrap();
    let o = tdsl(&["replay", trace.to_str().unwrap(), "--root", root]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("the replay diverges from the recording"), "{}", o.stderr);
    assert!(o.stderr.contains("greet: arguments differ"), "{}", o.stderr);
}

#[test]
fn the_examples_run() {
    let dir = temp("examples");
    let report = dir.join("report.md");
    let report_arg = format!("report_path={:?}", report.to_str().unwrap());
    let o = tdsl(&[
        "run",
        "examples/document-analysis/main.tool",
        "--root",
        "examples/document-analysis",
        "--args",
        "examples/document-analysis/args.json",
        "--arg",
        &report_arg,
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result = json(&o.stdout);
    assert_eq!(result["document_count"], 3);
    assert_eq!(result["processing_summary"]["level"], "comprehensive");
    assert_eq!(result["rejected"], "examples/document-analysis/documents/missing.txt is not a readable file");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("# Document analysis (comprehensive)\n"), "{text}");
    assert!(text.contains("incident-review.txt reads as dense"), "{text}");

    let o = tdsl(&[
        "run",
        "examples/document-analysis/main.tool",
        "--root",
        "examples/document-analysis",
        "--args",
        "examples/document-analysis/args.json",
        "--arg",
        &report_arg,
        "--arg",
        r#"analysis_depth="basic""#,
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout)["processing_summary"]["insights"], "");

    for (args, status) in [("valid", "processed"), ("invalid", "rejected")] {
        let file = format!("examples/conditional-branching/{args}.json");
        let o = tdsl(&[
            "run",
            "examples/conditional-branching/main.tool",
            "--root",
            "examples/conditional-branching",
            "--args",
            &file,
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(json(&o.stdout)["status"], status);
    }
}

#[test]
fn transforms_read_files_from_the_files_folder() {
    let dir = temp("files");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    std::fs::write(dir.join("notes.txt"), "remember the milk").unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "read", "tool_definition_path": "/tools/echo.tool",
             "transform_arguments": {"transforms": {"text": "upper(read_file(file_path=\"notes.txt\"))"}}}],
            "response_reference_map": {"text": "REF:read.text"}}"#,
    )
    .unwrap();
    let (main, root) = (dir.join("main.tool"), dir.to_str().unwrap().to_string());
    let o = tdsl(&["run", main.to_str().unwrap(), "--root", &root, "--files", &root]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"text": "REMEMBER THE MILK"}"#));
    let o = tdsl(&["run", main.to_str().unwrap(), "--root", &root]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("no file store configured"), "{}", o.stderr);
}

/// On a terminal, `tdsl run` shows steps starting and ending on standard error.
#[cfg(unix)]
#[test]
fn progress_is_shown_on_a_terminal() {
    use rexpect::session::spawn_command;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args([
        "run",
        "examples/conditional-branching/main.tool",
        "--root",
        "examples/conditional-branching",
        "--args",
        "examples/conditional-branching/invalid.json",
    ])
    .env("NO_COLOR", "1");
    let mut p = spawn_command(cmd, Some(15_000)).expect("spawn on a pseudo-terminal");
    // rexpect reads the terminal byte by byte, so match the ASCII part of each line.
    p.exp_string("validate_input (/tools/validator.tool)").expect("the first step starts");
    p.exp_string("validate_input/inspect (/tools/echo.tool)").expect("its nested composite's step starts");
    // The two branches run concurrently: only the skip is checked, not its order.
    p.exp_string("process_valid_data SKIPPED (conditions)").expect("the skipped branch is shown");
    p.exp_string("\"rejected\"").expect("the result follows");
    p.exp_eof().expect("the run ends");
}
