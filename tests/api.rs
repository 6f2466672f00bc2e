//! The library API: host functions, references, sharing programs across threads.

mod common;

use std::sync::Arc;

use tdsl::{Code, Engine, Param, ReturnRule, Scope, Signature, Type, Value};

fn vars(json: &str) -> Value {
    serde_json::from_str(json).expect("test JSON")
}

fn engine_with_rate() -> Engine {
    let mut engine = Engine::new();
    engine.register_function(
        Signature::new(
            "exchange_rate",
            vec![Param::required("from", Type::Str), Param::optional("to", Type::Str, Value::from("EUR"))],
            ReturnRule::Fixed(Type::Number),
            "a made-up exchange rate",
        ),
        Arc::new(|args: &[Value]| match (args[0].as_str(), args[1].as_str()) {
            (Some("USD"), Some("EUR")) => Ok(Value::Float(0.5)),
            (Some(from), Some(to)) => Err(format!("no rate from {from} to {to}")),
            _ => Err("bad arguments".into()),
        }),
    );
    engine
}

#[test]
fn host_functions_are_called_positionally_and_by_keyword() {
    let engine = engine_with_rate();
    let v = vars(r#"{"amounts": [10, 20]}"#);
    let p = engine
        .compile_in("map(amounts, template=item * exchange_rate(from=\"USD\"))", &Scope::from_vars(&v))
        .expect("compiles");
    assert_eq!(p.eval(&v).expect("runs").to_string(), "[5.0,10.0]");
    let p = engine.compile("exchange_rate('USD', 'EUR')").expect("compiles");
    assert_eq!(p.eval(&Value::Null).expect("runs"), Value::Float(0.5));
}

#[test]
fn host_functions_are_checked_like_builtins() {
    let engine = engine_with_rate();
    let codes = |src: &str| -> Vec<Code> {
        engine.compile(src).expect_err("must not compile").into_iter().map(|d| d.code).collect()
    };
    assert_eq!(codes("exchange_rate()"), vec![Code::MissingArgument]);
    assert_eq!(codes("exchange_rate('USD', 'EUR', 'x')"), vec![Code::TooManyArguments]);
    assert_eq!(codes("exchange_rate(from='USD', too='EUR')"), vec![Code::UnknownKeyword]);
    assert_eq!(codes("exchange_rate(from=42)"), vec![Code::ArgumentType]);
    assert_eq!(codes("exchange_rate('USD', from='USD')"), vec![Code::DuplicateArgument]);
}

#[test]
fn host_function_errors_name_the_function() {
    let engine = engine_with_rate();
    let err = engine.compile("exchange_rate('GBP')").expect("compiles").eval(&Value::Null).expect_err("fails");
    assert_eq!(err.code, Code::HostFunction);
    assert_eq!(err.function.as_deref(), Some("exchange_rate"));
    assert!(err.message.contains("no rate from GBP to EUR"), "{}", err.message);
}

#[test]
fn references_lists_refs_and_free_names_including_inside_templates() {
    let engine = Engine::new();
    let p = engine
        .compile(r#"map(array=REF:scanner.files, template="item.size + REF:arguments.offset + limit") + extra"#)
        .expect("compiles");
    let refs = p.references();
    let paths: Vec<String> = refs
        .refs
        .iter()
        .map(|r| format!("{}{}", r.context, r.segments.iter().map(|s| format!(".{s}")).collect::<String>()))
        .collect();
    assert_eq!(paths, vec!["scanner.files", "arguments.offset"]);
    // The REF inside the template string points at its characters in the source.
    let src = p.source();
    let inner = &refs.refs[1];
    assert_eq!(&src[inner.span.start as usize..inner.span.end as usize], "REF:arguments.offset");
    let names: Vec<&str> = refs.names.iter().map(|(n, _)| &**n).collect();
    assert_eq!(names, vec!["limit", "extra"]);
}

#[test]
fn a_program_is_shared_across_threads() {
    let engine = Engine::new();
    let program = engine.compile("sum(array=xs, item_path=\"v\")").expect("compiles");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let p = program.clone();
            std::thread::spawn(move || {
                let xs: Vec<Value> = (0..100).map(|i| Value::object_from([("v", Value::Int(i * t))])).collect();
                p.eval(&Value::object_from([("xs", Value::list(xs))])).expect("runs")
            })
        })
        .collect();
    let sums: Vec<Value> = handles.into_iter().map(|h| h.join().expect("thread")).collect();
    assert_eq!(sums, vec![Value::Int(0), Value::Int(4950), Value::Int(9900), Value::Int(14850)]);
}

#[test]
fn dynamic_templates_are_cached_and_the_cache_is_bounded() {
    let engine = Engine::new().with_limits(tdsl::Limits { max_cached_templates: 2, ..tdsl::Limits::default() });
    let p = engine.compile("map(xs, template=t)").expect("compiles");
    // More distinct templates than the cache holds: every one still works.
    for (i, t) in ["item", "item + 1", "item * 2", "item - 1"].iter().enumerate() {
        let v = Value::object_from([("xs", Value::list(vec![Value::Int(3)])), ("t", Value::from(*t))]);
        let got = p.eval(&v).expect("runs");
        let want = [3, 4, 6, 2][i];
        assert_eq!(got, Value::list(vec![Value::Int(want)]), "{t}");
    }
}

