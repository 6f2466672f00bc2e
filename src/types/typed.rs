//! The typed AST: names resolved, calls bound to functions with arguments in parameter
//! order, templates marked, every node typed. The compiler and the reference evaluator
//! both start from here.

use std::sync::Arc;

use super::signature::FuncId;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, Name, UnaryOp};
use crate::types::Type;
use crate::value::Value;

/// A typed expression.
#[derive(Clone, Debug)]
pub struct TExpr {
    /// What it does.
    pub kind: TKind,
    /// What it yields.
    pub ty: Type,
    /// Where it was written (in the program's source, even inside template strings).
    pub span: Span,
}

/// The kinds of typed expression.
#[derive(Clone, Debug)]
pub enum TKind {
    /// A constant.
    Const(Value),
    /// A name looked up in the variables; `null` when absent.
    Global(Name),
    /// A template's `item` or a pipeline's `current`, by slot.
    Local(u32),
    /// `REF:context.segments…`
    Ref(Name, Vec<Name>),
    /// `expr.segment`
    Field(Box<TExpr>, Name),
    /// `expr[expr]`: the value and the key (one allocation for both).
    Index(Box<[TExpr; 2]>),
    /// `[…]`
    List(Vec<TExpr>),
    /// `{…}` and `create_object(…)`
    Object(Vec<(Name, TExpr)>),
    /// `-x`, `not x`
    Unary(UnaryOp, Box<TExpr>),
    /// Operators, `and`/`or` short-circuiting: the left and right operands (one
    /// allocation for both).
    Binary(BinaryOp, Box<[TExpr; 2]>),
    /// `if(c, a, b)`: only the chosen branch runs.
    If(Box<[TExpr; 3]>),
    /// `pipeline(init, [ops])`: each op runs with `current` in `slot`.
    Pipeline {
        /// The initial value.
        init: Box<TExpr>,
        /// The slot `current` lives in.
        slot: u32,
        /// The operations.
        ops: Vec<TExpr>,
    },
    /// A call of a function that is not compiled inline.
    Call(TCall),
    /// What did not check; a program with errors is never compiled.
    Error,
}

/// A bound call.
#[derive(Clone, Debug)]
pub struct TCall {
    /// The function.
    pub func: FuncId,
    /// Its name, for error messages.
    pub name: Name,
    /// One argument per parameter, in parameter order.
    pub args: Vec<TArg>,
    /// Bit `i` set when parameter `i` was given.
    pub given: u64,
}

/// An argument bound to a parameter.
#[derive(Clone, Debug)]
pub enum TArg {
    /// Evaluated once before the call (given, or the default as a constant).
    Value(TExpr),
    /// Applied per element with `item` in `slot`.
    Template {
        /// The template's body.
        body: Arc<TExpr>,
        /// The slot `item` lives in.
        slot: u32,
    },
    /// A name whose string value is compiled at run time (once per distinct string).
    Dynamic {
        /// The expression giving the template text.
        source: TExpr,
        /// Whether a bare dotted path is relative to `item`.
        relative: bool,
        /// The slot `item` lives in.
        slot: u32,
        /// The element's second name, when the call gave one (`as`).
        alias: Option<Name>,
    },
    /// An optional template that was not given.
    Absent,
}

impl TKind {
    /// Whether this is an operation on operands that are all constants: a field or an
    /// index of constants, a list or an object of them (empty ones too), an operator on
    /// them, an `if` whose condition is one, a call whose value arguments all are (or are
    /// absent). Only such a node can become a constant when its tree is folded, and a node
    /// whose operands are not constants becomes one only after one of its operands did: so
    /// when no node of a tree is one of these, folding changes nothing in it.
    pub fn operands_constant(&self) -> bool {
        let c = |e: &TExpr| matches!(e.kind, TKind::Const(_));
        match self {
            TKind::Field(e, _) | TKind::Unary(_, e) => c(e),
            TKind::Index(ab) | TKind::Binary(_, ab) => ab.iter().all(c),
            TKind::List(items) => items.iter().all(c),
            TKind::Object(entries) => entries.iter().all(|(_, e)| c(e)),
            TKind::If(ctf) => c(&ctf[0]),
            TKind::Call(call) => call.args.iter().all(|a| match a {
                TArg::Value(e) => c(e),
                TArg::Absent => true,
                TArg::Template { .. } | TArg::Dynamic { .. } => false,
            }),
            TKind::Const(_)
            | TKind::Global(_)
            | TKind::Local(_)
            | TKind::Ref(..)
            | TKind::Pipeline { .. }
            | TKind::Error => false,
        }
    }
}

impl TExpr {
    /// A node.
    pub fn new(kind: TKind, ty: Type, span: Span) -> TExpr {
        TExpr { kind, ty, span }
    }

    /// The innermost node whose span holds byte offset `at` (of the program's source), this
    /// one included; `None` when the offset is outside it. Iterative: any depth is fine.
    pub fn innermost_at(&self, at: usize) -> Option<&TExpr> {
        let holds = |e: &TExpr| (e.span.start as usize) <= at && at < e.span.end as usize;
        if !holds(self) {
            return None;
        }
        let mut node = self;
        'descend: loop {
            let mut children: Vec<&TExpr> = Vec::new();
            match &node.kind {
                TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Error => {}
                TKind::Field(e, _) | TKind::Unary(_, e) => children.push(e),
                TKind::Index(ab) | TKind::Binary(_, ab) => children.extend(ab.iter()),
                TKind::List(items) => children.extend(items),
                TKind::Object(entries) => children.extend(entries.iter().map(|(_, e)| e)),
                TKind::If(cab) => children.extend(cab.iter()),
                TKind::Pipeline { init, ops, .. } => {
                    children.push(init);
                    children.extend(ops);
                }
                TKind::Call(call) => {
                    for arg in &call.args {
                        match arg {
                            TArg::Value(e) => children.push(e),
                            TArg::Template { body, .. } => children.push(body),
                            TArg::Dynamic { source, .. } => children.push(source),
                            TArg::Absent => {}
                        }
                    }
                }
            }
            // A child that is the node itself (same span, e.g. a default) is no deeper.
            for child in children {
                if holds(child) && child.span != node.span {
                    node = child;
                    continue 'descend;
                }
            }
            return Some(node);
        }
    }

    /// The constant value, if this is one.
    pub fn as_const(&self) -> Option<&Value> {
        match &self.kind {
            TKind::Const(v) => Some(v),
            _ => None,
        }
    }
}
