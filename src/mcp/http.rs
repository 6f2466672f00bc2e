//! MCP over Streamable HTTP (`tdsl serve --mcp --listen HOST:PORT`): rmcp's transport
//! (sessions, SSE streams for progress, log messages and results, cancellation) served by
//! hyper at `/mcp`, behind the checks the MCP specification's security guidance asks for.
//!
//! | request | answer |
//! |---|---|
//! | a path other than `/mcp` | 404 |
//! | with `--token-file`: no `Authorization: Bearer <token>`, or another token | 401 with `WWW-Authenticate: Bearer` |
//! | two `Host` headers (RFC 9112) or two `Origin` headers | 400 |
//! | a `Host` or `Origin` that is not the bound address (DNS rebinding) | 403 |
//! | a body over the request limit | 413 (when it is the client's answer to a request of the server, that request fails at once: [`framing::unreadable_answer`](super::framing::unreadable_answer)) |
//! | a new session over the session limit | 503 with a JSON-RPC error |
//! | a body that is not a JSON-RPC message (not JSON, a key twice in one object, a batch, …) | 400 with the JSON-RPC error [`framing::judge`](super::framing::judge) gives it on stdio (`-32700` parse error for a body that is not JSON) |
//! | `DELETE /mcp` of a session that is not open | 404 |
//! | a `tools/call` over the limit of calls in flight | JSON-RPC error [`SERVER_BUSY`](super::SERVER_BUSY) |
//!
//! Tokens are compared in constant time ([`subtle`]).
//!
//! Connections are bounded two ways, so that clients holding connections open cannot starve
//! the others or exhaust the process's file descriptors:
//!
//! - **read timeout** ([`HttpOptions::read_timeout`], `serve --read-timeout`): a connection
//!   that has not sent a complete request (headers and body) within the timeout of opening,
//!   or of the end of its last answer, is closed; so is one whose client has read nothing of
//!   an answer for as long (its writes have not gone on: [`Watching`]), which would hold a
//!   slice of the answer in hyper's write buffer, and its text in the registry
//!   ([`super::spliced`]), as long as it stays open;
//! - **connection cap** ([`HttpOptions::max_connections`], `serve --max-connections`, below
//!   the descriptor limit): a connection accepted at the cap closes the open connection that
//!   has waited longest without a request being answered on it; when every open connection
//!   is answering a request (a call in flight, an SSE stream), the new one is closed at once.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{McpServer, SHUTDOWN_GRACE};

/// The default limit on a request's body: 4 MiB.
pub(crate) const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// A body larger than this waits for one of [`DECODES_AT_ONCE`] permits to be decoded.
pub(crate) const LARGE_BODY_BYTES: usize = 64 * 1024;
/// How many large bodies are decoded at once, all connections together.
pub(crate) const DECODES_AT_ONCE: usize = 4;
/// The most bytes hyper buffers on one connection ahead of what reads them (headers
/// included: a request's head must fit).
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// The default budget of request body bytes held at once, all connections together, past the
/// first [`LARGE_BODY_BYTES`] of each body ([`HttpOptions::max_body_bytes_in_flight`]).
pub(crate) const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT: usize = 64 * 1024 * 1024;
/// The default limit on open sessions.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 64;
/// The default limit on `tools/call` requests in flight, all sessions together (the same
/// as over stdio).
pub(crate) const DEFAULT_MAX_CALLS: usize = super::DEFAULT_MAX_CALLS;
/// The default time a connection has to send a complete request: 30 s.
pub(crate) const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections open at once by default: half the descriptor limit, at most this.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Descriptors kept free of connections: the listener, the history, the programs of calls
/// in flight and what the runtime needs. `--max-connections` may go up to the descriptor
/// limit less this.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) const RESERVED_DESCRIPTORS: u64 = 64;
/// The largest token file read: 64 KiB.
pub(crate) const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// How the HTTP server is set up.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Host names accepted in `Host` and `Origin` besides the bound address.
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes.
    pub max_request_bytes: usize,
    /// The most bytes of request bodies held at once, all connections together, not counting
    /// the first [`LARGE_BODY_BYTES`] of each (so that small requests never wait): a body
    /// read past it waits, as it arrives, for bytes to be given back (a request answered,
    /// a connection closed). At least [`HttpOptions::max_request_bytes`].
    pub max_body_bytes_in_flight: usize,
    /// The most values a request's body may hold ([`framing::count_values`](super::framing::count_values)).
    pub max_request_values: usize,
    /// The most sessions open at once.
    pub max_sessions: usize,
    /// The most `tools/call` requests in flight at once.
    pub max_calls: usize,
    /// How long a connection may take to send a complete request (headers and body),
    /// counted from its opening or from the end of its last answer, and how long its client
    /// may read nothing of an answer; then it is closed.
    pub read_timeout: Duration,
    /// The most connections open at once (see the module's documentation).
    pub max_connections: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_hosts: Vec::new(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_body_bytes_in_flight: DEFAULT_MAX_BODY_BYTES_IN_FLIGHT,
            max_request_values: super::framing::DEFAULT_MAX_REQUEST_VALUES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_calls: DEFAULT_MAX_CALLS,
            read_timeout: DEFAULT_READ_TIMEOUT,
            max_connections: default_max_connections(),
        }
    }
}

