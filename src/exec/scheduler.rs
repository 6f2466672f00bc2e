//! The scheduler: one composite's steps on a worker pool, each started as soon as the
//! steps it depends on have ended. It is the local driver of the step core (`step.rs`):
//! what a step, a call and a fan-out child are is decided there, for both engines; this
//! file runs them on threads, makes the attempts and tells the observer.
//!
//! A run has one rayon pool of `max_concurrency` threads (its own while it runs; kept by the
//! executor for its next run: [`super::threads::WorkerPools`]) and one [`Limiter`] of as many
//! permits; a tool call holds a permit for as long as it runs, so the limit holds across
//! steps, fan-out children and composite callees, even for a call left behind after a
//! timeout. Steps are rayon jobs: when a step ends, each dependent whose last dependency
//! this was starts at once — the first, in plan order, on the same thread, the others
//! spawned (FIFO, in plan order) — so a chain never waits for a level, nor for a spawn. A
//! call that cannot block ([`super::Runner::can_block`]) runs on the worker; any other goes
//! to a call thread (`threads.rs`) that the worker can give up on at the timeout.
//! A composite callee or a fan-out opens a nested scope on the same pool; a worker that
//! waits for one works on other jobs meanwhile, so nesting cannot starve the pool.
//!
//! Nothing here depends on timing except what must: the trace lists steps in plan order
//! and children in input order, results are placed by index, and the first failure of a
//! fan-out is the lowest index that failed. Which independent steps were still to start
//! when a step failed (and so are CANCELLED) is the one thing a run's timing decides.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rayon::ScopeFifo;

use super::breaker::{Admission, Refusal};
use super::clock::ClockScope;
use super::data::{self, CallOutcome, Failure, FrameOutcome, RunEnd};
use super::executor::{Event, Executor, Run};
use super::guard::GuardError;
use super::retry::RetryPolicy;
use super::runner::{CancelToken, ErrorKind, ToolCall, ToolError};
use super::step::{CallBudget, Callee, ChildRun, Driver, Ended, FailFast, FanOut, Frame, Next, Site, Start};
use super::time::Signal;
use super::trace::{rfc3339, Attempt, ChildTrace, Outcome, RunError, RunStatus, StepTrace, Trace};
use super::workflow::Workflow;
use crate::analysis::{Plan, StepId, StepPlan};
use crate::diagnostic::Code;
use crate::tool::validate;
use crate::tool::ToolDef;
use crate::value::Value;

