//! The ranges of every number that configures execution (SPEC §6.5), in one table.
//!
//! The same table is used by the static check of `.tool` files (`retry`,
//! `timeout_seconds`: `E0521` with the value's span), by the command line (`tdsl run
//! --deadline`, `--concurrency`, `--breaker-*`: a usage error, exit 2) and by the library
//! ([`crate::exec::Options::validate`], checked before every run). Data literals are not
//! concerned. The ranges are those of `seeds/000_7c8da07936e01cd9.txt`, plus the command
//! line's own (`--deadline`, `--concurrency`), the guards' (`--max-steps`,
//! `--max-fan-out`, `--max-tool-output`, `--max-tool-values`, `--max-calls-per-run`, `--max-result-bytes`), the
//! history's (`--history-payload-bytes`), Temporal's (`--temporal-history-bytes`) and the
//! expression [`crate::Limits`] a host sets ([`crate::Limits::validate`]; the engine refuses
//! to compile with limits out of range, `E0409`), and the bounds of checking that are fixed
//! (a range of one value, no flag: the "did you mean" budgets, the resolution of upstream
//! schemas).
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
/// The default breaker failure threshold (seed 000's): a step whose `max_retries` reaches it
/// can never make its last attempts, which `tdsl check` warns about (W0607).
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 3;
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
/// How deep composite callees may nest by default (the composite run is depth 0, its
/// composite callees depth 1, …): `tdsl check` reports a deeper chain (E0619), a run refuses
/// to start a composite past it (E0810).
pub const DEFAULT_MAX_NESTING: usize = 8;
/// How deep composite callees may nest (`--max-nesting`, [`crate::exec::Options::max_depth`],
/// [`crate::analysis::Analyzer::set_max_nesting`]). Each level is a frame of the executor on
/// the stack of the run's thread and two levels of the trace's JSON: at 32 the trace of the
/// deepest run stays well within the 128 levels a JSON reader takes (`tdsl report`,
/// `tdsl replay`), with room for the values in it.
pub const MAX_NESTING: Range = range("max_nesting", 1.0, 32.0, true, "");
/// The most bytes an `exec:` tool may print on standard output (`--max-tool-output`): at
/// least 1 KiB, so that a JSON answer always fits, at most 1 GiB.
pub const MAX_TOOL_OUTPUT: Range = range("max_tool_output", 1024.0, 1_073_741_824.0, true, "bytes");
/// The default of [`MAX_TOOL_VALUES`] for `tdsl run` and the library: 4 Mi values
/// (4,194,304), more than the answers of real APIs hold; one read builds at most about 600 MB
/// of them (about 140 bytes a value at worst, `docs/security.md`).
pub const DEFAULT_MAX_TOOL_VALUES: usize = 4 << 20;
/// The default of [`MAX_TOOL_VALUES`] for what `tdsl serve` runs: 1 Mi values (1,048,576),
/// at most about 150 MB a read, so that a few hostile peers answering at once leave the
/// server room for its other clients.
pub const SERVE_MAX_TOOL_VALUES: usize = 1 << 20;
/// The most values (numbers, strings, lists, objects; an object's member counts as its
/// value) one tool output may hold (`--max-tool-values`,
/// [`crate::HostRunner::with_max_values`]): an `exec:` program's standard output, an HTTP
/// body, an MCP tool's result. Counted while the output is read, which stops at the bound:
/// the call then fails (permanent).
pub const MAX_TOOL_VALUES: Range = range("max_tool_values", 1024.0, 1_073_741_824.0, true, "");
/// How many times its bound on one output ([`crate::HostRunner::with_max_values`]) the outputs one
/// runner reads may hold in all — one run's, under `tdsl run` and for each run `tdsl serve`
/// makes, which give each run a runner of its own. The run keeps every output it read
/// until it ends (a fan-out's children's in its result, all of them in its trace): 50
/// children each answering 1 MiB of `[0,0,…]` held 740 MB, and 1,000 children each at the
/// bound would hold 1,000 times it (hostile round 10b).
pub const RUN_VALUES_FACTOR: usize = 8;
/// The deepest nesting of lists and objects in one tool output (128 levels). **Fixed**:
/// serde_json's own bound, kept when the budget of values came.
pub const TOOL_OUTPUT_DEPTH: Range = range("tool output depth", 128.0, 128.0, true, "levels");

