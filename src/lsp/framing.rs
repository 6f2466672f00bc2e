//! Our own `Content-Length` framing on standard input and output, in front of
//! `lsp-server`, so that no input ends the server (issue 28).
//!
//! `lsp-server`'s reader allocates the whole declared length before a byte arrives (an
//! absurd `Content-Length` aborts the process) and ends the connection on any frame it
//! cannot read. This reader instead:
//!
//! - never allocates ahead of the bytes that arrived, and holds at most
//!   [`DEFAULT_MAX_MESSAGE_BYTES`] (64 MiB; `tdsl lsp --max-message-bytes N`) of one
//!   message: a longer one is read through and dropped, and answered `-32600`;
//! - reads a body to the end of its JSON value, so a `Content-Length` longer than the
//!   message does not swallow the next one (a body that is a whole JSON value followed by
//!   the next header is read as a message), and one shorter than the message leaves the
//!   rest to be skipped;
//! - accepts LF-only line ends and header names in any case, and ignores other headers;
//! - answers what can be answered, with the request's `id` when it can be read from the
//!   body (else `null`): a body that is not JSON (also invalid UTF-8, or nested deeper than
//!   128) `-32700`; JSON that is not a JSON-RPC message (`null`, a list, no `method`…), a
//!   missing, negative or non-numeric `Content-Length`, a message over the limit `-32600`;
//! - skips what cannot be answered (bytes that are no frame) up to the next
//!   `Content-Length:` header, and keeps serving.
//!
//! Each problem is also said on standard error. Docs: `docs/editors.md`.

// The framing serves `tdsl lsp` (the `cli` feature); with `lsp` alone it is compiled, unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code))]

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use lsp_server::{Connection, Message};
use serde_json::{json, Value as Json};

/// The longest message the server holds by default: 64 MiB (a 40,000-step composite is
/// about 8 MB, and `didOpen` sends it whole, escaped).
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How much of a message over the limit is kept to find its `id`.
const ID_PREFIX_BYTES: usize = 64 * 1024;
/// The longest header name and value read.
const MAX_HEADER_NAME: usize = 256;
const MAX_HEADER_VALUE: usize = 1024;
/// The header this reader looks for, lower case.
const CONTENT_LENGTH: &[u8] = b"content-length:";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// One thing read from the input.
#[derive(Debug)]
pub(crate) enum Read {
    /// A message for the server.
    Message(Message),
    /// An error response to write as it is (its `id` may be `null`).
    Answer(Json),
    /// Bytes that were skipped, and why (nothing to answer).
    Skipped(String),
}

/// Reads frames from `input` with a cap of `max` bytes per message.
pub(crate) struct Reader<R> {
    input: R,
    max: usize,
    /// A header line already read while skipping (the value of a `Content-Length:` found
    /// in the middle of other bytes), to start the next header block with.
    found_length: Option<Vec<u8>>,
}

/// How a body ended.
enum End {
    /// Its JSON value is complete.
    Complete,
    /// Its declared length was read.
    Exhausted,
    /// A `Content-Length:` header started inside it (the value of that header line).
    Cut(Vec<u8>),
    /// The input ended.
    Eof,
}

/// A body as read: the bytes held (at most the limit, or a prefix when over it).
struct Body {
    bytes: Vec<u8>,
    len: u64,
    end: End,
}

