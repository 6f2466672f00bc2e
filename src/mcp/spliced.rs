//! Large answers written once, as text, and spliced into what goes out.
//!
//! rmcp's `CallToolResult` holds `structuredContent` as a `serde_json::Value` and the text
//! block as a `String`: an answer built that way costs a tree of `Value`s (about 80 bytes a
//! JSON array of one element: a 24 MiB result of nested `[1]`s held 2.7 GB). A large answer
//! is written instead as compact JSON straight from tdsl's values (the caller does that), and
//! rmcp is handed *marks* in its place: two short strings, one standing for the text as a
//! JSON string and one for the text as the JSON value itself. The output — the stdio framing's
//! writer ([`super::framing::pump_output`]), the HTTP front's body ([`super::http`]) — replaces
//! each quoted mark by what it stands for as the message goes out ([`splice`]). What is held
//! is the text once; what is sent is the message as before, byte for byte.
//!
//! A mark carries a random key of this process (the text cannot be forged by a client, whose
//! values are written escaped but may hold anything), and each answer's text is taken when
//! its last mark was spliced. An answer its call lets go (cancelled, or answered in its
//! place, before its run came back) is forgotten then ([`forget`]); one rmcp drops (its
//! request cancelled as it was answered) is forgotten [`KEPT_FOR`] after it was made. A
//! mark found with no text (an HTTP event replayed after its answer went out) is written as
//! `null` or as a sentence saying so, so that the message stays JSON.
//!
//! Answers of less than [`SPLICED_FROM`] bytes are built as JSON values as before: the marks
//! are for the answers whose tree costs.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

/// Answers whose text is at least this long are spliced; shorter ones are built as values.
pub(crate) const SPLICED_FROM: usize = 64 * 1024;

/// How long a text waits for its answer to be written before it is forgotten.
const KEPT_FOR: Duration = Duration::from_secs(600);

/// What a text mark stands for when its text was already taken or forgotten.
const GONE: &str = "(this answer was sent once and is not kept: call the tool again)";

struct Text {
    text: String,
    /// Marks of it not yet spliced.
    marks: u8,
    made: Instant,
}

struct Registry {
    /// `tdsl-splice-<random>-`: every mark starts with it.
    prefix: String,
    texts: Mutex<(u64, HashMap<u64, Text>)>,
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
        Registry {
            prefix: format!("tdsl-splice-{:016x}{:016x}-", key(1), key(2)),
            texts: Mutex::new((0, HashMap::new())),
        }
    })
}

