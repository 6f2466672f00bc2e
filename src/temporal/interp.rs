//! The workflow (`TdslWorkflow`) and its interpreter: one checked composite, step by step,
//! as `exec::scheduler` runs it locally (SPEC §6), with every primitive call an activity
//! (`activity.rs`), and a fan-out of a primitive tool's children in batches, an activity
//! each (`interp/batched.rs`, `batch.rs`). The worker (`worker.rs`) registers both and depends on this module,
//! never the reverse.
//!
//! It is deterministic, as Temporal requires of workflow code: time comes from the workflow
//! context (the time of the current workflow task), nothing random is drawn, steps that are
//! ready together start in plan order and fan-out children in input order, and the
//! concurrency limit is a FIFO semaphore, so the commands it issues depend only on the
//! history. It is a driver of the step core (`exec::step`): what a composite, a step, a
//! call and a fan-out child are is decided there, for both engines; this file makes the
//! activities and the child workflows, keeps the FIFO slots and the progress. Data flow
//! (REFs, conditions, transforms) is `exec::data`'s, validation `tool::validate`'s: the
//! same code a local run uses.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use temporalio_common::protos::temporal::api::failure::v1::{failure::FailureInfo, Failure as ProtoFailure};
use temporalio_common::RetryPolicy as TemporalRetry;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCloseTimeouts, ActivityExecutionError, ActivityOptions, ApplicationFailure, ChildWorkflowOptions,
    WorkflowContext, WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use super::activity::TdslActivities;
pub(crate) use super::bounds::CHUNK;
use super::bounds::{calls_bound, calls_per_child};
use super::ordered::{first_ready, join_in_order};

mod batched;
mod history;
mod lending;
use super::{
    AttemptNote, CallInput, Chunk, ChunkChild, ChunkOutput, FailureKind, RunInput, RunOutput, INTERPRETER_VERSION,
};
use crate::analysis::{Plan, StepId, StepPlan};
use crate::diagnostic::Code;
use crate::exec::clock::ClockScope;
use crate::exec::data::{self, CallOutcome, Failure, FrameOutcome, RunEnd};
use crate::exec::retry::RetryPolicy;
use crate::exec::step::{
    CallBudget, Callee, ChildEnd, ChildRun, Driver, Ended, FailFast, FanOut, Frame, Next, Site, Start,
};
use crate::exec::trace::rfc3339;
use crate::exec::{Attempt, ChildTrace, Outcome, Signal, StepStatus, StepTrace, Time, Tool, Trace, Workflow};
use crate::runtime::{Interrupt, RunBudget};
use crate::tool::validate;
use crate::value::{Map, Value};
use history::{activity_error_bytes, json_bytes, HistoryBytes, PATCH_MARKER_BYTES};

/// A step's end: what its dependents' REFs see, and its trace.
type StepEnd = (Value, Box<StepTrace>);

/// The workflow: one composite run, and its progress for the `progress` query.
#[workflow]
#[derive(Default)]
pub struct TdslWorkflow {
    progress: super::Progress,
}

#[workflow_methods]
impl TdslWorkflow {
    /// Interprets the composite in `input` and returns its trace.
    #[run(name = "TdslWorkflow")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: RunInput) -> WorkflowResult<RunOutput> {
        // A run started by a newer client may need behaviour this worker does not have.
        if input.interpreter > INTERPRETER_VERSION {
            return Err(ApplicationFailure::non_retryable(format!(
                "the run needs tdsl's interpreter v{}, and this worker has v{INTERPRETER_VERSION}: upgrade the workers of this task queue",
                input.interpreter
            ))
            .into());
        }
        let wf = match super::load_input(&input) {
            Ok(wf) => wf,
            Err(e) => return Err(ApplicationFailure::non_retryable(e).into()),
        };
        let ctx: &WorkflowContext<Self> = ctx;
        let interp = Interp::new(ctx, &wf, &input);
        if let Some(chunk) = &input.chunk {
            let out = interp.run_chunk(chunk).await;
            return Ok(RunOutput { interpreter: INTERPRETER_VERSION, trace: String::new(), chunk: Some(out) });
        }
        let trace = interp.run(input.arguments.clone()).await;
        let trace = super::pack_trace(&trace).map_err(ApplicationFailure::non_retryable)?;
        if let Some(e) = super::over_payload_limit("the run's trace (gzipped)", trace.len()) {
            return Err(ApplicationFailure::non_retryable(e).into());
        }
        let out = RunOutput { interpreter: INTERPRETER_VERSION, trace, chunk: None };
        // A cancelled run ends CANCELED on the server, with its trace as the details.
        if interp.cancelled() {
            return Err(WorkflowTermination::cancelled_with_details(out));
        }
        Ok(out)
    }

    /// The run's progress: counts, and the step lines after line `since`.
    #[query(name = "progress")]
    pub fn progress(&self, _ctx: &WorkflowContextView, since: u64) -> super::ProgressReport {
        self.progress.report(since)
    }

    pub(crate) fn progress_mut(&mut self) -> &mut super::Progress {
        &mut self.progress
    }
}

/// The patch (`ctx.patched`) of interpreter v3's one budget of calls for the whole run: a
/// workflow that has it lends its fan-out chunks their share of its calls and waits for
/// what they give back; the history of a v2 run, which has not, replays as v2 ran (each
/// chunk counted its own calls).
const ONE_CALL_BUDGET: &str = "tdsl-one-call-budget";

