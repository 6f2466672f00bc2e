//! `mcp:<command line>#<tool>` endpoints: primitive tools served by an MCP server that the
//! runner starts over stdio, with the official Rust SDK ([`rmcp`]) as the client.
//!
//! - The command line is split like `exec:`'s (POSIX shell words, no shell); a relative
//!   program path with a `/` resolves against the `.tool` file's folder. The tool name is
//!   what follows the last `#`.
//! - Each distinct command line is started once, on its first call, and shared by every
//!   step that uses it (calls go to it concurrently) for as long as the [`McpClients`]
//!   lives: the command line makes one per run. It is shut down when the `McpClients` is
//!   dropped: its standard input is closed and it has 3 s to exit, then SIGTERM, then it is
//!   killed.
//! - Errors: a result with `isError: true` and a JSON-RPC error from the server (an unknown
//!   tool, invalid arguments) are permanent; a server that cannot be started is permanent;
//!   a server that dies, closes the connection or fails the handshake is transient, and the
//!   next call starts it again. The last lines the server wrote to standard error come with
//!   the error as its [`ToolError::stderr_tail`], apart from the message: they are for the
//!   operator, and the front end chooses where they go ([`crate::host::StderrTails`]).
//! - Result: `structuredContent` when the server sends it; otherwise the text of a single
//!   text block, parsed as JSON when it is JSON and kept as a string when not; several
//!   blocks give a list (text blocks as above, other blocks as their JSON).
//! - Cancellation: when the engine cancels the call (timeout, deadline, a cancelled run),
//!   the client sends `notifications/cancelled` for the request and returns at once.

pub(crate) mod answers;
#[cfg(feature = "mcp-http")]
pub(crate) mod http;
mod listing;
mod result;
mod stderr;
mod stdio;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ClientRequest,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value as Json;

use crate::exec::{CancelToken, ToolCall, ToolError};
use crate::value::Value;
use result::{result_value, said};

/// How long a server has to start and answer `initialize`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server whose call was cancelled has to answer a ping before its next use;
/// without an answer it is taken as hung, stopped and started anew.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// An `mcp:` endpoint, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct McpEndpoint {
    /// The server: a command line (its program not yet resolved) or a URL.
    pub server: McpTarget,
    /// The tool to call.
    pub tool: String,
}

impl McpEndpoint {
    /// Parses what follows `mcp:`: `<command line>#<tool>` or `<http(s) URL>#<tool>`.
    pub(crate) fn parse(spec: &str) -> Result<McpEndpoint, String> {
        let Some((server, tool)) = spec.rsplit_once('#') else {
            return Err(format!("`mcp:{spec}` names no tool: write `mcp:<command line>#<tool>` or `mcp:<URL>#<tool>`"));
        };
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("`mcp:{spec}` names no tool after `#`"));
        }
        let server = server.trim();
        if is_url(server) {
            check_url(server).map_err(|e| format!("`mcp:{spec}`: {e}"))?;
            let url = McpTarget::Url { url: server.to_string(), token: None, ca: None };
            return Ok(McpEndpoint { server: url, tool: tool.to_string() });
        }
        let command = shell_words::split(server).map_err(|e| format!("cannot split `{server}` into words: {e}"))?;
        if command.is_empty() {
            return Err(format!("`mcp:{spec}` names no program to start"));
        }
        Ok(McpEndpoint { server: McpTarget::Command(command), tool: tool.to_string() })
    }

    /// The server, a command's program resolved against the tool file's folder.
    fn resolved(&self, tool_file: Option<&Path>) -> McpTarget {
        let mut server = self.server.clone();
        if let McpTarget::Command(command) = &mut server {
            if let Some(program) = command.first_mut() {
                *program = crate::host::env::program_path(program, tool_file).to_string_lossy().into_owned();
            }
        }
        server
    }
}

/// Whether an MCP server is written as a URL (`http://…` or `https://…`), not a command.
pub(crate) fn is_url(server: &str) -> bool {
    server.starts_with("http://") || server.starts_with("https://")
}

/// Whether `url` (`http://…` or `https://…`) has a host, a port (when written) of 1–65535,
/// no user name or password, and no spaces, control or non-ASCII characters. Messages show
/// the URL with its control characters escaped and without its password.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let after = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).unwrap_or(url);
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    if let Some((userinfo, host)) = authority.rsplit_once('@') {
        let scheme = if url.starts_with("https://") { "https://" } else { "http://" };
        let user = userinfo.split(':').next().unwrap_or("");
        return Err(format!(
            "`{scheme}{}…@{}`: a user name or password in the URL is not sent; a bearer token is given with \
             --upstream-token NAME=FILE",
            crate::plans::escape_controls(user),
            crate::plans::escape_controls(host)
        ));
    }
    let shown = || crate::plans::escape_controls(url);
    if !is_url(url) || authority.is_empty() || authority.starts_with(':') || url.chars().any(char::is_whitespace) {
        return Err(format!("`{}` is not a URL", shown()));
    }
    if url.chars().any(char::is_control) {
        return Err(format!("`{}` is not a URL: it holds a control character", shown()));
    }
    if !authority.is_ascii() {
        return Err(format!(
            "`{}`: the host has non-ASCII characters; write it in its ASCII form (`xn--…`, as `idn2` gives it)",
            shown()
        ));
    }
    // The port after the host (an IPv6 address is in brackets): empty is the scheme's.
    let port = match authority.rsplit_once(']') {
        Some((_, rest)) => rest.strip_prefix(':'),
        None => authority.rsplit_once(':').map(|(_, p)| p),
    };
    if let Some(port) = port.filter(|p| !p.is_empty()) {
        if !port.parse::<u16>().is_ok_and(|p| p > 0) {
            return Err(format!("`{}`: the port `{port}` is not one of 1–65535", shown()));
        }
    }
    Ok(())
}

