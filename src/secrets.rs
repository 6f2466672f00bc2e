//! The secrets this process holds — a model provider's API key (`tdsl compose`), the bearer
//! tokens of upstream MCP servers (`--upstream-token`, `mcp:https://…` targets), the
//! `user:pass` of a `--base-url` — and their redaction from text that peers send back.
//!
//! A secret is [`register`]ed where tdsl takes it in (the composer's clients, the MCP HTTP
//! client), and text is passed through [`redact`] (or [`redact_json`]) where it comes back
//! from the peer a secret is sent to: a model's answer and error bodies
//! (`crate::compose`), an MCP server's results, errors, handshake failures and listings
//! (`crate::host::mcp_client`). Everything a plan's client, the history, a trace or a log sees of
//! a peer is made from that text, so redacting it where it enters redacts every way out at
//! once — including what a later feature adds.
//!
//! What is covered (`docs/security.md`, "Secrets"): each secret as written, JSON-escaped
//! (with the escapes of serde_json, of PHP's `\/` and of Go's `\u003c`/`\u003e`/`\u0026`),
//! percent-encoded (either hex case) and in base64 (standard and URL-safe, at any alignment
//! inside a longer base64 text); and a secret cut short, as a cut body or a chunk boundary
//! leaves it: a text holding a secret's first [`MIN_PARTIAL_BYTES`] is redacted from there to
//! its end, one holding its last ones from its start to there ([`cut_around`]). Only those
//! bytes decide, never how much more of the secret follows: a rule that redacted "a text
//! ending with the secret's start" told whoever chose the text how far their guess matched,
//! and a plan sending 65 guesses through an upstream tool that echoes its input read another
//! upstream's token a byte a step (hostile round 10). Not covered, by design: a secret split across two separate
//! strings, or transformed in any other way (reversed, hashed, another encoding) — a peer
//! that holds a secret and means to hand it over can always do that, and redaction is
//! against echoes, not against a peer's intent.
//!
//! The set is process-wide: a secret belongs to the process, whichever run it was given
//! for, and redacting it from a run that never used it costs nothing but a scan.

// Secrets are registered by the HTTP clients (`mcp-http`, `compose`); without them only the
// redaction runs (and finds nothing).
#![cfg_attr(not(any(feature = "mcp-http", feature = "compose")), allow(dead_code))]

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

#[cfg(feature = "engine")]
use smol_str::SmolStr;

#[cfg(feature = "engine")]
#[cfg(feature = "engine")]
use crate::value::Value;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// The shortest secret that is registered: a shorter one would be found in ordinary text.
pub(crate) const MIN_SECRET_BYTES: usize = 4;

/// The fewest bytes of a secret's start (or end) that are redacted at the end (or start) of a
/// text, and the shortest encoded form registered (a base64 fragment of a short secret).
pub(crate) const MIN_PARTIAL_BYTES: usize = 8;

/// Whether any secret is registered: the fast path of [`redact`] when none is.
static ANY: AtomicBool = AtomicBool::new(false);

/// Every form of every secret, longest first (so a longer form is replaced before a form it
/// contains).
static FORMS: RwLock<Vec<Form>> = RwLock::new(Vec::new());

/// One form of a secret (as written, escaped, encoded) and how much of its start and end
/// [`cut_around`] needs to find before it cuts: the form's text of the secret's first and
/// last [`MIN_PARTIAL_BYTES`] bytes — never fewer bytes of the secret than that, whatever the
/// encoding (hostile round 12: a base64 form's first 8 characters hold only 6 of them).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Form {
    text: String,
    /// Bytes of `text` that the secret's first `MIN_PARTIAL_BYTES` make.
    head: usize,
    /// Bytes of `text` that its last `MIN_PARTIAL_BYTES` make.
    tail: usize,
}

/// Adds `secret` (and its encoded forms) to the secrets redacted from now on. A secret shorter
/// than [`MIN_SECRET_BYTES`] (after trimming) is not registered.
pub(crate) fn register(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_SECRET_BYTES {
        return;
    }
    let mut all = FORMS.write().unwrap_or_else(PoisonError::into_inner);
    if all.iter().any(|f| f.text == secret) {
        return;
    }
    for form in forms(secret) {
        if !all.iter().any(|f| f.text == form.text) {
            all.push(form);
        }
    }
    all.sort_by_key(|f| std::cmp::Reverse(f.text.len()));
    ANY.store(true, Ordering::Release);
}

