//! Validation at the boundary (SPEC §7): a callee's arguments against its declared
//! `arguments` before the call, its response against its declared `responses` after, and a
//! composite's result against its own `responses`.
//!
//! The static analysis already refuses what cannot succeed; these checks catch what only
//! the data can show (a REF to a step that returned a string where a number was declared).
//! A parameter without `type_name` takes anything; an optional parameter may be absent or
//! `null`; a required one must be present and not `null`. A value of the declared type
//! must also satisfy the declaration's constraints (`enum`, `minimum`, `pattern`, …:
//! [`crate::tool::Constraints::violation`]); the message names the constraint.
//!
//! Before the check, [`with_defaults`] fills in the `default` of every declared argument
//! that is absent or `null` (a root's own arguments at the start of a run, a callee's
//! before the call), so the value the tool receives, and the trace, hold it.

use crate::tool::{Param, TypeName};
use crate::value::Value;

/// A declaration's `default`, when it has one that is not `null` (a `null` default stands
/// for nothing: the parameter stays absent).
pub(crate) fn default_of(p: &Param) -> Option<&Value> {
    p.constraints.default.as_ref().map(|d| &d.node).filter(|v| !v.is_null())
}

#[cfg(feature = "engine")]
/// `value` with the `default` of each of `params` put in where the key is absent or `null`.
/// Anything but an object is returned as it is (the check that follows refuses it).
pub(crate) fn with_defaults(params: &[Param], value: Value) -> Value {
    use smol_str::SmolStr;

    let Some(map) = value.as_object() else { return value };
    let missing = |p: &&Param| map.get(p.name.node.as_str()).is_none_or(Value::is_null);
    if !params.iter().filter(|p| default_of(p).is_some()).any(|p| missing(&p)) {
        return value;
    }
    let mut out = map.clone();
    for p in params {
        if let Some(d) = default_of(p) {
            if missing(&p) {
                out.insert(SmolStr::new(p.name.node.as_str()), d.clone());
            }
        }
    }
    Value::object(out)
}

#[cfg(feature = "engine")]
/// What is checked: the words messages use.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Side {
    /// Declared `arguments`.
    Arguments,
    /// Declared `responses`.
    Responses,
}

#[cfg(feature = "engine")]
/// Checks `value` (an object, or anything else when nothing is declared) against `params`;
/// the first problem, naming the field and the tool.
pub(crate) fn check(params: &[Param], value: &Value, side: Side, tool: &str) -> Result<(), String> {
    if params.is_empty() {
        return Ok(());
    }
    let noun = match side {
        Side::Arguments => "argument",
        Side::Responses => "response",
    };
    let Some(map) = value.as_object() else {
        return Err(format!("`{tool}` declares {noun}s, so it takes an object, and this is {:#}", value.kind()));
    };
    for p in params {
        let name = p.name.node.as_str();
        let null = Value::Null;
        let v = map.get(name).unwrap_or(&null);
        if v.is_null() {
            if p.is_required() {
                let what = if map.contains_key(name) { "is null" } else { "is missing" };
                return Err(format!("required {noun} `{name}` of `{tool}` {what}"));
            }
            continue;
        }
        let ty = p.type_or_any();
        if !fits(v, &ty) {
            return Err(format!("{noun} `{name}` of `{tool}` must be {}, and it is {:#}", a_type(&ty), v.kind()));
        }
        if let Some(why) = p.constraints.violation(v) {
            return Err(format!("{noun} `{name}` of `{tool}` {why}, and it is {}", shown(v)));
        }
    }
    Ok(())
}

/// A value in a message: its JSON, cut to 80 characters.
pub(crate) fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// Whether a non-null value has a declared type.
pub(crate) fn fits(v: &Value, ty: &TypeName) -> bool {
    match ty {
        TypeName::Any => true,
        TypeName::String => matches!(v, Value::Str(_)),
        TypeName::Number => matches!(v, Value::Int(_) | Value::Float(_)),
        TypeName::Integer => match v {
            Value::Int(_) => true,
            Value::Float(f) => f.fract() == 0.0,
            _ => false,
        },
        TypeName::Boolean => matches!(v, Value::Bool(_)),
        TypeName::Object => matches!(v, Value::Object(_)),
        TypeName::File => match v {
            Value::Str(_) => true,
            Value::Object(m) => matches!(m.get("path"), Some(Value::Str(_))),
            _ => false,
        },
        TypeName::List(elem) => match (v, elem) {
            (Value::List(_), None) => true,
            (Value::List(items), Some(t)) => items.iter().all(|i| i.is_null() || fits(i, t)),
            _ => false,
        },
    }
}

#[cfg(feature = "engine")]
/// "a string", "an object", "a list<number>".
pub(crate) fn a_type(t: &TypeName) -> String {
    match t {
        TypeName::Object | TypeName::Integer | TypeName::Any => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn types() {
        assert!(fits(&v("1.0"), &TypeName::Integer));
        assert!(!fits(&v("1.5"), &TypeName::Integer));
        assert!(fits(&v(r#"{"path": "a/b"}"#), &TypeName::File));
        assert!(!fits(&v(r#"{"name": "a/b"}"#), &TypeName::File));
        let strings = TypeName::List(Some(Box::new(TypeName::String)));
        assert!(fits(&v(r#"["a", null]"#), &strings));
        assert!(!fits(&v(r#"["a", 1]"#), &strings));
        #[cfg(feature = "engine")]
        assert_eq!(a_type(&strings), "a list<string>");
    }
}
