//! REFs: one check for every REF of a tool, whether written as a JSON string (SPEC §2 places
//! 1–6) or as an atom inside an expression (place 7), so both get the same diagnostics.
//!
//! The check resolves the context (`arguments`, `response`, a step), records the edge a step
//! REF makes, and looks at the first segment against what is declared: the composite's
//! arguments (an error when undeclared) or the callee's responses (a warning). Deeper
//! segments are typed by the expression checker, which reports what cannot work
//! (`REF:s.count.name` on an integer).

use std::collections::HashMap;
use std::sync::Arc;

use super::check::{Checker, Owner, Use, UseKind};
use super::plan::{RefContext, RefPlan, StepId};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::{SourceMap, Span};
use crate::syntax::ast::{Expr, ExprKind, RefPath};
use crate::tool::RefSite;
use crate::types::RefUse;
use crate::types::{self, Scope, Type};

/// What a REF may see where it is written.
#[derive(Clone, Copy)]
pub(crate) struct RefEnv<'e> {
    /// Who holds the REF.
    pub owner: Owner,
    /// The type of `REF:response` where it is valid (`transform_responses`).
    pub response: Option<&'e Type>,
    /// The declared fields of the raw response, when known (for warnings).
    pub response_fields: Option<&'e Fields>,
    /// What the raw response is called in messages.
    pub response_source: &'e str,
    /// The outputs of the step's own `transform_arguments` (for `iterate_over`, which cannot
    /// see them).
    pub transformed: Option<&'e [Arc<str>]>,
}

impl<'e> RefEnv<'e> {
    /// A REF held by `owner`, where `REF:response` is not valid.
    pub(crate) fn plain(owner: Owner) -> RefEnv<'e> {
        RefEnv { owner, response: None, response_fields: None, response_source: "", transformed: None }
    }
}

/// A REF as written, with spans in the file.
pub(crate) struct RefText<'r> {
    pub context: &'r str,
    pub context_span: Span,
    pub first: Option<(&'r str, Span)>,
    pub whole: Span,
    /// The path after the context (`files.length`), for edge labels.
    pub carries: String,
}

/// Field names, in declaration order, for lookups and suggestions.
pub(crate) type Fields = indexmap::IndexSet<Arc<str>>;

/// What the REF strings of one owner resolved to, by the start of the string's content.
pub(crate) type RefInfo = HashMap<u32, (Option<RefPlan>, Type)>;

