//! The hostile round of `tdsl compose` (issue 31): the model endpoint is an untrusted peer.
//! Each test is a server (`compose_support::RawServer`) that answers what a hostile or
//! broken model server would — endless bodies, stalls, redirects, escapes, echoed keys — and
//! checks that `tdsl compose` ends in bounded time with a clear error naming the phase and
//! the URL, never a panic, and never shows the key or the URL's credentials.

mod common;
mod compose_support;

use std::io::Write;
use std::thread;
use std::time::Duration;

use compose_support::{openai_body, query_args, root, tdsl_compose, write_answer, Out, RawServer};
use serde_json::Value as Json;

const KEY: &str = "sk-test-HOSTILE-91c4e2a7d0";

fn compose_env(base: &str, more: &[&str], key: &str) -> Out {
    let r = root();
    tdsl_compose(&query_args(&r, "openai:test-model", base, more), "openai", key)
}

fn compose(base: &str, more: &[&str]) -> Out {
    compose_env(base, more, KEY)
}

/// The composition failed in phase 1 with `status` and an error naming the phase and `url`.
fn failed_in_decompose(out: &Out, status: &str, url: &str) -> String {
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json["status"], status, "{}", out.stdout);
    let error = out.json["error"].as_str().unwrap_or_default().to_string();
    assert!(error.starts_with("decompose: "), "{error}");
    assert!(error.contains(url), "{error}");
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    error
}

#[test]
fn an_endless_chunked_body_is_cut_off_bounded() {
    let server = RawServer::start(|conn| {
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        let chunk = format!("{:x}\r\n{}\r\n", 65536, " ".repeat(65536));
        // 1 GB at most, and the client hangs up long before.
        for _ in 0..16384 {
            if conn.write_all(chunk.as_bytes()).is_err() {
                return;
            }
        }
    });
    let url = server.url("/v1");
    let out = compose(&url, &["--decompose-timeout", "5"]);
    let error = failed_in_decompose(&out, "FAILED", &url);
    assert!(error.contains("larger than"), "{error}");
    assert!(out.took < Duration::from_secs(20), "{:?}", out.took);
}

