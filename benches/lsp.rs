//! The language server's latency (issue 19): a 1,000-step composite is open; one iteration
//! is an edit (one character of one step's expression changes, sent as an incremental
//! `didChange`) until the server has published that file's diagnostics again. The server
//! runs in process on `lsp-server`'s memory connection, so the figure is the server's work
//! (re-check and publish), not a pipe's. Figures in `docs/performance.md`.
//!
//! Hover (issue 28): on the middle step of a 10,000- and a 40,000-step composite, the
//! request alone (`lsp/hover`: the file is analysed, its symbols found on the first
//! request), and an edit then a hover (`lsp/edit_then_hover`: the analysis of the latest
//! text, its symbols and the hover); and 200 quick edits of a 20,000-step composite then a
//! hover (`lsp/200_edits_then_hover`: the edits are coalesced into one analysis).
//!
//! `cargo bench --bench lsp`

mod common;

/// The allocator of the `tdsl` binary (src/main.rs), so that the figures are the server's
/// as `tdsl lsp` runs it.
#[cfg(feature = "cli")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};

/// A root with the callee every step calls, marked with `.tdsl-root`.
fn root() -> PathBuf {
    let callee = r#"{
  "arguments": [{"name": "a", "type_name": "integer"}, {"name": "b", "type_name": "integer"}],
  "responses": [{"name": "out", "type_name": "integer", "required": true}],
  "system_event_endpoint": "builtin:echo"
}"#;
    common::tool_root("lsp", &[(".tdsl-root", ""), ("tools/step.tool", callee)])
}

/// `n` steps, each reading the one before it through a REF and an expression; returns the
/// text and the byte offset of the digit the edit toggles (in the middle step's expression).
fn composite(n: usize) -> (String, usize) {
    let mut s = String::from(
        "{\n  \"arguments\": [{\"name\": \"seed\", \"type_name\": \"integer\", \"required\": true}],\n  \"instructions\": [\n",
    );
    let mut edit_at = 0;
    for i in 0..n {
        let prev = if i == 0 { "REF:arguments.seed".to_string() } else { format!("REF:s{}.out", i - 1) };
        let sep = if i + 1 == n { "" } else { "," };
        let _ = write!(
            s,
            "    {{\"execution_id\": \"s{i}\", \"tool_definition_path\": \"/tools/step.tool\", \"arguments\": {{\"a\": \"{prev}\"}}, \"transform_arguments\": {{\"transforms\": {{\"b\": \""
        );
        if i == n / 2 {
            edit_at = s.len() + prev.len() + 3;
        }
        let _ = writeln!(s, "{prev} + 1\"}}}}}}{sep}");
    }
    let _ = write!(
        s,
        "  ],\n  \"responses\": [{{\"name\": \"out\", \"type_name\": \"integer\"}}],\n  \"response_reference_map\": {{\"out\": \"REF:s{}.out\"}}\n}}\n",
        n - 1
    );
    (s, edit_at)
}

/// Line and UTF-16 column of a byte offset (the text is ASCII).
fn position(text: &str, at: usize) -> Value {
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": col})
}

struct Session {
    client: Connection,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
    uri: String,
    version: i32,
}