/// The files that hold this process's secrets ([`register_file`]).
static FILES: RwLock<Vec<SecretFile>> = RwLock::new(Vec::new());

/// A file holding a secret, by identity (device and inode: a link or another name of it is
/// the same file), and the names beside it that hold its content too (a database's
/// `-wal`, which is recreated, so known by its folder's identity and its name).
#[derive(Debug)]
struct SecretFile {
    id: (u64, u64),
    folder: Option<(u64, u64)>,
    beside: Vec<std::ffi::OsString>,
}

/// Records `path` as a file holding a secret — a `--upstream-token` or `--token-file`, the
/// run history — with the files named `path` + each of `suffixes` beside it: a plan's file
/// functions refuse them ([`is_secret_file`]), whatever name or link they are reached by
/// (hostile round 12: `read_file` handed the `--upstream-token` file under `--files` to a
/// plan). Nothing is recorded for a file that cannot be looked at.
#[cfg_attr(not(any(feature = "mcp-http", feature = "history")), allow(dead_code))]
pub(crate) fn register_file(path: &Path, suffixes: &[&str]) {
    let Some(id) = identity(path) else { return };
    let name = path.file_name().unwrap_or_default();
    let folder = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }).and_then(identity);
    let beside = suffixes
        .iter()
        .map(|s| {
            let mut n = name.to_os_string();
            n.push(s);
            n
        })
        .collect();
    let mut files = FILES.write().unwrap_or_else(PoisonError::into_inner);
    if !files.iter().any(|f| f.id == id) {
        files.push(SecretFile { id, folder, beside });
    }
}

/// Whether the file at `path` (looked at already: `meta`, its links followed) is one
/// [`register_file`] recorded, or a file named beside one as it said.
pub(crate) fn is_secret_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    let files = FILES.read().unwrap_or_else(PoisonError::into_inner);
    if files.is_empty() {
        return false;
    }
    let Some(id) = meta_identity(meta) else { return false };
    if files.iter().any(|f| f.id == id) {
        return true;
    }
    let (Some(name), Some(folder)) = (path.file_name(), path.parent().and_then(identity)) else { return false };
    files.iter().any(|f| f.folder == Some(folder) && f.beside.iter().any(|b| b == name))
}

/// Whether any file is recorded ([`register_file`]): listings look at nothing more when none is.
pub(crate) fn holds_secret_files() -> bool {
    !FILES.read().unwrap_or_else(PoisonError::into_inner).is_empty()
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    meta_identity(&std::fs::metadata(path).ok()?)
}

#[cfg(unix)]
fn meta_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

/// Elsewhere no identity is known: no file is recorded.
#[cfg(not(unix))]
fn meta_identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed when there is none
/// in it.
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) || text.is_empty() {
        return Cow::Borrowed(text);
    }
    let forms = FORMS.read().unwrap_or_else(PoisonError::into_inner);
    redact_forms(text, &forms)
}

/// [`redact`] with the forms `forms` (longest first).
fn redact_forms<'t>(text: &'t str, forms: &[Form]) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for form in forms {
        if out.contains(form.text.as_str()) {
            out = Cow::Owned(out.replace(form.text.as_str(), REDACTED));
        }
    }
    for form in forms {
        if let Some(cut) = cut_around(&out, form) {
            out = Cow::Owned(cut);
        }
    }
    out
}

/// Redacts every string and every object key of `json` in place (iteratively: a value nested
/// deeper than the stack allows is fine).
pub(crate) fn redact_json(json: &mut serde_json::Value) {
    use serde_json::Value as Json;
    if !ANY.load(Ordering::Acquire) {
        return;
    }
    let mut stack = vec![json];
    while let Some(v) = stack.pop() {
        match v {
            Json::String(s) => {
                if let Cow::Owned(r) = redact(s) {
                    *s = r;
                }
            }
            Json::Array(items) => stack.extend(items.iter_mut()),
            Json::Object(map) => {
                if map.keys().any(|k| matches!(redact(k), Cow::Owned(_))) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(redact(&k).into_owned(), v);
                    }
                }
                stack.extend(map.values_mut());
            }
            _ => {}
        }
    }
}