/// The default of [`MAX_CALLS_PER_RUN`] for `tdsl run` and the library
/// ([`crate::exec::Guards::max_calls_per_run`]): a million calls, each at most a few hundred
/// bytes of trace besides what its tool answered.
pub const DEFAULT_MAX_CALLS_PER_RUN: usize = 1_000_000;
/// The default of [`MAX_CALLS_PER_RUN`] for each run `tdsl serve` makes (a served composite,
/// a plan): one client's run must leave the server room for the others.
pub const SERVE_MAX_CALLS_PER_RUN: usize = 100_000;
/// The most calls one run may make (`--max-calls-per-run`,
/// [`crate::exec::Guards::max_calls_per_run`]): every call of a callee — each fan-out
/// child's, each composite callee's and each of its steps' — counted before it starts
/// (retries are attempts of the same call). It bounds the run's trace, kept in memory.
pub const MAX_CALLS_PER_RUN: Range = range("max_calls_per_run", 1.0, 100_000_000.0, true, "");
/// The default of [`MAX_RESULT_BYTES`] for `tdsl run` and the library: 1 GiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 30;
/// The default of [`MAX_RESULT_BYTES`] for each run `tdsl serve` makes: 64 MiB.
pub const SERVE_MAX_RESULT_BYTES: usize = 64 << 20;
/// The most bytes of a run's result as compact JSON (`--max-result-bytes`,
/// [`crate::exec::Guards::max_result_bytes`]): measured without writing it, stopping at
/// the bound, so that a result is never written out whole to learn that it is too large.
pub const MAX_RESULT_BYTES: Range = range("max_result_bytes", 1024.0, 4_294_967_296.0, true, "bytes");
/// The default of [`RUN_FUEL`] for `tdsl run` and the library: a billion units, twenty
/// expressions at their own limit ([`crate::Limits::fuel`]), tens of seconds of work.
pub const DEFAULT_RUN_FUEL: u64 = 1_000_000_000;
/// The default of [`RUN_FUEL`] for each run `tdsl serve` makes: 500 million units, ten
/// expressions at their own limit.
pub const SERVE_RUN_FUEL: u64 = 500_000_000;
/// The fuel of all the expressions of one run together (`--max-run-fuel`,
/// [`crate::exec::Guards::max_run_fuel`]): each also has its own ([`FUEL`]).
pub const RUN_FUEL: Range = range("max_run_fuel", 1.0, 9_007_199_254_740_991.0, true, "");
/// The default of [`RUN_MEMORY`] for `tdsl run` and the library: 2 GiB.
pub const DEFAULT_RUN_MEMORY: u64 = 2 << 30;
/// The default of [`RUN_MEMORY`] for each run `tdsl serve` makes: 512 MiB.
pub const SERVE_RUN_MEMORY: u64 = 512 << 20;
/// The bytes of values one run holds at once (`--max-run-memory`,
/// [`crate::exec::Guards::max_run_memory`]): what its expressions running at that moment
/// build, their results and the tool answers it keeps, as
/// [`crate::Limits::max_alloc_bytes`] counts values.
pub const RUN_MEMORY: Range = range("max_run_memory", 1024.0, 1_099_511_627_776.0, true, "bytes");
/// The default of [`MEMORY_IN_FLIGHT`] for `tdsl serve`: 2 GiB.
pub const SERVE_MEMORY_IN_FLIGHT: u64 = 2 << 30;
/// The bytes of values all the runs `tdsl serve` has in flight hold together
/// (`--max-memory-in-flight`): each run's share counted as [`RUN_MEMORY`] counts it.
pub const MEMORY_IN_FLIGHT: Range = range("max_memory_in_flight", 1024.0, 1_099_511_627_776.0, true, "bytes");
/// The bytes of large answers `tdsl serve` holds, all together, from their making to their
/// writing (`--max-answer-bytes-held`; at least `--max-result-bytes`): past it the oldest are
/// forgotten, and an answer alone larger is refused (`E0818`).
pub const ANSWER_BYTES_HELD: Range = range("max_answer_bytes_held", 1024.0, 1_099_511_627_776.0, true, "bytes");
/// The default of [`HISTORY_PAYLOAD_BYTES`]: 64 KiB.
pub const DEFAULT_HISTORY_PAYLOAD_BYTES: usize = 64 << 10;
/// The most bytes of one payload (arguments, an answer, a step's result, a run's result) the
/// run history keeps whole (`--history-payload-bytes`): a larger one is kept as its first
/// bytes, its size and its hash (`docs/history.md`).
pub const HISTORY_PAYLOAD_BYTES: Range = range("history_payload_bytes", 1024.0, 1_073_741_824.0, true, "bytes");
/// The default of [`HISTORY_RUN_BYTES`]: 64 MiB.
pub const DEFAULT_HISTORY_RUN_BYTES: u64 = 64 << 20;
/// The most bytes of payload text the run history keeps of one run (`--history-run-bytes`):
/// payloads kept whole and the prefixes of cut ones count, in the order they are stored;
/// past it, a payload larger than a cut is kept as its size and hash alone
/// (`docs/history.md`).
pub const HISTORY_RUN_BYTES: Range = range("history_run_bytes", 65_536.0, 17_179_869_184.0, true, "bytes");
/// The most values of an upstream schema's `enum` held against
/// ([`crate::export::resolve::MAX_ENUM_VALUES`]: 1,000). **Fixed**: a longer one is left
/// out, and the value reads as its type alone.
pub const SCHEMA_ENUM_VALUES: Range = range("schema enum values", 1_000.0, 1_000.0, true, "");
/// The most bytes of values (descriptions, `enum`s, defaults) one resolution of an upstream
/// schema copies ([`crate::export::resolve::MAX_COPIED_BYTES`]: 4 MiB). **Fixed**: past it
/// they are left out.
pub const SCHEMA_COPIED_BYTES: Range = range("schema copied bytes", 4_194_304.0, 4_194_304.0, true, "bytes");
/// The default of [`HISTORY_MAX_BYTES`]: 1 GiB.
pub const DEFAULT_HISTORY_MAX_BYTES: u64 = 1 << 30;
/// The most bytes of a history database's pages in use (`--history-max-bytes`): past it
/// when a run ends, the oldest ended runs are deleted (`docs/history.md`).
pub const HISTORY_MAX_BYTES: Range = range("history_max_bytes", 1_048_576.0, 1_099_511_627_776.0, true, "bytes");
/// The default of [`TEMPORAL_HISTORY_BYTES`]: 40 MiB, under Temporal's 50 MiB.
pub const DEFAULT_TEMPORAL_HISTORY_BYTES: usize = 40 << 20;
/// The most bytes of payloads one workflow's history may hold on Temporal before a call, a
/// batch or a child workflow would pass them (`tdsl run --engine temporal
/// --temporal-history-bytes`; `E0815`, `docs/distributed.md`): at most Temporal's own limit
/// of 50 MiB (`limit.historySize.error`), at which it terminates the workflow with no trace.
pub const TEMPORAL_HISTORY_BYTES: Range = range("temporal history bytes", 65_536.0, 52_428_800.0, true, "bytes");

