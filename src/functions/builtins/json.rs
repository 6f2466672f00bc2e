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
    r.charge(s.len() / 64)?;
    // The parsed value takes about four times its text (16-byte slots for 2-byte elements).
    r.alloc(s.len().saturating_mul(4))?;
    match serde_json::from_str::<Value>(s) {
        Ok(v) => {
            if v.depth() > r.limits().max_depth {
                return Err(FnError::new(
                    Code::DepthLimit,
                    format!("parsed JSON nests deeper than {} levels", r.limits().max_depth),
                )
                .into());
            }
            Ok(v)
        }
        Err(e) => Err(FnError::arg(
            Code::InvalidJson,
            0,
            format!("invalid JSON at line {} column {}: {}", e.line(), e.column(), strip_position(&e.to_string())),
        )
        .into()),
    }
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
