//! The source document's own examples, read at test time.
//!
//! Seed 004 (`shared/seeds/004_558a319b9772510b.txt`, found by `tests/common/seeds.rs`) is the
//! composition reference tdsl implements. This test extracts every ```` ```json ```` block
//! from it — never a copy kept in the repository — wraps each fragment into a tool (see
//! [`wrap`]) over the stub callees of `tests/data/check/root`, and checks it: no error,
//! except for the blocks the document itself presents as errors ([`ERROR_EXAMPLES`]). The
//! complete composition examples (automatic and manual dependencies, branching, fan-out /
//! fan-in, the pipeline with transforms) also run with `--mock` answers shaped like the
//! document's data, and their results are asserted. `docs/seeds.md` lists every block with
//! its status.

mod common;
use common::tdsl;
use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Map, Value};
use tdsl::testing::analysis::{Analyzer, ToolRoot};

/// The source document, relative to the crate's directory.
const SEED_NAME: &str = "004_558a319b9772510b.txt";

/// The stub callees the wrapped examples call.
const ROOT: &str = "tests/data/check/root";

/// Blocks (1-based, in document order) and values within them (1-based: some blocks hold
/// several JSON values) that the document itself presents as wrong or as a placeholder, with
/// the reason and the error code `check` gives. Each must still fail, with that code.
const ERROR_EXAMPLES: &[(usize, usize, &str, &str)] = &[
    (6, 1, "E0102", "the shape of a transform: `function_call(…)` and `process(…)` are placeholder names"),
    (7, 1, "E0102", "the shape of a call: `function_name(arg1, arg2)` is a placeholder, not a built-in"),
    (8, 1, "E0102", "the shape of a call: `function_name(param1=arg1, …)` is a placeholder, not a built-in"),
    (40, 1, "E0101", "\"❌ Error: undefined variable\": `undefined_var` is not among the variables, on purpose"),
    (40, 2, "E0102", "\"❌ Error: schema validation failure\": `invalid_function` does not exist, on purpose"),
    (
        61,
        1,
        "E0650",
        "the complete example can never succeed: `aggregate_results.summary` is mapped over as a list and mapped \
         to the required `object` response `processing_summary` (types from use, issue 18)",
    ),
];

/// Blocks that fail only because a feature of issue 14 has not landed on main yet. Each must
/// STILL fail: when the feature lands, this test goes red and the entry must go.
const KNOWN_FAILING: &[(usize, usize, &str)] = &[
    // Empty since issue 14 item 1 (undeclared arguments) landed: blocks 41, 49 and 50 read
    // `REF:arguments.…` without an `arguments` key and now check (with W0606) and run.
];

/// The source document, found as `tests/common/seeds.rs` says (`TDSL_SEEDS`, or
/// `shared/seeds` beside the crate or an ancestor); `None`, after a one-line note, in a bare
/// clone — a failure when `TDSL_REQUIRE_SEEDS` is set, as `.ci/run` does.
fn seed_text() -> Option<String> {
    common::seeds::text(SEED_NAME)
}

/// One ```` ```json ```` block of the document.
#[derive(Clone, Debug)]
struct Block {
    /// 1-based, in document order.
    index: usize,
    /// The line of its opening fence (1-based).
    line: usize,
    /// The nearest heading above it.
    heading: String,
    text: String,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut open: Option<(usize, bool)> = None;
    let mut body = String::new();
    for (i, line) in doc.lines().enumerate() {
        let t = line.trim();
        if open.is_none() && t.starts_with('#') {
            heading = t.trim_start_matches('#').trim().to_string();
        }
        if let Some(fence) = t.strip_prefix("```") {
            match open {
                None => {
                    open = Some((i + 1, fence.trim() == "json"));
                    body.clear();
                }
                Some((start, json)) => {
                    if json {
                        out.push(Block {
                            index: out.len() + 1,
                            line: start,
                            heading: heading.clone(),
                            text: body.clone(),
                        });
                    }
                    open = None;
                }
            }
            continue;
        }
        if open.is_some() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// `text` without `//` comments (outside strings): the document annotates some blocks.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut escaped = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if in_str {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
            } else if b == b'"' {
                in_str = true;
            } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
                cut = i;
                break;
            }
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// The JSON values of a block (one, or several side by side).
fn values(block: &Block) -> Vec<Value> {
    let text = strip_comments(&block.text);
    let values: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(&text).into_iter::<Value>().collect();
    values.unwrap_or_else(|e| panic!("block {} (line {}, {}) is not JSON: {e}", block.index, block.line, block.heading))
}

