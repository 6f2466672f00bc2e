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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::analysis::{LoadedTool, NameRefusal, NamedTools};
use crate::diagnostic::Code;
use crate::exec::{Runner, ToolCall, ToolError};
use crate::host::mcp_client::{McpClients, McpTarget};
use crate::host::HostRunner;

/// How long the upstream servers have to exit when `serve` ends, after SIGTERM, before
/// they are killed ([`Upstreams::shut_down_quickly`]).
pub const UPSTREAM_EXIT_GRACE: Duration = Duration::from_millis(500);
use crate::plans::{escape_controls, untranslatable, upstream_target, UpstreamTool};
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
        let target = if crate::host::mcp_client::is_url(rest) {
            // The message shows the URL as `check_url` does (no password, escapes shown).
            crate::host::mcp_client::check_url(rest).map_err(|e| format!("--upstream {name}=…: {e}"))?;
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
pub(crate) fn parse_upstreams(
    upstreams: &[String],
    tokens: &[String],
    cas: &[String],
) -> Result<Vec<UpstreamSpec>, String> {
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
        let McpTarget::Url { token, url, .. } = &mut spec.target else {
            return Err(format!("--upstream-token {arg}: `{}` is started as a command, not reached by URL", spec.name));
        };
        crate::host::refuse_token_in_clear(url).map_err(|e| format!("--upstream-token {arg}: `{}` {e}", spec.name))?;
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
    crate::host::mcp_client::http::load_ca_file(path).map(|_| ())
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

/// How long a check waits by default for an upstream server's first `tools/list`
/// (`serve --upstream-timeout`, [`crate::ranges::UPSTREAM_TIMEOUT_SECONDS`]).
pub(crate) const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a failed listing is remembered before the server is listed again: this after
/// the first failure, doubled after each next one up to [`MAX_RETRY_AFTER`].
pub(crate) const FIRST_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The longest a failed listing is remembered before the server is listed again.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The upstream servers of a plans server.
///
/// Their listings never stall the server: each server is listed on a thread of its own
/// (several at once when a check needs several), checks that need a listing in progress
/// share it, and a failed one is remembered with a backoff ([`FIRST_RETRY_AFTER`], doubling
/// up to [`MAX_RETRY_AFTER`]). Only the first listing of a server is waited for, and at most
/// the listing timeout; while a server's last listing failed, a check gets that failure at
/// once, and the server is listed again in the background once the backoff has passed. A
/// server that says its tools changed (`notifications/tools/list_changed`), or that was
/// started again since it was listed, is listed again by the next check that names it,
/// which waits for that listing as for a first one.
#[derive(Debug)]
pub struct Upstreams {
    specs: Vec<UpstreamSpec>,
    clients: Arc<McpClients>,
    /// What the clients were made with ([`Upstreams::with_env`], [`Upstreams::with_max_values`]).
    env: crate::host::ToolEnv,
    max_values: usize,
    /// What is known of each server's tools, by name.
    listings: Arc<Mutex<HashMap<String, Listing>>>,
    /// How long a check waits for a server's first listing.
    list_timeout: Duration,
    /// Whether a failed listing is said to be tried again (a server's; not a command's, which
    /// lists each server once).
    relists: bool,
}

impl Default for Upstreams {
    fn default() -> Self {
        Upstreams::new(Vec::new())
    }
}

/// What is known of one server's tools.
#[derive(Debug, Default)]
struct Listing {
    /// The last listing's outcome.
    known: Known,
    /// The listing in progress, if any (at most one per server).
    pending: Option<Arc<Pending>>,
}

#[derive(Debug, Default)]
enum Known {
    /// Never listed yet.
    #[default]
    Nothing,
    /// Its tools.
    Tools(Arc<Vec<Json>>),
    /// Why the last listing failed, how many failed in a row, and when to list it again.
    Failed { error: String, failures: u32, retry_at: Instant },
}

/// A listing in progress, which checks wait for (blocking or async) until its deadline.
#[derive(Debug)]
struct Pending {
    deadline: Instant,
    /// Set when a check recorded it as failed for passing its deadline: its own failure,
    /// when it comes, is then not counted again.
    timed_out: std::sync::atomic::AtomicBool,
    done: Mutex<bool>,
    cv: Condvar,
    notify: tokio::sync::Notify,
}

impl Pending {
    fn finish(&self) {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
        self.notify.notify_waiters();
    }

    fn is_done(&self) -> bool {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until the listing ends or its deadline passes.
    fn wait(&self) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        while !*done {
            let Some(left) = self.deadline.checked_duration_since(Instant::now()) else { return };
            done = self.cv.wait_timeout(done, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    /// Waits, without blocking a thread, until the listing ends or its deadline passes.
    async fn wait_async(&self) {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_done() {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }
}

/// How long the `failures`-th failure in a row is remembered.
fn retry_after(failures: u32) -> Duration {
    FIRST_RETRY_AFTER.saturating_mul(1 << failures.saturating_sub(1).min(16)).min(MAX_RETRY_AFTER)
}

impl Upstreams {
    /// The servers, none started yet.
    pub fn new(specs: Vec<UpstreamSpec>) -> Upstreams {
        Upstreams {
            specs,
            clients: Arc::new(McpClients::new()),
            env: crate::host::ToolEnv::Inherit,
            max_values: crate::ranges::DEFAULT_MAX_TOOL_VALUES,
            listings: Arc::new(Mutex::new(HashMap::new())),
            list_timeout: DEFAULT_LIST_TIMEOUT,
            relists: true,
        }
    }

    /// The servers of `--upstream NAME=COMMAND|URL`, with `--upstream-token NAME=FILE`,
    /// `--upstream-ca NAME=FILE` ([`parse_upstreams`]) and `--upstream-timeout S` (in
    /// [`crate::ranges::UPSTREAM_TIMEOUT_SECONDS`]): the one reading of these flags that
    /// `serve`, `check` and `run` share. The error names the flag.
    pub fn from_flags(
        upstreams: &[String],
        tokens: &[String],
        cas: &[String],
        timeout: Option<f64>,
    ) -> Result<Upstreams, String> {
        let mut out = Upstreams::new(parse_upstreams(upstreams, tokens, cas)?);
        if let Some(s) = timeout {
            let s =
                crate::ranges::UPSTREAM_TIMEOUT_SECONDS.check(s).map_err(|e| format!("--upstream-timeout {s}: {e}"))?;
            out = out.with_list_timeout(Duration::from_secs_f64(s));
        }
        Ok(out)
    }

    /// The same servers for one command (`tdsl check`, `tdsl run`): a failed listing is not
    /// said to be tried again later.
    pub fn listed_once(mut self) -> Upstreams {
        self.relists = false;
        self
    }

    /// The same servers, started with the environment `env` allows (`serve --clean-env`).
    pub fn with_env(mut self, env: crate::host::ToolEnv) -> Upstreams {
        self.env = env;
        self.new_clients()
    }

    /// The same servers, each result read as at most `values` values (`--max-tool-values`,
    /// as [`crate::HostRunner::with_max_values`]).
    pub fn with_max_values(mut self, values: usize) -> Upstreams {
        self.max_values = values;
        self.new_clients()
    }

    fn new_clients(mut self) -> Upstreams {
        self.clients = Arc::new(McpClients::new().with_env(self.env.clone()).with_max_values(self.max_values));
        self
    }

    /// The same servers, a check waiting at most `timeout` for a server's first listing
    /// (`serve --upstream-timeout`; [`DEFAULT_LIST_TIMEOUT`] otherwise).
    pub fn with_list_timeout(mut self, timeout: Duration) -> Upstreams {
        self.list_timeout = timeout;
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
    /// Blocking: call it off the async runtime. See [`Upstreams`] for how long it waits.
    pub fn tools(&self, name: &str) -> Result<ToolList, String> {
        self.tools_of(&[name]).pop().map_or_else(|| Err(format!("there is no upstream server `{name}`")), |(_, r)| r)
    }

    /// The tools of each of the servers `names`, listed concurrently. Blocking.
    pub fn tools_of(&self, names: &[&str]) -> Vec<(String, Result<ToolList, String>)> {
        for pending in names.iter().filter_map(|n| self.start_listing(n)) {
            pending.wait();
        }
        names.iter().map(|n| (n.to_string(), self.known(n))).collect()
    }

    /// Every server's tools, or why they could not be listed. Blocking.
    pub fn all_tools(&self) -> Vec<(String, Result<ToolList, String>)> {
        self.tools_of(&self.names())
    }

    /// Starts the listings of `names` that are due and waits, without blocking a thread,
    /// for those a check would wait for: so that a caller can wait before it takes a slot
    /// of `--max-calls`, and the check it then makes finds the listings ready.
    pub async fn prepare(&self, names: &[&str]) {
        let waits: Vec<Arc<Pending>> = names.iter().filter_map(|n| self.start_listing(n)).collect();
        for pending in waits {
            pending.wait_async().await;
        }
    }

    /// Starts listing `name` when it is due (never listed; its backoff has passed; or its
    /// tools may have changed: the server said so, or was started again — and no listing in
    /// progress); the listing a caller should wait for, if any: a first one, or one after a
    /// change (the tools known are no longer the server's), never one after a failure.
    fn start_listing(&self, name: &str) -> Option<Arc<Pending>> {
        let spec = self.spec(name)?;
        let mut listings = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        let listing = listings.entry(name.to_string()).or_default();
        let first = matches!(listing.known, Known::Nothing);
        let listed = matches!(listing.known, Known::Tools(_));
        if let Some(p) = &listing.pending {
            return (first || listed).then(|| p.clone());
        }
        let changed = listed && self.clients.tools_changed(&spec.target);
        match &listing.known {
            Known::Tools(_) if !changed => return None,
            Known::Failed { retry_at, .. } if Instant::now() < *retry_at => return None,
            _ => {}
        }
        let pending = Arc::new(Pending {
            deadline: Instant::now() + self.list_timeout,
            timed_out: std::sync::atomic::AtomicBool::new(false),
            done: Mutex::new(false),
            cv: Condvar::new(),
            notify: tokio::sync::Notify::new(),
        });
        listing.pending = Some(pending.clone());
        let (clients, listings, target) = (self.clients.clone(), self.listings.clone(), spec.target.clone());
        let (server, lister) = (name.to_string(), pending.clone());
        let spawned = std::thread::Builder::new().name("tdsl-upstream-list".to_string()).spawn(move || {
            let listed = clients.list_target_tools(&target).map_err(|e| {
                let message = format!("the upstream server `{server}` ({}): {}", target.shown(), e.message);
                let e = ToolError { message, ..e };
                if e.stderr_tail.is_none() {
                    return e.message;
                }
                // The listing's error reaches a plan's client: what the server wrote on its
                // standard error goes to the operator, on this process's.
                crate::host::log_stderr(&e.for_operator());
                format!("{} (what it wrote on standard error is on the server's standard error)", e.message)
            });
            let mut listings = listings.lock().unwrap_or_else(PoisonError::into_inner);
            let listing = listings.entry(server).or_default();
            listing.known = match (listed, &listing.known) {
                (Ok(tools), _) => Known::Tools(Arc::new(tools)),
                // Already counted when it passed its deadline: now with the real reason.
                (Err(error), Known::Failed { failures, retry_at, .. })
                    if lister.timed_out.load(std::sync::atomic::Ordering::SeqCst) =>
                {
                    Known::Failed { error, failures: *failures, retry_at: *retry_at }
                }
                (Err(error), before) => failed(before, error),
            };
            listing.pending = None;
            drop(listings);
            lister.finish();
        });
        if let Err(e) = spawned {
            listing.pending = None;
            listing.known = failed(&listing.known, format!("the upstream server `{name}`: cannot list its tools: {e}"));
            pending.finish();
        }
        (first || changed).then_some(pending)
    }

    /// What is known of `name`'s tools now: a first listing still in progress past the
    /// timeout is recorded as failed (and waited for no more).
    fn known(&self, name: &str) -> Result<ToolList, String> {
        let Some(spec) = self.spec(name) else { return Err(format!("there is no upstream server `{name}`")) };
        let mut listings = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        let listing = listings.entry(name.to_string()).or_default();
        match &listing.known {
            // Shared, not copied: the same listing until the server is listed again.
            Known::Tools(tools) => Ok(tools.clone()),
            Known::Failed { error, .. } if !self.relists => Err(error.clone()),
            Known::Failed { error, retry_at, .. } => {
                let when = match retry_at.checked_duration_since(Instant::now()) {
                    _ if listing.pending.is_some() => "a listing of it is in progress".to_string(),
                    Some(left) => format!("it will be listed again in {} s", left.as_secs().max(1)),
                    None => "it will be listed again at the next check".to_string(),
                };
                Err(format!("{error} ({when})"))
            }
            Known::Nothing => {
                let error = format!(
                    "the upstream server `{name}` ({}): `tools/list` got no answer within {} s (--upstream-timeout)",
                    spec.target.shown(),
                    fmt_secs(self.list_timeout)
                );
                listing.known = failed(&Known::Nothing, error.clone());
                if let Some(p) = &listing.pending {
                    p.timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Err(error)
            }
        }
    }

    /// Whether the tool `tool` of the server `server` is known to be safe to call twice:
    /// its last listing gives it the MCP annotation `readOnlyHint: true` or
    /// `idempotentHint: true` ([`repeatable`]). A tool without annotations, or not listed,
    /// is not (MCP's defaults: not read-only, not idempotent).
    pub fn repeatable(&self, server: &str, tool: &str) -> bool {
        let listings = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(Listing { known: Known::Tools(tools), .. }) = listings.get(server) else { return false };
        tools.iter().find(|t| t.get("name").and_then(Json::as_str) == Some(tool)).is_some_and(repeatable)
    }

    /// Calls the tool `tool` of the server `server` with the call's arguments.
    pub fn call(&self, server: &str, tool: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        let Some(spec) = self.spec(server) else {
            return Err(ToolError::permanent(format!("`{}`: there is no upstream server `{server}`", call.tool_path)));
        };
        self.clients.call_upstream(server, &spec.target, tool, call)
    }

    /// Shuts every server down (their inputs closed, or their HTTP sessions ended). Call it
    /// outside any async runtime.
    pub fn shut_down(&self) {
        self.clients.shut_down();
    }

    /// [`Upstreams::shut_down`] when the server ends (a signal, the end of its input): each
    /// stdio server gets SIGTERM and [`UPSTREAM_EXIT_GRACE`] to exit, then it is killed; an
    /// HTTP session is ended within as long.
    pub fn shut_down_quickly(&self) {
        self.clients.shut_down_within(UPSTREAM_EXIT_GRACE);
    }
}

/// The runner of plans, skills and `tdsl run --upstream`: a call of an upstream server's
/// tool (a definition whose endpoint is `upstream:SERVER/TOOL`, [`upstream_target`]) goes to
/// that server, every other call to the host runner (whose mock, when it answers for the
/// tool path, wins).
#[derive(Debug)]
pub(crate) struct UpstreamRunner {
    host: HostRunner,
    upstreams: Arc<Upstreams>,
}

impl UpstreamRunner {
    /// Routes `SERVER/TOOL` calls to `upstreams`, the others to `host`.
    pub(crate) fn new(host: HostRunner, upstreams: Arc<Upstreams>) -> UpstreamRunner {
        UpstreamRunner { host, upstreams }
    }

    /// The upstream server and tool a call goes to, if it goes to one.
    fn target<'a>(&self, call: &'a ToolCall<'_>) -> Option<(&'a str, &'a str)> {
        if self.host.mocks(call.tool_path) {
            return None;
        }
        call.endpoint().and_then(upstream_target)
    }
}

impl Runner for UpstreamRunner {
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        match self.target(call) {
            // The host's choice of where a failed server's standard error goes holds for
            // the upstreams too.
            Some((server, tool)) => {
                let read = self.upstreams.call(server, tool, call).map_err(|e| self.host.stderr_tails().deliver(e))?;
                self.host.charge(call.tool_path, &read)?;
                Ok(read)
            }
            None => self.host.call(call),
        }
    }

    fn can_block(&self, call: &ToolCall<'_>) -> bool {
        self.target(call).is_some() || self.host.can_block(call)
    }

    /// An upstream tool is safe to call again when its listing's annotations say it only
    /// reads or is idempotent ([`Upstreams::repeatable`]); the host's tools as the host says.
    fn repeatable(&self, call: &ToolCall<'_>) -> bool {
        match self.target(call) {
            Some((server, tool)) => self.upstreams.repeatable(server, tool),
            None => self.host.repeatable(call),
        }
    }
}

/// The upstream servers' tools as the analysis of a `.tool` file resolves them (`tdsl check
/// --upstream`, `tdsl run --upstream`; [`crate::analysis::ToolRoot::with_named`]): a
/// `tool_definition_path` `SERVER/TOOL` whose `SERVER` is an upstream is that server's tool,
/// declared from its schemas as for plans ([`UpstreamTool`]); each server is listed (started)
/// the first time a file names one of its tools. A tool the server does not offer is `E0901`,
/// a server that cannot be listed `E0903`, each with its reason.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct UpstreamCatalog {
    upstreams: Arc<Upstreams>,
    root: PathBuf,
    /// Each server's tools by name, converted once, or why they could not be listed.
    servers: Mutex<HashMap<String, Listed>>,
}

/// One server's tools by name, or why they could not be listed.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
type Listed = Result<Arc<HashMap<String, UpstreamTool>>, String>;

#[cfg_attr(not(feature = "cli"), allow(dead_code))]
impl UpstreamCatalog {
    /// The tools of `upstreams` for files under the tool root `root`.
    pub(crate) fn new(upstreams: Arc<Upstreams>, root: &Path) -> UpstreamCatalog {
        UpstreamCatalog { upstreams, root: root.to_path_buf(), servers: Mutex::new(HashMap::new()) }
    }

    fn tools(&self, server: &str) -> Listed {
        if let Some(known) = self.servers.lock().unwrap_or_else(PoisonError::into_inner).get(server) {
            return known.clone();
        }
        // Listed outside the lock: a slow server does not hold up the others' cached answers.
        let listed = self.upstreams.tools(server).map(|tools| {
            Arc::new(
                tools
                    .iter()
                    .filter_map(|t| upstream_tool(server, t))
                    .map(|t| (t.name.clone(), t))
                    .collect::<HashMap<_, _>>(),
            )
        });
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        servers.entry(server.to_string()).or_insert(listed).clone()
    }
}

impl NamedTools for UpstreamCatalog {
    fn resolve(&self, tool_path: &str) -> Option<Result<Arc<LoadedTool>, NameRefusal>> {
        let (server, tool) = split_tool(tool_path)?;
        self.upstreams.spec(server)?;
        let tools = match self.tools(server) {
            Ok(t) => t,
            Err(why) => {
                return Some(Err(NameRefusal {
                    code: Code::McpServerUnavailable,
                    message: format!("`{tool_path}` cannot be checked: {why}"),
                    label: "a tool of an upstream server that could not be listed".into(),
                    help: format!(
                        "the server is started (or connected to) to read its tools' schemas: check `--upstream {server}=…`, \
                         or wait longer with `--upstream-timeout`"
                    ),
                }))
            }
        };
        let Some(found) = tools.get(tool) else {
            // `tools/pause.tool` with an upstream named `tools`: a file under the root wins
            // over a tool the server does not offer.
            if self.root.join(tool_path).is_file() {
                return None;
            }
            let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
            names.sort_unstable();
            let help = match crate::suggest::did_you_mean(tool, names.iter().copied()) {
                Some(near) => format!("did you mean `{server}/{near}`?"),
                None if names.is_empty() => format!("`{server}` lists no tool"),
                None => {
                    let shown: Vec<String> = names.iter().take(20).map(|n| format!("`{server}/{n}`")).collect();
                    let more = if names.len() > shown.len() { ", …" } else { "" };
                    format!("its tools: {}{more}", shown.join(", "))
                }
            };
            return Some(Err(NameRefusal {
                code: Code::McpToolUnknown,
                message: format!("the upstream server `{server}` offers no tool `{}`", escape_controls(tool)),
                label: "no such tool on that server".into(),
                help,
            }));
        };
        Some(found.load_under(&self.root, tool_path).map_err(|first| untranslatable(tool_path, &first)))
    }
}

/// Whether an MCP `Tool` object's annotations say it is safe to call twice with the same
/// arguments: `readOnlyHint: true` (it changes nothing) or `idempotentHint: true` (a second
/// call changes nothing more). MCP's defaults are false for both.
pub(crate) fn repeatable(tool: &Json) -> bool {
    let hint = |key: &str| tool.get("annotations").and_then(|a| a.get(key)) == Some(&Json::Bool(true));
    hint("readOnlyHint") || hint("idempotentHint")
}

/// A server's tools as it listed them, shared until it is listed again.
pub type ToolList = Arc<Vec<Json>>;

/// The outcome of one more failed listing after `before`.
fn failed(before: &Known, error: String) -> Known {
    let failures = match before {
        Known::Failed { failures, .. } => failures.saturating_add(1),
        _ => 1,
    };
    Known::Failed { error, failures, retry_at: Instant::now() + retry_after(failures) }
}

/// Seconds as a person writes them: `30`, `0.5`.
fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// `NAME/TOOL` → (`NAME`, `TOOL`), for a name that could be an upstream's.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn split_tool(tool_path: &str) -> Option<(&str, &str)> {
    let (name, tool) = tool_path.split_once('/')?;
    (valid_name(name) && !tool.is_empty() && !tool.contains('/')).then_some((name, tool))
}

/// An upstream tool as the plan core takes it, from its MCP `Tool` object.
/// An object schema with no properties that does not forbid others (`{"type": "object",
/// "properties": {}}`, what a tool declaring nothing exports) accepts any object: it is
/// handed on without `properties`, which the core reads as "anything".
pub(crate) fn upstream_tool(server: &str, tool: &Json) -> Option<UpstreamTool> {
    let open = |schema: Json| -> Json {
        let empty = schema.get("properties").and_then(Json::as_object).is_some_and(serde_json::Map::is_empty);
        let closed = schema.get("additionalProperties") == Some(&Json::Bool(false));
        match schema {
            Json::Object(mut map) if empty && !closed => {
                map.remove("properties");
                Json::Object(map)
            }
            other => other,
        }
    };
    // A name a plan could not write as `SERVER/TOOL`, or that would carry a terminal's
    // escapes into the listing, is left out: MCP's tool names are 1–128 of `A-Z a-z 0-9 _ - .`.
    let name = tool.get("name")?.as_str()?;
    let valid = (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !valid {
        return None;
    }
    Some(UpstreamTool {
        server: server.to_string(),
        name: name.to_string(),
        description: tool.get("description").and_then(Json::as_str).map(str::to_string),
        input_schema: open(tool.get("inputSchema").cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}))),
        output_schema: tool.get("outputSchema").cloned().map(open),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upstream tool's name is what a plan writes after `SERVER/` and what the history
    /// records for each call (hostile round 15): 1–128 of `A-Z a-z 0-9 _ - .`, or the tool
    /// is left out of the listing (so no plan can name it).
    #[test]
    fn upstream_tool_names_are_bounded() {
        let tool = |name: &str| serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        let longest = "a".repeat(128);
        assert_eq!(upstream_tool("up", &tool(&longest)).map(|t| t.name), Some(longest));
        assert_eq!(upstream_tool("up", &tool("a.b-c_D9")).map(|t| t.name), Some("a.b-c_D9".to_string()));
        for refused in
            ["a".repeat(129), "a".repeat(300_000), String::new(), "a/b".into(), "a\u{1b}[2J".into(), "é".into()]
        {
            assert!(upstream_tool("up", &tool(&refused)).is_none(), "{:?}", &refused[..refused.len().min(20)]);
        }
    }

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
    fn a_failed_listing_is_remembered_longer_each_time_up_to_five_minutes() {
        let secs: Vec<u64> = [1, 2, 3, 6, 7, 40, u32::MAX].iter().map(|&n| retry_after(n).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 160, 300, 300, 300]);
        let Known::Failed { failures, .. } = failed(&failed(&Known::Nothing, "a".into()), "b".into()) else {
            panic!("not a failure")
        };
        assert_eq!(failures, 2);
        assert_eq!(
            (fmt_secs(Duration::from_secs(30)), fmt_secs(Duration::from_millis(500))),
            ("30".into(), "0.5".into())
        );
    }

    #[test]
    fn only_tools_annotated_read_only_or_idempotent_are_repeatable() {
        let with = |a: Json| serde_json::json!({"name": "t", "annotations": a});
        assert!(repeatable(&with(serde_json::json!({"readOnlyHint": true}))));
        assert!(repeatable(&with(serde_json::json!({"idempotentHint": true, "destructiveHint": true}))));
        assert!(!repeatable(&with(serde_json::json!({"readOnlyHint": false, "destructiveHint": true}))));
        assert!(!repeatable(&with(serde_json::json!({"idempotentHint": "true"}))));
        assert!(!repeatable(&serde_json::json!({"name": "t"})));
    }

    #[test]
    fn upstream_tool_names_split() {
        assert_eq!(split_tool("docs/extract"), Some(("docs", "extract")));
        assert_eq!(split_tool("/tools/a.tool"), None);
        assert_eq!(split_tool("docs/a/b"), None);
        assert_eq!(split_tool("docs/"), None);
    }
}
