//! The checker: AST → typed AST, reporting every problem in one pass.
//!
//! It resolves names (context names, `item`, `current`), binds call arguments to
//! parameters, parses template strings (mapping their spans back into the program's
//! source), infers a type for every node and reports an error only where evaluation cannot
//! succeed. It also collects the REF paths and free names the program uses.

mod calls;
pub(crate) mod compare;
mod names;
mod templates;

use calls::file_forms;
pub(crate) use names::FreeNames;
pub(crate) use templates::relative_path;

use std::sync::Arc;

use super::scope::Scope;
use super::signature::Signatures;
use super::typed::{TExpr, TKind};
use super::{Fit, ObjectType, Type};
use crate::diagnostic::{did_you_mean, Applicability, Code, Diagnostic};
use crate::span::{SourceMap, Span, Spanned};
use crate::syntax::ast::{BinaryOp, Expr, ExprKind, Name, RefPath, UnaryOp};
use crate::value::{SmolStr, Value};

/// A REF path used by a program, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUse {
    /// The context: `arguments`, `response` or an execution id.
    pub context: Arc<str>,
    /// The segments after the context.
    pub segments: Vec<Arc<str>>,
    /// Where the REF was written.
    pub span: Span,
}

/// What checking produced.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The typed tree (with [`TKind::Error`] where something did not check).
    pub expr: TExpr,
    /// Every error and warning.
    pub diagnostics: Vec<Diagnostic>,
    /// The REF paths used, in source order (inside template strings too).
    pub refs: Vec<RefUse>,
    /// The free names read from the context, in first-use order, with a span each.
    pub names: Vec<(Name, Span)>,
    /// Whether some node of the tree has operands that are all constants
    /// ([`TKind::operands_constant`]): when none has, folding the tree changes nothing.
    pub constant_operands: bool,
}

/// How deep the type of a `pipeline`'s `current` is tracked; deeper levels are `any`.
const MAX_PIPELINE_TYPE_DEPTH: usize = 16;

/// A pipeline's operations may nest this many times the nesting limit, summed (a value built
/// along a pipeline can be that deep).
const PIPELINE_NESTING_FACTOR: usize = 4;

/// The height of a tree (bounded by the parser's nesting limit, so recursion is safe).
fn height(e: &Expr) -> usize {
    1 + match &e.kind {
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) => height(x),
        ExprKind::Index(xk) | ExprKind::Binary(_, xk) => height(&xk[0]).max(height(&xk[1])),
        ExprKind::List(items) => items.iter().map(height).max().unwrap_or(0),
        ExprKind::Object(entries) => entries.iter().map(|(_, v)| height(v)).max().unwrap_or(0),
        // A pipeline's operations stack up: count them summed, as the check below does.
        ExprKind::Call(c) if &*c.name.node == "pipeline" => c
            .args
            .iter()
            .map(|a| match &a.value.kind {
                ExprKind::List(ops) => ops.iter().map(height).sum(),
                _ => height(&a.value),
            })
            .sum(),
        ExprKind::Call(c) => c.args.iter().map(|a| height(&a.value)).max().unwrap_or(0),
        _ => 0,
    }
}

/// Checks `expr` in `scope`.
pub fn check(expr: &Expr, scope: &Scope, funcs: &dyn Signatures, max_depth: usize) -> Checked {
    Checker::new(scope, funcs, max_depth).run(expr)
}

/// Checks a template compiled at run time: `item` is bound in `slot` (with type `any`), and
/// so is `alias` when the call named its element (`as`, already checked there); the slots
/// below it belong to the caller and are not visible.
pub fn check_template(
    expr: &Expr,
    scope: &Scope,
    funcs: &dyn Signatures,
    max_depth: usize,
    slot: u32,
    alias: Option<&Name>,
) -> Checked {
    let mut c = Checker::new(scope, funcs, max_depth);
    for _ in 0..slot {
        c.locals.push((LocalKind::Hidden, Type::Any));
    }
    c.locals.push((LocalKind::Item, Type::Any));
    if let Some(name) = alias {
        c.aliases.push(Alias { name: name.clone(), slot, span: Span::new(0, 0) });
    }
    c.run(expr)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LocalKind {
    Item,
    Current,
    /// A slot that belongs to an enclosing evaluation (run-time templates).
    Hidden,
}

/// A second name for a template's element, given by `as="NAME"` on the call.
struct Alias {
    name: Name,
    /// The slot of the element it names.
    slot: u32,
    /// Where the name was given (in the program's source).
    span: Span,
}

struct Checker<'a> {
    scope: &'a Scope,
    funcs: &'a dyn Signatures,
    diags: Vec<Diagnostic>,
    locals: Vec<(LocalKind, Type)>,
    /// The `as` names of the templates being checked, outermost first.
    aliases: Vec<Alias>,
    /// Source maps of the template strings being checked, outermost first.
    maps: Vec<SourceMap>,
    refs: Vec<RefUse>,
    /// The free names read, in first-use order.
    names: FreeNames,
    /// The argument types of the calls being checked, outermost first (see
    /// `check_arguments`).
    arg_types: Vec<Type>,
    max_depth: usize,
    /// Set once a node whose operands are all constants is built (`Checked::constant_operands`).
    constant_operands: std::cell::Cell<bool>,
}

