//! Data flow inside one composite: REFs (SPEC §2), values with REFs at any depth,
//! conditions (§6.2) and transform blocks in their exact order (§3).
//!
//! Everything here is a pure function of the plan and the values already produced; it
//! never calls a tool and never waits.

use std::cell::OnceCell;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::clock::{ClockScope, LazyScope};
use super::{ChildTrace, RunError, RunStatus, StepStatus, StepTrace, Tool};
use crate::analysis::{
    ConditionPlan, DoneCheckPlan, ParallelPlan, Plan, RefContext, RefPlan, StepId, StepPlan, TransformPlan, ValuePlan,
};
use crate::diagnostic::Code;
use crate::runtime::EvalError;
use crate::tool::validate::{self, Side};
use crate::tool::{Logic, Operator};
use crate::value::{cmp_numbers, Map, SmolStr, Value};

/// A failure inside a step, before or after the call: what the trace and the run's error
/// report.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StepError {
    pub code: Code,
    pub message: String,
}

impl StepError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> StepError {
        StepError { code, message: message.into() }
    }

    fn eval(what: &str, e: &EvalError) -> StepError {
        StepError { code: e.code, message: format!("{what}: {e}") }
    }
}

/// A step before its call: skipped (by its conditions or its `done_check`), or the arguments
/// to call its tool with. The local scheduler and the Temporal interpreter both start a step
/// with [`StepEnv::prelude`] and end it with [`StepEnv::respond`].
pub(crate) enum Prelude {
    /// No call: why (`conditions` or `done`) and the step's result.
    Skipped { reason: &'static str, result: Value },
    /// The resolved arguments, after `transform_arguments`.
    Call(Map),
}

/// `what: message`, for an error of one part of a step.
fn within(what: &str) -> impl Fn(StepError) -> StepError + '_ {
    move |e| StepError { message: format!("{what}: {}", e.message), ..e }
}

/// What REFs and expressions in one place of a composite can see.
pub(crate) struct StepEnv<'a> {
    pub plan: &'a Plan,
    /// `REF:arguments`: the composite's arguments after its own `transform_arguments`.
    pub arguments: &'a Value,
    /// Step results by [`StepId`]: set once a step has ended (`null` when skipped).
    pub results: &'a [OnceLock<Value>],
    /// The steps whose results expressions may name (the step's dependencies; every step
    /// for the tool-level blocks).
    pub visible: Visible<'a>,
    /// `REF:response`, inside `transform_responses`.
    pub response: Option<&'a Value>,
    /// The REF contexts as one object, for programs: built on first use.
    refs: OnceCell<Value>,
}

/// Which step results an [`StepEnv`] exposes to programs.
#[derive(Clone, Copy)]
pub(crate) enum Visible<'a> {
    /// These steps.
    Steps(&'a [StepId]),
    /// Every step of the plan.
    All,
}

impl<'a> StepEnv<'a> {
    pub(crate) fn new(
        plan: &'a Plan,
        arguments: &'a Value,
        results: &'a [OnceLock<Value>],
        visible: Visible<'a>,
    ) -> Self {
        StepEnv { plan, arguments, results, visible, response: None, refs: OnceCell::new() }
    }

