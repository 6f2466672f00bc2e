//! What `tests/budgets.rs` (the library) and `tests/budgets_cli.rs` (the binary) share.
//! Two files so that the function table can run in an optimised build of the lean
//! library with the engine alone (`.ci/run`), without an optimised build of the binary.

use std::time::Duration;

/// Far more than any case needs on a loaded machine; a case that hangs would run for hours.
pub const WATCHDOG: Duration = Duration::from_secs(120);

/// The 40-step pipeline that builds 2^40 nodes from `current`, then `last`.
pub fn pipeline(last: &str) -> String {
    let ops = vec!["[current, current]"; 40].join(", ");
    format!("pipeline(initial_value=1, operations=[{ops}, {last}])")
}

/// Two trees of 2^40 nodes, equal but sharing nothing (one of `1`s, one of `1.0`s), so
/// comparing them walks every node; then `last`.
pub fn twins(last: &str) -> String {
    let ops = vec!["[[current[0], current[0]], [current[1], current[1]]]"; 40].join(", ");
    format!("pipeline(initial_value=[1, 1.0], operations=[{ops}, {last}])")
}

/// A composite whose step `a` has a 1 s timeout and a `transform_arguments` that runs
/// about 10^12 iterations (`n` comes from the run's arguments, so nothing folds at compile
/// time); `after` depends on it.
pub const SLOW_TRANSFORM: &str = r#"{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/answer.tool", "timeout_seconds": 1,
     "retry": {"max_retries": 0},
     "arguments": {"n": "REF:arguments.n"},
     "transform_arguments": {"transforms": {
       "m": "count(range(n), condition_string=count(range(n), condition_string=true) > 0)"}}},
    {"execution_id": "after", "tool_definition_path": "/tools/answer.tool", "arguments": {"x": "REF:a.m"}}
  ]
}"#;

/// A fresh root holding [`SLOW_TRANSFORM`] as `/slow.tool` and the tool it calls.
pub fn slow_transform_root(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tdsl-budgets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).expect("temp dir");
    std::fs::write(dir.join("slow.tool"), SLOW_TRANSFORM).expect("writes the tool");
    std::fs::write(dir.join("tools/answer.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("writes");
    dir
}