/// The checker's working lists (bound elements, template strings' source maps, argument
/// types), empty between checks: none of them outlives a check.
#[derive(Default)]
struct Scratch {
    locals: Vec<(LocalKind, Type)>,
    maps: Vec<SourceMap>,
    arg_types: Vec<Type>,
}

/// A scratch list longer than this is not kept for the next check (a program with that
/// many nested templates or arguments is rare; its lists are freed with it).
const SCRATCH_KEPT: usize = 64;

thread_local! {
    /// The working lists of the last check on this thread, kept (empty) for the next one:
    /// each check would otherwise allocate and free the same three lists. In a box made at
    /// the thread's first check, not in the thread-local block (static TLS is scarce in a
    /// library loaded with `dlopen`, as the Python extension module is).
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

impl<'a> Checker<'a> {
    pub(super) fn new(scope: &'a Scope, funcs: &'a dyn Signatures, max_depth: usize) -> Checker<'a> {
        // A check inside a check (none today) finds no kept lists and makes its own.
        let mut scratch = SCRATCH.with(std::cell::Cell::take).unwrap_or_default();
        let checker = Checker {
            scope,
            funcs,
            diags: Vec::new(),
            locals: std::mem::take(&mut scratch.locals),
            aliases: Vec::new(),
            maps: std::mem::take(&mut scratch.maps),
            refs: Vec::new(),
            names: FreeNames::default(),
            arg_types: std::mem::take(&mut scratch.arg_types),
            max_depth,
            constant_operands: std::cell::Cell::new(false),
        };
        // The box goes back empty, to hold the lists again when the check ends.
        SCRATCH.with(|s| s.set(Some(scratch)));
        checker
    }

    /// Checks the whole expression and hands over what was found.
    pub(super) fn run(mut self, expr: &Expr) -> Checked {
        let t = self.expr(expr);
        self.diags.sort_by_key(|d| (d.span.start, d.span.end));
        let Checker { mut locals, mut maps, mut arg_types, diags, refs, names, constant_operands, .. } = self;
        // Emptied (a template's slots below `item` stay pushed after a run-time template's
        // check) and kept for the next check on this thread, unless grown large.
        locals.clear();
        maps.clear();
        arg_types.clear();
        if locals.capacity().max(maps.capacity()).max(arg_types.capacity()) <= SCRATCH_KEPT {
            SCRATCH.with(|s| {
                let mut kept = s.take().unwrap_or_default();
                *kept = Scratch { locals, maps, arg_types };
                s.set(Some(kept));
            });
        }
        Checked {
            expr: t,
            diagnostics: diags,
            refs,
            names: names.into_list(),
            constant_operands: constant_operands.get(),
        }
    }

    /// Maps a span from the text being checked to the program's source.
    pub(super) fn sp(&self, span: Span) -> Span {
        self.maps.iter().rev().fold(span, |s, m| m.map(s))
    }

    pub(super) fn error(&mut self, d: Diagnostic) {
        let d = d.map_spans(&|s| self.sp(s));
        self.diags.push(d);
    }

    /// A node (every node but a constant default argument is built here).
    pub(super) fn node(&self, kind: TKind, ty: Type, span: Span) -> TExpr {
        if !self.constant_operands.get() && kind.operands_constant() {
            self.constant_operands.set(true);
        }
        TExpr::new(kind, ty, self.sp(span))
    }

    pub(super) fn err_node(&self, span: Span) -> TExpr {
        self.node(TKind::Error, Type::Never, span)
    }

    pub(super) fn expr(&mut self, e: &Expr) -> TExpr {
        // A check its host stopped runs out: the rest of it is `any`, unseen (`super::stop`).
        if crate::types::stop::poll() {
            return self.node(TKind::Const(Value::Null), Type::Any, e.span);
        }
        match &e.kind {
            ExprKind::Null => self.node(TKind::Const(Value::Null), Type::Null, e.span),
            ExprKind::Bool(b) => self.node(TKind::Const(Value::Bool(*b)), Type::Bool, e.span),
            ExprKind::Int(i) => self.node(TKind::Const(Value::Int(*i)), Type::Int, e.span),
            ExprKind::Float(f) => self.node(TKind::Const(Value::Float(*f)), Type::Number, e.span),
            ExprKind::Str(s) => self.node(TKind::Const(Value::Str(SmolStr::new(&s.value))), Type::Str, e.span),
            ExprKind::Ref(r) => self.reference(r, e.span),
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Field(inner, seg) => {
                let t = self.expr(inner);
                let ty = self.segment_type(&t.ty, seg, inner.span);
                self.node(TKind::Field(Box::new(t), seg.node.clone()), ty, e.span)
            }
            ExprKind::Index(ik) => {
                let [inner, key] = &**ik;
                let t = self.expr(inner);
                let k = self.expr(key);
                let ty = self.index_type(&t.ty, &k, key.span);
                self.node(TKind::Index(Box::new([t, k])), ty, e.span)
            }
            ExprKind::List(items) => {
                let items: Vec<TExpr> = items.iter().map(|x| self.expr(x)).collect();
                let elem = Type::union_all(items.iter().map(|t| t.ty.clone()));
                let elem = if elem == Type::Never { Type::Any } else { elem };
                self.node(TKind::List(items), Type::List(Arc::new(elem)), e.span)
            }
            ExprKind::Object(entries) => {
                let mut out: Vec<(Name, TExpr)> = Vec::with_capacity(entries.len());
                let mut keys = SeenKeys::default();
                for (k, v) in entries {
                    if !keys.insert(&k.node, out.iter().map(|(seen, _)| seen)) {
                        self.error(
                            Diagnostic::new(
                                Code::DuplicateArgument,
                                k.span,
                                format!("key `{}` appears twice in this object", k.node),
                            )
                            .with_label("duplicate key")
                            .with_help("remove one of the entries; the later one would win"),
                        );
                    }
                    out.push((k.node.clone(), self.expr(v)));
                }
                let ty = Type::object(out.iter().map(|(k, v)| (k.clone(), v.ty.clone())), false);
                self.node(TKind::Object(out), ty, e.span)
            }
            ExprKind::Call(call) => self.call(call, e.span),
            ExprKind::Unary(op, inner) => {
                let t = self.expr(inner);
                let ty = match op {
                    UnaryOp::Not => Type::Bool,
                    UnaryOp::Neg => {
                        if t.ty.fits(&Type::Number) == Fit::No {
                            self.error(
                                Diagnostic::new(Code::OperandType, inner.span, format!("cannot negate {:#}", t.ty))
                                    .with_label(format!("this is {}", t.ty))
                                    .with_help("`-` applies to numbers only"),
                            );
                        }
                        if t.ty == Type::Int {
                            Type::Int
                        } else {
                            Type::Number
                        }
                    }
                };
                self.node(TKind::Unary(*op, Box::new(t)), ty, e.span)
            }
            ExprKind::Binary(op, lr) => self.binary(*op, &lr[0], &lr[1], e.span),
            ExprKind::Error => self.err_node(e.span),
        }
    }

    pub(super) fn name(&mut self, n: &Name, span: Span) -> TExpr {
        let want = match &**n {
            "item" => Some(LocalKind::Item),
            "current" => Some(LocalKind::Current),
            _ => None,
        };
        if let Some(kind) = want {
            if let Some(slot) = self.locals.iter().rposition(|(k, _)| *k == kind) {
                let ty = self.locals[slot].1.clone();
                return self.node(TKind::Local(slot as u32), ty, span);
            }
        }
        if let Some(a) = self.aliases.iter().rev().find(|a| a.name == *n) {
            let slot = a.slot;
            let ty = self.locals.get(slot as usize).map_or(Type::Any, |l| l.1.clone());
            return self.node(TKind::Local(slot), ty, span);
        }
        match self.scope.name(n) {
            Some(ty) => {
                if !self.names.contains(n) {
                    let at = self.sp(span);
                    self.names.push(n.clone(), at);
                }
                self.node(TKind::Global(n.clone()), ty, span)
            }
            None => {
                let mut d = Diagnostic::new(Code::UnknownName, span, format!("unknown name `{n}`"))
                    .with_label("not defined here");
                // Python's spellings of the literals (seed 002 writes `done_check="True"`).
                let literal = match &**n {
                    "True" | "TRUE" => Some("true"),
                    "False" | "FALSE" => Some("false"),
                    "None" | "NULL" | "Null" | "nil" => Some("null"),
                    _ => None,
                };
                // A bare field name in a template (`template='url'`): the element is `item`.
                let item =
                    self.locals.iter().rposition(|(k, _)| *k == LocalKind::Item).map(|slot| &self.locals[slot].1);
                let item_field = item.map(|t| match t.non_null() {
                    Type::Object(o) => o.fields.contains_key(&**n),
                    _ => false,
                });
                if let Some(lit) = literal {
                    d = d.with_help(format!("did you mean `{lit}`? literals are written in lower case"));
                } else if item_field == Some(true) {
                    d = d
                        .with_help(format!("inside a template the element is `item`: did you mean `item.{n}`?"))
                        .with_suggestion(span, format!("item.{n}"), Applicability::MaybeIncorrect);
                } else if let Some(s) = did_you_mean(n, self.scope.names()) {
                    d = d.with_did_you_mean(s, s);
                } else if want == Some(LocalKind::Item) {
                    d = d.with_help("`item` is only bound inside a template (`map`, `filter`, `sum`, …)");
                } else if want == Some(LocalKind::Current) {
                    d = d.with_help("`current` is only bound inside `pipeline` operations");
                } else if self.funcs.lookup(n).is_some() {
                    d = d.with_help(format!("`{n}` is a function: call it as `{n}(…)`"));
                } else if item.is_some_and(|t| matches!(t.non_null(), Type::Any | Type::Object(_))) {
                    d = d.with_help(format!("inside a template the element is `item`: a field of it is `item.{n}`"));
                } else {
                    let known: Vec<&str> = self.scope.names().take(8).collect();
                    if !known.is_empty() {
                        d = d.with_help(format!("names in scope: {}", known.join(", ")));
                    }
                }
                self.error(d);
                self.err_node(span)
            }
        }
    }

    pub(super) fn reference(&mut self, r: &RefPath, span: Span) -> TExpr {
        self.refs.push(RefUse {
            context: r.context.node.clone(),
            segments: r.segments.iter().map(|s| s.node.clone()).collect(),
            span: self.sp(span),
        });
        let ctx = &r.context;
        let base = match self.scope.ref_context(&ctx.node) {
            Some(t) => t,
            None if &*ctx.node == "response" => {
                self.error(
                    Diagnostic::new(
                        Code::ResponseOutsideTransform,
                        ctx.span,
                        "`REF:response` is only valid inside `transform_responses`",
                    )
                    .with_label("no response here")
                    .with_help("refer to a step's result as `REF:<execution_id>.field`"),
                );
                return self.err_node(span);
            }
            None => {
                let contexts = self.scope.ref_contexts();
                let mut d =
                    Diagnostic::new(Code::UnknownRefContext, ctx.span, format!("unknown REF context `{}`", ctx.node))
                        .with_label("no such step or context");
                if let Some(s) = did_you_mean(&ctx.node, contexts.iter().copied()) {
                    d = d.with_did_you_mean(&format!("REF:{s}"), s);
                } else if !contexts.is_empty() {
                    d = d.with_help(format!("known contexts: {}", contexts.join(", ")));
                }
                self.error(d);
                return self.err_node(span);
            }
        };
        let mut ty = base;
        let mut prev_span = ctx.span;
        for (i, seg) in r.segments.iter().enumerate() {
            // The response alias (SPEC §2): `REF:step.response` is the whole result when it
            // has no `response` key.
            if i == 0 && &*seg.node == "response" && &*ctx.node != "response" && !has_response_field(&ty) {
                prev_span = prev_span.to(seg.span);
                continue;
            }
            ty = self.segment_type(&ty, seg, prev_span);
            prev_span = prev_span.to(seg.span);
        }
        let segs = r.segments.iter().map(|s| s.node.clone()).collect();
        self.node(TKind::Ref(ctx.node.clone(), segs), ty, span)
    }

    /// The type of `value.seg` for a value of type `t`; reports what cannot work.
    pub(super) fn segment_type(&mut self, t: &Type, seg: &Spanned<Name>, base_span: Span) -> Type {
        // Any segment of `any` is `any` (every read in an open scope).
        if matches!(t, Type::Any) {
            return Type::Any;
        }
        let s = &*seg.node;
        let is_index = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let mut results = Vec::new();
        let mut impossible = Vec::new();
        let mut missing_field = None;
        // One alternative whose segment applies, which is most reads: its type, with nothing
        // to report and nothing to merge.
        if let Some(x) = plain_field_type(t, s) {
            return x;
        }
        // Every closed object without the field (a `zip` pair holds two tools' results).
        let mut lacking: Vec<Arc<crate::types::ObjectType>> = Vec::new();
        for alt in t.alternatives() {
            let r = alternative_segment(alt, s, is_index, &mut missing_field);
            lacking.extend(missing_field.take());
            match r {
                Some(x) => results.push(x),
                None => impossible.push(alt.clone()),
            }
        }
        if results.is_empty() && !impossible.is_empty() {
            let found = Type::union_all(impossible);
            let help = match &found {
                Type::List(_) => "a list takes an index (`.0`), `.first`, `.last` or `.length`; use `map` to read a field of every element".to_string(),
                Type::Str => "a string has only `.length` (and `.path`, `.file_name`, `.parent_directory` as a file)".to_string(),
                _ => format!("{found:#} has no fields"),
            };
            self.error(
                Diagnostic::new(Code::SegmentType, seg.span, format!("cannot read `.{s}` of {found:#}"))
                    .with_label(format!("`.{s}` does not apply to {found}"))
                    .with_secondary(base_span, format!("this is {found}"))
                    .with_help(help),
            );
            return Type::Never;
        }
        if !lacking.is_empty() && results.iter().all(|r| *r == Type::Null) {
            self.error(unknown_field(s, seg.span, &lacking));
        }
        Type::union_all(results)
    }

    pub(super) fn index_type(&mut self, t: &Type, key: &TExpr, key_span: Span) -> Type {
        let k = &key.ty;
        // One alternative (most indexing): its one or two types, with no list to gather
        // them in; a union's alternatives gathered as before, in the same order.
        let found = match t {
            Type::Union(alts) => {
                let mut out = Vec::new();
                let mut ok = false;
                for alt in alts {
                    if let Some((a, b)) = index_alternative(alt, key) {
                        ok = true;
                        out.push(a);
                        out.extend(b);
                    }
                }
                ok.then(|| Type::union_all(out))
            }
            alt => index_alternative(alt, key).map(|(a, b)| match b {
                Some(b) => Type::union_all([a, b]),
                // What `union_all` would make of one type that is not a union.
                None if !matches!(a, Type::Union(_)) => a,
                None => Type::union_all([a]),
            }),
        };
        let Some(ty) = found else {
            self.error(
                Diagnostic::new(Code::IndexType, key_span, format!("cannot index {t:#} with {k:#}"))
                    .with_label(format!("this is {k}"))
                    .with_help("lists take integer positions, objects take string keys"),
            );
            return Type::Never;
        };
        ty
    }

    pub(super) fn binary(&mut self, op: BinaryOp, l: &Expr, r: &Expr, span: Span) -> TExpr {
        let lt = self.expr(l);
        let rt = self.expr(r);
        use BinaryOp::*;
        let ty = match op {
            Eq | Ne => {
                self.comparison(op, (&lt, l.span), (&rt, r.span));
                Type::Bool
            }
            Or | And => Type::Bool,
            Lt | Le | Gt | Ge => {
                let possible = pairs(&lt.ty, &rt.ty).any(|(a, b)| {
                    matches!((a, b), (Type::Null, _) | (_, Type::Null) | (Type::Any, _) | (_, Type::Any))
                        || (a.fits(&Type::Number) != Fit::No && b.fits(&Type::Number) != Fit::No)
                        || (a.fits(&Type::Str) != Fit::No && b.fits(&Type::Str) != Fit::No)
                });
                if !possible {
                    self.operand_error(
                        op,
                        &lt,
                        &rt,
                        l.span,
                        r.span,
                        "compare numbers with numbers and strings with strings",
                    );
                }
                Type::Bool
            }
            Add => {
                let mut out = Vec::new();
                // A `file` is one of its two run-time forms in `+` (`ops::add` sees a string or
                // an object); comparisons already take it as the string it may be.
                // Joining strings makes a string, not a value of an enum.
                let (la, ra) = (file_forms(&lt.ty.widen_enums()), file_forms(&rt.ty.widen_enums()));
                for (a, b) in pairs(&la, &ra) {
                    let num = |t: &Type| t.fits(&Type::Number) != Fit::No;
                    match (a, b) {
                        (Type::Any, _) | (_, Type::Any) => out.push(Type::Any),
                        (Type::Int, Type::Int) => out.push(Type::Int),
                        (x, y) if num(x) && num(y) => out.push(Type::Number),
                        (Type::Str, Type::Str) => out.push(Type::Str),
                        (Type::List(x), Type::List(y)) => {
                            out.push(Type::List(Arc::new(x.as_ref().clone().union(y.as_ref().clone()))))
                        }
                        (Type::Object(_), Type::Object(_)) => out.push(Type::any_object()),
                        _ => {}
                    }
                }
                if out.is_empty() {
                    // Text and a number: typed as the `to_string` of the help makes it, a
                    // string, so each number joined after gets its own error, none derived.
                    if let Some((help, operand)) = text_and_number(&lt.ty, &rt.ty, l, r) {
                        if self.operand_error(op, &lt, &rt, l.span, r.span, &help) {
                            let fix = format!("to_string({})", crate::syntax::print(operand));
                            let at = self.sp(operand.span);
                            if let Some(d) = self.diags.pop() {
                                self.diags.push(d.with_suggestion(at, fix, Applicability::MaybeIncorrect));
                            }
                        }
                        return self.node(TKind::Binary(op, Box::new([lt, rt])), Type::Str, span);
                    }
                    let help = "`+` adds numbers, or joins two strings, two lists or two objects";
                    self.operand_error(op, &lt, &rt, l.span, r.span, help);
                    Type::Never
                } else {
                    Type::union_all(out)
                }
            }
            Sub | Mul | Div | Rem => {
                let bad = |t: &Type| t.fits(&Type::Number) == Fit::No;
                if bad(&lt.ty) || bad(&rt.ty) {
                    self.operand_error(
                        op,
                        &lt,
                        &rt,
                        l.span,
                        r.span,
                        &format!("`{}` applies to numbers only", op.symbol()),
                    );
                }
                if op == Div {
                    Type::Number
                } else if lt.ty == Type::Int && rt.ty == Type::Int {
                    Type::Int
                } else {
                    Type::Number
                }
            }
        };
        self.node(TKind::Binary(op, Box::new([lt, rt])), ty, span)
    }

    /// Reports `op` between these operands (`E0202`); false when an operand already failed.
    pub(super) fn operand_error(
        &mut self,
        op: BinaryOp,
        lt: &TExpr,
        rt: &TExpr,
        ls: Span,
        rs: Span,
        help: &str,
    ) -> bool {
        // An operand that always fails (an error reported already: `never`) absorbs the
        // operator: `'Issue #' + r.id + ': '` is one error, not one per `+` after it.
        if matches!(lt.kind, TKind::Error)
            || matches!(rt.kind, TKind::Error)
            || matches!(lt.ty, Type::Never)
            || matches!(rt.ty, Type::Never)
        {
            return false;
        }
        self.error(
            Diagnostic::new(
                Code::OperandType,
                ls.to(rs),
                format!("`{}` cannot take {:#} and {:#}", op.symbol(), lt.ty, rt.ty),
            )
            .with_label(format!("{} {} {}", lt.ty, op.symbol(), rt.ty))
            .with_help(help.to_string()),
        );
        true
    }
}

