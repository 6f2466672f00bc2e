//! Live progress of `tdsl run` on a terminal (`indicatif`), the `--history` flags, and
//! the observer that feeds both.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::printable::printable;
use super::UsageError;
use crate::exec::{Event, Observer, Outcome, StepStatus};
use crate::history::{self, HistoryStore, SqliteStore};

/// `--history FILE` / `--no-history`, for `run` and `serve --mcp`.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct HistoryArgs {
    /// Records the run in this SQLite database (default: $XDG_DATA_HOME/tdsl/history.db,
    /// or ~/.local/share/tdsl/history.db).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Records nothing in the run history.
    #[arg(long, conflicts_with = "history")]
    pub no_history: bool,
    /// The most bytes of JSON of one payload (arguments, an answer, a result) the history
    /// keeps whole; a larger one is kept as its first 1 KiB, its size and its hash
    /// (1,024–1,073,741,824; default 65,536).
    #[arg(long = "history-payload-bytes", value_name = "BYTES", conflicts_with = "no_history")]
    pub history_payload_bytes: Option<u64>,
    /// The most bytes of payload text the history keeps of one run: payloads whole, then
    /// the prefixes of cut ones, in the order they are stored; past it, a payload is kept
    /// as its size and hash alone (65,536–17,179,869,184; default 67,108,864).
    #[arg(long = "history-run-bytes", value_name = "BYTES", conflicts_with = "no_history")]
    pub history_run_bytes: Option<u64>,
    /// The most bytes the history database holds: when a run ends past it, the oldest
    /// ended runs are deleted (1,048,576–1,099,511,627,776; default 1,073,741,824).
    #[arg(long = "history-max-bytes", value_name = "BYTES", conflicts_with = "no_history")]
    pub history_max_bytes: Option<u64>,
}

impl HistoryArgs {
    /// The store to record into: `None` with `--no-history`, or (after a warning on
    /// standard error) when the default database cannot be opened; a usage error when
    /// the file `--history` names cannot.
    pub(crate) fn open(&self) -> Result<Option<Arc<dyn HistoryStore>>, UsageError> {
        if self.no_history {
            return Ok(None);
        }
        // A flag's value within its range, or its default.
        let within = |given: Option<u64>, range: crate::ranges::Range, default: u64, flag: &str| match given {
            Some(n) => range.check(n as f64).map(|n| n as u64).map_err(|e| UsageError(format!("{flag}: {e}"))),
            None => Ok(default),
        };
        let max_payload = within(
            self.history_payload_bytes,
            crate::ranges::HISTORY_PAYLOAD_BYTES,
            crate::ranges::DEFAULT_HISTORY_PAYLOAD_BYTES as u64,
            "--history-payload-bytes",
        )?;
        let max_payload = usize::try_from(max_payload).unwrap_or(usize::MAX);
        let max_run = within(
            self.history_run_bytes,
            crate::ranges::HISTORY_RUN_BYTES,
            crate::ranges::DEFAULT_HISTORY_RUN_BYTES,
            "--history-run-bytes",
        )?;
        let max_bytes = within(
            self.history_max_bytes,
            crate::ranges::HISTORY_MAX_BYTES,
            crate::ranges::DEFAULT_HISTORY_MAX_BYTES,
            "--history-max-bytes",
        )?;
        let bounded = |s: SqliteStore| {
            Arc::new(s.with_max_payload_bytes(max_payload).with_max_run_bytes(max_run).with_max_bytes(max_bytes))
                as Arc<dyn HistoryStore>
        };
        if let Some(path) = &self.history {
            return SqliteStore::open(path)
                .map(|s| Some(bounded(s)))
                .map_err(|e| UsageError(format!("--history: {e}")));
        }
        let Some(path) = history::default_path() else {
            eprintln!("warning: no run history: neither XDG_DATA_HOME nor HOME is set (--no-history silences this)");
            return Ok(None);
        };
        match SqliteStore::open(&path) {
            Ok(s) => Ok(Some(bounded(s))),
            Err(e) => {
                eprintln!(
                    "warning: no run history: {e} (--history FILE to choose another, --no-history to silence this)"
                );
                Ok(None)
            }
        }
    }
}

