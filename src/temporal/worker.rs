//! `tdsl worker --engine temporal`: the workflow that interprets composites and the activity
//! that calls primitive tools.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use temporalio_client::{Client, ClientOptions, Connection as TemporalConnection, ConnectionOptions, Url};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{
    ApplicationFailure, Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowContextView, WorkflowResult,
    WorkflowTermination,
};

use super::interp::Interp;
use super::{
    complete_notes, failure_type, AttemptNote, Breaker, CallInput, CallOutput, Connection, FailureKind, RunInput,
    RunOutput, INTERPRETER_VERSION,
};
use crate::analysis::{Resolved, ToolRoot};
use crate::exec::breaker::{Admission, BreakerPolicy, Breakers, Refusal};
use crate::exec::host::{HostRunner, Mock};
use crate::exec::{CancelToken, ErrorKind, Runner, ToolCall, ToolError};
use crate::value::Value;

/// How often a running tool call heartbeats (and so how soon a cancelled run stops it).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

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

/// The activities: one primitive tool call, with the worker's tool root and its circuit
/// breakers (one set per breaker policy that runs asked for; SPEC §10: per worker).
pub struct TdslActivities {
    root: PathBuf,
    breakers: Mutex<Vec<(Breaker, Arc<Breakers>)>>,
    started: Instant,
}

impl TdslActivities {
    fn breakers(&self, policy: Breaker) -> Arc<Breakers> {
        let mut all = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, b)) = all.iter().find(|(p, _)| *p == policy) {
            return b.clone();
        }
        let b = Arc::new(Breakers::new(BreakerPolicy {
            failure_threshold: policy.failure_threshold,
            reset_timeout_seconds: policy.reset_timeout_seconds,
            half_open_calls: policy.half_open_calls,
        }));
        all.push((policy, b.clone()));
        b
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[activities]
impl TdslActivities {
    /// Calls one primitive tool through the host runner (or answers from the run's mock).
    #[activity(name = "tdsl.call_tool")]
    pub async fn call_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: CallInput,
    ) -> Result<CallOutput, ActivityError> {
        let attempt = ctx.info().attempt.max(1);
        // The call stops at the activity's deadline (its timeout, or the run's deadline):
        // Temporal has given up on it by then.
        let left = ctx.info().deadline.and_then(|d| d.duration_since(std::time::SystemTime::now()).ok());
        let earlier: Vec<AttemptNote> = ctx.heartbeat_details().deserialize().ok().flatten().unwrap_or_default();
        let earlier = complete_notes(earlier, attempt);
        let breakers = self.breakers(input.breaker);
        let tool_path = input.tool_path.clone();
        if let Admission::Refused = breakers.admit(&tool_path, self.now_ms()) {
            let message = match breakers.refusal(&tool_path, self.now_ms()) {
                Some(Refusal::OpenUntil(at)) => format!(
                    "the circuit breaker of `{tool_path}` on this worker is open: the call was refused; it half-opens in {} s",
                    at.saturating_sub(self.now_ms()) as f64 / 1000.0
                ),
                _ => format!("the circuit breaker of `{tool_path}` on this worker is half-open and its trial calls are in flight: the call was refused"),
            };
            let failure = ApplicationFailure::builder(message)
                .type_name(failure_type(FailureKind::Refused, attempt))
                .non_retryable(true)
                .details(earlier)
                .build();
            return Err(ActivityError::application(failure));
        }
        let started = Instant::now();
        let root = self.root.clone();
        let (input_retry, seed, key) = (input.retry.clone(), input.seed, input.key.clone());
        let cancel = CancelToken::new();
        let token = cancel.clone();
        let mut call = tokio::task::spawn_blocking(move || call_blocking(&root, &input, attempt, left, &token));
        // While the tool runs, the activity heartbeats (its notes so far, for the next
        // attempt): the answer to a heartbeat is how a cancelled run reaches it, and then the
        // tool is stopped (its process group ended) before the activity says so.
        let answer = loop {
            tokio::select! {
                joined = &mut call => {
                    break joined.unwrap_or_else(|e| Err(ToolError::transient(format!("the call's thread ended abnormally: {e}"))));
                }
                () = tokio::time::sleep(HEARTBEAT_EVERY) => {
                    let _ = ctx.record_heartbeat(earlier.clone()).await;
                }
                () = ctx.cancelled() => {
                    cancel.cancel();
                    let _ = (&mut call).await;
                    return Err(ActivityError::cancelled());
                }
            }
        };
        match &answer {
            Ok(_) => breakers.success(&tool_path),
            Err(e) if e.kind == ErrorKind::Permanent => breakers.success(&tool_path),
            Err(_) => {
                breakers.failure(&tool_path, self.now_ms());
            }
        }
        let answer = answer.and_then(|response| {
            let bytes = serde_json::to_vec(&response).map_or(0, |b| b.len());
            match super::over_payload_limit("the tool's response", bytes) {
                Some(e) => Err(ToolError::permanent(e)),
                None => Ok(response),
            }
        });
        match answer {
            Ok(response) => Ok(CallOutput { response, attempt, earlier }),
            Err(e) => {
                let transient = e.kind == ErrorKind::Transient;
                let kind = if transient { FailureKind::Transient } else { FailureKind::Permanent };
                // The back-off before the next attempt, with the run's jitter: Temporal waits
                // this long instead of its policy's interval.
                let delay = match &input_retry {
                    Some(policy) if transient && attempt <= policy.max_retries => {
                        Some(super::retry_delay(policy, seed, &key, attempt))
                    }
                    _ => None,
                };
                let mut notes = earlier;
                notes.push(AttemptNote {
                    attempt,
                    outcome: if transient { "transient" } else { "permanent" }.to_string(),
                    error: e.message.clone(),
                    duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    delay_ms: delay.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                });
                // The next attempt reads the notes from the heartbeat details; the final
                // failure carries them too.
                let _ = ctx.record_heartbeat(notes.clone()).await;
                let failure = ApplicationFailure::builder(e.message)
                    .type_name(failure_type(kind, attempt))
                    .non_retryable(!transient)
                    .details(notes)
                    .maybe_next_retry_delay(delay)
                    .build();
                Err(ActivityError::application(failure))
            }
        }
    }
}

