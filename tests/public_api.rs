//! The public API, listed in one checked file (issue 42): `docs/public-api.txt` holds every
//! name the crate's root exports (`pub use` in `src/lib.rs`, with the features it needs), and
//! for each type among them its public fields and methods (their first line). The list is
//! read from the source, so a change to the API that does not change that file fails here;
//! `TDSL_BLESS=1 cargo test --test public_api` writes the file anew, to be reviewed in the
//! diff like any other change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![manifest().join("src")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("src/") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file up to its `#[cfg(test)]` module (a `#[cfg(test)]` on anything else,
/// a `use` or a method, does not end it).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            let next = lines.peek().map_or("", |l| l.trim_start());
            let next = next.strip_prefix("pub(crate) ").or_else(|| next.strip_prefix("pub(super) ")).unwrap_or(next);
            if next.starts_with("mod ") {
                break;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The names `src/lib.rs` exports at the root, each with the `cfg` line above its `pub use`.
fn root_names() -> Vec<(String, String, String)> {
    let lib = code(&manifest().join("src/lib.rs"));
    let mut out = Vec::new();
    let mut cfg = String::new();
    let mut statement = String::new();
    let mut lines = lib.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        // A module written inline (the hidden `testing`): its name, not its body, which
        // `testing_names` reads.
        if statement.is_empty() && t.starts_with("pub mod ") && t.ends_with('{') {
            let name = t.trim_start_matches("pub mod ").trim_end_matches([' ', '{']);
            out.push((format!("mod {name}"), std::mem::take(&mut cfg), name.to_string()));
            let mut depth = 1;
            for inner in lines.by_ref() {
                depth += inner.matches('{').count();
                depth -= inner.matches('}').count();
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        if t.starts_with("#[cfg(") && statement.is_empty() {
            cfg = t.to_string();
            continue;
        }
        if statement.is_empty() && !(t.starts_with("pub use ") || t.starts_with("pub mod ")) {
            if !t.starts_with("//") {
                cfg.clear();
            }
            continue;
        }
        statement.push_str(t);
        statement.push(' ');
        if !t.ends_with(';') {
            continue;
        }
        let s = std::mem::take(&mut statement);
        if let Some(m) = s.strip_prefix("pub mod ") {
            let name = m.trim_end_matches([';', ' ', '{']).trim();
            out.push((format!("mod {name}"), cfg.clone(), name.to_string()));
        } else {
            let body = s.trim_start_matches("pub use ").trim_end_matches([';', ' ']);
            let module = body.split("::").next().unwrap_or_default().trim().to_string();
            let names: Vec<String> = match body.split_once('{') {
                Some((_, inner)) => inner.trim_end_matches('}').split(',').map(|n| n.trim().to_string()).collect(),
                None => vec![body.rsplit("::").next().unwrap_or(body).trim().to_string()],
            };
            for n in names.into_iter().filter(|n| !n.is_empty()) {
                let n = n.rsplit("::").next().unwrap_or(&n).to_string();
                let n = n.split(" as ").last().unwrap_or(&n).trim().to_string();
                out.push((n, cfg.clone(), module.clone()));
            }
        }
        cfg.clear();
    }
    out
}

/// The public surface of each item of the crate by name: its kind, and for a type its
/// public fields and the first line of each public method of its inherent `impl`s.
fn surfaces() -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for path in sources() {
        let code = code(&path);
        let rel = path.strip_prefix(manifest().join("src")).unwrap_or(&path);
        let module =
            rel.iter().next().map(|m| m.to_string_lossy().trim_end_matches(".rs").to_string()).unwrap_or_default();
        let lines: Vec<&str> = code.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            for kind in ["pub struct ", "pub enum ", "pub trait ", "pub fn ", "pub type ", "pub const "] {
                if let Some(rest) = line.strip_prefix(kind) {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    let entry = out.entry((module.clone(), name)).or_default();
                    entry.push(format!("{}{}", kind.trim_start_matches("pub "), rest.trim_end_matches(['{', ' '])));
                    if kind == "pub struct " && line.ends_with('{') {
                        let mut j = i + 1;
                        while j < lines.len() && lines[j] != "}" {
                            if let Some(field) = lines[j].strip_prefix("    pub ") {
                                entry.push(format!("  field {}", field.trim_end_matches(',')));
                            }
                            j += 1;
                        }
                    }
                }
            }
            if let Some(rest) = line.strip_prefix("impl") {
                let header = rest.trim_end_matches(['{', ' ']);
                let header = if header.starts_with('<') {
                    header.split_once("> ").map_or(header, |(_, h)| h)
                } else {
                    header.trim_start()
                };
                if !header.contains(" for ") && line.ends_with('{') {
                    let name: String = header.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    let mut j = i + 1;
                    while j < lines.len() && lines[j] != "}" {
                        if let Some(m) = lines[j].strip_prefix("    pub fn ") {
                            out.entry((module.clone(), name.clone()))
                                .or_default()
                                .push(format!("  fn {}", m.trim_end_matches(['{', ' '])));
                        }
                        j += 1;
                    }
                }
            }
            i += 1;
        }
    }
    out
}

