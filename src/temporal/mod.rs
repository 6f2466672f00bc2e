//! Composites on Temporal (feature `temporal`, SPEC §10, `docs/distributed.md`).
//!
//! `tdsl run --engine temporal` checks a composite locally and starts one workflow,
//! [`worker::TdslWorkflow`], whose input ([`RunInput`]) carries the composite and the text of
//! every `.tool` file it reaches. The workflow interprets the checked plan ([`interp`]) with
//! the same data flow as a local run (`exec::data`): every primitive call is one activity,
//! [`worker::TdslActivities::call_tool`], which a `tdsl worker` runs through the host
//! runner (`exec:`, `builtin:`, `mcp:`, HTTP, or the run's `--mock` answers), but for the
//! children of a fan-out of a primitive tool, which run in batches, one activity
//! ([`worker::TdslActivities::call_batch`], `batch.rs`) per batch (interpreter v4). Retries
//! are Temporal retry policies (a batch's children retry inside it); the workflow's result
//! is the run's trace.
//!
//! The interpreter is deterministic: it reads time only from the workflow context, draws no
//! random numbers, and starts calls in plan order (children in input order), so a replay of
//! its history issues the same commands. [`INTERPRETER_VERSION`] names its behaviour: a
//! change that would issue other commands for the same history must go behind
//! `ctx.patched(..)` (see `docs/distributed.md`).

// The SDK's macros generate undocumented associated items (activity and run markers).
#[allow(missing_docs)]
mod activity;
mod batch;
mod bounds;
pub mod client;
#[allow(missing_docs)]
mod interp;
mod ordered;
mod tool_call;
pub mod worker;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exec::breaker::BreakerPolicy;
use crate::exec::{Tool, Workflow};
use crate::value::Value;

/// The version of the interpreter's behaviour; carried in every run's input.
pub const INTERPRETER_VERSION: u32 = 5;

/// Temporal's limit on one payload (a workflow's or an activity's input or result): 2 MiB
/// by default on the server (`limit.blobSize.error`). A larger one is an error naming it.
pub const PAYLOAD_LIMIT_BYTES: usize = 2 * 1024 * 1024;

/// The error for a payload over [`PAYLOAD_LIMIT_BYTES`]: `what` names it.
pub(crate) fn over_payload_limit(what: &str, bytes: usize) -> Option<String> {
    (bytes > PAYLOAD_LIMIT_BYTES).then(|| {
        format!(
            "{what} is {bytes} bytes, over Temporal's payload limit of {PAYLOAD_LIMIT_BYTES} bytes (2 MiB); \
             keep large data in files and pass their paths"
        )
    })
}

/// The events one workflow's history may reach by default before the run stops with
/// `E0815`: under Temporal's own limit of 51,200 (`limit.historyCount.error`), with room for
/// the calls still in flight (at most `--concurrency`, 1,024, about 3 events each) to end
/// and the workflow to complete.
pub const HISTORY_LIMIT: u32 = 40_000;

fn default_history_limit() -> u32 {
    HISTORY_LIMIT
}

/// The bytes of payloads one workflow's history may hold by default before the run stops
/// with `E0815` ([`crate::ranges::TEMPORAL_HISTORY_BYTES`], `--temporal-history-bytes`): 40
/// MiB, under Temporal's own 50 MiB (`limit.historySize.error`), with room for the answers
/// of the calls still in flight (each at most [`PAYLOAD_LIMIT_BYTES`]) and the run's trace.
pub const HISTORY_BYTES: usize = crate::ranges::DEFAULT_TEMPORAL_HISTORY_BYTES;

fn default_history_bytes() -> usize {
    HISTORY_BYTES
}

/// Where a worker and a client find the server: `--temporal-address`, `--namespace`,
/// `--task-queue`.
#[derive(Clone, Debug)]
pub struct Connection {
    /// `HOST:PORT` (or a URL).
    pub address: String,
    /// The namespace.
    pub namespace: String,
    /// The task queue workflows and activities run on.
    pub task_queue: String,
}

impl Default for Connection {
    fn default() -> Connection {
        Connection {
            address: "127.0.0.1:7233".to_string(),
            namespace: "default".to_string(),
            task_queue: "tdsl".to_string(),
        }
    }
}

