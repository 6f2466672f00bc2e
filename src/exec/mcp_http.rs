//! The client side of MCP's Streamable HTTP transport for [`super::mcp::McpClients`]: rmcp's
//! `StreamableHttpClientTransport` over a small HTTP/1.1 client of hyper's (one connection
//! per request, plain `http://` only), so that `tdsl serve --plans --upstream NAME=URL`
//! reaches an MCP server over HTTP without another HTTP stack.

use std::collections::HashMap;
use std::sync::Arc;

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

/// The largest JSON answer (not SSE) read from an upstream: 16 MiB.
const MAX_JSON_BYTES: usize = 16 * 1024 * 1024;

/// Why an HTTP request to an upstream failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
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
}

/// An HTTP/1.1 client over TCP for rmcp's Streamable HTTP transport.
#[derive(Clone, Debug, Default)]
pub struct TcpHttpClient;

type Sent = Result<http::Response<Incoming>, StreamableHttpError<HttpClientError>>;

fn client_error(e: impl Into<HttpClientError>) -> StreamableHttpError<HttpClientError> {
    StreamableHttpError::Client(e.into())
}

/// Connects to the URL's host and sends `request` on a fresh connection.
async fn send(request: Request<Full<Bytes>>) -> Sent {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") {
        return Err(client_error(HttpClientError::Url(format!(
            "{uri}: only http:// URLs are supported for upstream MCP servers"
        ))));
    }
    let host = uri.host().ok_or_else(|| client_error(HttpClientError::Url(format!("{uri}: no host"))))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host, port)).await.map_err(client_error)?;
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
        let response = send(b.body(Full::new(Bytes::from(body))).map_err(client_error)?).await?;
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
                Ok(StreamableHttpPostResponse::Sse(SseStream::new(response.into_body()).boxed(), session))
            }
            Some(ct) if ct.starts_with("application/json") => {
                let body = body_bytes(response, MAX_JSON_BYTES).await?;
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
        let response = send(request).await?;
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
        let response = send(b.body(Full::new(Bytes::new())).map_err(client_error)?).await?;
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
        Ok(SseStream::new(response.into_body()).boxed())
    }
}
