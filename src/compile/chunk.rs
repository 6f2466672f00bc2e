//! A compiled unit: instructions with a span each, and the tables they index.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use super::op::Op;
use crate::functions::FuncId;
use crate::span::Span;
use crate::syntax::ast::Name;
use crate::types::typed::TExpr;
use crate::value::{Path, Segments, SmolStr, Value};

/// Compiled code for one expression or template.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    /// The instructions, each with its source span ([`Chunk::span`]); evaluation ends after
    /// the last one with the result on the stack.
    pub code: Instructions,
    /// Constants.
    pub consts: Vec<Value>,
    /// Variable and REF context names.
    pub names: Vec<Name>,
    /// Field paths (segments after a root), each with its inline cache.
    pub paths: Vec<Path>,
    /// The keys of the chunk's object constructors, each object's in a run
    /// ([`Op::Object`]`(k, n)`: `n` from `k`), in the form object keys take (cloned per object
    /// built, so never copied or allocated there). One table, not a list per object.
    pub keys: Vec<SmolStr>,
    /// Call sites.
    pub calls: Vec<CallInfo>,
    /// Where operands of an instruction came from, for error locations.
    pub origins: Vec<(u32, [Option<Origin>; 2])>,
    /// Local slots this chunk and its templates use.
    pub locals: u32,
    /// The source text, for chunks compiled from a run-time template.
    pub source: Option<Arc<str>>,
}

/// A chunk's instructions, each held with the source span it was compiled from: one list of
/// pairs, so that a chunk's code and spans take one allocation, not two. Read as a list of
/// instructions; [`Chunk::span`] gives an instruction's span.
#[derive(Clone, Debug, Default)]
pub struct Instructions(Vec<(Op, Span)>);

impl Instructions {
    /// Room for `n` instructions.
    pub(crate) fn with_capacity(n: usize) -> Instructions {
        Instructions(Vec::with_capacity(n))
    }

    /// How many instructions there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Instruction `pc`.
    #[inline]
    pub fn get(&self, pc: usize) -> Option<Op> {
        self.0.get(pc).map(|&(op, _)| op)
    }

    /// The instructions in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Op> + ExactSizeIterator + '_ {
        self.0.iter().map(|(op, _)| op)
    }

    /// The instruction of a chunk of one instruction.
    #[inline]
    pub fn single(&self) -> Option<Op> {
        match self.0.as_slice() {
            [(op, _)] => Some(*op),
            _ => None,
        }
    }

    /// Sets the span of instruction `at` (one emitted before its span was known).
    pub(crate) fn set_span(&mut self, at: usize, span: Span) {
        if let Some((_, s)) = self.0.get_mut(at) {
            *s = span;
        }
    }

    /// Gives the instructions from `from` on whose span is `old` the span `new` (a node's
    /// own instructions, once parentheses around it widen its span).
    pub(crate) fn respan(&mut self, from: usize, old: Span, new: Span) {
        for (_, s) in self.0.iter_mut().skip(from) {
            if *s == old {
                *s = new;
            }
        }
    }

    /// Keeps the first `len` instructions.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    /// Removes instruction `at` (the ones after it move up; no jump may cross it).
    pub(crate) fn remove(&mut self, at: usize) {
        if at < self.0.len() {
            self.0.remove(at);
        }
    }

    /// Instruction `at`, to patch.
    pub(crate) fn op_mut(&mut self, at: usize) -> Option<&mut Op> {
        self.0.get_mut(at).map(|(op, _)| op)
    }
}

/// A call site: the function and how each parameter is passed.
#[derive(Clone, Debug)]
pub struct CallInfo {
    /// The function.
    pub func: FuncId,
    /// Its name, for errors.
    pub name: Name,
    /// One entry per parameter, held in the call site itself for one or two ([`Params`]).
    pub params: Params,
    /// Bit `i` set when parameter `i` was given.
    pub given: u64,
}

/// A call site's parameters, read as a list (in parameter order): one or two, as nearly
/// every call has, held in place; none or more than two in one allocation of their own (none
/// for none). The VM reads a call's list once per call ([`Params`] dereferenced), not once
/// per element, so the form costs its loops nothing.
#[derive(Clone, Debug)]
pub enum Params {
    /// One parameter.
    One([ParamSite; 1]),
    /// Two parameters.
    Two([ParamSite; 2]),
    /// Any other number.
    Many(Box<[ParamSite]>),
}

impl Deref for Params {
    type Target = [ParamSite];

    #[inline]
    fn deref(&self) -> &[ParamSite] {
        match self {
            Params::One(p) => p,
            Params::Two(p) => p,
            Params::Many(p) => p,
        }
    }
}

