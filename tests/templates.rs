//! Templates built at run time (`map(xs, template=t)` with `t` text made by the program or
//! given to it) cost what they are (hostile round 12e): their text is capped, their compile
//! is charged fuel and memory per byte, their literals are held to the list limit, and an
//! error in one quotes a short head of its text, never the whole of it.

use tdsl::{Code, Engine, EvalError, Limits, Scope, Value};

/// The limit on a template's text (docs/language.md, "Limits").
const MAX_TEMPLATE_BYTES: usize = 64 * 1024;

/// The most an error about a template may say, however long the template: a short head of
/// the text, the message and the call.
const SHORT: usize = 2048;

fn vars(t: &str) -> Value {
    Value::object_from([("xs", Value::list(vec![Value::Int(1), Value::Int(2)])), ("t", Value::str(t))])
}

fn eval_with(engine: &Engine, src: &str, t: &str) -> Result<Value, EvalError> {
    let v = vars(t);
    let program = engine.compile_in(src, &Scope::from_vars(&v)).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    program.eval(&v)
}

fn eval(src: &str, t: &str) -> Result<Value, EvalError> {
    eval_with(&Engine::new(), src, t)
}

fn err(r: Result<Value, EvalError>) -> EvalError {
    match r {
        Ok(v) => panic!("gave a value of {} bytes", v.size_at_most(1 << 30)),
        Err(e) => e,
    }
}

/// `[1,1,…,1]` of `n` elements.
fn ones(n: usize) -> String {
    format!("[{}1]", "1,".repeat(n - 1))
}

#[test]
fn a_template_past_its_length_limit_is_refused_with_a_short_error() {
    // The text of finding 2: a list literal of 4 Mi elements, 8 MiB of text.
    for t in [ones(4 << 20), format!("{}item", " ".repeat(MAX_TEMPLATE_BYTES - 3))] {
        let e = err(eval("length(map(array=xs, template=t)[0])", &t));
        assert_eq!(e.code, Code::StringLimit, "{}", e.message);
        assert!(e.message.contains("more than the limit of 65536 bytes"), "{}", e.message);
        assert!(e.to_string().len() < SHORT, "{} bytes", e.to_string().len());
        let help = e.to_diagnostic().help.unwrap_or_default();
        assert!(help.contains("65536"), "{help}");
    }
    // At the limit, it compiles and runs.
    let t = format!("{}item", " ".repeat(MAX_TEMPLATE_BYTES - 4));
    assert_eq!(eval("map(array=xs, template=t)", &t), Ok(Value::list(vec![Value::Int(1), Value::Int(2)])));
    let t = ones(MAX_TEMPLATE_BYTES / 2 - 1);
    assert_eq!(t.len(), MAX_TEMPLATE_BYTES - 1);
    assert_eq!(eval("length(map(array=xs, template=t)[0])", &t), Ok(Value::Int((MAX_TEMPLATE_BYTES / 2 - 1) as i64)));
}

#[test]
fn a_templates_compile_is_charged_fuel_per_byte_every_time() {
    let t = format!("{}item", " ".repeat(20_000));
    let src = "map(array=xs, template=t)";
    let small = Engine::new().with_limits(Limits { fuel: 10_000, ..Limits::default() });
    let v = vars(&t);
    let program = small.compile_in(src, &Scope::from_vars(&v)).expect("compiles");
    // Cached after the first compile or not, the charge is the same.
    for _ in 0..2 {
        assert_eq!(err(program.eval(&v)).code, Code::FuelExhausted);
    }
    assert!(eval_with(&small, src, "item + 1").is_ok());
    let enough = Engine::new().with_limits(Limits { fuel: 40_000, ..Limits::default() });
    assert!(eval_with(&enough, src, &t).is_ok());
}

#[test]
fn a_templates_compile_is_charged_memory_per_byte() {
    let t = format!("{}item", " ".repeat(20_000));
    let src = "map(array=xs, template=t)";
    let small = Engine::new().with_limits(Limits { max_alloc_bytes: 1 << 20, ..Limits::default() });
    assert_eq!(err(eval_with(&small, src, &t)).code, Code::MemoryLimit);
    assert!(eval_with(&small, src, "item + 1").is_ok());
}

#[test]
fn a_literal_in_a_template_is_held_to_the_list_limit() {
    let engine = Engine::new().with_limits(Limits { max_list_len: 100, ..Limits::default() });
    let src = "length(map(array=xs, template=t)[0])";
    assert_eq!(eval_with(&engine, src, &ones(100)), Ok(Value::Int(100)));
    let object = format!("{{{}}}", (0..101).map(|i| format!("k{i}: 1")).collect::<Vec<_>>().join(", "));
    for t in [ones(101), format!("[[{}]]", ones(101)), object, format!("map(xs, template={})", ones(101))] {
        let e = err(eval_with(&engine, src, &t));
        assert_eq!(e.code, Code::ListLimit, "{t:.40}: {}", e.message);
        assert!(e.message.contains("of 101 elements exceeds the list limit of 100"), "{}", e.message);
    }
}

#[test]
fn a_literal_in_source_is_held_to_the_list_limit_at_compile() {
    let engine = Engine::new().with_limits(Limits { max_list_len: 100, ..Limits::default() });
    assert!(engine.compile(&format!("length({})", ones(100))).is_ok());
    for src in [format!("length({})", ones(101)), format!("map([1], template={})", ones(101))] {
        let diags = engine.compile(&src).err().unwrap_or_default();
        let d = diags.iter().find(|d| d.is_error()).expect("an error");
        assert_eq!(d.code, Code::ListLimit, "{}", d.message);
        assert!(d.help.is_some());
    }
}

