//! `tdsl lsp`'s lifecycle through the real binary over stdio (docs/editors.md, "Cancelling
//! and ending"): `$/cancelRequest` (answered `-32800`, long work stopped early) and `exit`
//! with or without `shutdown` first.

mod lsp_support;

use std::path::Path;
use std::time::{Duration, Instant};

use lsp_server::{RequestId, Response};
use lsp_support::{at, Client};
use serde_json::{json, Value};

/// LSP's RequestCancelled.
const REQUEST_CANCELLED: i32 = -32800;

/// How long an answer may take before the test fails (a hang guard, not a timing).
const HANG: Duration = Duration::from_secs(60);

/// A root with a callee `/tools/callee.tool` (argument `x`, response `out`).
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".tdsl-root"), "").expect("marker");
    std::fs::create_dir(dir.path().join("tools")).expect("tools");
    std::fs::write(dir.path().join("tools/callee.tool"), CALLEE).expect("callee");
    dir
}

const CALLEE: &str = r#"{"description": "a callee", "arguments": [{"name": "x", "type_name": "string"}],
    "responses": [{"name": "out", "type_name": "string"}], "system_event_endpoint": "http://localhost/x"}"#;

fn binary(root: &Path) -> Client {
    let mut c = Client::binary();
    c.initialize(root, json!({}), json!(null));
    c
}

/// A composite of `n` steps calling the callee, each but the first passing `REF:s0.out`.
fn composite(n: usize) -> String {
    let steps: Vec<String> = (0..n)
        .map(|i| {
            let x = if i == 0 { "\"a\"".to_string() } else { "\"REF:s0.out\"".to_string() };
            format!(
                r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/callee.tool", "arguments": {{"x": {x}}}}}"#
            )
        })
        .collect();
    format!("{{\"instructions\": [{}]}}", steps.join(",\n"))
}

fn hover(c: &mut Client, uri: &str) -> RequestId {
    c.send_request("textDocument/hover", at(uri, 0, 0))
}

fn cancel(c: &mut Client, id: Value) {
    c.notify("$/cancelRequest", json!({ "id": id }));
}

fn error_code(r: &Response) -> Option<i32> {
    r.error.as_ref().map(|e| e.code)
}

/// A request cancelled while the server analyses the edits before it is still answered,
/// with `-32800` (it was answered with its result, the cancellation ignored); the
/// requests after it are answered as usual, the file's diagnostics come, and a
/// cancellation naming a request already answered, unknown or malformed is ignored.
#[test]
fn a_cancelled_request_is_answered_request_cancelled() {
    let ws = root();
    let mut c = binary(ws.path());
    // A file whose analysis takes a while, so that the cancellation arrives during it.
    let u = c.open_text(&ws.path().join("main.tool"), &composite(3_000));
    let first = hover(&mut c, &u);
    cancel(&mut c, json!(1_000_000));
    cancel(&mut c, serde_json::to_value(&first).expect("id"));
    let r = c.answer(&first, HANG).expect("the cancelled request is answered");
    assert_eq!(error_code(&r), Some(REQUEST_CANCELLED), "{r:?}");
    c.diagnostics(&u); // the file is still analysed
                       // The id is free again: a request reusing it is answered.
    c.send_request_with(first.clone(), "textDocument/hover", at(&u, 0, 0));
    let r = c.answer(&first, HANG).expect("answered");
    assert_eq!(error_code(&r), None, "{r:?}");
    // A string id.
    let named = RequestId::from("named".to_string());
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2},
        "contentChanges": [{"text": composite(3_001)}]}),
    );
    c.send_request_with(named.clone(), "textDocument/hover", at(&u, 0, 0));
    cancel(&mut c, json!("named"));
    let r = c.answer(&named, HANG).expect("answered");
    assert_eq!(error_code(&r), Some(REQUEST_CANCELLED), "{r:?}");
    // Cancelling what was answered, and cancellations that name nothing.
    let done = hover(&mut c, &u);
    let r = c.answer(&done, HANG).expect("answered");
    assert_eq!(error_code(&r), None, "{r:?}");
    cancel(&mut c, serde_json::to_value(&done).expect("id"));
    for params in [json!(null), json!({}), json!({"id": null}), json!({"id": 1.5}), json!([1]), json!("x")] {
        c.notify("$/cancelRequest", params);
    }
    assert_eq!(c.request("textDocument/hover", at(&u, 0, 0)).map(|_| ()), Ok(()));
    assert!(c.take_answers().is_empty(), "a cancellation is never answered");
    assert_eq!(c.shutdown(), 0);
}

