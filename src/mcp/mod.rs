//! An MCP server offering the tools under a root (`tdsl serve --mcp`), built on the official
//! Rust SDK ([`rmcp`]).
//!
//! `tools/list` lists every `.tool` file under the root whose tool path matches one of the
//! allow globs (all of them when there is none), named and described as `tdsl export
//! --format mcp` does. `tools/call` validates the arguments against the input schema, then
//! runs the tool with the engine: a composite through [`Executor`], a primitive through the
//! host runner. A result is `structuredContent` plus its JSON as text; bad arguments and a
//! failed run are tool errors (`isError: true`) whose text names the failing step and the
//! reason. Only an unknown tool name is a protocol error.

pub mod framing;
#[cfg(feature = "mcp-http")]
pub mod http;
pub mod plans;
pub mod skills;
pub mod upstream;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use globset::GlobSet;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value as Json};

use crate::analysis::ToolRoot;
use crate::exec::guard::tool_globs;
use crate::exec::{CancelToken, Event, Executor, Observer, RunStatus, Runner, StepStatus, ToolCall, Workflow};
use crate::export::{export_names, export_tool, validate_arguments, Format};
use crate::host::HostRunner;
use crate::tool::{ToolDef, ToolKind};
use crate::value::Value;

/// One tool the server offers.
#[derive(Debug)]
pub struct Served {
    /// Its MCP name.
    pub name: String,
    /// Its tool path under the root (`/tools/main.tool`).
    pub tool_path: String,
    /// Its file.
    pub file: PathBuf,
    /// Its definition.
    pub def: ToolDef,
    /// Its MCP `Tool` object.
    pub tool: Json,
}

/// Makes the observer of each run a call of the server starts, besides the client's
/// progress: how a host records runs (`serve --history`: a history recorder per run).
pub trait RunObservers: Send + Sync + std::fmt::Debug {
    /// The observer of one more run.
    fn for_run(&self) -> Arc<dyn Observer>;
}

/// The name of the tool [`ComposeTool`] offers.
pub const COMPOSE: &str = "compose";

/// The tool `compose {query}` (`serve --mcp --plans --compose`, SPEC §17): the composer's four
/// phases with the client's model over MCP sampling ([`crate::compose::sampling`], feature
/// `compose`). Listed only to a client that declared the `sampling` capability.
pub trait ComposeTool: Send + Sync + std::fmt::Debug {
    /// The MCP `Tool` object.
    fn tool(&self) -> Json;
    /// Runs one call with the plans side's tools: the `tools/call` result. `cancel` is
    /// cancelled by the call's `notifications/cancelled` and by the server's shutdown.
    fn call(
        &self,
        plans: Arc<plans::PlanServer>,
        arguments: Json,
        context: RequestContext<RoleServer>,
        cancel: CancelToken,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Json> + Send>>;
}

/// The tools under a root, served over MCP.
///
/// A clone shares the tools, the shutdown and the limit on calls in flight; each session
/// of the HTTP transport gets its own clone from [`McpServer::for_session`], with its own
/// logging level.
#[derive(Clone, Debug)]
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
pub struct McpServer {
    inner: Arc<Inner>,
    /// Bounds the calls in flight (all sessions together), when set.
    calls: Option<CallLimit>,
    /// The level `logging/setLevel` asked for; no log messages until a client asks.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// Makes an observer for each run a call starts (`serve --history` records them), when
    /// set.
    run_observers: Option<Arc<dyn RunObservers>>,
    /// The environment of the processes tools start (`serve --clean-env`).
    tool_env: crate::host::ToolEnv,
    /// `check_plan`, `run_plan`, the guide and the prompt (`serve --plans`), when on.
    plans: Option<Arc<plans::PlanServer>>,
    /// The bounds of each composite run a call makes: its calls and its result's bytes
    /// (`serve --max-calls-per-run`, `--max-result-bytes`).
    run_guards: crate::exec::Guards,
    /// With plans on: `tools/list` shows only `check_plan` and `run_plan`, and only they can
    /// be called directly; the served tools stay callable from plans (`serve --plans-only`).
    plans_only: bool,
    /// The `compose` tool (`serve --plans --compose`), when on.
    compose: Option<Arc<dyn ComposeTool>>,
    /// `save_skill`, `delete_skill` and the skills (`serve --plans --skills DIR`), when on.
    skills: Option<Arc<skills::Skills>>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    tools: Vec<Served>,
    /// Turns true when the server shuts down (end of input, SIGTERM, SIGINT, SIGHUP): every call in
    /// flight is cancelled.
    shutdown: tokio::sync::watch::Sender<bool>,
    /// `tools/call` requests running now.
    in_flight: AtomicUsize,
}

/// Counts a call in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(count: &'a AtomicUsize) -> InFlight<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The JSON-RPC error code of a call refused because the server already runs as many calls
/// as its limit allows (`serve --max-calls`).
pub const SERVER_BUSY: i32 = -32001;

/// The default limit on `tools/call` requests in flight (`serve --max-calls`), over stdio
/// and HTTP alike.
pub const DEFAULT_MAX_CALLS: usize = 16;

/// The limit on calls in flight, and what a call over it gets.
#[derive(Clone, Debug)]
struct CallLimit {
    slots: Arc<tokio::sync::Semaphore>,
    /// Whether a call over the limit waits for a slot (stdio: one client, which expects an
    /// answer to every request) rather than being refused with [`SERVER_BUSY`] (HTTP: many
    /// clients, each told to try again).
    queue: bool,
}

/// How long the server waits, once it shuts down, for the calls it cancelled to answer
/// before it exits anyway (their programs are killed by the cancel; this bounds the exit
/// at about 2.5 s whatever a call does).
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(2500);

/// How [`McpServer::serve_io`]'s error starts when its output could not be written (other
/// than closed by the client, which is a quiet end): `tdsl serve` exits 1 on it.
pub const OUTPUT_FAILED: &str = "cannot write to standard output";

impl McpServer {
    /// Loads the `.tool` files under `root` whose tool paths match one of `allow` (every
    /// file when `allow` is empty). Files that do not load are left out, each with a line in
    /// `skipped`; two files with the same name are an error naming both.
    pub fn load(root: &Path, allow: &[String]) -> Result<(McpServer, Vec<String>), String> {
        McpServer::load_except(root, allow, None)
    }

