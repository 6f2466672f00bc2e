//! The command line (SPEC §8): one file per subcommand. Exit codes: 0 success, 1 the input
//! has problems (diagnostics were printed), 2 the command itself could not run (usage, I/O).

// Standard error may be a closed pipe (`tdsl check … 2>&1 | head -1`) or a full disk: the
// standard `eprint!`/`eprintln!` panic then. These, which every subcommand below uses in
// their place (a `macro_rules!` defined before the modules shadows the prelude's in them),
// drop what cannot be written: there is nowhere left to report it.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod check;
mod compose;
mod eval;
mod export;
mod graph;
mod history;
mod lsp;
mod named_values;
mod printable;
mod progress;
mod recording;
mod repl;
mod report;
mod run;
mod schema;
mod serve;
mod signals;
mod upstreams;
mod worker;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::files::{FileStore, LocalStore};

/// tdsl: a typed, compiled composition language for tools.
#[derive(Debug, Parser)]
#[command(name = "tdsl", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check `.tool` files: every broken reference, cycle and type error, before anything runs.
    Check(check::CheckArgs),
    /// Answer a question with a language model and the tools under a root: decompose, plan,
    /// execute, synthesize (seed 000's Tool Composer).
    Compose(Box<compose::ComposeArgs>),
    /// Evaluate an expression and print its value as JSON.
    Eval(eval::EvalArgs),
    /// Print tools in a language-model provider's tool format (OpenAI, Anthropic, MCP).
    Export(export::ExportArgs),
    /// Draw a composite tool's dependency graph, with its levels.
    Graph(graph::GraphArgs),
    /// Run a composite tool and print its result as JSON.
    Run(Box<run::RunArgs>),
    /// Serve the tools under a root to agents over MCP (stdio, or Streamable HTTP with --listen).
    Serve(Box<serve::ServeArgs>),
    /// Re-run a recorded trace with no tool calls and report any divergence.
    Replay(run::ReplayArgs),
    /// Try expressions interactively (or run a script of inputs from standard input).
    #[command(after_help = repl::AFTER_HELP)]
    Repl(repl::ReplArgs),
    /// Serve `.tool` files to editors: a Language Server Protocol server on stdio.
    Lsp(lsp::LspArgs),
    /// Print the JSON Schema of the `.tool` format (for editors without `tdsl lsp`).
    Schema(schema::SchemaArgs),
    /// Past runs from the run history: list them, show one, summarise tools.
    History(history::HistoryArgs),
    /// Draw a run (a trace, or a run from the history) as a self-contained HTML page.
    Report(report::ReportArgs),
    /// Work for a Temporal server: run the composites `tdsl run --engine temporal` starts
    /// (feature `temporal`).
    Worker(worker::WorkerArgs),
}

/// Runs the command line.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    if cli.command.starts_tools_or_holds_secrets() {
        hide_process();
    }
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Compose(args) => compose::run(*args),
        Command::Eval(args) => eval::run(args),
        Command::Export(args) => export::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Run(args) => run::run(*args),
        Command::Serve(args) => serve::run(*args),
        Command::Replay(args) => run::replay_command(args),
        Command::Repl(args) => repl::run(args),
        Command::Lsp(args) => lsp::run(args),
        Command::Schema(args) => schema::run(args),
        Command::History(args) => history::run(args),
        Command::Report(args) => report::run(args),
        Command::Worker(args) => worker::run(args),
    }
}

impl Command {
    /// Whether the command starts tools or upstream servers, or reads a secret (a model's
    /// key, an `--upstream-token`, a `--token-file`): then its process is made non-dumpable
    /// ([`hide_process`]). The others (`eval` and `repl` evaluate expressions, the rest read
    /// files and print) start no tool and hold nothing a tool must not read, and keep what
    /// being dumpable gives: core dumps, and a debugger or profiler of the same user. Every
    /// command is named, so that a new one is decided on (`docs/security.md`, "The
    /// environment of tools").
    fn starts_tools_or_holds_secrets(&self) -> bool {
        match self {
            Command::Check(_) | Command::Compose(_) | Command::Run(_) | Command::Serve(_) | Command::Worker(_) => true,
            Command::Eval(_)
            | Command::Export(_)
            | Command::Graph(_)
            | Command::Replay(_)
            | Command::Repl(_)
            | Command::Lsp(_)
            | Command::Schema(_)
            | Command::History(_)
            | Command::Report(_) => false,
        }
    }
}

/// Makes this process non-dumpable (Linux): its `/proc/PID/environ` — which keeps every
/// variable whatever `--clean-env` withholds from the tools — and its memory — which holds
/// the upstreams' tokens and a model's key — are then readable by no process of the same
/// user without `CAP_SYS_PTRACE`, a tool or an upstream server included, and it cannot be
/// traced by one. Core dumps are off too. A tool's own process is dumpable again after its
/// `exec` (hostile round 12, finding 1; `tdsl compose` did this alone before).
fn hide_process() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!(
            "warning: cannot hide this process's environment and memory from the tools it starts ({e}): they \
             could read them in /proc"
        );
    }
}

/// Opens `path` for writing (created, or emptied) readable by its owner alone (`0600` on
/// Unix, as the history is): a trace and a report hold every payload of a run (hostile
/// round 12, finding 10). An existing regular file is made private too; a device
/// (`/dev/stdout`) is left as it is.
pub(crate) fn create_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// A failure of the command itself (exit 2).
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The clock `--now TIME` stops: an RFC 3339 time.
pub(crate) fn fixed_clock(now: &str) -> Result<std::sync::Arc<crate::runtime::FixedClock>, UsageError> {
    match chrono::DateTime::parse_from_rfc3339(now) {
        Ok(t) => Ok(std::sync::Arc::new(crate::runtime::FixedClock(t.timestamp_millis()))),
        Err(e) => Err(UsageError(format!("--now {now:?} is not an RFC 3339 time: {e}"))),
    }
}

