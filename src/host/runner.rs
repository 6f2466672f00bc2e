//! The runner of the command line (SPEC §7): `exec:` programs, `builtin:` tools, and
//! canned answers from a mock file.
//!
//! - `exec:<program> [args…]`: the words are split by POSIX shell quoting rules
//!   (`shell-words`; no shell is started). A program path with a `/` that is relative is
//!   resolved against the `.tool` file's folder; a bare name is looked up in `PATH`. The
//!   arguments go to its standard input as one JSON object; it prints one JSON value on
//!   standard output. Exit 0 is success, 75 (`EX_TEMPFAIL`) a transient error, anything
//!   else a permanent one, with its standard error in the message. On timeout or
//!   cancellation the program's whole process group is killed.
//! - `builtin:echo`: returns its arguments.
//! - `mcp:<command line>#<tool>`: the tool of an MCP server started over stdio, once per
//!   runner (see [`super::mcp_client`]; feature `mcp`); `mcp:<http(s) URL>#<tool>`: of one reached
//!   over Streamable HTTP (feature `mcp-http`).
//! - `http://…`, `https://…`: the arguments POSTed as JSON, the JSON body back (see
//!   [`super::http`]; feature `http`).
//! - A [`Mock`] answers for the tool paths it lists, before any endpoint is looked at.
//!
//! Endpoints are parsed by [`Endpoint::parse`], the parser `tdsl check` judges them with
//! ([`check_endpoint`]); which ones a build can call is decided there.
//!
//! Programs and MCP servers inherit tdsl's whole environment unless the runner is given
//! [`ToolEnv::Clean`] ([`HostRunner::with_env`], `--clean-env`): then they see only the
//! variables passed, `PATH` ([`CLEAN_PATH`] unless passed) and `TDSL_TOOL`. Either policy
//! can withhold variables besides ([`ToolEnv::withholding`]: `tdsl compose` withholds the
//! model providers' keys).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::endpoint::{no_builtin, Endpoint};
use super::env::program_path;
pub use super::env::ToolEnv;
#[cfg(feature = "mcp")]
use super::mcp_client::McpClients;
use crate::diagnostic::escape_hidden;
use crate::exec::{Runner, ToolCall, ToolError};
use crate::value::Value;

/// The exit status that means "try again later" (`EX_TEMPFAIL` from `sysexits.h`).
pub(crate) const EXIT_TRANSIENT: i32 = 75;

/// The command line's runner.
#[derive(Debug)]
pub struct HostRunner {
    mock: Option<Mock>,
    #[cfg(feature = "mcp")]
    mcp: McpClients,
    max_stdout: u64,
    max_values: usize,
    /// The values of the outputs this runner has read so far, when it runs one run
    /// ([`HostRunner::for_one_run`]).
    read: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    env: ToolEnv,
    stderr_tails: super::StderrTails,
}

impl Default for HostRunner {
    fn default() -> HostRunner {
        HostRunner {
            mock: None,
            #[cfg(feature = "mcp")]
            mcp: McpClients::default(),
            max_stdout: DEFAULT_MAX_STDOUT,
            max_values: crate::ranges::DEFAULT_MAX_TOOL_VALUES,
            read: None,
            env: ToolEnv::Inherit,
            stderr_tails: super::StderrTails::default(),
        }
    }
}

impl HostRunner {
    /// A runner for `exec:` and `builtin:` endpoints.
    pub fn new() -> HostRunner {
        HostRunner::default()
    }

    /// Answers for the tools `mock` lists from it instead.
    pub fn with_mock(mut self, mock: Mock) -> HostRunner {
        self.mock = Some(mock);
        self
    }

    /// Lets `exec:` programs print at most `bytes` on standard output (default
    /// [`DEFAULT_MAX_STDOUT`]).
    pub fn with_max_stdout(mut self, bytes: u64) -> HostRunner {
        self.max_stdout = bytes;
        self
    }

    /// Lets one tool output — an `exec:` program's standard output, an HTTP body, an MCP
    /// tool's result — hold at most `values` values (default
    /// [`crate::ranges::DEFAULT_MAX_TOOL_VALUES`]; `tdsl run --max-tool-values`). They are
    /// counted while the output is read, which stops at the bound: the call then fails
    /// (permanent), having built at most that many. Each value read costs memory, 24 bytes
    /// and more (`docs/security.md`), so the bound is what one call's output can cost,
    /// whatever its bytes.
    pub fn with_max_values(mut self, values: usize) -> HostRunner {
        self.max_values = values;
        self.mcp_with_env()
    }

