//! The runtime value.
//!
//! A [`Value`] is a JSON value whose strings, lists and objects live behind reference
//! counts, so cloning one is a pointer copy and a counter increment. Objects keep insertion
//! order. This module owns the language-level semantics of values that every stage shares:
//! equality, the total order, truthiness, segment resolution (`.name`, `.0`, `.length`, …)
//! and the JSON rendering rules of `join`. It never allocates a copy of a list or object to
//! read one.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use indexmap::IndexMap;
use rustc_hash::FxHasher;
pub use smol_str::SmolStr;

/// The hasher used for object keys: short keys, hashed often, never attacker-chosen in a way
/// that matters more than evaluation limits already bound.
pub type FxBuild = BuildHasherDefault<FxHasher>;

/// The map behind an object value: insertion-ordered.
pub type Map = IndexMap<SmolStr, Value, FxBuild>;

/// The deepest nesting that recursive walks over a value ([`Value::measure`]) descend
/// into; beyond it a value counts as too deep.
pub const MAX_WALK_DEPTH: usize = 4096;

/// A tdsl value: JSON with cheap clones.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// A finite float (never NaN or infinite).
    Float(f64),
    /// A string: up to 23 bytes stored inline (no allocation, no reference count), longer
    /// ones shared.
    Str(SmolStr),
    /// A list.
    List(Arc<[Value]>),
    /// An object, in insertion order.
    Object(Arc<Map>),
}

/// The kinds of value, as named in messages and by the type checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `null`
    Null,
    /// `boolean`
    Bool,
    /// `number`
    Number,
    /// `string`
    Str,
    /// `list`
    List,
    /// `object`
    Object,
}

impl Kind {
    /// The user-facing name of the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "boolean",
            Kind::Number => "number",
            Kind::Str => "string",
            Kind::List => "list",
            Kind::Object => "object",
        }
    }
}

impl fmt::Display for Kind {
    /// The name; with `{:#}`, the name with its article ("an object").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.write_str(if matches!(self, Kind::Object) {
                "an "
            } else if matches!(self, Kind::Null) {
                ""
            } else {
                "a "
            })?;
        }
        f.write_str(self.name())
    }
}

/// Why a path segment could not be applied to a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentError {
    /// The kind of value the segment was applied to.
    pub found: Kind,
}

impl Drop for Value {
    /// Drops without deep recursion, so a value nested a million levels deep (built by a
    /// host, or by a long `pipeline`) cannot overflow the stack. The first
    /// [`RECURSIVE_DROPS`] levels of nested drops recurse (the children of a container are
    /// dropped at once, no copy, no scan); deeper ones are taken apart on a heap stack.
    #[inline]
    fn drop(&mut self) {
        // Scalars and strings (most values dropped) skip the rest altogether.
        if matches!(self, Value::List(_) | Value::Object(_)) {
            drop_container(self);
        }
    }
}

/// How many nested container drops recurse before the iterative drop takes over (each
/// level is one small stack frame).
const RECURSIVE_DROPS: u32 = 32;