/// Whether to colour output on standard error.
pub(crate) fn color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

pub(crate) use crate::diagnostic::render;

/// The plan limits of `serve --mcp --plans` and `check --plan` from their flags (a flag's
/// name and value, when given; the deadline only for `serve`), each in its range.
pub(crate) fn plan_limits(
    flags: [(&str, Option<f64>); 4],
    deadline: Option<f64>,
) -> Result<crate::plans::PlanLimits, String> {
    let mut limits = crate::plans::PlanLimits::default();
    for (i, (flag, value)) in flags.into_iter().enumerate() {
        if let Some(v) = value {
            if v.fract() != 0.0 || v < 0.0 {
                return Err(format!("{flag} {v}: a whole number is needed"));
            }
            let field = match i {
                0 => &mut limits.max_bytes,
                1 => &mut limits.max_steps,
                2 => &mut limits.max_nesting,
                _ => &mut limits.max_fan_out,
            };
            *field = v as usize;
            // The flags before it were in range: an error now is this flag's, named as the
            // user typed it (not the limit's field name).
            if let Err(e) = limits.validate() {
                return Err(format!("{flag} {v}: {e}"));
            }
        }
    }
    if let Some(v) = deadline {
        limits.deadline_seconds = v;
    }
    limits.validate().map_err(|e| e.to_string())?;
    Ok(limits)
}

/// The file store for `--files DIR`: the directory on disk, versions from git when it is in
/// a work tree. `eval` takes `--files`; `run` and the REPL take it the same way.
pub(crate) fn open_files(dir: &std::path::Path) -> Result<Arc<dyn FileStore>, UsageError> {
    LocalStore::open(dir)
        .map(|s| Arc::new(s) as Arc<dyn FileStore>)
        .map_err(|e| UsageError(format!("--files {}: {e}", dir.display())))
}

/// What a folder with no `.tool` files means.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmptyFolder {
    /// A usage error (`tdsl check`: nothing to check is a mistake).
    Error,
    /// Nothing to do (`tdsl export`).
    Allowed,
}

/// Each file given, and every `.tool` file under each folder given, sorted by path within a
/// folder. Symbolic links to folders are not followed, so a walk always ends.
pub(crate) fn collect_tools(
    paths: &[std::path::PathBuf],
    empty: EmptyFolder,
) -> Result<Vec<std::path::PathBuf>, UsageError> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| UsageError(format!("{}: {e}", p.display())))?;
        if !meta.is_dir() {
            files.push(p.clone());
            continue;
        }
        let found =
            crate::analysis::tool_files_under(p).map_err(|(dir, e)| UsageError(format!("{}: {e}", dir.display())))?;
        if found.is_empty() && empty == EmptyFolder::Error {
            return Err(UsageError(format!("{}: no `.tool` files in this folder", p.display())));
        }
        files.extend(found);
    }
    Ok(files)
}

/// Writes `text` to standard output and flushes it: every subcommand's output goes through
/// here (or through [`StdoutGuard`]), so that a closed or full standard output is never a
/// panic. A closed pipe (`tdsl eval … | head -1`) means the reader has what it wanted: the
/// rest is dropped quietly and the command ends with its own status. Any other failure (a
/// full disk: `> /dev/full`) is one line on standard error and exit 1 (`Err`).
pub(crate) fn print_stdout(text: &str) -> Result<(), ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) => stdout_failed(&e),
    }
}

/// What a failed write to standard output means: nothing for a closed pipe, exit 1 with a
/// line on standard error for anything else.
pub(crate) fn stdout_failed(e: &std::io::Error) -> Result<(), ExitCode> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return Ok(());
    }
    eprintln!("error: cannot write to standard output: {e}");
    Err(ExitCode::from(1))
}

/// A writer to standard output that keeps its first error instead of losing it, for
/// output written piece by piece (the REPL): [`StdoutGuard::check`] says what it means.
pub(crate) struct StdoutGuard<W: Write> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: Write> StdoutGuard<W> {
    /// Wraps a writer.
    pub(crate) fn new(inner: W) -> StdoutGuard<W> {
        StdoutGuard { inner, error: None }
    }

    /// `Ok` while nothing failed or standard output is a closed pipe (the reader left;
    /// `closed` then says so); `Err(exit code)` after any other failure, reported once.
    pub(crate) fn check(&mut self) -> Result<(), ExitCode> {
        let _ = self.flush();
        match self.error.take() {
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.error = Some(e);
                Ok(())
            }
            Some(e) => stdout_failed(&e),
            None => Ok(()),
        }
    }

    /// Whether standard output was closed by its reader.
    pub(crate) fn closed(&self) -> bool {
        self.error.as_ref().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

impl<W: Write> Write for StdoutGuard<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_some() {
            // Dropped: the error is already kept.
            return Ok(buf.len());
        }
        match self.inner.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.error = Some(e);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_none() {
            if let Err(e) = self.inner.flush() {
                self.error = Some(e);
            }
        }
        Ok(())
    }
}

/// Prints a usage or I/O error and returns exit code 2.
pub(crate) fn usage_failure(e: &UsageError) -> ExitCode {
    eprintln!("error: {}", printable::printable(&e.to_string()));
    ExitCode::from(2)
}
