//! The published JSON Schema of the `.tool` format (`docs/tool-format.schema.json`, what
//! `tdsl schema` prints, rendered from the one table of keys in `tdsl::testing::tool::keys`) held
//! against real files by an independent validator (issue 30): every `.tool` file the tests
//! read as good (`tests/data/**/ok`) and every example validates, and an unknown key is
//! refused at every level of the format — by the schema and by the loader alike.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tdsl::testing::tool::keys::Level;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("docs/tool-format.schema.json")).expect("the published schema");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("the schema is no valid JSON Schema: {e}"))
}

/// The `.tool` files under `dir`; `ok_only`: only those with an `ok` folder in their path.
fn tool_files(dir: &Path, ok_only: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            tool_files(&p, ok_only, out);
        } else if p.extension().is_some_and(|x| x == "tool")
            && (!ok_only || p.strip_prefix(repo()).unwrap_or(&p).components().any(|c| c.as_os_str() == "ok"))
        {
            out.push(p);
        }
    }
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

#[test]
fn every_good_tool_file_of_the_tests_and_the_examples_validates() {
    let v = validator();
    let mut files = Vec::new();
    tool_files(&repo().join("tests/data"), true, &mut files);
    // The engine cases' tools (tests/data/exec/README.md) are all good.
    tool_files(&repo().join("tests/data/exec"), false, &mut files);
    let from_tests = files.len();
    tool_files(&repo().join("examples"), false, &mut files);
    assert!(from_tests > 50 && files.len() > from_tests, "{from_tests} test files, {} in all", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // A byte order mark is not part of the JSON (RFC 8259 §8.1; tdsl skips it too).
        let doc: Value = match serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text)) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{}: not JSON: {e}", f.display()));
                continue;
            }
        };
        let errs = errors(&v, &doc);
        if !errs.is_empty() {
            failures.push(format!("{}: {}", f.display(), errs.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} files are refused:\n{}", failures.len(), files.len(), failures.join("\n"));
}

/// A composite with an object of every level, and where each is.
fn every_level() -> (Value, Vec<(Level, &'static str)>) {
    let doc = json!({
        "description": "every kind of object",
        "arguments": [{"name": "xs", "type_name": "list", "items": {"type_name": "string", "max_length": 3}}],
        "responses": [{"name": "n", "type_name": "integer"}],
        "instructions": [{
            "execution_id": "each",
            "tool_definition_path": "/tools/t.tool",
            "arguments": {"x": "REF:arguments.xs"},
            "transform_arguments": {"variables": {"v": 1}, "transforms": {"w": "v + 1"}},
            "conditions": [
                {"param": "REF:arguments.xs", "operator": "exists"},
                {"logic": "NOT", "conditions": [{"param": "REF:arguments.xs", "operator": "equals", "value": []}]}
            ],
            "parallel_execution": {"iterate_over": "REF:arguments.xs", "child_argument_name": "x"},
            "retry": {"max_retries": 1, "jitter": 0.1}
        }],
        "response_reference_map": {"n": "REF:each.n"}
    });
    let at = vec![
        (Level::Tool, ""),
        (Level::Instruction, "/instructions/0"),
        (Level::Param, "/arguments/0"),
        (Level::Element, "/arguments/0/items"),
        (Level::Transform, "/instructions/0/transform_arguments"),
        (Level::ConditionLeaf, "/instructions/0/conditions/0"),
        (Level::ConditionGroup, "/instructions/0/conditions/1"),
        (Level::Parallel, "/instructions/0/parallel_execution"),
        (Level::Retry, "/instructions/0/retry"),
    ];
    (doc, at)
}

#[test]
fn an_unknown_key_is_refused_at_every_level_by_the_schema_and_the_loader() {
    let v = validator();
    let (doc, at) = every_level();
    assert_eq!(errors(&v, &doc), Vec::<String>::new(), "the document with every level is valid");
    let (_, diags) = tdsl::testing::tool::load(&doc.to_string());
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    for level in Level::ALL {
        let pointer = at.iter().find(|(l, _)| *l == level).map(|(_, p)| *p);
        let pointer = pointer.unwrap_or_else(|| panic!("{level:?}: no object of this level in the test document"));
        let mut bad = doc.clone();
        bad.pointer_mut(pointer).and_then(Value::as_object_mut).unwrap().insert("colour".into(), json!(1));
        let errs = errors(&v, &bad);
        assert!(!errs.is_empty(), "{level:?} at `{pointer}`: the schema accepts an unknown key");
        let (_, diags) = tdsl::testing::tool::load(&serde_json::to_string_pretty(&bad).unwrap());
        assert!(
            diags.iter().any(|d| d.code.as_str() == "E0505" && d.message.contains("`colour`")),
            "{level:?}: the loader does not refuse the unknown key: {diags:?}"
        );
    }
}

#[test]
fn a_transform_step_is_valid_and_the_keys_of_a_call_are_refused_on_it_by_the_schema_and_the_loader() {
    use tdsl::testing::tool::keys::NOT_ON_TRANSFORM_STEPS;
    let v = validator();
    let doc = json!({
        "arguments": [{"name": "xs", "type_name": "list"}],
        "instructions": [
            {"execution_id": "a", "tool_definition_path": "/tools/t.tool"},
            {"execution_id": "join", "description": "joins", "expected_key": "joined", "dependencies": ["a"],
             "conditions": [{"param": "REF:a.n", "operator": "exists"}],
             "transform_responses": {"variables": {"n": "REF:a.n"}, "transforms": {"total": "n + 1"}}}
        ]
    });
    assert_eq!(errors(&v, &doc), Vec::<String>::new(), "a transform step is valid");
    let (_, diags) = tdsl::testing::tool::load(&doc.to_string());
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    let values = json!({
        "arguments": {"x": 1}, "transform_arguments": {"transforms": {"y": "1"}},
        "parallel_execution": {"iterate_over": [1], "child_argument_name": "x"}, "retry": {"max_retries": 1},
        "timeout_seconds": 5, "continue_on_error": true, "done_check": "true", "done_value": 1
    });
    for key in NOT_ON_TRANSFORM_STEPS {
        let mut bad = doc.clone();
        let value = values[*key].clone();
        assert!(!value.is_null(), "no test value for `{key}`");
        bad.pointer_mut("/instructions/1").and_then(Value::as_object_mut).unwrap().insert(key.to_string(), value);
        assert!(!errors(&v, &bad).is_empty(), "the schema accepts `{key}` on a transform step");
        let text = serde_json::to_string_pretty(&bad).unwrap();
        let (_, diags) = tdsl::testing::tool::load(&text);
        let d = diags.iter().find(|d| d.code.as_str() == "E0522").unwrap_or_else(|| panic!("`{key}`: {diags:?}"));
        assert_eq!(&text[d.span.range()], format!("\"{key}\""), "the span is the key");
    }
    // With neither a callee nor transforms, the step computes nothing: both refuse it.
    let mut bad = doc.clone();
    bad.pointer_mut("/instructions/1").and_then(Value::as_object_mut).unwrap().remove("transform_responses");
    assert!(!errors(&v, &bad).is_empty(), "the schema accepts a step with neither");
    let (_, diags) = tdsl::testing::tool::load(&bad.to_string());
    assert!(
        diags.iter().any(|d| d.code.as_str() == "E0504" && d.message.contains("tool_definition_path")),
        "{diags:?}"
    );
}