fn error(id: Json, code: i64, message: String) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl<R: BufRead> Reader<R> {
    /// A reader of `input`.
    pub(crate) fn new(input: R, max: usize) -> Reader<R> {
        Reader { input, max: max.max(1), found_length: None }
    }

    /// The next thing read; `None` at the end of the input.
    pub(crate) fn read_next(&mut self) -> io::Result<Option<Read>> {
        let first = self.found_length.take();
        let length: Option<Result<u64, String>> = match first {
            Some(value) => match self.headers(Some(value))? {
                Headers::Eof => return Ok(None),
                Headers::Garbage(why) => return self.skip(why),
                Headers::Block(l) => l,
            },
            None => {
                // Whitespace between frames is nothing; a JSON body without headers is a
                // message without `Content-Length`.
                loop {
                    let buf = self.input.fill_buf()?;
                    let Some(&b) = buf.first() else { return Ok(None) };
                    if b.is_ascii_whitespace() {
                        self.input.consume(1);
                        continue;
                    }
                    break;
                }
                let b = self.input.fill_buf()?.first().copied();
                if matches!(b, Some(b'{' | b'[')) {
                    Some(Err("no `Content-Length` header".to_string()))
                } else {
                    match self.headers(None)? {
                        Headers::Eof => return Ok(None),
                        Headers::Garbage(why) => return self.skip(why),
                        Headers::Block(l) => l.or_else(|| Some(Err("no `Content-Length` header".to_string()))),
                    }
                }
            }
        };
        let declared = match &length {
            Some(Ok(n)) => Some(*n),
            _ => None,
        };
        let body = self.body(declared, true)?;
        let read = self.judge(body, length);
        Ok(Some(read))
    }

    /// Skips bytes up to the next `Content-Length:` header, and says so.
    fn skip(&mut self, why: String) -> io::Result<Option<Read>> {
        let body = self.body(None, false)?;
        let skipped = body.len;
        match body.end {
            End::Cut(value) => self.found_length = Some(value),
            End::Eof | End::Complete | End::Exhausted => {}
        }
        Ok(Some(Read::Skipped(format!("{why}; skipped {skipped} bytes to the next `Content-Length` header"))))
    }

    /// What to do with a body read under a header block whose length was `length`.
    fn judge(&mut self, body: Body, length: Option<Result<u64, String>>) -> Read {
        let oversized = body.len > self.max as u64;
        if let End::Cut(value) = &body.end {
            self.found_length = Some(value.clone());
        }
        if matches!(body.end, End::Eof) && body.len == 0 {
            return Read::Skipped("the input ended in a header".to_string());
        }
        if oversized {
            return Read::Answer(error(
                recover_id(&body.bytes),
                INVALID_REQUEST,
                format!(
                    "the message ({} bytes) is longer than the server's limit of {} bytes \
                     (`tdsl lsp --max-message-bytes`); it was skipped",
                    body.len, self.max
                ),
            ));
        }
        if let End::Cut(_) = body.end {
            return Read::Answer(error(
                recover_id(&body.bytes),
                PARSE_ERROR,
                format!(
                    "parse error: the message ends after {} bytes, before its JSON does, where the next \
                     `Content-Length` header starts",
                    body.len
                ),
            ));
        }
        if let Some(Err(why)) = length {
            let id = match serde_json::from_slice::<Json>(&body.bytes) {
                Ok(v) => v.get("id").filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Json::Null),
                Err(_) => recover_id(&body.bytes),
            };
            return Read::Answer(error(
                id,
                INVALID_REQUEST,
                format!("invalid request: {why}; the message was skipped"),
            ));
        }
        if let Err(e) = std::str::from_utf8(&body.bytes) {
            return Read::Answer(error(
                recover_id(&body.bytes),
                PARSE_ERROR,
                format!("parse error: the message is not UTF-8 (invalid byte at offset {})", e.valid_up_to()),
            ));
        }
        let v: Json = match serde_json::from_slice(&body.bytes) {
            Ok(v) => v,
            Err(e) => return Read::Answer(error(recover_id(&body.bytes), PARSE_ERROR, format!("parse error: {e}"))),
        };
        let id = v.get("id").filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Json::Null);
        if !v.is_object() {
            return Read::Answer(error(
                Json::Null,
                INVALID_REQUEST,
                "invalid request: a JSON-RPC message is an object".to_string(),
            ));
        }
        let has_id = v.get("id").is_some();
        match serde_json::from_value::<Message>(v) {
            // What has an `id` is no notification (`lsp-server` would take a request whose
            // `id` it cannot read for one, and never answer it).
            Ok(Message::Notification(_)) if has_id => Read::Answer(error(
                id,
                INVALID_REQUEST,
                "invalid request: `id` must be a 32-bit integer or a string".to_string(),
            )),
            Ok(m) => Read::Message(m),
            Err(e) => Read::Answer(error(id, INVALID_REQUEST, format!("invalid request: {e}"))),
        }
    }

    /// Reads a header block up to its empty line: the `Content-Length` (its value, or why
    /// it cannot be read). `first`: the value of a `Content-Length:` line already read.
    fn headers(&mut self, first: Option<Vec<u8>>) -> io::Result<Headers> {
        let mut length: Option<Result<u64, String>> = first.map(|v| parse_length(&v));
        let mut lines = 0;
        loop {
            // The line's first byte: the end of the block, or a header name.
            let Some(b) = self.peek()? else { return Ok(Headers::Eof) };
            if b == b'\r' || b == b'\n' {
                self.input.consume(1);
                if b == b'\r' && self.peek()? == Some(b'\n') {
                    self.input.consume(1);
                }
                return Ok(Headers::Block(length));
            }
            lines += 1;
            if lines > 32 {
                return Ok(Headers::Garbage("too many header lines".to_string()));
            }
            let mut name = Vec::new();
            loop {
                let Some(b) = self.peek()? else { return Ok(Headers::Eof) };
                if b == b':' {
                    self.input.consume(1);
                    break;
                }
                if !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_') || name.len() >= MAX_HEADER_NAME {
                    return Ok(Headers::Garbage("bytes that are not a header".to_string()));
                }
                name.push(b.to_ascii_lowercase());
                self.input.consume(1);
            }
            let value = self.line_rest()?;
            let Some(value) = value else { return Ok(Headers::Garbage("a header line too long".to_string())) };
            // Bytes glued before the name (the end of a message that lied about its length).
            if name.ends_with(&CONTENT_LENGTH[..CONTENT_LENGTH.len() - 1]) {
                length = Some(parse_length(&value));
            }
        }
    }

    /// The rest of a line (without its `\r\n` or `\n`); `None` when longer than a header
    /// value may be (the bytes read are dropped).
    fn line_rest(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        loop {
            let Some(b) = self.peek()? else { return Ok(Some(value)) };
            self.input.consume(1);
            if b == b'\n' {
                if value.last() == Some(&b'\r') {
                    value.pop();
                }
                return Ok(Some(value));
            }
            if value.len() >= MAX_HEADER_VALUE {
                return Ok(None);
            }
            value.push(b);
        }
    }

    fn peek(&mut self) -> io::Result<Option<u8>> {
        Ok(self.input.fill_buf()?.first().copied())
    }

    /// Reads a body: up to `declared` bytes, and no further than the end of its JSON value
    /// (`json`: whether a JSON value is expected; otherwise bytes are skipped) or the start
    /// of a `Content-Length:` header in it. Holds at most the limit.
    fn body(&mut self, declared: Option<u64>, json: bool) -> io::Result<Body> {
        let mut bytes = Vec::new();
        let mut len: u64 = 0;
        let mut scan = Scan::new(json);
        let hold = self.max;
        loop {
            if declared.is_some_and(|n| len >= n) {
                return Ok(Body { bytes, len, end: End::Exhausted });
            }
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                return Ok(Body { bytes, len, end: End::Eof });
            }
            let room = declared.map_or(buf.len(), |n| buf.len().min(usize::try_from(n - len).unwrap_or(usize::MAX)));
            let mut used = 0;
            let mut end = None;
            for &b in &buf[..room] {
                let step = scan.feed(b);
                if !matches!(step, Step::Done) {
                    used += 1;
                }
                match step {
                    Step::More => {}
                    Step::Done | Step::DoneWith => {
                        end = Some(Stop::Complete);
                        break;
                    }
                    Step::Header => {
                        end = Some(Stop::Header);
                        break;
                    }
                    Step::HeaderLine(v) => {
                        end = Some(Stop::HeaderLine(v));
                        break;
                    }
                }
            }
            let kept = if len as usize >= hold {
                // Over the limit: keep only a prefix to find the `id`.
                if bytes.len() > ID_PREFIX_BYTES {
                    bytes.truncate(ID_PREFIX_BYTES);
                    bytes.shrink_to_fit();
                }
                0
            } else {
                used.min(hold - len as usize)
            };
            bytes.extend_from_slice(&buf[..kept]);
            len += used as u64;
            self.input.consume(used);
            let (value, header_bytes) = match end {
                None => continue,
                Some(Stop::Header) => {
                    // `Content-Length:` outside a string: the header's value is the rest of
                    // this line.
                    (self.line_rest()?.unwrap_or_default(), CONTENT_LENGTH.len())
                }
                Some(Stop::HeaderLine(v)) => {
                    // Inside a string, the header line ended with `\r` or `\n`: eat the `\n`
                    // of a `\r\n`.
                    if self.peek()? == Some(b'\n') {
                        self.input.consume(1);
                    }
                    (v, scan.header_bytes)
                }
                Some(Stop::Complete) => {
                    // Whitespace that the declared length still covers belongs to this frame.
                    while declared.is_some_and(|n| len < n) {
                        match self.peek()? {
                            Some(b) if b.is_ascii_whitespace() => {
                                self.input.consume(1);
                                len += 1;
                            }
                            _ => break,
                        }
                    }
                    return Ok(Body { bytes, len, end: End::Complete });
                }
            };
            let keep = bytes.len().saturating_sub(header_bytes);
            bytes.truncate(keep);
            return Ok(Body { bytes, len: len.saturating_sub(header_bytes as u64), end: End::Cut(value) });
        }
    }
}

