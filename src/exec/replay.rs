//! Replay: a composite re-run from a trace, with no tool calls.
//!
//! The run is the ordinary scheduler's; the trace comes in as its [`Source`] (a
//! [`Recording`]), the interface through which a live run reaches its runner, breakers,
//! retry back-off and clock. So the scheduler knows nothing of replay.
//!
//! Every attempt's outcome (the response, or the error with its kind: transient, permanent,
//! timeout, deadline, refused by a breaker) and every wall-clock read comes from the trace,
//! keyed by the step's path (`extract`, `extract[3]`, `outer/inner`); the retry delays are
//! the recorded ones, slept on a virtual clock. Everything else — conditions, transforms,
//! REFs, validation, the response map — runs again from the current definitions. So a replay
//! of an unchanged workflow gives the recorded result, and a replay after a change shows
//! where the run would now go another way: each such place is a [`Divergence`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::executor::{Event, Executor, Options, Run};
use super::guard::GuardError;
use super::retry::RetryPolicy;
use super::runner::{CancelToken, ToolCall, ToolError};
use super::scheduler::{self, AttemptCall, Ctx, Source};
use super::time::ManualTime;
use super::trace::{Attempt, CallTrace, ChildTrace, Outcome, StepTrace, Trace};
use super::workflow::Workflow;
use crate::value::Value;

/// A place where the replay did not do what the recording did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The step path (`extract[2]`), or `run` for the run as a whole.
    pub at: String,
    /// What differs.
    pub what: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

/// What a replay produced.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The replayed run (its trace is the replay's own).
    pub run: Run,
    /// Where it departed from the recording; empty when it did not.
    pub divergences: Vec<Divergence>,
}

/// Replays `trace` on `workflow`. The options' concurrency, retry defaults and guards
/// apply; the deadline does not (recorded deadline outcomes are replayed as they were).
pub fn replay(workflow: &Workflow, trace: &Trace, options: Options) -> Result<Replay, GuardError> {
    options.validate()?;
    options.guards.check(workflow)?;
    let recording = Arc::new(Recording::from_trace(trace));
    let wall = chrono::DateTime::parse_from_rfc3339(&trace.started_at).map_or(0, |t| t.timestamp_millis());
    let refuse =
        |_: &ToolCall<'_>| -> Result<Value, ToolError> { Err(ToolError::permanent("replay makes no tool calls")) };
    let ex = Executor::with_runner(Arc::new(refuse))
        .with_options(Options { deadline: None, ..options })
        .with_time(Arc::new(ManualTime::new(wall)));
    let run = scheduler::run(&ex, workflow, trace.arguments.clone(), &*recording, &CancelToken::new());
    let mut divergences = recording.take();
    compare_runs(trace, &run.trace, &mut divergences);
    Ok(Replay { run, divergences })
}

/// A trace's attempts and clock reads by step path.
pub(crate) struct Recording {
    attempts: HashMap<String, Vec<Attempt>>,
    clocks: HashMap<String, Vec<i64>>,
    divergences: Mutex<Vec<Divergence>>,
}

impl Recording {
    pub(crate) fn from_trace(t: &Trace) -> Recording {
        let mut r = Recording { attempts: HashMap::new(), clocks: HashMap::new(), divergences: Mutex::new(Vec::new()) };
        r.clocks.insert("$tool".to_string(), t.clock_reads.clone());
        r.steps(&t.steps, "");
        r
    }

    fn steps(&mut self, steps: &[StepTrace], prefix: &str) {
        for s in steps {
            let key = format!("{prefix}{}", s.execution_id);
            self.attempts.insert(key.clone(), s.attempts.clone());
            self.clocks.insert(key.clone(), s.clock_reads.clone());
            self.callee(&key, s.steps.as_deref(), &s.callee_clock_reads);
            for c in s.children.iter().flatten() {
                let ck = format!("{key}[{}]", c.index);
                self.attempts.insert(ck.clone(), c.attempts.clone());
                self.callee(&ck, c.steps.as_deref(), &c.callee_clock_reads);
            }
        }
    }

    fn callee(&mut self, key: &str, steps: Option<&[StepTrace]>, clock: &[i64]) {
        if let Some(steps) = steps {
            self.clocks.insert(format!("{key}/$tool"), clock.to_vec());
            self.steps(steps, &format!("{key}/"));
        }
    }

    /// The recorded attempt `n` (0-based) of a step path.
    fn recorded(&self, key: &str, n: u32) -> Option<&Attempt> {
        self.attempts.get(key).and_then(|a| a.get(n as usize))
    }

    fn diverge(&self, at: &str, what: String) {
        self.divergences.lock().unwrap_or_else(PoisonError::into_inner).push(Divergence { at: at.to_string(), what });
    }

