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

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;

/// The most answers to a server's requests waiting to be written: a server that reads its
/// input has one or two at a time.
pub(crate) const MAX_UNWRITTEN_ANSWERS: usize = 64;

/// The most bytes of answers to a server's requests waiting to be written (an answer
/// echoes its request's `id`, which the server chooses).
pub(crate) const MAX_UNWRITTEN_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The answers being written and their bytes, shared by a transport and its writes.
#[derive(Debug, Default)]
struct Waiting {
    answers: AtomicUsize,
    bytes: AtomicUsize,
}

impl Waiting {
    fn past_bounds(&self) -> bool {
        self.answers.load(Ordering::SeqCst) > MAX_UNWRITTEN_ANSWERS
            || self.bytes.load(Ordering::SeqCst) > MAX_UNWRITTEN_ANSWER_BYTES
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
    }
}

/// A transport whose server may leave at most [`MAX_UNWRITTEN_ANSWERS`] answers (and
/// [`MAX_UNWRITTEN_ANSWER_BYTES`]) unwritten: past either, receiving ends the stream and
/// sets `unread`.
pub(crate) struct Answering<T> {
    inner: T,
    waiting: Arc<Waiting>,
    unread: Arc<AtomicBool>,
}

impl<T> Answering<T> {
    /// `inner`, whose server is cut off (setting `unread`) past the bounds.
    pub(crate) fn new(inner: T, unread: Arc<AtomicBool>) -> Answering<T> {
        Answering { inner, waiting: Arc::default(), unread }
    }
}

/// The bytes `message` takes as JSON, counted without keeping them.
fn json_bytes(message: &TxJsonRpcMessage<RoleClient>) -> usize {
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

impl<T: Transport<RoleClient>> Transport<RoleClient> for Answering<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), T::Error>> + Send + 'static {
        let counted =
            matches!(item, TxJsonRpcMessage::<RoleClient>::Response(_) | TxJsonRpcMessage::<RoleClient>::Error(_))
                .then(|| {
                    let bytes = json_bytes(&item);
                    self.waiting.answers.fetch_add(1, Ordering::SeqCst);
                    self.waiting.bytes.fetch_add(bytes, Ordering::SeqCst);
                    Counted { waiting: self.waiting.clone(), bytes }
                });
        let sent = self.inner.send(item);
        async move {
            let result = sent.await;
            drop(counted);
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        // rmcp asks for the next message anew each time it has handled one, so the bound is
        // looked at between any two messages the server sends.
        let cut = self.unread.load(Ordering::SeqCst) || self.waiting.past_bounds();
        if cut {
            self.unread.store(true, Ordering::SeqCst);
        }
        let inner = self.inner.receive();
        async move {
            if cut {
                return None;
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
                assert!(t.receive().await.is_some(), "message {k} read");
                writes.push(t.send(answer("1")));
            }
            assert!(t.receive().await.is_none(), "past the bound the stream ends");
            assert!(unread.load(Ordering::SeqCst));
            // Answers whose writes end (or are dropped) are no longer counted.
            drop(writes);
            assert_eq!(t.waiting.answers.load(Ordering::SeqCst), 0);
            assert_eq!(t.waiting.bytes.load(Ordering::SeqCst), 0);
            // A connection once cut stays cut.
            assert!(t.receive().await.is_none());
        });
    }

    #[test]
    fn answers_past_the_bytes_bound_cut_the_server_off() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let unread = Arc::new(AtomicBool::new(false));
            let mut t = Answering::new(Deaf, unread.clone());
            let long = "i".repeat(MAX_UNWRITTEN_ANSWER_BYTES / 2);
            let _first = t.send(answer(&long));
            assert!(t.receive().await.is_some());
            let _second = t.send(answer(&long));
            assert!(t.receive().await.is_none(), "two answers of half the bound and more are past it");
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
            let _writes: Vec<_> = (0..1000).map(|_| t.send(note.clone())).collect();
            assert_eq!(t.waiting.answers.load(Ordering::SeqCst), 0);
            assert!(t.receive().await.is_some());
        });
    }
}
