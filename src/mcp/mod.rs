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

mod abandon;
pub mod framing;
mod handler;
#[cfg(feature = "mcp-http")]
pub mod http;
mod making;
mod notifications;
pub mod plans;
mod pumps;
mod served;
pub mod skills;
pub(crate) mod spliced;
mod stdio;
pub mod upstream;

pub use served::Served;
#[cfg(feature = "cli")]
pub use stdio::terminated;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use globset::GlobSet;
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
use rmcp::model::LoggingLevel;
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::Value as Json;

use crate::analysis::ToolRoot;
use crate::exec::guard::tool_globs;
use crate::exec::{CancelToken, Observer};
use crate::export::{export_names, export_tool, Format};
use crate::tool::{ToolDef, ToolKind};
use notifications::Observers;
use served::{call_served, ServedLimits};

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
    /// The most values one tool output may hold (`serve --max-tool-values`).
    max_tool_values: usize,
    /// `check_plan`, `run_plan`, the guide and the prompt (`serve --plans`), when on.
    plans: Option<Arc<plans::PlanServer>>,
    /// The bounds of each composite run a call makes: its calls and its result's bytes
    /// (`serve --max-calls-per-run`, `--max-result-bytes`).
    run_limits: ServedLimits,
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
    /// The runs of the calls whose threads have not come back yet (running, or answered as
    /// cancelled and not stopped yet), by a number of their own: ended in their place when
    /// the server stops ([`McpServer::end_leftover_runs`]).
    leftovers: Mutex<Leftovers>,
    /// The number of the next leftover run.
    next_leftover: std::sync::atomic::AtomicU64,
    /// The answers outside `--max-calls` being made and not yet written, all sessions
    /// together (`resources/read`, `prompts/get`).
    making: making::Making,
}

/// The runs still out, and whether the server stopped (a run kept after that is ended at
/// once: it never starts recording).
#[derive(Default)]
struct Leftovers {
    runs: Vec<(u64, abandon::RunEnding)>,
    stopped: bool,
    /// The thread ending the runs still out when the server stopped
    /// ([`McpServer::end_leftover_runs`]), until [`McpServer::finish_runs`] joins it.
    ending: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leftovers")
            .field("runs", &self.runs.len())
            .field("stopped", &self.stopped)
            .field("ending", &self.ending.is_some())
            .finish()
    }
}

impl Inner {
    /// Keeps `ending` until [`Inner::forget_leftover`] is called with the number returned;
    /// once the server stopped, ends it at once instead.
    fn keep_leftover(&self, ending: abandon::RunEnding) -> u64 {
        let n = self.next_leftover.fetch_add(1, Ordering::SeqCst);
        let mut leftovers = self.leftovers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if leftovers.stopped {
            drop(leftovers);
            ending.abandon();
        } else {
            leftovers.runs.push((n, ending));
        }
        n
    }

    fn forget_leftover(&self, n: u64) {
        self.leftovers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).runs.retain(|(m, _)| *m != n);
    }
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
    /// As many places as `slots`, for cancelled calls whose thread has not come back yet (a
    /// plan's static check stops at its next poll of the cancel, a tool may not): a cancelled call gives its slot back
    /// at once when it takes one of these, so that a client cannot make the server hold more
    /// than twice the limit of threads by cancelling.
    leftover: Arc<tokio::sync::Semaphore>,
}

impl CallLimit {
    fn new(max: usize, queue: bool) -> CallLimit {
        let semaphore = || Arc::new(tokio::sync::Semaphore::new(max));
        CallLimit { slots: semaphore(), queue, leftover: semaphore() }
    }
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
        let inner = Arc::new(Inner {
            root,
            tools,
            shutdown,
            in_flight: AtomicUsize::new(0),
            leftovers: Mutex::default(),
            next_leftover: std::sync::atomic::AtomicU64::new(0),
            making: making::Making::default(),
        });
        let server = McpServer {
            inner,
            calls: None,
            log_level: Arc::new(Mutex::new(None)),
            run_observers: None,
            tool_env: crate::host::ToolEnv::Inherit,
            max_tool_values: crate::ranges::SERVE_MAX_TOOL_VALUES,
            plans: None,
            run_limits: ServedLimits::default(),
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
        self.calls = Some(CallLimit::new(max, false));
        self
    }

