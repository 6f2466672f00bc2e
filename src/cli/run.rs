//! `tdsl run <TOOL> [--root DIR] [--args FILE.json | --arg NAME=JSON ...] [--trace FILE]
//! [--mock FILE] [--upstream NAME=COMMAND|URL ...]` and `tdsl replay TRACE [--upstream …]`.
//!
//! `run` prints the composite's result as JSON on standard output. Exit status: 0 for
//! SUCCESS and PARTIAL, 1 for FAILED and TIMEOUT (with the failing step and the reason on
//! standard error) and for definitions that do not check or that a guard refuses, 2 when
//! the command itself cannot run. On a terminal, progress goes to standard error.
//!
//! `replay` re-runs a trace's composite from its recorded responses and clock reads, with
//! no tool calls, prints the result, and lists every divergence from the recording; exit 0
//! when there is none, 1 otherwise.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::check::{tool_file, tool_root};
use super::printable::printable;
use super::progress::{HistoryArgs, Observers, Progress};
use super::signals::Interrupts;
use super::upstreams::{with_upstreams, UpstreamArgs};
use super::worker::{ConnectionArgs, Engine};
use super::{color_stderr, render, usage_failure, UsageError};
use crate::analysis::ToolRoot;
use crate::exec::breaker::BreakerPolicy;
use crate::exec::replay::FileRecorder;
use crate::exec::{
    replay, Executor, Guards, LoadError, Observer, Options, Run, RunStatus, StepStatus, Trace, Workflow,
};
use crate::history::{Recorder, RunContext};
use crate::host::{self, HostRunner, Mock};
use crate::mcp::upstream::{UpstreamRunner, Upstreams};
use crate::ranges;
use crate::value::Value;

