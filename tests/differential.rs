//! Differential test (SPEC §4.7): for every well-typed program, the bytecode VM and the
//! tree-walking reference evaluator give the same value or fail with the same error kind.
//!
//! Three evaluations are compared for every generated program:
//!
//! * `vm`       — `Program::eval`: folded, compiled to bytecode (fused instructions), run on
//!   the VM;
//! * `ref`      — `Program::eval_reference`: the reference evaluator over the program's
//!   (folded) typed tree;
//! * `unfolded` — the reference evaluator over the typed tree straight from the checker,
//!   before constant folding, so folding is tested against plain evaluation too.
//!
//! Values must be equal (deep equality) **and** print the same JSON (so `1` vs `1.0` and key
//! order differences are caught); errors must have the same code. When any side runs out of
//! fuel the case is counted and skipped: the two evaluators count work differently.
//!
//! The generator is type-directed (it knows the types of the variables and builds
//! expressions of a wanted type), so most programs check; a quarter of the cases are
//! compiled in an open scope where every name is `any`, so the same shapes also reach the
//! run-time type checks. It draws from a stream of choices (`Vec<u32>`) that proptest
//! shrinks, so failures are reported as small expressions.
//!
//! Most cases run with the default limits (fuel aside); some with small string, list,
//! depth and output limits, so limit errors are compared too.
//!
//! `TDSL_DIFF_CASES=N` sets the number of cases (default 10 000, a few seconds in debug);
//! `TDSL_DIFF_VERBOSE=1` prints every program with its outcome. The random seed changes per
//! run; a failure prints the shrunk program, its variables and the three results.
//!
//! Regression tests for every disagreement found are at the end of the file.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use serde_json::json;
use tdsl::{Code, Engine, EvalError, FixedClock, Limits, Scope, Value};

const FUEL: u64 = 200_000;

fn engine() -> Engine {
    Engine::new()
        .with_limits(Limits { fuel: FUEL, ..Limits::default() })
        .with_clock(Arc::new(FixedClock(1_767_225_600_123)))
}

/// An engine with small limits, so that string, list, depth and output limits are hit
/// (by folding and by both evaluators).
fn tight_engine() -> Engine {
    Engine::new()
        .with_limits(Limits {
            fuel: FUEL,
            max_depth: 12,
            max_string_len: 12,
            max_list_len: 6,
            max_output_bytes: 200,
            ..Limits::default()
        })
        .with_clock(Arc::new(FixedClock(1_767_225_600_123)))
}

/// An engine whose output limit is below its string limit: a long string result must fail
/// the output check like a long list does.
fn small_output_engine() -> Engine {
    Engine::new()
        .with_limits(Limits { fuel: FUEL, max_output_bytes: 24, ..Limits::default() })
        .with_clock(Arc::new(FixedClock(1_767_225_600_123)))
}

// ---------------------------------------------------------------------------------------
// running one program three ways

/// The outcome of running one source text against one set of variables.
#[derive(Debug)]
enum Outcome {
    /// Did not compile; the first error code.
    CompileError(Code),
    /// Some evaluation ran out of fuel: not compared.
    Fuel,
    /// All three agree on a value.
    Value,
    /// All three agree on an error code.
    Error(Code),
    /// A disagreement, described.
    Mismatch(String),
}

type Res = Result<Value, EvalError>;

fn show(r: &Res) -> String {
    match r {
        Ok(v) => format!("Ok({v})"),
        Err(e) => format!("Err({:?} {}: {})", e.code, e.code, e.message),
    }
}

fn same(a: &Res, b: &Res) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y && x.to_string() == y.to_string(),
        (Err(x), Err(y)) => x.code == y.code,
        _ => false,
    }
}

/// Evaluates with the reference evaluator over the checker's tree, before folding.
fn eval_unfolded(engine: &Engine, src: &str, scope: &Scope, vars: &Value) -> Res {
    let limits = engine.limits();
    let parsed = tdsl::testing::syntax::parse_with_limit(src, limits.max_depth);
    let checked = tdsl::testing::types::check(&parsed.expr, scope, engine.functions(), limits.max_depth);
    assert!(
        !checked.diagnostics.iter().any(|d| d.is_error()) && !parsed.diagnostics.iter().any(|d| d.is_error()),
        "the program compiled, so it checks"
    );
    let clock = FixedClock(1_767_225_600_123);
    let v = tdsl::testing::reference::evaluate(&checked.expr, vars, vars, engine.functions(), limits, &clock)?;
    // What `Program::eval*` check of every result.
    if v.size_at_most(limits.max_output_bytes) > limits.max_output_bytes {
        return Err(EvalError::new(Code::OutputLimit, Default::default(), "output limit"));
    }
    Ok(v)
}

/// Runs `src` the three ways and compares.
fn run_case(engine: &Engine, src: &str, vars: &Value, open: bool) -> Outcome {
    let scope = if open { Scope::open() } else { Scope::from_vars(vars) };
    let program = match engine.compile_in(src, &scope) {
        Ok(p) => p,
        Err(diags) => {
            let code = diags.iter().find(|d| d.is_error()).map_or(Code::Syntax, |d| d.code);
            return Outcome::CompileError(code);
        }
    };
    let vm = program.eval(vars);
    let rf = program.eval_reference(vars, vars);
    let unfolded = eval_unfolded(engine, src, &scope, vars);
    let fuel = |r: &Res| matches!(r, Err(e) if e.code == Code::FuelExhausted);
    if fuel(&vm) || fuel(&rf) || fuel(&unfolded) {
        return Outcome::Fuel;
    }
    let vm_ref = same(&vm, &rf);
    let ref_unfolded = same(&rf, &unfolded);
    if vm_ref && ref_unfolded {
        return match vm {
            Ok(_) => Outcome::Value,
            Err(e) => Outcome::Error(e.code),
        };
    }
    let which = match (vm_ref, ref_unfolded) {
        (false, true) => "VM differs from the reference evaluator",
        (true, false) => "constant folding changes the result (folded vs unfolded reference)",
        _ => "all three differ",
    };
    Outcome::Mismatch(format!(
        "{which}\n  source:   {src}\n  scope:    {}\n  vars:     {vars}\n  vm:       {}\n  ref:      {}\n  unfolded: {}",
        if open { "open" } else { "closed (from vars)" },
        show(&vm),
        show(&rf),
        show(&unfolded),
    ))
}

/// Asserts that `src` gives the same result three ways, and returns the VM's result.
#[track_caller]
fn agree(src: &str, vars: serde_json::Value) -> Res {
    let vars = Value::from(&vars);
    let engine = engine();
    for open in [false, true] {
        match run_case(&engine, src, &vars, open) {
            Outcome::Mismatch(m) => panic!("{m}"),
            Outcome::CompileError(c) if !open => panic!("`{src}` does not compile: {c:?}"),
            _ => {}
        }
    }
    let scope = Scope::from_vars(&vars);
    engine.compile_in(src, &scope).expect("compiles").eval(&vars)
}

// ---------------------------------------------------------------------------------------
// the generator

/// The static shapes the generator aims for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum T {
    Int,
    Num,
    Str,
    Bool,
    /// One record of `xs`: `{a: int, b: string, c: bool|null, tags: [string]}`.
    Rec,
    ListRec,
    ListInt,
    ListStr,
    ListAny,
    Obj,
    Any,
}

const ALL_T: [T; 11] =
    [T::Int, T::Num, T::Str, T::Bool, T::Rec, T::ListRec, T::ListInt, T::ListStr, T::ListAny, T::Obj, T::Any];

/// What the locals `item` and `current` are, where bound, and the elements enclosing
/// templates named with `as` (one per name of [`ELEMENT_NAMES`]).
#[derive(Clone, Copy, Debug)]
struct Env {
    item: Option<T>,
    current: Option<T>,
    named: [Option<T>; 2],
}

const TOP: Env = Env { item: None, current: None, named: [None, None] };

/// The names `as` gives elements (SPEC §4.4): no variable has them.
const ELEMENT_NAMES: [&str; 2] = ["el", "row"];

/// Marks a template argument whose call names the element: `template()` returns
/// `AS_MARK name AS_MARK template`, and `call()` turns it into `as="name"`.
const AS_MARK: char = '\u{1}';

/// A template argument and the `as` keyword its call needs (see [`AS_MARK`]).
fn split_as(arg: &str) -> (&str, Option<String>) {
    match arg.strip_prefix(AS_MARK).and_then(|rest| rest.split_once(AS_MARK)) {
        Some((name, tpl)) => (tpl, Some(format!("as=\"{name}\""))),
        None => (arg, None),
    }
}

/// Draws decisions from a stream of numbers; past its end every decision is 0, which is
/// always the simplest alternative (a leaf), so every stream gives a finite expression.
struct Gen<'a> {
    choices: &'a [u32],
    pos: usize,
    max_depth: u32,
    /// Prefer literal leaves: makes constant subexpressions (and so folding) common.
    const_bias: bool,
}

