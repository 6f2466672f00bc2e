//! What an MCP server's own messages may cost tdsl, bounded where they are read.
//!
//! rmcp's loop reads a server's messages one after another and spawns a task for each
//! request (`ping`, `roots/list`, …) and notification it handles; an answer to a request is
//! then one more task, waiting for the transport to write it. Nothing bounded either
//! (hostile round 15):
//!
//! - **Handlers not run**: reading a buffer that is never empty never made the loop wait,
//!   so it did not yield to the tasks it spawned, which piled up for as long as the server
//!   kept writing — 200,000 `ping`s (9 MB) held 715 MB from a server that read its input,
//!   200,000 log notifications 420 MB after 8 s and growing. [`Answering`] yields before
//!   each read (one message at a time, whatever the buffer holds), so they run in turn.
//! - **Answers not written**: a server that sends requests and never reads its input left
//!   every answer waiting (700 MB for the same 9 MB, held as long as it lived). Once more
//!   than [`MAX_UNWRITTEN_ANSWERS`] answers or [`MAX_UNWRITTEN_ANSWER_BYTES`] wait, the next
//!   message it sends is not read: the connection ends, as at a message past a bound
//!   ([`super::Cut`]), and a server tdsl started is stopped.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// The most answers to a server's requests waiting to be written: a server that reads its
/// input has one or two at a time.
pub(crate) const MAX_UNWRITTEN_ANSWERS: usize = 64;

/// The most bytes of answers to a server's requests waiting to be written (an answer
/// echoes its request's `id`, which the server chooses).
pub(crate) const MAX_UNWRITTEN_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The answers being written and their bytes, shared by a transport and its writes.
#[derive(Debug)]
struct Waiting {
    answers: AtomicUsize,
    bytes: AtomicUsize,
    /// The most answers and bytes.
    bounds: (usize, usize),
    /// Told when an answer's write ends.
    written: tokio::sync::Notify,
}

impl Waiting {
    fn new(bounds: (usize, usize)) -> Waiting {
        Waiting {
            answers: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            bounds,
            written: tokio::sync::Notify::new(),
        }
    }

    fn past_bounds(&self) -> bool {
        self.answers.load(Ordering::SeqCst) > self.bounds.0 || self.bytes.load(Ordering::SeqCst) > self.bounds.1
    }

    /// Until the answers waiting are within the bounds.
    async fn within_bounds(&self) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if !self.past_bounds() {
                return;
            }
            written.await;
        }
    }
}

/// One answer counted until its write ends, whether it is written, fails or is dropped.
struct Counted {
    waiting: Arc<Waiting>,
    bytes: usize,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.waiting.answers.fetch_sub(1, Ordering::SeqCst);
        self.waiting.bytes.fetch_sub(self.bytes, Ordering::SeqCst);
        self.waiting.written.notify_waiters();
    }
}

/// What a transport does once its peer leaves more answers unwritten than its bounds.
pub(crate) enum PastBounds {
    /// Ends the stream (tdsl's client of an MCP server): the server is cut off, and the
    /// flag set says why ([`super::Cut`]).
    Cut(Arc<AtomicBool>),
    /// Reads nothing more until they are written (`serve` over stdio: a client that reads
    /// none of its answers is not read either).
    Wait,
}

/// A transport that reads its peer's messages one at a time, each handled before the next is
/// read, and whose peer may leave at most so many answers (and bytes of them) unwritten:
/// past either, [`PastBounds`] says what receiving does.
pub(crate) struct Answering<T> {
    inner: T,
    waiting: Arc<Waiting>,
    past: PastBounds,
}

impl<T> Answering<T> {
    /// `inner`, whose server is cut off (setting `unread`) past [`MAX_UNWRITTEN_ANSWERS`]
    /// and [`MAX_UNWRITTEN_ANSWER_BYTES`].
    pub(crate) fn new(inner: T, unread: Arc<AtomicBool>) -> Answering<T> {
        Answering::with_bounds(inner, (MAX_UNWRITTEN_ANSWERS, MAX_UNWRITTEN_ANSWER_BYTES), PastBounds::Cut(unread))
    }

    /// `inner`, at most `bounds` answers and bytes of answers unwritten, then `past`.
    pub(crate) fn with_bounds(inner: T, bounds: (usize, usize), past: PastBounds) -> Answering<T> {
        Answering { inner, waiting: Arc::new(Waiting::new(bounds)), past }
    }
}

impl<T> Answering<T> {
    /// `item` counted among the answers waiting to be written until the guard is dropped,
    /// when it is an answer (a result or an error); `None` for a request or a notification.
    fn counted<R: ServiceRole>(&self, item: &TxJsonRpcMessage<R>) -> Option<Counted> {
        matches!(item, rmcp::model::JsonRpcMessage::Response(_) | rmcp::model::JsonRpcMessage::Error(_)).then(|| {
            let bytes = json_bytes::<R>(item);
            self.waiting.answers.fetch_add(1, Ordering::SeqCst);
            self.waiting.bytes.fetch_add(bytes, Ordering::SeqCst);
            Counted { waiting: self.waiting.clone(), bytes }
        })
    }
}

