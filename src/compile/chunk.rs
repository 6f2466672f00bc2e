//! A compiled unit: instructions with a span each, and the tables they index.

use std::sync::Arc;

use super::op::Op;
use crate::functions::FuncId;
use crate::span::Span;
use crate::syntax::ast::Name;
use crate::value::{Path, Segments, SmolStr, Value};

/// Compiled code for one expression or template.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    /// The instructions; evaluation ends after the last one with the result on the stack.
    pub code: Vec<Op>,
    /// The source span of each instruction (same length as `code`).
    pub spans: Vec<Span>,
    /// Constants.
    pub consts: Vec<Value>,
    /// Variable and REF context names.
    pub names: Vec<Name>,
    /// Field paths (segments after a root), each with its inline cache.
    pub paths: Vec<Path>,
    /// Key lists of object constructors, in the form object keys take (cloned per object
    /// built, so never copied or allocated there).
    pub keys: Vec<Box<[SmolStr]>>,
    /// Call sites.
    pub calls: Vec<CallInfo>,
    /// Where operands of an instruction came from, for error locations.
    pub origins: Vec<(u32, [Option<Origin>; 2])>,
    /// Local slots this chunk and its templates use.
    pub locals: u32,
    /// The source text, for chunks compiled from a run-time template.
    pub source: Option<Arc<str>>,
}

/// A call site: the function and how each parameter is passed.
#[derive(Clone, Debug)]
pub struct CallInfo {
    /// The function.
    pub func: FuncId,
    /// Its name, for errors.
    pub name: Name,
    /// One entry per parameter.
    pub params: Box<[CallParam]>,
    /// Bit `i` set when parameter `i` was given.
    pub given: u64,
    /// Where each parameter's value came from (for error locations), up to the last one
    /// that has an origin: a parameter past the end has none (most calls: an empty list).
    pub origins: Box<[Option<Origin>]>,
    /// The span of each argument (the call's span when defaulted).
    pub arg_spans: Box<[Span]>,
}

/// How one parameter is passed at a call site.
#[derive(Clone, Debug)]
pub enum CallParam {
    /// Its value is on the stack.
    Value,
    /// A template compiled ahead of time, with `item` in `slot`, and its fast form when it
    /// has one.
    Template(Arc<Chunk>, u32, Option<Arc<Fast>>),
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
        self.code.push(op);
        self.spans.push(span);
        self.code.len() - 1
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