    /// [`McpServer::load`], leaving out the files under `except` (the skills folder, whose
    /// skills [`McpServer::with_skills`] serves).
    pub fn load_except(
        root: &Path,
        allow: &[String],
        except: Option<&Path>,
    ) -> Result<(McpServer, Vec<String>), String> {
        let except = except.map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()));
        let globs = allow_set(allow)?;
        let tool_root = ToolRoot::new(root);
        let files = crate::analysis::tool_files_under(root).map_err(|(_, e)| format!("{}: {e}", root.display()))?;
        let mut loaded: Vec<(String, PathBuf, ToolDef)> = Vec::new();
        let mut skipped = Vec::new();
        for file in files {
            let Some(tool_path) = tool_root.tool_path_of(&file) else { continue };
            if !allow.is_empty() && !globs.is_match(&tool_path) {
                continue;
            }
            if except.as_ref().is_some_and(|d| std::fs::canonicalize(&file).is_ok_and(|f| f.starts_with(d))) {
                continue;
            }
            let source = match crate::input::read_text(&file) {
                Ok(s) => s,
                Err(e) => {
                    skipped.push(format!("{tool_path}: {e}"));
                    continue;
                }
            };
            let (def, diags) = crate::tool::load(&source);
            let Some(def) = def.filter(|_| diags.iter().all(|d| !d.is_error())) else {
                skipped.push(format!("{tool_path}: does not load (run `tdsl check` on it)"));
                continue;
            };
            loaded.push((tool_path, file, def));
        }
        // Named as `tdsl export` names the same set: the file stem unless two stems clash.
        let names = export_names(&loaded.iter().map(|(p, _, _)| p.as_str()).collect::<Vec<_>>());
        let mut tools: Vec<Served> = Vec::new();
        for ((tool_path, file, def), name) in loaded.into_iter().zip(names) {
            if let Some(other) = tools.iter().find(|t| t.name == name) {
                return Err(format!(
                    "{} and {} both get the tool name `{name}`; rename one of them",
                    other.file.display(),
                    file.display()
                ));
            }
            let tool = export_tool(Format::Mcp, &name, &def);
            tools.push(Served { name, tool_path, file, def, tool });
        }
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let inner = Arc::new(Inner { root, tools, shutdown, in_flight: AtomicUsize::new(0) });
        let server = McpServer {
            inner,
            calls: None,
            log_level: Arc::new(Mutex::new(None)),
            run_observers: None,
            tool_env: crate::host::ToolEnv::Inherit,
            plans: None,
            run_guards: served_run_guards(
                crate::ranges::SERVE_MAX_CALLS_PER_RUN,
                crate::ranges::SERVE_MAX_RESULT_BYTES,
            ),
            plans_only: false,
            compose: None,
            skills: None,
        };
        Ok((server, skipped))
    }

    /// The same server with at most `max` calls in flight at once: a call over the limit is
    /// refused with the JSON-RPC error [`SERVER_BUSY`] (what [`McpServer::serve_http`] sets
    /// up with `--max-calls`).
    pub fn with_call_limit(mut self, max: usize) -> McpServer {
        self.calls = Some(CallLimit { slots: Arc::new(tokio::sync::Semaphore::new(max)), queue: false });
        self
    }

    /// The same server with at most `max` calls in flight at once: a call over the limit
    /// waits for a slot, in the order the calls came, until one ends (or it is cancelled, or
    /// the server shuts down). [`McpServer::serve_stdio`] sets this up with
    /// [`DEFAULT_MAX_CALLS`] when no limit was set (`serve --max-calls`).
    pub fn with_queued_call_limit(mut self, max: usize) -> McpServer {
        self.calls = Some(CallLimit { slots: Arc::new(tokio::sync::Semaphore::new(max)), queue: true });
        self
    }

    /// A handle for a new session: the same tools, shutdown and call limit, a logging level
    /// of its own.
    pub fn for_session(&self) -> McpServer {
        McpServer {
            inner: self.inner.clone(),
            calls: self.calls.clone(),
            log_level: Arc::new(Mutex::new(None)),
            run_observers: self.run_observers.clone(),
            tool_env: self.tool_env.clone(),
            plans: self.plans.clone(),
            run_guards: self.run_guards.clone(),
            plans_only: self.plans_only,
            compose: self.compose.clone(),
            skills: self.skills.clone(),
        }
    }

    /// The same server bounding each composite run a call makes to `max_calls_per_run` calls
    /// and a result of `max_result_bytes` bytes of JSON (100,000 and 64 MiB by default;
    /// [`crate::ranges::MAX_CALLS_PER_RUN`], [`crate::ranges::MAX_RESULT_BYTES`]). Plans have
    /// theirs in [`crate::plans::PlanLimits`].
    pub fn with_run_limits(mut self, max_calls_per_run: usize, max_result_bytes: usize) -> McpServer {
        self.run_guards = served_run_guards(max_calls_per_run, max_result_bytes);
        self
    }

    /// The same server starting tools' processes with the environment `env` allows.
    pub fn with_tool_env(mut self, env: crate::host::ToolEnv) -> McpServer {
        self.tool_env = env;
        self
    }

    /// The same server offering plans too (`serve --plans`, [`plans`]): the tools
    /// `check_plan` and `run_plan`, the resources `tdsl://guide` and `tdsl://tools`, and the
    /// prompt `plan`, with the upstream servers' tools callable from plans.
    pub fn with_plans(mut self, options: plans::PlanOptions, upstreams: Arc<upstream::Upstreams>) -> McpServer {
        let server = plans::PlanServer::new(self.inner.root.clone(), &self.inner.tools, options, upstreams)
            .with_tool_env(self.tool_env.clone());
        self.plans = Some(Arc::new(server));
        self
    }

    /// The same server with skills (`serve --plans --skills DIR`, [`skills`]): the tools
    /// `save_skill` and `delete_skill`, the skills of `store` served as tools and callable
    /// from plans, the resource `tdsl://skills`. Needs plans on ([`McpServer::with_plans`]);
    /// the lines say which skills are not callable, and why.
    pub fn with_skills(
        mut self,
        store: crate::plans::skills::SkillStore,
        log: Option<Arc<dyn skills::SkillLog>>,
    ) -> Result<(McpServer, Vec<String>), String> {
        let Some(plans) = self.plans.clone() else {
            return Err("--skills needs --plans".to_string());
        };
        let mut taken: Vec<String> = self.inner.tools.iter().map(|t| t.name.clone()).collect();
        taken.push(COMPOSE.to_string());
        taken.extend(skills::tools().iter().filter_map(|t| t["name"].as_str().map(str::to_string)));
        let (loaded, problems) = skills::Skills::load(store, plans, taken);
        let loaded = match log {
            Some(l) => loaded.with_log(l),
            None => loaded,
        };
        self.skills = Some(Arc::new(loaded));
        Ok((self, problems))
    }

    /// The skills side, when `--skills` is on.
    pub fn skills(&self) -> Option<&skills::Skills> {
        self.skills.as_deref()
    }

    /// Whether `name` is `save_skill` or `delete_skill` (with skills on).
    fn is_skill_tool(&self, name: &str) -> bool {
        self.skills.is_some()
            && (name == skills::SAVE_SKILL || name == skills::DELETE_SKILL)
            && self.served_named(name).is_none()
    }

    /// The skill a client may call directly as `name` (none with `--plans-only`).
    fn skill_named(&self, name: &str) -> Option<Arc<skills::Skill>> {
        if self.plans_only() || self.served_named(name).is_some() {
            return None;
        }
        self.skills.as_ref()?.set().callable(name)
    }

    /// The plans side, when `--plans` is on.
    pub fn plans(&self) -> Option<&plans::PlanServer> {
        self.plans.as_deref()
    }

    /// The same server, with plans on ([`McpServer::with_plans`]), offering only
    /// `check_plan` and `run_plan` to a client when `only` (`serve --plans-only`): its
    /// `tools/list` shows those two (the resources and the `plan` prompt stay), a direct call
    /// of a served tool is refused as an unknown tool, and the served tools stay callable
    /// from plans and listed in `tdsl://tools`. Without plans on it changes nothing.
    pub fn with_plans_only(mut self, only: bool) -> McpServer {
        self.plans_only = only;
        self
    }

    /// Whether only the plan tools are offered to clients.
    fn plans_only(&self) -> bool {
        self.plans_only && self.plans.is_some()
    }

    /// The served tool a client may call directly as `name` (none with `--plans-only`).
    fn served_named(&self, name: &str) -> Option<&Served> {
        if self.plans_only() {
            return None;
        }
        self.inner.tools.iter().find(|t| t.name == name)
    }

    /// Whether `name` is `check_plan` or `run_plan` (with plans on, and no served tool a
    /// client may call by that name).
    fn is_plan_tool(&self, name: &str) -> bool {
        self.plans.is_some()
            && (name == plans::CHECK_PLAN || name == plans::RUN_PLAN)
            && self.served_named(name).is_none()
    }

    /// The same server offering the tool `compose` (`serve --compose`; it needs the plans
    /// side, [`McpServer::with_plans`], and is offered to clients that can sample).
    pub fn with_compose(mut self, compose: Arc<dyn ComposeTool>) -> McpServer {
        self.compose = Some(compose);
        self
    }

    /// The `compose` tool and the plans it runs with, when `name` is it (a served tool of
    /// that name keeps it).
    fn compose_tool(&self, name: &str) -> Option<(&Arc<dyn ComposeTool>, &Arc<plans::PlanServer>)> {
        let served = self.served_named(name).is_some();
        match (&self.compose, &self.plans) {
            (Some(c), Some(p)) if name == COMPOSE && !served => Some((c, p)),
            _ => None,
        }
    }

    /// Whether `name` is a tool this server offers.
    fn offers(&self, name: &str) -> bool {
        self.served_named(name).is_some()
            || self.is_plan_tool(name)
            || self.compose_tool(name).is_some()
            || self.is_skill_tool(name)
            || self.skill_named(name).is_some()
    }

    /// The same server giving each run a call starts an observer from `observers` too,
    /// besides the client's progress (the run history's recorder: `with_history`, in
    /// `crate::history`).
    pub fn with_run_observers(mut self, observers: Arc<dyn RunObservers>) -> McpServer {
        self.run_observers = Some(observers);
        self
    }

    /// Cancels every call in flight (their programs are killed) and ends the stdio server.
    pub fn shut_down(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// How many `tools/call` requests are running now.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// The tools offered.
    pub fn tools(&self) -> &[Served] {
        &self.inner.tools
    }

    /// Serves on standard input and output until the client closes its end or the process
    /// gets SIGTERM, SIGINT or SIGHUP ([`terminated`]); then cancels the calls in flight (killing their programs) and returns
    /// within [`SHUTDOWN_GRACE`]. Input goes through [`framing`], which answers what rmcp
    /// could not (oversized, unparsable or invalid messages).
    pub async fn serve_stdio(self) -> Result<(), String> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout(), terminated()).await
    }

    /// [`McpServer::serve_stdio`] over any byte streams, shutting down when `stop`
    /// completes too.
    pub async fn serve_io<R, W>(
        mut self,
        input: R,
        output: W,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), String>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use rmcp::ServiceExt;
        // Calls in flight are bounded on stdio too: each holds a thread while it runs.
        if self.calls.is_none() {
            self = self.with_queued_call_limit(DEFAULT_MAX_CALLS);
        }
        let (lines_tx, lines_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
        let shutdown = self.inner.shutdown.clone();
        // An output that cannot be written (closed, full) shuts the server down too.
        let writer = tokio::spawn(framing::write_output(output, lines_rx, shutdown.clone()));
        let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
        let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
        let input_done = {
            let (lines, down) = (lines_tx.clone(), shutdown.subscribe());
            tokio::spawn(framing::pump_input(input, to_rmcp, lines, down))
        };
        let output_done = tokio::spawn(framing::pump_output(from_rmcp, lines_tx));
        // The end of input or a signal starts the shutdown.
        let starter = {
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = input_done => {}
                    () = stop => {}
                }
                shutdown.send_replace(true);
            })
        };
        let result = match self.serve((rmcp_in, rmcp_out)).await {
            Ok(running) => {
                let mut down = shutdown.subscribe();
                tokio::select! {
                    r = running.waiting() => r.map(|_| ()).map_err(|e| format!("MCP server: {e}")),
                    _ = async {
                        let _ = down.wait_for(|d| *d).await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                    } => Ok(()),
                }
            }
            // A client that leaves before the handshake ends is not an error of ours.
            Err(_) if *shutdown.borrow() => Ok(()),
            Err(e) => Err(format!("MCP initialization: {e}")),
        };
        shutdown.send_replace(true);
        starter.abort();
        // What rmcp wrote before it stopped goes out; a stuck output does not hold the exit.
        let failed_write = tokio::time::timeout(Duration::from_millis(300), async {
            let _ = output_done.await;
            writer.await.ok().flatten()
        })
        .await
        .ok()
        .flatten();
        match failed_write {
            // The client closed its end of our output: it left, like the end of input.
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Some(e) => Err(format!("{OUTPUT_FAILED}: {e}")),
            None => result,
        }
    }

    /// Calls a tool by name: the `tools/call` result, or `None` when there is no such tool.
    pub fn call(&self, name: &str, arguments: Json) -> Option<Json> {
        self.call_with(name, arguments, &CancelToken::new(), None)
    }

    /// [`McpServer::call`], stopped when `cancel` is cancelled, reporting a composite's
    /// progress to `observer`.
    pub fn call_with(
        &self,
        name: &str,
        arguments: Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
    ) -> Option<Json> {
        let served = self.served_named(name);
        if self.is_skill_tool(name) {
            return self.change_skills(name, &arguments, None, None).map(|(answer, _)| answer);
        }
        let skill = if served.is_none() && !self.is_plan_tool(name) { self.skill_named(name) } else { None };
        let plan_tool = match (served, &self.plans) {
            (None, Some(p)) if name == plans::CHECK_PLAN => return Some(p.check_plan(&arguments)),
            (None, Some(_)) if skill.is_some() => None,
            (None, Some(p)) if name == plans::RUN_PLAN => Some(p.clone()),
            (None, _) => return None,
            (Some(_), _) => None,
        };
        let observer = match &self.run_observers {
            Some(make) => {
                let extra = make.for_run();
                Some(match observer {
                    Some(o) => Arc::new(Observers(vec![o, extra])) as Arc<dyn Observer>,
                    None => extra,
                })
            }
            None => observer,
        };
        if let (Some(skills), Some(skill)) = (&self.skills, skill) {
            return skills.call(&skill.name, arguments, cancel, observer);
        }
        match (served, plan_tool) {
            (Some(served), _) => Some(call_served(
                &self.inner.root,
                served,
                arguments,
                cancel,
                observer,
                &self.tool_env,
                &self.run_guards,
            )),
            (None, Some(p)) => Some(p.run_plan(&arguments, cancel, observer)),
            (None, None) => None,
        }
    }

    /// `save_skill` or `delete_skill` by a client (its name and session, for the history):
    /// the answer, and whether the tools changed.
    fn change_skills(
        &self,
        name: &str,
        arguments: &Json,
        client: Option<String>,
        session: Option<String>,
    ) -> Option<(Json, bool)> {
        let skills = self.skills.as_ref()?;
        Some(if name == skills::SAVE_SKILL {
            skills.save(arguments, client, session)
        } else {
            skills.delete(arguments, client, session)
        })
    }

    /// How many steps the composite served under `name` has (1 for a primitive tool): the
    /// `total` of its progress notifications.
    fn steps_of(&self, name: &str, arguments: &Json) -> usize {
        if name == plans::RUN_PLAN && self.is_plan_tool(name) {
            return plans::PlanServer::steps_of(arguments);
        }
        if let Some(skill) = self.skill_named(name) {
            return match skill.served.as_ref().map(|t| &t.def.kind) {
                Some(ToolKind::Composite { instructions, .. }) => instructions.len(),
                _ => 1,
            };
        }
        match self.served_named(name).map(|t| &t.def.kind) {
            Some(ToolKind::Composite { instructions, .. }) => instructions.len(),
            _ => 1,
        }
    }
}

