//! What the model reads in each phase: the system prompts, the first message of each phase,
//! the repair message, and the JSON Schemas of the answers.

use serde_json::{json, Value as Json};

use super::client::Phase;
use super::model::{SubQuestion, ToolMapping, INTENTS};

/// The system prompt of a phase: the role, the phase's task, and the exact shape of the JSON
/// reply it expects with a short example. The shape is stated in words as well as asked for
/// through the API (OpenAI's `response_format`, Anthropic's forced tool): MCP sampling has no
/// structured-output switch, and a model that has not read `docs/compose.md` must still
/// answer with every field (a phase-2 reply without `tool_mappings` is refused).
pub(crate) fn system(phase: Phase) -> String {
    let role = "You are the Tool Composer: you answer a multi-faceted question by decomposing it into \
                sub-questions, planning tool calls as a tdsl plan, and synthesizing the results.";
    let task = match phase {
        Phase::Decompose => {
            "Phase 1, DECOMPOSE: split the user's query into 2 to 6 atomic sub-questions. Each has a unique `id` \
             (sq_1, sq_2, ...), a `question` of 10 to 500 characters, an `intent` (CAUSAL, COMPARATIVE, PREDICTIVE, \
             DESCRIPTIVE or EXPERIMENTAL), the `entities` it names, `depends_on` (ids of sub-questions it needs \
             answered first; no cycles) and a `priority` from 1 (highest) to 10."
        }
        Phase::Plan => {
            "Phase 2, PLAN: write one tdsl plan that answers every sub-question with the listed tools, and map each \
             sub-question to the tool (and the plan steps, `execution_ids`) that answer it, with your confidence \
             from 0 to 1. The plan is checked before anything runs; if it is refused you get the diagnostics and \
             answer again with the whole corrected execution_plan."
        }
        Phase::Execute => "Phase 3, EXECUTE: no model request.",
        Phase::Synthesize => {
            "Phase 4, SYNTHESIZE: answer the user's query from the steps' results only. `answer` is at least 50 \
             characters; `confidence` from 0 to 1; `supporting_data` holds the key figures; `citations` are the \
             execution ids of the steps the answer rests on; `caveats` the limits of the answer; \
             `failed_components` the sub-question ids that could not be answered."
        }
    };
    match reply_shape(phase) {
        Some(shape) => format!("{role}\n\n{task}\n\n{shape}"),
        None => format!("{role}\n\n{task}"),
    }
}

/// What a phase's reply must be: one JSON object with these fields, and an example.
fn reply_shape(phase: Phase) -> Option<String> {
    let (name, fields, example) = match phase {
        Phase::Decompose => (
            "decomposition_result",
            "`sub_questions` (a list of objects with `id`, `question`, `intent`, `entities`, `depends_on`, \
             `priority`) and `decomposition_reasoning` (a string)",
            r#"{"sub_questions": [{"id": "sq_1", "question": "Which documents can be read?", "intent": "DESCRIPTIVE", "entities": ["documents"], "depends_on": [], "priority": 1}, {"id": "sq_2", "question": "How long is the first readable document?", "intent": "DESCRIPTIVE", "entities": ["word count"], "depends_on": ["sq_1"], "priority": 2}], "decomposition_reasoning": "The length needs the readable documents first."}"#,
        ),
        Phase::Plan => (
            "execution_plan",
            "`tool_mappings` (one object per sub-question with `sub_question_id`, `tool_name`, `tool_category`, \
             `agent_name` (`tdsl`, or the upstream server's name), `confidence` and `execution_ids`), `plan` (the \
             tdsl plan itself: an object with `instructions` and `response_reference_map`, and `arguments` when it \
             reads one) and `planning_reasoning` (a string). A bare plan is refused: the three fields are required",
            r#"{"tool_mappings": [{"sub_question_id": "sq_1", "tool_name": "document_validator", "tool_category": "DESCRIPTIVE", "agent_name": "tdsl", "confidence": 0.9, "execution_ids": ["check"]}, {"sub_question_id": "sq_2", "tool_name": "basic_extractor", "tool_category": "DESCRIPTIVE", "agent_name": "tdsl", "confidence": 0.8, "execution_ids": ["info"]}], "plan": {"instructions": [{"execution_id": "check", "tool_definition_path": "document_validator", "arguments": {"file_paths": ["/docs/a.txt"]}}, {"execution_id": "info", "tool_definition_path": "basic_extractor", "arguments": {"document_path": "REF:check.valid_documents.0"}}], "response_reference_map": {"first": "REF:info"}}, "planning_reasoning": "check answers sq_1; info reads its first valid document for sq_2."}"#,
        ),
        Phase::Execute => return None,
        Phase::Synthesize => (
            "composed_response",
            "`answer` (a string), `confidence` (a number), `supporting_data` (an object), `citations`, `caveats` and \
             `failed_components` (lists of strings), and `reasoning` (a string)",
            r#"{"answer": "Both documents can be read; the first, a.txt, has 240 words over one page.", "confidence": 0.85, "supporting_data": {"readable": 2, "words": 240}, "citations": ["check", "info"], "caveats": ["Pages are counted as 40 lines."], "failed_components": [], "reasoning": "sq_1 from check, sq_2 from info."}"#,
        ),
    };
    Some(format!(
        "Reply with the {name}: one JSON object and nothing else (no prose, no Markdown), with the fields {fields}. \
         For example (the shape, not the content):\n{example}"
    ))
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

/// The JSON object of a reply: the whole text when it is one, else the first fenced block
/// (```` ```json … ``` ````) that is one, else the text from its first `{` to its last `}`
/// (an object after prose). The error says what is wrong in words the model can act on: not
/// JSON, not an object, or the required fields of `name` that are missing, all of them.
pub(crate) fn reply_json(text: &str, name: &str) -> Result<Json, String> {
    let object = |t: &str| serde_json::from_str::<Json>(t.trim()).ok().filter(Json::is_object);
    let found = object(text).or_else(|| fenced(text).find_map(object)).or_else(|| {
        let (from, to) = (text.find('{')?, text.rfind('}')?);
        (from < to).then(|| object(&text[from..=to])).flatten()
    });
    let Some(json) = found else {
        let why = match serde_json::from_str::<Json>(text.trim()) {
            Ok(other) => format!("a JSON {} rather than an object", kind(&other)),
            Err(e) => format!("not JSON ({e})"),
        };
        return Err(format!("the answer is {why}: answer with one JSON object, the {name}, and nothing else"));
    };
    let missing: Vec<&str> = required(name).into_iter().filter(|f| json.get(f).is_none()).collect();
    if !missing.is_empty() {
        let fields: Vec<String> = missing.iter().map(|f| format!("`{f}`")).collect();
        return Err(format!(
            "the answer is not a valid {name}: it has no {} (required: {})",
            fields.join(", "),
            required(name).join(", ")
        ));
    }
    Ok(json)
}

/// The contents of the Markdown fences in `text`, in order.
fn fenced(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let open = rest.find("```")?;
        let after = &rest[open + 3..];
        // The info string (`json`) runs to the end of the fence's line.
        let body = after.find('\n').map_or(after, |n| &after[n + 1..]);
        let close = body.find("```")?;
        rest = &body[close + 3..];
        Some(&body[..close])
    })
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "list",
        Json::Object(_) => "object",
    }
}

