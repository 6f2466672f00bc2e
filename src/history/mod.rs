//! The run history (SPEC §12): every run, its steps, and one row per attempt of a
//! primitive tool call — the audit log of `seeds/003_d8e8e4f64207d379.txt`'s
//! `tool_invocations`, adapted.
//!
//! [`HistoryStore`] is the interface; [`SqliteStore`] the default implementation (an
//! embedded SQLite database, `docs/history.md` has its schema). A [`Recorder`] is the
//! [`Observer`](crate::exec::Observer) that writes a run into a store as it happens
//! ([`SqliteStore`] commits within [`COMMIT_INTERVAL`]), so that a run killed mid-way keeps
//! what it finished. A run can be given context (seed 003's `cycle_id`, `component`, …,
//! [`RunContext`]), recorded with it and on each invocation:
//!
//! ```
//! use std::sync::Arc;
//! use tdsl::{Executor, ToolCall, ToolError, Workflow};
//! use tdsl::{HistoryStore, Recorder, RunContext, RunFilter, SqliteStore};
//! use tdsl::Value;
//!
//! let dir = std::env::temp_dir().join(format!("tdsl-history-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("tools")).unwrap();
//! std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "exec:./echo"}"#).unwrap();
//! std::fs::write(dir.join("main.tool"), r#"{"instructions": [
//!   {"execution_id": "a", "tool_definition_path": "/tools/echo.tool"}]}"#).unwrap();
//! let workflow = Workflow::load(&dir, &dir.join("main.tool")).unwrap();
//!
//! let store: Arc<dyn HistoryStore> = Arc::new(SqliteStore::open(&dir.join("history.db")).unwrap());
//! let mut context = RunContext::new();
//! context.insert("cycle_id", "42").unwrap();
//! let recorder = Arc::new(Recorder::new(store.clone()).with_context(context));
//! let runner = |_: &ToolCall<'_>| -> Result<Value, ToolError> { Ok(Value::object_from([("ok", Value::Bool(true))])) };
//! let executor = Executor::new(runner).with_observer(recorder.clone());
//! executor.run(&workflow, Value::object_from::<&str>([])).unwrap();
//! assert!(recorder.error().is_none());
//!
//! let runs = store.runs(&RunFilter::default()).unwrap();
//! assert_eq!(runs[0].status, "SUCCESS");
//! let run = store.run(&runs[0].id.to_string()).unwrap().unwrap();
//! assert_eq!(run.invocations.len(), 1);
//! assert_eq!(run.invocations[0].result, "success");
//! assert_eq!(run.invocations[0].context.get("cycle_id"), Some("42"));
//! let filter = RunFilter { context: vec![("cycle_id".into(), "42".into())], ..RunFilter::default() };
//! assert_eq!(store.runs(&filter).unwrap().len(), 1);
//! # std::fs::remove_dir_all(&dir).ok();
//! ```

// The statistics, `--since` and recording a trace that ran elsewhere serve the `tdsl`
// command (the `cli` feature); with `history` alone they are compiled, unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code))]

pub(crate) mod payload;
mod sqlite;

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::exec::{Event, Observer, Outcome, StepStatus, Trace};
use crate::value::Value;

pub use sqlite::{schema_version, SqliteStore, MIGRATIONS, SCHEMA_VERSION};

/// Why the history could not be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HistoryError(pub String);

/// The result kind of one invocation: seed 003's five kinds plus `timeout` and
/// `cancelled`. [`ResultKind::of`] maps tdsl's attempt outcomes onto them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResultKind {
    /// The tool answered.
    Success,
    /// The tool answered, but its answer broke its declared `responses` (the step failed
    /// with `E0802`).
    ValidationError,
    /// The tool path resolved to no definition and no mock answered it.
    NotFound,
    /// The tool's circuit breaker refused the call (it was not made).
    Conflict,
    /// The tool failed: a transient or a permanent error.
    InternalError,
    /// The attempt outlived its `timeout_seconds`, or the run's deadline passed.
    Timeout,
    /// The host cancelled the run (Ctrl-C, an MCP cancellation) during the attempt.
    Cancelled,
}

