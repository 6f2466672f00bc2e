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
        let args = serde_json::to_value(call.arguments).expect("JSON");
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

/// Finding 13: an optional argument whose schema does not allow null is never sent as
/// `"since": null` (which a strict server refuses), nor left out of the call (which can widen
/// it: `list_orders` without its filter lists everyone's orders, a later outside round's
/// finding): the step fails before the call, `E0801`, and a value that may be null there is
/// `W1330` at check (outside round 11, finding 4). One whose schema allows null is sent as
/// null, and not warned of.
#[test]
fn a_null_optional_argument_the_schema_forbids_fails_before_the_call() {
    let plan = |since: &str| {
        json!({"instructions": [
            {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c2"}},
            {"execution_id": "o", "tool_definition_path": "x/list_orders",
             "arguments": {"id": "REF:c.id", "since": since, "note": "REF:c.city"}}
        ], "response_reference_map": {"n": "REF:o.n"}})
    };
    let desk = desk(shop());
    let check = desk.check_value(&plan("REF:c.city"));
    assert!(check.ok(), "{}", check.render());
    assert_eq!(codes(&check), ["W1330"], "{}", check.render());
    let warned = &check.diagnostics[0];
    assert_eq!(warned.pointer, "/instructions/1/arguments/since");
    assert!(
        warned.message.contains("may be left out but not null") && warned.message.contains("fails before the call")
    );
    assert!(warned.help.as_deref().is_some_and(|h| h.contains("\"since\": \"default(REF:c.city, …)\"")));
    // A literal null is an error: the model can leave the key out itself.
    let literal = desk.check_value(&json!({"instructions": [
        {"execution_id": "o", "tool_definition_path": "x/list_orders", "arguments": {"id": "c1", "since": null}}
    ], "response_reference_map": {"n": "REF:o.n"}}));
    assert_eq!(codes(&literal), ["E0613"], "{}", literal.render());
    assert!(literal.diagnostics[0].message.contains("may be left out, but not null"), "{}", literal.render());
    let run = |plan: &Json| {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let run = desk
            .run(&plan.to_string(), tdsl::Value::Null, recording(calls.clone()), &RunPlanOptions::default())
            .expect("it runs");
        let calls = calls.lock().expect("lock").clone();
        (run, calls)
    };
    let (failed, calls) = run(&plan("REF:c.city"));
    assert_eq!(failed.status, RunStatus::Failed, "{}", failed.to_json());
    let text = failed.to_json().to_string();
    assert!(text.contains("argument `since` is null") && text.contains("E0801"), "{text}");
    assert_eq!(calls.len(), 1, "list_orders is not called: {calls:?}");
    // Given a value, the call is made; the nullable `note` is sent as null.
    let (ran, calls) = run(&plan("2026-01-01"));
    assert_eq!(ran.status, RunStatus::Success, "{}", ran.to_json());
    assert_eq!(calls[1], ("list_orders".to_string(), json!({"id": "c2", "since": "2026-01-01", "note": null})));
}

/// Outside round 11, finding 4: a fan-out whose element is null into a child argument whose
/// schema does not allow null: that child fails before its call (`E0801`), as a step does,
/// rather than being sent null; at check, elements that may be null are `W1330`.
#[test]
fn a_null_element_into_a_non_null_child_argument_fails_that_child() {
    let plan = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c2"}},
        {"execution_id": "t", "transform_responses": {"transforms": {"days": "['2026-01-01', REF:c.city]"}}},
        {"execution_id": "o", "tool_definition_path": "x/list_orders", "arguments": {"id": "c2"}, "continue_on_error": true,
         "parallel_execution": {"iterate_over": "REF:t.days", "child_argument_name": "since"}}
    ], "response_reference_map": {"all": "REF:o.response"}});
    let desk = desk(shop());
    let check = desk.check_value(&plan);
    assert!(check.ok(), "{}", check.render());
    assert_eq!(codes(&check), ["W1330"], "{}", check.render());
    assert!(
        check.diagnostics[0].message.contains("a null element's child fails before its call"),
        "{}",
        check.render()
    );
    let help = check.diagnostics[0].help.clone().unwrap_or_default();
    assert!(help.contains("filter(array=REF:t.days, condition_string='item != null')"), "{help}");
    let calls = Arc::new(Mutex::new(Vec::new()));
    let run = desk
        .run(&plan.to_string(), tdsl::Value::Null, recording(calls.clone()), &RunPlanOptions::default())
        .expect("it runs");
    let text = run.to_json().to_string();
    assert_eq!(run.status, RunStatus::Partial, "{text}");
    assert!(text.contains("o[1]: argument `since` is null, which the tool's schema does not allow"), "{text}");
    let calls = calls.lock().expect("lock").clone();
    assert_eq!(calls.len(), 2, "the null child is not called: {calls:?}");
    assert_eq!(calls[1], ("list_orders".to_string(), json!({"id": "c2", "since": "2026-01-01"})));
    // The help applied: no warning, and no child fails.
    let mut applied = plan.clone();
    applied["instructions"][1]["transform_responses"]["transforms"]["present"] =
        json!("filter(array=['2026-01-01', REF:c.city], condition_string='item != null')");
    applied["instructions"][2]["parallel_execution"]["iterate_over"] = json!("REF:t.present");
    let check = desk.check_value(&applied);
    assert!(check.diagnostics.is_empty(), "{}", check.render());
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
    // A list's first element, the step run only when the list has one: no warning.
    let first = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c2"}},
        {"execution_id": "t", "transform_responses": {"transforms": {"ids": "[REF:c.id]"}}},
        {"execution_id": "o", "tool_definition_path": "x/list_orders",
         "conditions": [{"param": "REF:t.ids.length", "operator": "greater_than", "value": 0}],
         "arguments": {"id": "REF:t.ids.first"}}
    ], "response_reference_map": {"n": "REF:o.n"}});
    let check = desk(shop()).check_value(&first);
    assert!(check.diagnostics.is_empty(), "{}", check.render());
    let mut unguarded = first.clone();
    unguarded["instructions"][2]["conditions"] = json!([{"param": "REF:c.city", "operator": "exists"}]);
    assert_eq!(codes(&desk(shop()).check_value(&unguarded)), ["W1330"]);
}

