//! Equality, the total order of SPEC §1, and hashing consistent with equality.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHasher;

use super::Value;

impl Value {
    /// The total order of SPEC §1: `null < false < true < numbers < strings < lists < objects`.
    ///
    /// Strings compare by code point, lists lexicographically, objects by their entries in
    /// key order (keys first, then values), so the order is total and deterministic.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Int(_) | Float(_), Int(_) | Float(_)) => cmp_numbers(self, other),
            (Str(a), Str(b)) => a.cmp(b),
            (List(a), List(b)) => {
                for (x, y) in a.iter().zip(b.iter()) {
                    match x.total_cmp(y) {
                        Ordering::Equal => {}
                        ord => return ord,
                    }
                }
                a.len().cmp(&b.len())
            }
            (Object(a), Object(b)) => {
                let mut ak: Vec<_> = a.iter().collect();
                let mut bk: Vec<_> = b.iter().collect();
                ak.sort_by(|x, y| x.0.cmp(y.0));
                bk.sort_by(|x, y| x.0.cmp(y.0));
                for ((ka, va), (kb, vb)) in ak.iter().zip(bk.iter()) {
                    match ka.cmp(kb).then_with(|| va.total_cmp(vb)) {
                        Ordering::Equal => {}
                        ord => return ord,
                    }
                }
                ak.len().cmp(&bk.len())
            }
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(false) => 1,
        Value::Bool(true) => 2,
        Value::Int(_) | Value::Float(_) => 3,
        Value::Str(_) => 4,
        Value::List(_) => 5,
        Value::Object(_) => 6,
    }
}

/// Compares two numbers exactly, even an `i64` beyond `f64`'s integer range with a float.
pub fn cmp_numbers(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Int(x), Value::Float(y)) => cmp_int_float(*x, *y),
        (Value::Float(x), Value::Int(y)) => cmp_int_float(*y, *x).reverse(),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn cmp_int_float(i: i64, f: f64) -> Ordering {
    // Exact: every i64 lies in [-2^63, 2^63), and there a float's integral part is an i64.
    // (Comparing `i as f64` instead rounds i64::MAX - 1 up to 2^63, making it equal to a
    // float that i64::MAX is also equal to: equality would not be transitive, and hashing
    // would disagree with it.)
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f >= TWO_63 {
        return Ordering::Less;
    }
    if f < -TWO_63 {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    i.cmp(&(whole as i64)).then_with(|| 0.0.partial_cmp(&(f - whole)).unwrap_or(Ordering::Equal))
}

impl PartialEq for Value {
    /// Deep equality: numbers numerically (`1 == 1.0`), objects ignoring key order.
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Int(_) | Float(_), Int(_) | Float(_)) => cmp_numbers(self, other) == Ordering::Equal,
            (Str(a), Str(b)) => a == b,
            (List(a), List(b)) => Arc::ptr_eq(a, b) || a[..] == b[..],
            (Object(a), Object(b)) => {
                Arc::ptr_eq(a, b) || (a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v)))
            }
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    /// Consistent with `==`: integral floats hash as integers and objects hash
    /// independently of key order.
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => (1u8, b).hash(state),
            Value::Int(i) => (3u8, i).hash(state),
            Value::Float(f) => {
                if f.fract() == 0.0 && *f >= i64::MIN as f64 && *f < i64::MAX as f64 {
                    (3u8, *f as i64).hash(state)
                } else {
                    (3u8, f.to_bits()).hash(state)
                }
            }
            Value::Str(s) => (4u8, s).hash(state),
            Value::List(l) => {
                5u8.hash(state);
                l.len().hash(state);
                for v in l.iter() {
                    v.hash(state);
                }
            }
            Value::Object(o) => {
                6u8.hash(state);
                o.len().hash(state);
                let mut acc: u64 = 0;
                for (k, v) in o.iter() {
                    let mut h = FxHasher::default();
                    k.hash(&mut h);
                    v.hash(&mut h);
                    acc = acc.wrapping_add(h.finish());
                }
                acc.hash(state);
            }
        }
    }
}
