//! Calls: arguments in parameter order; templates compiled into chunks of their own (with
//! a fast form when the body is a path or a simple condition); the call's table entry.

use std::sync::Arc;

use super::places::{field_root, field_segments};
use super::{compile, Compiler};
use crate::compile::chunk::{CallInfo, CallParam, Chunk, Fast, Origin, ParamSite, Params, Pred, TemplateChunk};
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, UnaryOp};
use crate::types::typed::{TArg, TCall, TExpr, TKind};
use crate::value::{Path, Value};

/// The fast form of a template body with `item` in `slot`, when it has one.
fn fast_template(body: &TExpr, slot: u32) -> Option<Fast> {
    if let Some(path) = item_path(body, slot) {
        return Some(Fast::Path(path));
    }
    predicate(body, slot).map(Fast::Pred)
}

/// `item.a.b` → `[a, b]`; `item` → `[]`.
fn item_path(e: &TExpr, slot: u32) -> Option<Path> {
    let (root, n) = field_root(e);
    matches!(root.kind, TKind::Local(s) if s == slot).then(|| Path::shared(field_segments(e, n, None)))
}

fn predicate(e: &TExpr, slot: u32) -> Option<Pred> {
    Some(match &e.kind {
        TKind::Const(v) => Pred::Const(v.truthy()),
        TKind::Unary(UnaryOp::Not, x) => Pred::Not(Box::new(predicate(x, slot)?)),
        TKind::Binary(op @ (BinaryOp::And | BinaryOp::Or), ..) => {
            let mut parts = Vec::with_capacity(chain_len(e, *op));
            chain(e, *op, slot, &mut parts)?;
            let parts = parts.into_boxed_slice();
            if *op == BinaryOp::And {
                Pred::And(parts)
            } else {
                Pred::Or(parts)
            }
        }
        TKind::Binary(op, lr) if op.is_comparison() => {
            let konst = lr[1].as_const().filter(|k| compared_in_place(k))?;
            Pred::Cmp(*op, item_path(&lr[0], slot)?, konst.clone())
        }
        _ => Pred::Truthy(item_path(e, slot)?),
    })
}

/// Whether a fast condition may compare a field with the constant `k` in place: not a long
/// string, nor a list or object that is not empty — comparing with those reads them, which
/// is left to the chunk, as it charges what a comparison reads (docs/security.md, round
/// 10d). (The one-pass compiler asks too.)
pub(super) fn compared_in_place(k: &Value) -> bool {
    match k {
        Value::Str(s) => s.len() < 64,
        Value::List(l) => l.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => true,
    }
}

/// How many operands the chain of `op`s at `e` has (`a and b and c`: 3, whichever way it
/// is grouped).
fn chain_len(e: &TExpr, op: BinaryOp) -> usize {
    match &e.kind {
        TKind::Binary(o, lr) if *o == op => lr.iter().map(|x| chain_len(x, op)).sum(),
        _ => 1,
    }
}

/// The conditions of the operands of the chain of `op`s at `e`, left to right, into `out`.
/// Recursion is bounded by the tree's height (the parser's nesting limit).
fn chain(e: &TExpr, op: BinaryOp, slot: u32, out: &mut Vec<Pred>) -> Option<()> {
    match &e.kind {
        TKind::Binary(o, lr) if *o == op => {
            chain(&lr[0], op, slot, out)?;
            chain(&lr[1], op, slot, out)
        }
        _ => {
            out.push(predicate(e, slot)?);
            Some(())
        }
    }
}