fn quote_dq(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn quote_sq(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

impl Gen<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let c = self.choices.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        c as usize % n.max(1)
    }

    fn chance(&mut self, percent: usize) -> bool {
        // 0 (the shrink target) means "no".
        let p = self.pick(100);
        p >= 100 - percent
    }

    fn one<'s>(&mut self, xs: &[&'s str]) -> &'s str {
        xs[self.pick(xs.len())]
    }

    /// An expression of (roughly) type `t`.
    fn expr(&mut self, t: T, env: Env, depth: u32) -> String {
        let p = self.pick(10) as u32;
        let e = if depth >= self.max_depth || p < 2 + 2 * depth {
            self.leaf(t, env)
        } else {
            self.compound(t, env, depth + 1)
        };
        if self.chance(4) {
            format!("({e})")
        } else {
            e
        }
    }

    fn literal_int(&mut self) -> String {
        self.one(&[
            "0",
            "1",
            "2",
            "3",
            "-1",
            "7",
            "10",
            "-4",
            "100",
            "9223372036854775807",
            "-9223372036854775807",
            "4611686018427387904",
        ])
        .to_string()
    }

    fn literal_str(&mut self) -> String {
        self.one(&[
            "\"a\"",
            "'b'",
            "\"\"",
            "\"x\\\"y\"",
            "'it\\'s'",
            "\"tab\\there\"",
            "\"\\u00e9t\\u00e9\"",
            "\"a,b,c\"",
            "\"\\\\\"",
            "\"line\\nbreak\"",
            "\"sl\\/ash\"",
            "' Pad '",
            "\"B\"",
            "\"1.5\"",
            "\"42\"",
            "\"name\"",
            "\"k\"",
            "\"{\\\"a\\\": [1, 2]}\"",
        ])
        .to_string()
    }

    /// Reads of an element named `name` of type `elem` that have type `t`.
    fn element_reads(&mut self, name: &str, elem: Option<T>, t: T, local: &mut Vec<String>) {
        let Some(elem) = elem else { return };
        if elem == t || t == T::Any || (t == T::Num && elem == T::Int) {
            local.push(name.into());
        }
        if elem == T::Rec {
            match t {
                T::Int | T::Num => local.push(format!("{name}.a")),
                T::Str => local.push(format!("{name}.b")),
                T::Bool => local.push(format!("{name}.c")),
                T::ListStr => local.push(format!("{name}.tags")),
                T::Any => local.push(format!("{name}{}", self.one(&[".c", ".tags.0", "[\"b\"]", ".tags.last"]))),
                _ => {}
            }
        }
        if elem == T::Any && matches!(t, T::Any | T::Int | T::Num | T::Str) {
            local.push(format!("{name}{}", self.one(&[".a", ".0", ".length", "[0]"])));
        }
    }

    fn leaf(&mut self, t: T, env: Env) -> String {
        // The locals first, when they have the wanted shape.
        let mut local: Vec<String> = Vec::new();
        self.element_reads("item", env.item, t, &mut local);
        if env.current == Some(t)
            || (t == T::Any && env.current.is_some())
            || (t == T::Num && env.current == Some(T::Int))
        {
            local.push("current".into());
        }
        for (name, elem) in ELEMENT_NAMES.iter().zip(env.named) {
            self.element_reads(name, elem, t, &mut local);
        }
        if !local.is_empty() && self.chance(60) {
            let i = self.pick(local.len());
            return local.swap_remove(i);
        }
        let literal = self.const_bias && self.chance(70);
        match t {
            T::Int => {
                if literal {
                    return self.literal_int();
                }
                match self.pick(4) {
                    0 | 1 => self.literal_int(),
                    _ => self
                        .one(&[
                            "n",
                            "o.x",
                            "REF:o.x",
                            "xs.length",
                            "s.length",
                            "o.inner.y",
                            "REF:o.inner.y",
                            "m.length",
                            "REF:xs.length",
                            "o.length",
                        ])
                        .into(),
                }
            }
            T::Num => {
                if self.chance(40) {
                    return self.leaf(T::Int, env);
                }
                if literal {
                    return self.one(&["1.5", "0.25", "2.0", "1e3", "0.1", "2.5E-1", "1e308", "0.0"]).into();
                }
                self.one(&["1.5", "0.25", "2.0", "1e3", "0.1", "f", "f", "REF:f"]).into()
            }
            T::Str => {
                if literal || self.pick(2) == 0 {
                    return self.literal_str();
                }
                self.one(&[
                    "s",
                    "o.name",
                    "REF:o.name",
                    "t",
                    "js",
                    "xs.0.b",
                    "REF:xs.0.b",
                    "xs.last.b",
                    "o.inner.w",
                    "p.file_name",
                    "p.parent_directory",
                    "REF:fo.file_name",
                    "fo.parent_directory",
                    "fo.path",
                    "p.path",
                    "'dir/x.txt'.file_name",
                    "REF:step-1.name",
                ])
                .into()
            }
            T::Bool => {
                if literal {
                    return self.one(&["true", "false"]).into();
                }
                self.one(&["true", "false", "xs.0.c", "REF:xs.last.c", "o.flag"]).into()
            }
            T::Rec => self.one(&["xs.0", "xs.first", "xs.last", "xs[-1]", "REF:xs.0", "xs[1]", "REF:xs.last"]).into(),
            T::ListRec => self.one(&["xs", "REF:xs", "xs", "[]"]).into(),
            T::ListInt => {
                if literal {
                    return self.one(&["[1, 2, 3]", "[]", "[3, 1, 2, 1]", "[0, -1, 9223372036854775807]"]).into();
                }
                self.one(&["[1, 2, 3]", "[]", "o.inner.z", "REF:o.inner.z", "[n, 0, -1]", "range(4)", "[3, 1, 2, 1]"])
                    .into()
            }
            T::ListStr => {
                if literal {
                    return self.one(&["[\"b\", \"a\", \"b\"]", "['x']", "[]"]).into();
                }
                self.one(&["[\"b\", \"a\", \"b\"]", "xs.0.tags", "keys(o)", "REF:xs.1.tags", "['x', 'y,z']"]).into()
            }
            T::ListAny => {
                if literal {
                    return self
                        .one(&["[1, \"a\", null, true, 2.5]", "[[1, 2], [3], 4]", "[null, {a: 1}, [], '']"])
                        .into();
                }
                self.one(&["m", "REF:m", "[1, \"a\", null, true, 2.5]", "[[1, 2], [3], 4]", "m"]).into()
            }
            T::Obj => {
                if literal {
                    return self
                        .one(&[
                            "{}",
                            "{a: 1, \"b c\": 'x', null: null}",
                            "{k: [1, 2], true: {y: 2}}",
                            "{response: 1, x: 2}",
                        ])
                        .into();
                }
                self.one(&["o", "REF:o", "{}", "{a: 1, \"b c\": 'x', null: null}", "o.inner", "REF:o.inner"]).into()
            }
            T::Any => {
                if literal {
                    return self.one(&["null", "1", "\"a\"", "[1, [2]]", "{a: {b: 1}}", "true", "2.5"]).into();
                }
                match self.pick(3) {
                    0 => self
                        .one(&[
                            "m.0",
                            "m[1]",
                            "o.k",
                            "REF:o.k",
                            "m.last",
                            "null",
                            "REF:m.2",
                            "o.k.length",
                            "REF:o.response",
                            "o.response",
                            "REF:step-1.response",
                            "REF:step-1.response.0",
                            "REF:step-1.response.first.v",
                            "fo",
                            "REF:fo.file_name",
                            "p",
                        ])
                        .into(),
                    _ => {
                        let t = self.any_t();
                        self.leaf(t, env)
                    }
                }
            }
        }
    }

    fn any_t(&mut self) -> T {
        // Everything but `Any` itself (which would recurse).
        ALL_T[self.pick(ALL_T.len() - 1)]
    }

    /// A call with positional arguments for a prefix of the given ones and keywords for the
    /// rest (in either order). `None` marks an omitted optional argument.
    fn call(&mut self, name: &str, args: Vec<(&str, Option<String>)>) -> String {
        let present_prefix = args.iter().take_while(|(_, a)| a.is_some()).count();
        let positional = self.pick(present_prefix + 1);
        let positional = if self.chance(50) { present_prefix } else { positional };
        let mut parts: Vec<String> = Vec::new();
        let mut keywords: Vec<String> = Vec::new();
        for (i, (k, a)) in args.into_iter().enumerate() {
            let Some(a) = a else { continue };
            let (a, element_name) = split_as(&a);
            keywords.extend(element_name);
            if i < positional {
                parts.push(a.to_string());
            } else {
                keywords.push(format!("{k}={a}"));
            }
        }
        if self.chance(30) {
            keywords.reverse();
        }
        parts.extend(keywords);
        format!("{name}({})", parts.join(", "))
    }

    fn opt(&mut self, percent: usize, f: impl FnOnce(&mut Self) -> String) -> Option<String> {
        if self.chance(percent) {
            Some(f(self))
        } else {
            None
        }
    }

    /// A template argument over elements of type `elem` whose body has type `body`; a
    /// quarter of them name the element with `as` (a name no enclosing template took).
    fn template(&mut self, elem: T, body: T, env: Env, depth: u32, path_param: bool) -> String {
        let free: Vec<usize> = (0..ELEMENT_NAMES.len()).filter(|&i| env.named[i].is_none()).collect();
        if !free.is_empty() && self.chance(25) {
            let i = free[self.pick(free.len())];
            let mut named = env;
            named.named[i] = Some(elem);
            let name = ELEMENT_NAMES[i];
            let tpl = match self.pick(4) {
                // A path through the name, in a path parameter's string.
                0 if path_param && elem == T::Rec => quote_dq(&format!("{name}.{}", self.one(&["a", "b", "tags.0"]))),
                _ => self.template_body(elem, body, named, depth, path_param),
            };
            return format!("{AS_MARK}{name}{AS_MARK}{tpl}");
        }
        self.template_body(elem, body, env, depth, path_param)
    }

    /// A template argument's text, in each of its forms.
    fn template_body(&mut self, elem: T, body: T, env: Env, depth: u32, path_param: bool) -> String {
        let inner = Env { item: Some(elem), ..env };
        match self.pick(12) {
            // An expression template.
            0..=3 => {
                let e = self.expr(body, inner, depth);
                // A string literal here would be a template string; keep it a value.
                if e.starts_with('"') || e.starts_with('\'') {
                    format!("'' + {e}")
                } else {
                    e
                }
            }
            // A template string, double- or single-quoted.
            4..=6 => {
                let e = self.expr(body, inner, depth);
                quote_dq(&e)
            }
            7 => {
                let e = self.expr(body, inner, depth);
                quote_sq(&e)
            }
            // A relative path (key_path / item_path) or a plain path string.
            8 | 9 => {
                let p = match elem {
                    T::Rec if path_param => self.one(&["a", "b", "c", "tags.0", "tags.length", "item.a", "tags.first"]),
                    T::Rec => self.one(&["item.a", "item.b", "item.c", "item.tags.0"]),
                    T::Any if path_param => self.one(&["a", "0", "length", "item"]),
                    _ if path_param => self.one(&["item", "length", "item.length"]),
                    _ => self.one(&["item", "item.length"]),
                };
                quote_dq(p)
            }
            // An object or list literal template.
            10 => {
                let a = self.expr(body, inner, depth);
                let b = self.expr(T::Any, inner, depth + 1);
                if self.chance(50) {
                    format!("{{v: {a}, w: {b}}}")
                } else {
                    format!("[{a}, {b}]")
                }
            }
            // A template held in a variable (compiled at run time).
            _ => self.one(&["t", "t", "t2"]).into(),
        }
    }

    /// A list expression and the type of its elements.
    fn list_of_some_kind(&mut self, env: Env, depth: u32) -> (String, T) {
        match self.pick(5) {
            0 | 1 => (self.expr(T::ListRec, env, depth), T::Rec),
            2 => (self.expr(T::ListInt, env, depth), T::Int),
            3 => (self.expr(T::ListStr, env, depth), T::Str),
            _ => (self.expr(T::ListAny, env, depth), T::Any),
        }
    }

    /// `l op r`, with operands in parentheses where the precedence would otherwise regroup
    /// them into something of another type (comparisons do not chain).
    fn binop(&mut self, l: String, op: &str, r: String) -> String {
        let cmp = matches!(op, "<" | "<=" | ">" | ">=" | "==" | "!=");
        let wrap = |g: &mut Self, x: String| {
            let simple = !x.contains(' ') || (x.starts_with('(') && x.ends_with(')') && !cmp);
            if simple || (!cmp && !g.chance(70)) {
                x
            } else {
                format!("({x})")
            }
        };
        let l = wrap(self, l);
        let r = wrap(self, r);
        format!("{l} {op} {r}")
    }

    /// A postfix operation (`.seg`, `[i]`) on `base`, parenthesized unless it is a name.
    fn postfix(&mut self, base: String, op: &str) -> String {
        let atomic = base.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b':');
        if atomic && !base.starts_with("REF:") && self.chance(50) {
            format!("{base}{op}")
        } else {
            format!("({base}){op}")
        }
    }

    fn compound(&mut self, t: T, env: Env, d: u32) -> String {
        match t {
            T::Int => self.compound_int(env, d),
            T::Num => match self.pick(8) {
                0..=2 => self.compound_int(env, d),
                3 => {
                    let (a, b) = (self.expr(T::Num, env, d), self.expr(T::Num, env, d));
                    self.binop(a, "/", b)
                }
                4 => {
                    let op = self.one(&["+", "-", "*", "%"]);
                    let (a, b) = (self.expr(T::Num, env, d), self.expr(T::Num, env, d));
                    self.binop(a, op, b)
                }
                5 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let ip = self.opt(60, |g| g.template(e, T::Num, env, d, true));
                    self.call("avg", vec![("array", Some(xs)), ("item_path", ip)])
                }
                6 => {
                    let x = self.expr(T::Num, env, d);
                    let digits = self.opt(60, |g| g.one(&["0", "1", "2", "-1", "n"]).to_string());
                    self.call("round", vec![("value", Some(x)), ("digits", digits)])
                }
                _ => {
                    let x = self.expr(T::Str, env, d);
                    self.call("to_number", vec![("value", Some(x))])
                }
            },
            T::Str => self.compound_str(env, d),
            T::Bool => self.compound_bool(env, d),
            T::Rec => match self.pick(5) {
                0 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let c = self.template(T::Rec, T::Bool, env, d, false);
                    self.call("find", vec![("array", Some(xs)), ("condition_string", Some(c))])
                }
                1 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let i = self.expr(T::Int, env, d);
                    self.postfix(xs, &format!("[{i}]"))
                }
                2 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let seg = self.one(&["0", "1", "first", "last"]);
                    self.postfix(xs, &format!(".{seg}"))
                }
                3 => {
                    let (c, a, b) = (self.expr(T::Bool, env, d), self.expr(T::Rec, env, d), self.expr(T::Rec, env, d));
                    self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", Some(b))])
                }
                _ => {
                    let xs = self.expr(T::ListRec, env, d);
                    let dir = self.opt(50, |g| g.one(&["\"asc\"", "\"desc\""]).to_string());
                    let kp = self.opt(70, |g| g.template(T::Rec, T::Any, env, d, true));
                    let mx = self.one(&["min", "max"]);
                    if self.chance(50) {
                        let sorted = self.call("sort", vec![("array", Some(xs)), ("key_path", kp), ("direction", dir)]);
                        format!("({sorted}).0")
                    } else {
                        self.call(mx, vec![("array", Some(xs)), ("item_path", kp)])
                    }
                }
            },
            T::ListRec => match self.pick(8) {
                0 | 1 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let c = self.template(T::Rec, T::Bool, env, d, false);
                    self.call("filter", vec![("array", Some(xs)), ("condition_string", Some(c))])
                }
                2 | 3 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let kp = self.opt(80, |g| g.template(T::Rec, T::Any, env, d, true));
                    let dir = self.opt(50, |g| match g.pick(4) {
                        0 | 1 => g.one(&["\"asc\"", "\"desc\"", "s"]).to_string(),
                        // Any string expression: its evaluation may fail after a dynamic
                        // template argument was read.
                        _ => g.expr(T::Str, env, d),
                    });
                    self.call("sort", vec![("array", Some(xs)), ("key_path", kp), ("direction", dir)])
                }
                4 => {
                    let xs = self.expr(T::ListRec, env, d);
                    self.call("unique", vec![("array", Some(xs))])
                }
                5 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let a = self.expr(T::Int, env, d);
                    let b = self.opt(50, |g| g.expr(T::Int, env, d));
                    self.call("slice", vec![("value", Some(xs)), ("start", Some(a)), ("end", b)])
                }
                6 => {
                    let (a, b) = (self.expr(T::ListRec, env, d), self.expr(T::ListRec, env, d));
                    self.binop(a, "+", b)
                }
                _ => self.pipeline(T::ListRec, env, d),
            },
            T::ListInt => match self.pick(9) {
                0 | 1 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let tpl = self.template(e, T::Int, env, d, false);
                    self.call("map", vec![("array", Some(xs)), ("template", Some(tpl))])
                }
                2 => {
                    let a = self.expr(T::Int, env, d);
                    let b = self.opt(50, |g| g.expr(T::Int, env, d));
                    let c = if b.is_some() {
                        self.opt(40, |g| g.one(&["1", "2", "-1", "0", "3"]).to_string())
                    } else {
                        None
                    };
                    // Keep ranges small: a large one is only slow, not interesting.
                    let a = format!("({a}) % 20");
                    let b = b.map(|b| format!("({b}) % 20"));
                    self.call("range", vec![("start", Some(a)), ("stop", b), ("step", c)])
                }
                3 => {
                    let xs = self.expr(T::ListInt, env, d);
                    let dir = self.opt(50, |g| g.one(&["\"asc\"", "\"desc\""]).to_string());
                    self.call("sort", vec![("array", Some(xs)), ("key_path", None), ("direction", dir)])
                }
                4 => {
                    let xs = self.expr(T::ListInt, env, d);
                    let f = self.one(&["unique", "flatten"]);
                    self.call(f, vec![("array", Some(xs))])
                }
                5 => {
                    let xs = self.expr(T::ListInt, env, d);
                    let c = self.template(T::Int, T::Bool, env, d, false);
                    self.call("filter", vec![("array", Some(xs)), ("condition_string", Some(c))])
                }
                6 => {
                    let n = 1 + self.pick(3);
                    let items: Vec<String> = (0..n).map(|_| self.expr(T::Int, env, d)).collect();
                    format!("[{}]", items.join(", "))
                }
                7 => {
                    let (a, b) = (self.expr(T::ListInt, env, d), self.expr(T::ListInt, env, d));
                    if self.chance(50) {
                        self.binop(a, "+", b)
                    } else {
                        let x = format!("[{a}, {b}]");
                        self.call("flatten", vec![("array", Some(x))])
                    }
                }
                _ => self.pipeline(T::ListInt, env, d),
            },
            T::ListStr => match self.pick(7) {
                0 => {
                    let s = self.expr(T::Str, env, d);
                    let sep = self.opt(60, |g| g.one(&["\",\"", "\"\"", "' '", "\"a\""]).to_string());
                    self.call("split", vec![("string", Some(s)), ("separator", sep)])
                }
                1 => {
                    let o = self.expr(T::Obj, env, d);
                    self.call("keys", vec![("obj", Some(o))])
                }
                2 | 3 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let tpl = self.template(e, T::Str, env, d, false);
                    self.call("map", vec![("array", Some(xs)), ("template", Some(tpl))])
                }
                4 => {
                    let xs = self.expr(T::ListStr, env, d);
                    let f = self.one(&["unique", "sort", "flatten"]);
                    self.call(f, vec![("array", Some(xs))])
                }
                5 => {
                    let xs = self.expr(T::ListRec, env, d);
                    let tpl = self.template(T::Rec, T::ListStr, env, d, false);
                    let m = self.call("map", vec![("array", Some(xs)), ("template", Some(tpl))]);
                    self.call("flatten", vec![("array", Some(m))])
                }
                _ => {
                    let (a, b) = (self.expr(T::Str, env, d), self.expr(T::Str, env, d));
                    format!("[{a}, {b}]")
                }
            },
            T::ListAny => match self.pick(9) {
                0 => {
                    let o = self.expr(T::Obj, env, d);
                    self.call("values", vec![("obj", Some(o))])
                }
                1 => {
                    let (a, _) = self.list_of_some_kind(env, d);
                    let (b, _) = self.list_of_some_kind(env, d);
                    self.call("zip", vec![("left", Some(a)), ("right", Some(b))])
                }
                2 | 3 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let tpl = self.template(e, T::Any, env, d, false);
                    self.call("map", vec![("array", Some(xs)), ("template", Some(tpl))])
                }
                4 => {
                    let xs = self.expr(T::ListAny, env, d);
                    let f = self.one(&["flatten", "unique", "sort"]);
                    self.call(f, vec![("array", Some(xs))])
                }
                5 => {
                    let n = self.pick(4);
                    let items: Vec<String> = (0..n).map(|_| self.expr(T::Any, env, d)).collect();
                    format!("[{}]", items.join(", "))
                }
                6 => {
                    let (a, b) = (self.expr(T::ListAny, env, d), self.expr(T::ListAny, env, d));
                    self.binop(a, "+", b)
                }
                7 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let c = self.template(e, T::Any, env, d, false);
                    self.call("filter", vec![("array", Some(xs)), ("condition_string", Some(c))])
                }
                _ => {
                    let (xs, _) = self.list_of_some_kind(env, d);
                    let a = self.expr(T::Int, env, d);
                    let b = self.opt(50, |g| g.expr(T::Int, env, d));
                    self.call("slice", vec![("value", Some(xs)), ("start", Some(a)), ("end", b)])
                }
            },
            T::Obj => match self.pick(10) {
                0 | 1 => {
                    let (xs, e) = self.list_of_some_kind(env, d);
                    let kp = self.template(e, T::Any, env, d, true);
                    self.call("group_by", vec![("array", Some(xs)), ("key_path", Some(kp))])
                }
                2 => {
                    let n = self.pick(4);
                    let keys = ["a", "b_2", "Name", "x", "null_", "k"];
                    let mut parts = Vec::new();
                    for k in keys.iter().take(n) {
                        let v = self.expr(T::Any, env, d);
                        parts.push(format!("{k}={v}"));
                    }
                    format!("create_object({})", parts.join(", "))
                }
                3 | 4 => {
                    let n = self.pick(4);
                    let keys = ["a", "\"b c\"", "null", "'k'", "x", "true"];
                    let mut parts = Vec::new();
                    for k in keys.iter().take(n) {
                        let v = self.expr(T::Any, env, d);
                        parts.push(format!("{k}: {v}"));
                    }
                    let trailing = if n > 0 && self.chance(20) { "," } else { "" };
                    format!("{{{}{trailing}}}", parts.join(", "))
                }
                5 => {
                    let (a, b) = (self.expr(T::Obj, env, d), self.expr(T::Obj, env, d));
                    match self.pick(4) {
                        0 | 1 => self.binop(a, "+", b),
                        2 => self.call("merge", vec![("left", Some(a)), ("right", Some(b))]),
                        _ => {
                            let more: Vec<String> = (0..self.pick(3)).map(|_| self.expr(T::Obj, env, d)).collect();
                            format!("merge({a}, {b}{})", more.iter().map(|m| format!(", {m}")).collect::<String>())
                        }
                    }
                }
                6 => {
                    let o = self.expr(T::Obj, env, d);
                    let ks = self.one(&["[\"k\", \"x\"]", "[]", "keys(o)", "['name', 'zz']", "xs.0.tags"]).to_string();
                    let f = self.one(&["pick", "omit"]);
                    self.call(f, vec![("obj", Some(o)), ("keys", Some(ks))])
                }
                7 => {
                    let (c, a, b) = (self.expr(T::Bool, env, d), self.expr(T::Obj, env, d), self.expr(T::Obj, env, d));
                    self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", Some(b))])
                }
                8 => {
                    let o = self.expr(T::Obj, env, d);
                    self.call("json_parse", vec![("json_string", Some(format!("json_stringify({o})")))])
                }
                _ => match self.pick(3) {
                    0 => {
                        let o = self.expr(T::Obj, env, d);
                        let entries = self.call("to_entries", vec![("obj", Some(o))]);
                        self.call("from_entries", vec![("entries", Some(entries))])
                    }
                    1 => {
                        let (ks, _) = self.list_of_some_kind(env, d);
                        let (vs, _) = self.list_of_some_kind(env, d);
                        let pairs = self.call("zip", vec![("left", Some(ks)), ("right", Some(vs))]);
                        self.call("from_entries", vec![("entries", Some(pairs))])
                    }
                    _ => {
                        let (xs, e) = self.list_of_some_kind(env, d);
                        let tpl = self.template(e, T::Any, env, d, false);
                        let m = self.call("map", vec![("array", Some(xs)), ("template", Some(tpl))]);
                        self.call("from_entries", vec![("entries", Some(m))])
                    }
                },
            },
            T::Any => self.compound_any(env, d),
        }
    }

    fn compound_int(&mut self, env: Env, d: u32) -> String {
        match self.pick(16) {
            0..=2 => {
                let op = self.one(&["+", "-", "*", "%", "+"]);
                let (a, b) = (self.expr(T::Int, env, d), self.expr(T::Int, env, d));
                self.binop(a, op, b)
            }
            3 => {
                let a = self.expr(T::Int, env, d);
                format!("-{a}")
            }
            4 => {
                let x = match self.pick(3) {
                    0 => self.list_of_some_kind(env, d).0,
                    1 => self.expr(T::Str, env, d),
                    _ => self.expr(T::Obj, env, d),
                };
                if self.chance(50) {
                    self.call("length", vec![("value", Some(x))])
                } else {
                    format!("({x}).length")
                }
            }
            5 => {
                let (xs, e) = self.list_of_some_kind(env, d);
                let c = self.opt(60, |g| g.template(e, T::Bool, env, d, false));
                self.call("count", vec![("array", Some(xs)), ("condition_string", c)])
            }
            6 | 7 => {
                let (xs, e) = self.list_of_some_kind(env, d);
                let ip = if e == T::Int {
                    self.opt(30, |g| g.template(e, T::Int, env, d, true))
                } else {
                    Some(self.template(e, T::Int, env, d, true))
                };
                self.call("sum", vec![("array", Some(xs)), ("item_path", ip)])
            }
            8 => {
                let (c, a, b) = (self.expr(T::Bool, env, d), self.expr(T::Int, env, d), self.expr(T::Int, env, d));
                let b = if self.chance(80) { Some(b) } else { None };
                self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", b)])
            }
            9 => {
                let (a, b) = (self.expr(T::Any, env, d), self.expr(T::Int, env, d));
                self.call("default", vec![("value", Some(a)), ("fallback", Some(b))])
            }
            10 => self.pipeline(T::Int, env, d),
            11 => {
                let xs = self.expr(T::ListInt, env, d);
                let mx = self.one(&["min", "max"]);
                self.call(mx, vec![("array", Some(xs)), ("item_path", None)])
            }
            12 => {
                let xs = self.expr(T::ListInt, env, d);
                if self.chance(50) {
                    let i = self.expr(T::Int, env, d);
                    self.postfix(xs, &format!("[{i}]"))
                } else {
                    let seg = self.one(&["0", "2", "first", "last"]);
                    self.postfix(xs, &format!(".{seg}"))
                }
            }
            13 => {
                let r = self.expr(T::Rec, env, d);
                self.postfix(r, ".a")
            }
            14 => {
                let x = self.expr(T::Num, env, d);
                self.call("round", vec![("value", Some(x)), ("digits", None)])
            }
            _ => {
                let x = self.expr(T::Str, env, d);
                self.call("to_number", vec![("value", Some(x))])
            }
        }
    }

    fn compound_str(&mut self, env: Env, d: u32) -> String {
        match self.pick(15) {
            0 | 1 => {
                let (a, b) = (self.expr(T::Str, env, d), self.expr(T::Str, env, d));
                self.binop(a, "+", b)
            }
            2 => {
                let f = self.one(&["upper", "lower", "trim"]);
                let s = self.expr(T::Str, env, d);
                self.call(f, vec![("string", Some(s))])
            }
            3 => {
                let s = self.expr(T::Str, env, d);
                let old = self.one(&["\"a\"", "\"\"", "','", "s"]).to_string();
                let new = self.expr(T::Str, env, d);
                self.call("replace", vec![("string", Some(s)), ("old", Some(old)), ("new", Some(new))])
            }
            4 | 5 => {
                let (xs, _) = self.list_of_some_kind(env, d);
                let sep = self.opt(60, |g| g.one(&["\", \"", "\"\"", "'-'", "s"]).to_string());
                self.call("join", vec![("array", Some(xs)), ("separator", sep)])
            }
            6 => {
                let x = self.expr(T::Any, env, d);
                let f = self.one(&["to_string", "json_stringify"]);
                self.call(f, vec![("value", Some(x))])
            }
            7 => {
                let s = self.expr(T::Str, env, d);
                let a = self.expr(T::Int, env, d);
                let b = self.opt(50, |g| g.expr(T::Int, env, d));
                self.call("slice", vec![("value", Some(s)), ("start", Some(a)), ("end", b)])
            }
            8 => {
                let (c, a, b) = (self.expr(T::Bool, env, d), self.expr(T::Str, env, d), self.expr(T::Str, env, d));
                self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", Some(b))])
            }
            9 => {
                let r = self.expr(T::Rec, env, d);
                self.postfix(r, ".b")
            }
            10 => {
                let xs = self.expr(T::ListStr, env, d);
                if self.chance(50) {
                    let i = self.expr(T::Int, env, d);
                    self.postfix(xs, &format!("[{i}]"))
                } else {
                    let seg = self.one(&["0", "1", "first", "last"]);
                    self.postfix(xs, &format!(".{seg}"))
                }
            }
            11 => {
                let (a, b) = (self.expr(T::Any, env, d), self.expr(T::Str, env, d));
                self.call("default", vec![("value", Some(a)), ("fallback", Some(b))])
            }
            12 => self.pipeline(T::Str, env, d),
            13 => {
                let x = self.one(&["n", "0", "1700000000", "f", "\"2024-02-29T12:00:00Z\"", "s"]).to_string();
                let fmt = self.opt(60, |g| g.one(&["\"iso\"", "\"unix\"", "\"%Y-%m-%d\"", "\"bad\""]).to_string());
                if self.chance(20) {
                    let fmt = self.opt(50, |g| g.one(&["\"iso\"", "\"unix\""]).to_string());
                    self.call("datetime_now", vec![("format", fmt)])
                } else {
                    self.call("format_datetime", vec![("value", Some(x)), ("format", fmt)])
                }
            }
            _ => {
                let o = self.expr(T::Obj, env, d);
                let p =
                    self.one(&["\"name\"", "\"inner.y\"", "\"inner.z.0\"", "\"\"", "\"k.length\"", "s"]).to_string();
                let g = self.call("get_object_property", vec![("obj", Some(o)), ("property_path", Some(p))]);
                self.call("to_string", vec![("value", Some(g))])
            }
        }
    }

    fn compound_bool(&mut self, env: Env, d: u32) -> String {
        match self.pick(14) {
            0 | 1 => {
                let op = self.one(&["<", "<=", ">", ">=", "==", "!="]);
                let (a, b) = match self.pick(4) {
                    0 | 1 => (self.expr(T::Num, env, d), self.expr(T::Num, env, d)),
                    2 => (self.expr(T::Str, env, d), self.expr(T::Str, env, d)),
                    _ => (self.expr(T::Any, env, d), self.leaf(T::Any, env)),
                };
                self.binop(a, op, b)
            }
            2 => {
                let op = self.one(&["==", "!="]);
                let (a, b) = (self.expr(T::Any, env, d), self.expr(T::Any, env, d));
                self.binop(a, op, b)
            }
            3 | 4 => {
                let op = self.one(&["and", "or", "&&", "||"]);
                let ta = if self.chance(30) { T::Any } else { T::Bool };
                let (a, b) = (self.expr(ta, env, d), self.expr(T::Bool, env, d));
                self.binop(a, op, b)
            }
            5 => {
                let op = self.one(&["not ", "!", "not(", "!("]);
                let ta = if self.chance(30) { T::Any } else { T::Bool };
                let a = self.expr(ta, env, d);
                if op.ends_with('(') {
                    format!("{op}{a})")
                } else {
                    format!("{op}{a}")
                }
            }
            6 => {
                let (h, n) = match self.pick(3) {
                    0 => (self.expr(T::Str, env, d), self.expr(T::Str, env, d)),
                    1 => {
                        let (l, _) = self.list_of_some_kind(env, d);
                        (l, self.expr(T::Any, env, d))
                    }
                    _ => (self.expr(T::Obj, env, d), self.expr(T::Str, env, d)),
                };
                self.call("contains", vec![("haystack", Some(h)), ("needle", Some(n))])
            }
            7 => {
                let f = self.one(&["starts_with", "ends_with"]);
                let k = if f == "starts_with" { "prefix" } else { "suffix" };
                let (a, b) = (self.expr(T::Str, env, d), self.expr(T::Str, env, d));
                self.call(f, vec![("string", Some(a)), (k, Some(b))])
            }
            8 | 9 => {
                let f = self.one(&["any", "all"]);
                let (xs, e) = self.list_of_some_kind(env, d);
                let c = self.opt(70, |g| g.template(e, T::Bool, env, d, false));
                self.call(f, vec![("array", Some(xs)), ("condition_string", c)])
            }
            10 => {
                let r = self.expr(T::Rec, env, d);
                self.postfix(r, ".c")
            }
            11 => {
                let (c, a, b) = (self.expr(T::Any, env, d), self.expr(T::Bool, env, d), self.expr(T::Bool, env, d));
                self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", Some(b))])
            }
            12 => {
                // Short circuit guarding an expression that may fail.
                let op = self.one(&["and", "or"]);
                let a = self.expr(T::Bool, env, d);
                let b = self.expr(T::Num, env, d);
                format!("{a} {op} (1 / {b} > 0)")
            }
            _ => {
                let a = self.expr(T::Any, env, d);
                self.binop(a, "==", "null".into())
            }
        }
    }

    fn compound_any(&mut self, env: Env, d: u32) -> String {
        match self.pick(14) {
            0..=3 => {
                let t = self.any_t();
                self.compound(t, env, d)
            }
            4 => {
                let x = if self.chance(50) { self.expr(T::Obj, env, d) } else { self.expr(T::Any, env, d) };
                let seg = self.one(&[
                    "a", "0", "k", "length", "first", "last", "response", "name", "inner", "b", "x", "response",
                ]);
                self.postfix(x, &format!(".{seg}"))
            }
            5 => {
                let x = self.expr(T::Any, env, d);
                let k = if self.chance(50) { self.expr(T::Int, env, d) } else { self.expr(T::Str, env, d) };
                self.postfix(x, &format!("[{k}]"))
            }
            6 => {
                let x = self.expr(T::Any, env, d);
                let p =
                    self.one(&["\"a\"", "\"0.a\"", "\"inner.z.last\"", "\"k\"", "\"\"", "\"x.y.z\"", "s"]).to_string();
                self.call("get_object_property", vec![("obj", Some(x)), ("property_path", Some(p))])
            }
            7 => {
                let s = if self.chance(60) { "js".to_string() } else { self.expr(T::Str, env, d) };
                self.call("json_parse", vec![("json_string", Some(s))])
            }
            8 => {
                let (c, a) = (self.expr(T::Any, env, d), self.expr(T::Any, env, d));
                let b = self.opt(80, |g| g.expr(T::Any, env, d));
                self.call("if", vec![("condition", Some(c)), ("true_value", Some(a)), ("false_value", b)])
            }
            9 => {
                let (a, b) = (self.expr(T::Any, env, d), self.expr(T::Any, env, d));
                self.call("default", vec![("value", Some(a)), ("fallback", Some(b))])
            }
            10 => {
                let (xs, e) = self.list_of_some_kind(env, d);
                let f = self.one(&["min", "max"]);
                let ip = self.opt(50, |g| g.template(e, T::Any, env, d, true));
                self.call(f, vec![("array", Some(xs)), ("item_path", ip)])
            }
            11 => {
                let (xs, e) = self.list_of_some_kind(env, d);
                let c = self.template(e, T::Bool, env, d, false);
                self.call("find", vec![("array", Some(xs)), ("condition_string", Some(c))])
            }
            12 => self.pipeline(T::Any, env, d),
            _ => {
                // A nested map: `item` of the inner template shadows the outer one.
                let xs = self.expr(T::ListRec, env, d);
                // Half of them name the outer element, which the inner template still reads.
                let outer_name = env.named[1].is_none() && self.chance(50);
                let mut inner_env = Env { item: Some(T::Rec), ..env };
                if outer_name {
                    inner_env.named[1] = Some(T::Rec);
                }
                let inner_list = self.expr(T::ListStr, inner_env, d);
                let body = self.template(T::Str, T::Any, inner_env, d, false);
                let inner = self.call("map", vec![("array", Some(inner_list)), ("template", Some(body))]);
                let outer_tpl = if self.chance(40) { quote_dq(&inner) } else { inner };
                let outer_tpl =
                    if outer_name { format!("{AS_MARK}{}{AS_MARK}{outer_tpl}", ELEMENT_NAMES[1]) } else { outer_tpl };
                self.call("map", vec![("array", Some(xs)), ("template", Some(outer_tpl))])
            }
        }
    }

    /// `pipeline(init, [op, …])` where every value has shape `t`.
    fn pipeline(&mut self, t: T, env: Env, d: u32) -> String {
        let init = self.expr(t, env, d);
        let inner = Env { current: Some(t), ..env };
        let n = 1 + self.pick(3);
        let ops: Vec<String> = (0..n)
            .map(|_| match (t, self.pick(3)) {
                (T::Int, 0) => {
                    let x = self.expr(T::Int, inner, d + 1);
                    let op = self.one(&["+", "*", "-"]);
                    format!("current {op} {x}")
                }
                (T::Str, 0) => "upper(current)".to_string(),
                (T::ListRec, 0) => {
                    let c = self.template(T::Rec, T::Bool, inner, d + 1, false);
                    match split_as(&c) {
                        (c, Some(element_name)) => format!("filter(current, {c}, {element_name})"),
                        (c, None) => format!("filter(current, {c})"),
                    }
                }
                _ => self.expr(t, inner, d),
            })
            .collect();
        let ops = format!("[{}]", ops.join(", "));
        self.call("pipeline", vec![("initial_value", Some(init)), ("operations", Some(ops))])
    }
}

