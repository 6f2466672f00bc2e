//! `tdsl export` and the schema mapping: snapshots of every type name in every format and of
//! the example tools, names, collisions, and the real binary.

mod common;

use std::path::Path;
use std::process::Command;

use tdsl::testing::export::{export_names, export_tool, lossy_features, tool_name, validate_arguments, Format};

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

fn every_type() -> tdsl::testing::tool::ToolDef {
    let (def, diags) = tdsl::testing::tool::load(EVERY_TYPE);
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
    let (def, _) = tdsl::testing::tool::load(r#"{"system_event_endpoint": "builtin:echo"}"#);
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

/// With no PATH, every tool under the root is exported (SPEC §8) — the same list as naming
/// the root itself; without `--root` the root is the current folder.
#[test]
fn no_path_exports_every_tool_under_the_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/document-analysis");
    let r = root.to_str().expect("utf-8");
    for format in ["openai", "anthropic", "mcp"] {
        let named = tdsl(&["export", r, "--root", r, "--format", format]);
        assert_eq!(named.code, 0, "{}", named.stderr);
        let all = tdsl(&["export", "--root", r, "--format", format]);
        assert_eq!(all.code, 0, "{}", all.stderr);
        assert_eq!(all.stdout, named.stdout, "{format}");
        let listed: serde_json::Value = serde_json::from_str(&all.stdout).expect("JSON");
        assert!(listed.as_array().is_some_and(|l| l.len() > 3), "every tool of the example: {listed}");
    }
    let here = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["export", "--format", "mcp"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .output()
        .expect("tdsl runs");
    assert!(here.status.success(), "{}", String::from_utf8_lossy(&here.stderr));
    let named = tdsl(&["export", r, "--root", r, "--format", "mcp"]);
    assert_eq!(String::from_utf8_lossy(&here.stdout), named.stdout, "the current folder is the root");
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

/// A seed document (`tests/common/seeds.rs` says where it is looked for), or `None` in a
/// bare clone (a failure when `TDSL_REQUIRE_SEEDS` is set, as in CI).
fn seed(name: &str) -> Option<String> {
    common::seeds::text(name)
}

/// The first ```` ```json ```` block after the line `heading` of a seed.
fn json_block_after(doc: &str, heading: &str) -> serde_json::Value {
    let at = doc.find(heading).unwrap_or_else(|| panic!("no `{heading}` in the seed"));
    let rest = &doc[at..];
    let start = rest.find("```json\n").expect("a json block") + "```json\n".len();
    let end = rest[start..].find("```").expect("its end");
    serde_json::from_str(&rest[start..start + end]).expect("the seed's block is JSON")
}

const SEED_ROOT: &str = "tests/data/check/root";
const SEED_TOOL: &str = "tests/data/check/root/tools/add_objective.tool";

/// Removes the `description` of every property (the seed's Anthropic block abbreviates them).
fn without_property_descriptions(mut v: serde_json::Value, schema_key: &str) -> serde_json::Value {
    if let Some(props) = v[schema_key]["properties"].as_object_mut() {
        for p in props.values_mut() {
            if let Some(p) = p.as_object_mut() {
                p.remove("description");
            }
        }
    }
    v
}

#[test]
fn seed_003_add_objective_in_every_format() {
    let Some(doc) = seed("003_d8e8e4f64207d379.txt") else { return };
    let mut stderr = String::new();
    let mut exported = serde_json::Map::new();
    for format in ["openai", "anthropic", "mcp"] {
        let o = tdsl(&["export", SEED_TOOL, "--root", SEED_ROOT, "--format", format]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
        assert_eq!(v.as_array().map(Vec::len), Some(1));
        stderr.push_str(&format!("---- {format}\n{}", o.stderr));
        exported.insert(format.to_string(), v[0].clone());
    }
    // The OpenAI tool is the seed's, word for word; the Anthropic one too, but for the
    // property descriptions that the seed's Anthropic example shortens or leaves out.
    assert_eq!(exported["openai"], json_block_after(&doc, "#### OpenAI Format"));
    assert_eq!(
        without_property_descriptions(exported["anthropic"].clone(), "input_schema"),
        without_property_descriptions(json_block_after(&doc, "#### Anthropic Format"), "input_schema")
    );
    insta::assert_json_snapshot!("seed_003_add_objective", exported);
    insta::assert_snapshot!("seed_003_add_objective_warnings", stderr);
}

/// A tool with every constraint, as an argument, in a list's elements and as a response.
const EVERY_CONSTRAINT: &str = r#"{
  "description": "Every constraint",
  "arguments": [
    {"name": "mode", "type_name": "string", "enum": ["fast", "slow"], "default": "fast", "description": "how"},
    {"name": "level", "type_name": "integer", "minimum": 1, "maximum": 5, "required": true},
    {"name": "ratio", "type_name": "number", "minimum": 0.5},
    {"name": "code", "type_name": "string", "pattern": "^[A-Z]{3}$", "min_length": 3, "max_length": 3},
    {"name": "tags", "type_name": "list", "min_length": 1, "max_length": 4,
     "items": {"type_name": "string", "description": "a tag", "max_length": 10}},
    {"name": "matrix", "type_name": "list<list<integer>>", "items": {"items": {"type_name": "integer", "minimum": 0}}},
    {"name": "doc", "type_name": "file"}
  ],
  "responses": [
    {"name": "score", "type_name": "number", "minimum": 0, "maximum": 1}
  ],
  "system_event_endpoint": "builtin:echo"
}"#;

#[test]
fn every_constraint_in_every_format() {
    let (def, diags) = tdsl::testing::tool::load(EVERY_CONSTRAINT);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    let def = def.expect("loads");
    let mut out = serde_json::Map::new();
    let mut warnings = String::new();
    for format in [Format::OpenAi, Format::Anthropic, Format::Mcp] {
        out.insert(format.as_str().to_string(), export_tool(format, "every_constraint", &def));
        for w in lossy_features(format, "every_constraint", &def) {
            warnings.push_str(&format!("{w}\n"));
        }
    }
    insta::assert_json_snapshot!("every_constraint", out);
    insta::assert_snapshot!("every_constraint_warnings", warnings);
}

#[test]
fn lossy_export_warns_on_stderr_and_deny_warnings_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("every.tool"), EVERY_CONSTRAINT).expect("write");
    std::fs::write(dir.path().join("plain.tool"), r#"{"arguments": [{"name": "x", "type_name": "integer", "enum": [1, 2]}], "system_event_endpoint": "builtin:echo"}"#).expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let o = tdsl(&["export", d, "--root", d, "--format", "openai"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(serde_json::from_str::<serde_json::Value>(&o.stdout).is_ok());
    insta::assert_snapshot!("lossy_openai_stderr", o.stderr);
    let o = tdsl(&["export", d, "--root", d, "--format", "openai", "--deny-warnings"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert_eq!(o.stdout, "");
    assert!(o.stderr.contains("error[W0903]: `responses` lost converting `every` to openai"), "{}", o.stderr);
    assert!(o.stderr.ends_with("and --deny-warnings is set\n"), "{}", o.stderr);
    // A tool the format expresses whole passes --deny-warnings.
    let plain = dir.path().join("plain.tool");
    let o = tdsl(&["export", plain.to_str().expect("utf-8"), "--root", d, "--format", "openai", "--deny-warnings"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // MCP keeps responses and constraints: only the `file` type is lost.
    let o = tdsl(&["export", d, "--root", d, "--format", "mcp"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("the `file` type of argument `doc` lost converting `every` to mcp"), "{}", o.stderr);
}

#[test]
fn names_are_file_stems_unless_they_clash() {
    assert_eq!(
        export_names(&["/tools/add_objective.tool", "/a/echo.tool", "/b/echo.tool", "/main.tool"]),
        ["add_objective", "a__echo", "b__echo", "main"]
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = r#"{"system_event_endpoint": "builtin:echo"}"#;
    for p in ["tools/add_objective.tool", "a/echo.tool", "b/echo.tool", "main.tool"] {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, tool).expect("write");
    }
    let d = dir.path().to_str().expect("utf-8");
    let o = tdsl(&["export", d, "--root", d, "--format", "anthropic"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let names: Vec<&str> = v.as_array().expect("list").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["a__echo", "b__echo", "main", "add_objective"]);
    // Exported alone, each `echo` is `echo`: the names depend on the exported set.
    let a = dir.path().join("a/echo.tool");
    let o = tdsl(&["export", a.to_str().expect("utf-8"), "--root", d, "--format", "anthropic"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    assert_eq!(v[0]["name"], "echo");
}
