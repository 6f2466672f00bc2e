//! `tdsl lsp` from the attacker's side (docs/editors.md, "Hostile round (language server),
//! 2026-11-29"): a hostile repository's `.tool` files and a hostile editor plugin's
//! traffic, each through the real binary over stdio. Each test failed before its fix.

mod lsp_support;

use std::path::Path;
use std::time::{Duration, Instant};

use lsp_support::{at, find, Client};
use serde_json::{json, Value};

/// A root with a callee `/tools/callee.tool` (argument `x`, response `out`).
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".tdsl-root"), "").expect("marker");
    std::fs::create_dir(dir.path().join("tools")).expect("tools");
    std::fs::write(
        dir.path().join("tools/callee.tool"),
        r#"{"description": "a callee", "arguments": [{"name": "x", "type_name": "string"}],
            "responses": [{"name": "out", "type_name": "string"}], "system_event_endpoint": "http://localhost/x"}"#,
    )
    .expect("callee");
    dir
}

fn binary(root: &Path) -> Client {
    let mut c = Client::binary();
    c.initialize(root, json!({}), json!(null));
    c
}

/// A composite of `n` steps calling the callee, each but the first passing `REF:s0.out`;
/// `sep` between steps (`""`: the whole file on one line, as a minifier writes it).
fn composite(n: usize, sep: &str) -> String {
    let steps: Vec<String> = (0..n)
        .map(|i| {
            let x = if i == 0 { "\"a\"".to_string() } else { "\"REF:s0.out\"".to_string() };
            format!(
                r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/callee.tool", "arguments": {{"x": {x}}}}}"#
            )
        })
        .collect();
    format!("{{\"instructions\": [{}]}}", steps.join(&format!(",{sep}")))
}

const MB: u64 = 1024 * 1024;

/// `references` and `definition` of a step that 3,000 REFs name: each place found copied
/// the whole file's text (8.7 GB for 8,000 REFs in a 1 MB file, release build).
#[test]
fn a_step_named_by_thousands_of_refs_costs_no_copy_of_the_file_each() {
    let ws = root();
    let mut c = binary(ws.path());
    let text = composite(3000, "\n");
    let u = c.open_text(&ws.path().join("many.tool"), &text);
    assert!(c.diagnostics(&u).is_empty());
    let before = c.peak_bytes().expect("a process");
    // On `s0`, the first step's `execution_id`.
    let on_s0 = at(&u, 0, 37);
    let refs = c
        .request("textDocument/references", json!({"textDocument": on_s0["textDocument"], "position": on_s0["position"], "context": {"includeDeclaration": true}}))
        .expect("references");
    assert_eq!(refs.as_array().map(Vec::len), Some(3000));
    let (line, col) = find(&text, "REF:s0", 4);
    let def = c.request("textDocument/definition", at(&u, line, col)).expect("definition");
    assert_eq!(def["range"]["start"], json!({"line": 0, "character": 36}), "{def}");
    let grown = c.peak_bytes().expect("a process").saturating_sub(before);
    // 3,000 copies of the 350 KB text are a gigabyte.
    assert!(grown < 200 * MB, "the peak grew {} MB", grown / MB);
    assert_eq!(c.shutdown(), 0);
}

