//! `tdsl serve --mcp --root DIR [--allow GLOB]...`: serves the tools under a root over MCP
//! on standard input and output, or with `--listen HOST:PORT [--token-file FILE]` over
//! Streamable HTTP at `/mcp` (see [`crate::mcp`], [`crate::mcp::http`] and `docs/mcp.md`).
//!
//! Exit status: 0 when the client closes the connection (its end of our input or of our
//! output) or on SIGTERM, SIGINT or SIGHUP (calls in flight are cancelled, their programs
//! killed and their runs recorded; the exit comes within about 3 s), 1 when two tools get the same name or the output cannot be
//! written (a full disk), 2 when the command itself cannot run (for `--listen`: an address
//! that is not loopback without `--token-file`, a token file others can read, that is
//! empty, larger than 64 KiB or not a regular file, a `--max-connections` over the
//! descriptor limit, an address that cannot be bound).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{usage_failure, UsageError};
use crate::mcp::http::{check_bind, check_max_connections, read_token, HttpOptions};
use crate::mcp::McpServer;

/// How long `serve`, stopping, waits for the ends of the runs still out to be written into
/// the history ([`McpServer::finish_runs`]).
const RUN_ENDS_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// The address to bind and the HTTP options, from `--listen` and the options after it.
fn http_setup(args: &ServeArgs, listen: &str) -> Result<(std::net::SocketAddr, HttpOptions), String> {
    use std::net::ToSocketAddrs;
    let addr = listen
        .to_socket_addrs()
        .map_err(|e| format!("--listen {listen}: not an address (HOST:PORT, as 127.0.0.1:8080): {e}"))?
        .next()
        .ok_or_else(|| format!("--listen {listen}: the name has no address"))?;
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    check_bind(&addr, token.is_some())?;
    let mut options = HttpOptions {
        token,
        allowed_hosts: args.allow_host.clone(),
        max_request_values: args.max_request_values as usize,
        ..HttpOptions::default()
    };
    if let Some(n) = args.max_request_bytes {
        options.max_request_bytes = n as usize;
    }
    if let Some(n) = args.max_body_bytes_in_flight {
        let n = n as usize;
        if n < options.max_request_bytes {
            return Err(format!(
                "--max-body-bytes-in-flight {n} is less than the largest request body ({} bytes, --max-request-bytes): such a body could never be read",
                options.max_request_bytes
            ));
        }
        options.max_body_bytes_in_flight = n;
    }
    if let Some(n) = args.max_sessions {
        options.max_sessions = n as usize;
    }
    if let Some(n) = args.max_calls {
        options.max_calls = n as usize;
    }
    if let Some(n) = args.max_connections {
        check_max_connections(n)?;
        options.max_connections = n as usize;
    }
    if let Some(secs) = args.read_timeout {
        options.read_timeout = std::time::Duration::from_secs(secs);
    }
    Ok((addr, options))
}

