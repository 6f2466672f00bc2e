//! `tdsl lsp`: a Language Server Protocol server for `.tool` files (SPEC §11).
//!
//! Built on `lsp-server` (rust-analyzer's synchronous scaffold: a pair of channels and the
//! initialize/shutdown handshake) and `lsp-types`. One thread handles every message in
//! order, and the state needs no locks. Edits are coalesced: a `didChange` only updates the
//! text; a file is analysed again once no message has come for a moment (as long as its
//! last analysis took, at most [`DEBOUNCE`]), or before a request is answered, and then only its latest text — so a burst of edits costs one
//! analysis, not one each. Requests are answered from that analysis (the symbols of a file
//! are found once per analysis, on the first request that needs them). A request the
//! client cancels (`$/cancelRequest`) is answered `-32800` and its work stopped early
//! ([`cancel`]); `exit` without `shutdown` ends the server with [`Ended::Exit`] `{
//! after_shutdown: false }` (`tdsl lsp` exits 1).
//!
//! - **Diagnostics** are those of `tdsl check`, published when a file is opened or changed
//!   (text synchronised incrementally), and for the open files that call it when a callee
//!   changes. Positions are UTF-16 by default, UTF-8 when the client offers it.
//! - **The tool root** of a file is the folder the client names in
//!   `initializationOptions.root`, else the nearest folder above the file holding a
//!   `.tdsl-root` file, else the workspace folder that holds it; each is a given root
//!   (`--root`: a `tool_definition_path` that names no file is an error). A file outside
//!   all of them is checked with its own folder as an assumed root (such callees are not
//!   checked).
//! - Hover, definition, references, rename, completion and code actions: [`features`].

mod actions;
mod cancel;
mod completion;
mod features;
pub(crate) mod framing;
mod hover;
mod json_context;
mod open_docs;
pub(crate) mod symbols;
pub(crate) mod text;

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    CodeActionProviderCapability, CompletionOptions, DiagnosticRelatedInformation, DiagnosticSeverity,
    HoverProviderCapability, InitializeParams, Location, NumberOrString, OneOf, PositionEncodingKind,
    PublishDiagnosticsParams, ServerCapabilities, ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind, Url,
};

use crate::analysis::{Analyzer, CheckedTool, ToolRoot};
use crate::diagnostic::{Diagnostic, Severity};
use crate::engine::Engine;
use crate::tool::ToolDef;
pub(crate) use text::{Encoding, Text};

/// The file whose folder is the tool root of every `.tool` file below it.
pub(crate) const ROOT_MARKER: &str = ".tdsl-root";

/// A check the host adds to every file's diagnostics (the command line's: whether `tdsl
/// run` can call a primitive tool's endpoint, W0902).
pub(crate) type ExtraCheck = fn(&mut CheckedTool);

/// Serves one client on `connection` until it asks to shut down and exits (or the
/// connection closes). Errors are protocol failures (a malformed handshake). An `exit`
/// without `shutdown` ends it too (`tdsl lsp` then exits with status 1).
pub fn serve(connection: &Connection, extra: Option<ExtraCheck>) -> Result<(), String> {
    serve_with(connection, extra, framing::DEFAULT_MAX_MESSAGE_BYTES).map(|_| ())
}

/// How the server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// `exit`, after `shutdown` (true) or without it (false: LSP's exit status 1).
    Exit { after_shutdown: bool },
    /// The connection closed (the end of the input).
    Closed,
}