impl Checker<'_> {
    /// Checks a REF string found by [`crate::tool::Instruction::ref_sites`] and types it.
    pub(crate) fn json_ref(&mut self, site: &RefSite, env: &RefEnv<'_>) -> (Option<RefPlan>, Type) {
        let path = &site.path;
        let text = RefText {
            context: &path.context.node,
            context_span: path.context.span,
            first: path.segments.first().map(|s| (&*s.node, s.span)),
            whole: site.span,
            carries: carries(path.segments.iter().map(|s| &*s.node)),
        };
        let Some((context, base)) = self.check_ref(&text, env, true) else {
            return (None, Type::Any);
        };
        let ty = self.type_path(path, site.span, base);
        self.explain_ref(site.span, self.source.get(site.span.range()).unwrap_or_default(), &ty);
        (
            Some(RefPlan {
                context,
                segments: path.segments.iter().map(|s| s.node.clone()).collect(),
                span: site.span,
            }),
            ty,
        )
    }

    /// Checks a REF atom of a compiled expression (`map` maps expression offsets to the file).
    pub(crate) fn expression_ref(&mut self, r: &RefUse, map: &SourceMap, env: &RefEnv<'_>) {
        // The atom is `REF:` + the path, verbatim unless it sat in a template string with
        // escapes: then every part points at the whole atom.
        let written = 4 + r.context.len() + r.segments.iter().map(|s| s.len() + 1).sum::<usize>();
        let verbatim = r.span.len() == written;
        let at = |start: usize, len: usize| {
            if verbatim {
                let s = r.span.start as usize + start;
                map.map(Span::new(s, s + len))
            } else {
                map.map(r.span)
            }
        };
        let first = r.segments.first().map(|s| (&**s, at(5 + r.context.len(), s.len())));
        let text = RefText {
            context: &r.context,
            context_span: at(4, r.context.len()),
            first,
            whole: map.map(r.span),
            carries: carries(r.segments.iter().map(|s| &**s)),
        };
        if let Some((_, base)) = self.check_ref(&text, env, false) {
            // The atom's type, as the expression checker gives it (its problems are reported
            // with the expression).
            let scope = if &*r.context == "response" {
                Scope::closed().with_ref_contexts().with_response(base)
            } else {
                Scope::closed().with_ref(&r.context, base)
            };
            let path = RefPath {
                context: crate::span::Spanned::new(r.context.clone(), r.span),
                segments: r.segments.iter().map(|s| crate::span::Spanned::new(s.clone(), r.span)).collect(),
            };
            let expr = Expr::new(ExprKind::Ref(path), r.span);
            let checked = types::check(&expr, &scope, self.engine.functions(), self.engine.limits().max_depth);
            let mut name = format!("REF:{}", r.context);
            for s in &r.segments {
                name.push('.');
                name.push_str(s);
            }
            self.explain_ref(text.whole, &name, &checked.expr.ty);
        }
    }

    /// Records the type of a REF for `--explain-types`.
    fn explain_ref(&mut self, span: Span, name: &str, ty: &Type) {
        self.explained.push(super::infer::TypeAt {
            span,
            kind: super::infer::TypeAtKind::Ref,
            name: name.to_string(),
            ty: ty.clone(),
            inferred: None,
        });
    }

    /// Types the segments of a REF string whose context has type `base`, reporting
    /// segments that cannot apply (through the expression checker, so both kinds of REF
    /// agree).
    fn type_path(&mut self, path: &RefPath, whole: Span, base: Type) -> Type {
        let scope = if &*path.context.node == "response" {
            Scope::closed().with_ref_contexts().with_response(base)
        } else {
            Scope::closed().with_ref(&path.context.node, base)
        };
        let expr = Expr::new(ExprKind::Ref(path.clone()), whole);
        let checked = types::check(&expr, &scope, self.engine.functions(), self.engine.limits().max_depth);
        self.diags.extend(checked.diagnostics);
        checked.expr.ty
    }

    /// The type a REF context has for `env`'s owner, `None` when it is not one.
    pub(crate) fn context_type(&self, context: &str, env: &RefEnv<'_>) -> Option<Type> {
        match context {
            "arguments" => Some(self.args_type.clone()),
            "response" => env.response.cloned(),
            id => {
                let j = *self.ids.get(id)?;
                if matches!(env.owner, Owner::ToolArguments) {
                    return None;
                }
                Some(self.steps[j].result.clone().unwrap_or_else(Type::any_object))
            }
        }
    }

    /// The common check: context, first segment, edge. Returns the context and its type,
    /// or `None` when the context is not valid here (reported).
    pub(crate) fn check_ref(
        &mut self,
        r: &RefText<'_>,
        env: &RefEnv<'_>,
        from_json: bool,
    ) -> Option<(RefContext, Type)> {
        match r.context {
            "response" => {
                let Some(ty) = env.response else {
                    if from_json {
                        // Same wording as the expression checker's, which reports atoms.
                        self.diags.push(
                            Diagnostic::new(
                                Code::ResponseOutsideTransform,
                                r.context_span,
                                "`REF:response` is only valid inside `transform_responses`",
                            )
                            .with_label("no response here")
                            .with_help("refer to a step's result as `REF:<execution_id>.field`"),
                        );
                    }
                    return None;
                };
                if let (Some((field, span)), Some(fields)) = (r.first, env.response_fields) {
                    if !fields.contains(field) && !is_builtin_segment(field) {
                        let d = Diagnostic::new(
                            Code::UndeclaredResponseField,
                            span,
                            format!("the response of `{}` has no declared field `{field}`", env.response_source),
                        )
                        .with_label("not a declared response");
                        self.diags.push(with_field_help(d, field, fields, env.response_source));
                    }
                }
                Some((RefContext::Response, ty.clone()))
            }
            "arguments" => {
                if let Some((name, span)) = r.first {
                    if !self.args.contains_key(name) {
                        self.undeclared_argument(name, span, env);
                    }
                }
                Some((RefContext::Arguments, self.args_type.clone()))
            }
            id => {
                let Some(&j) = self.ids.get(id) else {
                    self.unknown_context(r, env);
                    return None;
                };
                if matches!(env.owner, Owner::ToolArguments) {
                    self.unknown_context(r, env);
                    return None;
                }
                self.steps[j].used = true;
                if let Owner::Step(i) = env.owner {
                    self.steps[i].uses.push(Use {
                        to: j,
                        span: r.whole,
                        carries: r.carries.clone(),
                        kind: UseKind::Ref,
                    });
                }
                if let (Some((field, span)), Some(fields)) = (r.first, self.steps[j].fields.clone()) {
                    if !fields.contains(field) && !is_builtin_segment(field) {
                        self.undeclared_field(j, field, span, &fields);
                    }
                }
                let ty = self.steps[j].result.clone().unwrap_or_else(Type::any_object);
                Some((RefContext::Step(StepId(j)), ty))
            }
        }
    }

    fn undeclared_argument(&mut self, name: &str, span: Span, env: &RefEnv<'_>) {
        if env.transformed.is_some_and(|outs| outs.iter().any(|o| &**o == name)) {
            self.diags.push(
                Diagnostic::new(
                    Code::IterateOverTransformed,
                    span,
                    format!("`iterate_over` cannot use `{name}`, an output of this step's `transform_arguments`"),
                )
                .with_label("a transformed argument")
                .with_help(
                    "`iterate_over` is resolved before `transform_arguments` runs; iterate over the REF the transform starts from, or compute the list in an earlier step",
                ),
            );
            return;
        }
        if !self.tool.declares_arguments {
            self.open_argument(name, span);
            return;
        }
        let declared: Vec<&str> = self.args.keys().map(|n| &**n).collect();
        let mut d = Diagnostic::new(
            Code::UndeclaredArgument,
            span,
            format!("`REF:arguments.{name}` names an argument this tool does not declare"),
        )
        .with_label("no such argument");
        d = match did_you_mean(name, declared.iter().copied()) {
            Some(s) => d.with_did_you_mean(s, s),
            None if declared.is_empty() => d.with_help(format!(
                "this tool declares no arguments; add {{\"name\": \"{name}\", \"type_name\": \"…\"}} to its `arguments`"
            )),
            None => d.with_help(format!(
                "the declared arguments are {}; add {{\"name\": \"{name}\", …}} to `arguments` if it is new",
                quoted(&declared)
            )),
        };
        self.diags.push(d);
    }

    /// `REF:arguments.X` in a tool without an `arguments` key: the tool accepts any
    /// argument, so `X` is `any`; one warning per name suggests declaring it (SPEC §5).
    fn open_argument(&mut self, name: &str, span: Span) {
        if !self.undeclared_warned.insert(Arc::from(name)) {
            return;
        }
        self.diags.push(
            Diagnostic::new(
                Code::OpenArgument,
                span,
                format!("`REF:arguments.{name}` reads an argument this tool does not declare, so its type is `any`"),
            )
            .with_label("not declared: the tool has no `arguments` list")
            .with_help(format!(
                "declare it to have it checked and documented: \"arguments\": [{{\"name\": \"{name}\", \"type_name\": \"…\", \"required\": true}}]"
            )),
        );
    }

    fn undeclared_field(&mut self, j: usize, field: &str, span: Span, fields: &Fields) {
        let step = &self.steps[j];
        let id = &step.ins.execution_id.node;
        let d = if step.ins.is_transform_step() {
            let outputs: Vec<&str> = fields.iter().map(|f| &**f).collect();
            let d = Diagnostic::new(
                Code::UndeclaredResponseField,
                span,
                format!("the result of transform step `{id}` has no field `{field}`"),
            )
            .with_label("not one of its transforms");
            match did_you_mean(field, outputs.iter().copied()) {
                Some(s) => d.with_did_you_mean(s, s),
                None => d.with_help(format!(
                    "a transform step's result is the object of its transforms: {}",
                    quoted(&outputs)
                )),
            }
        } else if step.ins.parallel_execution.is_some() {
            let outputs: Vec<&str> = fields.iter().map(|f| &**f).filter(|f| *f != "response").collect();
            let mut d = Diagnostic::new(
                Code::UndeclaredResponseField,
                span,
                format!("the result of parallel step `{id}` has no field `{field}`"),
            )
            .with_label("not in the result");
            d = match did_you_mean(field, fields.iter().map(|f| &**f)) {
                Some(s) => d.with_did_you_mean(s, s),
                None if outputs.is_empty() => d.with_help(format!(
                    "a parallel step's result is {{\"response\": [the children's results]}}: use `REF:{id}.response`"
                )),
                None => d.with_help(format!(
                    "a parallel step's result is {{\"response\": […]}} plus its `transform_responses` outputs {}",
                    quoted(&outputs)
                )),
            };
            d
        } else {
            let callee = step.ins.tool_path().unwrap_or_default().to_string();
            let d = Diagnostic::new(
                Code::UndeclaredResponseField,
                span,
                format!("step `{id}`'s result has no declared field `{field}`"),
            )
            .with_label(format!("not a response of `{callee}`"));
            with_field_help(d, field, fields, &callee)
        };
        self.diags.push(d);
    }

    fn unknown_context(&mut self, r: &RefText<'_>, env: &RefEnv<'_>) {
        // A step written but left out of the model for its own errors (reported there): the
        // REF names it, and saying that no such step exists would be wrong.
        if self.tool.left_out.iter().any(|id| id == r.context) {
            return;
        }
        let mut contexts: Vec<&str> = vec!["arguments"];
        let before_steps = matches!(env.owner, Owner::ToolArguments);
        if !before_steps {
            contexts.extend(self.steps.iter().map(|s| &*s.ins.execution_id.node));
            contexts.extend(self.steps.iter().filter_map(|s| s.key.as_deref()));
        }
        if env.response.is_some() {
            contexts.push("response");
        }
        let mut d =
            Diagnostic::new(Code::UnknownRefContext, r.context_span, format!("unknown REF context `{}`", r.context))
                .with_label("no such step or context");
        let ambiguous = self.ambiguous_keys.get(r.context).filter(|_| !before_steps);
        if let Some(users) = ambiguous {
            let ids: Vec<&str> = users.iter().map(|&j| &*self.steps[j].ins.execution_id.node).collect();
            let mut callees: Vec<&str> = users.iter().filter_map(|&j| self.steps[j].ins.tool_path()).collect();
            callees.sort_unstable();
            callees.dedup();
            d = d.with_help(format!(
                "`{}` is the `output_key` of {}, which steps {} call: it names none of them; give the one you mean an `expected_key`, or use its execution id",
                r.context,
                quoted(&callees),
                quoted(&ids)
            ));
        } else if let Some(s) = self.steps.iter().find(|s| {
            !before_steps
                && s.ins.expected_key.is_some()
                && s.callee.as_ref().and_then(|c| c.def.as_ref()).and_then(|d| d.output_key.as_ref()).map(|k| &*k.node)
                    == Some(r.context)
        }) {
            let key = s.key.as_deref().unwrap_or_default();
            d = d.with_help(format!(
                "`{}` is the `output_key` of `{}`, but step `{}` names its result with its own `expected_key`, which wins: use `REF:{key}`",
                r.context,
                s.ins.tool_path().unwrap_or_default(),
                s.ins.execution_id.node
            ));
        } else if let Some(help) = self.element_help(r, env) {
            d = d.with_help(help);
        } else if before_steps && self.ids.contains_key(r.context) {
            d = d.with_help(
                "the tool's own `transform_arguments` runs before any step: only `REF:arguments` is available there",
            );
        } else if let Some(s) = did_you_mean(r.context, contexts.iter().copied()) {
            d = d.with_did_you_mean(&format!("REF:{s}"), s);
        } else {
            let shown: Vec<&str> = contexts.iter().copied().take(8).collect();
            let more = if contexts.len() > shown.len() { ", …" } else { "" };
            d = d.with_help(format!("known contexts: {}{more}", shown.join(", ")));
        }
        self.diags.push(d);
    }
}

