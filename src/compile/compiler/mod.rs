//! Typed AST → bytecode.
//!
//! One file per syntax family, like starlark-rust's `eval/bc/compiler/`: this file holds
//! the [`Compiler`], its small emit/patch helpers and the dispatcher [`Compiler::expr`];
//! `places` (fields, indexing, origins), `literals` (lists, objects), `operators`,
//! `control` (`if`, `pipeline`) and `calls` (arguments, templates) each add the methods of
//! their family.

mod calls;
mod control;
mod direct;
mod literals;
mod operators;
mod places;

use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::chunk::{Chunk, Instructions, Origin};
use super::op::Op;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, Name};
use crate::types::typed::{TExpr, TKind};
use crate::value::{no_segments, Segments, Value};

/// Compiles a checked, error-free typed expression into a chunk.
pub fn compile(e: &TExpr) -> Chunk {
    let mut c = Compiler::new();
    c.expr(e);
    c.chunk
}

pub use direct::{compile_direct, Direct};

struct Compiler {
    chunk: Chunk,
    /// The chunk's names, constants and paths by value ([`Index`]).
    names: Index<Name>,
    consts: Index<(Value, bool)>,
    paths: Index<Segments>,
}

/// Up to this many entries, a chunk's table is scanned ([`Chunk::name`], [`Chunk::constant`],
/// [`Chunk::path`]); past them it is looked up through an [`Index`].
const SCANNED: usize = 16;

/// A chunk table's entries by value, built once the table has more than [`SCANNED`] (empty
/// before): a scan finds one of a few sooner than a hash does, but a scan per entry of
/// thousands is quadratic work (`tdsl check` of 40,000 distinct names took 2.9 s;
/// `[x, 0, 1, …, 19999]` 4.6 s of a debug build's compile, its constants).
struct Index<K>(FxHashMap<K, u32>);

impl<K> Default for Index<K> {
    fn default() -> Index<K> {
        Index(FxHashMap::default())
    }
}

impl<K: Hash + Eq> Index<K> {
    /// The index of `key` in a table of `len` entries, when it is there; `None` too while
    /// the table is short enough to scan (`Some(None)` is "not there"). The first time past
    /// [`SCANNED`], the map is built from `entries` (each entry's key, `None` for one never
    /// shared, and its index; the first of equal keys wins).
    fn find(&mut self, len: usize, key: &K, entries: impl FnOnce() -> Vec<(Option<K>, u32)>) -> Option<Option<u32>> {
        if len <= SCANNED {
            return None;
        }
        if self.0.is_empty() {
            for (k, i) in entries() {
                if let Some(k) = k {
                    self.0.entry(k).or_insert(i);
                }
            }
        }
        Some(self.0.get(key).copied())
    }

    /// Notes `key` at `i`, appended to its table, when the table is looked up by the map.
    fn added(&mut self, key: K, i: u32) {
        if !self.0.is_empty() {
            self.0.insert(key, i);
        }
    }
}

impl Compiler {
    fn new() -> Compiler {
        // Room for a typical template or filter condition, so the list grows rarely.
        let chunk = Chunk { code: Instructions::with_capacity(16), ..Chunk::default() };
        Compiler { chunk, names: Index::default(), consts: Index::default(), paths: Index::default() }
    }

    fn emit(&mut self, op: Op, span: Span) -> usize {
        self.chunk.emit(op, span)
    }

    /// Interns a name in the chunk ([`Chunk::name`]; indexed once the chunk has many).
    fn name(&mut self, n: &Name) -> u32 {
        let names = &self.chunk.names;
        match self.names.find(names.len(), n, || names.iter().map(|m| Some(m.clone())).zip(0..).collect()) {
            None => self.chunk.name(n),
            Some(Some(i)) => i,
            Some(None) => {
                let i = self.chunk.names.len() as u32;
                self.chunk.names.push(n.clone());
                self.names.added(n.clone(), i);
                i
            }
        }
    }

    /// Interns a constant in the chunk ([`Chunk::constant`]; indexed once the chunk has
    /// many). Its key is the value and whether it is a float: `1` and `1.0` are equal values
    /// but different constants; lists and objects are never shared.
    fn constant(&mut self, v: Value) -> u32 {
        if matches!(v, Value::List(_) | Value::Object(_)) {
            return self.chunk.constant(v);
        }
        let float = matches!(v, Value::Float(_));
        let key = (v, float);
        let consts = &self.chunk.consts;
        let entries = || {
            let key_of = |c: &Value| match c {
                Value::List(_) | Value::Object(_) => None,
                c => Some((c.clone(), matches!(c, Value::Float(_)))),
            };
            consts.iter().map(key_of).zip(0..).collect()
        };
        match self.consts.find(consts.len(), &key, entries) {
            None => self.chunk.constant(key.0),
            Some(Some(i)) => i,
            Some(None) => {
                let i = self.chunk.consts.len() as u32;
                self.chunk.consts.push(key.0.clone());
                self.consts.added(key, i);
                i
            }
        }
    }

    /// Interns a path in the chunk ([`Chunk::path`]; indexed once the chunk has many).
    fn path(&mut self, segs: Segments) -> u32 {
        let paths = &self.chunk.paths;
        let entries = || paths.iter().map(|p| Some(p.segments().clone())).zip(0..).collect();
        match self.paths.find(paths.len(), &segs, entries) {
            None => self.chunk.path(segs),
            Some(Some(i)) => i,
            Some(None) => {
                let i = self.chunk.paths.len() as u32;
                self.chunk.paths.push(crate::value::Path::shared(segs.clone()));
                self.paths.added(segs, i);
                i
            }
        }
    }

    fn use_slot(&mut self, slot: u32) {
        self.chunk.locals = self.chunk.locals.max(slot + 1);
    }

    fn patch(&mut self, at: usize) {
        let target = self.chunk.code.len() as u32;
        if let Some(Op::Jump(t) | Op::JumpIfFalse(t) | Op::AndJump(t) | Op::OrJump(t)) = self.chunk.code.op_mut(at) {
            *t = target;
        }
    }

    fn expr(&mut self, e: &TExpr) {
        let span = e.span;
        match &e.kind {
            TKind::Const(v) => {
                let i = self.constant(v.clone());
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
                let p = self.path(if segs.is_empty() { no_segments() } else { segs[..].into() });
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
                let i = self.constant(Value::Null);
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
