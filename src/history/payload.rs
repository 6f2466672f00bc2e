//! What the history keeps of one payload: a tool's arguments or answer, a step's arguments or
//! result, a run's arguments or result. Up to a bound (`--history-payload-bytes`, 64 KiB by
//! default) a payload is kept whole, as its JSON; past it, as a *cut* — its first bytes, its
//! size and its hash:
//!
//! ```json
//! {"$tdsl_cut": {"bytes": 1048578, "hash": "tree-sha256:9f2c…", "prefix": "{\"text\":\"aaaa…"}}
//! ```
//!
//! so that the history grows with the calls a run makes, not with the bytes they pass
//! around, and still tells which payload it was.
//!
//! **What a cut costs.** A run passes values around by reference: one 4 MiB string fanned
//! out to a thousand children is in the arguments and the answer of each, but exists once.
//! Measuring each payload whole (serializing and hashing its JSON) cost the history a
//! thousand times the string — minutes of CPU for one run, where the run itself took a
//! fraction of a second. So a payload is measured part by part, and a large part that is
//! shared (a long string, a list, an object: one allocation, passed around) is measured
//! once per [`Payloads`] (one per run) and remembered by its identity: the history's work is
//! linear in the bytes a run *makes*, not in the bytes it passes around. This is why the
//! hash is a tree hash, not the SHA-256 of the payload's JSON text (which no part of could
//! be reused):
//!
//! - the *hash text* of a value is its compact JSON, in which each element of a list, each
//!   key and each member of an object whose compact JSON has more than [`PART_BYTES`] bytes
//!   stands as the byte `0xFF` (never in UTF-8 text) followed by the 32 bytes of that
//!   part's own tree hash;
//! - its tree hash (`tree-sha256:…`) is the SHA-256 of its hash text.
//!
//! Equal payloads have equal hashes, however they were built or shared, and payloads that
//! differ anywhere have different ones (as SHA-256 tells them apart). A payload whose every
//! part is small hashes as its JSON text: its hash is what `sha256sum` gives for it. `bytes`
//! is the exact size of the compact JSON (counted part by part), and `prefix` its first
//! [`PREFIX_BYTES`], written from the value until the prefix is full, never the whole.
//!
//! Histories written before this format hold `"sha256"` (the SHA-256 of the whole JSON text)
//! instead of `"hash"`; [`Cut::of`] reads both and tells them apart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::value::{Map, SmolStr, Value};

/// The one key of a cut payload's object.
pub(crate) const CUT_KEY: &str = "$tdsl_cut";

/// The most bytes of a cut payload's `prefix` (cut back to a character boundary).
pub(crate) const PREFIX_BYTES: usize = 1024;

/// The most bytes of compact JSON a part of a payload has and still stands as its text in
/// its parent's hash text; a larger part stands as its own tree hash.
pub(crate) const PART_BYTES: usize = 1024;

/// How a cut's `hash` is written: `tree-sha256:` and 64 lowercase hex digits.
pub(crate) const TREE_HASH: &str = "tree-sha256";

/// The byte that stands before a part's tree hash in its parent's hash text.
const PART_MARK: u8 = 0xFF;

/// What a cut payload says of the payload it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The payload's size, as compact JSON.
    pub bytes: u64,
    /// Its hash, `tree-sha256:<hex>` (or, in a history written before the tree hash,
    /// `sha256:<hex>`: the SHA-256 of the whole JSON text).
    pub hash: String,
    /// Its first bytes (at most [`PREFIX_BYTES`]).
    pub prefix: String,
}

impl Cut {
    /// The cut a stored value stands for, when it is one.
    pub(crate) fn of(stored: &Value) -> Option<Cut> {
        let o = stored.as_object()?;
        if o.len() != 1 {
            return None;
        }
        let inner = o.get(CUT_KEY)?.as_object()?;
        let hash = match (inner.get("hash").and_then(Value::as_str), inner.get("sha256").and_then(Value::as_str)) {
            (Some(h), _) => h.to_string(),
            (None, Some(text)) => format!("sha256:{text}"),
            (None, None) => return None,
        };
        Some(Cut {
            bytes: inner.get("bytes")?.as_f64().filter(|n| *n >= 0.0)? as u64,
            hash,
            prefix: inner.get("prefix")?.as_str()?.to_string(),
        })
    }

