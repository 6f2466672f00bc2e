//! The command line against hostile input and a hostile environment (issue 15): tools that
//! flood their output, hold their pipes or print bytes that are not UTF-8; signals in the
//! middle of a run; FIFOs and devices where files are expected; tampered traces; a closed
//! or full standard output. Every test runs the real binary, and every wait has a watchdog,
//! so a hang fails the test instead of stalling the suite.
#![cfg(unix)]

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = "tests/data/run";

/// Long enough for any of these commands on a loaded machine; it only proves "no hang".
const WATCHDOG: Duration = Duration::from_secs(30);

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdsl-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn tdsl() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    c.env("NO_COLOR", "1").stdin(Stdio::null());
    c
}

/// How a command ended.
#[derive(Debug)]
struct Ended {
    /// The exit status, or 128 + the signal that killed it.
    code: i32,
    stdout: String,
    stderr: String,
}

/// Waits for a child whose output pipes (if any) are read on threads, killing it (and
/// failing) if it outlives the watchdog.
fn finish(mut child: Child, what: &str) -> Ended {
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let mut bytes = Vec::new();
                let _ = p.read_to_end(&mut bytes);
                text = String::from_utf8_lossy(&bytes).into_owned();
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ended { code, stdout: out.join().expect("stdout"), stderr: err.join().expect("stderr") }
}