    /// A runner of one run (`tdsl run`'s, each of `tdsl serve`'s): the outputs it reads hold
    /// at most [`crate::ranges::RUN_VALUES_FACTOR`] times its bound on one output in all,
    /// past which a call fails (permanent). Not for a runner that serves many runs (a
    /// composition's, a library host's), whose count would only grow.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn for_one_run(mut self) -> HostRunner {
        self.read = Some(std::sync::Arc::default());
        self
    }

    /// Starts `exec:` programs and `mcp:` servers with the environment `env` allows
    /// (default: tdsl's whole environment).
    pub fn with_env(mut self, env: ToolEnv) -> HostRunner {
        self.env = env;
        self.mcp_with_env()
    }

    /// Sends what a failed program last wrote on its standard error where `to` says (by
    /// default it stays on the error, out of the message the engine records).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn with_stderr_tails(mut self, to: super::StderrTails) -> HostRunner {
        self.stderr_tails = to;
        self
    }

    /// Where this runner sends a failed program's standard error: for the calls it routes
    /// elsewhere (an upstream's, [`crate::mcp::upstream`]).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn stderr_tails(&self) -> super::StderrTails {
        self.stderr_tails
    }

    /// The `mcp:` servers started with the runner's environment, their results read within
    /// its budget of values.
    #[cfg(feature = "mcp")]
    fn mcp_with_env(mut self) -> HostRunner {
        self.mcp = McpClients::new().with_env(self.env.clone()).with_max_values(self.max_values);
        self
    }

    #[cfg(not(feature = "mcp"))]
    fn mcp_with_env(self) -> HostRunner {
        self
    }

    /// Whether the mock answers for a tool path.
    pub fn mocks(&self, tool_path: &str) -> bool {
        self.mock.as_ref().is_some_and(|m| m.entries.contains_key(tool_path))
    }
}

impl Runner for HostRunner {
    /// What every caller then reads of the call — a plan's client, the history, a trace —
    /// holds no registered secret: an error's message and standard error are redacted here,
    /// and an `exec:` program's or an `http:` peer's output where it is read
    /// ([`crate::secrets`]; an MCP peer's text is redacted where it enters).
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        self.call_endpoint(call).map_err(|e| self.stderr_tails.deliver(redacted(e)))
    }

    /// A mocked tool's answer and a `builtin:` are computed in process and cannot block:
    /// they run on the engine's worker. `exec:`, `http:` and `mcp:` calls wait on a process
    /// or the network, and run on a call thread that the engine can give up on.
    fn can_block(&self, call: &ToolCall<'_>) -> bool {
        if self.mocks(call.tool_path) {
            return false;
        }
        !call.endpoint().is_some_and(|e| e.trim().starts_with("builtin:"))
    }
}

impl HostRunner {
    /// The call's answer, its error's standard error not yet sent anywhere.
    fn call_endpoint(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        if let Some(answer) = self.mock.as_ref().and_then(|m| m.answer(call.tool_path)) {
            return answer;
        }
        let Some(endpoint) = call.endpoint() else {
            return Err(ToolError::permanent(format!(
                "`{}` has no tool file and no mock answer: there is nothing to run",
                call.tool_path
            )));
        };
        let endpoint =
            Endpoint::parse(endpoint).map_err(|e| ToolError::permanent(format!("`{}`: {e}", call.tool_path)))?;
        let read = match endpoint {
            Endpoint::Exec(words) => run_program(&words, call, (self.max_stdout, self.max_values), &self.env)
                .map(crate::secrets::redact_value),
            Endpoint::Builtin(name) => return builtin(&name, call),
            #[cfg(feature = "http")]
            Endpoint::Http(url) => super::http::call(&url, call, self.max_values).map(crate::secrets::redact_value),
            #[cfg(feature = "mcp")]
            Endpoint::Mcp(endpoint) => self.mcp.call(&endpoint, call),
        }?;
        self.charge(call.tool_path, &read)?;
        Ok(read)
    }

