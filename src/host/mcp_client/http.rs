//! The client side of MCP's Streamable HTTP transport for [`super::McpClients`]: rmcp's
//! `StreamableHttpClientTransport` over a small HTTP/1.1 client of hyper's (one connection
//! per request, `http://` or `https://`), so that `tdsl serve --plans --upstream NAME=URL`
//! and `mcp:URL#tool` endpoints reach an MCP server over HTTP without another HTTP stack.
//!
//! `https://` is rustls with ring (what ureq's `http:` endpoints already build): the
//! server's certificate must chain to the Mozilla roots (webpki-roots, as for `http:`
//! endpoints), to the system's store, or to the CAs of `SSL_CERT_FILE` / `SSL_CERT_DIR`
//! (which replace the system's store, as OpenSSL's do) or of the upstream's
//! `--upstream-ca NAME=FILE`; and it must name the URL's host (SNI is sent for a DNS name).
//! Nothing turns the checks off.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse, SseStream};

use crate::value::ValueStream;

/// The largest JSON answer, or event of an SSE answer, read from an MCP server: 16 MiB (as
/// over stdio, `super::stdio::MAX_MESSAGE_BYTES`).
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The largest CA file read (`--upstream-ca`, `SSL_CERT_FILE`): 16 MiB, some 70 times the
/// Mozilla bundle.
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How long connecting, and then the TLS handshake, may each take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why an HTTP request to an upstream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpClientError {
    /// The URL is not one this client can reach.
    #[error("{0}")]
    Url(String),
    /// Connecting or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// HTTP itself failed.
    #[error("{0}")]
    Hyper(#[from] hyper::Error),
    /// A request could not be built.
    #[error("{0}")]
    Http(#[from] http::Error),
    /// The TLS handshake failed: why, in words.
    #[error("{0}")]
    Tls(String),
}

/// An HTTP/1.1 client over TCP, or TLS over TCP, for rmcp's Streamable HTTP transport.
#[derive(Clone, Debug, Default)]
pub(crate) struct TcpHttpClient {
    /// How `https://` servers are checked (`None`: `https://` is refused).
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The last TLS handshake that failed: why, and whether trying again could help.
    tls_failure: Arc<Mutex<Option<TlsFailure>>>,
    /// Set when an answer was over [`MAX_MESSAGE_BYTES`], or held more values than
    /// `max_values`.
    cut: super::Cut,
    /// The most values of one message (`None`: not counted).
    max_values: Option<usize>,
}

/// Why a TLS handshake failed, in words that say what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TlsFailure {
    /// The message.
    pub message: String,
    /// Whether the next try would fail the same way (a certificate refused, no TLS on the
    /// port), so that a step is not retried for it.
    pub permanent: bool,
}

impl TcpHttpClient {
    /// The client for the server at `url`: for `https://`, trusting the default roots and
    /// the CA certificates of `extra_ca`; an answer (or an event) of more than `max_values`
    /// values is refused before rmcp reads it.
    pub(crate) fn for_url(url: &str, extra_ca: Option<&Path>, max_values: usize) -> Result<TcpHttpClient, String> {
        let max_values = Some(max_values);
        if !url.starts_with("https://") {
            return Ok(TcpHttpClient { max_values, ..TcpHttpClient::default() });
        }
        Ok(TcpHttpClient { tls: Some(tls_config(extra_ca)?), max_values, ..TcpHttpClient::default() })
    }

    /// The flags set when the server sent an answer (or an event) over 16 MiB, or of more
    /// values than the bound.
    pub(crate) fn cut(&self) -> super::Cut {
        self.cut.clone()
    }

    /// The last TLS handshake failure, taken (rmcp's error for it names its own types).
    pub(crate) fn take_tls_failure(&self) -> Option<TlsFailure> {
        self.tls_failure.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The roots every `https://` server is checked against: the Mozilla roots and the system's
/// store (or `SSL_CERT_FILE` / `SSL_CERT_DIR`), loaded once.
fn default_roots() -> Result<rustls::RootCertStore, String> {
    static ROOTS: OnceLock<Result<rustls::RootCertStore, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            // rustls-native-certs reads `SSL_CERT_FILE` whole, whatever it is: a FIFO would
            // hang the first `https://` call, `/dev/zero` fill the memory.
            if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
                if let Err(e) = crate::input::read_bytes_capped(Path::new(&file), MAX_CA_FILE_BYTES) {
                    return Err(format!("SSL_CERT_FILE={}: {e}", file.to_string_lossy()));
                }
            }
            let native = rustls_native_certs::load_native_certs();
            // A variable that names what cannot be read is the user's mistake, said once;
            // a system store that cannot be read leaves the Mozilla roots.
            for var in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
                if let (Some(value), Some(e)) = (std::env::var_os(var), native.errors.first()) {
                    return Err(format!("{var}={}: {e}", value.to_string_lossy()));
                }
            }
            roots.add_parsable_certificates(native.certs);
            Ok(roots)
        })
        .clone()
}

