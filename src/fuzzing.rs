//! Entry points for fuzzing, shared by the cargo-fuzz targets in `fuzz/` and by
//! `tests/fuzz_regressions.rs`, which replays every saved input on stable Rust.
//!
//! Each entry takes raw bytes and checks what must hold for any input (SPEC §4.8): no
//! panic, no hang, and answers that are consistent — every diagnostic points inside the
//! text it is about and renders, printed syntax parses back to the same tree, the VM and
//! the reference evaluator agree, equality agrees with hashing and the total order. A
//! panic here is a bug: either in tdsl, or in an invariant this module states.
//!
//! Structured inputs (expressions, values) are drawn from the bytes with
//! [`arbitrary::Unstructured`], so a saved input replays exactly. Nothing here is part of
//! the language: it exists for testing and may change at any time.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arbitrary::{Result, Unstructured};

use crate::diagnostic::{render_plain, Diagnostic};
use crate::functions::{FunctionTable, ParamKind};
use crate::span::{SourceMap, Span, Spanned};
use crate::syntax::ast::{Arg, BinaryOp, Call, Expr, ExprKind, RefPath, StrLit, UnaryOp};
use crate::value::{Map, SmolStr, Value};
use crate::{Engine, FixedClock, Limits, Scope};

/// Any text as an expression: the hand-written parser agrees with the pest grammar; parse,
/// dump, and — when it parsed — print and parse again.
pub fn parse(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    if let Err(e) = crate::syntax::fast_path_agrees(src) {
        panic!("{e}");
    }
    let parsed = crate::syntax::parse(src);
    check_diagnostics(&parsed.diagnostics, src);
    let _ = crate::syntax::dump(&parsed.expr);
    if parsed.diagnostics.is_empty() {
        check_round_trip(&parsed.expr);
    }
}

/// Any text through every stage: parse, check, fold, compile, disassemble, and a short run
/// with no variables. Compiled twice: in an open scope (every name is `any`) and against
/// a few typed variables, so static type errors are reached too.
pub fn compile(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let engine = engine(small_limits(20_000));
    let vars = sample_vars();
    for scope in [Scope::open(), Scope::from_vars(&vars)] {
        // The one-pass compiler answers only with the reference pipeline's program.
        if let Err(e) = crate::engine::direct_agrees(&engine, src, &scope) {
            panic!("`{src}`: the one-pass compiler disagrees: {e}");
        }
        let analysis = engine.analyze(src, &scope);
        check_diagnostics(&analysis.diagnostics, src);
        if let Some(program) = analysis.program {
            let _ = program.disassemble();
            if let Err(e) = program.eval(&vars) {
                check_diagnostics(&[e.to_diagnostic()], src);
            }
        }
    }
}

/// A generated expression (printed to text) with generated variables, run under a small
/// fuel limit by the VM and by the reference evaluator, which must agree.
pub fn eval(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(case) = EvalCase::generate(&mut u) else { return };
    case.run();
}

/// Any bytes as a `.tool` file: load it, render every diagnostic, compile every transform
/// expression in it with spans mapped back into the file, and analyse it.
pub fn tool(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let (tool, diagnostics) = crate::tool::load(src);
    check_diagnostics(&diagnostics, src);
    let index = crate::tool::LineIndex::new(src);
    for d in &diagnostics {
        let _ = index.position(d.span);
    }
    // The analysis of the file on its own (callees assumed) must hold the same invariants.
    let mut analyzer = crate::analysis::Analyzer::with_engine(
        crate::analysis::ToolRoot::assumed(std::env::temp_dir().join("tdsl-fuzz-no-such-root")),
        engine(small_limits(1_000)),
    );
    check_diagnostics(&analyzer.check_source("fuzz.tool", src).diagnostics, src);
    let Some(tool) = tool else { return };
    let mut sites = tool.ref_sites();
    let mut transforms: Vec<&crate::tool::Transform> = Vec::new();
    transforms.extend(tool.transform_arguments.iter().chain(tool.transform_responses.iter()));
    for ins in tool.instructions() {
        sites.extend(ins.ref_sites());
        transforms.extend(ins.transform_arguments.iter().chain(ins.transform_responses.iter()));
        if let Some(crate::tool::DoneCheck::Expression(e)) = &ins.done_check {
            check_embedded(e, src);
        }
    }
    for site in &sites {
        assert!(src.get(site.span.range()).is_some(), "REF span {} outside the file", site.span);
        for seg in std::iter::once(&site.path.context).chain(&site.path.segments) {
            assert!(src.get(seg.span.range()).is_some(), "REF segment span {} outside the file", seg.span);
        }
    }
    for t in transforms {
        for (_, expr) in &t.transforms {
            check_embedded(expr, src);
        }
    }
}

