//! The step core: what a composite, a step, a call and a fan-out child are, for every engine
//! that runs them. It owns no thread, no future and no clock: a driver (`scheduler.rs` on a
//! thread pool, `temporal/interp.rs` in a workflow) does the I/O — it runs the calls, waits,
//! spawns — and asks the core at each turn what comes next, handing it what happened.
//!
//! A step's life is a short state machine, the same in both drivers:
//!
//! ```text
//! Frame::start ──▶ Start::Cancelled (the frame failed, or the run stopped: nothing runs)
//!      │
//!      ▼
//! StepRun::next ──▶ Next::Done (skipped, a transform step, or an expression failed) ──┐
//!      │                                                                              │
//!      ├──▶ Next::Call(args)   driver: Site::callee, the attempts ─▶ called ──────────┤
//!      └──▶ Next::FanOut       driver: per child ChildRun::start … end ─▶ fanned_out ─┤
//!                                                                                     ▼
//!                                                                             StepRun::end ─▶ Ended
//! ```
//!
//! What the core needs from its driver — the time, whether the run must stop, the options —
//! it reads through [`Driver`], as a sans-I/O protocol takes `now` as an argument: the
//! driver decides where time comes from (the run's `Time`, the workflow task's clock, a
//! recording). The one deliberate difference between the engines is a constant of that
//! trait: [`Driver::TIMEOUT_BOUNDS_EXPRESSIONS`].

use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::clock::{ClockScope, LazyScope};
use super::data::{
    self, declared_arguments, wrap, CallOutcome, Failure, FrameOutcome, Prelude, Settled, StepEnv, Visible,
};
use super::retry::RetryPolicy;
use super::trace::{ChildTrace, Outcome, StepStatus, StepTrace};
use super::workflow::{Tool, Workflow};
use crate::analysis::{Plan, StepId, StepPlan};
use crate::diagnostic::Code;
use crate::tool::validate::{self, Side};
use crate::tool::ToolDef;
use crate::value::{Map, SmolStr, Value};

/// What the step core asks of the engine that drives it.
pub(crate) trait Driver {
    /// Whether a step's `timeout_seconds` bounds the evaluation of its expressions.
    ///
    /// Locally it does: an expression the step's timeout stops is the step's timeout
    /// (`E0804`, SPEC §6.5). On Temporal it does not: workflow code may not stop on a clock
    /// of its own (what it does must follow from the history alone), so there the fuel
    /// bounds expressions (`Limits::fuel`) and the timeout bounds each activity. This is
    /// the one place that difference is decided.
    const TIMEOUT_BOUNDS_EXPRESSIONS: bool;

    /// Whether a step's clock scope is made when the step starts. On Temporal it is: its
    /// time is the workflow task's when the step starts, fixed for the step. Locally the
    /// scope reads the run's clock whenever an expression asks, so it is made the first
    /// time one runs (most steps run none).
    const CLOCK_AT_START: bool = false;

    /// A step's timeout when it sets none.
    fn default_timeout_seconds(&self) -> f64;
    /// The retry policy of `step`'s calls.
    fn retry_policy(&self, step: &StepPlan) -> RetryPolicy;
    /// The most children a fan-out may have.
    fn max_fan_out(&self) -> usize;
    /// Milliseconds since the run started.
    fn now_rel(&self) -> u64;
    /// The wall-clock time `rel_ms` into the run, as RFC 3339.
    fn wall_at(&self, rel_ms: u64) -> SmolStr;
    /// Whether the run must stop: its deadline passed or it was cancelled. Once true, it
    /// stays true.
    fn deadline_passed(&self) -> bool;
    /// Whether the run was seen to stop (without looking at the clock again).
    fn deadline_hit(&self) -> bool;
    /// Whether the run was cancelled (by the host, or from Temporal).
    fn cancelled(&self) -> bool;
    /// The run's deadline in seconds (0 when it has none).
    fn deadline_seconds(&self) -> f64;
    /// The clock scope of `key`'s expressions; `eval_timeout` bounds each evaluation in it
    /// (only given when [`Self::TIMEOUT_BOUNDS_EXPRESSIONS`]).
    fn clock(&self, key: &str, eval_timeout: Option<f64>) -> Arc<ClockScope>;
    /// A callee's answer was refused by its declared `responses` (an observer may hear of it).
    fn response_rejected(&self, _key: &str, _message: &str) {}
    /// The run's count of calls against its limit (`--max-calls-per-run`): one per run,
    /// whatever the driver, so that both engines stop at the same call.
    fn calls(&self) -> &CallBudget;

    /// Why the run stopped, charged to `key`.
    fn stop_failure(&self, key: &str) -> Failure {
        if self.cancelled() {
            return Failure::run_cancelled(key);
        }
        if self.calls().exhausted() {
            return Failure::too_many_calls(key, self.calls().limit);
        }
        Failure::run_deadline(key, self.deadline_seconds())
    }
}

