//! Hostile round 13 (docs/security.md, "Hostile round 13: the newest surfaces"): what a
//! plan's large answer costs as it goes out, over stdio and over `--listen`, and the budget
//! of request body bytes over HTTP.
#![cfg(unix)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::doubling_plan;
use common::http_raw::{answer, message, Http};
use common::mcp_stdio::StdioClient;
use common::process::peak_kib;
use serde_json::{json, Value};

/// The expected `v` of [`doubling_plan`].
fn doubled(depth: usize) -> Value {
    (0..depth).fold(json!([1]), |x, _| json!([x.clone(), x]))
}

/// A large answer is the run's compact JSON twice (the text block and `structuredContent`),
/// as before, and its building costs a few times its size, not a tree of JSON values: 19
/// levels (a 3 MiB result, 6 MiB of answer) held 400 MB more on a debug build before the
/// fix, about 30 MB after.
#[test]
fn a_large_plan_answer_goes_out_whole_without_a_tree_of_values() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--no-history", "--root"]).arg(root.path());
    let mut s = StdioClient::start(&mut cmd);
    let small = s.call("run_plan", json!({"plan": doubling_plan(2)}));
    assert_eq!(small["structuredContent"]["result"]["v"], doubled(2), "{small}");
    let before = peak_kib(s.process.pid());
    let answer = s.call("run_plan", json!({"plan": doubling_plan(19)}));
    let grown = peak_kib(s.process.pid()).saturating_sub(before);
    assert_eq!(answer["isError"], false);
    let structured = &answer["structuredContent"];
    assert_eq!(structured["status"], "SUCCESS");
    assert_eq!(structured["result"]["v"], doubled(19));
    let text: Value = serde_json::from_str(answer["content"][0]["text"].as_str().expect("a text")).expect("JSON");
    assert_eq!(&text, structured);
    assert!(grown < 150 * 1024, "the answer's building grew the peak by {grown} KiB");
}

/// Whether the server closed `stream` (it reads its end, or an error), without waiting.
fn closed(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let closed = match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).expect("blocking");
    closed
}

#[test]
fn a_large_plan_answer_goes_out_whole_over_http() {
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(root.path(), &[]);
    let session = http.session();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "run_plan", "arguments": {"plan": doubling_plan(15)}}});
    let (status, _, body) = http.post(Some(&session), call.to_string().as_bytes());
    assert_eq!(status, 200, "{}", &body[..body.len().min(300)]);
    let m = message(&body);
    let result = &m["result"];
    assert_eq!(result["structuredContent"]["result"]["v"], doubled(15));
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("a text")).expect("JSON");
    assert_eq!(text, result["structuredContent"]);
}

/// The bytes of bodies held past the first 64 KiB of each are bounded, all connections
/// together (`--max-body-bytes-in-flight`): a body that would pass the budget is not read
/// on until bytes are given back — here when the read timeout closes a connection that
/// sent part of its body and stopped; a small request is answered meanwhile. Before, each
/// connection held up to `--max-request-bytes` (512 × 4 MiB under the defaults).
#[test]
fn request_bodies_in_flight_are_bounded_over_http() {
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(
        root.path(),
        &["--max-request-bytes", "200000", "--max-body-bytes-in-flight", "200000", "--read-timeout", "2"],
    );
    let session = http.session();
    let padded = |id: u64, length: usize| {
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"_meta":{{"p":""#);
        let mut body = head.into_bytes();
        body.resize(length - 4, b'x');
        body.extend_from_slice(b"\"}}}");
        body
    };
    // Sends 150,000 of its 200,000 bytes and stops: it holds 84,464 bytes of the budget.
    let stalled = padded(4, 200_000);
    let mut stalled = http.send(Some(&session), 200_000, &stalled[..150_000]);
    // Sequencing only (the server reads what arrived): nothing is measured by it.
    std::thread::sleep(Duration::from_millis(500));
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    let (status, _, reply) = http.post(Some(&session), ping.to_string().as_bytes());
    assert_eq!((status, message(&reply)["result"].clone()), (200, json!({})), "{reply}");
    assert!(!closed(&mut stalled), "the small request was answered while the stalled body is held");
    // A whole body that needs 134,464 bytes of the 115,536 left: read on only once the
    // stalled connection is closed (its read timeout), then answered.
    let whole = http.send(Some(&session), 200_000, &padded(6, 200_000));
    let (status, _, reply) = answer(whole);
    assert_eq!((status, message(&reply)["id"].clone()), (200, json!(6)), "{reply}");
    assert!(
        closed(&mut stalled),
        "the second body was read while the first held the budget:\n{}",
        http.process.output()
    );
}

#[test]
fn the_body_budget_is_at_least_the_largest_body() {
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--listen", "127.0.0.1:0", "--max-body-bytes-in-flight", "100000"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--max-body-bytes-in-flight 100000") && stderr.contains("--max-request-bytes"), "{stderr}");
}

