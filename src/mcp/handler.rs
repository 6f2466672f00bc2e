//! The MCP requests answered (rmcp's [`ServerHandler`]): `initialize`'s capabilities,
//! `tools/list` (served tools, the plan and skill tools, `compose` for a client that
//! samples), `tools/call` (the limit of calls in flight, cancellation, progress and log
//! messages, then [`McpServer::call_with`] on a blocking thread), resources, prompts,
//! `logging/setLevel`, and requests rmcp could not read.

use std::sync::{Arc, PoisonError};

#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value as Json};

use super::abandon::{cancelled_answer, RunEnding, ABANDON_AFTER};
use super::notifications::{Observers, Progress, StepLog};
use super::{framing, plans, skills, InFlight, McpServer, COMPOSE, SERVER_BUSY};
use crate::exec::{CancelToken, Observer};

/// The session of a request over Streamable HTTP (its `Mcp-Session-Id`); none on stdio.
fn session_of(context: &RequestContext<RoleServer>) -> Option<String> {
    #[cfg(feature = "mcp-http")]
    {
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
    #[cfg(not(feature = "mcp-http"))]
    {
        let _ = context;
        None
    }
}

/// The HTTP response a request's answer goes out on (`serve --listen`); none on stdio.
fn stream_of(context: &RequestContext<RoleServer>) -> Option<super::spliced::Stream> {
    #[cfg(feature = "mcp-http")]
    {
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|p| p.extensions.get::<super::spliced::Stream>())
            .cloned()
    }
    #[cfg(not(feature = "mcp-http"))]
    {
        let _ = context;
        None
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
    fn get_info(&self) -> ServerConfig {
        if self.plans.is_some() {
            return plans::server_config(self.skills.is_some());
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_logging().build())
            .with_server_info(Implementation::new("tdsl", env!("CARGO_PKG_VERSION")))
            .with_instructions("Composite tools defined in .tool files, run by the tdsl engine.")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        plans::list_resources(self.plans.is_some(), self.skills.is_some())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        let stop = self.stopped(&context);
        plans::read_resource(self.plans.clone(), request.uri.to_string(), &self.inner.making, stream_of(&context), stop)
            .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        plans::list_prompts(self.plans.is_some())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let stop = self.stopped(&context);
        plans::get_prompt(self.plans.clone(), request, &self.inner.making, stream_of(&context), stop).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // `compose` only for a client whose model the server can ask (it declared sampling).
        let samples = context.peer.peer_info().is_some_and(|i| i.capabilities.sampling.is_some());
        // Built here, on the runtime's thread, not on a blocking one: made faster than a
        // client reads them, 40 lists of 64 MB (large skills) held 2.5 GB, against 0.4 GB
        // built here (docs/security.md, "Hostile round 16", Left).
        self.tools_listed(samples)
    }

    #[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }

    /// rmcp hands over as a custom request any request whose `params` it cannot read (none,
    /// or not of the shape its method needs, as `logging/setLevel` with an unknown level):
    /// for a method the protocol defines that is `-32602` invalid params, saying why (for
    /// `tools/call`, the message the stdio framing gives the same message,
    /// [`framing::judge`]); only a method the protocol does not define is `-32601`.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        let mut message = json!({"jsonrpc": "2.0", "id": 0, "method": request.method});
        if let Some(params) = request.params {
            message["params"] = params;
        }
        if request.method == "tools/call" {
            let line = serde_json::to_vec(&message).unwrap_or_default();
            let why = match framing::judge(&line, false) {
                framing::Verdict::Answer(a) => a["error"]["message"].as_str().map(str::to_string),
                _ => None,
            };
            return Err(McpError::invalid_params(
                why.unwrap_or_else(|| "invalid params: `tools/call` needs params with a string `name`".to_string()),
                None,
            ));
        }
        match framing::unreadable_params(&message) {
            Some(why) => Err(McpError::invalid_params(why, None)),
            None => Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if !self.offers(&name) {
            let hint = if self.plans_only() && self.inner.tools.iter().any(|t| t.name == name) {
                format!(
                    "; this server offers only `{}` and `{}` (serve --plans-only): call `{name}` from a plan",
                    plans::CHECK_PLAN,
                    plans::RUN_PLAN
                )
            } else {
                String::new()
            };
            return Err(McpError::invalid_params(format!("no tool named `{name}`{hint}"), None));
        }
        let arguments = Json::Object(request.arguments.unwrap_or_default());
        if self.is_skill_tool(&name) {
            return self.change_skills_answered(name, arguments, context).await;
        }
        // The upstream listings a plan needs are waited for before the call takes a slot:
        // a hung upstream holds no slot of `--max-calls`.
        if let Some(plans) = self.plans.as_ref().filter(|_| self.is_plan_tool(&name)) {
            tokio::select! {
                () = plans.prepare(&arguments) => {}
                () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
            }
        }
        // Over the limit of calls in flight: queued (stdio) or refused at once, the client
        // may try again (HTTP).
        let _permit =
            match &self.calls {
                Some(limit) => match limit.slots.clone().try_acquire_owned() {
                    Ok(p) => Some(p),
                    Err(_) if limit.queue => {
                        let mut down = self.inner.shutdown.subscribe();
                        tokio::select! {
                            p = limit.slots.clone().acquire_owned() => p.ok(),
                            () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
                            _ = down.wait_for(|d| *d) => {
                                return Err(McpError::internal_error("the server is shutting down", None))
                            }
                        }
                    }
                    Err(_) => return Err(McpError::new(
                        ErrorCode(SERVER_BUSY),
                        "the server is running as many tool calls as it allows (serve --max-calls); try again later",
                        None,
                    )),
                },
                None => None,
            };
        let _in_flight = InFlight::new(&self.inner.in_flight);
        // `notifications/cancelled` cancels the context's token: that cancels the run, whose
        // calls in flight are cancelled in turn (their programs killed). rmcp drops the
        // response to a cancelled request, as the protocol asks.
        let cancel = CancelToken::new();
        let watcher = {
            let (ct, cancel) = (context.ct.clone(), cancel.clone());
            let mut down = self.inner.shutdown.subscribe();
            tokio::spawn(async move {
                tokio::select! {
                    () = ct.cancelled() => {}
                    _ = down.wait_for(|d| *d) => {}
                }
                cancel.cancel();
            })
        };
        if let Some((compose, plans)) = self.compose_tool(&name) {
            let result = compose.call(plans.clone(), arguments, context, cancel).await;
            watcher.abort();
            let result: CallToolResult =
                serde_json::from_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(result.into());
        }
        let mut observers: Vec<Arc<dyn Observer>> = Vec::new();
        let mut forwarders = Vec::new();
        if let Some(token) = context.meta.get_progress_token() {
            let (progress, forwarder) = Progress::start(context.peer.clone(), token, self.steps_of(&name, &arguments));
            observers.push(Arc::new(progress));
            forwarders.push(forwarder);
        }
        let level = *self.log_level.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(level) = level {
            let (log, forwarder) = StepLog::start(context.peer.clone(), level);
            observers.push(Arc::new(log));
            forwarders.push(forwarder);
        }
        let observer = match observers.len() {
            0 => None,
            1 => observers.pop(),
            _ => Some(Arc::new(Observers(observers)) as Arc<dyn Observer>),
        };
        let server = self.clone();
        let ending = RunEnding::default();
        // Kept until its thread comes back: ended in its place if the server stops first.
        let kept = self.inner.keep_leftover(ending.clone());
        let run_cancel = cancel.clone();
        let mut run = {
            let (ending, name) = (ending.clone(), name.clone());
            tokio::task::spawn_blocking(move || server.call_ending(&name, arguments, &cancel, observer, &ending))
        };
        // Once the server shuts down, the run has [`ABANDON_AFTER`] to end (it was cancelled):
        // past that the call answers and records it in its place (`abandon`).
        let mut down = self.inner.shutdown.subscribe();
        // A cancelled call gives its slot back at once, even when its thread has not come
        // back (a plan's static check stops at its next poll, a tool may not): its thread holds a place
        // of `leftover` instead until it does. With every such place taken, it keeps its slot.
        let mut cancel_heard = false;
        let done = loop {
            tokio::select! {
                r = &mut run => break Some(r),
                () = context.ct.cancelled(), if !cancel_heard => {
                    cancel_heard = true;
                    // The server is stopping (rmcp cancels every request when it stops
                    // waiting for them): answered and ended as a run that did not stop.
                    if *self.inner.shutdown.borrow() {
                        break None;
                    }
                    let leftover = self.calls.as_ref().map(|l| l.leftover.clone().try_acquire_owned());
                    let held = match leftover {
                        Some(Ok(place)) => Some(place),
                        // Every leftover place taken: it keeps its slot (the watcher
                        // cancels its run).
                        Some(Err(_)) => continue,
                        None => None,
                    };
                    // Ended in its place if the server stops before its thread comes back.
                    let inner = self.inner.clone();
                    tokio::spawn(async move {
                        // An answer made meanwhile is not sent: its text is let go.
                        if let Ok(Some(answer)) = run.await {
                            super::spliced::forget(&answer);
                        }
                        inner.forget_leftover(kept);
                        drop(held);
                    });
                    run_cancel.cancel();
                    watcher.abort();
                    for forwarder in forwarders {
                        forwarder.abort();
                    }
                    // rmcp drops the answer to a cancelled request, as the protocol asks.
                    return Err(McpError::internal_error("cancelled", None));
                }
                _ = async {
                    let _ = down.wait_for(|d| *d).await;
                    tokio::time::sleep(ABANDON_AFTER).await;
                } => break None,
            }
        };
        // A run that came back meanwhile is answered as it ended.
        let done = match done {
            None if run.is_finished() => Some((&mut run).await),
            other => other,
        };
        let result = match done {
            None => {
                // Ended in its place (the run's own end, when it is being written, first),
                // off the runtime's thread and without holding the answer: the history's
                // writes may wait. Kept until then, so that the server's stop waits for it.
                let inner = self.inner.clone();
                tokio::task::spawn_blocking(move || {
                    ending.abandon();
                    inner.forget_leftover(kept);
                });
                watcher.abort();
                // The answer its thread makes, if it comes back, is not sent: its text is let go.
                tokio::spawn(async move {
                    if let Ok(Some(answer)) = run.await {
                        super::spliced::forget(&answer);
                    }
                });
                // The run's thread still holds its observers: their notifications stop here.
                for forwarder in forwarders {
                    forwarder.abort();
                }
                let result: CallToolResult = serde_json::from_value(cancelled_answer(&name))
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                return Ok(result.into());
            }
            Some(r) => {
                self.inner.forget_leftover(kept);
                r.map_err(|e| McpError::internal_error(format!("the run panicked: {e}"), None))
            }
        };
        watcher.abort();
        // The run is over and its observer dropped, which ends the progress channel: every
        // notification goes out before the result (the protocol has no progress after it).
        for forwarder in forwarders {
            let _ = forwarder.await;
        }
        let result = result?.unwrap_or(Json::Null);
        if context.ct.is_cancelled() {
            // Cancelled as its run came back, before this task saw it: rmcp drops the answer
            // of a cancelled request, so its text is let go now rather than held until it is
            // forgotten (docs/security.md, "Hostile round 14").
            super::spliced::forget(&result);
        } else if let Some(stream) = stream_of(&context) {
            // Over HTTP, a large answer's text is let go early if its response is gone.
            stream.tie(&result);
        }
        let result: CallToolResult =
            serde_json::from_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}

impl McpServer {
    /// `tools/list`'s answer: the served tools, the plan and skill tools, the skills, and
    /// `compose` for a client that `samples` (it copies every tool).
    fn tools_listed(&self, samples: bool) -> Result<ListToolsResult, McpError> {
        let mut tools: Vec<Json> =
            self.inner.tools.iter().filter(|t| self.served_named(&t.name).is_some()).map(|t| t.tool.clone()).collect();
        if self.plans.is_some() {
            // A served tool of the same name keeps it (the plan tool is not offered then),
            // unless only the plan tools are offered.
            tools.extend(
                plans::PlanServer::tools_for(self.skills.is_some())
                    .into_iter()
                    .filter(|t| t["name"].as_str().is_some_and(|n| self.is_plan_tool(n))),
            );
        }
        if let Some(skills) = &self.skills {
            tools.extend(
                skills::tools().into_iter().filter(|t| t["name"].as_str().is_some_and(|n| self.is_skill_tool(n))),
            );
            if !self.plans_only() {
                for s in skills.set().all() {
                    if let Some(served) = s.served.as_ref().filter(|_| self.skill_named(&s.name).is_some()) {
                        tools.push(served.tool.clone());
                    }
                }
            }
        }
        if let Some((compose, _)) = self.compose_tool(COMPOSE).filter(|_| samples) {
            tools.push(compose.tool());
        }
        let mut tools_parsed: Vec<Tool> = Vec::with_capacity(tools.len());
        for t in tools {
            tools_parsed.push(serde_json::from_value(t).map_err(|e| McpError::internal_error(e.to_string(), None))?);
        }
        let mut result: ListToolsResult =
            serde_json::from_value(json!({"tools": []})).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        result.tools = tools_parsed;
        Ok(result)
    }

    /// Completes when the request of `context` is cancelled: by its client, or by rmcp as
    /// it stops (the answers of requests read before the server's stop are made as before).
    fn stopped(&self, context: &RequestContext<RoleServer>) -> impl std::future::Future<Output = ()> + Send + 'static {
        let ct = context.ct.clone();
        async move { ct.cancelled().await }
    }

    /// `save_skill` or `delete_skill`, answered: counted among the calls in flight, and
    /// cancelled when the server shuts down. A save whose write had not begun then answers
    /// that it was not saved; one that began its write finishes it and is answered as
    /// usual. `notifications/tools/list_changed` goes before the answer while the server
    /// runs; once it stops it is not waited for (the session is ending, and rmcp no longer
    /// sends what is not an answer: waiting for it held the answer back for good).
    async fn change_skills_answered(
        &self,
        name: String,
        arguments: Json,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let _in_flight = InFlight::new(&self.inner.in_flight);
        // Who saved or deleted it: the client's name from `initialize`, and its session.
        let client = context.peer.peer_info().map(|i| i.client_info.name.clone());
        let session = session_of(&context);
        let cancel = CancelToken::new();
        // One change at a time, all sessions together: each loads and checks every skill
        // again (40 saves at once over 256 skills of 250 KB held 8.9 GB). One waiting its
        // turn when the server stops goes on without it, cancelled: it is not carried out.
        let _turn = match &self.skills {
            Some(skills) => {
                let mut down = self.inner.shutdown.subscribe();
                tokio::select! {
                    turn = skills.turn() => Some(turn),
                    () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled", None)),
                    _ = down.wait_for(|d| *d) => {
                        cancel.cancel();
                        None
                    }
                }
            }
            None => None,
        };
        let watcher = {
            let (cancel, mut down) = (cancel.clone(), self.inner.shutdown.subscribe());
            tokio::spawn(async move {
                let _ = down.wait_for(|d| *d).await;
                cancel.cancel();
            })
        };
        let server = self.clone();
        let changed = tokio::task::spawn_blocking(move || {
            server.change_skills(&name, &arguments, client, session, &cancel).unwrap_or((Json::Null, false))
        })
        .await;
        watcher.abort();
        let (answer, changed) =
            changed.map_err(|e| McpError::internal_error(format!("the skill change panicked: {e}"), None))?;
        if changed {
            // Before the answer: the client lists the tools again, the new one among them.
            let mut down = self.inner.shutdown.subscribe();
            tokio::select! {
                _ = context.peer.notify_tool_list_changed() => {}
                _ = down.wait_for(|d| *d) => {}
            }
        }
        let result: CallToolResult =
            serde_json::from_value(answer).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}
