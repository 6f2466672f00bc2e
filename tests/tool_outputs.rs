//! The budget of values of one tool output (`--max-tool-values`; `docs/security.md`,
//! "Hostile round 10b"), on the real binary: an `exec:` tool's standard output, an MCP
//! server's result (`structuredContent`, a text block's JSON, a message past the budget
//! cut at the transport), under `tdsl run` and `tdsl serve`. Each output past the budget
//! fails its call at once, permanent, naming the bound and the flag; the flag raised, the
//! same output is the result. `http:` bodies are tested in `tests/http_endpoint.rs`; that
//! a read stops at the bound (what it builds, counted) in `src/value/decode.rs`.

mod common;

use std::path::{Path, PathBuf};

use common::mcp_stdio::serve_upstreams;
use common::process::script;
use common::tdsl;
use serde_json::{json, Value};

/// What follows a bound's number in every message.
const SAYS: &str = "values (numbers, strings, lists, objects…), the most one tool output may hold \
                    (`--max-tool-values` of `tdsl run` and `tdsl serve` raises it)";

/// An MCP server over stdio with one tool, `big`, answering a list of `$N` zeros as
/// `structuredContent` `{"r": […]}` (`$MODE` `structured`) or as a text block's JSON
/// (`text`).
const BIG: &str = r#"#!/usr/bin/env python3
import json, os, sys
mode, n = os.environ.get("MODE", "structured"), int(os.environ.get("N", "3000"))
text = "[" + ",".join(["0"] * n) + "]"
for line in sys.stdin:
    m = json.loads(line)
    method, i = m.get("method"), m.get("id")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "big", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        if mode == "structured":
            body = '{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"r":%s}}}' % (json.dumps(i), text)
        else:
            body = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}' % (json.dumps(i), text)
        sys.stdout.write(body + "\n")
        sys.stdout.flush()
        continue
    elif i is None:
        continue
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": r}) + "\n")
    sys.stdout.flush()
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A root whose `main.tool` calls `/tools/big.tool` (at `endpoint`) once, retried up to
/// twice, its result the step's.
fn root(dir: &Path, endpoint: &str) -> PathBuf {
    write(&dir.join("tools/big.tool"), &json!({"arguments": [], "system_event_endpoint": endpoint}).to_string());
    let main = json!({"instructions": [{"execution_id": "call", "tool_definition_path": "/tools/big.tool",
        "arguments": {}, "retry": {"max_retries": 2, "base_delay_seconds": 0.1}}]});
    write(&dir.join("main.tool"), &main.to_string());
    dir.join("main.tool")
}

/// Runs `main.tool` with `extra` arguments: the exit status, standard output, standard
/// error and the step's attempts' outcomes.
fn run(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> (i32, String, String, Vec<String>) {
    let trace = dir.join("trace.json");
    let main = dir.join("main.tool");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["run", main.to_str().expect("utf-8"), "--no-history", "--root"])
        .arg(dir)
        .arg("--trace")
        .arg(&trace)
        .args(extra)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1");
    let out = cmd.output().expect("tdsl runs");
    // A trace holds the output a few levels down: read at any depth, as `tdsl report` does.
    let text = std::fs::read_to_string(&trace).expect("trace");
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    let t = <Value as serde::Deserialize>::deserialize(&mut de).expect("JSON");
    let outcomes = t["step_results"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or_default().to_string())
        .collect();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr), outcomes)
}

/// The number of zeros in the step's result (`[0,…]`, or `{"r": [0,…]}`).
fn zeros(stdout: &str) -> usize {
    let v: Value = serde_json::from_str(stdout).expect("JSON");
    let call = &v["call"];
    call["response"].as_array().or_else(|| call["r"].as_array()).map_or(0, Vec::len)
}

#[test]
fn an_exec_tools_output_of_more_values_than_the_budget_fails_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("zeros.json");
    std::fs::write(&data, format!("[{}0]", "0,".repeat(2_999))).expect("data");
    root(dir.path(), &format!("exec:cat '{}'", data.display()));
    let (code, _, stderr, outcomes) = run(dir.path(), &["--max-tool-values", "2000"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(outcomes, ["permanent"], "not retried");
    assert!(stderr.contains(&format!("`/tools/big.tool`: cat printed more than 2000 {SAYS}")), "{stderr}");

    // A list and 3,000 numbers: within 3,001 and within the default, not within 3,000.
    for extra in [&["--max-tool-values", "3001"][..], &[]] {
        let (code, stdout, stderr, _) = run(dir.path(), extra, &[]);
        assert_eq!(code, 0, "{extra:?}: {stderr}");
        assert_eq!(zeros(&stdout), 3_000);
    }
    let (code, _, stderr, _) = run(dir.path(), &["--max-tool-values", "3000"], &[]);
    assert!(code == 1 && stderr.contains("more than 3000 values"), "{stderr}");
}

#[test]
fn an_exec_tools_output_nested_deeper_than_128_levels_fails_saying_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (levels, fails) in [(129, true), (128, false)] {
        let data = dir.path().join("deep.json");
        std::fs::write(&data, format!("{}{}", "[".repeat(levels), "]".repeat(levels))).expect("data");
        root(dir.path(), &format!("exec:cat '{}'", data.display()));
        let (code, _, stderr, outcomes) = run(dir.path(), &[], &[]);
        if fails {
            assert_eq!((code, outcomes), (1, vec!["permanent".to_string()]), "{stderr}");
            assert!(
                stderr.contains(
                    "`/tools/big.tool`: cat printed lists or objects nested deeper than 128 levels, the most a tool \
                     output may nest"
                ),
                "{stderr}"
            );
        } else {
            assert_eq!(code, 0, "{levels} levels: {stderr}");
        }
    }
}