/// The answer of a tool call whose text block is `text`, `structuredContent` the value that
/// `text` is the JSON of when `structured`. A long text is held once and marked
/// ([`SPLICED_FROM`]); a short one is built as values.
pub(crate) fn answer(text: String, structured: bool, is_error: bool) -> Json {
    if text.len() < SPLICED_FROM {
        let value = structured.then(|| parse(&text));
        let mut out = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
        if let Some(v) = value {
            out["structuredContent"] = v;
        }
        return out;
    }
    let r = registry();
    let now = Instant::now();
    let mut texts = r.texts.lock().unwrap_or_else(PoisonError::into_inner);
    texts.1.retain(|_, t| now.duration_since(t.made) < KEPT_FOR);
    texts.0 += 1;
    let n = texts.0;
    texts.1.insert(n, Text { text, marks: 1 + u8::from(structured), made: now });
    let mut out = json!({"content": [{"type": "text", "text": format!("{}{n}-t", r.prefix)}], "isError": is_error});
    if structured {
        out["structuredContent"] = Json::String(format!("{}{n}-v", r.prefix));
    }
    out
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

/// Writes mark `n` in `form` to `out`: its text, taken once its last mark is written.
fn write_mark(out: &mut Vec<u8>, n: u64, form: Form) {
    let mut texts = registry().texts.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(t) = texts.1.get_mut(&n) else {
        drop(texts);
        return write(out, None, form);
    };
    write(out, Some(&t.text), form);
    t.marks = t.marks.saturating_sub(1);
    if t.marks == 0 {
        texts.1.remove(&n);
    }
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

/// `bytes` (one message as it goes out) with each quoted mark replaced by what it stands for;
/// as it is when it holds none (the common case: one search).
pub(crate) fn splice(bytes: Vec<u8>) -> Vec<u8> {
    let r = registry();
    let quoted = format!("\"{}", r.prefix);
    let finder = memchr::memmem::Finder::new(quoted.as_bytes());
    let Some(first) = finder.find(&bytes) else { return bytes };
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut next = Some(first);
    while let Some(i) = next {
        let start = at + i;
        let after = start + quoted.len();
        match read_mark(&bytes[after..]) {
            Some((n, form, len)) => {
                out.extend_from_slice(&bytes[at..start]);
                write_mark(&mut out, n, form);
                at = after + len;
            }
            None => {
                out.extend_from_slice(&bytes[at..after]);
                at = after;
            }
        }
        next = finder.find(&bytes[at..]);
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Forgets the texts `answer`'s marks stand for: an answer that will not be sent (its call
/// was answered otherwise, or cancelled, before its run came back).
pub(crate) fn forget(answer: &Json) {
    let r = registry();
    let numbers = [answer.get("structuredContent"), answer.pointer("/content/0/text")]
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str()?.strip_prefix(&r.prefix).and_then(|m| read_mark(format!("{m}\"").as_bytes())))
        .map(|(n, _, _)| n);
    let mut texts = r.texts.lock().unwrap_or_else(PoisonError::into_inner);
    for n in numbers {
        texts.1.remove(&n);
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
mod tests {
    use super::*;

    fn big(n: usize) -> String {
        format!("{{\"v\":[{}1]}}", "1,".repeat(n))
    }

    #[test]
    fn a_long_answer_goes_out_as_if_it_had_been_built() {
        let text = big(SPLICED_FROM);
        let marked = answer(text.clone(), true, false);
        assert!(marked.to_string().len() < 400, "{marked}");
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": marked});
        let sent = splice(message.to_string().into_bytes());
        let read: Json = serde_json::from_slice(&sent).expect("JSON");
        let value = parse(&text);
        assert_eq!(read["result"]["structuredContent"], value);
        assert_eq!(read["result"]["content"][0]["text"], Json::String(text));
        // Taken: a second write of the same marks says the answer is gone, as JSON.
        let again: Json = serde_json::from_slice(&splice(message.to_string().into_bytes())).expect("JSON");
        assert_eq!(again["result"]["structuredContent"], Json::Null);
        assert_eq!(again["result"]["content"][0]["text"], GONE);
    }

    #[test]
    fn a_short_answer_is_built_and_marks_not_ours_are_left() {
        let small = answer("{\"a\":1}".into(), true, true);
        assert_eq!(
            small,
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "isError": true, "structuredContent": {"a": 1}})
        );
        // A client's string that looks like a mark but has another key, or no form.
        let other = b"{\"a\":\"tdsl-splice-00000000000000000000000000000000-1-v\",\"b\":\"tdsl-splice-\"}".to_vec();
        assert_eq!(splice(other.clone()), other);
        let mut ours = format!("[\"{}", registry().prefix).into_bytes();
        ours.extend_from_slice(b"x-v\"]");
        assert_eq!(splice(ours.clone()), ours);
    }

    #[test]
    fn an_answer_not_sent_is_forgotten() {
        let marked = answer(big(SPLICED_FROM), true, false);
        let mark = marked["structuredContent"].as_str().expect("a mark").to_string();
        let n = read_mark(format!("{}\"", &mark[registry().prefix.len()..]).as_bytes()).expect("ours").0;
        let held = |n| registry().texts.lock().unwrap_or_else(PoisonError::into_inner).1.contains_key(&n);
        assert!(held(n));
        forget(&marked);
        assert!(!held(n));
        // Its marks, written after all, say the answer is gone.
        let sent: Json = serde_json::from_slice(&splice(marked.to_string().into_bytes())).expect("JSON");
        assert_eq!(sent["structuredContent"], Json::Null);
    }

    #[test]
    fn expand_gives_the_values_of_a_marked_answer() {
        let text = big(SPLICED_FROM);
        let out = expand(answer(text.clone(), false, false));
        assert_eq!(out["content"][0]["text"], Json::String(text));
        assert!(out.get("structuredContent").is_none());
    }
}
