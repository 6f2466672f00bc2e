//! `.tool` loading: data-driven tests over `tests/data/tool/{ok,err}` (see the README
//! there), the source mapping of JSON strings, and properties that must hold for any input.
//!
//! Regenerate snapshots with `cargo insta test --review --test tool`.

use std::fmt::Write as _;

use proptest::prelude::*;
use tdsl::testing::diagnostic::{render_plain, Code, Diagnostic};
use tdsl::testing::span::Span;
use tdsl::testing::tool::{self, JsonKind, JsonStr, LineIndex, ToolDef};

/// The text of `span` in `source`, or a marker when the span does not fall on characters.
fn text_at(source: &str, span: Span) -> String {
    source.get(span.range()).map_or_else(|| format!("<bad span {span}>"), str::to_string)
}

/// Every diagnostic with the text under its spans and its position, then miette's rendering.
fn describe(diags: &[Diagnostic], name: &str, source: &str) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::new();
    for d in diags {
        let p = lines.position(d.span);
        let _ = writeln!(out, "{} {:?}: {}", d.code, d.severity(), d.message);
        let _ = writeln!(
            out,
            "  at {}:{}-{}:{} `{}`{}",
            p.line,
            p.column,
            p.end_line,
            p.end_column,
            text_at(source, d.span),
            if d.label.is_empty() { String::new() } else { format!(" ({})", d.label) }
        );
        for l in &d.secondary {
            let _ = writeln!(out, "  and `{}` ({})", text_at(source, l.span), l.message);
        }
        if let Some(h) = &d.help {
            let _ = writeln!(out, "  help: {h}");
        }
    }
    out.push_str("\n---- rendered ----\n");
    out.push_str(&render_plain(diags, name, source));
    out
}

/// Every REF of a tool, with where it was written and the file text under each span.
fn describe_refs(tool: &ToolDef, source: &str) -> String {
    let mut out = String::new();
    let mut list = |owner: &str, sites: Vec<tool::RefSite>| {
        for s in sites {
            let segments: Vec<String> = s.path.segments.iter().map(|seg| text_at(source, seg.span)).collect();
            let _ = writeln!(
                out,
                "{owner} {:?}: `{}` context `{}` segments {segments:?}",
                s.place,
                text_at(source, s.span),
                text_at(source, s.path.context.span),
            );
        }
    };
    list("tool", tool.ref_sites());
    for ins in tool.instructions() {
        list(&ins.execution_id.node, ins.ref_sites());
    }
    if out.is_empty() {
        out.push_str("(no REF strings)\n");
    }
    out
}

/// What every `err/` case must report, stated beside the cases: `.tool` files are JSON,
/// which has no comments (and `json_comment.tool` shows the loader refuses them), so the
/// expectation cannot sit inside the file the way `# error:` does in `tests/data/expr`.
const ERR_EXPECTED: &str = "tests/data/tool/err/expected.txt";

/// `expected.txt`: `name.tool: CODE CODE…` per case, the code of every diagnostic in order.
fn read_expected() -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(ERR_EXPECTED).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(name, codes)| (name.trim().to_string(), codes.trim().to_string()))
        .collect()
}

#[test]
fn err_files() {
    let expected = read_expected();
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::new());
    insta::glob!("data/tool/err/*.tool", |path| {
        let source = std::fs::read_to_string(path).unwrap_or_default();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (_, diags) = tool::load(&source);
        assert!(!diags.is_empty(), "{name} loaded without a diagnostic");
        let codes = diags.iter().map(|d| d.code.to_string()).collect::<Vec<_>>().join(" ");
        if let Ok(mut seen) = seen.lock() {
            seen.insert(name.clone(), codes.clone());
        }
        if std::env::var_os("UPDATE_EXPECT").is_none() {
            let want = expected.get(&name).map_or("(no line)", String::as_str);
            assert_eq!(want, codes, "{name}: {ERR_EXPECTED} says (left), the loader reports (right)");
        }
        insta::assert_snapshot!(describe(&diags, &name, &source));
    });
    let seen = seen.into_inner().unwrap_or_default();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let mut text = String::from(
            "# What each case of this folder must report: the file, then the code of every\n\
             # diagnostic in order (rendered in tests/snapshots/tool__err@<file>.snap).\n\
             # Checked by `err_files` in tests/tool.rs; regenerate with\n\
             # `UPDATE_EXPECT=1 cargo test --test tool err_files` and review the diff.\n",
        );
        for (name, codes) in &seen {
            let _ = writeln!(text, "{name}: {codes}");
        }
        std::fs::write(ERR_EXPECTED, text).expect("writable");
        return;
    }
    let stale: Vec<&String> = expected.keys().filter(|k| !seen.contains_key(*k)).collect();
    assert!(stale.is_empty(), "{ERR_EXPECTED} names cases that do not exist: {stale:?}");
}