/// An MCP server's result past the budget: counted exactly when it is built again as a
/// value (a `structuredContent` within the transport's allowance for the message's
/// envelope, a text block's JSON), or cut at the transport (a message of far more values,
/// which rmcp never reads: the connection is closed).
#[test]
fn an_mcp_result_of_more_values_than_the_budget_fails_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = dir.path().join("big.py");
    script(&server, BIG);
    root(dir.path(), &format!("mcp:'{}'#big", server.display()));
    let of = "`/tools/big.tool`: the MCP tool `big` of big.py";
    for (mode, n, says) in [
        ("structured", "2010", format!("{of} answered with more than 2000 {SAYS}")),
        ("text", "3000", format!("{of} answered with more than 2000 {SAYS}")),
        (
            "structured",
            "3000",
            format!("{of} failed: the server sent a message of more than 2000 {SAYS}; its connection was closed"),
        ),
    ] {
        let env = [("MODE", mode), ("N", n)];
        let (code, _, stderr, outcomes) = run(dir.path(), &["--max-tool-values", "2000"], &env);
        assert_eq!((code, outcomes), (1, vec!["permanent".to_string()]), "{mode} {n}: {stderr}");
        assert!(stderr.contains(&says), "{mode} {n}: {stderr}");
        let (code, stdout, stderr, _) = run(dir.path(), &["--max-tool-values", "3002"], &env);
        assert_eq!(code, 0, "{mode} {n}: {stderr}");
        assert_eq!(zeros(&stdout).to_string(), n);
    }
}

/// `serve`'s flag bounds what a plan's upstream call reads, and is refused out of range, as
/// `run`'s is.
#[test]
fn serve_and_run_take_the_flag_in_its_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = dir.path().join("big.py");
    script(&server, BIG);
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let plan = json!({"plan": {"instructions": [{"execution_id": "a", "tool_definition_path": "up/big",
        "arguments": {}}], "response_reference_map": {"n": "REF:a.r.length"}}});
    let up = [format!("up={}", server.display())];
    let mut client = serve_upstreams(&root, &up, None, &["--max-tool-values", "2000"], &[("N", "2010")]);
    let r = client.call("run_plan", plan.clone());
    assert_eq!(r["isError"], true, "{r}");
    let said = "the MCP tool `big` of the upstream server `up` (big.py) answered with more than 2000";
    assert!(r.to_string().contains(said), "{r}");
    drop(client);
    let mut client = serve_upstreams(&root, &up, None, &[], &[("N", "2010")]);
    let r = client.call("run_plan", plan);
    assert_eq!(r["structuredContent"]["result"], json!({"n": 2010}), "{r}");
    drop(client);

    let root = root.to_str().expect("utf-8");
    let range = "`max_tool_values` must be an integer from 1024 to 1073741824, and it is 10";
    let served = tdsl(&["serve", "--mcp", "--root", root, "--max-tool-values", "10"]);
    assert_eq!(served.code, 2, "{}", served.stderr);
    assert!(served.stderr.contains(&format!("--max-tool-values: {range}")), "{}", served.stderr);
    let ran = tdsl(&["run", "main.tool", "--root", root, "--max-tool-values", "10"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains(&format!("--max-tool-values: {range}")), "{}", ran.stderr);
}

/// A run keeps every output it read until it ends (a fan-out's in its result, all in its
/// trace), so the outputs of one run hold at most 8 times `--max-tool-values` in all: 40
/// children each printing 301 values pass 8 × 1,024, 20 do not.
#[test]
fn the_outputs_of_one_run_hold_at_most_eight_times_the_bound_in_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("zeros.json");
    std::fs::write(&data, format!("[{}0]", "0,".repeat(299))).expect("data");
    let tool = json!({"arguments": [{"name": "i", "type_name": "any"}],
        "system_event_endpoint": format!("exec:cat '{}'", data.display())});
    write(&dir.path().join("tools/big.tool"), &tool.to_string());
    for (children, fails) in [(40, true), (20, false)] {
        let main = json!({"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/big.tool",
            "arguments": {}, "parallel_execution": {"iterate_over": (0..children).collect::<Vec<_>>(),
            "child_argument_name": "i"}}], "response_reference_map": {"n": "REF:fan.response.length"}});
        write(&dir.path().join("main.tool"), &main.to_string());
        let root = dir.path().to_str().expect("utf-8");
        let out = tdsl(&["run", "main.tool", "--root", root, "--no-history", "--max-tool-values", "1024"]);
        if fails {
            assert_eq!(out.code, 1, "{}", out.stderr);
            let says = "`/tools/big.tool`: its output brings the values of the run's tool outputs past 8192, the most \
                        they may hold in all (8 times `--max-tool-values`, which raises it)";
            assert!(out.stderr.contains(says), "{}", out.stderr);
        } else {
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert!(out.stdout.contains("\"n\": 20"), "{}", out.stdout);
        }
    }
}

/// `--trace` streams the trace to its file (every run above reads one back); a trace that
/// cannot be written is said, and leaves no file.
#[test]
fn a_trace_that_cannot_be_written_is_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("zeros.json");
    std::fs::write(&data, "[0]").expect("data");
    root(dir.path(), &format!("exec:cat '{}'", data.display()));
    let trace = dir.path().join("no-such-folder/trace.json");
    let root = dir.path().to_str().expect("utf-8");
    let out = tdsl(&["run", "main.tool", "--root", root, "--no-history", "--trace", trace.to_str().expect("utf-8")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("error: cannot write the trace to"), "{}", out.stderr);
    assert!(!trace.exists());
}
