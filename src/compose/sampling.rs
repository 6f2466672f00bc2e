//! The composer with the MCP client's own model (SPEC §17, `docs/compose.md`, "With the
//! client's model"): `serve --mcp --plans --compose` offers the tool `compose {query}`, and
//! each model request of the four phases is a `sampling/createMessage` request to the client
//! that called it — no API key, provider or network access on the server.
//!
//! [`Sampling`] is the third [`ModelClient`] (beside OpenAI's and Anthropic's): the phase's
//! system prompt, the conversation, `maxTokens` and `modelPreferences.hints` go out as one
//! request; the reply's text comes back and the composer reads and checks it as it reads an
//! HTTP provider's (sampling has no structured-output switch, so the prompts state the
//! reply's shape, `prompts::system`). The composer is blocking and runs on a blocking
//! thread; each request is sent from a task on the server's runtime and the thread waits on
//! a token that the answer, the call's cancellation or the phase's time left wakes.
//!
//! [`SamplingCompose`] is the tool itself ([`crate::mcp::ComposeTool`]): listed only to a
//! client that declared `sampling`, it builds a [`Composer`] over what plans may call (the
//! served tools after `--allow`, the upstream servers' tools), sends a progress notification
//! as each phase starts, and answers with the `CompositionResult`, recorded in the history
//! as `tdsl compose` records it.

// Served by `tdsl serve --compose` (the `cli` feature); with `compose` alone it is unused.
#![cfg_attr(not(feature = "cli"), allow(dead_code))]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ProgressNotificationParam, RequestId, ServerRequest};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext};
use rmcp::RoleServer;
use serde_json::{json, Value as Json};

use super::client::{ModelClient, ModelError, ModelReply, ModelRequest, Usage};
use super::{ComposeConfig, Composer, CompositionStatus};
use crate::exec::CancelToken;
use crate::mcp::plans::PlanServer;

/// What [`ModelError`]s of a sampling request name as their endpoint.
pub(crate) const SAMPLING_METHOD: &str = "sampling/createMessage";

/// The default `maxTokens` of a sampling request (`--sampling-max-tokens`,
/// [`crate::ranges::SAMPLING_MAX_TOKENS`]).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

/// What every sampling request of a server asks for besides the conversation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SamplingOptions {
    /// `maxTokens` (4,096).
    pub max_tokens: u32,
    /// `modelPreferences.hints`, in order (`--sampling-hint NAME`): the client picks its
    /// model with them; none by default.
    pub hints: Vec<String>,
}

impl Default for SamplingOptions {
    fn default() -> SamplingOptions {
        SamplingOptions { max_tokens: DEFAULT_MAX_TOKENS, hints: Vec::new() }
    }
}

/// The model of an MCP client, asked through `sampling/createMessage` from a blocking thread.
pub(crate) struct Sampling {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    options: SamplingOptions,
    /// The `compose` call's id: over Streamable HTTP the request goes out on that call's
    /// stream.
    origin: Option<RequestId>,
    /// Cancelled with the `compose` call: the request in flight is withdrawn
    /// (`notifications/cancelled`) and no other is sent.
    cancel: CancelToken,
    /// The client's name, then the model it last said it used (each escaped and cut:
    /// [`model_name`]).
    model: Mutex<String>,
}

impl std::fmt::Debug for Sampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampling").field("options", &self.options).finish_non_exhaustive()
    }
}

/// How a request ended, as the task that sent it saw it.
type Outcome = Result<Json, ModelError>;

impl Sampling {
    /// The model of the client behind `peer`, asked from tasks on `runtime` (the server's).
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        runtime: tokio::runtime::Handle,
        options: SamplingOptions,
        origin: Option<RequestId>,
        cancel: CancelToken,
    ) -> Sampling {
        let client = peer.peer_info().map_or_else(|| "client".to_string(), |i| model_name(&i.client_info.name));
        Sampling { peer, runtime, options, origin, cancel, model: Mutex::new(client) }
    }

    /// The `sampling/createMessage` params of a request.
    pub(crate) fn params(&self, request: &ModelRequest) -> Json {
        let messages: Vec<Json> = request
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": {"type": "text", "text": m.content}}))
            .collect();
        let mut params = json!({
            "messages": messages,
            "systemPrompt": request.system,
            "maxTokens": self.options.max_tokens,
        });
        if !self.options.hints.is_empty() {
            let hints: Vec<Json> = self.options.hints.iter().map(|h| json!({"name": h})).collect();
            params["modelPreferences"] = json!({"hints": hints});
        }
        params
    }

    fn failed(message: String) -> ModelError {
        ModelError::Permanent { url: SAMPLING_METHOD.to_string(), status: 0, message }
    }
}

