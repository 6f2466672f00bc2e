//! `mcp:` endpoints: composites in one root calling tools that `tdsl serve --mcp` serves
//! from another, run by the real binary (`tdsl run`).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::tdsl;
use serde_json::{json, Value};

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(path, body);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The served root: `/tools/upper.tool` upper-cases `text` and logs the pid of the process
/// that started it (the MCP server) to `servers.log`; `/tools/boom.tool` fails.
fn served_root(dir: &Path) -> PathBuf {
    let root = dir.join("served");
    let log = dir.join("servers.log");
    script(
        &root.join("tools/upper.sh"),
        &format!("#!/bin/sh\necho $PPID >> '{}'\ntr a-z A-Z | sed 's/\"TEXT\"/\"text\"/'\n", log.display()),
    );
    write(
        &root.join("tools/upper.tool"),
        r#"{"description": "Upper-cases a text",
            "arguments": [{"name": "text", "type_name": "string", "required": true}],
            "responses": [{"name": "text", "type_name": "string", "required": true}],
            "system_event_endpoint": "exec:./upper.sh"}"#,
    );
    script(&root.join("tools/boom.sh"), "#!/bin/sh\necho 'the reactor is down' >&2\nexit 3\n");
    write(&root.join("tools/boom.tool"), r#"{"description": "Fails", "system_event_endpoint": "exec:./boom.sh"}"#);
    root
}

/// The calling root: `/remote/upper.tool` and `/remote/boom.tool` are `mcp:` endpoints into
/// the served root; `main.tool` fans out over names and calls upper once more.
fn calling_root(dir: &Path, served: &Path) -> PathBuf {
    let root = dir.join("calling");
    let server = format!("{} serve --mcp --root '{}'", env!("CARGO_BIN_EXE_tdsl"), served.display());
    write(
        &root.join("remote/upper.tool"),
        &format!(
            r#"{{"description": "Upper-cases a text, over MCP",
                "arguments": [{{"name": "text", "type_name": "string", "required": true}}],
                "responses": [{{"name": "text", "type_name": "string", "required": true}}],
                "system_event_endpoint": "mcp:{server}#upper"}}"#
        ),
    );
    write(
        &root.join("remote/boom.tool"),
        &format!(r#"{{"description": "Fails, over MCP", "system_event_endpoint": "mcp:{server}#boom"}}"#),
    );
    write(
        &root.join("remote/missing.tool"),
        &format!(r#"{{"description": "No such tool", "system_event_endpoint": "mcp:{server}#nope"}}"#),
    );
    write(
        &root.join("main.tool"),
        r#"{"description": "Shouts every name, then a greeting",
  "arguments": [{"name": "names", "type_name": "list<string>", "required": true}],
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/remote/upper.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.names", "child_argument_name": "text"},
     "transform_responses": {"transforms": {"names": "map(array=REF:response, template=\"item.text\")"}}},
    {"execution_id": "greet", "tool_definition_path": "/remote/upper.tool",
     "arguments": {"text": "hello"}}
  ],
  "responses": [{"name": "names", "type_name": "list<string>", "required": true},
                {"name": "greeting", "type_name": "string", "required": true}],
  "response_reference_map": {"names": "REF:each.names", "greeting": "REF:greet.text"}
}"#,
    );
    for (name, callee) in [("fails", "/remote/boom.tool"), ("unknown", "/remote/missing.tool")] {
        write(
            &root.join(format!("{name}.tool")),
            &format!(
                r#"{{"instructions": [{{"execution_id": "call", "tool_definition_path": "{callee}",
                     "retry": {{"max_retries": 2, "base_delay_seconds": 0.1}}}}]}}"#
            ),
        );
    }
    root
}

