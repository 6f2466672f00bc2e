//! Declaration constraints (SPEC §5 ext: `enum`, `minimum`, `maximum`, `min_length`,
//! `max_length`, `pattern`, `items`, `default`): read and checked with the declaration,
//! enforced where arguments and responses are validated (`tdsl run`, `serve --mcp`),
//! checked statically against literals (the error cases are in `tests/data/check/err` and
//! `tests/data/tool/err`), exported (`tests/export.rs`).

mod common;
use common::tdsl;

use proptest::prelude::*;
use serde_json::json;
use tdsl::testing::tool::{Constraints, TypeName};
use tdsl::Value;

const ROOT: &str = "tests/data/check/root";

/// A tool root with `/tools/bounded.tool`, a primitive that echoes its arguments and
/// declares constraints, and composites that call it.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    std::fs::write(
        tools.join("bounded.tool"),
        r#"{
  "description": "Echoes a bounded level, a code and tags",
  "arguments": [
    {"name": "level", "type_name": "integer", "required": true, "minimum": 1, "maximum": 5},
    {"name": "code", "type_name": "string", "pattern": "^[A-Z]{3}$"},
    {"name": "tags", "type_name": "list", "items": {"type_name": "string", "max_length": 3}, "max_length": 2}
  ],
  "responses": [
    {"name": "level", "type_name": "integer", "minimum": 1}
  ],
  "system_event_endpoint": "builtin:echo"
}"#,
    )
    .expect("write");
    std::fs::write(
        dir.path().join("main.tool"),
        r#"{
  "arguments": [
    {"name": "level", "type_name": "integer", "required": true},
    {"name": "code", "type_name": "string"}
  ],
  "instructions": [
    {"execution_id": "b", "tool_definition_path": "/tools/bounded.tool",
     "arguments": {"level": "REF:arguments.level", "code": "REF:arguments.code"}}
  ],
  "response_reference_map": {"level": "REF:b.level"},
  "responses": [{"name": "level", "type_name": "integer"}]
}"#,
    )
    .expect("write");
    std::fs::write(
        dir.path().join("direct.tool"),
        r#"{
  "arguments": [{"name": "level", "type_name": "integer", "required": true}, {"name": "tags", "type_name": "list"}],
  "instructions": [
    {"execution_id": "b", "tool_definition_path": "/tools/bounded.tool",
     "arguments": {"level": "REF:arguments.level", "tags": "REF:arguments.tags"}}
  ]
}"#,
    )
    .expect("write");
    std::fs::write(tools.join("echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("write");
    std::fs::write(
        dir.path().join("resp.tool"),
        r#"{
  "arguments": [{"name": "level", "type_name": "integer", "required": true}],
  "responses": [{"name": "level", "type_name": "integer", "minimum": 1}],
  "instructions": [{"execution_id": "e", "tool_definition_path": "/tools/echo.tool", "arguments": {"level": "REF:arguments.level"}}],
  "response_reference_map": {"level": "REF:e.level"}
}"#,
    )
    .expect("write");
    dir
}

fn run(dir: &tempfile::TempDir, tool: &str, args: &[&str]) -> common::Out {
    let d = dir.path().to_str().expect("utf-8");
    let mut all = vec!["run", tool, "--root", d];
    for a in args {
        all.push("--arg");
        all.push(a);
    }
    tdsl(&all)
}