impl ResultKind {
    /// The kind of an attempt that ended with `outcome`; `resolved` says whether the tool
    /// path resolved to a definition.
    pub(crate) fn of(outcome: Outcome, resolved: bool) -> ResultKind {
        match outcome {
            Outcome::Ok => ResultKind::Success,
            Outcome::Refused => ResultKind::Conflict,
            Outcome::Timeout | Outcome::Deadline => ResultKind::Timeout,
            Outcome::Cancelled => ResultKind::Cancelled,
            Outcome::Transient | Outcome::Permanent if !resolved => ResultKind::NotFound,
            Outcome::Transient | Outcome::Permanent => ResultKind::InternalError,
        }
    }

    /// As stored (`internal_error`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ResultKind::Success => "success",
            ResultKind::ValidationError => "validation_error",
            ResultKind::NotFound => "not_found",
            ResultKind::Conflict => "conflict",
            ResultKind::InternalError => "internal_error",
            ResultKind::Timeout => "timeout",
            ResultKind::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for ResultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as it starts.
#[derive(Clone, Debug)]
pub struct NewRun<'a> {
    /// The trace's `run_id`.
    pub run_id: &'a str,
    /// The composite.
    pub tool: &'a str,
    /// Its arguments.
    pub arguments: &'a Value,
    /// RFC 3339.
    pub started_at: &'a str,
    /// The context the run was given (`tdsl run --context KEY=VALUE`).
    pub context: &'a RunContext,
}

/// The context a run is given — seed 003's `ToolInvocation` fields `cycle_id`,
/// `component`, `conversation_turn`, `triggered_by`, or any other — recorded with the run
/// and on each of its invocations (`tdsl run --context KEY=VALUE`,
/// [`Recorder::with_context`]). A key is a letter or `_`, then letters, digits and `_`
/// (at most 64); a value any string of at most 1,024 bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RunContext(std::collections::BTreeMap<String, String>);

impl RunContext {
    /// The longest key.
    pub const MAX_KEY: usize = 64;
    /// The longest value, in bytes.
    pub const MAX_VALUE: usize = 1024;

    /// An empty context.
    pub fn new() -> RunContext {
        RunContext::default()
    }

    /// Checks `key` (see [`RunContext`]).
    pub fn check_key(key: &str) -> Result<(), HistoryError> {
        let mut chars = key.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') || key.len() > Self::MAX_KEY {
            return Err(HistoryError(format!(
                "context key {key:?}: a key is a letter or `_`, then letters, digits or `_` (at most {} \
                 characters), like `cycle_id`",
                Self::MAX_KEY
            )));
        }
        Ok(())
    }

    /// Sets `key` to `value`, checked.
    pub fn insert(&mut self, key: &str, value: &str) -> Result<(), HistoryError> {
        Self::check_key(key)?;
        if value.len() > Self::MAX_VALUE {
            return Err(HistoryError(format!(
                "context value of `{key}`: {} bytes, more than {}",
                value.len(),
                Self::MAX_VALUE
            )));
        }
        self.0.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// `KEY=VALUE`, checked.
    pub fn parse_pair(text: &str) -> Result<(String, String), HistoryError> {
        let Some((key, value)) = text.split_once('=') else {
            return Err(HistoryError(format!("context {text:?} must be KEY=VALUE (`cycle_id=42`)")));
        };
        let mut one = RunContext::new();
        one.insert(key, value)?;
        Ok((key.to_string(), value.to_string()))
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Its pairs, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `k=v, k2=v2`, for people.
    pub fn display(&self) -> String {
        self.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
    }

    /// As stored: a JSON object, or `None` when empty.
    pub(crate) fn to_json(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(&self.0).unwrap_or_default())
    }

    /// From a stored JSON object (anything else is empty).
    pub(crate) fn from_json(text: Option<String>) -> RunContext {
        RunContext(text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default())
    }
}

