//! The HTML report of a run (SPEC §12): one self-contained page — inline CSS, SVG and
//! JavaScript, nothing fetched when it is viewed — with the dependency graph laid out by
//! level and coloured by status, a timeline of the steps, their fan-out children and
//! every retry attempt, and each step's arguments, result or error on click.
//!
//! ```
//! use tdsl::Trace;
//! let trace = Trace::from_json(r#"{"format": "tdsl-trace/2", "run_id": "run-1", "tool": "main.tool",
//!   "arguments": {}, "status": "SUCCESS", "started_at": "2026-01-01T00:00:00.000Z",
//!   "ended_at": "2026-01-01T00:00:00.010Z", "duration_ms": 10, "total_retries": 0,
//!   "circuit_breaker_trips": 0, "max_in_flight": 1, "step_results": [
//!     {"step_id": "a", "tool": "/t.tool", "status": "COMPLETED", "duration_ms": 10,
//!      "started_ms": 0, "ended_ms": 10}]}"#).unwrap();
//! let page = tdsl::testing::report::html(&trace, None);
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! assert!(page.contains(r#"data-step="a""#));
//! ```
//!
//! What the page embeds of each value is bounded ([`EMBED_STRING_BYTES`] per string,
//! [`EMBED_VALUE_BYTES`] per value, [`EMBED_DEPTH`] levels): a cut says what it left out
//! and the full size, so a trace holding a 100 MB string still gives a page of a few
//! hundred KiB.
//!
//! The graph needs the composite's dependencies, which a trace does not hold:
//! [`Graph::of`] takes them from the checked plan. Without one, steps are laid out in the
//! order they started, one per column.

use std::fmt::Write as _;

use serde_json::json;

use crate::analysis::Plan;
use crate::exec::{Attempt, Outcome, StepStatus, StepTrace, Trace};

/// The dependency graph of a composite's top-level steps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// Each step: its `execution_id`, its level, and the steps it depends on.
    pub nodes: Vec<(String, usize, Vec<String>)>,
}

impl Graph {
    /// The graph of a checked plan.
    pub fn of(plan: &Plan) -> Graph {
        let name = |id: crate::analysis::StepId| plan.steps[id.0].execution_id.to_string();
        Graph {
            nodes: plan
                .steps
                .iter()
                .map(|s| (s.execution_id.to_string(), s.level, s.depends_on.iter().map(|d| name(*d)).collect()))
                .collect(),
        }
    }
}

/// The tool a composition's run is recorded under (`tdsl compose`, SPEC §14).
pub(crate) const COMPOSITION_TOOL: &str = "compose";

/// A composition's phases, in the order they run.
pub(crate) const PHASES: [&str; 4] = ["decompose", "plan", "execute", "synthesize"];

/// Whether `trace` is a composition's (as `CompositionResult::phases_trace` makes it): tool
/// `compose`, a `query` among its arguments, and steps that are phases (the plan's steps
/// are inside `execute`).
pub fn is_composition(trace: &Trace) -> bool {
    trace.tool == COMPOSITION_TOOL
        && query_of(trace).is_some()
        && trace.steps.iter().all(|s| PHASES.contains(&s.execution_id.as_str()))
}

/// A composition's query: its `query` argument, or, when the history kept the arguments cut
/// (a query past `--history-payload-bytes`: `{"$tdsl_cut": {"prefix": "{\"query\":\"…", …}}`,
/// `docs/history.md`), as much of it as the cut's prefix holds.
fn query_of(trace: &Trace) -> Option<std::borrow::Cow<'_, str>> {
    let arguments = trace.arguments.as_object()?;
    if let Some(q) = arguments.get("query") {
        return q.as_str().map(std::borrow::Cow::Borrowed);
    }
    let prefix = arguments.get("$tdsl_cut")?.as_object()?.get("prefix")?.as_str()?;
    let text = prefix.strip_prefix(r#"{"query":""#)?;
    // The string ends at its first quote that is not escaped, or where the prefix ends, an
    // escape cut in two included: the longest start of it that reads as a string's content.
    let mut end = text.len();
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    (0..=end.min(12)).find_map(|back| {
        let start = text.get(..end - back)?;
        serde_json::from_str::<String>(&format!("\"{start}\"")).ok().map(std::borrow::Cow::Owned)
    })
}

impl Graph {
    /// The graph of the plan a composition ran, from its `plan` phase's result (seed 000's
    /// `ExecutionPlan`: `parallel_groups` are the levels, each step's `depends_on_steps` its
    /// edges); `None` when the composition has no plan.
    pub fn of_composition(trace: &Trace) -> Option<Graph> {
        let plan = trace.steps.iter().find(|s| s.execution_id == "plan")?.result.as_ref()?;
        let plan = serde_json::to_value(plan).ok()?;
        let groups = plan.get("parallel_groups")?.as_array()?;
        let level = |id: &str| {
            groups.iter().position(|g| g.as_array().is_some_and(|g| g.iter().any(|x| x.as_str() == Some(id))))
        };
        let nodes = plan
            .get("steps")?
            .as_array()?
            .iter()
            .filter_map(|s| {
                let id = s.get("step_id")?.as_str()?;
                let deps = s
                    .get("depends_on_steps")
                    .and_then(serde_json::Value::as_array)
                    .map(|d| d.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                Some((id.to_string(), level(id)?, deps))
            })
            .collect();
        Some(Graph { nodes })
    }
}

/// Escapes text for HTML and SVG.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (a terminal's escape sequences, NUL) as their visible
            // pictures (`␛`, `␀`): the page shows what the text holds, and a page printed to
            // a terminal cannot drive it.
            c @ ('\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}') => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'))
            }
            '\u{7f}' => out.push('\u{2421}'),
            c => out.push(c),
        }
    }
    out
}

