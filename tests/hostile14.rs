//! Hostile round 14 (docs/security.md, "Hostile round 14: the spliced answers' registry"):
//! the texts of large answers held until they are written (`src/mcp/spliced.rs`), against
//! clients that never read them — over `--listen`, connections closed once the response's
//! head arrived; over stdio, a client that stops reading its output.
#![cfg(unix)]

mod common;

use std::io::Read;
use std::time::Duration;

use common::doubling_plan;
use common::http_raw::{message, Http};
use common::mcp_stdio::StdioClient;
use common::process::resident_kib;
use serde_json::{json, Value};

fn run_plan(id: u64, depth: usize) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "run_plan", "arguments": {"plan": doubling_plan(depth)}}})
    .to_string()
    .into_bytes()
}

/// Sends a `run_plan` of `depth` and closes the connection once the response's head came
/// (rmcp has the call then): its answer is never read.
fn abandon(http: &Http, session: &str, id: u64, depth: usize) {
    let body = run_plan(id, depth);
    let mut stream = http.send(Some(session), body.len(), &body);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
}

/// Under `--max-calls 1`, a small call is refused (`-32001`) while another runs: answered,
/// it says the abandoned call's run has ended and its answer was handed to rmcp.
fn wait_for_the_slot(http: &Http, session: &str) {
    for k in 0..3000 {
        let (status, _, body) = http.post(Some(session), &run_plan(10_000 + k, 1));
        assert_eq!(status, 200, "{body}");
        let m = message(&body);
        if m.get("result").is_some() {
            return;
        }
        assert_eq!(m["error"]["code"], -32001, "{m}");
        // Sequencing only: the run's end is what is waited for, nothing is measured by it.
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the abandoned call never ended:\n{}", http.process.output());
}

/// Calls whose client closed the connection before their answer: rmcp drops the answer,
/// marks and all, and the text was held for 600 s, with no bound in bytes — 40 such calls
/// of a 1.5 MB answer held +61 MB on the code before the fix (a few hundred of 64 MiB: all
/// the memory there is). Now the texts held are bounded (`--max-answer-bytes-held`, here
/// 2 MB) and those of a response found gone are let go first: the 40 calls grow the
/// server's resident memory by less than 16 MiB (the bound, and the allocator's own slack
/// after 40 runs), and the server still answers a call read whole.
#[test]
fn answers_abandoned_over_http_are_held_within_the_bound() {
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(
        root.path(),
        &["--max-calls", "1", "--max-result-bytes", "2000000", "--max-answer-bytes-held", "2000000"],
    );
    let session = http.session();
    let pid = http.process.pid();
    // The first two warm the allocator and the session.
    for id in [2, 3] {
        abandon(&http, &session, id, 18);
        wait_for_the_slot(&http, &session);
    }
    let before = resident_kib(pid);
    for id in 0..40 {
        abandon(&http, &session, 100 + id, 18);
        wait_for_the_slot(&http, &session);
    }
    let grown = resident_kib(pid).saturating_sub(before);
    assert!(grown < 16 * 1024, "40 abandoned answers of 1.5 MB grew the server by {grown} KiB");
    let (status, _, body) = http.post(Some(&session), &run_plan(99, 18));
    assert_eq!(status, 200);
    let m = message(&body);
    assert_eq!(m["result"]["structuredContent"]["status"], "SUCCESS", "{}", &body[..body.len().min(300)]);
}

/// The TCP state (`/proc/net/tcp`'s `st`, `01` for established) of the server's end of the
/// connection from local port `client` to port `server` on 127.0.0.1, while the kernel has
/// it.
fn server_end_state(server: u16, client: u16) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let port = |address: &str| address.split(':').nth(1).and_then(|p| u16::from_str_radix(p, 16).ok());
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, state) = (fields.get(1)?, fields.get(2)?, fields.get(3)?);
        (port(local) == Some(server) && port(remote) == Some(client)).then(|| state.to_string())
    })
}

