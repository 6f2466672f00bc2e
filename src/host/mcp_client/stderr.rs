//! A stdio server's standard error: read to its end, its last lines kept for the errors of
//! its failures ([`ToolError::stderr_tail`](crate::exec::ToolError::stderr_tail)).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// How many lines of a server's standard error are kept for error messages.
const STDERR_LINES: usize = 20;

/// How much of one line of a server's standard error is kept.
const STDERR_LINE_BYTES: usize = 1000;

/// How long an error waits for the reader to reach the end of a server's standard error
/// when the server's connection failed: a server that died wrote what explains it last,
/// and the connection's end can come before the reader has read it (under load, or after
/// megabytes of logs). A process the server left holding the pipe costs the wait, no more.
const LAST_WORDS_WAIT: Duration = Duration::from_secs(2);

/// The last lines a server wrote on its standard error.
#[derive(Debug, Default)]
pub(super) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    /// Set when the reader reached the end (the server and whatever it started closed it).
    ended: AtomicBool,
}

impl StderrTail {
    /// The tail of a server with no standard error to read (one reached over HTTP).
    pub(super) fn none() -> StderrTail {
        StderrTail { lines: Mutex::default(), ended: AtomicBool::new(true) }
    }

    /// Reads `stderr` to its end, keeping its last [`STDERR_LINES`] lines, each cut at
    /// [`STDERR_LINE_BYTES`] (invalid UTF-8 shown as `�`). It never stops reading before the
    /// end: a server blocked on a full pipe would hang (or die of `EPIPE`, as when a line
    /// that is not UTF-8 ended `lines()`), and a line without end is not held whole.
    pub(super) async fn read<R: tokio::io::AsyncRead + Unpin>(&self, stderr: R) {
        let mut reader = tokio::io::BufReader::with_capacity(16 * 1024, stderr);
        let mut line = Vec::new();
        let mut cut = false;
        loop {
            let (used, done) = match reader.fill_buf().await {
                Ok([]) | Err(_) => (0, true),
                Ok(buf) => {
                    let (chunk, used, end) = match buf.iter().position(|&b| b == b'\n') {
                        Some(i) => (&buf[..i], i + 1, true),
                        None => (buf, buf.len(), false),
                    };
                    let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                    cut |= chunk.len() > room;
                    line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    if end {
                        self.push(&mut line, &mut cut);
                    }
                    (used, false)
                }
            };
            if done {
                if !line.is_empty() {
                    self.push(&mut line, &mut cut);
                }
                self.ended.store(true, Ordering::SeqCst);
                return;
            }
            reader.consume(used);
        }
    }

    fn push(&self, line: &mut Vec<u8>, cut: &mut bool) {
        let mut text = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
        if std::mem::take(cut) {
            text.push('…');
        }
        line.clear();
        let mut l = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if l.len() == STDERR_LINES {
            l.pop_front();
        }
        l.push_back(text);
    }

    /// The lines kept so far, joined with ` | ` (empty when it wrote none): an error's
    /// `stderr_tail`.
    pub(super) fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(String::as_str).collect::<Vec<_>>().join(" | ")
    }

    /// [`StderrTail::text`] once the reader has reached the end, or [`LAST_WORDS_WAIT`] has
    /// passed: for a server whose connection just failed.
    pub(super) async fn last_words(&self) -> String {
        let _ = tokio::time::timeout(LAST_WORDS_WAIT, async {
            while !self.ended.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        self.text()
    }
}
