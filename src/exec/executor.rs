//! The executor: what a host configures once (runner, time, randomness, limits, guards)
//! and then runs workflows with. How it runs one (`Executor::run`) is the scheduler's
//! (`scheduler.rs`), which depends on this module and never the reverse.

use std::sync::Arc;
use std::time::Duration;

use super::breaker::{BreakerPolicy, Breakers};
use super::guard::Guards;
use super::retry::RetryPolicy;
use super::runner::Runner;
use super::time::{Random, SeededRandom, SystemTime, Time};
use super::trace::{Attempt, RunError, RunStatus, StepStatus, Trace};
use crate::ranges::{self, RangeError};
use crate::value::Value;

/// How an executor runs workflows.
#[derive(Clone, Debug)]
pub struct Options {
    /// The most tool calls in flight at once, over the whole run: steps, fan-out children
    /// and the steps of composite callees alike. At least 1.
    pub max_concurrency: usize,
    /// The retry policy of steps that have no `retry` (and the defaults of the keys a
    /// step's `retry` leaves out).
    pub retry: RetryPolicy,
    /// The circuit breaker of every tool.
    pub breaker: BreakerPolicy,
    /// The whole run's deadline, from its start (0.1 s to 24 h).
    pub deadline: Option<Duration>,
    /// The bound on one attempt of a step without `timeout_seconds`, in seconds (1–300;
    /// 60 by default, as in `seeds/000_7c8da07936e01cd9.txt`).
    pub timeout_seconds: f64,
    /// How deep composite callees may nest (the root composite is depth 0): 1–32, 8 by
    /// default ([`crate::ranges::MAX_NESTING`]). Load the workflow with the same limit
    /// ([`crate::exec::Workflow::load_with_nesting`]), whose check reports a deeper chain.
    pub max_depth: usize,
    /// Limits checked before the run.
    pub guards: Guards,
    /// How long, in real time, to wait for a timed-out call to return after it has been
    /// cancelled (so that its process is gone before the run ends); past this it is left.
    pub cancel_grace: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_concurrency: 8,
            retry: RetryPolicy::default(),
            breaker: BreakerPolicy::default(),
            deadline: None,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_depth: ranges::DEFAULT_MAX_NESTING,
            guards: Guards::default(),
            cancel_grace: Duration::from_secs(2),
        }
    }
}

/// The default bound on one attempt, in seconds.
pub(crate) const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;

impl Options {
    /// Every number that configures execution in its range (SPEC §6.5, [`crate::ranges`]):
    /// the retry defaults, the breaker, the deadline, the concurrency and the default
    /// timeout. [`Executor::run`] refuses options that do not pass (`E0814`).
    pub fn validate(&self) -> Result<(), RangeError> {
        self.retry.validate()?;
        self.breaker.validate()?;
        self.guards.validate()?;
        if let Some(d) = self.deadline {
            ranges::DEADLINE_SECONDS.check(d.as_secs_f64())?;
        }
        // A usize past 2^53 is not exact as f64, but it is out of range either way.
        ranges::CONCURRENCY.check(self.max_concurrency as f64)?;
        ranges::TIMEOUT_SECONDS.check(self.timeout_seconds)?;
        ranges::MAX_NESTING.check(self.max_depth as f64)?;
        Ok(())
    }
}

