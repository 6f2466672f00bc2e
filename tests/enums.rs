//! String enums (`docs/analysis.md`, "String enums"): a declared `enum` of strings is a
//! type, so a comparison with a value outside it (`E0207`) and a comparison of a value that
//! is never null with `null` (`W0103`) are found before anything runs. Here: the laws of
//! the subtyping and the join (a proptest), each diagnostic reported once and never for a
//! value that may be null or is untyped, `tdsl check` on the real binary, and the hostile
//! round on it (`docs/security.md`, "Hostile round 10"). The cases of the plan corpus
//! (`tests/data/plans/cases/enum_*.json`, `never_null_*`, `argument_outside_enum`) and of
//! `tests/data/check/err/` are the behaviour as data.

mod common;

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value as Json};
use tdsl::testing::plans::{PlanCheck, PlanDesk, UpstreamTool};
use tdsl::Type;

use common::{cpu_bounded as bounded, tdsl};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---- the laws ----

/// The values enums are drawn from: few, so that subsets, overlaps and equal sets are met.
const ALPHABET: [&str; 6] = ["open", "closed", "OPEN", "a", "b", ""];

/// An enum of some of [`ALPHABET`], sometimes with another type beside it.
fn a_type() -> impl Strategy<Value = Type> {
    let values = proptest::sample::subsequence(ALPHABET.to_vec(), 1..=ALPHABET.len()).prop_shuffle();
    let other = prop_oneof![Just(Type::Never), Just(Type::Null), Just(Type::Str), Just(Type::Int)];
    (values, other, any::<bool>()).prop_map(|(values, other, alone)| {
        let e = Type::string_enum(values);
        if alone {
            e
        } else {
            e.union(other)
        }
    })
}

fn yes(a: &Type, b: &Type) -> bool {
    a.fits(b) == tdsl::Fit::Yes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Subtyping is reflexive and transitive, and a join is an upper bound of both sides
    /// (in either order, and the same type whichever order).
    #[test]
    fn subtyping_and_join_laws(a in a_type(), b in a_type(), c in a_type()) {
        prop_assert!(yes(&a, &a), "{a} ⊑ {a}");
        if yes(&a, &b) && yes(&b, &c) {
            prop_assert!(yes(&a, &c), "{a} ⊑ {b} ⊑ {c}");
        }
        let ab = a.clone().union(b.clone());
        prop_assert!(yes(&a, &ab) && yes(&b, &ab), "{a}, {b} ⊑ {ab}");
        let ba = b.clone().union(a.clone());
        prop_assert!(yes(&ab, &ba) && yes(&ba, &ab), "{ab} ≡ {ba}");
        // An enum is a string; a join with `string` is `string`.
        prop_assert!(yes(&Type::string_enum(["x"]), &Type::Str));
        prop_assert_eq!(Type::string_enum(["x"]).union(Type::Str), Type::Str);
    }

    /// Enum A ⊑ enum B exactly when A's values are B's; a string (a one-value enum) fits
    /// an enum exactly when it is one of its values.
    #[test]
    fn subtyping_is_inclusion(
        xs in proptest::sample::subsequence(ALPHABET.to_vec(), 1..=ALPHABET.len()),
        ys in proptest::sample::subsequence(ALPHABET.to_vec(), 1..=ALPHABET.len()),
    ) {
        let (a, b) = (Type::string_enum(xs.iter().copied()), Type::string_enum(ys.iter().copied()));
        prop_assert_eq!(yes(&a, &b), xs.iter().all(|x| ys.contains(x)));
        for x in ALPHABET {
            prop_assert_eq!(yes(&Type::string_enum([x]), &b), ys.contains(&x));
        }
        let joined = a.union(b);
        let Type::Enum(e) = &joined else { panic!("{joined}") };
        let mut want: Vec<&str> = xs.clone();
        want.extend(ys.iter().filter(|y| !xs.contains(y)));
        prop_assert_eq!(e.values().collect::<Vec<_>>(), want, "the values once each, in order");
    }
}

// ---- plans: each diagnostic once, silence where nothing is certain ----

