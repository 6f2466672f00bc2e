//! What ends the processes `serve` started when `serve` itself is killed (SIGKILL, the OOM
//! killer): a watchdog process (Linux).
//!
//! A graceful end (the input's end, SIGTERM, SIGINT, SIGHUP) ends every upstream server and
//! `exec:` program itself. A process killed outright runs no code, so something outside it
//! must: `serve` starts a second process of its own program ([`start`], `tdsl serve --mcp
//! --watchdog`, in a process group of its own so that a terminal's Ctrl-C does not reach
//! it) whose standard input is a pipe only `serve` writes to. `serve` tells it the id and
//! start time of each process it starts ([`crate::processes::spawned`]); when `serve` ends,
//! however it ends, the kernel closes the pipe, and the watchdog ([`run`]) ends each of those
//! processes that still runs (`SIGTERM`, its group too when it leads one; `SIGKILL` after
//! [`super::TERM_GRACE`]), then exits.
//!
//! Why not `PR_SET_PDEATHSIG`: it must be set in the child between `fork` and `exec`
//! (`pre_exec`, which is `unsafe`, and the project has no `unsafe`), and it follows the
//! *thread* that started the child, not the process: upstream servers are started from
//! threads that end (a listing's thread, the runtime's blocking threads), which would kill
//! a healthy server with them. The watchdog watches the process, needs no `unsafe`, and
//! covers programs that ignore the end of their input.
//!
//! Besides the lines, the watchdog looks at `serve`'s process tree every [`SCAN_EVERY`] and
//! remembers each process in it: what a program started in a session of its own (`setsid`,
//! a double fork) is out of reach of its group's kill, but it stays in `serve`'s tree while
//! `serve` runs (`serve` is the subreaper of what it starts, [`super::orphans`]), so it is
//! found there and ended with the rest (hostile round 13: 8 of 24 such processes outlived a
//! SIGKILL of `serve` before). A watchdog that ends while `serve` runs (killed) is started
//! again, at most [`RESTARTS`] times, and finds the tree by its first look.
//!
//! What it cannot end: a process started in the instant between its start and its line to
//! the watchdog that leaves `serve`'s tree (or `serve` ends) before the next look — the
//! instant is a `spawn`'s own time, about a millisecond.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The watchdog's input, while it runs.
static PIPE: Mutex<Option<ChildStdin>> = Mutex::new(None);

/// The argument of `tdsl serve` that makes it the watchdog ([`run`]).
pub(crate) const WATCHDOG_FLAG: &str = "--watchdog";

/// Starts the watchdog of this process (this program as `serve --mcp --watchdog`), and has
/// every process started from now on told to it. Whether it runs: a program that cannot be
/// found or started leaves processes as before (said on standard error).
pub(crate) fn start() -> bool {
    let child = match spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tdsl: warning: no watchdog (the processes started would outlive a killed server): {e}");
            return false;
        }
    };
    keep(child);
    crate::processes::on_spawn(tell);
    true
}

/// How many times a watchdog that ended while this process runs is started again.
const RESTARTS: usize = 5;

/// How many times it was started again.
static RESTARTED: AtomicUsize = AtomicUsize::new(0);

fn spawn() -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    Command::new(exe)
        .args(["serve", "--mcp", WATCHDOG_FLAG])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

/// Makes `child` the watchdog: its input the pipe [`tell`] writes to, and a thread that
/// starts another when it ends while this process runs (it finds the processes to watch
/// by its first look at the tree).
fn keep(mut child: Child) {
    let mut pipe = child.stdin.take();
    // First, who it watches: this process, by id and start time (only then does it look at
    // a tree — a watchdog whose `serve` ended before it started looks at none).
    let me = std::process::id();
    if let (Some(p), Some(start)) = (pipe.as_mut(), super::orphans::start_time(me)) {
        if writeln!(p, "{SERVE} {me} {start}").and_then(|()| p.flush()).is_err() {
            pipe = None;
        }
    }
    *PIPE.lock().unwrap_or_else(PoisonError::into_inner) = pipe;
    let watching = std::thread::Builder::new().name("tdsl-watchdog".into()).spawn(move || {
        // Its status, or an error when the orphan reaper took it first: it ended either way.
        let _ = child.wait();
        // Ended with the other children at the graceful end: not started again.
        if super::orphans::ending_children() || RESTARTED.fetch_add(1, Ordering::SeqCst) >= RESTARTS {
            return;
        }
        match spawn() {
            Ok(next) => {
                eprintln!("tdsl: warning: the watchdog ended; another one was started");
                keep(next);
            }
            Err(e) => eprintln!("tdsl: warning: the watchdog ended and no other could be started: {e}"),
        }
    });
    drop(watching);
}

/// Tells the watchdog of process `pid`, just started: its id and start time (so that the
/// watchdog never signals another process that got the same id later).
fn tell(pid: u32) {
    let Some(start) = super::orphans::start_time(pid) else { return };
    let mut pipe = PIPE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = pipe.as_mut() {
        if writeln!(p, "{pid} {start}").and_then(|()| p.flush()).is_err() {
            // The watchdog is gone: nothing more to tell.
            *pipe = None;
        }
    }
}

/// The word of the first line `serve` writes to its watchdog: `serve PID START`.
const SERVE: &str = "serve";

/// How often the watchdog looks at `serve`'s process tree.
const SCAN_EVERY: Duration = Duration::from_millis(200);

/// The processes the watchdog will end, by id and start time.
#[derive(Default)]
struct Watched {
    all: Vec<(u32, String)>,
    known: HashSet<(u32, String)>,
    /// Past this many, those that ended are forgotten (then it is twice what is left: the
    /// forgetting costs a look at each once per doubling, not once per line).
    forget_from: usize,
}