/// The fields a reply `name` cannot do without (those its type has no default for).
fn required(name: &str) -> Vec<&'static str> {
    match name {
        "decomposition_result" => vec!["sub_questions", "decomposition_reasoning"],
        "execution_plan" => vec!["tool_mappings", "plan", "planning_reasoning"],
        // The lists and `supporting_data` may be left out (empty).
        "composed_response" => vec!["answer", "confidence"],
        _ => Vec::new(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_phase_states_the_fields_of_its_reply_with_an_example() {
        let plan = system(Phase::Plan);
        for field in ["`tool_mappings`", "`plan`", "`planning_reasoning`", "`sub_question_id`", "`execution_ids`"] {
            assert!(plan.contains(field), "phase 2's prompt does not name {field}:\n{plan}");
        }
        for phase in [Phase::Decompose, Phase::Plan, Phase::Synthesize] {
            let prompt = system(phase);
            let example = prompt.rsplit_once("(the shape, not the content):\n").map(|(_, e)| e).unwrap_or_default();
            let example: Json = serde_json::from_str(example).unwrap_or_else(|e| panic!("{phase:?}: {e}:\n{prompt}"));
            let name = match phase {
                Phase::Decompose => "decomposition_result",
                Phase::Plan => "execution_plan",
                _ => "composed_response",
            };
            // The example is a reply the composer accepts, with every field of the schema.
            assert!(reply_json(&example.to_string(), name).is_ok(), "{phase:?}");
            let schema = match phase {
                Phase::Decompose => decomposition_schema(),
                Phase::Plan => plan_schema(),
                _ => composed_schema(),
            };
            for f in schema["required"].as_array().unwrap() {
                assert!(example.get(f.as_str().unwrap()).is_some(), "{phase:?}'s example lacks {f}");
            }
        }
    }

    #[test]
    fn replies_are_read_alone_in_a_fence_or_after_prose() {
        let plan = r#"{"tool_mappings": [], "plan": {}, "planning_reasoning": "r"}"#;
        for text in [
            plan.to_string(),
            format!("```json\n{plan}\n```"),
            format!("Here is the plan:\n\n```json\n{plan}\n```\nIt calls one tool."),
            format!("Sure. {plan}"),
            format!("A fence of something else first:\n```\nnot json\n```\nthen\n```\n{plan}\n```"),
        ] {
            assert_eq!(reply_json(&text, "execution_plan"), Ok(serde_json::from_str::<Json>(plan).unwrap()), "{text}");
        }
    }

    #[test]
    fn a_reply_in_the_wrong_shape_names_what_is_missing() {
        // A bare plan (what a model that was never told about `tool_mappings` sends).
        let e = reply_json(r#"{"instructions": [], "response_reference_map": {}}"#, "execution_plan").unwrap_err();
        assert_eq!(
            e,
            "the answer is not a valid execution_plan: it has no `tool_mappings`, `plan`, `planning_reasoning` \
             (required: tool_mappings, plan, planning_reasoning)"
        );
        let e = reply_json("I cannot help with that.", "decomposition_result").unwrap_err();
        assert!(e.starts_with("the answer is not JSON ("), "{e}");
        let e = reply_json("[1, 2]", "composed_response").unwrap_err();
        assert!(e.starts_with("the answer is a JSON list rather than an object"), "{e}");
    }
}
