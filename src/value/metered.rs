//! Budgeted walks over values evaluation did not build itself.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{SmolStr, Value, MAX_WALK_DEPTH};

/// Bytes charged against [`crate::Limits::max_alloc_bytes`] for one list element: a value
/// (24 bytes) and the allocator's share.
pub(crate) const LIST_ELEMENT_BYTES: usize = 24;
/// Bytes charged for a list beyond its elements: its shared allocation's header and the
/// allocator's own.
pub(crate) const LIST_BYTES: usize = 32;
/// Bytes charged for one object entry: its key and value (56 bytes with the key's hash),
/// its slot in the index, and room the entries' vector grows into.
pub(crate) const OBJECT_ENTRY_BYTES: usize = 80;
/// Bytes charged for an object beyond its entries: the shared map, its two allocations and
/// the smallest index table (measured: a million one-entry objects take about 230 MB).
pub(crate) const OBJECT_BYTES: usize = 160;
/// Strings up to this many bytes are stored inside the value; a longer one is an
/// allocation of its own.
pub(crate) const INLINE_STRING_BYTES: usize = 23;
/// Bytes charged for a string stored in an allocation of its own, beyond its text.
pub(crate) const STRING_BYTES: usize = 32;

/// Bytes charged for a list of `n` elements.
pub(crate) fn list_bytes(n: usize) -> usize {
    n.saturating_mul(LIST_ELEMENT_BYTES).saturating_add(LIST_BYTES)
}

/// Bytes charged for an object of `n` entries.
pub(crate) fn object_bytes(n: usize) -> usize {
    n.saturating_mul(OBJECT_ENTRY_BYTES).saturating_add(OBJECT_BYTES)
}

/// Bytes charged for a string of `len` bytes: its text, and an allocation's overhead when
/// it is too long to be stored inside the value.
pub(crate) fn string_bytes(len: usize) -> usize {
    if len > INLINE_STRING_BYTES {
        len.saturating_add(STRING_BYTES)
    } else {
        len
    }
}

/// Bytes a value built by an operator or a built-in is charged for (its top level: what
/// it holds was charged when it was built, or is shared). Close to what the allocator
/// takes for it (docs/security.md, round 11a).
pub(crate) fn build_bytes(v: &Value) -> usize {
    match v {
        Value::Str(s) => string_bytes(s.len()),
        Value::List(l) => list_bytes(l.len()),
        Value::Object(o) => object_bytes(o.len()),
        _ => 0,
    }
}

/// Metered walks: the forms of equality, order, counting and rendering that evaluation
/// uses on values it did not build itself. Each visits at most a budget of nodes (a shared
/// value counts once per time it is reached, which is the work the walk does) and reports
/// when the budget ran out, so a value of 2^40 nodes built cheaply from shared parts costs
/// what walking it costs and stops at the fuel limit. Each agrees with its unmetered
/// counterpart whenever the budget suffices.
impl Value {
    /// [`PartialEq`], visiting at most `*budget` nodes (spent from it); `None` when the
    /// budget runs out (or the values nest deeper than [`MAX_WALK_DEPTH`]).
    pub fn eq_within(&self, other: &Value, budget: &mut u64) -> Option<bool> {
        fn go(a: &Value, b: &Value, budget: &mut u64, depth: usize) -> Option<bool> {
            if *budget == 0 || depth > MAX_WALK_DEPTH {
                return None;
            }
            *budget -= 1;
            use Value::*;
            Some(match (a, b) {
                (List(x), List(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return Some(true);
                    }
                    if x.len() != y.len() {
                        return Some(false);
                    }
                    for (p, q) in x.iter().zip(y.iter()) {
                        if !go(p, q, budget, depth + 1)? {
                            return Some(false);
                        }
                    }
                    true
                }
                (Object(x), Object(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return Some(true);
                    }
                    if x.len() != y.len() {
                        return Some(false);
                    }
                    for (k, v) in x.iter() {
                        match y.get(k) {
                            Some(w) if go(v, w, budget, depth + 1)? => {}
                            _ => return Some(false),
                        }
                    }
                    true
                }
                (Str(x), Str(y)) => {
                    let units = (x.len().min(y.len()) / 64) as u64;
                    if units > *budget {
                        return None;
                    }
                    *budget -= units;
                    x == y
                }
                _ => a == b,
            })
        }
        go(self, other, budget, 0)
    }