fn alive(pid: &str) -> bool {
    let stat = Path::new("/proc").join(pid).join("stat");
    std::fs::read_to_string(stat).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn a_composite_calls_tools_served_by_tdsl_serve_over_mcp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = served_root(dir.path());
    let root = calling_root(dir.path(), &served);
    let trace = dir.path().join("trace.json");
    let out = tdsl(&[
        "run",
        root.join("main.tool").to_str().expect("utf-8"),
        "--root",
        root.to_str().expect("utf-8"),
        "--arg",
        r#"names=["ada", "grace", "edsger"]"#,
        "--trace",
        trace.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(result, json!({"names": ["ADA", "GRACE", "EDSGER"], "greeting": "HELLO"}));

    // One server for the whole run: every call came from the same process…
    let log = std::fs::read_to_string(dir.path().join("servers.log")).expect("log");
    let pids: Vec<&str> = log.lines().collect();
    assert_eq!(pids.len(), 4, "{log}");
    assert!(pids.iter().all(|p| *p == pids[0]), "one server shared by all steps: {log}");
    // …and it was shut down when the run ended.
    let started = std::time::Instant::now();
    while alive(pids[0]) {
        assert!(started.elapsed().as_secs() < 5, "the MCP server outlived the run");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // MCP calls are in the trace like any other call.
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(trace).expect("trace")).expect("JSON");
    let greet =
        trace["step_results"].as_array().expect("steps").iter().find(|s| s["step_id"] == "greet").expect("greet");
    assert_eq!(greet["tool"], "/remote/upper.tool", "{greet}");
    assert_eq!(greet["status"], "COMPLETED");
    assert_eq!(greet["attempts"][0]["outcome"], "ok");
    assert_eq!(greet["attempts"][0]["response"], json!({"text": "HELLO"}));
    let each = trace["step_results"].as_array().expect("steps").iter().find(|s| s["step_id"] == "each").expect("each");
    assert_eq!(each["children"].as_array().map(Vec::len), Some(3), "{each}");
}

#[test]
fn mcp_tool_errors_are_permanent_and_name_the_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = served_root(dir.path());
    let root = calling_root(dir.path(), &served);
    let trace = dir.path().join("trace.json");
    let run = |tool: &str| {
        tdsl(&[
            "run",
            root.join(tool).to_str().expect("utf-8"),
            "--root",
            root.to_str().expect("utf-8"),
            "--trace",
            trace.to_str().expect("utf-8"),
        ])
    };
    // The served tool fails: a tool error (`isError`), not retried.
    let out = run("fails.tool");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("the MCP tool `boom`"), "{}", out.stderr);
    // The serving tdsl names its program and status, and keeps its standard error on its own
    // log (docs/security.md, "How an upstream is named to a client").
    assert!(
        out.stderr.contains("reported an error") && out.stderr.contains("boom.sh exited with status 3"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("the reactor is down"), "{}", out.stderr);
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    let attempts = t["step_results"][0]["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "a permanent error is not retried: {attempts:?}");
    assert_eq!(attempts[0]["outcome"], "permanent");

    // An unknown tool is a JSON-RPC error from the server: permanent too.
    let out = run("unknown.tool");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("refused the call") && out.stderr.contains("nope"), "{}", out.stderr);
}

#[test]
fn a_server_that_cannot_start_or_dies_is_reported_with_its_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    // A program that does not exist: permanent, one attempt.
    write(&root.join("tools/gone.tool"), r#"{"system_event_endpoint": "mcp:./no-such-server#t"}"#);
    // A server that dies during the handshake: transient, retried (and started again).
    script(
        &root.join("tools/dies.sh"),
        "#!/bin/sh\necho \"started $$\" >> \"$(dirname \"$0\")/starts.log\"\necho 'cannot bind the GPU' >&2\nexit 1\n",
    );
    write(&root.join("tools/dies.tool"), r#"{"system_event_endpoint": "mcp:./dies.sh#t"}"#);
    // A malformed endpoint.
    write(&root.join("tools/bad.tool"), r#"{"system_event_endpoint": "mcp:./dies.sh"}"#);
    for name in ["gone", "dies", "bad"] {
        write(
            &root.join(format!("{name}.tool")),
            &format!(
                r#"{{"instructions": [{{"execution_id": "call", "tool_definition_path": "/tools/{name}.tool",
                     "retry": {{"max_retries": 1, "base_delay_seconds": 0.1}}}}]}}"#
            ),
        );
    }
    let trace = root.join("trace.json");
    let run = |name: &str| {
        let out = tdsl(&[
            "run",
            root.join(format!("{name}.tool")).to_str().expect("utf-8"),
            "--root",
            root.to_str().expect("utf-8"),
            "--trace",
            trace.to_str().expect("utf-8"),
        ]);
        let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
        let outcomes: Vec<String> = t["step_results"][0]["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["outcome"].as_str().unwrap_or_default().to_string())
            .collect();
        (out, outcomes)
    };
    let (out, outcomes) = run("gone");
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("cannot start the MCP server ") && out.stderr.contains("no-such-server"),
        "{}",
        out.stderr
    );
    assert_eq!(outcomes, ["permanent"]);

    let (out, outcomes) = run("dies");
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("failed the handshake"), "{}", out.stderr);
    assert!(out.stderr.contains("cannot bind the GPU"), "the server's stderr is in the message: {}", out.stderr);
    assert_eq!(outcomes, ["transient", "transient"], "retried");
    let starts = std::fs::read_to_string(root.join("tools/starts.log")).expect("log");
    assert_eq!(starts.lines().count(), 2, "the retry started the server again: {starts}");

    let (out, outcomes) = run("bad");
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("names no tool"), "{}", out.stderr);
    assert_eq!(outcomes, ["permanent"]);
}

