//! The activity: one primitive tool call, made by a `tdsl worker` through the host runner
//! (or answered from the run's mock), with the worker's circuit breakers. The workflow
//! (`interp.rs`) schedules it; the worker (`worker.rs`) registers it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::ApplicationFailure;

use super::batch::{BatchInput, BatchOutput};
use super::{complete_notes, failure_type, AttemptNote, CallInput, CallOutput, FailureKind};
use crate::exec::{CancelToken, ErrorKind, ToolError};
use crate::value::Value;

pub(crate) use super::tool_call::HEARTBEAT_EVERY;
use super::tool_call::{Prepared, WorkerTools};

/// The activities: one primitive tool call, or a batch of fan-out children's, with the
/// worker's tool root and its circuit breakers ([`WorkerTools`]).
pub struct TdslActivities {
    tools: Arc<WorkerTools>,
}

impl TdslActivities {
    /// The activities of a worker whose tool root is `root`.
    pub(crate) fn new(root: PathBuf) -> TdslActivities {
        TdslActivities { tools: Arc::new(WorkerTools::new(root)) }
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
        Ok(super::batch::run(&self.tools, &ctx, input).await)
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
        let breakers = self.tools.breakers(&input.breaker);
        let tool_path = input.tool_path.clone();
        if let Some(message) = self.tools.refused(&breakers, &tool_path) {
            let failure = ApplicationFailure::builder(message)
                .type_name(failure_type(FailureKind::Refused, attempt))
                .non_retryable(true)
                .details(earlier)
                .build();
            return Err(ActivityError::application(failure));
        }
        let started = Instant::now();
        let root = self.tools.root().to_path_buf();
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
                breakers.failure(&tool_path, self.tools.now_ms());
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
