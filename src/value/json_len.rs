//! The exact length of a value's compact JSON, measured without writing it (the bound on a
//! run's result, `--max-result-bytes`).
// Only the engine bounds results; the lean library's tests measure it too.
#![cfg_attr(not(feature = "engine"), allow(dead_code))]

use super::Value;

/// The exact length in bytes of a value's compact JSON (what `serde_json::to_vec` writes),
/// or `None` once it passes `limit` or nests deeper than serialization allows
/// ([`super::json::MAX_SERIALIZE_DEPTH`]: such a value cannot be written at all).
///
/// Nothing is rendered, and a part shared by reference — one long string or one list held
/// a thousand times over, which is what `map` and fan-outs make — is measured once: the
/// walk remembers the length of each shared string and container it has measured, so its
/// cost is that of the distinct parts, not of the JSON they would write.
pub(crate) fn json_len_at_most(value: &Value, limit: usize) -> Option<usize> {
    let mut m = JsonLen { limit, seen: std::collections::HashMap::new() };
    let n = m.value(value, 0)?;
    (n <= limit).then_some(n)
}

/// The value's compact JSON, written once straight from the value, when it is at most
/// `limit` bytes (measured first, without writing: [`json_len_at_most`]); `None` past it.
#[cfg(feature = "mcp")]
pub(crate) fn to_json_at_most(value: &Value, limit: usize) -> Option<String> {
    let mut out = Vec::with_capacity(json_len_at_most(value, limit)?);
    serde_json::to_writer(&mut out, value).ok()?;
    String::from_utf8(out).ok()
}

/// The least length [`JsonLen`] remembers: a smaller part is measured again where it
/// recurs, which costs no more than the bytes it adds to the count (bounded by the limit),
/// and the table stays small beside the value (at most one entry per KiB of distinct JSON
/// on each level of nesting).
const MEMO_FROM: usize = 1024;

struct JsonLen {
    limit: usize,
    /// Lengths of shared strings and containers, by address (each is alive, unchanged, for
    /// the whole walk: the walk borrows the value).
    seen: std::collections::HashMap<(usize, usize), usize>,
}

impl JsonLen {
    fn value(&mut self, v: &Value, depth: usize) -> Option<usize> {
        match v {
            Value::Null | Value::Bool(true) => Some(4),
            Value::Bool(false) => Some(5),
            Value::Int(i) => Some(int_len(*i)),
            Value::Float(f) => {
                let mut count = Count(0);
                serde_json::to_writer(&mut count, f).ok()?;
                Some(count.0)
            }
            Value::Str(s) if s.len() >= MEMO_FROM && s.is_heap_allocated() => {
                let key = (s.as_ptr() as usize, s.len());
                self.remembered(key, true, |_| Some(str_len(s)))
            }
            Value::Str(s) => Some(str_len(s)),
            Value::List(_) | Value::Object(_) if depth >= super::json::MAX_SERIALIZE_DEPTH => None,
            Value::List(l) => {
                let key = (l.as_ptr() as usize, usize::MAX);
                self.remembered(key, std::sync::Arc::strong_count(l) > 1, |m| {
                    let mut n = 2 + l.len().saturating_sub(1);
                    for x in l.iter() {
                        let x = m.value(x, depth + 1)?;
                        n = m.add(n, x)?;
                    }
                    Some(n)
                })
            }
            Value::Object(o) => {
                let key = (std::sync::Arc::as_ptr(o) as usize, usize::MAX - 1);
                self.remembered(key, std::sync::Arc::strong_count(o) > 1, |m| {
                    let mut n = 2 + o.len().saturating_sub(1);
                    for (k, x) in o.iter() {
                        n = m.add(n, str_len(k) + 1)?;
                        let x = m.value(x, depth + 1)?;
                        n = m.add(n, x)?;
                    }
                    Some(n)
                })
            }
        }
    }

    /// `a + b`, or `None` past the limit.
    fn add(&self, a: usize, b: usize) -> Option<usize> {
        a.checked_add(b).filter(|n| *n <= self.limit)
    }

    /// `measure`'s length of the part at `key`, measured once when the part is `shared`
    /// (held in more than one place) and long enough to be worth remembering.
    fn remembered(
        &mut self,
        key: (usize, usize),
        shared: bool,
        measure: impl FnOnce(&mut Self) -> Option<usize>,
    ) -> Option<usize> {
        if !shared {
            return measure(self);
        }
        if let Some(n) = self.seen.get(&key) {
            return Some(*n);
        }
        let n = measure(self)?;
        if n >= MEMO_FROM {
            self.seen.insert(key, n);
        }
        Some(n)
    }
}

/// A writer that keeps only a count.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `i` in decimal, with its sign.
fn int_len(i: i64) -> usize {
    let sign = usize::from(i < 0);
    let mut u = i.unsigned_abs();
    let mut digits = 1;
    while u >= 10 {
        u /= 10;
        digits += 1;
    }
    sign + digits
}

/// The length of `s` as a JSON string, quotes included, escaped as serde_json escapes:
/// `"` and `\` as two bytes, the control characters below 0x20 as `\b`, `\t`, `\n`, `\f`,
/// `\r` or `\u00XX`; everything else, UTF-8 included, as itself.
fn str_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
        + 2
}
