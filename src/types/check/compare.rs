//! What `==` and `!=` cannot make true, or false: a value of a string enum compared with a
//! string that is not one of its values (`E0207`: `status == 'OPEN'` where `status` is
//! `"open" | "closed"`), and a value that cannot be null compared with `null` (`W0103`).
//!
//! Only a literal on one side is judged, and only a type that says for certain: a side that
//! may be any string, `any`, or `null` itself, is left to run time.

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
