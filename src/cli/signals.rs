//! `tdsl run` and `tdsl compose` end cleanly on `SIGINT`, `SIGTERM` and `SIGHUP` (`tdsl
//! serve` takes them with tokio: `crate::mcp::terminated`): the run is cancelled (each
//! tool's process group gets `SIGTERM`, then `SIGKILL`: see [`crate::host`]), the
//! trace so far is written (completed steps kept, the rest `CANCELLED`), and the command
//! exits 128 + the signal's number (130, 143, 129). A second signal ends the command at
//! once, with the first one's status, and writes no trace.
//!
//! A command may say it is still setting up ([`Interrupts::setting_up`]: opening the
//! history, reading the root), when nothing has started that needs winding down: a signal
//! then ends it at once, with the same status, rather than after a setup that may wait
//! (a history database another process holds locked is waited for up to 30 s).
//!
//! The signals are blocked in every thread (the mask is set before any other thread starts,
//! and threads inherit it) and taken by one thread with `sigwait`, so no handler runs at an
//! arbitrary point. Programs started for tools get an empty mask back (the standard library
//! resets it in the child).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use crate::exec::CancelToken;

/// The signals a run is stopped by.
#[derive(Clone, Debug, Default)]
pub(crate) struct Interrupts {
    /// The first signal's number; 0 while none came.
    received: Arc<AtomicI32>,
    cancel: CancelToken,
    /// Whether the command is still setting up: a signal then ends it at once.
    setting_up: Arc<AtomicBool>,
}

/// While it lives, the command is setting up ([`Interrupts::setting_up`]).
#[must_use = "the setup ends when this is dropped"]
pub(crate) struct SettingUp(Arc<AtomicBool>);

impl Drop for SettingUp {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Interrupts {
    /// Blocks the signals and starts the thread that waits for them. Call it before any other
    /// thread starts. When they cannot be taken (not Unix, or the thread cannot start), the
    /// signals keep their default action, which ends the process.
    pub(crate) fn install() -> Interrupts {
        let interrupts = Interrupts::default();
        #[cfg(unix)]
        {
            use nix::sys::signal::{SigSet, Signal};
            let mut set = SigSet::empty();
            for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                set.add(s);
            }
            if set.thread_block().is_err() {
                return interrupts;
            }
            let (received, cancel, setting_up) =
                (interrupts.received.clone(), interrupts.cancel.clone(), interrupts.setting_up.clone());
            let waiter = std::thread::Builder::new().name("tdsl-signals".to_string()).spawn(move || {
                while let Ok(signal) = set.wait() {
                    let first = received.compare_exchange(0, signal as i32, Ordering::SeqCst, Ordering::SeqCst);
                    if let Err(n) = first {
                        // A second signal: the user will not wait for the run to wind down
                        // (an expression that does not poll the cancel, say).
                        std::process::exit(128 + n);
                    }
                    if setting_up.load(Ordering::SeqCst) {
                        // Nothing started yet that needs winding down.
                        std::process::exit(128 + signal as i32);
                    }
                    cancel.cancel();
                }
            });
            if waiter.is_err() {
                let _ = set.thread_unblock();
            }
        }
        interrupts
    }

    /// Says the command is setting up until the guard is dropped: a signal meanwhile ends
    /// it at once (exit 128 + the signal's number), nothing having started.
    pub(crate) fn setting_up(&self) -> SettingUp {
        self.setting_up.store(true, Ordering::SeqCst);
        SettingUp(self.setting_up.clone())
    }

    /// The run's cancellation token: cancelled when a signal comes.
    pub(crate) fn token(&self) -> &CancelToken {
        &self.cancel
    }

    /// The exit status for the signal received (128 + its number), if one was.
    pub(crate) fn exit_status(&self) -> Option<u8> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            n => u8::try_from(128 + n).ok(),
        }
    }
}
