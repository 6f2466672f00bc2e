//! `tdsl compose` and the `Composer` (issue 31, SPEC §14) against a scripted model server
//! that speaks OpenAI's chat completions and Anthropic's Messages on a loopback port
//! (`compose_support`), with the example's real tools (`examples/document-analysis`).

mod common;
mod compose_support;

use std::process::Command;
use std::sync::Arc;

use compose_support::{data, query_args, root, tdsl_compose, Answer, ModelServer, Out};
use serde_json::Value as Json;

use tdsl::{client_for, ComposeConfig, Composer, CompositionStatus};
use tdsl::{ManualTime, SeededRandom};

const KEY: &str = "sk-test-LEAKCHECK-7f3a9c1e5b";

/// Runs `tdsl compose` with the key in the provider's variable.
fn compose(args: &[&str], provider: &str) -> Out {
    tdsl_compose(args, provider, KEY)
}

/// `compose QUERY --root … --model PROVIDER:test-model --base-url … --no-history` + `more`.
fn run(server: &ModelServer, provider: &str, more: &[&str]) -> Out {
    let base = if provider == "anthropic" { server.url("") } else { server.url("/v1") };
    let model = format!("{provider}:test-model");
    let r = root();
    compose(&query_args(&r, &model, &base, more), provider)
}

fn clean_script() -> Vec<(&'static str, Answer)> {
    vec![
        ("decompose", Answer::File("decompose_ok.json")),
        ("plan", Answer::File("plan_ok.json")),
        ("synthesize", Answer::File("synthesize_ok.json")),
    ]
}

fn assert_clean(out: &Out, server: &ModelServer) {
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let j = &out.json;
    assert_eq!(j["status"], "SUCCESS", "{}", out.stdout);
    assert_eq!(j["success"], true);
    assert_eq!(j["decomposition"]["question_count"], 2);
    assert_eq!(j["decomposition"]["has_dependencies"], true);
    assert_eq!(j["plan"]["parallel_groups"], serde_json::json!([["check"], ["info"]]));
    assert_eq!(j["plan"]["steps"][1]["depends_on_steps"], serde_json::json!(["check"]));
    assert_eq!(j["plan"]["steps"][1]["sub_question_id"], "sq_2");
    assert_eq!(j["plan"]["repair_rounds"], 0);
    // The tools really ran: the trace under seed 000's names.
    let exec = &j["execution"];
    assert_eq!(exec["overall_status"], "SUCCESS", "{exec}");
    assert_eq!(exec["tools_succeeded"], 2);
    let steps = exec["step_results"].as_array().unwrap();
    assert_eq!(steps[0]["output"]["valid_documents"].as_array().unwrap().len(), 2);
    assert_eq!(steps[1]["output"]["filename"], "meeting-notes.txt");
    assert_eq!(j["response"]["citations"], serde_json::json!(["check", "info"]));
    assert!(j["response"]["answer"].as_str().unwrap().len() >= 50);
    for phase in ["decompose", "plan", "execute", "synthesize"] {
        assert!(j["phase_durations"][phase].is_u64(), "{phase}: {}", j["phase_durations"]);
    }
    assert!(j["total_duration_ms"].is_u64());
    assert!(j["started_at"].as_str().unwrap().ends_with('Z'));
    assert!(j["completed_at"].is_string());
    assert!(j["usage"]["plan"]["input_tokens"].as_u64().unwrap() > 0);
    // One request per phase.
    let phases: Vec<String> = server.requests().iter().map(|r| r.phase.clone()).collect();
    assert_eq!(phases, ["decompose", "plan", "synthesize"]);
    // The plan request carries the guide and the tools listing.
    let plan = &server.of_phase("plan")[0].body;
    assert!(
        plan.contains("Writing a tdsl plan") && plan.contains("document_validator(file_paths: list<string>!"),
        "{plan}"
    );
}

#[test]
fn a_clean_run_with_openai_chat_completions() {
    let server = ModelServer::start(&clean_script(), Some(KEY));
    let out = run(&server, "openai", &[]);
    assert_clean(&out, &server);
    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
    let body = r.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], false);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "decomposition_result");
    assert_eq!(out.json["model_used"], "openai:test-model");
}

