//! Numbers: sums, rounding, extremes, the mean and conversion to a number.

use super::*;

fn num_or_null() -> Type {
    Type::Number.union(Type::Null)
}

fn projected_element(a: &[Type]) -> Type {
    let t = if a[1] == Type::Never { a[0].element() } else { a[1].clone() };
    t.union(Type::Null)
}

/// Adds `v` to a running integer/float sum; `Err` describes an unsummable value.
fn add_number(int_acc: &mut i64, float_acc: &mut Option<f64>, v: &Value) -> Result<(), ()> {
    let n = match v {
        Value::Null => return Ok(()),
        Value::Bool(b) => i64::from(*b),
        Value::Int(n) => *n,
        Value::Float(x) => {
            *float_acc = Some(float_acc.unwrap_or(*int_acc as f64) + x);
            return Ok(());
        }
        _ => return Err(()),
    };
    match float_acc {
        Some(f) => *f += n as f64,
        None => match int_acc.checked_add(n) {
            Some(s) => *int_acc = s,
            // Beyond i64: the sum continues as a float (SPEC §1).
            None => *float_acc = Some(*int_acc as f64 + n as f64),
        },
    }
    Ok(())
}

fn number_result(int_acc: i64, float_acc: Option<f64>) -> R {
    match float_acc {
        None => Ok(Value::Int(int_acc)),
        Some(f) => {
            Value::float(f).ok_or_else(|| FnError::new(Code::NumberOverflow, "the sum is not a finite number").into())
        }
    }
}

/// An integer rounded half away from zero to a multiple of `10^-digits` (`digits` in
/// -15..=-1), exactly: in `i128`, where neither the multiple nor the step can overflow. A
/// result beyond `i64` continues as the nearest float, as integer arithmetic does.
pub(crate) fn round_integer(i: i64, digits: i64) -> Value {
    let step = 10i128.pow(u32::try_from(-digits).unwrap_or(0).min(15));
    let x = i128::from(i);
    let (q, r) = (x / step, x % step);
    let q = if 2 * r.abs() >= step { q + x.signum() } else { q };
    let rounded = q * step;
    i64::try_from(rounded).map_or(Value::Float(rounded as f64), Value::Int)
}

fn extreme(r: &mut dyn Caller, args: &Args<'_>, want: Ordering) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut best: Option<Cow<'_, Value>> = None;
    for (i, x) in xs.iter().enumerate() {
        let v = project(r, args, 1, x, i)?;
        if v.is_null() {
            continue;
        }
        best = match best {
            Some(b) if metered(r, |budget| v.cmp_within(&b, budget))? != want => Some(b),
            _ => Some(v),
        };
    }
    Ok(best.map(Cow::into_owned).unwrap_or_default())
}

/// `sum`: the signature; the body follows.
pub(super) fn sum() -> Function {
    f(
        Signature::new(
            "sum",
            vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
            ReturnRule::Computed(|a| {
                let t = if a[1] == Type::Never { a[0].element() } else { a[1].clone() };
                if t.fits(&Type::Int.union(Type::Bool).union(Type::Null)) == crate::types::Fit::Yes {
                    Type::Int
                } else {
                    Type::Number
                }
            }),
            "the sum of numbers (true counts 1, false 0, null is skipped)",
        ),
        sum_body,
    )
}

fn sum_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    sum_core(r, args, list_arg(args, 0, "array")?.iter())
}

/// `sum`'s loop, over the elements of its list or of a fused producer's.
pub(in crate::functions) fn sum_core<'x>(
    r: &mut dyn Caller,
    args: &Args<'_>,
    xs: impl Iterator<Item = &'x Value>,
) -> R {
    let (mut acc, mut facc) = (0i64, None);
    for (i, x) in xs.enumerate() {
        let v = project(r, args, 1, x, i)?;
        if add_number(&mut acc, &mut facc, &v).is_err() {
            return Err(FnError::element(Code::RuntimeType, 0, i, format!("cannot add {:#} to a sum", v.kind())).into());
        }
    }
    number_result(acc, facc)
}