/// The same composite with a diagnostic on each of its 1,500 steps, written over lines and
/// on one line (minified): each diagnostic's UTF-16 column was counted from the start of
/// its line, so the one-line file's diagnostics cost the line's length each (a 1 MB file
/// took 18 s, release build, against 0.5 s over lines; this test's file 25 s against 1 s, debug
/// build).
#[test]
fn a_minified_file_is_checked_as_fast_as_the_same_over_lines() {
    let ws = root();
    let mut c = binary(ws.path());
    let mut took = Vec::new();
    for (name, sep) in [("lines.tool", "\n"), ("one_line.tool", "")] {
        // An argument the callee does not declare: an E0611 for each step.
        let text = composite(1500, sep).replace(r#"{"x": "#, r#"{"y": 1, "x": "#);
        let started = Instant::now();
        let u = c.open_text(&ws.path().join(name), &text);
        let diagnostics = c.diagnostics(&u);
        took.push(started.elapsed());
        assert_eq!(diagnostics.len(), 1500);
        let last = &diagnostics[1499]["range"]["start"];
        let (line, col) = find(&text, r#""y": 1, "x": "REF:s0.out"}}]}"#, 0);
        assert_eq!(last, &json!({"line": line, "character": col}));
    }
    assert!(took[1] < took[0] * 5 + Duration::from_secs(3), "over lines {:?}, on one line {:?}", took[0], took[1]);
    assert_eq!(c.shutdown(), 0);
}

/// A document grown by edits, each within the message limit, past it: the text grew
/// without bound (320 MB of memory after forty 8 MB inserts, 1.4 GB at the peak). Past the
/// limit (`--max-message-bytes`, which a `didOpen` of the whole text must fit in) the server
/// stops following it, says so, and takes it back when the whole text is sent again.
#[test]
fn a_document_grown_past_the_message_limit_is_no_longer_followed() {
    let ws = root();
    let mut c = Client::binary_with(&["--max-message-bytes", "1048576"]);
    c.initialize(ws.path(), json!({}), json!(null));
    let u = c.open_text(&ws.path().join("grow.tool"), r#"{"description": ""}"#);
    c.diagnostics(&u);
    let chunk = "x".repeat(300_000);
    for v in 2..6 {
        let insert = json!({"range": {"start": {"line": 0, "character": 17}, "end": {"line": 0, "character": 17}}, "text": chunk});
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": v}, "contentChanges": [insert]}),
        );
    }
    // (Diagnostics of the text on the way may come first.)
    let d = loop {
        let d = c.diagnostics(&u);
        if d.iter().any(|d| d["message"].as_str().unwrap_or_default().contains("follows")) {
            break d;
        }
    };
    assert_eq!(d.len(), 1, "{d:?}");
    let message = d[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than the 1048576 bytes"), "{message}");
    // Ranged edits are ignored now; hover and completion answer nothing.
    assert_eq!(c.request("textDocument/hover", at(&u, 0, 3)), Ok(Value::Null));
    // The whole text again: followed and checked.
    let whole = json!({"text": r#"{"description": "d", "instructions": []}"#});
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [whole]}));
    let d = c.diagnostics(&u);
    assert!(d.iter().all(|d| !d["message"].as_str().unwrap_or_default().contains("follows")), "{d:?}");
    assert!(c.request("textDocument/hover", at(&u, 0, 3)).expect("hover").is_object());
    assert_eq!(c.shutdown(), 0);
}

/// One `didChange` of 20,000 changes at the start of a 1 MB document (a 2 MB message):
/// each moved the whole text, 20 GB in all; 100,000 changes at the end of a 1 MB line read
/// the line to its end each, for minutes (release build). The work of one message has a
/// budget (1 GiB); past it the document is no longer followed, and the server says so.
#[test]
fn one_change_message_costs_at_most_its_budget() {
    let ws = root();
    let mut c = binary(ws.path());
    let text = format!(r#"{{"description": "{}"}}"#, "a".repeat(1_000_000));
    let u = c.open_text(&ws.path().join("line.tool"), &text);
    c.diagnostics(&u);
    let change =
        json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": " "});
    let changes: Vec<Value> = (0..20_000).map(|_| change.clone()).collect();
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": changes}));
    let d = c.diagnostics(&u);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0]["message"].as_str().unwrap_or_default().contains("stopped following"), "{d:?}");
    assert_eq!(c.shutdown(), 0);
}

/// 120 open documents of 100 steps each, one calling another: every check loaded every
/// other open document, and closing one checked them all again (300 of 300 steps: 14 s to
/// open, 92 s to close one, release build). An open callee is now loaded when a check
/// reaches it, once a version, and a closed file's callers alone are checked again.
#[test]
fn many_open_documents_cost_each_check_only_what_it_calls() {
    let ws = root();
    let mut c = binary(ws.path());
    let text = composite(100, "\n");
    let started = Instant::now();
    // `caller.tool` calls `d0.tool`, whose open text declares no arguments (on disk: `x`).
    let callee = r#"{"arguments": [{"name": "x", "type_name": "string"}], "system_event_endpoint": "http://h/x"}"#;
    std::fs::write(ws.path().join("d0.tool"), callee).expect("on disk");
    let mut uris = vec![c.open_text(&ws.path().join("d0.tool"), &callee.replace("\"x\"", "\"y\""))];
    uris.extend((1..120).map(|i| c.open_text(&ws.path().join(format!("d{i}.tool")), &text)));
    let caller =
        r#"{"instructions": [{"execution_id": "a", "tool_definition_path": "/d0.tool", "arguments": {"x": "v"}}]}"#;
    let caller = c.open_text(&ws.path().join("caller.tool"), caller);
    for u in &uris {
        assert!(c.diagnostics(u).is_empty());
    }
    let d = c.diagnostics(&caller);
    assert!(!d.is_empty(), "the open d0.tool has no argument `x`: {d:?}");
    let opened = started.elapsed();
    // Closing d0.tool: its caller reads it from disk now, and nothing else is checked.
    let started = Instant::now();
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": uris[0]}}));
    assert!(c.diagnostics(&caller).is_empty());
    let closed = started.elapsed();
    for u in &uris[1..] {
        assert!(!c.has_diagnostics(u), "{u} was checked again");
    }
    assert!(opened < Duration::from_secs(60) && closed < Duration::from_secs(10), "{opened:?}, {closed:?}");
    assert_eq!(c.shutdown(), 0);
}

/// A transform expression reading one name 40,000 times (`[x, x, …]`, 80 KB): the symbols
/// of a file (found on the first hover after each check) looked each use up in the uses
/// so far, quadratic in the uses (20,000 distinct names: 1.9 s a hover, release build; the
/// checker's own cost for distinct names is another matter, see docs/editors.md).
#[test]
fn an_expression_of_thousands_of_names_is_hovered_at_once() {
    let ws = root();
    let mut c = binary(ws.path());
    let list = vec!["x"; 40_000].join(",");
    let text = format!(
        r#"{{"instructions": [{{"execution_id": "s", "tool_definition_path": "/tools/callee.tool",
             "transform_arguments": {{"transforms": {{"y": "[{list}]"}}}}}}]}}"#
    );
    let u = c.open_text(&ws.path().join("names.tool"), &text);
    assert!(!c.diagnostics(&u).is_empty());
    let (line, col) = find(&text, "x]", 0);
    let started = Instant::now();
    let hover = c.request("textDocument/hover", at(&u, line, col)).expect("hover");
    let took = started.elapsed();
    assert!(hover.is_object() || hover.is_null());
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(c.shutdown(), 0);
}