#[test]
fn a_clean_run_with_anthropic_messages() {
    let server = ModelServer::start(&clean_script(), Some(KEY));
    let out = run(&server, "anthropic", &[]);
    assert_clean(&out, &server);
    let r = &server.requests()[1];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], KEY);
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert!(!r.headers.contains_key("authorization"));
    let body = r.json();
    assert_eq!(body["tool_choice"], serde_json::json!({"type": "tool", "name": "execution_plan"}));
    assert_eq!(body["tools"][0]["name"], "execution_plan");
    assert!(body["tools"][0]["input_schema"]["properties"]["tool_mappings"].is_object());
    assert!(body["max_tokens"].is_u64());
    assert!(body["system"].as_str().unwrap().contains("Phase 2, PLAN"));
}

#[test]
fn a_plan_is_repaired_after_a_diagnostic() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_placeholder.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "openai", &[]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    assert_eq!(out.json["plan"]["repair_rounds"], 1);
    let plans = server.of_phase("plan");
    assert_eq!(plans.len(), 2);
    // The second request hands back the first plan and its diagnostic, located.
    let second = plans[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "system, the task, the refused plan, the repair");
    assert_eq!(messages[2]["role"], "assistant");
    assert!(messages[2]["content"].as_str().unwrap().contains("{{check.valid_documents[0]}}"));
    let repair = messages[3]["content"].as_str().unwrap();
    assert!(repair.contains("E1311 at plan/instructions/1/arguments/document_path"), "{repair}");
    assert!(repair.contains("REF:check.valid_documents.0"), "the help shows the tdsl form: {repair}");
    assert!(out.json["errors"][0].as_str().unwrap().starts_with("plan: round 1: E1311"), "{}", out.json["errors"]);
}

#[test]
fn a_plan_that_never_checks_stops_after_the_rounds_and_nothing_runs() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_unknown_tool.json")),
            ("plan", Answer::File("plan_unknown_tool.json")),
            ("plan", Answer::File("plan_unmapped.json")),
            ("plan", Answer::File("plan_ok.json")),
        ],
        Some(KEY),
    );
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let out = run(&server, "openai", &["--repair-rounds", "2", "--trace", trace.to_str().unwrap()]);
    assert_eq!(out.code, 1);
    assert_eq!(out.json["status"], "FAILED");
    assert_eq!(out.json["success"], false);
    assert_eq!(server.of_phase("plan").len(), 3, "the first plan and two repair rounds");
    assert!(server.of_phase("synthesize").is_empty());
    assert!(out.json["execution"].is_null() && out.json["plan"].is_null());
    assert!(out.json["decomposition"].is_object(), "what was done so far");
    assert!(!out.json["phase_durations"]["execute"].is_u64());
    assert!(!trace.exists(), "nothing ran");
    let errors = out.json["errors"].to_string();
    assert!(errors.contains("there is no tool `summarize_document`"), "{errors}");
    // Seed 000's planning rules: every sub-question mapped, every mapped tool known.
    assert!(errors.contains("tool_mappings[1] names the unknown tool `summarize_document`"), "{errors}");
    assert!(errors.contains("sub-question `sq_2` has no tool mapping"), "{errors}");
    assert!(out.json["error"].as_str().unwrap().starts_with("plan: no valid answer after 3 requests"));
}

#[test]
fn an_invalid_decomposition_gets_one_repair_round_then_a_clear_error() {
    let server = ModelServer::start(
        &[("decompose", Answer::File("decompose_one.json")), ("decompose", Answer::File("decompose_one.json"))],
        Some(KEY),
    );
    let out = run(&server, "anthropic", &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.json["status"], "FAILED");
    let asks = server.of_phase("decompose");
    assert_eq!(asks.len(), 2);
    let repair = asks[1].json()["messages"][2]["content"].as_str().unwrap().to_string();
    assert!(repair.contains("Expected 2-6 sub-questions, got 1"), "{repair}");
    assert!(out.json["decomposition"].is_null());
    assert!(out.json["error"].as_str().unwrap().contains("Expected 2-6 sub-questions, got 1"));
    assert!(out.stderr.contains("error: decompose: no valid answer after 2 requests"), "{}", out.stderr);
}

