//! Large answers written once, as text, and spliced into what goes out.
//!
//! rmcp's `CallToolResult` holds `structuredContent` as a `serde_json::Value` and the text
//! block as a `String`: an answer built that way costs a tree of `Value`s (about 80 bytes a
//! JSON array of one element: a 24 MiB result of nested `[1]`s held 2.7 GB). A large answer
//! is written instead as compact JSON straight from tdsl's values (the caller does that), and
//! rmcp is handed *marks* in its place: two short strings, one standing for the text as a
//! JSON string and one for the text as the JSON value itself. The output — the stdio writer
//! ([`super::pumps::write_output`], as each line is written), the HTTP front's body
//! ([`super::http`]) — replaces each quoted mark by what it stands for as the message goes
//! out ([`splice`]; over HTTP in slices taken from the text as the connection has room for
//! them, [`Sliced`]). What is held is the text once; what is sent is the message as before,
//! byte for byte.
//!
//! A mark carries a random key of this process (the text cannot be forged by a client, whose
//! values are written escaped but may hold anything), and each answer's text is taken out
//! when a message's first mark of it is spliced (its other mark, in the same message, is
//! written from that text: both or neither, whatever happens to the texts held meanwhile);
//! written in slices, it is claimed by the message instead, held and counted until its last
//! slice is written, and a message whose text is forgotten meanwhile is cut ([`Sliced`]).
//! An answer its call lets go (cancelled, or answered in its place, before its run came back;
//! its request cancelled as it came back) is forgotten then ([`forget`]). One rmcp drops
//! otherwise is forgotten [`KEPT_FOR`] after it was made, or [`ORPHAN_KEPT_FOR`] after its
//! HTTP response was found gone ([`Stream`]). A mark found with no text (an HTTP event
//! replayed after its answer went out) is written as `null` or as a sentence saying so, so
//! that the message stays JSON.
//!
//! Answers of less than [`SPLICED_FROM`] bytes are built as JSON values as before: the marks
//! are for the answers whose tree costs.
//!
//! The texts held are bounded in bytes, all answers together ([`set_max_held`], `serve
//! --max-answer-bytes-held`): an answer whose text would pass the bound makes room by
//! forgetting the texts held the longest (their marks are then written as the sentence
//! [`GONE`] and `null`, the message still JSON), and one whose text alone is larger than the
//! bound is not held: its call answers the tool error `E0818` instead. A text is held only
//! from its answer's making to its writing, a moment for an answer that goes out: the texts
//! held the longest are those of answers nobody will write (a request cancelled as it was
//! answered, an HTTP client gone before its answer — docs/security.md, "Hostile round 14").

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

/// Answers whose text is at least this long are spliced; shorter ones are built as values.
pub(crate) const SPLICED_FROM: usize = 64 * 1024;

/// How long a text waits for its answer to be written before it is forgotten.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// What a text mark stands for when its text was already taken or forgotten.
const GONE: &str =
    "(this answer is not kept: it was sent once, or it waited too long to be sent and was let go; call the tool again)";

/// The default of [`set_max_held`] for a library host: 512 MiB, a quarter of `serve`'s
/// memory of the runs in flight ([`crate::ranges::SERVE_MEMORY_IN_FLIGHT`]). `serve` sets its
/// own ([`default_max_held`]).
pub(crate) const DEFAULT_MAX_HELD: usize = 512 << 20;

/// The most bytes of texts held at once, all answers together ([`set_max_held`]).
static MAX_HELD: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_HELD);

/// Bounds the bytes of the texts held at once, all answers of this process together (`serve
/// --max-answer-bytes-held`): past it, the texts held the longest are forgotten to make
/// room; a text alone larger than it is not held (its call answers `E0818`).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn set_max_held(bytes: usize) {
    MAX_HELD.store(bytes, Ordering::Relaxed);
}