    fn take(&self) -> Vec<Divergence> {
        std::mem::take(&mut *self.divergences.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The recording as the run's source: every attempt's outcome, back-off and breaker refusal,
/// and every clock read, as recorded.
impl Source for Recording {
    fn clock_reads(&self, key: &str) -> Option<Vec<i64>> {
        Some(self.clocks.get(key).cloned().unwrap_or_default())
    }

    fn delay_ms(&self, _ctx: &Ctx<'_>, key: &str, n: u32, _policy: &RetryPolicy) -> u64 {
        self.recorded(key, n).map_or(0, |a| a.delay_ms)
    }

    fn refused_at_once(&self, _ctx: &Ctx<'_>, call: &AttemptCall<'_>, _delay_ms: u64) -> Option<String> {
        self.recorded(call.key, call.n)
            .filter(|a| a.outcome == Outcome::Refused)
            .map(|a| a.error.clone().unwrap_or_default())
    }

    fn attempt(&self, ctx: &Ctx<'_>, call: &AttemptCall<'_>) -> Option<(Outcome, Result<Value, ToolError>)> {
        let (key, n) = (call.key, call.n);
        let recorded = self.recorded(key, n);
        if recorded.is_none_or(|a| a.outcome != Outcome::Refused) {
            ctx.emit(Event::AttemptStarted { step: key, tool: call.tool_path, attempt: n + 1 });
        }
        Some(match recorded {
            Some(a) => {
                let message = a.error.clone().unwrap_or_default();
                let answer = match a.outcome {
                    Outcome::Ok => Ok(a.response.clone().unwrap_or_default()),
                    Outcome::Permanent => Err(ToolError::permanent(message)),
                    Outcome::Deadline => {
                        ctx.mark_deadline_hit();
                        Err(ToolError::transient(message))
                    }
                    Outcome::Cancelled => {
                        ctx.cancel_run();
                        Err(ToolError::transient(message))
                    }
                    Outcome::Transient | Outcome::Timeout | Outcome::Refused => Err(ToolError::transient(message)),
                };
                (a.outcome, answer)
            }
            None => {
                self.diverge(key, format!("attempt {} was not recorded: the replay calls the tool more often", n + 1));
                (Outcome::Permanent, Err(ToolError::permanent("replay: no recorded response for this call")))
            }
        })
    }
}

fn compare_runs(recorded: &Trace, replayed: &Trace, out: &mut Vec<Divergence>) {
    let mut diff = |what: String| out.push(Divergence { at: "run".to_string(), what });
    if recorded.status != replayed.status {
        diff(format!("status is {}, recorded {}", replayed.status.as_str(), recorded.status.as_str()));
    }
    if recorded.result != replayed.result {
        diff(format!("the result differs: {} now, recorded {}", show(&replayed.result), show(&recorded.result)));
    }
    compare_steps(&recorded.steps, &replayed.steps, "", out);
}

fn show(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Compares what two runs of one step or child did: status, arguments, result, attempts.
fn compare_calls(at: &str, rec: &CallTrace, new: &CallTrace, out: &mut Vec<Divergence>) {
    let mut diff = |what: String| out.push(Divergence { at: at.to_string(), what });
    if rec.status != new.status {
        diff(format!("status is {}, recorded {}", new.status.as_str(), rec.status.as_str()));
    }
    if rec.arguments != new.arguments {
        diff(format!("arguments differ: {} now, recorded {}", show(&new.arguments), show(&rec.arguments)));
    }
    if rec.result != new.result {
        diff(format!("result differs: {} now, recorded {}", show(&new.result), show(&rec.result)));
    }
    if rec.attempts.len() > new.attempts.len() {
        diff(format!("{} attempts now, recorded {}", new.attempts.len(), rec.attempts.len()));
    }
}

fn compare_steps(rec: &[StepTrace], new: &[StepTrace], prefix: &str, out: &mut Vec<Divergence>) {
    for r in rec {
        let at = format!("{prefix}{}", r.execution_id);
        let Some(n) = new.iter().find(|n| n.execution_id == r.execution_id) else {
            out.push(Divergence { at, what: "the step is not in the replay".to_string() });
            continue;
        };
        compare_calls(&at, &r.call, &n.call, out);
        compare_children(r.children.as_deref().unwrap_or(&[]), n.children.as_deref().unwrap_or(&[]), &at, out);
        if let (Some(a), Some(b)) = (&r.steps, &n.steps) {
            compare_steps(a, b, &format!("{at}/"), out);
        }
    }
    for n in new.iter().filter(|n| !rec.iter().any(|r| r.execution_id == n.execution_id)) {
        out.push(Divergence {
            at: format!("{prefix}{}", n.execution_id),
            what: "the step is not in the recording".to_string(),
        });
    }
}

fn compare_children(rec: &[ChildTrace], new: &[ChildTrace], step: &str, out: &mut Vec<Divergence>) {
    if rec.len() != new.len() {
        out.push(Divergence {
            at: step.to_string(),
            what: format!("{} children now, recorded {}", new.len(), rec.len()),
        });
    }
    for (r, n) in rec.iter().zip(new) {
        let at = format!("{step}[{}]", r.index);
        compare_calls(&at, &r.call, &n.call, out);
        if let (Some(a), Some(b)) = (&r.steps, &n.steps) {
            compare_steps(a, b, &format!("{at}/"), out);
        }
    }
}