/// [`crate::Limits::fuel`]: 2^53 - 1 at most, the largest count an `f64` (and so a range
/// check, a JSON number) holds with its successor; at a few nanoseconds a unit that is
/// months of work.
pub const FUEL: Range = range("fuel", 0.0, 9_007_199_254_740_991.0, true, "");
/// [`crate::Limits::max_depth`]: at most the parser's own cap (192), below which every
/// recursive walk of the front end fits the 2 MiB stack of a spawned thread.
pub const MAX_DEPTH: Range = range("max_depth", 1.0, 192.0, true, "");
/// [`crate::Limits::max_string_len`]: up to 4 GiB.
pub const MAX_STRING_LEN: Range = range("max_string_len", 0.0, 4_294_967_296.0, true, "bytes");
/// [`crate::Limits::max_list_len`]: up to 2^32 elements.
pub const MAX_LIST_LEN: Range = range("max_list_len", 0.0, 4_294_967_296.0, true, "");
/// [`crate::Limits::max_output_bytes`]: up to 1 TiB.
pub const MAX_OUTPUT_BYTES: Range = range("max_output_bytes", 0.0, 1_099_511_627_776.0, true, "bytes");
/// [`crate::Limits::max_alloc_bytes`]: up to 1 TiB.
pub const MAX_ALLOC_BYTES: Range = range("max_alloc_bytes", 0.0, 1_099_511_627_776.0, true, "bytes");
/// [`crate::Limits::max_cached_templates`]: up to 65,536 distinct templates a program.
pub const MAX_CACHED_TEMPLATES: Range = range("max_cached_templates", 0.0, 65_536.0, true, "");
/// [`crate::Limits::max_file_bytes`]: up to 4 GiB (the string limit applies too).
pub const MAX_FILE_BYTES: Range = range("max_file_bytes", 0.0, 4_294_967_296.0, true, "bytes");
/// [`crate::Limits::max_listing_entries`]: up to ten million entries a listing.
pub const MAX_LISTING_ENTRIES: Range = range("max_listing_entries", 0.0, 10_000_000.0, true, "");

