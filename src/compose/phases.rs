//! The work of each phase: decompose (checked by seed 000's rules), plan (checked by the plan
//! checker and the seed's planning rules), the results shown to the synthesis, synthesize.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value as Json};

use super::conversation::{parse_answer, PhaseError, Problem};
use super::model::{
    ComposedAnswer, CompositionResult, DecompositionAnswer, ExecutionPlan, ExecutionStep, PlanAnswer, SubQuestion,
    ToolMapping,
};
use super::{prompts, Composer, Phase, ANSWER_REPAIR_ROUNDS};

impl Composer {
    pub(super) fn decompose(
        &self,
        query: &str,
        result: &mut CompositionResult,
    ) -> Result<(Vec<SubQuestion>, String), PhaseError> {
        let first = prompts::decompose(query, &self.listing);
        let (answer, _) = self.converse(
            Phase::Decompose,
            self.config.decompose_timeout,
            ANSWER_REPAIR_ROUNDS,
            first,
            (
                "decomposition_result",
                "The query decomposed into 2-6 atomic sub-questions.",
                prompts::decomposition_schema(),
            ),
            result,
            |text| {
                let mut a: DecompositionAnswer = parse_answer(text, "decomposition_result")?;
                for (i, sq) in a.sub_questions.iter_mut().enumerate() {
                    if sq.id.trim().is_empty() {
                        sq.id = format!("sq_{}", i + 1);
                    }
                }
                validate_decomposition(&a.sub_questions).map_err(Problem::one)?;
                Ok((a.sub_questions, a.decomposition_reasoning))
            },
        )?;
        Ok(answer)
    }