/// The calls a run may still make: every call of a callee (a step's, each fan-out child's,
/// a composite callee's, each of its steps') takes one before it starts ([`Site::callee`]).
/// Once one is refused the run stops as at its deadline: nothing else starts, and the run
/// fails with `E0816` (a driver's `deadline_passed` says so).
#[derive(Debug)]
pub(crate) struct CallBudget {
    /// The calls this budget may take.
    max: usize,
    /// The run's limit, as an error names it (`max`, but for a share of a run's budget).
    pub(crate) limit: usize,
    taken: AtomicUsize,
    exhausted: AtomicBool,
}

impl CallBudget {
    /// A run of at most `max` calls.
    pub(crate) fn new(max: usize) -> CallBudget {
        CallBudget::share(max, max)
    }

    /// `max` calls of a run whose limit is `limit` (on Temporal, what a fan-out chunk's
    /// child workflow was lent of its run's budget).
    pub(crate) fn share(max: usize, limit: usize) -> CallBudget {
        CallBudget { max, limit, taken: AtomicUsize::new(0), exhausted: AtomicBool::new(false) }
    }

    /// One more call, or `false` when the run has made `max` (it is then exhausted).
    fn take(&self) -> bool {
        // Counting up past `max` is harmless (a usize of calls never wraps), and keeps this
        // one atomic add on the path of every call.
        if self.taken.fetch_add(1, Ordering::Relaxed) < self.max {
            return true;
        }
        self.exhausted.store(true, Ordering::SeqCst);
        false
    }

    /// Whether a call was refused: the run must stop.
    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::SeqCst)
    }

    /// The calls still to be had (none once exhausted).
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn left(&self) -> usize {
        if self.exhausted() {
            return 0;
        }
        self.max.saturating_sub(self.taken.load(Ordering::SeqCst))
    }

    /// Takes `n` calls at once, for someone else to make (the Temporal engine lends them to
    /// a fan-out chunk's child workflow); at most [`CallBudget::left`].
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn lend(&self, n: usize) -> usize {
        let n = n.min(self.left());
        self.taken.fetch_add(n, Ordering::SeqCst);
        n
    }

    /// Gives back `n` calls lent and not made.
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn give_back(&self, n: usize) {
        let _ = self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| Some(t.saturating_sub(n)));
    }

    /// The calls were used up elsewhere (by a chunk the calls were lent to): the run stops.
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn exhaust(&self) {
        // All taken: a later `take` is refused as past the limit.
        self.taken.fetch_max(self.max, Ordering::SeqCst);
        self.exhausted.store(true, Ordering::SeqCst);
    }

    /// The calls taken so far, at most `max`.
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst).min(self.max)
    }
}

/// One composite being run (the root, or a callee): its arguments, its steps' results and
/// traces as they end, and its failures. It is `Sync` (once-cells and atomics), so the
/// local driver shares it between threads; the Temporal driver uses it from one thread.
pub(crate) struct Frame<'p> {
    plan: &'p Plan,
    /// The prefix of its steps' paths: `""`, or `outer/` inside a callee.
    prefix: String,
    depth: usize,
    arguments: Value,
    results: Vec<OnceLock<Value>>,
    /// Boxed: a step's trace is large, and moves from where the step starts to here.
    traces: Vec<OnceLock<Box<StepTrace>>>,
    /// Of each step, how many of its dependencies have not ended.
    pending: Vec<AtomicUsize>,
    dependents: &'p [Vec<StepId>],
    /// The first failure seen: once set, no step or call starts (fail-fast).
    failure: OnceLock<Failure>,
    /// Every failure, by the failing step's position: the run reports the earliest in plan
    /// order, so that the error does not depend on which of two failing steps ended first.
    failures: Mutex<Vec<(usize, Failure)>>,
    partial: AtomicBool,
}