/// The most bytes of a plan's text (SPEC §13; 256 KiB by default,
/// [`crate::plans::PlanLimits`]).
pub const PLAN_BYTES: Range = range("plan size", 1024.0, 16_777_216.0, true, "bytes");
/// The deepest nesting of a plan's JSON (64 by default): at most the parser's own cap.
pub const PLAN_NESTING: Range = range("plan nesting", 4.0, 192.0, true, "");
/// The most steps of a plan (64 by default).
pub const PLAN_STEPS: Range = range("plan steps", 1.0, 1024.0, true, "");
/// How long a check waits for an upstream server's first `tools/list` (`serve
/// --upstream-timeout`; 30 s by default, [`crate::mcp::upstream::DEFAULT_LIST_TIMEOUT`]).
pub const UPSTREAM_TIMEOUT_SECONDS: Range = range("upstream timeout", 0.1, 300.0, false, "seconds");

/// `maxTokens` of each MCP sampling request of `serve --compose` (4,096 by default,
/// `--sampling-max-tokens`; SPEC §17).
pub const SAMPLING_MAX_TOKENS: Range = range("sampling max tokens", 256.0, 1_000_000.0, true, "tokens");

/// The most skills a skills folder holds (`serve --max-skills`; 256 by default,
/// [`crate::plans::skills::DEFAULT_MAX_SKILLS`], SPEC §16).
pub const SKILLS: Range = range("skills", 1.0, 100_000.0, true, "");

/// The most units of work (characters looked at, distance-table cells) one "did you mean"
/// spends ([`crate::suggest::SUGGESTION_BUDGET`]: 8 Mi). **Fixed** (its only value; no flag):
/// it bounds the CPU of a hint, and past it a hint may be missing, never wrong — nothing a
/// user would tune; raising it would only let a hostile input cost more.
pub const SUGGESTION_BUDGET: Range = range("suggestion budget", 8_388_608.0, 8_388_608.0, true, "units");
/// The most units of work all the suggestions of one plan's check spend together
/// ([`crate::plans::MAX_SUGGESTION_WORK`]: 16 Mi, two suggestions' budget). **Fixed**, as
/// [`SUGGESTION_BUDGET`].
pub const PLAN_SUGGESTION_WORK: Range = range("plan suggestion work", 16_777_216.0, 16_777_216.0, true, "units");
/// How many times an upstream schema's `$ref` is followed inside itself
/// ([`crate::export::resolve::RECURSION_DEPTH`]: 2). **Fixed**, as are the three below: past
/// each, the part of the schema reads as any value (the check is looser, no call fails), and
/// the bounds keep what a hostile upstream's schema costs small; the SDKs' schemas are far
/// within them (`docs/plans.md`, "Upstream schemas, whole").
pub const SCHEMA_RECURSION_DEPTH: Range = range("schema recursion depth", 2.0, 2.0, true, "");
/// The most schema nodes one resolution of an upstream schema makes
/// ([`crate::export::resolve::MAX_NODES`]: 20,000). **Fixed**.
pub const SCHEMA_NODES: Range = range("schema nodes", 20_000.0, 20_000.0, true, "");
/// The most `$ref`s followed inside one another in an upstream schema
/// ([`crate::export::resolve::MAX_REF_NESTING`]: 32). **Fixed**.
pub const SCHEMA_REF_NESTING: Range = range("schema ref nesting", 32.0, 32.0, true, "");
/// The deepest nesting of an upstream schema followed
/// ([`crate::export::resolve::MAX_DEPTH`]: 32). **Fixed**.
pub const SCHEMA_DEPTH: Range = range("schema depth", 32.0, 32.0, true, "");