/// The most characters of the `model` a client names that are kept (`model_used`, the
/// history, the report): a longer name is cut, its hidden characters escaped.
pub(crate) const MAX_MODEL_CHARS: usize = 200;

/// The text of a `CreateMessageResult`: its text block, or the text blocks of a list. The
/// error names what the reply holds instead (an image, audio, nothing): the composer reads
/// text, and asking again would bring the same kind of answer.
fn reply_text(result: &Json) -> Result<String, String> {
    fn text(b: &Json) -> Option<&str> {
        if b.get("type").and_then(Json::as_str) == Some("text") {
            b.get("text")?.as_str()
        } else {
            None
        }
    }
    let content = result.get("content").ok_or("the answer is not a CreateMessageResult (no `content`)")?;
    let blocks: Vec<&Json> = match content {
        Json::Array(blocks) => blocks.iter().collect(),
        block => vec![block],
    };
    let texts: Vec<&str> = blocks.iter().filter_map(|b| text(b)).collect();
    if texts.is_empty() {
        let kinds: Vec<String> = blocks
            .iter()
            .map(|b| {
                let kind = b.get("type").and_then(Json::as_str).unwrap_or("?");
                format!("`{}`", model_name(kind))
            })
            .collect();
        return Err(format!(
            "the reply holds no text ({}): the composer reads the model's text",
            if kinds.is_empty() {
                "its content is an empty list".to_string()
            } else {
                format!("its content: {}", kinds.join(", "))
            }
        ));
    }
    Ok(texts.join("\n"))
}

/// A name the client gave (its model's), as results and the history keep it: hidden
/// characters (terminal escapes) escaped, at most [`MAX_MODEL_CHARS`] characters.
fn model_name(name: &str) -> String {
    let shown = crate::diagnostic::escape_hidden(name, &[]);
    match shown.char_indices().nth(MAX_MODEL_CHARS) {
        Some((end, _)) => format!("{}…", &shown[..end]),
        None => shown,
    }
}

fn service_error(e: rmcp::ServiceError) -> ModelError {
    match e {
        // An answer the server could not read (over its size limit, not JSON, …): the stdio
        // framing failed the request in its place (`crate::mcp::framing`).
        rmcp::ServiceError::McpError(data)
            if data.data.as_ref().and_then(|d| d.get("reason")).and_then(Json::as_str)
                == Some(crate::mcp::framing::UNREADABLE_ANSWER) =>
        {
            Sampling::failed(data.message.to_string())
        }
        rmcp::ServiceError::McpError(data) => {
            ModelError::Declined { message: format!("{} (code {})", data.message, data.code.0) }
        }
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => ModelError::Unreachable {
            url: SAMPLING_METHOD.to_string(),
            message: "the client's connection is closed".to_string(),
        },
        other => Sampling::failed(other.to_string()),
    }
}

/// Sends the request and waits for its answer, or withdraws it (`notifications/cancelled`,
/// with the reason) when `stop` says so.
#[allow(deprecated)] // sampling: SEP-2577 deprecates it; MCP 2025-11-25 clients use it
async fn ask(
    peer: Peer<RoleServer>,
    origin: Option<RequestId>,
    params: Json,
    stop: tokio::sync::oneshot::Receiver<String>,
) -> Outcome {
    let params: rmcp::model::CreateMessageRequestParams =
        serde_json::from_value(params).map_err(|e| Sampling::failed(format!("the request cannot be made: {e}")))?;
    let mut request: rmcp::model::CreateMessageRequest = rmcp::model::Request::new(params);
    if let Some(id) = origin {
        request.extensions.insert(OriginatingRequestId(id));
    }
    let mut handle = peer
        .send_cancellable_request(ServerRequest::CreateMessageRequest(request), PeerRequestOptions::no_options())
        .await
        .map_err(service_error)?;
    tokio::select! {
        answer = &mut handle.rx => match answer {
            Ok(Ok(result)) => serde_json::to_value(result).map_err(|e| Sampling::failed(e.to_string())),
            Ok(Err(e)) => Err(service_error(e)),
            Err(_) => Err(service_error(rmcp::ServiceError::TransportClosed)),
        },
        reason = stop => {
            let reason = reason.unwrap_or_else(|_| "withdrawn".to_string());
            let _ = handle.cancel(Some(reason)).await;
            Err(ModelError::Cancelled)
        }
    }
}