impl<'p> Frame<'p> {
    /// A composite about to run at `depth`, its steps' paths under `prefix`: its own
    /// `transform_arguments` evaluated in `clock`, unless its arguments were `refused`.
    pub(crate) fn open(
        plan: &'p Plan,
        arguments: Value,
        prefix: String,
        depth: usize,
        refused: Option<Failure>,
        clock: &Arc<ClockScope>,
    ) -> Frame<'p> {
        let n = plan.steps.len();
        let (arguments, failure) = match refused {
            Some(f) => (arguments, Some(f)),
            None => match data::frame_arguments(plan, arguments.clone(), clock) {
                Ok(a) => (a, None),
                Err(e) => (arguments, Some(Failure { step: None, ..Failure::at("", e) })),
            },
        };
        let graph = plan.dependents();
        let frame = Frame {
            plan,
            prefix,
            depth,
            arguments,
            results: (0..n).map(|_| OnceLock::new()).collect(),
            traces: (0..n).map(|_| OnceLock::new()).collect(),
            pending: graph.waits_for.iter().map(|&n| AtomicUsize::new(n)).collect(),
            dependents: &graph.dependents,
            failure: OnceLock::new(),
            failures: Mutex::new(Vec::new()),
            partial: AtomicBool::new(false),
        };
        if let Some(f) = failure {
            frame.fail(0, f);
        }
        frame
    }

    /// The steps that depend on nothing, in plan order. A driver takes them all before it
    /// starts any: a root that ends meanwhile readies its dependents itself.
    pub(crate) fn roots(&self) -> Vec<StepId> {
        self.plan.steps.iter().filter(|s| self.pending[s.id.0].load(Ordering::SeqCst) == 0).map(|s| s.id).collect()
    }

    /// Step `id` ended with `value` (what REFs see) and `trace`; `ready` is handed each
    /// dependent whose last dependency it was, in plan order.
    pub(crate) fn step_ended(&self, id: StepId, value: Value, trace: Box<StepTrace>, mut ready: impl FnMut(StepId)) {
        let _ = self.results[id.0].set(value);
        let _ = self.traces[id.0].set(trace);
        for &d in &self.dependents[id.0] {
            if self.pending[d.0].fetch_sub(1, Ordering::AcqRel) == 1 {
                ready(d);
            }
        }
    }

    /// Whether a step or call of it failed: nothing else starts.
    pub(crate) fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    /// The step at `position` failed with `f`.
    fn fail(&self, position: usize, f: Failure) {
        let _ = self.failure.set(f.clone());
        self.failures.lock().unwrap_or_else(PoisonError::into_inner).push((position, f));
    }

    /// A fan-out child failed with `f` and its step will fail once its children end: steps
    /// and calls still waiting must not start meanwhile.
    pub(crate) fn stop(&self, f: &Failure) {
        let _ = self.failure.set(f.clone());
    }

    /// A step failed under `continue_on_error`: the run is PARTIAL.
    pub(crate) fn mark_partial(&self) {
        self.partial.store(true, Ordering::SeqCst);
    }

    /// Why a step at `key` that has not started does not, as [`Frame::start`] says it: what
    /// failed first, else the run's stop.
    fn cancel_reason(&self, d: &impl Driver, key: &str) -> String {
        match self.failure.get() {
            Some(f) => f.cancel_reason(),
            None if d.deadline_passed() => Failure { step: None, ..d.stop_failure(key) }.cancel_reason(),
            None => "the run failed before this step".to_string(),
        }
    }

    /// Why a call at `key` that was about to start does not: another step (or child) failed.
    pub(crate) fn not_started(&self, key: &str) -> Failure {
        Failure::stopped_by(key, self.failure.get().and_then(|f| f.step.as_deref()))
    }

    /// The composite ended (every step has): its steps' traces, and its result —
    /// `response_reference_map` (or every step's result), its own `transform_responses` in
    /// `clock`, the declared responses checked — or its earliest failure. `root_name` names
    /// the run's own composite in a refused response.
    pub(crate) fn close(self, root_name: &str, clock: &Arc<ClockScope>) -> FrameOutcome {
        let reported = {
            let failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            failures.iter().min_by_key(|(p, _)| *p).map(|(_, f)| f.clone())
        };
        let result = match reported {
            Some(f) => Err(f),
            None => self.result(root_name, clock),
        };
        let partial = self.partial.load(Ordering::SeqCst);
        let steps = self.traces.into_iter().filter_map(OnceLock::into_inner).map(|t| *t).collect();
        FrameOutcome { result, partial, steps, clock_reads: clock.reads() }
    }

    fn result(&self, root_name: &str, clock: &Arc<ClockScope>) -> Result<Value, Failure> {
        let env = StepEnv::new(self.plan, &self.arguments, &self.results, Visible::All);
        let out = env.composite_result(clock).map_err(|e| Failure { step: None, ..Failure::at("", e) })?;
        let name = if self.depth == 0 {
            root_name.to_string()
        } else {
            self.plan
                .file
                .as_ref()
                .and_then(|f| f.file_name())
                .map_or_else(|| "composite".to_string(), |f| f.to_string_lossy().into_owned())
        };
        validate::check(&self.plan.tool.responses, &out, Side::Responses, &name)
            .map_err(|m| Failure { step: None, ..Failure::new("", Code::ResponseInvalid, m) })?;
        Ok(out)
    }

    /// Step `id` starts, or does not: when the frame failed or the run stopped it is
    /// CANCELLED at once (a stop is then the frame's failure, not the step's).
    pub(crate) fn start<D: Driver>(&'p self, id: StepId, wf: &'p Workflow, d: &D) -> Start<'p> {
        let step = &self.plan.steps[id.0];
        // A step of the run's own composite is named by its id: no copy of it.
        let key: Cow<'p, str> = if self.prefix.is_empty() {
            Cow::Borrowed(&step.execution_id)
        } else {
            let mut key = String::with_capacity(self.prefix.len() + step.execution_id.len());
            key.push_str(&self.prefix);
            key.push_str(&step.execution_id);
            Cow::Owned(key)
        };
        let mut trace = Box::new(StepTrace::of_step(&step.execution_id, step.tool_path.as_ref()));
        let cancel_reason = if let Some(f) = self.failure.get() {
            Some(f.cancel_reason())
        } else if d.deadline_passed() {
            // The step never ran: the failure is the run's, not the step's.
            let failure = Failure { step: None, ..d.stop_failure(&key) };
            let reason = failure.cancel_reason();
            self.fail(id.0, failure);
            Some(reason)
        } else {
            None
        };
        if let Some(reason) = cancel_reason {
            trace.status = StepStatus::Cancelled;
            trace.reason = Some(reason);
            return Start::Cancelled { key, trace };
        }
        let started = d.now_rel();
        trace.started_ms = Some(started);
        trace.started_at = Some(d.wall_at(started));
        trace.status = StepStatus::Running;
        let timeout_seconds = step.timeout_seconds.unwrap_or(d.default_timeout_seconds());
        let eval_timeout = D::TIMEOUT_BOUNDS_EXPRESSIONS.then_some(timeout_seconds);
        let clock = if D::CLOCK_AT_START { OnceCell::from(d.clock(&key, eval_timeout)) } else { OnceCell::new() };
        Start::Run(StepRun {
            frame: self,
            wf,
            step,
            key,
            trace,
            clock,
            eval_timeout,
            tool: None,
            policy: d.retry_policy(step),
            timeout_seconds,
        })
    }
}