#[test]
fn a_timeout_cancels_the_mcp_call_and_the_served_program_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served");
    let pid_file = dir.path().join("nap.pid");
    script(&served.join("tools/nap.sh"), &format!("#!/bin/sh\necho $$ > '{}'\nexec sleep 30\n", pid_file.display()));
    write(&served.join("tools/nap.tool"), r#"{"system_event_endpoint": "exec:./nap.sh"}"#);
    let root = dir.path().join("calling");
    write(
        &root.join("remote/nap.tool"),
        &format!(
            r#"{{"system_event_endpoint": "mcp:{} serve --mcp --root '{}'#nap"}}"#,
            env!("CARGO_BIN_EXE_tdsl"),
            served.display()
        ),
    );
    write(
        &root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "nap", "tool_definition_path": "/remote/nap.tool", "timeout_seconds": 2}]}"#,
    );
    let started = std::time::Instant::now();
    let out = tdsl(&["run", root.join("main.tool").to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("TIMEOUT") && out.stderr.contains("timed out after 2 s"), "{}", out.stderr);
    assert!(started.elapsed().as_secs() < 15, "the run did not wait for the 30 s nap");
    // The served side got `notifications/cancelled` (or lost its client) and killed the nap.
    let pid = std::fs::read_to_string(&pid_file).expect("the nap started").trim().to_string();
    let waited = std::time::Instant::now();
    while alive(&pid) {
        assert!(waited.elapsed().as_secs() < 5, "the served program outlived the cancelled call");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn check_mcp_schemas_compares_declarations_with_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = served_root(dir.path());
    let root = calling_root(dir.path(), &served);
    // A wrapper with a short relative path keeps the rendered lines the same on every machine.
    script(
        &root.join("srv"),
        &format!("#!/bin/sh\nexec '{}' serve --mcp --root '{}'\n", env!("CARGO_BIN_EXE_tdsl"), served.display()),
    );
    let server = "../srv";
    let tool = |name: &str, body: &str| {
        let path = root.join(format!("checks/{name}.tool"));
        write(&path, &body.replace("SERVER", server));
        path
    };
    let good = root.join("remote/upper.tool");
    let wrong_types = tool(
        "wrong_types",
        r#"{"arguments": [{"name": "text", "type_name": "integer", "required": true}],
  "responses": [{"name": "text", "type_name": "list", "required": true}],
  "system_event_endpoint": "mcp:SERVER#upper"}"#,
    );
    let undeclared = tool(
        "undeclared",
        r#"{"arguments": [{"name": "txt", "type_name": "string"}],
  "responses": [{"name": "shout", "type_name": "string"}],
  "system_event_endpoint": "mcp:SERVER#upper"}"#,
    );
    let optional = tool(
        "optional",
        r#"{"arguments": [{"name": "text", "type_name": "string", "required": false}],
  "system_event_endpoint": "mcp:SERVER#upper"}"#,
    );
    let unknown = tool("unknown", r#"{"system_event_endpoint": "mcp:SERVER#uper"}"#);
    let unavailable = tool("unavailable", r#"{"system_event_endpoint": "mcp:./no-such-server --flag#t"}"#);
    let check = |files: &[&Path], extra: &[&str]| {
        let mut args = vec!["check", "--root", root.to_str().expect("utf-8")];
        args.extend(files.iter().map(|f| f.to_str().expect("utf-8")));
        args.extend(extra);
        tdsl(&args)
    };
    let all = [good.as_path(), &wrong_types, &undeclared, &optional, &unknown, &unavailable];

    // Opt-in: without the flag nothing is started and nothing is reported.
    let out = check(&all, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let out = check(&all, &["--mcp-schemas", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let diags: Vec<Value> = serde_json::from_str(&out.stdout).expect("JSON");
    let summary: Vec<(String, String, String)> = diags
        .iter()
        .map(|d| {
            let file = Path::new(d["file"].as_str().expect("file")).file_name().expect("name").to_string_lossy();
            (file.into_owned(), d["code"].as_str().expect("code").to_string(), d["message"].as_str().expect("m").into())
        })
        .collect();
    let expected = [
        (
            "wrong_types.tool",
            "E0902",
            "the MCP tool `upper` has the argument `text` as string, declared `integer` here",
        ),
        ("wrong_types.tool", "E0902", "the MCP tool `upper` has the response `text` as string, declared `list` here"),
        (
            "undeclared.tool",
            "E0902",
            "the MCP tool `upper` requires the argument `text`, which this file does not declare",
        ),
        ("undeclared.tool", "W0901", "the MCP tool `upper` does not list the argument `txt`"),
        ("undeclared.tool", "E0902", "the MCP tool `upper` does not return `shout`"),
        ("optional.tool", "E0902", "the MCP tool `upper` requires the argument `text`, declared optional here"),
        ("unknown.tool", "E0901", "the MCP server offers no tool `uper`"),
    ];
    for (file, code, message) in expected {
        assert!(
            summary.iter().any(|(f, c, m)| f == file && c == code && m == message),
            "missing {file} {code} {message:?} in {summary:#?}"
        );
    }
    assert!(summary.iter().all(|(f, _, _)| f != "upper.tool"), "the matching declaration is clean: {summary:#?}");
    let gone: Vec<_> = summary.iter().filter(|(f, _, _)| f == "unavailable.tool").collect();
    assert_eq!(gone.len(), 1, "{summary:#?}");
    assert_eq!(gone[0].1, "E0903");
    assert!(gone[0].2.contains("cannot start the MCP server") && gone[0].2.contains("no-such-server"), "{}", gone[0].2);
    assert_eq!(diags.len(), expected.len() + 1, "{summary:#?}");

    // The rendering points at the exact characters: the tool name inside the endpoint string,
    // the `type_name` value.
    let out = check(&[&unknown, &wrong_types], &["--mcp-schemas"]);
    let tmp = dir.path().to_str().expect("utf-8");
    let rendered = out.stderr.replace(tmp, "<tmp>");
    insta::assert_snapshot!("check_mcp_schemas", rendered);
}

/// `examples/mcp-composition`: a composite whose tools are the document-analysis example's,
/// served by a second tdsl over MCP; its declarations match the server's schemas.
#[test]
fn the_mcp_composition_example_runs_and_checks_against_its_server() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(args)
            .current_dir(repo)
            .env("TDSL", env!("CARGO_BIN_EXE_tdsl"))
            .env("NO_COLOR", "1")
            .output()
            .expect("tdsl runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let root = "examples/mcp-composition";
    let (code, stdout, stderr) = run(&[
        "run",
        "examples/mcp-composition/main.tool",
        "--root",
        root,
        "--args",
        "examples/mcp-composition/args.json",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let result: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        result,
        json!({"documents": [{"name": "quarterly-report.txt", "words": 56}, {"name": "meeting-notes.txt", "words": 24}],
               "total_words": 80, "skipped": 1})
    );
    let (code, _, stderr) = run(&["check", root, "--root", root, "--mcp-schemas", "--deny-warnings"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("checked 3 files: 0 errors, 0 warnings"), "{stderr}");
}

/// An MCP server over Streamable HTTP (Python's `http.server`) whose `huge` answers with 17 MiB
/// of text, as one JSON body (`json`) or one SSE event (`sse`), and `ok` with a small object.
const HUGE_HTTP_SERVER: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
MODE = sys.argv[1]
SIZE = 17 * 1024 * 1024
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def empty(self, status):
        self.send_response(status); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        self.empty(405)
    def do_DELETE(self):
        self.empty(200)
    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if "id" not in m:
            return self.empty(202)
        method = m["method"]
        if method == "initialize":
            result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "huge", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("ok", "huge")]}
        elif method == "tools/call":
            text = "x" * SIZE if m["params"]["name"] == "huge" else json.dumps({"ok": True})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}).encode()
        ctype = "application/json"
        if MODE == "sse" and method == "tools/call":
            body = b"event: message\ndata: " + body + b"\n\n"
            ctype = "text/event-stream"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// `mcp:http://…#tool` endpoints: an answer over 16 MiB, as a JSON body or as an SSE event,
/// fails the call at once with a permanent error saying so (an SSE event was read whole,
/// however long, and a JSON one failed naming rmcp's types, retried as transient).
#[test]
fn an_http_mcp_answer_over_the_cap_fails_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = dir.path().join("huge.py");
    write(&server, HUGE_HTTP_SERVER);
    for mode in ["json", "sse"] {
        let mut child = std::process::Command::new(common::python::python())
            .arg(&server)
            .arg(mode)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python starts");
        let mut port = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().expect("stdout")), &mut port)
            .expect("the server prints its port");
        let root = dir.path().join(mode);
        for tool in ["huge", "ok"] {
            write(
                &root.join(format!("{tool}.tool")),
                &format!(
                    r#"{{"description": "x", "responses": [{{"name": "response", "type_name": "any"}}],
                        "system_event_endpoint": "mcp:http://127.0.0.1:{}/mcp#{tool}"}}"#,
                    port.trim()
                ),
            );
        }
        write(
            &root.join("main.tool"),
            r#"{"instructions": [
                {"execution_id": "ok", "tool_definition_path": "/ok.tool"},
                {"execution_id": "huge", "tool_definition_path": "/huge.tool", "timeout_seconds": 120,
                 "retry": {"max_retries": 3, "base_delay_seconds": 5}}]}"#,
        );
        let started = std::time::Instant::now();
        let root = root.to_str().expect("utf-8");
        let out = tdsl(&["run", &format!("{root}/main.tool"), "--root", root]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(out.code, 1, "{mode}: {}", &out.stderr[..out.stderr.len().min(2000)]);
        assert!(out.stderr.contains("the server sent a message longer than 16 MiB"), "{mode}: {}", out.stderr);
        assert!(!out.stderr.contains("rmcp::") && !out.stderr.contains("attempts"), "{mode}: {}", out.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{mode}: took {:?}", started.elapsed());
    }
}

