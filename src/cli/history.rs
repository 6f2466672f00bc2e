//! `tdsl history list|show|stats [--history FILE] [--format human|json]`: the run
//! history (`docs/history.md`). Exit status: 0, or 2 when the database cannot be read or
//! a run is not in it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use super::printable::printable;
use super::progress::history_file;
use super::{usage_failure, UsageError};
use crate::history::payload::Cut;
use crate::history::{self, HistoryStore, RunContext, RunFilter, SqliteStore};
use crate::value::Value;

/// Arguments of `tdsl history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
enum HistoryCommand {
    /// Recent runs, newest first: id, status, tool, duration, start.
    List(ListArgs),
    /// One run: its steps and every tool invocation.
    Show(ShowArgs),
    /// Per tool: calls, failures, failure rate, p50 and p95 duration.
    Stats(StatsArgs),
}

#[derive(Debug, Args)]
struct Common {
    /// The history database (default: $XDG_DATA_HOME/tdsl/history.db, or
    /// ~/.local/share/tdsl/history.db).
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
    /// Human tables or JSON.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned tables.
    Human,
    /// JSON.
    Json,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    common: Common,
    /// Only runs of composites whose name matches this glob (`*report*`).
    #[arg(long, value_name = "GLOB")]
    tool: Option<String>,
    /// Only runs that ended (or are) so.
    #[arg(long, value_enum)]
    status: Option<Status>,
    /// Only runs started since this RFC 3339 time, or this long ago (`24h`, `7d`).
    #[arg(long, value_name = "TIME|DURATION")]
    since: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Only runs given this context (`tdsl run --context`); repeatable, all must match.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
#[value(rename_all = "SCREAMING_SNAKE_CASE")]
enum Status {
    Running,
    Success,
    Partial,
    Failed,
    Timeout,
    Interrupted,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Running => "RUNNING",
            Status::Success => "SUCCESS",
            Status::Partial => "PARTIAL",
            Status::Failed => "FAILED",
            Status::Timeout => "TIMEOUT",
            Status::Interrupted => "INTERRUPTED",
        }
    }
}

#[derive(Debug, Args)]
struct ShowArgs {
    #[command(flatten)]
    common: Common,
    /// The run: its id in the history (`history list`'s first column) or its trace run id.
    #[arg(value_name = "RUN")]
    run: String,
}

#[derive(Debug, Args)]
struct StatsArgs {
    #[command(flatten)]
    common: Common,
    /// Only tools whose tool path matches this glob (`/tools/*`).
    #[arg(long, value_name = "GLOB")]
    tool: Option<String>,
    /// Only invocations of runs started since this RFC 3339 time, or this long ago.
    #[arg(long, value_name = "TIME|DURATION")]
    since: Option<String>,
}

/// Runs `tdsl history`.
pub(crate) fn run(args: HistoryArgs) -> ExitCode {
    let outcome = match args.command {
        HistoryCommand::List(a) => list(&a),
        HistoryCommand::Show(a) => show(&a),
        HistoryCommand::Stats(a) => stats(&a),
    };
    match outcome {
        Ok(text) => super::print_stdout(&text).map_or_else(|code| code, |()| ExitCode::SUCCESS),
        Err(e) => usage_failure(&e),
    }
}

/// The history, opened only to read: a database in a read-only folder or mount is read as
/// any other.
fn open(common: &Common) -> Result<SqliteStore, UsageError> {
    let path = history_file(common.history.as_ref())?;
    SqliteStore::open_read_only(&path).map_err(|e| UsageError(e.to_string()))
}