/// The patch (`ctx.patched`) of interpreter v4's batches: a workflow that has it runs the
/// children of a fan-out of a primitive tool as activities of many children each
/// (`batch.rs`); the history of a v3 run, which has not, replays with one activity per child.
const BATCHED_CHILDREN: &str = "tdsl-batched-children";

/// The patch (`ctx.patched`) of interpreter v5's one budget of fuel and memory for the whole
/// run (`--max-run-fuel`, `--max-run-memory`): a workflow that has it charges every
/// expression it evaluates and every tool answer it keeps to the run's budget, and lends its
/// fan-out chunks their share; the history of a v4 run, which has not, replays with each
/// expression's own limits only.
const RUN_BUDGET: &str = "tdsl-run-budget";

/// How a primitive call ended ([`Interp::settle_call`]): its last attempt's outcome, the
/// attempts made, its answer or error, the notes of the failed attempts before the last.
type CallEnd = (Outcome, u32, Result<Value, String>, Vec<AttemptNote>);

/// The wall clock of expressions: the workflow task's time, fixed while one step
/// evaluates (deterministic on replay).
struct TaskTime(i64);

impl Time for TaskTime {
    fn monotonic_ms(&self) -> u64 {
        u64::try_from(self.0).unwrap_or(0)
    }
    fn sleep(&self, _d: Duration) {}
    fn wall_ms(&self) -> i64 {
        self.0
    }
    fn wait(&self, _signal: &Signal, _deadline_ms: u64) -> bool {
        false
    }
}

/// Everything one run shares.
pub(crate) struct Interp<'a> {
    ctx: &'a WorkflowContext<TdslWorkflow>,
    wf: &'a Workflow,
    input: &'a RunInput,
    /// The concurrency limit: calls in flight, and the FIFO of calls waiting for a slot
    /// (tickets served in the order they were taken).
    max_in_flight: usize,
    in_flight: Cell<usize>,
    /// Of `in_flight`, the slots lent to fan-out chunks (their child workflows' calls).
    chunk_slots: Cell<usize>,
    next_ticket: Cell<u64>,
    serving: Cell<u64>,
    peak: Cell<usize>,
    start_ms: i64,
    deadline_ms: Option<i64>,
    deadline_hit: Cell<bool>,
    retries: Cell<u32>,
    /// The calls this workflow may still make: the run's `--max-calls-per-run`, or what
    /// the parent lent a fan-out chunk's child workflow ([`Chunk::calls`]). Derived from
    /// the history alone (the calls started, the chunks' outputs), so the same on replay.
    calls: CallBudget,
    /// Whether the run keeps one budget of calls across its chunks ([`ONE_CALL_BUDGET`]).
    one_budget: bool,
    /// Whether fan-outs of primitive tools run in batches ([`BATCHED_CHILDREN`]).
    batched: bool,
    /// The chunks running with calls lent from `calls`.
    lent: Cell<usize>,
    /// Whether the run keeps one budget of fuel and memory ([`RUN_BUDGET`]).
    run_budget: bool,
    /// The run's fuel and memory, or what the parent lent a fan-out chunk's child workflow
    /// ([`Chunk::fuel`], [`Chunk::memory`]): charged by every expression this workflow
    /// evaluates (through `interrupt`) and every tool answer it keeps. Derived from the
    /// history alone — expressions count fuel in steps of the VM and bytes by the values
    /// they build, evaluated one at a time in workflow code; answers and chunks' outputs
    /// are in the history — so a replay counts the same. `None` without [`RUN_BUDGET`].
    budget: Option<Arc<RunBudget>>,
    /// What `budget` started with: the run's whole budget, or a chunk's lent share.
    budget_lent: (u64, u64),
    /// The interrupt every expression of this workflow evaluates under: it carries
    /// `budget` (no deadline, no probe: workflow code may not stop on a clock).
    interrupt: Option<Interrupt>,
    /// The addresses of the lists, objects and long strings of the answers this workflow
    /// keeps, each charged once (as a local run's, `exec::scheduler`).
    held: RefCell<rustc_hash::FxHashSet<usize>>,
    /// Attempts made so far at each mocked tool: where its mock answers continue.
    mock_calls: RefCell<HashMap<String, usize>>,
    mock: Option<Map>,
    /// The bytes of payloads this workflow has put into its history and got from it so far
    /// ([`HistoryBytes`]): checked against `--temporal-history-bytes` before each call,
    /// batch and child workflow.
    history_bytes: HistoryBytes,
}

