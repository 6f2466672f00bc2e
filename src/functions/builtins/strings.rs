//! Strings: joining, splitting, case, search and conversion to text.

use super::*;

fn str_rule() -> ReturnRule {
    ReturnRule::Computed(|a| if matches!(a[0], Type::Str | Type::Enum(_)) { Type::Str } else { str_or_null() })
}

/// Runs a string function with `null` passing through.
fn on_str(args: &Args<'_>, f: impl FnOnce(&str) -> Result<Value, Failure>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        Value::Str(s) => f(s),
        other => Err(type_err(0, "string", "a string", other)),
    }
}

/// `join`: the signature; the body follows.
pub(super) fn join() -> Function {
    f(
        Signature::new(
            "join",
            vec![array(), Param::optional("separator", Type::Str, Value::str(""))],
            fixed(Type::Str),
            "the elements as text, separated",
        ),
        join_body,
    )
}

/// The most `join` reserves for its text before writing it.
const JOIN_ROOM_MAX: usize = 1 << 20;

fn join_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let sep = str_param(args, 1, "separator")?;
    let max = r.limits().max_string_len;
    // Written up to the string limit or the memory left, whichever is less: a text that
    // would pass the memory left fails before it is written (`past_cap`), not once it is.
    let cap = max.min(usize::try_from(r.alloc_left()).unwrap_or(usize::MAX));
    // Room for short texts up front (names, ids: a few doublings saved): a few bytes for
    // each element the list already holds, never more than may be written or 1 MiB (a list
    // of a million nulls joins to nothing; a text longer than that grows as it is written).
    let room = xs.len().saturating_mul(sep.len().saturating_add(8));
    let mut out = String::with_capacity(room.min(cap).min(JOIN_ROOM_MAX));
    for (i, x) in xs.iter().enumerate() {
        let at = out.len();
        if i > 0 {
            // A separator counts as any text does: between elements that add nothing
            // (`null`s, empty strings) a million of them would otherwise pass every check.
            if sep.len() > cap.saturating_sub(out.len()) {
                return Err(past_cap(r, xs, sep, i, at));
            }
            out.push_str(sep);
        }
        // Strings (names, ids: most of what is joined) appended in place; the rest as
        // `join_text_within` writes them.
        if let Value::Str(s) = x {
            let s = s.as_str();
            if s.len() <= cap.saturating_sub(out.len()) {
                out.push_str(s);
                continue;
            }
        }
        if !x.join_text_within(&mut out, cap) {
            return Err(past_cap(r, xs, sep, i, at));
        }
    }
    r.charge(out.len() / 64)?;
    r.alloc(out.len())?;
    Ok(Value::Str(SmolStr::from(out)))
}

/// `join`'s error once element `i` (and the separator before it) would take its text, `at`
/// bytes long before them, past what it may write: the string limit's when the whole text is
/// longer than that limit (counted, not written), else the memory limit's, charged as the
/// written text would have been. The error a text written whole would have met.
fn past_cap(r: &mut dyn Caller, xs: &[Value], sep: &str, i: usize, at: usize) -> Failure {
    let max = r.limits().max_string_len;
    let mut len = at;
    let mut text = String::new();
    for (j, x) in xs.iter().enumerate().skip(i) {
        if j > 0 {
            len = len.saturating_add(sep.len());
        }
        let room = match max.checked_sub(len) {
            Some(room) => room,
            None => return text_too_long(&*r),
        };
        let more = match x {
            Value::Str(s) => s.len(),
            other => {
                text.clear();
                if !other.join_text_within(&mut text, room) {
                    return text_too_long(&*r);
                }
                text.len()
            }
        };
        if more > room {
            return text_too_long(&*r);
        }
        len += more;
    }
    match r.charge(len / 64).and_then(|()| r.alloc(len)) {
        Err(e) => e.into(),
        // Not reached: the text passes the memory left.
        Ok(()) => text_too_long(&*r),
    }
}

/// `starts_with`: the signature; the body follows.
pub(super) fn starts_with() -> Function {
    f(
        Signature::new(
            "starts_with",
            vec![Param::required("string", str_or_null()), Param::required("prefix", Type::Str)],
            fixed(Type::Bool),
            "whether a string starts with a prefix",
        ),
        starts_with_body,
    )
}

