//! What the `exec:` programs leave behind: the processes they start that outlive them.
//! On Linux the command is their *subreaper* ([`adopt_orphans`]): it reaps those that end
//! while it runs (`processes::RUNNING` tells them from its own children) and ends the rest when it
//! ends ([`end_children`]). What a program leaves in its own process group is killed with
//! the call (`runner`).

#[cfg(any(feature = "mcp", feature = "cli"))]
use std::sync::{Mutex, PoisonError};

#[cfg(any(feature = "mcp", feature = "cli"))]
use crate::processes::lock_running;
#[cfg(feature = "cli")]
use std::time::Duration;
#[cfg(all(target_os = "linux", feature = "cli"))]
use std::time::Instant;

/// Makes this process the *subreaper* of everything it starts (Linux): a process a tool
/// leaves behind in a session or process group of its own (`setsid`), out of reach of the
/// process-group kills, is re-parented to this process when its parent exits (instead of to
/// init), so that [`end_children`] finds it. Whether it took effect (never elsewhere).
///
/// What it adopts is reaped when it ends ([`reap_orphans`]): a
/// long-running `serve --mcp` would otherwise keep a zombie of every such process until it
/// exits.
#[cfg(feature = "cli")]
pub(crate) fn adopt_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        let adopted = nix::sys::prctl::set_child_subreaper(true).is_ok();
        if adopted {
            reap_orphans();
        }
        adopted
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// How often the orphan reaper looks again after a child ended (or while there is none).
#[cfg(all(target_os = "linux", feature = "cli"))]
const ORPHAN_POLL: Duration = Duration::from_millis(250);

/// Starts a thread that, for as long as this process runs, reaps the ended processes it
/// adopted: a process a tool left in a session or a process group of its own (`setsid`,
/// `setpgid`: out of reach of the kill of the tool's group) and what that process started.
/// A child of this process is one it started itself when it is in this process's own group
/// (an MCP server) or is an `exec:` program or a `git` running now (`processes::RUNNING`); any other
/// child was adopted, and reaping it takes no `Child`'s status. The thread blocks until some
/// child has ended without reaping it (`waitid` with `WNOWAIT`: it may be one this process
/// started, whose `Child` reaps it), then reaps the adopted ones.
///
/// A process left behind by one this process started in its own group (an MCP server's
/// helper, double-forked without `setsid`) is adopted into that group too, and looks like
/// one of its own: it is reaped once it has stayed a zombie for [`LINGER`] (a `Child` is
/// waited for as soon as its process ends), so that it neither stays for the command's life
/// nor keeps waking this thread.
#[cfg(all(target_os = "linux", feature = "cli"))]
fn reap_orphans() {
    use nix::errno::Errno;
    use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag};
    use nix::unistd::Pid;
    let Some(me) = proc_stat("self") else { return };
    // The zombies of this process's own group, by process id and start time (the id alone
    // may be another process's by the next look), and when each was first seen.
    let mut lingering: Vec<((i32, String), Instant)> = Vec::new();
    REAPING.store(true, std::sync::atomic::Ordering::Relaxed);
    let spawned = std::thread::Builder::new().name("tdsl-orphans".into()).spawn(move || loop {
        match waitid(Id::All, WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Ok(_) => {
                let now = Instant::now();
                let mut seen = Vec::new();
                // Held while looking: an `exec:` program is registered before it can end.
                let running = lock_running();
                let children = children();
                let mut owned = lock_owned();
                // Those reaped by their `Child` are forgotten (their id may come back).
                owned.retain(|(pid, start)| children.iter().any(|c| c.pid == *pid && Some(&c.start) == start.as_ref()));
                for c in children.into_iter().filter(|c| c.state == "Z") {
                    if owned.iter().any(|(pid, start)| *pid == c.pid && Some(&c.start) == start.as_ref()) {
                        continue;
                    }
                    let adopted = c.session != me.session || (c.group != me.group && !running.contains(&c.pid));
                    let key = (c.pid, c.start);
                    let first = lingering.iter().find(|(k, _)| *k == key).map_or(now, |&(_, t)| t);
                    if adopted || (!running.contains(&c.pid) && now.duration_since(first) >= LINGER) {
                        let _ = waitpid(Pid::from_raw(c.pid), Some(WaitPidFlag::WNOHANG));
                    } else {
                        seen.push((key, first));
                    }
                }
                lingering = seen;
            }
            Err(Errno::EINTR) => continue,
            // No child at all for now (ECHILD).
            Err(_) => {}
        }
        std::thread::sleep(ORPHAN_POLL);
    });
    drop(spawned);
}

