//! Plans that check clean but are wrong, and diagnostics that mislead (hostile round 10,
//! findings 12, 13, 16–19; `docs/plans.md`): what the corpus of `tests/plans.rs` cannot
//! show — what a run sends upstream, and the rendering of the new diagnostics.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value as Json};
use tdsl::testing::exec::{RunStatus, Runner, ToolCall, ToolError};
use tdsl::testing::plans::{upstream_target, PlanCheck, PlanDesk, RunPlanOptions, UpstreamTool};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tool(name: &str, input: Json, output: Option<Json>) -> UpstreamTool {
    UpstreamTool {
        server: "x".into(),
        name: name.into(),
        description: None,
        input_schema: input,
        output_schema: output,
    }
}

fn desk(tools: Vec<UpstreamTool>) -> PlanDesk {
    PlanDesk::for_root(manifest().join("tests/data/plans/root"), &["/tools/*.tool"])
        .expect("the root loads")
        .with_upstream(tools)
}

/// A customer whose `city` is optional, and orders listed by an optional `since` (a string,
/// never null) and an optional `note` (a string or null).
fn shop() -> Vec<UpstreamTool> {
    vec![
        tool(
            "get_customer",
            json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
            Some(
                json!({"type": "object", "properties": {"id": {"type": "string"}, "city": {"type": "string"}}, "required": ["id"]}),
            ),
        ),
        tool(
            "list_orders",
            json!({"type": "object", "properties": {
                "id": {"type": "string"},
                "since": {"type": "string"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            }, "required": ["id"]}),
            Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})),
        ),
    ]
}

/// Every upstream call's arguments, in order; a customer without a city.
fn recording(calls: Arc<Mutex<Vec<(String, Json)>>>) -> Arc<dyn Runner> {
    Arc::new(move |call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
        let (_, tool) =
            call.endpoint().and_then(upstream_target).ok_or_else(|| ToolError::permanent("not upstream"))?;
        let args = serde_json::to_value(&call.arguments).expect("JSON");
        calls.lock().expect("lock").push((tool.to_string(), args));
        let answer = match tool {
            "get_customer" => json!({"id": "c2"}),
            _ => json!({"n": 0}),
        };
        Ok(serde_json::from_value(answer).expect("a value"))
    })
}

fn codes(check: &PlanCheck) -> Vec<&str> {
    check.diagnostics.iter().map(|d| d.code).collect()
}

/// Finding 13: an optional argument whose schema does not allow null is left out of the
/// call when its value is null (it was sent as `"since": null`, which a strict server
/// refuses); one whose schema allows null is sent as null. Neither is warned of at check:
/// an absent optional argument is what the schema allows.
#[test]
fn a_null_optional_argument_the_schema_forbids_is_left_out() {
    let plan = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c2"}},
        {"execution_id": "o", "tool_definition_path": "x/list_orders",
         "arguments": {"id": "REF:c.id", "since": "REF:c.city", "note": "REF:c.city"}}
    ], "response_reference_map": {"n": "REF:o.n"}});
    let desk = desk(shop());
    let check = desk.check_value(&plan);
    assert!(check.ok() && check.diagnostics.is_empty(), "{}", check.render());
    let calls = Arc::new(Mutex::new(Vec::new()));
    let run = desk
        .run(&plan.to_string(), tdsl::Value::Null, recording(calls.clone()), &RunPlanOptions::default())
        .expect("it runs");
    assert_eq!(run.status, RunStatus::Success, "{}", run.to_json());
    let calls = calls.lock().expect("lock").clone();
    assert_eq!(calls[1], ("list_orders".to_string(), json!({"id": "c2", "note": null})));
}

/// Finding 13: a value that may be null into a required argument, or mapped to a required
/// response, is `W1330` with a `default` in the help; a condition `exists` on that value
/// answers it.
#[test]
fn a_value_that_may_be_null_into_a_required_place_is_warned_of() {
    let required = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c2"}},
        {"execution_id": "o", "tool_definition_path": "x/list_orders", "arguments": {"id": "REF:c.city"}}
    ], "responses": [{"name": "city", "type_name": "string", "required": true}, {"name": "n", "type_name": "integer"}],
       "response_reference_map": {"city": "REF:c.city", "n": "REF:o.n"}});
    let check = desk(shop()).check_value(&required);
    assert!(check.ok(), "a warning: {}", check.render());
    assert_eq!(codes(&check), ["W1330", "W1330"], "{}", check.render());
    let at = |p: &str| check.diagnostics.iter().find(|d| d.pointer == p).expect(p);
    let argument = at("/instructions/1/arguments/id");
    assert!(argument.message.contains("argument `id` of `x/list_orders` is required"), "{}", argument.message);
    assert!(
        argument.help.as_deref().is_some_and(|h| h.contains("\"id\": \"default(REF:c.city, …)\"")),
        "{:?}",
        argument.help
    );
    let response = at("/response_reference_map/city");
    assert!(response.message.contains("response `city` is required"), "{}", response.message);
    insta::assert_snapshot!("maybe_null_argument", argument.rendered);

    let mut tested = required.clone();
    tested["instructions"][1]["conditions"] = json!([{"param": "REF:c.city", "operator": "exists"}]);
    tested["responses"][0]["required"] = json!(false);
    let check = desk(shop()).check_value(&tested);
    assert!(check.diagnostics.is_empty(), "{}", check.render());
}