/// The help of `E0202` for `+` between text and a number (`'Issue #' + r.id`): convert the
/// number with `to_string`, shown on the operand as written (hostile round 10, finding 18).
fn text_and_number<'e>(lt: &Type, rt: &Type, l: &'e Expr, r: &'e Expr) -> Option<(String, &'e Expr)> {
    let text = |t: &Type| t.non_null().fits(&Type::Str) == Fit::Yes && !matches!(t.non_null(), Type::Never);
    let number = |t: &Type| t.non_null().fits(&Type::Number) == Fit::Yes && !matches!(t.non_null(), Type::Never);
    let operand = match () {
        _ if text(lt) && number(rt) => r,
        _ if number(lt) && text(rt) => l,
        _ => return None,
    };
    let shown = crate::syntax::print(operand);
    Some((
        format!(
            "`+` joins two strings and adds two numbers, never one of each: convert the number with `to_string({shown})`"
        ),
        operand,
    ))
}

/// Whether a step result type may have its own `response` key.
fn has_response_field(t: &Type) -> bool {
    t.alternatives().iter().any(|a| match a {
        Type::Object(o) => o.fields.contains_key("response"),
        _ => false,
    })
}

fn pairs<'t>(a: &'t Type, b: &'t Type) -> impl Iterator<Item = (&'t Type, &'t Type)> {
    a.alternatives().iter().flat_map(move |x| b.alternatives().iter().map(move |y| (x, y)))
}