/// A run's input: the composite, every definition it reaches, its arguments and options.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInput {
    /// [`INTERPRETER_VERSION`] of the client that started the run.
    pub interpreter: u32,
    /// The composite's tool path under the root (`/main.tool`).
    pub tool: String,
    /// The text of every `.tool` file the composite reaches, by tool path (the composite's
    /// own included).
    pub files: BTreeMap<String, String>,
    /// The run's arguments.
    pub arguments: Value,
    /// The execution options.
    pub options: RunOptions,
    /// The `--mock` file's JSON, when one was given.
    #[serde(default)]
    pub mock: Option<Value>,
    /// Set in the input of a child workflow that runs one chunk of a large fan-out.
    #[serde(default)]
    pub chunk: Option<Chunk>,
    /// The files `--files DIR` serves to the file functions of transforms, as they were
    /// when the run started ([`FilesSnapshot`]).
    #[serde(default)]
    pub data_files: Option<FilesSnapshot>,
}

/// The files under `--files DIR`, every version of each, as a run on Temporal carries them:
/// transforms on any worker, and every replay, read the same bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesSnapshot {
    /// Each file, by path under the directory, sorted.
    pub files: Vec<SnapshotFile>,
}

/// One file of a [`FilesSnapshot`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Its path under the directory (`notes/today.txt`).
    pub path: String,
    /// Its versions, newest first.
    pub versions: Vec<SnapshotVersion>,
}

/// One version of a [`SnapshotFile`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotVersion {
    /// The version's id (a commit, or `current`).
    pub id: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at_millis: Option<i64>,
    /// Its author.
    pub author: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// Its bytes, in base64.
    pub content: String,
}

impl FilesSnapshot {
    /// Every file under `store`'s root and every version of each, read now. More than
    /// `max_bytes` of content in all is an error naming the limit (nothing past it is read).
    pub fn take(store: &dyn crate::files::FileStore, max_bytes: usize) -> Result<FilesSnapshot, String> {
        use crate::files::{EntryKind, StorePath};
        use base64::Engine as _;
        let mut files = Vec::new();
        let mut total = 0usize;
        let mut dirs = vec![StorePath::root()];
        while let Some(dir) = dirs.pop() {
            let mut entries = store.read_dir(&dir).map_err(|e| e.to_string())?;
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            for e in entries {
                let Some(path) = dir.join(&e.name) else { continue };
                match e.kind {
                    // Linked directories are not walked (as listings do not).
                    EntryKind::Directory if !e.link => dirs.push(path),
                    EntryKind::Directory => {}
                    EntryKind::File => {
                        let mut versions = Vec::new();
                        for v in store.versions(&path).map_err(|e| e.to_string())? {
                            // Each version costs its bytes and its description: a directory of
                            // very many small files (a `--files /`) stops here too, early.
                            total = total.saturating_add(path.as_str().len() + v.id.len() + 64);
                            let left = max_bytes.saturating_sub(total) as u64;
                            let bytes = store.read(&path, Some(&v), left).map_err(|e| {
                                if e.code == crate::diagnostic::Code::FileTooLarge {
                                    over_files_limit(max_bytes)
                                } else {
                                    e.to_string()
                                }
                            })?;
                            total = total.saturating_add(bytes.len());
                            if total > max_bytes {
                                return Err(over_files_limit(max_bytes));
                            }
                            versions.push(SnapshotVersion {
                                id: v.id,
                                created_at_millis: v.created_at_millis,
                                author: v.author,
                                message: v.message,
                                content: base64::engine::general_purpose::STANDARD.encode(&bytes),
                            });
                        }
                        files.push(SnapshotFile { path: path.as_str().to_string(), versions });
                    }
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(FilesSnapshot { files })
    }

    /// The snapshot as a store for the engine.
    pub fn to_store(&self) -> Result<crate::files::MemoryStore, String> {
        use base64::Engine as _;
        let mut store = crate::files::MemoryStore::new();
        for f in &self.files {
            // Oldest first: each commit becomes the newest.
            for v in f.versions.iter().rev() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&v.content)
                    .map_err(|e| format!("{}: the snapshot's content is not base64: {e}", f.path))?;
                let version = crate::files::Version {
                    id: v.id.clone(),
                    created_at_millis: v.created_at_millis,
                    size: 0,
                    author: v.author.clone(),
                    message: v.message.clone(),
                };
                store.commit(&f.path, version, bytes).map_err(|e| e.to_string())?;
            }
        }
        Ok(store)
    }
}

fn over_files_limit(max_bytes: usize) -> String {
    format!(
        "the files under --files, with their versions, are more than {max_bytes} bytes: a run on Temporal carries them in its input, \
         under Temporal's payload limit of {PAYLOAD_LIMIT_BYTES} bytes (2 MiB); read large data with a tool instead"
    )
}

/// One chunk of a large fan-out, run by a child workflow: the children's arguments, already
/// resolved by the parent, and what their calls need.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Chunk {
    /// The fan-out step's path (`each`, `outer/each`).
    pub step_key: String,
    /// The callee (a primitive tool or a composite).
    pub tool_path: String,
    /// How deep the fan-out's composite is nested (a composite callee nests one deeper).
    #[serde(default)]
    pub depth: usize,
    /// The bound on one attempt.
    pub timeout_seconds: f64,
    /// The step's retry policy.
    pub retry: crate::exec::retry::RetryPolicy,
    /// The index of the chunk's first child in the whole fan-out.
    pub first_index: usize,
    /// Each child's arguments.
    pub arguments: Vec<Value>,
    /// The step's `continue_on_error`.
    pub continue_on_error: bool,
    /// Attempts the run made at the tool before the chunk (where mock answers continue).
    pub mock_base: usize,
    /// Attempts the run made at each mocked tool before the chunk (a composite callee calls
    /// several).
    #[serde(default)]
    pub mock_bases: BTreeMap<String, usize>,
    /// The calls the parent lent the chunk from the run's `--max-calls-per-run`: the most
    /// its child workflow (and its own chunks) may make. `None` in a chunk of interpreter
    /// v2, which counted its own calls against the whole limit.
    #[serde(default)]
    pub calls: Option<usize>,
    /// The fuel the parent lent the chunk from the run's `--max-run-fuel`: what its child
    /// workflow's expressions (and its own chunks') may spend. `None` in a chunk of a run
    /// without one budget of fuel (interpreter v4 and before).
    #[serde(default)]
    pub fuel: Option<u64>,
    /// The bytes the parent lent the chunk from the run's `--max-run-memory`: what its
    /// expressions and the answers it keeps may hold. `None` as for [`Chunk::fuel`].
    #[serde(default)]
    pub memory: Option<u64>,
}

