//! A call whose run does not end once the server shuts down: answered and recorded anyway.
//!
//! At shutdown every call in flight is cancelled, and a run that reacts ends within
//! milliseconds: its steps cancelled, its answer sent, its end recorded by the run itself.
//! A run that does not react in time — a long built-in between two polls of its cancel, a
//! thread stuck in I/O — would leave its client without an answer and its run `RUNNING` in
//! the history. So the call waits for its run at most [`ABANDON_AFTER`] past the shutdown;
//! then it answers the cancelled error itself ([`cancelled_answer`]) and ends the run in
//! the history through [`RunEnding`]: the steps still running are recorded `CANCELLED`, the
//! run `FAILED` with `E0813`, and whatever the run's thread does later is not recorded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value as Json};

use crate::exec::{Event, Observer, StepStatus, Trace};
use crate::value::Value;

/// How long a call waits for its cancelled run once the server shuts down, before it
/// answers and records the run itself: below [`super::SHUTDOWN_GRACE`], so that the answer
/// goes out before the server stops writing.
pub(super) const ABANDON_AFTER: Duration = Duration::from_millis(1500);

/// Why a run was ended for it (the history's and the answer's words).
pub(super) const SHUTDOWN_MESSAGE: &str =
    "the run was cancelled: the server is shutting down, and the run did not stop within 1.5 s of its cancel";

/// The observer of one run, which the call can end in the run's place
/// ([`RunEnding::abandon`]). Filled in by the call when it makes the run's observers.
#[derive(Clone, Default)]
pub(super) struct RunEnding(Arc<Mutex<Slot>>);

/// The run's observer once the call made it, and whether the run was ended already: an
/// observer made after that hears nothing (the server stopped before the run started).
#[derive(Default)]
struct Slot {
    ended: Option<Arc<Ended>>,
    stopped: bool,
}

impl std::fmt::Debug for RunEnding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunEnding")
    }
}

impl RunEnding {
    /// `inner` (the run's recorder), wrapped so that it can be ended in the run's place.
    /// Wrapped after [`RunEnding::abandon`], it passes nothing on: a run that starts once
    /// the server stopped is not recorded (it would stay `RUNNING`).
    pub(super) fn wrap(&self, inner: Arc<dyn Observer>) -> Arc<dyn Observer> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let ended = Arc::new(Ended {
            inner,
            state: Mutex::default(),
            order: Mutex::default(),
            closed: AtomicBool::new(slot.stopped),
        });
        slot.ended = Some(ended.clone());
        ended
    }

    /// Ends the run in its place, when it started and has not ended: its running steps
    /// `CANCELLED`, itself `FAILED` (`E0813`, [`SHUTDOWN_MESSAGE`]). Later events of the run
    /// are dropped. When the run is writing its own start or end, that write ends first:
    /// once this returns, the run's end (its own, or this one) is written.
    pub(super) fn abandon(&self) {
        let ended = {
            let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            slot.stopped = true;
            slot.ended.clone()
        };
        if let Some(e) = ended {
            e.abandon();
        }
    }
}

/// What a run's observer saw, to end the run in its place.
#[derive(Default)]
struct Seen {
    /// `run_id`, tool, arguments and start of the run, once it started.
    started: Option<(String, String, Value, String)>,
    /// Steps started and not ended, in the order they started.
    running: Vec<String>,
    /// Whether the run ended (its own `RunEnded` went through).
    ended: bool,
}

struct Ended {
    inner: Arc<dyn Observer>,
    state: Mutex<Seen>,
    /// Held while the run's start or end is written, by the run or in its place: an end
    /// written in its place waits for the run's own start to be written (a run's end before
    /// its start would not be recorded), and the run's own end, being written, is waited
    /// for rather than taken for written (the process could exit before it is).
    order: Mutex<()>,
    /// Set when the run was ended in its place: nothing more is passed on.
    closed: AtomicBool,
}