#[test]
fn ok_files() {
    insta::glob!("data/tool/ok/*.tool", |path| {
        let source = std::fs::read_to_string(path).unwrap_or_default();
        let name = path.display().to_string();
        let (tool, diags) = tool::load(&source);
        assert!(diags.is_empty(), "{name}:\n{}", describe(&diags, &name, &source));
        let tool = tool.unwrap_or_else(|| panic!("{name}: no model"));
        insta::assert_snapshot!(describe_refs(&tool, &source));
    });
}

/// The first transform expression of the first instruction.
fn first_transform(tool: &ToolDef) -> &JsonStr {
    let t = tool.instructions()[0].transform_arguments.as_ref().expect("transform_arguments");
    &t.transforms[0].1
}

#[test]
fn expression_spans_map_through_json_escapes() {
    let source = r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "/t.tool",
        "transform_arguments": {"transforms": {"x": "join(array=[\"a\\\"b\", \u006eame], separator=sep)"}}}]}"#;
    let (tool, diags) = tool::load(source);
    assert!(diags.is_empty(), "{diags:?}");
    let tool = tool.expect("model");
    let expr = first_transform(&tool);
    assert_eq!(&*expr.value, r#"join(array=["a\"b", name], separator=sep)"#);
    let map = expr.string_map();
    let find = |needle: &str| {
        let at = expr.value.find(needle).expect("needle");
        map.map(Span::new(at, at + needle.len()))
    };
    // A name after several escapes, the string literal holding an escaped quote, and a name
    // that was itself written with a `\u` escape.
    assert_eq!(text_at(source, find("sep")), "sep");
    assert_eq!(text_at(source, find(r#""a\"b""#)), r#"\"a\\\"b\""#);
    assert_eq!(text_at(source, find("name")), r"\u006eame");
    let n = expr.value.find("name").expect("name");
    assert_eq!(text_at(source, map.map(Span::new(n, n + 1))), r"\u006e");
    assert_eq!(text_at(source, map.map(Span::new(n + 1, n + 4))), "ame");
}

#[test]
fn expression_diagnostics_map_through_two_layers_of_escapes() {
    // The expression is `"a\q"`: a string literal with an unknown escape. In the file the
    // backslash is itself escaped, so the two characters `\q` are the three bytes `\\q`.
    let source = r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "/t.tool",
        "transform_arguments": {"transforms": {"x": "\"caf\u00e9 \\q\""}}}]}"#;
    let (tool, diags) = tool::load(source);
    assert!(diags.is_empty(), "{diags:?}");
    let tool = tool.expect("model");
    let expr = first_transform(&tool);
    let parsed = tdsl::testing::syntax::parse(&expr.value);
    let escape = parsed.diagnostics.iter().find(|d| d.code == Code::InvalidEscape).expect("an escape error");
    let map = expr.string_map();
    let in_file = escape.clone().map_spans(&|s| map.map(s));
    assert_eq!(text_at(source, in_file.span), r"\\q");
}

#[test]
fn ref_spans_map_through_escapes() {
    let source = r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "/t.tool",
        "arguments": {"a": ["x", {"b": "REF:\u0073tep.it\u0065ms.0"}]}}]}"#;
    let (tool, diags) = tool::load(source);
    assert!(diags.is_empty(), "{diags:?}");
    let tool = tool.expect("model");
    let refs = tool.instructions()[0].refs();
    assert_eq!(refs.len(), 1);
    let (path, span) = &refs[0];
    assert_eq!(path.dotted(), "step.items.0");
    assert_eq!(text_at(source, *span), r"REF:\u0073tep.it\u0065ms.0");
    assert_eq!(text_at(source, path.context.span), r"\u0073tep");
    assert_eq!(text_at(source, path.segments[0].span), r"it\u0065ms");
    assert_eq!(text_at(source, path.segments[1].span), "0");
}