    /// `(cut: 1048578 bytes of JSON, tree-sha256:9f2c…; the first 1024 kept)`: one line for
    /// people.
    pub(crate) fn describe(&self) -> String {
        format!("(cut: {} bytes of JSON, {}; the first {} kept)", self.bytes, self.hash, self.prefix.len())
    }

    fn to_value(&self) -> Value {
        let mut inner = Map::default();
        inner.insert(SmolStr::new("bytes"), Value::Int(i64::try_from(self.bytes).unwrap_or(i64::MAX)));
        inner.insert(SmolStr::new("hash"), Value::str(&self.hash));
        inner.insert(SmolStr::new("prefix"), Value::str(&self.prefix));
        Value::object_from([(CUT_KEY, Value::object(inner))])
    }
}

/// The measurements of one run's payloads: each large shared part (a long string, a list, an
/// object) is measured once and remembered by its identity while the run lasts. A part is
/// remembered with a reference to it, so that its memory cannot be reused by another value
/// while it is remembered; the run's trace holds every payload until the run ends anyway.
pub(crate) struct Payloads {
    parts: Mutex<HashMap<PartKey, (Value, Big)>>,
    hashed: Arc<AtomicU64>,
    /// What is left of the run's budget of stored payload text (payloads kept whole and the
    /// prefixes of cuts; `--history-run-bytes`): past it, a payload is kept as its size and
    /// hash alone.
    left: AtomicU64,
}

impl Default for Payloads {
    /// Measurements with no budget of the run's (every payload within the bound is whole).
    fn default() -> Payloads {
        Payloads { parts: Mutex::default(), hashed: Arc::default(), left: AtomicU64::new(u64::MAX) }
    }
}

/// A payload of at most this many bytes of JSON is kept whole whatever is left of the run's
/// budget: its cut would be no smaller.
pub(crate) const ALWAYS_WHOLE: u64 = 128;

/// A part's identity: its kind, its address and its length.
type PartKey = (u8, usize, usize);

/// A part larger than [`PART_BYTES`]: its size and its tree hash.
#[derive(Clone, Copy)]
struct Big {
    bytes: u64,
    digest: [u8; 32],
}

/// A part as measured: its JSON text when small, else its size and tree hash.
enum Part {
    Small(Vec<u8>),
    Big(Big),
}

impl Part {
    fn bytes(&self) -> u64 {
        match self {
            Part::Small(t) => t.len() as u64,
            Part::Big(b) => b.bytes,
        }
    }
}

impl Payloads {
    /// Measurements counting every byte they hash into `counter` (which other measurements
    /// may share: a store's count of its work), for a run that keeps at most `budget` bytes
    /// of payload and error text: whole, in the order they are stored, then cuts' prefixes;
    /// past it, cuts without a prefix.
    pub(crate) fn counting(counter: Arc<AtomicU64>, budget: u64) -> Payloads {
        Payloads { parts: Mutex::default(), hashed: counter, left: AtomicU64::new(budget) }
    }

