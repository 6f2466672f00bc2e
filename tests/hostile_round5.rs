//! The hostile round of 2026-11-29 (docs/security.md, "Hostile round, 2026-11-29"): the
//! surfaces the third round of issue 43 added, attacked from the side of a model that writes
//! the expressions. `map` over `sort` reading its template ahead (`vm::fast::ReadAhead`),
//! the radix sort of integer keys, `group_by`'s scan of a few groups, `join`'s reserve, and
//! the parser's pool of kept allocations. Each test compares the fast path with the plain
//! one it stands for (the two calls split by a `pipeline`, a list below the read-ahead's
//! threshold, a model written here), at every budget where the budget matters.
//!
//! The memory these paths take is measured in `tests/hostile_round5_memory.rs` (a test
//! binary of one test, so that its peak resident set is its own).

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use tdsl::{Code, Engine, Interrupt, Limits, Value};

/// A value, or an error's code, message and data location (the span differs between a
/// fused call and the same calls split by a `pipeline`, whose source is longer).
type Outcome = Result<String, (Code, String, Option<String>)>;

fn outcome(limits: &Limits, src: &str, vars: &Value) -> Outcome {
    let p = Engine::new().with_limits(limits.clone()).compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
    match p.eval(vars) {
        Ok(v) => Ok(v.to_string()),
        Err(e) => Err((e.code, e.message.clone(), e.location.clone())),
    }
}

/// Only the code of an error (fuel and memory errors name the budget, which differs).
fn kind(o: &Outcome) -> Result<&str, Code> {
    match o {
        Ok(v) => Ok(v),
        Err((c, _, _)) => Err(*c),
    }
}

fn fuel(n: u64) -> Limits {
    Limits { fuel: n, ..Limits::default() }
}

fn memory(n: usize) -> Limits {
    Limits { max_alloc_bytes: n, ..Limits::default() }
}

