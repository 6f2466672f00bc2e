//! rhai: scripts compiled once to an `AST`, evaluated in the timed loop against a scope that
//! holds the input (converted once with `rhai::serde::to_dynamic`).

use std::hint::black_box;

use rhai::{Dynamic, Engine, Scope, AST};
use serde_json::Value as J;

use crate::{check_eq, Inputs, Prepared, W};

pub const W1: &str = "r.profile.email";
pub const W2: &str = r#"
let s = 0;
for r in records {
    if r.status == "active" && r.score > 50 { s += r.score; }
}
s
"#;
pub const W3: &str = r#"
let m = #{};
for r in records {
    let c = r.category;
    if c in m { m[c] += 1; } else { m[c] = 1; }
}
m
"#;
pub const W4: &str = r#"
let a = records;
a.sort(|x, y| y.score - x.score);
let s = "";
let first = true;
for r in a {
    if first { first = false; } else { s += ", "; }
    s += r.name;
}
s
"#;
pub const W5: &str = r#"records.filter(|r| r.status == "active" && r.score > 50 && r.profile.age < 40).map(|r| #{id: r.id, email: r.profile.email})"#;

fn to_dynamic(v: &J) -> Dynamic {
    rhai::serde::to_dynamic(v).expect("rhai: to_dynamic")
}

fn to_json(d: &Dynamic) -> J {
    rhai::serde::from_dynamic(d).expect("rhai: from_dynamic")
}

fn eval(engine: &Engine, scope: &mut Scope<'static>, ast: &AST) -> Dynamic {
    let len = scope.len();
    let out = engine
        .eval_ast_with_scope::<Dynamic>(scope, ast)
        .unwrap_or_else(|e| panic!("rhai: eval failed: {e}"));
    // Drop the script's top-level `let`s so every iteration starts alike.
    scope.rewind(len);
    out
}

pub fn prepare(w: W, inp: &Inputs) -> Prepared {
    let e = &inp.expect;
    let engine = Engine::new();
    let compile = |src: &str| engine.compile(src).unwrap_or_else(|e| panic!("rhai: compile: {e}"));
    let run = |src: &str, var: &str, input: &J, want: J| -> Prepared {
        let ast = compile(src);
        let mut scope = Scope::new();
        scope.push_dynamic(var.to_string(), to_dynamic(input));
        check_eq("rhai", w, to_json(&eval(&engine, &mut scope, &ast)), want);
        let engine = Engine::new();
        Prepared::run(move || {
            drop(black_box(eval(&engine, &mut scope, black_box(&ast))));
        })
    };
    match w {
        W::W0 => {
            let records = inp.records.clone();
            check_eq("rhai", w, to_json(&to_dynamic(&records)), records.clone());
            Prepared::run_note(move || drop(black_box(to_dynamic(black_box(&records)))), "rhai::serde::to_dynamic")
        }
        W::W1 => run(W1, "r", &inp.one, J::from(e.email.clone())),
        W::W2 => run(W2, "records", &inp.records, J::from(e.sum)),
        W::W3 => run(W3, "records", &inp.records, e.counts_object()),
        W::W4 => run(W4, "records", &inp.records, J::from(e.joined.clone())),
        W::W5 => {
            let ast = compile(W5);
            let mut scope = Scope::new();
            scope.push_dynamic("records", to_dynamic(&inp.records));
            check_eq("rhai", w, to_json(&eval(&engine, &mut scope, &ast)), e.w5.clone());
            Prepared::run(move || {
                black_box(black_box(&engine).compile(black_box(W5)).ok());
            })
        }
    }
}
