//! Issue 38, item 1: an upstream MCP server's bearer token (`--upstream-token`) never reaches
//! what a plan's client, the history or a log sees, even from a server that echoes it back —
//! in the body of a 5xx answer to the handshake, in an `isError` result, in a JSON-RPC error,
//! in a result and in its tools listing. The upstreams are fake Streamable HTTP servers on a
//! loopback port that say whatever `Authorization` header they get.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::mcp_stdio::StdioClient;
use serde_json::{json, Value};

const TOKEN: &str = "tok-ECHOCHECK-4b1d9e27c5";

/// How a fake upstream answers.
#[derive(Clone, Copy)]
enum Upstream {
    /// Every request: 500, the body naming the `Authorization` it got.
    Down,
    /// A server whose tools echo the header: `fail` in an `isError` result, `refuse` in a
    /// JSON-RPC error, `leak` in its result; its listing's descriptions echo it too.
    Echoing,
}

/// Starts a fake upstream on a loopback port; its `/mcp` URL.
fn upstream(kind: Upstream) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer(conn, kind));
        }
    });
    url
}

/// Reads one HTTP request: its method, request target, `Authorization` header and body.
fn read_request(conn: &mut TcpStream) -> Option<(String, String, String, Vec<u8>)> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let target = words.next()?.to_string();
    let (mut auth, mut length) = (String::new(), 0usize);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "authorization" => auth = value.trim().to_string(),
                "content-length" => length = value.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, target, auth, body))
}

fn write(conn: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn answer(mut conn: TcpStream, kind: Upstream) {
    let Some((method, target, auth, body)) = read_request(&mut conn) else { return };
    // An origin server is sent the origin form, `POST /mcp` (hostile round 12): the
    // absolute form, `POST http://host:port/mcp`, is for proxies.
    if !target.starts_with('/') {
        return write(&mut conn, "400 Bad Request", &format!("not origin form: {target}"));
    }
    if let Upstream::Down = kind {
        return write(&mut conn, "500 Internal Server Error", &format!("upstream rejected `Authorization: {auth}`"));
    }
    if method != "POST" {
        return write(&mut conn, if method == "DELETE" { "200 OK" } else { "405 Method Not Allowed" }, "");
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(id) = request.get("id").cloned() else { return write(&mut conn, "202 Accepted", "") };
    let tool =
        |name: &str| json!({"name": name, "description": format!("Checks {auth}"), "inputSchema": {"type": "object"}});
    let reply = match request["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "echoing", "version": "1"}}}),
        "tools/list" => json!({"result": {"tools": [tool("fail"), tool("refuse"), tool("leak")]}}),
        "tools/call" => match request["params"]["name"].as_str().unwrap_or_default() {
            "fail" => json!({"result": {"content": [{"type": "text", "text": format!("bad credentials: {auth}")}],
                "isError": true}}),
            "refuse" => json!({"error": {"code": -32001, "message": format!("`{auth}` may not call this")}}),
            _ => json!({"result": {"content": [{"type": "text", "text": "ok"}],
                "structuredContent": {"seen": auth, "escaped": json!(auth).to_string()}}}),
        },
        _ => json!({"result": {}}),
    };
    let mut reply = reply;
    reply["jsonrpc"] = json!("2.0");
    reply["id"] = id;
    write(&mut conn, "200 OK", &reply.to_string());
}

fn plan(tool: &str) -> Value {
    json!({"plan": {"instructions": [{"execution_id": "u", "tool_definition_path": tool, "arguments": {},
        "retry": {"max_retries": 0}}], "response_reference_map": {"out": "REF:u"}}})
}

#[test]
fn an_upstream_that_echoes_its_token_shows_it_to_no_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let history = dir.path().join("history.db");
    let (web, down) = (upstream(Upstream::Echoing), upstream(Upstream::Down));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/document-analysis");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--root"]).arg(&root).arg("--history").arg(&history);
    for (name, url) in [("web", &web), ("down", &down)] {
        cmd.args(["--upstream", &format!("{name}={url}")]);
        cmd.args(["--upstream-token", &format!("{name}={}", token.display())]);
    }
    let mut client = StdioClient::start(&mut cmd);
    client.request("logging/setLevel", json!({"level": "debug"}));
    let mut seen = Vec::new();
    // An `isError` result, a JSON-RPC error, a result: the plan's run fails or returns with
    // the token in place, redacted.
    for tool in ["web/fail", "web/refuse", "web/leak"] {
        let r = client.call("run_plan", plan(tool));
        assert!(r.to_string().contains("[redacted]"), "{tool}: the echo did not come back: {r}");
        seen.push(r.to_string());
    }
    // The listing: in `tdsl://tools`, and a handshake answered 500 with the header in its body.
    let tools = client.request("resources/read", json!({"uri": "tdsl://tools"}));
    assert!(tools.to_string().contains("Checks Bearer [redacted]"), "{tools}");
    seen.push(tools.to_string());
    let r = client.call("run_plan", plan("down/x"));
    assert!(r.to_string().contains("upstream rejected `Authorization: Bearer [redacted]`"), "{r}");
    seen.push(r.to_string());
    let r = client.call("check_plan", plan("down/x"));
    seen.push(r.to_string());
    seen.extend(client.notes.iter().map(Value::to_string));
    drop(client);
    seen.push(String::from_utf8_lossy(&std::fs::read(&history).expect("the history")).into_owned());
    for entry in std::fs::read_dir(dir.path()).expect("the folder").flatten() {
        if entry.path() != token {
            seen.push(String::from_utf8_lossy(&std::fs::read(entry.path()).expect("read")).into_owned());
        }
    }
    let listed = common::tdsl(&["history", "list", "--history", history.to_str().expect("path"), "--format", "json"]);
    assert!(listed.stdout.contains("run_plan"), "{}", listed.stdout);
    seen.push(listed.stdout);
    for text in &seen {
        assert!(!text.contains("ECHOCHECK"), "the token reached a client, the history or a log: {text}");
    }
}

