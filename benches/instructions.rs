//! A fixed number of iterations of one workload, for instruction counts under callgrind
//! (wall-clock timings on a shared machine are noisy; instruction counts are repeatable):
//!
//! ```text
//! cargo bench --bench instructions --no-run
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/deps/instructions-* w1 100000
//! callgrind_annotate cg.out
//! ```
//!
//! Workloads: `w1` (evaluate `profile.email`), `w1-ref` (the same with `eval_ref`), `w5` (compile the W5 expression of
//! `benches/eval.rs`) and its stages `w5-parse`, `w5-parse-template` (its condition string),
//! `w5-check`, `w5-codegen` (fold and generate
//! code), each run `N` times after one
//! warm-up run; divide the total by `N` (the setup is a few thousand instructions).

use std::hint::black_box;

use tdsl::{Engine, Scope, Value};

const W5: &str = r#"map(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50 and item.profile.age < 40"), template={id: item.id, email: item.profile.email})"#;

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
        other => eprintln!("unknown workload `{other}`: w1, w5, w5-parse, w5-parse-template, w5-check, w5-codegen"),
    }
}