/// The module a name comes from when `module` re-exports it from another of the crate's
/// (`functions` re-exports `Param` from `types`): the root's `Param` is that one, not the
/// `.tool` model's `Param` of the same name.
fn reexported_from(module: &str, name: &str) -> Option<String> {
    let src = manifest().join("src");
    let files = [src.join(format!("{module}.rs")), src.join(module).join("mod.rs")];
    for file in files {
        let code = code(&file);
        for statement in code.split(';') {
            let Some(at) = statement.find("pub use crate::") else { continue };
            let body = &statement[at + "pub use crate::".len()..];
            let words: Vec<&str> = body.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
            if words.contains(&name) {
                return words.first().map(|m| m.to_string());
            }
        }
    }
    None
}

fn listing() -> String {
    let surfaces = surfaces();
    let mut text = String::from(
        "# The public API of the `tdsl` crate: what `src/lib.rs` exports at the root, with the\n\
         # feature each needs, and each type's public fields and methods. Checked by\n\
         # tests/public_api.rs; rewrite with `TDSL_BLESS=1 cargo test --test public_api`.\n",
    );
    for (name, cfg, module) in root_names() {
        text.push('\n');
        let feature = cfg.trim_start_matches("#[cfg(").trim_end_matches(")]");
        let feature = if feature.is_empty() { String::new() } else { format!("  [{feature}]") };
        text.push_str(&format!("{name}{feature}\n"));
        // The defining module's items; for a name the module re-exports from another, every
        // module's items of that name (two types of one name are listed together).
        let module = reexported_from(&module, &name).unwrap_or(module);
        let mut items = surfaces.get(&(module, name.clone())).cloned().unwrap_or_else(|| {
            surfaces.iter().filter(|((_, n), _)| *n == name).flat_map(|(_, items)| items.clone()).collect()
        });
        items.sort();
        items.dedup();
        for item in items {
            text.push_str(&format!("  {}\n", item.trim_start()));
        }
    }
    text
}

#[test]
fn the_public_api_is_the_one_listed_in_docs_public_api_txt() {
    let path = manifest().join("docs/public-api.txt");
    let now = listing();
    assert!(
        now.contains("\nEngine\n") && now.contains("fn compile("),
        "the listing lost `Engine::compile`: the scan is wrong"
    );
    if std::env::var_os("TDSL_BLESS").is_some() {
        std::fs::write(&path, &now).expect("docs/public-api.txt written");
        return;
    }
    let listed = std::fs::read_to_string(&path).unwrap_or_default();
    if listed != now {
        let old: Vec<&str> = listed.lines().collect();
        let new: Vec<&str> = now.lines().collect();
        let gone: Vec<&&str> = old.iter().filter(|l| !new.contains(l)).collect();
        let added: Vec<&&str> = new.iter().filter(|l| !old.contains(l)).collect();
        panic!(
            "the public API changed without docs/public-api.txt (rewrite it with TDSL_BLESS=1 and review the diff):\n\
             gone: {gone:#?}\nadded: {added:#?}"
        );
    }
}

/// The types outside the crate that a public field may name.
const EXTERNAL: &[&str] = &[
    "Vec", "Option", "String", "Arc", "Box", "HashMap", "BTreeMap", "IndexMap", "Json", "Duration", "PathBuf",
    "Instant", "Result", "Cow", "HashSet", "BTreeSet", "Mutex", "RwLock", "Path", "Rc", "Url", "SmolStr",
];