/// The process's limit on open file descriptors (its soft `RLIMIT_NOFILE`), when known.
pub(crate) fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrlimit, Resource};
        getrlimit(Resource::RLIMIT_NOFILE).ok().map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    None
}

/// The default cap on open connections: half the descriptor limit, at most
/// [`DEFAULT_MAX_CONNECTIONS`] (512 under the common limit of 1,024 descriptors).
pub(crate) fn default_max_connections() -> usize {
    match descriptor_limit() {
        Some(n) => usize::try_from(n / 2).unwrap_or(usize::MAX).clamp(1, DEFAULT_MAX_CONNECTIONS),
        None => DEFAULT_MAX_CONNECTIONS,
    }
}

/// Checks that `max` connections fit under the descriptor limit, less
/// [`RESERVED_DESCRIPTORS`].
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn check_max_connections(max: u64) -> Result<(), String> {
    let Some(limit) = descriptor_limit() else { return Ok(()) };
    let room = limit.saturating_sub(RESERVED_DESCRIPTORS);
    if max > room {
        return Err(format!(
            "--max-connections {max}: the process may have only {limit} files open (`ulimit -n`), \
             and {RESERVED_DESCRIPTORS} of them are kept for other uses; give at most {room}, or raise the limit"
        ));
    }
    Ok(())
}

/// Checks that `addr` may be bound: a non-loopback address needs a token.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn check_bind(addr: &SocketAddr, has_token: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || has_token {
        return Ok(());
    }
    Err(format!(
        "--listen {addr}: serving MCP on a non-loopback address lets other machines run the served tools; \
         give --token-file FILE so that every request must carry its bearer token, or listen on 127.0.0.1"
    ))
}