impl Params {
    /// Gives the entries spanned `old` (parameters left out, which take the call's span) the
    /// span `new` (parentheses around the call widen it).
    pub(crate) fn respan(&mut self, old: Span, new: Span) {
        let entries: &mut [ParamSite] = match self {
            Params::One(p) => p,
            Params::Two(p) => p,
            Params::Many(p) => p,
        };
        for p in entries.iter_mut().filter(|p| p.span == old) {
            p.span = new;
        }
    }
}

/// One parameter of a call site.
#[derive(Clone, Debug)]
pub struct ParamSite {
    /// How it is passed.
    pub pass: CallParam,
    /// The span of its argument (the call's span when defaulted).
    pub span: Span,
    /// Where its value came from, when that is a fixed place in the data (for error
    /// locations).
    pub origin: Option<Origin>,
}

impl CallInfo {
    /// How parameter `i` is passed.
    pub fn param(&self, i: usize) -> Option<&CallParam> {
        self.params.get(i).map(|p| &p.pass)
    }

    /// The span of parameter `i`'s argument.
    pub fn arg_span(&self, i: usize) -> Option<Span> {
        self.params.get(i).map(|p| p.span)
    }

    /// Where parameter `i`'s value came from.
    pub fn origin(&self, i: usize) -> Option<&Origin> {
        self.params.get(i).and_then(|p| p.origin.as_ref())
    }

    /// The fast form of parameter `i`'s template, when it has one.
    pub fn fast(&self, i: usize) -> Option<&Fast> {
        fast_in(&self.params, i)
    }
}

/// The fast form of the template of parameter `i` of `params`, when it has one (for a list
/// already read out of its [`Params`]).
#[inline]
pub fn fast_in(params: &[ParamSite], i: usize) -> Option<&Fast> {
    match params.get(i).map(|p| &p.pass) {
        Some(CallParam::Template(t, _)) => t.fast(),
        _ => None,
    }
}

/// How one parameter is passed at a call site.
#[derive(Clone, Debug)]
pub enum CallParam {
    /// Its value is on the stack.
    Value,
    /// A template compiled ahead of time (or, when it has a fast form, on first use), with
    /// `item` in `slot` (its fast form, when it has one, is held with its chunk).
    Template(Arc<TemplateChunk>, u32),
    /// The stack holds the template's text, compiled at run time (and cached).
    Dynamic {
        /// Bare dotted paths are relative to `item`.
        relative: bool,
        /// The slot `item` lives in.
        slot: u32,
        /// The element's second name, when the call gave one (`as`).
        alias: Option<Name>,
    },
    /// An optional template not given.
    Absent,
}

/// A template's chunk, read as a [`Chunk`] (it dereferences to one).
///
/// A template with a fast form runs its chunk only when the fast form cannot answer (an
/// element of the wrong type, to report the error as the chunk does), so its chunk is
/// compiled on the first read, not with the program, by the reference pipeline: most
/// programs never compile it. The chunk is the same either way (the same body and
/// compiler), so listings and answers do not change; a chunk compiled on first use has paths
/// of its own rather than the fast form's. The one-pass compiler emits a template's chunk
/// as it reads the body, so its templates are made compiled ([`TemplateChunk::with_fast`]).
#[derive(Clone, Debug)]
pub struct TemplateChunk {
    chunk: OnceLock<Chunk>,
    /// The body, its `item` slot and the compiler, for a chunk compiled on first use.
    deferred: Option<(Arc<TExpr>, u32, CompileTemplate)>,
    /// The fast form (a template compiled on first use has one; held here, not in an
    /// allocation of its own).
    fast: Option<Fast>,
}

/// Compiles a template's body with `item` in a slot (handed in by the compiler: this file
/// does not import it).
pub type CompileTemplate = fn(&TExpr, u32) -> Chunk;

impl TemplateChunk {
    /// A chunk compiled already.
    pub fn ready(chunk: Chunk) -> TemplateChunk {
        TemplateChunk { chunk: OnceLock::from(chunk), deferred: None, fast: None }
    }

    /// The chunk `compile(body, slot)` gives, compiled on first use, for a template whose
    /// fast form is `fast`.
    pub fn deferred(body: Arc<TExpr>, slot: u32, compile: CompileTemplate, fast: Fast) -> TemplateChunk {
        TemplateChunk { chunk: OnceLock::new(), deferred: Some((body, slot, compile)), fast: Some(fast) }
    }

