//! `tdsl run --engine temporal` and `tdsl worker` against a real Temporal dev server
//! (feature `temporal`; docs/distributed.md). The harness (the server, started once for this
//! test binary, workers, runs on either engine) is tests/exec_support/temporal.rs. Each test
//! starts its own workers on a task queue of its own. Nothing here is skipped: a server that
//! cannot be installed or started fails the test, saying why.
//!
//! The engine cases (tests/data/exec/) run here on Temporal against the expectations the
//! local engine meets; what stays below is Temporal's own: histories and their replay, child
//! workflows, workers and servers killed, cancellation, progress, payload limits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
mod exec_support;
use common::process::{alive, free_port, script, wait_until};
use exec_support::cases;
use exec_support::temporal::*;

/// Every engine case (tests/data/exec/README.md) on Temporal: its outcome is the case's
/// expectation, the one the local engine and its replay meet (tests/exec.rs), but for what a
/// case says Temporal legitimately does otherwise (`engines.temporal`, with its reason). A
/// worker per case folder, three folders at a time.
#[test]
fn every_engine_case_runs_on_temporal_as_expected() {
    let mut folders: Vec<(PathBuf, Vec<cases::Spec>)> = Vec::new();
    for spec in cases::all() {
        match folders.last_mut() {
            Some((dir, specs)) if *dir == spec.dir => specs.push(spec),
            _ => folders.push((spec.dir.clone(), vec![spec])),
        }
    }
    let runs: usize = folders.iter().map(|(_, s)| s.len()).sum();
    assert!(runs >= 40, "only {runs} case runs");
    let (work, failures) = (Mutex::new(folders), Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let next = work.lock().expect("work").pop();
                let Some((dir, specs)) = next else { break };
                let q = queue(&dir.file_name().expect("a name").to_string_lossy());
                let _w = worker(&dir, &q);
                for spec in specs {
                    if let Err(e) = check_on_temporal(&spec, &q, &[]) {
                        failures.lock().expect("failures").push(e);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("failures");
    assert!(
        failures.is_empty(),
        "{} of {runs} case runs differ on Temporal:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_examples_give_the_same_results_and_statuses_as_local_runs() {
    let q = queue("examples");
    let _w1 = worker(&repo().join("examples/document-analysis"), &q);
    same_as_local(
        &[
            "examples/document-analysis/main.tool",
            "--root",
            "examples/document-analysis",
            "--args",
            "examples/document-analysis/args.json",
        ],
        &q,
    );
    let q = queue("branching");
    let _w2 = worker(&repo().join("examples/conditional-branching"), &q);
    for args in ["examples/conditional-branching/valid.json", "examples/conditional-branching/invalid.json"] {
        let (_, remote) = same_as_local(
            &["examples/conditional-branching/main.tool", "--root", "examples/conditional-branching", "--args", args],
            &q,
        );
        // One branch ran, the other was skipped by its condition.
        let st = statuses(&remote.trace);
        assert!(st.iter().any(|(_, s)| s == "SKIPPED"), "{st:?}");
    }
    let q = queue("mcp");
    let _w3 = worker(&repo().join("examples/mcp-composition"), &q);
    same_as_local(
        &[
            "examples/mcp-composition/main.tool",
            "--root",
            "examples/mcp-composition",
            "--args",
            "examples/mcp-composition/args.json",
        ],
        &q,
    );
}

const ECHO: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "responses": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "builtin:echo"
}"#;

const FLAKY: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./missing-program-never-run"
}"#;

#[test]
fn retry_jitter_comes_from_the_seed_and_temporal_waits_the_jittered_delay() {
    let main = r#"{
      "instructions": [
        {"execution_id": "flaky", "tool_definition_path": "/tools/flaky.tool", "arguments": {"n": 1},
         "retry": {"max_retries": 2, "base_delay_seconds": 2.0, "factor": 2.0, "jitter": 0.5}}
      ]
    }"#;
    let (root, q, _w) = started("jitter", &[("main.tool", main), ("tools/flaky.tool", FLAKY)]);
    let (main_s, root_s) = paths(&root);
    let mock = root.join("mock.json");
    std::fs::write(&mock, r#"{"/tools/flaky.tool": {"$fail_transiently": 2, "$then": {"ok": true}}}"#).expect("mock");
    let mock_s = mock.to_string_lossy().into_owned();
    let policy = tdsl::testing::exec::retry::RetryPolicy {
        max_retries: 2,
        base_delay_seconds: 2.0,
        factor: 2.0,
        max_delay_seconds: 30.0,
        jitter: 0.5,
    };
    let ms = |d: std::time::Duration| d.as_millis() as u64;
    let delays = |seed: u64| [1, 2].map(|a| ms(tdsl::testing::temporal::retry_delay(&policy, seed, "flaky", a)));
    // A seed whose two back-offs add up to far less than the policy's own 2 s + 4 s.
    let seed = (0u64..).find(|s| delays(*s).iter().sum::<u64>() < 3_600).expect("a seed");
    let seed_s = seed.to_string();
    let go = |seed: &str| run(&[&main_s, "--root", &root_s, "--mock", &mock_s, "--seed", seed], Some(&q));
    let first = go(&seed_s);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let got = |o: &Out| -> Vec<u64> {
        let attempts = o.trace["step_results"][0]["attempts"].as_array().expect("attempts").clone();
        attempts.iter().map(|a| a["delay_ms"].as_u64().expect("delay_ms")).collect()
    };
    let want = delays(seed);
    assert_eq!(got(&first), vec![0, want[0], want[1]], "the trace's back-offs are the seed's");
    // Each attempt starts after the one before and its back-off.
    let attempts = first.trace["step_results"][0]["attempts"].as_array().expect("attempts").clone();
    let at = |i: usize, k: &str| attempts[i][k].as_u64().expect("a number");
    for i in 1..3 {
        assert!(
            at(i, "started_ms") >= at(i - 1, "started_ms") + at(i - 1, "duration_ms") + want[i - 1],
            "{attempts:?}"
        );
    }
    // Temporal waited the jittered back-offs, not its policy's intervals (6 s in all).
    let took = first.trace["step_results"][0]["duration_ms"].as_u64().expect("duration");
    let waited: u64 = want.iter().sum();
    assert!(took >= waited && took < 6_000, "the step took {took} ms for back-offs of {waited} ms");
    // The same seed, the same back-offs; another seed, others.
    assert_eq!(got(&go(&seed_s)), got(&first));
    let other = (seed + 1).to_string();
    let o = go(&other);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(got(&o), vec![0, delays(seed + 1)[0], delays(seed + 1)[1]]);
    assert_ne!(got(&o), got(&first));
}

/// `tdsl history show RUN --format json` of `db`, without what differs between two runs of
/// the same composite (ids, times, durations).
fn history_of(db: &Path, run_id: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["history", "show", run_id, "--format", "json", "--history"])
        .arg(db)
        .output()
        .expect("tdsl history runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["id", "run", "run_id", "started_at", "completed_at", "invoked_at", "duration_ms", "pid"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn a_run_on_temporal_is_in_the_history_as_a_local_run_is() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}},
        {"execution_id": "flaky", "tool_definition_path": "/tools/flaky.tool", "arguments": {"n": 1},
         "retry": {"max_retries": 2, "base_delay_seconds": 0.1, "jitter": 0.0}},
        {"execution_id": "inner", "tool_definition_path": "/inner.tool", "arguments": {"n": 7}}
      ]
    }"#;
    let inner = r#"{
      "arguments": [{"name": "n", "type_name": "integer", "required": true}],
      "instructions": [{"execution_id": "e", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": "REF:arguments.n"}}]
    }"#;
    let root = root_with(
        "history",
        &[("main.tool", main), ("inner.tool", inner), ("tools/echo.tool", ECHO), ("tools/flaky.tool", FLAKY)],
    );
    let q = queue("history");
    let _w = worker(&root, &q);
    let (main_s, root_s) = paths(&root);
    let mock = root.join("mock.json");
    std::fs::write(&mock, r#"{"/tools/flaky.tool": {"$fail_transiently": 2, "$then": {"ok": true}}}"#).expect("mock");
    let mock_s = mock.to_string_lossy().into_owned();
    let mut histories = Vec::new();
    for engine in ["local", "temporal"] {
        let db = root.join(format!("{engine}.db"));
        let trace = root.join(format!("{engine}.trace.json"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["run", &main_s, "--root", &root_s, "--mock", &mock_s, "--arg", "items=[1,2,3]", "--history"])
            .arg(&db)
            .arg("--trace")
            .arg(&trace);
        if engine == "temporal" {
            cmd.args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", &q]);
        }
        let out = cmd.current_dir(repo()).output().expect("tdsl runs");
        assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
        let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
        let run_id = trace["run_id"].as_str().expect("run_id").to_string();
        histories.push(history_of(&db, &run_id));
    }
    let invocations = histories[1]["invocations"].as_array().expect("invocations");
    // Three children, three attempts at `flaky` (two failed), the callee's own step.
    let paths: Vec<(&str, &str)> = invocations
        .iter()
        .map(|i| (i["step_path"].as_str().unwrap_or("?"), i["result"].as_str().unwrap_or("?")))
        .collect();
    for want in [("each[2]", "success"), ("flaky", "internal_error"), ("flaky", "success"), ("inner/e", "success")] {
        assert!(paths.contains(&want), "{want:?} not in {paths:?}");
    }
    assert_eq!(paths.len(), 7, "{paths:?}");
    // The same rows as the local run's, in any order of ending.
    let sorted = |h: &Value, k: &str| {
        let mut rows: Vec<String> = h[k].as_array().expect("rows").iter().map(Value::to_string).collect();
        rows.sort();
        rows
    };
    assert_eq!(sorted(&histories[1], "invocations"), sorted(&histories[0], "invocations"));
    assert_eq!(sorted(&histories[1], "steps"), sorted(&histories[0], "steps"));
    assert_eq!(histories[1]["status"], histories[0]["status"]);
    assert_eq!(histories[1]["result"], histories[0]["result"]);
}

#[test]
fn a_run_without_a_server_fails_naming_the_address() {
    let port = free_port();
    let o = run(
        &[
            "examples/document-analysis/main.tool",
            "--root",
            "examples/document-analysis",
            "--args",
            "examples/document-analysis/args.json",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args([
            "run",
            "examples/document-analysis/main.tool",
            "--root",
            "examples/document-analysis",
            "--args",
            "examples/document-analysis/args.json",
            "--no-history",
            "--engine",
            "temporal",
            "--temporal-address",
            &format!("127.0.0.1:{port}"),
        ])
        .current_dir(repo())
        .output()
        .expect("tdsl runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--temporal-address"), "{stderr}");
}

const COUNT_SH: &str = r#"#!/bin/sh
# Records the call, then answers {"step": NAME}.
input=$(cat | tr -d '\n')
name=$(printf '%s' "$input" | sed -n 's/.*"name": *"\([^"]*\)".*/\1/p')
dir=$(dirname "$0")/../..
echo "$name" >> "$dir/calls.log"
printf '{"step":"%s"}\n' "$name"
"#;

const SLOW_SH: &str = r#"#!/bin/sh
# Records the call; the first one hangs (its worker is killed meanwhile), later ones answer.
input=$(cat | tr -d '\n')
name=$(printf '%s' "$input" | sed -n 's/.*"name": *"\([^"]*\)".*/\1/p')
dir=$(dirname "$0")/../..
echo "$name" >> "$dir/calls.log"
if [ ! -e "$dir/started" ]; then
    touch "$dir/started"
    sleep 20
fi
printf '{"step":"%s"}\n' "$name"
"#;

const COUNT_TOOL: &str = r#"{
  "arguments": [{"name": "name", "type_name": "string", "required": true}],
  "responses": [{"name": "step", "type_name": "string", "required": true}],
  "system_event_endpoint": "exec:./bin/count.sh"
}"#;

const SLOW_TOOL: &str = r#"{
  "arguments": [{"name": "name", "type_name": "string", "required": true}],
  "responses": [{"name": "step", "type_name": "string", "required": true}],
  "system_event_endpoint": "exec:./bin/slow.sh"
}"#;

#[test]
fn a_worker_killed_mid_run_leaves_the_run_to_another_and_no_completed_call_runs_again() {
    let main = r#"{
      "instructions": [
        {"execution_id": "a", "tool_definition_path": "/tools/count.tool", "arguments": {"name": "a"}},
        {"execution_id": "b", "tool_definition_path": "/tools/slow.tool", "arguments": {"name": "b"},
         "dependencies": ["a"], "timeout_seconds": 3, "retry": {"max_retries": 2, "base_delay_seconds": 0.1}},
        {"execution_id": "c", "tool_definition_path": "/tools/count.tool", "arguments": {"name": "c"},
         "dependencies": ["b"]}
      ],
      "response_reference_map": {"a": "REF:a.step", "b": "REF:b.step", "c": "REF:c.step"}
    }"#;
    let root =
        root_with("crash", &[("main.tool", main), ("tools/count.tool", COUNT_TOOL), ("tools/slow.tool", SLOW_TOOL)]);
    script(&root.join("tools/bin/count.sh"), COUNT_SH);
    script(&root.join("tools/bin/slow.sh"), SLOW_SH);
    let q = queue("crash");
    let mut first = worker(&root, &q);
    let trace = root.join("trace.json");
    let main_s = root.join("main.tool").to_string_lossy().into_owned();
    let root_s = root.to_string_lossy().into_owned();
    let client = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", &main_s, "--root", &root_s, "--no-history", "--trace"])
        .arg(&trace)
        .args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", &q])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl runs");
    let start = Instant::now();
    while !root.join("started").exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "step b never started: {}", first.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    first.crash();
    let _second = worker(&root, &q);
    let out = client.wait_with_output().expect("the client ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(result, json!({"a": "a", "b": "b", "c": "c"}));
    // `a` ended before the crash: it never ran again. `b`'s attempt was lost with the
    // worker; Temporal retried it once its timeout passed, and it counts as an attempt.
    let calls = std::fs::read_to_string(root.join("calls.log")).expect("calls.log");
    assert_eq!(calls.lines().collect::<Vec<_>>(), ["a", "b", "b", "c"]);
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    assert_eq!(t["step_results"][1]["attempts"].as_array().map(Vec::len), Some(2), "{t}");
    // The lost attempt left no note: it is listed as a timeout, and says so.
    assert_eq!(t["step_results"][1]["attempts"][0]["outcome"], "timeout", "{t}");
    assert_eq!(t["step_results"][1]["attempts"][1]["outcome"], "ok", "{t}");
}

/// Histories recorded by earlier builds (tests/data/temporal/README.md says how) replay with
/// this build's interpreter: it issues the same commands for them.
#[test]
fn a_committed_history_still_replays() {
    let dir = repo().join("tests/data/temporal");
    let mut found = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/data/temporal") {
        let path = entry.expect("an entry").path();
        if path.to_string_lossy().ends_with(".history.json") {
            replays(&path);
            found += 1;
        }
    }
    assert!(found > 0, "no committed history in {}", dir.display());
}

