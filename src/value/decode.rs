//! Reading JSON into a value against a budget: at most so many values, nested at most so
//! deep, counted while the value is built.
//!
//! Every value read from text goes through the one visitor here ([`Value`]'s
//! `Deserialize` with no budget, [`from_json_within`] with one), so that what a peer's
//! bytes can make is bounded where it is built, not measured after. A tool's output (an
//! `exec:` program's standard output, an HTTP body, an MCP result) is read with the
//! runner's budget: past it the read stops at once, having built at most the budget's
//! values, and the call fails saying which bound it passed.
//!
//! Each value is charged before it is built, so a read that fails has held at most
//! `max_values` values (and the bytes it was given). What a value costs in memory is in
//! `docs/security.md` ("What one tool output can cost").

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Map, SmolStr, Value};

/// The deepest nesting of lists and objects a tool's output may have: 128 levels, the
/// bound serde_json kept before there was a budget (`ranges::TOOL_OUTPUT_DEPTH`, fixed).
pub(crate) const MAX_OUTPUT_DEPTH: usize = 128;

/// Why a budgeted read failed.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// More values than the budget's `max_values` (the bound).
    TooManyValues(usize),
    /// Lists or objects nested deeper than the bound.
    TooDeep(usize),
    /// Not JSON, or a number no value holds.
    Json(serde_json::Error),
}

impl fmt::Display for DecodeError {
    /// What the output holds, to follow "printed" or "answered with": `more than 1000
    /// values, the most …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooManyValues(max) => write!(
                f,
                "more than {max} values (numbers, strings, lists, objects…), the most one tool output may hold \
                 (`--max-tool-values` of `tdsl run` and `tdsl serve` raises it)"
            ),
            DecodeError::TooDeep(max) => {
                write!(f, "lists or objects nested deeper than {max} levels, the most a tool output may nest")
            }
            DecodeError::Json(e) => write!(f, "invalid JSON ({e})"),
        }
    }
}

/// Reads one JSON value from `text` (surrounding whitespace allowed, nothing after it),
/// building at most `max_values` values nested at most [`MAX_OUTPUT_DEPTH`] deep: a tool's
/// output, and `json_parse`'s text.
pub(crate) fn from_json_within(text: &[u8], max_values: usize) -> Result<Value, DecodeError> {
    let budget = Budget::new(max_values, MAX_OUTPUT_DEPTH);
    let mut de = serde_json::Deserializer::from_slice(text);
    // Our own depth bound replaces serde_json's (the same 128), so that its error says so.
    de.disable_recursion_limit();
    let read = Seed(&budget).deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    read.map_err(|e| match budget.exceeded.take() {
        Some(exceeded) => exceeded,
        None => DecodeError::Json(e),
    })
}

/// Whether `text` is one JSON value of at most `max_values` values nested at most
/// [`MAX_OUTPUT_DEPTH`] deep, read without building anything: for text that is read into
/// another form after (an MCP text block, read as a `serde_json::Value` so that secrets are
/// redacted in its strings before it becomes a value). `Ok(false)` when it is not JSON.
#[cfg(feature = "mcp")]
pub(crate) fn json_within(text: &[u8], max_values: usize) -> Result<bool, DecodeError> {
    let budget = Budget::new(max_values, MAX_OUTPUT_DEPTH);
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    match Tally(&budget).deserialize(&mut de).and_then(|()| de.end()) {
        Ok(()) => Ok(true),
        Err(_) => budget.exceeded.take().map_or(Ok(false), Err),
    }
}