/// The inner call of `map(array=filter(…)/sort(…), …)` or `sum(array=filter(…)/sort(…),
/// …)`, with the span of its expression, when the pair can run fused: the outer call's
/// other arguments are templates or absent (nothing to evaluate between the two calls) and
/// neither call takes a template by name. The VM still runs the pair as two calls when the
/// table's functions of those names are not the built-ins.
fn fusable(call: &TCall) -> Option<(&TCall, Span)> {
    if !matches!(&*call.name, "map" | "sum") {
        return None;
    }
    let (TArg::Value(x), rest) = call.args.split_first()? else { return None };
    let TKind::Call(inner) = &x.kind else { return None };
    let plain = |a: &TArg| matches!(a, TArg::Template { .. } | TArg::Absent);
    let simple = matches!(&*inner.name, "filter" | "sort")
        && rest.iter().all(plain)
        && !inner.args.iter().any(|a| matches!(a, TArg::Dynamic { .. }));
    simple.then_some((inner, x.span))
}

/// A template's chunk: its body compiled with `item` in `slot`.
fn compile_template(body: &TExpr, slot: u32) -> Chunk {
    let mut sub = compile(body);
    sub.locals = sub.locals.max(slot + 1);
    sub
}

impl Compiler {
    /// A call of a function that is not compiled inline.
    pub(super) fn call(&mut self, call: &TCall, span: Span) {
        if let Some((inner, inner_span)) = fusable(call) {
            let i = self.call_site(inner, inner_span, false);
            let o = self.call_site(call, span, true);
            self.emit(Op::Fused(i, o), span);
            return;
        }
        let i = self.call_site(call, span, false);
        self.emit(Op::Call(i), span);
    }

    /// Compiles the arguments of `call` and adds its call site; with `skip_first`, the first
    /// argument is the fused inner call's list, which is never on the stack.
    pub(super) fn call_site(&mut self, call: &TCall, span: Span, skip_first: bool) -> u32 {
        // How each parameter is passed, its argument's span and its value's origin: held in
        // the call site for one or two, else one list allocated once at its final size.
        let params = match &call.args[..] {
            [a] => Params::One([self.param(a, span, skip_first)]),
            [a, b] => {
                let a = self.param(a, span, skip_first);
                Params::Two([a, self.param(b, span, false)])
            }
            args => {
                Params::Many(args.iter().enumerate().map(|(n, a)| self.param(a, span, skip_first && n == 0)).collect())
            }
        };
        self.chunk.calls.push(CallInfo { func: call.func, name: call.name.clone(), params, given: call.given });
        (self.chunk.calls.len() - 1) as u32
    }

    /// Compiles argument `a` of a call at `span` and says how its parameter is passed; with
    /// `skip`, a value argument is the fused inner call's list, which is never on the stack.
    fn param(&mut self, a: &TArg, span: Span, skip: bool) -> ParamSite {
        let site = |pass: CallParam, span: Span, origin: Option<Origin>| ParamSite { pass, span, origin };
        match a {
            TArg::Value(x) => {
                if !skip {
                    self.expr(x);
                }
                site(CallParam::Value, x.span, self.origin(x))
            }
            TArg::Template { body, slot } => {
                self.use_slot(*slot);
                let i = self.constant(Value::Null);
                self.emit(Op::Const(i), body.span);
                // A template with a fast form has no call in it (only `item`'s paths and
                // constants), so its chunk uses `item`'s slot and none above it: compiled on
                // first use (`TemplateChunk`), it is needed only when the fast form cannot
                // answer.
                let sub = match fast_template(body, *slot) {
                    Some(fast) => TemplateChunk::deferred(body.clone(), *slot, compile_template, fast),
                    None => {
                        let sub = compile_template(body, *slot);
                        self.chunk.locals = self.chunk.locals.max(sub.locals);
                        TemplateChunk::ready(sub)
                    }
                };
                site(CallParam::Template(Arc::new(sub), *slot), body.span, None)
            }
            TArg::Dynamic { source, relative, slot, alias } => {
                self.use_slot(*slot);
                self.expr(source);
                let pass = CallParam::Dynamic { relative: *relative, slot: *slot, alias: alias.clone() };
                site(pass, source.span, None)
            }
            TArg::Absent => {
                let i = self.constant(Value::Null);
                self.emit(Op::Const(i), span);
                site(CallParam::Absent, span, None)
            }
        }
    }
}
