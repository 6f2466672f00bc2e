//! Plans written by language models (SPEC §13, `docs/plans.md`): the corpus of
//! `tests/data/plans/cases/` run through the library — each plan with the mistakes a model
//! makes, the diagnostics it must get (code, JSON pointer, help, range) written in its data
//! file, and a repaired plan that checks clean and runs with the host runner — plus hostile
//! input and `tdsl check --plan` on the real binary.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value as Json};
use tdsl::testing::exec::{RunStatus, Runner, ToolCall, ToolError};
use tdsl::testing::host::HostRunner;
use tdsl::testing::plans::{
    upstream_target, PlanCheck, PlanDesk, PlanLimits, PlanRefused, RunPlanOptions, UpstreamTool,
};
use tdsl::Code;

use common::tdsl;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The roots a case may name.
fn root(name: &str) -> PathBuf {
    match name {
        "document-analysis" => manifest().join("examples/document-analysis"),
        other => manifest().join("tests/data/plans").join(other),
    }
}

/// The upstream tools a case may call (as a server's `tools/list` would describe them).
fn upstream() -> Vec<UpstreamTool> {
    vec![
        UpstreamTool {
            server: "weather".into(),
            name: "forecast".into(),
            description: Some("Tomorrow's forecast for a city".into()),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}),
            output_schema: Some(
                json!({"type": "object", "properties": {"city": {"type": "string"}, "high_c": {"type": "number"}, "summary": {"type": "string"}}}),
            ),
        },
        UpstreamTool {
            server: "weather".into(),
            name: "alerts".into(),
            description: None,
            input_schema: json!({"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}),
            output_schema: None,
        },
    ]
    .into_iter()
    .chain(sdk_tools("shop", "pydantic_tools.json"))
    .chain(sdk_tools("ts", "zod_tools.json"))
    .collect()
}

/// The tools of `tests/data/plans/upstream/FILE` (a `tools/list` as the official SDKs make
/// it: `tests/mcp_py/shop.py --list` for pydantic, `scripts/zod-tools` for zod) as server `server`.
fn sdk_tools(server: &str, file: &str) -> Vec<UpstreamTool> {
    let text = std::fs::read_to_string(manifest().join("tests/data/plans/upstream").join(file)).expect("the fixture");
    let listed: Json = serde_json::from_str(&text).expect("JSON");
    let tools = listed.get("tools").unwrap_or(&listed).as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|t| UpstreamTool {
            server: server.into(),
            name: t["name"].as_str().expect("a name").into(),
            description: t["description"].as_str().map(str::to_string),
            input_schema: t["inputSchema"].clone(),
            output_schema: t.get("outputSchema").cloned(),
        })
        .collect()
}

/// The canned answer of an upstream tool of `sdk_tools` (`tests/data/plans/upstream/answers.json`).
fn sdk_answer(server: &str, tool: &str) -> Option<tdsl::Value> {
    let text = std::fs::read_to_string(manifest().join("tests/data/plans/upstream/answers.json")).expect("answers");
    let answers: Json = serde_json::from_str(&text).expect("JSON");
    answers.get(format!("{server}/{tool}")).map(|a| serde_json::from_value(a.clone()).expect("a value"))
}

/// The host runner for served tools, with upstream calls routed to canned answers (what
/// `serve --mcp --plans` does with its upstream connections).
fn runner() -> Arc<dyn Runner> {
    let host = HostRunner::new();
    Arc::new(move |call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
        match call.endpoint().and_then(upstream_target) {
            Some(("weather", "forecast")) => {
                let city =
                    call.arguments.get_direct("city").and_then(tdsl::Value::as_str).unwrap_or_default().to_string();
                let answer = json!({"city": city, "high_c": 21.5, "summary": format!("sunny in {city}")});
                Ok(serde_json::from_value(answer).expect("a value"))
            }
            Some((server, tool)) => sdk_answer(server, tool)
                .ok_or_else(|| ToolError::permanent(format!("no upstream `{server}/{tool}` in this test"))),
            None => host.call(call),
        }
    })
}

/// The `PlanDesk` a case is checked with.
fn plans_for(case: &Json) -> PlanDesk {
    let root_name = case["root"].as_str().unwrap_or("root");
    let allow: Vec<String> = case["allow"].as_array().map_or_else(
        || vec!["/tools/*.tool".to_string()],
        |a| a.iter().filter_map(|g| g.as_str().map(str::to_string)).collect(),
    );
    // A case may lower a limit, to show it with a plan of reasonable size.
    let mut limits = PlanLimits::default();
    let set = |key: &str, to: &mut usize| {
        if let Some(n) = case[key].as_u64() {
            *to = n as usize;
        }
    };
    set("max_steps", &mut limits.max_steps);
    set("max_fan_out", &mut limits.max_fan_out);
    set("max_bytes", &mut limits.max_bytes);
    set("max_nesting", &mut limits.max_nesting);
    assert!(limits.validate().is_ok(), "{case}: limits out of range");
    PlanDesk::for_root(root(root_name), &allow).expect("the root loads").with_upstream(upstream()).with_limits(limits)
}

/// The plan of a case as text: `plan` (pretty JSON) or `plan_text` (as written).
fn text_of(case: &Json, key: &str) -> String {
    match case.get(format!("{key}_text").as_str()).and_then(Json::as_str) {
        Some(t) => t.to_string(),
        None => serde_json::to_string_pretty(&case[key]).expect("JSON"),
    }
}

/// What is wrong with a check against a case's `expect`, if anything.
fn compare(name: &str, check: &PlanCheck, expect: &[Json]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut matched = vec![false; check.diagnostics.len()];
    for e in expect {
        let code = e["code"].as_str().unwrap_or_default();
        let pointer = e["pointer"].as_str();
        let help = e["help"].as_str();
        let range: Option<[usize; 2]> = e.get("range").and_then(|r| serde_json::from_value(r.clone()).ok());
        let hit = check.diagnostics.iter().enumerate().find(|(_, d)| {
            d.code == code
                && pointer.is_none_or(|p| d.pointer == p)
                && help.is_none_or(|h| d.help.as_deref().is_some_and(|dh| dh.contains(h)))
                && (range.is_none() || d.range == range)
        });
        match hit {
            Some((i, _)) => matched[i] = true,
            None => problems.push(format!("{name}: expected {e}")),
        }
    }
    for (d, m) in check.diagnostics.iter().zip(&matched) {
        if !m && d.severity == tdsl::Severity::Error {
            problems.push(format!(
                "{name}: unexpected {} at {} {:?}: {} (help: {:?})",
                d.code, d.pointer, d.range, d.message, d.help
            ));
        }
    }
    if !problems.is_empty() {
        problems.push(check.render());
    }
    problems
}