/// The least [`Watched::forget_from`].
const REMEMBERED: usize = 1024;

impl Watched {
    fn add(&mut self, pid: u32, start: String) {
        if self.known.contains(&(pid, start.clone())) {
            return;
        }
        if self.all.len() >= self.forget_from.max(REMEMBERED) {
            self.all.retain(|(p, s)| same_process(*p, s));
            self.known = self.all.iter().cloned().collect();
            self.forget_from = 2 * self.all.len();
        }
        self.known.insert((pid, start.clone()));
        self.all.push((pid, start));
    }

    /// Remembers every process under `serve` (but `me`), while `serve` runs: once it has
    /// ended its children belong to another (init, a subreaper), whose tree is not ours.
    fn look(&mut self, serve: &(u32, String), me: u32) {
        if !same_process(serve.0, &serve.1) {
            return;
        }
        for (pid, start) in super::orphans::descendants(serve.0) {
            if pid != me {
                self.add(pid, start);
            }
        }
    }
}

/// The watchdog (`tdsl serve --mcp --watchdog`): reads `PID START` lines, and looks at the
/// tree of its parent (`serve`) every [`SCAN_EVERY`], until its input ends; then ends each
/// of those processes that still runs. Exit status 0.
pub(crate) fn run() -> std::process::ExitCode {
    let parent = std::os::unix::process::parent_id();
    // `serve`, once its first line said so and it is this process's parent.
    let mut serve: Option<(u32, String)> = None;
    let me = std::process::id();
    let (lines, told) = std::sync::mpsc::channel::<String>();
    // The input is read on a thread of its own, so that the looks go on while it is quiet;
    // its end (the sender dropped) is `serve`'s.
    let reader = std::thread::Builder::new().name("tdsl-watchdog-input".into()).spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut watched = Watched::default();
    if reader.is_ok() {
        let mut looked = Instant::now();
        loop {
            match told.recv_timeout(SCAN_EVERY.saturating_sub(looked.elapsed())) {
                Ok(line) => {
                    let Some((pid, start)) = line.split_once(' ') else { continue };
                    if pid == SERVE {
                        let told =
                            start.split_once(' ').and_then(|(p, s)| Some((p.parse::<u32>().ok()?, s.to_string())));
                        serve = told.filter(|(p, s)| *p == parent && same_process(*p, s));
                        if let Some(s) = &serve {
                            watched.look(s, me);
                            looked = Instant::now();
                        }
                        continue;
                    }
                    let Ok(pid) = pid.parse::<u32>() else { continue };
                    watched.add(pid, start.to_string());
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Some(s) = serve.as_ref().filter(|_| looked.elapsed() >= SCAN_EVERY) {
                watched.look(s, me);
                looked = Instant::now();
            }
        }
    }
    end(&watched.all, super::TERM_GRACE);
    std::process::ExitCode::SUCCESS
}

/// Whether `pid` is still the process that started at `start` (and has not ended).
fn same_process(pid: u32, start: &str) -> bool {
    super::orphans::start_time(pid).is_some_and(|s| s == start)
}

/// Ends the processes of `watched` that still run: `SIGTERM` (to the group too, for one
/// that leads its group: an `exec:` program), then `SIGKILL` to those left after `grace`.
fn end(watched: &[(u32, String)], grace: Duration) {
    use nix::sys::signal::{kill, killpg, Signal};
    use nix::unistd::Pid;
    let signal = |signal: Signal| {
        let mut left = 0;
        for (pid, start) in watched {
            // Never init, nor the watchdog itself (nor a group id of 0: its own).
            if *pid <= 1 || *pid == std::process::id() || !same_process(*pid, start) {
                continue;
            }
            left += 1;
            let Ok(raw) = i32::try_from(*pid) else { continue };
            if super::orphans::leads_group(*pid) {
                let _ = killpg(Pid::from_raw(raw), signal);
            }
            let _ = kill(Pid::from_raw(raw), signal);
        }
        left
    };
    if signal(Signal::SIGTERM) == 0 {
        return;
    }
    let asked = Instant::now();
    while asked.elapsed() < grace && watched.iter().any(|(p, s)| same_process(*p, s)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(Signal::SIGKILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process is remembered once, however often it is told or seen; those that ended are
    /// forgotten as the list grows, those that run are kept.
    #[test]
    fn ended_processes_are_forgotten_and_each_is_remembered_once() {
        let me = std::process::id();
        let start = super::super::orphans::start_time(me).expect("its start time");
        let mut w = Watched::default();
        w.add(me, start.clone());
        w.add(me, start.clone());
        assert_eq!(w.all.len(), 1);
        // No process started at "x": each stands for one that ended.
        for pid in 0..3 * REMEMBERED {
            w.add(u32::try_from(pid).expect("small") + 2, "x".to_string());
        }
        assert!(w.all.len() <= REMEMBERED + 1, "{}", w.all.len());
        assert!(w.all.contains(&(me, start)));
    }

    /// A process the watchdog was told of is ended; one whose id now names another process
    /// (another start time) is left alone.
    #[test]
    fn the_watched_are_ended_and_others_left() {
        let mut sleeper = Command::new("sleep").arg("30").spawn().expect("sleep starts");
        let mut other = Command::new("sleep").arg("30").spawn().expect("sleep starts");
        let start = super::super::orphans::start_time(sleeper.id()).expect("its start time");
        assert!(same_process(sleeper.id(), &start));
        end(&[(sleeper.id(), start), (other.id(), "1".to_string())], Duration::from_millis(500));
        let status = sleeper.wait().expect("it ends");
        assert!(!status.success(), "{status:?}");
        assert_eq!(other.try_wait().expect("a status"), None, "the other one runs on");
        let _ = other.kill();
        let _ = other.wait();
    }
}
