//! Calls that cannot block (issue 33): a runner that says so (`Runner::can_block` false,
//! `NonBlocking`, `HostRunner`'s `builtin:` and mocks) is called on the engine's worker
//! thread, with no hand-off to a call thread; a runner that may block still gets a call
//! thread of its own and is still timed out and cancelled. Timeouts, cancellation, panics,
//! the concurrency limit, nesting and wide fan-outs on the inline path, and traces identical
//! to those of the threaded path.

// exec_support's Temporal harness (feature `temporal`) uses common's free ports.
#[cfg(feature = "temporal")]
mod common;
mod exec_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exec_support::*;
use tdsl::testing::exec::{
    CancelToken, Executor, Guards, ManualTime, NonBlocking, Options, Outcome, Run, RunStatus, Runner, SeededRandom,
    StepStatus, SystemTime, Time, ToolCall, ToolError,
};
use tdsl::testing::host::HostRunner;
use tdsl::Value;

/// The script as a runner whose calls cannot block.
fn inline(script: &Script, time: &Arc<ManualTime>, options: Options) -> Executor {
    let s = script.clone();
    Executor::new(NonBlocking(move |c: &ToolCall<'_>| s.call(c)))
        .with_time(time.clone())
        .with_random(Arc::new(SeededRandom::new(7)))
        .with_options(options)
}

const FAN: &str = r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}], "instructions": [
    {"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"}}],
   "response_reference_map": {"n": "REF:fan.response.length"}}"#;

fn items(n: usize) -> Value {
    Value::object_from([("items", Value::list((0..n as i64).map(Value::Int).collect()))])
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("unnamed").to_string()
}

fn outcomes(r: &Run, id: &str) -> Vec<Outcome> {
    step(r, id).attempts.iter().map(|a| a.outcome).collect()
}

/// Records where each call ran; asks the command line's runner whether it can block.
struct Where {
    host: HostRunner,
    threads: Mutex<Vec<(String, String)>>,
}

impl Runner for Where {
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self.threads.lock().unwrap().push((call.tool_path.to_string(), thread_name()));
        Ok(Value::object_from([("ok", Value::Bool(true))]))
    }

    fn can_block(&self, call: &ToolCall<'_>) -> bool {
        self.host.can_block(call)
    }
}