impl Checker<'_> {
    /// The help for `REF:item.url` (`REF:element…`, `REF:each…`) in a step: a fan-out passes
    /// each element whole as its `child_argument_name`, and a field of each is passed by
    /// iterating over the list of that field; elsewhere an element is `item` in a template.
    fn element_help(&self, r: &RefText<'_>, env: &RefEnv<'_>) -> Option<String> {
        if !matches!(r.context, "item" | "element" | "each" | "current") {
            return None;
        }
        let Owner::Step(i) = env.owner else {
            return Some(format!(
                "`{}` is not a REF context: an element of a list is `item` inside a template (`map(array=…, template=\"item.url\")`), not a REF",
                r.context
            ));
        };
        let step = self.steps.get(i)?;
        let Some(pe) = &step.ins.parallel_execution else {
            return Some(format!(
                "`{}` is not a REF context: an element of a list is `item` inside a template (`map(array=…, template=\"item.url\")`); to call the tool once per element, give the step `parallel_execution`",
                r.context
            ));
        };
        let arg = &pe.child_argument_name.node;
        let over = pe.iterate_over.as_str().map(|s| s.value.trim().to_string());
        Some(match (r.first, over) {
            (Some((field, _)), Some(over)) => format!(
                "a fan-out passes each element of `iterate_over` whole, as the argument `{arg}`: to pass the field `{field}` of each, iterate over the list of those fields — `map(array={over}, template=\"item.{field}\")`, computed in a transform step (or the listing step's `transform_responses`) and named by `iterate_over` — and leave `{arg}` out of `arguments`"
            ),
            _ => format!(
                "a fan-out passes each element of `iterate_over` whole, as the argument `{arg}`: leave `{arg}` out of `arguments`"
            ),
        })
    }
}

