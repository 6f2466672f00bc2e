//! What the benches share: the tool root they check or run against, the chain of steps
//! the engine and history benches run, and the transform block the checker's benches and
//! its tests check (`tests/common/blocks.rs`).

use std::path::{Path, PathBuf};

// `transform_block`.
include!("../../tests/common/blocks.rs");

/// A fresh tool root in the temp folder, `tdsl-bench-NAME-PID`, holding `files` (a path
/// under the root and its text; folders are made as needed). The bench removes it.
#[allow(dead_code)] // not every bench checks against a root
pub fn tool_root(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdsl-bench-{name}-{}", std::process::id()));
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new("."))).expect("temp dir");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    dir
}

/// A composite of `n` steps calling `/tools/t.tool`, each passing on the one before it
/// (`REF:s{i-1}.v`), its result the last step's.
#[allow(dead_code)] // not every bench runs a chain
pub fn chain(n: usize) -> String {
    let steps: Vec<String> = (0..n)
        .map(|i| {
            let arg = if i == 0 { "1".to_string() } else { format!("\"REF:s{}.v\"", i - 1) };
            format!(
                r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/t.tool", "arguments": {{"v": {arg}}}}}"#
            )
        })
        .collect();
    format!(r#"{{"instructions": [{}], "response_reference_map": {{"v": "REF:s{}.v"}}}}"#, steps.join(","), n - 1)
}

/// A composite of `n` steps calling `/tools/t.tool` side by side (one level), its result the
/// first step's.
#[allow(dead_code)] // not every bench runs it
pub fn wide(n: usize) -> String {
    let steps: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/t.tool", "arguments": {{"v": {i}}}}}"#)
        })
        .collect();
    format!(r#"{{"instructions": [{}], "response_reference_map": {{"v": "REF:s0.v"}}}}"#, steps.join(","))
}

/// A composite fanning `/tools/t.tool` out over its argument `items` ([`items`]).
#[allow(dead_code)] // not every bench runs it
pub const FAN_OUT: &str = r#"{
  "arguments": [{"name": "items", "type_name": "list", "required": true}],
  "instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
    "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "x"}}],
  "response_reference_map": {"n": "REF:fan.response.length"}
}"#;

/// The arguments of [`FAN_OUT`]: `items`, the integers `0..n`.
#[allow(dead_code)] // not every bench runs it
pub fn items(n: usize) -> tdsl::Value {
    tdsl::Value::object_from([("items", tdsl::Value::list((0..n as i64).map(tdsl::Value::Int).collect()))])
}
