//! The official Python MCP SDK's Streamable HTTP client (`tests/mcp_py/client.py --http`)
//! against `tdsl serve --mcp --listen 127.0.0.1:0`: the scenarios of the stdio tests
//! (tests/mcp_python.rs) — list and call, progress, cancellation — and logging. Each
//! scenario ends the server with SIGTERM and checks that it exits with status 0.
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
        .arg("--http")
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
    let out = Command::new(python())
        .arg(repo().join("tests/mcp_py/client.py"))
        .arg("logging")
        .arg(tdsl())
        .arg(root())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "client.py logging (stdio) failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