/// One attempt at a primitive tool call, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Invocation {
    /// The row's id (0 before it is stored).
    pub id: i64,
    /// The history id of its run.
    pub run: i64,
    /// The calling step's path (`fan[2]/inner`).
    pub step_path: String,
    /// The tool path.
    pub tool: String,
    /// The arguments.
    pub parameters: Value,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// A [`ResultKind`], as stored ([`ResultKind::as_str`]).
    pub result: String,
    /// The tool's answer, when it answered.
    pub result_data: Option<Value>,
    /// The error message, when it did not.
    pub error: Option<String>,
    /// RFC 3339.
    pub invoked_at: String,
    /// RFC 3339.
    pub completed_at: String,
    /// Milliseconds.
    pub duration_ms: u64,
    /// The run's context (empty when it was given none).
    pub context: RunContext,
}

/// A run, as listed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    /// The history's id of the run (what `history show` and `report --run` take).
    pub id: i64,
    /// The trace's `run_id`.
    pub run_id: String,
    /// The composite.
    pub tool: String,
    /// `RUNNING`, `SUCCESS`, `PARTIAL`, `FAILED`, `TIMEOUT` or `INTERRUPTED`.
    pub status: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339, once it ended.
    pub completed_at: Option<String>,
    /// Milliseconds, once it ended.
    pub duration_ms: Option<u64>,
    /// The context it was given.
    pub context: RunContext,
}

/// A step of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRow {
    /// Its path (`outer/inner` inside a composite callee).
    pub path: String,
    /// Its callee, once known.
    pub tool: Option<String>,
    /// A trace step status, `RUNNING` while it runs, or `INTERRUPTED`.
    pub status: String,
    /// Why it was skipped, cancelled or failed.
    pub reason: Option<String>,
    /// RFC 3339, from the trace once the run ended.
    pub started_at: Option<String>,
    /// RFC 3339.
    pub completed_at: Option<String>,
    /// Milliseconds.
    pub duration_ms: Option<u64>,
}

/// A run with its steps and invocations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunRow,
    /// Its arguments.
    pub arguments: Value,
    /// Its result, when it produced one.
    pub result: Option<Value>,
    /// Its error, when it failed.
    pub error: Option<Value>,
    /// Its steps, in the order they started.
    pub steps: Vec<StepRow>,
    /// Its invocations, in the order they ended.
    pub invocations: Vec<Invocation>,
    /// The trace (absent for a run that never ended).
    #[serde(skip)]
    pub trace: Option<Trace>,
}

/// Which runs (or invocations) to read.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    /// Only this composite (or, for invocations, tool), a glob (`*` and `?`).
    pub tool: Option<String>,
    /// Only this status (runs) or result kind (invocations).
    pub status: Option<String>,
    /// Only runs started at or after this time, in milliseconds since the Unix epoch.
    pub since_ms: Option<i64>,
    /// At most this many, newest first (runs only).
    pub limit: Option<usize>,
    /// Only runs whose context has each of these keys with this value (runs only; keys as
    /// [`RunContext::check_key`] says).
    pub context: Vec<(String, String)>,
}