fn status_class(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Completed => "completed",
        StepStatus::Failed => "failed",
        StepStatus::Timeout => "timeout",
        StepStatus::Skipped => "skipped",
        StepStatus::Cancelled => "cancelled",
        StepStatus::Pending | StepStatus::Running => "running",
    }
}

fn outcome_class(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "completed",
        Outcome::Transient | Outcome::Permanent => "failed",
        Outcome::Timeout | Outcome::Deadline => "timeout",
        Outcome::Refused | Outcome::Cancelled => "cancelled",
    }
}

/// One row of the timeline: a step, a child or a nested step.
struct Row<'t> {
    path: String,
    depth: usize,
    status: StepStatus,
    started_ms: Option<u64>,
    ended_ms: Option<u64>,
    attempts: &'t [Attempt],
}

/// Every step's details (by path) and the timeline's rows, in trace order.
fn collect<'t>(
    steps: &'t [StepTrace],
    prefix: &str,
    depth: usize,
    rows: &mut Vec<Row<'t>>,
    details: &mut serde_json::Map<String, serde_json::Value>,
) {
    for s in steps {
        let path = format!("{prefix}{}", s.execution_id);
        // A transform step (SPEC §6.4 ext) calls no tool: it says so instead.
        let tool = if s.is_transform_step() { json!(null) } else { json!(s.tool) };
        details.insert(
            path.clone(),
            json!({
                "path": path, "tool": tool, "transform_step": s.is_transform_step(), "status": s.status.as_str(), "reason": s.reason,
                "error": s.error.as_deref().map(embed_text), "arguments": s.arguments.as_ref().map(embed),
                "result": s.result.as_ref().map(embed),
                "started_at": s.started_at, "duration_ms": s.duration_ms, "retry_count": s.retry_count,
                "attempts": embed_attempts(&s.attempts),
                "children": s.children.as_ref().map(Vec::len),
            }),
        );
        rows.push(Row {
            path: path.clone(),
            depth,
            status: s.status,
            started_ms: s.started_ms,
            ended_ms: s.ended_ms,
            attempts: &s.attempts,
        });
        for c in s.children.iter().flatten() {
            let cpath = format!("{path}[{}]", c.index);
            details.insert(
                cpath.clone(),
                json!({
                    "path": cpath, "tool": s.tool, "status": c.status.as_str(),
                    "error": c.error.as_deref().map(embed_text), "arguments": c.arguments.as_ref().map(embed),
                    "result": c.result.as_ref().map(embed), "duration_ms": c.duration_ms,
                    "attempts": embed_attempts(&c.attempts),
                }),
            );
            rows.push(Row {
                path: cpath.clone(),
                depth: depth + 1,
                status: c.status,
                started_ms: c.started_ms,
                ended_ms: c.ended_ms,
                attempts: &c.attempts,
            });
            if let Some(nested) = &c.steps {
                collect(nested, &format!("{cpath}/"), depth + 2, rows, details);
            }
        }
        if let Some(nested) = &s.steps {
            collect(nested, &format!("{path}/"), depth + 1, rows, details);
        }
    }
}

