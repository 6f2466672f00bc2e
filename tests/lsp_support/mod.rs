//! A minimal LSP client for the tests: JSON-RPC over the real binary's stdio (with
//! `Content-Length` framing) or over an in-process connection.

#![allow(dead_code)]

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use lsp_server::{Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};

/// How long any one answer may take before the test fails (a watchdog, not a timing).
const WATCHDOG: Duration = Duration::from_secs(120);

pub struct Client {
    send: Box<dyn FnMut(Message) + Send>,
    recv: Receiver<Message>,
    next: i32,
    pending: Vec<Notification>,
    /// Answers to requests sent with [`Client::send_request`], not yet taken.
    answers: Vec<Response>,
    child: Option<Child>,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Client {
    /// `tdsl lsp` as a process.
    pub fn binary() -> Client {
        Client::binary_with(&[])
    }

    /// `tdsl lsp ARGS…` as a process.
    pub fn binary_with(args: &[&str]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .arg("lsp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("tdsl lsp starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            while let Ok(Some(m)) = Message::read(&mut r) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        let send = Box::new(move |m: Message| {
            let _ = m.write(&mut stdin);
        });
        Client { send, recv: rx, next: 1, pending: Vec::new(), answers: Vec::new(), child: Some(child), server: None }
    }

    /// The server in this process, on a memory connection.
    pub fn in_process() -> Client {
        let (server, client) = lsp_server::Connection::memory();
        let handle = std::thread::spawn(move || tdsl::testing::lsp::serve(&server, None));
        let (tx, rx): (Sender<Message>, Receiver<Message>) = mpsc::channel();
        let receiver = client.receiver.clone();
        std::thread::spawn(move || {
            for m in receiver {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        let sender = client.sender;
        let send = Box::new(move |m: Message| {
            let _ = sender.send(m);
        });
        Client { send, recv: rx, next: 1, pending: Vec::new(), answers: Vec::new(), child: None, server: Some(handle) }
    }

    /// The peak resident set of the binary so far, in bytes (`VmHWM`; `None` in process).
    pub fn peak_bytes(&self) -> Option<u64> {
        let pid = self.child.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim();
        kb.parse::<u64>().ok().map(|k| k * 1024)
    }

    /// Sends `initialize` (workspace folder `root`, extra capabilities and options) and
    /// `initialized`; returns the server's capabilities.
    pub fn initialize(&mut self, root: &Path, capabilities: Value, options: Value) -> Value {
        let uri = uri(root);
        let r = self.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "root"}],
                "capabilities": capabilities,
                "initializationOptions": options,
            }),
        );
        self.notify("initialized", json!({}));
        r.expect("initialize succeeds")
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        (self.send)(Message::Notification(Notification::new(method.to_string(), params)));
    }