fn issues_tool(output: Json) -> UpstreamTool {
    UpstreamTool {
        server: "x".into(),
        name: "issues".into(),
        description: None,
        input_schema: json!({"type": "object", "properties": {
            "state": {"type": "string", "enum": ["open", "closed", "all"]},
            "sort": {"type": "string", "enum": ["created", "updated"]}
        }}),
        output_schema: Some(output),
    }
}

fn issue_list() -> Json {
    json!({"type": "object", "required": ["issues", "top_state"], "properties": {
        "top_state": {"type": "string", "enum": ["open", "closed"]},
        "issues": {"type": "array", "items": {
        "type": "object",
        "required": ["number", "state", "title"],
        "properties": {
            "number": {"type": "integer"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "title": {"type": "string"},
            "assignee": {"type": ["string", "null"]},
            "extra": {}
        }
    }}}})
}

fn desk(tools: Vec<UpstreamTool>) -> PlanDesk {
    PlanDesk::for_root(manifest().join("tests/data/plans/root"), &["/tools/*.tool"])
        .expect("the root loads")
        .with_upstream(tools)
}

/// A plan that calls `x/issues` with `args` and computes `v` from `EXPR` (`r` is the result).
fn plan(args: Json, expr: &str) -> Json {
    json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "x/issues", "arguments": args},
        {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:s"}, "transforms": {"v": expr}}}
    ], "response_reference_map": {"v": "REF:t.v"}})
}

