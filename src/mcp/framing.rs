//! Our own stdio framing in front of rmcp's transport, so that every request gets an
//! answer whatever the client sends.
//!
//! rmcp reads newline-delimited JSON-RPC and drops what it cannot parse, so a client that
//! sends garbage, a message over its line limit, invalid UTF-8 or too deep a JSON value
//! would wait forever for a response. This layer reads standard input line by line with a
//! cap ([`MAX_MESSAGE_BYTES`]), answers itself what must be refused, and hands every other
//! line to rmcp through an in-process pipe:
//!
//! | input | answer |
//! |---|---|
//! | a line over [`MAX_MESSAGE_BYTES`] | `-32600` invalid request (the line is skipped without being held in memory) |
//! | invalid UTF-8, not JSON, JSON nested deeper than 128 | `-32700` parse error |
//! | JSON with a key twice in one object (at any depth) | `-32600` invalid request naming the key |
//! | JSON that is not a JSON-RPC 2.0 message (not an object, a batch, no `method` and no result, a wrong `jsonrpc`, an `id` that is not a string or an integer that fits an `i64`) | `-32600` invalid request, with `id` null when it is a number that does not fit |
//! | `tools/call` whose `params` is not an object, whose `name` is not a string, or whose `arguments` is not an object | `-32602` invalid params |
//! | a request rmcp cannot read (params of the wrong shape for its method) | `-32602` invalid params |
//!
//! Each error carries the request's `id` when it can be read from the message — for a
//! message that is not JSON or is too long, from the top level of its first bytes — and
//! `null` otherwise. A *response* (the client's answer to a request of the server, such as
//! `sampling/createMessage`) that is refused is not answered (JSON-RPC answers no response):
//! rmcp gets an error response with its `id` in its place ([`Verdict::Unreadable`],
//! [`UNREADABLE_ANSWER`]), so that the request it answers fails at once, saying why, instead
//! of waiting for an answer that will not come. A notification (no `id`) that is refused gets no answer, as JSON-RPC
//! says, except when it cannot be parsed at all. Then the server reads the next line.
//! Output from rmcp and these answers go to standard output through one writer, a whole
//! line at a time. This module judges; the tasks that read, hand over and write are
//! [`super::pumps`].

use serde_json::{json, Value as Json};

/// The longest message the server reads: 8 MiB, below rmcp's own limit (16 MiB), so that
/// rmcp never sees a line it would drop.
pub(crate) const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// How much of an oversized line is kept to look for its `id`.
pub(super) const ID_PREFIX_BYTES: usize = 64 * 1024;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// What to do with one line of input.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Hand it to rmcp.
    Forward,
    /// Answer this, and do not hand it on.
    Answer(Json),
    /// Drop it silently (an empty line, a refused notification).
    Ignore,
    /// A response the server cannot read: hand rmcp this error response in its place (the
    /// same `id`), so that the request it answers fails now. Nothing goes to the client.
    Unreadable(Json),
}

/// The `data.reason` of the error response that stands for an answer of the client the
/// server could not read ([`Verdict::Unreadable`]): the request it answered fails with
/// the error's message, which says why.
pub(crate) const UNREADABLE_ANSWER: &str = "tdsl: the answer could not be read";

fn error(id: Json, code: i64, message: String) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Judges one line (without its newline). `oversized` when the line was longer than
/// [`MAX_MESSAGE_BYTES`]; `line` then holds its first bytes only. No bound on its values:
/// for a message already read whole (the server's own copy of one); input goes through
/// [`judge_limited`].
pub(crate) fn judge(line: &[u8], oversized: bool) -> Verdict {
    judge_limited(line, oversized, usize::MAX)
}

