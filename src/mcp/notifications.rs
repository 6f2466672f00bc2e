//! What a client hears while a call runs: `notifications/progress` (one per step of the
//! composite that ends) and `notifications/message` (steps started, retried, failed, at the
//! level `logging/setLevel` asked for), each sent in order and before the call's result.

use std::sync::{Arc, Mutex, PoisonError};

#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value as Json};

use crate::exec::{Event, Observer, StepStatus};

/// Sends `notifications/progress` for a composite's run: one per step of the composite
/// that ends (`progress` counts them, `total` is its number of steps), with a message
/// naming the step and its status. Events come from worker threads; a channel keeps the
/// notifications in the order of their `progress`, and the call awaits its forwarding task
/// before it answers, so no notification comes after the result.
pub(super) struct Progress {
    tx: Mutex<(usize, tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>)>,
    token: ProgressToken,
    total: usize,
}

impl Progress {
    /// The observer, and the task that sends its notifications in order; the task ends when
    /// the observer is dropped and everything it queued is sent.
    pub(super) fn start(
        peer: Peer<RoleServer>,
        token: ProgressToken,
        total: usize,
    ) -> (Progress, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
        let forwarder = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                // A client that went away gets no more progress; the run goes on.
                if peer.notify_progress(p).await.is_err() {
                    break;
                }
            }
        });
        (Progress { tx: Mutex::new((0, tx)), token, total }, forwarder)
    }
}

impl Observer for Progress {
    fn event(&self, event: &Event<'_>) {
        let Event::StepEnded { step, status, reason } = event else { return };
        if step.contains('/') {
            return; // a step of a composite callee
        }
        let mut guard = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        guard.0 += 1;
        let mut message = format!("step `{step}` {}", status.as_str());
        if let Some(reason) = reason {
            message.push_str(&format!(": {reason}"));
        }
        let param = ProgressNotificationParam::new(self.token.clone(), guard.0 as f64)
            .with_total(self.total as f64)
            .with_message(message);
        let _ = guard.1.send(param);
    }
}

/// Several observers of one run.
pub(super) struct Observers(pub(super) Vec<Arc<dyn Observer>>);

impl Observer for Observers {
    fn event(&self, event: &Event<'_>) {
        for o in &self.0 {
            o.event(event);
        }
    }
}

/// Sends `notifications/message` for a composite's steps at or above the level the client
/// set with `logging/setLevel`: a step started (`info`), retried (`warning`), failed or
/// timed out (`error`), steps of composite callees included. The logger is `tdsl`; `data`
/// is an object: `{"event": "started", "step": "fetch", "tool": "/tools/fetch.tool"}`,
/// `{"event": "retried", "step", "attempt", "reason"}`, `{"event": "failed", "step",
/// "status", "reason"}`. Like progress, every message goes out before the call's result.
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
pub(super) struct StepLog {
    tx: Mutex<tokio::sync::mpsc::UnboundedSender<LoggingMessageNotificationParam>>,
    level: LoggingLevel,
}

#[allow(deprecated)]
impl StepLog {
    pub(super) fn start(peer: Peer<RoleServer>, level: LoggingLevel) -> (StepLog, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<LoggingMessageNotificationParam>();
        let forwarder = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if peer.notify_logging_message(m).await.is_err() {
                    break;
                }
            }
        });
        (StepLog { tx: Mutex::new(tx), level }, forwarder)
    }
}

/// The log message for an event: its level and data (`None` for events not logged).
#[allow(deprecated)]
pub fn log_message(event: &Event<'_>) -> Option<(LoggingLevel, Json)> {
    match event {
        Event::StepStarted { step, tool } => {
            Some((LoggingLevel::Info, json!({"event": "started", "step": step, "tool": tool})))
        }
        Event::StepRetried { step, attempt, reason } => Some((
            LoggingLevel::Warning,
            json!({"event": "retried", "step": step, "attempt": attempt, "reason": reason}),
        )),
        Event::StepEnded { step, status: status @ (StepStatus::Failed | StepStatus::Timeout), reason } => Some((
            LoggingLevel::Error,
            json!({"event": "failed", "step": step, "status": status.as_str(), "reason": reason}),
        )),
        _ => None,
    }
}

/// RFC 5424's order of levels, least severe first.
#[allow(deprecated)]
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[allow(deprecated)]
impl Observer for StepLog {
    fn event(&self, event: &Event<'_>) {
        let Some((level, data)) = log_message(event) else { return };
        if severity(level) < severity(self.level) {
            return;
        }
        let message = LoggingMessageNotificationParam::new(level, data).with_logger("tdsl");
        let _ = self.tx.lock().unwrap_or_else(PoisonError::into_inner).send(message);
    }
}
