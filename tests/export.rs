//! `tdsl export` and the schema mapping: snapshots of every type name in every format and of
//! the example tools, names, collisions, and the real binary.

use std::path::Path;
use std::process::Command;

use tdsl::export::{export_tool, tool_name, validate_arguments, Format};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn tdsl(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl")).args(args).env("NO_COLOR", "1").output().expect("tdsl runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A primitive tool declaring every type name, as an argument and as a response.
const EVERY_TYPE: &str = r#"{
  "description": "Takes and returns every type name",
  "arguments": [
    {"name": "s", "type_name": "string", "description": "a string", "required": true},
    {"name": "n", "type_name": "number", "description": "a number"},
    {"name": "i", "type_name": "integer", "required": true},
    {"name": "b", "type_name": "boolean"},
    {"name": "l", "type_name": "list"},
    {"name": "ls", "type_name": "list<string>", "description": "strings"},
    {"name": "lli", "type_name": "list<list<integer>>"},
    {"name": "lf", "type_name": "list<file>"},
    {"name": "o", "type_name": "object"},
    {"name": "f", "type_name": "file", "description": "a path or {path}", "required": true},
    {"name": "a", "type_name": "any"},
    {"name": "untyped"}
  ],
  "responses": [
    {"name": "s", "type_name": "string", "required": true},
    {"name": "l", "type_name": "list<object>", "description": "objects"},
    {"name": "f", "type_name": "file"},
    {"name": "a", "type_name": "any"}
  ],
  "system_event_endpoint": "builtin:echo"
}"#;

fn every_type() -> tdsl::tool::ToolDef {
    let (def, diags) = tdsl::tool::load(EVERY_TYPE);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    def.expect("loads")
}

#[test]
fn every_type_name_openai() {
    insta::assert_json_snapshot!(export_tool(Format::OpenAi, "every_type", &every_type()));
}

#[test]
fn every_type_name_anthropic() {
    insta::assert_json_snapshot!(export_tool(Format::Anthropic, "every_type", &every_type()));
}

#[test]
fn every_type_name_mcp() {
    insta::assert_json_snapshot!(export_tool(Format::Mcp, "every_type", &every_type()));
}

#[test]
fn no_arguments_no_description() {
    let (def, _) = tdsl::tool::load(r#"{"system_event_endpoint": "builtin:echo"}"#);
    let t = export_tool(Format::Mcp, "bare", &def.expect("loads"));
    assert_eq!(
        t,
        serde_json::json!({"name": "bare", "inputSchema": {"type": "object", "properties": {}},
                           "outputSchema": {"type": "object"}})
    );
}

#[test]
fn validation_follows_the_schema() {
    let def = every_type();
    assert!(validate_arguments(&def, &serde_json::json!({"s": "x", "i": 2, "f": "a.txt"})).is_ok());
    assert!(validate_arguments(&def, &serde_json::json!({"s": "x", "i": 2.5, "f": "a.txt"})).is_err());
    assert!(
        validate_arguments(&def, &serde_json::json!({"s": "x", "i": 2, "f": {"path": "a"}, "lli": [[1], [2]]})).is_ok()
    );
    assert!(validate_arguments(&def, &serde_json::json!({"s": "x", "i": 2, "f": "a", "lli": [[1.5]]})).is_err());
}

#[test]
fn names_are_valid_for_every_provider() {
    let re = |n: &str| {
        !n.is_empty() && n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    for p in
        ["/main.tool", "/tools/a b.tool", "/x/y/z.v2.tool", "/ünï/cödé.tool", &format!("/{}.tool", "d/".repeat(60))]
    {
        let n = tool_name(p);
        assert!(re(&n), "{p} → {n}");
        assert_eq!(n, tool_name(p), "stable");
    }
}

fn examples() -> Vec<(&'static str, &'static str)> {
    vec![
        ("document-analysis", "examples/document-analysis"),
        ("conditional-branching", "examples/conditional-branching"),
    ]
}

#[test]
fn example_tools() {
    for (name, dir) in examples() {
        for format in ["openai", "anthropic", "mcp"] {
            let o = tdsl(&["export", dir, "--root", dir, "--format", format]);
            assert_eq!(o.code, 0, "{}", o.stderr);
            let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
            insta::assert_json_snapshot!(format!("example_{name}_{format}"), v);
        }
    }
}

#[test]
fn collisions_are_errors_naming_both_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = r#"{"system_event_endpoint": "builtin:echo"}"#;
    std::fs::write(dir.path().join("a b.tool"), tool).expect("write");
    std::fs::write(dir.path().join("a_b.tool"), tool).expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let o = tdsl(&["export", d, "--root", d, "--format", "openai"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("a b.tool") && o.stderr.contains("a_b.tool"), "{}", o.stderr);
    assert!(o.stderr.contains("`a_b`"), "{}", o.stderr);
    // The same file twice is one tool.
    let f = dir.path().join("a_b.tool");
    let f = f.to_str().expect("utf-8");
    let o = tdsl(&["export", f, f, "--root", d, "--format", "anthropic"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    assert_eq!(v, serde_json::json!([{"name": "a_b", "input_schema": {"type": "object", "properties": {}}}]));
}

#[test]
fn broken_tools_and_bad_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bad.tool"), r#"{"argumentz": []}"#).expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let o = tdsl(&["export", d, "--root", d, "--format", "mcp"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("cannot be exported"), "{}", o.stderr);
    let o = tdsl(&["export", d, "--format", "gemini"]);
    assert_eq!(o.code, 2);
    let outside = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/document-analysis/main.tool");
    let o = tdsl(&["export", outside.to_str().expect("utf-8"), "--root", d, "--format", "mcp"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not under the tool root"), "{}", o.stderr);
}
