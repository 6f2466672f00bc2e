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
    /// Compact JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}
