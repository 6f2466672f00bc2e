//! The stdio server's tasks around rmcp: the input read line by line and judged
//! ([`super::framing`]) before rmcp gets it, rmcp's output written whole lines at a time (a
//! large answer's text spliced in as its line is written, [`super::spliced`]), and the
//! requests rmcp was handed but did not answer ([`Pending`]): when the server stops, each
//! request it read gets an answer — rmcp's, or the error [`SHUTTING_DOWN`] (a request still
//! in the pipe to rmcp, queued behind others, or read ahead in the input's buffer when the
//! stop came).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value as Json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::framing::{judge_limited, members, Verdict, ID_PREFIX_BYTES, MAX_MESSAGE_BYTES};

/// The message of the error a request read but not answered gets when the server stops.
pub(crate) const SHUTTING_DOWN: &str = "the server is shutting down: this request was read but not answered";

/// JSON-RPC's internal error, as rmcp answers a call stopped by the shutdown.
const INTERNAL_ERROR: i64 = -32603;

/// The requests handed to rmcp and not answered yet, by `id` (as JSON text; a client may
/// reuse an id, so each is counted).
#[derive(Default)]
pub(crate) struct Pending(Mutex<HashMap<String, (Json, usize)>>);

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Json, usize)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A message going to rmcp: a request is recorded; `notifications/cancelled` forgets the
    /// request it names (the protocol answers no cancelled request).
    pub(crate) fn forwarded(&self, line: &[u8]) {
        let m = members(line);
        match (m.method, m.id) {
            (true, Some(id)) => {
                self.lock().entry(id.to_string()).or_insert((id, 0)).1 += 1;
            }
            (true, None) => {
                if let Some(id) = cancelled_request(line) {
                    self.forget(&id);
                }
            }
            _ => {}
        }
    }

    /// A message rmcp wrote: a response's request is answered.
    pub(crate) fn answered(&self, line: &[u8]) {
        let m = members(line);
        if let (true, false, Some(id)) = (m.response, m.method, m.id) {
            self.forget(&id);
        }
    }

    fn forget(&self, id: &Json) {
        let mut pending = self.lock();
        let key = id.to_string();
        if let Some((_, n)) = pending.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                pending.remove(&key);
            }
        }
    }

    /// The error answers of the requests left unanswered, forgetting them (in the order of
    /// their ids' JSON text: the same requests give the same output).
    pub(crate) fn unanswered(&self) -> Vec<Vec<u8>> {
        let mut pending: Vec<(String, (Json, usize))> = self.lock().drain().collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        let mut answers = Vec::new();
        for (_, (id, n)) in pending {
            for _ in 0..n {
                answers.push(shutting_down(&id));
            }
        }
        answers
    }
}

/// The `params.requestId` of a `notifications/cancelled` (a small message: read whole).
fn cancelled_request(line: &[u8]) -> Option<Json> {
    if super::framing::top_level_scalar(line, "method")?.as_str()? != "notifications/cancelled" {
        return None;
    }
    let v: Json = serde_json::from_slice(line).ok()?;
    v.pointer("/params/requestId").filter(|id| id.is_string() || id.is_number()).cloned()
}

/// The error answer of request `id`: the server stopped before answering it.
fn shutting_down(id: &Json) -> Vec<u8> {
    let mut bytes = json!({"jsonrpc": "2.0", "id": id, "error": {"code": INTERNAL_ERROR, "message": SHUTTING_DOWN}})
        .to_string()
        .into_bytes();
    bytes.push(b'\n');
    bytes
}

/// The error answers of the whole requests in `buffer` (input read ahead, not yet judged):
/// the server read them and will not run them.
fn unread_answers(buffer: &[u8]) -> Vec<Vec<u8>> {
    let whole = match buffer.iter().rposition(|&b| b == b'\n') {
        Some(end) => &buffer[..end],
        None => return Vec::new(),
    };
    whole
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let m = members(line);
            (m.method && !m.response).then_some(m.id?).map(|id| shutting_down(&id))
        })
        .collect()
}

