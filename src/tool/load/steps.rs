//! A composite's steps: each instruction's keys, its transforms, conditions, fan-out,
//! retry and dependencies, and the REF strings in them; the spelling of a tool path.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::{Span, Spanned};

use super::super::json::{JsonKind, JsonNode, JsonStr};
use super::super::keys::Level;
use super::super::model::*;
use super::super::refs;
use super::{
    a, is_identifier, list, open_brace, operator_names, Loader, Obj, Owner, MAX_EXECUTION_ID_BYTES, RESERVED_IDS,
};
use crate::ranges;

impl Loader<'_> {
    pub(super) fn instructions(&mut self, tool: &Obj<'_>, node: &JsonNode) -> Vec<Instruction> {
        let Some(items) = self.list(tool, "instructions", node) else {
            return Vec::new();
        };
        if items.is_empty() {
            self.push(
                Diagnostic::new(Code::EmptyInstructions, node.span, "the composite tool has no instructions")
                    .with_label("empty")
                    .with_help("add steps, or make the tool primitive with `system_event_endpoint`"),
            );
        }
        let mut out: Vec<Instruction> = Vec::with_capacity(items.len());
        // Where each id was first used, so that finding duplicates stays linear in steps.
        let mut first_use: HashMap<String, Span> = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(ins) = self.instruction(i, item) else {
                // Its REFs are not reported again as naming no step.
                let id = item.as_object().and_then(|es| es.iter().find(|(k, _)| k.node == "execution_id"));
                let id = id.and_then(|(_, v)| v.as_str()).map(|s| s.value.to_string());
                self.left_out.extend(id);
                continue;
            };
            let id = &ins.execution_id;
            let first = match first_use.entry(id.node.clone()) {
                Entry::Occupied(e) => Some(*e.get()),
                Entry::Vacant(e) => {
                    e.insert(id.span);
                    None
                }
            };
            if let Some(first_span) = first {
                self.push(
                    Diagnostic::new(
                        Code::DuplicateExecutionId,
                        id.span,
                        format!("execution id `{}` is used twice", id.node),
                    )
                    .with_label("used again here")
                    .with_secondary(first_span, "first used here")
                    .with_help("each instruction needs its own `execution_id`, so REFs can tell the steps apart"),
                );
            }
            out.push(ins);
        }
        out
    }

    pub(super) fn instruction(&mut self, i: usize, node: &JsonNode) -> Option<Instruction> {
        let id_text = node
            .as_object()
            .and_then(|es| es.iter().find(|(k, _)| k.node == "execution_id"))
            .and_then(|(_, v)| v.as_str())
            .map(|s| s.value.to_string());
        let what = match &id_text {
            Some(id) => format!("instruction `{id}`"),
            None => format!("instruction #{}", i + 1),
        };
        let shape = "{\"execution_id\": \"…\", \"tool_definition_path\": \"/tools/….tool\", …}";
        let obj = self.object(node, what, Level::Instruction, Owner::Element(shape))?;
        let execution_id = match obj.get("execution_id") {
            Some(n) => self.string(&obj, "execution_id", n).inspect(|id| self.execution_id(id)),
            None => {
                self.missing(&obj, "execution_id", "add `\"execution_id\": \"…\"`: a unique name for this step");
                None
            }
        };
        // Without a callee the step is a transform step (SPEC §6.4 ext), when it has
        // `transform_responses` to compute its result; with neither it is incomplete.
        // `None`: a transform step; `Some(None)`: no usable path (reported).
        let tool_definition_path = match obj.get("tool_definition_path") {
            Some(n) if matches!(n.kind, JsonKind::Null) => {
                self.wrong_type(&obj, "tool_definition_path", n, "a string");
                if let Some(d) = self.diags.last_mut() {
                    d.help = Some(
                        "for a step that calls nothing (a transform step), leave `tool_definition_path` out and compute the result in `transform_responses`"
                            .to_string(),
                    );
                }
                Some(None)
            }
            Some(n) => Some(self.string(&obj, "tool_definition_path", n).inspect(|p| {
                if let Some(clean) = tool_path_respelled(&p.node) {
                    self.push(tool_path_spelling(&p.node, p.span, &clean));
                }
            })),
            None if obj.key("transform_responses").is_some() => {
                self.transform_step_keys(&obj);
                None
            }
            // A transform block under another format's name (`transform`, `compute`, …) on a
            // step that calls nothing: one error, on that key, naming the rename.
            None if transform_alias(&obj).is_some() => {
                self.transform_step_keys(&obj);
                None
            }
            None => {
                self.missing(
                    &obj,
                    "tool_definition_path",
                    "add `\"tool_definition_path\": \"/tools/….tool\"`: the tool this step calls \
                     (or, for a step that calls nothing and joins other steps' results, `transform_responses`)",
                );
                Some(None)
            }
        };
        let description = obj.get("description").and_then(|n| self.string(&obj, "description", n));
        let arguments = obj.get("arguments").and_then(|n| self.json_object(&obj, "arguments", n));
        let transform_arguments =
            obj.get("transform_arguments").and_then(|n| self.transform(&obj, "transform_arguments", n));
        let transform_responses = match (obj.get("transform_responses"), &tool_definition_path) {
            (Some(n), _) => self.transform(&obj, "transform_responses", n),
            (None, None) => transform_alias(&obj).and_then(|(k, n)| self.aliased_transform(&obj, k, n)),
            (None, Some(_)) => None,
        };
        let conditions = obj.get("conditions").map_or_else(Vec::new, |n| self.conditions(&obj, "conditions", n));
        let parallel_execution = obj.get("parallel_execution").and_then(|n| self.parallel(&obj, n));
        let dependencies = obj.get("dependencies").map_or_else(Vec::new, |n| self.dependencies(&obj, n));
        let done_check = obj.get("done_check").and_then(|n| match &n.kind {
            JsonKind::List(_) => Some(DoneCheck::Conditions(self.conditions(&obj, "done_check", n))),
            JsonKind::Str(s) => Some(DoneCheck::Expression(s.clone())),
            _ => {
                self.wrong_type(&obj, "done_check", n, "a list of conditions or an expression string");
                None
            }
        });
        let done_value = obj.get("done_value").cloned();
        let retry = obj.get("retry").and_then(|n| self.retry(&obj, n));
        let timeout_seconds = obj.get("timeout_seconds").and_then(|n| self.ranged(&obj, &ranges::TIMEOUT_SECONDS, n));
        let continue_on_error = obj.get("continue_on_error").and_then(|n| self.boolean(&obj, "continue_on_error", n));
        let output_path = obj.get("output_path").and_then(|n| self.output_path(&obj, n));
        let expected_key = obj.get("expected_key").and_then(|n| self.string(&obj, "expected_key", n));
        if let Some(key) = &expected_key {
            self.result_name(key, "expected_key");
        }
        // A step missing either is left out of the model, but its REFs are still checked.
        let complete = execution_id.is_some() && !matches!(tool_definition_path, Some(None));
        let placeholder = || Spanned::new(String::new(), open_brace(node.span));
        let ins = Instruction {
            execution_id: execution_id.unwrap_or_else(placeholder),
            tool_definition_path: tool_definition_path.map(|p| p.unwrap_or_else(placeholder)),
            description,
            arguments,
            transform_arguments,
            transform_responses,
            conditions,
            parallel_execution,
            dependencies,
            done_check,
            done_value,
            retry,
            timeout_seconds,
            continue_on_error,
            output_path,
            expected_key,
            span: node.span,
        };
        for (s, place) in refs::instruction_strings(&ins) {
            self.check_ref_string(s, place);
        }
        complete.then_some(ins)
    }

    /// The transform block a step that calls nothing wrote under `key`, another format's name
    /// for `transform_responses` ([`TRANSFORM_WORDS`]): its unknown-key error is given the
    /// rename (and, when the block is a bare object of expressions, the `transforms` level it
    /// lacks), and the block is read as if it were written so — the plan is refused, but what
    /// its expressions and REFs say is checked, and the steps that read it are not told that
    /// it does not exist.
    fn aliased_transform(&mut self, obj: &Obj<'_>, key: &Spanned<String>, node: &JsonNode) -> Option<Transform> {
        let block = node.as_object()?;
        let is_block = block.iter().any(|(k, _)| matches!(k.node.as_str(), "transforms" | "variables"));
        let all_text = block.iter().all(|(_, v)| v.as_str().is_some());
        let (help, replacement) = if is_block {
            (
                format!(
                    "a step that calls nothing (a transform step) computes its result in `transform_responses`: rename `{}` to `transform_responses`",
                    key.node
                ),
                Some((key.span, "\"transform_responses\"".to_string())),
            )
        } else {
            let wrapped = super::super::constraints::literal(node)
                .filter(|_| all_text)
                .and_then(|v| serde_json::to_string(&v).ok())
                .map(|text| (key.span.to(node.span), format!("\"transform_responses\": {{\"transforms\": {text}}}")));
            (
                format!(
                    "a step that calls nothing (a transform step) computes its result in `transform_responses`, its expressions under `transforms`: write `\"transform_responses\": {{\"transforms\": {{…}}}}` in place of `\"{}\": {{…}}`",
                    key.node
                ),
                wrapped,
            )
        };
        if let Some(d) = self.diags.iter_mut().rev().find(|d| d.code == Code::UnknownKey && d.span == key.span) {
            d.help = Some(help);
            if let Some((span, text)) = replacement {
                d.suggestion = Some(Box::new(crate::diagnostic::Suggestion {
                    span,
                    replacement: text,
                    applicability: crate::diagnostic::Applicability::MachineApplicable,
                }));
            }
        }
        if is_block {
            return self.transform(obj, &key.node, node);
        }
        let transforms = block.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.clone()))).collect();
        Some(Transform { variables: Vec::new(), transforms, span: node.span })
    }

    /// The keys a transform step cannot have (`E0522`): each configures a call, and a
    /// transform step makes none.
    pub(super) fn transform_step_keys(&mut self, obj: &Obj<'_>) {
        for (k, _) in obj.entries.iter().filter(|(k, _)| super::super::keys::NOT_ON_TRANSFORM_STEPS.contains(&&*k.node))
        {
            let why = match k.node.as_str() {
                "arguments" | "transform_arguments" => "there is no callee to pass arguments to",
                "parallel_execution" => "there is no callee to call once per element",
                "retry" | "timeout_seconds" => "it makes no call to retry or to time out",
                "continue_on_error" => "it makes no call that could fail",
                _ => "it makes no call to skip",
            };
            let help = match k.node.as_str() {
                "arguments" | "transform_arguments" => {
                    "read what it needs in `transform_responses`' `variables` (`\"x\": \"REF:step.x\"`) or as `REF:` atoms in its transforms"
                }
                "parallel_execution" => "to compute per element, `map` over the list in a transform: `map(array=xs, template=…)`",
                "done_check" | "done_value" => "give it `conditions` to skip it, or remove the key",
                _ => "remove the key, or give the step a `tool_definition_path` to call",
            };
            self.push(
                Diagnostic::new(
                    Code::NotOnTransformStep,
                    k.span,
                    format!(
                        "`{}` is not a key of a transform step ({} has no `tool_definition_path`)",
                        k.node, obj.what
                    ),
                )
                .with_label(why)
                .with_help(help),
            );
        }
    }

    /// Checks an execution id's shape. A bad id is reported but the step is kept, so that
    /// REFs to it do not also show up as REFs to an unknown step.
    pub(super) fn execution_id(&mut self, id: &Spanned<String>) {
        if RESERVED_IDS.contains(&id.node.as_str()) {
            self.push(
                Diagnostic::new(Code::ReservedExecutionId, id.span, format!("`{}` cannot be an execution id", id.node))
                    .with_label("reserved name")
                    .with_help(format!(
                        "{} are reserved for REFs and expressions; choose another id, like `{}_step`",
                        list(RESERVED_IDS),
                        id.node
                    )),
            );
            return;
        }
        if id.node.len() > MAX_EXECUTION_ID_BYTES {
            let shown: String = id.node.chars().take(40).collect();
            self.push(
                Diagnostic::new(
                    Code::InvalidIdentifier,
                    id.span,
                    format!(
                        "execution id `{shown}…` is {} characters long, more than the limit of {MAX_EXECUTION_ID_BYTES}",
                        id.node.chars().count()
                    ),
                )
                .with_label("too long")
                .with_help(format!(
                    "the run history records every call under its step's id: choose a shorter one, of at most {MAX_EXECUTION_ID_BYTES} characters"
                )),
            );
            return;
        }
        if !is_identifier(&id.node) {
            let fixed: String =
                id.node.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
            let fixed = if fixed.starts_with(|c: char| c.is_ascii_digit() || c == '-') || fixed.is_empty() {
                format!("_{fixed}")
            } else {
                fixed
            };
            self.push(
                Diagnostic::new(
                    Code::InvalidIdentifier,
                    id.span,
                    format!("execution id `{}` is not an identifier", id.node),
                )
                .with_label("REFs could not name this step")
                .with_help(format!(
                    "ids start with a letter or `_` and go on with letters, digits, `_` and `-`: `{fixed}`"
                )),
            );
        }
    }

    /// `output_path`: a list of keys (strings) and indices (non-negative integers).
    pub(super) fn output_path(&mut self, parent: &Obj<'_>, node: &JsonNode) -> Option<OutputPath> {
        let items = self.list(parent, "output_path", node)?;
        let mut segments = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            let segment = match &item.kind {
                JsonKind::Str(s) => PathSegment::Key(s.value.to_string()),
                JsonKind::Int(i) => match usize::try_from(*i) {
                    Ok(i) => PathSegment::Index(i),
                    Err(_) => {
                        self.push(
                            Diagnostic::new(
                                Code::NumberOutOfRange,
                                item.span,
                                format!("an index in `output_path` of {} must be zero or more", parent.what),
                            )
                            .with_label("out of range")
                            .with_help("list indices count from 0; `output_path` has no negative indices"),
                        );
                        ok = false;
                        continue;
                    }
                },
                _ => {
                    self.push(
                        Diagnostic::new(
                            Code::WrongJsonType,
                            item.span,
                            format!(
                                "`output_path` of {} holds keys (strings) and indices (integers), found {}",
                                parent.what,
                                a(item.type_name())
                            ),
                        )
                        .with_label("not a key or an index")
                        .with_help("write the path as a list like `[\"data\", \"Revenue\", 0]`"),
                    );
                    ok = false;
                    continue;
                }
            };
            segments.push(Spanned::new(segment, item.span));
        }
        ok.then_some(OutputPath { segments, span: node.span })
    }

    pub(super) fn transform(&mut self, parent: &Obj<'_>, key: &str, node: &JsonNode) -> Option<Transform> {
        let what = format!("`{key}` of {}", parent.what);
        let obj = self.object(node, what, Level::Transform, Owner::Key(parent, key))?;
        let variables = obj
            .get("variables")
            .and_then(|n| self.json_object(&obj, "variables", n))
            .map_or_else(Vec::new, |o| o.entries);
        let mut transforms = Vec::new();
        if let Some(n) = obj.get("transforms") {
            if let Some(o) = self.json_object(&obj, "transforms", n) {
                for (k, v) in o.entries {
                    match v.kind {
                        JsonKind::Str(s) => transforms.push((k, s)),
                        _ => self.push(
                            Diagnostic::new(
                                Code::WrongJsonType,
                                v.span,
                                format!(
                                    "transform `{}` in {} must be an expression string, found {}",
                                    k.node,
                                    obj.what,
                                    a(v.type_name())
                                ),
                            )
                            .with_label("expected a string holding an expression")
                            .with_help("put literal values in `variables`, or write the value as an expression string"),
                        ),
                    }
                }
            }
        }
        Some(Transform { variables, transforms, span: node.span })
    }

    pub(super) fn conditions(&mut self, parent: &Obj<'_>, key: &str, node: &JsonNode) -> Vec<Condition> {
        let Some(items) = self.list(parent, key, node) else {
            // An expression where the list belongs (`"conditions": "REF:s.total > 0"`): the
            // list it means, when it is comparisons of a REF with a literal.
            if let (Some(text), Some(d)) = (node.as_str(), self.diags.last_mut()) {
                match conditions_of_expression(&text.value) {
                    Some(list) => {
                        d.help = Some(format!(
                            "`{key}` is a list of conditions, not an expression: write `{list}` (a list is all of them; `{{\"logic\": \"OR\", \"conditions\": [...]}}` for any)"
                        ));
                        d.suggestion = Some(Box::new(crate::diagnostic::Suggestion {
                            span: node.span,
                            replacement: list,
                            applicability: crate::diagnostic::Applicability::MachineApplicable,
                        }));
                    }
                    None => {
                        d.help = Some(format!(
                            "`{key}` is a list of conditions, not an expression: `[{{\"param\": \"REF:step.field\", \"operator\": \"greater_than\", \"value\": 0}}]` (a list is all of them; `{{\"logic\": \"OR\", \"conditions\": [...]}}` for any)"
                        ));
                    }
                }
            }
            return Vec::new();
        };
        items.iter().filter_map(|c| self.condition(parent, key, c)).collect()
    }

    pub(super) fn condition(&mut self, parent: &Obj<'_>, key: &str, node: &JsonNode) -> Option<Condition> {
        let Some(entries) = node.as_object() else {
            self.wrong_type(parent, key, node, "a list of condition objects");
            return None;
        };
        let has = |k: &str| entries.iter().any(|(e, _)| e.node == k);
        let is_group = has("logic") || has("conditions");
        let is_leaf = Level::ConditionLeaf.names().any(has);
        if is_group && is_leaf {
            for (k, _) in entries.iter().filter(|(k, _)| Level::ConditionLeaf.has(&k.node)) {
                self.push(
                    Diagnostic::new(
                        Code::MalformedCondition,
                        k.span,
                        format!("`{}` cannot appear in a condition group", k.node),
                    )
                    .with_label("a leaf key in a group")
                    .with_help("a condition is either `{\"param\", \"operator\", \"value\"}` or `{\"logic\", \"conditions\"}`; move this into the group's `conditions`"),
                );
            }
        }
        if is_group {
            // Leaf keys were reported above; only keys of neither kind are unknown here.
            let what = "a condition group".to_string();
            let unknown = entries
                .iter()
                .filter(|(k, _)| !Level::ConditionGroup.has(&k.node) && !Level::ConditionLeaf.has(&k.node));
            for (k, _) in unknown {
                self.unknown_key(k, &what, Level::ConditionGroup);
            }
            let obj = Obj { entries, span: node.span, what, level: Level::ConditionGroup };
            return self.group(&obj);
        }
        let what = format!("a condition in `{key}` of {}", parent.what);
        let obj = self.object(node, what, Level::ConditionLeaf, Owner::Known)?;
        // A leaf written with another format's words (`op`, `left`) was reported key by key.
        let aliased = entries.iter().any(|(k, _)| Level::ConditionLeaf.alias(&k.node).is_some());
        if !is_leaf && aliased {
            return None;
        }
        if !is_leaf {
            self.push(
                Diagnostic::new(Code::MalformedCondition, open_brace(node.span), "a condition needs `param` and `operator`, or `logic` and `conditions`")
                    .with_label("this condition")
                    .with_help("write `{\"param\": \"REF:step.key\", \"operator\": \"equals\", \"value\": …}` or `{\"logic\": \"AND\", \"conditions\": [...]}`"),
            );
            return None;
        }
        self.leaf(&obj)
    }

    pub(super) fn leaf(&mut self, obj: &Obj<'_>) -> Option<Condition> {
        let param = obj.get("param").cloned();
        if param.is_none() {
            self.missing(obj, "param", "add `\"param\": \"REF:…\"`: the value the condition tests");
        }
        let operator = match obj.get("operator") {
            None => {
                self.missing(obj, "operator", &format!("add `\"operator\": …`, one of {}", list(&operator_names())));
                None
            }
            Some(n) => self.string(obj, "operator", n).and_then(|op| match Operator::parse(&op.node) {
                Some(o) => Some(Spanned::new(o, op.span)),
                None => {
                    let names = operator_names();
                    let help = match crate::syntax::foreign::operator_help(&op.node) {
                        Some(h) => h,
                        None => match did_you_mean(&op.node, names.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => format!("the operators are {}", list(&names)),
                        },
                    };
                    self.push(
                        Diagnostic::new(
                            Code::UnknownOperator,
                            op.span,
                            format!("unknown condition operator `{}`", op.node),
                        )
                        .with_label("not an operator")
                        .with_help(help),
                    );
                    None
                }
            }),
        };
        let value = obj.get("value").cloned();
        if let Some(op) = &operator {
            match (&value, op.node.takes_value()) {
                (None, true) => self.push(
                    Diagnostic::new(
                        Code::MissingConditionValue,
                        op.span,
                        format!("operator `{}` needs a `value` to compare with", op.node),
                    )
                    .with_label("no `value` in this condition")
                    .with_help("add `\"value\": …`; only `exists` and `not_exists` take none"),
                ),
                (Some(v), false) => {
                    let key_span = obj.key("value").map_or(v.span, |k| k.span.to(v.span));
                    self.push(
                        Diagnostic::new(
                            Code::SuperfluousConditionValue,
                            key_span,
                            format!("operator `{}` takes no `value`", op.node),
                        )
                        .with_label("this value would be ignored")
                        .with_secondary(op.span, "tests only whether `param` is null")
                        .with_help("remove `value`, or use `equals` / `not_equals` to compare with it"),
                    );
                }
                _ => {}
            }
        }
        Some(Condition::Leaf { param: param?, operator: operator?, value, span: obj.span })
    }

    pub(super) fn group(&mut self, obj: &Obj<'_>) -> Option<Condition> {
        let logic = match obj.get("logic") {
            None => {
                self.missing(obj, "logic", "add `\"logic\": \"AND\"` (or `\"OR\"`, `\"NOT\"`)");
                None
            }
            Some(n) => self.string(obj, "logic", n).and_then(|l| match Logic::parse(&l.node) {
                Some(logic) => Some(Spanned::new(logic, l.span)),
                None => {
                    let upper = l.node.to_ascii_uppercase();
                    let help = if Logic::parse(&upper).is_some() {
                        format!("write it in capitals: `{upper}`")
                    } else {
                        match did_you_mean(&upper, Logic::NAMES.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None => format!("`logic` is one of {}", list(Logic::NAMES)),
                        }
                    };
                    self.push(
                        Diagnostic::new(Code::UnknownLogic, l.span, format!("unknown condition logic `{}`", l.node))
                            .with_label("not AND, OR or NOT")
                            .with_help(help),
                    );
                    None
                }
            }),
        };
        let conditions = match obj.get("conditions") {
            None => {
                self.missing(obj, "conditions", "add `\"conditions\": [...]`: the conditions the group combines");
                return None;
            }
            Some(n) => self.conditions(obj, "conditions", n),
        };
        let logic = logic?;
        if logic.node == Logic::Not && conditions.len() != 1 {
            self.push(
                Diagnostic::new(
                    Code::NotConditionCount,
                    logic.span,
                    format!("a `NOT` group needs exactly one condition, found {}", conditions.len()),
                )
                .with_label("NOT of this group")
                .with_help("wrap several conditions in an `AND` or `OR` group inside the `NOT`"),
            );
        }
        Some(Condition::Group { logic, conditions, span: obj.span })
    }

    pub(super) fn parallel(&mut self, parent: &Obj<'_>, node: &JsonNode) -> Option<ParallelExecution> {
        let what = format!("`parallel_execution` of {}", parent.what);
        let obj = self.object(node, what, Level::Parallel, Owner::Key(parent, "parallel_execution"))?;
        let iterate_over = match obj.get("iterate_over") {
            None => {
                self.missing(&obj, "iterate_over", "add `\"iterate_over\": \"REF:step.list\"` or a literal list");
                None
            }
            Some(n) => match &n.kind {
                JsonKind::List(_) => Some(n.clone()),
                JsonKind::Str(s) if s.value.starts_with("REF:") => Some(n.clone()),
                JsonKind::Str(s) => {
                    self.expected_ref(n, s, format!("`iterate_over` in {}", obj.what));
                    None
                }
                _ => {
                    self.wrong_type(&obj, "iterate_over", n, "a REF string or a list");
                    None
                }
            },
        };
        let child_argument_name = match obj.get("child_argument_name") {
            None => {
                self.missing(
                    &obj,
                    "child_argument_name",
                    "add `\"child_argument_name\": \"…\"`: the argument each child gets its element as",
                );
                None
            }
            Some(n) => self.string(&obj, "child_argument_name", n),
        };
        if let Some(name) = &child_argument_name {
            if !is_identifier(&name.node) {
                self.push(
                    Diagnostic::new(
                        Code::InvalidIdentifier,
                        name.span,
                        format!("`child_argument_name` `{}` is not an identifier", name.node),
                    )
                    .with_label("not an argument name")
                    .with_help("names start with a letter or `_` and go on with letters, digits, `_` and `-`"),
                );
            }
        }
        Some(ParallelExecution {
            iterate_over: iterate_over?,
            child_argument_name: child_argument_name?,
            span: node.span,
        })
    }

    pub(super) fn expected_ref(&mut self, node: &JsonNode, s: &JsonStr, what: String) {
        let text = s.value.trim();
        let help = if text.len() >= 4 && text.is_char_boundary(4) && text[..4].eq_ignore_ascii_case("ref:") {
            format!("write the prefix exactly as `REF:` with nothing before it: `REF:{}`", &text[4..])
        } else if text.contains(|c: char| "()+*/%<>=!'\" ,".contains(c)) {
            computed_ref_help(text)
        } else {
            format!("did you mean `REF:{text}`?")
        };
        self.push(
            Diagnostic::new(Code::ExpectedRef, node.span, format!("{what} must be a REF string, found plain text"))
                .with_label("not a REF")
                .with_help(help),
        );
    }

    pub(super) fn dependencies(&mut self, parent: &Obj<'_>, node: &JsonNode) -> Vec<Spanned<String>> {
        let Some(items) = self.list(parent, "dependencies", node) else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|n| match &n.kind {
                JsonKind::Str(s) => Some(Spanned::new(s.value.to_string(), n.span)),
                _ => {
                    self.wrong_type(parent, "dependencies", n, "a list of execution id strings");
                    None
                }
            })
            .collect()
    }

    pub(super) fn retry(&mut self, parent: &Obj<'_>, node: &JsonNode) -> Option<Retry> {
        let what = format!("`retry` of {}", parent.what);
        let obj = self.object(node, what, Level::Retry, Owner::Key(parent, "retry"))?;
        let max_retries = obj.get("max_retries").and_then(|n| {
            // In range, so a whole number from 0 to 5: the cast cannot wrap.
            self.ranged(&obj, &ranges::MAX_RETRIES, n).map(|v| Spanned::new(v.node as u32, v.span))
        });
        let base_delay_seconds =
            obj.get("base_delay_seconds").and_then(|n| self.ranged(&obj, &ranges::BASE_DELAY_SECONDS, n));
        let factor = obj.get("factor").and_then(|n| self.ranged(&obj, &ranges::FACTOR, n));
        let max_delay_seconds =
            obj.get("max_delay_seconds").and_then(|n| self.ranged(&obj, &ranges::MAX_DELAY_SECONDS, n));
        let jitter = obj.get("jitter").and_then(|n| self.ranged(&obj, &ranges::JITTER, n));
        Some(Retry { max_retries, base_delay_seconds, factor, max_delay_seconds, jitter, span: node.span })
    }

    /// Reports a malformed REF, or text in a REF position that looks like a mistyped one.
    pub(super) fn check_ref_string(&mut self, s: &JsonStr, place: refs::RefPlace) {
        match refs::parse_ref_string(s) {
            Some(Ok(_)) => {}
            Some(Err(d)) => self.push(d),
            None => {
                let text = s.value.trim_start();
                let prefix = text.get(..4);
                if prefix.is_some_and(|p| p.eq_ignore_ascii_case("ref:")) {
                    self.push(
                        Diagnostic::new(
                            Code::LooksLikeRef,
                            s.span,
                            format!("this {} looks like a REF but is plain text", place.describe()),
                        )
                        .with_label("not resolved: a REF starts with exactly `REF:`")
                        .with_help(format!("write `REF:{}` to make it a reference", text.get(4..).unwrap_or_default())),
                    );
                }
            }
        }
    }
}