    /// Counts an output read for `tool` (a peer's: not a mock's, not a builtin's) against
    /// the run's values in all, when the runner is one run's ([`HostRunner::for_one_run`]).
    pub(crate) fn charge(&self, tool: &str, output: &Value) -> Result<(), ToolError> {
        use std::sync::atomic::Ordering;
        let Some(read) = &self.read else { return Ok(()) };
        let max = self.max_values.saturating_mul(crate::ranges::RUN_VALUES_FACTOR);
        let n = crate::value::values_in(output, max.saturating_add(1));
        let total = read.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if total > max {
            return Err(ToolError::permanent(format!(
                "`{tool}`: its output brings the values of the run's tool outputs past {max}, the most they may \
                 hold in all ({} times `--max-tool-values`, which raises it)",
                crate::ranges::RUN_VALUES_FACTOR
            )));
        }
        Ok(())
    }
}

/// Whether this runner can run an endpoint, judged from its text alone (no program is
/// started, no file looked at): `Err` says why not. `tdsl check` reports it as `W0902`.
#[cfg(feature = "cli")]
pub(crate) fn check_endpoint(endpoint: &str) -> Result<(), String> {
    Endpoint::parse(endpoint).map(|_| ())
}

fn builtin(name: &str, call: &ToolCall<'_>) -> Result<Value, ToolError> {
    match name {
        "echo" => Ok(call.arguments.clone()),
        other => Err(ToolError::permanent(format!("`{}`: {}", call.tool_path, no_builtin(other)))),
    }
}

/// The most bytes an `exec:` program may print on standard output by default (64 MiB, as
/// much as the `http` runner reads of an HTTP body);
/// [`HostRunner::with_max_stdout`] (`tdsl run --max-tool-output`) changes it. Past it, the
/// program's process group is killed and the call fails (permanent).
pub(crate) const DEFAULT_MAX_STDOUT: u64 = 64 * 1024 * 1024;

/// How much of a program's standard error is kept for messages and traces: its last
/// 64 KiB. What came before is counted, not kept.
pub(crate) const STDERR_TAIL: usize = 64 * 1024;

/// How long a program's standard output and error may stay open after the program itself
/// exited (a process it started holds them) before its process group is killed.
pub(crate) const PIPE_GRACE: Duration = Duration::from_millis(500);

/// How long the readers of a program's pipes may take, after the program exited, to read
/// what is left in them when no process holds them any more: only a machine too loaded to
/// schedule the reader threads comes near it.
const READ_GRACE: Duration = Duration::from_secs(30);

/// Copies of a program's standard output and error (read ends), to ask whether any process
/// still holds their write ends (`POLLHUP`) without taking them from their readers.
struct PipeWatch {
    #[cfg(unix)]
    fds: Vec<std::os::fd::OwnedFd>,
}

impl PipeWatch {
    fn of(out: Option<&std::process::ChildStdout>, err: Option<&std::process::ChildStderr>) -> PipeWatch {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            let fds = [out.map(|o| o.as_fd().try_clone_to_owned()), err.map(|e| e.as_fd().try_clone_to_owned())];
            PipeWatch { fds: fds.into_iter().flatten().filter_map(Result::ok).collect() }
        }
        #[cfg(not(unix))]
        {
            let _ = (out, err);
            PipeWatch {}
        }
    }

    /// Whether every write end of both pipes is closed (the readers will reach their end
    /// with what is buffered). False when that cannot be told.
    fn writers_gone(&self) -> bool {
        #[cfg(unix)]
        {
            use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
            use std::os::fd::AsFd;
            if self.fds.len() < 2 {
                return false;
            }
            let mut polled: Vec<PollFd<'_>> =
                self.fds.iter().map(|f| PollFd::new(f.as_fd(), PollFlags::empty())).collect();
            match poll(&mut polled, PollTimeout::ZERO) {
                Ok(_) => polled.iter().all(|p| p.revents().is_some_and(|r| r.contains(PollFlags::POLLHUP))),
                Err(_) => false,
            }
        }
        #[cfg(not(unix))]
        false
    }
}

/// How long a process group has between `SIGTERM` and `SIGKILL`.
pub(crate) const TERM_GRACE: Duration = Duration::from_millis(200);

/// What a reader thread has taken from a pipe so far, shared with the caller so that a
/// pipe held open forever by a stray process loses nothing already read.
#[derive(Debug, Default)]
struct Captured {
    bytes: Vec<u8>,
    /// Bytes read but not kept (the start of a long standard error).
    dropped: u64,
    /// Standard output only: more than the cap arrived (reading stopped there).
    overflow: bool,
    /// The pipe reached its end (or failed).
    done: bool,
}

type Shared = std::sync::Arc<Mutex<Captured>>;

