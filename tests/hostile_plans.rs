//! The hostile round of plans (issue 29, SPEC §13): `tdsl serve --mcp --plans` and
//! `tdsl check --plan` driven on the real binary as a hostile user or a confused model would.
//! Every bad request gets a clear answer (a stable code and a message), nothing runs that may
//! not, and the server answers a good request afterwards.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command};
use std::time::{Duration, Instant};

use common::process::{alive, script, Process};
use serde_json::{json, Value};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The tools of the plans corpus: `search`, `fetch_page`, `summarize`, `send_email` served,
/// `/tools/admin/delete_all.tool` outside `--allow`.
fn plans_root() -> PathBuf {
    repo().join("tests/data/plans/root")
}

/// A running `tdsl serve --mcp --plans`, initialized; killed when dropped.
struct Server {
    process: Process,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(root: &Path, extra: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["serve", "--mcp", "--plans", "--no-history", "--root"]).arg(root).args(extra);
        let (process, stdin, stdout) = Process::spawn_piped("tdsl serve --mcp --plans", &mut cmd);
        let mut s = Server { process, stdin, stdout: BufReader::new(stdout), next_id: 1 };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "tdsl", "{init}");
        s.send_raw(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string().as_bytes());
        s
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send_raw(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().as_bytes());
        self.response(id)
    }

    /// Sends `tools/call` of `tool` with `arguments` written as raw JSON text.
    fn call_raw(&mut self, tool: &str, arguments: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        );
        self.send_raw(msg.as_bytes());
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed its output; its standard error:\n{}", self.process.output());
            let v: Value = serde_json::from_str(&line).expect("a JSON-RPC message per line");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        r.get("result").cloned().unwrap_or_else(|| panic!("a result: {r}"))
    }

    /// The server answers a good plan afterwards.
    fn still_serves(&mut self) {
        let good = json!({"instructions": [{"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"}}],
            "response_reference_map": {"total": "REF:s.total"}});
        let r = self.call("run_plan", json!({"plan": good}));
        assert_eq!(r["structuredContent"]["status"], "SUCCESS", "{r}");
        assert_eq!(r["structuredContent"]["result"], json!({"total": 3}), "{r}");
    }

    /// The most memory the server has held (VmHWM), in KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.pid())).expect("/proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }
}

