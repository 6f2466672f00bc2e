//! Pass 4, the tool as a whole: `response_reference_map` against the declared responses, and step
//! results nobody reads.

use std::collections::HashSet;
use std::sync::Arc;

use indexmap::IndexMap;

use super::calls::constraint_diagnostic;
use super::{a_type, Checker, Subject};
use crate::analysis::declared_types::param_type;
use crate::analysis::refs::quoted;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::tool::{Instruction, JsonNode};
use crate::types::{Fit, Type};

impl<'a> Checker<'a> {
    /// `response_reference_map` against the declared responses.
    pub(super) fn responses(
        &mut self,
        subject: &Subject<'_>,
        map: Option<&[(crate::span::Spanned<String>, JsonNode)]>,
        result_fields: &IndexMap<Arc<str>, Type>,
        outputs: &HashSet<Arc<str>>,
    ) {
        let declared = &self.tool.responses;
        if let Some(map) = map.filter(|_| subject.declares_responses) {
            let names: Vec<&str> = declared.iter().map(|p| p.name.node.as_str()).collect();
            for (k, v) in map {
                match declared.iter().find(|p| p.name.node == k.node) {
                    None => {
                        let mut d = Diagnostic::new(
                            Code::UnknownResponse,
                            k.span,
                            format!("`{}` is not a declared response of this tool", k.node),
                        )
                        .with_label("not in `responses`");
                        d = match did_you_mean(&k.node, names.iter().copied()) {
                            Some(s) => d.with_help(format!("did you mean `{s}`?")),
                            None if names.is_empty() => d.with_help("this tool declares no responses"),
                            None => d.with_help(format!("the declared responses are {}", quoted(&names))),
                        };
                        self.diags.push(d);
                    }
                    Some(p) => {
                        let literal = crate::tool::constraints::literal(v)
                            .filter(|x| !x.is_null() && crate::tool::validate::fits(x, &p.type_or_any()));
                        if let Some(why) = literal.and_then(|x| p.constraints.violation(&x)) {
                            self.diags.push(constraint_diagnostic(
                                v.span,
                                format!("response `{}` {why}", k.node),
                                p,
                                why.key,
                                "map the response to a value its declaration allows".to_string(),
                                true,
                            ));
                        }
                        let ty = result_fields.get(k.node.as_str()).cloned().unwrap_or(Type::Any);
                        let expected = param_type(p);
                        // In a plan (whose callees' results are closed, so an optional
                        // field is known to be optional), not in a `.tool` file.
                        if self.closed_results
                            && p.is_required()
                            && !outputs.contains(k.node.as_str())
                            && super::calls::may_be_null(&ty)
                            && ty.fits(&expected) != Fit::No
                        {
                            let written = self.written(v.span);
                            self.diags.push(
                                Diagnostic::new(
                                    Code::PlanMaybeNull,
                                    v.span,
                                    format!(
                                        "response `{}` is required, and this may be null ({ty:#}): the run then fails",
                                        k.node
                                    ),
                                )
                                .with_label(format!("this is {ty}"))
                                .with_secondary(p.name.span, "declared required here")
                                .with_help(super::calls::maybe_null_help(&written, None)),
                            );
                        }
                        if ty.fits(&expected) == Fit::No {
                            let declared = p.type_or_any();
                            self.diags.push(
                                Diagnostic::new(
                                    Code::ResponseType,
                                    v.span,
                                    format!("response `{}` must be {}, and this is {ty:#}", k.node, a_type(&declared)),
                                )
                                .with_label(format!("this is {ty}"))
                                .with_secondary(p.type_name.as_ref().map_or(p.name.span, |t| t.span), "declared here")
                                .with_help(
                                    "map the response to a value of its declared type, or change its `type_name`",
                                ),
                            );
                        }
                    }
                }
            }
        }
        for p in declared.iter().filter(|p| p.is_required()) {
            let name = p.name.node.as_str();
            let mapped = result_fields.contains_key(name) || outputs.contains(name);
            if !mapped {
                let help = if map.is_some() {
                    format!("add `\"{name}\": \"REF:<step>.<field>\"` to `response_reference_map`")
                } else {
                    format!(
                        "without a `response_reference_map` the result holds each step's result by id; add `\"response_reference_map\": {{\"{name}\": \"REF:<step>.<field>\"}}`"
                    )
                };
                self.diags.push(
                    Diagnostic::new(
                        Code::UnmappedResponse,
                        p.name.span,
                        format!("required response `{name}` is never mapped"),
                    )
                    .with_label("required, but nothing produces it")
                    .with_help(help),
                );
            }
        }
    }

    pub(super) fn unused_results(&mut self) {
        let unused: Vec<&Instruction> = self.steps.iter().filter(|s| !s.used).map(|s| s.ins).collect();
        for ins in unused {
            {
                let id = &ins.execution_id.node;
                self.diags.push(
                    Diagnostic::new(Code::UnusedStepResult, ins.execution_id.span, format!("the result of step `{id}` is never used"))
                        .with_label("no REF reads it and no response maps it")
                        .with_help(format!(
                            "map it in `response_reference_map` or read it with `REF:{id}.…`; if the step runs only for its effects, this is expected"
                        )),
                );
            }
        }
    }
}
