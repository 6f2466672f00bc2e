//! Fast forms evaluated on an element in place, without running a template's chunk: a
//! condition built from comparisons of fields with constants, and a path on the element.
//! Each answers as the chunk would, or `None` for the chunk to run and report.

use crate::compile::{fast_in, CallInfo, Fast, ParamSite, Pred};
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

/// The fast form of call parameter `param` (of a call's list of them) when it is a path on
/// the element.
pub(super) fn fast_path(params: &[ParamSite], param: usize) -> Option<&crate::value::Path> {
    match fast_in(params, param) {
        Some(Fast::Path(p)) => Some(p),
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

/// The values a `map` over a `sort` (`Op::Fused`) reads with its path template, read ahead
/// in the list's own order, where they are next to each other in memory, before the sort
/// reorders the elements: `map` then finds each element's value by the element's place in
/// the list, instead of walking the path on elements visited in sorted order (a record
/// apart from the last each time). An element whose path needs more than its hints (`None`)
/// is walked by `map` as before. Reading ahead charges nothing and changes nothing: `map`
/// still spends its unit of fuel per element, in sorted order, where it did.
pub(super) struct ReadAhead<'v> {
    list: &'v [Value],
    values: Vec<Option<&'v Value>>,
}

impl<'v> ReadAhead<'v> {
    /// From how many elements reading ahead is worth its pass over the list.
    const MIN: usize = 64;

    /// The read-ahead for `map`'s template `param` of `outer` over the `list` a sort
    /// reorders, when the template is a path and the fuel left covers the pass (so that
    /// the pass is bounded by the budget, as the work it saves is).
    pub(super) fn of(list: &'v Value, outer: &CallInfo, fuel: u64) -> Option<ReadAhead<'v>> {
        let Value::List(list) = list else { return None };
        let path = fast_path(&outer.params, 1)?;
        if list.len() < Self::MIN || (list.len() as u64).saturating_mul(2) > fuel {
            return None;
        }
        Some(ReadAhead { list, values: list.iter().map(|x| x.probe_path(path)).collect() })
    }

    /// The value read ahead for `x`, an element of the list.
    #[inline(always)]
    pub(super) fn get(&self, x: &Value) -> Option<&'v Value> {
        let offset = (x as *const Value as usize).wrapping_sub(self.list.as_ptr() as usize);
        let i = offset / std::mem::size_of::<Value>();
        match self.list.get(i) {
            Some(y) if std::ptr::eq(y, x) => self.values.get(i).copied().flatten(),
            _ => None,
        }
    }
}
