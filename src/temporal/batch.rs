//! Batches of fan-out children (interpreter v4, `docs/distributed.md`, "Batches"): the
//! children of a fan-out of a primitive tool run as activities of up to [`batch_size`]
//! children each, `TdslActivities::call_batch` (`activity.rs`), instead of
//! one activity per child. Inside its activity each child is called as a local run calls it
//! (`exec::scheduler`): its own attempts under the step's retry policy with the run's jitter,
//! each attempt under the step's timeout and the run's deadline, the worker's breaker asked
//! before each attempt; at most the batch's share of the run's `--concurrency` at once,
//! children started in input order; a child that fails on its own (without
//! `continue_on_error`) stops the children not yet started. Every child's outcome comes
//! back, and the workflow writes the trace from it as from one activity per child.
//!
//! The activity heartbeats every [`HEARTBEAT_EVERY`]: a worker that dies mid-batch is found
//! out by the heartbeat timeout and the batch runs again, on another worker — its children
//! may run again (at least once, as every activity); a cancelled run reaches the batch by
//! the answer to a heartbeat, its calls stop and what ran comes back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};
use temporalio_sdk::activities::ActivityContext;

use super::tool_call::{Prepared, WorkerTools, HEARTBEAT_EVERY};
use super::AttemptNote;
use crate::exec::breaker::BreakerPolicy;
use crate::exec::retry::RetryPolicy;
use crate::exec::{CancelToken, ErrorKind, ToolError};
use crate::value::Value;

/// The most children one batch holds: its share of the run's `--concurrency` eight times
/// (so that a slow child holds back little of the batch), and at most 500.
pub(crate) fn batch_size(concurrency: usize) -> usize {
    concurrency.max(1).saturating_mul(8).min(500)
}

/// The most bytes of arguments one batch carries: half of Temporal's payload limit.
pub(crate) const BATCH_ARGUMENT_BYTES: usize = super::PAYLOAD_LIMIT_BYTES / 2;

/// Past this many bytes of answers, a batch starts no further child: those not started go
/// back to the workflow, which runs them in the next batch.
const ANSWER_BYTES_SOFT: usize = super::PAYLOAD_LIMIT_BYTES / 2;

/// The most bytes of answers one batch returns: a child whose answer would pass it (one
/// that ran side by side with others once the soft bound was reached) is handed back to
/// run again in the next batch, unless it is the batch's first.
const ANSWER_BYTES_HARD: usize = super::PAYLOAD_LIMIT_BYTES - 256 * 1024;

/// One batch of a fan-out's children: an activity's input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchInput {
    /// The callee's tool path, resolved under the worker's `--root`.
    pub tool_path: String,
    /// Each child, in input order.
    pub children: Vec<BatchChild>,
    /// The bound on one attempt, in seconds.
    pub timeout_seconds: f64,
    /// The step's retry policy.
    pub retry: RetryPolicy,
    /// The run's jitter seed.
    pub seed: u64,
    /// The most children in flight at once: the batch's share of the run's `--concurrency`.
    pub concurrency: usize,
    /// The step's `continue_on_error`: without it, a child that fails stops those not yet
    /// started.
    pub continue_on_error: bool,
    /// The run's deadline, in milliseconds since the Unix epoch.
    #[serde(default)]
    pub deadline_unix_ms: Option<i64>,
    /// The run's mock answers for this tool (the `--mock` entry), if any.
    #[serde(default)]
    pub mock: Option<Value>,
    /// Attempts at this tool the run made before the batch: the batch's attempts take the
    /// mock's answers from there on, one each, in the order they start.
    #[serde(default)]
    pub mock_base: usize,
    /// Bytes an `exec:` tool may print.
    pub max_tool_output: u64,
    /// The run's breaker policy: the worker's breakers for it decide whether a call goes.
    #[serde(default)]
    pub breaker: BreakerPolicy,
}

