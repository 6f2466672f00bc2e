//! Passes 2 and 3, the steps: the order types are worked out in, then each step's REFs,
//! `arguments`, transforms, conditions, `parallel_execution` and `done_check`, checked and typed.

use std::sync::Arc;

use indexmap::IndexMap;

use super::calls::Supplied;
use super::{Checker, Owner, Parts, Shapes};
use crate::analysis::declared_types::{
    exact_type, failed_step_type, failure_type, object_fields, param_type_as, plain_result_type, response_type,
    step_result,
};
use crate::analysis::plan::*;
use crate::analysis::refs::{Fields, RefEnv, RefInfo};
use crate::analysis::root::LoadedTool;
use crate::analysis::transform::{BlockSpec, ListLiterals, Names};
use crate::diagnostic::{Applicability, Code, Diagnostic};
use crate::tool::{
    Condition, DoneCheck, Instruction, Operator, ParallelExecution, Param, RefPlace, RefSite, Transform, TransformBlock,
};
use crate::types::{Fit, Type};

impl<'a> Checker<'a> {
    /// Step `i` mentions step `j` (in a REF string, or after `REF:` in an expression): the
    /// order in which types are worked out.
    pub(super) fn type_order(&self, sites: &[Vec<RefSite>]) -> Vec<Vec<usize>> {
        let mut deps = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let mut d: Vec<usize> =
                sites[i].iter().filter_map(|s| self.ids.get(&*s.path.context.node).copied()).collect();
            let ins = step.ins;
            let mut texts: Vec<&str> = Vec::new();
            for t in [&ins.transform_arguments, &ins.transform_responses].into_iter().flatten() {
                texts.extend(t.transforms.iter().map(|(_, e)| &*e.value));
                for (_, v) in &t.variables {
                    v.walk(&mut |n| texts.extend(n.as_str().map(|s| &*s.value)));
                }
            }
            if let Some(DoneCheck::Expression(e)) = &ins.done_check {
                texts.push(&e.value);
            }
            for t in texts {
                d.extend(crate::analysis::refs::mentioned_contexts(t).iter().filter_map(|c| self.ids.get(*c).copied()));
            }
            d.sort_unstable();
            d.dedup();
            deps.push(d);
        }
        deps
    }

    /// Checks and types the REF strings of `sites` whose place passes `keep`.
    pub(super) fn site_info(
        &mut self,
        sites: &[RefSite],
        keep: impl Fn(RefPlace) -> bool,
        env: &RefEnv<'_>,
    ) -> RefInfo {
        let mut info = RefInfo::new();
        for site in sites.iter().filter(|s| keep(s.place)) {
            let r = self.json_ref(site, env);
            info.insert(site.span.start, r);
        }
        info
    }

    /// Checks step `i` and works out its result type.
    pub(super) fn step(&mut self, i: usize, sites: &[RefSite]) {
        let ins = self.steps[i].ins;
        let callee = self.steps[i].callee.clone();
        let def = callee.as_ref().and_then(|c| c.def.as_ref());
        let declared_responses = callee.as_ref().filter(|c| c.declares_responses).and(def).map(|d| &d.responses[..]);
        let shapes = self.callee_shapes(callee.as_ref(), declared_responses, ins.tool_path().unwrap_or_default());
        let parallel = ins.parallel_execution.as_ref();
        let continues = ins.continue_on_error.as_ref().is_some_and(|c| c.node);
        let mut element = parallel_element(declared_responses, &shapes);
        if continues {
            // A child that failed leaves `{"status": "failed", …}` in the list (`exec::data::gather_children`).
            element = element.union(failure_type());
            self.failure_status_collides(ins, declared_responses);
        }
        let raw = if parallel.is_some() { Type::List(Arc::new(element.clone())) } else { shapes.response.clone() };
        let raw_fields: Option<&Fields> = if parallel.is_some() { None } else { shapes.fields.as_ref() };
        let owner = Owner::Step(i);
        // A transform step (SPEC §6.4 ext) has no response: `REF:response` is an error there.
        let transform_step = ins.is_transform_step();
        let callee_path = ins.tool_path().unwrap_or_default().to_string();
        let response_env = RefEnv {
            owner,
            response: (!transform_step).then_some(&raw),
            response_fields: raw_fields,
            response_source: &callee_path,
            transformed: None,
        };

        let info = self.step_refs(ins, owner, sites, response_env);
        let mut supplied: IndexMap<Arc<str>, Supplied> = IndexMap::new();
        let (arguments, argument_names) = self.step_arguments(ins, &info, &mut supplied);
        let transform_arguments = ins
            .transform_arguments
            .as_ref()
            .map(|t| self.step_transform_arguments(t, owner, &argument_names, &info, &mut supplied));
        let conditions = ins.conditions.iter().map(|c| self.condition(c, &info)).collect();
        let done_check = ins.done_check.as_ref().and_then(|d| self.step_done_check(d, owner, &argument_names, &info));
        let done_value = ins.done_value.as_ref().map(|v| self.value(v, &info, None));
        let parallel_plan = parallel.map(|p| self.step_parallel(p, &info, &mut supplied));

        if let Some(c) = &callee {
            let supplied: Vec<Supplied> = supplied.into_values().collect();
            self.call(ins, c, &supplied);
        }

        let transform_responses = ins.transform_responses.as_ref().map(|t| {
            let names = match (parallel, declared_responses) {
                _ if transform_step => Names::default(),
                (Some(_), _) => Names::default(),
                (None, Some(rs)) => Names {
                    list: rs
                        .iter()
                        .map(|p| {
                            let exact = callee.as_ref().and_then(|c| c.exact.as_deref());
                            (Arc::from(p.name.node.as_str()), param_type_as(p, exact_type(exact, p, true)))
                        })
                        .collect::<IndexMap<_, _>>()
                        .into(),
                    open: false,
                },
                (None, None) => Names { list: Default::default(), open: true },
            };
            self.transform(t, BlockSpec { names, env: response_env, warn_pass_through: false }, &info)
        });

        if transform_step {
            self.no_response_in_transform_step(ins);
        }

        // The result, as REFs to this step see it (SPEC §6.4): a transform step's is exactly
        // the object of its transforms.
        let mut fields: crate::types::Fields = match parallel {
            _ if transform_step => crate::types::Fields::default(),
            Some(_) => [(Arc::from("response"), Type::List(Arc::new(element.clone())))].into_iter().collect(),
            None => object_fields(&shapes.result).into_iter().collect(),
        };
        for (k, ty) in transform_responses.iter().flat_map(|r| &r.outputs) {
            fields.insert(k.clone(), ty.clone());
        }
        // A fan-out's result is `{"response": [...]}` and its transforms' outputs, exactly.
        let mut result = match &shapes.closed {
            _ if transform_step => Type::object(fields, false),
            closed => step_result(fields, closed.as_ref()),
        };
        if let Some(path) = &ins.output_path {
            result = self.output_path_type(ins, path, result);
        }
        self.retries_past_breaker(ins);
        if continues {
            // A failure leaves `{"status": "failed", "error_message": …}` for REFs
            // (`exec::data::failed_result`), whatever the callee declares.
            result = result.union(failed_step_type());
        }
        if !ins.conditions.is_empty() {
            result = result.union(Type::Null);
        }
        if ins.done_check.is_some() {
            result = result.union(done_value.as_ref().map_or(Type::Null, |(_, t)| t.clone()));
        }
        self.steps[i].result = Some(result);
        self.steps[i].parts = Some(Parts {
            arguments,
            transform_arguments,
            conditions,
            parallel: parallel_plan,
            done_check,
            done_value: done_value.map(|(p, _)| p),
            transform_responses: transform_responses.map(|r| r.plan),
        });
    }

    /// `REF:response` in a transform step (E0109 from the REF or the expression checker,
    /// whose message says "only inside `transform_responses`", where it is): say instead
    /// that a transform step has no response, and what to read.
    pub(super) fn no_response_in_transform_step(&mut self, ins: &Instruction) {
        for d in self.diags.iter_mut().filter(|d| {
            d.code == Code::ResponseOutsideTransform && ins.span.start <= d.span.start && d.span.end <= ins.span.end
        }) {
            d.message = format!(
                "`REF:response` has no value in transform step `{}`: it calls nothing, so it has no response",
                ins.execution_id.node
            );
            d.help = Some(
                "read the results it joins as `REF:<execution_id>.field`, in `variables` or inside its transforms"
                    .to_string(),
            );
        }
    }

    /// Every REF string of a step, checked and typed: those in `transform_responses` see
    /// the raw response (`response_env`), `iterate_over` sees the names the step's own
    /// `transform_arguments` produce (to report them), the others see neither.
    pub(super) fn step_refs(
        &mut self,
        ins: &Instruction,
        owner: Owner,
        sites: &[RefSite],
        response_env: RefEnv<'_>,
    ) -> RefInfo {
        let transformed: Vec<Arc<str>> = ins
            .transform_arguments
            .iter()
            .flat_map(|t| t.transforms.iter().map(|(k, _)| Arc::from(k.node.as_str())))
            .collect();
        let mut info = RefInfo::new();
        for site in sites {
            let env = match site.place {
                RefPlace::Variable(TransformBlock::Responses) => response_env,
                RefPlace::IterateOver => RefEnv { transformed: Some(&transformed), ..RefEnv::plain(owner) },
                _ => RefEnv::plain(owner),
            };
            let r = self.json_ref(site, &env);
            info.insert(site.span.start, r);
        }
        info
    }

    /// A step's `arguments`, as written: their plans, and their names with their types
    /// (the scope of the step's expressions). Each is recorded in `supplied`.
    pub(super) fn step_arguments(
        &mut self,
        ins: &Instruction,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> (Vec<(Arc<str>, ValuePlan)>, Names) {
        let mut names = Names::default();
        let mut arguments = Vec::new();
        for (k, v) in ins.arguments.iter().flat_map(|a| &a.entries) {
            let (plan, ty) = self.value(v, info, None);
            let key: Arc<str> = Arc::from(k.node.as_str());
            names.set(&key, ty.clone());
            supplied.insert(
                key.clone(),
                Supplied { name: key.clone(), key_span: k.span, ty, value_span: v.span, what: "argument" },
            );
            arguments.push((key, plan));
        }
        (arguments, names)
    }

    /// A step's `transform_arguments`: each output replaces what `supplied` held under its
    /// name.
    pub(super) fn step_transform_arguments(
        &mut self,
        t: &Transform,
        owner: Owner,
        names: &Names,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> TransformPlan {
        let spec = BlockSpec { names: names.clone(), env: RefEnv::plain(owner), warn_pass_through: true };
        let r = self.transform(t, spec, info);
        // The last transform written to a key decides its value and where it is reported.
        for (tk, e) in &t.transforms {
            let name: Arc<str> = Arc::from(tk.node.as_str());
            let Some(ty) = r.outputs.get(&name) else { continue };
            let s = Supplied {
                name: name.clone(),
                key_span: tk.span,
                ty: ty.clone(),
                value_span: e.span,
                what: "transform output",
            };
            supplied.shift_remove(&name);
            supplied.insert(name, s);
        }
        r.plan
    }

    /// A step's `done_check`: conditions, or an expression over the step's arguments.
    pub(super) fn step_done_check(
        &mut self,
        d: &DoneCheck,
        owner: Owner,
        names: &Names,
        info: &RefInfo,
    ) -> Option<DoneCheckPlan> {
        match d {
            DoneCheck::Conditions(cs) => {
                Some(DoneCheckPlan::Conditions(cs.iter().map(|c| self.condition(c, info)).collect()))
            }
            DoneCheck::Expression(e) => {
                let compiled = self.compile(e, names, &RefEnv::plain(owner), &ListLiterals::new());
                compiled.program.map(DoneCheckPlan::Expression)
            }
        }
    }

    /// A step's `parallel_execution`: `iterate_over` must be a list; its element is supplied
    /// to each child under `child_argument_name`.
    pub(super) fn step_parallel(
        &mut self,
        p: &ParallelExecution,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> ParallelPlan {
        let (plan, ty) = self.value(&p.iterate_over, info, None);
        let list_or_null = Type::any_list().union(Type::Null);
        if ty.fits(&list_or_null) == Fit::No {
            self.diags.push(
                Diagnostic::new(
                    Code::IterateOverNotList,
                    p.iterate_over.span,
                    format!("`iterate_over` must be a list, and this is {ty:#}"),
                )
                .with_label(format!("this is {ty}"))
                .with_help("iterate over a list: a REF to a list field, or a literal list"),
            );
        }
        let elem = ty.element();
        let elem = if elem == Type::Never { Type::Any } else { elem };
        let name: Arc<str> = Arc::from(p.child_argument_name.node.as_str());
        supplied.shift_remove(&name);
        supplied.insert(
            name.clone(),
            Supplied {
                name: name.clone(),
                key_span: p.child_argument_name.span,
                ty: elem,
                value_span: p.iterate_over.span,
                what: "element",
            },
        );
        ParallelPlan { iterate_over: plan, child_argument_name: name }
    }

    pub(super) fn callee_shapes(
        &mut self,
        callee: Option<&Arc<LoadedTool>>,
        declared: Option<&[Param]>,
        written: &str,
    ) -> Arc<Shapes> {
        let exact = callee.and_then(|c| c.exact.as_deref());
        // Closed when the callee says what it returns: declared responses, and no output
        // schema that allows more (`Analyzer::set_closed_results`).
        let closed = match callee {
            Some(c) if self.closed_results && declared.is_some() && !exact.is_some_and(|e| e.responses_open) => {
                // As the first step that calls it writes it (`fetch_page`, `shop/list_orders`),
                // but not as a spelling padded to any length that names it too (then its
                // tool path): every message naming it would carry the padding.
                let written = written.trim();
                let shown = if written.is_empty() || written.len() > 200 { c.tool_path.as_str() } else { written };
                Some(Arc::<str>::from(shown))
            }
            _ => None,
        };
        let make = || {
            Arc::new(Shapes {
                response: response_type(declared, exact, closed.as_ref()),
                result: plain_result_type(declared, exact, closed.as_ref()),
                fields: declared.map(|rs| rs.iter().map(|p| Arc::from(p.name.node.as_str())).collect()),
                closed: closed.clone(),
            })
        };
        match callee {
            Some(c) => self.shapes.entry(c.file.clone()).or_insert_with(make).clone(),
            None => make(),
        }
    }

    /// A condition as a plan, reporting comparisons that cannot succeed.
    pub(super) fn condition(&mut self, c: &Condition, info: &RefInfo) -> ConditionPlan {
        match c {
            Condition::Leaf { param, operator, value, span } => {
                let (param_plan, param_ty) = self.value(param, info, None);
                let value = value.as_ref().map(|v| (v, self.value(v, info, None)));
                if let Some((node, (ValuePlan::Literal(v), _))) = &value {
                    self.condition_outside_enum(operator.node, &param_ty, v, node.span, param.span);
                }
                if let Some((node, (plan, ty))) = &value {
                    let literal = match plan {
                        ValuePlan::Literal(v) => Some(v),
                        _ => None,
                    };
                    self.condition_never_equal(operator.node, &param_ty, ty, literal, node.span, param.span);
                }
                let literal = value.as_ref().and_then(|(_, (p, _))| match p {
                    ValuePlan::Literal(v) => Some(v),
                    _ => None,
                });
                self.condition_never_null(operator.node, &param_ty, literal, param.span);
                if let Some((node, (_, ty))) = &value {
                    self.condition_contains_in_objects(operator.node, param, &param_ty, ty, literal, node.span);
                }
                if is_numeric(operator.node) {
                    let number = Type::Number.union(Type::Null);
                    let operands = std::iter::once((param, &param_ty)).chain(value.as_ref().map(|(v, (_, t))| (*v, t)));
                    for (node, ty) in operands {
                        if ty.fits(&number) == Fit::No {
                            let d = Diagnostic::new(
                                Code::ConditionType,
                                node.span,
                                format!("`{}` compares numbers, and this is {ty:#}", operator.node),
                            )
                            .with_label(format!("this is {ty}"))
                            .with_secondary(operator.span, "a numeric comparison");
                            // `"value": "0"`: the number in quotes.
                            let quoted = node.as_str().map(|t| t.value.trim()).filter(|t| is_json_number(t));
                            let d = match quoted {
                                Some(t) => d
                                    .with_help(format!("write `{t}` without quotes: a number, not text"))
                                    .with_suggestion(node.span, t.to_string(), Applicability::MachineApplicable),
                                None => d.with_help("compare numbers, or use `equals` / `contains` for other values"),
                            };
                            self.diags.push(d);
                        }
                    }
                }
                ConditionPlan::Leaf {
                    param: param_plan,
                    operator: operator.node,
                    value: value.map(|(_, (p, _))| p),
                    span: *span,
                }
            }
            Condition::Group { logic, conditions, span } => ConditionPlan::Group {
                logic: logic.node,
                conditions: conditions.iter().map(|c| self.condition(c, info)).collect(),
                span: *span,
            },
        }
    }
}

impl Checker<'_> {
    /// `E0207` for a condition that compares a value of a string enum with a literal that is
    /// not one of its values (`equals`, `not_equals`), or with a list of literals none of
    /// which is (`in`): it always gives the same answer.
    fn condition_outside_enum(
        &mut self,
        op: Operator,
        param_ty: &Type,
        value: &crate::Value,
        at: crate::Span,
        param: crate::Span,
    ) {
        let written: Vec<&str> = match (op, value) {
            (Operator::Equals | Operator::NotEquals, crate::Value::Str(s)) => vec![&**s],
            (Operator::In, crate::Value::List(items)) => {
                match items.iter().map(crate::Value::as_str).collect::<Option<Vec<_>>>() {
                    Some(strings) if !strings.is_empty() => strings,
                    _ => return,
                }
            }
            _ => return,
        };
        let mut outside = None;
        for s in &written {
            match crate::types::outside_enum(param_ty, s) {
                Some(values) => outside = Some(values),
                None => return,
            }
        }
        let Some(values) = outside else { return };
        let shown = crate::types::quoted(written[0]);
        let message = match op {
            Operator::Equals => format!("`equals` never holds: the value is never {shown}"),
            Operator::NotEquals => format!("`not_equals` always holds: the value is never {shown}"),
            _ if written.len() == 1 => format!("`in` never holds: the value is never {shown}"),
            _ => format!("`in` never holds: the value is none of these {} strings", written.len()),
        };
        let label = if written.len() == 1 { "not one of its values" } else { "none of them is one of its values" };
        let d = crate::types::enum_mismatch(message, label, written[0], &values, param_ty, at, param);
        self.diags.push(d);
    }
}

impl Checker<'_> {
    /// `E0208` for a condition `equals` / `not_equals` (or `in`) whose value (or every value
    /// of whose list) is of a type the param's values never equal: `"value": "1"` for an
    /// integer param is always false.
    fn condition_never_equal(
        &mut self,
        op: Operator,
        param_ty: &Type,
        value_ty: &Type,
        literal: Option<&crate::Value>,
        at: crate::Span,
        param: crate::Span,
    ) {
        let (compared, verdict) = match op {
            Operator::Equals => (value_ty.clone(), "`equals` never holds"),
            Operator::NotEquals => (value_ty.clone(), "`not_equals` always holds"),
            Operator::In if matches!(value_ty, Type::List(_)) => (value_ty.element(), "`in` never holds"),
            _ => return,
        };
        if !crate::types::never_equal(param_ty, &compared) {
            return;
        }
        let spelling = crate::types::Spelling::Condition;
        self.diags.push(
            Diagnostic::new(
                Code::DisjointComparison,
                at,
                format!("{verdict}: {param_ty:#} is never equal to {compared:#}"),
            )
            .with_label(format!("this is {compared}"))
            .with_secondary(param, format!("this is {param_ty}"))
            .with_help(crate::types::disjoint_help(param_ty, literal, spelling)),
        );
    }

    /// `W0103` for a condition that tests a value that cannot be null for null (`exists`,
    /// `not_exists`, `equals` / `not_equals` null): it always gives the same answer.
    fn condition_never_null(
        &mut self,
        op: Operator,
        param_ty: &Type,
        value: Option<&crate::Value>,
        param: crate::Span,
    ) {
        let verdict = match (op, value) {
            (Operator::Exists, None) => "`exists` always holds",
            (Operator::NotExists, None) => "`not_exists` never holds",
            (Operator::Equals, Some(crate::Value::Null)) => "`equals` null never holds",
            (Operator::NotEquals, Some(crate::Value::Null)) => "`not_equals` null always holds",
            _ => return,
        };
        if param_ty.fits(&Type::Null) != Fit::No {
            return;
        }
        self.diags.push(
            Diagnostic::new(Code::NullComparison, param, format!("{verdict}: {param_ty:#} is never null"))
                .with_label(format!("this is {param_ty}, never null"))
                .with_help("the value always exists (its declared type is not nullable): drop the condition, or declare the value optional if it can be missing"),
        );
    }
}

