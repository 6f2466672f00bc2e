//! Hostile round 11b: a signal never leaves a call of `serve --mcp --plans` unanswered. A
//! `run_plan` whose upstream server is in the middle of a long answer (and no longer reads
//! its input) gets SIGTERM: the call is answered with the cancelled error, its run recorded
//! `FAILED` (never `RUNNING`, nor `INTERRUPTED` once the server is gone), and the server
//! exits. Each test starts the real binary and a scripted upstream (Python's standard library
//! only).
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::mcp_stdio::serve_upstreams;
use common::process::wait_until;
use common::upstream::script;
use serde_json::json;

/// An upstream over stdio with one tool, `big`: a call of it makes the server stop reading
/// its input and write its answer for ever, a little at a time, never ending the line (a
/// server in the middle of a long answer). It touches `$UP_WRITING` when it starts.
const UPSTREAM: &str = r#"
def call(i, name, args):
    open(os.environ["UP_WRITING"], "w").close()
    sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % i)
    while True:
        sys.stdout.write("x" * 65536)
        sys.stdout.flush()
        time.sleep(0.05)
serve([{"name": "big", "description": "a long answer",
        "inputSchema": {"type": "object", "properties": {"s": {"type": "string"}}}}], call)
"#;

#[test]
fn sigterm_while_an_upstream_answer_is_read_answers_the_call_and_records_it_failed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let upstream = dir.path().join("up.py");
    script(&upstream, UPSTREAM);
    let writing = dir.path().join("writing");
    let history = dir.path().join("history.db");
    let mut client = serve_upstreams(
        &root,
        &[format!("up={}", upstream.display())],
        Some(&history),
        &[],
        &[("UP_WRITING", writing.to_str().expect("a UTF-8 path"))],
    );
    // Eight calls with 100 KB arguments each: the upstream reads the first, then its input
    // fills up while it writes.
    let plan = json!({"arguments": [{"name": "k", "type_name": "list<string>", "required": true}],
        "instructions": [{"execution_id": "b", "tool_definition_path": "up/big",
            "parallel_execution": {"iterate_over": "REF:arguments.k", "child_argument_name": "s"}}],
        "response_reference_map": {"n": "REF:b.response.length"}});
    let k = vec!["y".repeat(100_000); 8];
    let id = client
        .start_request("tools/call", json!({"name": "run_plan", "arguments": {"plan": plan, "arguments": {"k": k}}}));
    wait_until(Duration::from_secs(30), "the upstream to start its answer", || writing.exists().then_some(()));
    std::thread::sleep(Duration::from_millis(300));
    client.process.sigterm();
    let answer = client.answer_or_end(id);
    let status = client.process.exit_within(Duration::from_secs(20));
    let output = client.process.output();
    let answer = answer.unwrap_or_else(|| panic!("the call was never answered:\n{output}"));
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(result["structuredContent"]["status"], "FAILED", "{answer}");
    let summary = result["structuredContent"]["failure_summary"].as_str().unwrap_or("");
    assert!(summary.contains("cancelled") && summary.ends_with("[E0813]"), "{answer}");
    assert!(status.success(), "{status:?}: {output}");
    assert_eq!(common::runs(&history), [("run_plan".to_string(), "FAILED".to_string())], "{output}");
}

/// Outside round 11 (finding 9): `serve` killed outright (SIGKILL, as the OOM killer does)
/// left an upstream server busy in a long call running (it reads no input and writes
/// nothing meanwhile, so neither the end of its input nor a broken pipe ends it). Its
/// watchdog ends it now (Linux).
#[cfg(target_os = "linux")]
#[test]
fn sigkill_of_serve_ends_an_upstream_busy_in_a_long_call() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let upstream = dir.path().join("up.py");
    script(
        &upstream,
        &UPSTREAM.replace(
            "open(os.environ[\"UP_WRITING\"], \"w\").close()",
            "open(os.environ[\"UP_WRITING\"], \"w\").write(str(os.getpid())); time.sleep(60)",
        ),
    );
    let writing = dir.path().join("writing");
    let mut client = serve_upstreams(
        &root,
        &[format!("up={}", upstream.display())],
        None,
        &[],
        &[("UP_WRITING", writing.to_str().expect("a UTF-8 path"))],
    );
    let plan =
        json!({"instructions": [{"execution_id": "b", "tool_definition_path": "up/big", "arguments": {"s": "x"}}]});
    client.start_request("tools/call", json!({"name": "run_plan", "arguments": {"plan": plan}}));
    let pid = wait_until(Duration::from_secs(30), "the upstream to start its answer", || {
        std::fs::read_to_string(&writing).ok().filter(|p| !p.is_empty())
    });
    assert!(common::process::alive(&pid), "the upstream {pid} runs");
    let status = Command::new("kill").args(["-s", "KILL", &client.process.pid().to_string()]).status();
    assert!(status.is_ok_and(|s| s.success()), "kill -s KILL");
    client.process.exit_within(Duration::from_secs(10));
    wait_until(Duration::from_secs(10), "the upstream to end", || (!common::process::alive(&pid)).then_some(()));
}