/// The least budget in `0..=hi` at which `src` evaluates without a fuel (or memory) error,
/// by bisection (running out is monotone in the budget).
fn least(hi: u64, src: &str, vars: &Value, limits: impl Fn(u64) -> Limits) -> u64 {
    let ran = |n: u64| !matches!(outcome(&limits(n), src, vars), Err((Code::FuelExhausted | Code::MemoryLimit, _, _)));
    assert!(ran(hi), "`{src}` does not run at {hi}");
    let (mut lo, mut hi) = (0u64, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ran(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

fn record(i: i64) -> serde_json::Value {
    json!({
        "a": (i * 37) % 100,
        "b": format!("n{i}"),
        "c": {"d": {"e": {"f": i}}},
        "tags": [format!("t{i}"), "u"],
        "ключ": format!("значение{i}"),
        "k": i % 7,
    })
}

/// Lists of `n` records: plain, with keys moved and missing, with an element that is not an
/// object, with a key whose value is a list.
fn lists(n: i64) -> Value {
    let plain: Vec<serde_json::Value> = (0..n).map(record).collect();
    let mut moved = plain.clone();
    for (i, r) in moved.iter_mut().enumerate() {
        if i % 3 == 1 {
            // The same keys, in another order (every hint misses on it).
            let o = r.as_object().cloned().unwrap_or_default();
            let mut rev = serde_json::Map::new();
            for (k, v) in o.iter().rev() {
                rev.insert(k.clone(), v.clone());
            }
            *r = serde_json::Value::Object(rev);
        }
        if i % 11 == 5 {
            if let Some(o) = r.as_object_mut() {
                o.remove("b");
                o.remove("ключ");
            }
        }
    }
    let mut odd = plain.clone();
    if let Some(x) = odd.get_mut(n as usize / 2) {
        *x = json!(5);
    }
    let mut listed = plain.clone();
    if let Some(x) = listed.get_mut(n as usize / 3) {
        x["b"] = json!([1, 2]);
        x["a"] = json!([1, 2]);
    }
    Value::from(&json!({"plain": plain, "moved": moved, "odd": odd, "listed": listed}))
}

const TEMPLATES: [&str; 8] =
    ["'item.b'", "item.tags[0]", "'item.c.d.e.f'", "item['ключ']", "'item.zz'", "item.tags", "'item.c'", "item.c.d"];

/// `map(sort(L, K, D), T)`, fused (reading ahead from 64 elements), and the same two
/// calls split by a `pipeline` (never fused).
fn fused_and_split(list: &str, key: &str, dir: &str, template: &str) -> (String, String) {
    (
        format!("map(sort({list}, {key}, '{dir}'), {template})"),
        format!("pipeline({list}, [sort(current, {key}, '{dir}'), map(current, {template})])"),
    )
}

/// The read-ahead's result and errors are the two calls': for every list shape, template
/// (unicode keys, indexes, deep paths, a list or object value, a missing key) and direction,
/// at the default limits; on lists above (150) and below (40) its threshold.
#[test]
fn read_ahead_gives_what_the_two_calls_give() {
    for n in [40, 150] {
        let vars = lists(n);
        for list in ["plain", "moved", "odd", "listed"] {
            for key in ["'item.a'", "'item.k'", "'item.c.d.e.f'", "null"] {
                for dir in ["asc", "desc"] {
                    for t in TEMPLATES {
                        let (fused, split) = fused_and_split(list, key, dir, t);
                        let (a, b) =
                            (outcome(&Limits::default(), &fused, &vars), outcome(&Limits::default(), &split, &vars));
                        // The location of a failing element: the pipeline's `current` names
                        // no place in the data; the fused call names the sorted list's.
                        assert_eq!(kind(&a), kind(&b), "`{fused}` against `{split}` (n = {n})");
                        if let (Err(x), Err(y)) = (&a, &b) {
                            assert_eq!(x.1, y.1, "`{fused}` (n = {n})");
                        }
                    }
                }
            }
        }
    }
}

/// The fuel and memory the read-ahead's call takes are the two calls': the least budget
/// that lets the fused call finish is the split one's less a constant (the pipeline's own
/// instructions), the same constant on a list below the threshold (no read-ahead) and above
/// it, for every shape; and every budget below it fails with the same error on both.
#[test]
fn read_ahead_takes_the_fuel_and_memory_of_the_two_calls() {
    let small = lists(40);
    let big = lists(150);
    for (list, key, dir, t) in [
        ("plain", "'item.a'", "desc", "'item.b'"),
        ("moved", "'item.a'", "asc", "item['ключ']"),
        ("moved", "'item.k'", "desc", "item.tags[0]"),
        ("plain", "'item.c.d.e.f'", "desc", "'item.c.d.e.f'"),
        ("listed", "'item.k'", "asc", "'item.b'"),
    ] {
        let (fused, split) = fused_and_split(list, key, dir, t);
        let shift = |vars: &Value| {
            let f = least(1_000_000, &fused, vars, fuel);
            let s = least(1_000_000, &split, vars, fuel);
            (f, s - f)
        };
        let (_, below) = shift(&small);
        let (f_big, above) = shift(&big);
        assert_eq!(below, above, "`{fused}`: the pipeline's overhead in fuel differs with the read-ahead");
        // Around the least budget and at the read-ahead's own threshold (twice the length).
        for n in (f_big.saturating_sub(40)..=f_big + 2).chain([299, 300, 301]) {
            let (a, b) = (outcome(&fuel(n), &fused, &big), outcome(&fuel(n + above), &split, &big));
            assert_eq!(kind(&a), kind(&b), "`{fused}` at fuel {n}");
        }
        let m = |vars: &Value| {
            (least(1 << 24, &fused, vars, |n| memory(n as usize)), least(1 << 24, &split, vars, |n| memory(n as usize)))
        };
        let (fs, ss) = m(&small);
        let (fb, sb) = m(&big);
        assert_eq!(ss - fs, sb - fb, "`{fused}`: the memory the read-ahead's call takes differs");
    }
}

/// A list of a million records (one object shared by every element: nothing to build)
/// under a small budget: the call runs out at once, as the two calls do, whether or not the
/// budget covers the read-ahead's pass; an interrupt already raised stops it before any
/// pass; and at the default budget, it runs to the end.
#[test]
fn a_million_records_under_small_budgets() {
    let one = Value::from(&record(7));
    let vars = with_xs(Value::list(vec![one.clone(); 1_000_000]));
    let (fused, split) = fused_and_split("xs", "'item.a'", "desc", "'item.b'");
    for n in [1_000, 2_000_000] {
        let (a, b) = (outcome(&fuel(n), &fused, &vars), outcome(&fuel(n), &split, &vars));
        assert_eq!(kind(&a), Err(Code::FuelExhausted), "`{fused}` at fuel {n}");
        assert_eq!(kind(&b), Err(Code::FuelExhausted), "`{split}` at fuel {n}");
    }
    let a = outcome(&memory(4_096), &fused, &vars);
    assert_eq!(kind(&a), Err(Code::MemoryLimit), "`{fused}` at 4 KiB of memory");
    let p = Engine::new().compile(&fused).expect("compiles");
    let cancelled = Interrupt::new();
    cancelled.cancel();
    let e = p.eval_interruptible(&vars, &Value::Null, &cancelled).expect_err("cancelled");
    assert_eq!(e.code, Code::Interrupted);
    let late = Interrupt::new().with_deadline(std::time::Instant::now());
    let e = p.eval_interruptible(&vars, &Value::Null, &late).expect_err("past its deadline");
    assert_eq!(e.code, Code::EvalDeadline);
    // To the end at the default budget (a hundred thousand of them: a debug build's second).
    let out = p.eval(&with_xs(Value::list(vec![one; 100_000]))).expect("runs at the default budget");
    let Value::List(out) = &out else { panic!("a list: {out:?}") };
    assert_eq!(out.len(), 100_000);
    assert!(out.iter().all(|v| v.to_string() == "\"n7\""));
}

/// `{"xs": xs}`, the list not copied.
fn with_xs(xs: Value) -> Value {
    Value::object([("xs".into(), xs)].into_iter().collect::<tdsl::Map>())
}

/// A cancel that comes while a fused read-ahead of a million records runs stops the
/// evaluation within the time a plain `map` of them takes (the pass itself polls nothing:
/// it is shorter than what the sort does between two polls).
#[test]
fn a_cancel_during_a_long_read_ahead_stops_the_call() {
    let one = Value::from(&record(3));
    let vars = with_xs(Value::list(vec![one; 1_000_000]));
    let (fused, _) = fused_and_split("xs", "'item.a'", "asc", "'item.c.d.e.f'");
    let p = Arc::new(Engine::new().compile(&format!("length(map(range(20), {fused}))")).expect("compiles"));
    let interrupt = Interrupt::new();
    let started = std::time::Instant::now();
    let stop = interrupt.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        stop.cancel();
    });
    let e = p.eval_interruptible(&vars, &Value::Null, &interrupt).expect_err("cancelled");
    let took = started.elapsed();
    canceller.join().expect("canceller");
    assert_eq!(e.code, Code::Interrupted, "{e:?}");
    assert!(took < std::time::Duration::from_secs(20), "the cancel took {took:?} to stop the call");
}

// ---- the radix sort of integer keys ----------------------------------------------------

/// `{k: key, i: index}` for each key (a `null` key leaves `k` out).
fn keyed(keys: &[serde_json::Value]) -> Value {
    let xs: Vec<serde_json::Value> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| if k.is_null() { json!({"i": i}) } else { json!({"k": k, "i": i}) })
        .collect();
    Value::from(&json!({ "xs": xs }))
}