/// The store the history lives in.
pub trait HistoryStore: Send + Sync + std::fmt::Debug {
    /// Records a run that starts; its id in the history.
    fn begin_run(&self, run: &NewRun<'_>) -> Result<i64, HistoryError>;
    /// A step started (or, with a status other than `RUNNING`, ended).
    fn step(
        &self,
        run: i64,
        path: &str,
        tool: Option<&str>,
        status: &str,
        reason: Option<&str>,
    ) -> Result<(), HistoryError>;
    /// One attempt at a primitive call ended.
    fn invocation(&self, invocation: &Invocation) -> Result<(), HistoryError>;
    /// The last invocation of step `path` answered, but its answer broke the tool's
    /// declared responses: its result becomes `validation_error`, with `error`.
    fn reject_response(&self, run: i64, path: &str, error: &str) -> Result<(), HistoryError>;
    /// The run ended: its status, result and trace; its steps' timing from the trace.
    fn end_run(&self, run: i64, trace: &Trace) -> Result<(), HistoryError>;
    /// Runs, newest first.
    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunRow>, HistoryError>;
    /// One run, by its history id or its trace `run_id`.
    fn run(&self, id: &str) -> Result<Option<RunDetail>, HistoryError>;
    /// Invocations of runs matching `filter.since_ms`, of tools matching `filter.tool`.
    fn invocations(&self, filter: &RunFilter) -> Result<Vec<Invocation>, HistoryError>;
}

/// Writes the events of one run into a store as they happen. A write that fails does not
/// stop the run: the first error is kept ([`Recorder::error`]) and later events are
/// dropped.
pub struct Recorder {
    store: Arc<dyn HistoryStore>,
    context: RunContext,
    state: Mutex<RecorderState>,
}

#[derive(Default)]
struct RecorderState {
    run: Option<i64>,
    error: Option<HistoryError>,
}

impl Recorder {
    /// A recorder into `store`.
    pub fn new(store: Arc<dyn HistoryStore>) -> Recorder {
        Recorder { store, context: RunContext::new(), state: Mutex::new(RecorderState::default()) }
    }

    /// Records `context` with the run and on each of its invocations.
    pub fn with_context(mut self, context: RunContext) -> Recorder {
        self.context = context;
        self
    }

    /// The history id of the run being (or last) recorded.
    pub fn run(&self) -> Option<i64> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).run
    }

    /// The first write that failed.
    pub fn error(&self) -> Option<HistoryError> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).error.clone()
    }

    /// What the operator is told when the run was not recorded whole (`None` when it was):
    /// whether it is in the history at all, and the first write that failed. `tdsl run`
    /// says it at the end, `serve` on its standard error.
    pub(crate) fn shortfall(&self) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let e = state.error.as_ref()?;
        Some(match state.run {
            Some(_) => format!("the run history is incomplete: {e}"),
            None => format!("the run is not in the history: {e}"),
        })
    }

    fn write(&self, event: &Event<'_>) -> Result<(), HistoryError> {
        // One lock over the write keeps a run's rows in event order.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.error.is_some() {
            // After a failed write (a full disk, say) only the run's end is tried again, so
            // that the run is not left RUNNING when the store can take it.
            if let (Event::RunEnded { trace }, Some(run)) = (event, state.run) {
                let _ = self.store.end_run(run, trace);
            }
            return Ok(());
        }
        let outcome = match (event, state.run) {
            (Event::RunStarted { run_id, tool, arguments, started_at }, _) => {
                let run = NewRun { run_id, tool, arguments, started_at, context: &self.context };
                self.store.begin_run(&run).map(|id| state.run = Some(id))
            }
            (_, None) => Ok(()),
            (Event::StepStarted { step, tool }, Some(run)) => {
                self.store.step(run, step, Some(tool), StepStatus::Running.as_str(), None)
            }
            (Event::StepEnded { step, status, reason }, Some(run)) => {
                self.store.step(run, step, None, status.as_str(), *reason)
            }
            (Event::AttemptEnded { step, tool, arguments, attempt, resolved, invoked_at, completed_at }, Some(run)) => {
                self.store.invocation(&Invocation {
                    id: 0,
                    run,
                    step_path: step.to_string(),
                    tool: tool.to_string(),
                    parameters: (*arguments).clone(),
                    attempt: attempt.attempt,
                    result: ResultKind::of(attempt.outcome, *resolved).as_str().to_string(),
                    result_data: attempt.response.clone(),
                    error: attempt.error.clone(),
                    invoked_at: invoked_at.to_string(),
                    completed_at: completed_at.to_string(),
                    duration_ms: attempt.duration_ms,
                    context: self.context.clone(),
                })
            }
            (Event::ResponseRejected { step, error }, Some(run)) => self.store.reject_response(run, step, error),
            (Event::RunEnded { trace }, Some(run)) => self.store.end_run(run, trace),
            _ => Ok(()),
        };
        if let Err(e) = &outcome {
            state.error = Some(e.clone());
        }
        outcome
    }
}