/// How a step begins.
pub(crate) enum Start<'f> {
    /// It does not run: its trace says why (`reason`).
    Cancelled { key: Cow<'f, str>, trace: Box<StepTrace> },
    /// It runs.
    Run(StepRun<'f>),
}

/// What a running step does next, after its prelude.
pub(crate) enum Next {
    /// Nothing more: skipped (its result for REFs), or it failed before any call.
    Done(Result<Value, Failure>),
    /// One call of its callee with these arguments; then [`StepRun::called`].
    Call(Value),
    /// A call per item; then [`StepRun::fanned_out`].
    FanOut(FanOut),
}

/// A fan-out about to run.
pub(crate) struct FanOut {
    /// The step's arguments, which each child gets with its item.
    args: Map,
    /// The items, one child each.
    pub(crate) items: Arc<[Value]>,
    /// The name each child gets its item under (`child_argument_name`).
    name: SmolStr,
    /// Whether a child that fails lets its siblings go on (else they stop: fail-fast).
    pub(crate) continue_on_error: bool,
    /// Whether the child argument is optional and its schema does not allow null.
    non_null: bool,
}

impl FanOut {
    /// A child's arguments: the step's with `item` under the child argument's name, and the
    /// callee's defaults.
    pub(crate) fn child_arguments(&self, site: &Site<'_>, item: &Value) -> Value {
        // Sized once: the step's arguments and the item.
        let mut a = Map::with_capacity_and_hasher(self.args.len() + 1, Default::default());
        a.extend(self.args.iter().map(|(k, v)| (k.clone(), v.clone())));
        a.insert(self.name.clone(), item.clone());
        validate::with_defaults(declared_arguments(site.tool), Value::object(a))
    }

    /// The failure of the child at `key` over `item` before its call, if it may not be
    /// called ([`super::data::refused_child`]).
    pub(crate) fn refused(&self, key: &str, item: &Value) -> Option<CallOutcome> {
        super::data::refused_child(key, &self.name, self.non_null, item)
    }
}

/// A step that started, until it ends.
pub(crate) struct StepRun<'f> {
    frame: &'f Frame<'f>,
    wf: &'f Workflow,
    /// Its plan.
    pub(crate) step: &'f StepPlan,
    /// Its step path (`extract`, `outer/inner`).
    pub(crate) key: Cow<'f, str>,
    /// Boxed: it moves from the start to the frame, through every stage of the step.
    trace: Box<StepTrace>,
    /// Its clock scope, once made ([`Driver::CLOCK_AT_START`]).
    clock: OnceCell<Arc<ClockScope>>,
    /// What bounds each of its evaluations, when its timeout does.
    eval_timeout: Option<f64>,
    tool: Option<&'f Tool>,
    policy: RetryPolicy,
    timeout_seconds: f64,
}

/// How a step ended: what its dependents' REFs see, its trace, and the calls it made.
pub(crate) struct Ended<'f> {
    pub(crate) key: Cow<'f, str>,
    pub(crate) value: Value,
    pub(crate) trace: Box<StepTrace>,
    pub(crate) calls: usize,
}

fn env<'f>(frame: &'f Frame<'f>, step: &'f StepPlan) -> StepEnv<'f> {
    StepEnv::new(frame.plan, &frame.arguments, &frame.results, Visible::Steps(&step.depends_on))
}