/// What happens during a run, for live progress and the run history. Called from worker
/// threads; an observer sees the events of one run at a time (an executor that runs
/// several workflows at once interleaves their events: give each its own executor).
///
/// `RunStarted` comes first and `RunEnded` last; a step's events come between its
/// `StepStarted` and `StepEnded` (a step cancelled before it started has only
/// `StepEnded`). New variants may be added.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The run started.
    RunStarted {
        /// The trace's `run_id`.
        run_id: &'a str,
        /// The composite (its tool path or file name, the trace's `tool`).
        tool: &'a str,
        /// Its arguments, declared defaults filled in.
        arguments: &'a Value,
        /// When, RFC 3339 UTC with milliseconds.
        started_at: &'a str,
    },
    /// A step started (its conditions are about to be evaluated).
    StepStarted {
        /// The step's path (`extract`, `outer/inner`).
        step: &'a str,
        /// Its callee; `""` for a transform step, which calls nothing.
        tool: &'a str,
    },
    /// A parallel step is fanning out.
    FanOut {
        /// The step's path.
        step: &'a str,
        /// Its number of children.
        children: usize,
    },
    /// A child of a parallel step ended.
    ChildEnded {
        /// The step's path.
        step: &'a str,
        /// Children ended so far.
        ended: usize,
        /// All its children.
        children: usize,
    },
    /// An attempt of a step failed with a transient error and the step will try again
    /// (after its back-off).
    StepRetried {
        /// The step's path.
        step: &'a str,
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// Why it failed.
        reason: &'a str,
    },
    /// A step ended.
    StepEnded {
        /// The step's path.
        step: &'a str,
        /// How.
        status: StepStatus,
        /// Why it was skipped, cancelled or failed.
        reason: Option<&'a str>,
    },
    /// An attempt at a primitive tool call went to the runner (or the recording): the call
    /// is in flight. (A call the circuit breaker refuses never starts.)
    AttemptStarted {
        /// The calling step's path; a fan-out child's is `fan[2]`, a composite callee's
        /// steps' `outer/inner` (`fan[2]/inner` for a child's).
        step: &'a str,
        /// The callee's tool path.
        tool: &'a str,
        /// 1 for the first attempt, 2 for the first retry, …
        attempt: u32,
    },
    /// An attempt at a primitive tool call ended (also one the circuit breaker refused,
    /// which had no `AttemptStarted`).
    AttemptEnded {
        /// The calling step's path, as in `AttemptStarted`.
        step: &'a str,
        /// The callee's tool path.
        tool: &'a str,
        /// The arguments it was called with.
        arguments: &'a Value,
        /// The attempt as the trace records it: outcome, response or error, timing.
        attempt: &'a Attempt,
        /// Whether the tool path resolved to a definition (false: only a mock could answer).
        resolved: bool,
        /// When it started, RFC 3339 UTC with milliseconds.
        invoked_at: &'a str,
        /// When it ended.
        completed_at: &'a str,
    },
    /// A primitive tool's answer broke its declared `responses` (the step, or the child,
    /// fails with `E0802`); the last `AttemptEnded` of `step` was that answer.
    ResponseRejected {
        /// The step's (or child's) path.
        step: &'a str,
        /// Why.
        error: &'a str,
    },
    /// The run ended; its trace is complete.
    RunEnded {
        /// Everything it did.
        trace: &'a Trace,
    },
}

/// Receives [`Event`]s.
pub trait Observer: Send + Sync {
    /// One event.
    fn event(&self, event: &Event<'_>);
}

/// Runs workflows: the runner, the clock, the randomness and the options, and the circuit
/// breakers, which live as long as the executor (so a tool that keeps failing stays
/// refused across runs until its reset timeout).
pub struct Executor {
    pub(crate) runner: Arc<dyn Runner>,
    pub(crate) time: Arc<dyn Time>,
    pub(crate) random: Arc<dyn Random>,
    pub(crate) options: Options,
    pub(crate) breakers: Arc<Breakers>,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// The threads calls with a deadline run on, kept between calls and runs.
    pub(crate) call_threads: Arc<super::threads::CallThreads>,
    /// The worker pools of its runs, kept between runs.
    pub(crate) worker_pools: Arc<super::threads::WorkerPools>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("options", &self.options).finish_non_exhaustive()
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Run {
    /// How it ended.
    pub status: RunStatus,
    /// The composite's result (for SUCCESS and PARTIAL).
    pub result: Option<Value>,
    /// Why it failed (for FAILED and TIMEOUT).
    pub error: Option<RunError>,
    /// Everything it did.
    pub trace: Trace,
}

impl Executor {
    /// An executor with this runner, the system clock, randomness seeded from the clock,
    /// and default options.
    pub fn new(runner: impl Runner + 'static) -> Executor {
        let seed =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Executor::with_runner(Arc::new(runner)).with_random(Arc::new(SeededRandom::new(seed)))
    }

    /// [`Executor::new`] with a shared runner.
    pub fn with_runner(runner: Arc<dyn Runner>) -> Executor {
        let options = Options::default();
        Executor {
            runner,
            time: Arc::new(SystemTime::default()),
            random: Arc::new(SeededRandom::new(0)),
            breakers: Arc::new(Breakers::new(options.breaker.clone())),
            options,
            observer: None,
            call_threads: Arc::default(),
            worker_pools: Arc::default(),
        }
    }

    /// Replaces the clock (a [`super::ManualTime`] in tests: nothing sleeps for real).
    pub fn with_time(mut self, time: Arc<dyn Time>) -> Executor {
        self.time = time;
        self
    }

    /// Replaces the randomness behind retry jitter and run ids.
    pub fn with_random(mut self, random: Arc<dyn Random>) -> Executor {
        self.random = random;
        self
    }

    /// Replaces the options (and resets the circuit breakers to the new policy).
    pub fn with_options(mut self, options: Options) -> Executor {
        self.breakers = Arc::new(Breakers::new(options.breaker.clone()));
        self.worker_pools = Arc::default();
        self.options = options;
        self
    }

    /// Reports progress to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Executor {
        self.observer = Some(observer);
        self
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The circuit breakers.
    pub fn breakers(&self) -> &Breakers {
        &self.breakers
    }
}
