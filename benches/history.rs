//! Recording a run in the history (issue 28): a chain of 1,000 and of 20,000 steps run
//! with a no-op runner, each run recorded by a `Recorder` into a fresh SQLite history
//! (steps, invocations, the run's end and trace). Throughput is steps recorded per second;
//! with recording linear in the run's length the two are about the same. Also, once per
//! length, the same chains without a recorder, to give the history's share.
//!
//! `cargo bench --bench history` (results in `docs/performance.md`)

mod common;
use common::chain;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tdsl::testing::exec::{Executor, RunStatus, ToolCall, ToolError, Workflow};
use tdsl::testing::history::{HistoryStore, Recorder, RunContext, SqliteStore};
use tdsl::Value;

fn root(n: usize) -> PathBuf {
    let callee = r#"{"system_event_endpoint": "builtin:echo"}"#;
    common::tool_root(&format!("history-{n}"), &[("tools/t.tool", callee), ("main.tool", &chain(n))])
}

fn load(dir: &Path) -> Workflow {
    Workflow::load(dir, &dir.join("main.tool")).unwrap_or_else(|e| panic!("{e}"))
}

fn noop(call: &ToolCall<'_>) -> Result<Value, ToolError> {
    Ok(call.arguments.clone())
}

/// A fresh history file for one run.
fn fresh(dir: &Path, i: &mut u64) -> Arc<dyn HistoryStore> {
    *i += 1;
    let path = dir.join(format!("h-{i}.db"));
    Arc::new(SqliteStore::open(&path).expect("history opens"))
}

fn record(c: &mut Criterion) {
    let mut g = c.benchmark_group("history");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for n in [1_000usize, 20_000] {
        let dir = root(n);
        let wf = load(&dir);
        let dbs = dir.join("dbs");
        std::fs::create_dir_all(&dbs).expect("dbs dir");
        let mut i = 0;
        let mut context = RunContext::new();
        context.insert("cycle_id", "bench").expect("a valid key");
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("record_chain_{n}"), |b| {
            b.iter_batched(
                || fresh(&dbs, &mut i),
                |store| {
                    let recorder = Arc::new(Recorder::new(store.clone()).with_context(context.clone()));
                    let ex = Executor::new(noop).with_observer(recorder.clone());
                    let r = ex.run(&wf, Value::object_from::<&str>([])).expect("not refused");
                    assert_eq!(r.status, RunStatus::Success);
                    assert!(recorder.error().is_none(), "{:?}", recorder.error());
                    store
                },
                BatchSize::PerIteration,
            )
        });
        // The same chain without the history, once, for comparison.
        let ex = Executor::new(noop);
        let start = Instant::now();
        let r = ex.run(&wf, Value::object_from::<&str>([])).expect("not refused");
        assert_eq!(r.status, RunStatus::Success);
        println!("chain_{n} without history: {} ms", start.elapsed().as_millis());
        let _ = std::fs::remove_dir_all(&dir);
    }
    g.finish();
}

/// Not a criterion measurement: one timed run per length, with and without the history,
/// printed, to compare the growth (issue 28: 10,000 steps no more than about 5× 2,000).
fn lengths(_: &mut Criterion) {
    for n in [2_000usize, 10_000] {
        let dir = root(n);
        let wf = load(&dir);
        let mut i = 0;
        let store = fresh(&dir, &mut i);
        let recorder = Arc::new(Recorder::new(store));
        let start = Instant::now();
        let r = Executor::new(noop).with_observer(recorder.clone()).run(&wf, Value::object_from::<&str>([]));
        let with = start.elapsed();
        assert_eq!(r.expect("not refused").status, RunStatus::Success);
        assert!(recorder.error().is_none());
        let start = Instant::now();
        let r = Executor::new(noop).run(&wf, Value::object_from::<&str>([]));
        let without = start.elapsed();
        assert_eq!(r.expect("not refused").status, RunStatus::Success);
        println!("chain_{n}: {} ms with the history, {} ms without", with.as_millis(), without.as_millis());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

criterion_group!(benches, record, lengths);
criterion_main!(benches);