/// Where an MCP server is: a command line started over stdio, or (feature `mcp-http`) a
/// Streamable HTTP URL with an optional bearer token (which `Debug` does not show).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum McpTarget {
    /// The program and its arguments, resolved.
    Command(Vec<String>),
    /// An `http://` or `https://` URL, the bearer token to send and the extra CA to trust.
    Url {
        /// The server's MCP endpoint (`http://127.0.0.1:8080/mcp`).
        url: String,
        /// Sent as `Authorization: Bearer <token>` when set.
        token: Option<String>,
        /// A PEM file of CA certificates trusted for this `https://` server besides the
        /// default roots (`--upstream-ca NAME=FILE`).
        ca: Option<std::path::PathBuf>,
    },
}

impl McpTarget {
    /// How the server is named in a message a plan's client may read (a check's note,
    /// `tdsl://tools`, the `plan` prompt, a call's error): its program's file name, or its
    /// URL's scheme, host and port. Never the rest of its command line nor the URL's path
    /// and query, where keys are often passed (`--api-key=…`, `env KEY=… server`,
    /// `?api_key=…`, `/mcp/<key>/sse`): the operator wrote them, and the client is not to
    /// read them (`docs/security.md`, "Secrets in what peers say").
    pub(crate) fn shown(&self) -> String {
        match self {
            McpTarget::Command(words) => {
                // `env [-i] [NAME=value]… program`: the program. Any other option of `env`
                // (`-S` splits a string into the command, `-C` names a folder, `-u` a
                // variable) leaves it at `env …`: what follows may be anything.
                let mut rest = words.iter().map(String::as_str);
                let first = rest.next().unwrap_or_default();
                let program = if Path::new(first).file_name().is_some_and(|n| n == "env") {
                    match rest
                        .find(|w| !w.contains('=') && !matches!(*w, "-i" | "--ignore-environment" | "-0" | "--null"))
                    {
                        Some(w) if !w.starts_with('-') => w,
                        _ => first,
                    }
                } else {
                    first
                };
                let name = Path::new(program).file_name().map_or_else(|| program.into(), |n| n.to_string_lossy());
                let more = if words.len() > 1 { " …" } else { "" };
                crate::diagnostic::escape_hidden(&format!("{name}{more}"), &[])
            }
            McpTarget::Url { url, .. } => url_origin(url),
        }
    }
}

/// A URL's scheme, host and port, with `/…` when a path or a query followed: how a server
/// reached by URL is named in messages ([`McpTarget::shown`]).
pub(crate) fn url_origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let more = if end < rest.len() { "/…" } else { "" };
    crate::diagnostic::escape_hidden(&format!("{scheme}://{}{more}", &rest[..end]), &[])
}

impl std::fmt::Debug for McpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpTarget::Command(words) => f.debug_tuple("Command").field(words).finish(),
            McpTarget::Url { url, token, ca } => f
                .debug_struct("Url")
                .field("url", url)
                .field("token", &token.as_ref().map(|_| crate::secrets::REDACTED))
                .field("ca", ca)
                .finish(),
        }
    }
}

/// Why tdsl ended a connection: flags its transport sets at a message past a bound, before
/// rmcp reads any of it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cut {
    /// A message longer than [`stdio::MAX_MESSAGE_BYTES`].
    pub(crate) oversized: Arc<AtomicBool>,
    /// A message of more values than the runner's budget and [`ENVELOPE_VALUES`].
    pub(crate) too_many_values: Arc<AtomicBool>,
    /// A server that left more of tdsl's answers to its own requests unread than
    /// [`answers::Answering`] keeps.
    pub(crate) unread_answers: Arc<AtomicBool>,
}

/// The values of a message around a result (`jsonrpc`, `id`, `result`, `content`, …), which
/// a transport's count allows besides the budget: the result itself is counted exactly when
/// it is built again as a value ([`result::result_value`]).
const ENVELOPE_VALUES: usize = 64;