/// [`judge`], a message of more than `max_values` values ([`count_values`]) refused first,
/// before any of them is built.
pub(crate) fn judge_limited(line: &[u8], oversized: bool, max_values: usize) -> Verdict {
    match judge_message(line, oversized, max_values) {
        Verdict::Answer(error) => {
            let why = error["error"]["message"].as_str().unwrap_or("unreadable");
            match unreadable_answer(line, error["error"]["code"].as_i64().unwrap_or(INVALID_REQUEST), why) {
                Some(stand_in) => Verdict::Unreadable(stand_in),
                None => Verdict::Answer(error),
            }
        }
        other => other,
    }
}

/// When `line` (all of it, or its first bytes) is a response of the client, the error
/// response that stands for it ([`Verdict::Unreadable`]): its `id`, `code`, a message saying
/// `why` it could not be read, and [`UNREADABLE_ANSWER`]. `None` for anything else.
pub(crate) fn unreadable_answer(line: &[u8], code: i64, why: &str) -> Option<Json> {
    let id = response_id(line)?;
    Some(json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": code,
            "message": format!("the client's answer could not be read: {why}"),
            "data": {"reason": UNREADABLE_ANSWER},
        },
    }))
}

/// The `id` of a line that is a JSON-RPC response — a top-level `result` or `error`, no
/// `method` — read from its top level as far as the bytes go (a line cut at the limit, a
/// value that is not JSON further in); `None` for anything else, or an id rmcp would not
/// read as sent.
fn response_id(line: &[u8]) -> Option<Json> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut s = Scanner { b: line, i: 0 };
    s.ws();
    if !s.eat(b'{') {
        return None;
    }
    let (mut id, mut answers) = (None, false);
    loop {
        s.ws();
        let Some(key) = s.string() else { break };
        s.ws();
        if !s.eat(b':') {
            break;
        }
        s.ws();
        match key {
            b"\"method\"" => return None,
            b"\"result\"" | b"\"error\"" => answers = true,
            b"\"id\"" => {
                id = s.scalar();
                s.ws();
                if s.eat(b',') {
                    continue;
                }
                break;
            }
            _ => {}
        }
        if !s.skip_value() {
            break;
        }
        s.ws();
        if !s.eat(b',') {
            break;
        }
    }
    id.filter(|id| answers && exact_id(id))
}

/// [`judge`] before a refused response is turned into [`Verdict::Unreadable`]: what the
/// HTTP transport answers a body it refuses with (a 400, whatever the body was).
pub(crate) fn judge_message(line: &[u8], oversized: bool, max_values: usize) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if oversized {
        return Verdict::Answer(error(
            recover_id(line),
            INVALID_REQUEST,
            format!(
                "the message is longer than the server's limit of {MAX_MESSAGE_BYTES} bytes (8 MiB); it was skipped"
            ),
        ));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    if let Err(e) = std::str::from_utf8(line) {
        return Verdict::Answer(error(
            recover_id(line),
            PARSE_ERROR,
            format!("parse error: the message is not UTF-8 (invalid byte at offset {})", e.valid_up_to()),
        ));
    }
    if let Err(over) = count_values(line, max_values) {
        return Verdict::Answer(error(recover_id(line), INVALID_REQUEST, over.message()));
    }
    let v: Json = match parse_unique(line) {
        Ok(v) => v,
        // Valid JSON with a key twice in one object: not a message anyone can read one way
        // (rmcp's own reader would answer it with no `id`).
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            return Verdict::Answer(error(recover_id(line), INVALID_REQUEST, format!("invalid request: {e}")))
        }
        Err(e) => return Verdict::Answer(error(recover_id(line), PARSE_ERROR, format!("parse error: {e}"))),
    };
    // An id that is not exactly as sent (a float, an integer past i64) is not echoed.
    let id = v.get("id").filter(|id| exact_id(id)).cloned();
    let is_request_or_bad = v.get("method").is_none() || id.is_some();
    match check_message(v) {
        Ok(()) => Verdict::Forward,
        Err((code, message)) => match id {
            Some(id) => Verdict::Answer(error(id, code, message)),
            None if is_request_or_bad || code == INVALID_REQUEST => Verdict::Answer(error(Json::Null, code, message)),
            None => Verdict::Ignore,
        },
    }
}

