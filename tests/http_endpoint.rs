//! `http://` endpoints (SPEC §7, ext) against a small HTTP server on loopback, run by the
//! real binary: success, transient statuses retried, permanent ones not, bodies that are
//! not JSON, connection failures and timeouts; and a hostile peer (`docs/security.md`,
//! "Hostile round 9b"): redirects, bodies that are not UTF-8, keys in the URL, requests
//! of cancelled calls left behind; a body of more values than the budget (round 10b).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::tdsl;
use serde_json::{json, Value};

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    tool: String,
    content_type: String,
    body: Value,
}

/// Serves on loopback: each request gets the next of `answers` (the last one repeats), as
/// `(status, body, delay)`; a `3xx`'s body is also its `Location`. Returns the base URL
/// and what was seen.
fn server(answers: Vec<(u16, &str, Duration)>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let answers: Vec<(u16, String, Duration)> = answers.into_iter().map(|(s, t, d)| (s, t.to_string(), d)).collect();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let (mut length, mut tool, mut content_type) = (0usize, String::new(), String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or(("", ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "x-tdsl-tool" => tool = value.trim().to_string(),
                    "content-type" => content_type = value.trim().to_string(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_string();
            log.lock().expect("log").push(Seen {
                path,
                tool,
                content_type,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            let (status, text, delay) = &answers[n.min(answers.len() - 1)];
            std::thread::sleep(*delay);
            let location = if (300..400).contains(status) { format!("Location: {text}\r\n") } else { String::new() };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\n{location}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, seen)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A root with `/tools/remote.tool` at `url` and a composite calling it once with `step`'s
/// extra keys.
fn root(dir: &Path, url: &str, step: &str) -> PathBuf {
    write(
        &dir.join("tools/remote.tool"),
        &format!(
            r#"{{"arguments": [{{"name": "q", "type_name": "string"}}], "system_event_endpoint": "{url}/v1/run"}}"#
        ),
    );
    write(
        &dir.join("main.tool"),
        &format!(
            r#"{{"instructions": [{{"execution_id": "call", "tool_definition_path": "/tools/remote.tool",
                 "arguments": {{"q": "café"}}{step}}}]}}"#
        ),
    );
    dir.join("main.tool")
}

/// Runs `main.tool`; the exit status, standard error and the step's attempt outcomes.
fn run(dir: &Path) -> (i32, String, String, Vec<String>) {
    run_with(dir, &[])
}

/// [`run`] with `extra` arguments.
fn run_with(dir: &Path, extra: &[&str]) -> (i32, String, String, Vec<String>) {
    let trace = dir.join("trace.json");
    let main = dir.join("main.tool");
    let mut args = vec![
        "run",
        main.to_str().expect("utf-8"),
        "--root",
        dir.to_str().expect("utf-8"),
        "--trace",
        trace.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let out = tdsl(&args);
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    let outcomes = t["step_results"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or_default().to_string())
        .collect();
    (out.code, out.stdout, out.stderr, outcomes)
}

#[test]
fn the_arguments_are_posted_and_the_json_answer_is_the_response() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, seen) = server(vec![(200, r#"{"answer": 42, "list": [1, 2]}"#, Duration::ZERO)]);
    root(dir.path(), &url, "");
    let (code, stdout, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcomes, ["ok"]);
    let result: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(result["call"], json!({"answer": 42, "list": [1, 2]}));
    let seen = seen.lock().expect("seen");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/run");
    assert_eq!(seen[0].tool, "/tools/remote.tool");
    assert_eq!(seen[0].content_type, "application/json");
    assert_eq!(seen[0].body, json!({"q": "café"}));
}

#[test]
fn statuses_429_and_5xx_are_transient_and_retried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, seen) = server(vec![
        (503, "overloaded", Duration::ZERO),
        (429, "", Duration::ZERO),
        (200, r#"{"ok": true}"#, Duration::ZERO),
    ]);
    root(dir.path(), &url, r#", "retry": {"max_retries": 3, "base_delay_seconds": 0.1}"#);
    let (code, _, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcomes, ["transient", "transient", "ok"]);
    assert_eq!(seen.lock().expect("seen").len(), 3);
}

#[test]
fn other_statuses_and_bodies_that_are_not_json_are_permanent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, _) = server(vec![(400, r#"{"error": "q must not be empty"}"#, Duration::ZERO)]);
    root(dir.path(), &url, r#", "retry": {"max_retries": 3, "base_delay_seconds": 0.1}"#);
    let (code, _, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 1);
    assert_eq!(outcomes, ["permanent"], "not retried");
    assert!(stderr.contains(r#"answered 400: {"error": "q must not be empty"}"#), "{stderr}");

    let dir = tempfile::tempdir().expect("tempdir");
    let (url, _) = server(vec![(200, "<html>oops</html>", Duration::ZERO)]);
    root(dir.path(), &url, r#", "retry": {"max_retries": 3, "base_delay_seconds": 0.1}"#);
    let (code, _, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 1);
    assert_eq!(outcomes, ["permanent"]);
    assert!(stderr.contains("answered 200 with a body that is not JSON"), "{stderr}");
}

#[test]
fn a_connection_refused_is_transient() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A port that was just free: nothing listens on it.
    let url = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    root(dir.path(), &url, r#", "retry": {"max_retries": 1, "base_delay_seconds": 0.1}"#);
    let (code, _, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 1);
    assert_eq!(outcomes, ["transient", "transient"], "retried");
    assert!(stderr.contains("the request to") && stderr.contains("failed"), "{stderr}");
}

#[test]
fn a_slow_answer_times_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, _) = server(vec![(200, "{}", Duration::from_secs(5))]);
    // No retries: a timeout is transient, retried twice by default (seed 000).
    root(dir.path(), &url, r#", "timeout_seconds": 1, "retry": {"max_retries": 0}"#);
    let started = std::time::Instant::now();
    let (code, _, stderr, outcomes) = run(dir.path());
    assert_eq!(code, 1);
    assert_eq!(outcomes, ["timeout"]);
    assert!(stderr.contains("TIMEOUT"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(4), "the run did not wait for the answer");
}

/// Hostile round 9b (`docs/security.md`): the endpoint answers a redirect to another
/// server (here a loopback port standing for a private address or a cloud's metadata
/// service). A `301`, `302` or `303` was followed as a GET, and the other server's answer
/// became the tool's result; redirects are not followed now: the call fails (permanent,
/// not retried) naming where it pointed (its origin: the rest may hold keys), and the
/// other server sees nothing.
#[test]
fn a_redirect_is_not_followed_to_where_the_peer_points() {
    let (internal, reached) = server(vec![(200, r#"{"secret": "internal-only"}"#, Duration::ZERO)]);
    let target = format!("{internal}/latest/meta-data");
    for status in [301, 302, 303, 307, 308] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (url, seen) = server(vec![(status, &target, Duration::ZERO)]);
        root(dir.path(), &url, r#", "retry": {"max_retries": 2, "base_delay_seconds": 0.1}"#);
        let (code, stdout, stderr, outcomes) = run(dir.path());
        assert_eq!(code, 1, "{status}: {stdout}{stderr}");
        assert_eq!(outcomes, ["permanent"], "{status}: not retried");
        assert!(stderr.contains(&format!("answered {status}: a redirect to {internal}/… is not followed")), "{stderr}");
        assert!(!stdout.contains("internal-only") && !stderr.contains("internal-only"), "{stdout}{stderr}");
        assert_eq!(seen.lock().expect("log").len(), 1);
    }
    assert!(reached.lock().expect("log").is_empty(), "the redirect was followed");
}

/// A redirect without a `Location`, and one whose `Location` is 4,000 bytes: the same
/// failure, saying there was none, or naming its origin.
#[test]
fn a_redirect_without_or_with_a_huge_location_is_said_briefly() {
    let long = format!("http://127.0.0.1:9/{}", "a".repeat(4_000));
    for (location, says) in [
        ("", "answered 302: a redirect (no `Location`) is not followed"),
        (&*long, "a redirect to http://127.0.0.1:9/… is not followed"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (url, _) = server(vec![(302, location, Duration::ZERO)]);
        root(dir.path(), &url, "");
        let (code, _, stderr, outcomes) = run(dir.path());
        assert_eq!(code, 1);
        assert_eq!(outcomes, ["permanent"]);
        assert!(stderr.contains(says) && stderr.len() < 2_000, "{stderr}");
    }
}

/// Serves `answer` (raw bytes: status line, headers and body) to every request; the base
/// URL and how many requests came.
fn raw_server(answer: &'static [u8]) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let count = Arc::new(Mutex::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            *counted.lock().expect("count") += 1;
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let _ = reader.read_exact(&mut vec![0; length]);
            let _ = stream.write_all(answer);
        }
    });
    (url, count)
}

/// Hostile round 9b: a body that is not UTF-8 (Latin-1 `café`). It was read as text, and
/// the I/O error that made was taken for a transient failure: a `404` was retried, its
/// status lost ("stream did not contain valid UTF-8"); a `200` too. Now the status
/// decides: a `404` is permanent and shows its body (invalid bytes replaced), a `200` is a
/// body that is not JSON (permanent), a `503` is transient as before.
#[test]
fn a_body_that_is_not_utf8_keeps_its_status() {
    const NOT_FOUND: &[u8] = b"HTTP/1.1 404 X\r\nContent-Length: 4\r\nConnection: close\r\n\r\ncaf\xe9";
    const OK: &[u8] = b"HTTP/1.1 200 X\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{\"x\": \"caf\xe9\"}";
    const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 X\r\nContent-Length: 4\r\nConnection: close\r\n\r\ncaf\xe9";
    for (answer, outcomes, says) in [
        (NOT_FOUND, &["permanent"][..], "answered 404: caf\u{fffd}"),
        (OK, &["permanent"][..], "answered 200 with a body that is not JSON (not UTF-8: an invalid byte at offset 10)"),
        (UNAVAILABLE, &["transient", "transient"][..], "answered 503 (try again): caf\u{fffd}"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (url, count) = raw_server(answer);
        root(dir.path(), &url, r#", "retry": {"max_retries": 1, "base_delay_seconds": 0.1}"#);
        let (code, _, stderr, seen) = run(dir.path());
        assert_eq!(code, 1);
        assert_eq!(seen, outcomes, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(*count.lock().expect("count"), outcomes.len());
    }
}

/// Hostile round 9b: an endpoint URL holding keys, as APIs take them — a `user:pass@`, a
/// key in the path and in the query. Every failed call's message named the whole URL, so
/// the keys reached the client of `serve` (the error of the call, `run_plan`'s answer),
/// the history and the trace. Messages name the URL by its origin now: a `500`, a
/// connection refused and a redirect, on standard error and in the trace.
#[test]
fn an_endpoints_keys_are_in_no_message() {
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", l.local_addr().expect("addr"))
    };
    let (failing, _) = server(vec![(500, "down", Duration::ZERO)]);
    let (redirecting, _) = server(vec![(302, "http://127.0.0.1:9/next?api_key=sk-live-KEY3", Duration::ZERO)]);
    for base in [&failing, &refused, &redirecting] {
        let (scheme, host) = base.split_once("://").expect("a URL");
        let url = format!("{scheme}://user:pa55word-KEY0@{host}/k/sk-live-KEY1?api_key=sk-live-KEY2&then=");
        let dir = tempfile::tempdir().expect("tempdir");
        root(dir.path(), &url, "");
        let (code, stdout, stderr, _) = run(dir.path());
        assert_eq!(code, 1);
        let trace = std::fs::read_to_string(dir.path().join("trace.json")).expect("trace");
        for text in [&stdout, &stderr, &trace] {
            assert!(!text.contains("KEY"), "a key of the URL is shown: {text}");
        }
        assert!(stderr.contains(&format!("{base}/…")), "{stderr}");
    }
}

/// Hostile round 9b: a client of `serve` calls a tool whose peer never answers, and
/// cancels each call. A cancelled call returns at once, but its request goes on in a
/// thread of its own until its time ends (300 s without `timeout_seconds`): 257 such
/// calls held 257 threads and sockets, and a client repeating it grew them without bound.
/// At most 256 such requests are in flight now: past it a call fails at once saying so
/// (here a call to another, fast tool), and calls go through again once they end.
#[test]
fn requests_of_cancelled_calls_are_bounded() {
    use common::mcp_stdio::StdioClient;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const HANG: Duration = Duration::from_secs(60);
    // The slow peer: reads each request and answers only once released.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let slow = format!("http://{}", listener.local_addr().expect("addr"));
    let (arrived, release) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let (count, go) = (arrived.clone(), release.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (count, go) = (count.clone(), go.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = std::io::Read::read(&mut stream, &mut buf);
                count.fetch_add(1, Ordering::SeqCst);
                while !go.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = stream.write_all(b"HTTP/1.1 200 X\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
            });
        }
    });
    let (fast, _) = server(vec![(200, "{}", Duration::ZERO)]);
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, url) in [("slow", &slow), ("fast", &fast)] {
        write(
            &dir.path().join(format!("{name}.tool")),
            &format!(r#"{{"arguments": [], "system_event_endpoint": "{url}/run"}}"#),
        );
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"));
    // Calls run 16 at a time by default; a client cancelling them round after round gets
    // there too, more slowly.
    cmd.args(["serve", "--mcp", "--no-history", "--max-calls", "300", "--root"]).arg(dir.path());
    let mut client = StdioClient::start(&mut cmd);
    let calls = 257;
    let ids: Vec<u64> =
        (0..calls).map(|_| client.start_request("tools/call", json!({"name": "slow", "arguments": {}}))).collect();
    common::process::wait_until(HANG, "the slow peer to get every request", || {
        (arrived.load(Ordering::SeqCst) >= calls).then_some(())
    });
    for id in ids {
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "enough"}}));
    }
    let refused = common::process::wait_until(HANG, "a call refused for the requests left behind", || {
        let r = client.call("fast", json!({}));
        let text = r.to_string();
        text.contains("requests of calls cancelled earlier are still waiting").then_some(text)
    });
    assert!(refused.contains("at most 256"), "{refused}");
    release.store(true, Ordering::SeqCst);
    common::process::wait_until(HANG, "calls to go through again", || {
        let r = client.call("fast", json!({}));
        (r["isError"] != true).then_some(())
    });
}

/// A `200` whose body holds more values than `--max-tool-values` fails the call at once,
/// permanent (not retried), naming the bound and the flag; the flag raised, the same body
/// is the response. The read stops at the bound: what it builds is counted, not timed
/// (`value::decode::tests::a_read_stops_at_the_bound`).
#[test]
fn a_body_of_more_values_than_the_budget_is_refused_naming_the_flag() {
    let body = format!("[{}0]", "0,".repeat(2_999));
    let (url, seen) = server(vec![(200, &body, Duration::ZERO)]);
    let dir = tempfile::tempdir().expect("tempdir");
    root(dir.path(), &url, r#", "retry": {"max_retries": 3, "base_delay_seconds": 0.1}"#);
    let (code, _, stderr, outcomes) = run_with(dir.path(), &["--max-tool-values", "2000"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(outcomes, ["permanent"], "not retried");
    let host = url.trim_start_matches("http://");
    assert!(
        stderr.contains(&format!(
            "`/tools/remote.tool`: http://{host}/… answered 200 with more than 2000 values (numbers, strings, lists, \
             objects…), the most one tool output may hold (`--max-tool-values` of `tdsl run` and `tdsl serve` raises it)"
        )),
        "{stderr}"
    );
    assert_eq!(seen.lock().expect("seen").len(), 1);

    // 1 list and 3,000 numbers: within 3,001, and within the default.
    for extra in [&["--max-tool-values", "3001"][..], &[]] {
        let (code, stdout, stderr, outcomes) = run_with(dir.path(), extra);
        assert_eq!((code, outcomes), (0, vec!["ok".to_string()]), "{extra:?}: {stderr}");
        let result: Value = serde_json::from_str(&stdout).expect("JSON");
        assert_eq!(result["call"]["response"].as_array().map(Vec::len), Some(3_000));
    }
    let (code, _, stderr, _) = run_with(dir.path(), &["--max-tool-values", "3000"]);
    assert_eq!(code, 1, "one value past the bound: {stderr}");
}
