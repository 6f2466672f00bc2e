//! The workflow's side of batched fan-outs (interpreter v4, `../batch.rs`): the children of
//! a fan-out of a primitive tool go to activities of up to `batch_size` children each, one
//! batch after the other. The workflow starts each child, charges its call to the run's
//! budget and checks its arguments as for one activity per child (`exec::step`), hands the
//! batch's children to one activity, and writes each child's trace from what the activity
//! says of it, in input order, applying the fail-fast rule as it goes.

use std::time::Duration;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use temporalio_common::RetryPolicy as TemporalRetry;
use temporalio_sdk::{ActivityCancellationType, ActivityCloseTimeouts, ActivityOptions};

use super::super::batch::{batch_size, BatchChild, BatchChildOutput, BatchInput, BatchStatus, BATCH_ARGUMENT_BYTES};
use super::{activity_error_bytes, json_bytes, secs, CallEnd, Interp, TdslActivities};
use crate::diagnostic::Code;
use crate::exec::data::{CallOutcome, Failure};
use crate::exec::step::{Callee, ChildEnd, ChildRun, Driver, FailFast, FanOut, Frame, Site};
use crate::exec::{ChildTrace, Outcome};
use crate::value::Value;

/// How long a batch's activity may go without a heartbeat (it sends one a second) before
/// Temporal counts its worker lost and runs the batch again.
const BATCH_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(20);

/// The most times a batch's activity is tried (a worker lost each time).
const BATCH_ATTEMPTS: u32 = 3;

/// One child of a batch, from its start to its end.
enum Slot {
    /// It ended without the activity (it never started, its call was refused).
    Ended(ChildEnd),
    /// It goes to the activity.
    Called(ChildRun),
}

