//! `tdsl lsp` from the attacker's side (docs/editors.md, "Hostile round (language server),
//! 2026-11-29"): a hostile repository's `.tool` files and a hostile editor plugin's
//! traffic, each through the real binary over stdio. Each test failed before its fix.

mod lsp_support;

use std::path::Path;
use std::time::{Duration, Instant};

use lsp_support::{at, find, Client};
use serde_json::json;

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
    assert!(took[1] < took[0] * 3 + Duration::from_secs(1), "over lines {:?}, on one line {:?}", took[0], took[1]);
    assert_eq!(c.shutdown(), 0);
}
