//! A minimal MCP client over a `tdsl serve --mcp` child's standard input and output: the
//! handshake, requests that wait for their answer (keeping the notifications read on the
//! way), requests sent without waiting, and the end of the session — for tests that look at
//! what the server says, not at how a client library reads it. [`serve_upstreams`] starts
//! `tdsl serve --mcp --plans` with upstream servers (scripted ones from `upstream`, or
//! `tests/mcp_py`'s under the Python environment's `python`) and makes the handshake:
//!
//! ```ignore
//! let mut client = serve_upstreams(&root, &[format!("up={}", script.display())], None, &[], &[]);
//! let answer = client.call("run_plan", json!({"plan": plan}));
//! let ended = client.finish(Duration::from_secs(10));
//! assert!(ended.status.success(), "{}", ended.output);
//! ```
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus};
use std::time::Duration;

use serde_json::{json, Value};

use super::process::Process;

/// A `tdsl serve --mcp` over stdio, initialized.
pub struct StdioClient {
    /// The server's process (its standard error captured).
    pub process: Process,
    /// Its input, until [`StdioClient::finish`] closes it.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    id: u64,
    /// The notifications read while waiting for answers, in order.
    pub notes: Vec<Value>,
}

/// How a session ended ([`StdioClient::finish`]).
pub struct Finished {
    /// What the server said after the last answer waited for: the notifications read before
    /// (`notes`), then every message to the end of its output, in order.
    pub messages: Vec<Value>,
    /// How it exited.
    pub status: ExitStatus,
    /// What it wrote on its standard error.
    pub output: String,
}

impl StdioClient {
    /// Starts `cmd` (a `tdsl serve --mcp …`) and makes the handshake.
    pub fn start(cmd: &mut Command) -> StdioClient {
        let (process, stdin, stdout) = Process::spawn_piped("tdsl serve --mcp", cmd);
        let mut client =
            StdioClient { process, stdin: Some(stdin), stdout: BufReader::new(stdout), id: 0, notes: Vec::new() };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "tdsl", "{init}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// Writes one message.
    pub fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("the input is open until `finish`");
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends a request without waiting for its answer; its id.
    pub fn start_request(&mut self, method: &str, params: Value) -> u64 {
        self.id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}));
        self.id
    }

    /// Sends a request and reads until its answer, which it returns whole.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params);
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed its output:\n{}", self.process.output());
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v["id"] == json!(id) {
                return v;
            }
            self.notes.push(v);
        }
    }

    /// Reads until the answer to request `id`, or until the server closes its output
    /// (`None`).
    pub fn answer_or_end(&mut self, id: u64) -> Option<Value> {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v["id"] == json!(id) {
                return Some(v);
            }
            self.notes.push(v);
        }
    }

    /// `tools/call`: the result.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))["result"].clone()
    }

    /// Ends the session as a client that is done does: closes the server's input, reads its
    /// output to the end and waits for it to exit; past `watchdog` it is killed and the test
    /// fails, with its standard error.
    pub fn finish(mut self, watchdog: Duration) -> Finished {
        self.stdin = None;
        let mut messages = std::mem::take(&mut self.notes);
        // Read on a thread: a server that never exits is killed at the watchdog, which ends
        // its output.
        let stdout = self.stdout;
        let rest = std::thread::spawn(move || -> Vec<Value> {
            stdout.lines().map_while(Result::ok).map(|l| serde_json::from_str(&l).expect("JSON")).collect()
        });
        let status = self.process.exit_within(watchdog);
        let output = self.process.output();
        messages.extend(rest.join().unwrap_or_else(|_| panic!("the server's output is not JSON lines:\n{output}")));
        Finished { messages, status, output }
    }
}

/// `tdsl serve --mcp --plans --root ROOT` over stdio with these upstream servers (each
/// `NAME=COMMAND`), writing its run history to `history` (`None`: `--no-history`), with
/// `extra` arguments and `env` variables; initialized, its standard error captured
/// (`process`, for the lines the operator reads).
pub fn serve_upstreams(
    root: &Path,
    upstreams: &[String],
    history: Option<&Path>,
    extra: &[&str],
    env: &[(&str, &str)],
) -> StdioClient {
    let mut cmd = serve_command(root, history, extra);
    for u in upstreams {
        cmd.arg("--upstream").arg(u);
    }
    StdioClient::start(cmd.envs(env.iter().copied()))
}

/// `tdsl serve --mcp --plans --root ROOT` writing its run history to `history` (`None`:
/// `--no-history`), with `extra` arguments: the command [`serve_upstreams`] starts, for a
/// test that runs it otherwise (with no client, say).
pub fn serve_command(root: &Path, history: Option<&Path>, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--root"]).arg(root);
    match history {
        Some(h) => cmd.arg("--history").arg(h),
        None => cmd.arg("--no-history"),
    };
    cmd.args(extra);
    cmd
}
