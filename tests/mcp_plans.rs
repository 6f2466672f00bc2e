//! Plans over MCP (`tdsl serve --mcp --plans`, SPEC §13) with the official Python SDK's
//! client (`tests/mcp_py/plans.py`), over stdio and over `--listen`, with upstream servers
//! that are second `tdsl serve --mcp`s; and the command line's refusals.
#![cfg(unix)]

mod common;

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

/// Runs one scenario of `plans.py` (with `--http` first when `http`).
fn plans(http: bool, scenario: &str, extra: &[&Path]) {
    let script = repo().join("tests/mcp_py/plans.py");
    let mut cmd = Command::new(common::python::python());
    cmd.arg(&script);
    if http {
        cmd.arg("--http");
    }
    cmd.arg(scenario).arg(tdsl()).arg(repo()).args(extra);
    let mut process = common::process::Process::spawn(&format!("plans.py {scenario}"), &mut cmd);
    let status = process.exit_within(std::time::Duration::from_secs(240));
    assert!(status.success(), "plans.py {scenario} failed ({status}):\n{}", process.output());
}

/// Over stdio: the tools, resources and prompt; a model's mistake located; the repaired
/// plan run with a served and an upstream tool, with progress; a failing upstream step; a
/// cancelled run_plan (the upstream's program ends); an upstream that hangs (the step's
/// timeout) and one that dies mid-call (a clear error, and the next plan starts it again).
#[test]
fn a_plan_session_over_stdio() {
    let work = tempfile::tempdir().expect("tempdir");
    plans(false, "session", &[work.path()]);
}

/// The same session over Streamable HTTP (`serve --listen`), ended with SIGTERM.
#[test]
fn a_plan_session_over_http() {
    let work = tempfile::tempdir().expect("tempdir");
    plans(true, "session", &[work.path()]);
}

/// The guide's four worked plans (the fourth over the upstream `shop`, tests/mcp_py/shop.py),
/// read from `tdsl://guide` as a model reads them, check with no warning and run to the
/// expected results.
#[test]
fn the_guides_worked_plans_check_and_run() {
    plans(false, "guide", &[]);
}

/// The corpus of plans with the mistakes models make (`tests/data/plans/cases`): each gets
/// its expected diagnostics from `check_plan`, is refused by `run_plan`, and its repair runs,
/// all through the Python SDK client, with the upstream server `weather` a second tdsl.
#[test]
fn the_plan_corpus_through_the_python_client() {
    plans(false, "corpus", &[]);
}

/// The corpus over HTTP too.
#[test]
fn the_plan_corpus_over_http() {
    plans(true, "corpus", &[]);
}

/// `serve --plans --plans-only` (issue 39.6) through the Python SDK's client: `tools/list`
/// shows only `check_plan` and `run_plan` (the resources and the prompt stay); a plan calls
/// a served and an upstream tool, both listed in `tdsl://tools`; a direct call of the served
/// tool is refused, saying to call it from a plan.
#[test]
fn plans_only_offers_only_the_plan_tools() {
    plans(false, "plans-only", &[]);
}

/// The same over HTTP.
#[test]
fn plans_only_offers_only_the_plan_tools_over_http() {
    plans(true, "plans-only", &[]);
}