/// `serve`'s bound when `--max-answer-bytes-held` is not given: a quarter of the memory of
/// the runs in flight (`--max-memory-in-flight`), and at least the largest result
/// (`--max-result-bytes`), so that one answer of every size a run may give can be held.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn default_max_held(memory_in_flight: u64, max_result_bytes: usize) -> usize {
    usize::try_from(memory_in_flight / 4).unwrap_or(usize::MAX).max(max_result_bytes)
}

struct Text {
    text: String,
    made: Instant,
    /// When the HTTP response it was to go out on was found gone ([`Stream`]).
    orphaned: Option<Instant>,
    /// A message is being written from it, slice by slice ([`Sliced`]): no other message
    /// writes it, and it is not let go for its age (only to make room, which cuts that
    /// message).
    writing: bool,
    /// The bytes of [`super::making`]'s budget it holds until it is let go (written,
    /// forgotten or past its time): for the answers outside `--max-calls`.
    _ticket: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The texts held, by number: the oldest first (numbers grow as they are made).
#[derive(Default)]
struct Texts {
    /// The number of the last text made.
    last: u64,
    held: BTreeMap<u64, Text>,
    /// The bytes of the texts in `held`.
    bytes: usize,
    /// Texts forgotten to make room, since the last warning about them: their count and
    /// bytes ([`Texts::hold`]).
    forgotten: (u64, usize),
    /// When the operator was last told that texts were forgotten to make room.
    warned: Option<Instant>,
}

/// A text not held: alone, it is larger than the bound.
#[derive(Debug, PartialEq)]
struct TooLarge {
    len: usize,
    max: usize,
}

impl Texts {
    /// Holds `text`: its number. The texts past their time are let
    /// go first ([`KEPT_FOR`], [`ORPHAN_KEPT_FOR`]); then, while the bytes held and `text`'s
    /// would pass `max`, the orphaned texts, then the others, each the oldest first.
    fn hold(&mut self, text: String, now: Instant, max: usize) -> Result<u64, TooLarge> {
        self.hold_with(text, None, now, max)
    }

    /// [`Texts::hold`], the text holding `ticket` until it is let go.
    fn hold_with(
        &mut self,
        text: String,
        ticket: Option<tokio::sync::OwnedSemaphorePermit>,
        now: Instant,
        max: usize,
    ) -> Result<u64, TooLarge> {
        if text.len() > max {
            return Err(TooLarge { len: text.len(), max });
        }
        self.let_go_expired(now);
        if self.bytes + text.len() > max {
            let orphaned = |t: &Text| t.orphaned.is_some();
            let order: Vec<u64> = (self.held.iter().filter(|(_, t)| orphaned(t)))
                .chain(self.held.iter().filter(|(_, t)| !orphaned(t)))
                .map(|(n, _)| *n)
                .collect();
            for n in order {
                if self.bytes + text.len() <= max {
                    break;
                }
                let len = self.remove(n);
                self.forgotten.0 += 1;
                self.forgotten.1 += len;
            }
        }
        self.last += 1;
        self.bytes += text.len();
        self.held.insert(self.last, Text { text, made: now, orphaned: None, writing: false, _ticket: ticket });
        Ok(self.last)
    }

    /// Lets go the texts past their time: held [`KEPT_FOR`], or orphaned [`ORPHAN_KEPT_FOR`]
    /// ago, and not being written.
    fn let_go_expired(&mut self, now: Instant) {
        let mut freed = 0;
        self.held.retain(|_, t| {
            let kept = t.writing
                || now.duration_since(t.made) < KEPT_FOR
                    && t.orphaned.is_none_or(|o| now.duration_since(o) < ORPHAN_KEPT_FOR);
            if !kept {
                freed += t.text.len();
            }
            kept
        });
        self.bytes -= freed;
    }

    /// Forgets text `n`, being written or not: its length (0 when it was not held).
    fn remove(&mut self, n: u64) -> usize {
        let Some(t) = self.held.remove(&n) else { return 0 };
        self.bytes -= t.text.len();
        t.text.len()
    }

