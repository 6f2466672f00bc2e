//! One budget of fuel and one of memory per run (docs/security.md, hostile round 11a), shared
//! by all its evaluations: parallel transform steps, fan-out children's transforms, the
//! tool answers the run holds. Through the library's plans (the hostile surface) with small
//! budgets, so that each case is fast; the flags are in `tests/budgets_cli.rs`.

use std::sync::Arc;

use serde_json::json;
use tdsl::testing::exec::{RunStatus, Runner, ToolCall, ToolError};
use tdsl::testing::plans::{upstream_target, PlanDesk, PlanLimits, PlanRun, RunPlanOptions, UpstreamTool};
use tdsl::{Code, Engine, Interrupt, MemoryPool, RunBudget, Value};

/// The red team's expression (finding 5), at a size a debug build runs in a blink.
fn group_keys(n: usize) -> String {
    format!("length(group_by(array=map(range(0,{n}), '{{k: to_string(item)}}'), key_path='k'))")
}

/// `k` independent steps, each one transform `expr`; the result is the first's.
fn parallel_plan(k: usize, expr: &str) -> String {
    let steps: Vec<_> = (0..k)
        .map(|i| json!({"execution_id": format!("s{i}"), "transform_responses": {"variables": {}, "transforms": {"r": expr}}}))
        .collect();
    json!({"instructions": steps, "response_reference_map": {"r": "REF:s0.r"}}).to_string()
}

/// The same steps one after another (each depends on the one before).
fn chained_plan(k: usize, expr: &str) -> String {
    let steps: Vec<_> = (0..k)
        .map(|i| {
            let mut s = json!({"execution_id": format!("s{i}"), "transform_responses": {"variables": {}, "transforms": {"r": expr}}});
            if i > 0 {
                s["dependencies"] = json!([format!("s{}", i - 1)]);
            }
            s
        })
        .collect();
    json!({"instructions": steps, "response_reference_map": {"r": format!("REF:s{}.r", k - 1)}}).to_string()
}

/// An upstream `t/big` that answers `{items: [n strings]}`, as the red team's (finding 6).
fn big_tool() -> Vec<UpstreamTool> {
    vec![UpstreamTool {
        server: "t".into(),
        name: "big".into(),
        description: Some("n items".into()),
        input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        output_schema: Some(
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}}),
        ),
    }]
}

fn big_runner() -> Arc<dyn Runner> {
    Arc::new(|call: &ToolCall<'_>| -> Result<Value, ToolError> {
        match call.endpoint().and_then(upstream_target) {
            Some(("t", "big")) => {
                let n = call.arguments.get_direct("n").and_then(Value::as_f64).unwrap_or(0.0) as i64;
                let items = (0..n).map(|i| Value::str(&format!("item number {i:>16}"))).collect();
                Ok(Value::object_from([("items", Value::list(items))]))
            }
            _ => Err(ToolError::permanent("no such tool")),
        }
    })
}