    /// Takes `n` bytes of the run's budget when that many are left.
    fn take(&self, n: u64) -> bool {
        self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(n)).is_ok()
    }

    /// Takes up to `n` bytes of the run's budget: how many it took.
    fn take_up_to(&self, n: u64) -> u64 {
        match self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| Some(left.saturating_sub(n))) {
            Ok(before) | Err(before) => before.min(n),
        }
    }

    /// A payload's JSON as stored: whole when it has at most `max` bytes, else its cut's JSON.
    pub(crate) fn stored_json(&self, v: &Value, max: usize) -> String {
        match self.measure(v, max) {
            Measured::Whole(text) => text,
            Measured::Cut(c) => serde_json::to_string(&c.to_value()).unwrap_or_default(),
        }
    }

    /// An error text as stored: whole while the run's budget lasts (when it has at most
    /// `max` bytes), else its first bytes (up to [`PREFIX_BYTES`], while some of the budget
    /// is left) and its size. A tool's error can be as long as its answer (an upstream's up
    /// to 16 MiB), and a fan-out of failing calls once wrote 50 MB of them past the budget.
    pub(crate) fn stored_text(&self, text: &str, max: usize) -> String {
        let len = text.len() as u64;
        if len <= ALWAYS_WHOLE || (len <= max as u64 && self.take(len)) {
            return text.to_string();
        }
        let mut end = usize::try_from(self.take_up_to(PREFIX_BYTES as u64)).unwrap_or(PREFIX_BYTES).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… (cut: {len} bytes)", &text[..end])
    }

    /// A payload as a value kept in a stored trace: itself when its JSON has at most `max`
    /// bytes, else its cut.
    pub(crate) fn cut_value(&self, v: &Value, max: usize) -> Value {
        match v {
            // Scalars are never worth measuring.
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => v.clone(),
            _ => match self.measure(v, max) {
                Measured::Whole(_) => v.clone(),
                Measured::Cut(c) => c.to_value(),
            },
        }
    }

    fn measure(&self, v: &Value, max: usize) -> Measured {
        let part = self.part(v, 0);
        let bytes = part.bytes();
        if bytes <= max as u64 && (bytes <= ALWAYS_WHOLE || self.take(bytes)) {
            return Measured::Whole(match part {
                Part::Small(text) => String::from_utf8(text).unwrap_or_default(),
                Part::Big(_) => serde_json::to_string(v).unwrap_or_default(),
            });
        }
        let (bytes, digest) = match part {
            Part::Big(b) => (b.bytes, b.digest),
            Part::Small(text) => {
                self.hashed.fetch_add(text.len() as u64, Ordering::Relaxed);
                (text.len() as u64, Sha256::digest(&text).into())
            }
        };
        let hash = format!("{TREE_HASH}:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let room = usize::try_from(self.take_up_to(PREFIX_BYTES as u64)).unwrap_or(PREFIX_BYTES);
        Measured::Cut(Cut { bytes, hash, prefix: prefix(v, room) })
    }

    /// `v` measured: its text when small, its size and tree hash when large (remembered
    /// when `v` is a shared part).
    fn part(&self, v: &Value, depth: usize) -> Part {
        let key: PartKey = match v {
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                return Part::Small(serde_json::to_vec(v).unwrap_or_default());
            }
            // At most 6 bytes of JSON a byte (`\u0000`) and the quotes: surely small.
            Value::Str(s) if s.len().saturating_mul(6).saturating_add(2) <= PART_BYTES => {
                return Part::Small(serde_json::to_vec(v).unwrap_or_default())
            }
            Value::Str(s) => (0, s.as_str().as_ptr() as usize, s.len()),
            Value::List(l) if l.is_empty() => return Part::Small(b"[]".to_vec()),
            Value::List(l) => (1, l.as_ptr() as usize, l.len()),
            Value::Object(o) if o.is_empty() => return Part::Small(b"{}".to_vec()),
            Value::Object(o) => (2, Arc::as_ptr(o) as usize, o.len()),
        };
        if let Some((_, big)) = self.parts.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Part::Big(*big);
        }
        let mut b = Builder::new(&self.hashed);
        match v {
            Value::List(l) => {
                b.text(b"[");
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        b.text(b",");
                    }
                    b.part(self.child(x, depth));
                }
                b.text(b"]");
            }
            Value::Object(o) => {
                b.text(b"{");
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        b.text(b",");
                    }
                    b.part(self.part(&Value::Str(k.clone()), depth + 1));
                    b.text(b":");
                    b.part(self.child(x, depth));
                }
                b.text(b"}");
            }
            // A long string: its JSON, escaped as it is written.
            _ => {
                let _ = serde_json::to_writer(&mut b, v);
            }
        }
        let part = b.finish();
        if let Part::Big(big) = part {
            self.parts.lock().unwrap_or_else(PoisonError::into_inner).insert(key, (v.clone(), big));
        }
        part
    }

    /// A list's element or an object's member: measured, unless it nests deeper than a
    /// value can be written (`crate::value::MAX_SERIALIZE_DEPTH`), then an empty part.
    fn child(&self, x: &Value, depth: usize) -> Part {
        if depth + 1 > crate::value::MAX_SERIALIZE_DEPTH {
            return Part::Small(Vec::new());
        }
        self.part(x, depth + 1)
    }
}

enum Measured {
    Whole(String),
    Cut(Cut),
}

/// The hash text of one part as it is written: kept while it is small, hashed from the
/// moment it is not.
struct Builder<'a> {
    kept: Vec<u8>,
    hash: Option<Sha256>,
    bytes: u64,
    hashed: &'a AtomicU64,
}