/// Reads the bearer token from `path`: its content with surrounding whitespace trimmed. The
/// file must not be readable by its group or by others, and the token must not be empty.
///
/// Only a regular file of at most [`MAX_TOKEN_FILE_BYTES`] is read: a FIFO, a device or a
/// folder is refused at once (never waited on), and so is a larger file.
pub(crate) fn read_token(path: &Path) -> Result<String, String> {
    use crate::input::{read_bytes_capped, InputError};
    let shown = path.display();
    let bytes = read_bytes_capped(path, MAX_TOKEN_FILE_BYTES).map_err(|e| match e {
        InputError::TooLarge { limit } => format!(
            "--token-file {shown}: the file is larger than {} KiB, the most a token file may hold; \
             put only the token in it",
            limit / 1024
        ),
        e => format!("--token-file {shown}: {e}"),
    })?;
    let meta = std::fs::metadata(path).map_err(|e| format!("--token-file {shown}: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o044 != 0 {
            return Err(format!(
                "--token-file {shown}: the file is readable by other users (mode {mode:03o}); \
                 make it private with `chmod 600 {shown}`"
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let text = String::from_utf8(bytes).map_err(|_| format!("--token-file {shown}: the file is not UTF-8 text"))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("--token-file {shown}: the file is empty; put the bearer token in it"));
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!("--token-file {shown}: the token has spaces or control characters inside it"));
    }
    // Never read by a plan's file functions, and redacted wherever it is echoed.
    crate::secrets::register_file(path, &[]);
    crate::secrets::register(token);
    Ok(token.to_string())
}

/// The `Host` authorities and `Origin`s accepted for a server bound at `addr`: for a
/// loopback or unspecified address, `localhost`, `127.0.0.1` and `[::1]` with the bound
/// port; for another address, that address with the bound port; and each of `extra` (any
/// port, `http` or `https`).
pub(crate) fn allowed_authorities(addr: &SocketAddr, extra: &[String]) -> (Vec<String>, Vec<String>) {
    let port = addr.port();
    let mut hosts: Vec<String> = if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]
    } else {
        vec![match addr.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        }]
    };
    let mut origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}:{port}")).collect();
    hosts = hosts.into_iter().map(|h| format!("{h}:{port}")).collect();
    for name in extra {
        hosts.push(name.clone());
        origins.push(format!("http://{name}:*"));
        origins.push(format!("https://{name}:*"));
    }
    (hosts, origins)
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

fn json_rpc_error(status: StatusCode, code: i32, message: &str) -> Response<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    r
}

