//! Checks of seed 002's step keys and of how steps fail: `expected_key` and `output_path`
//! (SPEC §5), `max_retries` against the circuit breaker (SPEC §6.5), and handlers that wait
//! for a step that fails the run before they can run (fail-fast, SPEC §6.5).

use std::collections::HashMap;
use std::sync::Arc;

use super::check::Checker;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use crate::tool::{
    parse_ref_string, Condition, Instruction, JsonKind, JsonNode, Logic, Operator, OutputPath, PathSegment,
};
use crate::types::Type;

/// Adds each step's `expected_key` to `ids` (the names REFs resolve), reporting a key that
/// is already an execution id or another step's key (E0617).
pub(crate) fn expected_keys(
    instructions: &[Instruction],
    ids: &mut HashMap<Arc<str>, usize>,
    diags: &mut Vec<Diagnostic>,
) {
    // Where each name was first given, for the secondary label.
    let mut keys: HashMap<&str, Span> = HashMap::new();
    for (i, ins) in instructions.iter().enumerate() {
        let Some(key) = &ins.expected_key else { continue };
        let name = key.node.as_str();
        if let Some(&j) = ids.get(name) {
            let (first, what) = match keys.get(name) {
                Some(span) => (*span, "the `expected_key` of another step"),
                None => (instructions[j].execution_id.span, "an execution id"),
            };
            let own = j == i && !keys.contains_key(name);
            let help = if own {
                "a step's result is already known by its execution id; remove `expected_key` or choose another name"
                    .to_string()
            } else {
                format!(
                    "REFs could not tell the steps apart: choose another key, like `{name}_{}`",
                    ins.execution_id.node
                )
            };
            diags.push(
                Diagnostic::new(
                    Code::DuplicateExpectedKey,
                    key.span,
                    format!("`expected_key` `{name}` is already {what}"),
                )
                .with_label("used again here")
                .with_secondary(first, "first used here")
                .with_help(help),
            );
            continue;
        }
        ids.insert(Arc::from(name), i);
        keys.insert(name, key.span);
    }
}

