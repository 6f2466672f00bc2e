//! Hostile round 15 (docs/security.md, "Hostile round 15"): what no earlier round tried, from
//! the side of a hostile upstream MCP server, a hostile model and a hostile HTTP client.
#![cfg(unix)]

mod common;

use common::mcp_stdio::{serve_upstreams, StdioClient};
use common::process::{peak_kib, script};
use common::upstream::MANY_TOOLS;
use serde_json::{json, Value};

/// `serve --mcp --plans` over stdio in a root of its own, fronting the upstream `up`: the
/// Python script `body` (its file named `name`). The directory lives as long as the test
/// holds it.
fn serve_with_upstream(name: &str, body: &str) -> (tempfile::TempDir, StdioClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let upstream = dir.path().join(name);
    script(&upstream, body);
    let client = serve_upstreams(&root, &[format!("up={}", upstream.display())], None, &[], &[]);
    (dir, client)
}

/// A plan of one call of `tool`, without arguments.
fn plan(tool: &str) -> Value {
    json!({"plan": {"instructions": [{"execution_id": "a", "tool_definition_path": tool, "arguments": {}}],
        "response_reference_map": {"a": "REF:a"}}})
}

/// An upstream that answers its handshake and its listing, then sends 200,000 `ping`
/// requests (45 bytes each, 9 MB) and never reads its input again: tdsl's answers to them
/// can never be written.
const PINGS_UNREAD: &str = r#"#!/usr/bin/env python3
import json, sys, time
def out(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); method, i, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": p["protocolVersion"],
             "capabilities": {"tools": {}}, "serverInfo": {"name": "up", "version": "1"}}})
    elif method == "tools/list":
        out({"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "x", "inputSchema": {"type": "object"}}]}})
        try:
            for k in range(200000):
                sys.stdout.write('{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}\n' % k)
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        time.sleep(3600)
    elif i is not None:
        out({"jsonrpc": "2.0", "id": i, "result": {}})
"#;

/// An upstream's requests to tdsl (a `ping`) are answered by rmcp, each answer a task that
/// waits for the transport to write it, with no bound on how many wait. An upstream that
/// sends requests and never reads its input made them pile up: the 9 MB of `ping`s above
/// held about 700 MB of `serve` at the peak (600 MB for as long as the upstream lived, and
/// a third of a core), and the call to it waited for its 60 s timeout. Now past 64 answers
/// (or 4 MiB of them) waiting to be written the connection is closed and the upstream
/// stopped: the call fails at once saying why, and the server's peak grows by far less
/// than the flood's 9 MB would have cost (the bound, 150 MB, is a fifth of what it held
/// before, and several times what the server holds after it).
#[test]
fn an_upstream_that_reads_none_of_the_answers_to_its_requests_is_cut_off() {
    let (_dir, mut client) = serve_with_upstream("pings.py", PINGS_UNREAD);
    let pid = client.process.pid();
    let before = peak_kib(pid);
    // The check lists the upstream, after which it floods.
    let checked = client.call("check_plan", plan("up/x"));
    assert_eq!(checked["structuredContent"]["ok"], true, "{checked}");
    let ran = client.call("run_plan", plan("up/x"));
    let text = ran.to_string();
    assert!(text.contains("did not read tdsl's answers"), "{text}\n{}", client.process.output());
    assert!(!text.contains("timed out"), "{text}");
    let grown = peak_kib(pid).saturating_sub(before);
    assert!(grown < 150 * 1024, "serve's peak grew by {grown} KiB");
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
}

/// An upstream that reads its input (and so tdsl's answers), but after its listing sends
/// 100,000 log notifications and 100,000 `ping`s (8.8 MB) as fast as it can write, and
/// answers a call only once all of them are out: the call's answer is read after every one
/// of them.
const FLOOD_READING: &str = r#"#!/usr/bin/env python3
import json, sys, threading
def out(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
lock = threading.Lock()
def flood():
    with lock:
        for k in range(100000):
            sys.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n')
            sys.stdout.write('{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}\n' % k)
        sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); method, i, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        out({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": p["protocolVersion"],
             "capabilities": {"tools": {}}, "serverInfo": {"name": "up", "version": "1"}}})
    elif method == "tools/list":
        out({"jsonrpc": "2.0", "id": i, "result": {"tools": [{"name": "x", "inputSchema": {"type": "object"}}]}})
        threading.Thread(target=flood).start()
    elif method == "tools/call":
        # Answered once the flood is out, on a thread: the input is read meanwhile.
        def later(i=i):
            with lock:
                out({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "1"}]}})
        threading.Thread(target=later).start()
"#;

/// rmcp's loop reads an upstream's messages and spawns a task to handle each; reading a
/// buffer that is never empty never made it wait, so it did not yield to those tasks, and
/// they piled up unrun for as long as the upstream kept writing: the 8.8 MB above (an
/// upstream that does read its answers) held 715 MB of `serve` at the peak; 200,000 log
/// notifications alone 420 MB after 8 s, growing. Now each read yields first: the call
/// succeeds, and the peak grows by far less (150 MB: a fifth of before, several times what
/// the server holds now, about 15 MB).
#[test]
fn an_upstream_flooding_messages_it_may_send_costs_the_server_little() {
    let (_dir, mut client) = serve_with_upstream("flood.py", FLOOD_READING);
    let pid = client.process.pid();
    let before = peak_kib(pid);
    let checked = client.call("check_plan", plan("up/x"));
    assert_eq!(checked["structuredContent"]["ok"], true, "{checked}");
    let ran = client.call("run_plan", plan("up/x"));
    assert_eq!(ran["structuredContent"]["status"], "SUCCESS", "{ran}\n{}", client.process.output());
    let grown = peak_kib(pid).saturating_sub(before);
    assert!(grown < 150 * 1024, "serve's peak grew by {grown} KiB");
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
}