/// Reads `input` line by line: forwards the lines rmcp can take to `to_rmcp`, sends the
/// answers of the others to `out`. Returns at the end of `input`, on a read error, or when
/// `shutdown` turns true; `to_rmcp` is dropped then, which rmcp reads as the end of input.
pub(crate) async fn pump_input<R, W>(
    input: R,
    mut to_rmcp: W,
    out: mpsc::Sender<Vec<u8>>,
    mut shutdown: watch::Receiver<bool>,
    max_values: usize,
    pending: Arc<Pending>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    loop {
        let line = tokio::select! {
            line = read_line(&mut reader) => Some(line),
            _ = shutdown.wait_for(|down| *down) => None,
        };
        let Some(line) = line else { return answer_read_ahead(reader.buffer(), &out).await };
        let Some((line, oversized)) = line else { return };
        // What goes on to rmcp: the line as read, or a stand-in error for an answer that
        // cannot be read (its request fails at once); the framing's own answers go out.
        let mut bytes = match judge_limited(&line, oversized, max_values) {
            Verdict::Forward => {
                // Recorded before rmcp can see it: answered at the stop if rmcp does not.
                pending.forwarded(&line);
                line
            }
            Verdict::Unreadable(v) => serde_json::to_vec(&v).unwrap_or_default(),
            Verdict::Answer(v) => {
                let mut bytes = serde_json::to_vec(&v).unwrap_or_default();
                bytes.push(b'\n');
                if out.send(bytes).await.is_err() {
                    return;
                }
                continue;
            }
            Verdict::Ignore => continue,
        };
        bytes.push(b'\n');
        let sent = async {
            to_rmcp.write_all(&bytes).await?;
            to_rmcp.flush().await
        };
        let ok = tokio::select! {
            r = sent => r.is_ok(),
            _ = shutdown.wait_for(|down| *down) => false,
        };
        if !ok {
            return answer_read_ahead(reader.buffer(), &out).await;
        }
    }
}

/// At the stop: the whole requests read ahead into `buffer` are answered
/// ([`SHUTTING_DOWN`]).
async fn answer_read_ahead(buffer: &[u8], out: &mpsc::Sender<Vec<u8>>) {
    for answer in unread_answers(buffer) {
        if out.send(answer).await.is_err() {
            return;
        }
    }
}

/// One line without its newline, and whether it was longer than [`MAX_MESSAGE_BYTES`] (then
/// only its first [`ID_PREFIX_BYTES`] are kept); `None` at the end of input (a last line
/// without a newline still counts) or on a read error.
async fn read_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<(Vec<u8>, bool)> {
    let mut line = Vec::new();
    let mut oversized = false;
    let mut seen = 0usize;
    loop {
        let buf = match reader.fill_buf().await {
            Ok(b) => b,
            Err(_) => return None,
        };
        if buf.is_empty() {
            return (seen > 0).then_some((line, oversized));
        }
        let (chunk, used, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        seen += chunk.len() + usize::from(done);
        if !oversized && line.len() + chunk.len() > MAX_MESSAGE_BYTES {
            oversized = true;
            line.truncate(ID_PREFIX_BYTES);
        }
        if oversized {
            let room = ID_PREFIX_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..room.min(chunk.len())]);
        } else {
            line.extend_from_slice(chunk);
        }
        reader.consume(used);
        if done {
            return Some((line, oversized));
        }
    }
}

/// The most bytes of rmcp's lines queued to be written: past them, rmcp's output is not
/// read until the client reads some of its own (rmcp then holds its answers back, and reads
/// no more requests past a bound of its own: `stdio.rs`). The queue's 64 lines once held
/// 64 answers whole: 200 reads of a 14 MB `tdsl://tools` sent by a client that read none of
/// them held 3.3 GB (hostile round 15).
pub(crate) const OUTPUT_QUEUE_BYTES: usize = 16 * 1024 * 1024;

/// The bytes of rmcp's lines in the output queue, as [`pump_output`] counts them in and
/// [`write_output`] out.
#[derive(Debug, Default)]
pub(crate) struct Queued {
    bytes: Mutex<usize>,
    written: tokio::sync::Notify,
}