fn lock(c: &Shared) -> std::sync::MutexGuard<'_, Captured> {
    c.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads a pipe on a thread of its own into the shared capture. `Keep::Head(max)` keeps up
/// to `max` bytes and stops reading past them; `Keep::Tail(n)` reads to the end and keeps
/// the last `n` bytes.
#[derive(Clone, Copy)]
enum Keep {
    Head(u64),
    Tail(usize),
}

/// Set when a call stops waiting for its program's pipes (it returns): the threads reading
/// and writing them end at their next look, at most [`PIPE_POLL`] later, instead of lasting
/// as long as a process the program left keeps the pipes (a daemon: a server's life).
type Abandoned = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// Sets the call's [`Abandoned`] flag when the call returns, whichever way.
struct Abandon(Abandoned);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How long a pipe's thread waits for its pipe before it looks whether it was abandoned.
const PIPE_POLL: u16 = 100;

/// A program's end of a pipe, waited on with its call's [`Abandoned`] flag.
trait PipeEnd {
    /// Waits until the pipe can be read (`write` false) or written without blocking, or
    /// has no other end any more (the read or write then says so); false once abandoned.
    fn ready(&self, write: bool, abandoned: &std::sync::atomic::AtomicBool) -> bool;
}

#[cfg(unix)]
impl<T: std::os::fd::AsFd> PipeEnd for T {
    fn ready(&self, write: bool, abandoned: &std::sync::atomic::AtomicBool) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let flags = if write { PollFlags::POLLOUT } else { PollFlags::POLLIN };
        loop {
            if abandoned.load(std::sync::atomic::Ordering::Relaxed) {
                return false;
            }
            let mut fds = [PollFd::new(self.as_fd(), flags)];
            match poll(&mut fds, PollTimeout::from(PIPE_POLL)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                _ => return true,
            }
        }
    }
}

#[cfg(not(unix))]
impl<T> PipeEnd for T {
    fn ready(&self, _: bool, abandoned: &std::sync::atomic::AtomicBool) -> bool {
        !abandoned.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Writes a program's input on a thread of its own, a page at a time, each when the pipe has
/// room for it (a page is written whole or not at all), until the call is abandoned. A
/// program that does not read its input closes the pipe: not an error. The thread is not
/// waited for: a process that keeps the pipe open without reading must not hold the call.
fn spawn_writer<W: Write + PipeEnd + Send + 'static>(
    pipe: Option<W>,
    input: Vec<u8>,
    abandoned: Abandoned,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("tdsl-exec-stdin".to_string()).spawn(move || {
        if let Some(mut pipe) = pipe {
            for page in input.chunks(4096) {
                if !pipe.ready(true, &abandoned) || pipe.write_all(page).is_err() {
                    break;
                }
            }
        }
    })?;
    Ok(())
}

fn spawn_reader<R: Read + PipeEnd + Send + 'static>(
    pipe: Option<R>,
    keep: Keep,
    abandoned: Abandoned,
) -> std::io::Result<Shared> {
    let shared: Shared = Shared::default();
    let Some(mut pipe) = pipe else {
        lock(&shared).done = true;
        return Ok(shared);
    };
    let out = shared.clone();
    std::thread::Builder::new().name("tdsl-exec-pipe".to_string()).spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if !pipe.ready(false, &abandoned) {
                break;
            }
            let n = match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut c = lock(&out);
            match keep {
                Keep::Head(max) => {
                    if c.bytes.len() as u64 + n as u64 > max {
                        c.overflow = true;
                        break;
                    }
                    c.bytes.extend_from_slice(&buf[..n]);
                }
                Keep::Tail(tail) => {
                    c.bytes.extend_from_slice(&buf[..n]);
                    if c.bytes.len() > 2 * tail {
                        let cut = c.bytes.len() - tail;
                        c.bytes.drain(..cut);
                        c.dropped += cut as u64;
                    }
                }
            }
        }
        lock(&out).done = true;
    })?;
    Ok(shared)
}

