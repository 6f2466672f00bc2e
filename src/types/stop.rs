//! Stopping the static check partway: a cancel or a deadline.
//!
//! A host that checks on behalf of someone who may stop waiting (an MCP `check_plan` call
//! cancelled, a plan's deadline, a language-server request cancelled) runs the check inside
//! [`scope`] with a poll of its own. The analyzer calls [`poll`] as it works: once per
//! expression node checked, once per step of a type operation ([`super::join`]), once per
//! step of a tool. That is a decrement of a thread-local counter; every [`POLL_UNITS`] units
//! the host's poll is asked. Once it answers "stop", every later [`poll`] answers true at
//! once: the expression checker gives `any` without looking, the type operations give up,
//! and the check runs out quickly. Its result is then incomplete, and [`scope`] reports the
//! reason instead of it: an interrupted check is never a verdict.
//!
//! Outside a [`scope`] (`tdsl check`, the compiler) [`poll`] never stops anything, and costs
//! the counter's decrement.

use std::cell::{Cell, RefCell};

use crate::runtime::{Interrupt, InterruptReason};

/// Units of work (expression nodes, type steps, tool steps) between two asks of the host's
/// poll.
pub(crate) const POLL_UNITS: u32 = 1 << 12;

/// The host's poll: whether (and why) the check must stop now.
pub(crate) type Poll = Box<dyn FnMut() -> Option<InterruptReason>>;

/// The poll of the innermost [`scope`] on this thread, and the reason it stopped, if it did.
struct Current {
    poll: Poll,
    stopped: Option<InterruptReason>,
}

thread_local! {
    /// Units left until the host's poll is asked: 1 once stopped (every poll asks, and is
    /// answered at once), `u32::MAX` outside a scope.
    static LEFT: Cell<u32> = const { Cell::new(u32::MAX) };
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

#[cfg(test)]
thread_local! {
    /// Units of work let through on this thread (polls answered "go on"), for the tests.
    pub(crate) static WORKED: Cell<u64> = const { Cell::new(0) };
}

/// Whether the check running on this thread must stop: one unit of work done.
#[inline]
pub(crate) fn poll() -> bool {
    let stop = LEFT.with(|left| {
        let n = left.get();
        if n > 1 {
            left.set(n - 1);
            false
        } else {
            ask(left)
        }
    });
    #[cfg(test)]
    if !stop {
        WORKED.with(|w| w.set(w.get() + 1));
    }
    stop
}

/// Asks the host's poll (or answers that the scope stopped already).
#[cold]
fn ask(left: &Cell<u32>) -> bool {
    let stop = CURRENT.with(|c| {
        let Ok(mut current) = c.try_borrow_mut() else { return false };
        let Some(current) = current.as_mut() else {
            left.set(u32::MAX);
            return false;
        };
        if current.stopped.is_none() {
            current.stopped = (current.poll)();
        }
        current.stopped.is_some()
    });
    left.set(if stop { 1 } else { POLL_UNITS });
    stop
}

/// Runs the check `f` with `poll` asked as it goes: its result, or why it was stopped (the
/// poll is asked before it starts too, so a check cancelled before it starts does nothing).
/// A scope inside a scope replaces the outer poll for its length.
pub(crate) fn scope<T>(mut poll: Poll, f: impl FnOnce() -> T) -> Result<T, InterruptReason> {
    if let Some(reason) = poll() {
        return Err(reason);
    }
    struct Restore(Option<Current>, u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CURRENT.with(|c| {
                if let Ok(mut c) = c.try_borrow_mut() {
                    *c = outer;
                }
            });
            LEFT.with(|l| l.set(self.1));
        }
    }
    let outer = CURRENT.with(|c| c.replace(Some(Current { poll, stopped: None })));
    let restore = Restore(outer, LEFT.with(|l| l.replace(POLL_UNITS)));
    let out = f();
    let stopped = CURRENT.with(|c| c.borrow().as_ref().and_then(|c| c.stopped));
    drop(restore);
    match stopped {
        Some(reason) => Err(reason),
        None => Ok(out),
    }
}

/// The poll of an [`Interrupt`]: its cancel, deadline and probe.
pub(crate) fn interrupt_poll(interrupt: &Interrupt) -> Poll {
    let interrupt = interrupt.clone();
    Box::new(move || interrupt.check())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_scope_nothing_stops() {
        assert!((0..3 * POLL_UNITS).all(|_| !poll()));
    }

    #[test]
    fn a_cancel_before_the_start_runs_nothing() {
        let i = Interrupt::new();
        i.cancel();
        let mut ran = false;
        let out = scope(interrupt_poll(&i), || ran = true);
        assert_eq!(out, Err(InterruptReason::Cancelled));
        assert!(!ran);
    }

    #[test]
    fn a_cancel_partway_is_seen_within_the_poll_units_and_stays() {
        let i = Interrupt::new();
        let seen = Cell::new((None, false));
        let out = scope(interrupt_poll(&i), || {
            i.cancel();
            seen.set(((1..=2 * POLL_UNITS).find(|_| poll()), poll()));
        });
        assert_eq!(out, Err(InterruptReason::Cancelled));
        let (first, after) = seen.get();
        assert!(first.is_some_and(|n| n <= POLL_UNITS), "{first:?}");
        assert!(after);
        // After the scope, the thread polls nothing again.
        assert!(!poll());
    }

    #[test]
    fn a_check_that_ends_before_its_poll_says_stop_is_its_result() {
        let i = Interrupt::new();
        assert_eq!(scope(interrupt_poll(&i), || (0..10).filter(|_| poll()).count()), Ok(0));
    }

    #[test]
    fn the_counter_reaches_the_poll() {
        // Seen: the poll is asked within POLL_UNITS units.
        let asked = std::rc::Rc::new(Cell::new(0u32));
        let a = asked.clone();
        let out = scope(
            Box::new(move || {
                a.set(a.get() + 1);
                None
            }),
            || (0..2 * POLL_UNITS).filter(|_| poll()).count(),
        );
        assert_eq!(out, Ok(0));
        // Once before the start, and twice over the units.
        assert_eq!(asked.get(), 3);
    }
}
