//! The model rounds (`docs/plans.md`, "Model round, 2026-11-29"): the tasks that exposed a
//! defect, replayed as sessions against the real `tdsl serve --mcp --plans --skills`, each a
//! data file of `tests/data/plans/model_round/`:
//!
//! ```json
//! {"about": "…", "root": "document-analysis", "upstream": ["shop"],
//!  "session": [
//!    {"tool": "check_plan", "arguments": {…}, "diagnostics": [{"code", "pointer", "help"}]},
//!    {"tool": "run_plan", "arguments": {…}, "answer": {"status": "SUCCESS", "result": {…}}},
//!    {"read": "tdsl://tools", "contains": ["…"]}]}
//! ```
//!
//! `diagnostics` are matched as the plan corpus matches them (each expected one found, by
//! code, pointer and a part of its help; no other error); `answer` is matched key by key
//! against the structured answer; `contains` are parts of the resource's text. The upstream
//! `shop` is `tests/mcp_py/shop.py` (the Python SDK, in the tests' virtual environment).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mcp_stdio::StdioClient;
use serde_json::{json, Value};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh root holding the tools of `name` (`document-analysis`: the example's) and a
/// `skills` folder.
fn root(dir: &Path, name: &str) -> PathBuf {
    let tools = match name {
        "document-analysis" => repo().join("examples/document-analysis/tools"),
        other => panic!("no root `{other}` for a model round session"),
    };
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("skills")).expect("the skills folder");
    let copied = Command::new("cp").arg("-R").arg(&tools).arg(root.join("tools")).status();
    assert!(copied.is_ok_and(|s| s.success()), "cannot copy {}", tools.display());
    root
}

/// The `--upstream` of a server a session names.
fn upstream(name: &str) -> String {
    match name {
        "shop" => {
            format!("shop='{}' '{}'", common::python::python().display(), repo().join("tests/mcp_py/shop.py").display())
        }
        other => panic!("no upstream `{other}` for a model round session"),
    }
}

/// What is wrong with a check's diagnostics against the expected ones.
fn compare_diagnostics(got: &Value, expected: &[Value]) -> Vec<String> {
    let diagnostics = got["diagnostics"].as_array().cloned().unwrap_or_default();
    let mut used = vec![false; diagnostics.len()];
    let mut problems = Vec::new();
    for e in expected {
        let hit = diagnostics.iter().enumerate().find(|(i, d)| {
            !used[*i]
                && d["code"] == e["code"]
                && (e.get("pointer").is_none() || d["pointer"] == e["pointer"])
                && e["help"].as_str().is_none_or(|h| d["help"].as_str().is_some_and(|dh| dh.contains(h)))
        });
        match hit {
            Some((i, _)) => used[i] = true,
            None => problems.push(format!("expected {e}")),
        }
    }
    for (d, u) in diagnostics.iter().zip(&used) {
        if !u && d["severity"] == "error" {
            problems.push(format!("unexpected {d}"));
        }
    }
    problems
}

/// Runs one session; its problems.
fn session(case: &Value) -> Vec<String> {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root(work.path(), case["root"].as_str().expect("a root"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--no-history", "--root"])
        .arg(&root)
        .arg("--skills")
        .arg(root.join("skills"))
        .current_dir(repo());
    for name in case["upstream"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        cmd.arg("--upstream").arg(upstream(name));
    }
    let mut client = StdioClient::start(&mut cmd);
    let mut problems = Vec::new();
    for (i, step) in case["session"].as_array().expect("a session").iter().enumerate() {
        if let Some(uri) = step["read"].as_str() {
            let answer = client.request("resources/read", json!({"uri": uri}));
            let text = answer["result"]["contents"][0]["text"].as_str().unwrap_or_default().to_string();
            for part in step["contains"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                if !text.contains(part) {
                    problems.push(format!("step {i}: {uri} does not say {part:?}:\n{text}"));
                }
            }
            continue;
        }
        let tool = step["tool"].as_str().expect("a tool or a resource to read");
        let result = client.call(tool, step["arguments"].clone());
        let content = &result["structuredContent"];
        if let Some(expected) = step["diagnostics"].as_array() {
            let found = compare_diagnostics(content, expected);
            problems.extend(found.into_iter().map(|p| format!("step {i} ({tool}): {p}\n{content:#}")));
        }
        if let Some(expected) = step["answer"].as_object() {
            for (k, want) in expected {
                if content[k] != *want {
                    problems.push(format!("step {i} ({tool}): `{k}` is {}, not {want}\n{result:#}", content[k]));
                }
            }
        }
    }
    problems
}

/// Every session of `tests/data/plans/model_round/` gets the answers its data gives.
#[test]
fn model_round_sessions() {
    let dir = repo().join("tests/data/plans/model_round");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the sessions")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no session in {}", dir.display());
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let case: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        failures.extend(session(&case).into_iter().map(|p| format!("{name}: {p}")));
    }
    assert!(failures.is_empty(), "{} problems:\n\n{}", failures.len(), failures.join("\n\n"));
}
