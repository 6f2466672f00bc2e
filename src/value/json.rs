//! serde: writing and reading values as JSON. A host that wants a `serde_json::Value`
//! calls `serde_json::to_value(&value)`: it goes through [`Serialize`](serde::Serialize), so
//! a value nested deeper than [`MAX_SERIALIZE_DEPTH`] is an error rather than a stack
//! overflow (there is no infallible `From` conversion: `serde_json::Value` itself recurses
//! when dropped, so an unbounded conversion could not be safe).

use std::fmt;

use super::{Map, SmolStr, Value};

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