/// Arguments of `tdsl serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Speak the Model Context Protocol (on standard input and output, or over HTTP with
    /// --listen).
    #[arg(long, required = true)]
    mcp: bool,
    /// Serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any
    /// free port; the address is printed). A non-loopback HOST needs --token-file.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// With --listen: every request must carry `Authorization: Bearer <token>`, the token
    /// being this file's content (trimmed); the file must not be readable by other users.
    #[arg(long = "token-file", value_name = "FILE", requires = "listen")]
    token_file: Option<PathBuf>,
    /// With --listen: a host name accepted in `Host` and `Origin` headers besides the bound
    /// address (a name clients use to reach the server; repeatable).
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen")]
    allow_host: Vec<String>,
    /// With --listen: the largest request body in bytes (1 KiB–64 MiB; default 4 MiB).
    #[arg(long = "max-request-bytes", value_name = "N", requires = "listen",
          value_parser = clap::value_parser!(u64).range(1024..=64 * 1024 * 1024))]
    max_request_bytes: Option<u64>,
    /// With --listen: the most bytes of request bodies held at once, all connections
    /// together, past the first 64 KiB of each (64 KiB–4 GiB, at least --max-request-bytes;
    /// default 64 MiB). A body that would pass it waits as it arrives (its connection's
    /// read timeout running) until bytes are given back; small requests never wait.
    #[arg(long = "max-body-bytes-in-flight", value_name = "N", requires = "listen",
          value_parser = clap::value_parser!(u64).range(64 * 1024..=4 * 1024 * 1024 * 1024))]
    max_body_bytes_in_flight: Option<u64>,
    /// The most values (numbers, strings, lists, objects) one JSON-RPC message may hold
    /// (1,000–100,000,000; default 100,000): counted before the message is decoded, a
    /// message past it is refused with its `id` (-32600).
    #[arg(long = "max-request-values", value_name = "N",
          default_value_t = crate::mcp::framing::DEFAULT_MAX_REQUEST_VALUES as u64,
          value_parser = clap::value_parser!(u64).range(crate::mcp::framing::MAX_REQUEST_VALUES_RANGE))]
    max_request_values: u64,
    /// With --listen: the most sessions open at once (1–10,000; default 64).
    #[arg(long = "max-sessions", value_name = "N", requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    max_sessions: Option<u64>,
    /// The most tool calls running at once (1–1,000; default 16): over stdio a call past it
    /// waits for one to end; with --listen (all sessions together) it is refused with the
    /// JSON-RPC error -32001.
    #[arg(long = "max-calls", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    max_calls: Option<u64>,
    /// With --listen: the most connections open at once (1–100,000, and at most the
    /// descriptor limit less 64; default half the descriptor limit, at most 1,024). At the
    /// cap, a new connection closes the one idle the longest.
    #[arg(long = "max-connections", value_name = "N", requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_connections: Option<u64>,
    /// With --listen: a connection that has not sent a complete request (headers and body)
    /// within SECS seconds of opening, or of its last answer, is closed, and so is one whose
    /// client has read nothing of an answer for SECS seconds (1–3,600; default 30).
    #[arg(long = "read-timeout", value_name = "SECS", requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    read_timeout: Option<u64>,
    /// The tool root whose `.tool` files are offered (default: the current folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Offer only tools whose tool path (`/tools/main.tool`) matches one of these globs
    /// (repeatable).
    #[arg(long, value_name = "GLOB")]
    allow: Vec<String>,
    /// The most calls of each composite run a call makes (a served composite, a plan): every
    /// call of a callee, fan-out children and composite callees' steps included
    /// (1–100,000,000; default 100,000). Past it the run fails with E0816.
    #[arg(long = "max-calls-per-run", value_name = "N")]
    max_calls_per_run: Option<u64>,
    /// The most bytes of a composite run's result as compact JSON (1 KiB–4 GiB; default 64
    /// MiB): a larger result fails the call with E0817 and is never written out.
    #[arg(long = "max-result-bytes", value_name = "BYTES")]
    max_result_bytes: Option<u64>,
    /// The most values (numbers, strings, lists, objects) one tool output may hold — an
    /// `exec:` tool's standard output, an HTTP body, an MCP result, of a served tool, a
    /// plan's step or an upstream server (1,024–1,073,741,824, default 1,048,576). Counted
    /// while it is read, which stops past it: the call fails. The outputs of one run (a
    /// served composite's, a plan's) hold at most 8 times as many in all.
    #[arg(long = "max-tool-values", value_name = "N", default_value_t = crate::ranges::SERVE_MAX_TOOL_VALUES)]
    max_tool_values: usize,
    /// Where the composite runs of calls are recorded (`--history FILE`, `--no-history`).
    #[command(flatten)]
    history: super::progress::HistoryArgs,
    /// Run as the watchdog of a `serve` (Linux; started by `serve` itself, not by hand):
    /// reads the processes `serve` starts on standard input, and ends those that still run
    /// once that input ends — when `serve` ended, however it ended (`src/host/watchdog.rs`).
    #[arg(long = "watchdog", hide = true)]
    watchdog: bool,
    /// The environment of `exec:` tools and `mcp:` servers (`--clean-env`, `--pass-env`).
    #[command(flatten)]
    tool_env: super::run::ToolEnvArgs,
    /// Plans written by language models (`docs/mcp.md`, "Plans").
    #[command(flatten)]
    plans: PlanArgs,
    /// The `compose` tool with the client's model (`docs/compose.md`, "With the client's
    /// model").
    #[command(flatten)]
    compose: SamplingArgs,
}

