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

use std::cell::RefCell;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use smol_str::SmolStr;

use super::breaker::BreakerState;
use super::file_reads::FileRead;
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

impl Attempt {
    /// Attempt `attempt` (1 for the first) that ended with `outcome`: the tool's answer, or
    /// the error's message. Both drivers make their attempts with it (and [`Attempt::after`],
    /// [`Attempt::at`]), so a field added to `Attempt` is set here: it started at 0 after
    /// no back-off and took no time until those say otherwise.
    pub(crate) fn new(attempt: u32, outcome: Outcome, answer: Result<Value, String>) -> Attempt {
        let (response, error) = match answer {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        Attempt { attempt, outcome, response, error, delay_ms: 0, started_ms: 0, duration_ms: 0 }
    }

    /// The back-off waited before it, in milliseconds.
    pub(crate) fn after(self, delay_ms: u64) -> Attempt {
        Attempt { delay_ms, ..self }
    }

    /// It started `started_ms` into the run and took `duration_ms`.
    pub(crate) fn at(self, started_ms: u64, duration_ms: u64) -> Attempt {
        Attempt { started_ms, duration_ms, ..self }
    }
}

/// What one step did, as written: seed 000's `StepResult` fields first, then tdsl's own.
/// The field order here is the JSON's (format 2), and the serde attributes are its names:
/// a field is added by adding it here, in its place, with its attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTrace {
    /// `execution_id` (written `step_id`, the seed's name).
    #[serde(rename = "step_id", alias = "execution_id")]
    pub execution_id: SmolStr,
    /// The callee's name: the file stem of `tool` (`summarizer` for
    /// `/tools/summarizer.tool`).
    #[serde(default)]
    pub tool_name: SmolStr,
    /// How it ended.
    pub status: StepStatus,
    /// Whether it completed (`COMPLETED`); false for every other status.
    #[serde(default)]
    pub success: bool,
    /// Its result as REFs see it (after `transform_responses`; for a step that failed
    /// under `continue_on_error`, its `{"status": "failed", …}` object), written `output`
    /// (format 1: `result`); a `null` output is present.
    #[serde(
        rename = "output",
        alias = "result",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
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
    pub started_at: Option<SmolStr>,
    /// Wall-clock end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<SmolStr>,
    /// `tool_definition_path`; empty (and not written) for a transform step, which calls
    /// nothing and so has no attempts (SPEC §6.4 ext).
    #[serde(default, skip_serializing_if = "SmolStr::is_empty")]
    pub tool: SmolStr,
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

impl StepTrace {
    /// The step ended at `ended_ms` (`completed_at` on the wall clock): its duration, its
    /// success, and its retries counted from its attempts and its children's (a call the
    /// breaker refused is not a retry). Returns how many calls it made.
    pub fn end(&mut self, ended_ms: u64, completed_at: SmolStr) -> usize {
        self.ended_ms = Some(ended_ms);
        self.completed_at = Some(completed_at);
        self.duration_ms = ended_ms.saturating_sub(self.started_ms.unwrap_or(ended_ms));
        self.success = self.status == StepStatus::Completed;
        let attempts = self.attempts.iter().chain(self.children.iter().flatten().flat_map(|c| c.attempts.iter()));
        let (mut calls, mut retries) = (0usize, 0u32);
        for a in attempts {
            calls += 1;
            if a.attempt > 1 && a.outcome != Outcome::Refused {
                retries += 1;
            }
        }
        self.retry_count = retries;
        calls
    }

    /// A step of `tool_path` that has not started (`PENDING`); `""` for a transform step.
    pub fn new(execution_id: &str, tool_path: &str) -> StepTrace {
        StepTrace {
            execution_id: SmolStr::new(execution_id),
            tool_name: tool_name(tool_path),
            status: StepStatus::Pending,
            success: false,
            result: None,
            error: None,
            duration_ms: 0,
            retry_count: 0,
            circuit_state: None,
            started_at: None,
            completed_at: None,
            tool: SmolStr::new(tool_path),
            reason: None,
            arguments: None,
            attempts: Vec::new(),
            started_ms: None,
            ended_ms: None,
            clock_reads: Vec::new(),
            children: None,
            steps: None,
            callee_clock_reads: Vec::new(),
        }
    }

