//! Budgets through the real binary (issue 15): `tdsl eval` under an address-space limit,
//! a run's deadline and a step's timeout stopping running transforms. The library's cases
//! are in `tests/budgets.rs`.

use std::time::{Duration, Instant};

#[path = "support/budgets.rs"]
mod shared;

use shared::{pipeline, slow_transform_root, twins, WATCHDOG};

// ---------------------------------------------------------------------------------------
// the real binary

/// `tdsl eval` under a 4 GiB address-space limit: an allocation failure would abort
/// (status 134) instead of the clean exit 1 naming the limit.
#[test]
fn the_binary_exits_1_naming_the_limit() {
    let bin = env!("CARGO_BIN_EXE_tdsl");
    for (src, code) in [
        ("length(map(range(1000), \"slice(range(100000), 1)\"))", "E0406"),
        ("length(map(range(1000), \"merge(create_object(a=range(100000)), {a: 1})\"))", "E0406"),
        (
            "pipeline(initial_value=range(100000), operations=[length(filter(current, \"contains(current, item)\"))])",
            "E0401",
        ),
        (&pipeline("json_stringify(current)"), "E0403"),
        (&twins("current[0] == current[1]"), "E0401"),
    ] {
        let started = Instant::now();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 4194304; exec \"$0\" eval \"$1\"")
            .arg(bin)
            .arg(src)
            .output()
            .expect("tdsl runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{src}: {stderr}");
        assert!(stderr.contains(code), "{src}: expected {code} in {stderr}");
        assert!(started.elapsed() < WATCHDOG, "{src} did not end in time");
    }
}

// ---------------------------------------------------------------------------------------
// item 2, end to end: a run's deadline stops a running transform

/// `tdsl run --deadline 0.2` on a composite whose transform would run until a limit stopped
/// it (the memory limit, after building some 16 M list elements: a second or more in a debug
/// build even on an idle machine; minutes without the limits): the run ends with the run's
/// deadline error, not a limit's, long before. The deadline is short so that the margin to
/// the memory limit holds on a fast idle machine as well as on a loaded one.
#[test]
fn a_runs_deadline_stops_a_running_transform() {
    let dir = std::env::temp_dir().join(format!("tdsl-budgets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tool = r#"{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/answer.tool", "arguments": {"q": 1},
     "transform_responses": {"transforms": {
       "n": "count(range(1000000), condition_string=count(range(1000000), condition_string=true) > 0)"}}}
  ],
  "response_reference_map": {"n": "REF:a.n"}
}"#;
    std::fs::write(dir.join("slow.tool"), tool).expect("writes the tool");
    std::fs::write(dir.join("mock.json"), r#"{"/tools/answer.tool": {"answer": 42}}"#).expect("writes the mock");
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "/slow.tool", "--root"])
        .arg(&dir)
        .arg("--mock")
        .arg(dir.join("mock.json"))
        .args(["--deadline", "0.2"])
        .output()
        .expect("tdsl runs");
    let elapsed = started.elapsed();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("E0805") || text.contains("deadline"), "not the deadline error: {text}");
    assert!(!text.contains("E0401"), "ran out of fuel instead of stopping at the deadline: {text}");
    assert!(!text.contains("E0406"), "hit the memory limit instead of stopping at the deadline: {text}");
    // Generous: the transform alone would run far longer; the run stops soon after 2 s.
    assert!(elapsed < Duration::from_secs(60), "took {elapsed:?}: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same from the command line, with the largest fuel and memory `--fuel` and
/// `--max-memory` accept (with the defaults, an idle machine can exhaust the memory limit
/// in under the 1 s timeout, so which came first would be a race): exit 1, `E0804`, and
/// the trace says TIMEOUT.
#[test]
fn a_steps_timeout_stops_its_running_transform_from_the_command_line() {
    let dir = slow_transform_root("step-timeout-cli");
    let trace = dir.join("trace.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "/slow.tool", "--arg", "n=1000000", "--no-history", "--root"])
        .arg(&dir)
        .arg("--fuel")
        .arg(tdsl::ranges::FUEL.max.to_string())
        .arg("--max-memory")
        .arg(tdsl::ranges::MAX_ALLOC_BYTES.max.to_string())
        .arg("--trace")
        .arg(&trace)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tdsl runs");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            panic!("still running after {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("[E0804]"), "{text}");
    assert!(!text.contains("E0401") && !text.contains("E0406"), "a limit stopped it, not the timeout: {text}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace written")).expect("trace is JSON");
    assert_eq!(t["step_results"][0]["status"], "TIMEOUT", "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------
// hostile round 11a: the budgets of a run, from the command line

/// `tdsl run --max-run-fuel`: two transforms, each well within the fuel of one evaluation,
/// over the run's together — exit 1 with E0401 naming the run's budget; with room for both
/// the run succeeds. `--max-run-memory` bounds what the run holds the same way. Out of
/// their ranges, the flags are usage errors (exit 2) for `run` and `serve`.
#[test]
fn the_runs_budgets_from_the_command_line() {
    let dir = std::env::temp_dir().join(format!("tdsl-run-budgets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tool = r#"{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/answer.tool", "arguments": {"q": 1},
     "transform_responses": {"transforms": {"n": "count(range(20000), condition_string='item > 0')",
                                            "m": "count(range(20000), condition_string='item > 1')"}}}
  ],
  "response_reference_map": {"n": "REF:a.n", "m": "REF:a.m"}
}"#;
    std::fs::write(dir.join("two.tool"), tool).expect("writes the tool");
    std::fs::write(dir.join("mock.json"), r#"{"/tools/answer.tool": {"answer": 42}}"#).expect("writes the mock");
    let run = |flags: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(["run", "/two.tool", "--no-history", "--root"])
            .arg(&dir)
            .arg("--mock")
            .arg(dir.join("mock.json"))
            .args(flags)
            .output()
            .expect("tdsl runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), text)
    };
    let trace = dir.join("trace.json");
    let trace_arg = trace.to_string_lossy().to_string();
    let (code, text) = run(&["--max-run-fuel", "50000", "--trace", &trace_arg]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("E0401") && text.contains("the run ran out of fuel"), "{text}");
    // The trace records the budget, and the replay runs out where the run did.
    let recorded = std::fs::read_to_string(&trace).expect("the trace");
    assert!(recorded.contains("\"max_run_fuel\": 50000"), "{recorded}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .arg("replay")
        .arg(&trace)
        .arg("--root")
        .arg(&dir)
        .output()
        .expect("tdsl replay runs");
    let replayed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "the replay diverged: {replayed}");
    let (code, text) = run(&["--max-run-fuel", "10000000"]);
    assert_eq!(code, Some(0), "{text}");
    // Each transform builds a list of 20,000 numbers (about 480 KB by the cost of values).
    let (code, text) = run(&["--max-run-memory", "102400"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("E0406") && text.contains("the run holds more values"), "{text}");
    let (code, text) = run(&["--max-run-memory", "2000000"]);
    assert_eq!(code, Some(0), "{text}");
    for (flag, value) in [("--max-run-fuel", "0"), ("--max-run-memory", "10"), ("--max-memory-in-flight", "10")] {
        if flag != "--max-memory-in-flight" {
            let (code, text) = run(&[flag, value]);
            assert_eq!(code, Some(2), "{flag} {value}: {text}");
            assert!(text.contains(flag), "{flag} {value}: {text}");
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(["serve", "--mcp", "--plans", "--no-history", "--root"])
            .arg(&dir)
            .args([flag, value])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("tdsl serve runs");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "serve {flag} {value}: {text}");
        assert!(text.contains(flag), "serve {flag} {value}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
