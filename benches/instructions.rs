//! A fixed number of iterations of one workload, for instruction counts under callgrind
//! (wall-clock timings on a shared machine are noisy; instruction counts are repeatable):
//!
//! ```text
//! cargo bench --bench instructions --no-run
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/deps/instructions-* w1 100000
//! callgrind_annotate cg.out
//! ```
//!
//! Workloads: `w1` (evaluate `profile.email`), `w1-ref` (the same with `eval_ref`), `w2`, `w3`,
//! `w4` (`../shared/peerbench`'s programs on its 1,000 records) and `w2-hand`, `w3-hand`,
//! `w4-hand` (its hand loops over `serde_json::Value`, the same records), `w5` (compile the W5 expression of
//! `benches/eval.rs`), `w5-peer` (`../shared/peerbench`'s W5: `Engine::compile`, with `tag`) and its stages `w5-parse`, `w5-parse-template` (its condition string),
//! `w5-check`, `w5-codegen` (fold and generate
//! code), each run `N` times after one
//! warm-up run (divide the total by `N`; the setup is a few thousand instructions), and
//! `names` (one analysis of a list of `N` distinct names, run once: its work grows linearly
//! with `N`, which timing two sizes shows), `block` (one check of a transform block of `N`
//! variables and `N / 10` transforms, run once: linear in `N` too).

mod common;

use std::hint::black_box;

use tdsl::{Engine, Scope, Value};

const W5: &str = r#"map(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50 and item.profile.age < 40"), template={id: item.id, email: item.profile.email})"#;

/// `../shared/peerbench/src/tdsl_peer.rs`'s W5 (compiled there with `Engine::compile`).
const W5_PEER: &str = r#"map(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50 and item.profile.age < 40"), template={id: item.id, email: item.profile.email, tag: item.tags[0]})"#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let workload = args.first().map_or("w1", String::as_str);
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let engine = Engine::new();
    let record = Value::object_from([
        ("id", Value::from(7)),
        ("name", Value::from("user7")),
        ("status", Value::from("active")),
        ("score", Value::from(55)),
        ("category", Value::from("books")),
        ("tags", Value::from(vec![Value::from("red"), Value::from("new")])),
        ("profile", Value::object_from([("email", Value::from("user7@example.com")), ("age", Value::from(31))])),
    ]);
    let vars = Value::object_from([("records", Value::from(vec![record.clone()]))]);
    let scope = Scope::from_vars(&vars);
    match workload {
        "w1" => {
            let program = engine.compile("profile.email").expect("compiles");
            for _ in 0..=n {
                black_box(program.eval(black_box(&record)).expect("evaluates"));
            }
        }
        "w0" | "w0-clone" => {
            // 1,000 records shaped like the peers' (bench-peers/src/data.rs), converted (w0)
            // or deep-cloned as `serde_json::Value` (w0-clone, the baseline).
            let records: serde_json::Value = (0..1000)
                .map(|i| {
                    serde_json::json!({
                        "id": i, "name": format!("user{i}"), "status": if i % 3 == 0 { "active" } else { "inactive" },
                        "score": i % 100, "category": format!("cat{}", i % 10), "tags": ["red", format!("t{}", i % 7)],
                        "profile": {"email": format!("user{i}@example.com"), "age": 20 + i % 50}
                    })
                })
                .collect();
            for _ in 0..=n {
                if workload == "w0" {
                    black_box(Value::from(black_box(&records)));
                } else {
                    black_box(black_box(&records).clone());
                }
            }
        }
        "w1-ref" => {
            let program = engine.compile("profile.email").expect("compiles");
            for _ in 0..=n {
                black_box(program.eval_ref(black_box(&record)).expect("evaluates"));
            }
        }
        "w5" => {
            for _ in 0..=n {
                black_box(engine.compile_in(black_box(W5), &scope).expect("compiles"));
            }
        }
        "w5-peer" => {
            // `../shared/peerbench`'s W5 exactly: an open scope, and `tag: item.tags[0]`.
            for _ in 0..=n {
                black_box(engine.compile(black_box(W5_PEER)).ok());
            }
        }
        "w5-parse" => {
            for _ in 0..=n {
                black_box(tdsl::testing::syntax::parse(black_box(W5)));
            }
        }
        "w5-parse-template" => {
            let template = "item.status == 'active' and item.score > 50 and item.profile.age < 40";
            for _ in 0..=n {
                black_box(tdsl::testing::syntax::parse(black_box(template)));
            }
        }
        "w5-check" => {
            let parsed = tdsl::testing::syntax::parse(W5);
            for _ in 0..=n {
                black_box(tdsl::testing::types::check(black_box(&parsed.expr), &scope, engine.functions(), 128));
            }
        }
        "w5-codegen" => {
            let parsed = tdsl::testing::syntax::parse(W5);
            let checked = tdsl::testing::types::check(&parsed.expr, &scope, engine.functions(), 128);
            for _ in 0..=n {
                let folded =
                    tdsl::testing::compile::fold(black_box(&checked.expr), engine.functions(), engine.limits());
                black_box(tdsl::testing::compile::compile(&folded));
            }
        }
        "names" => {
            // One analysis of a list of `n` distinct names (`[n0, n1, …]`, an open scope):
            // work linear in `n`, not quadratic (the checker's free names, the chunk's names).
            let list: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
            let source = format!("[{}]", list.join(", "));
            let analysis = engine.analyze(black_box(&source), &Scope::open());
            assert_eq!(analysis.references.names.len(), n);
        }
        "block" => {
            // One check of a `.tool` whose transform block has `n` variables and `n / 10`
            // transforms (each reading ten variables and the output before it): linear in
            // `n` (each transform's scope shares the block's names, not a copy of them).
            let source = common::transform_block(n);
            let mut analyzer = tdsl::testing::analysis::Analyzer::new(tdsl::testing::analysis::ToolRoot::assumed(
                "/nonexistent",
            ));
            let checked = analyzer.check_source("block.tool", black_box(&source));
            assert!(checked.plan.is_some(), "{:?}", checked.diagnostics.first());
        }
        "w2" | "w3" | "w4" => {
            // `../shared/peerbench`'s W2–W4 on its 1,000 records (`n` evaluations).
            let records = Value::from(&reference_records(1000));
            let vars = Value::object_from([("records", records)]);
            let program = engine.compile(peer_program(workload)).expect("compiles");
            for _ in 0..=n {
                black_box(program.eval(black_box(&vars)).expect("evaluates"));
            }
        }
        "w2-hand" | "w3-hand" | "w4-hand" => {
            // The reference benchmark's hand loops over `serde_json::Value`, the same records.
            let records = reference_records(1000);
            for _ in 0..=n {
                match workload {
                    "w2-hand" => drop(black_box(hand::w2(black_box(&records)))),
                    "w3-hand" => drop(black_box(hand::w3(black_box(&records)))),
                    _ => drop(black_box(hand::w4(black_box(&records)))),
                }
            }
        }
        other => eprintln!(
            "unknown workload `{other}`: w1, w1-ref, w0, w0-clone, w2, w3, w4, w2-hand, w3-hand, w4-hand, w5, w5-peer, w5-parse, w5-parse-template, w5-check, w5-codegen, names"
        ),
    }
}