/// The MCP servers of one run, started on demand.
#[derive(Default)]
pub(crate) struct McpClients {
    runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    servers: Mutex<HashMap<McpTarget, Arc<Slot>>>,
    env: crate::host::ToolEnv,
    /// Cancels the starts of servers that listings are waiting for (a listing has no call to
    /// cancel it) when the clients shut down: a server that hangs at its handshake does not
    /// hold the shutdown for the handshake's timeout.
    closing: Mutex<CancelToken>,
    /// The most values a result may hold (`None`: [`crate::ranges::DEFAULT_MAX_TOOL_VALUES`]).
    max_values: Option<usize>,
    /// How long a stdio server has, once its input is closed, to exit (and again after
    /// SIGTERM): [`stdio::ExitGrace`], shortened by [`McpClients::shut_down_within`].
    exit_grace: stdio::ExitGrace,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("McpClients").field("servers", &servers.keys().collect::<Vec<_>>()).finish()
    }
}

/// One command line's server: connected, or not (yet, or any more).
#[derive(Default)]
struct Slot {
    live: Mutex<Option<Arc<Live>>>,
}

/// tdsl's side of a connection: its info, and a note of a server saying its tools changed
/// (`notifications/tools/list_changed`), which rmcp's default handler drops.
#[derive(Clone)]
struct Client {
    config: ClientConfig,
    tools_changed: Arc<AtomicBool>,
}

impl Client {
    fn new() -> Client {
        Client {
            config: ClientConfig::new(
                ClientCapabilities::default(),
                rmcp::model::Implementation::new("tdsl", env!("CARGO_PKG_VERSION")),
            ),
            // Not listed on this connection yet: a server started again may list other tools.
            tools_changed: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }
}

struct Live {
    service: Mutex<Option<RunningService<RoleClient, Client>>>,
    /// Set when the server said its tools changed since the last listing on this
    /// connection began (and before the first one).
    tools_changed: Arc<AtomicBool>,
    peer: Peer<RoleClient>,
    stderr: Arc<stderr::StderrTail>,
    program: String,
    /// Set when the server sent a message past a bound, which ended the connection.
    cut: Cut,
    /// Set when a call to it was cancelled (a timeout, a deadline, a cancelled run): it may
    /// be hung, so the next use pings it first.
    suspect: AtomicBool,
}

impl McpClients {
    /// No servers yet.
    pub(crate) fn new() -> McpClients {
        McpClients::default()
    }

    /// Starts servers with the environment `env` allows (default: tdsl's whole one).
    pub(crate) fn with_env(mut self, env: crate::host::ToolEnv) -> McpClients {
        self.env = env;
        self
    }

    /// Reads each result as at most `values` values ([`crate::HostRunner::with_max_values`]).
    pub(crate) fn with_max_values(mut self, values: usize) -> McpClients {
        self.max_values = Some(values);
        self
    }

    /// Calls the endpoint's tool with the call's arguments.
    pub(crate) fn call(&self, endpoint: &McpEndpoint, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self.call_target(&endpoint.resolved(call.file), &endpoint.tool, call)
    }

    /// Calls the tool `tool` of the server at `target` with the call's arguments (the
    /// server is started or connected to on first use, as for [`McpClients::call`]). What
    /// the server says — its result, its errors, a failed handshake's body — comes back
    /// with the process's secrets redacted ([`crate::secrets`]): a server that echoes its
    /// bearer token shows it to no one. What the server last wrote on its standard error is
    /// the error's [`ToolError::stderr_tail`], not part of its message.
    pub(crate) fn call_target(&self, target: &McpTarget, tool: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self.call_target_as_said(target, tool, call, None).map_err(redacted)
    }

    /// [`McpClients::call_target`] for the upstream server `server` (`--upstream
    /// NAME=…`): its errors name the server as plans do, `the upstream server \`shop\`
    /// (python3 …)`, not by its program alone — several upstreams may run one program.
    pub(crate) fn call_upstream(
        &self,
        server: &str,
        target: &McpTarget,
        tool: &str,
        call: &ToolCall<'_>,
    ) -> Result<Value, ToolError> {
        self.call_target_as_said(target, tool, call, Some(server)).map_err(redacted)
    }

