//! What `==` and `!=` cannot make true, or false: a value of a string enum compared with a
//! string that is not one of its values (`E0207`: `status == 'OPEN'` where `status` is
//! `"open" | "closed"`), and a value that cannot be null compared with `null` (`W0103`).
//!
//! Only a literal on one side is judged, and only a type that says for certain: a side that
//! may be any string, `any`, or `null` itself, is left to run time.
//!
//! Two values of types that hold no value in common are never equal whatever they are
//! (`E0208`: `item.priority == '1'` where `priority` is an `integer`): a number and a
//! string, a boolean and a string, a list or an object and a scalar. `integer` and
//! `number` overlap (`1 == 1.0`), and a side that may be anything (`any`) or of either
//! kind (`integer | string`) is left to run time.

use super::Checker;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use crate::syntax::ast::BinaryOp;
use crate::types::typed::{TExpr, TKind};
use crate::types::{show_quoted, Fit, StrEnum, Type};
use crate::value::Value;

/// The most values of an enum a diagnostic lists (the rest are counted).
const LISTED_VALUES: usize = 40;

impl Checker<'_> {
    /// Reports a comparison `l op r` (`==` or `!=`) whose result the operands' types decide.
    pub(super) fn comparison(&mut self, op: BinaryOp, l: (&TExpr, Span), r: (&TExpr, Span)) {
        let always = if op == BinaryOp::Eq { "false" } else { "true" };
        for (value, literal) in [(l, r), (r, l)] {
            let (Some(constant), (v, v_span)) = (literal.0.as_const(), value) else { continue };
            if matches!(v.kind, TKind::Error | TKind::Const(_)) {
                continue;
            }
            let d = match constant {
                Value::Str(s) => match outside_enum(&v.ty, s) {
                    Some(values) => {
                        let message = format!("`{}` is always {always}: the value is never {}", op.symbol(), quoted(s));
                        enum_mismatch(message, "not one of its values", s, &values, &v.ty, literal.1, v_span)
                    }
                    None => continue,
                },
                Value::Null if v.ty.fits(&Type::Null) == Fit::No => {
                    let help = if op == BinaryOp::Eq {
                        "a value of this type always exists; test what it holds instead (`x == \"\"`, `x.length == 0`), or remove the test"
                    } else {
                        "a value of this type always exists; the test can go"
                    };
                    Diagnostic::new(
                        Code::NullComparison,
                        literal.1,
                        format!("`{}` is always {always}: {:#} is never null", op.symbol(), v.ty),
                    )
                    .with_label("the other side is never null")
                    .with_secondary(v_span, format!("this is {}", v.ty))
                    .with_help(help)
                }
                _ => continue,
            };
            self.error(d);
            return;
        }
        let (lt, rt) = (l.0, r.0);
        if matches!(lt.kind, TKind::Error) || matches!(rt.kind, TKind::Error) {
            return;
        }
        if matches!((&lt.kind, &rt.kind), (TKind::Const(_), TKind::Const(_))) || !never_equal(&lt.ty, &rt.ty) {
            return;
        }
        // The literal, if a side is one, is where the mistake is.
        let ((value, v_span), (other, o_span)) = if rt.as_const().is_some() { (l, r) } else { (r, l) };
        let help = disjoint_help(&value.ty, other.as_const(), Spelling::Expression);
        self.error(
            Diagnostic::new(
                Code::DisjointComparison,
                o_span,
                format!("`{}` is always {always}: {:#} is never equal to {:#}", op.symbol(), other.ty, value.ty),
            )
            .with_label(format!("this is {}", other.ty))
            .with_secondary(v_span, format!("this is {}", value.ty))
            .with_help(help),
        );
    }
}

/// The kinds of values a type holds, as bits: null, boolean, number, string, list, object
/// (`file`: a string or an object).
fn kinds(t: &Type) -> u8 {
    const NULL: u8 = 1;
    const BOOL: u8 = 2;
    const NUM: u8 = 4;
    const STR: u8 = 8;
    const LIST: u8 = 16;
    const OBJ: u8 = 32;
    match t {
        Type::Any => NULL | BOOL | NUM | STR | LIST | OBJ,
        Type::Never => 0,
        Type::Null => NULL,
        Type::Bool => BOOL,
        Type::Int | Type::Number => NUM,
        Type::Str | Type::Enum(_) => STR,
        Type::File => STR | OBJ,
        Type::List(_) => LIST,
        Type::Object(_) => OBJ,
        Type::Union(parts) => parts.iter().fold(0, |k, t| k | kinds(t)),
    }
}

/// Whether no value of type `a` can equal a value of type `b` (`E0208`): both are known (not
/// `any`, not `never`, not `null` alone, which `W0103` judges) and they hold no kind of value
/// in common. `integer` and `number` are one kind: `1 == 1.0`.
pub(crate) fn never_equal(a: &Type, b: &Type) -> bool {
    let (ka, kb) = (kinds(a), kinds(b));
    let known = |t: &Type, k: u8| k != 0 && !matches!(t, Type::Any | Type::Null);
    known(a, ka) && known(b, kb) && ka & kb == 0
}