/// The history database a `tdsl history` or `tdsl report` command reads: `--history
/// FILE` or the default.
pub(crate) fn history_file(given: Option<&PathBuf>) -> Result<PathBuf, UsageError> {
    match given {
        Some(p) => Ok(p.clone()),
        None => history::default_path()
            .ok_or_else(|| UsageError("no history database: neither XDG_DATA_HOME nor HOME is set".to_string())),
    }
}

/// Several observers as one.
pub(crate) struct Observers(pub Vec<Arc<dyn Observer>>);

impl Observer for Observers {
    fn event(&self, event: &Event<'_>) {
        for o in &self.0 {
            o.event(event);
        }
    }
}

#[derive(Default)]
struct Counts {
    steps_done: u64,
    children: usize,
    children_done: usize,
    in_flight: usize,
    retries: usize,
}

/// A progress bar on standard error: steps done of the composite's, fan-out children
/// ended, tool calls in flight, retries, elapsed time; and a line per step as it starts
/// and ends.
pub(crate) struct Progress {
    bar: ProgressBar,
    counts: Mutex<Counts>,
}

impl Progress {
    /// A bar over `steps` top-level steps, drawn on standard error.
    pub(crate) fn new(steps: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} {elapsed_precise} steps {pos}/{len}{msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(100));
        let progress = Progress { bar, counts: Mutex::new(Counts::default()) };
        progress.redraw(&Counts::default());
        progress
    }

    fn redraw(&self, c: &Counts) {
        let mut msg = String::new();
        if c.children > 0 {
            msg.push_str(&format!(", children {}/{}", c.children_done, c.children));
        }
        msg.push_str(&format!(", in flight {}, retries {}", c.in_flight, c.retries));
        self.bar.set_position(c.steps_done);
        self.bar.set_message(msg);
    }
}

#[cfg(feature = "temporal")]
impl Progress {
    /// A run on Temporal's progress, as its `progress` query answered: the new step lines,
    /// then the counts.
    pub(crate) fn show(&self, report: &crate::temporal::ProgressReport) {
        for line in &report.lines {
            self.bar.println(line);
        }
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        c.steps_done = report.steps_done;
        c.children = report.children;
        c.children_done = report.children_done;
        c.in_flight = report.in_flight;
        c.retries = report.retries;
        self.redraw(&c);
    }

    /// The bar drawn one last time, and left.
    pub(crate) fn finish(&self) {
        self.bar.finish();
    }
}

impl Observer for Progress {
    fn event(&self, event: &Event<'_>) {
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::StepStarted { step, tool: "" } => self.bar.println(format!("▶ {step} (transform step)")),
            Event::StepStarted { step, tool } => self.bar.println(format!("▶ {step} ({tool})")),
            Event::StepEnded { step, status, reason } => {
                if !step.contains('/') {
                    c.steps_done += 1;
                }
                self.bar.println(match (status, reason) {
                    (StepStatus::Completed, _) => format!("✔ {step}"),
                    (s, Some(r)) => format!("• {step} {} ({})", s.as_str(), printable(r)),
                    (s, None) => format!("• {step} {}", s.as_str()),
                });
            }
            Event::StepRetried { step, attempt, reason } => {
                self.bar.println(format!("↻ {step} attempt {attempt} failed ({})", printable(reason)));
            }
            Event::FanOut { children, .. } => c.children += children,
            Event::ChildEnded { .. } => c.children_done += 1,
            Event::AttemptStarted { attempt, .. } => {
                c.in_flight += 1;
                if *attempt > 1 {
                    c.retries += 1;
                }
            }
            Event::AttemptEnded { attempt, .. } if attempt.outcome != Outcome::Refused => {
                c.in_flight = c.in_flight.saturating_sub(1);
            }
            Event::RunEnded { .. } => {
                self.redraw(&c);
                self.bar.finish();
                return;
            }
            _ => {}
        }
        self.redraw(&c);
    }
}
