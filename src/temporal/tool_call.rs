//! What a worker's tool calls share, whether one activity makes one call (`activity.rs`) or
//! a batch of fan-out children's (`batch.rs`): the primitive tool resolved under the
//! worker's root with the run's mock answers ([`Prepared`]), and the worker's circuit
//! breakers ([`WorkerTools`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::analysis::{Resolved, ToolRoot};
use crate::exec::breaker::{Admission, BreakerPolicy, Breakers, Refusal};
use crate::exec::{CancelToken, Runner, ToolCall, ToolError};
use crate::host::{HostRunner, Mock};
use crate::value::Value;

/// How often a running tool call heartbeats (and so how soon a cancelled run stops it).
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// What a worker's calls share: its tool root and its circuit breakers (one set per breaker
/// policy that runs asked for; SPEC §10: per worker).
pub(crate) struct WorkerTools {
    root: PathBuf,
    breakers: Mutex<Vec<(BreakerPolicy, Arc<Breakers>)>>,
    started: Instant,
}

impl WorkerTools {
    /// The calls of a worker whose tool root is `root`.
    pub(crate) fn new(root: PathBuf) -> WorkerTools {
        WorkerTools { root, breakers: Mutex::new(Vec::new()), started: Instant::now() }
    }

    pub(crate) fn breakers(&self, policy: &BreakerPolicy) -> Arc<Breakers> {
        let mut all = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, b)) = all.iter().find(|(p, _)| p == policy) {
            return b.clone();
        }
        let b = Arc::new(Breakers::new(policy.clone()));
        all.push((policy.clone(), b.clone()));
        b
    }

    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Why the worker's breaker of `tool_path` refuses a call now, or `None`: it may go.
    pub(crate) fn refused(&self, breakers: &Breakers, tool_path: &str) -> Option<String> {
        if let Admission::Allowed = breakers.admit(tool_path, self.now_ms()) {
            return None;
        }
        Some(match breakers.refusal(tool_path, self.now_ms()) {
            Some(Refusal::OpenUntil(at)) => format!(
                "the circuit breaker of `{tool_path}` on this worker is open: the call was refused; it half-opens in {} s",
                at.saturating_sub(self.now_ms()) as f64 / 1000.0
            ),
            _ => format!("the circuit breaker of `{tool_path}` on this worker is half-open and its trial calls are in flight: the call was refused"),
        })
    }

    /// The worker's tool root.
    pub(crate) fn root(&self) -> &std::path::Path {
        &self.root
    }
}

/// A primitive tool as a worker calls it: its definition and file resolved under the
/// worker's root (or why not), and the run's mock answers for it. Made once per call, or
/// once for a whole batch of fan-out children (`batch.rs`).
pub(crate) struct Prepared {
    tool_path: String,
    mock: Option<Mock>,
    resolved: Result<(crate::tool::ToolDef, PathBuf), ToolError>,
    max_tool_output: u64,
}

impl Prepared {
    /// `tool_path` under `root`, with the run's `mock` entry for it, if any.
    pub(crate) fn new(root: &std::path::Path, tool_path: &str, mock: Option<&Value>, max_tool_output: u64) -> Prepared {
        let mock = mock.map(|spec| {
            let mut m = crate::value::Map::default();
            m.insert(crate::value::SmolStr::new(tool_path), spec.clone());
            let text = serde_json::to_string(&Value::object(m)).map_err(|e| e.to_string())?;
            Mock::from_json(&text)
        });
        let (mock, mock_error) = match mock {
            Some(Ok(m)) => (Some(m), None),
            Some(Err(e)) => (None, Some(ToolError::permanent(e))),
            None => (None, None),
        };
        let resolved = match mock_error {
            Some(e) => Err(e),
            None => resolve(root, tool_path),
        };
        Prepared { tool_path: tool_path.to_string(), mock, resolved, max_tool_output }
    }

    /// Whether the run's mock answers for the tool.
    pub(crate) fn mocked(&self) -> bool {
        self.mock.is_some()
    }

    /// One attempt (`attempt`, from 1) with `arguments`: the mock's answer `mock_index`
    /// (from 0) when the run has one, else the tool through the host runner, bounded by its
    /// timeout and what is `left` of the activity.
    pub(crate) fn call(
        &self,
        arguments: &Value,
        timeout_seconds: f64,
        attempt: u32,
        mock_index: usize,
        left: Option<Duration>,
        cancel: &CancelToken,
    ) -> Result<Value, ToolError> {
        if let Some(mock) = &self.mock {
            if let Some(answer) = mock.answer_at(&self.tool_path, mock_index) {
                return answer;
            }
        }
        let (def, file) = match &self.resolved {
            Ok(r) => r,
            Err(e) => return Err(e.clone()),
        };
        // The worker's operator reads the run (its Temporal history, `tdsl run`'s output):
        // a failed server's last words are in its messages, as for `tdsl run`.
        let runner = HostRunner::new()
            .with_max_stdout(self.max_tool_output)
            .with_stderr_tails(crate::host::StderrTails::InMessage);
        // A second past Temporal's own timeout, so that Temporal's (a timeout, in the trace)
        // always comes first; this one only ends the program.
        let timeout = match (Duration::try_from_secs_f64(timeout_seconds).ok(), left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|t| t + Duration::from_secs(1));
        let call = ToolCall {
            tool_path: &self.tool_path,
            definition: Some(def),
            file: Some(file),
            arguments,
            cancel,
            timeout,
            attempt,
        };
        runner.call(&call)
    }
}

/// The definition and file of the primitive tool at `tool_path` under `root`, or why the
/// worker cannot call it.
fn resolve(root: &std::path::Path, tool_path: &str) -> Result<(crate::tool::ToolDef, PathBuf), ToolError> {
    let mut tool_root = ToolRoot::new(root);
    match tool_root.resolve(tool_path) {
        Resolved::Found(t) => match &t.def {
            Some(d) if !d.is_composite() => Ok((d.clone(), t.file.clone())),
            Some(_) => Err(ToolError::permanent(format!(
                "`{tool_path}` is a composite on this worker's root ({}), not a primitive tool",
                root.display()
            ))),
            None => Err(ToolError::permanent(format!(
                "`{tool_path}` does not load on this worker's root ({})",
                root.display()
            ))),
        },
        Resolved::Missing(p) => Err(ToolError::permanent(format!(
            "`{tool_path}` has no file on this worker (looked for {}; start the worker with --root on the tool root)",
            p.display()
        ))),
        Resolved::Invalid(why) => Err(ToolError::permanent(why)),
    }
}