/// How long a zombie of this process's own group that no `Child` reaps is left before the
/// orphan reaper reaps it ([`reap_orphans`]).
#[cfg(all(target_os = "linux", feature = "cli"))]
const LINGER: Duration = Duration::from_secs(2);

/// Processes started here whose `Child` may be waited for long after they end (an `mcp:`
/// server: when its session closes), by id and start time: the reaper leaves them to their
/// `Child` whatever their group or session (a server may call `setsid`: reaped here, its
/// `Child` would signal an id another process may have by then), and forgets them once they
/// are no longer this process's children.
#[cfg(any(feature = "mcp", feature = "cli"))]
static OWNED: Mutex<Vec<(i32, Option<String>)>> = Mutex::new(Vec::new());

/// Whether the orphan reaper runs in this process: only then is a process registered in
/// [`OWNED`] (the reaper forgets what ended; without it, a library that starts MCP servers
/// would keep an entry for each one it ever started).
#[cfg(any(feature = "mcp", feature = "cli"))]
static REAPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(any(feature = "mcp", feature = "cli"))]
fn lock_owned() -> std::sync::MutexGuard<'static, Vec<(i32, Option<String>)>> {
    OWNED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts a process with `spawn` (`id` gives its id), registered in [`OWNED`]: the orphan
/// reaper never takes its status from its `Child`.
#[cfg(feature = "mcp")]
pub(super) fn spawn_owned<C>(
    spawn: impl FnOnce() -> std::io::Result<C>,
    id: impl Fn(&C) -> Option<u32>,
) -> std::io::Result<C> {
    // The reaper's lock first, as the reaper takes them: it cannot look in between.
    let _running = lock_running();
    let child = spawn()?;
    if let Some(pid) = id(&child) {
        crate::processes::spawned(pid);
    }
    let reaping = REAPING.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(pid) = id(&child).and_then(|p| i32::try_from(p).ok()).filter(|_| reaping) {
        #[cfg(all(target_os = "linux", feature = "cli"))]
        let start = proc_stat(&pid.to_string()).map(|s| s.start);
        #[cfg(not(all(target_os = "linux", feature = "cli")))]
        let start = None;
        lock_owned().push((pid, start));
    }
    Ok(child)
}

/// What `/proc/PID/stat` says of a process.
#[cfg(all(target_os = "linux", feature = "cli"))]
struct ProcStat {
    pid: i32,
    state: String,
    parent: String,
    group: String,
    session: String,
    /// When it started, in clock ticks after boot.
    start: String,
}

