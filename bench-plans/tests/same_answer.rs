//! The benchmark's fairness: for every task the direct way and the plan give the same final
//! answer, and the plan's run made exactly the direct client's tool calls with the same
//! responses. Needs `python3` (the tools are `exec:` Python programs).

use serde_json::json;
use tdsl_bench_plans::{tasks, Bench, Tokens, PLACEHOLDER_GUIDE};

#[test]
fn every_task_gives_the_same_answer_both_ways() {
    let bench = Bench::new().expect("the bench's tools load (is python3 on PATH?)");
    let tokens = Tokens::o200k().expect("o200k_base");
    let mut failures = Vec::new();
    let all = tasks();
    assert!(all.len() >= 8, "the suite has at least 8 tasks");
    for task in &all {
        let m = match bench.measure(task) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{}: {e}", task.id));
                continue;
            }
        };
        if let Err(e) = m.check() {
            failures.push(e);
            continue;
        }
        assert!(m.plan.warnings.is_empty(), "{}: the plan checks without warnings: {:?}", task.id, m.plan.warnings);
        assert_eq!(m.plan.answer["status"], json!("SUCCESS"), "{}", task.id);
        assert!(!m.plan.result.is_null(), "{}: the plan has a result", task.id);
        let c = m.counts(&bench, &tokens);
        let batches = m.direct.batches.len();
        assert_eq!(c.direct.requests, c.direct.calls + 1, "{}: one round trip a call, then the answer", task.id);
        assert_eq!(c.direct_parallel.requests, batches + 1, "{}", task.id);
        assert_eq!(c.plan.requests, 2, "{}: run_plan, then the answer", task.id);
        assert!(c.plan.sent_total > 0 && c.direct.sent_total >= c.direct_parallel.sent_total, "{}: {c:?}", task.id);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The check compares answers: a plan whose result differs from the direct answer fails it.
#[test]
fn a_different_answer_fails_the_check() {
    let bench = Bench::new().expect("the bench's tools load (is python3 on PATH?)");
    let task = tasks().into_iter().find(|t| t.id == "units").expect("task units");
    let mut m = bench.measure(&task).expect("units runs");
    m.check().expect("units gives the same answer both ways");
    m.plan.result["units"][0]["units"] = json!(-1);
    let e = m.check().expect_err("a tampered answer is caught");
    assert!(e.contains("the answers differ"), "{e}");
    let mut m = bench.measure(&task).expect("units runs");
    m.plan.calls.clear();
    let e = m.check().expect_err("missing calls are caught");
    assert!(e.contains("not the direct client's"), "{e}");
}

#[test]
fn the_placeholder_guide_is_2500_characters() {
    assert_eq!(PLACEHOLDER_GUIDE.chars().count(), 2500);
}

/// Numbers compare as numbers; key order does not matter; anything else does.
#[test]
fn same_and_canonical() {
    use tdsl_bench_plans::{canonical, same};
    assert!(same(&json!({"a": 10, "b": [1.5]}), &json!({"b": [1.5], "a": 10.0})));
    assert!(!same(&json!({"a": 10}), &json!({"a": 11})));
    assert!(!same(&json!({"a": 10}), &json!({"a": 10, "b": null})));
    assert!(!same(&json!(["x"]), &json!(["x", "y"])));
    assert_eq!(canonical(&json!({"b": 1, "a": 2.0})), canonical(&json!({"a": 2, "b": 1.0})));
}
