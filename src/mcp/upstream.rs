//! Upstream MCP servers (`tdsl serve --mcp --plans --upstream NAME=COMMAND|URL`): every tool
//! of such a server is callable from plans as `NAME/TOOL`, checked against the schemas its
//! `tools/list` gives and listed in `tdsl://tools`.
//!
//! The client is the `mcp:` endpoints' ([`McpClients`]): a server starts (or is connected
//! to) on first use — the first plan or listing that needs its tools — and is shut down as
//! `mcp:` servers are, when the server ends ([`Upstreams::shut_down`]). A server that dies
//! or hangs fails the call that uses it (a transient error; a hang ends with the step's
//! timeout or the plan's deadline), and the next use starts it again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde_json::Value as Json;

use crate::exec::mcp::{McpClients, McpTarget};
use crate::exec::{ToolCall, ToolError};
use crate::value::Value;

/// One `--upstream NAME=COMMAND|URL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// The name plans use before the `/`.
    pub name: String,
    /// Where the server is.
    pub target: McpTarget,
}

/// Whether `name` may name an upstream: 1–64 of `[A-Za-z0-9_-]`.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl UpstreamSpec {
    /// Parses `NAME=COMMAND` (split into words like `exec:`) or `NAME=http(s)://…`.
    pub fn parse(arg: &str) -> Result<UpstreamSpec, String> {
        let Some((name, rest)) = arg.split_once('=') else {
            return Err(format!("--upstream {arg}: write NAME=COMMAND or NAME=URL"));
        };
        let name = name.trim();
        if !valid_name(name) {
            return Err(format!(
                "--upstream {arg}: the name `{name}` must be 1 to 64 letters, digits, `_` or `-` (plans call its tools as `{name}/TOOL`)"
            ));
        }
        let rest = rest.trim();
        let target = if crate::exec::mcp::is_url(rest) {
            // The message shows the URL as `check_url` does (no password, escapes shown).
            crate::exec::mcp::check_url(rest).map_err(|e| format!("--upstream {name}=…: {e}"))?;
            McpTarget::Url { url: rest.to_string(), token: None, ca: None }
        } else {
            let words =
                shell_words::split(rest).map_err(|e| format!("--upstream {arg}: cannot split the command: {e}"))?;
            if words.is_empty() {
                return Err(format!("--upstream {arg}: no command to start"));
            }
            McpTarget::Command(words)
        };
        Ok(UpstreamSpec { name: name.to_string(), target })
    }
}