/// A fresh history (a fan-out under a concurrency limit, with retries) replays too.
#[test]
fn a_fresh_history_replays() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}},
        {"execution_id": "flaky", "tool_definition_path": "/tools/flaky.tool", "arguments": {"n": 1},
         "dependencies": ["each"], "retry": {"max_retries": 2, "base_delay_seconds": 0.1}}
      ]
    }"#;
    let (root, q, _w) =
        started("replay", &[("main.tool", main), ("tools/echo.tool", ECHO), ("tools/flaky.tool", FLAKY)]);
    let mock = root.join("mock.json");
    std::fs::write(&mock, r#"{"/tools/flaky.tool": {"$fail_transiently": 1, "$then": {"ok": true}}}"#).expect("mock");
    let history = root.join("run.history.json");
    let (main_s, root_s) = paths(&root);
    let (mock_s, history_s) = (mock.to_string_lossy().into_owned(), history.to_string_lossy().into_owned());
    let o = run(
        &[
            &main_s,
            "--root",
            &root_s,
            "--arg",
            "items=[1,2,3,4,5,6,7,8,9]",
            "--concurrency",
            "3",
            "--mock",
            &mock_s,
            "--temporal-history",
            &history_s,
        ],
        Some(&q),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    replays(&history);
}

/// The replay test can fail: a history whose commands differ from what this interpreter
/// issues (here, another activity type) is refused.
#[test]
fn a_history_that_does_not_match_the_interpreter_does_not_replay() {
    let path = repo().join("tests/data/temporal/conditional-branching-valid.history.json");
    let text = std::fs::read_to_string(&path).expect("the committed history");
    assert!(text.contains("tdsl.call_tool"), "the history calls tdsl.call_tool");
    let tampered = text.replace("tdsl.call_tool", "tdsl.other_tool");
    let e = tdsl::testing::temporal::worker::replay(tampered.as_bytes()).expect_err("a tampered history is refused");
    assert!(e.contains("does not replay"), "{e}");
}

/// Interpreter v4's batches are behind `ctx.patched("tdsl-batched-children")`: the committed
/// history of a v4 run (twenty children in two batches) replays, and with the patch's marker
/// renamed — a history this patch never saw, as a worker without it would have written — it
/// does not: the interpreter then takes the v3 path, one activity per child, and issues
/// other commands than the batches recorded.
#[test]
fn a_batched_history_replays_and_does_not_without_its_patch() {
    let path = repo().join("tests/data/temporal/fan-out-batched-v4.history.json");
    replays(&path);
    let text = std::fs::read_to_string(&path).expect("the committed history");
    assert_eq!(text.matches("tdsl.call_batch").count(), 2, "two batches' activities");
    let e = tdsl::testing::temporal::worker::replay(without_patch(&path, "tdsl-batched-children").as_bytes())
        .expect_err("without its patch, a batched history does not replay");
    assert!(e.contains("does not replay"), "{e}");
    // It took the v3 path: one `tdsl.call_tool` activity where the history has a batch.
    assert!(e.contains("'tdsl.call_batch'") && e.contains("'tdsl.call_tool'"), "{e}");
}

/// The history at `path` with the marker of `patch` renamed, as a worker without the patch
/// would have written it: deprecated, so that the replayer may skip it, and what remains is
/// the interpreter's own commands.
fn without_patch(path: &Path, patch: &str) -> String {
    use base64::Engine as _;
    let text = std::fs::read_to_string(path).expect("the committed history");
    let mut history: Value = serde_json::from_str(&text).expect("JSON");
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut renamed = 0;
    for event in history["events"].as_array_mut().expect("events") {
        let Some(marker) = event["attributes"].get_mut("MarkerRecordedEventAttributes") else { continue };
        for payload in marker["details"]["patch-data"]["payloads"].as_array_mut().into_iter().flatten() {
            let data = b64.decode(payload["data"].as_str().expect("data")).expect("base64");
            let data = String::from_utf8(data).expect("UTF-8");
            if data.contains(patch) {
                let other =
                    data.replace(patch, "tdsl-another-change").replace("\"deprecated\":false", "\"deprecated\":true");
                payload["data"] = json!(b64.encode(other));
                renamed += 1;
            }
        }
    }
    assert_eq!(renamed, 1, "the history has the marker of {patch}");
    history.to_string()
}

/// Interpreter v5's one budget of fuel per run is behind `ctx.patched("tdsl-run-budget")`:
/// the committed history of a v5 run stopped by its `--max-run-fuel` (step `c` out of fuel,
/// step `d` after it never called) replays, and with the patch's marker renamed it does
/// not: the interpreter then evaluates with each expression's own fuel only, `c` succeeds,
/// and it schedules `d`'s call, which the history does not have.
#[test]
fn a_history_stopped_by_the_runs_fuel_replays_and_does_not_without_its_patch() {
    let path = repo().join("tests/data/temporal/run-fuel-v5.history.json");
    replays(&path);
    let text = std::fs::read_to_string(&path).expect("the committed history");
    assert_eq!(text.matches("\"activity_type\":{\"name\":\"tdsl.call_tool\"}").count(), 3, "a, b and c were called");
    let e = tdsl::testing::temporal::worker::replay(without_patch(&path, "tdsl-run-budget").as_bytes())
        .expect_err("without its patch, the history does not replay");
    // The call of `d` where the history has the run's end.
    assert!(e.contains("does not replay") && e.contains("Activity machine"), "{e}");
}

/// A fan-out of 1,000 children (two batches of 500 children, two activities) gives the local
/// run's result and statuses, and its children in input order.
#[test]
fn a_fan_out_of_a_thousand_children_runs_in_batches_as_locally() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"},
         "transform_responses": {"transforms": {"total": "sum(array=map(array=REF:response, template=\"item.n\"))"}}}
      ],
      "response_reference_map": {"total": "REF:each.total", "last": "REF:each.response.last.n"}
    }"#;
    let (root, q, _w) = started("thousand", &[("main.tool", main), ("tools/echo.tool", ECHO)]);
    let (remote, history) =
        same_as_local_keeping_history(&root, &q, json!({"items": (0..1000).collect::<Vec<i64>>()}), 64);
    let result: Value = serde_json::from_str(&remote.stdout).expect("JSON");
    assert_eq!(result, json!({"total": 499500, "last": 999}));
    let children = remote.trace["step_results"][0]["children"].as_array().expect("children").clone();
    assert_eq!(children.len(), 1000);
    assert!(children.iter().enumerate().all(|(i, c)| c["index"] == json!(i) && c["status"] == "COMPLETED"));
    let peak = remote.trace["max_in_flight"].as_u64().expect("max_in_flight");
    assert!((1..=64).contains(&peak), "{peak}");
    // The run's own history holds two batches' activities, not 1,000 activities.
    let events = history_events(&history);
    assert!(events.len() < 100, "{} events in the run's own history", events.len());
    let batches = events.iter().filter(|e| e.to_string().contains("tdsl.call_batch")).count();
    assert_eq!(batches, 2, "two batches' activities scheduled");
    assert!(!events.iter().any(|e| e.to_string().contains("tdsl.call_tool")), "no activity of one child");
    replays(&history);
}

