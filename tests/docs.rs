//! The docs are tests.
//!
//! - Every ```` ```tdsl ```` block of `docs/language.md` is an example: the expression,
//!   an optional `# vars: {json}` line, optional `# warning: W0102` lines (the exact set of
//!   warnings the checker must report) and either `# => <json>` (the result) or
//!   `# error: E0301` (the code it fails with, at compile time or at run time). Every
//!   function the engine knows must be called in at least one example. Examples of the
//!   file functions add `# files: tests/data/files/tree` (a directory, from the crate root,
//!   served without git) and may set a limit with `# limit: max_file_bytes=64`. A
//!   `# enum: NAME=["a", "b"]` line types the variable `NAME` as that string enum (the type
//!   a declared `enum` gives; a variable's value alone is only a `string`).
//! - Every diagnostic code below `E0500`/`W0500`, and every file code (`E07xx`), has a section `## <code> …` in
//!   `docs/diagnostics.md` with its severity, a ```` ```diag <code> [mode] ```` block whose
//!   input produces that code, and a ```` ```text ```` block holding the rendered
//!   diagnostic (every such pair of the section, not only the first). Regenerate the rendered blocks with
//!   `UPDATE_DOCS=1 cargo test --test docs`, then review the diff.
//!
//! Examples run as `tdsl eval --now 2026-01-01T00:00:00Z` does: the variables are both the
//! scope (so unknown names are errors) and the REF contexts, and the clock is fixed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tdsl::testing::diagnostic::render_plain;
use tdsl::testing::files::{Entry, FileError, FileStore, LocalStore, StorePath, Version};
use tdsl::testing::functions::{Param, ReturnRule, Signature};
use tdsl::{Code, Diagnostic, Engine, FixedClock, Scope, Severity, Type, Value};

/// 2026-01-01T00:00:00Z, the instant every example's clock is stopped at.
const NOW_MILLIS: i64 = 1_767_225_600_000;

/// The name rendered diagnostics give the expression, as `tdsl eval` does.
const SOURCE_NAME: &str = "<expr>";

fn doc_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(name)
}

fn read_doc(name: &str) -> String {
    let path = doc_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn engine() -> Engine {
    Engine::new().with_clock(Arc::new(FixedClock(NOW_MILLIS)))
}

// ---------------------------------------------------------------------------------------
// Markdown fences

/// One fenced code block.
struct Block {
    /// The 1-based line of the opening fence.
    line: usize,
    /// The info string after the opening fence (`tdsl`, `diag E0101`, `text`).
    info: String,
    /// The text between the fences.
    body: String,
    /// Byte range of `body` in the document (for rewriting rendered blocks).
    body_range: std::ops::Range<usize>,
}

/// Every ```` ``` ```` fenced block of a Markdown document, in order.
fn fenced_blocks(doc: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, usize)> = None;
    let mut offset = 0;
    for (i, line) in doc.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_end();
        match &open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((i + 1, info.trim().to_string(), offset));
                }
            }
            Some((at, info, body_start)) => {
                if trimmed == "```" {
                    let body = doc[*body_start..start].to_string();
                    blocks.push(Block { line: *at, info: info.clone(), body, body_range: *body_start..start });
                    open = None;
                }
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    blocks
}

// ---------------------------------------------------------------------------------------
// Examples

/// What an example says should happen.
#[derive(Debug)]
enum Expect {
    /// `# => json`
    Value(serde_json::Value),
    /// `# error: CODE`
    Error(String),
}

/// An input: the expression and its variables, plus what the example expects.
struct Example {
    source: String,
    vars: Value,
    expect: Option<Expect>,
    warnings: Vec<String>,
    /// `# files: DIR`: the directory the file store serves.
    files: Option<PathBuf>,
    /// `# limit: NAME=N` lines.
    limits: Vec<(String, usize)>,
    /// `# enum: NAME=[…]` lines: variables typed as string enums.
    enums: Vec<(String, Vec<String>)>,
}

