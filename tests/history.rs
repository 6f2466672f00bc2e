//! The run history (issue 20, `docs/history.md`): what `tdsl run` records, runs killed
//! mid-way, concurrent runs, `tdsl history list|show|stats`, migrations, and progress on a
//! terminal.

mod common;
use common::tdsl;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tdsl::testing::exec::{StepTrace, Trace};
use tdsl::testing::history::{HistoryStore, Invocation, NewRun, RunContext, RunFilter, SqliteStore, SCHEMA_VERSION};
use tdsl::Value;

const ROOT: &str = "tests/data/history";

/// A test's own folder under the system's temporary folder, removed when the test ends
/// (a 20,000-step history is 22 MB: left behind, each run of the suite kept one).
struct Temp(PathBuf);

impl std::ops::Deref for Temp {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Temp {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp(name: &str) -> Temp {
    let dir = std::env::temp_dir().join(format!("tdsl-history-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    Temp(dir)
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Attempts in a trace: the invocations it should have recorded.
fn attempts(steps: &[StepTrace]) -> usize {
    steps
        .iter()
        .map(|st| {
            st.attempts.len()
                + st.steps.as_deref().map_or(0, attempts)
                + st.children
                    .iter()
                    .flatten()
                    .map(|c| c.attempts.len() + c.steps.as_deref().map_or(0, attempts))
                    .sum::<usize>()
        })
        .sum()
}

fn steps(steps: &[StepTrace]) -> usize {
    steps
        .iter()
        .map(|st| {
            1 + st.steps.as_deref().map_or(0, self::steps)
                + st.children.iter().flatten().map(|c| c.steps.as_deref().map_or(0, self::steps)).sum::<usize>()
        })
        .sum()
}

#[test]
fn the_example_runs_record_every_invocation() {
    let dir = temp("examples");
    let db = dir.join("history.db");
    let report = dir.join("report.md");
    let report_arg = format!("report_path={:?}", s(&report));
    let cases: [(&str, &[&str], usize, usize); 3] = [
        // 1 validation + 3 × 3 fan-out children + aggregate + report.
        (
            "examples/document-analysis",
            &["--args", "examples/document-analysis/args.json", "--arg", &report_arg],
            12,
            6,
        ),
        // The nested composite's `inspect` and the processing branch (the other is skipped).
        ("examples/conditional-branching", &["--args", "examples/conditional-branching/valid.json"], 2, 4),
        ("examples/conditional-branching", &["--args", "examples/conditional-branching/invalid.json"], 2, 4),
    ];
    // Each case several times: a step must never be called (or recorded) twice.
    for round in 0..3 {
        for (i, (example, args, invocations, step_rows)) in cases.iter().enumerate() {
            let trace = dir.join(format!("trace-{round}-{i}.json"));
            let main = format!("{example}/main.tool");
            let mut argv = vec!["run", &main, "--root", example, "--history", s(&db), "--trace", s(&trace)];
            argv.extend_from_slice(args);
            let o = tdsl(&argv);
            assert_eq!(o.code, 0, "{example}: {}", o.stderr);
            let trace = Trace::from_json(&std::fs::read_to_string(&trace).unwrap()).unwrap();
            let store = SqliteStore::open(&db).unwrap();
            let run = store.run(&trace.run_id).unwrap().expect("the run is recorded under its trace run id");
            assert_eq!(run.run.status, "SUCCESS");
            assert_eq!(run.invocations.len(), *invocations, "{example} round {round}: {:#?}", run.invocations);
            assert_eq!(attempts(&trace.steps), *invocations, "{example}: the trace agrees");
            assert_eq!(run.steps.len(), *step_rows, "{example}: {:#?}", run.steps);
            assert_eq!(steps(&trace.steps), *step_rows);
            assert!(run.invocations.iter().all(|i| i.result == "success" && i.attempt == 1));
            assert!(run.steps.iter().all(|s| s.status == "COMPLETED" || s.status == "SKIPPED"), "{:#?}", run.steps);
            assert_eq!(run.trace.as_ref(), Some(&trace), "the trace is stored with the run");
        }
    }
    let store = SqliteStore::open(&db).unwrap();
    let all = store.invocations(&RunFilter::default()).unwrap();
    assert_eq!(all.len(), 3 * (12 + 2 + 2));
    // Step paths name fan-out children and nested steps.
    let paths: std::collections::BTreeSet<&str> = all.iter().map(|i| i.step_path.as_str()).collect();
    for p in ["extract_basic_info[2]", "comprehensive_analysis[0]", "validate_input/inspect", "generate_report"] {
        assert!(paths.contains(p), "{p} in {paths:?}");
    }
}

#[test]
fn retries_failures_and_broken_answers_get_their_result_kinds() {
    let dir = temp("kinds");
    let db = dir.join("h.db");
    // A response that breaks the declared ones: validation_error.
    let o = tdsl(&["run", "liar.tool", "--root", ROOT, "--history", s(&db)]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    // Retried transient failures, then an answer (tests/data/run's flaky tool).
    let state = dir.join("calls");
    let state_arg = format!("state={:?}", s(&state));
    let o = tdsl(&[
        "run",
        "tests/data/run/flaky.tool",
        "--root",
        "tests/data/run",
        "--arg",
        &state_arg,
        "--history",
        s(&db),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // A timeout (the hanging tool is killed after 1 s).
    let o = tdsl(&["run", "tests/data/run/hang.tool", "--root", "tests/data/run", "--history", s(&db)]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let o = tdsl(&["history", "show", "1", "--history", s(&db), "--format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let liar = json(&o.stdout);
    assert_eq!(liar["status"], "FAILED");
    assert_eq!(liar["invocations"][0]["result"], "validation_error");
    assert_eq!(liar["invocations"][0]["error"], "required response `count` of `/tools/liar.tool` is missing");
    assert_eq!(liar["invocations"][0]["result_data"], json(r#"{"other": 1}"#));
    let flaky = json(&tdsl(&["history", "show", "2", "--history", s(&db), "--format", "json"]).stdout);
    let kinds: Vec<(u64, &str)> = flaky["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["attempt"].as_u64().unwrap(), i["result"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [(1, "internal_error"), (2, "internal_error"), (3, "success")]);
    let hang = json(&tdsl(&["history", "show", "3", "--history", s(&db), "--format", "json"]).stdout);
    assert_eq!(hang["status"], "TIMEOUT");
    let results: Vec<&str> =
        hang["invocations"].as_array().unwrap().iter().map(|i| i["result"].as_str().unwrap()).collect();
    assert!(!results.is_empty() && results.iter().all(|r| *r == "timeout"), "{results:?}");
}

/// Polls until `f` holds (a watchdog of 60 s, not a timing assertion).
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "did not happen: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
#[test]
fn a_run_killed_with_sigkill_keeps_its_finished_invocations_and_is_interrupted() {
    let dir = temp("sigkill");
    let db = dir.join("h.db");
    // Three children answer at once, the fourth sleeps 30 s.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0, 0, 30, 0]", "--history", s(&db)])
        .env("XDG_DATA_HOME", common::data_home())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tdsl starts");
    wait_until("three invocations recorded", || {
        SqliteStore::open(&db)
            .ok()
            .and_then(|st| st.invocations(&RunFilter::default()).ok())
            .is_some_and(|i| i.len() == 3)
    });
    // While it runs, another process opening the database leaves it RUNNING.
    let live = SqliteStore::open(&db).unwrap().runs(&RunFilter::default()).unwrap();
    assert_eq!(live[0].status, "RUNNING");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let o = tdsl(&["history", "list", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.lines().nth(1).is_some_and(|l| l.contains("INTERRUPTED") && l.contains("/fan.tool")),
        "{}",
        o.stdout
    );
    let store = SqliteStore::open(&db).unwrap();
    let run = store.run("1").unwrap().unwrap();
    assert_eq!(run.run.status, "INTERRUPTED");
    assert_eq!(run.run.completed_at, None);
    assert_eq!(run.trace, None);
    let mut done: Vec<&str> = run.invocations.iter().map(|i| i.step_path.as_str()).collect();
    done.sort_unstable();
    assert_eq!(done, ["fan[0]", "fan[1]", "fan[3]"]);
    assert!(run.invocations.iter().all(|i| i.result == "success"));
    assert_eq!(run.steps.len(), 1);
    assert_eq!((run.steps[0].path.as_str(), run.steps[0].status.as_str()), ("fan", "INTERRUPTED"));
    let o = tdsl(&["history", "list", "--history", s(&db), "--status", "INTERRUPTED", "--format", "json"]);
    assert_eq!(json(&o.stdout).as_array().map(Vec::len), Some(1));
    // A report needs the trace, which an interrupted run never wrote.
    let o = tdsl(&["report", "--run", "1", "--history", s(&db), "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("run `1` has no trace: it is INTERRUPTED"), "{}", o.stderr);
}

#[test]
fn two_concurrent_runs_lose_nothing() {
    let dir = temp("concurrent");
    let db = dir.join("h.db");
    let items = format!("items={:?}", vec![0; 25]);
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_tdsl"))
            .args(["run", "fan.tool", "--root", ROOT, "--arg", &items, "--history", s(&db), "--concurrency", "8"])
            .env("XDG_DATA_HOME", common::data_home())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tdsl starts")
    };
    let (a, b) = (spawn(), spawn());
    for c in [a, b] {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no warning: nothing was lost");
    }
    let store = SqliteStore::open(&db).unwrap();
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r.status, "SUCCESS");
        let d = store.run(&r.id.to_string()).unwrap().unwrap();
        assert_eq!(d.invocations.len(), 25, "run {}", r.id);
        let mut paths: Vec<String> = d.invocations.iter().map(|i| i.step_path.clone()).collect();
        paths.sort_by_key(|p| p.trim_start_matches("fan[").trim_end_matches(']').parse::<u32>().unwrap_or(0));
        assert_eq!(paths, (0..25).map(|i| format!("fan[{i}]")).collect::<Vec<_>>());
    }
}

/// A run recorded through the library, with invocations of known durations and results.
fn known_run(store: &SqliteStore, tool: &str, started_at: &str, calls: &[(&str, u64, &str)]) -> i64 {
    let args = Value::object_from::<&str>([]);
    let context = RunContext::new();
    let run = store
        .begin_run(&NewRun { run_id: "run-known", tool, arguments: &args, started_at, context: &context })
        .unwrap();
    for (i, (t, ms, result)) in calls.iter().enumerate() {
        store
            .invocation(&Invocation {
                id: 0,
                run,
                step_path: format!("s{i}"),
                tool: t.to_string(),
                parameters: Value::Null,
                attempt: 1,
                result: result.to_string(),
                result_data: None,
                error: None,
                invoked_at: started_at.to_string(),
                completed_at: started_at.to_string(),
                duration_ms: *ms,
                context: RunContext::new(),
            })
            .unwrap();
    }
    run
}

#[test]
fn stats_figures_are_checked_against_a_known_set_of_runs() {
    let dir = temp("stats");
    let db = dir.join("h.db");
    {
        let store = SqliteStore::open(&db).unwrap();
        // /tools/a.tool: 20 calls of 10, 20, …, 200 ms, 5 of them failed.
        let a: Vec<(&str, u64, &str)> = (1..=20u64)
            .map(|i| ("/tools/a.tool", i * 10, if i % 4 == 0 { "internal_error" } else { "success" }))
            .collect();
        known_run(&store, "/old.tool", "2020-01-01T00:00:00.000Z", &a[..10]);
        known_run(&store, "/new.tool", "2030-01-01T00:00:00.000Z", &a[10..]);
        known_run(
            &store,
            "/new.tool",
            "2030-01-02T00:00:00.000Z",
            &[("/other/b.tool", 7, "success"), ("/other/b.tool", 9, "timeout")],
        );
    }
    let o = tdsl(&["history", "stats", "--history", s(&db), "--format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        json(&o.stdout),
        json(
            r#"[
              {"tool": "/other/b.tool", "calls": 2, "failures": 1, "failure_rate": 0.5, "p50_ms": 7, "p95_ms": 9},
              {"tool": "/tools/a.tool", "calls": 20, "failures": 5, "failure_rate": 0.25, "p50_ms": 100, "p95_ms": 190}
            ]"#
        )
    );
    let o = tdsl(&["history", "stats", "--history", s(&db), "--tool", "/tools/*"]);
    assert_eq!(
        o.stdout,
        "TOOL           CALLS  FAILURES  FAILURE RATE  P50     P95\n\
         /tools/a.tool  20     5         25.0%         100 ms  190 ms\n"
    );
    // Only the runs since 2025: calls 11–20 of a.tool (110 … 200 ms, failures at 120, 160, 200).
    let o = tdsl(&[
        "history",
        "stats",
        "--history",
        s(&db),
        "--since",
        "2025-01-01T00:00:00Z",
        "--tool",
        "*a.tool",
        "--format",
        "json",
    ]);
    assert_eq!(
        json(&o.stdout),
        json(
            r#"[{"tool": "/tools/a.tool", "calls": 10, "failures": 3, "failure_rate": 0.3, "p50_ms": 150, "p95_ms": 200}]"#
        )
    );
    // `list` filters by tool, status and time; newest first.
    let o = tdsl(&["history", "list", "--history", s(&db), "--format", "json"]);
    let ids: Vec<i64> = json(&o.stdout).as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [3, 2, 1]);
    let o = tdsl(&["history", "list", "--history", s(&db), "--tool", "/old*", "--format", "json"]);
    assert_eq!(json(&o.stdout)[0]["tool"], "/old.tool");
    assert_eq!(json(&o.stdout).as_array().map(Vec::len), Some(1));
    // A duration back from now: the runs of 2030 are in the future, the one of 2020 is not.
    let o = tdsl(&["history", "list", "--history", s(&db), "--since", "7d", "--format", "json"]);
    assert_eq!(json(&o.stdout).as_array().map(Vec::len), Some(2));
    let o = tdsl(&["history", "list", "--history", s(&db), "--status", "RUNNING", "--limit", "1"]);
    assert_eq!(o.stdout.lines().count(), 2, "a header and one run: {}", o.stdout);
    assert!(
        o.stdout.starts_with("ID  STATUS   TOOL       DURATION  STARTED\n3   RUNNING  /new.tool  -         2030-01-02"),
        "{}",
        o.stdout
    );
    let o = tdsl(&["history", "list", "--history", s(&db), "--status", "SUCCESS"]);
    assert_eq!(o.stdout, "no runs recorded\n");
}

#[test]
fn a_database_of_schema_version_1_is_migrated() {
    let dir = temp("migrate");
    let db = dir.join("h.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(tdsl::testing::history::MIGRATIONS[0]).unwrap();
        c.execute_batch("PRAGMA user_version = 1").unwrap();
        c.execute_batch(
            "INSERT INTO runs (run_id, tool, arguments, status, started_at, started_ms, completed_at, duration_ms)
               VALUES ('run-a', '/a.tool', '{}', 'SUCCESS', '2026-01-01T00:00:00.000Z', 1767225600000,
                       '2026-01-01T00:00:01.000Z', 1000);
             INSERT INTO runs (run_id, tool, arguments, status, started_at, started_ms)
               VALUES ('run-b', '/b.tool', '{\"x\": 1}', 'RUNNING', '2026-01-02T00:00:00.000Z', 1767312000000);
             INSERT INTO invocations (run, step_path, tool, parameters, attempt, result, invoked_at, completed_at,
                                      duration_ms)
               VALUES (1, 'fan[2]/inner', '/tools/t.tool', '{}', 1, 'success', '2026-01-01T00:00:00.100Z',
                       '2026-01-01T00:00:00.200Z', 100);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&db).expect("migrated");
    let c = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(tdsl::testing::history::schema_version(&c).unwrap(), SCHEMA_VERSION);
    // The rows of version 1 are kept; a run a version-1 tdsl left RUNNING has no process
    // to wait for: it is INTERRUPTED.
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(
        runs.iter().map(|r| (r.run_id.as_str(), r.status.as_str())).collect::<Vec<_>>(),
        [("run-b", "INTERRUPTED"), ("run-a", "SUCCESS")]
    );
    let a = store.run("run-a").unwrap().unwrap();
    assert_eq!(a.invocations[0].step_path, "fan[2]/inner");
    assert!(a.steps.is_empty());
    // Version 2's steps are written.
    store.step(1, "fan", Some("/tools/t.tool"), "COMPLETED", None).unwrap();
    assert_eq!(store.run("1").unwrap().unwrap().steps[0].status, "COMPLETED");
    drop(store);
    // Opening again does nothing more.
    let again = SqliteStore::open(&db).unwrap();
    assert_eq!(again.runs(&RunFilter::default()).unwrap().len(), 2);
}

#[test]
fn where_the_history_goes() {
    let dir = temp("where");
    // The default: $XDG_DATA_HOME/tdsl/history.db.
    let home = dir.join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]"])
        .env("XDG_DATA_HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = SqliteStore::open(&home.join("tdsl/history.db")).unwrap();
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
    // Without XDG_DATA_HOME: ~/.local/share.
    let fake_home = dir.join("home");
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]"])
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &fake_home)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(fake_home.join(".local/share/tdsl/history.db").is_file());
    // --no-history records nothing.
    let quiet = dir.join("quiet");
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--no-history"])
        .env("XDG_DATA_HOME", &quiet)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!quiet.exists());
    // A default database that cannot be opened (its folder is a file): one warning, and
    // the run goes on.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0, 0]"])
        .env("XDG_DATA_HOME", &blocked)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(json(&String::from_utf8_lossy(&out.stdout))["results"], json(r#"[{"n": 0}, {"n": 0}]"#));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    assert!(stderr.starts_with("warning: no run history: cannot create "), "{stderr}");
    assert!(stderr.contains("--no-history to silence this"), "{stderr}");
    // An explicit --history that cannot be opened is an error: nothing runs.
    let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--history", s(&blocked.join("h.db"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: --history: cannot create "), "{}", o.stderr);
    let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--history", "x.db", "--no-history"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
}

#[test]
fn history_commands_report_bad_input() {
    let dir = temp("errors");
    let db = dir.join("h.db");
    let o = tdsl(&["history", "show", "7", "--history", s(&db)]);
    assert_eq!(o.code, 2);
    assert_eq!(o.stderr, "error: no run `7` in the history (`tdsl history list` shows the ids)\n");
    let o = tdsl(&["history", "list", "--history", s(&db), "--since", "yesterday"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: --since: \"yesterday\" is neither an RFC 3339 time"), "{}", o.stderr);
    let o = tdsl(&["history", "list", "--history", s(&db), "--status", "DONE"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("invalid value 'DONE'"), "{}", o.stderr);
    // A database of a newer schema.
    let newer = dir.join("newer.db");
    rusqlite::Connection::open(&newer).unwrap().execute_batch("PRAGMA user_version = 9").unwrap();
    let o = tdsl(&["history", "list", "--history", s(&newer)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("has schema version 9, newer than this tdsl knows (4)"), "{}", o.stderr);
    // Not a database at all.
    let junk = dir.join("junk.db");
    std::fs::write(&junk, "x".repeat(4096)).unwrap();
    let o = tdsl(&["history", "stats", "--history", s(&junk)]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("file is not a database"), "{}", o.stderr);
    let o = tdsl(&["history", "stats", "--history", s(&db)]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "no tool invocations recorded\n"));
}

#[test]
fn history_show_prints_steps_and_invocations() {
    let dir = temp("show");
    let db = dir.join("h.db");
    let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--arg", "items=[0, 0]", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = tdsl(&["history", "show", "1", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(lines[0].starts_with("run 1 (run-") && lines[0].ends_with("): /fan.tool SUCCESS"), "{}", o.stdout);
    assert_eq!(lines[2], r#"arguments: {"items":[0,0]}"#);
    assert_eq!(lines[3], r#"result: {"results":[{"n":0},{"n":0}]}"#);
    assert_eq!(lines[5], "steps:");
    assert!(lines[7].starts_with("fan   COMPLETED  /tools/work.tool"), "{}", o.stdout);
    assert_eq!(lines[9], "invocations:");
    let mut inv: Vec<&str> = lines[11..].iter().map(|l| &l[..l.find("  /tools").unwrap_or(0)]).collect();
    inv.sort_unstable();
    assert_eq!(inv, ["fan[0]", "fan[1]"]);
    assert!(lines[11].contains("/tools/work.tool  1        success"), "{}", o.stdout);
    let j = json(&tdsl(&["history", "show", "1", "--history", s(&db), "--format", "json"]).stdout);
    assert_eq!(j["invocations"][0]["parameters"]["n"], 0);
    assert_eq!(j["invocations"][0]["result_data"], json(r#"{"n": 0}"#));
    assert_eq!(j["steps"][0]["tool"], "/tools/work.tool");
    // By trace run id too.
    let run_id = j["run_id"].as_str().unwrap();
    let o = tdsl(&["history", "show", run_id, "--history", s(&db), "--format", "json"]);
    assert_eq!(json(&o.stdout)["id"], 1);
}

/// On a terminal, `tdsl run` draws a progress bar: steps, children, calls in flight,
/// retries, elapsed time.
#[cfg(unix)]
#[test]
fn progress_is_drawn_on_a_terminal_and_not_when_piped_or_quiet() {
    use rexpect::session::spawn_command;
    let dir = temp("progress");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0, 1, 0]", "--history", s(&dir.join("h.db"))])
        .env("NO_COLOR", "1");
    let mut p = spawn_command(cmd, Some(30_000)).expect("spawn on a pseudo-terminal");
    p.exp_string("steps 0/1").expect("the bar starts");
    // Two children answer at once; the third sleeps a second with its call in flight.
    p.exp_string("children 2/3, in flight 1").expect("children and calls in flight");
    p.exp_string("steps 1/1, children 3/3, in flight 0, retries 0").expect("the bar ends full");
    p.exp_string("\"results\"").expect("the result follows");
    p.exp_eof().expect("the run ends");

    // Piped: nothing on standard error.
    let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--no-history"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // --quiet on a terminal: the result only.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--no-history", "--quiet"]);
    let mut p = spawn_command(cmd, Some(30_000)).expect("spawn on a pseudo-terminal");
    let before = p.exp_string("\"results\"").expect("the result");
    assert!(!before.contains("steps"), "no progress with --quiet: {before:?}");
    let rest = p.exp_eof().expect("the run ends");
    assert!(!rest.contains("steps"), "no progress with --quiet: {rest:?}");
}

#[test]
fn retries_show_in_the_recorded_trace_and_in_stats() {
    let dir = temp("retries");
    let db = dir.join("h.db");
    let state = dir.join("calls");
    let state_arg = format!("state={:?}", s(&state));
    let o = tdsl(&[
        "run",
        "tests/data/run/flaky.tool",
        "--root",
        "tests/data/run",
        "--arg",
        &state_arg,
        "--history",
        s(&db),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let j = json(&tdsl(&["history", "stats", "--history", s(&db), "--format", "json"]).stdout);
    let flaky = j.as_array().unwrap().iter().find(|t| t["tool"].as_str().is_some_and(|t| t.contains("flaky"))).unwrap();
    assert_eq!((flaky["calls"].as_u64(), flaky["failures"].as_u64()), (Some(3), Some(2)));
    let store = SqliteStore::open(&db).unwrap();
    let run = store.run("1").unwrap().unwrap();
    assert_eq!(run.trace.map(|t| t.total_retries), Some(2));
}

/// `tdsl serve --mcp --history FILE` records the composite runs its calls make.
#[test]
fn serve_records_the_runs_of_its_calls() {
    use std::io::{BufRead, BufReader, Write};
    let dir = temp("serve");
    let db = dir.join("h.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args([
            "serve",
            "--mcp",
            "--root",
            "examples/conditional-branching",
            "--allow",
            "/main.tool",
            "--history",
            s(&db),
        ])
        .env("XDG_DATA_HOME", common::data_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tdsl serve starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = move |v: serde_json::Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut response = |id: u64| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended before answering {id}");
        let v = json(&line);
        if v["id"] == id {
            return v;
        }
    };
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
    response(1);
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let args = json(&std::fs::read_to_string("examples/conditional-branching/valid.json").unwrap());
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "main", "arguments": args}}),
    );
    let answer = response(2);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    drop(send);
    assert!(child.wait().unwrap().success());
    let store = SqliteStore::open(&db).unwrap();
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].tool.as_str(), runs[0].status.as_str()), ("/main.tool", "SUCCESS"));
    assert_eq!(store.run("1").unwrap().unwrap().invocations.len(), 2);
    // --no-history: nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["serve", "--mcp", "--root", "examples/conditional-branching", "--history", s(&db), "--no-history"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "the flags conflict");
}

/// A root with `main.tool`, a chain of `n` `builtin:echo` steps, each passing on the last
/// one's answer.
fn echo_chain(name: &str, n: usize) -> Temp {
    let dir = temp(name);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/t.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    let steps: Vec<String> = (0..n)
        .map(|i| {
            let arg = if i == 0 { "1".to_string() } else { format!("\"REF:s{}.v\"", i - 1) };
            format!(
                r#"{{"execution_id": "s{i}", "tool_definition_path": "/tools/t.tool", "arguments": {{"v": {arg}}}}}"#
            )
        })
        .collect();
    let main =
        format!(r#"{{"instructions": [{}], "response_reference_map": {{"v": "REF:s{}.v"}}}}"#, steps.join(","), n - 1);
    std::fs::write(dir.join("main.tool"), main).unwrap();
    dir
}

/// Issue 28: recording cost a `max(seq)` over the run's steps per step (and per step again
/// when the run ended), so a 20,000-step chain took minutes to record. Recorded in
/// linear time it takes seconds (about 15 s in a debug build on a loaded 2-core machine);
/// the bound is generous, the quadratic recording took ~6 min here.
#[test]
fn a_long_chain_is_recorded_in_linear_time() {
    let dir = echo_chain("long-chain", 20_000);
    let db = dir.join("h.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "main.tool", "--root", s(&dir), "--history", s(&db), "--context", "cycle_id=long"])
        .env("XDG_DATA_HOME", common::data_home())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    let status = common::exit_or_kill(&mut child, Duration::from_secs(150), "a 20,000-step recorded run", String::new);
    assert!(status.success());
    let store = SqliteStore::open_read_only(&db).unwrap();
    let run = store.run("1").unwrap().unwrap();
    assert_eq!(run.run.status, "SUCCESS");
    assert_eq!((run.steps.len(), run.invocations.len()), (20_000, 20_000));
    // In the order they started.
    assert_eq!((run.steps[0].path.as_str(), run.steps[19_999].path.as_str()), ("s0", "s19999"));
    assert!(run.invocations.iter().all(|i| i.context.get("cycle_id") == Some("long")));
}

/// Issue 28: SIGTERM during a long recorded run ended it only after the history had
/// written every cancelled step (10 minutes at 100,000 steps). It ends within seconds,
/// as without the history, and the run is recorded as ended, not RUNNING.
#[cfg(unix)]
#[test]
fn sigterm_ends_a_long_recorded_run_within_seconds() {
    let dir = echo_chain("sigterm", 10_000);
    let db = dir.join("h.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "main.tool", "--root", s(&dir), "--history", s(&db)])
        .env("XDG_DATA_HOME", common::data_home())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tdsl starts");
    wait_until("the run to be under way", || {
        SqliteStore::open_read_only(&db)
            .ok()
            .and_then(|st| st.invocations(&RunFilter::default()).ok())
            .is_some_and(|i| i.len() >= 50)
    });
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    // A bound on liveness, not a timing: it used to take minutes; 20 s leaves room for a
    // debug build on a loaded machine (5 s failed at a load average of 12 on 2 cores).
    let status = common::exit_or_kill(&mut child, Duration::from_secs(20), "the run after SIGTERM", String::new);
    assert_eq!(status.code(), Some(143));
    let store = SqliteStore::open_read_only(&db).unwrap();
    let run = store.run("1").unwrap().unwrap();
    assert_eq!(run.run.status, "FAILED", "cancelled runs end FAILED (E0813)");
    assert!(run.trace.is_some());
    assert_eq!(run.steps.len(), 10_000);
    assert!(run.steps.iter().all(|st| st.status == "COMPLETED" || st.status == "CANCELLED"));
}

/// Runs the `tdsl` binary under `sh` with `ulimit -f BLOCKS` (no file may grow past
/// that many blocks; SIGXFSZ ignored, so a write past it fails with EFBIG): a full disk,
/// or with 0 a history that cannot be written at all — which holds for root too, where
/// `chmod` does not stop writes.
#[cfg(unix)]
fn tdsl_with_file_limit(blocks: u32, args: &[&str]) -> common::Out {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
    let script = format!(
        "trap '' XFSZ; ulimit -f {blocks} || exit 99; exec '{}' {}",
        env!("CARGO_BIN_EXE_tdsl"),
        quoted.join(" ")
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .env("XDG_DATA_HOME", common::data_home())
        .output()
        .expect("sh runs");
    assert_ne!(out.status.code(), Some(99), "sh cannot set `ulimit -f`: {}", String::from_utf8_lossy(&out.stderr));
    common::Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Issue 28: `history list|show` and `report --run` opened the database to write (to
/// migrate it and mark interrupted runs), so a history they could not write could not be
/// read. They open it read-only; a run left RUNNING by a process that is gone reads as
/// INTERRUPTED all the same.
#[cfg(unix)]
#[test]
fn a_history_that_cannot_be_written_is_read() {
    let dir = temp("read-only");
    let db = dir.join("h.db");
    let o = tdsl(&[
        "run",
        "fan.tool",
        "--root",
        ROOT,
        "--arg",
        "items=[0]",
        "--history",
        s(&db),
        "--context",
        "component=ci",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    {
        // A second run whose process is gone (pid 0 is never a process of ours).
        let store = SqliteStore::open(&db).unwrap();
        let args = Value::object_from::<&str>([]);
        let context = RunContext::new();
        let started_at = "2030-01-01T00:00:00.000Z";
        store
            .begin_run(&NewRun {
                run_id: "run-gone",
                tool: "/gone.tool",
                arguments: &args,
                started_at,
                context: &context,
            })
            .unwrap();
        store.step(2, "a", Some("/tools/t.tool"), "RUNNING", None).unwrap();
    }
    rusqlite::Connection::open(&db).unwrap().execute_batch("UPDATE runs SET pid = NULL WHERE id = 2").unwrap();
    // Nothing in the folder may be written, not even SQLite's `-shm` file.
    let _ = std::fs::remove_file(dir.join("h.db-shm"));
    let _ = std::fs::remove_file(dir.join("h.db-wal"));
    let before = std::fs::read(&db).unwrap();
    let o = tdsl_with_file_limit(0, &["history", "list", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.lines().nth(1).is_some_and(|l| l.starts_with("2   INTERRUPTED  /gone.tool")), "{}", o.stdout);
    assert!(
        o.stdout.lines().nth(2).is_some_and(|l| l.starts_with("1   SUCCESS") && l.ends_with("component=ci")),
        "{}",
        o.stdout
    );
    let o = tdsl_with_file_limit(0, &["history", "show", "2", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("/gone.tool INTERRUPTED") && o.stdout.contains("a     INTERRUPTED"), "{}", o.stdout);
    let o = tdsl_with_file_limit(0, &["history", "stats", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = dir.join("r.html");
    let o = tdsl(&["report", "--run", "1", "--history", s(&db), "-o", s(&html)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let _ = std::fs::remove_file(&html);
    let o = tdsl_with_file_limit(0, &["report", "--run", "1", "--history", s(&db), "-o", "/dev/null"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(std::fs::read(&db).unwrap(), before, "reading wrote the database");
    // The library: a read-only store refuses writes; a missing file is not created.
    let store = SqliteStore::open_read_only(&db).unwrap();
    assert!(store.is_read_only());
    let e = store.step(2, "b", None, "RUNNING", None).unwrap_err();
    assert!(e.0.contains("read-only"), "{e}");
    let missing = dir.join("none.db");
    let empty = SqliteStore::open_read_only(&missing).unwrap();
    assert_eq!(empty.runs(&RunFilter::default()).unwrap(), []);
    let o = tdsl(&["history", "list", "--history", s(&missing)]);
    assert_eq!((o.code, o.stdout.as_str()), (0, "no runs recorded\n"));
    assert!(!missing.exists());
}

/// Issue 28: on a full disk a run that cannot record says so once, runs to its end, and
/// its run does not stay RUNNING.
#[cfg(unix)]
#[test]
fn a_run_on_a_full_disk_says_so_once_and_is_not_left_running() {
    let dir = echo_chain("full-disk", 3_000);
    let db = dir.join("h.db");
    // 200 blocks (100 KiB with sh's 512-byte blocks): room for the schema and the first
    // rows, not for 3,000 steps.
    let o = tdsl_with_file_limit(200, &["run", "main.tool", "--root", s(&dir), "--history", s(&db)]);
    assert_eq!(o.code, 0, "the run itself succeeds: {}", o.stderr);
    assert_eq!(json(&o.stdout)["v"], 1);
    assert_eq!(o.stderr.matches("warning: the run history is incomplete").count(), 1, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    // The disk is still full: reading it must not need to write (marking the run
    // INTERRUPTED in the file cannot be done, and is not needed to show it so).
    let o = tdsl_with_file_limit(0, &["history", "list", "--history", s(&db), "--format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let runs = json(&o.stdout);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["status"], "INTERRUPTED", "{runs}");
    // With room again, the next run's tdsl marks it so in the file.
    let o = tdsl(&["history", "list", "--history", s(&db), "--format", "json"]);
    assert_eq!(json(&o.stdout)[0]["status"], "INTERRUPTED", "{}", o.stdout);
}

/// Issue 28: a tool's terminal escape sequences (ESC [31m, BEL) are shown escaped in
/// `run`'s error line and in `history show`, not passed to the terminal.
#[test]
fn escape_sequences_from_tools_are_shown_escaped() {
    let dir = temp("ansi");
    let db = dir.join("h.db");
    let o = tdsl(&["run", "ansi.tool", "--root", ROOT, "--history", s(&db)]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(!o.stderr.contains('\u{1b}') && !o.stderr.contains('\u{7}'), "{:?}", o.stderr);
    assert!(o.stderr.contains("\\x1b[31mred alert\\x07"), "{}", o.stderr);
    let o = tdsl(&["history", "show", "1", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stdout.contains('\u{1b}') && !o.stdout.contains('\u{7}'), "{:?}", o.stdout);
    assert!(o.stdout.contains("\\x1b[31mred alert\\x07"), "{}", o.stdout);
    // JSON keeps the text as it is (escaped by JSON itself).
    let o = tdsl(&["history", "show", "1", "--history", s(&db), "--format", "json"]);
    let j = json(&o.stdout);
    assert!(j["invocations"][0]["error"].as_str().is_some_and(|e| e.contains("\u{1b}[31mred alert\u{7}")), "{j}");
}

/// Issue 28 / seed 003: `run --context KEY=VALUE` is recorded with the run and on each
/// invocation, shown by `history list|show`, and `history list --context` filters on it.
#[test]
fn a_run_context_is_recorded_shown_and_filtered_on() {
    let dir = temp("context");
    let db = dir.join("h.db");
    let run = |context: &[&str]| {
        let mut argv = vec!["run", "fan.tool", "--root", ROOT, "--arg", "items=[0, 0]", "--history", s(&db)];
        for c in context {
            argv.extend_from_slice(&["--context", c]);
        }
        let o = tdsl(&argv);
        assert_eq!(o.code, 0, "{}", o.stderr);
    };
    run(&["cycle_id=7", "component=planner", "triggered_by=cron"]);
    run(&["cycle_id=8", "component=planner"]);
    run(&[]);
    let ids = |filter: &[&str]| {
        let mut argv = vec!["history", "list", "--history", s(&db), "--format", "json"];
        for c in filter {
            argv.extend_from_slice(&["--context", c]);
        }
        let o = tdsl(&argv);
        assert_eq!(o.code, 0, "{}", o.stderr);
        json(&o.stdout).as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&[]), [3, 2, 1]);
    assert_eq!(ids(&["component=planner"]), [2, 1]);
    assert_eq!(ids(&["component=planner", "cycle_id=7"]), [1]);
    assert_eq!(ids(&["cycle_id=9"]), Vec::<i64>::new());
    // A value is matched whole, as a string.
    assert_eq!(ids(&["cycle_id=7 "]), Vec::<i64>::new());
    let o = tdsl(&["history", "list", "--history", s(&db)]);
    assert!(o.stdout.starts_with("ID  STATUS   TOOL       DURATION  STARTED"), "{}", o.stdout);
    assert!(o.stdout.lines().next().is_some_and(|l| l.ends_with("CONTEXT")), "{}", o.stdout);
    assert!(o.stdout.contains("component=planner, cycle_id=7, triggered_by=cron"), "{}", o.stdout);
    let o = tdsl(&["history", "show", "1", "--history", s(&db)]);
    assert!(o.stdout.contains("\ncontext: component=planner, cycle_id=7, triggered_by=cron\n"), "{}", o.stdout);
    let j = json(&tdsl(&["history", "show", "1", "--history", s(&db), "--format", "json"]).stdout);
    assert_eq!(j["context"]["triggered_by"], "cron");
    assert_eq!(j["invocations"].as_array().map(Vec::len), Some(2));
    for i in j["invocations"].as_array().unwrap() {
        assert_eq!(i["context"], j["context"], "{i}");
    }
    // Bad keys and pairs are usage errors, before anything runs.
    for (bad, says) in [
        ("cycle-id=1", "a key is a letter or `_`"),
        ("1st=1", "a key is a letter or `_`"),
        ("=1", "a key is a letter or `_`"),
        ("cycle_id", "must be KEY=VALUE"),
    ] {
        let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--history", s(&db), "--context", bad]);
        assert_eq!(o.code, 2, "{bad}");
        assert!(o.stderr.contains(says), "{bad}: {}", o.stderr);
        let o = tdsl(&["history", "list", "--history", s(&db), "--context", bad]);
        assert_eq!(o.code, 2, "{bad}");
        assert!(o.stderr.contains(says), "{bad}: {}", o.stderr);
    }
    let long = format!("k={}", "x".repeat(2000));
    let o = tdsl(&["run", "fan.tool", "--root", ROOT, "--arg", "items=[0]", "--history", s(&db), "--context", &long]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("more than 1024"), "{}", o.stderr);
    assert_eq!(ids(&[]).len(), 3, "nothing ran");
    // The library: a Recorder given a context.
    let mut context = RunContext::new();
    context.insert("conversation_turn", "3").unwrap();
    assert!(context.insert("no-dash", "x").is_err());
    let store = SqliteStore::open(&db).unwrap();
    let filter = RunFilter { context: vec![("component".into(), "planner".into())], ..RunFilter::default() };
    assert_eq!(store.runs(&filter).unwrap().len(), 2);
    let bad = RunFilter { context: vec![("x') OR 1=1 --".into(), "1".into())], ..RunFilter::default() };
    assert!(store.runs(&bad).is_err());
}

/// Issue 38 item 2: 20 children passing 100 KB each (scaled down from 200 × 1 MB, which
/// wrote 2.5 GB): past `--history-payload-bytes` each payload is kept as its first bytes,
/// its size and its hash — in the invocations, the steps, the run and its stored trace —
/// so the database grows with the calls, not with the bytes; `history show` says so.
#[test]
fn a_payload_past_the_bound_is_kept_as_a_prefix_its_size_and_its_hash() {
    let dir = temp("cut-payloads");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/echo.tool",
             "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "text"}}],
           "response_reference_map": {"n": "REF:fan.response.length"}}"#,
    )
    .unwrap();
    let text = "ab".repeat(50_000);
    let items: Vec<String> = (0..20).map(|i| format!("\"{i:02}{text}\"")).collect();
    std::fs::write(dir.join("args.json"), format!(r#"{{"items": [{}]}}"#, items.join(","))).unwrap();
    let db = dir.join("h.db");
    let o = tdsl(&["run", "main.tool", "--root", s(&dir), "--args", s(&dir.join("args.json")), "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"n": 20}"#));
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|x| std::fs::metadata(format!("{}{x}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    assert!(size < 1_500_000, "the history holds {size} bytes for 4 MB passed around (16 MB kept whole)");

    let store = SqliteStore::open_read_only(&db).unwrap();
    let run = store.run("1").unwrap().unwrap();
    assert_eq!(run.invocations.len(), 20);
    let whole = format!(r#"{{"text":"00{text}"}}"#);
    // The tree hash (docs/history.md): the string, a part of more than 1 KiB, stands in the
    // object's JSON as 0xFF and its own SHA-256 — each computed by `sha256sum` here.
    let string_hash = sha256_of(&dir, format!(r#""00{text}""#).as_bytes());
    let mut hash_text = br#"{"text":"#.to_vec();
    hash_text.push(0xFF);
    hash_text.extend((0..32).map(|i| u8::from_str_radix(&string_hash[2 * i..2 * i + 2], 16).unwrap()));
    hash_text.push(b'}');
    let tree_hash = format!("tree-sha256:{}", sha256_of(&dir, &hash_text));
    let first = run.invocations.iter().find(|i| i.step_path == "fan[0]").unwrap();
    for payload in [&first.parameters, first.result_data.as_ref().unwrap()] {
        let cut = payload.get_direct("$tdsl_cut").unwrap_or_else(|| panic!("not cut: {payload:.100}"));
        assert_eq!(cut.get_direct("bytes").and_then(Value::as_f64), Some(whole.len() as f64));
        let prefix = cut.get_direct("prefix").and_then(Value::as_str).unwrap();
        assert!(whole.starts_with(prefix) && prefix.len() == 1024, "{prefix:.40}");
        let hash = cut.get_direct("hash").and_then(Value::as_str).unwrap();
        assert_eq!(hash, tree_hash);
    }
    // The run's arguments, the step's result and the stored trace are cut the same way.
    assert!(run.arguments.get_direct("$tdsl_cut").is_some());
    let trace = run.trace.as_ref().unwrap();
    let child = &trace.steps[0].children.as_ref().unwrap()[0];
    assert!(child.attempts[0].response.as_ref().unwrap().get_direct("$tdsl_cut").is_some());
    assert_eq!(trace.result.as_ref().unwrap().to_string(), r#"{"n":20}"#, "a small payload is kept whole");

    let o = tdsl(&["history", "show", "1", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("arguments: (cut: 2000"), "{}", o.stdout);
    assert!(o.stdout.contains("cut payloads (kept as their first bytes, size and hash):"), "{}", o.stdout);
    let line =
        format!("fan[0] attempt 1 arguments: (cut: {} bytes of JSON, {tree_hash}; the first 1024 kept)", whole.len());
    assert!(o.stdout.contains(&line), "{}", o.stdout);

    // A bound above the payloads keeps them whole; one out of range is a usage error.
    let db2 = dir.join("h2.db");
    let args = s(&dir.join("args.json")).to_string();
    let o = tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(&dir),
        "--args",
        &args,
        "--history",
        s(&db2),
        "--history-payload-bytes",
        "200000",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let run = SqliteStore::open_read_only(&db2).unwrap().run("1").unwrap().unwrap();
    assert_eq!(run.invocations[0].parameters.get_direct("text").and_then(Value::as_str).map(str::len), Some(100_002));
    let o = tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(&dir),
        "--args",
        &args,
        "--history",
        s(&db2),
        "--history-payload-bytes",
        "10",
    ]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("--history-payload-bytes: `history_payload_bytes` must be an integer from 1024"),
        "{}",
        o.stderr
    );
}

/// Hostile round 7: a plan of 454 bytes fanning one 59 KB string (just under
/// `--history-payload-bytes`) out to 1,000 calls wrote 297 MB of history and held 857 MB
/// while storing its trace — every payload was under the bound, so each was kept whole, in
/// each call's arguments and answer and again in the trace. A run's payloads now draw on a
/// budget (`--history-run-bytes`): kept whole while it lasts, in the order they are
/// stored, then cut with a prefix while some is left, then cut to their size and hash.
/// Scaled down: 40 children passing 60 KB each under a budget of 1 MiB.
#[test]
fn a_runs_payloads_are_kept_whole_only_within_its_budget() {
    let dir = temp("run-budget");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/echo.tool",
             "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "text"}}],
           "response_reference_map": {"n": "REF:fan.response.length"}}"#,
    )
    .unwrap();
    let text = "ab".repeat(30_000);
    let items: Vec<String> = (0..40).map(|i| format!("\"{i:02}{text}\"")).collect();
    std::fs::write(dir.join("args.json"), format!(r#"{{"items": [{}]}}"#, items.join(","))).unwrap();
    let args = s(&dir.join("args.json")).to_string();
    let db = dir.join("h.db");
    let budget: u64 = 1 << 20;
    let o = tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(&dir),
        "--args",
        &args,
        "--history",
        s(&db),
        "--history-run-bytes",
        &budget.to_string(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(json(&o.stdout), json(r#"{"n": 40}"#));
    let run = SqliteStore::open_read_only(&db).unwrap().run("1").unwrap().unwrap();
    // The run's arguments (2.4 MB, past the payload bound) came first: a cut, its 1 KiB
    // prefix taken from the budget.
    let cut = |v: &Value| {
        v.get_direct("$tdsl_cut").map(|c| c.get_direct("prefix").and_then(Value::as_str).map_or(0, str::len))
    };
    assert_eq!(cut(&run.arguments), Some(1024));
    let one = format!(r#"{{"text":"00{text}"}}"#).len() as u64;
    let payloads: Vec<&Value> =
        run.invocations.iter().flat_map(|i| [&i.parameters, i.result_data.as_ref().expect("an answer")]).collect();
    assert_eq!(payloads.len(), 80);
    let whole = payloads.iter().filter(|p| cut(p).is_none()).count() as u64;
    let left = budget - 1024 - whole * one;
    assert_eq!(whole, (budget - 1024) / one, "as many whole as the budget holds");
    // Then cuts with a full prefix while the budget lasts, one with what was left, and the
    // rest with none: each still with its size and hash.
    let mut prefixes: Vec<usize> = payloads.iter().filter_map(|p| cut(p)).collect();
    prefixes.sort_unstable();
    let full = (left / 1024) as usize;
    let expected: Vec<usize> = std::iter::repeat_n(0, prefixes.len() - full - 1)
        .chain([(left % 1024) as usize])
        .chain(std::iter::repeat_n(1024, full))
        .collect();
    let mut expected = expected;
    expected.sort_unstable();
    // The partial prefix is cut back to a character boundary (ASCII here: exact).
    assert_eq!(prefixes, expected);
    for p in payloads.iter().filter(|p| cut(p).is_some()) {
        let c = p.get_direct("$tdsl_cut").unwrap();
        assert_eq!(c.get_direct("bytes").and_then(Value::as_f64), Some(one as f64));
        assert!(c.get_direct("hash").and_then(Value::as_str).is_some_and(|h| h.starts_with("tree-sha256:")));
    }
    // A payload no larger than a cut is whole whatever is left: the run's result.
    assert_eq!(run.trace.as_ref().unwrap().result.as_ref().unwrap().to_string(), r#"{"n":40}"#);
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|x| std::fs::metadata(format!("{}{x}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    assert!(size < 3 * budget, "the history holds {size} bytes for a budget of {budget} (7.2 MB without it)");
    // Out of range: a usage error naming the range.
    let o = tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(&dir),
        "--args",
        &args,
        "--history",
        s(&db),
        "--history-run-bytes",
        "10",
    ]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("--history-run-bytes: `history_run_bytes` must be an integer from 65536"),
        "{}",
        o.stderr
    );
}

/// A history has a size (`--history-max-bytes`): a server taking plan after plan, each
/// within its own bounds, once grew its database for as long as it ran. Past the bound when
/// a run ends, the oldest ended runs are deleted, and the file stops growing. Twenty runs
/// of about 90 KB each (a 10 KB argument kept whole in the run, the call, the step and the
/// trace: nine copies), the last ten under the least bound, 1 MiB: the last runs stay, the
/// first are gone, the file stays near the bound.
#[test]
fn the_oldest_runs_go_when_the_history_passes_its_size() {
    let dir = temp("max-bytes");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"arguments": [{"name": "text", "type_name": "string", "required": true}],
            "instructions": [{"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
                              "arguments": {"text": "REF:arguments.text"}}],
            "response_reference_map": {"n": "REF:e.text.length"}}"#,
    )
    .unwrap();
    let db = dir.join("h.db");
    for i in 0..20 {
        let args = dir.join("args.json");
        std::fs::write(&args, format!(r#"{{"text": "{i:02}{}"}}"#, "x".repeat(10_000))).unwrap();
        // The first ten without a bound (the default, 1 GiB, far off), then under 1 MiB:
        // the eleventh run's end deletes several at once.
        let bound: &[&str] = if i < 10 { &[] } else { &["--history-max-bytes", "1048576"] };
        let o =
            tdsl(&[&["run", "main.tool", "--root", s(&dir), "--args", s(&args), "--history", s(&db)], bound].concat());
        assert_eq!(o.code, 0, "{}", o.stderr);
        if i == 10 {
            let runs = SqliteStore::open_read_only(&db).unwrap().runs(&RunFilter::default()).unwrap();
            assert!(
                runs.len() < 11 && runs.iter().any(|r| r.id == 11),
                "{:?}",
                runs.iter().map(|r| r.id).collect::<Vec<_>>()
            );
        }
    }
    let store = SqliteStore::open_read_only(&db).unwrap();
    let runs = store.runs(&RunFilter::default()).unwrap();
    let kept: Vec<i64> = runs.iter().map(|r| r.id).collect();
    assert!(kept.contains(&20) && !kept.contains(&1), "kept {kept:?}");
    assert!(kept.len() >= 4 && kept.len() < 20, "kept {kept:?}");
    // The runs kept are whole: the newest one's call is there.
    assert_eq!(store.run("20").unwrap().unwrap().invocations.len(), 1);
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(size < 3 << 20, "the database file is {size} bytes for a bound of 1 MiB");
    // Out of range: a usage error naming the range.
    let o = tdsl(&["run", "main.tool", "--root", s(&dir), "--history", s(&db), "--history-max-bytes", "1000"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("--history-max-bytes: `history_max_bytes` must be an integer from 1048576"),
        "{}",
        o.stderr
    );
}

/// Hostile round 7b: error texts were not counted in a run's budget. A fan-out of 200
/// failing calls, each with 64 KiB of standard error, wrote 52.8 MB under a budget of
/// 64 KiB — each error whole in its call and about three times in the trace. They draw on
/// the budget now, as payloads do: whole while it lasts, then their first bytes and their
/// size, then their size alone. Scaled down: 20 calls, 20 KB each.
#[cfg(unix)]
#[test]
fn error_texts_draw_on_the_runs_budget() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp("error-budget");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    let bin = dir.join("tools/fail.sh");
    std::fs::write(&bin, "#!/bin/sh\ncat >/dev/null\nhead -c 20000 /dev/zero | tr '\\0' e >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("tools/fail.tool"), r#"{"system_event_endpoint": "exec:./fail.sh"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/fail.tool", "continue_on_error": true,
             "retry": {"max_retries": 0},
             "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "i"}}]}"#,
    )
    .unwrap();
    let items: Vec<String> = (0..20).map(|i| i.to_string()).collect();
    std::fs::write(dir.join("args.json"), format!(r#"{{"items": [{}]}}"#, items.join(","))).unwrap();
    let db = dir.join("h.db");
    let budget: usize = 65_536;
    let o = tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(&dir),
        "--args",
        s(&dir.join("args.json")),
        "--history",
        s(&db),
        "--history-run-bytes",
        &budget.to_string(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let run = SqliteStore::open_read_only(&db).unwrap().run("1").unwrap().unwrap();
    let errors: Vec<&str> = run.invocations.iter().filter_map(|i| i.error.as_deref()).collect();
    assert_eq!(errors.len(), 20);
    let whole = errors.iter().filter(|e| !e.ends_with(" bytes)")).count();
    let cut: Vec<&&str> = errors.iter().filter(|e| e.contains("… (cut: ")).collect();
    assert!((1..5).contains(&whole), "{whole} errors whole under a budget of 64 KiB");
    assert_eq!(whole + cut.len(), 20);
    // Once the budget is spent, a cut keeps only the size.
    assert!(cut.iter().any(|e| e.starts_with("… (cut: ")), "{cut:?}");
    let kept: usize = errors.iter().map(|e| e.len()).sum();
    assert!(kept < budget + 20 * 1100, "{kept} bytes of errors kept");
    // The stored trace's errors too: the whole trace is a few times the budget at most.
    let trace = serde_json::to_string(run.trace.as_ref().unwrap()).unwrap();
    assert!(trace.len() < 4 * budget, "a stored trace of {} bytes", trace.len());
}

/// The SHA-256 of `text` by `sha256sum`, not by the code under test.
fn sha256_of(dir: &Path, text: &[u8]) -> String {
    let file = dir.join("payload.json");
    std::fs::write(&file, text).unwrap();
    let out = Command::new("sha256sum").arg(&file).output().expect("sha256sum runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_string()
}

/// Hostile round 4b (issue 38.10): measuring a large payload for its cut (its size and
/// hash) was done holding the store's lock, inside its open transaction, so every other
/// run's writes waited for it; now it is done before. Another run begins, and is recorded,
/// while a large payload (two million numbers: seconds to measure in a debug build) is still
/// being measured.
#[test]
fn a_large_payload_being_cut_holds_up_no_other_runs_writes() {
    let dir = temp("cut-lock");
    let store = std::sync::Arc::new(SqliteStore::open(&dir.join("h.db")).expect("open"));
    let big = Value::List((0..2_000_000).map(|i| Value::Float(f64::from(i) / 3.0)).collect());
    let context = RunContext::new();
    let started_at = "2026-01-01T00:00:00Z";
    let slow = {
        let store = store.clone();
        std::thread::spawn(move || {
            let context = RunContext::new();
            let run = NewRun { run_id: "run-big", tool: "/big.tool", arguments: &big, started_at, context: &context };
            store.begin_run(&run).expect("the big run begins");
        })
    };
    // Let the big run start measuring (it takes seconds, far more than this).
    std::thread::sleep(Duration::from_millis(300));
    let small = Value::object_from::<&str>([]);
    let run = NewRun { run_id: "run-small", tool: "/small.tool", arguments: &small, started_at, context: &context };
    store.begin_run(&run).expect("the small run begins");
    assert!(!slow.is_finished(), "the small run's write waited for the big payload's cut");
    slow.join().expect("the big run's thread");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 38 (round 4, a): the history's work is linear in the bytes a run makes, not in the
/// bytes it passes around. One 1 MiB string fanned out to N children is in each child's
/// arguments and answer, the step's result and the stored trace; each payload was serialized
/// and hashed whole (a 4 MiB string over 40 children: 75 s with the history, 0.12 s
/// without). Now a shared part is measured once a run: the bytes hashed are counted, and
/// grow by less than a kilobyte a child, however large the string.
#[test]
fn a_value_shared_by_many_payloads_is_measured_once() {
    use std::sync::Arc;
    use tdsl::testing::history::Recorder;
    use tdsl::{Executor, NonBlocking, ToolCall, ToolError, Workflow};
    let dir = temp("shared-cut");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
    std::fs::write(
        dir.join("main.tool"),
        r#"{"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/echo.tool",
             "arguments": {"text": "REF:arguments.s"},
             "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "i"}}],
           "response_reference_map": {"out": "REF:fan.response"}}"#,
    )
    .unwrap();
    let workflow = Workflow::load(&dir, &dir.join("main.tool")).unwrap();
    const MIB: u64 = 1 << 20;
    let string = Value::str(&"a".repeat(MIB as usize));
    let hashed = |children: i64| {
        let store = Arc::new(SqliteStore::open(&dir.join(format!("h{children}.db"))).expect("open"));
        let echo = NonBlocking(|call: &ToolCall<'_>| -> Result<Value, ToolError> { Ok(call.arguments.clone()) });
        let run = Executor::new(echo)
            .with_observer(Arc::new(Recorder::new(store.clone())))
            .run(
                &workflow,
                Value::object_from([
                    ("s", string.clone()),
                    ("items", Value::list((0..children).map(Value::Int).collect())),
                ]),
            )
            .unwrap();
        assert_eq!(run.error, None);
        let recorded = store.run("1").unwrap().unwrap();
        assert_eq!(recorded.invocations.len() as i64, children);
        assert!(recorded.invocations.iter().all(|i| i.parameters.get_direct("$tdsl_cut").is_some()));
        store.hashed_bytes()
    };
    let (few, many) = (hashed(10), hashed(200));
    // The string's JSON hashed once (not 5 × 200 MiB), the rest a few dozen bytes a payload.
    assert!(many < MIB + 200 * 1024, "{many} bytes hashed for 200 children");
    assert!(many - few < 190 * 1024, "{} more bytes hashed for 190 more children", many - few);
    let _ = std::fs::remove_dir_all(&dir);
}