/// Whether a failure to start a program may pass by itself: too many open files (the
/// process's or the system's) or processes, or no memory for now.
fn spawn_error_is_transient(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        use nix::libc;
        matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::EAGAIN | libc::ENOMEM))
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Runs the program `words` name; what it prints is read as at most `max_stdout` bytes and
/// `max_values` values.
fn run_program(
    words: &[String],
    call: &ToolCall<'_>,
    (max_stdout, max_values): (u64, usize),
    env: &ToolEnv,
) -> Result<Value, ToolError> {
    let tool = call.tool_path;
    let Some((program, args)) = words.split_first() else {
        return Err(ToolError::permanent(format!("`{tool}`: `exec:` names no program")));
    };
    let path = program_path(program, call.file);
    let mut cmd = Command::new(&path);
    env.apply(&mut cmd);
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).env("TDSL_TOOL", tool);
    #[cfg(unix)]
    {
        // Its own process group, so that a timeout kills what it started too.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    // Named by its file name alone, as an upstream's program is: the folder it lies in is
    // the host's (`docs/security.md`, "How an upstream is named to a client").
    let name =
        escape_hidden(&Path::new(program).file_name().map_or_else(|| program.into(), |n| n.to_string_lossy()), &[]);
    let cannot_start = |e: std::io::Error| {
        let message = format!("`{tool}`: cannot start {name}: {e}");
        if spawn_error_is_transient(&e) {
            ToolError::transient(message)
        } else {
            ToolError::permanent(message)
        }
    };
    let (mut child, _registered) = crate::processes::spawn_registered(&mut cmd).map_err(cannot_start)?;
    // The pipes' threads end when the call returns, whatever holds the pipes then.
    let abandon = Abandon(Abandoned::default());
    let started = (|| {
        let input = serde_json::to_vec(call.arguments).unwrap_or_default();
        spawn_writer(child.stdin.take(), input, abandon.0.clone())?;
        let watch = PipeWatch::of(child.stdout.as_ref(), child.stderr.as_ref());
        let out = spawn_reader(child.stdout.take(), Keep::Head(max_stdout), abandon.0.clone())?;
        let err = spawn_reader(child.stderr.take(), Keep::Tail(STDERR_TAIL), abandon.0.clone())?;
        Ok((out, err, watch))
    })();
    let (out, err, watch) = match started {
        Ok(pipes) => pipes,
        Err(e) => {
            kill_group(&mut child);
            return Err(cannot_start(e));
        }
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return Err(ToolError::permanent(format!("`{tool}`: cannot wait for {name}: {e}")));
            }
        }
        if lock(&out).overflow {
            kill_group(&mut child);
            return Err(too_much(tool, &name, max_stdout));
        }
        // The engine cancels a call whose time is up; this bound is a backstop for hosts that
        // call the runner directly, late enough never to win the race with the engine.
        let timed_out = call.timeout.is_some_and(|t| started.elapsed() >= t.saturating_add(Duration::from_millis(500)));
        if timed_out || call.cancel.is_cancelled() {
            kill_group(&mut child);
            let why = if timed_out { "timed out" } else { "was cancelled" };
            return Err(ToolError::transient(format!("`{tool}`: {name} {why} and was killed")));
        }
        call.cancel.wait(Duration::from_millis(5));
    };
    // The program has exited; a process it started may still hold its pipes.
    let exited = Instant::now();
    let mut held = false;
    while !(lock(&out).done && lock(&err).done) {
        // Past the grace, a pipe whose every writer has closed is not held: its reader has
        // not been scheduled yet (a loaded machine), and it is waited for, not killed for.
        let grace_over = exited.elapsed() >= PIPE_GRACE && !(watch.writers_gone() && exited.elapsed() < READ_GRACE);
        if grace_over || call.cancel.is_cancelled() {
            held = true;
            kill_group_of(child.id());
            // What the group held is closed now, unless a process left the group: then
            // its pipes are left to it, and the call ends with what was read.
            let killed = Instant::now();
            while !(lock(&out).done && lock(&err).done) && killed.elapsed() < PIPE_GRACE {
                std::thread::sleep(Duration::from_millis(5));
            }
            break;
        }
        call.cancel.wait(Duration::from_millis(5));
    }
    if !held {
        // What the program left running in its group ends with it (and is reaped), as a
        // CI runner cleans up a step's orphans: a call leaves nothing behind.
        kill_group_of(child.id());
    }
    let (stdout, overflow) = {
        let mut o = lock(&out);
        (std::mem::take(&mut o.bytes), o.overflow)
    };
    if overflow {
        return Err(too_much(tool, &name, max_stdout));
    }
    let stderr = {
        let e = lock(&err);
        let cut = e.bytes.len().saturating_sub(STDERR_TAIL);
        let text = String::from_utf8_lossy(&e.bytes[cut..]);
        let text = text.trim();
        match e.dropped + cut as u64 {
            0 => text.to_string(),
            n => format!("[the first {n} bytes of standard error are left out] …{text}"),
        }
    };
    // What it wrote on standard error is the operator's to read, apart from the message:
    // the runner's front end says where it goes (`super::StderrTails`).
    let with_stderr = |e: ToolError| e.with_stderr_tail(stderr.clone());
    match status.code() {
        Some(0) => {
            let text = std::str::from_utf8(&stdout).map_err(|e| {
                ToolError::permanent(format!(
                    "`{tool}`: {name} printed invalid UTF-8 on standard output (at byte {}); a tool prints one JSON value",
                    e.valid_up_to()
                ))
            })?;
            if text.trim().is_empty() {
                let also =
                    if held { " (a process it started held its standard output open and was killed)" } else { "" };
                return Err(ToolError::permanent(format!(
                    "`{tool}`: {name} printed nothing; a tool prints one JSON value{also}"
                )));
            }
            crate::value::from_json_within(text.as_bytes(), max_values)
                .map_err(|e| ToolError::permanent(format!("`{tool}`: {name} printed {e}")))
        }
        Some(EXIT_TRANSIENT) => Err(with_stderr(ToolError::transient(format!(
            "`{tool}`: {name} exited with status {EXIT_TRANSIENT} (try again)"
        )))),
        Some(code) => Err(with_stderr(ToolError::permanent(format!("`{tool}`: {name} exited with status {code}")))),
        None => Err(with_stderr(ToolError::permanent(format!("`{tool}`: {name} was killed by a signal")))),
    }
}

