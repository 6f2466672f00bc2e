//! `tdsl lsp`: protocol tests for each feature, over the check corpus and sample roots.
//! The corpus test drives the real binary over stdio; the others run the server in
//! process (`tests/lsp_support`). Neovim drives it end to end in `tests/lsp_nvim.rs`.

mod common;
mod lsp_support;

use std::path::{Path, PathBuf};

use lsp_support::{at, find, uri, Client};
use serde_json::{json, Value};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// A temporary tool root with `.tdsl-root` and these files.
fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".tdsl-root"), "").expect("marker");
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(p, text).expect("write");
    }
    dir
}

const LISTER: &str = r#"{
  "description": "Lists a directory",
  "arguments": [{"name": "directory", "type_name": "string", "required": true, "description": "where to look"}],
  "responses": [{"name": "files", "type_name": "list<string>", "required": true}, {"name": "total", "type_name": "integer", "required": true}],
  "system_event_endpoint": "builtin:echo"
}"#;

const COUNTER: &str = r#"{
  "arguments": [{"name": "count", "type_name": "integer", "required": true}],
  "responses": [{"name": "doubled", "type_name": "integer", "required": true}],
  "system_event_endpoint": "builtin:echo"
}"#;

const MAIN: &str = r#"{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "responses": [{"name": "count", "type_name": "integer", "required": true}, {"name": "doubled", "type_name": "integer"}, {"name": "again", "type_name": "list"}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}},
    {"execution_id": "sum", "tool_definition_path": "/tools/counter.tool",
     "dependencies": ["scan"],
     "transform_arguments": {"variables": {"names": "REF:scan.files"}, "transforms": {"count": "length(names) + REF:scan.total"}}},
    {"execution_id": "rescan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}}
  ],
  "response_reference_map": {"count": "REF:scan.total", "doubled": "REF:sum.doubled", "again": "REF:rescan.files"}
}"#;

fn sample() -> tempfile::TempDir {
    workspace(&[("tools/lister.tool", LISTER), ("tools/counter.tool", COUNTER), ("main.tool", MAIN)])
}

fn start(root: &Path) -> Client {
    let mut c = Client::in_process();
    c.initialize(root, json!({}), json!(null));
    c
}

/// Every file of the check corpus: the binary's diagnostics are `tdsl check --format
/// json`'s, at the same lines and columns, with the same codes and messages.
#[test]
fn diagnostics_are_those_of_check_over_the_corpus() {
    let root = data("tests/data/check/root");
    let err = data("tests/data/check/err");
    let out = common::tdsl(&["check", "--root", root.to_str().unwrap(), "--format", "json", err.to_str().unwrap()]);
    let expected: Vec<Value> = serde_json::from_str(&out.stdout).expect("check prints JSON");
    let mut c = Client::binary();
    let caps = c.initialize(&err, json!({}), json!({"root": root}));
    assert_eq!(caps["capabilities"]["positionEncoding"], "utf-16");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&err)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tool"))
        .collect();
    files.sort();
    assert!(files.len() > 40);
    let mut seen = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let u = c.open(f);
        let got = c.diagnostics(&u);
        let want: Vec<&Value> =
            expected.iter().filter(|d| Path::new(d["file"].as_str().unwrap()) == f.as_path()).collect();
        assert_eq!(got.len(), want.len(), "{}: {got:#?} vs {want:#?}", f.display());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g["code"], w["code"], "{}", f.display());
            assert_eq!(g["message"], w["message"], "{}", f.display());
            let pos = |p: &Value| -> (u64, u64) {
                // LSP: 0-based line, UTF-16 column; check: 1-based line, column in characters.
                let line = p["line"].as_u64().unwrap();
                let units = p["character"].as_u64().unwrap() as usize;
                let line_text = text.split('\n').nth(line as usize).unwrap_or("");
                let mut n = 0;
                let chars = line_text.chars().take_while(|ch| {
                    let fits = n < units;
                    n += ch.len_utf16();
                    fits
                });
                (line + 1, chars.count() as u64 + 1)
            };
            let (l, col) = pos(&g["range"]["start"]);
            let (el, ecol) = pos(&g["range"]["end"]);
            assert_eq!(
                (l, col, el, ecol),
                (
                    w["line"].as_u64().unwrap(),
                    w["column"].as_u64().unwrap(),
                    w["end_line"].as_u64().unwrap(),
                    w["end_column"].as_u64().unwrap()
                ),
                "{}: {}",
                f.display(),
                g["message"]
            );
            let sev = if w["severity"] == "error" { 1 } else { 2 };
            assert_eq!(g["severity"], sev);
            if let Some(h) = w["help"].as_str() {
                let related = g["relatedInformation"].as_array().expect("help as related information");
                assert!(related.iter().any(|r| r["message"] == format!("help: {h}")), "{g:#}");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, expected.len());
    assert_eq!(c.shutdown(), 0);
}

/// Secondary labels become related information at their own places.
#[test]
fn secondary_labels_are_related_information() {
    let text = std::fs::read_to_string(data("tests/data/check/err/dependency_cycle.tool")).unwrap();
    let ws = workspace(&[("a.tool", &text)]);
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("a.tool"));
    let diags = c.diagnostics(&u);
    let with_labels: Vec<&Value> = diags
        .iter()
        .filter(|d| {
            d["relatedInformation"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| !x["message"].as_str().unwrap().starts_with("help:")))
        })
        .collect();
    assert!(!with_labels.is_empty(), "{diags:#?}");
    for d in with_labels {
        for r in d["relatedInformation"].as_array().unwrap() {
            assert_eq!(r["location"]["uri"], u);
        }
    }
    c.shutdown();
}

/// Columns are UTF-16 code units unless the client offers UTF-8.
#[test]
fn position_encodings() {
    let text = "{\"description\": \"é𝄞\", \"instructions\": [{\"execution_id\": \"a\", \"tool_definition_path\": \"/x.tool\", \"arguments\": {\"v\": \"REF:nope.x\"}}]}";
    let ws = workspace(&[("t.tool", text)]);
    let byte = text.find("nope").unwrap() as u64;
    for (caps, encoding, column) in [
        (json!({}), "utf-16", byte - 1 - 2),
        (json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}}), "utf-8", byte),
    ] {
        let mut c = Client::in_process();
        let init = c.initialize(ws.path(), caps, json!(null));
        assert_eq!(init["capabilities"]["positionEncoding"], encoding);
        let u = c.open(&ws.path().join("t.tool"));
        let diags = c.diagnostics(&u);
        let d = diags.iter().find(|d| d["code"] == "E0108").expect("unknown step");
        assert_eq!(d["range"]["start"]["character"].as_u64().unwrap(), column, "{encoding}");
        c.shutdown();
    }
}

