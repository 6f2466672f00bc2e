//! `http://` and `https://` endpoints (SPEC §7, ext): the arguments are POSTed as JSON to
//! the URL and the JSON body of the answer is the response.
//!
//! - `2xx` with a JSON body: the response (an empty body is `null`).
//! - `429` and `5xx`: transient (retried per the step's `retry`); connection failures, an
//!   unknown host and timeouts too.
//! - Any other status (`4xx`, a redirect): permanent. A body that is not JSON (or not
//!   UTF-8) is permanent. Messages carry the status and the start of the body.
//! - Redirects are not followed (a `3xx` is a permanent failure naming where it pointed):
//!   the peer chose neither the URL nor what it may reach. Followed, a `301`, `302` or `303`
//!   turned the POST into a GET of any URL the peer named — a private address, a cloud's
//!   metadata service — and that answer became the tool's result (hostile round 9b,
//!   `docs/security.md`).
//! - The request has the attempt's time ([`ToolCall::timeout`]); a cancelled call returns at
//!   once (the request in flight is abandoned and ends with its own timeout). At most
//!   [`MAX_ABANDONED`] abandoned requests are in flight in a process: past it a call fails
//!   at once (transient) until some end — each holds a thread and a socket, and a client
//!   cancelling calls to a slow peer grew them without bound (hostile round 9b). Bodies
//!   are read up to [`MAX_BODY_BYTES`], and a `2xx` body's JSON up to the runner's budget of
//!   values ([`crate::HostRunner::with_max_values`]): 64 MiB of `[0,0,…]` once made 33
//!   million values, 1.7 GB (hostile round 9b); past the budget the read stops and the call
//!   fails (permanent).
//! - Messages name the URL by its scheme, host and port, `/…` for the rest ([`shown`]): its
//!   `user:pass@`, path and query (`?api_key=…`) reached every client of a failed call,
//!   the history and the trace (hostile round 9b). Where a redirect pointed is named so too.
//! - Requests carry `Content-Type: application/json`, `Accept: application/json`,
//!   `User-Agent: tdsl/<version>` and `X-Tdsl-Tool: <tool path>`.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::exec::{ToolCall, ToolError};
use crate::value::Value;

/// The largest response body read (64 MiB).
pub(crate) const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// The time a request has when the call has no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The most requests of cancelled calls still in flight (see the module's docs).
pub(crate) const MAX_ABANDONED: usize = 256;

/// The requests of cancelled calls still in flight.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// A request's state, shared by its call and its thread.
const RUNNING: u8 = 0;
const ABANDONED_BY_CALL: u8 = 1;
const ENDED: u8 = 2;

/// How much of an error body goes into a message.
const BODY_IN_MESSAGE: usize = 300;

/// POSTs the call's arguments to `url`; the answer is read as at most `max_values` values.
pub(crate) fn call(url: &str, call: &ToolCall<'_>, max_values: usize) -> Result<Value, ToolError> {
    let tool = call.tool_path;
    let body = serde_json::to_vec(call.arguments)
        .map_err(|e| ToolError::permanent(format!("`{tool}`: the arguments are not JSON: {e}")))?;
    let timeout = call.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let (url_owned, tool_owned) = (url.to_string(), tool.to_string());
    let url = shown(url);
    let abandoned = ABANDONED.load(Ordering::SeqCst);
    if abandoned >= MAX_ABANDONED {
        return Err(ToolError::transient(format!(
            "`{tool}`: {abandoned} requests of calls cancelled earlier are still waiting for their answers (at \
             most {MAX_ABANDONED}); no request is sent until some end"
        )));
    }
    let (tx, rx) = mpsc::channel();
    let state = Arc::new(AtomicU8::new(RUNNING));
    let ended = state.clone();
    // On a thread of its own, so that a cancelled call can return at once.
    let spawned = std::thread::Builder::new().name("tdsl-http".to_string()).spawn(move || {
        let _ = tx.send(post(&url_owned, &tool_owned, &body, timeout, max_values));
        if ended.swap(ENDED, Ordering::SeqCst) == ABANDONED_BY_CALL {
            ABANDONED.fetch_sub(1, Ordering::SeqCst);
        }
    });
    if let Err(e) = spawned {
        return Err(ToolError::transient(format!("`{tool}`: cannot start a thread for the request: {e}")));
    }
    loop {
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(answer) => return answer.map_err(|e| ToolError { message: format!("`{tool}`: {e}"), ..e }),
            Err(mpsc::RecvTimeoutError::Timeout) if call.cancel.is_cancelled() => {
                // Counted while its thread goes on (counted first, so that the thread's
                // end never takes away what is not yet added; not, if it has just ended).
                ABANDONED.fetch_add(1, Ordering::SeqCst);
                if state.compare_exchange(RUNNING, ABANDONED_BY_CALL, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                    ABANDONED.fetch_sub(1, Ordering::SeqCst);
                }
                return Err(ToolError::transient(format!("`{tool}`: the request to {url} was cancelled")));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ToolError::transient(format!("`{tool}`: the request to {url} ended without an answer")));
            }
        }
    }
}

