//! Anthropic's Messages API (`anthropic:MODEL`): `POST BASE/v1/messages`, `BASE` by default
//! `https://api.anthropic.com` (the Anthropic SDK's convention), with the headers
//! `x-api-key` and `anthropic-version: 2023-06-01`. The structured answer is asked for as a
//! forced tool call: one tool whose `input_schema` is the answer's schema and
//! `tool_choice: {"type": "tool", "name": …}`; it is read from the `tool_use` block's
//! `input`. A model that answers in text blocks instead gets that text back (the composer
//! asks again).

use serde_json::{json, Value as Json};

use super::client::{
    post_json, register_secrets, shown_url, trim_base, ModelClient, ModelError, ModelReply, ModelRequest, Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE: &str = "https://api.anthropic.com";
/// The API version sent in `anthropic-version`.
pub(crate) const API_VERSION: &str = "2023-06-01";
/// `max_tokens` of every request.
pub(crate) const MAX_TOKENS: u32 = 8192;

/// A Messages API client.
pub(crate) struct Anthropic {
    model: String,
    base: String,
    key: Option<String>,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("Anthropic")
            .field("model", &self.model)
            .field("base", &shown_url(&self.base))
            .finish_non_exhaustive()
    }
}

impl Anthropic {
    /// A client of `model` at `base` (the default without one), with the key.
    pub(crate) fn new(model: &str, base: Option<&str>, key: Option<String>) -> Anthropic {
        let base = trim_base(base.unwrap_or(DEFAULT_BASE));
        register_secrets(key.as_deref(), &base);
        Anthropic { model: model.trim().to_string(), base, key }
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> String {
        format!("{}/v1/messages", self.base)
    }

    /// The request body.
    pub(crate) fn body(&self, request: &ModelRequest) -> Json {
        let messages: Vec<Json> =
            request.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect();
        json!({
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": request.system,
            "messages": messages,
            "tools": [{
                "name": request.schema_name,
                "description": request.schema_description,
                "input_schema": request.schema,
            }],
            "tool_choice": {"type": "tool", "name": request.schema_name},
            "stream": false,
        })
    }
}

/// The answer's text and usage from a `message` object: the forced tool call's `input` as
/// JSON text, else the text blocks.
pub(crate) fn read_answer(url: &str, answer: &Json, tool: &str) -> Result<ModelReply, ModelError> {
    let blocks = answer.get("content").and_then(Json::as_array).ok_or_else(|| ModelError::Permanent {
        url: url.to_string(),
        status: 0,
        message: "the answer has no `content` blocks".to_string(),
    })?;
    let called = blocks.iter().find(|b| {
        b.get("type").and_then(Json::as_str) == Some("tool_use") && b.get("name").and_then(Json::as_str) == Some(tool)
    });
    let text = match called.and_then(|b| b.get("input")) {
        Some(input) => serde_json::to_string(input).unwrap_or_default(),
        None => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Json::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Json::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let n = |k: &str| answer.pointer(&format!("/usage/{k}")).and_then(Json::as_u64).unwrap_or(0);
    Ok(ModelReply { text, usage: Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens") } })
}

impl ModelClient for Anthropic {
    fn model(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let url = self.url();
        let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(k) = &self.key {
            headers.push(("x-api-key", k.clone()));
        }
        let answer = post_json(&url, &headers, &self.body(request), request.timeout)?;
        let mut reply = read_answer(&shown_url(&url), &answer, request.schema_name)?;
        reply.text = crate::secrets::redact(&reply.text).into_owned();
        Ok(reply)
    }
}