/// Incremental changes re-check the file; a changed callee re-checks its open callers.
#[test]
fn changes_recheck_the_file_and_its_callers() {
    let ws = sample();
    let mut c = start(ws.path());
    let main = c.open(&ws.path().join("main.tool"));
    assert_eq!(c.diagnostics(&main), Vec::<Value>::new());
    let lister = c.open(&ws.path().join("tools/lister.tool"));
    assert_eq!(c.diagnostics(&lister), Vec::<Value>::new());
    let _ = c.diagnostics(&main); // an open caller of lister: re-checked on open too
                                  // Break a REF in main: `REF:scan.total` → `REF:scna.total` (one character).
    let (line, col) = find(MAIN, "REF:scan.total\", \"d", 6);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": main, "version": 2}, "contentChanges": [{"range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 2}}, "text": "na"}]}),
    );
    let d = c.diagnostics(&main);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0]["code"], "E0108");
    assert_eq!(d[0]["range"]["start"], json!({"line": line, "character": col - 2}));
    // Undo it.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": main, "version": 3}, "contentChanges": [{"range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 2}}, "text": "an"}]}),
    );
    assert_eq!(c.diagnostics(&main), Vec::<Value>::new());
    // The callee stops declaring `total`: main, open, now reads an undeclared response.
    let edited = LISTER.replace(r#", {"name": "total", "type_name": "integer", "required": true}"#, "");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": lister, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    assert_eq!(c.diagnostics(&lister), Vec::<Value>::new());
    let d = c.diagnostics(&main);
    assert!(d.iter().any(|d| d["message"].as_str().unwrap().contains("total")), "{d:#?}");
    c.shutdown();
}

/// Issue 28: a burst of edits is analysed once, on its latest text (it was one analysis
/// per edit: 200 quick edits of a 20,000-step file left the next request waiting 91 s),
/// and a request after them sees that text.
#[test]
fn quick_edits_are_coalesced_into_one_analysis() {
    let ws = sample();
    let mut c = start(ws.path());
    let main = c.open(&ws.path().join("main.tool"));
    assert_eq!(c.diagnostics(&main), Vec::<Value>::new());
    let broken = MAIN.replace("REF:scan.total\", \"d", "REF:scna.total\", \"d");
    for version in 2..=101 {
        let text = if version % 2 == 1 { &broken } else { MAIN };
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": main, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
    // The request is answered after the latest text is analysed.
    let _ = c.request("textDocument/hover", at(&main, 0, 0));
    let published = c.take_published(&main);
    assert!(!published.is_empty() && published.len() <= 25, "{} analyses for 100 edits", published.len());
    let last = published.last().unwrap();
    assert_eq!(last["version"], 101);
    assert_eq!(last["diagnostics"][0]["code"], "E0108", "{last:#?}");
    c.shutdown();
}

#[test]
fn hover_shows_callees_arguments_types_and_functions() {
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let hover = |c: &mut Client, needle: &str, off: usize| hover_text(c, &u, MAIN, needle, off);
    let step = hover(&mut c, "REF:scan.files", 5);
    assert!(step.contains("**step `scan`** calls `/tools/lister.tool`"), "{step}");
    assert!(step.contains("result: `"), "{step}");
    assert!(step.contains("`directory`: `string` (required) — where to look"), "{step}");
    assert!(step.contains("`total`: `integer`"), "{step}");
    // A REF: what it reads, and its type.
    let arg = hover(&mut c, "REF:arguments.folder", 15);
    assert_eq!(arg, "**argument** `folder`: `string` (required)\n\ntype: `string`");
    let resp = hover(&mut c, "REF:scan.files", 10);
    assert_eq!(resp, "**response** `files`: `list<string>` (required)\n\ntype: `list<string>`");
    let in_expr = hover(&mut c, "REF:scan.total\"}}", 5);
    assert!(in_expr.starts_with("**step `scan`** calls `/tools/lister.tool`"), "{in_expr}");
    assert!(in_expr.ends_with("\n\ntype: `integer`"), "{in_expr}");
    // A function: its signature, and the type of the call.
    let func = hover(&mut c, "length(names", 2);
    assert!(func.starts_with("```\nlength(value)\n```"), "{func}");
    assert!(func.ends_with("\n\n`length(names)`: `integer`"), "{func}");
    // A variable read in an expression: its text, and its type there.
    let var = hover(&mut c, "names)", 1);
    assert_eq!(var, "**variable `names`** = `\"REF:scan.files\"`\n\n`names`: `list<string>`");
    // Any other part of an expression: the innermost sub-expression and its type.
    let op = hover(&mut c, " + REF:scan.total", 1);
    assert_eq!(op, "`length(names) + REF:scan.total`: `integer`");
    let out = hover(&mut c, "\"count\": \"length", 1);
    assert!(out.contains("type: `integer`"), "{out}");
    assert_eq!(out.matches("type:").count(), 1, "{out}");
    let path = hover(&mut c, "/tools/lister.tool", 3);
    assert!(path.contains("Lists a directory"), "{path}");
    // Nothing under the cursor: no hover.
    assert_eq!(c.request("textDocument/hover", at(&u, 0, 0)).unwrap(), Value::Null);
    c.shutdown();
}

const JOINED: &str = r#"{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}},
    {"execution_id": "rescan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}},
    {"execution_id": "join",
     "transform_responses": {"variables": {"a": "REF:scan.files"}, "transforms": {"n": "length(a) + REF:rescan.total"}}},
    {"execution_id": "sum", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:join.n"}}
  ],
  "response_reference_map": {"doubled": "REF:sum.doubled"}
}"#;

/// A transform step (SPEC §6.4 ext) has no tool: hover says what it is, completion offers
/// its outputs and no `response`, and a key of a call on it is flagged at the key.
#[test]
fn a_transform_step_in_the_editor() {
    let ws = workspace(&[("tools/lister.tool", LISTER), ("tools/counter.tool", COUNTER), ("main.tool", JOINED)]);
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    assert_eq!(c.diagnostics(&u), Vec::<Value>::new());
    let step = hover_text(&mut c, &u, JOINED, "REF:join.n", 5);
    assert!(step.starts_with("**transform step `join`**: calls nothing"), "{step}");
    assert!(step.contains("result: `object{n: integer}`"), "{step}");
    let n = hover_text(&mut c, &u, JOINED, "REF:join.n", 9);
    assert!(n.ends_with("type: `integer`"), "{n}");
    let complete = |c: &mut Client, text: &str, needle: &str, off: usize| -> Vec<String> {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [{"text": text}]}),
        );
        c.diagnostics(&u);
        let (l, ch) = find(text, needle, off);
        labels(&c.request("textDocument/completion", at(&u, l, ch)).unwrap())
    };
    // Its fields are its transforms' outputs; it has no response.
    assert_eq!(complete(&mut c, JOINED, "REF:join.n", 9), ["n"]);
    // Inside its own transforms, the contexts are the other steps, with no `response`.
    let contexts = complete(&mut c, JOINED, "REF:scan.files\"}, \"transforms\"", 4);
    assert_eq!(contexts, ["arguments", "scan", "rescan", "sum"]);
    // A key of a call on it: E0522 at the key.
    let with_retry = JOINED.replacen("\"execution_id\": \"join\",", "\"execution_id\": \"join\", \"retry\": {},", 1);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 10}, "contentChanges": [{"text": with_retry}]}),
    );
    let diags = c.diagnostics(&u);
    let d = diags.iter().find(|d| d["code"] == "E0522").unwrap_or_else(|| panic!("{diags:#?}"));
    let (l, ch) = find(&with_retry, "\"retry\"", 0);
    assert_eq!(d["range"]["start"], json!({"line": l, "character": ch}), "{d:#}");
    assert_eq!(d["range"]["end"], json!({"line": l, "character": ch + 7}), "{d:#}");
    c.shutdown();
}

