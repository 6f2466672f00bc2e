//! `$/cancelRequest`, as rust-analyzer does it: a cancelled request is still answered, with
//! error `-32800` (RequestCancelled), and long work (the analysis of the files changed
//! before it, the walk of a root and the files read for references, definition and
//! rename, code actions over many diagnostics) asks [`Inbox::cancelled`] as it goes and
//! stops early.
//!
//! One thread handles the messages in order, so a cancellation sent after a request is
//! still in the channel while the request is handled. The [`Inbox`] takes what has arrived
//! into a queue of its own, noting the requests cancelled, whenever the work asks; the main
//! loop reads that queue before the channel, so no message is reordered. A request's id
//! stays cancelled until its `$/cancelRequest` is handled in turn (after the request was
//! answered), so the set holds at most what is queued.

use std::collections::{HashMap, VecDeque};

use lsp_server::{Message, Notification, RequestId};
use lsp_types::notification::Notification as _;
use serde::Deserialize as _;

/// How the inbox reads the channel without waiting: the next message that has arrived.
pub(crate) type TryNext = Box<dyn FnMut() -> Option<Message>>;

/// The messages taken from the channel ahead of their turn, and the requests they cancel.
#[derive(Default)]
pub(crate) struct Inbox {
    try_next: Option<TryNext>,
    queue: VecDeque<Message>,
    /// For each request id, how many `$/cancelRequest`s naming it wait in the queue.
    cancelled: HashMap<RequestId, usize>,
    /// Whether a `shutdown` request or an `exit` waits in the queue: every analysis and
    /// every request's work then stops, so that `shutdown` is answered at once.
    ending: bool,
}

impl Inbox {
    /// An inbox reading its channel with `try_next`.
    pub(crate) fn new(try_next: TryNext) -> Inbox {
        Inbox { try_next: Some(try_next), queue: VecDeque::new(), cancelled: HashMap::new(), ending: false }
    }

    /// The next message taken ahead of its turn.
    pub(crate) fn pop(&mut self) -> Option<Message> {
        self.queue.pop_front()
    }

    /// Whether no message waits in the queue.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Notes a message the main loop read from the channel itself (not through the
    /// queue), before it is handled.
    pub(crate) fn note(&mut self, m: &Message) {
        if let Some(id) = cancelled_id(m) {
            *self.cancelled.entry(id).or_default() += 1;
        }
    }

    /// Takes what has arrived into the queue, noting the requests it cancels.
    fn poll(&mut self) {
        let Some(try_next) = self.try_next.as_mut() else { return };
        while let Some(m) = try_next() {
            if let Some(id) = cancelled_id(&m) {
                *self.cancelled.entry(id).or_default() += 1;
            }
            self.ending |= is_ending(&m);
            self.queue.push_back(m);
        }
    }

    /// Whether a `shutdown` or an `exit` has arrived and waits its turn (what has arrived
    /// is read first): the work under way stops, and the files left are not analysed.
    pub(crate) fn ending(&mut self) -> bool {
        self.poll();
        self.ending
    }

    /// Whether the client cancelled request `id`: a `$/cancelRequest` naming it came after
    /// it (what has arrived is read first). Every cancellation noted waits behind the
    /// request being handled, since those before it were handled before it.
    pub(crate) fn cancelled(&mut self, id: &RequestId) -> bool {
        self.poll();
        self.cancelled.contains_key(id)
    }

    /// A `$/cancelRequest` in its turn: the request it names was answered before it, so
    /// the cancellation is spent (a later request may reuse the id).
    pub(crate) fn handled(&mut self, n: &Notification) {
        let Some(id) = cancel_params(n) else { return };
        if let Some(count) = self.cancelled.get_mut(&id) {
            *count -= 1;
            if *count == 0 {
                self.cancelled.remove(&id);
            }
        }
    }
}

/// The id a `$/cancelRequest` names (`None` for any other message, or one whose
/// parameters do not name an id: it is ignored).
fn cancelled_id(m: &Message) -> Option<RequestId> {
    match m {
        Message::Notification(n) => cancel_params(n),
        _ => None,
    }
}

fn cancel_params(n: &Notification) -> Option<RequestId> {
    if n.method != lsp_types::notification::Cancel::METHOD {
        return None;
    }
    let p = lsp_types::CancelParams::deserialize(&n.params).ok()?;
    Some(match p.id {
        lsp_types::NumberOrString::Number(n) => RequestId::from(n),
        lsp_types::NumberOrString::String(s) => RequestId::from(s),
    })
}

/// Whether `m` ends the server: a `shutdown` request or an `exit`.
fn is_ending(m: &Message) -> bool {
    match m {
        Message::Request(r) => r.method == <lsp_types::request::Shutdown as lsp_types::request::Request>::METHOD,
        Message::Notification(n) => n.method == lsp_types::notification::Exit::METHOD,
        Message::Response(_) => false,
    }
}

/// Whether `n` is a `$/cancelRequest`.
pub(crate) fn is_cancel(n: &Notification) -> bool {
    n.method == lsp_types::notification::Cancel::METHOD
}
