//! `tdsl serve --mcp` driven over its standard input and output with JSON-RPC, as an MCP
//! host would: initialize, tools/list, tools/call (success, bad arguments, a failing run).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(root: &Path, allow: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["serve", "--mcp", "--root"]).arg(root);
        for a in allow {
            cmd.args(["--allow", a]);
        }
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("tdsl serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Server { child, stdin, stdout, next_id: 1 };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "tdsl", "{init}");
        assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed its output while `{method}` was pending");
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC message per line");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        r.get("result").cloned().unwrap_or_else(|| panic!("a result: {r}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)
}

#[test]
fn lists_and_calls_the_example_tools() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().expect("name")).collect();
    assert_eq!(
        names,
        ["main", "tools__data_processor", "tools__echo", "tools__error_handler", "tools__validator"],
        "{list}"
    );
    let main = &tools[0];
    assert_eq!(main["inputSchema"]["required"], json!(["user_data", "mode"]));
    assert_eq!(main["outputSchema"]["type"], "object");

    // Success: structured content plus a text rendering of the same JSON.
    let args: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("valid.json")).expect("read")).expect("JSON");
    let r = s.call("main", args);
    assert_eq!(r["isError"], false, "{r}");
    let structured = &r["structuredContent"];
    assert!(structured.is_object(), "{r}");
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(&text, structured);

    // A primitive tool runs too.
    let r = s.call("tools__echo", json!({"x": 1}));
    assert_eq!(r["structuredContent"], json!({"x": 1}), "{r}");

    // Bad arguments: a tool error naming the argument, nothing runs, the server lives on.
    let r = s.call("main", json!({"mode": 3}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().expect("text").contains("`user_data` is missing"), "{r}");
    let r = s.call("main", json!({"user_data": [], "mode": 3}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().expect("text").contains("argument `mode` must be string"), "{r}");

    // An unknown tool is a protocol error.
    let r = s.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert!(r["error"].is_object(), "{r}");
    // …and the server still answers.
    let list = s.request("tools/list", json!({}));
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(5));
}

#[cfg(unix)]
#[test]
fn a_failed_run_is_a_tool_error_naming_the_step() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    let script = root.join("tools/fail.sh");
    std::fs::write(&script, "#!/bin/sh\necho 'the disk is on fire' >&2\nexit 3\n").expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(
        root.join("tools/fail.tool"),
        r#"{"description": "Fails", "system_event_endpoint": "exec:./fail.sh"}"#,
    )
    .expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{
  "description": "Calls a tool that fails",
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "burn", "tool_definition_path": "/tools/fail.tool", "arguments": {"n": "REF:arguments.n"}}
  ]
}"#,
    )
    .expect("write");
    let mut s = Server::start(root, &["/main.tool"]);
    let list = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        list["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["main"], "--allow filters: {list}");
    let r = s.call("main", json!({"n": 1}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("step `burn` failed") && text.contains("the disk is on fire"), "{text}");
    // A tool the allow globs leave out cannot be called.
    let r = s.request("tools/call", json!({"name": "tools__fail", "arguments": {}}));
    assert!(r["error"].is_object(), "{r}");
}