/// The guards of a served composite's run.
fn served_run_guards(max_calls_per_run: usize, max_result_bytes: usize) -> crate::exec::Guards {
    crate::exec::Guards::new().max_calls_per_run(max_calls_per_run).max_result_bytes(max_result_bytes)
}

/// The result of a call, in the `tools/call` result shape.
fn call_served(
    root: &Path,
    served: &Served,
    arguments: Json,
    cancel: &CancelToken,
    observer: Option<Arc<dyn Observer>>,
    tool_env: &crate::host::ToolEnv,
    guards: &crate::exec::Guards,
) -> Json {
    let arguments = with_defaults(&served.def, arguments);
    if let Err(why) = validate_arguments(&served.def, &arguments) {
        return tool_error(format!("invalid arguments for `{}`: {why}", served.name));
    }
    let args: Value = match serde_json::from_value(arguments) {
        Ok(v) => v,
        Err(e) => return tool_error(format!("invalid arguments for `{}`: {e}", served.name)),
    };
    match &served.def.kind {
        ToolKind::Composite { .. } => {
            let workflow = match Workflow::load(root, &served.file) {
                Ok(w) => w,
                Err(e) => return tool_error(format!("`{}` cannot run: {e}", served.tool_path)),
            };
            let options = crate::exec::Options { guards: guards.clone(), ..crate::exec::Options::default() };
            let mut executor = Executor::new(HostRunner::new().with_env(tool_env.clone())).with_options(options);
            if let Some(o) = observer {
                executor = executor.with_observer(o);
            }
            let run = match executor.run_cancellable(&workflow, args, cancel) {
                Ok(r) => r,
                Err(refused) => return tool_error(format!("refused before the run: {refused} [{}]", refused.code())),
            };
            match (run.status, run.result) {
                (RunStatus::Success | RunStatus::Partial, Some(result)) => success(result),
                (status, _) => {
                    let why = run.error.map_or_else(|| "no reason recorded".to_string(), |e| e.to_string());
                    tool_error(format!("{}: {why}", status.as_str()))
                }
            }
        }
        ToolKind::Primitive { .. } => {
            let call = ToolCall {
                tool_path: &served.tool_path,
                definition: Some(&served.def),
                file: Some(&served.file),
                arguments: &args,
                cancel,
                timeout: None,
                attempt: 1,
            };
            match HostRunner::new().with_env(tool_env.clone()).call(&call) {
                Ok(_) | Err(_) if cancel.is_cancelled() => tool_error(format!("`{}` was cancelled", served.tool_path)),
                // Checked against its declared `responses` as a run checks a step's answer.
                Ok(v) => match check_primitive_response(served, &v) {
                    Ok(()) => success(v),
                    Err(why) => {
                        tool_error(format!("FAILED: {why} [{}]", crate::diagnostic::Code::ResponseInvalid.as_str()))
                    }
                },
                // The runner's message already names the tool path.
                Err(e) => tool_error(format!("FAILED: {e}")),
            }
        }
    }
}