impl Session {
    fn start(root: &std::path::Path, file: &std::path::Path, text: &str) -> Session {
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || tdsl::testing::lsp::serve(&server, None));
        let root_uri = lsp_types::Url::from_file_path(root).expect("absolute").to_string();
        let uri = lsp_types::Url::from_file_path(file).expect("absolute").to_string();
        let init = Request::new(
            RequestId::from(1),
            "initialize".to_string(),
            json!({"processId": null, "rootUri": root_uri, "capabilities": {}, "workspaceFolders": [{"uri": root_uri, "name": "root"}]}),
        );
        client.sender.send(Message::Request(init)).expect("send");
        loop {
            if let Message::Response(_) = client.receiver.recv().expect("initialize answered") {
                break;
            }
        }
        let s = Session { client, server: Some(handle), uri, version: 1 };
        s.notify("initialized", json!({}));
        s.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": s.uri, "languageId": "json", "version": 1, "text": text}}),
        );
        s.wait_diagnostics();
        s
    }

    fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.to_string(), params);
        self.client.sender.send(Message::Notification(n)).expect("send");
    }

    /// Until this file's diagnostics are published; returns how many there are.
    fn wait_diagnostics(&self) -> usize {
        loop {
            match self.client.receiver.recv_timeout(Duration::from_secs(60)).expect("diagnostics arrive") {
                Message::Notification(n)
                    if n.method == "textDocument/publishDiagnostics" && n.params["uri"] == self.uri =>
                {
                    return n.params["diagnostics"].as_array().map_or(0, Vec::len);
                }
                _ => {}
            }
        }
    }

    /// Sends an edit replacing the one character at `at` with `with`.
    fn send_edit(&mut self, text: &str, at: usize, with: &str) {
        self.version += 1;
        let range = json!({"start": position(text, at), "end": position(text, at + 1)});
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": self.uri, "version": self.version},
                   "contentChanges": [{"range": range, "text": with}]}),
        );
    }

    /// Replaces the one character at `at` with `with`, and waits for the diagnostics.
    fn edit(&mut self, text: &str, at: usize, with: &str) -> usize {
        self.send_edit(text, at, with);
        self.wait_diagnostics()
    }

    /// Hovers at byte `at`; returns the hover's text.
    fn hover(&mut self, text: &str, at: usize) -> String {
        let id = RequestId::from(1000 + self.version);
        self.version += 1;
        let params = json!({"textDocument": {"uri": self.uri}, "position": position(text, at)});
        let req = Request::new(id.clone(), "textDocument/hover".to_string(), params);
        self.client.sender.send(Message::Request(req)).expect("send");
        loop {
            match self.client.receiver.recv_timeout(Duration::from_secs(600)).expect("hover answered") {
                Message::Response(r) if r.id == id => {
                    return r
                        .result
                        .map(|v| v["contents"]["value"].as_str().unwrap_or("").to_string())
                        .unwrap_or_default()
                }
                _ => {}
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let shutdown = Request::new(RequestId::from(2), "shutdown".to_string(), Value::Null);
        let _ = self.client.sender.send(Message::Request(shutdown));
        let _ = self.client.sender.send(Message::Notification(Notification::new("exit".to_string(), Value::Null)));
        if let Some(h) = self.server.take() {
            let _ = h.join();
        }
    }
}

fn edit_to_diagnostics(c: &mut Criterion) {
    let dir = root();
    let mut group = c.benchmark_group("lsp/edit_to_diagnostics");
    group.sample_size(20);
    for n in [100usize, 1_000] {
        let (text, at) = composite(n);
        assert_eq!(&text[at..at + 1], "1", "the edit toggles the `1` of `+ 1`");
        let file = dir.join(format!("main{n}.tool"));
        std::fs::write(&file, &text).expect("write");
        let mut session = Session::start(&dir, &file, &text);
        let mut flip = false;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                flip = !flip;
                // `+ 1` ↔ `+ x`: the second is an unknown name (one diagnostic), the first clean.
                // Positions depend only on the text before `at`, which never changes.
                let found = session.edit(&text, at, if flip { "x" } else { "1" });
                assert_eq!(found > 0, flip, "an unknown name is reported, and goes away");
            })
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The byte offset of the middle step's `execution_id` (inside the name).
fn middle_step(text: &str, n: usize) -> usize {
    let needle = format!("\"execution_id\": \"s{}\"", n / 2);
    text.find(&needle).expect("the middle step") + needle.len() - 2
}

fn hover(c: &mut Criterion) {
    let dir = root();
    let mut group = c.benchmark_group("lsp/hover");
    group.sample_size(20);
    for n in [10_000usize, 40_000] {
        let (text, _) = composite(n);
        let file = dir.join(format!("hover{n}.tool"));
        std::fs::write(&file, &text).expect("write");
        let mut session = Session::start(&dir, &file, &text);
        let at = middle_step(&text, n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| assert!(session.hover(&text, at).contains("step `s"), "a step's hover"))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("lsp/edit_then_hover");
    group.sample_size(10);
    for n in [10_000usize, 40_000] {
        let (text, edit_at) = composite(n);
        let file = dir.join(format!("edit{n}.tool"));
        std::fs::write(&file, &text).expect("write");
        let mut session = Session::start(&dir, &file, &text);
        let at = middle_step(&text, n);
        let mut flip = false;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                flip = !flip;
                session.send_edit(&text, edit_at, if flip { "2" } else { "1" });
                assert!(session.hover(&text, at).contains("step `s"), "a step's hover");
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("lsp/200_edits_then_hover");
    group.sample_size(10);
    let n = 20_000usize;
    let (text, edit_at) = composite(n);
    let file = dir.join(format!("burst{n}.tool"));
    std::fs::write(&file, &text).expect("write");
    let mut session = Session::start(&dir, &file, &text);
    let at = middle_step(&text, n);
    group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
        b.iter(|| {
            for k in 0..200 {
                session.send_edit(&text, edit_at, if k % 2 == 0 { "2" } else { "1" });
            }
            assert!(session.hover(&text, at).contains("step `s"), "a step's hover");
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, edit_to_diagnostics, hover);
criterion_main!(benches);
