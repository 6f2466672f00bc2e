//! The model side of the composer: the [`ModelClient`] trait a host implements (or takes
//! from [`crate::compose::openai`], [`crate::compose::anthropic`] or, inside `serve --mcp`,
//! [`crate::compose::sampling`]: the MCP client's own model), what one request asks and what
//! comes back, and the one HTTP call both HTTP providers make (ureq, blocking).

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value as Json;

/// Which phase a model request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Phase 1: the query into sub-questions.
    Decompose,
    /// Phase 2: the sub-questions into a plan.
    Plan,
    /// Phase 3: the plan runs (no model request).
    Execute,
    /// Phase 4: the results into an answer.
    Synthesize,
}

impl Phase {
    /// `decompose`, `plan`, `execute`, `synthesize`: the keys of `phase_durations`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Decompose => "decompose",
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Synthesize => "synthesize",
        }
    }
}

/// One message of the conversation of a phase.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user", content: content.into() }
    }

    /// An assistant message (the model's earlier answer, in a repair round).
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant", content: content.into() }
    }
}

/// One request to the model: a system prompt, the conversation so far, and the JSON Schema
/// the answer must follow (asked for the way each API supports it).
#[derive(Clone, Debug)]
pub struct ModelRequest {
    /// The phase.
    pub phase: Phase,
    /// The system prompt.
    pub system: String,
    /// The conversation: the phase's question, then, in a repair round, the earlier answer
    /// and what was wrong with it.
    pub messages: Vec<Message>,
    /// The name of the structured answer (`decomposition_result`, `execution_plan`,
    /// `composed_response`): the JSON schema's name, or the forced tool's.
    pub schema_name: &'static str,
    /// What the answer's name means, for the forced tool's description.
    pub schema_description: &'static str,
    /// The JSON Schema of the answer.
    pub schema: Json,
    /// How long the request may take (what is left of the phase's timeout).
    pub timeout: Duration,
}

/// Tokens a provider reported for one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Adds another request's tokens.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// What the model answered.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReply {
    /// The answer's text: the structured answer as JSON text, or whatever prose the model
    /// wrote instead (the composer checks it and asks again).
    pub text: String,
    /// The tokens the provider reported.
    pub usage: Usage,
}

/// Why a model request failed. Messages name the URL and never carry an API key.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelError {
    /// The endpoint could not be reached (connection refused, unknown host, TLS).
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
    /// No answer within the request's timeout.
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// Worth retrying: 429 (rate limit) or 5xx (including Anthropic's 529 "overloaded").
    Transient {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
        /// The provider's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// Not worth retrying: any other error status (401, 400, 404, …) or a body that is not
    /// the API's answer.
    Permanent {
        /// The URL.
        url: String,
        /// The HTTP status (0 when the status was fine but the body was not).
        status: u16,
        /// Why.
        message: String,
    },
    /// The MCP client answered a sampling request with an error: its user declined it, or
    /// it has no model to ask ([`crate::compose::sampling`]).
    Declined {
        /// The client's error message, with its JSON-RPC code.
        message: String,
    },
    /// The request was withdrawn: the composition was cancelled while it was in flight (an
    /// MCP client's `notifications/cancelled` of the `compose` call).
    Cancelled,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Unreachable { url, message } => {
                write!(f, "the model endpoint {url} cannot be reached: {message}")
            }
            ModelError::Timeout { url, after } => {
                write!(f, "the model endpoint {url} did not answer within {:.1} s", after.as_secs_f64())
            }
            ModelError::Transient { url, status, message, .. } => {
                write!(f, "the model endpoint {url} answered {status}: {message}")
            }
            ModelError::Permanent { url, status: 0, message } => write!(f, "the model endpoint {url}: {message}"),
            ModelError::Permanent { url, status, message } => {
                write!(f, "the model endpoint {url} answered {status}: {message}")
            }
            ModelError::Declined { message } => {
                write!(f, "the MCP client answered the sampling request with an error: {message}")
            }
            ModelError::Cancelled => write!(f, "the composition was cancelled"),
        }
    }
}