#[test]
fn builtin_calls_run_on_the_worker_and_exec_calls_on_a_call_thread() {
    let main = r#"{"instructions": [
        {"execution_id": "b", "tool_definition_path": "/tools/b.tool"},
        {"execution_id": "e", "tool_definition_path": "/tools/e.tool", "dependencies": ["b"]},
        {"execution_id": "m", "tool_definition_path": "/tools/m.tool", "dependencies": ["e"]}]}"#;
    let dir = root(
        "where",
        &[
            ("/tools/b.tool", ANY_TOOL),
            ("/tools/e.tool", r#"{"system_event_endpoint": "exec:./never-started"}"#),
            ("/tools/m.tool", r#"{"system_event_endpoint": "exec:./mocked"}"#),
            ("main.tool", main),
        ],
    );
    let mock = tdsl::testing::host::Mock::from_json(r#"{"/tools/m.tool": {"ok": true}}"#).unwrap();
    let runner = Arc::new(Where { host: HostRunner::new().with_mock(mock), threads: Mutex::new(Vec::new()) });
    let ex = Executor::with_runner(runner.clone()).with_time(clock());
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    let threads = runner.threads.lock().unwrap().clone();
    let on = |tool: &str| threads.iter().find(|(t, _)| t == tool).map(|(_, n)| n.clone()).unwrap();
    assert!(on("/tools/b.tool").starts_with("tdsl-worker-"), "builtin: on the worker, not {}", on("/tools/b.tool"));
    assert!(on("/tools/m.tool").starts_with("tdsl-worker-"), "a mocked tool on the worker");
    assert_eq!(on("/tools/e.tool"), "tdsl-call", "exec: on a call thread");
}

#[test]
fn a_non_blocking_runner_runs_on_the_worker_and_a_plain_closure_on_a_call_thread() {
    let dir = one_step("thread-ids", "");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let record = move |c: &ToolCall<'_>| -> Result<Value, ToolError> {
        s.lock().unwrap().push((thread_name(), c.timeout));
        Ok(json(r#"{"ok": 1}"#))
    };
    let r = Executor::new(NonBlocking(record.clone())).with_time(clock()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success);
    let r = Executor::new(record).with_time(clock()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    for (name, timeout) in &seen[..2] {
        assert!(name.starts_with("tdsl-worker-"), "inline call ran on {name}");
        assert_eq!(*timeout, Some(Duration::from_secs(60)), "the call still knows its time");
    }
    for (name, timeout) in &seen[2..] {
        assert_eq!(name, "tdsl-call");
        assert_eq!(*timeout, Some(Duration::from_secs(60)));
    }
}

#[test]
fn a_blocking_runner_still_gets_its_own_thread_and_is_timed_out_and_cancelled() {
    let dir = one_step("blocking", r#", "timeout_seconds": 5, "retry": {"max_retries": 0}"#);
    let time = clock();
    let hanging = hang(time.clone());
    let seen = Arc::new(Mutex::new((String::new(), false)));
    let s = seen.clone();
    let script = Script::new().on("/tools/t.tool", move |call, n| {
        let r = hanging(call, n);
        *s.lock().unwrap() = (thread_name(), call.cancel.is_cancelled());
        r
    });
    let r = executor(&script, &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    assert_eq!(outcomes(&r, "s"), [Outcome::Timeout]);
    assert_eq!(*seen.lock().unwrap(), ("tdsl-call".to_string(), true), "on a call thread, cancelled at the timeout");
}

#[test]
fn an_inline_call_that_ran_past_its_timeout_is_a_timeout_and_is_retried() {
    let dir = one_step("inline-timeout", r#", "timeout_seconds": 5, "retry": {"max_retries": 1}"#);
    let slow_first = |time: &Arc<ManualTime>| {
        let t = time.clone();
        Script::new().on("/tools/t.tool", move |call, n| {
            if n == 0 {
                // Claims it cannot block, then "takes" 10 s of the virtual clock.
                t.sleep(Duration::from_secs(10));
                return Ok(json(r#"{"ok": "too late"}"#));
            }
            Ok(json(&format!(r#"{{"ok": {}}}"#, call.attempt)))
        })
    };
    let time = clock();
    let r = inline(&slow_first(&time), &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    assert_eq!(outcomes(&r, "s"), [Outcome::Timeout, Outcome::Ok]);
    let first = &step(&r, "s").attempts[0];
    assert_eq!(first.error.as_deref(), Some("the call timed out after 5 s"));
    assert_eq!(first.response, None, "an answer past the timeout is not used");
    assert_eq!(show(&r.result), r#"{"s":{"ok":2},"after":{"ok":1}}"#);

    // No retry: the step times out, as a blocking call would.
    let dir = one_step("inline-timeout-0", r#", "timeout_seconds": 5, "retry": {"max_retries": 0}"#);
    let time = clock();
    let r = inline(&slow_first(&time), &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    let e = r.error.clone().unwrap();
    assert_eq!((e.code.as_str(), e.message.as_str()), ("E0804", "the call timed out after 5 s"));
    assert_eq!(step(&r, "after").status, StepStatus::Cancelled);
}

#[test]
fn an_inline_call_past_the_run_deadline_ends_the_run_with_timeout() {
    let dir = one_step("inline-deadline", "");
    let time = clock();
    let t = time.clone();
    let script = Script::new().on("/tools/t.tool", move |_, _| {
        t.sleep(Duration::from_secs(45));
        Ok(json(r#"{"ok": 1}"#))
    });
    let options = Options { deadline: Some(Duration::from_secs(30)), ..Options::default() };
    let r = inline(&script, &time, options).run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    assert_eq!(outcomes(&r, "s"), [Outcome::Deadline]);
    assert_eq!(r.error.clone().unwrap().code, "E0805");
    assert_eq!(step(&r, "after").status, StepStatus::Cancelled);
}

#[test]
fn a_runner_that_claims_not_to_block_but_sleeps_for_real_is_timed_out_when_it_returns() {
    let dir = one_step("liar", r#", "timeout_seconds": 1, "retry": {"max_retries": 0}"#);
    let liar = NonBlocking(|call: &ToolCall<'_>| -> Result<Value, ToolError> {
        std::thread::sleep(Duration::from_millis(1300));
        Ok(Value::object_from([("ok", Value::Bool(call.cancel.is_cancelled()))]))
    });
    let ex = Executor::new(liar).with_time(Arc::new(SystemTime::default()));
    let r = ex.run(&load(&dir), json("{}")).unwrap();
    assert_eq!(r.status, RunStatus::Timeout);
    let s = step(&r, "s");
    assert_eq!((s.status, s.attempts[0].outcome), (StepStatus::Timeout, Outcome::Timeout));
    assert!(s.attempts[0].duration_ms >= 1000, "the attempt took what it took: {}", s.attempts[0].duration_ms);
    assert_eq!(r.error.clone().unwrap().code, "E0804");
}

#[test]
fn cancelling_a_run_reaches_an_inline_call_and_stops_everything_after_it() {
    let dir = one_step("inline-cancel", r#", "retry": {"max_retries": 5, "base_delay_seconds": 1}"#);
    let token = CancelToken::new();
    let (host, saw) = (token.clone(), Arc::new(Mutex::new((false, String::new()))));
    let s = saw.clone();
    let script = Script::new().on("/tools/t.tool", move |call, _| {
        host.cancel();
        *s.lock().unwrap() = (call.cancel.is_cancelled(), thread_name());
        Err(ToolError::transient("stopped"))
    });
    let time = clock();
    let r = inline(&script, &time, Options::default()).run_cancellable(&load(&dir), json("{}"), &token).unwrap();
    let (cancelled, on) = saw.lock().unwrap().clone();
    assert!(cancelled && on.starts_with("tdsl-worker-"), "the inline call saw the cancel ({cancelled}, {on})");
    assert_eq!(r.status, RunStatus::Failed);
    let e = r.error.clone().unwrap();
    assert_eq!((e.code.as_str(), e.message.as_str()), ("E0813", "the run was cancelled: stopped"));
    assert_eq!(outcomes(&r, "s"), [Outcome::Cancelled]);
    assert_eq!(step(&r, "after").status, StepStatus::Cancelled);
    assert_eq!(script.calls_of("/tools/t.tool").len(), 1);
    assert_eq!(time.monotonic_ms(), 0, "no back-off was slept");
}

#[test]
fn cancelling_mid_fan_out_of_inline_calls_starts_no_more_children() {
    let dir = root("inline-cancel-fan", &[("/tools/t.tool", ANY_TOOL), ("main.tool", FAN)]);
    let token = CancelToken::new();
    let host = token.clone();
    let script = Script::new().on("/tools/t.tool", move |call, n| {
        if n == 9 {
            host.cancel();
        }
        Ok(call.arguments.clone())
    });
    let options = Options { max_concurrency: 1, ..Options::default() };
    let r = inline(&script, &clock(), options).run_cancellable(&load(&dir), items(100), &token).unwrap();
    assert_eq!((r.status, r.error.clone().unwrap().code.as_str()), (RunStatus::Failed, "E0813"));
    assert_eq!(script.calls_of("/tools/t.tool").len(), 10, "children after the cancel never start");
}

#[test]
fn a_runner_that_panics_fails_its_step_inline_and_on_a_call_thread_alike() {
    let dir = one_step("panic", "");
    let script = Script::new().on("/tools/t.tool", |_, _| panic!("boom"));
    let time = clock();
    let inline_run = inline(&script, &time, Options::default()).run(&load(&dir), json("{}")).unwrap();
    let threaded = executor(&script, &clock(), Options::default()).run(&load(&dir), json("{}")).unwrap();
    for r in [&inline_run, &threaded] {
        assert_eq!(r.status, RunStatus::Failed);
        let e = r.error.clone().unwrap();
        assert_eq!((e.code.as_str(), e.message.as_str()), ("E0803", "the runner panicked: boom"));
        assert_eq!(outcomes(r, "s"), [Outcome::Permanent], "not retried");
        assert_eq!(step(r, "after").status, StepStatus::Cancelled);
    }
    assert_eq!(time.monotonic_ms(), 0, "nobody waited for a timeout");
}

#[test]
fn the_concurrency_limit_holds_for_inline_calls_in_fan_outs_and_nested_composites() {
    let inner = r#"{"arguments": [{"name": "item", "type_name": "any", "required": true}], "instructions": [
        {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:arguments.item"}},
        {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:a.i"}},
        {"execution_id": "c", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:a.i"}}],
       "response_reference_map": {"i": "REF:c.i"}}"#;
    let main = r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}], "instructions": [
        {"execution_id": "fan", "tool_definition_path": "/tools/inner.tool",
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"}},
        {"execution_id": "side", "tool_definition_path": "/tools/t.tool", "arguments": {"i": -1}}],
       "response_reference_map": {"n": "REF:fan.response.length", "last": "REF:fan.response.last.i"}}"#;
    let dir = root("inline-limit", &[("/tools/t.tool", ANY_TOOL), ("/tools/inner.tool", inner), ("main.tool", main)]);
    let script = Script::new().on("/tools/t.tool", |call, _| {
        std::thread::sleep(Duration::from_millis(1));
        Ok(call.arguments.clone())
    });
    for limit in [1, 2, 3] {
        let options = Options { max_concurrency: limit, ..Options::default() };
        let r = inline(&script, &clock(), options).run(&load(&dir), items(20)).unwrap();
        assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
        assert_eq!(show(&r.result), r#"{"n":20,"last":19}"#);
        assert!(r.trace.max_in_flight <= limit, "{} calls in flight, limit {limit}", r.trace.max_in_flight);
        assert!(script.peak.load(Ordering::SeqCst) <= limit, "the runner saw more than {limit} at once");
    }
    assert_eq!(script.calls_of("/tools/t.tool").len(), 3 * (20 * 3 + 1));
}

#[test]
fn a_fan_out_of_100_000_inline_calls_runs_to_the_end() {
    let dir = root("inline-100k", &[("/tools/t.tool", ANY_TOOL), ("main.tool", FAN)]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let runner = NonBlocking(move |call: &ToolCall<'_>| -> Result<Value, ToolError> {
        c.fetch_add(1, Ordering::Relaxed);
        Ok(call.arguments.clone())
    });
    let options = Options { max_concurrency: 2, guards: Guards::new().max_fan_out(100_000), ..Options::default() };
    let ex = Executor::new(runner).with_time(clock()).with_options(options);
    let r = ex.run(&load(&dir), items(100_000)).unwrap();
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    assert_eq!(show(&r.result), r#"{"n":100000}"#);
    assert_eq!(calls.load(Ordering::Relaxed), 100_000);
    assert_eq!(r.trace.steps[0].children.as_ref().map(Vec::len), Some(100_000));
}

#[test]
fn inline_and_threaded_runs_leave_the_same_trace() {
    let inner = r#"{"arguments": [{"name": "item", "type_name": "any", "required": true}], "instructions": [
        {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:arguments.item"}}],
       "response_reference_map": {"i": "REF:a.i"}}"#;
    let main = r#"{"arguments": [{"name": "items", "type_name": "list", "required": true}], "instructions": [
        {"execution_id": "first", "tool_definition_path": "/tools/t.tool", "arguments": {"i": 0},
         "retry": {"max_retries": 2, "base_delay_seconds": 1, "jitter": 0}},
        {"execution_id": "fan", "tool_definition_path": "/tools/inner.tool", "dependencies": ["first"],
         "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "item"}},
        {"execution_id": "slow", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:fan.response.length"},
         "timeout_seconds": 2, "retry": {"max_retries": 1, "jitter": 0}}],
       "response_reference_map": {"n": "REF:fan.response.length", "slow": "REF:slow.i"}}"#;
    let dir = root("same-trace", &[("/tools/t.tool", ANY_TOOL), ("/tools/inner.tool", inner), ("main.tool", main)]);
    let trace = |inline_calls: bool| {
        let time = clock();
        let t = time.clone();
        let script = Script::new().on("/tools/t.tool", move |call, n| {
            if n == 0 {
                return Err(ToolError::transient("busy"));
            }
            if call.arguments.get_direct("i") == Some(&Value::Int(5)) && call.attempt == 1 {
                // The first attempt of `slow` takes 3 s of its 2 s.
                t.sleep(Duration::from_secs(3));
            }
            Ok(call.arguments.clone())
        });
        let options = Options { max_concurrency: 1, ..Options::default() };
        let ex = if inline_calls { inline(&script, &time, options) } else { executor(&script, &time, options) };
        let r = ex.run(&load(&dir), items(5)).unwrap();
        assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
        assert_eq!(outcomes(&r, "slow"), [Outcome::Timeout, Outcome::Ok]);
        serde_json::to_string_pretty(&r.trace).unwrap()
    };
    assert_eq!(trace(true), trace(false));
}

/// An executor keeps its worker pool between runs (building eight threads cost more than a
/// short run's steps), and runs at the same time never share workers: two runs of
/// `max_concurrency: 1` whose calls wait for each other both get through.
#[test]
fn runs_one_after_another_reuse_their_workers_and_runs_at_once_do_not_share() {
    let main = r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "/tools/t.tool"}],
       "response_reference_map": {"met": "REF:s.met"}}"#;
    let wf = load(&root("pool-reuse", &[("/tools/t.tool", ANY_TOOL), ("main.tool", main)]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let arrived = Arc::new(AtomicUsize::new(0));
    let (s, a) = (seen.clone(), arrived.clone());
    let meet = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let m = meet.clone();
    let runner = NonBlocking(move |_: &ToolCall<'_>| -> Result<Value, ToolError> {
        s.lock().unwrap().push(std::thread::current().id());
        if !m.load(Ordering::SeqCst) {
            return Ok(json(r#"{"met": false}"#));
        }
        // Wait (up to 10 s) until the other run's call is in flight too.
        a.fetch_add(1, Ordering::SeqCst);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while a.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(Value::object_from([("met", Value::Bool(a.load(Ordering::SeqCst) >= 2))]))
    });
    let options = Options { max_concurrency: 1, ..Options::default() };
    let ex = Arc::new(Executor::new(runner).with_time(clock()).with_options(options));
    for _ in 0..3 {
        let r = ex.run(&wf, json("{}")).unwrap();
        assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
    }
    let ids = seen.lock().unwrap().clone();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| *id == ids[0]), "three runs one after another on one worker: {ids:?}");

    meet.store(true, Ordering::SeqCst);
    let wf = Arc::new(wf);
    let both: Vec<_> = (0..2)
        .map(|_| {
            let (ex, wf) = (ex.clone(), wf.clone());
            std::thread::spawn(move || ex.run(&wf, json("{}")).unwrap())
        })
        .collect();
    for run in both {
        let r = run.join().unwrap();
        assert_eq!(r.status, RunStatus::Success, "{:?}", r.error);
        assert_eq!(show(&r.result), r#"{"met":true}"#, "the two runs' calls were in flight at once");
    }
    let ids = seen.lock().unwrap().clone();
    assert_ne!(ids[3], ids[4], "two runs at once on two workers");
}
