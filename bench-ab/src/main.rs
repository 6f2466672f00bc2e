//! `../shared/peerbench`'s W2–W4 (its records, its hand loops over `serde_json::Value`, the
//! same tdsl programs) plus variants that take W4 apart, built as peerbench builds (fat
//! LTO, one codegen unit, the lean library). See README.md.
//!
//! `bench-ab N REPS [CASE…]`: each case calibrated to 100 ms batches, REPS interleaved
//! repetitions in a rotated order, the median and minimum per record. With `PB2_ITERS=K`
//! set, each case runs K times and nothing is timed (for callgrind: K evaluations less 0).

use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Instant;

const CATEGORIES: [&str; 4] = ["a", "b", "c", "d"];
const TAG_POOL: [&str; 7] = ["red", "green", "blue", "new", "vip", "beta", "eu"];
fn record(i: u64) -> Value {
    let status = if i % 3 == 0 { "inactive" } else { "active" };
    let ntags = 2 + (i % 2) as usize;
    let tags: Vec<&str> = (0..ntags).map(|k| TAG_POOL[((i as usize) + 3 * k) % TAG_POOL.len()]).collect();
    json!({"id": i, "name": format!("user{i}"), "status": status, "score": (i * 37) % 100,
        "category": CATEGORIES[(i % 4) as usize], "tags": tags,
        "profile": { "email": format!("u{i}@x.org"), "age": 20 + (i % 50) }})
}
fn w2(arr: &Value) -> i64 {
    let mut sum = 0i64;
    for r in arr.as_array().unwrap() {
        if r.get("status").and_then(Value::as_str) == Some("active") {
            if let Some(s) = r.get("score").and_then(Value::as_i64) { if s > 50 { sum += s; } }
        }
    }
    sum
}
fn w4(arr: &Value) -> String {
    let mut v: Vec<(i64, &str)> = arr.as_array().unwrap().iter()
        .map(|r| (r.get("score").and_then(Value::as_i64).unwrap_or(0), r.get("name").and_then(Value::as_str).unwrap_or(""))).collect();
    v.sort_by(|a, b| b.0.cmp(&a.0));
    let mut out = String::with_capacity(v.len() * 11);
    for (i, (_, name)) in v.iter().enumerate() { if i > 0 { out.push_str(", "); } out.push_str(name); }
    out
}
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(7);
    let only: Vec<String> = args.iter().skip(2).cloned().collect();
    let records = Value::Array((0..n).map(record).collect());
    let vars = tdsl::Value::from(&records);
    let engine = tdsl::Engine::new();
    let progs: Vec<(&str, String)> = vec![
        ("w2", "sum(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), item_path=\"item.score\")".into()),
        ("w4", "join(array=map(array=sort(array=records, key_path=\"item.score\", direction=\"desc\"), template=\"item.name\"), separator=\", \")".into()),
        ("w4-mapsort", "map(array=sort(array=records, key_path=\"item.score\", direction=\"desc\"), template=\"item.name\")".into()),
        ("w4-sortlen", "length(sort(array=records, key_path=\"item.score\", direction=\"desc\"))".into()),
        ("w4-maplen", "length(map(array=records, template=\"item.name\"))".into()),
        ("w4-joinmap", "join(array=map(array=records, template=\"item.name\"), separator=\", \")".into()),
        ("v1-sortsum", "sum(sort(records, 'item.score', 'desc'), 'item.score')".into()),
        ("v2-maplen", "length(map(records, 'item.name'))".into()),
        ("v3-sum", "sum(records, 'item.score')".into()),
        ("v4-sortmapsum", "sum(map(sort(records, 'item.score', 'desc'), 'item.score'))".into()),
        ("w3", "pipeline(group_by(array=records, key_path=\"item.category\"), [zip(keys(current), map(array=values(current), template=length(item)))])".into()),
    ];
    let mut cases: Vec<(String, Box<dyn Fn()>)> = Vec::new();
    let r1 = records.clone();
    cases.push(("w2-hand".into(), Box::new(move || { black_box(w2(black_box(&r1))); })));
    let r2 = records.clone();
    cases.push(("w4-hand".into(), Box::new(move || { black_box(w4(black_box(&r2))); })));
    {
        let v = vars.clone();
        cases.push(("w2-floor".into(), Box::new(move || {
            let mut sum = 0i64;
            for r in black_box(&v).as_list().unwrap() {
                let Some(m) = r.as_object() else { continue };
                if let Some((k, tdsl::Value::Str(s))) = m.get_index(2) {
                    if k.as_str() == "status" && s.as_str() == "active" {
                        if let Some((k, tdsl::Value::Int(x))) = m.get_index(3) {
                            if k.as_str() == "score" && *x > 50 { sum += x; }
                        }
                    }
                }
            }
            black_box(sum);
        })));
        let v = vars.clone();
        cases.push(("w4-floor".into(), Box::new(move || {
            let xs = black_box(&v).as_list().unwrap();
            let mut keys: Vec<(i64, &tdsl::Value)> = Vec::with_capacity(xs.len());
            for r in xs {
                let m = r.as_object().unwrap();
                if let Some((k, tdsl::Value::Int(x))) = m.get_index(3) { if k.as_str() == "score" { keys.push((*x, r)); } }
            }
            keys.sort_by(|a, b| b.0.cmp(&a.0));
            let mut out = String::with_capacity(keys.len() * 11);
            for (i, (_, r)) in keys.iter().enumerate() {
                if i > 0 { out.push_str(", "); }
                if let Some((k, tdsl::Value::Str(s))) = r.as_object().unwrap().get_index(1) { if k.as_str() == "name" { out.push_str(s); } }
            }
            black_box(out);
        })));
    }
    for (name, src) in progs {
        let p = engine.compile(&src).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let v = vars.clone();
        let vars_obj = tdsl::Value::object_from([("records", v)]);
        cases.push((name.into(), Box::new(move || { black_box(black_box(&p).eval(black_box(&vars_obj)).ok()); })));
    }
    cases.retain(|(n, _)| only.is_empty() || only.iter().any(|o| n == o));
    if let Ok(k) = std::env::var("PB2_ITERS") {
        let k: u64 = k.parse().unwrap_or(0);
        for (_, f) in &cases { for _ in 0..k { f(); } }
        return;
    }
    // calibrate
    let mut iters = Vec::new();
    for (_, f) in &cases { let mut k = 1u64; loop { let t = Instant::now(); for _ in 0..k { f(); } if t.elapsed().as_millis() >= 100 { break; } k *= 2; } iters.push(k); }
    let mut res: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for rep in 0..reps {
        for j in 0..cases.len() { let j = (j + rep) % cases.len(); let (_, f) = &cases[j]; let t = Instant::now(); for _ in 0..iters[j] { f(); } res[j].push(t.elapsed().as_nanos() as f64 / iters[j] as f64 / n as f64); }
    }
    for (j, (name, _)) in cases.iter().enumerate() { let mut v = res[j].clone(); v.sort_by(|a, b| a.partial_cmp(b).unwrap()); println!("{name:12} median {:7.1} min {:7.1} ns/record", v[v.len()/2], v[0]); }
}
