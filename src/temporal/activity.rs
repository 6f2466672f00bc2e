//! The activity: one primitive tool call, made by a `tdsl worker` through the host runner
//! (or answered from the run's mock), with the worker's circuit breakers. The workflow
//! (`interp.rs`) schedules it; the worker (`worker.rs`) registers it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::ApplicationFailure;

use super::batch::{BatchInput, BatchOutput};
use super::{complete_notes, failure_type, AttemptNote, CallInput, CallOutput, FailureKind};
use crate::analysis::{Resolved, ToolRoot};
use crate::exec::breaker::{Admission, BreakerPolicy, Breakers, Refusal};
use crate::exec::{CancelToken, ErrorKind, Runner, ToolCall, ToolError};
use crate::host::{HostRunner, Mock};
use crate::value::Value;

/// How often a running tool call heartbeats (and so how soon a cancelled run stops it).
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// The activities: one primitive tool call, with the worker's tool root and its circuit
/// breakers (one set per breaker policy that runs asked for; SPEC §10: per worker).
pub struct TdslActivities {
    root: PathBuf,
    breakers: Mutex<Vec<(BreakerPolicy, Arc<Breakers>)>>,
    started: Instant,
}

impl TdslActivities {
    /// The activities of a worker whose tool root is `root`.
    pub(crate) fn new(root: PathBuf) -> TdslActivities {
        TdslActivities { root, breakers: Mutex::new(Vec::new()), started: Instant::now() }
    }

    pub(crate) fn breakers(&self, policy: &BreakerPolicy) -> Arc<Breakers> {
        let mut all = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, b)) = all.iter().find(|(p, _)| p == policy) {
            return b.clone();
        }
        let b = Arc::new(Breakers::new(policy.clone()));
        all.push((policy.clone(), b.clone()));
        b
    }

    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Why the worker's breaker of `tool_path` refuses a call now, or `None`: it may go.
    pub(crate) fn refused(&self, breakers: &Breakers, tool_path: &str) -> Option<String> {
        if let Admission::Allowed = breakers.admit(tool_path, self.now_ms()) {
            return None;
        }
        Some(match breakers.refusal(tool_path, self.now_ms()) {
            Some(Refusal::OpenUntil(at)) => format!(
                "the circuit breaker of `{tool_path}` on this worker is open: the call was refused; it half-opens in {} s",
                at.saturating_sub(self.now_ms()) as f64 / 1000.0
            ),
            _ => format!("the circuit breaker of `{tool_path}` on this worker is half-open and its trial calls are in flight: the call was refused"),
        })
    }

    /// The worker's tool root.
    pub(crate) fn root(&self) -> &std::path::Path {
        &self.root
    }
}

#[activities]
impl TdslActivities {
    /// Calls the children of one batch of a fan-out (interpreter v4, `batch.rs`): each with
    /// its own attempts, timeout and breaker, at most the batch's share of the run's
    /// concurrency at once; every child's outcome comes back.
    #[activity(name = "tdsl.call_batch")]
    pub async fn call_batch(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: BatchInput,
    ) -> Result<BatchOutput, ActivityError> {
        Ok(super::batch::run(&self, &ctx, input).await)
    }

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
        let breakers = self.breakers(&input.breaker);
        let tool_path = input.tool_path.clone();
        if let Some(message) = self.refused(&breakers, &tool_path) {
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
    let tool = Prepared::new(root, &input.tool_path, input.mock.as_ref(), input.max_tool_output);
    let n = input.mock_base.saturating_add(attempt as usize).saturating_sub(1);
    tool.call(&input.arguments, input.timeout_seconds, attempt, n, left, cancel)
}

/// A primitive tool as a worker calls it: its definition and file resolved under the
/// worker's root (or why not), and the run's mock answers for it. Made once per call, or
/// once for a whole batch of fan-out children (`batch.rs`).
pub(crate) struct Prepared {
    tool_path: String,
    mock: Option<Mock>,
    resolved: Result<(crate::tool::ToolDef, PathBuf), ToolError>,
    max_tool_output: u64,
}

impl Prepared {
    /// `tool_path` under `root`, with the run's `mock` entry for it, if any.
    pub(crate) fn new(root: &std::path::Path, tool_path: &str, mock: Option<&Value>, max_tool_output: u64) -> Prepared {
        let mock = mock.map(|spec| {
            let mut m = crate::value::Map::default();
            m.insert(crate::value::SmolStr::new(tool_path), spec.clone());
            let text = serde_json::to_string(&Value::object(m)).map_err(|e| e.to_string())?;
            Mock::from_json(&text)
        });
        let (mock, mock_error) = match mock {
            Some(Ok(m)) => (Some(m), None),
            Some(Err(e)) => (None, Some(ToolError::permanent(e))),
            None => (None, None),
        };
        let resolved = match mock_error {
            Some(e) => Err(e),
            None => resolve(root, tool_path),
        };
        Prepared { tool_path: tool_path.to_string(), mock, resolved, max_tool_output }
    }

    /// Whether the run's mock answers for the tool.
    pub(crate) fn mocked(&self) -> bool {
        self.mock.is_some()
    }

    /// One attempt (`attempt`, from 1) with `arguments`: the mock's answer `mock_index`
    /// (from 0) when the run has one, else the tool through the host runner, bounded by its
    /// timeout and what is `left` of the activity.
    pub(crate) fn call(
        &self,
        arguments: &Value,
        timeout_seconds: f64,
        attempt: u32,
        mock_index: usize,
        left: Option<Duration>,
        cancel: &CancelToken,
    ) -> Result<Value, ToolError> {
        if let Some(mock) = &self.mock {
            if let Some(answer) = mock.answer_at(&self.tool_path, mock_index) {
                return answer;
            }
        }
        let (def, file) = match &self.resolved {
            Ok(r) => r,
            Err(e) => return Err(e.clone()),
        };
        let runner = HostRunner::new().with_max_stdout(self.max_tool_output);
        // A second past Temporal's own timeout, so that Temporal's (a timeout, in the trace)
        // always comes first; this one only ends the program.
        let timeout = match (Duration::try_from_secs_f64(timeout_seconds).ok(), left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|t| t + Duration::from_secs(1));
        let call = ToolCall {
            tool_path: &self.tool_path,
            definition: Some(def),
            file: Some(file),
            arguments,
            cancel,
            timeout,
            attempt,
        };
        runner.call(&call)
    }
}

/// The definition and file of the primitive tool at `tool_path` under `root`, or why the
/// worker cannot call it.
fn resolve(root: &std::path::Path, tool_path: &str) -> Result<(crate::tool::ToolDef, PathBuf), ToolError> {
    let mut tool_root = ToolRoot::new(root);
    match tool_root.resolve(tool_path) {
        Resolved::Found(t) => match &t.def {
            Some(d) if !d.is_composite() => Ok((d.clone(), t.file.clone())),
            Some(_) => Err(ToolError::permanent(format!(
                "`{tool_path}` is a composite on this worker's root ({}), not a primitive tool",
                root.display()
            ))),
            None => Err(ToolError::permanent(format!(
                "`{tool_path}` does not load on this worker's root ({})",
                root.display()
            ))),
        },
        Resolved::Missing(p) => Err(ToolError::permanent(format!(
            "`{tool_path}` has no file on this worker (looked for {}; start the worker with --root on the tool root)",
            p.display()
        ))),
        Resolved::Invalid(why) => Err(ToolError::permanent(why)),
    }
}