fn unauthorized(error: Option<&'static str>) -> Response<Body> {
    let mut r = plain(StatusCode::UNAUTHORIZED, "Unauthorized: this server needs `Authorization: Bearer <token>`");
    let challenge = match error {
        Some(e) => format!("Bearer realm=\"tdsl\", error=\"{e}\""),
        None => "Bearer realm=\"tdsl\"".to_string(),
    };
    if let Ok(v) = header::HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// The HTTP front: path, token and session limit, then rmcp (Host, Origin, body size,
/// the protocol).
struct Front {
    mcp: StreamableHttpService<McpServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    token: Option<String>,
    max_sessions: usize,
    max_request_bytes: usize,
    max_request_values: usize,
    /// Permits to decode a large body ([`LARGE_BODY_BYTES`]), [`DECODES_AT_ONCE`] of them.
    decoding: tokio::sync::Semaphore,
    /// The bytes of bodies that may be held past the first [`LARGE_BODY_BYTES`] of each
    /// ([`HttpOptions::max_body_bytes_in_flight`]), one permit a byte.
    body_bytes: tokio::sync::Semaphore,
}

impl Front {
    /// One request: its body read first (for a POST), then answered; `conn` is busy from the
    /// end of the request until its answer has been sent, so that the read timeout and the
    /// connection cap leave it alone.
    async fn serve(&self, request: Request<hyper::body::Incoming>, conn: &Arc<Conn>) -> Response<Answered> {
        let (parts, body) = request.into_parts();
        // The path and the token first: a client without the token gets nothing read.
        if let Some(refused) = self.gate(&parts) {
            return answered(refused, Busy::new(conn));
        }
        // The budget's bytes are held until the request is answered (its body decoded).
        let (body, _held) = if parts.method == http::Method::POST {
            match read_body(body, self.max_request_bytes, &self.body_bytes).await {
                Ok(read) => read,
                Err(e) => {
                    let busy = Busy::new(conn);
                    return answered(
                        plain(StatusCode::BAD_REQUEST, &format!("Bad Request: the body could not be read: {e}")),
                        busy,
                    );
                }
            }
        } else {
            (Bytes::new(), None)
        };
        let busy = Busy::new(conn);
        // The response a call's answer goes out on: the answer's texts are orphaned when it
        // is dropped first — its client gone, this future dropped with its connection or the
        // body with it — rather than held for rmcp, which drops the answer.
        let stream = super::spliced::Stream::default();
        let watched = Watched(stream.clone());
        let mut parts = parts;
        parts.extensions.insert(stream);
        let response = self.handle(Request::from_parts(parts, body)).await;
        let (response, sliced) = sliced_json(response).await;
        let mut response = answered(response, busy);
        response.body_mut().watched = Some(watched);
        response.body_mut().sliced = sliced;
        response
    }

    /// A path other than `/mcp` (404) or a missing or wrong token (401).
    fn gate(&self, parts: &http::request::Parts) -> Option<Response<Body>> {
        if parts.uri.path() != "/mcp" {
            return Some(plain(StatusCode::NOT_FOUND, "Not Found: MCP is served at /mcp"));
        }
        // Two `Host`s (RFC 9112 §3.2: 400) or two `Origin`s: which one a check reads is up to
        // the reader, so neither is trusted.
        for name in [header::HOST, header::ORIGIN] {
            if parts.headers.get_all(&name).iter().nth(1).is_some() {
                return Some(plain(
                    StatusCode::BAD_REQUEST,
                    &format!("Bad Request: the request has more than one `{name}` header"),
                ));
            }
        }
        if let Some(token) = &self.token {
            let given = parts.headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
            let Some(given) = given else { return Some(unauthorized(None)) };
            let Some(given) = strip_bearer(given) else { return Some(unauthorized(Some("invalid_request"))) };
            if !bool::from(given.ct_eq(token.as_bytes())) {
                return Some(unauthorized(Some("invalid_token")));
            }
        }
        None
    }

    /// A request that passed [`Front::gate`], its body read.
    async fn handle(&self, request: Request<Bytes>) -> Response<Body> {
        let is_post = request.method() == http::Method::POST;
        // The session before the body: a POST without a session id must be an `initialize`
        // (found by a scan of the body's top level, which builds nothing), and one with a
        // session id must name an open session; anything else is refused undecoded.
        let session = request.headers().get("mcp-session-id");
        if is_post {
            if let Some(refused) = self.session_refusal(&request, session, request.body()).await {
                return refused;
            }
        }
        // A POST without a session id opens a session (its `initialize`).
        let opens_session = is_post && session.is_none();
        if opens_session && self.sessions.sessions.read().await.len() >= self.max_sessions {
            return json_rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32000,
                &format!(
                    "the server has {} sessions open, its limit (serve --max-sessions); close one (DELETE /mcp) or try later",
                    self.max_sessions
                ),
            );
        }
        // `DELETE` of a session that is not open: rmcp answers 202; the protocol says 404.
        let deletes_unknown = request.method() == http::Method::DELETE && {
            let id = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok());
            match id {
                Some(id) => !self.sessions.sessions.read().await.contains_key(id),
                None => false,
            }
        };
        // The client's answer to a request of the server (a `sampling/createMessage`) over the
        // body limit: rmcp answers it 413, and the request it answers would wait for an answer
        // that will not come; rmcp gets an error response with its id in its place as well, so
        // that the request fails now, saying why (the stdio framing does the same).
        if request.method() == http::Method::POST && request.body().len() > self.max_request_bytes {
            let why = format!("its body is larger than the server's limit of {} bytes", self.max_request_bytes);
            if let Some(stand_in) = super::framing::unreadable_answer(request.body(), -32600, &why) {
                self.hand_in_place(&request, &stand_in).await;
            }
        }
        // Decoding a large body costs many times its size (docs/mcp.md, "The cost of a
        // message"): a few at once, the others wait their turn (their connection busy).
        let _decoding = match is_post && request.body().len() > LARGE_BODY_BYTES {
            true => self.decoding.acquire().await.ok(),
            false => None,
        };
        let body = is_post.then(|| request.body().clone());
        if let Some(body) = body.as_ref().filter(|b| b.len() <= self.max_request_bytes) {
            // More values than the server reads: refused before any is built, with the
            // request's `id`; the client's answer to a request of the server fails that
            // request at once instead (as on stdio).
            if let Err(over) = super::framing::count_values(body, self.max_request_values) {
                let why = over.message();
                if let Some(stand_in) = super::framing::unreadable_answer(body, -32600, &why) {
                    self.hand_in_place(&request, &stand_in).await;
                }
                let error = serde_json::json!({"jsonrpc": "2.0", "id": super::framing::recover_id(body),
                    "error": {"code": -32600, "message": why}});
                return json_response(StatusCode::BAD_REQUEST, &error);
            }
            // A key twice in one object: rmcp's reader would keep one of them silently, or
            // answer without the request's `id`; the stdio framing's answer, with the `id`,
            // instead.
            if let Err(e) = super::framing::parse_unique(body) {
                if e.classify() == serde_json::error::Category::Data {
                    if let super::framing::Verdict::Answer(error) =
                        super::framing::judge_message(body, false, self.max_request_values)
                    {
                        return json_response(StatusCode::BAD_REQUEST, &error);
                    }
                }
            }
        }
        let response = self.mcp.handle(request.map(Full::new)).await;
        if deletes_unknown && response.status().is_success() {
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
        }
        // rmcp answers 415 to a body it cannot read (after its checks of Host, Origin, Accept
        // and Content-Type): the body gets the JSON-RPC error the stdio framing gives it.
        if let Some(body) = body.filter(|_| response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE) {
            if let super::framing::Verdict::Answer(error) =
                super::framing::judge_message(&body, false, self.max_request_values)
            {
                return json_response(StatusCode::BAD_REQUEST, &error);
            }
        }
        response
    }
}