/// What a chunk's child workflow returns.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChunkOutput {
    /// Each child, in order.
    pub children: Vec<ChunkChild>,
    /// Attempts at the tool after the chunk (the parent's count goes on from it).
    pub mock_calls: usize,
    /// Attempts at each mocked tool after the chunk.
    #[serde(default)]
    pub mock_counts: BTreeMap<String, usize>,
    /// Retries in the chunk.
    pub retries: u32,
    /// The most calls the chunk had in flight.
    pub max_in_flight: usize,
    /// The calls the chunk made, of those it was lent ([`Chunk::calls`]).
    #[serde(default)]
    pub calls: usize,
    /// A call of the chunk would have passed what it was lent: it was not made, and the
    /// run stops (`E0816`).
    #[serde(default)]
    pub calls_exhausted: bool,
    /// The fuel the chunk spent, of what it was lent ([`Chunk::fuel`]); `None` when it was
    /// lent none.
    #[serde(default)]
    pub fuel_spent: Option<u64>,
    /// The bytes the chunk still held when it ended (its children's results and the answers
    /// they keep), of what it was lent ([`Chunk::memory`]): the parent holds them from then
    /// on. `None` when it was lent none.
    #[serde(default)]
    pub memory_held: Option<u64>,
}

/// One child of a chunk: its trace and, when it failed, why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChunkChild {
    /// The child's trace.
    pub trace: crate::exec::ChildTrace,
    /// A composite callee ended PARTIAL (a step failed under `continue_on_error`).
    #[serde(default)]
    pub partial: bool,
    /// Why it failed: the step core's own failure, as it serializes.
    pub(crate) error: Option<crate::exec::data::Failure>,
}

/// What the workflow's `progress` query answers (`tdsl run --engine temporal` draws it on a
/// terminal; `temporal workflow query --type progress --input N` asks it too): the run's
/// counts so far and the step lines after line `since`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgressReport {
    /// The composite's top-level steps.
    pub steps: usize,
    /// Of them, those that ended.
    pub steps_done: u64,
    /// Fan-out children so far.
    pub children: usize,
    /// Of them, those that ended.
    pub children_done: usize,
    /// Tool calls in flight in the run's own workflow (a fan-out chunk's are its child
    /// workflow's).
    pub in_flight: usize,
    /// Retries so far (known as each call ends: Temporal retries inside a call).
    pub retries: usize,
    /// Step lines so far: pass it back as `since` to get only the newer ones.
    pub lines_total: u64,
    /// The step lines after `since` (`▶ step (tool)`, `✔ step`, `• step STATUS (why)`), at
    /// most [`PROGRESS_LINES`] of the newest.
    pub lines: Vec<String>,
}

