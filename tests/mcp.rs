//! `tdsl serve --mcp` driven over its standard input and output with JSON-RPC, as an MCP
//! host would: initialize, tools/list, tools/call (success, bad arguments, a failing run).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command};
#[cfg(unix)]
use std::time::Duration;

use common::example;
use common::process::Process;
#[cfg(unix)]
use common::process::{alive, script, sleeping_pids, sleeping_root, wait_until};
use serde_json::{json, Value};

/// A running `tdsl serve --mcp`, initialized; killed when dropped.
struct Server {
    process: Process,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Every message read that was not the awaited response, in order.
    others: Vec<Value>,
}

impl Server {
    fn start(root: &Path, allow: &[&str]) -> Server {
        let args: Vec<&str> = allow.iter().flat_map(|a| ["--allow", a]).collect();
        Server::start_with(root, &args)
    }

    /// With these options after `--root`.
    fn start_with(root: &Path, args: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["serve", "--mcp", "--root"]).arg(root).args(args);
        let (process, stdin, stdout) = Process::spawn_piped("tdsl serve --mcp", &mut cmd);
        let mut s = Server { process, stdin, stdout: BufReader::new(stdout), next_id: 1, others: Vec::new() };
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
        let id = self.start_request(method, params);
        self.response(id, method)
    }

    /// Sends a request without waiting for its response; its id.
    fn start_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Reads until the response to request `id`, keeping everything else in `others`.
    fn response(&mut self, id: u64, method: &str) -> Value {
        loop {
            let v = self.read_message(&format!(" while `{method}` was pending"));
            if v["id"] == json!(id) {
                return v;
            }
            self.others.push(v);
        }
    }

    /// The next message the server writes; the test fails, with the server's standard
    /// error, if it closes its output (`pending` says what was awaited).
    fn read_message(&mut self, pending: &str) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read");
        assert!(n > 0, "the server closed its output{pending}; its standard error:\n{}", self.process.output());
        serde_json::from_str(&line).expect("a JSON-RPC message per line")
    }

    /// Writes raw bytes and a newline.
    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The next message the server writes.
    fn next_message(&mut self) -> Value {
        self.read_message("")
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        r.get("result").cloned().unwrap_or_else(|| panic!("a result: {r}"))
    }
}

#[test]
fn lists_and_calls_the_example_tools() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["main", "data_processor", "echo", "error_handler", "validator"], "{list}");
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
    let r = s.call("echo", json!({"x": 1}));
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
    assert!(text.contains("step `burn` failed") && text.contains("fail.sh exited with status 3"), "{text}");
    // The program's standard error is the operator's, on the server's log (hostile round 12).
    assert!(text.contains("on the server's log") && !text.contains("the disk is on fire"), "{text}");
    // A tool the allow globs leave out cannot be called.
    let r = s.request("tools/call", json!({"name": "fail", "arguments": {}}));
    assert!(r["error"].is_object(), "{r}");
}

#[cfg(unix)]
#[test]
fn a_cancelled_call_kills_its_program_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    let pid_file = root.join("pid");
    script(&root.join("tools/nap.sh"), &format!("#!/bin/sh\necho $$ > '{}'\nexec sleep 30\n", pid_file.display()));
    std::fs::write(root.join("tools/nap.tool"), r#"{"system_event_endpoint": "exec:./nap.sh"}"#).expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{"description": "Naps, then echoes",
  "instructions": [
    {"execution_id": "nap", "tool_definition_path": "/tools/nap.tool", "retry": {"max_retries": 3}},
    {"execution_id": "after", "tool_definition_path": "/tools/nap.tool", "dependencies": ["nap"]}
  ]}"#,
    )
    .expect("write");
    let mut s = Server::start(root, &[]);
    let started = std::time::Instant::now();
    let id = s.start_request("tools/call", json!({"name": "main", "arguments": {}}));
    let pid = wait_until(Duration::from_secs(20), "the program to start (write its pid)", || {
        std::fs::read_to_string(&pid_file).ok().filter(|p| p.ends_with('\n')).map(|p| p.trim().to_string())
    });
    assert!(alive(&pid), "the program runs");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": id, "reason": "the user changed their mind"}}));
    wait_until(Duration::from_secs(10), "the cancel to kill the program", || (!alive(&pid)).then_some(()));
    // The server answers the next request, and never answers the cancelled one (the
    // protocol says a cancelled request gets no response).
    let list = s.request("tools/list", json!({}));
    assert!(list["result"]["tools"].is_array(), "{list}");
    std::thread::sleep(Duration::from_millis(300));
    let ping = s.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
    assert!(s.others.iter().all(|m| m["id"] != json!(id)), "no response to the cancelled call: {:?}", s.others);
    assert!(started.elapsed().as_secs() < 25, "the 30 s nap did not run out");
    // The step after it never started (its program would have written the pid file again).
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(std::fs::read_to_string(&pid_file).expect("pid").trim(), pid);
}