/// The options of `serve --compose`.
#[derive(Debug, Args)]
pub(crate) struct SamplingArgs {
    /// With --plans: offer the tool `compose {query}`, which runs the composer's four phases
    /// with the client's own model through MCP sampling (listed only to clients that declare
    /// the `sampling` capability; SPEC §17).
    #[arg(long, requires = "plans")]
    compose: bool,
    /// With --compose: `maxTokens` of each sampling request (256–1,000,000; default 4,096).
    #[arg(long = "sampling-max-tokens", value_name = "N", requires = "compose")]
    sampling_max_tokens: Option<f64>,
    /// With --compose: a model name hint sent in each request's `modelPreferences.hints`
    /// (`claude-sonnet`, `gpt-4o`; the client decides; repeatable, in order of preference).
    #[arg(long = "sampling-hint", value_name = "NAME", requires = "compose")]
    sampling_hint: Vec<String>,
    /// With --compose: phase 1's timeout in seconds (0.1–600; default 10). A client whose
    /// user approves each sampling request needs more.
    #[arg(long = "decompose-timeout", value_name = "S", requires = "compose")]
    decompose_timeout: Option<f64>,
    /// With --compose: phase 2's timeout in seconds, repair rounds included (0.1–600;
    /// default 15).
    #[arg(long = "plan-timeout", value_name = "S", requires = "compose")]
    plan_timeout: Option<f64>,
    /// With --compose: phase 4's timeout in seconds (0.1–600; default 30).
    #[arg(long = "synthesize-timeout", value_name = "S", requires = "compose")]
    synthesize_timeout: Option<f64>,
    /// With --compose: rounds a refused plan goes back to the model (0–5; default 2).
    #[arg(long = "repair-rounds", value_name = "N", requires = "compose")]
    repair_rounds: Option<f64>,
}

/// The `compose` tool of `--compose`, or why its options are refused.
fn compose_setup(
    args: &SamplingArgs,
    plan_deadline: Option<f64>,
) -> Result<crate::compose::sampling::SamplingCompose, String> {
    use crate::compose::sampling::{SamplingCompose, SamplingOptions, DEFAULT_MAX_TOKENS};
    let max_tokens = match args.sampling_max_tokens {
        Some(n) => {
            crate::ranges::SAMPLING_MAX_TOKENS.check(n).map_err(|e| format!("--sampling-max-tokens: {e}"))? as u32
        }
        None => DEFAULT_MAX_TOKENS,
    };
    if let Some(h) = args.sampling_hint.iter().find(|h| h.trim().is_empty() || h.chars().any(char::is_control)) {
        return Err(format!("--sampling-hint {h:?}: a hint is a model name (`claude-sonnet`), one line, not empty"));
    }
    let hints = args.sampling_hint.iter().map(|h| h.trim().to_string()).collect();
    // §14's timeouts, as `tdsl compose` takes them; the execute phase's is the plan deadline
    // (`--plan-deadline`, 120 s as §14's).
    let mut config = crate::compose::ComposeConfig::default();
    let in_range = |r: crate::ranges::Range, flag: &str, v: f64| r.check(v).map_err(|e| format!("--{flag}: {e}"));
    if let Some(v) = args.decompose_timeout {
        config.decompose_timeout = in_range(crate::compose::DECOMPOSE_TIMEOUT, "decompose-timeout", v)?;
    }
    if let Some(v) = args.plan_timeout {
        config.plan_timeout = in_range(crate::compose::PLAN_TIMEOUT, "plan-timeout", v)?;
    }
    if let Some(v) = args.synthesize_timeout {
        config.synthesize_timeout = in_range(crate::compose::SYNTHESIZE_TIMEOUT, "synthesize-timeout", v)?;
    }
    if let Some(v) = args.repair_rounds {
        config.repair_rounds = in_range(crate::compose::REPAIR_ROUNDS, "repair-rounds", v)? as u32;
    }
    if let Some(d) = plan_deadline {
        config.execute_timeout = d.min(crate::compose::EXECUTE_TIMEOUT.max);
    }
    config.validate().map_err(|e| format!("--plan-deadline: {e}"))?;
    Ok(SamplingCompose::new(SamplingOptions { max_tokens, hints }, config))
}

