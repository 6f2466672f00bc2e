//! Constant folding on the typed AST.
//!
//! A node whose operands are all constants is replaced by its value, computed with the
//! same operator semantics ([`crate::ops`]) and built-in bodies the VM uses. Anything that
//! would fail is left alone, so the error still happens at run time, where it belongs
//! (`if(false, 1 / 0, 2)` must succeed). Impure functions (the clock, files, host
//! functions) are never folded.

use crate::functions::{Args, Caller, FunctionTable, Implementation};
use crate::runtime::{Clock, EvalError, Limits, SystemClock};
use crate::syntax::ast::{BinaryOp, UnaryOp};
use crate::types::type_of;
use std::borrow::Cow;
use std::sync::Arc;

use crate::types::typed::{TArg, TCall, TExpr, TKind};
use crate::value::Value;

/// Results larger than this stay as code: folding must not bloat a program.
const MAX_FOLDED_SIZE: usize = 4096;

/// Folds constant subexpressions of `e`. `e` itself is left as it is (the engine keeps it
/// for the reference evaluator); where nothing folds (most programs: `filter(…)` over a
/// variable) the answer is `e` itself, borrowed, and where something does, only the nodes
/// above a folded one are rebuilt, the rest copied (template bodies shared).
pub fn fold<'e>(e: &'e TExpr, funcs: &FunctionTable, limits: &Limits) -> Cow<'e, TExpr> {
    match folded(e, funcs, limits) {
        Some(t) => Cow::Owned(t),
        None => Cow::Borrowed(e),
    }
}

/// `e` with its constant subexpressions folded, or `None` when nothing in it folds (no node
/// is built then).
fn folded(e: &TExpr, funcs: &FunctionTable, limits: &Limits) -> Option<TExpr> {
    let span = e.span;
    // A child's new form when it changed, else the child itself.
    fn or<'a>(new: &'a Option<TExpr>, old: &'a TExpr) -> &'a TExpr {
        new.as_ref().unwrap_or(old)
    }
    // A child's new form when it changed, else a copy of it.
    fn take(new: Option<TExpr>, old: &TExpr) -> Box<TExpr> {
        Box::new(new.unwrap_or_else(|| old.clone()))
    }
    // Two operands, each its new form or a copy.
    fn pair(na: Option<TExpr>, a: &TExpr, nb: Option<TExpr>, b: &TExpr) -> Box<[TExpr; 2]> {
        Box::new([na.unwrap_or_else(|| a.clone()), nb.unwrap_or_else(|| b.clone())])
    }
    let kind = match &e.kind {
        TKind::Field(inner, seg) => {
            let new = folded(inner, funcs, limits);
            if let Some(Ok(v)) = or(&new, inner).as_const().map(|c| c.segment(seg)) {
                return Some(constant(v, span));
            }
            TKind::Field(Box::new(new?), seg.clone())
        }
        TKind::Index(vk) => {
            let [v, k] = &**vk;
            let (nv, nk) = (folded(v, funcs, limits), folded(k, funcs, limits));
            if let (Some(a), Some(b)) = (or(&nv, v).as_const(), or(&nk, k).as_const()) {
                if let Ok(x) = a.index(b) {
                    return Some(constant(x, span));
                }
            }
            if nv.is_none() && nk.is_none() {
                return None;
            }
            TKind::Index(pair(nv, v, nk, k))
        }
        TKind::List(items) => {
            let new = folded_all(items, |x| folded(x, funcs, limits));
            let cur = new.as_deref().unwrap_or(items);
            if cur.iter().all(|x| x.as_const().is_some()) && items.len() <= MAX_FOLDED_SIZE {
                let v = Value::list(cur.iter().filter_map(|x| x.as_const().cloned()).collect());
                return Some(constant(v, span));
            }
            TKind::List(new?)
        }
        TKind::Object(entries) => {
            let new = folded_all(entries, |(k, x)| folded(x, funcs, limits).map(|x| (k.clone(), x)));
            let cur = new.as_deref().unwrap_or(entries);
            if cur.iter().all(|(_, x)| x.as_const().is_some()) && entries.len() <= MAX_FOLDED_SIZE {
                let v = Value::object_from(cur.iter().filter_map(|(k, x)| x.as_const().map(|c| (&**k, c.clone()))));
                return Some(constant(v, span));
            }
            TKind::Object(new?)
        }
        TKind::Unary(op, x) => {
            let new = folded(x, funcs, limits);
            if let Some(c) = or(&new, x).as_const() {
                let r = match op {
                    UnaryOp::Not => Ok(Value::Bool(!c.truthy())),
                    UnaryOp::Neg => crate::ops::neg(c),
                };
                if let Ok(v) = r {
                    return Some(constant(v, span));
                }
            }
            TKind::Unary(*op, Box::new(new?))
        }
        TKind::Binary(op, lr) => {
            let [l, r] = &**lr;
            let (nl, nr) = (folded(l, funcs, limits), folded(r, funcs, limits));
            if let (Some(a), Some(b)) = (or(&nl, l).as_const(), or(&nr, r).as_const()) {
                let v = match op {
                    BinaryOp::And => Ok(Value::Bool(a.truthy() && b.truthy())),
                    BinaryOp::Or => Ok(Value::Bool(a.truthy() || b.truthy())),
                    _ => crate::ops::binary(*op, a, b, limits),
                };
                if let Ok(v) = v {
                    if v.size_at_most(MAX_FOLDED_SIZE) <= MAX_FOLDED_SIZE {
                        return Some(constant(v, span));
                    }
                }
            }
            if nl.is_none() && nr.is_none() {
                return None;
            }
            TKind::Binary(*op, pair(nl, l, nr, r))
        }
        TKind::If(ctf) => {
            let [c, t, f] = &**ctf;
            let (nc, nt, nf) = (folded(c, funcs, limits), folded(t, funcs, limits), folded(f, funcs, limits));
            if let Some(cv) = or(&nc, c).as_const() {
                let (new, old) = if cv.truthy() { (nt, t) } else { (nf, f) };
                return Some(new.unwrap_or_else(|| old.clone()));
            }
            if nc.is_none() && nt.is_none() && nf.is_none() {
                return None;
            }
            let keep = |n: Option<TExpr>, o: &TExpr| n.unwrap_or_else(|| o.clone());
            TKind::If(Box::new([keep(nc, c), keep(nt, t), keep(nf, f)]))
        }
        TKind::Pipeline { init, slot, ops } => {
            let ni = folded(init, funcs, limits);
            let new = folded_all(ops, |x| folded(x, funcs, limits));
            if ni.is_none() && new.is_none() {
                return None;
            }
            TKind::Pipeline { init: take(ni, init), slot: *slot, ops: new.unwrap_or_else(|| ops.clone()) }
        }
        TKind::Call(call) => {
            let new = folded_all(&call.args, |a| match a {
                TArg::Value(x) => folded(x, funcs, limits).map(TArg::Value),
                TArg::Template { body, slot } => {
                    folded(body, funcs, limits).map(|b| TArg::Template { body: Arc::new(b), slot: *slot })
                }
                TArg::Dynamic { source, relative, slot, alias } => {
                    folded(source, funcs, limits).map(|source| TArg::Dynamic {
                        source,
                        relative: *relative,
                        slot: *slot,
                        alias: alias.clone(),
                    })
                }
                TArg::Absent => None,
            });
            let Some(args) = new else {
                // Nothing below changed; the call itself may still fold (`upper("a")`).
                return fold_call(call, funcs, limits).map(|v| constant(v, span));
            };
            let call = TCall { args, name: call.name.clone(), ..*call };
            if let Some(v) = fold_call(&call, funcs, limits) {
                return Some(constant(v, span));
            }
            TKind::Call(call)
        }
        TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Error => return None,
    };
    Some(TExpr { kind, ty: e.ty.clone(), span })
}

