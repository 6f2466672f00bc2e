//! The lean library (issue 16): which crates each feature brings, measured with
//! `cargo tree` over the repository's lock file, against the promises of
//! `docs/embedding.md` — heavy crates come only with the feature that needs them, and the
//! table of crate counts there is what `cargo tree` says now.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Every package compiled for a configuration (normal and build dependencies, tdsl
/// included), by name.
fn crates(features: &str) -> BTreeSet<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(manifest).args([
        "tree",
        "--offline",
        "--locked",
        "--no-default-features",
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run `cargo tree`: {e}"));
    assert!(
        out.status.success(),
        "`cargo tree --features {features:?}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let version = words.next()?;
            Some(format!("{name} {version}"))
        })
        .collect()
}

fn names(set: &BTreeSet<String>) -> BTreeSet<&str> {
    set.iter().filter_map(|c| c.split(' ').next()).collect()
}

/// Heavy crates and the feature that alone may bring each one (rustls: either of two).
const HEAVY: &[(&str, &str)] = &[
    ("rayon", "engine"),
    ("shell-words", "engine"),
    ("ureq", "http"),
    ("rustls", "http|mcp-http"),
    ("tokio-rustls", "mcp-http"),
    ("tokio", "mcp"),
    ("rmcp", "mcp"),
    ("hyper", "mcp-http"),
    ("hyper-util", "mcp-http"),
    ("rusqlite", "history"),
    ("lsp-server", "lsp"),
    ("lsp-types", "lsp"),
    ("rustyline", "repl"),
    ("arbitrary", "fuzzing"),
    ("clap", "cli"),
    ("indicatif", "cli"),
    ("mimalloc", "cli"),
    ("temporalio-sdk", "temporal"),
];

#[test]
fn the_language_alone_has_no_runtime_network_terminal_or_parser_of_command_lines() {
    let lean = crates("");
    let lean = names(&lean);
    for (heavy, _) in HEAVY {
        assert!(!lean.contains(heavy), "`{heavy}` is in the build without features");
    }
    for needed in ["pest", "serde_json", "indexmap", "miette"] {
        assert!(lean.contains(needed), "`{needed}` is missing from the build without features");
    }
}

#[test]
fn each_heavy_crate_comes_with_its_feature_and_no_other() {
    let features = ["engine", "http", "mcp", "mcp-http", "history", "lsp", "repl", "fuzzing", "cli"];
    // The features each one turns on (Cargo.toml), so that `mcp-http` may bring `tokio`.
    fn implied(f: &'static str) -> Vec<&'static str> {
        match f {
            "http" | "mcp" | "history" => vec![f, "engine"],
            "mcp-http" => vec![f, "mcp", "engine"],
            "cli" => vec![f, "engine", "http", "mcp", "mcp-http", "history", "lsp", "repl"],
            _ => vec![f],
        }
    }
    for f in features {
        let got = crates(f);
        let got = names(&got);
        let on = implied(f);
        for (heavy, owner) in HEAVY {
            assert_eq!(
                got.contains(heavy),
                owner.split('|').any(|o| on.contains(&o)),
                "with `--features {f}`, `{heavy}` (which belongs to `{owner}`) is {}",
                if got.contains(heavy) { "present" } else { "absent" }
            );
        }
    }
}

#[test]
fn the_crate_counts_of_docs_embedding_are_true() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/embedding.md"))
        .unwrap_or_else(|e| panic!("docs/embedding.md: {e}"));
    let mut rows = 0;
    for line in doc.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| Features")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let (Some(first), Some(count)) = (cells.first(), cells.last()) else { continue };
        let Ok(count) = count.parse::<usize>() else { continue };
        let features = if first.starts_with("*(none)") { String::new() } else { first.replace(['`', ' '], "") };
        let features = features.trim_end_matches("*(default)*").to_string();
        let measured = crates(&features).len();
        assert_eq!(
            measured, count,
            "docs/embedding.md says {count} crates for `{features}`; `cargo tree` counts {measured} now"
        );
        rows += 1;
    }
    assert_eq!(rows, 11, "docs/embedding.md's table has eleven configurations");
}

/// `cargo test --no-default-features` (CI's lean run) builds no `tdsl` binary, yet compiles
/// every test target without `required-features`: a test that starts the binary must declare
/// `cli`, or it fails there with "No such file or directory" (it did, for four of them).
#[test]
fn every_test_that_starts_the_binary_requires_the_cli_feature() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .current_dir(manifest)
        .args(["metadata", "--offline", "--no-deps", "--format-version", "1"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `cargo metadata`: {e}"));
    assert!(out.status.success(), "`cargo metadata` failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let features = &meta["packages"][0]["features"];
    // Whether `feature` is `cli` or brings it.
    fn brings_cli(features: &serde_json::Value, feature: &str, depth: usize) -> bool {
        feature == "cli"
            || (depth < 16
                && features[feature]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|f| f.as_str().is_some_and(|f| brings_cli(features, f, depth + 1))))
    }
    let mut requires_cli = BTreeSet::new();
    for target in meta["packages"][0]["targets"].as_array().into_iter().flatten() {
        let is_test = target["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "test"));
        let cli = target["required-features"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f.as_str().is_some_and(|f| brings_cli(features, f, 0))));
        if is_test && cli {
            requires_cli.insert(target["name"].as_str().unwrap_or_default().to_string());
        }
    }
    let mut missing = Vec::new();
    let mut starting = 0;
    for entry in std::fs::read_dir(manifest.join("tests")).expect("tests/") {
        let path = entry.expect("an entry of tests/").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !(text.contains(concat!("CARGO_BIN_EXE_", "tdsl")) || text.contains(concat!("common::", "tdsl("))) {
            continue;
        }
        starting += 1;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if !requires_cli.contains(&name) {
            missing.push(name);
        }
    }
    assert!(starting > 20, "found only {starting} tests that start the binary; the scan is wrong");
    assert!(
        missing.is_empty(),
        "tests that start `tdsl` without `required-features = [\"cli\"]` in Cargo.toml: {missing:?}"
    );
}
