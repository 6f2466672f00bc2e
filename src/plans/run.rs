//! Running a plan (feature `engine`): check it, and with no error run it with the executor
//! under the plan limits, answering `{status, result, steps, failure_summary?}`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::{PlanCheck, PlanDesk};
use crate::exec::{
    CancelToken, ExecClock, Executor, Guards, Observer, Options, RunStatus, Runner, StepStatus, Time, Trace, Workflow,
};
use crate::value::Value;

/// How to run a plan, beyond its limits.
#[derive(Clone, Default)]
pub struct RunPlanOptions {
    /// Cancels the run (an MCP client's `notifications/cancelled`).
    pub cancel: CancelToken,
    /// Receives the run's events (progress, logging, the history's recorder).
    pub observer: Option<Arc<dyn Observer>>,
    /// The clock (a [`crate::exec::ManualTime`] in tests); the system's when `None`.
    pub time: Option<Arc<dyn Time>>,
    /// The most tool calls in flight at once (the executor's default when `None`).
    pub max_concurrency: Option<usize>,
}

impl fmt::Debug for RunPlanOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunPlanOptions").field("max_concurrency", &self.max_concurrency).finish_non_exhaustive()
    }
}

/// Why a plan did not run: nothing was called.
#[derive(Clone, Debug)]
pub enum PlanRefused {
    /// The plan has errors: every diagnostic, located.
    Invalid(PlanCheck),
    /// The executor refused it before the run (a guard or an option out of range), or the
    /// tools it reaches did not load: the stable code and why.
    Refused {
        /// `E0807`, `E0809`, `E0814`, …
        code: String,
        /// Why.
        message: String,
    },
}

impl fmt::Display for PlanRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanRefused::Invalid(c) => {
                let (errors, _) = c.counts();
                write!(f, "the plan has {errors} error{}; nothing ran", if errors == 1 { "" } else { "s" })
            }
            PlanRefused::Refused { code, message } => {
                write!(f, "the plan was refused before it ran: {message} [{code}]")
            }
        }
    }
}

impl std::error::Error for PlanRefused {}

impl PlanRefused {
    /// As JSON: the check's JSON for an invalid plan, `{ok: false, code, message}` otherwise.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            PlanRefused::Invalid(c) => c.to_json(),
            PlanRefused::Refused { code, message } => {
                serde_json::json!({"ok": false, "code": code, "message": message})
            }
        }
    }
}

/// One step of a plan's run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanStep {
    /// Its `execution_id`.
    pub execution_id: String,
    /// `COMPLETED`, `FAILED`, `TIMEOUT`, `SKIPPED`, `CANCELLED` (the trace's words).
    pub status: &'static str,
    /// How long it took.
    pub duration_ms: u64,
    /// Why it failed, was skipped or cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a plan's run produced.
#[derive(Clone, Debug)]
pub struct PlanRun {
    /// `SUCCESS`, `PARTIAL`, `FAILED` or `TIMEOUT`.
    pub status: RunStatus,
    /// The plan's result (for `SUCCESS` and `PARTIAL`).
    pub result: Option<Value>,
    /// Its steps, in execution order.
    pub steps: Vec<PlanStep>,
    /// Why it failed, in one line: the trace's `failure_summary`.
    pub failure_summary: Option<String>,
    /// The whole trace.
    pub trace: Trace,
    /// The warnings of the plan's check.
    pub check: PlanCheck,
}

impl PlanRun {
    fn new(run: crate::exec::Run, check: PlanCheck) -> PlanRun {
        let steps = run
            .trace
            .steps
            .iter()
            .map(|s| PlanStep {
                execution_id: s.execution_id.to_string(),
                status: s.status.as_str(),
                duration_ms: s.duration_ms,
                error: match s.status {
                    StepStatus::Completed => None,
                    _ => s.error.clone().or_else(|| s.reason.clone()),
                },
            })
            .collect();
        PlanRun {
            status: run.status,
            result: run.result,
            steps,
            failure_summary: run.trace.failure_summary.clone(),
            trace: run.trace,
            check,
        }
    }

    /// Whether the run succeeded (`SUCCESS`): `run_plan` answers anything else as a tool
    /// error with the same content.
    pub fn succeeded(&self) -> bool {
        self.status == RunStatus::Success
    }

    /// `{status, result, steps: [{execution_id, status, duration_ms, error?}],
    /// failure_summary?}` — what `run_plan` answers.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::json!({
            "status": self.status.as_str(),
            "result": self.result.as_ref().map_or(serde_json::Value::Null, |r| serde_json::to_value(r).unwrap_or_default()),
            "steps": self.steps,
        });
        if let Some(s) = &self.failure_summary {
            out["failure_summary"] = serde_json::json!(s);
        }
        out
    }
}

impl PlanDesk {
    /// Checks the plan and, with no error, runs it with `arguments` (an object; the plan's
    /// `REF:arguments.…`) and `runner` (the host's: [`crate::host::HostRunner`] for
    /// served tools, wrapped by a host that routes upstream calls, [`super::upstream_target`]),
    /// under the plan limits: the deadline, the fan-out width, the expression budgets.
    /// Nothing runs when the plan has an error or the executor refuses it.
    pub fn run(
        &self,
        plan: &str,
        arguments: Value,
        runner: Arc<dyn Runner>,
        options: &RunPlanOptions,
    ) -> Result<PlanRun, PlanRefused> {
        self.limits.validate().map_err(|e| PlanRefused::Refused { code: "E0814".into(), message: e.to_string() })?;
        let engine = self.engine.clone().with_clock(Arc::new(ExecClock));
        // The check stops at a cancel and at the plan's deadline, which covers check and run.
        let started = std::time::Instant::now();
        let cancel = options.cancel.clone();
        let interrupt = crate::runtime::Interrupt::new()
            .with_probe(Arc::new(move || cancel.is_cancelled().then_some(crate::runtime::InterruptReason::Cancelled)));
        let (check, ready) = self.check_with(plan, engine, &interrupt);
        let Some((analyzer, checked)) = ready else { return Err(PlanRefused::Invalid(check)) };
        let workflow = Workflow::from_checked(analyzer, checked)
            .map_err(|e| PlanRefused::Refused { code: "E0811".into(), message: e.to_string() })?;
        let mut opts = Options {
            deadline: Some(match options.time {
                Some(_) => Duration::from_secs_f64(self.limits.deadline_seconds),
                None => Duration::from_secs_f64(self.limits.deadline_seconds).saturating_sub(started.elapsed()),
            }),
            guards: Guards::new()
                .max_fan_out(self.limits.max_fan_out)
                .max_calls_per_run(self.limits.max_calls_per_run)
                .max_result_bytes(self.limits.max_result_bytes)
                .max_run_fuel(self.limits.max_run_fuel)
                .max_run_memory(self.limits.max_run_memory),
            ..Options::default()
        };
        if let Some(pool) = &self.limits.memory_in_flight {
            opts.guards = opts.guards.shared_memory(pool.clone());
        }
        if let Some(n) = options.max_concurrency {
            opts.max_concurrency = n;
        }
        let mut executor = Executor::with_runner(runner).with_options(opts);
        if let Some(t) = &options.time {
            executor = executor.with_time(t.clone());
        }
        if let Some(o) = &options.observer {
            executor = executor.with_observer(o.clone());
        }
        let run = executor
            .run_cancellable(&workflow, arguments, &options.cancel)
            .map_err(|e| PlanRefused::Refused { code: e.code().as_str().to_string(), message: e.to_string() })?;
        Ok(PlanRun::new(run, check))
    }
}