/// A primitive tool's answer against its declared `responses`, by the check a run makes of
/// a step's answer (`E0802`): the message when it does not match.
fn check_primitive_response(served: &Served, result: &Value) -> Result<(), String> {
    let tool = crate::exec::Tool::Primitive { def: Arc::new(served.def.clone()), file: served.file.clone() };
    crate::exec::data::check_response(Some(&tool), &served.tool_path, result)
}

/// The arguments with each declared `default` put in where the key is absent or `null`, as a
/// run does (`docs/tool-format.md`), so that a primitive tool receives them too.
fn with_defaults(def: &ToolDef, arguments: Json) -> Json {
    let Json::Object(mut map) = arguments else { return arguments };
    for p in &def.arguments {
        let Some(d) = crate::tool::validate::default_of(p) else { continue };
        let name = p.name.node.as_str();
        if map.get(name).is_none_or(Json::is_null) {
            if let Ok(v) = serde_json::to_value(d) {
                map.insert(name.to_string(), v);
            }
        }
    }
    Json::Object(map)
}

/// Completes on SIGTERM, SIGINT or SIGHUP (a service manager, Ctrl-C, a closed terminal):
/// each ends the server as the end of its input does, its calls cancelled and their
/// programs ended, its runs recorded. Never completes on platforms without signals; a
/// signal whose handler cannot be set keeps its default action.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        async fn recv(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        if term.is_some() || int.is_some() || hup.is_some() {
            tokio::select! {
                () = recv(&mut term) => {}
                () = recv(&mut int) => {}
                () = recv(&mut hup) => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await;
}