/// The spelling a `tool_definition_path` should have, when the one written has surrounding
/// whitespace (a trailing `\r\n`), control characters, or spaces and invisible characters
/// that look like nothing or like a space (U+00A0, U+200B, U+3000, …): `None` when it is
/// already clean. Such a spelling names the tool under a second identity (`TDSL_TOOL`, the
/// `X-Tdsl-Tool` header, the history's `invocations.tool`) or, where nothing trims it, no
/// tool at all at call time; it is refused at check time (`E0530`).
pub(crate) fn tool_path_respelled(written: &str) -> Option<String> {
    if written.trim() == written && !written.chars().any(odd_in_a_name) {
        return None;
    }
    let clean: String =
        written.chars().filter(|c| !c.is_control() && !crate::diagnostic::is_hidden(*c)).collect::<String>();
    let clean: String = clean.chars().map(|c| if c.is_whitespace() { ' ' } else { c }).collect();
    Some(clean.trim().to_string())
}

/// A character no tool's name has: a control, an invisible one, a space other than ` `.
fn odd_in_a_name(c: char) -> bool {
    c.is_control() || (c.is_whitespace() && c != ' ') || crate::diagnostic::is_hidden(c)
}

/// `E0530` for a `tool_definition_path` spelt `written`, whose right spelling is `canonical`.
pub(crate) fn tool_path_spelling(written: &str, span: Span, canonical: &str) -> Diagnostic {
    // Seen, not taken for the name: `\u000d`, `\u00a0`.
    let shown: String = written
        .chars()
        .map(|c| if odd_in_a_name(c) { format!("\\u{:04x}", u32::from(c)) } else { c.to_string() })
        .collect();
    Diagnostic::new(
        Code::ToolPathSpelling,
        span,
        format!("the tool path `{shown}` has whitespace, control or invisible characters that are not part of any tool's name"),
    )
    .with_label("a second spelling of a tool")
    .with_help(format!("write `{canonical}`: one tool has one name, in the trace, the history and `TDSL_TOOL`"))
}