/// Issue 40: `tdsl run --upstream` and `tdsl check --upstream` (a skill's file that calls an
/// upstream tool, outside the server) reach the server through the same client: the token an
/// echoing server sends back is redacted from the result, the errors and the history.
#[test]
fn run_and_check_with_an_upstream_show_its_token_to_no_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let history = dir.path().join("history.db");
    let (web, down) = (upstream(Upstream::Echoing), upstream(Upstream::Down));
    let skill = dir.path().join("skill.tool");
    let write_skill = |tool: &str| {
        let text = json!({"description": "Calls an upstream", "instructions": [
            {"execution_id": "u", "tool_definition_path": tool, "arguments": {}, "retry": {"max_retries": 0}}],
            "response_reference_map": {"out": "REF:u"}});
        std::fs::write(&skill, text.to_string()).expect("write");
    };
    let run = |command: &str, name: &str, url: &str| {
        let mut args = vec![command.to_string(), "--root".into(), dir.path().display().to_string()];
        args.extend(["--upstream".into(), format!("{name}={url}")]);
        args.extend(["--upstream-token".into(), format!("{name}={}", token.display())]);
        if command == "run" {
            args.extend(["--history".into(), history.display().to_string()]);
        }
        args.push(skill.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        common::tdsl(&args)
    };
    let mut seen = Vec::new();
    for tool in ["web/leak", "web/fail", "web/refuse"] {
        write_skill(tool);
        let out = run("run", "web", &web);
        let both = format!("{}{}", out.stdout, out.stderr);
        assert!(both.contains("[redacted]"), "{tool}: the echo did not come back: {both}");
        seen.push(both);
    }
    // A server that answers the handshake 500 with the header in its body: E0903, redacted.
    write_skill("down/x");
    for command in ["check", "run"] {
        let out = run(command, "down", &down);
        assert!(out.stderr.contains("E0903") && out.stderr.contains("Bearer [redacted]"), "{command}: {}", out.stderr);
        seen.push(format!("{}{}", out.stdout, out.stderr));
    }
    seen.push(String::from_utf8_lossy(&std::fs::read(&history).expect("the history")).into_owned());
    for text in &seen {
        assert!(!text.contains("ECHOCHECK"), "the token reached the output or the history: {text}");
    }
}
