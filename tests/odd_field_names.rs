//! Upstream tools whose schemas name fields that are no identifiers (`2fa`, `host.name`,
//! `first name`, `""`; red-team round 10, finding 15): callable, each such field a field of
//! the type, read in an expression with `r['2fa']` (typed), and the run returns its value.
//! A REF path cannot name such a field: the diagnostic says to read it with `['…']`.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value as Json};
use tdsl::testing::exec::{RunStatus, Runner, ToolCall, ToolError};
use tdsl::testing::plans::{PlanDesk, RunPlanOptions, UpstreamTool};

fn desk() -> PlanDesk {
    let user = UpstreamTool {
        server: "t".into(),
        name: "get_user".into(),
        description: None,
        input_schema: json!({"type": "object", "properties": {"first name": {"type": "string"}, "user-name": {"type": "string"}},
            "required": ["first name"]}),
        output_schema: Some(json!({"type": "object", "properties": {
            "2fa": {"type": "boolean"}, "host.name": {"type": "string"}, "first name": {"type": "string"},
            "": {"type": "integer"}, "24h_volume": {"type": "number"}, "id": {"type": "string"}},
            "required": ["2fa", "host.name", "first name", "", "24h_volume", "id"]})),
    };
    PlanDesk::for_root(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plans/root"), &["/tools/*.tool"])
        .expect("the root loads")
        .with_upstream(vec![user])
}

/// Answers `t/get_user` with every field, `first name` from the arguments.
fn runner() -> Arc<dyn Runner> {
    Arc::new(|call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
        let name =
            call.arguments.get_direct("first name").and_then(tdsl::Value::as_str).unwrap_or_default().to_string();
        let answer =
            json!({"2fa": true, "host.name": "db-1", "first name": name, "": 7, "24h_volume": 1.5, "id": "u1"});
        Ok(serde_json::from_value(answer).expect("a value"))
    })
}

/// A plan calling `t/get_user` and reading `transforms` of its result, held in `r`.
fn reading(transforms: Json) -> Json {
    json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "t/get_user", "arguments": {"first name": "Ada"}},
        {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:s"}, "transforms": transforms}}
    ], "response_reference_map": {"v": "REF:t"}})
}

#[test]
fn a_tool_with_fields_that_are_no_identifiers_is_callable_and_reads_them() {
    let plans = desk();
    let plan = reading(json!({"twofa": "r['2fa']", "host": "upper(r['host.name'])", "first": "r['first name']",
        "empty": "r[''] + 1", "vol": "r['24h_volume'] * 2", "id": "r.id"}));
    let check = plans.check_value(&plan);
    assert!(check.ok(), "{}", check.render());
    let text = serde_json::to_string(&plan).expect("JSON");
    let run = plans.run(&text, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    assert_eq!(run.status, RunStatus::Success, "{}", run.to_json());
    let result = serde_json::to_value(run.result.expect("a result")).expect("JSON");
    assert_eq!(
        result,
        json!({"v": {"twofa": true, "host": "DB-1", "first": "Ada", "empty": 8, "vol": 3.0, "id": "u1"}})
    );
}

/// Such a field has its schema's type: a boolean `2fa` is no number, nor a string.
#[test]
fn a_field_read_by_its_odd_name_has_its_schemas_type() {
    let plans = desk();
    for (expr, code) in [("r['2fa'] + 1", "E0202"), ("upper(r['2fa'])", "E0201"), ("r['host.name'] * 2", "E0202")] {
        let check = plans.check_value(&reading(json!({"bad": expr})));
        let codes: Vec<&str> = check.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [code], "{expr}: {}", check.render());
    }
    // The arguments are checked by their odd names too.
    let call = |arguments: Json| json!({"instructions": [{"execution_id": "s", "tool_definition_path": "t/get_user", "arguments": arguments}]});
    for (arguments, code) in [(json!({}), "E0612"), (json!({"first name": 3}), "E0613")] {
        let check = plans.check_value(&call(arguments.clone()));
        assert!(check.diagnostics.iter().any(|d| d.code == code), "{arguments}: {}", check.render());
    }
}

/// A REF path cannot name such a field: the diagnostic says to read it in a transform.
#[test]
fn a_ref_to_a_field_that_is_no_identifier_says_how_to_read_it() {
    let plans = desk();
    for (written, code, says) in [
        ("REF:s.2fa", "E0006", "read it in a transform, `\"variables\": {\"r\": \"REF:s\"}` and `r['2fa']`"),
        ("REF:s.host.name", "E1314", "declares the field `host.name`, which a REF path cannot name"),
    ] {
        let plan = json!({"instructions": [{"execution_id": "s", "tool_definition_path": "t/get_user",
            "arguments": {"first name": "Ada"}}], "response_reference_map": {"v": written}});
        let check = plans.check_value(&plan);
        let d = check
            .diagnostics
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("{written}: {}", check.render()));
        assert!(d.help.as_deref().unwrap_or_default().contains(says), "{written}: {}", check.render());
    }
}