/// Why the bytes of a body stopped.
enum Stop {
    Complete,
    Header,
    HeaderLine(Vec<u8>),
}

enum Headers {
    /// The block ended: its `Content-Length` if any.
    Block(Option<Result<u64, String>>),
    /// Not a header block.
    Garbage(String),
    Eof,
}

fn parse_length(value: &[u8]) -> Result<u64, String> {
    let text = String::from_utf8_lossy(value);
    let text = text.trim();
    text.parse::<u64>().map_err(|_| {
        let shown: String = text.chars().take(40).collect();
        format!("the `Content-Length` header `{shown}` is not a length in bytes")
    })
}

/// What the scanner says about the byte fed.
enum Step {
    /// Part of the body.
    More,
    /// The value ended before this byte (not part of the body).
    Done,
    /// The value ended with this byte.
    DoneWith,
    /// This byte ends `Content-Length:` outside a JSON string.
    Header,
    /// Inside a string, a line `Content-Length: <value>` ended with this byte.
    HeaderLine(Vec<u8>),
}

/// Follows a JSON value byte by byte only as far as needed to see where it ends (depth,
/// strings, escapes), and watches for a `Content-Length:` header starting in it.
struct Scan {
    started: bool,
    depth: u64,
    in_string: bool,
    escaped: bool,
    /// A bare word (`null`, a number) at the top level.
    scalar: bool,
    /// Not a JSON value: only the header is looked for.
    garbage: bool,
    /// How much of `content-length:` the last bytes match.
    matched: usize,
    /// Inside a string after `Content-Length:`: the bytes of the header's value so far.
    header: Option<Vec<u8>>,
    /// How many bytes the header line took (to take them off the body).
    header_bytes: usize,
}