fn success(result: Value) -> Json {
    let result = serde_json::to_value(&result).unwrap_or(Json::Null);
    let text = serde_json::to_string_pretty(&result).unwrap_or_default();
    let mut out = json!({"content": [{"type": "text", "text": text}], "isError": false});
    // structuredContent must be an object (MCP): other values are left to the text.
    if result.is_object() {
        out["structuredContent"] = result;
    }
    out
}

fn tool_error(message: String) -> Json {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// Sends `notifications/progress` for a composite's run: one per step of the composite
/// that ends (`progress` counts them, `total` is its number of steps), with a message
/// naming the step and its status. Events come from worker threads; a channel keeps the
/// notifications in the order of their `progress`, and the call awaits its forwarding task
/// before it answers, so no notification comes after the result.
struct Progress {
    tx: Mutex<(usize, tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>)>,
    token: ProgressToken,
    total: usize,
}

impl Progress {
    /// The observer, and the task that sends its notifications in order; the task ends when
    /// the observer is dropped and everything it queued is sent.
    fn start(peer: Peer<RoleServer>, token: ProgressToken, total: usize) -> (Progress, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
        let forwarder = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                // A client that went away gets no more progress; the run goes on.
                if peer.notify_progress(p).await.is_err() {
                    break;
                }
            }
        });
        (Progress { tx: Mutex::new((0, tx)), token, total }, forwarder)
    }
}

