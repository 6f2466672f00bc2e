//! The limits of a workflow's history the interpreter keeps under Temporal's own: its events
//! (`--temporal-history-limit`) and the bytes of payloads it holds
//! (`--temporal-history-bytes`), checked before each call, batch and child workflow starts
//! (`E0815`, docs/distributed.md, "Temporal's limits").

use std::cell::Cell;

use temporalio_common::protos::temporal::api::failure::v1::{failure::FailureInfo, Failure as ProtoFailure};
use temporalio_sdk::ActivityExecutionError;

use super::Interp;

/// The bytes of a patch's marker besides its name (the marker's name and the patch's
/// `deprecated` flag, as the SDK writes them).
pub(super) const PATCH_MARKER_BYTES: usize = 48;

/// The bytes of payloads a workflow's history holds, as the workflow code itself sees them:
/// its own input, the patch markers it records, and the input and the answer (or failure)
/// of every activity and child workflow it starts, each as the JSON the SDK's converter
/// writes. Derived from the history alone (what the workflow was given and sent, never the
/// wall clock or the server's own account), so a replay counts the same bytes at the same
/// points. Temporal's own count (`limit.historySize.error`, 50 MiB) adds each event's few
/// hundred bytes of framing, which the room under it covers.
///
/// Counting adds no command: it can only make a call, a batch or a child workflow fail
/// `E0815` where it would otherwise have started. No history recorded before it existed
/// replays differently: their runs' inputs carry no `history_bytes` and read the default of
/// 40 MiB, which none of them comes near (the committed ones hold a few KiB; a run that had
/// passed 40 MiB of payloads was some 10 MiB from being terminated by Temporal).
#[derive(Default)]
pub(super) struct HistoryBytes(Cell<usize>);

impl HistoryBytes {
    pub(super) fn get(&self) -> usize {
        self.0.get()
    }

    pub(super) fn add(&self, bytes: usize) {
        self.0.set(self.0.get().saturating_add(bytes));
    }
}

/// The bytes of `value` as the SDK's JSON converter writes it (0 for what does not
/// serialize: it would not reach the history either).
pub(super) fn json_bytes<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |b| b.len())
}

/// The bytes a failure brings into the history: its messages, stack traces and details
/// along its chain of causes.
fn failure_bytes(failure: &ProtoFailure) -> usize {
    use temporalio_common::protos::temporal::api::common::v1::Payloads;
    let payloads = |p: Option<&Payloads>| {
        p.map_or(0, |p| {
            p.payloads
                .iter()
                .map(|x| x.data.len() + x.metadata.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>())
                .sum()
        })
    };
    let mut bytes = 0usize;
    let mut next = Some(failure);
    while let Some(f) = next {
        let details = match &f.failure_info {
            Some(FailureInfo::ApplicationFailureInfo(i)) => payloads(i.details.as_ref()),
            Some(FailureInfo::CanceledFailureInfo(i)) => payloads(i.details.as_ref()),
            Some(FailureInfo::TimeoutFailureInfo(i)) => payloads(i.last_heartbeat_details.as_ref()),
            _ => 0,
        };
        bytes = bytes.saturating_add(f.message.len() + f.stack_trace.len() + details);
        next = f.cause.as_deref();
    }
    bytes
}

/// The bytes a failed activity brings into the history.
pub(super) fn activity_error_bytes(e: &ActivityExecutionError) -> usize {
    e.failure().map_or_else(|| e.to_string().len(), failure_bytes)
}

impl Interp<'_> {
    /// Why no more calls can start in this workflow: its history reached the run's
    /// `history_limit`, or the `next` bytes of the input of the call, batch or child
    /// workflow about to start would take its payloads past `history_bytes`
    /// ([`HistoryBytes`]). The length is the history's at the current workflow task, the
    /// bytes those counted from the history: the same on every replay.
    pub(super) fn over_history_limit(&self, next: usize) -> Option<String> {
        let (events, limit) = (self.ctx.history_length(), self.input.options.history_limit);
        if events >= limit {
            return Some(format!(
                "the workflow's history has {events} events, at the run's limit of {limit} (--temporal-history-limit; \
                 Temporal stops a workflow at 51,200): about 3 events a call, so a run makes at most some 12,000 calls \
                 outside fan-outs, whose calls run in child workflows"
            ));
        }
        let (held, limit) = (self.history_bytes.get(), self.input.options.history_bytes);
        (held.saturating_add(next) > limit).then(|| {
            format!(
                "the workflow's history holds {held} bytes of payloads, and the next call's {next} bytes of input would \
                 pass the run's limit of {limit} bytes (--temporal-history-bytes; Temporal stops a workflow at 50 MiB): \
                 every call's arguments and answer stay in the history, so keep large data in files and pass their \
                 paths, or split the run"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use temporalio_common::protos::temporal::api::common::v1::{Payload, Payloads};
    use temporalio_common::protos::temporal::api::failure::v1::ApplicationFailureInfo;

    #[test]
    fn a_failure_counts_its_messages_and_details_down_its_causes() {
        let details = Payloads { payloads: vec![Payload { data: vec![b'x'; 100], ..Default::default() }] };
        let cause = ProtoFailure {
            message: "boom".to_string(),
            failure_info: Some(FailureInfo::ApplicationFailureInfo(ApplicationFailureInfo {
                details: Some(details),
                ..Default::default()
            })),
            ..Default::default()
        };
        let top =
            ProtoFailure { message: "activity failed".to_string(), cause: Some(Box::new(cause)), ..Default::default() };
        assert_eq!(failure_bytes(&top), "activity failed".len() + "boom".len() + 100);
        assert_eq!(json_bytes(&serde_json::json!({"a": 1})), r#"{"a":1}"#.len());
        let held = HistoryBytes::default();
        held.add(usize::MAX);
        held.add(1);
        assert_eq!(held.get(), usize::MAX, "saturates");
    }
}
