//! `tdsl run --engine temporal`: starts a run on the server and waits for its trace.

use temporalio_client::errors::WorkflowGetResultError;
use temporalio_client::{
    Client, HistoryEventFilterType, WorkflowCancelOptions, WorkflowFetchHistoryOptions, WorkflowGetResultOptions,
    WorkflowHandle, WorkflowQueryOptions, WorkflowStartOptions,
};
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

use super::worker::{connect, TdslWorkflow};
use super::{Connection, ProgressReport, RunInput, RunOutput, INTERPRETER_VERSION};
use crate::exec::Trace;

/// How long `tdsl run --engine temporal` keeps asking a server that went away.
const RECONNECT_FOR: std::time::Duration = std::time::Duration::from_secs(300);

/// A run that ended on the server (its workflow id and run id went to `started` when it
/// started).
#[derive(Debug)]
pub struct Finished {
    /// The run's trace.
    pub trace: Trace,
}

/// Starts `input` as a workflow and waits for it to end; `started` is told the workflow
/// and run ids as soon as the server has them. With `history`, the workflow's event
/// history is written there as JSON once it ended (what [`super::worker::replay`] reads).
/// Once `interrupted` says so (the user pressed Ctrl-C), the run is cancelled on the server
/// and its trace, cancelled steps included, is still awaited. `progress`, when given, is
/// told the run's progress (the workflow's `progress` query) four times a second, and once
/// more when the run ended.
pub async fn run(
    conn: &Connection,
    input: RunInput,
    history: Option<&std::path::Path>,
    started: impl FnOnce(&str, &str),
    interrupted: &(dyn Fn() -> bool + Sync),
    progress: Option<&(dyn Fn(&ProgressReport) + Sync)>,
) -> Result<Finished, String> {
    let client = connect(conn).await?;
    let workflow_id = format!(
        "tdsl-{}-{:x}",
        input.tool.trim_start_matches('/').replace('/', "."),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    );
    let handle = client
        .start_workflow(
            TdslWorkflow::run,
            input,
            WorkflowStartOptions::new(conn.task_queue.clone(), workflow_id.clone()).build(),
        )
        .await
        .map_err(|e| format!("cannot start the run on {} (--temporal-address): {e}", conn.address))?;
    let run_id = handle.run_id().map(str::to_string).unwrap_or_default();
    started(&workflow_id, &run_id);
    // The run lives on the server: while the server is away (a restart), keep asking, for up
    // to RECONNECT_FOR; a run that ended badly is an answer, not a reason to ask again.
    let mut lost_since: Option<std::time::Instant> = None;
    let mut cancel_sent = false;
    let until_interrupted = async {
        while !interrupted() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    tokio::pin!(until_interrupted);
    let mut since = 0u64;
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(250));
    let query = |since: u64| handle.query(TdslWorkflow::progress, since, WorkflowQueryOptions::default());
    let out = loop {
        // One wait for the result, kept across the ticks of progress and a cancel.
        let result = handle.get_result(WorkflowGetResultOptions::default());
        tokio::pin!(result);
        let got = loop {
            tokio::select! {
                got = &mut result => break got,
                () = &mut until_interrupted, if !cancel_sent => {
                    cancel_sent = true;
                    eprintln!("temporal: interrupted: cancelling the run {workflow_id}");
                    let reason =
                        WorkflowCancelOptions::builder().reason("tdsl run was interrupted".to_string()).build();
                    if let Err(e) = handle.cancel(reason).await {
                        eprintln!("temporal: cannot cancel the run {workflow_id}: {e}");
                    }
                }
                _ = ticker.tick(), if progress.is_some() => {
                    if let (Some(show), Ok(report)) = (progress, query(since).await) {
                        since = report.lines_total;
                        show(&report);
                    }
                }
            }
        };
        match got {
            Ok(out) => break out,
            // Cancelled from Temporal: the workflow's trace travels as the details.
            Err(WorkflowGetResultError::Cancelled { details }) => match details.deserialize::<RunOutput>() {
                Ok(out) => break out,
                Err(e) => {
                    return Err(format!(
                        "the run {workflow_id} (run id {run_id}) was cancelled, and left no trace: {e}"
                    ))
                }
            },
            // Terminated (by Temporal at one of its limits, or by an operator): the reason is
            // in the history's last event.
            Err(WorkflowGetResultError::Terminated { .. }) => {
                let why = match termination(&handle).await {
                    Ok(why) => why,
                    Err(e) => format!("its reason cannot be read: {e}"),
                };
                return Err(terminated(&workflow_id, &run_id, &why));
            }
            Err(e) if !e.is_workflow_outcome() => {
                let since = *lost_since.get_or_insert_with(|| {
                    eprintln!(
                        "temporal: lost the server at {} ({e}); the run goes on there, asking again",
                        conn.address
                    );
                    std::time::Instant::now()
                });
                if since.elapsed() > RECONNECT_FOR {
                    return Err(format!(
                        "the server at {} (--temporal-address) did not answer for {} s: {e}; the run {workflow_id} (run id {run_id}) may still be under way there",
                        conn.address,
                        RECONNECT_FOR.as_secs()
                    ));
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            Err(e) => return Err(format!("the run {workflow_id} (run id {run_id}) did not end with a trace: {e}")),
        }
    };
    if let (Some(show), Ok(report)) = (progress, query(since).await) {
        show(&report);
    }
    if let Some(path) = history {
        let json = handle
            .fetch_history(WorkflowFetchHistoryOptions::default())
            .to_json()
            .await
            .map_err(|e| format!("cannot read the history of {workflow_id}: {e}"))?;
        std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if out.interpreter != INTERPRETER_VERSION {
        eprintln!("warning: the worker's interpreter is v{}, this client's v{INTERPRETER_VERSION}", out.interpreter);
    }
    let trace = super::unpack_trace(&out.trace)?;
    Ok(Finished { trace })
}

/// The most characters of a termination's reason (and of who terminated the run) printed.
const REASON_CHARS: usize = 1_000;

/// Why a terminated run was terminated, from its history's close event: the reason, and who
/// terminated it (`history-service` for Temporal's own limits).
async fn termination<W: temporalio_common::HasWorkflowDefinition>(
    handle: &WorkflowHandle<Client, W>,
) -> Result<String, String> {
    let close = WorkflowFetchHistoryOptions::builder().event_filter_type(HistoryEventFilterType::CloseEvent).build();
    let events = handle.fetch_history(close).into_events().await.map_err(|e| e.to_string())?;
    events
        .iter()
        .rev()
        .find_map(|e| match &e.attributes {
            Some(Attributes::WorkflowExecutionTerminatedEventAttributes(a)) => {
                // Quoted and escaped, and cut short: it is anyone's text.
                let reason = format!("{:?}", a.reason.chars().take(REASON_CHARS).collect::<String>());
                Some(match a.identity.as_str() {
                    "" => reason,
                    who => format!("{reason} (by {:?})", who.chars().take(REASON_CHARS).collect::<String>()),
                })
            }
            _ => None,
        })
        .ok_or_else(|| "its history has no termination event".to_string())
}

/// The error of a run terminated on Temporal, `why` being [`termination`]'s answer. When
/// Temporal terminated it at one of its own limits, it is the limit's error (`E0815`) with
/// the flags that stop a run before them.
fn terminated(workflow_id: &str, run_id: &str, why: &str) -> String {
    let what = format!("the run {workflow_id} (run id {run_id}) was terminated on Temporal and left no trace: {why}");
    if why.contains("exceeds limit") {
        format!(
            "{what}; Temporal terminates a workflow whose history passes its limits (51,200 events, 50 MiB by \
             default): a run stops before them with a trace at --temporal-history-limit and --temporal-history-bytes, \
             which must be under the server's limits (limit.historyCount.error, limit.historySize.error) [{}]",
            crate::diagnostic::Code::EngineLimit.as_str()
        )
    } else {
        what
    }
}

#[cfg(test)]
mod tests {
    use super::terminated;

    #[test]
    fn a_run_terminated_at_temporals_limit_is_e0815_and_otherwise_says_why() {
        let limit = terminated("w", "r", "\"Workflow history size exceeds limit.\" (by \"history-service\")");
        assert!(limit.starts_with("the run w (run id r) was terminated on Temporal and left no trace: \"Workflow"));
        assert!(limit.contains("--temporal-history-bytes") && limit.ends_with("[E0815]"), "{limit}");
        let operator = terminated("w", "r", "\"maintenance\" (by \"ada\")");
        assert!(operator.ends_with("left no trace: \"maintenance\" (by \"ada\")"), "{operator}");
    }
}
