//! The execution engine, rule by rule, with an in-process runner and a virtual clock
//! (nothing here sleeps for real but the runners that simulate slow tools, and no test
//! asserts on elapsed time).
//!
//! Most rules are engine cases as data, in tests/data/exec/ (its README says the layout):
//! the tools, the called tools' scripted answers, the arguments and the expected trace. The
//! first test runs every case on the local engine and by replay of its trace;
//! tests/temporal.rs runs them on Temporal. What stays here is what a case cannot say:
//! timing and concurrency, cancellation, the virtual clock, the breaker across runs, answers
//! that depend on the arguments, API shapes, property tests.

// exec_support's Temporal harness (feature `temporal`) uses common's free ports.
#[cfg(feature = "temporal")]
mod common;
mod exec_support;

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use exec_support::cases;
use exec_support::*;
use tdsl::testing::exec::breaker::{self, BreakerPolicy};
use tdsl::testing::exec::retry::RetryPolicy;
use tdsl::testing::exec::{replay, GuardError, Guards, Options, Outcome, RunStatus, StepStatus, ToolError, Workflow};
use tdsl::Value;

// ---------------------------------------------------------------------------------------
// The cases

#[test]
fn every_engine_case_runs_locally_and_by_replay_as_expected() {
    let specs = cases::all();
    assert!(specs.len() >= 40, "only {} case runs in {}", specs.len(), cases::data().display());
    let failures: Vec<String> = specs.iter().filter_map(|s| cases::check_local(s).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} case runs failed:\n\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n\n")
    );
}

/// A case's expectation can fail: a wrong one is refused with a diff naming the case, the
/// file and the line that differs, and saying how to bless.
#[test]
fn a_wrong_expectation_fails_with_a_readable_diff() {
    let good = cases::spec("fail-fast");
    let dir = root("wrong-expectation", &[]);
    for entry in ["main.tool", "tools/t.tool", "run.run.json", "run.expected.json"] {
        std::fs::create_dir_all(dir.join(entry).parent().unwrap()).unwrap();
        std::fs::copy(good.dir.join(entry), dir.join(entry)).unwrap();
    }
    let expected = std::fs::read_to_string(dir.join("run.expected.json")).unwrap();
    assert!(expected.contains("exploded"), "{expected}");
    std::fs::write(dir.join("run.expected.json"), expected.replace("exploded", "imploded")).unwrap();
    let wrong = cases::Spec::read(&dir, "run");
    if cases::blessing() {
        return; // (Blessing would write the expectation this test spoils.)
    }
    let e = cases::check_local(&wrong).unwrap_err();
    assert!(e.contains("on local differs from") && e.contains("run.expected.json"), "{e}");
    assert!(e.contains("TDSL_BLESS=1"), "{e}");
    assert!(e.lines().any(|l| l.starts_with('-') && l.contains("imploded")), "{e}");
    assert!(e.lines().any(|l| l.starts_with('+') && l.contains("exploded")), "{e}");
    assert!(e.lines().all(|l| !l.starts_with(['-', '+']) || l.contains("ploded")), "only the changed lines: {e}");
    // And the right one passes.
    assert_eq!(cases::check_local(&good), Ok(()));
}

// ---------------------------------------------------------------------------------------
// Scheduling

#[test]
fn a_step_starts_when_its_own_dependencies_end_not_its_level() {
    // `slow` and `fast` are level 0; `after_fast` (level 1) needs only `fast`. `slow` waits
    // until `after_fast` has been called: level-by-level scheduling would never get there.
    let dir = root(
        "start-order",
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"instructions": [
                  {"execution_id": "slow", "tool_definition_path": "/tools/t.tool", "arguments": {"who": "slow"}},
                  {"execution_id": "fast", "tool_definition_path": "/tools/t.tool", "arguments": {"who": "fast"}},
                  {"execution_id": "after_fast", "tool_definition_path": "/tools/t.tool",
                   "arguments": {"who": "after_fast", "x": "REF:fast.who"}}
                ]}"#,
            ),
        ],
    );
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let tx = std::sync::Mutex::new(tx);
    let script = Script::new().on("/tools/t.tool", move |call, _| {
        let who = call.arguments.get_direct("who").and_then(Value::as_str).unwrap_or_default().to_string();
        match who.as_str() {
            "slow" => match rx.lock().unwrap().recv_timeout(Duration::from_secs(30)) {
                Ok(()) => Ok(call.arguments.clone()),
                Err(_) => Err(ToolError::permanent("`after_fast` never started while `slow` was running")),
            },
            "after_fast" => {
                let _ = tx.lock().unwrap().send(());
                Ok(call.arguments.clone())
            }
            _ => Ok(call.arguments.clone()),
        }
    });
    let r = run_with(&dir, "{}", &script, Options { max_concurrency: 2, ..Options::default() });
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    let order = script.calls.lock().unwrap().iter().map(|c| c.arguments.to_string()).collect::<Vec<_>>();
    let pos = |w: &str| order.iter().position(|c| c.contains(&format!("\"who\":\"{w}\""))).unwrap();
    assert!(pos("after_fast") > pos("fast"));
}

fn wide_and_fan_out(name: &str) -> std::path::PathBuf {
    let mut steps: Vec<String> = (0..12)
        .map(|i| {
            format!(
                r#"{{"execution_id": "w{i:02}", "tool_definition_path": "/tools/t.tool", "arguments": {{"i": {i}}}}}"#
            )
        })
        .collect();
    steps.push(
        r#"{"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
            "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"},
            "dependencies": ["w03"]}"#
            .to_string(),
    );
    steps.push(
        r#"{"execution_id": "last", "tool_definition_path": "/tools/t.tool",
            "arguments": {"n": "REF:fan.response.length", "first": "REF:fan.response.first.item"}}"#
            .to_string(),
    );
    let main = format!(
        r#"{{"arguments": [{{"name": "items", "type_name": "list", "required": true}}], "instructions": [{}]}}"#,
        steps.join(",\n")
    );
    root(name, &[("/tools/t.tool", ANY_TOOL), ("main.tool", &main)])
}