/// The most bytes of one string the page embeds; a longer one is cut (at a character
/// boundary) and ends with a note giving its full size.
pub(crate) const EMBED_STRING_BYTES: usize = 8 << 10;

/// The most bytes of one value (a step's arguments, result, an attempt's response) the page
/// embeds, over all its strings, keys and numbers; past it, the rest of a list or object is
/// one note saying how many items were left out.
pub(crate) const EMBED_VALUE_BYTES: usize = 64 << 10;

/// The deepest a value embedded in the page nests; a list or object deeper is a note.
pub(crate) const EMBED_DEPTH: usize = 32;

/// `text` as the page embeds it: whole, or its first [`EMBED_STRING_BYTES`] and a note.
fn embed_text(text: &str) -> String {
    cut(text, EMBED_STRING_BYTES)
}

/// `text`, or its first `max` bytes (at a character boundary) and a note with its size.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [truncated: {} bytes in all, the first {end} shown]", &text[..end], text.len())
}

/// A value as the page embeds it: bounded per string, in all, and in depth (each cut is
/// noted with what was left out), so that a page stays small whatever the trace holds.
fn embed(v: &crate::value::Value) -> serde_json::Value {
    let mut left = EMBED_VALUE_BYTES;
    embed_in(v, 0, &mut left)
}

fn embed_in(v: &crate::value::Value, depth: usize, left: &mut usize) -> serde_json::Value {
    use crate::value::Value;
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => {
            *left = left.saturating_sub(8);
            J::from(*i)
        }
        Value::Float(f) => {
            *left = left.saturating_sub(8);
            serde_json::Number::from_f64(*f).map_or(J::Null, J::Number)
        }
        Value::Str(s) => {
            let text = cut(s, (*left).min(EMBED_STRING_BYTES));
            *left = left.saturating_sub(text.len());
            J::String(text)
        }
        Value::List(l) if depth >= EMBED_DEPTH => {
            J::String(format!("[a list of {} items nested deeper than {EMBED_DEPTH} levels: not shown]", l.len()))
        }
        Value::Object(o) if depth >= EMBED_DEPTH => {
            J::String(format!("[an object of {} keys nested deeper than {EMBED_DEPTH} levels: not shown]", o.len()))
        }
        Value::List(l) => {
            let mut out = Vec::new();
            for (i, x) in l.iter().enumerate() {
                if *left == 0 {
                    out.push(J::String(format!("[{} more items of {} not shown]", l.len() - i, l.len())));
                    break;
                }
                out.push(embed_in(x, depth + 1, left));
            }
            J::Array(out)
        }
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (i, (k, x)) in o.iter().enumerate() {
                if *left == 0 {
                    out.insert(
                        "…".to_string(),
                        J::String(format!("[{} more keys of {} not shown]", o.len() - i, o.len())),
                    );
                    break;
                }
                let key = cut(k, (*left).min(EMBED_STRING_BYTES));
                *left = left.saturating_sub(key.len());
                out.insert(key, embed_in(x, depth + 1, left));
            }
            J::Object(out)
        }
    }
}