#[test]
fn run_enforces_constraints_on_the_callees_arguments() {
    let dir = root();
    let o = run(&dir, "/main.tool", &["level=3", r#"code="ABC""#]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&o.stdout).expect("JSON"), json!({"level": 3}));

    let o = run(&dir, "/main.tool", &["level=0"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stderr.contains("argument `level` of `/tools/bounded.tool` must be at least 1 (`minimum`), and it is 0"),
        "{}",
        o.stderr
    );

    let o = run(&dir, "/main.tool", &["level=2", r#"code="abc""#]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stderr.contains(r#"argument `code` of `/tools/bounded.tool` must match the pattern `^[A-Z]{3}$` (`pattern`), and it is "abc""#),
        "{}",
        o.stderr
    );
}

#[test]
fn run_enforces_constraints_on_lists_and_their_elements() {
    let dir = root();
    let o = run(&dir, "/direct.tool", &["level=9"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("must be at most 5 (`maximum`)"), "{}", o.stderr);
    let o = run(&dir, "/direct.tool", &["level=1", r#"tags=["ab", "abcd"]"#]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("element 1: must have at most 3 characters (`max_length`)"), "{}", o.stderr);
    let o = run(&dir, "/direct.tool", &["level=1", r#"tags=["a", "b", "c"]"#]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("must have at most 2 elements (`max_length`)"), "{}", o.stderr);
    let o = run(&dir, "/direct.tool", &["level=1", r#"tags=["ab"]"#]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn the_seed_003_enum_is_enforced_at_run_time_when_the_value_comes_from_a_ref() {
    // The composite passes its own argument through: only the run can see the value.
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("main.tool");
    std::fs::write(
        &main,
        r#"{
  "arguments": [{"name": "direction", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "add", "tool_definition_path": "/tools/add_objective.tool",
     "arguments": {"name": "Commute", "measure": "Minutes per day", "direction": "REF:arguments.direction", "is_fundamental": true}}
  ],
  "response_reference_map": {"id": "REF:add.objective_id"}
}"#,
    )
    .expect("write");
    let main = main.to_str().expect("utf-8");
    let o = tdsl(&["run", main, "--root", ROOT, "--arg", r#"direction="up""#]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stderr.contains(r#"argument `direction` of `/tools/add_objective.tool` must be one of "higher", "lower", "target" (`enum`), and it is "up""#),
        "{}",
        o.stderr
    );
    // `tdsl check` cannot know the value, so the file checks clean.
    let o = tdsl(&["check", main, "--root", ROOT]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn responses_are_checked_against_their_constraints() {
    let dir = root();
    let o = run(&dir, "/resp.tool", &["level=2"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = run(&dir, "/resp.tool", &["level=0"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stderr.contains("response `level` of `") && o.stderr.contains("must be at least 1 (`minimum`), and it is 0"),
        "{}",
        o.stderr
    );
}

#[test]
fn check_reports_a_literal_outside_an_enum_with_its_span() {
    let o = tdsl(&["check", "tests/data/check/err/literal_outside_enum.tool", "--root", ROOT, "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let d = diags.as_array().and_then(|a| a.iter().find(|d| d["code"] == "E0630")).expect("an E0630");
    assert_eq!(
        d["message"],
        r#"argument `direction` of `/tools/add_objective.tool` must be one of "higher", "lower", "target" (`enum`)"#
    );
    // The span is the literal `"up"` on line 4.
    assert_eq!(
        (d["line"].as_u64(), d["end_column"].as_u64().zip(d["column"].as_u64()).map(|(e, s)| e - s)),
        (Some(4), Some(4))
    );
}

fn load(src: &str) -> tdsl::testing::tool::ToolDef {
    let (def, diags) = tdsl::testing::tool::load(src);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    def.expect("loads")
}

#[test]
fn items_refines_a_plain_list_and_defaults_are_kept() {
    let def = load(
        r#"{"arguments": [
            {"name": "xs", "type_name": "list", "items": "integer"},
            {"name": "ys", "items": {"type_name": "string", "enum": ["a", "b"]}},
            {"name": "mode", "type_name": "string", "enum": ["fast", "slow"], "default": "fast"}
        ], "system_event_endpoint": "builtin:echo"}"#,
    );
    assert_eq!(def.arguments[0].type_or_any(), TypeName::List(Some(Box::new(TypeName::Integer))));
    assert_eq!(def.arguments[1].type_or_any(), TypeName::List(Some(Box::new(TypeName::String))));
    assert_eq!(def.arguments[2].constraints.default.as_ref().map(|d| d.node.clone()), Some(Value::str("fast")));
    let ys = &def.arguments[1].constraints;
    assert_eq!(ys.violation(&Value::from(json!(["a", "b"]))), None);
    let v = ys.violation(&Value::from(json!(["a", "c"]))).expect("a violation");
    assert_eq!(v.to_string(), r#"element 1: must be one of "a", "b" (`enum`)"#);
}

#[test]
fn mcp_arguments_are_validated_with_constraints() {
    let def = std::fs::read_to_string(format!("{ROOT}/tools/add_objective.tool")).expect("read");
    let def = load(&def);
    let ok = json!({"name": "n", "measure": "m", "direction": "lower", "is_fundamental": false});
    assert!(tdsl::testing::export::validate_arguments(&def, &ok).is_ok());
    let mut bad = ok.clone();
    bad["direction"] = json!("sideways");
    assert_eq!(
        tdsl::testing::export::validate_arguments(&def, &bad).unwrap_err(),
        r#"argument `direction` must be one of "higher", "lower", "target" (`enum`), and it is "sideways""#
    );
}

fn bounded() -> Constraints {
    load(
        r#"{"arguments": [{"name": "x", "minimum": -2.5, "maximum": 7, "min_length": 1, "max_length": 4, "pattern": "^a"}],
            "system_event_endpoint": "builtin:echo"}"#,
    )
    .arguments[0]
        .constraints
        .clone()
}

proptest! {
    /// Numbers break exactly the bound they are outside of; other kinds ignore numeric bounds.
    #[test]
    fn numeric_bounds(n in -100.0f64..100.0) {
        let c = bounded();
        let v = c.violation(&Value::Float(n)).map(|v| v.key);
        let want = if n < -2.5 { Some("minimum") } else if n > 7.0 { Some("maximum") } else { None };
        prop_assert_eq!(v, want);
    }

    /// Strings break the length bounds by their number of characters, then the pattern.
    #[test]
    fn string_bounds(s in "[aé]{0,8}") {
        let c = bounded();
        let n = s.chars().count();
        let v = c.violation(&Value::str(&s)).map(|v| v.key);
        let want = if n < 1 { Some("min_length") } else if n > 4 { Some("max_length") } else if !s.starts_with('a') { Some("pattern") } else { None };
        prop_assert_eq!(v, want);
    }
}
