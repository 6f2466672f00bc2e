//! Programs a test starts and waits for: a free loopback port; a child whose output is
//! captured (read on threads, so it never blocks on a full pipe); waiting until it is ready —
//! a port accepts connections, or a line appears on its output — within a watchdog that
//! fails the test saying why (never a skip); and killing it on drop.
//!
//! A server on a port of its own (the Temporal dev server, say):
//!
//! ```ignore
//! let port = free_port();
//! let mut server = Process::spawn("the dev server", Command::new(program).args(["--port", &port.to_string()]));
//! server.wait_for_port(port, Duration::from_secs(60));
//! ```
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often the waits below look again.
const POLL: Duration = Duration::from_millis(20);

/// A free loopback port: bound, then released for the program the test starts.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().expect("the bound address").port()
}

/// Polls `ready` until it gives a value; past `watchdog` (a bound, not a timing) the test
/// fails saying it waited in vain for `awaited` ("the server to exit", say).
pub fn wait_until<T>(watchdog: Duration, awaited: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(start.elapsed() < watchdog, "waited {} s in vain for {awaited}", watchdog.as_secs());
        std::thread::sleep(POLL);
    }
}

/// Whether the process `pid` runs (exists and is not a zombie), from `/proc`.
pub fn alive(pid: &str) -> bool {
    let dir = Path::new("/proc").join(pid);
    dir.exists() && !std::fs::read_to_string(dir.join("stat")).is_ok_and(|s| s.contains(") Z "))
}

/// A memory figure of process `pid` from `/proc/PID/status`, in KiB: `VmHWM` is its peak
/// resident memory, `VmRSS` its resident memory now.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// The peak resident memory of process `pid` (`VmHWM`), in KiB.
pub fn peak_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM")
}

/// The resident memory of process `pid` now (`VmRSS`), in KiB.
pub fn resident_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// Writes an executable script (and the folders it lives in).
#[cfg(unix)]
pub fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("the script's folder");
    }
    std::fs::write(path, body).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The lines a child wrote on its captured streams, and how many of them are still open.
#[derive(Default)]
struct Captured {
    lines: Vec<String>,
    open: usize,
}

type Shared = Arc<(Mutex<Captured>, Condvar)>;

/// A program the test started, killed (and reaped) when dropped.
pub struct Process {
    what: String,
    child: Child,
    output: Shared,
}

impl Process {
    /// Starts `cmd` with no input and both its outputs captured; `what` names it in failures.
    pub fn spawn(what: &str, cmd: &mut Command) -> Process {
        Process::start(what, cmd.stdin(Stdio::null()), true)
    }

    /// Starts `cmd` speaking a protocol on its standard input and output, which the caller
    /// gets; its standard error is captured.
    pub fn spawn_piped(what: &str, cmd: &mut Command) -> (Process, ChildStdin, ChildStdout) {
        let mut process = Process::start(what, cmd.stdin(Stdio::piped()), false);
        let stdin = process.child.stdin.take().expect("stdin");
        let stdout = process.child.stdout.take().expect("stdout");
        (process, stdin, stdout)
    }