/// Attempts as the page embeds them: responses and errors bounded as values are.
fn embed_attempts(attempts: &[Attempt]) -> serde_json::Value {
    attempts
        .iter()
        .map(|a| {
            json!({
                "attempt": a.attempt, "outcome": a.outcome, "response": a.response.as_ref().map(embed),
                "error": a.error.as_deref().map(embed_text), "delay_ms": a.delay_ms,
                "started_ms": a.started_ms, "duration_ms": a.duration_ms,
            })
        })
        .collect()
}

const NODE_W: u64 = 180;
const NODE_H: u64 = 48;
const COL_W: u64 = 240;
const ROW_H: u64 = 68;

/// The dependency graph of `steps` as SVG: one column per level, nodes coloured by status;
/// each node's `data-step` is `prefix` and its id (the path the details are under).
fn graph_svg(steps: &[StepTrace], prefix: &str, graph: Option<&Graph>) -> String {
    // (id, level, depends_on) for every step the trace has.
    let nodes: Vec<(String, usize, Vec<String>)> = match graph {
        Some(g) => g.nodes.iter().filter(|(id, ..)| steps.iter().any(|s| s.execution_id == id)).cloned().collect(),
        None => {
            let mut order: Vec<&StepTrace> = steps.iter().collect();
            order.sort_by_key(|s| s.started_ms.unwrap_or(u64::MAX));
            order.iter().enumerate().map(|(i, s)| (s.execution_id.to_string(), i, Vec::new())).collect()
        }
    };
    let mut pos: std::collections::HashMap<&str, (u64, u64)> = std::collections::HashMap::new();
    let mut per_level: Vec<u64> = Vec::new();
    for (id, level, _) in &nodes {
        if per_level.len() <= *level {
            per_level.resize(level + 1, 0);
        }
        let x = 20 + *level as u64 * COL_W;
        let y = 20 + per_level[*level] * ROW_H;
        per_level[*level] += 1;
        pos.insert(id, (x, y));
    }
    let width = 40 + per_level.len() as u64 * COL_W;
    let height = 40 + per_level.iter().max().copied().unwrap_or(1) * ROW_H;
    let mut svg = format!(
        r#"<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="dependency graph">"#
    );
    for (id, _, deps) in &nodes {
        let Some(&(x, y)) = pos.get(id.as_str()) else { continue };
        for d in deps {
            if let Some(&(dx, dy)) = pos.get(d.as_str()) {
                let (x1, y1, x2, y2) = (dx + NODE_W, dy + NODE_H / 2, x, y + NODE_H / 2);
                let mid = (x1 + x2) / 2;
                let _ = write!(svg, r#"<path class="edge" d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"/>"#);
            }
        }
    }
    for (id, _, _) in &nodes {
        let (Some(&(x, y)), Some(step)) = (pos.get(id.as_str()), steps.iter().find(|s| s.execution_id == id)) else {
            continue;
        };
        let status = step.status.as_str();
        let extra = match &step.children {
            Some(c) => format!(" · {} children", c.len()),
            None if step.is_transform_step() => " · transform".to_string(),
            None if step.retry_count > 0 => format!(" · {} retries", step.retry_count),
            None => String::new(),
        };
        let _ = write!(
            svg,
            r#"<g class="node {cls}" data-step="{path}" data-status="{status}" tabindex="0"><title>{p}: {status}</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/><text x="{tx}" y="{ty1}" class="name">{p}</text><text x="{tx}" y="{ty2}" class="sub">{status}{extra}</text></g>"#,
            cls = status_class(step.status),
            path = esc(&format!("{prefix}{id}")),
            p = esc(id),
            tx = x + 10,
            ty1 = y + 20,
            ty2 = y + 38,
            extra = esc(&extra),
        );
    }
    svg.push_str("</svg>");
    svg
}

const PHASE_W: u64 = 200;
const PHASE_H: u64 = 86;
const PHASE_GAP: u64 = 44;

/// A composition's four phases as SVG, left to right: each with its status, duration, model
/// requests and the tokens the provider reported (the plan's repair rounds; the plan run's
/// steps for `execute`); a phase that never started is drawn dashed.
fn phases_svg(trace: &Trace) -> String {
    let n = PHASES.len() as u64;
    let width = 40 + n * PHASE_W + (n - 1) * PHASE_GAP;
    let height = 40 + PHASE_H;
    let mut svg = format!(
        r#"<svg id="phases" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="the composition's phases">"#
    );
    let y = 20;
    for (i, phase) in PHASES.iter().enumerate() {
        let x = 20 + i as u64 * (PHASE_W + PHASE_GAP);
        if i > 0 {
            let (x1, x2, ym) = (x - PHASE_GAP, x - 2, y + PHASE_H / 2);
            let _ = write!(
                svg,
                r#"<path class="edge" d="M{x1},{ym} L{x2},{ym}"/><path class="arrow" d="M{x2},{ym} l-7,-4 l0,8 z"/>"#
            );
        }
        let (tx, l1, l2, l3, l4) = (x + 10, y + 20, y + 38, y + 56, y + 74);
        let Some(step) = trace.steps.iter().find(|s| s.execution_id == *phase) else {
            let _ = write!(
                svg,
                r#"<g class="phase node notrun" data-phase="{phase}" data-status="NOT STARTED"><title>{phase}: not started</title><rect x="{x}" y="{y}" width="{PHASE_W}" height="{PHASE_H}" rx="6"/><text x="{tx}" y="{l1}" class="name">{phase}</text><text x="{tx}" y="{l2}" class="sub">not started</text></g>"#
            );
            continue;
        };
        let args = step.arguments.as_ref().and_then(|a| serde_json::to_value(a).ok()).unwrap_or_default();
        let num = |k: &str| args.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let (tokens_in, tokens_out) = (num("input_tokens"), num("output_tokens"));
        let (third, fourth) = if *phase == "execute" {
            let steps = step.steps.as_deref().unwrap_or(&[]);
            let ok = steps.iter().filter(|s| s.status == StepStatus::Completed).count() as u64;
            (
                format!("{} · {ok} completed", plural(steps.len() as u64, "step", "steps")),
                plural(u64::from(trace.total_retries), "retry", "retries"),
            )
        } else {
            let requests = plural(num("requests"), "request", "requests");
            let fourth = if *phase == "plan" {
                format!("{} · {requests}", plural(num("repair_rounds"), "repair round", "repair rounds"))
            } else {
                requests
            };
            (format!("tokens: {tokens_in} in, {tokens_out} out"), fourth)
        };
        let status = step.status.as_str();
        let _ = write!(
            svg,
            r#"<g class="phase node {cls}" data-step="{phase}" data-phase="{phase}" data-status="{status}" data-duration-ms="{ms}" data-input-tokens="{tokens_in}" data-output-tokens="{tokens_out}" tabindex="0"><title>{phase}: {status}, {ms} ms</title><rect x="{x}" y="{y}" width="{PHASE_W}" height="{PHASE_H}" rx="6"/><text x="{tx}" y="{l1}" class="name">{phase}</text><text x="{tx}" y="{l2}" class="sub">{status} · {ms} ms</text><text x="{tx}" y="{l3}" class="sub">{third}</text><text x="{tx}" y="{l4}" class="sub">{fourth}</text></g>"#,
            cls = status_class(step.status),
            ms = step.duration_ms,
            third = esc(&third),
            fourth = esc(&fourth),
        );
    }
    svg.push_str("</svg>");
    svg
}

const LABEL_W: u64 = 220;
const BAR_W: u64 = 760;
const LANE_H: u64 = 22;

/// The timeline as SVG: a lane per step, child and nested step; its span, and a mark per
/// attempt (retries in their outcome's colour).
fn timeline_svg(trace: &Trace, rows: &[Row<'_>]) -> String {
    let total = rows.iter().filter_map(|r| r.ended_ms).max().unwrap_or(0).max(trace.duration_ms).max(1);
    let scale = |ms: u64| LABEL_W + (u128::from(ms) * u128::from(BAR_W) / u128::from(total)) as u64;
    let height = 30 + rows.len() as u64 * LANE_H;
    let width = LABEL_W + BAR_W + 20;
    let mut svg = format!(
        r#"<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="timeline">"#
    );
    let _ = write!(
        svg,
        r#"<text x="{LABEL_W}" y="14" class="axis">0 ms</text><text x="{end}" y="14" class="axis" text-anchor="end">{total} ms</text>"#,
        end = LABEL_W + BAR_W
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 22 + i as u64 * LANE_H;
        let _ = write!(
            svg,
            r#"<g class="lane {cls}" data-step="{p}" data-status="{status}"><text x="{lx}" y="{ty}" class="label">{p}</text>"#,
            cls = status_class(r.status),
            p = esc(&r.path),
            status = r.status.as_str(),
            lx = 4 + r.depth as u64 * 12,
            ty = y + 14,
        );
        if let (Some(s), Some(e)) = (r.started_ms, r.ended_ms) {
            let (x1, x2) = (scale(s), scale(e));
            let _ = write!(
                svg,
                r#"<rect class="span" x="{x1}" y="{y1}" width="{w}" height="14" rx="3"><title>{p}: {status}, {d} ms</title></rect>"#,
                y1 = y + 3,
                w = x2.saturating_sub(x1).max(2),
                p = esc(&r.path),
                status = r.status.as_str(),
                d = e.saturating_sub(s),
            );
        }
        for a in r.attempts {
            let (x1, x2) = (scale(a.started_ms), scale(a.started_ms.saturating_add(a.duration_ms)));
            let _ = write!(
                svg,
                r#"<rect class="attempt {cls}" x="{x1}" y="{y1}" width="{w}" height="6"><title>attempt {n}: {o:?}, {d} ms</title></rect>"#,
                cls = outcome_class(a.outcome),
                y1 = y + 14,
                w = x2.saturating_sub(x1).max(2),
                n = a.attempt,
                o = a.outcome,
                d = a.duration_ms,
            );
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

const STYLE: &str = r#"
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #fafbfc; }
body { margin: 24px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #4a5263; margin: 0 0 8px; }
.badge { display: inline-block; padding: 2px 8px; border-radius: 10px; color: #fff; font-weight: 600; }
.scroll { overflow-x: auto; background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 8px; }
.node rect { stroke: #1d2330; stroke-width: 1; cursor: pointer; }
.node text { pointer-events: none; fill: #fff; } .node .name { font-weight: 600; font-size: 13px; } .node .sub { font-size: 11px; }
.node.selected rect, .lane.selected .span { stroke: #111; stroke-width: 3; }
.edge { fill: none; stroke: #7a8294; stroke-width: 1.5; }
.lane { cursor: pointer; } .lane .label { font-size: 12px; fill: #1d2330; } .axis { font-size: 11px; fill: #6b7280; }
.completed rect, .completed .span, .attempt.completed, .badge.completed { fill: #2e9d5b; background: #2e9d5b; }
.failed rect, .failed .span, .attempt.failed, .badge.failed { fill: #d64545; background: #d64545; }
.timeout rect, .timeout .span, .attempt.timeout, .badge.timeout { fill: #e08a1e; background: #e08a1e; }
.skipped rect, .skipped .span, .badge.skipped { fill: #8d94a0; background: #8d94a0; }
.cancelled rect, .cancelled .span, .attempt.cancelled, .badge.cancelled { fill: #b8bcc4; background: #b8bcc4; }
.running rect, .running .span, .badge.running { fill: #3a6fd8; background: #3a6fd8; }
.notrun rect { fill: #fff; stroke-dasharray: 5 4; cursor: default; } .node.notrun text { fill: #6b7280; }
.arrow { fill: #7a8294; }
.lane .span { opacity: 0.55; } .attempt { opacity: 1; }
table { border-collapse: collapse; background: #fff; } td, th { border: 1px solid #dde1e7; padding: 4px 8px; text-align: left; font-size: 13px; }
tr[data-step] { cursor: pointer; }
#details { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 8px; white-space: pre-wrap; font: 12px ui-monospace, monospace; min-height: 40px; }
"#;

/// Records the page's own errors where a reader (or a test) sees them. Runs first.
const GUARD_JS: &str = r#"window.tdslErrors = [];
function tdslError(message) {
  window.tdslErrors.push(String(message));
  document.documentElement.setAttribute("data-errors", window.tdslErrors.join(" | "));
}
window.addEventListener("error", function (e) { tdslError(e.message); });
(function () {
  var original = console.error;
  console.error = function () { tdslError(Array.prototype.join.call(arguments, " ")); original.apply(console, arguments); };
})();"#;

const MAIN_JS: &str = r#"(function () {
  var data = JSON.parse(document.getElementById("tdsl-data").textContent);
  var details = document.getElementById("details");
  var title = document.getElementById("details-title");
  function select(path) {
    var d = data.steps[path];
    if (!d) { return; }
    document.querySelectorAll(".selected").forEach(function (el) { el.classList.remove("selected"); });
    document.querySelectorAll("[data-step]").forEach(function (el) {
      if (el.getAttribute("data-step") === path) { el.classList.add("selected"); }
    });
    title.textContent = path + " — " + d.status;
    details.textContent = JSON.stringify(d, null, 2);
  }
  document.querySelectorAll("[data-step]").forEach(function (el) {
    el.addEventListener("click", function () { select(el.getAttribute("data-step")); });
    el.addEventListener("keydown", function (e) { if (e.key === "Enter") { select(el.getAttribute("data-step")); } });
  });
  if (data.first) { select(data.first); }
  document.documentElement.setAttribute("data-ready", "1");
})();"#;

/// The report of `trace`: a complete HTML document. `graph` lays the steps out by level
/// (see [`Graph::of`]).
///
/// A composition's trace ([`is_composition`]) gets its four phases drawn above the graph of
/// the plan it ran (the steps inside `execute`, laid out by `graph` or else by
/// [`Graph::of_composition`]).
pub fn html(trace: &Trace, graph: Option<&Graph>) -> String {
    let composition = is_composition(trace);
    // The steps the graph draws: the plan's for a composition.
    let (graphed, prefix): (&[StepTrace], &str) = if composition {
        let execute = trace.steps.iter().find(|s| s.execution_id == "execute");
        (execute.and_then(|s| s.steps.as_deref()).unwrap_or(&[]), "execute/")
    } else {
        (&trace.steps, "")
    };
    let own = if composition && graph.is_none() { Graph::of_composition(trace) } else { None };
    // A definition changed since the run may not have its steps: the start order then.
    let graph =
        graph.or(own.as_ref()).filter(|g| graphed.iter().all(|s| g.nodes.iter().any(|(id, ..)| id == s.execution_id)));
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    collect(&trace.steps, "", 0, &mut rows, &mut details);
    // Selected at first: the failing step, else the first one.
    let first = trace
        .error
        .as_ref()
        .and_then(|e| e.step.clone())
        .filter(|s| details.contains_key(s))
        .or_else(|| rows.first().map(|r| r.path.clone()));
    let data = json!({ "steps": details, "first": first });
    // `<` escaped: the JSON cannot close its script element.
    let data = serde_json::to_string(&data).unwrap_or_default().replace('<', "\\u003c");
    let status = trace.status.as_str();
    let cls = match trace.status {
        crate::exec::RunStatus::Success => "completed",
        crate::exec::RunStatus::Partial => "skipped",
        crate::exec::RunStatus::Failed => "failed",
        crate::exec::RunStatus::Timeout => "timeout",
    };
    let mut table = String::new();
    for r in &rows {
        let d = &details[&r.path];
        let _ = write!(
            table,
            r#"<tr data-step="{p}" data-status="{s}"><td>{p}</td><td><span class="badge {c}">{s}</span></td><td>{t}</td><td>{ms}</td><td>{a}</td></tr>"#,
            p = esc(&r.path),
            s = r.status.as_str(),
            c = status_class(r.status),
            t = match d["tool"].as_str() {
                Some(tool) => esc(tool),
                None if d["transform_step"] == json!(true) => "<em>transform step</em>".to_string(),
                None => String::new(),
            },
            ms = r.ended_ms.zip(r.started_ms).map_or(String::new(), |(e, s)| format!("{} ms", e.saturating_sub(s))),
            a = r.attempts.len(),
        );
    }
    let error = trace
        .error
        .as_ref()
        .map_or(String::new(), |e| format!(r#"<p class="meta">error: {}</p>"#, esc(&embed_text(&e.to_string()))));
    let note = if composition && graphed.is_empty() {
        let ended = match trace.steps.last() {
            Some(s) => format!("the composition ended in its `{}` phase", esc(&s.execution_id)),
            None => "the composition ended before its first phase".to_string(),
        };
        format!(r#"<p class="meta" id="no-plan">The plan never ran: {ended}.</p>"#)
    } else if graph.is_none() {
        r#"<p class="meta">The composite's definition was not available: steps are laid out in the order they started.</p>"#
            .to_string()
    } else {
        String::new()
    };
    let drawn = if composition && graphed.is_empty() {
        String::new()
    } else {
        format!(r#"<div class="scroll">{}</div>"#, graph_svg(graphed, prefix, graph))
    };
    let top = if composition {
        let query = query_of(trace).unwrap_or_default();
        let model = trace.arguments.as_object().and_then(|a| a.get("model")).and_then(|q| q.as_str()).unwrap_or("");
        format!(
            r#"<p class="meta" id="query">query: {q} · model {m}</p>
<h2>Phases</h2>
<div class="scroll">{phases}</div>
<h2>Plan graph</h2>
{note}
{drawn}"#,
            q = esc(&embed_text(&query)),
            m = esc(&embed_text(model)),
            phases = phases_svg(trace),
        )
    } else {
        format!("<h2>Dependency graph</h2>\n{note}\n{drawn}")
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tdsl run {run_id} — {tool}</title>
<style>{STYLE}</style>
<script>{GUARD_JS}</script>
</head>
<body>
<h1>{tool} <span class="badge {cls}" id="run-status">{status}</span></h1>
<p class="meta">run {run_id} · started {started} · {duration} ms · {retries} retries · {trips} breaker trips</p>
{error}
{top}
<h2>Timeline</h2>
<div class="scroll">{timeline}</div>
<h2>Steps</h2>
<table id="steps"><thead><tr><th>step</th><th>status</th><th>tool</th><th>duration</th><th>attempts</th></tr></thead><tbody>{table}</tbody></table>
<h2 id="details-title">Details</h2>
<pre id="details">Click a step for its arguments, result or error.</pre>
<script type="application/json" id="tdsl-data">{data}</script>
<script>{MAIN_JS}</script>
</body>
</html>
"#,
        run_id = esc(&trace.run_id),
        tool = esc(&trace.tool),
        started = esc(&trace.started_at),
        duration = trace.duration_ms,
        retries = trace.total_retries,
        trips = trace.circuit_breaker_trips,
        timeline = timeline_svg(trace, &rows),
    )
}