#[test]
fn the_concurrency_limit_is_never_exceeded() {
    let dir = wide_and_fan_out("limit");
    let args = format!(r#"{{"items": [{}]}}"#, (0..20).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
    for limit in [1, 3] {
        // Each call lasts a little real time, so that calls overlap when they can.
        let script = Script::new().on("/tools/t.tool", |call, _| {
            std::thread::sleep(Duration::from_millis(2));
            Ok(call.arguments.clone())
        });
        let r = run_with(&dir, &args, &script, Options { max_concurrency: limit, ..Options::default() });
        assert_eq!(r.status, RunStatus::Success);
        assert_eq!(script.calls.lock().unwrap().len(), 12 + 20 + 1);
        let peak = script.peak.load(Ordering::SeqCst);
        assert!(peak <= limit, "{peak} calls at once under a limit of {limit}");
        assert!(r.trace.max_in_flight <= limit);
        assert_eq!(show(&step(&r, "last").arguments), r#"{"n":20,"first":0}"#);
    }
}

/// The trace without what only says when and how wide the run went.
fn normalized(mut t: tdsl::testing::exec::Trace) -> String {
    t.run_id = String::new();
    t.max_in_flight = 0;
    t.to_json()
}

#[test]
fn results_and_trace_are_the_same_whatever_the_timing() {
    let dir = wide_and_fan_out("timing");
    let args = r#"{"items": [5, 4, 3, 2, 1, 0]}"#;
    let mut seen = Vec::new();
    for (limit, jitter) in [(1, 0u64), (4, 3), (8, 7)] {
        // Calls end in an order that depends on the run: by their arguments and the jitter.
        let script = Script::new().on("/tools/t.tool", move |call, n| {
            let spin = (call.arguments.to_string().len() as u64 * 7 + n as u64 * jitter) % 5;
            std::thread::sleep(Duration::from_millis(spin));
            Ok(call.arguments.clone())
        });
        let r = run_with(&dir, args, &script, Options { max_concurrency: limit, ..Options::default() });
        assert_eq!(r.status, RunStatus::Success);
        seen.push((show(&r.result), normalized(r.trace)));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], seen[2]);
}

// ---------------------------------------------------------------------------------------
// Data flow

#[test]
fn fan_out_results_keep_input_order_whatever_order_children_end_in() {
    let dir = root(
        "fan-out",
        &[
            ("/tools/t.tool", &primitive(&["n:integer", "label:string"], &["square:integer"])),
            ("/tools/any.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"arguments": [{"name": "ns", "type_name": "list<integer>", "required": true}],
                   "instructions": [
                  {"execution_id": "fan", "tool_definition_path": "/tools/t.tool", "arguments": {"label": "x"},
                   "parallel_execution": {"iterate_over": "REF:arguments.ns", "child_argument_name": "n"},
                   "transform_responses": {"transforms": {"total": "sum(array=REF:response, item_path=\"square\")"}}},
                  {"execution_id": "after", "tool_definition_path": "/tools/any.tool",
                   "arguments": {"n": "REF:fan.response.length", "last": "REF:fan.response.last.square"}}
                ]}"#,
            ),
        ],
    );
    let script = Script::new().on("/tools/t.tool", |call, _| {
        let n = call.arguments.get_direct("n").and_then(Value::as_f64).unwrap_or(0.0) as i64;
        // Later elements end first.
        std::thread::sleep(Duration::from_millis((10 - n.min(10)) as u64));
        Ok(json(&format!(r#"{{"square": {}}}"#, n * n)))
    });
    let r =
        run_with(&dir, r#"{"ns": [1, 2, 3, 4, 5, 6]}"#, &script, Options { max_concurrency: 4, ..Options::default() });
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    let fan = step(&r, "fan");
    assert_eq!(
        show(&fan.result),
        r#"{"response":[{"square":1},{"square":4},{"square":9},{"square":16},{"square":25},{"square":36}],"total":91}"#
    );
    let children = fan.children.as_ref().unwrap();
    assert_eq!(children.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(show(&children[2].arguments), r#"{"label":"x","n":3}"#);
    assert_eq!(show(&step(&r, "after").arguments), r#"{"n":6,"last":36}"#);
}

/// A transform step (SPEC §6.4 ext) joins two fan-outs: its outcome (no call, no attempt,
/// its record, the replay) is the case `transform-join`. Not data: the plan's levels, the two
/// fan-outs overlapping, and a changed transform diverging on replay.
#[test]
fn a_transform_step_joins_two_fan_outs_that_run_at_the_same_time() {
    let dir = cases::spec("transform-join").dir;
    // Both fan-outs are level 0 and the join level 1: nothing hangs one fan-out on the other.
    let wf = load(&dir);
    assert_eq!(wf.plan().levels(), [vec!["a", "b"], vec!["join"], vec!["after"]]);
    // Every child of `a` waits until a child of `b` has started: the run ends only if the
    // two fan-outs overlap.
    let b_started = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = b_started.clone();
    let script = Script::new()
        .on("/tools/a.tool", move |call, _| {
            if call.arguments.get_direct("x").is_some() {
                let until = std::time::Instant::now() + Duration::from_secs(30);
                while !seen.load(Ordering::SeqCst) {
                    if std::time::Instant::now() > until {
                        return Err(ToolError::permanent("`b` never started while `a` ran"));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Ok(call.arguments.clone())
        })
        .on("/tools/b.tool", move |call, _| {
            b_started.store(true, Ordering::SeqCst);
            Ok(call.arguments.clone())
        });
    let r = run_with(&dir, r#"{"items": [1, 2]}"#, &script, Options { max_concurrency: 4, ..Options::default() });
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    assert_eq!(show(&r.result), r#"{"pairs":[{"a":1,"b":10},{"a":2,"b":20}],"total":6}"#);
    // A changed transform is a divergence at the transform step (and where its result goes).
    let trace = tdsl::testing::exec::Trace::from_json(&r.trace.to_json()).unwrap();
    let main = std::fs::read_to_string(dir.join("main.tool")).unwrap();
    let changed = root(
        "transform-join-changed",
        &[
            ("/tools/a.tool", ANY_TOOL),
            ("/tools/b.tool", ANY_TOOL),
            ("main.tool", &main.replace("10 * item.x", "100 * item.x")),
        ],
    );
    let replayed = replay(&load(&changed), &trace, Options::default()).unwrap();
    let at: Vec<&str> = replayed.divergences.iter().map(|d| d.at.as_str()).collect();
    assert_eq!(at, ["run", "join"], "{:?}", replayed.divergences);
    assert!(replayed.divergences[1].what.starts_with("result differs"), "{:?}", replayed.divergences);
}

const INNER: &str = r#"{
  "arguments": [{"name": "x", "type_name": "number", "required": true}],
  "instructions": [{"execution_id": "double", "tool_definition_path": "/tools/double.tool",
                    "arguments": {"x": "REF:arguments.x"}}],
  "responses": [{"name": "value", "type_name": "number", "required": true}],
  "response_reference_map": {"value": "REF:double.value"}
}"#;

#[test]
fn nesting_depth_is_bounded_and_recursion_is_refused_before_running() {
    let dir = root(
        "depth",
        &[
            ("/tools/double.tool", &primitive(&["x:number"], &["value:number"])),
            ("/tools/inner.tool", INNER),
            (
                "/tools/middle.tool",
                r#"{"instructions": [{"execution_id": "deeper", "tool_definition_path": "/tools/inner.tool",
                    "arguments": {"x": 1}}]}"#,
            ),
            (
                "main.tool",
                r#"{"instructions": [{"execution_id": "top", "tool_definition_path": "/tools/middle.tool"}]}"#,
            ),
            (
                "/tools/self.tool",
                r#"{"instructions": [{"execution_id": "again", "tool_definition_path": "/tools/self.tool"}]}"#,
            ),
        ],
    );
    let r = run_with(&dir, "{}", &Script::new(), Options { max_depth: 1, ..Options::default() });
    let e = r.error.clone().unwrap();
    assert_eq!((e.code.as_str(), e.step.as_deref()), ("E0810", Some("top/deeper")));
    let doubling = Script::new().on("/tools/double.tool", |_, _| Ok(json(r#"{"value": 2}"#)));
    let r = run(&dir, "{}", &doubling);
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);

    match Workflow::load(&dir, &dir.join("tools/self.tool")) {
        Err(tdsl::testing::exec::LoadError::Invalid { diagnostics, .. }) => {
            assert!(diagnostics.iter().any(|d| d.code.as_str() == "E0603"), "{diagnostics:?}")
        }
        other => panic!("recursion must be refused: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Resilience

fn flaky(failures: usize) -> Script {
    Script::new().on("/tools/t.tool", move |call, n| {
        if call.arguments.get_direct("x").is_none() && n < failures {
            Err(ToolError::transient(format!("busy ({n})")))
        } else {
            Ok(json(r#"{"ok": true}"#))
        }
    })
}

/// The attempts and back-offs of a retried step are the case `retry-backoff`; the back-off
/// is slept on the engine's clock (here a virtual one), not in real time.
#[test]
fn the_backoff_sleeps_on_the_engines_clock() {
    let (r, time) = cases::run_local(&cases::spec("retry-backoff"));
    assert_eq!(r.unwrap().status, RunStatus::Success);
    assert_eq!(tdsl::testing::exec::Time::monotonic_ms(&*time), 3000, "the backoff slept on the virtual clock");
}

#[test]
fn jitter_spreads_delays_reproducibly() {
    let dir = one_step("jitter", r#", "retry": {"max_retries": 1, "base_delay_seconds": 10, "jitter": 0.5}"#);
    let delays: Vec<u64> = (0..2).map(|_| step(&run(&dir, "{}", &flaky(1)), "s").attempts[1].delay_ms).collect();
    assert_eq!(delays[0], delays[1], "same seed, same delay");
    assert!((5000..=15000).contains(&delays[0]) && delays[0] != 10000, "{}", delays[0]);
}

#[test]
fn engine_wide_retry_defaults_apply_to_steps_without_retry() {
    let dir = one_step("defaults", "");
    let options =
        Options { retry: RetryPolicy { max_retries: 2, jitter: 0.0, ..RetryPolicy::default() }, ..Options::default() };
    let r = run_with(&dir, "{}", &flaky(2), options);
    assert_eq!(r.status, RunStatus::Success);
    assert_eq!(step(&r, "s").attempts.len(), 3);
}

#[test]
fn an_attempt_past_its_timeout_is_cancelled_and_the_step_times_out() {
    // No retries: a timeout is transient, and by default retried twice (seed 000).
    let dir = one_step("timeout", r#", "timeout_seconds": 5, "retry": {"max_retries": 0}"#);
    let time = clock();
    let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = cancelled.clone();
    let hanging = hang(time.clone());
    let script = Script::new().on("/tools/t.tool", move |call, n| {
        if n > 0 {
            return Ok(Value::Null);
        }
        let r = hanging(call, n);
        seen.store(call.cancel.is_cancelled(), Ordering::SeqCst);
        r
    });
    let r = executor(&script, &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    let s = step(&r, "s");
    assert_eq!(s.status, StepStatus::Timeout);
    assert_eq!(s.attempts[0].outcome, Outcome::Timeout);
    let e = r.error.clone().unwrap();
    assert_eq!((e.code.as_str(), e.message.as_str()), ("E0804", "the call timed out after 5 s"));
    assert!(cancelled.load(Ordering::SeqCst), "the runner was told to cancel");
    assert_eq!(step(&r, "after").status, StepStatus::Cancelled);
}

#[test]
fn a_timed_out_attempt_is_retried_like_a_transient_error() {
    let dir = one_step("timeout-retry", r#", "timeout_seconds": 5, "retry": {"max_retries": 1}"#);
    let time = clock();
    let hanging = hang(time.clone());
    let script = Script::new()
        .on("/tools/t.tool", move |call, n| if n == 0 { hanging(call, n) } else { Ok(json(r#"{"ok": 1}"#)) });
    let r = executor(&script, &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    let outcomes: Vec<Outcome> = step(&r, "s").attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::Timeout, Outcome::Ok]);
}

#[test]
fn the_run_deadline_stops_the_run_with_timeout() {
    let dir = one_step("deadline", r#", "retry": {"max_retries": 5}"#);
    let time = clock();
    let script = Script::new().on("/tools/t.tool", hang(time.clone()));
    let options = Options { deadline: Some(Duration::from_secs(30)), ..Options::default() };
    let r = executor(&script, &time, options).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    let s = step(&r, "s");
    assert_eq!((s.status, s.attempts.len(), s.attempts[0].outcome), (StepStatus::Timeout, 1, Outcome::Deadline));
    assert_eq!(r.error.clone().unwrap().code, "E0805");
    assert_eq!(step(&r, "after").status, StepStatus::Cancelled);
}

#[test]
fn the_circuit_breaker_opens_refuses_and_recovers() {
    let dir = root(
        "breaker",
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"instructions": [
                  {"execution_id": "s", "tool_definition_path": "/tools/t.tool",
                   "retry": {"max_retries": 4, "base_delay_seconds": 1, "jitter": 0, "factor": 1}}
                ]}"#,
            ),
        ],
    );
    let time = clock();
    let script = Script::new().on("/tools/t.tool", |_, _| Err(ToolError::transient("down")));
    let options = Options {
        breaker: BreakerPolicy { failure_threshold: 3, reset_timeout_seconds: 60.0, half_open_calls: 1 },
        ..Options::default()
    };
    let ex = executor(&script, &time, options);
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    let outcomes: Vec<Outcome> = step(&r, "s").attempts.iter().map(|a| a.outcome).collect();
    // The third failure opens the breaker; the fourth attempt is refused at once and ends
    // the step (no back-off wait, no fifth attempt).
    assert_eq!(outcomes, [Outcome::Transient, Outcome::Transient, Outcome::Transient, Outcome::Refused]);
    assert_eq!(step(&r, "s").attempts[3].delay_ms, 0);
    assert_eq!(tdsl::testing::exec::Time::monotonic_ms(&*time), 2000, "only the two back-offs before real attempts");
    assert_eq!(script.calls.lock().unwrap().len(), 3, "refused calls never reach the runner");
    assert_eq!(r.trace.circuit_breaker_trips, 1);
    let e = r.error.clone().unwrap();
    assert_eq!(e.code, "E0806");
    assert_eq!(ex.breakers().state("/tools/t.tool"), breaker::BreakerState::Open);

    // After the reset timeout one trial call goes through; its failure opens the breaker
    // again at once.
    time.advance(Duration::from_secs(61));
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    let outcomes: Vec<Outcome> = step(&r, "s").attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::Transient, Outcome::Refused]);
    assert_eq!(r.trace.circuit_breaker_trips, 1);
}

#[test]
fn a_half_open_breaker_closes_on_a_successful_trial() {
    let dir = one_step("breaker-recovers", r#", "retry": {"max_retries": 3, "base_delay_seconds": 1, "jitter": 0}"#);
    let time = clock();
    let script = flaky(3);
    let ex = executor(&script, &time, Options::default());
    assert_eq!(ex.run(&load(&dir), json("{}")).unwrap().status, RunStatus::Failed);
    assert_eq!(ex.breakers().state("/tools/t.tool"), breaker::BreakerState::Open);
    time.advance(Duration::from_secs(60));
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    assert_eq!(ex.breakers().state("/tools/t.tool"), breaker::BreakerState::Closed);
}

/// One child at a time, a failing child fails the fan-out: the case `child-fail`. Here, with
/// children side by side (answers that depend on the arguments): still at the lowest index.
#[test]
fn a_failing_child_fails_the_fan_out_at_the_lowest_index() {
    let dir = cases::spec("child-fail").dir;
    let script = Script::new().on("/tools/t.tool", |call, _| {
        let i = call.arguments.get_direct("i").and_then(Value::as_f64).unwrap_or(0.0);
        if i == 2.0 {
            Err(ToolError::permanent(format!("child says no ({i})")))
        } else {
            Ok(call.arguments.clone())
        }
    });
    let r = run_with(&dir, "{}", &script, Options { max_concurrency: 4, ..Options::default() });
    let e = r.error.clone().unwrap();
    assert_eq!((e.step.as_deref(), e.message.as_str()), (Some("fan[2]"), "child 2: child says no (2)"));
    assert_eq!(step(&r, "fan").children.as_ref().unwrap()[2].status, StepStatus::Failed);
}

// ---------------------------------------------------------------------------------------
// The trace and replay

const REPLAYED: &str = r#"{
  "arguments": [{"name": "items", "type_name": "list", "required": true}],
  "instructions": [
    {"execution_id": "stamp", "tool_definition_path": "/tools/t.tool",
     "transform_arguments": {"variables": {"now": "datetime_now()"}, "transforms": {"at": "now"}},
     "retry": {"max_retries": 2, "base_delay_seconds": 1}},
    {"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
     "arguments": {"at": "REF:stamp.at"},
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"}},
    {"execution_id": "sum", "tool_definition_path": "/tools/t.tool",
     "transform_arguments": {"variables": {"xs": "REF:fan.response"},
                             "transforms": {"total": "sum(array=xs, item_path=\"value\")", "when": "datetime_now(format=\"unix\")"}}}
  ],
  "response_reference_map": {"total": "REF:sum.total", "at": "REF:stamp.at", "when": "REF:sum.when"}
}"#;

fn replay_script() -> Script {
    Script::new().on("/tools/t.tool", |call, n| {
        if call.arguments.get_direct("at").is_some() && call.arguments.get_direct("item").is_none() && n == 0 {
            return Err(ToolError::transient("warming up"));
        }
        let item = call.arguments.get_direct("item").and_then(Value::as_f64).unwrap_or(0.0);
        let mut v = call.arguments.as_object().cloned().unwrap_or_default();
        v.insert("value".into(), Value::Float(item * 10.0));
        Ok(Value::object(v))
    })
}

#[test]
fn the_trace_records_clock_reads_attempts_and_children_as_stable_json() {
    let dir = root("trace", &[("/tools/t.tool", ANY_TOOL), ("main.tool", REPLAYED)]);
    let r = run(&dir, r#"{"items": [1, 2]}"#, &replay_script());
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    let stamp = step(&r, "stamp");
    assert_eq!(stamp.clock_reads.len(), 1);
    assert_eq!(stamp.attempts.len(), 2);
    let when = step(&r, "sum").clock_reads[0];
    assert_eq!(
        show(&r.result),
        format!(
            r#"{{"total":30.0,"at":"2026-01-01T00:00:{}Z","when":{}}}"#,
            chrono_secs(stamp.clock_reads[0]),
            when / 1000
        )
    );
    // The JSON form reads back to the same trace.
    let text = r.trace.to_json();
    assert_eq!(tdsl::testing::exec::Trace::from_json(&text).unwrap(), r.trace);
    for key in [
        "\"run_id\"",
        "\"total_retries\": 1",
        "\"circuit_breaker_trips\": 0",
        "\"overall_status\": \"SUCCESS\"",
        "\"children\"",
        "\"clock_reads\"",
    ] {
        assert!(text.contains(key), "{key} missing from {text}");
    }
}

fn chrono_secs(ms: i64) -> String {
    format!("{:02}.{:03}", (ms / 1000) % 60, ms % 1000)
}

#[test]
fn replay_gives_the_same_result_with_no_tool_calls() {
    let dir = root("replay", &[("/tools/t.tool", ANY_TOOL), ("main.tool", REPLAYED)]);
    let recorded = run(&dir, r#"{"items": [1, 2, 3]}"#, &replay_script());
    assert_eq!(recorded.status, RunStatus::Success, "{:?}", recorded.error);
    // Read back from JSON, as `tdsl replay` does.
    let trace = tdsl::testing::exec::Trace::from_json(&recorded.trace.to_json()).unwrap();
    let replayed = replay(&load(&dir), &trace, Options::default()).unwrap();
    assert!(replayed.divergences.is_empty(), "{:?}", replayed.divergences);
    assert_eq!(replayed.run.result, recorded.result);
    assert_eq!(replayed.run.status, RunStatus::Success);
    assert_eq!(step(&replayed.run, "stamp").attempts.len(), 2, "the transient failure is replayed too");

    // After a change to the definition, the replay says where the run goes another way.
    let changed = REPLAYED.replace("\"total\": \"sum(", "\"total\": \"1 + sum(");
    std::fs::write(dir.join("main.tool"), changed).unwrap();
    let replayed = replay(&load(&dir), &trace, Options::default()).unwrap();
    let at: Vec<&str> = replayed.divergences.iter().map(|d| d.at.as_str()).collect();
    // The tool's answer is the recorded one, so only what the definition computes differs.
    assert_eq!(at, ["sum"], "{:?}", replayed.divergences);
    assert!(
        replayed.divergences[0].what.starts_with("arguments differ: {\"total\":61.0"),
        "{:?}",
        replayed.divergences
    );
}

/// Issue 28 item 5, through the library: the limits a run had are in its trace, and a
/// replay runs under them (a fan-out of 1,001 children under `max_fan_out(2000)` replays
/// with the default options); a file store's reads are recorded by `FileRecorder` and
/// answered by the engine `replay::engine` builds, whatever the store holds now.
#[test]
fn replay_runs_under_the_recorded_limits_and_reads_the_recorded_files() {
    let dir = wide_and_fan_out("replay-limits");
    let items: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
    let args = format!(r#"{{"items": [{}]}}"#, items.join(","));
    let options = Options { guards: Guards::new().max_fan_out(2000), ..Options::default() };
    let recorded = run_with(&dir, &args, &Script::new(), options);
    assert_eq!(recorded.status, RunStatus::Success, "{:?}", recorded.error);
    let trace = tdsl::testing::exec::Trace::from_json(&recorded.trace.to_json()).unwrap();
    assert_eq!(trace.limits.as_ref().map(|l| l.max_fan_out), Some(2000));
    let replayed = replay(&load(&dir), &trace, Options::default()).unwrap();
    assert!(replayed.divergences.is_empty(), "{:?}", &replayed.divergences[..1]);
    assert_eq!(replayed.run.result, recorded.result);

    // Files: the run reads through a recorder; the replay, from the trace.
    use tdsl::testing::exec::replay::{engine, FileRecorder};
    use tdsl::testing::files::MemoryStore;
    let dir = root(
        "replay-files",
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"instructions": [{"execution_id": "read", "tool_definition_path": "/tools/t.tool",
                     "transform_arguments": {"transforms": {"text": "read_file(file_path=\"n.txt\")"}}}],
                    "response_reference_map": {"text": "REF:read.text"}}"#,
            ),
        ],
    );
    let mut store = MemoryStore::new();
    store.insert("n.txt", "milk").unwrap();
    let recorder = Arc::new(FileRecorder::new(Arc::new(store)));
    let wf = Workflow::load_with_engine(
        &dir,
        &dir.join("main.tool"),
        tdsl::testing::exec::engine().with_file_store(recorder.clone()),
    )
    .unwrap();
    let mut recorded = executor(&Script::new(), &clock(), Options::default()).run(&wf, json("{}")).unwrap();
    assert_eq!(recorded.result, Some(json(r#"{"text": "milk"}"#)), "{:?}", recorded.error);
    recorded.trace.files = Some(recorder.reads());
    let trace = tdsl::testing::exec::Trace::from_json(&recorded.trace.to_json()).unwrap();
    let wf = Workflow::load_with_engine(&dir, &dir.join("main.tool"), engine(&trace)).unwrap();
    let replayed = replay(&wf, &trace, Options::default()).unwrap();
    assert!(replayed.divergences.is_empty(), "{:?}", replayed.divergences);
    assert_eq!(replayed.run.result, recorded.result);
    // Without the recorded reads, the replay diverges (a read it cannot answer).
    let mut without = trace.clone();
    without.files = Some(Vec::new());
    let wf = Workflow::load_with_engine(&dir, &dir.join("main.tool"), engine(&without)).unwrap();
    let replayed = replay(&wf, &without, Options::default()).unwrap();
    assert!(!replayed.divergences.is_empty());
}

// ---------------------------------------------------------------------------------------
// Guards

#[test]
fn guards_refuse_before_anything_runs() {
    let dir = root(
        "guards",
        &[
            ("/tools/t.tool", ANY_TOOL),
            ("/tools/danger/rm.tool", ANY_TOOL),
            ("/tools/double.tool", &primitive(&["x:number"], &["value:number"])),
            ("/tools/inner.tool", INNER),
            (
                "main.tool",
                r#"{"arguments": [{"name": "xs", "type_name": "list", "required": true}],
                  "instructions": [
                  {"execution_id": "ok", "tool_definition_path": "/tools/t.tool"},
                  {"execution_id": "nested", "tool_definition_path": "/tools/inner.tool", "arguments": {"x": 1}},
                  {"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
                   "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "x"}},
                  {"execution_id": "wide", "tool_definition_path": "/tools/t.tool",
                   "parallel_execution": {"iterate_over": "REF:arguments.xs", "child_argument_name": "x"}}
                ]}"#,
            ),
        ],
    );
    let wf = load(&dir);
    let script = Script::new();
    let refused = |guards: Guards| {
        executor(&script, &clock(), Options { guards, ..Options::default() })
            .run(&wf, json(r#"{"xs": []}"#))
            .unwrap_err()
    };
    assert_eq!(
        refused(Guards::new().allow_tools(&["/tools/t.tool"]).unwrap()),
        GuardError::ToolNotAllowed {
            tool: "/tools/inner.tool".into(),
            step: "nested".into(),
            allowed: vec!["/tools/t.tool".into()]
        }
    );
    let e = refused(Guards::new().allow_tools(&["/tools/*.tool"]).unwrap().max_steps(4));
    assert_eq!(e, GuardError::TooManySteps { steps: 5, max: 4 });
    assert_eq!(e.to_string(), "the run could execute 5 steps, more than the maximum of 4");
    assert_eq!(
        refused(Guards::new().max_fan_out(2)),
        GuardError::FanOutTooWide { step: "fan".into(), width: 3, max: 2 }
    );
    assert!(script.calls.lock().unwrap().is_empty());
    let allowed = Guards::new().allow_tools(&["/tools/*.tool"]).unwrap();
    assert!(!allowed.allows("/tools/danger/rm.tool"), "`*` stays in one segment");

    // A width known only at run time fails the step when it fans out: the engine case
    // `fan-out-order/too-wide`.
}

#[test]
fn an_observer_sees_steps_start_and_end_and_fan_outs_progress() {
    use tdsl::testing::exec::{Event, Observer};
    struct Log(std::sync::Mutex<Vec<String>>);
    impl Observer for Log {
        fn event(&self, e: &Event<'_>) {
            let line = match e {
                Event::StepStarted { step, .. } => format!("start {step}"),
                Event::FanOut { step, children } => format!("fan {step} {children}"),
                Event::ChildEnded { step, ended, children } => format!("child {step} {ended}/{children}"),
                Event::StepRetried { step, attempt, .. } => format!("retry {step} {attempt}"),
                Event::StepEnded { step, status, .. } => format!("end {step} {}", status.as_str()),
                // Run and attempt events: seen by the history, not this log.
                _ => return,
            };
            self.0.lock().unwrap().push(line);
        }
    }
    let dir = root(
        "observer",
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"instructions": [
                  {"execution_id": "a", "tool_definition_path": "/tools/t.tool",
                   "parallel_execution": {"iterate_over": [1, 2], "child_argument_name": "x"}},
                  {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"n": "REF:a.response.length"},
                   "conditions": [{"param": "REF:a.response.length", "operator": "less_than", "value": 2}]}
                ]}"#,
            ),
        ],
    );
    let log = Arc::new(Log(std::sync::Mutex::new(Vec::new())));
    let ex = executor(&Script::new(), &clock(), Options { max_concurrency: 1, ..Options::default() })
        .with_observer(log.clone());
    assert_eq!(ex.run(&load(&dir), json("{}")).unwrap().status, RunStatus::Success);
    assert_eq!(
        *log.0.lock().unwrap(),
        ["start a", "fan a 2", "child a 1/2", "child a 2/2", "end a COMPLETED", "start b", "end b SKIPPED"]
    );
}

#[test]
fn cancelling_a_run_reaches_the_call_in_flight_and_stops_everything_after_it() {
    let dir = one_step("cancel", r#", "retry": {"max_retries": 5, "base_delay_seconds": 1}"#);
    let token = tdsl::testing::exec::CancelToken::new();
    let (host, seen) = (token.clone(), Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let saw = seen.clone();
    let script = Script::new().on("/tools/t.tool", move |call, _| {
        // The host cancels while the call runs: the call's own token is cancelled with it.
        host.cancel();
        saw.store(call.cancel.is_cancelled(), Ordering::SeqCst);
        Err(ToolError::transient("stopped"))
    });
    let time = clock();
    let r = executor(&script, &time, Options::default()).run_cancellable(&load(&dir), json("{}"), &token).unwrap();
    assert!(seen.load(Ordering::SeqCst), "the call in flight saw the cancel");
    assert_eq!(r.status, RunStatus::Failed, "a cancelled run is FAILED, not TIMEOUT");
    let e = r.error.clone().unwrap();
    assert_eq!((e.code.as_str(), e.step.as_deref()), ("E0813", Some("s")));
    assert_eq!(e.message, "the run was cancelled: stopped");
    let s = step(&r, "s");
    let outcomes: Vec<Outcome> = s.attempts.iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, [Outcome::Cancelled], "a cancelled call is never retried");
    assert_eq!(
        (s.status, s.reason.as_deref()),
        (StepStatus::Cancelled, Some("the run was cancelled: stopped")),
        "the step cut off is cancelled, not failed"
    );
    assert_eq!(tdsl::testing::exec::Time::monotonic_ms(&*time), 0, "no back-off was slept");
    let after = step(&r, "after");
    assert_eq!((after.status, after.reason.as_deref()), (StepStatus::Cancelled, Some("step `s` failed")));
    assert_eq!(script.calls_of("/tools/t.tool").len(), 1);
}

#[test]
fn a_run_cancelled_before_it_starts_calls_nothing() {
    let dir = one_step("cancel-early", "");
    let token = tdsl::testing::exec::CancelToken::new();
    token.cancel();
    let script = Script::new().on("/tools/t.tool", |_, _| Ok(json(r#"{"ok": 1}"#)));
    let r = executor(&script, &clock(), Options::default()).run_cancellable(&load(&dir), json("{}"), &token).unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.error.clone().unwrap().code, "E0813");
    for id in ["s", "after"] {
        let s = step(&r, id);
        assert_eq!((s.status, s.reason.as_deref()), (StepStatus::Cancelled, Some("the run was cancelled")), "{id}");
    }
    assert!(script.tools_called().is_empty());
}

#[test]
fn cancelling_during_a_fan_out_starts_no_more_children() {
    let main = r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}], "instructions": [
        {"execution_id": "fan", "tool_definition_path": "/tools/item.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"}}]}"#;
    let dir = root("cancel-fan", &[("/tools/item.tool", ANY_TOOL), ("main.tool", main)]);
    let token = tdsl::testing::exec::CancelToken::new();
    let host = token.clone();
    let script = Script::new().on("/tools/item.tool", move |call, _| {
        host.cancel();
        Err(ToolError::transient(format!("{} cancelled", call.tool_path)))
    });
    let options = Options { max_concurrency: 1, ..Options::default() };
    let args = json(r#"{"items": [1, 2, 3, 4, 5, 6]}"#);
    let r = executor(&script, &clock(), options).run_cancellable(&load(&dir), args, &token).unwrap();
    assert_eq!((r.status, r.error.clone().unwrap().code.as_str()), (RunStatus::Failed, "E0813"));
    assert_eq!(script.calls_of("/tools/item.tool").len(), 1, "children after the cancel never start");
}

// ---------------------------------------------------------------------------------------
// Issue 14/15: parallel results, validation order, the seed-000 trace, ranges, defaults,
// the breaker's refusals, fail-fast across slots

/// The trace of the case `seed-trace` (seed 000's names, its aggregates) is its expectation;
/// here, what a case blurs (ids, times on the virtual clock), the aggregates' consistency,
/// and the old format read back.
#[test]
fn the_trace_carries_the_seed_names_and_consistent_aggregates() {
    let (r, _) = cases::run_local(&cases::spec("seed-trace"));
    let r = r.unwrap();
    assert_eq!(r.status, RunStatus::Partial, "{:?}", r.error);
    let t = &r.trace;
    assert!(t.trace_id.starts_with("trace_") && t.trace_id.len() == 18, "{}", t.trace_id);
    let executed = t.steps.iter().filter(|s| s.status != StepStatus::Skipped).count();
    let succeeded = t.steps.iter().filter(|s| s.success).count();
    assert_eq!((executed, succeeded), (t.tools_executed, t.tools_succeeded));
    assert_eq!(t.total_retries, t.steps.iter().map(|s| s.retry_count).sum::<u32>());
    let flaky = step(&r, "flaky");
    assert_eq!(flaky.started_at.as_deref(), Some("2026-01-01T00:00:00.000Z"));
    assert_eq!(flaky.completed_at.as_deref(), Some("2026-01-01T00:00:03.000Z"));
    let text = t.to_json();
    assert!(text.contains("\"total_duration_ms\": 3000"), "{text}");
    assert_eq!(&tdsl::testing::exec::Trace::from_json(&text).unwrap(), t);

    // A format-1 trace (tdsl's old names) still reads, and gets its aggregates computed.
    let mut old = text.clone();
    for (new, was) in [
        ("\"tdsl-trace/2\"", "\"tdsl-trace/1\""),
        ("\"overall_status\"", "\"status\""),
        ("\"step_results\"", "\"steps\""),
        ("\"step_id\"", "\"execution_id\""),
        ("\"output\"", "\"result\""),
        ("\"total_duration_ms\"", "\"duration_ms\""),
        ("\"tools_executed\": 3", "\"tools_executed\": 0"),
        ("\"success\": true", "\"success\": false"),
    ] {
        old = old.replace(new, was);
    }
    let read = tdsl::testing::exec::Trace::from_json(&old).unwrap();
    assert_eq!((read.tools_executed, read.tools_succeeded, read.success_rate), (3, 2, 2.0 / 3.0));
    assert_eq!(read.steps, t.steps);
    let e = tdsl::testing::exec::Trace::from_json(&text.replace("tdsl-trace/2", "tdsl-trace/9")).unwrap_err();
    assert!(e.contains("`tdsl-trace/1`, `tdsl-trace/2`"), "{e}");
}

#[test]
fn a_refused_call_fails_at_once_naming_the_tool_and_when_it_half_opens() {
    let dir =
        one_step("refused", r#", "retry": {"max_retries": 4, "base_delay_seconds": 10, "factor": 1, "jitter": 0}"#);
    let time = clock();
    let script = Script::new().on("/tools/t.tool", |_, _| Err(ToolError::transient("down")));
    let ex = executor(&script, &time, Options::default());
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    let s = step(&r, "s");
    let outcomes: Vec<(Outcome, u64)> = s.attempts.iter().map(|a| (a.outcome, a.delay_ms)).collect();
    assert_eq!(
        outcomes,
        [(Outcome::Transient, 0), (Outcome::Transient, 10_000), (Outcome::Transient, 10_000), (Outcome::Refused, 0)]
    );
    // The third failure (at 20 s) opened the breaker: the refused fourth attempt did not
    // wait out its 10 s back-off, and no fifth attempt was made.
    assert_eq!(tdsl::testing::exec::Time::monotonic_ms(&*time), 20_000);
    let e = r.error.clone().unwrap();
    assert_eq!(e.code, "E0806");
    assert_eq!(
        e.message,
        "the circuit breaker of `/tools/t.tool` is open: the call was refused; it half-opens in 60 s, at \
         2026-01-01T00:01:20.000Z (attempt 4 of the step)"
    );
    assert_eq!((s.circuit_state, s.retry_count), (Some(breaker::BreakerState::Open), 2));

    // A later step of the same tool is refused at once too, on its first attempt.
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    let s = step(&r, "s");
    assert_eq!(s.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), [Outcome::Refused]);
    assert_eq!(tdsl::testing::exec::Time::monotonic_ms(&*time), 20_000, "nothing waited");
    assert!(r.error.unwrap().message.contains("it half-opens in 60 s"));
}

#[test]
fn the_seed_defaults_retry_transient_errors_twice_with_a_60_s_timeout() {
    // Two transient failures, then an answer, within the default retries: the case
    // `seed-defaults`; with `max_retries: 4`, the default breaker refuses the fourth try: the
    // case `fourth-try`.
    assert_eq!(Options::default().retry.max_retries, 2);
    assert_eq!(Options::default().timeout_seconds, 60.0);
    assert_eq!(breaker::DEFAULT_FAILURE_THRESHOLD, 3);
    let dir = one_step("seed-defaults", "");
    // A hanging tool times out after 60 s, and the TIMEOUT is retried like a transient error.
    let time = clock();
    let script = Script::new().on("/tools/t.tool", hang(time.clone()));
    let r = executor(&script, &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    let s = step(&r, "s");
    assert_eq!(s.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>(), [Outcome::Timeout; 3]);
    assert_eq!(r.error.unwrap().message, "the call timed out after 60 s (after 3 attempts)");
}

#[test]
fn out_of_range_options_are_refused_before_the_run() {
    let dir = one_step("options-range", "");
    let script = Script::new();
    let cases: Vec<(Options, &str)> = vec![
        (
            Options { timeout_seconds: 0.5, ..Options::default() },
            "`timeout_seconds` must be from 1 to 300 (seconds), and it is 0.5",
        ),
        (Options { timeout_seconds: 1e17, ..Options::default() }, "and it is 1e17"),
        (
            Options { retry: RetryPolicy { base_delay_seconds: 1e20, ..RetryPolicy::default() }, ..Options::default() },
            "`base_delay_seconds` must be from 0.1 to 10 (seconds), and it is 1e20",
        ),
        (
            Options { retry: RetryPolicy { max_retries: 6, ..RetryPolicy::default() }, ..Options::default() },
            "`max_retries` must be an integer from 0 to 5, and it is 6",
        ),
        (Options { deadline: Some(Duration::from_secs(100_000)), ..Options::default() }, "`deadline` must be"),
        (Options { max_concurrency: 0, ..Options::default() }, "`concurrency` must be an integer from 1 to 1024"),
        (
            Options {
                breaker: BreakerPolicy { failure_threshold: 11, ..BreakerPolicy::default() },
                ..Options::default()
            },
            "`breaker threshold` must be an integer from 1 to 10, and it is 11",
        ),
        (
            Options {
                breaker: BreakerPolicy { reset_timeout_seconds: 1e300, ..BreakerPolicy::default() },
                ..Options::default()
            },
            "`breaker reset` must be from 10 to 300 (seconds), and it is 1e300",
        ),
        (
            Options { guards: Guards::new().max_fan_out(0), ..Options::default() },
            "`max_fan_out` must be an integer from 1 to 100000, and it is 0",
        ),
        (
            Options { guards: Guards::new().max_steps(usize::MAX), ..Options::default() },
            "`max_steps` must be an integer from 1 to 1000000",
        ),
    ];
    for (options, message) in cases {
        let e = executor(&script, &clock(), options.clone()).run(&load(&dir), json("{}")).unwrap_err();
        assert_eq!(e.code().as_str(), "E0814");
        assert!(e.to_string().contains(message), "{e}");
        assert!(matches!(e, GuardError::OutOfRange { .. }));
        let trace = run(&dir, "{}", &script).trace;
        assert!(replay(&load(&dir), &trace, options).is_err(), "replay checks them too");
    }
    assert!(script.calls.lock().unwrap().len() == 2 * 10, "only the 10 reference runs called tools");
}

#[test]
fn a_fan_out_failure_stops_an_independent_step_waiting_for_a_slot() {
    // Three workers. `a_fan`'s child 0 runs slowly while child 1 fails at once; `b_gate`
    // holds a worker until child 1 has failed, then ends, which makes `c_other` (independent
    // of the fan-out) ready while the fan-out still waits for child 0. It must not start.
    let dir = root(
        "fan-fail-fast",
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "main.tool",
                r#"{"instructions": [
                  {"execution_id": "a_fan", "tool_definition_path": "/tools/t.tool",
                   "parallel_execution": {"iterate_over": [0, 1, 2, 3], "child_argument_name": "i"}},
                  {"execution_id": "b_gate", "tool_definition_path": "/tools/t.tool", "arguments": {"gate": true}},
                  {"execution_id": "c_other", "tool_definition_path": "/tools/t.tool", "arguments": {"after": "REF:b_gate.gate"}}
                ]}"#,
            ),
        ],
    );
    // The gate opens once children 1, 2 and 3 have ended (child 0 sleeps): child 1's failure
    // is then recorded, whatever the threads' timing.
    struct Gate(Arc<tdsl::testing::exec::Signal>);
    impl tdsl::testing::exec::Observer for Gate {
        fn event(&self, e: &tdsl::testing::exec::Event<'_>) {
            if let tdsl::testing::exec::Event::ChildEnded { step: "a_fan", ended, .. } = e {
                if *ended >= 3 {
                    self.0.raise();
                }
            }
        }
    }
    let gate = Arc::new(tdsl::testing::exec::Signal::new());
    let seen = gate.clone();
    let script = Script::new().on("/tools/t.tool", move |call, _| {
        let a = &call.arguments;
        if a.get_direct("gate").is_some() {
            // A generous bound that only proves "did not hang".
            seen.wait_real(Some(Duration::from_secs(10)));
            return Ok(json(r#"{"gate": true}"#));
        }
        match a.get_direct("i").and_then(Value::as_f64) {
            Some(1.0) => Err(ToolError::permanent("child 1 fails")),
            Some(0.0) => {
                std::thread::sleep(Duration::from_millis(500));
                Ok(json("{}"))
            }
            _ => Ok(json("{}")),
        }
    });
    let ex = executor(&script, &clock(), Options { max_concurrency: 3, ..Options::default() })
        .with_observer(Arc::new(Gate(gate)));
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.error.clone().unwrap().step.as_deref(), Some("a_fan[1]"));
    let other = step(&r, "c_other");
    assert_eq!(other.status, StepStatus::Cancelled, "{other:?}");
    assert!(other.attempts.is_empty());
    assert!(script.calls.lock().unwrap().iter().all(|c| c.arguments.get_direct("after").is_none()), "never called");
}

// ---------------------------------------------------------------------------------------
// Run limits: calls and the result's bytes (issue 38 item 2)

/// `first`, then a fan-out over a composite callee of two chained steps: a run over `n`
/// items makes 1 + 3n calls (each child's composite call and its two steps' calls), 1 + 2n
/// of them tool calls.
fn calls_workflow(name: &str, continue_on_error: bool) -> std::path::PathBuf {
    let main = format!(
        r#"{{"arguments": [{{"name": "items", "type_name": "list", "required": true}}],
          "instructions": [
            {{"execution_id": "first", "tool_definition_path": "/tools/t.tool", "arguments": {{"i": 0}}}},
            {{"execution_id": "fan", "tool_definition_path": "/tools/pair.tool", "dependencies": ["first"],
              "continue_on_error": {continue_on_error},
              "parallel_execution": {{"iterate_over": "REF:arguments.items", "child_argument_name": "x"}}}}
          ],
          "response_reference_map": {{"pairs": "REF:fan.response"}}}}"#
    );
    root(
        name,
        &[
            ("/tools/t.tool", ANY_TOOL),
            (
                "/tools/pair.tool",
                r#"{"arguments": [{"name": "x", "type_name": "any", "required": true}],
                  "instructions": [
                    {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:arguments.x"}},
                    {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"y": "REF:a.x"}}
                  ],
                  "response_reference_map": {"y": "REF:b.y"}}"#,
            ),
            ("main.tool", &main),
        ],
    )
}

fn items(n: usize) -> String {
    format!(r#"{{"items": [{}]}}"#, (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(","))
}

#[test]
fn a_run_stops_at_its_limit_of_calls_fan_outs_and_composite_callees_counted() {
    // 1 + 3 × 10 = 31 calls wanted, 20 allowed: the call that would be the 21st does not
    // start, nothing starts after it, and the run fails E0816 even under continue_on_error.
    for continue_on_error in [false, true] {
        let dir = calls_workflow(&format!("calls-limit-{continue_on_error}"), continue_on_error);
        let script = Script::new();
        let options = Options { guards: Guards::new().max_calls_per_run(20), ..Options::default() };
        let r = run_with(&dir, &items(10), &script, options);
        assert_eq!(r.status, RunStatus::Failed, "{:?}", r.error);
        assert!(r.result.is_none());
        let e = r.error.clone().unwrap();
        assert_eq!(e.code, "E0816", "{e:?}");
        assert!(e.message.contains("the run reached its limit of 20 calls (`--max-calls-per-run`)"), "{}", e.message);
        // Charged to the fan-out's child (the step), or to the composite callee it reached.
        assert!(e.message.starts_with("child ") || e.step.as_deref().is_some_and(|s| s.starts_with("fan")), "{e:?}");
        let made = script.calls.lock().unwrap().len();
        // At worst every child's composite call took one of the 19 left: 10 tool calls.
        assert!((10..=20).contains(&made), "tool calls made: {made}");
        // The trace holds no more calls than the limit allowed.
        let attempts: usize = step(&r, "fan")
            .children
            .iter()
            .flatten()
            .flat_map(|c| c.steps.iter().flatten())
            .map(|s| s.attempts.len())
            .sum();
        assert_eq!(attempts + step(&r, "first").attempts.len(), made);
    }
}

#[test]
fn a_result_of_gigabytes_is_refused_without_being_written_out() {
    // One 4 MiB string shared 1,000 times: 4 GiB of JSON, past the default bound of 1 GiB.
    // Measuring keeps no byte and measures the shared string once, so this takes no 4 GiB
    // (nor 1 GiB), nor the time of counting 1 GiB.
    let s = Value::str(&"a".repeat(4 << 20));
    let result = Value::object_from([("echoes", Value::list((0..1000).map(|_| s.clone()).collect::<Vec<_>>()))]);
    let guards = Guards::new();
    assert_eq!(guards.max_result_bytes, 1 << 30);
    let e = guards.check_result(&result).unwrap_err();
    assert_eq!(e.max, 1 << 30);
    assert!(Guards::new().max_result_bytes(8 << 30).validate().is_err(), "at most 4 GiB");
    assert!(guards.check_result(&s).is_ok(), "one copy fits");
}

#[test]
fn the_default_limits_let_todays_runs_through_and_stop_the_runaway_ones() {
    // The defaults, by counting: a million calls for the library and `tdsl run`, which the
    // run of the issue (a composite of 8 calls driven 1,000 × 1,000 times: 8 million) passes.
    let guards = Guards::new();
    assert_eq!(guards.max_calls_per_run, 1_000_000);
    assert!(8 * 1000 * 1000 > guards.max_calls_per_run);
    // The widest fan-out the range allows, and a step before it, fit.
    assert!(100_000 + 1 < guards.max_calls_per_run);
    assert!(Guards::new().max_calls_per_run(0).validate().is_err());
    assert!(Guards::new().max_calls_per_run(100_000_001).validate().is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Within its limit a run is the run it was without one (the same result, the same
    /// calls); past it, it fails E0816 having made no more tool calls than the limit.
    #[test]
    fn within_the_limit_of_calls_a_run_is_unchanged(n in 0usize..8, limit in 1usize..40, coe: bool) {
        let dir = calls_workflow(&format!("calls-prop-{n}-{limit}-{coe}"), coe);
        let free = run(&dir, &items(n), &Script::new());
        proptest::prop_assert_eq!(free.status, RunStatus::Success);
        let script = Script::new();
        let options = Options { guards: Guards::new().max_calls_per_run(limit), ..Options::default() };
        let bounded = run_with(&dir, &items(n), &script, options);
        let made = script.calls.lock().unwrap().len();
        if limit > 3 * n {
            proptest::prop_assert_eq!(bounded.status, RunStatus::Success);
            proptest::prop_assert_eq!(show(&bounded.result), show(&free.result));
            proptest::prop_assert_eq!(made, 1 + 2 * n);
        } else {
            proptest::prop_assert_eq!(bounded.status, RunStatus::Failed);
            proptest::prop_assert_eq!(bounded.error.unwrap().code, "E0816");
            proptest::prop_assert!(made <= limit);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
