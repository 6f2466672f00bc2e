//! Closed results (`docs/plans.md`, "Closed results"): in a plan, a callee that declares
//! what it returns returns exactly that, so a field read on its result that it does not
//! declare is `E1320`, naming the tool. What JSON Schema leaves open stays open; a `.tool`
//! file under `tdsl check` keeps callees' results open. Then the hostile round on it and
//! on `E1322` (`docs/security.md`, "Hostile round 9"): each bounded in time, never a panic.

mod common;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value as Json};
use tdsl::testing::plans::{PlanCheck, PlanDesk, UpstreamTool};

use common::{cpu_bounded as bounded, tdsl};

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

/// A plan that calls `x/TOOL` and reads `EXPR` of its result, held in the variable `r`.
fn reading(tool: &str, expr: &str) -> Json {
    json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": format!("x/{tool}"), "arguments": {}},
        {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:s"}, "transforms": {"v": expr}}}
    ], "response_reference_map": {"v": "REF:t.v"}})
}

fn codes(check: &PlanCheck) -> Vec<&str> {
    check.diagnostics.iter().map(|d| d.code).collect()
}

const OBJECT: &str = "object";

fn obj(props: Json) -> Json {
    json!({"type": OBJECT, "properties": props})
}

/// Each output schema, and whether reading a field it does not declare is `E1320`.
#[test]
fn what_json_schema_leaves_open_stays_open() {
    let a = json!({"a": {"type": "string"}});
    let with = |extra: Json| {
        let mut s = obj(a.clone());
        for (k, v) in extra.as_object().expect("object") {
            s[k] = v.clone();
        }
        s
    };
    let cases: Vec<(&str, Option<Json>, &str, bool)> = vec![
        // `additionalProperties` false, or absent (the SDKs' models: see `closed_schema`).
        ("closed", Some(with(json!({"additionalProperties": false}))), "r.b", true),
        ("absent", Some(obj(a.clone())), "r.b", true),
        // Open: other fields allowed, by a schema, by a pattern.
        ("open", Some(with(json!({"additionalProperties": true}))), "r.b", false),
        ("typed_extra", Some(with(json!({"additionalProperties": {"type": "integer"}}))), "r.b", false),
        ("pattern", Some(with(json!({"patternProperties": {"^x_": {"type": "string"}}}))), "r.x_1", false),
        // No output schema: nothing is known of the result.
        ("none", None, "r.b", false),
        // Nested: an object property is closed or open as its own schema says.
        ("nested", Some(obj(json!({"item": obj(json!({"id": {"type": "string"}}))}))), "r.item.idd", true),
        (
            "nested_open",
            Some(obj(
                json!({"item": {"type": OBJECT, "properties": {"id": {"type": "string"}}, "additionalProperties": true}}),
            )),
            "r.item.idd",
            false,
        ),
        // Untyped parts are any value.
        ("untyped", Some(obj(json!({"data": {}}))), "r.data.anything", false),
        ("any_object", Some(obj(json!({"data": {"type": OBJECT}}))), "r.data.anything", false),
        // A union of objects: a field one alternative has may be there; none has it, never.
        (
            "either",
            Some(obj(
                json!({"v": {"anyOf": [obj(json!({"p": {"type": "string"}})), obj(json!({"q": {"type": "integer"}}))]}}),
            )),
            "r.v.q",
            false,
        ),
        (
            "neither",
            Some(obj(
                json!({"v": {"oneOf": [obj(json!({"p": {"type": "string"}})), obj(json!({"q": {"type": "integer"}}))]}}),
            )),
            "r.v.z",
            true,
        ),
    ];
    let plans = desk(cases.iter().map(|(n, out, _, _)| tool(n, json!({"type": OBJECT}), out.clone())).collect());
    for (name, _, expr, refused) in &cases {
        let check = plans.check_value(&reading(name, expr));
        let got = codes(&check);
        assert_eq!(got.contains(&"E1320"), *refused, "{name}: {expr}: {got:?}\n{}", check.render());
        assert!(got.iter().all(|c| *c == "E1320"), "{name}: {got:?}\n{}", check.render());
    }
    // The top-level error names the tool as the plan writes it, with the declared fields.
    let check = plans.check_value(&reading("closed", "r.b"));
    let d = &check.diagnostics[0];
    assert!(d.message.starts_with("`x/closed` declares no field `b` in its result"), "{}", d.message);
    assert!(d.help.as_deref().is_some_and(|h| h.contains("known fields: a")), "{:?}", d.help);
}