impl Scan {
    fn new(json: bool) -> Scan {
        Scan {
            started: false,
            depth: 0,
            in_string: false,
            escaped: false,
            scalar: false,
            garbage: !json,
            matched: 0,
            header: None,
            header_bytes: 0,
        }
    }

    fn feed(&mut self, b: u8) -> Step {
        // Looking for the header everywhere.
        let lower = b.to_ascii_lowercase();
        if lower == CONTENT_LENGTH[self.matched] {
            self.matched += 1;
        } else {
            self.matched = usize::from(lower == CONTENT_LENGTH[0]);
        }
        let header_found = self.matched == CONTENT_LENGTH.len();
        if header_found {
            self.matched = 0;
        }
        if let Some(h) = &mut self.header {
            self.header_bytes += 1;
            if b == b'\r' || b == b'\n' {
                let v = std::mem::take(h);
                self.header = None;
                return Step::HeaderLine(v);
            }
            if b == b'"' || h.len() > 64 {
                self.header = None;
            } else {
                h.push(b);
            }
        }
        if self.garbage || !self.in_string {
            if header_found {
                return Step::Header;
            }
        } else if header_found {
            self.header = Some(Vec::new());
            self.header_bytes = CONTENT_LENGTH.len();
        }
        if self.garbage {
            return Step::More;
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    return Step::DoneWith;
                }
            }
            return Step::More;
        }
        if self.scalar {
            if b.is_ascii_alphanumeric() && !b.is_ascii_uppercase() || matches!(b, b'.' | b'+' | b'-' | b'E') {
                return Step::More;
            }
            return Step::Done;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 && self.started {
                    return Step::DoneWith;
                }
            }
            _ if b.is_ascii_whitespace() => return Step::More,
            _ if self.depth == 0 && !self.started => {
                if b.is_ascii_alphanumeric() || b == b'-' {
                    self.scalar = true;
                } else {
                    self.garbage = true;
                }
            }
            _ => {}
        }
        self.started = true;
        Step::More
    }
}

