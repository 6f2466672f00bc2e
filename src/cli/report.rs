//! `tdsl report (TRACE.json | --run ID [--history FILE]) -o report.html`: a run drawn as
//! one self-contained HTML page ([`crate::report`]). Exit status: 0, or 2 when the trace or
//! the run cannot be read or the page cannot be written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::progress::history_file;
use super::{usage_failure, UsageError};
use crate::analysis::{Analyzer, ToolRoot};
use crate::exec::Trace;
use crate::history::{HistoryStore, SqliteStore};
use crate::report::{html, Graph};

/// Arguments of `tdsl report`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["trace", "run"]))]
pub(crate) struct ReportArgs {
    /// A trace written by `tdsl run --trace`.
    #[arg(value_name = "TRACE")]
    trace: Option<PathBuf>,
    /// A run from the history instead: its id (`tdsl history list`) or trace run id.
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// The history database `--run` reads (default: $XDG_DATA_HOME/tdsl/history.db).
    #[arg(long, value_name = "FILE", requires = "run")]
    history: Option<PathBuf>,
    /// The HTML file to write.
    #[arg(long, short = 'o', value_name = "FILE.html")]
    output: PathBuf,
}

/// Runs `tdsl report`.
pub(crate) fn run(args: ReportArgs) -> ExitCode {
    let trace = match load(&args) {
        Ok(t) => t,
        Err(e) => return usage_failure(&e),
    };
    let graph = graph(&trace);
    let page = html(&trace, graph.as_ref());
    drop(trace);
    // Readable by its owner alone: the page holds the run's payloads (as the history does).
    let written =
        super::create_private(&args.output).and_then(|mut f| std::io::Write::write_all(&mut f, page.as_bytes()));
    if let Err(e) = written {
        return usage_failure(&UsageError(format!("cannot write {}: {e}", args.output.display())));
    }
    ExitCode::SUCCESS
}

/// What reading a trace of n bytes may take at its peak, as a multiple of n: the text, the
/// trace read from it (a value may be held twice: a step's result and its attempt's
/// response), and room for the page.
const MEMORY_PER_TRACE_BYTE: usize = 3;

/// Refuses an output that is one of the inputs (`-o trace.json`, or a symbolic or hard link
/// to it, or to the history database): the page would replace what it draws. Files are
/// compared by identity (device and inode), not by name.
fn refuse_overwriting(output: &Path, input: &Path, what: &str) -> Result<(), UsageError> {
    let same = match (std::fs::metadata(output), std::fs::metadata(input)) {
        (Ok(o), Ok(i)) => same_file(&o, &i),
        _ => false,
    };
    if same {
        return Err(UsageError(format!(
            "-o {} is {what} {} itself: the page would replace it; write the page to another file",
            output.display(),
            input.display()
        )));
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok() && a.created().ok() == b.created().ok()
}

/// Whether `bytes` more can be had now: a run out of memory (a `ulimit -v`, a cgroup) is
/// then a message, not an abort in the middle of reading.
fn memory_for(bytes: usize, path: &Path) -> Result<(), UsageError> {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).map_err(|_| {
        UsageError(format!(
            "not enough memory to draw {}: reading a trace of this size takes about {} MiB",
            path.display(),
            bytes >> 20
        ))
    })
}

fn load(args: &ReportArgs) -> Result<Trace, UsageError> {
    if let Some(path) = &args.trace {
        refuse_overwriting(&args.output, path, "the trace")?;
        let size = std::fs::metadata(path).map_or(0, |m| usize::try_from(m.len()).unwrap_or(usize::MAX));
        memory_for(size.saturating_mul(MEMORY_PER_TRACE_BYTE), path)?;
        let text =
            crate::input::read_text(path).map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
        return Trace::from_json(&text).map_err(|e| UsageError(format!("{}: {e}", path.display())));
    }
    let id = args.run.as_deref().unwrap_or_default();
    let path = history_file(args.history.as_ref())?;
    refuse_overwriting(&args.output, &path, "the history database")?;
    // Only reading: a history in a read-only folder or mount is read as any other.
    let store = SqliteStore::open_read_only(&path).map_err(|e| UsageError(e.to_string()))?;
    let run = store
        .run(id)
        .map_err(|e| UsageError(e.to_string()))?
        .ok_or_else(|| UsageError(format!("no run `{id}` in the history {}", path.display())))?;
    run.trace.ok_or_else(|| {
        let ended = ["SUCCESS", "PARTIAL", "FAILED", "TIMEOUT"].contains(&run.run.status.as_str());
        let why = if ended {
            format!("it is {}, but its stored trace cannot be read", run.run.status)
        } else {
            format!("it is {}", run.run.status)
        };
        UsageError(format!("run `{id}` has no trace: {why} (`tdsl history show {id}` lists what it recorded)"))
    })
}

/// The composite's dependency graph, from the definition the trace names, when it can
/// still be read and checked (only a `.tool` file: a trace may have been edited; and
/// only its step ids and dependencies are used, for steps the trace has).
fn graph(trace: &Trace) -> Option<Graph> {
    let file = trace.file.as_deref().filter(|f| f.extension().is_some_and(|e| e == "tool"))?;
    let root = trace.root.as_deref().unwrap_or_else(|| file.parent().unwrap_or(Path::new(".")));
    let checked = Analyzer::new(ToolRoot::assumed(root)).check_file(file).ok()?;
    checked.plan.as_ref().map(Graph::of)
}