/// The format's keys are completed and hovered from the one table of keys
/// (`tdsl::testing::tool::keys`, issue 30): every key of the level, with its shape and its doc.
#[test]
fn keys_are_completed_and_hovered_from_the_table_of_keys() {
    use tdsl::testing::tool::keys::Level;
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let hover = |c: &mut Client, needle: &str, off: usize| hover_text(c, &u, MAIN, needle, off);
    let doc = |level: Level, key: &str| level.key(key).unwrap().doc;
    let deps = hover(&mut c, "\"dependencies\"", 3);
    assert!(deps.starts_with("**`dependencies`** — list of identifiers, key of an instruction"), "{deps}");
    assert!(deps.ends_with(doc(Level::Instruction, "dependencies")), "{deps}");
    let map = hover(&mut c, "\"response_reference_map\"", 1);
    assert!(
        map.contains("key of a tool definition") && map.ends_with(doc(Level::Tool, "response_reference_map")),
        "{map}"
    );
    let name = hover(&mut c, "\"name\": \"folder\"", 2);
    assert!(name.contains("key of an argument or response declaration (required)"), "{name}");
    let vars = hover(&mut c, "\"variables\"", 4);
    assert!(vars.ends_with(doc(Level::Transform, "variables")), "{vars}");
    // A key of a free-form object is no key of the format: `transforms`' outputs show
    // their type, an argument value's key nothing from the table.
    let out = hover(&mut c, "\"count\": \"length", 1);
    assert!(!out.contains("key of"), "{out}");
    let dir = hover(&mut c, "{\"directory\"", 3);
    assert!(!dir.contains("key of"), "{dir}");

    // Completion: every key of the level, in the table's order, each with its doc.
    let complete = |c: &mut Client, text: &str, needle: &str, off: usize| -> Value {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [{"text": text}]}),
        );
        c.diagnostics(&u);
        let (l, ch) = find(text, needle, off);
        c.request("textDocument/completion", at(&u, l, ch)).unwrap()
    };
    let top = MAIN.replacen("\"arguments\"", "\"\", \"arguments\"", 1);
    let items = complete(&mut c, &top, "\"\", \"arguments\"", 1);
    assert_eq!(labels(&items), Level::Tool.names().collect::<Vec<_>>());
    let output_key = items.as_array().unwrap().iter().find(|i| i["label"] == "output_key").unwrap();
    assert_eq!(output_key["detail"], "identifier");
    assert!(output_key["documentation"]["value"].as_str().unwrap().ends_with(doc(Level::Tool, "output_key")));
    let ins = MAIN.replacen("\"dependencies\"", "\"\": 1, \"dependencies\"", 1);
    let items = complete(&mut c, &ins, "\"\": 1, \"dependencies\"", 1);
    assert_eq!(labels(&items), Level::Instruction.names().collect::<Vec<_>>());
    let retry = MAIN.replacen("\"dependencies\"", "\"retry\": {\"\": 1}, \"dependencies\"", 1);
    let items = complete(&mut c, &retry, "{\"\": 1}", 2);
    assert_eq!(labels(&items), Level::Retry.names().collect::<Vec<_>>());
    let element = MAIN.replacen("\"type_name\": \"list\"}", "\"type_name\": \"list\", \"items\": {\"\": 1}}", 1);
    let items = complete(&mut c, &element, "{\"\": 1}", 2);
    assert_eq!(labels(&items), Level::Element.names().collect::<Vec<_>>());
    let cond = MAIN.replacen("\"dependencies\"", "\"conditions\": [{\"\": 1}], \"dependencies\"", 1);
    let items = complete(&mut c, &cond, "[{\"\": 1}", 3);
    let both: Vec<&str> = Level::ConditionLeaf.names().chain(Level::ConditionGroup.names()).collect();
    assert_eq!(labels(&items), both);
    c.shutdown();
}

/// Types from use and the inside of template strings, on hover.
#[test]
fn hover_shows_what_uses_demand_and_types_inside_templates() {
    const OPEN: &str = r#"{"arguments": [], "system_event_endpoint": "builtin:echo"}"#;
    const MAIN2: &str = r#"{
  "instructions": [
    {"execution_id": "open", "tool_definition_path": "/tools/open.tool"},
    {"execution_id": "use", "tool_definition_path": "/tools/open.tool",
     "transform_responses": {"variables": {"rows": "REF:open.rows"},
       "transforms": {"total": "sum(array=map(array=rows, template=\"item.n * 2\"))"}}}
  ]
}"#;
    let ws = workspace(&[("tools/open.tool", OPEN), ("main.tool", MAIN2)]);
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    let diags = c.diagnostics(&u);
    assert!(diags.iter().all(|d| d["severity"] != 1), "no errors: {diags:#?}");
    let mut hover = |needle: &str, off: usize| -> String {
        let (l, ch) = find(MAIN2, needle, off);
        let r = c.request("textDocument/hover", at(&u, l, ch)).unwrap();
        r["contents"]["value"].as_str().unwrap_or("").to_string()
    };
    let rows = hover("REF:open.rows", 10);
    assert!(rows.ends_with("type: `any` — its uses need `list | null`"), "{rows}");
    let product = hover("* 2", 0);
    assert_eq!(product, "`item.n * 2`: `number`");
    let field = hover("item.n", 5);
    assert_eq!(field, "`item.n`: `any`");
    c.shutdown();
}

/// `as="NAME"` (SPEC §4.4): completion offers `as=` in a call that takes a template and,
/// inside a nested template, the name an enclosing call gave its element; hover shows the
/// element's type through that name.
#[test]
fn completion_and_hover_of_the_name_as_gives() {
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let named = MAIN.replacen(
        "length(names) + REF:scan.total",
        r#"length(flatten(map(array=names, as=\"file\", template=map(array=names, template=file.length + item.length))))"#,
        1,
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"text": named}]}),
    );
    let diags = c.diagnostics(&u);
    assert!(diags.iter().all(|d| d["severity"] != 1), "no errors: {diags:#?}");
    let hover = hover_text(&mut c, &u, &named, "file.length +", 2);
    assert_eq!(hover, "`file`: `string`");
    let (l, ch) = find(&named, "file.length +", 2);
    let items = labels(&c.request("textDocument/completion", at(&u, l, ch)).unwrap());
    assert!(items.contains(&"file".to_string()), "the outer element's name: {items:?}");
    assert!(items.contains(&"as=".to_string()), "the inner map's `as=`: {items:?}");
    // In `length(…)`, which takes no template, neither.
    let (l, ch) = find(&named, "flatten(", 3);
    let items = labels(&c.request("textDocument/completion", at(&u, l, ch)).unwrap());
    assert!(!items.contains(&"as=".to_string()) && !items.contains(&"file".to_string()), "{items:?}");
    c.shutdown();
}

#[test]
fn definition_across_files() {
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let lister_uri = uri(&ws.path().join("tools/lister.tool"));
    let def = |c: &mut Client, needle: &str, off: usize| -> Value {
        let (l, ch) = find(MAIN, needle, off);
        c.request("textDocument/definition", at(&u, l, ch)).unwrap()
    };
    let (l, ch) = find(MAIN, "\"scan\", \"tool", 1);
    let step = def(&mut c, "REF:scan.files", 5);
    assert_eq!(
        step,
        json!({"uri": u, "range": {"start": {"line": l, "character": ch}, "end": {"line": l, "character": ch + 4}}})
    );
    assert_eq!(def(&mut c, "[\"scan\"]", 3)["range"]["start"], json!({"line": l, "character": ch}));
    let (l, ch) = find(MAIN, "\"folder\"", 1);
    assert_eq!(def(&mut c, "REF:arguments.folder", 16)["range"]["start"], json!({"line": l, "character": ch}));
    let resp = def(&mut c, "REF:scan.files", 10);
    assert_eq!(resp["uri"], lister_uri);
    let (l, ch) = find(LISTER, "\"files\"", 1);
    assert_eq!(resp["range"]["start"], json!({"line": l, "character": ch}));
    let callee_arg = def(&mut c, "\"directory\"", 2);
    assert_eq!(callee_arg["uri"], lister_uri);
    let file = def(&mut c, "/tools/lister.tool", 2);
    assert_eq!(
        file,
        json!({"uri": lister_uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}})
    );
    c.shutdown();
}