/// The bytes of the history database `path` and its write-ahead log.
fn history_bytes(path: &std::path::Path) -> u64 {
    ["", "-wal"].iter().filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok()).map(|m| m.len()).sum()
}

/// A plan fanning `builtin:echo` out 1,000 times from a step whose execution id is `id`.
fn fanned_from(id: &str) -> Value {
    let fan: Vec<u32> = (0..1000).collect();
    json!({"plan": {"instructions": [{"execution_id": id, "tool_definition_path": "echo", "arguments": {"i": 1},
        "parallel_execution": {"iterate_over": fan, "child_argument_name": "i"}}],
        "response_reference_map": {"n": format!("REF:{id}.response.length")}}})
}

/// The run history records each call under its step's path of execution ids, and indexes
/// it; `--history-run-bytes` counts payloads, not those paths. A 205 KB plan whose one
/// step has an id of 100,000 characters, fanned out 1,000 times, wrote 204 MB of history
/// (a 1,000-fold amplification, and 16 such runs at once past `--history-max-bytes`,
/// which trims only runs that ended). An execution id is at most 128 characters now
/// (`E0517`, in plans and `.tool` files alike); at 128 the same fan-out is recorded in a
/// few megabytes (the bound, 16 MB, is about ten times what it takes and a twelfth of what
/// one run wrote before).
#[test]
fn a_long_execution_id_is_refused_before_the_history_records_it_per_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("tools")).expect("root");
    std::fs::write(
        root.join("tools/echo.tool"),
        r#"{"description": "echoes", "arguments": [{"name": "i", "type_name": "any"}], "system_event_endpoint": "builtin:echo"}"#,
    )
    .expect("echo.tool");
    let history = dir.path().join("history.db");
    let mut client = serve_upstreams(&root, &[], Some(&history), &[], &[]);
    let long = "d".repeat(100_000);
    let ran = client.call("run_plan", fanned_from(&long));
    let text = ran.to_string();
    assert!(text.contains("more than the limit of 128"), "{:.600}", text);
    assert!(text.contains("E0517"), "{:.600}", text);
    assert!(text.len() < 20_000, "the refusal quotes the id whole: {} bytes", text.len());
    let at_limit = "d".repeat(128);
    let ran = client.call("run_plan", fanned_from(&at_limit));
    assert_eq!(ran["structuredContent"]["status"], "SUCCESS", "{:.600}", ran.to_string());
    assert_eq!(ran["structuredContent"]["result"]["n"], 1000, "{:.600}", ran.to_string());
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
    let bytes = history_bytes(&history);
    assert!(bytes < 16 << 20, "the history holds {bytes} bytes");
}

/// The CPU time process `pid` has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default().split_whitespace().collect();
    fields.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

/// Over stdio, answers rmcp had made waited to be written as tasks of its own, with no
/// bound, and the queue of lines to write held 64 of them whole: a client that sent reads
/// of a 14 MB `tdsl://tools` and read none of the answers held 3.3 GB of `serve` for 200
/// reads (12 KB sent). Now rmcp reads no more requests while more than 16 MiB of its
/// answers wait, and the queue holds at most 16 MiB of its lines: 40 reads of the 9 MB
/// listing, sent one after another, grow the peak by far less than the 40 answers (360 MB)
/// that were held before; read later, every one is answered. The bound, 150 MB, is that of
/// a few answers and their copies being written.
#[test]
fn answers_a_stdio_client_does_not_read_do_not_pile_up() {
    let (_dir, mut client) = serve_with_upstream("many.py", MANY_TOOLS);
    let pid = client.process.pid();
    let read = |client: &mut StdioClient| client.start_request("resources/read", json!({"uri": "tdsl://tools"}));
    // The listing, once, and the size of its answer.
    let first = read(&mut client);
    let answer = client.answer_or_end(first).expect("the first read is answered");
    let text = answer["result"]["contents"][0]["text"].as_str().unwrap_or_default().len();
    assert!(text > 8_000_000, "tdsl://tools is {text} bytes:\n{:.2000}", answer.to_string());
    let before = peak_kib(pid);
    // Sequencing only: until the server stops working (it has made its answer, or waits
    // for the client to read); its CPU time still for `quiet` looks 100 ms apart.
    let settle = |quiet: u32| {
        let mut last = (cpu_ticks(pid), 0);
        for _ in 0..600 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let now = cpu_ticks(pid);
            last = if now == last.0 { (now, last.1 + 1) } else { (now, 0) };
            if last.1 >= quiet {
                break;
            }
        }
    };
    // One read after another, each once the server has made the answer before it: the
    // client this bounds, one that reads nothing. (Reads sent all at once were made at
    // once, before any of them waited to be written: round 15's left item, 40 of them
    // +0.5 GB, bounded since round 16 by `mcp::making` and measured by
    // tests/hostile16.rs, not here.)
    let ids: Vec<u64> = (0..40)
        .map(|_| {
            let id = read(&mut client);
            settle(4);
            id
        })
        .collect();
    settle(12);
    let grown = peak_kib(pid).saturating_sub(before);
    // Answered in any order: those read while waiting for another are in `notes`.
    let mut left: std::collections::BTreeSet<u64> = ids.into_iter().collect();
    while let Some(&id) = left.iter().next() {
        assert!(client.answer_or_end(id).is_some(), "read {id} is answered:\n{}", client.process.output());
        left.remove(&id);
        for note in client.notes.drain(..) {
            if let Some(other) = note["id"].as_u64() {
                left.remove(&other);
            }
        }
    }
    assert!(grown < 150 * 1024, "serve's peak grew by {grown} KiB while its answers were not read");
}