/// Arguments of `tdsl run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The composite tool: a file path or, when no such file exists and `--root` is given, a
    /// tool path under the root (`/tools/main.tool`).
    #[arg(value_name = "TOOL")]
    tool: String,
    /// The tool root `tool_definition_path`s resolve against (default: the current folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// A JSON object holding the tool's arguments.
    #[arg(long, value_name = "FILE.json")]
    args: Option<PathBuf>,
    /// One argument as NAME=JSON (repeatable; wins over --args).
    #[arg(long = "arg", value_name = "NAME=JSON")]
    arg: Vec<String>,
    /// Writes the execution trace (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Answers tool calls from this JSON file instead of running the tools it lists.
    #[arg(long, value_name = "FILE")]
    mock: Option<PathBuf>,
    /// The most tool calls in flight at once (1–1024).
    #[arg(long, value_name = "N", default_value_t = 8)]
    concurrency: usize,
    /// The whole run's deadline, in seconds (0.1–86400).
    #[arg(long, value_name = "SECONDS")]
    deadline: Option<f64>,
    /// Consecutive failed attempts that open a tool's circuit breaker (1–10, default 3).
    #[arg(long, value_name = "N")]
    breaker_threshold: Option<u32>,
    /// How long an open breaker refuses calls before it half-opens, in seconds (10–300,
    /// default 60).
    #[arg(long, value_name = "SECONDS")]
    breaker_reset_seconds: Option<f64>,
    /// Trial calls a half-open breaker lets through (1–5, default 1).
    #[arg(long, value_name = "N")]
    breaker_half_open_calls: Option<u32>,
    /// Only tool paths matching one of these globs may be called (repeatable).
    #[arg(long = "allow-tool", value_name = "GLOB")]
    allow_tool: Vec<String>,
    /// The most steps the run may execute (counting composite callees' steps).
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// The most children one parallel step may have.
    #[arg(long, value_name = "N")]
    max_fan_out: Option<usize>,
    /// The most calls the run may make: every call of a callee, each fan-out child's and each
    /// composite callee's steps' included (1–100,000,000, default 1,000,000). The call that
    /// would pass it does not start and the run fails with E0816.
    #[arg(long = "max-calls-per-run", value_name = "N")]
    max_calls_per_run: Option<usize>,
    /// The most bytes of the run's result as compact JSON (1 KiB–4 GiB, default 1 GiB): a
    /// larger result fails the run with E0817, and is not printed.
    #[arg(long = "max-result-bytes", value_name = "BYTES")]
    max_result_bytes: Option<usize>,
    /// How deep composite callees may nest (1–32, default 8). The check before the run
    /// refuses a deeper chain of composite calls (E0619).
    #[arg(long, value_name = "N", default_value_t = crate::ranges::DEFAULT_MAX_NESTING)]
    max_nesting: usize,
    /// The seed of retry jitter (default: from the clock).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Serve the files under DIR to the file functions of transforms (`read_file`, …).
    #[arg(long, value_name = "DIR")]
    files: Option<PathBuf>,
    /// The evaluation fuel of each transform, condition and template (default 50,000,000).
    #[arg(long, value_name = "N")]
    fuel: Option<u64>,
    /// The most bytes one evaluation may build (default 256 MiB).
    #[arg(long, value_name = "BYTES")]
    max_memory: Option<u64>,
    /// The fuel of all the run's transforms, conditions and templates together (1–2^53,
    /// default 1,000,000,000); each still has its own (`--fuel`). Past it the expression
    /// that runs out fails with E0401.
    #[arg(long = "max-run-fuel", value_name = "N")]
    max_run_fuel: Option<u64>,
    /// The most bytes of values the run holds at once: what its expressions running at
    /// that moment build, their results and the tool answers it keeps (1 KiB–1 TiB,
    /// default 2 GiB). Past it the expression or the call fails with E0406.
    #[arg(long = "max-run-memory", value_name = "BYTES")]
    max_run_memory: Option<u64>,
    /// The most bytes an `exec:` tool may print on standard output (default 64 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = crate::host::DEFAULT_MAX_STDOUT)]
    max_tool_output: u64,
    /// The most values (numbers, strings, lists, objects) one tool output may hold — an
    /// `exec:` tool's standard output, an HTTP body, an MCP result (1,024–1,073,741,824,
    /// default 4,194,304). Counted while it is read, which stops past it: the call fails.
    /// The outputs of the run hold at most 8 times as many in all.
    #[arg(long, value_name = "N", default_value_t = crate::ranges::DEFAULT_MAX_TOOL_VALUES)]
    max_tool_values: usize,
    /// The environment of `exec:` tools and `mcp:` servers.
    #[command(flatten)]
    tool_env: ToolEnvArgs,
    /// The upstream MCP servers whose tools the composite calls as `NAME/TOOL`.
    #[command(flatten)]
    upstream: UpstreamArgs,
    /// Where the run is recorded.
    #[command(flatten)]
    history: HistoryArgs,
    /// Context recorded with the run and each of its tool invocations in the history
    /// (`cycle_id=42`, `triggered_by=cron`; repeatable; docs/history.md).
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
    /// No progress on standard error, even on a terminal.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Where the composite runs: `local` (this machine) or `temporal` (a Temporal server
    /// and its `tdsl worker`s; feature `temporal`, docs/distributed.md).
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    #[command(flatten)]
    connection: ConnectionArgs,
    /// Writes the run's Temporal event history (JSON) to this file once it ended (with
    /// `--engine temporal`; `temporal::worker::replay` replays it).
    #[arg(long, value_name = "FILE")]
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    temporal_history: Option<PathBuf>,
    /// With `--engine temporal`: the events one workflow's history may reach before the run
    /// stops with E0815 (Temporal stops a workflow at 51,200; lower it for a server with a
    /// lower `limit.historyCount.error`).
    #[arg(long, value_name = "EVENTS", default_value_t = 40_000, value_parser = clap::value_parser!(u32).range(100..=51_200))]
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    temporal_history_limit: u32,
    /// With `--engine temporal`: the bytes of payloads (inputs and answers of calls, batches
    /// and child workflows) one workflow's history may hold before the run stops with E0815
    /// (Temporal stops a workflow at 50 MiB; lower it for a server with a lower
    /// `limit.historySize.error`).
    #[arg(long, value_name = "BYTES", default_value_t = ranges::DEFAULT_TEMPORAL_HISTORY_BYTES)]
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    temporal_history_bytes: usize,
}

/// `--clean-env` and `--pass-env NAME` (of `run` and `serve`): the environment of the
/// processes tools start (`docs/security.md`).
#[derive(Debug, Args)]
pub(crate) struct ToolEnvArgs {
    /// Start `exec:` tools and `mcp:` servers with only the variables --pass-env names, PATH
    /// (the standard system path unless passed) and TDSL_TOOL, instead of this process's
    /// whole environment.
    #[arg(long = "clean-env")]
    clean_env: bool,
    /// With --clean-env: a variable the tools see, from this process's environment
    /// (repeatable; `--pass-env PATH` keeps this process's PATH).
    #[arg(long = "pass-env", value_name = "NAME", requires = "clean_env")]
    pass_env: Vec<String>,
}

