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
pub struct ReportArgs {
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
pub fn run(args: ReportArgs) -> ExitCode {
    let trace = match load(&args) {
        Ok(t) => t,
        Err(e) => return usage_failure(&e),
    };
    let graph = graph(&trace);
    if let Err(e) = std::fs::write(&args.output, html(&trace, graph.as_ref())) {
        return usage_failure(&UsageError(format!("cannot write {}: {e}", args.output.display())));
    }
    ExitCode::SUCCESS
}

fn load(args: &ReportArgs) -> Result<Trace, UsageError> {
    if let Some(path) = &args.trace {
        let text =
            crate::input::read_text(path).map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
        return Trace::from_json(&text).map_err(|e| UsageError(format!("{}: {e}", path.display())));
    }
    let id = args.run.as_deref().unwrap_or_default();
    let path = history_file(args.history.as_ref())?;
    // Only reading: a history in a read-only folder or mount is read as any other.
    let store = SqliteStore::open_read_only(&path).map_err(|e| UsageError(e.to_string()))?;
    let run = store
        .run(id)
        .map_err(|e| UsageError(e.to_string()))?
        .ok_or_else(|| UsageError(format!("no run `{id}` in the history {}", path.display())))?;
    run.trace.ok_or_else(|| {
        UsageError(format!(
            "run `{id}` has no trace: it is {} (`tdsl history show {id}` lists what it recorded)",
            run.run.status
        ))
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