/// A client that reads nothing of its answer: the answer, spliced whole into hyper's write
/// buffer, was held as long as the connection stayed open, and a connection answering a
/// request is never closed by the read timeout (8 such connections, 6.3 MB answers: +188 MB,
/// for good). Now a connection whose writes have not gone on for the read timeout is closed
/// as an idle one is: what had reached the sockets' buffers is read, then its end. Before the
/// fix the connection stayed open.
#[test]
fn a_connection_whose_client_reads_nothing_of_its_answer_is_closed() {
    use common::process::wait_until;
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(root.path(), &["--read-timeout", "2"]);
    let session = http.session();
    // 21 levels: a 12.6 MB text, a 25 MB event (the text block and `structuredContent`),
    // more than the two sockets' buffers hold while nothing is read.
    let body = run_plan(7, 21);
    let mut stream = http.send(Some(&session), body.len(), &body);
    let client = stream.local_addr().expect("the client's address").port();
    // Established until the server closes its end (then FIN_WAIT, or gone).
    wait_until(Duration::from_secs(120), "the server to close the connection whose client reads nothing", || {
        (server_end_state(http.port, client).as_deref() != Some("01")).then_some(())
    });
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got[..got.len().min(200)]));
    assert!(got.len() < 25_000_000, "the whole answer came: {} bytes", got.len());
    let (status, _, reply) = http.post(Some(&session), &run_plan(8, 2));
    assert_eq!(status, 200);
    assert_eq!(message(&reply)["result"]["structuredContent"]["status"], "SUCCESS", "{reply}");
}

/// A client that stops reading its output: the answers wait to be written, and the queue of
/// lines to write held each one's text whole (64 lines of up to twice `--max-result-bytes`).
/// Now the queue holds their marks and the texts are held within the bound: past it the
/// oldest are forgotten, the operator told once, and each is answered still, as JSON, with
/// the sentence that its answer is gone; the newest goes out whole. Before the fix, no text
/// was forgotten: the warning never came.
#[test]
fn answers_a_client_does_not_read_over_stdio_are_held_within_the_bound() {
    let root = tempfile::tempdir().expect("tempdir");
    // One call at a time: no answer is made while another waits to be spliced, so only the
    // lines waiting to be written can hold texts.
    let mut cmd = common::mcp_stdio::serve_command(
        root.path(),
        None,
        &["--max-calls", "1", "--max-result-bytes", "1000000", "--max-answer-bytes-held", "1000000"],
    );
    let mut s = StdioClient::start(&mut cmd);
    // 786,429 bytes of result each: two texts do not fit in 1,000,000 bytes.
    let ids: Vec<u64> = (0..8)
        .map(|_| s.start_request("tools/call", json!({"name": "run_plan", "arguments": {"plan": doubling_plan(17)}})))
        .collect();
    let warning = s.process.wait_for_line("the warning that answers were forgotten", Duration::from_secs(120), |l| {
        l.contains("forgotten to stay within --max-answer-bytes-held 1000000").then(|| l.to_string())
    });
    assert!(warning.contains("answer(s) not yet sent"), "{warning}");
    let mut answers = Vec::new();
    for id in &ids {
        let answer = match s.notes.iter().position(|n| n["id"] == json!(id)) {
            Some(i) => s.notes.remove(i),
            None => s.answer_or_end(*id).expect("an answer"),
        };
        answers.push(answer["result"].clone());
    }
    let gone = answers.iter().filter(|a| a["structuredContent"].is_null()).count();
    assert!(gone >= 1, "no answer was forgotten");
    for a in answers.iter().filter(|a| a["structuredContent"].is_null()) {
        let text = a["content"][0]["text"].as_str().expect("a text");
        assert!(text.contains("is not kept") && text.contains("call the tool again"), "{text}");
    }
    // The newest answer made is never the one forgotten: it goes out whole.
    let whole: Vec<&Value> = answers.iter().filter(|a| a["structuredContent"]["status"] == "SUCCESS").collect();
    assert!(!whole.is_empty(), "no answer went out whole");
    for a in whole {
        let text: Value = serde_json::from_str(a["content"][0]["text"].as_str().expect("a text")).expect("JSON");
        assert_eq!(&text, &a["structuredContent"]);
    }
    let ended = s.finish(Duration::from_secs(30));
    assert!(ended.status.success(), "{}", ended.output);
}

/// An answer alone larger than the bound is refused with `E0818`, saying which option;
/// a smaller one goes out.
#[test]
fn an_answer_larger_than_the_bound_is_refused_with_e0818() {
    let root = tempfile::tempdir().expect("tempdir");
    // The result of 14 levels, `{"v": …}`, is 98,307 bytes: within 98,320; its answer's
    // text adds at least 41 bytes (`{"status":"SUCCESS","result":…,"steps":[]}`).
    let mut cmd = common::mcp_stdio::serve_command(
        root.path(),
        None,
        &["--max-result-bytes", "98320", "--max-answer-bytes-held", "98320"],
    );
    let mut s = StdioClient::start(&mut cmd);
    let refused = s.call("run_plan", json!({"plan": doubling_plan(14)}));
    assert_eq!(refused["isError"], true, "{refused}");
    let why = refused["content"][0]["text"].as_str().expect("a text");
    assert!(why.ends_with("[E0818]") && why.contains("--max-answer-bytes-held"), "{why}");
    let sent = s.call("run_plan", json!({"plan": doubling_plan(13)}));
    assert_eq!(sent["structuredContent"]["status"], "SUCCESS", "{sent}");
    let ended = s.finish(Duration::from_secs(30));
    assert!(ended.status.success(), "{}", ended.output);
}