/// Any bytes as a composite `.tool` file, analysed and — when it has a plan — run: the
/// analysis must not panic and its diagnostics must point into the file; the run (every
/// callee answered by a deterministic echo runner on a virtual clock, under small guards)
/// must end, give the same result and trace twice (one call at a time), give the same
/// result with two calls at a time when nothing failed, and replay from its trace without
/// divergence.
#[cfg(feature = "engine")]
pub fn run(data: &[u8]) {
    use crate::analysis::{Analyzer, ToolRoot};
    use crate::exec::{replay, Executor, ManualTime, Options, SeededRandom, ToolCall, ToolError, Workflow};

    let Ok(src) = std::str::from_utf8(data) else { return };
    // A root with no files: every callee is missing and answered by the runner.
    let root = ToolRoot::assumed(std::env::temp_dir().join("tdsl-fuzz-no-such-root"));
    let mut analyzer = Analyzer::with_engine(root, engine(small_limits(20_000)));
    let checked = analyzer.check_source("fuzz.tool", src);
    check_diagnostics(&checked.diagnostics, src);
    let arguments =
        checked.tool.as_ref().map_or_else(|| Value::object_from::<&str>([]), |t| sample_arguments(&t.arguments));
    let Ok(workflow) = Workflow::from_checked(analyzer, checked) else { return };
    // Echoes its arguments; `fail` in them makes a permanent error, `busy` a transient one.
    let runner = |call: &ToolCall<'_>| -> std::result::Result<Value, ToolError> {
        match call.arguments {
            Value::Object(m) if m.contains_key("fail") => Err(ToolError::permanent("asked to fail")),
            Value::Object(m) if m.contains_key("busy") && call.attempt < 2 => Err(ToolError::transient("busy")),
            args => Ok(Value::object_from([("echo", args.clone()), ("tool", Value::str(call.tool_path))])),
        }
    };
    // One call at a time: two steps that fail at the same virtual instant race on real
    // threads (which one fails the run and which one is cancelled), so only a sequential
    // run is reproducible to the byte. The concurrent run below must agree with it
    // whenever nothing failed.
    let mut options = Options { max_concurrency: 1, max_depth: 4, ..Options::default() };
    options.guards.max_steps = Some(200);
    options.guards.max_fan_out = 50;
    options.retry.max_retries = 1;
    let executor = |options: &Options| {
        Executor::new(runner)
            .with_time(Arc::new(ManualTime::new(0)))
            .with_random(Arc::new(SeededRandom::new(7)))
            .with_options(options.clone())
    };
    let (Ok(first), Ok(second)) =
        (executor(&options).run(&workflow, arguments.clone()), executor(&options).run(&workflow, arguments.clone()))
    else {
        return; // refused by a guard, before anything ran
    };
    let concurrent = Options { max_concurrency: 2, ..options.clone() };
    if let Ok(parallel) = executor(&concurrent).run(&workflow, arguments) {
        if first.status == crate::exec::RunStatus::Success {
            assert_eq!(parallel.status, first.status, "the run ended otherwise with two calls at a time");
            assert_eq!(parallel.result, first.result, "two calls at a time gave another result");
        }
    }
    let normalized = |t: &crate::exec::Trace| {
        let mut t = t.clone();
        t.max_in_flight = 0;
        t.to_json()
    };
    assert_eq!(first.status, second.status, "the same run ended two ways");
    assert_eq!(first.result, second.result, "the same run gave two results");
    assert_eq!(normalized(&first.trace), normalized(&second.trace), "the same run left two traces");
    if let Ok(replayed) = replay(&workflow, &first.trace, options) {
        assert!(replayed.divergences.is_empty(), "the replay diverged: {:?}", replayed.divergences);
        assert_eq!(replayed.run.result, first.result, "the replay gave another result");
    }
}