impl ToolEnvArgs {
    /// The policy the flags ask for.
    pub(crate) fn policy(&self) -> Result<host::ToolEnv, UsageError> {
        if !self.clean_env {
            return Ok(host::ToolEnv::Inherit);
        }
        host::ToolEnv::clean(&self.pass_env).map_err(|e| UsageError(format!("--pass-env: {e}")))
    }
}

/// Arguments of `tdsl replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// A trace written by `tdsl run --trace`.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// The tool root the composite is read from (default: the current directory; never a
    /// root the trace names).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Writes the replay's own trace to this file.
    #[arg(long = "trace-out", value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// The upstream servers the run called (`run --upstream`): listed, never called, for the
    /// schemas of their tools (the defaults the run filled in).
    #[command(flatten)]
    upstream: UpstreamArgs,
}

/// Runs `tdsl run`.
pub(crate) fn run(args: RunArgs) -> ExitCode {
    if args.engine == Engine::Temporal {
        return run_temporal(&args);
    }
    // Before any other thread starts, so that every thread has the signals blocked.
    let interrupts = Interrupts::install();
    // Processes a tool leaves in a session of its own are adopted, and ended below.
    host::adopt_orphans();
    // A signal while it sets up (loads the tools, lists upstreams, opens the history, which
    // may wait for a lock) ends it at once, nothing having started.
    let setting_up = interrupts.setting_up();
    match prepare(&args) {
        Ok(Prepared { workflow, executor, arguments, files, upstreams }) => {
            let shut_down = || match &upstreams {
                // Ended by a signal: SIGTERM and 0.5 s each, as `serve` does.
                Some(u) if interrupts.exit_status().is_some() => u.shut_down_quickly(),
                Some(u) => u.shut_down(),
                None => {}
            };
            let (executor, recorder) = match observe(&args, &workflow, executor) {
                Ok(observed) => observed,
                Err(e) => {
                    shut_down();
                    return usage_failure(&e);
                }
            };
            drop(setting_up);
            let code = execute(&args, &workflow, &executor, arguments, files.as_deref(), &interrupts);
            drop(executor);
            // The upstream servers end as `mcp:` servers do (their input closed, 3 s, SIGTERM).
            shut_down();
            host::end_children(host::TERM_GRACE);
            if let Some(why) = recorder.and_then(|r| r.shortfall()) {
                eprintln!("warning: {}", printable(&why));
            }
            interrupts.exit_status().map_or(code, ExitCode::from)
        }
        Err(Stop::Usage(e)) => usage_failure(&e),
        Err(Stop::Problems) => ExitCode::from(1),
    }
}

enum Stop {
    Usage(UsageError),
    Problems,
}

/// What a run needs.
struct Prepared {
    workflow: Workflow,
    executor: Executor,
    arguments: Value,
    /// The recorder of the file reads of `--files` (for the trace).
    files: Option<Arc<FileRecorder>>,
    /// The upstream servers of `--upstream` (shut down after the run).
    upstreams: Option<Arc<Upstreams>>,
}

