//! The processes this library starts and waits for itself (`exec:` programs, `git`), while
//! they run: the command's orphan reaper (`host::orphans`, on Linux) takes the status of
//! an ended child it did not start, and must leave these to their `Child`. Lean on purpose:
//! `git` runs in the lean library (`files::git`), the reaper only under the command.

use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Told of each process started (its id), when set: `serve`'s watchdog
/// (`host::watchdog`), which ends them if `serve` is killed outright.
static ON_SPAWN: OnceLock<fn(u32)> = OnceLock::new();

/// Has `tell` told of each process started from now on (the first one set stays).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn on_spawn(tell: fn(u32)) {
    let _ = ON_SPAWN.set(tell);
}

/// Process `pid` was just started: tells [`ON_SPAWN`].
pub(crate) fn spawned(pid: u32) {
    if let Some(tell) = ON_SPAWN.get() {
        tell(pid);
    }
}

/// The processes running now that their `Child` will wait for, by process id: registered as
/// they are started (under the lock, so that none can end unregistered) and left out once
/// their `Child` reaped them.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// [`RUNNING`], locked: the reaper holds it while it looks, so that a process cannot start
/// and end unregistered in between.
pub(crate) fn lock_running() -> MutexGuard<'static, Vec<i32>> {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts `cmd`, registered in [`RUNNING`] until the returned guard is dropped (after the
/// child was reaped).
pub(crate) fn spawn_registered(cmd: &mut Command) -> std::io::Result<(Child, Registered)> {
    let mut running = lock_running();
    let child = cmd.spawn()?;
    spawned(child.id());
    let pid = i32::try_from(child.id()).unwrap_or(-1);
    running.push(pid);
    Ok((child, Registered(pid)))
}

/// A process's place in [`RUNNING`].
pub(crate) struct Registered(i32);

impl Drop for Registered {
    fn drop(&mut self) {
        lock_running().retain(|&p| p != self.0);
    }
}
