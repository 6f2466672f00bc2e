//! jmespath: `jmespath::compile` once.
//!
//! `jmespath` (the fast path): the input is converted once, up front, into jmespath's own
//! `Variable` (a direct constructor walk), and the timed loop calls `jmespath::interpret` on
//! it. `jmespath-search`: the documented `expr.search(&serde_json_value)`; without the
//! nightly-only `specialized` feature, `search` converts its whole argument into a `Variable`
//! through serde on every call, which is what a user of `search` pays. Its W0 is the
//! library's own `Variable::try_from(&serde_json::Value)`.

use std::collections::BTreeMap;
use std::hint::black_box;

use jmespath::{Context, Expression, Rcvar, Variable, DEFAULT_RUNTIME};
use serde_json::Value as J;

use crate::{check_eq, Inputs, Prepared, W};

pub const W1: &str = "profile.email";
pub const W2: &str = "sum([?status=='active' && score > `50`].score)";
pub const W4: &str = "join(', ', map(&name, reverse(sort_by(reverse(@), &score))))";
pub const W5: &str =
    "[?status=='active' && score > `50` && profile.age < `40`].{id: id, email: profile.email}";

pub fn compile(src: &str) -> Expression<'static> {
    jmespath::compile(src).unwrap_or_else(|e| panic!("jmespath: compiling {src:?}: {e}"))
}

/// Direct conversion into jmespath's value type.
pub fn from_json(v: &J) -> Variable {
    match v {
        J::Null => Variable::Null,
        J::Bool(b) => Variable::Bool(*b),
        J::Number(n) => Variable::Number(n.clone()),
        J::String(s) => Variable::String(s.clone()),
        J::Array(a) => Variable::Array(a.iter().map(|x| Rcvar::new(from_json(x))).collect()),
        J::Object(o) => Variable::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), Rcvar::new(from_json(x))))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

fn interpret(expr: &Expression<'static>, data: &Rcvar) -> Rcvar {
    let mut ctx = Context::new(expr.as_str(), &DEFAULT_RUNTIME);
    jmespath::interpret(data, expr.as_ast(), &mut ctx)
        .unwrap_or_else(|e| panic!("jmespath: runtime error: {e}"))
}

/// `src` compiled and run on `records`, as JSON (for checking another engine against it).
pub fn run_json(src: &str, records: &J) -> J {
    to_json(&interpret(&compile(src), &Rcvar::new(from_json(records))))
}

fn to_json(v: &Variable) -> J {
    serde_json::to_value(v).expect("jmespath Variable serializes")
}

pub fn prepare(w: W, inp: &Inputs, search: bool) -> Prepared {
    let e = &inp.expect;
    let name = if search { "jmespath-search" } else { "jmespath" };
    let run = |src: &str, input: &J, want: J| -> Prepared {
        let expr = compile(src);
        if search {
            let input = input.clone();
            check_eq(name, w, to_json(&expr.search(&input).unwrap()), want);
            Prepared::run_note(
                move || {
                    black_box(black_box(&expr).search(black_box(&input)).ok());
                },
                "expr.search(&serde_json::Value): serde conversion per call",
            )
        } else {
            let data = Rcvar::new(from_json(input));
            check_eq(name, w, to_json(&interpret(&expr, &data)), want);
            Prepared::run_note(
                move || {
                    black_box(interpret(black_box(&expr), black_box(&data)));
                },
                "interpret on a Variable converted once",
            )
        }
    };
    match w {
        W::W0 => {
            let records = inp.records.clone();
            if search {
                let conv = |r: &J| Variable::try_from(r).expect("jmespath: convert");
                check_eq(name, w, to_json(&conv(&records)), records.clone());
                Prepared::run_note(
                    move || drop(black_box(conv(black_box(&records)))),
                    "Variable::try_from(&Value) (serde below the top level)",
                )
            } else {
                check_eq(name, w, to_json(&from_json(&records)), records.clone());
                Prepared::run_note(
                    move || drop(black_box(from_json(black_box(&records)))),
                    "direct Variable constructors",
                )
            }
        }
        W::W1 => run(W1, &inp.one, J::from(e.email.clone())),
        W::W2 => run(W2, &inp.records, J::from(e.sum as f64)),
        W::W3 => Prepared::na("JMESPath has no group_by (counting needs the keys in advance)"),
        W::W4 => run(W4, &inp.records, J::from(e.joined.clone())),
        W::W5 if search => Prepared::na("same compile step as jmespath"),
        W::W5 => {
            let expr = compile(W5);
            let data = Rcvar::new(from_json(&inp.records));
            check_eq(name, w, to_json(&interpret(&expr, &data)), e.w5.clone());
            Prepared::run(move || {
                black_box(jmespath::compile(black_box(W5)).ok());
            })
        }
    }
}