    /// Takes text `n` out, when it is held and no message is being written from it.
    fn take(&mut self, n: u64) -> Option<String> {
        if self.held.get(&n)?.writing {
            return None;
        }
        let t = self.held.remove(&n)?;
        self.bytes -= t.text.len();
        Some(t.text)
    }

    /// Claims text `n` for a message written in slices ([`Sliced`]): its length, when it is
    /// held and no message is being written from it already. It stays held, and counted,
    /// until the message lets it go ([`Texts::remove`]).
    fn claim(&mut self, n: u64) -> Option<usize> {
        let t = self.held.get_mut(&n).filter(|t| !t.writing)?;
        t.writing = true;
        Some(t.text.len())
    }

    /// Writes to `out` the next slice of text `n` in `form` from byte `from`: at most
    /// [`SLICE`] bytes of the text, ending on a character's boundary (at least one
    /// character). Where the slice ends; `None` when the text is no longer held (it was
    /// forgotten to make room while its message was being written).
    fn write_slice(&self, n: u64, from: usize, form: Form, out: &mut Vec<u8>) -> Option<usize> {
        let text = &self.held.get(&n)?.text;
        let mut end = (from + SLICE).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let slice = text.get(from..end)?;
        match form {
            Form::Value => out.extend_from_slice(slice.as_bytes()),
            Form::Text => {
                // The slice as a JSON string, its quotes left out: serde_json escapes byte by
                // byte, so the slices' escapes are the whole text's.
                let at = out.len();
                let _ = serde_json::to_writer(&mut *out, slice);
                out.pop();
                out.remove(at);
            }
        }
        Some(end)
    }

