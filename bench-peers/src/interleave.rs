//! `peers interleave <N> [reps]`: issue 33's side-by-side measurement in one process.
//!
//! Each cell pairs tdsl with its baseline (the hand-written loop for W2–W4, jmespath's
//! parse for W5). A repetition times the two sides of a cell in alternating batches of
//! about 3 ms (`PEERS_BATCH_US`), 25 rounds (`PEERS_ROUNDS`), so both see the same moments
//! of a busy machine, and keeps each side's median batch; the table gives each side's
//! median over the repetitions (5 by default) and the ratio of the medians.
//!
//! The cells are the workloads in the forms issue 33 states them: W3 as the peers' `map`
//! form, with `zip(keys(current), …)` (`W3z`) and with `from_entries` (`W3e`); W5 with the
//! `tag: item.tags[0]` field. `peers loop <cell> <side> <N> <iters>` runs one side of a
//! cell `iters` times without timing it, for `valgrind --tool=callgrind`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::Value as J;

use crate::tdsl_peer::to_json;
use crate::{check_eq, data, hand, Inputs, Prepared, Timed, W};

const W3Z: &str = "pipeline(group_by(array=records, key_path=\"item.category\"), [zip(keys(current), map(array=values(current), template=length(item)))])";
const W3E: &str = "pipeline(group_by(array=records, key_path=\"item.category\"), [from_entries(zip(keys(current), map(array=values(current), template=length(item))))])";
const W5_TDSL: &str = "map(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50 and item.profile.age < 40\"), template={id: item.id, email: item.profile.email, tag: item.tags[0]})";
const W5_JMES: &str =
    "[?status == 'active' && score > `50` && profile.age < `40`].{id: id, email: profile.email, tag: tags[0]}";

/// One cell: its name, the baseline's name, and both timed closures.
pub struct Cell {
    pub name: &'static str,
    pub base_name: &'static str,
    pub base: Timed,
    pub tdsl: Timed,
}

fn timed(p: Prepared) -> Timed {
    match p {
        Prepared::Run(f, _) => f,
        Prepared::NotApplicable(why) => panic!("not applicable: {why}"),
    }
}

/// A tdsl program compiled once and checked against `want`; the closure evaluates it.
fn tdsl_eval(name: &str, src: &str, vars: &J, want: J) -> Timed {
    let engine = tdsl::Engine::new();
    let program = engine.compile(src).unwrap_or_else(|d| panic!("tdsl {name}: {d:?}"));
    let vars = tdsl::Value::from(vars);
    let got = program.eval(&vars).map(|v| to_json(&v)).unwrap_or_else(|e| panic!("tdsl {name}: {e:?}"));
    if got != want {
        panic!("tdsl {name}: wrong answer\n  got:  {got}\n  want: {want}");
    }
    Box::new(move || {
        black_box(black_box(&program).eval(black_box(&vars)).ok());
    })
}

/// Every cell at size `n`, each side checked before it is timed.
pub fn cells(n: usize) -> Vec<Cell> {
    let inp: Inputs = data::inputs(n);
    let e = &inp.expect;
    let counts = J::Array(e.counts.iter().map(|(_, c)| J::from(*c)).collect());
    let pairs = J::Array(e.counts.iter().map(|(k, c)| J::Array(vec![J::from(k.clone()), J::from(*c)])).collect());
    let mut out = vec![
        Cell {
            name: "W2",
            base_name: "hand",
            base: timed(hand::prepare(W::W2, &inp)),
            tdsl: tdsl_eval("W2", crate::tdsl_peer::W2, &inp.vars, J::from(e.sum)),
        },
        Cell {
            name: "W3",
            base_name: "hand",
            base: timed(hand::prepare(W::W3, &inp)),
            tdsl: tdsl_eval("W3", crate::tdsl_peer::W3, &inp.vars, counts),
        },
        Cell {
            name: "W3z",
            base_name: "hand",
            base: timed(hand::prepare(W::W3, &inp)),
            tdsl: tdsl_eval("W3z", W3Z, &inp.vars, pairs),
        },
        Cell {
            name: "W3e",
            base_name: "hand",
            base: timed(hand::prepare(W::W3, &inp)),
            tdsl: tdsl_eval("W3e", W3E, &inp.vars, e.counts_object()),
        },
        Cell {
            name: "W4",
            base_name: "hand",
            base: timed(hand::prepare(W::W4, &inp)),
            tdsl: tdsl_eval("W4", crate::tdsl_peer::W4, &inp.vars, J::from(e.joined.clone())),
        },
    ];
    // W5: both compiled programs give the same answer before their compiles are timed.
    let engine = tdsl::Engine::new();
    let program = engine.compile(W5_TDSL).unwrap_or_else(|d| panic!("tdsl W5: {d:?}"));
    let got = program.eval(&tdsl::Value::from(&inp.vars)).map(|v| to_json(&v)).expect("tdsl W5 runs");
    let want = crate::jmes::run_json(W5_JMES, &inp.records);
    check_eq("tdsl", W::W5, got, want);
    out.push(Cell {
        name: "W5",
        base_name: "jmespath",
        base: Box::new(|| {
            black_box(jmespath::compile(black_box(W5_JMES)).ok());
        }),
        tdsl: Box::new(move || {
            black_box(black_box(&engine).compile(black_box(W5_TDSL)).ok());
        }),
    });
    out
}

