//! JSON text: `json_parse` and `json_stringify`.

use super::*;

fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map_or(msg, |i| &msg[..i])
}

/// `json_parse`: the signature; the body follows.
pub(super) fn json_parse() -> Function {
    f(
        Signature::new(
            "json_parse",
            vec![Param::required("json_string", Type::Any)],
            ReturnRule::Computed(|a| {
                if matches!(a[0], Type::Str | Type::Enum(_) | Type::Any) {
                    Type::Any
                } else {
                    a[0].clone()
                }
            }),
            "parses a JSON string; a non-string is returned unchanged",
        ),
        json_parse_body,
    )
}

fn json_parse_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let s = match args.get(0) {
        Value::Str(s) => s,
        other => return Ok(other.clone()),
    };
    // Reading JSON into values costs about a unit of fuel (an instruction's time) per 4
    // bytes of text: a 16 MiB text is 4 Mi units (at a unit per 64 bytes, a plan of 252
    // parses spent a run's deadline of CPU on 8 M units: outside round 11, finding 2).
    r.charge(s.len() / 4)?;
    // At most as many values as the memory left holds at the cheapest value's cost (a list's
    // element), counted while they are built: a parse never builds past the budget before
    // it is charged (`{"a":1}`, 8 bytes of text, takes about 250 bytes: at 4 bytes a byte
    // of text, eight parses of a million such objects held 2.3 GB against a run's 512 MiB).
    let left = r.alloc_left();
    let max_values = usize::try_from(left / crate::value::LIST_ELEMENT_BYTES as u64).unwrap_or(usize::MAX).max(1);
    let v = crate::value::from_json_within(s.as_bytes(), max_values).map_err(|e| match e {
        crate::value::DecodeError::TooManyValues(_) => FnError::new(
            Code::MemoryLimit,
            format!("the parsed JSON holds more values than the memory left to the evaluation ({left} bytes) holds"),
        ),
        // As serde_json's own bound said it (docs/language.md): text nested past 128 levels.
        crate::value::DecodeError::TooDeep(max) => FnError::arg(
            Code::InvalidJson,
            0,
            format!("invalid JSON: lists or objects nested deeper than {max} levels"),
        ),
        crate::value::DecodeError::Json(e) => FnError::arg(
            Code::InvalidJson,
            0,
            format!("invalid JSON at line {} column {}: {}", e.line(), e.column(), strip_position(&e.to_string())),
        ),
    })?;
    // (Measured up to a byte past what is left, so that a value past it is refused.)
    r.alloc(usize::try_from(v.alloc_bytes_within(left.saturating_add(1))).unwrap_or(usize::MAX))?;
    if v.depth() > r.limits().max_depth {
        return Err(too_deep(r.limits().max_depth).into());
    }
    if let Some(len) = longest_list_past(&v, r.limits().max_list_len) {
        return Err(FnError::new(
            Code::ListLimit,
            format!("the parsed JSON holds a list of {len} elements, more than {}", r.limits().max_list_len),
        )
        .into());
    }
    Ok(v)
}

fn too_deep(max_depth: usize) -> FnError {
    FnError::new(Code::DepthLimit, format!("parsed JSON nests deeper than {max_depth} levels"))
}

/// The length of a list in `v` longer than `max`, if there is one (each list and object
/// looked at once; `v` was just parsed, so nothing in it is shared).
fn longest_list_past(v: &Value, max: usize) -> Option<usize> {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::List(items) if items.len() > max => return Some(items.len()),
            Value::List(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    None
}

/// `json_stringify`: the signature; the body follows.
pub(super) fn json_stringify() -> Function {
    f(
        Signature::new(
            "json_stringify",
            vec![Param::required("value", Type::Any)],
            fixed(Type::Str),
            "compact JSON text",
        ),
        json_stringify_body,
    )
}

fn json_stringify_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let text = args.get(0).json_within(r.limits().max_string_len).ok_or_else(|| text_too_long(&*r))?;
    r.charge(text.len() / 64)?;
    r.alloc(text.len())?;
    Ok(Value::Str(SmolStr::from(text)))
}