fn desk(limits: PlanLimits) -> PlanDesk {
    let root = std::env::temp_dir().join(format!("tdsl-run-budget-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&root);
    PlanDesk::for_root(root, &[] as &[&str]).expect("an empty root").with_upstream(big_tool()).with_limits(limits)
}

fn run(limits: PlanLimits, plan: &str, arguments: Value) -> PlanRun {
    desk(limits).run(plan, arguments, big_runner(), &RunPlanOptions::default()).expect("the plan runs")
}

fn error(run: &PlanRun) -> (String, String) {
    let e = run.trace.error.as_ref().expect("the run failed");
    (e.code.clone(), e.message.clone())
}

/// The fuel one evaluation of `src` spends, read from a budget of its own.
fn fuel_of(src: &str) -> u64 {
    let budget = Arc::new(RunBudget::new(u64::MAX / 2, 1 << 40));
    let program = Engine::new().compile(src).expect("it compiles");
    program
        .eval_interruptible(&Value::Null, &Value::Null, &Interrupt::new().with_budget(budget.clone()))
        .expect("it runs");
    budget.fuel_spent()
}

// ---------------------------------------------------------------------------------------
// finding 5: memory

/// Each step within the memory of one evaluation, the run over its own: the run fails with
/// E0406 naming the run's budget (the default evaluation limit, 256 MiB, is far away).
#[test]
fn eight_parallel_steps_fail_on_the_runs_memory() {
    let plan = parallel_plan(8, &group_keys(20_000));
    let small = PlanLimits { max_run_memory: 4 << 20, ..PlanLimits::default() };
    let r = run(small, &plan, Value::Null);
    assert_eq!(r.status, RunStatus::Failed, "{}", r.to_json());
    let (code, message) = error(&r);
    assert_eq!(code, "E0406", "{message}");
    assert!(message.contains("the run holds more values than its memory budget allows (4194304 bytes"), "{message}");
    // The same plan under the default budget runs.
    let r = run(PlanLimits::default(), &plan, Value::Null);
    assert_eq!(r.status, RunStatus::Success, "{}", r.to_json());
    assert_eq!(r.result, Some(Value::object_from([("r", Value::Int(20_000))])));
}

/// Results the run holds add up whatever the timing: eight steps each returning a list
/// of about 5 MB (by the cost of values) fail a run of 24 MiB, which any three fit.
#[test]
fn held_results_of_parallel_steps_add_up() {
    let expr = "map(range(0,20000), '{k: to_string(item)}')";
    let limits = |mib: u64| PlanLimits { max_run_memory: mib << 20, ..PlanLimits::default() };
    let r = run(limits(24), &parallel_plan(8, expr), Value::Null);
    assert_eq!(error(&r).0, "E0406", "{}", r.to_json());
    let r = run(limits(24), &parallel_plan(3, expr), Value::Null);
    assert_eq!(r.status, RunStatus::Success, "{}", r.to_json());
}

/// An evaluation finds the memory others hold: the budget is one for the run.
#[test]
fn evaluations_share_the_runs_memory() {
    let program = Engine::new().compile("length(map(range(0,10000), '[item]'))").expect("it compiles");
    let budget = Arc::new(RunBudget::new(1 << 40, 2 << 20));
    let run = Interrupt::new().with_budget(budget.clone());
    assert_eq!(program.eval_interruptible(&Value::Null, &Value::Null, &run), Ok(Value::Int(10_000)));
    // What it built is given back (its result is a number): the run holds nothing now.
    assert_eq!(budget.memory_held(), 0);
    assert!(budget.memory_peak() > 500_000, "it held what it built while it ran: {}", budget.memory_peak());
    // Another holder (a tool answer) takes most of it: the same evaluation no longer fits.
    budget.hold(budget.memory() - 100_000).expect("it fits");
    let e = program.eval_interruptible(&Value::Null, &Value::Null, &run).expect_err("no room left");
    assert_eq!(e.code, Code::MemoryLimit);
    assert!(e.message.contains("the run holds more values"), "{}", e.message);
    assert!(budget.hold(budget.memory()).is_err(), "nothing is held past the budget");
}

/// A pool shared by runs (`serve --max-memory-in-flight`): a run's bytes are taken from it
/// too, and given back when the run's budget goes.
#[test]
fn a_pool_bounds_the_runs_in_flight_together() {
    let pool = MemoryPool::new(3 << 20);
    let first = RunBudget::new(1 << 40, 2 << 20).within(&pool);
    let second = RunBudget::new(1 << 40, 2 << 20).within(&pool);
    first.hold(2 << 20).expect("within its own and the pool");
    assert_eq!(pool.memory_held(), 2 << 20);
    let e = second.hold(2 << 20).expect_err("the pool has 1 MiB left");
    assert!(e.contains("--max-memory-in-flight"), "{e}");
    assert_eq!(second.memory_held(), 0, "a refused hold holds nothing");
    drop(first);
    assert_eq!(pool.memory_held(), 0, "a run's end gives its bytes back");
    second.hold(2 << 20).expect("room again");
    assert_eq!(pool.memory_peak(), 2 << 20);

    // Through a plan: a pool smaller than one step's evaluation fails the run the same way.
    let pool = MemoryPool::new(2 << 20);
    let limits = PlanLimits { memory_in_flight: Some(pool.clone()), ..PlanLimits::default() };
    let r = run(limits, &parallel_plan(2, &group_keys(20_000)), Value::Null);
    let (code, message) = error(&r);
    assert_eq!(code, "E0406");
    assert!(message.contains("--max-memory-in-flight"), "{message}");
    assert_eq!(pool.memory_held(), 0, "the failed run gave its bytes back");
}

// ---------------------------------------------------------------------------------------
// finding 6: the answers a run holds

/// Twenty children each answering 10,000 items: the answers the run holds count against its
/// memory (about 1 MB each by the cost of values), the run fails with E0406 at the child that
/// does not fit; a budget that holds them all lets the same plan run.
#[test]
fn held_answers_count_against_the_runs_memory() {
    let plan = json!({"arguments": [{"name": "k", "type_name": "list<integer>", "required": true}],
        "instructions": [{"execution_id": "b", "tool_definition_path": "t/big",
            "parallel_execution": {"iterate_over": "REF:arguments.k", "child_argument_name": "n"}, "arguments": {},
            "transform_responses": {"variables": {"r": "REF:response"},
                "transforms": {"total": "sum(array=map(array=r, template=\"length(item.items)\"))"}}}],
        "response_reference_map": {"total": "REF:b.total"}})
    .to_string();
    let arguments = Value::object_from([("k", Value::list(vec![Value::Int(10_000); 20]))]);
    let small = PlanLimits { max_run_memory: 8 << 20, ..PlanLimits::default() };
    let r = run(small, &plan, arguments.clone());
    assert_eq!(r.status, RunStatus::Failed, "{}", r.to_json());
    let (code, message) = error(&r);
    assert_eq!(code, "E0406", "{message}");
    assert!(message.contains("memory budget allows (8388608 bytes"), "{message}");
    let r = run(PlanLimits { max_run_memory: 64 << 20, ..PlanLimits::default() }, &plan, arguments);
    assert_eq!(r.status, RunStatus::Success, "{}", r.to_json());
    assert_eq!(r.result, Some(Value::object_from([("total", Value::Int(200_000))])));
}

// ---------------------------------------------------------------------------------------
// finding 10: fuel

/// Fuel is summed over a run's evaluations, exactly: steps one after another spend `k`
/// times what one evaluation does, and a run's budget one unit short of that fails the last
/// step with E0401 naming the run's budget. Data-driven over sizes and step counts.
#[test]
fn fuel_is_summed_over_the_runs_steps() {
    for (n, k) in [(2_000, 2), (20_000, 3), (50_000, 5)] {
        let expr = format!("count(range(0,{n}), 'item > 0')");
        let each = fuel_of(&expr);
        assert!(each > n as u64, "{expr}: {each}");
        let plan = chained_plan(k, &expr);
        let exact = PlanLimits { max_run_fuel: each * k as u64, ..PlanLimits::default() };
        let r = run(exact, &plan, Value::Null);
        assert_eq!(r.status, RunStatus::Success, "{expr} x{k}: {}", r.to_json());
        // The trace records the run's budgets (for a replay).
        let limits = r.trace.limits.as_ref().expect("recorded");
        assert_eq!((limits.max_run_fuel, limits.max_run_memory), (each * k as u64, 512 << 20));
        let short = PlanLimits { max_run_fuel: each * k as u64 - 1, ..PlanLimits::default() };
        let r = run(short, &plan, Value::Null);
        let (code, message) = error(&r);
        assert_eq!(code, "E0401", "{expr} x{k}: {message}");
        assert!(message.contains("the run ran out of fuel"), "{message}");
        assert_eq!(r.trace.error.as_ref().and_then(|e| e.step.clone()), Some(format!("s{}", k - 1)), "the last step");
    }
}

/// The red team's burn (finding 10), small: forty transforms each far under the fuel of one
/// evaluation, over the run's together.
#[test]
fn many_cheap_transforms_spend_the_runs_fuel() {
    let expr = "count(range(0,2000), \"count(range(0,20), 'item > 0') > 0\")";
    let each = fuel_of(expr);
    let steps: Vec<_> = (0..4)
        .map(|i| {
            let transforms: serde_json::Map<String, serde_json::Value> =
                (0..10).map(|j| (format!("r{j}"), json!(expr))).collect();
            json!({"execution_id": format!("s{i}"), "transform_responses": {"variables": {}, "transforms": transforms}})
        })
        .collect();
    let plan = json!({"instructions": steps, "response_reference_map": {"r": "REF:s0.r0"}}).to_string();
    let limits = PlanLimits { max_run_fuel: each * 20, ..PlanLimits::default() };
    let r = run(limits, &plan, Value::Null);
    assert_eq!(error(&r).0, "E0401", "{}", r.to_json());
    // Forty of them fit in forty times one, give or take what a plan's transform pays for its
    // condition strings compiled at run time (a unit a byte each time, hostile round 12e),
    // which a standalone compile may fold: a tenth more.
    let r = run(PlanLimits { max_run_fuel: each * 44, ..PlanLimits::default() }, &plan, Value::Null);
    assert_eq!(r.status, RunStatus::Success, "{}", r.to_json());
}

/// The budgets have ranges: a plan desk with one out of range refuses to run (E0814).
#[test]
fn run_budgets_out_of_range_are_refused() {
    for limits in [
        PlanLimits { max_run_fuel: 0, ..PlanLimits::default() },
        PlanLimits { max_run_memory: 10, ..PlanLimits::default() },
    ] {
        assert!(limits.validate().is_err(), "{limits:?}");
        let refused = desk(limits).run(&parallel_plan(1, "1"), Value::Null, big_runner(), &RunPlanOptions::default());
        let e = refused.expect_err("refused before the run");
        assert!(e.to_string().contains("max_run_"), "{e}");
    }
}

/// The measure the run charges a held value with: shared parts reached twice count twice,
/// but the walk stops at its bound whatever the value's size.
#[test]
fn a_held_value_is_measured_within_a_bound() {
    let mut v = Value::Int(1);
    for _ in 0..60 {
        v = Value::list(vec![v.clone(), v]);
    }
    assert_eq!(v.alloc_bytes_within(1 << 20), 1 << 20, "2^60 nodes: the bound");
    let small = Value::list(vec![Value::Int(1), Value::str("x")]);
    let bytes = small.alloc_bytes_within(u64::MAX);
    assert!(bytes > 0 && bytes < 200, "{bytes}");
}

/// The bytes held at the peak, less a list of `n` numbers (what `range` builds): what
/// `src` is charged beyond it.
fn peak_beyond_range(src: &str, n: usize) -> u64 {
    let peak = |src: &str| {
        let budget = Arc::new(RunBudget::new(u64::MAX / 2, 1 << 40));
        let program = Engine::new().compile(src).expect("it compiles");
        program
            .eval_interruptible(&Value::Null, &Value::Null, &Interrupt::new().with_budget(budget.clone()))
            .expect("it runs");
        budget.memory_peak()
    };
    peak(src) - peak(&format!("length(range(0,{n}))"))
}

/// Values are charged close to what the allocator takes for them (finding 5: the count was
/// about half of it). The resident bytes an element, measured as the peak resident memory
/// of `tdsl eval` of a debug build over `length(range(0,500000))`'s (docs/security.md, round
/// 11a): the charge is within 0.9 and 1.5 times it for each shape.
#[test]
fn the_charge_is_close_to_what_the_allocator_takes() {
    let n = 50_000;
    for (template, resident) in [
        ("'{k: item}'", 226),
        ("'{a: item, b: item, c: item, d: item, e: item, f: item}'", 554),
        ("'[item]'", 65),
        ("'to_string(item) + \"-a-string-longer-than-23-bytes\"'", 82),
    ] {
        let src = format!("length(map(range(0,{n}), {template}))");
        let each = peak_beyond_range(&src, n) / n as u64;
        assert!(each * 10 >= resident * 9 && each * 10 <= resident * 15, "{template}: {each} bytes for {resident}");
    }
    let src = format!("length(group_by(array=map(range(0,{n}), '{{k: to_string(item)}}'), key_path='k'))");
    let each = peak_beyond_range(&src, n) / n as u64;
    assert!((406..=676).contains(&each), "group_by: {each} bytes for 451");
}

/// An answer that shares its string with the answers held before (an upstream that echoes
/// what it was given, a thousand times) holds it once: the run charges it once.
#[test]
fn an_answer_shared_between_children_is_charged_once() {
    let echo = UpstreamTool {
        server: "t".into(),
        name: "echo".into(),
        description: None,
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}, "i": {"type": "integer"}}}),
        output_schema: None,
    };
    let runner: Arc<dyn Runner> = Arc::new(|call: &ToolCall<'_>| -> Result<Value, ToolError> {
        Ok(Value::object_from([("text", call.arguments.get_direct("text").cloned().unwrap_or_default())]))
    });
    let plan = json!({"arguments": [{"name": "s", "type_name": "string", "required": true}],
        "instructions": [{"execution_id": "f", "tool_definition_path": "t/echo", "arguments": {"text": "REF:arguments.s"},
            "parallel_execution": {"iterate_over": (0..200).collect::<Vec<u32>>(), "child_argument_name": "i"}}],
        "response_reference_map": {"n": "REF:f.response.length"}})
    .to_string();
    // 200 answers of a 1 MiB string: 200 MiB if each were counted, 1 MiB shared.
    let arguments = Value::object_from([("s", Value::str(&"a".repeat(1 << 20)))]);
    let limits = PlanLimits { max_run_memory: 8 << 20, ..PlanLimits::default() };
    let desk = desk(limits).with_upstream(vec![echo]);
    let r = desk.run(&plan, arguments, runner, &RunPlanOptions::default()).expect("it runs");
    assert_eq!(r.status, RunStatus::Success, "{:.400}", r.to_json().to_string());
}
