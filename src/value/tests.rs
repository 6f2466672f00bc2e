//! Unit tests of the value module.

use super::convert::{MAX_SHAPE_MISSES, MAX_SHARED_KEYS};
use super::path::same_key;
use super::*;
use serde_json::json;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

fn v(j: serde_json::Value) -> Value {
    Value::from(j)
}

/// JSON whose objects draw keys, in any order, from a few short and long names, so the
/// conversion's key predictions hit, miss and go stale.
fn arb_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    const KEYS: &[&str] = &["id", "name", "a", "b", "a key longer than twenty-three bytes", "é", ""];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z@.]{0,30}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest::proptest! {
    /// Converting keeps every key, value and order, whatever the predictions do.
    #[test]
    fn conversion_round_trips(j in arb_json()) {
        let v = Value::from(&j);
        // As text, so that key order counts too.
        proptest::prop_assert_eq!(v.to_string(), j.to_string());
        // Reading the JSON text (no shared keys, no predictions) gives an equal value.
        let read: Value = serde_json::from_str(&j.to_string()).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(&read, &v);
        // Keys are found by hash after the conversion inserted them by a precomputed one.
        if let (serde_json::Value::Object(jm), Value::Object(m)) = (&j, &v) {
            for k in jm.keys() {
                proptest::prop_assert!(m.get(k.as_str()).is_some());
            }
        }
    }
}

#[test]
fn conversion_of_records_that_change_shape() {
    // Same keys in another order, a key more, a key less, objects nested under the key
    // they sit in, and more changes of shape than a slot keeps shapes for.
    let mut records = vec![
        json!({"a": 1, "b": {"a": {"a": 2}}}),
        json!({"a": 3, "b": {"a": {"a": 4, "b": 5}}}),
        json!({"b": {"a": {}}, "a": 6}),
        json!({"a": 7, "b": {"a": {"a": 8}}, "c": 9}),
        json!({"a": 10}),
    ];
    for i in 0..(3 * MAX_SHAPE_MISSES as usize) {
        records.push(if i % 2 == 0 { json!({"x": i, "y": [{"a": i}]}) } else { json!({"y": [], "x": i}) });
    }
    records.push(json!({"a": 1, "b": {"a": {"a": 2}}}));
    let j = serde_json::Value::Array(records);
    let v = Value::from(&j);
    // As text, so that key order counts too.
    assert_eq!(v.to_string(), j.to_string());
    let read: Value = serde_json::from_str(&j.to_string()).expect("valid JSON");
    assert_eq!(read, v);
}

#[test]
fn conversion_past_the_shared_key_table_still_converts() {
    // More distinct keys than the table shares, in records that repeat them.
    let record: serde_json::Map<String, serde_json::Value> =
        (0..MAX_SHARED_KEYS + 100).map(|i| (format!("key number {i} of many"), json!(i))).collect();
    let j = json!([record.clone(), record]);
    let v = Value::from(&j);
    assert_eq!(serde_json::to_value(&v).expect("a shallow value converts"), j);
    let Value::List(l) = &v else { unreachable!() };
    let Value::Object(last) = &l[1] else { unreachable!() };
    assert_eq!(last.get(format!("key number {} of many", MAX_SHARED_KEYS + 99).as_str()), Some(&Value::Int(4195)));
}

