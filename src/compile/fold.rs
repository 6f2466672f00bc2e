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
use std::sync::Arc;

use crate::types::typed::{TArg, TCall, TExpr, TKind};
use crate::value::Value;

/// Results larger than this stay as code: folding must not bloat a program.
const MAX_FOLDED_SIZE: usize = 4096;

/// Folds constant subexpressions of `e` into a new tree. `e` itself is left as it is (the
/// engine keeps it for the reference evaluator), and template bodies in which nothing
/// folds are shared with it rather than copied.
pub fn fold(e: &TExpr, funcs: &FunctionTable, limits: &Limits) -> TExpr {
    let span = e.span;
    let kind = match &e.kind {
        TKind::Field(inner, seg) => {
            let inner = fold(inner, funcs, limits);
            if let Some(Ok(v)) = inner.as_const().map(|c| c.segment(seg)) {
                return constant(v, span);
            }
            TKind::Field(Box::new(inner), seg.clone())
        }
        TKind::Index(v, k) => {
            let v = fold(v, funcs, limits);
            let k = fold(k, funcs, limits);
            if let (Some(a), Some(b)) = (v.as_const(), k.as_const()) {
                if let Ok(x) = a.index(b) {
                    return constant(x, span);
                }
            }
            TKind::Index(Box::new(v), Box::new(k))
        }
        TKind::List(items) => {
            let items: Vec<TExpr> = items.iter().map(|x| fold(x, funcs, limits)).collect();
            if items.iter().all(|x| x.as_const().is_some()) && items.len() <= MAX_FOLDED_SIZE {
                let v = Value::list(items.iter().filter_map(|x| x.as_const().cloned()).collect());
                return constant(v, span);
            }
            TKind::List(items)
        }
        TKind::Object(entries) => {
            let entries: Vec<_> = entries.iter().map(|(k, x)| (k.clone(), fold(x, funcs, limits))).collect();
            if entries.iter().all(|(_, x)| x.as_const().is_some()) && entries.len() <= MAX_FOLDED_SIZE {
                let v = Value::object_from(entries.iter().filter_map(|(k, x)| x.as_const().map(|c| (&**k, c.clone()))));
                return constant(v, span);
            }
            TKind::Object(entries)
        }
        TKind::Unary(op, x) => {
            let x = fold(x, funcs, limits);
            if let Some(c) = x.as_const() {
                let r = match op {
                    UnaryOp::Not => Ok(Value::Bool(!c.truthy())),
                    UnaryOp::Neg => crate::ops::neg(c),
                };
                if let Ok(v) = r {
                    return constant(v, span);
                }
            }
            TKind::Unary(*op, Box::new(x))
        }
        TKind::Binary(op, l, r) => {
            let l = fold(l, funcs, limits);
            let r = fold(r, funcs, limits);
            if let (Some(a), Some(b)) = (l.as_const(), r.as_const()) {
                let v = match op {
                    BinaryOp::And => Ok(Value::Bool(a.truthy() && b.truthy())),
                    BinaryOp::Or => Ok(Value::Bool(a.truthy() || b.truthy())),
                    _ => crate::ops::binary(*op, a, b, limits),
                };
                if let Ok(v) = v {
                    if v.size_at_most(MAX_FOLDED_SIZE) <= MAX_FOLDED_SIZE {
                        return constant(v, span);
                    }
                }
            }
            TKind::Binary(*op, Box::new(l), Box::new(r))
        }
        TKind::If(c, t, f) => {
            let c = fold(c, funcs, limits);
            let t = fold(t, funcs, limits);
            let f = fold(f, funcs, limits);
            if let Some(cv) = c.as_const() {
                return if cv.truthy() { t } else { f };
            }
            TKind::If(Box::new(c), Box::new(t), Box::new(f))
        }
        TKind::Pipeline { init, slot, ops } => TKind::Pipeline {
            init: Box::new(fold(init, funcs, limits)),
            slot: *slot,
            ops: ops.iter().map(|x| fold(x, funcs, limits)).collect(),
        },
        TKind::Call(call) => {
            let args = call
                .args
                .iter()
                .map(|a| match a {
                    TArg::Value(x) => TArg::Value(fold(x, funcs, limits)),
                    TArg::Template { body, slot } => {
                        let body = if has_foldable(body) { Arc::new(fold(body, funcs, limits)) } else { body.clone() };
                        TArg::Template { body, slot: *slot }
                    }
                    TArg::Dynamic { source, relative, slot, alias } => TArg::Dynamic {
                        source: fold(source, funcs, limits),
                        relative: *relative,
                        slot: *slot,
                        alias: alias.clone(),
                    },
                    TArg::Absent => TArg::Absent,
                })
                .collect();
            let call = TCall { args, name: call.name.clone(), ..*call };
            if let Some(v) = fold_call(&call, funcs, limits) {
                return constant(v, span);
            }
            TKind::Call(call)
        }
        other => other.clone(),
    };
    TExpr { kind, ty: e.ty.clone(), span }
}

/// Whether folding could change anything in `e`: a node with a constant operand, or a
/// call (which may fold), anywhere in it. A conservative test, so that template bodies
/// with nothing to fold (most of them: `item.score > 50`) are shared, not rebuilt.
fn has_foldable(e: &TExpr) -> bool {
    let operand = |x: &TExpr| x.as_const().is_some() || has_foldable(x);
    match &e.kind {
        TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Error => false,
        TKind::Field(x, _) | TKind::Unary(_, x) => operand(x),
        TKind::Index(a, b) => operand(a) || operand(b),
        // A binary node folds only when both sides end up constant.
        TKind::Binary(_, l, r) => {
            (l.as_const().is_some() && r.as_const().is_some()) || has_foldable(l) || has_foldable(r)
        }
        // An empty list or object is a constant.
        TKind::List(items) => items.is_empty() || items.iter().any(operand),
        TKind::Object(entries) => entries.is_empty() || entries.iter().any(|(_, x)| operand(x)),
        TKind::If(..) | TKind::Pipeline { .. } | TKind::Call(_) => true,
    }
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