/// The expression a choice stream describes.
fn generate(choices: &[u32], const_bias: bool) -> String {
    let mut g = Gen { choices, pos: 0, max_depth: 4, const_bias };
    let t = ALL_T[g.pick(ALL_T.len())];
    g.expr(t, TOP, 0)
}

// ---------------------------------------------------------------------------------------
// random variables

fn record() -> impl Strategy<Value = serde_json::Value> {
    let a = prop_oneof![6 => -5i64..12, 1 => Just(i64::MAX), 1 => Just(0i64)];
    let b = prop::sample::select(vec!["", "x", "Bob", "a,b", "Éclair", " pad ", "b", "Z", "10"]);
    let c = prop_oneof![Just(json!(true)), Just(json!(false)), Just(json!(null))];
    let tags = prop::collection::vec(prop::sample::select(vec!["red", "blue", "", "Red"]), 0..3);
    (a, b, c, tags, prop::bool::weighted(0.1)).prop_map(|(a, b, c, tags, drop_c)| {
        let mut r = json!({"a": a, "b": b, "c": c, "tags": tags});
        if drop_c {
            r.as_object_mut().map(|o| o.shift_remove("c"));
        }
        r
    })
}

fn scalar() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        (-10i64..10).prop_map(|i| json!(i)),
        prop::sample::select(vec![0.5f64, -2.5, 3.0, 1e300, 0.1]).prop_map(|f| json!(f)),
        prop::sample::select(vec!["", "a", "B", "1", "x y"]).prop_map(|s| json!(s)),
    ]
}