impl<'f> StepRun<'f> {
    /// Its prelude (conditions, arguments, `done_check`, `transform_arguments`), and what
    /// follows: nothing, a call, or a fan-out.
    pub(crate) fn next(&mut self, d: &impl Driver) -> Next {
        let (frame, step) = (self.frame, self.step);
        let env = env(frame, step);
        let make = || d.clock(&self.key, self.eval_timeout);
        let clock = LazyScope { cell: &self.clock, make: &make };
        let args = match env.prelude(step, &clock) {
            Ok(Prelude::Call(args)) => args,
            Ok(Prelude::Skipped { reason, result }) => {
                self.trace.status = StepStatus::Skipped;
                self.trace.reason = Some(reason.to_string());
                return Next::Done(Ok(result));
            }
            Err(e) => return Next::Done(Err(Failure::at(&self.key, e))),
        };
        if step.tool_path.is_none() {
            // A transform step (SPEC §6.4 ext): no call, no attempt, no breaker, no retry;
            // its result is the object of its `transform_responses`.
            let out = env.respond(step, &clock, &Value::Null, Arc::default());
            return Next::Done(out.map_err(|e| Failure::at(&self.key, e)));
        }
        self.tool = self.wf.tool(step.tool());
        match &step.parallel {
            None => {
                let arguments = validate::with_defaults(declared_arguments(self.tool), Value::object(args));
                self.trace.arguments = Some(arguments.clone());
                Next::Call(arguments)
            }
            Some(par) => match env.fan_out_items(par, d.max_fan_out(), &self.key) {
                Ok(items) => {
                    self.trace.arguments = Some(Value::object(args.clone()));
                    Next::FanOut(FanOut {
                        args,
                        items,
                        name: SmolStr::new(&*par.child_argument_name),
                        continue_on_error: step.continue_on_error,
                        non_null: step.non_null_optional.iter().any(|n| **n == *par.child_argument_name),
                    })
                }
                Err(e) => Next::Done(Err(Failure::at(&self.key, e))),
            },
        }
    }

    /// Where its call (or each child's) goes.
    pub(crate) fn site(&self) -> Site<'_> {
        Site {
            tool_path: self.step.tool(),
            tool: self.tool,
            key: &self.key,
            depth: self.frame.depth,
            policy: &self.policy,
            retry_asked: self.step.retry.is_some(),
            timeout_seconds: self.timeout_seconds,
        }
    }

    /// Its call ended: `transform_responses` over the answer, and the result checked
    /// against the callee's declared responses (after the transform, which may supply or
    /// repair one: SPEC §6.4).
    pub(crate) fn called(&mut self, d: &impl Driver, call: CallOutcome) -> Result<Value, Failure> {
        self.trace.attempts = call.attempts;
        self.trace.steps = call.nested;
        self.trace.callee_clock_reads = call.nested_clock_reads;
        if call.partial {
            self.frame.mark_partial();
        }
        let raw = call.result?;
        let make = || d.clock(&self.key, self.eval_timeout);
        let clock = LazyScope { cell: &self.clock, make: &make };
        let result = env(self.frame, self.step)
            .respond(self.step, &clock, &raw, wrap(&raw))
            .map_err(|e| Failure::at(&self.key, e))?;
        check_response(d, self.tool, self.step.tool(), &result, &self.key)?;
        Ok(result)
    }

    /// Its children ended (each checked as it ended), in input order: gathered into the
    /// step's list or failure ([`data::gather_children`]; a child failed under
    /// `continue_on_error` makes the run PARTIAL), then `transform_responses` over the list.
    pub(crate) fn fanned_out(
        &mut self,
        d: &impl Driver,
        outs: impl IntoIterator<Item = (ChildTrace, Result<Value, Failure>)>,
    ) -> Result<Value, Failure> {
        let (children, list, partial) = data::gather_children(outs, self.step.continue_on_error, d.deadline_hit());
        if partial {
            self.frame.mark_partial();
        }
        self.trace.children = Some(children);
        let raw = Value::list(list?);
        let mut result = Map::default();
        result.insert(SmolStr::new("response"), raw.clone());
        let result = Arc::new(result);
        let make = || d.clock(&self.key, self.eval_timeout);
        let clock = LazyScope { cell: &self.clock, make: &make };
        env(self.frame, self.step).respond(self.step, &clock, &raw, result).map_err(|e| Failure::at(&self.key, e))
    }

    /// The step ended with `outcome` (from [`Next::Done`], [`Self::called`] or
    /// [`Self::fanned_out`]): its trace settled, its failure the frame's.
    pub(crate) fn end<D: Driver>(mut self, d: &D, outcome: Result<Value, Failure>) -> Ended<'f> {
        self.trace.clock_reads = self.clock.get().map(|c| c.reads()).unwrap_or_default();
        let key = &self.key;
        let timeout_seconds = self.timeout_seconds;
        let outcome = outcome.map_err(|f| {
            if matches!(f.code, Code::Interrupted | Code::EvalDeadline) && d.deadline_passed() {
                // An expression stopped by the run's deadline or cancellation: the run's failure.
                d.stop_failure(key)
            } else if D::TIMEOUT_BOUNDS_EXPRESSIONS && f.code == Code::EvalDeadline {
                // The step's own `timeout_seconds` stopped one of its expressions: a timeout
                // of the step (SPEC §6.5), not an error in the expression.
                Failure {
                    code: Code::StepTimeout,
                    message: format!("{} (the step's timeout of {timeout_seconds} s)", f.message),
                    timeout: true,
                    ..f
                }
            } else {
                f
            }
        });
        let frame = self.frame;
        if let Err(f) = &outcome {
            let no_call =
                self.trace.attempts.is_empty() && self.trace.children.iter().flatten().all(|c| c.started_ms.is_none());
            if f.cancelled && no_call {
                // None of its calls started (each waited for its slot, or no child started)
                // while the run began failing: it is written as a step that never started,
                // as the drivers reach it — a local run mostly before it starts, Temporal,
                // which starts every ready step at once, while it waits for its slot.
                let mut trace = Box::new(StepTrace::of_step(&self.step.execution_id, self.step.tool_path.as_ref()));
                trace.status = StepStatus::Cancelled;
                trace.reason = Some(frame.cancel_reason(d, key));
                return Ended { key: self.key, value: Value::Null, trace, calls: 0 };
            }
        }
        let settled =
            data::settle(self.step, key, outcome, &mut self.trace, d.deadline_hit(), || frame.not_started(key).message);
        let value = match settled {
            Settled::Value(v) => v,
            Settled::Partial(v) => {
                frame.mark_partial();
                v
            }
            Settled::Failed(f) => {
                frame.fail(self.step.id.0, f);
                Value::Null
            }
        };
        let ended = d.now_rel();
        let calls = self.trace.end(ended, d.wall_at(ended));
        Ended { key: self.key, value, trace: self.trace, calls }
    }
}

