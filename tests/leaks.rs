//! Hostile round 12: no secret of the process reaches a tool, a plan's client, the history or
//! a trace. A tool cannot read the environment of the `tdsl` that started it (finding 1); a
//! registered token an `exec:` tool prints is redacted (finding 1); an `exec:` tool's
//! standard error and program path stay on `serve`'s log (finding 7); a token is never sent
//! in clear to a remote `http://` upstream (finding 8); the file functions do not read the
//! server's own secret files (finding 9).
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::mcp_stdio::StdioClient;
use serde_json::{json, Value};

const CANARY: &str = "leak12-canary-value";
const TOKEN: &str = "tok-LEAKCHECK-0123456789abcdef";

/// Whether this process may read any process's memory (`CAP_SYS_PTRACE`, bit 19 of `CapEff`):
/// root in most containers, for whom the dumpable flag changes nothing.
fn may_trace_anything() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(caps, 16).is_ok_and(|c| c & (1 << 19) != 0)
}

/// A command starting `program` without any capability: as root (a container, CI), under
/// `setpriv` with an empty bounding set, so that what it starts is checked as any process of
/// the same user is (same uid, no `CAP_SYS_PTRACE`: the dumpable flag decides). `None` when
/// that cannot be done here (root without `setpriv`).
fn unprivileged(program: &str) -> Option<Command> {
    if !may_trace_anything() {
        return Some(Command::new(program));
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists())?;
    let mut cmd = Command::new(setpriv);
    cmd.args(["--bounding-set=-all", "--inh-caps=-all", program]);
    Some(cmd)
}

/// A root with `tools/peek.tool`: an `exec:` program that tells whether it could read
/// `CANARY` in its parent's `/proc/PID/environ`.
fn peek_root(dir: &Path) {
    common::process::script(
        &dir.join("tools/peek.sh"),
        "#!/bin/sh\nif tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -q LEAK12_CANARY; then r=true; \
         else r=false; fi\necho \"{\\\"read\\\": $r}\"\n",
    );
    std::fs::write(
        dir.join("tools/peek.tool"),
        r#"{"description": "Peeks", "system_event_endpoint": "exec:./peek.sh"}"#,
    )
    .expect("write");
    composite(dir, "peek");
}

/// `NAME_main.tool` at the root: one step calling `/tools/NAME.tool`, its output the result.
fn composite(dir: &Path, name: &str) {
    let text = json!({"description": "Calls it", "instructions": [{"execution_id": "s",
        "tool_definition_path": format!("/tools/{name}.tool"), "arguments": {}, "retry": {"max_retries": 0}}],
        "response_reference_map": {"out": "REF:s"}});
    std::fs::write(dir.join(format!("{name}_main.tool")), text.to_string()).expect("write");
}

/// Everything written in `dir` whose name starts with `prefix` (a database and its `-wal`).
fn files_named(dir: &Path, prefix: &str) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).expect("the folder").flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(entry.path()).expect("read")));
        }
    }
    all
}