/// The bytes `message` takes as JSON, counted without keeping them.
fn json_bytes<R: ServiceRole>(message: &TxJsonRpcMessage<R>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A message that cannot be written as JSON fails at the transport: counted as empty.
    let _ = serde_json::to_writer(&mut count, message);
    count.0
}

impl<R: ServiceRole, T: Transport<R>> Transport<R> for Answering<T> {
    type Error = T::Error;

    fn send(&mut self, item: TxJsonRpcMessage<R>) -> impl Future<Output = Result<(), T::Error>> + Send + 'static {
        let counted = self.counted::<R>(&item);
        let sent = self.inner.send(item);
        async move {
            let result = sent.await;
            drop(counted);
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<R>>> + Send {
        // rmcp asks for the next message anew each time it has handled one, so the bound is
        // looked at between any two messages the peer sends.
        let cut = match &self.past {
            PastBounds::Cut(unread) => {
                let cut = unread.load(Ordering::SeqCst) || self.waiting.past_bounds();
                if cut {
                    unread.store(true, Ordering::SeqCst);
                }
                cut
            }
            PastBounds::Wait => false,
        };
        let waiting = matches!(self.past, PastBounds::Wait).then(|| self.waiting.clone());
        let inner = self.inner.receive();
        async move {
            if cut {
                return None;
            }
            if let Some(waiting) = waiting {
                waiting.within_bounds().await;
            }
            // The handlers rmcp spawned for the messages before run first (module docs).
            tokio::task::yield_now().await;
            inner.await
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), T::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmptyResult, NumberOrString, ServerJsonRpcMessage};
    use rmcp::RoleClient;

    /// The next message of `t`, as a client reads it.
    async fn next<T: Transport<RoleClient>>(t: &mut Answering<T>) -> Option<RxJsonRpcMessage<RoleClient>> {
        Transport::<RoleClient>::receive(t).await
    }

    /// A transport whose writes never end (a server that reads nothing) and whose server
    /// sends `ping`s without end.
    struct Deaf;

    impl Transport<RoleClient> for Deaf {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
            std::future::pending()
        }

        fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
            let ping: ServerJsonRpcMessage =
                serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).expect("a ping");
            std::future::ready(Some(ping))
        }

        async fn close(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn answer(id: &str) -> TxJsonRpcMessage<RoleClient> {
        TxJsonRpcMessage::<RoleClient>::response(
            rmcp::model::ClientResult::EmptyResult(EmptyResult {}),
            NumberOrString::String(id.into()),
        )
    }

    #[test]
    fn a_server_that_reads_no_answers_is_cut_off_past_the_bound() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let unread = Arc::new(AtomicBool::new(false));
            let mut t = Answering::new(Deaf, unread.clone());
            let mut writes = Vec::new();
            for k in 0..=MAX_UNWRITTEN_ANSWERS {
                assert!(next(&mut t).await.is_some(), "message {k} read");
                writes.push(t.counted::<RoleClient>(&answer("1")));
            }
            assert!(next(&mut t).await.is_none(), "past the bound the stream ends");
            assert!(unread.load(Ordering::SeqCst));
            // Answers whose writes end (or are dropped) are no longer counted.
            drop(writes);
            assert_eq!(t.waiting.answers.load(Ordering::SeqCst), 0);
            assert_eq!(t.waiting.bytes.load(Ordering::SeqCst), 0);
            // A connection once cut stays cut.
            assert!(next(&mut t).await.is_none());
        });
    }

    #[test]
    fn answers_past_the_bytes_bound_cut_the_server_off() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let unread = Arc::new(AtomicBool::new(false));
            let mut t = Answering::new(Deaf, unread.clone());
            let long = "i".repeat(MAX_UNWRITTEN_ANSWER_BYTES / 2);
            let _first = t.counted::<RoleClient>(&answer(&long));
            assert!(next(&mut t).await.is_some());
            let _second = t.counted::<RoleClient>(&answer(&long));
            assert!(next(&mut t).await.is_none(), "two answers of half the bound and more are past it");
            assert!(unread.load(Ordering::SeqCst));
        });
    }

    #[test]
    fn requests_and_notifications_of_tdsl_are_not_counted() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let mut t = Answering::new(Deaf, Arc::new(AtomicBool::new(false)));
            let note: TxJsonRpcMessage<RoleClient> =
                serde_json::from_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("a note");
            let _writes: Vec<_> = (0..1000).map(|_| t.counted::<RoleClient>(&note)).collect();
            assert_eq!(t.waiting.answers.load(Ordering::SeqCst), 0);
            assert!(next(&mut t).await.is_some());
        });
    }

    #[test]
    fn past_the_bounds_a_waiting_transport_reads_again_once_answers_are_written() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        runtime.block_on(async {
            let mut t = Answering::with_bounds(Deaf, (1, usize::MAX), PastBounds::Wait);
            let first = t.counted::<RoleClient>(&answer("1"));
            let second = t.counted::<RoleClient>(&answer("2"));
            let waited = tokio::time::timeout(std::time::Duration::from_millis(50), next(&mut t)).await;
            assert!(waited.is_err(), "two answers unwritten, one allowed: nothing is read");
            drop(first);
            assert!(next(&mut t).await.is_some(), "one answer unwritten: read");
            drop(second);
        });
    }
}
