//! The official Python MCP SDK against tdsl: its stdio client (`tests/mcp_py/client.py`)
//! drives `tdsl serve --mcp` over the tools of `tests/data/mcp`, and the same client checks
//! the SDK server of `tests/mcp_py/server.py` that the `mcp:` endpoint tests call.
//!
//! The SDK, pinned in `tests/mcp_py/requirements.txt`, lives in a virtual environment at
//! `target/py-venv` that `scripts/python-env` makes on the first run (python3 and PyPI are
//! needed then). Without python3 these tests fail, saying so: they do not skip.
#![cfg(unix)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The virtual environment's python, made by `scripts/python-env` once per test binary.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let script = repo().join("scripts/python-env");
        let out =
            Command::new("sh").arg(&script).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "scripts/python-env failed ({}); the MCP tests need python3 (3.10 or newer) and, \
             the first time, PyPI:\n{stderr}",
            out.status
        );
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        assert!(path.is_file(), "scripts/python-env printed {path:?}, which is not a file:\n{stderr}");
        path
    })
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one scenario of `client.py` and fails the test with its output unless it passes.
/// A scenario that hangs is killed after two minutes.
fn client(scenario: &str, args: &[&Path]) {
    let mut child = Command::new(python())
        .arg(repo().join("tests/mcp_py/client.py"))
        .arg(scenario)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    // Read both pipes while waiting, so a chatty scenario cannot block on a full pipe.
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().expect("stdout"), err.join().expect("stderr"));
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!("client.py {scenario} failed ({s}):\n{out}\n{err}"),
        None => panic!("client.py {scenario} hung for two minutes and was killed:\n{out}\n{err}"),
    }
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
