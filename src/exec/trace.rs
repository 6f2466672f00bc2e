//! The execution trace (SPEC §6.7): what a run did, step by step, as stable JSON.
//!
//! A trace is plain data: the engine builds one per run and never reads it back, except
//! through [`crate::exec::replay`], which re-runs a composite from a trace's recorded tool
//! responses and clock reads. Field names and enum spellings are part of the format
//! (`docs/execution.md`); new fields may be added, existing ones keep their meaning.
//!
//! Format 2 carries the names of `seeds/000_7c8da07936e01cd9.txt`'s `ExecutionTrace` and
//! `StepResult` (`trace_id`, `step_results`, `overall_status`, `success`, `output`,
//! `retry_count`, `circuit_state`, the aggregates `tools_executed` … `success_rate`) beside
//! tdsl's own fields. Format 1 traces still read: their fields of the same meaning are
//! read under their old names, and the aggregates are computed again.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::breaker::BreakerState;
use crate::value::Value;

/// The trace format written by this version.
pub const TRACE_FORMAT: &str = "tdsl-trace/2";

/// The trace formats [`Trace::from_json`] reads (and so `tdsl replay` replays).
pub const TRACE_FORMATS_READ: &[&str] = &["tdsl-trace/1", TRACE_FORMAT];

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    /// Every step completed or was skipped.
    Success,
    /// Some steps failed under `continue_on_error`; the rest went on.
    Partial,
    /// A step failed (or the result did not match the declared responses).
    Failed,
    /// A step timed out, or the run's deadline passed.
    Timeout,
}

impl RunStatus {
    /// The status as written in traces (`SUCCESS`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "SUCCESS",
            RunStatus::Partial => "PARTIAL",
            RunStatus::Failed => "FAILED",
            RunStatus::Timeout => "TIMEOUT",
        }
    }

    /// SUCCESS or PARTIAL: the run produced a result.
    pub fn is_ok(self) -> bool {
        matches!(self, RunStatus::Success | RunStatus::Partial)
    }
}

/// How a step (or a fan-out child) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepStatus {
    /// Not started (never appears in a finished trace).
    Pending,
    /// Started, not ended (never appears in a finished trace).
    Running,
    /// Called and produced a result.
    Completed,
    /// Failed: a tool error, an invalid argument or response, an expression error.
    Failed,
    /// An attempt outlived `timeout_seconds`, or the run's deadline passed.
    Timeout,
    /// Not called: its conditions did not hold, or its `done_check` did.
    Skipped,
    /// Not started because an earlier step failed or the deadline passed.
    Cancelled,
}

impl StepStatus {
    /// The status as written in traces (`COMPLETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "PENDING",
            StepStatus::Running => "RUNNING",
            StepStatus::Completed => "COMPLETED",
            StepStatus::Failed => "FAILED",
            StepStatus::Timeout => "TIMEOUT",
            StepStatus::Skipped => "SKIPPED",
            StepStatus::Cancelled => "CANCELLED",
        }
    }
}

/// How one attempt at a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool answered (`response` holds the answer).
    Ok,
    /// A transient error (`error` holds the message).
    Transient,
    /// A permanent error.
    Permanent,
    /// Cut off by the step's `timeout_seconds` (retried like a transient error).
    Timeout,
    /// Cut off by the run's deadline (never retried).
    Deadline,
    /// Refused by the tool's open circuit breaker, without calling it.
    Refused,
    /// Cut off because the host cancelled the run (never retried).
    Cancelled,
}