fn too_much(tool: &str, name: &str, max: u64) -> ToolError {
    ToolError::permanent(format!(
        "`{tool}`: {name} printed more than {max} bytes on standard output, the most a tool may print \
         (`tdsl run --max-tool-output` changes it); it was killed"
    ))
}

/// Ends the child's process group (what it started too): `SIGTERM`, a short wait for the
/// child, then `SIGKILL` for whatever is left; the child is reaped.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        let Ok(pid) = i32::try_from(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return;
        };
        let group = Pid::from_raw(pid);
        let _ = killpg(group, Signal::SIGTERM);
        let asked = Instant::now();
        while asked.elapsed() < TERM_GRACE {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
        reap_group(pid);
    }
    #[cfg(not(unix))]
    {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Kills what is left of the process group of an exited (and reaped) child: its id stays
/// the group's while the group has a member, so it names no other group.
fn kill_group_of(id: u32) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        if let Ok(pid) = i32::try_from(id) {
            let _ = killpg(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
            reap_group(pid);
        }
    }
    #[cfg(not(unix))]
    let _ = id;
}

/// Reaps what was left of a tool's process group once it has been killed. The tool's own
/// process is reaped already (its `Child`); the processes it started in its group became
/// this process's children when it ended (we are their subreaper, [`adopt_orphans`]), and
/// each would stay a zombie of a long-running `serve --mcp` until it exits. A short-lived
/// thread waits for every child of ours in that group (`waitpid(-group)`) until none is left.
/// No process outside the group is waited for, so no other tool's `Child` loses its status.
#[cfg(unix)]
fn reap_group(group: i32) {
    use nix::errno::Errno;
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    use nix::unistd::Pid;
    let target = Pid::from_raw(-group);
    // Most often nothing is left, or the members die at once: answered without a thread.
    loop {
        match waitpid(target, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => break,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
    }
    let spawned = std::thread::Builder::new().name("tdsl-reaper".into()).spawn(move || loop {
        match waitpid(target, None) {
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
    });
    drop(spawned);
}

/// Canned answers for `--mock FILE` (format in `docs/execution.md`).
#[derive(Debug, Default)]
pub struct Mock {
    entries: HashMap<String, Entry>,
    calls: Mutex<HashMap<String, usize>>,
}

#[derive(Clone, Debug)]
enum Answer {
    Value(Value),
    Error { transient: bool, message: String },
}

#[derive(Clone, Debug)]
enum Entry {
    /// The answers of successive calls; the last one repeats.
    Sequence(Vec<Answer>),
}

impl Mock {
    /// Reads a mock file's JSON: an object from tool path to its answers.
    pub fn from_json(text: &str) -> Result<Mock, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("the mock is not JSON: {e}"))?;
        let Some(map) = v.as_object() else {
            return Err(format!("the mock must be an object from tool path to answer, and it is {:#}", v.kind()));
        };
        let mut entries = HashMap::new();
        for (tool, spec) in map.iter() {
            let entry = entry(spec).map_err(|e| format!("mock `{tool}`: {e}"))?;
            entries.insert(tool.to_string(), entry);
        }
        Ok(Mock { entries, calls: Mutex::new(HashMap::new()) })
    }

    /// The tool paths it answers for, sorted.
    pub fn tools(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.entries.keys().map(String::as_str).collect();
        t.sort_unstable();
        t
    }

    fn answer(&self, tool: &str) -> Option<Result<Value, ToolError>> {
        self.entries.get(tool)?;
        let n = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            let c = calls.entry(tool.to_string()).or_insert(0);
            *c += 1;
            *c - 1
        };
        self.answer_at(tool, n)
    }

    /// The answer of the `n`th call (from 0) of `tool`, whatever calls came before: the
    /// last answer repeats. A Temporal worker counts calls per run, not per process.
    pub(crate) fn answer_at(&self, tool: &str, n: usize) -> Option<Result<Value, ToolError>> {
        let Entry::Sequence(answers) = self.entries.get(tool)?;
        let a = answers.get(n).or(answers.last())?;
        Some(match a {
            Answer::Value(v) => Ok(v.clone()),
            Answer::Error { transient: true, message } => Err(ToolError::transient(message.clone())),
            Answer::Error { transient: false, message } => Err(ToolError::permanent(message.clone())),
        })
    }
}

