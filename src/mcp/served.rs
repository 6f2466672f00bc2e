//! One served tool and a call of it: its arguments (defaults filled in, checked against its
//! input schema), its run (a composite through the engine, a primitive through the host
//! runner, its answer checked against its declared `responses`), and the `tools/call`
//! result or tool error. The plan and skill tools answer in the same shapes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use crate::exec::{CancelToken, Executor, Observer, RunStatus, Runner, ToolCall, Workflow};
use crate::export::validate_arguments;
use crate::host::HostRunner;
use crate::tool::{ToolDef, ToolKind};
use crate::value::Value;

/// One tool the server offers.
#[derive(Debug)]
pub struct Served {
    /// Its MCP name.
    pub name: String,
    /// Its tool path under the root (`/tools/main.tool`).
    pub tool_path: String,
    /// Its file.
    pub file: PathBuf,
    /// Its definition.
    pub def: ToolDef,
    /// Its MCP `Tool` object.
    pub tool: Json,
}

/// The runner of what `serve` runs for a client: tools started with `env`, and what a
/// failed `mcp:` or upstream server last wrote on its standard error written on `serve`'s
/// own (the operator's log), never put in what the client reads; each tool output read as
/// at most `max_values` values (`serve --max-tool-values`), the outputs of the run it is made
/// for at most `ranges::RUN_VALUES_FACTOR` times that in all.
pub(super) fn host_runner(env: &crate::host::ToolEnv, max_values: usize) -> HostRunner {
    HostRunner::new()
        .with_env(env.clone())
        .with_max_values(max_values)
        .for_one_run()
        .with_stderr_tails(crate::host::StderrTails::Logged)
}

/// The bounds of every served call: a composite's run has the plans' per-run budgets, takes
/// its memory from the pool the plans' runs share, and stops at the deadline (`TIMEOUT`); every
/// answer's text is at most `max_result_bytes` bytes.
#[derive(Clone, Debug)]
pub(super) struct ServedLimits {
    pub(super) max_calls_per_run: usize,
    pub(super) max_result_bytes: usize,
    pub(super) max_run_fuel: u64,
    pub(super) max_run_memory: u64,
    pub(super) pool: crate::runtime::MemoryPool,
    pub(super) deadline: std::time::Duration,
}

impl Default for ServedLimits {
    fn default() -> ServedLimits {
        let plans = crate::plans::PlanLimits::default();
        ServedLimits {
            max_calls_per_run: plans.max_calls_per_run,
            max_result_bytes: plans.max_result_bytes,
            max_run_fuel: plans.max_run_fuel,
            max_run_memory: plans.max_run_memory,
            pool: crate::runtime::MemoryPool::new(crate::ranges::SERVE_MEMORY_IN_FLIGHT),
            deadline: std::time::Duration::from_secs_f64(plans.deadline_seconds),
        }
    }
}

impl ServedLimits {
    /// The guards of a served composite's run.
    pub(super) fn guards(&self) -> crate::exec::Guards {
        crate::exec::Guards::new()
            .max_calls_per_run(self.max_calls_per_run)
            .max_result_bytes(self.max_result_bytes)
            .max_run_fuel(self.max_run_fuel)
            .max_run_memory(self.max_run_memory)
            .shared_memory(self.pool.clone())
    }
}