/// Parses every `--upstream`, gives each `--upstream-token NAME=FILE` to its URL upstream
/// (the file must be private, as `--token-file`'s) and each `--upstream-ca NAME=FILE` to its
/// `https://` upstream (a PEM file of CA certificates, read now to refuse a bad one at start).
pub fn parse_upstreams(upstreams: &[String], tokens: &[String], cas: &[String]) -> Result<Vec<UpstreamSpec>, String> {
    let mut specs: Vec<UpstreamSpec> = Vec::new();
    for arg in upstreams {
        let spec = UpstreamSpec::parse(arg)?;
        if specs.iter().any(|s| s.name == spec.name) {
            return Err(format!("--upstream: two upstream servers are named `{}`", spec.name));
        }
        specs.push(spec);
    }
    for arg in tokens {
        let Some((name, file)) = arg.split_once('=') else {
            return Err(format!("--upstream-token {arg}: write NAME=FILE"));
        };
        let Some(spec) = specs.iter_mut().find(|s| s.name == name.trim()) else {
            return Err(format!("--upstream-token {arg}: there is no --upstream named `{}`", name.trim()));
        };
        let McpTarget::Url { token, .. } = &mut spec.target else {
            return Err(format!("--upstream-token {arg}: `{}` is started as a command, not reached by URL", spec.name));
        };
        *token = Some(read_token(Path::new(file.trim())).map_err(|e| format!("--upstream-token {arg}: {e}"))?);
    }
    for arg in cas {
        let Some((name, file)) = arg.split_once('=') else {
            return Err(format!("--upstream-ca {arg}: write NAME=FILE"));
        };
        let Some(spec) = specs.iter_mut().find(|s| s.name == name.trim()) else {
            return Err(format!("--upstream-ca {arg}: there is no --upstream named `{}`", name.trim()));
        };
        let McpTarget::Url { url, ca, .. } = &mut spec.target else {
            return Err(format!("--upstream-ca {arg}: `{}` is started as a command, not reached by URL", spec.name));
        };
        if !url.starts_with("https://") {
            return Err(format!("--upstream-ca {arg}: `{}` is reached over http://, a CA is for https://", spec.name));
        }
        if ca.is_some() {
            return Err(format!(
                "--upstream-ca {arg}: `{}` has a CA file already (put both in one PEM file)",
                spec.name
            ));
        }
        let file = Path::new(file.trim());
        check_ca_file(file).map_err(|e| format!("--upstream-ca {arg}: {e}"))?;
        // Absolute, so that it means the same file whatever the server's folder later.
        *ca = Some(std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
    }
    Ok(specs)
}

/// Whether `path` is a PEM file of CA certificates tdsl can trust.
#[cfg(feature = "mcp-http")]
fn check_ca_file(path: &Path) -> Result<(), String> {
    crate::exec::mcp_http::load_ca_file(path).map(|_| ())
}

#[cfg(not(feature = "mcp-http"))]
fn check_ca_file(_path: &Path) -> Result<(), String> {
    Err("this tdsl was built without the `mcp-http` feature".to_string())
}

/// The bearer token in `path` (as `--token-file` reads it).
#[cfg(feature = "mcp-http")]
fn read_token(path: &Path) -> Result<String, String> {
    super::http::read_token(path)
}

#[cfg(not(feature = "mcp-http"))]
fn read_token(_path: &Path) -> Result<String, String> {
    Err("this tdsl was built without the `mcp-http` feature".to_string())
}

/// The upstream servers of a plans server.
#[derive(Debug, Default)]
pub struct Upstreams {
    specs: Vec<UpstreamSpec>,
    clients: McpClients,
    /// Each server's `tools/list`, once it answered.
    listed: Mutex<HashMap<String, Vec<Json>>>,
}

impl Upstreams {
    /// The servers, none started yet.
    pub fn new(specs: Vec<UpstreamSpec>) -> Upstreams {
        Upstreams { specs, clients: McpClients::new(), listed: Mutex::new(HashMap::new()) }
    }

    /// The same servers, started with the environment `env` allows (`serve --clean-env`).
    pub fn with_env(mut self, env: crate::exec::host::ToolEnv) -> Upstreams {
        self.clients = self.clients.with_env(env);
        self
    }

    /// The upstream names, in the order given.
    pub fn names(&self) -> Vec<&str> {
        self.specs.iter().map(|s| s.name.as_str()).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    fn spec(&self, name: &str) -> Option<&UpstreamSpec> {
        self.specs.iter().find(|s| s.name == name)
    }

    /// The tools the server `name` lists (MCP `Tool` objects), starting it on first use.
    /// A server that answered once is not asked again. Blocking: call it off the async
    /// runtime.
    pub fn tools(&self, name: &str) -> Result<Vec<Json>, String> {
        if let Some(tools) = self.listed.lock().unwrap_or_else(PoisonError::into_inner).get(name) {
            return Ok(tools.clone());
        }
        let spec = self.spec(name).ok_or_else(|| format!("there is no upstream server `{name}`"))?;
        let tools = self
            .clients
            .list_target_tools(&spec.target)
            .map_err(|e| format!("the upstream server `{name}` ({}): {e}", shown(&spec.target)))?;
        self.listed.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_string(), tools.clone());
        Ok(tools)
    }

    /// Every server's tools, or why they could not be listed.
    pub fn all_tools(&self) -> Vec<(String, Result<Vec<Json>, String>)> {
        self.specs.iter().map(|s| (s.name.clone(), self.tools(&s.name))).collect()
    }

    /// Calls the tool `tool` of the server `server` with the call's arguments.
    pub fn call(&self, server: &str, tool: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        let Some(spec) = self.spec(server) else {
            return Err(ToolError::permanent(format!("`{}`: there is no upstream server `{server}`", call.tool_path)));
        };
        self.clients.call_target(&spec.target, tool, call)
    }

    /// Shuts every server down (their inputs closed, or their HTTP sessions ended). Call it
    /// outside any async runtime.
    pub fn shut_down(&self) {
        self.clients.shut_down();
    }
}

/// `NAME/TOOL` → (`NAME`, `TOOL`), for a name that could be an upstream's.
pub fn split_tool(tool_path: &str) -> Option<(&str, &str)> {
    let (name, tool) = tool_path.split_once('/')?;
    (valid_name(name) && !tool.is_empty() && !tool.contains('/')).then_some((name, tool))
}

fn shown(target: &McpTarget) -> String {
    match target {
        McpTarget::Command(c) => shell_words::join(c),
        McpTarget::Url { url, .. } => url.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_parse() {
        let s = UpstreamSpec::parse("docs=tdsl serve --mcp --root 'my root'").expect("parses");
        assert_eq!(s.name, "docs");
        assert_eq!(
            s.target,
            McpTarget::Command(vec!["tdsl".into(), "serve".into(), "--mcp".into(), "--root".into(), "my root".into()])
        );
        let s = UpstreamSpec::parse("web=http://127.0.0.1:9000/mcp").expect("parses");
        assert_eq!(s.target, McpTarget::Url { url: "http://127.0.0.1:9000/mcp".into(), token: None, ca: None });
        let s = UpstreamSpec::parse("web=https://mcp.example.org/mcp").expect("parses");
        assert_eq!(s.target, McpTarget::Url { url: "https://mcp.example.org/mcp".into(), token: None, ca: None });
        assert!(UpstreamSpec::parse("web=https:///mcp").unwrap_err().contains("is not a URL"));
        assert!(UpstreamSpec::parse("docs").unwrap_err().contains("NAME=COMMAND"));
        assert!(UpstreamSpec::parse("a/b=x").unwrap_err().contains("must be 1 to 64"));
        assert!(UpstreamSpec::parse("a=").unwrap_err().contains("no command"));
        assert!(UpstreamSpec::parse("a='x").unwrap_err().contains("cannot split"));
        assert!(parse_upstreams(&["a=x".into(), "a=y".into()], &[], &[]).unwrap_err().contains("two upstream"));
        assert!(parse_upstreams(&["a=x".into()], &["b=f".into()], &[])
            .unwrap_err()
            .contains("no --upstream named `b`"));
        assert!(parse_upstreams(&["a=x".into()], &["a=f".into()], &[]).unwrap_err().contains("started as a command"));
    }

    #[test]
    fn upstream_tool_names_split() {
        assert_eq!(split_tool("docs/extract"), Some(("docs", "extract")));
        assert_eq!(split_tool("/tools/a.tool"), None);
        assert_eq!(split_tool("docs/a/b"), None);
        assert_eq!(split_tool("docs/"), None);
    }
}
