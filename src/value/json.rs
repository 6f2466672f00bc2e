//! serde: writing and reading values as JSON. A host that wants a `serde_json::Value`
//! calls `serde_json::to_value(&value)`: it goes through [`Serialize`](serde::Serialize), so
//! a value nested deeper than [`MAX_SERIALIZE_DEPTH`] is an error rather than a stack
//! overflow (there is no infallible `From` conversion: `serde_json::Value` itself recurses
//! when dropped, so an unbounded conversion could not be safe).

use super::Value;

/// How deep serde may serialize a value: serde's serializers recurse, so a value a host
/// nested deeper is an error rather than a stack overflow (`Display` has no such bound: it
/// writes with a stack on the heap).
pub(crate) const MAX_SERIALIZE_DEPTH: usize = 512;

thread_local! {
    /// Lists and objects being serialized on this thread, one inside the other.
    static SERIALIZING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One level of [`SERIALIZING`], left when dropped.
struct Level;

impl Level {
    fn enter() -> (Level, usize) {
        let depth = SERIALIZING.with(|d| {
            let n = d.get() + 1;
            d.set(n);
            n
        });
        (Level, depth)
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        SERIALIZING.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap, SerializeSeq};
        let _level = match self {
            Value::List(_) | Value::Object(_) => {
                let (level, depth) = Level::enter();
                if depth > MAX_SERIALIZE_DEPTH {
                    return Err(S::Error::custom(format!("a value nested deeper than {MAX_SERIALIZE_DEPTH} levels")));
                }
                Some(level)
            }
            _ => None,
        };
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
    /// Reads JSON straight into a value, with no intermediate `serde_json::Value` and no
    /// budget (the deserializer's own depth bound applies): the visitor of a budgeted read
    /// ([`super::decode`]) with none.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        use serde::de::DeserializeSeed;
        super::decode::Seed(&super::decode::Budget::unbounded()).deserialize(d)
    }
}
