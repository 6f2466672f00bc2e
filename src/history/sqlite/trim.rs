//! One round of trimming a history past its size ([`SqliteStore::with_max_bytes`]): the
//! oldest ended runs deleted, never a run still running, the one that just ended, nor the
//! newest.

#[cfg(doc)]
use super::SqliteStore;
use rusqlite::{params, Connection};

/// The most runs one round deletes. A round is one transaction, which another process's
/// writers wait for: a bound lowered far under a large history is reached in rounds (20,000
/// runs of 24 KB, 470 MB, went in 2 s in one transaction of a debug build; a history of
/// hundreds of GB would hold the lock past the 30 s other writers wait).
pub(super) const ROUND_RUNS: i64 = 1000;

/// When the database's pages in use (`page_count − freelist_count`, times `page_size`) pass
/// `max` bytes, deletes the oldest ended runs but `keep` and the newest run, with their calls
/// and steps. The newest stays so that a history id is never given twice: SQLite numbers a
/// run one past the greatest id, so deleting the greatest (another process's run that had
/// just ended) gave its id to the next run, and `history show ID` showed another run. As many
/// as the share of the pages over the bound is of the runs (at least one, at most
/// [`ROUND_RUNS`]), so that a run past the bound costs one or two deletes. How many it
/// deleted: 0 when the pages are within the bound or no run may go.
pub(super) fn round(c: &Connection, keep: i64, max: i64) -> rusqlite::Result<usize> {
    let pragma = |name: &str| c.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0));
    let used = (pragma("page_count")? - pragma("freelist_count")?).saturating_mul(pragma("page_size")?);
    if used <= max {
        return Ok(0);
    }
    let runs: i64 = c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))?;
    let share = (i128::from(runs) * i128::from(used - max) + i128::from(used) - 1) / i128::from(used.max(1));
    let share = i64::try_from(share).unwrap_or(i64::MAX).clamp(1, ROUND_RUNS);
    c.prepare_cached(
        "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE status != 'RUNNING' AND id != ?1
           AND id != (SELECT max(id) FROM runs) ORDER BY id LIMIT ?2)",
    )?
    .execute(params![keep, share])
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::{round, ROUND_RUNS};
    use crate::history::{HistoryStore, NewRun, RunContext};

    fn begin(store: &SqliteStore, run_id: &str, arguments: &Value) -> i64 {
        let context = RunContext::new();
        let run =
            NewRun { run_id, tool: "/t.tool", arguments, started_at: "2030-01-01T00:00:00.000Z", context: &context };
        store.begin_run(&run).expect("begun")
    }

    fn trace(run_id: &str) -> Trace {
        Trace::from_json(&format!(
            r#"{{"format": "{}", "overall_status": "SUCCESS", "total_duration_ms": 0, "total_retries": 0,
                "circuit_breaker_trips": 0, "started_at": "2030-01-01T00:00:00.000Z",
                "completed_at": "2030-01-01T00:00:00.000Z", "run_id": "{run_id}", "tool": "/t.tool",
                "arguments": {{}}, "max_in_flight": 0, "step_results": []}}"#,
            crate::exec::trace::TRACE_FORMAT
        ))
        .expect("a trace")
    }

    /// A trim that failed rolled back the transaction it joined: the rows another run had
    /// written since the last commit (a server records several runs at once) went with its
    /// deletes. It commits them first now, and takes back only its own deletes. The trim
    /// fails here on a trigger that refuses deletes; in the field, on a full disk or a lock
    /// held elsewhere past the busy timeout.
    #[test]
    fn a_trim_that_fails_takes_back_only_its_own_deletes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.db");
        let mut store = SqliteStore::open(&path).expect("the store").with_max_bytes(1 << 20);
        // No background commit: what is written stays in the open transaction.
        store.shared.state.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
        store.shared.wake.notify_all();
        if let Some(flusher) = store.flusher.take() {
            flusher.join().expect("the flusher ends");
        }
        let big = Value::from("x".repeat(60_000).as_str());
        let arguments = Value::object_from([("text", big)]);
        Connection::open(&path)
            .expect("another connection")
            .execute_batch("CREATE TRIGGER held BEFORE DELETE ON runs BEGIN SELECT RAISE(ABORT, 'held'); END")
            .expect("the trigger");
        // Past the bound (each run's end tries to trim, and fails: best effort).
        for i in 0..30 {
            let run = begin(&store, &format!("old-{i}"), &arguments);
            store.end_run(run, &trace(&format!("old-{i}"))).expect("ended");
        }
        let going = begin(&store, "going", &Value::object_from::<&str>([]));
        store.step(going, "a", Some("/tools/t.tool"), "RUNNING", None).expect("a step");
        let e = store.trim(going).expect_err("the trigger refuses");
        assert!(e.0.contains("held"), "{e}");
        store.flush().expect("committed");
        let run = store.run(&going.to_string()).expect("read").expect("the run");
        assert_eq!(run.steps.len(), 1, "the running run's step went with the failed trim");
    }

    /// A bound lowered far under a large history is reached in rounds of at most
    /// [`ROUND_RUNS`] runs, each its own transaction: one transaction deleting them all held
    /// the write lock for as long as that took, and another process's writers give up after
    /// 30 s ("database is locked").
    #[test]
    fn a_round_deletes_at_most_its_share() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.db");
        drop(SqliteStore::open(&path).expect("created"));
        let c = Connection::open(&path).expect("the database");
        c.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
             INSERT INTO runs (run_id, tool, arguments, status, started_at, started_ms, trace)
             SELECT 'r' || i, '/t.tool', '{}', 'SUCCESS', 'x', 0, printf('%.*c', 1500, 'x') FROM n",
        )
        .expect("2,500 runs");
        let deleted = round(&c, 0, 1 << 20).expect("a round");
        assert_eq!(deleted, usize::try_from(ROUND_RUNS).expect("small"));
        let left: i64 = c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).expect("counted");
        assert_eq!(left, 1500);
    }
}