#[test]
fn a_fan_out_of_a_composite_is_split_into_child_workflows_by_the_calls_it_makes() {
    // Each child is a composite of two calls: 300 children make 600 calls, past the 500 one
    // workflow makes; they run in two child workflows of 250 children.
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/pair.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"},
         "transform_responses": {"transforms": {"total": "sum(array=map(array=REF:response, template=\"item.twice\"))"}}}
      ],
      "response_reference_map": {"total": "REF:each.total", "last": "REF:each.response.last"}
    }"#;
    let pair = r#"{
      "arguments": [{"name": "n", "type_name": "integer", "required": true}],
      "instructions": [
        {"execution_id": "a", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": "REF:arguments.n"}},
        {"execution_id": "b", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": "REF:a.n"},
         "transform_responses": {"transforms": {"twice": "REF:response.n * 2"}}}
      ],
      "response_reference_map": {"n": "REF:b.n", "twice": "REF:b.twice"}
    }"#;
    let (root, q, _w) =
        started("composite-chunks", &[("main.tool", main), ("pair.tool", pair), ("tools/echo.tool", ECHO)]);
    let (remote, history) =
        same_as_local_keeping_history(&root, &q, json!({"items": (0..300).collect::<Vec<i64>>()}), 32);
    let result: Value = serde_json::from_str(&remote.stdout).expect("JSON");
    assert_eq!(result, json!({"total": 89700, "last": {"n": 299, "twice": 598}}));
    let children = remote.trace["step_results"][0]["children"].as_array().expect("children").clone();
    assert_eq!(children.len(), 300);
    // Every child's own steps came back from its child workflow.
    assert!(children.iter().all(|c| c["steps"].as_array().is_some_and(|s| s.len() == 2)), "{:?}", children[0]);
    let events = history_events(&history);
    // Event types by number (temporal.api.enums.v1.EventType).
    let (child_initiated, activity_scheduled) = (29, 10);
    let count = |kind: i64| events.iter().filter(|e| e["event_type"] == kind).count();
    assert_eq!(count(child_initiated), 2, "two child workflows");
    assert_eq!(count(activity_scheduled), 0, "no call in the run's own workflow");
    replays(&history);
}

#[test]
fn a_run_that_would_outgrow_its_workflow_history_stops_with_an_error_naming_the_limit() {
    // 400 calls in the run's own workflow, in batches of 8 (eight times `--concurrency 1`,
    // about 6 events each), with a history limit of 150 events: the batches stop at the
    // limit, the run fails E0815.
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
      ]
    }"#;
    let (root, q, _w) = started("history-limit", &[("main.tool", main), ("tools/echo.tool", ECHO)]);
    let (main_s, root_s) = paths(&root);
    let items = format!("items={}", serde_json::to_string(&(0..400).collect::<Vec<i64>>()).expect("JSON"));
    let o = run(
        &[&main_s, "--root", &root_s, "--arg", &items, "--concurrency", "1", "--temporal-history-limit", "150"],
        Some(&q),
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(o.trace["error"]["code"], "E0815", "{}", o.stderr);
    assert!(o.stderr.contains("at the run's limit of 150 (--temporal-history-limit"), "{}", o.stderr);
    let children = o.trace["step_results"][0]["children"].as_array().expect("children").clone();
    let done = children.iter().filter(|c| c["status"] == "COMPLETED").count();
    assert!((10..400).contains(&done), "{done} children completed before the limit");
    // Whole batches ran: the children that completed are a multiple of the batch's 8.
    assert_eq!(done % 8, 0, "{done} children completed before the limit");
    // The default leaves the same run alone; out of range is a usage error.
    let o = run(&[&main_s, "--root", &root_s, "--arg", &items, "--concurrency", "8"], Some(&q));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = run(&[&main_s, "--root", &root_s, "--arg", &items, "--temporal-history-limit", "60000"], Some(&q));
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// A fan-out of `builtin:echo` whose children each carry a kilobyte (a padding argument of
/// the step): every child's kilobyte goes into the history twice, in its batch's input and
/// in its answer.
const PADDED_MAIN: &str = r#"{
  "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/tools/echo.tool", "arguments": {"pad": "PAD"},
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
  ]
}"#;