/// Where a run's attempts, back-off delays, breaker refusals and expression clock reads
/// come from. [`Live`] is the executor's own: its runner under the breakers, the limit and
/// the timeouts, its retry policy's back-off, its time. Another implementation answers the
/// same questions from elsewhere, and nothing else in the scheduler changes.
pub(crate) trait Source: Send + Sync {
    /// The wall-clock reads `datetime_now` returns in `key`'s scope, in order (`None`: the
    /// run's time is read).
    fn clock_reads(&self, key: &str) -> Option<Vec<i64>>;
    /// The back-off before attempt `n` (1 for the first retry) of the call at `key`.
    fn delay_ms(&self, ctx: &RunCtx<'_>, key: &str, n: u32, policy: &RetryPolicy) -> u64;
    /// When the tool's breaker refuses the attempt at once (after its back-off of
    /// `delay_ms`): the refusal's message.
    fn refused_at_once(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>, delay_ms: u64) -> Option<String>;
    /// One attempt and how it ended; `None` when it never started (the run began failing
    /// while it waited for a slot).
    fn attempt(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> Option<(Outcome, Result<Value, ToolError>)>;
    /// Whether a failed attempt that may have reached the tool is retried when the step has
    /// no `retry` of its own: the runner's word ([`super::Runner::repeatable`]).
    fn repeatable(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> bool;
}

/// The live run: the executor's runner, breakers, retry policy and time.
pub(crate) struct Live;

impl Source for Live {
    fn clock_reads(&self, _key: &str) -> Option<Vec<i64>> {
        None
    }

    fn delay_ms(&self, ctx: &RunCtx<'_>, _key: &str, n: u32, policy: &RetryPolicy) -> u64 {
        ms(policy.delay(n - 1, &*ctx.ex.random))
    }

    fn refused_at_once(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>, delay_ms: u64) -> Option<String> {
        let now = ctx.ex.time.monotonic_ms();
        ctx.ex
            .breakers
            .refusal(call.tool_path, now.saturating_add(delay_ms))
            .map(|r| ctx.refusal_message(call.tool_path, r))
    }

    fn attempt(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> Option<(Outcome, Result<Value, ToolError>)> {
        ctx.live_attempt(call)
    }

    fn repeatable(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> bool {
        let here = ToolCall {
            tool_path: call.tool_path,
            definition: call.def.map(|d| &**d),
            file: call.file.map(|f| f.as_path()),
            arguments: call.args,
            cancel: ctx.cancel,
            timeout: None,
            attempt: call.n + 1,
        };
        ctx.ex.runner.repeatable(&here)
    }
}

/// One attempt at a primitive callee: everything [`Source::attempt`] needs to know.
pub(crate) struct AttemptCall<'c> {
    pub(crate) tool_path: &'c str,
    pub(crate) def: Option<&'c Arc<ToolDef>>,
    pub(crate) file: Option<&'c PathBuf>,
    pub(crate) args: &'c Value,
    /// The step path of the call (`extract`, `extract[3]`, `outer/inner`).
    pub(crate) key: &'c str,
    /// 0 for the first attempt, 1 for the first retry, …
    pub(crate) n: u32,
    pub(crate) timeout_seconds: f64,
    /// Whether the run is failing: a call still waiting for a slot then does not start.
    pub(crate) stopped: &'c dyn Fn() -> bool,
}

/// Counts tool calls in flight and blocks past the limit.
struct Limiter {
    max: usize,
    state: Mutex<Slots>,
    cv: Condvar,
}

#[derive(Default)]
struct Slots {
    in_use: usize,
    peak: usize,
    /// Threads waiting for a slot: a permit that ends wakes them only when there are some
    /// (a wake-up is a system call, and most calls never wait).
    waiting: usize,
}

/// One call's right to run; released when dropped.
struct Permit(Arc<Limiter>);

impl Limiter {
    fn new(max: usize) -> Limiter {
        Limiter { max, state: Mutex::new(Slots::default()), cv: Condvar::new() }
    }

    /// A permit, or `None` when `stopped` says the run is failing: a call that waited for
    /// a slot does not start after another step failed (fail-fast, SPEC §6.5).
    fn acquire(self: &Arc<Limiter>, stopped: &dyn Fn() -> bool) -> Option<Permit> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if stopped() {
                return None;
            }
            if s.in_use < self.max {
                break;
            }
            s.waiting += 1;
            s = self.cv.wait(s).unwrap_or_else(PoisonError::into_inner);
            s.waiting -= 1;
        }
        s.in_use += 1;
        s.peak = s.peak.max(s.in_use);
        Some(Permit(self.clone()))
    }

    fn peak(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).peak
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.in_use -= 1;
        let waiting = s.waiting > 0;
        drop(s);
        if waiting {
            // Every waiter looks: one may take the slot, the others may have to stop.
            self.0.cv.notify_all();
        }
    }
}

/// Everything shared by one run.
pub(crate) struct RunCtx<'a> {
    ex: &'a Executor,
    wf: &'a Workflow,
    source: &'a dyn Source,
    pool: rayon::ThreadPool,
    limiter: Arc<Limiter>,
    start_ms: u64,
    /// The wall clock when the run started: steps' `started_at` count from it.
    started_wall: i64,
    deadline_ms: Option<u64>,
    deadline_hit: AtomicBool,
    /// The run's cancellation: every call's token is a child of it.
    cancel: &'a CancelToken,
    /// What stops an expression when the run is cancelled or past its deadline: one for the
    /// run, shared by every step's clock scope (it looks only at the run's state).
    interrupt: crate::runtime::Interrupt,
    retries: AtomicU32,
    trips: AtomicU32,
    /// The calls the run may still make (`Guards::max_calls_per_run`).
    calls: CallBudget,
    /// The fuel and memory of the run's expressions and the tool answers it holds
    /// (`Guards::max_run_fuel`, `Guards::max_run_memory`): the interrupt carries it to
    /// every evaluation.
    budget: Arc<crate::runtime::RunBudget>,
    /// The addresses of the lists, objects and long strings of the answers the run holds,
    /// each charged once (an answer that shares one with another costs it once).
    held: Mutex<rustc_hash::FxHashSet<usize>>,
}

/// How an [`Executor`] runs a workflow: here, beside the scheduler it runs, so that
/// `executor.rs` (what an executor is) does not depend on the scheduler.
impl Executor {
    /// Runs a workflow with `arguments` (an object). Refused, with no tool called, when a
    /// guard does not allow it or an option is out of range ([`Options::validate`]);
    /// otherwise the run's outcome, whatever it is.
    pub fn run(&self, workflow: &Workflow, arguments: Value) -> Result<Run, GuardError> {
        self.run_cancellable(workflow, arguments, &CancelToken::new())
    }

