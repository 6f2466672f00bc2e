//! Typed AST → bytecode.
//!
//! One file per syntax family, like starlark-rust's `eval/bc/compiler/`: this file holds
//! the [`Compiler`], its small emit/patch helpers and the dispatcher [`Compiler::expr`];
//! `places` (fields, indexing, origins), `literals` (lists, objects), `operators`,
//! `control` (`if`, `pipeline`) and `calls` (arguments, templates) each add the methods of
//! their family.

mod calls;
mod control;
mod literals;
mod operators;
mod places;

use rustc_hash::FxHashMap;

use super::chunk::{Chunk, Origin};
use super::op::Op;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, Name};
use crate::types::typed::{TExpr, TKind};
use crate::value::{no_segments, Value};

/// Compiles a checked, error-free typed expression into a chunk.
pub fn compile(e: &TExpr) -> Chunk {
    // Room for a typical template or filter condition, so the two lists grow rarely.
    let chunk = Chunk { code: Vec::with_capacity(16), spans: Vec::with_capacity(16), ..Chunk::default() };
    let mut c = Compiler { chunk, names: FxHashMap::default() };
    c.expr(e);
    c.chunk
}

struct Compiler {
    chunk: Chunk,
    /// The chunk's names by name, once it has more than [`SCANNED_NAMES`] (empty before): a
    /// scan finds one of a few sooner than a hash does, but a scan per name of thousands is
    /// quadratic work.
    names: FxHashMap<Name, u32>,
}

/// Up to this many names, [`Compiler::name`] scans the chunk's list ([`Chunk::name`]).
const SCANNED_NAMES: usize = 16;

impl Compiler {
    fn emit(&mut self, op: Op, span: Span) -> usize {
        self.chunk.emit(op, span)
    }

    /// Interns a name in the chunk ([`Chunk::name`]; indexed once the chunk has many).
    fn name(&mut self, n: &Name) -> u32 {
        if self.chunk.names.len() <= SCANNED_NAMES {
            return self.chunk.name(n);
        }
        if self.names.is_empty() {
            self.names.extend(self.chunk.names.iter().cloned().zip(0..));
        }
        if let Some(&i) = self.names.get(n) {
            return i;
        }
        let i = self.chunk.names.len() as u32;
        self.chunk.names.push(n.clone());
        self.names.insert(n.clone(), i);
        i
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
                let i = self.name(n);
                self.emit(Op::Global(i), span);
            }
            TKind::Local(s) => {
                self.use_slot(*s);
                self.emit(Op::Local(*s), span);
            }
            TKind::Ref(ctx, segs) => {
                let n = self.name(ctx);
                let p = self.chunk.path(if segs.is_empty() { no_segments() } else { segs[..].into() });
                self.emit(Op::Ref(n, p), span);
            }
            TKind::Field(..) => self.field(e, span),
            TKind::Index(vk) => self.index(&vk[0], &vk[1], span),
            TKind::List(items) => self.list(items, span),
            TKind::Object(entries) => self.object(entries, span),
            TKind::Unary(op, x) => self.unary(*op, x, span),
            TKind::Binary(op @ (BinaryOp::And | BinaryOp::Or), lr) => self.short_circuit(*op, &lr[0], &lr[1], span),
            TKind::Binary(op, lr) => self.binary(*op, &lr[0], &lr[1], span),
            TKind::If(ctf) => self.if_(&ctf[0], &ctf[1], &ctf[2], span),
            TKind::Pipeline { init, slot, ops } => self.pipeline(init, *slot, ops),
            TKind::Call(call) => self.call(call, span),
            TKind::Error => {
                // Programs with errors are never compiled; keep the chunk well-formed anyway.
                let i = self.chunk.constant(Value::Null);
                self.emit(Op::Const(i), span);
            }
        }
    }

    fn record(&mut self, at: usize, origins: [Option<Origin>; 2]) {
        if origins.iter().any(Option::is_some) {
            self.chunk.origins.push((at as u32, origins));
        }
    }
}