/// The default of `serve --max-request-values`: the most values one message may hold.
/// A plan at its size limit (`--max-plan-bytes`, 256 KiB) written as plans are (25–30 bytes
/// a value in the plans of `tests/`) holds about 10,000; this leaves ten times that for the
/// plan and its arguments. What reading a message costs a value: `docs/mcp.md`, "The cost
/// of a message".
pub const DEFAULT_MAX_REQUEST_VALUES: usize = 100_000;

/// The bounds of `serve --max-request-values`.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub const MAX_REQUEST_VALUES_RANGE: std::ops::RangeInclusive<u64> = 1_000..=100_000_000;

/// A message with more values than the server reads ([`count_values`]).
#[derive(Debug, PartialEq)]
pub(crate) struct TooManyValues {
    /// The limit (`serve --max-request-values`).
    pub limit: usize,
}

impl TooManyValues {
    /// The JSON-RPC error message.
    pub(crate) fn message(&self) -> String {
        format!(
            "invalid request: the message holds more than {} values (numbers, strings, lists, objects), \
             the server's limit (serve --max-request-values); it was not read",
            self.limit
        )
    }
}

/// Counts the values of the JSON text `bytes` in one pass, building none of them (a string
/// is looked at where it lies, an escaped one in one reused buffer): an object, a list, a
/// string, a number, `true`, `false` and `null` are one each, a member's key is not counted
/// (its value is). Stops at the first value past `max`: [`TooManyValues`]. Text that is not
/// JSON, or nested deeper than serde_json's limit (128), is counted as far as it goes and
/// is not an error here: the parse that follows reports it.
pub(crate) fn count_values(bytes: &[u8], max: usize) -> Result<usize, TooManyValues> {
    use serde::de::DeserializeSeed;
    if max == usize::MAX {
        return Ok(0);
    }
    let left = std::cell::Cell::new(max);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = Counter(&left).deserialize(&mut de);
    if left.get() == OVER {
        return Err(TooManyValues { limit: max });
    }
    Ok(max - left.get())
}

/// The count [`Counter`] leaves behind once a value past the limit was seen.
const OVER: usize = usize::MAX;

/// Counts one value and what it holds down from the number of values left.
struct Counter<'a>(&'a std::cell::Cell<usize>);

impl Counter<'_> {
    fn take<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.0.get() {
            0 | OVER => {
                self.0.set(OVER);
                Err(E::custom("too many values"))
            }
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Counter<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Counter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(Counter(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Counter(self.0))?;
        }
        Ok(())
    }
}

/// Parses a message as `serde_json` does, but refuses an object with a key twice (at any
/// depth) with a data error naming the key and its place: JSON readers differ on which of the
/// two they keep, so the server keeps neither.
pub(crate) fn parse_unique(bytes: &[u8]) -> Result<Json, serde_json::Error> {
    serde_json::from_slice::<Unique>(bytes).map(|u| u.0)
}