#[test]
fn a_cyclic_decomposition_is_repaired() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_cycle.json")),
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "openai", &[]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    assert!(out.json["errors"][0].as_str().unwrap().contains("Circular dependencies detected: sq_1 → sq_2 → sq_1"));
}

#[test]
fn prose_instead_of_json_is_one_repair_round() {
    for provider in ["openai", "anthropic"] {
        let server = ModelServer::start(
            &[
                ("decompose", Answer::Prose("Sure! First we check the documents, then we measure the first one.")),
                ("decompose", Answer::File("decompose_ok.json")),
                ("plan", Answer::File("plan_ok.json")),
                ("synthesize", Answer::File("synthesize_ok.json")),
            ],
            Some(KEY),
        );
        let out = run(&server, provider, &[]);
        assert_eq!(out.json["status"], "SUCCESS", "{provider}: {}", out.stdout);
        let second = server.of_phase("decompose")[1].json();
        let repair = second["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
        assert!(repair.contains("the answer is not JSON"), "{repair}");
    }
}

#[test]
fn a_synthesis_that_breaks_the_rules_is_repaired() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_bad.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "openai", &[]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    let repair = server.of_phase("synthesize")[1].body.clone();
    assert!(repair.contains("`answer` has 18 characters and must have at least 50"), "{repair}");
    assert!(repair.contains("the citation `validator` is not an execution id of the plan (check, info)"), "{repair}");
}

#[test]
fn rate_limits_and_server_errors_are_retried() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::Status { code: 429, retry_after: Some("0") }),
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::Status { code: 529, retry_after: Some("0") }),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "anthropic", &[]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    assert_eq!(out.json["usage"]["decompose"]["requests"], 2);
    let errors = out.json["errors"].to_string();
    assert!(
        errors.contains("answered 429: Rate limit reached for requests (rate_limit_error) (retry 1 in 0.0 s)"),
        "{errors}"
    );
    assert!(errors.contains("answered 529: Overloaded (overloaded_error)"), "{errors}");
}

/// The library on a virtual clock: a `Retry-After` of 7 s is waited (virtually), and the
/// phase's duration shows it.
#[test]
fn retry_after_is_honoured_on_the_composers_clock() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::Status { code: 429, retry_after: Some("7") }),
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        None,
    );
    let client = client_for("openai:test-model", Some(&server.url("/v1")), None).unwrap();
    let time = Arc::new(ManualTime::new(1_764_201_600_000));
    let composer = Composer::new(Arc::from(client), &common::example("document-analysis"))
        .unwrap()
        .with_time(time)
        .with_random(Arc::new(SeededRandom::new(7)));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let composer = composer.on_phase(Arc::new(move |s| record.lock().unwrap().push(s)));
    let result = composer.compose("Which of our two documents can be read, and how long is the first one?");
    assert_eq!(result.status, CompositionStatus::Success, "{}", result.to_json());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            CompositionStatus::Decomposing,
            CompositionStatus::Planning,
            CompositionStatus::Executing,
            CompositionStatus::Synthesizing
        ]
    );
    assert_eq!(result.phase_durations["decompose"], 7000);
    assert_eq!(result.started_at.as_deref(), Some("2025-11-27T00:00:00.000Z"));
    assert_eq!(result.completed_at.as_deref(), Some("2025-11-27T00:00:07.000Z"));
    assert_eq!(result.total_duration_ms, Some(7000));
    // A Retry-After longer than the phase's time left is a timeout, not a wait.
    let server = ModelServer::start(&[("decompose", Answer::Status { code: 429, retry_after: Some("60") })], None);
    let client = client_for("openai:test-model", Some(&server.url("/v1")), None).unwrap();
    let composer = Composer::new(Arc::from(client), &common::example("document-analysis"))
        .unwrap()
        .with_time(Arc::new(ManualTime::new(0)))
        .with_config(ComposeConfig {
            retry: tdsl::RetryPolicy { max_delay_seconds: 120.0, ..Default::default() },
            ..ComposeConfig::default()
        });
    let result = composer.compose("Which of our two documents can be read, and how long is the first one?");
    assert_eq!(result.status, CompositionStatus::Timeout, "{}", result.to_json());
    assert!(result.error.unwrap().contains("waiting 60.0 s to retry would pass the phase's timeout"));
}

