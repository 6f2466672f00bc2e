//! Typed AST → bytecode.

use std::sync::Arc;

use super::chunk::{CallInfo, CallParam, Chunk, Fast, Origin, Pred, Root};
use super::op::Op;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, Name, UnaryOp};
use crate::types::typed::{TArg, TExpr, TKind};
use crate::value::{Path, SmolStr, Value};

/// Compiles a checked, error-free typed expression into a chunk.
pub fn compile(e: &TExpr) -> Chunk {
    // Room for a typical template or filter condition, so the two lists grow rarely.
    let chunk = Chunk { code: Vec::with_capacity(16), spans: Vec::with_capacity(16), ..Chunk::default() };
    let mut c = Compiler { chunk };
    c.expr(e);
    c.chunk
}

struct Compiler {
    chunk: Chunk,
}

/// A field chain's root and its number of segments: `item.a.b` → (`item`, 2).
fn field_root(e: &TExpr) -> (&TExpr, usize) {
    let mut n = 0;
    let mut cur = e;
    while let TKind::Field(inner, _) = &cur.kind {
        n += 1;
        cur = inner;
    }
    (cur, n)
}

/// The `n` segments of the field chain `e`, after `lead` when given: `item.a.b` → [a, b].
/// Allocated once at the final size (the list usually becomes a boxed slice, which spare
/// capacity would cost a reallocation), and only once the caller knows it wants them.
fn field_segments(e: &TExpr, n: usize, lead: Option<&Name>) -> Vec<Name> {
    let mut segs = Vec::with_capacity(n + usize::from(lead.is_some()));
    segs.extend(lead.cloned());
    let from = segs.len();
    let mut cur = e;
    while let TKind::Field(inner, seg) = &cur.kind {
        segs.push(seg.clone());
        cur = inner;
    }
    segs[from..].reverse();
    segs
}

/// Where the value of `e` comes from, when that is a fixed place in the data.
pub(crate) fn origin_of(e: &TExpr) -> Option<Arc<Origin>> {
    let (root, n) = field_root(e);
    let root = match &root.kind {
        TKind::Global(n) => Root::Global(n.clone()),
        TKind::Local(s) => Root::Local(*s),
        TKind::Ref(ctx, rsegs) => {
            let mut all = Vec::with_capacity(rsegs.len() + n);
            all.extend(rsegs.iter().cloned());
            all.extend(field_segments(e, n, None));
            return Some(Arc::new(Origin { root: Root::Ref(ctx.clone()), segments: all.into_boxed_slice() }));
        }
        _ => return None,
    };
    Some(Arc::new(Origin { root, segments: field_segments(e, n, None).into_boxed_slice() }))
}

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
    matches!(root.kind, TKind::Local(s) if s == slot).then(|| Path::new(field_segments(e, n, None)))
}

fn predicate(e: &TExpr, slot: u32) -> Option<Pred> {
    Some(match &e.kind {
        TKind::Const(v) => Pred::Const(v.truthy()),
        TKind::Unary(UnaryOp::Not, x) => Pred::Not(Box::new(predicate(x, slot)?)),
        TKind::Binary(BinaryOp::And, l, r) => Pred::And(Box::new(predicate(l, slot)?), Box::new(predicate(r, slot)?)),
        TKind::Binary(BinaryOp::Or, l, r) => Pred::Or(Box::new(predicate(l, slot)?), Box::new(predicate(r, slot)?)),
        TKind::Binary(op, l, r) if op.is_comparison() => Pred::Cmp(*op, item_path(l, slot)?, r.as_const()?.clone()),
        _ => Pred::Truthy(item_path(e, slot)?),
    })
}

impl Compiler {
    fn emit(&mut self, op: Op, span: Span) -> usize {
        self.chunk.emit(op, span)
    }

    fn use_slot(&mut self, slot: u32) {
        self.chunk.locals = self.chunk.locals.max(slot + 1);
    }

    fn patch(&mut self, at: usize) {
        let target = self.chunk.code.len() as u32;
        match &mut self.chunk.code[at] {
            Op::Jump(t) | Op::JumpIfFalse(t) | Op::AndJump(t) | Op::OrJump(t) => *t = target,
            _ => {}
        }
    }