/// `E1322` follows the same rule for an object inside an argument: a field a pattern
/// allows is not refused (the schema's `patternProperties` outlive its resolution).
#[test]
fn a_pattern_opens_an_argument_object() {
    let q = |extra: Json| {
        let mut s = obj(json!({"a": {"type": "string"}}));
        if let Some(m) = extra.as_object() {
            for (k, v) in m {
                s[k] = v.clone();
            }
        }
        json!({"type": OBJECT, "properties": {"q": s}})
    };
    let plans = desk(vec![
        tool("pattern_in", q(json!({"patternProperties": {"^x_": {"type": "integer"}}})), None),
        tool("closed_in", q(json!({})), None),
    ]);
    let call = |tool: &str| json!({"instructions": [{"execution_id": "s", "tool_definition_path": format!("x/{tool}"), "arguments": {"q": {"x_1": 1}}}]});
    let open = plans.check_value(&call("pattern_in"));
    assert!(codes(&open).is_empty(), "{}", open.render());
    let closed = plans.check_value(&call("closed_in"));
    assert_eq!(codes(&closed), ["E1322"], "{}", closed.render());
}

/// `tdsl check` keeps a callee's result open in a `.tool` file (its primitive callee may
/// return more than it declares): the same read is clean there and `E1320` in a plan.
#[test]
fn a_tool_file_keeps_results_open_and_a_plan_does_not() {
    let main = json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "/tools/search.tool", "arguments": {"query": "q"}},
        {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:s"}, "transforms": {"n": "r.totl"}}}
    ], "response_reference_map": {"n": "REF:t.n"}});
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("main.tool");
    std::fs::write(&file, main.to_string()).expect("write");
    let root = manifest().join("tests/data/plans/root");
    let out = tdsl(&["check", "--root", &root.to_string_lossy(), &file.to_string_lossy()]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, 0, "{text}");
    assert!(!text.contains("W0102"), "{text}");
    let check = desk(Vec::new()).check_value(&main);
    assert_eq!(codes(&check), ["E1320"], "{}", check.render());
    let d = &check.diagnostics[0];
    assert!(d.message.starts_with("`/tools/search.tool` declares no field `totl` in its result"), "{}", d.message);
    assert!(d.help.as_deref().is_some_and(|h| h.starts_with("did you mean `total`?")), "{:?}", d.help);
}

// `bounded` (`common::cpu_bounded`) runs a check, failing if it spends more than its limit
// of processor time (a hang guard: each bound is an order of magnitude under the defect it
// guards).

/// `$defs` that refer to each other two ways a level, 40 levels: 2^40 paths if followed.
fn defs_bomb() -> Json {
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(format!("D{i}"), obj(json!({"a": next, "b": next, "c": {"type": "string"}})));
    }
    defs.insert("D40".into(), obj(json!({"leaf": {"type": "string"}})));
    json!({"type": OBJECT, "$defs": defs, "properties": {"root": {"$ref": "#/$defs/D0"}}})
}

/// A schema whose object refers to itself.
fn recursive() -> Json {
    json!({"type": OBJECT, "$defs": {"N": obj(json!({"next": {"$ref": "#/$defs/N"}, "v": {"type": "integer"}}))},
           "properties": {"root": {"$ref": "#/$defs/N"}}})
}

/// A closed result of 20,000 fields, a `$defs` bomb, a recursive schema: the most steps a
/// plan has, each reading a misspelt field deep in the result, check in bounded time.
#[test]
fn hostile_closed_results_stay_bounded() {
    let wide: serde_json::Map<String, Json> =
        (0..20_000).map(|i| (format!("field_{i:05}"), json!({"type": "integer"}))).collect();
    let plans = desk(vec![
        tool("wide", json!({"type": OBJECT}), Some(json!({"type": OBJECT, "properties": wide}))),
        tool("bomb", json!({"type": OBJECT}), Some(defs_bomb())),
        tool("loop", json!({"type": OBJECT}), Some(recursive())),
    ]);
    let deep = |n: usize| format!("r.root{}.zz", ".a".repeat(n));
    for (name, expr) in [
        ("wide", "r.feild_00001".to_string()),
        ("bomb", deep(38)),
        ("bomb", "r.root.a.b.a.b.c.zz".to_string()),
        ("loop", format!("r.root{}.zz", ".next".repeat(200))),
    ] {
        let check = bounded(name, Duration::from_secs(20), || plans.check_value(&reading(name, &expr)));
        assert!(check.diagnostics.len() <= 50, "{name}");
    }
    // 63 transform steps, each reading 100 misspelt fields of the 20,000-field result.
    let reads: serde_json::Map<String, Json> =
        (0..100).map(|i| (format!("v{i}"), json!(format!("r.feild_{i:05}")))).collect();
    let mut steps = vec![json!({"execution_id": "s", "tool_definition_path": "x/wide", "arguments": {}})];
    for i in 1..64 {
        steps.push(json!({"execution_id": format!("t{i}"), "transform_responses": {"variables": {"r": "REF:s"}, "transforms": reads}}));
    }
    // 28 s of a debug build when each read copied the 20,000 names; 9 s now, most of it the
    // plan's suggestion allowance (`MAX_SUGGESTION_WORK`): the bound guards a hang, not
    // that defect alone (`docs/security.md`, "Hostile round 9").
    let check =
        bounded("6,300 misspelt reads", Duration::from_secs(45), || plans.check_value(&json!({"instructions": steps})));
    let (errors, _) = check.counts();
    assert!(errors >= 6_300, "every misspelt read is an error: {errors}");
    assert!(check.render().len() < 50 * 4_100, "the rendering is bounded");
}