fn codes(check: &PlanCheck) -> Vec<&str> {
    check.diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn each_comparison_is_reported_once_and_uncertain_ones_not_at_all() {
    let plans = desk(vec![issues_tool(issue_list())]);
    let cases: &[(&str, &[&str])] = &[
        ("filter(r.issues, \"item.state == 'OPEN'\")", &["E0207"]),
        ("filter(r.issues, \"'Closed' != item.state\")", &["E0207"]),
        ("filter(r.issues, \"item.title == null\")", &["W0103"]),
        ("filter(r.issues, \"null != item.number\")", &["W0103"]),
        // Nested in a template inside a template: once.
        ("map(r.issues, template=\"count(r.issues, condition_string='item.state == \\\"x\\\"')\")", &["E0207"]),
        // One of the values; a value that may be null; an untyped value; a string.
        ("filter(r.issues, \"item.state == 'open'\")", &[]),
        ("filter(r.issues, \"item.assignee == null\")", &[]),
        ("filter(r.issues, \"item.extra == null\")", &[]),
        ("filter(r.issues, \"item.extra == 'OPEN'\")", &[]),
        ("filter(r.issues, \"item.title == 'OPEN'\")", &[]),
        ("filter(r.issues, \"upper(item.state) == 'OPEN'\")", &[]),
        ("filter(r.issues, \"item.state + '' == 'OPEN'\")", &[]),
        // `.first` of a list may be null; an enum read through it keeps its values.
        ("r.issues.first.state == 'merged'", &["E0207"]),
        ("r.issues.first == null", &[]),
        ("r.issues.first.state == null", &[]),
        ("r.issues == null", &["W0103"]),
    ];
    for (expr, want) in cases {
        let check = plans.check_value(&plan(json!({}), expr));
        assert_eq!(codes(&check), *want, "{expr}\n{}", check.render());
    }
}

/// A literal argument outside a parameter's enum is `E0630` alone (not also a type error);
/// an enum-typed value passed on to a parameter whose enum holds its values checks clean,
/// and one whose values it never holds is a type error.
#[test]
fn arguments_outside_an_enum_are_one_diagnostic() {
    let plans = desk(vec![issues_tool(issue_list())]);
    let check = plans.check_value(&plan(json!({"state": "Open"}), "r"));
    assert_eq!(codes(&check), ["E0630"], "{}", check.render());
    assert!(check.diagnostics[0].help.as_deref().is_some_and(|h| h.contains("did you mean \"open\"?")));
    let passed_on = |param: &str| {
        json!({"instructions": [
            {"execution_id": "s", "tool_definition_path": "x/issues", "arguments": {}},
            {"execution_id": "again", "tool_definition_path": "x/issues", "arguments": {param: "REF:s.top_state"}}
        ]})
    };
    let check = plans.check_value(&passed_on("state"));
    assert_eq!(codes(&check), Vec::<&str>::new(), "{}", check.render());
    let check = plans.check_value(&passed_on("sort"));
    assert_eq!(codes(&check), ["E0613"], "{}", check.render());
    let d = &check.diagnostics[0];
    assert!(d.message.contains(r#""open" | "closed""#), "{}", d.message);
}

/// What a step that failed under `continue_on_error` leaves has `status: "failed"`, which is
/// no value of the callee's declared `status` enum: the step's `status` is then any string,
/// and a test for the failure is not judged; without `continue_on_error` it is.
#[test]
fn a_failure_left_by_continue_on_error_is_not_outside_the_enum() {
    let output = json!({"type": "object", "required": ["status"], "properties": {
        "status": {"type": "string", "enum": ["ok", "degraded"]}
    }});
    let plans = desk(vec![issues_tool(output)]);
    let with = |continue_on_error: bool| {
        json!({"instructions": [
            {"execution_id": "s", "tool_definition_path": "x/issues", "arguments": {}, "continue_on_error": continue_on_error},
            {"execution_id": "t", "transform_responses": {"variables": {"st": "REF:s.status"}, "transforms": {"v": "st == 'failed'"}}}
        ], "response_reference_map": {"v": "REF:t.v"}})
    };
    // No error; the warning that a failure and a result share `status` (`W1331`).
    let check = plans.check_value(&with(true));
    assert_eq!(codes(&check), ["W1331"], "{}", check.render());
    let check = plans.check_value(&with(false));
    assert_eq!(codes(&check), ["E0207"], "{}", check.render());
}

#[test]
fn the_diagnostics_render() {
    let plans = desk(vec![issues_tool(issue_list())]);
    let check =
        plans.check_value(&plan(json!({}), "filter(r.issues, \"item.state == 'OPEN' and item.title != null\")"));
    insta::assert_snapshot!("enum_and_null_comparisons", check.render());
}

// ---- `tdsl check` on the real binary ----

#[test]
fn tdsl_check_reports_them() {
    let root = manifest().join("tests/data/check/root");
    let root = root.to_string_lossy();
    let file = manifest().join("tests/data/check/err/enum_comparison_outside_values.tool");
    let out = tdsl(&["check", "--root", &root, &file.to_string_lossy()]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, 1, "{text}");
    assert_eq!(text.matches("E0207").count(), 2, "{text}");
    assert!(text.contains("did you mean \"closed\"?"), "{text}");
    // A warning passes, unless warnings are denied.
    let file = manifest().join("tests/data/check/err/null_comparison_never_null.tool");
    let out = tdsl(&["check", "--root", &root, &file.to_string_lossy()]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, 0, "{text}");
    assert_eq!(text.matches("W0103").count(), 2, "an expression and a condition: {text}");
    // A plan: a literal argument outside the callee's enum, and a comparison with one.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let plan_file = dir.path().join("plan.json");
    let plan = json!({"instructions": [
        {"execution_id": "i", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "7", "state": "opened"}},
        {"execution_id": "t", "transform_responses": {"variables": {"s": "REF:i.state"}, "transforms": {"open": "s == 'OPEN'"}}}
    ], "response_reference_map": {"open": "REF:t.open"}});
    std::fs::write(&plan_file, plan.to_string()).expect("write");
    let out = tdsl(&["check", "--root", &root, "--plan", &plan_file.to_string_lossy()]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, 1, "{text}");
    assert_eq!((text.matches("E0630").count(), text.matches("E0207").count()), (1, 1), "{text}");
}

// ---- the hostile round (`docs/security.md`, "Hostile round 10") ----

/// An output schema whose `state` is `enum` (held in `$defs`, reached by `$ref` from
/// every one of `refs` properties).
fn with_enum(values: Vec<Json>, refs: usize) -> Json {
    let mut props = serde_json::Map::new();
    props.insert("state".into(), json!({"$ref": "#/$defs/State"}));
    props.extend((0..refs).map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/State"}))));
    json!({"type": "object", "required": ["state"], "properties": props,
           "$defs": {"State": {"type": "string", "enum": values}}})
}

#[test]
fn hostile_enums_stay_bounded() {
    let compare = |tool: &str| {
        json!({"instructions": [
            {"execution_id": "s", "tool_definition_path": format!("x/{tool}"), "arguments": {}},
            {"execution_id": "t", "transform_responses": {"variables": {"r": "REF:s"}, "transforms": {"v": "r.state == 'OPEN'"}}}
        ], "response_reference_map": {"v": "REF:t.v"}})
    };
    let named = |name: &str, output: Json| UpstreamTool { name: name.into(), ..issues_tool(output) };
    // 100,000 values: past the bound of an enum (1,000) the value is a `string`.
    let huge: Vec<Json> = (0..100_000).map(|i| json!(format!("v{i}"))).collect();
    // 1,000 values of 4 KB each, the most an enum holds, each longer than a line.
    let long: Vec<Json> = (0..1_000).map(|i| json!(format!("{i:04}{}", "x".repeat(4_000)))).collect();
    // A 1,000-value enum in `$defs`, referenced from 2,000 properties.
    let wide: Vec<Json> = (0..1_000).map(|i| json!(format!("state_{i}"))).collect();
    // `anyOf` of 3,000 enums of 20 values each: 60,000 values joined, past the bound.
    let alts: Vec<Json> = (0..3_000)
        .map(|k| json!({"type": "string", "enum": (0..20).map(|i| format!("s{k}_{i}")).collect::<Vec<_>>()}))
        .collect();
    let many = json!({"type": "object", "required": ["state"], "properties": {"state": {"anyOf": alts}}});
    let plans = desk(vec![
        named("huge", with_enum(huge, 0)),
        named("long", with_enum(long, 0)),
        named("wide", with_enum(wide, 2_000)),
        named("many", many),
    ]);
    for (tool, want) in [("huge", &[][..]), ("long", &["E0207"][..]), ("wide", &["E0207"][..]), ("many", &[][..])] {
        let check = bounded(tool, Duration::from_secs(20), || plans.check_value(&compare(tool)));
        assert_eq!(codes(&check), want, "{tool}");
        for d in &check.diagnostics {
            // At most 40 values listed, each cut to 64 characters.
            let help = d.help.as_deref().unwrap_or_default();
            assert!(help.len() < 40 * 80 + 200, "{tool}: a help of {} bytes", help.len());
            assert!(d.message.len() < 200, "{tool}: {}", d.message);
        }
    }
    // 63 transform steps, each with 60 comparisons of the long enum, in templates (as many
    // as the largest plan holds).
    let transforms: serde_json::Map<String, Json> =
        (0..60).map(|i| (format!("v{i}"), json!(format!("filter(r.list, \"item.state == 'OPEN{i}'\")")))).collect();
    let long: Vec<Json> = (0..1_000).map(|i| json!(format!("{i:04}{}", "y".repeat(4_000)))).collect();
    let element = json!({"type": "object", "required": ["state"], "properties": {"state": {"$ref": "#/$defs/State"}}});
    let list = json!({"type": "object", "required": ["list"], "properties": {"list": {"type": "array", "items": element}},
                      "$defs": {"State": {"type": "string", "enum": long}}});
    let plans = desk(vec![named("list", list)]);
    let mut steps = vec![json!({"execution_id": "s", "tool_definition_path": "x/list", "arguments": {}})];
    for i in 1..64 {
        steps.push(json!({"execution_id": format!("t{i}"), "transform_responses": {"variables": {"r": "REF:s"}, "transforms": transforms}}));
    }
    let check =
        bounded("3,780 comparisons", Duration::from_secs(60), || plans.check_value(&json!({"instructions": steps})));
    let (errors, _) = check.counts();
    assert!(errors >= 3_780, "every comparison is an error: {errors}: {:?}", check.diagnostics.first());
    assert!(check.render().len() < 50 * 8_000, "the rendering is bounded");
}