/// The step lines the workflow keeps for its `progress` query.
pub const PROGRESS_LINES: usize = 1_000;

/// The workflow's progress, as it changes; [`ProgressReport`] is its answer to a query.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    counts: ProgressReport,
    lines: std::collections::VecDeque<String>,
}

impl Progress {
    /// A step line.
    pub(crate) fn line(&mut self, line: String) {
        if self.lines.len() == PROGRESS_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
        self.counts.lines_total += 1;
    }

    /// The counts, to change.
    pub(crate) fn counts(&mut self) -> &mut ProgressReport {
        &mut self.counts
    }

    /// The answer to a query: the counts and the lines after `since`.
    pub fn report(&self, since: u64) -> ProgressReport {
        let first_kept = self.counts.lines_total - self.lines.len() as u64;
        let skip = usize::try_from(since.saturating_sub(first_kept)).unwrap_or(usize::MAX);
        ProgressReport { lines: self.lines.iter().skip(skip).cloned().collect(), ..self.counts.clone() }
    }
}

/// The options of a local run that a Temporal run honours.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOptions {
    /// The most tool calls in flight at once (`--concurrency`).
    pub concurrency: usize,
    /// The run's deadline in seconds (`--deadline`).
    pub deadline_seconds: Option<f64>,
    /// The bound on one attempt of a step without `timeout_seconds`.
    pub timeout_seconds: f64,
    /// How deep composite callees may nest.
    pub max_depth: usize,
    /// The most children one parallel step may have (`--max-fan-out`).
    pub max_fan_out: usize,
    /// The most calls of the run (`--max-calls-per-run`), its fan-out chunks' child
    /// workflows included: each is lent its share ([`Chunk::calls`]).
    #[serde(default = "default_max_calls")]
    pub max_calls_per_run: usize,
    /// The most bytes of the run's result as compact JSON (`--max-result-bytes`; `E0817`
    /// past it).
    #[serde(default = "default_max_result_bytes")]
    pub max_result_bytes: usize,
    /// The default retry policy: retries after the first attempt.
    pub max_retries: u32,
    /// The default first back-off, in seconds.
    pub base_delay_seconds: f64,
    /// The default back-off factor.
    pub factor: f64,
    /// The default longest back-off, in seconds.
    pub max_delay_seconds: f64,
    /// The default fraction of a back-off added or removed at random.
    #[serde(default)]
    pub jitter: f64,
    /// The seed of retry jitter (`--seed`; drawn by the client when not given).
    #[serde(default)]
    pub seed: u64,
    /// Evaluation fuel of each expression (`--fuel`).
    pub fuel: Option<u64>,
    /// Bytes one evaluation may build (`--max-memory`).
    pub max_memory: Option<u64>,
    /// The fuel of all the run's expressions (`--max-run-fuel`): one budget for the whole
    /// run, its fan-out chunks' child workflows included (each is lent its share,
    /// [`Chunk::fuel`]). `None` in a run started before it (interpreter v4), whose
    /// expressions had only their own limits.
    #[serde(default)]
    pub max_run_fuel: Option<u64>,
    /// The bytes the run's expressions and the tool answers it keeps may hold at once
    /// (`--max-run-memory`), lent to chunks as fuel is ([`Chunk::memory`]). `None` in a run
    /// started before it.
    #[serde(default)]
    pub max_run_memory: Option<u64>,
    /// Bytes an `exec:` tool may print (`--max-tool-output`).
    pub max_tool_output: u64,
    /// The circuit breakers' policy (`--breaker-*`), as it serializes; each worker keeps
    /// its own breakers.
    #[serde(default)]
    pub breaker: BreakerPolicy,
    /// The events one workflow's history may reach before a call or a child workflow would
    /// start (`--temporal-history-limit`; `E0815` past it).
    #[serde(default = "default_history_limit")]
    pub history_limit: u32,
    /// The bytes of payloads one workflow's history may hold before a call, a batch or a
    /// child workflow would pass them (`--temporal-history-bytes`; `E0815` past it). A run
    /// started before the limit existed reads the default.
    #[serde(default = "default_history_bytes")]
    pub history_bytes: usize,
}

