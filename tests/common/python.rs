//! The Python side of the MCP tests: the virtual environment with the pinned MCP SDK, and
//! the scenarios of its client, `tests/mcp_py/client.py`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use super::process::Process;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The virtual environment's python, made by `scripts/python-env` once per test binary.
pub fn python() -> &'static Path {
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

/// Runs one scenario of `client.py` (with `options`, such as `--http`, before it) and fails
/// the test with its output unless it passes. A scenario that hangs is killed after two
/// minutes.
pub fn client(options: &[&str], scenario: &str, args: &[&Path]) {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/mcp_py/client.py")).args(options).arg(scenario).args(args);
    let mut process = Process::spawn(&format!("client.py {scenario}"), &mut cmd);
    let status = process.exit_within(Duration::from_secs(120));
    assert!(status.success(), "client.py {scenario} failed ({status}):\n{}", process.output());
}