impl Observer for Progress {
    fn event(&self, event: &Event<'_>) {
        let Event::StepEnded { step, status, reason } = event else { return };
        if step.contains('/') {
            return; // a step of a composite callee
        }
        let mut guard = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        guard.0 += 1;
        let mut message = format!("step `{step}` {}", status.as_str());
        if let Some(reason) = reason {
            message.push_str(&format!(": {reason}"));
        }
        let param = ProgressNotificationParam::new(self.token.clone(), guard.0 as f64)
            .with_total(self.total as f64)
            .with_message(message);
        let _ = guard.1.send(param);
    }
}

/// Several observers of one run.
struct Observers(Vec<Arc<dyn Observer>>);

impl Observer for Observers {
    fn event(&self, event: &Event<'_>) {
        for o in &self.0 {
            o.event(event);
        }
    }
}

/// Sends `notifications/message` for a composite's steps at or above the level the client
/// set with `logging/setLevel`: a step started (`info`), retried (`warning`), failed or
/// timed out (`error`), steps of composite callees included. The logger is `tdsl`; `data`
/// is an object: `{"event": "started", "step": "fetch", "tool": "/tools/fetch.tool"}`,
/// `{"event": "retried", "step", "attempt", "reason"}`, `{"event": "failed", "step",
/// "status", "reason"}`. Like progress, every message goes out before the call's result.
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
struct StepLog {
    tx: Mutex<tokio::sync::mpsc::UnboundedSender<LoggingMessageNotificationParam>>,
    level: LoggingLevel,
}

