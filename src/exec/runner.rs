//! The runner interface (SPEC §7): how the engine calls a primitive tool. The host
//! implements [`Runner`]; the engine hands it the tool path, the definition, the resolved
//! arguments, a cancellation token and the time left, and gets back a JSON value or an
//! error that says whether trying again could help.
//!
//! A closure `Fn(&ToolCall) -> Result<Value, ToolError>` is a runner, which is how tests
//! and embedders usually write one.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::time::Signal;
use crate::tool::ToolDef;
use crate::value::Value;

/// Whether a failed call is worth retrying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The same call may succeed later (a busy service, exit status 75): retried per the
    /// step's `retry` policy.
    Transient,
    /// The call cannot succeed as made: never retried.
    Permanent,
}

/// A failed tool call.
///
/// What a program wrote on its standard error before it failed (an `mcp:` or upstream
/// server that died) is kept apart from the message, in [`ToolError::stderr_tail`]: it may
/// say anything of how the operator started the program (a folder, a key it echoes), so it
/// is for the operator only. [`Display`](fmt::Display) and the engine — traces, run errors,
/// progress events, the history — use the message alone; a front end that talks to the
/// operator adds the tail with [`ToolError::for_operator`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// Transient or permanent.
    pub kind: ErrorKind,
    /// What went wrong, for people.
    pub message: String,
    /// The last lines the program wrote on its standard error (joined with ` | `), when
    /// the error comes with them: for the operator's eyes only.
    pub stderr_tail: Option<String>,
    /// True when the call provably never reached the tool (its server could not be started
    /// or connected to, so the request was never sent): a transient failure retried even
    /// for a tool that is not safe to call twice ([`Runner::repeatable`]).
    pub unsent: bool,
}

impl ToolError {
    /// A failure worth retrying.
    pub fn transient(message: impl Into<String>) -> ToolError {
        ToolError { kind: ErrorKind::Transient, message: message.into(), stderr_tail: None, unsent: false }
    }

    /// A failure not worth retrying.
    pub fn permanent(message: impl Into<String>) -> ToolError {
        ToolError { kind: ErrorKind::Permanent, message: message.into(), stderr_tail: None, unsent: false }
    }

    /// The same error, known to have happened before the call was sent
    /// ([`ToolError::unsent`]).
    pub fn before_sending(mut self) -> ToolError {
        self.unsent = true;
        self
    }

    /// The same error with the program's last lines of standard error (none when `tail`
    /// is empty).
    pub fn with_stderr_tail(mut self, tail: impl Into<String>) -> ToolError {
        let tail = tail.into();
        self.stderr_tail = (!tail.is_empty()).then_some(tail);
        self
    }

    /// The message with the standard error's tail after it (`… (its standard error ends:
    /// cannot bind the GPU)`): the whole text, for the operator (`tdsl run`, `serve`'s own
    /// standard error), never for a client.
    pub fn for_operator(&self) -> String {
        match &self.stderr_tail {
            Some(tail) => format!("{} (its standard error ends: {tail})", self.message),
            None => self.message.clone(),
        }
    }
}

/// The message alone: never the standard error's tail ([`ToolError::for_operator`]).
impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// Tells a running call (or a whole run) to stop: set by the engine when the attempt's
/// timeout or the run's deadline passes, or by the host to cancel a run
/// ([`super::Executor::run_cancellable`]). A runner checks it
/// ([`CancelToken::is_cancelled`]) or waits on it ([`CancelToken::wait`]) and returns soon
/// after; the engine has already recorded the attempt as timed out or cancelled and ignores
/// what it returns.
///
/// Tokens form a tree: cancelling one cancels every [`CancelToken::child`] made from it,
/// which is how cancelling a run reaches the calls in flight.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<Node>);

#[derive(Debug, Default)]
struct Node {
    signal: Signal,
    children: Mutex<Vec<Weak<Node>>>,
}

impl Node {
    fn cancel(&self) {
        self.signal.raise();
        let children = std::mem::take(&mut *self.children.lock().unwrap_or_else(PoisonError::into_inner));
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A token cancelled when this one is (at once, if this one already is), and that can
    /// also be cancelled on its own.
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        {
            let mut children = self.0.children.lock().unwrap_or_else(PoisonError::into_inner);
            children.retain(|c| c.strong_count() > 0);
            children.push(Arc::downgrade(&child.0));
        }
        // A cancel that took the list before the push still reaches the child.
        if self.is_cancelled() {
            child.cancel();
        }
        child
    }

    /// Cancels the call, and every child token.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.signal.is_raised()
    }

    /// The signal raised on cancel.
    pub(crate) fn signal(&self) -> &Signal {
        &self.0.signal
    }

    /// Waits in real time until cancelled or `timeout` passes; true when cancelled. Runners
    /// that poll a child process use it as their sleep, so they wake at once on cancel.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.0.signal.wait_real(Some(timeout))
    }
}