fn mixed() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        4 => scalar(),
        1 => prop::collection::vec(scalar(), 0..3).prop_map(serde_json::Value::Array),
        1 => (scalar(), scalar()).prop_map(|(a, b)| json!({"a": a, "b": b})),
    ]
}

fn vars() -> impl Strategy<Value = serde_json::Value> {
    let xs = prop::collection::vec(record(), 0..5);
    let n = prop_oneof![8 => -3i64..10, 1 => Just(i64::MAX), 1 => Just(i64::MIN)];
    let f = prop_oneof![Just(0.0f64), Just(0.5), Just(-2.5), Just(3.0), Just(1e300), -100.0f64..100.0,];
    let s = prop::sample::select(vec![
        "",
        "hello",
        "a,b,c",
        " Trim Me ",
        "ÉclairÜ",
        "x\"y\\z",
        "123",
        "4.5",
        "red",
        "straße",
        "asc",
        "1e400",
    ]);
    // File values: a path string, and an object with a `path` (sometimes with its own
    // `file_name`, which wins over the derived one).
    let p = prop::sample::select(vec!["dir/sub/file.txt", "file", "/abs/x", "", "a/"]);
    let fo = prop_oneof![
        Just(json!({"path": "docs/readme.md"})),
        Just(json!({"path": "x", "file_name": "own"})),
        Just(json!({"path": 5})),
        Just(json!({})),
    ];
    // A step result: with a `response` key (a parallel step), or without one.
    let step = prop_oneof![
        Just(json!({"response": [{"v": 1}, {"v": 2}], "name": "par"})),
        Just(json!({"name": "plain", "total": 3})),
    ];
    let o = (
        prop_oneof![Just(json!("v")), Just(json!(3)), Just(json!(null)), Just(json!([1, 2])), Just(json!({"a": 1}))],
        -5i64..5,
        prop::sample::select(vec!["Ann", "", "b"]),
        prop::collection::vec(-3i64..4, 0..4),
        prop::bool::weighted(0.2),
        any::<bool>(),
    )
        .prop_map(|(k, x, name, z, response, flag)| {
            let mut o = json!({"k": k, "x": x, "name": name, "inner": {"y": x * 2, "z": z, "w": "deep"}, "flag": flag});
            if response {
                o.as_object_mut().map(|m| m.insert("response".into(), json!({"ok": true})));
            }
            o
        });
    let m = prop::collection::vec(mixed(), 0..5);
    let templates = vec![
        "item.a",
        "a",
        "item.b",
        "b",
        "item.a > 2",
        "item",
        "upper(item.b)",
        "item.c and item.a > 0",
        "tags.0",
        "{v: item.a}",
        "item..a",
        "1 +",
        "item.a + \"x\"",
        "nope(item)",
        "length",
        "item.length",
        "pipeline(item, [current.a, current])",
        "map(item.tags, template='upper(item)')",
        "if(item.c, item.a, 1 / 0)",
        "item.a / 0",
        "filter(item.tags, t)",
        "map([item], template=t)",
        // Read through the name `as` gives the element (a compile error where none is given).
        "el.a",
        "row",
        "el.a > 2",
        "map(el.tags, template='upper(item) + el.b')",
    ];
    let t = prop::sample::select(templates.clone());
    let t2 = prop_oneof![prop::sample::select(templates).prop_map(|s| json!(s)), Just(json!(5)), Just(json!(null))];
    let js = prop::sample::select(vec![
        "[1, 2]",
        "{\"a\": {\"b\": [true]}}",
        "\"s\"",
        "3.5",
        "{",
        "",
        "null",
        "12345678901234567890",
    ]);
    ((xs, n, f, s, o, m), (t, t2, js, p, fo, step)).prop_map(|((xs, n, f, s, o, m), (t, t2, js, p, fo, step))| {
        json!({"xs": xs, "n": n, "f": f, "s": s, "o": o, "m": m, "t": t, "t2": t2, "js": js, "p": p, "fo": fo, "step-1": step})
    })
}