    /// [`Value::total_cmp`], visiting at most `*budget` nodes (spent from it); `None` when
    /// the budget runs out.
    pub fn cmp_within(&self, other: &Value, budget: &mut u64) -> Option<Ordering> {
        fn go(a: &Value, b: &Value, budget: &mut u64, depth: usize) -> Option<Ordering> {
            if *budget == 0 || depth > MAX_WALK_DEPTH {
                return None;
            }
            *budget -= 1;
            use Value::*;
            match (a, b) {
                (List(x), List(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return Some(Ordering::Equal);
                    }
                    for (p, q) in x.iter().zip(y.iter()) {
                        match go(p, q, budget, depth + 1)? {
                            Ordering::Equal => {}
                            ord => return Some(ord),
                        }
                    }
                    Some(x.len().cmp(&y.len()))
                }
                (Object(x), Object(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return Some(Ordering::Equal);
                    }
                    let units = ((x.len() + y.len()) as u64).saturating_mul(2);
                    if units > *budget {
                        return None;
                    }
                    *budget -= units;
                    let mut ak: Vec<_> = x.iter().collect();
                    let mut bk: Vec<_> = y.iter().collect();
                    ak.sort_by(|p, q| p.0.cmp(q.0));
                    bk.sort_by(|p, q| p.0.cmp(q.0));
                    for ((ka, va), (kb, vb)) in ak.iter().zip(bk.iter()) {
                        match ka.cmp(kb) {
                            Ordering::Equal => {}
                            ord => return Some(ord),
                        }
                        match go(va, vb, budget, depth + 1)? {
                            Ordering::Equal => {}
                            ord => return Some(ord),
                        }
                    }
                    Some(ak.len().cmp(&bk.len()))
                }
                (Str(x), Str(y)) => {
                    let units = (x.len().min(y.len()) / 64) as u64;
                    if units > *budget {
                        return None;
                    }
                    *budget -= units;
                    Some(x.cmp(y))
                }
                _ => Some(a.total_cmp(b)),
            }
        }
        go(self, other, budget, 0)
    }