fn prepare(args: &RunArgs) -> Result<Prepared, Stop> {
    // Out-of-range numbers are usage errors before anything is read.
    execution_options(args, Guards::new()).map_err(usage)?;
    let limits = evaluation_limits(args).map_err(usage)?;
    let upstreams = args.upstream.upstreams().map_err(Stop::Usage)?;
    let root = tool_root(args.root.as_deref()).map_err(Stop::Usage)?;
    let file = tool_file(&args.tool, &root, args.root.is_some()).map_err(Stop::Usage)?;
    let arguments = super::named_values::named_values(args.args.as_deref(), &args.arg, "--arg").map_err(Stop::Usage)?;
    let mock = match &args.mock {
        Some(path) => {
            let text =
                crate::input::read_text(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
            Some(Mock::from_json(&text).map_err(|e| usage(format!("{}: {e}", path.display())))?)
        }
        None => None,
    };
    let mut engine = crate::exec::engine().with_limits(limits);
    let mut files = None;
    if let Some(dir) = &args.files {
        // Every read is recorded, for the trace: a replay answers from it.
        let recorder = Arc::new(FileRecorder::new(super::open_files(dir).map_err(Stop::Usage)?));
        engine = engine.with_file_store(recorder.clone());
        files = Some(recorder);
    }
    let tool_env = args.tool_env.policy().map_err(Stop::Usage)?;
    // Upstream servers are processes tdsl starts, as `mcp:` servers are.
    let upstreams = upstreams.map(|u| Arc::new(u.with_env(tool_env.clone()).with_max_values(args.max_tool_values)));
    let tool_root = with_upstreams(ToolRoot::assumed(root.dir()), upstreams.as_ref());
    let loaded = load_from(tool_root, &file, &args.tool, engine, args.max_nesting);
    let stop = |e: Stop| {
        if let Some(u) = &upstreams {
            u.shut_down();
        }
        e
    };
    let workflow = loaded.map_err(stop)?;
    // The operator reads the run: a failed server's last words are in its messages.
    let mut host = HostRunner::new()
        .with_max_stdout(args.max_tool_output)
        .with_max_values(args.max_tool_values)
        .for_one_run()
        .with_env(tool_env)
        .with_stderr_tails(host::StderrTails::InMessage);
    if let Some(m) = mock {
        host = host.with_mock(m);
    }
    let unrunnable: Vec<&str> = workflow.missing_tools().into_iter().filter(|t| !host.mocks(t)).collect();
    if !unrunnable.is_empty() {
        for t in unrunnable {
            let hint = match crate::mcp::upstream::split_tool(t) {
                // A skill's call of an upstream server's tool.
                Some((server, _)) => {
                    format!("; `{t}` reads as the tool of an upstream MCP server: pass --upstream {server}=COMMAND|URL")
                }
                None => String::new(),
            };
            eprintln!(
                "error: `{}` does not resolve: there is no such file under {} and no mock answers for it{hint}",
                printable(t),
                workflow.root().display()
            );
        }
        return Err(stop(Stop::Problems));
    }

    let mut guards = Guards::new();
    if !args.allow_tool.is_empty() {
        guards = guards.allow_tools(&args.allow_tool).map_err(|e| usage(format!("--allow-tool: {e}")))?;
    }
    if let Some(n) = args.max_steps {
        guards = guards.max_steps(n);
    }
    if let Some(n) = args.max_fan_out {
        guards = guards.max_fan_out(n);
    }
    if let Some(n) = args.max_calls_per_run {
        guards = guards.max_calls_per_run(n);
    }
    if let Some(n) = args.max_result_bytes {
        guards = guards.max_result_bytes(n);
    }
    if let Some(n) = args.max_run_fuel {
        guards = guards.max_run_fuel(n);
    }
    if let Some(n) = args.max_run_memory {
        guards = guards.max_run_memory(n);
    }
    let options = execution_options(args, guards).map_err(usage).map_err(stop)?;
    // `Executor::new`: its randomness (retry jitter, the run's id) seeded from the clock.
    let executor = match &upstreams {
        Some(ups) => Executor::new(UpstreamRunner::new(host, ups.clone())),
        None => Executor::new(host),
    };
    let mut executor = executor.with_options(options);
    if let Some(seed) = args.seed {
        executor = executor.with_random(Arc::new(crate::exec::SeededRandom::new(seed)));
    }
    Ok(Prepared { workflow, executor, arguments, files, upstreams })
}

/// The executor with its observers: the history recorder (unless `--no-history`) and, on
/// a terminal without `--quiet`, the progress bar.
fn observe(
    args: &RunArgs,
    workflow: &Workflow,
    executor: Executor,
) -> Result<(Executor, Option<Arc<Recorder>>), UsageError> {
    let mut observers: Vec<Arc<dyn Observer>> = Vec::new();
    let context = run_context(&args.context)?;
    let recorder = args.history.open()?.map(|store| Arc::new(Recorder::new(store).with_context(context)));
    if let Some(r) = &recorder {
        observers.push(r.clone());
    }
    if !args.quiet && std::io::stderr().is_terminal() {
        observers.push(Arc::new(Progress::new(workflow.plan().steps.len())));
    }
    let executor = if observers.is_empty() { executor } else { executor.with_observer(Arc::new(Observers(observers))) };
    Ok((executor, recorder))
}

/// The context of `--context KEY=VALUE ...` (a later KEY wins).
fn run_context(pairs: &[String]) -> Result<RunContext, UsageError> {
    let mut context = RunContext::new();
    for pair in pairs {
        let (key, value) = RunContext::parse_pair(pair).map_err(|e| UsageError(format!("--context: {e}")))?;
        context.insert(&key, &value).map_err(|e| UsageError(format!("--context: {e}")))?;
    }
    Ok(context)
}

/// The executor's options from the command line: every number in its range
/// ([`crate::ranges`]), or a usage error naming the flag.
fn execution_options(args: &RunArgs, guards: Guards) -> Result<Options, String> {
    let flag = |name: &str, e: crate::ranges::RangeError| format!("--{name}: {e}");
    let deadline = match args.deadline {
        Some(s) => {
            let s = ranges::DEADLINE_SECONDS.check(s).map_err(|e| flag("deadline", e))?;
            // In range, so finite and at most a day: the conversion cannot fail.
            Some(Duration::try_from_secs_f64(s).map_err(|e| format!("--deadline: {e}"))?)
        }
        None => None,
    };
    // Past 2^53 a usize is not exact as f64, but it is out of range either way.
    ranges::CONCURRENCY.check(args.concurrency as f64).map_err(|e| flag("concurrency", e))?;
    if let Some(n) = args.max_steps {
        ranges::MAX_STEPS.check(n as f64).map_err(|e| flag("max-steps", e))?;
    }
    if let Some(n) = args.max_fan_out {
        ranges::MAX_FAN_OUT.check(n as f64).map_err(|e| flag("max-fan-out", e))?;
    }
    if let Some(n) = args.max_calls_per_run {
        ranges::MAX_CALLS_PER_RUN.check(n as f64).map_err(|e| flag("max-calls-per-run", e))?;
    }
    if let Some(n) = args.max_result_bytes {
        ranges::MAX_RESULT_BYTES.check(n as f64).map_err(|e| flag("max-result-bytes", e))?;
    }
    if let Some(n) = args.max_run_fuel {
        ranges::RUN_FUEL.check(n as f64).map_err(|e| flag("max-run-fuel", e))?;
    }
    if let Some(n) = args.max_run_memory {
        ranges::RUN_MEMORY.check(n as f64).map_err(|e| flag("max-run-memory", e))?;
    }
    ranges::MAX_TOOL_OUTPUT.check(args.max_tool_output as f64).map_err(|e| flag("max-tool-output", e))?;
    ranges::MAX_TOOL_VALUES.check(args.max_tool_values as f64).map_err(|e| flag("max-tool-values", e))?;
    ranges::MAX_NESTING.check(args.max_nesting as f64).map_err(|e| flag("max-nesting", e))?;
    let mut breaker = BreakerPolicy::default();
    if let Some(n) = args.breaker_threshold {
        ranges::BREAKER_THRESHOLD.check(f64::from(n)).map_err(|e| flag("breaker-threshold", e))?;
        breaker.failure_threshold = n;
    }
    if let Some(s) = args.breaker_reset_seconds {
        breaker.reset_timeout_seconds =
            ranges::BREAKER_RESET_SECONDS.check(s).map_err(|e| flag("breaker-reset-seconds", e))?;
    }
    if let Some(n) = args.breaker_half_open_calls {
        ranges::BREAKER_HALF_OPEN_CALLS.check(f64::from(n)).map_err(|e| flag("breaker-half-open-calls", e))?;
        breaker.half_open_calls = n;
    }
    let options = Options {
        max_concurrency: args.concurrency,
        deadline,
        breaker,
        guards,
        max_depth: args.max_nesting,
        ..Options::default()
    };
    // The library's own check, so that the two can never disagree.
    options.validate().map_err(|e| e.to_string())?;
    Ok(options)
}

fn usage(message: String) -> Stop {
    Stop::Usage(UsageError(message))
}

/// The evaluation limits `--fuel` and `--max-memory` set, checked against their ranges
/// (`tdsl::ranges::FUEL`, `MAX_ALLOC_BYTES`): the rest are the defaults.
fn evaluation_limits(args: &RunArgs) -> Result<crate::Limits, String> {
    let mut limits = crate::Limits::default();
    if let Some(fuel) = args.fuel {
        limits.fuel = fuel;
    }
    if let Some(bytes) = args.max_memory {
        limits.max_alloc_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    limits.validate().map_err(|e| {
        let flag = if e.range.name == ranges::FUEL.name { "--fuel" } else { "--max-memory" };
        format!("{flag}: {e}")
    })?;
    Ok(limits)
}

/// Loads a workflow with the callees resolved by `root` (which may know upstream servers'
/// tools); its problems are rendered on standard error.
fn load_from(
    root: ToolRoot,
    file: &Path,
    name: &str,
    engine: crate::Engine,
    max_nesting: usize,
) -> Result<Workflow, Stop> {
    Workflow::load_from(root, file, engine, max_nesting).map_err(|e| match e {
        LoadError::Io(m) => usage(m),
        LoadError::Invalid { name: tool, source, diagnostics } => {
            eprint!("{}", render(&diagnostics, &tool, &source, color_stderr()));
            eprintln!("error: {name} cannot run: {}", LoadError::Invalid { name: tool, source, diagnostics });
            Stop::Problems
        }
        other => {
            eprintln!("error: {}", printable(&other.to_string()));
            Stop::Problems
        }
    })
}

fn execute(
    args: &RunArgs,
    workflow: &Workflow,
    executor: &Executor,
    arguments: Value,
    files: Option<&FileRecorder>,
    interrupts: &Interrupts,
) -> ExitCode {
    let mut run = match executor.run_cancellable(workflow, arguments, interrupts.token()) {
        Ok(r) => r,
        Err(refused) => {
            eprintln!("error: refused before the run: {} [{}]", printable(&refused.to_string()), refused.code());
            return ExitCode::from(1);
        }
    };
    run.trace.files = files.map(FileRecorder::reads);
    if let Some(path) = &args.trace {
        if let Err(e) = write_trace(&run.trace, path) {
            eprintln!("error: cannot write the trace to {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    report(&run)
}

/// Writes `trace` to `path` as [`crate::exec::Trace::try_to_json`] makes it, streamed to the
/// file rather than made whole in memory first (a run's trace holds every output it read: 50
/// outputs of 1 MiB of `[0,0,…]` made 1.28 GB of pretty text, hostile round 10b), readable
/// by its owner alone ([`super::create_private`]). On failure the file is removed: a trace
/// is written whole or not at all.
fn write_trace(trace: &crate::exec::Trace, path: &std::path::Path) -> Result<(), String> {
    use std::io::Write;
    let written = (|| {
        let mut out = std::io::BufWriter::new(super::create_private(path).map_err(|e| e.to_string())?);
        serde_json::to_writer_pretty(&mut out, trace).map_err(|e| e.to_string())?;
        out.write_all(b"\n").and_then(|()| out.flush()).map_err(|e| e.to_string())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// Prints a run's result (or its error) and maps its status to the exit code.
fn report(run: &Run) -> ExitCode {
    if let Some(result) = &run.result {
        if let Err(code) = super::print_stdout(&(serde_json::to_string_pretty(result).unwrap_or_default() + "\n")) {
            return code;
        }
    }
    match (&run.status, &run.error) {
        (RunStatus::Success, _) => ExitCode::SUCCESS,
        (RunStatus::Partial, _) => {
            let failed: Vec<&str> = run
                .trace
                .steps
                .iter()
                .filter(|s| matches!(s.status, StepStatus::Failed | StepStatus::Timeout))
                .map(|s| s.execution_id.as_str())
                .collect();
            eprintln!("warning: PARTIAL: continued past failed steps: {}", printable(&failed.join(", ")));
            ExitCode::SUCCESS
        }
        (status, error) => {
            let why = error.as_ref().map_or_else(|| "no reason recorded".to_string(), ToString::to_string);
            // The reason may quote a tool's output: its escape sequences are shown, not run.
            eprintln!("error: {}: {}", status.as_str(), printable(&why));
            ExitCode::from(1)
        }
    }
}

/// The root and the composite a replay reads: the trace's tool path under `--root` (or the
/// current directory), and only a regular file inside that root — the trace's own `root`
/// and `file` are not looked at, so a tampered trace cannot make the replay read a file
/// elsewhere (a symbolic link out of the root is refused too).
fn replay_file(root: Option<&Path>, tool: &str) -> Result<(PathBuf, PathBuf), UsageError> {
    let dir = tool_root(root)?.dir().to_path_buf();
    let file = crate::analysis::ToolRoot::new(&dir).file_path(tool).map_err(UsageError)?;
    let (real_dir, real_file) = match (std::fs::canonicalize(&dir), std::fs::canonicalize(&file)) {
        (Ok(d), Ok(f)) => (d, f),
        (Err(e), _) => return Err(UsageError(format!("{}: {e}", dir.display()))),
        (_, Err(_)) => {
            return Err(UsageError(format!(
                "the trace's tool `{tool}` is not under the tool root {} (looked for {}); pass --root",
                dir.display(),
                file.display()
            )))
        }
    };
    if !real_file.starts_with(&real_dir) {
        return Err(UsageError(format!(
            "{} leads out of the tool root {} (a symbolic link): replay reads only files inside the root",
            file.display(),
            dir.display()
        )));
    }
    if !real_file.is_file() {
        return Err(UsageError(format!("{}: not a regular file", file.display())));
    }
    Ok((dir, file))
}

/// Runs `tdsl replay`.
pub(crate) fn replay_command(args: ReplayArgs) -> ExitCode {
    // Flags before files: a malformed `--upstream` is a usage error before anything is read.
    let upstreams = match args.upstream.upstreams() {
        Ok(u) => u.map(Arc::new),
        Err(e) => return usage_failure(&e),
    };
    let text = match crate::input::read_text(&args.trace) {
        Ok(t) => t,
        Err(e) => return usage_failure(&UsageError(format!("cannot read {}: {e}", args.trace.display()))),
    };
    let trace = match Trace::from_json(&text) {
        Ok(t) => t,
        Err(e) => return usage_failure(&UsageError(format!("{}: {e}", args.trace.display()))),
    };
    let (root, file) = match replay_file(args.root.as_deref(), &trace.tool) {
        Ok(found) => found,
        Err(e) => return usage_failure(&e),
    };
    // The run's evaluation limits and file reads, as the trace recorded them. A recorded run
    // nested its composites at most as deep as its `--max-nesting` allowed (the trace says
    // how deep; one without `limits` may have used any depth the command line allows).
    let max_nesting = trace.limits.as_ref().map_or(ranges::MAX_NESTING.max as usize, |l| l.max_nesting);
    let tool_root = with_upstreams(ToolRoot::assumed(&root), upstreams.as_ref());
    let loaded = load_from(tool_root, &file, &trace.tool, crate::exec::replay::engine(&trace), max_nesting);
    // Only their schemas were needed: the replay calls nothing.
    if let Some(u) = &upstreams {
        u.shut_down();
    }
    let workflow = match loaded {
        Ok(w) => w,
        Err(Stop::Usage(e)) => return usage_failure(&e),
        Err(Stop::Problems) => return ExitCode::from(1),
    };
    // A run stopped at its limit of calls stops at the same call in the replay.
    let max_calls = trace.limits.as_ref().map_or(ranges::DEFAULT_MAX_CALLS_PER_RUN, |l| l.max_calls_per_run);
    let mut guards = Guards::new().max_calls_per_run(max_calls);
    // And runs out of fuel or memory where it did, when its budgets were not the defaults.
    if let Some(l) = &trace.limits {
        guards = guards.max_run_fuel(l.max_run_fuel).max_run_memory(l.max_run_memory);
    }
    let options = Options { max_depth: max_nesting, guards, ..Options::default() };
    let replayed = match replay(&workflow, &trace, options) {
        Ok(r) => r,
        Err(refused) => {
            eprintln!("error: refused before the replay: {refused} [{}]", refused.code());
            return ExitCode::from(1);
        }
    };
    if let Some(path) = &args.trace_out {
        let written = super::create_private(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, (replayed.run.trace.to_json() + "\n").as_bytes()));
        if let Err(e) = written {
            eprintln!("error: cannot write the trace to {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if let Some(result) = &replayed.run.result {
        if let Err(code) = super::print_stdout(&(serde_json::to_string_pretty(result).unwrap_or_default() + "\n")) {
            return code;
        }
    }
    if replayed.divergences.is_empty() {
        eprintln!("replay matches the recording ({})", replayed.run.status.as_str());
        return ExitCode::SUCCESS;
    }
    eprintln!("the replay diverges from the recording in {} place(s):", replayed.divergences.len());
    for d in &replayed.divergences {
        eprintln!("  {d}");
    }
    // An upstream tool unknown here: its schema's defaults, which the run filled in, are not.
    for t in workflow.missing_tools().into_iter().filter(|t| crate::mcp::upstream::split_tool(t).is_some()) {
        eprintln!(
            "note: `{}` reads as an upstream server's tool: replay with the run's --upstream, so that its arguments get the defaults its schema gave the run",
            printable(t)
        );
    }
    ExitCode::from(1)
}

/// `tdsl run --engine temporal` without the feature: a usage error naming it.
#[cfg(not(feature = "temporal"))]
fn run_temporal(_args: &RunArgs) -> ExitCode {
    usage_failure(&super::worker::feature_missing())
}

/// `tdsl run --engine temporal`: checks the composite here, ships it with every definition
/// it reaches to a Temporal server, waits for the run's trace, and reports it as a local
/// run does.
#[cfg(feature = "temporal")]
fn run_temporal(args: &RunArgs) -> ExitCode {
    // Before the async runtime's threads start: Ctrl-C cancels the run on the server.
    let interrupts = Interrupts::install();
    if args.tool_env.clean_env {
        return usage_failure(&UsageError(
            "--clean-env applies to local runs: with --engine temporal, tools run in the environment of each `tdsl worker`; start the workers with the environment they may see (`env -i`)".to_string(),
        ));
    }
    // The workers call the tools: they know no upstream server of this command line.
    if args.upstream.given() {
        return usage_failure(&UsageError(
            "--upstream applies to local runs: with --engine temporal the workers call the tools, and an upstream server's tools are not theirs to call".to_string(),
        ));
    }
    let Prepared { workflow, executor, arguments, .. } = match prepare(args) {
        Ok(p) => p,
        Err(Stop::Usage(e)) => return usage_failure(&e),
        Err(Stop::Problems) => return ExitCode::from(1),
    };
    if let Err(refused) = executor.options().guards.check(&workflow) {
        eprintln!("error: refused before the run: {refused} [{}]", refused.code());
        return ExitCode::from(1);
    }
    let limits = match evaluation_limits(args) {
        Ok(l) => l,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    let mock = match &args.mock {
        Some(path) => match crate::input::read_text(path).map(|t| serde_json::from_str::<Value>(&t)) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => return usage_failure(&UsageError(format!("{}: {e}", path.display()))),
            Err(e) => return usage_failure(&UsageError(format!("cannot read {}: {e}", path.display()))),
        },
        None => None,
    };
    let files = match crate::temporal::collect_files(&workflow) {
        Ok(f) => f,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    // The files of `--files` travel with the run, as they are now.
    let data_files = match &args.files {
        Some(dir) => {
            let store = match super::open_files(dir) {
                Ok(s) => s,
                Err(e) => return usage_failure(&e),
            };
            match crate::temporal::FilesSnapshot::take(&*store, crate::temporal::PAYLOAD_LIMIT_BYTES / 2) {
                Ok(s) => Some(s),
                Err(e) => return usage_failure(&UsageError(format!("--files {}: {e}", dir.display()))),
            }
        }
        None => None,
    };
    let mut options = crate::temporal::RunOptions::from_exec(executor.options(), &limits, args.max_tool_output);
    // Jitter comes from the seed on the workers: one drawn here when none is given.
    options.history_limit = args.temporal_history_limit;
    options.history_bytes = match ranges::TEMPORAL_HISTORY_BYTES.check(args.temporal_history_bytes as f64) {
        Ok(n) => n as usize,
        Err(e) => return usage_failure(&UsageError(format!("--temporal-history-bytes: {e}"))),
    };
    options.seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    let input = crate::temporal::RunInput {
        interpreter: crate::temporal::INTERPRETER_VERSION,
        tool: workflow.name().to_string(),
        files,
        arguments,
        options,
        mock,
        chunk: None,
        data_files,
    };
    let bytes = serde_json::to_vec(&input).map_or(0, |b| b.len());
    if let Some(e) = crate::temporal::over_payload_limit("the run's input (definitions, arguments, mock)", bytes) {
        return usage_failure(&UsageError(e));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage_failure(&UsageError(format!("cannot start the async runtime: {e}"))),
    };
    let conn = args.connection.connection();
    let history = args.temporal_history.as_deref();
    let interrupted = || interrupts.token().is_cancelled();
    // On a terminal, the same bar as a local run's, from the workflow's progress query.
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| Progress::new(workflow.plan().steps.len()));
    let show = |report: &crate::temporal::ProgressReport| {
        if let Some(bar) = &bar {
            bar.show(report);
        }
    };
    let finished = runtime.block_on(crate::temporal::client::run(
        &conn,
        input,
        history,
        |workflow_id, run_id| eprintln!("temporal: workflow id {workflow_id}, run id {run_id}"),
        &interrupted,
        bar.is_some().then_some(&show as &(dyn Fn(&crate::temporal::ProgressReport) + Sync)),
    ));
    if let Some(bar) = &bar {
        bar.finish();
    }
    let mut trace = match finished {
        Ok(f) => f.trace,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    trace.root = Some(workflow.root().to_path_buf());
    trace.file = workflow.plan().file.clone();
    // The limits in force, for a replay (the interpreter on the workers does not know them).
    trace.limits = Some(crate::exec::RunLimits::of(executor.options(), &workflow));
    // The run goes into the history as a local one does, from its trace (the workers
    // record nothing: the history is the client's).
    match args.history.open() {
        Ok(Some(store)) => {
            if let Err(e) = crate::history::record_trace(&*store, &trace) {
                eprintln!("warning: the run history is incomplete: {e}");
            }
        }
        Ok(None) => {}
        Err(e) => eprintln!("warning: the run is not in the history: {e}"),
    }
    if let Some(path) = &args.trace {
        if let Err(e) = std::fs::write(path, trace.to_json() + "\n") {
            eprintln!("error: cannot write the trace to {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let run = Run { status: trace.status, result: trace.result.clone(), error: trace.error.clone(), trace };
    let code = report(&run);
    interrupts.exit_status().map_or(code, ExitCode::from)
}