impl Ended {
    fn abandon(&self) {
        let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        let (started, running) = {
            let mut seen = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if seen.ended || self.closed.swap(true, Ordering::SeqCst) {
                return;
            }
            (seen.started.take(), std::mem::take(&mut seen.running))
        };
        let Some((run_id, tool, arguments, started_at)) = started else { return };
        for step in &running {
            self.inner.event(&Event::StepEnded { step, status: StepStatus::Cancelled, reason: Some(SHUTDOWN_MESSAGE) });
        }
        if let Some(trace) = abandoned_trace(&run_id, &tool, &arguments, &started_at) {
            self.inner.event(&Event::RunEnded { trace: &trace });
        }
    }
}

impl Observer for Ended {
    fn event(&self, event: &Event<'_>) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        // The run's start and end are written under `order` (see there).
        let ordered = matches!(event, Event::RunStarted { .. } | Event::RunEnded { .. });
        let _order = ordered.then(|| self.order.lock().unwrap_or_else(PoisonError::into_inner));
        {
            let mut seen = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            match event {
                Event::RunStarted { run_id, tool, arguments, started_at } => {
                    seen.started =
                        Some((run_id.to_string(), tool.to_string(), (*arguments).clone(), started_at.to_string()));
                }
                Event::StepStarted { step, .. } => seen.running.push(step.to_string()),
                Event::StepEnded { step, .. } => seen.running.retain(|s| s != step),
                Event::RunEnded { .. } => seen.ended = true,
                _ => {}
            }
        }
        self.inner.event(event);
    }
}

/// The trace of a run ended in its place: `FAILED`, `E0813`, no steps (those that ran are
/// in the history already, from their own events).
fn abandoned_trace(run_id: &str, tool: &str, arguments: &Value, started_at: &str) -> Option<Trace> {
    let now = chrono::Utc::now();
    let started =
        chrono::DateTime::parse_from_rfc3339(started_at).map_or(now.timestamp_millis(), |t| t.timestamp_millis());
    let duration = u64::try_from(now.timestamp_millis().saturating_sub(started)).unwrap_or(0);
    let code = crate::diagnostic::Code::RunCancelled.as_str();
    let trace = json!({
        "format": crate::exec::trace::TRACE_FORMAT, "overall_status": "FAILED",
        "failure_summary": format!("{SHUTDOWN_MESSAGE} [{code}]"),
        "total_duration_ms": duration, "total_retries": 0, "circuit_breaker_trips": 0,
        "started_at": started_at, "completed_at": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "run_id": run_id, "tool": tool, "arguments": serde_json::to_value(arguments).unwrap_or(Json::Null),
        "error": {"code": code, "message": SHUTDOWN_MESSAGE}, "max_in_flight": 0, "step_results": [],
    });
    serde_json::from_value(trace).ok()
}