/// The options of `serve --plans`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Offer plans: the tools `check_plan` and `run_plan`, the resources `tdsl://guide` and
    /// `tdsl://tools`, and the prompt `plan` (SPEC §13).
    #[arg(long)]
    plans: bool,
    /// With --plans: `tools/list` shows only `check_plan` and `run_plan` (with the resources
    /// and the prompt); the served tools stay callable from plans and listed in
    /// `tdsl://tools`, but not directly.
    #[arg(long = "plans-only", requires = "plans")]
    plans_only: bool,
    /// With --plans: make the tools of an MCP server callable from plans as `NAME/TOOL`: a
    /// command line started over stdio (split like `exec:`), or an http:// or https:// URL
    /// (Streamable HTTP). Started on first use (repeatable).
    #[arg(long, value_name = "NAME=COMMAND|URL", requires = "plans")]
    upstream: Vec<String>,
    /// With --upstream NAME=URL: send `Authorization: Bearer <token>` to that server, the
    /// token being this file's content (a file only its owner can read; repeatable).
    #[arg(long = "upstream-token", value_name = "NAME=FILE", requires = "upstream")]
    upstream_token: Vec<String>,
    /// With --upstream NAME=https://…: also trust the CA certificates of this PEM file for
    /// that server's certificate (a private CA; the system's roots and the Mozilla roots are
    /// always trusted, and SSL_CERT_FILE is honoured; repeatable, one per upstream).
    #[arg(long = "upstream-ca", value_name = "NAME=FILE", requires = "upstream")]
    upstream_ca: Vec<String>,
    /// With --plans: the folder the file functions of plans may read (none without it).
    #[arg(long, value_name = "DIR", requires = "plans")]
    files: Option<PathBuf>,
    /// With --plans: the largest plan, in bytes (1 KiB–16 MiB; default 256 KiB).
    #[arg(long = "max-plan-bytes", value_name = "N", requires = "plans")]
    max_plan_bytes: Option<f64>,
    /// With --plans: the most steps of a plan (1–1,024; default 64).
    #[arg(long = "max-plan-steps", value_name = "N", requires = "plans")]
    max_plan_steps: Option<f64>,
    /// With --plans: the deepest nesting of a plan's JSON (4–192; default 64).
    #[arg(long = "max-plan-nesting", value_name = "N", requires = "plans")]
    max_plan_nesting: Option<f64>,
    /// With --plans: the most children of a plan's fan-out step (1–100,000; default 1,000).
    #[arg(long = "max-fan-out", value_name = "N", requires = "plans")]
    max_fan_out: Option<f64>,
    /// The deadline of every run serve starts — a plan's whole run, a served composite's
    /// call — in seconds (0.1–86,400; default 120); past it the run ends with TIMEOUT.
    /// Also spelled --plan-deadline.
    #[arg(long = "deadline", alias = "plan-deadline", value_name = "S")]
    plan_deadline: Option<f64>,
    /// The fuel of all the expressions of one run together — a plan's, a served composite's
    /// call (1–2^53; default 500,000,000, ten expressions at their own limit). Past it the expression
    /// that runs out fails with E0401.
    #[arg(long = "max-run-fuel", value_name = "N")]
    max_run_fuel: Option<u64>,
    /// The most bytes of values one run (a plan's, a served composite's call) holds at once — what its
    /// expressions running at that moment build, their results, the upstream answers it
    /// keeps (1 KiB–1 TiB; default 512 MiB). Past it the expression or the call fails
    /// with E0406.
    #[arg(long = "max-run-memory", value_name = "BYTES")]
    max_run_memory: Option<u64>,
    /// The most bytes of values all the runs in flight (plans, served composites) hold together,
    /// each counted as for --max-run-memory (1 KiB–1 TiB; default 2 GiB). Past it the
    /// expression or the call that would take more fails with E0406.
    #[arg(long = "max-memory-in-flight", value_name = "BYTES")]
    max_memory_in_flight: Option<u64>,
    /// The most bytes of large answers (64 KiB or more) held from their making until they are
    /// written, all calls together (1 KiB–1 TiB, at least --max-result-bytes; default a
    /// quarter of --max-memory-in-flight, at least --max-result-bytes: 512 MiB). Past it the
    /// answers held the longest are forgotten (their clients read that the answer is gone);
    /// an answer alone larger is refused with E0818.
    #[arg(long = "max-answer-bytes-held", value_name = "BYTES")]
    max_answer_bytes_held: Option<u64>,
    /// With --upstream: how long a check waits for an upstream server's first `tools/list`,
    /// in seconds (0.1–300; default 30); a failed listing is remembered, and listed again
    /// in the background after 5 s, doubling up to 5 min.
    #[arg(long = "upstream-timeout", value_name = "S", requires = "upstream")]
    upstream_timeout: Option<f64>,
    /// With --plans: keep plans that worked as skills in DIR, a folder under the root (made
    /// when missing): the tools `save_skill` and `delete_skill`, each skill served as a tool
    /// and callable from plans, the resource `tdsl://skills` (docs/plans.md, "Skills").
    #[arg(long, value_name = "DIR", requires = "plans")]
    skills: Option<PathBuf>,
    /// With --skills: the most skills the folder holds (1–100,000; default 256).
    #[arg(long = "max-skills", value_name = "N", requires = "skills")]
    max_skills: Option<f64>,
}