/// The certificates of a PEM file of CA certificates (`--upstream-ca NAME=FILE`), or why
/// it cannot be used.
pub(crate) fn load_ca_file(path: &Path) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    // Only a regular file, and no more of it than a CA bundle can need: a FIFO hung `serve`
    // at its start, `/dev/zero` or a 1 GB file was read whole.
    let bytes = crate::input::read_bytes_capped(path, MAX_CA_FILE_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM file of certificates: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no certificate (no `-----BEGIN CERTIFICATE-----` block)", path.display()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in &certs {
        roots
            .add(cert.clone())
            .map_err(|e| format!("{}: a certificate that cannot be trusted: {e}", path.display()))?;
    }
    Ok(certs)
}

/// The TLS settings of an `https://` server: the default roots and `extra_ca`'s.
pub(crate) fn tls_config(extra_ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = default_roots()?;
    if let Some(path) = extra_ca {
        for cert in load_ca_file(path)? {
            roots.add(cert).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A name of a certificate as webpki shows it (`DnsName("a.example")`, `IpAddress(10.0.0.1)`)
/// as a user writes it (`a.example`, `10.0.0.1`).
fn shown_name(presented: &str) -> &str {
    ["DnsName(", "IpAddress("]
        .iter()
        .find_map(|kind| presented.strip_prefix(kind).and_then(|rest| rest.strip_suffix(')')))
        .map_or(presented, |inner| inner.trim_matches('"'))
}

/// `host:port` as a URL writes it: an IPv6 address in brackets (`[::1]:8443`).
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Why the TLS handshake with `host` failed, in words that say what to do.
fn tls_failure(host: &str, port: u16, e: &std::io::Error) -> TlsFailure {
    use rustls::{CertificateError, Error, InvalidMessage};
    let at = host_port(host, port);
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<Error>());
    let date = |t: &rustls::pki_types::UnixTime| {
        chrono::DateTime::from_timestamp(i64::try_from(t.as_secs()).unwrap_or(i64::MAX), 0)
            .map_or_else(|| format!("{} s after 1970", t.as_secs()), |d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
    };
    let permanent = matches!(inner, Some(Error::InvalidCertificate(_) | Error::InvalidMessage(_)));
    let message = match inner {
        Some(Error::InvalidCertificate(c)) => match c {
            CertificateError::UnknownIssuer => format!(
                "the certificate of {at} is not signed by a CA tdsl trusts (the Mozilla roots, the system's, \
                 SSL_CERT_FILE or SSL_CERT_DIR): for a private CA, give its certificate in SSL_CERT_FILE \
                 or, for an upstream of `serve --plans`, with --upstream-ca NAME=FILE"
            ),
            CertificateError::NotValidForName => {
                format!("the certificate of {at} is not valid for the name `{host}`")
            }
            CertificateError::NotValidForNameContext { presented, .. } => format!(
                "the certificate of {at} is not valid for the name `{host}` (it is for {}): use a name it is for",
                if presented.is_empty() {
                    "no name".to_string()
                } else {
                    presented.iter().map(|p| shown_name(p)).collect::<Vec<_>>().join(", ")
                }
            ),
            CertificateError::Expired => format!("the certificate of {at} has expired"),
            CertificateError::ExpiredContext { time, not_after } => format!(
                "the certificate of {at} expired on {} (it is now {})",
                date(not_after),
                date(time)
            ),
            CertificateError::NotValidYet => format!("the certificate of {at} is not valid yet"),
            CertificateError::NotValidYetContext { time, not_before } => format!(
                "the certificate of {at} is not valid before {} (it is now {})",
                date(not_before),
                date(time)
            ),
            other => format!("the certificate of {at} was refused: {}", Error::InvalidCertificate(other.clone())),
        },
        // What is not a TLS record at all: a plain HTTP server's answer.
        Some(Error::InvalidMessage(
            InvalidMessage::InvalidContentType | InvalidMessage::UnknownProtocolVersion | InvalidMessage::MessageTooLarge,
        )) => format!("{at} did not answer in TLS (a plain HTTP server? then write its URL with http://)"),
        Some(Error::InvalidMessage(
            InvalidMessage::HandshakePayloadTooLarge | InvalidMessage::CertificatePayloadTooLarge,
        )) => format!(
            "{at} sent a TLS handshake message larger than tdsl accepts (64 KiB; a certificate chain that long?)"
        ),
        // TLS records, but not a handshake that follows the protocol.
        Some(Error::InvalidMessage(m)) => format!("{at} broke the TLS protocol in its handshake ({m:?})"),
        Some(other) => format!("the TLS handshake with {at} failed: {other}"),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => format!(
            "{at} closed the connection during the TLS handshake (does it serve TLS on that port? a plain HTTP server is written http://)"
        ),
        None => format!("the TLS handshake with {at} failed: {e}"),
    };
    TlsFailure { message, permanent }
}

type Sent = Result<http::Response<Incoming>, StreamableHttpError<HttpClientError>>;

fn client_error(e: impl Into<HttpClientError>) -> StreamableHttpError<HttpClientError> {
    StreamableHttpError::Client(e.into())
}

impl TcpHttpClient {
    /// Connects to the URL's host (over TLS for `https://`) and sends `request` on a fresh
    /// connection.
    async fn send(&self, mut request: Request<Full<Bytes>>) -> Sent {
        let uri = request.uri().clone();
        // On the wire in origin form (`POST /mcp HTTP/1.1`, the `Host` header naming the
        // server), as HTTP/1.1 clients write to an origin server: the absolute form
        // (`POST http://host:port/mcp`) is for proxies, which log it whole.
        let origin_form = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        *request.uri_mut() = origin_form.parse().map_err(|e: http::uri::InvalidUri| {
            client_error(HttpClientError::Url(format!("{}: {e}", super::url_origin(&uri.to_string()))))
        })?;
        // Named by its origin in errors: the path and query may hold a key.
        let shown = super::url_origin(&uri.to_string());
        let tls = match (uri.scheme_str(), &self.tls) {
            (Some("http"), _) => None,
            (Some("https"), Some(tls)) => Some(tls.clone()),
            _ => {
                return Err(client_error(HttpClientError::Url(format!(
                    "{shown}: only http:// and https:// URLs reach MCP servers"
                ))))
            }
        };
        let host = uri.host().ok_or_else(|| client_error(HttpClientError::Url(format!("{shown}: no host"))))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        // A port that is not a u16 (`:65536`) is not the scheme's default.
        let port = match (uri.port(), uri.port_u16()) {
            (Some(p), None) => {
                return Err(client_error(HttpClientError::Url(format!(
                    "{shown}: the port `{p}` is not one of 1–65535"
                ))))
            }
            (_, Some(p)) => p,
            (None, None) => {
                if tls.is_some() {
                    443
                } else {
                    80
                }
            }
        };
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect((host, port))).await {
            Ok(connected) => connected.map_err(client_error)?,
            Err(_) => {
                return Err(client_error(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("cannot connect to {} within {} s", host_port(host, port), CONNECT_TIMEOUT.as_secs()),
                )))
            }
        };
        let Some(tls) = tls else { return exchange(stream, request).await };
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| client_error(HttpClientError::Url(format!("{shown}: `{host}` is not a host name: {e}"))))?;
        let handshake =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio_rustls::TlsConnector::from(tls).connect(name, stream));
        let stream = match handshake.await {
            Ok(Ok(s)) => s,
            Err(_) => {
                // A server that takes the connection and says nothing (or a byte a second).
                let message = format!(
                    "{} took the connection but did not finish the TLS handshake within {} s",
                    host_port(host, port),
                    CONNECT_TIMEOUT.as_secs()
                );
                let failure = TlsFailure { message: message.clone(), permanent: false };
                *self.tls_failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(failure);
                return Err(client_error(HttpClientError::Tls(message)));
            }
            Ok(Err(e)) => {
                let failure = tls_failure(host, port, &e);
                let message = failure.message.clone();
                *self.tls_failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(failure);
                return Err(client_error(HttpClientError::Tls(message)));
            }
        };
        exchange(stream, request).await
    }
}

