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
use tdsl::exec::host::HostRunner;
use tdsl::exec::{RunStatus, Runner, ToolCall, ToolError};
use tdsl::plans::{upstream_target, PlanCheck, PlanLimits, PlanRefused, Plans, RunPlanOptions, UpstreamTool};
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
}

/// The host runner for served tools, with upstream calls routed to canned answers (what
/// `serve --mcp --plans` does with its upstream connections).
fn runner() -> Arc<dyn Runner> {
    let host = HostRunner::new();
    Arc::new(move |call: &ToolCall<'_>| -> Result<tdsl::Value, ToolError> {
        match call.definition.and_then(upstream_target) {
            Some(("weather", "forecast")) => {
                let city =
                    call.arguments.get_direct("city").and_then(tdsl::Value::as_str).unwrap_or_default().to_string();
                let answer = json!({"city": city, "high_c": 21.5, "summary": format!("sunny in {city}")});
                Ok(serde_json::from_value(answer).expect("a value"))
            }
            Some((server, tool)) => Err(ToolError::permanent(format!("no upstream `{server}/{tool}` in this test"))),
            None => host.call(call),
        }
    })
}

/// The `Plans` a case is checked with.
fn plans_for(case: &Json) -> Plans {
    let root_name = case["root"].as_str().unwrap_or("root");
    let allow: Vec<String> = case["allow"].as_array().map_or_else(
        || vec!["/tools/*.tool".to_string()],
        |a| a.iter().filter_map(|g| g.as_str().map(str::to_string)).collect(),
    );
    let mut plans = Plans::for_root(root(root_name), &allow).expect("the root loads").with_upstream(upstream());
    if let Some(steps) = case["max_steps"].as_u64() {
        plans = plans.with_limits(PlanLimits { max_steps: steps as usize, ..PlanLimits::default() });
    }
    if let Some(n) = case["max_fan_out"].as_u64() {
        plans = plans.with_limits(PlanLimits { max_fan_out: n as usize, ..PlanLimits::default() });
    }
    plans
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

fn cases() -> Vec<(String, Json)> {
    let dir = manifest().join("tests/data/plans/cases");
    let mut out: Vec<(String, Json)> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let case: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_stem().expect("stem").to_string_lossy().into_owned(), case)
        })
        .collect();
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
        if !seen.contains(code) {
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