/// Whether a `serde_json::Value` another reader built (an MCP result's
/// `structuredContent`) holds at most `max_values` values nested at most
/// [`MAX_OUTPUT_DEPTH`] deep, counted as [`from_json_within`] counts them; walked without
/// recursion, stopping at the first value past a bound.
#[cfg(feature = "mcp")]
pub(crate) fn json_value_within(json: &serde_json::Value, max_values: usize) -> Result<(), DecodeError> {
    use serde_json::Value as Json;
    let mut left = max_values;
    // Each entry: the children of a list or object still to count, and its depth.
    let mut stack: Vec<(Box<dyn Iterator<Item = &Json> + '_>, usize)> = vec![(Box::new(std::iter::once(json)), 0)];
    while let Some((next, depth)) = stack.last_mut().map(|(it, d)| (it.next(), *d)) {
        let Some(v) = next else {
            stack.pop();
            continue;
        };
        left = left.checked_sub(1).ok_or(DecodeError::TooManyValues(max_values))?;
        let children: Box<dyn Iterator<Item = &Json> + '_> = match v {
            Json::Array(items) => Box::new(items.iter()),
            Json::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth + 1 > MAX_OUTPUT_DEPTH {
            return Err(DecodeError::TooDeep(MAX_OUTPUT_DEPTH));
        }
        stack.push((children, depth + 1));
    }
    Ok(())
}

/// Counts the values of JSON text as its bytes arrive, without reading it: for a transport
/// that hands whole messages to a reader of its own (rmcp reads an MCP message into
/// `serde_json` values before tdsl sees it), so that a message of too many values is cut
/// before anything is built of it. Of valid JSON it counts as [`from_json_within`] does —
/// one, plus a value a comma, plus one a list or object with something in it — keeping a
/// few counters, whatever the text's size; of anything else it counts something, and the
/// reader after refuses the text.
#[derive(Clone, Copy, Debug)]
#[cfg(feature = "mcp")]
pub(crate) struct ValueStream {
    max_values: usize,
    values: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Just after `[` or `{`: the next value, if any, shows it is not empty.
    opened: bool,
}

#[cfg(feature = "mcp")]
impl ValueStream {
    /// A count of one text, bounded by `max_values` values nested [`MAX_OUTPUT_DEPTH`] deep.
    pub(crate) fn new(max_values: usize) -> ValueStream {
        ValueStream { max_values, values: 0, depth: 0, in_string: false, escaped: false, opened: false }
    }

    /// The next text begins (a new line, a new event).
    pub(crate) fn reset(&mut self) {
        *self = ValueStream::new(self.max_values);
    }

    /// One more byte of the text; an error once its values pass a bound (and at every byte
    /// after).
    pub(crate) fn byte(&mut self, b: u8) -> Result<(), DecodeError> {
        if self.in_string {
            match b {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            return Ok(());
        }
        let value_starts = !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',' | b':' | b']' | b'}');
        if value_starts && (self.opened || self.values == 0) {
            // The first value of the text, or of a list or object.
            self.values += 1;
        }
        self.opened = false;
        match b {
            b'"' => self.in_string = true,
            b',' => self.values += 1,
            b'[' | b'{' => {
                self.depth += 1;
                self.opened = true;
                if self.depth > MAX_OUTPUT_DEPTH {
                    return Err(DecodeError::TooDeep(MAX_OUTPUT_DEPTH));
                }
            }
            b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        if self.values > self.max_values {
            return Err(DecodeError::TooManyValues(self.max_values));
        }
        Ok(())
    }
}

/// The values of `v` as a read counts them (an object's member is its value), counted up to
/// `limit` and no further; without recursion.
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub(crate) fn values_in(v: &Value, limit: usize) -> usize {
    let mut count = 0;
    let mut stack: Vec<&Value> = vec![v];
    while let Some(v) = stack.pop() {
        count += 1;
        if count >= limit {
            break;
        }
        match v {
            Value::List(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    count
}

/// What a read may still build.
pub(super) struct Budget {
    /// Values left to build.
    left: Cell<usize>,
    /// Lists and objects being read, one inside the other.
    depth: Cell<usize>,
    max_values: usize,
    max_depth: usize,
    /// The bound passed, once one is (serde's error then says only that one was).
    exceeded: Cell<Option<DecodeError>>,
}

impl Budget {
    pub(super) fn new(max_values: usize, max_depth: usize) -> Budget {
        Budget { left: Cell::new(max_values), depth: Cell::new(0), max_values, max_depth, exceeded: Cell::new(None) }
    }

    /// No bound but serde_json's own depth bound: what `Deserialize` for [`Value`] uses.
    pub(super) fn unbounded() -> Budget {
        Budget::new(usize::MAX, usize::MAX)
    }

    /// Charges one value, before it is built.
    fn charge<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(self.fail(DecodeError::TooManyValues(self.max_values))),
        }
    }

    /// Charges a list or an object and enters it; [`Budget::leave`] when it is read.
    fn enter<E: serde::de::Error>(&self) -> Result<(), E> {
        self.charge()?;
        let depth = self.depth.get() + 1;
        if depth > self.max_depth {
            return Err(self.fail(DecodeError::TooDeep(self.max_depth)));
        }
        self.depth.set(depth);
        Ok(())
    }

    fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }

    fn fail<E: serde::de::Error>(&self, why: DecodeError) -> E {
        let message = why.to_string();
        self.exceeded.set(Some(why));
        E::custom(message)
    }
}

/// Reads one value, charging the budget for it and for everything in it.
#[derive(Clone, Copy)]
pub(super) struct Seed<'b>(pub(super) &'b Budget);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.0.charge()?;
        Ok(Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Value, E> {
        self.0.charge()?;
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<Value, E> {
        self.0.charge()?;
        Ok(Value::Int(i))
    }

    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        self.0.charge()?;
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }

    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Value, E> {
        self.0.charge()?;
        Value::float(f).ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
        self.0.charge()?;
        Ok(Value::str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        self.0.enter()?;
        let mut items = Vec::with_capacity(a.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = a.next_element_seed(self)? {
            items.push(v);
        }
        self.0.leave();
        Ok(Value::list(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        self.0.enter()?;
        let mut map = Map::default();
        while let Some(k) = a.next_key::<Key>()? {
            map.insert(k.0, a.next_value_seed(self)?);
        }
        self.0.leave();
        if map.is_empty() {
            return Ok(empty_object());
        }
        // A map grows its room by doubling, from room for 3 members: an object of one
        // member held 4 times its size. Shrunk, each member costs what it holds.
        map.shrink_to_fit();
        Ok(Value::object(map))
    }
}

/// Counts one value and everything in it, building nothing ([`json_within`]).
#[derive(Clone, Copy)]
#[cfg(feature = "mcp")]
struct Tally<'b>(&'b Budget);

#[cfg(feature = "mcp")]
impl<'de> DeserializeSeed<'de> for Tally<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(feature = "mcp")]
impl<'de> Visitor<'de> for Tally<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.0.charge()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        self.0.enter()?;
        while a.next_element_seed(self)?.is_some() {}
        self.0.leave();
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        self.0.enter()?;
        while a.next_key::<serde::de::IgnoredAny>()?.is_some() {
            a.next_value_seed(self)?;
        }
        self.0.leave();
        Ok(())
    }
}

/// The one empty object every `{}` read shares: each had an allocation of its own (its
/// map's, 72 bytes and the allocator's), three times its place in a list.
fn empty_object() -> Value {
    static EMPTY: std::sync::OnceLock<std::sync::Arc<Map>> = std::sync::OnceLock::new();
    Value::Object(EMPTY.get_or_init(Default::default).clone())
}

/// An object key read without an intermediate `String` when it has no escapes. A key is
/// charged with its value (a member is one value).
struct Key(SmolStr);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct K;
        impl Visitor<'_> for K {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, max_values: usize) -> Result<String, String> {
        from_json_within(text.as_bytes(), max_values).map(|v| v.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn every_value_is_counted_once() {
        // 1 list + 3 numbers; 1 object + its 2 members' values (a member is its value, the
        // key uncounted), one of them a list of 1 string.
        assert_eq!(read("[1, 2, 3]", 4), Ok("[1,2,3]".to_string()));
        assert!(read("[1, 2, 3]", 3).unwrap_err().starts_with("more than 3 values"));
        assert_eq!(read(r#"{"a": null, "b": ["x"]}"#, 4), Ok(r#"{"a":null,"b":["x"]}"#.to_string()));
        assert!(read(r#"{"a": null, "b": ["x"]}"#, 3).is_err());
        assert_eq!(read(" 7 ", 1), Ok("7".to_string()));
        assert!(read("7", 0).is_err());
    }

    #[test]
    fn the_messages_name_the_bound_and_how_to_raise_it() {
        assert_eq!(
            read("[0, 0, 0]", 2).unwrap_err(),
            "more than 2 values (numbers, strings, lists, objects…), the most one tool output may hold \
             (`--max-tool-values` of `tdsl run` and `tdsl serve` raises it)"
        );
        let deep = format!("{}{}", "[".repeat(MAX_OUTPUT_DEPTH + 1), "]".repeat(MAX_OUTPUT_DEPTH + 1));
        assert_eq!(
            read(&deep, usize::MAX).unwrap_err(),
            "lists or objects nested deeper than 128 levels, the most a tool output may nest"
        );
        let deepest = format!("{}{}", "[".repeat(MAX_OUTPUT_DEPTH), "]".repeat(MAX_OUTPUT_DEPTH));
        assert!(read(&deepest, usize::MAX).is_ok(), "128 levels are read");
        let objects = format!("{}1{}", r#"{"a":"#.repeat(MAX_OUTPUT_DEPTH + 1), "}".repeat(MAX_OUTPUT_DEPTH + 1));
        assert!(read(&objects, usize::MAX).unwrap_err().starts_with("lists or objects nested deeper"));
        assert!(read("[1,", 10).unwrap_err().starts_with("invalid JSON (EOF while parsing"));
        assert!(read("[1] x", 10).unwrap_err().starts_with("invalid JSON (trailing characters"));
        assert!(read("1e400", 10).unwrap_err().starts_with("invalid JSON (number out of range"));
    }

    /// The bound holds while the value is built: the read stops at the first value past it
    /// (a million-element list is refused having looked at its first few values only, which
    /// a counter of what the visitor built shows).
    #[test]
    fn a_read_stops_at_the_bound() {
        /// The text, handed out a byte at a time, counting how much was asked for.
        struct Counted<'a>(&'a [u8], std::rc::Rc<Cell<usize>>);
        impl std::io::Read for Counted<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let at = self.1.get();
                let n = buf.len().min(1).min(self.0.len() - at);
                buf[..n].copy_from_slice(&self.0[at..at + n]);
                self.1.set(at + n);
                Ok(n)
            }
        }
        let text = format!("[{}0]", "0,".repeat(1_000_000));
        let read = std::rc::Rc::new(Cell::new(0));
        let budget = Budget::new(10, MAX_OUTPUT_DEPTH);
        let mut de = serde_json::Deserializer::from_reader(Counted(text.as_bytes(), read.clone()));
        assert!(Seed(&budget).deserialize(&mut de).is_err());
        assert_eq!(budget.left.get(), 0, "all ten were spent");
        assert!(matches!(budget.exceeded.take(), Some(DecodeError::TooManyValues(10))));
        // Where serde_json stopped reading: at the eleventh value, of the 2 MB.
        assert!(read.get() <= 22, "{} bytes read", read.get());
    }

    /// The forms that build nothing count as the read does.
    #[cfg(feature = "mcp")]
    #[test]
    fn counting_without_building_agrees_with_the_read() {
        let deep = format!("{}{}", "[".repeat(MAX_OUTPUT_DEPTH + 1), "]".repeat(MAX_OUTPUT_DEPTH + 1));
        for text in [r#"{"a": null, "b": ["x", {"c": 1.5}]}"#, "[]", "0", &deep, "[1,", "{\"a\": tru}"] {
            for max in [0, 1, 3, 6, 7, usize::MAX] {
                let read = from_json_within(text.as_bytes(), max).map_err(|e| e.to_string());
                let tallied = json_within(text.as_bytes(), max).map_err(|e| e.to_string());
                match &read {
                    Ok(_) => assert_eq!(tallied, Ok(true), "{text} within {max}"),
                    Err(e) if e.starts_with("invalid JSON") => assert_eq!(tallied, Ok(false), "{text}"),
                    Err(e) => assert_eq!(tallied.as_ref().err(), Some(e), "{text} within {max}"),
                }
                if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
                    let walked = json_value_within(&json, max).map_err(|e| e.to_string());
                    assert_eq!(walked, read.as_ref().map(|_| ()).map_err(Clone::clone), "{text} within {max}");
                }
            }
        }
    }

    /// The count of a stream of bytes agrees with the read's, wherever the text is cut.
    #[cfg(feature = "mcp")]
    #[test]
    fn a_stream_of_bytes_is_counted_as_the_read_counts() {
        let texts = [
            r#"{"a": null, "b": ["x", {"c": 1.5, "d": "],\\\",[{"}], "e": {}, "f": [[], [1]]}"#,
            "[]",
            " 0 ",
            "[0,0,0]",
            r#"["a\\", "b"]"#,
            "true",
        ];
        for text in texts {
            let values = (0..64).find(|&max| from_json_within(text.as_bytes(), max).is_ok()).expect("a small value");
            for (max, fits) in [(values, true), (values.saturating_sub(1), values == 0)] {
                let mut stream = ValueStream::new(max);
                let counted = text.bytes().try_for_each(|b| stream.byte(b));
                assert_eq!(counted.is_ok(), fits, "{text}: {values} values, within {max}");
            }
        }
        let deep = "[".repeat(MAX_OUTPUT_DEPTH + 1);
        let mut stream = ValueStream::new(usize::MAX);
        assert!(matches!(deep.bytes().try_for_each(|b| stream.byte(b)), Err(DecodeError::TooDeep(128))));
        stream.reset();
        assert!(stream.byte(b'1').is_ok(), "a reset starts a new text");
    }

    /// `Deserialize` for a value has no budget, and serde_json's own depth bound.
    #[test]
    fn the_unbudgeted_read_is_the_same_visitor() {
        let v: Value = serde_json::from_str(r#"{"a": [1, 2.5, "s", null, true]}"#).expect("json");
        assert_eq!(v.to_string(), r#"{"a":[1,2.5,"s",null,true]}"#);
        let big = serde_json::from_str::<Value>("18446744073709551615").expect("a u64");
        assert!(matches!(big, Value::Float(_)), "{big:?}");
    }

    #[test]
    fn empty_objects_share_one_map_and_others_are_shrunk() {
        let v = from_json_within(br#"[{}, {}, {"a": 1}]"#, 10).expect("read");
        let items = v.as_list().expect("a list");
        assert!(items[0].same_as(&items[1]), "one map for every `{{}}`");
        assert_eq!(items[2].as_object().map(Map::capacity), Some(1), "no room past its one member");
        assert_eq!(v.to_string(), r#"[{},{},{"a":1}]"#);
    }

    #[test]
    fn values_are_counted_as_read() {
        let text = r#"{"a": null, "b": ["x", {"c": 1.5}], "d": {}}"#;
        let v = from_json_within(text.as_bytes(), 100).expect("read");
        assert_eq!(values_in(&v, 100), 7);
        assert!(from_json_within(text.as_bytes(), 6).is_err(), "the read counts 7 too");
        assert_eq!(values_in(&v, 3), 3, "counted up to the limit");
    }

    #[test]
    fn the_size_of_a_value() {
        // 24 bytes: a `SmolStr` (23 inline bytes and a tag), whose spare tags hold the
        // other variants. `docs/security.md` counts on it.
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }
}