thread_local! {
    /// How many container drops are in progress on this thread.
    static DROPS_IN_PROGRESS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The body of [`Value`]'s drop for lists and objects, out of line so that dropping a
/// scalar or a string stays a few instructions.
#[inline(never)]
fn drop_container(v: &mut Value) {
    let depth = DROPS_IN_PROGRESS.try_with(|d| d.get()).unwrap_or(RECURSIVE_DROPS);
    if depth >= RECURSIVE_DROPS {
        return drop_iteratively(v);
    }
    let _ = DROPS_IN_PROGRESS.try_with(|d| d.set(depth + 1));
    // The last owner drops the child containers now, one level deeper; a shared container
    // only loses a reference when the caller's drop glue runs.
    let drop_now = |x: &mut Value| {
        if matches!(x, Value::List(_) | Value::Object(_)) {
            drop(std::mem::take(x));
        }
    };
    match v {
        Value::List(l) => {
            if let Some(items) = Arc::get_mut(l) {
                items.iter_mut().for_each(drop_now);
            }
        }
        Value::Object(o) => {
            if let Some(map) = Arc::get_mut(o) {
                map.values_mut().for_each(drop_now);
            }
        }
        _ => {}
    }
    let _ = DROPS_IN_PROGRESS.try_with(|d| d.set(depth));
}

/// Takes `v` apart with a heap stack instead of recursion.
#[cold]
fn drop_iteratively(v: &mut Value) {
    let mut stack = Vec::new();
    take_nested(v, &mut stack);
    while let Some(mut v) = stack.pop() {
        take_nested(&mut v, &mut stack);
    }
}

/// Moves out of `v` (replacing them with `null`) the elements whose drop would recurse more
/// than one level, when `v` is the last owner of its elements.
fn take_nested(v: &mut Value, stack: &mut Vec<Value>) {
    match v {
        Value::List(l) => {
            if let Some(items) = Arc::get_mut(l) {
                stack.extend(items.iter_mut().filter_map(|x| holds_containers(x).then(|| std::mem::take(x))));
            }
        }
        Value::Object(o) => {
            if let Some(map) = Arc::get_mut(o) {
                stack.extend(map.values_mut().filter_map(|x| holds_containers(x).then(|| std::mem::take(x))));
            }
        }
        _ => {}
    }
}

/// Whether `v` is the last owner of a list or object that holds a non-empty list or object.
/// A load of the reference count decides "last owner" (values never have weak references),
/// not `Arc::get_mut`, whose uniqueness check costs two atomic read-modify-writes.
fn holds_containers(v: &Value) -> bool {
    fn non_empty_container(x: &Value) -> bool {
        match x {
            Value::List(l) => !l.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => false,
        }
    }
    match v {
        Value::List(l) => Arc::strong_count(l) == 1 && l.iter().any(non_empty_container),
        Value::Object(o) => Arc::strong_count(o) == 1 && o.values().any(non_empty_container),
        _ => false,
    }
}

impl Value {
    /// A string value.
    pub fn str(s: &str) -> Value {
        Value::Str(SmolStr::new(s))
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::from(items))
    }

    /// An object value.
    pub fn object(map: Map) -> Value {
        Value::Object(Arc::new(map))
    }

    /// An object value from key/value pairs, later keys winning.
    pub fn object_from<K: AsRef<str>>(pairs: impl IntoIterator<Item = (K, Value)>) -> Value {
        let mut map = Map::default();
        for (k, v) in pairs {
            map.insert(SmolStr::new(k.as_ref()), v);
        }
        Value::object(map)
    }

    /// A number from an `f64`: an error (`None`) for NaN and infinities.
    pub fn float(f: f64) -> Option<Value> {
        f.is_finite().then_some(Value::Float(f))
    }

    /// The kind of this value.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_) | Value::Float(_) => Kind::Number,
            Value::Str(_) => Kind::Str,
            Value::List(_) => Kind::List,
            Value::Object(_) => Kind::Object,
        }
    }

    /// Truthiness: `null`, `false`, `0`, `0.0`, `""`, `[]` and `{}` are falsy.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// The number as `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The list, if this is one.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Applies one path segment (SPEC §2) without cloning anything but the result.
    ///
    /// Returns a borrowed value when the segment selects part of `self`, and an owned one
    /// when it derives something (`length`, `file_name`, …).
    pub fn segment(&self, seg: &str) -> Result<Value, SegmentError> {
        match self {
            Value::Null => Ok(Value::Null),
            Value::Object(map) => {
                if let Some(v) = lookup(map, seg) {
                    return Ok(v.clone());
                }
                Ok(match seg {
                    "length" => Value::Int(map.len() as i64),
                    "file_name" | "parent_directory" => match map.get("path") {
                        Some(Value::Str(p)) => file_attribute(p, seg),
                        _ => Value::Null,
                    },
                    _ => Value::Null,
                })
            }
            Value::List(items) => match seg {
                "length" => Ok(Value::Int(items.len() as i64)),
                "first" => Ok(items.first().cloned().unwrap_or_default()),
                "last" => Ok(items.last().cloned().unwrap_or_default()),
                _ => match parse_index(seg) {
                    Some(i) => Ok(items.get(i).cloned().unwrap_or_default()),
                    None => Err(SegmentError { found: Kind::List }),
                },
            },
            Value::Str(s) => match seg {
                "length" => Ok(Value::Int(s.chars().count() as i64)),
                "path" => Ok(self.clone()),
                "file_name" | "parent_directory" => Ok(file_attribute(s, seg)),
                _ => Err(SegmentError { found: Kind::Str }),
            },
            other => Err(SegmentError { found: other.kind() }),
        }
    }

    /// Follows a path of segments, borrowing as long as the path selects parts of `self`
    /// and cloning only what it returns. On failure, the index of the segment that could
    /// not be applied.
    pub fn walk<'v>(&'v self, segs: &[Arc<str>]) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        let mut cur = self;
        for (i, s) in segs.iter().enumerate() {
            match cur {
                Value::Object(m) => {
                    if let Some(v) = lookup(m, s) {
                        cur = v;
                        continue;
                    }
                }
                Value::List(l) => {
                    if let Some(idx) = parse_index(s) {
                        match l.get(idx) {
                            Some(v) => {
                                cur = v;
                                continue;
                            }
                            None => return Ok(Cow::Owned(Value::Null)),
                        }
                    }
                }
                Value::Null => return Ok(Cow::Owned(Value::Null)),
                _ => {}
            }
            // A derived segment (`length`, `first`, `file_name`, …): owned from here on.
            let mut owned = cur.segment(s).map_err(|e| (i, e))?;
            for (j, s2) in segs[i + 1..].iter().enumerate() {
                owned = owned.segment(s2).map_err(|e| (i + 1 + j, e))?;
            }
            return Ok(Cow::Owned(owned));
        }
        Ok(Cow::Borrowed(cur))
    }

    /// [`Value::walk`] with a position hint per segment (see [`Path`]): when an object has
    /// the key where the last object on this path had it, no search is needed.
    #[inline]
    pub fn walk_path<'v>(&'v self, path: &Path) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        match self.follow_hints(path) {
            Ok(v) => Ok(Cow::Borrowed(v)),
            Err((at, cur)) => cur.walk_path_from(path, at),
        }
    }

    /// Follows `path` through objects as long as every key is where its hint says: the
    /// value reached, or the index of the first segment that needs more and the value it
    /// applies to. The hot path of every field read, kept small enough to inline.
    #[inline]
    pub fn follow_hints<'v>(&'v self, path: &Path) -> Result<&'v Value, (usize, &'v Value)> {
        let mut cur = self;
        for (i, (s, hint)) in path.segs.iter().zip(path.hints.iter()).enumerate() {
            let Value::Object(m) = cur else { return Err((i, cur)) };
            match m.get_index(hint.load(Relaxed) as usize) {
                Some((k, v)) if same_key(k.as_bytes(), s.as_bytes()) => cur = v,
                _ => return Err((i, cur)),
            }
        }
        Ok(cur)
    }

    /// [`Value::walk_path`] from segment `from` on, `self` being the value reached before
    /// it: searches for keys that are not where their hints say, and updates the hints.
    #[inline(never)]
    fn walk_path_from<'v>(&'v self, path: &Path, from: usize) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        let mut cur = self;
        for (i, s) in path.segs.iter().enumerate().skip(from) {
            if let Value::Object(m) = cur {
                let hint = &path.hints[i];
                if let Some((k, v)) = m.get_index(hint.load(Relaxed) as usize) {
                    if same_key(k.as_bytes(), s.as_bytes()) {
                        cur = v;
                        continue;
                    }
                }
                if let Some((at, _, v)) = m.get_full(&**s) {
                    hint.store(u32::try_from(at).unwrap_or(0), Relaxed);
                    cur = v;
                    continue;
                }
            }
            // Everything else (lists, derived segments, absent keys): the general rules.
            return match cur.walk(&path.segs[i..]) {
                Ok(v) => Ok(Cow::Owned(v.into_owned())),
                Err((at, e)) => Err((i + at, e)),
            };
        }
        Ok(Cow::Borrowed(cur))
    }

    /// Resolves a REF path's segments on a step result (SPEC §2), applying the response
    /// alias: a leading `response` segment selects the key `response` when the result has
    /// one and is skipped otherwise.
    pub fn walk_ref<'v>(&'v self, segs: &[Arc<str>]) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        if let (Some(first), Value::Object(m)) = (segs.first(), self) {
            if &**first == "response" && !m.contains_key("response") {
                return self.walk(&segs[1..]).map_err(|(i, e)| (i + 1, e));
            }
        }
        self.walk(segs)
    }

    /// Borrowing lookup of an object key or list index, for the hot path of field access;
    /// `None` when the segment needs the general rules of [`Value::segment`].
    #[inline]
    pub fn get_direct(&self, seg: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => lookup(map, seg),
            _ => None,
        }
    }

    /// Indexing with a computed key: `value[key]`.
    ///
    /// A list takes an integer (negative counts from the end) and an object a string; both
    /// give `null` when absent, as does indexing `null`.
    pub fn index(&self, key: &Value) -> Result<Value, SegmentError> {
        match (self, key) {
            (Value::Null, _) => Ok(Value::Null),
            (Value::List(items), Value::Int(i)) => {
                let len = items.len() as i64;
                let at = if *i < 0 { len + *i } else { *i };
                Ok(usize::try_from(at).ok().and_then(|i| items.get(i)).cloned().unwrap_or_default())
            }
            (Value::List(_), Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                self.index(&Value::Int(*f as i64))
            }
            (Value::Object(_), Value::Str(k)) | (Value::List(_), Value::Str(k)) => self.segment(k),
            (Value::Str(_), Value::Str(k)) => self.segment(k),
            (other, _) => Err(SegmentError { found: other.kind() }),
        }
    }

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

    /// A rough count of the bytes this value's JSON form takes, stopping early once it
    /// passes `limit` (used by the output-size limit without rendering the value). A value
    /// nested deeper than [`MAX_WALK_DEPTH`] counts as larger than any limit, so the walk's
    /// stack stays bounded.
    pub fn size_at_most(&self, limit: usize) -> usize {
        let (size, too_deep) = self.measure(limit, MAX_WALK_DEPTH);
        if too_deep {
            limit.saturating_add(1)
        } else {
            size
        }
    }

    /// [`Value::size_at_most`] and whether the value nests deeper than `max_depth` levels,
    /// in one walk that stops at either limit.
    pub fn measure(&self, limit: usize, max_depth: usize) -> (usize, bool) {
        fn go(v: &Value, acc: &mut usize, limit: usize, depth: usize) -> bool {
            if *acc > limit {
                return false;
            }
            match v {
                Value::Null | Value::Bool(_) => *acc += 5,
                Value::Int(_) | Value::Float(_) => *acc += 8,
                Value::Str(s) => *acc += s.len() + 2,
                Value::List(_) | Value::Object(_) if depth == 0 => return true,
                Value::List(l) => {
                    *acc += 2;
                    for x in l.iter() {
                        *acc += 1;
                        if go(x, acc, limit, depth - 1) {
                            return true;
                        }
                        if *acc > limit {
                            return false;
                        }
                    }
                }
                Value::Object(o) => {
                    *acc += 2;
                    for (k, x) in o.iter() {
                        *acc += k.len() + 4;
                        if go(x, acc, limit, depth - 1) {
                            return true;
                        }
                        if *acc > limit {
                            return false;
                        }
                    }
                }
            }
            false
        }
        let mut acc = 0;
        let too_deep = go(self, &mut acc, limit, max_depth.min(MAX_WALK_DEPTH));
        (acc, too_deep)
    }

    /// Whether this is a list or an object.
    #[inline]
    pub fn is_container(&self) -> bool {
        matches!(self, Value::List(_) | Value::Object(_))
    }

    /// Whether both are the same list, object or long string (one allocation), so that
    /// handing one back builds nothing.
    pub fn same_as(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::List(a), Value::List(b)) => Arc::ptr_eq(a, b),
            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
            (Value::Str(a), Value::Str(b)) => a.len() == b.len() && a.as_ptr() == b.as_ptr(),
            _ => false,
        }
    }

    /// Nesting depth: 0 for scalars, 1 + the deepest element for lists and objects.
    pub fn depth(&self) -> usize {
        match self {
            Value::List(l) => 1 + l.iter().map(Value::depth).max().unwrap_or(0),
            Value::Object(o) => 1 + o.values().map(Value::depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Renders the value as `join` does: strings as-is, numbers in JSON form, booleans
    /// `true`/`false`, `null` as the empty string, an object with a `name` key as that
    /// name (rendered by the same rules), other lists and objects as compact JSON.
    pub fn join_text(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Value::Null => {}
            Value::Str(s) => out.push_str(s),
            Value::Object(o) => match o.get("name") {
                Some(name) => name.join_text(out),
                None => {
                    let _ = write!(out, "{self}");
                }
            },
            other => {
                let _ = write!(out, "{other}");
            }
        }
    }

    /// The text form used where a value becomes a string key (`group_by`) or text
    /// (`to_string`): like [`Value::join_text`] but `null` is `"null"` and objects are
    /// always JSON.
    pub fn key_text(&self) -> SmolStr {
        match self {
            Value::Str(s) => s.clone(),
            other => SmolStr::from(other.to_string()),
        }
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

    /// Compact JSON, if it takes at most `max` bytes; `None` beyond (the rendering stops
    /// there, so its cost is bounded by `max` whatever the value's size).
    pub fn json_within(&self, max: usize) -> Option<String> {
        let mut w = CappedWriter { buf: Vec::new(), max };
        serde_json::to_writer(&mut w, self).ok()?;
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

/// Key equality without a call into `memcmp` for short keys (most keys are): overlapping
/// fixed-size loads compare any length from 4 to 16 bytes in two steps.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word =
        |x: &[u8], at: usize| x.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map(u64::from_ne_bytes);
    let half =
        |x: &[u8], at: usize| x.get(at..at + 4).and_then(|w| <[u8; 4]>::try_from(w).ok()).map(u32::from_ne_bytes);
    match n {
        0..=3 => a == b,
        4..=8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        9..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// A field path with an inline cache: one position hint per segment.
///
/// Records read in a loop usually have the same keys in the same order, so the position
/// where a key was found in the last object is almost always where it is in the next one.
/// Checking that position first replaces a search with one comparison. The hints are only
/// hints (relaxed atomics, so a shared program stays `Sync`): a wrong one costs a search,
/// never a wrong answer.
#[derive(Debug, Default)]
pub struct Path {
    segs: Box<[Arc<str>]>,
    hints: Box<[AtomicU32]>,
}

impl Path {
    /// A path over these segments.
    pub fn new(segs: Vec<Arc<str>>) -> Path {
        let hints = segs.iter().map(|_| AtomicU32::new(0)).collect();
        Path { segs: segs.into_boxed_slice(), hints }
    }
}

impl std::ops::Deref for Path {
    type Target = [Arc<str>];
    fn deref(&self) -> &[Arc<str>] {
        &self.segs
    }
}

impl Clone for Path {
    fn clone(&self) -> Path {
        Path::new(self.segs.to_vec())
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.segs == other.segs
    }
}

/// Looks a key up in an object. Records are small, and for a handful of short keys a
/// scan that compares lengths first beats hashing the key (measured: W1 in
/// `docs/performance.md`).
#[inline]
pub fn lookup<'m>(map: &'m Map, key: &str) -> Option<&'m Value> {
    if map.len() <= 8 {
        let kb = key.as_bytes();
        map.iter().find(|(k, _)| same_key(k.as_bytes(), kb)).map(|(_, v)| v)
    } else {
        map.get(key)
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

fn parse_index(seg: &str) -> Option<usize> {
    if seg.is_empty() || !seg.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // An index too large for usize is simply out of range.
    Some(seg.parse::<usize>().unwrap_or(usize::MAX))
}

/// `file_name` (the last `/`-separated segment) or `parent_directory` (everything before
/// the last `/`, `""` when there is none) of a path.
fn file_attribute(path: &str, attr: &str) -> Value {
    let (parent, name) = match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    };
    Value::str(if attr == "file_name" { name } else { parent })
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

impl fmt::Display for Value {
    /// Compact JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(x) => s.serialize_str(x),
            Value::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for v in l.iter() {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(o) => {
                let mut map = s.serialize_map(Some(o.len()))?;
                for (k, v) in o.iter() {
                    map.serialize_entry(&**k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Value {
    /// Reads JSON straight into a value, with no intermediate `serde_json::Value`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
                Ok(Value::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
                Ok(Value::Int(i))
            }
            fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
                Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
            }
            fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Value, E> {
                Value::float(f).ok_or_else(|| E::custom("number out of range"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Value, E> {
                Ok(Value::str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut items = Vec::with_capacity(a.size_hint().unwrap_or(0).min(4096));
                while let Some(v) = a.next_element()? {
                    items.push(v);
                }
                Ok(Value::list(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
                let mut map = Map::default();
                while let Some(k) = a.next_key::<Key>()? {
                    map.insert(k.0, a.next_value()?);
                }
                Ok(Value::object(map))
            }
        }
        /// An object key read without an intermediate `String` when it has no escapes.
        struct Key(SmolStr);
        impl<'de> serde::Deserialize<'de> for Key {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
                struct K;
                impl serde::de::Visitor<'_> for K {
                    type Value = Key;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("an object key")
                    }
                    fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                        Ok(Key(SmolStr::new(s)))
                    }
                }
                d.deserialize_str(K)
            }
        }
        d.deserialize_any(V)
    }
}

impl From<&serde_json::Value> for Value {
    /// Converts, with object keys found by prediction (records repeat their keys in order)
    /// and hashed once per distinct key, and an object with the keys of the previous one
    /// under the same key (the next record) built from a copy of its map; a key longer than
    /// 23 bytes is allocated once and shared by every object that has it.
    fn from(v: &serde_json::Value) -> Value {
        let mut keys = SharedKeys::default();
        convert_shallow(v, &mut keys, 0, NO_KEY)
    }
}

/// How deep [`convert_shallow`] recurses before handing a subtree to the iterative
/// [`convert`] (each level is a small stack frame; 64 of them are far below any stack).
const RECURSION_DEPTH: usize = 64;

/// The keys shared by one conversion, each with its hash (computed once: objects insert by
/// it instead of hashing the key again).
///
/// Records usually repeat their keys in the same order, so each key remembers the key that
/// followed it last time and the first key of the object last found under it: checking
/// that prediction (one short comparison) replaces hashing and probing for almost every
/// key of a list of records.
#[derive(Default)]
struct SharedKeys<'a> {
    index: rustc_hash::FxHashMap<&'a str, u32>,
    keys: Vec<SharedKey>,
    /// The first key of the last object not under a key (at the top, or in a top list).
    root_first: u32,
    /// The shape of the last object not under a key.
    root_shape: ShapeSlot,
}

/// The keys of the last object found under some key, kept so that the next object with the
/// same keys in the same order (the next record) starts from a copy of its map — hash table
/// included — instead of inserting key by key. After [`MAX_SHAPE_MISSES`] objects of other
/// shapes under the same key, no more shapes are kept there.
#[derive(Default)]
struct ShapeSlot {
    shape: Option<Box<Shape>>,
    misses: u32,
}

struct Shape {
    /// The keys, each with `null`.
    map: Map,
    /// The number of each key (see [`SharedKeys::get`]).
    keys: Box<[u32]>,
}

/// How many objects of another shape a [`ShapeSlot`] sees before it stops keeping shapes.
const MAX_SHAPE_MISSES: u32 = 8;

struct SharedKey {
    key: SmolStr,
    hash: u64,
    /// The key that came after this one, last time.
    next: u32,
    /// The first key of the last object under this key.
    first: u32,
    /// The shape of the last object under this key.
    shape: ShapeSlot,
}

/// Where a key's prediction is kept.
#[derive(Clone, Copy)]
enum Hint {
    /// The first key of an object under key `n` ([`NO_KEY`]: not under a key).
    FirstUnder(u32),
    /// The key after key `n`.
    After(u32),
}

/// "No key": an object not under a key, or a prediction not made yet.
const NO_KEY: u32 = u32::MAX;

impl<'a> SharedKeys<'a> {
    /// The shared key for `k`, its hash and its number (for [`Hint`]s), or [`NO_KEY`] when
    /// the table is full and the key was allocated on its own.
    #[inline]
    fn get(&mut self, k: &'a str, hint: Hint) -> (SmolStr, u64, u32) {
        let predicted = match hint {
            Hint::FirstUnder(NO_KEY) => self.root_first,
            Hint::FirstUnder(n) => self.keys.get(n as usize).map_or(NO_KEY, |e| e.first),
            Hint::After(n) => self.keys.get(n as usize).map_or(NO_KEY, |e| e.next),
        };
        if let Some(e) = self.keys.get(predicted as usize) {
            if same_key(e.key.as_bytes(), k.as_bytes()) {
                return (e.key.clone(), e.hash, predicted);
            }
        }
        let found = match self.index.get(k) {
            Some(&n) => n,
            None => {
                let key = SmolStr::new(k);
                let hash = std::hash::BuildHasher::hash_one(&FxBuild::default(), &*key);
                if self.keys.len() >= MAX_SHARED_KEYS {
                    return (key, hash, NO_KEY);
                }
                let n = self.keys.len() as u32;
                self.keys.push(SharedKey { key, hash, next: NO_KEY, first: NO_KEY, shape: ShapeSlot::default() });
                self.index.insert(k, n);
                n
            }
        };
        match hint {
            Hint::FirstUnder(NO_KEY) => self.root_first = found,
            Hint::FirstUnder(n) => {
                if let Some(e) = self.keys.get_mut(n as usize) {
                    e.first = found;
                }
            }
            Hint::After(n) => {
                if let Some(e) = self.keys.get_mut(n as usize) {
                    e.next = found;
                }
            }
        }
        let e = &self.keys[found as usize];
        (e.key.clone(), e.hash, found)
    }

    fn shape_slot(&mut self, under: u32) -> Option<&mut ShapeSlot> {
        match under {
            NO_KEY => Some(&mut self.root_shape),
            n => self.keys.get_mut(n as usize).map(|e| &mut e.shape),
        }
    }

    /// A copy of the kept map under `under` when `o` has its keys in its order.
    #[inline]
    fn same_shape(&mut self, under: u32, o: &serde_json::Map<String, serde_json::Value>) -> Option<Map> {
        let shape = self.shape_slot(under)?.shape.as_deref()?;
        let same = shape.map.len() == o.len()
            && shape.map.keys().zip(o.keys()).all(|(a, b)| same_key(a.as_bytes(), b.as_bytes()));
        same.then(|| shape.map.clone())
    }

    /// The number of key `i` of the shape kept under `under`.
    #[inline]
    fn shape_key(&mut self, under: u32, i: usize) -> u32 {
        let shape = self.shape_slot(under).and_then(|s| s.shape.as_deref());
        shape.and_then(|s| s.keys.get(i).copied()).unwrap_or(NO_KEY)
    }

    /// Whether a new shape under `under` would be kept.
    fn keeps_shapes(&mut self, under: u32) -> bool {
        self.shape_slot(under).is_some_and(|s| s.misses < MAX_SHAPE_MISSES)
    }

    /// Keeps the shape of `map` (its keys numbered `numbers`) under `under`.
    fn keep_shape(&mut self, under: u32, map: &Map, numbers: Vec<u32>) {
        if let Some(slot) = self.shape_slot(under) {
            if slot.shape.is_some() {
                slot.misses += 1;
            }
            let map = map.keys().map(|k| (k.clone(), Value::Null)).collect();
            slot.shape = Some(Box::new(Shape { map, keys: numbers.into_boxed_slice() }));
        }
    }
}

/// The conversion, recursive for the first [`RECURSION_DEPTH`] levels (no frames to move,
/// lists collected straight into their shared allocation, object keys inserted by their
/// known hash and found by prediction), iterative below. `under` is the key the value is
/// under ([`NO_KEY`] for none), for the predictions of its keys.
fn convert_shallow<'a>(v: &'a serde_json::Value, keys: &mut SharedKeys<'a>, depth: usize, under: u32) -> Value {
    use indexmap::map::RawEntryApiV1;
    use serde_json::Value as J;
    match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Value::str(s),
        _ if depth >= RECURSION_DEPTH => convert(v, keys),
        J::Array(a) => Value::List(a.iter().map(|x| convert_shallow(x, keys, depth + 1, under)).collect()),
        J::Object(o) => {
            if let Some(mut map) = keys.same_shape(under, o) {
                for (i, x) in o.values().enumerate() {
                    let n = keys.shape_key(under, i);
                    let value = convert_shallow(x, keys, depth + 1, n);
                    if let Some((_, slot)) = map.get_index_mut(i) {
                        *slot = value;
                    }
                }
                return Value::object(map);
            }
            let mut map = Map::with_capacity_and_hasher(o.len(), FxBuild::default());
            let mut numbers = keys.keeps_shapes(under).then(|| Vec::with_capacity(o.len()));
            let mut hint = Hint::FirstUnder(under);
            for (k, x) in o {
                let (key, hash, n) = keys.get(k, hint);
                hint = Hint::After(n);
                if let Some(numbers) = &mut numbers {
                    numbers.push(n);
                }
                let value = convert_shallow(x, keys, depth + 1, n);
                // A JSON object's keys are distinct: no key in the map can match.
                if let indexmap::map::raw_entry_v1::RawEntryMut::Vacant(slot) =
                    map.raw_entry_mut_v1().from_hash(hash, |_| false)
                {
                    slot.insert_hashed_nocheck(hash, key, value);
                }
            }
            if let Some(numbers) = numbers {
                keys.keep_shape(under, &map, numbers);
            }
            Value::object(map)
        }
    }
}

/// Distinct keys shared per conversion; past this, keys are allocated one by one.
const MAX_SHARED_KEYS: usize = 4096;

/// Converts without recursion (a frame per open list or object on a heap stack), so input
/// nested arbitrarily deep cannot overflow the stack.
fn convert<'a>(root: &'a serde_json::Value, keys: &mut SharedKeys<'a>) -> Value {
    use serde_json::Value as J;
    enum Frame<'a> {
        List(std::slice::Iter<'a, J>, Vec<Value>),
        Object(serde_json::map::Iter<'a>, Map, SmolStr),
    }
    let mut stack: Vec<Frame<'a>> = Vec::new();
    let mut cur = root;
    loop {
        // A container opens a frame and goes on with its first element; a scalar is done.
        let mut done = match cur {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            J::String(s) => Value::str(s),
            J::Array(a) => {
                let mut it = a.iter();
                match it.next() {
                    Some(first) => {
                        stack.push(Frame::List(it, Vec::with_capacity(a.len())));
                        cur = first;
                        continue;
                    }
                    None => Value::list(Vec::new()),
                }
            }
            J::Object(o) => {
                let mut it = o.iter();
                match it.next() {
                    Some((k, first)) => {
                        let map = Map::with_capacity_and_hasher(o.len(), FxBuild::default());
                        stack.push(Frame::Object(it, map, keys.get(k, Hint::FirstUnder(NO_KEY)).0));
                        cur = first;
                        continue;
                    }
                    None => Value::object(Map::default()),
                }
            }
        };
        // Hand the finished value to its parent, closing every frame that is now complete.
        loop {
            let Some(frame) = stack.pop() else { return done };
            match frame {
                Frame::List(mut it, mut items) => {
                    items.push(done);
                    if let Some(next) = it.next() {
                        stack.push(Frame::List(it, items));
                        cur = next;
                        break;
                    }
                    done = Value::list(items);
                }
                Frame::Object(mut it, mut map, key) => {
                    map.insert(key, done);
                    if let Some((k, next)) = it.next() {
                        let key = keys.get(k, Hint::FirstUnder(NO_KEY)).0;
                        stack.push(Frame::Object(it, map, key));
                        cur = next;
                        break;
                    }
                    done = Value::object(map);
                }
            }
        }
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        Value::from(&v)
    }
}

impl From<&Value> for serde_json::Value {
    fn from(v: &Value) -> serde_json::Value {
        match v {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Into::into).collect()),
            Value::Object(o) => serde_json::Value::Object(o.iter().map(|(k, v)| (k.to_string(), v.into())).collect()),
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Value {
        Value::list(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(serde_json::Value::from(&v), j);
        let Value::List(l) = &v else { unreachable!() };
        let Value::Object(last) = &l[1] else { unreachable!() };
        assert_eq!(last.get(format!("key number {} of many", MAX_SHARED_KEYS + 99).as_str()), Some(&Value::Int(4195)));
    }

    #[test]
    fn drops_release_every_reference_at_any_depth() {
        // Across the switch from recursive to iterative drops, with a shared part at every
        // level: every reference the dropped value held is released, no more.
        for depth in [1, 2, 31, 32, 33, 64, 10_000] {
            let shared =
                Value::list(vec![Value::list(vec![Value::from(1)]), Value::str("a string longer than 23 bytes")]);
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
}