impl Checker<'_> {
    /// The type of the value at `output_path` of a step's result `ty`, reporting a segment
    /// that can never apply (E0618).
    pub(crate) fn output_path_type(&mut self, ins: &Instruction, path: &OutputPath, ty: Type) -> Type {
        let mut current = ty;
        for (n, segment) in path.segments.iter().enumerate() {
            match segment_type(&current, &segment.node) {
                Some(next) => current = next,
                None => {
                    let walked: Vec<String> = path.segments[..n].iter().map(|s| s.node.to_string()).collect();
                    let (noun, hint) = match segment.node {
                        PathSegment::Key(_) => ("key", "a key reads an object"),
                        PathSegment::Index(_) => ("index", "an index reads a list"),
                    };
                    self.diags.push(
                        Diagnostic::new(
                            Code::OutputPathType,
                            segment.span,
                            format!(
                                "`output_path` of step `{}` cannot apply: the value at [{}] is {current:#}, which has no {noun} {}",
                                ins.execution_id.node,
                                walked.join(", "),
                                segment.node
                            ),
                        )
                        .with_label(format!("no {noun} of {current}"))
                        .with_help(format!(
                            "{hint}; the path starts at the step's result (the callee's response, with its `transform_responses` outputs)"
                        )),
                    );
                    return Type::Any;
                }
            }
        }
        current
    }

    /// A step whose `max_retries` reaches the breaker's failure threshold: the breaker opens
    /// after that many failed attempts, so the attempts past it are refused (W0607).
    pub(crate) fn retries_past_breaker(&mut self, ins: &Instruction) {
        let Some(max) = ins.retry.as_ref().and_then(|r| r.max_retries.as_ref()) else { return };
        let threshold = crate::ranges::DEFAULT_FAILURE_THRESHOLD;
        if max.node < threshold {
            return;
        }
        let attempts = u64::from(max.node) + 1;
        let lost = attempts - u64::from(threshold);
        self.diags.push(
            Diagnostic::new(
                Code::RetriesPastBreaker,
                max.span,
                format!(
                    "`max_retries` {} allows {attempts} attempts, but the circuit breaker opens after {threshold} failures: the last {lost} can never run",
                    max.node
                ),
            )
            .with_label(format!("reaches the breaker's threshold of {threshold}"))
            .with_help(format!(
                "lower `max_retries` to {}, or raise the threshold with `tdsl run --breaker-threshold {}`",
                threshold - 1,
                attempts
            )),
        );
    }

    /// Steps whose conditions can only hold after another step failed, while that step has
    /// no `continue_on_error`: a failure ends a fail-fast run before they can run (W0608).
    pub(crate) fn failure_handlers(&mut self) {
        let mut found = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            let Some((j, span, field)) = self.failure_only(&step.ins.conditions) else { continue };
            let failing = &self.steps[j].ins;
            if j == i || failing.continue_on_error.as_ref().is_some_and(|c| c.node) {
                continue;
            }
            found.push((i, j, span, field));
        }
        for (i, j, span, field) in found {
            let handler = &self.steps[i].ins.execution_id.node;
            let failing = &self.steps[j].ins.execution_id;
            self.diags.push(
                Diagnostic::new(
                    Code::HandlerNeverRuns,
                    span,
                    format!(
                        "step `{handler}` runs only after `{}` failed, but `{}` has no `continue_on_error`: its failure ends the run first",
                        failing.node, failing.node
                    ),
                )
                .with_label(format!("holds only when `{}` failed: it reads `{field}`", failing.node))
                .with_secondary(failing.span, "a failure here ends the run: no `continue_on_error`")
                .with_help(format!(
                    "add `\"continue_on_error\": true` to `{}`: its failure then becomes its result {{\"status\": \"failed\", \"error_message\": …}} and `{handler}` can run (if its tool reports `{field}` as data, ignore this)",
                    failing.node
                )),
            );
        }
    }

    /// The step a condition list waits on to fail, with the REF that says so: the list holds
    /// only when all its conditions do, so one failure-only condition is enough.
    fn failure_only(&self, conditions: &[Condition]) -> Option<(usize, Span, &'static str)> {
        conditions.iter().find_map(|c| self.failure_only_one(c))
    }

    fn failure_only_one(&self, c: &Condition) -> Option<(usize, Span, &'static str)> {
        match c {
            Condition::Leaf { param, operator, value, .. } => {
                let test = |r: &JsonNode, other: Option<&JsonNode>| self.failure_leaf(r, operator.node, other);
                test(param, value.as_ref()).or_else(|| value.as_ref().and_then(|v| test(v, Some(param))))
            }
            Condition::Group { logic, conditions, .. } => match logic.node {
                Logic::And => self.failure_only(conditions),
                Logic::Or => {
                    let all: Option<Vec<_>> = conditions.iter().map(|c| self.failure_only_one(c)).collect();
                    all.and_then(|v| v.into_iter().next())
                }
                Logic::Not => None,
            },
        }
    }

    /// `REF:<step>.status` equals `"failed"`, or `REF:<step>.error_message` exists (is not
    /// null): what holds only for the result `continue_on_error` gives a failed step.
    fn failure_leaf(
        &self,
        r: &JsonNode,
        op: Operator,
        other: Option<&JsonNode>,
    ) -> Option<(usize, Span, &'static str)> {
        let JsonKind::Str(s) = &r.kind else { return None };
        let path = parse_ref_string(s)?.ok()?;
        let j = *self.ids.get(&*path.context.node)?;
        let first = path.segments.first()?;
        let literal = other.map(|o| &o.kind);
        match (&*first.node, op) {
            ("status", Operator::Equals) if path.segments.len() == 1 => {
                let failed = matches!(literal, Some(JsonKind::Str(v)) if v.value.eq_ignore_ascii_case("failed"));
                failed.then_some((j, r.span, "status"))
            }
            ("error_message", Operator::Exists) if path.segments.len() == 1 => Some((j, r.span, "error_message")),
            ("error_message", Operator::NotEquals) if path.segments.len() == 1 => {
                matches!(literal, Some(JsonKind::Null)).then_some((j, r.span, "error_message"))
            }
            _ => None,
        }
    }
}

/// The type at one `output_path` segment of a value of type `ty`; `None` when no value of
/// that type has it.
fn segment_type(ty: &Type, segment: &PathSegment) -> Option<Type> {
    match (ty, segment) {
        (Type::Any | Type::File, _) => Some(Type::Any),
        (Type::Null, _) => Some(Type::Null),
        (Type::Never, _) => Some(Type::Never),
        (Type::Union(alts), _) => {
            let parts: Vec<Type> = alts.iter().filter_map(|t| segment_type(t, segment)).collect();
            (!parts.is_empty()).then(|| Type::union_all(parts))
        }
        (Type::Object(o), PathSegment::Key(k)) => Some(match o.fields.get(k.as_str()) {
            Some(t) => t.clone(),
            None if k == "length" => Type::Int,
            None if o.open => Type::Any,
            None => Type::Null,
        }),
        (Type::List(e), PathSegment::Index(_)) => Some((**e).clone().union(Type::Null)),
        (Type::List(e), PathSegment::Key(k)) => match k.as_str() {
            "length" => Some(Type::Int),
            "first" | "last" => Some((**e).clone().union(Type::Null)),
            _ => None,
        },
        (Type::Str, PathSegment::Key(k)) if k == "length" => Some(Type::Int),
        _ => None,
    }
}
