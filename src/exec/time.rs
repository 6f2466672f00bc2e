//! Time and randomness, injectable so that tests and replays never sleep for real and
//! every delay is reproducible.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// A one-shot flag that threads can wait on: raised once, never lowered. The engine waits on
/// one for a tool call to end, and a [`CancelToken`](super::CancelToken) is one.
#[derive(Debug, Default)]
pub struct Signal {
    raised: Mutex<bool>,
    cv: Condvar,
}

impl Signal {
    /// A signal not yet raised.
    pub fn new() -> Signal {
        Signal::default()
    }

    /// Raises it and wakes every waiter.
    pub fn raise(&self) {
        *self.raised.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    /// Whether it has been raised.
    pub fn is_raised(&self) -> bool {
        *self.raised.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits in real time until it is raised or `timeout` passes (forever with `None`);
    /// true when raised.
    pub fn wait_real(&self, timeout: Option<Duration>) -> bool {
        let guard = self.raised.lock().unwrap_or_else(PoisonError::into_inner);
        match timeout {
            None => *self.cv.wait_while(guard, |r| !*r).unwrap_or_else(PoisonError::into_inner),
            Some(t) => {
                let (guard, _) = self.cv.wait_timeout_while(guard, t, |r| !*r).unwrap_or_else(PoisonError::into_inner);
                *guard
            }
        }
    }
}

/// The engine's view of time: a monotonic clock, sleeping, and the wall clock that
/// `datetime_now` and trace timestamps read.
pub trait Time: Send + Sync {
    /// Milliseconds since an arbitrary fixed start; never goes backwards.
    fn monotonic_ms(&self) -> u64;
    /// Waits (really, or by advancing a virtual clock).
    fn sleep(&self, d: Duration);
    /// Milliseconds since the Unix epoch.
    fn wall_ms(&self) -> i64;
    /// Waits until `signal` is raised or the monotonic clock reaches `deadline_ms`; true
    /// when the signal was raised. This is how the engine waits for a tool call under a
    /// timeout, so a virtual clock decides timeouts by virtual time alone.
    fn wait(&self, signal: &Signal, deadline_ms: u64) -> bool;
    /// Sleeps like [`Time::sleep`], but may return early once `signal` is raised: a
    /// cancelled run does not sit out a retry's back-off. The default sleeps it all.
    fn sleep_unless(&self, d: Duration, signal: &Signal) {
        let _ = signal;
        self.sleep(d);
    }
}

/// Real time.
#[derive(Debug)]
pub struct SystemTime {
    start: std::time::Instant,
}

impl Default for SystemTime {
    fn default() -> SystemTime {
        SystemTime { start: std::time::Instant::now() }
    }
}

impl Time for SystemTime {
    fn monotonic_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }

    fn wall_ms(&self) -> i64 {
        crate::runtime::Clock::now_millis(&crate::runtime::SystemClock)
    }

    fn wait(&self, signal: &Signal, deadline_ms: u64) -> bool {
        let left = deadline_ms.saturating_sub(self.monotonic_ms());
        signal.wait_real(Some(Duration::from_millis(left)))
    }

    fn sleep_unless(&self, d: Duration, signal: &Signal) {
        signal.wait_real(Some(d));
    }
}

/// A virtual clock: `sleep` advances it instantly. The wall clock starts at a fixed instant
/// and moves with it.
#[derive(Debug)]
pub struct ManualTime {
    now: AtomicU64,
    wall_start: AtomicI64,
}

impl ManualTime {
    /// A clock at monotonic 0 and the given wall time.
    pub fn new(wall_start_ms: i64) -> ManualTime {
        ManualTime { now: AtomicU64::new(0), wall_start: AtomicI64::new(wall_start_ms) }
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        let by = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        // Saturating: a huge duration parks the clock at its end instead of wrapping.
        let _ = self.now.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| Some(now.saturating_add(by)));
    }
}

impl Time for ManualTime {
    fn monotonic_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }

    fn sleep_unless(&self, d: Duration, signal: &Signal) {
        if !signal.is_raised() {
            self.advance(d);
        }
    }

    fn wall_ms(&self) -> i64 {
        self.wall_start.load(Ordering::SeqCst) + i64::try_from(self.monotonic_ms()).unwrap_or(i64::MAX)
    }

    /// Returns as soon as the signal is raised, or once some other thread has moved the
    /// clock to the deadline (a test's runner "takes time" by sleeping on this clock). The
    /// outcome depends on virtual time only; the short real waits just notice the change.
    fn wait(&self, signal: &Signal, deadline_ms: u64) -> bool {
        loop {
            if signal.is_raised() {
                return true;
            }
            if self.monotonic_ms() >= deadline_ms {
                return false;
            }
            signal.wait_real(Some(Duration::from_millis(1)));
        }
    }
}

/// A source of uniform random numbers in `[0, 1)` (for retry jitter).
pub trait Random: Send + Sync {
    /// The next number.
    fn next_f64(&self) -> f64;
}

/// A seeded generator (splitmix64): the same seed gives the same sequence.
#[derive(Debug)]
pub struct SeededRandom {
    state: AtomicU64,
}

impl SeededRandom {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SeededRandom {
        SeededRandom { state: AtomicU64::new(seed) }
    }
}

impl Random for SeededRandom {
    fn next_f64(&self) -> f64 {
        let mut z = self.state.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::SeqCst).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // 53 random bits → [0, 1)
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_time_sleeps_instantly() {
        let t = ManualTime::new(1_000);
        t.sleep(Duration::from_millis(1500));
        assert_eq!(t.monotonic_ms(), 1500);
        assert_eq!(t.wall_ms(), 2500);
    }

    #[test]
    fn seeded_random_is_reproducible_and_in_range() {
        let a = SeededRandom::new(7);
        let b = SeededRandom::new(7);
        for _ in 0..1000 {
            let x = a.next_f64();
            assert_eq!(x, b.next_f64());
            assert!((0.0..1.0).contains(&x));
        }
    }
}