impl std::error::Error for ModelError {}

/// A language model the composer asks: one call per phase and per repair round. A host can
/// bring its own (a local model, a gateway, a test double).
pub trait ModelClient: Send + Sync {
    /// `PROVIDER:MODEL`, as the result's `model_used` shows it.
    fn model(&self) -> String;
    /// Sends one request and waits for the answer (within `request.timeout`).
    fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;
}

/// The most bytes of a provider's answer that are read.
pub(crate) const MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;

/// Registers what a client sends as credentials — its key, and the `user:pass` of its base
/// URL — with [`crate::secrets`], so that nothing its endpoint or a tool says shows them.
pub(crate) fn register_secrets(key: Option<&str>, base: &str) {
    if let Some(k) = key {
        crate::secrets::register(k);
    }
    if let Some(u) = userinfo(base) {
        crate::secrets::register(&u);
    }
}

/// The message of a provider's error body: OpenAI's `{"error": {"message"}}` and
/// Anthropic's `{"type": "error", "error": {"type", "message"}}` (with the type), or the
/// start of the body.
fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Json>(body) {
        let err = json.get("error");
        let message = err.and_then(|e| e.get("message")).and_then(Json::as_str).or_else(|| err.and_then(Json::as_str));
        if let Some(m) = message {
            return match err.and_then(|e| e.get("type")).and_then(Json::as_str) {
                Some(t) => format!("{m} ({t})"),
                None => m.to_string(),
            };
        }
    }
    let body = body.trim();
    let mut end = body.len().min(300);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    if body.is_empty() {
        "(no body)".to_string()
    } else {
        format!("{}{}", &body[..end], if end < body.len() { "…" } else { "" })
    }
}

/// `Retry-After` in seconds (a number; an HTTP date is not used), or `retry-after-ms`.
fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    if let Some(ms) =
        headers.get("retry-after-ms").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let secs = headers.get("retry-after")?.to_str().ok()?.trim().parse::<f64>().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// POSTs `body` as JSON to `target` with `headers` and reads the JSON answer. The secrets
