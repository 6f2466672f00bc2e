//! A step's call against its callee's declared arguments: undeclared, missing, mistyped, and
//! literals that break a declared constraint.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{a_type, plural, Checker};
use crate::analysis::declared_types::{accepted_type_as, exact_type};
use crate::analysis::refs::quoted;
use crate::analysis::root::LoadedTool;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::Span;
use crate::tool::{Instruction, Param};
use crate::types::{Fit, Type};

impl<'a> Checker<'a> {
    /// The call against the callee's declared arguments: undeclared, missing, mistyped.
    pub(super) fn call(&mut self, ins: &Instruction, callee: &LoadedTool, supplied: &[Supplied]) {
        let Some(def) = &callee.def else { return };
        let path = ins.tool_path().unwrap_or_default();
        let by_name: HashMap<&str, &Param> = def.arguments.iter().map(|p| (p.name.node.as_str(), p)).collect();
        let given: HashSet<&str> = supplied.iter().map(|s| &*s.name).collect();
        if callee.declares_arguments {
            let declared: Vec<&str> = def.arguments.iter().map(|p| p.name.node.as_str()).collect();
            for s in supplied.iter().filter(|s| !by_name.contains_key(&*s.name)) {
                let mut d = Diagnostic::new(
                    Code::UndeclaredCalleeArgument,
                    s.key_span,
                    format!("`{path}` has no argument `{}`", s.name),
                )
                .with_label(format!("this {} is not an argument of the callee", s.what));
                d = match did_you_mean(&s.name, declared.iter().copied()) {
                    // The key as written there: with its quotes in JSON.
                    Some(m) if self.source.get(s.key_span.range()).is_some_and(|t| t.starts_with('"')) => {
                        d.with_did_you_mean(m, serde_json::to_string(m).unwrap_or_default())
                    }
                    Some(m) => d.with_did_you_mean(m, m),
                    None if declared.is_empty() => d.with_help(format!("`{path}` declares no arguments")),
                    None => d.with_help(format!("`{path}` declares {}", quoted(&declared))),
                };
                self.diags.push(d);
            }
        }
        let missing: Vec<&str> = def
            .arguments
            .iter()
            .filter(|p| {
                p.is_required()
                    && crate::tool::validate::default_of(p).is_none()
                    && !given.contains(p.name.node.as_str())
            })
            .map(|p| p.name.node.as_str())
            .collect();
        if !missing.is_empty() {
            let list = quoted(&missing);
            let n = missing.len();
            self.diags.push(
                Diagnostic::new(
                    Code::MissingCalleeArgument,
                    ins.tool_definition_path.as_ref().map_or(ins.span, |p| p.span),
                    format!(
                        "step `{}` does not supply the required argument{} {list} of `{path}`",
                        ins.execution_id.node,
                        plural(n)
                    ),
                )
                .with_label(format!("called without {list}"))
                .with_help("add it to `arguments` (or produce it with a `transform_arguments` output)"),
            );
        }
        self.literal_constraints(ins, &by_name);
        let tested = tested_by_conditions(ins);
        for s in supplied {
            let Some(p) = by_name.get(&*s.name) else { continue };
            let expected = accepted_type_as(p, exact_type(callee.exact.as_deref(), p, false));
            let required = p.is_required() && crate::tool::validate::default_of(p).is_none();
            // Optional, and the tool's schema does not allow null: null fails the step before
            // the call (`E0801`), as for a required one (`StepPlan::non_null_optional`).
            let non_null = !required
                && callee
                    .exact
                    .as_deref()
                    .and_then(|e| e.arguments.get(&*s.name))
                    .is_some_and(|t| t.fits(&Type::Null) == Fit::No);
            if self.closed_results && non_null && s.ty == Type::Null && s.what != "element" {
                self.diags.push(
                    Diagnostic::new(
                        Code::CalleeArgumentType,
                        s.value_span,
                        format!("argument `{}` of `{path}` may be left out, but not null: its schema does not allow null, and the step would fail before the call", s.name),
                    )
                    .with_label("null")
                    .with_secondary(s.key_span, format!("{} `{}`", s.what, s.name))
                    .with_help(format!("to call `{path}` without `{}`, leave the key out; else give it a value", s.name)),
                );
                continue;
            }
            // W1330 in a plan (whose callees' results are closed, so an optional field is
            // known to be optional), not in a `.tool` file.
            if self.closed_results && (required || non_null) && may_be_null(&s.ty) && s.ty.fits(&expected) != Fit::No {
                let written = self.written(s.value_span);
                if !is_tested(&written, &tested) {
                    let (message, help) = match (s.what, required) {
                        ("element", _) => (
                            format!(
                                "the elements may be null ({:#}), and argument `{}` of `{path}` cannot be: a null element's child fails before its call",
                                s.ty, s.name
                            ),
                            elements_help(&written),
                        ),
                        (_, true) => (
                            format!(
                                "argument `{}` of `{path}` is required, and this may be null ({:#}): the call then fails",
                                s.name, s.ty
                            ),
                            maybe_null_help(&written, Some(&s.name)),
                        ),
                        (_, false) => (
                            format!(
                                "argument `{}` of `{path}` may be left out but not null (its schema does not allow null), and this may be null ({:#}): the step then fails before the call",
                                s.name, s.ty
                            ),
                            maybe_null_help(&written, Some(&s.name)),
                        ),
                    };
                    let d = Diagnostic::new(Code::PlanMaybeNull, s.value_span, message)
                        .with_label(format!("this is {}", s.ty))
                        .with_secondary(s.key_span, format!("{} `{}`", s.what, s.name))
                        .with_help(help);
                    self.diags.push(d);
                }
            }
            if s.ty.fits(&expected) == Fit::No {
                let declared = p.type_or_any();
                self.diags.push(
                    Diagnostic::new(
                        Code::CalleeArgumentType,
                        s.value_span,
                        format!(
                            "argument `{}` of `{path}` must be {}, and this is {:#}",
                            s.name,
                            a_type(&declared),
                            s.ty
                        ),
                    )
                    .with_label(format!("this is {}", s.ty))
                    .with_secondary(s.key_span, format!("{} `{}`", s.what, s.name))
                    .with_help(format!(
                        "`{path}` declares `{}` with \"type_name\": \"{declared}\"{}",
                        s.name,
                        if p.is_required() && crate::tool::validate::default_of(p).is_none() {
                            ""
                        } else {
                            " (or null)"
                        }
                    )),
                );
            }
        }
    }