fn default_max_calls() -> usize {
    crate::ranges::DEFAULT_MAX_CALLS_PER_RUN
}

fn default_max_result_bytes() -> usize {
    crate::ranges::DEFAULT_MAX_RESULT_BYTES
}

impl RunOptions {
    /// The run's default retry policy.
    pub fn retry(&self) -> crate::exec::retry::RetryPolicy {
        crate::exec::retry::RetryPolicy {
            max_retries: self.max_retries,
            base_delay_seconds: self.base_delay_seconds,
            factor: self.factor,
            max_delay_seconds: self.max_delay_seconds,
            jitter: self.jitter,
        }
    }

    /// The options of a local run's [`crate::exec::Options`].
    pub fn from_exec(o: &crate::exec::Options, limits: &crate::Limits, max_tool_output: u64) -> RunOptions {
        let defaults = crate::Limits::default();
        RunOptions {
            concurrency: o.max_concurrency,
            deadline_seconds: o.deadline.map(|d| d.as_secs_f64()),
            timeout_seconds: o.timeout_seconds,
            max_depth: o.max_depth,
            max_fan_out: o.guards.max_fan_out,
            max_calls_per_run: o.guards.max_calls_per_run,
            max_result_bytes: o.guards.max_result_bytes,
            max_retries: o.retry.max_retries,
            base_delay_seconds: o.retry.base_delay_seconds,
            factor: o.retry.factor,
            max_delay_seconds: o.retry.max_delay_seconds,
            jitter: o.retry.jitter,
            seed: 0,
            fuel: (limits.fuel != defaults.fuel).then_some(limits.fuel),
            max_memory: (limits.max_alloc_bytes != defaults.max_alloc_bytes).then_some(limits.max_alloc_bytes as u64),
            max_run_fuel: Some(o.guards.max_run_fuel),
            max_run_memory: Some(o.guards.max_run_memory),
            max_tool_output,
            breaker: o.breaker.clone(),
            history_limit: HISTORY_LIMIT,
            history_bytes: HISTORY_BYTES,
        }
    }
}

/// What the workflow returns: the run's trace (`tdsl-trace/2`) as JSON text.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOutput {
    /// [`INTERPRETER_VERSION`] of the worker that ran it.
    pub interpreter: u32,
    /// The trace: compact JSON, gzipped, in base64 ([`pack_trace`]; empty for a chunk).
    pub trace: String,
    /// A chunk's children (a child workflow of a large fan-out).
    #[serde(default)]
    pub chunk: Option<ChunkOutput>,
}

/// One primitive call: an activity's input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CallInput {
    /// The callee's tool path, resolved under the worker's `--root`.
    pub tool_path: String,
    /// The step path of the call (`extract[3]`).
    pub key: String,
    /// The arguments, checked against the callee's declaration by the workflow.
    pub arguments: Value,
    /// The bound on one attempt, in seconds.
    pub timeout_seconds: f64,
    /// The run's mock answers for this tool (the `--mock` entry), if any.
    #[serde(default)]
    pub mock: Option<Value>,
    /// How many attempts at this tool the run made before this call: the mock's answer of
    /// attempt `a` (from 1) is its `mock_base + a - 1`th.
    #[serde(default)]
    pub mock_base: usize,
    /// Bytes an `exec:` tool may print.
    pub max_tool_output: u64,
    /// The run's breaker policy: the worker's breakers for it decide whether the call goes.
    #[serde(default)]
    pub breaker: BreakerPolicy,
    /// The step's retry policy: the activity sets the back-off after a transient failure
    /// from it, with jitter ([`retry_delay`]); `None` leaves it to the activity's retry
    /// policy (no jitter).
    #[serde(default)]
    pub retry: Option<crate::exec::retry::RetryPolicy>,
    /// The run's jitter seed.
    #[serde(default)]
    pub seed: u64,
}

/// The back-off after failed attempt `attempt` (from 1) of the call at `key`: the policy's
/// `min(max_delay, base_delay * factor^(attempt-1))` with its jitter drawn from `seed`, the
/// key and the attempt. The same three give the same delay on every worker and every
/// replay, whatever order calls run in.
pub fn retry_delay(policy: &crate::exec::retry::RetryPolicy, seed: u64, key: &str, attempt: u32) -> Duration {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in key.bytes().chain(attempt.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    policy.delay(attempt.saturating_sub(1), &crate::exec::SeededRandom::new(h))
}

/// A successful call: the response and the attempt that gave it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CallOutput {
    /// The tool's response.
    pub response: Value,
    /// The attempt (from 1) that succeeded.
    pub attempt: u32,
    /// The attempts before it, as they failed.
    #[serde(default)]
    pub earlier: Vec<AttemptNote>,
}

