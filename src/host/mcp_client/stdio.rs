//! The stdio transport of `mcp:` servers: rmcp's line-delimited JSON-RPC over the child's
//! standard input and output, with two things rmcp's own child transport lacks:
//!
//! - **A cap on one message**: rmcp drops a line longer than its limit and goes on, so a
//!   request answered that way waits until its timeout. Here a message longer than
//!   [`MAX_MESSAGE_BYTES`] ends the connection instead (the reader reports the end of the
//!   stream and notes why), so that the call fails at once saying so.
//! - The MCP stdio shutdown as rmcp's does it: the server's input is closed and it has 3 s
//!   to exit, then SIGTERM and 3 s more, then it is killed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The longest message a server may send on one line: 16 MiB (rmcp's own limit).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How long a server has to exit once its input is closed, then once it got SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// A server's standard output that ends (as if the server had closed it) at the first line
/// longer than `limit`, setting `oversized`.
struct Capped<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line read so far.
    line: usize,
    oversized: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Capped<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.oversized.load(Ordering::Relaxed) {
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
                } else {
                    line += 1;
                    if line > this.limit {
                        // Nothing of the oversized line reaches rmcp: the stream ends here.
                        this.oversized.store(true, Ordering::Relaxed);
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
    rw: AsyncRwTransport<RoleClient, Capped<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// The transport over `child`'s piped standard input and output, and the flag set when
    /// the server sent a message longer than `limit` bytes.
    pub(crate) fn new(mut child: Child, limit: usize) -> std::io::Result<(ChildTransport, Arc<AtomicBool>)> {
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(std::io::Error::other("the server's standard input and output are not piped"));
        };
        let oversized = Arc::new(AtomicBool::new(false));
        let capped = Capped { inner: stdout, limit, line: 0, oversized: oversized.clone() };
        // The cap is ours (it ends the connection); rmcp's would only drop the line.
        let rw = AsyncRwTransport::new(capped, stdin).with_max_line_length(usize::MAX);
        Ok((ChildTransport { child: Some(child), rw }, oversized))
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
        self.rw.close().await?;
        let Some(mut child) = self.child.take() else { return Ok(()) };
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
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
        let read = |text: &'static [u8], limit: usize| {
            runtime.block_on(async move {
                let flag = Arc::new(AtomicBool::new(false));
                let mut capped = Capped { inner: text, limit, line: 0, oversized: flag.clone() };
                let mut out = Vec::new();
                capped.read_to_end(&mut out).await.expect("read");
                (String::from_utf8(out).expect("utf-8"), flag.load(Ordering::Relaxed))
            })
        };
        assert_eq!(read(b"abc\ndef\n", 3), ("abc\ndef\n".to_string(), false));
        assert_eq!(read(b"abc\ndefg\nhi\n", 3), ("abc\ndef".to_string(), true));
        assert_eq!(read(b"abcd", 3), ("abc".to_string(), true));
    }
}