/// The result of a call, in the `tools/call` result shape.
pub(super) fn call_served(
    root: &Path,
    served: &Served,
    arguments: Json,
    cancel: &CancelToken,
    observer: Option<Arc<dyn Observer>>,
    host: HostRunner,
    limits: &ServedLimits,
) -> Json {
    let arguments = with_defaults(&served.def, arguments);
    if let Err(why) = validate_arguments(&served.def, &arguments) {
        return tool_error(format!("invalid arguments for `{}`: {why}", served.name));
    }
    let args: Value = match serde_json::from_value(arguments) {
        Ok(v) => v,
        Err(e) => return tool_error(format!("invalid arguments for `{}`: {e}", served.name)),
    };
    match &served.def.kind {
        ToolKind::Composite { .. } => {
            let workflow = match Workflow::load(root, &served.file) {
                Ok(w) => w,
                Err(e) => return tool_error(format!("`{}` cannot run: {e}", served.tool_path)),
            };
            let options = crate::exec::Options {
                guards: limits.guards(),
                deadline: Some(limits.deadline),
                ..crate::exec::Options::default()
            };
            let mut executor = Executor::new(host).with_options(options);
            if let Some(o) = observer {
                executor = executor.with_observer(o);
            }
            let run = match executor.run_cancellable(&workflow, args, cancel) {
                Ok(r) => r,
                Err(refused) => return tool_error(format!("refused before the run: {refused} [{}]", refused.code())),
            };
            match (run.status, run.result) {
                (RunStatus::Success | RunStatus::Partial, Some(result)) => success(&result, limits.max_result_bytes),
                (status, _) => {
                    let why = run.error.map_or_else(|| "no reason recorded".to_string(), |e| e.to_string());
                    tool_error(format!("{}: {why}", status.as_str()))
                }
            }
        }
        ToolKind::Primitive { .. } => {
            let call = ToolCall {
                tool_path: &served.tool_path,
                definition: Some(&served.def),
                file: Some(&served.file),
                arguments: &args,
                cancel,
                timeout: None,
                attempt: 1,
            };
            match host.call(&call) {
                Ok(_) | Err(_) if cancel.is_cancelled() => tool_error(format!("`{}` was cancelled", served.tool_path)),
                // Checked against its declared `responses` as a run checks a step's answer.
                Ok(v) => match check_primitive_response(served, &v) {
                    Ok(()) => success(&v, limits.max_result_bytes),
                    Err(why) => {
                        tool_error(format!("FAILED: {why} [{}]", crate::diagnostic::Code::ResponseInvalid.as_str()))
                    }
                },
                // The runner's message already names the tool path.
                Err(e) => tool_error(format!("FAILED: {e}")),
            }
        }
    }
}

/// A primitive tool's answer against its declared `responses`, by the check a run makes of
/// a step's answer (`E0802`): the message when it does not match.
fn check_primitive_response(served: &Served, result: &Value) -> Result<(), String> {
    let tool = crate::exec::Tool::Primitive { def: Arc::new(served.def.clone()), file: served.file.clone() };
    crate::exec::data::check_response(Some(&tool), &served.tool_path, result)
}

/// The arguments with each declared `default` put in where the key is absent or `null`, as a
/// run does (`docs/tool-format.md`), so that a primitive tool receives them too.
pub(super) fn with_defaults(def: &ToolDef, arguments: Json) -> Json {
    let Json::Object(mut map) = arguments else { return arguments };
    for p in &def.arguments {
        let Some(d) = crate::tool::validate::default_of(p) else { continue };
        let name = p.name.node.as_str();
        if map.get(name).is_none_or(Json::is_null) {
            if let Ok(v) = serde_json::to_value(d) {
                map.insert(name.to_string(), v);
            }
        }
    }
    Json::Object(map)
}

/// The answer of a call that succeeded: the result as compact JSON in the text block,
/// written straight from the engine's values, and as `structuredContent` when it is an
/// object; a tool error (`E0817`) when that text is over `max_result_bytes` bytes.
pub(super) fn success(result: &Value, max_result_bytes: usize) -> Json {
    let text = match crate::value::to_json_at_most(result, max_result_bytes) {
        Some(t) => t,
        None => {
            return tool_error(format!(
                "FAILED: the result exceeds the output limit of {max_result_bytes} bytes [{}]",
                crate::diagnostic::Code::ResultTooLarge.as_str()
            ))
        }
    };
    // structuredContent must be an object (MCP): other values are left to the text.
    super::spliced::answer(text, matches!(result, Value::Object(_)), false)
}

/// A tool error answer (`isError`), as every tool of the server gives one.
pub(super) use super::spliced::tool_error;