impl Queued {
    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Until the queue holds at most [`OUTPUT_QUEUE_BYTES`]; then counts `n` more in.
    async fn add(&self, n: usize) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            {
                let mut bytes = self.lock();
                if *bytes <= OUTPUT_QUEUE_BYTES {
                    *bytes = bytes.saturating_add(n);
                    return;
                }
            }
            written.await;
        }
    }

    /// A line of `n` bytes was written. Every line counts out, the framing's own answers too,
    /// which were not counted in: the count can only read low by what those lines hold (at
    /// most the queue's 64 lines), never high.
    fn written(&self, n: usize) {
        let mut bytes = self.lock();
        *bytes = bytes.saturating_sub(n);
        drop(bytes);
        self.written.notify_waiters();
    }
}

/// Copies rmcp's output, whole lines, to `out`, while `queued` has room.
pub(crate) async fn pump_output<R: AsyncRead + Unpin>(
    from_rmcp: R,
    out: mpsc::Sender<Vec<u8>>,
    pending: Arc<Pending>,
    queued: Arc<Queued>,
) {
    let mut reader = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                pending.answered(&line);
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                queued.add(line.len()).await;
                if out.send(line).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Writes every line it receives to `stdout`, flushing after each, until every sender is
/// gone (`None`) or a write fails: then `failed` is raised (the server shuts down: nobody can
/// hear it any more) and the error is returned.
pub(crate) async fn write_output<W: AsyncWrite + Unpin>(
    mut stdout: W,
    mut lines: mpsc::Receiver<Vec<u8>>,
    failed: tokio::sync::watch::Sender<bool>,
    queued: Arc<Queued>,
) -> Option<std::io::Error> {
    while let Some(line) = lines.recv().await {
        let queued_bytes = line.len();
        // A large answer's text goes in here, as the line is written ([`super::spliced`]):
        // until then the queue holds its marks, and the text is held once, within the bound
        // of the texts held (a client slow to read does not make the queue hold texts).
        let line = super::spliced::splice(line);
        let written = match stdout.write_all(&line).await {
            Ok(()) => stdout.flush().await,
            Err(e) => Err(e),
        };
        queued.written(queued_bytes);
        if let Err(e) = written {
            failed.send_replace(true);
            return Some(e);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(answers: &[Vec<u8>]) -> Vec<String> {
        let mut ids: Vec<String> = answers
            .iter()
            .map(|a| {
                let v: Json = serde_json::from_slice(a).expect("JSON");
                assert_eq!(v["error"]["message"], SHUTTING_DOWN, "{v}");
                v["id"].to_string()
            })
            .collect();
        ids.sort();
        ids
    }

    /// A request handed to rmcp and one read ahead behind it, when the stop comes: each
    /// gets the error answer; a notification gets none.
    #[test]
    fn every_request_read_is_answered_at_the_stop() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            // rmcp's end is never read: the first request's write waits, as rmcp busy would.
            let (to_rmcp, _rmcp) = tokio::io::duplex(1024);
            let (client, input) = tokio::io::duplex(1 << 20);
            let (out, mut answers) = mpsc::channel(16);
            let (down, shutdown) = watch::channel(false);
            let pending = Arc::new(Pending::default());
            let first = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"p":"{}"}}}}}}"#, "x".repeat(4096));
            let rest = "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
            let mut client = client;
            client.write_all(format!("{first}\n{rest}").as_bytes()).await.expect("written");
            let task = tokio::spawn(pump_input(input, to_rmcp, out, shutdown, usize::MAX, pending.clone()));
            while pending.lock().is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            down.send_replace(true);
            task.await.expect("the pump ends");
            let mut all = pending.unanswered();
            while let Ok(a) = answers.try_recv() {
                all.push(a);
            }
            assert_eq!(ids(&all), ["\"two\"", "1"]);
            drop(client);
        });
    }

    /// rmcp's answer forgets its request; a request of the server (its own `id` space) and a
    /// cancelled request leave nothing to answer; an id used twice is answered twice.
    #[test]
    fn answers_and_cancels_forget_their_requests() {
        let p = Pending::default();
        p.forwarded(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#);
        p.forwarded(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#);
        p.forwarded(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#);
        p.forwarded(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        p.answered(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#);
        p.answered(br#"{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage","params":{}}"#);
        p.forwarded(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#);
        assert_eq!(ids(&p.unanswered()), ["\"a\"", "\"a\""]);
        assert!(p.unanswered().is_empty());
    }
}
