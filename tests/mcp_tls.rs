//! MCP servers over `https://` (SPEC §13): `--upstream NAME=https://…` called from plans and
//! `mcp:https://…#tool` endpoints run by `tdsl run`, against a `tdsl serve --mcp --listen`
//! behind a TLS front this test runs on loopback (tokio-rustls) with the checked-in test
//! certificates of `tests/data/tls` (`generate.sh` there says how they were made); and the
//! failures a user meets: an untrusted certificate, a wrong name, an expired certificate,
//! TLS against a plain-HTTP port, a bad `--upstream-ca`.
#![cfg(unix)]

mod common;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::{json, Value};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

fn certs() -> PathBuf {
    repo().join("tests/data/tls")
}

fn ca() -> String {
    certs().join("ca.pem").display().to_string()
}

/// A `tdsl` command whose trust is only what the test gives it: no `SSL_CERT_FILE` or
/// `SSL_CERT_DIR` from the environment the tests run in.
fn command() -> Command {
    let mut cmd = Command::new(tdsl());
    cmd.env("NO_COLOR", "1")
        .env("XDG_DATA_HOME", common::data_home())
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    cmd
}

/// `tdsl serve --mcp --listen 127.0.0.1:0` on `tests/data/mcp`, accepting `localhost` and
/// `127.0.0.1` at any port in `Host` (the TLS front's port is not its own).
struct Backend {
    child: Child,
    port: u16,
}

impl Backend {
    fn start() -> Backend {
        let mut child = command()
            .args(["serve", "--mcp", "--no-history", "--listen", "127.0.0.1:0"])
            .args(["--allow-host", "localhost", "--allow-host", "127.0.0.1", "--root"])
            .arg(repo().join("tests/data/mcp"))
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tdsl serve starts");
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines.next().expect("tdsl serve prints its address").expect("a line");
            if let Some((_, rest)) = line.split_once("over MCP at ") {
                break rest.split_whitespace().next().expect("a URL").to_string();
            }
        };
        // Keep reading, so that the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let port = url.rsplit_once(':').and_then(|(_, p)| p.trim_end_matches("/mcp").parse().ok()).expect("a port");
        Backend { child, port }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TLS front on a loopback port: it presents `tests/data/tls/{cert}.pem` and passes the
/// bytes on to the backend's port.
struct TlsFront {
    port: u16,
    _runtime: tokio::runtime::Runtime,
}

impl TlsFront {
    fn start(cert: &str, backend: u16) -> TlsFront {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_file_iter(certs().join(format!("{cert}.pem")))
            .expect("the certificate file")
            .collect::<Result<Vec<_>, _>>()
            .expect("PEM certificates");
        let key = PrivateKeyDer::from_pem_file(certs().join(format!("{cert}.key"))).expect("the key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a server configuration");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("a port");
        let port = listener.local_addr().expect("an address").port();
        runtime.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let Ok(mut back) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut back).await;
                });
            }
        });
        TlsFront { port, _runtime: runtime }
    }
}

/// `tdsl serve --mcp --plans` on stdio, spoken to in raw JSON-RPC.
struct Plans {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Plans {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Plans {
        let mut child = command()
            .args(["serve", "--mcp", "--plans", "--no-history", "--root"])
            .arg(repo().join("examples/document-analysis"))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tdsl starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut plans = Plans { child, stdin, stdout, id: 0 };
        let init = plans.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(init["result"].is_object(), "{init}");
        plans.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        plans
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "the server closed its output");
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))["result"].clone()
    }
}

impl Drop for Plans {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pause_plan() -> Value {
    json!({"plan": {"instructions": [
        {"execution_id": "p", "tool_definition_path": "web/pause", "arguments": {"n": 1}}],
        "response_reference_map": {"n": "REF:p.n"}}})
}

/// A plan calls `web/pause` of an upstream reached over `https://` (by name, then by IP
/// address), its tools are listed in `tdsl://tools`; the private CA is trusted through
/// `--upstream-ca`, then through `SSL_CERT_FILE`.
#[test]
fn a_plan_calls_an_https_upstream() {
    let backend = Backend::start();
    let front = TlsFront::start("localhost", backend.port);
    let web = format!("web=https://localhost:{}/mcp", front.port);
    let web_ca = format!("web={}", ca());
    let mut plans = Plans::start(&["--upstream", &web, "--upstream-ca", &web_ca], &[]);
    let r = plans.call("run_plan", pause_plan());
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["result"], json!({"n": 2}), "{r}");
    let tools = plans.request("resources/read", json!({"uri": "tdsl://tools"}));
    let text = tools["result"]["contents"][0]["text"].as_str().expect("text").to_string();
    assert!(text.contains("`web/pause(n: integer!)` → `{n: integer}`"), "{text}");
    drop(plans);

