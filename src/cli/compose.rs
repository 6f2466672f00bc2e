//! `tdsl compose QUERY --root DIR --model PROVIDER:MODEL [--base-url URL] [--repair-rounds N]
//! [--trace FILE] [--history FILE | --no-history] [--clean-env [--pass-env NAME]...]`
//! (SPEC §14): seed 000's four phases with a language model; the `CompositionResult` as JSON
//! on standard output, the phase on a terminal's standard error. Exit 0 for `SUCCESS` and
//! `PARTIAL`, 1 for `FAILED` and `TIMEOUT`, 2 when the command cannot start (a bad flag, no
//! key, an unreadable root). `SIGINT`, `SIGTERM` and `SIGHUP` end it as they end `tdsl run`
//! ([`super::signals`]): the model request is abandoned or the plan's run cancelled (its
//! tools' processes ended), the composition is recorded `FAILED` (cancelled) and printed,
//! and the exit status is 128 + the signal's number. One while it sets up (before the
//! composition starts: reading the root, opening the history) ends it at once, with that
//! status.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::progress::HistoryArgs;
use super::run::ToolEnvArgs;
use super::signals::Interrupts;
use super::{print_stdout, usage_failure, UsageError};
use crate::compose::{client_for, ComposeConfig, Composer, CompositionStatus, ModelClient};
use crate::history::HistoryStore;
use crate::ranges::Range;

/// Arguments of `tdsl compose`.
#[derive(Debug, Args)]
pub(crate) struct ComposeArgs {
    /// The question to answer.
    query: String,
    /// The tool root: every `.tool` file under it is a tool the plan may call.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The model: `openai:MODEL` (chat completions; OPENAI_API_KEY) or `anthropic:MODEL`
    /// (Messages; ANTHROPIC_API_KEY).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    model: String,
    /// The API's base URL: `BASE/chat/completions` (default https://api.openai.com/v1; an
    /// Ollama server is http://localhost:11434/v1) or `BASE/v1/messages` (default
    /// https://api.anthropic.com). With it, a missing key is not an error.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Rounds a refused plan goes back to the model with its diagnostics (0–5).
    #[arg(long, value_name = "N", default_value_t = 2)]
    repair_rounds: u32,
    /// Phase 1's timeout in seconds (0.1–600).
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    decompose_timeout: f64,
    /// Phase 2's timeout in seconds, repair rounds included (0.1–600).
    #[arg(long, value_name = "S", default_value_t = 15.0)]
    plan_timeout: f64,
    /// Phase 3's timeout in seconds: the plan's deadline (0.1–3600).
    #[arg(long, value_name = "S", default_value_t = 120.0)]
    execute_timeout: f64,
    /// Phase 4's timeout in seconds (0.1–600).
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    synthesize_timeout: f64,
    /// Writes the plan run's execution trace (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    history: HistoryArgs,
    /// The environment of the plan's tools (`--clean-env`, `--pass-env`, as for `tdsl run`);
    /// the providers' key variables are withheld in any case.
    #[command(flatten)]
    tool_env: ToolEnvArgs,
}

fn in_range(r: Range, flag: &str, v: f64) -> Result<f64, UsageError> {
    r.check(v).map_err(|e| UsageError(format!("--{flag}: {e}")))
}

/// The key for a provider from its environment variable; required with the provider's own
/// endpoint, optional with `--base-url` (a local server).
fn key(model: &str, base_url: Option<&str>) -> Result<Option<String>, UsageError> {
    let var = match model.split_once(':').map(|(p, _)| p) {
        Some("anthropic") => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    };
    match std::env::var(var) {
        // A newline inside the key would inject a header: refused, without showing the key.
        Ok(k) if k.trim().chars().any(char::is_control) => {
            Err(UsageError(format!("{var} holds a control character (a newline?): an API key is one line")))
        }
        Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_string())),
        _ if base_url.is_some() => Ok(None),
        _ => Err(UsageError(format!(
            "{var} is not set: the model `{model}` needs a key (or pass --base-url for a server that needs none)"
        ))),
    }
}