/// The help of `E0520` for an expression where a REF belongs (`"n": "length(REF:a.issues)"`
/// in `response_reference_map`): a REF reads a value and computes nothing, so the value is
/// computed in a transform step; `length(REF:x)` is also `REF:x.length` (hostile round 10,
/// finding 17: the help was `REF:length(REF:a.issues)`, itself an error).
fn computed_ref_help(text: &str) -> String {
    let step = serde_json::json!({"execution_id": "calc", "transform_responses": {"transforms": {"value": text}}});
    let direct = text
        .strip_prefix("length(")
        .and_then(|r| r.strip_suffix(')'))
        .map(|r| r.trim().trim_start_matches("value=").trim())
        .filter(|r| r.starts_with("REF:") && !r.contains(|c: char| "()+*/%<>=!'\" ,".contains(c)))
        .map(|r| format!(" (here `{r}.length` reads it directly)"))
        .unwrap_or_default();
    format!("a REF reads a value and computes nothing: compute it in a transform step, {step}, and write `REF:calc.value`{direct}")
}

/// Other formats' names for a step's computed result (`transform`, `compute`, …): on a step
/// that calls nothing they can only mean `transform_responses`.
const TRANSFORM_WORDS: &[&str] = &[
    "transform",
    "transforms",
    "transformation",
    "transformations",
    "compute",
    "computed",
    "computations",
    "expressions",
    "outputs",
    "let",
    "assign",
];