impl Front {
    /// Hands rmcp `stand_in` (an error response with the id of the client's answer that
    /// could not be read) in the place of `request`'s body, so that the request of the
    /// server it answers fails now, saying why.
    async fn hand_in_place(&self, request: &Request<Bytes>, stand_in: &serde_json::Value) {
        let mut instead = Request::new(Full::new(Bytes::from(stand_in.to_string())));
        *instead.method_mut() = http::Method::POST;
        *instead.uri_mut() = request.uri().clone();
        *instead.headers_mut() = request.headers().clone();
        instead.headers_mut().remove(header::CONTENT_LENGTH);
        let _ = self.mcp.handle(instead).await;
    }

    /// Why a POST is refused for its session, before its body is decoded: no
    /// `Mcp-Session-Id` and not an `initialize` (400, the JSON-RPC error with the request's
    /// `id` read from the body's top level), or a session that is not open (404).
    async fn session_refusal(
        &self,
        request: &Request<Bytes>,
        session: Option<&header::HeaderValue>,
        body: &Bytes,
    ) -> Option<Response<Body>> {
        let refusal = self.session_refusal_of(session, body).await?;
        // rmcp's checks of Host, Origin, Accept and Content-Type come first: it gets a
        // small stand-in body, and its answer stands unless it is about the session.
        let mut instead = Request::new(Full::new(Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)));
        *instead.method_mut() = http::Method::POST;
        *instead.uri_mut() = request.uri().clone();
        *instead.headers_mut() = request.headers().clone();
        instead.headers_mut().remove(header::CONTENT_LENGTH);
        let theirs = self.mcp.handle(instead).await;
        match theirs.status() {
            StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND => Some(refusal),
            _ => Some(theirs),
        }
    }

    async fn session_refusal_of(&self, session: Option<&header::HeaderValue>, body: &Bytes) -> Option<Response<Body>> {
        match session {
            None => {
                let method = super::framing::top_level_scalar(body, "method");
                if method.as_ref().and_then(serde_json::Value::as_str) == Some("initialize") {
                    return None;
                }
                let error = serde_json::json!({"jsonrpc": "2.0", "id": super::framing::recover_id(body),
                    "error": {"code": -32600, "message": SESSION_REQUIRED}});
                Some(json_response(StatusCode::BAD_REQUEST, &error))
            }
            Some(id) => {
                let open = match id.to_str() {
                    Ok(id) => self.sessions.sessions.read().await.contains_key(id),
                    Err(_) => false,
                };
                (!open).then(|| plain(StatusCode::NOT_FOUND, "Not Found: Session not found"))
            }
        }
    }
}

/// The message of the error a POST without a session that is not an `initialize` gets.
pub(crate) const SESSION_REQUIRED: &str = "Bad Request: Session ID is required: a request without an \
    `Mcp-Session-Id` header must be an `initialize` (its body was not decoded)";