/// The skills folder of `--skills`, opened, or why it is refused.
fn skill_store(args: &PlanArgs, root: &std::path::Path) -> Result<Option<crate::plans::skills::SkillStore>, String> {
    let Some(dir) = &args.skills else { return Ok(None) };
    let max = match args.max_skills {
        Some(n) => crate::ranges::SKILLS.check(n).map_err(|e| format!("--max-skills {n}: {e}"))? as usize,
        None => crate::plans::skills::DEFAULT_MAX_SKILLS,
    };
    crate::plans::skills::SkillStore::open(root, dir, max).map(Some)
}

/// `--max-calls-per-run` and `--max-result-bytes`, each in its range (or its `serve` default).
fn run_limits(args: &ServeArgs) -> Result<(usize, usize), String> {
    use crate::ranges::{MAX_CALLS_PER_RUN, MAX_RESULT_BYTES, SERVE_MAX_CALLS_PER_RUN, SERVE_MAX_RESULT_BYTES};
    let calls = match args.max_calls_per_run {
        Some(n) => MAX_CALLS_PER_RUN.check(n as f64).map_err(|e| format!("--max-calls-per-run: {e}"))? as usize,
        None => SERVE_MAX_CALLS_PER_RUN,
    };
    let bytes = match args.max_result_bytes {
        Some(n) => MAX_RESULT_BYTES.check(n as f64).map_err(|e| format!("--max-result-bytes: {e}"))? as usize,
        None => SERVE_MAX_RESULT_BYTES,
    };
    Ok((calls, bytes))
}