    /// [`Executor::run`], stopped early when `cancel` is cancelled (from another thread):
    /// no step starts after that, the calls in flight are cancelled (their runners see
    /// [`ToolCall::cancel`](super::ToolCall) set), nothing is retried, and the run ends
    /// `FAILED` with error `E0813` and its unfinished steps `CANCELLED`. The engine waits for
    /// the runners in flight to return (at most [`Options::cancel_grace`] for calls under a
    /// timeout).
    pub fn run_cancellable(
        &self,
        workflow: &Workflow,
        arguments: Value,
        cancel: &CancelToken,
    ) -> Result<Run, GuardError> {
        self.options.validate()?;
        self.options.guards.check(workflow)?;
        Ok(run(self, workflow, arguments, &Live, cancel))
    }
}

/// Runs a workflow from its arguments to its trace.
pub(crate) fn run(ex: &Executor, wf: &Workflow, arguments: Value, source: &dyn Source, cancel: &CancelToken) -> Run {
    // Declared defaults fill in absent (or null) arguments first: the run and its trace see them.
    let arguments = validate::with_defaults(&wf.plan().tool.arguments, arguments);
    let threads = ex.options.max_concurrency.max(1);
    let start_ms = ex.time.monotonic_ms();
    let started_at = ex.time.wall_ms();
    // In [0, 2^52): the cast is exact.
    let id_bits = (ex.random.next_f64() * (1u64 << 52) as f64) as u64;
    let run_id = format!("run-{id_bits:013x}");
    let trace_id = format!("trace_{:012x}", id_bits & 0xffff_ffff_ffff);
    let pool = ex.worker_pools.take(threads);
    let mut trace = Trace::starting(trace_id, run_id, wf.name(), arguments.clone(), started_at);
    trace.file = wf.plan().file.clone();
    trace.root = Some(wf.root().to_path_buf());
    trace.limits = Some(super::trace::RunLimits::of(&ex.options, wf));
    let pool = match pool {
        Ok(p) => p,
        Err(e) => {
            let error = RunError {
                code: Code::ToolFailed.as_str().to_string(),
                step: None,
                message: format!("cannot start the worker pool: {e}"),
            };
            trace.error = Some(error.clone());
            trace.ended_at = rfc3339(ex.time.wall_ms());
            trace.aggregate();
            return Run { status: RunStatus::Failed, result: None, error: Some(error), trace };
        }
    };
    let deadline_ms = ex.options.deadline.map(|d| start_ms.saturating_add(ms(d)));
    // Expressions evaluated in the run's scopes poll the run's cancellation and deadline.
    let probe: crate::runtime::InterruptProbe = {
        let (cancel, time) = (cancel.clone(), ex.time.clone());
        Arc::new(move || {
            if cancel.is_cancelled() {
                Some(crate::runtime::InterruptReason::Cancelled)
            } else if deadline_ms.is_some_and(|d| time.monotonic_ms() >= d) {
                Some(crate::runtime::InterruptReason::Deadline)
            } else {
                None
            }
        })
    };
    let budget = Arc::new(ex.options.guards.run_budget());
    let ctx = RunCtx {
        ex,
        wf,
        source,
        interrupt: crate::runtime::Interrupt::new().with_probe(probe).with_budget(budget.clone()),
        budget,
        held: Mutex::new(rustc_hash::FxHashSet::default()),
        pool,
        limiter: Arc::new(Limiter::new(threads)),
        start_ms,
        started_wall: started_at,
        deadline_ms,
        deadline_hit: AtomicBool::new(false),
        cancel,
        retries: AtomicU32::new(0),
        trips: AtomicU32::new(0),
        calls: CallBudget::new(ex.options.guards.max_calls_per_run),
    };
    // The root's own arguments are checked like a callee's: against what it declares.
    ctx.emit(Event::RunStarted {
        run_id: &trace.run_id,
        tool: &trace.tool,
        arguments: &arguments,
        started_at: &trace.started_at,
    });
    let refused = data::refuse_run_arguments(wf, &arguments);
    let outcome = ctx.frame(wf.plan(), arguments, String::new(), 0, refused);
    let RunEnd { status, result, error, steps, clock_reads } =
        outcome.into_run().bound_result(ex.options.guards.max_result_bytes);
    trace.status = status;
    trace.result = result.clone();
    trace.error = error.clone();
    trace.ended_at = rfc3339(ex.time.wall_ms());
    trace.duration_ms = ctx.now_rel();
    trace.total_retries = ctx.retries.load(Ordering::SeqCst);
    trace.circuit_breaker_trips = ctx.trips.load(Ordering::SeqCst);
    trace.max_in_flight = ctx.limiter.peak();
    trace.clock_reads = clock_reads;
    trace.steps = steps;
    trace.aggregate();
    ctx.emit(Event::RunEnded { trace: &trace });
    // Every job of the run has returned (its scopes ended): the next run may use the workers.
    ex.worker_pools.give_back(ctx.pool);
    Run { status, result, error, trace }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Driver for RunCtx<'_> {
    const TIMEOUT_BOUNDS_EXPRESSIONS: bool = true;

    fn default_timeout_seconds(&self) -> f64 {
        self.ex.options.timeout_seconds
    }

    fn retry_policy(&self, step: &StepPlan) -> RetryPolicy {
        self.ex.options.retry.with_step(step.retry.as_ref())
    }

    fn max_fan_out(&self) -> usize {
        self.ex.options.guards.max_fan_out
    }

    fn now_rel(&self) -> u64 {
        self.ex.time.monotonic_ms().saturating_sub(self.start_ms)
    }

    fn wall_at(&self, rel_ms: u64) -> smol_str::SmolStr {
        super::trace::rfc3339_shared(self.started_wall.saturating_add(i64::try_from(rel_ms).unwrap_or(i64::MAX)))
    }

    fn deadline_passed(&self) -> bool {
        let passed = self.deadline_hit.load(Ordering::SeqCst)
            || self.cancel.is_cancelled()
            || self.calls.exhausted()
            || self.deadline_ms.is_some_and(|d| self.ex.time.monotonic_ms() >= d);
        if passed {
            self.deadline_hit.store(true, Ordering::SeqCst);
        }
        passed
    }

    fn deadline_hit(&self) -> bool {
        self.deadline_hit.load(Ordering::SeqCst)
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn deadline_seconds(&self) -> f64 {
        self.ex.options.deadline.map_or(0.0, |d| d.as_secs_f64())
    }

    fn clock(&self, key: &str, eval_timeout: Option<f64>) -> Arc<ClockScope> {
        let recorded = self.source.clock_reads(key);
        let eval_timeout = eval_timeout.map(|t| ms(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX)));
        ClockScope::new(self.ex.time.clone(), recorded, Some(self.interrupt.clone()), eval_timeout)
    }

    fn response_rejected(&self, key: &str, message: &str) {
        self.emit(Event::ResponseRejected { step: key, error: message });
    }

    fn calls(&self) -> &CallBudget {
        &self.calls
    }
}