fn entry(spec: &Value) -> Result<Entry, String> {
    match spec {
        Value::List(items) if items.is_empty() => Err("a list of answers cannot be empty".to_string()),
        Value::List(items) => Ok(Entry::Sequence(items.iter().map(answer).collect::<Result<_, _>>()?)),
        Value::Object(m) if m.contains_key("$fail_transiently") => {
            let n = match m.get("$fail_transiently") {
                Some(Value::Int(n)) if *n >= 0 => *n as usize,
                _ => return Err("`$fail_transiently` takes a number of failures".to_string()),
            };
            let message = m.get("$error").and_then(Value::as_str).unwrap_or("mock: transient failure").to_string();
            let then = m.get("$then").ok_or("`$fail_transiently` needs `$then`, the answer after the failures")?;
            let mut seq = vec![Answer::Error { transient: true, message }; n];
            seq.push(answer(then)?);
            Ok(Entry::Sequence(seq))
        }
        other => Ok(Entry::Sequence(vec![answer(other)?])),
    }
}

fn answer(spec: &Value) -> Result<Answer, String> {
    let Value::Object(m) = spec else { return Ok(Answer::Value(spec.clone())) };
    if !m.keys().any(|k| k.starts_with('$')) {
        return Ok(Answer::Value(spec.clone()));
    }
    for k in m.keys() {
        if !["$response", "$error", "$transient"].contains(&&**k) {
            return Err(format!(
                "unknown key `{k}` (known: `$response`, `$error`, `$transient`, `$fail_transiently`, `$then`)"
            ));
        }
    }
    if let Some(v) = m.get("$response") {
        return Ok(Answer::Value(v.clone()));
    }
    match m.get("$error") {
        Some(Value::Str(message)) => Ok(Answer::Error {
            transient: matches!(m.get("$transient"), Some(Value::Bool(true))),
            message: message.to_string(),
        }),
        _ => Err("`$error` takes the error message".to_string()),
    }
}