/// A failed attempt, as the activity saw it. Each failed attempt adds its note to the
/// activity's heartbeat details, which Temporal hands to the next attempt and keeps with
/// the final failure: so the trace lists every attempt with its own error.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttemptNote {
    /// The attempt, from 1.
    pub attempt: u32,
    /// `transient`, `permanent`, or `lost` (it timed out or its worker went away, and left
    /// no note).
    pub outcome: String,
    /// Its error.
    pub error: String,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// The back-off the activity asked for before the next attempt, in milliseconds (0 when
    /// it left it to the retry policy).
    #[serde(default)]
    pub delay_ms: u64,
}

/// The notes of attempts 1..`attempt` (exclusive): those recorded, and a `lost` note for
/// each attempt that left none.
pub(crate) fn complete_notes(mut notes: Vec<AttemptNote>, attempt: u32) -> Vec<AttemptNote> {
    notes.retain(|n| n.attempt < attempt);
    for a in 1..attempt {
        if !notes.iter().any(|n| n.attempt == a) {
            notes.push(AttemptNote {
                attempt: a,
                outcome: "lost".to_string(),
                error: format!("attempt {a} timed out, or its worker went away, before it could answer"),
                duration_ms: 0,
                delay_ms: 0,
            });
        }
    }
    notes.sort_by_key(|n| n.attempt);
    notes
}

/// How an attempt failed, as the activity's error type says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// A transient error: Temporal retries it.
    Transient,
    /// A permanent error: not retried.
    Permanent,
    /// The worker's circuit breaker refused the call: not retried (E0806).
    Refused,
}

/// The error type of a tool's failed attempt: `tdsl:KIND:N`, `N` the attempt.
pub(crate) fn failure_type(kind: FailureKind, attempt: u32) -> String {
    let kind = match kind {
        FailureKind::Transient => "transient",
        FailureKind::Permanent => "permanent",
        FailureKind::Refused => "refused",
    };
    format!("tdsl:{kind}:{attempt}")
}

/// Reads a [`failure_type`] back.
pub(crate) fn parse_failure_type(t: &str) -> Option<(FailureKind, u32)> {
    let rest = t.strip_prefix("tdsl:")?;
    let (kind, n) = rest.split_once(':')?;
    let kind = match kind {
        "transient" => FailureKind::Transient,
        "permanent" => FailureKind::Permanent,
        "refused" => FailureKind::Refused,
        _ => return None,
    };
    Some((kind, n.parse().ok()?))
}

