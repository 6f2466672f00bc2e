//! One pass from text to bytecode, for programs without problems.
//!
//! The reference pipeline builds two trees before it emits an instruction: the parser's
//! AST and the checker's typed tree, each allocated, walked and freed. Compiling the
//! reference benchmark's W5 filter that way costs about 41,000 instructions, and parsing,
//! code generation and dropping the chunks alone already cost as much as jmespath's whole
//! parse (docs/performance.md, the eleventh round). This module reads the text once and
//! emits as it reads, as a one-pass compiler does: each sub-expression comes back as a
//! small summary ([`V`]: its type, span, height and what the code generator's special forms
//! need to know of it), not as a node.
//!
//! It is an accelerator, not a second definition, in the way the fast parser is one
//! (`syntax::fast`): it answers only for a program it is sure the reference pipeline
//! compiles without a diagnostic, and then with the chunk, type, REFs and free names that
//! pipeline gives. On anything else — a syntax error, a type the checker would question, a
//! node constant folding would change, a function it does not model, a program past a
//! limit — it returns `None` without a word and the reference pipeline runs and reports.
//! The typed tree is not built here: [`crate::Program`] builds it from the source when the
//! reference evaluator or `type_at` first asks. The differential property tests
//! (`tests/direct.rs`) compare the two pipelines' chunks, types and references on generated
//! programs, and the `compile` fuzz target does on arbitrary text.
//!
//! What it declines, by design (each a short way to the reference pipeline): operators
//! other than comparisons, `and`, `or` and `not`; constants folding would change (an
//! operation on constants only); field reads and indexing of a value whose type is not
//! `any` unless the field is plainly there; calls of functions that take keywords or
//! repeat their last parameter, of the inlined `if`, `pipeline`, `create_object`, of `sum`,
//! `avg` and `json_parse` (the checker adds its own checks to those), arguments out of
//! parameter order, `as`, templates given by name or through escapes, and strings holding
//! escapes where they name keys.

mod calls;

use std::sync::Arc;

use super::Compiler;
use crate::compile::chunk::{Origin, Pred, Root};
use crate::compile::op::Op;
use crate::runtime::Limits;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, ExprKind, Name, MAX_REF_SEGMENTS};
use crate::syntax::fast::{self, Parser};
use crate::syntax::{check_nesting, CHAIN_LEVEL, MAX_NESTING_CAP};
use crate::types::signature::Signatures;
use crate::types::{never_equal, outside_enum, Fit, FreeNames, RefUse, Scope, SeenKeys, Type};
use crate::value::{no_segments, Path, Segments, SmolStr, Value};

/// What the one pass made: the chunk, the result type, and what the program reads.
pub struct Direct {
    /// The program's chunk (templates included).
    pub chunk: crate::compile::Chunk,
    /// The result type.
    pub ty: Type,
    /// The REF paths read, in source order.
    pub refs: Vec<RefUse>,
    /// The free names read, in first-use order.
    pub names: Vec<(Name, Span)>,
}

/// Compiles `src` in `scope` in one pass, or `None` when the reference pipeline must (see
/// the module docs).
pub fn compile_direct(src: &str, scope: &Scope, funcs: &dyn Signatures, limits: &Limits) -> Option<Direct> {
    // A check its host stopped is the reference pipeline's to cut short.
    if crate::types::stop::poll() {
        return None;
    }
    // Nesting past the limit is the reference pipeline's to report (and this compiler
    // recurses once per level, as the parsers do: the check bounds its stack too).
    let max_nesting = limits.max_depth.min(MAX_NESTING_CAP);
    if check_nesting(src, max_nesting).is_some() {
        return None;
    }
    let mut scratch = SCRATCH.with(std::cell::Cell::take).unwrap_or_default();
    let out = fast::with_cursor(src, |p| {
        let mut d = D {
            p,
            scope,
            funcs,
            max_nesting,
            limit: max_nesting.saturating_mul(CHAIN_LEVEL),
            max_list: limits.max_list_len,
            c: Compiler::new(),
            items: std::mem::take(&mut scratch.items),
            refs: Vec::new(),
            names: FreeNames::default(),
            arg_types: std::mem::take(&mut scratch.arg_types),
            strings: 0,
            segs: std::mem::take(&mut scratch.segs),
            preds: std::mem::take(&mut scratch.preds),
            types: std::mem::take(&mut scratch.types),
        };
        d.p.ws();
        let out = d.climb(0).filter(|_| d.p.at_end()).map(|v| d.ty(v.ty).clone());
        let D { c, refs, names, items, arg_types, segs, preds, types, .. } = d;
        *scratch = Scratch { items, arg_types, segs, preds, types };
        let ty = out?;
        Some(Direct { chunk: c.chunk, ty, refs, names: names.into_list() })
    });
    // Emptied and kept for the next compile on this thread, unless grown large.
    scratch.clear();
    if scratch.small() {
        SCRATCH.with(|s| s.set(Some(scratch)));
    }
    out
}