#[test]
fn compile_never_panics_on_odd_input() {
    let engine = Engine::new();
    for src in
        ["", " ", "(", ")", "[[[", "\"", "'", "\\", "REF:", "REF:.", "a.", "a[", "f(,)", "{a:}", "1e999", "-", "not"]
    {
        let _ = engine.compile(src);
    }
}

#[test]
fn nesting_is_capped_whatever_the_limit_says() {
    // Test threads have 2 MiB stacks; a debug build needs ~6.5 KiB per level.
    // The largest depth a host may set (`tdsl::ranges::MAX_DEPTH`; more is E0409).
    let max = tdsl::ranges::MAX_DEPTH.max as usize;
    let engine = Engine::new().with_limits(tdsl::Limits { max_depth: max, ..tdsl::Limits::default() });
    for unit in ["(", "[", "{a: ", "f(", "not ", "-"] {
        let src = common::nested(unit, 20_000, "1");
        let errors = engine.compile(&src).expect_err("too deep");
        assert_eq!(errors[0].code, Code::NestingTooDeep, "{unit}");
    }
}

#[test]
fn eval_ref_gives_what_eval_gives_borrowing_only_path_reads() {
    use std::borrow::Cow;
    let record = vars(r#"{"profile": {"email": "ada@example.com", "age": 36, "tags": ["a", "b"]}, "n": 2}"#);
    let cases = [
        ("profile.email", true),
        ("profile.age", true),
        ("profile.tags", true),
        ("profile", true),
        ("profile.missing", false),
        ("profile.tags[1]", false),
        ("n + 1", false),
        ("upper(profile.email)", false),
        ("profile.email.length", false),
    ];
    let engine = Engine::new();
    for (src, borrowed) in cases {
        let program = engine.compile_in(src, &Scope::from_vars(&record)).expect("compiles");
        // Twice: the first read may fill the path's inline cache.
        for _ in 0..2 {
            let by_ref = program.eval_ref(&record);
            assert_eq!(
                by_ref.as_deref().map_err(|e| e.code),
                program.eval(&record).as_ref().map_err(|e| e.code),
                "{src}"
            );
            assert_eq!(matches!(by_ref, Ok(Cow::Borrowed(_))), borrowed, "{src}: borrowed?");
        }
    }
    // The output limit holds for borrowed results too.
    let small = Engine::new().with_limits(tdsl::Limits { max_output_bytes: 8, ..tdsl::Limits::default() });
    let program = small.compile_in("profile.email", &Scope::from_vars(&record)).expect("compiles");
    assert_eq!(program.eval_ref(&record).map_err(|e| e.code), Err(Code::OutputLimit));
    assert_eq!(program.eval(&record).map_err(|e| e.code), Err(Code::OutputLimit));
}

/// The public API is the crate's root (docs/embedding.md, "The public API"): every name the
/// guide lists is importable from there, and the only public modules are `ranges`, the
/// hidden `testing` and those of the binary and the fuzz targets.
#[test]
fn the_public_api_is_the_crate_root() {
    #[allow(unused_imports)]
    use tdsl::{
        render_plain, upstream_target, Analyzer, CheckedTool, Clock, Code, Diagnostic, Engine, EvalError, FileStore,
        Fit, FixedClock, FunctionTable, HostFn, Label, Limits, LineIndex, LocalStore, Location, Map, MemoryStore,
        Param, Plan, PlanCheck, PlanDesk, PlanDiagnostic, PlanLimits, Program, ReturnRule, Scope, Severity, Signature,
        StrEnum, SystemClock, ToolRoot, Type, TypeAt, UpstreamTool, Value,
    };
    #[cfg(feature = "engine")]
    #[allow(unused_imports)]
    use tdsl::{
        replay, Attempt, BreakerPolicy, BreakerState, CancelToken, ErrorKind, Event, Executor, FileAnswer, FileOp,
        FileRead, Guards, HostRunner, ManualTime, Observer, Options, PlanRun, RetryPolicy, RunLimits, RunPlanOptions,
        RunStatus, Runner, SeededRandom, StepStatus, StepTrace, SystemTime, Time, ToolCall, ToolEnv, ToolError, Trace,
        VersionRecord, Workflow,
    };
    // The composer's records, with every type their fields hold.
    #[cfg(feature = "compose")]
    #[allow(unused_imports)]
    use tdsl::{
        CompositionResult, DecompositionResult, ExecutionPlan, ExecutionStep, Intent, PhaseUsage, SubQuestion,
        ToolMapping,
    };
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).expect("src/lib.rs");
    let public: Vec<&str> =
        lib.lines().filter_map(|l| l.strip_prefix("pub mod ")).map(|l| l.trim_end_matches([';', ' ', '{'])).collect();
    assert_eq!(public, ["cli", "fuzzing", "ranges", "testing"], "public modules of src/lib.rs");
    assert_eq!(tdsl::ranges::CONCURRENCY.name, "concurrency");
}
