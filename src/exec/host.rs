//! The runner of the command line (SPEC §7): `exec:` programs, `builtin:` tools, and
//! canned answers from a mock file.
//!
//! - `exec:<program> [args…]`: the words are split by POSIX shell quoting rules
//!   (`shell-words`; no shell is started). A program path with a `/` that is relative is
//!   resolved against the `.tool` file's folder; a bare name is looked up in `PATH`. The
//!   arguments go to its standard input as one JSON object; it prints one JSON value on
//!   standard output. Exit 0 is success, 75 (`EX_TEMPFAIL`) a transient error, anything
//!   else a permanent one, with its standard error in the message. On timeout or
//!   cancellation the program's whole process group is killed.
//! - `builtin:echo`: returns its arguments.
//! - `mcp:<command line>#<tool>`: the tool of an MCP server started over stdio, once per
//!   runner (see [`super::mcp`]).
//! - `http://…`, `https://…`: the arguments POSTed as JSON, the JSON body back (see
//!   [`super::http`]).
//! - A [`Mock`] answers for the tool paths it lists, before any endpoint is looked at.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::mcp::{McpClients, McpEndpoint};
use super::runner::{Runner, ToolCall, ToolError};
use crate::value::Value;

/// The exit status that means "try again later" (`EX_TEMPFAIL` from `sysexits.h`).
pub const EXIT_TRANSIENT: i32 = 75;

/// The builtins, by name.
pub const BUILTINS: &[&str] = &["echo"];

/// The command line's runner.
#[derive(Debug, Default)]
pub struct HostRunner {
    mock: Option<Mock>,
    mcp: McpClients,
}

impl HostRunner {
    /// A runner for `exec:` and `builtin:` endpoints.
    pub fn new() -> HostRunner {
        HostRunner::default()
    }

    /// Answers for the tools `mock` lists from it instead.
    pub fn with_mock(mut self, mock: Mock) -> HostRunner {
        self.mock = Some(mock);
        self
    }

    /// Whether the mock answers for a tool path.
    pub fn mocks(&self, tool_path: &str) -> bool {
        self.mock.as_ref().is_some_and(|m| m.entries.contains_key(tool_path))
    }
}

impl Runner for HostRunner {
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        if let Some(answer) = self.mock.as_ref().and_then(|m| m.answer(call.tool_path)) {
            return answer;
        }
        let Some(endpoint) = call.endpoint() else {
            return Err(ToolError::permanent(format!(
                "`{}` has no tool file and no mock answer: there is nothing to run",
                call.tool_path
            )));
        };
        if let Some(command) = endpoint.strip_prefix("exec:") {
            run_program(command, call)
        } else if let Some(name) = endpoint.strip_prefix("builtin:") {
            builtin(name.trim(), call)
        } else if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            super::http::call(endpoint.trim(), call)
        } else if let Some(spec) = endpoint.strip_prefix("mcp:") {
            let endpoint =
                McpEndpoint::parse(spec).map_err(|e| ToolError::permanent(format!("`{}`: {e}", call.tool_path)))?;
            self.mcp.call(&endpoint, call)
        } else {
            Err(ToolError::permanent(format!(
                "`{}`: the endpoint `{endpoint}` is not supported by this runner (use `exec:`, `builtin:`, `mcp:`, `http://` or `https://`)",
                call.tool_path
            )))
        }
    }
}

/// Whether this runner can run an endpoint, judged from its text alone (no program is
/// started, no file looked at): `Err` says why not. `tdsl check` reports it as `W0902`.
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let endpoint = endpoint.trim();
    if let Some(command) = endpoint.strip_prefix("exec:") {
        match shell_words::split(command) {
            Ok(words) if words.is_empty() => Err("`exec:` names no program".to_string()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("cannot split `{}` into words: {e}", command.trim())),
        }
    } else if let Some(name) = endpoint.strip_prefix("builtin:") {
        if BUILTINS.contains(&name.trim()) {
            Ok(())
        } else {
            Err(format!(
                "there is no builtin `{}` (the builtins are {})",
                name.trim(),
                BUILTINS.iter().map(|b| format!("`builtin:{b}`")).collect::<Vec<_>>().join(", ")
            ))
        }
    } else if let Some(spec) = endpoint.strip_prefix("mcp:") {
        McpEndpoint::parse(spec).map(|_| ())
    } else if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        Ok(())
    } else {
        Err(format!(
            "`{endpoint}` is not an endpoint the command line's runner knows: \
             `exec:`, `builtin:`, `mcp:`, `http://` or `https://`"
        ))
    }
}