/// [`serve`], following documents of at most `max_document` bytes (the message limit: a
/// longer document could not be sent whole). Edits that would make one longer stop the
/// server following it ([`Doc::lost`]), so that no client grows one without bound.
pub(crate) fn serve_with(
    connection: &Connection,
    extra: Option<ExtraCheck>,
    max_document: usize,
) -> Result<Ended, String> {
    let (id, params) = connection.initialize_start().map_err(|e| e.to_string())?;
    let params: InitializeParams =
        serde_json::from_value(params).map_err(|e| format!("the initialize request is malformed: {e}"))?;
    let mut server = Server::new(&params, extra);
    server.max_document = max_document;
    let result = serde_json::json!({
        "capabilities": server.capabilities(),
        "serverInfo": ServerInfo { name: "tdsl".into(), version: Some(env!("CARGO_PKG_VERSION").into()) },
    });
    connection.initialize_finish(id, result).map_err(|e| e.to_string())?;
    let receiver = connection.receiver.clone();
    server.inbox = RefCell::new(cancel::Inbox::new(Box::new(move || receiver.try_recv().ok())));
    loop {
        // What the last analyses replaced is freed while nothing waits to be answered (or
        // when it piles up), not between an edit and the answer to the request after it.
        let idle = server.inbox.get_mut().is_empty() && connection.receiver.is_empty();
        if !server.retired.is_empty() && (idle || server.retired.len() > 2) {
            server.retired.clear();
        }
        // The messages taken ahead of their turn (looking for cancellations) come first.
        // While edits wait to be analysed, a short pause in the messages analyses them.
        let msg = if let Some(m) = server.inbox.get_mut().pop() {
            m
        } else {
            let m = if server.dirty.is_empty() {
                match connection.receiver.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                }
            } else {
                match connection.receiver.recv_timeout(server.last_flush.min(DEBOUNCE)) {
                    Ok(m) => m,
                    Err(e) if e.is_timeout() => {
                        for out in server.flush() {
                            send(connection, Message::Notification(out))?;
                        }
                        continue;
                    }
                    Err(_) => break,
                }
            };
            server.inbox.get_mut().note(&m);
            m
        };
        match msg {
            // A cancellation in its turn: the request it names was answered before it.
            Message::Notification(n) if cancel::is_cancel(&n) => server.inbox.get_mut().handled(&n),
            // After `shutdown`, requests are answered with an error, as LSP says, and the
            // server waits for `exit` (or the end of its input). `lsp-server`'s own handling
            // ended the server with status 2 on a request that came after it, leaving the
            // request unanswered.
            Message::Request(req) if server.shut_down => {
                let why = format!("`{}`: the server is shutting down (`shutdown` was received)", req.method);
                send(connection, Message::Response(Response::new_err(req.id, ErrorCode::InvalidRequest as i32, why)))?;
            }
            Message::Request(req) if req.method == lsp_types::request::Shutdown::METHOD => {
                server.shut_down = true;
                server.dirty.clear();
                send(connection, Message::Response(Response::new_ok(req.id, ())))?;
            }
            Message::Notification(n) if n.method == lsp_types::notification::Exit::METHOD => {
                return Ok(Ended::Exit { after_shutdown: server.shut_down });
            }
            Message::Notification(_) if server.shut_down => {}
            Message::Request(req) => {
                // A request sees every edit sent before it. A cancelled one is answered
                // `-32800`, at once or as soon as the work it started sees it.
                let id = req.id.clone();
                server.current = Some(id.clone());
                if !server.cancelled() {
                    for out in server.flush() {
                        send(connection, Message::Notification(out))?;
                    }
                }
                let resp = if server.cancelled() { None } else { Some(server.request(req)) };
                let resp = match resp {
                    Some(r) if !server.cancelled() => r,
                    _ => cancelled(id),
                };
                server.current = None;
                send(connection, Message::Response(resp))?;
            }
            Message::Notification(n) => {
                for out in server.notification(n) {
                    send(connection, Message::Notification(out))?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(Ended::Closed)
}

/// The answer to a request the client cancelled.
fn cancelled(id: RequestId) -> Response {
    Response::new_err(id, ErrorCode::RequestCanceled as i32, "the request was cancelled".to_string())
}

fn send(connection: &Connection, msg: Message) -> Result<(), String> {
    connection.sender.send(msg).map_err(|e| format!("the client is gone: {e}"))
}

/// The longest the server waits for more messages after an edit before analysing the file
/// (it waits as long as the last analysis took, up to this).
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(30);

/// About how many bytes the changes of one `didChange` may move and read (the text after
/// each change, the line before it): 1 GiB, a fraction of a second. Each change of a
/// message costs up to the document's length, so a 7 MB message of 100,000 changes of a
/// 1 MB document ran for minutes; past this budget the server stops following the
/// document. One change of the longest document (64 MiB) is a sixteenth of it.
pub(crate) const CHANGE_BUDGET_BYTES: u64 = 1 << 30;

/// An open document.
pub(crate) struct Doc {
    pub text: Text,
    pub version: i32,
    /// The file (canonical when it exists).
    pub path: PathBuf,
    /// The tool root and whether it was found (true) or assumed (false).
    pub root: (PathBuf, bool),
    /// The last check of the current text.
    pub checked: Option<CheckedTool>,
    /// The last model that could be read, for completion while the text is broken.
    pub last_tool: Option<Arc<ToolDef>>,
    /// The symbols of the last check's model, found on first use.
    pub occurrences: OnceCell<Vec<symbols::Occurrence>>,
    /// The current text as the analysis reads it (made once per version, at its check).
    pub source: Option<Arc<open_docs::Source>>,
    /// The files the steps of the last check call (for [`Server::callers`]).
    pub callees: Vec<PathBuf>,
    /// Why the server no longer follows the document's text (it is too long, or an edit
    /// cost too much): its text is dropped, ranged edits are ignored, and its one
    /// diagnostic says so, until the client sends the whole text again (a `didChange`
    /// without a range, or `didOpen` after `didClose`).
    pub lost: Option<String>,
}

impl Doc {
    /// Stops following the text: frees it and says why.
    fn lose(&mut self, why: String) {
        self.text = Text::new(String::new());
        self.source = None;
        self.lost = Some(why);
    }
}

fn too_long(len: usize, max: usize) -> String {
    format!(
        "the document would be {len} bytes, more than the {max} bytes the language server follows (a message's \
         limit, `tdsl lsp --max-message-bytes`): it is not checked; close it, or send its whole text again"
    )
}

/// The server's state: the open documents and what the client negotiated.
pub(crate) struct Server {
    pub(crate) encoding: Encoding,
    workspace: Vec<PathBuf>,
    /// `initializationOptions.root`.
    root: Option<PathBuf>,
    pub(crate) docs: BTreeMap<Url, Doc>,
    pub(crate) engine: Engine,
    extra: Option<ExtraCheck>,
    /// The open documents whose text changed since their last check.
    dirty: BTreeSet<Url>,
    /// How long the last [`Server::flush`] took.
    last_flush: Duration,
    /// The analyses and symbols that newer ones replaced, to free when the server is idle.
    retired: Vec<(Option<CheckedTool>, OnceCell<Vec<symbols::Occurrence>>)>,
    /// The longest document followed (see [`serve_with`]).
    max_document: usize,
    /// Whether `shutdown` was received.
    shut_down: bool,
    /// The messages read ahead of their turn, and the requests they cancel.
    inbox: RefCell<cancel::Inbox>,
    /// The request being handled.
    current: Option<RequestId>,
    /// The files on disk requests read, loaded.
    disk: RefCell<features::DiskFiles>,
}

impl Server {
    /// A server for a client that sent `params`.
    pub(crate) fn new(params: &InitializeParams, extra: Option<ExtraCheck>) -> Server {
        let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_ref());
        let encoding = if offered.is_some_and(|e| e.contains(&PositionEncodingKind::UTF8)) {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        let mut workspace: Vec<PathBuf> =
            params.workspace_folders.iter().flatten().filter_map(|f| f.uri.to_file_path().ok()).collect();
        #[allow(deprecated)]
        if workspace.is_empty() {
            if let Some(p) = params.root_uri.as_ref().and_then(|u| u.to_file_path().ok()) {
                workspace.push(p);
            }
        }
        let workspace = workspace.into_iter().map(|p| std::fs::canonicalize(&p).unwrap_or(p)).collect();
        let root = params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("root"))
            .and_then(serde_json::Value::as_str)
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| PathBuf::from(r)));
        Server {
            encoding,
            workspace,
            root,
            docs: BTreeMap::new(),
            engine: Engine::new(),
            extra,
            dirty: BTreeSet::new(),
            last_flush: Duration::ZERO,
            retired: Vec::new(),
            max_document: framing::DEFAULT_MAX_MESSAGE_BYTES,
            shut_down: false,
            inbox: RefCell::new(cancel::Inbox::default()),
            current: None,
            disk: RefCell::default(),
        }
    }

    /// Whether the client cancelled the request being handled, or a `shutdown` (or `exit`)
    /// waits behind it: long work asks as it goes, and stops early when it is (a request's
    /// answer is then `-32800`, whatever it found; the files left are not analysed).
    pub(crate) fn cancelled(&self) -> bool {
        self.inbox
            .try_borrow_mut()
            .is_ok_and(|mut inbox| inbox.ending() || self.current.as_ref().is_some_and(|id| inbox.cancelled(id)))
    }

    /// What the server can do.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            position_encoding: Some(match self.encoding {
                Encoding::Utf8 => PositionEncodingKind::UTF8,
                Encoding::Utf16 => PositionEncodingKind::UTF16,
            }),
            text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::INCREMENTAL)),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            references_provider: Some(OneOf::Left(true)),
            rename_provider: Some(OneOf::Left(true)),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some([":", ".", "\"", "(", ",", "="].iter().map(|s| s.to_string()).collect()),
                ..CompletionOptions::default()
            }),
            code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
            ..ServerCapabilities::default()
        }
    }

    /// Answers a request.
    pub(crate) fn request(&mut self, req: Request) -> Response {
        use lsp_types::request::*;
        let id = req.id.clone();
        let result = match req.method.as_str() {
            HoverRequest::METHOD => parse(req).map(|p| to_json(hover::hover(self, &p))),
            GotoDefinition::METHOD => parse(req).map(|p| to_json(features::definition(self, &p))),
            References::METHOD => parse(req).map(|p| to_json(features::references(self, &p))),
            Rename::METHOD => parse(req).and_then(|p| features::rename(self, &p).map(to_json)),
            Completion::METHOD => parse(req).map(|p| to_json(completion::completion(self, &p))),
            CodeActionRequest::METHOD => parse(req).map(|p| to_json(actions::code_actions(self, &p))),
            _ => Err((ErrorCode::MethodNotFound, format!("`{}` is not supported", req.method))),
        };
        match result {
            Ok(v) => Response::new_ok(id, v),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        }
    }

    /// Handles a notification; returns the notifications to send now. An opened or
    /// changed file is analysed by [`Server::flush`].
    pub(crate) fn notification(&mut self, n: Notification) -> Vec<Notification> {
        use lsp_types::notification::*;
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                let uri = p.text_document.uri;
                let path = uri.to_file_path().unwrap_or_else(|()| PathBuf::from(uri.path()));
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                let root = self.root_for(&path);
                let len = p.text_document.text.len();
                let mut doc = Doc {
                    text: Text::new(p.text_document.text),
                    version: p.text_document.version,
                    path,
                    root,
                    checked: None,
                    last_tool: None,
                    occurrences: OnceCell::new(),
                    source: None,
                    callees: Vec::new(),
                    lost: None,
                };
                if len > self.max_document {
                    doc.lose(too_long(len, self.max_document));
                }
                self.docs.insert(uri.clone(), doc);
                self.dirty.insert(uri);
                Vec::new()
            }
            DidChangeTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                let uri = p.text_document.uri;
                let (enc, max) = (self.encoding, self.max_document);
                let Some(doc) = self.docs.get_mut(&uri) else { return Vec::new() };
                let mut spent = 0u64;
                for c in &p.content_changes {
                    if doc.lost.is_some() && c.range.is_some() {
                        continue;
                    }
                    if spent > CHANGE_BUDGET_BYTES {
                        doc.lose(format!(
                            "one `didChange` of {} changes cost more than {CHANGE_BUDGET_BYTES} bytes of work to \
                             apply: the language server stopped following the document; close it, or send its \
                             whole text again",
                            p.content_changes.len()
                        ));
                        continue;
                    }
                    doc.source = None;
                    match doc.text.apply(c, enc, max) {
                        Ok(cost) => {
                            spent = spent.saturating_add(cost);
                            if c.range.is_none() {
                                doc.lost = None;
                            }
                        }
                        Err(len) => doc.lose(too_long(len, max)),
                    }
                }
                doc.version = p.text_document.version;
                self.dirty.insert(uri);
                Vec::new()
            }
            DidCloseTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                // Its diagnostics go with it; its callers now read the file from disk.
                let callers = self.callers(&p.text_document.uri);
                self.docs.remove(&p.text_document.uri);
                self.dirty.remove(&p.text_document.uri);
                self.dirty.extend(callers);
                vec![publish(p.text_document.uri.clone(), Vec::new(), None)]
            }
            DidSaveTextDocument::METHOD => Vec::new(),
            _ => Vec::new(),
        }
    }

    /// Analyses the latest text of every file changed since its last check, then the open
    /// files that call them; returns their diagnostics to publish.
    pub(crate) fn flush(&mut self) -> Vec<Notification> {
        let dirty = std::mem::take(&mut self.dirty);
        if dirty.is_empty() {
            return Vec::new();
        }
        let started = std::time::Instant::now();
        let mut todo: Vec<Url> = dirty.iter().filter(|u| self.docs.contains_key(*u)).cloned().collect();
        let mut queued: BTreeSet<Url> = todo.iter().cloned().collect();
        for uri in &dirty {
            for c in self.callers(uri) {
                if queued.insert(c.clone()) {
                    todo.push(c);
                }
            }
        }
        // Each text is made into the analysis's source once a version.
        for d in self.docs.values_mut().filter(|d| d.source.is_none() && d.lost.is_none()) {
            d.source = Some(open_docs::Source::new(d.text.as_str()));
        }
        // A cancelled request needs no analysis: the files left are analysed later.
        let mut out = Vec::new();
        for (n, u) in todo.iter().enumerate() {
            if self.cancelled() {
                self.dirty.extend(todo[n..].iter().cloned());
                break;
            }
            match self.check(u) {
                Some(published) => out.push(published),
                // Cancelled within the file: it and the files left are analysed later.
                None => {
                    self.dirty.extend(todo[n..].iter().cloned());
                    break;
                }
            }
        }
        self.last_flush = started.elapsed();
        out
    }

    /// The open files that call `uri`.
    fn callers(&self, uri: &Url) -> Vec<Url> {
        let Some(changed) = self.docs.get(uri).map(|d| d.path.clone()) else { return Vec::new() };
        self.docs.iter().filter(|(u, d)| *u != uri && d.callees.contains(&changed)).map(|(u, _)| u.clone()).collect()
    }

    /// The tool root for a file: `initializationOptions.root`, the nearest folder with
    /// [`ROOT_MARKER`], else the
    /// workspace folder holding it (found: true), else its own folder (assumed: false).
    pub(crate) fn root_for(&self, path: &Path) -> (PathBuf, bool) {
        if let Some(r) = &self.root {
            return (r.clone(), true);
        }
        for dir in path.ancestors().skip(1) {
            if dir.join(ROOT_MARKER).is_file() {
                return (dir.to_path_buf(), true);
            }
        }
        if let Some(w) = self.workspace.iter().filter(|w| path.starts_with(w)).max_by_key(|w| w.as_os_str().len()) {
            return (w.clone(), true);
        }
        (path.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf), false)
    }

    /// Checks one open document against its root (open documents stand for their files)
    /// and returns its diagnostics to publish; `None` when the request being handled was
    /// cancelled during the analysis, which then stopped partway (`crate::types::stop`)
    /// and is not kept.
    fn check(&mut self, uri: &Url) -> Option<Notification> {
        let Some(doc) = self.docs.get(uri) else { return Some(publish(uri.clone(), Vec::new(), None)) };
        if let Some(why) = &doc.lost {
            let lost = lsp_types::Diagnostic {
                severity: Some(DiagnosticSeverity::ERROR),
                source: Some("tdsl".to_string()),
                message: why.clone(),
                ..lsp_types::Diagnostic::default()
            };
            let version = doc.version;
            if let Some(doc) = self.docs.get_mut(uri) {
                let old = (doc.checked.take(), std::mem::take(&mut doc.occurrences));
                doc.last_tool = None;
                self.retired.push(old);
            }
            return Some(publish(uri.clone(), vec![lost], Some(version)));
        }
        let (dir, given) = &doc.root;
        let root = if *given { ToolRoot::new(dir) } else { ToolRoot::assumed(dir) };
        // The other open documents stand for their files, read when a step reaches them.
        let open = open_docs::OpenDocs {
            dir: dir.clone(),
            docs: self
                .docs
                .iter()
                .filter(|(u, _)| *u != uri)
                .filter_map(|(_, d)| Some((d.path.clone(), d.source.clone()?)))
                .collect(),
        };
        let root = root.with_named(Arc::new(open));
        let name = root.tool_path_of(&doc.path).unwrap_or_else(|| doc.path.display().to_string());
        let source: Arc<str> = match &doc.source {
            Some(s) => s.text.clone(),
            None => Arc::from(doc.text.as_str()),
        };
        let mut analyzer = Analyzer::with_engine(root, self.engine.clone());
        // The analysis asks the inbox whether the request being handled was cancelled.
        let inbox = std::rc::Rc::new(std::mem::take(&mut self.inbox));
        // A `shutdown` stops it too, whether a request or a pause in the edits started it.
        let poll: crate::types::stop::Poll = {
            let (inbox, current) = (inbox.clone(), self.current.clone());
            Box::new(move || {
                let stop = inbox
                    .try_borrow_mut()
                    .is_ok_and(|mut i| i.ending() || current.as_ref().is_some_and(|id| i.cancelled(id)));
                stop.then_some(crate::runtime::InterruptReason::Cancelled)
            })
        };
        let checked = crate::types::stop::scope(poll, || analyzer.check_text(name, source, Some(doc.path.clone())));
        self.inbox = match std::rc::Rc::try_unwrap(inbox) {
            Ok(inbox) => inbox,
            Err(shared) => std::cell::RefCell::new(
                shared.try_borrow_mut().map(|mut i| std::mem::take(&mut *i)).unwrap_or_default(),
            ),
        };
        let mut checked = checked.ok()?;
        if let Some(extra) = self.extra {
            extra(&mut checked);
        }
        let diagnostics = checked.diagnostics.iter().map(|d| self.to_lsp(uri, &doc.text, d)).collect();
        let version = doc.version;
        let Some(doc) = self.docs.get_mut(uri) else { return Some(publish(uri.clone(), Vec::new(), None)) };
        if let Some(t) = &checked.tool {
            doc.last_tool = Some(t.clone());
        }
        let resolver = symbols::Resolver { root: &doc.root.0 };
        let mut callees: Vec<PathBuf> = checked
            .tool
            .iter()
            .flat_map(|t| t.instructions().iter().filter_map(|i| i.tool_path()))
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .filter_map(|p| resolver.file(p))
            .collect();
        callees.sort();
        callees.dedup();
        doc.callees = callees;
        let old = (doc.checked.replace(checked), std::mem::take(&mut doc.occurrences));
        self.retired.push(old);
        Some(publish(uri.clone(), diagnostics, Some(version)))
    }

    /// A diagnostic as LSP says it: secondary labels and the help line as related
    /// information, the help also in `data` for code actions.
    pub(crate) fn to_lsp(&self, uri: &Url, text: &Text, d: &Diagnostic) -> lsp_types::Diagnostic {
        let enc = self.encoding;
        let mut related: Vec<DiagnosticRelatedInformation> = d
            .secondary
            .iter()
            .map(|l| DiagnosticRelatedInformation {
                location: Location { uri: uri.clone(), range: text.range(l.span, enc) },
                message: if l.message.is_empty() { "here".to_string() } else { l.message.clone() },
            })
            .collect();
        if let Some(h) = &d.help {
            related.push(DiagnosticRelatedInformation {
                location: Location { uri: uri.clone(), range: text.range(d.span, enc) },
                message: format!("help: {h}"),
            });
        }
        lsp_types::Diagnostic {
            range: text.range(d.span, enc),
            severity: Some(match d.severity() {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.as_str().to_string())),
            source: Some("tdsl".to_string()),
            message: d.message.clone(),
            related_information: (!related.is_empty()).then_some(related),
            data: d.help.as_ref().map(|h| serde_json::json!({ "help": h })),
            ..lsp_types::Diagnostic::default()
        }
    }
}