#[test]
fn references_across_the_workspace() {
    let ws = sample();
    let mut c = start(ws.path());
    let lister = c.open(&ws.path().join("tools/lister.tool"));
    c.diagnostics(&lister);
    // The argument `directory`, from its declaration: the two callers' `arguments` keys.
    let (l, ch) = find(LISTER, "\"directory\"", 2);
    let mut p = at(&lister, l, ch);
    p["context"] = json!({"includeDeclaration": true});
    let refs = c.request("textDocument/references", p.clone()).unwrap();
    let refs = refs.as_array().unwrap();
    assert_eq!(refs.len(), 3, "{refs:#?}");
    let main_uri = uri(&ws.path().join("main.tool"));
    assert_eq!(refs.iter().filter(|r| r["uri"] == main_uri).count(), 2);
    p["context"] = json!({"includeDeclaration": false});
    assert_eq!(c.request("textDocument/references", p).unwrap().as_array().unwrap().len(), 2);
    // The response `total`: the REFs in main (a REF string and one inside an expression).
    let (l, ch) = find(LISTER, "\"total\"", 2);
    let mut p = at(&lister, l, ch);
    p["context"] = json!({"includeDeclaration": false});
    let refs = c.request("textDocument/references", p).unwrap();
    assert_eq!(refs.as_array().unwrap().len(), 2, "{refs:#?}");
    c.shutdown();
}

/// References read the files on disk once and reuse what they found while a file's text and
/// the files its steps call stay the same: an edit made outside the editor, and a callee
/// created after the first request, are each seen by the next request.
#[test]
fn references_see_files_changed_on_disk_between_requests() {
    let ws = sample();
    let mut c = start(ws.path());
    let lister = c.open(&ws.path().join("tools/lister.tool"));
    c.diagnostics(&lister);
    let (l, ch) = find(LISTER, "\"directory\"", 2);
    let mut p = at(&lister, l, ch);
    p["context"] = json!({"includeDeclaration": false});
    let count =
        |c: &mut Client, p: &Value| c.request("textDocument/references", p.clone()).unwrap().as_array().unwrap().len();
    assert_eq!(count(&mut c, &p), 2);
    // main.tool edited on disk: one call less.
    let one_call = MAIN.replace(
        r#",
    {"execution_id": "rescan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}}"#,
        "",
    );
    assert_ne!(one_call, MAIN);
    std::fs::write(ws.path().join("main.tool"), &one_call).unwrap();
    assert_eq!(count(&mut c, &p), 1);
    // A caller of a tool that did not exist yet: its key names nothing...
    let later = r#"{"instructions": [{"execution_id": "x", "tool_definition_path": "/tools/later.tool", "arguments": {"directory": "d"}}]}"#;
    std::fs::write(ws.path().join("caller.tool"), later).unwrap();
    assert_eq!(count(&mut c, &p), 1);
    // ...until the tool is made (the caller's text unchanged): a link to the lister.
    std::fs::write(ws.path().join("tools/later.tool"), LISTER).unwrap();
    let later_tool = c.open(&ws.path().join("tools/later.tool"));
    c.diagnostics(&later_tool);
    let mut q = at(&later_tool, l, ch);
    q["context"] = json!({"includeDeclaration": false});
    assert_eq!(count(&mut c, &q), 1, "the caller's key is found once its callee exists");
    c.shutdown();
}

#[test]
fn rename_a_step_updates_every_ref() {
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let (l, ch) = find(MAIN, "\"scan\"", 2);
    let mut p = at(&u, l, ch);
    p["newName"] = json!("listing");
    let edit = c.request("textDocument/rename", p.clone()).unwrap();
    let edits = edit["changes"][&u].as_array().unwrap().clone();
    // execution_id, dependencies, REF:scan.files (variable), REF:scan.total in the
    // expression and in response_reference_map.
    assert_eq!(edits.len(), 5, "{edits:#?}");
    let renamed = apply(MAIN, &edits);
    assert_eq!(renamed.matches("listing").count(), 5, "{renamed}");
    assert!(!renamed.contains("\"scan\"") && !renamed.contains("REF:scan"), "{renamed}");
    assert!(renamed.contains("\"REF:listing.total\"") && renamed.contains("+ REF:listing.total"), "{renamed}");
    // Collisions and bad names are refused with a message.
    p["newName"] = json!("sum");
    assert_eq!(
        c.request("textDocument/rename", p.clone()).unwrap_err(),
        "cannot rename `scan` to `sum`: a step `sum` already exists"
    );
    p["newName"] = json!("response");
    assert!(c.request("textDocument/rename", p.clone()).unwrap_err().contains("reserved"));
    p["newName"] = json!("9x");
    assert!(c.request("textDocument/rename", p).unwrap_err().contains("not a valid name"));
    c.shutdown();
}

#[test]
fn rename_an_argument_updates_its_callers() {
    let ws = sample();
    let mut c = start(ws.path());
    let lister = c.open(&ws.path().join("tools/lister.tool"));
    c.diagnostics(&lister);
    let (l, ch) = find(LISTER, "\"directory\"", 3);
    let mut p = at(&lister, l, ch);
    p["newName"] = json!("dir");
    let edit = c.request("textDocument/rename", p.clone()).unwrap();
    let main_uri = uri(&ws.path().join("main.tool"));
    assert_eq!(edit["changes"][&lister].as_array().unwrap().len(), 1);
    let main_edits = edit["changes"][&main_uri].as_array().unwrap();
    assert_eq!(main_edits.len(), 2);
    let renamed = apply(MAIN, main_edits);
    assert_eq!(renamed.matches("\"dir\": \"REF:arguments.folder\"").count(), 2, "{renamed}");
    // Issue 28: a caller's `transform_arguments` output that passes the argument is
    // renamed with it (and the names that read it), else `check` reports E0611 and E0101.
    let counter = c.open(&ws.path().join("tools/counter.tool"));
    c.diagnostics(&counter);
    let (l, ch) = find(COUNTER, "\"count\"", 3);
    let mut p = at(&counter, l, ch);
    p["newName"] = json!("n");
    let edit = c.request("textDocument/rename", p.clone()).unwrap();
    let renamed = apply(MAIN, edit["changes"][&main_uri].as_array().unwrap());
    assert!(renamed.contains(r#""transforms": {"n": "length(names) + REF:scan.total"}"#), "{renamed}");
    // A name the caller's block already has is refused.
    p["newName"] = json!("names");
    let refused = c.request("textDocument/rename", p).unwrap_err();
    assert!(refused.contains("step `sum`") && refused.contains("already has a name `names`"), "{refused}");
    // In the composite: the declaration and its REFs.
    let main = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&main);
    let (l, ch) = find(MAIN, "REF:arguments.folder", 15);
    let mut p = at(&main, l, ch);
    p["newName"] = json!("dir");
    let edit = c.request("textDocument/rename", p.clone()).unwrap();
    let renamed = apply(MAIN, edit["changes"][&main].as_array().unwrap());
    assert!(renamed.contains("{\"name\": \"dir\"") && renamed.matches("REF:arguments.dir").count() == 2, "{renamed}");
    // A taken name is refused.
    let text = MAIN.replace(
        r#"[{"name": "folder", "type_name": "string", "required": true}]"#,
        r#"[{"name": "folder"}, {"name": "other"}]"#,
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": main, "version": 2}, "contentChanges": [{"text": text}]}),
    );
    c.diagnostics(&main);
    let (l, ch) = find(&text, "REF:arguments.folder", 15);
    let mut p = at(&main, l, ch);
    p["newName"] = json!("other");
    assert_eq!(
        c.request("textDocument/rename", p).unwrap_err(),
        "cannot rename `folder` to `other`: an argument `other` already exists"
    );
    // Not something that renames.
    let (l, ch) = find(&text, "length", 2);
    let mut p = at(&main, l, ch);
    p["newName"] = json!("x");
    assert!(c.request("textDocument/rename", p).unwrap_err().contains("only an execution id or an argument"));
    c.shutdown();
}

/// Applies LSP edits (UTF-16 positions, not overlapping) to `text`.
fn apply(text: &str, edits: &[Value]) -> String {
    let offset = |p: &Value| -> usize {
        let line = p["line"].as_u64().unwrap() as usize;
        let ch = p["character"].as_u64().unwrap() as usize;
        let start: usize = text.split('\n').take(line).map(|l| l.len() + 1).sum();
        let line_text = text[start..].split('\n').next().unwrap();
        let mut units = 0;
        for (i, c) in line_text.char_indices() {
            if units >= ch {
                return start + i;
            }
            units += c.len_utf16();
        }
        start + line_text.len()
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| (offset(&e["range"]["start"]), offset(&e["range"]["end"]), e["newText"].as_str().unwrap().to_string()))
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (a, b, t) in spans {
        out.replace_range(a..b, &t);
    }
    out
}

fn labels(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|i| i["label"].as_str().unwrap().to_string()).collect()
}

#[test]
fn completion_of_refs_keys_operators_and_expressions() {
    let ws = sample();
    let mut c = start(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let complete = |c: &mut Client, text: &str, needle: &str, off: usize| -> Vec<String> {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [{"text": text}]}),
        );
        c.diagnostics(&u);
        let (l, ch) = find(text, needle, off);
        labels(&c.request("textDocument/completion", at(&u, l, ch)).unwrap())
    };
    // REF contexts, from the step `sum`: the other steps and `arguments`.
    let ctx = complete(&mut c, MAIN, "REF:scan.files", 4);
    assert_eq!(ctx, ["arguments", "scan", "rescan"]);
    // The fields the callee declares, and the step's own.
    let fields = complete(&mut c, MAIN, "REF:scan.files", 9);
    assert_eq!(fields, ["files", "total", "response"]);
    let args = complete(&mut c, MAIN, "REF:arguments.folder\"}}", 14);
    assert_eq!(args, ["folder"]);
    // Keys: top level, an instruction's, the callee's arguments.
    let top = MAIN.replacen("\"arguments\"", "\"\", \"arguments\"", 1);
    let keys = complete(&mut c, &top, "\"\", \"arguments\"", 1);
    assert!(
        keys.contains(&"instructions".to_string()) && keys.contains(&"response_reference_map".to_string()),
        "{keys:?}"
    );
    let ins = MAIN.replacen("\"dependencies\"", "\"\": 1, \"dependencies\"", 1);
    let keys = complete(&mut c, &ins, "\"\": 1, \"dependencies\"", 1);
    assert!(keys.contains(&"parallel_execution".to_string()) && keys.contains(&"retry".to_string()), "{keys:?}");
    let callee_args = MAIN.replacen("{\"directory\"", "{\"\": 1, \"directory\"", 1);
    assert_eq!(complete(&mut c, &callee_args, "{\"\": 1", 2), ["directory"]);
    // Condition operators.
    let cond =
        MAIN.replacen("\"dependencies\"", "\"conditions\": [{\"param\": 1, \"operator\": \"\"}], \"dependencies\"", 1);
    let ops = complete(&mut c, &cond, "\"operator\": \"\"", 13);
    assert!(ops.contains(&"greater_than".to_string()) && ops.contains(&"not_exists".to_string()), "{ops:?}");
    // In an expression: keyword parameters of the call, functions, the block's names.
    let expr = complete(&mut c, MAIN, "length(names", 7);
    assert_eq!(expr[0], "value=");
    assert!(expr.contains(&"sum".to_string()) && expr.contains(&"names".to_string()), "{expr:?}");
    c.shutdown();
}