/// One child of a [`BatchInput`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchChild {
    /// The child's step path (`each[3]`).
    pub key: String,
    /// Its arguments, checked by the workflow.
    pub arguments: Value,
}

/// What a batch's activity returns.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BatchOutput {
    /// Each child, in the input's order.
    pub children: Vec<BatchChildOutput>,
    /// Attempts the batch made at a mocked tool (where the run's count goes on).
    #[serde(default)]
    pub mock_calls: usize,
    /// The most children the batch had in flight at once.
    #[serde(default)]
    pub max_in_flight: usize,
}

/// How one child of a batch ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// It answered.
    Ok,
    /// Its last attempt failed transiently (its retries ran out).
    Transient,
    /// Its last attempt failed permanently.
    Permanent,
    /// Its last attempt timed out.
    Timeout,
    /// The run's deadline passed while it ran.
    Deadline,
    /// The worker's breaker refused it.
    Refused,
    /// The run was cancelled while it ran: its call was stopped.
    Cancelled,
    /// It never started: a sibling failed, the run's deadline passed or it was cancelled.
    NotStarted,
    /// It did not run here, or its answer did not fit in the batch's result: the workflow
    /// runs it in the next batch.
    Deferred,
}

/// One child's outcome in a [`BatchOutput`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchChildOutput {
    /// How it ended.
    pub status: BatchStatus,
    /// The attempts it made (0 when it never started).
    pub attempts: u32,
    /// Its answer, when it answered.
    #[serde(default)]
    pub response: Option<Value>,
    /// Its last attempt's error, when it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Its failed attempts before the last.
    #[serde(default)]
    pub earlier: Vec<AttemptNote>,
    /// When its first attempt started, in milliseconds after the batch's.
    #[serde(default)]
    pub started_ms: u64,
    /// From its first attempt's start to its end, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

impl BatchChildOutput {
    fn without_run(status: BatchStatus) -> BatchChildOutput {
        BatchChildOutput {
            status,
            attempts: 0,
            response: None,
            error: None,
            earlier: Vec::new(),
            started_ms: 0,
            duration_ms: 0,
        }
    }