impl Interp<'_> {
    /// A fan-out of a primitive tool, in batches; results in input order.
    pub(super) fn fan_out_batched<'s>(
        &'s self,
        frame: &'s Frame<'s>,
        site: Site<'s>,
        fan: &'s FanOut,
    ) -> LocalBoxFuture<'s, Vec<(ChildTrace, Result<Value, Failure>)>> {
        async move {
            let width = fan.items.len();
            self.progress(|p| p.counts().children += width);
            let fail_fast = FailFast::new(Some(frame), fan.continue_on_error);
            let arguments: Vec<Value> = fan.items.iter().map(|item| fan.child_arguments(&site, item)).collect();
            let size = batch_size(self.max_in_flight);
            let mut outs = Vec::with_capacity(width);
            let mut first = 0;
            while first < width {
                // Up to `size` children, and at most half the payload limit of arguments
                // (at least one child: a larger one fails on its own, naming the limit).
                let mut end = first;
                let mut bytes = 0usize;
                while end < width && end - first < size {
                    let b = serde_json::to_vec(&arguments[end]).map_or(0, |b| b.len());
                    if end > first && bytes.saturating_add(b) > BATCH_ARGUMENT_BYTES {
                        break;
                    }
                    bytes = bytes.saturating_add(b);
                    end += 1;
                }
                for end in self.batch(site, &fail_fast, fan.continue_on_error, first, &arguments[first..end]).await {
                    outs.push((end.trace, end.out));
                }
                first = end;
            }
            outs
        }
        .boxed_local()
    }

    /// One batch: children `first..` with `arguments`, ended in input order (the fail-fast
    /// rule applied to each as it ends).
    async fn batch(
        &self,
        site: Site<'_>,
        fail_fast: &FailFast<'_>,
        continue_on_error: bool,
        first: usize,
        arguments: &[Value],
    ) -> Vec<ChildEnd> {
        let key = site.key;
        let share = arguments.len().min(self.max_in_flight).max(1);
        let mut ended = Vec::with_capacity(arguments.len());
        let finish = |end: ChildEnd, ended: &mut Vec<ChildEnd>| {
            fail_fast.ended(&end);
            self.progress(|p| p.counts().children_done += 1);
            ended.push(end);
        };
        if self.acquire(share).await.is_err() {
            for i in first..first + arguments.len() {
                finish(ChildRun::not_run(self, fail_fast, key, i), &mut ended);
            }
            return ended;
        }
        // Each child starts (or does not, the run or a sibling having stopped), and its
        // call is charged and its arguments checked, as a call of its own would be.
        let mut slots = Vec::with_capacity(arguments.len());
        for (j, a) in arguments.iter().enumerate() {
            let child = match ChildRun::start(self, fail_fast, key, first + j, || a.clone()) {
                Err(end) => {
                    fail_fast.ended(&end);
                    slots.push(Slot::Ended(end));
                    continue;
                }
                Ok(child) => child,
            };
            let child_key = child.key.clone();
            let here = Site { key: &child_key, ..site };
            let early = if self.deadline_passed() || !self.await_calls(1).await {
                Some(CallOutcome::failed(self.stop_failure(&child.key)))
            } else {
                match here.callee(self, &child.arguments, self.input.options.max_depth) {
                    Callee::Refused(out) => Some(out),
                    Callee::Primitive { .. } => None,
                    Callee::Composite { .. } => Some(CallOutcome::failed_at(
                        &child.key,
                        Code::ToolFailed,
                        format!("`{}` is a composite: its children are not batched", site.tool_path),
                    )),
                }
            };
            match early {
                Some(out) => {
                    let end = child.end(self, fail_fast, &here, out);
                    // A refused call that stops its siblings stops them here, before the
                    // batch starts: they do not go to the activity.
                    fail_fast.ended(&end);
                    slots.push(Slot::Ended(end));
                }
                None => slots.push(Slot::Called(child)),
            }
        }
        let called: Vec<usize> =
            slots.iter().enumerate().filter(|(_, s)| matches!(s, Slot::Called(_))).map(|(i, _)| i).collect();
        let mut answers = self.call_batch(site, continue_on_error, share, &slots, &called).await;
        self.release(share);
        for (j, slot) in slots.into_iter().enumerate() {
            match slot {
                Slot::Ended(end) => {
                    // Already applied to the rule.
                    self.progress(|p| p.counts().children_done += 1);
                    ended.push(end);
                }
                Slot::Called(child) => {
                    let (out, at) = answers
                        .remove(&j)
                        .unwrap_or_else(|| (CallOutcome::failed(Failure::waited_for_slot(&child.key)), None));
                    let mut end = child.end(self, fail_fast, &Site { key: site.key, ..site }, out);
                    if let (Some((started, duration)), false) = (at, end.trace.started_ms.is_none()) {
                        end.trace.started_ms = Some(started);
                        end.trace.ended_ms = Some(started.saturating_add(duration));
                        end.trace.duration_ms = duration;
                    }
                    finish(end, &mut ended);
                }
            }
        }
        ended
    }

    /// Runs the children of `slots` at `called` in activities, again for those a batch
    /// hands back (deferred), and says how each call ended, with when it ran.
    async fn call_batch(
        &self,
        site: Site<'_>,
        continue_on_error: bool,
        share: usize,
        slots: &[Slot],
        called: &[usize],
    ) -> std::collections::HashMap<usize, (CallOutcome, Option<(u64, u64)>)> {
        let mut answers = std::collections::HashMap::new();
        let mut pending: Vec<usize> = called.to_vec();
        while !pending.is_empty() {
            let children: Vec<BatchChild> = pending
                .iter()
                .filter_map(|s| match &slots[*s] {
                    Slot::Called(c) => Some(BatchChild { key: c.key.clone(), arguments: c.arguments.clone() }),
                    Slot::Ended(_) => None,
                })
                .collect();
            let keys: Vec<String> = children.iter().map(|c| c.key.clone()).collect();
            let fail_all = |answers: &mut std::collections::HashMap<_, _>, f: &dyn Fn(&str) -> Failure| {
                for (s, k) in pending.iter().zip(&keys) {
                    answers.insert(*s, (CallOutcome::failed(f(k)), None));
                }
            };
            let mock = self.mock.as_ref().and_then(|m| m.get(site.tool_path)).cloned();
            let mock_base = match mock {
                Some(_) => self.mock_calls.borrow().get(site.tool_path).copied().unwrap_or(0),
                None => 0,
            };
            let input = BatchInput {
                tool_path: site.tool_path.to_string(),
                children,
                timeout_seconds: site.timeout_seconds,
                retry: site.policy.clone(),
                seed: self.input.options.seed,
                concurrency: share,
                continue_on_error,
                deadline_unix_ms: self.deadline_ms,
                mock: mock.clone(),
                mock_base,
                max_tool_output: self.input.options.max_tool_output,
                breaker: self.input.options.breaker.clone(),
            };
            let bytes = json_bytes(&input);
            if let Some(e) = super::super::over_payload_limit("the call's arguments", bytes) {
                fail_all(&mut answers, &|k| Failure::new(k, Code::EngineLimit, e.clone()));
                break;
            }
            let n = pending.len();
            let opts = self.batch_options(site, share, n, &keys);
            // The activity's summary goes into the history with its input.
            let bytes = bytes.saturating_add(opts.summary.as_ref().map_or(0, String::len));
            if let Some(e) = self.over_history_limit(bytes) {
                fail_all(&mut answers, &|k| Failure::new(k, Code::EngineLimit, e.clone()));
                break;
            }
            self.history_bytes.add(bytes);
            self.progress(|p| p.counts().in_flight += n);
            let started = self.now_rel();
            let answer = self.ctx.execute_activity(TdslActivities::call_batch, input, opts).await;
            self.history_bytes.add(answer.as_ref().map_or_else(activity_error_bytes, json_bytes));
            let duration = self.now_rel().saturating_sub(started);
            let out = match answer {
                Ok(out) if out.children.len() == n => out,
                // The batch failed as a whole (its workers lost, its run cancelled): each
                // child ends as one call would have.
                other => {
                    let (outcome, attempts, message, _) = match &other {
                        Err(e) => self.classify(e, site.policy, site.timeout_seconds),
                        Ok(_) => (
                            Outcome::Permanent,
                            1,
                            "the batch's activity answered for other children".to_string(),
                            Vec::new(),
                        ),
                    };
                    for (s, k) in pending.iter().zip(&keys) {
                        let here = Site { key: k, ..site };
                        let call = self.settle_call(
                            here,
                            started,
                            duration,
                            (outcome, attempts, Err(message.clone()), Vec::new()),
                        );
                        answers.insert(*s, (call, Some((started, duration))));
                    }
                    break;
                }
            };
            if mock.is_some() {
                *self.mock_calls.borrow_mut().entry(site.tool_path.to_string()).or_insert(0) += out.mock_calls;
            }
            let others = self.in_flight.get().saturating_sub(self.chunk_slots.get()).saturating_sub(share);
            self.peak.set(self.peak.get().max(others + out.max_in_flight));
            let mut again = Vec::new();
            for ((s, k), child) in pending.iter().zip(&keys).zip(out.children) {
                // Handed back, or stopped by its worker's shutdown while the run goes on.
                if child.status == BatchStatus::Deferred
                    || (child.status == BatchStatus::Cancelled && !self.cancelled())
                {
                    self.progress(|p| p.counts().in_flight = p.counts().in_flight.saturating_sub(1));
                    again.push(*s);
                    continue;
                }
                let at =
                    (started.saturating_add(child.started_ms).min(started + duration), child.duration_ms.min(duration));
                let call = self.settle_child(Site { key: k, ..site }, at, child);
                answers.insert(*s, (call, Some(at)));
            }
            // A batch always settles one child at least; one that did not is not tried again.
            if again.len() == n {
                for s in again.drain(..) {
                    let k = keys[pending.iter().position(|p| *p == s).unwrap_or(0)].clone();
                    answers.insert(s, (CallOutcome::failed(Failure::waited_for_slot(&k)), None));
                }
            }
            pending = again;
        }
        answers
    }

    /// One child's call as its batch says it ended.
    fn settle_child(&self, site: Site<'_>, (started, duration): (u64, u64), child: BatchChildOutput) -> CallOutcome {
        let key = site.key;
        let outcome = match child.status {
            BatchStatus::Ok => Outcome::Ok,
            BatchStatus::Transient => Outcome::Transient,
            BatchStatus::Permanent => Outcome::Permanent,
            BatchStatus::Timeout => Outcome::Timeout,
            BatchStatus::Deadline => Outcome::Deadline,
            BatchStatus::Refused => Outcome::Refused,
            BatchStatus::Cancelled => Outcome::Cancelled,
            BatchStatus::NotStarted | BatchStatus::Deferred => {
                self.progress(|p| p.counts().in_flight = p.counts().in_flight.saturating_sub(1));
                // As a call that waited for its slot: the run stopped, or a sibling failed.
                let f = if self.deadline_passed() { self.stop_failure(key) } else { Failure::waited_for_slot(key) };
                return CallOutcome::failed(f);
            }
        };
        let result = match (child.response, outcome) {
            (Some(r), Outcome::Ok) => Ok(r),
            (_, Outcome::Deadline) => {
                Err(format!("the run's deadline of {} s passed", self.input.options.deadline_seconds.unwrap_or(0.0)))
            }
            (_, Outcome::Cancelled) => Err("the run was cancelled".to_string()),
            (_, _) => Err(child.error.unwrap_or_default()),
        };
        let ended: CallEnd = (outcome, child.attempts.max(1), result, child.earlier);
        self.settle_call(site, started, duration, ended)
    }

    /// The options of a batch's activity: long enough for every child's attempts and
    /// back-offs, wave after wave; a heartbeat timeout that finds a lost worker out; a
    /// cancelled run waits for the batch to say what ran.
    fn batch_options(&self, site: Site<'_>, share: usize, n: usize, keys: &[String]) -> ActivityOptions {
        let policy = site.policy;
        let tries = f64::from(policy.max_retries) + 1.0;
        let per_child = tries * site.timeout_seconds + f64::from(policy.max_retries) * policy.max_delay_seconds;
        let waves = n.div_ceil(share.max(1)) as f64;
        let start_to_close = secs(waves * per_child + 60.0);
        let close = match self.deadline_ms {
            // A little past the run's deadline: the batch stops its children there itself.
            Some(d) => ActivityCloseTimeouts::ScheduleAndStartToClose {
                schedule_to_close: Duration::from_millis(
                    u64::try_from(d.saturating_sub(self.now())).unwrap_or(1).max(1).saturating_add(5_000),
                ),
                start_to_close,
            },
            None => ActivityCloseTimeouts::StartToClose(start_to_close),
        };
        let retry = TemporalRetry::builder()
            .initial_interval(Duration::from_secs(1))
            .backoff_coefficient(2.0)
            .maximum_attempts(BATCH_ATTEMPTS)
            .build();
        let summary = match (keys.first(), keys.last()) {
            (Some(a), Some(b)) if n > 1 => format!("{a}..{b}"),
            (Some(a), _) => a.clone(),
            _ => site.key.to_string(),
        };
        ActivityOptions::with_close_timeouts(close)
            .retry_policy(retry)
            .heartbeat_timeout(BATCH_HEARTBEAT_TIMEOUT)
            .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
            .summary(summary)
            .build()
    }
}
