//! Static analysis and `tdsl check`: data-driven tests over `tests/data/check/{ok,err}` (see
//! the README there) with the callees of `tests/data/check/root`, and command-line tests that
//! run the real binary.
//!
//! Regenerate snapshots with `cargo insta test --review --test check`.

mod common;
use common::tdsl;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use proptest::prelude::Strategy as _;
use tdsl::testing::analysis::{levels, response_map, step, steps, Analyzer, CheckedTool, Resolved, ToolRoot};
use tdsl::testing::diagnostic::{Code, Diagnostic};
use tdsl::testing::span::Span;
use tdsl::testing::tool::LineIndex;

const ROOT: &str = "tests/data/check/root";

/// The path relative to the package (where tests and the binary run), with `/` separators.
fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

fn check(path: &str) -> CheckedTool {
    let mut analyzer = Analyzer::new(ToolRoot::new(ROOT));
    analyzer.check_file(Path::new(path)).expect("readable")
}

fn text_at(source: &str, span: Span) -> String {
    source.get(span.range()).map_or_else(|| format!("<bad span {span}>"), str::to_string)
}

/// Every diagnostic with the exact text under its spans, so a span that maps wrongly shows
/// up as a diff.
fn describe(diags: &[Diagnostic], source: &str) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::new();
    for d in diags {
        let p = lines.position(d.span);
        let _ = writeln!(out, "{} {:?}: {}", d.code, d.severity(), d.message);
        let _ = writeln!(out, "  at {}:{} `{}` ({})", p.line, p.column, text_at(source, d.span), d.label);
        for l in &d.secondary {
            let _ = writeln!(out, "  and `{}` ({})", text_at(source, l.span), l.message);
        }
        if let Some(h) = &d.help {
            let _ = writeln!(out, "  help: {h}");
        }
    }
    out
}

#[test]
fn err_files() {
    insta::glob!("data/check/err/*.tool", |path| {
        let rel = relative(path);
        let checked = check(&rel);
        assert!(!checked.diagnostics.is_empty(), "{rel} checked clean");
        assert!(checked.plan.is_none() || !checked.has_errors());
        let human = tdsl(&["check", &rel, "--root", ROOT]);
        let json = tdsl(&["check", &rel, "--root", ROOT, "--format", "json"]);
        let expected = if checked.has_errors() { 1 } else { 0 };
        assert_eq!(human.code, expected, "{}", human.stderr);
        assert_eq!(json.code, expected);
        let mut out = describe(&checked.diagnostics, &checked.source);
        out.push_str("\n---- human ----\n");
        out.push_str(&human.stderr);
        out.push_str("\n---- json ----\n");
        out.push_str(&json.stdout);
        insta::assert_snapshot!(out);
    });
}

/// The plan: levels, and per step its callee, what it reads from which step, and its type.
fn describe_plan(checked: &CheckedTool) -> String {
    let mut out = String::new();
    let Some(plan) = &checked.plan else { return "(no plan: a primitive tool)\n".to_string() };
    for (level, ids) in levels(plan).iter().enumerate() {
        let _ = writeln!(out, "level {level}");
        for id in ids {
            let s = &steps(plan)[id.0];
            let _ = writeln!(out, "  {} {}", s.execution_id, s.tool_path.as_deref().unwrap_or("(transform step)"));
            for input in &s.inputs {
                let from = &steps(plan)[input.from.0].execution_id;
                let carries: Vec<&str> = input.carries.iter().map(|c| &**c).collect();
                let manual = if input.manual { " (dependency)" } else { "" };
                let _ = writeln!(out, "    <- {from} [{}]{manual}", carries.join(", "));
            }
            let _ = writeln!(out, "    result: {}", s.result_type);
        }
    }
    out
}

#[test]
fn ok_files() {
    insta::glob!("data/check/ok/*.tool", |path| {
        let rel = relative(path);
        let checked = check(&rel);
        let errors: Vec<Diagnostic> = checked.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        assert!(errors.is_empty(), "{rel}:\n{}", describe(&errors, &checked.source));
        let mut out = String::new();
        if !checked.diagnostics.is_empty() {
            out.push_str("warnings:\n");
            out.push_str(&describe(&checked.diagnostics, &checked.source));
            out.push('\n');
        }
        out.push_str(&describe_plan(&checked));
        insta::assert_snapshot!(out);
    });
}

#[test]
fn every_analysis_code_has_an_error_case() {
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir("tests/data/check/err").expect("err folder") {
        let path = entry.expect("entry").path();
        for d in check(&relative(&path)).diagnostics {
            seen.insert(d.code.as_str());
        }
    }
    let wanted = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| c.starts_with("E06") || c.starts_with("W06"))
        .chain(["E0101", "E0102", "E0108", "E0109", "E0201", "E0203", "W0101"]);
    let missing: Vec<&str> = wanted.filter(|c| !seen.contains(c)).collect();
    assert!(missing.is_empty(), "no case in tests/data/check/err for {missing:?}");
}

