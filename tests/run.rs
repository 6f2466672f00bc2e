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
    let attempts = t["step_results"][0]["attempts"].as_array().unwrap();
    assert_eq!(
        attempts.iter().map(|a| a["outcome"].as_str().unwrap()).collect::<Vec<_>>(),
        ["transient", "transient", "ok"]
    );
    assert!(attempts[0]["error"]
        .as_str()
        .unwrap()
        .ends_with("exited with status 75 (try again) (its standard error ends: busy, call 1)"));

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
        o.stderr.contains("error: TIMEOUT: step `stuck` failed: the call timed out after 1 s [E0804]"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_permanent_failure_names_the_step_with_the_tools_stderr() {
    let o = tdsl(&["run", "tests/data/run/broken.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("error: FAILED: step `burn` failed: `/tools/broken.tool`: "), "{}", o.stderr);
    assert!(
        o.stderr.contains("broken.sh exited with status 3 (its standard error ends: the disk is on fire) [E0803]"),
        "{}",
        o.stderr
    );
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

#[test]
fn out_of_range_numbers_on_the_command_line_are_usage_errors() {
    for (flag, value, message) in [
        ("--deadline", "1e20", "--deadline: `deadline` must be from 0.1 to 86400 (seconds), and it is 1e20"),
        ("--deadline", "0", "--deadline: `deadline` must be from 0.1 to 86400 (seconds), and it is 0"),
        ("--deadline", "NaN", "--deadline: `deadline` must be from 0.1 to 86400 (seconds), and it is NaN"),
        ("--concurrency", "0", "--concurrency: `concurrency` must be an integer from 1 to 1024, and it is 0"),
        ("--concurrency", "2000", "--concurrency: `concurrency` must be an integer from 1 to 1024, and it is 2000"),
        ("--breaker-threshold", "0", "--breaker-threshold: `breaker threshold` must be an integer from 1 to 10"),
        ("--breaker-threshold", "11", "--breaker-threshold: `breaker threshold` must be an integer from 1 to 10"),
        ("--breaker-reset-seconds", "5", "--breaker-reset-seconds: `breaker reset` must be from 10 to 300 (seconds)"),
        ("--breaker-reset-seconds", "1e300", "and it is 1e300"),
        ("--breaker-half-open-calls", "6", "--breaker-half-open-calls: `breaker half-open calls` must be an integer"),
        ("--max-steps", "0", "--max-steps: `max_steps` must be an integer from 1 to 1000000, and it is 0"),
        ("--max-steps", "18446744073709551615", "--max-steps: `max_steps` must be an integer from 1 to 1000000"),
        ("--max-fan-out", "0", "--max-fan-out: `max_fan_out` must be an integer from 1 to 100000, and it is 0"),
        ("--max-fan-out", "100001", "--max-fan-out: `max_fan_out` must be an integer from 1 to 100000"),
        ("--max-tool-output", "10", "--max-tool-output: `max_tool_output` must be an integer from 1024 to 1073741824"),
        ("--max-tool-output", "1099511627776", "--max-tool-output: `max_tool_output` must be an integer from 1024"),
        ("--fuel", "9007199254740993", "--fuel: `fuel` must be an integer from 0 to 9007199254740991"),
        ("--max-memory", "1099511627777", "--max-memory: `max_alloc_bytes` must be an integer from 0 to 1099511627776"),
        ("--max-calls-per-run", "0", "--max-calls-per-run: `max_calls_per_run` must be an integer from 1 to 100000000"),
        (
            "--max-result-bytes",
            "1023",
            "--max-result-bytes: `max_result_bytes` must be an integer from 1024 to 4294967296",
        ),
    ] {
        let o = tdsl(&["run", "tests/data/run/echo.tool", "--root", ROOT, "--arg", r#"name="x""#, flag, value]);
        assert_eq!(o.code, 2, "{flag} {value}: {}", o.stderr);
        assert!(o.stderr.contains(message), "{flag} {value}: {}", o.stderr);
        assert_eq!(o.stdout, "");
    }
    // In range, the same flags run.
    let o = tdsl(&[
        "run",
        "tests/data/run/echo.tool",
        "--root",
        ROOT,
        "--arg",
        r#"name="x""#,
        "--deadline",
        "86400",
        "--concurrency",
        "1024",
        "--breaker-threshold",
        "10",
        "--breaker-reset-seconds",
        "10",
        "--breaker-half-open-calls",
        "5",
        "--max-steps",
        "1000000",
        "--max-fan-out",
        "100000",
        "--max-tool-output",
        "1024",
        "--fuel",
        "9007199254740991",
        "--max-memory",
        "1099511627776",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// `--fuel` and `--max-memory` set the evaluation limits of the run's transforms: with a
/// fuel of 1 the `upper(…)` transform of echo.tool runs out (`E0401`); with 1 byte of memory
/// the 100-byte string it builds does not fit (`E0406`); with the defaults it runs.
#[test]
fn fuel_and_max_memory_set_the_evaluation_limits() {
    let long_name = format!("name=\"{}\"", "x".repeat(100));
    let run = |extra: &[&str]| {
        let mut a = vec!["run", "tests/data/run/echo.tool", "--root", ROOT, "--no-history", "--arg"];
        a.push(if extra.is_empty() { r#"name="x""# } else { &long_name });
        a.extend_from_slice(extra);
        tdsl(&a)
    };
    let o = run(&["--fuel", "1"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("[E0401]") && o.stderr.contains("step `again`"), "{}", o.stderr);
    let o = run(&["--max-memory", "1"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("[E0406]") && o.stderr.contains("step `again`"), "{}", o.stderr);
    let o = run(&[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(r#""shout": "X""#) || o.stdout.contains(r#""shout":"X""#), "{}", o.stdout);
}

#[test]
fn out_of_range_retry_and_timeout_numbers_are_check_errors_with_spans() {
    let o = tdsl(&["check", "tests/data/tool/err/retry_and_timeout_huge.tool", "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let all = json(&o.stdout);
    let found: Vec<&serde_json::Value> =
        all.as_array().expect("a list").iter().filter(|d| d["code"] == "E0521").collect();
    let keys: Vec<(String, u64)> = found
        .iter()
        .map(|d| (d["message"].as_str().unwrap().split('`').nth(1).unwrap().to_string(), d["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("timeout_seconds".to_string(), 3),
            ("max_retries".to_string(), 4),
            ("base_delay_seconds".to_string(), 4),
            ("max_delay_seconds".to_string(), 4),
            ("factor".to_string(), 4),
            ("jitter".to_string(), 4)
        ]
    );
    assert!(found[0]["message"].as_str().unwrap().ends_with("must be from 1 to 300 (seconds)"), "{:?}", found[0]);
}

#[test]
fn breaker_flags_decide_whether_a_fourth_try_can_run() {
    let dir = temp("fourth");
    let mock = dir.join("mock.json");
    std::fs::write(&mock, r#"{"/tools/recovers.tool": {"$fail_transiently": 3, "$then": {"ok": true}}}"#).unwrap();
    let trace = dir.join("trace.json");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "tests/data/run/fourth.tool",
            "--root",
            ROOT,
            "--mock",
            mock.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        tdsl(&args)
    };
    // The default threshold (3) opens the breaker on the third failure: the fourth attempt
    // is refused at once, naming the tool and when it half-opens.
    let o = run(&[]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("the circuit breaker of `/tools/recovers.tool` is open"), "{}", o.stderr);
    // Real time passes between the breaker opening and the refusal (a millisecond or more
    // under load), so the wait it names is 60 s or just under.
    let wait: f64 = o
        .stderr
        .split("it half-opens in ")
        .nth(1)
        .and_then(|rest| rest.split(" s, at ").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no half-open time: {}", o.stderr));
    assert!((55.0..=60.0).contains(&wait), "{}", o.stderr);
    assert!(o.stderr.contains("[E0806]"), "{}", o.stderr);
    let t = json(&std::fs::read_to_string(&trace).unwrap());
    assert_eq!(t["step_results"][0]["circuit_state"], "OPEN");
    assert_eq!(t["circuit_breaker_trips"], 1);
    let outcomes: Vec<&str> =
        t["step_results"][0]["attempts"].as_array().unwrap().iter().map(|a| a["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["transient", "transient", "transient", "refused"]);

    let o = run(&["--breaker-threshold", "4"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"ok": true}"#));
    let t = json(&std::fs::read_to_string(&trace).unwrap());
    assert_eq!(t["step_results"][0]["retry_count"], 3);
    assert_eq!(t["step_results"][0]["circuit_state"], "CLOSED");
    assert_eq!((t["tools_executed"].as_u64(), t["success_rate"].as_f64()), (Some(1), Some(1.0)));
}

/// Without the `temporal` feature, `--engine temporal` (of `run` and of `worker`) is a usage
/// error that names the feature, before anything runs.
#[cfg(not(feature = "temporal"))]
#[test]
fn engine_temporal_needs_the_feature() {
    let o = tdsl(&[
        "run",
        "examples/document-analysis/main.tool",
        "--root",
        "examples/document-analysis",
        "--engine",
        "temporal",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("`temporal` feature"), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let o = tdsl(&["worker", "--engine", "temporal", "--root", "examples"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("`temporal` feature"), "{}", o.stderr);
}

/// A folder with `main.tool` (given) and the tools of `tests/data/run/tools` it may call.
fn with_tools(name: &str, main: &str) -> PathBuf {
    let dir = temp(name);
    std::fs::create_dir_all(dir.join("tools/bin")).unwrap();
    for f in ["tools/broken.tool", "tools/builtin_echo.tool", "tools/bin/broken.sh"] {
        std::fs::copy(format!("{ROOT}/{f}"), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("main.tool"), main).unwrap();
    dir
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Issue 28 items 4 and 18: arguments nested 126 levels (the most `--args` reads) give a
/// trace nested past serde_json's default 128 levels; `report` and `replay` read it, and a
/// PARTIAL run's trace in the history is drawn by `report --run`. Its `failure_summary`
/// names the failed step and its error.
#[test]
fn a_deeply_nested_partial_run_reads_back_in_report_replay_and_the_history() {
    let dir = with_tools(
        "deep",
        r#"{"arguments": [{"name": "x", "type_name": "list", "required": true}],
            "instructions": [
              {"execution_id": "echo", "tool_definition_path": "/tools/builtin_echo.tool", "arguments": {"v": "REF:arguments.x"}},
              {"execution_id": "broken", "tool_definition_path": "/tools/broken.tool", "continue_on_error": true}
            ],
            "response_reference_map": {"v": "REF:echo.v"}}"#,
    );
    let mut deep = serde_json::json!(0);
    for _ in 0..126 {
        deep = serde_json::json!([deep]);
    }
    let args = dir.join("args.json");
    std::fs::write(&args, serde_json::json!({ "x": deep }).to_string()).unwrap();
    let (trace, history, page) = (dir.join("trace.json"), dir.join("h.db"), dir.join("r.html"));
    let main = dir.join("main.tool");
    let o =
        tdsl(&["run", s(&main), "--root", s(&dir), "--args", s(&args), "--trace", s(&trace), "--history", s(&history)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("PARTIAL"), "{}", o.stderr);
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    let t: serde_json::Value = serde::Deserialize::deserialize(&mut de).expect("the trace is JSON");
    assert_eq!(t["overall_status"], "PARTIAL");
    let summary = t["failure_summary"].as_str().unwrap_or_else(|| panic!("no failure_summary: {t}"));
    assert!(summary.starts_with("continued past 1 failed step: broken: "), "{summary}");
    assert!(summary.contains("the disk is on fire"), "{summary}");

    let o = tdsl(&["report", s(&trace), "-o", s(&page)]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert!(std::fs::read_to_string(&page).unwrap().contains(r#"data-step="broken" data-status="FAILED""#));
    let o = tdsl(&["replay", s(&trace), "--root", s(&dir)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("replay matches the recording (PARTIAL)"), "{}", o.stderr);
    let o = tdsl(&["report", "--run", "1", "--history", s(&history), "-o", s(&page)]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert!(std::fs::read_to_string(&page).unwrap().contains(r#"data-step="broken" data-status="FAILED""#));

    // Past what any run writes, a trace is refused with a message, not a crash.
    let deeper = format!("{}0{}", "[".repeat(3000), "]".repeat(3000));
    let text = text.replacen(r#""arguments": {"#, &format!(r#""arguments": {{"deeper": {deeper}, "#), 1);
    std::fs::write(&trace, text).unwrap();
    let o = tdsl(&["replay", s(&trace), "--root", s(&dir)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("deeper than the 2048 a trace may"), "{}", o.stderr);
}

/// Issue 28 item 5: a replay gives the recorded result of a run that read files with
/// `--files` (the reads are in the trace: the files may have changed since) and of one
/// under a raised guard (the limits are in the trace).
#[test]
fn replay_gives_the_recorded_result_of_runs_with_files_and_raised_guards() {
    let dir = with_tools(
        "replay-files",
        r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}],
            "instructions": [
              {"execution_id": "read", "tool_definition_path": "/tools/builtin_echo.tool",
               "transform_arguments": {"transforms": {"text": "upper(read_file(file_path=\"notes.txt\"))"}}},
              {"execution_id": "fan", "tool_definition_path": "/tools/builtin_echo.tool",
               "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
            ],
            "response_reference_map": {"text": "REF:read.text"}}"#,
    );
    std::fs::create_dir_all(dir.join("files")).unwrap();
    std::fs::write(dir.join("files/notes.txt"), "remember the milk").unwrap();
    let items = format!("items={}", serde_json::json!((0..1001).collect::<Vec<_>>()));
    let (trace, main, files) = (dir.join("trace.json"), dir.join("main.tool"), dir.join("files"));
    let o = tdsl(&[
        "run",
        s(&main),
        "--root",
        s(&dir),
        "--files",
        s(&files),
        "--arg",
        &items,
        "--max-fan-out",
        "2000",
        "--trace",
        s(&trace),
        "--no-history",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"text": "REMEMBER THE MILK"}"#));
    let t = json(&std::fs::read_to_string(&trace).unwrap());
    assert_eq!(t["limits"]["max_fan_out"], 2000, "{}", t["limits"]);
    assert_eq!(t["files"][0]["answer"]["text"], "remember the milk", "{}", t["files"]);
    // The file changes, then goes: the replay reads what the run read.
    std::fs::write(dir.join("files/notes.txt"), "buy bread").unwrap();
    std::fs::remove_file(dir.join("files/notes.txt")).unwrap();
    let o = tdsl(&["replay", s(&trace), "--root", s(&dir)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("replay matches the recording (SUCCESS)"), "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"text": "REMEMBER THE MILK"}"#));
}

/// Issue 28 item 16: `exec:` tools inherit the whole environment unless `--clean-env`; then
/// they see only the variables `--pass-env` names, `PATH` (a standard one unless passed) and
/// `TDSL_TOOL`.
#[test]
fn clean_env_passes_only_the_named_variables() {
    let dir = temp("clean-env");
    std::fs::create_dir_all(dir.join("tools/bin")).unwrap();
    let script = dir.join("tools/bin/env.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf '{\"secret\":\"%s\",\"kept\":\"%s\",\"tool\":\"%s\",\"path\":\"%s\",\"home\":\"%s\"}' \"$TDSL_TEST_SECRET\" \"$TDSL_TEST_KEPT\" \"$TDSL_TOOL\" \"$PATH\" \"$HOME\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(dir.join("tools/env.tool"), r#"{"system_event_endpoint": "exec:./bin/env.sh"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "env", "tool_definition_path": "/tools/env.tool"}],
            "response_reference_map": {"secret": "REF:env.secret", "kept": "REF:env.kept", "tool": "REF:env.tool",
                                       "path": "REF:env.path", "home": "REF:env.home"}}"#,
    )
    .unwrap();
    let main = dir.join("main.tool");
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(["run", s(&main), "--root", s(&dir), "--no-history"])
            .args(extra)
            .env("TDSL_TEST_SECRET", "hunter2")
            .env("TDSL_TEST_KEPT", "yes")
            .env("HOME", "/home/someone")
            .output()
            .expect("tdsl runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    let v = json(&out);
    assert_eq!((v["secret"].as_str(), v["home"].as_str()), (Some("hunter2"), Some("/home/someone")), "{v}");
    let (code, out, err) = run(&["--clean-env", "--pass-env", "TDSL_TEST_KEPT"]);
    assert_eq!(code, Some(0), "{err}");
    let v = json(&out);
    assert_eq!(
        v,
        serde_json::json!({"secret": "", "kept": "yes", "tool": "/tools/env.tool",
                           "path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "home": ""})
    );
    let (code, out, _) = run(&["--clean-env", "--pass-env", "PATH"]);
    assert_eq!(code, Some(0));
    assert_eq!(json(&out)["path"].as_str(), std::env::var("PATH").ok().as_deref());
    // Usage errors: --pass-env alone, or with something that is not a name.
    let (code, _, err) = run(&["--pass-env", "HOME"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--clean-env"), "{err}");
    let (code, _, err) = run(&["--clean-env", "--pass-env", "A=B"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--pass-env: \"A=B\" is not an environment variable's name"), "{err}");
    let o = tdsl(&["serve", "--mcp", "--pass-env", "HOME"]);
    assert_eq!(o.code, 2, "{}", o.stderr);

    // `tdsl serve --clean-env`: the same rule for the tools a client calls.
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--root", s(&dir), "--no-history", "--clean-env", "--pass-env", "TDSL_TEST_KEPT"])
        .env("TDSL_TEST_SECRET", "hunter2")
        .env("TDSL_TEST_KEPT", "yes")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tdsl serve starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    for msg in [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}"#,
        r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "env", "arguments": {}}}"#,
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    stdin.flush().unwrap();
    let answer = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
        let v = json(&line);
        if v["id"] == 2 {
            break v;
        }
    };
    drop(stdin);
    common::wait_or_kill(&mut child, std::time::Duration::from_secs(30), "tdsl serve");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}"));
    let v = json(text);
    assert_eq!((v["secret"].as_str(), v["kept"].as_str()), (Some(""), Some("yes")), "{v}");

    // An `mcp:` endpoint's server starts under the same rule: here a `tdsl serve` of the
    // same folder, whose `env` tool then inherits what that server was given.
    std::fs::write(
        dir.join("tools/via_mcp.tool"),
        format!(
            r#"{{"system_event_endpoint": "mcp:'{}' serve --mcp --no-history --root '{}'#env"}}"#,
            env!("CARGO_BIN_EXE_tdsl"),
            s(&dir)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "env", "tool_definition_path": "/tools/via_mcp.tool"}],
            "response_reference_map": {"secret": "REF:env.secret", "kept": "REF:env.kept"}}"#,
    )
    .unwrap();
    let (code, out, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json(&out), serde_json::json!({"secret": "hunter2", "kept": "yes"}));
    let (code, out, err) = run(&["--clean-env", "--pass-env", "TDSL_TEST_KEPT"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json(&out), serde_json::json!({"secret": "", "kept": "yes"}));
}

/// Issue 38 item 2 on the command line: `--max-calls-per-run` stops a fan-out at its limit
/// (E0816, exit 1) and `--max-result-bytes` refuses a result larger than its bound (E0817,
/// exit 1, nothing on standard output); within both the same run prints its result.
#[test]
fn the_calls_and_the_result_of_a_run_are_bounded_by_flags() {
    let dir = with_tools(
        "run-limits",
        r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}],
            "instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/builtin_echo.tool",
              "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "text"}}],
            "response_reference_map": {"echoes": "REF:fan.response"}}"#,
    );
    let big = format!(r#"items=["{}", "{}"]"#, "x".repeat(800), "y".repeat(800));
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "main.tool", "--root", s(&dir), "--no-history", "--arg", &big];
        args.extend_from_slice(extra);
        tdsl(&args)
    };
    let o = run(&["--max-calls-per-run", "1"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("the run reached its limit of 1 calls (`--max-calls-per-run`)"), "{}", o.stderr);
    assert!(o.stderr.contains("[E0816]"), "{}", o.stderr);
    let o = run(&["--max-result-bytes", "1024"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("error: FAILED: the run's result is larger than the limit of 1024 bytes"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("[E0817]"), "{}", o.stderr);
    assert_eq!(o.stdout, "");
    let o = run(&["--max-calls-per-run", "2", "--max-result-bytes", "4096"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout)["echoes"][1]["text"].as_str().map(str::len), Some(800));
}