#[test]
fn each_phase_has_its_timeout() {
    let slow = |f: &'static str| Answer::Slow(3000, Box::new(Answer::File(f)));
    // Phase 1.
    let server = ModelServer::start(&[("decompose", slow("decompose_ok.json"))], Some(KEY));
    let out = run(&server, "openai", &["--decompose-timeout", "0.5"]);
    assert_eq!(out.json["status"], "TIMEOUT", "{}", out.stdout);
    assert!(out.json["error"].as_str().unwrap().contains("did not answer within 0.5 s"), "{}", out.json["error"]);
    assert!(out.json["phase_durations"]["decompose"].as_u64().unwrap() < 2500);
    // Phase 2: the decomposition is kept.
    let server = ModelServer::start(
        &[("decompose", Answer::File("decompose_ok.json")), ("plan", slow("plan_ok.json"))],
        Some(KEY),
    );
    let out = run(&server, "anthropic", &["--plan-timeout", "0.5"]);
    assert_eq!(out.json["status"], "TIMEOUT", "{}", out.stdout);
    assert!(out.json["decomposition"].is_object() && out.json["plan"].is_null());
    // Phase 4: the execution is kept.
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", slow("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "openai", &["--synthesize-timeout", "0.5"]);
    assert_eq!(out.json["status"], "TIMEOUT", "{}", out.stdout);
    assert_eq!(out.json["execution"]["overall_status"], "SUCCESS");
    assert!(out.json["response"].is_null());
    // Phase 3: the plan's deadline.
    let server = ModelServer::start(
        &[("decompose", Answer::File("decompose_ok.json")), ("plan", Answer::File("plan_slow.json"))],
        Some(KEY),
    );
    let test_root = data("root").display().to_string();
    let base = server.url("/v1");
    let out = compose(
        &[
            "Wait for the slow tool, then echo what it said.",
            "--root",
            &test_root,
            "--model",
            "openai:test-model",
            "--base-url",
            &base,
            "--no-history",
            "--execute-timeout",
            "0.5",
        ],
        "openai",
    );
    assert_eq!(out.json["status"], "TIMEOUT", "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json["execution"]["overall_status"], "TIMEOUT");
    assert!(out.json["phase_durations"]["execute"].as_u64().unwrap() < 4000);
    assert!(server.of_phase("synthesize").is_empty());
}