#[allow(deprecated)]
impl StepLog {
    fn start(peer: Peer<RoleServer>, level: LoggingLevel) -> (StepLog, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<LoggingMessageNotificationParam>();
        let forwarder = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if peer.notify_logging_message(m).await.is_err() {
                    break;
                }
            }
        });
        (StepLog { tx: Mutex::new(tx), level }, forwarder)
    }
}

/// The log message for an event: its level and data (`None` for events not logged).
#[allow(deprecated)]
pub fn log_message(event: &Event<'_>) -> Option<(LoggingLevel, Json)> {
    match event {
        Event::StepStarted { step, tool } => {
            Some((LoggingLevel::Info, json!({"event": "started", "step": step, "tool": tool})))
        }
        Event::StepRetried { step, attempt, reason } => Some((
            LoggingLevel::Warning,
            json!({"event": "retried", "step": step, "attempt": attempt, "reason": reason}),
        )),
        Event::StepEnded { step, status: status @ (StepStatus::Failed | StepStatus::Timeout), reason } => Some((
            LoggingLevel::Error,
            json!({"event": "failed", "step": step, "status": status.as_str(), "reason": reason}),
        )),
        _ => None,
    }
}

/// RFC 5424's order of levels, least severe first.
#[allow(deprecated)]
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[allow(deprecated)]
impl Observer for StepLog {
    fn event(&self, event: &Event<'_>) {
        let Some((level, data)) = log_message(event) else { return };
        if severity(level) < severity(self.level) {
            return;
        }
        let message = LoggingMessageNotificationParam::new(level, data).with_logger("tdsl");
        let _ = self.tx.lock().unwrap_or_else(PoisonError::into_inner).send(message);
    }
}

