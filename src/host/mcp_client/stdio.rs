//! The stdio transport of `mcp:` servers: rmcp's line-delimited JSON-RPC over the child's
//! standard input and output, with two things rmcp's own child transport lacks:
//!
//! - **A cap on one message**: rmcp drops a line longer than its limit and goes on, so a
//!   request answered that way waits until its timeout. Here a message longer than
//!   [`MAX_MESSAGE_BYTES`] ends the connection instead (the reader reports the end of the
//!   stream and notes why), so that the call fails at once saying so.
//! - **A bound on the values of one message**, counted as its bytes pass
//!   ([`crate::value::ValueStream`]): rmcp reads a message into `serde_json` values before
//!   tdsl sees it — 16 MiB of `[0,0,…]` once made 1.7 GB there (hostile round 10b). A
//!   message of more values than the runner's budget (and its envelope's few) ends the
//!   connection as an oversized one does, before rmcp builds anything of it.
//! - The MCP stdio shutdown as rmcp's does it: the server's input is closed and it has 3 s
//!   to exit, then SIGTERM and 3 s more, then it is killed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::Cut;
use crate::value::ValueStream;

/// The longest message a server may send on one line: 16 MiB (rmcp's own limit).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How long a server has to exit once its input is closed, then once it got SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// How long the servers of one set of clients have to exit, once their input is closed and
/// again after SIGTERM: [`EXIT_GRACE`] until [`ExitGrace::set`] shortens it (a shutdown on a
/// signal), shared by their transports.
/// It also keeps the process ids of their servers not yet reaped, for
/// [`ExitGrace::kill_all`].
#[derive(Clone, Debug)]
pub(crate) struct ExitGrace {
    millis: Arc<AtomicU64>,
    running: Arc<Mutex<Vec<u32>>>,
}

impl Default for ExitGrace {
    fn default() -> ExitGrace {
        ExitGrace { millis: Arc::new(AtomicU64::new(millis(EXIT_GRACE))), running: Arc::default() }
    }
}

impl ExitGrace {
    /// From now on, `grace`.
    pub(crate) fn set(&self, grace: Duration) {
        self.millis.store(millis(grace), Ordering::SeqCst);
    }

    fn get(&self) -> Duration {
        Duration::from_millis(self.millis.load(Ordering::SeqCst))
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills every server still running (not reaped: its process id is not anyone else's),
    /// when its shutdown did not end it in time.
    pub(crate) fn kill_all(&self) {
        #[cfg(unix)]
        for pid in self.running().drain(..) {
            signal(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// Sends SIGTERM to every server still running whose connection has not begun to close.
    pub(crate) fn terminate_all(&self) {
        #[cfg(unix)]
        for pid in self.running().iter() {
            signal(*pid, nix::sys::signal::Signal::SIGTERM);
        }
    }
}

#[cfg(unix)]
fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A server's standard output that ends (as if the server had closed it) at the first line
/// longer than `limit`, setting `oversized`, or of more values than `values` counts, setting
/// `too_many`.
struct Capped<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line read so far.
    line: usize,
    oversized: Arc<AtomicBool>,
    /// The values of the current line so far.
    values: ValueStream,
    too_many: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Capped<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.oversized.load(Ordering::Relaxed) || self.too_many.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let mut line = this.line;
            for (i, byte) in buf.filled()[before..].iter().enumerate() {
                if *byte == b'\n' {
                    line = 0;
                    this.values.reset();
                } else {
                    line += 1;
                    // Nothing of the line past a bound reaches rmcp: the stream ends here.
                    let cut = if line > this.limit {
                        Some(&this.oversized)
                    } else {
                        this.values.byte(*byte).is_err().then_some(&this.too_many)
                    };
                    if let Some(flag) = cut {
                        flag.store(true, Ordering::Relaxed);
                        buf.set_filled(before + i);
                        break;
                    }
                }
            }
            this.line = line;
        }
        polled
    }
}

/// The client side of one `mcp:` server over its standard input and output.
pub(crate) struct ChildTransport {
    child: Option<Child>,
    /// Its process id, in `grace`'s list until the child is reaped or dropped.
    pid: Option<u32>,
    grace: ExitGrace,
    rw: AsyncRwTransport<RoleClient, Capped<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// The transport over `child`'s piped standard input and output, and the flags set when
    /// the server sent a message longer than `limit` bytes, or of more than `max_values`
    /// values.
    pub(crate) fn new(
        mut child: Child,
        limit: usize,
        max_values: usize,
        grace: ExitGrace,
    ) -> std::io::Result<(ChildTransport, Cut)> {
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(std::io::Error::other("the server's standard input and output are not piped"));
        };
        let cut = Cut::default();
        let capped = Capped {
            inner: stdout,
            limit,
            line: 0,
            oversized: cut.oversized.clone(),
            values: ValueStream::new(max_values),
            too_many: cut.too_many_values.clone(),
        };
        // The cap is ours (it ends the connection); rmcp's would only drop the line.
        let rw = AsyncRwTransport::new(capped, stdin).with_max_line_length(usize::MAX);
        let pid = child.id();
        grace.running().extend(pid);
        Ok((ChildTransport { child: Some(child), pid, grace, rw }, cut))
    }
}

impl ChildTransport {
    /// Takes the server out of the list of those [`ExitGrace::kill_all`] kills: before it
    /// is reaped (after that its id may be another process's).
    fn unlist(&mut self) {
        if let Some(pid) = self.pid.take() {
            self.grace.running().retain(|p| *p != pid);
        }
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        self.unlist();
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rw.send(item)
    }

    fn receive(&mut self) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rw.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // From here on the server is ended here, within three times the grace.
        self.unlist();
        let grace = self.grace.get();
        // A server that reads no more input does not hold its input's closing either.
        let _ = tokio::time::timeout(grace, self.rw.close()).await;
        let Some(mut child) = self.child.take() else { return Ok(()) };
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            if tokio::time::timeout(grace, child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        child.kill().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn a_line_past_the_cap_ends_the_stream() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let read = |text: &'static [u8], limit: usize, max_values: usize| {
            runtime.block_on(async move {
                let cut = Cut::default();
                let mut capped = Capped {
                    inner: text,
                    limit,
                    line: 0,
                    oversized: cut.oversized.clone(),
                    values: ValueStream::new(max_values),
                    too_many: cut.too_many_values.clone(),
                };
                let mut out = Vec::new();
                capped.read_to_end(&mut out).await.expect("read");
                let flags = (cut.oversized.load(Ordering::Relaxed), cut.too_many_values.load(Ordering::Relaxed));
                (String::from_utf8(out).expect("utf-8"), flags)
            })
        };
        assert_eq!(read(b"abc\ndef\n", 3, 9), ("abc\ndef\n".to_string(), (false, false)));
        assert_eq!(read(b"abc\ndefg\nhi\n", 3, 9), ("abc\ndef".to_string(), (true, false)));
        assert_eq!(read(b"abcd", 3, 9), ("abc".to_string(), (true, false)));
        // Each line has its own count: 4 values, then 5, of which the fifth is cut.
        assert_eq!(read(b"[1,2,3]\n[1,2,3,4]\n", 100, 4), ("[1,2,3]\n[1,2,3".to_string(), (false, true)));
    }
}