#[test]
fn an_error_in_a_long_template_quotes_a_short_head_of_it() {
    let long = " ".repeat(MAX_TEMPLATE_BYTES - 400);
    let cases = [
        // Does not parse (finding 4's text), does not check, fails when applied.
        (format!("[{long}"), Code::DynamicTemplate),
        (format!("{long}item + nosuch(1)"), Code::DynamicTemplate),
        (format!("{long}item.a.b"), Code::RuntimeType),
        // Nested: the inner template is the outer one's own text, applied level after
        // level; each level holds its compile's charge (4 MiB for 64 KiB of text) while the
        // levels inside it run, so the evaluation's 256 MiB run out before the nesting limit.
        (format!("{long}length(map([item], template=t))"), Code::MemoryLimit),
        // Cut on a character boundary: `é` is the 200th and 201st bytes.
        (format!("[\"{}é{long}\", item / 0]", " ".repeat(197)), Code::DivisionByZero),
    ];
    for (t, code) in cases {
        let e = err(eval("map(array=xs, template=t)", &t));
        assert_eq!(e.code, code, "{}", e.to_string().chars().take(400).collect::<String>());
        let said = e.to_string();
        assert!(said.len() < SHORT, "{} bytes: {:.300}", said.len(), said);
        assert!(said.contains(&format!("… ({} bytes)", t.len())), "{said:.400}");
    }
}

#[test]
fn errors_quoting_a_value_quote_a_short_head_of_it() {
    let big = "x".repeat(1 << 20);
    for src in ["sort(xs, direction=t)", "format_datetime(t)"] {
        let e = err(eval(src, &big));
        let said = e.to_string();
        assert!(said.len() < SHORT, "{src}: {} bytes", said.len());
        assert!(said.contains("… (1048576 bytes)"), "{src}: {said:.300}");
    }
}

#[test]
fn the_template_cache_holds_a_bounded_amount_of_text() {
    let v = vars("");
    let program = Engine::new().compile_in("map(array=xs, template=t)", &Scope::from_vars(&v)).expect("compiles");
    for i in 0..64 {
        // Distinct templates of 16 KiB each: at most 256 KiB of them are kept.
        let t = format!("{}item + {i}", " ".repeat(16 << 10));
        let want = Value::list(vec![Value::Int(1 + i), Value::Int(2 + i)]);
        assert_eq!(program.eval(&vars(&t)), Ok(want), "template {i}, past the cache's limit too");
    }
    assert!(program.cached_templates() <= 16, "{} cached", program.cached_templates());
    assert!(program.cached_templates() >= 15, "{} cached", program.cached_templates());
}

/// The variables `xs`, `t` and `u`.
fn vars2(t: &str, u: &str) -> Value {
    Value::object_from([
        ("xs", Value::list(vec![Value::Int(1), Value::Int(2)])),
        ("t", Value::str(t)),
        ("u", Value::str(u)),
    ])
}

/// The VM's answer and the reference evaluator's, which must agree.
fn both(engine: &Engine, src: &str, v: &Value) -> Result<Value, EvalError> {
    let program = engine.compile_in(src, &Scope::from_vars(v)).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let (vm, reference) = (program.eval(v), program.eval_reference(v, v));
    assert_eq!(vm.as_ref().map_err(|e| e.code), reference.as_ref().map_err(|e| e.code), "{src}");
    vm
}

#[test]
fn nested_templates_of_different_texts_are_charged_together_while_they_are_held() {
    // Each template's compile is charged 64 bytes a byte of its text while the call that
    // compiled it runs: 20 KB of text each, 1.28 MB each, 2.56 MB together.
    let pad = " ".repeat(20_000);
    let (t, u) = (format!("{pad}length(map([item], template=u))"), format!("{pad}item"));
    let engine = |mib: usize| Engine::new().with_limits(Limits { max_alloc_bytes: mib << 20, ..Limits::default() });
    let src = "map(array=xs, template=t)";
    // The inner one alone fits in 2 MiB.
    assert_eq!(
        both(&engine(2), "map(array=xs, template=u)", &vars2(&t, &u)),
        Ok(Value::list(vec![Value::Int(1), Value::Int(2)]))
    );
    // Nested, the inner one is compiled while the outer one is held: past 2 MiB.
    let e = err(both(&engine(2), src, &vars2(&t, &u)));
    assert_eq!(e.code, Code::MemoryLimit, "{}", e.message);
    // 4 MiB holds both.
    assert_eq!(both(&engine(4), src, &vars2(&t, &u)), Ok(Value::list(vec![Value::Int(1), Value::Int(1)])));
}

#[test]
fn a_template_applied_in_a_loop_is_charged_while_held_not_for_good() {
    // The inner call compiles `u` (1.28 MB of charge) once per element of a thousand: its
    // charge is given back when each call ends, so 2 MiB are enough for all of them.
    let pad = " ".repeat(20_000);
    let (t, u) = ("length(map([item], template=u))".to_string(), format!("{pad}item"));
    let engine = Engine::new().with_limits(Limits { max_alloc_bytes: 2 << 20, ..Limits::default() });
    let v = Value::object_from([
        ("xs", Value::list((0..1000).map(Value::Int).collect())),
        ("t", Value::str(&t)),
        ("u", Value::str(&u)),
    ]);
    let got = both(&engine, "length(map(array=xs, template=t))", &v);
    assert_eq!(got, Ok(Value::Int(1000)));
}