/// The answer to a call whose run was ended in its place: a tool error saying it was
/// cancelled, `run_plan`'s with its usual fields (`status: FAILED`, `failure_summary`).
pub(super) fn cancelled_answer(tool: &str) -> Json {
    let code = crate::diagnostic::Code::RunCancelled.as_str();
    let summary = format!("{SHUTDOWN_MESSAGE} [{code}]");
    if tool == super::plans::RUN_PLAN {
        let out = json!({"status": "FAILED", "result": null, "steps": [], "failure_summary": summary});
        let text = super::plans::answer_text(&out);
        return super::plans::structured(out, text, true);
    }
    super::served::tool_error(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Observer for Log {
        fn event(&self, event: &Event<'_>) {
            let line = match event {
                Event::RunStarted { tool, .. } => format!("start {tool}"),
                Event::StepStarted { step, .. } => format!("step {step}"),
                Event::StepEnded { step, status, .. } => format!("end {step} {}", status.as_str()),
                Event::RunEnded { trace } => {
                    format!("run {} {}", trace.status.as_str(), trace.error.as_ref().map_or("", |e| e.code.as_str()))
                }
                _ => "other".to_string(),
            };
            self.0.lock().unwrap_or_else(PoisonError::into_inner).push(line);
        }
    }

    fn started(o: &dyn Observer) {
        let args = Value::Null;
        o.event(&Event::RunStarted {
            run_id: "r1",
            tool: "run_plan",
            arguments: &args,
            started_at: "2026-11-30T10:00:00.000Z",
        });
        o.event(&Event::StepStarted { step: "a", tool: "t/x" });
        o.event(&Event::StepStarted { step: "b", tool: "" });
        o.event(&Event::StepEnded { step: "a", status: StepStatus::Completed, reason: None });
    }

    #[test]
    fn an_abandoned_run_is_ended_once_and_hears_nothing_after() {
        let log = Arc::new(Log::default());
        let ending = RunEnding::default();
        let observer = ending.wrap(log.clone());
        started(observer.as_ref());
        ending.abandon();
        ending.abandon();
        // The run's thread wakes up later: nothing of it is recorded.
        observer.event(&Event::StepEnded { step: "b", status: StepStatus::Completed, reason: None });
        let seen = log.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(
            seen,
            ["start run_plan", "step a", "step b", "end a COMPLETED", "end b CANCELLED", "run FAILED E0813"]
        );
    }

    #[test]
    fn a_run_that_ended_or_never_started_is_left_alone() {
        let log = Arc::new(Log::default());
        let ending = RunEnding::default();
        ending.abandon();
        let observer = ending.wrap(log.clone());
        ending.abandon();
        assert!(log.0.lock().unwrap_or_else(PoisonError::into_inner).is_empty());
        let log = Arc::new(Log::default());
        let ending = RunEnding::default();
        let observer2 = ending.wrap(log.clone());
        started(observer2.as_ref());
        let trace = abandoned_trace("r1", "run_plan", &Value::Null, "2026-11-30T10:00:00.000Z").expect("a trace");
        observer2.event(&Event::RunEnded { trace: &trace });
        ending.abandon();
        assert_eq!(log.0.lock().unwrap_or_else(PoisonError::into_inner).len(), 5);
        drop(observer);
    }

    /// The observer of a run whose thread does not come back once the run started a step
    /// (a run that does not react to its cancel), until the test ends: what it was told.
    #[derive(Debug)]
    struct Stuck {
        log: Arc<Log>,
        release: Arc<Mutex<std::sync::mpsc::Receiver<()>>>,
    }

    impl std::fmt::Debug for Log {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Log")
        }
    }

    impl Observer for Stuck {
        fn event(&self, event: &Event<'_>) {
            self.log.event(event);
            if let Event::StepStarted { .. } = event {
                let release = self.release.lock().unwrap_or_else(PoisonError::into_inner);
                let _ = release.recv_timeout(Duration::from_secs(60));
            }
        }
    }

    impl super::super::RunObservers for Stuck {
        fn for_run(&self) -> Arc<dyn Observer> {
            Arc::new(Stuck { log: self.log.clone(), release: self.release.clone() })
        }
    }

    /// What a test does once the stuck run started its step, before the server shuts down.
    #[derive(PartialEq)]
    enum Then {
        Stop,
        /// The client cancels the call first.
        Cancel,
        /// The server's stop ends the runs still out ([`McpServer::finish_runs`], as `serve`
        /// does last) while the call is still waiting for its run: the recorder must be
        /// told the run's end by the time it returns.
        EndRuns,
    }

    /// A server whose runs do not come back once they started a step, serving one call of
    /// `main` (then as `then` says), then shut down: the answer to the call (none when it
    /// was cancelled), and what the run's recorder was told.
    fn stuck_call(then: Then) -> (Option<Json>, Vec<String>) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().expect("a temp dir");
        let main = r#"{"instructions": [{"execution_id": "a", "transform_responses": {"variables": {},
            "transforms": {"x": "1"}}}]}"#;
        std::fs::write(dir.path().join("main.tool"), main).expect("the tool");
        let (server, skipped) = super::super::McpServer::load(dir.path(), &[]).expect("the server");
        assert!(skipped.is_empty(), "{skipped:?}");
        let log = Arc::new(Log::default());
        let (release, held) = std::sync::mpsc::channel::<()>();
        let stuck = Stuck { log: log.clone(), release: Arc::new(Mutex::new(held)) };
        let server = server.with_run_observers(Arc::new(stuck));
        let same = server.for_session();
        let finisher = server.for_session();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let watched = log.clone();
        let answer = runtime.block_on(async move {
            let (mut to_server, input) = tokio::io::duplex(1 << 16);
            let (output, from_server) = tokio::io::duplex(1 << 16);
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let serving = tokio::spawn(server.serve_io(input, output, async move {
                let _ = stop_rx.await;
            }));
            for m in [
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                    "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "main", "arguments": {}}}),
            ] {
                to_server.write_all(format!("{m}\n").as_bytes()).await.expect("write");
            }
            // The run is stuck in its step: then the server shuts down.
            let stepped = || watched.0.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|l| l == "step a");
            let waited = tokio::time::timeout(Duration::from_secs(30), async {
                while !stepped() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            waited.await.expect("the run to start its step");
            if then == Then::Cancel {
                let m = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
                to_server.write_all(format!("{m}\n").as_bytes()).await.expect("write");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if then == Then::EndRuns {
                assert!(same.finish_runs(Duration::from_secs(30)), "the runs' ends written");
                let ended =
                    || watched.0.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|l| l.starts_with("run "));
                assert!(ended(), "the run was not ended when the server stopped");
            }
            let _ = stop_tx.send(());
            let mut lines = tokio::io::BufReader::new(from_server).lines();
            let read = tokio::time::timeout(Duration::from_secs(30), async {
                while let Ok(Some(line)) = lines.next_line().await {
                    let m: Json = serde_json::from_str(&line).unwrap_or(Json::Null);
                    if m["id"] == 2 {
                        return Some(m);
                    }
                }
                None
            });
            let answer = read.await.ok().flatten();
            let _ = serving.await;
            answer
        });
        // As `serve` does last: every run's end written before the exit.
        assert!(finisher.finish_runs(Duration::from_secs(30)), "the runs' ends written");
        drop(release);
        let seen = log.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        (answer, seen)
    }

    /// At shutdown a run that does not stop is answered cancelled and ended in its
    /// recorder (`FAILED`, `E0813`, its running step `CANCELLED`), within the grace.
    #[test]
    fn a_run_that_does_not_stop_is_answered_and_ended_at_shutdown() {
        let (answer, seen) = stuck_call(Then::Stop);
        let answer = answer.expect("the call is answered");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(text.contains("cancelled") && text.ends_with("[E0813]"), "{answer}");
        assert_eq!(seen, ["start /main.tool", "step a", "end a CANCELLED", "run FAILED E0813"]);
    }

    /// A call its client cancelled gives its slot back before its run's thread comes back;
    /// when the server stops first, the run is ended in its place all the same.
    #[test]
    fn a_cancelled_run_that_does_not_stop_is_ended_at_shutdown() {
        let (answer, seen) = stuck_call(Then::Cancel);
        assert_eq!(answer, None, "a cancelled request is not answered");
        assert_eq!(seen, ["start /main.tool", "step a", "end a CANCELLED", "run FAILED E0813"]);
    }

    /// Outside round 11 (finding 5): the stop ends every run still out — not only those of
    /// calls their client cancelled — at once, even when its call is still waiting for it
    /// (a call the transport stopped waiting for is never polled again before the exit).
    #[test]
    fn the_stop_ends_every_run_still_out() {
        let (answer, seen) = stuck_call(Then::EndRuns);
        let answer = answer.expect("the call is answered");
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert_eq!(seen, ["start /main.tool", "step a", "end a CANCELLED", "run FAILED E0813"]);
    }

    /// A run whose observer is made once the server stopped (its call waited for a slot or an
    /// upstream meanwhile) records nothing: it would stay `RUNNING`.
    #[test]
    fn a_run_started_after_the_stop_is_not_recorded() {
        let log = Arc::new(Log::default());
        let ending = RunEnding::default();
        ending.abandon();
        let observer = ending.wrap(log.clone());
        started(observer.as_ref());
        assert!(log.0.lock().unwrap_or_else(PoisonError::into_inner).is_empty());
    }

    /// The recorder of a run whose own end (or start) takes time to write: `release` lets
    /// the write finish.
    struct SlowEnd {
        log: Arc<Log>,
        entered: std::sync::mpsc::Sender<()>,
        release: Mutex<std::sync::mpsc::Receiver<()>>,
    }

    impl Observer for SlowEnd {
        fn event(&self, event: &Event<'_>) {
            if matches!(event, Event::RunEnded { trace } if trace.error.is_none()) {
                let _ = self.entered.send(());
                let _ =
                    self.release.lock().unwrap_or_else(PoisonError::into_inner).recv_timeout(Duration::from_secs(60));
            }
            self.log.event(event);
        }
    }

    /// Outside round 11 (finding 5): a run writing its own end when the server stops is
    /// waited for: ending it in its place returns once that end is written (the process
    /// may exit then), and writes no second end.
    #[test]
    fn ending_a_run_in_its_place_waits_for_its_own_end_being_written() {
        let log = Arc::new(Log::default());
        let (entered, entering) = std::sync::mpsc::channel();
        let (release, held) = std::sync::mpsc::channel();
        let ending = RunEnding::default();
        let observer = ending.wrap(Arc::new(SlowEnd { log: log.clone(), entered, release: Mutex::new(held) }));
        started(observer.as_ref());
        let own: Trace = serde_json::from_value(json!({
            "format": crate::exec::trace::TRACE_FORMAT, "overall_status": "SUCCESS", "total_duration_ms": 1,
            "total_retries": 0, "circuit_breaker_trips": 0, "started_at": "2026-11-30T10:00:00.000Z",
            "completed_at": "2026-11-30T10:00:00.001Z", "run_id": "r1", "tool": "run_plan", "arguments": null,
            "max_in_flight": 1, "step_results": [],
        }))
        .expect("a trace");
        let run = std::thread::spawn(move || observer.event(&Event::RunEnded { trace: &own }));
        entering.recv_timeout(Duration::from_secs(30)).expect("the run to write its end");
        let (done, ended) = std::sync::mpsc::channel();
        let stopping = std::thread::spawn(move || {
            ending.abandon();
            let _ = done.send(());
        });
        assert!(
            ended.recv_timeout(Duration::from_millis(300)).is_err(),
            "the run was taken for ended before its end was written"
        );
        release.send(()).expect("release");
        ended.recv_timeout(Duration::from_secs(30)).expect("the stop to end");
        run.join().expect("the run");
        stopping.join().expect("the stop");
        let seen = log.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(seen, ["start run_plan", "step a", "step b", "end a COMPLETED", "run SUCCESS "]);
    }

    #[test]
    fn the_answer_says_cancelled() {
        let plan = cancelled_answer(super::super::plans::RUN_PLAN);
        assert_eq!(plan["isError"], true);
        assert_eq!(plan["structuredContent"]["status"], "FAILED");
        assert!(
            plan["structuredContent"]["failure_summary"].as_str().is_some_and(|s| s.ends_with("[E0813]")),
            "{plan}"
        );
        let served = cancelled_answer("main");
        assert!(served["content"][0]["text"].as_str().is_some_and(|s| s.contains("cancelled")), "{served}");
    }
}