    /// Whether it failed on its own: it stops the children not yet started (fail-fast).
    fn failed_on_its_own(&self) -> bool {
        matches!(
            self.status,
            BatchStatus::Transient
                | BatchStatus::Permanent
                | BatchStatus::Timeout
                | BatchStatus::Deadline
                | BatchStatus::Refused
        )
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What every child of a batch shares.
struct Shared {
    acts: Arc<WorkerTools>,
    tool: Arc<Prepared>,
    breakers: Arc<crate::exec::breaker::Breakers>,
    input: BatchInput,
    deadline: Option<SystemTime>,
    /// The next mock answer.
    mock_next: AtomicUsize,
    /// Raised when the run is cancelled: calls stop.
    cancelled: tokio::sync::watch::Receiver<bool>,
    start: Instant,
}

impl Shared {
    /// What is left until the run's deadline (`Some(ZERO)` once it passed).
    fn left(&self) -> Option<Duration> {
        self.deadline.map(|d| d.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
    }

    fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }
}

/// Waits until the batch is cancelled (never, when its sender is gone).
async fn cancelled(rx: &mut tokio::sync::watch::Receiver<bool>) {
    if rx.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs a batch: every child, at most `concurrency` at once, in input order.
pub(crate) async fn run(acts: &Arc<WorkerTools>, ctx: &ActivityContext, input: BatchInput) -> BatchOutput {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let tool = Prepared::new(acts.root(), &input.tool_path, input.mock.as_ref(), input.max_tool_output);
    let deadline = input.deadline_unix_ms.map(|d| UNIX_EPOCH + Duration::from_millis(u64::try_from(d).unwrap_or(0)));
    let n = input.children.len();
    let limit = input.concurrency.max(1);
    let shared = Arc::new(Shared {
        acts: acts.clone(),
        breakers: acts.breakers(&input.breaker),
        tool: Arc::new(tool),
        mock_next: AtomicUsize::new(input.mock_base),
        deadline,
        input,
        cancelled: rx,
        start: Instant::now(),
    });
    let mut outs: Vec<Option<BatchChildOutput>> = vec![None; n];
    let mut running = FuturesUnordered::new();
    let (mut next, mut peak, mut answered_bytes) = (0usize, 0usize, 0usize);
    // Why no further child starts: a child failed (fail-fast), or the answers are near the
    // payload limit (the rest are deferred).
    let (mut failed, mut full, mut was_cancelled) = (false, false, false);
    // Every second whatever else happens: children ending more often than that must not
    // keep the batch from heartbeating (Temporal would count its worker lost).
    let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        while next < n && running.len() < limit && !failed && !full && !was_cancelled {
            if shared.left().is_some_and(|l| l.is_zero()) {
                break;
            }
            let shared = shared.clone();
            let i = next;
            running.push(async move { (i, child(&shared, i).await) });
            next += 1;
        }
        peak = peak.max(running.len());
        if running.is_empty() {
            break;
        }
        tokio::select! {
            Some((i, out)) = running.next() => {
                if out.failed_on_its_own() && !shared.input.continue_on_error {
                    failed = true;
                }
                answered_bytes += out.response.as_ref().map_or(0, |r| serde_json::to_vec(r).map_or(0, |b| b.len()));
                if answered_bytes >= ANSWER_BYTES_SOFT {
                    full = true;
                }
                outs[i] = Some(out);
            }
            _ = beat.tick() => {
                let done = outs.iter().filter(|o| o.is_some()).count();
                let _ = ctx.record_heartbeat(done).await;
            }
            () = ctx.cancelled(), if !was_cancelled => {
                // The children in flight stop their calls and say so; none starts after.
                let _ = tx.send(true);
                was_cancelled = true;
            }
        }
    }
    let unstarted = if full && !failed { BatchStatus::Deferred } else { BatchStatus::NotStarted };
    let mut children: Vec<BatchChildOutput> =
        outs.into_iter().map(|o| o.unwrap_or_else(|| BatchChildOutput::without_run(unstarted.clone()))).collect();
    defer_to_fit(&mut children);
    let mock_calls = if shared.tool.mocked() {
        shared.mock_next.load(Ordering::SeqCst).saturating_sub(shared.input.mock_base)
    } else {
        0
    };
    BatchOutput { children, mock_calls, max_in_flight: peak }
}

/// Answers that would not fit in the batch's result run again in the next batch: the
/// largest first, so that one large answer does not send its small siblings back with it
/// (they would run again, and again in the batch after, while it leads); never the first
/// child's, so that a batch always makes progress.
fn defer_to_fit(children: &mut [BatchChildOutput]) {
    let sizes: Vec<usize> = children.iter().map(size_of_output).collect();
    let mut total: usize = sizes.iter().sum();
    let mut largest: Vec<usize> = (1..children.len()).filter(|&i| children[i].response.is_some()).collect();
    largest.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(b.cmp(&a)));
    for i in largest {
        if total <= ANSWER_BYTES_HARD {
            break;
        }
        total = total.saturating_sub(sizes[i]);
        children[i] = BatchChildOutput::without_run(BatchStatus::Deferred);
    }
}

/// The error for a child's answer over what one batch's result can carry
/// ([`ANSWER_BYTES_HARD`], below Temporal's payload limit: the batch's own fields and its
/// other children's need room), whichever batch it ran in.
fn over_batch_limit(bytes: usize) -> Option<String> {
    (bytes > ANSWER_BYTES_HARD).then(|| {
        format!(
            "the tool's response is {bytes} bytes, over the {ANSWER_BYTES_HARD} bytes one batch of fan-out children \
             can carry under Temporal's payload limit of {} bytes (2 MiB); keep large data in files and pass their paths",
            super::PAYLOAD_LIMIT_BYTES
        )
    })
}

fn size_of_output(c: &BatchChildOutput) -> usize {
    serde_json::to_vec(c).map_or(0, |b| b.len())
}

/// One child: its attempts, as a local run makes them (`exec::scheduler`).
async fn child(shared: &Shared, i: usize) -> BatchChildOutput {
    let BatchInput { children, retry, seed, timeout_seconds, tool_path, .. } = &shared.input;
    let Some(BatchChild { key, arguments }) = children.get(i) else {
        return BatchChildOutput::without_run(BatchStatus::NotStarted);
    };
    let first = shared.start.elapsed();
    let mut earlier: Vec<AttemptNote> = Vec::new();
    let mut attempt: u32 = 1;
    let end = |status, attempt, response, error, earlier| BatchChildOutput {
        status,
        attempts: attempt,
        response,
        error,
        earlier,
        started_ms: ms(first),
        duration_ms: ms(shared.start.elapsed().saturating_sub(first)),
    };
    loop {
        if shared.is_cancelled() {
            // Before its first attempt it never started; between attempts, the attempt it
            // was waiting for counts as the cancelled one.
            if attempt == 1 {
                return BatchChildOutput::without_run(BatchStatus::NotStarted);
            }
            return end(BatchStatus::Cancelled, attempt, None, Some("the run was cancelled".to_string()), earlier);
        }
        if let Some(message) = shared.acts.refused(&shared.breakers, tool_path) {
            return end(BatchStatus::Refused, attempt, None, Some(message), earlier);
        }
        let left = shared.left();
        let timeout = Duration::try_from_secs_f64(*timeout_seconds).unwrap_or(Duration::MAX);
        let by_deadline = left.is_some_and(|l| l < timeout);
        let bound = left.map_or(timeout, |l| l.min(timeout));
        let mock_index = if shared.tool.mocked() { shared.mock_next.fetch_add(1, Ordering::SeqCst) } else { 0 };
        let started = Instant::now();
        let (status, answer) = attempt_once(shared, arguments, attempt, mock_index, left, bound, by_deadline).await;
        match status {
            BatchStatus::Ok | BatchStatus::Permanent => shared.breakers.success(tool_path),
            BatchStatus::Cancelled => {}
            _ => {
                shared.breakers.failure(tool_path, shared.acts.now_ms());
            }
        }
        let answer = answer.and_then(|response| {
            let bytes = serde_json::to_vec(&response).map_or(0, |b| b.len());
            match over_batch_limit(bytes) {
                Some(e) => Err(ToolError::permanent(e)),
                None => Ok(response),
            }
        });
        let status = match (&answer, status) {
            (Err(_), BatchStatus::Ok) => BatchStatus::Permanent,
            (_, s) => s,
        };
        let e = match answer {
            Ok(response) => return end(BatchStatus::Ok, attempt, Some(response), None, earlier),
            Err(e) => e,
        };
        let retryable = matches!(status, BatchStatus::Transient | BatchStatus::Timeout) && attempt <= retry.max_retries;
        if !retryable {
            return end(status, attempt, None, Some(e.message), earlier);
        }
        let delay = super::retry_delay(retry, *seed, key, attempt);
        earlier.push(AttemptNote {
            attempt,
            outcome: if status == BatchStatus::Timeout { "timeout" } else { "transient" }.to_string(),
            error: e.message.clone(),
            duration_ms: ms(started.elapsed()),
            delay_ms: ms(delay),
        });
        // A back-off past the run's deadline: the call stops there.
        if shared.left().is_some_and(|l| l <= delay) {
            return end(BatchStatus::Deadline, attempt, None, Some(e.message), earlier);
        }
        let mut rx = shared.cancelled.clone();
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = cancelled(&mut rx) => {}
        }
        attempt += 1;
    }
}

