//! OpenAI-compatible chat completions (`openai:MODEL`): `POST BASE/chat/completions`,
//! `BASE` by default `https://api.openai.com/v1` (the OpenAI SDK's convention, which
//! Ollama's `http://localhost:11434/v1`, vLLM, llama.cpp's server and LM Studio follow).
//! The structured answer is asked for with `response_format: {"type": "json_schema",
//! "json_schema": {name, schema, strict: false}}` (not strict: a plan is an open object) and
//! read from `choices[0].message.content`; a refusal comes back as its text. The key, when
//! there is one, goes in `Authorization: Bearer`.

use serde_json::{json, Value as Json};

use super::client::{
    post_json, register_secrets, shown_url, trim_base, ModelClient, ModelError, ModelReply, ModelRequest, Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// A chat-completions client.
pub(crate) struct OpenAi {
    model: String,
    base: String,
    key: Option<String>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("OpenAi")
            .field("model", &self.model)
            .field("base", &shown_url(&self.base))
            .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// A client of `model` at `base` (the default without one), with the key (none for a
    /// local server).
    pub(crate) fn new(model: &str, base: Option<&str>, key: Option<String>) -> OpenAi {
        let base = trim_base(base.unwrap_or(DEFAULT_BASE));
        register_secrets(key.as_deref(), &base);
        OpenAi { model: model.trim().to_string(), base, key }
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> String {
        format!("{}/chat/completions", self.base)
    }

    /// The request body.
    pub(crate) fn body(&self, request: &ModelRequest) -> Json {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        messages.extend(request.messages.iter().map(|m| json!({"role": m.role, "content": m.content})));
        json!({
            "model": self.model,
            "messages": messages,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "description": request.schema_description,
                    "schema": request.schema,
                    "strict": false,
                },
            },
            "stream": false,
        })
    }
}

/// The answer's text and usage from a `chat.completion` object.
pub(crate) fn read_answer(url: &str, answer: &Json) -> Result<ModelReply, ModelError> {
    let message = answer.pointer("/choices/0/message").ok_or_else(|| ModelError::Permanent {
        url: url.to_string(),
        status: 0,
        message: "the answer has no `choices[0].message`".to_string(),
    })?;
    let text = match (message.get("content"), message.get("refusal")) {
        (Some(Json::String(c)), _) => c.clone(),
        (_, Some(Json::String(r))) => r.clone(),
        _ => String::new(),
    };
    let n = |k: &str| answer.pointer(&format!("/usage/{k}")).and_then(Json::as_u64).unwrap_or(0);
    Ok(ModelReply { text, usage: Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") } })
}

impl ModelClient for OpenAi {
    fn model(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let url = self.url();
        let mut headers = Vec::new();
        if let Some(k) = &self.key {
            headers.push(("Authorization", format!("Bearer {k}")));
        }
        let answer = post_json(&url, &headers, &self.body(request), request.timeout)?;
        let mut reply = read_answer(&shown_url(&url), &answer)?;
        reply.text = crate::secrets::redact(&reply.text).into_owned();
        Ok(reply)
    }
}