/// One call of a primitive tool.
#[derive(Debug)]
pub struct ToolCall<'a> {
    /// The callee as the step names it (`/tools/scanner.tool`).
    pub tool_path: &'a str,
    /// Its definition, when the tool path resolved to a file (a mocked tool may have none):
    /// the crate's own `.tool` model; a runner reads what it needs through methods
    /// ([`ToolCall::endpoint`]).
    pub(crate) definition: Option<&'a ToolDef>,
    /// The `.tool` file, when there is one: `exec:` programs resolve against its folder.
    pub file: Option<&'a Path>,
    /// The resolved arguments, already checked against the declared `arguments`.
    pub arguments: &'a Value,
    /// Set when the engine gives up on this call: its timeout passed, or the run was
    /// cancelled or stopped. A runner checks or waits on it; it does not cancel it (a call
    /// that cannot block, [`Runner::can_block`], is handed the run's own token).
    pub cancel: &'a CancelToken,
    /// The time this attempt has: the step's `timeout_seconds` or what is left before the
    /// run's deadline, whichever is less. `None`: no bound.
    pub timeout: Option<Duration>,
    /// 1 for the first attempt, 2 for the first retry, …
    pub attempt: u32,
}

impl ToolCall<'_> {
    /// The definition's `system_event_endpoint`, when it has one.
    pub fn endpoint(&self) -> Option<&str> {
        match &self.definition?.kind {
            crate::tool::ToolKind::Primitive { system_event_endpoint } => Some(&system_event_endpoint.node),
            crate::tool::ToolKind::Composite { .. } => None,
        }
    }
}

/// What the host implements to run primitive tools.
///
/// Calls may come from several threads at once (at most the executor's concurrency limit).
pub trait Runner: Send + Sync {
    /// Runs one call.
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError>;

    /// Whether `call` may block: wait on a process, the network, a lock or a clock. True
    /// unless the runner says otherwise.
    ///
    /// A call that may block runs on a thread of its own (reused between calls), so that
    /// the engine can give up on it when its timeout passes. A call that cannot block runs
    /// on the engine's worker thread, with no hand-off: its timeout is then judged when it
    /// returns (an answer that came after it is recorded as the attempt's timeout,
    /// `E0804`, as for a blocking call), and cancelling the run reaches it only through
    /// [`ToolCall::cancel`]. Answer false only for calls that return quickly on their own
    /// (an in-process computation): a call that blocks anyway holds up a worker, and the
    /// run, until it returns. [`HostRunner`](crate::HostRunner) answers false for
    /// `builtin:` endpoints and mocked tools; [`NonBlocking`] wraps an in-process runner.
    fn can_block(&self, call: &ToolCall<'_>) -> bool {
        let _ = call;
        true
    }

    /// Whether the tool `call` goes to is known to be safe to call again with the same
    /// arguments (it only reads, or a second call changes nothing more). A step without a
    /// `retry` of its own retries a failed attempt that may have reached the tool (a
    /// timeout, a transient error not marked [`ToolError::unsent`]) only when it is; a step
    /// with `retry` retries per its policy whatever this says. True unless the runner says
    /// otherwise: the upstream servers' runner of `serve --plans` answers from the MCP
    /// tool's annotations (`readOnlyHint` or `idempotentHint` true).
    fn repeatable(&self, call: &ToolCall<'_>) -> bool {
        let _ = call;
        true
    }
}

impl<F> Runner for F
where
    F: Fn(&ToolCall<'_>) -> Result<Value, ToolError> + Send + Sync,
{
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self(call)
    }
}

/// A runner whose calls cannot block ([`Runner::can_block`] is false): they run on the
/// engine's worker thread, with no thread hand-off. For in-process tools that compute and
/// return — not for ones that wait on a process, the network or a lock.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tdsl::{Executor, ManualTime, NonBlocking, RunStatus, ToolCall, ToolError, Value, Workflow};
///
/// let root = std::env::temp_dir().join(format!("tdsl-non-blocking-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("tools")).unwrap();
/// std::fs::write(root.join("tools/add.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
/// std::fs::write(root.join("main.tool"), r#"{"instructions": [
///   {"execution_id": "a", "tool_definition_path": "/tools/add.tool", "arguments": {"n": 1}}]}"#).unwrap();
/// let workflow = Workflow::load(&root, &root.join("main.tool")).unwrap();
///
/// // Where the call ran: on a worker of the run (`tdsl-worker-N`), not a call thread.
/// let seen = Arc::new(Mutex::new(String::new()));
/// let s = seen.clone();
/// let runner = NonBlocking(move |call: &ToolCall<'_>| -> Result<Value, ToolError> {
///     *s.lock().unwrap() = std::thread::current().name().unwrap_or_default().to_string();
///     Ok(call.arguments.clone())
/// });
/// let run = Executor::new(runner).with_time(Arc::new(ManualTime::new(0))).run(&workflow, Value::object_from::<&str>([])).unwrap();
/// assert_eq!(run.status, RunStatus::Success);
/// assert!(seen.lock().unwrap().starts_with("tdsl-worker-"));
/// std::fs::remove_dir_all(&root).ok();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NonBlocking<R>(pub R);

impl<R: Runner> Runner for NonBlocking<R> {
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self.0.call(call)
    }

    fn can_block(&self, _call: &ToolCall<'_>) -> bool {
        false
    }

    fn repeatable(&self, call: &ToolCall<'_>) -> bool {
        self.0.repeatable(call)
    }
}