    /// The same server with at most `max` calls in flight at once: a call over the limit
    /// waits for a slot, in the order the calls came, until one ends (or it is cancelled, or
    /// the server shuts down). [`McpServer::serve_stdio`] sets this up with
    /// [`DEFAULT_MAX_CALLS`] when no limit was set (`serve --max-calls`).
    pub fn with_queued_call_limit(mut self, max: usize) -> McpServer {
        self.calls = Some(CallLimit::new(max, true));
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
            max_tool_values: self.max_tool_values,
            plans: self.plans.clone(),
            run_limits: self.run_limits.clone(),
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
        self.run_limits.max_calls_per_run = max_calls_per_run;
        self.run_limits.max_result_bytes = max_result_bytes;
        self
    }

    /// The same server running each served composite under the plans' per-run budgets: at
    /// most `max_run_fuel` fuel and `max_run_memory` bytes of values (500,000,000 and 512 MiB
    /// by default), the bytes taken from `pool` too — the pool the plans' runs share (`serve
    /// --max-memory-in-flight`, 2 GiB by default) — and stopped at `deadline` (`TIMEOUT`;
    /// 120 s by default, `serve --deadline`).
    pub fn with_run_budgets(
        mut self,
        max_run_fuel: u64,
        max_run_memory: u64,
        pool: crate::runtime::MemoryPool,
        deadline: std::time::Duration,
    ) -> McpServer {
        self.run_limits.max_run_fuel = max_run_fuel;
        self.run_limits.max_run_memory = max_run_memory;
        self.run_limits.pool = pool;
        self.run_limits.deadline = deadline;
        self
    }

    /// The same server starting tools' processes with the environment `env` allows.
    pub fn with_tool_env(mut self, env: crate::host::ToolEnv) -> McpServer {
        self.tool_env = env;
        self
    }

    /// The same server reading each output of the tools it runs — served tools, plans'
    /// steps — as at most `values` values ([`crate::HostRunner::with_max_values`]; 1 Mi by
    /// default, [`crate::ranges::SERVE_MAX_TOOL_VALUES`]). Set it before
    /// [`McpServer::with_plans`], which hands it on.
    pub fn with_max_tool_values(mut self, values: usize) -> McpServer {
        self.max_tool_values = values;
        self
    }