    /// A hash of the whole value, consistent with [`PartialEq`] (integral floats hash as
    /// integers, objects independently of key order), visiting at most `*budget` nodes
    /// (spent from it, strings a unit per 64 bytes as [`Value::nodes_within`] counts them);
    /// `None` when the budget runs out (or the value nests deeper than [`MAX_WALK_DEPTH`]).
    ///
    /// Unlike [`std::hash::Hash`] for values, which stops descending below a few dozen
    /// levels (it cannot be metered), this hash sees every node: two values that differ
    /// anywhere hash apart, save for real collisions, so a hash set probing by it compares
    /// elements only when their whole hashes agree (SPEC §4.8, docs/security.md round 10d).
    pub fn hash_within(&self, budget: &mut u64) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        fn go(v: &Value, h: &mut rustc_hash::FxHasher, budget: &mut u64, depth: usize) -> Option<()> {
            if *budget == 0 || depth > MAX_WALK_DEPTH {
                return None;
            }
            *budget -= 1;
            match v {
                Value::Str(s) => {
                    let units = (s.len() / 64) as u64;
                    if units > *budget {
                        return None;
                    }
                    *budget -= units;
                    (4u8, s).hash(h);
                }
                Value::List(l) => {
                    (5u8, l.len()).hash(h);
                    for x in l.iter() {
                        go(x, h, budget, depth + 1)?;
                    }
                }
                Value::Object(o) => {
                    (6u8, o.len()).hash(h);
                    let mut acc: u64 = 0;
                    for (k, x) in o.iter() {
                        let units = (k.len() / 64) as u64;
                        if units > *budget {
                            return None;
                        }
                        *budget -= units;
                        let mut e = rustc_hash::FxHasher::default();
                        k.hash(&mut e);
                        go(x, &mut e, budget, depth + 1)?;
                        acc = acc.wrapping_add(e.finish());
                    }
                    acc.hash(h);
                }
                // Scalars as `Hash` for values hashes them (integral floats as integers).
                scalar => scalar.hash(h),
            }
            Some(())
        }
        let mut h = rustc_hash::FxHasher::default();
        go(self, &mut h, budget, 0)?;
        Some(h.finish())
    }

    /// The nodes a full walk of this value visits (shared parts counted each time they are
    /// reached, strings a unit per 64 bytes), if at most `budget`; `None` beyond it.
    pub fn nodes_within(&self, budget: u64) -> Option<u64> {
        fn go(v: &Value, left: &mut u64, depth: usize) -> bool {
            if *left == 0 || depth > MAX_WALK_DEPTH {
                return false;
            }
            *left -= 1;
            match v {
                Value::Str(s) => {
                    let units = (s.len() / 64) as u64;
                    if units > *left {
                        return false;
                    }
                    *left -= units;
                    true
                }
                Value::List(l) => l.iter().all(|x| go(x, left, depth + 1)),
                Value::Object(o) => o.iter().all(|(k, x)| {
                    let units = (k.len() / 64) as u64;
                    if units > *left {
                        return false;
                    }
                    *left -= units;
                    go(x, left, depth + 1)
                }),
                _ => true,
            }
        }
        let mut left = budget;
        go(self, &mut left, 0).then_some(budget - left)
    }

    /// The bytes this value takes by the cost of values built ([`build_bytes`],
    /// each list, object, key and string reached), at most `max`: the walk stops there, so
    /// its cost is bounded by `max` whatever the value (each node reached below the top
    /// costs at least a list element's bytes). A value nested deeper than
    /// [`MAX_WALK_DEPTH`] is `max`. What a run holds of an evaluation's result, or of a
    /// tool's answer, is charged by this measure ([`crate::RunBudget`]).
    pub fn alloc_bytes_within(&self, max: u64) -> u64 {
        fn go(v: &Value, left: &mut u64, depth: usize) -> bool {
            if depth > MAX_WALK_DEPTH {
                return false;
            }
            let here = build_bytes(v) as u64;
            if here > *left {
                return false;
            }
            *left -= here;
            match v {
                Value::List(l) => l.iter().all(|x| go(x, left, depth + 1)),
                Value::Object(o) => o.iter().all(|(k, x)| {
                    let key = string_bytes(k.len()) as u64;
                    if key > *left {
                        return false;
                    }
                    *left -= key;
                    go(x, left, depth + 1)
                }),
                _ => true,
            }
        }
        let mut left = max;
        if go(self, &mut left, 0) {
            max - left
        } else {
            max
        }
    }

    /// [`Value::alloc_bytes_within`], each allocation a run may share between the values it
    /// holds — a list, an object, a string past 23 bytes — counted once: those whose
    /// address is in `seen` cost nothing (a list or object seen is not walked again), those
    /// counted are added to it. A tool that answers with a string it was given, a thousand
    /// times over, holds that string once. The bytes and the addresses added, or `None`
    /// (and `seen` as it was) past `max`.
    #[cfg_attr(not(feature = "engine"), allow(dead_code))]
    pub(crate) fn alloc_bytes_unseen_within(
        &self,
        max: u64,
        seen: &mut rustc_hash::FxHashSet<usize>,
    ) -> Option<(u64, Vec<usize>)> {
        fn first(seen: &mut rustc_hash::FxHashSet<usize>, added: &mut Vec<usize>, at: usize) -> bool {
            let new = seen.insert(at);
            if new {
                added.push(at);
            }
            new
        }
        fn go(
            v: &Value,
            left: &mut u64,
            depth: usize,
            seen: &mut rustc_hash::FxHashSet<usize>,
            added: &mut Vec<usize>,
        ) -> bool {
            if depth > MAX_WALK_DEPTH {
                return false;
            }
            let shared = match v {
                Value::Str(s) if s.len() > INLINE_STRING_BYTES => Some(s.as_str().as_ptr() as usize),
                Value::List(l) => Some(l.as_ptr() as usize),
                Value::Object(o) => Some(Arc::as_ptr(o) as usize),
                _ => None,
            };
            if let Some(at) = shared {
                if !first(seen, added, at) {
                    return true;
                }
            }
            let here = build_bytes(v) as u64;
            if here > *left {
                return false;
            }
            *left -= here;
            match v {
                Value::List(l) => l.iter().all(|x| go(x, left, depth + 1, seen, added)),
                Value::Object(o) => o.iter().all(|(k, x)| {
                    let key = string_bytes(k.len()) as u64;
                    if key > *left {
                        return false;
                    }
                    *left -= key;
                    go(x, left, depth + 1, seen, added)
                }),
                _ => true,
            }
        }
        let (mut left, mut added) = (max, Vec::new());
        if go(self, &mut left, 0, seen, &mut added) {
            Some((max - left, added))
        } else {
            for at in added {
                seen.remove(&at);
            }
            None
        }
    }

    /// Compact JSON, if it takes at most `max` bytes; `None` beyond (the rendering stops
    /// there, so its cost is bounded by `max` whatever the value's size).
    pub fn json_within(&self, max: usize) -> Option<String> {
        let mut w = CappedWriter { buf: Vec::new(), max };
        // Without recursion: a value a host nested deeply renders like any other.
        super::render::write_json(self, &mut w).ok()?;
        String::from_utf8(w.buf).ok()
    }

    /// [`Value::join_text`], appending to `out` only while `out` stays within `max` bytes;
    /// `false` (with `out` cut short) beyond.
    pub fn join_text_within(&self, out: &mut String, max: usize) -> bool {
        let room = max.saturating_sub(out.len());
        match self {
            Value::Null => true,
            Value::Str(s) => {
                if s.len() > room {
                    return false;
                }
                out.push_str(s);
                true
            }
            Value::Object(o) if o.get("name").is_some() => {
                o.get("name").is_some_and(|name| name.join_text_within(out, max))
            }
            other => match other.json_within(room) {
                Some(t) => {
                    out.push_str(&t);
                    true
                }
                None => false,
            },
        }
    }

    /// [`Value::key_text`], if it takes at most `max` bytes.
    pub fn key_text_within(&self, max: usize) -> Option<SmolStr> {
        match self {
            Value::Str(s) => (s.len() <= max).then(|| s.clone()),
            other => other.json_within(max).map(SmolStr::from),
        }
    }
}

/// A byte sink that refuses to grow past `max`.
struct CappedWriter {
    buf: Vec<u8>,
    max: usize,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.max {
            return Err(std::io::Error::other("over the limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