#[test]
fn refs_are_collected_from_every_place_but_expressions() {
    let source = r#"{
      "instructions": [{
        "execution_id": "s", "tool_definition_path": "/t.tool",
        "arguments": {"a": "REF:arguments.a", "plain": "see REF:x", "n": [{"deep": "REF:one.x"}]},
        "transform_arguments": {"variables": {"v": ["REF:two.x"]}, "transforms": {"t": "REF:never.x"}},
        "transform_responses": {"variables": {"r": "REF:response.items"}},
        "conditions": [{"logic": "OR", "conditions": [
          {"param": "REF:three.x", "operator": "in", "value": ["REF:four.x"]}]}],
        "parallel_execution": {"iterate_over": "REF:five.list", "child_argument_name": "c"},
        "done_check": [{"param": "REF:six.x", "operator": "equals", "value": "REF:seven.x"}],
        "done_value": {"v": "REF:eight.x"}
      }, {
        "execution_id": "e", "tool_definition_path": "/t.tool", "done_check": "REF:never.y"
      }],
      "responses": [{"name": "out"}],
      "response_reference_map": {"out": "REF:s.result"},
      "transform_arguments": {"variables": {"g": "REF:arguments.g"}}
    }"#;
    let (tool, diags) = tool::load(source);
    assert!(diags.is_empty(), "{diags:?}");
    let tool = tool.expect("model");
    let dotted = |sites: Vec<tool::RefSite>| -> Vec<String> {
        sites.into_iter().map(|s| format!("{:?} {}", s.place, s.path.dotted())).collect()
    };
    assert_eq!(
        dotted(tool.instructions()[0].ref_sites()),
        [
            "Argument arguments.a",
            "Argument one.x",
            "Variable(Arguments) two.x",
            "Variable(Responses) response.items",
            "ConditionParam three.x",
            "ConditionValue four.x",
            "IterateOver five.list",
            "DoneCheck six.x",
            "DoneCheck seven.x",
            "DoneValue eight.x",
        ]
    );
    assert!(tool.instructions()[1].refs().is_empty(), "an expression's REFs are not JSON REFs");
    assert_eq!(dotted(tool.ref_sites()), ["ResponseMap s.result", "Variable(Arguments) arguments.g"]);
}

#[test]
fn model_holds_what_the_file_says() {
    let source = std::fs::read_to_string("tests/data/tool/ok/every_key.tool").expect("file");
    let (tool, diags) = tool::load(&source);
    assert!(diags.is_empty());
    let tool = tool.expect("model");
    assert_eq!(tool.arguments[0].type_or_any().to_string(), "list<string>");
    assert_eq!(tool.arguments[1].type_or_any().to_string(), "list<list<number>>");
    assert!(tool.arguments[0].is_required());
    assert!(!tool.arguments[1].is_required());
    let scan = &tool.instructions()[0];
    let retry = scan.retry.as_ref().expect("retry");
    assert_eq!(retry.max_retries.as_ref().map(|r| r.node), Some(3));
    assert_eq!(retry.factor.as_ref().map(|r| r.node), Some(2.0));
    assert_eq!(scan.timeout_seconds.as_ref().map(|t| t.node), Some(12.5));
    let args = scan.arguments.as_ref().expect("arguments").to_value();
    let expected: serde_json::Value = serde_json::json!({
        "roots": "REF:arguments.paths",
        "options": {"deep": true, "skip": ["REF:arguments.config.skip", null, 1.5]}
    });
    assert_eq!(args, tdsl::testing::value::Value::from(&expected));
    let each = &tool.instructions()[1];
    assert_eq!(each.conditions.len(), 3);
    assert!(matches!(&each.conditions[2], tool::Condition::Group { logic, conditions, .. }
        if logic.node == tool::Logic::Not && conditions.len() == 1));
    assert!(matches!(tool.instructions()[3].done_check, Some(tool::DoneCheck::Expression(_))));
}

/// One character of a JSON string: how it is written and what it decodes to.
#[derive(Clone, Debug)]
struct Piece {
    written: String,
    decoded: char,
}