/// Sends `request` on the connection `stream` and gives the answer's head.
async fn exchange<S>(stream: S, request: Request<Full<Bytes>>) -> Sent
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.map_err(client_error)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.send_request(request).await.map_err(client_error)
}

fn builder(
    method: Method,
    uri: &str,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> http::request::Builder {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(host) = uri.parse::<http::Uri>().ok().and_then(|u| u.authority().cloned()) {
        b = b.header(header::HOST, host.as_str());
    }
    if let Some(token) = auth {
        b = b.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in custom {
        b = b.header(name, value);
    }
    b
}

fn auth_required(response: &http::Response<Incoming>) -> Option<StreamableHttpError<HttpClientError>> {
    if response.status() != StatusCode::UNAUTHORIZED {
        return None;
    }
    let www_authenticate_header =
        response.headers().get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or("Bearer").to_string();
    Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(www_authenticate_header)))
}

async fn body_bytes(
    response: http::Response<Incoming>,
    limit: usize,
) -> Result<Vec<u8>, StreamableHttpError<HttpClientError>> {
    let mut body = response.into_body();
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(client_error)?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// An SSE answer's body that fails at the first event longer than `limit` bytes (an event
/// ends at a blank line), setting `oversized`: `SseStream` would buffer it whole; or at the
/// first event whose data holds more values than `values` counts, setting `too_many`
/// (rmcp would read them all into `serde_json` values).
struct CappedEvents {
    inner: Incoming,
    limit: usize,
    /// Bytes of the current event so far.
    event: usize,
    /// Whether the last byte (`\r` aside) ended a line.
    at_line_start: bool,
    /// Bytes of the current line so far, and whether it begins `data:` as far as it goes.
    column: usize,
    data: bool,
    cut: super::Cut,
    /// The values of the current event's data so far (`None`: not counted).
    values: Option<ValueStream>,
}

impl CappedEvents {
    fn new(inner: Incoming, limit: usize, cut: super::Cut, max_values: Option<usize>) -> CappedEvents {
        let values = max_values.map(ValueStream::new);
        CappedEvents { inner, limit, event: 0, at_line_start: true, column: 0, data: true, cut, values }
    }

    /// Counts a byte of a line (not its end): a byte of a `data:` field's value (after the
    /// one space the field may have) is a byte of the event's JSON. False past the bound.
    fn count(&mut self, byte: u8) -> bool {
        const DATA: &[u8] = b"data:";
        let column = self.column;
        self.column += 1;
        if let Some(expected) = DATA.get(column) {
            self.data &= byte == *expected;
            return true;
        }
        if !self.data || (column == DATA.len() && byte == b' ') {
            return true;
        }
        self.values.as_mut().is_none_or(|v| v.byte(byte).is_ok())
    }
}

impl hyper::body::Body for CappedEvents {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.cut.too_many_values.load(Ordering::Relaxed)
            || (this.cut.oversized.load(Ordering::Relaxed) && this.event > this.limit)
        {
            return Poll::Ready(None);
        }
        let frame = match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(std::io::Error::other(e)))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        if let Some(data) = frame.data_ref() {
            for byte in data.iter() {
                match byte {
                    b'\r' => {}
                    b'\n' if this.at_line_start => {
                        this.event = 0;
                        if let Some(v) = this.values.as_mut() {
                            v.reset();
                        }
                    }
                    b'\n' => {
                        (this.at_line_start, this.column, this.data) = (true, 0, true);
                    }
                    _ => {
                        this.at_line_start = false;
                        this.event += 1;
                        if !this.count(*byte) {
                            this.cut.too_many_values.store(true, Ordering::Relaxed);
                            return Poll::Ready(Some(Err(std::io::Error::other(
                                "an event of the answer holds more values than tdsl reads",
                            ))));
                        }
                    }
                }
                if this.event > this.limit {
                    this.cut.oversized.store(true, Ordering::Relaxed);
                    return Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "an event of the answer is longer than {} MiB",
                        this.limit / (1024 * 1024)
                    )))));
                }
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }
}

