//! The official Python MCP SDK's Streamable HTTP client (`tests/mcp_py/client.py --http`)
//! against `tdsl serve --mcp --listen 127.0.0.1:0`: the scenarios of the stdio tests
//! (tests/mcp_python.rs) — list and call, progress, cancellation — and logging. Each
//! scenario ends the server with SIGTERM and checks that it exits with status 0.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one scenario of `client.py` (`common::python::client`).
fn client(scenario: &str, args: &[&Path]) {
    common::python::client(&["--http"], scenario, args);
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

fn root() -> PathBuf {
    repo().join("tests/data/mcp")
}

/// initialize; tools/list (names and schemas); results; bad arguments are tool errors.
#[test]
fn the_python_http_client_lists_and_calls_tools() {
    client("tools", &[tdsl(), &root()]);
}

/// Progress notifications arrive on the call's SSE stream, all before the result.
#[test]
fn the_python_http_client_gets_every_progress_notification_before_the_result() {
    client("progress-before-result", &[tdsl(), &root()]);
}

/// A cancelled call's processes are gone within 5 s, and the session goes on.
#[test]
fn the_python_http_client_cancels_running_calls() {
    let work = tempfile::tempdir().expect("tempdir");
    client("cancel", &[tdsl(), &root(), work.path()]);
}

/// `logging/setLevel` then `notifications/message` for each step started.
#[test]
fn the_python_http_client_sets_the_log_level_and_gets_step_messages() {
    client("logging", &[tdsl(), &root()]);
}

/// The same over stdio: the logging capability is the server's, whatever the transport.
#[test]
fn the_python_stdio_client_gets_step_messages_too() {
    common::python::client(&[], "logging", &[tdsl(), &root()]);
}
