//! A per-tool circuit breaker (SPEC §6.5): closed → open after `failure_threshold`
//! consecutive failures; open refuses calls for `reset_timeout`; then half-open lets
//! `half_open_calls` trial calls through; a success closes it, a failure opens it again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::ranges::{self, RangeError};

pub use crate::ranges::DEFAULT_FAILURE_THRESHOLD;

/// Breaker settings (failure threshold 1–10, reset 10–300 s, half-open calls 1–5;
/// [`BreakerPolicy::validate`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerPolicy {
    /// Consecutive failures that open the breaker.
    pub failure_threshold: u32,
    /// How long it stays open, in seconds.
    pub reset_timeout_seconds: f64,
    /// Trial calls allowed while half-open.
    pub half_open_calls: u32,
}

impl Default for BreakerPolicy {
    fn default() -> BreakerPolicy {
        BreakerPolicy { failure_threshold: DEFAULT_FAILURE_THRESHOLD, reset_timeout_seconds: 60.0, half_open_calls: 1 }
    }
}

impl BreakerPolicy {
    /// Every field in its range (SPEC §6.5).
    pub fn validate(&self) -> Result<(), RangeError> {
        ranges::BREAKER_THRESHOLD.check(f64::from(self.failure_threshold))?;
        ranges::BREAKER_RESET_SECONDS.check(self.reset_timeout_seconds)?;
        ranges::BREAKER_HALF_OPEN_CALLS.check(f64::from(self.half_open_calls))?;
        Ok(())
    }

    /// The reset timeout in milliseconds, saturating (never a wrapping cast).
    fn reset_ms(&self) -> u64 {
        let d = std::time::Duration::try_from_secs_f64(self.reset_timeout_seconds).unwrap_or(
            if self.reset_timeout_seconds > 0.0 { std::time::Duration::MAX } else { std::time::Duration::ZERO },
        );
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
    }
}

/// A breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BreakerState {
    /// Calls pass; counts consecutive failures.
    Closed,
    /// Calls are refused until the reset timeout has passed.
    Open,
    /// A limited number of trial calls pass.
    HalfOpen,
}

#[derive(Debug)]
struct Breaker {
    state: BreakerState,
    failures: u32,
    opened_at_ms: u64,
    trials_in_flight: u32,
}

/// The breakers of every tool, keyed by tool path.
#[derive(Debug, Default)]
pub struct Breakers {
    policy: BreakerPolicy,
    /// Fx-hashed: four lookups a call, by tool paths the workflow's own files name.
    by_tool: Mutex<rustc_hash::FxHashMap<String, Breaker>>,
    /// Whether any call has failed yet. Until one has, every breaker is closed with no
    /// failures counted: a call is admitted, a success changes nothing, and no lookup is
    /// made (a call that races the first failure is ordered before it).
    failed: AtomicBool,
}

/// Why a call would be refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The breaker is open until this monotonic time (milliseconds), when it half-opens.
    OpenUntil(u64),
    /// The breaker is half-open and its trial calls are all in flight.
    TrialsInFlight,
}

/// Whether a call may go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Allowed,
    /// Refused: the breaker is open.
    Refused,
}

impl Breakers {
    /// Breakers with a policy.
    pub fn new(policy: BreakerPolicy) -> Breakers {
        Breakers { policy, by_tool: Mutex::new(rustc_hash::FxHashMap::default()), failed: AtomicBool::new(false) }
    }

    /// Whether every breaker is still closed with nothing counted ([`Breakers::failed`]).
    fn untouched(&self) -> bool {
        !self.failed.load(Ordering::Acquire)
    }

    fn with<T>(&self, tool: &str, f: impl FnOnce(&mut Breaker, &BreakerPolicy) -> T) -> T {
        let mut map = self.by_tool.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The tool path is copied only for a tool's first call (there are four lookups a call).
        if let Some(b) = map.get_mut(tool) {
            return f(b, &self.policy);
        }
        let closed = Breaker { state: BreakerState::Closed, failures: 0, opened_at_ms: 0, trials_in_flight: 0 };
        f(map.entry(tool.to_string()).or_insert(closed), &self.policy)
    }

    /// Asks to make a call at time `now_ms`.
    pub fn admit(&self, tool: &str, now_ms: u64) -> Admission {
        if self.untouched() {
            return Admission::Allowed;
        }
        self.with(tool, |b, p| {
            if b.state == BreakerState::Open {
                if now_ms.saturating_sub(b.opened_at_ms) >= p.reset_ms() {
                    b.state = BreakerState::HalfOpen;
                    b.trials_in_flight = 0;
                } else {
                    return Admission::Refused;
                }
            }
            if b.state == BreakerState::HalfOpen {
                if b.trials_in_flight >= p.half_open_calls.max(1) {
                    return Admission::Refused;
                }
                b.trials_in_flight += 1;
            }
            Admission::Allowed
        })
    }

    /// Whether a call at `at_ms` would be refused, and until when, without changing the
    /// breaker: a call the breaker will refuse fails at once, without waiting for its
    /// back-off (SPEC §6.5).
    pub fn refusal(&self, tool: &str, at_ms: u64) -> Option<Refusal> {
        if self.untouched() {
            return None;
        }
        self.with(tool, |b, p| match b.state {
            BreakerState::Open => {
                let until = b.opened_at_ms.saturating_add(p.reset_ms());
                (at_ms < until).then_some(Refusal::OpenUntil(until))
            }
            BreakerState::HalfOpen if b.trials_in_flight >= p.half_open_calls.max(1) => Some(Refusal::TrialsInFlight),
            _ => None,
        })
    }

