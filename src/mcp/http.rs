//! MCP over Streamable HTTP (`tdsl serve --mcp --listen HOST:PORT`): rmcp's transport
//! (sessions, SSE streams for progress, log messages and results, cancellation) served by
//! hyper at `/mcp`, behind the checks the MCP specification's security guidance asks for.
//!
//! | request | answer |
//! |---|---|
//! | a path other than `/mcp` | 404 |
//! | with `--token-file`: no `Authorization: Bearer <token>`, or another token | 401 with `WWW-Authenticate: Bearer` |
//! | a `Host` or `Origin` that is not the bound address (DNS rebinding) | 403 |
//! | a body over the request limit | 413 |
//! | a new session over the session limit | 503 with a JSON-RPC error |
//! | a `tools/call` over the limit of calls in flight | JSON-RPC error [`SERVER_BUSY`](super::SERVER_BUSY) |
//!
//! Tokens are compared in constant time ([`subtle`]).

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

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
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// The default limit on open sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// The default limit on `tools/call` requests in flight, all sessions together.
pub const DEFAULT_MAX_CALLS: usize = 16;

/// How the HTTP server is set up.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Host names accepted in `Host` and `Origin` besides the bound address.
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes.
    pub max_request_bytes: usize,
    /// The most sessions open at once.
    pub max_sessions: usize,
    /// The most `tools/call` requests in flight at once.
    pub max_calls: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_hosts: Vec::new(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_calls: DEFAULT_MAX_CALLS,
        }
    }
}

/// Checks that `addr` may be bound: a non-loopback address needs a token.
pub fn check_bind(addr: &SocketAddr, has_token: bool) -> Result<(), String> {
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
pub fn read_token(path: &Path) -> Result<String, String> {
    let shown = path.display();
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
    let text = std::fs::read_to_string(path).map_err(|e| format!("--token-file {shown}: {e}"))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("--token-file {shown}: the file is empty; put the bearer token in it"));
    }
    if token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!("--token-file {shown}: the token has spaces or control characters inside it"));
    }
    Ok(token.to_string())
}

/// The `Host` authorities and `Origin`s accepted for a server bound at `addr`: for a
/// loopback or unspecified address, `localhost`, `127.0.0.1` and `[::1]` with the bound
/// port; for another address, that address with the bound port; and each of `extra` (any
/// port, `http` or `https`).
pub fn allowed_authorities(addr: &SocketAddr, extra: &[String]) -> (Vec<String>, Vec<String>) {
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
}

impl Front {
    async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if request.uri().path() != "/mcp" {
            return plain(StatusCode::NOT_FOUND, "Not Found: MCP is served at /mcp");
        }
        if let Some(token) = &self.token {
            let given = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
            let Some(given) = given else { return unauthorized(None) };
            let Some(given) = strip_bearer(given) else { return unauthorized(Some("invalid_request")) };
            if !bool::from(given.ct_eq(token.as_bytes())) {
                return unauthorized(Some("invalid_token"));
            }
        }
        // A POST without a session id opens a session (its `initialize`).
        let opens_session = request.method() == http::Method::POST && !request.headers().contains_key("mcp-session-id");
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
        self.mcp.handle(request).await
    }
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
    /// Serves over Streamable HTTP on `listener` until `stop` completes (SIGTERM in `tdsl
    /// serve`): then stops accepting, cancels the calls in flight (killing their programs),
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
        });
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
                    let front = front.clone();
                    let ct = ct.clone();
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let front = front.clone();
                            async move { Ok::<_, Infallible>(front.handle(request).await) }
                        });
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
                        tokio::select! {
                            _ = conn => {}
                            () = ct.cancelled() => {}
                        }
                    });
                }
                // Reap finished connections as they end.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        server.shut_down();
        ct.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while server.calls_in_flight() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        connections.abort_all();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_bind_accepts_the_three_local_names_with_its_port() {
        let (hosts, origins) = allowed_authorities(&"127.0.0.1:8080".parse().unwrap(), &[]);
        assert_eq!(hosts, ["localhost:8080", "127.0.0.1:8080", "[::1]:8080"]);
        assert_eq!(origins, ["http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080"]);
    }

    #[test]
    fn another_bind_accepts_its_address_and_the_extra_names() {
        let (hosts, origins) = allowed_authorities(&"10.1.2.3:9000".parse().unwrap(), &["tools.example".into()]);
        assert_eq!(hosts, ["10.1.2.3:9000", "tools.example"]);
        assert_eq!(origins, ["http://10.1.2.3:9000", "http://tools.example:*", "https://tools.example:*"]);
    }

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        assert!(check_bind(&"127.0.0.1:1".parse().unwrap(), false).is_ok());
        assert!(check_bind(&"[::1]:1".parse().unwrap(), false).is_ok());
        assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), false).is_err());
        assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), true).is_ok());
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_trimmed() {
        assert_eq!(strip_bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(strip_bearer(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(strip_bearer(b"Basic abc"), None);
        assert_eq!(strip_bearer(b"Bearer "), None);
        assert_eq!(strip_bearer(b"Bear"), None);
    }
}