/// A root of [`PADDED_MAIN`] and its echo tool.
fn padded_files() -> [(&'static str, String); 2] {
    [
        ("main.tool", PADDED_MAIN.replace("PAD", &"x".repeat(1000))),
        ("tools/echo.tool", r#"{"system_event_endpoint": "builtin:echo"}"#.to_string()),
    ]
}

/// The bytes of every payload in `events` (their `data`, decoded).
fn payload_bytes(events: &[Value]) -> usize {
    use base64::Engine as _;
    fn walk(v: &Value) -> usize {
        match v {
            Value::Object(m) => match (m.get("data"), m.contains_key("metadata")) {
                (Some(Value::String(d)), true) => {
                    base64::engine::general_purpose::STANDARD.decode(d).map_or(0, |b| b.len())
                }
                _ => m.values().map(walk).sum(),
            },
            Value::Array(a) => a.iter().map(walk).sum(),
            _ => 0,
        }
    }
    events.iter().map(walk).sum()
}

/// Issue 43's hostile round: 3,000 children of 10 KB each took the history past Temporal's
/// 50 MiB, and Temporal terminated the run with no trace. The interpreter counts the bytes of
/// payloads its history holds and stops, E0815, before a batch would pass
/// `--temporal-history-bytes`: here 400 children of a kilobyte in batches of 8 under a limit
/// of 100,000 bytes. The run stops at the last batch that fits, with the trace an E0815 of
/// the events' limit has; its history holds no more than the limit, and one more batch
/// would have passed it.
#[test]
fn a_run_that_would_outgrow_its_history_bytes_stops_with_an_error_naming_the_limit() {
    let files = padded_files();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let (root, q, _w) = started("history-bytes", &files);
    let (main_s, root_s) = paths(&root);
    let items = format!("items={}", serde_json::to_string(&(0..400).collect::<Vec<i64>>()).expect("JSON"));
    let history = root.join("run.history.json");
    let history_s = history.to_string_lossy().into_owned();
    let limit = 100_000;
    let limit_s = limit.to_string();
    let o = run(
        &[
            &main_s,
            "--root",
            &root_s,
            "--arg",
            &items,
            "--concurrency",
            "1",
            "--temporal-history-bytes",
            &limit_s,
            "--temporal-history",
            &history_s,
        ],
        Some(&q),
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(o.trace["overall_status"], "FAILED", "{}", o.stderr);
    assert_eq!(o.trace["error"]["code"], "E0815", "{}", o.stderr);
    assert!(o.stderr.contains("would pass the run's limit of 100000 bytes (--temporal-history-bytes"), "{}", o.stderr);
    let children = o.trace["step_results"][0]["children"].as_array().expect("children").clone();
    assert_eq!(children.len(), 400);
    let done = children.iter().filter(|c| c["status"] == "COMPLETED").count();
    // Whole batches ran, each of 8 children, about 17 KB each with its answers.
    assert!((16..=64).contains(&done) && done % 8 == 0, "{done} children completed before the limit");
    // The first child past the limit failed E0815, as with the events' limit.
    assert_eq!(children[done]["status"], "FAILED", "{}", children[done]);
    // What the history holds (the run's result aside, which comes after the stop) is under
    // the limit, and one more batch's input would have passed it.
    let events = history_events(&history);
    let (ended, rest) = events.split_last().expect("events");
    let held = payload_bytes(rest);
    let batch_input = events
        .iter()
        .find(|e| e["event_type"] == 10)
        .map(|e| payload_bytes(std::slice::from_ref(e)))
        .expect("a batch was scheduled");
    assert!(held <= limit, "the history holds {held} bytes, past the limit of {limit}");
    assert!(held + batch_input > limit, "{held} + {batch_input} bytes: another batch fitted");
    // The count the error names is the history's own, give or take the events' framing.
    let said: usize = o
        .stderr
        .split("history holds ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {}", o.stderr));
    eprintln!("{done} children; counted {said} bytes, the history holds {held}, a batch's input {batch_input}");
    assert!(said.abs_diff(held) < 1_000, "counted {said} bytes, the history holds {held}");
    assert!(payload_bytes(std::slice::from_ref(ended)) > 0, "the run's trace is its result");
    replays(&history);
    // The default leaves the same run alone; out of range is a usage error.
    let o = run(&[&main_s, "--root", &root_s, "--arg", &items, "--concurrency", "8"], Some(&q));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = run(&[&main_s, "--root", &root_s, "--arg", &items, "--temporal-history-bytes", "1000"], Some(&q));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--temporal-history-bytes: `temporal history bytes` must be"), "{}", o.stderr);
}

/// When Temporal terminates a run anyway (a server whose limit is below the run's
/// `--temporal-history-bytes`: here 300,000 bytes, and the run's limit the most it takes),
/// `tdsl run` says why, from the history's last event, names the limits, and fails E0815.
#[test]
fn a_run_terminated_by_temporal_at_its_history_limit_says_so() {
    let files = padded_files();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let root = root_with("terminated-by-limit", &files);
    // A server of its own, with a small history size limit.
    let dir = server().dir.join("small-history-server");
    std::fs::create_dir_all(&dir).expect("a folder");
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let _server = start_server_with(
        port,
        &dir,
        &[
            "--dynamic-config-value",
            "limit.historySize.error=300000",
            "--dynamic-config-value",
            "limit.historySize.warn=100000",
        ],
    );
    let root_s = root.to_string_lossy().into_owned();
    let args =
        ["worker", "--engine", "temporal", "--root", &root_s, "--temporal-address", &address, "--task-queue", "small"];
    let _w = start_guarded(Path::new(env!("CARGO_BIN_EXE_tdsl")), &args, &dir.join("worker.log"), repo());
    let main_s = root.join("main.tool").to_string_lossy().into_owned();
    let items = format!("items={}", serde_json::to_string(&(0..400).collect::<Vec<i64>>()).expect("JSON"));
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", &main_s, "--root", &root_s, "--arg", &items, "--concurrency", "1", "--no-history"])
        .args(["--temporal-history-bytes", &tdsl::ranges::TEMPORAL_HISTORY_BYTES.max.to_string()])
        .args(["--engine", "temporal", "--temporal-address", &address, "--task-queue", "small"])
        .output()
        .expect("tdsl runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("was terminated on Temporal and left no trace: \"Workflow history size exceeds limit."),
        "{stderr}"
    );
    assert!(stderr.contains("--temporal-history-bytes") && stderr.contains("[E0815]"), "{stderr}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn files_travel_with_the_run_and_transforms_read_them_as_locally() {
    let main = r#"{
      "instructions": [
        {"execution_id": "read", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": 1},
         "transform_responses": {"transforms": {
           "now": "read_file(\"notes.txt\")",
           "first": "read_file(file_path=\"notes.txt\", version_id=list_file_versions(\"notes.txt\").last.version_id)",
           "versions": "length(list_file_versions(\"notes.txt\"))",
           "listing": "list_files(\"sub\")"}}}
      ],
      "response_reference_map": {"now": "REF:read.now", "first": "REF:read.first", "versions": "REF:read.versions", "listing": "REF:read.listing"}
    }"#;
    let root = root_with("files", &[("main.tool", main), ("tools/echo.tool", ECHO)]);
    // The data: a git work tree, notes.txt in two commits.
    let data = root.join("data");
    std::fs::create_dir_all(data.join("sub")).expect("data");
    git(&data, &["init", "-q"]);
    std::fs::write(data.join("notes.txt"), "first draft").expect("notes");
    std::fs::write(data.join("sub/a.json"), "{}").expect("a.json");
    git(&data, &["add", "."]);
    git(&data, &["commit", "-q", "-m", "one"]);
    std::fs::write(data.join("notes.txt"), "second draft").expect("notes");
    git(&data, &["commit", "-q", "-am", "two"]);
    let q = queue("files");
    let w = worker(&root, &q);
    let (main_s, root_s, data_s) = (
        root.join("main.tool").to_string_lossy().into_owned(),
        root.to_string_lossy().into_owned(),
        data.to_string_lossy().into_owned(),
    );
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s, "--files", &data_s], &q);
    let result: Value = serde_json::from_str(&remote.stdout).expect("JSON");
    assert_eq!(result["now"], "second draft", "{result}");
    assert_eq!(result["first"], "first draft", "{result}");
    assert_eq!(result["versions"], 2, "{result}");
    assert!(result["listing"].to_string().contains("a.json"), "{result}");
    // The worker read the snapshot, not the directory: it never had --files.
    assert!(!w.log().contains("--files"), "{}", w.log());
    // More than the run's input can carry: a usage error naming the limit, before any run.
    std::fs::write(data.join("big.bin"), vec![b'x'; 1_200_000]).expect("big");
    let o = run(&[&main_s, "--root", &root_s, "--files", &data_s], Some(&q));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("payload limit of 2097152 bytes"), "{}", o.stderr);
    assert!(!o.stderr.contains("run id"), "{}", o.stderr);
}

#[test]
fn chunks_of_a_composite_with_a_nested_fan_out_run_side_by_side_within_the_concurrency() {
    // A composite with a nested fan-out (the case `groups`) counts as a whole chunk: one
    // child per child workflow. With --concurrency 4, four such child workflows run at once,
    // a slot each.
    let root = cases::spec("groups/budget-9").dir;
    let q = queue("side-by-side");
    let _w = worker(&root, &q);
    let groups = json!({"groups": [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]});
    let (remote, history) = same_as_local_keeping_history(&root, &q, groups, 4);
    let result: Value = serde_json::from_str(&remote.stdout).expect("JSON");
    assert_eq!(result["groups"][5]["sum"], 23, "{result}");
    let kinds: Vec<i64> = history_events(&history).iter().map(|e| e["event_type"].as_i64().unwrap_or(0)).collect();
    // temporal.api.enums.v1.EventType: 29 a child workflow initiated, 32 one completed.
    let (initiated, completed) = (29, 32);
    assert_eq!(kinds.iter().filter(|k| **k == initiated).count(), 6, "one child workflow per child");
    let first_done = kinds.iter().position(|k| *k == completed).expect("a child completed");
    let before = kinds[..first_done].iter().filter(|k| **k == initiated).count();
    assert_eq!(before, 4, "four child workflows side by side, the run's --concurrency 4 shared among them");
    replays(&history);
}

