//! The benchmark's fairness: for every task the direct way and the plan give the same final
//! answer, and the plan's run made exactly the direct client's tool calls with the same
//! responses. Needs `python3` (the tools are `exec:` Python programs).

use serde_json::json;
use tdsl_bench_plans::{tasks, Bench, PlanContext, Tokens};

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

/// The plan way's context is the real server's: check_plan and run_plan as
/// `serve --mcp --plans` lists them (run_plan's description is the condensed guide), after
/// the served tools; the compact context is the two plan tools and `tdsl://tools`, which
/// names every served tool as a plan names it.
#[test]
fn the_plan_tools_are_the_servers() {
    let bench = Bench::new().expect("the bench's tools load (is python3 on PATH?)");
    let full = bench.tools_list_with_plans();
    let names: Vec<&str> = full["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names.len(), 13, "{names:?}");
    assert_eq!(&names[11..], &["check_plan", "run_plan"]);
    assert_eq!(bench.guide(), tdsl::testing::mcp::plans::RUN_PLAN_DESCRIPTION);
    let listing = bench.tools_listing().expect("tdsl://tools reads");
    for t in bench.server.tools() {
        assert!(listing.contains(&format!("`{}(", t.name)), "{} in {listing}", t.name);
    }
    let compact = bench.plan_header(PlanContext::Compact);
    assert_eq!(compact.len(), 2);
    assert!(compact[0].contains("\"run_plan\"") && !compact[0].contains("list_documents"), "{}", compact[0]);
    assert_eq!(compact[1], listing);
}

/// A first attempt with a misspelt tool is refused by the real run_plan, whose answer
/// names the tool the model meant.
#[test]
fn a_misspelt_tool_gets_the_servers_refusal() {
    let bench = Bench::new().expect("the bench's tools load (is python3 on PATH?)");
    let task = tasks().into_iter().find(|t| t.id == "units").expect("task units");
    let m = bench.measure(&task).expect("units runs");
    let (broken, text) = &m.plan.repair;
    assert_ne!(broken, &m.plan.plan);
    assert!(text.starts_with("the plan was not run"), "{text}");
    assert!(text.contains("E1306") && text.contains("/instructions/0/tool_definition_path"), "{text}");
    assert!(text.contains("list_orders"), "did you mean: {text}");
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

/// The upstream tasks (issue 39): a pydantic MCP server (`upstream/shop.py`, the Python
/// SDK) reached directly through the SDK's client and behind `serve --mcp --plans
/// --plans-only --upstream`: the same answer both ways, the same calls as the shop recorded
/// them, and a misspelt tool refused by the real run_plan with no call made.
#[test]
fn every_upstream_task_gives_the_same_answer_both_ways() {
    let up = tdsl_bench_plans::Upstream::start().expect("the shop starts (scripts/python-env makes the venv)");
    let tokens = Tokens::o200k().expect("o200k_base");
    let headers = up.headers().expect("tdsl://tools reads");
    assert!(headers.direct[0].contains("$defs"), "the shop's schemas as the SDK makes them: {}", headers.direct[0]);
    assert!(headers.compact[0].contains("\"run_plan\"") && headers.compact[0].contains("\"check_plan\""));
    assert!(headers.compact[1].contains("`shop/list_orders("), "{}", headers.compact[1]);
    let all = tdsl_bench_plans::upstream_tasks();
    assert!(all.len() >= 5);
    let mut failures = Vec::new();
    let mut last = None;
    for task in &all {
        let m = match up.measure(task) {
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
        assert!(!m.plan.result.is_null(), "{}", task.id);
        assert!(m.direct.seen.as_ref().is_some_and(|s| s.len() >= 5), "{}: {:?}", task.id, m.direct.seen);
        assert!(m.plan.repair.1.starts_with("the plan was not run"), "{}: {}", task.id, m.plan.repair.1);
        let c = m.counts_with(&headers, &tokens);
        assert_eq!(c.direct.requests, c.direct.calls + 1, "{}", task.id);
        assert_eq!(c.plan_compact.requests, 2, "{}", task.id);
        last = Some(m);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The check holds the plan to the calls the shop recorded for the direct client.
    let mut m = last.expect("a measured task");
    m.plan.calls.pop();
    let e = m.check().expect_err("a missing call is caught");
    assert!(e.contains("not the direct client's"), "{e}");
}