    /// A chunk compiled already, for a template whose fast form is `fast` (the one-pass
    /// compiler emits the chunk as it reads the body, so nothing is left to defer).
    pub fn with_fast(chunk: Chunk, fast: Fast) -> TemplateChunk {
        TemplateChunk { chunk: OnceLock::from(chunk), deferred: None, fast: Some(fast) }
    }

    /// The fast form, when the template has one.
    pub fn fast(&self) -> Option<&Fast> {
        self.fast.as_ref()
    }

    /// Whether the chunk has been compiled (always, for one made [`ready`](Self::ready)).
    pub fn is_compiled(&self) -> bool {
        self.chunk.get().is_some()
    }
}

impl Deref for TemplateChunk {
    type Target = Chunk;

    fn deref(&self) -> &Chunk {
        self.chunk.get_or_init(|| match &self.deferred {
            Some((body, slot, compile)) => compile(body, *slot),
            // Never: a chunk without a deferred body is made compiled.
            None => Chunk::default(),
        })
    }
}

/// A template simple enough to evaluate on the element in place, without running its
/// chunk: a field path, or a condition built from comparisons of fields with constants.
/// When a fast form fails (a type mismatch), the VM reruns the chunk, which reports the
/// error with its span and data location, so both forms fail identically.
#[derive(Clone, Debug, PartialEq)]
pub enum Fast {
    /// `item.a.b` (or `item` itself, with no segments).
    Path(Path),
    /// A condition.
    Pred(Pred),
}

/// A condition over an element, evaluated in place.
#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    /// `item.path <op> constant`
    Cmp(crate::syntax::ast::BinaryOp, Path, Value),
    /// The truthiness of `item.path`.
    Truthy(Path),
    /// A constant's truthiness.
    Const(bool),
    /// `not p`
    Not(Box<Pred>),
    /// `p and q and …`: a chain of `and`s flattened into one list (one allocation, not two
    /// per `and`), tested left to right until one is false.
    And(Box<[Pred]>),
    /// `p or q or …`, flattened the same way, tested until one is true.
    Or(Box<[Pred]>),
}

/// A statically known place in the data a value was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    /// Where the path starts.
    pub root: Root,
    /// The field segments after it (shared with the chunk's path that reads them, when
    /// there is one).
    pub segments: Segments,
}

/// The start of an [`Origin`].
#[derive(Clone, Debug, PartialEq)]
pub enum Root {
    /// A variable: `$.name`.
    Global(Name),
    /// A REF context: `REF:step`.
    Ref(Name),
    /// A template's `item` or a pipeline's `current`, by slot.
    Local(u32),
}

impl Chunk {
    /// Adds an instruction with its span; returns its index.
    pub fn emit(&mut self, op: Op, span: Span) -> usize {
        self.code.0.push((op, span));
        self.code.0.len() - 1
    }

    /// The source span of instruction `pc` (an empty span past the last).
    #[inline]
    pub fn span(&self, pc: usize) -> Span {
        self.code.0.get(pc).map(|&(_, span)| span).unwrap_or_default()
    }

    /// Interns a constant.
    pub fn constant(&mut self, v: Value) -> u32 {
        // Small programs: a linear search keeps listings tidy without a hash map. Lists and
        // objects are never shared: `[1]` and `[1.0]` are equal but print differently.
        if matches!(v, Value::List(_) | Value::Object(_)) {
            self.consts.push(v);
            return (self.consts.len() - 1) as u32;
        }
        if let Some(i) = self.consts.iter().position(|c| c == &v && c.kind() == v.kind() && same_number_kind(c, &v)) {
            return i as u32;
        }
        self.consts.push(v);
        (self.consts.len() - 1) as u32
    }

    /// Interns a name.
    pub fn name(&mut self, n: &Name) -> u32 {
        if let Some(i) = self.names.iter().position(|x| x == n) {
            return i as u32;
        }
        self.names.push(n.clone());
        (self.names.len() - 1) as u32
    }

    /// Interns a path.
    pub fn path(&mut self, segs: Segments) -> u32 {
        if let Some(i) = self.paths.iter().position(|p| **p == *segs) {
            return i as u32;
        }
        self.paths.push(Path::shared(segs));
        (self.paths.len() - 1) as u32
    }

    /// The operand origins recorded for instruction `pc`.
    pub fn origins_at(&self, pc: usize) -> Option<&[Option<Origin>; 2]> {
        self.origins.iter().find(|(at, _)| *at as usize == pc).map(|(_, o)| o)
    }
}

fn same_number_kind(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::Int(_), Value::Int(_)) | (Value::Float(_), Value::Float(_)))
        || !matches!(a, Value::Int(_) | Value::Float(_))
}