/// Every `.tool` file a loaded workflow reaches, by tool path: what a run ships.
pub fn collect_files(wf: &Workflow) -> Result<BTreeMap<String, String>, String> {
    let mut files = BTreeMap::new();
    let read = |p: &Path| crate::input::read_text(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    match wf.plan().file.as_deref() {
        Some(f) => {
            files.insert(wf.name().to_string(), read(f)?);
        }
        None => return Err(format!("`{}` has no file to ship", wf.name())),
    }
    let mut queue = vec![wf.plan()];
    let mut seen = std::collections::HashSet::new();
    while let Some(plan) = queue.pop() {
        // A transform step calls nothing: no file to ship for it.
        for s in plan.steps.iter().filter(|s| s.tool_path.is_some()) {
            let path = s.tool().to_string();
            if !seen.insert(path.clone()) {
                continue;
            }
            match wf.tool(&path) {
                Some(Tool::Composite { plan }) => {
                    if let Some(f) = plan.file.as_deref() {
                        files.insert(path, read(f)?);
                    }
                    queue.push(plan);
                }
                Some(Tool::Primitive { file, .. }) => {
                    files.insert(path, read(file)?);
                }
                Some(Tool::Missing { .. }) | None => {}
            }
        }
    }
    Ok(files)
}

/// A stable 64-bit hash (FNV-1a) of the shipped files: where the worker lays them out.
fn files_hash(files: &BTreeMap<String, String>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in files {
        for b in k.bytes().chain([0u8]).chain(v.bytes()).chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Writes `text` to `file` through a file beside it, then renames it into place: two runs
/// laying out the same files at once (threads of one worker too) never see half of one. The
/// file aside is named by the process and a count of this process's writes, so two writers
/// never share it (named by the process alone, one thread's rename took the other's file
/// away: "cannot write").
fn write_aside(file: &std::path::Path, text: &str) -> Result<(), String> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = file.with_extension(format!("tool.{}.{n}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", file.display())
    })
}
/// The checked workflow of a run's input, loaded once per worker process and per set of
/// files: the files are written under a directory named by their hash (the same input gives
/// the same directory and the same plans, so replays see what the first run saw).
pub(crate) fn load_input(input: &RunInput) -> Result<Arc<Workflow>, String> {
    type Cache = Mutex<HashMap<(u64, Option<u64>, Option<u64>, String, u64), Arc<Workflow>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let hash = files_hash(&input.files);
    let data_hash = input.data_files.as_ref().map_or(0, |d| {
        let text = serde_json::to_string(d).unwrap_or_default();
        files_hash(&BTreeMap::from([(String::new(), text)]))
    });
    let key = (hash, input.options.fuel, input.options.max_memory, input.tool.clone(), data_hash);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(wf) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(wf.clone());
    }
    let dir = std::env::temp_dir().join(format!("tdsl-temporal-{hash:016x}"));
    let root = crate::analysis::ToolRoot::new(&dir);
    for (tool_path, text) in &input.files {
        let file: PathBuf = root.file_path(tool_path)?;
        if std::fs::read_to_string(&file).is_ok_and(|t| &t == text) {
            continue;
        }
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        write_aside(&file, text)?;
    }
    let mut limits = crate::Limits::default();
    if let Some(f) = input.options.fuel {
        limits.fuel = f;
    }
    if let Some(m) = input.options.max_memory {
        limits.max_alloc_bytes = usize::try_from(m).unwrap_or(usize::MAX);
    }
    let mut engine = crate::exec::engine().with_limits(limits);
    if let Some(data) = &input.data_files {
        engine = engine.with_file_store(Arc::new(data.to_store()?));
    }
    let file = root.file_path(&input.tool)?;
    let wf = Workflow::load_with_engine(&dir, &file, engine).map_err(|e| match e {
        crate::exec::LoadError::Invalid { name, diagnostics, .. } => {
            let first = diagnostics.iter().find(|d| d.is_error()).map(|d| d.message.clone()).unwrap_or_default();
            format!("`{name}` does not check on the worker: {first}")
        }
        other => other.to_string(),
    })?;
    let wf = Arc::new(wf);
    cache.lock().unwrap_or_else(PoisonError::into_inner).insert(key, wf.clone());
    Ok(wf)
}