/// Reads a block body: expression lines, then `# directive: …` lines.
fn parse_example(body: &str) -> Result<Example, String> {
    let mut source = Vec::new();
    let mut vars = Value::object(Default::default());
    let mut expect = None;
    let mut warnings = Vec::new();
    let mut files = None;
    let mut limits = Vec::new();
    let mut enums = Vec::new();
    for line in body.lines() {
        let Some(directive) = line.strip_prefix('#') else {
            source.push(line);
            continue;
        };
        let directive = directive.trim();
        if let Some(json) = directive.strip_prefix("vars:") {
            let v: serde_json::Value =
                serde_json::from_str(json.trim()).map_err(|e| format!("`# vars:` is not JSON: {e}"))?;
            if !v.is_object() {
                return Err("`# vars:` must be a JSON object".into());
            }
            vars = Value::from(&v);
        } else if let Some(json) = directive.strip_prefix("=>") {
            let v = serde_json::from_str(json.trim()).map_err(|e| format!("`# =>` is not JSON: {e}"))?;
            expect = Some(Expect::Value(v));
        } else if let Some(code) = directive.strip_prefix("error:") {
            expect = Some(Expect::Error(code.trim().to_string()));
        } else if let Some(code) = directive.strip_prefix("warning:") {
            warnings.push(code.trim().to_string());
        } else if let Some(dir) = directive.strip_prefix("files:") {
            files = Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir.trim()));
        } else if let Some(limit) = directive.strip_prefix("limit:") {
            let (name, n) = limit.trim().split_once('=').ok_or("`# limit:` must be NAME=N")?;
            let n = n.parse().map_err(|e| format!("`# limit: {name}` is not a number: {e}"))?;
            limits.push((name.to_string(), n));
        } else if let Some(declared) = directive.strip_prefix("enum:") {
            let (name, values) = declared.trim().split_once('=').ok_or("`# enum:` must be NAME=[…]")?;
            let values: Vec<String> =
                serde_json::from_str(values).map_err(|e| format!("`# enum: {name}` is not a list of strings: {e}"))?;
            enums.push((name.trim().to_string(), values));
        } else {
            return Err(format!("unknown directive `#{directive}`"));
        }
    }
    let source = source.join("\n").trim().to_string();
    if source.is_empty() {
        return Err("the example has no expression".into());
    }
    Ok(Example { source, vars, expect, warnings, files, limits, enums })
}

/// `engine` with the example's file store and limits.
fn setup(engine: &Engine, ex: &Example) -> Result<Engine, String> {
    let mut limits = engine.limits().clone();
    for (name, n) in &ex.limits {
        match name.as_str() {
            "max_file_bytes" => limits.max_file_bytes = *n,
            "max_listing_entries" => limits.max_listing_entries = *n,
            other => return Err(format!("`# limit: {other}` is not a limit examples can set")),
        }
    }
    let mut engine = engine.clone().with_limits(limits);
    if let Some(dir) = &ex.files {
        let store = LocalStore::open_without_git(dir).map_err(|e| format!("`# files: {}`: {e}", dir.display()))?;
        engine = engine.with_file_store(Arc::new(store));
    }
    Ok(engine)
}

/// What running an input produced, as `tdsl eval` would show it.
struct Outcome {
    /// Every compile-time diagnostic, errors and warnings.
    diagnostics: Vec<Diagnostic>,
    /// The value, or the code it failed with (compile time or run time).
    result: Result<Value, Code>,
    /// Every diagnostic rendered as plain text, compile time first.
    rendered: String,
}

fn run(engine: &Engine, ex: &Example) -> Outcome {
    let (source, vars) = (ex.source.as_str(), &ex.vars);
    let mut scope = Scope::from_vars(vars);
    for (name, values) in &ex.enums {
        scope = scope.with_name(name, Type::string_enum(values));
    }
    let analysis = engine.analyze(source, &scope);
    let mut rendered = render_plain(&analysis.diagnostics, SOURCE_NAME, source);
    let result = match &analysis.program {
        None => {
            let first = analysis.diagnostics.iter().find(|d| d.is_error()).map(|d| d.code);
            Err(first.expect("a failed compilation reports an error"))
        }
        Some(program) => program.eval(vars).map_err(|e| {
            rendered.push_str(&render_plain(&[e.to_diagnostic()], SOURCE_NAME, source));
            e.code
        }),
    };
    Outcome { diagnostics: analysis.diagnostics, result, rendered }
}