fn codes(result: &Value) -> Vec<String> {
    result["structuredContent"]["diagnostics"]
        .as_array()
        .map(|d| d.iter().map(|d| d["code"].as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default()
}

/// A plan sent as a JSON value of a few MiB, nested 120 deep (under the transport's depth
/// limit), is refused by its size as sent (`E1301`) — it is not pretty-printed first, which
/// multiplied it to most of a GiB (2 spaces a level on every line) before the size check.
#[test]
fn a_large_deep_json_plan_is_refused_by_its_size_without_growing() {
    // The transport's count of a message's values (`--max-request-values`, 100,000 by
    // default) would refuse these 1,500,000 before the plan's size is looked at: raised here,
    // so that the size check is what is tested.
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool", "--max-request-values", "10000000"]);
    let inner = vec!["1"; 1_500_000].join(",");
    let plan = format!(r#"{{"instructions": {}[{inner}]{}}}"#, "[".repeat(120), "]".repeat(120));
    // The transport's own share first: the same value sent with a `ping` (JSON-RPC parses
    // it whatever the method; that memory is the transport's, docs/plans.md).
    let id = s.next_id;
    s.next_id += 1;
    s.send_raw(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"x":{plan}}}}}"#).as_bytes());
    let _ = s.response(id);
    // Then the same bytes as a flat plan (one level: its pretty text is no larger than
    // itself), so that what the call itself costs — the tool call's copy of its arguments, on
    // threads whose memory the allocator keeps apart from the transport's — is in the peak
    // before the deep one is sent. What the deep plan adds beyond that is its nesting's.
    let flat = format!(r#"{{"instructions": [{inner}{}]}}"#, ",1".repeat(120));
    assert_eq!(flat.len(), plan.len());
    let r = s.call_raw("check_plan", &format!(r#"{{"plan": {flat}}}"#));
    assert_eq!(codes(&r["result"]), ["E1301"], "{r}");
    let before = s.peak_kib();
    let started = Instant::now();
    let r = s.call_raw("check_plan", &format!(r#"{{"plan": {plan}}}"#));
    let r = &r["result"];
    assert_eq!(codes(r), ["E1301"], "{r}");
    assert_eq!(r["isError"], true);
    let message = r["structuredContent"]["diagnostics"][0]["message"].as_str().expect("message");
    let stated: usize =
        message.split_whitespace().nth(3).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("a size in {message}"));
    assert!(
        stated <= plan.len(),
        "the size stated ({stated}) is the plan's as sent ({}), not a pretty text's",
        plan.len()
    );
    // The bug this guards against pretty-printed the plan first: 1.5 million lines indented
    // 2 spaces a level, about 370 MB, on top of the call's own copies. The call itself
    // (the arguments parsed into values: about 100 MB for these 1.5 million numbers) may
    // land on threads whose freed memory mimalloc keeps apart from the flat call's, which
    // under a loaded test run showed as 107 MB here: the bound sits between the two.
    let grown = s.peak_kib().saturating_sub(before);
    assert!(
        grown < 250 * 1024,
        "the server grew by {grown} KiB more for a plan of {} bytes nested 120 deep than for a flat one",
        plan.len()
    );
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    // run_plan too: nothing runs.
    let r = s.call_raw("run_plan", &format!(r#"{{"plan": {plan}}}"#));
    assert_eq!(codes(&r["result"]), ["E1301"], "{r}");
    s.still_serves();
}

/// A plan of thousands of mistakes gets the first `MAX_PLAN_DIAGNOSTICS` of them (errors
/// first) and the count of the rest — not an answer of megabytes rendered in quadratic time.
#[test]
fn a_plan_of_thousands_of_mistakes_gets_a_bounded_answer() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let mut step = json!({"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"}});
    for i in 0..5000 {
        step[format!("k{i}")] = json!(1);
    }
    let started = Instant::now();
    let r = s.call("check_plan", json!({"plan": {"instructions": [step]}}));
    let size = r.to_string().len();
    let sc = &r["structuredContent"];
    assert_eq!(sc["ok"], false, "{sc}");
    assert_eq!(sc["errors"], 5000, "every error is counted");
    assert_eq!(sc["diagnostics"].as_array().map(Vec::len), Some(50));
    assert_eq!(sc["omitted"], 4950);
    assert!(
        r["content"][0]["text"].as_str().unwrap_or_default().contains("4950 more diagnostics"),
        "{}",
        &r["content"][0]
    );
    assert!(size < 1024 * 1024, "the answer is {size} bytes");
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());

    // Thousands of mistakes on one long line: each rendering is cut.
    let expr = (0..3000).map(|i| format!("a{i}")).collect::<Vec<_>>().join("+");
    let plan = json!({"instructions": [{"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"},
        "transform_responses": {"transforms": {"t": expr}}}]});
    let r = s.call("check_plan", json!({"plan": plan}));
    let size = r.to_string().len();
    assert_eq!(r["structuredContent"]["ok"], false);
    assert!(size < 2 * 1024 * 1024, "the answer is {size} bytes");
    // A warning never hides an error: errors are kept first.
    let mut args = serde_json::Map::new();
    for i in 0..200 {
        args.insert(format!("w{i}"), json!(format!("{{{{nothing{i}}}}}")));
    }
    let plan = json!({"instructions": [{"execution_id": "s", "tool_definition_path": "send_email",
        "arguments": {"to": "a", "subject": "b", "body": Value::Object(args.clone())}},
        {"execution_id": "z", "tool_definition_path": "no_such_tool"}]});
    let r = s.call("run_plan", json!({"plan": plan}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(codes(&r).contains(&"E1306".to_string()), "{r}");
    s.still_serves();
}

/// Control characters (a terminal's escapes) and bidirectional controls in what a plan
/// writes are escaped wherever a diagnostic echoes them: message, help, rendered text, and
/// `tdsl check --plan`'s terminal output.
#[test]
fn control_characters_are_escaped_in_diagnostics() {
    let evil = "\u{1b}[2J\u{1b}]0;pwned\u{7}\r\u{8}\u{202e}x";
    let plan = json!({"instructions": [
        {"execution_id": evil, "tool_definition_path": format!("search{evil}"), "arguments": {"query": "x"}},
        {"execution_id": "b", "tool_definition_path": "search", "arguments": {"query": format!("REF:{evil}.total")}}]});
    let hidden = |t: &str| t.chars().any(|c| (c.is_control() && c != '\n') || c == '\u{202e}');
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let r = s.call("check_plan", json!({"plan": plan}));
    assert_eq!(r["isError"], true);
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(!hidden(text), "raw control characters in {text:?}");
    let diags = r["structuredContent"]["diagnostics"].as_array().expect("diagnostics");
    assert!(diags.len() >= 2, "{r}");
    for d in diags {
        for key in ["message", "help", "rendered"] {
            let t = d[key].as_str().unwrap_or_default();
            assert!(!hidden(t), "raw control characters in {key} {t:?}");
        }
    }
    assert!(text.contains(r"\u001b[2J"), "the escape is shown: {text}");
    // A plan sent as text with raw bidi controls inside its strings renders them escaped too.
    let raw =
        format!(r#"{{"instructions": [{{"execution_id": "a{}b", "tool_definition_path": "search"}}]}}"#, '\u{202e}');
    let r = s.call("check_plan", json!({"plan": raw}));
    assert!(!hidden(r["content"][0]["text"].as_str().unwrap_or_default()), "{r}");
    s.still_serves();
    drop(s);

    // The command line prints no raw escape to the terminal either.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("evil.json");
    std::fs::write(&file, plan.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["check", "--plan"])
        .arg(&file)
        .arg("--root")
        .arg(plans_root())
        .output()
        .expect("tdsl runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("E1306"), "{stderr}");
    assert!(!hidden(&stderr), "raw control characters on standard error: {stderr:?}");
}

/// What a plan may not do is refused before anything runs, and the server goes on: a plan
/// that is no object, nesting 10,000 deep (in the plan, its arguments, an expression),
/// primitive endpoints, paths out of the root or outside `--allow`, URL-encoded or
/// confusable names, unknown upstream servers, duplicate keys that would hide a step,
/// arguments that are no object, a fan-out wider than the limit.
#[test]
fn what_a_plan_may_not_do_is_refused_and_the_server_goes_on() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    for (plan, code) in [
        (json!([{"execution_id": "a"}]), "E1303"),
        (json!(null), "E1303"),
        (json!(3), "E1303"),
        (json!("[1, 2]"), "E1303"),
        (json!("not json"), "E0501"),
        (json!(format!("{{\"instructions\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000))), "E1302"),
        (json!({"system_event_endpoint": "exec:rm -rf /", "instructions": []}), "E1304"),
    ] {
        let r = s.call("check_plan", json!({"plan": plan}));
        assert_eq!(codes(&r), [code], "{plan}: {r}");
        assert_eq!(r["isError"], true);
    }
    let step = |path: &str| json!({"instructions": [{"execution_id": "s", "tool_definition_path": path, "arguments": {"query": "x"}}]});
    for (path, code) in [
        ("../tools/search.tool", "E1308"),
        ("/tools/../tools/admin/delete_all.tool", "E1308"),
        ("file:///etc/passwd", "E1308"),
        ("http://127.0.0.1:1/x", "E1308"),
        ("exec:/bin/sh", "E1306"),
        ("builtin:echo", "E1306"),
        ("mcp:tdsl serve --mcp", "E1306"),
        ("/etc/passwd", "E1306"),
        ("/tools/admin/delete_all.tool", "E1307"),
        ("tools/admin/delete_all", "E1307"),
        ("./tools/admin/./delete_all.tool", "E1307"),
        (" /tools/admin/delete_all.tool ", "E1307"),
        ("delete_all", "E1306"),
        ("%2e%2e/tools/search.tool", "E1306"),
        ("/tools/admin%2Fdelete_all.tool", "E1306"),
        ("\u{455}earch", "E1306"),
        ("nosuch/search", "E1306"),
    ] {
        let r = s.call("run_plan", json!({"plan": step(path)}));
        assert_eq!(codes(&r), [code], "{path}: {r}");
        assert_eq!(r["isError"], true);
        assert!(r["structuredContent"].get("status").is_none(), "nothing ran: {r}");
    }
    // A duplicate key cannot smuggle a second tool past the check.
    let r = s.call(
        "run_plan",
        json!({"plan": r#"{"instructions": [{"execution_id": "d", "tool_definition_path": "search", "tool_definition_path": "/tools/admin/delete_all.tool", "arguments": {"query": "x"}}]}"#}),
    );
    assert_eq!(codes(&r), ["E0502"], "{r}");
    // An endpoint inside a step or its arguments is no endpoint.
    let r = s.call(
        "run_plan",
        json!({"plan": {"instructions": [{"execution_id": "s", "tool_definition_path": "search",
        "arguments": {"query": "x"}, "system_event_endpoint": "exec:ls"}]}}),
    );
    assert_eq!(codes(&r), ["E0505"], "{r}");
    // Deep JSON in the run's arguments or in the message: a JSON-RPC parse error.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let r = s.call_raw("run_plan", &format!(r#"{{"plan": {}, "arguments": {{"a": {deep}}}}}"#, step("search")));
    assert!(r.get("error").is_some() || r["result"]["isError"] == true, "{r}");
    // An expression nested 10,000 deep.
    let r = s.call("check_plan", json!({"plan": {"instructions": [{"execution_id": "s", "tool_definition_path": "search",
        "arguments": {"query": "x"}, "transform_responses": {"transforms": {"t": format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000))}}}]}}));
    assert_eq!(codes(&r), ["E0004"], "{r}");
    // Arguments that are no object.
    for bad in [json!([1]), json!("x"), json!(3), json!("{\"x\": 1}")] {
        let r = s.call("run_plan", json!({"plan": step("search"), "arguments": bad}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["content"][0]["text"].as_str().unwrap_or_default().contains("must be an object"), "{r}");
    }
    // A fan-out over 1,001: refused (a literal list) or failed before a child runs (a REF).
    let wide: Vec<String> = (0..1001).map(|i| format!("q{i}")).collect();
    let r = s.call(
        "run_plan",
        json!({"plan": {"instructions": [{"execution_id": "f", "tool_definition_path": "search",
        "parallel_execution": {"iterate_over": wide, "child_argument_name": "query"}}]}}),
    );
    assert_eq!(codes(&r), ["E1309"], "{r}");
    let many: Vec<String> = (0..5000).map(|i| format!("t{i}")).collect();
    let r = s.call(
        "run_plan",
        json!({"plan": {"arguments": [{"name": "many", "type_name": "list", "required": true}],
        "instructions": [{"execution_id": "f", "tool_definition_path": "summarize",
         "parallel_execution": {"iterate_over": "REF:arguments.many", "child_argument_name": "text"}}]},
        "arguments": {"many": many}}),
    );
    assert_eq!(r["structuredContent"]["status"], "FAILED", "{r}");
    assert!(r["structuredContent"]["failure_summary"].as_str().unwrap_or_default().contains("E0809"), "{r}");
    s.still_serves();
}

/// A plan whose deadline passes ends `TIMEOUT` and its program is gone; so is a cancelled
/// run's; twenty plans at once all get their answers.
#[test]
fn deadlines_cancels_and_concurrent_plans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let pids = root.join("pids");
    script(&root.join("tools/nap.sh"), &format!("#!/bin/sh\necho $$ >> '{}'\nexec sleep 30\n", pids.display()));
    std::fs::write(
        root.join("tools/nap.tool"),
        r#"{"arguments": [{"name": "x", "type_name": "any"}], "system_event_endpoint": "exec:./nap.sh"}"#,
    )
    .expect("write");
    std::fs::write(
        root.join("tools/echo.tool"),
        r#"{"arguments": [{"name": "x", "type_name": "any"}], "system_event_endpoint": "builtin:echo"}"#,
    )
    .expect("write");
    let mut s = Server::start(root, &["--plan-deadline", "2"]);
    let nap = json!({"instructions": [{"execution_id": "n", "tool_definition_path": "nap"}]});
    let r = s.call("run_plan", json!({"plan": nap}));
    assert_eq!(r["structuredContent"]["status"], "TIMEOUT", "{r}");
    assert!(r["structuredContent"]["failure_summary"].as_str().unwrap_or_default().contains("E0805"), "{r}");
    let first: Vec<String> =
        std::fs::read_to_string(&pids).expect("pids").split_whitespace().map(str::to_string).collect();
    common::process::wait_until(Duration::from_secs(10), "the program to end", || {
        first.iter().all(|p| !alive(p)).then_some(())
    });

    // Cancelled mid-run: the program ends, the server answers the next call.
    let id = s.next_id;
    s.next_id += 1;
    s.send_raw(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "run_plan", "arguments": {"plan": nap}}}).to_string().as_bytes());
    common::process::wait_until(Duration::from_secs(10), "the program to start", || {
        (std::fs::read_to_string(&pids).ok()?.split_whitespace().count() > first.len()).then_some(())
    });
    s.send_raw(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
            .to_string()
            .as_bytes(),
    );
    let all: Vec<String> =
        std::fs::read_to_string(&pids).expect("pids").split_whitespace().map(str::to_string).collect();
    common::process::wait_until(Duration::from_secs(10), "the cancelled program to end", || {
        all.iter().all(|p| !alive(p)).then_some(())
    });
    let r = s.call("run_plan", json!({"plan": {"instructions": [{"execution_id": "e", "tool_definition_path": "echo", "arguments": {"x": 1}}]}}));
    assert_eq!(r["structuredContent"]["status"], "SUCCESS", "{r}");

    // Twenty at once, half of them timing out.
    let ids: Vec<u64> = (0..20)
        .map(|i| {
            let plan = if i % 2 == 0 {
                nap.clone()
            } else {
                json!({"instructions": [{"execution_id": "e", "tool_definition_path": "echo", "arguments": {"x": i}}],
                    "response_reference_map": {"v": "REF:e.x"}})
            };
            let id = s.next_id;
            s.next_id += 1;
            s.send_raw(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "run_plan", "arguments": {"plan": plan}}}).to_string().as_bytes());
            id
        })
        .collect();
    let mut answers = std::collections::HashMap::new();
    while answers.len() < ids.len() {
        let mut line = String::new();
        assert!(s.stdout.read_line(&mut line).expect("read") > 0, "{}", s.process.output());
        let v: Value = serde_json::from_str(&line).expect("JSON");
        if let Some(id) = v["id"].as_u64().filter(|id| ids.contains(id)) {
            answers.insert(id, v);
        }
    }
    for (i, id) in ids.iter().enumerate() {
        let status = &answers[id]["result"]["structuredContent"]["status"];
        assert_eq!(status, if i % 2 == 0 { "TIMEOUT" } else { "SUCCESS" }, "{}", answers[id]);
    }
}

/// The prompt with a task of 1 MB, or with text that imitates the prompt's own parts, is
/// answered with the task quoted; the guide is unchanged.
#[test]
fn the_prompt_takes_any_task() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let task = "x".repeat(1024 * 1024);
    let r = s.request("prompts/get", json!({"name": "plan", "arguments": {"task": task}}));
    assert!(
        r["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_default().contains(&task[..1000]),
        "a prompt"
    );
    let r = s.request("prompts/get", json!({"name": "plan", "arguments": {"task": "   "}}));
    assert!(r.get("error").is_some(), "{r}");
    let r = s.request("prompts/get", json!({"name": "plan"}));
    assert!(r.get("error").is_some(), "{r}");
    let r = s.request("resources/read", json!({"uri": "tdsl://guide/../../etc/passwd"}));
    assert!(r.get("error").is_some(), "{r}");
    s.still_serves();
}

/// A placeholder that names one of the plan's own arguments by its bare name (`{{url}}`,
/// `$url`), and a REF tdsl does not read as one (`ref:page.text`, `" REF:page.text"`), are
/// errors: the plan would otherwise run with the text. Repaired as the help says, it runs.
#[test]
fn placeholders_naming_arguments_and_loose_refs_never_run_as_text() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let plan = |url: &str, text: &str| {
        json!({"arguments": [{"name": "url", "type_name": "string", "required": true}],
            "instructions": [
                {"execution_id": "page", "tool_definition_path": "fetch_page", "arguments": {"url": url}},
                {"execution_id": "sum", "tool_definition_path": "summarize", "arguments": {"text": text}}],
            "response_reference_map": {"summary": "REF:sum.summary"}})
    };
    let args = json!({"url": "https://example.org/a"});
    for (url, text, pointer, help) in [
        ("{{url}}", "REF:page.text", "/instructions/0/arguments/url", "\"REF:arguments.url\""),
        ("$url", "REF:page.text", "/instructions/0/arguments/url", "\"REF:arguments.url\""),
        ("REF:arguments.url", "ref:page.text", "/instructions/1/arguments/text", "\"REF:page.text\""),
        ("REF:arguments.url", "Ref:page.text", "/instructions/1/arguments/text", "\"REF:page.text\""),
        ("REF:arguments.url", " REF:page.text", "/instructions/1/arguments/text", "\"REF:page.text\""),
    ] {
        let r = s.call("run_plan", json!({"plan": plan(url, text), "arguments": args}));
        assert_eq!(r["isError"], true, "{url} {text}: {r}");
        let d = &r["structuredContent"]["diagnostics"][0];
        assert_eq!((d["code"].as_str(), d["pointer"].as_str()), (Some("E1311"), Some(pointer)), "{url} {text}: {r}");
        assert!(d["help"].as_str().unwrap_or_default().contains(help), "{url} {text}: {d}");
        assert!(r["structuredContent"].get("status").is_none(), "nothing ran: {r}");
    }
    // Text that names nothing of the plan's stays a warning and runs.
    let r = s.call("run_plan", json!({"plan": plan("REF:arguments.url", "{{nothing}}"), "arguments": args}));
    assert_eq!(r["structuredContent"]["status"], "SUCCESS", "{r}");
    let r = s.call("run_plan", json!({"plan": plan("REF:arguments.url", "REF:page.text"), "arguments": args}));
    assert_eq!(r["structuredContent"]["result"]["summary"], "tdsl plans are checked before", "{r}");
    s.still_serves();
}

/// A plan with no steps is told to write `instructions` — not, as a `.tool` file is, to add
/// `system_event_endpoint`, which a plan may not have.
#[test]
fn an_empty_plan_is_not_sent_to_system_event_endpoint() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    for plan in [json!({}), json!({"instructions": []})] {
        let r = s.call("check_plan", json!({"plan": plan}));
        let d = &r["structuredContent"]["diagnostics"][0];
        let help = d["help"].as_str().unwrap_or_default();
        assert!(help.contains("instructions"), "{d}");
        assert!(help.contains("cannot have `system_event_endpoint`"), "{d}");
        assert!(!help.contains("add `system_event_endpoint`"), "{d}");
    }
    s.still_serves();
}

