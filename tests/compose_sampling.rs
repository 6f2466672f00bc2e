//! `compose` with the client's own model (SPEC §17, issue 41): `tdsl serve --mcp --plans
//! --compose` driven by the official Python SDK's client, whose `sampling_callback` is the
//! model (`tests/mcp_py/compose.py`), over the real tools of `examples/document-analysis`. No
//! API key anywhere: every model request is a `sampling/createMessage` to the client.
#![cfg(unix)]

mod common;

use std::path::Path;

use serde_json::Value as Json;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one scenario of `compose.py` over stdio in a fresh folder (its history, its result);
/// the `CompositionResult` the client got and the folder.
fn scenario(name: &str) -> (Json, tempfile::TempDir) {
    scenario_over(&[], name)
}

/// [`scenario`] with `options` (`--http`) before it.
fn scenario_over(options: &[&str], name: &str) -> (Json, tempfile::TempDir) {
    let work = tempfile::tempdir().expect("tempdir");
    let mut cmd = std::process::Command::new(common::python::python());
    cmd.arg(repo().join("tests/mcp_py/compose.py"))
        .args(options)
        .arg(name)
        .arg(env!("CARGO_BIN_EXE_tdsl"))
        .arg(repo())
        .arg(work.path())
        // Nothing of a provider's: the composition must not need it.
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    let mut process = common::process::Process::spawn(&format!("compose.py {name}"), &mut cmd);
    let status = process.exit_within(std::time::Duration::from_secs(120));
    assert!(status.success(), "compose.py {name} failed ({status}):\n{}", process.output());
    let result = std::fs::read_to_string(work.path().join("result.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Json::Null);
    (result, work)
}

/// The history's runs once `n` of them are there and none is `RUNNING` (a run is written as
/// its blocking thread ends, just after a cancel), or what is there after ten seconds.
fn ended_runs(work: &Path, n: usize) -> Vec<Json> {
    let h = work.join("history.db");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let listed = common::tdsl(&["history", "list", "--history", h.to_str().unwrap(), "--format", "json"]);
        assert_eq!(listed.code, 0, "{}", listed.stderr);
        let runs: Json = serde_json::from_str(&listed.stdout).expect("history list's JSON");
        let runs = runs.as_array().cloned().unwrap_or_default();
        let ended = runs.len() == n && runs.iter().all(|r| r["status"] != "RUNNING");
        if ended || std::time::Instant::now() > deadline {
            return runs;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The run of the history with `id`, as `tdsl history show` gives it.
fn history_run(work: &Path, id: &str) -> Json {
    let h = work.join("history.db");
    let shown = common::tdsl(&["history", "show", id, "--history", h.to_str().unwrap(), "--format", "json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    serde_json::from_str(&shown.stdout).expect("history show's JSON")
}

/// The issue's "done when": a client with sampling and no key runs a composition to
/// `SUCCESS` over a `.tool` root with one sampling request per phase (each with its phase's
/// system prompt, `maxTokens` and the hints), a progress notification as each phase starts;
/// the history records it as `tdsl compose` does and `tdsl report` draws its phases.
#[test]
fn a_client_with_sampling_composes_to_success_with_one_request_per_phase() {
    let (result, work) = scenario("good");
    assert_eq!(result["status"], "SUCCESS", "{result}");
    let id = result["composition_id"].as_str().expect("an id");
    let run = history_run(work.path(), id);
    assert_eq!(run["tool"], "compose", "{run}");
    assert_eq!(run["status"], "SUCCESS", "{run}");
    assert_eq!(run["arguments"]["model"], "sampling:scripted-client");
    let steps = run["steps"].to_string();
    for phase in ["decompose", "plan", "execute", "synthesize"] {
        assert!(steps.contains(&format!("\"{phase}\"")), "{phase}: {steps}");
    }
    let calls = run["invocations"].to_string();
    assert!(calls.contains("execute/check") && calls.contains("execute/info"), "{calls}");
    let page = work.path().join("report.html");
    let h = work.path().join("history.db");
    let report = common::tdsl(&["report", "--run", id, "--history", h.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let html = std::fs::read_to_string(&page).expect("the report");
    for phase in ["decompose", "synthesize", "check", "info"] {
        assert!(html.contains(phase), "the report lacks {phase}");
    }
    // docs/compose.md shows this exchange.
    let docs = std::fs::read_to_string(repo().join("docs/compose.md")).expect("docs/compose.md");
    for line in [
        "## With the client's model",
        r#""message": "phase 1/4: decomposing the query""#,
        r#"{"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage","#,
        r#""modelPreferences": {"hints": [{"name": "claude-sonnet"}, {"name": "gpt-4o"}]},"#,
        r#""model_used": "sampling:scripted-client","#,
    ] {
        assert!(docs.contains(line), "docs/compose.md's transcript lacks {line:?}");
    }
}

/// A reply that is a bare plan after prose (no `tool_mappings`) is a repair round whose
/// message names every missing field; the second reply, in a fence after prose, is read.
#[test]
fn a_reply_in_the_wrong_shape_is_a_repair_round_over_sampling() {
    let (result, _work) = scenario("repair");
    assert_eq!(result["plan"]["repair_rounds"], 1, "{result}");
}

/// A client that answers phase 2's request with an error ends the composition `FAILED` in
/// that phase, saying so; the history has it ended, not running.
#[test]
fn a_refused_sampling_request_fails_the_composition_in_its_phase() {
    let (result, work) = scenario("refusal");
    let id = result["composition_id"].as_str().expect("an id");
    let run = history_run(work.path(), id);
    assert_eq!(run["status"], "FAILED", "{run}");
    assert!(run.to_string().contains("The user declined the request"), "{run}");
}

/// `notifications/cancelled` of the `compose` call mid-phase withdraws the sampling request
/// in flight (the client's callback is cancelled), sends no other, and ends the run: the
/// history has it `FAILED` in the plan phase, not `RUNNING`.
#[test]
fn cancelling_compose_withdraws_the_sampling_request_and_ends_the_run() {
    let (_, work) = scenario("cancel");
    let runs = ended_runs(work.path(), 1);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["tool"], "compose", "{runs:?}");
    assert_eq!(runs[0]["status"], "FAILED", "{runs:?}");
    let run = history_run(work.path(), runs[0]["run_id"].as_str().expect("a run id"));
    assert!(run.to_string().contains("plan: the composition was cancelled"), "{run}");
}

/// A request the client leaves unanswered past the phase's timeout (`--decompose-timeout
/// 0.5`) is withdrawn and the composition ends `TIMEOUT` in that phase.
#[test]
fn an_unanswered_sampling_request_times_out_and_is_withdrawn() {
    let (result, _work) = scenario("timeout");
    assert_eq!(result["status"], "TIMEOUT", "{result}");
}

/// Over Streamable HTTP (`serve --listen`): the sampling requests go out on the `compose`
/// call's stream, the run succeeds, and a cancellation withdraws the request in flight, as
/// the phase's timeout does.
#[test]
fn compose_over_http_succeeds_and_cancels() {
    let (result, _work) = scenario_over(&["--http"], "good");
    assert_eq!(result["status"], "SUCCESS", "{result}");
    scenario_over(&["--http"], "cancel");
    // The phase's timeout holds over HTTP too: the request is withdrawn, `TIMEOUT`.
    let (result, _work) = scenario_over(&["--http"], "timeout");
    assert_eq!(result["status"], "TIMEOUT", "{result}");
}

/// A client that did not declare sampling is not offered `compose`; calling it anyway is a
/// tool error saying why.
#[test]
fn a_client_without_sampling_is_not_offered_compose() {
    scenario("no-sampling");
}

/// The flags: `--compose` needs `--plans`, the hints and max tokens need `--compose`, and
/// `--sampling-max-tokens` has a range.
#[test]
fn the_compose_flags_are_checked() {
    let root = common::example("document-analysis");
    let r = root.to_str().unwrap();
    let serve = |more: &[&str]| {
        let mut args = vec!["serve", "--mcp", "--no-history", "--root", r];
        args.extend_from_slice(more);
        common::tdsl(&args)
    };
    let out = serve(&["--compose"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--plans"), "{}", out.stderr);
    let out = serve(&["--plans", "--sampling-hint", "claude"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--compose"), "{}", out.stderr);
    let out = serve(&["--plans", "--compose", "--sampling-max-tokens", "10"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--sampling-max-tokens: `sampling max tokens` must be an integer from 256 to 1000000"),
        "{}",
        out.stderr
    );
    let out = serve(&["--plans", "--compose", "--sampling-hint", " "]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--sampling-hint"), "{}", out.stderr);
    let out = serve(&["--plans", "--compose", "--plan-timeout", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--plan-timeout: `plan timeout` must be from 0.1 to 600"), "{}", out.stderr);
    let out = serve(&["--plans", "--decompose-timeout", "5"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--compose"), "{}", out.stderr);
}

// --- The hostile round (docs/compose.md, "Hostile round (sampling)") ---------------------------

/// A sampling reply of 20 MB (over stdio's message limit of 8 MiB) fails its request at once,
/// naming the limit, instead of leaving it to the phase's timeout (30 s there); the server
/// answers on. Before: the framing answered the client's *response* with an error of its own
/// and the request waited out the phase. Over HTTP a 5 MB reply (over `--max-request-bytes`,
/// 4 MiB) is answered 413 and fails its request at once the same way (before: 30 s).
#[test]
fn a_reply_over_the_message_limit_fails_its_phase_at_once() {
    let (result, _work) = scenario("huge-reply");
    assert_eq!(result["status"], "FAILED", "{result}");
    let (result, _work) = scenario_over(&["--http"], "huge-reply");
    assert_eq!(result["status"], "FAILED", "{result}");
}

/// A refused reply of 3 MB goes back to the model in the repair round cut (at twice the plan
/// limit), not whole: before, each later request of the phase carried every refused reply.
#[test]
fn a_long_refused_reply_is_handed_back_cut() {
    let (result, _work) = scenario("long-reply");
    assert_eq!(result["status"], "SUCCESS", "{result}");
}

/// A reply that is no usable text fails the phase saying why: an image (before: an empty
/// answer and a repair round that could only bring another image), a reply cut at
/// `maxTokens` (before: repair rounds cut the same way), JSON nested 100,000 deep (serde's
/// depth limit, a repair round, no stack overflow); an array of blocks is read for its
/// text.
#[test]
fn replies_that_are_not_a_whole_text_answer_fail_the_phase_saying_why() {
    for name in ["image-reply", "cut-reply", "deep-reply"] {
        let (result, _work) = scenario(name);
        assert_eq!(result["status"], "FAILED", "{name}: {result}");
    }
    let (result, _work) = scenario("blocks-reply");
    assert_eq!(result["status"], "SUCCESS", "{result}");
}

/// A `model` of terminal escapes and a megabyte is kept escaped and cut to 200 characters,
/// in the result and in the history.
#[test]
fn a_hostile_model_name_is_escaped_and_cut() {
    let (result, work) = scenario("model-name");
    let id = result["composition_id"].as_str().expect("an id");
    let run = history_run(work.path(), id).to_string();
    assert!(run.len() < 200_000, "the history holds {} bytes of the run", run.len());
    // JSON writes a raw ESC as `\u001b` right after the colon; the escaped name is `\\u001b`.
    assert!(
        !run.contains("sampling:\\u001b") && run.contains("sampling:\\\\u001b]0;owned"),
        "{}",
        run.chars().take(3000).collect::<String>()
    );
}

/// A plan cannot call `compose` (nor `run_plan`, `check_plan`): they are not among the tools
/// a plan may call, so a composition can never start another.
#[test]
fn a_plan_cannot_call_compose_itself() {
    let (result, _work) = scenario("recursion");
    assert_eq!(result["status"], "FAILED", "{result}");
}

/// A plan that fans one step out 5,000 times stops at the plan limit (1,000 children a step),
/// and phase 4 is shown a bounded text.
#[test]
fn a_fan_out_from_the_model_is_bounded_by_the_plan_limits() {
    let (result, _work) = scenario("fan-out");
    assert_eq!(result["execution"]["overall_status"], "FAILED", "{result}");
}

/// Answers nobody asked for — an unknown id, a request's answer twice, a bad plan with an
/// earlier request's id, the late answer to a request withdrawn when its phase timed out —
/// are dropped: the composition takes the real answers and the server answers on.
#[test]
fn stray_duplicate_and_late_answers_are_dropped() {
    let (result, _work) = scenario("stray-answers");
    assert_eq!(result["status"], "SUCCESS", "{result}");
}

/// `compose` calls count against `--max-calls`: with `--max-calls 1` over HTTP a second one
/// while the first waits for the model is refused at once (-32001), and asks nothing.
#[test]
fn compose_calls_count_against_max_calls() {
    scenario_over(&["--http"], "busy");
}

/// A 10 MB query is refused by the message limit before anything is asked.
#[test]
fn a_query_over_the_message_limit_is_refused() {
    scenario("big-query");
}

/// What phase 2 and phase 4 show the client's model (the tools listing, the tools' results)
/// holds no secret of the server: with `--clean-env` a variable of its environment reaches no
/// tool, and an upstream that echoes its bearer token (`--upstream-token`) in its listing and
/// its result is redacted where its text enters; the result and the history hold neither.
#[test]
fn a_server_secret_reaches_neither_the_client_nor_the_history() {
    let (result, work) = scenario("secret");
    assert_eq!(result["status"], "SUCCESS", "{result}");
    for file in std::fs::read_dir(work.path()).expect("the work folder").flatten() {
        if file.file_name().to_string_lossy().starts_with("history.db") {
            let bytes = std::fs::read(file.path()).expect("the history");
            let text = String::from_utf8_lossy(&bytes);
            for secret in ["tdsl-hostile-s3cr3t-7f2a9c", "ECHOCHECK"] {
                assert!(!text.contains(secret), "{} holds {secret}", file.path().display());
            }
        }
    }
}

/// The client goes away — over stdio it closes the pipes (no `notifications/cancelled`), once
/// while phase 1's request waits for it and once while the plan runs; over HTTP it drops the
/// call's stream and ends its session while the plan runs: the plan's program is killed, and
/// the history has each composition `FAILED`, cancelled in its phase, not running.
#[test]
fn a_client_that_goes_away_ends_the_composition_and_its_plan() {
    for (options, phases) in [(&[][..], &["decompose", "execute"][..]), (&["--http"][..], &["execute"][..])] {
        let (_, work) = scenario_over(options, "disconnect");
        let runs = ended_runs(work.path(), phases.len());
        assert_eq!(runs.len(), phases.len(), "{options:?}: {runs:?}");
        let shown: Vec<String> = runs
            .iter()
            .map(|r| history_run(work.path(), r["run_id"].as_str().expect("a run id")).to_string())
            .collect();
        for phase in phases {
            // Cancelled while the model is asked, or while the plan runs.
            let said =
                [format!("{phase}: the composition was cancelled"), format!("{phase}: cancelled (the composition")];
            let cancelled = shown.iter().any(|r| said.iter().any(|s| r.contains(s.as_str())));
            assert!(cancelled, "{options:?}: no run cancelled in {phase}: {shown:?}");
        }
        assert!(runs.iter().all(|r| r["status"] == "FAILED"), "{options:?}: {runs:?}");
        assert!(shown.iter().any(|r| r.contains("was cancelled and was killed")), "{options:?}: {shown:?}");
    }
}