fn builtin(name: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
    match name {
        "echo" => Ok(call.arguments.clone()),
        other => Err(ToolError::permanent(format!(
            "`{}`: there is no builtin `{other}` (the builtins are {})",
            call.tool_path,
            BUILTINS.iter().map(|b| format!("`builtin:{b}`")).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The program to start: relative paths with a `/` are relative to the tool file's folder.
fn program_path(program: &str, tool_file: Option<&Path>) -> PathBuf {
    let p = Path::new(program);
    match tool_file.and_then(Path::parent) {
        Some(dir) if program.contains('/') && p.is_relative() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

fn run_program(command: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
    let tool = call.tool_path;
    let words = shell_words::split(command)
        .map_err(|e| ToolError::permanent(format!("`{tool}`: cannot split `exec:{command}` into words: {e}")))?;
    let Some((program, args)) = words.split_first() else {
        return Err(ToolError::permanent(format!("`{tool}`: `exec:` names no program")));
    };
    let path = program_path(program, call.file);
    let mut cmd = Command::new(&path);
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).env("TDSL_TOOL", tool);
    #[cfg(unix)]
    {
        // Its own process group, so that a timeout kills what it started too.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child =
        cmd.spawn().map_err(|e| ToolError::permanent(format!("`{tool}`: cannot start {}: {e}", path.display())))?;
    let input = serde_json::to_vec(call.arguments).unwrap_or_default();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // A program that does not read its input closes the pipe: not an error.
            let _ = s.write_all(&input);
        }
    });
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(ToolError::permanent(format!("`{tool}`: cannot wait for {}: {e}", path.display()))),
        }
        // The engine cancels a call whose time is up; this bound is a backstop for hosts that
        // call the runner directly, late enough never to win the race with the engine.
        let timed_out = call.timeout.is_some_and(|t| started.elapsed() >= t + Duration::from_millis(500));
        if timed_out || call.cancel.is_cancelled() {
            kill(&mut child);
            let _ = writer.join();
            let why = if timed_out { "timed out" } else { "was cancelled" };
            return Err(ToolError::transient(format!("`{tool}`: {} {why} and was killed", path.display())));
        }
        call.cancel.wait(Duration::from_millis(5));
    };
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr);
    let stderr = stderr.trim();
    let with_stderr = |m: String| if stderr.is_empty() { m } else { format!("{m}: {stderr}") };
    match status.code() {
        Some(0) => {
            let text = String::from_utf8_lossy(&stdout);
            if text.trim().is_empty() {
                return Err(ToolError::permanent(format!(
                    "`{tool}`: {} printed nothing; a tool prints one JSON value",
                    path.display()
                )));
            }
            serde_json::from_str::<Value>(&text)
                .map_err(|e| ToolError::permanent(format!("`{tool}`: {} printed invalid JSON ({e})", path.display())))
        }
        Some(EXIT_TRANSIENT) => Err(ToolError::transient(with_stderr(format!(
            "`{tool}`: {} exited with status {EXIT_TRANSIENT} (try again)",
            path.display()
        )))),
        Some(code) => {
            Err(ToolError::permanent(with_stderr(format!("`{tool}`: {} exited with status {code}", path.display()))))
        }
        None => Err(ToolError::permanent(with_stderr(format!("`{tool}`: {} was killed by a signal", path.display())))),
    }
}

fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Kills the child's process group (what it started too), then the child.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        let group = format!("-{}", child.id());
        let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).stderr(Stdio::null()).status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Canned answers for `--mock FILE` (format in `docs/execution.md`).
#[derive(Debug, Default)]
pub struct Mock {
    entries: HashMap<String, Entry>,
    calls: Mutex<HashMap<String, usize>>,
}

#[derive(Clone, Debug)]
enum Answer {
    Value(Value),
    Error { transient: bool, message: String },
}

#[derive(Clone, Debug)]
enum Entry {
    /// The answers of successive calls; the last one repeats.
    Sequence(Vec<Answer>),
}

impl Mock {
    /// Reads a mock file's JSON: an object from tool path to its answers.
    pub fn from_json(text: &str) -> Result<Mock, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("the mock is not JSON: {e}"))?;
        let Some(map) = v.as_object() else {
            return Err(format!("the mock must be an object from tool path to answer, and it is {:#}", v.kind()));
        };
        let mut entries = HashMap::new();
        for (tool, spec) in map.iter() {
            let entry = entry(spec).map_err(|e| format!("mock `{tool}`: {e}"))?;
            entries.insert(tool.to_string(), entry);
        }
        Ok(Mock { entries, calls: Mutex::new(HashMap::new()) })
    }

    /// The tool paths it answers for, sorted.
    pub fn tools(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.entries.keys().map(String::as_str).collect();
        t.sort_unstable();
        t
    }

    fn answer(&self, tool: &str) -> Option<Result<Value, ToolError>> {
        let Entry::Sequence(answers) = self.entries.get(tool)?;
        let n = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            let c = calls.entry(tool.to_string()).or_insert(0);
            *c += 1;
            *c - 1
        };
        let a = answers.get(n).or(answers.last())?;
        Some(match a {
            Answer::Value(v) => Ok(v.clone()),
            Answer::Error { transient: true, message } => Err(ToolError::transient(message.clone())),
            Answer::Error { transient: false, message } => Err(ToolError::permanent(message.clone())),
        })
    }
}