#[test]
fn progress_notifications_follow_the_steps_of_a_composite() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let args: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("valid.json")).expect("read")).expect("JSON");
    let r = s.request("tools/call", json!({"name": "main", "arguments": args, "_meta": {"progressToken": "p-1"}}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    // Every notification came before the response (`others` holds what was read before it).
    let progress: Vec<&Value> =
        s.others.iter().filter(|m| m["method"] == "notifications/progress").map(|m| &m["params"]).collect();
    let steps = 3; // examples/conditional-branching/main.tool has three steps
    assert_eq!(progress.len(), steps, "one notification per step: {progress:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["progressToken"], "p-1");
        assert_eq!(p["progress"], json!((i + 1) as f64), "progress increases by one per step: {progress:?}");
        assert_eq!(p["total"], json!(steps as f64));
        let message = p["message"].as_str().expect("message");
        assert!(
            message.starts_with("step `") && (message.contains("COMPLETED") || message.contains("SKIPPED")),
            "{message}"
        );
    }
    // Without a progress token, no progress.
    let before = s.others.len();
    s.request("tools/call", json!({"name": "main", "arguments": args}));
    s.request("ping", json!({}));
    assert!(s.others[before..].iter().all(|m| m["method"] != "notifications/progress"));
}

/// `serve --mcp --allow` and `run --allow-tool` build their globs with the same builder:
/// `*` stays inside a folder, `**` crosses folders. Each glob is run through both.
#[test]
fn allow_globs_mean_the_same_for_serve_and_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let root_str = root.to_str().expect("utf-8");
    let echo = r#"{"system_event_endpoint": "builtin:echo"}"#;
    std::fs::create_dir_all(root.join("tools/secret")).expect("mkdir");
    std::fs::write(root.join("tools/a.tool"), echo).expect("write");
    std::fs::write(root.join("tools/secret/admin.tool"), echo).expect("write");
    // Composites outside /tools, one per callee, for `run --allow-tool`.
    for (caller, callee) in [("call_a", "/tools/a.tool"), ("call_admin", "/tools/secret/admin.tool")] {
        std::fs::write(
            root.join(format!("{caller}.tool")),
            format!(r#"{{"instructions": [{{"execution_id": "x", "tool_definition_path": "{callee}", "arguments": {{"v": 1}}}}]}}"#),
        )
        .expect("write");
    }
    let cases: [(&str, bool, bool); 6] = [
        // glob, allows /tools/a.tool, allows /tools/secret/admin.tool
        ("/tools/*.tool", true, false),
        ("/tools/*", true, false),
        ("/tools/**", true, true),
        ("/tools/**/*.tool", true, true),
        ("/tools/secret/*.tool", false, true),
        ("/*/?.tool", true, false),
    ];
    for (glob, a, admin) in cases {
        let mut s = Server::start(root, &[glob]);
        let list = s.request("tools/list", json!({}));
        let names: Vec<String> = list["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        assert_eq!(names.contains(&"a".to_string()), a, "serve --allow {glob}: {names:?}");
        assert_eq!(names.contains(&"admin".to_string()), admin, "serve --allow {glob}: {names:?}");
        drop(s);
        for (caller, allowed) in [("/call_a.tool", a), ("/call_admin.tool", admin)] {
            let out = common::tdsl(&["run", caller, "--root", root_str, "--allow-tool", glob]);
            assert_eq!(out.code == 0, allowed, "run {caller} --allow-tool {glob}: {}", out.stderr);
        }
    }
}

/// Every malformed message gets an answer — with its id when it can be read — and the
/// server goes on serving the next request.
#[test]
fn every_request_gets_an_answer_and_the_server_goes_on() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let check = |s: &mut Server, raw: Vec<u8>, code: i64, id: Value, what: &str| {
        s.send_raw(&raw);
        let m = s.next_message();
        assert_eq!(m["error"]["code"], json!(code), "{what}: {m}");
        assert_eq!(m["id"], id, "{what}: {m}");
        assert!(m["error"]["message"].as_str().is_some_and(|t| !t.is_empty()), "{what}: {m}");
        let ping = s.request("ping", json!({}));
        assert!(ping["result"].is_object(), "after {what}: {ping}");
    };
    // 20 MB of arguments: over the 8 MiB limit, skipped without being held, id recovered.
    let big = format!(
        r#"{{"jsonrpc": "2.0", "id": 901, "method": "tools/call", "params": {{"name": "main", "arguments": {{"user_data": "{}"}}}}}}"#,
        "x".repeat(20_000_000)
    );
    check(&mut s, big.into_bytes(), -32600, json!(901), "a 20 MB request");
    check(&mut s, b"garbage".to_vec(), -32700, Value::Null, "garbage");
    check(&mut s, br#"{"jsonrpc": "2.0", "id": 902, "method": "#.to_vec(), -32700, json!(902), "a cut message");
    let mut bad_utf8 = br#"{"jsonrpc": "2.0", "id": 903, "method": "tools/call", "params": {"name": "main", "arguments": {"user_data": ""#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe\"}}}");
    check(&mut s, bad_utf8, -32700, json!(903), "invalid UTF-8");
    let deep = format!(
        r#"{{"jsonrpc": "2.0", "id": 904, "method": "tools/call", "params": {{"name": "main", "arguments": {{"a": {}{}}}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    check(&mut s, deep.into_bytes(), -32700, json!(904), "deep JSON");
    check(
        &mut s,
        br#"{"jsonrpc": "2.0", "id": 905, "method": "tools/call", "params": {"name": "main", "arguments": [1, 2]}}"#
            .to_vec(),
        -32602,
        json!(905),
        "non-object arguments",
    );
    check(
        &mut s,
        br#"{"jsonrpc": "2.0", "id": 906, "method": "tools/call", "params": {"name": "main", "arguments": "x"}}"#
            .to_vec(),
        -32602,
        json!(906),
        "string arguments",
    );
    check(
        &mut s,
        br#"{"jsonrpc": "2.0", "id": 907, "method": "tools/call"}"#.to_vec(),
        -32602,
        json!(907),
        "no params",
    );
    check(&mut s, b"[1, 2, 3]".to_vec(), -32600, Value::Null, "a batch");
    check(&mut s, br#"{"jsonrpc": "2.0", "id": "s-1"}"#.to_vec(), -32600, json!("s-1"), "neither request nor response");
    // Tools still run.
    let r = s.call("echo", json!({"x": 1}));
    assert_eq!(r["structuredContent"], json!({"x": 1}), "{r}");
}

/// Protocol details (issue 38.9): a request with a key twice in one object is refused with
/// its `id`; a method the protocol defines, with params of the wrong shape, is `-32602`
/// (not "method not found"); a method it does not define stays `-32601`.
#[test]
fn duplicate_keys_and_bad_params_of_known_methods_are_answered_with_their_id() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let mut answer = |raw: &[u8]| {
        s.send_raw(raw);
        let m = s.next_message();
        let ping = s.request("ping", json!({}));
        assert!(ping["result"].is_object(), "after {}: {ping}", String::from_utf8_lossy(raw));
        m
    };
    let m = answer(br#"{"jsonrpc": "2.0", "id": 31, "method": "tools/list", "params": {}, "params": {}}"#);
    assert_eq!((&m["id"], &m["error"]["code"]), (&json!(31), &json!(-32600)), "{m}");
    assert!(m["error"]["message"].as_str().is_some_and(|t| t.contains("`params` appears twice")), "{m}");
    let m = answer(
        br#"{"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1, "x": 2}}}"#,
    );
    assert_eq!((&m["id"], &m["error"]["code"]), (&json!("d"), &json!(-32600)), "{m}");
    let m = answer(br#"{"jsonrpc": "2.0", "id": 32, "method": "logging/setLevel", "params": {"level": "\u0000"}}"#);
    assert_eq!((&m["id"], &m["error"]["code"]), (&json!(32), &json!(-32602)), "{m}");
    assert!(
        m["error"]["message"].as_str().is_some_and(|t| t.contains("logging/setLevel") && t.contains("debug")),
        "{m}"
    );
    let m = answer(br#"{"jsonrpc": "2.0", "id": 33, "method": "resources/read", "params": {"uri": 7}}"#);
    assert_eq!((&m["id"], &m["error"]["code"]), (&json!(33), &json!(-32602)), "{m}");
    let m = answer(br#"{"jsonrpc": "2.0", "id": 34, "method": "no/such/method", "params": {}}"#);
    assert_eq!((&m["id"], &m["error"]["code"]), (&json!(34), &json!(-32601)), "{m}");
    let ok = s.request("logging/setLevel", json!({"level": "info"}));
    assert!(ok["result"].is_object(), "{ok}");
}

/// Ids of every JSON type (issue 38.10, hostile round 4b): a string or an integer that fits
/// an i64 is echoed as sent (`-0` is the integer 0); a fraction or a larger integer, which rmcp
/// cannot take, is `-32600` naming the rule with the id `null` (it was refused as
/// "invalid params: unrecognized JSON-RPC message" with the id echoed as a float that is not
/// the id sent, `1.2345678901234568e+29`); a boolean, a list, an object is `-32600` too.
#[test]
fn ids_of_every_json_type_are_echoed_as_sent_or_refused_as_invalid_requests() {
    let root = example("conditional-branching");
    let mut s = Server::start(&root, &[]);
    let mut answer = |raw: &str| {
        s.send_raw(raw.as_bytes());
        let m = s.next_message();
        let ping = s.request("ping", json!({}));
        assert!(ping["result"].is_object(), "after {raw}: {ping}");
        m
    };
    for id in ["123456789012345678901234567890", "9223372036854775808", "1.5", "1e300", "true", "[1]", r#"{"a": 1}"#] {
        let m = answer(&format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "ping"}}"#));
        assert_eq!((&m["id"], &m["error"]["code"]), (&Value::Null, &json!(-32600)), "id {id}: {m}");
    }
    let m = answer(r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#);
    assert!(m["error"]["message"].as_str().is_some_and(|t| t.contains("must be an integer")), "{m}");
    for (id, echoed) in [
        ("9223372036854775807", json!(i64::MAX)),
        ("-9223372036854775808", json!(i64::MIN)),
        ("-0", json!(0)),
        (r#""""#, json!("")),
    ] {
        let m = answer(&format!(r#"{{"jsonrpc": "2.0", "id": {id}, "method": "ping"}}"#));
        assert_eq!((&m["id"], m["result"].is_object()), (&echoed, true), "id {id}: {m}");
    }
}

/// The threads of process `pid` now (`Threads:` of `/proc/PID/status`).
#[cfg(target_os = "linux")]
fn threads_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Calls in flight are capped over stdio too (issue 38.6): 600 `run_plan`s sent at once,
/// each calling a tool that takes 0.1 s, all succeed — a call past `--max-calls` (16 by
/// default) waits for a slot, none is refused — while the server's threads stay bounded
/// (each call in flight had threads of its own: 2,100 threads for these 600).
#[cfg(target_os = "linux")]
#[test]
fn many_calls_at_once_over_stdio_wait_for_a_slot_with_bounded_threads() {
    const CALLS: u64 = 600;
    let dir = tempfile::tempdir().expect("tempdir");
    script(&dir.path().join("tools/nap.sh"), "#!/bin/sh\ncat > /dev/null\nsleep 0.1\necho '{\"ok\": true}'\n");
    std::fs::write(dir.path().join("tools/nap.tool"), r#"{"system_event_endpoint": "exec:./nap.sh"}"#).expect("write");
    let mut s = Server::start_with(dir.path(), &["--no-history", "--plans"]);
    let pid = s.process.pid();
    let plan = json!({"instructions": [{"execution_id": "n", "tool_definition_path": "nap"}],
        "response_reference_map": {"ok": "REF:n.ok"}});
    let mut batch = String::new();
    for id in 0..CALLS {
        let request = json!({"jsonrpc": "2.0", "id": 10_000 + id, "method": "tools/call",
            "params": {"name": "run_plan", "arguments": {"plan": plan}}});
        batch.push_str(&format!("{request}\n"));
    }
    let mut most = threads_of(pid);
    std::thread::scope(|scope| {
        // Written while the answers are read, so that neither side's pipe fills up.
        let stdin = &mut s.stdin;
        scope.spawn(move || {
            stdin.write_all(batch.as_bytes()).expect("write");
            stdin.flush().expect("flush");
        });
        let mut answered = 0;
        while answered < CALLS {
            let mut line = String::new();
            assert!(s.stdout.read_line(&mut line).expect("read") > 0, "the server closed its output");
            most = most.max(threads_of(pid));
            let m: Value = serde_json::from_str(&line).expect("a JSON-RPC message per line");
            let Some(id) = m["id"].as_u64() else { continue };
            assert_eq!(m["result"]["structuredContent"]["result"], json!({"ok": true}), "call {id}: {m}");
            answered += 1;
        }
    });
    // 16 runs at once, each with its worker threads and its programs' pipe readers, plus
    // the runtime's blocking threads: about 230 were seen; 2,100 before the cap.
    assert!(most <= 400, "the server ran {most} threads for {CALLS} calls at once");
    let ping = s.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
}

/// Over stdio a call past `--max-calls` waits for a slot; a waiting call that is cancelled
/// is dropped without an answer and takes no slot: the next waiting call runs once the
/// running one ends (here: is cancelled).
#[cfg(unix)]
#[test]
fn a_waiting_call_can_be_cancelled_and_the_next_one_takes_the_slot() {
    let (dir, pid_file) = sleeping_root();
    let mut s = Server::start_with(dir.path(), &["--no-history", "--max-calls", "1"]);
    let running = s.start_request("tools/call", json!({"name": "nap", "arguments": {}}));
    sleeping_pids(&pid_file);
    let dropped = s.start_request("tools/call", json!({"name": "echo", "arguments": {"x": 2}}));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": dropped}}));
    let next = s.start_request("tools/call", json!({"name": "echo", "arguments": {"x": 3}}));
    // Requests other than tool calls are served meanwhile; the echo waits.
    let ping = s.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
    assert!(s.others.iter().all(|m| m["id"] != json!(next)), "the waiting call ran: {:?}", s.others);
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": running}}));
    let answer = s.response(next, "tools/call");
    assert_eq!(answer["result"]["structuredContent"], json!({"x": 3}), "{answer}");
    let ping = s.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
    let ids = [json!(running), json!(dropped)];
    assert!(s.others.iter().all(|m| !ids.contains(&m["id"])), "a cancelled call was answered: {:?}", s.others);
}

/// A server with a call in flight whose program (and its child) sleeps 30 s.
#[cfg(unix)]
fn server_with_a_sleeping_call() -> (tempfile::TempDir, Server, Vec<String>) {
    let (dir, pid_file) = sleeping_root();
    let mut s = Server::start(dir.path(), &[]);
    s.start_request("tools/call", json!({"name": "main", "arguments": {}}));
    let pids = sleeping_pids(&pid_file);
    (dir, s, pids)
}

/// Waits (at most 10 s, a watchdog) for the server to exit, successfully; how long it took.
#[cfg(unix)]
fn exit_time(s: &mut Server, since: std::time::Instant) -> Duration {
    let status = s.process.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{status:?}: {}", s.process.output());
    since.elapsed()
}

#[cfg(unix)]
#[test]
fn end_of_input_cancels_calls_in_flight_and_exits_within_3_s() {
    let (_dir, mut s, pids) = server_with_a_sleeping_call();
    let since = std::time::Instant::now();
    // Close the server's input: a fresh pipe end replaces ours, which is dropped.
    let (_reader, writer) = std::io::pipe().expect("pipe");
    drop(std::mem::replace(&mut s.stdin, ChildStdin::from(std::os::fd::OwnedFd::from(writer))));
    let took = exit_time(&mut s, since);
    assert!(took.as_secs_f64() < 3.0, "exit took {took:?}");
    for p in &pids {
        assert!(!alive(p), "process {p} outlived the server");
    }
}

/// A process a served tool leaves in a session of its own (`setsid`) is adopted by the
/// server and ended when it shuts down.
#[cfg(target_os = "linux")]
#[test]
fn a_process_that_left_the_tools_session_is_ended_at_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    let pid_file = root.join("escaped.pid");
    script(
        &root.join("tools/escape.sh"),
        &format!(
            "#!/bin/sh\nsetsid sh -c 'echo $$ > \"{0}\"; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
             while [ ! -s '{0}' ]; do sleep 0.01; done\necho '{{}}'\n",
            pid_file.display()
        ),
    );
    std::fs::write(root.join("tools/escape.tool"), r#"{"system_event_endpoint": "exec:./escape.sh"}"#).expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "go", "tool_definition_path": "/tools/escape.tool"}]}"#,
    )
    .expect("write");
    let mut s = Server::start(root, &[]);
    let result = s.call("main", json!({}));
    assert_eq!(result["isError"], json!(false), "{result}");
    let pid = std::fs::read_to_string(&pid_file).expect("the tool recorded its escaped process").trim().to_string();
    assert!(alive(&pid), "the escaped process runs while the server does");
    let since = std::time::Instant::now();
    let (_reader, writer) = std::io::pipe().expect("pipe");
    drop(std::mem::replace(&mut s.stdin, ChildStdin::from(std::os::fd::OwnedFd::from(writer))));
    let took = exit_time(&mut s, since);
    assert!(took.as_secs_f64() < 3.0, "exit took {took:?}");
    assert!(!alive(&pid), "process {pid} outlived the server");
}

/// The processes a served tool starts in its own group are ended with it — when it exits,
/// and when its timeout kills it — and reaped: a long-running server collects no zombies
/// (it is their subreaper, so they become its children when the tool ends).
#[cfg(target_os = "linux")]
#[test]
fn the_processes_a_tool_left_in_its_group_leave_no_zombies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for (name, after) in [("quick", "echo '{}'"), ("slow", "sleep 300")] {
        let pid_file = root.join(format!("{name}.pids"));
        script(
            &root.join(format!("tools/{name}.sh")),
            &format!(
                "#!/bin/sh
for i in 1 2 3; do sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> '{0}'; done
{after}
",
                pid_file.display()
            ),
        );
        std::fs::write(
            root.join(format!("tools/{name}.tool")),
            format!(r#"{{"system_event_endpoint": "exec:./{name}.sh"}}"#),
        )
        .expect("write");
        std::fs::write(
            root.join(format!("{name}.tool")),
            format!(
                r#"{{"instructions": [{{"execution_id": "go", "tool_definition_path": "/tools/{name}.tool",
                    "timeout_seconds": 1, "retry": {{"max_retries": 0}}}}]}}"#
            ),
        )
        .expect("write");
    }
    let mut s = Server::start(root, &[]);
    for name in ["quick", "slow"] {
        let result = s.call(name, json!({}));
        assert_eq!(result["isError"], json!(name == "slow"), "{name}: {result}");
        let pids = std::fs::read_to_string(root.join(format!("{name}.pids"))).expect("the tool wrote its children");
        let pids: Vec<&str> = pids.lines().collect();
        assert_eq!(pids.len(), 3, "{name}: {pids:?}");
        for pid in pids {
            // Gone from /proc: ended *and* reaped (a zombie still has its entry).
            wait_until(Duration::from_secs(5), &format!("{name}'s child {pid} to be reaped"), || {
                (!Path::new("/proc").join(pid).exists()).then_some(())
            });
        }
    }
    // The server still serves.
    let result = s.call("quick", json!({}));
    assert_eq!(result["isError"], json!(false), "{result}");
}

#[cfg(unix)]
#[test]
fn sigterm_cancels_calls_in_flight_and_exits_within_3_s() {
    let (_dir, mut s, pids) = server_with_a_sleeping_call();
    let since = std::time::Instant::now();
    s.process.sigterm();
    let took = exit_time(&mut s, since);
    assert!(took.as_secs_f64() < 3.0, "exit took {took:?}");
    for p in &pids {
        assert!(!alive(p), "process {p} outlived the server");
    }
}

/// `tools/call` checks the declared constraints before anything runs (seed 003's
/// `add_objective`, served under its file stem).
#[test]
fn a_call_that_breaks_a_constraint_is_a_tool_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    let seed_tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/check/root/tools/add_objective.tool");
    std::fs::copy(seed_tool, tools.join("add_objective.tool")).expect("copy");
    let mut s = Server::start(dir.path(), &[]);
    let list = s.request("tools/list", json!({}));
    let tool = &list["result"]["tools"][0];
    assert_eq!(tool["name"], "add_objective", "{list}");
    assert_eq!(tool["inputSchema"]["properties"]["direction"]["enum"], json!(["higher", "lower", "target"]));
    assert_eq!(tool["outputSchema"]["properties"]["total_means"]["minimum"], json!(0));
    let args =
        json!({"name": "Commute", "measure": "Minutes per day", "direction": "sideways", "is_fundamental": true});
    let r = s.call("add_objective", args);
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(text.contains(r#"argument `direction` must be one of "higher", "lower", "target" (`enum`)"#), "{text}");
}

/// A primitive tool's answer is checked against its declared `responses`, as `tdsl run`
/// checks a step's answer (`E0802`): an answer that does not match is a tool error, never a
/// result the client's output schema would refuse.
#[cfg(unix)]
#[test]
fn a_primitive_answer_that_breaks_its_responses_is_a_tool_error_as_in_a_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    script(&root.join("tools/bad.sh"), "#!/bin/sh\necho '{\"count\": \"many\"}'\n");
    script(&root.join("tools/good.sh"), "#!/bin/sh\necho '{\"count\": 3}'\n");
    let declared = r#""responses": [{"name": "count", "type_name": "integer", "required": true}]"#;
    for name in ["bad", "good"] {
        std::fs::write(
            root.join(format!("tools/{name}.tool")),
            format!(r#"{{{declared}, "system_event_endpoint": "exec:./{name}.sh"}}"#),
        )
        .expect("write");
    }
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "count", "tool_definition_path": "/tools/bad.tool"}]}"#,
    )
    .expect("write");
    let mut s = Server::start(root, &["/tools/*"]);
    let list = s.request("tools/list", json!({}));
    assert_eq!(list["result"]["tools"][0]["outputSchema"]["properties"]["count"]["type"], "integer", "{list}");
    let r = s.call("bad", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("structuredContent").is_none(), "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("E0802") && text.contains("`count`") && text.contains("/tools/bad.tool"), "{text}");
    let r = s.call("good", json!({}));
    assert_eq!((&r["isError"], &r["structuredContent"]), (&json!(false), &json!({"count": 3})), "{r}");
    // `tdsl run` refuses the same answer with the same code and reason.
    let run = common::tdsl(&[
        "run",
        root.join("main.tool").to_str().expect("utf-8"),
        "--root",
        root.to_str().expect("utf-8"),
        "--no-history",
    ]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    let reason = text.trim_start_matches("FAILED: ").trim_end_matches(" [E0802]");
    assert!(run.stderr.contains("E0802") && run.stderr.contains(reason), "{reason}\n{}", run.stderr);
}

/// A root for the served calls' bounds: `echo` (the `builtin:echo` primitive), `nest` (a
/// composite answering its argument nested four deep), `grow` (a composite holding a list of
/// `n` objects) and, on unix, `nap` (a composite whose one step sleeps 30 s).
fn bounded_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).expect("mkdir");
    let write = |name: &str, text: &str| std::fs::write(tools.join(name), text).expect("write");
    write("echo.tool", r#"{"system_event_endpoint": "builtin:echo"}"#);
    let one_step = |arg: &str, transform: &str| {
        format!(
            r#"{{"arguments": [{{"name": "{arg}", "type_name": "integer", "required": true}}],
                "instructions": [{{"execution_id": "g", "transform_responses": {{"transforms": {{"x": "{transform}"}}}}}}],
                "response_reference_map": {{"v": "REF:g.x"}}}}"#
        )
    };
    write("nest.tool", &one_step("v", "[[[[REF:arguments.v, REF:arguments.v]]]]"));
    write("grow.tool", &one_step("n", r#"map(range(0, REF:arguments.n), '{\"k\": item}')"#));
    #[cfg(unix)]
    {
        script(&tools.join("sleep.sh"), "#!/bin/sh\nexec sleep 30\n");
        write("sleep.tool", r#"{"system_event_endpoint": "exec:./sleep.sh"}"#);
        write(
            "nap.tool",
            r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "/tools/sleep.tool"}],
                "response_reference_map": {"v": "REF:s.response"}}"#,
        );
    }
    dir
}

/// A served tool's text block is the result's compact JSON (no indentation: a nested result
/// is not many times its size), and `--max-result-bytes` bounds that text for every served
/// tool, a primitive's answer too (`E0817`).
#[test]
fn a_served_answer_is_compact_json_within_the_result_limit() {
    let root = bounded_root();
    let mut s = Server::start_with(root.path(), &["--allow", "/tools/*", "--max-result-bytes", "1024"]);
    let r = s.call("nest", json!({"v": 7}));
    assert_eq!(r["content"][0]["text"], r#"{"v":[[[[7,7]]]]}"#, "{r}");
    assert_eq!(r["structuredContent"], json!({"v": [[[[7, 7]]]]}), "{r}");
    let r = s.call("echo", json!({"x": "a".repeat(900)}));
    assert_eq!(r["isError"], false, "{r}");
    let r = s.call("echo", json!({"x": "a".repeat(1100)}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("output limit of 1024 bytes") && text.ends_with("[E0817]"), "{text}");
}

/// A served composite runs under the plans' per-run memory budget (`--max-run-memory`, without
/// `--plans`): past it the call fails with `E0406`; a smaller call still runs.
#[test]
fn a_served_composite_runs_under_the_run_memory_budget() {
    let root = bounded_root();
    let mut s = Server::start_with(root.path(), &["--allow", "/tools/*", "--max-run-memory", "65536"]);
    let r = s.call("grow", json!({"n": 3}));
    assert_eq!(r["structuredContent"], json!({"v": [{"k": 0}, {"k": 1}, {"k": 2}]}), "{r}");
    let r = s.call("grow", json!({"n": 100_000}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("E0406"), "{text}");
}

/// All the runs share one pool (`--max-memory-in-flight`): a pool smaller than a call's
/// values fails it with `E0406` though its own budget would hold them.
#[test]
fn a_served_composite_takes_its_memory_from_the_shared_pool() {
    let root = bounded_root();
    let mut s = Server::start_with(root.path(), &["--allow", "/tools/*", "--max-memory-in-flight", "65536"]);
    let r = s.call("grow", json!({"n": 100_000}));
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(r["isError"] == json!(true) && text.contains("E0406"), "{r}");
}

/// A served composite's call stops at `--deadline` (also spelled `--plan-deadline`) as a
/// plan's run does: `TIMEOUT`, its tool's process ended.
#[cfg(unix)]
#[test]
fn a_served_composite_stops_at_the_deadline() {
    let root = bounded_root();
    for flag in ["--deadline", "--plan-deadline"] {
        let mut s = Server::start_with(root.path(), &["--allow", "/tools/*", flag, "0.2"]);
        let r = s.call("nap", json!({}));
        let text = r["content"][0]["text"].as_str().expect("text");
        assert!(r["isError"] == json!(true) && text.starts_with("TIMEOUT"), "{r}");
    }
}