/// The working lists of a compile, empty between compiles ([`SCRATCH`]).
#[derive(Default)]
struct Scratch {
    items: Vec<Ty>,
    arg_types: Vec<Type>,
    segs: Vec<Name>,
    preds: Vec<Pred>,
    types: Vec<Type>,
}

impl Scratch {
    fn clear(&mut self) {
        self.items.clear();
        self.arg_types.clear();
        self.segs.clear();
        self.preds.clear();
        self.types.clear();
    }

    /// Whether the lists are small enough to keep (a program with many nested templates,
    /// arguments or conditions frees its lists with it).
    fn small(&self) -> bool {
        let most = self.items.capacity().max(self.arg_types.capacity()).max(self.segs.capacity());
        most.max(self.preds.capacity()).max(self.types.capacity()) <= 64
    }
}

thread_local! {
    /// The working lists of the last compile on this thread, kept (empty) for the next one,
    /// as the checker keeps its own: each compile would otherwise allocate and free them. In
    /// a box made at the thread's first compile (static TLS is scarce in a library loaded
    /// with `dlopen`, as the Python extension module is).
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

/// The compiler's state: the cursor, what names mean, the chunk being emitted.
struct D<'s, 'p, 'a> {
    p: &'p mut Parser<'s>,
    scope: &'a Scope,
    funcs: &'a dyn Signatures,
    /// The parser's limit on nesting (the engine's, within the parser's cap).
    max_nesting: usize,
    /// The parser's limit on a tree's height ([`CHAIN_LEVEL`] units per level).
    limit: usize,
    max_list: usize,
    /// The chunk being emitted: the program's, or a template's while its body is read.
    c: Compiler,
    /// The element types of the templates being read, by slot (`item` is the last).
    items: Vec<Ty>,
    refs: Vec<RefUse>,
    names: FreeNames,
    /// The argument types of the calls being read, outermost first.
    arg_types: Vec<Type>,
    /// How many template strings are being read, one inside another.
    strings: usize,
    /// The segments of the field chains being read (each chain's from where it started).
    segs: Vec<Name>,
    /// The conditions of the nodes read inside templates ([`V::pred`]).
    preds: Vec<Pred>,
    /// The types of the nodes read whose type is not one of [`Ty`]'s own.
    types: Vec<Type>,
}

/// A sub-expression once its code is emitted: what its parent needs of it. Small (64
/// bytes), as it is handed back by every step of the descent: tables' entries by index.
struct V {
    ty: Ty,
    span: Span,
    /// The height of its tree, as the parser counts it.
    h: u32,
    form: Form,
    /// Its condition over the innermost template's element, when it is one (in
    /// `D::preds`; [`NO_PRED`] for none; computed only inside templates, for the
    /// template's fast form).
    pred: u32,
}

/// A sub-expression's type: the usual ones by name, any other kept in `D::types` (so that
/// a summary is a few words, copied freely, with nothing to drop).
#[derive(Clone, Copy, PartialEq)]
enum Ty {
    Any,
    Bool,
    Int,
    Number,
    Str,
    Null,
    Kept(u32),
}

/// The types [`Ty`] names, in its order.
static NAMED: [Type; 6] = [Type::Any, Type::Bool, Type::Int, Type::Number, Type::Str, Type::Null];

/// No condition.
const NO_PRED: u32 = u32::MAX;
/// A chain's path while the chain is being read.
const PENDING: u32 = u32::MAX - 1;
/// A chain of no field: no path.
const NO_PATH: u32 = u32::MAX;
/// One level of a tree's height, as the parser counts it.
const LEVEL: u32 = CHAIN_LEVEL as u32;