    // The CA from SSL_CERT_FILE, the server named by its IP address (the certificate
    // names 127.0.0.1 too).
    let web = format!("web=https://127.0.0.1:{}/mcp", front.port);
    let mut plans = Plans::start(&["--upstream", &web], &[("SSL_CERT_FILE", &ca())]);
    let r = plans.call("run_plan", pause_plan());
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["result"], json!({"n": 2}), "{r}");
}

/// Without the private CA the upstream's certificate is refused, and the answer says why
/// and what to do; the plans server goes on.
#[test]
fn an_https_upstream_with_an_untrusted_certificate_is_named_in_the_answer() {
    let backend = Backend::start();
    let front = TlsFront::start("localhost", backend.port);
    let web = format!("web=https://localhost:{}/mcp", front.port);
    let mut plans = Plans::start(&["--upstream", &web], &[]);
    for _ in 0..2 {
        let r = plans.call("run_plan", pause_plan());
        assert_eq!(r["isError"], true, "{r}");
        let problems = r["structuredContent"]["upstream_problems"].to_string();
        assert!(
            problems.contains("web")
                && problems.contains("is not signed by a CA tdsl trusts")
                && problems.contains("--upstream-ca"),
            "{r}"
        );
    }
}

/// A root whose `remote.tool` is `mcp:URL#pause` and whose `main.tool` calls it with n = 1.
fn calling_root(dir: &Path, url: &str) -> PathBuf {
    let root = dir.join("calling");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(
        root.join("remote.tool"),
        format!(
            r#"{{"description": "Adds one to n, over MCP and TLS",
                "arguments": [{{"name": "n", "type_name": "integer", "required": true}}],
                "responses": [{{"name": "n", "type_name": "integer", "required": true}}],
                "system_event_endpoint": "mcp:{url}#pause"}}"#
        ),
    )
    .expect("write");
    std::fs::write(
        root.join("main.tool"),
        r#"{"instructions": [{"execution_id": "call", "tool_definition_path": "/remote.tool", "arguments": {"n": 1}}],
            "responses": [{"name": "n", "type_name": "integer", "required": true}],
            "response_reference_map": {"n": "REF:call.n"}}"#,
    )
    .expect("write");
    root
}

/// Runs `main.tool` of `root` with `tdsl run`: exit code, stdout, stderr.
fn run(root: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let out = command()
        .arg("run")
        .arg(root.join("main.tool"))
        .arg("--root")
        .arg(root)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("tdsl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mcp:https://…#pause` in a `.tool` file, run by `tdsl run` with the CA in `SSL_CERT_FILE`.
#[test]
fn an_mcp_https_endpoint_runs_from_a_tool_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = Backend::start();
    let front = TlsFront::start("localhost", backend.port);
    let root = calling_root(dir.path(), &format!("https://localhost:{}/mcp", front.port));
    let (code, stdout, stderr) = run(&root, &[("SSL_CERT_FILE", &ca())]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).expect("JSON"), json!({"n": 2}), "{stderr}");
    // The same endpoint over plain http:// to the backend itself.
    let plain = calling_root(&dir.path().join("plain"), &format!("http://127.0.0.1:{}/mcp", backend.port));
    let (code, stdout, stderr) = run(&plain, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).expect("JSON"), json!({"n": 2}), "{stderr}");
}