const SLEEPY: &str = r#"{
  "arguments": [{"name": "seconds", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/sleep.sh"
}"#;

const SLEEP_SH: &str = r#"#!/bin/sh
input=$(cat | tr -d '\n')
seconds=$(printf '%s' "$input" | sed -n 's/.*"seconds": *\([0-9]*\).*/\1/p')
sleep "$seconds"
printf '{"slept":%s}\n' "$seconds"
"#;

/// A root with the sleepy tool and its program.
fn sleepy_root(name: &str, main: &str) -> PathBuf {
    let root = root_with(name, &[("main.tool", main), ("tools/sleepy.tool", SLEEPY)]);
    script(&root.join("tools/bin/sleep.sh"), SLEEP_SH);
    root
}

#[test]
fn a_step_timeout_and_the_run_deadline_behave_as_locally() {
    // The step's timeout: one attempt of 1 s, no retry; TIMEOUT, and what follows is cancelled.
    let main = r#"{
      "instructions": [
        {"execution_id": "slow", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 4},
         "timeout_seconds": 1, "retry": {"max_retries": 0}},
        {"execution_id": "after", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 0},
         "dependencies": ["slow"]}
      ]
    }"#;
    let root = sleepy_root("timeout", main);
    let q = queue("timeout");
    let _w = worker(&root, &q);
    let (main_s, root_s) = paths(&root);
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s], &q);
    assert_eq!(remote.code, 1);
    assert_eq!(remote.trace["overall_status"], "TIMEOUT");
    assert!(remote.stderr.contains("timed out after 1 s"), "{}", remote.stderr);
    assert!(remote.stderr.contains("E0804"), "{}", remote.stderr);
    // The run's deadline: 2 s, a step of 5 s; TIMEOUT with E0805.
    let main = r#"{
      "instructions": [
        {"execution_id": "slow", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 5}},
        {"execution_id": "after", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 0},
         "dependencies": ["slow"]}
      ]
    }"#;
    let root = sleepy_root("deadline", main);
    let q = queue("deadline");
    let _w = worker(&root, &q);
    let (main_s, root_s) = paths(&root);
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s, "--deadline", "2"], &q);
    assert_eq!(remote.code, 1);
    assert_eq!(remote.trace["overall_status"], "TIMEOUT");
    assert!(remote.stderr.contains("E0805"), "{}", remote.stderr);
}

const HANG: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/hang.sh"
}"#;

/// Writes its pid next to itself, then sleeps for a minute.
const HANG_SH: &str = "#!/bin/sh\ncat >/dev/null\necho $$ > \"$(dirname \"$0\")/hang.pid.tmp\"\nmv \"$(dirname \"$0\")/hang.pid.tmp\" \"$(dirname \"$0\")/hang.pid\"\nexec sleep 60\n";

const HANGING_MAIN: &str = r#"{
  "instructions": [
    {"execution_id": "slow", "tool_definition_path": "/tools/hang.tool", "arguments": {"n": 1},
     "timeout_seconds": 120},
    {"execution_id": "after", "tool_definition_path": "/tools/hang.tool", "arguments": {"n": 2},
     "dependencies": ["slow"]}
  ]
}"#;

/// A run on Temporal of `files` (`main.tool` among them) whose tool hangs, cancelled by
/// `cancel(workflow id, client pid)` once the tool runs: the client's exit code, its
/// stderr, the trace, and the workflow's status.
fn cancelled_run(name: &str, files: &[(&str, &str)], cancel: impl Fn(&str, u32)) -> (i32, String, Value, String) {
    cancelled_run_with(name, files, &[], cancel)
}

/// [`cancelled_run`] with more options for `tdsl run`.
fn cancelled_run_with(
    name: &str,
    files: &[(&str, &str)],
    options: &[&str],
    cancel: impl Fn(&str, u32),
) -> (i32, String, Value, String) {
    let (code, stderr, trace, described, _) = cancelled_run_timed(name, files, options, cancel);
    (code, stderr, trace, described)
}

/// [`cancelled_run_with`], and how long the client took to end after the cancel.
fn cancelled_run_timed(
    name: &str,
    files: &[(&str, &str)],
    options: &[&str],
    cancel: impl Fn(&str, u32),
) -> (i32, String, Value, String, Duration) {
    let mut files = files.to_vec();
    files.push(("tools/hang.tool", HANG));
    let root = root_with(name, &files);
    script(&root.join("tools/bin/hang.sh"), HANG_SH);
    let q = queue(name);
    let _w = worker(&root, &q);
    let (main_s, root_s) = paths(&root);
    let (trace, stderr) = (root.join("trace.json"), root.join("stderr.log"));
    let mut client = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", &main_s, "--root", &root_s, "--no-history", "--trace"])
        .arg(&trace)
        .args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", &q])
        .args(options)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).expect("a log"))
        .spawn()
        .expect("tdsl runs");
    let pidfile = root.join("tools/bin/hang.pid");
    wait_until(Duration::from_secs(30), "the tool to start", || pidfile.exists().then_some(()));
    let tool_pid = std::fs::read_to_string(&pidfile).expect("the pid").trim().to_string();
    let log = std::fs::read_to_string(&stderr).expect("stderr");
    let workflow_id = log
        .split("workflow id ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no workflow id on stderr: {log}"))
        .to_string();
    let cancelled_at = Instant::now();
    cancel(&workflow_id, client.id());
    let code = wait_until(Duration::from_secs(60), "the client to end after the cancel", || {
        client.try_wait().expect("wait").map(|status| status.code().unwrap_or(-1))
    });
    let took = cancelled_at.elapsed();
    // The tool's process was stopped, not left to sleep out its minute.
    wait_until(Duration::from_secs(10), "the cancelled tool to end", || (!alive(&tool_pid)).then_some(()));
    let described = Command::new(temporal_program())
        .args(["workflow", "describe", "--workflow-id", &workflow_id, "--address", &server().address(), "-o", "json"])
        .output()
        .expect("temporal runs");
    let described = String::from_utf8_lossy(&described.stdout).into_owned();
    let trace = std::fs::read_to_string(&trace).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null);
    (code, std::fs::read_to_string(&stderr).unwrap_or_default(), trace, described, took)
}

fn assert_cancelled(stderr: &str, trace: &Value, described: &str) {
    assert_eq!(trace["overall_status"], "FAILED", "{stderr}");
    assert_eq!(trace["error"]["code"], "E0813", "{trace}");
    let steps = statuses(trace);
    assert_eq!(steps, [("slow".to_string(), "CANCELLED".to_string()), ("after".to_string(), "CANCELLED".to_string())]);
    let attempt = &trace["step_results"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "cancelled", "{trace}");
    assert!(stderr.contains("E0813"), "{stderr}");
    assert!(described.contains("WORKFLOW_EXECUTION_STATUS_CANCELED"), "the workflow is not CANCELED: {described}");
}

#[test]
fn a_run_cancelled_from_temporal_ends_cancelled_and_stops_its_tools() {
    let (code, stderr, trace, described) = cancelled_run("cancel", &[("main.tool", HANGING_MAIN)], |workflow_id, _| {
        // While it runs, the workflow answers its `progress` query.
        let out = Command::new(temporal_program())
            .args(["workflow", "query", "--workflow-id", workflow_id, "--type", "progress", "--input", "0"])
            .args(["--address", &server().address(), "-o", "json"])
            .output()
            .expect("temporal runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "temporal workflow query: {}", String::from_utf8_lossy(&out.stderr));
        for want in [r#""steps": 2"#, r#""steps_done": 0"#, r#""in_flight": 1"#, "▶ slow (/tools/hang.tool)"] {
            assert!(text.contains(want), "{want} not in the progress: {text}");
        }
        cancel_from_temporal(workflow_id);
    });
    assert_eq!(code, 1, "{stderr}");
    assert_cancelled(&stderr, &trace, &described);
}

#[test]
fn a_run_cancelled_during_a_chunked_fan_out_cancels_its_child_workflows() {
    // A composite with a nested fan-out runs one child per child workflow: cancelling the
    // run cancels them, and their tools stop.
    let main = r#"{
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/group.tool",
         "parallel_execution": {"iterate_over": [[1], [2]], "child_argument_name": "ns"}}
      ]
    }"#;
    let group = r#"{
      "arguments": [{"name": "ns", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/hang.tool", "timeout_seconds": 120,
         "parallel_execution": {"iterate_over": "REF:arguments.ns", "child_argument_name": "n"}}
      ]
    }"#;
    let (code, stderr, trace, described) =
        cancelled_run("cancel-chunks", &[("main.tool", main), ("group.tool", group)], |workflow_id, _| {
            cancel_from_temporal(workflow_id)
        });
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(trace["error"]["code"], "E0813", "{trace}");
    assert!(described.contains("WORKFLOW_EXECUTION_STATUS_CANCELED"), "{described}");
    let steps = statuses(&trace);
    assert_eq!(steps[0], ("each".to_string(), "CANCELLED".to_string()), "{steps:?}");
    assert!(steps.iter().all(|(_, s)| s == "CANCELLED"), "{steps:?}");
}

/// Cancels the workflow from Temporal's side (its CLI), as an operator would.
fn cancel_from_temporal(workflow_id: &str) {
    let out = Command::new(temporal_program())
        .args(["workflow", "cancel", "--workflow-id", workflow_id, "--address", &server().address()])
        .output()
        .expect("temporal runs");
    assert!(out.status.success(), "temporal workflow cancel: {}", String::from_utf8_lossy(&out.stderr));
}

