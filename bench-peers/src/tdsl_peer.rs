//! tdsl: `Engine::compile` once, `Program::eval` in the timed loop (W1: `Program::eval_ref`,
//! which returns the email borrowed from the record, as the hand loop's `email()` does).

use std::hint::black_box;

use serde_json::Value as J;

use crate::{check_eq, Inputs, Prepared, W};

pub const W1: &str = "profile.email";
pub const W2: &str = "sum(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), item_path=\"item.score\")";
pub const W3: &str = "pipeline(group_by(array=records, key_path=\"item.category\"), [map(array=values(current), template=length(item))])";
pub const W4: &str = "join(array=map(array=sort(array=records, key_path=\"item.score\", direction=\"desc\"), template=\"item.name\"), separator=\", \")";
pub const W5: &str = "map(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50 and item.profile.age < 40\"), template={id: item.id, email: item.profile.email})";

/// A tdsl value as JSON (through `Serialize`: tdsl has no `From` for `serde_json::Value`).
pub fn to_json(v: &tdsl::Value) -> J {
    serde_json::to_value(v).expect("a tdsl value serialises")
}

fn compile(engine: &tdsl::Engine, src: &str) -> tdsl::Program {
    match engine.compile(src) {
        Ok(p) => p,
        Err(diags) => panic!("tdsl: compiling {src:?} failed: {diags:?}"),
    }
}

fn eval(p: &tdsl::Program, vars: &tdsl::Value) -> J {
    match p.eval(vars) {
        Ok(v) => to_json(&v),
        Err(e) => panic!("tdsl: eval failed: {e:?}"),
    }
}

pub fn prepare(w: W, inp: &Inputs) -> Prepared {
    let e = &inp.expect;
    let engine = tdsl::Engine::new();
    let run = |src: &str, vars: &J, want: J| -> Prepared {
        let program = compile(&engine, src);
        let vars = tdsl::Value::from(vars);
        check_eq("tdsl", w, eval(&program, &vars), want);
        Prepared::run(move || {
            black_box(black_box(&program).eval(black_box(&vars)).ok());
        })
    };
    match w {
        W::W0 => {
            let records = inp.records.clone();
            check_eq("tdsl", w, to_json(&tdsl::Value::from(&records)), records.clone());
            Prepared::run(move || {
                black_box(tdsl::Value::from(black_box(&records)));
            })
        }
        W::W1 => {
            let program = compile(&engine, W1);
            let vars = tdsl::Value::from(&inp.one);
            check_eq("tdsl", w, eval(&program, &vars), J::from(e.email.clone()));
            let borrowed = program.eval_ref(&vars).map(|v| to_json(&v)).ok();
            check_eq("tdsl", w, borrowed, Some(J::from(e.email.clone())));
            Prepared::run(move || {
                black_box(black_box(&program).eval_ref(black_box(&vars)).ok());
            })
        }
        W::W2 => run(W2, &inp.vars, J::from(e.sum)),
        W::W3 => run(
            W3,
            &inp.vars,
            J::Array(e.counts.iter().map(|(_, c)| J::from(*c)).collect()),
        ),
        W::W4 => run(W4, &inp.vars, J::from(e.joined.clone())),
        W::W5 => {
            let program = compile(&engine, W5);
            check_eq("tdsl", w, eval(&program, &tdsl::Value::from(&inp.vars)), e.w5.clone());
            Prepared::run(move || {
                black_box(black_box(&engine).compile(black_box(W5)).ok());
            })
        }
    }
}