fn quote_all(xs: &[&str]) -> String {
    xs.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ")
}

/// "a list", "a string or null", … for messages.
fn describe(t: &Type) -> String {
    let parts: Vec<String> = t
        .alternatives()
        .iter()
        .map(|a| match a {
            Type::List(_) => "a list".to_string(),
            Type::Object(_) => "an object".to_string(),
            Type::Int => "an integer".to_string(),
            Type::Any => "anything".to_string(),
            Type::Null => "null".to_string(),
            other => format!("{other:#}"),
        })
        .collect();
    parts.join(" or ")
}

/// The type of `value[key]` for one alternative (not a union) of the value's type, as one
/// or two types to unite; `None` when no key of `key`'s type can index it.
fn index_alternative(alt: &Type, key: &TExpr) -> Option<(Type, Option<Type>)> {
    let k = &key.ty;
    match alt {
        Type::Any | Type::Null | Type::Never => Some((if *alt == Type::Null { Type::Null } else { Type::Any }, None)),
        Type::List(e) if k.fits(&Type::Number.union(Type::Str)) != Fit::No => {
            let elem = e.as_ref().clone().union(Type::Null);
            Some((elem, (k.fits(&Type::Str) != Fit::No).then_some(Type::Any)))
        }
        Type::Object(o) if k.fits(&Type::Str) != Fit::No => {
            let ty = match key.as_const().and_then(Value::as_str).and_then(|s| o.fields.get(s)) {
                Some(ft) => ft.clone(),
                None if o.open => Type::Any,
                None => Type::union_all(o.fields.values().cloned()).union(Type::Null),
            };
            Some((ty, None))
        }
        Type::Str | Type::Enum(_) | Type::File if k.fits(&Type::Str) != Fit::No => Some((Type::Any, None)),
        _ => None,
    }
}