impl Observer for Recorder {
    fn event(&self, event: &Event<'_>) {
        let _ = self.write(event);
    }
}

/// Records a run that ended elsewhere (on Temporal, `tdsl run --engine temporal`) from its
/// trace alone: the run, one invocation per attempt of every call (fan-out children and
/// composite callees' steps included, at the step paths a local run records), and its end.
/// An attempt that answered, in a step the run's error says broke its declared responses
/// (`E0802`), is recorded as `validation_error`, as a local run records it. Returns the
/// run's history id.
#[cfg(feature = "temporal")]
pub fn record_trace(store: &dyn HistoryStore, trace: &Trace) -> Result<i64, HistoryError> {
    let run = store.begin_run(&NewRun {
        run_id: &trace.run_id,
        tool: &trace.tool,
        arguments: &trace.arguments,
        started_at: &trace.started_at,
        context: &RunContext::new(),
    })?;
    end_run_from_trace(store, run, trace)?;
    Ok(run)
}

/// Ends run `run`, begun earlier (a composition records itself as it starts), from its
/// trace as [`record_trace`] does: an invocation per attempt of every call, then its end.
pub(crate) fn end_run_from_trace(store: &dyn HistoryStore, run: i64, trace: &Trace) -> Result<(), HistoryError> {
    let started_wall = chrono::DateTime::parse_from_rfc3339(&trace.started_at).map_or(0, |t| t.timestamp_millis());
    let rejected = trace
        .error
        .as_ref()
        .filter(|e| e.code == crate::diagnostic::Code::ResponseInvalid.as_str())
        .and_then(|e| e.step.clone());
    let wall =
        |rel: u64| crate::exec::trace::rfc3339(started_wall.saturating_add(i64::try_from(rel).unwrap_or(i64::MAX)));
    let mut calls = Vec::new();
    trace_calls(&trace.steps, "", &mut calls);
    for (path, tool, arguments, attempts) in calls {
        for a in attempts {
            let mut result = ResultKind::of(a.outcome, true);
            if a.outcome == Outcome::Ok && a.attempt == attempts.len() as u32 && rejected.as_deref() == Some(&path) {
                result = ResultKind::ValidationError;
            }
            store.invocation(&Invocation {
                id: 0,
                run,
                step_path: path.clone(),
                tool: tool.to_string(),
                parameters: arguments.cloned().unwrap_or(Value::Null),
                attempt: a.attempt,
                result: result.as_str().to_string(),
                result_data: a.response.clone(),
                error: a.error.clone(),
                invoked_at: wall(a.started_ms),
                completed_at: wall(a.started_ms.saturating_add(a.duration_ms)),
                duration_ms: a.duration_ms,
                context: RunContext::new(),
            })?;
        }
    }
    store.end_run(run, trace)
}

/// Every call of a trace: its step path, tool, arguments and attempts.
type TraceCall<'t> = (String, &'t str, Option<&'t Value>, &'t [crate::exec::Attempt]);

fn trace_calls<'t>(steps: &'t [crate::exec::StepTrace], prefix: &str, out: &mut Vec<TraceCall<'t>>) {
    for s in steps {
        let path = format!("{prefix}{}", s.execution_id);
        if !s.attempts.is_empty() {
            out.push((path.clone(), &s.tool, s.arguments.as_ref(), &s.attempts));
        }
        if let Some(nested) = &s.steps {
            trace_calls(nested, &format!("{path}/"), out);
        }
        for c in s.children.iter().flatten() {
            let child = format!("{path}[{}]", c.index);
            if !c.attempts.is_empty() {
                out.push((child.clone(), &s.tool, c.arguments.as_ref(), &c.attempts));
            }
            if let Some(nested) = &c.steps {
                trace_calls(nested, &format!("{child}/"), out);
            }
        }
    }
}