/// Tools for the renderings below: a repository with maintainers (objects), a job with a
/// `status` of its own.
fn others() -> Vec<UpstreamTool> {
    let repo = json!({"type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]});
    vec![
        tool(
            "get_repo",
            repo.clone(),
            Some(json!({"type": "object", "properties": {
                "maintainers": {"type": "array", "items": {"type": "object", "properties": {
                    "login": {"type": "string"}, "email": {"type": "string"}}, "required": ["login"]}}
            }, "required": ["maintainers"]})),
        ),
        tool(
            "get_job",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
            Some(json!({"type": "object", "properties": {
                "id": {"type": "integer"}, "status": {"type": "string"}}, "required": ["id", "status"]})),
        ),
    ]
    .into_iter()
    .chain(shop())
    .collect()
}

/// The one diagnostic of `plan` with `code` (the plan has no other error), rendered.
fn rendered(plan: &Json, code: &str) -> String {
    let check = desk(others()).check_value(plan);
    let errors: Vec<&str> = check.diagnostics.iter().filter(|d| d.code.starts_with('E')).map(|d| d.code).collect();
    assert!(errors.iter().all(|c| *c == code) && errors.len() <= 1, "{}", check.render());
    let found: Vec<_> = check.diagnostics.iter().filter(|d| d.code == code).collect();
    assert_eq!(found.len(), 1, "{}", check.render());
    found[0].rendered.clone()
}

/// Finding 12: `contains` with a string on a list of objects is `E0616`, its help the
/// `any(…)` over the objects' string field.
#[test]
fn contains_a_string_in_objects_renders() {
    let plan = json!({"instructions": [
        {"execution_id": "r", "tool_definition_path": "x/get_repo", "arguments": {"repo": "o/r"}},
        {"execution_id": "j", "tool_definition_path": "x/get_job", "arguments": {"id": 1},
         "conditions": [{"param": "REF:r.maintainers", "operator": "contains", "value": "bob"}]}
    ], "response_reference_map": {"status": "REF:j.status"}});
    insta::assert_snapshot!("contains_a_string_in_objects", rendered(&plan, "E0616"));
    // A list of strings: `contains` means what it says.
    let strings = json!({"instructions": [
        {"execution_id": "j", "tool_definition_path": "x/get_job", "arguments": {"id": 1},
         "conditions": [{"param": ["bob", "ada"], "operator": "contains", "value": "bob"}]}
    ], "response_reference_map": {"status": "REF:j.status"}});
    let check = desk(others()).check_value(&strings);
    assert!(check.diagnostics.is_empty(), "{}", check.render());
}

/// Finding 16: a field the tool's schema does not list is `E1320` saying the tool does not
/// declare it (not that it is null), with the by-key read in the help; that read checks.
#[test]
fn a_field_the_schema_does_not_list_renders_with_the_read_by_key() {
    let plan = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c1"}},
        {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:c"}, "transforms": {"p": "r.phone"}}}
    ], "response_reference_map": {"p": "REF:t.p"}});
    let shown = rendered(&plan, "E1320");
    assert!(shown.contains("`x/get_customer` declares no field `phone` in its result"), "{shown}");
    insta::assert_snapshot!("field_not_declared", shown);
    let mut by_key = plan.clone();
    by_key["instructions"][1]["transform_responses"]["transforms"]["p"] = json!("r['phone']");
    let check = desk(others()).check_value(&by_key);
    assert!(check.ok() && check.diagnostics.is_empty(), "{}", check.render());
}