    /// The same view with `REF:response` bound.
    pub(crate) fn with_response(&self, response: &'a Value) -> StepEnv<'a> {
        StepEnv { response: Some(response), refs: OnceCell::new(), ..*self }
    }

    fn result(&self, id: StepId) -> Value {
        self.results.get(id.0).and_then(OnceLock::get).cloned().unwrap_or_default()
    }

    /// The REF contexts object programs evaluate against: `arguments`, the visible steps
    /// by execution id, and `response` when bound.
    pub(crate) fn refs(&self) -> &Value {
        self.refs.get_or_init(|| {
            let mut m = Map::default();
            m.insert(SmolStr::new("arguments"), self.arguments.clone());
            let mut add = |id: StepId| {
                if let Some(s) = self.plan.steps.get(id.0) {
                    let result = self.result(id);
                    // `expected_key` names the same result (seed 002, SPEC §5).
                    if let Some(key) = &s.expected_key {
                        m.insert(SmolStr::new(&**key), result.clone());
                    }
                    m.insert(SmolStr::new(&*s.execution_id), result);
                }
            };
            match self.visible {
                Visible::Steps(ids) => ids.iter().copied().for_each(&mut add),
                Visible::All => (0..self.plan.steps.len()).map(StepId).for_each(&mut add),
            }
            if let Some(r) = self.response {
                m.insert(SmolStr::new("response"), r.clone());
            }
            Value::object(m)
        })
    }

    /// A REF's value, keeping its type (SPEC §2).
    pub(crate) fn resolve_ref(&self, r: &RefPlan) -> Result<Value, StepError> {
        let start = match r.context {
            RefContext::Arguments => self.arguments.clone(),
            RefContext::Response => self.response.cloned().unwrap_or_default(),
            RefContext::Step(id) => self.result(id),
        };
        match start.walk_ref(&r.segments) {
            Ok(v) => Ok(v.into_owned()),
            Err((at, e)) => Err(StepError::new(
                Code::RuntimeType,
                format!(
                    "`{}` cannot be resolved: `.{}` cannot be read from {:#}",
                    self.ref_text(r),
                    r.segments.get(at).map_or("", |s| &**s),
                    e.found
                ),
            )),
        }
    }

    /// A REF as written: `REF:scan.files.0`.
    pub(crate) fn ref_text(&self, r: &RefPlan) -> String {
        let mut s = String::from("REF:");
        match r.context {
            RefContext::Arguments => s.push_str("arguments"),
            RefContext::Response => s.push_str("response"),
            RefContext::Step(id) => s.push_str(self.plan.steps.get(id.0).map_or("?", |st| &*st.execution_id)),
        }
        for seg in &r.segments {
            s.push('.');
            s.push_str(seg);
        }
        s
    }

    /// A value with its REFs (and, in `variables`, its call-strings) resolved, at any depth.
    pub(crate) fn resolve(&self, v: &ValuePlan) -> Result<Value, StepError> {
        match v {
            ValuePlan::Literal(v) => Ok(v.clone()),
            ValuePlan::Ref(r) => self.resolve_ref(r),
            ValuePlan::Call(p) => p.eval_with(&Value::Null, self.refs()).map_err(|e| StepError::eval(p.source(), &e)),
            ValuePlan::List(items) => Ok(Value::list(items.iter().map(|i| self.resolve(i)).collect::<Result<_, _>>()?)),
            ValuePlan::Object(entries) => {
                let mut m = Map::with_capacity_and_hasher(entries.len(), Default::default());
                for (k, p) in entries {
                    m.insert(SmolStr::new(k), self.resolve(p)?);
                }
                Ok(Value::object(m))
            }
        }
    }

    /// `arguments` as written, resolved.
    pub(crate) fn resolve_entries(&self, entries: &[(Arc<str>, ValuePlan)]) -> Result<Map, StepError> {
        let mut m = Map::with_capacity_and_hasher(entries.len(), Default::default());
        for (k, p) in entries {
            m.insert(SmolStr::new(k), self.resolve(p)?);
        }
        Ok(m)
    }

    /// Whether every condition holds (an empty list holds).
    pub(crate) fn all_hold(&self, conditions: &[ConditionPlan]) -> Result<bool, StepError> {
        for c in conditions {
            if !self.holds(c)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One condition; groups short-circuit.
    pub(crate) fn holds(&self, c: &ConditionPlan) -> Result<bool, StepError> {
        match c {
            ConditionPlan::Group { logic: Logic::And, conditions, .. } => self.all_hold(conditions),
            ConditionPlan::Group { logic: Logic::Or, conditions, .. } => {
                for c in conditions {
                    if self.holds(c)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            ConditionPlan::Group { logic: Logic::Not, conditions, .. } => Ok(!self.all_hold(conditions)?),
            ConditionPlan::Leaf { param, operator, value, .. } => {
                let p = self.resolve(param)?;
                let v = match value {
                    Some(v) => self.resolve(v)?,
                    None => Value::Null,
                };
                compare(*operator, &p, &v).map_err(|m| StepError::new(Code::RuntimeType, m))
            }
        }
    }

    /// Runs a transform block on `target` (SPEC §3): variables resolved in order, laid over
    /// a copy of `target` to make the context; each transform evaluated in order against
    /// the context, its result written to `target` and to the context.
    pub(crate) fn transform(&self, t: &TransformPlan, target: &mut Map, block: &str) -> Result<(), StepError> {
        let mut context = target.clone();
        for (k, p) in &t.variables {
            let v =
                self.resolve(p).map_err(|e| StepError { message: format!("variable `{k}`: {}", e.message), ..e })?;
            context.insert(SmolStr::new(k), v);
        }
        let mut context = Value::object(context);
        for (k, program) in &t.transforms {
            let out = program
                .eval_with(&context, self.refs())
                .map_err(|e| StepError::eval(&format!("{block} `{k}` (`{}`)", program.source()), &e))?;
            target.insert(SmolStr::new(k), out.clone());
            if let Value::Object(m) = &mut context {
                Arc::make_mut(m).insert(SmolStr::new(k), out);
            }
        }
        Ok(())
    }
}

/// A condition operator applied to `param` and `value` (SPEC §6.2).
pub(crate) fn compare(op: Operator, p: &Value, v: &Value) -> Result<bool, String> {
    use std::cmp::Ordering::*;
    let numeric = |want: &[std::cmp::Ordering]| -> Result<bool, String> {
        match (p, v) {
            (Value::Null, _) | (_, Value::Null) => Ok(false),
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => Ok(want.contains(&cmp_numbers(p, v))),
            _ => Err(format!("`{op}` compares numbers, and got {:#} and {:#}", p.kind(), v.kind())),
        }
    };
    match op {
        Operator::Equals => Ok(p == v),
        Operator::NotEquals => Ok(p != v),
        Operator::Exists => Ok(!p.is_null()),
        Operator::NotExists => Ok(p.is_null()),
        Operator::GreaterThan => numeric(&[Greater]),
        Operator::LessThan => numeric(&[Less]),
        Operator::GreaterThanOrEquals => numeric(&[Greater, Equal]),
        Operator::LessThanOrEquals => numeric(&[Less, Equal]),
        Operator::Contains => member(v, p, op),
        Operator::In => member(p, v, op),
        Operator::StartsWith | Operator::EndsWith => match (p, v) {
            (Value::Null, _) | (_, Value::Null) => Ok(false),
            (Value::Str(a), Value::Str(b)) => {
                Ok(if op == Operator::StartsWith { a.starts_with(&**b) } else { a.ends_with(&**b) })
            }
            _ => Err(format!("`{op}` compares strings, and got {:#} and {:#}", p.kind(), v.kind())),
        },
    }
}

/// Whether `needle` is in `haystack`: an element of a list, a substring of a string, a key
/// of an object. A `null` haystack holds nothing.
fn member(needle: &Value, haystack: &Value, op: Operator) -> Result<bool, String> {
    match haystack {
        Value::Null => Ok(false),
        Value::List(items) => Ok(items.iter().any(|i| i == needle)),
        Value::Str(s) => match needle {
            Value::Str(n) => Ok(s.contains(&**n)),
            Value::Null => Ok(false),
            other => Err(format!("`{op}` looks for a string in a string, and got {other:#}", other = other.kind())),
        },
        Value::Object(m) => match needle {
            Value::Str(k) => Ok(m.contains_key(&**k)),
            Value::Null => Ok(false),
            other => Err(format!("`{op}` looks for a key in an object, and got {other:#}", other = other.kind())),
        },
        other => Err(format!("`{op}` needs a list, a string or an object, and got {other:#}", other = other.kind())),
    }
}

/// Why a step, a call or a composite failed: what its trace and the run's error say. The
/// local scheduler and the Temporal interpreter both fail with it, and a fan-out chunk's
/// child workflow hands its children's failures back as it is serialized (its code as its
/// string, `E0803`), so a field added here travels with no other change.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Failure {
    #[serde(with = "code_text")]
    pub(crate) code: Code,
    /// The step path where it happened (a child's or a nested step's, when deeper).
    pub(crate) step: Option<String>,
    pub(crate) message: String,
    /// A timeout (the step's or the run's deadline) rather than an error.
    pub(crate) timeout: bool,
    /// Not a failure of its own: the call never started because another step had failed
    /// while it waited for a slot (its step is CANCELLED, fail-fast).
    pub(crate) cancelled: bool,
}

/// A [`Failure`]'s code as it travels: its string; one this build does not know reads as
/// `E0803` (the tool failed).
mod code_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::diagnostic::Code;

    pub(super) fn serialize<S: Serializer>(code: &Code, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(code.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Code::parse(&text).unwrap_or(Code::ToolFailed))
    }
}

impl Failure {
    /// A failure with `code` at step path `key`.
    pub(crate) fn new(key: &str, code: Code, message: String) -> Failure {
        Failure { code, step: Some(key.to_string()), message, timeout: false, cancelled: false }
    }

    /// A step's own error, at step path `key`.
    pub(crate) fn at(key: &str, e: StepError) -> Failure {
        Failure::new(key, e.code, e.message)
    }

    /// The host (or Temporal) cancelled the run while `key` ran or waited.
    pub(crate) fn run_cancelled(key: &str) -> Failure {
        Failure::new(key, Code::RunCancelled, "the run was cancelled".to_string())
    }

    /// The run's deadline of `secs` passed while `key` ran or waited.
    pub(crate) fn run_deadline(key: &str, secs: f64) -> Failure {
        Failure {
            timeout: true,
            ..Failure::new(key, Code::RunDeadline, format!("the run's deadline of {secs} s passed"))
        }
    }

    /// The call at `key` never started, for `why` (fail-fast: another step failed).
    pub(crate) fn not_started(key: &str, why: String) -> Failure {
        Failure { cancelled: true, ..Failure::new(key, Code::RunCancelled, why) }
    }

    /// Why a step that has not started does not start, this failure being the frame's.
    pub(crate) fn cancel_reason(&self) -> String {
        match &self.step {
            Some(s) => format!("step `{s}` failed"),
            None if self.code == Code::RunCancelled => "the run was cancelled".to_string(),
            None if self.code == Code::RunDeadline => "the run's deadline passed".to_string(),
            None if self.code == Code::TooManyCalls => "the run reached its limit of calls".to_string(),
            None => "the run failed before this step".to_string(),
        }
    }

    /// Whether it stops the run whatever `continue_on_error` says: a limit of the run's own
    /// (its calls), which another step could only pass again.
    pub(crate) fn stops_run(&self) -> bool {
        self.code == Code::TooManyCalls
    }

    /// As the run's error.
    pub(crate) fn to_run_error(&self) -> RunError {
        RunError { code: self.code.as_str().to_string(), step: self.step.clone(), message: self.message.clone() }
    }
}

/// What a composite produced.
pub(crate) struct FrameOutcome {
    pub(crate) result: Result<Value, Failure>,
    pub(crate) partial: bool,
    pub(crate) steps: Vec<StepTrace>,
    pub(crate) clock_reads: Vec<i64>,
}

impl FrameOutcome {
    /// The run's end from its root frame: its status, result or error, steps and the
    /// clock reads of its own transforms.
    pub(crate) fn into_run(self) -> RunEnd {
        let status = match &self.result {
            Ok(_) if self.partial => RunStatus::Partial,
            Ok(_) => RunStatus::Success,
            Err(f) if f.timeout => RunStatus::Timeout,
            Err(_) => RunStatus::Failed,
        };
        let (result, error) = match self.result {
            Ok(v) => (Some(v), None),
            Err(f) => (None, Some(f.to_run_error())),
        };
        RunEnd { status, result, error, steps: self.steps, clock_reads: self.clock_reads }
    }
}

/// How a run ended, for its trace.
pub(crate) struct RunEnd {
    pub(crate) status: RunStatus,
    pub(crate) result: Option<Value>,
    pub(crate) error: Option<RunError>,
    pub(crate) steps: Vec<StepTrace>,
    pub(crate) clock_reads: Vec<i64>,
}

impl RunEnd {
    /// A result past `max_bytes` of compact JSON is no result: the run fails saying so
    /// (`E0817`), before anything (a trace, an MCP answer, standard output) writes it out.
    /// Both engines end a run through this.
    pub(crate) fn bound_result(mut self, max_bytes: usize) -> RunEnd {
        if let Some(Err(too_large)) = self.result.as_ref().map(|r| super::guard::check_result(r, max_bytes)) {
            self.status = RunStatus::Failed;
            self.result = None;
            self.error = Some(RunError {
                code: Code::ResultTooLarge.as_str().to_string(),
                step: None,
                message: too_large.to_string(),
            });
        }
        self
    }
}

/// The run's own arguments against what its composite declares (checked like a callee's).
pub(crate) fn refuse_run_arguments(wf: &super::Workflow, arguments: &Value) -> Option<Failure> {
    let declared = &wf.plan().tool.arguments;
    validate::check(declared, arguments, Side::Arguments, wf.name())
        .err()
        .map(|m| Failure { step: None, ..Failure::new("", Code::ArgumentInvalid, m) })
}

/// What one call (with its retries) produced.
pub(crate) struct CallOutcome {
    pub(crate) result: Result<Value, Failure>,
    pub(crate) attempts: Vec<super::Attempt>,
    pub(crate) nested: Option<Vec<StepTrace>>,
    pub(crate) nested_clock_reads: Vec<i64>,
    pub(crate) partial: bool,
}

impl CallOutcome {
    /// A call that failed before any attempt.
    pub(crate) fn failed(f: Failure) -> CallOutcome {
        CallOutcome {
            result: Err(f),
            attempts: Vec::new(),
            nested: None,
            nested_clock_reads: Vec::new(),
            partial: false,
        }
    }

    /// Whether a composite callee at `key` may start: its arguments against its declaration,
    /// and its nesting `depth` (of the frame calling it) within `max_depth`.
    pub(crate) fn composite_refusal(
        key: &str,
        tool_path: &str,
        plan: &Plan,
        args: &Value,
        depth: usize,
        max_depth: usize,
    ) -> Option<CallOutcome> {
        if let Err(m) = validate::check(&plan.tool.arguments, args, Side::Arguments, tool_path) {
            return Some(CallOutcome::failed_at(key, Code::ArgumentInvalid, m));
        }
        (depth + 1 > max_depth).then(|| {
            // The step path (`top/inner/…`) is the chain of calls: said once, here, and not
            // again by every composite it fails through (`of_composite`).
            let message = format!(
                "`{tool_path}` at step `{key}` would nest composites {} deep, past the limit of {max_depth} (`--max-nesting`)",
                depth + 1
            );
            CallOutcome::failed_at(key, Code::CompositeTooDeep, message)
        })
    }

    /// A composite callee's call, from its frame: a failure names the callee (and the step
    /// inside it that failed).
    pub(crate) fn of_composite(tool_path: &str, out: FrameOutcome) -> CallOutcome {
        let result = out.result.map_err(|f| Failure {
            message: match &f.step {
                // Its message names the whole chain already.
                _ if f.code == Code::CompositeTooDeep => f.message.clone(),
                Some(s) => format!("`{tool_path}` failed at step `{s}`: {}", f.message),
                None => format!("`{tool_path}` failed: {}", f.message),
            },
            ..f
        });
        CallOutcome {
            result,
            attempts: Vec::new(),
            nested: Some(out.steps),
            nested_clock_reads: out.clock_reads,
            partial: out.partial,
        }
    }

    /// A call that failed before any attempt, with `code` at step path `key`.
    pub(crate) fn failed_at(key: &str, code: Code, message: String) -> CallOutcome {
        CallOutcome::failed(Failure::new(key, code, message))
    }
}

/// Why a call with the optional argument `name` null is not made (`E0801`): the tool's
/// schema does not allow null, and left out the argument could mean "any" (outside round
/// 11, finding 4). `element`: the null is a fan-out's element, its child's argument.
pub(crate) fn null_refused(name: &str, element: bool) -> String {
    let fix = if element {
        "leave the nulls out of the list (`filter(array=…, condition_string=\"item != null\")` in a transform step)"
    } else {
        "give it a value with `default(…)` in `transform_arguments`, or run the step only when it is there (a condition `exists`)"
    };
    format!(
        "argument `{name}` is null, which the tool's schema does not allow; the call was not made (left out, it could mean \"any\"): {fix}"
    )
}

/// The failure of a fan-out's child whose argument `name` would be `item`, null, when the
/// tool's schema does not allow null there (`non_null`): it fails before the call, as a step
/// does, rather than sending null.
pub(crate) fn refused_child(key: &str, name: &str, non_null: bool, item: &Value) -> Option<CallOutcome> {
    (non_null && item.is_null()).then(|| CallOutcome::failed_at(key, Code::ArgumentInvalid, null_refused(name, true)))
}

/// A plain step's (or child's) result: the response when it is an object, else
/// `{"response": value}` (SPEC §6.4).
pub(crate) fn wrap(raw: &Value) -> Arc<Map> {
    match raw {
        // Shared, not copied: a step with no `transform_responses` keeps the answer's map.
        Value::Object(m) => Arc::clone(m),
        other => {
            let mut m = Map::default();
            m.insert(SmolStr::new("response"), other.clone());
            Arc::new(m)
        }
    }
}

/// What a step that failed under `continue_on_error` leaves for REFs.
pub(crate) fn failed_result(message: &str) -> Value {
    Value::object_from([("status", Value::str("failed")), ("error_message", Value::str(message))])
}

/// The arguments a callee declares.
pub(crate) fn declared_arguments(tool: Option<&Tool>) -> &[crate::tool::Param] {
    match tool {
        Some(Tool::Composite { plan }) => &plan.tool.arguments,
        Some(Tool::Primitive { def, .. }) => &def.arguments,
        _ => &[],
    }
}

/// How a step that ran ended, for its frame.
pub(crate) enum Settled {
    /// Its value, for REFs.
    Value(Value),
    /// It failed under `continue_on_error`: the value REFs see, and the run is PARTIAL.
    Partial(Value),
    /// It failed (or the run was cancelled while it ran): the frame fails with it.
    Failed(Failure),
}

/// A step's outcome written into its trace (SPEC §6.5): its `output_path` taken from a
/// result it produced, its status, result, error or reason. `outcome`'s failures are the
/// run's own already (a deadline or a cancel that stopped an expression);
/// `deadline_passed` says the run's deadline passed (a timeout then fails the run even
/// under `continue_on_error`); `not_started` is why a call that never started did not.
pub(crate) fn settle(
    step: &StepPlan,
    key: &str,
    outcome: Result<Value, Failure>,
    tr: &mut StepTrace,
    deadline_passed: bool,
    not_started: impl FnOnce() -> String,
) -> Settled {
    // `output_path` (SPEC §5) is taken last, from a result the step produced (not from a
    // skipped step's `null` or `done_value`).
    let outcome = match (outcome, &step.output_path) {
        (Ok(v), Some(path)) if tr.status == StepStatus::Running => crate::analysis::plan::value_at(&v, path)
            .map_err(|message| Failure::new(key, Code::ResponseInvalid, message)),
        (outcome, _) => outcome,
    };
    match outcome {
        Ok(v) => {
            if tr.status == StepStatus::Running {
                tr.status = StepStatus::Completed;
            }
            tr.result = Some(v.clone());
            Settled::Value(v)
        }
        Err(f) if f.cancelled => {
            // It waited for a slot while another step failed: it never ran.
            tr.status = StepStatus::Cancelled;
            tr.reason = Some(not_started());
            Settled::Value(Value::Null)
        }
        Err(f) if f.code == Code::RunCancelled => {
            // Stopped by the host (a signal, an MCP cancel, Temporal) while it ran: it did
            // not fail on its own, it was cancelled; the run's failure is still E0813.
            tr.status = StepStatus::Cancelled;
            tr.reason = Some(f.message.clone());
            Settled::Failed(f)
        }
        Err(f) => {
            tr.status = if f.timeout { StepStatus::Timeout } else { StepStatus::Failed };
            tr.error = Some(f.message.clone());
            if step.continue_on_error && !(f.timeout && deadline_passed) && !f.stops_run() {
                let v = failed_result(&f.message);
                tr.result = Some(v.clone());
                Settled::Partial(v)
            } else {
                Settled::Failed(f)
            }
        }
    }
}

/// A fan-out child's checked answer written into its trace (a child keeps its callee's
/// answer as returned: a list stays a list, SPEC §6.3). A child that failed on its own is
/// `FAILED` or `TIMEOUT` (what fail-fast reads, `step::FailFast`); one that never started
/// stays `CANCELLED`, and so does one the run's cancellation stopped, with its message.
pub(crate) fn settle_child(ct: &mut ChildTrace, checked: Result<Value, Failure>) -> Result<Value, Failure> {
    match checked {
        Ok(raw) => {
            ct.status = StepStatus::Completed;
            ct.result = Some(raw.clone());
            Ok(raw)
        }
        Err(f) if f.cancelled => Err(f),
        // The host (or Temporal) cancelled the run while the child ran: cancelled, not failed.
        Err(f) if f.code == Code::RunCancelled => {
            ct.error = Some(f.message.clone());
            Err(f)
        }
        Err(f) => {
            ct.status = if f.timeout { StepStatus::Timeout } else { StepStatus::Failed };
            ct.error = Some(f.message.clone());
            Err(f)
        }
    }
}

/// A parallel step's children gathered, in input order: their traces, and the step's list
/// of responses or its failure — the lowest index that failed on its own, whatever the
/// order children ended in; else a cancelled child's. Under `continue_on_error` a child
/// that failed on its own (not cancelled, not stopped by the run's deadline) leaves
/// `{"status": "failed", …}` in the list, and the bool says the run became PARTIAL.
pub(crate) fn gather_children(
    outs: impl IntoIterator<Item = (ChildTrace, Result<Value, Failure>)>,
    continue_on_error: bool,
    deadline_passed: bool,
) -> (Vec<ChildTrace>, Result<Vec<Value>, Failure>, bool) {
    let outs = outs.into_iter();
    // Sized up front: a wide fan-out's traces are large, and growing copies them. The
    // upper bound: the children's slots, of which only a missing one would be filtered out.
    let n = match outs.size_hint() {
        (_, Some(most)) => most,
        (least, None) => least,
    };
    let (mut traces, mut values, mut partial) = (Vec::with_capacity(n), Vec::with_capacity(n), false);
    let mut first_failure: Option<Failure> = None;
    let mut cancelled: Option<Failure> = None;
    for (i, (ct, out)) in outs.enumerate() {
        match out {
            Ok(v) => values.push(v),
            Err(f) if f.cancelled => {
                // Cancelled children give way to a child's own failure, if any.
                if cancelled.is_none() {
                    cancelled = Some(f);
                }
                values.push(Value::Null);
            }
            Err(f) if continue_on_error && f.code != Code::RunCancelled && !deadline_passed && !f.stops_run() => {
                partial = true;
                values.push(failed_result(&f.message));
            }
            Err(f) => {
                if first_failure.is_none() {
                    first_failure = Some(match ct.status {
                        StepStatus::Cancelled => f,
                        _ => Failure { message: format!("child {i}: {}", f.message), ..f },
                    });
                }
                values.push(Value::Null);
            }
        }
        traces.push(ct);
    }
    match first_failure.or(cancelled) {
        Some(f) => (traces, Err(f), partial),
        None => (traces, Ok(values), partial),
    }
}

/// A composite's arguments after its own `transform_arguments` (SPEC §6.4), inside `clock`.
pub(crate) fn frame_arguments(plan: &Plan, arguments: Value, clock: &Arc<ClockScope>) -> Result<Value, StepError> {
    let Some(t) = &plan.transform_arguments else { return Ok(arguments) };
    let mut map = arguments.as_object().cloned().unwrap_or_default();
    let env = StepEnv::new(plan, &arguments, &[], Visible::Steps(&[]));
    clock.enter(|| env.transform(t, &mut map, "transform_arguments"))?;
    Ok(Value::object(map))
}

/// A primitive callee's answer against its declared `responses`: the message when it does
/// not match (a composite callee checked its own result).
pub(crate) fn check_response(tool: Option<&Tool>, tool_path: &str, result: &Value) -> Result<(), String> {
    let Some(Tool::Primitive { def, .. }) = tool else { return Ok(()) };
    validate::check(&def.responses, result, Side::Responses, tool_path)
}

impl<'a> StepEnv<'a> {
    /// A step up to its call (SPEC §6.2, §6.3): its conditions, its arguments, its
    /// `done_check` (and `done_value`), its `transform_arguments`. Expressions run inside
    /// `clock`.
    pub(crate) fn prelude(&self, step: &StepPlan, clock: &LazyScope<'_>) -> Result<Prelude, StepError> {
        // No conditions hold at once: no scope to open (most steps have none).
        if !step.conditions.is_empty()
            && !clock.enter(|| self.all_hold(&step.conditions)).map_err(within("conditions"))?
        {
            return Ok(Prelude::Skipped { reason: "conditions", result: Value::Null });
        }
        let mut args = self.resolve_entries(&step.arguments).map_err(within("arguments"))?;
        if let Some(check) = &step.done_check {
            let done = clock.enter(|| match check {
                DoneCheckPlan::Conditions(cs) => self.all_hold(cs),
                DoneCheckPlan::Expression(p) => p
                    .eval_with(&Value::object(args.clone()), self.refs())
                    .map(|v| v.truthy())
                    .map_err(|e| StepError::new(e.code, format!("{}: {e}", p.source()))),
            });
            if done.map_err(within("done_check"))? {
                let result = match &step.done_value {
                    Some(v) => self.resolve(v).map_err(within("done_value"))?,
                    None => Value::Null,
                };
                return Ok(Prelude::Skipped { reason: "done", result });
            }
        }
        if let Some(t) = &step.transform_arguments {
            clock.enter(|| self.transform(t, &mut args, "transform_arguments"))?;
        }
        // An optional argument whose schema does not allow null is neither sent null nor left
        // out (which can widen the call): the step fails before the call.
        if let Some(name) = step.non_null_optional.iter().find(|n| args.get(&***n).is_some_and(Value::is_null)) {
            return Err(StepError::new(Code::ArgumentInvalid, null_refused(name, false)));
        }
        Ok(Prelude::Call(args))
    }

    /// A composite's result (SPEC §6.4): its `response_reference_map` (or every step's
    /// result, by step order), then its own `transform_responses`, inside `clock`.
    pub(crate) fn composite_result(&self, clock: &Arc<ClockScope>) -> Result<Value, StepError> {
        let plan = self.plan;
        let mut out = Map::default();
        match &plan.response_map {
            Some(map) => {
                for (k, r) in map {
                    out.insert(SmolStr::new(k), self.resolve_ref(r)?);
                }
            }
            None => {
                let mut by_index: Vec<&StepPlan> = plan.steps.iter().collect();
                by_index.sort_by_key(|s| s.index);
                for s in by_index {
                    let result = self.results.get(s.id.0).and_then(|r| r.get()).cloned().unwrap_or_default();
                    out.insert(SmolStr::new(&*s.execution_id), result);
                }
            }
        }
        if let Some(t) = &plan.transform_responses {
            let raw = Value::object(out.clone());
            let env = StepEnv { response: Some(&raw), refs: OnceCell::new(), ..*self };
            clock.enter(|| env.transform(t, &mut out, "transform_responses"))?;
        }
        Ok(Value::object(out))
    }

    /// A parallel step's items (`null` is none), at most `max` of them.
    pub(crate) fn fan_out_items(&self, par: &ParallelPlan, max: usize, key: &str) -> Result<Arc<[Value]>, StepError> {
        let items = match &self.resolve(&par.iterate_over).map_err(within("iterate_over"))? {
            Value::List(l) => l.clone(),
            Value::Null => Arc::from(Vec::new()),
            other => {
                return Err(StepError::new(
                    Code::IterateOverNotListAtRun,
                    format!("`iterate_over` must be a list, and it is {:#}", other.kind()),
                ))
            }
        };
        if items.len() > max {
            return Err(StepError::new(
                Code::FanOutTooWide,
                format!("step `{key}` fans out to {} children, more than the maximum of {max}", items.len()),
            ));
        }
        Ok(items)
    }

    /// A step after its call: `transform_responses` over the call's `raw` answer and the
    /// `result` made of it, inside `clock`.
    pub(crate) fn respond(
        &self,
        step: &StepPlan,
        clock: &LazyScope<'_>,
        raw: &'a Value,
        result: Arc<Map>,
    ) -> Result<Value, StepError> {
        let Some(t) = &step.transform_responses else { return Ok(Value::Object(result)) };
        let mut result = Arc::unwrap_or_clone(result);
        let env = self.with_response(raw);
        clock.enter(|| env.transform(t, &mut result, "transform_responses"))?;
        Ok(Value::object(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn operators() {
        assert!(compare(Operator::Equals, &v("1"), &v("1.0")).unwrap());
        assert!(compare(Operator::In, &v("\"b\""), &v(r#"["a", "b"]"#)).unwrap());
        assert!(compare(Operator::In, &v("\"ell\""), &v("\"hello\"")).unwrap());
        assert!(compare(Operator::Contains, &v(r#"{"k": 1}"#), &v("\"k\"")).unwrap());
        assert!(!compare(Operator::GreaterThan, &v("null"), &v("1")).unwrap());
        assert!(compare(Operator::GreaterThanOrEquals, &v("2"), &v("2.0")).unwrap());
        assert!(compare(Operator::GreaterThan, &v("\"a\""), &v("1")).is_err());
        assert!(compare(Operator::EndsWith, &v("\"report.md\""), &v("\".md\"")).unwrap());
        assert!(compare(Operator::NotExists, &v("null"), &Value::Null).unwrap());
    }
}
