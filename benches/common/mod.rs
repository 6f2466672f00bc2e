//! What the benches share: the tool root they check or run against.

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