// ---------------------------------------------------------------------------------------
// the property

#[derive(Default, Debug)]
struct Stats {
    cases: usize,
    compiled: usize,
    compile_errors: BTreeMap<String, usize>,
    values: usize,
    errors: BTreeMap<String, usize>,
    fuel: usize,
    mismatches: usize,
}

/// `TDSL_DIFF_VERBOSE=1` prints every program and its outcome.
fn verbose() -> bool {
    std::env::var_os("TDSL_DIFF_VERBOSE").is_some()
}

fn outcome_kind(o: &Outcome) -> String {
    match o {
        Outcome::Mismatch(_) => "MISMATCH".into(),
        other => format!("{other:?}"),
    }
}

fn cases() -> u32 {
    std::env::var("TDSL_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000)
}

#[test]
fn vm_and_reference_agree_on_random_programs() {
    let engines = [engine(), tight_engine(), small_output_engine()];
    let stats = RefCell::new(Stats::default());
    let config = ProptestConfig {
        cases: cases(),
        max_shrink_iters: 20_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (
        prop::collection::vec(any::<u32>(), 0..200),
        vars(),
        prop::bool::weighted(0.25),
        any::<bool>(),
        // Which engine: default limits mostly, sometimes small ones.
        prop_oneof![16 => Just(0usize), 3 => Just(1usize), 1 => Just(2usize)],
    );
    let result = runner.run(&strategy, |(choices, vars_json, open, const_bias, limits)| {
        let src = generate(&choices, const_bias);
        let vars = Value::from(&vars_json);
        let outcome = run_case(&engines[limits], &src, &vars, open);
        if verbose() {
            eprintln!("{:?} [{}] {src}", outcome_kind(&outcome), if open { "open" } else { "closed" });
        }
        let mut s = stats.borrow_mut();
        s.cases += 1;
        match &outcome {
            Outcome::CompileError(c) => *s.compile_errors.entry(format!("{c:?}")).or_default() += 1,
            Outcome::Fuel => {
                s.compiled += 1;
                s.fuel += 1;
            }
            Outcome::Value => {
                s.compiled += 1;
                s.values += 1;
            }
            Outcome::Error(c) => {
                s.compiled += 1;
                *s.errors.entry(format!("{c:?}")).or_default() += 1;
            }
            Outcome::Mismatch(_) => {
                s.compiled += 1;
                s.mismatches += 1;
            }
        }
        match outcome {
            Outcome::Mismatch(m) => Err(TestCaseError::fail(m)),
            _ => Ok(()),
        }
    });
    let s = stats.into_inner();
    eprintln!(
        "differential: {} cases, {} compiled ({:.1}%), {} values, {} errors {:?}, {} out of fuel, compile errors {:?}",
        s.cases,
        s.compiled,
        100.0 * s.compiled as f64 / s.cases.max(1) as f64,
        s.values,
        s.errors.values().sum::<usize>(),
        s.errors,
        s.fuel,
        s.compile_errors,
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(s.compiled * 100 > s.cases * 70, "the generator should be mostly well-typed: {s:?}");
    assert!(s.fuel * 100 < s.cases, "fuel should rarely run out: {s:?}");
    assert!(s.values * 100 > s.cases * 30, "most programs should succeed: {s:?}");
    assert!(s.errors.values().sum::<usize>() * 100 > s.cases * 5, "run-time errors should be exercised: {s:?}");
}

/// Prints generated programs, for eyeballing the generator:
/// `cargo test --test differential -- --ignored --nocapture samples`
#[test]
#[ignore = "prints samples"]
fn samples() {
    let mut runner = TestRunner::default();
    let strategy = (prop::collection::vec(any::<u32>(), 0..200), any::<bool>());
    for _ in 0..60 {
        let (choices, bias) = strategy.new_tree(&mut runner).unwrap().current();
        println!("{}", generate(&choices, bias));
    }
}

// ---------------------------------------------------------------------------------------
// targeted tests of the tricky semantics

fn base_vars() -> serde_json::Value {
    json!({
        "xs": [
            {"a": 1, "b": "x", "c": true, "tags": ["red", "blue"]},
            {"a": 5, "b": "Bob", "c": null, "tags": []},
            {"a": 3, "b": "", "c": false, "tags": ["red"]}
        ],
        "n": 3,
        "f": 2.5,
        "s": "a,b,c",
        "o": {"k": "v", "x": 2, "name": "Ann", "inner": {"y": 4, "z": [1, 2], "w": "deep"}, "flag": true},
        "m": [1, "a", null, true, 2.5],
        "t": "item.a",
        "t2": "a",
        "js": "[1, 2]",
        "z": 0
    })
}

#[track_caller]
fn ok(src: &str) -> Value {
    match agree(src, base_vars()) {
        Ok(v) => v,
        Err(e) => panic!("`{src}` failed: {:?} {}", e.code, e.message),
    }
}

#[track_caller]
fn fails(src: &str, code: Code) {
    match agree(src, base_vars()) {
        Ok(v) => panic!("`{src}` gave {v}, expected {code:?}"),
        Err(e) => assert_eq!(e.code, code, "`{src}`: {}", e.message),
    }
}

/// Hostile round: `group_by` whose groups are only counted (the VM's
/// `CALL_GROUPS_COUNTED`, groups without their elements), with string keys and keys of
/// other kinds turned into text, agrees with the reference evaluator, errors in the key
/// and the array included.
#[test]
fn counted_groups_agree() {
    for src in [
        "pipeline(group_by(xs, item.b), [map(values(current), length(item))])",
        "pipeline(group_by(m, item), [zip(keys(current), map(values(current), length(item)))])",
        "pipeline(group_by(xs, item.c), [from_entries(zip(keys(current), map(values(current), length(item))))])",
        "pipeline(group_by(xs, item.tags), [keys(current)])",
        "pipeline(group_by(xs, if(item.a > 2, item.b, item.a)), [{k: keys(current), n: map(values(current), length(item))}])",
        "pipeline(group_by(xs, 'item.b'), [map(values(current), length(item)), sum(current)])",
        "pipeline(group_by(json_parse('[]'), item), [keys(current)])",
        "group_by(m, item)",
        "group_by(xs, if(item.a > 2, item.b, item.tags))",
    ] {
        ok(src);
    }
    fails("pipeline(group_by(xs, item.a / 0), [keys(current)])", Code::DivisionByZero);
    fails(
        "pipeline(group_by(json_parse('[1, \"a\"]'), item + 1), [map(values(current), length(item))])",
        Code::RuntimeType,
    );
    fails("pipeline(group_by(json_parse('{}'), item), [keys(current)])", Code::RuntimeType);
    fails("pipeline(group_by(xs, if(item.a > 2, item.a / z, item.b)), [keys(current)])", Code::DivisionByZero);
}

/// The entry functions' errors are the same in both evaluators, whether the checker or the
/// run time finds them.
#[test]
fn entries_errors_agree() {
    fails("from_entries([['a']])", Code::RuntimeType);
    fails("from_entries([[null, 1]])", Code::RuntimeType);
    fails("from_entries([{value: 1}])", Code::RuntimeType);
    fails("from_entries(xs)", Code::RuntimeType);
    fails("merge(o, null, json_parse(js))", Code::RuntimeType);
    fails("to_entries(json_parse(js))", Code::RuntimeType);
}

/// Hostile round: `merge` of 10,000 arguments compiles (the checker's variadic signature,
/// the result type of 10,000 objects) and both evaluators agree on it.
#[test]
fn merge_of_many_arguments() {
    let src = format!("merge({})", (0..10_000).map(|i| format!("{{a{i}: {i}}}")).collect::<Vec<_>>().join(", "));
    let v = ok(&src);
    let Value::Object(o) = &v else { panic!("not an object: {v}") };
    assert_eq!(o.len(), 10_000);
    let src = format!("length(merge({}))", vec!["o"; 10_000].join(", "));
    assert_eq!(ok(&src).to_string(), "5");
}

/// Hostile round: the fused shapes (`map`/`sum` over `filter`/`sort`, which the VM runs as
/// one `CALL_FUSED`) agree with the reference evaluator, errors inside the predicate, key
/// and template included, and so do the entry functions over their results.
#[test]
fn fused_shapes_agree() {
    for src in [
        "map(filter(xs, item.a > 1), item.b)",
        "sum(filter(xs, item.a > 1), item.a)",
        "map(sort(xs, item.b, 'desc'), item.a)",
        "sum(sort(xs, item.a), item.a * 2)",
        "from_entries(map(filter(xs, item.a > 0), [item.b, item.a]))",
        "from_entries(map(sort(xs, item.a), {key: item.a, value: item.b}))",
        "merge(from_entries(map(sort(xs, item.b), [item.b, item.a])), {z: sum(filter(xs, true), item.a)})",
        "map(sort([3, 1.5, -0.0, 0, null, 'a', [1], {}], item), item)",
        "group_by(map(filter(xs, true), {k: if(item.a > 1, item.a * 1.5, null)}), item.k)",
    ] {
        ok(src);
    }
    fails("map(filter(xs, item.a / 0 > 1), item)", Code::DivisionByZero);
    fails("map(filter(xs, true), item.a / 0)", Code::DivisionByZero);
    fails("sum(filter(json_parse('[1, \"a\"]'), true), item)", Code::RuntimeType);
    fails("sum(sort(json_parse('[1, \"a\"]')), item)", Code::RuntimeType);
    fails("from_entries(map(filter(xs, true), [item.c, 1]))", Code::RuntimeType);
}

#[test]
fn short_circuit() {
    assert_eq!(ok("false and (1 / 0 > 0)").to_string(), "false");
    assert_eq!(ok("true or (1 / 0 > 0)").to_string(), "true");
    assert_eq!(ok("false && 1 / z > 0").to_string(), "false");
    assert_eq!(ok("n > 0 || 1 / z > 0").to_string(), "true");
    assert_eq!(ok("xs.length > 5 and xs[10].a / z > 0").to_string(), "false");
    assert_eq!(ok("[] and 1 / 0").to_string(), "false");
    assert_eq!(ok("'x' or 1 / 0").to_string(), "true");
    assert_eq!(ok("'x' and 0").to_string(), "false");
    assert_eq!(ok("not (1 / 1 == 1.0)").to_string(), "false");
    assert_eq!(ok("!n").to_string(), "false");
    fails("true and (1 / 0 > 0)", Code::DivisionByZero);
    fails("n > 0 and 1 / z > 0", Code::DivisionByZero);
}

#[test]
fn lazy_if() {
    assert_eq!(ok("if(true, 1, 1 / 0)").to_string(), "1");
    assert_eq!(ok("if(false, 1 / 0, 2)").to_string(), "2");
    assert_eq!(ok("if(n > 0, 1, 1 / 0)").to_string(), "1");
    assert_eq!(ok("if(condition=n < 0, true_value=1 / z)").to_string(), "null");
    assert_eq!(ok("if(false_value=n % 0, true_value='y', condition=m)").to_string(), "\"y\"");
    fails("if(n > 0, 1 / 0, 1)", Code::DivisionByZero);
    fails("if(n < 0, 1, 1 / 0)", Code::DivisionByZero);
    fails("if(true, 1 / z, 1)", Code::DivisionByZero);
}

#[test]
fn integer_overflow_promotes_to_float() {
    assert_eq!(ok("9223372036854775807 + 1").to_string(), "9.223372036854776e+18");
    assert_eq!(ok("-9223372036854775807 - 2").to_string(), "-9.223372036854776e+18");
    assert_eq!(ok("9223372036854775807 * 2").to_string(), "1.8446744073709552e+19");
    assert_eq!(ok("9223372036854775807 + n - n").to_string(), "9.223372036854776e+18");
    assert_eq!(ok("sum([9223372036854775807, 1])").to_string(), "9.223372036854776e+18");
    assert_eq!(ok("sum([9223372036854775807, n])").to_string(), "9.223372036854776e+18");
    // An integer literal beyond i64 is a float.
    assert_eq!(ok("9223372036854775808").to_string(), "9.223372036854776e+18");
    assert_eq!(ok("-(-9223372036854775807 - 1)").to_string(), "9.223372036854776e+18");
    assert_eq!(ok("(-9223372036854775807 - 1) % -1").to_string(), "0");
    assert_eq!(ok("2 * 3 + 1").to_string(), "7");
    fails("1e308 * 10", Code::NumberOverflow);
    fails("1e308 * n * 10", Code::NumberOverflow);
}

#[test]
fn division_is_always_float() {
    assert_eq!(ok("6 / 3").to_string(), "2.0");
    assert_eq!(ok("6 / n").to_string(), "2.0");
    assert_eq!(ok("o.x / 2").to_string(), "1.0");
    assert_eq!(ok("7 % 2").to_string(), "1");
    assert_eq!(ok("7.5 % 2").to_string(), "1.5");
    assert_eq!(ok("1 == 1.0").to_string(), "true");
    assert_eq!(ok("[1, 2] == [1.0, 2.0]").to_string(), "true");
    fails("1 / 0", Code::DivisionByZero);
    fails("1 % 0.0", Code::DivisionByZero);
    fails("n / z", Code::DivisionByZero);
}

#[test]
fn null_safe_paths() {
    assert_eq!(ok("o.missing.deeper.still").to_string(), "null");
    assert_eq!(ok("xs.10.a").to_string(), "null");
    assert_eq!(ok("xs[10].a").to_string(), "null");
    assert_eq!(ok("xs[-1].a").to_string(), "3");
    assert_eq!(ok("xs[-10]").to_string(), "null");
    assert_eq!(ok("REF:o.missing.x.y").to_string(), "null");
    assert_eq!(ok("REF:xs.1.c.anything").to_string(), "null");
    assert_eq!(ok("m.2.a").to_string(), "null");
    assert_eq!(ok("o.inner.z.last").to_string(), "2");
    assert_eq!(ok("o.k.length").to_string(), "1");
    assert_eq!(ok("xs.first.tags.length").to_string(), "2");
    assert_eq!(ok("[].first").to_string(), "null");
    assert_eq!(ok("xs[1].tags.first").to_string(), "null");
    assert_eq!(ok("o[\"inner\"][\"z\"][0]").to_string(), "1");
    assert_eq!(ok("map(xs, template=item.missing.x)").to_string(), "[null,null,null]");
    fails("m.0.a", Code::RuntimeType);
    fails("REF:m.3.a", Code::RuntimeType);
    fails("(m.0).a", Code::RuntimeType);
    fails("map(m, template=item.length)", Code::RuntimeType);
}

#[test]
fn folding_versus_run_time_errors() {
    // The error sits in a branch that folding could see but must not raise.
    assert_eq!(ok("if(n > 0, 1, 1 / 0)").to_string(), "1");
    assert_eq!(ok("[1, 2][0] + upper(\"a\").length").to_string(), "2");
    assert_eq!(ok("1 + 2 * 3 - 4 / 2").to_string(), "5.0");
    assert_eq!(ok("upper('a') + lower(\"B\")").to_string(), "\"Ab\"");
    assert_eq!(ok("count([1, 2, 3]) + sum([1, 2, 3])").to_string(), "9");
    assert_eq!(ok("if(1 > 2, 1 / 0, 'fine')").to_string(), "\"fine\"");
    assert_eq!(ok("false and json_parse('{')").to_string(), "false");
    assert_eq!(ok("{a: 1}.a + [1, 2].length").to_string(), "3");
    fails("json_parse('{')", Code::InvalidJson);
    fails("[1, 2, 1 / 0]", Code::DivisionByZero);
    fails("range(0, 5, 0)", Code::RuntimeArgument);
    fails("to_number('x1')", Code::RuntimeArgument);
    fails("if(true, 1 / 0, 1)", Code::DivisionByZero);
}

#[test]
fn templates_in_every_form() {
    assert_eq!(ok("map(xs, template=\"item.a\")").to_string(), "[1,5,3]");
    assert_eq!(ok("map(xs, 'item.b')").to_string(), "[\"x\",\"Bob\",\"\"]");
    assert_eq!(ok("map(xs, template={x: item.a})").to_string(), "[{\"x\":1},{\"x\":5},{\"x\":3}]");
    assert_eq!(ok("map(xs, template=upper(item.b))").to_string(), "[\"X\",\"BOB\",\"\"]");
    assert_eq!(ok("map(array=xs, template=t)").to_string(), "[1,5,3]");
    assert_eq!(ok("sum(xs, item_path=t2)").to_string(), "9");
    assert_eq!(ok("sum(xs, item_path=\"a\")").to_string(), "9");
    assert_eq!(ok("group_by(xs, key_path=\"c\")").to_string(), "{\"true\":[{\"a\":1,\"b\":\"x\",\"c\":true,\"tags\":[\"red\",\"blue\"]}],\"\":[{\"a\":5,\"b\":\"Bob\",\"c\":null,\"tags\":[]}],\"false\":[{\"a\":3,\"b\":\"\",\"c\":false,\"tags\":[\"red\"]}]}");
    assert_eq!(
        ok("filter(xs, condition_string=\"item.a > 2 and item.c == null\")").to_string(),
        "[{\"a\":5,\"b\":\"Bob\",\"c\":null,\"tags\":[]}]"
    );
    assert_eq!(ok("filter(xs, item.a > n)").to_string(), "[{\"a\":5,\"b\":\"Bob\",\"c\":null,\"tags\":[]}]");
    assert_eq!(
        ok("map(xs, template=\"map(item.tags, template=\\\"upper(item)\\\")\")").to_string(),
        "[[\"RED\",\"BLUE\"],[],[\"RED\"]]"
    );
    assert_eq!(
        ok("map(xs, template=map(item.tags, template=item + item))").to_string(),
        "[[\"redred\",\"blueblue\"],[],[\"redred\"]]"
    );
    assert_eq!(ok("sort(xs, key_path=\"b\", direction=\"desc\").0.b").to_string(), "\"x\"");
    assert_eq!(ok("sort(xs, direction='desc', key_path=item.a).0.a").to_string(), "5");
    assert_eq!(
        ok("pipeline(xs, [filter(current, 'item.c != null'), map(current, 'item.a'), sum(current)])").to_string(),
        "4"
    );
    assert_eq!(ok("pipeline(n, [current + 1, current * current, pipeline(current, [current - 1])])").to_string(), "15");
    assert_eq!(ok("map(range(3), template=pipeline(item, [current * 10, current + item]))").to_string(), "[0,11,22]");
    assert_eq!(ok("count(xs, 'item.c')").to_string(), "1");
    assert_eq!(ok("find(xs, condition_string=item.b == 'Bob').a").to_string(), "5");
    assert_eq!(ok("any(m)").to_string(), "true");
    assert_eq!(ok("all(xs, 'item.a')").to_string(), "true");
    assert_eq!(ok("min(xs, 'a') + max(array=xs, item_path='item.a')").to_string(), "6");
    assert_eq!(ok("avg(xs, 'a')").to_string(), "3.0");
}

#[test]
fn dynamic_template_errors() {
    let mut vars = base_vars();
    vars["t"] = json!("item..a");
    match agree("map(xs, template=t)", vars.clone()) {
        Err(e) => assert_eq!(e.code, Code::DynamicTemplate),
        Ok(v) => panic!("gave {v}"),
    }
    // Compiled even when there is no element to apply it to.
    match agree("map([], template=t)", vars.clone()) {
        Err(e) => assert_eq!(e.code, Code::DynamicTemplate),
        Ok(v) => panic!("gave {v}"),
    }
    vars["t"] = json!(5);
    // Closed scope: a static error; open scope: a run-time one (checked by `agree`).
    let engine = engine();
    let v = Value::from(&vars);
    assert!(engine.compile_in("map(xs, template=t)", &Scope::from_vars(&v)).is_err());
    match engine.compile_in("map(xs, template=t)", &Scope::open()).unwrap().eval(&v) {
        Err(e) => assert_eq!(e.code, Code::RuntimeType),
        Ok(v) => panic!("gave {v}"),
    }
}

#[test]
fn limits_are_enforced_alike() {
    let run = |engine: &Engine, src: &str, vars: serde_json::Value| -> Vec<Res> {
        let vars = Value::from(&vars);
        let p = engine.compile_in(src, &Scope::from_vars(&vars)).expect("compiles");
        vec![p.eval(&vars), p.eval_reference(&vars, &vars), eval_unfolded(engine, src, &Scope::from_vars(&vars), &vars)]
    };
    let codes = |rs: Vec<Res>| -> Vec<Option<Code>> { rs.into_iter().map(|r| r.err().map(|e| e.code)).collect() };
    let tight = tight_engine();
    for (src, code) in [
        ("s + s + s + s", Code::StringLimit),
        ("range(7)", Code::ListLimit),
        ("xs + xs + xs", Code::ListLimit),
        ("join(map(xs, template=item.b + item.b + item.b), ', ')", Code::StringLimit),
        ("map(range(6), template={o: o})", Code::OutputLimit),
    ] {
        assert_eq!(codes(run(&tight, src, base_vars())), vec![Some(code); 3], "{src}");
    }
    // A template held in a variable that applies itself: the run-time depth limit.
    let mut vars = base_vars();
    vars["t"] = json!("map([item], template=t)");
    for engine in [&tight, &engine()] {
        assert_eq!(codes(run(engine, "map([1], template=t)", vars.clone())), vec![Some(Code::DepthLimit); 3]);
    }
    // Fuel: where it runs out may differ, that it does may not.
    let starved = Engine::new().with_limits(Limits { fuel: 50, ..Limits::default() });
    assert_eq!(
        codes(run(&starved, "map(range(100), template=item + 1)", base_vars())),
        vec![Some(Code::FuelExhausted); 3]
    );
}

#[test]
fn all_builtins_agree_on_constants_and_variables() {
    for src in [
        "get_object_property(o, 'inner.z.1')",
        "get_object_property(obj={a: [1, {b: 2}]}, property_path=\"a.1.b\")",
        "json_parse(js)",
        "json_parse('{\"a\": [1, 2.5, \"x\"]}')",
        "join(xs.0.tags, ', ')",
        "join(array=[1, 'a', null, true, {name: 'N'}, [1]], separator='-')",
        "unique([1, 1.0, 2, 'a', 'a'])",
        "flatten([[1], 2, [[3]]])",
        "create_object(a=1, b=s, c=xs.length)",
        "length(s) + length(xs) + length(o) + length(null)",
        "keys(o)",
        "values(o.inner)",
        "contains(s, 'b') and contains(xs.0.tags, 'red') and contains(o, 'k')",
        "starts_with(s, 'a,') and ends_with(string=s, suffix='c')",
        "lower('ÀB') + upper(s) + trim('  x ')",
        "split(s) + split(s, '') + split(null)",
        "replace(s, ',', ';')",
        "to_string(o.inner) + to_string(1.0) + to_string(null)",
        "to_number('  42 ') + to_number('1.5') + to_number(true)",
        "round(2.5) + round(-2.5) + round(f, 1) + round(1234, -2)",
        "min(m) == null",
        "max(['a', 'b'])",
        "avg([])",
        "default(null, 1) + default(2, 1)",
        "merge(o, {x: 10}).x",
        "merge(o, null, {x: 10}, o.inner, {k: [1]})",
        "merge(o)",
        "from_entries(zip(keys(o), values(o)))",
        "from_entries(to_entries(o.inner))",
        "from_entries([[1, 'a'], {key: 'b'}, {key: true, value: xs}, ['b', 2]])",
        "to_entries(o)",
        "to_entries(null)",
        "pick(o, ['k', 'x'])",
        "omit(o, ['k', 'x', 'inner'])",
        "zip(xs, [1, 2])",
        "range(5) + range(2, 8, 3) + range(5, 0, -2)",
        "slice(s, 1, -1) + slice('abc', -2)",
        "slice(xs, 1).length",
        "any([0, null]) or all([])",
        "find(m, 'item == true')",
        "json_stringify(o.inner)",
        "format_datetime(1700000000, '%Y-%m-%d')",
        "datetime_now()",
        "datetime_now('unix')",
        "sort(m)",
        "sort([3, 1, 2], direction='desc')",
        "group_by(m, key_path='item')",
    ] {
        ok(src);
    }
}

// ---------------------------------------------------------------------------------------
// regressions: disagreements found by the property test (they fail until fixed)

/// Field access on a parenthesized REF (or on anything folding turns into a bare REF) is
/// plain segment resolution (SPEC §2 table: an object's absent key is `null`). The response
/// alias belongs to REF path syntax only (`REF:<step>.response`). The compiler merges the
/// field chain into the REF instruction (`REF o [response]`) and `walk_ref` then applies the
/// alias, so the VM returns the whole object; the checker types the expression as `null`
/// (warning W0102 "always null"), and the reference evaluator returns `null`.
#[test]
fn regression_field_on_parenthesized_ref_is_not_a_response_alias() {
    let vars = json!({"o": {"k": "v", "x": 2}, "xs": [{"a": 1}]});
    assert_eq!(agree("(REF:o).response", vars.clone()).unwrap().to_string(), "null");
    assert_eq!(agree("(REF:o).response.k", vars.clone()).unwrap().to_string(), "null");
    assert_eq!(agree("map(xs, template=(REF:o).response)", vars.clone()).unwrap().to_string(), "[null]");
    // Reached through folding: `if(true, REF:o, …)` folds to the bare REF.
    assert_eq!(agree("(if(true, REF:o, {})).response", vars.clone()).unwrap().to_string(), "null");
    // With segments in the REF itself the alias is (rightly) not involved.
    assert_eq!(agree("(REF:o.k).length", vars.clone()).unwrap().to_string(), "1");
    assert_eq!(agree("REF:o.response", vars).unwrap().to_string(), "{\"k\":\"v\",\"x\":2}");
}

/// A template held in a variable is read and compiled when the call starts, after every
/// argument has been evaluated (SPEC §4.4; the VM resolves dynamic templates at `CALL`).
/// The reference evaluator used to compile it at its argument's position, so a bad
/// template was reported before a later argument failed, and the VM reported the later
/// argument's error. Only `sort` has a value parameter after a template parameter.
#[test]
fn regression_dynamic_template_is_compiled_at_call_start() {
    let mut vars = base_vars();
    vars["t"] = json!("item..a");
    match agree("sort(xs, key_path=t, direction=to_string(1 / z))", vars.clone()) {
        Err(e) => assert_eq!(e.code, Code::DivisionByZero),
        Ok(v) => panic!("gave {v}"),
    }
    match agree("sort(xs, key_path=t, direction='desc')", vars.clone()) {
        Err(e) => assert_eq!(e.code, Code::DynamicTemplate),
        Ok(v) => panic!("gave {v}"),
    }
    // The same with a template variable that does not hold a string (open scope only: in
    // a closed scope it is a static error).
    vars["t"] = json!(5);
    let v = Value::from(&vars);
    let e = engine();
    for (src, code) in [
        ("sort(xs, key_path=t, direction=to_string(1 / z))", Code::DivisionByZero),
        ("sort(xs, key_path=t, direction='desc')", Code::RuntimeType),
    ] {
        match run_case(&e, src, &v, true) {
            Outcome::Error(c) if c == code => {}
            other => panic!("{src}: {other:?}"),
        }
    }
}

/// SPEC §4.8: the total output size is bounded; exceeding it is an error naming the limit.
/// `Program::eval_with` only checks lists and objects (an optimisation), so a string (or
/// number) result larger than `max_output_bytes` passes in the VM while the reference
/// evaluator reports `OutputLimit`. Reachable whenever a host sets an output limit below
/// the string limit (the default limits are 64 MiB output, 16 MiB strings).
#[test]
fn regression_scalar_results_are_checked_against_the_output_limit() {
    let engine = small_output_engine();
    let vars = Value::from(&json!({"s": "a string of more than twenty-four bytes"}));
    for src in ["s", "s + '!'", "upper(s)", "datetime_now()", "[s].0"] {
        for open in [false, true] {
            match run_case(&engine, src, &vars, open) {
                Outcome::Error(Code::OutputLimit) => {}
                other => panic!("{src}: {other:?}"),
            }
        }
    }
}

/// Templates given by name (compiled at run time) whose text the folder simplifies. The VM
/// runs the folded template; the reference evaluator checks the text itself and walks the
/// unfolded tree (it shares no compile or fold step with the VM), so a folding bug in
/// run-time templates makes the two differ here.
#[test]
fn dynamic_templates_the_folder_simplifies() {
    let cases: &[(&str, &str)] = &[
        ("item.a * (2 + 3)", "[5,25,15]"),
        ("if(1 > 2, 1 / 0, item.a + upper('x').length)", "[2,6,4]"),
        ("[item.a, 10 - 4][1] + count([1, 2, 3])", "[9,9,9]"),
        ("to_string(1 + 1) + item.b", "[\"2x\",\"2Bob\",\"2\"]"),
        ("if(true, item.a, 1 / 0) + {k: 2}.k", "[3,7,5]"),
        ("false and json_parse('{') or item.a > 2", "[false,true,true]"),
        ("map([1, 2], template=item * 2 + 1).1 - item.a", "[4,0,2]"),
        ("item.b + '-' + to_string(1 + 1)", "[\"x-2\",\"Bob-2\",\"-2\"]"),
    ];
    for (template, expected) in cases {
        let mut vars = base_vars();
        vars["t"] = json!(template);
        match agree("map(xs, template=t)", vars) {
            Ok(v) => assert_eq!(v.to_string(), *expected, "template `{template}`"),
            Err(e) => panic!("template `{template}` failed: {:?} {}", e.code, e.message),
        }
    }
    for (template, code) in [
        ("item.a + json_parse('{').x", Code::InvalidJson),
        ("item.a / (2 - 2)", Code::DivisionByZero),
        ("range(0, item.a, 1 - 1)", Code::RuntimeArgument),
    ] {
        let mut vars = base_vars();
        vars["t"] = json!(template);
        match agree("map(xs, template=t)", vars) {
            Ok(v) => panic!("template `{template}` gave {v}, expected {code:?}"),
            Err(e) => assert_eq!(e.code, code, "template `{template}`: {}", e.message),
        }
    }
}