/// The items of a list with `f`'s new form of each that changed, or `None` (and no list
/// built) when none did.
fn folded_all<T: Clone>(items: &[T], mut f: impl FnMut(&T) -> Option<T>) -> Option<Vec<T>> {
    let mut out: Option<Vec<T>> = None;
    for (i, x) in items.iter().enumerate() {
        match (f(x), &mut out) {
            (Some(new), Some(out)) => out.push(new),
            (Some(new), None) => {
                let mut v = Vec::with_capacity(items.len());
                v.extend_from_slice(&items[..i]);
                v.push(new);
                out = Some(v);
            }
            (None, Some(out)) => out.push(x.clone()),
            (None, None) => {}
        }
    }
    out
}

fn constant(v: Value, span: crate::span::Span) -> TExpr {
    let ty = type_of(&v);
    TExpr::new(TKind::Const(v), ty, span)
}

/// Calls a pure built-in whose arguments are all constants.
fn fold_call(call: &crate::types::typed::TCall, funcs: &FunctionTable, limits: &Limits) -> Option<Value> {
    let f = funcs.get(call.func);
    let Implementation::Builtin(body) = f.implementation else { return None };
    if &*f.signature.name == "datetime_now" {
        return None;
    }
    // Only calls whose arguments are all constants fold: no list of values otherwise.
    if !call.args.iter().all(|a| matches!(a, TArg::Absent) || matches!(a, TArg::Value(x) if x.as_const().is_some())) {
        return None;
    }
    let mut values = Vec::with_capacity(call.args.len());
    for a in &call.args {
        match a {
            TArg::Value(x) => values.push(x.as_const()?.clone()),
            TArg::Absent => values.push(Value::Null),
            _ => return None,
        }
    }
    let mut runner = FoldRunner { limits, fuel: 10_000 };
    let v = body(&mut runner, &Args { values: &values, given: call.given }).ok()?;
    (v.size_at_most(MAX_FOLDED_SIZE) <= MAX_FOLDED_SIZE).then_some(v)
}

/// A runner for folding: no templates, a small fuel budget, no clock reads.
struct FoldRunner<'a> {
    limits: &'a Limits,
    fuel: usize,
}

impl Caller for FoldRunner<'_> {
    fn apply(&mut self, _: usize, _: &Value, _: usize) -> Result<Value, EvalError> {
        Err(EvalError::new(crate::diagnostic::Code::RuntimeArgument, Default::default(), "not foldable"))
    }

    fn charge(&mut self, units: usize) -> Result<(), EvalError> {
        self.fuel = self.fuel.checked_sub(units).ok_or_else(|| {
            EvalError::new(crate::diagnostic::Code::FuelExhausted, Default::default(), "folding budget spent")
        })?;
        Ok(())
    }

    /// Folding builds only what its fuel allows; the memory limit is the run's.
    fn alloc(&mut self, _bytes: usize) -> Result<(), EvalError> {
        Ok(())
    }

    fn limits(&self) -> &Limits {
        self.limits
    }

    fn clock(&self) -> &dyn Clock {
        &SystemClock
    }
}
