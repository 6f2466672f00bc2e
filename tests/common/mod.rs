//! What the command-line tests share: running the real `tdsl` binary and reading the runs it
//! recorded; starting programs and waiting for them (`process`); `tdsl serve --mcp --plans`
//! with a minimal MCP client over its stdio (`mcp_stdio`), or `--listen` with a client of raw
//! HTTP (`http_raw`); scripted upstream MCP servers
//! (`upstream`); the Python MCP SDK's environment and client (`python`); the source
//! documents the workspace keeps beside the repository (`seeds`). `blocks.rs` is no module
//! of the tests: the checker's unit tests and benches `include!` it.

pub mod http_raw;
pub mod mcp_stdio;
pub mod process;
pub mod python;
pub mod seeds;
pub mod upstream;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// What a run of the binary printed and how it exited.
#[allow(dead_code)]
pub struct Out {
    /// The exit status (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Where the `tdsl` runs of tests keep their default run history: never the user's
/// `$XDG_DATA_HOME` (`.cargo/config.toml` sets the same for commands spawned elsewhere).
#[allow(dead_code)]
pub fn data_home() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-data-home")
}

/// The folder of one of the repository's examples.
#[allow(dead_code)]
pub fn example(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)
}

/// Runs `tdsl` with these arguments, without colour.
#[allow(dead_code)]
pub fn tdsl(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("XDG_DATA_HOME", data_home())
        .output()
        .expect("tdsl runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The recent runs of the history at `path` (20 at most), newest first as `tdsl history list`
/// shows them: (tool, status) each.
#[allow(dead_code)]
pub fn runs(path: &std::path::Path) -> Vec<(String, String)> {
    let out = tdsl(&["history", "list", "--history", path.to_str().expect("a UTF-8 path"), "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let runs = listed.as_array().cloned().unwrap_or_default();
    runs.iter()
        .map(|r| (r["tool"].as_str().unwrap_or("").to_string(), r["status"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Waits for a program the test started; past `watchdog` (a bound, not a timing) it is
/// killed and the test fails naming `what`.
#[allow(dead_code)]
pub fn wait_or_kill(child: &mut Child, watchdog: Duration, what: &str) {
    exit_or_kill(child, watchdog, what, String::new);
}

/// Waits for `child` to exit, its status; past `watchdog` it is killed and the test fails
/// naming `what`, with what `output` gives (its output so far) when that is not empty.
#[allow(dead_code)]
pub fn exit_or_kill(child: &mut Child, watchdog: Duration, what: &str, output: impl Fn() -> String) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{what}'s status: {e}")) {
            return status;
        }
        if start.elapsed() > watchdog {
            let _ = child.kill();
            let _ = child.wait();
            let output = output();
            let output = if output.is_empty() { output } else { format!(":\n{output}") };
            panic!("{what} did not finish within {} s{output}", watchdog.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The processor time this thread has spent, user and system (Linux's
/// `/proc/thread-self/stat`, in its ticks of 1/100 s; zero where it cannot be read).
#[allow(dead_code)]
pub fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // The fields after the command's name (which may hold spaces), from the third on:
    // utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest.split_whitespace().skip(11).take(2).filter_map(|f| f.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// Runs `f` on this thread and fails when it spent more than `limit` of processor time: a
/// guard against a hang or a blow-up, not a measure of speed (no timed assertion). Measured
/// in the thread's own processor time, so a loaded machine does not fail it (wall time
/// did: 9.75 s of work took over 45 s at a load of 15); the work must stay on this thread.
#[allow(dead_code)]
pub fn cpu_bounded<T>(what: &str, limit: Duration, f: impl FnOnce() -> T) -> T {
    let (start, wall) = (thread_cpu(), Instant::now());
    let out = f();
    let took = thread_cpu().saturating_sub(start);
    assert!(took < limit, "{what} took {took:?} of processor time ({:?} in all), more than {limit:?}", wall.elapsed());
    out
}

/// A plan answering `{v: x_depth}`, `x0 = [1]` and each `x_i = [x_{i-1}, x_{i-1}]`: a result
/// of `6 × 2^depth − 3` bytes of compact JSON (one small array per three bytes), built in no
/// time from shared parts — the large answer of the hostile rounds on answers' costs.
#[allow(dead_code)]
pub fn doubling_plan(depth: usize) -> serde_json::Value {
    let mut transforms = serde_json::Map::new();
    transforms.insert("x0".into(), serde_json::json!("[1]"));
    for i in 1..=depth {
        transforms.insert(format!("x{i}"), serde_json::json!(format!("[x{}, x{}]", i - 1, i - 1)));
    }
    serde_json::json!({"instructions": [{"execution_id": "g", "transform_responses": {"transforms": transforms}}],
        "response_reference_map": {"v": format!("REF:g.x{depth}")}})
}

/// `leaf` inside `depth` copies of `unit` (`(`, `[`, `{a: `, `f(`, `not `, `-`), each bracket
/// closed: the deepest programs of the nesting tests.
#[allow(dead_code)]
pub fn nested(unit: &str, depth: usize, leaf: &str) -> String {
    let close: String = unit
        .chars()
        .rev()
        .filter_map(|c| match c {
            '(' => Some(')'),
            '[' => Some(']'),
            '{' => Some('}'),
            _ => None,
        })
        .collect();
    format!("{}{leaf}{}", unit.repeat(depth), close.repeat(depth))
}
