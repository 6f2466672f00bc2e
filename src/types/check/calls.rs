//! Calls: binding arguments to a signature's parameters, checking each against its type, and the calls the checker inlines (`if`, `pipeline`, `create_object`).

use std::sync::Arc;

use super::super::signature::{Param, ParamKind, Signature, ELEMENT_NAME};
use super::super::typed::{TArg, TCall, TExpr, TKind};
use super::super::{Fit, Type};
use super::*;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::{Span, Spanned};
use crate::syntax::ast::{Arg, Call, ExprKind, Name};
use crate::value::Value;

impl Checker<'_> {
    pub(super) fn call(&mut self, call: &Call, span: Span) -> TExpr {
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
        ok &= self.report_missing(sig, bound, span, call);
        let alias = element_name.and_then(|a| self.element_name(a));
        // The arguments' types go on the checker's one list (`arg_types`), from `base` on,
        // and come off again once the return type is known.
        let base = self.arg_types.len();
        let (args, given) = self.check_arguments(sig, bound, span, alias.as_ref());
        let inline = matches!(&*sig.name, "if" | "pipeline" | "create_object");
        let ty = (ok && !inline).then(|| sig.return_type(self.arg_types.get(base..).unwrap_or_default()));
        // `filter(…, condition_string='item != null')` leaves no null (what W1330's help writes).
        let drops_nulls = |a: &Arg| matches!(&a.value.kind, ExprKind::Str(c) if c.value.trim() == "item != null");
        let ty = match ty {
            Some(Type::List(e))
                if &*sig.name == "filter" && bound.get(1).copied().flatten().is_some_and(drops_nulls) =>
            {
                Some(Type::List(Arc::new(e.non_null())))
            }
            ty => ty,
        };
        if ok && matches!(&*sig.name, "sum" | "avg") {
            self.check_summed(&sig.name, base, bound);
        }
        self.arg_types.truncate(base);

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
        let ty = ty.unwrap_or(Type::Any);
        self.node(TKind::Call(TCall { func: id, name: sig.name.clone(), args, given }), ty, span)
    }

    /// A call of a function that does not exist: reported, and its arguments still checked.
    pub(super) fn unknown_function(&mut self, call: &Call, span: Span) -> TExpr {
        let name = &call.name;
        let mut d = Diagnostic::new(Code::UnknownFunction, name.span, format!("unknown function `{}`", name.node))
            .with_label("no such function");
        if let Some(help) = crate::syntax::foreign::function(&name.node) {
            d = d.with_help(help);
        } else if let Some(s) = did_you_mean(&name.node, self.funcs.names()) {
            d = d.with_did_you_mean(s, s);
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
    pub(super) fn bind_arguments<'c>(
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
    pub(super) fn too_many_arguments(&mut self, sig: &Signature, call: &Call, a: &Arg) {
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
    pub(super) fn unknown_keyword(&mut self, sig: &Signature, k: &Spanned<Name>, a: &Arg) {
        let mut d =
            Diagnostic::new(Code::UnknownKeyword, k.span, format!("`{}` has no parameter `{}`", sig.name, k.node))
                .with_label("unknown keyword");
        if let Some(d) = sort_order_habit(sig, k, a, d.clone()) {
            self.error(d);
            self.expr(&a.value);
            return;
        }
        d = match meant_param(sig, &k.node) {
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
    pub(super) fn report_missing(&mut self, sig: &Signature, bound: &[Option<&Arg>], span: Span, call: &Call) -> bool {
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
        // A parameter that an unknown keyword's help names (`condition=` for
        // `condition_string`, `key=` for `key_path`) is one mistake, reported there.
        let misspelt: Vec<&str> = call
            .args
            .iter()
            .filter_map(|a| a.keyword.as_ref())
            .filter(|k| sig.param_index(&k.node).is_none())
            .filter_map(|k| meant_param(sig, &k.node))
            .collect();
        let missing: Vec<&str> = missing.into_iter().filter(|m| !misspelt.contains(m)).collect();
        if missing.is_empty() {
            return false;
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

    /// Checks every bound argument by its parameter's kind: the typed arguments and the bit
    /// set of parameters given; their types are pushed on `arg_types`, one per argument (a
    /// list kept for the whole check, so none is allocated per call).
    /// `alias` is the name `as` gave the element of the call's templates.
    pub(super) fn check_arguments(
        &mut self,
        sig: &Signature,
        bound: &[Option<&Arg>],
        span: Span,
        alias: Option<&(Name, Span)>,
    ) -> (Vec<TArg>, u64) {
        let mut args = Vec::with_capacity(bound.len());
        let base = self.arg_types.len();
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
                    self.arg_types.push(t.ty.clone());
                    args.push(TArg::Value(t));
                }
                (ParamKind::Value, None) => {
                    let v = param.default.clone().unwrap_or_default();
                    let ty = super::super::type_of(&v);
                    self.arg_types.push(ty.clone());
                    args.push(TArg::Value(TExpr::new(TKind::Const(v), ty, self.sp(span))));
                }
                (ParamKind::Lazy, Some(a)) => {
                    let t = self.expr(&a.value);
                    self.arg_types.push(t.ty.clone());
                    args.push(TArg::Value(t));
                }
                (ParamKind::Lazy, None) => {
                    self.arg_types.push(Type::Null);
                    args.push(TArg::Value(TExpr::new(TKind::Const(Value::Null), Type::Null, self.sp(span))));
                }
                (ParamKind::Template | ParamKind::PathTemplate, Some(a)) => {
                    let first = if i == 0 { None } else { self.arg_types.get(base) };
                    let elem = first.map_or(Type::Any, Type::element);
                    let elem = if elem == Type::Never { Type::Any } else { elem };
                    let (arg, ty) = self.template(&a.value, elem, param.kind == ParamKind::PathTemplate, alias);
                    self.arg_types.push(ty);
                    args.push(arg);
                }
                (ParamKind::Template | ParamKind::PathTemplate, None) => {
                    self.arg_types.push(Type::Never);
                    args.push(TArg::Absent);
                }
                // `operations` is checked by `inline_pipeline`, once the initial value's
                // type is known.
                (ParamKind::Operations, _) => {
                    self.arg_types.push(Type::Any);
                    args.push(TArg::Absent);
                }
            }
        }
        (args, given)
    }

    /// Reports a constant string argument outside its parameter's accepted values.
    pub(super) fn check_one_of(&mut self, sig: &Signature, param: &Param, t: &TExpr, span: Span) {
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
    pub(super) fn inline_if(&mut self, args: Vec<TArg>, span: Span) -> TExpr {
        let mut it = args.into_iter().map(|a| match a {
            TArg::Value(t) => t,
            _ => TExpr::new(TKind::Error, Type::Never, span),
        });
        let (c, t, f) = match (it.next(), it.next(), it.next()) {
            (Some(c), Some(t), Some(f)) => (c, t, f),
            _ => return self.err_node(span),
        };
        let ty = t.ty.clone().union(f.ty.clone());
        self.node(TKind::If(Box::new([c, t, f])), ty, span)
    }

    /// `pipeline(init, [op, …])`, compiled inline: each operation is checked with `current`
    /// bound to the previous one's type.
    pub(super) fn inline_pipeline(&mut self, args: Vec<TArg>, ops_arg: Option<&Arg>, span: Span) -> TExpr {
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
    pub(super) fn inline_create_object(&mut self, kwargs: Vec<&Arg>, span: Span) -> TExpr {
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
    pub(super) fn warn_json_parse_of_non_string(&mut self, args: &[TArg]) {
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

    /// `E0201` for a `sum` or `avg` whose elements (or what its `item_path` reads of them)
    /// are never numbers: `sum(array=orders, item_path="currency")` of a string field fails
    /// at its first element (hostile round 10, finding 14). Booleans count (1 and 0) and
    /// `null` is skipped, as the bodies do; a type that may be a number is left to run time.
    fn check_summed(&mut self, func: &str, base: usize, bound: &[Option<&Arg>]) {
        let (Some(array), path) = (self.arg_types.get(base), self.arg_types.get(base + 1)) else { return };
        let (summed, at) = match (path, bound.get(1).copied().flatten()) {
            // An `item_path` in error (reported): what it reads is not known.
            (Some(Type::Never), Some(_)) => return,
            (Some(t), Some(a)) => (t.clone(), a),
            _ => match bound.first().copied().flatten() {
                Some(a) => (array.element(), a),
                None => return,
            },
        };
        let numbers = Type::Number.union(Type::Bool).union(Type::Null);
        if matches!(summed, Type::Never | Type::Any) || summed.fits(&numbers) != Fit::No {
            return;
        }
        // A bare dotted path (`currency`, `item.total`) as `to_number` of the same field.
        let field = match &at.value.kind {
            ExprKind::Str(p) if bound.get(1).copied().flatten().is_some() => {
                let p = p.value.trim();
                let bare = !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
                bare.then(|| if p.starts_with("item.") { p.to_string() } else { format!("item.{p}") })
            }
            _ => None,
        };
        let help = match field {
            Some(field) if summed.fits(&Type::Str) != Fit::No => format!(
                "`{func}` adds numbers; convert text that holds numbers (`item_path=\"to_number(value={field})\"`), {func} another field, or count with `count`"
            ),
            _ => format!("`{func}` adds numbers: give it numbers, or an `item_path` that reads a number of each element"),
        };
        self.error(
            Diagnostic::new(
                Code::ArgumentType,
                at.value.span,
                format!("`{func}` adds numbers, and each element gives {summed:#}"),
            )
            .with_label(format!("this is {summed}"))
            .with_help(help),
        );
    }

    pub(super) fn check_param_type(&mut self, func: &str, param: &Param, t: &TExpr, span: Span) {
        if matches!(t.kind, TKind::Error) {
            return;
        }
        if t.ty.fits(&param.ty) == Fit::No {
            let d = Diagnostic::new(
                Code::ArgumentType,
                span,
                format!("`{}` of `{func}` must be {}, found {:#}", param.name, describe(&param.ty), t.ty),
            )
            .with_label(format!("this is {}", t.ty));
            let d = match list_fields_of(&t.ty, &param.ty) {
                // An object that holds the list (a fan-out step's `{response: [...]}`, a
                // tool's `{results: [...], total: 3}`): its field is what was meant.
                Some(fields) if fields.len() == 1 => {
                    let read = written_path(t).unwrap_or_else(|| "…".to_string());
                    let help = format!(
                        "this object's list is its field `{0}`: read `{read}.{0}`; `{func}` cannot succeed with the object itself",
                        fields[0]
                    );
                    let d = d.with_help(help);
                    if postfix_safe(t) && is_identifier(&fields[0]) {
                        d.with_suggestion(
                            Span::new(span.end as usize, span.end as usize),
                            format!(".{}", fields[0]),
                            Applicability::MaybeIncorrect,
                        )
                    } else {
                        d
                    }
                }
                Some(fields) => {
                    // At most a few named: an object type may have thousands of fields.
                    let mut named = fields.iter().take(LIST_FIELDS_NAMED).map(|f| format!("`{f}`")).collect::<Vec<_>>();
                    if fields.len() > LIST_FIELDS_NAMED {
                        named.push(format!("{} more", fields.len() - LIST_FIELDS_NAMED));
                    }
                    d.with_help(format!(
                        "this object holds lists in its fields {}: read the one you mean (`….{}`); `{func}` cannot succeed with the object itself",
                        named.join(", "),
                        fields[0]
                    ))
                }
                None => d.with_help(format!("`{func}` cannot succeed with this argument")),
            };
            self.error(d);
        }
    }
}

/// A keyword given a second time.
pub(super) fn duplicate_argument(k: &Spanned<Name>) -> Diagnostic {
    Diagnostic::new(Code::DuplicateArgument, k.span, format!("`{}` is given twice", k.node))
        .with_label("given again here")
        .with_help("remove one of them")
}

/// `t` with `file` replaced by what a file value is at run time: a path string, or an object
/// with a string `path` (`tool::validate`).
pub(super) fn file_forms(t: &Type) -> Type {
    if !t.alternatives().contains(&Type::File) {
        return t.clone();
    }
    let file_object = Type::object([(Arc::from("path"), Type::Str)], true);
    Type::union_all(t.alternatives().iter().flat_map(|a| match a {
        Type::File => vec![Type::Str, file_object.clone()],
        other => vec![other.clone()],
    }))
}

/// How many of an object's list fields a help names.
const LIST_FIELDS_NAMED: usize = 5;

/// The fields of `given`, an object type (or an object or `null`), whose values are lists
/// that `expected` takes, when `expected` takes a list; `None` when there are none.
fn list_fields_of(given: &Type, expected: &Type) -> Option<Vec<Arc<str>>> {
    let any_list = Type::List(Arc::new(Type::Any));
    if any_list.fits(expected) == Fit::No {
        return None;
    }
    let Type::Object(o) = given.non_null() else { return None };
    let fields: Vec<Arc<str>> = o
        .fields
        .iter()
        .filter(|(_, t)| matches!(t.non_null(), Type::List(_)) && t.fits(expected) != Fit::No)
        .map(|(k, _)| k.clone())
        .collect();
    (!fields.is_empty()).then_some(fields)
}

/// `e` as written when it is a variable or a REF followed by fields (`REF:step.a`,
/// `orders.items`), to name in a help.
fn written_path(e: &TExpr) -> Option<String> {
    match &e.kind {
        TKind::Global(n) => Some(n.to_string()),
        TKind::Ref(ctx, segs) => Some(
            std::iter::once(format!("REF:{ctx}"))
                .chain(segs.iter().map(|s| s.to_string()))
                .collect::<Vec<_>>()
                .join("."),
        ),
        TKind::Field(inner, seg) => Some(format!("{}.{seg}", written_path(inner)?)),
        _ => None,
    }
}

/// Whether `.field` written right after `e`'s text reads a field of `e`'s value: `e` is a
/// name, a REF, a field, an index or a call, not an operator whose last operand it would
/// bind to.
fn postfix_safe(e: &TExpr) -> bool {
    matches!(
        e.kind,
        TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Field(..) | TKind::Index(_) | TKind::Call(_)
    )
}

/// `[A-Za-z_][A-Za-z0-9_]*`: a field name `.name` can read.
fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `sort(…, descending=true)` (`reverse=True`, `ascending=false`, `order=…`): other
/// languages' ways of asking for the order, which `sort` takes as `direction='desc'` or
/// `'asc'`. `d` with that help, and with the argument rewritten when it is a boolean
/// literal; `None` for any other unknown keyword.
fn sort_order_habit(sig: &Signature, k: &Spanned<Name>, a: &Arg, d: Diagnostic) -> Option<Diagnostic> {
    let has_direction = sig.params.iter().any(|p| &*p.name == "direction");
    let descending_when_true = match &*k.node {
        "descending" | "desc" | "reverse" | "reversed" => Some(true),
        "ascending" | "asc" => Some(false),
        "order" | "sort_order" | "order_by_direction" => None,
        _ => return None,
    };
    if &*sig.name != "sort" || !has_direction {
        return None;
    }
    let d = d.with_help(format!(
        "`sort` takes the order as `direction='desc'` (or `'asc'`, the default); the signature is `{}`",
        sig.display()
    ));
    Some(match (descending_when_true, &a.value.kind) {
        (Some(when_true), ExprKind::Bool(b)) => {
            let direction = if *b == when_true { "desc" } else { "asc" };
            let span = Span::new(k.span.start as usize, a.value.span.end as usize);
            d.with_suggestion(span, format!("direction='{direction}'"), Applicability::MachineApplicable)
        }
        _ => d,
    })
}

/// The parameter of `sig` an unknown keyword most likely meant: the nearest name, else the
/// one path parameter ([`path_param`]). The help of `E0104` names it, and a required one
/// so named is not reported missing too.
fn meant_param<'s>(sig: &'s Signature, keyword: &str) -> Option<&'s str> {
    did_you_mean(keyword, sig.params.iter().map(|p| &*p.name)).or_else(|| path_param(sig, keyword))
}

/// The one parameter of `sig` that reads a path of each element (`key_path`, `item_path`),
/// for a keyword that names another such path (`max(…, key_path=…)` of a function whose
/// path is `item_path`) or says the same in other words (`key`, `field`, `by`, `path`).
fn path_param<'s>(sig: &'s Signature, keyword: &str) -> Option<&'s str> {
    let asks_for_path = keyword.ends_with("_path")
        || matches!(keyword, "path" | "key" | "field" | "by" | "attr" | "attribute" | "property");
    let mut paths = sig.params.iter().map(|p| &*p.name).filter(|n| n.ends_with("_path"));
    let one = paths.next()?;
    (asks_for_path && paths.next().is_none()).then_some(one)
}