fn starts_with_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    let p = str_param(args, 1, "prefix")?;
    match args.get(0) {
        Value::Null => Ok(Value::Bool(false)),
        _ => on_str(args, |s| Ok(Value::Bool(s.starts_with(p)))),
    }
}

/// `ends_with`: the signature; the body follows.
pub(super) fn ends_with() -> Function {
    f(
        Signature::new(
            "ends_with",
            vec![Param::required("string", str_or_null()), Param::required("suffix", Type::Str)],
            fixed(Type::Bool),
            "whether a string ends with a suffix",
        ),
        ends_with_body,
    )
}

fn ends_with_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    let p = str_param(args, 1, "suffix")?;
    match args.get(0) {
        Value::Null => Ok(Value::Bool(false)),
        _ => on_str(args, |s| Ok(Value::Bool(s.ends_with(p)))),
    }
}

/// `lower`: the signature; the body follows.
pub(super) fn lower() -> Function {
    f(Signature::new("lower", vec![Param::required("string", str_or_null())], str_rule(), "lower case"), lower_body)
}

fn lower_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    on_str(args, |s| {
        r.alloc(s.len())?;
        Ok(Value::str(&s.to_lowercase()))
    })
}

/// `upper`: the signature; the body follows.
pub(super) fn upper() -> Function {
    f(Signature::new("upper", vec![Param::required("string", str_or_null())], str_rule(), "upper case"), upper_body)
}

fn upper_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    on_str(args, |s| {
        r.alloc(s.len())?;
        Ok(Value::str(&s.to_uppercase()))
    })
}

/// `trim`: the signature; the body follows.
pub(super) fn trim() -> Function {
    f(
        Signature::new(
            "trim",
            vec![Param::required("string", str_or_null())],
            str_rule(),
            "without surrounding whitespace",
        ),
        trim_body,
    )
}

fn trim_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    on_str(args, |s| Ok(Value::str(s.trim())))
}

/// `split`: the signature; the body follows.
pub(super) fn split() -> Function {
    f(
        Signature::new(
            "split",
            vec![Param::required("string", str_or_null()), Param::optional("separator", Type::Str, Value::str(","))],
            fixed(list_of(Type::Str)),
            "the parts between separators (`\"\"` splits into characters)",
        ),
        split_body,
    )
}

fn split_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let sep = str_param(args, 1, "separator")?;
    let max = r.limits().max_list_len;
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        _ => on_str(args, |s| {
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars().take(max + 1).map(|c| Value::str(c.encode_utf8(&mut [0; 4]))).collect()
            } else {
                s.split(sep).take(max + 1).map(Value::str).collect()
            };
            check_list_len(&*r, parts.len())?;
            // Each part is a string of its own: a slot and a small allocation.
            r.alloc(parts.len().saturating_mul(crate::ops::LIST_ELEMENT_BYTES * 2).saturating_add(s.len()))?;
            Ok(Value::list(parts))
        }),
    }
}

/// `replace`: the signature; the body follows.
pub(super) fn replace() -> Function {
    f(
        Signature::new(
            "replace",
            vec![
                Param::required("string", str_or_null()),
                Param::required("old", Type::Str),
                Param::required("new", Type::Str),
            ],
            str_rule(),
            "every occurrence of `old` replaced by `new`",
        ),
        replace_body,
    )
}

fn replace_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let old = str_param(args, 1, "old")?;
    let new = str_param(args, 2, "new")?;
    on_str(args, |s| {
        // Bound the result before building it.
        let hits = if old.is_empty() { s.chars().count() + 1 } else { s.matches(old).count() };
        let len = s.len() + hits.saturating_mul(new.len());
        check_str_len(&*r, len)?;
        r.alloc(len)?;
        Ok(Value::str(&s.replace(old, new)))
    })
}

/// `to_string`: the signature; the body follows.
pub(super) fn to_string() -> Function {
    f(
        Signature::new(
            "to_string",
            vec![Param::required("value", Type::Any)],
            fixed(Type::Str),
            "text: strings as-is, others as JSON",
        ),
        to_string_body,
    )
}

fn to_string_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let text = key_text(r, args.get(0))?;
    r.alloc(text.len())?;
    Ok(Value::Str(text))
}
