//! A composition as a run of its own: a trace whose steps are the four phases (the
//! `execute` phase holds the plan's steps as a composite callee's), for the run history and
//! `tdsl report`. The query and the model are its arguments; the response, the usage tokens
//! and the plan its result.

use serde_json::{json, Value as Json};

use super::model::{CompositionResult, CompositionStatus};
use crate::exec::Trace;

/// The tool name a composition's run is recorded under.
pub const COMPOSE_TOOL: &str = "compose";

impl CompositionResult {
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
                "arguments": {"requests": self.usage.get(phase.as_str()).map_or(0, |u| u.requests)},
            });
            if phase == "execute" {
                if let Some(t) = &self.trace {
                    step["steps"] = serde_json::to_value(&t.steps).ok()?;
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