fn publish(uri: Url, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) -> Notification {
    Notification::new(
        lsp_types::notification::PublishDiagnostics::METHOD.to_string(),
        PublishDiagnosticsParams { uri, diagnostics, version },
    )
}

type Failure = (ErrorCode, String);

fn parse<P: serde::de::DeserializeOwned>(req: Request) -> Result<P, Failure> {
    serde_json::from_value(req.params)
        .map_err(|e| (ErrorCode::InvalidParams, format!("`{}`: invalid parameters: {e}", req.method)))
}

fn to_json<T: serde::Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server with one file opened and not yet analysed, whose inbox reads `arrived`.
    fn opened(arrived: Vec<Message>) -> Server {
        let mut server = Server::new(&InitializeParams::default(), None);
        let mut arrived: std::collections::VecDeque<Message> = arrived.into();
        server.inbox = RefCell::new(cancel::Inbox::new(Box::new(move || arrived.pop_front())));
        let text =
            r#"{"instructions": [{"execution_id": "s", "transform_responses": {"transforms": {"x": "1 + 2"}}}]}"#;
        let open = serde_json::json!({"textDocument": {"uri": "file:///r/main.tool", "languageId": "json", "version": 1, "text": text}});
        let published = server.notification(Notification::new(
            <lsp_types::notification::DidOpenTextDocument as lsp_types::notification::Notification>::METHOD.to_string(),
            open,
        ));
        assert!(published.is_empty() && server.dirty.len() == 1);
        server
    }

    /// A `shutdown` that has arrived stops the analysis of the files changed (a pause in the
    /// edits starts it, no request): nothing is published, the file stays to analyse, and the
    /// main loop reaches the `shutdown` at once (it waited for the whole analysis: minutes
    /// for a large file). Without it, the file is analysed and published. The order of the
    /// messages, not the analysis's speed, decides it.
    #[test]
    fn a_shutdown_waiting_stops_the_analysis() {
        let shutdown = || {
            Message::Request(lsp_server::Request::new(
                RequestId::from(7),
                <lsp_types::request::Shutdown as lsp_types::request::Request>::METHOD.to_string(),
                serde_json::Value::Null,
            ))
        };
        let mut server = opened(vec![shutdown()]);
        assert!(server.flush().is_empty(), "nothing is published");
        assert_eq!(server.dirty.len(), 1, "the file is left to analyse");
        assert!(matches!(server.inbox.get_mut().pop(), Some(Message::Request(r)) if r.method == "shutdown"));
        let exit = Message::Notification(Notification::new("exit".to_string(), serde_json::Value::Null));
        assert!(opened(vec![exit]).flush().is_empty());
        let mut server = opened(Vec::new());
        assert_eq!(server.flush().len(), 1, "without a shutdown, the file is analysed");
        assert!(server.dirty.is_empty());
    }
}