impl Checker<'_> {
    /// `E0616` for a condition `contains` whose param is a list of objects and whose value
    /// a string (`{"param": "REF:a.labels", "operator": "contains", "value": "bug"}` with
    /// `labels` a `list<{name, color}>`): `contains` compares whole elements, and no object
    /// equals a string, so it never holds (hostile round 10, finding 12). The help computes
    /// what was meant, whether an element's field has that value, in a transform step.
    fn condition_contains_in_objects(
        &mut self,
        op: Operator,
        param: &crate::tool::JsonNode,
        param_ty: &Type,
        value_ty: &Type,
        literal: Option<&crate::Value>,
        at: crate::Span,
    ) {
        if op != Operator::Contains || value_ty.fits(&Type::Str) != Fit::Yes || *value_ty == Type::Never {
            return;
        }
        let element = param_ty.non_null().element().non_null();
        let objects: Vec<&crate::types::ObjectType> = element
            .alternatives()
            .iter()
            .filter_map(|t| match t {
                Type::Object(o) => Some(&**o),
                _ => None,
            })
            .collect();
        if objects.is_empty() || objects.len() != element.alternatives().len() {
            return;
        }
        // The field meant: `name` when it is a string, else the first string field.
        let strings: Vec<&str> = objects[0]
            .fields
            .iter()
            .filter(|(_, t)| t.non_null().fits(&Type::Str) == Fit::Yes && t.non_null() != Type::Never)
            .map(|(k, _)| &**k)
            .filter(|k| crate::syntax::is_identifier(k))
            .collect();
        let field = strings.iter().copied().find(|k| *k == "name").or(strings.first().copied()).unwrap_or("name");
        let written = param.as_str().map_or_else(|| "REF:…".to_string(), |s| s.value.to_string());
        let shown = match literal {
            Some(crate::Value::Str(s)) => crate::diagnostic::quoted(s),
            _ => "the value".to_string(),
        };
        // The names are computed, and the condition keeps its operator and its value as
        // written: the help never carries the value into an expression (where it would
        // need escaping twice, for the expression's string and for the JSON around it).
        let id = (0..).map(|n| if n == 0 { format!("{field}s") } else { format!("{field}s_{n}") });
        let id = id.take(100).find(|id| !self.ids.contains_key(id.as_str())).unwrap_or_else(|| format!("{field}s"));
        let step = serde_json::json!({
            "execution_id": id,
            "transform_responses": {"variables": {"xs": written},
                                    "transforms": {field: format!("map(array=xs, template=\"item.{field}\")")}}
        });
        self.diags.push(
            Diagnostic::new(
                Code::ConditionType,
                at,
                format!("`contains` never holds: the elements of {param_ty:#} are objects, never equal to {value_ty:#}"),
            )
            .with_label(format!("this is {value_ty}"))
            .with_secondary(param.span, "a list of objects")
            .with_help(format!(
                "`contains` compares whole elements; to ask whether an element's `{field}` is {shown}, compute the `{field}`s in a transform step, {step}, and make the condition's param \"REF:{id}.{field}\" (its operator and value as they are)"
            )),
        );
    }
}

