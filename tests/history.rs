//! The run history (issue 20, `docs/history.md`): what `tdsl run` records, runs killed
//! mid-way, concurrent runs, `tdsl history list|show|stats`, migrations, and progress on a
//! terminal.

mod common;
use common::tdsl;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tdsl::exec::{StepTrace, Trace};
use tdsl::history::{HistoryStore, Invocation, NewRun, RunFilter, SqliteStore, SCHEMA_VERSION};
use tdsl::Value;

const ROOT: &str = "tests/data/history";

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdsl-history-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
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
    let run = store.begin_run(&NewRun { run_id: "run-known", tool, arguments: &args, started_at }).unwrap();
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
        c.execute_batch(tdsl::history::MIGRATIONS[0]).unwrap();
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
    assert_eq!(tdsl::history::schema_version(&c).unwrap(), SCHEMA_VERSION);
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
    assert!(o.stderr.contains("has schema version 9, newer than this tdsl knows (3)"), "{}", o.stderr);
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