impl<'a> Builder<'a> {
    fn new(hashed: &'a AtomicU64) -> Builder<'a> {
        Builder { kept: Vec::new(), hash: None, bytes: 0, hashed }
    }

    /// JSON text of the part.
    fn text(&mut self, t: &[u8]) {
        self.bytes = self.bytes.saturating_add(t.len() as u64);
        self.feed(t);
    }

    /// A child part: its text, or the mark and its hash.
    fn part(&mut self, p: Part) {
        match p {
            Part::Small(t) => self.text(&t),
            Part::Big(b) => {
                self.bytes = self.bytes.saturating_add(b.bytes);
                self.feed(&[PART_MARK]);
                self.feed(&b.digest);
            }
        }
    }

    fn feed(&mut self, t: &[u8]) {
        match &mut self.hash {
            Some(h) => h.update(t),
            None if self.kept.len() + t.len() <= PART_BYTES => {
                self.kept.extend_from_slice(t);
                return;
            }
            None => {
                let mut h = Sha256::new();
                h.update(&self.kept);
                h.update(t);
                self.hashed.fetch_add(self.kept.len() as u64, Ordering::Relaxed);
                self.kept = Vec::new();
                self.hash = Some(h);
            }
        }
        self.hashed.fetch_add(t.len() as u64, Ordering::Relaxed);
    }

    fn finish(self) -> Part {
        if self.bytes <= PART_BYTES as u64 && self.hash.is_none() {
            return Part::Small(self.kept);
        }
        let digest = match self.hash {
            Some(h) => h.finalize().into(),
            None => {
                self.hashed.fetch_add(self.kept.len() as u64, Ordering::Relaxed);
                Sha256::digest(&self.kept).into()
            }
        };
        Part::Big(Big { bytes: self.bytes, digest })
    }
}

impl std::io::Write for Builder<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first `max` bytes of `v`'s compact JSON (cut back to a character boundary), written
/// from `v` until they are, never more: a long string is escaped only as far as it is kept.
fn prefix(v: &Value, max: usize) -> String {
    let mut out = Bounded { kept: Vec::with_capacity(max.min(1 << 16)), max };
    let _ = write_prefix(v, &mut out, 0);
    let mut end = out.kept.len();
    // Back to a character boundary: the kept bytes are the start of valid UTF-8.
    while end > 0 && std::str::from_utf8(&out.kept[..end]).is_err() {
        end -= 1;
    }
    String::from_utf8_lossy(&out.kept[..end]).into_owned()
}

/// A buffer of at most `max` bytes: a write past it keeps what fits and fails.
struct Bounded {
    kept: Vec<u8>,
    max: usize,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..room.min(buf.len())]);
        if buf.len() > room {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `v`'s compact JSON into `out` until it is full (an error then).
fn write_prefix(v: &Value, out: &mut Bounded, depth: usize) -> std::io::Result<()> {
    use std::io::Write;
    match v {
        Value::Str(s) => write_str(s, out),
        Value::List(l) => {
            out.write_all(b"[")?;
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                if depth < crate::value::MAX_SERIALIZE_DEPTH {
                    write_prefix(x, out, depth + 1)?;
                }
            }
            out.write_all(b"]")
        }
        Value::Object(o) => {
            out.write_all(b"{")?;
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_str(k, out)?;
                out.write_all(b":")?;
                if depth < crate::value::MAX_SERIALIZE_DEPTH {
                    write_prefix(x, out, depth + 1)?;
                }
            }
            out.write_all(b"}")
        }
        _ => serde_json::to_writer(&mut *out, v).map_err(std::io::Error::other),
    }
}