/// The indexes of `keys` in the order of a stable sort by the total order of values (the
/// comparison sort `sort` used before the radix sort, and still uses for keys that are not
/// all integers), ascending or descending.
fn stable_order(keys: &[serde_json::Value], desc: bool) -> String {
    let mut order: Vec<(Value, usize)> = keys.iter().map(Value::from).zip(0..).collect();
    if desc {
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
    } else {
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Value::from(&json!(order.iter().map(|(_, i)| i).collect::<Vec<_>>())).to_string()
}

fn sorted_indexes(keys: &[serde_json::Value], desc: bool) -> String {
    let dir = if desc { "desc" } else { "asc" };
    let src = format!("map(sort(xs, 'item.k', '{dir}'), 'item.i')");
    match outcome(&Limits::default(), &src, &keyed(keys)) {
        Ok(v) => v,
        Err(e) => panic!("`{src}`: {e:?}"),
    }
}

fn key_strategy() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        6 => (-3i64..3).prop_map(|n| json!(n)),
        2 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(i64::MIN + 1), Just(i64::MAX - 1), Just(-1i64), Just(0i64)]
            .prop_map(|n| json!(n)),
        2 => any::<i64>().prop_map(|n| json!(n)),
        1 => prop_oneof![Just(json!(1.0)), Just(json!(-2.0)), Just(json!(0.5)), Just(json!(9.3e18)), Just(json!(-9.3e18))],
        1 => prop_oneof![Just(json!(null)), Just(json!("1")), Just(json!("")), Just(json!(true)), Just(json!([1]))],
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any keys, on both sides of the radix sort's threshold (128): integers only (the
    /// radix sort: extremes, negatives, many equal ones), or integers with a float equal
    /// to one of them, a `null`, a string, a list (the comparison sort from the first such
    /// key on): the order of a stable sort by the total order of values, equal keys in
    /// list order.
    #[test]
    fn sort_orders_any_keys_as_the_stable_comparison_sort(
        keys in proptest::collection::vec(key_strategy(), 0..300),
        ints_only in any::<bool>(),
        desc in any::<bool>(),
    ) {
        let keys: Vec<serde_json::Value> = if ints_only {
            keys.into_iter().filter(|k| k.is_i64()).collect()
        } else {
            keys
        };
        prop_assert_eq!(sorted_indexes(&keys, desc), stable_order(&keys, desc));
    }
}