#[test]
fn a_tool_that_calls_itself() {
    let checked = check(&format!("{ROOT}/tools/self_caller.tool"));
    let d = &checked.diagnostics[0];
    assert_eq!(d.code, Code::ToolRecursion);
    assert_eq!(d.message, "`/tools/self_caller.tool` calls itself: /tools/self_caller.tool → /tools/self_caller.tool");
}

#[test]
fn callees_are_loaded_once_per_root() {
    let mut analyzer = Analyzer::new(ToolRoot::new(ROOT));
    let a = analyzer.check_file(Path::new("tests/data/check/err/callee_argument_type.tool")).expect("readable");
    let b = analyzer.check_file(Path::new("tests/data/check/err/condition_type.tool")).expect("readable");
    assert!(a.has_errors() && b.has_errors());
    let (Resolved::Found(first), Resolved::Found(second)) =
        (analyzer.root_mut().resolve("/tools/counter.tool"), analyzer.root_mut().resolve("/tools/counter.tool"))
    else {
        panic!("/tools/counter.tool resolves")
    };
    assert!(std::sync::Arc::ptr_eq(&first, &second));
}

// ---- the command line ----

#[test]
fn clean_folder_exits_0() {
    let o = tdsl(&["check", "tests/data/check/ok", "tests/data/check/root/flows", "--root", ROOT]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let files = std::fs::read_dir("tests/data/check/ok").expect("ok folder").count() + 1;
    assert!(o.stderr.ends_with(&format!("checked {files} files: 0 errors, 8 warnings\n")), "{}", o.stderr);
}

#[test]
fn problems_exit_1() {
    let o = tdsl(&["check", "tests/data/check/err/unknown_step.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("E0108"), "{}", o.stderr);
    assert!(o.stderr.ends_with("checked 1 file: 1 error, 0 warnings\n"), "{}", o.stderr);
}

#[test]
fn several_files_and_folders_in_one_run() {
    let o = tdsl(&[
        "check",
        "tests/data/check/err/unknown_step.tool",
        "tests/data/check/root/flows",
        "tests/data/check/err/unknown_dependency.tool",
        "--root",
        ROOT,
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 1);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("a JSON array");
    let files: Vec<&str> = diags.as_array().expect("array").iter().filter_map(|d| d["file"].as_str()).collect();
    assert_eq!(files, ["tests/data/check/err/unknown_step.tool", "tests/data/check/err/unknown_dependency.tool"]);
}

#[test]
fn json_diagnostics_have_positions_and_help() {
    let o = tdsl(&["check", "tests/data/check/err/unknown_step.tool", "--root", ROOT, "--format", "json"]);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    assert_eq!(
        diags,
        serde_json::json!([{
            "code": "E0108",
            "severity": "error",
            "message": "unknown REF context `sacn`",
            "file": "tests/data/check/err/unknown_step.tool",
            "line": 4,
            "column": 106,
            "end_line": 4,
            "end_column": 110,
            "help": "did you mean `REF:scan`?"
        }])
    );
    let clean = tdsl(&["check", "tests/data/check/root/flows", "--root", ROOT, "--format", "json"]);
    assert_eq!((clean.code, clean.stdout.as_str()), (0, "[]\n"));
}

#[test]
fn warnings_pass_unless_denied() {
    let file = "tests/data/check/err/unused_variable.tool";
    assert_eq!(tdsl(&["check", file, "--root", ROOT]).code, 0);
    let denied = tdsl(&["check", file, "--root", ROOT, "--deny-warnings"]);
    assert_eq!(denied.code, 1);
    assert!(denied.stderr.contains("W0601"), "{}", denied.stderr);
}

#[test]
fn without_root_missing_callees_are_not_checked() {
    // The current directory is assumed: `/tools/listr.tool` is not there, and that is fine.
    let o = tdsl(&["check", "tests/data/check/err/unresolved_tool_path.tool"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = tdsl(&["check", "tests/data/check/err/unresolved_tool_path.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
}

#[test]
fn the_command_could_not_run_exits_2() {
    let o = tdsl(&["check", "tests/data/check/no_such_file.tool"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no_such_file.tool"), "{}", o.stderr);
    let o = tdsl(&["check", "tests/data/check/ok", "--root", "tests/data/check/no_such_root"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no such directory"), "{}", o.stderr);
    // A folder with no `.tool` file in it is most likely a wrong path.
    let o = tdsl(&["check", "src/cli"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no `.tool` files"), "{}", o.stderr);
    assert_eq!(tdsl(&["check"]).code, 2);
}

#[test]
fn folders_are_walked_in_order() {
    let o = tdsl(&["check", "tests/data/check/err", "--root", ROOT, "--format", "json"]);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let files: Vec<&str> = diags.as_array().expect("array").iter().filter_map(|d| d["file"].as_str()).collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    let distinct: BTreeSet<&str> = files.iter().copied().collect();
    assert_eq!(distinct.len(), std::fs::read_dir("tests/data/check/err").expect("err").count());
}

/// `docs/analysis.md` lists every analysis code, and its JSON examples are JSON.
#[test]
fn analysis_docs_are_true() {
    let doc = std::fs::read_to_string("docs/analysis.md").expect("docs/analysis.md");
    for code in Code::ALL.iter().filter(|c| c.as_str().starts_with("E06") || c.as_str().starts_with("W06")) {
        assert!(doc.contains(&format!("| `{code}` |")), "{code} is not in the table of docs/analysis.md");
    }
    let mut lines = doc.lines();
    let mut blocks = 0;
    while let Some(line) = lines.next() {
        if !line.starts_with("```json") {
            continue;
        }
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(&body.join("\n"));
        assert!(parsed.is_ok(), "not JSON: {}", body.join("\n"));
        blocks += 1;
    }
    assert!(blocks >= 1);
    // The JSON example is what the command prints for that case.
    let o = tdsl(&["check", "tests/data/check/err/unknown_step.tool", "--root", ROOT, "--format", "json"]);
    let printed: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let mut expected = printed.clone();
    expected[0]["file"] = serde_json::json!("flows/main.tool");
    assert!(doc.contains(&serde_json::to_string_pretty(&expected).expect("printable")), "the JSON example is stale");
}

/// The plan of a clean flow: order, levels, inputs, resolved REFs, and compiled programs
/// that evaluate.
#[test]
fn plan_of_a_flow() {
    use tdsl::testing::analysis::{RefContext, ValuePlan};
    use tdsl::Value;

    let checked = check(&format!("{ROOT}/flows/scan_and_count.tool"));
    assert!(checked.diagnostics.is_empty(), "{}", describe(&checked.diagnostics, &checked.source));
    let plan = checked.plan.expect("a plan");
    let order: Vec<(&str, usize)> = steps(&plan).iter().map(|s| (&*s.execution_id, s.level)).collect();
    assert_eq!(order, [("each", 0), ("scan", 0), ("lengths", 1), ("report", 2)]);
    assert_eq!(plan.levels(), [vec!["each", "scan"], vec!["lengths"], vec!["report"]]);

    let scan = step(&plan, "scan").expect("scan");
    let lengths = step(&plan, "lengths").expect("lengths");
    let report = step(&plan, "report").expect("report");
    assert_eq!(lengths.depends_on, [scan.id]);
    assert_eq!(report.depends_on.len(), 3);
    let from_scan = report.inputs.iter().find(|i| i.from == scan.id).expect("an input from scan");
    assert!(from_scan.manual && from_scan.carries.is_empty());
    assert_eq!(lengths.inputs[0].carries.iter().map(|c| &**c).collect::<Vec<_>>(), ["files", "total"]);
    assert_eq!(
        lengths.result_type.to_string(),
        "object{doubled: integer, response: object{doubled: integer, …}, …} | null"
    );

    // `files` is a REF to scan's result; `count` is a program over the context.
    let t = lengths.transform_arguments.as_ref().expect("transform_arguments");
    let ValuePlan::Ref(r) = &t.variables[0].1 else { panic!("a REF variable") };
    assert_eq!(
        (r.context, r.segments.iter().map(|s| &**s).collect::<Vec<_>>()),
        (RefContext::Step(scan.id), vec!["files"])
    );
    let (name, program) = &t.transforms[0];
    assert_eq!(&**name, "count");
    let context: Value = serde_json::from_str(r#"{"files": ["a.md", "b.md"]}"#).expect("JSON");
    assert_eq!(program.eval(&context).expect("evaluates"), Value::Int(2));

    let each = step(&plan, "each").expect("each");
    let parallel = each.parallel.as_ref().expect("parallel");
    assert_eq!(&*parallel.child_argument_name, "count");
    assert!(matches!(&parallel.iterate_over, ValuePlan::Literal(v) if v.as_list().map(<[Value]>::len) == Some(3)));
    let map = response_map(&plan).expect("a response map");
    assert_eq!(map[1].1.context, RefContext::Step(each.id));
}

/// A composite of `n` steps where step `i` reads the steps `edges[i]`, through REF strings in
/// `arguments`, REF atoms in transforms and `dependencies`, chosen by `how`.
fn generated(edges: &[Vec<usize>], how: &[u8]) -> String {
    let mut steps = Vec::new();
    for (i, deps) in edges.iter().enumerate() {
        let mut args = serde_json::Map::new();
        let mut transforms = serde_json::Map::new();
        let mut manual = Vec::new();
        for (k, &j) in deps.iter().enumerate() {
            match how.get(i * 7 + k).copied().unwrap_or(0) % 3 {
                0 => {
                    args.insert(format!("a{k}"), serde_json::json!(format!("REF:s{j}.out")));
                }
                1 => {
                    transforms.insert(format!("t{k}"), serde_json::json!(format!("length(REF:s{j}.items) + 1")));
                }
                _ => manual.push(serde_json::json!(format!("s{j}"))),
            }
        }
        let mut step = serde_json::json!({"execution_id": format!("s{i}"), "tool_definition_path": "/tools/any.tool"});
        if !args.is_empty() {
            step["arguments"] = serde_json::Value::Object(args);
        }
        if !transforms.is_empty() {
            step["transform_arguments"] = serde_json::json!({"transforms": transforms});
        }
        if !manual.is_empty() {
            step["dependencies"] = serde_json::Value::Array(manual);
        }
        steps.push(step);
    }
    serde_json::json!({"instructions": steps}).to_string()
}

/// Longest-path levels by brute force (exponential, for tiny graphs), or `None` on a cycle.
fn brute_levels(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    fn level(i: usize, edges: &[Vec<usize>], path: &mut Vec<usize>) -> Option<usize> {
        if path.contains(&i) {
            return None;
        }
        path.push(i);
        let mut l = 0;
        for &j in &edges[i] {
            l = l.max(level(j, edges, path)? + 1);
        }
        path.pop();
        Some(l)
    }
    (0..edges.len()).map(|i| level(i, edges, &mut Vec::new())).collect()
}

proptest::proptest! {
    /// For any graph of steps: a plan exists exactly when the graph is acyclic; its levels
    /// are the longest paths; every dependency is on a lower level; the order is by level,
    /// then execution id; and every diagnostic points at characters of the file.
    #[test]
    fn the_dag_matches_its_definition(
        edges in proptest::collection::vec(proptest::collection::vec(0usize..7, 0..4), 1..7)
            .prop_map(|mut e| { let n = e.len(); for d in &mut e { for j in d.iter_mut() { *j %= n; } d.sort_unstable(); d.dedup(); } e }),
        how in proptest::collection::vec(proptest::prelude::any::<u8>(), 64),
    ) {
        use proptest::prelude::*;
        let source = generated(&edges, &how);
        // An assumed root with no files: callees are not checked, only the graph is.
        let mut analyzer = Analyzer::new(ToolRoot::assumed("/nonexistent-tdsl-root"));
        let checked = analyzer.check_source("gen.tool", &source);
        for d in &checked.diagnostics {
            prop_assert!(source.get(d.span.range()).is_some(), "{d:?}");
        }
        let expected = brute_levels(&edges);
        let cycles = checked.diagnostics.iter().filter(|d| d.code == Code::DependencyCycle).count();
        prop_assert_eq!(cycles > 0, expected.is_none(), "{}", describe(&checked.diagnostics, &source));
        let errors: Vec<&Diagnostic> = checked.diagnostics.iter().filter(|d| d.is_error()).collect();
        prop_assert!(errors.iter().all(|d| d.code == Code::DependencyCycle), "{errors:?}");
        match (expected, &checked.plan) {
            (Some(levels), Some(plan)) => {
                for s in steps(plan) {
                    let i: usize = s.execution_id[1..].parse().expect("s<i>");
                    prop_assert_eq!(s.level, levels[i]);
                    for d in &s.depends_on {
                        prop_assert!(steps(plan)[d.0].level < s.level);
                    }
                }
                let keys: Vec<(usize, &str)> = steps(plan).iter().map(|s| (s.level, &*s.execution_id)).collect();
                let mut sorted = keys.clone();
                sorted.sort();
                prop_assert_eq!(keys, sorted);
            }
            (None, None) => {}
            (e, p) => prop_assert!(false, "levels {e:?} but plan {}", p.is_some()),
        }
    }
}

/// `tdsl check` judges a primitive tool's endpoint as the command line's runner would take
/// it, without starting anything: W0902 for what `tdsl run` could not call.
#[test]
fn endpoints_the_runner_cannot_call_are_warned_about() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("scheme", "exce:./scan.sh", "`exce:./scan.sh` is not an endpoint the command line's runner knows"),
        ("builtin", "builtin:ecoh", "there is no builtin `ecoh` (the builtins are `builtin:echo`)"),
        ("mcp", "mcp:./server.py", "`mcp:./server.py` names no tool: write `mcp:<command line>#<tool>`"),
        ("exec", "exec:", "`exec:` names no program"),
        ("quote", "exec:'./scan.sh", "cannot split `'./scan.sh` into words"),
    ];
    let mut paths = Vec::new();
    for (name, endpoint, _) in cases {
        let path = dir.path().join(format!("{name}.tool"));
        std::fs::write(&path, format!(r#"{{"system_event_endpoint": "{endpoint}"}}"#)).expect("write");
        paths.push(path);
    }
    for ok in ["exec:./scan.sh --fast", "builtin:echo", "mcp:python3 server.py#add", "https://api.example.com/run"] {
        let path = dir.path().join(format!("ok{}.tool", paths.len()));
        std::fs::write(&path, format!(r#"{{"system_event_endpoint": "{ok}"}}"#)).expect("write");
        paths.push(path);
    }
    let mut args = vec!["check", "--format", "json"];
    args.extend(paths.iter().map(|p| p.to_str().expect("utf-8")));
    let o = tdsl(&args);
    assert_eq!(o.code, 0, "warnings only: {}", o.stderr);
    let diags: Vec<serde_json::Value> = serde_json::from_str(&o.stdout).expect("JSON");
    assert_eq!(diags.len(), cases.len(), "{diags:#?}");
    for ((name, _, message), d) in cases.iter().zip(&diags) {
        assert!(d["file"].as_str().expect("file").ends_with(&format!("{name}.tool")), "{d}");
        assert_eq!(d["code"], "W0902");
        assert!(d["message"].as_str().expect("message").starts_with(message), "{d}");
        assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(1), Some(27)), "the endpoint string: {d}");
    }
    let o = tdsl(&[&["check", "--deny-warnings"][..], &args[3..]].concat());
    assert_eq!(o.code, 1, "--deny-warnings fails on W0902");
}

// ---- the source documents' examples, as written ----

/// The text of a source document (`tests/common/seeds.rs` says where it is looked for), or
/// `None` in a bare clone (a failure when `TDSL_REQUIRE_SEEDS` is set, as in CI).
fn seed(name: &str) -> Option<String> {
    common::seeds::text(name)
}

/// The first ```` ```json ```` block after the line `heading` of a seed document.
fn json_block_after(doc: &str, heading: &str) -> String {
    let at = doc.find(heading).unwrap_or_else(|| panic!("no `{heading}` in the document"));
    let rest = &doc[at..];
    let start = rest.find("```json\n").expect("a json block after the heading") + "```json\n".len();
    let end = rest[start..].find("```").expect("the block ends");
    rest[start..start + end].to_string()
}

/// A temporary folder for one test, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("tdsl-check-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("writable");
        path.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Seed 004's "Automatic Dependency Resolution" composite declares no `arguments` and reads
/// `REF:arguments.api_endpoint`: as written, it checks with a warning only (SPEC §5) and
/// runs, the argument passing through to the callee.
#[test]
fn seed_automatic_dependencies_check_and_run_as_written() {
    let Some(doc) = seed("004_558a319b9772510b.txt") else { return };
    let block = json_block_after(&doc, "### Automatic Dependency Resolution");
    assert!(!block.contains("\"arguments\": ["), "the example declares no arguments:\n{block}");
    let tmp = TempDir::new("seed-auto");
    let tool = tmp.write("automatic.tool", &block);

    let o = tdsl(&["check", &tool, "--root", ROOT, "--format", "json"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let codes: Vec<&str> = diags.as_array().expect("array").iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, ["W0606"], "{}", o.stdout);
    assert!(diags[0]["message"].as_str().is_some_and(|m| m.contains("REF:arguments.api_endpoint")));
    assert_eq!(tdsl(&["check", &tool, "--root", ROOT, "--deny-warnings"]).code, 1);

    let mock = tmp.write(
        "mock.json",
        r#"{
  "/tools/api_client.tool": {"response_data": {"rows": [1, 2, 3]}, "metadata": {"source": "api"}},
  "/tools/data_processor.tool": {"cleaned_data": {"rows": [1, 2]}},
  "/tools/report_generator.tool": {"report_file": "reports/out.pdf"}
}"#,
    );
    let trace = tmp.0.join("trace.json");
    let o = tdsl(&[
        "run",
        &tool,
        "--root",
        ROOT,
        "--mock",
        &mock,
        "--arg",
        "api_endpoint=\"https://api.example.com/v1\"",
        "--trace",
        &trace.display().to_string(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON result");
    assert_eq!(result["fetch_data"]["metadata"], serde_json::json!({"source": "api"}));
    assert_eq!(result["process_data"]["cleaned_data"], serde_json::json!({"rows": [1, 2]}));
    assert_eq!(result["generate_report"]["report_file"], "reports/out.pdf");
    // The undeclared argument reached the callee as given.
    let trace = std::fs::read_to_string(&trace).expect("trace written");
    assert!(
        trace.contains("\"endpoint\": \"https://api.example.com/v1\"")
            || trace.contains("\"endpoint\":\"https://api.example.com/v1\"")
    );
}

/// Seed 002's `expected_key` and `output_path`, end to end: the step's result is the value
/// at the path (after `transform_responses`), and later steps and the response map read it
/// by its key.
#[test]
fn output_path_and_expected_key_run() {
    let tmp = TempDir::new("output-path");
    std::fs::create_dir_all(tmp.0.join("tools")).expect("tools folder");
    tmp.write(
        "tools/sec_financial_data.tool",
        r#"{"arguments": [{"name": "ticker", "type_name": "string", "required": true}],
  "responses": [{"name": "data", "type_name": "object"}], "system_event_endpoint": "builtin:echo"}"#,
    );
    let root = tmp.0.display().to_string();
    let tool = tmp.write(
        "revenue.tool",
        r#"{
  "arguments": [{"name": "ticker", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "get_revenue", "tool_definition_path": "/tools/sec_financial_data.tool",
     "arguments": {"ticker": "REF:arguments.ticker"},
     "transform_responses": {"transforms": {"years": "length(REF:response.data.Revenue)"}},
     "expected_key": "revenue_data", "output_path": ["data", "Revenue"]},
    {"execution_id": "latest", "tool_definition_path": "/tools/sec_financial_data.tool",
     "arguments": {"ticker": "REF:arguments.ticker"},
     "transform_responses": {"transforms": {"count": "length(REF:revenue_data)"}},
     "output_path": ["count"]}
  ],
  "response_reference_map": {"revenue": "REF:revenue_data", "first": "REF:revenue_data.0", "count": "REF:latest"}
}"#,
    );
    let mock = tmp.write(
        "mock.json",
        r#"{"/tools/sec_financial_data.tool": {"data": {"Revenue": [394.3, 383.3]}, "ticker": "AAPL"}}"#,
    );
    let check = tdsl(&["check", &tool, "--root", &root]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let o = tdsl(&["run", &tool, "--root", &root, "--mock", &mock, "--arg", "ticker=\"AAPL\""]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON result");
    assert_eq!(result, serde_json::json!({"revenue": [394.3, 383.3], "first": 394.3, "count": 2}));

    // A path that cannot apply at run time (the callee declares no responses, so the
    // analysis could not tell) fails the step, naming the path.
    tmp.write("tools/untyped.tool", r#"{"system_event_endpoint": "builtin:echo"}"#);
    let untyped = tmp.write(
        "untyped_caller.tool",
        r#"{"instructions": [{"execution_id": "get", "tool_definition_path": "/tools/untyped.tool",
  "output_path": ["data", "Revenue"]}]}"#,
    );
    let bad = tmp.write("bad_mock.json", r#"{"/tools/untyped.tool": {"data": 7}}"#);
    assert_eq!(tdsl(&["check", &untyped, "--root", &root]).code, 0);
    let o = tdsl(&["run", &untyped, "--root", &root, "--mock", &bad]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stderr.contains("`output_path` [\"data\", \"Revenue\"] cannot apply"), "{}", o.stderr);
}

/// The codes `tdsl check --format json` reports for a file.
fn codes_of(tool: &str) -> (i32, Vec<String>) {
    let o = tdsl(&["check", tool, "--root", ROOT, "--format", "json"]);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let codes =
        diags.as_array().expect("array").iter().filter_map(|d| d["code"].as_str().map(str::to_string)).collect();
    (o.code, codes)
}

/// Seed 004's branching and fan-out composites declare no `arguments` either: as written
/// they check with W0606 only. Its "Conditional Error Handling" step, behind the step it
/// handles, is warned about: without `continue_on_error` that step's failure ends the run.
#[test]
fn seed_compositions_without_arguments_check_with_warnings_only() {
    let Some(doc) = seed("004_558a319b9772510b.txt") else { return };
    let tmp = TempDir::new("seed-compositions");
    for (heading, undeclared) in [
        ("### Conditional Branching with Transform Logic", 2),
        ("### Fan-out/Fan-in Pattern with Result Aggregation", 1),
    ] {
        let block = json_block_after(&doc, heading);
        let tool = tmp.write("composite.tool", &block);
        let (code, codes) = codes_of(&tool);
        assert_eq!(code, 0, "{heading}: {codes:?}");
        assert_eq!(codes, vec!["W0606"; undeclared], "{heading}");
    }
    let handler = json_block_after(&doc, "### Conditional Error Handling");
    let tool = tmp.write(
        "handler.tool",
        &format!(
            "{{\"instructions\": [{{\"execution_id\": \"primary_task\", \"tool_definition_path\": \"/tools/primary_task.tool\"}}, {handler}]}}"
        ),
    );
    let (code, codes) = codes_of(&tool);
    assert_eq!(code, 0);
    assert_eq!(codes, ["W0608", "W0606"]);
    let o = tdsl(&["check", &tool, "--root", ROOT]);
    assert!(o.stderr.contains("\"continue_on_error\": true"), "{}", o.stderr);
}

// ---- issue 28: continue_on_error's failure shape, `file` in operators, nesting, output_key ----

/// A step under `continue_on_error` whose callee declares `status` an integer: when it fails,
/// REFs see `{"status": "failed", "error_message": …}` (`exec::data::failed_result`), so the
/// checker accepts `upper(REF:job.status)` and the string uses of `error_message` — and the
/// run, with every call failing, gives what the types say.
#[test]
fn continue_on_error_failure_shape_matches_a_real_run() {
    let tool = "tests/data/check/ok/continue_on_error_failure_shape.tool";
    let checked = check(tool);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let tmp = TempDir::new("continue-on-error");
    let mock = tmp.write("mock.json", r#"{"/tools/status_reporter.tool": {"$error": "disk full"}}"#);
    let o = tdsl(&["run", tool, "--root", ROOT, "--mock", &mock, "--arg", r#"jobs=["a", "b"]"#, "--no-history"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON result");
    assert_eq!(result["job"], serde_json::json!({"status": "failed", "error_message": "disk full"}));
    assert_eq!(
        result["report"],
        serde_json::json!({
            "status_text": "FAILED",
            "failed": true,
            "failure": "disk full",
            "whole_status": "FAILED",
            "count_or_zero": 0,
            "child_errors": ["disk full", "disk full"]
        })
    );
    // The types name both shapes: the declared one and the failure.
    let status = checked.types.iter().find(|t| t.name == "REF:job.status").expect("typed");
    assert_eq!(status.ty.to_string(), "integer | string");
    let count = checked.types.iter().find(|t| t.name == "REF:job.count").expect("typed");
    assert_eq!(count.ty.to_string(), "integer | null");
}

/// `file` in every operator, as the run does: for each operator and each pair of operand
/// types with a `file` on one side, the checker accepts the expression exactly when some
/// value of those types (a file is a path string or an object with a `path`) evaluates
/// without error. The verdicts are in the snapshot.
#[test]
fn file_operators_agree_with_evaluation() {
    use tdsl::{Engine, Scope, Type, Value};
    let engine = Engine::new();
    let operands: Vec<(&str, Type, Vec<&str>)> = vec![
        ("file", Type::File, vec![r#""a.txt""#, r#"{"path": "a.txt", "size": 3}"#]),
        ("string", Type::Str, vec![r#""b""#]),
        ("integer", Type::Int, vec!["2"]),
        ("number", Type::Number, vec!["1.5"]),
        ("boolean", Type::Bool, vec!["true"]),
        ("null", Type::Null, vec!["null"]),
        ("list", Type::any_list(), vec!["[1]"]),
        ("object", Type::any_object(), vec![r#"{"k": 1}"#]),
    ];
    let binary = ["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"];
    let mut forms: Vec<String> = binary.iter().map(|op| format!("x {op} y")).collect();
    forms.extend(["-x", "not x", "x.path", "x.length", "upper(x)", "length(x)", "split(x, '.')"].map(String::from));
    let mut table = String::new();
    let mut disagreements = Vec::new();
    for form in &forms {
        let unary = !form.contains('y');
        for (ln, lt, lvs) in &operands {
            for (rn, rt, rvs) in &operands {
                // A unary form is x alone (a file); a binary form has a file on one side.
                let wanted = if unary { *ln == "file" && *rn == "file" } else { *ln == "file" || *rn == "file" };
                if !wanted {
                    continue;
                }
                let scope = Scope::closed().with_name("x", lt.clone()).with_name("y", rt.clone());
                let analysis = engine.analyze(form, &scope);
                // `E0208` (values that are never equal) judges what a comparison is worth, not
                // whether it runs: `x == y` runs, always false. Shown, and taken as accepted.
                let never_equal = analysis.diagnostics.iter().any(|d| d.code.as_str() == "E0208");
                let accepted = !analysis.diagnostics.iter().any(|d| d.is_error() && d.code.as_str() != "E0208");
                // Evaluated whatever the checker says: compiled without types.
                let program = engine.compile(form).expect("compiles untyped");
                let mut ran = false;
                for lv in lvs {
                    for rv in rvs {
                        let vars: Value = serde_json::from_str(&format!(r#"{{"x": {lv}, "y": {rv}}}"#)).expect("JSON");
                        ran |= program.eval(&vars).is_ok();
                    }
                }
                let case = if unary { format!("{form} with x: {ln}") } else { format!("{form} with x: {ln}, y: {rn}") };
                let verdict = match (accepted, never_equal) {
                    (true, true) => "accepted, never equal (E0208)",
                    (true, false) => "accepted",
                    (false, _) => "error",
                };
                let _ = writeln!(table, "{case}: {verdict}");
                if accepted != ran {
                    disagreements.push(format!("{case}: checker {accepted}, evaluation {ran}"));
                }
            }
        }
    }
    assert!(disagreements.is_empty(), "the checker and evaluation disagree:\n{}", disagreements.join("\n"));
    insta::assert_snapshot!(table);
}

/// Ten composites nested in each other (the tool and nine callees) are reported by `check`
/// with the chain of calls, once; `--max-nesting` raises the limit for `check` and `run`
/// alike, within its range.
#[test]
fn composites_nested_past_the_limit() {
    let tool = "tests/data/check/err/composites_nested_too_deep.tool";
    let o = tdsl(&["check", tool, "--root", ROOT, "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let diags = diags.as_array().expect("array");
    // Two steps call the chain: one diagnostic, at the first.
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["code"], "E0619");
    let message = diags[0]["message"].as_str().expect("message");
    assert!(message.contains("9 deep, past the limit of 8"), "{message}");
    let chain: Vec<String> = (1..=9).map(|i| format!("/nested/level{i}.tool")).collect();
    assert!(message.ends_with(&chain.join(" → ")), "{message}");
    assert_eq!(message.matches("/nested/level9.tool").count(), 1, "{message}");

    assert_eq!(tdsl(&["check", tool, "--root", ROOT, "--max-nesting", "9"]).code, 0);
    let refused = tdsl(&["run", tool, "--root", ROOT, "--no-history"]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("E0619"), "{}", refused.stderr);
    let tmp = TempDir::new("nested-replay");
    let trace = tmp.0.join("trace.json").display().to_string();
    let ran = tdsl(&["run", tool, "--root", ROOT, "--no-history", "--max-nesting", "9"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let top = "/nested/top.tool";
    let ran = tdsl(&["run", top, "--root", ROOT, "--no-history", "--max-nesting", "9", "--trace", &trace]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    // The replay of a run with a raised limit gives the recorded result.
    let replayed = tdsl(&["replay", &trace, "--root", ROOT]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert!(replayed.stderr.contains("replay matches the recording"), "{}", replayed.stderr);
    for bad in ["0", "33"] {
        let check = tdsl(&["check", tool, "--root", ROOT, "--max-nesting", bad]);
        let run = tdsl(&["run", tool, "--root", ROOT, "--no-history", "--max-nesting", bad]);
        for (command, o) in [("check", check), ("run", run)] {
            assert_eq!(o.code, 2, "{command} --max-nesting {bad}: {}", o.stderr);
            let wanted = format!("--max-nesting: `max_nesting` must be an integer from 1 to 32, and it is {bad}");
            assert!(o.stderr.contains(&wanted), "{command}: {}", o.stderr);
        }
    }
}

/// A host that loads a workflow with a higher nesting limit than it runs it with meets the
/// run's own refusal (E0810): the chain of step paths is said once, not by every composite
/// it fails through.
#[test]
fn nesting_refused_at_run_time_names_the_chain_once() {
    use tdsl::testing::exec::{Executor, Options, Workflow};
    use tdsl::testing::host::HostRunner;
    let tool = Path::new("tests/data/check/err/composites_nested_too_deep.tool");
    let workflow = Workflow::load_with_nesting(Path::new(ROOT), tool, tdsl::testing::exec::engine(), 9).expect("loads");
    let executor = Executor::new(HostRunner::new()).with_options(Options::default());
    let run = executor.run(&workflow, serde_json::from_str("{}").expect("JSON")).expect("runs");
    let error = run.error.expect("failed");
    assert_eq!(error.code, "E0810");
    // Both steps call the chain, in parallel: either may be the one that fails the run.
    let chain =
        "/down/down/down/down/down/down/down/down` would nest composites 9 deep, past the limit of 8 (`--max-nesting`)";
    assert!(error.message.starts_with("`/nested/level9.tool` at step `"), "{}", error.message);
    assert!(error.message.ends_with(chain), "{}", error.message);
    assert!(!error.message.contains("failed at step"), "{}", error.message);
}

/// Seed 002's `output_key`: a step that calls a tool with one is also known by it, in the
/// check and in the run alike; a step's own `expected_key` wins.
#[test]
fn output_key_names_the_callers_result() {
    let tmp = TempDir::new("output-key");
    let mock = tmp.write("mock.json", r#"{"/tools/revenue_fetcher.tool": {"total": 394.3, "currency": "usd"}}"#);
    let tool = "tests/data/check/ok/output_key_default.tool";
    let o = tdsl(&["run", tool, "--root", ROOT, "--mock", &mock, "--arg", r#"ticker="AAPL""#, "--no-history"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON result");
    assert_eq!(result["report"], serde_json::json!({"total": 394.3, "label": "USD 394.3"}));

    let mock = tmp.write(
        "mock2.json",
        r#"{"/tools/revenue_fetcher.tool": [{"total": 1, "currency": "usd"}, {"total": 2, "currency": "usd"}]}"#,
    );
    let tool = "tests/data/check/ok/output_key_expected_key_wins.tool";
    let o = tdsl(&["run", tool, "--root", ROOT, "--mock", &mock, "--no-history", "--concurrency", "1"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON result");
    assert_eq!(result["compare"]["before"], result["last_year"]["total"]);
    assert_eq!(result["compare"]["now"], result["this_year"]["total"]);
    assert_ne!(result["compare"]["before"], result["compare"]["now"]);

    // The plan names the step by its key, which is what the executor resolves.
    let checked = check("tests/data/check/ok/output_key_default.tool");
    let plan = checked.plan.expect("plan");
    assert_eq!(step(&plan, "fetch").and_then(|s| s.expected_key.as_deref()), Some("revenue_data"));
}

/// A chain deeper than any run allows says so instead of suggesting a limit out of range; the
/// chain is found without recursion and named in full.
#[test]
fn composites_nested_past_any_limit() {
    let tmp = TempDir::new("nested-past-any-limit");
    let n = 40;
    std::fs::create_dir_all(tmp.0.join("c")).expect("dir");
    for i in 1..=n {
        let callee = if i == n { "/leaf.tool".to_string() } else { format!("/c/{}.tool", i + 1) };
        tmp.write(
            &format!("c/{i}.tool"),
            &format!(r#"{{"instructions": [{{"execution_id": "down", "tool_definition_path": "{callee}"}}]}}"#),
        );
    }
    tmp.write("leaf.tool", r#"{"system_event_endpoint": "builtin:echo"}"#);
    let main =
        tmp.write("main.tool", r#"{"instructions": [{"execution_id": "top", "tool_definition_path": "/c/1.tool"}]}"#);
    let root = tmp.0.display().to_string();
    let o = tdsl(&["check", &main, "--root", &root, "--max-nesting", "32", "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let diags: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON");
    let d = &diags[0];
    assert_eq!(d["code"], "E0619");
    assert!(d["message"].as_str().expect("message").contains(&format!("{n} deep, past the limit of 32")), "{d}");
    assert!(d["message"].as_str().expect("message").ends_with(&format!("/c/{n}.tool")), "{d}");
    assert_eq!(
        d["help"],
        "a run refuses to start a composite nested deeper than 32 (E0810), and no run nests composites deeper than 32: call fewer composites inside each other"
    );
}
