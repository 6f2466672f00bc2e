//! Replay: a composite re-run from a trace, with no tool calls.
//!
//! The run is the ordinary scheduler's; the trace comes in as its [`Source`] (a
//! [`Recording`]), the interface through which a live run reaches its runner, breakers,
//! retry back-off and clock. So the scheduler knows nothing of replay.
//!
//! Every attempt's outcome (the response, or the error with its kind: transient, permanent,
//! timeout, deadline, refused by a breaker) and every wall-clock read comes from the trace,
//! keyed by the step's path (`extract`, `extract[3]`, `outer/inner`); the retry delays are
//! the recorded ones, slept on a virtual clock. Everything else — conditions, transforms,
//! REFs, validation, the response map — runs again from the current definitions. So a replay
//! of an unchanged workflow gives the recorded result, and a replay after a change shows
//! where the run would now go another way: each such place is a [`Divergence`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::executor::{Event, Executor, Options, Run};
use super::file_reads::{FileAnswer, FileOp, FileRead, VersionRecord};
use super::guard::GuardError;
use super::retry::RetryPolicy;
use super::runner::{CancelToken, ToolCall, ToolError};
use super::scheduler::{self, AttemptCall, RunCtx, Source};
use super::time::ManualTime;
use super::trace::{Attempt, CallView, ChildTrace, Outcome, StepTrace, Trace};
use super::workflow::Workflow;
use crate::diagnostic::Code;
use crate::files::{Entry, EntryKind, FileError, FileStore, StorePath, Version};
use crate::value::Value;

/// A place where the replay did not do what the recording did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The step path (`extract[2]`), or `run` for the run as a whole.
    pub at: String,
    /// What differs.
    pub what: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

/// What a replay produced.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The replayed run (its trace is the replay's own).
    pub run: Run,
    /// Where it departed from the recording; empty when it did not.
    pub divergences: Vec<Divergence>,
}

/// Replays `trace` on `workflow`. The options' concurrency, retry defaults and guards
/// apply, except that the limits the trace recorded ([`Trace::limits`]: steps, fan-out
/// width, nesting) replace theirs; the deadline does not (recorded deadline outcomes are
/// replayed as they were). Load `workflow` with [`engine`]`(trace)` so that its expressions
/// run under the recorded evaluation limits and read the recorded files.
pub fn replay(workflow: &Workflow, trace: &Trace, mut options: Options) -> Result<Replay, GuardError> {
    // The options as given, then with the recorded limits (a trace may have been edited).
    options.validate()?;
    if let Some(l) = &trace.limits {
        options.guards.max_steps = l.max_steps;
        options.guards.max_fan_out = l.max_fan_out;
        options.max_depth = l.max_nesting;
    }
    options.validate()?;
    options.guards.check(workflow)?;
    let recording = Arc::new(Recording::from_trace(trace));
    let wall = chrono::DateTime::parse_from_rfc3339(&trace.started_at).map_or(0, |t| t.timestamp_millis());
    let refuse =
        |_: &ToolCall<'_>| -> Result<Value, ToolError> { Err(ToolError::permanent("replay makes no tool calls")) };
    let ex = Executor::with_runner(Arc::new(refuse))
        .with_options(Options { deadline: None, ..options })
        .with_time(Arc::new(ManualTime::new(wall)));
    let run = scheduler::run(&ex, workflow, trace.arguments.clone(), &*recording, &CancelToken::new());
    let mut divergences = recording.take();
    compare_runs(trace, &run.trace, &mut divergences);
    Ok(Replay { run, divergences })
}

/// A trace's attempts and clock reads by step path.
pub(crate) struct Recording {
    attempts: HashMap<String, Vec<Attempt>>,
    clocks: HashMap<String, Vec<i64>>,
    divergences: Mutex<Vec<Divergence>>,
}

impl Recording {
    pub(crate) fn from_trace(t: &Trace) -> Recording {
        let mut r = Recording { attempts: HashMap::new(), clocks: HashMap::new(), divergences: Mutex::new(Vec::new()) };
        r.clocks.insert("$tool".to_string(), t.clock_reads.clone());
        r.steps(&t.steps, "");
        r
    }

    fn steps(&mut self, steps: &[StepTrace], prefix: &str) {
        for s in steps {
            let key = format!("{prefix}{}", s.execution_id);
            self.attempts.insert(key.clone(), s.attempts.clone());
            self.clocks.insert(key.clone(), s.clock_reads.clone());
            self.callee(&key, s.steps.as_deref(), &s.callee_clock_reads);
            for c in s.children.iter().flatten() {
                let ck = format!("{key}[{}]", c.index);
                self.attempts.insert(ck.clone(), c.attempts.clone());
                self.callee(&ck, c.steps.as_deref(), &c.callee_clock_reads);
            }
        }
    }