/// `value` with every string and object key redacted ([`redact`]): what an `exec:` program
/// printed or an `http:` peer answered, before a plan, a trace or the history reads it
/// (hostile round 12: a registered token printed by a tool reached the plan's client whole).
/// Shared parts that hold nothing to redact are kept, not copied.
#[cfg(feature = "engine")]
pub(crate) fn redact_value(value: Value) -> Value {
    if !ANY.load(Ordering::Acquire) {
        return value;
    }
    redacted_value(&value, 0).unwrap_or(value)
}

/// `value` redacted, or `None` when nothing in it is; nested deeper than a tool output may
/// be ([`crate::value::MAX_OUTPUT_DEPTH`]), it is replaced whole.
#[cfg(feature = "engine")]
fn redacted_value(value: &Value, depth: usize) -> Option<Value> {
    if depth > crate::value::MAX_OUTPUT_DEPTH {
        return Some(Value::str(REDACTED));
    }
    match value {
        Value::Str(s) => match redact(s) {
            Cow::Owned(r) => Some(Value::str(&r)),
            Cow::Borrowed(_) => None,
        },
        Value::List(items) => {
            let changed: Vec<(usize, Value)> =
                items.iter().enumerate().filter_map(|(i, v)| Some((i, redacted_value(v, depth + 1)?))).collect();
            if changed.is_empty() {
                return None;
            }
            let mut out = items.to_vec();
            for (i, v) in changed {
                out[i] = v;
            }
            Some(Value::list(out))
        }
        Value::Object(map) => {
            let mut changed = false;
            let mut out = crate::value::Map::default();
            for (k, v) in map.iter() {
                let key = match redact(k) {
                    Cow::Owned(r) => {
                        changed = true;
                        SmolStr::from(r)
                    }
                    Cow::Borrowed(_) => k.clone(),
                };
                let v = match redacted_value(v, depth + 1) {
                    Some(r) => {
                        changed = true;
                        r
                    }
                    None => v.clone(),
                };
                out.insert(key, v);
            }
            changed.then(|| Value::object(out))
        }
        _ => None,
    }
}

