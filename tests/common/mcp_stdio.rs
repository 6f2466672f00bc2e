//! A minimal MCP client over a `tdsl serve --mcp` child's standard input and output: the
//! handshake, requests that wait for their answer (keeping the notifications read on the
//! way), and requests sent without waiting — for tests that look at what the server says,
//! not at how a client library reads it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command};

use serde_json::{json, Value};

use super::process::Process;

/// A `tdsl serve --mcp` over stdio, initialized.
pub struct StdioClient {
    /// The server's process (its standard error captured).
    pub process: Process,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: u64,
    /// The notifications read while waiting for answers, in order.
    pub notes: Vec<Value>,
}

impl StdioClient {
    /// Starts `cmd` (a `tdsl serve --mcp …`) and makes the handshake.
    pub fn start(cmd: &mut Command) -> StdioClient {
        let (process, stdin, stdout) = Process::spawn_piped("tdsl serve --mcp", cmd);
        let mut client = StdioClient { process, stdin, stdout: BufReader::new(stdout), id: 0, notes: Vec::new() };
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
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--root"]).arg(root);
    match history {
        Some(h) => cmd.arg("--history").arg(h),
        None => cmd.arg("--no-history"),
    };
    for u in upstreams {
        cmd.arg("--upstream").arg(u);
    }
    cmd.args(extra).envs(env.iter().copied());
    StdioClient::start(&mut cmd)
}
