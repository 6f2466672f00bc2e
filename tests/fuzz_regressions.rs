//! Replays saved fuzz inputs on stable Rust, through the same entry points as the cargo-fuzz
//! targets (`tdsl::fuzzing`), so CI guards every crash ever found without a nightly
//! toolchain:
//!
//! * `fuzz/regressions/<target>/*` — every input that ever crashed a target, one file each,
//!   named after the bug (see `docs/fuzzing.md`);
//! * the seed corpus — `tests/data/expr/**/*.tdsl` through `parse` and `compile`,
//!   `tests/data/tool/**/*.tool` through `check_tool`, `tests/data/check/**/*.tool` and
//!   `examples/**/*.tool` through `check_tool` and `run`.
//!
//! To add a crash: copy the artifact from `fuzz/artifacts/<target>/` into
//! `fuzz/regressions/<target>/<what-it-was>` with the fix.

use std::path::{Path, PathBuf};

type Entry = fn(&[u8]);

const TARGETS: [(&str, Entry); 6] = [
    ("parse", tdsl::fuzzing::parse),
    ("compile", tdsl::fuzzing::compile),
    ("eval", tdsl::fuzzing::eval),
    ("check_tool", tdsl::fuzzing::tool),
    ("value_ops", tdsl::fuzzing::value_ops),
    ("run", tdsl::fuzzing::run),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, ext));
        } else if ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Runs `entry` on each file; returns the files that panicked.
fn replay(entry: Entry, inputs: &[PathBuf], prepare: fn(Vec<u8>) -> Vec<u8>) -> Vec<String> {
    let mut failed = Vec::new();
    for path in inputs {
        let data = prepare(std::fs::read(path).expect("readable input"));
        if std::panic::catch_unwind(|| entry(&data)).is_err() {
            failed.push(path.display().to_string());
        }
    }
    failed
}

fn as_is(data: Vec<u8>) -> Vec<u8> {
    data
}

/// A `.tdsl` test file without its `# vars:` / `# fuel:` header lines, as `fuzz/seed.sh`
/// writes it into the corpus.
fn expression_only(data: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8(data).expect("test files are UTF-8");
    text.lines().filter(|l| !l.starts_with("# ")).map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

#[test]
fn every_saved_crash_replays_cleanly() {
    let dir = root().join("fuzz/regressions");
    let mut failed = Vec::new();
    let mut count = 0;
    for sub in std::fs::read_dir(&dir).expect("fuzz/regressions exists").flatten() {
        let name = sub.file_name().to_string_lossy().into_owned();
        let (_, entry) = TARGETS
            .iter()
            .find(|(t, _)| *t == name)
            .unwrap_or_else(|| panic!("fuzz/regressions/{name} is not a fuzz target"));
        let inputs = files(&sub.path(), None);
        count += inputs.len();
        failed.extend(replay(*entry, &inputs, as_is));
    }
    assert!(count > 0, "no regression inputs found under {}", dir.display());
    assert!(failed.is_empty(), "these inputs panic:\n{}", failed.join("\n"));
}

#[test]
fn seed_corpus_replays_cleanly() {
    let exprs = files(&root().join("tests/data/expr"), Some("tdsl"));
    let tools = files(&root().join("tests/data/tool"), Some("tool"));
    assert!(exprs.len() > 10 && tools.len() > 10, "the seed corpus moved");
    let mut failed = replay(tdsl::fuzzing::parse, &exprs, expression_only);
    failed.extend(replay(tdsl::fuzzing::compile, &exprs, expression_only));
    failed.extend(replay(tdsl::fuzzing::tool, &tools, as_is));
    let mut composites = files(&root().join("tests/data/check"), Some("tool"));
    composites.extend(files(&root().join("examples"), Some("tool")));
    assert!(composites.len() > 50, "the seed corpus moved");
    failed.extend(replay(tdsl::fuzzing::tool, &composites, as_is));
    failed.extend(replay(tdsl::fuzzing::run, &composites, as_is));
    assert!(failed.is_empty(), "these inputs panic:\n{}", failed.join("\n"));
}