/// What kind of code a sub-expression compiled to, for the forms its parent may take.
#[derive(Clone, Copy)]
enum Form {
    /// A constant (the chunk's constant `i`): one `CONST`, the last instruction.
    Const(u32),
    /// A variable or element and the `n` fields read from it: one instruction, the last
    /// (`GLOBAL`, `GLOBAL_PATH` with its path led by the name, `LOCAL`, `LOCAL_PATH`), of
    /// path `path` ([`NO_PATH`] for none); [`PENDING`] until the chain ends, its segments
    /// on `D::segs`.
    Chain { root: ChainRoot, path: u32, n: u32 },
    /// `REF:context.segments`: one `REF` of the chunk's name and path.
    Ref { name: u32, path: u32 },
    /// A call: its `CALL` (or, fused, `CALL_FUSED`) of call site `site`, at `at`, is the
    /// last instruction.
    Call { site: u32, at: u32 },
    /// `and` / `or`.
    Logic(BinaryOp),
    /// Anything else.
    Other,
}

#[derive(Clone, Copy, PartialEq)]
enum ChainRoot {
    /// A variable: the chunk's name.
    Global(u32),
    /// An element, by slot.
    Local(u32),
    /// A computed value, its code emitted (a call, an index).
    Value,
}

impl V {
    fn new(ty: Ty, span: Span, h: u32, form: Form) -> V {
        V { ty, span, h, form, pred: NO_PRED }
    }

    fn is_const(&self) -> bool {
        matches!(self.form, Form::Const(_))
    }
}

