//! What the model reads in each phase: the system prompts, the first message of each phase,
//! the repair message, and the JSON Schemas of the answers.

use serde_json::{json, Value as Json};

use super::client::Phase;
use super::model::{SubQuestion, ToolMapping, INTENTS};

/// The system prompt of a phase.
pub(crate) fn system(phase: Phase) -> String {
    let role = "You are the Tool Composer: you answer a multi-faceted question by decomposing it into \
                sub-questions, planning tool calls as a tdsl plan, and synthesizing the results.";
    let task = match phase {
        Phase::Decompose => {
            "Phase 1, DECOMPOSE: split the user's query into 2 to 6 atomic sub-questions. Each has a unique `id` \
             (sq_1, sq_2, ...), a `question` of 10 to 500 characters, an `intent` (CAUSAL, COMPARATIVE, PREDICTIVE, \
             DESCRIPTIVE or EXPERIMENTAL), the `entities` it names, `depends_on` (ids of sub-questions it needs \
             answered first; no cycles) and a `priority` from 1 (highest) to 10. Answer with the decomposition_result \
             JSON object only."
        }
        Phase::Plan => {
            "Phase 2, PLAN: write one tdsl plan that answers every sub-question with the listed tools, and map each \
             sub-question to the tool (and the plan steps, `execution_ids`) that answer it, with your confidence \
             from 0 to 1. The plan is checked before anything runs; if it is refused you get the diagnostics and \
             answer again with the whole corrected execution_plan. Answer with the execution_plan JSON object only."
        }
        Phase::Execute => "Phase 3, EXECUTE: no model request.",
        Phase::Synthesize => {
            "Phase 4, SYNTHESIZE: answer the user's query from the steps' results only. `answer` is at least 50 \
             characters; `confidence` from 0 to 1; `supporting_data` holds the key figures; `citations` are the \
             execution ids of the steps the answer rests on; `caveats` the limits of the answer; \
             `failed_components` the sub-question ids that could not be answered. Answer with the composed_response \
             JSON object only."
        }
    };
    format!("{role}\n\n{task}")
}

/// Phase 1's message.
pub(crate) fn decompose(query: &str, listing: &str) -> String {
    format!(
        "Query: {query}\n\nThe tools that will answer the sub-questions (for orientation; you plan them in the next \
         phase):\n\n{listing}"
    )
}

/// Phase 2's message: the query, the sub-questions, the guide and the tools.
pub(crate) fn plan(query: &str, subs: &[SubQuestion], listing: &str) -> String {
    let subs = serde_json::to_string_pretty(subs).unwrap_or_default();
    format!(
        "Query: {query}\n\nSub-questions:\n{subs}\n\nThe plan receives one argument, `query` (the query above): \
         `REF:arguments.query`. Declare it as {{\"name\": \"query\", \"type_name\": \"string\", \"required\": true}} \
         if you use it.\n\nHow to write a tdsl plan:\n\n{guide}\n\n{listing}",
        guide = crate::mcp::plans::GUIDE,
    )
}

/// Phase 4's message.
pub(crate) fn synthesize(
    query: &str,
    subs: &[SubQuestion],
    mappings: &[ToolMapping],
    results: &Json,
    failed: &[String],
) -> String {
    format!(
        "Query: {query}\n\nSub-questions:\n{}\n\nTool mappings:\n{}\n\nThe plan's run:\n{}\n\nSub-questions whose steps \
         failed: {}",
        serde_json::to_string_pretty(subs).unwrap_or_default(),
        serde_json::to_string_pretty(mappings).unwrap_or_default(),
        serde_json::to_string_pretty(results).unwrap_or_default(),
        if failed.is_empty() { "none".to_string() } else { failed.join(", ") },
    )
}

/// The message of a repair round.
pub(crate) fn repair(phase: Phase, feedback: &str) -> String {
    let what = match phase {
        Phase::Decompose => "decomposition_result",
        Phase::Plan => "execution_plan",
        Phase::Execute => "answer",
        Phase::Synthesize => "composed_response",
    };
    format!(
        "Your {what} was not accepted. Fix every problem below and answer again with the whole corrected {what} as \
         one JSON object.\n\n{feedback}"
    )
}

/// The JSON Schema of a `decomposition_result`.
pub(crate) fn decomposition_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "sub_questions": {
                "type": "array", "minItems": 2, "maxItems": 6,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "question": {"type": "string", "minLength": 10, "maxLength": 500},
                        "intent": {"type": "string", "enum": INTENTS},
                        "entities": {"type": "array", "items": {"type": "string"}},
                        "depends_on": {"type": "array", "items": {"type": "string"}},
                        "priority": {"type": "integer", "minimum": 1, "maximum": 10}
                    },
                    "required": ["id", "question", "intent", "entities", "depends_on", "priority"]
                }
            },
            "decomposition_reasoning": {"type": "string"}
        },
        "required": ["sub_questions", "decomposition_reasoning"]
    })
}

/// The JSON Schema of an `execution_plan`.
pub(crate) fn plan_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "tool_mappings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sub_question_id": {"type": "string"},
                        "tool_name": {"type": "string", "description": "A tool name from the tools listing."},
                        "tool_category": {"type": "string"},
                        "agent_name": {"type": "string", "description": "`tdsl`, or the upstream server's name."},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "execution_ids": {"type": "array", "items": {"type": "string"},
                                          "description": "The plan's steps that answer this sub-question."}
                    },
                    "required": ["sub_question_id", "tool_name", "tool_category", "agent_name", "confidence", "execution_ids"]
                }
            },
            "plan": {"type": "object", "description": "The tdsl plan: {\"arguments\": [...], \"instructions\": [...], \"response_reference_map\": {...}}."},
            "planning_reasoning": {"type": "string"}
        },
        "required": ["tool_mappings", "plan", "planning_reasoning"]
    })
}

/// The JSON Schema of a `composed_response`.
pub(crate) fn composed_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "minLength": 50},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "supporting_data": {"type": "object"},
            "citations": {"type": "array", "items": {"type": "string"}},
            "caveats": {"type": "array", "items": {"type": "string"}},
            "failed_components": {"type": "array", "items": {"type": "string"}},
            "reasoning": {"type": "string"}
        },
        "required": ["answer", "confidence", "supporting_data", "citations", "caveats", "failed_components"]
    })
}
