//! The fail-fast rule between fan-out children and the run's budget of calls.

use std::sync::Arc;

use super::{CallBudget, ChildEnd, ChildRun, Driver, FailFast, Site};
use crate::analysis::StepPlan;
use crate::diagnostic::Code;
use crate::exec::clock::ClockScope;
use crate::exec::data::{CallOutcome, Failure};
use crate::exec::retry::RetryPolicy;
use crate::exec::{ChildTrace, StepStatus};
use crate::value::Value;

/// A driver whose run has stopped (its deadline passed) or not; nothing here evaluates.
struct Still(bool, CallBudget);

impl Driver for Still {
    const TIMEOUT_BOUNDS_EXPRESSIONS: bool = true;
    fn default_timeout_seconds(&self) -> f64 {
        60.0
    }
    fn retry_policy(&self, _step: &StepPlan) -> RetryPolicy {
        RetryPolicy::default()
    }
    fn max_fan_out(&self) -> usize {
        10
    }
    fn now_rel(&self) -> u64 {
        7
    }
    fn wall_at(&self, _rel_ms: u64) -> smol_str::SmolStr {
        smol_str::SmolStr::default()
    }
    fn deadline_passed(&self) -> bool {
        self.0
    }
    fn deadline_hit(&self) -> bool {
        self.0
    }
    fn cancelled(&self) -> bool {
        false
    }
    fn deadline_seconds(&self) -> f64 {
        2.0
    }
    fn clock(&self, _key: &str, _eval_timeout: Option<f64>) -> Arc<ClockScope> {
        unreachable!("no expression is evaluated here")
    }
    fn calls(&self) -> &CallBudget {
        &self.1
    }
}

fn never_started(i: usize, reason: &str) -> ChildTrace {
    ChildTrace { reason: Some(reason.to_string()), ..ChildTrace::new(i) }
}

/// The one fail-fast rule: a child that failed on its own stops the rest (not one that
/// was cancelled, nor under `continue_on_error`), and a child stopped before it started
/// or while its call waited for a slot is written alike, naming the child that failed.
#[test]
fn a_failed_child_stops_the_rest_and_what_never_started_says_so_alike() {
    let (d, policy) = (Still(false, CallBudget::new(10)), RetryPolicy::default());
    let site = Site {
        tool_path: "/t.tool",
        tool: None,
        key: "fan",
        depth: 0,
        policy: &policy,
        retry_asked: false,
        timeout_seconds: 1.0,
    };
    let fail_fast = FailFast::new(None, false);
    let Ok(waiting) = ChildRun::start(&d, &fail_fast, "fan", 2, || Value::Int(2)) else { panic!("starts") };
    fail_fast.ended(&ChildEnd::failed(0, Failure::run_cancelled("fan[0]")));
    assert!(!fail_fast.stopped(), "a cancelled child did not fail on its own");
    fail_fast.ended(&ChildEnd::failed(1, Failure::new("fan[1]", Code::ToolFailed, "no".to_string())));
    assert!(fail_fast.stopped());
    let Err(refused) = ChildRun::start(&d, &fail_fast, "fan", 3, || Value::Int(3)) else { panic!("stopped") };
    let waited = waiting.end(&d, &fail_fast, &site, CallOutcome::failed(Failure::waited_for_slot("fan[2]")));
    for (i, end) in [(3, refused), (2, waited)] {
        assert_eq!(end.trace, never_started(i, "step `fan[1]` failed"));
        let f = end.out.expect_err("a failure");
        assert_eq!((f.code, f.cancelled, f.message.as_str()), (Code::RunCancelled, true, "step `fan[1]` failed"));
    }
    // The run's stop, when it stopped, is what a child that never started says.
    let end = ChildRun::not_run(&Still(true, CallBudget::new(10)), &fail_fast, "fan", 4);
    assert_eq!(end.trace, never_started(4, "the run's deadline passed"));
    assert_eq!(end.out.err().map(|f| f.code), Some(Code::RunDeadline));
    // Under `continue_on_error` nothing stops.
    let lenient = FailFast::new(None, true);
    lenient.ended(&ChildEnd::failed(1, Failure::new("fan[1]", Code::ToolFailed, "no".to_string())));
    assert!(!lenient.stopped());
    assert_eq!(ChildEnd::failed(1, Failure::run_deadline("fan[1]", 2.0)).trace.status, StepStatus::Timeout);
}

#[test]
fn calls_lent_are_taken_until_given_back_and_a_share_names_the_runs_limit() {
    let share = CallBudget::share(10, 100);
    assert_eq!((share.limit, share.left()), (100, 10));
    assert_eq!(share.lend(4), 4);
    assert_eq!(share.left(), 6);
    // At most what is left.
    assert_eq!(share.lend(50), 6);
    assert_eq!(share.left(), 0);
    share.give_back(7);
    assert_eq!((share.left(), share.taken()), (7, 3));
    for _ in 0..7 {
        assert!(share.take());
    }
    assert!(!share.exhausted());
    assert!(!share.take(), "the 11th call of a share of 10");
    assert!(share.exhausted());
    assert_eq!((share.left(), share.taken()), (0, 10));
    // Used up elsewhere (a chunk it lent to): nothing more is taken.
    let run = CallBudget::new(5);
    run.exhaust();
    assert_eq!(run.left(), 0);
    assert!(!run.take());
}