fn post(target: &str, tool: &str, body: &[u8], timeout: Duration, max_values: usize) -> Result<Value, ToolError> {
    let url = &shown(target);
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .user_agent(format!("tdsl/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent();
    let response = agent
        .post(target)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .header("X-Tdsl-Tool", tool)
        .send(body)
        .map_err(|e| request_error(target, e))?;
    let status = response.status().as_u16();
    if (300..=399).contains(&status) {
        let to = response.headers().get("location").map(|l| String::from_utf8_lossy(l.as_bytes()).trim().to_string());
        let to = to.filter(|l| !l.is_empty());
        let to = to.map_or_else(|| " (no `Location`)".to_string(), |l| format!(" to {}", shown(&l)));
        return Err(ToolError::permanent(format!("{url} answered {status}: a redirect{to} is not followed")));
    }
    let bytes =
        response.into_body().with_config().limit(MAX_BODY_BYTES).read_to_vec().map_err(|e| request_error(target, e))?;
    // A body that is not UTF-8 keeps its status: it was read as text, and the I/O error
    // that made was taken for a transient failure (a `404` retried, its status lost).
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) if (200..=299).contains(&status) => {
            let at = e.utf8_error().valid_up_to();
            return Err(ToolError::permanent(format!(
                "{url} answered {status} with a body that is not JSON (not UTF-8: an invalid byte at offset {at})"
            )));
        }
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    match status {
        200..=299 if text.trim().is_empty() => Ok(Value::Null),
        200..=299 => crate::value::from_json_within(text.as_bytes(), max_values).map_err(|e| match e {
            crate::value::DecodeError::Json(e) => {
                ToolError::permanent(format!("{url} answered {status} with a body that is not JSON ({e})"))
            }
            beyond => ToolError::permanent(format!("{url} answered {status} with {beyond}")),
        }),
        429 | 500..=599 => Err(ToolError::transient(format!("{url} answered {status} (try again){}", excerpt(&text)))),
        _ => Err(ToolError::permanent(format!("{url} answered {status}{}", excerpt(&text)))),
    }
}

/// `target` (the URL as written) failed; the message names it as [`shown`] does, also
/// where ureq's own text repeats it.
fn request_error(target: &str, e: ureq::Error) -> ToolError {
    use ureq::Error as E;
    let url = shown(target);
    let said = e.to_string().replace(target, &url);
    match e {
        E::Io(_) | E::Timeout(_) | E::HostNotFound | E::ConnectionFailed => {
            ToolError::transient(format!("the request to {url} failed: {said}"))
        }
        E::BodyExceedsLimit(_) => {
            ToolError::permanent(format!("the answer of {url} is larger than {MAX_BODY_BYTES} bytes"))
        }
        _ => ToolError::permanent(format!("the request to {url} failed: {said}")),
    }
}

/// A URL as messages name it: its scheme, host and port, with `/…` when a path or a query
/// followed; without the `user:pass@` of its authority; control characters escaped.
fn shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest[..end].rsplit_once('@').map_or(&rest[..end], |(_, h)| h);
    let more = if end < rest.len() { "/…" } else { "" };
    let shown = if scheme.is_empty() { format!("{host}{more}") } else { format!("{scheme}://{host}{more}") };
    crate::diagnostic::escape_hidden(&cut(&shown), &[])
}

/// `: <the start of the body>`, or nothing for an empty body.
fn excerpt(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return String::new();
    }
    format!(": {}", cut(body))
}

/// The start of `text` for a message: at most [`BODY_IN_MESSAGE`] bytes, then `…`.
fn cut(text: &str) -> String {
    let mut end = text.len().min(BODY_IN_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let more = if end < text.len() { "…" } else { "" };
    format!("{}{more}", &text[..end])
}