/// The tdsl programs of `../shared/peerbench/src/tdsl_peer.rs`.
fn peer_program(workload: &str) -> &'static str {
    match workload {
        "w2" => "sum(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), item_path=\"item.score\")",
        "w3" => "pipeline(group_by(array=records, key_path=\"item.category\"), [zip(keys(current), map(array=values(current), template=length(item)))])",
        _ => "join(array=map(array=sort(array=records, key_path=\"item.score\", direction=\"desc\"), template=\"item.name\"), separator=\", \")",
    }
}

/// `../shared/peerbench/src/data.rs`'s records, field for field.
fn reference_records(n: u64) -> serde_json::Value {
    const CATEGORIES: [&str; 4] = ["a", "b", "c", "d"];
    const TAG_POOL: [&str; 7] = ["red", "green", "blue", "new", "vip", "beta", "eu"];
    (0..n)
        .map(|i| {
            let status = if i % 3 == 0 { "inactive" } else { "active" };
            let tags: Vec<&str> =
                (0..2 + (i % 2) as usize).map(|k| TAG_POOL[(i as usize + 3 * k) % TAG_POOL.len()]).collect();
            serde_json::json!({
                "id": i, "name": format!("user{i}"), "status": status, "score": (i * 37) % 100,
                "category": CATEGORIES[(i % 4) as usize], "tags": tags,
                "profile": {"email": format!("u{i}@x.org"), "age": 20 + (i % 50)},
            })
        })
        .collect()
}

/// `../shared/peerbench/src/baseline.rs`'s hand loops.
mod hand {
    use serde_json::{Map, Value};
    use std::collections::HashMap;

    pub fn w2(arr: &Value) -> i64 {
        let mut sum = 0i64;
        for r in arr.as_array().into_iter().flatten() {
            if r.get("status").and_then(Value::as_str) == Some("active") {
                if let Some(s) = r.get("score").and_then(Value::as_i64) {
                    if s > 50 {
                        sum += s;
                    }
                }
            }
        }
        sum
    }

    pub fn w3(arr: &Value) -> Value {
        let mut m: HashMap<&str, i64> = HashMap::new();
        for r in arr.as_array().into_iter().flatten() {
            if let Some(c) = r.get("category").and_then(Value::as_str) {
                *m.entry(c).or_insert(0) += 1;
            }
        }
        Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), Value::from(v))).collect::<Map<String, Value>>())
    }

    // As the reference benchmark writes it (its `sort_by`, not `sort_by_key`).
    #[allow(clippy::unnecessary_sort_by)]
    pub fn w4(arr: &Value) -> String {
        let mut v: Vec<(i64, &str)> = arr
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r.get("score").and_then(Value::as_i64).unwrap_or(0),
                    r.get("name").and_then(Value::as_str).unwrap_or(""),
                )
            })
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0));
        let mut out = String::with_capacity(v.len() * 11);
        for (i, (_, name)) in v.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(name);
        }
        out
    }
}