fn serve(args: &[&str]) -> (i32, String) {
    let out = Command::new(tdsl())
        .args(["serve", "--mcp", "--no-history", "--root"])
        .arg(repo().join("examples/document-analysis"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("tdsl runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Out-of-range limits, bad upstreams and tokens, options without `--plans`: usage errors
/// (exit 2) that say why, before anything starts.
#[test]
fn serve_refuses_bad_plan_options() {
    let token = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(token.path(), "secret").expect("write");
    let token_arg = format!("web={}", token.path().display());
    let cases: &[(&[&str], &str)] = &[
        (&["--plans", "--max-plan-steps", "0"], "plan steps"),
        (&["--plans", "--max-plan-steps", "2000"], "plan steps"),
        (&["--plans", "--max-plan-bytes", "10"], "plan size"),
        (&["--plans", "--max-fan-out", "1.5"], "whole number"),
        (&["--plans", "--plan-deadline", "0"], "deadline"),
        (&["--plans", "--upstream", "docs"], "NAME=COMMAND"),
        (&["--plans", "--upstream", "a/b=x"], "must be 1 to 64"),
        (&["--plans", "--upstream", "a=https:///mcp"], "is not a URL"),
        (&["--plans", "--upstream", "a=x", "--upstream", "a=y"], "two upstream"),
        (&["--plans", "--upstream", "web=srv", "--upstream-token", &token_arg], "started as a command"),
        (&["--plans", "--files", "/nonexistent/dir"], "not a folder"),
        (&["--upstream", "a=x"], "--plans"),
        (&["--files", "."], "--plans"),
        (&["--plans-only"], "--plans"),
        (&["--plans", "--upstream", "a=x", "--upstream-timeout", "0"], "upstream timeout"),
        (&["--plans", "--upstream", "a=x", "--upstream-timeout", "301"], "upstream timeout"),
        (&["--plans", "--upstream-timeout", "5"], "--upstream"),
    ];
    for (args, says) in cases {
        let (code, stderr) = serve(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} should say {says:?}: {stderr}");
    }
    // A token file others can read is refused, as --token-file's is.
    let url_token = format!("web={}", token.path().display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(token.path(), std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let (code, stderr) =
            serve(&["--plans", "--upstream", "web=http://127.0.0.1:9/mcp", "--upstream-token", &url_token]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("readable by other users"), "{stderr}");
    }
}

/// A raw JSON-RPC session with `tdsl serve --mcp --plans` on stdio.
struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    id: u64,
    /// Notifications read while waiting for responses.
    notes: Vec<serde_json::Value>,
}

impl Raw {
    fn start(args: &[&str]) -> Raw {
        let mut child = Command::new(tdsl())
            .args(["serve", "--mcp", "--plans", "--root"])
            .arg(repo().join("examples/document-analysis"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("tdsl starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut raw = Raw { child, stdin, stdout, id: 0, notes: Vec::new() };
        let init = raw.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(init["result"]["capabilities"]["resources"].is_object(), "{init}");
        raw.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, msg: &serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::BufRead;
        self.id += 1;
        let id = self.id;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "the server closed its output");
            let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            if v["id"] == serde_json::json!(id) {
                return v;
            }
            self.notes.push(v);
        }
    }

    fn call(&mut self, name: &str, arguments: serde_json::Value) -> serde_json::Value {
        let r = self.request("tools/call", serde_json::json!({"name": name, "arguments": arguments}));
        r["result"].clone()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The history records a plan's run as `run_plan` with the plan itself; `logging/setLevel`
/// gets the plan's step messages; `--files DIR` gives plans the file functions (without it
/// they are refused before the run).
#[test]
fn run_plan_is_recorded_logged_and_reads_files_only_with_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let history = dir.path().join("history.db");
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).expect("mkdir");
    std::fs::write(files.join("note.txt"), "hello from a file").expect("write");
    let doc = repo().join("examples/document-analysis/documents/meeting-notes.txt");
    let plan = serde_json::json!({
        "instructions": [{"execution_id": "info", "tool_definition_path": "basic_extractor",
                          "arguments": {"document_path": doc.to_str().expect("utf-8")},
                          "transform_responses": {"transforms": {"note": "read_file(file_path=\"/note.txt\")"}}}],
        "response_reference_map": {"words": "REF:info.word_count", "note": "REF:info.note"}
    });

    // Without --files: refused at its place, nothing runs.
    let mut raw = Raw::start(&["--history", history.to_str().expect("utf-8")]);
    let r = raw.call("run_plan", serde_json::json!({"plan": plan}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["diagnostics"][0]["code"], "E1310", "{r}");
    drop(raw);

    let mut raw =
        Raw::start(&["--history", history.to_str().expect("utf-8"), "--files", files.to_str().expect("utf-8")]);
    raw.request("logging/setLevel", serde_json::json!({"level": "info"}));
    let r = raw.call("run_plan", serde_json::json!({"plan": plan}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["result"], serde_json::json!({"words": 24, "note": "hello from a file"}), "{r}");
    let started: Vec<&serde_json::Value> = raw
        .notes
        .iter()
        .filter(|n| n["method"] == "notifications/message" && n["params"]["data"]["event"] == "started")
        .collect();
    assert_eq!(started.len(), 1, "{:?}", raw.notes);
    assert_eq!(started[0]["params"]["data"]["step"], "info");
    drop(raw);

    let out = Command::new(tdsl())
        .args(["history", "show", "1", "--format", "json", "--history"])
        .arg(&history)
        .output()
        .expect("tdsl history");
    let shown: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let text = shown.to_string();
    assert!(text.contains("\"run_plan\""), "{shown}");
    assert!(text.contains("read_file(file_path="), "the recorded run has no plan: {shown}");
}

/// `examples/plans/README.md`'s worked session is what tdsl answers now: the transcript
/// scenario run again gives the same text, durations aside. `UPDATE_EXAMPLES=1` writes it.
#[test]
fn the_worked_session_in_examples_is_what_tdsl_answers() {
    const MARKER: &str = "<!-- transcript: tests/mcp_py/plans.py transcript (do not edit below) -->\n";
    let work = tempfile::tempdir().expect("tempdir");
    let out = work.path().join("transcript.md");
    plans(false, "transcript", &[&out]);
    let fresh = std::fs::read_to_string(&out).expect("the transcript");
    let readme_path = repo().join("examples/plans/README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("examples/plans/README.md");
    let (head, recorded) = readme.split_once(MARKER).expect("the README has the transcript marker");
    if std::env::var_os("UPDATE_EXAMPLES").is_some() {
        std::fs::write(&readme_path, format!("{head}{MARKER}\n{fresh}")).expect("write the README");
        return;
    }
    let durations = regex::Regex::new(r#""duration_ms": \d+"#).expect("regex");
    let normal = |t: &str| durations.replace_all(t.trim(), "\"duration_ms\": N").into_owned();
    assert_eq!(normal(recorded), normal(&fresh), "examples/plans/README.md is stale: run with UPDATE_EXAMPLES=1");
}

/// An upstream over Streamable HTTP with a bearer token (`--upstream NAME=URL
/// --upstream-token NAME=FILE`) is called from plans; a wrong token and a server that cannot
/// start are named in the answer (`upstream_problems`) and in `tdsl://tools`, and the plans
/// server goes on.
#[test]
fn an_upstream_over_http_with_a_token_and_one_that_cannot_start() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "not-it").expect("write");
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut upstream = Command::new(tdsl())
        .args(["serve", "--mcp", "--no-history", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .arg("--root")
        .arg(repo().join("tests/data/mcp"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the upstream starts");
    let mut lines = std::io::BufReader::new(upstream.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = lines.next().expect("the upstream prints its address").expect("a line");
        if let Some((_, rest)) = line.split_once("over MCP at ") {
            break rest.split_whitespace().next().expect("a URL").to_string();
        }
    };
    let web = format!("web={url}");
    let good_token = format!("web={}", token.display());
    let pause = serde_json::json!({"plan": {"instructions": [
        {"execution_id": "p", "tool_definition_path": "web/pause", "arguments": {"n": 1}}],
        "response_reference_map": {"n": "REF:p.n"}}});

    let mut raw = Raw::start(&[
        "--no-history",
        "--upstream",
        &web,
        "--upstream-token",
        &good_token,
        "--upstream",
        "gone=/nonexistent/mcp-server",
    ]);
    let r = raw.call("run_plan", pause.clone());
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["result"], serde_json::json!({"n": 2}), "{r}");
    let tools = raw.request("resources/read", serde_json::json!({"uri": "tdsl://tools"}));
    let text = tools["result"]["contents"][0]["text"].as_str().expect("text").to_string();
    assert!(text.contains("`web/pause(n: integer!)` → `{n: integer}`"), "{text}");
    assert!(text.contains("Upstream server `gone`") && text.contains("not available now"), "{text}");
    let r = raw.call(
        "check_plan",
        serde_json::json!({"plan": {"instructions": [{"execution_id": "g", "tool_definition_path": "gone/x"}]}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["structuredContent"]["upstream_problems"].to_string().contains("gone"), "{r}");
    // The server goes on.
    assert_eq!(raw.call("run_plan", pause.clone())["isError"], false);
    drop(raw);

    let wrong_token = format!("web={}", wrong.display());
    let mut raw = Raw::start(&["--no-history", "--upstream", &web, "--upstream-token", &wrong_token]);
    let r = raw.call("run_plan", pause);
    assert_eq!(r["isError"], true, "{r}");
    let problems = r["structuredContent"]["upstream_problems"].to_string();
    assert!(
        problems.contains("web") && problems.contains("401 Unauthorized") && !problems.contains("WorkerTransport"),
        "{r}"
    );
    drop(raw);
    let _ = upstream.kill();
    let _ = upstream.wait();
}

/// 10 MB of plan on one line is answered with an error (the framing layer's size limit), a
/// 1 MB plan sent as text with the plan-size diagnostic, and the server goes on.
#[test]
fn a_huge_plan_is_refused_and_the_server_goes_on() {
    use std::io::BufRead;
    let mut raw = Raw::start(&["--no-history"]);
    let filler = "x".repeat(10 * 1024 * 1024);
    raw.send(&serde_json::json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "check_plan", "arguments": {"plan": {"description": filler, "instructions": []}}}}));
    let mut line = String::new();
    raw.stdout.read_line(&mut line).expect("read");
    let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let text = format!("{{\"description\": \"{}\", \"instructions\": []}}", "y".repeat(1024 * 1024));
    let r = raw.call("check_plan", serde_json::json!({"plan": text}));
    assert_eq!(r["isError"], true, "{}", &r.to_string()[..300.min(r.to_string().len())]);
    assert_eq!(r["structuredContent"]["diagnostics"][0]["code"], "E1301");
    let r = raw.call(
        "check_plan",
        serde_json::json!({"plan": {"instructions": [{"execution_id": "v", "tool_definition_path": "document_validator",
            "arguments": {"file_paths": ["a.txt"]}}]}}),
    );
    assert_eq!(r["structuredContent"]["ok"], true, "{r}");
}

/// Issue 39: a real Python upstream (`tests/mcp_py/shop.py`, FastMCP with pydantic models,
/// list items as `$ref`s into `$defs`, the `{"result": […]}` wrapping) behind `serve --mcp
/// --plans --upstream`: `tdsl://tools` shows the items' fields, values and bounds; a plan
/// guessing `item.id` for `order_id` is refused by `check_plan` with the declared fields in
/// the help, and `run_plan` refuses it without calling the upstream; a value outside its
/// enum is refused too; the repaired plan runs.
#[test]
fn a_pydantic_upstreams_schemas_are_read_whole() {
    let shop =
        format!("shop='{}' '{}'", common::python::python().display(), repo().join("tests/mcp_py/shop.py").display());
    let mut raw = Raw::start(&["--no-history", "--upstream", &shop]);

    let tools = raw.request("resources/read", serde_json::json!({"uri": "tdsl://tools"}));
    let listing = tools["result"]["contents"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(
        listing.contains(
            "- `shop/list_orders(customer_id: string!, status: \"open\"|\"shipped\"|\"cancelled\" | null, limit: integer (1..100) = 10)` → `{result: list<{order_id: string, customer: {customer_id: string, name: string, email?: string | null}, lines: list<{sku: string, quantity: integer (≥1), price: number}>, status: \"open\"|\"shipped\"|\"cancelled\", note?: string | null}>}`"
        ),
        "{listing}"
    );
    assert!(listing.contains("\n  Give `status` to keep only the orders in that state."), "{listing}");
    assert!(listing.contains("replies: list<{author: string, text: string, replies: list<…>}>"), "{listing}");

    let guessed = serde_json::json!({
        "instructions": [
            {"execution_id": "orders", "tool_definition_path": "shop/list_orders", "arguments": {"customer_id": "c-1"},
             "transform_responses": {"variables": {"found": "REF:response.result"},
                                     "transforms": {"ids": "map(array=found, template=\"item.id\")"}}},
            {"execution_id": "details", "tool_definition_path": "shop/get_order", "arguments": {},
             "parallel_execution": {"iterate_over": "REF:orders.ids", "child_argument_name": "order_id"}}
        ],
        "response_reference_map": {"statuses": "REF:details.response"}
    });
    let calls = |raw: &mut Raw| {
        let plan = serde_json::json!({"instructions": [{"execution_id": "c", "tool_definition_path": "shop/calls", "arguments": {}}],
                                      "response_reference_map": {"calls": "REF:c.result"}});
        let r = raw.call("run_plan", serde_json::json!({"plan": plan}));
        assert_eq!(r["isError"], false, "{r}");
        r["structuredContent"]["result"]["calls"].clone()
    };

    let r = raw.call("check_plan", serde_json::json!({"plan": guessed}));
    assert_eq!(r["isError"], true, "{r}");
    let d = &r["structuredContent"]["diagnostics"][0];
    assert_eq!(d["code"], "E1320", "{r}");
    assert_eq!(d["pointer"], "/instructions/0/transform_responses/transforms/ids", "{r}");
    assert!(d["help"].as_str().unwrap_or_default().contains("order_id, customer, lines, status, note"), "{r}");

    let r = raw.call("run_plan", serde_json::json!({"plan": guessed}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["diagnostics"][0]["code"], "E1320", "{r}");
    assert_eq!(calls(&mut raw), serde_json::json!([]), "a refused plan made no call");

    let mut outside = guessed.clone();
    outside["instructions"][0]["arguments"]["status"] = serde_json::json!("pending");
    outside["instructions"][0]["transform_responses"]["transforms"]["ids"] =
        serde_json::json!("map(array=found, template=\"item.order_id\")");
    let r = raw.call("run_plan", serde_json::json!({"plan": outside}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["diagnostics"][0]["code"], "E0630", "{r}");
    assert_eq!(calls(&mut raw), serde_json::json!([]), "a refused plan made no call");

    let mut repaired = outside;
    repaired["instructions"][0]["arguments"]["status"] = serde_json::json!("shipped");
    repaired["response_reference_map"] =
        serde_json::json!({"statuses": "REF:details.response", "ids": "REF:orders.ids"});
    let r = raw.call("run_plan", serde_json::json!({"plan": repaired}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["result"]["ids"], serde_json::json!(["o-2"]), "{r}");
    assert_eq!(r["structuredContent"]["result"]["statuses"][0]["status"], "shipped", "{r}");
    assert_eq!(calls(&mut raw), serde_json::json!(["list_orders", "get_order"]));
}
