//! What the benches share: the tool root they check or run against, and the chain of steps
//! the engine and history benches run.

use std::path::{Path, PathBuf};

/// A fresh tool root in the temp folder, `tdsl-bench-NAME-PID`, holding `files` (a path
/// under the root and its text; folders are made as needed). The bench removes it.
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
