//! The engine's overhead with a no-op runner: a 1,000-step chain, a 1,000-step wide level
//! and a 10,000-child fan-out; and a fan-out of slow tools (each sleeping 50 ms) under a
//! limit of 16, which should take about `ceil(n / 16) × 50 ms`.
//!
//! `cargo bench --bench exec` (results in `docs/performance.md`): with the default features
//! the bench allocates as the `tdsl` binary does (mimalloc), so the figures are `tdsl
//! run`'s; `cargo bench --no-default-features --features engine --bench exec` measures the
//! library on the system allocator, as an embedder that keeps it gets.

/// The allocator of the `tdsl` binary (src/main.rs).
#[cfg(feature = "cli")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;
use common::{chain, items, wide, FAN_OUT};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tdsl::testing::exec::{
    Executor, Guards, ManualTime, NonBlocking, Options, RunStatus, ToolCall, ToolError, Workflow,
};
use tdsl::Value;

fn root(name: &str, main: &str) -> PathBuf {
    let callee = r#"{"system_event_endpoint": "builtin:echo"}"#;
    common::tool_root(&format!("exec-{name}"), &[("tools/t.tool", callee), ("main.tool", main)])
}

fn load(dir: &Path) -> Workflow {
    Workflow::load(dir, &dir.join("main.tool")).unwrap_or_else(|e| panic!("{e}"))
}

fn noop(call: &ToolCall<'_>) -> Result<Value, ToolError> {
    Ok(call.arguments.clone())
}

fn executor(limit: usize, runner: impl tdsl::testing::exec::Runner + 'static) -> Executor {
    let options = Options { max_concurrency: limit, guards: Guards::new().max_fan_out(100_000), ..Options::default() };
    Executor::new(runner).with_time(Arc::new(ManualTime::new(0))).with_options(options)
}

/// Each workload twice: with the no-op closure, which may block as far as the engine knows
/// (every call crosses to a call thread and back), and with the same closure wrapped in
/// `NonBlocking` (`_inline`: the call runs on the worker).
fn overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("exec");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for (suffix, ex) in [("", executor(8, noop)), ("_inline", executor(8, NonBlocking(noop)))] {
        for (name, main, steps) in [("chain_1000", chain(1000), 1000u64), ("wide_1000", wide(1000), 1000)] {
            let id = format!("{name}{suffix}");
            let wf = load(&root(name, &main));
            g.throughput(Throughput::Elements(steps));
            g.bench_function(&id, |b| {
                b.iter(|| {
                    let r = ex.run(&wf, Value::object_from::<&str>([])).expect("not refused");
                    assert_eq!(r.status, RunStatus::Success);
                })
            });
        }
        let id = format!("fan_out_10000{suffix}");
        let wf = load(&root("fan", FAN_OUT));
        let args = items(10_000);
        g.throughput(Throughput::Elements(10_000));
        g.bench_function(&id, |b| {
            b.iter(|| {
                let r = ex.run(&wf, args.clone()).expect("not refused");
                assert_eq!(r.status, RunStatus::Success);
            })
        });
    }
    g.finish();
}

/// Not a criterion measurement: one timed run per width, printed, to compare with
/// `ceil(n / 16) × 50 ms`.
fn slow_fan_out(_: &mut Criterion) {
    let wf = load(&root("slow", FAN_OUT));
    let ex = executor(16, |call: &ToolCall<'_>| {
        std::thread::sleep(Duration::from_millis(50));
        Ok(call.arguments.clone())
    });
    for n in [16usize, 64, 100, 256] {
        let start = Instant::now();
        let r = ex.run(&wf, items(n)).expect("not refused");
        let took = start.elapsed();
        assert_eq!(r.status, RunStatus::Success);
        let ideal = n.div_ceil(16) as u64 * 50;
        println!("slow fan-out n={n:<4} took {:>5} ms, ideal ceil(n/16)×50 = {ideal} ms", took.as_millis());
    }
}

/// Not a criterion measurement: the CPU time a step or child costs (user and system, over
/// every thread of the process, from `getrusage`), next to the wall time, for the `_inline`
/// workloads: on a shared machine the CPU time moves less with the load than the wall time.
#[cfg(unix)]
fn cpu_per_step(_: &mut Criterion) {
    use nix::sys::resource::{getrusage, UsageWho};
    let cpu = || {
        getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
            let (a, b) = (u.user_time(), u.system_time());
            Duration::new(a.tv_sec() as u64, a.tv_usec() as u32 * 1000)
                + Duration::new(b.tv_sec() as u64, b.tv_usec() as u32 * 1000)
        })
    };
    let ex = executor(8, NonBlocking(noop));
    let empty = || Value::object_from::<&str>([]);
    let cases = [
        ("chain_1000_inline", load(&root("cpu-chain", &chain(1000))), empty(), 1000u32),
        ("wide_1000_inline", load(&root("cpu-wide", &wide(1000))), empty(), 1000),
        ("fan_out_10000_inline", load(&root("cpu-fan", FAN_OUT)), items(10_000), 10_000),
    ];
    for (name, wf, args, steps) in cases {
        let runs = 100_000 / steps;
        let (wall, before) = (Instant::now(), cpu());
        for _ in 0..runs {
            let r = ex.run(&wf, args.clone()).expect("not refused");
            assert_eq!(r.status, RunStatus::Success);
        }
        let (wall, used) = (wall.elapsed(), cpu().saturating_sub(before));
        let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(runs * steps);
        println!("{name:<22} {runs} runs: wall {:.2} µs, CPU {:.2} µs a step or child", per(wall), per(used));
    }
}

#[cfg(not(unix))]
fn cpu_per_step(_: &mut Criterion) {}

criterion_group!(benches, overhead, slow_fan_out, cpu_per_step);
criterion_main!(benches);
