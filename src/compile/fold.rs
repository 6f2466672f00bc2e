//! Constant folding on the typed AST.
//!
//! A node whose operands are all constants is replaced by its value, computed with the
//! same operator semantics ([`crate::ops`]) and built-in bodies the VM uses. Anything that
//! would fail is left alone, so the error still happens at run time, where it belongs
//! (`if(false, 1 / 0, 2)` must succeed). Impure functions (the clock, files, host
//! functions) are never folded.

use crate::functions::{Args, Caller, FunctionTable, Implementation};
use crate::runtime::{Clock, EvalError, Limits, SystemClock};
use crate::syntax::ast::{BinaryOp, Name, UnaryOp};
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
/// is built then). Each kind is folded by a function of its own, so that the frame this
/// recursion stacks per level (the height of the tree: 256 for a flat chain of additions)
/// holds one kind's locals, not every kind's (unoptimised builds give each its own slot).
fn folded(e: &TExpr, funcs: &FunctionTable, limits: &Limits) -> Option<TExpr> {
    let f = Folder { funcs, limits };
    match &e.kind {
        TKind::Field(inner, seg) => f.field(e, inner, seg),
        TKind::Index(vk) => f.index(e, vk),
        TKind::List(items) => f.list(e, items),
        TKind::Object(entries) => f.object(e, entries),
        TKind::Unary(op, x) => f.unary(e, *op, x),
        TKind::Binary(op, lr) => f.binary(e, *op, lr),
        TKind::If(ctf) => f.if_(e, ctf),
        TKind::Pipeline { init, slot, ops } => f.pipeline(e, init, *slot, ops),
        TKind::Call(call) => f.call(e, call),
        TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Error => None,
    }
}

/// What folding reads.
#[derive(Clone, Copy)]
struct Folder<'a> {
    funcs: &'a FunctionTable,
    limits: &'a Limits,
}

/// A child's new form when it changed, else the child itself.
fn or<'a>(new: &'a Option<TExpr>, old: &'a TExpr) -> &'a TExpr {
    new.as_ref().unwrap_or(old)
}

/// A child's new form when it changed, else a copy of it.
fn keep(new: Option<TExpr>, old: &TExpr) -> TExpr {
    new.unwrap_or_else(|| old.clone())
}

/// `e` rebuilt with a new kind (its type and span kept).
fn rebuilt(e: &TExpr, kind: TKind) -> Option<TExpr> {
    Some(TExpr { kind, ty: e.ty.clone(), span: e.span })
}

