//! The runtime value.
//!
//! A [`Value`] is a JSON value whose strings, lists and objects live behind reference
//! counts, so cloning one is a pointer copy and a counter increment. Objects keep insertion
//! order. This module owns the language-level semantics of values that every stage shares:
//! equality, the total order, truthiness, segment resolution (`.name`, `.0`, `.length`, …)
//! and the JSON rendering rules of `join`. It never allocates a copy of a list or object to
//! read one.
//!
//! The module is split by concern: the representation and its accessors here; `drop`
//! (iterative drop of deep values), `path` (segments, walks, [`Path`] and its inline
//! cache), `order` (equality, the total order, hashing), `measure` (size and depth),
//! `metered` (budgeted walks), `render` (`Display` and the text forms of `join`),
//! `json` (serde), `decode` (reading JSON against a budget: every read of text builds
//! values there) and `convert` (the fast `serde_json::Value` converter).

mod convert;
mod decode;
mod drop;
mod json;
mod json_len;
mod measure;
mod metered;
mod order;
mod path;
mod render;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
pub use smol_str::SmolStr;

pub(crate) use decode::from_json_within;
#[cfg(feature = "engine")]
pub(crate) use decode::values_in;
pub(crate) use decode::DecodeError;
#[cfg(any(test, feature = "engine"))]
pub(crate) use decode::MAX_OUTPUT_DEPTH;
#[cfg(feature = "mcp")]
pub(crate) use decode::{json_value_within, json_within, ValueStream};
#[cfg(any(feature = "engine", feature = "fuzzing"))]
pub(crate) use json::MAX_SERIALIZE_DEPTH;
#[cfg_attr(not(feature = "engine"), allow(unused_imports))]
pub(crate) use json_len::json_len_at_most;
#[cfg(feature = "mcp")]
pub(crate) use json_len::to_json_at_most;
pub(crate) use metered::{build_bytes, list_bytes, object_bytes, LIST_BYTES, LIST_ELEMENT_BYTES, OBJECT_ENTRY_BYTES};
pub(crate) use order::cmp_numbers;
pub(crate) use path::same_key;
pub use path::Path;
pub(crate) use path::{no_segments, Segments};

/// The hasher of object keys, group keys and key sets, and of the fields of types: foldhash,
/// as fast as FxHash on short keys, with a seed drawn once per process from the operating
/// system's randomness (through `std`'s `RandomState`).
///
/// Keys come from plans, upstream answers and schemas, which an attacker can write: with an
/// unseeded hash (FxHash, before) keys crafted offline to share a hash made each insertion
/// probe all the others — a quadratic cost that no fuel or memory limit counted
/// (docs/security.md, "Hostile round 12d"). A seed the attacker cannot know makes such keys
/// impossible to prepare. Nothing observable depends on the seed: maps keep insertion order,
/// and no output, fuel or limit depends on a hash's value (the values `unique` sorts by hash
/// are hashed with a fixed hasher of their own, `order.rs`). Zero-sized: every map shares the
/// process's seed, so a key hashed once can be inserted into many maps by its hash
/// (`convert.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHash;

impl std::hash::BuildHasher for KeyHash {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        foldhash::fast::FoldHasher::with_seed(0, process_seed())
    }
}

/// The process's seed of [`KeyHash`], drawn on first use.
#[inline]
fn process_seed() -> &'static foldhash::SharedSeed {
    static SEED: std::sync::OnceLock<foldhash::SharedSeed> = std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        // `std`'s `RandomState` is keyed from the operating system's randomness; what it makes
        // of a constant is a random number.
        let random = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0x7464_736c_u64);
        foldhash::SharedSeed::from_u64(random)
    })
}

/// A hash map or set keyed by strings an attacker may choose ([`KeyHash`]).
pub(crate) type KeyHashMap<K, V> = std::collections::HashMap<K, V, KeyHash>;
/// See [`KeyHashMap`].
pub(crate) type KeyHashSet<K> = std::collections::HashSet<K, KeyHash>;

/// The map behind an object value: insertion-ordered.
pub type Map = IndexMap<SmolStr, Value, KeyHash>;

/// The deepest nesting that recursive walks over a value ([`Value::measure`]) descend
/// into; beyond it a value counts as too deep.
pub(crate) const MAX_WALK_DEPTH: usize = 4096;

/// A tdsl value: JSON with cheap clones.
///
/// `Debug` writes scalars as a derived `Debug` would (`Int(3)`, `Str("a")`) and lists and
/// objects as their compact JSON inside `List(…)` / `Object(…)`, written without recursion
/// like `Display`, so a value a host nested a million levels deep can be debug-printed.
#[derive(Clone, Default)]
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