/// Arguments for a tool's declared parameters: a small value of each declared type.
#[cfg(feature = "engine")]
fn sample_arguments(params: &[crate::tool::Param]) -> Value {
    use crate::tool::TypeName;
    fn sample(t: &TypeName) -> Value {
        match t {
            TypeName::String | TypeName::File => Value::str("a.txt"),
            TypeName::Number => Value::Float(1.5),
            TypeName::Integer => Value::Int(3),
            TypeName::Boolean => Value::Bool(true),
            TypeName::Object => Value::object_from([("k", Value::Int(1))]),
            TypeName::List(item) => {
                let item = item.as_deref().map_or(Value::Int(1), sample);
                Value::list(vec![item.clone(), item])
            }
            TypeName::Any => Value::Null,
        }
    }
    Value::object_from(params.iter().map(|p| (p.name.node.as_str(), sample(&p.type_or_any()))))
}

/// An expression written inside a JSON string: its diagnostics, mapped through the
/// string's escapes, must point inside the file.
fn check_embedded(expr: &crate::tool::JsonStr, file: &str) {
    let analysis = engine(small_limits(1_000)).analyze(&expr.value, &Scope::open());
    check_diagnostics(&analysis.diagnostics, &expr.value);
    let mapped: Vec<Diagnostic> =
        analysis.diagnostics.into_iter().map(|d| d.map_spans(&|s| expr.map_span(s))).collect();
    check_diagnostics(&mapped, file);
}

/// Operations on generated values: equality, hashing and the total order agree; JSON
/// round-trips; segments, indexing and operators answer without panicking, consistently.
pub fn value_ops(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(a), Ok(b), Ok(c)) = (value(&mut u, 3), value(&mut u, 3), value(&mut u, 3)) else { return };
    for (x, y) in [(&a, &b), (&b, &c), (&a, &c)] {
        assert_eq!(x.total_cmp(y), y.total_cmp(x).reverse(), "antisymmetry: {x} vs {y}");
        assert_eq!(x == y, x.total_cmp(y) == Ordering::Equal, "== agrees with the order: {x} vs {y}");
        if x == y {
            assert_eq!(hash(x), hash(y), "equal values hash alike: {x} and {y}");
        }
    }
    let mut sorted = [&a, &b, &c];
    sorted.sort_by(|x, y| x.total_cmp(y));
    assert_ne!(sorted[0].total_cmp(sorted[2]), Ordering::Greater, "transitivity: {a}, {b}, {c}");
    assert_eq!(a.total_cmp(&a), Ordering::Equal);

    let text = a.to_string();
    let back: Value = serde_json::from_str(&text).expect("a value's JSON parses");
    assert_eq!(back, a, "JSON round trip of {text}");
    match serde_json::to_value(&a) {
        Ok(as_json) => assert_eq!(Value::from(&as_json), a, "serde_json::Value round trip of {text}"),
        Err(e) => assert!(a.depth() > crate::value::MAX_SERIALIZE_DEPTH, "{text} does not convert: {e}"),
    }

    let segs = ["length", "first", "last", "0", "1", "path", "file_name", "parent_directory", "a", "response"];
    let seg = text_from(&mut u).unwrap_or_default();
    for s in segs.iter().copied().chain(std::iter::once(seg.as_str())) {
        let one = a.segment(s);
        let key: Arc<str> = Arc::from(s);
        let walked = a.walk(std::slice::from_ref(&key)).map(|v| v.into_owned()).map_err(|(_, e)| e);
        assert_eq!(one, walked, "segment and walk agree on {text} . {s}");
        let path = crate::value::Path::new(vec![key.clone(), key.clone()]);
        let twice = a.walk(&path).map(|v| v.into_owned());
        assert_eq!(a.walk_path(&path).map(|v| v.into_owned()), twice, "walk_path and walk agree on {text}");
        let _ = a.walk_ref(std::slice::from_ref(&key));
        let _ = a.index(&Value::str(s));
    }
    let _ = a.index(&b);

    let limits = Limits { max_string_len: 64, max_list_len: 8, ..Limits::default() };
    for op in BINARY_OPS {
        let r = crate::ops::binary(op, &a, &b, &limits);
        match (op, &r) {
            (BinaryOp::Eq, _) => assert_eq!(r, Ok(Value::Bool(a == b))),
            (BinaryOp::Ne, _) => assert_eq!(r, Ok(Value::Bool(a != b))),
            (BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge, Ok(Value::Bool(got)))
                if !a.is_null() && !b.is_null() =>
            {
                let ord = a.total_cmp(&b);
                let want = match op {
                    BinaryOp::Lt => ord == Ordering::Less,
                    BinaryOp::Le => ord != Ordering::Greater,
                    BinaryOp::Gt => ord == Ordering::Greater,
                    _ => ord != Ordering::Less,
                };
                assert_eq!(*got, want, "{a} {} {b} agrees with the total order", op.symbol());
            }
            (_, Ok(Value::Str(s))) => assert!(s.len() <= limits.max_string_len),
            (_, Ok(Value::List(l))) => assert!(l.len() <= limits.max_list_len),
            (_, Ok(Value::Float(f))) => assert!(f.is_finite()),
            _ => {}
        }
    }
    let _ = crate::ops::neg(&a);
    let mut out = String::new();
    a.join_text(&mut out);
    let _ = (a.key_text(), a.truthy(), a.depth(), a.size_at_most(1 << 20));
}

