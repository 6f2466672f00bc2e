//! The expression AST. Every node carries the byte span it was parsed from.

use std::sync::Arc;

use crate::span::{SourceMap, Span, Spanned};

/// An identifier or key, shared cheaply.
pub type Name = Arc<str>;

/// An expression node.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A float literal (or an integer literal too large for `i64`).
    Float(f64),
    /// A string literal.
    Str(StrLit),
    /// `REF:context.segment…`
    Ref(RefPath),
    /// A bare name.
    Name(Name),
    /// `expr.segment`
    Field(Box<Expr>, Spanned<Name>),
    /// `expr[expr]`: the value and the key (one allocation for both).
    Index(Box<[Expr; 2]>),
    /// `[a, b]`
    List(Vec<Expr>),
    /// `{k: v}`
    Object(Vec<(Spanned<Name>, Expr)>),
    /// `f(args)`
    Call(Call),
    /// `-x`, `not x`
    Unary(UnaryOp, Box<Expr>),
    /// `a + b`, `a and b`, …: the left and right operands (one allocation for both).
    Binary(BinaryOp, Box<[Expr; 2]>),
    /// Stands in for a part that did not parse, so later stages can still run.
    Error,
}

/// A string literal: its decoded text and where each decoded character was written.
#[derive(Clone, Debug, PartialEq)]
pub struct StrLit {
    /// The decoded text.
    pub value: Arc<str>,
    /// Maps offsets in `value` to offsets in the expression source (held in place: a
    /// string without escapes maps with one point, no allocation).
    pub map: SourceMap,
}

/// The most segments a REF may have after its context: as deep as an expression may nest
/// (the analysis of a REF is quadratic in its length — 16,000 segments took two minutes and
/// 4 GB — and no value is that deep).
pub const MAX_REF_SEGMENTS: usize = 128;

/// A REF path: `REF:context.segment…`.
#[derive(Clone, Debug, PartialEq)]
pub struct RefPath {
    /// `arguments`, `response` or an execution id.
    pub context: Spanned<Name>,
    /// The segments after the context.
    pub segments: Vec<Spanned<Name>>,
}

impl RefPath {
    /// The path as written, without the `REF:` prefix: `step.items.0`.
    pub fn dotted(&self) -> String {
        let mut s = self.context.node.to_string();
        for seg in &self.segments {
            s.push('.');
            s.push_str(&seg.node);
        }
        s
    }
}

/// A function call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The function's name.
    pub name: Spanned<Name>,
    /// The arguments in source order.
    pub args: Vec<Arg>,
}

/// One argument of a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// The keyword, for `name=value`.
    pub keyword: Option<Spanned<Name>>,
    /// The value.
    pub value: Expr,
}

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `not x`, `!x`
    Not,
    /// `-x`
    Neg,
}

/// Infix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `or`, `||`
    Or,
    /// `and`, `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinaryOp {
    /// The operator as written (canonical spelling).
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "or",
            BinaryOp::And => "and",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }

    /// Binding strength: higher binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 6,
        }
    }

    /// True for `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        self.precedence() == 4
    }
}

impl Expr {
    /// A node.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    /// If this expression is a bare name followed only by field segments
    /// (`item.profile.email`): the root name, its span and the segments in order.
    pub fn as_path(&self) -> Option<(&Name, Span, Vec<&Spanned<Name>>)> {
        let mut segs = Vec::new();
        let mut cur = self;
        loop {
            match &cur.kind {
                ExprKind::Field(inner, seg) => {
                    segs.push(seg);
                    cur = inner;
                }
                ExprKind::Name(n) => {
                    segs.reverse();
                    return Some((n, cur.span, segs));
                }
                _ => return None,
            }
        }
    }
}