fn entry(spec: &Value) -> Result<Entry, String> {
    match spec {
        Value::List(items) if items.is_empty() => Err("a list of answers cannot be empty".to_string()),
        Value::List(items) => Ok(Entry::Sequence(items.iter().map(answer).collect::<Result<_, _>>()?)),
        Value::Object(m) if m.contains_key("$fail_transiently") => {
            let n = match m.get("$fail_transiently") {
                Some(Value::Int(n)) if *n >= 0 => *n as usize,
                _ => return Err("`$fail_transiently` takes a number of failures".to_string()),
            };
            let message = m.get("$error").and_then(Value::as_str).unwrap_or("mock: transient failure").to_string();
            let then = m.get("$then").ok_or("`$fail_transiently` needs `$then`, the answer after the failures")?;
            let mut seq = vec![Answer::Error { transient: true, message }; n];
            seq.push(answer(then)?);
            Ok(Entry::Sequence(seq))
        }
        other => Ok(Entry::Sequence(vec![answer(other)?])),
    }
}

fn answer(spec: &Value) -> Result<Answer, String> {
    let Value::Object(m) = spec else { return Ok(Answer::Value(spec.clone())) };
    if !m.keys().any(|k| k.starts_with('$')) {
        return Ok(Answer::Value(spec.clone()));
    }
    for k in m.keys() {
        if !["$response", "$error", "$transient"].contains(&&**k) {
            return Err(format!(
                "unknown key `{k}` (known: `$response`, `$error`, `$transient`, `$fail_transiently`, `$then`)"
            ));
        }
    }
    if let Some(v) = m.get("$response") {
        return Ok(Answer::Value(v.clone()));
    }
    match m.get("$error") {
        Some(Value::Str(message)) => Ok(Answer::Error {
            transient: matches!(m.get("$transient"), Some(Value::Bool(true))),
            message: message.to_string(),
        }),
        _ => Err("`$error` takes the error message".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(mock: &Mock, tool: &str, n: usize) -> Vec<Result<String, String>> {
        (0..n).map(|_| mock.answer(tool).expect("mocked").map(|v| v.to_string()).map_err(|e| e.message)).collect()
    }

    #[test]
    fn mock_forms() {
        let m = Mock::from_json(
            r#"{
              "/a.tool": {"x": 1},
              "/b.tool": [{"n": 1}, {"$error": "busy", "$transient": true}, {"n": 3}],
              "/c.tool": {"$fail_transiently": 2, "$then": {"ok": true}},
              "/d.tool": {"$response": [1, 2]}
            }"#,
        )
        .expect("valid mock");
        assert_eq!(answers(&m, "/a.tool", 2), [Ok(r#"{"x":1}"#.to_string()), Ok(r#"{"x":1}"#.to_string())]);
        assert_eq!(
            answers(&m, "/b.tool", 4),
            [Ok(r#"{"n":1}"#.into()), Err("busy".into()), Ok(r#"{"n":3}"#.into()), Ok(r#"{"n":3}"#.into())]
        );
        let c = answers(&m, "/c.tool", 3);
        assert!(c[0].is_err() && c[1].is_err());
        assert_eq!(c[2], Ok(r#"{"ok":true}"#.to_string()));
        assert_eq!(answers(&m, "/d.tool", 1), [Ok("[1,2]".to_string())]);
        assert!(m.answer("/other.tool").is_none());
        assert!(Mock::from_json(r#"{"/x.tool": {"$eror": "typo"}}"#).unwrap_err().contains("unknown key `$eror`"));
    }

    #[test]
    fn relative_programs_resolve_against_the_tool_file() {
        let file = Path::new("/root/tools/x.tool");
        assert_eq!(program_path("./bin/run.sh", Some(file)), Path::new("/root/tools/./bin/run.sh"));
        assert_eq!(program_path("sh", Some(file)), Path::new("sh"));
        assert_eq!(program_path("/bin/sh", Some(file)), Path::new("/bin/sh"));
    }
}