/// `--max-run-fuel`, `--max-run-memory`, `--max-memory-in-flight` and `--deadline`, each in
/// its range (or its `serve` default), as plan limits: one pool of memory for all the runs
/// `serve` starts, plans and served composites alike.
fn run_budgets(args: &PlanArgs) -> Result<crate::plans::PlanLimits, String> {
    let mut limits = crate::plans::PlanLimits::default();
    if let Some(d) = args.plan_deadline {
        limits.deadline_seconds = crate::ranges::DEADLINE_SECONDS.check(d).map_err(|e| format!("--deadline: {e}"))?;
    }
    use crate::ranges::{MEMORY_IN_FLIGHT, RUN_FUEL, RUN_MEMORY, SERVE_MEMORY_IN_FLIGHT};
    if let Some(n) = args.max_run_fuel {
        limits.max_run_fuel = RUN_FUEL.check(n as f64).map_err(|e| format!("--max-run-fuel: {e}"))? as u64;
    }
    if let Some(n) = args.max_run_memory {
        limits.max_run_memory = RUN_MEMORY.check(n as f64).map_err(|e| format!("--max-run-memory: {e}"))? as u64;
    }
    let in_flight = match args.max_memory_in_flight {
        Some(n) => MEMORY_IN_FLIGHT.check(n as f64).map_err(|e| format!("--max-memory-in-flight: {e}"))? as u64,
        None => SERVE_MEMORY_IN_FLIGHT,
    };
    limits.memory_in_flight = Some(crate::runtime::MemoryPool::new(in_flight));
    Ok(limits)
}

/// `--max-answer-bytes-held` in its range and at least `--max-result-bytes`, or its default
/// ([`crate::mcp::spliced::default_max_held`]).
fn answer_bytes_held(args: &PlanArgs, max_result_bytes: usize) -> Result<usize, String> {
    use crate::ranges::{ANSWER_BYTES_HELD, MEMORY_IN_FLIGHT, SERVE_MEMORY_IN_FLIGHT};
    let Some(n) = args.max_answer_bytes_held else {
        let in_flight = match args.max_memory_in_flight {
            Some(n) => MEMORY_IN_FLIGHT.check(n as f64).map_err(|e| format!("--max-memory-in-flight: {e}"))? as u64,
            None => SERVE_MEMORY_IN_FLIGHT,
        };
        return Ok(crate::mcp::spliced::default_max_held(in_flight, max_result_bytes));
    };
    let n = ANSWER_BYTES_HELD.check(n as f64).map_err(|e| format!("--max-answer-bytes-held: {e}"))? as u64;
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n < max_result_bytes {
        return Err(format!(
            "--max-answer-bytes-held {n} is less than the largest result ({max_result_bytes} bytes, --max-result-bytes): \
             such an answer could never be sent"
        ));
    }
    Ok(n)
}

/// The plan options and the upstream servers of `--plans`, or why they are refused.
fn plan_setup(
    args: &PlanArgs,
    (max_calls_per_run, max_result_bytes): (usize, usize),
    budgets: &crate::plans::PlanLimits,
) -> Result<(crate::mcp::plans::PlanOptions, crate::mcp::upstream::Upstreams), String> {
    let mut limits = super::plan_limits(
        [
            ("--max-plan-bytes", args.max_plan_bytes),
            ("--max-plan-steps", args.max_plan_steps),
            ("--max-plan-nesting", args.max_plan_nesting),
            ("--max-fan-out", args.max_fan_out),
        ],
        args.plan_deadline,
    )?;
    limits.max_calls_per_run = max_calls_per_run;
    limits.max_result_bytes = max_result_bytes;
    limits.max_run_fuel = budgets.max_run_fuel;
    limits.max_run_memory = budgets.max_run_memory;
    limits.memory_in_flight.clone_from(&budgets.memory_in_flight);
    if let Some(dir) = &args.files {
        if !dir.is_dir() {
            return Err(format!("--files {}: not a folder", dir.display()));
        }
    }
    let upstreams = crate::mcp::upstream::Upstreams::from_flags(
        &args.upstream,
        &args.upstream_token,
        &args.upstream_ca,
        args.upstream_timeout,
    )?;
    let options = crate::mcp::plans::PlanOptions { limits, files: args.files.clone() };
    Ok((options, upstreams))
}