/// `W0102`: field `s` read on closed objects that lack it (`lacking`, one per alternative of
/// the value's type). Named after the tools whose declared results they are, when they are
/// ([`crate::types::ObjectType::origin`]), with their fields — a bounded list, an upstream
/// schema may declare many — and the nearest as "did you mean".
fn unknown_field(s: &str, span: Span, lacking: &[Arc<crate::types::ObjectType>]) -> Diagnostic {
    // The fields of them all, each once; not gathered in a list: a result of 20,000 fields
    // read wrong in each of 6,300 places would copy 126 million names.
    let mut seen = std::collections::HashSet::new();
    let all = || lacking.iter().flat_map(|o| o.fields.keys()).map(|k| &**k);
    let count = if lacking.len() == 1 { lacking[0].fields.len() } else { all().filter(|k| seen.insert(*k)).count() };
    let mut tools: Vec<&str> = Vec::new();
    for t in lacking.iter().filter_map(|o| o.origin.as_deref()) {
        if !tools.contains(&t) {
            tools.push(t);
        }
    }
    let named = tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>();
    let (message, label) = match (named.as_slice(), lacking.iter().all(|o| o.origin.is_some())) {
        ([one], true) => (format!("{one} declares no field `{s}` in its result"), format!("not declared by {one}")),
        ([_, ..], true) => (
            format!("neither of {} declares a field `{s}` in its result", named.join(" and ")),
            "declared by none of them".to_string(),
        ),
        _ => (format!("field `{s}` does not exist here; it is always null"), "no such field".to_string()),
    };
    let d = Diagnostic::new(Code::UnknownField, span, message).with_label(label);
    // The known fields, a bounded list (an upstream schema may declare many).
    let mut first = std::collections::HashSet::new();
    let head: Vec<&str> = all().filter(|k| first.insert(*k)).take(40).collect();
    let shown = if count > 40 { format!("{}, … ({count} in all)", head.join(", ")) } else { head.join(", ") };
    match did_you_mean(s, all()) {
        Some(m) => d.with_help(format!("did you mean `{m}`? known fields: {shown}")),
        None if count == 0 => d.with_help("this object has no fields"),
        None => d.with_help(format!("known fields: {shown}")),
    }
}