    pub(super) fn plan(
        &self,
        query: &str,
        subs: &[SubQuestion],
        result: &mut CompositionResult,
    ) -> Result<(ExecutionPlan, String), PhaseError> {
        let first = prompts::plan(query, subs, &self.listing);
        let ((answer, text, check), rounds) = self.converse(
            Phase::Plan,
            self.config.plan_timeout,
            self.config.repair_rounds,
            first,
            (
                "execution_plan",
                "The tdsl plan answering the sub-questions, with a tool mapping per sub-question.",
                prompts::plan_schema(),
            ),
            result,
            |reply| {
                let a: PlanAnswer = parse_answer(reply, "execution_plan")?;
                let text = match &a.plan {
                    Json::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                let check = self.plans.check(&text);
                let violations = self.planning_violations(subs, &a, &a.plan);
                if check.ok() && violations.is_empty() {
                    return Ok((a, text, check));
                }
                let mut feedback = String::new();
                let mut errors = Vec::new();
                for d in check.diagnostics.iter().filter(|d| d.severity == crate::diagnostic::Severity::Error) {
                    let pointer = if d.pointer.is_empty() { "/" } else { &d.pointer };
                    errors.push(format!("{} at plan{pointer}: {}", d.code, d.message));
                    feedback.push_str(&format!("error {} at plan{pointer}: {}\n", d.code, d.message));
                    if let Some(h) = &d.help {
                        feedback.push_str(&format!("help: {h}\n"));
                    }
                    feedback.push_str(d.rendered.trim_end());
                    feedback.push_str("\n\n");
                }
                for v in violations {
                    feedback.push_str(&format!("error: {v}\n"));
                    errors.push(v);
                }
                Err(Problem { feedback, errors })
            },
        )?;
        let deps = self.plans.dependencies(&text).unwrap_or_default();
        let deps: HashMap<String, Vec<String>> = deps.into_iter().collect();
        let instructions = answer.plan.get("instructions").and_then(Json::as_array).cloned().unwrap_or_default();
        let mut steps = Vec::new();
        for ins in &instructions {
            let id = ins.get("execution_id").and_then(Json::as_str).unwrap_or_default().to_string();
            let tool = ins.get("tool_definition_path").and_then(Json::as_str).unwrap_or_default().to_string();
            let sq = answer
                .tool_mappings
                .iter()
                .find(|m| if m.execution_ids.is_empty() { m.tool_name == tool } else { m.execution_ids.contains(&id) })
                .map(|m| m.sub_question_id.clone())
                .unwrap_or_default();
            let priority = subs.iter().find(|s| s.id == sq).map_or(1, |s| s.priority);
            steps.push(ExecutionStep {
                depends_on_steps: deps.get(&id).cloned().unwrap_or_default(),
                step_id: id,
                sub_question_id: sq,
                tool_name: tool,
                input_mapping: ins.get("arguments").cloned().unwrap_or_else(|| json!({})),
                expected_output_schema: None,
                timeout_seconds: ins.get("timeout_seconds").and_then(Json::as_f64).unwrap_or(60.0),
                max_retries: ins
                    .pointer("/retry/max_retries")
                    .and_then(Json::as_u64)
                    .unwrap_or(self.config.retry.max_retries.into()),
                priority,
            });
        }
        let tool_count = steps.iter().map(|s| s.tool_name.as_str()).collect::<HashSet<_>>().len();
        let warnings = check.diagnostics.iter().map(|d| serde_json::to_value(d).unwrap_or_default()).collect();
        let plan = ExecutionPlan {
            plan_id: self.id("plan"),
            tool_mappings: answer.tool_mappings,
            step_count: steps.len(),
            tool_count,
            steps,
            parallel_groups: check.levels.clone().unwrap_or_default(),
            planning_reasoning: answer.planning_reasoning,
            phase_duration_ms: 0,
            model_used: Some(self.client.model()),
            created_at: self.now_iso(),
            plan: answer.plan,
            repair_rounds: rounds,
            warnings,
        };
        Ok((plan, text))
    }

    /// Seed 000's planning rules that the plan checker does not already enforce: every
    /// sub-question mapped and no mapping to an unknown one, every mapped tool known, every
    /// mapped step in the plan, confidences in 0–1. (Unknown tools in the plan, step
    /// dependencies and cycles are the checker's.)
    pub(super) fn planning_violations(&self, subs: &[SubQuestion], a: &PlanAnswer, plan: &Json) -> Vec<String> {
        let mut out = Vec::new();
        let ids: Vec<&str> = subs.iter().map(|s| s.id.as_str()).collect();
        for sq in subs {
            if !a.tool_mappings.iter().any(|m| m.sub_question_id == sq.id) {
                out.push(format!("sub-question `{}` has no tool mapping: every sub-question must be mapped", sq.id));
            }
        }
        let step_ids: Vec<&str> = plan
            .get("instructions")
            .and_then(Json::as_array)
            .map(|v| v.iter().filter_map(|i| i.get("execution_id").and_then(Json::as_str)).collect())
            .unwrap_or_default();
        for (i, m) in a.tool_mappings.iter().enumerate() {
            if !ids.contains(&m.sub_question_id.as_str()) {
                out.push(format!(
                    "tool_mappings[{i}] maps `{}`, which is not a sub-question (the sub-questions: {})",
                    m.sub_question_id,
                    ids.join(", ")
                ));
            }
            let known = self
                .callable
                .iter()
                .any(|c| c.name == m.tool_name || c.tool_path.as_deref() == Some(m.tool_name.as_str()));
            if !known {
                let names: Vec<&str> = self.callable.iter().map(|c| c.name.as_str()).collect();
                let near = crate::diagnostic::did_you_mean(&m.tool_name, names.iter().copied())
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                out.push(format!(
                    "tool_mappings[{i}] names the unknown tool `{}`: {near}the tools are {}",
                    m.tool_name,
                    names.join(", ")
                ));
            }
            for e in &m.execution_ids {
                if !step_ids.contains(&e.as_str()) {
                    out.push(format!("tool_mappings[{i}] names the step `{e}`, which is not in the plan"));
                }
            }
            if !(0.0..=1.0).contains(&m.confidence) {
                out.push(format!("tool_mappings[{i}].confidence is {}, and must be from 0 to 1", m.confidence));
            }
        }
        out
    }

    /// The steps' statuses and outputs for the synthesis prompt.
    pub(super) fn results_for_synthesis(&self, run: &crate::plans::PlanRun) -> Json {
        let max = self.config.max_output_chars;
        let steps: Vec<Json> = run
            .trace
            .steps
            .iter()
            .map(|s| {
                let output = s.result.as_ref().map(|r| {
                    let text = serde_json::to_string(r).unwrap_or_default();
                    if text.chars().count() > max {
                        Json::String(format!(
                            "{}… (cut at {max} characters)",
                            text.chars().take(max).collect::<String>()
                        ))
                    } else {
                        serde_json::from_str(&text).unwrap_or(Json::Null)
                    }
                });
                json!({
                    "execution_id": s.execution_id,
                    "tool": s.tool_name,
                    "status": s.status.as_str(),
                    "output": output,
                    "error": s.error,
                })
            })
            .collect();
        json!({"status": run.status.as_str(), "steps": steps, "failure_summary": run.failure_summary})
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn synthesize(
        &self,
        query: &str,
        subs: &[SubQuestion],
        mappings: &[ToolMapping],
        results: &Json,
        plan_ids: &[String],
        failed: &[String],
        result: &mut CompositionResult,
    ) -> Result<ComposedAnswer, PhaseError> {
        let first = prompts::synthesize(query, subs, mappings, results, failed);
        let sq_ids: Vec<&str> = subs.iter().map(|s| s.id.as_str()).collect();
        let (answer, _) = self.converse(
            Phase::Synthesize,
            self.config.synthesize_timeout,
            ANSWER_REPAIR_ROUNDS,
            first,
            (
                "composed_response",
                "The answer to the query, composed from the tools' results.",
                prompts::composed_schema(),
            ),
            result,
            |text| {
                let a: ComposedAnswer = parse_answer(text, "composed_response")?;
                let mut problems = Vec::new();
                let n = a.answer.trim().chars().count();
                if n < 50 {
                    problems.push(format!("`answer` has {n} characters and must have at least 50"));
                }
                if !(0.0..=1.0).contains(&a.confidence) {
                    problems.push(format!("`confidence` is {}, and must be from 0 to 1", a.confidence));
                }
                for c in &a.citations {
                    if !plan_ids.contains(c) {
                        problems.push(format!(
                            "the citation `{c}` is not an execution id of the plan ({})",
                            plan_ids.join(", ")
                        ));
                    }
                }
                for f in &a.failed_components {
                    if !sq_ids.contains(&f.as_str()) {
                        problems.push(format!(
                            "`failed_components` names `{f}`, which is not a sub-question ({})",
                            sq_ids.join(", ")
                        ));
                    }
                }
                if problems.is_empty() {
                    Ok(a)
                } else {
                    Err(Problem {
                        feedback: problems.iter().map(|p| format!("error: {p}\n")).collect(),
                        errors: problems,
                    })
                }
            },
        )?;
        Ok(answer)
    }
}

/// The steps that answer sub-question `sq`: its mappings' `execution_ids`, or the steps that
/// call its mapped tools.
pub(super) fn steps_of(sq: &str, mappings: &[ToolMapping], steps: &[ExecutionStep]) -> Vec<String> {
    let mut out = Vec::new();
    for m in mappings.iter().filter(|m| m.sub_question_id == sq) {
        if m.execution_ids.is_empty() {
            out.extend(steps.iter().filter(|s| s.tool_name == m.tool_name).map(|s| s.step_id.clone()));
        } else {
            out.extend(m.execution_ids.iter().cloned());
        }
    }
    out
}

/// Seed 000's `validate_decomposition`, in its order: 2–6 sub-questions, no duplicate ids,
/// dependencies on known ids, no cycle, each question at least 10 characters (and, from
/// `SubQuestion`'s fields, at most 500, priority 1–10).
pub fn validate_decomposition(subs: &[SubQuestion]) -> Result<(), String> {
    if !(2..=6).contains(&subs.len()) {
        return Err(format!("Expected 2-6 sub-questions, got {}", subs.len()));
    }
    let mut seen = HashSet::new();
    for sq in subs {
        if !seen.insert(sq.id.as_str()) {
            return Err(format!("Duplicate sub-question IDs detected: `{}` appears more than once", sq.id));
        }
    }
    for sq in subs {
        for dep in &sq.depends_on {
            if !seen.contains(dep.as_str()) {
                return Err(format!("Invalid dependency: {dep} (in `{}`)", sq.id));
            }
        }
    }
    if let Some(cycle) = find_cycle(subs) {
        return Err(format!("Circular dependencies detected: {}", cycle.join(" → ")));
    }
    for sq in subs {
        let n = sq.question.trim().chars().count();
        if n < 10 {
            return Err(format!("Sub-question too short: {} ({n} characters, at least 10)", sq.id));
        }
        if sq.question.chars().count() > 500 {
            return Err(format!("Sub-question too long: {} (at most 500 characters)", sq.id));
        }
        if !(1..=10).contains(&sq.priority) {
            return Err(format!("Priority out of range: {} has {} (1 to 10)", sq.id, sq.priority));
        }
    }
    Ok(())
}

/// A dependency cycle among the sub-questions, as the ids along it.
pub(super) fn find_cycle(subs: &[SubQuestion]) -> Option<Vec<String>> {
    fn visit<'a>(
        id: &'a str,
        deps: &HashMap<&'a str, Vec<&'a str>>,
        state: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == id).unwrap_or(0);
                let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(id.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(id, 1);
        path.push(id);
        for d in deps.get(id).map(Vec::as_slice).unwrap_or_default() {
            if let Some(c) = visit(d, deps, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    let deps: HashMap<&str, Vec<&str>> =
        subs.iter().map(|s| (s.id.as_str(), s.depends_on.iter().map(String::as_str).collect())).collect();
    let mut state = HashMap::new();
    for s in subs {
        if let Some(c) = visit(&s.id, &deps, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}
