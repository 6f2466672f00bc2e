//! A composition as a run of its own: a trace whose steps are the four phases (the
//! `execute` phase holds the plan's steps as a composite callee's), for the run history and
//! `tdsl report`. The query and the model are its arguments; the response, the usage tokens
//! and the plan its result. [`Composer::compose_recorded`] records it as it goes: begun
//! when it starts, each phase when it starts, the whole when it ends.

use serde_json::{json, Value as Json};

use super::model::{CompositionResult, CompositionStatus};
#[cfg(feature = "history")]
use super::Composer;
use crate::exec::Trace;

/// The tool name a composition's run is recorded under.
pub(crate) const COMPOSE_TOOL: &str = "compose";

impl CompositionResult {
    /// What a phase's step records as its arguments: the model requests it made and the
    /// tokens the provider reported for them; for `plan`, its repair rounds too.
    fn phase_arguments(&self, phase: &str) -> Json {
        let usage = self.usage.get(phase).copied().unwrap_or_default();
        let mut out = json!({
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        });
        if phase == "plan" {
            out["repair_rounds"] = json!(self.repair_rounds());
        }
        out
    }

    /// The times a refused plan went back to the model: the plan's own count once one
    /// checked; else the answers refused (the composer writes `plan: round N: …`), less the
    /// last one when the phase ended because the rounds ran out (a phase that ended
    /// otherwise — a timeout, an unreachable model — did so on a repair request).
    pub fn repair_rounds(&self) -> u32 {
        if let Some(p) = &self.plan {
            return p.repair_rounds;
        }
        let refused = self
            .errors
            .iter()
            .filter_map(|e| e.strip_prefix("plan: round ")?.split(':').next()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        let ran_out = self.error.as_deref().is_some_and(|e| e.starts_with("plan: no valid answer"));
        if ran_out {
            refused.saturating_sub(1)
        } else {
            refused
        }
    }

    /// The composition as a trace: one step per phase that started, in order, with its
    /// status, duration and output; `None` only if the trace cannot be made (never for a
    /// result `compose` returned).
    pub fn phases_trace(&self) -> Option<Trace> {
        let started = self.started_at.clone().unwrap_or_default();
        let start_ms = chrono::DateTime::parse_from_rfc3339(&started).map_or(0, |t| t.timestamp_millis());
        let iso = |rel: u64| {
            chrono::DateTime::from_timestamp_millis(start_ms.saturating_add(rel as i64))
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_default()
        };
        let ended = matches!(self.status, CompositionStatus::Failed | CompositionStatus::Timeout);
        let last = self.phase_durations.len().saturating_sub(1);
        let mut at = 0u64;
        let mut steps = Vec::new();
        for (i, (phase, ms)) in self.phase_durations.iter().enumerate() {
            let status = match (ended && i == last, self.status) {
                (true, CompositionStatus::Timeout) => "TIMEOUT",
                (true, _) => "FAILED",
                _ => "COMPLETED",
            };
            let (tool, output) = match phase.as_str() {
                "decompose" => (self.model_used.clone(), serde_json::to_value(&self.decomposition).ok()),
                "plan" => (self.model_used.clone(), serde_json::to_value(&self.plan).ok()),
                "execute" => (
                    "plan".to_string(),
                    self.execution.as_ref().map(|e| {
                        json!({"overall_status": e["overall_status"], "tools_succeeded": e["tools_succeeded"],
                           "tools_failed": e["tools_failed"], "failure_summary": e.get("failure_summary")})
                    }),
                ),
                _ => (self.model_used.clone(), serde_json::to_value(&self.response).ok()),
            };
            let mut step = json!({
                "step_id": phase,
                "tool_name": tool,
                "tool": tool,
                "status": status,
                "success": status == "COMPLETED",
                "output": output.filter(|o| !o.is_null()),
                "error": if status == "COMPLETED" { Json::Null } else { json!(self.error) },
                "duration_ms": ms,
                "started_ms": at,
                "ended_ms": at + ms,
                "started_at": iso(at),
                "completed_at": iso(at + ms),
                "arguments": self.phase_arguments(phase),
            });
            if phase == "execute" {
                if let Some(t) = &self.trace {
                    // The plan run's times count from its own start: from the composition's here.
                    let mut nested = serde_json::to_value(&t.steps).ok()?;
                    shift_times(&mut nested, at);
                    step["steps"] = nested;
                }
            }
            steps.push(step);
            at += ms;
        }
        let executed = steps.len();
        let succeeded = steps.iter().filter(|s| s["success"] == true).count();
        let status = match self.status {
            CompositionStatus::Success => "SUCCESS",
            CompositionStatus::Partial => "PARTIAL",
            CompositionStatus::Timeout => "TIMEOUT",
            _ => "FAILED",
        };
        let trace = json!({
            "format": crate::exec::trace::TRACE_FORMAT,
            "trace_id": format!("trace_{}", self.composition_id.trim_start_matches("comp_")),
            "plan_id": self.plan.as_ref().map(|p| p.plan_id.clone()).unwrap_or_default(),
            "overall_status": status,
            "failure_summary": self.error,
            "tools_executed": executed,
            "tools_succeeded": succeeded,
            "tools_failed": executed - succeeded,
            "success_rate": if executed == 0 { 0.0 } else { succeeded as f64 / executed as f64 },
            "total_duration_ms": self.total_duration_ms.unwrap_or(at),
            "total_retries": self.trace.as_ref().map_or(0, |t| t.total_retries),
            "circuit_breaker_trips": self.trace.as_ref().map_or(0, |t| t.circuit_breaker_trips),
            "started_at": started,
            "completed_at": self.completed_at.clone().unwrap_or_default(),
            "run_id": self.composition_id,
            "tool": COMPOSE_TOOL,
            "arguments": {"query": self.query, "model": self.model_used},
            "result": {
                "status": self.status.as_str(),
                "response": self.response,
                "usage": self.usage,
                "plan": self.plan.as_ref().map(|p| p.plan.clone()),
                "errors": self.errors,
            },
            "max_in_flight": self.trace.as_ref().map_or(1, |t| t.max_in_flight),
            "step_results": steps,
        });
        serde_json::from_value(trace).ok()
    }
}

/// Adds `by` to every `started_ms` and `ended_ms` in `v` (steps, children, attempts).
fn shift_times(v: &mut Json, by: u64) {
    match v {
        Json::Object(o) => {
            for (k, x) in o.iter_mut() {
                match (k.as_str(), x.as_u64()) {
                    ("started_ms" | "ended_ms", Some(ms)) => *x = json!(ms.saturating_add(by)),
                    _ => shift_times(x, by),
                }
            }
        }
        Json::Array(a) => a.iter_mut().for_each(|x| shift_times(x, by)),
        _ => {}
    }
}

/// The phase a composition status is in, if it is one.
#[cfg(feature = "history")]
fn phase_of(status: CompositionStatus) -> Option<&'static str> {
    match status {
        CompositionStatus::Decomposing => Some("decompose"),
        CompositionStatus::Planning => Some("plan"),
        CompositionStatus::Executing => Some("execute"),
        CompositionStatus::Synthesizing => Some("synthesize"),
        _ => None,
    }
}

