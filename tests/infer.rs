//! Types from use (issue 18): the soundness property, `--explain-types` and the library API.
//!
//! The one-behaviour files (an error and its clean twin per kind of use) are in
//! `tests/data/check/{err,ok}/infer_*.tool`, run by `tests/check.rs`.

mod common;
mod exec_support;

use std::path::Path;

use exec_support::{executor, json, root, Script};
use proptest::prelude::*;
use tdsl::testing::analysis::{explain_types, Analyzer, ToolRoot, TypeAtKind};
use tdsl::testing::diagnostic::Code;
use tdsl::testing::exec::{Options, RunStatus, Workflow};
use tdsl::Value;

const R: &str = "REF:fetch.v";

/// One use of `REF:fetch.v`, as a step (or a part of the tool), written with `{R}`.
#[derive(Clone, Copy, Debug)]
enum UseKind {
    Transform(&'static str),
    ArgumentPath,
    Condition(&'static str, &'static str),
    IterateOver,
    Sink(&'static str),
    Response(&'static str, bool),
    OwnResponse(&'static str),
}

const TRANSFORMS: &[&str] = &[
    "map(array={R}, template=\"item\")",
    "sum(array={R})",
    "join(array={R})",
    "upper({R})",
    "{R} * 2",
    "{R} + 1",
    "-{R}",
    "{R} < 3",
    "{R} > null",
    "{R} + REF:arguments.go",
    "length({R})",
    "{R}.name",
    "if(REF:arguments.go, upper({R}), {R} * 2)",
    "REF:arguments.go and {R} - 1",
    "filter(array={R}, condition_string=\"item - 1\")",
];

const TYPES: &[&str] = &["string", "number", "integer", "boolean", "list", "object", "file", "any"];

fn use_kind() -> impl Strategy<Value = UseKind> {
    prop_oneof![
        proptest::sample::select(TRANSFORMS).prop_map(UseKind::Transform),
        Just(UseKind::ArgumentPath),
        (
            proptest::sample::select(&["greater_than", "starts_with", "contains", "in", "equals", "exists"][..]),
            proptest::sample::select(&["3", "\"a\"", "[1, 2]", "null"][..]),
        )
            .prop_map(|(op, v)| UseKind::Condition(op, v)),
        Just(UseKind::IterateOver),
        proptest::sample::select(TYPES).prop_map(UseKind::Sink),
        (proptest::sample::select(TYPES), any::<bool>()).prop_map(|(t, r)| UseKind::Response(t, r)),
        proptest::sample::select(&["v - 1", "upper(v)", "map(array=v, template=\"item\")", "v.name"][..])
            .prop_map(UseKind::OwnResponse),
    ]
}

/// How a step's use is guarded: always, behind a condition, with `continue_on_error`.
#[derive(Clone, Copy, Debug)]
enum Guard {
    Always,
    Condition,
    ContinueOnError,
}

fn guard() -> impl Strategy<Value = Guard> {
    prop_oneof![3 => Just(Guard::Always), 1 => Just(Guard::Condition), 1 => Just(Guard::ContinueOnError)]
}

fn value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        (-5i64..5).prop_map(serde_json::Value::from),
        Just(serde_json::json!(2.5)),
        proptest::sample::select(&["", "a", "abc", "x/y.md"][..]).prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::Array),
            proptest::collection::vec((proptest::sample::select(&["name", "path", "k"][..]), inner), 0..3)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// The composite: a producer `fetch` (a tool that declares nothing) and one step or tool
/// part per use.
fn composite(uses: &[(UseKind, Guard)]) -> String {
    let mut steps = vec![r#"{"execution_id": "fetch", "tool_definition_path": "/tools/any.tool"}"#.to_string()];
    let mut responses = Vec::new();
    let mut map = Vec::new();
    let mut own = Vec::new();
    for (n, (kind, g)) in uses.iter().enumerate() {
        let guard = match g {
            Guard::Always => String::new(),
            Guard::Condition => {
                r#", "conditions": [{"param": "REF:arguments.go", "operator": "equals", "value": true}]"#.to_string()
            }
            Guard::ContinueOnError => r#", "continue_on_error": true"#.to_string(),
        };
        let id = format!("u{n}");
        let step = |body: String| {
            format!(r#"{{"execution_id": "{id}", "tool_definition_path": "/tools/any.tool"{body}{guard}}}"#)
        };
        match kind {
            UseKind::Transform(t) => {
                let e = serde_json::to_string(&t.replace("{R}", R)).expect("a string");
                steps.push(step(format!(r#", "transform_arguments": {{"transforms": {{"out": {e}}}}}"#)));
            }
            UseKind::ArgumentPath => steps.push(step(format!(r#", "arguments": {{"a": "{R}.name"}}"#))),
            UseKind::Condition(op, v) => {
                let value = if *op == "exists" { String::new() } else { format!(r#", "value": {v}"#) };
                steps.push(format!(
                    r#"{{"execution_id": "{id}", "tool_definition_path": "/tools/any.tool", "conditions": [{{"param": "{R}", "operator": "{op}"{value}}}]{}}}"#,
                    if matches!(g, Guard::ContinueOnError) { r#", "continue_on_error": true"# } else { "" }
                ));
            }
            UseKind::IterateOver => steps.push(step(format!(
                r#", "parallel_execution": {{"iterate_over": "{R}", "child_argument_name": "item"}}"#
            ))),
            UseKind::Sink(t) => {
                let callee = format!("/tools/sink_{t}.tool");
                steps.push(format!(
                    r#"{{"execution_id": "{id}", "tool_definition_path": "{callee}", "arguments": {{"x": "{R}"}}{guard}}}"#
                ));
            }
            UseKind::Response(t, required) => {
                responses.push(format!(r#"{{"name": "{id}", "type_name": "{t}", "required": {required}}}"#));
                map.push(format!(r#""{id}": "{R}""#));
            }
            UseKind::OwnResponse(t) => own.push(format!(r#""o{n}": {}"#, serde_json::to_string(t).expect("a string"))),
        }
    }
    if !own.is_empty() {
        steps[0] = format!(
            r#"{{"execution_id": "fetch", "tool_definition_path": "/tools/any.tool", "transform_responses": {{"transforms": {{{}}}}}}}"#,
            own.join(", ")
        );
    }
    let mut tool = format!(
        r#"{{"arguments": [{{"name": "go", "type_name": "boolean", "required": true}}], "instructions": [{}]"#,
        steps.join(",\n")
    );
    if !map.is_empty() {
        tool.push_str(&format!(
            r#", "responses": [{}], "response_reference_map": {{{}}}"#,
            responses.join(", "),
            map.join(", ")
        ));
    }
    tool.push('}');
    tool
}

fn tool_root_files(main: &str) -> Vec<(String, String)> {
    let mut files = vec![
        ("/tools/any.tool".to_string(), r#"{"system_event_endpoint": "builtin:echo"}"#.to_string()),
        ("main.tool".to_string(), main.to_string()),
    ];
    for t in TYPES {
        files.push((
            format!("/tools/sink_{t}.tool"),
            format!(
                r#"{{"arguments": [{{"name": "x", "type_name": "{t}", "required": true}}], "system_event_endpoint": "builtin:echo"}}"#
            ),
        ));
    }
    files
}

fn check(dir: &Path, types_from_use: bool) -> tdsl::testing::analysis::CheckedTool {
    let mut analyzer = Analyzer::with_engine(ToolRoot::new(dir), tdsl::testing::exec::engine());
    analyzer.set_types_from_use(types_from_use);
    analyzer.check_file(&dir.join("main.tool")).expect("readable")
}

/// What happened to one generated composite: `None` when the declared types alone reject
/// it (it has no plan to run); otherwise the errors `check` reports with types from use, the
/// run's status, and the composite.
fn run_case(uses: &[(UseKind, Guard)], v: &serde_json::Value, go: bool) -> Option<(Vec<String>, RunStatus, String)> {
    let main = composite(uses);
    let files = tool_root_files(&main);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let dir = root("infer", &refs);
    let plain = check(&dir, false);
    if plain.has_errors() {
        let _ = std::fs::remove_dir_all(&dir);
        return None;
    }
    let inferred = check(&dir, true);
    let errors: Vec<String> =
        inferred.diagnostics.iter().filter(|d| d.is_error()).map(|d| format!("{} {}", d.code, d.message)).collect();
    let analyzer = Analyzer::with_engine(ToolRoot::assumed(&dir), tdsl::testing::exec::engine());
    let wf = Workflow::from_checked(analyzer, plain).expect("a plan");
    let answer: Value = json(&format!(r#"{{"v": {v}}}"#));
    let script = Script::new().on("/tools/any.tool", move |call, _| {
        // The producer (called with no argument) answers `{"v": …}`; the other steps echo
        // their arguments.
        Ok(if call.arguments.as_object().is_some_and(|a| a.is_empty()) {
            answer.clone()
        } else {
            call.arguments.clone()
        })
    });
    let args = json(&format!(r#"{{"go": {go}}}"#));
    let run = executor(&script, &exec_support::clock(), Options::default()).run(&wf, args).expect("not refused");
    let _ = std::fs::remove_dir_all(&dir);
    Some((errors, run.status, main))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Soundness: whenever a run with some mock answer succeeds, `check` reports no error
    /// for that composite (it may report warnings). The run uses the plan the analysis
    /// makes without types from use, so that composites `check` rejects still run.
    #[test]
    fn a_composite_some_run_completes_checks_without_error(
        uses in proptest::collection::vec((use_kind(), guard()), 1..4),
        v in value(),
        go in any::<bool>(),
    ) {
        if let Some((errors, status, main)) = run_case(&uses, &v, go) {
            if status == RunStatus::Success || status == RunStatus::Partial {
                prop_assert!(errors.is_empty(), "the run with v = {v} ended {status:?}, and check reports {errors:?}\n{main}");
            }
        }
    }
}

/// The property is not vacuous: composites the generator makes are rejected by `check`,
/// and then no answer lets their run succeed; their clean twins run with some answer.
#[test]
fn rejected_composites_never_run_and_their_twins_do() {
    let answers = ["null", "true", "3", "2.5", "\"abc\"", "[1, 2]", "[]", r#"{"name": "n"}"#, "{}"];
    let cases: &[(&[(UseKind, Guard)], bool)] = &[
        (&[(UseKind::Transform("upper({R})"), Guard::Always), (UseKind::Transform("{R} * 2"), Guard::Always)], true),
        (
            &[
                (UseKind::Transform("sum(array={R})"), Guard::Always),
                (UseKind::Response("object", true), Guard::Always),
            ],
            true,
        ),
        (&[(UseKind::IterateOver, Guard::Always), (UseKind::Sink("string"), Guard::Always)], true),
        (&[(UseKind::ArgumentPath, Guard::Always), (UseKind::OwnResponse("v - 1"), Guard::Always)], true),
        (
            &[
                (UseKind::Condition("greater_than", "3"), Guard::Always),
                (UseKind::Response("list", true), Guard::Always),
            ],
            true,
        ),
        // Twins: a value satisfies every certain use, or the conflict is in a conditional use.
        (
            &[
                (UseKind::Transform("upper({R})"), Guard::Always),
                (UseKind::Transform("length({R}) * 2"), Guard::Always),
            ],
            false,
        ),
        (
            &[(UseKind::Transform("sum(array={R})"), Guard::Always), (UseKind::Response("list", true), Guard::Always)],
            false,
        ),
        (
            &[(UseKind::Transform("upper({R})"), Guard::Always), (UseKind::Transform("{R} * 2"), Guard::Condition)],
            false,
        ),
    ];
    for (uses, rejected) in cases {
        let mut succeeded = Vec::new();
        for a in answers {
            for go in [false, true] {
                let v: serde_json::Value = serde_json::from_str(a).expect("JSON");
                let (errors, status, main) = run_case(uses, &v, go).expect("the declared types accept it");
                assert_eq!(!errors.is_empty(), *rejected, "{errors:?}\n{main}");
                if status == RunStatus::Success {
                    succeeded.push(format!("{a} (go: {go})"));
                }
            }
        }
        if *rejected {
            assert!(succeeded.is_empty(), "{uses:?} is rejected, and its run succeeds with {succeeded:?}");
        } else {
            assert!(!succeeded.is_empty(), "{uses:?}: no answer lets the run succeed");
        }
    }
}

// ---- explain_types, the library API ----

#[test]
fn explain_types_gives_every_ref_variable_and_output_in_source_order() {
    let source = r#"{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/fetch.tool"},
    {"execution_id": "report", "tool_definition_path": "/tools/report.tool",
     "arguments": {"n": "REF:fetch.count"},
     "transform_arguments": {
       "variables": {"rows": "REF:fetch.rows"},
       "transforms": {"names": "map(array=rows, template=\"item.name\")", "twice": "REF:fetch.count * 2"}}}
  ]
}"#;
    let mut analyzer = Analyzer::new(ToolRoot::assumed("/nonexistent-tdsl-root"));
    let types = explain_types(&mut analyzer, "main.tool", source);
    let shown: Vec<String> = types
        .iter()
        .map(|t| format!("{} {} `{}`: {}", t.kind.as_str(), &source[t.span.range()], t.name, t.shown()))
        .collect();
    assert_eq!(
        shown,
        [
            "ref REF:fetch.count `REF:fetch.count`: any (from its uses: number)",
            "variable \"rows\" `rows`: any (from its uses: list | null)",
            "ref REF:fetch.rows `REF:fetch.rows`: any (from its uses: list | null)",
            "output \"names\" `names`: list",
            "output \"twice\" `twice`: number",
            "ref REF:fetch.count `REF:fetch.count`: any (from its uses: number)",
        ],
        "{shown:#?}"
    );
    assert!(types.windows(2).all(|w| w[0].span.start <= w[1].span.start));
    assert_eq!(types.iter().filter(|t| t.kind == TypeAtKind::Output).count(), 2);
}

#[test]
fn without_types_from_use_nothing_is_inferred_or_reported() {
    let path = Path::new("tests/data/check/err/seed_66_complete_example_verbatim.tool");
    let mut analyzer = Analyzer::new(ToolRoot::new("tests/data/check/root"));
    analyzer.set_types_from_use(false);
    let checked = analyzer.check_file(path).expect("readable");
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    assert!(checked.types.iter().all(|t| t.inferred.is_none()));
    let mut analyzer = Analyzer::new(ToolRoot::new("tests/data/check/root"));
    let checked = analyzer.check_file(path).expect("readable");
    let errors: Vec<Code> = checked.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code).collect();
    assert_eq!(errors, [Code::ConflictingUses]);
    let d = checked.diagnostics.iter().find(|d| d.is_error()).expect("the error");
    // The primary label at the response, related labels at both `map`s and the `sum`.
    assert_eq!(&checked.source[d.span.range()], "REF:aggregate_results.summary");
    let related: Vec<&str> = d.secondary.iter().map(|l| &checked.source[l.span.range()]).collect();
    assert_eq!(related, ["aggregated_data", "aggregated_data", "summary_data"]);
}

// ---- the command line ----

#[test]
fn check_explain_types_prints_the_types_on_stdout() {
    let o = common::tdsl(&[
        "check",
        "tests/data/check/ok/infer_conditional_use.tool",
        "--root",
        "tests/data/check/root",
        "--explain-types",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!(o.stdout);
    assert!(o.stderr.ends_with("checked 1 file: 0 errors, 0 warnings\n"), "{}", o.stderr);
    let o = common::tdsl(&[
        "check",
        "tests/data/check/err/infer_conditional_use.tool",
        "--root",
        "tests/data/check/root",
        "--explain-types",
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let types: serde_json::Value = serde_json::from_str(&o.stdout).expect("a JSON array");
    let rows: Vec<&serde_json::Value> =
        types.as_array().expect("array").iter().filter(|t| t["name"] == "REF:fetch.rows").collect();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["kind"], "ref");
        assert_eq!(r["type"], "any");
        assert_eq!(r["inferred"], "list | null");
        assert!(r["line"].as_u64().is_some() && r["column"].as_u64().is_some());
    }
    assert!(o.stderr.contains("W0650"), "{}", o.stderr);
}