/// What `history stats` shows for one tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ToolStats {
    /// The tool path.
    pub tool: String,
    /// Invocations (attempts).
    pub calls: usize,
    /// Invocations whose result was not `success`.
    pub failures: usize,
    /// `failures / calls`.
    pub failure_rate: f64,
    /// The median duration in milliseconds (nearest rank).
    pub p50_ms: u64,
    /// The 95th percentile duration in milliseconds (nearest rank).
    pub p95_ms: u64,
}

/// Per tool, sorted by tool path: calls, failures and duration percentiles.
pub(crate) fn stats(invocations: &[Invocation]) -> Vec<ToolStats> {
    let mut by_tool: std::collections::BTreeMap<&str, (usize, Vec<u64>)> = std::collections::BTreeMap::new();
    for i in invocations {
        let e = by_tool.entry(&i.tool).or_default();
        if i.result != ResultKind::Success.as_str() {
            e.0 += 1;
        }
        e.1.push(i.duration_ms);
    }
    by_tool
        .into_iter()
        .map(|(tool, (failures, mut durations))| {
            durations.sort_unstable();
            let calls = durations.len();
            ToolStats {
                tool: tool.to_string(),
                calls,
                failures,
                failure_rate: failures as f64 / calls as f64,
                p50_ms: percentile(&durations, 50),
                p95_ms: percentile(&durations, 95),
            }
        })
        .collect()
}

/// The `p`th percentile of sorted values by the nearest-rank method: the smallest value
/// with at least `p`% of the values at or below it (0 for none).
pub(crate) fn percentile(sorted: &[u64], p: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted[usize::try_from(rank).unwrap_or(usize::MAX).min(sorted.len()) - 1]
}

/// `--since`: an RFC 3339 time, or a duration back from `now_ms` (`24h`, `7d`, `90m`),
/// as milliseconds since the Unix epoch.
pub(crate) fn parse_since(text: &str, now_ms: i64) -> Result<i64, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    match humantime::parse_duration(text) {
        Ok(d) => Ok(now_ms.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))),
        Err(e) => {
            Err(format!("{text:?} is neither an RFC 3339 time (2026-01-31T12:00:00Z) nor a duration (24h, 7d): {e}"))
        }
    }
}

/// The default database: `$XDG_DATA_HOME/tdsl/history.db`, or
/// `~/.local/share/tdsl/history.db` when `XDG_DATA_HOME` is unset or empty (`None` when
/// neither is known).
pub(crate) fn default_path() -> Option<std::path::PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/share"),
    };
    Some(base.join("tdsl").join("history.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!((percentile(&v, 50), percentile(&v, 95), percentile(&v, 100)), (10, 19, 20));
        assert_eq!(percentile(&[7], 95), 7);
        assert_eq!(percentile(&[], 50), 0);
    }

    #[test]
    fn since_takes_a_time_or_a_duration() {
        let now = 1_000_000_000_000;
        assert_eq!(parse_since("24h", now), Ok(now - 86_400_000));
        assert_eq!(parse_since("7d", now), Ok(now - 7 * 86_400_000));
        assert_eq!(parse_since("2001-09-09T01:46:40Z", now), Ok(now));
        assert!(parse_since("yesterday", now).unwrap_err().contains("neither an RFC 3339 time"));
    }

    #[test]
    fn outcomes_map_onto_result_kinds() {
        assert_eq!(ResultKind::of(Outcome::Ok, true), ResultKind::Success);
        assert_eq!(ResultKind::of(Outcome::Permanent, false), ResultKind::NotFound);
        assert_eq!(ResultKind::of(Outcome::Transient, true), ResultKind::InternalError);
        assert_eq!(ResultKind::of(Outcome::Deadline, true), ResultKind::Timeout);
        assert_eq!(ResultKind::of(Outcome::Refused, true), ResultKind::Conflict);
        assert_eq!(ResultKind::of(Outcome::Cancelled, true), ResultKind::Cancelled);
    }
}