/// Calls of `f` that take about `target` (at least one).
fn batch_size(f: &mut Timed, target: Duration) -> u64 {
    let t = Instant::now();
    f();
    let one = t.elapsed().max(Duration::from_nanos(20));
    (target.as_nanos() / one.as_nanos()).clamp(1, 1_000_000) as u64
}

/// Time per call of `f` over a batch of `n` calls.
fn batch(f: &mut Timed, n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn show(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// One repetition of a cell: `rounds` batches of each side, alternately (baseline, tdsl,
/// baseline, …), so both sides see the same moments of a busy machine; each side's median
/// time per call over its batches.
fn repetition(c: &mut Cell, rounds: usize, target: Duration) -> (f64, f64) {
    let (nb, nt) = (batch_size(&mut c.base, target), batch_size(&mut c.tdsl, target));
    batch(&mut c.base, nb);
    batch(&mut c.tdsl, nt);
    let (mut b, mut t) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        b.push(batch(&mut c.base, nb));
        t.push(batch(&mut c.tdsl, nt));
    }
    (median(&b), median(&t))
}

/// Runs the interleaved repetitions and prints a markdown table: per cell, each side's
/// median over the repetitions (each repetition's own median in the columns after it).
pub fn run(n: usize, reps: usize) {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|s| s.parse().ok()).unwrap_or(d);
    let target = Duration::from_micros(env("PEERS_BATCH_US", 3000));
    let rounds = env("PEERS_ROUNDS", 25) as usize;
    let mut cells = cells(n);
    let mut base = vec![Vec::new(); cells.len()];
    let mut ours = vec![Vec::new(); cells.len()];
    for rep in 0..reps {
        for (i, c) in cells.iter_mut().enumerate() {
            let (b, t) = repetition(c, rounds, target);
            base[i].push(b);
            ours[i].push(t);
        }
        eprintln!("repetition {}/{reps} done", rep + 1);
    }
    println!("| N = {n} | baseline | each repetition | tdsl | each repetition | ratio of medians |");
    println!("|---|---|---|---:|---|---:|");
    for (i, c) in cells.iter().enumerate() {
        let (b, t) = (median(&base[i]), median(&ours[i]));
        let each = |xs: &[f64]| xs.iter().map(|x| show(*x)).collect::<Vec<_>>().join(" / ");
        println!(
            "| {} | {} {} | {} | {} | {} | ×{:.2} |",
            c.name,
            c.base_name,
            show(b),
            each(&base[i]),
            show(t),
            each(&ours[i]),
            t / b
        );
    }
}

/// Runs one side (`base` or `tdsl`) of a cell `iters` times, untimed.
pub fn run_loop(cell: &str, side: &str, n: usize, iters: usize) {
    let mut cells = cells(n);
    let Some(c) = cells.iter_mut().find(|c| c.name.eq_ignore_ascii_case(cell)) else {
        panic!("no cell {cell:?}");
    };
    let f = if side == "tdsl" { &mut c.tdsl } else { &mut c.base };
    for _ in 0..iters {
        f();
    }
}
