//! The official Python MCP SDK against tdsl: its stdio client (`tests/mcp_py/client.py`)
//! drives `tdsl serve --mcp` over the tools of `tests/data/mcp`, and the same client checks
//! the SDK server of `tests/mcp_py/server.py` that the `mcp:` endpoint tests call.
//!
//! The SDK, pinned in `tests/mcp_py/requirements.txt`, lives in a virtual environment at
//! `target/py-venv` that `scripts/python-env` makes on the first run (python3 and PyPI are
//! needed then). Without python3 these tests fail, saying so: they do not skip.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::python::python;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one scenario of `client.py` (`common::python::client`).
fn client(scenario: &str, args: &[&Path]) {
    common::python::client(&[], scenario, args);
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

fn root() -> PathBuf {
    repo().join("tests/data/mcp")
}

/// initialize; tools/list (names and schemas); a call's structuredContent; bad arguments are
/// tool errors naming the argument, and the session goes on.
#[test]
fn the_python_client_lists_and_calls_tools() {
    client("tools", &[tdsl(), &root()]);
}

/// A failing primitive's error names its tool path once (it once said
/// ``FAILED: `/tools/fail.tool`: `/tools/fail.tool`: …``).
#[test]
fn a_failing_primitive_names_its_tool_path_once() {
    client("primitive-error", &[tdsl(), &root()]);
}

/// A composite's sleeping step and a sleeping primitive are cancelled by the client
/// (`notifications/cancelled`): their processes are gone within 5 s, and the server goes on.
#[test]
fn the_python_client_cancels_running_calls() {
    let work = tempfile::tempdir().expect("tempdir");
    client("cancel", &[tdsl(), &root(), work.path()]);
}

/// A client that sends a progress token gets one notification per step while a composite
/// of three 0.3 s steps runs.
#[test]
fn the_python_client_gets_progress_notifications() {
    client("progress", &[tdsl(), &root()]);
}

/// Every progress notification must come before the call's result: the SDK drops later
/// ones (the protocol allows progress only for a request in progress). The server once let
/// the result overtake them (`echoes` lost one or two of its three).
#[test]
fn the_python_client_gets_every_progress_notification_before_the_result() {
    client("progress-before-result", &[tdsl(), &root()]);
}

/// The SDK server the `mcp:` endpoint tests call answers as `tests/mcp_py/server.py` says.
#[test]
fn the_python_test_server_serves_its_tools() {
    client("python-server", &[]);
}

/// Runs the real `tdsl` binary.
fn tdsl_run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(tdsl()).args(args).env("NO_COLOR", "1").output().expect("tdsl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A root whose primitive tools are `mcp:` endpoints into the SDK server of
/// `tests/mcp_py/server.py`, and a composite that calls two of them.
fn python_endpoints_root(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("py")).expect("mkdir");
    let server = format!("mcp:'{}' '{}'", python().display(), repo().join("tests/mcp_py/server.py").display());
    let tools = [
        (
            "add",
            r#"{"arguments": [{"name": "a", "type_name": "integer", "required": true},
                              {"name": "b", "type_name": "integer", "required": true}],
                "responses": [{"name": "sum", "type_name": "integer", "required": true}]"#,
        ),
        ("shout", r#"{"arguments": [{"name": "text", "type_name": "string", "required": true}]"#),
        ("fail", r#"{"arguments": [{"name": "message", "type_name": "string", "required": true}]"#),
        (
            "flaky",
            r#"{"arguments": [{"name": "key", "type_name": "string", "required": true},
                              {"name": "failures", "type_name": "integer", "required": true}]"#,
        ),
        // Declared wrong on purpose: the server takes integers.
        (
            "add_wrong",
            r#"{"arguments": [{"name": "a", "type_name": "string", "required": true}],
                "responses": [{"name": "total", "type_name": "integer"}]"#,
        ),
    ];
    for (name, head) in tools {
        let tool = name.trim_end_matches("_wrong");
        std::fs::write(
            root.join(format!("py/{name}.tool")),
            format!(r#"{head}, "system_event_endpoint": "{}#{tool}"}}"#, server.replace('"', "\\\"")),
        )
        .expect("write");
    }
    std::fs::write(
        root.join("main.tool"),
        r#"{"arguments": [{"name": "x", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "add", "tool_definition_path": "/py/add.tool", "arguments": {"a": "REF:arguments.x", "b": 40}},
    {"execution_id": "shout", "tool_definition_path": "/py/shout.tool", "arguments": {"text": "hi"}}
  ],
  "responses": [{"name": "sum", "type_name": "integer", "required": true},
                {"name": "loud", "type_name": "string", "required": true}],
  "response_reference_map": {"sum": "REF:add.sum", "loud": "REF:shout.response"}
}"#,
    )
    .expect("write");
    std::fs::write(
        root.join("fails.tool"),
        r#"{"instructions": [{"execution_id": "f", "tool_definition_path": "/py/fail.tool", "arguments": {"message": "boom"}}]}"#,
    )
    .expect("write");
    std::fs::write(
        root.join("retries.tool"),
        r#"{"instructions": [{"execution_id": "f", "tool_definition_path": "/py/flaky.tool",
             "arguments": {"key": "k", "failures": 1}, "retry": {"max_retries": 2, "base_delay_seconds": 0.1}}],
            "response_reference_map": {"calls": "REF:f.calls"}}"#,
    )
    .expect("write");
    root
}