fn run(args: &[&str]) -> Ended {
    let child = tdsl().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("tdsl starts");
    finish(child, &args.join(" "))
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn read_json(path: &Path) -> serde_json::Value {
    json(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Whether a process is gone: no such process, or a zombie waiting for its parent (it has
/// ended; only its exit status is left).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (a few seconds at most) for every process to be gone; the ones left, if any.
fn left_alive(pids: &[u32]) -> Vec<u32> {
    let started = Instant::now();
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|&p| !gone(p)).collect();
        if alive.is_empty() || started.elapsed() > Duration::from_secs(5) {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pids_in(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// The largest resident set of any child of this process that has ended, in KiB.
fn children_peak_rss_kib() -> i64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).expect("getrusage").max_rss()
}

// ---- signals ----------------------------------------------------------------------------

/// `tdsl run` of a composite whose second step starts a tool that starts a process of its
/// own and waits; once both are up, the signal is sent.
fn signal_mid_run(signal: nix::sys::signal::Signal, expected: i32) {
    let dir = temp(&format!("signal-{}", signal.as_str()));
    let trace = dir.join("trace.json");
    let dir_arg = format!("dir={:?}", dir.to_str().expect("utf-8 path"));
    let child = tdsl()
        .args(["run", "tests/data/run/signal.tool", "--root", ROOT, "--arg", &dir_arg, "--trace"])
        .arg(&trace)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    let pids_file = dir.join("pids");
    let started = Instant::now();
    while pids_in(&pids_file).len() < 2 {
        assert!(started.elapsed() < WATCHDOG, "the slow tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let tool_pids = pids_in(&pids_file);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, signal).expect("signal sent");
    let o = finish(child, "tdsl run under a signal");

    assert_eq!(o.code, expected, "{}", o.stderr);
    assert_eq!(left_alive(&tool_pids), Vec::<u32>::new(), "the tool and what it started are gone");
    let t = read_json(&trace);
    let status = |id: &str| {
        let s = t["step_results"].as_array().expect("steps").iter().find(|s| s["step_id"] == id).expect("step");
        s["status"].as_str().expect("status").to_string()
    };
    assert_eq!(status("quick"), "COMPLETED", "a completed step is kept");
    assert_eq!(status("after"), "CANCELLED", "a step that had not started is cancelled");
    let slow = t["step_results"].as_array().expect("steps").iter().find(|s| s["step_id"] == "slow").expect("slow");
    assert_eq!(slow["attempts"][0]["outcome"], "cancelled", "{slow}");
    assert_eq!(status("slow"), "CANCELLED", "the step running when the signal came is cancelled, not failed: {slow}");
    assert!(o.stderr.contains("[E0813]"), "{}", o.stderr);
}

#[test]
fn sigterm_mid_run_ends_the_tools_writes_the_trace_and_exits_143() {
    signal_mid_run(nix::sys::signal::Signal::SIGTERM, 143);
}

#[test]
fn sigint_mid_run_exits_130() {
    signal_mid_run(nix::sys::signal::Signal::SIGINT, 130);
}

#[test]
fn sighup_mid_run_exits_129() {
    signal_mid_run(nix::sys::signal::Signal::SIGHUP, 129);
}

// ---- tool processes ---------------------------------------------------------------------

#[test]
fn a_timeout_ends_the_tools_whole_process_group() {
    let dir = temp("timeout-group");
    let dir_arg = format!("dir={:?}", dir.to_str().expect("utf-8 path"));
    let o = run(&["run", "tests/data/run/slow_timeout.tool", "--root", ROOT, "--arg", &dir_arg]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("[E0804]"), "{}", o.stderr);
    let pids = pids_in(&dir.join("pids"));
    assert_eq!(pids.len(), 2, "the tool and the process it started");
    assert_eq!(left_alive(&pids), Vec::<u32>::new(), "both are gone");
}

#[test]
fn a_tool_flooding_stdout_is_cut_off_at_the_cap() {
    let dir = temp("flood-out");
    let trace = dir.join("trace.json");
    let o = run(&[
        "run",
        "tests/data/run/out_flood.tool",
        "--root",
        ROOT,
        "--max-tool-output",
        "100000",
        "--trace",
        trace.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("printed more than 100000 bytes on standard output"), "{}", o.stderr);
    assert!(o.stderr.contains("[E0803]"), "{}", o.stderr);
    assert_eq!(read_json(&trace)["step_results"][0]["attempts"][0]["outcome"], "permanent");

    // At the default cap (64 MiB) too, and the memory used stays near the cap.
    let o = run(&["run", "tests/data/run/out_flood.tool", "--root", ROOT]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("printed more than 67108864 bytes"), "{}", o.stderr);
    let peak = children_peak_rss_kib();
    assert!(peak < 300 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn a_tool_flooding_stderr_leaves_a_bounded_tail_in_the_error_and_the_trace() {
    let dir = temp("flood-err");
    let trace = dir.join("trace.json");
    let o = run(&["run", "tests/data/run/err_flood.tool", "--root", ROOT, "--trace", trace.to_str().expect("path")]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    // 200 MB of standard error: the message keeps its end, with the last line.
    assert!(o.stderr.contains("bytes of standard error are left out]"), "{}", &o.stderr[..200.min(o.stderr.len())]);
    assert!(o.stderr.trim_end().ends_with("the last words) [E0803]"), "the tail is kept");
    assert!(o.stderr.len() < 70 * 1024, "the message is {} bytes", o.stderr.len());
    let t = read_json(&trace);
    let error = t["step_results"][0]["attempts"][0]["error"].as_str().expect("error");
    assert!(error.len() < 65 * 1024 + 300, "{} bytes", error.len());
    let size = std::fs::metadata(&trace).expect("trace").len();
    assert!(size < 1024 * 1024, "the trace is {size} bytes");
    let peak = children_peak_rss_kib();
    assert!(peak < 300 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn a_process_holding_the_tools_pipe_does_not_hold_the_attempt() {
    let dir = temp("held");
    let pid_file = dir.join("pid");
    let child = tdsl()
        .args(["run", "tests/data/run/held_pipe.tool", "--root", ROOT])
        .env("TDSL_HELD_PID_FILE", &pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    let started = Instant::now();
    let o = finish(child, "a held pipe");
    // The process sleeps for 60 s: the attempt ended after the grace period instead.
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"call": {"ok": true}}"#));
    let held = pids_in(&pid_file);
    assert_eq!(held.len(), 1, "the tool recorded the process it left");
    assert_eq!(left_alive(&held), Vec::<u32>::new(), "the process holding the pipe was killed");
}

/// A tool that leaves a process in a session of its own (`setsid`) escapes the kill of its
/// process group; `tdsl run` adopts it (subreaper) and ends it before it exits.
#[test]
fn a_process_that_left_the_tools_session_is_ended_with_the_run() {
    let dir = temp("escaped");
    let pid_file = dir.join("escaped.pid");
    let child = tdsl()
        .args(["run", "tests/data/run/escaped.tool", "--root", ROOT])
        .env("TDSL_ESCAPED_PID_FILE", &pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    let o = finish(child, "an escaped process");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"call": {"ok": true}}"#));
    let escaped = pids_in(&pid_file);
    assert_eq!(escaped.len(), 1, "the tool recorded the process it left");
    assert_eq!(left_alive(&escaped), Vec::<u32>::new(), "the process in its own session was ended");
}

#[test]
fn invalid_utf8_on_stdout_is_an_error_naming_the_tool() {
    let o = run(&["run", "tests/data/run/bad_utf8.tool", "--root", ROOT]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("`/tools/bad_utf8.tool`: "), "{}", o.stderr);
    assert!(o.stderr.contains("printed invalid UTF-8 on standard output (at byte 4)"), "{}", o.stderr);
}

// ---- special files ----------------------------------------------------------------------

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_or_a_device_is_never_read_as_a_file() {
    let dir = temp("fifo");
    let fifo = dir.join("main.tool");
    mkfifo(&fifo);
    let zero = dir.join("zero.tool");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
    let (f, z, d) = (fifo.to_str().expect("path"), zero.to_str().expect("path"), dir.to_str().expect("path"));
    let echo = "tests/data/run/echo.tool";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["check", f], "FIFO"),
        (vec!["check", z], "a device"),
        (vec!["check", "--format", "json", f], "FIFO"),
        (vec!["graph", f], "FIFO"),
        (vec!["export", "--format", "mcp", "--root", d, f], "FIFO"),
        // Its real path is `/dev/zero`, outside the root.
        (vec!["export", "--format", "openai", "--root", d, z], "not under the tool root"),
        (vec!["replay", f], "FIFO"),
        (vec!["replay", z], "a device"),
        (vec!["run", f], "FIFO"),
        (vec!["run", z, "--root", d], "a device"),
        // Named by tool path under the root.
        (vec!["run", "/main.tool", "--root", d], "FIFO"),
        (vec!["graph", "/zero.tool", "--root", d], "a device"),
        (vec!["eval", "1", "--vars", f], "FIFO"),
        (vec!["eval", "1", "--vars", z], "a device"),
        (vec!["run", echo, "--root", ROOT, "--args", f], "FIFO"),
        (vec!["run", echo, "--root", ROOT, "--mock", f], "FIFO"),
        (vec!["run", echo, "--root", ROOT, "--args", z], "a device"),
    ];
    for (args, kind) in &cases {
        let o = run(args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        let kind = match *kind {
            "FIFO" => "it is a FIFO (named pipe), not a regular file",
            "a device" => "it is a device, not a regular file",
            other => other,
        };
        assert!(o.stderr.contains(kind), "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
    }
    // `serve` leaves such files out, with a warning, and serves the rest.
    let o = run(&["serve", "--mcp", "--root", d]);
    assert!(o.stderr.contains("not served: /main.tool: it is a FIFO (named pipe), not a regular file"), "{}", o.stderr);
    assert!(o.stderr.contains("serving 0 tool(s)"), "{}", o.stderr);
}

#[test]
fn a_tool_file_that_is_not_utf8_is_e0501() {
    let dir = temp("utf8");
    let file = dir.join("bad.tool");
    std::fs::write(&file, b"{\"instructions\": [\"caf\xe9\"]}").expect("write");
    let o = run(&["check", file.to_str().expect("path")]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("E0501"), "{}", o.stderr);
    assert!(o.stderr.contains("the file is not valid UTF-8: byte 22 starts an invalid sequence"), "{}", o.stderr);
    let o = run(&["check", "--format", "json", file.to_str().expect("path")]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let diags = json(&o.stdout);
    assert_eq!(diags[0]["code"], "E0501", "{diags}");
    assert_eq!((diags[0]["line"].as_u64(), diags[0]["column"].as_u64()), (Some(1), Some(23)));
}

// ---- replay -----------------------------------------------------------------------------

/// A root with a composite, and a trace of a run of it.
fn recorded(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp(name);
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("tools/bin")).expect("root");
    for f in ["tools/echo.tool", "tools/builtin_echo.tool", "tools/bin/echo.sh", "echo.tool"] {
        std::fs::copy(format!("{ROOT}/{f}"), root.join(f)).expect("copy");
    }
    let trace = dir.join("trace.json");
    let o = run(&[
        "run",
        root.join("echo.tool").to_str().expect("path"),
        "--root",
        root.to_str().expect("path"),
        "--arg",
        r#"name="ada""#,
        "--trace",
        trace.to_str().expect("path"),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    (root, trace)
}

#[test]
fn replay_reads_the_composite_from_the_root_given_never_from_the_trace() {
    let (root, trace) = recorded("replay-tampered");
    let outside = root.parent().expect("dir").join("secret.tool");
    std::fs::write(&outside, "TOP-SECRET-LINE\n").expect("secret");
    let mut t = read_json(&trace);
    t["file"] = serde_json::Value::String(outside.to_str().expect("path").to_string());
    t["root"] = serde_json::Value::String("/".to_string());
    std::fs::write(&trace, t.to_string()).expect("tamper");
    let trace_arg = trace.to_str().expect("path");

    // With the root given, the trace's `file` and `root` are ignored: the replay matches.
    let o = run(&["replay", trace_arg, "--root", root.to_str().expect("path")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("replay matches the recording (SUCCESS)"), "{}", o.stderr);

    // Without it, the root is the current directory, where there is no `/echo.tool`.
    let o = run(&["replay", trace_arg]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("is not under the tool root"), "{}", o.stderr);
    assert!(!o.stderr.contains("TOP-SECRET"), "{}", o.stderr);

    // A tool path that climbs out of the root is refused.
    t["tool"] = serde_json::Value::String("/../secret.tool".to_string());
    std::fs::write(&trace, t.to_string()).expect("tamper");
    let o = run(&["replay", trace_arg, "--root", root.to_str().expect("path")]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("leaves the tool root"), "{}", o.stderr);
    assert!(!o.stderr.contains("TOP-SECRET"), "{}", o.stderr);

    // So is a symbolic link inside the root that leads out of it.
    std::os::unix::fs::symlink(&outside, root.join("link.tool")).expect("symlink");
    t["tool"] = serde_json::Value::String("/link.tool".to_string());
    std::fs::write(&trace, t.to_string()).expect("tamper");
    let o = run(&["replay", trace_arg, "--root", root.to_str().expect("path")]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("leads out of the tool root"), "{}", o.stderr);
    assert!(!o.stderr.contains("TOP-SECRET"), "{}", o.stderr);
}

#[test]
fn a_file_that_is_not_a_trace_is_not_quoted() {
    let dir = temp("not-a-trace");
    for (name, text) in [
        ("text.json", "TOP-SECRET-LINE\nmore\n"),
        ("string.json", r#""TOP-SECRET-LINE""#),
        ("object.json", r#"{"format": "TOP-SECRET-LINE", "tool": 1}"#),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write");
        let o = run(&["replay", file.to_str().expect("path")]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains("not a trace"), "{}", o.stderr);
        assert!(!o.stderr.contains("TOP-SECRET"), "{name}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    }
}

// ---- a closed or full standard output ---------------------------------------------------

/// Every subcommand that prints, with what it prints on success (and its exit status).
fn printing_commands(dir: &Path) -> Vec<(Vec<String>, Option<&'static str>, i32)> {
    let (root, trace) = recorded(&format!("{}-printing", dir.file_name().and_then(|n| n.to_str()).unwrap_or("x")));
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_string()).collect::<Vec<_>>();
    let root = root.to_str().expect("path").to_string();
    let echo = format!("{root}/echo.tool");
    vec![
        (s(&["eval", "range(0, 100000)"]), None, 0),
        (s(&["eval", "range(0, 10)", "--emit", "bytecode"]), None, 0),
        (s(&["run", &echo, "--root", &root, "--arg", r#"name="ada""#]), None, 0),
        (s(&["check", "--format", "json", &echo, "--root", &root]), None, 0),
        (s(&["graph", &echo, "--root", &root]), None, 0),
        (s(&["export", "--format", "openai", "--root", &root, &echo]), None, 0),
        (s(&["replay", trace.to_str().expect("path"), "--root", &root]), None, 0),
        (s(&["repl"]), Some("1 + 1\nrange(0, 3)\n:type 1\n"), 0),
    ]
}

fn spawn_with_stdout(args: &[String], input: Option<&str>, stdout: Stdio) -> Child {
    let mut c = tdsl();
    c.args(args).stdout(stdout).stderr(Stdio::piped());
    if input.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn().expect("tdsl starts");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        use std::io::Write;
        stdin.write_all(text.as_bytes()).expect("input");
    }
    child
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = temp("closed");
    for (args, input, code) in printing_commands(&dir) {
        // The reading end is closed before the command starts: every write fails (EPIPE).
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let o = finish(spawn_with_stdout(&args, input, Stdio::from(writer)), &args.join(" "));
        assert!(o.code == code || o.code == 141, "{args:?}: exit {}: {}", o.code, o.stderr);
        assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("standard output"), "{args:?}: quiet: {}", o.stderr);
    }
}

#[test]
fn head_1_takes_the_first_line_and_the_command_ends() {
    let bin = env!("CARGO_BIN_EXE_tdsl");
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!("'{bin}' eval 'range(0, 100000)' | head -1; echo \"status ${{?}}\""))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let o = finish(child, "eval | head -1");
    assert_eq!(o.stdout, "[\nstatus 0\n");
    assert_eq!(o.stderr, "", "no panic, no message");
}

#[test]
fn a_full_stdout_is_exit_1_with_one_line() {
    let dir = temp("full");
    for (args, input, _) in printing_commands(&dir) {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let o = finish(spawn_with_stdout(&args, input, Stdio::from(full)), &args.join(" "));
        assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
        assert_eq!(
            o.stderr, "error: cannot write to standard output: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
}

#[test]
fn too_many_open_files_when_starting_a_tool_is_transient() {
    let dir = temp("emfile");
    let trace = dir.join("trace.json");
    let bin = env!("CARGO_BIN_EXE_tdsl");
    // Six descriptors are enough to read the files, not to open the tool's three pipes
    // (with no run history: its database would hold three more).
    let script = format!(
        "ulimit -n 6; exec '{bin}' run tests/data/run/echo.tool --root {ROOT} --arg 'name=\"a\"' --no-history --trace '{}'",
        trace.display()
    );
    let child = Command::new("sh").arg("-c").arg(script).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let o = finish(child.expect("sh starts"), "tdsl under ulimit -n 6");
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("Too many open files"), "{}", o.stderr);
    let t = read_json(&trace);
    assert_eq!(t["step_results"][0]["attempts"][0]["outcome"], "transient", "{t}");
}

#[test]
fn a_closed_stderr_is_not_a_panic_either() {
    let dir = temp("closed-stderr");
    let bad = dir.join("bad.tool");
    std::fs::write(&bad, r#"{"instructions": [{"execution_id": "a", "tool_definition_path": 1}]}"#).expect("write");
    let bad = bad.to_str().expect("path");
    let cases: [(&[&str], i32); 5] = [
        (&["check", bad], 1),
        (&["check", "/nonexistent/x.tool"], 2),
        (&["eval", "nope(1)"], 1),
        (&["run", "tests/data/run/broken.tool", "--root", ROOT], 1),
        (&["replay", "/nonexistent/trace.json"], 2),
    ];
    for (args, code) in cases {
        // Both outputs are pipes whose reader is gone (a panic would exit 101).
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let err = writer.try_clone().expect("clone");
        let child = tdsl().args(args).stdout(Stdio::from(writer)).stderr(Stdio::from(err)).spawn();
        let o = finish(child.expect("tdsl starts"), &args.join(" "));
        assert_eq!(o.code, code, "{args:?}");
    }
}

// ---- an MCP cancel stops a running transform --------------------------------------------

/// CPU time (user + system) a live process has used so far, in clock ticks; `None` once it
/// is gone.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime field 14, stime field 15 (1-based).
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A root whose `main.tool` runs, in its only step's `transform_arguments`, about 10^9
/// iterations over the 1000 integers `xs` it is given: no memory to speak of, so only the
/// fuel limit (or an interrupt) ends it.
fn burning_root(name: &str) -> PathBuf {
    let dir = temp(name);
    std::fs::create_dir_all(dir.join("tools")).expect("mkdir");
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("write");
    std::fs::write(
        dir.join("main.tool"),
        r#"{"description": "Burns CPU in a transform",
  "arguments": [{"name": "xs", "type_name": "list<integer>", "required": true}],
  "instructions": [
    {"execution_id": "burn", "tool_definition_path": "/tools/echo.tool", "arguments": {"xs": "REF:arguments.xs"},
     "transform_arguments": {"transforms": {
       "n": "count(xs, condition_string=count(xs, condition_string=count(xs, condition_string=true) > 0) > 0)"}}}
  ]}"#,
    )
    .expect("write");
    dir
}

/// One JSON-RPC message a line, read on a thread so that every read has a watchdog.
struct Mcp {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl Mcp {
    fn start(root: &Path) -> Mcp {
        use std::io::BufRead;
        let mut child = tdsl()
            .args(["serve", "--mcp", "--root"])
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tdsl serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(json(&line)).is_err() {
                    break;
                }
            }
        });
        let mut s = Mcp { child, stdin, lines };
        s.send(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
        s.answer(0);
        s.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, msg: &serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The response to request `id` (other messages are dropped), within the watchdog.
    fn answer(&mut self, id: u64) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let left = WATCHDOG.checked_sub(started.elapsed()).unwrap_or_default();
            let msg = self.lines.recv_timeout(left).unwrap_or_else(|e| panic!("no answer to request {id}: {e}"));
            if msg["id"] == serde_json::json!(id) {
                return msg;
            }
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CPU ticks `pid` used until it stops using any (two readings 500 ms apart with at
/// most one tick between them), within the watchdog.
fn ticks_when_idle(pid: u32) -> u64 {
    let started = Instant::now();
    let mut last = cpu_ticks(pid).expect("alive");
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = cpu_ticks(pid).expect("alive");
        if now.saturating_sub(last) <= 1 {
            return now;
        }
        assert!(started.elapsed() < WATCHDOG, "still burning CPU after {WATCHDOG:?}");
        last = now;
    }
}

/// An MCP client cancels a call whose composite runs a long transform: the server stops
/// burning CPU for it at once, and answers the next call. "At once" is measured against
/// the same transform run to its end (the fuel limit) by `tdsl run`: the cancelled call
/// uses a fraction of that CPU time, so a transform left running after the cancel fails
/// the test however fast or loaded the machine is.
#[test]
fn an_mcp_cancel_stops_a_running_transform() {
    let root = burning_root("mcp-cancel-transform");
    let xs = serde_json::Value::from((0..1000).collect::<Vec<i64>>());

    // The whole transform, to the fuel limit, through `tdsl run`.
    let mut full = tdsl()
        .args(["run", "main.tool", "--root"])
        .arg(&root)
        .arg("--arg")
        .arg(format!("xs={xs}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl run starts");
    let (mut full_ticks, started) = (0, Instant::now());
    while full.try_wait().expect("wait").is_none() {
        full_ticks = cpu_ticks(full.id()).unwrap_or(full_ticks).max(full_ticks);
        assert!(started.elapsed() < WATCHDOG * 4, "the transform never ran out of fuel");
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = finish(full, "tdsl run to the fuel limit");
    assert!(o.stderr.contains("E0401"), "the transform runs out of fuel: {}", o.stderr);
    assert!(full_ticks >= 20, "the transform takes long enough to measure: {full_ticks} ticks");

    let mut s = Mcp::start(&root);
    let pid = s.child.id();
    let before = cpu_ticks(pid).expect("alive");
    s.send(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "main", "arguments": {"xs": xs}}}));
    // Cancelled once the transform has burnt a tenth of what it needs.
    let started = Instant::now();
    while cpu_ticks(pid).expect("alive") < before + full_ticks / 10 {
        assert!(started.elapsed() < WATCHDOG, "the call never started burning CPU");
        std::thread::sleep(Duration::from_millis(5));
    }
    s.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 1, "reason": "enough"}}));
    let used = ticks_when_idle(pid) - before;
    eprintln!("the cancelled call used {used} ticks; the whole transform takes {full_ticks}");
    assert!(used < full_ticks / 2, "the call used {used} ticks of the {full_ticks} the whole transform takes");
    // The server goes on: the next request is answered.
    s.send(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let list = s.answer(2);
    assert!(list["result"]["tools"].is_array(), "{list}");
}

// ---- `serve --mcp` with a closed or full standard output --------------------------------

/// `serve --mcp` whose standard output is `stdout`, sent an `initialize` request (so that it
/// has something to write); its input stays open unless `close_input`.
fn serve_with_stdout(name: &str, stdout: Stdio, close_input: bool) -> Ended {
    use std::io::Write;
    let dir = temp(name);
    std::fs::create_dir_all(dir.join("tools")).expect("mkdir");
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("write");
    let mut child = tdsl()
        .args(["serve", "--mcp", "--root"])
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let init = r#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}"#;
    let _ = writeln!(stdin, "{init}");
    let _ = stdin.flush();
    // Held open until the command has ended, unless closed now.
    let keep = (!close_input).then_some(stdin);
    let o = finish(child, "tdsl serve --mcp");
    drop(keep);
    o
}

#[test]
fn serve_with_a_closed_stdout_ends_quietly() {
    for close_input in [false, true] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let o = serve_with_stdout("serve-closed", Stdio::from(writer), close_input);
        assert!(o.code == 0 || o.code == 141, "exit {}: {}", o.code, o.stderr);
        // Only the line saying what it serves: no error, no panic.
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.starts_with("tdsl: serving 1 tool(s)"), "{}", o.stderr);
    }
}

#[test]
fn serve_with_a_full_stdout_is_exit_1_with_one_line() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    // Its input stays open: the failed write alone ends it.
    let o = serve_with_stdout("serve-full", Stdio::from(full), false);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(
        lines[1..],
        ["error: cannot write to standard output: No space left on device (os error 28)"],
        "{}",
        o.stderr
    );
}

/// What a diagnostic echoes from its input (a step id, a tool path, a REF, the source line
/// itself) reaches the terminal escaped: an id written `a\u001b[31mRED` in a `.tool` file,
/// or a raw escape byte in an expression, must not colour, clear or retitle the terminal.
#[test]
fn diagnostics_echo_escape_sequences_escaped_never_raw() {
    let dir = temp("escapes");
    std::fs::create_dir_all(dir.join("tools")).expect("tools dir");
    let main = dir.join("main.tool");
    std::fs::write(
        &main,
        r#"{"instructions":[{"execution_id":"a\u001b[31mRED","tool_definition_path":"/tools/x\u001b]0;pwned\u0007.tool","arguments":{"v":"REF:zz\u001b[2J.v"}}]}"#,
    )
    .expect("write");
    let checked = run(&["check", main.to_str().expect("utf-8 path")]);
    assert_eq!(checked.code, 1, "{checked:?}");
    assert!(checked.stderr.contains(r"execution id `a\u001b[31mRED` is not an identifier"), "{}", checked.stderr);
    assert!(checked.stderr.contains(r"malformed REF `REF:zz\u001b[2J.v`"), "{}", checked.stderr);
    // An expression with a raw ESC and BEL in it: its snippet shows `?` where they were.
    let evaluated = run(&["eval", "foo(\u{1b}]0;pwned\u{7})"]);
    assert_ne!(evaluated.code, 0, "{evaluated:?}");
    for out in [&checked, &evaluated] {
        assert!(!out.stderr.contains(['\u{1b}', '\u{7}']), "a raw control character reached stderr: {:?}", out.stderr);
        assert!(!out.stdout.contains(['\u{1b}', '\u{7}']), "{:?}", out.stdout);
    }
    assert!(evaluated.stderr.contains("foo(?]0;pwned?)"), "{}", evaluated.stderr);
}

// ---- hostile tool programs and the runner's pipes (hostile round, 2026-11-29) -----------

/// A root whose `main.tool` calls `tools/t.tool`, an `exec:` of `script` (POSIX sh) with a
/// timeout of `timeout` seconds and no retry; the script finds a folder for its notes in
/// `$D` (each process it leaves writes its pid to a file there).
fn script_root(name: &str, script: &str, timeout: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp(name);
    std::fs::create_dir_all(dir.join("tools/bin")).expect("mkdir");
    let main = format!(
        r#"{{"instructions": [{{"execution_id": "call", "tool_definition_path": "/tools/t.tool",
             "timeout_seconds": {timeout}, "retry": {{"max_retries": 0}}}}]}}"#
    );
    std::fs::write(dir.join("main.tool"), main).expect("write");
    std::fs::write(dir.join("tools/t.tool"), r#"{"system_event_endpoint": "exec:./bin/t.sh"}"#).expect("write");
    let bin = dir.join("tools/bin/t.sh");
    std::fs::write(&bin, format!("#!/bin/sh\nexport D='{}'\n{script}\n", dir.display())).expect("write");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// Waits until the script's process `what` wrote its pid to `$D/what`.
const WAIT_FOR: &str = "while [ ! -s \"$D/$1\" ]; do sleep 0.01; done";

/// `tdsl run` of a `script_root`, timed; the pids its processes left in `$D/left`.
fn run_script(name: &str, script: &str, timeout: u32, extra: &[&str]) -> (Ended, Duration, Vec<u32>) {
    let dir = script_root(name, &format!("wait_for() {{ {WAIT_FOR}; }}\n{script}"), timeout);
    let mut args = vec!["run", "main.tool", "--root", dir.to_str().expect("utf-8 path"), "--no-history"];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let o = run(&args);
    let took = started.elapsed();
    (o, took, pids_in(&dir.join("left")))
}

/// A tool that answers and leaves a process holding only one of its two pipes (standard
/// error, then standard output): the answer comes after the grace period, not at the
/// process's end, and the process is killed.
#[test]
fn a_process_left_holding_one_pipe_does_not_hold_the_attempt() {
    for (name, held) in [("held-stderr", ">/dev/null"), ("held-stdout", "2>/dev/null")] {
        let script =
            format!("sh -c 'echo $$ > \"$D/left\"; exec sleep 60' {held} &\nwait_for left\necho '{{\"ok\": true}}'");
        let (o, took, left) = run_script(name, &script, 30, &[]);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        assert_eq!(json(&o.stdout), json(r#"{"call": {"ok": true}}"#), "{name}");
        assert!(took < Duration::from_secs(15), "{name}: took {took:?}");
        assert_eq!(left.len(), 1, "{name}");
        assert_eq!(left_alive(&left), Vec::<u32>::new(), "{name}: the process holding a pipe was killed");
    }
}

/// A tool that closes its standard output (or error) and then never exits, or never writes
/// and never exits: killed at its timeout (1 s), whatever it closed.
#[test]
fn a_tool_that_closes_a_pipe_and_never_exits_is_killed_at_its_timeout() {
    for (name, close) in [("close-stdout", "exec 1>&-"), ("close-stderr", "exec 2>&-"), ("close-none", ":")] {
        let script = format!("{close}\necho $$ > \"$D/left\"\nexec sleep 60");
        let (o, took, left) = run_script(name, &script, 1, &[]);
        assert_eq!(o.code, 1, "{name}: {}", o.stderr);
        assert!(o.stderr.contains("[E0804]"), "{name}: {}", o.stderr);
        assert!(took < Duration::from_secs(15), "{name}: took {took:?}");
        assert_eq!(left.len(), 1, "{name}");
        assert_eq!(left_alive(&left), Vec::<u32>::new(), "{name}: the tool was killed");
    }
}

/// A tool that answers and daemonizes (a process in a session of its own that keeps both
/// pipes): the attempt ends after the grace period with the answer, and the run ends the
/// daemon before it exits.
#[test]
fn a_tool_that_daemonizes_with_its_pipes_answers_and_the_daemon_is_ended() {
    let script = "setsid sh -c 'echo $$ > \"$D/left\"; exec sleep 60' &\nwait_for left\necho '{\"ok\": true}'";
    let (o, took, left) = run_script("daemon-pipes", script, 30, &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"call": {"ok": true}}"#));
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(left.len(), 1);
    assert_eq!(left_alive(&left), Vec::<u32>::new(), "the daemon was ended with the run");
}

/// A tool that exits while a process it started keeps writing slowly: on standard error,
/// the answer stands; on standard output, what it wrote after the answer makes the output
/// no JSON value (an error, not a hang); the writer is killed either way.
#[test]
fn a_tool_that_exits_while_a_child_writes_slowly() {
    for (name, to, ok) in [("slow-stderr", ">&2", true), ("slow-stdout", "", false)] {
        let script = format!(
            "sh -c 'echo $$ > \"$D/left\"; while :; do echo x {to}; sleep 0.1; done' &\nwait_for left\necho '{{\"ok\": true}}'"
        );
        let (o, took, left) = run_script(name, &script, 30, &[]);
        assert!(took < Duration::from_secs(15), "{name}: took {took:?}");
        if ok {
            assert_eq!(o.code, 0, "{name}: {}", o.stderr);
            assert_eq!(json(&o.stdout), json(r#"{"call": {"ok": true}}"#), "{name}");
        } else {
            assert_eq!(o.code, 1, "{name}: {}", o.stderr);
            assert!(o.stderr.contains("printed invalid JSON"), "{name}: {}", o.stderr);
        }
        assert_eq!(left.len(), 1, "{name}");
        assert_eq!(left_alive(&left), Vec::<u32>::new(), "{name}: the writer was killed");
    }
}

/// A process a tool leaves behind floods standard output after the tool exited, in the
/// tool's process group or in a session of its own: the output limit still holds (the
/// call fails with E0803 naming it), the run ends, and the flooder is gone.
#[test]
fn a_flood_after_the_tool_exited_is_cut_off_at_the_cap() {
    for (name, how) in [("flood-after", "sh"), ("flood-daemon", "setsid sh")] {
        let script =
            format!("{how} -c 'echo $$ > \"$D/left\"; sleep 0.2; exec yes' &\nwait_for left\necho '{{\"ok\": true}}'");
        let (o, took, left) = run_script(name, &script, 30, &["--max-tool-output", "100000"]);
        assert_eq!(o.code, 1, "{name}: {}", o.stderr);
        assert!(o.stderr.contains("printed more than 100000 bytes on standard output"), "{name}: {}", o.stderr);
        assert!(o.stderr.contains("[E0803]"), "{name}: {}", o.stderr);
        assert!(took < Duration::from_secs(15), "{name}: took {took:?}");
        assert_eq!(left.len(), 1, "{name}");
        assert_eq!(left_alive(&left), Vec::<u32>::new(), "{name}: the flooder was ended");
    }
}

/// The children of `pid` that are zombies (ended, never waited for).
fn zombie_children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&pid.to_string().as_str()) {
            out.push(child);
        }
    }
    out
}

/// `serve --mcp` (a long-running process, the subreaper of what its tools leave) calling
/// a tool that leaves a short-lived process in a session of its own (`setsid`), or in a
/// process group of its own in the server's session (`setpgid`: out of reach of the kill of
/// the tool's group too): once that process ends, the server reaps it. A
/// zombie per such call would pile up for as long as the server runs.
#[test]
fn serve_reaps_what_a_tool_left_in_its_own_session_or_group() {
    // perl-base is part of every Debian system; `sh` has no `setpgid`.
    let own_group = "exec perl -e \"setpgrp(0, 0); exec q(sleep), q(0.3)\"";
    for (name, leave, end) in
        [("serve-zombie-session", "setsid sh -c", "exec sleep 0.3"), ("serve-zombie-group", "sh -c", own_group)]
    {
        let script = format!(
            "{leave} 'echo $$ > \"$D/left\"; {end}' </dev/null >/dev/null 2>&1 &\n\
             while [ ! -s \"$D/left\" ]; do sleep 0.01; done\necho '{{\"ok\": true}}'"
        );
        let root = script_root(name, &script, 30);
        // The process ends after 0.3 s; within the watchdog it is reaped, not left a zombie.
        call_main_and_await_reaping(&root, false, Duration::from_secs(10), name);
    }
}

/// `serve --mcp` in `root` calling `main` (its answer an error or not, as `is_error` says),
/// which leaves one process behind (its id in `root/left`); waits until that process is gone
/// and the server has no zombie child, failing past `within`. The server, still running.
fn call_main_and_await_reaping(root: &Path, is_error: bool, within: Duration, what: &str) -> (Mcp, u32) {
    let mut s = Mcp::start(root);
    let pid = s.child.id();
    s.send(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "main", "arguments": {}}}));
    let answer = s.answer(1);
    assert_eq!(answer["result"]["isError"], serde_json::json!(is_error), "{what}: {answer}");
    let left = pids_in(&root.join("left"));
    assert_eq!(left.len(), 1, "{what}");
    let started = Instant::now();
    loop {
        let zombies = zombie_children(pid);
        if zombies.is_empty() && gone(left[0]) {
            return (s, pid);
        }
        assert!(started.elapsed() < within, "{what}: zombies of the server: {zombies:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The threads of process `pid`.
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)
}

/// `serve --mcp` calling, again and again, a tool that answers and leaves a daemon (a
/// session of its own) keeping its three pipes, never reading its input (100 KB of
/// arguments: more than a pipe holds) nor writing: each call answers after the grace
/// period, and leaves no thread behind reading or writing a pipe the daemon keeps (three
/// a call, for as long as the daemon lived: the server's life).
#[test]
fn serve_leaves_no_thread_on_the_pipes_a_daemon_keeps() {
    // Each daemon's pid in a file named after the tool's.
    let script = "setsid sh -c 'echo $$ > \"$D/left.$0\"; exec sleep 60' $$ &\n\
                  while [ ! -s \"$D/left.$$\" ]; do sleep 0.01; done\necho '{\"ok\": true}'";
    let root = script_root("serve-daemon-threads", script, 30);
    std::fs::write(
        root.join("main.tool"),
        r#"{"arguments": [{"name": "pad", "type_name": "string", "required": true}],
            "instructions": [{"execution_id": "call", "tool_definition_path": "/tools/t.tool",
                              "arguments": {"pad": "REF:arguments.pad"}, "retry": {"max_retries": 0}}]}"#,
    )
    .expect("write");
    let pad = "x".repeat(100_000);
    let mut s = Mcp::start(&root);
    let pid = s.child.id();
    let mut call = |id: u64| {
        s.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                   "params": {"name": "main", "arguments": {"pad": pad}}}));
        let answer = s.answer(id);
        assert_eq!(answer["result"]["isError"], serde_json::json!(false), "{answer}");
        // The threads that were to end have ended (a fifth of a second is plenty).
        std::thread::sleep(Duration::from_millis(600));
        threads_of(pid)
    };
    // The first call starts what a server starts once (its pools' threads).
    let first = call(1);
    let last = (2..=4).map(&mut call).last().unwrap_or(first);
    // The daemons live as long as the server; it is killed here, so they are ended here.
    let daemons: Vec<u32> = std::fs::read_dir(&root)
        .expect("root")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("left."))
        .flat_map(|e| pids_in(&e.path()))
        .collect();
    for &d in &daemons {
        if let Ok(d) = i32::try_from(d) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(d), nix::sys::signal::Signal::SIGKILL);
        }
    }
    assert_eq!(daemons.len(), 4, "a daemon a call");
    // What was left behind was three threads a call: nine more after the three calls after
    // the first. The runtime's pool of blocking threads may keep a few more alive for a while
    // (its threads wait 10 s for work before they end), more of them on a loaded machine:
    // once, 5 threads became 7.
    assert!(last <= first + 3, "the server had {first} threads after one call, {last} after four");
}

/// `serve --mcp` calling an `mcp:` server (started in the server's own process group, as
/// every MCP server is) that leaves a short-lived process behind and exits: that process is
/// re-parented to the server (its subreaper) in the server's own group and session, where
/// the reaper took every child for one the server started itself and left it to a `Child`
/// that does not exist. A zombie a call stayed for the server's life, and the reaper, woken
/// by it, looked through /proc four times a second. Now a zombie in the server's group that
/// nothing reaps within 2 s is reaped.
#[test]
fn serve_reaps_what_an_mcp_server_left_in_the_servers_own_group() {
    let root = temp("serve-zombie-mcp-group");
    std::fs::create_dir_all(root.join("tools")).expect("mkdir");
    // Not an MCP server at all: it leaves `sleep` and exits, so the handshake fails.
    std::fs::write(
        root.join("tools/t.tool"),
        r#"{"system_event_endpoint": "mcp:sh -c 'sleep 0.3 & echo $! > \"$0\"; exit 0' LEFT#t"}"#
            .replace("LEFT", &root.join("left").display().to_string()),
    )
    .expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "call", "tool_definition_path": "/tools/t.tool",
                              "arguments": {}, "retry": {"max_retries": 0}}]}"#,
    )
    .expect("write");
    let (_server, pid) = call_main_and_await_reaping(&root, true, Duration::from_secs(5), "mcp: server's leftover");
    // And the server, with nothing left to reap, is idle.
    let before = ticks_when_idle(pid);
    std::thread::sleep(Duration::from_secs(1));
    let after = cpu_ticks(pid).expect("alive");
    assert!(after - before <= 2, "{} ticks in a second of idleness", after - before);
}