/// A request after `shutdown` (a hover the editor sent as it closed): it was never
/// answered, and the server ended with status 2 ("unexpected message during shutdown")
/// instead of waiting for `exit`. It is answered with an error now, as LSP says, and `exit`
/// ends the server cleanly.
#[test]
fn requests_after_shutdown_are_answered_with_an_error() {
    let ws = root();
    let mut c = binary(ws.path());
    let u = c.open_text(&ws.path().join("a.tool"), &composite(2, "\n"));
    assert_eq!(c.request("shutdown", Value::Null), Ok(Value::Null));
    let e = c.request("textDocument/hover", at(&u, 0, 3)).expect_err("an error");
    assert!(e.contains("shutting down"), "{e}");
    // A second `shutdown` is a request after the first.
    assert!(c.request("shutdown", Value::Null).is_err());
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"text": "{"}]}),
    );
    assert_eq!(c.exit(), 0);
}

/// A hostile repository's links: callees that are `/dev/zero`, a FIFO, a folder. The
/// analysis never read them (they "do not resolve"), but go to definition on their
/// `tool_definition_path` handed the editor `file:///dev/zero`, the FIFO or the folder to
/// open. Only a regular file is a callee's definition now.
#[cfg(unix)]
#[test]
fn go_to_definition_never_hands_the_editor_a_device_a_fifo_or_a_folder() {
    let ws = root();
    let evil = ws.path().join("evil");
    std::fs::create_dir(&evil).expect("evil");
    std::os::unix::fs::symlink("/dev/zero", evil.join("zero.tool")).expect("link");
    std::os::unix::fs::symlink("/tmp", evil.join("dir.tool")).expect("link");
    let fifo = std::process::Command::new("mkfifo").arg(evil.join("fifo.tool")).status().expect("mkfifo");
    assert!(fifo.success());
    let mut c = binary(ws.path());
    let steps: Vec<String> = ["zero", "dir", "fifo", "../tools/callee"]
        .iter()
        .enumerate()
        .map(|(i, n)| format!(r#"{{"execution_id": "s{i}", "tool_definition_path": "/evil/{n}.tool"}}"#))
        .collect();
    let text = format!("{{\"instructions\": [\n{}\n]}}", steps.join(",\n"));
    let u = c.open_text(&ws.path().join("caller.tool"), &text);
    c.diagnostics(&u);
    for line in 1..4 {
        let def = c.request("textDocument/definition", at(&u, line, 60)).expect("definition");
        assert_eq!(def, Value::Null, "line {line}");
    }
    assert_eq!(c.shutdown(), 0);
}

/// A tool root of 50,001 files (a workspace folder of `/`, or a home folder): references
/// and rename walked all of it for each request (6 s over `/` of a small machine, release
/// build). The walk stops after 50,000 entries: references answer what it found, and
/// rename, which must see every caller, is refused saying why.
#[test]
fn a_huge_root_is_walked_only_so_far() {
    let ws = root();
    let junk = ws.path().join("junk");
    std::fs::create_dir(&junk).expect("junk");
    for i in 0..50_001 {
        std::fs::File::create(junk.join(i.to_string())).expect("file");
    }
    let mut c = binary(ws.path());
    let text = r#"{"arguments": [{"name": "a", "type_name": "string"}], "instructions": [
        {"execution_id": "s", "tool_definition_path": "/tools/callee.tool", "arguments": {"x": "REF:arguments.a"}}]}"#;
    let u = c.open_text(&ws.path().join("main.tool"), text);
    c.diagnostics(&u);
    let on_a = at(&u, 0, 25);
    let refs = c
        .request(
            "textDocument/references",
            json!({"textDocument": on_a["textDocument"], "position": on_a["position"], "context": {"includeDeclaration": true}}),
        )
        .expect("references");
    assert_eq!(refs.as_array().map(Vec::len), Some(2), "{refs}");
    let e = c
        .request(
            "textDocument/rename",
            json!({"textDocument": on_a["textDocument"], "position": on_a["position"], "newName": "b"}),
        )
        .expect_err("refused");
    assert!(e.contains("more than 50000 files and folders"), "{e}");
    assert_eq!(c.shutdown(), 0);
}