impl Checker<'_> {
    /// `W1331`, in a plan: a step with `continue_on_error` whose callee declares a `status`
    /// response of its own, which the failure marker `{"status": "failed", …}` (SPEC §6.5,
    /// fixed) shares: `item.status == 'failed'` counts failed calls and the tool's own
    /// failed results together (hostile round 10, finding 19).
    fn failure_status_collides(&mut self, ins: &Instruction, declared: Option<&[Param]>) {
        let (Some(flag), Some(responses)) = (&ins.continue_on_error, declared) else { return };
        if !flag.node || !self.closed_results || !responses.iter().any(|p| p.name.node == "status") {
            return;
        }
        let tool = ins.tool_path().unwrap_or_default();
        let id = ins.execution_id.node.as_str();
        let (what, tell) = match ins.parallel_execution {
            Some(_) => (
                "a child that fails",
                format!("`filter(array=REF:{id}.response, condition_string=\"item.error_message == null\")` keeps the results"),
            ),
            None => ("a failed call", format!("`REF:{id}.error_message` is null unless the call failed")),
        };
        let mut d = Diagnostic::new(
            Code::PlanFailureStatus,
            flag.span,
            format!(
                "with `continue_on_error`, {what} leaves {{\"status\": \"failed\", \"error_message\": …}}, and `{tool}` declares a `status` of its own"
            ),
        )
        .with_label("failures are marked by `status`")
        .with_help(format!(
            "tell a failure from a result by `error_message`, which only a failure has: {tell}; a `status` of \"failed\" may be either"
        ));
        if let Some(path) = &ins.tool_definition_path {
            d = d.with_secondary(path.span, format!("`{tool}` declares `status`"));
        }
        self.diags.push(d);
    }
}

pub(super) fn is_numeric(op: Operator) -> bool {
    matches!(
        op,
        Operator::GreaterThan | Operator::LessThan | Operator::GreaterThanOrEquals | Operator::LessThanOrEquals
    )
}

/// A parallel child's element is its callee's response as returned (SPEC §6.3): the
/// declared response object, or the value of a declared `response` when the tool returns a
/// non-object; anything when it declares no responses.
pub(super) fn parallel_element(declared_responses: Option<&[Param]>, shapes: &Shapes) -> Type {
    match declared_responses {
        None => Type::Any,
        Some(_) => match object_fields(&shapes.response).into_iter().find(|(k, _)| &**k == "response") {
            Some((_, alias)) => shapes.response.clone().union(alias),
            None => shapes.response.clone(),
        },
    }
}

/// Whether `text` is a JSON number as written (`0`, `-2.5`, `1e3`).
fn is_json_number(text: &str) -> bool {
    !text.is_empty()
        && text.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && serde_json::from_str::<serde_json::Number>(text).is_ok()
}