    fn call_target_as_said(
        &self,
        target: &McpTarget,
        tool: &str,
        call: &ToolCall<'_>,
        server: Option<&str>,
    ) -> Result<Value, ToolError> {
        let tool_path = call.tool_path;
        let runtime = self.runtime().map_err(|e| ToolError::permanent(format!("`{tool_path}`: {e}")))?;
        let command = target;
        let live = self.connect(runtime, command, server, call.cancel).map_err(|e| e.prefixed(tool_path))?;
        let arguments = match serde_json::to_value(call.arguments) {
            Ok(Json::Object(map)) => map,
            Ok(Json::Null) => serde_json::Map::new(),
            Ok(other) => {
                return Err(ToolError::permanent(format!(
                    "`{tool_path}`: MCP tools take an object of arguments, not {other}"
                )))
            }
            Err(e) => return Err(ToolError::permanent(format!("`{tool_path}`: the arguments are not JSON: {e}"))),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let peer = live.peer.clone();
        let cancel = call.cancel.clone();
        let answer = runtime.block_on(async move {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            // Sending waits while the server does not read its input (a full pipe): a cancel
            // ends that wait too.
            let sent = tokio::select! {
                sent = peer.send_cancellable_request(request, PeerRequestOptions::no_options()) => sent,
                () = cancelled(&cancel) => return None,
            };
            let mut handle = match sent {
                Ok(h) => h,
                Err(e) => return Some(Err(e)),
            };
            let answered = tokio::select! {
                r = &mut handle.rx => Some(r),
                () = cancelled(&cancel) => None,
            };
            match answered {
                Some(Ok(Ok(ServerResult::CallToolResult(result)))) => Some(Ok(CallToolResponse::Complete(result))),
                Some(Ok(Ok(_))) => Some(Err(ServiceError::UnexpectedResponse)),
                Some(Ok(Err(e))) => Some(Err(e)),
                Some(Err(_)) => Some(Err(ServiceError::TransportClosed)),
                None => {
                    // Sent before the call returns, so that it reaches the server before
                    // the connection is closed at the end of the run.
                    // A server that does not read its input does not hold the cancel up.
                    let notice = handle.cancel(Some("the tdsl run cancelled the call".to_string()));
                    let _ = tokio::time::timeout(CANCEL_NOTICE_WAIT, notice).await;
                    None
                }
            }
        });
        let of = match server {
            Some(_) => server_named(server, &live.program),
            None => live.program.clone(),
        };
        let who = format!("`{tool_path}`: the MCP tool `{tool}` of {of}");
        match answer {
            None => {
                live.suspect.store(true, Ordering::Relaxed);
                Err(ToolError::transient(format!("{who} was cancelled")))
            }
            Some(Ok(CallToolResponse::Complete(result))) => result_value(result, &who, self.max_values()),
            Some(Ok(_)) => Err(ToolError::permanent(format!(
                "{who} asked for more input or started a task, which tdsl does not support"
            ))),
            Some(Err(ServiceError::McpError(e))) => Err(ToolError::permanent(format!(
                "{who} refused the call: {} (JSON-RPC error {})",
                said(&e.message),
                e.code.0
            ))),
            Some(Err(e)) => {
                // The connection is gone or unusable: the next call starts the server again.
                self.forget(command, &live);
                if let Some(why) = self.cut_message(&live) {
                    return Err(ToolError::permanent(format!("{who} failed: {why}")));
                }
                let last_words = runtime.block_on(live.stderr.last_words());
                Err(ToolError::transient(format!("{who} failed: {}", transport_error(&e))).with_stderr_tail(last_words))
            }
        }
    }

    /// The tools the endpoint's server lists (`tools/list`, every page), as JSON `Tool`
    /// objects: what `tdsl check --mcp-schemas` compares declarations with.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn list_tools(&self, endpoint: &McpEndpoint, tool_file: Option<&Path>) -> Result<Vec<Json>, ToolError> {
        self.list_target_tools(&endpoint.resolved(tool_file))
    }

    /// The tools the server at `target` lists (`tools/list`, every page), as JSON `Tool`
    /// objects, starting or connecting to it if needed; the process's secrets redacted from
    /// the listing and the error, and the server's standard error kept apart from the
    /// error's message, as for a call's.
    pub(crate) fn list_target_tools(&self, target: &McpTarget) -> Result<Vec<Json>, ToolError> {
        match self.list_target_tools_as_said(target) {
            Ok(mut tools) => {
                tools.iter_mut().for_each(crate::secrets::redact_json);
                Ok(tools)
            }
            Err(e) => Err(redacted(e)),
        }
    }

