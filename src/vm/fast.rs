//! Fast forms evaluated on an element in place, without running a template's chunk: a
//! condition built from comparisons of fields with constants, and a path on the element.
//! Each answers as the chunk would, or `None` for the chunk to run and report.

use crate::compile::{CallInfo, CallParam, Fast, Pred};
use crate::ops;
use crate::syntax::ast::BinaryOp;
use crate::value::Value;

/// Evaluates a condition on an element in place; `None` when it cannot (a type mismatch),
/// for the chunk to report.
pub(super) fn pred(p: &Pred, item: &Value) -> Option<bool> {
    Some(match p {
        Pred::Const(b) => *b,
        Pred::Truthy(path) => item.walk_path(path).ok()?.truthy(),
        Pred::Not(x) => !pred(x, item)?,
        // A chain's comparisons (most of its parts) tested here, not in a call each.
        Pred::And(ps) => {
            for p in ps.iter() {
                let pass = match p {
                    Pred::Cmp(op, path, konst) => cmp(*op, path, konst, item)?,
                    other => pred(other, item)?,
                };
                if !pass {
                    return Some(false);
                }
            }
            true
        }
        Pred::Or(ps) => {
            for p in ps.iter() {
                let pass = match p {
                    Pred::Cmp(op, path, konst) => cmp(*op, path, konst, item)?,
                    other => pred(other, item)?,
                };
                if pass {
                    return Some(true);
                }
            }
            false
        }
        Pred::Cmp(op, path, konst) => cmp(*op, path, konst, item)?,
    })
}

/// `item.path <op> konst`, as the chunk computes it; `None` on a type mismatch.
#[inline(always)]
fn cmp(op: BinaryOp, path: &crate::value::Path, konst: &Value, item: &Value) -> Option<bool> {
    match item.probe_path(path) {
        Some(field) => cmp_field(op, field, konst),
        None => cmp_field(op, &*item.walk_path(path).ok()?, konst),
    }
}

/// `field <op> konst`, as `ops::compare` computes it; `None` on a type mismatch.
#[inline(always)]
fn cmp_field(op: BinaryOp, field: &Value, konst: &Value) -> Option<bool> {
    Some(match (op, field, konst) {
        (BinaryOp::Eq, f, k) => same(f, k),
        (BinaryOp::Ne, f, k) => !same(f, k),
        // Integers (scores, ages, counts) compared at once, as `ops::compare` would.
        (_, Value::Int(a), Value::Int(b)) => ordered(op, a.cmp(b)),
        _ => ops::compare(op, field, konst).ok()?.truthy(),
    })
}

/// The fast form of call parameter `param` when it is a path on the element.
pub(super) fn fast_path(info: &CallInfo, param: usize) -> Option<&crate::value::Path> {
    match info.params.get(param) {
        Some(CallParam::Template(_, _, Some(fast))) => match &**fast {
            Fast::Path(p) => Some(p),
            Fast::Pred(_) => None,
        },
        _ => None,
    }
}

/// Whether `ord` satisfies the ordering operator `op` (`<`, `<=`, `>`, `>=`), as
/// `ops::compare` decides it.
#[inline]
fn ordered(op: BinaryOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        BinaryOp::Lt => ord == Less,
        BinaryOp::Le => ord != Greater,
        BinaryOp::Gt => ord == Greater,
        _ => ord != Less,
    }
}

/// `field == konst` for a condition's constant: a string or an integer compared directly
/// (a string equals only a string, an integer an integer or a float), anything else by
/// deep equality.
#[inline]
fn same(field: &Value, konst: &Value) -> bool {
    match (field, konst) {
        // Two inline strings (most constants and most fields) compare as two short arrays.
        (Value::Str(a), Value::Str(b)) => a == b,
        (_, Value::Str(_)) => false,
        (Value::Int(a), Value::Int(b)) => a == b,
        _ => field == konst,
    }
}