/// A primitive callee's answer against its declared `responses` (a composite callee
/// checked its own result).
fn check_response(
    d: &impl Driver,
    tool: Option<&Tool>,
    tool_path: &str,
    result: &Value,
    key: &str,
) -> Result<(), Failure> {
    data::check_response(tool, tool_path, result).map_err(|m| {
        d.response_rejected(key, &m);
        Failure::new(key, Code::ResponseInvalid, m)
    })
}

/// Where a step calls its callee: what its call (or each fan-out child's), the retries and
/// the attempts share.
#[derive(Clone, Copy)]
pub(crate) struct Site<'c> {
    pub(crate) tool_path: &'c str,
    pub(crate) tool: Option<&'c Tool>,
    /// The step path of the call: the step's, or a child's (`extract[3]`).
    pub(crate) key: &'c str,
    /// The depth of the composite the step belongs to.
    pub(crate) depth: usize,
    pub(crate) policy: &'c RetryPolicy,
    /// Whether the step has a `retry` of its own: then its policy holds for every transient
    /// failure, even of a tool not safe to call twice ([`crate::exec::Runner::repeatable`]).
    pub(crate) retry_asked: bool,
    /// Each attempt's timeout.
    pub(crate) timeout_seconds: f64,
}

/// What calling a callee means.
pub(crate) enum Callee<'c> {
    /// It cannot be called (not loaded, arguments refused, nested too deep): the outcome.
    Refused(CallOutcome),
    /// A composite: the driver runs it as a frame at `depth` with its steps under `prefix`,
    /// and hands the frame's outcome to [`CallOutcome::of_composite`].
    Composite { plan: &'c Plan, prefix: String, depth: usize },
    /// A primitive: the driver makes the attempts (its definition and file when known).
    Primitive { def: Option<&'c Arc<ToolDef>>, file: Option<&'c PathBuf> },
}

impl<'c> Site<'c> {
    /// What calling the callee with `args` means, composites nesting at most `max_depth`. The
    /// call is charged to the run's [`CallBudget`] first: past it, it is refused.
    pub(crate) fn callee(&self, d: &impl Driver, args: &Value, max_depth: usize) -> Callee<'c> {
        let (key, tool_path) = (self.key, self.tool_path);
        if !d.calls().take() {
            return Callee::Refused(CallOutcome::failed(Failure::too_many_calls(key, d.calls().limit)));
        }
        let (def, file) = match self.tool {
            None => {
                return Callee::Refused(CallOutcome::failed_at(
                    key,
                    Code::ToolUnavailable,
                    format!("`{tool_path}` was not loaded"),
                ))
            }
            Some(Tool::Composite { plan }) => {
                return match CallOutcome::composite_refusal(key, tool_path, plan, args, self.depth, max_depth) {
                    Some(refused) => Callee::Refused(refused),
                    None => Callee::Composite { plan, prefix: format!("{key}/"), depth: self.depth + 1 },
                }
            }
            Some(Tool::Primitive { def, file }) => (Some(def), Some(file)),
            Some(Tool::Missing { .. }) => (None, None),
        };
        if let Some(d) = def {
            if let Err(m) = validate::check(&d.arguments, args, Side::Arguments, tool_path) {
                return Callee::Refused(CallOutcome::failed_at(key, Code::ArgumentInvalid, m));
            }
        }
        Callee::Primitive { def, file }
    }
}