    fn list_target_tools_as_said(&self, target: &McpTarget) -> Result<Vec<Json>, ToolError> {
        let runtime = self.runtime().map_err(ToolError::permanent)?;
        let command = target;
        let closing = self.closing.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let live = self.connect(runtime, command, None, &closing).map_err(|e| e.0)?;
        // A change said from now on is one this listing may not see: it is kept.
        live.tools_changed.store(false, Ordering::SeqCst);
        let peer = live.peer.clone();
        let listed =
            runtime.block_on(async move { tokio::time::timeout(HANDSHAKE_TIMEOUT, listing::list_all(&peer)).await });
        match listed {
            Ok(Ok(Ok(tools))) => Ok(tools),
            Ok(Ok(Err(too_large))) => {
                self.forget(command, &live);
                Err(ToolError::permanent(format!("`tools/list` failed: {too_large}")))
            }
            Ok(Err(e)) => {
                self.forget(command, &live);
                if let Some(why) = self.cut_message(&live) {
                    return Err(ToolError::permanent(format!("`tools/list` failed: {why}")));
                }
                let last_words = runtime.block_on(live.stderr.last_words());
                Err(ToolError::transient(format!("`tools/list` failed: {e}")).with_stderr_tail(last_words))
            }
            Err(_) => {
                self.forget(command, &live);
                Err(ToolError::transient(format!(
                    "`tools/list` got no answer within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                )))
            }
        }
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, String> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("tdsl-mcp")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the MCP client's runtime: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The most values of a result ([`McpClients::with_max_values`]).
    fn max_values(&self) -> usize {
        self.max_values.unwrap_or(crate::ranges::DEFAULT_MAX_TOOL_VALUES)
    }

    /// Why the connection was ended by tdsl, when it was ([`Cut`]).
    fn cut_message(&self, live: &Live) -> Option<String> {
        if live.cut.oversized.load(Ordering::Relaxed) {
            return Some(oversized_message());
        }
        if live.cut.unread_answers.load(Ordering::Relaxed) {
            return Some(unread_answers_message());
        }
        live.cut.too_many_values.load(Ordering::Relaxed).then(|| {
            let budget = crate::value::DecodeError::TooManyValues(self.max_values());
            format!(
                "the server sent a message of {budget}; its connection was closed (a server tdsl started is stopped)"
            )
        })
    }

    /// The live connection to `command`'s server, starting it if needed. Callers of the same
    /// command line wait for one start. `server` is the upstream's name, when it is one: a
    /// failed start names it ([`server_named`]).
    fn connect(
        &self,
        runtime: &tokio::runtime::Runtime,
        command: &McpTarget,
        server: Option<&str>,
        cancel: &CancelToken,
    ) -> Result<Arc<Live>, ConnectError> {
        let slot = {
            let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
            servers.entry(command.clone()).or_default().clone()
        };
        let mut live = slot.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(l) = live.as_ref() {
            if !l.suspect.load(Ordering::Relaxed) || answers_ping(runtime, l, cancel) {
                l.suspect.store(false, Ordering::Relaxed);
                return Ok(l.clone());
            }
            // Hung: stopped in the background (its shutdown takes up to 6 s), started anew.
            if let Some(service) = l.service.lock().unwrap_or_else(PoisonError::into_inner).take() {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(8), service.cancel()).await;
                });
            }
            *live = None;
        }
        let max_values = self.max_values().saturating_add(ENVELOPE_VALUES);
        let started = runtime.block_on(start(command, &self.env, server, (max_values, &self.exit_grace), cancel))?;
        let started = Arc::new(started);
        *live = Some(started.clone());
        Ok(started)
    }

    /// Whether the server of `target` may list other tools than it last did: it said its
    /// tools changed (`notifications/tools/list_changed`), or it is connected anew (started
    /// again) and not listed since. A server not connected now is not: it will be connected,
    /// and then this says so.
    pub(crate) fn tools_changed(&self, target: &McpTarget) -> bool {
        let slot = self.servers.lock().unwrap_or_else(PoisonError::into_inner).get(target).cloned();
        slot.is_some_and(|slot| {
            slot.live
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .is_some_and(|l| l.tools_changed.load(Ordering::SeqCst))
        })
    }

    /// Drops a connection that failed (unless another call already replaced it).
    fn forget(&self, command: &McpTarget, failed: &Arc<Live>) {
        let slot = self.servers.lock().unwrap_or_else(PoisonError::into_inner).get(command).cloned();
        if let Some(slot) = slot {
            let mut live = slot.live.lock().unwrap_or_else(PoisonError::into_inner);
            if live.as_ref().is_some_and(|l| Arc::ptr_eq(l, failed)) {
                *live = None;
            }
        }
    }
}

impl McpClients {
    /// Shuts every server down now, as dropping the clients does (a server used again
    /// later starts anew). Call it outside any async runtime.
    pub(crate) fn shut_down(&self) {
        self.shut_down_bounded(SHUT_DOWN_BOUND);
    }

    fn shut_down_bounded(&self, bound: Duration) {
        let Some(Ok(runtime)) = self.runtime.get() else { return };
        // A listing's server still starting gives up now, freeing its slot.
        let mut closing = self.closing.lock().unwrap_or_else(PoisonError::into_inner);
        closing.cancel();
        *closing = CancelToken::new();
        drop(closing);
        let servers = std::mem::take(&mut *self.servers.lock().unwrap_or_else(PoisonError::into_inner));
        shut_down_servers(runtime, servers, bound);
        // A server whose connection did not even begin to close in time (rmcp first waits
        // up to 2 s for answers in flight) is killed.
        self.exit_grace.kill_all();
    }

