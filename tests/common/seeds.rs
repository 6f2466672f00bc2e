//! The source documents (`seeds/…`), which the workspace keeps beside the repository, not in
//! it: the tests that read them verbatim find them here.
//!
//! Where they are looked for, in order: the folder `TDSL_SEEDS` names, then `shared/seeds`
//! beside the crate's directory or any of its ancestors (a git worktree sits deeper than the
//! crate). In a bare clone they are absent: such a test then prints one line saying so and
//! passes, so that the rest of the suite runs. `TDSL_REQUIRE_SEEDS=1` (which `.ci/run`
//! sets) makes their absence a failure that lists the places tried.

// Not every test binary that includes `common` reads the seeds.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The variable naming the folder of the seed documents.
pub const SEEDS_VAR: &str = "TDSL_SEEDS";
/// The variable that makes missing seed documents a failure rather than a note.
pub const REQUIRE_VAR: &str = "TDSL_REQUIRE_SEEDS";

/// The places `name` is looked for, in order.
pub fn candidates(name: &str) -> Vec<PathBuf> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os(SEEDS_VAR).filter(|d| !d.is_empty()) {
        tried.push(PathBuf::from(dir).join(name));
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    tried.extend(manifest.ancestors().map(|dir| dir.join("shared/seeds").join(name)));
    tried
}

/// Whether absent seed documents fail the test (`TDSL_REQUIRE_SEEDS` set to anything but
/// `0` or nothing).
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The text of the seed document `name` (`004_558a319b9772510b.txt`), or `None` — after one
/// line on standard error naming the test's subject — when it is not to be found and
/// [`required`] is false. Panics, listing where it looked, when it is required.
pub fn text(name: &str) -> Option<String> {
    let tried = candidates(name);
    for path in &tried {
        if let Ok(text) = std::fs::read_to_string(path) {
            return Some(text);
        }
    }
    if required() {
        panic!(
            "the seed document {name} is required ({REQUIRE_VAR} is set) and is not in any of:\n{}\n\
             set {SEEDS_VAR}=DIR to the folder that has it",
            tried.iter().map(|p| format!("  {}", p.display())).collect::<Vec<_>>().join("\n")
        );
    }
    // Straight to standard error: the test harness captures `eprintln!` of a passing test,
    // and this line is meant to be seen.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "seed document {name} not found (set {SEEDS_VAR}=DIR to run this test): not checked here"
    );
    None
}
