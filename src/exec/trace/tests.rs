//! The trace's wire format (field order and names, what reads back, depth), `failure_summary`, `rfc3339`.

use super::*;

fn chrono_rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[test]
fn rfc3339_is_the_patterns_rendering_to_the_byte() {
    let edges = [0, 1, 999, 1000, 86_399_999, 86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_399_999];
    for ms in edges.into_iter().chain([253_402_300_799_999, 1_767_225_600_000, 1_709_164_800_123]) {
        assert_eq!(rfc3339(ms), chrono_rfc3339(ms), "{ms}");
    }
    // Every day of 1970–2400 at a varying time, and a spread up to 9999.
    let mut ms = 0i64;
    while ms < 13_574_563_200_000 {
        assert_eq!(rfc3339(ms), chrono_rfc3339(ms), "{ms}");
        ms += 86_400_000 + 3_723_456;
    }
    let mut ms = 13_574_563_200_000i64;
    while ms < 253_402_300_800_000 {
        assert_eq!(rfc3339(ms), chrono_rfc3339(ms), "{ms}");
        ms += 9_876_543_210_987;
    }
    // Outside the fast range: chrono's own rendering.
    assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    assert_eq!(rfc3339(253_402_300_800_000), chrono_rfc3339(253_402_300_800_000));
}

#[test]
fn rfc3339_kept_from_the_last_call_is_the_same_text() {
    // The thread's cache: the same instant twice, another between, and back; `i64::MIN`
    // (no date: its digits) never meets a stale entry.
    for ms in [5, 5, 86_400_000, 5, i64::MIN, i64::MIN, 0, 0] {
        let want = chrono::DateTime::from_timestamp_millis(ms).map_or(ms.to_string(), |_| chrono_rfc3339(ms));
        assert_eq!(rfc3339(ms), want, "{ms}");
    }
}

fn attempt() -> Attempt {
    Attempt::new(1, Outcome::Ok, Ok(Value::Int(1))).at(2, 3)
}

fn full_step() -> StepTrace {
    let mut inner = StepTrace::new("inner", "/tools/t.tool");
    inner.duration_ms = 1;
    let child = ChildTrace {
        index: 0,
        status: StepStatus::Completed,
        arguments: Some(Value::object_from([("x", Value::Int(1))])),
        result: Some(Value::Int(2)),
        error: Some("boom".to_string()),
        reason: Some("why".to_string()),
        attempts: vec![attempt()],
        started_ms: Some(1),
        ended_ms: Some(5),
        duration_ms: 4,
        steps: Some(vec![inner.clone()]),
        callee_clock_reads: vec![7],
    };
    StepTrace {
        execution_id: "s".into(),
        tool_name: "t".into(),
        status: StepStatus::Failed,
        success: true,
        result: Some(Value::Null),
        error: Some("boom".to_string()),
        duration_ms: 4,
        retry_count: 2,
        circuit_state: Some(BreakerState::Closed),
        started_at: Some("a".into()),
        completed_at: Some("b".into()),
        tool: "/tools/t.tool".into(),
        reason: Some("r".to_string()),
        arguments: Some(Value::object_from([("x", Value::Int(1))])),
        attempts: vec![attempt()],
        started_ms: Some(1),
        ended_ms: Some(5),
        clock_reads: vec![9],
        children: Some(vec![child]),
        steps: Some(vec![inner]),
        callee_clock_reads: vec![7],
    }
}

fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default()
}

/// The derived serializers write format 2's field order and names, leaving out absent
/// fields (the JSON of every trace written before is unchanged).
#[test]
fn step_and_child_fields_keep_their_order() {
    let json = serde_json::to_value(full_step()).expect("serializes");
    assert_eq!(
        keys(&json),
        [
            "step_id",
            "tool_name",
            "status",
            "success",
            "output",
            "error",
            "duration_ms",
            "retry_count",
            "circuit_state",
            "started_at",
            "completed_at",
            "tool",
            "reason",
            "arguments",
            "attempts",
            "started_ms",
            "ended_ms",
            "clock_reads",
            "children",
            "steps",
            "callee_clock_reads"
        ]
    );
    assert_eq!(
        keys(&json["children"][0]),
        [
            "index",
            "status",
            "arguments",
            "result",
            "error",
            "reason",
            "attempts",
            "started_ms",
            "ended_ms",
            "duration_ms",
            "steps",
            "callee_clock_reads"
        ]
    );
    // Absent fields are left out, as before.
    assert_eq!(
        keys(&json["steps"][0]),
        ["step_id", "tool_name", "status", "success", "duration_ms", "retry_count", "tool"]
    );
    let child = serde_json::to_value(ChildTrace::new(3)).expect("serializes");
    assert_eq!(child.to_string(), r#"{"index":3,"status":"CANCELLED","duration_ms":0}"#);
}

fn minimal(arguments: &str) -> String {
    format!(
        r#"{{"format": "tdsl-trace/2", "run_id": "r", "tool": "t.tool", "arguments": {arguments},
          "overall_status": "SUCCESS", "started_at": "", "completed_at": "", "total_duration_ms": 0,
          "total_retries": 0, "circuit_breaker_trips": 0, "max_in_flight": 0, "step_results": []}}"#
    )
}

