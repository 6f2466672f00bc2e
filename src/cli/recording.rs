//! What `tdsl serve` records into the run history (`--history`): each run a call starts, and
//! each skill saved or deleted. The glue between the server's hooks
//! ([`crate::mcp::RunObservers`], [`crate::mcp::skills::SkillLog`]) and the history's store,
//! kept in the driver so that neither the server nor the history names the other.

use std::sync::Arc;

use crate::exec::{Event, Observer, Trace};
use crate::history::{HistoryStore, NewRun, Recorder, RunContext};

/// Records each run a call of `serve --mcp` starts, with a [`Recorder`] of its own.
#[derive(Debug)]
struct RecordEachRun(Arc<dyn HistoryStore>);

impl crate::mcp::RunObservers for RecordEachRun {
    fn for_run(&self) -> Arc<dyn Observer> {
        Arc::new(SaysWhatIsMissing(Recorder::new(self.0.clone())))
    }
}

/// A run's recorder that says on `serve`'s standard error, when the run ends, that the run
/// is not recorded whole (a full disk, a history made read-only under the server): the
/// operator's to know; the run and the server go on.
struct SaysWhatIsMissing(Recorder);

impl Observer for SaysWhatIsMissing {
    fn event(&self, event: &Event<'_>) {
        self.0.event(event);
        if let Event::RunEnded { trace } = event {
            if let Some(why) = self.0.shortfall() {
                let run = format!("run {} of `{}`", trace.run_id, trace.tool);
                eprintln!("tdsl: warning: {}: {}", crate::diagnostic::escape_hidden(&run, &[]), why);
            }
        }
    }
}

/// The observers that record every composite run a call of the server makes into `store`
/// ([`McpServer::with_run_observers`](crate::mcp::McpServer::with_run_observers)).
pub(super) fn each_run(store: Arc<dyn HistoryStore>) -> Arc<dyn crate::mcp::RunObservers> {
    Arc::new(RecordEachRun(store))
}

/// Records every `save_skill` and `delete_skill` (`serve --skills` with a history) as a run
/// of that tool that ends at once: its arguments are the skill's name and version, its
/// context who made the change (`client`, the MCP client's `clientInfo` name; `session`) and
/// its `skill`; `tdsl history` lists them with the runs.
#[derive(Debug)]
struct RecordSkillChanges(Arc<dyn HistoryStore>);

/// The skill log of a server recording into `store` ([`crate::mcp::McpServer::with_skills`]).
pub(super) fn skill_changes(store: Arc<dyn HistoryStore>) -> Arc<dyn crate::mcp::skills::SkillLog> {
    Arc::new(RecordSkillChanges(store))
}

impl crate::mcp::skills::SkillLog for RecordSkillChanges {
    fn record(&self, change: &crate::mcp::skills::SkillChange) {
        let tool = if change.action == "save" { "save_skill" } else { "delete_skill" };
        let run_id = format!("skill_{}_{}", change.name, chrono::Utc::now().timestamp_micros());
        let arguments = serde_json::json!({"name": change.name, "version": change.version});
        let trace = serde_json::json!({
            "format": crate::exec::trace::TRACE_FORMAT, "overall_status": "SUCCESS", "total_duration_ms": 0,
            "total_retries": 0, "circuit_breaker_trips": 0, "started_at": change.at, "completed_at": change.at,
            "run_id": run_id, "tool": tool, "arguments": arguments, "result": arguments, "max_in_flight": 0,
            "step_results": [],
        });
        let Ok(trace) = serde_json::from_value::<Trace>(trace) else { return };
        let mut context = RunContext::new();
        let _ = context.insert("skill", &change.name);
        if let Some(c) = &change.client {
            let _ = context.insert("client", c);
        }
        if let Some(s) = &change.session {
            let _ = context.insert("session", s);
        }
        let begun = self.0.begin_run(&NewRun {
            run_id: &trace.run_id,
            tool,
            arguments: &trace.arguments,
            started_at: &trace.started_at,
            context: &context,
        });
        // A history that cannot be written does not undo the change (as for runs).
        if let Ok(run) = begun {
            let _ = self.0.end_run(run, &trace);
        }
    }
}