/// One attempt, on a blocking thread, stopped when it passes `bound` (the step's timeout,
/// or the run's deadline when `by_deadline`) or the run is cancelled.
async fn attempt_once(
    shared: &Shared,
    arguments: &Value,
    attempt: u32,
    mock_index: usize,
    left: Option<Duration>,
    bound: Duration,
    by_deadline: bool,
) -> (BatchStatus, Result<Value, ToolError>) {
    let cancel = CancelToken::new();
    let token = cancel.clone();
    let timeout_seconds = shared.input.timeout_seconds;
    // The blocking thread needs its own copies: the call may outlive this future's borrow.
    let (tool, arguments) = (shared.tool.clone(), arguments.clone());
    let mut call =
        tokio::task::spawn_blocking(move || tool.call(&arguments, timeout_seconds, attempt, mock_index, left, &token));
    let mut rx = shared.cancelled.clone();
    let joined = tokio::select! {
        joined = &mut call => joined,
        () = tokio::time::sleep(bound) => {
            cancel.cancel();
            let _ = (&mut call).await;
            return if by_deadline {
                (BatchStatus::Deadline, Err(ToolError::transient("the run's deadline passed")))
            } else {
                (BatchStatus::Timeout, Err(ToolError::transient(format!("the call timed out after {timeout_seconds} s"))))
            };
        }
        () = cancelled(&mut rx) => {
            cancel.cancel();
            let _ = (&mut call).await;
            return (BatchStatus::Cancelled, Err(ToolError::transient("the run was cancelled")));
        }
    };
    match joined {
        Ok(Ok(v)) => (BatchStatus::Ok, Ok(v)),
        Ok(Err(e)) if e.kind == ErrorKind::Transient => (BatchStatus::Transient, Err(e)),
        Ok(Err(e)) => (BatchStatus::Permanent, Err(e)),
        Err(e) => {
            (BatchStatus::Transient, Err(ToolError::transient(format!("the call's thread ended abnormally: {e}"))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(bytes: usize) -> BatchChildOutput {
        BatchChildOutput {
            response: Some(Value::str(&"a".repeat(bytes))),
            attempts: 1,
            ..BatchChildOutput::without_run(BatchStatus::Ok)
        }
    }

    /// A hostile round found one answer near the limit sending its six small siblings back
    /// twice (they ran three times): only the large one goes back now.
    #[test]
    fn one_large_answer_goes_back_alone_and_the_first_child_always_stays() {
        let mut children: Vec<BatchChildOutput> = (0..10).map(|_| answered(10)).collect();
        children[3] = answered(ANSWER_BYTES_HARD - 100);
        children[5] = answered(300_000);
        defer_to_fit(&mut children);
        let deferred: Vec<usize> = (0..10).filter(|&i| children[i].status == BatchStatus::Deferred).collect();
        assert_eq!(deferred, vec![3], "the largest answer goes back, its siblings stay");
        assert!(children.iter().map(size_of_output).sum::<usize>() <= ANSWER_BYTES_HARD);

        let mut first_large: Vec<BatchChildOutput> = vec![answered(ANSWER_BYTES_HARD - 100), answered(300_000)];
        defer_to_fit(&mut first_large);
        assert_eq!(first_large[0].status, BatchStatus::Ok, "the first child is never sent back");
        assert_eq!(first_large[1].status, BatchStatus::Deferred);
    }

    #[test]
    fn an_answer_one_batch_cannot_carry_names_the_limit() {
        assert_eq!(over_batch_limit(ANSWER_BYTES_HARD), None);
        let e = over_batch_limit(2_097_069).unwrap_or_default();
        assert!(e.starts_with("the tool's response is 2097069 bytes, over the 1835008 bytes one batch"), "{e}");
        assert!(e.contains("2097152 bytes (2 MiB)"), "{e}");
    }
}