#[test]
fn the_key_never_leaks() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let history = dir.path().join("history.db");
    let server = ModelServer::start(&clean_script(), Some(KEY));
    let out = run(&server, "openai", &["--trace", trace.to_str().unwrap(), "--history", history.to_str().unwrap()]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    assert!(trace.exists() && history.exists());
    // The trace names the plan it ran; the history has the plan's run.
    let written: Json = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(written["plan_id"], out.json["plan"]["plan_id"]);
    assert_eq!(written["step_results"].as_array().unwrap().len(), 2);
    let listed = common::tdsl(&["history", "list", "--history", history.to_str().unwrap(), "--format", "json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("SUCCESS"), "{}", listed.stdout);
    // A server that echoes a wrong key in its 401 (as APIs echo part of it).
    let wrong = ModelServer::start(&clean_script(), Some("sk-the-right-one"));
    let refused = run(&wrong, "openai", &[]);
    assert_eq!(refused.json["status"], "FAILED");
    assert!(
        refused.json["error"].as_str().unwrap().contains("answered 401: Incorrect API key provided: [redacted]"),
        "{}",
        refused.json["error"]
    );
    let mut texts = vec![out.stdout, out.stderr, refused.stdout, refused.stderr];
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        texts.push(String::from_utf8_lossy(&std::fs::read(entry.unwrap().path()).unwrap()).into_owned());
    }
    for t in &texts {
        assert!(!t.contains(KEY) && !t.contains("LEAKCHECK"), "the key leaked: {t}");
    }
}

/// Issue 38: the key reached every tool through the inherited environment (and through
/// `/proc/PID/environ` of tdsl itself). Neither provider's key reaches a tool's process,
/// with or without `--clean-env`, even when `--pass-env` names it.
#[cfg(unix)]
#[test]
fn the_tools_of_a_composition_never_get_a_key() {
    const OTHER: &str = "sk-ant-OTHERKEY-91c2d3e4f5";
    let cases: [(&str, &[&str]); 3] = [
        ("openai", &[]),
        ("anthropic", &[]),
        ("openai", &["--clean-env", "--pass-env", "OPENAI_API_KEY", "--pass-env", "ANTHROPIC_API_KEY"]),
    ];
    for (provider, flags) in cases {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen");
        common::process::script(
            &dir.path().join("tools/env.sh"),
            &format!(
                "#!/bin/sh\nenv >> '{0}'\ntr '\\0' '\\n' < /proc/$PPID/environ >> '{0}.parent' 2>&1\necho '{{\"seen\": true}}'\n",
                seen.display()
            ),
        );
        std::fs::write(dir.path().join("tools/env.tool"), r#"{"system_event_endpoint": "exec:./env.sh"}"#).unwrap();
        let server = ModelServer::start(
            &[
                ("decompose", Answer::File("decompose_ok.json")),
                ("plan", Answer::File("plan_env.json")),
                ("synthesize", Answer::File("synthesize_ok.json")),
            ],
            Some(KEY),
        );
        let base = if provider == "anthropic" { server.url("") } else { server.url("/v1") };
        let model = format!("{provider}:test-model");
        let root = dir.path().display().to_string();
        let mut args = query_args(&root, &model, &base, flags);
        args.retain(|a| !a.is_empty());
        let out = compose_support::command(&args, provider, KEY)
            .env(if provider == "anthropic" { "OPENAI_API_KEY" } else { "ANTHROPIC_API_KEY" }, OTHER)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("\"status\": \"SUCCESS\""), "{provider} {flags:?}: {stdout}");
        let text = std::fs::read_to_string(&seen).expect("the tool ran");
        assert!(text.contains("TDSL_TOOL=/tools/env.tool"), "the tool by its one name (issue 38 item 7): {text}");
        assert!(!text.contains(KEY) && !text.contains(OTHER), "{provider} {flags:?}: a tool saw a key:\n{text}");
        assert!(!text.contains("_API_KEY="), "{provider} {flags:?}: {text}");
        if flags.is_empty() {
            // Everything else is inherited.
            assert!(text.contains("XDG_DATA_HOME="), "{text}");
        } else {
            assert!(!text.contains("XDG_DATA_HOME="), "{text}");
        }
        // tdsl's own environment still holds the key: the process is not dumpable, so a tool
        // of the same user cannot read it in /proc (one with CAP_SYS_PTRACE, root in a
        // container say, can read any process's memory: nothing to test there).
        let parent = std::fs::read_to_string(dir.path().join("seen.parent")).expect("the tool tried");
        if !may_trace_anything() {
            assert!(!parent.contains(KEY) && !parent.contains(OTHER), "a tool read tdsl's environment:\n{parent}");
        }
    }
}

/// Whether this process has CAP_SYS_PTRACE (bit 19 of `CapEff`).
#[cfg(unix)]
fn may_trace_anything() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(caps, 16).is_ok_and(|c| c & (1 << 19) != 0)
}

