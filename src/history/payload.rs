//! What the history keeps of one payload: a tool's arguments or answer, a step's arguments or
//! result, a run's arguments or result. Up to a bound (`--history-payload-bytes`, 64 KiB by
//! default) a payload is kept whole, as its JSON; past it, as a *cut* — its first bytes, its
//! size and its SHA-256:
//!
//! ```json
//! {"$tdsl_cut": {"bytes": 1048578, "sha256": "9f2c…", "prefix": "{\"text\":\"aaaa…"}}
//! ```
//!
//! so that the history grows with the calls a run makes, not with the bytes they pass
//! around, and still tells which payload it was (the hash of the JSON text `tdsl run --trace`
//! writes compactly, or a tool received). The JSON is counted and hashed as it is
//! serialized, never held whole past the bound.

use sha2::{Digest, Sha256};

use crate::value::{Map, SmolStr, Value};

/// The one key of a cut payload's object.
pub const CUT_KEY: &str = "$tdsl_cut";

/// The most bytes of a cut payload's `prefix` (cut back to a character boundary).
pub const PREFIX_BYTES: usize = 1024;

/// What a cut payload says of the payload it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The payload's size, as compact JSON.
    pub bytes: u64,
    /// The SHA-256 of that JSON, in lowercase hex.
    pub sha256: String,
    /// Its first bytes (at most [`PREFIX_BYTES`]).
    pub prefix: String,
}

impl Cut {
    /// The cut a stored value stands for, when it is one.
    pub fn of(stored: &Value) -> Option<Cut> {
        let o = stored.as_object()?;
        if o.len() != 1 {
            return None;
        }
        let inner = o.get(CUT_KEY)?.as_object()?;
        Some(Cut {
            bytes: inner.get("bytes")?.as_f64().filter(|n| *n >= 0.0)? as u64,
            sha256: inner.get("sha256")?.as_str()?.to_string(),
            prefix: inner.get("prefix")?.as_str()?.to_string(),
        })
    }

    /// `(cut: 1048578 bytes of JSON, sha256 9f2c…)`: one line for people.
    pub fn describe(&self) -> String {
        format!("(cut: {} bytes of JSON, sha256 {}; the first {} kept)", self.bytes, self.sha256, self.prefix.len())
    }

    fn to_value(&self) -> Value {
        let mut inner = Map::default();
        inner.insert(SmolStr::new("bytes"), Value::Int(i64::try_from(self.bytes).unwrap_or(i64::MAX)));
        inner.insert(SmolStr::new("sha256"), Value::str(&self.sha256));
        inner.insert(SmolStr::new("prefix"), Value::str(&self.prefix));
        Value::object_from([(CUT_KEY, Value::object(inner))])
    }
}

/// A payload's JSON as stored: whole when it has at most `max` bytes, else its cut's JSON.
pub fn stored_json(v: &Value, max: usize) -> String {
    match measure(v, max) {
        Measured::Whole(text) => text,
        Measured::Cut(c) => serde_json::to_string(&c.to_value()).unwrap_or_default(),
    }
}

/// A payload as a value kept in a stored trace: itself when its JSON has at most `max`
/// bytes, else its cut.
pub fn cut_value(v: &Value, max: usize) -> Value {
    match v {
        // Scalars and short strings are never worth measuring.
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => v.clone(),
        _ => match measure(v, max) {
            Measured::Whole(_) => v.clone(),
            Measured::Cut(c) => c.to_value(),
        },
    }
}

enum Measured {
    Whole(String),
    Cut(Cut),
}

/// Serializes `v` once, keeping at most `max` bytes of its JSON and hashing all of it.
fn measure(v: &Value, max: usize) -> Measured {
    let mut sink = Sink { kept: Vec::new(), max, total: 0, hash: Sha256::new() };
    // The sink never fails; a value always serializes.
    let _ = serde_json::to_writer(&mut sink, v);
    if sink.total <= max as u64 {
        return Measured::Whole(String::from_utf8(sink.kept).unwrap_or_default());
    }
    let mut end = PREFIX_BYTES.min(sink.kept.len());
    // Back to a character boundary: the kept bytes are the start of valid UTF-8.
    while end > 0 && std::str::from_utf8(&sink.kept[..end]).is_err() {
        end -= 1;
    }
    let prefix = String::from_utf8_lossy(&sink.kept[..end]).into_owned();
    let sha256 = sink.hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Measured::Cut(Cut { bytes: sink.total, sha256, prefix })
}

struct Sink {
    kept: Vec<u8>,
    max: usize,
    total: u64,
    hash: Sha256,
}

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hash.update(buf);
        self.total = self.total.saturating_add(buf.len() as u64);
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..room.min(buf.len())]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_within_the_bound_is_kept_whole_and_a_larger_one_cut() {
        let small = Value::object_from([("text", Value::str("hi"))]);
        assert_eq!(stored_json(&small, 1024), r#"{"text":"hi"}"#);
        assert_eq!(cut_value(&small, 1024), small);
        let big = Value::object_from([("text", Value::str(&"é".repeat(2000)))]);
        let whole = serde_json::to_string(&big).unwrap();
        let cut = Cut::of(&cut_value(&big, 1024)).expect("cut");
        assert_eq!(cut.bytes, whole.len() as u64);
        assert!(whole.starts_with(&cut.prefix) && cut.prefix.len() <= PREFIX_BYTES && cut.prefix.len() > 1000);
        let expected: String = Sha256::digest(whole.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(cut.sha256, expected);
        let stored: Value = serde_json::from_str(&stored_json(&big, 1024)).unwrap();
        assert_eq!(Cut::of(&stored), Some(cut));
    }
}
