//! The engine's runs of `benches/exec.rs` (`_inline`: a no-op runner the engine may call on
//! its worker) a fixed number of times, for instruction counts under callgrind:
//!
//! ```text
//! cargo bench --profile release --bench exec_count --no-run
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/deps/exec_count-* fan 10
//! ```
//!
//! Workloads: `chain` (1,000 steps, each reading the one before), `wide` (1,000 steps in one
//! level), `fan` (a fan-out of 10,000 children), each run `N` times after one warm-up run;
//! subtract the count of `N = 0` and divide by `N` × the steps or children of a run.

/// The allocator of the `tdsl` binary (src/main.rs), as in `benches/exec.rs`.
#[cfg(feature = "cli")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use tdsl::testing::exec::{
    Executor, Guards, ManualTime, NonBlocking, Options, RunStatus, ToolCall, ToolError, Workflow,
};
use tdsl::Value;

fn noop(call: &ToolCall<'_>) -> Result<Value, ToolError> {
    Ok(call.arguments.clone())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let workload = args.first().map_or("fan", String::as_str);
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let (main, input) = match workload {
        "chain" => (common::chain(1000), Value::object_from::<&str>([])),
        "wide" => (common::wide(1000), Value::object_from::<&str>([])),
        "fan" => (common::FAN_OUT.to_string(), common::items(10_000)),
        other => return eprintln!("unknown workload `{other}`: chain, wide, fan"),
    };
    let callee = r#"{"system_event_endpoint": "builtin:echo"}"#;
    let dir = common::tool_root(&format!("count-{workload}"), &[("tools/t.tool", callee), ("main.tool", &main)]);
    let wf = Workflow::load(&dir, &dir.join("main.tool")).unwrap_or_else(|e| panic!("{e}"));
    let options = Options { max_concurrency: 8, guards: Guards::new().max_fan_out(100_000), ..Options::default() };
    let ex = Executor::new(NonBlocking(noop)).with_time(Arc::new(ManualTime::new(0))).with_options(options);
    for _ in 0..=n {
        let r = ex.run(&wf, black_box(input.clone())).expect("not refused");
        assert_eq!(r.status, RunStatus::Success);
        black_box(r);
    }
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
