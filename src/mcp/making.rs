//! The answers outside `--max-calls` whose making costs: `resources/read` (`tdsl://tools`
//! lists every upstream tool, megabytes for a large upstream) and `prompts/get` (the same
//! listing in a message). They are made a few at a time, all sessions together, and a large
//! one is held once made as a text of [`super::spliced`] (written into its message as it
//! goes out), counted against a budget of bytes until it is written: while the answers made
//! and not yet written hold the budget, the next waits to be made.
//!
//! Before (docs/security.md, "Hostile round 16"), each such request was answered as it
//! arrived, on a thread of its own: 40 `resources/read` of a 14 MB `tdsl://tools` sent at
//! once made 40 answers at once (1.24 GB at the peak, a client reading every answer), and
//! over HTTP rmcp keeps each answer's event for a minute after it is written, for a client
//! that takes its stream up again. Now a client gets every answer, one after another, at the
//! pace it reads them; a replayed event finds the text gone, as a tool call's does.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many answers are made at once, all sessions together (each on a blocking thread).
pub(crate) const MADE_AT_ONCE: usize = 2;

/// The most bytes of made answers waiting to be written, all sessions together: past it the
/// next answer waits before it is held (and so the ones after it before they are made). An
/// answer larger than the budget takes all of it, alone.
pub(crate) const UNWRITTEN_BYTES: usize = 32 << 20;

/// How often an answer waiting for the budget lets go the texts past their time (those of
/// answers nobody will write: [`super::spliced::let_go_expired`]).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The slots for making answers and the budget of bytes made and not yet written.
#[derive(Debug)]
pub(crate) struct Making {
    slots: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    budget: usize,
}

impl Default for Making {
    fn default() -> Making {
        Making::new(MADE_AT_ONCE, UNWRITTEN_BYTES)
    }
}

/// Why an answer was not made.
#[derive(Debug, PartialEq)]
pub(crate) enum NotMade {
    /// Its request was cancelled, or the server is stopping.
    Stopped,
    /// Its making panicked (the message).
    Panicked(String),
}

impl Making {
    /// `at_once` answers made at once, `budget` bytes of them waiting to be written.
    pub(crate) fn new(at_once: usize, budget: usize) -> Making {
        let budget = budget.clamp(1, u32::MAX as usize);
        Making { slots: Arc::new(Semaphore::new(at_once.max(1))), bytes: Arc::new(Semaphore::new(budget)), budget }
    }