/// The secret as written, JSON-escaped (as serde_json, PHP and Go write it), percent-encoded
/// and in base64, each with the length of its head and tail ([`Form`]).
fn forms(secret: &str) -> Vec<Form> {
    // The secret's first and last MIN_PARTIAL_BYTES (whole characters: at least that many).
    let first = &secret[..ceil_char_boundary(secret, MIN_PARTIAL_BYTES)];
    let last = &secret[floor_char_boundary(secret, secret.len().saturating_sub(MIN_PARTIAL_BYTES))..];
    // An encoding that writes each character on its own: a form's head is the encoding of
    // the secret's first bytes, its tail that of its last ones.
    let each = |encode: &dyn Fn(&str) -> String| Form {
        text: encode(secret),
        head: encode(first).len(),
        tail: encode(last).len(),
    };
    let json = |s: &str| {
        let e = serde_json::to_string(s).unwrap_or_default();
        e[1..e.len().saturating_sub(1).max(1)].to_string()
    };
    let mut out = vec![each(&|s| s.to_string())];
    // The escapes other JSON writers add by default, as they would echo a secret in a body:
    // PHP's `json_encode` writes `/` as `\/`, Go's `encoding/json` writes `<`, `>` and `&`
    // as `\u003c`, `\u003e`, `\u0026` (a base64 token holds `/`, a URL-borne one `&`).
    out.push(each(&|s| json(s).replace('/', "\\/")));
    out.push(each(&|s| json(s).replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")));
    out.push(each(&json));
    for upper in [true, false] {
        out.push(each(&|s| percent_encode(s, upper)));
    }
    // A base64 fragment's characters hold 6 bits each: its head and tail are the characters
    // that hold MIN_PARTIAL_BYTES bytes' bits (a fragment starts and ends up to 4 bits inside
    // the secret, so these hold at least as many of its bits as the raw form's head does).
    let b64_edge = (8 * MIN_PARTIAL_BYTES).div_ceil(6);
    for alphabet in [STANDARD, URL_SAFE] {
        for offset in 0..3 {
            let text = base64_fragment(secret.as_bytes(), offset, alphabet);
            out.push(Form { text, head: b64_edge, tail: b64_edge });
        }
    }
    let mut forms: Vec<Form> = Vec::new();
    for (i, f) in out.into_iter().enumerate() {
        // The raw secret may be as short as MIN_SECRET_BYTES; an encoding of it is kept only
        // when it is long enough not to turn up by chance.
        if (i == 0 || f.text.len() >= MIN_PARTIAL_BYTES) && !forms.iter().any(|g| g.text == f.text) {
            forms.push(f);
        }
    }
    forms
}

/// `text` with what may be a cut piece of `form` replaced: from the first place it holds the
/// form's head (its text of the secret's first [`MIN_PARTIAL_BYTES`]) to its end, and from its
/// start to the end of the last place it holds the form's tail; `None` when it holds neither.
///
/// Only those bytes decide what is replaced — not whether more of the form follows them —
/// so the answer tells whoever wrote the text nothing they did not put in it: whoever knows
/// a token's first bytes (`sk-proj-`) learns nothing more by sending guesses that begin with
/// them through a tool that echoes its input, since every guess comes back cut at the same
/// place. A text that names those bytes for another reason is cut too: redaction errs on
/// the side of the secret. Whoever knows all but the last of those bytes can test that one
/// (and, in a base64 form, a few bits past it), as they could test the whole secret.
fn cut_around(text: &str, form: &Form) -> Option<String> {
    let text_of = form.text.as_str();
    if text_of.len() <= form.head.max(form.tail) {
        return None;
    }
    let head = &text_of[..floor_char_boundary(text_of, form.head)];
    let tail = &text_of[ceil_char_boundary(text_of, text_of.len() - form.tail)..];
    let end = text.find(head).unwrap_or(text.len());
    let start = text.rfind(tail).map_or(0, |p| p + tail.len());
    if start == 0 && end == text.len() {
        return None;
    }
    if start >= end {
        return Some(REDACTED.to_string());
    }
    let mut out = String::with_capacity(end - start + 2 * REDACTED.len());
    if start > 0 {
        out.push_str(REDACTED);
    }
    out.push_str(&text[start..end]);
    if end < text.len() {
        out.push_str(REDACTED);
    }
    Some(out)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// RFC 3986: every byte but the unreserved characters as `%XX`.
fn percent_encode(text: &str, upper: bool) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The base64 characters that `secret` alone decides when it starts `offset` bytes into a
/// 3-byte group: whatever comes before and after it in a longer text, its base64 holds them.
fn base64_fragment(secret: &[u8], offset: usize, alphabet: &[u8; 64]) -> String {
    let mut bytes = vec![0u8; offset];
    bytes.extend_from_slice(secret);
    let mut chars = Vec::with_capacity(bytes.len() * 4 / 3 + 4);
    for group in bytes.chunks(3) {
        let n = (u32::from(group[0]) << 16)
            | (u32::from(group.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(group.get(2).copied().unwrap_or(0));
        for i in 0..4 {
            chars.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize]);
        }
    }
    // The first characters mix the padding in, the last ones what follows the secret.
    let start = (8 * offset).div_ceil(6);
    let end = 8 * bytes.len() / 6;
    String::from_utf8_lossy(&chars[start.min(end)..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        let mut s = base64_fragment(bytes, 0, STANDARD);
        // Only complete groups are compared below: padding is not needed.
        s.truncate(bytes.len() / 3 * 4);
        s
    }

    #[test]
    fn a_secret_is_redacted_as_written_and_encoded() {
        let secret = "tok-unit-Zq8/+x\"y";
        register(secret);
        assert_eq!(redact("Bearer tok-unit-Zq8/+x\"y!"), "Bearer [redacted]!");
        assert_eq!(redact(r#"{"auth":"tok-unit-Zq8/+x\"y"}"#), r#"{"auth":"[redacted]"}"#);
        assert_eq!(redact("a=tok-unit-Zq8%2F%2Bx%22y&b"), "a=[redacted]&b");
        assert_eq!(redact("a=tok-unit-Zq8%2f%2bx%22y&b"), "a=[redacted]&b");
        // base64 of the secret behind any prefix (every alignment), with text after it.
        for prefix in ["", "a", "ab", "abc", "Authorization: Bearer "] {
            let whole = format!("{prefix}{secret}...tail");
            let encoded = b64(whole.as_bytes());
            let redacted = redact(&encoded);
            assert!(redacted.contains(REDACTED), "{prefix:?}: {encoded} → {redacted}");
        }
        assert_eq!(redact("nothing here"), "nothing here");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_cut_at_either_end_of_a_text_is_redacted() {
        register("sk-cut-0123456789abcdef");
        // A body cut in the middle of the key, and the chunk that follows it.
        assert_eq!(redact("invalid key sk-cut-0123456"), "invalid key [redacted]");
        assert_eq!(redact("3456789abcdef is not valid"), "[redacted] is not valid");
        // Fewer than MIN_PARTIAL_BYTES of it: ordinary text.
        assert_eq!(redact("see sk-cut"), "see sk-cut");
        // Multi-byte text around it does not panic on a char boundary.
        assert_eq!(redact("é sk-cut-01234é"), "é [redacted]");
        assert_eq!(redact("éé"), "éé");
    }

    /// Hostile round 10: a plan sent `P+"a"`, `P+"b"`, … through an upstream tool echoing its
    /// input, `P` a token's known first bytes, and the one guess that was a longer start of the
    /// token came back redacted — a byte a step, the whole token in one plan. Every guess now
    /// comes back the same whatever the token's further bytes.
    #[test]
    fn redaction_answers_no_guess_about_a_secret() {
        let token = "sk-SECRETTOKEN-0123456789abcdef";
        let mut f = forms(token);
        f.sort_by_key(|x| std::cmp::Reverse(x.text.len()));
        let known = "sk-SECRE";
        let answers: std::collections::BTreeSet<String> =
            (b' '..=b'~').map(|c| redact_forms(&format!("{known}{}", char::from(c)), &f).into_owned()).collect();
        assert_eq!(answers.into_iter().collect::<Vec<_>>(), [REDACTED], "every guess looks alike");
        // Neither does a guess of the token's end.
        let answers: std::collections::BTreeSet<String> =
            (b' '..=b'~').map(|c| redact_forms(&format!("{}89abcdef", char::from(c)), &f).into_owned()).collect();
        assert_eq!(answers.into_iter().collect::<Vec<_>>(), [REDACTED]);
    }

    /// Hostile round 12: a base64 fragment's first 8 characters hold only the secret's first
    /// 6 bytes, so a list of the base64 of `tok-` and two guessed characters came back with
    /// exactly one guess cut — two bytes a call. A base64 form is now cut only on the
    /// characters of 8 whole bytes, as the raw form is.
    #[test]
    fn a_base64_guess_of_a_secrets_first_bytes_is_not_told_apart() {
        let token = "tok-SECRET-0123456789abcdef";
        let mut f = forms(token);
        f.sort_by_key(|x| std::cmp::Reverse(x.text.len()));
        let chars = &STANDARD[..62];
        for prefix in ["", "x", "xy", "Bearer "] {
            for a in chars {
                for b in chars {
                    let guess = format!("{prefix}tok-{}{}", char::from(*a), char::from(*b));
                    for alphabet in [STANDARD, URL_SAFE] {
                        let encoded = base64_fragment(guess.as_bytes(), 0, alphabet);
                        assert_eq!(redact_forms(&encoded, &f), encoded, "{guess:?} was told apart");
                    }
                }
            }
        }
        // Knowing 8 bytes, a base64 guess needs some of the ninth too; with 9, it is cut.
        let nine = base64_fragment(b"xx tok-SECRE", 0, STANDARD);
        assert!(redact_forms(&nine, &f).contains(REDACTED), "{nine}");
        // A base64 text cut in the secret's middle (a chunk boundary) is still redacted.
        let cut = b64(b"Authorization: Bearer tok-SECRET-0123");
        assert!(redact_forms(&cut, &f).ends_with(REDACTED), "{cut}");
    }

    #[cfg(feature = "engine")]
    #[test]
    fn a_values_strings_and_keys_are_redacted_and_the_rest_kept() {
        register("value-secret-0042");
        let shared = Value::list(vec![Value::str("untouched"); 3]);
        let v = Value::object_from([
            ("a", Value::str("x value-secret-0042 y")),
            ("value-secret-0042", Value::Int(1)),
            ("same", shared.clone()),
        ]);
        let r = redact_value(v);
        assert_eq!(r.as_object().and_then(|m| m.get("a")), Some(&Value::str("x [redacted] y")));
        assert_eq!(r.as_object().and_then(|m| m.get("[redacted]")), Some(&Value::Int(1)));
        // What held nothing is the same list, not a copy.
        let same = r.as_object().and_then(|m| m.get("same")).and_then(Value::as_list).map(<[Value]>::as_ptr);
        assert_eq!(same, shared.as_list().map(<[Value]>::as_ptr));
    }

    proptest::proptest! {
        /// What a text is redacted to depends on the secret's first and last
        /// MIN_PARTIAL_BYTES only (and on whether the whole secret is in it): two secrets of
        /// the same length sharing those bytes redact every text that holds neither whole
        /// alike — so no text a client chooses tells the secrets apart.
        #[test]
        fn redaction_depends_on_a_secrets_edges_only(
            middle1 in "[A-Za-z0-9]{4,24}",
            seed in proptest::collection::vec(0usize..64, 0..6),
            junk in "[ a-z=]{0,12}",
        ) {
            let head = "sk-test-";
            let tail = "-end0000";
            let middle2: String = middle1.chars().rev().map(|c| if c == 'Z' { 'Y' } else { 'Z' }).collect();
            let s1 = format!("{head}{middle1}{tail}");
            let s2 = format!("{head}{middle2}{tail}");
            // A text made of pieces of the first secret and junk: what a client would send.
            let mut text = junk.clone();
            for n in &seed {
                let n = n % s1.len();
                text.push_str(if n % 2 == 0 { &s1[..n] } else { &s1[n..] });
                text.push_str(&junk);
            }
            proptest::prop_assume!(!text.contains(&s1) && !text.contains(&s2));
            let longest_first = |mut f: Vec<Form>| {
                f.sort_by_key(|x| std::cmp::Reverse(x.text.len()));
                f
            };
            let f1 = longest_first(forms(&s1));
            let f2 = longest_first(forms(&s2));
            proptest::prop_assume!(f1.iter().chain(&f2).all(|f| !text.contains(f.text.as_str())));
            proptest::prop_assert_eq!(redact_forms(&text, &f1), redact_forms(&text, &f2));
        }
    }

    #[test]
    fn json_strings_and_keys_are_redacted_at_any_depth() {
        register("json-secret-77");
        // Built by hand: `json!` of a value serializes it, recursively.
        let mut deep = serde_json::Value::from("json-secret-77");
        for _ in 0..100_000 {
            deep = serde_json::Value::Array(vec![deep]);
        }
        let mut v = serde_json::json!({"json-secret-77": 1, "x": ["a json-secret-77 b"]});
        v["deep"] = deep;
        redact_json(&mut v);
        assert_eq!(v["x"][0], "a [redacted] b");
        assert_eq!(v["[redacted]"], 1);
        let mut d = &v["deep"];
        while let Some(inner) = d.get(0) {
            d = inner;
        }
        assert_eq!(d, "[redacted]");
        // Dropped iteratively: serde_json's drop would recurse.
        let mut stack = vec![v];
        while let Some(mut x) = stack.pop() {
            match &mut x {
                serde_json::Value::Array(a) => stack.append(a),
                serde_json::Value::Object(m) => stack.extend(std::mem::take(m).into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    /// Hostile round 4b (issue 38.10): a PHP upstream echoing a base64 token in a JSON error
    /// body writes its `/` as `\/`; a Go one writes `&` as `\u0026`. Both came through whole.
    #[test]
    fn a_secret_echoed_by_php_or_go_json_writers_is_redacted() {
        register("tok/php+go&x<y>z=");
        assert_eq!(redact(r#"{"error":"bad token tok\/php+go&x<y>z="}"#), r#"{"error":"bad token [redacted]"}"#);
        assert_eq!(
            redact(r#"{"error":"bad token tok/php+go\u0026x\u003cy\u003ez="}"#),
            r#"{"error":"bad token [redacted]"}"#
        );
    }

    #[test]
    fn short_secrets_are_not_registered() {
        register("ab");
        assert_eq!(redact("ab cd"), "ab cd");
    }
}