/// The watchdog of this `serve` (a child with `--watchdog` on its command line), when one
/// runs.
#[cfg(target_os = "linux")]
fn watchdog_of(serve: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{serve}/task/{serve}/children")).unwrap_or_default();
    children.split_whitespace().filter_map(|p| p.parse().ok()).find(|p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"--watchdog"))
    })
}

/// A program that leaves a process in a session of its own (`setsid`: out of reach of its
/// group's kill) while `serve` is killed outright: the watchdog, which looks at `serve`'s
/// tree, ends it too — and so does the watchdog started again after it was killed itself
/// first. Before, the process ran on in both cases (and with the watchdog killed first,
/// the program and its group too).
#[cfg(target_os = "linux")]
#[test]
fn what_a_program_leaves_in_a_session_of_its_own_ends_with_a_killed_serve() {
    use common::process::{alive, wait_until};
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let signal = |pid: u32, s: Signal| {
        let _ = kill(Pid::from_raw(i32::try_from(pid).expect("a pid")), s);
    };
    for watchdog_first in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("tools")).expect("mkdir");
        let pid_file = root.join("pids");
        common::process::script(
            &root.join("tools/away.sh"),
            &format!("#!/bin/sh\nsetsid sleep 30 &\necho $$ $! > '{}'\nwait\n", pid_file.display()),
        );
        std::fs::write(root.join("tools/away.tool"), r#"{"system_event_endpoint": "exec:./away.sh"}"#).expect("write");
        std::fs::write(
            root.join("main.tool"),
            r#"{"instructions": [{"execution_id": "a", "tool_definition_path": "/tools/away.tool"}]}"#,
        )
        .expect("write");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["serve", "--mcp", "--no-history", "--root"]).arg(root);
        let mut client = StdioClient::start(&mut cmd);
        let serve = client.process.pid();
        client.start_request("tools/call", json!({"name": "main", "arguments": {}}));
        let pids = wait_until(Duration::from_secs(20), "the program to write its pids", || {
            let p = std::fs::read_to_string(&pid_file).ok().filter(|p| p.ends_with('\n'))?;
            Some(p.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        });
        if watchdog_first {
            let first = wait_until(Duration::from_secs(20), "the watchdog", || watchdog_of(serve));
            signal(first, Signal::SIGKILL);
            wait_until(Duration::from_secs(20), "another watchdog", || watchdog_of(serve).filter(|p| *p != first));
        }
        // Sequencing only: the watchdog looks at the tree every 0.2 s.
        std::thread::sleep(Duration::from_millis(600));
        signal(serve, Signal::SIGKILL);
        client.process.exit_within(Duration::from_secs(10));
        for p in &pids {
            wait_until(
                Duration::from_secs(10),
                &format!("process {p} to end (watchdog killed first: {watchdog_first})"),
                || (!alive(p)).then_some(()),
            );
        }
    }
}

/// A watchdog looks only at the tree of the `serve` that started it and said so on its first
/// line: one whose `serve` ended before it started (its parent is then another process) or
/// that is told another process looks at nothing, and ends nothing but what it was told of.
#[cfg(target_os = "linux")]
#[test]
fn a_watchdog_looks_only_at_the_tree_of_its_own_serve() {
    use std::process::Stdio;
    let mut sibling = Command::new("sleep").arg("30").spawn().expect("sleep starts");
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", sibling.id())).expect("its stat");
    let start = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(19)).expect("its start time");
    let mut watchdog = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--watchdog"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("the watchdog starts");
    let mut input = watchdog.stdin.take().expect("its input");
    writeln!(input, "serve {} {start}", sibling.id()).expect("written");
    // Sequencing only: the watchdog would look at a tree every 0.2 s.
    std::thread::sleep(Duration::from_millis(600));
    drop(input);
    let status = watchdog.wait().expect("it ends");
    assert!(status.success(), "{status:?}");
    let running = sibling.try_wait().expect("a status").is_none();
    let _ = sibling.kill();
    let _ = sibling.wait();
    assert!(running, "the watchdog ended a process of its parent's tree it was not told of");
}

/// At a graceful end `serve` ends its children itself, the watchdog among them: that one is
/// not started again (nor said to have ended).
#[cfg(target_os = "linux")]
#[test]
fn a_graceful_end_starts_no_other_watchdog() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--no-history", "--root"]).arg(root.path());
    let client = StdioClient::start(&mut cmd);
    let serve = client.process.pid();
    common::process::wait_until(Duration::from_secs(20), "the watchdog", || watchdog_of(serve));
    // Sequencing only: the watchdog's thread is waiting on it.
    std::thread::sleep(Duration::from_millis(200));
    let mut client = client;
    client.process.sigterm();
    let status = client.process.exit_within(Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    let output = client.process.output();
    assert!(!output.contains("watchdog"), "{output}");
}
