//! The threads that run calls with a deadline (every call has one: the step's
//! `timeout_seconds`, seed 000's 60 s by default, or what is left of the run's deadline).
//!
//! A call with a deadline runs off the worker so that the worker can give up on it when the
//! deadline passes; starting an OS thread for each attempt cost more than the engine's own
//! work per step (docs/performance.md). The threads are kept and reused: a thread that
//! finished its call waits (up to [`IDLE`]) for the next one. A call that never returns keeps
//! its thread, as it would have kept a thread of its own; when the pool is dropped, its idle
//! threads end at once.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

/// How long an idle thread waits for another call before it ends.
pub(crate) const IDLE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// A job, what to do once its thread is back in the pool (tell the caller it ended), and
/// the way back to the thread that takes it (the pool keeps an idle thread's sender; the
/// thread keeps none, so that dropping the pool ends it).
struct Message(Job, Job, Sender<Message>);

/// Reusable threads for calls.
#[derive(Default)]
pub(crate) struct CallThreads {
    idle: Mutex<Vec<Sender<Message>>>,
}

impl std::fmt::Debug for CallThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("CallThreads").field("idle", &idle).finish()
    }
}

impl CallThreads {
    /// Runs `job` on an idle thread, or on a new one; then puts the thread back in the pool,
    /// and only then runs `then` on it. A caller that `then` tells the job ended finds the
    /// thread idle for its next call: were the thread put back after telling, a caller that
    /// makes call after call (a chain of steps) would often be faster than the thread, and
    /// start a new thread for nearly every call.
    pub(crate) fn run(
        self: &Arc<Self>,
        job: impl FnOnce() + Send + 'static,
        then: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        let (mut job, mut then): (Job, Job) = (Box::new(job), Box::new(then));
        loop {
            let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let Some(thread) = idle else { break };
            match thread.send(Message(job, then, thread.clone())) {
                Ok(()) => return Ok(()),
                // That thread stopped waiting (IDLE passed): take the next one.
                Err(mpsc::SendError(Message(j, t, _))) => (job, then) = (j, t),
            }
        }
        let (tx, rx) = mpsc::channel::<Message>();
        let pool = Arc::downgrade(self);
        std::thread::Builder::new().name("tdsl-call".to_string()).spawn(move || {
            job();
            serve(&pool, tx, &rx, then);
        })?;
        Ok(())
    }

    /// How many threads wait for a call.
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// A pool thread after its first job: back into the pool, the job's `then`, the next job,
/// until the pool is gone or nothing comes for [`IDLE`].
fn serve(pool: &Weak<CallThreads>, mut back: Sender<Message>, rx: &Receiver<Message>, mut then: Job) {
    loop {
        let Some(p) = pool.upgrade() else {
            then();
            return;
        };
        p.idle.lock().unwrap_or_else(PoisonError::into_inner).push(back);
        drop(p);
        then();
        match rx.recv_timeout(IDLE) {
            Ok(Message(job, after, sender)) => {
                back = sender;
                job();
                then = after;
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// How many idle worker pools an executor keeps for its next runs.
const IDLE_POOLS: usize = 4;

/// The worker pools of an executor's runs, kept between runs: a run takes an idle pool (or
/// builds one) and gives it back when it ends. Runs at the same time never share a pool —
/// each has its own `max_concurrency` workers, as if it had built them — but a run after
/// another does not start and stop its workers again (eight thread starts cost more than a
/// chain of a hundred steps; docs/performance.md). Idle workers sleep; at most
/// [`IDLE_POOLS`] pools are kept, and dropping the executor ends their threads.
#[derive(Default)]
pub(crate) struct WorkerPools {
    idle: Mutex<Vec<rayon::ThreadPool>>,
}

impl std::fmt::Debug for WorkerPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("WorkerPools").field("idle", &idle).finish()
    }
}

impl WorkerPools {
    /// An idle pool of `threads` workers, or a new one.
    pub(crate) fn take(&self, threads: usize) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = idle.iter().position(|p| p.current_num_threads() == threads) {
            return Ok(idle.swap_remove(i));
        }
        drop(idle);
        rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("tdsl-worker-{i}")).build()
    }

    /// `pool` is idle again (its run ended: every job it ran has returned).
    pub(crate) fn give_back(&self, pool: rayon::ThreadPool) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < IDLE_POOLS {
            idle.push(pool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn wait_until(what: impl Fn() -> bool) {
        let start = std::time::Instant::now();
        while !what() {
            assert!(start.elapsed() < Duration::from_secs(30), "the condition never held");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn threads_are_reused() {
        let pool = Arc::new(CallThreads::default());
        let names = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..50 {
            let names = names.clone();
            pool.run(move || names.lock().unwrap().push(std::thread::current().id()), || {}).unwrap();
            // One at a time: the thread is back in the pool before the next call.
            wait_until(|| pool.idle() == 1);
        }
        let mut ids = names.lock().unwrap().clone();
        ids.dedup();
        assert_eq!(ids.len(), 1, "fifty calls one after another ran on one thread");
    }

    #[test]
    fn a_caller_told_that_a_call_ended_finds_its_thread_idle() {
        // As the scheduler uses the pool: the next call starts as soon as the last one said
        // it ended, without waiting for the thread to go back to the pool.
        let pool = Arc::new(CallThreads::default());
        let names = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..200 {
            let names = names.clone();
            let (done, ended) = mpsc::channel::<()>();
            let job = move || names.lock().unwrap().push(std::thread::current().id());
            pool.run(job, move || done.send(()).unwrap()).unwrap();
            ended.recv().unwrap();
        }
        let mut ids = names.lock().unwrap().clone();
        ids.dedup();
        assert_eq!(ids.len(), 1, "two hundred calls one after another ran on one thread");
    }

    #[test]
    fn busy_threads_are_not_shared_and_dropping_the_pool_ends_idle_ones() {
        thread_local! {
            // Dropped when its thread ends.
            static ALIVE: std::cell::RefCell<Option<Arc<()>>> = const { std::cell::RefCell::new(None) };
        }
        let pool = Arc::new(CallThreads::default());
        let alive = Arc::new(());
        let (release, gate) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let running = Arc::new(AtomicUsize::new(0));
        for _ in 0..4 {
            let (gate, running, alive) = (gate.clone(), running.clone(), alive.clone());
            pool.run(
                move || {
                    ALIVE.with(|a| *a.borrow_mut() = Some(alive));
                    running.fetch_add(1, Ordering::SeqCst);
                    let _ = gate.lock().unwrap().recv();
                },
                || {},
            )
            .unwrap();
        }
        // Four calls at once run on four threads (the first holds the gate, three wait for it).
        wait_until(|| running.load(Ordering::SeqCst) == 4);
        assert_eq!(Arc::strong_count(&alive), 5);
        for _ in 0..4 {
            release.send(()).unwrap();
        }
        wait_until(|| pool.idle() == 4);
        drop(pool);
        // Every idle thread ends once the pool is gone (not after IDLE).
        wait_until(|| Arc::strong_count(&alive) == 1);
    }
}