    fn expr(&mut self, e: &TExpr) {
        let span = e.span;
        match &e.kind {
            TKind::Const(v) => {
                let i = self.chunk.constant(v.clone());
                self.emit(Op::Const(i), span);
            }
            TKind::Global(n) => {
                let i = self.chunk.name(n);
                self.emit(Op::Global(i), span);
            }
            TKind::Local(s) => {
                self.use_slot(*s);
                self.emit(Op::Local(*s), span);
            }
            TKind::Ref(ctx, segs) => {
                let n = self.chunk.name(ctx);
                let p = self.chunk.path(segs.clone());
                self.emit(Op::Ref(n, p), span);
            }
            TKind::Field(..) => {
                let (root, len) = field_root(e);
                if let TKind::Global(n) = &root.kind {
                    // The variable's name leads the path, so its lookup is inline-cached like
                    // the fields after it.
                    let p = self.chunk.path(field_segments(e, len, Some(n)));
                    let n = self.chunk.name(n);
                    self.emit(Op::GlobalPath(n, p), span);
                    return;
                }
                let segs = field_segments(e, len, None);
                match &root.kind {
                    TKind::Local(s) => {
                        self.use_slot(*s);
                        let p = self.chunk.path(segs);
                        self.emit(Op::LocalPath(*s, p), span);
                    }
                    // `(REF:step).response` is a field access, not the response alias of
                    // `REF:step.response`: merge only when the alias cannot change meaning.
                    TKind::Ref(ctx, rsegs) if !rsegs.is_empty() || segs.first().is_none_or(|s| &**s != "response") => {
                        let n = self.chunk.name(ctx);
                        let mut all = rsegs.clone();
                        all.extend(segs);
                        let p = self.chunk.path(all);
                        self.emit(Op::Ref(n, p), span);
                    }
                    _ => {
                        self.expr(root);
                        let p = self.chunk.path(segs);
                        let at = self.emit(Op::Path(p), span);
                        self.record(at, [origin_of(root), None]);
                    }
                }
            }
            TKind::Index(v, k) => {
                self.expr(v);
                self.expr(k);
                let at = self.emit(Op::Index, span);
                self.record(at, [origin_of(v), origin_of(k)]);
            }
            TKind::List(items) => {
                for x in items {
                    self.expr(x);
                }
                self.emit(Op::List(items.len() as u32), span);
            }
            TKind::Object(entries) => {
                for (_, v) in entries {
                    self.expr(v);
                }
                let keys: Box<[SmolStr]> = entries.iter().map(|(k, _)| SmolStr::new(k)).collect();
                self.chunk.keys.push(keys);
                let k = (self.chunk.keys.len() - 1) as u32;
                self.emit(Op::Object(k), span);
            }
            TKind::Unary(op, x) => {
                self.expr(x);
                let at = self.emit(if *op == UnaryOp::Not { Op::Not } else { Op::Neg }, span);
                self.record(at, [origin_of(x), None]);
            }
            TKind::Binary(BinaryOp::And, l, r) => {
                self.expr(l);
                let j = self.emit(Op::AndJump(0), span);
                self.expr(r);
                self.emit(Op::ToBool, span);
                self.patch(j);
            }
            TKind::Binary(BinaryOp::Or, l, r) => {
                self.expr(l);
                let j = self.emit(Op::OrJump(0), span);
                self.expr(r);
                self.emit(Op::ToBool, span);
                self.patch(j);
            }
            TKind::Binary(op, l, r) => {
                // `item.field <op> constant` is the common shape of filter conditions:
                // compare in place, without cloning the field.
                if let (TKind::Field(..), Some(c)) = (&l.kind, r.as_const()) {
                    let (root, len) = field_root(l);
                    if let TKind::Local(slot) = root.kind {
                        self.use_slot(slot);
                        let p = self.chunk.path(field_segments(l, len, None));
                        let c = self.chunk.constant(c.clone());
                        let at = self.emit(Op::CmpLocalPathConst(*op, slot, p, c), span);
                        self.record(at, [origin_of(l), None]);
                        return;
                    }
                }
                self.expr(l);
                self.expr(r);
                let at = self.emit(Op::Binary(*op), span);
                self.record(at, [origin_of(l), origin_of(r)]);
            }
            TKind::If(c, t, f) => {
                self.expr(c);
                let j = self.emit(Op::JumpIfFalse(0), span);
                self.expr(t);
                let end = self.emit(Op::Jump(0), span);
                self.patch(j);
                self.expr(f);
                self.patch(end);
            }
            TKind::Pipeline { init, slot, ops } => {
                self.use_slot(*slot);
                self.expr(init);
                for op in ops {
                    self.emit(Op::SetLocal(*slot), op.span);
                    self.expr(op);
                }
            }
            TKind::Call(call) => {
                let mut params = Vec::with_capacity(call.args.len());
                let mut origins = Vec::with_capacity(call.args.len());
                let mut spans = Vec::with_capacity(call.args.len());
                for a in &call.args {
                    match a {
                        TArg::Value(x) => {
                            self.expr(x);
                            params.push(CallParam::Value);
                            origins.push(origin_of(x));
                            spans.push(x.span);
                        }
                        TArg::Template { body, slot } => {
                            self.use_slot(*slot);
                            let mut sub = compile(body);
                            sub.locals = sub.locals.max(slot + 1);
                            self.chunk.locals = self.chunk.locals.max(sub.locals);
                            let i = self.chunk.constant(Value::Null);
                            self.emit(Op::Const(i), body.span);
                            let fast = fast_template(body, *slot).map(Arc::new);
                            params.push(CallParam::Template(Arc::new(sub), *slot, fast));
                            origins.push(None);
                            spans.push(body.span);
                        }
                        TArg::Dynamic { source, relative, slot } => {
                            self.use_slot(*slot);
                            self.expr(source);
                            params.push(CallParam::Dynamic { relative: *relative, slot: *slot });
                            origins.push(None);
                            spans.push(source.span);
                        }
                        TArg::Absent => {
                            let i = self.chunk.constant(Value::Null);
                            self.emit(Op::Const(i), span);
                            params.push(CallParam::Absent);
                            origins.push(None);
                            spans.push(span);
                        }
                    }
                }
                self.chunk.calls.push(CallInfo {
                    func: call.func,
                    name: call.name.clone(),
                    params: params.into_boxed_slice(),
                    given: call.given,
                    origins: origins.into_boxed_slice(),
                    arg_spans: spans.into_boxed_slice(),
                });
                let i = (self.chunk.calls.len() - 1) as u32;
                self.emit(Op::Call(i), span);
            }
            TKind::Error => {
                // Programs with errors are never compiled; keep the chunk well-formed anyway.
                let i = self.chunk.constant(Value::Null);
                self.emit(Op::Const(i), span);
            }
        }
    }

    fn record(&mut self, at: usize, origins: [Option<Arc<Origin>>; 2]) {
        if origins.iter().any(Option::is_some) {
            self.chunk.origins.push((at as u32, origins));
        }
    }
}
