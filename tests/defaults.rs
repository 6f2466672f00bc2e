//! Declared `default`s are applied (SPEC §5 ext, `docs/tool-format.md` "Constraints"): an
//! argument that is absent or `null` and has a `default` is filled in before the tool gets
//! its arguments — a composite's own arguments at the start of a run (`tdsl run`, the library
//! `Executor`, `serve --mcp`), a callee's before the call (`builtin:echo`, `exec:`) — and the
//! trace records the filled-in arguments, so a replay agrees. Statically, `REF:arguments.X`
//! of a declaration with a default is not null, and a required argument with a default need
//! not be supplied.

mod common;
use common::tdsl;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value as Json};
use tdsl::testing::exec::{Executor, ManualTime, RunStatus, ToolCall, ToolError, Workflow};
use tdsl::Value;

/// `/tools/echo.tool`: a primitive echo whose `level` has a default and whose `mode` is
/// required with a default; `/main.tool`: a composite whose own `label` has a default, that
/// passes `label` on and never supplies `level` or `mode`.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    std::fs::write(
        tools.join("echo.tool"),
        r#"{
  "description": "Echoes its arguments",
  "arguments": [
    {"name": "label", "type_name": "string", "required": true},
    {"name": "level", "type_name": "integer", "minimum": 1, "default": 3},
    {"name": "mode", "type_name": "string", "required": true, "enum": ["fast", "slow"], "default": "slow"},
    {"name": "note", "type_name": "string", "default": null}
  ],
  "system_event_endpoint": "builtin:echo"
}"#,
    )
    .expect("write");
    std::fs::write(
        dir.path().join("main.tool"),
        r#"{
  "description": "Echoes a label",
  "arguments": [
    {"name": "label", "type_name": "string", "default": "untitled"}
  ],
  "instructions": [
    {"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
     "arguments": {"label": "REF:arguments.label"}}
  ],
  "response_reference_map": {"echoed": "REF:e"}
}"#,
    )
    .expect("write");
    dir
}

fn run(dir: &Path, tool: &str, args: &[&str], extra: &[&str]) -> common::Out {
    let d = dir.to_str().expect("utf-8");
    let mut all = vec!["run", tool, "--root", d];
    for a in args {
        all.push("--arg");
        all.push(a);
    }
    all.extend_from_slice(extra);
    tdsl(&all)
}

fn json_of(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn run_fills_in_the_composites_and_the_callees_defaults() {
    let dir = root();
    let o = run(dir.path(), "/main.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"echoed": {"label": "untitled", "level": 3, "mode": "slow"}}));
}

#[test]
fn a_given_value_wins_and_null_takes_the_default() {
    let dir = root();
    let o = run(dir.path(), "/main.tool", &[r#"label="mine""#], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"echoed": {"label": "mine", "level": 3, "mode": "slow"}}));

    let o = run(dir.path(), "/main.tool", &["label=null"], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout)["echoed"]["label"], "untitled");
}

#[test]
fn a_step_that_passes_null_or_a_value_to_a_defaulted_argument() {
    let dir = root();
    std::fs::write(
        dir.path().join("given.tool"),
        r#"{
  "instructions": [
    {"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
     "arguments": {"label": "x", "level": null, "mode": "fast", "note": null}}
  ],
  "response_reference_map": {"echoed": "REF:e"}
}"#,
    )
    .expect("write");
    let o = run(dir.path(), "/given.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // `level: null` takes its default; `mode` keeps the value given; a `null` default fills
    // in nothing.
    assert_eq!(json_of(&o.stdout), json!({"echoed": {"label": "x", "level": 3, "mode": "fast", "note": null}}));
}

#[test]
fn the_trace_records_the_filled_in_arguments_and_replay_agrees() {
    let dir = root();
    let trace = dir.path().join("trace.json");
    let t = trace.to_str().expect("utf-8");
    let o = run(dir.path(), "/main.tool", &[], &["--trace", t]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let recorded = json_of(&std::fs::read_to_string(&trace).expect("trace"));
    assert_eq!(recorded["arguments"], json!({"label": "untitled"}));
    assert_eq!(recorded["step_results"][0]["arguments"], json!({"label": "untitled", "level": 3, "mode": "slow"}));

    let o = tdsl(&["replay", t, "--root", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"echoed": {"label": "untitled", "level": 3, "mode": "slow"}}));
}

#[test]
fn fan_out_children_get_the_callees_defaults() {
    let dir = root();
    std::fs::write(
        dir.path().join("fan.tool"),
        r#"{
  "instructions": [
    {"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
     "parallel_execution": {"iterate_over": ["a", "b"], "child_argument_name": "label"}}
  ],
  "response_reference_map": {"echoed": "REF:e.response"}
}"#,
    )
    .expect("write");
    let o = run(dir.path(), "/fan.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        json_of(&o.stdout),
        json!({"echoed": [
            {"label": "a", "level": 3, "mode": "slow"},
            {"label": "b", "level": 3, "mode": "slow"}
        ]})
    );
}

#[test]
fn a_composite_callee_gets_its_defaults() {
    let dir = root();
    std::fs::write(
        dir.path().join("outer.tool"),
        r#"{
  "instructions": [{"execution_id": "m", "tool_definition_path": "/main.tool", "arguments": {}}],
  "response_reference_map": {"inner": "REF:m.echoed"}
}"#,
    )
    .expect("write");
    let o = run(dir.path(), "/outer.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"inner": {"label": "untitled", "level": 3, "mode": "slow"}}));
}

#[cfg(unix)]
#[test]
fn an_exec_tool_receives_its_defaults_on_standard_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    // `cat` prints the JSON object it reads: the arguments the program received.
    std::fs::write(
        tools.join("cat.tool"),
        r#"{
  "arguments": [
    {"name": "name", "type_name": "string", "required": true},
    {"name": "greeting", "type_name": "string", "default": "hello"}
  ],
  "system_event_endpoint": "exec:cat"
}"#,
    )
    .expect("write");
    std::fs::write(
        dir.path().join("main.tool"),
        r#"{
  "instructions": [
    {"execution_id": "c", "tool_definition_path": "/tools/cat.tool", "arguments": {"name": "ada"}}
  ],
  "response_reference_map": {"received": "REF:c"}
}"#,
    )
    .expect("write");
    let o = run(dir.path(), "/main.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"received": {"name": "ada", "greeting": "hello"}}));
}