/// The keys of an object literal seen so far: a few compared one by one, more through a
/// set, so that an object of many keys is checked in time linear in them (20,000 keys took
/// 0.4 s scanned, quadratic; hostile round 16).
#[derive(Default)]
pub(crate) struct SeenKeys(rustc_hash::FxHashSet<Name>);

impl SeenKeys {
    /// Notes `key`; false when it was seen before. `seen` gives the keys noted so far, in
    /// order (read while there are few, and once to fill the set when there are many).
    pub(crate) fn insert<'k>(&mut self, key: &Name, mut seen: impl ExactSizeIterator<Item = &'k Name>) -> bool {
        const SCANNED: usize = 16;
        if seen.len() <= SCANNED {
            return !seen.any(|k| k == key);
        }
        if self.0.is_empty() {
            self.0.extend(seen.cloned());
        }
        self.0.insert(key.clone())
    }
}

/// The type of `.s` of a value of type `t` (not a union) when the read applies plainly:
/// nothing to report and nothing to merge (`Checker::segment_type`'s first answer, and the
/// one-pass compiler's only one); `None` otherwise.
pub(crate) fn plain_field_type(t: &Type, s: &str) -> Option<Type> {
    if matches!(t, Type::Union(_)) {
        return None;
    }
    let is_index = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut missing_field = None;
    let x = alternative_segment(t, s, is_index, &mut missing_field)?;
    (missing_field.is_none() && !matches!(x, Type::Union(_) | Type::Never)).then_some(x)
}