/// The input's writer, which now waits for room in the pipe a page at a time: a tool that
/// reads its 2 MB of arguments only after half a second, then in pieces with pauses, still
/// gets them whole; and twenty calls of a tool that answers at once without reading its
/// 200 KB of arguments (more than a pipe holds) each return at once, not a poll interval
/// (100 ms) or a grace period later.
#[test]
fn a_late_or_slow_reader_gets_its_input_whole_and_a_non_reader_returns_at_once() {
    let dir = temp("pipes-late-reader");
    std::fs::create_dir_all(dir.join("tools")).expect("mkdir");
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join(format!("tools/{name}.sh"));
        std::fs::write(&bin, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(
            dir.join(format!("tools/{name}.tool")),
            format!(
                r#"{{"arguments": [{{"name": "pad", "type_name": "string", "required": true}}],
                    "responses": [{{"name": "n", "type_name": "integer"}}], "system_event_endpoint": "exec:./{name}.sh"}}"#
            ),
        )
        .expect("write");
    };
    script(
        "late",
        "sleep 0.5\nn=$( (dd bs=4096 count=100 2>/dev/null; sleep 0.2; cat) | wc -c)\necho \"{\\\"n\\\": $n}\"",
    );
    script("never", "echo '{\"n\": 0}'");
    // The same calls of a tool that reads its input first: what twenty calls take here.
    script("reader", "cat >/dev/null\necho '{\"n\": 0}'");
    let step = |tool: &str, i: usize| {
        format!(
            r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/{tool}.tool", "arguments": {{"pad": "REF:arguments.pad"}}, "retry": {{"max_retries": 0}}}}"#
        )
    };
    let main = |tool: &str, n: usize| {
        let steps: Vec<String> = (0..n).map(|i| step(tool, i)).collect();
        format!(
            r#"{{"arguments": [{{"name": "pad", "type_name": "string", "required": true}}], "instructions": [{}],
                "response_reference_map": {{"n": "REF:s{}.n"}}}}"#,
            steps.join(", "),
            n - 1
        )
    };
    std::fs::write(dir.join("late.tool"), main("late", 1)).expect("write");
    std::fs::write(dir.join("never.tool"), main("never", 20)).expect("write");
    std::fs::write(dir.join("reader.tool"), main("reader", 20)).expect("write");
    let d = dir.to_str().expect("utf-8 path");
    let args = |len: usize| {
        let file = dir.join(format!("args-{len}.json"));
        std::fs::write(&file, serde_json::json!({"pad": "x".repeat(len)}).to_string()).expect("write");
        file
    };
    let big = args(2_000_000);
    let o = run(&["run", "late.tool", "--root", d, "--no-history", "--args", big.to_str().expect("utf-8")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // `{"pad":"…"}`: the 2 MB and ten bytes.
    assert_eq!(json(&o.stdout), serde_json::json!({"n": 2_000_010}), "{}", o.stderr);
    let mid = args(200_000);
    let twenty = |tool: &str| {
        let started = Instant::now();
        let o = run(&["run", tool, "--root", d, "--no-history", "--args", mid.to_str().expect("utf-8")]);
        assert_eq!(o.code, 0, "{tool}: {}", o.stderr);
        assert_eq!(json(&o.stdout), serde_json::json!({"n": 0}), "{tool}");
        started.elapsed()
    };
    let (reading, not_reading) = (twenty("reader.tool"), twenty("never.tool"));
    // A poll interval a call would be two seconds more than the calls of a tool that reads;
    // measured against those rather than a fixed time, a loaded machine slows both.
    assert!(
        not_reading < reading + Duration::from_millis(1500),
        "twenty calls took {not_reading:?}, those of a tool that reads {reading:?}"
    );
}

/// A `git` that leaves a process holding its output for three seconds after it exits, under
/// `tdsl run` (the command is the orphan reaper of what it starts, on Linux): `git`'s own
/// status stays its `Child`'s. Before `git` was registered with the reaper as a process
/// the command waits for, its zombie, in the command's own group, was taken for a
/// leftover after two seconds and reaped, and the wait for it then failed ("git failed: No
/// child processes"), and the file store, taking the root for one outside git, listed the
/// current version alone.
#[test]
fn git_leaving_a_process_on_its_output_keeps_its_status() {
    let root = temp("git-leftover");
    let real_git = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("git")).find(|g| g.is_file()))
        .expect("the tests need git on PATH");
    let git = |args: &[&str]| {
        let o = Command::new(&real_git)
            .arg("-C")
            .arg(&root)
            .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["init", "-q"]);
    std::fs::write(root.join("notes.txt"), "one\n").expect("write");
    git(&["add", "notes.txt"]);
    git(&["commit", "-q", "-m", "Add notes"]);
    // The wrapper, first on PATH: git itself, with a `sleep` it started keeping the output.
    let bin = temp("git-leftover-bin");
    {
        use std::os::unix::fs::PermissionsExt;
        let wrapper = bin.join("git");
        std::fs::write(&wrapper, format!("#!/bin/sh\nsleep 3 &\nexec '{}' \"$@\"\n", real_git.display()))
            .expect("write");
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "versions",
                              "transform_responses": {"transforms": {"m": "map(list_file_versions(\"notes.txt\"), template=\"item.message\")"}}}],
            "response_reference_map": {"m": "REF:versions.m"}}"#,
    )
    .expect("write");
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default()),
    )
    .expect("PATH");
    let r = root.to_str().expect("utf-8 path");
    let child = tdsl()
        .args(["run", "main.tool", "--root", r, "--files", r, "--no-history"])
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    let o = finish(child, "run with a git that leaves a process");
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The commit's message: the versions came from git (a file store outside git has the
    // current version alone, without one).
    assert_eq!(json(&o.stdout), serde_json::json!({"m": ["Add notes"]}), "{}", o.stderr);
}