    /// Literal arguments against the callee's declared constraints (`enum`, `minimum`,
    /// `pattern`, …): a literal that breaks one can never be called (E0630). Arguments with
    /// a REF inside are left to the run, and so are those of the wrong type (E0613).
    pub(super) fn literal_constraints(&mut self, ins: &Instruction, by_name: &HashMap<&str, &Param>) {
        let Some(args) = &ins.arguments else { return };
        for (k, v) in &args.entries {
            let Some(p) = by_name.get(k.node.as_str()).filter(|p| !p.constraints.is_empty()) else { continue };
            let Some(value) = crate::tool::constraints::literal(v) else { continue };
            if value.is_null() || !crate::tool::validate::fits(&value, &p.type_or_any()) {
                continue;
            }
            if let Some(why) = p.constraints.violation(&value) {
                let path = ins.tool_path().unwrap_or_default();
                self.diags.push(constraint_diagnostic(
                    v.span,
                    format!("argument `{}` of `{path}` {why}", k.node),
                    p,
                    why.key,
                    format!("`{path}` declares the allowed values of `{}`", k.node),
                    false,
                ));
            }
        }
    }
}

impl Checker<'_> {
    /// The text a value was written as: a JSON string's value (`REF:c.email`), or the JSON.
    pub(super) fn written(&self, span: Span) -> String {
        let raw = self.source.get(span.range()).unwrap_or_default();
        serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_string())
    }
}

/// Whether a value of type `t` may be null and may be something else (`string | null`, an
/// optional field): `null` alone, `any` and types without `null` are not.
pub(super) fn may_be_null(t: &Type) -> bool {
    t.alternatives().len() > 1 && t.alternatives().iter().any(|a| matches!(a, Type::Null))
}