impl ModelClient for Sampling {
    /// `sampling:NAME`: the client's name (`clientInfo.name`) until it answers, then the
    /// model it says it used.
    fn model(&self) -> String {
        format!("sampling:{}", self.model.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if self.cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        // Woken by the answer (the task cancels it) or by the call's cancellation (a child).
        let wake = self.cancel.child();
        let slot: Arc<Mutex<Option<Outcome>>> = Arc::new(Mutex::new(None));
        let (stop, stopped) = tokio::sync::oneshot::channel::<String>();
        {
            let (peer, origin, params) = (self.peer.clone(), self.origin.clone(), self.params(request));
            let (slot, wake) = (slot.clone(), wake.clone());
            self.runtime.spawn(async move {
                let outcome = ask(peer, origin, params, stopped).await;
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                wake.cancel();
            });
        }
        wake.wait(request.timeout);
        let outcome = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        let result = match outcome {
            Some(outcome) => outcome?,
            None if self.cancel.is_cancelled() => {
                let _ = stop.send("the compose call was cancelled".to_string());
                return Err(ModelError::Cancelled);
            }
            None => {
                let _ = stop.send(format!("the {} phase ran out of time", request.phase.as_str()));
                return Err(ModelError::Timeout { url: SAMPLING_METHOD.to_string(), after: request.timeout });
            }
        };
        if let Some(model) = result.get("model").and_then(Json::as_str).filter(|m| !m.trim().is_empty()) {
            *self.model.lock().unwrap_or_else(PoisonError::into_inner) = model_name(model);
        }
        let text = reply_text(&result).map_err(Sampling::failed)?;
        // Cut at `maxTokens` before the answer was whole: asking again with the same limit
        // would be cut again, so the phase fails saying which flag to raise.
        let cut = result.get("stopReason").and_then(Json::as_str) == Some("maxTokens");
        if cut && super::prompts::reply_json(&text, request.schema_name).is_err() {
            return Err(Sampling::failed(format!(
                "the reply was cut at maxTokens ({} tokens, stopReason `maxTokens`) before it held a whole {}: \
                 raise --sampling-max-tokens",
                self.options.max_tokens, request.schema_name
            )));
        }
        // Sampling reports no tokens.
        Ok(ModelReply { text, usage: Usage::default() })
    }
}

/// The tool `compose` of `serve --mcp --plans --compose`.
#[derive(Clone)]
pub(crate) struct SamplingCompose {
    options: SamplingOptions,
    config: ComposeConfig,
    #[cfg(feature = "history")]
    history: Option<Arc<dyn crate::history::HistoryStore>>,
}

impl std::fmt::Debug for SamplingCompose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplingCompose")
            .field("options", &self.options)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SamplingCompose {
    /// The tool, asking with `options` and composing with `config` (check it with
    /// [`ComposeConfig::validate`] first).
    pub(crate) fn new(options: SamplingOptions, config: ComposeConfig) -> SamplingCompose {
        SamplingCompose {
            options,
            config,
            #[cfg(feature = "history")]
            history: None,
        }
    }

    /// The same tool recording each composition in `store` as `tdsl compose` does
    /// ([`Composer::compose_recorded`]).
    #[cfg(feature = "history")]
    pub(crate) fn with_history(mut self, store: Arc<dyn crate::history::HistoryStore>) -> SamplingCompose {
        self.history = Some(store);
        self
    }

    /// Runs one composition (blocking): the result, and a warning when the history could
    /// not be written.
    fn compose(&self, composer: &Composer, query: &str) -> super::CompositionResult {
        #[cfg(feature = "history")]
        if let Some(store) = &self.history {
            let (result, recorded) = composer.compose_recorded(query, store.as_ref());
            if let Err(e) = recorded {
                eprintln!("warning: the composition is not in the run history: {e}");
            }
            return result;
        }
        composer.compose(query)
    }
}

/// A tool error: the text, `isError`.
fn tool_error(message: String) -> Json {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// The message of a phase's progress notification.
fn phase_progress(status: CompositionStatus) -> Option<(f64, &'static str)> {
    match status {
        CompositionStatus::Decomposing => Some((1.0, "phase 1/4: decomposing the query")),
        CompositionStatus::Planning => Some((2.0, "phase 2/4: planning (the plan is checked before it runs)")),
        CompositionStatus::Executing => Some((3.0, "phase 3/4: executing the plan")),
        CompositionStatus::Synthesizing => Some((4.0, "phase 4/4: synthesizing the answer")),
        _ => None,
    }
}

impl crate::mcp::ComposeTool for SamplingCompose {
    fn tool(&self) -> Json {
        json!({
            "name": crate::mcp::COMPOSE,
            "description": "Answer a question with this server's tools and your own model (MCP sampling): the query is \
                decomposed into sub-questions, a tdsl plan is written and checked before it runs, the plan runs here, and \
                the answer is synthesized from its results. Each phase sends you one sampling/createMessage request (one \
                more per repair round). The answer is the CompositionResult: status (SUCCESS, PARTIAL, FAILED, TIMEOUT), \
                response (answer, confidence, citations, caveats), the decomposition, the plan, the execution trace, errors.",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "The question to answer."}},
                "required": ["query"],
            },
        })
    }

    fn call(
        &self,
        plans: Arc<PlanServer>,
        arguments: Json,
        context: RequestContext<RoleServer>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = Json> + Send>> {
        let this = self.clone();
        Box::pin(async move {
            let samples = context.peer.peer_info().is_some_and(|i| i.capabilities.sampling.is_some());
            if !samples {
                return tool_error(
                    "`compose` asks the client's model through MCP sampling, and this client did not declare the \
                     `sampling` capability: use a client that offers sampling, or `tdsl compose --model …` with an API \
                     key"
                    .to_string(),
                );
            }
            let query = match arguments.get("query") {
                Some(Json::String(q)) if !q.trim().is_empty() => q.clone(),
                _ => {
                    return tool_error(
                        "`compose` needs `query`: the question to answer, a non-empty string".to_string(),
                    )
                }
            };
            // A notification as each phase starts, in order, all before the result.
            let (progress, forwarder) = match context.meta.get_progress_token() {
                Some(token) => {
                    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
                    let peer = context.peer.clone();
                    let forwarder = tokio::spawn(async move {
                        while let Some(p) = rx.recv().await {
                            if peer.notify_progress(p).await.is_err() {
                                break;
                            }
                        }
                    });
                    (Some((token, tx)), Some(forwarder))
                }
                None => (None, None),
            };
            let client = Arc::new(Sampling::new(
                context.peer.clone(),
                tokio::runtime::Handle::current(),
                this.options.clone(),
                Some(context.id.clone()),
                cancel.clone(),
            ));
            let run = tokio::task::spawn_blocking(move || {
                let (core, callable, listing, runner) = plans.compose_parts();
                let mut composer = Composer::from_parts(client, core, callable, listing, runner)
                    .with_config(this.config.clone())
                    .with_cancel(cancel);
                if let Some((token, tx)) = progress {
                    composer = composer.on_phase(Arc::new(move |status| {
                        if let Some((n, message)) = phase_progress(status) {
                            let p =
                                ProgressNotificationParam::new(token.clone(), n).with_total(4.0).with_message(message);
                            let _ = tx.send(p);
                        }
                    }));
                }
                let result = this.compose(&composer, &query);
                drop(composer);
                result
            })
            .await;
            // The composer (and with it the progress sender) is gone: the forwarder ends once
            // every notification is out.
            if let Some(f) = forwarder {
                let _ = f.await;
            }
            let result = match run {
                Ok(r) => r,
                Err(e) => return tool_error(format!("the composition panicked: {e}")),
            };
            let structured = serde_json::to_value(&result).unwrap_or(Json::Null);
            json!({
                "content": [{"type": "text", "text": result.to_json()}],
                "structuredContent": structured,
                "isError": !result.success,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_of_a_reply_one_block_or_several() {
        let one = json!({"model": "m", "role": "assistant", "content": {"type": "text", "text": "{}"}});
        assert_eq!(reply_text(&one).as_deref(), Ok("{}"));
        let many =
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]});
        assert_eq!(reply_text(&many).as_deref(), Ok("a\nb"));
        assert_eq!(
            reply_text(&json!({"content": {"type": "image", "data": "…"}})),
            Err("the reply holds no text (its content: `image`): the composer reads the model's text".to_string())
        );
        let odd = json!({"content": [{"type": "audio"}, {"type": "\u{1b}[2J"}]});
        assert_eq!(
            reply_text(&odd),
            Err("the reply holds no text (its content: `audio`, `\\u001b[2J`): the composer reads the model's text"
                .to_string())
        );
        assert!(reply_text(&json!({"content": []})).is_err_and(|e| e.contains("an empty list")));
        assert!(reply_text(&json!({})).is_err_and(|e| e.contains("no `content`")));
    }

    #[test]
    fn a_model_name_is_cut_and_its_escapes_shown() {
        assert_eq!(model_name("claude-sonnet"), "claude-sonnet");
        assert_eq!(model_name("\u{1b}]0;owned\u{7}m"), "\\u001b]0;owned\\u0007m");
        let long = model_name(&"é".repeat(1_000_000));
        assert_eq!(long.chars().count(), MAX_MODEL_CHARS + 1);
        assert!(long.ends_with("é…"));
    }
}