/// Finding 1: `serve`, `run` (every command that starts tools or holds tokens) are
/// non-dumpable, so a tool of the same user cannot read their environment — the variables
/// `--clean-env` withholds — nor their memory. Observed as root too: the tool and `tdsl` run
/// without capabilities, and a control shows the same tool reading a dumpable parent's.
#[test]
fn a_tool_cannot_read_the_environment_of_the_tdsl_that_started_it() {
    let Some(mut control) = unprivileged("/bin/sh") else {
        panic!(
            "running as root without setpriv (util-linux): the dumpable flag cannot be observed; install util-linux"
        );
    };
    let dir = tempfile::tempdir().expect("tempdir");
    peek_root(dir.path());
    // The control: a dumpable `sh` starting the same program, which reads its environment
    // (`; true`: the program is not `exec`ed in the shell's place).
    let out = control
        .arg("-c")
        .arg(format!("{}; true", dir.path().join("tools/peek.sh").display()))
        .env("LEAK12_CANARY", CANARY)
        .output()
        .expect("sh runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"read": true}"#, "the control cannot read: {out:?}");

    let tdsl = env!("CARGO_BIN_EXE_tdsl");
    let root = dir.path().display().to_string();
    let tool = dir.path().join("peek_main.tool").display().to_string();
    let out = unprivileged(tdsl)
        .expect("as above")
        .args(["run", &tool, "--root", &root, "--no-history", "--clean-env"])
        .env("LEAK12_CANARY", CANARY)
        .env("XDG_DATA_HOME", common::data_home())
        .output()
        .expect("tdsl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).expect("JSON"), json!({"out": {"read": false}}), "run: {stdout}");

    // `serve`: the same tool, served.
    let mut cmd = unprivileged(tdsl).expect("as above");
    cmd.args(["serve", "--mcp", "--root", &root, "--no-history", "--clean-env"])
        .env("LEAK12_CANARY", CANARY)
        .env("XDG_DATA_HOME", common::data_home());
    let mut client = StdioClient::start(&mut cmd);
    let r = client.call("peek", json!({}));
    assert_eq!(r["structuredContent"], json!({"read": false}), "serve: {r}");
}

/// A root with `tools/say.tool` (prints the token in a string and as a key) and
/// `tools/fail.tool` (writes it on standard error, exits 1).
fn saying_root(dir: &Path) {
    common::process::script(
        &dir.join("tools/bin/say.sh"),
        &format!("#!/bin/sh\necho '{{\"said\": \"the token is {TOKEN}\", \"{TOKEN}\": [\"{TOKEN}\"]}}'\n"),
    );
    common::process::script(
        &dir.join("tools/bin/fail.sh"),
        &format!("#!/bin/sh\necho 'backend refused key sk-live-4f9a8b7c6d5e and {TOKEN}' >&2\nexit 1\n"),
    );
    std::fs::write(
        dir.join("tools/say.tool"),
        r#"{"description": "Says", "system_event_endpoint": "exec:./bin/say.sh"}"#,
    )
    .expect("write");
    std::fs::write(
        dir.join("tools/fail.tool"),
        r#"{"description": "Fails", "system_event_endpoint": "exec:./bin/fail.sh"}"#,
    )
    .expect("write");
    composite(dir, "say");
    composite(dir, "fail");
}

fn token_file(dir: &Path) -> String {
    let token = dir.join("upstream.tok");
    std::fs::write(&token, format!("{TOKEN}\n")).expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    token.display().to_string()
}

/// Finding 1 (second half) and finding 7 under `tdsl run`: what an `exec:` tool prints is
/// redacted like an MCP peer's text — in the result, the trace and the history — and its
/// standard error is shown to the operator, redacted.
#[test]
fn a_registered_token_an_exec_tool_prints_is_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    saying_root(dir.path());
    let token = token_file(dir.path());
    let (history, trace) = (dir.path().join("history.db"), dir.path().join("trace.json"));
    let root = dir.path().display().to_string();
    let upstream = ["--upstream", "h=http://127.0.0.1:9/mcp", "--upstream-token", &format!("h={token}")];
    let mut args = vec!["run", "--root", &root, "--history", history.to_str().expect("path")];
    args.extend(["--trace", trace.to_str().expect("path")]);
    args.extend(upstream);
    let say = dir.path().join("say_main.tool").display().to_string();
    let out = common::tdsl(&[&args[..], &[&say]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        said,
        json!({"out": {"said": "the token is [redacted]", "[redacted]": ["[redacted]"]}}),
        "{}",
        out.stdout
    );
    let mut seen = vec![out.stdout, out.stderr];
    seen.push(std::fs::read_to_string(&trace).expect("the trace"));

    // Its standard error: the operator's, on `run`'s, redacted; the program by its file name.
    let fail = dir.path().join("fail_main.tool").display().to_string();
    let out = common::tdsl(&[&args[..], &[&fail]].concat());
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "fail.sh exited with status 1 (its standard error ends: backend refused key sk-live-4f9a8b7c6d5e and \
             [redacted])"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(&root), "the host's folder: {}", out.stderr);
    seen.push(out.stderr);
    seen.push(files_named(dir.path(), "history.db"));
    for text in &seen {
        assert!(!text.contains("LEAKCHECK"), "the token reached the output, the trace or the history: {text}");
    }
}

/// Finding 7 under `serve`: a failed `exec:` tool is named to the client by its program's
/// file name and exit status, the client told its standard error is on the server's log,
/// where it is; the history holds neither.
#[test]
fn an_exec_tools_standard_error_reaches_serves_log_and_no_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    saying_root(dir.path());
    let history = dir.path().join("history.db");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--root"]).arg(dir.path()).arg("--history").arg(&history);
    cmd.env("XDG_DATA_HOME", common::data_home());
    let mut client = StdioClient::start(&mut cmd);
    let served = client.call("fail", json!({}));
    let plan = json!({"plan": {"instructions": [{"execution_id": "f", "tool_definition_path": "/tools/fail.tool",
        "arguments": {}, "retry": {"max_retries": 0}}], "response_reference_map": {"out": "REF:f"}}});
    let planned = client.call("run_plan", plan);
    for r in [&served, &planned] {
        let text = r.to_string();
        assert!(text.contains("fail.sh exited with status 1"), "{text}");
        assert!(text.contains("on the server's log"), "{text}");
        assert!(!text.contains("sk-live") && !text.contains("backend refused"), "the tool's stderr: {text}");
        assert!(!text.contains(&dir.path().display().to_string()), "the host's folder: {text}");
    }
    common::process::wait_until(std::time::Duration::from_secs(30), "the log line", || {
        client.process.output().contains("backend refused key sk-live-4f9a8b7c6d5e").then_some(())
    });
    drop(client);
    let stored = files_named(dir.path(), "history.db");
    assert!(stored.contains("fail.sh exited with status 1") && !stored.contains("sk-live"), "the history");
}