#[test]
fn drops_release_every_reference_at_any_depth() {
    // Across the switch from recursive to iterative drops, with a shared part at every
    // level: every reference the dropped value held is released, no more.
    for depth in [1, 2, 31, 32, 33, 64, 10_000] {
        let shared = Value::list(vec![Value::list(vec![Value::from(1)]), Value::str("a string longer than 23 bytes")]);
        let Value::List(probe) = &shared else { unreachable!() };
        let probe = probe.clone();
        let mut v = shared.clone();
        for i in 0..depth {
            v = if i % 2 == 0 {
                Value::list(vec![v, shared.clone()])
            } else {
                Value::object_from([("k", v), ("s", shared.clone())])
            };
        }
        assert_eq!(Arc::strong_count(&probe), 3 + depth, "depth {depth}");
        drop(v);
        assert_eq!(Arc::strong_count(&probe), 2, "depth {depth}");
        assert_eq!(shared.to_string(), r#"[[1],"a string longer than 23 bytes"]"#);
    }
}

#[test]
fn values_stay_three_words_and_short_strings_inline() {
    // The layout the VM's stack and every list are sized by: the string's inline form
    // shares its spare tag values with the other kinds.
    assert_eq!(std::mem::size_of::<Value>(), 24);
    let text = |v: &Value| match v {
        Value::Str(s) => s.clone(),
        _ => unreachable!(),
    };
    assert!(!text(&Value::str("user7@example.com")).is_heap_allocated());
    let long = "a string longer than twenty-three bytes";
    let s = text(&Value::str(long));
    assert!(s.is_heap_allocated());
    // Clones of a long string share its text.
    assert_eq!(text(&Value::Str(s.clone())).as_ptr(), s.as_ptr());
    assert_eq!(Value::str(long), Value::from(serde_json::json!(long)));
}

#[test]
fn total_order_across_kinds() {
    let mut xs = vec![
        v(json!({})),
        v(json!([])),
        v(json!("a")),
        v(json!(2.5)),
        v(json!(1)),
        v(json!(true)),
        v(json!(false)),
        v(json!(null)),
    ];
    xs.sort_by(Value::total_cmp);
    assert_eq!(v(json!([null, false, true, 1, 2.5, "a", [], {}])), Value::list(xs));
}

#[test]
fn numbers_compare_numerically() {
    assert_eq!(v(json!(1)), v(json!(1.0)));
    assert_ne!(v(json!(1)), v(json!(1.5)));
    assert_eq!(cmp_numbers(&Value::Int(i64::MAX), &Value::Float(9.3e18)), Ordering::Less);
    let two_63 = Value::Float(9_223_372_036_854_775_808.0);
    assert_ne!(Value::Int(i64::MAX), two_63);
    assert_ne!(Value::Int(i64::MAX - 1), two_63);
    assert_eq!(Value::Int(i64::MIN), Value::Float(-9_223_372_036_854_775_808.0));
    assert_eq!(cmp_numbers(&Value::Int(-2), &Value::Float(-1.5)), Ordering::Less);
    assert_eq!(cmp_numbers(&Value::Int(-1), &Value::Float(-1.5)), Ordering::Greater);
    assert_eq!(cmp_numbers(&Value::Int(1), &Value::Float(1.5)), Ordering::Less);
    assert_eq!(cmp_numbers(&Value::Int(2), &Value::Float(1.5)), Ordering::Greater);
}

#[test]
fn object_equality_ignores_order() {
    assert_eq!(v(json!({"a": 1, "b": 2})), v(json!({"b": 2, "a": 1})));
}

#[test]
fn truthiness() {
    for falsy in [json!(null), json!(false), json!(0), json!(0.0), json!(""), json!([]), json!({})] {
        assert!(!v(falsy.clone()).truthy(), "{falsy}");
    }
    for truthy in [json!(true), json!(1), json!(-0.5), json!(" "), json!([0]), json!({"a": null})] {
        assert!(v(truthy.clone()).truthy(), "{truthy}");
    }
}

#[test]
fn segments() {
    let rec = v(json!({"files": ["a/b.txt", "c"], "length": 7, "f": {"path": "x/y/z.md"}}));
    let files = rec.segment("files").unwrap();
    assert_eq!(files.segment("length").unwrap(), Value::Int(2));
    assert_eq!(files.segment("first").unwrap(), Value::str("a/b.txt"));
    assert_eq!(files.segment("last").unwrap(), Value::str("c"));
    assert_eq!(files.segment("5").unwrap(), Value::Null);
    assert_eq!(rec.segment("length").unwrap(), Value::Int(7), "own key wins");
    let f = rec.segment("f").unwrap();
    assert_eq!(f.segment("file_name").unwrap(), Value::str("z.md"));
    assert_eq!(f.segment("parent_directory").unwrap(), Value::str("x/y"));
    assert_eq!(Value::str("z").segment("parent_directory").unwrap(), Value::str(""));
    assert_eq!(Value::str("héllo").segment("length").unwrap(), Value::Int(5));
    assert_eq!(Value::Int(3).segment("x"), Err(SegmentError { found: Kind::Number }));
    assert_eq!(Value::Null.segment("x").unwrap(), Value::Null);
}

#[test]
fn hash_agrees_with_eq() {
    use std::collections::hash_map::DefaultHasher;
    let h = |x: &Value| {
        let mut s = DefaultHasher::new();
        x.hash(&mut s);
        s.finish()
    };
    assert_eq!(h(&v(json!(1))), h(&v(json!(1.0))));
    assert_eq!(h(&v(json!({"a": 1, "b": 2}))), h(&v(json!({"b": 2, "a": 1}))));
}

#[test]
fn key_comparison_at_every_length() {
    for n in 0..40 {
        let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        assert!(same_key(a.as_bytes(), a.clone().as_bytes()));
        for i in 0..n {
            let mut b = a.clone().into_bytes();
            b[i] = b'Z';
            assert!(!same_key(a.as_bytes(), &b), "{a} differs at {i}");
        }
        assert!(!same_key(a.as_bytes(), format!("{a}x").as_bytes()));
    }
}

#[test]
fn floats_round_trip_through_json() {
    for f in [1e15 + 0.5, 0.1, 5e-324, 1.7976931348623157e308, 9_007_199_254_740_993.0] {
        let v = Value::Float(f);
        let back: Value = serde_json::from_str(&v.to_string()).unwrap();
        assert_eq!(back.as_f64().map(f64::to_bits), Some(f.to_bits()), "{v}");
    }
}

#[test]
fn deserialize_direct() {
    let x: Value = serde_json::from_str(r#"{"a": [1, 2.5, "s", null, true]}"#).unwrap();
    assert_eq!(x.to_string(), r#"{"a":[1,2.5,"s",null,true]}"#);
}

/// Values with every kind of scalar — floats, escapes, control characters, non-ASCII,
/// strings long enough to be shared — and parts held twice by reference.
fn arb_value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::Float),
        "[a-z\"\\\\\u{0}-\u{1f}\u{7f}é😀]{0,40}".prop_map(|s| Value::str(&s)),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
            // The same part twice: measured once, counted twice.
            inner.clone().prop_map(|x| Value::list(vec![x.clone(), x])),
            proptest::collection::vec(("[a-z\"\u{1}é]{0,30}", inner), 0..6)
                .prop_map(|kv| Value::object_from(kv.iter().map(|(k, v)| (k.as_str(), v.clone())))),
        ]
    })
}