    /// [`StepTrace::new`] for a step of a plan: its id and tool path shared with the plan
    /// (copied only when short enough to be kept inline).
    pub(crate) fn of_step(execution_id: &std::sync::Arc<str>, tool_path: Option<&std::sync::Arc<str>>) -> StepTrace {
        let mut trace = StepTrace::new("", "");
        trace.execution_id = shared(execution_id);
        if let Some(path) = tool_path {
            trace.tool_name = tool_name(path);
            trace.tool = shared(path);
        }
        trace
    }

    /// Whether it is a transform step's: one that calls nothing (it has no `tool`).
    pub fn is_transform_step(&self) -> bool {
        self.tool.is_empty()
    }

    /// What it records about its call, as a child records it.
    pub(crate) fn call(&self) -> CallView<'_> {
        CallView {
            status: self.status,
            arguments: &self.arguments,
            result: &self.result,
            error: &self.error,
            attempts: &self.attempts,
        }
    }
}

/// One child of a parallel step, as written: its position, and its call (status
/// `COMPLETED`, `FAILED`, `TIMEOUT` or `CANCELLED`). The field order is the JSON's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildTrace {
    /// Its position in `iterate_over`.
    pub index: usize,
    /// How it ended.
    pub status: StepStatus,
    /// The step's arguments with its element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The callee's response as returned (the element of the step's `response` list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What went wrong, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it never started, when it did not (`CANCELLED`): the words a step gets
    /// (``step `fan[2]` failed``, `the run's deadline passed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The calls made, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// Start, in milliseconds since the run started (absent when it never started).
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

impl ChildTrace {
    /// Child `index`, not started (`CANCELLED` until it runs).
    pub fn new(index: usize) -> ChildTrace {
        ChildTrace {
            index,
            status: StepStatus::Cancelled,
            arguments: None,
            result: None,
            error: None,
            reason: None,
            attempts: Vec::new(),
            started_ms: None,
            ended_ms: None,
            duration_ms: 0,
            steps: None,
            callee_clock_reads: Vec::new(),
        }
    }

    /// What it records about its call, as a step records it.
    pub(crate) fn call(&self) -> CallView<'_> {
        CallView {
            status: self.status,
            arguments: &self.arguments,
            result: &self.result,
            error: &self.error,
            attempts: &self.attempts,
        }
    }
}

/// What a step and a fan-out child both record about their call, read alike (replay's
/// comparison, `failure_summary`).
pub(crate) struct CallView<'t> {
    pub(crate) status: StepStatus,
    pub(crate) arguments: &'t Option<Value>,
    pub(crate) result: &'t Option<Value>,
    pub(crate) error: &'t Option<String>,
    pub(crate) attempts: &'t [Attempt],
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
    /// Why it did not succeed, in one line: the run's error, then each failed step (a
    /// composite callee's and a fan-out child's too) with its error; present in every
    /// FAILED, TIMEOUT and PARTIAL trace, absent from a SUCCESS.
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
    /// The limits in force that decide how a run goes (guards, nesting, evaluation limits):
    /// a replay runs under them (absent in traces written before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<RunLimits>,
    /// Every file read the run's transforms made through the file store (`--files`), with
    /// its answer, in the order first made: a replay answers them from here, not from disk.
    /// Absent when the run had no file store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileRead>>,
}

/// The limits a run ran under ([`Trace::limits`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLimits {
    /// The most steps the run could execute (absent: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
    /// The most children of one parallel step.
    pub max_fan_out: usize,
    /// How deep composite callees could nest.
    pub max_nesting: usize,
    /// The evaluation fuel of each expression.
    pub fuel: u64,
    /// The most bytes one evaluation could build.
    pub max_memory: usize,
    /// The most calls the run could make (written only when not the default, a million).
    #[serde(default = "default_max_calls", skip_serializing_if = "is_default_max_calls")]
    pub max_calls_per_run: usize,
    /// The fuel of all the run's expressions together (written only when not the default).
    #[serde(default = "default_run_fuel", skip_serializing_if = "is_default_run_fuel")]
    pub max_run_fuel: u64,
    /// The most bytes the run could hold at once (written only when not the default).
    #[serde(default = "default_run_memory", skip_serializing_if = "is_default_run_memory")]
    pub max_run_memory: u64,
}

