//! The checker: AST → typed AST, reporting every problem in one pass.
//!
//! It resolves names (context names, `item`, `current`), binds call arguments to
//! parameters, parses template strings (mapping their spans back into the program's
//! source), infers a type for every node and reports an error only where evaluation cannot
//! succeed. It also collects the REF paths and free names the program uses.

use std::sync::Arc;

use super::scope::{Binding, Scope};
use super::signature::{Param, ParamKind, Signature, Signatures, ELEMENT_NAME};
use super::typed::{TArg, TCall, TExpr, TKind};
use super::{Fit, ObjectType, Type};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::{SourceMap, Span, Spanned};
use crate::syntax::ast::{Arg, BinaryOp, Call, Expr, ExprKind, Name, RefPath, UnaryOp};
use crate::value::{SmolStr, Value};

/// A REF path used by a program, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUse {
    /// The context: `arguments`, `response` or an execution id.
    pub context: Name,
    /// The segments after the context.
    pub segments: Vec<Name>,
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
        ExprKind::Index(x, k) | ExprKind::Binary(_, x, k) => height(x).max(height(k)),
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
    maps: Vec<Arc<SourceMap>>,
    refs: Vec<RefUse>,
    names: Vec<(Name, Span)>,
    max_depth: usize,
}

impl<'a> Checker<'a> {
    fn new(scope: &'a Scope, funcs: &'a dyn Signatures, max_depth: usize) -> Checker<'a> {
        Checker {
            scope,
            funcs,
            diags: Vec::new(),
            locals: Vec::new(),
            aliases: Vec::new(),
            maps: Vec::new(),
            refs: Vec::new(),
            names: Vec::new(),
            max_depth,
        }
    }

    /// Checks the whole expression and hands over what was found.
    fn run(mut self, expr: &Expr) -> Checked {
        let t = self.expr(expr);
        self.diags.sort_by_key(|d| (d.span.start, d.span.end));
        Checked { expr: t, diagnostics: self.diags, refs: self.refs, names: self.names }
    }
    /// Maps a span from the text being checked to the program's source.
    fn sp(&self, span: Span) -> Span {
        self.maps.iter().rev().fold(span, |s, m| m.map(s))
    }

    fn error(&mut self, d: Diagnostic) {
        let d = d.map_spans(&|s| self.sp(s));
        self.diags.push(d);
    }

    fn node(&self, kind: TKind, ty: Type, span: Span) -> TExpr {
        TExpr::new(kind, ty, self.sp(span))
    }

    fn err_node(&self, span: Span) -> TExpr {
        self.node(TKind::Error, Type::Never, span)
    }

    fn expr(&mut self, e: &Expr) -> TExpr {
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
            ExprKind::Index(inner, key) => {
                let t = self.expr(inner);
                let k = self.expr(key);
                let ty = self.index_type(&t.ty, &k, key.span);
                self.node(TKind::Index(Box::new(t), Box::new(k)), ty, e.span)
            }
            ExprKind::List(items) => {
                let items: Vec<TExpr> = items.iter().map(|x| self.expr(x)).collect();
                let elem = Type::union_all(items.iter().map(|t| t.ty.clone()));
                let elem = if elem == Type::Never { Type::Any } else { elem };
                self.node(TKind::List(items), Type::List(Arc::new(elem)), e.span)
            }
            ExprKind::Object(entries) => {
                let mut out: Vec<(Name, TExpr)> = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    if out.iter().any(|(seen, _)| **seen == *k.node) {
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
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span),
            ExprKind::Error => self.err_node(e.span),
        }
    }

    fn name(&mut self, n: &Name, span: Span) -> TExpr {
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
                if !self.names.iter().any(|(m, _)| m == n) {
                    self.names.push((n.clone(), self.sp(span)));
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
                if let Some(lit) = literal {
                    d = d.with_help(format!("did you mean `{lit}`? literals are written in lower case"));
                } else if let Some(s) = did_you_mean(n, self.scope.names()) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                } else if want == Some(LocalKind::Item) {
                    d = d.with_help("`item` is only bound inside a template (`map`, `filter`, `sum`, …)");
                } else if want == Some(LocalKind::Current) {
                    d = d.with_help("`current` is only bound inside `pipeline` operations");
                } else if self.funcs.lookup(n).is_some() {
                    d = d.with_help(format!("`{n}` is a function: call it as `{n}(…)`"));
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

    fn reference(&mut self, r: &RefPath, span: Span) -> TExpr {
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
                    d = d.with_help(format!("did you mean `REF:{s}`?"));
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
    fn segment_type(&mut self, t: &Type, seg: &Spanned<Name>, base_span: Span) -> Type {
        let s = &*seg.node;
        let is_index = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let mut results = Vec::new();
        let mut impossible = Vec::new();
        let mut missing_field = None;
        // One alternative whose segment applies, which is most reads: its type, with nothing
        // to report and nothing to merge.
        if !matches!(t, Type::Union(_)) {
            if let Some(x) = alternative_segment(t, s, is_index, &mut missing_field) {
                if missing_field.is_none() && !matches!(x, Type::Union(_) | Type::Never) {
                    return x;
                }
            }
            missing_field = None;
        }
        for alt in t.alternatives() {
            let r = alternative_segment(alt, s, is_index, &mut missing_field);
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
        if let (Some(o), true) = (missing_field, results.iter().all(|r| *r == Type::Null)) {
            let keys: Vec<&str> = o.fields.keys().map(|k| &**k).collect();
            let mut d = Diagnostic::new(
                Code::UnknownField,
                seg.span,
                format!("field `{s}` does not exist here; it is always null"),
            )
            .with_label("no such field");
            // The known fields, a bounded list (an upstream schema may declare many).
            let shown = if keys.len() > 40 {
                format!("{}, … ({} in all)", keys[..40].join(", "), keys.len())
            } else {
                keys.join(", ")
            };
            d = match did_you_mean(s, keys.iter().copied()) {
                Some(m) => d.with_help(format!("did you mean `{m}`? known fields: {shown}")),
                None if keys.is_empty() => d.with_help("this object has no fields"),
                None => d.with_help(format!("known fields: {shown}")),
            };
            self.error(d);
        }
        Type::union_all(results)
    }

    fn index_type(&mut self, t: &Type, key: &TExpr, key_span: Span) -> Type {
        let k = &key.ty;
        let mut out = Vec::new();
        let mut ok = false;
        for alt in t.alternatives() {
            match alt {
                Type::Any | Type::Null | Type::Never => {
                    ok = true;
                    out.push(if *alt == Type::Null { Type::Null } else { Type::Any });
                }
                Type::List(e) if k.fits(&Type::Number.union(Type::Str)) != Fit::No => {
                    ok = true;
                    out.push(e.as_ref().clone().union(Type::Null));
                    if k.fits(&Type::Str) != Fit::No {
                        out.push(Type::Any);
                    }
                }
                Type::Object(o) if k.fits(&Type::Str) != Fit::No => {
                    ok = true;
                    match key.as_const().and_then(Value::as_str).and_then(|s| o.fields.get(s)) {
                        Some(ft) => out.push(ft.clone()),
                        None => out.push(if o.open {
                            Type::Any
                        } else {
                            Type::union_all(o.fields.values().cloned()).union(Type::Null)
                        }),
                    }
                }
                Type::Str | Type::File if k.fits(&Type::Str) != Fit::No => {
                    ok = true;
                    out.push(Type::Any);
                }
                _ => {}
            }
        }
        if !ok {
            self.error(
                Diagnostic::new(Code::IndexType, key_span, format!("cannot index {t:#} with {k:#}"))
                    .with_label(format!("this is {k}"))
                    .with_help("lists take integer positions, objects take string keys"),
            );
            return Type::Never;
        }
        Type::union_all(out)
    }

    fn binary(&mut self, op: BinaryOp, l: &Expr, r: &Expr, span: Span) -> TExpr {
        let lt = self.expr(l);
        let rt = self.expr(r);
        use BinaryOp::*;
        let ty = match op {
            Or | And | Eq | Ne => Type::Bool,
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
                let (la, ra) = (file_forms(&lt.ty), file_forms(&rt.ty));
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
                    self.operand_error(
                        op,
                        &lt,
                        &rt,
                        l.span,
                        r.span,
                        "`+` adds numbers, or joins two strings, two lists or two objects",
                    );
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
        self.node(TKind::Binary(op, Box::new(lt), Box::new(rt)), ty, span)
    }

    fn operand_error(&mut self, op: BinaryOp, lt: &TExpr, rt: &TExpr, ls: Span, rs: Span, help: &str) {
        if matches!(lt.kind, TKind::Error) || matches!(rt.kind, TKind::Error) {
            return;
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
    }

    fn call(&mut self, call: &Call, span: Span) -> TExpr {
        let Some(id) = self.funcs.lookup(&call.name.node) else {
            return self.unknown_function(call, span);
        };
        let funcs = self.funcs;
        let sig = funcs.signature(id);
        // Bind arguments to parameters.
        // On the stack for the usual handful of parameters.
        // A variadic signature binds every leading positional argument.
        let slots = if sig.variadic {
            sig.params.len().max(call.args.iter().take_while(|a| a.keyword.is_none()).count())
        } else {
            sig.params.len()
        };
        let mut on_stack = [None; 8];
        let mut on_heap;
        let bound: &mut [Option<&Arg>] = if slots <= on_stack.len() {
            &mut on_stack[..slots]
        } else {
            on_heap = vec![None; slots];
            &mut on_heap
        };
        let mut kwargs: Vec<&Arg> = Vec::new();
        let mut element_name = None;
        let mut ok = self.bind_arguments(sig, call, bound, &mut kwargs, &mut element_name);
        ok &= self.report_missing(sig, bound, span);
        let alias = element_name.and_then(|a| self.element_name(a));
        let (args, types, given) = self.check_arguments(sig, bound, span, alias.as_ref());

        // Calls compiled inline.
        match &*sig.name {
            "if" if ok => return self.inline_if(args, span),
            "pipeline" if ok => return self.inline_pipeline(args, bound[1], span),
            "create_object" if ok => return self.inline_create_object(kwargs, span),
            _ => {}
        }
        if !ok {
            return self.err_node(span);
        }
        if &*sig.name == "json_parse" {
            self.warn_json_parse_of_non_string(&args);
        }
        let ty = sig.return_type(&types);
        self.node(TKind::Call(TCall { func: id, name: sig.name.clone(), args, given }), ty, span)
    }

    /// A call of a function that does not exist: reported, and its arguments still checked.
    fn unknown_function(&mut self, call: &Call, span: Span) -> TExpr {
        let name = &call.name;
        let mut d = Diagnostic::new(Code::UnknownFunction, name.span, format!("unknown function `{}`", name.node))
            .with_label("no such function");
        if let Some(help) = crate::syntax::foreign::function(&name.node) {
            d = d.with_help(help);
        } else if let Some(s) = did_you_mean(&name.node, self.funcs.names()) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        self.error(d);
        // Still check the arguments, to report what is wrong inside them too.
        for a in &call.args {
            self.expr(&a.value);
        }
        self.err_node(span)
    }

    /// Binds the arguments of `call` to the parameters of `sig` (`bound`, one per parameter;
    /// keywords a `**`-signature accepts go to `kwargs`, the element's name `as` of a
    /// function that takes templates to `element_name`), reporting positional arguments
    /// after keywords, too many arguments, duplicates and unknown keywords. False when any
    /// was reported.
    fn bind_arguments<'c>(
        &mut self,
        sig: &Signature,
        call: &'c Call,
        bound: &mut [Option<&'c Arg>],
        kwargs: &mut Vec<&'c Arg>,
        element_name: &mut Option<&'c Arg>,
    ) -> bool {
        let mut seen_keyword = false;
        let mut ok = true;
        for (i, a) in call.args.iter().enumerate() {
            match &a.keyword {
                None => {
                    if seen_keyword {
                        ok = false;
                        self.error(
                            Diagnostic::new(
                                Code::PositionalAfterKeyword,
                                a.value.span,
                                "positional argument after a keyword argument",
                            )
                            .with_label("positional")
                            .with_help(format!("name it, as in `{}`", sig.display())),
                        );
                        self.expr(&a.value);
                        continue;
                    }
                    if i >= bound.len() {
                        ok = false;
                        self.too_many_arguments(sig, call, a);
                        continue;
                    }
                    bound[i] = Some(a);
                }
                Some(k) if &*k.node == ELEMENT_NAME && sig.takes_element_name() => {
                    seen_keyword = true;
                    if let Some(prev) = element_name {
                        ok = false;
                        let prev_span = prev.keyword.as_ref().map_or(prev.value.span, |pk| pk.span.to(prev.value.span));
                        self.error(duplicate_argument(k).with_secondary(prev_span, "first given here"));
                    } else {
                        *element_name = Some(a);
                    }
                }
                Some(k) => {
                    seen_keyword = true;
                    match sig.param_index(&k.node) {
                        Some(p) => {
                            if let Some(prev) = bound[p] {
                                ok = false;
                                let prev_span =
                                    prev.keyword.as_ref().map_or(prev.value.span, |pk| pk.span.to(prev.value.span));
                                self.error(duplicate_argument(k).with_secondary(prev_span, "first given here"));
                                self.expr(&a.value);
                            } else {
                                bound[p] = Some(a);
                            }
                        }
                        None if sig.any_keywords => {
                            if kwargs.iter().any(|x| x.keyword.as_ref().map(|y| &y.node) == Some(&k.node)) {
                                ok = false;
                                self.error(duplicate_argument(k));
                            }
                            kwargs.push(a);
                        }
                        None => {
                            ok = false;
                            self.unknown_keyword(sig, k, a);
                        }
                    }
                }
            }
        }
        ok
    }

    /// Reports a positional argument past the last parameter (and checks it).
    fn too_many_arguments(&mut self, sig: &Signature, call: &Call, a: &Arg) {
        let msg = if sig.params.is_empty() {
            format!("`{}` takes only keyword arguments", sig.name)
        } else {
            format!(
                "`{}` takes at most {} argument{}, found {}",
                sig.name,
                sig.params.len(),
                if sig.params.len() == 1 { "" } else { "s" },
                call.args.len()
            )
        };
        self.error(
            Diagnostic::new(Code::TooManyArguments, a.value.span, msg)
                .with_label("unexpected argument")
                .with_help(format!("the signature is `{}`", sig.display())),
        );
        self.expr(&a.value);
    }

    /// Reports a keyword that names no parameter (and checks its value).
    fn unknown_keyword(&mut self, sig: &Signature, k: &Spanned<Name>, a: &Arg) {
        let mut d =
            Diagnostic::new(Code::UnknownKeyword, k.span, format!("`{}` has no parameter `{}`", sig.name, k.node))
                .with_label("unknown keyword");
        d = match did_you_mean(&k.node, sig.params.iter().map(|p| &*p.name)) {
            Some(s) => d.with_help(format!("did you mean `{s}`? the signature is `{}`", sig.display())),
            None if &*k.node == ELEMENT_NAME => d.with_help(format!(
                "`as` names the element of a template, and `{}` takes none; the signature is `{}`",
                sig.name,
                sig.display()
            )),
            None => d.with_help(format!("the signature is `{}`", sig.display())),
        };
        self.error(d);
        self.expr(&a.value);
    }

    /// Reports the required parameters no argument was bound to. False when any is missing.
    fn report_missing(&mut self, sig: &Signature, bound: &[Option<&Arg>], span: Span) -> bool {
        let missing: Vec<&str> = sig
            .params
            .iter()
            .zip(bound.iter())
            .filter(|(p, b)| p.is_required() && b.is_none())
            .map(|(p, _)| &*p.name)
            .collect();
        if missing.is_empty() {
            return true;
        }
        let list = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        self.error(
            Diagnostic::new(
                Code::MissingArgument,
                span,
                format!(
                    "`{}` is missing {} {list}",
                    sig.name,
                    if missing.len() == 1 { "argument" } else { "arguments" }
                ),
            )
            .with_label(format!("missing {list}"))
            .with_help(format!("the signature is `{}`", sig.display())),
        );
        false
    }

    /// Checks every bound argument by its parameter's kind: the typed arguments, their types
    /// and the bit set of parameters given.
    /// `alias` is the name `as` gave the element of the call's templates.
    fn check_arguments(
        &mut self,
        sig: &Signature,
        bound: &[Option<&Arg>],
        span: Span,
        alias: Option<&(Name, Span)>,
    ) -> (Vec<TArg>, Vec<Type>, u64) {
        let mut args = Vec::with_capacity(bound.len());
        let mut types = Vec::with_capacity(bound.len());
        let mut given = 0u64;
        for (i, arg) in bound.iter().enumerate() {
            let Some(param) = sig.param_at(i) else { break };
            if arg.is_some() && i < 64 {
                given |= 1 << i;
            }
            match (param.kind, arg) {
                (ParamKind::Value, Some(a)) => {
                    let t = self.expr(&a.value);
                    self.check_param_type(&sig.name, param, &t, a.value.span);
                    self.check_one_of(sig, param, &t, a.value.span);
                    types.push(t.ty.clone());
                    args.push(TArg::Value(t));
                }
                (ParamKind::Value, None) => {
                    let v = param.default.clone().unwrap_or_default();
                    let ty = super::type_of(&v);
                    types.push(ty.clone());
                    args.push(TArg::Value(TExpr::new(TKind::Const(v), ty, self.sp(span))));
                }
                (ParamKind::Lazy, Some(a)) => {
                    let t = self.expr(&a.value);
                    types.push(t.ty.clone());
                    args.push(TArg::Value(t));
                }
                (ParamKind::Lazy, None) => {
                    types.push(Type::Null);
                    args.push(TArg::Value(TExpr::new(TKind::Const(Value::Null), Type::Null, self.sp(span))));
                }
                (ParamKind::Template | ParamKind::PathTemplate, Some(a)) => {
                    let elem = types.first().map_or(Type::Any, Type::element);
                    let elem = if elem == Type::Never { Type::Any } else { elem };
                    let (arg, ty) = self.template(&a.value, elem, param.kind == ParamKind::PathTemplate, alias);
                    types.push(ty);
                    args.push(arg);
                }
                (ParamKind::Template | ParamKind::PathTemplate, None) => {
                    types.push(Type::Never);
                    args.push(TArg::Absent);
                }
                // `operations` is checked by `inline_pipeline`, once the initial value's
                // type is known.
                (ParamKind::Operations, _) => {
                    types.push(Type::Any);
                    args.push(TArg::Absent);
                }
            }
        }
        (args, types, given)
    }

    /// Reports a constant string argument outside its parameter's accepted values.
    fn check_one_of(&mut self, sig: &Signature, param: &Param, t: &TExpr, span: Span) {
        if param.one_of.is_empty() {
            return;
        }
        let Some(Value::Str(s)) = t.as_const() else { return };
        if param.one_of.contains(&&**s) {
            return;
        }
        let mut d = Diagnostic::new(
            Code::InvalidArgumentValue,
            span,
            format!("`{}` of `{}` must be one of {}, found {s:?}", param.name, sig.name, quote_all(param.one_of)),
        )
        .with_label("not accepted");
        if let Some(m) = did_you_mean(s, param.one_of.iter().copied()) {
            d = d.with_help(format!("did you mean {m:?}?"));
        }
        self.error(d);
    }

    /// `if(c, t, f)`, compiled inline.
    fn inline_if(&mut self, args: Vec<TArg>, span: Span) -> TExpr {
        let mut it = args.into_iter().map(|a| match a {
            TArg::Value(t) => t,
            _ => TExpr::new(TKind::Error, Type::Never, span),
        });
        let (c, t, f) = match (it.next(), it.next(), it.next()) {
            (Some(c), Some(t), Some(f)) => (c, t, f),
            _ => return self.err_node(span),
        };
        let ty = t.ty.clone().union(f.ty.clone());
        self.node(TKind::If(Box::new(c), Box::new(t), Box::new(f)), ty, span)
    }

    /// `pipeline(init, [op, …])`, compiled inline: each operation is checked with `current`
    /// bound to the previous one's type.
    fn inline_pipeline(&mut self, args: Vec<TArg>, ops_arg: Option<&Arg>, span: Span) -> TExpr {
        let init = match args.into_iter().next() {
            Some(TArg::Value(t)) => t,
            _ => return self.err_node(span),
        };
        let Some(ops_arg) = ops_arg else { return self.err_node(span) };
        let ExprKind::List(ops) = &ops_arg.value.kind else {
            self.error(
                Diagnostic::new(Code::OperationsNotList, ops_arg.value.span, "`operations` must be a list literal of expressions")
                    .with_label("not a list literal")
                    .with_help("write the operations inline: `pipeline(x, [json_parse(current), get_object_property(current, \"a\")])`"),
            );
            return self.err_node(span);
        };
        // Each operation can wrap `current` in as many levels as it nests, and the
        // operations run one after another: together they nest like one expression.
        let nesting: usize = ops.iter().map(height).sum();
        if nesting > PIPELINE_NESTING_FACTOR * self.max_depth {
            self.error(
                Diagnostic::new(
                    Code::NestingTooDeep,
                    ops_arg.value.span,
                    format!(
                        "the operations nest {nesting} levels together, more than {}",
                        PIPELINE_NESTING_FACTOR * self.max_depth
                    ),
                )
                .with_label("too many operations")
                .with_help("split the pipeline across several transforms"),
            );
            return self.err_node(span);
        }
        let slot = self.locals.len() as u32;
        let mut cur_ty = init.ty.clone();
        let mut typed_ops = Vec::with_capacity(ops.len());
        for op in ops {
            self.locals.push((LocalKind::Current, cur_ty.clone()));
            let t = self.expr(op);
            self.locals.pop();
            cur_ty = t.ty.truncated(MAX_PIPELINE_TYPE_DEPTH);
            typed_ops.push(t);
        }
        self.node(TKind::Pipeline { init: Box::new(init), slot, ops: typed_ops }, cur_ty, span)
    }

    /// `create_object(k=v, …)`, compiled inline as an object literal.
    fn inline_create_object(&mut self, kwargs: Vec<&Arg>, span: Span) -> TExpr {
        let mut fields = Vec::new();
        for a in kwargs {
            let t = self.expr(&a.value);
            if let Some(k) = &a.keyword {
                fields.push((k.node.clone(), t));
            }
        }
        let ty = Type::object(fields.iter().map(|(k, v)| (k.clone(), v.ty.clone())), false);
        self.node(TKind::Object(fields), ty, span)
    }

    /// Warns about `json_parse` of a value that is never a string (it returns it unchanged).
    fn warn_json_parse_of_non_string(&mut self, args: &[TArg]) {
        let Some(TArg::Value(t)) = args.first() else { return };
        if t.ty.fits(&Type::Str) == Fit::No && !matches!(t.kind, TKind::Error) {
            self.error(
                Diagnostic::new(
                    Code::JsonParseNonString,
                    t.span,
                    format!("`json_parse` of {:#} returns it unchanged", t.ty),
                )
                .with_label("not a string")
                .with_help("drop the `json_parse` call; the value is already parsed"),
            );
        }
    }

    fn check_param_type(&mut self, func: &str, param: &Param, t: &TExpr, span: Span) {
        if matches!(t.kind, TKind::Error) {
            return;
        }
        if t.ty.fits(&param.ty) == Fit::No {
            self.error(
                Diagnostic::new(
                    Code::ArgumentType,
                    span,
                    format!("`{}` of `{func}` must be {}, found {:#}", param.name, describe(&param.ty), t.ty),
                )
                .with_label(format!("this is {}", t.ty))
                .with_help(format!("`{func}` cannot succeed with this argument")),
            );
        }
    }

    /// Checks a template argument: a string literal (parsed now), a bare name (compiled at
    /// run time from its string value) or any other expression (deferred as is). The
    /// element is `item`, and `alias` too when the call gave it one (`as`).
    fn template(&mut self, e: &Expr, elem: Type, relative: bool, alias: Option<&(Name, Span)>) -> (TArg, Type) {
        let slot = self.locals.len() as u32;
        match &e.kind {
            ExprKind::Str(lit) => {
                if self.maps.len() >= 8 {
                    self.error(
                        Diagnostic::new(Code::NestingTooDeep, e.span, "template strings nested too deeply")
                            .with_label("too deep")
                            .with_help("write inner templates as expressions rather than strings"),
                    );
                    return (TArg::Absent, Type::Never);
                }
                let parsed = match relative.then(|| relative_path(&lit.value, alias.map(|a| &*a.0))).flatten() {
                    Some(path) => path,
                    None => {
                        let p = crate::syntax::parse_with_limit(&lit.value, self.max_depth);
                        self.maps.push(lit.map.clone());
                        for d in p.diagnostics {
                            self.error(d);
                        }
                        self.maps.pop();
                        p.expr
                    }
                };
                self.maps.push(lit.map.clone());
                let body = self.element_bound(elem, alias, |c| c.expr(&parsed));
                self.maps.pop();
                let ty = body.ty.clone();
                (TArg::Template { body: Arc::new(body), slot }, ty)
            }
            // A bare name that is an element (`item`, or an enclosing template's `as`) is
            // the template itself, not a template held in a variable.
            ExprKind::Name(n)
                if &**n != "item"
                    && &**n != "current"
                    && alias.is_none_or(|a| a.0 != *n)
                    && !self.aliases.iter().any(|a| a.name == *n) =>
            {
                let source = self.expr(e);
                if source.ty.fits(&Type::Str) == Fit::No && !matches!(source.kind, TKind::Error) {
                    self.error(
                        Diagnostic::new(
                            Code::TemplateNotString,
                            e.span,
                            format!("template `{n}` is {:#}, not a template string", source.ty),
                        )
                        .with_label(format!("this is {}", source.ty))
                        .with_help("a template given by name must hold an expression string, like \"item.name\""),
                    );
                }
                (TArg::Dynamic { source, relative, slot, alias: alias.map(|a| a.0.clone()) }, Type::Any)
            }
            _ => {
                let body = self.element_bound(elem, alias, |c| c.expr(e));
                let ty = body.ty.clone();
                (TArg::Template { body: Arc::new(body), slot }, ty)
            }
        }
    }

    /// Runs `f` with a template's element bound in the next slot: to `item`, and to `alias`
    /// when the call named it.
    fn element_bound(&mut self, elem: Type, alias: Option<&(Name, Span)>, f: impl FnOnce(&mut Self) -> TExpr) -> TExpr {
        let slot = self.locals.len() as u32;
        self.locals.push((LocalKind::Item, elem));
        if let Some((name, span)) = alias {
            self.aliases.push(Alias { name: name.clone(), slot, span: *span });
        }
        let body = f(self);
        if alias.is_some() {
            self.aliases.pop();
        }
        self.locals.pop();
        body
    }

    /// Checks the value of `as="NAME"` (SPEC §4.4): a string literal holding a name that is
    /// not a keyword, `item`, `current`, nor bound here already (a variable, a REF context,
    /// the `as` of an enclosing template). The name, unless it is no name at all or not
    /// literal (a clash is reported and the name still bound, so its uses are checked), with
    /// where it was given in the program's source.
    fn element_name(&mut self, a: &Arg) -> Option<(Name, Span)> {
        let value = &a.value;
        let ExprKind::Str(lit) = &value.kind else {
            let help = match &value.kind {
                ExprKind::Name(n) => format!("write the name itself, quoted: `as=\"{n}\"`"),
                _ => "write the name as a string literal: `as=\"repo\"`".to_string(),
            };
            self.error(
                Diagnostic::new(Code::ElementNameNotLiteral, value.span, "`as` must be a string literal")
                    .with_label("not a string literal")
                    .with_help(help),
            );
            // `as=repo` means `as="repo"`: the templates are checked with that name bound, so
            // its uses are not reported as well.
            return match &value.kind {
                ExprKind::Name(n) => Some((n.clone(), self.sp(value.span))),
                _ => None,
            };
        };
        let name = &*lit.value;
        if crate::syntax::KEYWORDS.contains(&name) {
            self.error(
                Diagnostic::new(
                    Code::ElementNameInvalid,
                    value.span,
                    format!("`as` cannot be `{name}`: it is a keyword"),
                )
                .with_label("a keyword")
                .with_help("choose a name that is not `and`, `or`, `not`, `true`, `false` or `null`"),
            );
            return None;
        }
        if !crate::syntax::is_identifier(name) {
            self.error(
                Diagnostic::new(Code::ElementNameInvalid, value.span, format!("`as` must be a name, found {name:?}"))
                    .with_label("not a name")
                    .with_help("a name is letters, digits and `_`, not starting with a digit: `as=\"repo\"`"),
            );
            return None;
        }
        let name = crate::syntax::intern(name);
        let at = self.sp(value.span);
        let clash = if matches!(&*name, "item" | "current") {
            let what = if &*name == "item" {
                "the element is `item` already"
            } else {
                "`current` is the value of a `pipeline` operation"
            };
            Some(
                Diagnostic::new(Code::ElementNameTaken, at, format!("`as` cannot be `{name}`: {what}"))
                    .with_label("already bound"),
            )
        } else if let Some(outer) = self.aliases.iter().rev().find(|x| x.name == name) {
            Some(
                Diagnostic::new(
                    Code::ElementNameTaken,
                    at,
                    format!("`{name}` already names the element of an enclosing template"),
                )
                .with_label("named again here")
                .with_secondary(outer.span, "first named here"),
            )
        } else {
            match self.scope.binding(&name) {
                Some(Binding::Variable) => Some(
                    Diagnostic::new(
                        Code::ElementNameTaken,
                        at,
                        format!("`as` cannot be `{name}`: it is a variable here"),
                    )
                    .with_label("already a variable"),
                ),
                Some(Binding::RefContext) => Some(
                    Diagnostic::new(
                        Code::ElementNameTaken,
                        at,
                        format!("`as` cannot be `{name}`: it is a REF context here (`REF:{name}`)"),
                    )
                    .with_label("already a REF context"),
                ),
                None => None,
            }
        };
        if let Some(d) = clash {
            // Spans are already the program's: pushed as they are, not mapped again.
            self.diags
                .push(d.with_help(format!("choose a name not in use here, as in `as=\"{}\"`", self.free_name(&name))));
        }
        Some((name, at))
    }

    /// A name like `taken` that nothing here binds, for help texts: `x` for `item` and
    /// `current`, else `taken2`, `taken3`, ….
    fn free_name(&self, taken: &str) -> String {
        let base = if matches!(taken, "item" | "current") { "x" } else { taken };
        let free = |n: &str| self.scope.binding(n).is_none() && !self.aliases.iter().any(|a| &*a.name == n);
        std::iter::once(base.to_string())
            .chain((2..100).map(|i| format!("{base}{i}")))
            .find(|n| n != taken && free(n))
            .unwrap_or_else(|| base.to_string())
    }
}

/// For `key_path` / `item_path`: a bare dotted path (`score`, `profile.age`, `tags.0`)
/// whose first segment is not `item` (nor `alias`, the element's name given by `as`) means a
/// path under `item`.
pub(crate) fn relative_path(s: &str, alias: Option<&str>) -> Option<Expr> {
    let segs: Vec<&str> = s.split('.').collect();
    let ok = segs.iter().all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    if !ok || segs.first() == Some(&"item") || (alias.is_some() && segs.first().copied() == alias) {
        return None;
    }
    let whole = Span::new(0, s.len());
    let mut e = Expr::new(ExprKind::Name(crate::syntax::intern("item")), Span::new(0, 0));
    let mut at = 0;
    for g in segs {
        let span = Span::new(at, at + g.len());
        e = Expr::new(
            ExprKind::Field(Box::new(e), Spanned::new(crate::syntax::intern(g), span)),
            Span::new(0, at + g.len()),
        );
        at += g.len() + 1;
    }
    e.span = whole;
    Some(e)
}

/// Whether a step result type may have its own `response` key.
fn has_response_field(t: &Type) -> bool {
    t.alternatives().iter().any(|a| match a {
        Type::Object(o) => o.fields.contains_key("response"),
        _ => false,
    })
}

/// A keyword given a second time.
fn duplicate_argument(k: &Spanned<Name>) -> Diagnostic {
    Diagnostic::new(Code::DuplicateArgument, k.span, format!("`{}` is given twice", k.node))
        .with_label("given again here")
        .with_help("remove one of them")
}

/// `t` with `file` replaced by what a file value is at run time: a path string, or an object
/// with a string `path` (`tool::validate`).
fn file_forms(t: &Type) -> Type {
    if !t.alternatives().contains(&Type::File) {
        return t.clone();
    }
    let file_object = Type::object([(Arc::from("path"), Type::Str)], true);
    Type::union_all(t.alternatives().iter().flat_map(|a| match a {
        Type::File => vec![Type::Str, file_object.clone()],
        other => vec![other.clone()],
    }))
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
        Type::Str => match s {
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