/// A raw MCP server over stdio (no SDK) that misbehaves: tools named with a terminal's
/// escapes, a path, 10,000 characters; a description that clears the screen; and calls that
/// answer garbage before a result that is no tool result.
const HOSTILE_UPSTREAM: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
tools = [
    {"name": "ok", "description": "\u001b[2J\u001b]0;pwned\u0007clears the screen", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {"name": "odd", "inputSchema": {"type": "object", "properties": {"x\u001b[31m": {"type": "string"}}}},
    {"name": "\u001b[2Jevil", "inputSchema": {"type": "object"}},
    {"name": "../../etc", "inputSchema": {"type": "object"}},
    {"name": "x" * 10000, "inputSchema": {"type": "object"}},
]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": tools}})
    elif m["method"] == "tools/call":
        sys.stdout.write("this is not JSON\n{{{\n"); sys.stdout.flush()
        send({"jsonrpc": "2.0", "id": m["id"], "result": 42})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

/// An upstream server's tools whose names a plan could not write (escapes, `..`, 10,000
/// characters) are left out of `tdsl://tools` and cannot be called; its descriptions are
/// listed with their escapes shown, not obeyed; a call it answers with garbage fails its
/// step with a clear error, and the server goes on.
#[test]
fn a_hostile_upstream_server_is_contained() {
    let dir = tempfile::tempdir().expect("tempdir");
    let up = dir.path().join("up.py");
    std::fs::write(&up, HOSTILE_UPSTREAM).expect("write");
    let python = common::python::python();
    let spec = format!("up='{}' '{}'", python.display(), up.display());
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool", "--upstream", &spec]);
    let r = s.request("resources/read", json!({"uri": "tdsl://tools"}));
    let listing = r["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    assert!(listing.contains("`up/ok("), "{listing}");
    assert!(!listing.chars().any(|c| c.is_control() && c != '\n'), "raw control characters: {listing:?}");
    assert!(listing.contains(r"\u001b[2J"), "{listing}");
    assert!(
        !listing.contains("../../etc") && !listing.contains("evil") && !listing.contains(&"x".repeat(200)),
        "{listing}"
    );
    for name in ["up/../../etc", "up/\u{1b}[2Jevil"] {
        let r = s
            .call("run_plan", json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": name}]}}));
        assert_eq!(codes(&r), ["E1306"], "{name}: {r}");
    }
    // A property name that is no identifier (`x` with an escape) is a property all the
    // same (docs/plans.md, "Fields that are not identifiers"): the tool is callable, and a
    // diagnostic naming the property shows the escape escaped, never raw.
    let r = s.call(
        "check_plan",
        json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": "up/odd"}]}}),
    );
    assert_eq!(r["structuredContent"]["errors"], 0, "{r}");
    let r = s.call(
        "check_plan",
        json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": "up/odd", "arguments": {"y": "v"}}]}}),
    );
    assert!(r["structuredContent"]["errors"].as_u64().is_some_and(|n| n >= 1), "{r}");
    let said: Vec<String> = r["structuredContent"]["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| [d["message"].as_str(), d["help"].as_str(), d["rendered"].as_str()])
        .flatten()
        .map(str::to_string)
        .collect();
    assert!(said.iter().all(|t| !t.contains('\u{1b}')), "{said:?}");
    assert!(said.iter().any(|t| t.contains(r"\u001b[31m")), "{said:?}");
    let r = s.call(
        "run_plan",
        json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": "up/ok", "retry": {"max_retries": 0}, "timeout_seconds": 20}]}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["status"], "FAILED", "{r}");
    assert!(r["structuredContent"]["failure_summary"].as_str().unwrap_or_default().contains("up/ok"), "{r}");
    s.still_serves();
}

/// A REF of 50,000 segments — as a value and as an expression's atom — is malformed
/// (`E0006`, at most 128 segments), answered at once: its analysis was quadratic (16,000
/// segments took two minutes and 4 GB). A REF of 100 segments still parses.
#[test]
fn a_ref_of_fifty_thousand_segments_is_refused_at_once() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let deep = format!("REF:s{}", ".a".repeat(50_000));
    let started = Instant::now();
    for (value, transform) in [(deep.as_str(), "1"), ("x", deep.as_str())] {
        let plan = json!({"instructions": [
            {"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"}},
            {"execution_id": "t", "tool_definition_path": "search", "arguments": {"query": value},
             "transform_responses": {"transforms": {"q": transform}}}]});
        let r = s.call("run_plan", json!({"plan": plan}));
        assert_eq!(r["isError"], true, "{r}");
        let d = &r["structuredContent"]["diagnostics"][0];
        assert_eq!(d["code"], "E0006", "{d}");
        assert!(d["message"].as_str().unwrap_or_default().contains("50000 segments, more than 128"), "{d}");
    }
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    let plan = json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"},
         "transform_responses": {"transforms": {"q": format!("default(value=REF:response.results.0{}, fallback=1)", ".a".repeat(98))}}}],
        "response_reference_map": {"q": "REF:s.q"}});
    let r = s.call("run_plan", json!({"plan": plan}));
    assert_eq!(r["structuredContent"]["status"], "SUCCESS", "{r}");
    s.still_serves();
}

/// An upstream whose `hang` stops reading its input for good (a hung server, not a slow
/// call), whose `huge` answers with a 17 MiB line, and whose `ok` answers its process id.
const STUCK_UPSTREAM: &str = r#"
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("ok", "hang", "huge")]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "stuck", "version": "1"}}})
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": tools}})
    elif m["method"] == "tools/call" and m["params"]["name"] == "hang":
        time.sleep(3600)
    elif m["method"] == "tools/call" and m["params"]["name"] == "huge":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "x" * (17 * 1024 * 1024)}]}})
    elif m["method"] == "tools/call":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": json.dumps({"pid": os.getpid()})}]}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

/// An upstream's answer over the 16 MiB cap fails its step at once, saying so (it waited for
/// the step's timeout: rmcp dropped the line); a hung upstream is pinged after its call
/// timed out, and without an answer it is stopped and started anew, so the next plan's call
/// succeeds (every later call timed out until the server died).
#[test]
fn an_oversized_answer_fails_at_once_and_a_hung_upstream_is_restarted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let up = dir.path().join("stuck.py");
    std::fs::write(&up, STUCK_UPSTREAM).expect("write");
    let python = common::python::python();
    let spec = format!("up='{}' '{}'", python.display(), up.display());
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool", "--upstream", &spec]);
    let step = |tool: &str, timeout: u32| {
        json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": tool,
            "retry": {"max_retries": 0}, "timeout_seconds": timeout}],
            "response_reference_map": {"pid": "REF:u.pid"}}})
    };
    let pid = |r: &Value| r["structuredContent"]["result"]["pid"].as_i64().unwrap_or_else(|| panic!("a pid: {r}"));
    let first = pid(&s.call("run_plan", step("up/ok", 20)));

    let started = Instant::now();
    let r = s.call("run_plan", step("up/huge", 120));
    assert_eq!(r["structuredContent"]["status"], "FAILED", "{}", &r.to_string()[..2000.min(r.to_string().len())]);
    let summary = r["structuredContent"]["failure_summary"].as_str().unwrap_or_default().to_string();
    assert!(summary.contains("longer than 16 MiB"), "{summary}");
    assert!(started.elapsed() < Duration::from_secs(60), "the oversized answer took {:?}", started.elapsed());
    // The server was stopped; the next call starts another.
    let second = pid(&s.call("run_plan", step("up/ok", 20)));
    assert_ne!(first, second);
    assert!(!alive(&first.to_string()), "the server that sent the huge answer still runs");

    let r = s.call("run_plan", step("up/hang", 1));
    assert_eq!(r["structuredContent"]["status"], "TIMEOUT", "{r}");
    let r = s.call("run_plan", step("up/ok", 20));
    assert_eq!(r["structuredContent"]["status"], "SUCCESS", "the hung server was used again: {r}");
    assert_ne!(pid(&r), second, "{r}");
    let started = Instant::now();
    while alive(&second.to_string()) {
        assert!(started.elapsed() < Duration::from_secs(30), "the hung server was never stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    s.still_serves();
}

/// `run_plan`'s `arguments` that are not an object are a tool error naming what was sent;
/// nothing runs, and the server goes on.
#[test]
fn run_plan_arguments_that_are_not_an_object_are_named() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let plan = r#"{"instructions": [], "response_reference_map": {}}"#;
    for (arguments, kind) in [("[1, 2]", "a list"), (r#""x""#, "a string"), ("3", "a number"), ("true", "a boolean")] {
        let r = s.call_raw("run_plan", &format!(r#"{{"plan": {plan}, "arguments": {arguments}}}"#));
        let r = &r["result"];
        assert_eq!(r["isError"], true, "{r}");
        let text = r["content"][0]["text"].as_str().expect("text");
        let expected = format!("`arguments` must be an object of the plan's arguments (or left out), not {kind}");
        assert!(text.contains(&expected), "{text}");
    }
    s.still_serves();
}

/// A root serving `echo` (builtin:echo) and `each`, a composite that fans `echo` out over
/// its list `xs`.
fn limits_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/echo.tool"),
        r#"{"description": "echoes", "arguments": [{"name": "text", "type_name": "any"}, {"name": "i", "type_name": "any"}],
            "system_event_endpoint": "builtin:echo"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tools/each.tool"),
        r#"{"description": "echoes each", "arguments": [{"name": "xs", "type_name": "list", "required": true}, {"name": "k", "type_name": "any"}],
            "instructions": [{"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
              "parallel_execution": {"iterate_over": "REF:arguments.xs", "child_argument_name": "i"}}],
            "response_reference_map": {"n": "REF:e.response.length"}}"#,
    )
    .unwrap();
    dir
}

/// Issue 38 item 2, the first two runaways of the issue against one server: a 4 MiB string
/// fanned out 1,000 times over `echo` (4 GiB of JSON, which the server serialized whole and
/// aborted past 6 GB) is refused by `--max-result-bytes` (64 MiB by default) as it is
/// counted; `each` driven 1,000 times by a 1,000-element list (a million calls, each kept
/// in the trace) stops at `--max-calls-per-run` (set to 5,000 here to keep the test fast;
/// the default of 100,000 bounds it the same way). The server's memory stays far from
/// either (a generous bound: the measured figures are in docs/plans.md), and it serves on.
#[test]
fn a_plans_result_and_calls_are_bounded_and_the_server_stays_small() {
    let root = limits_root();
    let mut s = Server::start(root.path(), &["--max-calls-per-run", "5000"]);
    let fan: Vec<u32> = (0..1000).collect();
    let plan = json!({"arguments": [{"name": "s", "type_name": "string", "required": true}],
        "instructions": [{"execution_id": "f", "tool_definition_path": "echo",
        "arguments": {"text": "REF:arguments.s"},
        "parallel_execution": {"iterate_over": fan, "child_argument_name": "i"}}],
        "response_reference_map": {"echoes": "REF:f.response"}});
    let r = s.call("run_plan", json!({"plan": plan, "arguments": {"s": "a".repeat(4 << 20)}}));
    assert_eq!(r["isError"], true, "{:.300}", r.to_string());
    assert_eq!(r["structuredContent"]["status"], "FAILED");
    assert_eq!(r["structuredContent"]["result"], Value::Null);
    let why = r["structuredContent"]["failure_summary"].as_str().unwrap_or_default();
    assert!(why.contains("larger than the limit of 67108864 bytes of JSON (`--max-result-bytes`)"), "{why}");
    assert!(why.contains("E0817"), "{why}");

    let xs: Vec<u32> = (0..1000).collect();
    let plan = json!({"arguments": [{"name": "xs", "type_name": "list", "required": true}],
        "instructions": [{"execution_id": "d", "tool_definition_path": "each",
        "arguments": {"xs": "REF:arguments.xs"},
        "parallel_execution": {"iterate_over": fan, "child_argument_name": "k"}}]});
    let r = s.call("run_plan", json!({"plan": plan, "arguments": {"xs": xs}}));
    assert_eq!(r["structuredContent"]["status"], "FAILED", "{:.300}", r.to_string());
    let why = r["structuredContent"]["failure_summary"].as_str().unwrap_or_default();
    assert!(why.contains("the run reached its limit of 5000 calls (`--max-calls-per-run`)"), "{why}");
    assert!(why.contains("E0816"), "{why}");
    let peak = s.peak_kib();
    assert!(peak < 400 * 1024, "the server held {peak} KiB at its peak");
    let r = s.call("each", json!({"xs": [1, 2]}));
    assert_eq!(r["structuredContent"], json!({"n": 2}), "{r}");
    // A served composite called directly is bounded the same way.
    let mut s = Server::start(root.path(), &["--max-calls-per-run", "100"]);
    let r = s.call("each", json!({"xs": xs}));
    assert_eq!(r["isError"], true, "{:.300}", r.to_string());
    assert!(r.to_string().contains("the run reached its limit of 100 calls"), "{:.300}", r.to_string());
    assert!(r.to_string().contains("E0816"), "{:.300}", r.to_string());
}

/// A plan whose argument is declared `list<list<…<string>…>>` 20,000 deep (120 KB, within the
/// plan size limit; the depth is inside one string, so the JSON nesting limit does not see
/// it) once ran a worker thread out of stack, aborting the server and every session with
/// it. It is `E0004` now, naming the depth and the limit, for `check_plan` and `run_plan`
/// alike; 32 levels is a type, 33 is refused; and the server goes on.
#[test]
fn a_type_name_nested_thousands_deep_is_refused_and_the_server_goes_on() {
    let mut s = Server::start(&plans_root(), &["--allow", "/tools/*.tool"]);
    let deep = |n: usize| format!("{}string{}", "list<".repeat(n), ">".repeat(n));
    let plan = |type_name: &str| {
        json!({"arguments": [{"name": "xs", "type_name": type_name}],
               "instructions": [{"execution_id": "s", "tool_definition_path": "search", "arguments": {"query": "x"}}],
               "response_reference_map": {"total": "REF:s.total"}})
    };
    for tool in ["check_plan", "run_plan"] {
        let r = s.call(tool, json!({"plan": plan(&deep(20_000))}));
        assert_eq!(codes(&r), ["E0004"], "{tool}: {r}");
        let message = r["structuredContent"]["diagnostics"][0]["message"].as_str().expect("message");
        assert!(message.contains("20000 deep, past the limit of 32"), "{message}");
    }
    let r = s.call("check_plan", json!({"plan": plan(&deep(32))}));
    assert_eq!(codes(&r), Vec::<String>::new(), "{r}");
    let r = s.call("check_plan", json!({"plan": plan(&deep(33))}));
    assert_eq!(codes(&r), ["E0004"], "{r}");
    // A misspelt name nested as deep gets no suggestion walked through it either.
    let r =
        s.call("check_plan", json!({"plan": plan(&format!("{}strng{}", "array<".repeat(20_000), ">".repeat(20_000)))}));
    assert_eq!(codes(&r), ["E0518"], "{r}");
    s.still_serves();
}