/// Each child records when it started (nanoseconds since the epoch), then works a second.
const STARTS_SH: &str =
    "#!/bin/sh\ncat >/dev/null\necho \"$(date +%s%N)\" >> \"$(dirname \"$0\")/started.log\"\nsleep 1\necho '{}'\n";

/// Issue 43's hostile round: `tdsl run` interrupted mid-batch, the batch went on starting
/// children for 4.3 s (all 32 of it ran), as the SDK sent its heartbeats, and so heard of the
/// cancel, only every 16 s. 64 children of a second each under `--concurrency 4` (batches of
/// 32): after SIGINT no child starts more than about a heartbeat later, and the client ends
/// within a few seconds.
#[test]
fn an_interrupted_batch_starts_no_child_a_heartbeat_after_the_cancel() {
    let items: Vec<i64> = (0..64).collect();
    let main = json!({"instructions": [{"execution_id": "each", "tool_definition_path": "/tools/slow.tool",
        "timeout_seconds": 60, "parallel_execution": {"iterate_over": items, "child_argument_name": "n"}}]})
    .to_string();
    let slow = r#"{"system_event_endpoint": "exec:./bin/slow.sh"}"#;
    let (root, q, _w) = started("interrupt-batch", &[("main.tool", &main), ("tools/slow.tool", slow)]);
    script(&root.join("tools/bin/slow.sh"), STARTS_SH);
    let (main_s, root_s) = paths(&root);
    let (trace, stderr) = (root.join("trace.json"), root.join("stderr.log"));
    let mut client = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", &main_s, "--root", &root_s, "--no-history", "--concurrency", "4", "--trace"])
        .arg(&trace)
        .args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", &q])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).expect("a log"))
        .spawn()
        .expect("tdsl runs");
    let log = root.join("tools/bin/started.log");
    let starts = || -> Vec<u128> {
        std::fs::read_to_string(&log).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
    };
    // Mid-batch: the second wave of four has started.
    wait_until(Duration::from_secs(60), "the batch's children to start", || (starts().len() >= 5).then_some(()));
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_nanos();
    let (cancelled_at, cancelled) = (now(), Instant::now());
    assert!(Command::new("kill").args(["-INT", &client.id().to_string()]).status().expect("kill").success());
    let code = wait_until(Duration::from_secs(60), "the client to end after the cancel", || {
        client.try_wait().expect("wait").map(|status| status.code().unwrap_or(-1))
    });
    let took = cancelled.elapsed();
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert_eq!(code, 130, "{stderr}");
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("a trace")).expect("JSON");
    assert_eq!(trace["error"]["code"], "E0813", "{stderr}");
    let starts = starts();
    let latest = starts.iter().max().copied().unwrap_or(0);
    let after_ms = latest.saturating_sub(cancelled_at) / 1_000_000;
    eprintln!(
        "{} children started, the last {after_ms} ms after the cancel; the client ended in {took:?}",
        starts.len()
    );
    // Bounds with room for a loaded machine: before the fix a child started 6.1 s after the
    // cancel, the whole batch of 32 ran and the client took 16 s (the cancel reached the batch
    // in a heartbeat throttled to 16 s).
    assert!(after_ms < 4_000, "a child started {after_ms} ms after the cancel ({} children started)", starts.len());
    assert!(starts.len() < 32, "{} children started: the whole batch ran", starts.len());
    assert!(took < Duration::from_secs(10), "the client took {took:?} to end after the cancel");
    // Those that never started say so.
    let children = trace["step_results"][0]["children"].as_array().expect("children").clone();
    let unstarted = children.iter().filter(|c| c["attempts"].as_array().is_none_or(Vec::is_empty)).count();
    assert!(unstarted >= 64 - starts.len(), "{unstarted} children without an attempt, {} started", starts.len());
}

/// A run terminated from Temporal's side (`temporal workflow terminate --reason`): `tdsl
/// run` names the reason and who terminated it, and fails.
#[test]
fn a_run_terminated_by_an_operator_names_the_reason() {
    let (code, stderr, trace, described) =
        cancelled_run("terminate", &[("main.tool", HANGING_MAIN)], |workflow_id, _| {
            let out = Command::new(temporal_program())
                .args(["workflow", "terminate", "--workflow-id", workflow_id, "--reason", "maintenance window"])
                .args(["--address", &server().address()])
                .output()
                .expect("temporal runs");
            assert!(out.status.success(), "temporal workflow terminate: {}", String::from_utf8_lossy(&out.stderr));
        });
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("was terminated on Temporal and left no trace: \"maintenance window\" (by "), "{stderr}");
    assert!(!stderr.contains("E0815"), "{stderr}");
    assert_eq!(trace, Value::Null, "no trace");
    assert!(described.contains("WORKFLOW_EXECUTION_STATUS_TERMINATED"), "{described}");
}

/// A run cancelled while a batch of fan-out children runs: the batch's activity hears of it
/// by its heartbeat, stops the child in flight (its tool's process ends) and says what ran;
/// the child in flight is cancelled, those the batch had not started never start, and the
/// run ends CANCELED, E0813.
#[test]
fn a_run_cancelled_mid_batch_stops_the_child_in_flight_and_starts_no_other() {
    let main = r#"{
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/hang.tool", "timeout_seconds": 120,
         "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "n"}},
        {"execution_id": "after", "tool_definition_path": "/tools/hang.tool", "arguments": {"n": 4},
         "dependencies": ["each"]}
      ]
    }"#;
    let (code, stderr, trace, described, took) =
        cancelled_run_timed("cancel-batch", &[("main.tool", main)], &["--concurrency", "1"], |workflow_id, _| {
            cancel_from_temporal(workflow_id)
        });
    assert_eq!(code, 1, "{stderr}");
    // The batch heard of the cancel within a heartbeat or two (it took 14 s when the SDK
    // held a batch's heartbeats back to 16 s, 0.8 of its heartbeat timeout).
    assert!(took < Duration::from_secs(10), "the client took {took:?} to end after the cancel");
    assert_eq!(trace["error"]["code"], "E0813", "{trace}");
    assert!(described.contains("WORKFLOW_EXECUTION_STATUS_CANCELED"), "{described}");
    let steps: Vec<(String, String)> = statuses(&trace);
    let want: Vec<(String, String)> = ["each", "each[0]", "each[1]", "each[2]", "after"]
        .iter()
        .map(|s| (s.to_string(), "CANCELLED".to_string()))
        .collect();
    assert_eq!(steps, want);
    let children = trace["step_results"][0]["children"].as_array().expect("children").clone();
    assert_eq!(children.len(), 3, "{trace}");
    // The first was in flight: its one attempt was cancelled.
    assert_eq!(children[0]["attempts"][0]["outcome"], "cancelled", "{trace}");
    assert_eq!(children[0]["attempts"].as_array().map(Vec::len), Some(1), "{trace}");
    // The others never started: no attempt.
    for c in &children[1..] {
        assert_eq!(c["status"], "CANCELLED", "{c}");
        assert!(c["attempts"].as_array().is_none_or(Vec::is_empty), "{c}");
    }
}

/// On a terminal, `tdsl run --engine temporal` draws the bar a local run draws, from the
/// workflow's `progress` query.
#[test]
fn progress_is_drawn_on_a_terminal_from_the_workflow() {
    use rexpect::session::spawn_command;
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}},
        {"execution_id": "after", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": 1},
         "dependencies": ["each"]}
      ]
    }"#;
    let (root, q, _w) = started("progress", &[("main.tool", main), ("tools/echo.tool", ECHO)]);
    let (main_s, root_s) = paths(&root);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["run", &main_s, "--root", &root_s, "--arg", "items=[1,2,3]", "--no-history"])
        .args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", &q])
        .env("NO_COLOR", "1");
    let mut p = spawn_command(cmd, Some(60_000)).expect("spawn on a pseudo-terminal");
    p.exp_string("steps 0/2").expect("the bar starts");
    // (The pseudo-terminal is read as Latin-1: the lines' marks are matched by what follows them.)
    p.exp_string(" each (/tools/echo.tool)").expect("a step's line");
    p.exp_string(" after (/tools/echo.tool)").expect("the last step's line");
    p.exp_string("steps 2/2, children 3/3, in flight 0, retries 0").expect("the bar ends full");
    p.exp_string("\"each\"").expect("the result follows");
    p.exp_eof().expect("the run ends");
}

#[test]
fn ctrl_c_on_the_client_cancels_the_run_on_temporal() {
    let (code, stderr, trace, described) = cancelled_run("interrupt", &[("main.tool", HANGING_MAIN)], |_, client| {
        assert!(Command::new("kill").args(["-INT", &client.to_string()]).status().expect("kill").success());
    });
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("interrupted: cancelling the run"), "{stderr}");
    assert_cancelled(&stderr, &trace, &described);
}