/// Finding 18: text joined with a number is one `E0202` (the `+`s after it are not
/// reported again), naming `to_string`.
#[test]
fn string_plus_number_is_one_error() {
    let plan = json!({"instructions": [
        {"execution_id": "j", "tool_definition_path": "x/get_job", "arguments": {"id": 1},
         "transform_responses": {"variables": {"r": "REF:response"},
                                 "transforms": {"line": "'Job #' + r.id + ': ' + r.status"}}}
    ], "response_reference_map": {"line": "REF:j.line"}});
    insta::assert_snapshot!("string_plus_number", rendered(&plan, "E0202"));
}

/// Finding 19: `continue_on_error` over a tool with a `status` of its own is `W1331`; over
/// one without, nothing.
#[test]
fn continue_on_error_over_a_status_renders() {
    let plan = |tool: &str, arg: &str, over: Json| {
        json!({"instructions": [
            {"execution_id": "jobs", "tool_definition_path": tool, "continue_on_error": true,
             "parallel_execution": {"iterate_over": over, "child_argument_name": arg}, "arguments": {}}
        ], "response_reference_map": {"all": "REF:jobs.response"}})
    };
    insta::assert_snapshot!("failure_status", rendered(&plan("x/get_job", "id", json!([1, 2])), "W1331"));
    let check = desk(others()).check_value(&plan("x/get_customer", "id", json!(["c1"])));
    assert!(check.diagnostics.is_empty(), "{}", check.render());
}

/// Structured suggestions: a "did you mean" comes with the edit it means, the span and the
/// text as written there — a JSON key with its quotes, a name inside an expression without
/// — so that a tool applies it without reading the help's words.
#[test]
fn did_you_mean_comes_with_its_edit() {
    let plan = json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "search", "arguments": {"qury": "tdsl"},
         "transform_responses": {"transforms": {"n": "lenght(results)"}}}
    ], "response_reference_map": {"n": "REF:s.n"}});
    let check = desk(shop()).check_value(&plan);
    let edit = |code: &str| {
        let d = check.diagnostics.iter().find(|d| d.code == code).unwrap_or_else(|| panic!("{}", check.render()));
        let x = d.diagnostic.suggestion.as_ref().unwrap_or_else(|| panic!("{code}: no suggestion"));
        assert_eq!(x.applicability, tdsl::Applicability::MaybeIncorrect);
        (check.source[x.span.range()].to_string(), x.replacement.clone())
    };
    assert_eq!(edit("E0611"), ("\"qury\"".to_string(), "\"query\"".to_string()));
    assert_eq!(edit("E0102"), ("lenght".to_string(), "length".to_string()));
}