impl Failure {
    /// A call at `key` whose last attempt (`attempts` made) ended with `outcome` and
    /// `message`.
    pub(crate) fn of_call(key: &str, outcome: Outcome, attempts: u32, message: String) -> Failure {
        let code = match outcome {
            Outcome::Timeout => Code::StepTimeout,
            Outcome::Deadline => Code::RunDeadline,
            Outcome::Cancelled => Code::RunCancelled,
            Outcome::Refused => Code::CircuitOpen,
            _ => Code::ToolFailed,
        };
        let tries = match outcome {
            Outcome::Refused if attempts > 1 => format!(" (attempt {attempts} of the step)"),
            Outcome::Refused => String::new(),
            _ if attempts > 1 => format!(" (after {attempts} attempts)"),
            _ => String::new(),
        };
        Failure {
            code,
            step: Some(key.to_string()),
            message: format!("{message}{tries}"),
            timeout: matches!(outcome, Outcome::Timeout | Outcome::Deadline),
            cancelled: false,
        }
    }

    /// The call at `key` does not start: the step at path `failed` failed (fail-fast), or
    /// (`None`) the run did.
    fn stopped_by(key: &str, failed: Option<&str>) -> Failure {
        let message = match failed {
            Some(s) => format!("step `{s}` failed"),
            None => "the run failed before this call".to_string(),
        };
        Failure::not_started(key, message)
    }

    /// The call at `key` waited for a slot while another step failed: it never started.
    pub(crate) fn waited_for_slot(key: &str) -> Failure {
        Failure::not_started(key, "not started: another step failed while it waited for a slot".to_string())
    }

    /// The call at `key` would pass the run's limit of `max` calls: it does not start, and
    /// the run stops.
    pub(crate) fn too_many_calls(key: &str, max: usize) -> Failure {
        let message = format!(
            "the run reached its limit of {max} calls (`--max-calls-per-run`): this call and the rest were not made"
        );
        Failure::new(key, Code::TooManyCalls, message)
    }
}

/// The fail-fast rule between the children of one fan-out (SPEC §6.5), the one both drivers
/// follow: a child that failed on its own (`FAILED` or `TIMEOUT`; not one that never started,
/// nor one the run's cancellation stopped) when its step has no `continue_on_error` stops its
/// siblings — no further child starts, a call still waiting for its slot does not — and its
/// frame, so that no other step or call of the composite starts either. A fan-out chunk's
/// child workflow (Temporal) keeps the rule among its own children with no frame; its parent
/// stops the frame when the chunk's children come back ([`FailFast::ended`] again).
pub(crate) struct FailFast<'f> {
    frame: Option<&'f Frame<'f>>,
    continue_on_error: bool,
    /// The first child that failed on its own: its step path (`fan[2]`).
    failed: OnceLock<String>,
}

impl<'f> FailFast<'f> {
    /// The rule for the children of a step of `frame` (`None`: a chunk's child workflow)
    /// with the step's `continue_on_error`.
    pub(crate) fn new(frame: Option<&'f Frame<'f>>, continue_on_error: bool) -> FailFast<'f> {
        FailFast { frame, continue_on_error, failed: OnceLock::new() }
    }

    /// Whether a child, or a child's call waiting for its slot, must not start: a sibling
    /// failed, or the frame did.
    pub(crate) fn stopped(&self) -> bool {
        self.failed.get().is_some() || self.frame.is_some_and(Frame::failed)
    }

    /// A child ended (or never started): a composite callee's PARTIAL run makes the frame
    /// PARTIAL; a child that failed on its own stops the rest, unless `continue_on_error`.
    pub(crate) fn ended(&self, end: &ChildEnd) {
        if let (true, Some(frame)) = (end.partial, self.frame) {
            frame.mark_partial();
        }
        let Err(f) = &end.out else { return };
        if self.continue_on_error || !matches!(end.trace.status, StepStatus::Failed | StepStatus::Timeout) {
            return;
        }
        let _ = self.failed.set(f.step.clone().unwrap_or_default());
        if let Some(frame) = self.frame {
            // The step fails once its children end; steps and calls still waiting must not
            // start meanwhile.
            frame.stop(f);
        }
    }

    /// Why the call of the child at `key` does not start: the failure that stopped it (the
    /// frame's first, else the sibling's). The same words as a step's (`step `…` failed`).
    pub(crate) fn not_started(&self, key: &str) -> Failure {
        match self.frame {
            Some(frame) if frame.failed() => frame.not_started(key),
            _ => Failure::stopped_by(key, self.failed.get().map(String::as_str)),
        }
    }
}