/// One attempt at calling a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first attempt, 2 for the first retry, …
    pub attempt: u32,
    /// How it ended.
    pub outcome: Outcome,
    /// The tool's answer (for `ok`): what replay returns instead of calling the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The error message (for every other outcome).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The backoff waited before this attempt, in milliseconds (0 for the first).
    pub delay_ms: u64,
    /// When it started, in milliseconds since the run started.
    pub started_ms: u64,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// What one step did: seed 000's `StepResult` fields first, then tdsl's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTrace {
    /// `execution_id` (written `step_id`, the seed's name).
    #[serde(rename = "step_id", alias = "execution_id")]
    pub execution_id: String,
    /// The callee's name: the file stem of `tool` (`summarizer` for
    /// `/tools/summarizer.tool`).
    #[serde(default)]
    pub tool_name: String,
    /// How it ended.
    pub status: StepStatus,
    /// Whether it completed (`COMPLETED`); false for every other status.
    #[serde(default)]
    pub success: bool,
    /// The step's result as REFs see it (after `transform_responses`; for a step that
    /// failed under `continue_on_error`, its `{"status": "failed", …}` object). Written
    /// `output`, the seed's name.
    #[serde(
        default,
        rename = "output",
        alias = "result",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub result: Option<Value>,
    /// What went wrong, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `ended_ms - started_ms`.
    pub duration_ms: u64,
    /// Retries made: calls after the first (over every child of a parallel step; a call the
    /// breaker refused is not one).
    #[serde(default)]
    pub retry_count: u32,
    /// The state of the callee's circuit breaker when the step ended (absent when the step
    /// called nothing: skipped, cancelled, or a composite callee).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_state: Option<BreakerState>,
    /// Wall-clock start, RFC 3339 UTC with milliseconds (absent when it never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Wall-clock end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// `tool_definition_path`.
    pub tool: String,
    /// Why it was skipped or cancelled (`conditions`, `done`, …), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments the callee got, after `transform_arguments` (for a parallel step,
    /// before each child's element is added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The calls made, in order (empty for a skipped, cancelled or parallel step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Start, in milliseconds since the run started (absent when it never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// End, in milliseconds since the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// Every wall-clock read its expressions made (`datetime_now`), in milliseconds since
    /// the Unix epoch, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_reads: Vec<i64>,
    /// A parallel step's children, in input order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<ChildTrace>>,
    /// When the callee is composite: its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepTrace>>,
    /// When the callee is composite: the wall-clock reads of its own tool-level transforms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callee_clock_reads: Vec<i64>,
}

/// One child of a parallel step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildTrace {
    /// Its position in `iterate_over`.
    pub index: usize,
    /// How it ended (`COMPLETED`, `FAILED`, `TIMEOUT` or `CANCELLED`).
    pub status: StepStatus,
    /// The arguments it got: the step's, with its element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Its result: the callee's response as returned (the element of the step's
    /// `response` list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The calls made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Start, in milliseconds since the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// End, in milliseconds since the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// `ended_ms - started_ms`.
    pub duration_ms: u64,
    /// When the callee is composite: its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepTrace>>,
    /// When the callee is composite: the wall-clock reads of its own tool-level transforms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callee_clock_reads: Vec<i64>,
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// The stable code (`E0803`, or an expression error's code).
    pub code: String,
    /// The failing step as a path: `extract`, `extract[3]` for a fan-out child, `outer/inner`
    /// inside a composite callee; absent when the run failed outside any step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.step {
            Some(s) => write!(f, "step `{s}` failed: {} [{}]", self.message, self.code),
            None => write!(f, "{} [{}]", self.message, self.code),
        }
    }
}

