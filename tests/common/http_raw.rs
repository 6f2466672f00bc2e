//! `tdsl serve --mcp --plans --listen 127.0.0.1:0` and a client of raw HTTP/1.1 over a
//! socket of its own per request, for tests that send what a library client would not: a
//! body shorter than its `Content-Length`, a request without a session, bytes that are not
//! JSON.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::process::Process;

/// A running `tdsl serve --mcp --plans --no-history --listen 127.0.0.1:0`; killed when
/// dropped.
pub struct Http {
    pub process: Process,
    pub port: u16,
}

impl Http {
    /// Starts the server with `extra` options and waits for the port it listens on.
    pub fn start(root: &Path, extra: &[&str]) -> Http {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["serve", "--mcp", "--plans", "--no-history", "--listen", "127.0.0.1:0", "--root"])
            .arg(root)
            .args(extra);
        let process = Process::spawn("tdsl serve --mcp --listen", &mut cmd);
        let port = process.wait_for_line("the address it listens on", Duration::from_secs(60), |line| {
            line.split("over MCP at http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split("/mcp").next())
                .and_then(|p| p.parse::<u16>().ok())
        });
        Http { process, port }
    }

    /// A connection that has sent the head of a POST to `/mcp` of `length` bytes, and
    /// `body` (which may be shorter).
    pub fn send(&self, session: Option<&str>, length: usize, body: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {length}\r\n\
             Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n",
            self.port
        );
        if let Some(s) = session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("write head");
        let _ = stream.write_all(body);
        stream
    }

    /// One POST to `/mcp` on a fresh connection: its status, head and body.
    pub fn post(&self, session: Option<&str>, body: &[u8]) -> (u16, String, String) {
        answer(self.send(session, body.len(), body))
    }

    /// Opens a session (`initialize`, then `notifications/initialized`); its id.
    pub fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
        let (status, head, body) = self.post(None, init.to_string().as_bytes());
        assert_eq!(status, 200, "{body}");
        let id = session_id(&head).expect("a session id");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&id), note.to_string().as_bytes()).0, 202);
        id
    }
}

/// The response read to its end: status, head, body (its chunks joined when it is sent
/// chunked: a large answer goes out in slices, its text across many chunks).
pub fn answer(mut stream: TcpStream) -> (u16, String, String) {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        panic!("no HTTP response: {:?}", String::from_utf8_lossy(&raw))
    };
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
    let chunked = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, v)| k.trim().eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked"));
    let rest = &raw[end + 4..];
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// A chunked body's chunks joined (as far as they came whole).
pub fn dechunk(mut s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = s.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&s[..eol]);
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else { break };
        let rest = &s[eol + 2..];
        if n == 0 || rest.len() < n {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        s = rest[n..].strip_prefix(b"\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// The `Mcp-Session-Id` of a response's head.
pub fn session_id(head: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, v)| v.trim().to_string())
}

/// The JSON-RPC message of a JSON body, or of the last `data:` of an SSE one.
pub fn message(body: &str) -> Value {
    serde_json::from_str(body.trim()).unwrap_or_else(|_| {
        let mut data = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).filter(|d| !d.is_empty());
        data.next_back().and_then(|d| serde_json::from_str(d).ok()).unwrap_or_else(|| panic!("no message in {body:?}"))
    })
}
