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
//! What it cannot end: a process started in the instant between its start and its line to
//! the watchdog, and what those processes left in sessions of their own (the graceful end
//! adopts and ends those, [`super::orphans`]).

use std::io::{BufRead, Write};
use std::process::{ChildStdin, Command, Stdio};
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
    use std::os::unix::process::CommandExt;
    let started = std::env::current_exe().and_then(|exe| {
        Command::new(exe)
            .args(["serve", "--mcp", WATCHDOG_FLAG])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
    });
    let mut child = match started {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tdsl: warning: no watchdog (the processes started would outlive a killed server): {e}");
            return false;
        }
    };
    // Not waited for: it exits when this process has ended.
    *PIPE.lock().unwrap_or_else(PoisonError::into_inner) = child.stdin.take();
    crate::processes::on_spawn(tell);
    true
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

/// The most processes the watchdog remembers before it forgets those that ended.
const REMEMBERED: usize = 1024;

/// The watchdog (`tdsl serve --mcp --watchdog`): reads `PID START` lines until its input
/// ends, then ends each of those processes that still runs. Exit status 0.
pub(crate) fn run() -> std::process::ExitCode {
    let mut watched: Vec<(u32, String)> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Some((pid, start)) = line.split_once(' ') else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if watched.len() >= REMEMBERED {
            watched.retain(|(p, s)| same_process(*p, s));
        }
        watched.push((pid, start.to_string()));
    }
    end(&watched, super::TERM_GRACE);
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
            if !same_process(*pid, start) {
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