/// The trace as the workflow returns it: compact JSON, gzipped, base64.
pub(crate) fn pack_trace(trace: &crate::exec::Trace) -> Result<String, String> {
    use base64::Engine as _;
    use std::io::Write as _;
    let json = serde_json::to_vec(trace).map_err(|e| format!("the trace does not serialize: {e}"))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).map_err(|e| format!("cannot compress the trace: {e}"))?;
    let bytes = gz.finish().map_err(|e| format!("cannot compress the trace: {e}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// [`pack_trace`] undone.
pub(crate) fn unpack_trace(packed: &str) -> Result<crate::exec::Trace, String> {
    use base64::Engine as _;
    use std::io::Read as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .map_err(|e| format!("the worker's trace is not base64: {e}"))?;
    let mut json = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut json)
        .map_err(|e| format!("the worker's trace does not decompress: {e}"))?;
    crate::exec::Trace::from_json(&json).map_err(|e| format!("the worker's trace does not read: {e}"))
}

#[cfg(test)]
mod tests {

    /// Eight threads laying out one file a hundred times each all succeed (with the file
    /// aside named by the process alone, some failed "cannot write").
    #[test]
    fn threads_laying_out_one_file_never_fail() {
        let dir = std::env::temp_dir().join(format!("tdsl-write-aside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let file = dir.join("t.tool");
        let failures: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..100).filter(|_| super::write_aside(&file, "{}").is_err()).count()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(100)).sum()
        });
        assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("{}"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(failures, 0);
    }
    use super::*;
    use crate::exec::retry::RetryPolicy;
    use proptest::prelude::*;

    fn policy(jitter: f64) -> RetryPolicy {
        RetryPolicy { max_retries: 5, base_delay_seconds: 1.0, factor: 2.0, max_delay_seconds: 30.0, jitter }
    }

    #[test]
    fn a_retry_delay_is_the_same_for_the_same_seed_key_and_attempt() {
        let p = policy(0.5);
        assert_eq!(retry_delay(&p, 7, "fetch[3]", 2), retry_delay(&p, 7, "fetch[3]", 2));
        let others = [
            retry_delay(&p, 8, "fetch[3]", 2),
            retry_delay(&p, 7, "fetch[4]", 2),
            retry_delay(&p, 7, "fetch[3]", 3) / 2,
        ];
        assert!(others.iter().all(|d| *d != retry_delay(&p, 7, "fetch[3]", 2)), "{others:?}");
    }

    #[test]
    fn without_jitter_a_retry_delay_is_the_policy_interval() {
        let p = policy(0.0);
        assert_eq!(retry_delay(&p, 1, "a", 1), Duration::from_secs(1));
        assert_eq!(retry_delay(&p, 1, "a", 3), Duration::from_secs(4));
        assert_eq!(retry_delay(&p, 1, "a", 9), Duration::from_secs(30));
    }

    #[test]
    fn a_snapshot_keeps_every_version_and_gives_back_the_same_store() {
        use crate::files::{FileStore, MemoryStore, StorePath, Version};
        let mut store = MemoryStore::new();
        let v =
            |id: &str| Version { id: id.to_string(), created_at_millis: Some(1), size: 0, author: None, message: None };
        store.commit("notes.txt", v("aaaaaaa1"), "one").unwrap();
        store.commit("notes.txt", v("bbbbbbb2"), "two").unwrap();
        store.insert("sub/deeper/x.bin", vec![0u8, 255, 10]).unwrap();
        let snap = FilesSnapshot::take(&store, 10_000).unwrap();
        assert_eq!(snap.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["notes.txt", "sub/deeper/x.bin"]);
        let back = snap.to_store().unwrap();
        let p = StorePath::parse("notes.txt").unwrap();
        let ids: Vec<String> = back.versions(&p).unwrap().into_iter().map(|v| v.id).collect();
        assert_eq!(ids, ["bbbbbbb2", "aaaaaaa1"]);
        let oldest = back.versions(&p).unwrap().pop().unwrap();
        assert_eq!(back.read(&p, Some(&oldest), 100).unwrap(), b"one");
        assert_eq!(back.read(&StorePath::parse("sub/deeper/x.bin").unwrap(), None, 100).unwrap(), [0u8, 255, 10]);
        // Over the budget: an error naming the limit, whether by content or by file count.
        assert!(FilesSnapshot::take(&store, 100).unwrap_err().contains("payload limit"));
        // Another error is itself, not the limit's.
        struct Unreadable;
        impl FileStore for Unreadable {
            fn read_dir(&self, _: &StorePath) -> Result<Vec<crate::files::Entry>, crate::files::FileError> {
                Ok(vec![crate::files::Entry { name: "x".into(), kind: crate::files::EntryKind::File, link: false }])
            }
            fn read(&self, p: &StorePath, _: Option<&Version>, _: u64) -> Result<Vec<u8>, crate::files::FileError> {
                Err(crate::files::FileError::io(p.as_str(), std::io::Error::other("permission denied")))
            }
            fn versions(&self, _: &StorePath) -> Result<Vec<Version>, crate::files::FileError> {
                Ok(vec![Version::current(1, None)])
            }
        }
        let e = FilesSnapshot::take(&Unreadable, 10_000).unwrap_err();
        assert!(e.contains("permission denied") && !e.contains("payload limit"), "{e}");
        let mut many = MemoryStore::new();
        for i in 0..1000 {
            many.insert(&format!("f{i}"), "").unwrap();
        }
        assert!(FilesSnapshot::take(&many, 10_000).unwrap_err().contains("payload limit"));
    }

    proptest! {
        #[test]
        fn a_retry_delay_stays_within_the_jitter(seed: u64, key in "[a-z]{1,8}(\\[[0-9]{1,3}\\])?", attempt in 1u32..12, jitter in 0.0f64..=1.0) {
            let p = policy(jitter);
            let interval = (2f64.powi(attempt as i32 - 1)).min(30.0);
            let d = retry_delay(&p, seed, &key, attempt).as_secs_f64();
            prop_assert!(d >= interval * (1.0 - jitter) - 1e-9 && d <= interval * (1.0 + jitter) + 1e-9, "{d} vs {interval} ± {jitter}");
        }
    }
}