#[test]
fn code_actions_apply_suggestions_and_declare_arguments() {
    let ws = sample();
    let mut c = start(ws.path());
    let text = MAIN
        .replace("REF:scan.total\", \"d", "REF:sacn.total\", \"d")
        .replace("\"REF:arguments.folder\"}}\n  ]", "\"REF:arguments.root\"}}\n  ]");
    let u = c.open_text(&ws.path().join("main.tool"), &text);
    let diags = c.diagnostics(&u);
    assert_eq!(diags.len(), 2, "{diags:#?}");
    let actions = |c: &mut Client, d: &Value| -> Vec<Value> {
        let r = c
            .request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": u}, "range": d["range"], "context": {"diagnostics": [d]}}),
            )
            .unwrap();
        r.as_array().unwrap().clone()
    };
    let unknown = diags.iter().find(|d| d["code"] == "E0108").unwrap();
    let a = actions(&mut c, unknown);
    assert_eq!(a[0]["title"], "Replace with `REF:scan`");
    let fixed = apply(&text, a[0]["edit"]["changes"][&u].as_array().unwrap());
    assert!(fixed.contains("\"REF:scan.total\", \"d"), "{fixed}");
    let undeclared = diags.iter().find(|d| d["code"] == "E0604").unwrap();
    let a = actions(&mut c, undeclared);
    let declare = a.iter().find(|a| a["title"] == "Declare argument `root`").expect("declare action");
    let fixed = apply(&text, declare["edit"]["changes"][&u].as_array().unwrap());
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let left = c.diagnostics(&u);
    assert!(left.iter().all(|d| d["code"] != "E0604"), "{left:#?}\n{fixed}");
    c.shutdown();
}

#[test]
fn unsupported_and_malformed_requests_are_errors() {
    let ws = sample();
    let mut c = start(ws.path());
    let e = c.request("textDocument/formatting", json!({})).unwrap_err();
    assert!(e.contains("not supported"), "{e}");
    let e = c.request("textDocument/hover", json!({"nope": 1})).unwrap_err();
    assert!(e.contains("invalid parameters"), "{e}");
    // A document that is not open: no answer, no failure.
    let other = uri(&ws.path().join("main.tool"));
    assert_eq!(c.request("textDocument/hover", at(&other, 0, 0)).unwrap(), Value::Null);
    c.shutdown();
}