#[test]
fn an_endpoint_that_cannot_be_reached_is_named() {
    let port = common::process::free_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let r = root();
    let out = compose(
        &[
            "What do the documents say?",
            "--root",
            &r,
            "--model",
            "openai:llama3.2",
            "--base-url",
            &base,
            "--no-history",
        ],
        "openai",
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.json["status"], "FAILED");
    let error = out.json["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "decompose: the model endpoint http://127.0.0.1:{port}/v1/chat/completions cannot be reached"
        )),
        "{error}"
    );
}

#[test]
fn usage_errors() {
    let r = root();
    let out = compose(&["q", "--root", &r, "--model", "openai:x", "--repair-rounds", "9", "--no-history"], "openai");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--repair-rounds: `repair rounds` must be"), "{}", out.stderr);
    let out = compose(&["q", "--root", &r, "--model", "gpt-4o", "--no-history"], "openai");
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`gpt-4o` is not PROVIDER:MODEL"), "{}", out.stderr);
    let out = compose(&["q", "--root", &r, "--model", "openai:x", "--execute-timeout", "0", "--no-history"], "openai");
    assert_eq!(out.code, 2);
    // No key and the provider's own endpoint.
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["compose", "q", "--root", &r, "--model", "anthropic:claude-sonnet-4-5", "--no-history"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY is not set"));
}

/// A string of a transcript, cut after `max` characters.
fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        format!("{}… ({} more characters)", s.chars().take(max).collect::<String>(), n - max)
    }
}

/// Long strings of a JSON value cut, for the transcript.
fn shorten(v: &Json, max: usize) -> Json {
    match v {
        Json::String(s) => Json::String(cut(s, max)),
        Json::Array(a) => Json::Array(a.iter().map(|x| shorten(x, max)).collect()),
        Json::Object(o) => Json::Object(o.iter().map(|(k, x)| (k.clone(), shorten(x, max))).collect()),
        other => other.clone(),
    }
}

/// The transcript of `docs/compose.md`: one composition with a repaired plan, as the
/// scripted server saw it (requests and answers) and as `tdsl compose` printed it. Written
/// to `target/compose-transcript.md`; the docs must show the same exchange.
#[test]
fn the_transcript_in_the_docs_is_what_the_harness_records() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_placeholder.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let out = run(&server, "openai", &[]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    let manifest = env!("CARGO_MANIFEST_DIR");
    let hide = |s: &str| s.replace(manifest, "/repo").replace(&server.url(""), "http://127.0.0.1:PORT");
    let mut t = String::new();
    t.push_str("```console\n$ export OPENAI_API_KEY=sk-…\n$ tdsl compose \"Which of our two documents can be read, and how long is the first one?\" \\\n    --root examples/document-analysis --model openai:test-model --base-url http://127.0.0.1:PORT/v1 --no-history\n```\n");
    for (i, r) in server.requests().iter().enumerate() {
        let mut body = r.json();
        if i > 0 {
            body["response_format"]["json_schema"]["schema"] = Json::String(format!(
                "… (the {} schema)",
                body["response_format"]["json_schema"]["name"].as_str().unwrap()
            ));
        }
        t.push_str(&format!(
            "\n**Request {} ({})**: `{} {}` with `Authorization: Bearer sk-…`\n\n```json\n{}\n```\n",
            i + 1,
            r.phase,
            r.method,
            r.path,
            hide(&serde_json::to_string_pretty(&shorten(&body, 600)).unwrap())
        ));
        let answer: Json = serde_json::from_str(&r.response.1).unwrap();
        t.push_str(&format!(
            "\n**Answer {}**: `{}`\n\n```json\n{}\n```\n",
            i + 1,
            r.response.0,
            hide(&serde_json::to_string_pretty(&shorten(&answer, 700)).unwrap())
        ));
    }
    let mut result = out.json.clone();
    if let Some(exec) = result["execution"].as_object_mut() {
        for k in ["steps", "clock_reads", "arguments", "result"] {
            if exec.contains_key(k) {
                exec.insert(k.into(), Json::String("… (tdsl's own detail, in --trace)".into()));
            }
        }
    }
    for k in ["started_at", "completed_at"] {
        result[k] = Json::String("2026-11-27T01:50:00.000Z".into());
    }
    t.push_str(&format!(
        "\n**Standard output** (the `CompositionResult`; long strings cut):\n\n```json\n{}\n```\n",
        hide(&serde_json::to_string_pretty(&shorten(&result, 300)).unwrap())
    ));
    std::fs::write(std::path::Path::new(manifest).join("target/compose-transcript.md"), &t).unwrap();
    // The docs show this exchange: the same requests, the diagnostic handed back.
    let docs = std::fs::read_to_string(std::path::Path::new(manifest).join("docs/compose.md")).unwrap();
    for line in [
        "**Request 1 (decompose)**: `POST /v1/chat/completions`",
        "**Request 2 (plan)**: `POST /v1/chat/completions`",
        "**Request 3 (plan)**: `POST /v1/chat/completions`",
        "**Request 4 (synthesize)**: `POST /v1/chat/completions`",
        "error E1311 at plan/instructions/1/arguments/document_path",
        "\"name\": \"decomposition_result\"",
        "\"overall_status\": \"SUCCESS\"",
        "\"repair_rounds\": 1",
    ] {
        assert!(
            docs.contains(line),
            "docs/compose.md's transcript lacks {line:?}: copy target/compose-transcript.md into it"
        );
    }
}

