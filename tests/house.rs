//! The house rules of `docs/architecture.md`, checked on the source tree (issue 42): the
//! modules import each other without a circle, a folder's files import each other without a
//! circle except the ones the architecture page explains, the engine (`exec/`) reaches none
//! of its adapters or drivers and starts no process, and no source file is over 1,000 lines.
//!
//! The imports are read from the code's text: `crate::NAME` paths (in `use` lines, in
//! `use crate::{a, b}` groups and inline) and `super::NAME` paths, outside comments and
//! outside `#[cfg(test)]` modules (a test may use whatever it tests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as paths relative to `src/`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(src()).expect("under src/").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without comments and without its `#[cfg(test)]` module (which comes
/// last in every file of this crate).
fn code(rel: &Path) -> String {
    let text = std::fs::read_to_string(src().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line.split(" // ").next().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The module path of a file: `exec/trace.rs` → `["exec", "trace"]`, `host/mcp_client/mod.rs`
/// → `["host", "mcp_client"]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// The identifiers that follow `prefix` in `code`, each with the rest of its path: for
/// `crate::` also the names inside a `crate::{a::b, c}` group.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                out.push(segments(item.trim()));
            }
        } else {
            out.push(segments(rest));
        }
    }
    out
}

fn segments(text: &str) -> Vec<String> {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(text.len());
    text[..end].split("::").filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// Which top-level modules each top-level module imports.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for rel in sources(&src()) {
        let here = module_of(&rel);
        let Some(top) = here.first().cloned() else { continue };
        for path in paths_after(&code(&rel), "crate::") {
            if let Some(first) = path.first().filter(|f| **f != top && src_has_module(f)) {
                graph.entry(top.clone()).or_default().insert(first.clone());
            }
        }
    }
    graph
}

fn src_has_module(name: &str) -> bool {
    src().join(format!("{name}.rs")).is_file() || src().join(name).is_dir()
}

/// Within each folder, which of its files (and sub-folders) each file imports.
fn file_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for rel in sources(&src()) {
        let here = module_of(&rel);
        let is_mod = rel.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
        // The folder this file's siblings are in, as a module path.
        let folder: Vec<String> = if is_mod { here.clone() } else { here[..here.len().saturating_sub(1)].to_vec() };
        let code = code(&rel);
        let mut targets: Vec<Vec<String>> = Vec::new();
        for p in paths_after(&code, "crate::") {
            if p.len() > folder.len() && p[..folder.len()] == folder[..] {
                targets.push(p[folder.len()..].to_vec());
            }
        }
        if !is_mod {
            targets.extend(paths_after(&code, "super::"));
        }
        let me = node(&folder, here.last().filter(|_| !is_mod).map(String::as_str));
        for t in targets {
            let Some(first) = t.first() else { continue };
            if first == "super" || first == "self" {
                continue;
            }
            let dir = src().join(folder.join("/"));
            if dir.join(format!("{first}.rs")).is_file() || dir.join(first).is_dir() {
                let target = node(&folder, Some(first));
                if target != me {
                    graph.entry(me.clone()).or_default().insert(target);
                }
            }
        }
    }
    graph
}

fn node(folder: &[String], file: Option<&str>) -> String {
    let mut parts = folder.to_vec();
    parts.push(file.unwrap_or("mod").to_string());
    parts.join("/")
}

/// The circles of a graph (strongly connected parts of more than one node), each sorted.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively deep enough for a source tree.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        if let Some(next) = s.graph.get(v) {
            for w in next {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                part.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.out.push(part);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

#[test]
fn the_modules_import_each_other_without_a_circle() {
    let graph = module_graph();
    assert!(graph.len() > 15, "read only {} modules' imports: the scan is wrong", graph.len());
    assert!(graph["cli"].contains("exec"), "the scan must see `cli` import `exec`");
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "modules that import each other in a circle");
}

/// The circles between the files of one folder that are one concept on purpose, each
/// explained in docs/architecture.md ("Circles kept on purpose").
const EXPLAINED_CIRCLES: &[&[&str]] = &[
    // One `Checker` over a tool, its methods split by concern across the folder's files.
    &["analysis/check", "analysis/infer", "analysis/lints", "analysis/refs", "analysis/transform"],
    // The MCP surface of plans and of skills: a skill is a saved plan, served beside them.
    &["mcp/plans", "mcp/skills"],
];

#[test]
fn a_folders_files_import_each_other_without_a_circle_unless_explained() {
    let graph = file_graph();
    assert!(
        graph.get("exec/scheduler").is_some_and(|t| t.contains("exec/step")),
        "the scan must see exec/scheduler.rs import exec/step.rs"
    );
    let found = circles(&graph);
    let explained: Vec<Vec<String>> =
        EXPLAINED_CIRCLES.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect();
    let unexplained: Vec<&Vec<String>> = found.iter().filter(|c| !explained.contains(c)).collect();
    assert!(unexplained.is_empty(), "files that import each other in a circle: {unexplained:?}");
    let gone: Vec<&Vec<String>> = explained.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        gone.is_empty(),
        "circles explained here that are gone (or changed): drop them here and in the docs: {gone:?}"
    );
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let section = doc
        .split("## Circles kept on purpose")
        .nth(1)
        .expect("docs/architecture.md has \"## Circles kept on purpose\"");
    let section = section.split("\n## ").next().unwrap_or(section);
    for circle in EXPLAINED_CIRCLES {
        for file in *circle {
            assert!(
                section.contains(&format!("`{file}.rs`")),
                "docs/architecture.md's circles section does not name `{file}.rs`"
            );
        }
    }
}

#[test]
fn the_engine_reaches_none_of_its_adapters_and_starts_nothing() {
    let graph = module_graph();
    let exec = &graph["exec"];
    for above in ["host", "mcp", "cli", "history", "compose", "temporal", "report", "lsp", "plans"] {
        assert!(!exec.contains(above), "exec/ imports `{above}`: the engine calls the world only through `Runner`");
    }
    for rel in sources(&src().join("exec")) {
        let code = code(&rel);
        for io in ["std::process", "std::net", "Command::new", "ureq::", "rmcp::", "tokio::", "hyper::"] {
            assert!(!code.contains(io), "{} uses `{io}`: I/O belongs in host/", rel.display());
        }
        if code.contains("std::fs") {
            assert_eq!(
                rel,
                Path::new("exec/workflow.rs"),
                "{} reads the file system; only loading a workflow's `.tool` files may",
                rel.display()
            );
        }
    }
}

/// No source file is over 1,000 lines: a file that grows past it is split by concept (a
/// type's methods by concern into child modules, as `analysis/check/` and `mcp/` are).
#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let mut long = Vec::new();
    for rel in sources(&src()) {
        let lines = std::fs::read_to_string(src().join(&rel)).map(|t| t.lines().count()).unwrap_or(0);
        if lines > 1000 {
            long.push(format!("{} ({lines})", rel.display()));
        }
    }
    assert!(sources(&src()).len() > 100, "read only {} source files: the scan is wrong", sources(&src()).len());
    assert!(long.is_empty(), "source files over 1,000 lines (split each by concept): {long:?}");
}