/// The dev server killed mid-run (SIGKILL) and started again on its SQLite file: the run
/// finishes, and the client, which kept asking, prints its result.
#[test]
fn a_server_restarted_mid_run_finishes_the_run() {
    let main = r#"{
      "instructions": [
        {"execution_id": "slow", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 3}},
        {"execution_id": "after", "tool_definition_path": "/tools/sleepy.tool", "arguments": {"seconds": 0},
         "dependencies": ["slow"]}
      ],
      "response_reference_map": {"slow": "REF:slow.slept", "after": "REF:after.slept"}
    }"#;
    let root = sleepy_root("restart", main);
    // A server of its own: this test kills it.
    let dir = server().dir.join("restart-server");
    std::fs::create_dir_all(&dir).expect("a folder");
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut first = start_server(port, &dir);
    let root_s = root.to_string_lossy().into_owned();
    let args = [
        "worker",
        "--engine",
        "temporal",
        "--root",
        &root_s,
        "--temporal-address",
        &address,
        "--task-queue",
        "restart",
    ];
    let _w = start_guarded(Path::new(env!("CARGO_BIN_EXE_tdsl")), &args, &dir.join("worker.log"), repo());
    let main_s = root.join("main.tool").to_string_lossy().into_owned();
    let client = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", &main_s, "--root", &root_s, "--no-history"])
        .args(["--engine", "temporal", "--temporal-address", &address, "--task-queue", "restart"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl runs");
    // Mid-run: the first call sleeps 3 s.
    std::thread::sleep(Duration::from_millis(1500));
    first.crash();
    let _second = start_server(port, &dir);
    let out = client.wait_with_output().expect("the client ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(result, json!({"slow": 3, "after": 0}));
}

const BIG_SH: &str = r#"#!/bin/sh
cat > /dev/null
printf '{"text":"'
head -c 3000000 /dev/zero | tr '\0' 'a'
printf '"}\n'
"#;

/// Payloads over Temporal's 2 MiB: a tool's response is an error of its step naming the
/// limit (the run goes on to fail as locally a failed step would); a run's input (here, a
/// mock) is refused before anything starts.
#[test]
fn payloads_over_the_limit_are_errors_naming_it() {
    let main = r#"{
      "instructions": [{"execution_id": "big", "tool_definition_path": "/tools/big.tool"}]
    }"#;
    let big = r#"{"system_event_endpoint": "exec:./bin/big.sh"}"#;
    let root = root_with("payload", &[("main.tool", main), ("tools/big.tool", big)]);
    script(&root.join("tools/bin/big.sh"), BIG_SH);
    let q = queue("payload");
    let _w = worker(&root, &q);
    let (main_s, root_s) = paths(&root);
    let o = run(&[&main_s, "--root", &root_s], Some(&q));
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("over Temporal's payload limit of 2097152 bytes"), "{}", o.stderr);
    assert_eq!(statuses(&o.trace), [("big".to_string(), "FAILED".to_string())]);
    // The same run's input with a 3 MB mock: refused here, exit 2, nothing started.
    let mock = root.join("mock.json");
    std::fs::write(&mock, json!({"/tools/big.tool": {"text": "a".repeat(3_000_000)}}).to_string()).expect("mock");
    let mock_s = mock.to_string_lossy().into_owned();
    let o = run(&[&main_s, "--root", &root_s, "--mock", &mock_s], Some(&q));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("the run's input"), "{}", o.stderr);
    assert!(o.stderr.contains("payload limit"), "{}", o.stderr);
    assert!(!o.stderr.contains("run id"), "{}", o.stderr);
}

/// Issue 38 item 2 on Temporal: `--max-calls-per-run` is one budget for the whole run, its
/// fan-out chunks' child workflows included (each used to count its own), checked before
/// each call. The case `groups` (three children, each a composite callee in a child workflow
/// of its own) holds the outcomes, which [`every_engine_case_runs_on_temporal_as_expected`]
/// checks; here, what is Temporal's own: under `--concurrency 4` the child workflows could
/// run side by side, but the calls lent to the first are all that is left, so the others
/// wait for what it gives back and the run stops at the same call; every history replays.
#[test]
fn the_calls_of_a_run_are_one_budget_across_its_child_workflows_as_locally() {
    let dir = cases::spec("groups/budget-7").dir;
    let q = queue("call-budget");
    let _w = worker(&dir, &q);
    for (run, concurrency) in [("budget-7", 1), ("budget-7", 4), ("budget-9", 4)] {
        let mut spec = cases::spec(&format!("groups/{run}"));
        spec.options.insert("concurrency".into(), json!(concurrency));
        let history = server().dir.join(format!("call-budget-{run}-{concurrency}.history.json"));
        let history_s = history.to_string_lossy().into_owned();
        let o = check_on_temporal(&spec, &q, &["--temporal-history", &history_s]).unwrap_or_else(|e| panic!("{e}"));
        if run == "budget-7" {
            assert!(o.stderr.contains("the run reached its limit of 7 calls (`--max-calls-per-run`)"), "{}", o.stderr);
        }
        replays(&history);
    }
}

/// The calls of a primitive fan-out past one chunk (500 children) count against one
/// budget: 600 children under a limit of 550 stop at the 551st call, as locally. On
/// Temporal a call is charged once it has its slot, children in input order, so the run
/// stops at the same child under `--concurrency 16` as a local run under `--concurrency 1`
/// (a local run's workers race for the last calls).
#[test]
fn a_fan_out_past_one_child_workflow_stops_at_the_runs_limit_of_calls_as_locally() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
      ]
    }"#;
    let (root, q, _w) = started("call-budget-chunks", &[("main.tool", main), ("tools/echo.tool", ECHO)]);
    std::fs::write(root.join("args.json"), json!({"items": (0..600).collect::<Vec<i64>>()}).to_string()).expect("args");
    let (main_s, root_s) = paths(&root);
    let args_s = root.join("args.json").to_string_lossy().into_owned();
    let local =
        run(&[&main_s, "--root", &root_s, "--args", &args_s, "--max-calls-per-run", "550", "--concurrency", "1"], None);
    let remote = run(
        &[&main_s, "--root", &root_s, "--args", &args_s, "--max-calls-per-run", "550", "--concurrency", "16"],
        Some(&q),
    );
    assert_eq!(remote.code, 1, "{}", remote.stderr);
    assert_eq!(local.code, 1, "{}", local.stderr);
    assert_eq!(remote.trace["error"], local.trace["error"], "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["code"], "E0816", "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["step"], "each[550]", "{}", remote.trace["error"]);
    assert_eq!(error_lines(&remote.stderr), error_lines(&local.stderr));
    assert_eq!(statuses(&remote.trace), statuses(&local.trace));
    let done = statuses(&remote.trace).iter().filter(|(_, s)| s == "COMPLETED").count();
    assert_eq!(done, 550);
}

/// A tool whose program answers `{"n": n}`, and fails (permanently) for `n` = 1.
const PICK: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "responses": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/pick.sh"
}"#;

const PICK_SH: &str = r#"#!/bin/sh
n=$(cat | tr -d ' \n' | sed -n 's/.*"n":\([0-9]*\).*/\1/p')
if [ "$n" = "1" ]; then echo "child one refuses" >&2; exit 1; fi
printf '{"n": %s}\n' "$n"
"#;

/// What a step's children say, without what says when they ran (`started_ms`, `ended_ms`,
/// `duration_ms`, the attempts).
fn children_said(trace: &Value, step: &str) -> Vec<Value> {
    let steps = trace["step_results"].as_array().cloned().unwrap_or_default();
    let s = steps.iter().find(|s| s["step_id"] == step).cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    for c in s["children"].as_array().into_iter().flatten() {
        let mut c = c.clone();
        if let Some(m) = c.as_object_mut() {
            for k in ["started_ms", "ended_ms", "duration_ms", "attempts"] {
                m.remove(k);
            }
        }
        out.push(c);
    }
    out
}

/// Issue 42 item 3: a fan-out child that never starts because a sibling failed is written
/// alike on both engines — `CANCELLED`, no arguments, its reason naming the child that
/// failed — whether it was never taken up (locally, one child at a time) or stopped while
/// it waited for its slot (on Temporal every child waits for a slot in input order), in one
/// workflow and across fan-out chunks' child workflows; a step after it says the same.
#[test]
fn a_child_that_never_starts_says_the_same_on_both_engines() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/tools/pick.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}},
        {"execution_id": "after", "tool_definition_path": "/tools/pick.tool", "arguments": {"n": 0},
         "dependencies": ["each"]}
      ]
    }"#;
    let (root, q, _w) = started("never-started", &[("main.tool", main), ("tools/pick.tool", PICK)]);
    script(&root.join("tools/bin/pick.sh"), PICK_SH);
    let (main_s, root_s) = paths(&root);
    // Six children in one workflow; then 520 (a chunk of 500 whose children wait for their
    // slot in its child workflow, and a chunk that never starts).
    for width in [6, 520] {
        let args = root.join("args.json");
        std::fs::write(&args, json!({"items": (0..width).collect::<Vec<i64>>()}).to_string()).expect("args");
        let args_s = args.to_string_lossy().into_owned();
        let (local, remote) = same_as_local(&[&main_s, "--root", &root_s, "--args", &args_s, "--concurrency", "1"], &q);
        assert_eq!(remote.code, 1, "{}", remote.stderr);
        assert_eq!(remote.trace["error"], local.trace["error"], "{}", remote.stderr);
        let (here, there) = (children_said(&local.trace, "each"), children_said(&remote.trace, "each"));
        assert_eq!(here.len(), width as usize);
        assert_eq!(there, here, "width {width}");
        let never = json!({"index": 2, "status": "CANCELLED", "reason": "step `each[1]` failed"});
        assert_eq!(there[2], never, "{}", there[2]);
        assert!(there[2..].iter().all(|c| c["status"] == "CANCELLED" && c["reason"] == never["reason"]));
        let after = &remote.trace["step_results"][1];
        assert_eq!((&after["status"], &after["reason"]), (&json!("CANCELLED"), &json!("step `each[1]` failed")));
    }
}