fn call_blocking(
    root: &std::path::Path,
    input: &CallInput,
    attempt: u32,
    left: Option<Duration>,
    cancel: &CancelToken,
) -> Result<Value, ToolError> {
    if let Some(spec) = &input.mock {
        let mut m = crate::value::Map::default();
        m.insert(crate::value::SmolStr::new(&input.tool_path), spec.clone());
        let text = serde_json::to_string(&Value::object(m)).map_err(|e| ToolError::permanent(e.to_string()))?;
        let mock = Mock::from_json(&text).map_err(ToolError::permanent)?;
        let n = input.mock_base.saturating_add(attempt as usize).saturating_sub(1);
        if let Some(answer) = mock.answer_at(&input.tool_path, n) {
            return answer;
        }
    }
    let mut tool_root = ToolRoot::new(root);
    let (def, file) = match tool_root.resolve(&input.tool_path) {
        Resolved::Found(t) => match &t.def {
            Some(d) if !d.is_composite() => (d.clone(), t.file.clone()),
            Some(_) => {
                return Err(ToolError::permanent(format!(
                    "`{}` is a composite on this worker's root ({}), not a primitive tool",
                    input.tool_path,
                    root.display()
                )))
            }
            None => {
                return Err(ToolError::permanent(format!(
                    "`{}` does not load on this worker's root ({})",
                    input.tool_path,
                    root.display()
                )))
            }
        },
        Resolved::Missing(p) => {
            return Err(ToolError::permanent(format!(
                "`{}` has no file on this worker (looked for {}; start the worker with --root on the tool root)",
                input.tool_path,
                p.display()
            )))
        }
        Resolved::Invalid(why) => return Err(ToolError::permanent(why)),
    };
    let runner = HostRunner::new().with_max_stdout(input.max_tool_output);
    // A second past Temporal's own timeout, so that Temporal's (a timeout, in the trace)
    // always comes first; this one only ends the program.
    let timeout = match (Duration::try_from_secs_f64(input.timeout_seconds).ok(), left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
    .map(|t| t + Duration::from_secs(1));
    let call = ToolCall {
        tool_path: &input.tool_path,
        definition: Some(&def),
        file: Some(&file),
        arguments: &input.arguments,
        cancel,
        timeout,
        attempt,
    };
    runner.call(&call)
}

/// Replays a workflow history (JSON, as `tdsl run --engine temporal --temporal-history`
/// writes it) against this build's interpreter, with no server: `Err` when this
/// interpreter would issue other commands than the ones recorded (a change that needs
/// `ctx.patched`, docs/distributed.md).
pub fn replay(history_json: &[u8]) -> Result<(), String> {
    use temporalio_client::WorkflowHistory;
    use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
    let history = WorkflowHistory::from_json(history_json).map_err(|e| format!("not a workflow history: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let options = WorkflowReplayerOptions::new()
            .register_workflow::<TdslWorkflow>()
            .map_err(|e| format!("cannot register the workflow: {e}"))?
            .build();
        let replayer = WorkflowReplayer::new(options).map_err(|e| format!("cannot make a replayer: {e}"))?;
        replayer.replay_workflow(history).await.map_err(|e| format!("the history does not replay: {e}"))
    })
}

/// The server's URL from `--temporal-address` (`HOST:PORT`, or a URL).
pub fn server_url(address: &str) -> Result<Url, String> {
    let text = if address.contains("://") { address.to_string() } else { format!("http://{address}") };
    Url::parse(&text).map_err(|e| format!("--temporal-address `{address}`: {e}"))
}

/// A client of the server, in the connection's namespace.
pub async fn connect(conn: &Connection) -> Result<Client, String> {
    let url = server_url(&conn.address)?;
    let connection = TemporalConnection::connect(ConnectionOptions::new(url).identity("tdsl".to_string()).build())
        .await
        .map_err(|e| format!("cannot connect to the Temporal server at {} (--temporal-address): {e}", conn.address))?;
    Client::new(connection, ClientOptions::new(conn.namespace.clone()).build())
        .map_err(|e| format!("cannot make a Temporal client: {e}"))
}

/// Runs a worker until the process ends: the workflow and the activity on the task queue;
/// `concurrency` bounds the activities (tool calls) it runs at once.
pub async fn run_worker(conn: &Connection, root: PathBuf, concurrency: usize) -> Result<(), String> {
    let runtime = Runtime::from_current_tokio(Default::default()).map_err(|e| format!("cannot start the SDK: {e}"))?;
    // A worker may start before its server (both deployed at once): it waits for it, for a
    // minute, saying so once.
    let mut waited = 0;
    let client = loop {
        match connect(conn).await {
            Ok(c) => break c,
            Err(e) if waited < 60 => {
                if waited == 0 {
                    eprintln!("tdsl worker: {e}; trying again every second for a minute");
                }
                waited += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    };
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(100))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(concurrency.max(1)))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(10))
        .build();
    let options = WorkerOptions::new(conn.task_queue.clone())
        .register_workflow::<TdslWorkflow>()
        .map_err(|e| format!("cannot register the workflow: {e}"))?
        .register_activities(TdslActivities { root, breakers: Mutex::new(Vec::new()), started: Instant::now() })
        .tuner(tuner)
        .default_heartbeat_throttle_interval(HEARTBEAT_EVERY)
        .build();
    let mut worker = Worker::new(&runtime, client, options).map_err(|e| format!("cannot start the worker: {e}"))?;
    eprintln!(
        "tdsl worker: task queue `{}` on {} (namespace `{}`), interpreter v{INTERPRETER_VERSION}",
        conn.task_queue, conn.address, conn.namespace
    );
    worker.run().await.map_err(|e| format!("the worker stopped: {e}"))
}