const BINARY_OPS: [BinaryOp; 13] = [
    BinaryOp::Or,
    BinaryOp::And,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
];

fn hash(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// Every span of every diagnostic lies inside `src` on character boundaries, and the
/// diagnostics render.
pub fn check_diagnostics(diagnostics: &[Diagnostic], src: &str) {
    for d in diagnostics {
        for span in std::iter::once(d.span).chain(d.secondary.iter().map(|l| l.span)) {
            assert!(
                src.get(span.range()).is_some(),
                "{:?} `{}`: span {span} is not inside the source",
                d.code,
                d.message
            );
        }
    }
    let _ = render_plain(diagnostics, "fuzz", src);
}

/// Printing `e` and parsing the text gives `e` back, spans aside.
pub fn check_round_trip(e: &Expr) {
    let printed = crate::syntax::print(e);
    let again = crate::syntax::parse(&printed);
    assert!(again.diagnostics.is_empty(), "printed `{printed}` does not parse: {:?}", again.diagnostics);
    assert_eq!(strip_spans(&again.expr), strip_spans(e), "printed as `{printed}`");
}

/// A copy of the tree with every span (and string source map) reset, for comparing trees
/// that were written differently.
pub fn strip_spans(e: &Expr) -> Expr {
    let name = |n: &Spanned<Arc<str>>| Spanned::new(n.node.clone(), Span::default());
    let b = |e: &Expr| Box::new(strip_spans(e));
    let kind = match &e.kind {
        ExprKind::Str(s) => ExprKind::Str(StrLit { value: s.value.clone(), map: SourceMap::default() }),
        ExprKind::Ref(r) => {
            ExprKind::Ref(RefPath { context: name(&r.context), segments: r.segments.iter().map(name).collect() })
        }
        ExprKind::Field(x, seg) => ExprKind::Field(b(x), name(seg)),
        ExprKind::Index(xk) => ExprKind::Index(Box::new([strip_spans(&xk[0]), strip_spans(&xk[1])])),
        ExprKind::List(items) => ExprKind::List(items.iter().map(strip_spans).collect()),
        ExprKind::Object(entries) => ExprKind::Object(entries.iter().map(|(k, v)| (name(k), strip_spans(v))).collect()),
        ExprKind::Call(c) => ExprKind::Call(Call {
            name: name(&c.name),
            args: c
                .args
                .iter()
                .map(|a| Arg { keyword: a.keyword.as_ref().map(name), value: strip_spans(&a.value) })
                .collect(),
        }),
        ExprKind::Unary(op, x) => ExprKind::Unary(*op, b(x)),
        ExprKind::Binary(op, lr) => ExprKind::Binary(*op, Box::new([strip_spans(&lr[0]), strip_spans(&lr[1])])),
        other => other.clone(),
    };
    Expr::new(kind, Span::default())
}

fn engine(limits: Limits) -> Engine {
    Engine::new().with_limits(limits).with_clock(Arc::new(FixedClock(1_767_225_600_123)))
}

/// Limits small enough that a fuzzer's input runs in milliseconds.
fn small_limits(fuel: u64) -> Limits {
    Limits {
        fuel,
        max_string_len: 1 << 16,
        max_list_len: 1 << 12,
        max_output_bytes: 1 << 18,
        max_cached_templates: 8,
        max_alloc_bytes: 1 << 22,
        ..Limits::default()
    }
}

fn sample_vars() -> Value {
    serde_json::from_str(
        r#"{"a": 1, "b": 2.5, "s": "item.score", "name": "Ada", "flag": true, "none": null,
            "items": [{"name": "x", "score": 3, "tags": ["t"]}, {"name": "y", "score": 1.5, "tags": []}],
            "data": {"path": "dir/file.txt", "items": [1, 2, 3], "nested": {"a": [null, "z"]}}}"#,
    )
    .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// generated expressions

/// A generated expression tree of the shapes the parser builds (spans left at zero), with
/// calls to the built-in functions, template strings and REFs.
pub fn expr(u: &mut Unstructured<'_>, depth: u32) -> Result<Expr> {
    Gen::new().expr(u, Scope0::default(), depth)
}

/// One generated evaluation: source printed from a generated tree, variables, and limits.
#[derive(Debug)]
pub struct EvalCase {
    /// The generated tree.
    pub expr: Expr,
    /// `print(expr)`.
    pub source: String,
    /// The variables (an object).
    pub vars: Value,
    /// Compile in an open scope (names are `any`) rather than against the variables.
    pub open_scope: bool,
    /// The limits to run under.
    pub limits: Limits,
    /// Polls of an interrupt after which it fires, for the interrupted run.
    pub interrupt_after: u64,
}

impl EvalCase {
    /// Draws a case from `u`.
    pub fn generate(u: &mut Unstructured<'_>) -> Result<EvalCase> {
        let g = Gen::new();
        let tight = u.ratio(1, 4)?;
        let limits = if tight {
            Limits { max_depth: 12, max_string_len: 16, max_list_len: 8, max_output_bytes: 256, ..small_limits(0) }
        } else {
            small_limits(0)
        };
        let limits = Limits {
            fuel: u.int_in_range(0..=50_000)?,
            max_cached_templates: u.int_in_range(0..=4)?,
            max_alloc_bytes: u.int_in_range(0..=1 << 20)?,
            ..limits
        };
        let interrupt_after = u.int_in_range(0..=3)?;
        let open_scope = u.ratio(1, 4)?;
        let mut vars = Map::default();
        for _ in 0..u.int_in_range(0..=4)? {
            vars.insert(SmolStr::new(*u.choose(&VAR_NAMES)?), value(u, 3)?);
        }
        let expr = g.expr(u, Scope0::default(), 6)?;
        let source = crate::syntax::print(&expr);
        Ok(EvalCase { expr, source, vars: Value::object(vars), open_scope, limits, interrupt_after })
    }

    /// Compiles and runs the case, checking every invariant.
    pub fn run(&self) {
        let src = &self.source;
        let parsed = crate::syntax::parse(src);
        let too_deep = parsed.diagnostics.iter().any(|d| d.code == crate::Code::NestingTooDeep);
        if !too_deep {
            assert!(parsed.diagnostics.is_empty(), "generated `{src}` does not parse: {:?}", parsed.diagnostics);
            assert_eq!(strip_spans(&parsed.expr), strip_spans(&self.expr), "printed as `{src}`");
        }
        let engine = engine(self.limits.clone());
        let scope = if self.open_scope { Scope::open() } else { Scope::from_vars(&self.vars) };
        let analysis = engine.analyze(src, &scope);
        check_diagnostics(&analysis.diagnostics, src);
        let Some(program) = analysis.program else { return };
        let _ = program.disassemble();
        let vm = program.eval(&self.vars);
        let again = program.eval(&self.vars);
        let reference = program.eval_reference(&self.vars, &self.vars);
        for r in [&vm, &reference] {
            if let Err(e) = r {
                check_diagnostics(&[e.to_diagnostic()], src);
            }
        }
        // Fuel and memory are budgets the two evaluators spend differently: the VM runs
        // the folded program (a constant object or list costs nothing at run time), the
        // reference evaluator the unfolded tree. Past either budget only "no panic" holds.
        let out_of_fuel = |r: &std::result::Result<Value, crate::EvalError>| matches!(r, Err(e) if matches!(e.code, crate::Code::FuelExhausted | crate::Code::MemoryLimit));
        assert!(same(&vm, &again), "`{src}` gave {vm:?}, then {again:?}");
        // Interrupted after a few polls: the same answer, or the interrupt's error.
        let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let after = self.interrupt_after;
        let counter = polls.clone();
        let interrupt = crate::Interrupt::new().with_probe(Arc::new(move || {
            (counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= after)
                .then_some(crate::InterruptReason::Cancelled)
        }));
        // The program `Engine::compile_in` gives (in one pass, when the one-pass compiler
        // answers) runs as the analysis's does, and so does its typed tree, built later.
        match crate::engine::direct_agrees(&engine, src, &scope) {
            Err(e) => panic!("`{src}`: the one-pass compiler disagrees: {e}"),
            Ok(answered) => {
                if let Ok(compiled) = engine.compile_in(src, &scope) {
                    let (a, b) = (compiled.eval(&self.vars), compiled.eval_reference(&self.vars, &self.vars));
                    assert!(same(&a, &vm), "`{src}` (one pass: {answered}) gave {a:?}, the analysis's {vm:?}");
                    assert!(same(&b, &reference), "`{src}`: reference evaluation {b:?} against {reference:?}");
                } else {
                    panic!("`{src}`: compile_in failed where analyze made a program");
                }
            }
        }
        let stopped = program.eval_interruptible(&self.vars, &self.vars, &interrupt);
        assert!(
            same(&stopped, &vm) || matches!(&stopped, Err(e) if e.code == crate::Code::Interrupted),
            "`{src}` interrupted gave {stopped:?}, uninterrupted {vm:?}"
        );
        if !out_of_fuel(&vm) && !out_of_fuel(&reference) {
            assert!(same(&vm, &reference), "`{src}` with {}: vm {vm:?}, reference {reference:?}", self.vars);
        }
    }
}

/// Same value (and same JSON text), or the same error code.
fn same(x: &std::result::Result<Value, crate::EvalError>, y: &std::result::Result<Value, crate::EvalError>) -> bool {
    match (x, y) {
        (Ok(a), Ok(b)) => a == b && a.to_string() == b.to_string(),
        (Err(a), Err(b)) => a.code == b.code,
        _ => false,
    }
}

const VAR_NAMES: [&str; 8] = ["a", "b", "s", "items", "data", "name", "flag", "none"];
const SEGMENTS: [&str; 14] = [
    "a",
    "name",
    "score",
    "items",
    "tags",
    "path",
    "length",
    "first",
    "last",
    "file_name",
    "parent_directory",
    "0",
    "1",
    "response",
];
const REF_CONTEXTS: [&str; 5] = ["arguments", "response", "scan", "step-1", "s_2"];
const STRINGS: [&str; 22] = [
    "",
    "a",
    "name",
    "score",
    "item.score",
    "item.name",
    "score > 1",
    "item",
    "asc",
    "desc",
    "iso",
    "unix",
    ", ",
    "a/b.txt",
    "é€😀",
    "{\"a\": [1, 2.5, null]}",
    "[1, 2",
    "profile.age",
    "item.tags",
    "0",
    "length",
    "current + 1",
];

/// What names are bound where the generator is: `item`, `current`, and the name `as` gave
/// the element of an enclosing template.
#[derive(Clone, Copy, Default)]
struct Scope0 {
    item: bool,
    current: bool,
    named: Option<&'static str>,
}

/// Names calls give their elements with `as` (SPEC §4.4); some are refused (a keyword, a
/// bound name, not a name at all), so those diagnostics are reached too.
const ELEMENT_NAMES: [&str; 6] = ["el", "row", "el", "item", "null", "2x"];

struct Gen {
    funcs: Vec<crate::functions::Signature>,
}

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

fn spanned(s: &str) -> Spanned<Arc<str>> {
    Spanned::new(Arc::from(s), Span::default())
}

fn str_lit(s: &str) -> Expr {
    node(ExprKind::Str(StrLit { value: Arc::from(s), map: SourceMap::default() }))
}

impl Gen {
    fn new() -> Gen {
        let mut funcs: Vec<_> = FunctionTable::builtins().iter().map(|f| f.signature.clone()).collect();
        funcs.sort_by(|x, y| x.name.cmp(&y.name));
        Gen { funcs }
    }

    fn expr(&self, u: &mut Unstructured<'_>, scope: Scope0, depth: u32) -> Result<Expr> {
        if depth == 0 || u.is_empty() {
            return self.leaf(u, scope);
        }
        let d = depth - 1;
        Ok(match u.int_in_range(0..=13)? {
            0..=2 => return self.leaf(u, scope),
            3 => node(ExprKind::Field(Box::new(self.expr(u, scope, d)?), spanned(u.choose(&SEGMENTS)?))),
            4 => node(ExprKind::Index(Box::new([self.expr(u, scope, d)?, self.expr(u, scope, d)?]))),
            5 => {
                let n = u.int_in_range(0..=3)?;
                node(ExprKind::List((0..n).map(|_| self.expr(u, scope, d)).collect::<Result<_>>()?))
            }
            6 => {
                let mut entries = Vec::new();
                for _ in 0..u.int_in_range(0..=3)? {
                    let key = if u.ratio(1, 4)? { text_from(u)? } else { u.choose(&SEGMENTS)?.to_string() };
                    entries.push((spanned(&key), self.expr(u, scope, d)?));
                }
                node(ExprKind::Object(entries))
            }
            7 => {
                let op = if u.arbitrary()? { UnaryOp::Not } else { UnaryOp::Neg };
                node(ExprKind::Unary(op, Box::new(self.expr(u, scope, d)?)))
            }
            8 | 9 => {
                let op = *u.choose(&BINARY_OPS)?;
                node(ExprKind::Binary(op, Box::new([self.expr(u, scope, d)?, self.expr(u, scope, d)?])))
            }
            _ => self.call(u, scope, d)?,
        })
    }

    fn leaf(&self, u: &mut Unstructured<'_>, scope: Scope0) -> Result<Expr> {
        Ok(match u.int_in_range(0..=9)? {
            0 => node(ExprKind::Null),
            1 => node(ExprKind::Bool(u.arbitrary()?)),
            // Literals are never negative: `-1` is negation applied to `1`.
            2 => node(ExprKind::Int(int(u)?.checked_abs().unwrap_or(0))),
            3 => node(ExprKind::Float(float(u)?.abs())),
            4 => str_lit(&text_from(u)?),
            5 => {
                let context = spanned(u.choose(&REF_CONTEXTS)?);
                let n = u.int_in_range(0..=3)?;
                let segments = (0..n).map(|_| u.choose(&SEGMENTS).map(|s| spanned(s))).collect::<Result<_>>()?;
                node(ExprKind::Ref(RefPath { context, segments }))
            }
            6 if scope.item => node(ExprKind::Name(Arc::from("item"))),
            8 if scope.named.is_some() && u.arbitrary()? => {
                node(ExprKind::Name(Arc::from(scope.named.unwrap_or("item"))))
            }
            7 if scope.current => node(ExprKind::Name(Arc::from("current"))),
            6 | 7 if u.ratio(1, 8)? => node(ExprKind::Name(Arc::from(if u.arbitrary()? { "item" } else { "current" }))),
            _ => node(ExprKind::Name(Arc::from(*u.choose(&VAR_NAMES)?))),
        })
    }

    /// A call of a known function (sometimes an unknown one), with arguments for its
    /// parameters passed positionally or by keyword, some left out, sometimes one too many.
    fn call(&self, u: &mut Unstructured<'_>, scope: Scope0, depth: u32) -> Result<Expr> {
        let sig = u.choose(&self.funcs)?;
        let name = if u.ratio(1, 32)? { "no_such_function" } else { &*sig.name };
        let mut args = Vec::new();
        let mut by_keyword = false;
        // A quarter of the calls that take templates name their element.
        let named = if sig.takes_element_name() && u.ratio(1, 4)? { Some(*u.choose(&ELEMENT_NAMES)?) } else { None };
        for p in &sig.params {
            if !p.is_required() && u.ratio(1, 3)? {
                by_keyword = true;
                continue;
            }
            by_keyword |= u.ratio(1, 3)?;
            let value = if !p.one_of.is_empty() && u.ratio(3, 4)? {
                str_lit(u.choose(p.one_of)?)
            } else {
                match p.kind {
                    ParamKind::Value | ParamKind::Lazy => self.expr(u, scope, depth)?,
                    ParamKind::Template | ParamKind::PathTemplate => {
                        // A refused name (`null`, `2x`) is never written as a name.
                        let usable = named.filter(|n| crate::syntax::is_identifier(n) && *n != "null");
                        self.template(u, Scope0 { named: usable.or(scope.named), ..scope }, depth)?
                    }
                    ParamKind::Operations => {
                        let inner = Scope0 { current: true, ..scope };
                        let n = u.int_in_range(0..=3)?;
                        node(ExprKind::List((0..n).map(|_| self.expr(u, inner, depth)).collect::<Result<_>>()?))
                    }
                }
            };
            args.push(Arg { keyword: by_keyword.then(|| spanned(&p.name)), value });
        }
        if sig.any_keywords {
            for _ in 0..u.int_in_range(0..=3)? {
                let key = *u.choose(&SEGMENTS[..11])?;
                args.push(Arg { keyword: Some(spanned(key)), value: self.expr(u, scope, depth)? });
            }
        }
        if let Some(name) = named {
            args.push(Arg { keyword: Some(spanned("as")), value: str_lit(name) });
        }
        if u.ratio(1, 16)? {
            let keyword = if u.arbitrary()? { Some(spanned("extra")) } else { None };
            args.push(Arg { keyword, value: self.leaf(u, scope)? });
        }
        Ok(node(ExprKind::Call(Call { name: spanned(name), args })))
    }

    /// A template argument in each of its forms (SPEC §4.4): an expression string, a
    /// relative path string, a variable holding a string, or a deferred expression.
    fn template(&self, u: &mut Unstructured<'_>, scope: Scope0, depth: u32) -> Result<Expr> {
        let inner = Scope0 { item: true, ..scope };
        Ok(match u.int_in_range(0..=4)? {
            0 => str_lit(&crate::syntax::print(&self.expr(u, inner, depth)?)),
            1 => str_lit(u.choose(&["score", "name", "profile.age", "tags.0", "item", "0"])?),
            2 => node(ExprKind::Name(Arc::from(*u.choose(&VAR_NAMES)?))),
            _ => self.expr(u, inner, depth)?,
        })
    }
}

// ---------------------------------------------------------------------------------------
// generated values

/// A value at most `depth` levels deep, with numbers at the edges of `i64` and `f64`.
pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Int(int(u)?),
        3 => Value::Float(float(u)?),
        4 => Value::Str(SmolStr::from(text_from(u)?)),
        5 => Value::list((0..u.int_in_range(0..=4)?).map(|_| value(u, depth - 1)).collect::<Result<_>>()?),
        _ => {
            let mut map = Map::default();
            for _ in 0..u.int_in_range(0..=4)? {
                let key = if u.ratio(1, 4)? { text_from(u)? } else { u.choose(&SEGMENTS)?.to_string() };
                map.insert(SmolStr::new(key), value(u, depth - 1)?);
            }
            Value::object(map)
        }
    })
}