/// Outside round 11, finding 7: E0616's help, pasted as written, checks clean and runs to
/// the right answer whatever the value holds — quotes, a backslash, a newline, unicode: the
/// help computes the field's values and the condition keeps its value as written (the old
/// help put the value inside an expression inside a JSON string, escaped for one of the two).
#[test]
fn contains_in_objects_help_pastes_clean_for_any_value() {
    let login = |value: &str| {
        let value = value.to_string();
        Arc::new(move |call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
            let (_, tool) =
                call.endpoint().and_then(upstream_target).ok_or_else(|| ToolError::permanent("not upstream"))?;
            let answer = match tool {
                "get_repo" => json!({"maintainers": [{"login": "ada"}, {"login": value.clone()}]}),
                _ => json!({"id": 1, "status": "done"}),
            };
            Ok(serde_json::from_value(answer).expect("a value"))
        }) as Arc<dyn Runner>
    };
    for value in ["b'u\"g", "a\\'); x('", "a\nb", "naïve — ✓ \u{202e}", "\\\\\"\"''"] {
        let plan = json!({"instructions": [
            {"execution_id": "r", "tool_definition_path": "x/get_repo", "arguments": {"repo": "o/r"}},
            {"execution_id": "j", "tool_definition_path": "x/get_job", "arguments": {"id": 1},
             "conditions": [{"param": "REF:r.maintainers", "operator": "contains", "value": value}]}
        ], "response_reference_map": {"status": "REF:j.status"}});
        let desk = desk(others());
        let check = desk.check_value(&plan);
        assert_eq!(codes(&check), ["E0616"], "{}", check.render());
        let help = check.diagnostics[0].help.clone().unwrap_or_default();
        // The help's step, as written in it, and its param.
        let step_text =
            help.split_once("transform step, ").and_then(|(_, r)| r.split_once(", and make")).expect("a step").0;
        let step: Json = serde_json::from_str(step_text).unwrap_or_else(|e| panic!("{value:?}: {e}: {step_text}"));
        let param = help.split_once("condition's param \"").and_then(|(_, r)| r.split_once('"')).expect("a param").0;
        let mut applied = plan.clone();
        applied["instructions"].as_array_mut().expect("steps").push(step);
        applied["instructions"][1]["conditions"][0]["param"] = json!(param);
        let check = desk.check_value(&applied);
        assert!(check.ok() && check.diagnostics.is_empty(), "{value:?}: {}", check.render());
        let run =
            desk.run(&applied.to_string(), tdsl::Value::Null, login(value), &RunPlanOptions::default()).expect("runs");
        assert_eq!(run.status, RunStatus::Success, "{}", run.to_json());
        assert_eq!(run.to_json()["result"], json!({"status": "done"}), "{value:?}: the step ran");
        let other = desk.run(&applied.to_string(), tdsl::Value::Null, login("zed"), &RunPlanOptions::default());
        assert_eq!(other.expect("runs").to_json()["result"], json!({"status": null}), "{value:?}: skipped");
    }
}

/// Outside round 11, finding 10: a check's answer stays about the size of the plan — a long
/// value is quoted cut in a message or help (`'abc…' (2,000 characters)`), the JSON answer
/// carries no rendering (the text block does), and the renderings together are bounded.
#[test]
fn a_check_answer_of_long_values_stays_near_the_plan_size() {
    let long = "\"'\\".repeat(800);
    let conditions: Vec<Json> =
        (0..50).map(|_| json!({"param": "REF:r.maintainers", "operator": "contains", "value": long})).collect();
    let plan = json!({"instructions": [
        {"execution_id": "r", "tool_definition_path": "x/get_repo", "arguments": {"repo": "o/r"}},
        {"execution_id": "j", "tool_definition_path": "x/get_job", "arguments": {"id": 1}, "conditions": conditions}
    ], "response_reference_map": {"status": "REF:j.status"}});
    let text = serde_json::to_string_pretty(&plan).expect("JSON");
    assert!(text.len() > 200_000, "{}", text.len());
    let check = desk(others()).check_value(&plan);
    assert_eq!(check.counts().0, 50, "{}", check.render());
    let answer = check.to_json().to_string().len() + serde_json::to_string(&check.render()).expect("JSON").len();
    assert!(answer < 2 * text.len(), "an answer of {answer} bytes for a plan of {}", text.len());
    let d = &check.diagnostics[0];
    assert!(d.help.as_deref().is_some_and(|h| h.contains("…' (2,400 characters)")), "{:?}", d.help);
    assert!(check.to_json()["diagnostics"][0].get("rendered").is_none());
}

/// Outside round 11, finding 7: a help offers an expression to paste only when it checks;
/// text that is no tdsl expression (`c.city.upper()` without its REF, an unbalanced call) gets
/// a help that says so and shows none, where it was copied into the transform as written.
#[test]
fn a_help_never_offers_text_that_does_not_check() {
    let plan = json!({"instructions": [
        {"execution_id": "c", "tool_definition_path": "x/get_customer", "arguments": {"id": "c1"}}
    ], "response_reference_map": {"a": "c.city.upper()", "b": "REF:c.city + (", "ok": "upper(REF:c.city)"}});
    let check = desk(shop()).check_value(&plan);
    let help = |p: &str| {
        let d = check.diagnostics.iter().find(|d| d.pointer == p).unwrap_or_else(|| panic!("{}", check.render()));
        d.help.clone().unwrap_or_default()
    };
    for p in ["/response_reference_map/a", "/response_reference_map/b"] {
        let h = help(p);
        assert!(h.contains("no tdsl expression either") && h.contains("<a tdsl expression>"), "{p}: {h}");
        assert!(!h.contains("upper()") && !h.contains("+ ("), "{p}: {h}");
    }
    assert!(help("/response_reference_map/ok").contains("{\"value\":\"upper(REF:c.city)\"}"));
}