/// `tdsl schema` prints the checked-in `docs/tool-format.schema.json`.
#[test]
fn schema_matches_the_checked_in_copy() {
    let out = common::tdsl(&["schema"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let docs = std::fs::read_to_string(data("docs/tool-format.schema.json")).expect("docs/tool-format.schema.json");
    assert_eq!(out.stdout, docs, "run `tdsl schema > docs/tool-format.schema.json`");
    let schema: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        schema["$defs"]["condition"]["oneOf"][0]["properties"]["operator"]["enum"].as_array().unwrap().len(),
        12
    );
}

/// One raw frame read from the server: its JSON.
fn read_frame(r: &mut impl std::io::BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            length = v.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn write_frame(w: &mut impl std::io::Write, v: &Value) {
    let body = serde_json::to_vec(v).unwrap();
    write!(w, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
    w.write_all(&body).unwrap();
    w.flush().unwrap();
}

/// A `tests/data/lsp/frames/*.frame` file: its bytes (escapes `\r`, `\n`, `\xHH`, `\\`;
/// the file's own line ends and `#` lines are not part of them), the answers expected
/// before the next good request's, and extra arguments of `tdsl lsp`.
fn frame_case(text: &str) -> (Vec<u8>, Vec<String>, Vec<String>) {
    let mut bytes = Vec::new();
    let mut answers = Vec::new();
    let mut args = Vec::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if let Some(a) = c.strip_prefix("answer:") {
                answers.push(a.trim().to_string());
            } else if let Some(a) = c.strip_prefix("args:") {
                args.extend(a.split_whitespace().map(str::to_string));
            }
            continue;
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                match b[i + 1] {
                    b'r' => bytes.push(b'\r'),
                    b'n' => bytes.push(b'\n'),
                    b'\\' => bytes.push(b'\\'),
                    b'x' => {
                        bytes.push(u8::from_str_radix(&line[i + 2..i + 4], 16).unwrap());
                        i += 2;
                    }
                    other => panic!("unknown escape \\{}", other as char),
                }
                i += 2;
            } else {
                bytes.push(b[i]);
                i += 1;
            }
        }
    }
    (bytes, answers, args)
}

/// Issue 28: every malformed frame of `tests/data/lsp/frames` after a good `initialize`:
/// the server answers what it can (the `# answer:` lines, in order), skips the rest, still
/// answers the good request that follows, and ends cleanly on `shutdown`/`exit`.
#[test]
fn malformed_frames_do_not_end_the_server() {
    use std::io::{BufReader, Write};
    use std::process::{Command, Stdio};
    let dir = data("tests/data/lsp/frames");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "frame"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the cases are there");
    let mut failures = Vec::new();
    for f in &files {
        let (bytes, want, args) = frame_case(&std::fs::read_to_string(f).unwrap());
        let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .arg("lsp")
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tdsl lsp starts");
        let mut stdin = child.stdin.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            while let Some(v) = read_frame(&mut r) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let next = || rx.recv_timeout(std::time::Duration::from_secs(60));
        write_frame(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "capabilities": {}}}),
        );
        assert_eq!(next().expect("initialize is answered")["id"], 1);
        write_frame(&mut stdin, &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        stdin.write_all(&bytes).unwrap();
        let good = json!({"jsonrpc": "2.0", "id": 99, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": "file:///nowhere/b.tool"}, "position": {"line": 0, "character": 0}}});
        write_frame(&mut stdin, &good);
        let mut got = Vec::new();
        let answered = loop {
            let Ok(v) = next() else { break false };
            if v["id"] == 99 {
                break true;
            }
            if v.get("method").is_some() {
                continue;
            }
            got.push(match v.get("error") {
                Some(e) => format!("error {} {}", e["code"], v["id"]),
                None => format!("result {}", v["id"]),
            });
        };
        write_frame(&mut stdin, &json!({"jsonrpc": "2.0", "id": 100, "method": "shutdown"}));
        write_frame(&mut stdin, &json!({"jsonrpc": "2.0", "method": "exit"}));
        drop(stdin);
        let status = child.wait().unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        if !answered || got != want || status.code() != Some(0) {
            failures.push(format!(
                "{name}: good request answered: {answered}; answers {got:?}, want {want:?}; exit {:?}",
                status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Copies the `.tool` files under `from` into `to`, keeping their folders.
fn copy_tools(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tools(&p, &dest);
        } else if p.extension().is_some_and(|x| x == "tool") {
            std::fs::write(&dest, std::fs::read(&p).unwrap()).unwrap();
        }
    }
}

fn tool_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            tool_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "tool") {
            out.push(p);
        }
    }
    out.sort();
}

/// The errors `check` reports for a file (codes and messages).
fn check_errors(root: &Path, file: &Path) -> Vec<String> {
    let mut a = tdsl::Analyzer::new(tdsl::ToolRoot::new(root));
    let checked = a.check_file(file).expect("readable");
    checked.diagnostics.iter().filter(|d| d.is_error()).map(|d| format!("{}: {}", d.code.as_str(), d.message)).collect()
}

/// The (line, UTF-16 column) of byte `at`.
fn position_of(text: &str, at: usize) -> (u32, u32) {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..line_start].matches('\n').count();
    let col: usize = text[line_start..at].chars().map(char::len_utf16).sum();
    (line as u32, col as u32)
}

