//! What a JSON-RPC message may cost `tdsl serve --mcp` before it is decoded: its values are
//! counted first, over stdio and over `--listen` (`--max-request-values`), and over HTTP a
//! POST is checked for its session before its body is read as JSON (hostile round 12b).
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;

use common::http_raw::{message, session_id, Http};
use common::mcp_stdio::StdioClient;
use serde_json::{json, Value};

/// A plan answering the length of its list argument `xs` (of objects).
fn length_plan() -> Value {
    json!({
        "arguments": [{"name": "xs", "type_name": "list<object>", "required": true}],
        "instructions": [{"execution_id": "g", "transform_responses": {"transforms": {"n": "length(REF:arguments.xs)"}}}],
        "response_reference_map": {"n": "REF:g.n"}
    })
}

/// `run_plan` of [`length_plan`] with `n` one-key objects: about `2 n + 20` values.
fn run_length(n: usize) -> Value {
    json!({"name": "run_plan", "arguments": {"plan": length_plan(), "arguments": {"xs": vec![json!({"a": 1}); n]}}})
}

fn stdio(root: &Path, extra: &[&str]) -> StdioClient {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--no-history", "--root"]).arg(root).args(extra);
    StdioClient::start(&mut cmd)
}

fn error_of(answer: &Value) -> (i64, String) {
    let code = answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}"));
    (code, answer["error"]["message"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_message_over_the_value_limit_is_refused_with_its_id_on_stdio() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut s = stdio(root.path(), &["--max-request-values", "1000"]);
    // 600 objects: 1,200 values and more, past the limit: refused before any is built.
    let refused = s.request("tools/call", run_length(600));
    let (code, message) = error_of(&refused);
    assert_eq!(code, -32600, "{refused}");
    assert_eq!(refused["id"], 2, "{refused}"); // the initialize was 1
    assert!(message.contains("more than 1000 values") && message.contains("--max-request-values"), "{message}");
    // Deep, narrow and wide shapes are counted alike; a ping with a padded params too.
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let wide: Vec<Value> = (0..1001).map(|_| json!([])).collect();
    for pad in [
        json!(wide),
        json!({"keys": (0..1001).map(|i| (format!("k{i}"), json!(0))).collect::<serde_json::Map<_, _>>()}),
    ] {
        let answer = s.request("ping", json!({"pad": pad}));
        assert_eq!(error_of(&answer).0, -32600, "{answer}");
    }
    let answer = s.request("ping", json!({"pad": serde_json::from_str::<Value>(&deep).expect("deep")}));
    assert_eq!(answer["result"], json!({}), "{answer}");
    // Under the limit, the same plan runs; the server goes on answering.
    let ran = s.request("tools/call", run_length(300));
    assert_eq!(ran["result"]["structuredContent"]["result"]["n"], 300, "{ran}");
}

#[test]
fn a_big_plan_passes_under_the_default_value_limit() {
    let root = tempfile::tempdir().expect("tempdir");
    let mut s = stdio(root.path(), &[]);
    // 20,000 objects: about 40,000 values, far more than the plans of tests/ hold (1,512
    // at most), under the default of 100,000.
    let ran = s.request("tools/call", run_length(20_000));
    assert_eq!(
        ran["result"]["structuredContent"]["result"]["n"],
        20_000,
        "{}",
        &ran.to_string()[..300.min(ran.to_string().len())]
    );
}

#[test]
fn the_value_limit_is_checked() {
    for bad in ["999", "100000001", "x"] {
        let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(["serve", "--mcp", "--max-request-values", bad])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--max-request-values"), "{bad}");
    }
}

#[test]
fn a_post_without_a_session_that_is_not_an_initialize_is_refused_before_its_body_is_decoded() {
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(root.path(), &[]);
    // Not JSON at all: refused for its session, not as a parse error (the body was never
    // decoded); the id is read from the top level when there is one.
    for (body, id) in [
        (&b"{\"id\": 7, \"method\": \"tools/list\", \"params\": [[[[ not JSON"[..], json!(7)),
        (b"\xff\xfe garbage", Value::Null),
        (br#"{"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": {"name": "run_plan"}}"#, json!("r")),
    ] {
        let (status, _, reply) = http.post(None, body);
        assert_eq!(status, 400, "{reply}");
        let m = message(&reply);
        let (code, text) = error_of(&m);
        assert_eq!((code, &m["id"]), (-32600, &id), "{m}");
        assert!(text.contains("Session ID is required") && text.contains("not decoded"), "{text}");
    }
    // A request of a later protocol revision that rmcp would serve without a session.
    let stateless = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, _, reply) = http.post(None, stateless.to_string().as_bytes());
    assert_eq!((status, &message(&reply)["id"]), (400, &json!(4)), "{reply}");
    // A session that is not open: 404, whatever the body.
    let (status, _, reply) = http.post(Some("no-such-session"), b"not JSON");
    assert_eq!(status, 404, "{reply}");
    // An initialize opens a session as before.
    let session = http.session();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (status, _, reply) = http.post(Some(&session), ping.to_string().as_bytes());
    assert_eq!((status, &message(&reply)["result"]), (200, &json!({})), "{reply}");
}

#[test]
fn a_body_over_the_value_limit_is_refused_with_its_id_over_http() {
    let root = tempfile::tempdir().expect("tempdir");
    let http = Http::start(root.path(), &["--max-request-values", "1000"]);
    let session = http.session();
    let call = |id: u64, n: usize| {
        let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": run_length(n)});
        http.post(Some(&session), m.to_string().as_bytes())
    };
    let (status, _, reply) = call(5, 600);
    assert_eq!(status, 400, "{reply}");
    let m = message(&reply);
    let (code, text) = error_of(&m);
    assert_eq!((code, &m["id"]), (-32600, &json!(5)), "{m}");
    assert!(text.contains("more than 1000 values") && text.contains("--max-request-values"), "{text}");
    // An initialize over the limit is refused the same way, and opens no session.
    let pad = vec![json!(0); 2000];
    let init = json!({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}, "pad": pad}});
    let (status, head, reply) = http.post(None, init.to_string().as_bytes());
    assert_eq!((status, message(&reply)["id"].clone()), (400, json!(9)), "{reply}");
    assert_eq!(session_id(&head), None, "{head}");
    // Under it, the call runs.
    let (status, _, reply) = call(6, 300);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(message(&reply)["result"]["structuredContent"]["result"]["n"], 300, "{reply}");
}