/// Each TLS failure fails the step with a message that names it: a certificate no trusted
/// CA signed, one for another name, one that has expired, and `https://` to a plain-HTTP
/// port; a `SSL_CERT_FILE` that cannot be read is named too.
#[test]
fn tls_failures_say_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = Backend::start();
    let good = TlsFront::start("localhost", backend.port);
    let wrong = TlsFront::start("wrong-name", backend.port);
    let expired = TlsFront::start("expired", backend.port);
    let ca = ca();
    let trusted = [("SSL_CERT_FILE", ca.as_str())];
    let fifo = dir.path().join("ca.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success(), "mkfifo failed");
    let fifo = fifo.display().to_string();
    let fifo_env = [("SSL_CERT_FILE", fifo.as_str())];
    type Env<'a> = &'a [(&'a str, &'a str)];
    let cases: Vec<(&str, u16, Env, Vec<&str>)> = vec![
        ("untrusted", good.port, &[], vec!["is not signed by a CA tdsl trusts", "SSL_CERT_FILE"]),
        (
            "wrong-name",
            wrong.port,
            &trusted,
            vec!["is not valid for the name `localhost`", "(it is for wrong.example)"],
        ),
        ("expired", expired.port, &trusted, vec!["expired on 2021-01-01 00:00:00 UTC"]),
        ("plain", backend.port, &trusted, vec!["did not answer in TLS", "http://"]),
        ("no-file", good.port, &[("SSL_CERT_FILE", "/nonexistent/ca.pem")], vec!["SSL_CERT_FILE=/nonexistent/ca.pem"]),
        // A FIFO hung the first call (the step's timeout did not end it: the roots are
        // loaded before), /dev/zero filled the memory.
        ("fifo", good.port, &fifo_env, vec!["SSL_CERT_FILE=", "a FIFO (named pipe), not a regular file"]),
        ("dev-zero", good.port, &[("SSL_CERT_FILE", "/dev/zero")], vec!["SSL_CERT_FILE=/dev/zero: it is a device"]),
    ];
    for (name, port, env, says) in cases {
        let root = calling_root(&dir.path().join(name), &format!("https://localhost:{port}/mcp"));
        let started = std::time::Instant::now();
        let (code, stdout, stderr) = run(&root, env);
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{name} took {:?}", started.elapsed());
        assert_ne!(code, 0, "{name}: {stdout}");
        for s in says {
            assert!(stderr.contains(s), "{name} should say {s:?}:\n{stderr}");
        }
        assert!(!stderr.contains("WorkerTransport"), "{name}: rmcp's types leak:\n{stderr}");
        // None of these is retried: the next try would fail the same way.
        assert!(
            ["no-file", "fifo", "dev-zero"].contains(&name) || !stderr.contains("attempts"),
            "{name} was retried:\n{stderr}"
        );
    }
}