const TOOL_KEYS: [&str; 5] =
    ["instructions", "system_event_endpoint", "description", "responses", "response_reference_map"];
const STEP_KEYS: [&str; 8] = [
    "execution_id",
    "tool_definition_path",
    "conditions",
    "parallel_execution",
    "transform_arguments",
    "transform_responses",
    "dependencies",
    "arguments",
];

/// What a block is, and so how it is wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A whole tool: checked as written (a lone `responses` schema becomes a primitive).
    Tool,
    /// One instruction (or some of its keys): a step of a wrapper tool.
    Step,
    /// `variables` / `transforms`: a step's `transform_arguments`.
    Transform,
    /// A map of names to values: a step's `arguments` when they are REFs, else its
    /// transforms.
    Bare,
}

fn shape(v: &Value) -> Shape {
    let Some(o) = v.as_object() else { return Shape::Bare };
    let has = |k: &str| o.contains_key(k);
    if TOOL_KEYS.iter().any(|k| has(k)) || o.get("arguments").is_some_and(Value::is_array) {
        Shape::Tool
    } else if STEP_KEYS.iter().any(|k| has(k)) {
        Shape::Step
    } else if has("variables") || has("transforms") {
        Shape::Transform
    } else {
        Shape::Bare
    }
}

/// Every `REF:` string anywhere in `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if s.starts_with("REF:") => out.push(s["REF:".len()..].to_string()),
        Value::String(s) => {
            // REFs inside expressions (`"if(REF:a.b > 1, …)"`).
            for part in s.split("REF:").skip(1) {
                let end = part.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')).unwrap_or(part.len());
                out.push(part[..end].to_string());
            }
        }
        Value::Array(items) => items.iter().for_each(|x| refs(x, out)),
        Value::Object(o) => o.values().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// Names a bare expression reads that nothing defines: identifiers outside strings that are
/// not called, not keyword names, not fields and not the language's own words.
fn free_names(expr: &str) -> Vec<String> {
    const WORDS: [&str; 8] = ["true", "false", "null", "and", "or", "not", "item", "current"];
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
            let after = chars[i..].iter().find(|c| !c.is_whitespace());
            let field = before == Some(&'.');
            let called_or_named = matches!(after, Some('(') | Some('=') | Some(':'))
                && !(after == Some(&'=') && chars[i..].iter().filter(|c| !c.is_whitespace()).nth(1) == Some(&'='));
            if !field && !called_or_named && !WORDS.contains(&word.as_str()) && word != "REF" && !out.contains(&word) {
                out.push(word);
            }
            continue;
        }
        i += 1;
    }
    out
}

/// A placeholder value for a stub's declared type.
fn placeholder(type_name: &str) -> Value {
    match type_name {
        "string" | "file" => json!("x"),
        "number" | "integer" => json!(0),
        "boolean" => json!(false),
        "object" => json!({}),
        t if t.starts_with("list") => json!([]),
        _ => Value::Null,
    }
}

/// The tool root the wrapped examples check against: a copy of `tests/data/check/root`
/// (stub callees that declare what the document's examples pass and read), to which a
/// wrapper adds a stub for a callee the examples name but the root lacks.
struct StubRoot {
    dir: tempfile::TempDir,
}