/// Finding 8: a token is never sent in clear to an `http://` upstream that is not on this
/// host: a usage error naming https:// and the flag. (A loopback one is fine: the other
/// tests of upstream tokens use one.)
#[test]
fn a_token_for_a_remote_http_upstream_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = token_file(dir.path());
    for url in ["http://192.0.2.2:18790/mcp", "http://example.com/mcp", "http://[2001:db8::1]:80/mcp"] {
        let out = common::tdsl(&[
            "serve",
            "--mcp",
            "--plans",
            "--no-history",
            "--root",
            dir.path().to_str().expect("path"),
            "--upstream",
            &format!("h={url}"),
            "--upstream-token",
            &format!("h={token}"),
        ]);
        assert_eq!(out.code, 2, "{url}: {}", out.stderr);
        assert!(
            out.stderr.contains("--upstream-token")
                && out.stderr.contains("https://")
                && out.stderr.contains("in clear"),
            "{url}: {}",
            out.stderr
        );
    }
}

/// Finding 9: `read_file` and `list_files` do not read the process's own secret files when
/// they lie under `--files` (a token file, the history), by whatever name; and a registered
/// token copied into another file is redacted.
#[test]
fn the_file_functions_refuse_the_processs_secret_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = token_file(dir.path());
    std::fs::hard_link(&token, dir.path().join("other-name")).expect("link");
    std::fs::write(dir.path().join("copy.txt"), format!("the key: {TOKEN}\n")).expect("write");
    let history = dir.path().join("history.db");
    std::fs::create_dir_all(dir.path().join("tools")).expect("mkdir");
    std::fs::write(dir.path().join("tools/echo.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).expect("write");
    let main = dir.path().join("main.tool");
    let root = dir.path().display().to_string();
    let run = |expression: &str| {
        let text = json!({"instructions": [{"execution_id": "r", "tool_definition_path": "/tools/echo.tool",
            "transform_arguments": {"transforms": {"v": expression}}}], "response_reference_map": {"v": "REF:r.v"}});
        std::fs::write(&main, text.to_string()).expect("write");
        let args = ["run", main.to_str().expect("path"), "--root", &root, "--files", &root];
        let args = [&args[..], &["--history", history.to_str().expect("path")]].concat();
        common::tdsl(
            &[&args[..], &["--upstream", "h=http://127.0.0.1:9/mcp", "--upstream-token", &format!("h={token}")]]
                .concat(),
        )
    };
    for name in ["upstream.tok", "other-name", "history.db", "history.db-wal"] {
        let out = run(&format!("read_file(file_path=\"{name}\")"));
        assert_eq!(out.code, 1, "{name}: {}", out.stdout);
        assert!(
            out.stderr.contains("E0702") && out.stderr.contains("holds a secret of this server"),
            "{name}: {}",
            out.stderr
        );
    }
    let out = run("read_file(file_path=\"copy.txt\")");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).expect("JSON"), json!({"v": "the key: [redacted]\n"}));
    let out = run("list_files(\".\")");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed = out.stdout;
    assert!(listed.contains("copy.txt") && listed.contains("main.tool"), "{listed}");
    for name in ["upstream.tok", "other-name", "history.db"] {
        assert!(!listed.contains(&format!("\"{name}\"")), "{name} listed: {listed}");
    }
}