/// The `id` of a message that may be cut short or broken, read from the top level of the
/// object without building it: a string or a number, `null` when there is none to read.
/// Iterative, so that deep nesting costs no stack.
pub(crate) fn recover_id(bytes: &[u8]) -> Json {
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // The end of the string starting at `i` (just past its closing quote).
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    ws(&mut i);
    if bytes.get(i) != Some(&b'{') {
        return Json::Null;
    }
    i += 1;
    loop {
        ws(&mut i);
        if bytes.get(i) != Some(&b'"') {
            return Json::Null;
        }
        let Some(key_end) = string_end(i) else { return Json::Null };
        let key = &bytes[i..key_end];
        i = key_end;
        ws(&mut i);
        if bytes.get(i) != Some(&b':') {
            return Json::Null;
        }
        i += 1;
        ws(&mut i);
        // The value: skipped by depth.
        let start = i;
        let mut depth = 0u64;
        loop {
            let Some(&b) = bytes.get(i) else { return Json::Null };
            match b {
                b'"' => {
                    let Some(e) = string_end(i) else { return Json::Null };
                    i = e;
                }
                b'{' | b'[' => {
                    depth += 1;
                    i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    i += 1;
                }
                b',' | b'}' | b']' if depth == 0 => break,
                _ => i += 1,
            }
            if depth == 0 && bytes.get(i).is_some_and(|b| matches!(b, b',' | b'}')) {
                break;
            }
        }
        if key == b"\"id\"" {
            let v: Option<Json> = bytes.get(start..i).and_then(|s| serde_json::from_slice(s).ok());
            return v.filter(|v| v.is_string() || v.is_number()).unwrap_or(Json::Null);
        }
        ws(&mut i);
        if bytes.get(i) != Some(&b',') {
            return Json::Null;
        }
        i += 1;
    }
}

/// Writes one message with its `Content-Length` header.
pub(crate) fn write_frame(out: &mut dyn Write, body: &[u8]) -> io::Result<()> {
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body)?;
    out.flush()
}

/// The reader and writer threads of [`stdio`].
pub(crate) struct IoThreads {
    reader: JoinHandle<io::Result<()>>,
    writer: JoinHandle<io::Result<()>>,
}

impl IoThreads {
    /// Waits for both threads (the reader ends after `exit` or at the end of the input).
    pub(crate) fn join(self) -> io::Result<()> {
        let r = self.reader.join().map_err(|_| io::Error::other("the reader thread panicked"))?;
        let w = self.writer.join().map_err(|_| io::Error::other("the writer thread panicked"))?;
        r.and(w)
    }
}

/// A connection on standard input and output through this framing.
pub(crate) fn stdio(max: usize) -> (Connection, IoThreads) {
    let (server, io) = Connection::memory();
    let out: Arc<Mutex<io::Stdout>> = Arc::new(Mutex::new(io::stdout()));
    let to_client = io.receiver;
    let writer_out = out.clone();
    let writer = std::thread::spawn(move || -> io::Result<()> {
        for m in to_client {
            let body = serde_json::to_vec(&m).map_err(io::Error::other)?;
            let mut o = writer_out.lock().map_err(|_| io::Error::other("stdout lock poisoned"))?;
            write_frame(&mut *o, &body)?;
        }
        Ok(())
    });
    let to_server = io.sender;
    let reader = std::thread::spawn(move || -> io::Result<()> {
        let stdin = io::stdin();
        let mut reader = Reader::new(stdin.lock(), max);
        while let Some(read) = reader.read_next()? {
            match read {
                Read::Message(m) => {
                    let exit = matches!(&m, Message::Notification(n) if n.method == "exit");
                    if to_server.send(m).is_err() || exit {
                        break;
                    }
                }
                Read::Answer(a) => {
                    eprintln!("tdsl lsp: {}", a["error"]["message"].as_str().unwrap_or("a malformed message"));
                    let body = serde_json::to_vec(&a).map_err(io::Error::other)?;
                    let mut o = out.lock().map_err(|_| io::Error::other("stdout lock poisoned"))?;
                    write_frame(&mut *o, &body)?;
                }
                Read::Skipped(why) => eprintln!("tdsl lsp: {why}"),
            }
        }
        Ok(())
    });
    (server, IoThreads { reader, writer })
}
