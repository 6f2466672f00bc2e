//! The ranges of every number that configures execution (SPEC §6.5), in one table.
//!
//! The same table is used by the static check of `.tool` files (`retry`,
//! `timeout_seconds`: `E0521` with the value's span), by the command line (`tdsl run
//! --deadline`, `--concurrency`, `--breaker-*`: a usage error, exit 2) and by the library
//! ([`crate::exec::Options::validate`], checked before every run). Data literals are not
//! concerned. The ranges are those of `seeds/000_7c8da07936e01cd9.txt`, plus the command
//! line's own (`--deadline`, `--concurrency`) and the guards' (`--max-steps`,
//! `--max-fan-out`, `--max-tool-output`).
//!
//! ```
//! use tdsl::ranges::{MAX_RETRIES, TIMEOUT_SECONDS};
//! assert!(MAX_RETRIES.contains(5.0) && !MAX_RETRIES.contains(6.0));
//! assert!(!MAX_RETRIES.contains(2.5), "an integer setting");
//! assert_eq!(TIMEOUT_SECONDS.check(1e17).unwrap_err().to_string(),
//!     "`timeout_seconds` must be from 1 to 300 (seconds), and it is 1e17");
//! ```

use std::fmt;

/// The accepted values of one setting: `min..=max`, whole numbers only when `integer`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// The setting's name as written in a `.tool` file or on the command line.
    pub name: &'static str,
    /// The smallest accepted value.
    pub min: f64,
    /// The largest accepted value.
    pub max: f64,
    /// Whether only whole numbers are accepted.
    pub integer: bool,
    /// The unit, for messages (`seconds`), or empty.
    pub unit: &'static str,
}

const fn range(name: &'static str, min: f64, max: f64, integer: bool, unit: &'static str) -> Range {
    Range { name, min, max, integer, unit }
}

/// `retry.max_retries`: retries after the first attempt.
pub const MAX_RETRIES: Range = range("max_retries", 0.0, 5.0, true, "");
/// `retry.base_delay_seconds`: the delay before the first retry.
pub const BASE_DELAY_SECONDS: Range = range("base_delay_seconds", 0.1, 10.0, false, "seconds");
/// `retry.max_delay_seconds`: the upper bound on one delay.
pub const MAX_DELAY_SECONDS: Range = range("max_delay_seconds", 1.0, 120.0, false, "seconds");
/// `retry.factor`: the multiplier per retry.
pub const FACTOR: Range = range("factor", 1.0, 4.0, false, "");
/// `retry.jitter`: the random fraction added or removed.
pub const JITTER: Range = range("jitter", 0.0, 0.5, false, "");
/// `timeout_seconds`: the bound on one attempt.
pub const TIMEOUT_SECONDS: Range = range("timeout_seconds", 1.0, 300.0, false, "seconds");
/// The circuit breaker's failure threshold (`--breaker-threshold`).
pub const BREAKER_THRESHOLD: Range = range("breaker threshold", 1.0, 10.0, true, "");
/// The circuit breaker's reset timeout (`--breaker-reset-seconds`).
pub const BREAKER_RESET_SECONDS: Range = range("breaker reset", 10.0, 300.0, false, "seconds");
/// The circuit breaker's trial calls while half-open (`--breaker-half-open-calls`).
pub const BREAKER_HALF_OPEN_CALLS: Range = range("breaker half-open calls", 1.0, 5.0, true, "");
/// The whole run's deadline (`--deadline`).
pub const DEADLINE_SECONDS: Range = range("deadline", 0.1, 86_400.0, false, "seconds");
/// The most tool calls in flight at once (`--concurrency`).
pub const CONCURRENCY: Range = range("concurrency", 1.0, 1024.0, true, "");

/// The most steps a run may execute (`--max-steps`, [`crate::exec::Guards::max_steps`]).
pub const MAX_STEPS: Range = range("max_steps", 1.0, 1_000_000.0, true, "");
/// The most children one parallel step may have (`--max-fan-out`,
/// [`crate::exec::Guards::max_fan_out`]).
pub const MAX_FAN_OUT: Range = range("max_fan_out", 1.0, 100_000.0, true, "");
/// The most bytes an `exec:` tool may print on standard output (`--max-tool-output`): at
/// least 1 KiB, so that a JSON answer always fits, at most 1 GiB.
pub const MAX_TOOL_OUTPUT: Range = range("max_tool_output", 1024.0, 1_073_741_824.0, true, "bytes");

/// Every range, for documentation and tests.
pub const ALL: &[Range] = &[
    MAX_RETRIES,
    BASE_DELAY_SECONDS,
    MAX_DELAY_SECONDS,
    FACTOR,
    JITTER,
    TIMEOUT_SECONDS,
    BREAKER_THRESHOLD,
    BREAKER_RESET_SECONDS,
    BREAKER_HALF_OPEN_CALLS,
    DEADLINE_SECONDS,
    CONCURRENCY,
    MAX_STEPS,
    MAX_FAN_OUT,
    MAX_TOOL_OUTPUT,
];

impl Range {
    /// Whether `x` is accepted (never NaN or an infinity).
    pub fn contains(&self, x: f64) -> bool {
        x.is_finite() && x >= self.min && x <= self.max && (!self.integer || x.fract() == 0.0)
    }

    /// `x`, or why it is not accepted.
    pub fn check(&self, x: f64) -> Result<f64, RangeError> {
        if self.contains(x) {
            Ok(x)
        } else {
            Err(RangeError { range: *self, value: x })
        }
    }

    /// What is accepted: `an integer from 0 to 5`, `from 0.1 to 10 (seconds)`.
    pub fn describe(&self) -> String {
        let kind = if self.integer { "an integer from" } else { "from" };
        let unit = if self.unit.is_empty() { String::new() } else { format!(" ({})", self.unit) };
        format!("{kind} {} to {}{unit}", self.min, self.max)
    }
}

/// A value outside its setting's range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeError {
    /// The setting's range.
    pub range: Range,
    /// The value given.
    pub value: f64,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` must be {}, and it is {}", self.range.name, self.range.describe(), show(self.value))
    }
}

/// A number as a person writes it: `7`, `0.05`, `1e20`.
fn show(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x}")
    } else {
        format!("{x:?}")
    }
}

impl std::error::Error for RangeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_non_finite_values_are_refused() {
        for r in ALL {
            assert!(r.contains(r.min) && r.contains(r.max), "{}", r.name);
            assert!(!r.contains(f64::NAN) && !r.contains(f64::INFINITY) && !r.contains(-f64::INFINITY));
            assert!(!r.contains(r.max + 1.0) && !r.contains(r.min - 1.0), "{}", r.name);
        }
        assert!(!CONCURRENCY.contains(1.5));
        assert!(JITTER.contains(0.25));
    }

    #[test]
    fn messages_name_the_setting_and_the_range() {
        assert_eq!(
            DEADLINE_SECONDS.check(1e20).unwrap_err().to_string(),
            "`deadline` must be from 0.1 to 86400 (seconds), and it is 1e20"
        );
        assert_eq!(MAX_RETRIES.describe(), "an integer from 0 to 5");
    }
}