/// A JSON value read with [`parse_unique`]'s rule (serde_json's recursion limit bounds its
/// depth).
struct Unique(Json);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{}` appears twice in one object",
                    key.escape_debug()
                )));
            }
            let Unique(v) = map.next_value()?;
            object.insert(key, v);
        }
        Ok(Json::Object(object))
    }
}

/// Whether an id is one rmcp reads as sent: a string, or an integer that fits an i64 (`-0`,
/// which the parser reads as a float, is 0).
fn exact_id(id: &Json) -> bool {
    id.is_string() || id.is_i64() || id.as_f64() == Some(0.0)
}

/// Whether a parsed value is a JSON-RPC message rmcp can take.
fn check_message(mut v: Json) -> Result<(), (i64, String)> {
    let obj = match &v {
        Json::Object(o) => o,
        Json::Array(_) => return Err((INVALID_REQUEST, "invalid request: batches are not supported".to_string())),
        _ => return Err((INVALID_REQUEST, "invalid request: a JSON-RPC message is an object".to_string())),
    };
    if obj.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return Err((INVALID_REQUEST, "invalid request: `jsonrpc` must be \"2.0\"".to_string()));
    }
    if let Some(id) = obj.get("id") {
        if !(id.is_string() || id.is_number()) {
            return Err((INVALID_REQUEST, "invalid request: `id` must be a string or a number".to_string()));
        }
        // rmcp reads a numeric id as an i64: a fraction or a larger integer would be
        // "unrecognized" (as invalid params), and echoed as a float that is not the id sent.
        if id.is_number() && !exact_id(id) {
            return Err((
                INVALID_REQUEST,
                format!("invalid request: a numeric `id` must be an integer from {} to {}", i64::MIN, i64::MAX),
            ));
        }
    }
    match obj.get("method") {
        Some(Json::String(method)) => {
            if let Some(p) = obj.get("params") {
                if !p.is_object() && !p.is_null() {
                    return Err((
                        INVALID_PARAMS,
                        format!("invalid params: the params of `{method}` must be an object"),
                    ));
                }
            }
            if method == "tools/call" {
                let p = obj.get("params");
                let Some(Json::Object(p)) = p else {
                    return Err((
                        INVALID_PARAMS,
                        "invalid params: `tools/call` needs params with a `name`".to_string(),
                    ));
                };
                if !p.get("name").is_some_and(Json::is_string) {
                    return Err((INVALID_PARAMS, "invalid params: `tools/call` needs a string `name`".to_string()));
                }
                match p.get("arguments") {
                    None | Some(Json::Null | Json::Object(_)) => {}
                    Some(other) => {
                        return Err((
                            INVALID_PARAMS,
                            format!("invalid params: `arguments` must be an object, not {}", kind(other)),
                        ))
                    }
                }
            }
        }
        Some(_) => return Err((INVALID_REQUEST, "invalid request: `method` must be a string".to_string())),
        None => {
            let response = obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error"));
            if !response {
                return Err((INVALID_REQUEST, "invalid request: no `method`, and not a response".to_string()));
            }
        }
    }
    // The last word is rmcp's: what it cannot read it would drop without an answer. The
    // arguments of a call (an object, whatever it holds: checked above) are left out, so
    // that they are not copied again.
    let code = if obj.contains_key("method") { INVALID_PARAMS } else { INVALID_REQUEST };
    if obj.get("method").and_then(Json::as_str) == Some("tools/call") {
        if let Some(Json::Object(p)) = v.get_mut("params") {
            p.shift_remove("arguments");
        }
    }
    if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v) {
        return Err((code, format!("invalid {}: {e}", if code == INVALID_PARAMS { "params" } else { "request" })));
    }
    Ok(())
}

/// Why the `params` of a request cannot be read, when its `method` is one the protocol
/// defines (rmcp then hands it over as a custom request, which would be "method not found");
/// `None` for a method the protocol does not define. The reason is serde's, from the
/// method's own request type (`logging/setLevel`: "unknown variant …, expected one of
/// `debug`, …").
#[allow(deprecated)] // logging and subscriptions: deprecated by newer MCP versions, still served
pub(crate) fn unreadable_params(message: &Json) -> Option<String> {
    use rmcp::model::{
        CallToolRequest, CancelTaskRequest, CompleteRequest, ConstString, GetPromptRequest, GetTaskRequest,
        InitializeRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest,
        PingRequest, ReadResourceRequest, SetLevelRequest, SubscribeRequest, UnsubscribeRequest,
    };
    fn why<R: serde::de::DeserializeOwned>(message: &Json) -> Option<String> {
        serde_json::from_value::<R>(message.clone()).err().map(|e| e.to_string())
    }
    let method = message.get("method")?.as_str()?;
    type Why = fn(&Json) -> Option<String>;
    let known: [(&str, Why); 15] = [
        (rmcp::model::InitializeResultMethod::VALUE, why::<InitializeRequest>),
        (rmcp::model::PingRequestMethod::VALUE, why::<PingRequest>),
        (rmcp::model::CompleteRequestMethod::VALUE, why::<CompleteRequest>),
        (rmcp::model::SetLevelRequestMethod::VALUE, why::<SetLevelRequest>),
        (rmcp::model::GetPromptRequestMethod::VALUE, why::<GetPromptRequest>),
        (rmcp::model::ListPromptsRequestMethod::VALUE, why::<ListPromptsRequest>),
        (rmcp::model::ListResourcesRequestMethod::VALUE, why::<ListResourcesRequest>),
        (rmcp::model::ListResourceTemplatesRequestMethod::VALUE, why::<ListResourceTemplatesRequest>),
        (rmcp::model::ReadResourceRequestMethod::VALUE, why::<ReadResourceRequest>),
        (rmcp::model::SubscribeRequestMethod::VALUE, why::<SubscribeRequest>),
        (rmcp::model::UnsubscribeRequestMethod::VALUE, why::<UnsubscribeRequest>),
        (rmcp::model::CallToolRequestMethod::VALUE, why::<CallToolRequest>),
        (rmcp::model::ListToolsRequestMethod::VALUE, why::<ListToolsRequest>),
        (rmcp::model::GetTaskMethod::VALUE, why::<GetTaskRequest>),
        (rmcp::model::CancelTaskMethod::VALUE, why::<CancelTaskRequest>),
    ];
    let (_, why) = known.iter().find(|(m, _)| *m == method)?;
    let reason = why(message).unwrap_or_else(|| "they are not of the shape it takes".to_string());
    Some(format!("invalid params of `{method}`: {}", reason.escape_debug()))
}

/// A JSON value's kind as messages name it ("a list", "an object").
pub(super) fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// The `id` of a message that may be cut short or broken, read from the top level of the
/// object without building it: a string or a number, `null` when there is none to be read.
/// Iterative, so that deep nesting costs no stack.
pub(crate) fn recover_id(bytes: &[u8]) -> Json {
    top_level_scalar(bytes, "id").unwrap_or(Json::Null)
}

/// The value of the member `key` of the object `bytes` holds, read from its top level
/// without building anything else, when it is a string or a number (a key written with
/// escapes is not recognised); `None` otherwise. Iterative, so that deep nesting costs no
/// stack.
pub(crate) fn top_level_scalar(bytes: &[u8], key: &str) -> Option<Json> {
    let mut s = Scanner { b: bytes, i: 0 };
    s.ws();
    if !s.eat(b'{') {
        return None;
    }
    loop {
        s.ws();
        let found = s.string()?;
        s.ws();
        if !s.eat(b':') {
            return None;
        }
        s.ws();
        if found.strip_prefix(b"\"").and_then(|k| k.strip_suffix(b"\"")) == Some(key.as_bytes()) {
            return s.scalar();
        }
        if !s.skip_value() {
            return None;
        }
        s.ws();
        if !s.eat(b',') {
            return None;
        }
    }
}

/// What the top level of a message says of it, read without building it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Members {
    /// Its `id`, when it is a string or a number.
    pub(crate) id: Option<Json>,
    /// Whether it has a `method` (a request, or a notification without `id`).
    pub(crate) method: bool,
    /// Whether it has a `result` or an `error` (a response).
    pub(crate) response: bool,
}

/// The [`Members`] of the object `bytes` holds: its top level is scanned until its `id` and
/// its kind are known (rmcp writes `jsonrpc`, `id`, then `method`, `result` or `error`: the
/// scan stops before a large result). Keys written with escapes are not recognised.
pub(crate) fn members(bytes: &[u8]) -> Members {
    let mut found = Members::default();
    let mut s = Scanner { b: bytes, i: 0 };
    s.ws();
    if !s.eat(b'{') {
        return found;
    }
    loop {
        s.ws();
        let Some(key) = s.string() else { return found };
        s.ws();
        if !s.eat(b':') {
            return found;
        }
        s.ws();
        match key {
            b"\"id\"" => {
                let at = s.i;
                found.id = s.scalar();
                if found.id.is_none() {
                    s.i = at;
                    if !s.skip_value() {
                        return found;
                    }
                }
            }
            b"\"method\"" => found.method = true,
            b"\"result\"" | b"\"error\"" => found.response = true,
            _ => {}
        }
        if found.id.is_some() && (found.method || found.response) {
            return found;
        }
        if key != b"\"id\"" && !s.skip_value() {
            return found;
        }
        s.ws();
        if !s.eat(b',') {
            return found;
        }
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A string with its quotes, as written.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if !self.eat(b'"') {
            return None;
        }
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => {
                    let b: &'a [u8] = self.b;
                    return b.get(start..self.i);
                }
                _ => {}
            }
        }
        None
    }

    /// A string or a number.
    fn scalar(&mut self) -> Option<Json> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'"') {
            let s = self.string()?;
            return serde_json::from_slice::<Json>(s).ok();
        }
        while self.b.get(self.i).is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(c)) {
            self.i += 1;
        }
        let n: Json = serde_json::from_slice(self.b.get(start..self.i)?).ok()?;
        n.is_number().then_some(n)
    }

    /// Skips one value of any depth; false when the bytes end first.
    fn skip_value(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            match self.b.get(self.i) {
                None => return false,
                Some(b'"') => {
                    if self.string().is_none() {
                        return false;
                    }
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.i += 1;
                }
                Some(b'}' | b']') => {
                    if depth == 0 {
                        return true; // the end of the enclosing object: the value was empty
                    }
                    depth -= 1;
                    self.i += 1;
                }
                Some(b',') if depth == 0 => return true,
                Some(_) => self.i += 1,
            }
            if depth == 0 && matches!(self.b.get(self.i.wrapping_sub(1)), Some(b'}' | b']' | b'"')) {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &[u8]) -> Json {
        match judge(line, false) {
            Verdict::Answer(v) => v,
            other => panic!("no answer for {:?}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn ids_are_recovered_from_broken_messages() {
        assert_eq!(recover_id(br#"{"jsonrpc": "2.0", "id": 7, "method": "x", "params": {"#), json!(7));
        assert_eq!(recover_id(br#"{"params": {"id": 1, "a": [1, {"b": "}"}]}, "id": "r-1", "#), json!("r-1"));
        assert_eq!(recover_id(br#"{"a": "\"id\": 3", "id": -2.5}"#), json!(-2.5));
        assert_eq!(recover_id(b"garbage"), Json::Null);
        assert_eq!(recover_id(br#"{"params": [[[[[[["#), Json::Null);
        assert_eq!(recover_id(br#"{"id": {"x": 1}}"#), Json::Null);
        let deep = format!(r#"{{"id": 9, "p": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(recover_id(deep.as_bytes()), json!(9));
    }

    #[test]
    fn every_bad_line_is_answered() {
        assert_eq!(answer(b"garbage")["error"]["code"], -32700);
        assert_eq!(answer(b"garbage")["id"], Json::Null);
        let bad_utf8 = b"{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"ping\", \"x\": \"\xff\"}";
        assert_eq!(answer(bad_utf8)["error"]["code"], -32700);
        assert_eq!(answer(bad_utf8)["id"], 4);
        let deep = format!(
            r#"{{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {{"a": {}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let a = answer(deep.as_bytes());
        assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32700), &json!(5)));
        assert_eq!(answer(b"[1, 2]")["error"]["code"], -32600);
        assert_eq!(answer(b"42")["error"]["code"], -32600);
        assert_eq!(answer(br#"{"jsonrpc": "2.0", "id": 1}"#)["error"]["code"], -32600);
        assert_eq!(answer(br#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#)["id"], 1);
        let call = br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x", "arguments": [1]}}"#;
        let a = answer(call);
        assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32602), &json!(3)));
        assert!(a["error"]["message"].as_str().is_some_and(|m| m.contains("must be an object, not a list")), "{a}");
        let long = judge(br#"{"jsonrpc": "2.0", "id": "big", "method": "tools/call", "params": {"#, true);
        match long {
            Verdict::Answer(a) => assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32600), &json!("big"))),
            other => panic!("{other:?}"),
        }
    }

    /// A refused response (the client's answer to a sampling request) is never answered:
    /// rmcp gets an error response with its id, so the request fails now.
    #[test]
    fn a_refused_response_fails_its_request_instead_of_being_answered() {
        let unreadable = |line: &[u8], oversized: bool| match judge(line, oversized) {
            Verdict::Unreadable(v) => v,
            other => panic!("not unreadable: {other:?}"),
        };
        let cut =
            unreadable(br#"{"jsonrpc": "2.0", "id": 4, "result": {"content": {"type": "text", "text": "aaa"#, true);
        assert_eq!((&cut["id"], &cut["error"]["data"]["reason"]), (&json!(4), &json!(UNREADABLE_ANSWER)));
        let message = cut["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("the client's answer could not be read: the message is longer"), "{message}");
        let deep = format!(
            r#"{{"jsonrpc": "2.0", "result": {{"x": {}{}}}, "id": "s-1"}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(unreadable(deep.as_bytes(), false)["id"], "s-1");
        let twice = br#"{"jsonrpc": "2.0", "id": 2, "error": {"code": 1, "message": "a", "message": "b"}}"#;
        assert_eq!(unreadable(twice, false)["id"], 2);
        // A request, a response without a usable id, garbage: answered as before.
        for line in [
            &br#"{"jsonrpc": "2.0", "id": 5, "method": "ping", "result": {"#[..],
            br#"{"jsonrpc": "2.0", "id": 2.5, "result": {}}"#,
            br#"{"jsonrpc": "2.0", "result": {"#,
            b"garbage",
        ] {
            assert!(matches!(judge(line, true), Verdict::Answer(_)), "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(judge(br#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#, false), Verdict::Forward);
    }

    #[test]
    fn a_key_twice_in_one_object_is_refused_with_the_id() {
        let a = answer(br#"{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {}, "params": {}}"#);
        assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32600), &json!(8)));
        let a = answer(br#"{"jsonrpc": "2.0", "id": 9, "method": "x", "params": {"a": [{"b": 1, "b": 2}]}}"#);
        assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32600), &json!(9)));
        assert!(a["error"]["message"].as_str().is_some_and(|m| m.contains("`b` appears twice")), "{a}");
        assert_eq!(
            parse_unique(br#"{"a": [1, 2.5, -3, null, true, "s", {"b": {}}]}"#).ok(),
            Some(json!({"a": [1, 2.5, -3, null, true, "s", {"b": {}}]}))
        );
    }

    #[test]
    fn values_are_counted_without_being_built_and_the_count_stops_at_the_limit() {
        let text = br#"{"a": [1, "s", null, true, {"b": 2.5, "c": "\u00e9\n"}], "d": {}}"#;
        assert_eq!(count_values(text, 1000), Ok(10));
        assert_eq!(count_values(text, 10), Ok(10));
        assert_eq!(count_values(text, 9), Err(TooManyValues { limit: 9 }));
        // One long string, escaped or not, is one value; keys are not counted.
        let long = format!(r#"{{"k": "{}", "e": "{}"}}"#, "x".repeat(1 << 20), "\\n".repeat(1000));
        assert_eq!(count_values(long.as_bytes(), 1000), Ok(3));
        // Past the limit, what follows is not looked at: broken text there is no matter.
        let cut = format!("[{}, not JSON", "[],".repeat(2000));
        assert_eq!(count_values(cut.as_bytes(), 1000), Err(TooManyValues { limit: 1000 }));
        // Text that is not JSON, or too deep, is not refused here: the parse says why.
        assert_eq!(count_values(b"[1, 2, oops", 1000), Ok(3));
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        assert!(count_values(deep.as_bytes(), 1000).is_ok());
        assert_eq!(count_values(b"[]", usize::MAX), Ok(0));
    }

    #[test]
    fn a_message_over_the_value_limit_is_refused_with_its_id_before_it_is_parsed() {
        let big = format!(
            r#"{{"jsonrpc": "2.0", "id": "v", "method": "ping", "params": {{"pad": [{}0]}}}}"#,
            "0,".repeat(2000)
        );
        let a = match judge_limited(big.as_bytes(), false, 1000) {
            Verdict::Answer(a) => a,
            other => panic!("{other:?}"),
        };
        assert_eq!((a["error"]["code"].as_i64(), &a["id"]), (Some(-32600), &json!("v")));
        let message = a["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("more than 1000 values") && message.contains("--max-request-values"), "{message}");
        assert_eq!(judge_limited(big.as_bytes(), false, 3000), Verdict::Forward);
        // Nesting at serde_json's limit passes; past it, a parse error as before.
        let at = |depth: usize| {
            format!(
                r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"p": {}{}}}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        assert_eq!(judge_limited(at(120).as_bytes(), false, 1000), Verdict::Forward);
        assert!(
            matches!(judge_limited(at(200).as_bytes(), false, 1000), Verdict::Answer(a) if a["error"]["code"] == -32700)
        );
        // The client's answer over the limit fails the request it answers, at once.
        let answer = format!(r#"{{"jsonrpc": "2.0", "id": 3, "result": {{"pad": [{}0]}}}}"#, "0,".repeat(2000));
        match judge_limited(answer.as_bytes(), false, 1000) {
            Verdict::Unreadable(v) => {
                assert_eq!((&v["id"], &v["error"]["data"]["reason"]), (&json!(3), &json!(UNREADABLE_ANSWER)))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_top_level_member_is_read_without_parsing_the_rest() {
        let body = br#"{"params": {"method": "initialize"}, "id": 4, "method": "tools/list", "x": [[[[ broken"#;
        assert_eq!(top_level_scalar(body, "method"), Some(json!("tools/list")));
        assert_eq!(top_level_scalar(body, "id"), Some(json!(4)));
        assert_eq!(top_level_scalar(br#"{"method": "initial\u0069ze"}"#, "method"), Some(json!("initialize")));
        assert_eq!(top_level_scalar(br#"{"params": {"method": "initialize"}}"#, "method"), None);
        assert_eq!(top_level_scalar(b"garbage", "method"), None);
        assert_eq!(top_level_scalar(br#"{"method": {"a": 1}}"#, "method"), None);
    }

    #[test]
    fn bad_params_of_a_known_method_are_named() {
        let why = unreadable_params(&json!({"method": "logging/setLevel", "params": {"level": "\u{0}"}}));
        assert!(why.is_some_and(|w| w.contains("`logging/setLevel`") && w.contains("debug")));
        assert!(unreadable_params(&json!({"method": "resources/read", "params": {}})).is_some());
        assert_eq!(unreadable_params(&json!({"method": "x/y", "params": {}})), None);
    }

    #[test]
    fn good_lines_go_on_and_refused_notifications_get_no_answer() {
        assert_eq!(judge(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#, false), Verdict::Forward);
        assert_eq!(
            judge(b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\r", false),
            Verdict::Forward
        );
        assert_eq!(judge(b"   ", false), Verdict::Ignore);
        assert_eq!(
            judge(br#"{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": 1}}"#, false),
            Verdict::Ignore
        );
    }
}