#[cfg(feature = "history")]
impl Composer {
    /// Runs [`Composer::compose`] and records the composition in `store` as it goes: a run
    /// (tool [`COMPOSE_TOOL`], run id the `composition_id`, the query and model as its
    /// arguments) begun as it starts, each phase a step begun as it starts (the one before
    /// it then `COMPLETED`), and at its end the whole from
    /// [`CompositionResult::phases_trace`]. A process that dies mid-way leaves the run
    /// `RUNNING`, which the history reads as `INTERRUPTED` once the process is gone, with
    /// the phase it was in. Returns the result and the run's history id, or the first error
    /// the store gave (the composition runs on regardless).
    pub fn compose_recorded(
        &self,
        query: &str,
        store: &dyn crate::history::HistoryStore,
    ) -> (CompositionResult, Result<i64, crate::history::HistoryError>) {
        use crate::history::{HistoryError, NewRun, RunContext};
        let mut run: Option<i64> = None;
        let mut failed: Option<HistoryError> = None;
        let mut previous: Option<&'static str> = None;
        let result = self.compose_journaled(query, &mut |r: &CompositionResult| {
            if failed.is_some() {
                return;
            }
            let Some(id) = run else {
                let arguments = crate::value::Value::from(json!({"query": r.query, "model": r.model_used}));
                match store.begin_run(&NewRun {
                    run_id: &r.composition_id,
                    tool: COMPOSE_TOOL,
                    arguments: &arguments,
                    started_at: r.started_at.as_deref().unwrap_or_default(),
                    context: &RunContext::new(),
                }) {
                    Ok(id) => run = Some(id),
                    Err(e) => failed = Some(e),
                }
                return;
            };
            let Some(phase) = phase_of(r.status) else { return };
            let tool = if phase == "execute" { "plan" } else { r.model_used.as_str() };
            let write = || -> Result<(), HistoryError> {
                if let Some(p) = previous {
                    store.step(id, p, None, "COMPLETED", None)?;
                }
                store.step(id, phase, Some(tool), "RUNNING", None)
            };
            if let Err(e) = write() {
                failed = Some(e);
            }
            previous = Some(phase);
        });
        let ended = match (run, result.phases_trace()) {
            (Some(id), Some(trace)) => crate::history::end_run_from_trace(store, id, &trace).map(|()| id),
            (Some(id), None) => Ok(id),
            (None, _) => {
                Err(failed.take().unwrap_or_else(|| HistoryError("the composition never started".to_string())))
            }
        };
        let outcome = match failed {
            Some(e) => Err(e),
            None => ended,
        };
        (result, outcome)
    }
}
