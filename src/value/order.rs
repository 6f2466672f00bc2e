//! Equality, the total order of SPEC §1, and hashing consistent with equality.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHasher;

use super::{Map, SmolStr, Value};

/// Nesting down to which equality, the order and hashing recurse; below it they go on
/// with a stack on the heap (equality, the order) or stop descending (hashing, which stays
/// consistent with equality: equal values have the same shape), so a value a host nested a
/// million levels deep cannot overflow the stack.
const RECURSIVE_LEVELS: usize = 64;

impl Value {
    /// The total order of SPEC §1: `null < false < true < numbers < strings < lists < objects`.
    ///
    /// Strings compare by code point, lists lexicographically, objects by their entries in
    /// key order (keys first, then values), so the order is total and deterministic.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        cmp_at(self, other, 0)
    }
}

fn cmp_at(a: &Value, b: &Value, depth: usize) -> Ordering {
    match (a, b) {
        (Value::List(_), Value::List(_)) | (Value::Object(_), Value::Object(_)) if depth >= RECURSIVE_LEVELS => {
            cmp_iteratively(a, b)
        }
        (Value::List(x), Value::List(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                match cmp_at(p, q, depth + 1) {
                    Ordering::Equal => {}
                    ord => return ord,
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let (ak, bk) = (sorted_entries(x), sorted_entries(y));
            for ((ka, va), (kb, vb)) in ak.iter().zip(bk.iter()) {
                match ka.cmp(kb).then_with(|| cmp_at(va, vb, depth + 1)) {
                    Ordering::Equal => {}
                    ord => return ord,
                }
            }
            ak.len().cmp(&bk.len())
        }
        _ => cmp_shallow(a, b),
    }
}

/// The order of two values that are not both lists or both objects.
fn cmp_shallow(a: &Value, b: &Value) -> Ordering {
    use Value::*;
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Bool(a), Bool(b)) => a.cmp(b),
        (Int(a), Int(b)) => a.cmp(b),
        (Int(_) | Float(_), Int(_) | Float(_)) => cmp_numbers(a, b),
        (Str(a), Str(b)) => a.cmp(b),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn sorted_entries(o: &Map) -> Vec<(&SmolStr, &Value)> {
    let mut entries: Vec<(&SmolStr, &Value)> = o.iter().collect();
    entries.sort_by(|x, y| x.0.cmp(y.0));
    entries
}

/// A list or object pair being compared, and how far.
enum CmpFrame<'a> {
    List(&'a [Value], &'a [Value], usize),
    Object(Vec<(&'a SmolStr, &'a Value)>, Vec<(&'a SmolStr, &'a Value)>, usize),
}

/// [`Value::total_cmp`] with its stack on the heap.
fn cmp_iteratively(a: &Value, b: &Value) -> Ordering {
    let mut stack: Vec<CmpFrame<'_>> = Vec::new();
    let mut next = Some((a, b));
    loop {
        if let Some((x, y)) = next.take() {
            match (x, y) {
                (Value::List(p), Value::List(q)) => stack.push(CmpFrame::List(p, q, 0)),
                (Value::Object(p), Value::Object(q)) => {
                    stack.push(CmpFrame::Object(sorted_entries(p), sorted_entries(q), 0));
                }
                _ => match cmp_shallow(x, y) {
                    Ordering::Equal => {}
                    ord => return ord,
                },
            }
        }
        let Some(top) = stack.last_mut() else { return Ordering::Equal };
        let ended = match top {
            CmpFrame::List(p, q, i) => {
                let (p, q): (&[Value], &[Value]) = (p, q);
                if *i < p.len().min(q.len()) {
                    next = Some((&p[*i], &q[*i]));
                    *i += 1;
                    None
                } else {
                    Some(p.len().cmp(&q.len()))
                }
            }
            CmpFrame::Object(p, q, i) => {
                if *i < p.len().min(q.len()) {
                    let ((ka, va), (kb, vb)) = (p[*i], q[*i]);
                    *i += 1;
                    match ka.cmp(kb) {
                        Ordering::Equal => next = Some((va, vb)),
                        ord => return ord,
                    }
                    None
                } else {
                    Some(p.len().cmp(&q.len()))
                }
            }
        };
        if let Some(ord) = ended {
            stack.pop();
            if ord != Ordering::Equal {
                return ord;
            }
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
pub(crate) fn cmp_numbers(a: &Value, b: &Value) -> Ordering {
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
        eq_at(self, other, 0)
    }
}

fn eq_at(a: &Value, b: &Value, depth: usize) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            Arc::ptr_eq(x, y)
                || (x.len() == y.len()
                    && if depth >= RECURSIVE_LEVELS {
                        eq_iteratively(a, b)
                    } else {
                        x.iter().zip(y.iter()).all(|(p, q)| eq_at(p, q, depth + 1))
                    })
        }
        (Value::Object(x), Value::Object(y)) => {
            Arc::ptr_eq(x, y)
                || (x.len() == y.len()
                    && if depth >= RECURSIVE_LEVELS {
                        eq_iteratively(a, b)
                    } else {
                        x.iter().all(|(k, v)| y.get(k).is_some_and(|w| eq_at(v, w, depth + 1)))
                    })
        }
        _ => eq_shallow(a, b),
    }
}

/// Equality of two values that are not both lists or both objects.
fn eq_shallow(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (Null, Null) => true,
        (Bool(a), Bool(b)) => a == b,
        (Int(a), Int(b)) => a == b,
        (Int(_) | Float(_), Int(_) | Float(_)) => cmp_numbers(a, b) == Ordering::Equal,
        (Str(a), Str(b)) => a == b,
        _ => false,
    }
}

/// Equality with its stack on the heap.
fn eq_iteratively(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some((x, y)) = stack.pop() {
        match (x, y) {
            (Value::List(p), Value::List(q)) => {
                if Arc::ptr_eq(p, q) {
                    continue;
                }
                if p.len() != q.len() {
                    return false;
                }
                stack.extend(p.iter().zip(q.iter()));
            }
            (Value::Object(p), Value::Object(q)) => {
                if Arc::ptr_eq(p, q) {
                    continue;
                }
                if p.len() != q.len() {
                    return false;
                }
                for (k, v) in p.iter() {
                    match q.get(k) {
                        Some(w) => stack.push((v, w)),
                        None => return false,
                    }
                }
            }
            _ => {
                if !eq_shallow(x, y) {
                    return false;
                }
            }
        }
    }
    true
}

impl Eq for Value {}

impl Hash for Value {
    /// Consistent with `==`: integral floats hash as integers and objects hash
    /// independently of key order. Below [`RECURSIVE_LEVELS`] a list or object hashes as
    /// its kind and length only.
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_at(self, state, 0);
    }
}

fn hash_at<H: Hasher>(v: &Value, state: &mut H, depth: usize) {
    match v {
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
            if depth < RECURSIVE_LEVELS {
                for v in l.iter() {
                    hash_at(v, state, depth + 1);
                }
            }
        }
        Value::Object(o) => {
            6u8.hash(state);
            o.len().hash(state);
            if depth < RECURSIVE_LEVELS {
                let mut acc: u64 = 0;
                for (k, v) in o.iter() {
                    let mut h = FxHasher::default();
                    k.hash(&mut h);
                    hash_at(v, &mut h, depth + 1);
                    acc = acc.wrapping_add(h.finish());
                }
                acc.hash(state);
            }
        }
    }
}