impl<'a> RunCtx<'a> {
    /// Records that the run's deadline has passed: no step or retry starts any more.
    pub(crate) fn mark_deadline_hit(&self) {
        self.deadline_hit.store(true, Ordering::SeqCst);
    }

    /// Cancels the run, as the host would.
    pub(crate) fn cancel_run(&self) {
        self.cancel.cancel();
    }

    pub(crate) fn emit(&self, e: Event<'_>) {
        if let Some(o) = &self.ex.observer {
            o.event(&e);
        }
    }

    /// Runs one composite: its own `transform_arguments`, its steps (each spawned as soon as
    /// its dependencies have ended), its result.
    fn frame(
        &self,
        plan: &Plan,
        arguments: Value,
        prefix: String,
        depth: usize,
        refused: Option<Failure>,
    ) -> FrameOutcome {
        let clock = self.clock(&format!("{prefix}$tool"), None);
        let frame = Frame::open(plan, arguments, prefix, depth, refused, &clock);
        // The roots are taken before any step starts: a root that ends while this loop runs
        // brings its dependents' counts to 0 and spawns them itself, and they must not be
        // spawned a second time here (the tool would be called twice).
        let roots = frame.roots();
        self.pool.in_place_scope_fifo(|s| {
            for id in roots {
                self.spawn_step(s, &frame, id);
            }
        });
        frame.close(self.wf.name(), &clock)
    }