#[test]
fn the_bound_of_answers_held_is_at_least_the_largest_result() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--max-result-bytes", "2000000", "--max-answer-bytes-held", "1000000"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--max-answer-bytes-held 1000000") && stderr.contains("--max-result-bytes"), "{stderr}");
}

/// [`doubling_plan`]'s `v`, as compact JSON.
fn doubled_text(depth: usize) -> String {
    let mut x = "[1]".to_string();
    for _ in 0..depth {
        x = format!("[{x},{x}]");
    }
    x
}

/// Reads `stream` until `needle` has come: what was read.
fn read_until(stream: &mut std::net::TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !got.windows(needle.len()).any(|w| w == needle) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => panic!("the stream ended before {:?}", String::from_utf8_lossy(needle)),
            Ok(k) => got.extend_from_slice(&chunk[..k]),
        }
    }
    got
}

/// Clients that read the first bytes of a large answer, then nothing: each answer was
/// spliced whole into hyper's write buffer, outside `--max-answer-bytes-held`, for as long
/// as the connection stayed open (8 connections of 50 MB events: +579 MB on the code before
/// the fix, for the read timeout). Now a message holding an answer's text is written in
/// slices taken from the registry as hyper asks for them: the texts stay within the bound
/// (here 64 MB: two of the 25 MB texts), the newest making room by cutting the oldest
/// messages being written, and a connection holds a slice or two. The server's resident
/// memory grows by less than 128 MiB (the bound, and room for the runs' and the
/// allocator's slack: the fix's point is the hundreds of MB, not a few). The two answers
/// still held go out whole, byte for byte the message spliced whole; the others are cut
/// (their connection closed, the message unfinished), never written half.
#[test]
fn answers_read_slowly_over_http_are_held_within_the_bound() {
    use common::http_raw::dechunk;
    let root = tempfile::tempdir().expect("tempdir");
    // The read timeout out of the way: what is measured is what the connections hold.
    let http = Http::start(
        root.path(),
        &["--read-timeout", "600", "--max-result-bytes", "30000000", "--max-answer-bytes-held", "64000000"],
    );
    let session = http.session();
    let pid = http.process.pid();
    let depth = 22;
    let v = doubled_text(depth);
    // A first one read whole warms the allocator and the runs' threads.
    let (status, _, body) = http.post(Some(&session), &run_plan(2, depth));
    assert_eq!(status, 200);
    assert_eq!(body.matches(&v).count(), 2, "the text block and structuredContent");
    let before = resident_kib(pid);
    // 22 `[`: the value's start, in the text block, the message's first slice.
    let start = vec![b'['; depth];
    let mut streams = Vec::new();
    for id in 0..8u64 {
        let body = run_plan(100 + id, depth);
        let mut stream = http.send(Some(&session), body.len(), &body);
        let got = read_until(&mut stream, &start);
        streams.push((stream, got));
    }
    let grown = resident_kib(pid).saturating_sub(before);
    eprintln!("8 slow readers of 50 MB answers: the server grew by {grown} KiB");
    assert!(grown < 128 * 1024, "8 clients reading nothing of 50 MB answers grew the server by {grown} KiB");
    // Read to their ends, the newest first: the answers held go out whole, the others cut.
    let mut whole = Vec::new();
    for (i, (mut stream, mut got)) in streams.into_iter().enumerate().rev() {
        let _ = stream.read_to_end(&mut got);
        let end = got.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
        assert!(String::from_utf8_lossy(&got[..end]).to_ascii_lowercase().contains("transfer-encoding: chunked"));
        let body = String::from_utf8_lossy(&dechunk(&got[end..])).into_owned();
        if got.ends_with(b"\r\n0\r\n\r\n") {
            assert_eq!(body.matches(&v).count(), 2, "answer {i}: the text block and structuredContent");
            let tail = &body[body.len().saturating_sub(300)..];
            assert!(tail.contains("\"isError\":false}}\n") && tail.ends_with("\n\n"), "answer {i}: {tail}");
            whole.push(i);
        } else {
            assert!(body.matches(&v).count() < 2, "answer {i} was written whole, its end not sent");
        }
    }
    assert_eq!(whole, [7, 6], "the two newest answers are held and go out whole, the others are cut");
    let (status, _, reply) = http.post(Some(&session), &run_plan(9, 2));
    assert_eq!(status, 200);
    assert_eq!(message(&reply)["result"]["structuredContent"]["status"], "SUCCESS", "{reply}");
}
