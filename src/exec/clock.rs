//! The clock `datetime_now` reads during a run, recorded for the trace and served back in
//! replay.
//!
//! Programs are compiled once, with [`ExecClock`] as their clock, long before any run; the
//! run they belong to is only known when they are evaluated. So the engine opens a
//! [`ClockScope`] around each evaluation on the evaluating thread, and `ExecClock` reads the
//! innermost open scope. Outside any scope (a program evaluated by hand) it is the system
//! clock.

use std::cell::OnceCell;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use super::time::Time;
use crate::runtime::{Clock, Interrupt, InterruptProbe, InterruptReason, SystemClock};

/// The clock of programs compiled for execution ([`super::workflow::engine`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ExecClock;

thread_local! {
    static SCOPES: RefCell<Vec<Arc<ClockScope>>> = const { RefCell::new(Vec::new()) };
}

impl Clock for ExecClock {
    fn now_millis(&self) -> i64 {
        let scope = SCOPES.with(|s| s.borrow().last().cloned());
        match scope {
            Some(s) => s.read(),
            None => SystemClock.now_millis(),
        }
    }
}

/// The reads of one step (or of the tool-level transforms): live from the run's time, or
/// served from a recording.
pub(crate) struct ClockScope {
    time: Arc<dyn Time>,
    recorded: Option<Vec<i64>>,
    reads: Mutex<Vec<i64>>,
    /// Stops evaluations inside the scope when the run is cancelled or past its deadline.
    interrupt: Option<Interrupt>,
    /// How long one evaluation inside the scope may run (a step's `timeout_seconds`, on the
    /// run's monotonic clock): past it, the evaluation stops with `E0408`.
    eval_timeout_ms: Option<u64>,
}

/// A step's clock scope, made the first time one of its expressions runs: most steps run
/// none (their arguments are REFs and literals), and a scope is an allocation, two shared
/// handles and a lock a step.
pub(crate) struct LazyScope<'a> {
    pub(crate) cell: &'a OnceCell<Arc<ClockScope>>,
    pub(crate) make: &'a dyn Fn() -> Arc<ClockScope>,
}

impl LazyScope<'_> {
    /// [`ClockScope::enter`] of the scope, made now if it was not yet.
    pub(crate) fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        self.cell.get_or_init(self.make).enter(f)
    }
}

impl ClockScope {
    /// A scope reading `time`, or replaying `recorded` reads in order (and `time` once they
    /// run out). Each evaluation inside it stops when `interrupt` says so, or once it has run
    /// for `eval_timeout_ms` on `time`'s monotonic clock.
    pub(crate) fn new(
        time: Arc<dyn Time>,
        recorded: Option<Vec<i64>>,
        interrupt: Option<Interrupt>,
        eval_timeout_ms: Option<u64>,
    ) -> Arc<ClockScope> {
        Arc::new(ClockScope { time, recorded, reads: Mutex::new(Vec::new()), interrupt, eval_timeout_ms })
    }

    fn read(&self) -> i64 {
        let mut reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
        let v = match &self.recorded {
            Some(r) => r.get(reads.len()).copied().unwrap_or_else(|| self.time.wall_ms()),
            None => self.time.wall_ms(),
        };
        reads.push(v);
        v
    }

    /// Every read so far.
    pub(crate) fn reads(&self) -> Vec<i64> {
        self.reads.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs `f` with this scope open on the current thread (and its interrupt, if any, as
    /// the ambient one: a transform evaluated inside stops when the run must, or when it has
    /// run longer than the scope's evaluation timeout, counted from here).
    pub(crate) fn enter<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                SCOPES.with(|s| s.borrow_mut().pop());
            }
        }
        SCOPES.with(|s| s.borrow_mut().push(self.clone()));
        let _pop = Pop;
        match (&self.interrupt, self.eval_timeout_ms) {
            (base, Some(timeout)) => {
                let (time, base) = (self.time.clone(), base.clone());
                let until = time.monotonic_ms().saturating_add(timeout);
                let probe: InterruptProbe = Arc::new(move || {
                    base.as_ref()
                        .and_then(Interrupt::check)
                        .or_else(|| (time.monotonic_ms() >= until).then_some(InterruptReason::Deadline))
                });
                let timed = Interrupt::new().with_probe(probe);
                // The run's budget goes on with the step's timeout.
                let timed = match self.interrupt.as_ref().and_then(Interrupt::budget) {
                    Some(b) => timed.with_budget(b.clone()),
                    None => timed,
                };
                timed.enter(f)
            }
            (Some(i), None) => i.enter(f),
            (None, None) => f(),
        }
    }
}