/// Issue 28: over the check corpus (`root/` and `ok/`), renaming every step and argument
/// (from every place it is named), to a fresh name and to names the file already uses,
/// is either refused or leaves every file that checked clean still clean. Renaming a
/// composite's argument used to leave the callers' `transform_arguments` outputs that
/// pass it (and the names reading them), and `check` then reported E0611 and E0101.
#[test]
fn renames_keep_clean_files_clean_over_the_corpus() {
    use tdsl::testing::lsp::symbols::{occurrences, Resolver, Sym};
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    copy_tools(&data("tests/data/check/root"), &root);
    std::fs::create_dir_all(root.join("ok")).unwrap();
    copy_tools(&data("tests/data/check/ok"), &root.join("ok"));
    let mut all = Vec::new();
    tool_files(&root, &mut all);
    let clean: Vec<PathBuf> = all.iter().filter(|f| check_errors(&root, f).is_empty()).cloned().collect();
    assert!(clean.len() > 100, "{} clean files", clean.len());
    let tool_path = |f: &Path| format!("\"/{}\"", f.strip_prefix(&root).unwrap().display());
    let mut c = Client::in_process();
    c.initialize(&root, json!({}), json!({"root": root}));
    let engine = tdsl::Engine::new();
    let mut done = std::collections::HashSet::new();
    let (mut renamed, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for f in &clean {
        let text = std::fs::read_to_string(f).unwrap();
        let tool = tdsl::testing::tool::load(&text).0.expect("a clean file loads");
        let occs = occurrences(&engine, f, &tool, &Resolver { root: &root });
        let u = c.open(f);
        c.diagnostics(&u);
        // Names the file already uses: a rename to one of them must be refused or harmless.
        let mut taken: Vec<String> = Vec::new();
        for o in &occs {
            let (Sym::Variable { name, .. } | Sym::Step { id: name, .. } | Sym::Argument { name, .. }) = &o.sym else {
                continue;
            };
            if !taken.contains(name) && taken.len() < 2 {
                taken.push(name.clone());
            }
        }
        for o in &occs {
            if !matches!(o.sym, Sym::Step { .. } | Sym::Argument { .. }) || !done.insert(o.sym.clone()) {
                continue;
            }
            let (line, col) = position_of(&text, o.span.start as usize);
            for new in std::iter::once("renamed_x".to_string()).chain(taken.iter().cloned()) {
                let mut p = at(&u, line, col);
                p["newName"] = json!(new);
                let Ok(edit) = c.request("textDocument/rename", p) else {
                    refused += 1;
                    continue;
                };
                renamed += 1;
                let changes = edit["changes"].as_object().cloned().unwrap_or_default();
                let mut originals = Vec::new();
                for (file_uri, edits) in &changes {
                    let path = lsp_types::Url::parse(file_uri).unwrap().to_file_path().unwrap();
                    let before = std::fs::read_to_string(&path).unwrap();
                    std::fs::write(&path, apply(&before, edits.as_array().unwrap())).unwrap();
                    originals.push((path, before));
                }
                // The changed files and the clean files that call one of them.
                let paths: Vec<String> = originals.iter().map(|(p, _)| tool_path(p)).collect();
                for g in &clean {
                    let changed = originals.iter().any(|(p, _)| p == g);
                    if !changed && !paths.iter().any(|tp| std::fs::read_to_string(g).unwrap().contains(tp.as_str())) {
                        continue;
                    }
                    let errors = check_errors(&root, g);
                    if !errors.is_empty() {
                        failures.push(format!(
                            "renaming {:?} (at {}:{}) to `{new}` breaks {}: {errors:?}",
                            o.sym,
                            f.display(),
                            line + 1,
                            g.display()
                        ));
                    }
                }
                for (path, before) in originals {
                    std::fs::write(path, before).unwrap();
                }
            }
        }
        c.notify("textDocument/didClose", json!({"textDocument": {"uri": u}}));
    }
    assert!(renamed > 100 && refused > 10, "{renamed} renames, {refused} refused");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    c.shutdown();
}

// ---------------------------------------------------------------------------------------
// Hostile round on hover and completion of the format's keys (docs/editors.md, "Hostile
// round"): the real binary over stdio.

fn binary(root: &Path) -> Client {
    let mut c = Client::binary();
    c.initialize(root, json!({}), json!(null));
    c
}

fn hover_text(c: &mut Client, u: &str, text: &str, needle: &str, off: usize) -> String {
    let (l, ch) = find(text, needle, off);
    let r = c.request("textDocument/hover", at(u, l, ch)).expect("hover answers");
    r["contents"]["value"].as_str().unwrap_or("").to_string()
}

/// Keys at each of the nine kinds of object hover as that kind's; a key of the same name
/// inside a value the writer shapes (a step's `arguments`, `done_value`, a `default`, an
/// `enum`, transform `variables`) is the writer's, not the format's: it hovered as
/// `retry`'s `max_retries`, and completion offered `retry`'s keys and condition operators
/// there.
#[test]
fn hostile_keys_hover_by_where_they_are_from_the_root() {
    const T: &str = r#"{"description": "d",
 "arguments": [{"name": "a", "type_name": "list", "items": {"type_name": "string", "pattern": "x"},
   "default": {"retry": {"max_retries": 1}}, "enum": [{"parallel_execution": {"iterate_over": []}}]}],
 "instructions": [{"execution_id": "s", "tool_definition_path": "/t.tool",
   "arguments": {"retry": {"jitter": 1}, "conditions": [{"operator": "equals"}], "items": {"minimum": 1}},
   "conditions": [{"logic": "AND", "conditions": [{"param": 1, "operator": "exists"}]}],
   "parallel_execution": {"iterate_over": [], "child_argument_name": "c"},
   "retry": {"factor": 2},
   "transform_responses": {"variables": {"v": {"retry": {"base_delay_seconds": 1}}}, "transforms": {}},
   "done_value": {"retry": {"max_delay_seconds": 1}}}],
 "\u0072esponse_reference_map": {}}"#;
    let ws = workspace(&[]);
    let mut c = binary(ws.path());
    let u = c.open_text(&ws.path().join("main.tool"), T);
    for (needle, off, kind) in [
        ("\"description\"", 1, "a tool definition"),
        ("\"instructions\"", 1, "a tool definition"),
        ("\"execution_id\"", 1, "an instruction"),
        ("\"type_name\": \"list\"", 1, "an argument or response declaration"),
        ("\"pattern\"", 1, "an element declaration (`items`)"),
        ("\"child_argument_name\"", 1, "`parallel_execution`"),
        ("\"factor\"", 1, "`retry`"),
        ("\"variables\"", 1, "a transform block"),
        ("\"logic\"", 1, "a condition group"),
        ("\"param\"", 1, "a condition"),
        // Escapes are decoded, as the loader reads the key.
        ("\\u0072esponse_reference_map", 8, "a tool definition"),
    ] {
        let h = hover_text(&mut c, &u, T, needle, off);
        assert!(h.contains(&format!("key of {kind}")), "{needle}: {h}");
    }
    for needle in [
        "\"max_retries\"",
        "\"iterate_over\": []}}]",
        "\"jitter\"",
        "\"operator\": \"equals\"",
        "\"minimum\"",
        "\"base_delay_seconds\"",
        "\"max_delay_seconds\"",
    ] {
        let h = hover_text(&mut c, &u, T, needle, 2);
        assert!(!h.contains("key of"), "{needle} is no key of the format here: {h}");
    }
    // A string left open while typing ends at its line: the keys after it still hover and
    // complete (they found nothing: the rest of the file read as inside strings).
    let open = T.replacen("\"description\": \"d\",", "\"descr\n", 1).replacen(
        "{\"factor\": 2}",
        "{\"factor\": 2, \"\": 1}",
        1,
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 8}, "contentChanges": [{"text": open}]}),
    );
    let h = hover_text(&mut c, &u, &open, "\"factor\"", 2);
    assert!(h.contains("key of `retry`"), "{h}");
    let (l, ch) = find(&open, "\"\": 1}", 1);
    assert_eq!(labels(&c.request("textDocument/completion", at(&u, l, ch)).expect("completion")).len(), 5);
    // Completion there: no keys, no operators.
    let complete = |c: &mut Client, text: &str, needle: &str, off: usize| -> Vec<String> {
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": 9}, "contentChanges": [{"text": text}]}),
        );
        let (l, ch) = find(text, needle, off);
        labels(&c.request("textDocument/completion", at(&u, l, ch)).expect("completion answers"))
    };
    let in_args = T.replace("{\"jitter\": 1}", "{\"\": 1}");
    assert_eq!(complete(&mut c, &in_args, "{\"\": 1}", 2), Vec::<String>::new());
    let op_in_args = T.replace("[{\"operator\": \"equals\"}]", "[{\"operator\": \"\"}]");
    assert_eq!(complete(&mut c, &op_in_args, "\"operator\": \"\"", 13), Vec::<String>::new());
    // ... and the format's, where the format is.
    let in_retry = T.replace("{\"factor\": 2}", "{\"\": 2}");
    assert_eq!(complete(&mut c, &in_retry, "{\"\": 2}", 2).len(), 5);
    let op = T.replace("\"operator\": \"exists\"", "\"operator\": \"\"");
    assert!(complete(&mut c, &op, "\"operator\": \"\"", 13).contains(&"exists".to_string()));
    c.shutdown();
}