/// Three steps one after another, each transforming its answer with an expression well
/// within the fuel of one evaluation (`--fuel`).
const THREE_BURNS: &str = r#"{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": 1},
     "transform_responses": {"transforms": {"c": "count(range(20000), condition_string='item > 0')"}}},
    {"execution_id": "b", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": 2}, "dependencies": ["a"],
     "transform_responses": {"transforms": {"c": "count(range(20000), condition_string='item > 1')"}}},
    {"execution_id": "c", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": 3}, "dependencies": ["b"],
     "transform_responses": {"transforms": {"c": "count(range(20000), condition_string='item > 2')"}}}
  ],
  "response_reference_map": {"a": "REF:a.c", "b": "REF:b.c", "c": "REF:c.c"}
}"#;

/// Hostile round 11a's "Left: Temporal": `--max-run-fuel` is one budget for the whole run on
/// Temporal too (interpreter v5), where each expression had only its own fuel. Three steps,
/// each well within one evaluation's fuel, together past the run's: the third fails with
/// `E0401` naming the run's budget — the local run's error, `error:` line, statuses and exit
/// code — and with room for all three both engines succeed. The history replays (the
/// fuel is counted from what the workflow evaluates, the same on every replay).
#[test]
fn a_runs_fuel_is_one_budget_across_its_steps_on_temporal_as_locally() {
    let (root, q, _w) = started("run-fuel", &[("main.tool", THREE_BURNS), ("tools/echo.tool", ECHO)]);
    let (main_s, root_s) = paths(&root);
    let history = root.join("run.history.json");
    let history_s = history.to_string_lossy().into_owned();
    // Each transform spends 25,006 units (measured with the local run): two fit in 60,000,
    // three do not.
    let (local, remote) =
        same_as_local(&[&main_s, "--root", &root_s, "--max-run-fuel", "60000", "--temporal-history", &history_s], &q);
    assert_eq!(remote.code, 1, "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["code"], "E0401", "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["step"], "c", "{}", remote.trace["error"]);
    let message = remote.trace["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("the run ran out of fuel (its budget is 60000 instructions"), "{message}");
    assert_eq!(
        statuses(&remote.trace),
        [("a".to_string(), "COMPLETED".to_string()), ("b".into(), "COMPLETED".into()), ("c".into(), "FAILED".into())]
    );
    assert_eq!(local.trace["error"], remote.trace["error"]);
    replays(&history);
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s, "--max-run-fuel", "10000000"], &q);
    assert_eq!(remote.code, 0, "{}", remote.stderr);
    let result: Value = serde_json::from_str(&remote.stdout).expect("JSON");
    assert_eq!(result, json!({"a": 19999, "b": 19998, "c": 19997}));
    // `--max-run-memory` too: the first transform builds a list of 20,000 numbers (about
    // 480 KB by the cost of values), past a run's 102,400 bytes, on both engines.
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s, "--max-run-memory", "102400"], &q);
    assert_eq!(remote.code, 1, "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["code"], "E0406", "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["step"], "a", "{}", remote.trace["error"]);
}

/// A composite child of two calls whose second step transforms its answer.
const BURNING_PAIR: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": "REF:arguments.n"}},
    {"execution_id": "b", "tool_definition_path": "/tools/echo.tool", "arguments": {"n": "REF:a.n"},
     "transform_responses": {"transforms": {"c": "count(range(1000), condition_string='item > 0') + REF:response.n"}}}
  ],
  "response_reference_map": {"c": "REF:b.c"}
}"#;

/// The run's fuel on Temporal is lent to its fan-out chunks' child workflows, as its calls
/// are, and what a chunk did not spend comes back (its output says what it spent): 300
/// children of a composite of two calls run in two child workflows of 250, each child's
/// transform within its own fuel, together past the run's. One chunk at a time, each is lent
/// all the run has left: the run stops at the child a local run stops at, with its error
/// and `error:` line, the children before it completed; with room, both engines succeed.
/// The history replays. (The children after it differ, as they do for any failure: on
/// Temporal the children of a composite callee start together and their first steps had
/// run, so their second steps run out of fuel, `FAILED`; a local run, one child at a time
/// under `--concurrency 1`, never started them, `CANCELLED`.)
#[test]
fn a_fan_outs_children_share_the_runs_fuel_across_child_workflows_as_locally() {
    let main = r#"{
      "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
      "instructions": [
        {"execution_id": "each", "tool_definition_path": "/pair.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
      ],
      "response_reference_map": {"last": "REF:each.response.last.c"}
    }"#;
    let (root, q, _w) =
        started("run-fuel-chunks", &[("main.tool", main), ("pair.tool", BURNING_PAIR), ("tools/echo.tool", ECHO)]);
    std::fs::write(root.join("args.json"), json!({"items": (0..300).collect::<Vec<i64>>()}).to_string()).expect("args");
    let (main_s, root_s) = paths(&root);
    let args_s = root.join("args.json").to_string_lossy().into_owned();
    let history = root.join("run.history.json");
    let history_s = history.to_string_lossy().into_owned();
    // Each child's transform spends 1,258 units (measured with the local run): 340,000 last
    // for 270 children, past the first chunk of 250; child 270 runs out.
    let flags = [&main_s[..], "--root", &root_s, "--args", &args_s, "--concurrency", "1", "--max-run-fuel", "340000"];
    let mut with_history = flags.to_vec();
    with_history.extend(["--temporal-history", &history_s]);
    let (local, remote) = (run(&flags, None), run(&with_history, Some(&q)));
    assert_eq!((remote.code, local.code), (1, 1), "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["code"], "E0401", "{}", remote.stderr);
    let message = remote.trace["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("the run ran out of fuel (its budget is 340000 instructions"), "{message}");
    assert_eq!(local.trace["error"], remote.trace["error"]);
    assert_eq!(remote.trace["error"]["step"], "each[270]/b", "{}", remote.trace["error"]);
    assert_eq!(error_lines(&remote.stderr), error_lines(&local.stderr));
    // Every child up to the one that ran out, on both engines.
    let until = |trace: &Value| statuses(trace).into_iter().take_while(|(k, _)| k != "each[270]").collect::<Vec<_>>();
    assert_eq!(until(&remote.trace), until(&local.trace));
    let done = statuses(&remote.trace).into_iter().filter(|(k, s)| s == "COMPLETED" && k.ends_with(']')).count();
    assert_eq!(done, 270, "the second chunk ran out, where the local run did");
    // Two child workflows, each lent the fuel the run had left.
    let events = history_events(&history);
    assert_eq!(events.iter().filter(|e| e["event_type"] == 29).count(), 2, "two child workflows");
    replays(&history);
    let roomy = [&main_s[..], "--root", &root_s, "--args", &args_s, "--concurrency", "1", "--max-run-fuel", "10000000"];
    let (_, remote) = same_as_local(&roomy, &q);
    assert_eq!(remote.code, 0, "{}", remote.stderr);
}

/// A tool answer the run keeps is charged to its `--max-run-memory` on Temporal too, when it
/// comes back from its activity (as locally when it comes back from the tool): an answer of
/// 2,000 numbers (about 48 KB by the cost of values) past a run's 16,384 bytes fails its
/// step with `E0406` naming the run's budget, on both engines alike; with room, both succeed.
#[test]
fn a_tool_answer_is_charged_to_the_runs_memory_on_temporal_as_locally() {
    let main = r#"{
      "instructions": [
        {"execution_id": "get", "tool_definition_path": "/tools/any.tool", "arguments": {"n": 1}}
      ],
      "response_reference_map": {"items": "REF:get.items"}
    }"#;
    let any = r#"{"arguments": [{"name": "n", "type_name": "integer", "required": true}],
                  "system_event_endpoint": "builtin:echo"}"#;
    let (root, q, _w) = started("run-memory-answer", &[("main.tool", main), ("tools/any.tool", any)]);
    let mock = root.join("mock.json");
    std::fs::write(&mock, json!({"/tools/any.tool": {"items": (0..2000).collect::<Vec<i64>>()}}).to_string())
        .expect("mock");
    let (main_s, root_s) = paths(&root);
    let mock_s = mock.to_string_lossy().into_owned();
    let (_, remote) = same_as_local(&[&main_s, "--root", &root_s, "--mock", &mock_s, "--max-run-memory", "16384"], &q);
    assert_eq!(remote.code, 1, "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["code"], "E0406", "{}", remote.stderr);
    assert_eq!(remote.trace["error"]["step"], "get", "{}", remote.trace["error"]);
    let message = remote.trace["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("its memory budget allows (16384 bytes"), "{message}");
    let (_, remote) =
        same_as_local(&[&main_s, "--root", &root_s, "--mock", &mock_s, "--max-run-memory", "1000000"], &q);
    assert_eq!(remote.code, 0, "{}", remote.stderr);
}