/// Issue 28 item 4: a trace reads at every depth up to [`MAX_TRACE_DEPTH`] (on the
/// reader's own stack), and deeper is refused before it is read.
#[test]
fn a_trace_reads_at_the_deepest_nesting_allowed() {
    let n = MAX_TRACE_DEPTH - 2;
    let deep = format!(r#"{{"x": {}0{}}}"#, "[".repeat(n), "]".repeat(n));
    let t = Trace::from_json(&minimal(&deep)).expect("reads");
    assert_eq!(t.arguments.depth(), n + 1);
    let text = minimal(&format!(r#"{{"x": {}0{}}}"#, "[".repeat(n + 1), "]".repeat(n + 1)));
    let e = Trace::from_json(&text).expect_err("too deep");
    assert!(e.contains("it nests 2049 levels deep, deeper than the 2048 a trace may"), "{e}");
    // Strings with brackets and escaped quotes do not count.
    assert_eq!(json_depth(r#"{"a": "[[[\"[[", "b": [1]}"#), 2);
    // Shallow traces read on the caller's thread, deep ones on the reader's: both say
    // where a trace is broken.
    let e = Trace::from_json(&minimal(&format!("{}0", "[".repeat(300)))).expect_err("unclosed");
    assert!(e.starts_with("not a trace: it is not valid JSON"), "{e}");
}

/// A value nested past what serde writes is an error, not a file that is no trace.
#[test]
fn a_trace_too_deep_to_write_says_so() {
    let mut v = Value::Int(0);
    for _ in 0..600 {
        v = Value::list(vec![v]);
    }
    let t = Trace::starting("t".into(), "r".into(), "/main.tool", v, 0);
    let e = t.try_to_json().expect_err("too deep");
    assert!(e.contains("a value nested deeper than 512 levels"), "{e}");
}

/// Issue 28 item 18: every trace that did not succeed has `failure_summary`, naming each
/// failed step (children and composite callees' steps too) with its error.
#[test]
fn failure_summary_names_every_failed_step() {
    let mut t = Trace::starting("t".into(), "r".into(), "/main.tool", Value::Null, 0);
    let failed = |id: &str, error: &str| {
        let mut s = StepTrace::new(id, "/tools/t.tool");
        s.status = StepStatus::Failed;
        s.error = Some(error.to_string());
        s
    };
    let mut fan = StepTrace::new("fan", "/tools/t.tool");
    fan.status = StepStatus::Completed;
    let mut child = ChildTrace::new(2);
    child.status = StepStatus::Timeout;
    fan.children = Some(vec![child]);
    let mut outer = StepTrace::new("outer", "/tools/c.tool");
    outer.status = StepStatus::Completed;
    outer.steps = Some(vec![failed("inner", "no")]);
    t.steps = vec![failed("a", "boom"), fan, outer];
    t.status = RunStatus::Partial;
    t.aggregate();
    assert_eq!(
        t.failure_summary.as_deref(),
        Some("continued past 3 failed steps: a: boom; fan[2]: TIMEOUT; outer/inner: no")
    );
    // A FAILED run: its error first, then the other failed steps (not the one it names).
    t.status = RunStatus::Failed;
    t.error = Some(RunError { code: "E0803".into(), step: Some("outer/inner".into()), message: "no".into() });
    t.aggregate();
    assert_eq!(
        t.failure_summary.as_deref(),
        Some("step `outer/inner` failed: no [E0803]; also failed: a: boom; fan[2]: TIMEOUT")
    );
    t.status = RunStatus::Success;
    t.error = None;
    t.aggregate();
    assert_eq!(t.failure_summary, None);
}

/// What is written reads back to the same trace (a `null` output stays present).
#[test]
fn step_and_child_read_back_to_what_was_written() {
    let step = full_step();
    let text = serde_json::to_string(&step).expect("serializes");
    let back: StepTrace = serde_json::from_str(&text).expect("reads");
    assert_eq!(back, step);
    assert_eq!(serde_json::to_string(&back).expect("serializes"), text);
    // The old names still read.
    let old: StepTrace = serde_json::from_str(
        r#"{"execution_id":"e","status":"COMPLETED","result":1,"duration_ms":0,"tool":"/t.tool"}"#,
    )
    .expect("reads");
    assert_eq!((old.execution_id.as_str(), old.result.clone()), ("e", Some(Value::Int(1))));
}