fn default_run_fuel() -> u64 {
    crate::ranges::DEFAULT_RUN_FUEL
}

fn is_default_run_fuel(n: &u64) -> bool {
    *n == crate::ranges::DEFAULT_RUN_FUEL
}

fn default_run_memory() -> u64 {
    crate::ranges::DEFAULT_RUN_MEMORY
}

fn is_default_run_memory(n: &u64) -> bool {
    *n == crate::ranges::DEFAULT_RUN_MEMORY
}

fn default_max_calls() -> usize {
    crate::ranges::DEFAULT_MAX_CALLS_PER_RUN
}

fn is_default_max_calls(n: &usize) -> bool {
    *n == crate::ranges::DEFAULT_MAX_CALLS_PER_RUN
}

impl RunLimits {
    /// The limits of a run of `wf` under `options`.
    pub fn of(options: &super::Options, wf: &super::Workflow) -> RunLimits {
        RunLimits {
            max_steps: options.guards.max_steps,
            max_fan_out: options.guards.max_fan_out,
            max_nesting: options.max_depth,
            fuel: wf.limits().fuel,
            max_memory: wf.limits().max_alloc_bytes,
            max_calls_per_run: options.guards.max_calls_per_run,
            max_run_fuel: options.guards.max_run_fuel,
            max_run_memory: options.guards.max_run_memory,
        }
    }
}

impl Trace {
    /// The same trace with `f` applied to every payload in it — the run's arguments and
    /// result, each step's and child's arguments and result, each attempt's answer, at every
    /// depth — and `text` to every error text: an attempt's, a step's, a fan-out child's,
    /// the run's error and failure summary (what the history keeps of a trace:
    /// `history::payload`).
    #[cfg(feature = "history")]
    pub(crate) fn map_payloads_and_errors(&self, f: &dyn Fn(&Value) -> Value, text: &dyn Fn(&str) -> String) -> Trace {
        fn attempts(a: &mut [Attempt], f: &dyn Fn(&Value) -> Value, text: &dyn Fn(&str) -> String) {
            for a in a {
                a.response = a.response.as_ref().map(f);
                a.error = a.error.as_deref().map(text);
            }
        }
        fn steps(s: &mut [StepTrace], f: &dyn Fn(&Value) -> Value, text: &dyn Fn(&str) -> String) {
            for s in s {
                s.arguments = s.arguments.as_ref().map(f);
                s.result = s.result.as_ref().map(f);
                s.error = s.error.as_deref().map(text);
                attempts(&mut s.attempts, f, text);
                for c in s.children.iter_mut().flatten() {
                    c.arguments = c.arguments.as_ref().map(f);
                    c.result = c.result.as_ref().map(f);
                    c.error = c.error.as_deref().map(text);
                    attempts(&mut c.attempts, f, text);
                    steps(c.steps.as_deref_mut().unwrap_or_default(), f, text);
                }
                steps(s.steps.as_deref_mut().unwrap_or_default(), f, text);
            }
        }
        let mut t = self.clone();
        t.arguments = f(&t.arguments);
        t.result = t.result.as_ref().map(f);
        if let Some(e) = t.error.as_mut() {
            e.message = text(&e.message);
        }
        t.failure_summary = t.failure_summary.as_deref().map(text);
        steps(&mut t.steps, f, text);
        t
    }

    /// A run's trace as it starts (`FAILED` until it ends), before its steps.
    pub(crate) fn starting(
        trace_id: String,
        run_id: String,
        tool: &str,
        arguments: Value,
        started_at_ms: i64,
    ) -> Trace {
        Trace {
            format: TRACE_FORMAT.to_string(),
            trace_id,
            plan_id: tool.to_string(),
            failure_summary: None,
            tools_executed: 0,
            tools_succeeded: 0,
            tools_failed: 0,
            success_rate: 0.0,
            run_id,
            tool: tool.to_string(),
            file: None,
            root: None,
            arguments,
            status: RunStatus::Failed,
            result: None,
            error: None,
            started_at: rfc3339(started_at_ms),
            ended_at: String::new(),
            duration_ms: 0,
            total_retries: 0,
            circuit_breaker_trips: 0,
            max_in_flight: 0,
            clock_reads: Vec::new(),
            steps: Vec::new(),
            limits: None,
            files: None,
        }
    }