/// `mcp:` endpoints into a server written with the Python SDK: structured and text results,
/// a tool error (permanent: not retried), and the schema check of `tdsl check --mcp-schemas`.
#[test]
fn mcp_endpoints_call_a_server_written_with_the_python_sdk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = python_endpoints_root(dir.path());
    let r = root.to_str().expect("utf-8");
    let main = root.join("main.tool");
    let (code, stdout, stderr) = tdsl_run(&["run", main.to_str().expect("utf-8"), "--root", r, "--arg", "x=2"]);
    assert_eq!(code, 0, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    // `add` answers with structuredContent, `shout` with a text block only.
    assert_eq!(result, serde_json::json!({"sum": 42, "loud": "HI"}));

    let fails = root.join("fails.tool");
    let trace = dir.path().join("trace.json");
    let (code, _, stderr) =
        tdsl_run(&["run", fails.to_str().expect("utf-8"), "--root", r, "--trace", trace.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("the MCP tool `fail`") && stderr.contains("boom"), "{stderr}");
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    assert_eq!(t["step_results"][0]["attempts"][0]["outcome"], "permanent", "{t}");

    // The SDK's tool errors are permanent, so `flaky` fails at once whatever the retry says.
    let retries = root.join("retries.tool");
    let (code, _, stderr) = tdsl_run(&["run", retries.to_str().expect("utf-8"), "--root", r]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("call 1 of 'k' fails"), "{stderr}");

    // The declarations against the server's schemas: the right ones are clean, the wrong
    // one gets an error per contradiction.
    let py = root.join("py");
    let (code, stdout, stderr) =
        tdsl_run(&["check", py.to_str().expect("utf-8"), "--root", r, "--mcp-schemas", "--format", "json"]);
    assert_eq!(code, 1, "{stderr}");
    let diags: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("JSON");
    let found: Vec<(String, String)> = diags
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().expect("file")).file_name().expect("name").to_string_lossy();
            (file.into_owned(), format!("{} {}", d["code"].as_str().expect("code"), d["message"].as_str().expect("m")))
        })
        .collect();
    let expected = [
        ("add_wrong.tool", "E0902 the MCP tool `add` requires the argument `b`, which this file does not declare"),
        ("add_wrong.tool", "E0902 the MCP tool `add` has the argument `a` as integer, declared `string` here"),
        ("add_wrong.tool", "E0902 the MCP tool `add` does not return `total`"),
    ];
    let found: Vec<(&str, &str)> = found.iter().map(|(f, m)| (f.as_str(), m.as_str())).collect();
    assert_eq!(found, expected, "{stderr}");
}