/// The step path of child `i` of the fan-out at `step_key`: `fan[12]`.
fn child_key(step_key: &str, i: usize) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(i);
    let mut key = String::with_capacity(step_key.len() + digits.len() + 2);
    key.push_str(step_key);
    key.push('[');
    key.push_str(digits);
    key.push(']');
    key
}

/// A fan-out child that started, until its call ends.
pub(crate) struct ChildRun {
    /// Its step path (`extract[3]`).
    pub(crate) key: String,
    /// Its arguments.
    pub(crate) arguments: Value,
    trace: ChildTrace,
    started: u64,
}

/// How a fan-out child ended (or that it never started), whichever driver ran it; what
/// [`FailFast::ended`] and the step's gathering of its children read.
pub(crate) struct ChildEnd {
    pub(crate) trace: ChildTrace,
    /// Its answer as returned, or its failure.
    pub(crate) out: Result<Value, Failure>,
    /// A composite callee's run was PARTIAL.
    pub(crate) partial: bool,
}

impl ChildEnd {
    /// Child `i` ended with `f` without a call of its own (on Temporal, its chunk's child
    /// workflow was refused or lost as a whole): its trace says so as a call's would.
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn failed(i: usize, f: Failure) -> ChildEnd {
        let mut trace = ChildTrace::new(i);
        let out = data::settle_child(&mut trace, Err(f));
        ChildEnd { trace, out, partial: false }
    }
}

impl ChildRun {
    /// Child `i` of the fan-out at `step_key` starts with `arguments`, or does not: when
    /// `fail_fast` stopped it or the run stopped, it ended already ([`ChildRun::not_run`]).
    // Both sides hold a `ChildTrace`, so boxing the error would only add an allocation per
    // child that never starts without making the `Result` smaller than its `Ok`.
    #[allow(clippy::result_large_err)]
    pub(crate) fn start(
        d: &impl Driver,
        fail_fast: &FailFast<'_>,
        step_key: &str,
        i: usize,
        arguments: impl FnOnce() -> Value,
    ) -> Result<ChildRun, ChildEnd> {
        if fail_fast.stopped() || d.deadline_passed() {
            return Err(ChildRun::not_run(d, fail_fast, step_key, i));
        }
        let key = child_key(step_key, i);
        let mut trace = ChildTrace::new(i);
        let started = d.now_rel();
        trace.started_ms = Some(started);
        let arguments = arguments();
        trace.arguments = Some(arguments.clone());
        Ok(ChildRun { key, arguments, trace, started })
    }

    /// Child `i` of the fan-out at `step_key` that does not start (`CANCELLED`): why is the
    /// run's stop when the run stopped (its deadline, its calls, a cancellation), else the
    /// failure that stopped it under `fail_fast`.
    pub(crate) fn not_run(d: &impl Driver, fail_fast: &FailFast<'_>, step_key: &str, i: usize) -> ChildEnd {
        ChildRun::never_ran(d, fail_fast, child_key(step_key, i), i)
    }

    /// [`ChildRun::not_run`] of the child at `key`.
    fn never_ran(d: &impl Driver, fail_fast: &FailFast<'_>, key: String, i: usize) -> ChildEnd {
        let (f, reason) = if d.deadline_passed() {
            let f = d.stop_failure(&key);
            let reason = Failure { step: None, ..f.clone() }.cancel_reason();
            (f, reason)
        } else {
            let f = fail_fast.not_started(&key);
            let reason = f.message.clone();
            (f, reason)
        };
        let mut trace = ChildTrace::new(i);
        trace.reason = Some(reason);
        ChildEnd { trace, out: Err(f), partial: false }
    }

    /// Its call ended: the answer checked as it is, then kept as returned (a list stays a
    /// list, a number a number: SPEC §6.3). A call that never started (it waited for its
    /// slot while the run began failing) leaves the child as one that never started,
    /// written as [`ChildRun::not_run`] writes it, whichever driver let it wait.
    pub(crate) fn end(
        mut self,
        d: &impl Driver,
        fail_fast: &FailFast<'_>,
        site: &Site<'_>,
        call: CallOutcome,
    ) -> ChildEnd {
        if matches!(&call.result, Err(f) if f.cancelled) {
            return ChildRun::never_ran(d, fail_fast, self.key, self.trace.index);
        }
        let ct = &mut self.trace;
        ct.attempts = call.attempts;
        ct.steps = call.nested;
        ct.callee_clock_reads = call.nested_clock_reads;
        let ended = d.now_rel();
        ct.ended_ms = Some(ended);
        ct.duration_ms = ended.saturating_sub(self.started);
        let key = &self.key;
        let checked = call.result.and_then(|raw| {
            check_response(d, site.tool, site.tool_path, &Value::Object(wrap(&raw)), key).map(|()| raw)
        });
        let out = data::settle_child(ct, checked);
        ChildEnd { trace: self.trace, out, partial: call.partial }
    }
}

#[cfg(test)]
mod tests;