/// The public fields of a listing whose type names one of the crate's own types that the
/// listing does not export (`Type.field`).
fn leaks(listing: &str) -> Vec<String> {
    let blocks: Vec<&str> = listing.split("\n\n").skip(1).collect();
    let roots: Vec<&str> =
        blocks.iter().filter_map(|b| b.lines().next()).filter_map(|l| l.split_whitespace().next()).collect();
    let mut leaks = Vec::new();
    for block in &blocks {
        let mut lines = block.lines();
        let Some(head) = lines.next().and_then(|l| l.split_whitespace().next()) else { continue };
        for line in lines {
            let Some((name, ty)) = line.trim().strip_prefix("field ").and_then(|f| f.split_once(": ")) else {
                continue;
            };
            let mut words = Vec::new();
            let mut word = String::new();
            for c in ty.chars().chain([' ']) {
                if c.is_alphanumeric() || c == '_' {
                    word.push(c);
                } else if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            let foreign = words.iter().any(|w| {
                w.starts_with(|c: char| c.is_ascii_uppercase())
                    && !roots.contains(&w.as_str())
                    && !EXTERNAL.contains(&w.as_str())
            });
            if foreign || ty.replace("serde_json::", "").contains("::") {
                leaks.push(format!("{head}.{name}"));
            }
        }
    }
    leaks
}

#[test]
fn no_internal_type_is_reachable_through_a_public_field() {
    // The scan finds a leak where there is one: a field naming a type the listing lacks, or
    // a path into a module.
    let planted = "# header\n\nTrace\n  field files: Option<Vec<FileRead>>\n  field ok: Vec<Trace>\n\n\
                   Plan\n  field steps: Vec<super::StepPlan>\n";
    assert_eq!(leaks(planted), ["Trace.files", "Plan.steps"]);
    let listing = listing();
    assert!(listing.contains("field files: Option<Vec<FileRead>>"), "the listing must show `Trace.files`");
    let leaks = leaks(&listing);
    assert!(
        leaks.is_empty(),
        "public fields that reach internal types: {leaks:?} (export the type, documented, or make the field \
         `pub(crate)` with a method that answers in public types: docs/architecture.md, \"The public facade\")"
    );
}

/// The names the hidden `tdsl::testing` module lists (`pub use` and `pub fn`), each with the
/// module it sits in under `testing` (`exec::breaker`).
fn testing_names() -> Vec<(String, String)> {
    let lib = code(&manifest().join("src/lib.rs"));
    let start = lib.find("pub mod testing {").expect("src/lib.rs has `pub mod testing`");
    let mut path: Vec<String> = Vec::new();
    let mut depth = 0usize;
    let mut opened: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut statement = String::new();
    for line in lib[start..].lines() {
        let t = line.trim();
        if let Some(m) = t.strip_prefix("pub mod ").and_then(|m| m.strip_suffix(" {")) {
            path.push(m.to_string());
            opened.push(depth);
        }
        if t.starts_with("pub use ") || !statement.is_empty() {
            statement.push_str(t);
            if t.ends_with(';') {
                let s = std::mem::take(&mut statement);
                let body = s.split_once('{').map_or_else(|| s.rsplit("::").next().unwrap_or(&s), |(_, b)| b);
                for name in body.split([',', '}', ';', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
                    out.push((path[1..].join("::"), name.to_string()));
                }
            }
        }
        if let Some(f) = t.strip_prefix("pub fn ") {
            let name: String = f.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((path[1..].join("::"), name));
        }
        depth += t.matches('{').count();
        depth -= t.matches('}').count();
        while opened.last().is_some_and(|&d| d == depth) {
            opened.pop();
            path.pop();
        }
        if path.is_empty() {
            break;
        }
    }
    out
}

/// What the crate's tests, benchmarks and doctests are: every file outside `src/` that may
/// reach `tdsl::testing`, and the doc comments of `src/` (doctests).
fn testing_users() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["tests", "benches", "bench-plans", "bench-peers", "fuzz", "python", "examples"]
        .iter()
        .map(|d| manifest().join(d))
        .collect();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "public_api.rs")
            {
                out.push(std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let docs: Vec<&str> =
            text.lines().filter(|l| l.trim_start().starts_with("//!") || l.trim_start().starts_with("///")).collect();
        out.push(docs.join("\n"));
    }
    out
}

/// `tdsl::testing` names what the tests use and nothing more (issue 42): a `*` there, or a
/// name nothing outside `src/` uses, would keep internals reachable from outside the crate,
/// hiding them from rustc's dead-code check.
#[test]
fn testing_names_only_what_the_tests_use() {
    let names = testing_names();
    assert!(names.iter().any(|(m, n)| m == "exec::breaker" && n == "BreakerPolicy"), "the scan is wrong: {names:?}");
    assert!(names.iter().all(|(_, n)| n != "*"), "`tdsl::testing` re-exports a module with `*`");
    let users = testing_users();
    let is_word = |text: &str, word: &str| {
        text.match_indices(word).any(|(i, _)| {
            let before = text[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let after = text[i + word.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            before && after
        })
    };
    let unused: Vec<String> = names
        .iter()
        .filter(|(module, name)| {
            let top = module.split("::").next().unwrap_or_default();
            !users.iter().any(|text| text.contains(&format!("testing::{top}")) && is_word(text, name))
        })
        .map(|(m, n)| format!("{m}::{n}"))
        .collect();
    assert!(unused.is_empty(), "`tdsl::testing` names what no test, benchmark or doctest uses: {unused:?}");
}