#[test]
fn the_history_records_a_composition_and_report_draws_its_phases() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.db");
    let h = history.to_str().unwrap();
    let server = ModelServer::start(&clean_script(), Some(KEY));
    let out = run(&server, "anthropic", &["--history", h]);
    assert_eq!(out.json["status"], "SUCCESS", "{}", out.stdout);
    let id = out.json["composition_id"].as_str().unwrap();
    let shown = common::tdsl(&["history", "show", id, "--history", h, "--format", "json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let run: Json = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(run["tool"], "compose", "{run}");
    assert_eq!(run["arguments"]["query"], out.json["query"]);
    assert_eq!(run["arguments"]["model"], "anthropic:test-model");
    assert_eq!(run["result"]["usage"], out.json["usage"], "the provider's tokens");
    assert_eq!(run["result"]["plan"], out.json["plan"]["plan"]);
    let steps = run["steps"].to_string();
    for phase in ["decompose", "plan", "execute", "synthesize"] {
        assert!(steps.contains(&format!("\"{phase}\"")), "{phase}: {steps}");
    }
    // The plan's tool calls are the run's invocations, under `execute`.
    let calls = run["invocations"].to_string();
    assert!(calls.contains("execute/check") && calls.contains("execute/info"), "{calls}");
    assert!(!shown.stdout.contains(KEY));
    // The report draws the phases.
    let page = dir.path().join("report.html");
    let report = common::tdsl(&["report", "--run", id, "--history", h, "-o", page.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    for phase in ["decompose", "synthesize", "check", "info"] {
        assert!(html.contains(phase), "the report lacks {phase}");
    }
}

/// On a virtual clock: a 500 without `Retry-After` waits the policy's back-off (1 s ± 10 %),
/// a `Retry-After` beyond `max_delay_seconds` is capped at it (30 s).
#[test]
fn back_off_without_retry_after_and_the_cap_on_it() {
    let server = ModelServer::start(
        &[
            ("decompose", Answer::Status { code: 500, retry_after: None }),
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::Status { code: 429, retry_after: Some("100") }),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        None,
    );
    let client = client_for("anthropic:test-model", Some(&server.url("")), None).unwrap();
    let composer = Composer::new(Arc::from(client), &common::example("document-analysis"))
        .unwrap()
        .with_time(Arc::new(ManualTime::new(0)))
        .with_random(Arc::new(SeededRandom::new(7)))
        .with_config(ComposeConfig { plan_timeout: 60.0, ..ComposeConfig::default() });
    let result = composer.compose("Which of our two documents can be read, and how long is the first one?");
    assert_eq!(result.status, CompositionStatus::Success, "{}", result.to_json());
    let d = result.phase_durations["decompose"];
    assert!((900..=1100).contains(&d), "1 s ± 10 %: {d}");
    assert_eq!(result.phase_durations["plan"], 30_000);
    assert_eq!(result.usage["plan"].requests, 2);
    assert!(
        result.errors.iter().any(|e| e.contains("answered 500: Internal server error (api_error)")),
        "{:?}",
        result.errors
    );
}

/// On a terminal, standard error shows the phase, then the status.
#[cfg(unix)]
#[test]
fn the_phase_is_shown_on_a_terminal() {
    use rexpect::session::spawn_command;
    let server = ModelServer::start(&clean_script(), Some(KEY));
    let (r, base) = (root(), server.url("/v1"));
    let cmd = compose_support::command(&query_args(&r, "openai:test-model", &base, &[]), "openai", KEY);
    let mut p = spawn_command(cmd, Some(20_000)).expect("spawn on a pseudo-terminal");
    // rexpect reads the terminal byte by byte, so match the ASCII part of each line.
    p.exp_string("compose: 1/4 decomposing the query").expect("phase 1 is shown");
    p.exp_string("compose: 2/4 planning").expect("phase 2 is shown");
    p.exp_string("compose: 3/4 executing the plan").expect("phase 3 is shown");
    p.exp_string("compose: 4/4 synthesizing the answer").expect("phase 4 is shown");
    p.exp_string("compose: SUCCESS in").expect("the status is shown");
    p.exp_string("\"composition_id\"").expect("the result follows");
    p.exp_eof().expect("the composition ends");
}

/// The library records a composition as it goes (`Composer::compose_recorded`): the run
/// exists, `RUNNING`, with the phase before marked, as each phase starts; at the end it is
/// the whole composition, which `report` draws as one.
#[test]
fn the_library_records_a_composition_as_it_goes() {
    use tdsl::{HistoryStore, RunFilter, SqliteStore};
    let server = ModelServer::start(&clean_script(), None);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("h.db")).unwrap());
    let client = client_for("openai:test-model", Some(&server.url("/v1")), None).unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (record, reader) = (seen.clone(), store.clone());
    let composer =
        Composer::new(Arc::from(client), &common::example("document-analysis")).unwrap().on_phase(Arc::new(move |s| {
            // What the history holds as the phase `s` starts.
            let runs = reader.runs(&RunFilter::default()).unwrap();
            let run = reader.run(&runs[0].run_id).unwrap().unwrap();
            let steps: Vec<String> = run.steps.iter().map(|s| format!("{} {}", s.path, s.status)).collect();
            record.lock().unwrap().push((s, run.run.status.clone(), steps));
        }));
    let (result, recorded) = composer.compose_recorded(compose_support::QUERY, store.as_ref());
    assert_eq!(result.status, CompositionStatus::Success, "{}", result.to_json());
    let id = recorded.unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (CompositionStatus::Decomposing, "RUNNING".to_string(), s(&[])),
            (CompositionStatus::Planning, "RUNNING".to_string(), s(&["decompose RUNNING"])),
            (CompositionStatus::Executing, "RUNNING".to_string(), s(&["decompose COMPLETED", "plan RUNNING"])),
            (
                CompositionStatus::Synthesizing,
                "RUNNING".to_string(),
                s(&["decompose COMPLETED", "plan COMPLETED", "execute RUNNING"])
            ),
        ]
    );
    let run = store.run(&id.to_string()).unwrap().unwrap();
    assert_eq!((run.run.status.as_str(), run.run.run_id.as_str()), ("SUCCESS", result.composition_id.as_str()));
    let trace = run.trace.expect("the whole composition at its end");
    assert!(tdsl::testing::report::is_composition(&trace));
    let plan = trace.steps.iter().find(|s| s.execution_id == "plan").unwrap();
    let args = serde_json::to_value(plan.arguments.as_ref().unwrap()).unwrap();
    assert_eq!(args["input_tokens"], result.usage["plan"].input_tokens);
    assert_eq!(args["repair_rounds"], 0);
    let html = tdsl::testing::report::html(&trace, None);
    assert!(html.contains(r#"data-step="execute/info""#) && html.contains(r#"<svg id="phases""#));
}