/// (the key, the URL's credentials: [`register_secrets`]) are taken out of every message.
pub(crate) fn post_json(
    target: &str,
    headers: &[(&str, String)],
    body: &Json,
    timeout: Duration,
) -> Result<Json, ModelError> {
    // Errors show the URL without its credentials (`http://user:pass@host` → `http://host`),
    // and the credentials are taken out of every message like the key.
    let shown = shown_url(target);
    let clean = |text: &str| crate::secrets::redact(text).into_owned();
    let url = shown.as_str();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        // A model API does not redirect; following one would send the key (`x-api-key` is
        // not an auth header ureq knows to drop) and the prompt to another origin.
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .user_agent(format!("tdsl/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent();
    // A key with a newline would be a header injection (and ureq refuses the header with
    // an error that is not about the key): refused here, without showing it.
    if let Some((name, _)) = headers.iter().find(|(_, v)| v.chars().any(char::is_control)) {
        return Err(ModelError::Permanent {
            url: url.to_string(),
            status: 0,
            message: format!("the `{name}` header (the API key) holds a control character such as a newline"),
        });
    }
    let mut request =
        agent.post(target).header("Content-Type", "application/json").header("Accept", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let text = serde_json::to_vec(body).unwrap_or_default();
    let failed = |e: ureq::Error| -> ModelError {
        use ureq::Error as E;
        match e {
            E::Timeout(_) => ModelError::Timeout { url: url.to_string(), after: timeout },
            E::Io(ref io) if io.kind() == std::io::ErrorKind::TimedOut => {
                ModelError::Timeout { url: url.to_string(), after: timeout }
            }
            E::BodyExceedsLimit(_) => ModelError::Permanent {
                url: url.to_string(),
                status: 0,
                message: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
            },
            other => ModelError::Unreachable { url: url.to_string(), message: clean(&other.to_string()) },
        }
    };
    let response = request.send(&text[..]).map_err(failed)?;
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    if (300..=399).contains(&status) {
        let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(shown_url);
        return Err(ModelError::Permanent {
            url: url.to_string(),
            status,
            message: format!(
                "a redirect{} is not followed (the key stays with the base URL): give --base-url the API's own URL",
                location.map(|l| format!(" to {}", clean(&l))).unwrap_or_default()
            ),
        });
    }
    let text = response.into_body().with_config().limit(MAX_ANSWER_BYTES).read_to_string().map_err(failed)?;
    match status {
        200..=299 => serde_json::from_str(&text).map_err(|e| ModelError::Permanent {
            url: url.to_string(),
            status: 0,
            message: format!("the answer ({status}) is not JSON: {e}"),
        }),
        429 | 500..=599 => Err(ModelError::Transient {
            url: url.to_string(),
            status,
            message: clean(&error_message(&text)),
            retry_after: wait,
        }),
        _ => Err(ModelError::Permanent { url: url.to_string(), status, message: clean(&error_message(&text)) }),
    }
}

/// The `user:pass` of `http://user:pass@host/…`, when there is one.
fn userinfo(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.rsplit_once('@').map(|(u, _)| u.to_string()).filter(|u| !u.is_empty())
}

/// `url` as errors show it: without the `user:pass@` of its authority.
pub(crate) fn shown_url(url: &str) -> String {
    match (userinfo(url), url.split_once("://")) {
        (Some(u), Some((scheme, rest))) => {
            format!("{scheme}://{}", rest.strip_prefix(&format!("{u}@")).unwrap_or(rest))
        }
        _ => url.to_string(),
    }
}

/// `base` without a trailing `/`.
pub(crate) fn trim_base(base: &str) -> String {
    base.trim().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_both_providers() {
        assert_eq!(
            error_message(
                r#"{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}"#
            ),
            "Rate limit reached (requests)"
        );
        assert_eq!(
            error_message(r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#),
            "Overloaded (overloaded_error)"
        );
        assert_eq!(error_message("<html>bad gateway</html>"), "<html>bad gateway</html>");
    }

    #[test]
    fn keys_and_url_credentials_are_redacted() {
        register_secrets(Some("sk-secret-123"), "http://alice:pw-77@127.0.0.1:8/v1");
        assert_eq!(
            crate::secrets::redact("Incorrect API key provided: sk-secret-123 (alice:pw-77)"),
            "Incorrect API key provided: [redacted] ([redacted])"
        );
    }

    #[test]
    fn credentials_in_urls_are_not_shown() {
        assert_eq!(shown_url("http://alice:pw@127.0.0.1:8/v1/x?a=b@c"), "http://127.0.0.1:8/v1/x?a=b@c");
        assert_eq!(shown_url("https://api.openai.com/v1"), "https://api.openai.com/v1");
        assert_eq!(userinfo("http://h/v1?x=a@b"), None);
    }

    #[test]
    fn a_key_with_a_newline_is_refused_before_connecting_and_not_shown() {
        // Port 9 on loopback: nothing is sent anyway, the check comes first.
        register_secrets(Some("sk-abc\r\nX-Injected: 1"), "http://u:pw@127.0.0.1:9/v1/x");
        let e = post_json(
            "http://u:pw@127.0.0.1:9/v1/x",
            &[("x-api-key", "sk-abc\r\nX-Injected: 1".to_string())],
            &Json::Null,
            Duration::from_secs(1),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("control character") && e.contains("http://127.0.0.1:9/v1/x"), "{e}");
        assert!(!e.contains("sk-abc") && !e.contains("pw"), "{e}");
    }
}