/// A stdio server that logs on standard error: a line that is not UTF-8, 300 KB of lines
/// (more than a pipe holds), then answers; its `die` tool writes a 2 MB line without end,
/// then `last words`, and exits; its `late` tool exits leaving a process that says `late
/// words` on its standard error 300 ms later.
const NOISY_SERVER: &str = r#"
import json, os, subprocess, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "noisy", "version": "1"}}})
    elif m["method"] == "tools/call" and m["params"]["name"] == "die":
        sys.stderr.write("z" * (2 * 1024 * 1024) + "\nlast words\n"); sys.stderr.flush()
        os._exit(3)
    elif m["method"] == "tools/call" and m["params"]["name"] == "late":
        subprocess.Popen(["sh", "-c", "sleep 0.3; echo late words >&2"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL)
        os._exit(3)
    elif m["method"] == "tools/call":
        sys.stderr.buffer.write(b"latin-1 caf\xe9\n"); sys.stderr.flush()
        for i in range(3000):
            sys.stderr.write("log line %d %s\n" % (i, "y" * 100))
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "{\"n\": 2}"}]}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

/// A server's standard error is read to its end whatever it holds: a line that is not
/// UTF-8 stopped the reading, so the server died of a broken pipe at its next lines (the
/// call failed "Transport closed"); a line without end was held whole and put whole in
/// the message. Now the call succeeds, and a dying server's last lines are in the message,
/// each cut at 1000 bytes — also those written after the connection ended, which the error
/// was once made without (the `die` case failed so on a loaded machine; `late` always did).
#[test]
fn a_server_that_floods_its_stderr_with_anything_keeps_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(&root.join("noisy.py"), NOISY_SERVER);
    let python = common::python::python();
    for tool in ["t", "die", "late"] {
        write(
            &root.join(format!("remote-{tool}.tool")),
            &format!(
                r#"{{"arguments": [{{"name": "n", "type_name": "integer", "required": true}}],
                    "system_event_endpoint": "mcp:'{}' '{}'#{tool}"}}"#,
                python.display(),
                root.join("noisy.py").display()
            ),
        );
        write(
            &root.join(format!("main-{tool}.tool")),
            &format!(
                r#"{{"instructions": [{{"execution_id": "call", "tool_definition_path": "/remote-{tool}.tool",
                     "arguments": {{"n": 1}}, "timeout_seconds": 30, "retry": {{"max_retries": 0}}}}],
                    "response_reference_map": {{"n": "REF:call.n"}}}}"#
            ),
        );
    }
    let run = |tool: &str| {
        tdsl(&[
            "run",
            root.join(format!("main-{tool}.tool")).to_str().expect("utf-8"),
            "--root",
            root.to_str().expect("utf-8"),
        ])
    };
    let out = run("t");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).expect("JSON"), json!({"n": 2}), "{}", out.stderr);
    let out = run("die");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("{}… | last words", "z".repeat(1000))),
        "{}",
        &out.stderr[..out.stderr.len().min(3000)]
    );
    assert!(out.stderr.len() < 30_000, "the endless line was kept whole: {} bytes", out.stderr.len());
    let out = run("late");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("failed: Transport closed (its standard error ends: late words)"), "{}", out.stderr);
}