    /// Records a successful call.
    pub fn success(&self, tool: &str) {
        if self.untouched() {
            return;
        }
        self.with(tool, |b, _| {
            b.state = BreakerState::Closed;
            b.failures = 0;
            b.trials_in_flight = 0;
        });
    }

    /// Records a failed call at `now_ms`; returns true when this failure opened (tripped)
    /// the breaker.
    pub fn failure(&self, tool: &str, now_ms: u64) -> bool {
        self.failed.store(true, Ordering::Release);
        self.with(tool, |b, p| {
            b.failures += 1;
            let trip = b.state == BreakerState::HalfOpen || b.failures >= p.failure_threshold.max(1);
            if trip && b.state != BreakerState::Open {
                b.state = BreakerState::Open;
                b.opened_at_ms = now_ms;
                b.trials_in_flight = 0;
                return true;
            }
            false
        })
    }

    /// The state of a tool's breaker.
    pub fn state(&self, tool: &str) -> BreakerState {
        if self.untouched() {
            return BreakerState::Closed;
        }
        self.with(tool, |b, _| b.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_and_recovers_through_half_open() {
        let b = Breakers::new(BreakerPolicy::default());
        assert!(!b.failure("t", 0));
        assert!(!b.failure("t", 0));
        assert!(b.failure("t", 10), "third consecutive failure trips");
        assert_eq!(b.state("t"), BreakerState::Open);
        assert_eq!(b.admit("t", 59_999), Admission::Refused);
        assert_eq!(b.admit("t", 60_010), Admission::Allowed, "half-open trial");
        assert_eq!(b.state("t"), BreakerState::HalfOpen);
        assert_eq!(b.admit("t", 60_011), Admission::Refused, "one trial at a time");
        b.success("t");
        assert_eq!(b.state("t"), BreakerState::Closed);
    }

    #[test]
    fn before_any_failure_every_breaker_is_closed_and_successes_then_reset_the_count() {
        let b = Breakers::new(BreakerPolicy::default());
        // No failure yet: admitted, closed, not refused, and a success changes nothing.
        b.success("t");
        assert_eq!(
            (b.admit("t", 0), b.state("t"), b.refusal("t", 0)),
            (Admission::Allowed, BreakerState::Closed, None)
        );
        // From the first failure on, the breaker counts: a success resets it.
        assert!(!b.failure("t", 0));
        assert!(!b.failure("t", 0));
        b.success("t");
        assert!(!b.failure("t", 0));
        assert!(!b.failure("t", 0));
        assert_eq!(b.state("t"), BreakerState::Closed, "two failures since the success");
        assert!(b.failure("t", 0), "the third in a row trips");
        assert_eq!(b.refusal("t", 1), Some(Refusal::OpenUntil(60_000)));
        // Another tool's breaker is untouched by this one's failures.
        assert_eq!((b.admit("u", 1), b.state("u")), (Admission::Allowed, BreakerState::Closed));
    }

    #[test]
    fn refusal_says_until_when_without_changing_the_state() {
        let b = Breakers::new(BreakerPolicy::default());
        assert_eq!(b.refusal("t", 0), None);
        for _ in 0..3 {
            b.failure("t", 1_000);
        }
        assert_eq!(b.refusal("t", 30_000), Some(Refusal::OpenUntil(61_000)));
        assert_eq!(b.refusal("t", 61_000), None, "half-opens by then");
        assert_eq!(b.state("t"), BreakerState::Open);
        assert_eq!(b.admit("t", 61_000), Admission::Allowed);
        assert_eq!(b.refusal("t", 61_000), Some(Refusal::TrialsInFlight));
    }

    #[test]
    fn ranges_are_checked_and_a_huge_reset_saturates() {
        assert!(BreakerPolicy::default().validate().is_ok());
        let p = BreakerPolicy { reset_timeout_seconds: 1e300, ..BreakerPolicy::default() };
        assert!(p.validate().is_err());
        assert_eq!(p.reset_ms(), u64::MAX);
        assert!(BreakerPolicy { failure_threshold: 0, ..BreakerPolicy::default() }.validate().is_err());
        assert!(BreakerPolicy { half_open_calls: 6, ..BreakerPolicy::default() }.validate().is_err());
    }

    #[test]
    fn a_failed_trial_opens_again() {
        let b = Breakers::new(BreakerPolicy { failure_threshold: 1, ..BreakerPolicy::default() });
        assert!(b.failure("t", 0));
        assert_eq!(b.admit("t", 60_000), Admission::Allowed);
        assert!(b.failure("t", 60_000));
        assert_eq!(b.admit("t", 60_001), Admission::Refused);
    }

    #[test]
    fn success_resets_the_count() {
        let b = Breakers::new(BreakerPolicy::default());
        b.failure("t", 0);
        b.failure("t", 0);
        b.success("t");
        assert!(!b.failure("t", 0));
        assert_eq!(b.state("t"), BreakerState::Closed);
        assert_eq!(b.state("other"), BreakerState::Closed);
    }
}