fn int(u: &mut Unstructured<'_>) -> Result<i64> {
    const EDGES: [i64; 12] =
        [0, 1, 2, 3, -1, 10, i64::MAX, i64::MIN, i64::MAX - 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1];
    if u.ratio(3, 4)? {
        Ok(*u.choose(&EDGES)?)
    } else {
        u.arbitrary()
    }
}

fn float(u: &mut Unstructured<'_>) -> Result<f64> {
    const EDGES: [f64; 14] = [
        0.0,
        -0.0,
        0.5,
        1.0,
        -1.5,
        9_007_199_254_740_992.0,
        9_223_372_036_854_775_808.0,
        -9_223_372_036_854_775_808.0,
        1e300,
        -1e308,
        f64::MIN_POSITIVE,
        5e-324,
        1e15 + 0.5,
        0.1,
    ];
    if u.ratio(3, 4)? {
        Ok(*u.choose(&EDGES)?)
    } else {
        let f = f64::from_bits(u.arbitrary()?);
        Ok(if f.is_finite() { f } else { 0.0 })
    }
}

fn text_from(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(3, 4)? {
        Ok(u.choose(&STRINGS)?.to_string())
    } else {
        let s: String = u.arbitrary()?;
        Ok(s.chars().take(24).collect())
    }
}