/// A code action over the whole of a file with 1,000 REFs to undeclared arguments: the
/// file was parsed again for each one's "declare argument" action (8,000 in a 900 KB file:
/// 200 s, release build). It is read once a request now.
#[test]
fn code_actions_over_a_whole_file_read_it_once() {
    let ws = root();
    let mut c = binary(ws.path());
    let steps: Vec<String> = (0..1000)
        .map(|i| {
            format!(r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/callee.tool", "arguments": {{"x": "REF:arguments.a{i}"}}}}"#)
        })
        .collect();
    let text = format!("{{\"arguments\": [], \"instructions\": [\n{}\n]}}", steps.join(",\n"));
    let u = c.open_text(&ws.path().join("undeclared.tool"), &text);
    assert_eq!(c.diagnostics(&u).len(), 1000);
    let started = Instant::now();
    let whole = json!({"start": {"line": 0, "character": 0}, "end": {"line": 1002, "character": 0}});
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": u}, "range": whole, "context": {"diagnostics": []}}),
        )
        .expect("code actions");
    let took = started.elapsed();
    let actions = actions.as_array().cloned().unwrap_or_default();
    assert_eq!(actions.len(), 1000);
    let edit = &actions[999]["edit"]["changes"][&u][0];
    assert_eq!(edit["range"]["start"], json!({"line": 0, "character": 15}), "{edit}");
    assert!(edit["newText"].as_str().unwrap_or_default().contains(r#"{"name": "a999""#), "{edit}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(c.shutdown(), 0);
}
