//! Criterion benchmarks of the expression language on the workloads of issue 2:
//! N generated records `{id, name, status, score, category, tags, profile: {email, age}}`.
//!
//! - W0: `serde_json::Value` → `tdsl::Value` (compared with a deep clone of the input)
//! - W1: the path `profile.email` on one record
//! - W2: filter (status == "active" and score > 50) + map score + sum
//! - W3: group_by category, and the count per group
//! - W4: sort by score descending + map name + join ", "
//! - W5: compiling a ~100-character expression (parse, check, fold, generate)
//!
//! Peers (jaq, jmespath, rhai, hand-written loops) are in `bench-peers/`, one process each.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::json;
use tdsl::{Engine, Scope, Value};

const W2: &str = r#"sum(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50"), item_path="item.score")"#;
const W3: &str = r#"pipeline(group_by(array=records, key_path="item.category"), [map(array=values(current), template=length(item))])"#;
const W4: &str = r#"join(array=map(array=sort(array=records, key_path="item.score", direction="desc"), template="item.name"), separator=", ")"#;
const W5: &str = r#"map(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50 and item.profile.age < 40"), template={id: item.id, email: item.profile.email})"#;

/// Deterministic records (splitmix64), the same generator as `bench-peers/`.
pub fn records(n: usize) -> serde_json::Value {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let statuses = ["active", "inactive", "pending"];
    let categories = ["books", "games", "music", "tools", "food", "toys", "garden", "health", "sports", "travel"];
    let tags = ["red", "green", "blue", "new", "sale", "hot", "eco", "gift"];
    let items: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let ntags = 2 + (next() % 3) as usize;
            json!({
                "id": i,
                "name": format!("user{i}"),
                "status": statuses[(next() % 3) as usize],
                "score": next() % 101,
                "category": categories[(next() % 10) as usize],
                "tags": (0..ntags).map(|_| tags[(next() % 8) as usize]).collect::<Vec<_>>(),
                "profile": {"email": format!("user{i}@example.com"), "age": 18 + next() % 63},
            })
        })
        .collect();
    serde_json::Value::Array(items)
}

fn bench(c: &mut Criterion) {
    let engine = Engine::new();
    for n in [1_000usize, 100_000] {
        let input = records(n);
        let mut g = c.benchmark_group(format!("n={n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.sample_size(if n > 10_000 { 20 } else { 50 });

        g.bench_function("W0 convert", |b| b.iter(|| Value::from(black_box(&input))));
        g.bench_function("W0 deep clone (baseline)", |b| b.iter(|| black_box(&input).clone()));

        let vars = Value::object_from([("records", Value::from(&input))]);
        let scope = Scope::from_vars(&vars);
        for (name, src) in [("W2 filter+map+sum", W2), ("W3 group_by+count", W3), ("W4 sort+map+join", W4)] {
            let program = engine.compile_in(src, &scope).expect("workload compiles");
            g.bench_with_input(BenchmarkId::new(name, n), &vars, |b, vars| b.iter(|| program.eval(vars).expect("ok")));
        }
        g.finish();
    }

    let record = Value::from(&records(1)[0]);
    let w1 = engine.compile("profile.email").expect("compiles");
    c.bench_function("W1 profile.email", |b| b.iter(|| w1.eval(black_box(&record)).expect("ok")));
    c.bench_function("W1 profile.email (eval_ref)", |b| b.iter(|| w1.eval_ref(black_box(&record)).expect("ok")));

    let vars = Value::object_from([("records", Value::from(&records(10)))]);
    let scope = Scope::from_vars(&vars);
    c.bench_function("W5 compile", |b| b.iter(|| engine.compile_in(black_box(W5), &scope).expect("ok")));
}

criterion_group!(benches, bench);
criterion_main!(benches);