/// The body of a request, at most `limit` bytes of it and one more (rmcp answers 413 to a
/// longer one, once it has checked the headers), and the permits of `budget` it holds: one
/// for each byte past the first [`LARGE_BODY_BYTES`], taken as the bytes arrive (a body that
/// would pass the budget waits there, its connection not busy: the read timeout still runs).
async fn read_body(
    mut body: hyper::body::Incoming,
    limit: usize,
    budget: &tokio::sync::Semaphore,
) -> Result<(Bytes, Option<tokio::sync::SemaphorePermit<'_>>), hyper::Error> {
    let mut collected: Vec<u8> = Vec::new();
    let mut held: Option<tokio::sync::SemaphorePermit<'_>> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else { continue };
        let room = (limit + 1).saturating_sub(collected.len());
        let taken = &data[..room.min(data.len())];
        // What is held is the buffer's capacity: it grows by doubling, within the limit, and
        // each growth is paid for before it is made.
        let needed = collected.len() + taken.len();
        let capacity = collected.capacity();
        let grown = if needed > capacity { needed.max(2 * capacity).min(limit + 1) } else { capacity };
        let counted = grown.saturating_sub(LARGE_BODY_BYTES) - capacity.saturating_sub(LARGE_BODY_BYTES);
        if counted > 0 {
            // A frame is at most hyper's read buffer (far below `u32::MAX`); the semaphore is
            // never closed.
            if let Ok(permit) = budget.acquire_many(u32::try_from(counted).unwrap_or(u32::MAX)).await {
                match held.as_mut() {
                    Some(h) => h.merge(permit),
                    None => held = Some(permit),
                }
            }
        }
        if grown > capacity {
            collected.reserve_exact(grown - collected.len());
        }
        collected.extend_from_slice(taken);
        if collected.len() > limit {
            break;
        }
    }
    Ok((Bytes::from(collected), held))
}

/// A JSON answer (one message) holding a large answer's marks: its body, read (rmcp writes a
/// JSON answer at once: nothing is waited for), to be written in slices ([`Answered`]); then
/// its length is not told (the body goes out chunked). `None` for any other answer: an event
/// stream is written event by event as it goes, each event holding marks in slices.
async fn sliced_json(response: Response<Body>) -> (Response<Body>, Option<super::spliced::Sliced>) {
    let is_json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !is_json {
        return (response, None);
    }
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    match super::spliced::Sliced::new(Vec::from(bytes)) {
        Ok(sliced) => (Response::from_parts(parts, Full::new(Bytes::new()).boxed()), Some(sliced)),
        Err(bytes) => (Response::from_parts(parts, Full::new(Bytes::from(bytes)).boxed()), None),
    }
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    r
}

/// One open connection, as the accept loop tracks it.
struct Conn {
    /// Requests on it being answered: read to their end, their answer not yet sent.
    busy: AtomicUsize,
    /// When it last had no request being answered (its opening, or the end of its last
    /// answer).
    idle_since: Mutex<Instant>,
    /// Since when a write to it has not gone on (its client reads nothing of an answer),
    /// while none has ([`Watching`]).
    stalled_since: Mutex<Option<Instant>>,
    /// Closes it.
    close: CancellationToken,
}

/// Marks a connection busy while it lives (a request read, its answer not yet sent).
struct Busy(Arc<Conn>);