/// Segments every object answers without declaring them (SPEC §2).
fn is_builtin_segment(s: &str) -> bool {
    matches!(s, "response" | "length")
}

fn with_field_help(d: Diagnostic, field: &str, fields: &Fields, source: &str) -> Diagnostic {
    let names: Vec<&str> = fields.iter().map(|f| &**f).filter(|f| *f != "response").collect();
    // `REF:s.host.name` for the field `host.name`: a REF path cannot name it, an expression can.
    let odd = names.iter().find(|n| n.len() > field.len() && n.starts_with(field) && !crate::tool::is_identifier(n));
    if let Some(name) = odd {
        return d.with_help(format!(
            "`{source}` declares the field `{name}`, which a REF path cannot name: bind the result in a transform's `variables` (`\"r\": \"REF:…\"`) and read `r['{name}']`"
        ));
    }
    match did_you_mean(field, names.iter().copied()) {
        Some(s) => d.with_did_you_mean(s, s),
        None if names.is_empty() => d.with_help(format!("`{source}` declares no responses")),
        None => d.with_help(format!("`{source}` declares {}", quoted(&names))),
    }
}

/// `a`, `b` and `c`, each in backticks (at most ten, then a count).
pub(crate) fn quoted(items: &[&str]) -> String {
    let shown: Vec<String> = items.iter().take(10).map(|s| format!("`{s}`")).collect();
    let rest = items.len().saturating_sub(shown.len());
    match shown.split_last() {
        _ if rest > 0 => format!("{} and {rest} more", shown.join(", ")),
        Some((last, init)) if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        Some((last, _)) => last.clone(),
        None => "nothing".to_string(),
    }
}

/// The path after the context, for edge labels: `files.length`, or `*` for the whole value.
fn carries<'s>(segments: impl Iterator<Item = &'s str>) -> String {
    let s: Vec<&str> = segments.collect();
    if s.is_empty() {
        "*".to_string()
    } else {
        s.join(".")
    }
}

/// The contexts named after `REF:` anywhere in an expression's text (in template strings
/// too), without duplicates, `response` excepted. A superset of the REF atoms the checker
/// will find (text inside plain string literals counts too): used to give the expression
/// scope only the contexts it can use, so that scopes stay small however many steps the
/// tool has.
pub(crate) fn mentioned_contexts(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (at, _) in text.match_indices("REF:") {
        let rest = &text[at + 4..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(rest.len());
        let id = &rest[..end];
        if !id.is_empty() && id != "response" && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}