fn since(text: Option<&str>) -> Result<Option<i64>, UsageError> {
    let now = chrono::Utc::now().timestamp_millis();
    text.map(|t| history::parse_since(t, now).map_err(|e| UsageError(format!("--since: {e}")))).transpose()
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// Milliseconds for people: `850 ms`, `12.3 s`, `4 min 05 s`.
fn duration(ms: Option<u64>) -> String {
    match ms {
        None => "-".to_string(),
        Some(ms) if ms < 1000 => format!("{ms} ms"),
        Some(ms) if ms < 60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// Left-aligned columns, two spaces apart.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> =
        rows.iter().map(|r| r.iter().map(|cell| printable(cell).into_owned()).collect()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

fn list(a: &ListArgs) -> Result<String, UsageError> {
    let filter = RunFilter {
        tool: a.tool.clone(),
        status: a.status.map(|s| s.as_str().to_string()),
        since_ms: since(a.since.as_deref())?,
        limit: Some(a.limit),
        context: a
            .context
            .iter()
            .map(|c| RunContext::parse_pair(c).map_err(|e| UsageError(format!("--context: {e}"))))
            .collect::<Result<_, _>>()?,
    };
    let runs = open(&a.common)?.runs(&filter).map_err(|e| UsageError(e.to_string()))?;
    if a.common.format == Format::Json {
        return Ok(to_json(&runs));
    }
    if runs.is_empty() {
        return Ok("no runs recorded\n".to_string());
    }
    // A CONTEXT column only when a listed run was given one.
    let with_context = runs.iter().any(|r| !r.context.is_empty());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row =
                vec![r.id.to_string(), r.status.clone(), r.tool.clone(), duration(r.duration_ms), r.started_at.clone()];
            if with_context {
                row.push(r.context.display());
            }
            row
        })
        .collect();
    let mut headers = vec!["ID", "STATUS", "TOOL", "DURATION", "STARTED"];
    if with_context {
        headers.push("CONTEXT");
    }
    Ok(table(&headers, &rows))
}

fn show(a: &ShowArgs) -> Result<String, UsageError> {
    let store = open(&a.common)?;
    let Some(run) = store.run(&a.run).map_err(|e| UsageError(e.to_string()))? else {
        return Err(UsageError(format!("no run `{}` in the history (`tdsl history list` shows the ids)", a.run)));
    };
    if a.common.format == Format::Json {
        return Ok(to_json(&run));
    }
    let r = &run.run;
    let mut out = format!(
        "run {} ({}): {} {}\nstarted {}, {}\narguments: {}\n",
        r.id,
        r.run_id,
        r.tool,
        r.status,
        r.started_at,
        match &r.completed_at {
            Some(at) => format!("ended {at} after {}", duration(r.duration_ms)),
            None => "never ended".to_string(),
        },
        payload_text(&run.arguments)
    );
    if !r.context.is_empty() {
        out.push_str(&format!("context: {}\n", r.context.display()));
    }
    if let Some(result) = &run.result {
        out.push_str(&format!("result: {}\n", payload_text(result)));
    }
    if let Some(error) = &run.error {
        out.push_str(&format!("error: {error}\n"));
    }
    // What came from the run (its tool's name, its context) is shown escaped.
    let mut out = printable(&out).into_owned();
    out.push_str("\nsteps:\n");
    let rows: Vec<Vec<String>> = run
        .steps
        .iter()
        .map(|s| {
            vec![
                s.path.clone(),
                s.status.clone(),
                s.tool.clone().unwrap_or_default(),
                duration(s.duration_ms),
                s.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(&["STEP", "STATUS", "TOOL", "DURATION", "REASON"], &rows));
    out.push_str("\ninvocations:\n");
    let rows: Vec<Vec<String>> = run
        .invocations
        .iter()
        .map(|i| {
            vec![
                i.step_path.clone(),
                i.tool.clone(),
                i.attempt.to_string(),
                i.result.clone(),
                duration(Some(i.duration_ms)),
                i.invoked_at.clone(),
                i.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push_str(&table(&["STEP", "TOOL", "ATTEMPT", "RESULT", "DURATION", "INVOKED", "ERROR"], &rows));
    // Payloads past `--history-payload-bytes` were kept cut: say which, with size and hash.
    let mut cuts = String::new();
    for i in &run.invocations {
        let payloads = [("arguments", Some(&i.parameters)), ("answer", i.result_data.as_ref())];
        for (what, cut) in payloads.into_iter().filter_map(|(w, v)| Some((w, Cut::of(v?)?))) {
            cuts.push_str(&format!("{} attempt {} {what}: {}\n", i.step_path, i.attempt, cut.describe()));
        }
    }
    if !cuts.is_empty() {
        out.push_str("\ncut payloads (kept as their first bytes, size and hash):\n");
        out.push_str(&printable(&cuts));
    }
    Ok(out)
}

/// A stored payload for people: its JSON, or for a cut one what was kept of it.
fn payload_text(v: &Value) -> String {
    match Cut::of(v) {
        Some(cut) => {
            let start: String = cut.prefix.chars().take(80).collect();
            format!("{} {start}…", cut.describe())
        }
        None => v.to_string(),
    }
}

fn stats(a: &StatsArgs) -> Result<String, UsageError> {
    let filter = RunFilter { tool: a.tool.clone(), since_ms: since(a.since.as_deref())?, ..RunFilter::default() };
    let invocations = open(&a.common)?.invocations(&filter).map_err(|e| UsageError(e.to_string()))?;
    let stats = history::stats(&invocations);
    if a.common.format == Format::Json {
        return Ok(to_json(&stats));
    }
    if stats.is_empty() {
        return Ok("no tool invocations recorded\n".to_string());
    }
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|s| {
            vec![
                s.tool.clone(),
                s.calls.to_string(),
                s.failures.to_string(),
                format!("{:.1}%", s.failure_rate * 100.0),
                duration(Some(s.p50_ms)),
                duration(Some(s.p95_ms)),
            ]
        })
        .collect();
    Ok(table(&["TOOL", "CALLS", "FAILURES", "FAILURE RATE", "P50", "P95"], &rows))
}