/// `to_number`: the signature; the body follows.
pub(super) fn to_number() -> Function {
    f(
        Signature::new(
            "to_number",
            vec![Param::required("value", Type::Any)],
            ReturnRule::Computed(|a| if a[0] == Type::Null { Type::Null } else { Type::Number }),
            "a number from a number, numeric string or boolean",
        ),
        to_number_body,
    )
}

fn to_number_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        v @ (Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
        Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
        Value::Str(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            match t.parse::<f64>().ok().and_then(Value::float) {
                Some(v)
                    if !t.is_empty() && !t.eq_ignore_ascii_case("nan") && !t.to_ascii_lowercase().contains("inf") =>
                {
                    Ok(v)
                }
                _ => {
                    let shown: String = s.chars().take(64).collect();
                    let more = if shown.len() < s.len() { "…" } else { "" };
                    Err(FnError::arg(Code::RuntimeArgument, 0, format!("{shown:?}{more} is not a number")).into())
                }
            }
        }
        other => Err(type_err(0, "value", "a number, string or boolean", other)),
    }
}

/// `round`: the signature; the body follows.
pub(super) fn round() -> Function {
    f(
        Signature::new(
            "round",
            vec![Param::required("value", num_or_null()), Param::optional("digits", Type::Int, Value::Int(0))],
            fixed(num_or_null()),
            "rounded half away from zero to `digits` decimals",
        ),
        round_body,
    )
}

fn round_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    let digits = int_param(args, 1, "digits")?.clamp(-15, 15);
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        Value::Int(i) if digits >= 0 => Ok(Value::Int(*i)),
        Value::Int(i) => Ok(round_integer(*i, digits)),
        v @ Value::Float(_) => {
            let x = v.as_f64().unwrap_or(0.0);
            let scale = 10f64.powi(digits as i32);
            let rounded = (x * scale).round() / scale;
            if digits <= 0 && rounded.abs() < 9.0e15 {
                Ok(Value::Int(rounded as i64))
            } else {
                Value::float(rounded).ok_or_else(|| FnError::new(Code::NumberOverflow, "rounding overflowed").into())
            }
        }
        other => Err(type_err(0, "value", "a number", other)),
    }
}

/// `min`: the signature; the body follows.
pub(super) fn min() -> Function {
    f(
        Signature::new(
            "min",
            vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
            ReturnRule::Computed(projected_element),
            "the smallest value by the total order (null skipped, null when empty)",
        ),
        min_body,
    )
}

fn min_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    extreme(r, args, Ordering::Less)
}

/// `max`: the signature; the body follows.
pub(super) fn max() -> Function {
    f(
        Signature::new(
            "max",
            vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
            ReturnRule::Computed(projected_element),
            "the largest value by the total order (null skipped, null when empty)",
        ),
        max_body,
    )
}

fn max_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    extreme(r, args, Ordering::Greater)
}

/// `avg`: the signature; the body follows.
pub(super) fn avg() -> Function {
    f(
        Signature::new(
            "avg",
            vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
            fixed(num_or_null()),
            "the mean of the numbers (null skipped, null when empty)",
        ),
        avg_body,
    )
}

fn avg_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let (mut total, mut n) = (0f64, 0usize);
    for (i, x) in xs.iter().enumerate() {
        let v = project(r, args, 1, x, i)?;
        match &*v {
            Value::Null => {}
            Value::Bool(b) => {
                total += f64::from(u8::from(*b));
                n += 1;
            }
            Value::Int(_) | Value::Float(_) => {
                total += v.as_f64().unwrap_or(0.0);
                n += 1;
            }
            other => {
                return Err(
                    FnError::element(Code::RuntimeType, 0, i, format!("cannot average {:#}", other.kind())).into()
                )
            }
        }
    }
    if n == 0 {
        return Ok(Value::Null);
    }
    Value::float(total / n as f64)
        .ok_or_else(|| FnError::new(Code::NumberOverflow, "the mean is not a finite number").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_number_promotes_on_overflow() {
        let (mut a, mut f) = (i64::MAX, None);
        add_number(&mut a, &mut f, &Value::Int(1)).unwrap();
        assert_eq!(number_result(a, f).unwrap(), Value::Float(i64::MAX as f64 + 1.0));
    }
}
