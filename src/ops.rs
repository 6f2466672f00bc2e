//! The operators' semantics on values (SPEC §4.3), shared by the VM, the reference
//! evaluator and constant folding, so all three agree by construction.

use crate::diagnostic::Code;
use crate::runtime::Limits;
use crate::syntax::ast::BinaryOp;
use crate::value::{cmp_numbers, SmolStr, Value};

/// Why an operator failed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpError {
    /// The stable code.
    pub code: Code,
    /// What went wrong.
    pub message: String,
    /// Which operand is at fault: 0 left, 1 right, `None` both or neither.
    pub operand: Option<u8>,
}

fn err(code: Code, message: String, operand: Option<u8>) -> OpError {
    OpError { code, message, operand }
}

/// Applies a non-short-circuit binary operator; `limits` bound the strings and lists `+`
/// builds.
pub(crate) fn binary(op: BinaryOp, a: &Value, b: &Value, limits: &Limits) -> Result<Value, OpError> {
    use BinaryOp::*;
    match op {
        Eq => Ok(Value::Bool(a == b)),
        Ne => Ok(Value::Bool(a != b)),
        Lt | Le | Gt | Ge => compare(op, a, b),
        Add => add(a, b, limits),
        Sub | Mul | Div | Rem => arith(op, a, b),
        // Short-circuit operators are compiled to jumps; as plain functions they still
        // give the right answer.
        And => Ok(Value::Bool(a.truthy() && b.truthy())),
        Or => Ok(Value::Bool(a.truthy() || b.truthy())),
    }
}

/// Fuel for a value `+` built, by the convention the built-ins follow for what they
/// allocate (`range`, `join`, `flatten`, `json_parse`): a unit per 8 list elements or object
/// entries, a unit per 64 string bytes. Without it one `+` could build a million-element list
/// for one unit, and a `map` of such additions could fill memory long before the fuel ran out.
pub(crate) fn build_cost(v: &Value) -> u64 {
    let units = match v {
        Value::Str(s) => s.len() / 64,
        Value::List(l) => l.len() / 8,
        Value::Object(o) => o.len() / 8,
        _ => 0,
    };
    units as u64
}

/// Fuel for comparing `a` with `b` (`==`, `!=`, `<`…) beyond the operator's own unit: two
/// strings compare byte by byte, a unit per 64 bytes of the shorter, so comparing a long
/// string shared a million times costs what reading it does (docs/security.md, round 10d).
/// Lists and objects are compared by the metered walk instead.
#[inline]
pub(crate) fn compare_cost(a: &Value, b: &Value) -> u64 {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => (x.len().min(y.len()) / 64) as u64,
        _ => 0,
    }
}

// The cost of values built, in bytes (the memory limit's and a run's budget's): defined
// beside the values, whose measure of what a run holds uses it too.
pub(crate) use crate::value::{
    build_bytes, list_bytes, object_bytes, LIST_BYTES, LIST_ELEMENT_BYTES, OBJECT_ENTRY_BYTES,
};

/// The error for a spent memory budget.
pub(crate) fn memory_error(limits: &crate::Limits) -> String {
    format!("evaluation built more values than the memory limit allows ({} bytes)", limits.max_alloc_bytes)
}

/// `<`, `<=`, `>`, `>=`: numbers with numbers, strings with strings; `null` on either side
/// is `false`.
pub(crate) fn compare(op: BinaryOp, a: &Value, b: &Value) -> Result<Value, OpError> {
    let ord = match (a, b) {
        (Value::Null, _) | (_, Value::Null) => return Ok(Value::Bool(false)),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => cmp_numbers(a, b),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        _ => {
            // Neither side is "the" wrong one; the evaluator reports whichever it can place.
            let operand = None;
            return Err(err(
                Code::RuntimeType,
                format!("cannot compare {:#} with {:#} using `{}`", a.kind(), b.kind(), op.symbol()),
                operand,
            ));
        }
    };
    use std::cmp::Ordering::*;
    Ok(Value::Bool(match op {
        BinaryOp::Lt => ord == Less,
        BinaryOp::Le => ord != Greater,
        BinaryOp::Gt => ord == Greater,
        _ => ord != Less,
    }))
}