    /// What to tell the operator about the texts forgotten to make room, at most once a
    /// minute (an attacker making room again and again must not flood standard error).
    fn warning(&mut self, now: Instant, max: usize) -> Option<String> {
        if self.forgotten.0 == 0 || self.warned.is_some_and(|w| now.duration_since(w) < WARN_EVERY) {
            return None;
        }
        let (count, bytes) = std::mem::take(&mut self.forgotten);
        self.warned = Some(now);
        Some(format!(
            "tdsl: warning: {count} answer(s) not yet sent ({bytes} bytes) forgotten to stay within \
             --max-answer-bytes-held {max}: their clients read that the answer is gone, or, for one being \
             written, its message cut and its connection closed (answers no client read, or a client slow \
             to read its answers)"
        ))
    }
}

/// How long a text whose HTTP response is gone waits for the client to take up the stream
/// again (a `GET` with `Last-Event-ID`, which rmcp's priming event invites after 3 s) before
/// it is let go: ten times that.
const ORPHAN_KEPT_FOR: Duration = Duration::from_secs(30);

/// How often, at most, the operator is told that texts were forgotten to make room.
const WARN_EVERY: Duration = Duration::from_secs(60);

struct Registry {
    /// `tdsl-splice-<random>-`: every mark starts with it.
    prefix: String,
    texts: Mutex<Texts>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // Two keys of the standard library's randomly seeded hasher: 128 bits no client sees.
        let key = |n: u64| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(n);
            h.finish()
        };
        Registry { prefix: format!("tdsl-splice-{:016x}{:016x}-", key(1), key(2)), texts: Mutex::new(Texts::default()) }
    })
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Texts> {
        self.texts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The answer of a tool call whose text block is `text`, `structuredContent` the value that
/// `text` is the JSON of when `structured`. A long text is held once and marked
/// ([`SPLICED_FROM`]); a short one is built as values; one longer than the bound of the
/// texts held ([`set_max_held`]) is the tool error `E0818`.
pub(crate) fn answer(text: String, structured: bool, is_error: bool) -> Json {
    answer_within(text, structured, is_error, MAX_HELD.load(Ordering::Relaxed))
}

/// [`answer`], the texts held bounded by `max` bytes.
fn answer_within(text: String, structured: bool, is_error: bool, max: usize) -> Json {
    if text.len() < SPLICED_FROM {
        let value = structured.then(|| parse(&text));
        let mut out = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
        if let Some(v) = value {
            out["structuredContent"] = v;
        }
        return out;
    }
    let r = registry();
    let mut texts = r.lock();
    // Taken under the lock: the texts' times grow with their numbers.
    let now = Instant::now();
    let held = texts.hold(text, now, max);
    let warning = texts.warning(now, max);
    drop(texts);
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    let n = match held {
        Ok(n) => n,
        Err(TooLarge { len, max }) => {
            return tool_error(format!(
                "FAILED: the answer is {len} bytes, more than the server holds for answers waiting to be sent \
                 ({max} bytes, --max-answer-bytes-held) [{}]",
                crate::diagnostic::Code::AnswerTooLarge.as_str()
            ))
        }
    };
    let mut out = json!({"content": [{"type": "text", "text": format!("{}{n}-t", r.prefix)}], "isError": is_error});
    if structured {
        out["structuredContent"] = Json::String(format!("{}{n}-v", r.prefix));
    }
    out
}

/// `text` held, holding `ticket` until it is let go (written, forgotten or past its time):
/// the mark to write in its place as a JSON string, which stands for the text as a JSON
/// string ([`super::making`]). The text is given back when it alone is larger than the
/// bound of the texts held ([`set_max_held`]).
pub(crate) fn hold_text(text: String, ticket: tokio::sync::OwnedSemaphorePermit) -> Result<String, String> {
    hold_text_within(text, ticket, MAX_HELD.load(Ordering::Relaxed))
}

/// [`hold_text`], the texts held bounded by `max` bytes.
fn hold_text_within(text: String, ticket: tokio::sync::OwnedSemaphorePermit, max: usize) -> Result<String, String> {
    if text.len() > max {
        return Err(text);
    }
    let r = registry();
    let mut texts = r.lock();
    let now = Instant::now();
    let held = texts.hold_with(text, Some(ticket), now, max);
    let warning = texts.warning(now, max);
    drop(texts);
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    // Not larger than the bound (above): held.
    let n = held.map_err(|_| String::new())?;
    Ok(format!("{}{n}-t", r.prefix))
}

/// Lets go the texts past their time ([`KEPT_FOR`], [`ORPHAN_KEPT_FOR`]), which is otherwise
/// done only as a text is held: for an answer waiting for room ([`super::making`]).
pub(crate) fn let_go_expired() {
    registry().lock().let_go_expired(Instant::now());
}

/// The answer of a tool call that failed: `message` as its text, `isError` set.
pub(crate) fn tool_error(message: String) -> Json {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// Our own compact JSON, read back (as deep as the engine's values nest).
fn parse(text: &str) -> Json {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    Json::deserialize(&mut de).unwrap_or(Json::Null)
}

/// How a mark is written: its text as a JSON string, or as the value it is the JSON of.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Form {
    Text,
    Value,
}

/// The mark at the start of `s` (after its opening quote): its number, its form and its
/// length up to and including the closing quote.
fn read_mark(s: &[u8]) -> Option<(u64, Form, usize)> {
    let end = s.iter().position(|&b| b == b'"')?;
    let (n, form) = std::str::from_utf8(&s[..end]).ok()?.rsplit_once('-')?;
    let form = match form {
        "t" => Form::Text,
        "v" => Form::Value,
        _ => return None,
    };
    Some((n.parse().ok()?, form, end + 1))
}

/// Writes mark `n` in `form` to `out`: its text, taken out of the registry by the message's
/// first mark of it into `taken` (a text forgotten between a message's two marks would have
/// left one written and the other not).
fn write_mark(out: &mut Vec<u8>, n: u64, form: Form, taken: &mut HashMap<u64, Option<String>>) {
    let text = taken.entry(n).or_insert_with(|| registry().lock().take(n));
    write(out, text.as_deref(), form);
}

/// Writes `text` in `form` to `out`.
fn write(out: &mut Vec<u8>, text: Option<&str>, form: Form) {
    match (text, form) {
        (Some(t), Form::Value) => out.extend_from_slice(t.as_bytes()),
        (None, Form::Value) => out.extend_from_slice(b"null"),
        (t, Form::Text) => {
            // A string is always written (the writer is a `Vec`).
            let _ = serde_json::to_writer(&mut *out, t.unwrap_or(GONE));
        }
    }
}

/// Whether `bytes` holds a mark (one search).
#[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
pub(crate) fn holds_mark(bytes: &[u8]) -> bool {
    let quoted = format!("\"{}", registry().prefix);
    memchr::memmem::find(bytes, quoted.as_bytes()).is_some()
}

/// A part of a message as it goes out: bytes of it as they are, or a mark.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Bytes(std::ops::Range<usize>),
    Mark(u64, Form),
}