impl Busy {
    fn new(conn: &Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        Busy(conn.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }
}

/// An answer's body, keeping its connection busy until it is sent (or dropped). A message
/// holding a large answer's marks (an event of a stream, or a JSON answer) is written in
/// slices ([`super::spliced::Sliced`]), one frame each, as hyper asks for frames: hyper asks
/// for the next when its write buffer (at most [`READ_BUFFER_BYTES`] queued) has room, so a
/// client that reads nothing holds a slice or two here, not the message spliced whole; the
/// texts stay in the registry, within `--max-answer-bytes-held`, until written.
struct Answered {
    /// The message being written in slices, while one is. Dropped unfinished (its
    /// connection closed), it lets go the texts it claimed, before `watched` is told.
    sliced: Option<super::spliced::Sliced>,
    body: Body,
    _busy: Busy,
    /// The answers to go out in it, told when it is dropped.
    watched: Option<Watched>,
}

fn answered(response: Response<Body>, busy: Busy) -> Response<Answered> {
    response.map(|body| Answered { sliced: None, body, _busy: busy, watched: None })
}

/// Tells its [`super::spliced::Stream`] that the response is gone when dropped.
struct Watched(super::spliced::Stream);

impl Drop for Watched {
    fn drop(&mut self) {
        self.0.gone();
    }
}

impl hyper::body::Body for Answered {
    type Data = Bytes;
    /// A message cut: an answer's text forgotten to make room while it was being written
    /// (hyper closes the connection).
    type Error = super::spliced::Cut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, super::spliced::Cut>>> {
        loop {
            if let Some(sliced) = self.sliced.as_mut() {
                match sliced.next_slice() {
                    Some(Ok(slice)) => return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(slice))))),
                    Some(Err(cut)) => {
                        self.sliced = None;
                        return Poll::Ready(Some(Err(cut)));
                    }
                    None => self.sliced = None,
                }
            }
            // An event of a stream is one frame: a large answer's marks are in one.
            let frame = match std::task::ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(never)) => match never {},
                None => return Poll::Ready(None),
            };
            let data = match frame.into_data() {
                Ok(data) => data,
                Err(frame) => return Poll::Ready(Some(Ok(frame))),
            };
            // Most frames hold no mark (one search): they go as they are.
            if !super::spliced::holds_mark(&data) {
                return Poll::Ready(Some(Ok(hyper::body::Frame::data(data))));
            }
            match super::spliced::Sliced::new(Vec::from(data)) {
                Ok(sliced) => self.sliced = Some(sliced),
                Err(data) => return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(data))))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.sliced.is_none() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        // A message written in slices: its length is not known before.
        match self.sliced {
            Some(_) => hyper::body::SizeHint::default(),
            None => self.body.size_hint(),
        }
    }
}

/// The open connections.
#[derive(Default)]
struct Conns {
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Conns {
    /// Registers a new connection under the cap of `max`: at the cap, the connection idle
    /// the longest is closed to make room; `None` (the new one is to be closed) when every
    /// open connection is busy.
    fn admit(&self, max: usize, close: CancellationToken) -> Option<(u64, Arc<Conn>)> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        while open.len() >= max.max(1) {
            let oldest = open
                .iter()
                .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, c)| *c.idle_since.lock().unwrap_or_else(PoisonError::into_inner))
                .map(|(id, _)| *id)?;
            if let Some(c) = open.remove(&oldest) {
                c.close.cancel();
            }
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            stalled_since: Mutex::new(None),
            close,
        });
        open.insert(id, conn.clone());
        Some((id, conn))
    }

    /// Forgets a connection that ended.
    fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }

    /// Closes every connection that has had no request being answered since `before`, and
    /// every one whose writes have not gone on since `before` (its client reads nothing of
    /// its answer: a slice of it, and its text, would be held as long as it stays open).
    fn close_idle_since(&self, before: Instant) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|_, c| {
            let idle = c.busy.load(Ordering::SeqCst) == 0
                && *c.idle_since.lock().unwrap_or_else(PoisonError::into_inner) <= before;
            let stalled =
                c.stalled_since.lock().unwrap_or_else(PoisonError::into_inner).is_some_and(|since| since <= before);
            if idle || stalled {
                c.close.cancel();
            }
            !(idle || stalled)
        });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// A connection's socket, noting on its [`Conn`] since when a write has not gone on (the
/// socket's buffers full: its client reads nothing) and when one went on again.
struct Watching {
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
}

impl Watching {
    fn noted<T>(&self, written: Poll<T>) -> Poll<T> {
        let mut stalled = self.conn.stalled_since.lock().unwrap_or_else(PoisonError::into_inner);
        match written {
            Poll::Pending => {
                stalled.get_or_insert_with(Instant::now);
            }
            Poll::Ready(_) => *stalled = None,
        }
        written
    }
}