/// The values a step's conditions look at (their params, `.length` taken off): an argument
/// that is one of them, or inside one (`REF:check.docs.first` when a condition tests
/// `REF:check.docs.length`), is taken as the conditions' concern — the checker does not
/// follow what they prove (`exists`, `length > 0`), so it does not warn of it (`W1330`).
fn tested_by_conditions(ins: &Instruction) -> Vec<String> {
    use crate::tool::{Condition, Operator};
    fn walk(c: &Condition, out: &mut Vec<String>) {
        match c {
            Condition::Leaf { param, operator, value, .. } => {
                let null_test = matches!(operator.node, Operator::NotExists)
                    || (operator.node == Operator::Equals
                        && value.as_ref().is_some_and(|v| v.kind == crate::tool::JsonKind::Null));
                if let Some(p) = param.as_str().filter(|_| !null_test) {
                    let text = p.value.to_string();
                    out.push(text.strip_suffix(".length").map_or(text.clone(), str::to_string));
                }
            }
            Condition::Group { conditions, .. } => conditions.iter().for_each(|c| walk(c, out)),
        }
    }
    let mut out = Vec::new();
    ins.conditions.iter().for_each(|c| walk(c, &mut out));
    out
}

/// Whether the value written `written` is one a step's conditions look at
/// ([`tested_by_conditions`]).
fn is_tested(written: &str, tested: &[String]) -> bool {
    tested.iter().any(|t| written == t || written.strip_prefix(t.as_str()).is_some_and(|r| r.starts_with('.')))
}

/// The help of `W1330` for the value written `written`, going to the argument `argument`
/// (else to a response): a `default` for when it is null, or a condition that it exists.
pub(super) fn maybe_null_help(written: &str, argument: Option<&str>) -> String {
    let is_ref = written.starts_with("REF:");
    let value = if is_ref { written.to_string() } else { "…".to_string() };
    match (argument, is_ref) {
        (Some(name), true) => format!(
            "give it a value for when it is null, with `default` in the step's `transform_arguments` (in place of the argument): \"transform_arguments\": {{\"transforms\": {{\"{name}\": \"default({value}, …)\"}}}}; or run the step only when it is there: \"conditions\": [{{\"param\": \"{value}\", \"operator\": \"exists\"}}]"
        ),
        (Some(_), false) => "give it a value for when it is null: `default(…, …)`, or run the step only when it is there (a condition `exists`)".to_string(),
        (None, true) => format!(
            "map a value that is there: compute it in a transform step with `default({value}, …)` and map `REF:<step>.<name>`, or declare the response with \"required\": false"
        ),
        (None, false) => "map a value that is there (`default(…, …)` in a transform step), or declare the response with \"required\": false".to_string(),
    }
}

/// The help of `W1330` for a fan-out over `written` whose elements may be null.
fn elements_help(written: &str) -> String {
    let over = if written.starts_with("REF:") { written } else { "…" };
    format!(
        "leave the nulls out first, in a transform step: {{\"execution_id\": \"present\", \"transform_responses\": {{\"transforms\": {{\"items\": \"filter(array={over}, condition_string='item != null')\"}}}}}}, and iterate over \"REF:present.items\""
    )
}

/// E0630: a literal that breaks a declared constraint. `declared_here` when the
/// declaration is in the same file (a response), so that a secondary label can show it.
pub(super) fn constraint_diagnostic(
    span: Span,
    message: String,
    p: &Param,
    key: &str,
    help: String,
    declared_here: bool,
) -> Diagnostic {
    let c = &p.constraints;
    let at = match key {
        "enum" => c.enum_values.as_ref().map(|x| x.span),
        "minimum" => c.minimum.as_ref().map(|x| x.span),
        "maximum" => c.maximum.as_ref().map(|x| x.span),
        "min_length" => c.min_length.as_ref().map(|x| x.span),
        "max_length" => c.max_length.as_ref().map(|x| x.span),
        "pattern" => c.pattern.as_ref().map(|x| x.span),
        "items" => c.items.as_ref().map(|x| x.span),
        _ => None,
    };
    let d = Diagnostic::new(Code::LiteralBreaksConstraint, span, message)
        .with_label(format!("refused by `{key}`"))
        .with_help(help);
    match at.filter(|_| declared_here) {
        Some(s) => d.with_secondary(s, "declared here"),
        None => d,
    }
}

/// An argument the step passes to its callee, from wherever it comes.
pub(super) struct Supplied {
    pub(super) name: Arc<str>,
    pub(super) key_span: Span,
    pub(super) ty: Type,
    pub(super) value_span: Span,
    /// `argument`, `transform output` or `element` (of a parallel step), for labels.
    pub(super) what: &'static str,
}
