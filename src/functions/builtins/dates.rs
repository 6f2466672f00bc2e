//! Dates and times: `datetime_now` (reads the runner's clock) and `format_datetime`.

use super::*;

/// Text that refuses to grow past `max` bytes.
struct CappedText {
    text: String,
    max: usize,
    over: bool,
}

impl std::fmt::Write for CappedText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.max {
            self.over = true;
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

fn format_millis(millis: i64, args: &Args<'_>, fmt_param: usize, max_len: usize) -> R {
    let format = str_param(args, fmt_param, "format")?;
    let Some(t) = chrono::DateTime::from_timestamp_millis(millis) else {
        return Err(FnError::new(Code::RuntimeArgument, "timestamp out of range").into());
    };
    match format {
        "iso" => Ok(Value::str(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))),
        "unix" => Ok(Value::Int(millis.div_euclid(1000))),
        pattern if fmt_param > 0 => {
            use chrono::format::{Item, StrftimeItems};
            use std::fmt::Write;
            if StrftimeItems::new(pattern).any(|i| matches!(i, Item::Error)) {
                let shown: String = pattern.chars().take(64).collect();
                let more = if shown.len() < pattern.len() { "…" } else { "" };
                return Err(FnError::arg(
                    Code::RuntimeArgument,
                    fmt_param,
                    format!("invalid strftime pattern {shown:?}{more}"),
                )
                .into());
            }
            // A pattern can expand many times over (`%c` is 24 bytes): rendered into text
            // that refuses to pass the string limit.
            let mut out = CappedText { text: String::new(), max: max_len, over: false };
            if write!(out, "{}", t.format_with_items(StrftimeItems::new(pattern))).is_err() {
                if !out.over {
                    return Err(
                        FnError::arg(Code::RuntimeArgument, fmt_param, "the pattern cannot format this date").into()
                    );
                }
                return Err(FnError::new(
                    Code::StringLimit,
                    format!("the formatted date exceeds the string limit of {max_len} bytes"),
                )
                .into());
            }
            Ok(Value::Str(SmolStr::from(out.text)))
        }
        other => Err(FnError::arg(
            Code::RuntimeArgument,
            fmt_param,
            format!("`format` must be \"iso\" or \"unix\", found {}", crate::functions::quoted(other)),
        )
        .into()),
    }
}

/// `datetime_now`: the signature; the body follows.
pub(super) fn datetime_now() -> Function {
    f(
        Signature::new(
            "datetime_now",
            vec![Param::optional("format", Type::Str, Value::str("iso")).one_of(&["iso", "unix"])],
            ReturnRule::Computed(|_| Type::Str.union(Type::Int)),
            "the clock's time: RFC 3339 (`iso`) or Unix seconds (`unix`)",
        ),
        datetime_now_body,
    )
}

fn datetime_now_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let millis = r.clock().now_millis();
    format_millis(millis, args, 0, r.limits().max_string_len)
}

/// `format_datetime`: the signature; the body follows.
pub(super) fn format_datetime() -> Function {
    f(
        Signature::new(
            "format_datetime",
            vec![Param::required("value", Type::Any), Param::optional("format", Type::Str, Value::str("iso"))],
            ReturnRule::Computed(|_| Type::Str.union(Type::Int)),
            "a timestamp (Unix seconds or RFC 3339) as `iso`, `unix` or a strftime pattern",
        ),
        format_datetime_body,
    )
}

fn format_datetime_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let millis = match args.get(0) {
        Value::Int(s) => s.checked_mul(1000),
        Value::Float(s) => {
            let m = s * 1000.0;
            (m.abs() < 9.0e15).then_some(m as i64)
        }
        Value::Str(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis()),
        other => return Err(type_err(0, "value", "Unix seconds or an RFC 3339 string", other)),
    };
    let Some(millis) = millis else {
        return Err(FnError::arg(
            Code::RuntimeArgument,
            0,
            format!(
                "{} is not a timestamp",
                match args.get(0) {
                    Value::Str(s) => crate::functions::quoted(s),
                    other => other.to_string(),
                }
            ),
        )
        .into());
    };
    format_millis(millis, args, 1, r.limits().max_string_len)
}