/// A tool of one step whose `transform_responses` has `2n` variables, each reading the two
/// before it: every expression's scope holds the variables before it, so its analysis takes
/// work quadratic in `n` (minutes at n = 8,000 in a debug build).
fn many_variables(n: usize) -> String {
    let mut transforms = serde_json::Map::new();
    transforms.insert("x0".into(), "1".into());
    transforms.insert("y0".into(), "2".into());
    for k in 1..=n {
        transforms.insert(format!("x{k}"), format!("{{a: x{}, b: y{}}}", k - 1, k - 1).into());
        transforms.insert(format!("y{k}"), format!("{{a: y{}, b: x{}}}", k - 1, k - 1).into());
    }
    json!({"instructions": [{"execution_id": "s", "transform_responses": {"variables": {}, "transforms": transforms}}],
        "response_reference_map": {"r": format!("REF:s.x{n}")}})
    .to_string()
}

/// A request cancelled while the server analyses one large file stops that analysis
/// partway (the analysis polls the cancel: `crate::types::stop`) and is answered `-32800`
/// (it was answered only once the whole file was analysed, minutes later); the partial
/// analysis is not published, and the server ends as usual.
#[test]
fn a_request_cancelled_within_a_files_analysis_is_answered_soon() {
    let ws = root();
    let mut c = binary(ws.path());
    let u = c.open_text(&ws.path().join("main.tool"), &many_variables(2_000));
    let started = Instant::now();
    let first = hover(&mut c, &u);
    cancel(&mut c, serde_json::to_value(&first).expect("id"));
    // A hang guard an order of magnitude under the whole analysis.
    let r = c.answer(&first, HANG).expect("the cancelled request is answered");
    assert_eq!(error_code(&r), Some(REQUEST_CANCELLED), "{r:?}");
    eprintln!("cancelled within the file, answered after {:?}", started.elapsed());
    assert_eq!(c.shutdown(), 0);
}

/// `references` of a callee's argument reads every `.tool` file of the root: here 5,000
/// names of one 200-step caller (hard links), about 5 minutes of work in a debug build
/// (100 of them: 6 s). Cancelled after it started, it stops at the next file and is
/// answered `-32800` at once (0.4 s; it was answered only when all was read, with its
/// result); the server then serves on.
#[test]
fn a_cancelled_references_stops_reading_the_root() {
    let ws = root();
    let callers = ws.path().join("callers");
    std::fs::create_dir(&callers).expect("callers");
    let first = callers.join("c0.tool");
    std::fs::write(&first, composite(200)).expect("caller");
    for i in 1..5_000 {
        std::fs::hard_link(&first, callers.join(format!("c{i}.tool"))).expect("link");
    }
    let mut c = binary(ws.path());
    let u = c.open(&ws.path().join("tools/callee.tool"));
    c.diagnostics(&u);
    let on_x = at(&u, 0, 52);
    let params = json!({"textDocument": on_x["textDocument"], "position": on_x["position"],
        "context": {"includeDeclaration": true}});
    let started = Instant::now();
    let refs = c.send_request("textDocument/references", params);
    std::thread::sleep(Duration::from_millis(300));
    cancel(&mut c, serde_json::to_value(&refs).expect("id"));
    // A hang guard an order of magnitude under the work left.
    let r = c.answer(&refs, Duration::from_secs(30)).expect("the cancelled references is answered");
    assert_eq!(error_code(&r), Some(REQUEST_CANCELLED), "{r:?}");
    eprintln!("cancelled references answered after {:?}", started.elapsed());
    assert_eq!(c.request("textDocument/hover", at(&u, 0, 0)).map(|_| ()), Ok(()));
    assert_eq!(c.shutdown(), 0);
}

/// `exit` without `shutdown` first ends the server with status 1, as LSP says (it was 0);
/// after `shutdown`, 0.
#[test]
fn exit_without_shutdown_is_status_one() {
    let ws = root();
    let c = binary(ws.path());
    assert_eq!(c.exit(), 1);
    let mut c = binary(ws.path());
    assert_eq!(c.request("shutdown", Value::Null), Ok(Value::Null));
    assert_eq!(c.exit(), 0);
}