    /// The trace as pretty JSON.
    pub fn to_json(&self) -> String {
        self.try_to_json().unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The trace as pretty JSON, or why it cannot be written: a value a host built nested
    /// deeper than [`crate::value::MAX_SERIALIZE_DEPTH`] levels (a run's own values do not
    /// reach it), which no reader could take back.
    pub fn try_to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| e.to_string())
    }

    /// Reads a trace written by [`Trace::to_json`], of any format in
    /// [`TRACE_FORMATS_READ`] (a format-1 trace gets its aggregates computed).
    ///
    /// A trace reads at every depth a run writes one: serde_json's default bound of 128
    /// levels is lifted (a run's arguments may nest that deep themselves, and the trace
    /// puts them a few levels down), and the JSON is read on a thread of its own with a
    /// stack sized for [`MAX_TRACE_DEPTH`] levels; deeper JSON is refused before it is read.
    pub fn from_json(text: &str) -> Result<Trace, String> {
        let depth = json_depth(text);
        if depth > MAX_TRACE_DEPTH {
            return Err(format!(
                "not a trace: it nests {depth} levels deep, deeper than the {MAX_TRACE_DEPTH} a trace may (a run writes values of at most {} levels)",
                crate::value::MAX_SERIALIZE_DEPTH
            ));
        }
        let read = || {
            let mut de = serde_json::Deserializer::from_str(text);
            de.disable_recursion_limit();
            Trace::deserialize(&mut de).and_then(|t| de.end().map(|()| t))
        };
        let parsed = if depth <= 100 {
            read()
        } else {
            std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .name("tdsl-trace-reader".to_string())
                    .stack_size(READER_STACK_BYTES)
                    .spawn_scoped(scope, read)
                    .map_err(|e| format!("cannot read the trace: no thread to read it on: {e}"))?
                    .join()
                    .map_err(|_| "cannot read the trace: its reader stopped".to_string())
            })?
        };
        // The messages say where, never what: a file that is not a trace is not quoted.
        let mut t: Trace = parsed.map_err(|e| {
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
    /// succeeded / executed (0 when nothing was executed); `failure_summary` is the error and
    /// every failed step with its error (`Trace::summarize_failures`).
    pub fn aggregate(&mut self) {
        let executed = self.steps.iter().filter(|s| s.status != StepStatus::Skipped).count();
        let succeeded = self.steps.iter().filter(|s| s.success).count();
        self.tools_executed = executed;
        self.tools_succeeded = succeeded;
        self.tools_failed = executed - succeeded.min(executed);
        self.success_rate = if executed == 0 { 0.0 } else { succeeded as f64 / executed as f64 };
        self.failure_summary = self.summarize_failures();
    }

    /// `failure_summary`: for a run that did not succeed, why (its error), then every step,
    /// fan-out child and composite callee's step that failed or timed out, each with its
    /// error (`broken: the tool failed; fan[2]: …`). Absent for a SUCCESS.
    fn summarize_failures(&self) -> Option<String> {
        if self.status == RunStatus::Success {
            return None;
        }
        fn walk(steps: &[StepTrace], prefix: &str, out: &mut Vec<(String, String)>) {
            fn note(path: &str, call: CallView<'_>, out: &mut Vec<(String, String)>) {
                if matches!(call.status, StepStatus::Failed | StepStatus::Timeout) {
                    let why = call.error.as_deref().unwrap_or(call.status.as_str());
                    out.push((path.to_string(), why.to_string()));
                }
            }
            for s in steps {
                let path = format!("{prefix}{}", s.execution_id);
                note(&path, s.call(), out);
                for c in s.children.iter().flatten() {
                    let child = format!("{path}[{}]", c.index);
                    note(&child, c.call(), out);
                    if let Some(nested) = &c.steps {
                        walk(nested, &format!("{child}/"), out);
                    }
                }
                if let Some(nested) = &s.steps {
                    walk(nested, &format!("{path}/"), out);
                }
            }
        }
        let mut failed = Vec::new();
        walk(&self.steps, "", &mut failed);
        // The step the run's error names (and the steps and fan-outs that contain it) is
        // named by the error already.
        let named = self.error.as_ref().and_then(|e| e.step.as_deref()).unwrap_or("");
        failed.retain(|(path, _)| {
            let contains = named
                .strip_prefix(path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('['));
            named.is_empty() || !contains
        });
        let list = failed.iter().map(|(p, why)| format!("{p}: {why}")).collect::<Vec<_>>().join("; ");
        Some(match (&self.error, failed.len()) {
            (Some(e), 0) => e.to_string(),
            (Some(e), _) => format!("{e}; also failed: {list}"),
            (None, 0) => format!("the run is {}", self.status.as_str()),
            (None, 1) => format!("continued past 1 failed step: {list}"),
            (None, n) => format!("continued past {n} failed steps: {list}"),
        })
    }
}

/// The deepest nesting [`Trace::from_json`] reads: values nest at most
/// [`crate::value::MAX_SERIALIZE_DEPTH`] levels in a trace a run writes, and the trace's own
/// structure (steps, composite callees' steps, fan-out children, attempts) adds a few
/// levels per composite level around them.
pub const MAX_TRACE_DEPTH: usize = 2048;

/// The stack of the thread that reads a deep trace: room for [`MAX_TRACE_DEPTH`] levels of
/// serde's recursive descent (a few KiB a level in an unoptimized build; the test
/// `a_trace_reads_at_the_deepest_nesting_allowed` reads one that deep), reserved, not
/// committed.
const READER_STACK_BYTES: usize = 32 << 20;

/// How deep `text`'s JSON nests (lists and objects, outside strings), read without
/// recursion; 0 for a scalar.
pub(crate) fn json_depth(text: &str) -> usize {
    crate::tool::json::nesting_depth(text)
}

/// A field that is present is `Some`, even when it is `null` (a skipped step's `output`),
/// so that a trace reads back to what was written.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `s` as a [`SmolStr`]: inline when short, else sharing `s` (no copy either way).
fn shared(s: &std::sync::Arc<str>) -> SmolStr {
    if s.len() <= 23 {
        SmolStr::new(&**s)
    } else {
        SmolStr::from(s.clone())
    }
}

/// A tool path's file stem: `summarizer` for `/tools/summarizer.tool`.
pub(crate) fn tool_name(path: &str) -> SmolStr {
    let file = path.rsplit('/').next().unwrap_or(path);
    SmolStr::new(file.strip_suffix(".tool").unwrap_or(file))
}

/// RFC 3339 UTC with milliseconds, as `datetime_now` writes it.
pub(crate) fn rfc3339(ms: i64) -> String {
    rfc3339_shared(ms).to_string()
}

/// [`rfc3339`] as a shared string: steps that start and end within the same millisecond
/// (most, with a fast tool) write the same text, so the thread's last one is kept and
/// shared (a reference count), not formatted or copied again.
pub(crate) fn rfc3339_shared(ms: i64) -> SmolStr {
    thread_local! {
        static LAST: RefCell<Option<(i64, SmolStr)>> = const { RefCell::new(None) };
    }
    LAST.with(|last| match last.try_borrow_mut() {
        Ok(mut last) => match &*last {
            Some((at, text)) if *at == ms => text.clone(),
            _ => last.insert((ms, SmolStr::from(format_rfc3339(ms)))).1.clone(),
        },
        Err(_) => SmolStr::from(format_rfc3339(ms)),
    })
}

/// [`rfc3339`], formatted anew.
fn format_rfc3339(ms: i64) -> String {
    // Years 1970 to 9999 by chrono's RFC 3339 writer: every step's trace takes two of
    // these, and `format` parses its pattern anew each time (a fifth of a step's cost in
    // the `exec` bench). Byte for byte `%Y-%m-%dT%H:%M:%S%.3fZ` (a test compares them);
    // outside that range (negative or five-digit years) the pattern's own rendering.
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) if (0..253_402_300_800_000).contains(&ms) => t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => ms.to_string(),
    }
}

#[cfg(test)]
mod tests;
