//! The memory a hostile expression makes the evaluator take before a limit stops it
//! (docs/security.md, "Hostile round, 2026-11-29"), measured as this process's peak
//! resident set: a test binary of one test, so that the peak is this test's own.
#![cfg(target_os = "linux")]

use tdsl::{Code, Engine, Limits, Value};

/// The peak resident set of this process since the last [`reset_peak`], in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of KiB")
}

/// Sets the peak resident set back to the current one (`clear_refs`, Linux 4.0).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("/proc/self/clear_refs");
}

/// `join` of ten thousand `null`s with a separator of 10 KiB (a 100 MB text) under
/// a string limit that allows it and a memory budget of 1 MiB: the memory error, having
/// written about as much as the budget, not the whole text first (which it did: the text
/// was written, then the memory limit was asked).
#[test]
fn join_past_the_memory_left_fails_before_writing_the_text() {
    let sep = format!("'{}'", "x".repeat(10 * 1024));
    let src = format!("length(join(map(range(10000), null), {sep}))");
    let limits = Limits { max_alloc_bytes: 1 << 20, max_string_len: 256 << 20, ..Limits::default() };
    let program = Engine::new().with_limits(limits).compile(&src).expect("compiles");
    reset_peak();
    let before = peak_kib();
    let e = program.eval(&Value::Null).expect_err("past the memory limit");
    let grew = peak_kib().saturating_sub(before);
    assert_eq!(e.code, Code::MemoryLimit, "{e:?}");
    assert!(grew < 20 * 1024, "the peak resident set grew by {grew} KiB for a 1 MiB budget");
}