/// `E1322` from the attacker's side: an argument object of tens of thousands of fields an
/// object schema of thousands does not declare, deeply nested arguments, and the schemas
/// of the bomb and the loop as input schemas.
#[test]
fn hostile_nested_arguments_stay_bounded() {
    let props: serde_json::Map<String, Json> =
        (0..5_000).map(|i| (format!("known_{i:04}"), json!({"type": "integer"}))).collect();
    let input = json!({"type": OBJECT, "properties": {"q": {"type": OBJECT, "properties": props}}});
    let bomb = json!({"type": OBJECT, "properties": {"q": defs_bomb()["properties"]["root"].clone()}, "$defs": defs_bomb()["$defs"].clone()});
    let looped = json!({"type": OBJECT, "properties": {"q": recursive()["properties"]["root"].clone()}, "$defs": recursive()["$defs"].clone()});
    let plans = desk(vec![tool("wide_in", input, None), tool("bomb_in", bomb, None), tool("loop_in", looped, None)]);
    let call = |tool: &str, q: Json| json!({"instructions": [{"execution_id": "s", "tool_definition_path": format!("x/{tool}"), "arguments": {"q": q}}]});
    // As many unknown fields as 256 KB holds.
    let unknown: serde_json::Map<String, Json> = (0..20_000).map(|i| (format!("u{i}"), json!(0))).collect();
    // 34 s of a debug build with the JSON loader's quadratic duplicate-key search (now
    // its unit test's, at a bound an order of magnitude under it); 6 s now, most of it
    // rendering the shown diagnostics against one 256 KB line.
    let check = bounded("20,000 unknown fields", Duration::from_secs(30), || {
        plans.check_value(&call("wide_in", Json::Object(unknown)))
    });
    let (errors, _) = check.counts();
    assert!(errors >= 20_000, "{errors}");
    assert!(check.render().len() < 50 * 4_100, "the rendering is bounded");
    // Nested as deep as a plan may be, through the bomb's and the loop's schemas.
    for (name, key) in [("bomb_in", "a"), ("loop_in", "next")] {
        let mut deep = json!({"zz": 1});
        for _ in 0..60 {
            deep = json!({key: deep, "zz": 1});
        }
        let check = bounded(name, Duration::from_secs(20), || plans.check(&call(name, deep).to_string()));
        assert!(check.diagnostics.len() <= 50, "{name}");
    }
    // A list of objects, each with unknown fields.
    let many: Vec<Json> = (0..10_000).map(|i| json!({"x": i})).collect();
    let input = json!({"type": OBJECT, "properties": {"q": {"type": "array", "items": obj(json!({"y": {"type": "integer"}}))}}});
    let plans = desk(vec![tool("list_in", input, None)]);
    bounded("10,000 objects", Duration::from_secs(20), || plans.check_value(&call("list_in", json!(many))));
}

/// The guard above counts this thread's processor time: work past its limit fails it (were
/// the time unreadable, every guard here would pass whatever it guards).
#[test]
#[should_panic(expected = "of processor time")]
fn the_guard_counts_processor_time() {
    let spin = || {
        let start = common::thread_cpu();
        let mut x = 0u64;
        while common::thread_cpu().saturating_sub(start) < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        x
    };
    bounded("a spin of 300 ms", Duration::from_millis(100), spin);
}