fn now_of(ctx: &WorkflowContext<TdslWorkflow>) -> i64 {
    ctx.workflow_time()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

impl<'a> Interp<'a> {
    pub(crate) fn new(ctx: &'a WorkflowContext<TdslWorkflow>, wf: &'a Workflow, input: &'a RunInput) -> Interp<'a> {
        let start_ms = now_of(ctx);
        let deadline_ms = input
            .options
            .deadline_seconds
            .map(|d| start_ms.saturating_add(i64::try_from(secs(d).as_millis()).unwrap_or(i64::MAX)));
        let mut interp = Interp {
            ctx,
            wf,
            input,
            max_in_flight: input.options.concurrency.max(1),
            in_flight: Cell::new(0),
            chunk_slots: Cell::new(0),
            next_ticket: Cell::new(0),
            serving: Cell::new(0),
            peak: Cell::new(0),
            start_ms,
            deadline_ms,
            deadline_hit: Cell::new(false),
            retries: Cell::new(0),
            calls: CallBudget::share(
                input.chunk.as_ref().and_then(|c| c.calls).unwrap_or(input.options.max_calls_per_run),
                input.options.max_calls_per_run,
            ),
            // Asked first, before any command: a new run records the patch's marker, the
            // replay of a v2 history (no marker) keeps its v2 path.
            one_budget: ctx.patched(ONE_CALL_BUDGET),
            batched: ctx.patched(BATCHED_CHILDREN),
            lent: Cell::new(0),
            run_budget: ctx.patched(RUN_BUDGET),
            budget: None,
            budget_lent: (0, 0),
            interrupt: None,
            held: RefCell::new(rustc_hash::FxHashSet::default()),
            mock_calls: RefCell::new(HashMap::new()),
            mock: input.mock.as_ref().and_then(Value::as_object).cloned(),
            history_bytes: HistoryBytes::default(),
        };
        // The run's input is in its history's first event; each patch this run has, a
        // marker.
        interp.history_bytes.add(json_bytes(input));
        for (patch, has) in
            [(ONE_CALL_BUDGET, interp.one_budget), (BATCHED_CHILDREN, interp.batched), (RUN_BUDGET, interp.run_budget)]
        {
            if has {
                interp.history_bytes.add(patch.len() + PATCH_MARKER_BYTES);
            }
        }
        // The run's budget, or the share its parent lent this chunk. A run (or a chunk) of a
        // client without it has none: its expressions have their own limits only, as in v4.
        let options = &input.options;
        let budget = match (interp.run_budget, options.max_run_fuel, options.max_run_memory, &input.chunk) {
            (true, Some(fuel), Some(memory), None) => Some((RunBudget::new(fuel, memory), (fuel, memory))),
            (true, Some(fuel), Some(memory), Some(chunk)) => match (chunk.fuel, chunk.memory) {
                (Some(f), Some(m)) => Some((RunBudget::lent(fuel, f, memory, m), (f.min(fuel), m.min(memory)))),
                _ => None,
            },
            _ => None,
        };
        if let Some((budget, lent)) = budget {
            let budget = Arc::new(budget);
            interp.interrupt = Some(Interrupt::new().with_budget(budget.clone()));
            interp.budget = Some(budget);
            interp.budget_lent = lent;
        }
        interp
    }

    fn now(&self) -> i64 {
        now_of(self.ctx)
    }

    /// Changes the progress the `progress` query answers.
    fn progress(&self, f: impl FnOnce(&mut super::Progress)) {
        self.ctx.state_mut(|w| f(w.progress_mut()));
    }

    /// A step ended: its line, and the count of top-level steps.
    fn step_ended(&self, key: &str, tr: &StepTrace) {
        let line = match (tr.status, tr.reason.as_deref().or(tr.error.as_deref())) {
            (StepStatus::Completed, _) => format!("✔ {key}"),
            (s, Some(r)) => format!("• {key} {} ({r})", s.as_str()),
            (s, None) => format!("• {key} {}", s.as_str()),
        };
        let top = !key.contains('/');
        self.progress(|p| {
            if top {
                p.counts().steps_done += 1;
            }
            p.line(line);
        });
    }

    /// Takes `n` of the run's `--concurrency` slots, in the order the waits began (a FIFO of
    /// tickets: the same order on every replay); `Err` when the wait ended because the
    /// workflow was cancelled.
    async fn acquire(&self, n: usize) -> Result<(), ()> {
        let ticket = self.next_ticket.get();
        self.next_ticket.set(ticket + 1);
        let waited = self
            .ctx
            .wait_condition(|_| self.serving.get() == ticket && self.in_flight.get() + n <= self.max_in_flight)
            .await;
        self.serving.set(ticket + 1);
        waited.map_err(|_| ())?;
        self.in_flight.set(self.in_flight.get() + n);
        Ok(())
    }

    fn release(&self, n: usize) {
        self.in_flight.set(self.in_flight.get().saturating_sub(n));
    }

    /// Whether the run was cancelled from Temporal (its UI, CLI or API).
    pub(crate) fn cancelled(&self) -> bool {
        self.ctx.cancellation_token().is_cancelled()
    }

    /// The whole run, from its arguments to its trace.
    pub(crate) async fn run(&self, arguments: Value) -> Trace {
        let wf = self.wf;
        let arguments = validate::with_defaults(&wf.plan().tool.arguments, arguments);
        let run_id = self.ctx.run_id().to_string();
        let mut trace = Trace::starting(
            format!("trace_{}", self.ctx.workflow_id()),
            run_id,
            wf.name(),
            arguments.clone(),
            self.start_ms,
        );
        let refused = data::refuse_run_arguments(wf, &arguments);
        let steps = wf.plan().steps.len();
        self.progress(|p| p.counts().steps = steps);
        let outcome = self.frame(wf.plan(), arguments, String::new(), 0, refused).await;
        // As a local run: a result past --max-result-bytes is no result (E0817), refused
        // before the trace carries it.
        let RunEnd { status, result, error, steps, clock_reads } =
            outcome.into_run().bound_result(self.input.options.max_result_bytes);
        trace.status = status;
        trace.result = result;
        trace.error = error;
        trace.ended_at = rfc3339(self.now());
        trace.duration_ms = self.now_rel();
        trace.total_retries = self.retries.get();
        trace.max_in_flight = self.peak.get();
        trace.clock_reads = clock_reads;
        trace.steps = steps;
        trace.aggregate();
        trace
    }

    /// One composite: its own `transform_arguments`, its steps as their dependencies end
    /// (those ready together in plan order), its result.
    fn frame<'s>(
        &'s self,
        plan: &'s Plan,
        arguments: Value,
        prefix: String,
        depth: usize,
        refused: Option<Failure>,
    ) -> LocalBoxFuture<'s, FrameOutcome> {
        async move {
            let clock = self.clock("", None);
            let frame = Frame::open(plan, arguments, prefix, depth, refused, &clock);
            {
                let frame = &frame;
                let mut running: Vec<(StepId, LocalBoxFuture<'_, StepEnd>)> =
                    frame.roots().into_iter().map(|id| (id, self.step(frame, id).boxed_local())).collect();
                while !running.is_empty() {
                    let (i, (value, trace)) = first_ready(&mut running).await;
                    let (id, _) = running.remove(i);
                    frame.step_ended(id, value, trace, |d| running.push((d, self.step(frame, d).boxed_local())));
                }
            }
            frame.close(self.wf.name(), &clock)
        }
        .boxed_local()
    }

    /// One step, from its conditions to its result (`exec/step.rs` decides; this makes the
    /// activities and child workflows and keeps the progress).
    async fn step(&self, frame: &Frame<'_>, id: StepId) -> (Value, Box<StepTrace>) {
        let mut run = match frame.start(id, self.wf, self) {
            Start::Cancelled { key, trace } => {
                self.step_ended(&key, &trace);
                return (Value::Null, trace);
            }
            Start::Run(run) => run,
        };
        let line = match &run.step.tool_path {
            Some(path) => format!("▶ {} ({path})", run.key),
            None => format!("▶ {} (transform step)", run.key),
        };
        self.progress(|p| p.line(line));
        let outcome = match run.next(self) {
            Next::Done(outcome) => outcome,
            Next::Call(args) => {
                let stopped = || frame.failed();
                let call = self.call(run.site(), &args, &stopped).await;
                run.called(self, call)
            }
            Next::FanOut(fan) => {
                let outs = self.fan_out(frame, run.site(), &fan).await;
                run.fanned_out(self, outs)
            }
        };
        let Ended { key, value, trace, .. } = run.end(self, outcome);
        self.step_ended(&key, &trace);
        (value, trace)
    }

    /// A parallel step's children; results in input order. Past [`CHUNK`] children of a
    /// primitive callee, the children run in child workflows of [`CHUNK`] each, one after
    /// the other (docs/distributed.md, "Temporal's limits").
    async fn fan_out(
        &self,
        frame: &Frame<'_>,
        site: Site<'_>,
        fan: &FanOut,
    ) -> Vec<(ChildTrace, Result<Value, Failure>)> {
        let (key, tool, items, continue_on_error) = (site.key, site.tool, &fan.items, fan.continue_on_error);
        let child_args = |item: &Value| fan.child_arguments(&site, item);
        let width = items.len();
        if self.batched && self.one_budget && matches!(tool, Some(Tool::Primitive { .. })) {
            return self.fan_out_batched(frame, site, fan).await;
        }
        self.progress(|p| p.counts().children += width);
        let size = (CHUNK / calls_per_child(self.wf, tool, 0)).max(1);
        let chunked = items.len() > size;
        let fail_fast = FailFast::new(Some(frame), continue_on_error);
        if chunked {
            // Chunks share the run's --concurrency: each takes `share` slots for its calls
            // while it runs. When a chunk has fewer children than the run's limit (a composite
            // callee making many calls each), several run at once, `share` apiece; with mock
            // answers, one at a time, so that each continues the answers where the last left.
            let chunks: Vec<&[Value]> = items.chunks(size).collect();
            let limit = self.max_in_flight;
            let side_by_side =
                if self.mock.is_some() { 1 } else { (limit / size.min(limit)).clamp(1, chunks.len().max(1)) };
            let share = (limit / side_by_side).max(1);
            let (child_args, fail_fast) = (&child_args, &fail_fast);
            // The most calls one child takes from the run's budget: a chunk is lent that many
            // per child (all that is left when the plan does not bound them).
            let per_child = calls_bound(self.wf, tool, self.input.options.max_fan_out, 0);
            // This fan-out's chunks running with a share of the run's fuel and memory.
            let lending = &Cell::new(0usize);
            let runs = chunks.into_iter().enumerate().map(|(c, chunk)| {
                async move {
                    let first = c * size;
                    let need = per_child.saturating_mul(chunk.len());
                    let got_slots = self.acquire(share).await.is_ok();
                    let acquired = got_slots && self.await_calls(need).await;
                    let lent = if acquired && !fail_fast.stopped() && !self.deadline_passed() {
                        self.lend_calls(need)
                    } else {
                        None
                    };
                    if !acquired || fail_fast.stopped() || self.deadline_passed() {
                        self.calls_back(lent, Some((0, false)));
                        if got_slots {
                            self.release(share);
                        }
                        return (first..first + chunk.len())
                            .map(|i| {
                                let end = ChildRun::not_run(self, fail_fast, key, i);
                                (end.trace, end.out)
                            })
                            .collect::<Vec<_>>();
                    }
                    self.chunk_slots.set(self.chunk_slots.get() + share);
                    let budget = self.lend_budget(side_by_side.saturating_sub(lending.get()));
                    if budget.is_some() {
                        lending.set(lending.get() + 1);
                    }
                    let spec = Chunk {
                        step_key: key.to_string(),
                        tool_path: site.tool_path.to_string(),
                        depth: site.depth,
                        timeout_seconds: site.timeout_seconds,
                        retry: site.policy.clone(),
                        first_index: first,
                        arguments: chunk.iter().map(child_args).collect(),
                        continue_on_error,
                        mock_base: self.mock_calls.borrow().get(site.tool_path).copied().unwrap_or(0),
                        mock_bases: self.mock_calls.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect(),
                        calls: lent,
                        fuel: budget.map(|b| b.0),
                        memory: budget.map(|b| b.1),
                    };
                    let (got, used, spent) = self.run_chunk_child(key, c, spec, share).await;
                    self.calls_back(lent, used);
                    self.budget_back(budget, spent);
                    if budget.is_some() {
                        lending.set(lending.get().saturating_sub(1));
                    }
                    let ended = got.len();
                    self.progress(|p| p.counts().children_done += ended);
                    self.chunk_slots.set(self.chunk_slots.get().saturating_sub(share));
                    self.release(share);
                    let mut outs = Vec::with_capacity(got.len());
                    for end in got {
                        fail_fast.ended(&end);
                        outs.push((end.trace, end.out));
                    }
                    outs
                }
                .boxed_local()
            });
            join_in_order(runs.collect()).await.into_iter().flatten().collect()
        } else {
            let fail_fast = &fail_fast;
            let children = items.iter().enumerate().map(|(i, item)| {
                let a = child_args(item);
                async move {
                    let end = self.child(site, fail_fast, i, a).await;
                    self.progress(|p| p.counts().children_done += 1);
                    fail_fast.ended(&end);
                    (end.trace, end.out)
                }
                .boxed_local()
            });
            // Every child is started at once and waits for a slot in input order (the
            // tickets are FIFO): the same order on every replay.
            join_in_order(children.collect()).await
        }
    }

    /// One fan-out child: its call and how it ended (the caller applies `fail_fast`'s rule).
    async fn child(&self, site: Site<'_>, fail_fast: &FailFast<'_>, i: usize, arguments: Value) -> ChildEnd {
        let child = match ChildRun::start(self, fail_fast, site.key, i, move || arguments) {
            Err(end) => return end,
            Ok(child) => child,
        };
        let call = self.call(Site { key: &child.key, ..site }, &child.arguments, &|| fail_fast.stopped()).await;
        child.end(self, fail_fast, &site, call)
    }

    /// Runs one chunk of a fan-out as a child workflow and reads its children back, with
    /// the calls it made and whether it used up those it was lent (`None` when it did not
    /// say: a chunk that failed as a whole).
    async fn run_chunk_child(
        &self,
        key: &str,
        c: usize,
        spec: Chunk,
        concurrency: usize,
    ) -> (Vec<ChildEnd>, Option<(usize, bool)>, Option<(u64, u64)>) {
        let (first, n, tool_path) = (spec.first_index, spec.arguments.len(), spec.tool_path.clone());
        let mut input = self.input.clone();
        input.chunk = Some(spec);
        input.options.concurrency = concurrency;
        let fail_all = |code: Code, message: String| {
            (first..first + n)
                .map(|i| ChildEnd::failed(i, Failure::new(&format!("{key}[{i}]"), code, message.clone())))
                .collect::<Vec<_>>()
        };
        // Refused before it starts: it made no call, spent no fuel and holds nothing.
        let (none, nothing) = (Some((0, false)), Some((0, 0)));
        let bytes = json_bytes(&input);
        if let Some(e) = super::over_payload_limit("a fan-out chunk's input", bytes) {
            return (fail_all(Code::EngineLimit, e), none, nothing);
        }
        let workflow_id = format!("{}/{key}/chunk-{c}", self.ctx.workflow_id());
        let bytes = bytes.saturating_add(workflow_id.len());
        if let Some(e) = self.over_history_limit(bytes) {
            return (fail_all(Code::EngineLimit, e), none, nothing);
        }
        self.history_bytes.add(bytes);
        let options = ChildWorkflowOptions::builder().workflow_id(workflow_id).build();
        let out = match self.ctx.start_child_workflow(TdslWorkflow::run, input, options).await {
            Ok(started) => started.result().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        self.history_bytes.add(out.as_ref().map_or_else(String::len, json_bytes));
        let chunk = match out.map(|o| o.chunk) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                return (fail_all(Code::ToolFailed, "the fan-out chunk returned no children".to_string()), None, None)
            }
            // The run was cancelled while the chunk ran: its children were cancelled with it.
            Err(_) if self.cancelled() => {
                let children = (first..first + n)
                    .map(|i| ChildEnd::failed(i, self.stop_failure(&format!("{key}[{i}]"))))
                    .collect();
                return (children, None, None);
            }
            Err(e) => return (fail_all(Code::ToolFailed, format!("the fan-out chunk {c} failed: {e}")), None, None),
        };
        let used = Some((chunk.calls, chunk.calls_exhausted));
        let spent = chunk.fuel_spent.zip(chunk.memory_held);
        *self.mock_calls.borrow_mut().entry(tool_path).or_insert(0) = chunk.mock_calls;
        self.mock_calls.borrow_mut().extend(chunk.mock_counts);
        self.retries.set(self.retries.get() + chunk.retries);
        self.peak.set(self.peak.get().max(chunk.max_in_flight));
        let children = chunk
            .children
            .into_iter()
            .map(|c| {
                let out = match c.error {
                    None => Ok(c.trace.result.clone().unwrap_or_default()),
                    Some(f) => Err(f),
                };
                ChildEnd { trace: c.trace, out, partial: c.partial }
            })
            .collect();
        (children, used, spent)
    }

    /// A chunk's own run (the child workflow): every child of it, as the parent would.
    pub(crate) async fn run_chunk(&self, spec: &Chunk) -> ChunkOutput {
        let site = Site {
            tool_path: &spec.tool_path,
            tool: self.wf.tool(&spec.tool_path),
            key: &spec.step_key,
            depth: spec.depth,
            policy: &spec.retry,
            // Not read here: Temporal's retry policy retries the activity.
            retry_asked: false,
            timeout_seconds: spec.timeout_seconds,
        };
        self.mock_calls.borrow_mut().extend(spec.mock_bases.iter().map(|(k, v)| (k.clone(), *v)));
        self.mock_calls.borrow_mut().insert(spec.tool_path.clone(), spec.mock_base);
        // The rule among the chunk's own children; the parent stops its frame when they
        // come back.
        let fail_fast = FailFast::new(None, spec.continue_on_error);
        let children = spec.arguments.iter().enumerate().map(|(j, a)| {
            let fail_fast = &fail_fast;
            async move {
                let end = self.child(site, fail_fast, spec.first_index + j, a.clone()).await;
                fail_fast.ended(&end);
                ChunkChild { trace: end.trace, partial: end.partial, error: end.out.err() }
            }
            .boxed_local()
        });
        let children = join_in_order(children.collect()).await;
        ChunkOutput {
            children,
            mock_calls: self.mock_calls.borrow().get(&spec.tool_path).copied().unwrap_or(0),
            mock_counts: self.mock_calls.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect(),
            retries: self.retries.get(),
            max_in_flight: self.peak.get(),
            calls: self.calls.taken(),
            calls_exhausted: self.calls.exhausted(),
            fuel_spent: self.budget.as_ref().map(|b| self.budget_lent.0.saturating_sub(b.fuel_left())),
            memory_held: self.budget.as_ref().map(|b| self.budget_lent.1.saturating_sub(b.memory_left())),
        }
    }

    /// A slot for the call at `key` (FIFO); the call's outcome when it may not start after
    /// the wait: the run began failing (`stopped`), or stopped (its deadline, its calls, a
    /// cancellation).
    async fn take_slot(&self, key: &str, stopped: &dyn Fn() -> bool) -> Result<(), CallOutcome> {
        if self.acquire(1).await.is_err() {
            return Err(CallOutcome::failed(Failure::waited_for_slot(key)));
        }
        if stopped() {
            self.release(1);
            return Err(CallOutcome::failed(Failure::waited_for_slot(key)));
        }
        if self.deadline_passed() {
            self.release(1);
            return Err(CallOutcome::failed(self.stop_failure(key)));
        }
        Ok(())
    }

    /// One call with its retries: a composite callee as a nested frame, a primitive one as
    /// an activity under Temporal's retry policy. `stopped` says the run is failing: a call
    /// still waiting for a slot then does not start.
    async fn call(&self, site: Site<'_>, args: &Value, stopped: &dyn Fn() -> bool) -> CallOutcome {
        let Site { tool_path, key, policy, timeout_seconds, .. } = site;
        // With one budget for the run, a primitive call takes its slot first and then one of
        // the run's calls, as a local run charges a call when a worker picks it up: children
        // waiting for a slot have taken none. (Before, v2, the call was charged first.)
        let slot_first = self.one_budget && !matches!(site.tool, Some(Tool::Composite { .. }));
        if slot_first {
            if let Err(out) = self.take_slot(key, stopped).await {
                return out;
            }
        }
        // While chunks hold the run's last calls, the call waits for what they give back.
        if !self.await_calls(1).await {
            if slot_first {
                self.release(1);
            }
            return CallOutcome::failed(self.stop_failure(key));
        }
        match site.callee(self, args, self.input.options.max_depth) {
            Callee::Refused(out) => {
                if slot_first {
                    self.release(1);
                }
                return out;
            }
            Callee::Composite { plan, prefix, depth } => {
                return CallOutcome::of_composite(tool_path, self.frame(plan, args.clone(), prefix, depth, None).await)
            }
            Callee::Primitive { .. } => {}
        }
        if !slot_first {
            if let Err(out) = self.take_slot(key, stopped).await {
                return out;
            }
        }
        self.peak.set(self.peak.get().max(self.in_flight.get() - self.chunk_slots.get()));
        let mock = self.mock.as_ref().and_then(|m| m.get(tool_path)).cloned();
        let mock_base = if mock.is_some() { self.mock_calls.borrow().get(tool_path).copied().unwrap_or(0) } else { 0 };
        let input = CallInput {
            tool_path: tool_path.to_string(),
            key: key.to_string(),
            arguments: args.clone(),
            timeout_seconds,
            mock: mock.clone(),
            mock_base,
            max_tool_output: self.input.options.max_tool_output,
            breaker: self.input.options.breaker.clone(),
            retry: Some(policy.clone()),
            seed: self.input.options.seed,
        };
        let bytes = json_bytes(&input);
        if let Some(e) = super::over_payload_limit("the call's arguments", bytes) {
            self.release(1);
            return CallOutcome::failed(Failure::new(key, Code::EngineLimit, e));
        }
        // The activity's summary (its key) goes into the history with its input.
        let bytes = bytes.saturating_add(key.len());
        if let Some(e) = self.over_history_limit(bytes) {
            self.release(1);
            return CallOutcome::failed(Failure::new(key, Code::EngineLimit, e));
        }
        self.history_bytes.add(bytes);
        let retry = TemporalRetry::builder()
            .initial_interval(secs(policy.base_delay_seconds))
            .backoff_coefficient(policy.factor)
            .maximum_interval(secs(policy.max_delay_seconds))
            .maximum_attempts(policy.max_retries + 1)
            .build();
        let start_to_close = secs(timeout_seconds);
        let close = match self.deadline_ms {
            Some(d) => ActivityCloseTimeouts::ScheduleAndStartToClose {
                schedule_to_close: Duration::from_millis(
                    u64::try_from(d.saturating_sub(self.now())).unwrap_or(1).max(1),
                ),
                start_to_close,
            },
            None => ActivityCloseTimeouts::StartToClose(start_to_close),
        };
        let opts = ActivityOptions::with_close_timeouts(close).retry_policy(retry).summary(key.to_string()).build();
        let started = self.now_rel();
        self.progress(|p| p.counts().in_flight += 1);
        let answer = self.ctx.execute_activity(TdslActivities::call_tool, input, opts).await;
        self.release(1);
        self.history_bytes.add(answer.as_ref().map_or_else(activity_error_bytes, json_bytes));
        let duration_ms = self.now_rel().saturating_sub(started);
        let ended = match answer {
            Ok(out) => (Outcome::Ok, out.attempt.max(1), Ok(out.response), out.earlier),
            Err(e) => {
                let (outcome, n, message, notes) = self.classify(&e, policy, timeout_seconds);
                (outcome, n, Err(message), notes)
            }
        };
        if mock.is_some() {
            *self.mock_calls.borrow_mut().entry(tool_path.to_string()).or_insert(0) += ended.1 as usize;
        }
        self.settle_call(site, started, duration_ms, ended)
    }

    /// A primitive call that ran from `started` for `duration_ms` ended: its last attempt's
    /// outcome, the attempts it made, its answer or error, and the notes of its failed
    /// attempts before the last. Its attempts as the trace lists them, and the run's counts.
    fn settle_call(&self, site: Site<'_>, started: u64, duration_ms: u64, ended: CallEnd) -> CallOutcome {
        let Site { key, policy, timeout_seconds, .. } = site;
        let (outcome, n, result, notes) = ended;
        let notes = super::complete_notes(notes, n);
        self.retries.set(self.retries.get() + n.saturating_sub(1));
        self.progress(|p| {
            let c = p.counts();
            c.in_flight = c.in_flight.saturating_sub(1);
            c.retries += n.saturating_sub(1) as usize;
        });
        // The back-off before attempt `a`: what attempt `a - 1` asked for, or (an attempt
        // that left no note) the retry policy's own interval, which has no jitter.
        let delay_before = |a: u32| match notes.iter().find(|n| n.attempt + 1 == a) {
            Some(n) if n.delay_ms > 0 => n.delay_ms,
            Some(_) => {
                let unjittered = RetryPolicy { jitter: 0.0, ..policy.clone() };
                u64::try_from(unjittered.delay(a.saturating_sub(2), &crate::exec::SeededRandom::new(0)).as_millis())
                    .unwrap_or(u64::MAX)
            }
            None => 0,
        };
        let delays: Vec<u64> = (1..=n).map(delay_before).collect();
        let delay_of = |a: u32| delays.get((a as usize).saturating_sub(1)).copied().unwrap_or(0);
        // Each attempt's start: the call's, then each earlier attempt's duration and the
        // back-off after it (an attempt that left no note ran out its timeout).
        let timeout_ms = u64::try_from(secs(timeout_seconds).as_millis()).unwrap_or(u64::MAX);
        let mut at = started;
        let mut attempts: Vec<Attempt> = notes
            .into_iter()
            .map(|note| {
                let lost = note.outcome == "lost";
                let duration_ms = if lost { timeout_ms } else { note.duration_ms };
                let started_ms = at.saturating_add(delay_of(note.attempt));
                at = started_ms.saturating_add(duration_ms);
                let outcome = match note.outcome.as_str() {
                    "transient" => Outcome::Transient,
                    "permanent" => Outcome::Permanent,
                    _ => Outcome::Timeout,
                };
                Attempt::new(note.attempt, outcome, Err(note.error))
                    .after(delay_of(note.attempt))
                    .at(started_ms, duration_ms)
            })
            .collect();
        let last_start = at.saturating_add(delay_of(n)).min(started.saturating_add(duration_ms));
        let last_duration = started.saturating_add(duration_ms).saturating_sub(last_start);
        attempts.push(Attempt::new(n, outcome, result.clone()).after(delay_of(n)).at(last_start, last_duration));
        // A cancelled call's message never counted its attempts here (a local run's does).
        let counted = if outcome == Outcome::Cancelled { 1 } else { n };
        let result = match result {
            // The run holds the answer until it ends: charged to its memory, as locally.
            Ok(v) => self.hold_answer(&v).map(|()| v).map_err(|m| Failure::new(key, Code::MemoryLimit, m)),
            Err(message) => Err(Failure::of_call(key, outcome, counted, message)),
        };
        CallOutcome { result, attempts, nested: None, nested_clock_reads: Vec::new(), partial: false }
    }

    /// How a failed activity ended: its outcome, the attempts it took, the message, and the
    /// notes of its failed attempts (from the failure's details or last heartbeat).
    fn classify(
        &self,
        e: &ActivityExecutionError,
        policy: &RetryPolicy,
        timeout_seconds: f64,
    ) -> (Outcome, u32, String, Vec<AttemptNote>) {
        let max = policy.max_retries + 1;
        if matches!(e, ActivityExecutionError::Cancelled(_)) || self.cancelled() {
            let notes = e
                .failure()
                .and_then(|f| match &f.failure_info {
                    Some(FailureInfo::CanceledFailureInfo(info)) => Some(decode_notes(info.details.as_ref())),
                    _ => None,
                })
                .unwrap_or_default();
            let n = notes.iter().map(|n| n.attempt).max().map_or(1, |a| a + 1);
            return (Outcome::Cancelled, n, "the run was cancelled".to_string(), notes);
        }
        let Some(top) = e.failure() else { return (Outcome::Permanent, 1, e.to_string(), Vec::new()) };
        // The cause chain: the activity failure, then what ended its last attempt.
        let mut cause: Option<&ProtoFailure> = top.cause.as_deref();
        while let Some(c) = cause {
            match &c.failure_info {
                Some(FailureInfo::ApplicationFailureInfo(info)) => {
                    let (kind, n) = super::parse_failure_type(&info.r#type).unwrap_or((FailureKind::Permanent, 1));
                    let outcome = match kind {
                        FailureKind::Transient => Outcome::Transient,
                        FailureKind::Permanent => Outcome::Permanent,
                        FailureKind::Refused => Outcome::Refused,
                    };
                    return (outcome, n, c.message.clone(), decode_notes(info.details.as_ref()));
                }
                Some(FailureInfo::TimeoutFailureInfo(info)) => {
                    let notes = decode_notes(info.last_heartbeat_details.as_ref());
                    if self.deadline_passed() {
                        let secs = self.input.options.deadline_seconds.unwrap_or(0.0);
                        let n = notes.iter().map(|n| n.attempt).max().map_or(1, |a| a + 1);
                        return (Outcome::Deadline, n, format!("the run's deadline of {secs} s passed"), notes);
                    }
                    return (Outcome::Timeout, max, format!("the call timed out after {timeout_seconds} s"), notes);
                }
                _ => cause = c.cause.as_deref(),
            }
        }
        (Outcome::Permanent, 1, top.message.clone(), Vec::new())
    }
}

impl Driver for Interp<'_> {
    /// Workflow code may not stop on a clock of its own (what it does must follow from
    /// the history): on Temporal the fuel bounds expressions, the timeout each activity.
    const TIMEOUT_BOUNDS_EXPRESSIONS: bool = false;
    const CLOCK_AT_START: bool = true;

    fn default_timeout_seconds(&self) -> f64 {
        self.input.options.timeout_seconds
    }

    fn retry_policy(&self, step: &StepPlan) -> RetryPolicy {
        self.input.options.retry().with_step(step.retry.as_ref())
    }

    fn max_fan_out(&self) -> usize {
        self.input.options.max_fan_out
    }

    fn now_rel(&self) -> u64 {
        u64::try_from(self.now().saturating_sub(self.start_ms)).unwrap_or(0)
    }

    fn wall_at(&self, rel_ms: u64) -> smol_str::SmolStr {
        crate::exec::trace::rfc3339_shared(self.start_ms.saturating_add(i64::try_from(rel_ms).unwrap_or(i64::MAX)))
    }

    /// As a local run treats the host's cancellation, a cancellation from Temporal stops
    /// the run like its deadline.
    fn deadline_passed(&self) -> bool {
        let passed = self.deadline_hit.get()
            || self.cancelled()
            || self.calls.exhausted()
            || self.deadline_ms.is_some_and(|d| self.now() >= d);
        if passed {
            self.deadline_hit.set(true);
        }
        passed
    }

    fn deadline_hit(&self) -> bool {
        self.deadline_hit.get()
    }

    fn cancelled(&self) -> bool {
        Interp::cancelled(self)
    }

    fn deadline_seconds(&self) -> f64 {
        self.input.options.deadline_seconds.unwrap_or(0.0)
    }

    fn calls(&self) -> &CallBudget {
        &self.calls
    }

    /// The workflow task's time, fixed while one step evaluates; an interrupt that carries
    /// the run's budget and nothing else (no deadline: see
    /// [`Self::TIMEOUT_BOUNDS_EXPRESSIONS`]).
    fn clock(&self, _key: &str, _eval_timeout: Option<f64>) -> Arc<ClockScope> {
        ClockScope::new(Arc::new(TaskTime(self.now())), None, self.interrupt.clone(), None)
    }
}

/// The attempt notes in a failure's payloads (JSON, as the SDK's converter writes them).
fn decode_notes(payloads: Option<&temporalio_common::protos::temporal::api::common::v1::Payloads>) -> Vec<AttemptNote> {
    payloads.and_then(|p| p.payloads.first()).and_then(|p| serde_json::from_slice(&p.data).ok()).unwrap_or_default()
}