/// A string's JSON, as far as `out` has room: JSON escapes a character at a time, so the
/// escaped start of a string is the start of the escaped string (less its closing quote).
fn write_str(s: &str, out: &mut Bounded) -> std::io::Result<()> {
    use std::io::Write;
    let room = out.max.saturating_sub(out.kept.len());
    if s.len() + 2 <= room {
        return serde_json::to_writer(&mut *out, s).map_err(std::io::Error::other);
    }
    // The escaped text is at least as long as the text: `room` bytes of it fill `out`.
    let mut end = room.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let escaped = serde_json::to_vec(&s[..end]).unwrap_or_default();
    out.write_all(&escaped[..escaped.len().saturating_sub(1)])?;
    // Not all of the string fitted.
    Err(std::io::ErrorKind::WriteZero.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Payloads {
        /// The bytes hashed so far (the store reads its shared counter instead).
        fn hashed_bytes(&self) -> u64 {
            self.hashed.load(Ordering::Relaxed)
        }
    }

    /// A payload's JSON as stored, measured alone.
    fn stored_json(v: &Value, max: usize) -> String {
        Payloads::default().stored_json(v, max)
    }

    /// A payload as kept in a stored trace, measured alone.
    fn cut_value(v: &Value, max: usize) -> Value {
        Payloads::default().cut_value(v, max)
    }

    fn hex(d: impl AsRef<[u8]>) -> String {
        d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_payload_within_the_bound_is_kept_whole_and_a_larger_one_cut() {
        let small = Value::object_from([("text", Value::str("hi"))]);
        assert_eq!(stored_json(&small, 1024), r#"{"text":"hi"}"#);
        assert_eq!(cut_value(&small, 1024), small);
        // Small parts only: the tree hash is the SHA-256 of the JSON text.
        let chars: Vec<Value> = (0..2000).map(|i| Value::str(if i % 2 == 0 { "é" } else { "\"\n" })).collect();
        let big = Value::object_from([("text", Value::list(chars))]);
        let whole = serde_json::to_string(&big).unwrap();
        let cut = Cut::of(&cut_value(&big, 1024)).expect("cut");
        assert_eq!(cut.bytes, whole.len() as u64);
        assert!(whole.starts_with(&cut.prefix) && cut.prefix.len() <= PREFIX_BYTES && cut.prefix.len() > 1000);
        // The list is a part of more than 1 KiB: it stands as its hash in the object's.
        let list_hash = Sha256::digest(serde_json::to_string(big.get_direct("text").unwrap()).unwrap().as_bytes());
        let mut text = br#"{"text":"#.to_vec();
        text.push(0xFF);
        text.extend_from_slice(&list_hash);
        text.push(b'}');
        assert_eq!(cut.hash, format!("tree-sha256:{}", hex(Sha256::digest(&text))));
        let stored: Value = serde_json::from_str(&stored_json(&big, 1024)).unwrap();
        assert_eq!(Cut::of(&stored), Some(cut));
        // A long string alone: its JSON text's SHA-256.
        let s = Value::str(&"é\u{1}".repeat(2000));
        let whole = serde_json::to_string(&s).unwrap();
        let cut = Cut::of(&cut_value(&s, 1024)).expect("cut");
        assert_eq!((cut.bytes, cut.hash), (whole.len() as u64, format!("tree-sha256:{}", hex(Sha256::digest(&whole)))));
        assert!(whole.starts_with(&cut.prefix) && cut.prefix.len() > 1000, "{}", cut.prefix);
    }

    #[test]
    fn sizes_and_prefixes_are_those_of_the_json_text() {
        let long = "x\u{7f}\t\\\"é😀".repeat(300);
        let values = [
            Value::str(&long),
            Value::list(vec![
                Value::Float(1.5),
                Value::Float(-0.0),
                Value::Int(i64::MIN),
                Value::Null,
                Value::Bool(true),
            ]),
            Value::object_from([(long.as_str(), Value::list(vec![Value::str(&long); 3])), ("", Value::list(vec![]))]),
            Value::list((0..3000).map(|i| Value::Float(f64::from(i) / 7.0)).collect()),
            Value::object_from([("a", Value::object_from::<&str>([])), ("b", Value::str(&long[..40]))]),
        ];
        for v in values {
            let whole = serde_json::to_string(&v).unwrap();
            for max in [1024, 4096, 1 << 20] {
                let stored = stored_json(&v, max);
                match Cut::of(&serde_json::from_str(&stored).unwrap()) {
                    Some(c) => {
                        assert!(whole.len() > max);
                        assert_eq!(c.bytes, whole.len() as u64);
                        assert!(whole.starts_with(&c.prefix), "{} / {}", c.prefix, &whole[..40]);
                        assert!(c.prefix.len() + 4 > PREFIX_BYTES.min(whole.len()), "{}", c.prefix.len());
                    }
                    None => assert_eq!(stored, whole),
                }
            }
        }
    }

    #[test]
    fn equal_payloads_have_equal_hashes_however_they_are_shared_and_different_ones_differ() {
        let s = "a".repeat(5000);
        let shared = Value::str(&s);
        let built = Value::object_from([("x", shared.clone()), ("y", shared.clone())]);
        let apart = Value::object_from([("x", Value::str(&s)), ("y", Value::str(&s))]);
        let mut other = s.clone();
        other.replace_range(4000..4001, "b");
        let different = Value::object_from([("x", Value::str(&s)), ("y", Value::str(&other))]);
        let p = Payloads::default();
        let (a, b, c) =
            (p.cut_value(&built, 1024), Payloads::default().cut_value(&apart, 1024), p.cut_value(&different, 1024));
        let hash = |v: &Value| Cut::of(v).unwrap().hash;
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&c), "a difference past the prefix changes the hash");
        assert_eq!(Cut::of(&a).unwrap().prefix, Cut::of(&c).unwrap().prefix);
    }

    #[test]
    fn a_shared_part_is_measured_once() {
        let s = Value::str(&"a".repeat(1 << 20));
        let p = Payloads::default();
        for i in 0..100 {
            let payload = Value::object_from([("text", s.clone()), ("i", Value::Int(i))]);
            assert!(Cut::of(&p.cut_value(&payload, 4096)).is_some());
        }
        // The string once (its 1 MiB of JSON), then about 60 bytes a payload.
        assert!(p.hashed_bytes() < (1 << 20) + 100 * 100, "{}", p.hashed_bytes());
    }

    /// The tree hash as `docs/history.md` defines it, from the JSON texts alone (each part
    /// written whole, its size read from its text): nothing shared with the code above.
    fn reference_hash(v: &Value) -> [u8; 32] {
        fn text(v: &Value) -> Vec<u8> {
            let json = |x: &Value| serde_json::to_vec(x).unwrap();
            let part = |x: &Value, out: &mut Vec<u8>| {
                let t = json(x);
                if t.len() > PART_BYTES {
                    out.push(0xFF);
                    out.extend_from_slice(&reference_hash(x));
                } else {
                    out.extend_from_slice(&t);
                }
            };
            let mut out = Vec::new();
            match v {
                Value::List(l) => {
                    out.push(b'[');
                    for (i, x) in l.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        part(x, &mut out);
                    }
                    out.push(b']');
                }
                Value::Object(o) => {
                    out.push(b'{');
                    for (i, (k, x)) in o.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        part(&Value::Str(k.clone()), &mut out);
                        out.push(b':');
                        part(x, &mut out);
                    }
                    out.push(b'}');
                }
                _ => out = json(v),
            }
            out
        }
        Sha256::digest(text(v)).into()
    }

    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let chars = prop::sample::select(vec!["a", "é", "\"", "\\", "\n", "\u{1}", "😀", "\u{7f}", "b"]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            (-1e9f64..1e9).prop_map(Value::Float),
            (0usize..1500, chars.clone()).prop_map(|(n, c)| Value::str(&c.repeat(n))),
            prop::collection::vec(chars, 0..40).prop_map(|cs| Value::str(&cs.concat())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
                prop::collection::vec(("[a-z\"é]{0,4}", inner), 0..6).prop_map(Value::object_from),
            ]
        })
    }

    proptest::proptest! {
        /// Any value: the size and prefix are those of its JSON text, the hash the reference's,
        /// with the parts measured afresh or remembered.
        #[test]
        fn a_cut_says_what_the_json_text_and_the_reference_hash_say(v in value(), max in 1024usize..6000) {
            let whole = serde_json::to_string(&v).unwrap();
            let shared = Payloads::default();
            for p in [&Payloads::default(), &shared, &shared] {
                let stored = p.stored_json(&v, max);
                match Cut::of(&serde_json::from_str(&stored).unwrap()) {
                    Some(c) => {
                        proptest::prop_assert!(whole.len() > max);
                        proptest::prop_assert_eq!(c.bytes, whole.len() as u64);
                        proptest::prop_assert!(whole.starts_with(&c.prefix));
                        proptest::prop_assert!(c.prefix.len() + 4 > PREFIX_BYTES);
                        proptest::prop_assert_eq!(c.hash, format!("tree-sha256:{}", hex(reference_hash(&v))));
                    }
                    None => proptest::prop_assert_eq!(&stored, &whole),
                }
            }
        }
    }

    #[test]
    fn a_histories_old_cuts_are_read_with_their_text_hash() {
        let old: Value =
            serde_json::from_str(r#"{"$tdsl_cut": {"bytes": 2000, "sha256": "ab12", "prefix": "{\"a\""}}"#).unwrap();
        let cut = Cut::of(&old).unwrap();
        assert_eq!(cut.hash, "sha256:ab12");
        assert_eq!(cut.describe(), "(cut: 2000 bytes of JSON, sha256:ab12; the first 4 kept)");
    }
}
