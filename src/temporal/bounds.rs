//! What the plan bounds of a call's tool calls, before it runs: how many calls a fan-out's
//! child makes at most (to cut a fan-out into child workflows of [`CHUNK`] calls) and how many
//! it may take from the run's `--max-calls-per-run` (what a chunk is lent).

use crate::analysis::ValuePlan;
use crate::exec::{Tool, Workflow};

/// The most tool calls one fan-out makes in the run's own workflow; a larger fan-out runs in
/// child workflows of at most this many calls each (about 6 history events per call: 3,000
/// events a chunk, far from Temporal's 51,200). A composite callee counts as the calls its
/// steps make ([`calls_per_child`]).
pub(crate) const CHUNK: usize = 500;

/// The tool calls one call of `tool` makes, at most, as far as the plan tells: 1 for a
/// primitive tool; a composite's steps added up (a nested fan-out counts as [`CHUNK`]: its
/// width is known only when it runs, and a wider one is chunked in turn).
pub(super) fn calls_per_child(wf: &Workflow, tool: Option<&Tool>, depth: usize) -> usize {
    match tool {
        Some(Tool::Composite { plan }) if depth < 64 => plan
            .steps
            .iter()
            .map(|s| match (&s.parallel, &s.tool_path) {
                // A transform step calls nothing.
                (_, None) => 0,
                (Some(_), Some(_)) => CHUNK,
                (None, Some(path)) => calls_per_child(wf, wf.tool(path), depth + 1),
            })
            .fold(0usize, usize::saturating_add)
            .max(1),
        Some(Tool::Composite { .. }) => CHUNK,
        _ => 1,
    }
}

/// The most calls one call of `tool` takes from the run's `--max-calls-per-run`, as far as
/// the plan bounds them: 1 for a primitive tool; for a composite, 1 and its steps' added up,
/// a fan-out's children being at most its literal list's length or `max_fan_out` (a wider
/// one fails its step). Saturates at `usize::MAX` (no bound: nested past 64).
pub(super) fn calls_bound(wf: &Workflow, tool: Option<&Tool>, max_fan_out: usize, depth: usize) -> usize {
    match tool {
        Some(Tool::Composite { plan }) if depth < 64 => plan
            .steps
            .iter()
            .map(|s| {
                // A transform step calls nothing.
                let Some(path) = &s.tool_path else { return 0 };
                let each = calls_bound(wf, wf.tool(path), max_fan_out, depth + 1);
                let width = match s.parallel.as_ref().map(|p| &p.iterate_over) {
                    None => 1,
                    Some(ValuePlan::Literal(v)) => v.as_list().map_or(0, <[_]>::len).min(max_fan_out),
                    Some(_) => max_fan_out,
                };
                width.saturating_mul(each)
            })
            .fold(1usize, usize::saturating_add),
        Some(Tool::Composite { .. }) => usize::MAX,
        _ => 1,
    }
}