/// The extremes, in lists long enough for the radix sort: `i64::MIN` and `i64::MAX` at
/// both ends, both ways, equal keys in list order; a float equal to an integer key after
/// them sends the whole list to the comparison sort, which orders them as equal.
#[test]
fn radix_sort_extremes_and_a_late_float() {
    let mut keys: Vec<serde_json::Value> = (0..200).map(|i| json!([i64::MIN, i64::MAX, -1, 0, 1][i % 5])).collect();
    for desc in [false, true] {
        assert_eq!(sorted_indexes(&keys, desc), stable_order(&keys, desc), "desc: {desc}");
    }
    let want: Vec<usize> = (0..200).filter(|i| i % 5 == 0).collect();
    let got = sorted_indexes(&keys, false);
    assert!(got.starts_with(&Value::from(&json!(want)).to_string()[..50]), "{got}");
    keys.push(json!(1.0));
    keys.push(json!(i64::MIN as f64));
    for desc in [false, true] {
        assert_eq!(sorted_indexes(&keys, desc), stable_order(&keys, desc), "desc: {desc}");
    }
}

// ---- group_by ----------------------------------------------------------------------------

/// `group_by`'s groups as a model computes them: each element's key as text (what
/// `join([key], '')` writes, which is how `group_by` names a key that is not a string),
/// groups in first-seen order, and the indexes of their elements.
fn model_groups(keys: &[serde_json::Value]) -> Vec<(String, Vec<usize>)> {
    let vars = keyed(keys);
    let texts = outcome(&Limits::default(), "map(xs, join([item.k], ''))", &vars).expect("texts");
    let texts: Vec<String> = serde_json::from_str(&texts).expect("a list of texts");
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, t) in texts.into_iter().enumerate() {
        match groups.iter_mut().find(|(k, _)| *k == t) {
            Some((_, v)) => v.push(i),
            None => groups.push((t, vec![i])),
        }
    }
    groups
}