/// The key (and its value) of a step that names its transform block with one of
/// [`TRANSFORM_WORDS`], when the value is an object.
fn transform_alias<'a>(obj: &Obj<'a>) -> Option<(&'a Spanned<String>, &'a JsonNode)> {
    obj.entries
        .iter()
        .find(|(k, v)| TRANSFORM_WORDS.contains(&k.node.as_str()) && v.as_object().is_some())
        .map(|(k, v)| (k, v))
}

/// The condition list an expression string means, as JSON text, when it is comparisons of a
/// REF with a literal joined by `and` (`REF:s.total > 0 and REF:s.kind == 'open'`): one
/// condition object each (a list is all of them); `None` for anything else.
fn conditions_of_expression(text: &str) -> Option<String> {
    let mut out = Vec::new();
    for part in text.split(" and ").flat_map(|p| p.split("&&")) {
        let part = part.trim();
        let (at, op) = ["==", "!=", ">=", "<=", ">", "<"]
            .iter()
            .filter_map(|op| part.find(op).map(|i| (i, *op)))
            // The first operator, the longer of two at one place (`>=`, not `>`).
            .min_by_key(|(i, op)| (*i, std::cmp::Reverse(op.len())))?;
        let (param, value) = (part[..at].trim(), part[at + op.len()..].trim());
        let operator = crate::syntax::foreign::operator(op)?;
        let bare = |s: &str| {
            !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        };
        if !param.starts_with("REF:") || !bare(param) {
            return None;
        }
        let value: serde_json::Value = match value {
            "true" => true.into(),
            "false" => false.into(),
            "null" => serde_json::Value::Null,
            v if v.len() >= 2
                && (v.starts_with('\'') && v.ends_with('\'') || v.starts_with('"') && v.ends_with('"')) =>
            {
                let inner = &v[1..v.len() - 1];
                if inner.contains(['\'', '"', '\\']) {
                    return None;
                }
                inner.into()
            }
            v => serde_json::from_str::<serde_json::Number>(v).ok()?.into(),
        };
        out.push(serde_json::json!({"param": param, "operator": operator, "value": value}));
    }
    serde_json::to_string(&out).ok()
}

#[cfg(test)]
mod tests {
    use super::conditions_of_expression as list;

    #[test]
    fn an_expression_of_comparisons_is_the_list_it_means() {
        assert_eq!(
            list("REF:s.total >= 1 && REF:s.kind == 'open' and REF:s.ok != true").as_deref(),
            Some(
                r#"[{"param":"REF:s.total","operator":"greater_than_or_equals","value":1},{"param":"REF:s.kind","operator":"equals","value":"open"},{"param":"REF:s.ok","operator":"not_equals","value":true}]"#
            )
        );
        assert_eq!(
            list("REF:s.n < -2.5").as_deref(),
            Some(r#"[{"param":"REF:s.n","operator":"less_than","value":-2.5}]"#)
        );
        // Not a REF on the left, a call, `or`, an escaped or unclosed string: no list.
        for text in [
            "total > 0",
            "length(REF:s.items) > 0",
            "REF:s.n > 0 or REF:s.m > 0",
            "REF:s.k == 'it\\'s'",
            "REF:s.k == 'x",
        ] {
            assert_eq!(list(text), None, "{text}");
        }
    }
}