proptest::proptest! {
    /// The measured length is the length serde_json writes, and a limit below it is
    /// reported as passed.
    #[test]
    fn json_length_is_what_serde_json_writes(v in arb_value()) {
        let written = serde_json::to_vec(&v).map(|b| b.len()).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        proptest::prop_assert_eq!(json_len_at_most(&v, usize::MAX), Some(written));
        proptest::prop_assert_eq!(json_len_at_most(&v, written), Some(written));
        proptest::prop_assert_eq!(json_len_at_most(&v, written - 1), None);
    }
}

#[test]
fn json_length_of_shared_parts_is_measured_once() {
    // 2^40 copies of one 4 MiB string: 4.4 TB of JSON, measured exactly by walking 41 parts
    // (writing it out to count it would never end).
    let s = Value::str(&"a".repeat(4 << 20));
    let mut v = s.clone();
    for _ in 0..40 {
        v = Value::list(vec![v.clone(), v]);
    }
    let mut expected = (4usize << 20) + 2;
    for _ in 0..40 {
        expected = 2 * expected + 3;
    }
    assert_eq!(json_len_at_most(&v, usize::MAX), Some(expected));
    assert_eq!(json_len_at_most(&v, 1 << 30), None);
    // Objects too.
    let mut o = Value::Int(-12);
    for _ in 0..40 {
        o = Value::object_from([("a", o.clone()), ("b\n", o)]);
    }
    let mut expected = 3usize;
    for _ in 0..40 {
        expected = 13 + 2 * expected;
    }
    assert_eq!(json_len_at_most(&o, usize::MAX), Some(expected));
}

#[test]
fn json_length_refuses_what_cannot_be_written() {
    let mut v = Value::Null;
    for _ in 0..MAX_SERIALIZE_DEPTH {
        v = Value::list(vec![v]);
    }
    assert!(serde_json::to_vec(&v).is_ok());
    assert_eq!(json_len_at_most(&v, usize::MAX), serde_json::to_vec(&v).ok().map(|b| b.len()));
    let deeper = Value::list(vec![v]);
    assert!(serde_json::to_vec(&deeper).is_err());
    assert_eq!(json_len_at_most(&deeper, usize::MAX), None);
}