fn piece() -> impl Strategy<Value = Piece> {
    let plain = any::<char>()
        .prop_filter("needs escaping", |c| *c != '"' && *c != '\\' && u32::from(*c) >= 0x20)
        .prop_map(|c| Piece { written: c.to_string(), decoded: c });
    let simple = prop::sample::select(vec![
        ("\\\"", '"'),
        ("\\\\", '\\'),
        ("\\/", '/'),
        ("\\n", '\n'),
        ("\\r", '\r'),
        ("\\t", '\t'),
        ("\\b", '\u{8}'),
        ("\\f", '\u{c}'),
    ])
    .prop_map(|(w, d)| Piece { written: w.to_string(), decoded: d });
    let unicode = (any::<char>(), any::<bool>()).prop_map(|(c, upper)| {
        let mut units = [0u16; 2];
        let written: String = c
            .encode_utf16(&mut units)
            .iter()
            .map(|u| if upper { format!("\\u{u:04X}") } else { format!("\\u{u:04x}") })
            .collect();
        Piece { written, decoded: c }
    });
    prop_oneof![4 => plain, 2 => simple, 2 => unicode]
}

proptest! {
    /// Every decoded character of a JSON string maps back to exactly the bytes it was
    /// written as, and any span of whole characters maps to the bytes from the first one's
    /// start to the last one's end.
    #[test]
    fn string_spans_map_to_the_written_bytes(
        pieces in prop::collection::vec(piece(), 0..24),
        indent in 0usize..4,
        range in (0usize..24, 0usize..24),
    ) {
        let written: String = pieces.iter().map(|p| p.written.as_str()).collect();
        let source = format!("{}{{\"k\": [1, \"{written}\"]}}", " ".repeat(indent));
        let (tree, diags) = tool::json::parse(&source);
        prop_assert!(diags.is_empty(), "{diags:?}");
        let tree = tree.expect("tree");
        let list = tree.as_object().expect("object")[0].1.as_list().expect("list").to_vec();
        let JsonKind::Str(s) = &list[1].kind else { panic!("not a string") };
        let decoded: String = pieces.iter().map(|p| p.decoded).collect();
        prop_assert_eq!(&*s.value, decoded.as_str());

        // Where each piece was written and where it sits in the decoded text.
        let mut src_at = s.content_span().start as usize;
        let mut dec_at = 0;
        let mut spans = Vec::new();
        for p in &pieces {
            let src = Span::new(src_at, src_at + p.written.len());
            let dec = Span::new(dec_at, dec_at + p.decoded.len_utf8());
            prop_assert_eq!(&source[src.range()], p.written.as_str());
            spans.push((dec, src));
            src_at += p.written.len();
            dec_at += p.decoded.len_utf8();
        }
        let map = s.string_map();
        for (dec, src) in &spans {
            prop_assert_eq!(map.map(*dec), *src);
        }
        let (a, b) = (range.0.min(range.1), range.0.max(range.1));
        if b <= spans.len() && a < b {
            let dec = spans[a].0.to(spans[b - 1].0);
            let src = spans[a].1.to(spans[b - 1].1);
            prop_assert_eq!(map.map(dec), src);
        }
    }

    /// Loading never panics, and every span it reports lies on characters of the input.
    #[test]
    fn load_never_panics(source in r#"[{}\[\]",: a-z0-9_.\\\n\t-]{0,80}|\{"instructions": \[\{[ -~]{0,60}\}\]\}"#) {
        let (_, diags) = tool::load(&source);
        for d in &diags {
            prop_assert!(source.get(d.span.range()).is_some(), "{d:?}");
        }
    }

    /// Schema-shaped noise: objects with the format's own keys and values of every type.
    #[test]
    fn load_never_panics_on_schema_shaped_input(doc in schema_shaped(3)) {
        let source = doc.to_string();
        let (_, diags) = tool::load(&source);
        for d in &diags {
            prop_assert!(source.get(d.span.range()).is_some(), "{d:?}");
        }
    }
}