fn add(a: &Value, b: &Value, limits: &Limits) -> Result<Value, OpError> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            Ok(x.checked_add(*y).map_or_else(|| Value::Float(*x as f64 + *y as f64), Value::Int))
        }
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            finite(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0))
        }
        (Value::Str(x), Value::Str(y)) => {
            let len = within(x.len() + y.len(), limits.max_string_len, Code::StringLimit, "string", "bytes")?;
            let mut s = String::with_capacity(len);
            s.push_str(x);
            s.push_str(y);
            Ok(Value::Str(SmolStr::from(s)))
        }
        (Value::List(x), Value::List(y)) => {
            let len = within(x.len() + y.len(), limits.max_list_len, Code::ListLimit, "list", "elements")?;
            let mut v = Vec::with_capacity(len);
            v.extend(x.iter().cloned());
            v.extend(y.iter().cloned());
            Ok(Value::list(v))
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut m = (**x).clone();
            for (k, v) in y.iter() {
                m.insert(k.clone(), v.clone());
            }
            Ok(Value::object(m))
        }
        _ => Err(err(
            Code::RuntimeType,
            format!("cannot add {:#} and {:#}", a.kind(), b.kind()),
            blame(a, b, |v| {
                matches!(v, Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::List(_) | Value::Object(_))
            }),
        )),
    }
}

/// `len` when it is within `max`, else the limit's error.
fn within(len: usize, max: usize, code: Code, what: &str, unit: &str) -> Result<usize, OpError> {
    if len > max {
        return Err(err(code, format!("{what} of {len} {unit} exceeds the limit of {max}"), None));
    }
    Ok(len)
}

fn arith(op: BinaryOp, a: &Value, b: &Value) -> Result<Value, OpError> {
    let is_num = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_));
    if !is_num(a) || !is_num(b) {
        return Err(err(
            Code::RuntimeType,
            format!("`{}` needs two numbers, found {:#} and {:#}", op.symbol(), a.kind(), b.kind()),
            if !is_num(a) && is_num(b) {
                Some(0)
            } else if is_num(a) {
                Some(1)
            } else {
                None
            },
        ));
    }
    match (op, a, b) {
        (BinaryOp::Div | BinaryOp::Rem, _, y) if y.as_f64() == Some(0.0) => {
            Err(err(Code::DivisionByZero, format!("`{}` by zero", op.symbol()), Some(1)))
        }
        (BinaryOp::Sub, Value::Int(x), Value::Int(y)) => {
            Ok(x.checked_sub(*y).map_or_else(|| Value::Float(*x as f64 - *y as f64), Value::Int))
        }
        (BinaryOp::Mul, Value::Int(x), Value::Int(y)) => {
            Ok(x.checked_mul(*y).map_or_else(|| Value::Float(*x as f64 * *y as f64), Value::Int))
        }
        (BinaryOp::Rem, Value::Int(x), Value::Int(y)) => Ok(x.checked_rem(*y).map_or(Value::Int(0), Value::Int)),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            finite(match op {
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                _ => x % y,
            })
        }
    }
}

/// `-x`
pub(crate) fn neg(v: &Value) -> Result<Value, OpError> {
    match v {
        Value::Int(i) => Ok(i.checked_neg().map_or_else(|| Value::Float(-(*i as f64)), Value::Int)),
        Value::Float(f) => Ok(Value::Float(-f)),
        other => Err(err(Code::RuntimeType, format!("cannot negate {:#}", other.kind()), Some(0))),
    }
}

fn finite(f: f64) -> Result<Value, OpError> {
    Value::float(f).ok_or_else(|| err(Code::NumberOverflow, "the result is not a finite number".into(), None))
}

fn blame(a: &Value, b: &Value, ok: impl Fn(&Value) -> bool) -> Option<u8> {
    match (ok(a), ok(b)) {
        (true, false) => Some(1),
        (false, true) => Some(0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_stays_integer_until_overflow() {
        assert_eq!(binary(BinaryOp::Add, &Value::Int(2), &Value::Int(3), &Limits::default()).unwrap(), Value::Int(5));
        assert_eq!(
            binary(BinaryOp::Add, &Value::Int(i64::MAX), &Value::Int(1), &Limits::default()).unwrap(),
            Value::Float(i64::MAX as f64 + 1.0)
        );
        assert_eq!(
            binary(BinaryOp::Div, &Value::Int(6), &Value::Int(3), &Limits::default()).unwrap(),
            Value::Float(2.0)
        );
    }

    #[test]
    fn comparisons() {
        assert_eq!(compare(BinaryOp::Lt, &Value::Null, &Value::Int(1)).unwrap(), Value::Bool(false));
        assert_eq!(compare(BinaryOp::Ge, &Value::Int(2), &Value::Float(1.5)).unwrap(), Value::Bool(true));
        assert!(compare(BinaryOp::Lt, &Value::Int(1), &Value::str("a")).is_err());
    }

    #[test]
    fn division_by_zero() {
        assert_eq!(
            binary(BinaryOp::Div, &Value::Int(1), &Value::Int(0), &Limits::default()).unwrap_err().code,
            Code::DivisionByZero
        );
        assert_eq!(
            binary(BinaryOp::Rem, &Value::Float(1.0), &Value::Float(0.0), &Limits::default()).unwrap_err().code,
            Code::DivisionByZero
        );
    }
}