/// The corpus: `cases/` (the mistakes of SPEC §13) and `mistakes/` (help that fits the
/// place, issue 39 item 5: the step's own result, numbered placeholders with a field,
/// other languages' syntax, a plan sent as a string or with Python literals), each case
/// named `dir/stem`.
fn cases() -> Vec<(String, Json)> {
    let mut out: Vec<(String, Json)> = Vec::new();
    for dir in ["cases", "mistakes"] {
        let path = manifest().join("tests/data/plans").join(dir);
        out.extend(
            std::fs::read_dir(&path)
                .expect("the corpus")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .map(|p| {
                    let text = std::fs::read_to_string(&p).expect("readable");
                    let case: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    (format!("{dir}/{}", p.file_stem().expect("stem").to_string_lossy()), case)
                }),
        );
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every case: the plan as the model wrote it gets exactly the expected diagnostics (every
/// expected one, and no error that is not expected); the repaired plan checks with no error
/// and runs to `SUCCESS` (with the expected result, when the case gives one).
#[test]
fn corpus() {
    let cases = cases();
    assert!(cases.len() >= 30, "the corpus has {} plans, fewer than 30", cases.len());
    let mut failures = Vec::new();
    for (name, case) in &cases {
        let plans = plans_for(case);
        let expect = case["expect"].as_array().cloned().unwrap_or_default();
        assert!(!expect.is_empty(), "{name}: a case expects at least one diagnostic");
        let check = plans.check(&text_of(case, "plan"));
        failures.extend(compare(name, &check, &expect));
        failures.extend(suggestions_apply(name, &plans, &check));
        if expect.iter().any(|e| e["code"].as_str().is_some_and(|c| c.starts_with('E'))) {
            // A plan with an error never runs.
            let refused = plans.run(&text_of(case, "plan"), tdsl::Value::Null, runner(), &RunPlanOptions::default());
            if !matches!(refused, Err(PlanRefused::Invalid(_))) {
                failures.push(format!("{name}: a plan with errors was not refused"));
            }
        }
        let Some(_) = case.get("repaired") else {
            failures.push(format!("{name}: no repaired plan"));
            continue;
        };
        let repaired = text_of(case, "repaired");
        let check = plans.check(&repaired);
        if !check.ok() {
            failures.push(format!("{name}: the repaired plan does not check:\n{}", check.render()));
            continue;
        }
        let arguments: tdsl::Value =
            serde_json::from_value(case.get("arguments").cloned().unwrap_or(json!({}))).expect("arguments");
        match plans.run(&repaired, arguments, runner(), &RunPlanOptions::default()) {
            Ok(run) if run.status == RunStatus::Success => {
                if let Some(want) = case.get("result") {
                    let got = serde_json::to_value(run.result.as_ref().expect("a result")).expect("JSON");
                    if &got != want {
                        failures.push(format!("{name}: the repaired plan's result is {got}, not {want}"));
                    }
                }
            }
            Ok(run) => {
                failures.push(format!("{name}: the repaired plan ran {}: {}", run.status.as_str(), run.to_json()))
            }
            Err(e) => failures.push(format!("{name}: the repaired plan was refused: {e}\n{}", e.to_json())),
        }
    }
    assert!(failures.is_empty(), "{} problems:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Every structured suggestion of a check, applied to the plan's text, leaves no error
/// that was not there and one error fewer (outside round 11, finding 7: helps that were
/// themselves errors when pasted).
fn suggestions_apply(name: &str, plans: &PlanDesk, check: &PlanCheck) -> Vec<String> {
    let before: BTreeSet<&str> = check.diagnostics.iter().filter(|d| d.code.starts_with('E')).map(|d| d.code).collect();
    let errors = check.counts().0;
    let mut problems = Vec::new();
    for d in &check.diagnostics {
        let Some(x) = d.diagnostic.suggestion.as_ref() else { continue };
        let mut text = check.source.to_string();
        text.replace_range(x.span.range(), &x.replacement);
        let after = plans.check(&text);
        let new: Vec<&str> =
            after.diagnostics.iter().map(|d| d.code).filter(|c| c.starts_with('E') && !before.contains(c)).collect();
        if !new.is_empty() || (d.severity == tdsl::Severity::Error && after.counts().0 >= errors) {
            problems.push(format!(
                "{name}: {}'s suggestion {:?} applied leaves {new:?}:\n{}",
                d.code,
                x.replacement,
                after.render()
            ));
        }
    }
    problems
}

/// Every plan code (`E13xx`, `W13xx`) is expected by some case of the corpus, and
/// documented in `docs/plans.md` and `docs/diagnostics.md`.
#[test]
fn every_plan_code_has_a_case_and_docs() {
    let mut seen = BTreeSet::new();
    for (_, case) in cases() {
        for e in case["expect"].as_array().into_iter().flatten() {
            seen.insert(e["code"].as_str().unwrap_or_default().to_string());
        }
    }
    let plans_doc = std::fs::read_to_string(manifest().join("docs/plans.md")).expect("docs/plans.md");
    let diagnostics_doc = std::fs::read_to_string(manifest().join("docs/diagnostics.md")).expect("docs/diagnostics.md");
    let mut missing = Vec::new();
    for code in Code::ALL.iter().map(|c| c.as_str()).filter(|c| c[1..].starts_with("13")) {
        // A check past the deadline needs a slow check or a past deadline, not a case: it is
        // tested in src/plans/check.rs (`a_check_past_its_deadline_fails_with_its_own_code`).
        if !seen.contains(code) && code != "E1316" {
            missing.push(format!("{code}: no case in tests/data/plans/cases"));
        }
        if !plans_doc.contains(&format!("| `{code}` |")) {
            missing.push(format!("{code}: not in the table of docs/plans.md"));
        }
        if !diagnostics_doc.contains(&format!("| `{code}` |")) {
            missing.push(format!("{code}: not in the table of docs/diagnostics.md"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

fn test_plans() -> PlanDesk {
    PlanDesk::for_root(root("root"), &["/tools/*.tool"]).expect("the root loads").with_upstream(upstream())
}

/// A JSON pointer and a range do not depend on how the plan's JSON is laid out.
#[test]
fn locations_do_not_depend_on_the_layout() {
    let plan: Json = serde_json::from_str(
        &std::fs::read_to_string(manifest().join("tests/data/plans/cli/placeholder.json")).expect("plan"),
    )
    .expect("JSON");
    let plans = test_plans();
    let pretty = plans.check_value(&plan);
    let compact = plans.check(&serde_json::to_string(&plan).expect("JSON"));
    let at = |c: &PlanCheck| -> Vec<(String, String, Option<[usize; 2]>)> {
        c.diagnostics.iter().map(|d| (d.code.to_string(), d.pointer.clone(), d.range)).collect()
    };
    assert_eq!(at(&pretty), at(&compact));
    assert!(at(&pretty).contains(&("E1311".into(), "/instructions/2/arguments/body".into(), Some([9, 24]))));
    // Escapes in the JSON text do not move the range: it counts decoded characters.
    let escaped = serde_json::to_string(&plan).expect("JSON").replace("Summary: ", "Summ\\u0061ry: ");
    assert_eq!(at(&plans.check(&escaped)), at(&compact));
    // The JSON answer carries them; the rendering is the text block's (`check_plan`), not
    // repeated in the JSON (outside round 11, finding 10).
    let answer = pretty.to_json();
    assert_eq!(answer["ok"], json!(false));
    let d = answer["diagnostics"].as_array().expect("list").iter().find(|d| d["code"] == "E1311").expect("E1311");
    assert_eq!(d["range"], json!([9, 24]));
    assert!(d.get("rendered").is_none(), "{d}");
    assert!(pretty.render().contains("{{sum.summary}}"));
}

/// A clean plan's check gives its levels and its result's type.
#[test]
fn clean_plans_give_levels_and_result_type() {
    let text = std::fs::read_to_string(manifest().join("tests/data/plans/cli/clean.json")).expect("plan");
    let check = test_plans().check(&text);
    assert!(check.ok() && check.diagnostics.is_empty(), "{}", check.render());
    assert_eq!(check.levels, Some(vec![vec!["search".to_string()], vec!["pages".to_string()]]));
    assert_eq!(check.result_type.as_deref(), Some("object{words: integer}"));
    let answer = check.to_json();
    assert_eq!(answer["levels"], json!([["search"], ["pages"]]));
}

/// A transform step (SPEC §6.4 ext) in a plan: the two searches it joins are one level,
/// the join the next, and `run_plan` answers its step like any other.
#[test]
fn a_transform_step_joins_a_plans_independent_steps() {
    let plan = r#"{"instructions": [
        {"execution_id": "rust", "tool_definition_path": "search", "arguments": {"query": "rust"}},
        {"execution_id": "python", "tool_definition_path": "search", "arguments": {"query": "python"}},
        {"execution_id": "both", "transform_responses": {"transforms": {"pages": "REF:rust.total + REF:python.total"}}}
      ], "response_reference_map": {"pages": "REF:both.pages"}}"#;
    let plans = test_plans();
    let check = plans.check(plan);
    assert!(check.ok() && check.diagnostics.is_empty(), "{}", check.render());
    assert_eq!(check.levels, Some(vec![vec!["python".to_string(), "rust".to_string()], vec!["both".to_string()]]));
    assert_eq!(check.result_type.as_deref(), Some("object{pages: integer}"));
    let run = plans.run(plan, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    let answer = run.to_json();
    assert_eq!((answer["status"].clone(), answer["result"].clone()), (json!("SUCCESS"), json!({"pages": 6})));
    let both = answer["steps"].as_array().expect("steps").iter().find(|s| s["execution_id"] == "both").expect("both");
    assert_eq!(both["status"], "COMPLETED");
    assert!(both["duration_ms"].is_u64());
}

/// Hostile input: not an object, 100 MB of JSON, nesting 10,000 deep, invalid JSON — a
/// clear error each, nothing parsed that need not be, no panic.
#[test]
fn hostile_plans() {
    let plans = test_plans();
    for (text, code) in
        [("null", "E1303"), ("42", "E1303"), ("\"search\"", "E1303"), ("{\"instructions\": [", "E0501"), ("", "E0501")]
    {
        let check = plans.check(text);
        assert_eq!(check.diagnostics.len(), 1, "{text}: {}", check.render());
        assert_eq!((check.diagnostics[0].code, check.diagnostics[0].pointer.as_str()), (code, ""), "{text}");
    }
    // 100 MB: refused on its size, before any parsing (a parse would take seconds).
    let huge = format!("{{\"instructions\": [], \"description\": \"{}\"}}", "x".repeat(100 << 20));
    let started = std::time::Instant::now();
    let check = plans.check(&huge);
    assert_eq!(check.diagnostics[0].code, "E1301");
    assert!(check.diagnostics[0].message.contains("104857"), "{}", check.diagnostics[0].message);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the size is checked before anything else");
    // 10,000 levels deep, in a value and as the whole plan.
    let deep = |open: &str, close: &str| {
        format!("{{\"instructions\": [{{\"execution_id\": \"a\", \"tool_definition_path\": \"search\", \"arguments\": {{\"query\": {}1{}}}}}]}}", open.repeat(10_000), close.repeat(10_000))
    };
    for text in [deep("[", "]"), deep("{\"a\": ", "}"), "[".repeat(10_000)] {
        let check = plans.check(&text);
        assert_eq!(check.diagnostics.len(), 1, "{}", check.render());
        assert_eq!(check.diagnostics[0].code, "E1302");
        let refused = plans.run(&text, tdsl::Value::Null, runner(), &RunPlanOptions::default());
        assert!(matches!(refused, Err(PlanRefused::Invalid(_))));
    }
    // Brackets inside strings are not nesting.
    let check = plans.check(&format!(
        "{{\"instructions\": [{{\"execution_id\": \"a\", \"tool_definition_path\": \"search\", \"arguments\": {{\"query\": \"{}\"}}}}]}}",
        "[".repeat(10_000)
    ));
    assert!(check.ok(), "{}", check.render());
}

/// What `run_plan` answers: status, result, steps and, when the run failed, the trace's
/// `failure_summary`; a fan-out wider than the limit from a REF fails at run time (E0809);
/// the deadline stops a run (TIMEOUT).
#[test]
fn runs_answer_status_result_steps_and_failure_summary() {
    let plans = test_plans();
    let text = std::fs::read_to_string(manifest().join("tests/data/plans/cli/clean.json")).expect("plan");
    let run = plans.run(&text, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    let answer = run.to_json();
    assert_eq!(answer["status"], "SUCCESS");
    assert_eq!(answer["result"], json!({"words": 25}));
    assert_eq!(answer["steps"].as_array().map(Vec::len), Some(2));
    assert_eq!(answer["steps"][0]["execution_id"], "search");
    assert_eq!(answer["steps"][0]["status"], "COMPLETED");
    assert!(answer["steps"][0]["duration_ms"].is_u64());
    assert!(answer.get("failure_summary").is_none() && answer["steps"][0].get("error").is_none());
    // The trace (and the history's run) names the plan.
    assert_eq!(run.trace.tool, tdsl::testing::plans::PLAN_TOOL);

    // A tool that fails: FAILED, with the failing step's error and the summary.
    let failing = r#"{"instructions": [{"execution_id": "mail", "tool_definition_path": "send_email",
        "arguments": {"to": "", "subject": "s", "body": "b"}}]}"#;
    let run = plans.run(failing, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    let answer = run.to_json();
    assert_eq!(answer["status"], "FAILED");
    assert_eq!(answer["steps"][0]["status"], "FAILED");
    // Named by its program and exit status; its standard error is the host's to show (a
    // `HostRunner`'s default keeps it out of what the engine records).
    let error = answer["steps"][0]["error"].as_str().expect("an error");
    assert!(error.contains("send.sh exited with status 1") && !error.contains("no recipient"), "{answer}");
    let summary = answer["failure_summary"].as_str().expect("a summary");
    assert_eq!(Some(summary), run.trace.failure_summary.as_deref());
    assert!(summary.contains("mail") && summary.contains("E0803"), "{summary}");

    // A fan-out over a list from a REF wider than the limit fails when it fans out.
    let narrow = test_plans().with_limits(PlanLimits { max_fan_out: 2, ..PlanLimits::default() });
    let fan = r#"{"arguments": [{"name": "urls", "type_name": "list<string>", "required": true}],
        "instructions": [{"execution_id": "pages", "tool_definition_path": "fetch_page",
        "parallel_execution": {"iterate_over": "REF:arguments.urls", "child_argument_name": "url"}}]}"#;
    let args: tdsl::Value = serde_json::from_value(
        json!({"urls": ["https://example.org/a", "https://example.org/b", "https://example.org/c"]}),
    )
    .expect("args");
    let run = narrow.run(fan, args, runner(), &RunPlanOptions::default()).expect("it runs");
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.failure_summary.as_deref().is_some_and(|s| s.contains("E0809")), "{:?}", run.failure_summary);

    // The deadline.
    let slow = PlanDesk::for_root(root("slow"), &[] as &[&str])
        .expect("root")
        .with_limits(PlanLimits { deadline_seconds: 0.5, ..PlanLimits::default() });
    let plan = r#"{"instructions": [{"execution_id": "nap", "tool_definition_path": "sleep"}]}"#;
    let started = std::time::Instant::now();
    let run = slow.run(plan, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    assert_eq!(run.status, RunStatus::Timeout, "{}", run.to_json());
    assert!(started.elapsed() < std::time::Duration::from_secs(8), "the deadline stopped the run");
}

/// Limits out of their ranges are refused by `validate`.
#[test]
fn plan_limits_have_ranges() {
    assert!(PlanLimits::default().validate().is_ok());
    for bad in [
        PlanLimits { max_bytes: 10, ..PlanLimits::default() },
        PlanLimits { max_steps: 0, ..PlanLimits::default() },
        PlanLimits { max_nesting: 10_000, ..PlanLimits::default() },
        PlanLimits { max_fan_out: 0, ..PlanLimits::default() },
        PlanLimits { deadline_seconds: 0.0, ..PlanLimits::default() },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

fn cli_plan(name: &str) -> String {
    format!("tests/data/plans/cli/{name}.json")
}

/// `tdsl check --plan` on the real binary: human output (snapshots), JSON output with
/// pointers and ranges, exit codes.
#[test]
fn check_plan_on_the_command_line() {
    let root = "tests/data/plans/root";
    for name in ["placeholder", "python_literals", "misspelt_tool"] {
        let o = tdsl(&["check", "--plan", &cli_plan(name), "--root", root, "--allow", "/tools/*.tool"]);
        assert_eq!(o.code, 1, "{}", o.stderr);
        insta::assert_snapshot!(format!("check_plan_{name}"), o.stderr);
    }
    let o = tdsl(&["check", "--plan", &cli_plan("clean"), "--root", root, "--allow", "/tools/*.tool"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains("levels: [search] → [pages]") && o.stderr.contains("result: object{words: integer}"),
        "{}",
        o.stderr
    );

    let o = tdsl(&["check", "--plan", &cli_plan("placeholder"), "--root", root, "--format", "json"]);
    assert_eq!(o.code, 1);
    let diags: Json = serde_json::from_str(&o.stdout).expect("JSON");
    let d = diags.as_array().expect("list").iter().find(|d| d["code"] == "E1311").expect("E1311");
    assert_eq!(d["pointer"], "/instructions/2/arguments/body");
    assert_eq!(d["range"], json!([9, 24]));
    assert_eq!(d["file"], cli_plan("placeholder"));
    for key in ["severity", "message", "line", "column", "end_line", "end_column", "help"] {
        assert!(d.get(key).is_some(), "no `{key}` in {d}");
    }

    // The command could not run: exit 2.
    assert_eq!(tdsl(&["check", "--plan", "tests/data/plans/cli/nope.json", "--root", root]).code, 2);
    assert_eq!(tdsl(&["check", "--plan", &cli_plan("clean"), "--root", "tests/data/plans/nope"]).code, 2);
    assert_eq!(tdsl(&["check", "--plan", &cli_plan("clean"), "--root", root, "--allow", "[a-"]).code, 2);
    assert_eq!(tdsl(&["check", "--plan", &cli_plan("clean"), "tests/data/check"]).code, 2, "--plan with paths");

    // 100 MB (a sparse file): refused on its size, without reading it.
    let dir = tempfile::tempdir().expect("temp dir");
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge).and_then(|f| f.set_len(100 << 20)).expect("a sparse file");
    let o = tdsl(&["check", "--plan", huge.to_str().expect("path"), "--root", root, "--format", "json"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let diags: Json = serde_json::from_str(&o.stdout).expect("JSON");
    assert_eq!(diags[0]["code"], "E1301");
    assert_eq!(diags[0]["pointer"], "");

    // A file that reports no size (`/proc`) is read no further than the limit: refused
    // without its size being known (read whole, it said "the plan is 28971 bytes").
    let o = tdsl(&["check", "--plan", "/proc/self/smaps", "--root", root, "--max-plan-bytes", "1024"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("E1301") && o.stderr.contains("the plan is more than the limit of 1024 bytes"),
        "{}",
        o.stderr
    );
    // The limits are `serve --mcp --plans`'s flags, with their ranges.
    let o = tdsl(&["check", "--plan", &cli_plan("clean"), "--root", root, "--max-plan-steps", "1"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("E1305"), "{}", o.stderr);
    let o = tdsl(&["check", "--plan", &cli_plan("clean"), "--root", root, "--max-plan-bytes", "10"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("must be an integer from 1024 to 16777216"), "{}", o.stderr);
    // Hostile round: an out-of-range value names the flag as typed (it named the limit's
    // field, `max_fan_out` or `plan size`, which no flag is called).
    for (flag, value) in [
        ("--max-plan-bytes", "10"),
        ("--max-plan-steps", "0"),
        ("--max-plan-nesting", "3"),
        ("--max-fan-out", "100001"),
    ] {
        let o = tdsl(&["check", "--plan", &cli_plan("clean"), "--root", root, flag, value]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains(&format!("{flag} {value}: ")), "{flag} {value}: {}", o.stderr);
    }
    for flag in [&["--max-plan-bytes", "2048"][..], &["--allow", "/tools/*.tool"], &["--files", "tests"]] {
        let o = tdsl(&[&["check"], flag, &["tests/data/check/ok"]].concat());
        assert_eq!(o.code, 2, "{flag:?} without --plan: {}", o.stderr);
        assert!(o.stderr.contains(&format!("{} applies to `--plan FILE.json` only", flag[0])), "{}", o.stderr);
    }
}

/// The file functions work in a plan only with a file store; text that merely mentions one
/// is text.
#[test]
fn file_functions_need_a_store() {
    let plan = r#"{"instructions": [{"execution_id": "sum", "tool_definition_path": "summarize",
        "transform_arguments": {"transforms": {"text": "read_file(file_path=\"notes.txt\")"}}}],
        "response_reference_map": {"summary": "REF:sum.summary"}}"#;
    let without = test_plans().check(plan);
    assert_eq!(without.diagnostics.iter().map(|d| d.code).collect::<Vec<_>>(), ["E1310"], "{}", without.render());
    let store =
        tdsl::testing::files::LocalStore::open_without_git(manifest().join("tests/data/files/tree")).expect("a store");
    let with = test_plans().with_file_store(Arc::new(store));
    let check = with.check(plan);
    assert!(check.ok() && check.diagnostics.is_empty(), "{}", check.render());
    let run = with.run(plan, tdsl::Value::Null, runner(), &RunPlanOptions::default()).expect("it runs");
    assert_eq!(run.status, RunStatus::Success, "{}", run.to_json());
    // An argument that only mentions a file function is text.
    let text = r#"{"instructions": [{"execution_id": "s", "tool_definition_path": "search",
        "arguments": {"query": "what does read_file(path) do"}}], "response_reference_map": {"t": "REF:s.total"}}"#;
    assert!(test_plans().check(text).diagnostics.is_empty());
}

/// The composites of `examples/`, sent as plans against their own roots, get none of the
/// plan codes: the model-mistake checks do not fire on plans written well.
#[test]
fn well_written_composites_get_no_plan_codes() {
    let mut checked = 0;
    for entry in std::fs::read_dir(manifest().join("examples")).expect("examples") {
        let dir = entry.expect("entry").path();
        let main = dir.join("main.tool");
        if !main.is_file() {
            continue;
        }
        let plans = PlanDesk::for_root(&dir, &[] as &[&str]).expect("the root loads");
        let check = plans.check(&std::fs::read_to_string(&main).expect("readable"));
        let plan_codes: Vec<&str> =
            check.diagnostics.iter().map(|d| d.code).filter(|c| c[1..].starts_with("13")).collect();
        assert!(plan_codes.is_empty(), "{}: {plan_codes:?}\n{}", main.display(), check.render());
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} examples");
    // Nor on the analysis' clean cases (the seed's examples among them), but for what a
    // plan may not do: use the file functions without a store (E1310), be primitive (E1304).
    let plans = PlanDesk::for_root(manifest().join("tests/data/check/root"), &[] as &[&str]).expect("root");
    for entry in std::fs::read_dir(manifest().join("tests/data/check/ok")).expect("ok cases") {
        let path = entry.expect("entry").path();
        let check = plans.check(&std::fs::read_to_string(&path).expect("readable"));
        let plan_codes: Vec<&str> = check
            .diagnostics
            .iter()
            .map(|d| d.code)
            .filter(|c| c[1..].starts_with("13") && !["E1310", "E1304"].contains(c))
            .collect();
        // The seed's `REF:api_call.response.name` and `.profile.email` read fields the
        // stub `api_call.tool` does not declare (`response_body`, `status_code`, `error`): a
        // plan, which reads a callee's declared result only, is refused for it (`E1320`).
        // A step's conditions may skip it, and its field is then null: into a required
        // argument, a plan is warned of it (`W1330`).
        if path.ends_with("transform_step_with_conditions_and_dependencies.tool") {
            assert_eq!(plan_codes, ["W1330"], "{}", check.render());
            checked += 1;
            continue;
        }
        // `continue_on_error` over a tool that declares a `status` of its own: a failure is
        // told from a result by `error_message` only (`W1331`).
        if path.ends_with("continue_on_error_failure_shape.tool") {
            assert_eq!(plan_codes, ["W1331", "W1331"], "{}", check.render());
            checked += 1;
            continue;
        }
        if path.ends_with("seed_04_object_references.tool") {
            assert_eq!(plan_codes, ["E1320", "E1320"], "{}", check.render());
            checked += 1;
            continue;
        }
        assert!(plan_codes.is_empty(), "{}: {plan_codes:?}\n{}", path.display(), check.render());
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} composites");
    // The served tools' definitions, for a listing.
    let plans = test_plans();
    let search = plans.definition("search").expect("search");
    assert_eq!(search.arguments[0].name.node, "query");
    let forecast = plans.definition("weather/forecast").expect("an upstream tool");
    assert_eq!(forecast.responses.len(), 3);
    assert!(plans.definition("delete_all").is_none());
}

/// A placeholder naming a step is an error wherever a value is: nested in arguments, in
/// `variables`, in conditions, in `response_reference_map`, in a `done_value`.
#[test]
fn placeholders_are_found_wherever_values_are() {
    let plan = json!({
        "instructions": [
            {"execution_id": "search", "tool_definition_path": "search", "arguments": {"query": "tdsl"}},
            {"execution_id": "mail", "tool_definition_path": "send_email",
             "arguments": {"to": "a@example.org", "subject": "s", "body": "b", "extra": {"items": ["x", "{{search.total}}"]}},
             "transform_arguments": {"variables": {"n": "${search.total}"}, "transforms": {"subject": "string(n)"}},
             "conditions": [{"logic": "OR", "conditions": [{"param": "#E1", "operator": "exists"}]}],
             "done_check": [{"param": "REF:search.total", "operator": "equals", "value": "$1"}],
             "done_value": {"sent": "{{ steps.search.output.total }}"}}
        ],
        "response_reference_map": {"sent": "{{mail.sent}}"}
    });
    let check = test_plans().check_value(&plan);
    let found: BTreeSet<String> =
        check.diagnostics.iter().filter(|d| d.code == "E1311").map(|d| d.pointer.clone()).collect();
    let want: BTreeSet<String> = [
        "/instructions/1/arguments/extra/items/1",
        "/instructions/1/transform_arguments/variables/n",
        "/instructions/1/conditions/0/conditions/0/param",
        "/instructions/1/done_check/0/value",
        "/instructions/1/done_value/sent",
        "/response_reference_map/sent",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, want, "{}", check.render());
    let generic =
        check.diagnostics.iter().find(|d| d.pointer == "/instructions/1/done_value/sent").expect("done_value");
    assert!(generic.help.as_deref().is_some_and(|h| h.contains("\"REF:search.total\"")), "{:?}", generic.help);
}

/// Mangled plans (cut anywhere, brackets and placeholders pushed in anywhere) get
/// diagnostics, never a panic.
#[test]
fn mangled_plans_never_panic() {
    let plans = test_plans();
    for (name, case) in cases().into_iter().take(20) {
        let text = text_of(&case, "plan");
        let bounds: Vec<usize> = (0..text.len()).filter(|i| text.is_char_boundary(*i)).step_by(13).collect();
        for at in bounds {
            let _ = plans.check(&text[..at]);
            for insert in ["{{", "$.", "[", "\"", "\\", "REF:", "}"] {
                let mut mangled = text.clone();
                mangled.insert_str(at, insert);
                let check = plans.check(&mangled);
                for d in &check.diagnostics {
                    assert!(!d.rendered.is_empty(), "{name} at {at}: {insert}");
                }
            }
        }
    }
}

/// `W1320` (issue 39): a string value that reads as computed but is sent as written is
/// pointed out — and only that: ordinary text, a whole REF, JSON text and parentheses in
/// prose are not.
#[test]
fn literal_text_is_flagged_only_when_it_reads_as_computed() {
    let plans = test_plans();
    let flagged = |body: &str| -> bool {
        let plan = json!({
            "instructions": [
                {"execution_id": "f", "tool_definition_path": "weather/forecast", "arguments": {"city": "Oslo"}},
                {"execution_id": "mail", "tool_definition_path": "send_email",
                 "arguments": {"to": "ada@example.org", "subject": "Weather", "body": body}}
            ],
            "response_reference_map": {"sent": "REF:mail.sent", "city": "REF:f.city"}
        });
        let check = plans.check(&plan.to_string());
        assert!(check.ok(), "{body}: {}", check.render());
        check.diagnostics.iter().any(|d| d.code == "W1320")
    };
    for computed in [
        "Rate is REF:f.high_c",
        "upper(city)",
        "join(array=names, separator=\", \")",
        "f\"Weather in {city}\"",
        "Weather in {city}",
        "https://example.org/cities/{city.name}",
    ] {
        assert!(flagged(computed), "not flagged: {computed}");
    }
    for text in [
        "REF:f.summary",
        "Sunny (mostly) in Oslo",
        "{\"city\": \"Oslo\"}",
        "Call me (maybe)",
        "Costs are {} per day",
        "a REF: is a reference",
    ] {
        assert!(!flagged(text), "flagged: {text}");
    }
}

/// Checking is linear in the plan and bounded in the tools (issue 38, item 4), measured in
/// work, not time: the largest plans the limits allow, full of the mistakes whose checking
/// was quadratic — 120,000 `$a` in one string (23 s of CPU), 60,000 of them each beside an
/// escape (the string was decoded again for each: 50 minutes), 50,000 strings of one each —
/// get every error counted; and "did you mean", against 100,000 upstream tools (17 s for one
/// misspelt name) and an upstream tool of 20,000 fields, spends at most the plan's allowance
/// however many steps misspell them ([`tdsl::testing::suggest::work_spent`] counts the
/// characters looked at and the distance-table cells).
#[test]
fn checking_is_linear_in_the_plan_and_bounded_in_the_tools() {
    use tdsl::testing::plans::MAX_SUGGESTION_WORK;
    use tdsl::testing::suggest::{work_spent, SUGGESTION_BUDGET};

    let plans = test_plans();
    let max = PlanLimits::default().max_bytes;
    let step = |query: &str| {
        format!(
            r#"{{"instructions": [{{"execution_id": "a", "tool_definition_path": "search", "arguments": {{"query": {query}}}}}]}}"#
        )
    };
    for (what, plan, errors) in [
        ("one string", step(&format!("\"{}\"", "$a".repeat(120_000))), 120_000),
        ("escapes", step(&format!("\"{}\"", "$a\\n".repeat(60_000))), 60_000),
        ("many strings", step(&format!("[{}]", vec!["\"$a\""; 50_000].join(","))), 50_000),
    ] {
        assert!(plan.len() <= max, "{what}: {} bytes", plan.len());
        let check = plans.check(&plan);
        // (The list of the last is also not the string `query` takes: one error more.)
        let (counted, _) = check.counts();
        assert!((errors..=errors + 1).contains(&counted), "{what}: every placeholder is an error: {counted}");
        assert_eq!(check.diagnostics.len(), 50, "{what}");
    }

    // 100,000 upstream tools, one of them with 20,000 declared fields, and the most steps
    // a plan has, each misspelling a tool or a field.
    let mut up: Vec<UpstreamTool> = (0..100_000)
        .map(|i| UpstreamTool {
            server: "big".into(),
            name: format!("tool_number_{i:06}"),
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
        })
        .collect();
    let fields: serde_json::Map<String, Json> =
        (0..20_000).map(|i| (format!("field_{i:05}"), json!({"type": "integer"}))).collect();
    up[0].output_schema = Some(json!({"type": "object", "properties": fields}));
    let plans = test_plans().with_upstream(up);
    let most = PlanLimits::default().max_steps;
    let mut steps = vec![json!({"execution_id": "first", "tool_definition_path": "big/tool_numbr_099998"})];
    steps.push(json!({"execution_id": "wide", "tool_definition_path": "big/tool_number_000000"}));
    for i in 2..most {
        steps.push(if i % 2 == 0 {
            json!({"execution_id": format!("s{i}"), "tool_definition_path": format!("big/tool_numbr_{i:06}")})
        } else {
            json!({"execution_id": format!("s{i}"), "tool_definition_path": "search",
                   "arguments": {"query": format!("REF:wide.feild_{i:05}")}})
        });
    }
    let before = work_spent();
    let check = plans.check_value(&json!({"instructions": steps}));
    let spent = work_spent() - before;
    assert!(
        spent <= MAX_SUGGESTION_WORK + SUGGESTION_BUDGET,
        "the suggestions of one plan spent {spent} units, more than its allowance of {MAX_SUGGESTION_WORK}"
    );
    let (errors, _) = check.counts();
    assert!(errors >= most - 2, "every misspelling is an error: {errors}\n{}", check.render());
    let first = check.diagnostics.iter().find(|d| d.pointer == "/instructions/0/tool_definition_path").expect("E1306");
    assert_eq!(first.code, "E1306");
    let help = first.help.as_deref().unwrap_or_default();
    assert!(help.starts_with("did you mean `big/tool_number_099998`?"), "{help}");
    assert!(help.contains("and 99999 more"), "the list of callable tools is cut: {help}");
    // The hint of a field is found among 20,000 too, while the allowance lasts.
    let field = check.diagnostics.iter().find(|d| d.pointer == "/instructions/3/arguments/query").expect("E1314");
    assert!(field.help.as_deref().is_some_and(|h| h.contains("field_00003")), "{:?}", field.help);
}

/// A tool has one identity (issue 38, item 7): a spelling with surrounding whitespace, a
/// trailing CR/LF, a control or invisible character or a look-alike space is refused at
/// check time (`E0530`) with the tool's one name in the help (it passed, trimmed, then named
/// the tool a second way or failed at call time); every clean spelling — served name, tool
/// path with or without `/`, `./` or `.tool` — runs the tool under its tool path, which is
/// what the runner sees (`TDSL_TOOL`, `X-Tdsl-Tool`, the history's `invocations.tool`) and
/// what the trace says.
#[test]
fn a_tool_has_one_identity() {
    let plans = test_plans();
    let step = |tool: &str| json!({"instructions": [{"execution_id": "s", "tool_definition_path": tool, "arguments": {"query": "x"}}]});
    for (spelling, name) in [
        ("search\r\n", "/tools/search.tool"),
        ("search\n", "/tools/search.tool"),
        (" search", "/tools/search.tool"),
        ("search\t", "/tools/search.tool"),
        ("/tools/search.tool\r\n", "/tools/search.tool"),
        ("search\u{a0}", "/tools/search.tool"),
        ("\u{200b}search", "/tools/search.tool"),
        ("\u{feff}search", "/tools/search.tool"),
        ("sea\u{0}rch", "/tools/search.tool"),
        ("search\u{3000}", "/tools/search.tool"),
        ("weather/forecast\r\n", "weather/forecast"),
    ] {
        let check = plans.check_value(&step(spelling));
        let d = check.diagnostics.iter().find(|d| d.code == "E0530");
        let d = d.unwrap_or_else(|| panic!("{spelling:?}: no E0530\n{}", check.render()));
        assert_eq!(d.pointer, "/instructions/0/tool_definition_path", "{spelling:?}");
        assert!(
            d.help.as_deref().is_some_and(|h| h.starts_with(&format!("write `{name}`"))),
            "{spelling:?}: {:?}",
            d.help
        );
        assert!(!check.ok(), "{spelling:?}");
        assert!(
            !d.message.chars().any(|c| c.is_control() || c == '\u{a0}' || c == '\u{200b}'),
            "{spelling:?}: {}",
            d.message
        );
    }

    // A spelling that names no tool even when clean is the unknown tool it is, once.
    let check = plans.check_value(&step("serch\r\n"));
    let codes: Vec<&str> = check.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E1306"], "{}", check.render());

    // Every clean spelling reaches the runner, and the trace, as `/tools/search.tool`.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let host = runner();
    let recording: Arc<dyn Runner> = Arc::new(move |call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
        record.lock().expect("not poisoned").push(call.tool_path.to_string());
        host.call(call)
    });
    for spelling in ["search", "/tools/search.tool", "tools/search.tool", "/tools/search", "./tools/search.tool"] {
        let plan = serde_json::to_string(&step(spelling)).expect("JSON");
        let run = plans.run(&plan, tdsl::Value::Null, recording.clone(), &RunPlanOptions::default()).expect("it runs");
        assert_eq!(run.status, RunStatus::Success, "{spelling}: {}", run.to_json());
        assert_eq!(run.trace.steps[0].tool, "/tools/search.tool", "{spelling}");
    }
    let up = serde_json::to_string(&json!({"instructions": [{"execution_id": "w", "tool_definition_path": "weather/forecast", "arguments": {"city": "Oslo"}}]})).expect("JSON");
    let run = plans.run(&up, tdsl::Value::Null, recording.clone(), &RunPlanOptions::default()).expect("it runs");
    assert_eq!(run.status, RunStatus::Success, "{}", run.to_json());
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen, [vec!["/tools/search.tool".to_string(); 5], vec!["weather/forecast".to_string()]].concat());
}

/// The `tools/list` of a server declared with the official TypeScript SDK and zod, made now:
/// `scripts/zod-tools` (node; the pinned SDK and zod installed once under target/zod-tools)
/// runs `tests/data/plans/upstream/zod_server.mjs`. A failure says why (no node, no npm, the
/// registry unreachable): the test cannot be skipped.
fn zod_tools_now() -> Json {
    let out = std::process::Command::new("sh")
        .arg(manifest().join("scripts/zod-tools"))
        .current_dir(manifest())
        .output()
        .unwrap_or_else(|e| panic!("scripts/zod-tools could not start (sh): {e}"));
    assert!(
        out.status.success(),
        "scripts/zod-tools failed ({}), so the zod schemas could not be made:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("scripts/zod-tools printed no JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout))
    })
}

/// Schemas the TypeScript SDK generates from zod (zod 3's API through zod-to-json-schema,
/// zod 4's through `toJSONSchema`), made by the real SDK now, are the fixture the corpus
/// reads as server `ts`, and tdsl reads them whole: the fields of nested objects and of a
/// list's object elements, `enum` (also behind a `$ref` to a schema's first place), `default`,
/// `minimum`/`maximum`, the descriptions, and a recursive type cut at its stated depth.
#[test]
fn zod_schemas_of_the_typescript_sdk_are_read_whole() {
    let now = zod_tools_now();
    let fixture: Json = serde_json::from_str(
        &std::fs::read_to_string(manifest().join("tests/data/plans/upstream/zod_tools.json")).expect("the fixture"),
    )
    .expect("JSON");
    assert_eq!(
        now["tools"], fixture["tools"],
        "tests/data/plans/upstream/zod_tools.json is not what the SDK makes now: run `scripts/zod-tools > tests/data/plans/upstream/zod_tools.json`"
    );
    let tools: Vec<UpstreamTool> = now["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| UpstreamTool {
            server: "ts".into(),
            name: t["name"].as_str().expect("a name").into(),
            description: t["description"].as_str().map(str::to_string),
            input_schema: t["inputSchema"].clone(),
            output_schema: t.get("outputSchema").cloned(),
        })
        .collect();
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tool {name}"));
    // The zod-to-json-schema pointer (`#/properties/state`) and zod 4's inlined copy read alike.
    for prefix in ["", "v4_"] {
        let search = tool(&format!("{prefix}search_issues")).listing_line();
        for part in [
            format!("- `ts/{prefix}search_issues(repo: string!, state: \"open\"|\"closed\", labels: list<string>, "),
            "filter: {state: \"open\"|\"closed\", author?: string".to_string(),
            // A nested field the server fills in shows its default (it read as required).
            "sort: list<{field: \"created\"|\"updated\", direction: \"asc\"|\"desc\" = \"desc\"}>".to_string(),
            "limit: integer (1..50) = 20)`".to_string(),
            "→ `{issues: list<{number: integer".to_string(),
            "title: string, state: \"open\"|\"closed\", assignee: string | null, labels: list<string>".to_string(),
            ": Searches a repository's issues.\n  Newest first; at most `limit`.\n".to_string(),
            "  - argument `repo`: owner/name\n".to_string(),
            "  - argument `filter`: Only the issues that match\n".to_string(),
        ] {
            assert!(search.contains(&part), "{prefix}search_issues: no `{part}` in\n{search}");
        }
        // The declarations the analysis holds literals against: enum, bounds and default.
        let (def, diags) = tdsl::testing::tool::load(&tool(&format!("{prefix}search_issues")).tool_source());
        assert!(diags.is_empty(), "{diags:?}");
        let def = def.expect("a tool");
        let limit = def.arguments.iter().find(|p| p.name.node == "limit").expect("limit");
        assert_eq!(limit.constraints.minimum.as_ref().map(|m| m.node), Some(1.0));
        assert_eq!(limit.constraints.maximum.as_ref().map(|m| m.node), Some(50.0));
        assert_eq!(limit.constraints.default.as_ref().map(|d| d.node.clone()), Some(tdsl::Value::Int(20)));
        let state = def.arguments.iter().find(|p| p.name.node == "state").expect("state");
        let values = &state.constraints.enum_values.as_ref().expect("an enum").node;
        assert_eq!(values, &vec![tdsl::Value::from("open"), tdsl::Value::from("closed")]);
        // A reused object (`maintainers: z.array(Person)`, a pointer to `owner` in zod 3).
        let repo = tool(&format!("{prefix}get_repo")).listing_line();
        assert!(repo.contains("owner: {login: string, email: string | null"), "{repo}");
        assert!(repo.contains("maintainers: list<{login: string, email: string | null"), "{repo}");
        assert!(repo.contains("stars: integer (≥0)"), "{repo}");
        // z.lazy: a recursion followed twice inside itself, then any value (zod 4's `tree` is
        // itself a `$ref` into `definitions`, zod 3's the schema written out).
        let tree = tool(&format!("{prefix}file_tree")).listing_line();
        let cut = if prefix.is_empty() {
            "tree: {name: string, children: list<{name: string, children: list<{name: string, children: list<…>}>}>}"
        } else {
            "tree: {name: string, children: list<{name: string, children: list<…>}>}"
        };
        assert!(tree.contains(cut), "{tree}");
        assert!(tree.contains("depth: integer (1..5)"), "{tree}");
    }
}