    /// [`McpClients::shut_down`] for a process that is ending: each stdio server gets
    /// SIGTERM at once and `grace` to exit, then it is killed; an HTTP session is ended
    /// within `grace`. A server busy writing an answer (which reads no more input) does not
    /// hold the exit, nor does rmcp's wait for the answers in flight on a connection.
    pub(crate) fn shut_down_within(&self, grace: Duration) {
        self.exit_grace.set(grace);
        self.exit_grace.terminate_all();
        self.shut_down_bounded(grace);
    }
}

/// Ends each server's connection: see [`McpClients`]'s `Drop`.
fn shut_down_servers(runtime: &tokio::runtime::Runtime, servers: HashMap<McpTarget, Arc<Slot>>, bound: Duration) {
    let services: Vec<_> = servers
        .into_values()
        .filter_map(|slot| slot.live.lock().unwrap_or_else(PoisonError::into_inner).take())
        .filter_map(|live| live.service.lock().unwrap_or_else(PoisonError::into_inner).take())
        .collect();
    if services.is_empty() {
        return;
    }
    runtime.block_on(async move {
        // All at once: the MCP stdio shutdown (the server's input is closed and it gets 3 s
        // to exit, then SIGTERM and 3 s more, then it is killed; `mcp_stdio`), an HTTP
        // session ended with `DELETE`.
        let mut ending = tokio::task::JoinSet::new();
        for service in services {
            ending.spawn(async move {
                let _ = service.cancel().await;
            });
        }
        let _ = tokio::time::timeout(bound, async { while ending.join_next().await.is_some() {} }).await;
    });
}

impl Drop for McpClients {
    fn drop(&mut self) {
        let Some(Ok(runtime)) = self.runtime.get() else { return };
        let servers = std::mem::take(&mut *self.servers.lock().unwrap_or_else(PoisonError::into_inner));
        shut_down_servers(runtime, servers, SHUT_DOWN_BOUND);
    }
}

/// The longest [`McpClients::shut_down`] waits for its servers' connections to close.
const SHUT_DOWN_BOUND: Duration = Duration::from_secs(8);

/// Whether the server answers a ping within [`PROBE_TIMEOUT`] (any answer, an error too,
/// is a server that still reads its input). A cancelled wait does not judge it hung.
fn answers_ping(runtime: &tokio::runtime::Runtime, live: &Live, cancel: &CancelToken) -> bool {
    let peer = live.peer.clone();
    runtime.block_on(async move {
        let ping = ClientRequest::PingRequest(rmcp::model::PingRequest::default());
        tokio::select! {
            r = tokio::time::timeout(PROBE_TIMEOUT, peer.send_request(ping)) => {
                matches!(r, Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_))))
            }
            () = cancelled(cancel) => true,
        }
    })
}

/// Why a call failed when the server's message was over the cap.
fn oversized_message() -> String {
    format!(
        "the server sent a message longer than {} MiB (the most tdsl reads as one MCP message), \
         so its connection was closed (a server tdsl started is stopped)",
        stdio::MAX_MESSAGE_BYTES / (1024 * 1024)
    )
}

/// Why a call failed when the server left tdsl's answers to its own requests unread.
fn unread_answers_message() -> String {
    format!(
        "the server sent requests and did not read tdsl's answers to them (more than {} answers or {} MiB \
         waiting to be written), so its connection was closed (a server tdsl started is stopped)",
        answers::MAX_UNWRITTEN_ANSWERS,
        answers::MAX_UNWRITTEN_ANSWER_BYTES / (1024 * 1024)
    )
}

/// A call's error without the transport's type names rmcp puts in it (`Transport
/// [rmcp::transport::worker::WorkerTransport<…>] error: what`).
fn transport_error(e: &ServiceError) -> String {
    let e = e.to_string();
    match e.split_once("Transport [") {
        Some((before, rest)) => match rest.rsplit_once("] error: ") {
            Some((_, why)) => format!("{before}{why}"),
            None => e.clone(),
        },
        None => e,
    }
}

/// An error with the process's secrets redacted from its message and its standard error's
/// tail ([`crate::secrets`]).
fn redacted(mut e: ToolError) -> ToolError {
    if let Cow::Owned(r) = crate::secrets::redact(&e.message) {
        e.message = r;
    }
    if let Some(Cow::Owned(r)) = e.stderr_tail.as_deref().map(crate::secrets::redact) {
        e.stderr_tail = Some(r);
    }
    e
}

/// Why a server could not be used.
struct ConnectError(ToolError);

impl ConnectError {
    fn prefixed(self, tool_path: &str) -> ToolError {
        // The server could not be used: the call was never sent.
        ToolError { message: format!("`{tool_path}`: {}", self.0.message), unsent: true, ..self.0 }
    }
}

/// How messages name a server: `the MCP server PROG`, or, for an upstream (`--upstream
/// NAME=…`), by the name plans call it by, `the upstream server \`shop\` (PROG)` — several
/// upstreams may run one program. `shown` is [`McpTarget::shown`].
fn server_named(server: Option<&str>, shown: &str) -> String {
    match server {
        Some(name) => format!("the upstream server `{}` ({shown})", crate::diagnostic::escape_hidden(name, &[])),
        None => format!("the MCP server {shown}"),
    }
}