fn schema_shaped(depth: u32) -> impl Strategy<Value = serde_json::Value> {
    let keys = prop::sample::select(vec![
        "description",
        "arguments",
        "responses",
        "system_event_endpoint",
        "instructions",
        "response_reference_map",
        "execution_id",
        "tool_definition_path",
        "conditions",
        "param",
        "operator",
        "value",
        "logic",
        "parallel_execution",
        "iterate_over",
        "child_argument_name",
        "retry",
        "max_retries",
        "jitter",
        "done_check",
        "transform_arguments",
        "variables",
        "transforms",
        "name",
        "type_name",
        "required",
    ]);
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        prop::sample::select(vec!["REF:a.b", "REF:", "exists", "AND", "NOT", "list<string>", "x y", "item"])
            .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(depth, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// The examples of `docs/tool-format.md`: a ```json block is a whole `.tool` file that must
/// load with no diagnostic; a ```json fragment block must at least be strict JSON. Every
/// code of the format is listed in its table.
#[test]
fn format_docs_are_true() {
    let doc = std::fs::read_to_string("docs/tool-format.md").expect("docs/tool-format.md");
    let mut blocks = 0;
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```").filter(|i| i.starts_with("json")) else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
        let body = body.join("\n");
        blocks += 1;
        if info == "json" {
            let (tool, diags) = tool::load(&body);
            assert!(diags.is_empty() && tool.is_some(), "{}", describe(&diags, "doc", &body));
        } else {
            assert_eq!(info, "json fragment");
            let (tree, diags) = tool::json::parse(&body);
            assert!(diags.is_empty() && tree.is_some(), "{}", describe(&diags, "doc", &body));
        }
    }
    assert!(blocks >= 5, "found only {blocks} examples");
    for code in Code::ALL.iter().filter(|c| c.as_str().starts_with("E05") || c.as_str().starts_with("W05")) {
        assert!(doc.contains(&format!("| `{code}` |")), "{code} is not in the table of docs/tool-format.md");
    }
}

/// An absent `arguments` / `responses` key declares nothing; an empty list declares none
/// (SPEC §5). The model keeps the difference for every consumer.
#[test]
fn absent_and_empty_declarations_differ() {
    let composite = |extra: &str| {
        format!(r#"{{{extra}"instructions": [{{"execution_id": "a", "tool_definition_path": "/tools/x.tool"}}]}}"#)
    };
    let (absent, d) = tool::load(&composite(""));
    assert!(d.is_empty(), "{d:?}");
    let absent = absent.expect("a model");
    assert!(!absent.declares_arguments && !absent.declares_responses);
    let (empty, d) = tool::load(&composite(r#""arguments": [], "responses": [], "#));
    assert!(d.is_empty(), "{d:?}");
    let empty = empty.expect("a model");
    assert!(empty.declares_arguments && empty.declares_responses);
    assert!(empty.arguments.is_empty() && empty.responses.is_empty());
}

/// Seed 002's `output_path` and `expected_key` are read into the model, with spans.
#[test]
fn output_path_and_expected_key_are_read() {
    let source = r#"{"instructions": [{"execution_id": "get", "tool_definition_path": "/tools/x.tool",
  "expected_key": "revenue_data", "output_path": ["data", "Revenue", 0]}]}"#;
    let (def, d) = tool::load(source);
    assert!(d.is_empty(), "{d:?}");
    let def = def.expect("a model");
    let ins = &def.instructions()[0];
    let key = ins.expected_key.as_ref().expect("expected_key");
    assert_eq!(key.node, "revenue_data");
    assert_eq!(text_at(source, key.span), "\"revenue_data\"");
    let path = ins.output_path.as_ref().expect("output_path");
    let segments: Vec<tool::PathSegment> = path.segments.iter().map(|s| s.node.clone()).collect();
    assert_eq!(
        segments,
        [tool::PathSegment::Key("data".into()), tool::PathSegment::Key("Revenue".into()), tool::PathSegment::Index(0)]
    );
    assert_eq!(text_at(source, path.segments[2].span), "0");

    // Shapes the schema refuses, each reported.
    for (bad, code) in [
        (r#""output_path": "data.Revenue""#, Code::WrongJsonType),
        (r#""output_path": [1.5]"#, Code::WrongJsonType),
        (r#""output_path": [-1]"#, Code::NumberOutOfRange),
        (r#""expected_key": "item""#, Code::ReservedExecutionId),
        (r#""expected_key": "revenue data""#, Code::InvalidIdentifier),
        (r#""expected_key": 3"#, Code::WrongJsonType),
    ] {
        let source = format!(
            r#"{{"instructions": [{{"execution_id": "get", "tool_definition_path": "/tools/x.tool", {bad}}}]}}"#
        );
        let (_, d) = tool::load(&source);
        let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!(codes, [code], "{bad}");
    }
}