    /// The same server offering plans too (`serve --plans`, [`plans`]): the tools
    /// `check_plan` and `run_plan`, the resources `tdsl://guide` and `tdsl://tools`, and the
    /// prompt `plan`, with the upstream servers' tools callable from plans.
    pub fn with_plans(mut self, options: plans::PlanOptions, upstreams: Arc<upstream::Upstreams>) -> McpServer {
        let server = plans::PlanServer::new(self.inner.root.clone(), &self.inner.tools, options, upstreams)
            .with_tool_env(self.tool_env.clone())
            .with_max_tool_values(self.max_tool_values);
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

    /// Ends in the history, in their place, the runs of calls whose threads have not come
    /// back ([`abandon`]), and every run a call starts from now on: the server stops, and
    /// nothing else would. The writes are made on a thread of their own (a run writing its
    /// own end is waited for, and the history's writes may wait): it returns at once, and
    /// [`McpServer::finish_runs`] waits for them, before the process exits.
    pub(crate) fn end_leftover_runs(&self) {
        let mut l = self.inner.leftovers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if l.stopped {
            return;
        }
        l.stopped = true;
        let runs: Vec<abandon::RunEnding> = std::mem::take(&mut l.runs).into_iter().map(|(_, e)| e).collect();
        let kept = runs.clone();
        let end = move || runs.iter().for_each(abandon::RunEnding::abandon);
        match std::thread::Builder::new().name("tdsl-run-ends".to_string()).spawn(end) {
            Ok(thread) => l.ending = Some(thread),
            // No thread to be had: ended here.
            Err(_) => {
                drop(l);
                kept.iter().for_each(abandon::RunEnding::abandon);
            }
        }
    }

    /// Ends the runs still out ([`McpServer::end_leftover_runs`], when the transport did
    /// not), then waits until each run's end is written — its own, or the one written in
    /// its place — for at most `bound`. Blocking: `serve` calls it last, outside the async
    /// runtime, so that the process exits only once the history holds every run's end.
    /// Whether they all were written within `bound`.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn finish_runs(&self, bound: Duration) -> bool {
        self.end_leftover_runs();
        let ending = self.inner.leftovers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).ending.take();
        let Some(thread) = ending else { return true };
        let asked = std::time::Instant::now();
        while !thread.is_finished() {
            if asked.elapsed() >= bound {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = thread.join();
        true
    }

    /// Whether some call still has its run's thread out.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(crate) fn has_leftover_runs(&self) -> bool {
        !self.inner.leftovers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).runs.is_empty()
    }

    /// How many `tools/call` requests are running now.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// The tools offered.
    pub fn tools(&self) -> &[Served] {
        &self.inner.tools
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
        self.call_ending(name, arguments, cancel, observer, &abandon::RunEnding::default()).map(spliced::expand)
    }

    /// [`McpServer::call_with`], the run's recorder (`with_run_observers`) wrapped by
    /// `ending`, so that the call can end the run in its place ([`abandon`]). A large
    /// answer's text is marked, to be spliced in as it goes out ([`spliced`]).
    fn call_ending(
        &self,
        name: &str,
        arguments: Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
        ending: &abandon::RunEnding,
    ) -> Option<Json> {
        let served = self.served_named(name);
        if self.is_skill_tool(name) {
            return self.change_skills(name, &arguments, None, None, cancel).map(|(answer, _)| answer);
        }
        let skill = if served.is_none() && !self.is_plan_tool(name) { self.skill_named(name) } else { None };
        let plan_tool = match (served, &self.plans) {
            (None, Some(p)) if name == plans::CHECK_PLAN => return Some(p.check_plan_cancellable(&arguments, cancel)),
            (None, Some(_)) if skill.is_some() => None,
            (None, Some(p)) if name == plans::RUN_PLAN => Some(p.clone()),
            (None, _) => return None,
            (Some(_), _) => None,
        };
        let observer = match &self.run_observers {
            Some(make) => {
                let extra = ending.wrap(make.for_run());
                Some(match observer {
                    Some(o) => Arc::new(Observers(vec![o, extra])) as Arc<dyn Observer>,
                    None => extra,
                })
            }
            None => observer,
        };
        if let (Some(skills), Some(skill)) = (&self.skills, skill) {
            return skills.call_marked(&skill.name, arguments, cancel, observer);
        }
        match (served, plan_tool) {
            (Some(served), _) => Some(call_served(
                &self.inner.root,
                served,
                arguments,
                cancel,
                observer,
                served::host_runner(&self.tool_env, self.max_tool_values),
                &self.run_limits,
            )),
            (None, Some(p)) => Some(p.run_plan_marked(&arguments, cancel, observer)),
            (None, None) => None,
        }
    }

    /// `save_skill` or `delete_skill` by a client (its name and session, for the history),
    /// stopped by `cancel` before its write ([`skills::Skills::save`]): the answer, and
    /// whether the tools changed.
    fn change_skills(
        &self,
        name: &str,
        arguments: &Json,
        client: Option<String>,
        session: Option<String>,
        cancel: &CancelToken,
    ) -> Option<(Json, bool)> {
        let skills = self.skills.as_ref()?;
        Some(if name == skills::SAVE_SKILL {
            skills.save(arguments, client, session, cancel)
        } else {
            skills.delete(arguments, client, session, cancel)
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

/// The `--allow` globs, built as `run --allow-tool` builds its own ([`tool_globs`]).
fn allow_set(allow: &[String]) -> Result<GlobSet, String> {
    tool_globs(allow).map_err(|e| format!("--allow: {e}"))
}