/// Starts or connects to the server of `target`; a message of more than `max_values`
/// values ends the connection ([`Cut`]).
async fn start(
    target: &McpTarget,
    env: &crate::host::ToolEnv,
    server: Option<&str>,
    (max_values, exit_grace): (usize, &stdio::ExitGrace),
    cancel: &CancelToken,
) -> Result<Live, ConnectError> {
    let command = match target {
        McpTarget::Command(command) => command,
        McpTarget::Url { url, token, ca } => {
            return start_http(url, (token.as_deref(), ca.as_deref()), server, max_values, cancel).await
        }
    };
    let Some((program, args)) = command.split_first() else {
        return Err(ConnectError(ToolError::permanent("`mcp:` names no program")));
    };
    // Named in messages as a client may read them ([`McpTarget::shown`]).
    let shown = target.shown();
    let named = server_named(server, &shown);
    let mut cmd = tokio::process::Command::new(program);
    if let Some(vars) = env.variables() {
        cmd.env_clear().envs(vars);
    }
    cmd.args(args)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let cannot_start = |e: std::io::Error| ConnectError(ToolError::permanent(format!("cannot start {named}: {e}")));
    // Left to its `Child` by the orphan reaper, whatever session it moves to.
    let mut child = super::orphans::spawn_owned(|| cmd.spawn(), tokio::process::Child::id).map_err(cannot_start)?;
    let stderr = child.stderr.take();
    let (transport, cut) = stdio::ChildTransport::new(child, stdio::MAX_MESSAGE_BYTES, max_values, exit_grace.clone())
        .map_err(cannot_start)?;
    let lines = match stderr {
        Some(stderr) => {
            let lines = Arc::new(stderr::StderrTail::default());
            let reader = lines.clone();
            tokio::spawn(async move { reader.read(stderr).await });
            lines
        }
        None => Arc::new(stderr::StderrTail::none()),
    };
    let transport = answers::Answering::new(transport, cut.unread_answers.clone());
    let config = Client::new();
    let tools_changed = config.tools_changed.clone();
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, config.serve(transport));
    let service = tokio::select! {
        r = handshake => r,
        () = cancelled(cancel) => {
            return Err(ConnectError(ToolError::transient(format!("starting {named} was cancelled"))))
        }
    };
    let service = match service {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(ConnectError(
                ToolError::transient(format!("{named} failed the handshake: {e}"))
                    .with_stderr_tail(lines.last_words().await),
            ));
        }
        Err(_) => {
            return Err(ConnectError(
                ToolError::transient(format!(
                    "{named} did not answer `initialize` within {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                ))
                .with_stderr_tail(lines.text()),
            ))
        }
    };
    let peer = service.peer().clone();
    Ok(Live {
        service: Mutex::new(Some(service)),
        tools_changed,
        peer,
        stderr: lines,
        program: shown.clone(),
        cut,
        suspect: AtomicBool::new(false),
    })
}

/// Connects to the Streamable HTTP server at `url` (feature `mcp-http`).
#[cfg(feature = "mcp-http")]
async fn start_http(
    url: &str,
    (token, ca): (Option<&str>, Option<&Path>),
    server: Option<&str>,
    max_values: usize,
    cancel: &CancelToken,
) -> Result<Live, ConnectError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // Named by its origin in every message: its path and query may hold a key.
    let shown = url_origin(url);
    let named = server_named(server, &shown);
    let http = http::TcpHttpClient::for_url(url, ca, max_values)
        .map_err(|e| ConnectError(ToolError::permanent(format!("cannot reach {named}: {e}"))))?;
    use rmcp::transport::StreamableHttpClientTransport;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        // Before anything is sent: a server may echo it in any answer, the first included.
        crate::secrets::register(token);
        config = config.auth_header(token.to_string());
    }
    let cut = http.cut();
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    let transport = answers::Answering::new(transport, cut.unread_answers.clone());
    let client = Client::new();
    let tools_changed = client.tools_changed.clone();
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, client.serve(transport));
    let service = tokio::select! {
        r = handshake => r,
        () = cancelled(cancel) => {
            return Err(ConnectError(ToolError::transient(format!("connecting to {named} was cancelled"))))
        }
    };
    match service {
        Ok(Ok(service)) => {
            let peer = service.peer().clone();
            Ok(Live {
                service: Mutex::new(Some(service)),
                tools_changed,
                peer,
                stderr: Arc::new(stderr::StderrTail::none()),
                program: shown.clone(),
                cut,
                suspect: AtomicBool::new(false),
            })
        }
        Ok(Err(e)) => {
            if let Some(tls) = http.take_tls_failure() {
                let message = format!("cannot reach {named}: {}", tls.message);
                let error = if tls.permanent { ToolError::permanent(message) } else { ToolError::transient(message) };
                return Err(ConnectError(error));
            }
            // rmcp's message names its transport's types: keep what the server said.
            let e = e.to_string();
            let why = if e.contains("Auth required") {
                "it answered 401 Unauthorized (give its bearer token with --upstream-token NAME=FILE)".to_string()
            } else {
                e.rsplit_once("] error: ").map_or(e.clone(), |(_, w)| w.to_string())
            };
            Err(ConnectError(ToolError::transient(format!("{named} failed the handshake: {why}"))))
        }
        Err(_) => Err(ConnectError(ToolError::transient(format!(
            "{named} did not answer `initialize` within {} s",
            HANDSHAKE_TIMEOUT.as_secs()
        )))),
    }
}

