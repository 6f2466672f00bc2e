//! Hostile round 8 (`docs/security.md`): the run history and its trimming past
//! `--history-max-bytes` from the attacker's side — a history that cannot be written, a full
//! disk, several processes recording and trimming one file at once, a run still going in
//! another process while runs end and trim. Each test runs the real binary (or the store
//! itself, for what only the library can arrange) and says what held or what it fixed.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::mcp_stdio::StdioClient;
use serde_json::{json, Value as Json};
use tdsl::testing::history::{HistoryStore, NewRun, RunContext, SqliteStore};
use tdsl::Value;

/// A root with `main.tool` (echoes `text`, answers its length) and `wait.tool` (one step
/// per item of `items`, each after the one before, each waiting for the file `go` in the
/// root to exist, then echoing).
fn root(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("tools")).expect("the root");
    std::fs::write(root.join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("echo");
    std::fs::write(
        root.join("main.tool"),
        r#"{"arguments": [{"name": "text", "type_name": "string", "required": true}],
            "instructions": [{"execution_id": "e", "tool_definition_path": "/tools/echo.tool",
                              "arguments": {"text": "REF:arguments.text"}}],
            "response_reference_map": {"n": "REF:e.text.length"}}"#,
    )
    .expect("main");
    let wait = root.join("tools/wait.sh");
    std::fs::write(&wait, "#!/bin/sh\nwhile [ ! -e \"$(dirname \"$0\")/../go\" ]; do sleep 0.05; done\ncat\n")
        .expect("wait.sh");
    std::fs::set_permissions(&wait, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(root.join("tools/wait.tool"), r#"{"system_event_endpoint": "exec:./wait.sh"}"#).expect("wait");
    let steps: Vec<Json> = (0..5)
        .map(|i| {
            let mut arguments = json!({"i": i});
            if i > 0 {
                arguments["after"] = json!(format!("REF:w{}.i", i - 1));
            }
            json!({"execution_id": format!("w{i}"), "tool_definition_path": "/tools/wait.tool", "arguments": arguments})
        })
        .collect();
    std::fs::write(root.join("wait.tool"), json!({"instructions": steps}).to_string()).expect("wait.tool");
    // Everyone may read and search it: the permission tests run `tdsl` as another user.
    for d in [&root, &root.join("tools")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    root
}

/// `--args FILE` of `main.tool` with a text of `bytes` bytes.
fn text_of(dir: &Path, bytes: usize) -> PathBuf {
    let path = dir.join(format!("text-{bytes}.json"));
    std::fs::write(&path, json!({"text": "x".repeat(bytes)}).to_string()).expect("args");
    path
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `tdsl` as a user whom file permissions bind: the test's own, or `nobody` (through
/// `setpriv`) when the tests run as root, whom `chmod` does not stop.
fn as_bound_user(args: &[&str], env: &[(&str, &Path)]) -> Command {
    use std::os::unix::fs::MetadataExt;
    // Who runs the tests: the owner of what they create.
    let probe = tempfile::NamedTempFile::new().expect("a temporary file");
    let root = probe.as_file().metadata().is_ok_and(|m| m.uid() == 0);
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups", env!("CARGO_BIN_EXE_tdsl")]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_tdsl"))
    };
    cmd.args(args).env("NO_COLOR", "1").env("XDG_DATA_HOME", common::data_home());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn output(mut cmd: Command) -> common::Out {
    let out = cmd.stdin(Stdio::null()).output().expect("tdsl runs (as root: `setpriv` is needed)");
    common::Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A history this user cannot write — a read-only file, or its folder read-only — was
/// opened all the same (SQLite opens such a file read-only without a word): the run ran,
/// recorded nothing, and said `the run history is incomplete`; a server recorded nothing
/// and said nothing. The reader also left `-wal` and `-shm` files, read-only and its own,
/// beside the owner's database. Now `--history` names the problem and nothing runs (exit 2),
/// as for any file that cannot be opened; the default history is left out with a warning,
/// and the run runs; `tdsl history` still reads it.
#[test]
fn a_history_that_cannot_be_written_is_refused_at_once_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let root = root(dir.path());
    let db = dir.path().join("h.db");
    let o = common::tdsl(&["run", "main.tool", "--root", s(&root), "--arg", "text=\"a\"", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let run = ["run", "main.tool", "--root", s(&root), "--arg", "text=\"b\""];
    let says = "runs cannot be recorded there";
    // The file read-only, its folder writable.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let o = output(as_bound_user(&[&run[..], &["--history", s(&db)]].concat(), &[]));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains(&format!("--history: {}: {says}: the file is read-only", s(&db))), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "the run ran: {}", o.stdout);
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("the folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("h.db-"))
        .collect();
    assert!(left.is_empty(), "files left beside the database: {left:?}");
    let serve = output(as_bound_user(&["serve", "--mcp", "--root", s(&root), "--history", s(&db)], &[]));
    assert_eq!(serve.code, 2, "{}", serve.stderr);
    assert!(serve.stderr.contains(says), "{}", serve.stderr);
    // The folder read-only, the file writable: SQLite cannot make its WAL there.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let o = output(as_bound_user(&[&run[..], &["--history", s(&db)]].concat(), &[]));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("--history: {}: {says}: attempt to write a readonly database", s(&db))),
        "{}",
        o.stderr
    );
    // The default history read-only: a warning, and the run runs.
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("tdsl")).expect("home");
    std::fs::copy(&db, home.join("tdsl/history.db")).expect("copy");
    std::fs::set_permissions(home.join("tdsl/history.db"), std::fs::Permissions::from_mode(0o444)).expect("chmod");
    for d in [&home, &home.join("tdsl")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    }
    let o = output(as_bound_user(&run, &[("XDG_DATA_HOME", &home)]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(serde_json::from_str::<Json>(&o.stdout).expect("JSON")["n"], 1, "{}", o.stdout);
    assert!(o.stderr.starts_with("warning: no run history: ") && o.stderr.contains(says), "{}", o.stderr);
    // Reading needs no write.
    let o = output(as_bound_user(&["history", "list", "--history", s(&home.join("tdsl/history.db"))], &[]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("SUCCESS  /main.tool"), "{}", o.stdout);
}

/// A server records several runs in one transaction (writes are grouped, `COMMIT_INTERVAL`).
/// A write that failed rolled the whole transaction back — the rows other runs had written
/// in it too, which never heard of it; a trim that failed (a full disk, a lock held
/// elsewhere) did the same to whatever was written since the run's end. A failed write takes
/// back its own rows only now. The failing write here is one for a run no longer in the
/// history (the row a hostile process deleted), which the foreign key refuses.
#[test]
fn a_failed_write_takes_back_its_own_rows_not_another_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("h.db")).expect("the store");
    let (args, context) = (Value::object_from::<&str>([]), RunContext::new());
    let begin = |run_id: &str| {
        let run = NewRun {
            run_id,
            tool: "/t.tool",
            arguments: &args,
            started_at: "2030-01-01T00:00:00.000Z",
            context: &context,
        };
        store.begin_run(&run).expect("begun")
    };
    let (a, gone) = (begin("a"), begin("gone"));
    store.step(a, "before", Some("/tools/t.tool"), "RUNNING", None).expect("a's step");
    let e = store.step(gone + 100, "x", Some("/tools/t.tool"), "RUNNING", None).expect_err("no such run");
    assert!(e.0.contains("FOREIGN KEY"), "{e}");
    store.step(a, "after", Some("/tools/t.tool"), "RUNNING", None).expect("a's next step");
    store.flush().expect("committed");
    let steps: Vec<String> =
        store.run(&a.to_string()).expect("read").expect("a").steps.into_iter().map(|s| s.path).collect();
    assert_eq!(steps, ["before", "after"], "a's first step went with the failed write");
}

/// Three processes each ending runs of about 500 KB into one history bounded at 1 MiB:
/// each run's end trims, often while another process writes. Held: every run succeeds and
/// says nothing (no "database is locked": writers wait for each other), the file passes its
/// integrity check and stays near the bound, and no run is left `RUNNING`. Fixed: a run's
/// end could trim the newest run (another process's, just ended), and SQLite then gave its
/// history id to the next run — the ids went 1 … 17 for 24 runs, and `history show 17`
/// showed another run than it had.
#[test]
fn three_processes_trimming_one_history_at_once_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root(dir.path());
    let (db, args) = (dir.path().join("h.db"), text_of(dir.path(), 60_000));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (root, db, args) = (root.clone(), db.clone(), args.clone());
            std::thread::spawn(move || {
                (0..8)
                    .map(|_| run_bounded_to_a_mebibyte(&root, &args, &db))
                    .filter(|o| o.code != 0 || !o.stderr.is_empty())
                    .map(|o| format!("exit {}: {}", o.code, o.stderr))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let failures: Vec<String> = workers.into_iter().flat_map(|w| w.join().expect("a worker")).collect();
    assert!(failures.is_empty(), "{failures:?}");
    let conn = rusqlite::Connection::open(&db).expect("the database");
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("checked");
    assert_eq!(check, "ok");
    let (runs, running, last): (i64, i64, i64) = conn
        .query_row("SELECT count(*), count(*) FILTER (WHERE status != 'SUCCESS'), max(id) FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("counted");
    assert_eq!((running, last), (0, 24), "{runs} runs kept");
    assert!((1..24).contains(&runs), "{runs} runs kept of 24");
    let size = std::fs::metadata(&db).expect("the file").len();
    assert!(size < 3 << 20, "the database file is {size} bytes for a bound of 1 MiB");
}

/// A run still going in one process while another ends runs past the bound: held — the
/// running run is never deleted (it is `RUNNING`), goes on recording, and ends whole; the
/// other's old runs go.
#[test]
fn a_run_going_on_in_another_process_is_never_trimmed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root(dir.path());
    let (db, args) = (dir.path().join("h.db"), text_of(dir.path(), 60_000));
    let mut long = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["run", "wait.tool", "--root", s(&root), "--history", s(&db), "--history-max-bytes", "1048576"])
        .env("XDG_DATA_HOME", common::data_home())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tdsl starts");
    common::process::wait_until(Duration::from_secs(30), "the long run to be recorded", || {
        SqliteStore::open_read_only(&db).ok()?.run("1").ok()?.filter(|r| !r.steps.is_empty())
    });
    for _ in 0..8 {
        let o = run_bounded_to_a_mebibyte(&root, &args, &db);
        assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    }
    let store = SqliteStore::open_read_only(&db).expect("readable");
    let first = store.run("1").expect("read").expect("the long run is still there");
    assert_eq!(first.run.status, "RUNNING");
    assert!(store.run("2").expect("read").is_none(), "the other process's oldest run was not trimmed");
    std::fs::write(root.join("go"), "").expect("go");
    let status = common::exit_or_kill(&mut long, Duration::from_secs(60), "the long run", String::new);
    assert!(status.success());
    let run = SqliteStore::open_read_only(&db).expect("readable").run("1").expect("read").expect("the long run");
    assert_eq!(run.run.status, "SUCCESS");
    assert_eq!((run.steps.len(), run.invocations.len()), (5, 5));
}

/// Runs `cmd` under `sh` with `ulimit -f BLOCKS` (no file may grow past that many 512-byte
/// blocks; SIGXFSZ ignored, so a write past it fails with EFBIG): a full disk, for any user
/// and without a mount.
fn with_file_limit(blocks: u32, cmd: &[&str]) -> Command {
    let quoted: Vec<String> = cmd.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
    let mut sh = Command::new("sh");
    sh.args(["-c", &format!("trap '' XFSZ; ulimit -f {blocks} || exit 99; exec {}", quoted.join(" "))])
        .env("NO_COLOR", "1")
        .env("XDG_DATA_HOME", common::data_home());
    sh
}

/// A full disk under a server: a run that could not be recorded was said nowhere (the
/// recorder's error was dropped). `serve` says it on its standard error now, the call's
/// answer is the run's, and the server goes on; `tdsl run` says `the run is not in the
/// history` (not "incomplete") when not even the run's row was written.
#[test]
fn on_a_full_disk_a_run_not_recorded_is_said_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root(dir.path());
    let db = dir.path().join("h.db");
    let o = common::tdsl(&["run", "main.tool", "--root", s(&root), "--arg", "text=\"a\"", "--history", s(&db)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // 80 blocks, 40 KiB: room for SQLite's 32 KiB `-shm` file and a small write, not for a
    // run whose arguments are 60 KB (64 KiB are kept whole).
    let text = "x".repeat(60_000);
    let bin = env!("CARGO_BIN_EXE_tdsl");
    let mut client =
        StdioClient::start(&mut with_file_limit(80, &[bin, "serve", "--mcp", "--root", s(&root), "--history", s(&db)]));
    let answer = client.call("main", json!({"text": text}));
    assert_eq!(answer["structuredContent"]["n"], 60_000, "{answer}");
    client.process.wait_for_line("the warning", Duration::from_secs(20), |l| {
        (l.starts_with("tdsl: warning: run ") && l.contains("of `/main.tool`: the run is not in the history: "))
            .then_some(())
    });
    let answer = client.call("main", json!({"text": "small"}));
    assert_eq!(answer["structuredContent"]["n"], 5, "{answer}");
    drop(client);
    let args = text_of(dir.path(), 60_000);
    let out =
        with_file_limit(80, &[bin, "run", "main.tool", "--root", s(&root), "--args", s(&args), "--history", s(&db)])
            .output()
            .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.starts_with("warning: the run is not in the history: history: "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A history path that is no file: `tdsl history list` on a FIFO waited for a writer for
/// ever (SQLite opens it to read, which blocks), and a device or a FIFO to record into
/// failed with "disk I/O error". Each is refused at once, saying what the path is.
#[test]
fn a_history_that_is_no_file_is_refused_without_waiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root(dir.path());
    let fifo = dir.path().join("fifo.db");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    for (path, is) in [(&fifo, "a FIFO, a device or a socket"), (&root, "a folder")] {
        for args in [
            &["history", "list", "--history", s(path)][..],
            &["report", "--run", "1", "--history", s(path), "-o", "/dev/null"],
            &["run", "main.tool", "--root", s(&root), "--arg", "text=\"a\"", "--history", s(path)],
        ] {
            let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
                .args(args)
                .env("XDG_DATA_HOME", common::data_home())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("tdsl starts");
            let status = common::exit_or_kill(&mut child, Duration::from_secs(20), &args.join(" "), String::new);
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("read");
            assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&format!("{} is {is}, not a file", s(path))), "{args:?}: {stderr}");
        }
    }
}

/// `tdsl run main.tool` recording into `db`, whose size is bounded at 1 MiB.
fn run_bounded_to_a_mebibyte(root: &Path, args: &Path, db: &Path) -> common::Out {
    common::tdsl(&[
        "run",
        "main.tool",
        "--root",
        s(root),
        "--args",
        s(args),
        "--history",
        s(db),
        "--history-max-bytes",
        "1048576",
    ])
}