/// The pieces of `bytes` (one message), each quoted mark apart; `None` when it holds none
/// (the common case: one search).
fn pieces(bytes: &[u8]) -> Option<Vec<Piece>> {
    let r = registry();
    let quoted = format!("\"{}", r.prefix);
    let finder = memchr::memmem::Finder::new(quoted.as_bytes());
    let first = finder.find(bytes)?;
    let mut pieces = Vec::new();
    // The start of the bytes not yet in a piece.
    let mut kept = 0;
    let mut at = 0;
    let mut next = Some(first);
    while let Some(i) = next {
        let start = at + i;
        let after = start + quoted.len();
        match read_mark(&bytes[after..]) {
            Some((n, form, len)) => {
                if kept < start {
                    pieces.push(Piece::Bytes(kept..start));
                }
                pieces.push(Piece::Mark(n, form));
                at = after + len;
                kept = at;
            }
            None => at = after,
        }
        next = finder.find(&bytes[at..]);
    }
    if kept < bytes.len() {
        pieces.push(Piece::Bytes(kept..bytes.len()));
    }
    Some(pieces)
}

/// `bytes` (one message as it goes out) with each quoted mark replaced by what it stands for;
/// as it is when it holds none (the common case: one search). The whole message is built at
/// once: for a writer that holds one message at a time (stdio's); HTTP's writes a large one
/// in slices ([`Sliced`]).
pub(crate) fn splice(bytes: Vec<u8>) -> Vec<u8> {
    let Some(pieces) = pieces(&bytes) else { return bytes };
    let mut out = Vec::with_capacity(bytes.len());
    let mut taken = HashMap::new();
    for piece in pieces {
        match piece {
            Piece::Bytes(range) => out.extend_from_slice(&bytes[range]),
            Piece::Mark(n, form) => write_mark(&mut out, n, form, &mut taken),
        }
    }
    out
}

/// About how many bytes of a text one slice of a message holds ([`Sliced`]): a text of
/// [`SPLICED_FROM`] bytes goes out in one.
pub(crate) const SLICE: usize = 64 * 1024;

/// One message written in slices of about [`SLICE`] bytes ([`Sliced::next_slice`]), each
/// mark's text copied from the registry as the slice is asked for: what the message holds
/// outside the registry is its marked form (a few hundred bytes beside the rest of the
/// message) and the slice being written, not the texts spliced in (HTTP: hyper asks for the
/// body's next frame when its write buffer has room, so a client that reads nothing holds one
/// slice, not the whole message — docs/security.md, "Hostile round 14b").
///
/// A mark's text is claimed by the message's first slice that reaches it ([`Texts::claim`]):
/// the message's other mark of it is written from the same claim, and no other message
/// writes it (a replayed event finds it gone, as it did when the first mark took it out). It
/// stays held, counted within the bound, until the message's last mark of it is written, or
/// the message is dropped unfinished; then it is let go. A text not held at its first mark
/// is written as [`GONE`] and `null` at both. A text forgotten to make room while the message
/// is being written (the oldest go first, being written or not) cuts the message: the next
/// slice is [`Cut`], and the connection is to be closed (the client reads a message that
/// does not end, never one with half an answer).
#[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
pub(crate) struct Sliced {
    message: Vec<u8>,
    pieces: Vec<Piece>,
    /// The piece being written, and how far into it (bytes of it, or of the mark's text).
    at: usize,
    from: usize,
    /// The texts of the marks reached: `true` while claimed, `false` when the text was not
    /// held at its first mark (or has been let go after its last).
    claimed: HashMap<u64, bool>,
    /// The last piece of each text's marks: the text is let go once it is written.
    last: HashMap<u64, usize>,
}