fn setup(args: &ComposeArgs) -> Result<(Composer, Option<Arc<dyn HistoryStore>>), UsageError> {
    let config = ComposeConfig {
        decompose_timeout: in_range(crate::compose::DECOMPOSE_TIMEOUT, "decompose-timeout", args.decompose_timeout)?,
        plan_timeout: in_range(crate::compose::PLAN_TIMEOUT, "plan-timeout", args.plan_timeout)?,
        execute_timeout: in_range(crate::compose::EXECUTE_TIMEOUT, "execute-timeout", args.execute_timeout)?,
        synthesize_timeout: in_range(
            crate::compose::SYNTHESIZE_TIMEOUT,
            "synthesize-timeout",
            args.synthesize_timeout,
        )?,
        repair_rounds: in_range(crate::compose::REPAIR_ROUNDS, "repair-rounds", f64::from(args.repair_rounds))? as u32,
        ..ComposeConfig::default()
    };
    let base = args.base_url.as_deref();
    if let Some(b) = base {
        if !(b.starts_with("http://") || b.starts_with("https://")) {
            return Err(UsageError(format!("--base-url {b:?} is not an http:// or https:// URL")));
        }
    }
    // The process is non-dumpable already, key or not (`super::hide_process`).
    let key = key(&args.model, base)?;
    let client: Arc<dyn ModelClient> = Arc::from(client_for(&args.model, base, key).map_err(UsageError)?);
    if !args.root.is_dir() {
        return Err(UsageError(format!("--root {}: not a folder", args.root.display())));
    }
    let mut composer =
        Composer::new(client, &args.root).map_err(|e| UsageError(format!("--root {}: {e}", args.root.display())))?;
    composer = composer.with_config(config).with_tool_env(args.tool_env.policy()?);
    let history = args.history.open()?;
    if std::io::stderr().is_terminal() {
        composer = composer.on_phase(Arc::new(|status: CompositionStatus| {
            let what = match status {
                CompositionStatus::Decomposing => "1/4 decomposing the query",
                CompositionStatus::Planning => "2/4 planning (the plan is checked before it runs)",
                CompositionStatus::Executing => "3/4 executing the plan",
                CompositionStatus::Synthesizing => "4/4 synthesizing the answer",
                _ => return,
            };
            eprint!("\r\x1b[2Kcompose: {what}…");
        }));
    }
    Ok((composer, history))
}

/// Runs `tdsl compose`.
pub(crate) fn run(args: ComposeArgs) -> ExitCode {
    // Before any other thread starts, so that every thread has the signals blocked.
    let interrupts = Interrupts::install();
    // Processes a tool leaves in a session of its own are adopted, and ended below.
    crate::host::adopt_orphans();
    let code = compose(&args, &interrupts);
    crate::host::end_children(crate::host::TERM_GRACE);
    interrupts.exit_status().map_or(code, ExitCode::from)
}

fn compose(args: &ComposeArgs, interrupts: &Interrupts) -> ExitCode {
    // A signal while it sets up (reads the root, opens the history) ends it at once.
    let set_up = {
        let _setting_up = interrupts.setting_up();
        setup(args)
    };
    let (composer, history) = match set_up {
        Ok((composer, history)) => (composer.with_cancel(interrupts.token().clone()), history),
        Err(e) => return usage_failure(&e),
    };
    // The composition is one run of the history, recorded as it goes (so a composition
    // that dies mid-way is there, `INTERRUPTED` in the phase it was in): its phases as
    // steps, the plan's steps inside `execute`, the query and model as arguments, the
    // response, usage and plan as its result.
    let result = match &history {
        Some(store) => {
            let (result, recorded) = composer.compose_recorded(&args.query, store.as_ref());
            if let Err(e) = recorded {
                eprintln!("warning: the composition is not in the run history: {e}");
            }
            result
        }
        None => composer.compose(&args.query),
    };
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
        eprintln!("compose: {} in {} ms", result.status.as_str(), result.total_duration_ms.unwrap_or(0));
    }
    if let (Some(path), Some(trace)) = (&args.trace, &result.trace) {
        if let Err(e) = std::fs::write(path, trace.to_json() + "\n") {
            eprintln!("error: cannot write the trace to {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if let Some(e) = &result.error {
        // What the model or its server said may hold terminal escapes.
        eprintln!("error: {}", super::printable::printable(e));
    }
    if let Err(code) = print_stdout(&(result.to_json() + "\n")) {
        return code;
    }
    if result.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
