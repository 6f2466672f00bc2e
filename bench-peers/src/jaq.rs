//! jaq (jaq-core + jaq-std + jaq-json): load + compile once, run the filter in the timed loop.
//!
//! `jaq` is the main variant. `jaq-alt` measures the alternatives worth knowing about:
//! W0 through jaq-json's serde `Deserialize` instead of a direct constructor walk, and W3
//! with `reduce`-based counting instead of `group_by(.category) | map(length)`.

use std::hint::black_box;

use jaq_core::data::JustLut;
use jaq_core::load::{parse::Def, Arena, File, Loader};
use jaq_core::{unwrap_valr, Compiler, Ctx, Vars};
use jaq_json::{Num, Val};
use serde::Deserialize;
use serde_json::Value as J;

use crate::{check_eq, Inputs, Prepared, W};

type D = JustLut<Val>;
type Filter = jaq_core::Filter<D>;

pub const W1: &str = ".profile.email";
pub const W2: &str = r#"map(select(.status == "active" and .score > 50) | .score) | add"#;
pub const W3: &str = "group_by(.category) | map(length)";
pub const W3_ALT: &str = "reduce .[] as $r ({}; .[$r.category] += 1)";
pub const W4: &str = r#"sort_by(-.score) | map(.name) | join(", ")"#;
pub const W5: &str = r#"map(select(.status == "active" and .score > 50 and .profile.age < 40) | {id, email: .profile.email})"#;

/// The definitions of jaq's standard library, parsed once (a host keeps them).
pub fn std_defs() -> Vec<Def<&'static str>> {
    jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs()).collect()
}

pub fn compile(defs: &[Def<&'static str>], code: &str) -> Filter {
    let loader = Loader::new(defs.iter().cloned());
    let arena = Arena::default();
    let modules = match loader.load(&arena, File { code, path: () }) {
        Ok(m) => m,
        Err(errs) => panic!("jaq: parsing {code:?} failed ({} errors)", errs.len()),
    };
    let funs = jaq_core::funs().chain(jaq_std::funs()).chain(jaq_json::funs());
    match Compiler::default().with_funs(funs).compile(modules) {
        Ok(f) => f,
        Err(errs) => panic!("jaq: compiling {code:?} failed ({} errors)", errs.len()),
    }
}

/// The first output of `filter` on `input` (every workload here yields exactly one).
pub fn run1(filter: &Filter, input: Val) -> Val {
    let ctx = Ctx::<D>::new(&filter.lut, Vars::new([]));
    let mut out = filter.id.run((ctx, input)).map(unwrap_valr);
    match out.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => panic!("jaq: runtime error: {e:?}"),
        None => panic!("jaq: no output"),
    }
}

/// Direct conversion, the jaq analogue of `tdsl::Value::from(&serde_json::Value)`.
pub fn from_json(v: &J) -> Val {
    match v {
        J::Null => Val::Null,
        J::Bool(b) => Val::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Val::Num(Num::from_integral(i)),
            None => Val::from(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Val::from(s.clone()),
        J::Array(a) => a.iter().map(from_json).collect(),
        J::Object(o) => Val::obj(
            o.iter()
                .map(|(k, v)| (Val::from(k.clone()), from_json(v)))
                .collect(),
        ),
    }
}

/// Through jaq-json's serde support.
pub fn from_json_serde(v: &J) -> Val {
    Val::deserialize(v).expect("jaq: deserialize")
}

/// For checking only: jaq's JSON rendering, parsed back.
pub fn to_json(v: &Val) -> J {
    serde_json::from_str(&v.to_string()).expect("jaq output is JSON")
}

pub fn prepare(w: W, inp: &Inputs, alt: bool) -> Prepared {
    let e = &inp.expect;
    let name = if alt { "jaq-alt" } else { "jaq" };
    let defs = std_defs();
    let run = |code: &str, input: &J, want: J| -> Prepared {
        let filter = compile(&defs, code);
        let input = from_json(input);
        check_eq(name, w, to_json(&run1(&filter, input.clone())), want);
        Prepared::run(move || {
            black_box(run1(black_box(&filter), black_box(&input).clone()));
        })
    };
    match (w, alt) {
        (W::W0, false) => {
            let records = inp.records.clone();
            check_eq(name, w, to_json(&from_json(&records)), records.clone());
            Prepared::run_note(move || drop(black_box(from_json(black_box(&records)))), "direct Val constructors")
        }
        (W::W0, true) => {
            let records = inp.records.clone();
            check_eq(name, w, to_json(&from_json_serde(&records)), records.clone());
            Prepared::run_note(
                move || drop(black_box(from_json_serde(black_box(&records)))),
                "jaq-json serde Deserialize",
            )
        }
        (W::W1, false) => run(W1, &inp.one, J::from(e.email.clone())),
        (W::W2, false) => run(W2, &inp.records, J::from(e.sum)),
        (W::W3, false) => run(
            W3,
            &inp.records,
            J::Array(e.counts_sorted().iter().map(|(_, c)| J::from(*c)).collect()),
        ),
        (W::W3, true) => {
            let p = run(W3_ALT, &inp.records, e.counts_object());
            match p {
                Prepared::Run(f, _) => Prepared::Run(f, "reduce-based counting".into()),
                other => other,
            }
        }
        (W::W4, false) => run(W4, &inp.records, J::from(e.joined.clone())),
        (W::W5, false) => {
            let filter = compile(&defs, W5);
            check_eq(name, w, to_json(&run1(&filter, from_json(&inp.records))), e.w5.clone());
            Prepared::run_note(
                move || {
                    black_box(compile(black_box(&defs), black_box(W5)));
                },
                "load + compile; std defs parsed once outside",
            )
        }
        (_, true) => Prepared::na("no alternative variant for this workload"),
    }
}