fn is_notification_or_reply(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Notification(_) | ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_)
    )
}

impl StreamableHttpClient for TcpHttpClient {
    type Error = HttpClientError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let body = serde_json::to_vec(&message)?;
        let mut b = builder(Method::POST, &uri, auth_header, custom_headers)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "text/event-stream, application/json");
        let had_session = session_id.is_some();
        if let Some(sid) = session_id {
            b = b.header("Mcp-Session-Id", sid.as_ref());
        }
        let response = self.send(b.body(Full::new(Bytes::from(body))).map_err(client_error)?).await?;
        if let Some(e) = auth_required(&response) {
            return Err(e);
        }
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            let body = body_bytes(response, 64 * 1024).await.unwrap_or_default();
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim()).into(),
            ));
        }
        let session = response.headers().get("Mcp-Session-Id").and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type =
            response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        match content_type.as_deref() {
            Some(ct) if ct.starts_with("text/event-stream") => {
                let body =
                    CappedEvents::new(response.into_body(), MAX_MESSAGE_BYTES, self.cut.clone(), self.max_values);
                Ok(StreamableHttpPostResponse::Sse(SseStream::new(body).boxed(), session))
            }
            Some(ct) if ct.starts_with("application/json") => {
                let body = body_bytes(response, MAX_MESSAGE_BYTES).await.inspect_err(|e| {
                    if matches!(e, StreamableHttpError::ResponseBodyTooLarge { .. }) {
                        self.cut.oversized.store(true, Ordering::Relaxed);
                    }
                })?;
                if let Some(max) = self.max_values {
                    // Counted before rmcp reads it, as a stdio line is.
                    if crate::value::json_within(&body, max).is_err() {
                        self.cut.too_many_values.store(true, Ordering::Relaxed);
                        return Err(StreamableHttpError::UnexpectedServerResponse(
                            "the answer holds more values than tdsl reads".into(),
                        ));
                    }
                }
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session)),
                    Err(_) if is_notification_or_reply(&message) => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::Deserialize(e)),
                }
            }
            _ if is_notification_or_reply(&message) => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_string))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let request = builder(Method::DELETE, &uri, auth_header, custom_headers)
            .header("Mcp-Session-Id", session_id.as_ref())
            .body(Full::new(Bytes::new()))
            .map_err(client_error)?;
        let response = self.send(request).await?;
        if response.status().is_success() || response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(StreamableHttpError::UnexpectedServerResponse(
            format!("DELETE of the session answered {}", response.status()).into(),
        ))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<futures::stream::BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let mut b = builder(Method::GET, &uri, auth_header, custom_headers).header(header::ACCEPT, "text/event-stream");
        if let Some(sid) = session_id {
            b = b.header("Mcp-Session-Id", sid.as_ref());
        }
        if let Some(id) = last_event_id {
            b = b.header("Last-Event-Id", id);
        }
        let response = self.send(b.body(Full::new(Bytes::new())).map_err(client_error)?).await?;
        if let Some(e) = auth_required(&response) {
            return Err(e);
        }
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("GET of the event stream answered {}", response.status()).into(),
            ));
        }
        let body = CappedEvents::new(response.into_body(), MAX_MESSAGE_BYTES, self.cut.clone(), self.max_values);
        Ok(SseStream::new(body).boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `https://[::1]:8443` was named `::1:8443` in TLS errors.
    #[test]
    fn an_ipv6_host_is_named_in_brackets() {
        assert_eq!(host_port("::1", 8443), "[::1]:8443");
        assert_eq!(host_port("127.0.0.1", 443), "127.0.0.1:443");
        let e = std::io::Error::other(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType));
        assert!(tls_failure("::1", 8443, &e).message.starts_with("[::1]:8443 did not answer in TLS"));
    }
}