/// `error` with its message and its standard error's tail redacted of the process's secrets
/// (`crate::secrets`).
fn redacted(mut error: ToolError) -> ToolError {
    if let std::borrow::Cow::Owned(m) = crate::secrets::redact(&error.message) {
        error.message = m;
    }
    if let Some(std::borrow::Cow::Owned(t)) = error.stderr_tail.as_deref().map(crate::secrets::redact) {
        error.stderr_tail = Some(t);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_of_a_feature_left_out_name_the_feature() {
        // `Endpoint::parse` is what `check_endpoint` (feature `cli`) answers with.
        let http = Endpoint::parse("https://example.com/tool").map(|_| ());
        let mcp = Endpoint::parse("mcp:server --stdio#lookup").map(|_| ());
        #[cfg(feature = "http")]
        assert_eq!(http, Ok(()));
        #[cfg(not(feature = "http"))]
        assert_eq!(
            http.unwrap_err(),
            "`http://` endpoints need the `http` feature of the tdsl library, and this build was made \
             without it (the `tdsl` command has it)"
        );
        #[cfg(feature = "mcp")]
        assert_eq!(mcp, Ok(()));
        #[cfg(not(feature = "mcp"))]
        assert!(mcp.unwrap_err().starts_with("`mcp:` endpoints need the `mcp` feature"));
    }

    /// A pipe is held while any process has its write end, and only then: a program that
    /// exited with nothing left behind is told apart from one whose child keeps the pipe.
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_held_only_while_a_process_has_its_write_end() {
        let watched = |script: &str| {
            let mut child = Command::new("sh")
                .args(["-c", script])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .expect("sh starts");
            let watch = PipeWatch::of(child.stdout.as_ref(), child.stderr.as_ref());
            child.wait().expect("sh ends");
            (child, watch)
        };
        use std::os::unix::process::CommandExt;
        let (_child, watch) = watched("echo done");
        assert!(watch.writers_gone(), "nothing holds the pipes of a program that exited");
        let (child, watch) = watched("sleep 30 & echo started");
        assert!(!watch.writers_gone(), "the background sleep holds both pipes");
        kill_group_of(child.id());
        let gone = Instant::now();
        while !watch.writers_gone() {
            assert!(gone.elapsed() < Duration::from_secs(10), "the pipes are still held after the group was killed");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn answers(mock: &Mock, tool: &str, n: usize) -> Vec<Result<String, String>> {
        (0..n).map(|_| mock.answer(tool).expect("mocked").map(|v| v.to_string()).map_err(|e| e.message)).collect()
    }

    #[test]
    fn mock_forms() {
        let m = Mock::from_json(
            r#"{
              "/a.tool": {"x": 1},
              "/b.tool": [{"n": 1}, {"$error": "busy", "$transient": true}, {"n": 3}],
              "/c.tool": {"$fail_transiently": 2, "$then": {"ok": true}},
              "/d.tool": {"$response": [1, 2]}
            }"#,
        )
        .expect("valid mock");
        assert_eq!(answers(&m, "/a.tool", 2), [Ok(r#"{"x":1}"#.to_string()), Ok(r#"{"x":1}"#.to_string())]);
        assert_eq!(
            answers(&m, "/b.tool", 4),
            [Ok(r#"{"n":1}"#.into()), Err("busy".into()), Ok(r#"{"n":3}"#.into()), Ok(r#"{"n":3}"#.into())]
        );
        let c = answers(&m, "/c.tool", 3);
        assert!(c[0].is_err() && c[1].is_err());
        assert_eq!(c[2], Ok(r#"{"ok":true}"#.to_string()));
        assert_eq!(answers(&m, "/d.tool", 1), [Ok("[1,2]".to_string())]);
        assert!(m.answer("/other.tool").is_none());
        assert!(Mock::from_json(r#"{"/x.tool": {"$eror": "typo"}}"#).unwrap_err().contains("unknown key `$eror`"));
    }

    #[test]
    #[cfg(unix)]
    fn running_out_of_files_or_processes_is_transient() {
        use nix::libc;
        for code in [libc::EMFILE, libc::ENFILE, libc::EAGAIN, libc::ENOMEM] {
            assert!(spawn_error_is_transient(&std::io::Error::from_raw_os_error(code)), "{code}");
        }
        for code in [libc::ENOENT, libc::EACCES, libc::ENOEXEC] {
            assert!(!spawn_error_is_transient(&std::io::Error::from_raw_os_error(code)), "{code}");
        }
        // And the call says so: a program that cannot start for lack of files is retried.
        let def = crate::tool::load(r#"{"system_event_endpoint": "exec:/nonexistent/program"}"#).0.expect("tool");
        let cancel = crate::exec::CancelToken::new();
        let call = ToolCall {
            tool_path: "/t.tool",
            definition: Some(&def),
            file: None,
            arguments: &Value::Null,
            cancel: &cancel,
            timeout: None,
            attempt: 1,
        };
        let e = HostRunner::new().call(&call).expect_err("no such program");
        assert_eq!(e.kind, crate::exec::ErrorKind::Permanent, "{e}");
    }

    #[test]
    fn relative_programs_resolve_against_the_tool_file() {
        let file = Path::new("/root/tools/x.tool");
        assert_eq!(program_path("./bin/run.sh", Some(file)), Path::new("/root/tools/./bin/run.sh"));
        assert_eq!(program_path("sh", Some(file)), Path::new("sh"));
        assert_eq!(program_path("/bin/sh", Some(file)), Path::new("/bin/sh"));
    }
}