/// The type of segment `s` of one alternative of a type: `None` when it cannot apply; an
/// object without the field (and closed) is recorded in `missing_field`.
fn alternative_segment(
    alt: &Type,
    s: &str,
    is_index: bool,
    missing_field: &mut Option<Arc<ObjectType>>,
) -> Option<Type> {
    match alt {
        Type::Any => Some(Type::Any),
        Type::Never => Some(Type::Never),
        Type::Null => Some(Type::Null),
        Type::Object(o) => match o.fields.get(s) {
            Some(ft) => Some(ft.clone()),
            None if s == "length" => Some(Type::Int),
            None if o.open => Some(Type::Any),
            // Derived from a string `path`; null when `path` is anything else.
            None if (s == "file_name" || s == "parent_directory") && o.fields.contains_key("path") => {
                match o.fields.get("path") {
                    Some(Type::Str) => Some(Type::Str),
                    _ => Some(Type::Str.union(Type::Null)),
                }
            }
            None => {
                *missing_field = Some(o.clone());
                Some(Type::Null)
            }
        },
        Type::List(e) => match s {
            "length" => Some(Type::Int),
            "first" | "last" => Some(e.as_ref().clone().union(Type::Null)),
            _ if is_index => Some(e.as_ref().clone().union(Type::Null)),
            _ => None,
        },
        Type::Str | Type::Enum(_) => match s {
            "length" => Some(Type::Int),
            "path" | "file_name" | "parent_directory" => Some(Type::Str),
            _ => None,
        },
        Type::File => match s {
            "path" | "file_name" | "parent_directory" => Some(Type::Str),
            "length" => Some(Type::Int),
            _ => Some(Type::Any),
        },
        Type::Bool | Type::Int | Type::Number => None,
        Type::Union(_) => Some(Type::Any),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::FunctionTable;

    /// An object literal of many keys is checked in work linear in them: the keys seen are
    /// read one by one while few, then once into a set (each read counted here).
    #[test]
    fn an_objects_keys_are_checked_in_linear_work() {
        let n = 40_000;
        let keys: Vec<Name> = (0..n).map(|i| Name::from(format!("k{i}"))).collect();
        let reads = std::cell::Cell::new(0usize);
        let mut seen = SeenKeys::default();
        for (i, k) in keys.iter().enumerate() {
            let counted = keys[..i].iter().inspect(|_| reads.set(reads.get() + 1));
            assert!(seen.insert(k, counted), "k{i} is new");
        }
        let again = keys.iter().inspect(|_| reads.set(reads.get() + 1));
        assert!(!seen.insert(&keys[7], again), "a key given twice is found");
        // 16 scans of up to 16 keys, and one fill of the set with 17.
        assert!(reads.get() <= 16 * 17 / 2 + 17, "{} reads for {n} keys", reads.get());
    }

    /// A check leaves its working lists, emptied, for the next check on the thread (which
    /// then allocates none of them), and checks the same whatever a check before it left.
    #[test]
    fn working_lists_are_kept_between_checks() {
        let funcs = FunctionTable::builtins();
        let src = "map(array=filter(array=xs, condition_string=\"item.a > 1 and item.b == 'x'\"), template={a: item.a, t: item.c[0]})";
        let ast = crate::syntax::parse(src).expr;
        let first = check(&ast, &Scope::open(), &funcs, 128);
        let kept = SCRATCH.with(|s| {
            let s = s.take();
            let caps = s.as_ref().map(|s| (s.locals.capacity(), s.maps.capacity(), s.arg_types.capacity()));
            let empty = s.as_ref().is_some_and(|s| s.locals.is_empty() && s.maps.is_empty() && s.arg_types.is_empty());
            SCRATCH.with(|t| t.set(s));
            (caps, empty)
        });
        assert!(kept.1, "kept lists are empty");
        assert!(matches!(kept.0, Some((l, m, a)) if l > 0 && m > 0 && a > 0), "{kept:?}");
        let second = check(&ast, &Scope::open(), &funcs, 128);
        assert_eq!(format!("{:?}", first.expr), format!("{:?}", second.expr));
        assert_eq!(first.diagnostics, second.diagnostics);
        // Indexing: one type or a union of several, the same types as before.
        let scope = Scope::from_vars(&crate::value::Value::object_from([(
            "xs",
            crate::value::Value::from(vec![crate::value::Value::from(1), crate::value::Value::from("a")]),
        )]));
        for (src, want) in [("xs[0]", "integer | string | null"), ("xs[\"k\"]", "any"), ("{a: 1}[\"a\"]", "integer")] {
            let ast = crate::syntax::parse(src).expr;
            assert_eq!(check(&ast, &scope, &funcs, 128).expr.ty.to_string(), want, "{src}");
        }
    }
}