impl tokio::io::AsyncRead for Watching {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Watching {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.noted(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.noted(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Forgets its connection when the connection's task ends.
struct Registered(Arc<Conns>, u64);

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// How often idle connections are looked for: a tenth of the read timeout, between 50 ms
/// and 1 s.
fn sweep_period(read_timeout: Duration) -> Duration {
    (read_timeout / 10).clamp(Duration::from_millis(50), Duration::from_secs(1))
}

/// `Bearer <token>` (the scheme in any case) → the token.
fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let rest = rest.trim_ascii();
    (!rest.is_empty()).then_some(rest)
}

impl McpServer {
    /// Serves over Streamable HTTP on `listener` until `stop` completes (SIGTERM, SIGINT or
    /// SIGHUP in `tdsl serve`): then stops accepting, cancels the calls in flight (killing their programs),
    /// ends the sessions, and returns once the calls have answered or after
    /// [`SHUTDOWN_GRACE`].
    pub async fn serve_http(
        self,
        listener: TcpListener,
        options: HttpOptions,
        stop: impl Future<Output = ()> + Send,
    ) -> Result<(), String> {
        let addr = listener.local_addr().map_err(|e| format!("the listening socket: {e}"))?;
        let (hosts, origins) = allowed_authorities(&addr, &options.allowed_hosts);
        let ct = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_request_bytes)
            .with_cancellation_token(ct.clone());
        let server = self.with_call_limit(options.max_calls);
        let sessions = Arc::new(LocalSessionManager::default());
        let factory = {
            let server = server.clone();
            move || Ok(server.for_session())
        };
        let front = Arc::new(Front {
            mcp: StreamableHttpService::new(factory, sessions.clone(), config),
            sessions,
            token: options.token,
            max_sessions: options.max_sessions,
            max_request_bytes: options.max_request_bytes,
            max_request_values: options.max_request_values,
            decoding: tokio::sync::Semaphore::new(DECODES_AT_ONCE),
            body_bytes: tokio::sync::Semaphore::new(
                options
                    .max_body_bytes_in_flight
                    .max(options.max_request_bytes)
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            ),
        });
        let conns = Arc::new(Conns::default());
        let read_timeout = options.read_timeout;
        let period = sweep_period(read_timeout);
        let mut sweep = tokio::time::interval(period);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop = std::pin::pin!(stop);
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = &mut stop => break,
                accepted = listener.accept() => {
                    // A failed accept (out of file descriptors, a reset) leaves the server up.
                    let Ok((stream, _)) = accepted else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    // At the cap with every connection busy, the new one is closed (dropped).
                    let Some((id, conn)) = conns.admit(options.max_connections, ct.child_token()) else { continue };
                    let registered = Registered(conns.clone(), id);
                    let front = front.clone();
                    connections.spawn(async move {
                        let _registered = registered;
                        let close = conn.close.clone();
                        let io = hyper_util::rt::TokioIo::new(Watching { stream, conn: conn.clone() });
                        let service = hyper::service::service_fn(move |request| {
                            let (front, conn) = (front.clone(), conn.clone());
                            async move { Ok::<_, Infallible>(front.serve(request, &conn).await) }
                        });
                        let served = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(read_timeout)
                            // What hyper reads ahead of the body's reader, per connection
                            // (its default is 408 KiB: 200 MiB over 512 connections).
                            .max_buf_size(READ_BUFFER_BYTES)
                            .serve_connection(io, service);
                        tokio::select! {
                            _ = served => {}
                            () = close.cancelled() => {}
                        }
                    });
                }
                // Connections without a complete request for the read timeout are closed
                // (within it: looked for every `period`), and those whose client has read
                // nothing of an answer for as long.
                _ = sweep.tick() => {
                    if let Some(before) = Instant::now().checked_sub(read_timeout.saturating_sub(period)) {
                        conns.close_idle_since(before);
                    }
                }
                // Reap finished connections as they end.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        server.shut_down();
        ct.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            // Calls answered as cancelled (their sessions ended) whose runs are winding down
            // are waited for too, so that they record their own ends.
            while server.calls_in_flight() > 0 || server.has_leftover_runs() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        server.end_leftover_runs();
        connections.abort_all();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
