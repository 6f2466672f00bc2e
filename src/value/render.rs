//! Text forms: compact JSON (`Display`) and the renderings of `join` and string keys.

use std::fmt;

use super::{SmolStr, Value};

impl Value {
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

impl fmt::Display for Value {
    /// Compact JSON, written with a stack on the heap: a value nested a million levels deep
    /// (built by a host) renders without overflowing the stack.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::new();
        write_json(self, &mut out).map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("Null"),
            Value::Bool(b) => f.debug_tuple("Bool").field(b).finish(),
            Value::Int(i) => f.debug_tuple("Int").field(i).finish(),
            Value::Float(x) => f.debug_tuple("Float").field(x).finish(),
            Value::Str(s) => f.debug_tuple("Str").field(s).finish(),
            Value::List(_) => write!(f, "List({self})"),
            Value::Object(_) => write!(f, "Object({self})"),
        }
    }
}

/// A list or object being written, and whether its first member is still to come.
enum Open<'a> {
    List(std::slice::Iter<'a, Value>, bool),
    Object(indexmap::map::Iter<'a, SmolStr, Value>, bool),
}

/// Writes `v` as compact JSON, exactly as `serde_json` does, without recursion; stops at
/// the first error of `out`.
pub(super) fn write_json<W: std::io::Write>(v: &Value, out: &mut W) -> std::io::Result<()> {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut next = Some(v);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::List(l) => {
                    out.write_all(b"[")?;
                    stack.push(Open::List(l.iter(), true));
                }
                Value::Object(o) => {
                    out.write_all(b"{")?;
                    stack.push(Open::Object(o.iter(), true));
                }
                // Scalars and strings: no nesting, so serde_json's own writer.
                scalar => serde_json::to_writer(&mut *out, scalar).map_err(std::io::Error::other)?,
            }
        }
        let Some(top) = stack.last_mut() else { return Ok(()) };
        match top {
            Open::List(items, first) => match items.next() {
                Some(x) => {
                    if !std::mem::replace(first, false) {
                        out.write_all(b",")?;
                    }
                    next = Some(x);
                }
                None => {
                    out.write_all(b"]")?;
                    stack.pop();
                }
            },
            Open::Object(entries, first) => match entries.next() {
                Some((k, x)) => {
                    if !std::mem::replace(first, false) {
                        out.write_all(b",")?;
                    }
                    serde_json::to_writer(&mut *out, k.as_str()).map_err(std::io::Error::other)?;
                    out.write_all(b":")?;
                    next = Some(x);
                }
                None => {
                    out.write_all(b"}")?;
                    stack.pop();
                }
            },
        }
    }
}