impl D<'_, '_, '_> {
    /// A node of height `h`, or `None` past the parser's limit.
    fn fits(&self, h: u32) -> Option<u32> {
        (h as usize <= self.limit).then_some(h)
    }

    /// The type `t` names.
    fn ty(&self, t: Ty) -> &Type {
        match t {
            Ty::Any => &NAMED[0],
            Ty::Bool => &NAMED[1],
            Ty::Int => &NAMED[2],
            Ty::Number => &NAMED[3],
            Ty::Str => &NAMED[4],
            Ty::Null => &NAMED[5],
            Ty::Kept(i) => self.types.get(i as usize).unwrap_or(&NAMED[0]),
        }
    }

    /// A name for `t`: its own, or its place in `types`.
    fn keep_ty(&mut self, t: Type) -> Ty {
        match t {
            Type::Any => Ty::Any,
            Type::Bool => Ty::Bool,
            Type::Int => Ty::Int,
            Type::Number => Ty::Number,
            Type::Str => Ty::Str,
            Type::Null => Ty::Null,
            t => {
                self.types.push(t);
                Ty::Kept((self.types.len() - 1) as u32)
            }
        }
    }

    /// Keeps a condition, for the node that has it: its index in `preds`.
    fn keep(&mut self, p: Option<Pred>) -> u32 {
        match p {
            Some(p) => {
                self.preds.push(p);
                (self.preds.len() - 1) as u32
            }
            None => NO_PRED,
        }
    }

    /// Takes back the condition kept at `i`.
    fn take(&mut self, i: u32) -> Option<Pred> {
        self.preds.get_mut(i as usize).map(|p| std::mem::replace(p, Pred::Const(false)))
    }

    /// The value of the constant `v` is, in the current chunk.
    fn konst(&self, v: &V) -> Option<&Value> {
        match v.form {
            Form::Const(i) => self.c.chunk.consts.get(i as usize),
            _ => None,
        }
    }

    /// The innermost template's slot, inside one.
    fn item_slot(&self) -> Option<u32> {
        self.items.len().checked_sub(1).map(|s| s as u32)
    }

    /// Operands and infix operators binding at least as tightly as `min`.
    fn climb(&mut self, min: usize) -> Option<V> {
        let mut lhs = self.operand()?;
        let mut lhs_is_comparison = false;
        while let Some((op, len)) = self.p.infix() {
            let prec = usize::from(op.precedence());
            if prec < min {
                break;
            }
            self.p.pos += len;
            self.p.ws();
            lhs = match op {
                BinaryOp::And | BinaryOp::Or => self.logic(op, lhs, prec)?,
                _ if op.is_comparison() => {
                    if lhs_is_comparison {
                        return None;
                    }
                    let rhs = self.climb(prec + 1)?;
                    self.comparison(op, lhs, rhs)?
                }
                _ => return None,
            };
            lhs_is_comparison = op.is_comparison();
        }
        Some(lhs)
    }

    /// `l and r`, `l or r`, `l` compiled: the jump, `r`, `TO_BOOL`.
    fn logic(&mut self, op: BinaryOp, l: V, prec: usize) -> Option<V> {
        let j = self.c.emit(if op == BinaryOp::And { Op::AndJump(0) } else { Op::OrJump(0) }, Span::default());
        let r = self.climb(prec + 1)?;
        if l.is_const() && r.is_const() {
            return None; // folded by the reference pipeline
        }
        let span = l.span.to(r.span);
        let h = self.fits((l.h + 1).max(r.h + LEVEL))?;
        self.c.emit(Op::ToBool, span);
        self.c.chunk.code.set_span(j, span);
        self.c.patch(j);
        let pred = if self.items.is_empty() { None } else { self.logic_pred(op, &l, &r) };
        let pred = self.keep(pred);
        Some(V { pred, ..V::new(Ty::Bool, span, h, Form::Logic(op)) })
    }

    /// The condition of `l op r` (`and`/`or`), flattened as the code generator flattens it.
    fn logic_pred(&mut self, op: BinaryOp, l: &V, r: &V) -> Option<Pred> {
        // The left operand's list, when it is a chain of the same operator, grows by the
        // right one's parts: one list for the whole chain, resized in place.
        let mut parts = match (l.form, self.pred(l)?) {
            (Form::Logic(o), Pred::And(ps) | Pred::Or(ps)) if o == op => ps.into_vec(),
            (_, p) => vec![p],
        };
        match (r.form, self.pred(r)?) {
            (Form::Logic(o), Pred::And(ps) | Pred::Or(ps)) if o == op => parts.extend(ps.into_vec()),
            (_, p) => {
                parts.reserve_exact(1);
                parts.push(p);
            }
        }
        let parts = parts.into_boxed_slice();
        Some(if op == BinaryOp::And { Pred::And(parts) } else { Pred::Or(parts) })
    }

    /// `v`'s condition over the innermost template's element (`predicate` of the code
    /// generator).
    fn pred(&mut self, v: &V) -> Option<Pred> {
        match v.form {
            Form::Const(_) => Some(Pred::Const(self.konst(v)?.truthy())),
            Form::Chain { .. } => Some(Pred::Truthy(self.item_path(v)?)),
            _ => self.take(v.pred),
        }
    }

    /// `item.a.b` of the innermost template → its path; `None` for anything else.
    fn item_path(&self, v: &V) -> Option<Path> {
        match &v.form {
            Form::Chain { root: ChainRoot::Local(s), path, .. } if Some(*s) == self.item_slot() => {
                Some(Path::shared(self.segments_of(*path, 0)))
            }
            _ => None,
        }
    }

    /// The segments of the chunk's path `path` from `skip` on (shared when all), or none.
    fn segments_of(&self, path: u32, skip: usize) -> Segments {
        match self.c.chunk.paths.get(path as usize) {
            Some(p) if skip == 0 => p.segments().clone(),
            Some(p) => p.segments().get(skip..).unwrap_or_default().into(),
            None => no_segments(),
        }
    }

    /// Where `v`'s value comes from, when that is a fixed place in the data.
    fn origin(&self, v: &V) -> Option<Origin> {
        match &v.form {
            Form::Chain { root: ChainRoot::Local(s), path, .. } => {
                Some(Origin { root: Root::Local(*s), segments: self.segments_of(*path, 0) })
            }
            Form::Chain { root: ChainRoot::Global(name), path, .. } => {
                let name = self.c.chunk.names.get(*name as usize)?.clone();
                Some(Origin { root: Root::Global(name), segments: self.segments_of(*path, 1) })
            }
            Form::Ref { name, path } => {
                let name = self.c.chunk.names.get(*name as usize)?.clone();
                Some(Origin { root: Root::Ref(name), segments: self.segments_of(*path, 0) })
            }
            _ => None,
        }
    }

    /// A comparison, both operands compiled: `item.f <op> constant` as one instruction.
    fn comparison(&mut self, op: BinaryOp, l: V, r: V) -> Option<V> {
        if l.is_const() && r.is_const() {
            return None; // folded by the reference pipeline
        }
        let any = |t: Ty| t == Ty::Any;
        let num = |t: Ty| matches!(t, Ty::Int | Ty::Number);
        let ok = match op {
            // What the checker reports (`compare::comparison`): `null` against a value
            // never null, a string outside an enum, types that never hold equal values.
            BinaryOp::Eq | BinaryOp::Ne => {
                let constant_fits = |k: &V, v: &V| match self.konst(k) {
                    Some(Value::Str(s)) => outside_enum(self.ty(v.ty), s).is_none(),
                    Some(Value::Null) => self.ty(v.ty).fits(&Type::Null) != Fit::No,
                    _ => true,
                };
                constant_fits(&l, &r) && constant_fits(&r, &l) && !never_equal(self.ty(l.ty), self.ty(r.ty))
            }
            _ => {
                any(l.ty)
                    || any(r.ty)
                    || l.ty == Ty::Null
                    || r.ty == Ty::Null
                    || (num(l.ty) && num(r.ty))
                    || (l.ty == Ty::Str && r.ty == Ty::Str)
            }
        };
        if !ok {
            return None;
        }
        let span = l.span.to(r.span);
        let h = self.fits((l.h + 1).max(r.h + LEVEL))?;
        let pred = if self.items.is_empty() { None } else { self.cmp_pred(op, &l, &r) };
        let pred = self.keep(pred);
        match (l.form, r.form) {
            (Form::Chain { root: ChainRoot::Local(slot), path: p, n }, Form::Const(c)) if n > 0 => {
                // The path's and the constant's instructions give way to one.
                let len = self.c.chunk.code.len();
                self.c.chunk.code.truncate(len.checked_sub(2)?);
                let at = self.c.emit(Op::CmpLocalPathConst(op, slot, p, c), span);
                self.c.record(at, [self.origin(&l), None]);
            }
            _ => {
                let at = self.c.emit(Op::Binary(op), span);
                self.c.record(at, [self.origin(&l), self.origin(&r)]);
            }
        }
        Some(V { pred, ..V::new(Ty::Bool, span, h, Form::Other) })
    }

    /// The condition `item.path <op> constant`, when the comparison is one.
    fn cmp_pred(&self, op: BinaryOp, l: &V, r: &V) -> Option<Pred> {
        let k = self.konst(r).filter(|k| super::calls::compared_in_place(k))?;
        Some(Pred::Cmp(op, self.item_path(l)?, k.clone()))
    }

    /// Prefix operators, a primary, postfix operators; the whitespace after it.
    fn operand(&mut self) -> Option<V> {
        let start = self.p.pos;
        match self.p.peek()? {
            b'!' if self.p.at(1) != Some(b'=') => return self.not(start, 1),
            b'n' if self.p.keyword(b"not") => return self.not(start, 3),
            b'-' => return None, // negation: folded or checked by the reference pipeline
            _ => {}
        }
        let mark = self.segs.len();
        let mut v = self.primary()?;
        self.p.ws();
        loop {
            match self.p.peek() {
                Some(b'.') => {
                    match &mut v.form {
                        Form::Chain { n, path: PENDING, .. } => *n += 1,
                        // Fields of a computed value: `PATH` after its code.
                        Form::Other | Form::Call { .. } => {
                            v.form = Form::Chain { root: ChainRoot::Value, path: PENDING, n: 1 }
                        }
                        // A field of a constant folds; of a REF, the code generator merges
                        // it by rules of its own: the reference pipeline's.
                        _ => return None,
                    }
                    self.p.pos += 1;
                    self.p.ws();
                    let seg = self.p.segment()?;
                    v.ty = self.field_type(v.ty, &seg.node)?;
                    v.span = v.span.to(seg.span);
                    v.h = self.fits(v.h + LEVEL)?;
                    self.segs.push(seg.node);
                }
                Some(b'[') => {
                    self.finish_chain(&mut v, mark)?;
                    self.p.pos += 1;
                    self.p.ws();
                    let k = self.climb(0)?;
                    if self.p.peek() != Some(b']') {
                        return None;
                    }
                    self.p.pos += 1;
                    if (v.is_const() && k.is_const()) || v.ty != Ty::Any {
                        return None;
                    }
                    let span = Span::new(v.span.start as usize, self.p.pos);
                    let h = self.fits(LEVEL + v.h.max(k.h))?;
                    let at = self.c.emit(Op::Index, span);
                    self.c.record(at, [self.origin(&v), self.origin(&k)]);
                    v = V::new(Ty::Any, span, h, Form::Other);
                }
                _ => {
                    self.finish_chain(&mut v, mark)?;
                    return Some(v);
                }
            }
            self.p.ws();
        }
    }

    /// Emits the pending chain `v` (its segments from `mark` on): one instruction.
    fn finish_chain(&mut self, v: &mut V, mark: usize) -> Option<()> {
        let Form::Chain { root, path: PENDING, n } = v.form else { return Some(()) };
        // Taken out whole (no allocation) and put back emptied to `mark`.
        let mut segs = std::mem::take(&mut self.segs);
        let chain = segs.get(mark..).unwrap_or_default();
        if chain.len() != n as usize {
            return None;
        }
        let span = v.span;
        let path = match root {
            ChainRoot::Global(name) if chain.is_empty() => {
                self.c.emit(Op::Global(name), span);
                NO_PATH
            }
            ChainRoot::Global(name) => {
                let lead = self.c.chunk.names.get(name as usize)?.clone();
                let p = self.path_of(Some(&lead), chain);
                self.c.emit(Op::GlobalPath(name, p), span);
                p
            }
            ChainRoot::Local(s) if chain.is_empty() => {
                self.c.use_slot(s);
                self.c.emit(Op::Local(s), span);
                NO_PATH
            }
            ChainRoot::Local(s) => {
                self.c.use_slot(s);
                let p = self.path_of(None, chain);
                self.c.emit(Op::LocalPath(s, p), span);
                p
            }
            ChainRoot::Value => {
                // The value's origin is never a fixed place (a call's or an index's result):
                // nothing to record.
                let p = self.path_of(None, chain);
                self.c.emit(Op::Path(p), span);
                NO_PATH
            }
        };
        segs.truncate(mark);
        self.segs = segs;
        v.form = match root {
            ChainRoot::Value => Form::Other,
            root => Form::Chain { root, path, n },
        };
        Some(())
    }

    /// The chunk's path for `lead` (when given) and `segs`: an equal one already there,
    /// else a new one.
    fn path_of(&mut self, lead: Option<&Name>, segs: &[Name]) -> u32 {
        let paths = &self.c.chunk.paths;
        let k = usize::from(lead.is_some());
        let same = |p: &Path| p.len() == segs.len() + k && lead.is_none_or(|l| p.first() == Some(l)) && p[k..] == *segs;
        let all = || -> Segments { lead.into_iter().chain(segs).cloned().collect() };
        if paths.len() > super::SCANNED {
            return self.c.path(all());
        }
        if let Some(i) = paths.iter().position(same) {
            return i as u32;
        }
        // Scanned already: a new path.
        self.c.chunk.paths.push(Path::shared(all()));
        (self.c.chunk.paths.len() - 1) as u32
    }

    /// The type of `.seg` of a value of type `t`, when the checker reports nothing.
    fn field_type(&mut self, t: Ty, seg: &str) -> Option<Ty> {
        if t == Ty::Any {
            return Some(Ty::Any);
        }
        let field = crate::types::plain_field_type(self.ty(t), seg)?;
        Some(self.keep_ty(field))
    }

    /// `not x`.
    fn not(&mut self, start: usize, len: usize) -> Option<V> {
        self.p.pos += len;
        self.p.ws();
        let x = self.climb(NOT_PRECEDENCE)?;
        if x.is_const() {
            return None;
        }
        let span = Span::new(start, x.span.end as usize);
        let h = self.fits(LEVEL + x.h)?;
        let at = self.c.emit(Op::Not, span);
        self.c.record(at, [self.origin(&x), None]);
        let pred = if self.items.is_empty() { None } else { self.pred(&x).map(|p| Pred::Not(Box::new(p))) };
        let pred = self.keep(pred);
        Some(V { pred, ..V::new(Ty::Bool, span, h, Form::Other) })
    }

    /// A constant: one `CONST`.
    fn constant(&mut self, v: Value, ty: Ty, span: Span) -> V {
        let i = self.c.constant(v);
        self.c.emit(Op::Const(i), span);
        V::new(ty, span, 1, Form::Const(i))
    }

    /// A primary, without the whitespace after it.
    fn primary(&mut self) -> Option<V> {
        let start = self.p.pos;
        match self.p.peek()? {
            b'"' | b'\'' => {
                let (inner, end, escapes) = self.p.string_raw()?;
                let text = self.string_value(inner, end, escapes)?;
                Some(self.constant(Value::Str(text), Ty::Str, Span::new(start, self.p.pos)))
            }
            b'0'..=b'9' => {
                let (e, _) = self.p.number()?;
                Some(match e.kind {
                    ExprKind::Int(i) => self.constant(Value::Int(i), Ty::Int, e.span),
                    ExprKind::Float(f) => self.constant(Value::Float(f), Ty::Number, e.span),
                    _ => return None,
                })
            }
            b'R' if self.p.starts_with(b"REF:") => self.reference(),
            b'[' => self.list(start),
            b'{' => self.object(start),
            b'(' => {
                self.p.pos += 1;
                self.p.ws();
                let pc = self.c.chunk.code.len();
                let mut v = self.climb(0)?;
                if self.p.peek() != Some(b')') {
                    return None;
                }
                self.p.pos += 1;
                // The parentheses are part of the node's span, and so of its instructions'
                // (a child's span is always narrower than its parent's).
                let span = Span::new(start, self.p.pos);
                self.c.chunk.code.respan(pc, v.span, span);
                // So are a name's and a REF's where they are recorded as read.
                match v.form {
                    Form::Chain { root: ChainRoot::Global(_), n: 0, .. } => self.names.respan_last(v.span, span),
                    Form::Ref { .. } => {
                        if let Some(r) = self.refs.last_mut().filter(|r| r.span == v.span) {
                            r.span = span;
                        }
                    }
                    // And a call's parameters left out, which take the call's span.
                    Form::Call { site, .. } => {
                        if let Some(call) = self.c.chunk.calls.get_mut(site as usize) {
                            call.params.respan(v.span, span);
                        }
                    }
                    _ => {}
                }
                v.span = span;
                // Its code is emitted: a field after it would have merged into it (`(a).b`
                // is the chain `a.b` to the code generator).
                let mut probe = self.p.pos;
                while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.p.byte(probe) {
                    probe += 1;
                }
                if self.p.byte(probe) == Some(b'.') {
                    return None;
                }
                Some(v)
            }
            c if fast::is_ident_start(c) => self.word(),
            _ => None,
        }
    }

    /// A string literal's value, decoded; `None` for a bad escape.
    fn string_value(&mut self, inner: usize, end: usize, escapes: bool) -> Option<SmolStr> {
        let raw = self.p.text(inner, end);
        if !escapes {
            return Some(SmolStr::new(raw));
        }
        let (text, _, errors) = crate::syntax::escape::unescape(raw, inner, crate::syntax::escape::Dialect::Expression);
        errors.is_empty().then(|| SmolStr::new(&text))
    }

    /// `REF:context.segments`.
    fn reference(&mut self) -> Option<V> {
        let (r, span) = self.p.ref_path()?;
        if r.segments.len() > MAX_REF_SEGMENTS || !matches!(self.scope.ref_context(&r.context.node), Some(Type::Any)) {
            return None;
        }
        if self.p.peek() == Some(b'.') {
            return None; // `(REF:x).y`'s merging is the code generator's
        }
        let names: Vec<Name> = r.segments.iter().map(|s| s.node.clone()).collect();
        let segs: Segments = if names.is_empty() { no_segments() } else { names[..].into() };
        self.refs.push(RefUse { context: r.context.node.clone(), segments: names, span });
        let name = self.c.name(&r.context.node);
        let path = self.c.path(segs);
        self.c.emit(Op::Ref(name, path), span);
        Some(V::new(Ty::Any, span, 1, Form::Ref { name, path }))
    }

    /// `[a, b, …]`.
    fn list(&mut self, start: usize) -> Option<V> {
        self.p.pos += 1;
        self.p.ws();
        let (mut count, mut h, mut all_const) = (0usize, 0u32, true);
        let mut elem = Type::Never;
        self.sequence(b']', |d| {
            let v = d.climb(0)?;
            count += 1;
            h = h.max(v.h);
            all_const &= v.is_const();
            elem = std::mem::replace(&mut elem, Type::Never).union(d.ty(v.ty).clone());
            Some(())
        })?;
        if all_const || count > self.max_list {
            return None;
        }
        let span = Span::new(start, self.p.pos);
        let h = self.fits(h + LEVEL)?;
        self.c.emit(Op::List(count as u32), span);
        let elem = if elem == Type::Never { Type::Any } else { elem };
        let ty = self.keep_ty(Type::List(Arc::new(elem)));
        Some(V::new(ty, span, h, Form::Other))
    }

    /// `{k: v, …}`.
    fn object(&mut self, start: usize) -> Option<V> {
        self.p.pos += 1;
        self.p.ws();
        let mut fields: Vec<(Name, Type)> = Vec::new();
        let mut keys = SeenKeys::default();
        let (mut h, mut all_const) = (0u32, true);
        self.sequence(b'}', |d| {
            let key = match d.p.peek()? {
                b'"' | b'\'' => {
                    let (inner, end, escapes) = d.p.string_raw()?;
                    if escapes {
                        return None;
                    }
                    crate::syntax::intern(d.p.text(inner, end))
                }
                _ => d.p.ident()?.node,
            };
            d.p.ws();
            d.p.expect(b':')?;
            if fields.len() >= d.max_list || !keys.insert(&key, fields.iter().map(|(k, _)| k)) {
                return None; // past the list limit, or a duplicate key: reported by the checker
            }
            let v = d.climb(0)?;
            h = h.max(v.h);
            all_const &= v.is_const();
            fields.push((key, d.ty(v.ty).clone()));
            Some(())
        })?;
        if all_const || fields.len() > self.max_list {
            return None;
        }
        let span = Span::new(start, self.p.pos);
        let h = self.fits(h + LEVEL)?;
        let k = self.c.chunk.keys.len() as u32;
        self.c.chunk.keys.extend(fields.iter().map(|(k, _)| SmolStr::new(k)));
        self.c.emit(Op::Object(k, fields.len() as u32), span);
        let ty = self.keep_ty(Type::object(fields, false));
        Some(V::new(ty, span, h, Form::Other))
    }

    /// `item ("," item)* ","?` up to `close`, the cursor after the opening bracket; leaves
    /// the cursor just after `close`.
    fn sequence(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        loop {
            if self.p.peek() == Some(close) {
                self.p.pos += 1;
                return Some(());
            }
            item(self)?;
            match self.p.peek()? {
                b',' => {
                    self.p.pos += 1;
                    self.p.ws();
                }
                c if c == close => {
                    self.p.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A name, a keyword literal or a call.
    fn word(&mut self) -> Option<V> {
        let (start, end) = self.p.ident_span()?;
        let span = Span::new(start, end);
        if self.p.peek() == Some(b'(') {
            self.p.pos += 1;
            self.p.ws();
            return self.call(start, end);
        }
        match self.p.text(start, end) {
            "true" => return Some(self.constant(Value::Bool(true), Ty::Bool, span)),
            "false" => return Some(self.constant(Value::Bool(false), Ty::Bool, span)),
            "null" => return Some(self.constant(Value::Null, Ty::Null, span)),
            "and" | "or" | "not" => return None,
            "item" => {
                if let Some(slot) = self.item_slot() {
                    let ty = self.items.last().copied().unwrap_or(Ty::Any);
                    return Some(V::new(
                        ty,
                        span,
                        1,
                        Form::Chain { root: ChainRoot::Local(slot), path: PENDING, n: 0 },
                    ));
                }
            }
            _ => {}
        }
        let ident = self.p.name_at(start, end);
        let ty = self.scope.name(&ident)?;
        let ty = self.keep_ty(ty);
        if !self.names.contains(&ident) {
            self.names.push(ident.clone(), span);
        }
        // Interned now, as the code generator interns it when it emits the chain (nothing
        // between the two adds a name).
        let name = self.c.name(&ident);
        Some(V::new(ty, span, 1, Form::Chain { root: ChainRoot::Global(name), path: PENDING, n: 0 }))
    }
}

/// Precedence of `not` (as in the parser).
const NOT_PRECEDENCE: usize = 3;