#[cfg(not(feature = "mcp-http"))]
async fn start_http(
    url: &str,
    _: (Option<&str>, Option<&Path>),
    server: Option<&str>,
    _max_values: usize,
    _cancel: &CancelToken,
) -> Result<Live, ConnectError> {
    Err(ConnectError(ToolError::permanent(format!(
        "cannot reach {}: this tdsl was built without the `mcp-http` feature",
        server_named(server, &url_origin(url))
    ))))
}

/// How long a cancelled call waits to hand the server its `notifications/cancelled`
/// before it returns anyway (a server that does not read its input fills the pipe).
const CANCEL_NOTICE_WAIT: Duration = Duration::from_millis(200);

/// Resolves when the token is cancelled.
async fn cancelled(cancel: &CancelToken) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program_of(endpoint: &McpEndpoint, tool_file: Option<&Path>) -> std::path::PathBuf {
        match endpoint.resolved(tool_file) {
            McpTarget::Command(c) => std::path::PathBuf::from(c.first().cloned().unwrap_or_default()),
            McpTarget::Url { url, .. } => std::path::PathBuf::from(url),
        }
    }

    #[test]
    fn a_targets_token_is_not_shown_by_debug() {
        let t = McpTarget::Url { url: "http://127.0.0.1:9/mcp".into(), token: Some("tok-debug-1234".into()), ca: None };
        let shown = format!("{t:?}");
        assert!(shown.contains("http://127.0.0.1:9/mcp") && !shown.contains("tok-debug-1234"), "{shown}");
    }

    #[test]
    fn endpoints_parse() {
        let e = McpEndpoint::parse("python3 'my server.py' --flag#add").expect("parses");
        assert_eq!(e.server, McpTarget::Command(vec!["python3".into(), "my server.py".into(), "--flag".into()]));
        assert_eq!(e.tool, "add");
        // The tool is after the last `#`.
        assert_eq!(McpEndpoint::parse("srv --tag=#1#t").expect("parses").tool, "t");
        assert!(McpEndpoint::parse("srv").unwrap_err().contains("names no tool"));
        assert!(McpEndpoint::parse("srv#").unwrap_err().contains("no tool after"));
        assert!(McpEndpoint::parse(" #t").unwrap_err().contains("no program"));
        assert!(McpEndpoint::parse("'srv#t").unwrap_err().contains("cannot split"));
        let e = McpEndpoint::parse("./bin/srv#t").expect("parses");
        assert_eq!(program_of(&e, Some(Path::new("/r/tools/x.tool"))), Path::new("/r/tools/./bin/srv"));
        assert_eq!(program_of(&McpEndpoint::parse("tdsl#t").expect("parses"), None), Path::new("tdsl"));
        // A URL: the tool after the last `#`, the URL kept as written.
        let e = McpEndpoint::parse("https://mcp.example.org:8443/mcp#lookup").expect("parses");
        assert_eq!(e.server, McpTarget::Url { url: "https://mcp.example.org:8443/mcp".into(), token: None, ca: None });
        assert_eq!(e.tool, "lookup");
        assert_eq!(program_of(&e, Some(Path::new("/r/x.tool"))), Path::new("https://mcp.example.org:8443/mcp"));
        assert!(McpEndpoint::parse("http:///mcp#t").unwrap_err().contains("is not a URL"));
        assert!(McpEndpoint::parse("https://a b/mcp#t").unwrap_err().contains("is not a URL"));
    }

    /// A port out of range was taken as no port: `https://127.0.0.1:65536/mcp` went to port
    /// 443. A password was echoed in every error; control characters too.
    #[test]
    fn urls_with_bad_ports_userinfo_or_odd_characters_are_refused() {
        for (url, says) in [
            ("https://127.0.0.1:65536/mcp", "the port `65536` is not one of 1–65535"),
            ("https://127.0.0.1:0/mcp", "the port `0`"),
            ("http://[::1]:99999999999/mcp", "the port `99999999999`"),
            ("https://h:1x/mcp", "the port `1x`"),
            ("https://bob:hunter2@h.example/mcp", "`https://bob…@h.example`: a user name or password"),
            ("https://b\u{fc}cher.example/mcp", "write it in its ASCII form"),
            ("https://e\u{1b}[31mvil/mcp", "`https://e\\u001b[31mvil/mcp` is not a URL: it holds a control character"),
        ] {
            let e = check_url(url).expect_err(url);
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2") && !e.contains('\u{1b}'), "{url}: {e}");
        }
        for url in ["https://127.0.0.1:/mcp", "https://[::1]:8443/mcp", "http://[::1]/mcp", "https://a.example/x?y=1:2"]
        {
            assert_eq!(check_url(url), Ok(()), "{url}");
        }
    }
}
