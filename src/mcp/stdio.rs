//! Serving on standard input and output: until the client closes its end or the process
//! gets SIGTERM, SIGINT or SIGHUP, then the calls in flight cancelled within
//! [`SHUTDOWN_GRACE`]. Input goes through [`framing`] first.

use std::time::Duration;

use super::{framing, pumps, McpServer, DEFAULT_MAX_CALLS, OUTPUT_FAILED, SHUTDOWN_GRACE};

/// The most answers rmcp may have waiting to be written before it reads the next request.
const UNWRITTEN_ANSWERS: usize = 64;

/// The most bytes of answers rmcp may have waiting to be written before it reads the next
/// request (a large answer's text is not in them: [`super::spliced`]).
const UNWRITTEN_ANSWER_BYTES: usize = 16 * 1024 * 1024;

impl McpServer {
    /// Serves on standard input and output until the client closes its end or the process
    /// gets SIGTERM, SIGINT or SIGHUP ([`terminated`]); then cancels the calls in flight (killing their programs) and returns
    /// within [`SHUTDOWN_GRACE`]. Input goes through [`framing`], which answers what rmcp
    /// could not (oversized, unparsable or invalid messages).
    ///
    /// A message of more than `max_request_values` values (`serve --max-request-values`)
    /// is refused before any of them is built ([`framing::count_values`]).
    pub async fn serve_stdio(self, max_request_values: usize) -> Result<(), String> {
        self.serve_io_limited(tokio::io::stdin(), tokio::io::stdout(), terminated(), max_request_values).await
    }

    /// [`McpServer::serve_stdio`] over any byte streams, shutting down when `stop`
    /// completes too; messages of at most [`framing::DEFAULT_MAX_REQUEST_VALUES`] values.
    pub async fn serve_io<R, W>(
        self,
        input: R,
        output: W,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), String>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_io_limited(input, output, stop, framing::DEFAULT_MAX_REQUEST_VALUES).await
    }

    /// [`McpServer::serve_io`], messages of at most `max_request_values` values.
    pub async fn serve_io_limited<R, W>(
        mut self,
        input: R,
        output: W,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
        max_request_values: usize,
    ) -> Result<(), String>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use rmcp::ServiceExt;
        // Calls in flight are bounded on stdio too: each holds a thread while it runs.
        if self.calls.is_none() {
            self = self.with_queued_call_limit(DEFAULT_MAX_CALLS);
        }
        let (lines_tx, lines_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
        let shutdown = self.inner.shutdown.clone();
        let leftovers = self.for_session();
        // An output that cannot be written (closed, full) shuts the server down too.
        let queued = std::sync::Arc::new(pumps::Queued::default());
        let writer = tokio::spawn(pumps::write_output(output, lines_rx, shutdown.clone(), queued.clone()));
        // The requests rmcp was handed: each gets an answer, rmcp's or the stop's.
        let pending = std::sync::Arc::new(pumps::Pending::default());
        let (to_rmcp, rmcp_in) = tokio::io::duplex(64 * 1024);
        let (rmcp_out, from_rmcp) = tokio::io::duplex(64 * 1024);
        let input_done = {
            let (lines, down, pending) = (lines_tx.clone(), shutdown.subscribe(), pending.clone());
            tokio::spawn(pumps::pump_input(input, to_rmcp, lines, down, max_request_values, pending))
        };
        let output_done = tokio::spawn(pumps::pump_output(from_rmcp, lines_tx.clone(), pending.clone(), queued));
        // The end of input or a signal starts the shutdown.
        let starter = {
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = input_done => {}
                    () = stop => {}
                }
                shutdown.send_replace(true);
            })
        };
        // A client that reads none of its answers is not read either: past these, rmcp's
        // answers waiting to be written (each a task holding its whole message) stop it
        // reading more requests (`answers`; `pumps::OUTPUT_QUEUE_BYTES` bounds the lines
        // after them).
        let transport = crate::host::mcp_client::answers::Answering::with_bounds(
            rmcp::transport::async_rw::AsyncRwTransport::<rmcp::RoleServer, _, _>::new(rmcp_in, rmcp_out),
            (UNWRITTEN_ANSWERS, UNWRITTEN_ANSWER_BYTES),
            crate::host::mcp_client::answers::PastBounds::Wait,
        );
        let result = match self.serve(transport).await {
            Ok(running) => {
                let mut down = shutdown.subscribe();
                tokio::select! {
                    r = running.waiting() => r.map(|_| ()).map_err(|e| format!("MCP server: {e}")),
                    _ = async {
                        let _ = down.wait_for(|d| *d).await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                    } => Ok(()),
                }
            }
            // A client that leaves before the handshake ends is not an error of ours.
            Err(_) if *shutdown.borrow() => Ok(()),
            Err(e) => Err(format!("MCP initialization: {e}")),
        };
        shutdown.send_replace(true);
        starter.abort();
        leftovers.end_leftover_runs();
        // What rmcp wrote before it stopped goes out, then an error answer for each request
        // it was handed and did not answer; a stuck output does not hold the exit.
        let failed_write = tokio::time::timeout(Duration::from_millis(300), async {
            let _ = output_done.await;
            for answer in pending.unanswered() {
                if lines_tx.send(answer).await.is_err() {
                    break;
                }
            }
            drop(lines_tx);
            writer.await.ok().flatten()
        })
        .await
        .ok()
        .flatten();
        match failed_write {
            // The client closed its end of our output: it left, like the end of input.
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Some(e) => Err(format!("{OUTPUT_FAILED}: {e}")),
            None => result,
        }
    }
}

/// Completes on SIGTERM, SIGINT or SIGHUP (a service manager, Ctrl-C, a closed terminal):
/// each ends the server as the end of its input does, its calls cancelled and their
/// programs ended, its runs recorded. Never completes on platforms without signals; a
/// signal whose handler cannot be set keeps its default action.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        async fn recv(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        if term.is_some() || int.is_some() || hup.is_some() {
            tokio::select! {
                () = recv(&mut term) => {}
                () = recv(&mut int) => {}
                () = recv(&mut hup) => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await;
}