/// `/proc/{pid}/stat` (`"self"` for this process).
#[cfg(all(target_os = "linux", feature = "cli"))]
fn proc_stat(pid: &str) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp session …`: the command name may hold anything, so the
    // fields are read after its last `)`.
    let (head, rest) = stat.rsplit_once(')')?;
    let pid = head.split_whitespace().next()?.parse().ok()?;
    let mut fields = rest.split_whitespace().map(str::to_string);
    let (state, parent, group, session) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
    // `starttime` is the 22nd field; `session` was the 6th.
    let start = fields.nth(15)?;
    Some(ProcStat { pid, state, parent, group, session, start })
}

/// When the process `pid` started (clock ticks after boot, from `/proc`), while it runs
/// (`None` once it ended, a zombie included).
#[cfg(all(target_os = "linux", feature = "cli"))]
pub(super) fn start_time(pid: u32) -> Option<String> {
    proc_stat(&pid.to_string()).filter(|s| s.state != "Z" && s.state != "X").map(|s| s.start)
}

/// Whether the process `pid` leads its process group (an `exec:` program does).
#[cfg(all(target_os = "linux", feature = "cli"))]
pub(super) fn leads_group(pid: u32) -> bool {
    proc_stat(&pid.to_string()).is_some_and(|s| s.group == pid.to_string())
}

/// Every process, from `/proc`.
#[cfg(all(target_os = "linux", feature = "cli"))]
fn processes() -> impl Iterator<Item = ProcStat> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())).and_then(proc_stat))
}

/// The children of this process, ended or not, from `/proc`.
#[cfg(all(target_os = "linux", feature = "cli"))]
fn children() -> Vec<ProcStat> {
    let me = std::process::id().to_string();
    processes().filter(|c| c.parent == me).collect()
}

/// The processes under `root` (its children, theirs, …) that have not ended, by id and
/// start time, from `/proc` (the watchdog's look at `serve`'s tree, five times a second):
/// down the tree through each thread's `children` list, so the look costs what the tree
/// holds, not what the machine runs; where the kernel keeps no such list, by a scan of every
/// process.
#[cfg(all(target_os = "linux", feature = "cli"))]
pub(super) fn descendants(root: u32) -> Vec<(u32, String)> {
    if children_of(root).is_none() {
        return descendants_by_scan(root);
    }
    let mut under = vec![root];
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    while let Some(parent) = under.pop() {
        for pid in children_of(parent).unwrap_or_default() {
            // Each once (an id ended and taken again while looking cannot loop).
            if !seen.insert(pid) {
                continue;
            }
            if let Some(start) = start_time(pid) {
                under.push(pid);
                found.push((pid, start));
            }
        }
    }
    found
}

/// The children of `pid`, from each of its threads' `/proc/PID/task/TID/children` (a
/// child's parent is the thread that started it); `None` when the kernel keeps no such
/// list (or the process is gone).
#[cfg(all(target_os = "linux", feature = "cli"))]
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let mut listed = false;
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            listed = true;
            out.extend(text.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    listed.then_some(out)
}

/// [`descendants`] by a scan of every process's parent.
#[cfg(all(target_os = "linux", feature = "cli"))]
fn descendants_by_scan(root: u32) -> Vec<(u32, String)> {
    let mut by_parent: std::collections::HashMap<String, Vec<ProcStat>> = std::collections::HashMap::new();
    for p in processes().filter(|p| p.state != "Z" && p.state != "X") {
        by_parent.entry(p.parent.clone()).or_default().push(p);
    }
    let mut under = vec![root.to_string()];
    let mut found = Vec::new();
    // Down the parent links; each process is taken once (ids are unique).
    while let Some(parent) = under.pop() {
        for p in by_parent.remove(&parent).unwrap_or_default() {
            let Ok(pid) = u32::try_from(p.pid) else { continue };
            under.push(pid.to_string());
            found.push((pid, p.start));
        }
    }
    found
}

/// Set once [`end_children`] began: this process is ending its children itself.
#[cfg(all(target_os = "linux", feature = "cli"))]
static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process is ending its children itself (the graceful end): the watchdog, one
/// of them, is not started again when it ends.
#[cfg(all(target_os = "linux", feature = "cli"))]
pub(super) fn ending_children() -> bool {
    ENDING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Ends every process that is still a child of this one, for the end of a command: the
/// tools' own processes ended with their attempts, so what is left are processes tools left
/// behind (adopted through [`adopt_orphans`]). Each gets `SIGTERM` (its group too, when it
/// leads one), then `SIGKILL` after `grace`; ending them can orphan their own children,
/// which are adopted in turn, so this repeats while any is left, at most ten rounds.
/// Linux only (it reads `/proc`); elsewhere it does nothing.
#[cfg(feature = "cli")]
pub(crate) fn end_children(grace: Duration) {
    #[cfg(target_os = "linux")]
    {
        // The watchdog is one of them: it is not started again.
        ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
        use nix::sys::signal::{kill, killpg, Signal};
        use nix::unistd::Pid;
        let signal_all = |children: &[(i32, i32)], signal: Signal| {
            for &(pid, group) in children {
                if group == pid {
                    let _ = killpg(Pid::from_raw(pid), signal);
                }
                let _ = kill(Pid::from_raw(pid), signal);
            }
        };
        for _ in 0..10 {
            let children = live_children();
            if children.is_empty() {
                return;
            }
            signal_all(&children, Signal::SIGTERM);
            let asked = Instant::now();
            while asked.elapsed() < grace && !live_children().is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            }
            signal_all(&live_children(), Signal::SIGKILL);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = grace;
}

/// The children of this process that have not ended (zombies excluded), with their process
/// groups, from `/proc`.
#[cfg(all(target_os = "linux", feature = "cli"))]
fn live_children() -> Vec<(i32, i32)> {
    children()
        .into_iter()
        .filter(|c| c.state != "Z" && c.state != "X")
        .map(|c| (c.pid, c.group.parse().unwrap_or(c.pid)))
        .collect()
}

#[cfg(all(test, target_os = "linux", feature = "cli"))]
mod tests {
    use super::*;

    /// The look down the threads' lists of children finds what the scan of every process
    /// finds under a process: here a shell and the two programs it started.
    #[test]
    fn the_tree_by_lists_of_children_is_the_tree_by_a_scan() {
        let mut sh =
            std::process::Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"]).spawn().expect("sh starts");
        let root = sh.id();
        let mut by_lists = Vec::new();
        for _ in 0..200 {
            by_lists = descendants(root);
            if by_lists.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let by_scan = descendants_by_scan(root);
        for p in by_lists.iter().filter_map(|(p, _)| i32::try_from(*p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = sh.kill();
        let _ = sh.wait();
        assert_eq!(by_lists.len(), 2, "the two sleeps: {by_lists:?}");
        assert!(children_of(std::process::id()).is_some(), "this kernel lists children");
        let (mut a, mut b) = (by_lists, by_scan);
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}