fn serve(args: &[&str]) -> (i32, String) {
    let out = command()
        .args(["serve", "--mcp", "--no-history", "--plans", "--root"])
        .arg(repo().join("examples/document-analysis"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("tdsl runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A bad `--upstream-ca` is a usage error (exit 2) before anything starts.
#[test]
fn serve_refuses_a_bad_upstream_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").expect("write");
    let key_only = certs().join("localhost.key").display().to_string();
    let fifo = dir.path().join("ca.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success(), "mkfifo failed");
    let sparse = dir.path().join("sparse.pem");
    std::fs::File::create(&sparse).and_then(|f| f.set_len(1 << 30)).expect("a sparse file");
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").expect("write");
    let https = ["--upstream", "web=https://localhost:1/mcp"];
    let with = |ca: &str| format!("web={ca}");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--upstream-ca".into(), with("/nonexistent/ca.pem")], "cannot read /nonexistent/ca.pem"),
        (vec!["--upstream-ca".into(), with(&not_pem.display().to_string())], "holds no certificate"),
        (vec!["--upstream-ca".into(), with(&key_only)], "holds no certificate"),
        // A FIFO hung `serve` at its start; /dev/zero and a sparse 1 GB file were read whole
        // (9 GB of memory for /dev/zero before it was killed).
        (vec!["--upstream-ca".into(), with(&fifo.display().to_string())], "a FIFO (named pipe), not a regular file"),
        (vec!["--upstream-ca".into(), with("/dev/zero")], "a device, not a regular file"),
        (vec!["--upstream-ca".into(), with(&sparse.display().to_string())], "larger than 16 MiB"),
        (vec!["--upstream-ca".into(), with(&dir.path().display().to_string())], "a folder, not a regular file"),
        (vec!["--upstream-ca".into(), with(&empty.display().to_string())], "holds no certificate"),
        (vec!["--upstream-ca".into(), "other=x".into()], "no --upstream named `other`"),
        (vec!["--upstream-ca".into(), "web".into()], "write NAME=FILE"),
        (vec!["--upstream-ca".into(), with(&ca()), "--upstream-ca".into(), with(&ca())], "has a CA file already"),
    ];
    for (extra, says) in cases {
        let mut args: Vec<&str> = https.to_vec();
        args.extend(extra.iter().map(String::as_str));
        let started = std::time::Instant::now();
        let (code, stderr) = serve(&args);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{args:?} took {:?}", started.elapsed());
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} should say {says:?}: {stderr}");
    }
    let web_ca = with(&ca());
    let (code, stderr) = serve(&["--upstream", "web=http://localhost:1/mcp", "--upstream-ca", &web_ca]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a CA is for https://"), "{stderr}");
    let (code, stderr) = serve(&["--upstream", "web=some-server", "--upstream-ca", &web_ca]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("started as a command"), "{stderr}");
    // A password in the URL is refused without being echoed (it was, twice); a port out of
    // range is named (it was taken as none: port 443).
    let (code, stderr) = serve(&["--upstream", "web=https://bob:hunter2@127.0.0.1:8443/mcp"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("a user name or password in the URL is not sent") && !stderr.contains("hunter2"),
        "{stderr}"
    );
    let (code, stderr) = serve(&["--upstream", "web=https://127.0.0.1:65536/mcp"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("the port `65536` is not one of 1–65535"), "{stderr}");
}

/// A loopback port whose every connection reads what the client sends, answers `bytes`,
/// and is closed after 3 s.
fn answering(bytes: &'static [u8]) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            std::thread::spawn(move || {
                use std::io::Read;
                let mut tcp = tcp;
                let mut hello = [0u8; 4096];
                let _ = tcp.read(&mut hello);
                let _ = tcp.write_all(bytes);
                std::thread::sleep(std::time::Duration::from_secs(3));
            });
        }
    });
    port
}

/// A server that answers in TLS records but breaks the handshake was said to be "a plain
/// HTTP server"; one that announces a handshake message of 1 MiB (a certificate chain that
/// long) too. Each is named for what it is; a plain HTTP answer still says http://.
#[test]
fn a_broken_tls_handshake_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, &'static [u8], &str); 3] = [
        (
            "plain",
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            "did not answer in TLS (a plain HTTP server?",
        ),
        // A record of 4 bytes: a Certificate message announcing 1 MiB.
        (
            "huge-chain",
            b"\x16\x03\x03\x00\x04\x0b\x10\x00\x00",
            "sent a TLS handshake message larger than tdsl accepts",
        ),
        // A record of 5 bytes: a ServerHello of one byte.
        ("garbled", b"\x16\x03\x03\x00\x05\x02\x00\x00\x01\x00", "broke the TLS protocol in its handshake"),
    ];
    for (name, bytes, says) in cases {
        let port = answering(bytes);
        let root = calling_root(&dir.path().join(name), &format!("https://localhost:{port}/mcp"));
        let (code, _, stderr) = run(&root, &[]);
        assert_ne!(code, 0, "{name}");
        assert!(stderr.contains(says), "{name} should say {says:?}:\n{stderr}");
        assert!(name == "plain" || !stderr.contains("plain HTTP"), "{name}:\n{stderr}");
    }
}

/// A server that takes the connection and never answers the TLS handshake (slowloris)
/// fails each attempt after 10 s saying so (a transient error, retried): it waited for the
/// step's timeout, or for `initialize`'s 30 s, and said only that the call timed out.
#[test]
fn a_server_that_never_finishes_the_tls_handshake_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for tcp in listener.incoming().flatten() {
            held.push(tcp);
        }
    });
    let root = calling_root(dir.path(), &format!("https://localhost:{port}/mcp"));
    let started = std::time::Instant::now();
    let (code, _, stderr) = run(&root, &[]);
    assert_ne!(code, 0);
    assert!(stderr.contains("did not finish the TLS handshake within 10 s"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(80), "took {:?}", started.elapsed());
}