/// Checks one example; `Err` says how it disagrees with the code.
fn check_example(engine: &Engine, ex: &Example) -> Result<(), String> {
    let out = run(&setup(engine, ex)?, ex);
    let actual = match &out.result {
        Ok(v) => format!("# => {v}"),
        Err(code) => format!("# error: {code}"),
    };
    let mut problems = Vec::new();
    match &ex.expect {
        None => problems.push(format!("no `# =>` or `# error:` line; it gives `{actual}`")),
        Some(Expect::Value(want)) => match &out.result {
            Ok(v) => {
                let got = serde_json::to_value(v).expect("a result converts to serde_json");
                // Equal as values, and equal as text so that key order and the
                // integer/float distinction (`2` vs `2.0`) count too.
                let same_text = serde_json::to_string(&got).ok() == serde_json::to_string(want).ok();
                if got != *want || !same_text {
                    problems.push(format!("expected `# => {want}`, got `{actual}`"));
                }
            }
            Err(_) => problems.push(format!("expected `# => {want}`, got `{actual}`\n{}", out.rendered)),
        },
        Some(Expect::Error(want)) => {
            if !matches!(&out.result, Err(code) if code.as_str() == want) {
                problems.push(format!("expected `# error: {want}`, got `{actual}`"));
            }
        }
    }
    let mut got_warnings: Vec<&str> =
        out.diagnostics.iter().filter(|d| !d.is_error()).map(|d| d.code.as_str()).collect();
    let mut want_warnings: Vec<&str> = ex.warnings.iter().map(String::as_str).collect();
    got_warnings.sort_unstable();
    want_warnings.sort_unstable();
    if got_warnings != want_warnings {
        problems.push(format!("expected warnings {want_warnings:?}, got {got_warnings:?}\n{}", out.rendered));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Whether `source` calls `name` (`name(` not preceded by a name character).
fn calls(source: &str, name: &str) -> bool {
    let pattern = format!("{name}(");
    source
        .match_indices(&pattern)
        .any(|(i, _)| !source[..i].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
}

#[test]
fn language_examples() {
    let doc = read_doc("language.md");
    let engine = engine();
    let mut failures = Vec::new();
    let mut sources = Vec::new();
    for block in fenced_blocks(&doc).iter().filter(|b| b.info == "tdsl") {
        match parse_example(&block.body) {
            Err(e) => failures.push(format!("docs/language.md:{}: {e}", block.line)),
            Ok(ex) => {
                if let Err(e) = check_example(&engine, &ex) {
                    failures.push(format!("docs/language.md:{}: `{}`\n{e}", block.line, ex.source));
                }
                sources.push(ex.source);
            }
        }
    }
    assert!(sources.len() >= 100, "only {} examples in docs/language.md", sources.len());
    for name in engine.functions().names() {
        if !sources.iter().any(|s| calls(s, name)) {
            failures.push(format!("docs/language.md: no example calls `{name}`"));
        }
    }
    assert!(failures.is_empty(), "{} problems:\n\n{}", failures.len(), failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------
// Diagnostics

/// Codes from `E0500`/`W0500` up belong to `.tool` files and are documented elsewhere,
/// except the file functions' `E07xx`.
fn is_expression_code(code: &str) -> bool {
    code.get(1..).and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n < 500 || (700..800).contains(&n))
}

/// A host's file store that fails at everything, for the `failing-store` examples.
struct FailingStore;

impl FileStore for FailingStore {
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError> {
        Err(FileError::io(dir.as_str(), "the storage service did not answer"))
    }

    fn read(&self, path: &StorePath, _: Option<&Version>, _: u64) -> Result<Vec<u8>, FileError> {
        Err(FileError::io(path.as_str(), "the storage service did not answer"))
    }

    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError> {
        Err(FileError::io(path.as_str(), "the storage service did not answer"))
    }
}

/// The engine the `host` examples run with: one host function that fails unless asked
/// for a rate it knows.
fn host_engine() -> Engine {
    let mut engine = engine();
    engine.register_function(
        Signature::new(
            "exchange_rate",
            vec![Param::required("currency", Type::Str)],
            ReturnRule::Fixed(Type::Number),
            "the exchange rate of a currency",
        ),
        Arc::new(|args: &[Value]| match args.first().and_then(Value::as_str) {
            Some("EUR") => Ok(Value::Float(1.08)),
            Some(other) => Err(format!("no exchange rate for {other:?}")),
            None => Err("no currency given".to_string()),
        }),
    );
    engine
}

/// Runs a `diag` example; returns every code it produced and the rendered output.
fn run_diag(mode: &str, ex: &Example) -> Result<(Vec<Code>, String), String> {
    match mode {
        "expr" | "host" | "failing-store" | "limits-out-of-range" => {
            let engine = match mode {
                "host" => host_engine(),
                // A host that set a limit out of its range (`tdsl::ranges`).
                "limits-out-of-range" => {
                    engine().with_limits(tdsl::Limits { max_depth: 100_000, ..tdsl::Limits::default() })
                }
                "failing-store" => engine().with_file_store(Arc::new(FailingStore)),
                _ => setup(&engine(), ex)?,
            };
            let out = run(&engine, ex);
            let mut codes: Vec<Code> = out.diagnostics.iter().map(|d| d.code).collect();
            if let Err(code) = out.result {
                codes.push(code);
            }
            Ok((codes, out.rendered))
        }
        // Evaluated under an interrupt already cancelled, or already past its deadline.
        "cancelled" | "deadline" => {
            let interrupt = tdsl::Interrupt::new();
            let interrupt = if mode == "cancelled" {
                interrupt.cancel();
                interrupt
            } else {
                interrupt.with_deadline(std::time::Instant::now())
            };
            let out = interrupt.enter(|| run(&engine(), ex));
            let mut codes: Vec<Code> = out.diagnostics.iter().map(|d| d.code).collect();
            if let Err(code) = out.result {
                codes.push(code);
            }
            Ok((codes, out.rendered))
        }
        "ref" => match tdsl::testing::syntax::parse_ref(&ex.source) {
            Ok(_) => Ok((Vec::new(), String::new())),
            Err(d) => Ok((vec![d.code], render_plain(&[d], "<ref>", &ex.source))),
        },
        other => {
            Err(format!("unknown mode `{other}` (expected expr, host, failing-store, limits-out-of-range, cancelled, deadline or ref)"))
        }
    }
}

/// Trailing spaces are not part of a rendering.
fn normalize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_matches('\n').to_string()
}

struct Section<'a> {
    code: &'a str,
    line: usize,
    text: &'a str,
    /// Byte offset of `text` in the document.
    start: usize,
}

/// The `## <code> …` sections of the document.
fn sections(doc: &str) -> Vec<Section<'_>> {
    let mut heads = Vec::new();
    let mut offset = 0;
    for (i, line) in doc.split_inclusive('\n').enumerate() {
        if let Some(rest) = line.strip_prefix("## ") {
            let word = rest.split_whitespace().next().unwrap_or("");
            let is_code =
                word.len() == 5 && word.starts_with(['E', 'W']) && word[1..].bytes().all(|b| b.is_ascii_digit());
            heads.push((is_code.then_some(word), i + 1, offset));
        }
        offset += line.len();
    }
    let mut out = Vec::new();
    for (k, (code, line, start)) in heads.iter().enumerate() {
        let end = heads.get(k + 1).map_or(doc.len(), |h| h.2);
        if let Some(code) = code {
            out.push(Section { code, line: *line, text: &doc[*start..end], start: *start });
        }
    }
    out
}

#[test]
fn diagnostics_reference() {
    let doc = read_doc("diagnostics.md");
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let sections = sections(&doc);
    let mut failures = Vec::new();
    // (range in the document, new rendered text) for UPDATE_DOCS.
    let mut rewrites: Vec<(std::ops::Range<usize>, String)> = Vec::new();

    for code in Code::ALL.iter().filter(|c| is_expression_code(c.as_str())) {
        let name = code.as_str();
        let matching: Vec<&Section<'_>> = sections.iter().filter(|s| s.code == name).collect();
        let section = match matching.as_slice() {
            [one] => *one,
            [] => {
                failures.push(format!("docs/diagnostics.md: no section `## {name}`"));
                continue;
            }
            _ => {
                failures.push(format!("docs/diagnostics.md: more than one section `## {name}`"));
                continue;
            }
        };
        let at = format!("docs/diagnostics.md:{} ({name})", section.line);
        let severity = match code.severity() {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if !section.text.contains(&format!("**Severity:** {severity}")) {
            failures.push(format!("{at}: the section must say `**Severity:** {severity}`"));
        }
        let blocks = fenced_blocks(section.text);
        // Every ```diag block of the section (the first shows the code; later ones show
        // what its help says in other cases), each followed by its rendering.
        let diags: Vec<usize> = (0..blocks.len()).filter(|&k| blocks[k].info.starts_with("diag")).collect();
        if diags.is_empty() {
            failures.push(format!("{at}: no ```diag block"));
            continue;
        }
        for k in diags {
            let info: Vec<&str> = blocks[k].info.split_whitespace().collect();
            if info.get(1) != Some(&name) {
                failures.push(format!("{at}: the diag block must be ```diag {name}, found ```{}", blocks[k].info));
                continue;
            }
            let mode = info.get(2).copied().unwrap_or("expr");
            let ex = match parse_example(&blocks[k].body) {
                Ok(ex) => ex,
                Err(e) => {
                    failures.push(format!("{at}: {e}"));
                    continue;
                }
            };
            let (codes, rendered) = match run_diag(mode, &ex) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{at}: {e}"));
                    continue;
                }
            };
            if !codes.contains(code) {
                let got: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
                failures.push(format!("{at}: `{}` should produce {name}, but produced {got:?}\n{rendered}", ex.source));
            }
            match blocks.get(k + 1).filter(|b| b.info == "text") {
                None => failures
                    .push(format!("{at}: the diag block must be followed by a ```text block with the rendering")),
                Some(b) => {
                    let want = normalize(&rendered);
                    if normalize(&b.body) != want {
                        if update {
                            let range = section.start + b.body_range.start..section.start + b.body_range.end;
                            rewrites.push((range, format!("{want}\n")));
                        } else {
                            failures.push(format!(
                                "{at}: the rendering is out of date (regenerate with `UPDATE_DOCS=1 cargo test --test docs`):\n{want}"
                            ));
                        }
                    }
                }
            }
        }
    }

    // Sections for codes that do not exist are stale.
    for s in &sections {
        if is_expression_code(s.code) && !Code::ALL.iter().any(|c| c.as_str() == s.code) {
            failures.push(format!("docs/diagnostics.md:{}: `{}` is not a diagnostic code", s.line, s.code));
        }
    }

    if update && !rewrites.is_empty() {
        let mut text = doc.clone();
        rewrites.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        for (range, new) in rewrites {
            text.replace_range(range, &new);
        }
        std::fs::write(doc_path("diagnostics.md"), text).expect("docs/diagnostics.md is writable");
    }
    assert!(failures.is_empty(), "{} problems:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn example_parser_rejects_unknown_directives() {
    assert!(parse_example("1 + 1\n# =>2").is_ok());
    assert!(parse_example("1 + 1\n# result: 2").is_err());
    assert!(parse_example("# => 2").is_err());
    assert!(parse_example("1\n# limit: max_file_bytes").is_err());
    let bad_limit = parse_example("1\n# limit: fuel=1\n# => 1").expect("parses");
    assert!(setup(&engine(), &bad_limit).is_err());
}

#[test]
fn a_wrong_example_fails() {
    let engine = engine();
    let wrong = parse_example("1 + 1\n# => 3").expect("parses");
    assert!(check_example(&engine, &wrong).is_err());
    let float_for_int = parse_example("4 / 2\n# => 2").expect("parses");
    assert!(check_example(&engine, &float_for_int).is_err());
    let wrong_order = parse_example("{b: 1, a: 2}\n# => {\"a\": 2, \"b\": 1}").expect("parses");
    assert!(check_example(&engine, &wrong_order).is_err());
    let wrong_code = parse_example("1 / 0\n# error: E0301").expect("parses");
    assert!(check_example(&engine, &wrong_code).is_err());
    let unlisted_warning = parse_example("json_parse(42)\n# => 42").expect("parses");
    assert!(check_example(&engine, &unlisted_warning).is_err());
    let right = parse_example("json_parse(42)\n# warning: W0101\n# => 42").expect("parses");
    assert_eq!(check_example(&engine, &right), Ok(()));
}