    /// A request; `Ok(result)` or `Err(error message)`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = RequestId::from(self.next);
        self.next += 1;
        (self.send)(Message::Request(Request::new(id.clone(), method.to_string(), params)));
        loop {
            match self.recv.recv_timeout(WATCHDOG).expect("the server answers") {
                Message::Response(r) if r.id == id => {
                    return match r.error {
                        Some(e) => Err(e.message),
                        None => Ok(r.result.unwrap_or(Value::Null)),
                    };
                }
                Message::Response(r) => self.answers.push(r),
                Message::Notification(n) => self.pending.push(n),
                Message::Request(_) => {}
            }
        }
    }

    /// Sends a request without waiting for its answer ([`Client::answer`]); its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        let id = RequestId::from(self.next);
        self.next += 1;
        self.send_request_with(id.clone(), method, params);
        id
    }

    /// Sends a request with the id given (a string, or one used before).
    pub fn send_request_with(&mut self, id: RequestId, method: &str, params: Value) {
        (self.send)(Message::Request(Request::new(id, method.to_string(), params)));
    }

    /// The answer to request `id`, waiting at most `wait` (`None` when none came); the
    /// notifications received meanwhile are kept.
    pub fn answer(&mut self, id: &RequestId, wait: Duration) -> Option<Response> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            if let Some(i) = self.answers.iter().position(|r| &r.id == id) {
                return Some(self.answers.remove(i));
            }
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            match self.recv.recv_timeout(left).ok()? {
                Message::Response(r) => self.answers.push(r),
                Message::Notification(n) => self.pending.push(n),
                Message::Request(_) => {}
            }
        }
    }

    /// The answers received so far to requests not waited for (taken).
    pub fn take_answers(&mut self) -> Vec<Response> {
        std::mem::take(&mut self.answers)
    }

    /// Opens a file with its text from disk; returns its URI.
    pub fn open(&mut self, path: &Path) -> String {
        let text = std::fs::read_to_string(path).expect("readable");
        self.open_text(path, &text)
    }

    pub fn open_text(&mut self, path: &Path, text: &str) -> String {
        let uri = uri(path);
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}}),
        );
        uri
    }

    /// The next diagnostics published for `uri`.
    pub fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        loop {
            if let Some(i) = self
                .pending
                .iter()
                .position(|n| n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri)
            {
                let n = self.pending.remove(i);
                return n.params["diagnostics"].as_array().cloned().unwrap_or_default();
            }
            if let Message::Notification(n) = self.recv.recv_timeout(WATCHDOG).expect("diagnostics arrive") {
                self.pending.push(n);
            }
        }
    }

    /// The parameters of every `publishDiagnostics` for `uri` received so far (taken).
    pub fn take_published(&mut self, uri: &str) -> Vec<Value> {
        let (mine, rest): (Vec<Notification>, Vec<Notification>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|n| n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri);
        self.pending = rest;
        mine.into_iter().map(|n| n.params).collect()
    }

    /// Whether diagnostics for `uri` are waiting (after a request has flushed the queue).
    pub fn has_diagnostics(&mut self, uri: &str) -> bool {
        let _ = self.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
        );
        self.pending.iter().any(|n| n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri)
    }

    /// `shutdown` then `exit`; the exit status of the binary (0 for in-process).
    pub fn shutdown(mut self) -> i32 {
        self.request("shutdown", Value::Null).expect("shutdown succeeds");
        self.exit()
    }

    /// `exit`; the exit status of the binary (0 for in-process).
    pub fn exit(mut self) -> i32 {
        self.notify("exit", Value::Null);
        if let Some(h) = self.server.take() {
            h.join().expect("the server thread ends").expect("the server ends cleanly");
            return 0;
        }
        let mut child = self.child.take().expect("a child");
        // Closing standard input, as clients do after `exit`.
        self.send = Box::new(|_| {});
        let status = child.wait().expect("tdsl lsp exits");
        status.code().unwrap_or(-1)
    }
}

/// A file URI.
pub fn uri(path: &Path) -> String {
    let p = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    lsp_types::Url::from_file_path(p).expect("absolute path").to_string()
}

/// A position request's parameters.
pub fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

/// The (0-based line, UTF-16 column) of the first occurrence of `needle` in `text`, plus
/// `offset` characters.
pub fn find(text: &str, needle: &str, offset: usize) -> (u32, u32) {
    let at = text.find(needle).unwrap_or_else(|| panic!("`{needle}` is in the text")) + offset;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..line_start].matches('\n').count();
    let col: usize = text[line_start..at].chars().map(char::len_utf16).sum();
    (line as u32, col as u32)
}

/// The hover's Markdown at the `offset`th character of the first `needle` in `text`, the
/// text of the document `uri` (empty when there is no hover).
pub fn hover_text(c: &mut Client, uri: &str, text: &str, needle: &str, offset: usize) -> String {
    let (l, ch) = find(text, needle, offset);
    let r = c.request("textDocument/hover", at(uri, l, ch)).unwrap();
    r["contents"]["value"].as_str().unwrap_or("").to_string()
}
