//! Retries with exponential backoff and jitter (SPEC §6.5).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::time::Random;
use crate::ranges::{self, RangeError};
use crate::tool::Retry;

/// A step's retry policy: `{"max_retries": 2, "base_delay_seconds": 1.0, "factor": 2.0,
/// "max_delay_seconds": 30.0, "jitter": 0.1}` by default (the defaults of
/// `seeds/000_7c8da07936e01cd9.txt`). Each field has a range ([`crate::ranges`]) that
/// [`RetryPolicy::validate`] checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so attempts = 1 + max_retries).
    pub max_retries: u32,
    /// Delay before the first retry, in seconds.
    pub base_delay_seconds: f64,
    /// Multiplier per retry.
    pub factor: f64,
    /// Upper bound on one delay, in seconds.
    pub max_delay_seconds: f64,
    /// Fraction of the delay added or removed at random (0.1 = ±10 %).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy { max_retries: 2, base_delay_seconds: 1.0, factor: 2.0, max_delay_seconds: 30.0, jitter: 0.1 }
    }
}

impl RetryPolicy {
    /// Every field in its range (SPEC §6.5).
    pub fn validate(&self) -> Result<(), RangeError> {
        ranges::MAX_RETRIES.check(f64::from(self.max_retries))?;
        ranges::BASE_DELAY_SECONDS.check(self.base_delay_seconds)?;
        ranges::MAX_DELAY_SECONDS.check(self.max_delay_seconds)?;
        ranges::FACTOR.check(self.factor)?;
        ranges::JITTER.check(self.jitter)?;
        Ok(())
    }

    /// A step's policy: its `retry` keys over this one (the run's defaults).
    pub fn with_step(&self, retry: Option<&Retry>) -> RetryPolicy {
        let mut p = self.clone();
        if let Some(r) = retry {
            if let Some(v) = &r.max_retries {
                p.max_retries = v.node;
            }
            if let Some(v) = &r.base_delay_seconds {
                p.base_delay_seconds = v.node;
            }
            if let Some(v) = &r.factor {
                p.factor = v.node;
            }
            if let Some(v) = &r.max_delay_seconds {
                p.max_delay_seconds = v.node;
            }
            if let Some(v) = &r.jitter {
                p.jitter = v.node;
            }
        }
        p
    }

    /// The delay before retry `n` (0-based): `min(max_delay, base_delay * factor^n)` ± a
    /// random `jitter` fraction of it, never negative.
    pub fn delay(&self, n: u32, random: &dyn Random) -> Duration {
        let exp = i32::try_from(n).unwrap_or(i32::MAX);
        let raw = self.base_delay_seconds.max(0.0) * self.factor.max(0.0).powi(exp);
        let capped =
            if raw.is_finite() { raw.min(self.max_delay_seconds.max(0.0)) } else { self.max_delay_seconds.max(0.0) };
        let jitter = self.jitter.clamp(0.0, 1.0);
        // Uniform in [-jitter, +jitter).
        let spread = (random.next_f64() * 2.0 - 1.0) * jitter;
        let secs = (capped * (1.0 + spread)).max(0.0);
        // Saturating: whatever the policy (a host may skip `validate`), never a panic.
        Duration::try_from_secs_f64(secs).unwrap_or(if secs > 0.0 { Duration::MAX } else { Duration::ZERO })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(f64);
    impl Random for Fixed {
        fn next_f64(&self) -> f64 {
            self.0
        }
    }

    #[test]
    fn exponential_and_capped() {
        let p = RetryPolicy { jitter: 0.0, ..RetryPolicy::default() };
        let mid = Fixed(0.5);
        let delays: Vec<u64> = (0..7).map(|n| p.delay(n, &mid).as_millis() as u64).collect();
        assert_eq!(delays, vec![1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    }

    #[test]
    fn jitter_spreads_both_ways() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, &Fixed(0.0)).as_millis(), 900);
        assert_eq!(p.delay(0, &Fixed(0.5)).as_millis(), 1000);
        assert!(p.delay(0, &Fixed(0.999_999)).as_millis() >= 1099);
    }

    #[test]
    fn delays_far_out_of_range_saturate_instead_of_panicking() {
        for huge in [1e20, 1e300, f64::INFINITY, f64::NAN] {
            let p = RetryPolicy {
                base_delay_seconds: huge,
                max_delay_seconds: huge,
                jitter: 0.0,
                ..RetryPolicy::default()
            };
            let _ = p.delay(3, &Fixed(0.5));
            assert!(p.validate().is_err());
        }
        assert!(RetryPolicy::default().validate().is_ok());
    }

    #[test]
    fn huge_exponents_stay_at_the_cap() {
        let p = RetryPolicy { jitter: 0.0, ..RetryPolicy::default() };
        assert_eq!(p.delay(u32::MAX, &Fixed(0.5)).as_secs(), 30);
    }
}