/// A message cut: a text it was being written from was forgotten to make room.
#[derive(Debug, PartialEq)]
pub(crate) struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "an answer being written was forgotten to stay within --max-answer-bytes-held (its client read it too \
             slowly): the message is cut",
        )
    }
}

impl std::error::Error for Cut {}

#[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
impl Sliced {
    /// `message` to be written in slices; given back when it holds no mark.
    pub(crate) fn new(message: Vec<u8>) -> Result<Sliced, Vec<u8>> {
        let Some(pieces) = pieces(&message) else { return Err(message) };
        let last = pieces
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Piece::Mark(n, _) => Some((*n, i)),
                Piece::Bytes(_) => None,
            })
            .collect();
        Ok(Sliced { message, pieces, at: 0, from: 0, claimed: HashMap::new(), last })
    }

    /// The next slice of the message: `None` once it is all written; [`Cut`] when a text it
    /// is written from was forgotten meanwhile (nothing more is written then).
    pub(crate) fn next_slice(&mut self) -> Option<Result<Vec<u8>, Cut>> {
        if self.at >= self.pieces.len() {
            return None;
        }
        let mut out = Vec::new();
        while out.len() < SLICE && self.at < self.pieces.len() {
            match self.pieces[self.at].clone() {
                Piece::Bytes(range) => {
                    let start = range.start + self.from;
                    let end = range.end.min(start + (SLICE - out.len()));
                    out.extend_from_slice(&self.message[start..end]);
                    self.advance(end == range.end, end - range.start);
                }
                Piece::Mark(n, form) => {
                    if let Err(cut) = self.write_mark_slice(n, form, &mut out) {
                        self.at = self.pieces.len();
                        return Some(Err(cut));
                    }
                }
            }
        }
        Some(Ok(out))
    }

    /// Moves on in the current piece to `from`, or to the next piece when it is `done`.
    fn advance(&mut self, done: bool, from: usize) {
        if done {
            self.at += 1;
            self.from = 0;
        } else {
            self.from = from;
        }
    }

    /// Writes the next slice of mark `n` (the current piece) to `out`.
    fn write_mark_slice(&mut self, n: u64, form: Form, out: &mut Vec<u8>) -> Result<(), Cut> {
        let mut texts = registry().lock();
        let len = match self.claimed.get(&n) {
            Some(true) => texts.held.get(&n).map(|t| t.text.len()),
            Some(false) => None,
            None => {
                let len = texts.claim(n);
                self.claimed.insert(n, len.is_some());
                len
            }
        };
        let Some(len) = len else {
            if self.claimed.get(&n) == Some(&true) {
                return Err(Cut);
            }
            drop(texts);
            write(out, None, form);
            self.advance(true, 0);
            return Ok(());
        };
        if self.from == 0 && form == Form::Text {
            out.push(b'"');
        }
        let end = texts.write_slice(n, self.from, form, out).ok_or(Cut)?;
        if end < len {
            self.advance(false, end);
            return Ok(());
        }
        if form == Form::Text {
            out.push(b'"');
        }
        if self.last.get(&n) == Some(&self.at) {
            texts.remove(n);
            self.claimed.insert(n, false);
        }
        self.advance(true, 0);
        Ok(())
    }
}

impl Drop for Sliced {
    /// A message dropped unfinished (its connection closed) lets go the texts it claimed.
    fn drop(&mut self) {
        let claimed: Vec<u64> = self.claimed.iter().filter(|(_, c)| **c).map(|(n, _)| *n).collect();
        if claimed.is_empty() {
            return;
        }
        let mut texts = registry().lock();
        for n in claimed {
            texts.remove(n);
        }
    }
}