impl StubRoot {
    fn new() -> StubRoot {
        let dir = tempfile::tempdir().expect("temp dir");
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join(ROOT), dir.path());
        StubRoot { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The callee at tool path `tool`, when there is one.
    fn stub(&self, tool: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.path().join(tool.trim_start_matches('/'))).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Makes sure a callee exists at `tool`: when it does not, a stub that accepts
    /// `arguments` and answers `responses` (all `any`).
    fn ensure(&self, tool: &str, arguments: &[String], responses: &[String]) {
        let path = self.path().join(tool.trim_start_matches('/'));
        if path.exists() {
            return;
        }
        let decl = |names: &[String]| -> Vec<Value> {
            names.iter().map(|n| json!({"name": n, "type_name": "any", "required": false})).collect()
        };
        let stub = json!({
            "description": "stub generated by tests/seeds.rs",
            "arguments": decl(arguments),
            "responses": decl(responses),
            "system_event_endpoint": "builtin:echo"
        });
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, serde_json::to_string_pretty(&stub).expect("serializes")).expect("write stub");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("the stub root") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn push_unique(names: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
}

/// The names `REF:<id>.…` reads from step `id` (its first segment each).
fn reads_of(found: &[String], id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in found {
        let mut parts = r.split('.');
        if parts.next() == Some(id) {
            push_unique(&mut out, parts.next().unwrap_or_default());
        }
    }
    out
}

/// Whether the example reads step `id`'s `response` as a list: only the list itself, its
/// `length`, `first`, `last` or an index — never a field of it.
fn reads_a_list(found: &[String], id: &str) -> bool {
    let mut after = found.iter().filter_map(|r| r.strip_prefix(id)?.strip_prefix(".response")).peekable();
    after.peek().is_some()
        && after.all(|rest| {
            let next = rest.strip_prefix('.').map_or("", |r| r.split('.').next().unwrap_or_default());
            rest.is_empty() || ["length", "first", "last"].contains(&next) || next.bytes().all(|b| b.is_ascii_digit())
        })
}

/// A step that produces what the example reads from step `id`: it calls `/tools/<id>.tool`
/// (a stub of the root, or one made for it) with placeholders for the stub's required
/// arguments — in parallel, over one element, when the example reads its `response` as a
/// list ([`reads_a_list`]), the stub does not declare a `response` and it takes an argument
/// to iterate over.
fn producer(root: &StubRoot, id: &str, reads: &[String], reads_list: bool) -> Value {
    let tool = format!("/tools/{id}.tool");
    if root.stub(&tool).is_none() {
        let arguments = if reads_list { vec!["item".to_string()] } else { Vec::new() };
        let responses: Vec<String> = if reads_list { Vec::new() } else { reads.to_vec() };
        root.ensure(&tool, &arguments, &responses);
    }
    let stub = root.stub(&tool).unwrap_or(Value::Null);
    let declares = |key: &str, name: &str| {
        stub.get(key).and_then(Value::as_array).into_iter().flatten().any(|d| d.get("name") == Some(&json!(name)))
    };
    let mut args = Map::new();
    let mut first_arg: Option<(String, Value)> = None;
    for a in stub.get("arguments").and_then(Value::as_array).into_iter().flatten() {
        let name = a.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let value = placeholder(a.get("type_name").and_then(Value::as_str).unwrap_or("any"));
        first_arg.get_or_insert((name.clone(), value.clone()));
        if a.get("required").and_then(Value::as_bool) == Some(true) {
            args.insert(name, value);
        }
    }
    let mut step = json!({"execution_id": id, "tool_definition_path": tool});
    // A stub with no argument to iterate over (`api_call`) answers one object: its
    // `response` is that object.
    if let (true, false, Some((child, element))) = (reads_list, declares("responses", "response"), first_arg) {
        args.remove(&child);
        step["parallel_execution"] = json!({"iterate_over": [element], "child_argument_name": child});
    }
    if !args.is_empty() {
        step["arguments"] = Value::Object(args);
    }
    step
}

/// Completes `tool`: a producer step for every step its REFs and `dependencies` name that
/// it does not define, a stub for each callee of its own steps that the root lacks, and a
/// declaration (`any`, optional) of every `REF:arguments.…` name — only for a wrapper: a
/// complete tool of the document is checked as written.
fn complete(root: &StubRoot, tool: &mut Value) {
    let mut found = Vec::new();
    refs(tool, &mut found);
    let steps: Vec<Value> = tool["instructions"].as_array().cloned().unwrap_or_default();
    let defined: BTreeSet<String> =
        steps.iter().filter_map(|s| s.get("execution_id").and_then(Value::as_str).map(str::to_string)).collect();
    let mut needed: Vec<String> = Vec::new();
    for r in &found {
        let id = r.split('.').next().unwrap_or_default();
        if !["arguments", "response", "item", "current"].contains(&id) && !defined.contains(id) {
            push_unique(&mut needed, id);
        }
    }
    for s in &steps {
        for d in s.get("dependencies").and_then(Value::as_array).into_iter().flatten() {
            let d = d.as_str().unwrap_or_default();
            if !defined.contains(d) {
                push_unique(&mut needed, d);
            }
        }
        // The step's own callee: what it passes and what its `transform_responses` read.
        let Some(callee) = s.get("tool_definition_path").and_then(Value::as_str) else { continue };
        let mut passes = Vec::new();
        for key in s.get("arguments").and_then(Value::as_object).into_iter().flat_map(|o| o.keys()) {
            push_unique(&mut passes, key);
        }
        let transforms = s.pointer("/transform_arguments/transforms").and_then(Value::as_object);
        for key in transforms.into_iter().flat_map(|o| o.keys()) {
            push_unique(&mut passes, key);
        }
        if let Some(child) = s.pointer("/parallel_execution/child_argument_name").and_then(Value::as_str) {
            push_unique(&mut passes, child);
        }
        let mut own = Vec::new();
        refs(s.get("transform_responses").unwrap_or(&Value::Null), &mut own);
        root.ensure(callee, &passes, &reads_of(&own, "response"));
    }
    let producers: Vec<Value> =
        needed.iter().map(|id| producer(root, id, &reads_of(&found, id), reads_a_list(&found, id))).collect();
    if let Some(steps) = tool["instructions"].as_array_mut() {
        steps.splice(0..0, producers);
    }
    let mut names: Vec<String> = Vec::new();
    for r in &found {
        if let Some(name) = r.strip_prefix("arguments.").and_then(|rest| rest.split('.').next()) {
            push_unique(&mut names, name);
        }
    }
    tool["arguments"] =
        Value::Array(names.iter().map(|n| json!({"name": n, "type_name": "any", "required": false})).collect());
}

/// The tool `tdsl check` sees for value `n` of block `b`. A step without a callee of its
/// own calls `/tools/seeds/example_<b>_<n>.tool`, a stub that takes what it is given.
fn wrap(root: &StubRoot, b: usize, n: usize, v: &Value) -> Value {
    let example_step = || json!({"execution_id": "example_step", "tool_definition_path": format!("/tools/seeds/example_{b}_{n}.tool")});
    let wrapper = |step: Value| {
        let mut tool = json!({"description": "wrapper", "instructions": [step]});
        complete(root, &mut tool);
        tool
    };
    match shape(v) {
        Shape::Tool => {
            let mut tool = v.clone();
            let o = tool.as_object().expect("a tool is an object");
            if o.contains_key("instructions") || o.contains_key("system_event_endpoint") {
                // A complete tool: as written (its own REFs must resolve, its callees exist).
                return tool;
            }
            if o.contains_key("response_reference_map") {
                tool["instructions"] = json!([]);
                complete(root, &mut tool);
            } else {
                // A response schema for a reusable tool: a primitive.
                tool["system_event_endpoint"] = json!("builtin:echo");
            }
            tool
        }
        Shape::Step => {
            let mut step = example_step();
            for (k, x) in v.as_object().expect("a step is an object") {
                step[k] = x.clone();
            }
            wrapper(step)
        }
        Shape::Transform => {
            let mut step = example_step();
            step["transform_arguments"] = v.clone();
            wrapper(step)
        }
        Shape::Bare => {
            let o = v.as_object().expect("a bare block is an object");
            let all_refs = o.values().all(|x| x.as_str().is_some_and(|s| s.starts_with("REF:")));
            let mut step = example_step();
            if all_refs {
                step["arguments"] = v.clone();
            } else {
                let mut names = Vec::new();
                for x in o.values() {
                    for name in free_names(x.as_str().unwrap_or_default()) {
                        push_unique(&mut names, &name);
                    }
                }
                let variables: Map<String, Value> =
                    names.iter().map(|n| (n.clone(), json!(format!("REF:arguments.{n}")))).collect();
                step["transform_arguments"] = json!({"variables": variables, "transforms": v.clone()});
            }
            wrapper(step)
        }
    }
}

/// What checking one value found: its error codes and messages.
struct Checked {
    block: Block,
    value: usize,
    shape: Shape,
    source: String,
    errors: Vec<(String, String)>,
}

fn check_all() -> Option<Vec<Checked>> {
    let doc = seed_text()?;
    let root = StubRoot::new();
    let mut wrapped = Vec::new();
    for block in blocks(&doc) {
        for (i, v) in values(&block).iter().enumerate() {
            wrapped.push((block.clone(), i, shape(v), wrap(&root, block.index, i + 1, v)));
        }
    }
    // Checked once every stub exists.
    let mut analyzer = Analyzer::new(ToolRoot::new(root.path()));
    let mut out = Vec::new();
    {
        for (block, i, shape, tool) in wrapped {
            let source = serde_json::to_string_pretty(&tool).expect("serializes");
            let checked = analyzer.check_source(&format!("seed_block_{}_{}.tool", block.index, i + 1), &source);
            let errors = checked
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| (d.code.to_string(), d.message.clone()))
                .collect();
            out.push(Checked { block, value: i + 1, shape, source, errors });
        }
    }
    Some(out)
}

#[test]
fn the_document_is_read_at_test_time() {
    let Some(doc) = seed_text() else { return };
    let all = blocks(&doc);
    // The document as the project knows it: if it changes, this test and docs/seeds.md must
    // be reviewed together.
    assert_eq!(all.len(), 61, "the number of ```json blocks in {SEED_NAME}");
    let headings: Vec<&str> = all.iter().map(|b| b.heading.as_str()).collect();
    for h in [
        "Automatic Dependency Resolution",
        "Manual Dependencies",
        "Pipeline Processing with Transforms",
        "Conditional Branching with Transform Logic",
        "Fan-out/Fan-in Pattern with Result Aggregation",
    ] {
        assert!(headings.contains(&h), "no block under {h:?}");
    }
}

#[test]
fn every_json_block_checks_except_the_documents_error_examples() {
    let mut problems = Vec::new();
    let mut seen_errors = BTreeSet::new();
    let mut seen_known = BTreeSet::new();
    let Some(all) = check_all() else { return };
    for c in all {
        let key = (c.block.index, c.value);
        let where_ = format!(
            "block {} value {} (line {}, {:?}, {:?})",
            c.block.index, c.value, c.block.line, c.block.heading, c.shape
        );
        if let Some((_, _, code, why)) = ERROR_EXAMPLES.iter().find(|(b, v, _, _)| (*b, *v) == key) {
            seen_errors.insert(key);
            if !c.errors.iter().any(|(c, _)| c == code) {
                problems
                    .push(format!("{where_}: an error example ({why}) should fail with {code}, got {:?}", c.errors));
            }
        } else if let Some((_, _, why)) = KNOWN_FAILING.iter().find(|(b, v, _)| (*b, *v) == key) {
            seen_known.insert(key);
            if c.errors.is_empty() {
                problems.push(format!(
                    "{where_}: listed as known failing ({why}) but now checks clean: remove it from KNOWN_FAILING \
                     and update docs/seeds.md"
                ));
            }
        } else if !c.errors.is_empty() {
            problems.push(format!("{where_}: {:?}\n{}", c.errors, c.source));
        }
    }
    for (b, v, _, _) in ERROR_EXAMPLES {
        assert!(seen_errors.contains(&(*b, *v)), "ERROR_EXAMPLES names block {b} value {v}, which does not exist");
    }
    for (b, v, _) in KNOWN_FAILING {
        assert!(seen_known.contains(&(*b, *v)), "KNOWN_FAILING names block {b} value {v}, which does not exist");
    }
    assert!(problems.is_empty(), "{} problems:\n\n{}", problems.len(), problems.join("\n\n"));
}

// ---------------------------------------------------------------------------------------
// The complete composition examples, run with mock answers shaped like the document's data.

/// The first value of the first block under heading `heading`.
fn example(heading: &str) -> Option<(Block, Value)> {
    let doc = seed_text()?;
    let block =
        blocks(&doc).into_iter().find(|b| b.heading == heading).unwrap_or_else(|| panic!("no block under {heading:?}"));
    let v = values(&block).into_iter().next().expect("a value");
    Some((block, v))
}

/// What `tdsl run` did.
struct Run {
    code: i32,
    stderr: String,
    result: Value,
    trace: Value,
}

impl Run {
    /// The trace entry of step `id`.
    fn step(&self, id: &str) -> &Value {
        self.trace["step_results"]
            .as_array()
            .and_then(|steps| steps.iter().find(|s| s["step_id"] == json!(id)))
            .unwrap_or_else(|| panic!("no step {id} in the trace: {}", self.trace))
    }