#[test]
fn a_slow_endless_body_ends_at_the_phase_timeout() {
    let server = RawServer::start(|conn| {
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        for _ in 0..600 {
            if conn.write_all(b"1\r\n \r\n").is_err() {
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
    let url = server.url("/v1");
    let out = compose(&url, &["--decompose-timeout", "1.5"]);
    failed_in_decompose(&out, "TIMEOUT", &url);
    assert!(out.took < Duration::from_secs(15), "{:?}", out.took);
}

#[test]
fn a_server_that_never_answers_ends_at_the_phase_timeout() {
    let server = RawServer::start(|_conn| thread::sleep(Duration::from_secs(30)));
    let url = server.url("/v1");
    let out = compose(&url, &["--decompose-timeout", "1"]);
    failed_in_decompose(&out, "TIMEOUT", &url);
    assert!(out.took < Duration::from_secs(15), "{:?}", out.took);
}

#[test]
fn headers_then_a_stall_ends_at_the_phase_timeout() {
    let server = RawServer::start(|conn| {
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\"");
        thread::sleep(Duration::from_secs(30));
    });
    let url = server.url("/v1");
    let out = compose(&url, &["--decompose-timeout", "1"]);
    failed_in_decompose(&out, "TIMEOUT", &url);
    assert!(out.took < Duration::from_secs(15), "{:?}", out.took);
}

#[test]
fn a_body_closed_midway_is_an_error_naming_the_url() {
    let server = RawServer::start(|conn| {
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\"");
    });
    let url = server.url("/v1");
    let out = compose(&url, &[]);
    failed_in_decompose(&out, "FAILED", &url);
}

#[test]
fn invalid_utf8_and_deep_json_are_errors_not_crashes() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let bodies: Vec<Vec<u8>> = vec![b"{\"choices\": [\xff\xfe]}".to_vec(), deep.into_bytes()];
    for body in bodies {
        let server = RawServer::start(move |conn| write_answer(conn, 200, "", &body));
        let url = server.url("/v1");
        let out = compose(&url, &[]);
        failed_in_decompose(&out, "FAILED", &url);
    }
}

#[test]
fn deep_json_in_the_answer_text_is_a_repair_round_then_an_error() {
    let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let server = RawServer::start(move |conn| write_answer(conn, 200, "", openai_body(&deep).as_bytes()));
    let url = server.url("/v1");
    let out = compose(&url, &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    let error = out.json["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("decompose: no valid answer after 2 requests"), "{error}");
}

/// Phase 1's answer with sub-question ids that hold terminal escapes and a cycle of length 1.
#[test]
fn escapes_in_what_the_model_says_never_reach_the_terminal_raw() {
    let answer = serde_json::json!({
        "sub_questions": [
            {"id": "a\u{1b}]0;pwned\u{7}", "question": "What is the first document about?", "intent": "DESCRIPTIVE",
             "entities": [], "depends_on": ["a\u{1b}]0;pwned\u{7}"], "priority": 1},
            {"id": "b\u{1b}[2J", "question": "How long is the first document?", "intent": "DESCRIPTIVE",
             "entities": [], "depends_on": [], "priority": 1}
        ],
        "decomposition_reasoning": "\u{1b}[31mred"
    })
    .to_string();
    let server = RawServer::start(move |conn| write_answer(conn, 200, "", openai_body(&answer).as_bytes()));
    let url = server.url("/v1");
    let out = compose(&url, &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    assert!(out.json["error"].as_str().unwrap_or_default().contains("Circular"), "{}", out.stdout);
    assert!(!out.stderr.contains('\u{1b}') && !out.stderr.contains('\u{7}'), "{:?}", out.stderr);
    assert!(out.stderr.contains("\\x1b"), "{:?}", out.stderr);
}

#[test]
fn ten_thousand_sub_questions_are_refused_by_count() {
    let subs: Vec<Json> = (0..10_000)
        .map(|i| {
            serde_json::json!({"id": format!("sq_{i}"), "question": "What is in the document number?",
                "intent": "DESCRIPTIVE", "entities": [], "depends_on": [], "priority": 1})
        })
        .collect();
    let answer = serde_json::json!({"sub_questions": subs, "decomposition_reasoning": "many"}).to_string();
    let server = RawServer::start(move |conn| write_answer(conn, 200, "", openai_body(&answer).as_bytes()));
    let out = compose(&server.url("/v1"), &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    assert!(out.json["error"].as_str().unwrap_or_default().contains("got 10000"), "{}", out.json["error"]);
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_and_the_key_stays_home() {
    let elsewhere = RawServer::start(|conn| write_answer(conn, 200, "", openai_body("{}").as_bytes()));
    let target = elsewhere.url("/v1/chat/completions");
    let server = RawServer::start(move |conn| write_answer(conn, 307, &format!("Location: {target}\r\n"), b""));
    let url = server.url("/v1");
    let out = compose(&url, &[]);
    let error = failed_in_decompose(&out, "FAILED", &url);
    assert!(error.contains("307") && error.contains("redirect"), "{error}");
    assert!(elsewhere.seen.lock().unwrap().is_empty(), "the request followed the redirect");
}

#[test]
fn credentials_in_the_base_url_never_show() {
    let server = RawServer::start(|conn| {
        write_answer(conn, 401, "", br#"{"error": {"message": "no", "type": "invalid_request_error"}}"#)
    });
    let base = format!("http://alice:s3cretpass@127.0.0.1:{}/v1", server.port);
    let trace = std::env::temp_dir().join(format!("tdsl-hostile-trace-{}.json", std::process::id()));
    let out = compose(&base, &["--trace", trace.to_str().unwrap_or_default()]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    let error = out.json["error"].as_str().unwrap_or_default();
    assert!(error.contains(&format!("http://127.0.0.1:{}/v1/chat/completions", server.port)), "{error}");
    for text in [&out.stdout, &out.stderr] {
        assert!(!text.contains("s3cretpass") && !text.contains("alice"), "{text}");
    }
    let _ = std::fs::remove_file(trace);
}

#[test]
fn a_key_with_a_newline_is_refused_before_any_request() {
    let server = RawServer::start(|conn| write_answer(conn, 200, "", openai_body("{}").as_bytes()));
    let out = compose_env(&server.url("/v1"), &[], "sk-one\r\nX-Injected: yes");
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("OPENAI_API_KEY"), "{}", out.stderr);
    assert!(!out.stderr.contains("sk-one") && !out.stderr.contains("X-Injected"), "{}", out.stderr);
    assert!(server.seen.lock().unwrap().is_empty());
}

#[test]
fn rate_limited_forever_stops_within_the_phase_timeout() {
    for retry_after in ["1000000000000", "-5", "Wed, 21 Oct 2099 07:28:00 GMT"] {
        let extra = format!("Retry-After: {retry_after}\r\n");
        let server = RawServer::start(move |conn| {
            write_answer(conn, 429, &extra, br#"{"error": {"message": "slow down", "type": "requests"}}"#)
        });
        let url = server.url("/v1");
        let out = compose(&url, &["--decompose-timeout", "2"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let error = out.json["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("decompose: ") && error.contains(&url) && error.contains("429"), "{error}");
        assert!(out.took < Duration::from_secs(15), "{retry_after}: {:?}", out.took);
    }
}

#[test]
fn an_error_body_echoing_the_key_is_redacted() {
    let server = RawServer::start(|conn| {
        let body = format!(r#"{{"error": {{"message": "bad key {KEY} and again {KEY}", "type": "auth"}}}}"#);
        write_answer(conn, 503, "", body.as_bytes())
    });
    let out = compose(&server.url("/v1"), &["--decompose-timeout", "2"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("[redacted]"), "{}", out.stdout);
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
}

#[test]
fn a_base_url_on_a_non_http_port_is_an_error_naming_it() {
    // A server that speaks first, and not HTTP (an SMTP-like banner), then hangs up.
    let server = RawServer::start(|conn| {
        let _ = conn.write_all(b"220 mail.example ESMTP ready\r\n");
    });
    let url = server.url("/v1");
    let out = compose(&url, &["--decompose-timeout", "3"]);
    failed_in_decompose(&out, "FAILED", &url);
    assert!(out.took < Duration::from_secs(15));
}

/// A server answering each phase, in order, with the given message contents (OpenAI's
/// format); `@DOCS@` becomes the example's documents folder.
fn scripted(script: Vec<(&'static str, String)>) -> RawServer {
    let docs = common::example("document-analysis").join("documents").display().to_string();
    let queue = std::sync::Mutex::new(
        script.into_iter().map(|(p, t)| (p.to_string(), t.replace("@DOCS@", &docs))).collect::<Vec<_>>(),
    );
    RawServer::by_phase(move |conn, phase| {
        let next = {
            let mut q = queue.lock().unwrap();
            q.iter().position(|(p, _)| p == phase).map(|i| q.remove(i).1)
        };
        match next {
            Some(text) if text == "@429@" => write_answer(
                conn,
                429,
                "Retry-After: 0\r\n",
                format!(r#"{{"error": {{"message": "slow down, {KEY}", "type": "requests"}}}}"#).as_bytes(),
            ),
            Some(text) => write_answer(conn, 200, "", openai_body(&text).as_bytes()),
            None => write_answer(conn, 400, "", br#"{"error": {"message": "no answer left"}}"#),
        }
    })
}

fn file(name: &str) -> String {
    std::fs::read_to_string(compose_support::data(name)).expect("a data file")
}

fn plan_with(instructions: Json) -> String {
    serde_json::json!({
        "tool_mappings": [
            {"sub_question_id": "sq_1", "tool_name": "document_validator", "tool_category": "DESCRIPTIVE",
             "agent_name": "tdsl", "confidence": 0.9, "execution_ids": []},
            {"sub_question_id": "sq_2", "tool_name": "basic_extractor", "tool_category": "DESCRIPTIVE",
             "agent_name": "tdsl", "confidence": 0.9, "execution_ids": []}
        ],
        "plan": instructions,
        "planning_reasoning": "hostile"
    })
    .to_string()
}

#[test]
fn plans_that_reach_outside_the_root_or_define_exec_tools_never_run() {
    let marker = std::env::temp_dir().join(format!("tdsl-hostile-pwned-{}", std::process::id()));
    let m = marker.display().to_string();
    let hostile = [
        // A tool path outside the root, and one up the tree.
        serde_json::json!({"instructions": [{"execution_id": "x", "tool_definition_path": "/bin/sh", "arguments": {}}]}),
        serde_json::json!({"instructions": [
            {"execution_id": "x", "tool_definition_path": "../../../../../../etc/passwd", "arguments": {}}]}),
        // A primitive tool inline: an `exec:` endpoint that would create the marker.
        serde_json::json!({"system_event_endpoint": format!("exec:touch {m}"), "instructions": []}),
        serde_json::json!({"instructions": [{"execution_id": "x", "tool_definition_path": "document_validator",
            "system_event_endpoint": format!("exec:touch {m}"), "arguments": {"file_paths": []}}]}),
    ];
    for plan in hostile {
        let server = scripted(vec![
            ("decompose", file("decompose_ok.json")),
            ("plan", plan_with(plan.clone())),
            ("plan", plan_with(plan.clone())),
            ("plan", plan_with(plan.clone())),
        ]);
        let out = compose(&server.url("/v1"), &[]);
        assert_eq!(out.json["status"], "FAILED", "{plan}: {}", out.stdout);
        let error = out.json["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("plan: no valid answer after 3 requests"), "{plan}: {error}");
        assert!(out.json["execution"].is_null(), "{plan}");
        // Refused by the plan checker, not for the shape of the answer.
        let first = out.json["errors"][0].as_str().unwrap_or_default().to_string();
        assert!(!first.contains("not a valid execution_plan"), "{plan}: {first}");
        eprintln!("{plan}: {first}");
        assert!(!marker.exists(), "{plan}: the exec: endpoint ran");
    }
}

#[test]
fn a_plan_of_megabytes_is_refused_by_size() {
    // 1 MB inside the answer limit: the plan checker's size limit (256 KiB) refuses it.
    let big = serde_json::json!({"instructions": [{"execution_id": "x", "tool_definition_path": "document_validator",
        "arguments": {"file_paths": ["x".repeat(1_000_000)]}}]});
    let server = scripted(vec![
        ("decompose", file("decompose_ok.json")),
        ("plan", plan_with(big.clone())),
        ("plan", plan_with(big.clone())),
        ("plan", plan_with(big)),
    ]);
    let out = compose(&server.url("/v1"), &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    assert!(out.json["errors"][0].as_str().unwrap_or_default().contains("262144"), "{}", out.json["errors"][0]);
    // 50 MB: past the answer limit, read no further.
    let huge = "x".repeat(50 * 1024 * 1024);
    let server = scripted(vec![("decompose", file("decompose_ok.json")), ("plan", huge)]);
    let url = server.url("/v1");
    let out = compose(&url, &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    let error = out.json["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("plan: ") && error.contains("larger than") && error.contains(&url), "{error}");
}

#[test]
fn a_synthesis_with_bad_citations_or_confidence_is_refused_and_escapes_stay_in_json() {
    let mut bad: Json = serde_json::from_str(&file("synthesize_ok.json")).expect("json");
    bad["citations"] = serde_json::json!(["check", "no_such_step"]);
    bad["confidence"] = serde_json::json!(2.0);
    let nan = file("synthesize_ok.json").replace("0.86", "NaN");
    let server = scripted(vec![
        ("decompose", file("decompose_ok.json")),
        ("plan", file("plan_ok.json")),
        ("synthesize", bad.to_string()),
        ("synthesize", nan),
    ]);
    let out = compose(&server.url("/v1"), &[]);
    assert_eq!(out.json["status"], "FAILED", "{}", out.stderr);
    let errors = out.json["errors"].to_string();
    assert!(errors.contains("no_such_step") && errors.contains("confidence"), "{errors}");
    assert!(!out.json["execution"].is_null(), "what was done so far is kept");

    let mut escaped: Json = serde_json::from_str(&file("synthesize_ok.json")).expect("json");
    escaped["answer"] =
        Json::String(format!("\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J{}", "Both documents are readable. ".repeat(3)));
    escaped["confidence"] = serde_json::json!(-1);
    let server = scripted(vec![
        ("decompose", file("decompose_ok.json")),
        ("plan", file("plan_ok.json")),
        ("synthesize", escaped.to_string()),
        ("synthesize", escaped.to_string()),
    ]);
    let out = compose(&server.url("/v1"), &[]);
    assert_eq!(out.json["status"], "FAILED");
    assert!(out.json["errors"].to_string().contains("`confidence` is -1"), "{}", out.json["errors"]);
    assert!(!out.stdout.contains('\u{1b}') && !out.stderr.contains('\u{1b}'), "{:?}", out.stderr);
}

#[test]
fn a_locked_history_delays_the_record_but_loses_nothing() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let history = dir.path().join("history.db");
    let h = history.to_str().unwrap_or_default().to_string();
    // Create the history, then lock it from another connection for two seconds.
    let created = common::tdsl(&["history", "list", "--history", &h, "--format", "json"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let conn = rusqlite::Connection::open(&history).expect("the history opens");
    conn.execute_batch("BEGIN EXCLUSIVE").expect("the history locks");
    let unlock = thread::spawn(move || {
        thread::sleep(Duration::from_secs(2));
        conn.execute_batch("COMMIT").expect("unlocks");
    });
    let server = scripted(vec![
        ("decompose", file("decompose_ok.json")),
        ("plan", file("plan_ok.json")),
        ("synthesize", file("synthesize_ok.json")),
    ]);
    let base = server.url("/v1");
    let r = root();
    let out = tdsl_compose(&query_args(&r, "openai:m", &base, &["--history", &h]), "openai", KEY);
    let _ = unlock.join();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let listed = common::tdsl(&["history", "list", "--history", &h, "--format", "json"]);
    assert!(listed.stdout.contains("compose"), "{}", listed.stdout);
    let bytes = std::fs::read(&history).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&bytes).contains(KEY));
}

#[test]
fn neither_the_key_nor_url_credentials_reach_the_history_or_the_trace() {
    let server = scripted(vec![
        ("decompose", "@429@".to_string()),
        ("decompose", file("decompose_ok.json")),
        ("plan", file("plan_ok.json")),
        ("synthesize", "@429@".to_string()),
        ("synthesize", file("synthesize_ok.json")),
    ]);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let history = dir.path().join("history.db");
    let trace = dir.path().join("trace.json");
    let base = format!("http://alice:s3cretpass@127.0.0.1:{}/v1", server.port);
    let (h, t) = (history.to_str().unwrap_or_default(), trace.to_str().unwrap_or_default());
    let out = compose(&base, &["--history", h, "--trace", t]);
    assert_eq!(out.json["status"], "SUCCESS", "{}\n{}", out.stdout, out.stderr);
    let errors = out.json["errors"].to_string();
    assert!(errors.contains("429") && errors.contains("[redacted]"), "{errors}");
    let mut texts = vec![out.stdout.clone(), out.stderr.clone()];
    for f in [&history, &trace] {
        texts.push(String::from_utf8_lossy(&std::fs::read(f).expect("written")).into_owned());
    }
    // SQLite's write-ahead log, when it is still there, holds rows too.
    texts.push(
        String::from_utf8_lossy(&std::fs::read(dir.path().join("history.db-wal")).unwrap_or_default()).into_owned(),
    );
    let shown = common::tdsl(&["history", "list", "--history", h, "--format", "json"]);
    texts.push(shown.stdout);
    for text in &texts {
        assert!(!text.contains(KEY) && !text.contains("s3cretpass"), "{text}");
    }
}

#[test]
fn a_302_to_another_origin_never_carries_anthropics_key() {
    let elsewhere = RawServer::start(|conn| write_answer(conn, 200, "", b"{}"));
    let target = elsewhere.url("/v1/messages");
    let server = RawServer::start(move |conn| write_answer(conn, 302, &format!("Location: {target}\r\n"), b""));
    let (r, base) = (root(), server.url(""));
    let out = tdsl_compose(&query_args(&r, "anthropic:m", &base, &[]), "anthropic", KEY);
    let seen = elsewhere.seen.lock().unwrap().clone();
    assert!(seen.is_empty(), "the redirect was followed with {seen:?}");
    assert!(out.stdout.contains("answered 302: a redirect to http://127.0.0.1:"), "{}", out.stdout);
}