/// Everything one run did: seed 000's `ExecutionTrace` fields, then tdsl's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// [`TRACE_FORMAT`].
    pub format: String,
    /// A unique id, `trace_` and 12 hex digits (reproducible from the executor's random
    /// seed).
    #[serde(default)]
    pub trace_id: String,
    /// What was run: the composite's tool path (tdsl's plan is the checked composite).
    #[serde(default)]
    pub plan_id: String,
    /// How it ended (written `overall_status`, the seed's name; tdsl adds `TIMEOUT`).
    #[serde(rename = "overall_status", alias = "status")]
    pub status: RunStatus,
    /// Why it failed, in one line (absent when it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_summary: Option<String>,
    /// Entries of `step_results` whose status is not `SKIPPED`.
    #[serde(default)]
    pub tools_executed: usize,
    /// Entries with `success`.
    #[serde(default)]
    pub tools_succeeded: usize,
    /// Executed entries without `success`.
    #[serde(default)]
    pub tools_failed: usize,
    /// `tools_succeeded / tools_executed`, 0 when nothing was executed.
    #[serde(default)]
    pub success_rate: f64,
    /// Total duration in milliseconds.
    #[serde(rename = "total_duration_ms", alias = "duration_ms")]
    pub duration_ms: u64,
    /// Retries made, over every step and child (composite callees' steps included).
    pub total_retries: u32,
    /// Times a circuit breaker opened during the run.
    pub circuit_breaker_trips: u32,
    /// Wall-clock start, RFC 3339 UTC with milliseconds.
    pub started_at: String,
    /// Wall-clock end (written `completed_at`, the seed's name).
    #[serde(rename = "completed_at", alias = "ended_at")]
    pub ended_at: String,
    /// tdsl's run id (reproducible from the executor's random seed).
    pub run_id: String,
    /// The tool run: its tool path under the root, or its file path.
    pub tool: String,
    /// The tool's file: a record for people. `tdsl replay` does not read it (nor `root`):
    /// it reads `tool` under the root it is given, since a trace may have been edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The tool root callees resolved against (a record, like `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// The arguments the run was given.
    pub arguments: Value,
    /// The composite's result (absent when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// The most tool calls that were in flight at once.
    pub max_in_flight: usize,
    /// Wall-clock reads of the tool-level transforms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_reads: Vec<i64>,
    /// Every step, in execution order (by level, then by `execution_id`); written
    /// `step_results`, the seed's name.
    #[serde(rename = "step_results", alias = "steps")]
    pub steps: Vec<StepTrace>,
}

impl Trace {
    /// The trace as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads a trace written by [`Trace::to_json`], of any format in
    /// [`TRACE_FORMATS_READ`] (a format-1 trace gets its aggregates computed).
    pub fn from_json(text: &str) -> Result<Trace, String> {
        // The messages say where, never what: a file that is not a trace is not quoted.
        let mut t: Trace = serde_json::from_str(text).map_err(|e| {
            let what = match e.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Io => "it is not valid JSON",
                serde_json::error::Category::Eof => "it ends too early",
                serde_json::error::Category::Data => "it does not have the shape of a trace",
            };
            format!("not a trace: {what} (line {}, column {})", e.line(), e.column())
        })?;
        if !TRACE_FORMATS_READ.contains(&t.format.as_str()) {
            return Err(format!(
                "not a trace: its `format` is not one this version reads ({})",
                TRACE_FORMATS_READ.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        if t.format != TRACE_FORMAT {
            fn upgrade(steps: &mut [StepTrace]) {
                for s in steps {
                    s.success = s.status == StepStatus::Completed;
                    s.tool_name = tool_name(&s.tool);
                    if let Some(nested) = &mut s.steps {
                        upgrade(nested);
                    }
                }
            }
            upgrade(&mut t.steps);
            t.aggregate();
        }
        Ok(t)
    }

    /// Computes the seed's aggregates from `step_results` (SPEC §6.7): `tools_executed`
    /// counts the entries whose status is not `SKIPPED`, `tools_succeeded` those with
    /// `success`, `tools_failed` the executed ones without it, and `success_rate` is
    /// succeeded / executed (0 when nothing was executed); `failure_summary` is the error.
    pub fn aggregate(&mut self) {
        let executed = self.steps.iter().filter(|s| s.status != StepStatus::Skipped).count();
        let succeeded = self.steps.iter().filter(|s| s.success).count();
        self.tools_executed = executed;
        self.tools_succeeded = succeeded;
        self.tools_failed = executed - succeeded.min(executed);
        self.success_rate = if executed == 0 { 0.0 } else { succeeded as f64 / executed as f64 };
        self.failure_summary = self.error.as_ref().map(ToString::to_string);
    }
}

/// A field that is present is `Some`, even when it is `null` (a skipped step's `output`),
/// so that a trace reads back to what was written.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A tool path's file stem: `summarizer` for `/tools/summarizer.tool`.
pub(crate) fn tool_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.strip_suffix(".tool").unwrap_or(file).to_string()
}

/// RFC 3339 UTC with milliseconds, as `datetime_now` writes it.
pub(crate) fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}