/// A file whose lines end with a lone `\r` (LSP's third line end): the server counted one
/// line, so hovers on later lines found nothing, diagnostics all sat on line 0, and an
/// edit on line 2 landed at the end of the text.
#[test]
fn hostile_a_lone_carriage_return_ends_a_line() {
    let text = "{\"description\": 1,\r\"retry\": 1,\r\"x\": 2}";
    let ws = workspace(&[]);
    let mut c = binary(ws.path());
    let u = c.open_text(&ws.path().join("main.tool"), text);
    let diags = c.diagnostics(&u);
    let retry = diags.iter().find(|d| d["message"].as_str().is_some_and(|m| m.contains("`retry`"))).expect("E0101");
    assert_eq!(retry["range"]["start"], json!({"line": 1, "character": 0}), "{retry}");
    let h = c.request("textDocument/hover", at(&u, 0, 3)).expect("hover");
    assert!(h["contents"]["value"].as_str().unwrap_or("").contains("`description`"), "{h}");
    // `"x"` on line 2 becomes `"retry"`: two unknown `retry` keys (and a duplicate), no
    // JSON error.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": u, "version": 2}, "contentChanges": [{"range": {"start": {"line": 2, "character": 1}, "end": {"line": 2, "character": 2}}, "text": "retry"}]}),
    );
    let diags = c.diagnostics(&u);
    let lines: Vec<&Value> = diags
        .iter()
        .filter(|d| d["message"].as_str().is_some_and(|m| m.starts_with("unknown key `retry`")))
        .map(|d| &d["range"]["start"]["line"])
        .collect();
    assert_eq!(
        lines,
        [&json!(1), &json!(2)],
        "{:#?}",
        diags.iter().map(|d| (&d["range"], &d["message"])).collect::<Vec<_>>()
    );
    c.shutdown();
}

/// Text from the files (a callee's description, names, expressions, types naming the
/// file's keys) reaches hover Markdown as it is written: control characters (a terminal's
/// escape sequences) shown as `\u001b`, code spans fenced so that a backtick inside does
/// not end them, and a description's fence or HTML unable to swallow the rest of the hover.
/// Completion inserts a name escaped as the JSON string must hold it.
#[test]
fn hostile_file_text_reaches_hover_and_completion_literally() {
    const EVIL: &str = r#"{"description": "Evil \u001b[31mRED\u001b[0m ``` <!-- # x",
 "arguments": [{"name": "ok", "type_name": "string", "description": "a ` b \u202e c"}],
 "responses": [{"name": "r", "type_name": "string"}],
 "system_event_endpoint": "builtin:echo"}"#;
    const MAIN3: &str = r#"{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/evil.tool", "arguments": {"ok": "x"},
   "transform_responses": {"variables": {"v`\"\u001b": "REF:response.r"}, "transforms": {"o": "'a`b' + 'c'", "p": ""}}}
 ]}"#;
    let ws = workspace(&[("tools/evil.tool", EVIL), ("main.tool", MAIN3)]);
    let mut c = binary(ws.path());
    let u = c.open(&ws.path().join("main.tool"));
    c.diagnostics(&u);
    let step = hover_text(&mut c, &u, MAIN3, "\"s\"", 1);
    // Markdown shows `\\u001b` as `\u001b`.
    assert!(step.contains("Evil \\\\u001b\\[31mRED\\\\u001b\\[0m \\`\\`\\` \\<!-- \\# x"), "{step}");
    assert!(step.contains("a \\` b \\\\u202e c"), "{step}");
    assert!(step.contains("responses: \n- `r`: `string`"), "{step}");
    assert!(!step.contains('\u{1b}') && !step.contains('\u{202e}'), "{step:?}");
    let var = hover_text(&mut c, &u, MAIN3, "v`", 0);
    assert!(var.starts_with("**variable ``v`\"\\u001b``** = "), "{var}");
    let out = hover_text(&mut c, &u, MAIN3, "\"o\"", 1);
    assert!(out.contains("= ``'a`b' + 'c'``"), "{out}");
    // Completing the variable's name in an expression inserts it escaped.
    let (l, ch) = find(MAIN3, "\"p\": \"\"", 6);
    let items = c.request("textDocument/completion", at(&u, l, ch)).expect("completion");
    let v = items.as_array().expect("items").iter().find(|i| i["detail"] == "variable").expect("the variable");
    assert_eq!(v["textEdit"]["newText"], "v`\\\"\\u001b", "{v}");
    // A callee's argument: its type as the (plain text) detail, its declaration as Markdown.
    let (l, ch) = find(MAIN3, "{\"ok\"", 2);
    let items = c.request("textDocument/completion", at(&u, l, ch)).expect("completion");
    let ok = &items[0];
    assert_eq!((&ok["label"], &ok["detail"]), (&json!("ok"), &json!("string")), "{ok}");
    assert!(ok["documentation"]["value"].as_str().is_some_and(|d| d.contains("a \\` b")), "{ok}");
    c.shutdown();
}

/// Hover and completion at every position (and past the ends) of broken, deep, escaped,
/// CRLF and surrogate-laden texts, with huge line and column numbers: each answers (null
/// or a result, never an error) and the server stays up.
#[test]
fn hostile_hover_and_completion_anywhere_in_broken_text() {
    let deep = format!("{{\"instructions\": [{{\"retry\": {}\"", "{\"retry\": [".repeat(10_000));
    let texts = [
        r#"{"instructions": [{"execution_id": "a", "retr"#.to_string(),
        r#"{instructions: [{execution_id: "a", retry: {max_retries: 1}}], 12: 3}"#.to_string(),
        r#"{"retry": 1, "retry": {"max_retries": 1}, "instructions": [{"retry": {"jitter": 0}, "retry": {}}]}"#
            .to_string(),
        r#"{"\u0000": 1, "\ud834\udd1e": 2, "\ud800": 3, "a\"b": 4, "instructions": [{"\u0072etry": {"\"": 1}}]}"#
            .to_string(),
        "{\"description\": \"𝄞𝄞\", \"𝄞retry𝄞\": 1,\r\n\t\"instructions\": [{\"retry\": {\"factor\": 1}}]\r\n}\r\n"
            .to_string(),
        "{\r\"retry\": {\r\"jitter\": 1}}\r".to_string(),
        r#"}}]]"""::,,{[{[\\"\"#.to_string(),
        String::new(),
    ];
    let ws = workspace(&[]);
    let mut c = binary(ws.path());
    for (n, text) in texts.iter().enumerate() {
        let u = c.open_text(&ws.path().join(format!("t{n}.tool")), text);
        let lines = text.split(['\n', '\r']).count() as u32;
        let mut positions: Vec<(u32, u32)> = (0..lines + 2).flat_map(|l| (0..90).map(move |ch| (l, ch))).collect();
        positions.extend([(0, u32::MAX), (u32::MAX, 0), (u32::MAX, u32::MAX)]);
        for (l, ch) in positions {
            for method in ["textDocument/hover", "textDocument/completion"] {
                let r = c.request(method, at(&u, l, ch));
                assert!(r.is_ok(), "{method} at {l}:{ch} of text {n}: {r:?}");
            }
        }
    }
    let u = c.open_text(&ws.path().join("deep.tool"), &deep);
    for ch in [3u32, 22, 30, deep.len() as u32 - 2, deep.len() as u32 + 5] {
        for method in ["textDocument/hover", "textDocument/completion"] {
            assert!(c.request(method, at(&u, 0, ch)).is_ok(), "{method} at {ch} of the deep text");
        }
    }
    // Wrong-typed positions are invalid parameters, answered.
    for pos in [json!({"line": -1, "character": 0}), json!({"line": "1", "character": 0}), json!(null)] {
        let e = c
            .request("textDocument/hover", json!({"textDocument": {"uri": u}, "position": pos}))
            .expect_err("invalid parameters");
        assert!(e.contains("invalid parameters"), "{e}");
    }
    assert_eq!(c.shutdown(), 0);
}