fn check_groups(keys: &[serde_json::Value]) -> Result<(), TestCaseError> {
    let vars = keyed(keys);
    let want = model_groups(keys);
    let kept = outcome(
        &Limits::default(),
        "pipeline(group_by(xs, 'item.k'), [zip(keys(current), map(values(current), map(item, item.i)))])",
        &vars,
    );
    let want_kept: Vec<serde_json::Value> = want.iter().map(|(k, v)| json!([k, v])).collect();
    prop_assert_eq!(kept, Ok(Value::from(&json!(want_kept)).to_string()));
    // Counted: the groups' elements are never kept, only their number.
    let counted = outcome(
        &Limits::default(),
        "pipeline(group_by(xs, 'item.k'), [zip(keys(current), map(values(current), length(item)))])",
        &vars,
    );
    let want_counted: Vec<serde_json::Value> = want.iter().map(|(k, v)| json!([k, v.len()])).collect();
    prop_assert_eq!(counted, Ok(Value::from(&json!(want_counted)).to_string()));
    Ok(())
}

fn group_key() -> impl Strategy<Value = serde_json::Value> {
    let prefix = "k".repeat(15);
    prop_oneof![
        // Keys of 15, 16 and 17 bytes sharing 15 (the scan takes up to 16), and a few short
        // ones: more or fewer than eight groups.
        4 => (0usize..3, 0u8..12).prop_map(move |(extra, c)| json!(format!("{}{}", &prefix[..13 + extra], (b'a' + c) as char))),
        2 => (0u8..6).prop_map(|c| json!(((b'a' + c) as char).to_string())),
        1 => prop_oneof![Just(json!("")), Just(json!("1")), Just(json!("null")), Just(json!("true")), Just(json!("é"))],
        2 => prop_oneof![Just(json!(1)), Just(json!(1.0)), Just(json!(1.5)), Just(json!(null)), Just(json!(true)),
                         Just(json!(false)), Just(json!({"a": 1})), Just(json!([1, "x"])), Just(json!(-0.0))],
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// `group_by` over keys of 15–17 bytes with long equal prefixes, short ones, keys that
    /// are not strings (`1` and `1.0`, `null`, booleans, objects, lists) and strings that
    /// read like them (`"1"`, `"null"`): the model's groups, kept and counted, across the
    /// eight groups from which it hashes instead of scanning.
    #[test]
    fn group_by_gives_the_models_groups(keys in proptest::collection::vec(group_key(), 0..60)) {
        check_groups(&keys)?;
    }
}

/// A hundred thousand distinct groups: all there at the default budget, and a memory error
/// (not a crash, not a partial object) under a budget that cannot hold them; keys a
/// kilobyte long sharing all but their last byte, eight of them, grouped by hash.
#[test]
fn many_groups_and_long_prefixes() {
    let n = outcome(&Limits::default(), "length(group_by(range(100000), 'item'))", &Value::Null);
    assert_eq!(n, Ok("100000".to_string()));
    let e = outcome(&memory(4 << 20), "length(group_by(range(100000), 'item'))", &Value::Null);
    assert_eq!(kind(&e), Err(Code::MemoryLimit), "{e:?}");
    let long = "p".repeat(1023);
    let keys: Vec<serde_json::Value> = (0..800).map(|i| json!(format!("{long}{}", i % 8))).collect();
    let vars = keyed(&keys);
    let counts = outcome(&Limits::default(), "map(values(group_by(xs, 'item.k')), length(item))", &vars);
    assert_eq!(counts, Ok("[100,100,100,100,100,100,100,100]".to_string()));
}

// ---- join -----------------------------------------------------------------------------

/// `join` of a million elements: a separator written a million times (the room reserved up
/// front is at most 1 MiB, and grows as the text is written), elements that are not strings,
/// and the string and memory limits: each an error of its own, the string limit first when
/// the text is longer than both (as before the reserve).
#[test]
fn join_of_a_million_elements() {
    let src = "length(join(map(range(1000000), null), '--'))";
    assert_eq!(outcome(&Limits::default(), src, &Value::Null), Ok("1999998".to_string()));
    // A text of 588,889 bytes from a list charged 2,400,032: under a memory budget leaving
    // 100,000 bytes after the list, the memory limit; under a string limit of 200,000 too,
    // the string limit (the text is longer than both).
    let src = "length(join(range(100000), ','))";
    assert_eq!(outcome(&Limits::default(), src, &Value::Null), Ok("588889".to_string()));
    let tight = Limits { max_alloc_bytes: 2_500_032, ..Limits::default() };
    let e = outcome(&tight, src, &Value::Null);
    assert_eq!(kind(&e), Err(Code::MemoryLimit), "{e:?}");
    let e = outcome(&Limits { max_string_len: 200_000, ..tight.clone() }, src, &Value::Null);
    assert_eq!(kind(&e), Err(Code::StringLimit), "longer than both limits: {e:?}");
    let e = outcome(&Limits { max_string_len: 588_888, ..Limits::default() }, src, &Value::Null);
    assert_eq!(kind(&e), Err(Code::StringLimit), "{e:?}");
    let e = outcome(&Limits { max_alloc_bytes: 2_400_032 + 588_889 + 32, ..Limits::default() }, src, &Value::Null);
    assert_eq!(kind(&e), Ok("588889"), "just enough memory: {e:?}");
    let mixed = "join([1, 1.0, 1.5, -0.0, null, true, false, 'é', [1, 'x', null], {a: [2]}], '|')";
    assert_eq!(
        outcome(&Limits::default(), mixed, &Value::Null),
        Ok("\"1|1.0|1.5|-0.0||true|false|é|[1,\\\"x\\\",null]|{\\\"a\\\":[2]}\"".to_string())
    );
}

// ---- the parser's pool ----------------------------------------------------------------

/// What a compile gives, to compare across threads: the program's listing and value, or
/// the diagnostics' codes, messages and spans.
fn compiled(src: &str) -> String {
    let vars = Value::from(&json!({"xs": [{"a": 2, "b": "x"}, {"a": 1, "b": "y"}], "x": {"y": [{"z": 3}]}}));
    match Engine::new().compile(src) {
        Ok(p) => format!("{}\n=> {:?}", p.disassemble(), p.eval(&vars).map(|v| v.to_string()).map_err(|e| e.code)),
        Err(ds) => {
            ds.iter().map(|d| format!("{:?} {} {:?} {} {:?}\n", d.code, d.message, d.span, d.label, d.help)).collect()
        }
    }
}

/// Sources that leave many kept boxes and lists behind, that fail part-way (a tree half
/// built when the parse stops), and that come after those.
fn pool_sources() -> Vec<String> {
    let mut out: Vec<String> = [
        "map(sort(xs, 'item.a', 'desc'), {b: item.b, t: [item.a, -item.a, not true, x.y[0].z]})",
        "[1, [2, [3, {a: -x.y[0].z, b: not (true or false)}]], length([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])]",
        "map(xs, item.a +",
        "[1, 2, {a: f(x, ",
        "{a: [1, 2,, 3]}",
        "if(true, [1, 2.5, null, true], {}",
        "map(xs, {a: item.a, b: [item.b, item.b, ]})",
        "x.y[0].z + (1 * (2 - (3 / (4 % (5 + 6)))))",
        "filter(xs, 'item.a > 1 and item.b == \"x\"'",
        "sum(xs, 'item.a')",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // A list of 2,000 elements (lists over 16 are not kept), and nesting to the limit and
    // past it, in lists, objects and calls.
    out.push(format!("length([{}])", vec!["[1, {a: 2}]"; 2_000].join(", ")));
    for depth in [60, 127, 128, 129, 400] {
        out.push(format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
        out.push(format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth)));
        out.push(format!("{}1{}", "length([".repeat(depth), "])".repeat(depth)));
        out.push(format!("{}1{}", "-(".repeat(depth), ")".repeat(depth)));
    }
    // Chains without brackets, each link a level of the tree: within the nesting limit and
    // five thousand links past it (the tree is given back to the pool, or dropped, a
    // link at a time).
    for n in [100, 126, 5_000] {
        out.push(format!("1{}", "+1".repeat(n)));
        out.push(format!("x{}", ".y".repeat(n)));
        out.push(format!("x{}", "[0]".repeat(n)));
        out.push(format!("{}true", "not ".repeat(n)));
        out.push(format!("false{}", " or true".repeat(n)));
    }
    out
}

/// Each source compiled on a thread of its own (a pool nothing used before) gives what it
/// gives on threads that compiled other sources before it, failed ones included: four
/// threads compiling the sources at once, each in another order.
#[test]
fn the_pool_leaks_nothing_from_one_compile_into_the_next() {
    let sources = pool_sources();
    let fresh: Vec<String> = sources
        .iter()
        .map(|s| {
            let s = s.clone();
            std::thread::spawn(move || compiled(&s)).join().expect("a fresh thread compiles")
        })
        .collect();
    for (s, f) in sources.iter().zip(&fresh) {
        assert!(!f.is_empty(), "`{}`", &s[..s.len().min(60)]);
    }
    let sources = Arc::new(sources);
    let fresh = Arc::new(fresh);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (sources, fresh) = (sources.clone(), fresh.clone());
            std::thread::spawn(move || {
                let n = sources.len();
                // Every thread in its own order, each after sources the others did not
                // compile before it.
                for k in 0..n {
                    let i = (k * (2 * t + 1) + t) % n;
                    let got = compiled(&sources[i]);
                    assert_eq!(got, fresh[i], "thread {t}: `{}`", &sources[i][..sources[i].len().min(60)]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no thread fails");
    }
}

/// A separator counts against the string limit as any text does: between elements that add
/// nothing (`null`s, empty strings) it passed every check, and a million of them made a
/// text as long as the separator a million times (a gigabyte from a kilobyte's separator)
/// before the memory limit was asked, past the string limit. Now the string limit's error,
/// and, under a memory budget smaller than the text, the memory limit's, at once.
#[test]
fn a_separator_between_empty_elements_is_counted() {
    let small = Limits { max_string_len: 12, ..Limits::default() };
    for src in [
        "join(['', '', '', ''], 'abcdefghij')",
        "join([null, null, null], 'abcdefghij')",
        "join([null, '', 1], 'abcdefg')",
    ] {
        let o = outcome(&small, src, &Value::Null);
        assert_eq!(kind(&o), Err(Code::StringLimit), "`{src}`: {o:?}");
    }
    // Up to the limit exactly: the text.
    let o = outcome(&small, "join([null, '', 'a'], 'abcde')", &Value::Null);
    assert_eq!(o, Ok("\"abcdeabcdea\"".to_string()));
    // A kilobyte's separator between a million nulls: the string limit (16 MiB), at once.
    let sep = format!("'{}'", "x".repeat(1024));
    let src = format!("length(join(map(range(1000000), null), {sep}))");
    let started = std::time::Instant::now();
    let o = outcome(&Limits::default(), &src, &Value::Null);
    assert_eq!(kind(&o), Err(Code::StringLimit), "{o:?}");
    // Shorter than the string limit, longer than the memory left: the memory limit.
    let src = format!("length(join(map(range(10000), null), {sep}))");
    let o = outcome(&Limits { max_alloc_bytes: 1 << 20, ..Limits::default() }, &src, &Value::Null);
    assert_eq!(kind(&o), Err(Code::MemoryLimit), "{o:?}");
    assert_eq!(outcome(&Limits::default(), &src, &Value::Null), Ok("10238976".to_string()));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
}

// ---- second look, same day ----------------------------------------------------------------

/// `join`'s error past its cap for elements that are not strings (numbers, nested lists and
/// objects), at the boundary: the string limit's error when the whole text is one byte
/// longer than that limit, the text when it is exactly as long, and under a memory budget
/// one byte short of the least that runs, the memory limit's, unless the text is also past
/// the string limit (then the string limit's, as if the text had been written whole).
#[test]
fn join_past_its_cap_at_the_boundary_for_elements_that_are_not_strings() {
    let many: Vec<serde_json::Value> = (0..300).map(|i| json!([i, {"k": i}])).collect();
    let many_text = many.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(";");
    for (xs, sep, text) in [
        (json!([12345, 678, -1.5]), ",", "12345,678,-1.5".to_string()),
        (json!([[1, 2], {"a": [3]}, true]), "|", "[1,2]|{\"a\":[3]}|true".to_string()),
        (json!([null, [[[]]], {"b": {"c": null}}]), "", "[[[]]]{\"b\":{\"c\":null}}".to_string()),
        (json!(many), ";", many_text),
    ] {
        // From a variable: a literal list would be joined when compiled.
        let src = format!("join(xs, '{sep}')");
        let src = src.as_str();
        let vars = Value::from(json!({ "xs": xs }));
        let whole = serde_json::to_string(&text).expect("JSON");
        assert_eq!(outcome(&Limits::default(), src, &vars), Ok(whole.clone()), "{xs}");
        let len = text.len();
        let at = Limits { max_string_len: len, ..Limits::default() };
        assert_eq!(outcome(&at, src, &vars), Ok(whole.clone()), "{xs} exactly at the limit");
        let over = Limits { max_string_len: len - 1, ..Limits::default() };
        let o = outcome(&over, src, &vars);
        assert_eq!(kind(&o), Err(Code::StringLimit), "{xs} one byte over: {o:?}");
        // (A budget of 0 is no budget: the least is looked for from 1.)
        let least = 1 + least(1 << 24, src, &vars, |n| memory(usize::try_from(n + 1).expect("fits")));
        assert!(least > 1, "{xs} joins in a byte of memory");
        let short = usize::try_from(least - 1).expect("fits");
        let o = outcome(&memory(short), src, &vars);
        assert_eq!(kind(&o), Err(Code::MemoryLimit), "{xs} a byte short of memory: {o:?}");
        let both = Limits { max_string_len: len - 1, max_alloc_bytes: short, ..Limits::default() };
        let o = outcome(&both, src, &vars);
        assert_eq!(kind(&o), Err(Code::StringLimit), "{xs} past both: {o:?}");
        let exact = Limits { max_string_len: len, max_alloc_bytes: short, ..Limits::default() };
        let o = outcome(&exact, src, &vars);
        assert_eq!(kind(&o), Err(Code::MemoryLimit), "{xs} at the string limit, short of memory: {o:?}");
    }
}

/// What `join` walks once past its cap is bounded by the string limit: 100,000 objects of
/// 500 bytes each under a memory budget that stops the text at the first ones are rendered
/// up to the string limit (1 MiB, then the default 16 MiB), not all 50 MB.
#[test]
fn join_past_its_cap_over_many_large_objects_is_bounded() {
    let big = "x".repeat(500);
    let xs: Vec<serde_json::Value> = (0..100_000).map(|i| json!({"i": i, "pad": big})).collect();
    let vars = Value::from(json!({ "xs": xs }));
    let limits = Limits { max_string_len: 1 << 20, max_alloc_bytes: 64 << 10, ..Limits::default() };
    let o = outcome(&limits, "length(join(xs, ','))", &vars);
    assert_eq!(kind(&o), Err(Code::StringLimit), "{o:?}");
    let o = outcome(&limits, "length(join(xs, ''))", &vars);
    assert_eq!(kind(&o), Err(Code::StringLimit), "{o:?}");
    // The string limit of 16 MiB, a memory budget of 64 KiB: 16 MiB rendered at most.
    let o = outcome(&memory(64 << 10), "length(join(xs, ','))", &vars);
    assert_eq!(kind(&o), Err(Code::StringLimit), "{o:?}");
    // Bounded in work, not in time (a timed bound failed on a loaded machine): every element
    // a built-in visits costs at least a unit of fuel, so a walk of all 100,000 objects would
    // run out of these 100,000 units before the string limit stops it (it needs 12,503).
    let walk = Limits { fuel: 100_000, max_alloc_bytes: 64 << 10, ..Limits::default() };
    let o = outcome(&walk, "length(join(xs, ','))", &vars);
    assert_eq!(kind(&o), Err(Code::StringLimit), "{o:?}");
}