/// The numbers of the texts `answer`'s marks stand for.
fn numbers(answer: &Json) -> Vec<u64> {
    let r = registry();
    [answer.get("structuredContent"), answer.pointer("/content/0/text")]
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str()?.strip_prefix(&r.prefix).and_then(|m| read_mark(format!("{m}\"").as_bytes())))
        .map(|(n, _, _)| n)
        .collect()
}

/// Forgets the texts `answer`'s marks stand for: an answer that will not be sent (its call
/// was answered otherwise, or cancelled, before its run came back).
pub(crate) fn forget(answer: &Json) {
    let numbers = numbers(answer);
    let mut texts = registry().lock();
    for n in numbers {
        texts.remove(n);
    }
}

/// The HTTP response a call's answer is to go out on (`serve --listen`: the POST's event
/// stream). rmcp drops an answer whose stream its client closed, marks and all; once the
/// response is known gone ([`Stream::gone`], when hyper drops its body) the texts of the
/// answers tied to it ([`Stream::tie`]) are *orphaned*: forgotten first when room is needed,
/// and let go [`ORPHAN_KEPT_FOR`] after, rather than [`KEPT_FOR`] (the client may take the
/// stream up again with `Last-Event-ID` meanwhile, and its answer then goes out).
#[derive(Clone, Default)]
pub(crate) struct Stream(std::sync::Arc<Mutex<Tied>>);

#[derive(Default)]
struct Tied {
    gone: bool,
    /// The texts of the answers tied to it, while it is not gone.
    texts: Vec<u64>,
}

impl Stream {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tied> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ties `answer`'s texts to this response: orphaned at once when it is gone already.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(crate) fn tie(&self, answer: &Json) {
        let numbers = numbers(answer);
        if numbers.is_empty() {
            return;
        }
        // The registry, then the stream: the order `gone` takes them in too.
        let mut texts = registry().lock();
        let mut tied = self.lock();
        if tied.gone {
            texts.orphan(&numbers, Instant::now());
        } else {
            tied.texts.extend(numbers);
        }
    }

    /// Ties the text `mark` stands for ([`hold_text`]) to this response, as [`Stream::tie`].
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(crate) fn tie_mark(&self, mark: &str) {
        let r = registry();
        let Some((n, _, _)) = mark.strip_prefix(&r.prefix).and_then(|m| read_mark(format!("{m}\"").as_bytes())) else {
            return;
        };
        let mut texts = r.lock();
        let mut tied = self.lock();
        if tied.gone {
            texts.orphan(&[n], Instant::now());
        } else {
            tied.texts.push(n);
        }
    }

    /// The response is gone (its body dropped, sent or not): the texts tied to it and not
    /// written yet are orphaned.
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(crate) fn gone(&self) {
        let mut tied = self.lock();
        tied.gone = true;
        if tied.texts.is_empty() {
            return;
        }
        drop(tied);
        let mut texts = registry().lock();
        let numbers = std::mem::take(&mut self.lock().texts);
        texts.orphan(&numbers, Instant::now());
    }
}

impl Texts {
    /// Marks texts `numbers` orphaned at `now` (those still held).
    fn orphan(&mut self, numbers: &[u64], now: Instant) {
        for n in numbers {
            if let Some(t) = self.held.get_mut(n) {
                t.orphaned.get_or_insert(now);
            }
        }
    }
}

/// `answer` as the JSON it stands for, its marks replaced (their texts taken): for a caller
/// of the library, which gets values, not a message to send.
pub(crate) fn expand(answer: Json) -> Json {
    let r = registry();
    let holds_mark = |v: &Json| v.as_str().is_some_and(|s| s.starts_with(&r.prefix));
    let marked = answer.get("structuredContent").is_some_and(holds_mark)
        || answer.pointer("/content/0/text").is_some_and(holds_mark);
    if !marked {
        return answer;
    }
    let bytes = splice(answer.to_string().into_bytes());
    parse(&String::from_utf8_lossy(&bytes))
}

#[cfg(test)]
mod tests;
