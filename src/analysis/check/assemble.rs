//! The plan put together once every pass found no error: steps in execution order, each with what
//! it reads from whom, REF contexts renumbered to the new order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{Checker, Parts, Subject, UseKind};
use crate::analysis::plan::*;
use crate::types::Type;

impl<'a> Checker<'a> {
    /// Puts the plan together: steps in execution order, REF contexts renumbered.
    pub(super) fn plan(
        &mut self,
        subject: &Subject<'_>,
        levels: &[usize],
        transform_arguments: Option<TransformPlan>,
        response_map: Option<Vec<(Arc<str>, RefPlan)>>,
        transform_responses: Option<TransformPlan>,
    ) -> Plan {
        let mut order: Vec<usize> = (0..self.steps.len()).collect();
        order.sort_by(|&a, &b| {
            let key = |i: usize| (levels[i], self.steps[i].ins.execution_id.node.as_str(), i);
            key(a).cmp(&key(b))
        });
        let mut new_id = vec![StepId(0); self.steps.len()];
        for (pos, &i) in order.iter().enumerate() {
            new_id[i] = StepId(pos);
        }
        let deps = self.deps();
        let mut by_level: Vec<Vec<StepId>> = Vec::new();
        let mut steps = Vec::with_capacity(order.len());
        for &i in &order {
            let step = &mut self.steps[i];
            let ins = step.ins;
            let parts = step.parts.take().unwrap_or_else(|| Parts {
                arguments: Vec::new(),
                transform_arguments: None,
                conditions: Vec::new(),
                parallel: None,
                done_check: None,
                done_value: None,
                transform_responses: None,
            });
            let mut depends_on: Vec<StepId> = deps[i].iter().map(|&j| new_id[j]).collect();
            depends_on.sort_unstable();
            let mut inputs: Vec<StepInput> = Vec::new();
            let mut slot: HashMap<StepId, usize> = HashMap::new();
            let mut seen: HashSet<(StepId, &str)> = HashSet::new();
            for u in &step.uses {
                let from = new_id[u.to];
                let at = *slot.entry(from).or_insert_with(|| {
                    inputs.push(StepInput { from, carries: Vec::new(), manual: false });
                    inputs.len() - 1
                });
                match u.kind {
                    UseKind::Dependency => inputs[at].manual = true,
                    UseKind::Ref => {
                        if seen.insert((from, u.carries.as_str())) {
                            inputs[at].carries.push(Arc::from(u.carries.as_str()));
                        }
                    }
                }
            }
            inputs.sort_by_key(|x| x.from);
            let level = levels[i];
            if by_level.len() <= level {
                by_level.resize(level + 1, Vec::new());
            }
            by_level[level].push(new_id[i]);
            let mut plan = StepPlan {
                id: new_id[i],
                execution_id: Arc::from(ins.execution_id.node.as_str()),
                index: i,
                tool_path: ins.tool_path().map(Arc::from),
                callee_file: step.callee.as_ref().map(|c| c.file.clone()),
                level,
                depends_on,
                inputs,
                arguments: parts.arguments,
                transform_arguments: parts.transform_arguments,
                non_null_optional: step.callee.as_deref().map(non_null_optional).unwrap_or_default(),
                conditions: parts.conditions,
                parallel: parts.parallel,
                done_check: parts.done_check,
                done_value: parts.done_value,
                transform_responses: parts.transform_responses,
                retry: ins.retry.clone(),
                timeout_seconds: ins.timeout_seconds.as_ref().map(|t| t.node),
                continue_on_error: ins.continue_on_error.as_ref().is_some_and(|c| c.node),
                output_path: ins
                    .output_path
                    .as_ref()
                    .map(|p| p.segments.iter().map(|s| s.node.clone()).collect::<Vec<_>>().into()),
                expected_key: step.key.clone(),
                result_type: step.result.clone().unwrap_or(Type::Any),
                span: ins.span,
            };
            renumber_step(&mut plan, &new_id);
            steps.push(plan);
        }
        let mut plan = Plan {
            tool: subject.tool.clone(),
            file: subject.file.clone(),
            transform_arguments,
            steps,
            levels: by_level,
            response_map,
            transform_responses,
            graph: Default::default(),
        };
        if let Some(map) = &mut plan.response_map {
            for (_, r) in map {
                renumber_ref(r, &new_id);
            }
        }
        for t in plan.transform_responses.iter_mut().chain(plan.transform_arguments.iter_mut()) {
            renumber_transform(t, &new_id);
        }
        plan
    }
}

pub(super) fn renumber_ref(r: &mut RefPlan, new_id: &[StepId]) {
    if let RefContext::Step(id) = &mut r.context {
        *id = new_id[id.0];
    }
}

pub(super) fn renumber_value(v: &mut ValuePlan, new_id: &[StepId]) {
    match v {
        ValuePlan::Ref(r) => renumber_ref(r, new_id),
        ValuePlan::List(items) => items.iter_mut().for_each(|x| renumber_value(x, new_id)),
        ValuePlan::Object(entries) => entries.iter_mut().for_each(|(_, x)| renumber_value(x, new_id)),
        ValuePlan::Literal(_) | ValuePlan::Call(_) => {}
    }
}

pub(super) fn renumber_transform(t: &mut TransformPlan, new_id: &[StepId]) {
    for (_, v) in &mut t.variables {
        renumber_value(v, new_id);
    }
}

pub(super) fn renumber_condition(c: &mut ConditionPlan, new_id: &[StepId]) {
    match c {
        ConditionPlan::Leaf { param, value, .. } => {
            renumber_value(param, new_id);
            if let Some(v) = value {
                renumber_value(v, new_id);
            }
        }
        ConditionPlan::Group { conditions, .. } => conditions.iter_mut().for_each(|c| renumber_condition(c, new_id)),
    }
}

pub(super) fn renumber_step(s: &mut StepPlan, new_id: &[StepId]) {
    for (_, v) in &mut s.arguments {
        renumber_value(v, new_id);
    }
    for t in s.transform_arguments.iter_mut().chain(s.transform_responses.iter_mut()) {
        renumber_transform(t, new_id);
    }
    for c in &mut s.conditions {
        renumber_condition(c, new_id);
    }
    if let Some(DoneCheckPlan::Conditions(cs)) = &mut s.done_check {
        cs.iter_mut().for_each(|c| renumber_condition(c, new_id));
    }
    if let Some(p) = &mut s.parallel {
        renumber_value(&mut p.iterate_over, new_id);
    }
    if let Some(v) = &mut s.done_value {
        renumber_value(v, new_id);
    }
}

/// The optional arguments of `callee` whose exact type (an upstream tool's schema) holds no
/// `null` ([`StepPlan::non_null_optional`]).
fn non_null_optional(callee: &crate::analysis::root::LoadedTool) -> Vec<Arc<str>> {
    let (Some(def), Some(exact)) = (&callee.def, callee.exact.as_deref()) else { return Vec::new() };
    def.arguments
        .iter()
        .filter(|p| !p.is_required() && crate::tool::validate::default_of(p).is_none())
        .filter(|p| {
            exact
                .arguments
                .get(p.name.node.as_str())
                .is_some_and(|t| t.fits(&crate::types::Type::Null) == crate::types::Fit::No)
        })
        .map(|p| Arc::from(p.name.node.as_str()))
        .collect()
}