    fn spawn_step<'s>(&'s self, s: &ScopeFifo<'s>, frame: &'s Frame<'s>, id: StepId) {
        s.spawn_fifo(move |s| self.run_steps(s, frame, id));
    }

    /// Runs step `id`, then the first dependent it readied, and so on, on this thread: a
    /// chain costs no spawn (a queued job, and often a sleeping worker woken for it) per
    /// step. Every other dependent readied is spawned, in plan order, before this thread
    /// goes on.
    fn run_steps<'s>(&'s self, s: &ScopeFifo<'s>, frame: &'s Frame<'s>, mut id: StepId) {
        loop {
            let (value, trace) = self.step(frame, id);
            let mut next = None;
            frame.step_ended(id, value, trace, |d| {
                if next.is_none() {
                    next = Some(d);
                } else {
                    self.spawn_step(s, frame, d);
                }
            });
            match next {
                Some(d) => id = d,
                None => return,
            }
        }
    }

    /// One step, from its conditions to its result (`step.rs` decides; this does the calls
    /// and tells the observer); never fails: a failure is in the trace and in the frame.
    fn step(&self, frame: &Frame<'_>, id: StepId) -> (Value, Box<StepTrace>) {
        let mut run = match frame.start(id, self.wf, self) {
            Start::Cancelled { key, trace } => {
                self.emit(Event::StepEnded { step: &key, status: trace.status, reason: trace.reason.as_deref() });
                return (Value::Null, trace);
            }
            Start::Run(run) => run,
        };
        self.emit(Event::StepStarted { step: &run.key, tool: run.step.tool() });
        let outcome = match run.next(self) {
            Next::Done(outcome) => outcome,
            Next::Call(args) => {
                let call = self.call(run.site(), &args, &|| frame.failed());
                run.called(self, call)
            }
            Next::FanOut(fan) => {
                let outs = self.fan_out(frame, run.site(), &fan);
                run.fanned_out(self, outs.into_iter().filter_map(OnceLock::into_inner))
            }
        };
        let Ended { key, value, mut trace, calls } = run.end(self, outcome);
        if calls > 0 {
            trace.circuit_state = Some(self.ex.breakers.state(&trace.tool));
        }
        self.emit(Event::StepEnded {
            step: &key,
            status: trace.status,
            reason: trace.reason.as_deref().or(trace.error.as_deref()),
        });
        (value, trace)
    }

    /// A parallel step's children, concurrently; their outcomes in input order (each slot
    /// set once its child ended; read in place, not moved into a list of its own).
    fn fan_out(
        &self,
        frame: &Frame<'_>,
        site: Site<'_>,
        fan: &FanOut,
    ) -> Vec<OnceLock<(ChildTrace, Result<Value, Failure>)>> {
        let key = site.key;
        let n = fan.items.len();
        self.emit(Event::FanOut { step: key, children: n });
        let slots: Vec<OnceLock<(ChildTrace, Result<Value, Failure>)>> = (0..n).map(|_| OnceLock::new()).collect();
        let fail_fast = FailFast::new(Some(frame), fan.continue_on_error);
        let ended = AtomicUsize::new(0);
        // One job per worker, each taking the next child in input order until none is left:
        // the children start in the order one job per child would start them, without a
        // spawn (and a wake-up) for each. A composite callee keeps a job per child: a worker
        // that waits for a child's steps works on other jobs meanwhile, and should come back
        // to it after one child, not after a whole share of the fan-out.
        let next = AtomicUsize::new(0);
        let composite = matches!(site.tool, Some(super::workflow::Tool::Composite { .. }));
        let jobs = if composite { n } else { n.min(self.pool.current_num_threads()) };
        self.pool.in_place_scope_fifo(|s| {
            for _ in 0..jobs {
                let (slots, fail_fast, ended, next) = (&slots, &fail_fast, &ended, &next);
                s.spawn_fifo(move |_| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = fan.items.get(i) else { break };
                    let arguments = || fan.child_arguments(&site, item);
                    let end = match ChildRun::start(self, fail_fast, key, i, arguments) {
                        Err(end) => end,
                        Ok(child) => {
                            let call = match fan.refused(&child.key, item) {
                                Some(refused) => refused,
                                None => self
                                    .call(Site { key: &child.key, ..site }, &child.arguments, &|| fail_fast.stopped()),
                            };
                            child.end(self, fail_fast, &site, call)
                        }
                    };
                    fail_fast.ended(&end);
                    let done = ended.fetch_add(1, Ordering::SeqCst) + 1;
                    self.emit(Event::ChildEnded { step: key, ended: done, children: n });
                    let _ = slots[i].set((end.trace, end.out));
                });
            }
        });
        slots
    }

    /// One call of a callee with its retries: a composite callee runs as a nested frame, a
    /// primitive one goes to the runner (or the recording). `stopped` says that the run is
    /// failing: a call still waiting for a slot then does not start.
    fn call(&self, site: Site<'_>, args: &Value, stopped: &dyn Fn() -> bool) -> CallOutcome {
        let Site { tool_path, key, policy, timeout_seconds, .. } = site;
        let (def, file) = match site.callee(self, args, self.ex.options.max_depth) {
            Callee::Refused(out) => return out,
            Callee::Composite { plan, prefix, depth } => {
                return CallOutcome::of_composite(tool_path, self.frame(plan, args.clone(), prefix, depth, None))
            }
            Callee::Primitive { def, file } => (def, file),
        };
        // Most calls take one attempt.
        let mut attempts = Vec::with_capacity(1);
        let mut n: u32 = 0;
        let result = loop {
            let call = AttemptCall { tool_path, def, file, args, key, n, timeout_seconds, stopped };
            let delay_ms = if n == 0 { 0 } else { self.source.delay_ms(self, key, n, policy) };
            // A call the open breaker will refuse fails at once: no back-off wait, no further
            // attempt (SPEC §6.5).
            if let Some(message) = self.source.refused_at_once(self, &call, delay_ms) {
                attempts.push(Attempt::new(n + 1, Outcome::Refused, Err(message.clone())).at(self.now_rel(), 0));
                self.attempt_ended(key, tool_path, args, def.is_some(), attempts.last());
                break Err(Failure::of_call(key, Outcome::Refused, n + 1, message));
            }
            if delay_ms > 0 {
                if self.deadline_ms.is_some_and(|d| self.ex.time.monotonic_ms().saturating_add(delay_ms) >= d) {
                    self.deadline_hit.store(true, Ordering::SeqCst);
                    break Err(self.stop_failure(key));
                }
                self.ex.time.sleep_unless(Duration::from_millis(delay_ms), self.cancel.signal());
                if self.cancel.is_cancelled() {
                    break Err(self.stop_failure(key));
                }
            }
            let started = self.now_rel();
            let Some((outcome, answer)) = self.source.attempt(self, &call) else {
                break Err(Failure::waited_for_slot(key));
            };
            if n > 0 && outcome != Outcome::Refused {
                self.retries.fetch_add(1, Ordering::SeqCst);
            }
            let duration_ms = self.now_rel().saturating_sub(started);
            let said = answer.clone().map_err(|e| e.message);
            attempts.push(Attempt::new(n + 1, outcome, said).after(delay_ms).at(started, duration_ms));
            self.attempt_ended(key, tool_path, args, def.is_some(), attempts.last());
            match answer {
                // Checked against the declared responses by the caller, after the step's
                // `transform_responses` (SPEC §6.4). The run holds the answer until it ends:
                // charged to its memory.
                Ok(v) => match self.hold(&v) {
                    Ok(()) => break Ok(v),
                    Err(message) => break Err(Failure::new(key, Code::MemoryLimit, message)),
                },
                Err(e) if outcome == Outcome::Refused => {
                    break Err(Failure::of_call(key, Outcome::Refused, n + 1, e.message))
                }
                Err(e) => {
                    let deadline = matches!(outcome, Outcome::Deadline | Outcome::Cancelled);
                    let retryable = !deadline && e.kind == ErrorKind::Transient;
                    if retryable && n < policy.max_retries && !self.deadline_passed() {
                        // A step without `retry` of its own repeats a call that may have
                        // reached the tool only when the tool is safe to call twice
                        // (docs/plans.md, "Retries"): a timed-out `refund` is not re-sent.
                        if site.retry_asked || e.unsent || self.source.repeatable(self, &call) {
                            self.emit(Event::StepRetried { step: key, attempt: n + 1, reason: &e.message });
                            n += 1;
                            continue;
                        }
                        let message = format!(
                            "{} (not retried: `{tool_path}` is not marked read-only or idempotent and the call may have \
                             reached it; a `retry` on the step retries it anyway)",
                            e.message
                        );
                        break Err(Failure::of_call(key, outcome, n + 1, message));
                    }
                    break Err(Failure::of_call(key, outcome, n + 1, e.message));
                }
            }
        };
        CallOutcome { result, attempts, nested: None, nested_clock_reads: Vec::new(), partial: false }
    }

    /// Charges a tool's answer to the run's memory, which holds it until the run ends: what
    /// it does not share with the answers held before (`Value::alloc_bytes_unseen_within`).
    fn hold(&self, answer: &Value) -> Result<(), String> {
        let left = self.budget.memory_left();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((bytes, added)) = answer.alloc_bytes_unseen_within(left, &mut held) else {
            return Err(self.budget.memory_error());
        };
        self.budget.hold(bytes).inspect_err(|_| {
            for at in added {
                held.remove(&at);
            }
        })
    }

    /// Tells the observer that an attempt at a primitive call ended.
    fn attempt_ended(&self, key: &str, tool: &str, arguments: &Value, resolved: bool, attempt: Option<&Attempt>) {
        let (Some(o), Some(a)) = (&self.ex.observer, attempt) else { return };
        let invoked_at = self.wall_at(a.started_ms);
        let completed_at = self.wall_at(a.started_ms.saturating_add(a.duration_ms));
        o.event(&Event::AttemptEnded {
            step: key,
            tool,
            arguments,
            attempt: a,
            resolved,
            invoked_at: &invoked_at,
            completed_at: &completed_at,
        });
    }

    pub(crate) fn refusal_message(&self, tool_path: &str, refusal: Refusal) -> String {
        match refusal {
            Refusal::OpenUntil(at) => {
                let now = self.ex.time.monotonic_ms();
                let wall = self.ex.time.wall_ms().saturating_add(i64::try_from(at.saturating_sub(now)).unwrap_or(i64::MAX));
                format!(
                    "the circuit breaker of `{tool_path}` is open: the call was refused; it half-opens in {} s, at {}",
                    at.saturating_sub(now) as f64 / 1000.0,
                    rfc3339(wall)
                )
            }
            Refusal::TrialsInFlight => format!(
                "the circuit breaker of `{tool_path}` is half-open and its trial calls are in flight: the call was refused"
            ),
        }
    }

    /// One live attempt: through the limiter and the breaker to the runner, under the
    /// attempt's timeout and the run's deadline. Timeouts come back as transient errors.
    /// `None` when the call never started: the run began failing while it waited for a slot.
    fn live_attempt(&self, call: &AttemptCall<'_>) -> Option<(Outcome, Result<Value, ToolError>)> {
        let AttemptCall { tool_path, def, file, args, key, n, timeout_seconds, stopped } = *call;
        let time = &self.ex.time;
        let permit = self.limiter.acquire(&|| stopped() || self.cancel.is_cancelled())?;
        if let Admission::Refused = self.ex.breakers.admit(tool_path, time.monotonic_ms()) {
            let refusal = self.ex.breakers.refusal(tool_path, time.monotonic_ms()).unwrap_or(Refusal::TrialsInFlight);
            return Some((Outcome::Refused, Err(ToolError::transient(self.refusal_message(tool_path, refusal)))));
        }
        self.emit(Event::AttemptStarted { step: key, tool: tool_path, attempt: n + 1 });
        let started = time.monotonic_ms();
        // Saturating: a timeout too large for the clock is no timeout at all, never one
        // that has already passed (the range check keeps `.tool` values to 1–300 s).
        let timeout = Duration::try_from_secs_f64(timeout_seconds).unwrap_or(Duration::MAX);
        let step_deadline = Some(started.saturating_add(ms(timeout)));
        let deadline = match (step_deadline, self.deadline_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A call that cannot block sees the run's token: it is cancelled exactly when the
        // run is (its timeout is judged when it returns, after which nobody looks at its
        // token). A call on a call thread gets a token of its own, which its timeout cancels.
        let here = ToolCall {
            tool_path,
            definition: def.map(|d| &**d),
            file: file.map(|f| f.as_path()),
            arguments: args,
            cancel: self.cancel,
            timeout: deadline.map(|d| Duration::from_millis(d.saturating_sub(started))),
            attempt: n + 1,
        };
        let answer = match deadline {
            // A call that cannot block runs here, on the worker: no hand-off to a call
            // thread. Its timeout is judged when it returns, by the rule of
            // `call_with_deadline`: an answer that came after the deadline is a timeout.
            Some(deadline) if self.ex.runner.can_block(&here) => {
                self.call_with_deadline(call, &self.cancel.child(), deadline, permit)
            }
            _ => {
                let r = call_runner(&*self.ex.runner, &here);
                let at = time.monotonic_ms();
                drop(permit);
                match deadline {
                    Some(d) if at > d => None,
                    _ => Some(r),
                }
            }
        };
        let (outcome, answer) = match answer {
            // Whatever a cancelled call returned (an error, usually), the run was cancelled.
            Some(Err(e)) if self.cancel.is_cancelled() => {
                (Outcome::Cancelled, Err(ToolError::transient(format!("the run was cancelled: {e}"))))
            }
            None if self.cancel.is_cancelled() => {
                (Outcome::Cancelled, Err(ToolError::transient("the run was cancelled")))
            }
            Some(Ok(v)) => (Outcome::Ok, Ok(v)),
            Some(Err(e)) if e.kind == ErrorKind::Transient => (Outcome::Transient, Err(e)),
            Some(Err(e)) => (Outcome::Permanent, Err(e)),
            None if step_deadline.is_some_and(|s| Some(s) <= self.deadline_ms || self.deadline_ms.is_none()) => {
                (Outcome::Timeout, Err(ToolError::transient(format!("the call timed out after {timeout_seconds} s"))))
            }
            None => {
                self.deadline_hit.store(true, Ordering::SeqCst);
                let secs = self.ex.options.deadline.map_or(0.0, |d| d.as_secs_f64());
                (Outcome::Deadline, Err(ToolError::transient(format!("the run's deadline of {secs} s passed"))))
            }
        };
        self.breaker_saw(tool_path, outcome);
        Some((outcome, answer))
    }

    /// Tells the tool's breaker how an attempt that reached the tool ended (a live one, or a
    /// replayed one: a replay's breakers go through the recorded attempts as the run's did),
    /// counting the trips.
    pub(crate) fn breaker_saw(&self, tool_path: &str, outcome: Outcome) {
        match outcome {
            Outcome::Ok | Outcome::Permanent => self.ex.breakers.success(tool_path),
            // The host stopped the call: says nothing about the tool's health. A refused
            // call never reached it.
            Outcome::Cancelled | Outcome::Refused => {}
            _ => {
                if self.ex.breakers.failure(tool_path, self.ex.time.monotonic_ms()) {
                    self.trips.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    /// Runs the call on a call thread (reused, `threads.rs`) and waits for it until `deadline`; `None` when
    /// it did not end in time (it is then cancelled, and given the grace period to stop).
    fn call_with_deadline(
        &self,
        call: &AttemptCall<'_>,
        cancel: &CancelToken,
        deadline: u64,
        permit: Permit,
    ) -> Option<Result<Value, ToolError>> {
        let AttemptCall { tool_path, def, file, args, n, .. } = *call;
        let attempt = n + 1;
        // The answer, with the monotonic time it came at: an answer that came after the
        // deadline is a timeout even when this thread saw it late (on a virtual clock, a
        // tool "takes" time by sleeping on it, and can finish before the waiter looks).
        type Slot = Arc<Mutex<Option<(Result<Value, ToolError>, u64)>>>;
        let slot: Slot = Arc::new(Mutex::new(None));
        let done = Arc::new(Signal::new());
        let timeout = Duration::from_millis(deadline.saturating_sub(self.ex.time.monotonic_ms()));
        let spawned = {
            let (runner, tool_path, def, file, args, cancel, time) = (
                self.ex.runner.clone(),
                tool_path.to_string(),
                def.cloned(),
                file.cloned(),
                args.clone(),
                cancel.clone(),
                self.ex.time.clone(),
            );
            let (slot, told) = (slot.clone(), done.clone());
            self.ex.call_threads.run(
                move || {
                    let call = ToolCall {
                        tool_path: &tool_path,
                        definition: def.as_deref(),
                        file: file.as_deref(),
                        arguments: &args,
                        cancel: &cancel,
                        timeout: Some(timeout),
                        attempt,
                    };
                    let r = call_runner(&*runner, &call);
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((r, time.monotonic_ms()));
                    drop(permit);
                },
                move || told.raise(),
            )
        };
        if let Err(e) = spawned {
            return Some(Err(ToolError::transient(format!("cannot start a thread for the call: {e}"))));
        }
        if self.ex.time.wait(&done, deadline) {
            match slot.lock().unwrap_or_else(PoisonError::into_inner).take() {
                Some((r, at)) if at <= deadline => return Some(r),
                _ => {}
            }
        }
        cancel.cancel();
        done.wait_real(Some(self.ex.options.cancel_grace));
        None
    }
}

/// `runner.call(call)`, with a panic in the runner caught and reported as the attempt's
/// permanent error (on a call thread as on a worker: the run goes on and its trace says
/// what happened).
fn call_runner(runner: &dyn super::runner::Runner, call: &ToolCall<'_>) -> Result<Value, ToolError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.call(call))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(ToolError::permanent(format!("the runner panicked: {what}")))
    })
}