/// The session of a request over Streamable HTTP (its `Mcp-Session-Id`); none on stdio.
fn session_of(context: &RequestContext<RoleServer>) -> Option<String> {
    #[cfg(feature = "mcp-http")]
    {
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
    #[cfg(not(feature = "mcp-http"))]
    {
        let _ = context;
        None
    }
}

/// The `--allow` globs, built as `run --allow-tool` builds its own ([`tool_globs`]).
fn allow_set(allow: &[String]) -> Result<GlobSet, String> {
    tool_globs(allow).map_err(|e| format!("--allow: {e}"))
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
    fn get_info(&self) -> ServerConfig {
        if self.plans.is_some() {
            return plans::server_config(self.skills.is_some());
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_logging().build())
            .with_server_info(Implementation::new("tdsl", env!("CARGO_PKG_VERSION")))
            .with_instructions("Composite tools defined in .tool files, run by the tdsl engine.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        plans::list_resources(self.plans.is_some(), self.skills.is_some())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        plans::read_resource(self.plans.clone(), request.uri.to_string()).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        plans::list_prompts(self.plans.is_some())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        plans::get_prompt(self.plans.clone(), request).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools: Vec<Json> =
            self.inner.tools.iter().filter(|t| self.served_named(&t.name).is_some()).map(|t| t.tool.clone()).collect();
        if self.plans.is_some() {
            // A served tool of the same name keeps it (the plan tool is not offered then),
            // unless only the plan tools are offered.
            tools.extend(
                plans::PlanServer::tools_for(self.skills.is_some())
                    .into_iter()
                    .filter(|t| t["name"].as_str().is_some_and(|n| self.is_plan_tool(n))),
            );
        }
        if let Some(skills) = &self.skills {
            tools.extend(
                skills::tools().into_iter().filter(|t| t["name"].as_str().is_some_and(|n| self.is_skill_tool(n))),
            );
            if !self.plans_only() {
                for s in skills.set().all() {
                    if let Some(served) = s.served.as_ref().filter(|_| self.skill_named(&s.name).is_some()) {
                        tools.push(served.tool.clone());
                    }
                }
            }
        }
        // `compose` only for a client whose model the server can ask (it declared sampling).
        let samples = context.peer.peer_info().is_some_and(|i| i.capabilities.sampling.is_some());
        if let Some((compose, _)) = self.compose_tool(COMPOSE).filter(|_| samples) {
            tools.push(compose.tool());
        }
        let mut tools_parsed: Vec<Tool> = Vec::with_capacity(tools.len());
        for t in tools {
            tools_parsed.push(serde_json::from_value(t).map_err(|e| McpError::internal_error(e.to_string(), None))?);
        }
        let mut result: ListToolsResult =
            serde_json::from_value(json!({"tools": []})).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        result.tools = tools_parsed;
        Ok(result)
    }

    #[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }

    /// rmcp hands over as a custom request any request whose `params` it cannot read (none,
    /// or not of the shape its method needs, as `logging/setLevel` with an unknown level):
    /// for a method the protocol defines that is `-32602` invalid params, saying why (for
    /// `tools/call`, the message the stdio framing gives the same message,
    /// [`framing::judge`]); only a method the protocol does not define is `-32601`.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        let mut message = json!({"jsonrpc": "2.0", "id": 0, "method": request.method});
        if let Some(params) = request.params {
            message["params"] = params;
        }
        if request.method == "tools/call" {
            let line = serde_json::to_vec(&message).unwrap_or_default();
            let why = match framing::judge(&line, false) {
                framing::Verdict::Answer(a) => a["error"]["message"].as_str().map(str::to_string),
                _ => None,
            };
            return Err(McpError::invalid_params(
                why.unwrap_or_else(|| "invalid params: `tools/call` needs params with a string `name`".to_string()),
                None,
            ));
        }
        match framing::unreadable_params(&message) {
            Some(why) => Err(McpError::invalid_params(why, None)),
            None => Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if !self.offers(&name) {
            let hint = if self.plans_only() && self.inner.tools.iter().any(|t| t.name == name) {
                format!(
                    "; this server offers only `{}` and `{}` (serve --plans-only): call `{name}` from a plan",
                    plans::CHECK_PLAN,
                    plans::RUN_PLAN
                )
            } else {
                String::new()
            };
            return Err(McpError::invalid_params(format!("no tool named `{name}`{hint}"), None));
        }
        let arguments = Json::Object(request.arguments.unwrap_or_default());
        if self.is_skill_tool(&name) {
            // Who saved or deleted it: the client's name from `initialize`, and its session.
            let client = context.peer.peer_info().map(|i| i.client_info.name.clone());
            let session = session_of(&context);
            let server = self.clone();
            let (answer, changed) = tokio::task::spawn_blocking(move || {
                server.change_skills(&name, &arguments, client, session).unwrap_or((Json::Null, false))
            })
            .await
            .map_err(|e| McpError::internal_error(format!("the skill change panicked: {e}"), None))?;
            if changed {
                // Before the answer: the client lists the tools again, the new one among them.
                let _ = context.peer.notify_tool_list_changed().await;
            }
            let result: CallToolResult =
                serde_json::from_value(answer).map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(result.into());
        }
        // The upstream listings a plan needs are waited for before the call takes a slot:
        // a hung upstream holds no slot of `--max-calls`.
        if let Some(plans) = self.plans.as_ref().filter(|_| self.is_plan_tool(&name)) {
            tokio::select! {
                () = plans.prepare(&arguments) => {}
                () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
            }
        }
        // Over the limit of calls in flight: queued (stdio) or refused at once, the client
        // may try again (HTTP).
        let _permit =
            match &self.calls {
                Some(limit) => match limit.slots.clone().try_acquire_owned() {
                    Ok(p) => Some(p),
                    Err(_) if limit.queue => {
                        let mut down = self.inner.shutdown.subscribe();
                        tokio::select! {
                            p = limit.slots.clone().acquire_owned() => p.ok(),
                            () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
                            _ = down.wait_for(|d| *d) => {
                                return Err(McpError::internal_error("the server is shutting down", None))
                            }
                        }
                    }
                    Err(_) => return Err(McpError::new(
                        ErrorCode(SERVER_BUSY),
                        "the server is running as many tool calls as it allows (serve --max-calls); try again later",
                        None,
                    )),
                },
                None => None,
            };
        let _in_flight = InFlight::new(&self.inner.in_flight);
        // `notifications/cancelled` cancels the context's token: that cancels the run, whose
        // calls in flight are cancelled in turn (their programs killed). rmcp drops the
        // response to a cancelled request, as the protocol asks.
        let cancel = CancelToken::new();
        let watcher = {
            let (ct, cancel) = (context.ct.clone(), cancel.clone());
            let mut down = self.inner.shutdown.subscribe();
            tokio::spawn(async move {
                tokio::select! {
                    () = ct.cancelled() => {}
                    _ = down.wait_for(|d| *d) => {}
                }
                cancel.cancel();
            })
        };
        if let Some((compose, plans)) = self.compose_tool(&name) {
            let result = compose.call(plans.clone(), arguments, context, cancel).await;
            watcher.abort();
            let result: CallToolResult =
                serde_json::from_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(result.into());
        }
        let mut observers: Vec<Arc<dyn Observer>> = Vec::new();
        let mut forwarders = Vec::new();
        if let Some(token) = context.meta.get_progress_token() {
            let (progress, forwarder) = Progress::start(context.peer.clone(), token, self.steps_of(&name, &arguments));
            observers.push(Arc::new(progress));
            forwarders.push(forwarder);
        }
        let level = *self.log_level.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(level) = level {
            let (log, forwarder) = StepLog::start(context.peer.clone(), level);
            observers.push(Arc::new(log));
            forwarders.push(forwarder);
        }
        let observer = match observers.len() {
            0 => None,
            1 => observers.pop(),
            _ => Some(Arc::new(Observers(observers)) as Arc<dyn Observer>),
        };
        let server = self.clone();
        let result = tokio::task::spawn_blocking(move || server.call_with(&name, arguments, &cancel, observer))
            .await
            .map_err(|e| McpError::internal_error(format!("the run panicked: {e}"), None));
        watcher.abort();
        // The run is over and its observer dropped, which ends the progress channel: every
        // notification goes out before the result (the protocol has no progress after it).
        for forwarder in forwarders {
            let _ = forwarder.await;
        }
        let result = result?.unwrap_or(Json::Null);
        let result: CallToolResult =
            serde_json::from_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}