/// The deepest nesting of `list<…>` in a declared `type_name` (`list<list<string>>` is 2).
/// **Fixed**: a deeper name is refused (`E0004`) before anything walks the type it would
/// make, so a type name nested thousands deep in a 100 KB plan cannot run a thread out of
/// stack (it once crashed `serve --mcp`).
pub(crate) const MAX_TYPE_NAME_NESTING: usize = 32;

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
    MAX_NESTING,
    MAX_TOOL_OUTPUT,
    MAX_TOOL_VALUES,
    TOOL_OUTPUT_DEPTH,
    MAX_CALLS_PER_RUN,
    MAX_RESULT_BYTES,
    RUN_FUEL,
    RUN_MEMORY,
    MEMORY_IN_FLIGHT,
    ANSWER_BYTES_HELD,
    HISTORY_PAYLOAD_BYTES,
    HISTORY_RUN_BYTES,
    HISTORY_MAX_BYTES,
    TEMPORAL_HISTORY_BYTES,
    FUEL,
    MAX_DEPTH,
    MAX_STRING_LEN,
    MAX_LIST_LEN,
    MAX_OUTPUT_BYTES,
    MAX_ALLOC_BYTES,
    MAX_CACHED_TEMPLATES,
    MAX_FILE_BYTES,
    MAX_LISTING_ENTRIES,
    PLAN_BYTES,
    PLAN_NESTING,
    PLAN_STEPS,
    UPSTREAM_TIMEOUT_SECONDS,
    SAMPLING_MAX_TOKENS,
    SKILLS,
    SUGGESTION_BUDGET,
    PLAN_SUGGESTION_WORK,
    SCHEMA_RECURSION_DEPTH,
    SCHEMA_NODES,
    SCHEMA_REF_NESTING,
    SCHEMA_DEPTH,
    SCHEMA_ENUM_VALUES,
    SCHEMA_COPIED_BYTES,
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
    fn a_fixed_limit_is_a_range_of_its_one_value() {
        // The limits without a flag: their constants are read from their ranges.
        for (r, value) in [
            (SUGGESTION_BUDGET, crate::suggest::SUGGESTION_BUDGET as f64),
            (PLAN_SUGGESTION_WORK, crate::plans::MAX_SUGGESTION_WORK as f64),
            (SCHEMA_RECURSION_DEPTH, crate::export::resolve::RECURSION_DEPTH as f64),
            (SCHEMA_NODES, crate::export::resolve::MAX_NODES as f64),
            (SCHEMA_REF_NESTING, crate::export::resolve::MAX_REF_NESTING as f64),
            (SCHEMA_DEPTH, crate::export::resolve::MAX_DEPTH as f64),
            (TOOL_OUTPUT_DEPTH, crate::value::MAX_OUTPUT_DEPTH as f64),
        ] {
            assert!(r.min == r.max && r.contains(value) && ALL.contains(&r), "{}", r.name);
        }
        assert_eq!(
            PLAN_SUGGESTION_WORK.max,
            2.0 * SUGGESTION_BUDGET.max,
            "a plan's allowance is two suggestions' budget"
        );
        assert_eq!(SCHEMA_NODES.describe(), "an integer from 20000 to 20000");
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