/// How a fix is written: in an expression (`1`, `'1'`) or as a condition's JSON `value`.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Spelling {
    Expression,
    Condition,
}

/// The help of `E0208` for a value of type `value` compared with `other`, a literal (or, in
/// a condition's `in`, a list of literals) when it is one: the literal as the value's type
/// writes it (`1` for `'1'`, `true` for `"true"`), else how to convert one side.
pub(crate) fn disjoint_help(value: &Type, other: Option<&Value>, spelling: Spelling) -> String {
    let k = kinds(value) & !kinds(&Type::Null);
    let fixed = match other {
        Some(Value::List(items)) if spelling == Spelling::Condition && !items.is_empty() => items
            .iter()
            .map(|v| respelled(k, v, spelling))
            .collect::<Option<Vec<_>>>()
            .map(|v| format!("[{}]", v.join(", "))),
        Some(v) => respelled(k, v, spelling),
        None => None,
    };
    let what = match k {
        _ if k == kinds(&Type::Number) => "a number",
        _ if k == kinds(&Type::Bool) => "a boolean",
        _ if k == kinds(&Type::Str) => "a string",
        _ => "",
    };
    match fixed {
        Some(fixed) if !what.is_empty() => {
            let shown = match spelling {
                Spelling::Expression => format!("`{fixed}`"),
                Spelling::Condition => format!("`\"value\": {fixed}`"),
            };
            format!("the value is {what}: compare with {shown}")
        }
        _ if what == "a number" || what == "a string" => {
            "convert one side first: `to_number(value=…)` reads a number from a numeric string, `to_string(value=…)` writes a number as a string"
                .to_string()
        }
        _ => format!("compare {value:#} with values of its type"),
    }
}

/// The literal `v` written as a value of the kinds `k` (a number, a boolean or a string),
/// when it reads as one: `"1"` → `1`, `"true"` → `true`, `1` → `'1'`.
fn respelled(k: u8, v: &Value, spelling: Spelling) -> Option<String> {
    match v {
        Value::Str(s) if k == kinds(&Type::Number) => {
            let n = s.trim();
            n.parse::<f64>().ok().filter(|f| f.is_finite())?;
            Some(n.parse::<i64>().map_or_else(|_| n.to_string(), |i| i.to_string()))
        }
        Value::Str(s) if k == kinds(&Type::Bool) && matches!(s.trim(), "true" | "false") => Some(s.trim().to_string()),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) if k == kinds(&Type::Str) => Some(match spelling {
            Spelling::Expression => format!("'{v}'"),
            Spelling::Condition => format!("\"{v}\""),
        }),
        _ => None,
    }
}

/// The values of the enums a value of type `t` is of, when `s` is none of them (and `t` is
/// of nothing but enums and `null`): what `E0207` lists.
pub(crate) fn outside_enum<'t>(t: &'t Type, s: &str) -> Option<Vec<&'t str>> {
    let enums = enum_values(t)?;
    if enums.iter().any(|e| e.contains(s)) {
        return None;
    }
    Some(enums.iter().flat_map(|e| e.values()).collect())
}

/// The enums a type's values are all of (`null` aside): `None` when some alternative may be
/// another string or not a string (`string`, `any`, `file`, a number).
fn enum_values(t: &Type) -> Option<Vec<&StrEnum>> {
    let mut out = Vec::new();
    for alt in t.alternatives() {
        match alt {
            Type::Enum(e) => out.push(&**e),
            Type::Null => {}
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A string as JSON, cut as a type shows an enum's value.
pub(crate) fn quoted(s: &str) -> String {
    let mut q = String::new();
    let _ = show_quoted(&mut q, s);
    q
}

/// `E0207` with `message` (what the comparison always gives) for the string `s` compared
/// with a value of type `ty`, which is one of `all` ([`outside_enum`]).
pub(crate) fn enum_mismatch(
    message: String,
    label: &str,
    s: &str,
    all: &[&str],
    ty: &Type,
    literal: Span,
    value: Span,
) -> Diagnostic {
    let mut listed = Vec::with_capacity(all.len().min(LISTED_VALUES));
    for v in all.iter().take(LISTED_VALUES) {
        listed.push(quoted(v));
    }
    let mut values = listed.join(", ");
    if all.len() > LISTED_VALUES {
        values.push_str(&format!(", … ({} in all)", all.len()));
    }
    let help = match crate::suggest::meant_value(all, s) {
        Some(m) => format!("did you mean {}? the values it can be: {values}", quoted(m)),
        None => format!("the values it can be: {values}"),
    };
    Diagnostic::new(Code::EnumComparison, literal, message)
        .with_label(label)
        .with_secondary(value, format!("this is {ty}"))
        .with_help(help)
}