#[test]
fn the_library_executor_fills_in_defaults_and_the_runner_sees_them() {
    let dir = root();
    let workflow = Workflow::load(dir.path(), &dir.path().join("main.tool")).expect("loads");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let runner = move |call: &ToolCall<'_>| -> Result<Value, ToolError> {
        log.lock().expect("lock").push(call.arguments.to_string());
        Ok(call.arguments.clone())
    };
    let executor = Executor::new(runner).with_time(Arc::new(ManualTime::new(0)));
    let run = executor.run(&workflow, Value::from(json!({}))).expect("runs");
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(run.trace.arguments.to_string(), r#"{"label":"untitled"}"#);
    assert_eq!(*seen.lock().expect("lock"), vec![r#"{"label":"untitled","level":3,"mode":"slow"}"#.to_string()]);
}

/// A `serve --mcp` session: initialize, then one `tools/call`; the call's result.
fn mcp_call(root: &Path, name: &str, arguments: Json) -> Json {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--root"])
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tdsl serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |msg: Json| {
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
    };
    let mut answer = |id: u64| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).expect("read") > 0, "the server closed its output");
        let v = json_of(&line);
        if v["id"] == json!(id) {
            break v;
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}));
    let r = answer(2);
    let _ = child.kill();
    let _ = child.wait();
    r.get("result").cloned().unwrap_or_else(|| panic!("a result: {r}"))
}

#[test]
fn serve_mcp_fills_in_defaults_for_a_primitive_and_a_composite() {
    let dir = root();
    // The primitive: `mode` is required, but its default stands in for it.
    let r = mcp_call(dir.path(), "echo", json!({"label": "l"}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"], json!({"label": "l", "level": 3, "mode": "slow"}));
    // The composite: its own `label` default, then the callee's.
    let r = mcp_call(dir.path(), "main", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"], json!({"echoed": {"label": "untitled", "level": 3, "mode": "slow"}}));
    // A value that breaks the declaration is still refused.
    let r = mcp_call(dir.path(), "echo", json!({"label": "l", "level": 0}));
    assert_eq!(r["isError"], true, "{r}");
}

/// `tdsl check` on a root: its exit status and what it printed.
fn check(root: &Path, tool: &str) -> common::Out {
    tdsl(&["check", root.join(tool).to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")])
}

#[test]
fn statically_a_defaulted_required_argument_may_be_left_out_or_null() {
    let dir = root();
    // `label` is required without a default: leaving it out, or passing null, is an error.
    // `mode` is required with a default: neither is.
    let step = |name: &str, arguments: &str| {
        std::fs::write(
            dir.path().join(format!("{name}.tool")),
            format!(
                r#"{{
  "description": "Calls echo",
  "instructions": [{{"execution_id": "e", "tool_definition_path": "/tools/echo.tool", "arguments": {arguments}}}],
  "response_reference_map": {{"echoed": "REF:e"}}
}}"#
            ),
        )
        .expect("write");
        let o = check(dir.path(), &format!("{name}.tool"));
        (o.code, format!("{}{}", o.stdout, o.stderr))
    };
    let (code, said) = step("missing", "{}");
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("E0612") && said.contains("does not supply the required argument `label`"), "{said}");
    assert!(!said.contains("`mode`"), "`mode` has a default and need not be supplied: {said}");

    let (code, said) = step("nulllabel", r#"{"label": null}"#);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("E0613") && said.contains("argument `label`"), "{said}");

    let (code, said) = step("nullmode", r#"{"label": "x", "mode": null}"#);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("0 errors, 0 warnings"), "{said}");
    let o = run(dir.path(), "/nullmode.tool", &[], &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json_of(&o.stdout), json!({"echoed": {"label": "x", "level": 3, "mode": "slow"}}));

    // `main.tool` passes its optional `label`, which has a default, to the required `label`:
    // clean.
    let o = check(dir.path(), "main.tool");
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("0 errors, 0 warnings") || o.stderr.contains("0 errors, 0 warnings"), "{}", o.stderr);
}