    fn callee(&mut self, key: &str, steps: Option<&[StepTrace]>, clock: &[i64]) {
        if let Some(steps) = steps {
            self.clocks.insert(format!("{key}/$tool"), clock.to_vec());
            self.steps(steps, &format!("{key}/"));
        }
    }

    /// The recorded attempt `n` (0-based) of a step path.
    fn recorded(&self, key: &str, n: u32) -> Option<&Attempt> {
        self.attempts.get(key).and_then(|a| a.get(n as usize))
    }

    fn diverge(&self, at: &str, what: String) {
        self.divergences.lock().unwrap_or_else(PoisonError::into_inner).push(Divergence { at: at.to_string(), what });
    }

    fn take(&self) -> Vec<Divergence> {
        std::mem::take(&mut *self.divergences.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The recording as the run's source: every attempt's outcome, back-off and breaker refusal,
/// and every clock read, as recorded.
impl Source for Recording {
    fn clock_reads(&self, key: &str) -> Option<Vec<i64>> {
        Some(self.clocks.get(key).cloned().unwrap_or_default())
    }

    fn delay_ms(&self, _ctx: &RunCtx<'_>, key: &str, n: u32, _policy: &RetryPolicy) -> u64 {
        self.recorded(key, n).map_or(0, |a| a.delay_ms)
    }

    fn refused_at_once(&self, _ctx: &RunCtx<'_>, call: &AttemptCall<'_>, _delay_ms: u64) -> Option<String> {
        self.recorded(call.key, call.n)
            .filter(|a| a.outcome == Outcome::Refused)
            .map(|a| a.error.clone().unwrap_or_default())
    }

    /// The replay retries where the run did: when the recording has a next attempt.
    fn repeatable(&self, _ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> bool {
        self.recorded(call.key, call.n.saturating_add(1)).is_some()
    }

    fn attempt(&self, ctx: &RunCtx<'_>, call: &AttemptCall<'_>) -> Option<(Outcome, Result<Value, ToolError>)> {
        let (key, n) = (call.key, call.n);
        let recorded = self.recorded(key, n);
        if recorded.is_none_or(|a| a.outcome != Outcome::Refused) {
            ctx.emit(Event::AttemptStarted { step: key, tool: call.tool_path, attempt: n + 1 });
        }
        Some(match recorded {
            Some(a) => {
                let message = a.error.clone().unwrap_or_default();
                let answer = match a.outcome {
                    Outcome::Ok => Ok(a.response.clone().unwrap_or_default()),
                    Outcome::Permanent => Err(ToolError::permanent(message)),
                    Outcome::Deadline => {
                        ctx.mark_deadline_hit();
                        Err(ToolError::transient(message))
                    }
                    Outcome::Cancelled => {
                        ctx.cancel_run();
                        Err(ToolError::transient(message))
                    }
                    Outcome::Transient | Outcome::Timeout | Outcome::Refused => Err(ToolError::transient(message)),
                };
                ctx.breaker_saw(call.tool_path, a.outcome);
                (a.outcome, answer)
            }
            None => {
                self.diverge(key, format!("attempt {} was not recorded: the replay calls the tool more often", n + 1));
                (Outcome::Permanent, Err(ToolError::permanent("replay: no recorded response for this call")))
            }
        })
    }
}

fn compare_runs(recorded: &Trace, replayed: &Trace, out: &mut Vec<Divergence>) {
    let mut diff = |what: String| out.push(Divergence { at: "run".to_string(), what });
    if recorded.status != replayed.status {
        diff(format!("status is {}, recorded {}", replayed.status.as_str(), recorded.status.as_str()));
    }
    if recorded.result != replayed.result {
        diff(format!("the result differs: {} now, recorded {}", show(&replayed.result), show(&recorded.result)));
    }
    compare_steps(&recorded.steps, &replayed.steps, "", out);
}

fn show(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Compares what two runs of one step or child did: status, arguments, result, attempts.
fn compare_calls(at: &str, rec: CallView<'_>, new: CallView<'_>, out: &mut Vec<Divergence>) {
    let mut diff = |what: String| out.push(Divergence { at: at.to_string(), what });
    if rec.status != new.status {
        diff(format!("status is {}, recorded {}", new.status.as_str(), rec.status.as_str()));
    }
    if rec.arguments != new.arguments {
        diff(format!("arguments differ: {} now, recorded {}", show(new.arguments), show(rec.arguments)));
    }
    if rec.result != new.result {
        diff(format!("result differs: {} now, recorded {}", show(new.result), show(rec.result)));
    }
    if rec.attempts.len() > new.attempts.len() {
        diff(format!("{} attempts now, recorded {}", new.attempts.len(), rec.attempts.len()));
    }
}

fn compare_steps(rec: &[StepTrace], new: &[StepTrace], prefix: &str, out: &mut Vec<Divergence>) {
    for r in rec {
        let at = format!("{prefix}{}", r.execution_id);
        let Some(n) = new.iter().find(|n| n.execution_id == r.execution_id) else {
            out.push(Divergence { at, what: "the step is not in the replay".to_string() });
            continue;
        };
        compare_calls(&at, r.call(), n.call(), out);
        compare_children(r.children.as_deref().unwrap_or(&[]), n.children.as_deref().unwrap_or(&[]), &at, out);
        if let (Some(a), Some(b)) = (&r.steps, &n.steps) {
            compare_steps(a, b, &format!("{at}/"), out);
        }
    }
    for n in new.iter().filter(|n| !rec.iter().any(|r| r.execution_id == n.execution_id)) {
        out.push(Divergence {
            at: format!("{prefix}{}", n.execution_id),
            what: "the step is not in the recording".to_string(),
        });
    }
}

fn compare_children(rec: &[ChildTrace], new: &[ChildTrace], step: &str, out: &mut Vec<Divergence>) {
    if rec.len() != new.len() {
        out.push(Divergence {
            at: step.to_string(),
            what: format!("{} children now, recorded {}", new.len(), rec.len()),
        });
    }
    for (r, n) in rec.iter().zip(new) {
        let at = format!("{step}[{}]", r.index);
        compare_calls(&at, r.call(), n.call(), out);
        if let (Some(a), Some(b)) = (&r.steps, &n.steps) {
            compare_steps(a, b, &format!("{at}/"), out);
        }
    }
}

/// The engine to load a trace's composite with for its replay: the run's evaluation limits
/// (fuel, memory) when the trace recorded them, and, when the run had a file store, one
/// that answers every read from the trace ([`ReplayFiles`]).
pub fn engine(trace: &Trace) -> crate::Engine {
    let mut engine = super::engine();
    if let Some(l) = &trace.limits {
        engine =
            engine.with_limits(crate::Limits { fuel: l.fuel, max_alloc_bytes: l.max_memory, ..Default::default() });
    }
    if let Some(files) = &trace.files {
        engine = engine.with_file_store(Arc::new(ReplayFiles::new(files)));
    }
    engine
}

fn error_answer(e: &FileError) -> FileAnswer {
    FileAnswer::Error { code: e.code.as_str().to_string(), message: e.message.clone() }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// An operation as recording and replay tell them apart: what, of which path, at which
/// version or tag (not the size bound, which the recorded limits fix).
type FileKey = (FileOp, String, Option<String>);

/// A file store that passes every operation to another and records it with its answer (the
/// first answer of each distinct operation), for [`Trace::files`]: `tdsl run --files` runs
/// with one and puts [`FileRecorder::reads`] in the trace.
pub struct FileRecorder {
    inner: Arc<dyn FileStore>,
    reads: Mutex<(Vec<FileRead>, std::collections::HashSet<FileKey>)>,
}

impl std::fmt::Debug for FileRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRecorder").finish_non_exhaustive()
    }
}

impl FileRecorder {
    /// Records what `inner` answers.
    pub fn new(inner: Arc<dyn FileStore>) -> FileRecorder {
        FileRecorder { inner, reads: Mutex::new((Vec::new(), std::collections::HashSet::new())) }
    }

    /// The operations recorded so far, in the order first made.
    pub fn reads(&self) -> Vec<FileRead> {
        self.reads.lock().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    fn note(&self, op: FileOp, path: &StorePath, version: Option<String>, max_bytes: Option<u64>, answer: FileAnswer) {
        let key = (op, path.as_str().to_string(), version.clone());
        let mut reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
        if reads.1.insert(key) {
            reads.0.push(FileRead { op, path: path.as_str().to_string(), version, max_bytes, answer });
        }
    }
}

impl FileStore for FileRecorder {
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError> {
        let r = self.inner.read_dir(dir);
        let answer = match &r {
            Ok(entries) => FileAnswer::Entries(
                entries
                    .iter()
                    .map(|e| {
                        let kind = if e.kind == EntryKind::File { "file" } else { "directory" };
                        (e.name.clone(), kind.to_string(), e.link)
                    })
                    .collect(),
            ),
            Err(e) => error_answer(e),
        };
        self.note(FileOp::ReadDir, dir, None, None, answer);
        r
    }

    fn read(&self, path: &StorePath, version: Option<&Version>, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let r = self.inner.read(path, version, max_bytes);
        let answer = match &r {
            Ok(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => FileAnswer::Text(text.to_string()),
                Err(_) => FileAnswer::Hex(hex(bytes)),
            },
            Err(e) => error_answer(e),
        };
        self.note(FileOp::Read, path, version.map(|v| v.id.clone()), Some(max_bytes), answer);
        r
    }

    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError> {
        let r = self.inner.versions(path);
        let answer = match &r {
            Ok(v) => FileAnswer::Versions(v.iter().map(VersionRecord::from).collect()),
            Err(e) => error_answer(e),
        };
        self.note(FileOp::Versions, path, None, None, answer);
        r
    }

    fn tagged_version(&self, path: &StorePath, name: &str) -> Result<Option<Version>, FileError> {
        let r = self.inner.tagged_version(path, name);
        let answer = match &r {
            Ok(v) => FileAnswer::Tag(v.as_ref().map(VersionRecord::from)),
            Err(e) => error_answer(e),
        };
        self.note(FileOp::Tag, path, Some(name.to_string()), None, answer);
        r
    }

    fn root(&self) -> Option<&std::path::Path> {
        self.inner.root()
    }
}

/// A file store that answers from a trace's recorded reads ([`Trace::files`]): the replay
/// reads what the run read, whatever is on disk now. An operation the run did not make is
/// an `E0712` error saying so (and the replay then diverges).
#[derive(Debug)]
pub struct ReplayFiles {
    answers: HashMap<FileKey, FileAnswer>,
}

impl ReplayFiles {
    /// The store of these recorded reads.
    pub fn new(reads: &[FileRead]) -> ReplayFiles {
        let mut answers = HashMap::new();
        for r in reads {
            answers.entry((r.op, r.path.clone(), r.version.clone())).or_insert_with(|| r.answer.clone());
        }
        ReplayFiles { answers }
    }

    fn answer(&self, op: FileOp, path: &StorePath, version: Option<String>) -> Result<&FileAnswer, FileError> {
        self.answers.get(&(op, path.as_str().to_string(), version)).ok_or_else(|| {
            FileError::io(path.as_str(), "the recorded run did not read this (replay reads only what the run read)")
        })
    }
}

fn recorded_error(a: &FileAnswer, path: &StorePath) -> FileError {
    match a {
        FileAnswer::Error { code, message } => {
            let code = Code::parse(code).unwrap_or(Code::FileStoreIo);
            FileError::new(code, message.clone())
        }
        _ => FileError::io(path.as_str(), "the recorded answer does not fit this operation"),
    }
}

impl FileStore for ReplayFiles {
    fn read_dir(&self, dir: &StorePath) -> Result<Vec<Entry>, FileError> {
        match self.answer(FileOp::ReadDir, dir, None)? {
            FileAnswer::Entries(e) => Ok(e
                .iter()
                .map(|(name, kind, link)| Entry {
                    name: name.clone(),
                    kind: if kind == "file" { EntryKind::File } else { EntryKind::Directory },
                    link: *link,
                })
                .collect()),
            other => Err(recorded_error(other, dir)),
        }
    }

    fn read(&self, path: &StorePath, version: Option<&Version>, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let bytes = match self.answer(FileOp::Read, path, version.map(|v| v.id.clone()))? {
            FileAnswer::Text(t) => t.clone().into_bytes(),
            FileAnswer::Hex(h) => {
                unhex(h).ok_or_else(|| FileError::io(path.as_str(), "the recorded content is not hexadecimal"))?
            }
            other => return Err(recorded_error(other, path)),
        };
        if bytes.len() as u64 > max_bytes {
            return Err(FileError::too_large(path.as_str(), bytes.len() as u64, max_bytes));
        }
        Ok(bytes)
    }

    fn versions(&self, path: &StorePath) -> Result<Vec<Version>, FileError> {
        match self.answer(FileOp::Versions, path, None)? {
            FileAnswer::Versions(v) => Ok(v.iter().map(Version::from).collect()),
            other => Err(recorded_error(other, path)),
        }
    }

    fn tagged_version(&self, path: &StorePath, name: &str) -> Result<Option<Version>, FileError> {
        match self.answer(FileOp::Tag, path, Some(name.to_string()))? {
            FileAnswer::Tag(v) => Ok(v.as_ref().map(Version::from)),
            other => Err(recorded_error(other, path)),
        }
    }
}