/// Runs `tdsl serve`.
pub(crate) fn run(args: ServeArgs) -> ExitCode {
    let _ = args.mcp;
    #[cfg(target_os = "linux")]
    if args.watchdog {
        return crate::host::watchdog::run();
    }
    // The address and the token are checked before anything loads.
    let http = match &args.listen {
        Some(listen) => match http_setup(&args, listen) {
            Ok(h) => Some(h),
            Err(e) => return usage_failure(&UsageError(e)),
        },
        None => None,
    };
    let run_limits = match run_limits(&args) {
        Ok(l) => l,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    if let Err(e) = crate::ranges::MAX_TOOL_VALUES.check(args.max_tool_values as f64) {
        return usage_failure(&UsageError(format!("--max-tool-values: {e}")));
    }
    let budgets = match run_budgets(&args.plans) {
        Ok(b) => b,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    match answer_bytes_held(&args.plans, run_limits.1) {
        Ok(n) => crate::mcp::spliced::set_max_held(n),
        Err(e) => return usage_failure(&UsageError(e)),
    }
    let plan_setup = match args.plans.plans.then(|| plan_setup(&args.plans, run_limits, &budgets)).transpose() {
        Ok(p) => p,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    let compose = match args.compose.compose.then(|| compose_setup(&args.compose, args.plans.plan_deadline)).transpose()
    {
        Ok(c) => c,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    let root = match super::check::tool_root(args.root.as_deref()) {
        Ok(r) => r.dir().to_path_buf(),
        Err(e) => return usage_failure(&e),
    };
    let skill_store = match skill_store(&args.plans, &root) {
        Ok(s) => s,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    // Before any process starts (a skill's check may start an upstream server): what ends
    // them when this process is killed outright.
    #[cfg(target_os = "linux")]
    crate::host::watchdog::start();
    let (server, skipped) = match McpServer::load_except(&root, &args.allow, skill_store.as_ref().map(|s| s.dir())) {
        Ok(s) => s,
        Err(e) if e.starts_with("--allow") => return usage_failure(&UsageError(e)),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    for s in skipped {
        eprintln!("warning: not served: {s}");
    }
    let tool_env = match args.tool_env.policy() {
        Ok(env) => env,
        Err(e) => return usage_failure(&e),
    };
    let server = server
        .with_tool_env(tool_env.clone())
        .with_max_tool_values(args.max_tool_values)
        .with_run_limits(run_limits.0, run_limits.1)
        .with_run_budgets(
            budgets.max_run_fuel,
            budgets.max_run_memory,
            budgets
                .memory_in_flight
                .clone()
                .unwrap_or_else(|| crate::runtime::MemoryPool::new(crate::ranges::SERVE_MEMORY_IN_FLIGHT)),
            std::time::Duration::from_secs_f64(budgets.deadline_seconds),
        );
    let (server, compose, skill_log) = match args.history.open() {
        Ok(Some(store)) => (
            server.with_run_observers(super::recording::each_run(store.clone())),
            compose.map(|c| c.with_history(store.clone())),
            Some(super::recording::skill_changes(store)),
        ),
        Ok(None) => (server, compose, None),
        Err(e) => return usage_failure(&e),
    };
    // Kept here so that the upstream servers are shut down outside the async runtime.
    let mut upstreams = None;
    let server = match plan_setup {
        Some((options, ups)) => {
            // Upstream servers are processes tdsl starts, as `mcp:` servers are.
            let ups = std::sync::Arc::new(ups.with_env(tool_env).with_max_values(args.max_tool_values));
            upstreams = Some(ups.clone());
            server.with_plans(options, ups).with_plans_only(args.plans.plans_only)
        }
        None => server,
    };
    let server = match compose {
        Some(c) => server.with_compose(std::sync::Arc::new(c)),
        None => server,
    };
    let server = match skill_store {
        Some(store) => match server.with_skills(store, skill_log) {
            Ok((server, problems)) => {
                for p in problems {
                    eprintln!("warning: {p}");
                }
                if let Some(note) = server.skills().and_then(crate::mcp::skills::Skills::checked_note) {
                    eprintln!("tdsl: {note}");
                }
                server
            }
            Err(e) => return usage_failure(&UsageError(e)),
        },
        None => server,
    };
    let mut offering = match &upstreams {
        Some(u) if u.is_empty() => " and plans".to_string(),
        Some(u) => format!(" and plans (upstream: {})", u.names().join(", ")),
        None => String::new(),
    };
    if args.plans.skills.is_some() {
        offering.push_str(" and skills");
    }
    if args.plans.plans_only {
        offering.push_str(", only through plans");
    }
    if args.compose.compose {
        offering.push_str(" and compose (with the client's model)");
    }
    // A process a tool leaves in a session of its own is adopted, and ended at shutdown.
    crate::host::adopt_orphans();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage_failure(&UsageError(format!("cannot start the async runtime: {e}"))),
    };
    // The runs of calls, to wait for their ends to be written before the process exits.
    let runs = server.for_session();
    let result = match http {
        None => {
            let server = match args.max_calls {
                Some(n) => server.with_queued_call_limit(n as usize),
                None => server,
            };
            eprintln!(
                "tdsl: serving {} tool(s){offering} from {} over MCP on stdio",
                server.tools().len(),
                root.display()
            );
            runtime.block_on(server.serve_stdio(args.max_request_values as usize))
        }
        Some((addr, options)) => {
            let listener = match runtime.block_on(tokio::net::TcpListener::bind(addr)) {
                Ok(l) => l,
                Err(e) => return usage_failure(&UsageError(format!("--listen {addr}: cannot listen: {e}"))),
            };
            let bound = listener.local_addr().map_or(addr, |a| a);
            eprintln!(
                "tdsl: serving {} tool(s){offering} from {} over MCP at http://{bound}/mcp{}",
                server.tools().len(),
                root.display(),
                if options.token.is_some() { " (bearer token required)" } else { "" }
            );
            runtime.block_on(server.serve_http(listener, options, crate::mcp::terminated()))
        }
    };
    // Calls cancelled at shutdown may still be winding down on blocking threads: their
    // programs are already killed, so the process does not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    // Every run's end in the history before the exit: a run the process left behind would
    // stay `RUNNING` (read back `INTERRUPTED`).
    if !runs.finish_runs(RUN_ENDS_BOUND) {
        eprintln!(
            "tdsl: warning: some runs could not be ended in the history within {} s (the history is slow or \
             locked): they read INTERRUPTED",
            RUN_ENDS_BOUND.as_secs()
        );
    }
    // The upstream servers get SIGTERM and 0.5 s, then they are killed: one busy writing an
    // answer reads no more input, so closing it would not end it.
    if let Some(u) = upstreams {
        u.shut_down_quickly();
    }
    // What tools left behind in sessions of their own (adopted, see below) ends too.
    crate::host::end_children(crate::host::TERM_GRACE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A full disk under standard output: one line, exit 1, like every command.
        Err(e) if e.starts_with(crate::mcp::OUTPUT_FAILED) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(e) => usage_failure(&UsageError(e)),
    }
}