    /// Starts `cmd` with its outputs piped; captures standard error, and standard output too
    /// with `capture_stdout`.
    fn start(what: &str, cmd: &mut Command, capture_stdout: bool) -> Process {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
        let output = Shared::default();
        if capture_stdout {
            capture(&output, child.stdout.take().expect("stdout"));
        }
        capture(&output, child.stderr.take().expect("stderr"));
        Process { what: what.to_string(), child, output }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it wrote on its captured streams so far, a line each.
    pub fn output(&self) -> String {
        shown(&self.output.0.lock().expect("lock").lines)
    }

    /// Waits until a line of its output gives `ready` a value (the line with the port it
    /// listens on, say); the test fails, with the output, if the output ends first or
    /// `watchdog` passes. `awaited` says what the line is.
    pub fn wait_for_line<T>(&self, awaited: &str, watchdog: Duration, mut ready: impl FnMut(&str) -> Option<T>) -> T {
        let start = Instant::now();
        let (lock, more) = &*self.output;
        let mut captured = lock.lock().expect("lock");
        let mut seen = 0;
        loop {
            while seen < captured.lines.len() {
                if let Some(value) = ready(&captured.lines[seen]) {
                    return value;
                }
                seen += 1;
            }
            let text = shown(&captured.lines);
            assert!(captured.open > 0, "{} ended its output before {awaited}:\n{text}", self.what);
            let left = watchdog.checked_sub(start.elapsed()).unwrap_or_else(|| {
                panic!("{} did not print {awaited} within {} s:\n{text}", self.what, watchdog.as_secs())
            });
            captured = more.wait_timeout(captured, left).expect("lock").0;
        }
    }

    /// Waits until `127.0.0.1:port` accepts connections; the test fails, with the output, if
    /// the program exits first or `watchdog` passes.
    pub fn wait_for_port(&mut self, port: u16, watchdog: Duration) {
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let start = Instant::now();
        while TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_err() {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                panic!("{} exited ({status}) before listening on {address}:\n{}", self.what, self.output());
            }
            assert!(
                start.elapsed() < watchdog,
                "{} did not listen on {address} within {} s:\n{}",
                self.what,
                watchdog.as_secs(),
                self.output()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Waits for it to exit; past `watchdog` it is killed and the test fails, with the output.
    pub fn exit_within(&mut self, watchdog: Duration) -> ExitStatus {
        let output = self.output.clone();
        super::exit_or_kill(&mut self.child, watchdog, &self.what, || shown(&output.0.lock().expect("lock").lines))
    }

    /// Sends it SIGTERM.
    #[cfg(unix)]
    pub fn sigterm(&self) {
        let status = Command::new("kill").args(["-s", "TERM", &self.pid().to_string()]).status().expect("kill runs");
        assert!(status.success(), "kill -s TERM {} ({}): {status}", self.pid(), self.what);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Captured lines as text for a failure message.
fn shown(lines: &[String]) -> String {
    if lines.is_empty() {
        "(no output)".to_string()
    } else {
        lines.join("\n")
    }
}

/// Reads `stream` a line at a time into `output` on a thread of its own, to its end.
fn capture(output: &Shared, stream: impl Read + Send + 'static) {
    output.0.lock().expect("lock").open += 1;
    let output = output.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).unwrap_or(0);
            let (lock, more) = &*output;
            let mut captured = lock.lock().expect("lock");
            if n == 0 {
                captured.open -= 1;
                more.notify_all();
                return;
            }
            let text = String::from_utf8_lossy(&line);
            captured.lines.push(text.trim_end_matches(['\n', '\r']).to_string());
            more.notify_all();
        }
    });
}

/// A tool root whose `main` runs a program that starts a child, writes both their pids to
/// the returned file and sleeps 30 s; `/tools/echo.tool` is there too. For the tests of
/// what cancelling or ending a server does to the programs of calls in flight.
#[cfg(unix)]
pub fn sleeping_root() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    let pid_file = root.join("pids");
    script(
        &root.join("tools/nap.sh"),
        &format!("#!/bin/sh\nsleep 30 &\necho $$ $! > '{}'\nwait\n", pid_file.display()),
    );
    std::fs::write(root.join("tools/nap.tool"), r#"{"system_event_endpoint": "exec:./nap.sh"}"#).expect("write");
    std::fs::write(root.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "nap", "tool_definition_path": "/tools/nap.tool"}]}"#,
    )
    .expect("write");
    (dir, pid_file)
}

/// Waits (at most 20 s) until the program of a `sleeping_root` call has written its pid and
/// its child's, and checks both run; the two pids.
pub fn sleeping_pids(pid_file: &Path) -> Vec<String> {
    let pids = wait_until(Duration::from_secs(20), "the program to start (write its pids)", || {
        let p = std::fs::read_to_string(pid_file).ok().filter(|p| p.ends_with('\n'))?;
        Some(p.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    });
    assert!(pids.len() == 2 && pids.iter().all(|p| alive(p)), "{pids:?}");
    pids
}