    /// Asserts that step `a` ended before step `b` started.
    fn before(&self, a: &str, b: &str) {
        let (end, start) = (&self.step(a)["ended_ms"], &self.step(b)["started_ms"]);
        assert!(end.as_f64() <= start.as_f64(), "{a} ended at {end}, after {b} started at {start}");
    }
}

/// Runs `tool` (block `b`, wrapped as `check` sees it) with `mock` answers and `args`, one
/// call at a time so that list answers go to children in order.
fn run(b: &Block, tool: &Value, mock: Value, args: &[(&str, Value)]) -> Run {
    let root = StubRoot::new();
    let tool = match shape(tool) {
        Shape::Tool if tool.get("instructions").is_some() => tool.clone(),
        _ => wrap(&root, b.index, 1, tool),
    };
    let file = root.path().join(format!("seed_block_{}.tool", b.index));
    std::fs::write(&file, serde_json::to_string_pretty(&tool).expect("serializes")).expect("write tool");
    let mock_file = root.path().join("mock.json");
    std::fs::write(&mock_file, mock.to_string()).expect("write mock");
    let trace_file = root.path().join("trace.json");
    let mut argv: Vec<String> = vec![
        "run".into(),
        file.display().to_string(),
        "--root".into(),
        root.path().display().to_string(),
        "--mock".into(),
        mock_file.display().to_string(),
        "--trace".into(),
        trace_file.display().to_string(),
        "--concurrency".into(),
        "1".into(),
        "--seed".into(),
        "1".into(),
    ];
    for (name, value) in args {
        argv.push("--arg".into());
        argv.push(format!("{name}={value}"));
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = tdsl(&argv);
    let result = serde_json::from_str(&o.stdout).unwrap_or(Value::Null);
    let trace =
        std::fs::read_to_string(&trace_file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null);
    Run { code: o.code, stderr: o.stderr, result, trace }
}

/// Whether block `b` is still in [`KNOWN_FAILING`]: then its run must still fail the same
/// way (the test goes red when the feature lands, and the entry must go).
fn known_failing(b: &Block) -> Option<&'static str> {
    KNOWN_FAILING.iter().find(|(i, v, _)| (*i, *v) == (b.index, 1)).map(|(_, _, why)| *why)
}

fn assert_still_fails(b: &Block, r: &Run, why: &str) {
    assert_eq!(r.code, 1, "block {} is listed as known failing ({why}) but ran: {}", b.index, r.result);
    assert!(r.stderr.contains("E0604"), "block {}: {}", b.index, r.stderr);
}

#[test]
fn automatic_dependencies_run() {
    let Some((b, tool)) = example("Automatic Dependency Resolution") else { return };
    let response_data = json!({"users": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Grace"}]});
    let metadata = json!({"source": "users-api", "fetched": 2});
    let mock = json!({
        "/tools/api_client.tool": {"response_data": response_data, "metadata": metadata},
        "/tools/data_processor.tool": {"cleaned_data": {"names": ["Ada", "Grace"]}},
        "/tools/report_generator.tool": {"report_file": "reports/users.md"}
    });
    let r = run(&b, &tool, mock, &[("api_endpoint", json!("https://api.example.com/users"))]);
    if let Some(why) = known_failing(&b) {
        return assert_still_fails(&b, &r, why);
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.step("fetch_data")["arguments"], json!({"endpoint": "https://api.example.com/users"}));
    assert_eq!(r.step("process_data")["arguments"], json!({"raw_data": response_data}));
    assert_eq!(
        r.step("generate_report")["arguments"],
        json!({"processed_data": {"names": ["Ada", "Grace"]}, "metadata": metadata})
    );
    // **Execution Order**: `fetch_data` → `process_data` → `generate_report`
    r.before("fetch_data", "process_data");
    r.before("process_data", "generate_report");
    assert_eq!(r.result["generate_report"], json!({"report_file": "reports/users.md"}));
}

#[test]
fn manual_dependencies_run() {
    let Some((b, step)) = example("Manual Dependencies") else { return };
    let mock = json!({
        "/tools/fetch_data.tool": {},
        "/tools/process_data.tool": {},
        "/tools/cleanup.tool": {"removed": 3}
    });
    let r = run(&b, &step, mock, &[("temp_dir", json!("/tmp/work"))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.step("cleanup_task")["arguments"], json!({"working_directory": "/tmp/work"}));
    // `dependencies` order the cleanup after both, though it reads neither.
    r.before("fetch_data", "cleanup_task");
    r.before("process_data", "cleanup_task");
    assert_eq!(r.result["cleanup_task"], json!({"removed": 3}));
}

#[test]
fn pipeline_with_transforms_runs() {
    let Some((b, tool)) = example("Pipeline Processing with Transforms") else { return };
    let mock = json!({
        "/tools/text_extractor.tool": [{"content": "Great product"}, {"content": "Slow delivery"}],
        "/tools/sentiment_analyzer.tool": [{"score": 0.75, "label": "positive"}, {"score": 0.25, "label": "negative"}],
        "/tools/summarizer.tool": {"summary": "2 documents, mixed"}
    });
    let r = run(&b, &tool, mock, &[("input_documents", json!(["docs/a.pdf", "docs/b.pdf"]))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // One child per document, one per extracted text.
    let children = |id: &str| r.step(id)["children"].as_array().map(Vec::len);
    assert_eq!(children("extract_text"), Some(2));
    assert_eq!(children("analyze_sentiment"), Some(2));
    assert_eq!(
        r.step("analyze_sentiment")["arguments"],
        json!({"text_count": 2, "combined_texts": ["Great product", "Slow delivery"]})
    );
    assert_eq!(
        r.step("generate_summary")["arguments"],
        json!({"document_count": 2, "average_sentiment": 1.0, "sentiment_summary": "positive, negative"})
    );
    assert_eq!(r.result["generate_summary"], json!({"summary": "2 documents, mixed"}));
}

#[test]
fn conditional_branching_runs_one_branch() {
    let Some((b, tool)) = example("Conditional Branching with Transform Logic") else { return };
    let valid = json!({
        "/tools/validator.tool": {
            "is_valid": true,
            "clean_records": [{"identifier": "r1", "data": 10}, {"identifier": "r2", "data": 20}],
            "validation_errors": []
        },
        "/tools/data_processor.tool": {"processed_items": ["r1", "r2"]},
        "/tools/error_handler.tool": {}
    });
    let args = [("user_data", json!([{"id": "r1"}, {"id": "r2"}])), ("mode", json!("strict"))];
    let r = run(&b, &tool, valid, &args);
    if let Some(why) = known_failing(&b) {
        return assert_still_fails(&b, &r, why);
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.step("validate_input")["arguments"], json!({"data": [{"id": "r1"}, {"id": "r2"}]}));
    assert_eq!(
        r.step("process_valid_data")["arguments"],
        json!({"processing_mode": "strict", "batch_size": 2, "processed_data": [{"id": "r1", "value": 10}, {"id": "r2", "value": 20}]})
    );
    assert_eq!(r.step("handle_invalid_data")["status"], json!("SKIPPED"));
    assert_eq!(r.result["process_valid_data"], json!({"processed_items": ["r1", "r2"]}));

    let invalid = json!({
        "/tools/validator.tool": {
            "is_valid": false,
            "clean_records": [],
            "validation_errors": [{"message": "missing id"}, {"message": "bad date"}]
        },
        "/tools/data_processor.tool": {"processed_items": []},
        "/tools/error_handler.tool": {}
    });
    let r = run(&b, &tool, invalid, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.step("process_valid_data")["status"], json!("SKIPPED"));
    assert_eq!(
        r.step("handle_invalid_data")["arguments"],
        json!({"error_count": 2, "error_summary": "missing id; bad date"})
    );
}

#[test]
fn fan_out_fan_in_runs() {
    let Some((b, tool)) = example("Fan-out/Fan-in Pattern with Result Aggregation") else { return };
    let mock = json!({
        "/tools/data_splitter.tool": {"chunks": [[1, 2], [3, 4], [5, 6]]},
        "/tools/analyzer.tool": [
            {"success_flag": {"value": 1}, "metric_value": 0.5},
            {"success_flag": {"value": 0}, "metric_value": 0.25},
            {"success_flag": {"value": 1}, "metric_value": 0.75}
        ],
        "/tools/aggregator.tool": {"aggregated_data": [
            {"completion_rate": 60, "description": "chunks 1-2 done"},
            {"completion_rate": 40, "description": "chunk 3 done"}
        ]}
    });
    let r = run(&b, &tool, mock, &[("large_dataset", json!([1, 2, 3, 4, 5, 6]))]);
    if let Some(why) = known_failing(&b) {
        return assert_still_fails(&b, &r, why);
    }
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.step("parallel_analysis")["children"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        r.step("aggregate_results")["arguments"],
        json!({"total_chunks": 3, "successful_analyses": 2, "combined_metrics": 1.5})
    );
    let aggregated = &r.result["aggregate_results"];
    assert_eq!(aggregated["completion_percentage"], json!(100));
    assert_eq!(aggregated["summary_report"], json!("chunks 1-2 done\nchunk 3 done"));
}

/// `docs/seeds.md`'s table of blocks says how each block is checked; that column must be
/// what [`wrap`] does with the block's first value (a tool as written, a response map given
/// producer steps, a step of a wrapper, …).
#[test]
fn the_block_table_says_how_each_block_is_checked() {
    let Some(doc) = seed_text() else { return };
    let table = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/seeds.md")).expect("docs");
    let rows: Vec<(usize, String)> = table
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let index = cells.get(1)?.parse().ok()?;
            cells.get(2)?.parse::<usize>().ok()?;
            Some((index, cells.get(5)?.to_string()))
        })
        .collect();
    let blocks = blocks(&doc);
    assert_eq!(rows.len(), blocks.len(), "one row per block in docs/seeds.md");
    let mut wrong = Vec::new();
    for (block, (index, how)) in blocks.iter().zip(&rows) {
        assert_eq!(block.index, *index, "rows in block order");
        let Some(v) = values(block).into_iter().next() else { continue };
        let o = v.as_object();
        let has = |k: &str| o.is_some_and(|o| o.contains_key(k));
        let expected = match shape(&v) {
            Shape::Tool if has("instructions") || has("system_event_endpoint") => "a tool, as written",
            Shape::Tool if has("response_reference_map") => "a tool (response map only)",
            Shape::Tool => "a primitive tool (a response schema only)",
            Shape::Step => "one step of a wrapper",
            Shape::Transform => "`transform_arguments` of a wrapper step",
            Shape::Bare => "arguments or transforms of a wrapper step",
        };
        if !how.starts_with(expected) {
            wrong.push(format!("block {index}: the table says {how:?}, the test checks it as {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "docs/seeds.md disagrees with tests/seeds.rs:\n{}", wrong.join("\n"));
}