/// A history database at `path` held locked by this process until the connection is
/// dropped: a run's first write into it waits (up to SQLite's 30 s busy timeout), deaf to
/// its cancel.
fn locked(path: &Path) -> rusqlite::Connection {
    let lock = rusqlite::Connection::open(path).expect("the database");
    lock.execute_batch("BEGIN EXCLUSIVE; CREATE TABLE held (x);").expect("the database locked");
    lock
}

/// Hostile round 11b (finding 3): `notifications/cancelled` for a call whose thread does not
/// come back at once (here: its run waits to write its start into a locked history; a
/// plan's static check is the same) gives its `--max-calls` slot back at once: the next call
/// runs, rather than waiting for the cancelled one's thread (30 s here).
#[test]
fn a_cancelled_call_whose_thread_does_not_come_back_frees_its_slot() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let history = dir.path().join("history.db");
    let mut client = serve_upstreams(&root, &[], Some(&history), &["--max-calls", "1"], &[]);
    let lock = locked(&history);
    let plan = json!({"instructions": [{"execution_id": "s",
        "transform_responses": {"variables": {}, "transforms": {"x": "1"}}}], "response_reference_map": {"x": "REF:s.x"}});
    let id = client.start_request("tools/call", json!({"name": "run_plan", "arguments": {"plan": plan}}));
    std::thread::sleep(Duration::from_millis(500));
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}));
    let started = std::time::Instant::now();
    let checked = client.call("check_plan", json!({"plan": plan}));
    let waited = started.elapsed();
    assert_eq!(checked["structuredContent"]["ok"], true, "{checked}");
    assert!(waited < Duration::from_secs(10), "the next call waited {waited:?} for the cancelled one's slot");
    drop(lock);
}

/// `tdsl run` of the same plan (a composite calling the upstream with `--upstream`) ends the
/// same way on SIGTERM: the run recorded `FAILED` (cancelled), exit 143.
#[test]
fn run_ends_on_sigterm_while_an_upstream_answer_is_read() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let upstream = dir.path().join("up.py");
    script(&upstream, UPSTREAM);
    let writing = dir.path().join("writing");
    let history = dir.path().join("history.db");
    let plan = json!({"arguments": [{"name": "k", "type_name": "list<string>", "required": true}],
        "instructions": [{"execution_id": "b", "tool_definition_path": "up/big",
            "parallel_execution": {"iterate_over": "REF:arguments.k", "child_argument_name": "s"}}],
        "response_reference_map": {"n": "REF:b.response.length"}});
    std::fs::write(root.join("main.tool"), plan.to_string()).expect("the plan");
    let args = dir.path().join("args.json");
    std::fs::write(&args, json!({"k": vec!["y".repeat(100_000); 8]}).to_string()).expect("the arguments");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.arg("run")
        .arg(root.join("main.tool"))
        .arg("--root")
        .arg(&root)
        .arg("--args")
        .arg(&args)
        .arg("--upstream")
        .arg(format!("up={}", upstream.display()))
        .arg("--history")
        .arg(&history)
        .env("UP_WRITING", &writing);
    let mut run = common::process::Process::spawn("tdsl run", &mut cmd);
    wait_until(Duration::from_secs(30), "the upstream to start its answer", || writing.exists().then_some(()));
    std::thread::sleep(Duration::from_millis(300));
    run.sigterm();
    let status = run.exit_within(Duration::from_secs(20));
    let output = run.output();
    assert_eq!(status.code(), Some(143), "{output}");
    assert!(output.contains("cancelled"), "{output}");
    assert_eq!(common::runs(&history), [("/main.tool".to_string(), "FAILED".to_string())], "{output}");
}