    /// The text `make` makes (on a blocking thread), once a slot is free; a text of at least
    /// [`super::spliced::SPLICED_FROM`] bytes is held, once the budget has room for it, and
    /// its mark given in its place (the JSON string the message writes it as; the caller
    /// ties it to its response over HTTP). `None` when `make` makes none. Gives up when
    /// `stop` completes first (the request cancelled, the server stopping).
    pub(crate) async fn make<T: Send + 'static>(
        &self,
        make: impl FnOnce() -> Option<(String, T)> + Send + 'static,
        stop: impl Future<Output = ()>,
    ) -> Result<Option<(String, T)>, NotMade> {
        tokio::pin!(stop);
        let (made, slot) = self.run_in_slot(make, &mut stop).await?;
        let Some((text, extra)) = made else { return Ok(None) };
        if text.len() < super::spliced::SPLICED_FROM {
            return Ok(Some((text, extra)));
        }
        // Within the slot: while the budget is full, no other answer is made either.
        let ticket = tokio::select! {
            ticket = self.room_for(text.len()) => ticket.ok_or(NotMade::Stopped)?,
            () = &mut stop => return Err(NotMade::Stopped),
        };
        drop(slot);
        match super::spliced::hold_text(text, ticket) {
            Ok(mark) => Ok(Some((mark, extra))),
            // Larger than the texts the server holds (`--max-answer-bytes-held`): as it is.
            Err(text) => Ok(Some((text, extra))),
        }
    }

    /// `work` run on a blocking thread once a slot is free, and the slot.
    async fn run_in_slot<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
        stop: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> Result<(T, OwnedSemaphorePermit), NotMade> {
        let slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot.map_err(|_| NotMade::Stopped)?,
            () = stop.as_mut() => return Err(NotMade::Stopped),
        };
        let made = tokio::select! {
            made = tokio::task::spawn_blocking(work) => made.map_err(|e| NotMade::Panicked(e.to_string()))?,
            () = stop.as_mut() => return Err(NotMade::Stopped),
        };
        Ok((made, slot))
    }

    /// The budget's permits for `len` bytes (all of it for a text larger than the budget),
    /// once they are free: texts past their time are let go meanwhile, so that answers
    /// nobody will write do not hold the budget for good.
    async fn room_for(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        let n = u32::try_from(len.min(self.budget)).unwrap_or(u32::MAX);
        loop {
            match tokio::time::timeout(SWEEP_EVERY, self.bytes.clone().acquire_many_owned(n)).await {
                Ok(permit) => return permit.ok(),
                Err(_) => super::spliced::let_go_expired(),
            }
        }
    }

    /// The bytes of the budget free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.bytes.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("runtime")
    }

    /// A text of `len` bytes, made.
    fn text(len: usize) -> impl FnOnce() -> Option<(String, ())> + Send + 'static {
        move || Some(("x".repeat(len), ()))
    }

    #[test]
    fn a_large_answer_is_held_as_a_mark_within_the_budget_until_written() {
        runtime().block_on(async {
            let making = Making::new(2, 1 << 20);
            let len = super::super::spliced::SPLICED_FROM;
            let (mark, ()) = making.make(text(len), std::future::pending()).await.expect("made").expect("a text");
            assert!(mark.len() < 200, "a mark, not the text: {} bytes", mark.len());
            assert_eq!(making.free(), (1 << 20) - len);
            // Written: the text is taken out, and its bytes given back.
            let written = super::super::spliced::splice(serde_json::json!({"text": mark}).to_string().into_bytes());
            assert_eq!(written.len(), len + r#"{"text":""}"#.len());
            assert_eq!(making.free(), 1 << 20);
        });
    }

    #[test]
    fn small_answers_are_given_as_they_are() {
        runtime().block_on(async {
            let making = Making::new(1, 1 << 20);
            let (t, ()) = making.make(text(10), std::future::pending()).await.expect("made").expect("a text");
            assert_eq!(t, "x".repeat(10));
            assert_eq!(making.free(), 1 << 20);
        });
    }

    #[test]
    fn past_the_budget_the_next_answer_waits_until_one_is_written() {
        runtime().block_on(async {
            let len = super::super::spliced::SPLICED_FROM;
            // Room for one text: the second waits, and with it the making of the third.
            let making = Arc::new(Making::new(1, len));
            let (first, ()) = making.make(text(len), std::future::pending()).await.expect("made").expect("a text");
            let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let waiting: Vec<_> = (0..2)
                .map(|_| {
                    let (making, made) = (making.clone(), made.clone());
                    tokio::spawn(async move {
                        let counted = move || {
                            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            Some(("y".repeat(len), ()))
                        };
                        making.make(counted, std::future::pending()).await
                    })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1, "one made and waiting, one not made");
            let _ = super::super::spliced::splice(serde_json::json!([first]).to_string().into_bytes());
            let mut marks = Vec::new();
            for w in waiting {
                // Each written as soon as it is given, making room for the next.
                let (mark, ()) = w.await.expect("joined").expect("made").expect("a text");
                let _ = super::super::spliced::splice(serde_json::json!([mark]).to_string().into_bytes());
                marks.push(mark);
            }
            assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 2);
            assert_eq!(making.free(), len);
        });
    }

    #[test]
    fn a_stopped_request_is_not_made() {
        runtime().block_on(async {
            let making = Making::new(1, 1 << 20);
            let _slot = making.slots.clone().acquire_owned().await.expect("slot");
            let stopped = making.make(text(10), std::future::ready(())).await;
            assert_eq!(stopped, Err(NotMade::Stopped));
        });
    }
}