impl Folder<'_> {
    fn fold(self, e: &TExpr) -> Option<TExpr> {
        folded(e, self.funcs, self.limits)
    }

    #[inline(never)]
    fn field(self, e: &TExpr, inner: &TExpr, seg: &Name) -> Option<TExpr> {
        let new = self.fold(inner);
        if let Some(Ok(v)) = or(&new, inner).as_const().map(|c| c.segment(seg)) {
            return Some(constant(v, e.span));
        }
        rebuilt(e, TKind::Field(Box::new(new?), seg.clone()))
    }

    #[inline(never)]
    fn index(self, e: &TExpr, vk: &[TExpr; 2]) -> Option<TExpr> {
        let [v, k] = vk;
        let (nv, nk) = (self.fold(v), self.fold(k));
        if let (Some(a), Some(b)) = (or(&nv, v).as_const(), or(&nk, k).as_const()) {
            if let Ok(x) = a.index(b) {
                return Some(constant(x, e.span));
            }
        }
        if nv.is_none() && nk.is_none() {
            return None;
        }
        rebuilt(e, TKind::Index(Box::new([keep(nv, v), keep(nk, k)])))
    }

    #[inline(never)]
    fn list(self, e: &TExpr, items: &[TExpr]) -> Option<TExpr> {
        let new = folded_all(items, |x| self.fold(x));
        let cur = new.as_deref().unwrap_or(items);
        if cur.iter().all(|x| x.as_const().is_some()) && items.len() <= MAX_FOLDED_SIZE {
            let v = Value::list(cur.iter().filter_map(|x| x.as_const().cloned()).collect());
            return Some(constant(v, e.span));
        }
        rebuilt(e, TKind::List(new?))
    }

    #[inline(never)]
    fn object(self, e: &TExpr, entries: &[(Name, TExpr)]) -> Option<TExpr> {
        let new = folded_all(entries, |(k, x)| self.fold(x).map(|x| (k.clone(), x)));
        let cur = new.as_deref().unwrap_or(entries);
        if cur.iter().all(|(_, x)| x.as_const().is_some()) && entries.len() <= MAX_FOLDED_SIZE {
            let v = Value::object_from(cur.iter().filter_map(|(k, x)| x.as_const().map(|c| (&**k, c.clone()))));
            return Some(constant(v, e.span));
        }
        rebuilt(e, TKind::Object(new?))
    }

    #[inline(never)]
    fn unary(self, e: &TExpr, op: UnaryOp, x: &TExpr) -> Option<TExpr> {
        let new = self.fold(x);
        if let Some(c) = or(&new, x).as_const() {
            let r = match op {
                UnaryOp::Not => Ok(Value::Bool(!c.truthy())),
                UnaryOp::Neg => crate::ops::neg(c),
            };
            if let Ok(v) = r {
                return Some(constant(v, e.span));
            }
        }
        rebuilt(e, TKind::Unary(op, Box::new(new?)))
    }

    #[inline(never)]
    fn binary(self, e: &TExpr, op: BinaryOp, lr: &[TExpr; 2]) -> Option<TExpr> {
        let [l, r] = lr;
        let (nl, nr) = (self.fold(l), self.fold(r));
        if let (Some(a), Some(b)) = (or(&nl, l).as_const(), or(&nr, r).as_const()) {
            let v = match op {
                BinaryOp::And => Ok(Value::Bool(a.truthy() && b.truthy())),
                BinaryOp::Or => Ok(Value::Bool(a.truthy() || b.truthy())),
                _ => crate::ops::binary(op, a, b, self.limits),
            };
            if let Ok(v) = v {
                if v.size_at_most(MAX_FOLDED_SIZE) <= MAX_FOLDED_SIZE {
                    return Some(constant(v, e.span));
                }
            }
        }
        if nl.is_none() && nr.is_none() {
            return None;
        }
        rebuilt(e, TKind::Binary(op, Box::new([keep(nl, l), keep(nr, r)])))
    }

    #[inline(never)]
    fn if_(self, e: &TExpr, ctf: &[TExpr; 3]) -> Option<TExpr> {
        let [c, t, f] = ctf;
        let (nc, nt, nf) = (self.fold(c), self.fold(t), self.fold(f));
        if let Some(cv) = or(&nc, c).as_const() {
            return Some(if cv.truthy() { keep(nt, t) } else { keep(nf, f) });
        }
        if nc.is_none() && nt.is_none() && nf.is_none() {
            return None;
        }
        rebuilt(e, TKind::If(Box::new([keep(nc, c), keep(nt, t), keep(nf, f)])))
    }

    #[inline(never)]
    fn pipeline(self, e: &TExpr, init: &TExpr, slot: u32, ops: &[TExpr]) -> Option<TExpr> {
        let ni = self.fold(init);
        let new = folded_all(ops, |x| self.fold(x));
        if ni.is_none() && new.is_none() {
            return None;
        }
        rebuilt(e, TKind::Pipeline { init: Box::new(keep(ni, init)), slot, ops: new.unwrap_or_else(|| ops.to_vec()) })
    }

    #[inline(never)]
    fn call(self, e: &TExpr, call: &TCall) -> Option<TExpr> {
        let new = folded_all(&call.args, |a| match a {
            TArg::Value(x) => self.fold(x).map(TArg::Value),
            TArg::Template { body, slot } => self.fold(body).map(|b| TArg::Template { body: Arc::new(b), slot: *slot }),
            TArg::Dynamic { source, relative, slot, alias } => self.fold(source).map(|source| TArg::Dynamic {
                source,
                relative: *relative,
                slot: *slot,
                alias: alias.clone(),
            }),
            TArg::Absent => None,
        });
        let Some(args) = new else {
            // Nothing below changed; the call itself may still fold (`upper("a")`).
            return fold_call(call, self.funcs, self.limits).map(|v| constant(v, e.span));
        };
        let call = TCall { args, name: call.name.clone(), ..*call };
        if let Some(v) = fold_call(&call, self.funcs, self.limits) {
            return Some(constant(v, e.span));
        }
        rebuilt(e, TKind::Call(call))
    }
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
