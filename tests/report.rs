//! `tdsl report` (issue 20): one self-contained HTML page per run, checked in headless
//! Chromium (Debian package `chromium`, installed by `.ci/run`): no console errors, every
//! step present with its status after the page's script ran, a screenshot that is not
//! blank and shows the status colours.

mod common;
use common::tdsl;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const ROOT: &str = "tests/data/report";

/// A folder under `target/` (the screenshot is kept there for people to look at).
fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("output folder");
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Runs `tests/data/report/main.tool` (completed, fanned-out, retried, failed and skipped
/// steps) with a trace and a history; the trace's path.
fn run_the_composite(dir: &Path) -> PathBuf {
    let trace = dir.join("trace.json");
    let state = format!("state={:?}", s(&dir.join("calls")));
    let o = tdsl(&[
        "run",
        "tests/data/report/main.tool",
        "--root",
        ROOT,
        "--arg",
        &state,
        "--trace",
        s(&trace),
        "--history",
        s(&dir.join("h.db")),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("PARTIAL: continued past failed steps: broken"), "{}", o.stderr);
    trace
}

/// Every step and child of the run, with its status.
const STEPS: [(&str, &str); 8] = [
    ("first", "COMPLETED"),
    ("fan", "COMPLETED"),
    ("fan[0]", "COMPLETED"),
    ("fan[1]", "COMPLETED"),
    ("fan[2]", "COMPLETED"),
    ("retry", "COMPLETED"),
    ("broken", "FAILED"),
    ("never", "SKIPPED"),
];

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!("headless Chromium is needed to check the report and none is installed: `apt-get install -y chromium` (.ci/run does)");
}

/// Runs headless Chromium on `page` with `args`; its standard output and error. Killed
/// after two minutes (a watchdog, not a timing assertion).
fn headless(page: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let mut child = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--window-size=1200,900"])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("chromium cannot start: {e}"));
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    common::wait_or_kill(&mut child, Duration::from_secs(120), "chromium");
    (reader.join().unwrap(), err_reader.join().unwrap())
}

/// The console messages Chromium logged (`--enable-logging=stderr`): page errors land here.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn the_report_of_a_trace_is_one_self_contained_page() {
    let dir = out_dir("static");
    let trace = run_the_composite(&dir);
    let page = dir.join("report.html");
    let o = tdsl(&["report", s(&trace), "-o", s(&page)]);
    assert_eq!((o.code, o.stdout.as_str(), o.stderr.as_str()), (0, "", ""));
    let html = std::fs::read_to_string(&page).unwrap();
    // Nothing is fetched when it is viewed: no linked script, style, image or font.
    for needle in ["src=", "href=", "@import", "url(", "https://"] {
        assert!(!html.contains(needle), "the page refers to something outside it: {needle}");
    }
    for (step, status) in STEPS {
        assert!(html.contains(&format!(r#"<tr data-step="{step}" data-status="{status}">"#)), "{step} {status}");
        assert!(
            html.contains(&format!(r#"data-step="{step}" data-status="{status}"><text"#)),
            "{step}'s timeline lane"
        );
    }
    // The graph, laid out by level from the definition: `fan` (after `first`) and `broken`
    // (after `retry`) are in the second column.
    assert!(html.contains(r#"<g class="node completed" data-step="fan" data-status="COMPLETED" tabindex="0"><title>fan: COMPLETED</title><rect x="260""#), "{html}");
    assert!(html.contains(r#"<g class="node failed" data-step="broken" data-status="FAILED""#));
    assert!(html.contains(r#"<g class="node skipped" data-step="never" data-status="SKIPPED""#));
    // Retry attempts are on the timeline: two failed, then one that answered.
    assert_eq!(
        html.matches("<title>attempt ").count(),
        1 + 3 + 3 + 1,
        "first, fan's 3 children, retry's 3, broken's 1"
    );
    assert!(html.contains("<title>attempt 2: Transient"));
    assert!(html.contains("<title>attempt 3: Ok"));
}

#[test]
fn the_report_opens_in_headless_chromium() {
    let dir = out_dir("chromium");
    let trace = run_the_composite(&dir);
    let page = dir.join("report.html");
    let o = tdsl(&["report", s(&trace), "-o", s(&page)]);
    assert_eq!(o.code, 0, "{}", o.stderr);

    let (dom, stderr) = headless(&page, &dir.join("profile-dom"), &["--dump-dom"]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:?}", console_lines(&stderr));
    let root_tag = &dom[dom.find("<html").expect("an html element")..];
    let root_tag = &root_tag[..root_tag.find('>').unwrap_or(0)];
    assert!(root_tag.contains(r#"data-ready="1""#), "the page's script ran to its end: {root_tag}");
    assert!(!root_tag.contains("data-errors"), "the page recorded errors: {root_tag}");
    for (step, status) in STEPS {
        assert!(dom.contains(&format!(r#"data-step="{step}" data-status="{status}""#)), "{step} {status} in the DOM");
    }
    // The script selected the first step and filled in its details.
    assert!(dom.contains(r#"<h2 id="details-title">first — COMPLETED</h2>"#), "{dom}");
    assert!(dom.contains(r#""path": "first","#), "{dom}");
    assert!(dom.contains(r#"<g class="node completed selected" data-step="first""#), "{dom}");

    let shot = dir.join("report.png");
    let (_, stderr) = headless(&page, &dir.join("profile-shot"), &[&format!("--screenshot={}", s(&shot))]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:?}", console_lines(&stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).expect("a screenshot")));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert_eq!((info.width, info.height), (1200, 900));
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let pixels: Vec<[u8; 3]> = buf[..info.buffer_size()].chunks(channels).map(|p| [p[0], p[1], p[2]]).collect();
    let distinct: std::collections::HashSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(distinct.len() > 50, "the screenshot is nearly blank: {} colours", distinct.len());
    // The status colours are drawn: completed green, failed red, skipped grey.
    for (name, colour) in
        [("completed", [0x2e, 0x9d, 0x5b]), ("failed", [0xd6, 0x45, 0x45]), ("skipped", [0x8d, 0x94, 0xa0])]
    {
        let n = pixels.iter().filter(|p| **p == colour).count();
        assert!(n > 500, "{name} ({colour:?}) covers {n} pixels");
    }
}

#[test]
fn a_run_from_the_history_gives_the_same_report() {
    let dir = out_dir("history");
    let trace = run_the_composite(&dir);
    let (from_trace, from_history) = (dir.join("a.html"), dir.join("b.html"));
    assert_eq!(tdsl(&["report", s(&trace), "-o", s(&from_trace)]).code, 0);
    let o = tdsl(&["report", "--run", "1", "--history", s(&dir.join("h.db")), "--output", s(&from_history)]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(std::fs::read_to_string(&from_trace).unwrap(), std::fs::read_to_string(&from_history).unwrap());
}

#[test]
fn a_transform_step_is_drawn_as_one_that_calls_nothing() {
    let dir = out_dir("transform-step");
    let trace = dir.join("trace.json");
    let o = tdsl(&["run", "tests/data/report/join.tool", "--root", ROOT, "--trace", s(&trace)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let result: serde_json::Value = serde_json::from_str(&o.stdout).expect("the result is JSON");
    assert_eq!(result, serde_json::json!({"calls": 3}));
    let page = dir.join("report.html");
    assert_eq!(tdsl(&["report", s(&trace), "-o", s(&page)]).code, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    // Its row: no tool, no attempt; its node in the third column (after both fan-outs, which
    // share the first), marked as a transform.
    assert!(
        html.contains(r#"<tr data-step="join" data-status="COMPLETED"><td>join</td><td><span class="badge completed">COMPLETED</span></td><td><em>transform step</em></td>"#),
        "{html}"
    );
    assert!(html.contains(r#"class="sub">COMPLETED · transform</text>"#), "{html}");
    assert!(html.contains(
        r#"data-step="left" data-status="COMPLETED" tabindex="0"><title>left: COMPLETED</title><rect x="20""#
    ));
    assert!(html.contains(
        r#"data-step="right" data-status="COMPLETED" tabindex="0"><title>right: COMPLETED</title><rect x="20""#
    ));
    assert!(html.contains(
        r#"data-step="join" data-status="COMPLETED" tabindex="0"><title>join: COMPLETED</title><rect x="260""#
    ));
    assert_eq!(html.matches("<title>attempt ").count(), 3, "the fan-outs' three calls, none for the join");
    assert!(html.contains(r#"\"transform_step\":true"#) || html.contains(r#""transform_step":true"#), "{html}");
}

#[test]
fn without_its_definition_the_graph_follows_the_start_order() {
    let dir = out_dir("no-definition");
    let trace = run_the_composite(&dir);
    let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    t["file"] = serde_json::Value::String(s(&dir.join("gone.tool")).to_string());
    std::fs::write(&trace, t.to_string()).unwrap();
    let page = dir.join("r.html");
    assert_eq!(tdsl(&["report", s(&trace), "-o", s(&page)]).code, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("The composite's definition was not available"));
    for (step, status) in STEPS.iter().filter(|(s, _)| !s.contains('[')) {
        assert!(html.contains(&format!(r#"data-step="{step}" data-status="{status}" tabindex="0""#)), "{step}");
    }
}

#[test]
fn report_errors() {
    let dir = out_dir("errors");
    let o = tdsl(&["report", "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("the following required arguments were not provided"), "{}", o.stderr);
    let o = tdsl(&["report", s(&dir.join("missing.json")), "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: cannot read "), "{}", o.stderr);
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"steps": 3}"#).unwrap();
    let o = tdsl(&["report", s(&bad), "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("not a trace"), "{}", o.stderr);
    let o = tdsl(&["report", "--run", "9", "--history", s(&dir.join("h.db")), "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: no run `9` in the history "), "{}", o.stderr);
    let o = tdsl(&["report", s(&bad), "--run", "1", "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
    // An output that cannot be written.
    let trace = run_the_composite(&dir);
    let o = tdsl(&["report", s(&trace), "-o", s(&dir.join("no/such/folder/r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.starts_with("error: cannot write "), "{}", o.stderr);
}

/// A trace of one completed step whose result (and the attempt's response) holds a string
/// of `bytes` bytes of `<` (escaped six-fold in the page's JSON, the worst case).
fn trace_with_a_big_string(path: &Path, bytes: usize) {
    let big = "<".repeat(bytes);
    let t = serde_json::json!({"format": "tdsl-trace/2", "run_id": "run-1", "tool": "main.tool",
      "arguments": {}, "overall_status": "SUCCESS", "started_at": "2026-01-01T00:00:00.000Z",
      "completed_at": "2026-01-01T00:00:00.010Z", "total_duration_ms": 10, "total_retries": 0,
      "circuit_breaker_trips": 0, "max_in_flight": 1, "step_results": [
        {"step_id": "a", "tool": "/t.tool", "status": "COMPLETED", "duration_ms": 10,
         "started_ms": 0, "ended_ms": 10, "output": {"big": big, "list": (0..100_000).collect::<Vec<_>>()},
         "attempts": [{"attempt": 1, "outcome": "ok", "response": {"big": big}, "delay_ms": 0,
                       "started_ms": 0, "duration_ms": 10}]}]});
    std::fs::write(path, t.to_string()).unwrap();
}

/// Issue 28 item 6: the page embeds a bounded part of each value, saying what it left out;
/// a trace holding a 20 MB string gives a page of well under a MiB.
#[test]
fn the_page_embeds_a_bounded_part_of_each_value() {
    let dir = out_dir("big");
    let (trace, page) = (dir.join("big.json"), dir.join("big.html"));
    trace_with_a_big_string(&trace, 20 << 20);
    let o = tdsl(&["report", s(&trace), "-o", s(&page)]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 512 << 10, "the page is {} bytes", html.len());
    assert!(html.contains("… [truncated: 20971520 bytes in all, the first 8192 shown]"), "no note of the cut");
    assert!(html.contains("more items of 100000 not shown]"), "no note of the list's cut");
    assert!(html.contains(r#"<tr data-step="a" data-status="COMPLETED">"#));
}

/// Issue 28 item 6: under a memory limit too small for the trace, `report` says so and
/// exits 2 instead of aborting.
#[cfg(unix)]
#[test]
fn report_fails_cleanly_when_memory_runs_out() {
    let dir = out_dir("memory");
    let (trace, page) = (dir.join("big.json"), dir.join("big.html"));
    trace_with_a_big_string(&trace, 30 << 20);
    // 150 MB of address space: the binary starts, the 60 MB trace cannot be drawn.
    let script =
        format!("ulimit -v 150000 && exec '{}' report '{}' -o '{}'", env!("CARGO_BIN_EXE_tdsl"), s(&trace), s(&page));
    let out = Command::new("sh").args(["-c", &script]).output().expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: not enough memory to draw "), "{stderr}");
    assert!(!page.exists());
}

/// Issue 28 item 6: `-o` naming the trace itself (or a symbolic or hard link to it, or the
/// history database) is refused, and the trace is left as it was.
#[test]
fn report_refuses_to_write_over_what_it_reads() {
    let dir = out_dir("overwrite");
    let trace = run_the_composite(&dir);
    let before = std::fs::read(&trace).unwrap();
    let (soft, hard) = (dir.join("soft.json"), dir.join("hard.json"));
    #[cfg(unix)]
    std::os::unix::fs::symlink(&trace, &soft).unwrap();
    std::fs::hard_link(&trace, &hard).unwrap();
    let mut outputs = vec![trace.clone(), hard];
    if cfg!(unix) {
        outputs.push(soft);
    }
    for out in &outputs {
        let o = tdsl(&["report", s(&trace), "-o", s(out)]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert!(o.stderr.contains("is the trace") && o.stderr.contains("the page would replace it"), "{}", o.stderr);
    }
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was changed");
    let history = dir.join("h.db");
    let o = tdsl(&["report", "--run", "1", "--history", s(&history), "-o", s(&history)]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("is the history database"), "{}", o.stderr);
}

// ---------------------------------------------------------------------------------------
// A composition's report (issue 31 item 8): `tdsl compose --history` records the
// composition as one run whose steps are its four phases; `report --run` draws the phases
// (status, duration, tokens, the plan's repair rounds) above the graph of the plan it ran.

mod compose_support;
use compose_support::{query_args, root, tdsl_compose, Answer, ModelServer};

const KEY: &str = "sk-test-REPORT-3b71c0e9";

/// Composes with `script` (Anthropic's API) into the history `h`; the result.
fn compose_into(h: &Path, script: &[(&str, Answer)], more: &[&str]) -> serde_json::Value {
    let server = ModelServer::start(script, Some(KEY));
    let (r, base) = (root(), server.url(""));
    let mut more = more.to_vec();
    more.extend(["--history", s(h)]);
    let out = tdsl_compose(&query_args(&r, "anthropic:test-model", &base, &more), "anthropic", KEY);
    assert!(out.json.is_object(), "{}\n{}", out.stdout, out.stderr);
    out.json
}

/// `report --run ID --history H -o dir/name`: the page.
fn report_of(h: &Path, id: &str, page: &Path) -> String {
    let o = tdsl(&["report", "--run", id, "--history", s(h), "-o", s(page)]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{}", o.stdout);
    std::fs::read_to_string(page).unwrap()
}

#[test]
fn a_compositions_report_draws_its_phases_above_the_plans_graph() {
    let dir = out_dir("composition");
    let h = dir.join("h.db");
    let result = compose_into(
        &h,
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_placeholder.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        &[],
    );
    assert_eq!(result["status"], "SUCCESS", "{result}");
    let id = result["composition_id"].as_str().unwrap();
    let page = dir.join("report.html");
    let html = report_of(&h, id, &page);
    // By the history's own id, the same page.
    assert_eq!(report_of(&h, "1", &dir.join("by-number.html")), html);
    // Phases, then the plan's graph, then the timeline.
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle} in the page"));
    assert!(at(r#"<h2>Phases</h2>"#) < at(r#"<svg id="phases""#));
    assert!(at(r#"<svg id="phases""#) < at(r#"<h2>Plan graph</h2>"#));
    assert!(at(r#"<h2>Plan graph</h2>"#) < at(r#"<svg id="graph""#));
    assert!(at(r#"<svg id="graph""#) < at(r#"<svg id="timeline""#));
    assert!(html.contains(r#"query: Which of our two documents can be read"#));
    // Each phase with its status, its duration and the tokens the provider reported.
    for phase in ["decompose", "plan", "execute", "synthesize"] {
        let usage = &result["usage"][phase];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        let node = format!(
            r#"data-step="{phase}" data-phase="{phase}" data-status="COMPLETED" data-duration-ms="{}" data-input-tokens="{}" data-output-tokens="{}""#,
            result["phase_durations"][phase],
            n("input_tokens"),
            n("output_tokens")
        );
        assert!(html.contains(&node), "{node}\n{html}");
    }
    assert!(result["usage"]["plan"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(html.contains("1 repair round · 2 requests"), "the plan's repair round");
    assert!(html.contains("2 steps · 2 completed"), "execute's steps");
    // The plan's graph by level (`info` after `check`), its nodes the steps under `execute`.
    assert!(html.contains(r#"<g class="node completed" data-step="execute/check" data-status="COMPLETED" tabindex="0"><title>check: COMPLETED</title><rect x="20""#), "{html}");
    assert!(html.contains(r#"<g class="node completed" data-step="execute/info" data-status="COMPLETED" tabindex="0"><title>info: COMPLETED</title><rect x="260""#), "{html}");
    assert!(html.contains(r#"<path class="edge" d="M200,"#), "an edge from check to info");
    // On the timeline the plan's steps run within `execute` (their times are the
    // composition's, not the plan run's own).
    let span_x = |lane: &str| -> u64 {
        let from = at(&format!(r#"<g class="lane completed" data-step="{lane}""#));
        let rest = &html[from..];
        let x = &rest[rest.find(r#"<rect class="span" x=""#).unwrap() + 22..];
        x[..x.find('"').unwrap()].parse().unwrap()
    };
    assert!(span_x("execute/check") >= span_x("execute"), "check starts in execute");
    assert!(span_x("execute/info") > span_x("plan"), "info starts after the plan phase");

    // In Chromium: the script ran, no errors, the first phase selected with its details.
    let (dom, stderr) = headless(&page, &dir.join("profile-dom"), &["--dump-dom"]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:?}", console_lines(&stderr));
    let root_tag = &dom[dom.find("<html").expect("an html element")..];
    let root_tag = &root_tag[..root_tag.find('>').unwrap_or(0)];
    assert!(root_tag.contains(r#"data-ready="1""#) && !root_tag.contains("data-errors"), "{root_tag}");
    assert!(dom.contains(r#"<h2 id="details-title">decompose — COMPLETED</h2>"#), "{dom}");
    assert!(dom.contains(r#"<g class="phase node completed selected" data-step="decompose""#), "{dom}");
    let shot = dir.join("report.png");
    let (_, stderr) = headless(&page, &dir.join("profile-shot"), &[&format!("--screenshot={}", s(&shot))]);
    assert!(console_lines(&stderr).is_empty(), "console messages: {:?}", console_lines(&stderr));
    assert!(shot.exists(), "a screenshot to look at");
}

#[test]
fn a_composition_whose_plan_never_checked_has_its_phases_and_no_graph() {
    let dir = out_dir("composition-failed");
    let h = dir.join("h.db");
    let result = compose_into(
        &h,
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_unknown_tool.json")),
            ("plan", Answer::File("plan_unknown_tool.json")),
            ("plan", Answer::File("plan_unmapped.json")),
        ],
        &["--repair-rounds", "2"],
    );
    assert_eq!(result["status"], "FAILED", "{result}");
    let id = result["composition_id"].as_str().unwrap();
    let html = report_of(&h, id, &dir.join("report.html"));
    assert!(html.contains(r#"data-phase="decompose" data-status="COMPLETED""#));
    assert!(html.contains(r#"data-phase="plan" data-status="FAILED""#));
    assert!(html.contains("2 repair rounds · 3 requests"), "the rounds it took");
    for phase in ["execute", "synthesize"] {
        assert!(
            html.contains(&format!(r#"<g class="phase node notrun" data-phase="{phase}" data-status="NOT STARTED">"#))
        );
    }
    assert!(html.contains(r#"id="no-plan">The plan never ran: the composition ended in its `plan` phase."#));
    assert!(!html.contains(r#"<svg id="graph""#));
}

#[test]
fn a_composition_killed_midway_is_in_the_history_interrupted_in_its_phase() {
    let dir = out_dir("composition-killed");
    let h = dir.join("h.db");
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::Slow(60_000, Box::new(Answer::File("plan_ok.json")))),
        ],
        Some(KEY),
    );
    let (r, base) = (root(), server.url(""));
    let mut child = compose_support::command(
        &query_args(&r, "anthropic:test-model", &base, &["--history", s(&h)]),
        "anthropic",
        KEY,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("tdsl starts");
    // Killed while the model is thinking about the plan: the history has the composition
    // `RUNNING`, in its `plan` phase, while it runs.
    let waited = std::time::Instant::now();
    loop {
        let listed = tdsl(&["history", "list", "--history", s(&h), "--format", "json"]);
        let runs: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap_or_default();
        if let Some(id) = runs[0]["run_id"].as_str() {
            assert_eq!(runs[0]["status"], "RUNNING", "{runs}");
            let shown = tdsl(&["history", "show", id, "--history", s(&h), "--format", "json"]);
            let run: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap_or_default();
            let steps = run["steps"].as_array().cloned().unwrap_or_default();
            if steps.iter().any(|s| s["path"] == "plan" && s["status"] == "RUNNING") {
                assert_eq!(steps[0]["status"], "COMPLETED", "{run}");
                assert_eq!(steps[0]["tool"], "anthropic:test-model", "{run}");
                break;
            }
        }
        assert!(waited.elapsed() < Duration::from_secs(60), "the plan phase never started: {}", listed.stdout);
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    let listed = tdsl(&["history", "list", "--history", s(&h), "--format", "json"]);
    let runs: serde_json::Value = serde_json::from_str(&listed.stdout).expect(&listed.stderr);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["tool"], "compose");
    assert_eq!(runs[0]["status"], "INTERRUPTED", "{runs}");
    let id = runs[0]["run_id"].as_str().unwrap();
    assert!(id.starts_with("comp_"), "{id}");
    let shown = tdsl(&["history", "show", id, "--history", s(&h), "--format", "json"]);
    let run: serde_json::Value = serde_json::from_str(&shown.stdout).expect(&shown.stderr);
    assert_eq!(run["arguments"]["query"], compose_support::QUERY);
    let steps: Vec<(String, String)> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap().to_string(), s["status"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        steps,
        [("decompose".to_string(), "COMPLETED".to_string()), ("plan".to_string(), "INTERRUPTED".to_string())],
        "{run}"
    );
    // No trace to draw: report says so and where to look.
    let o = tdsl(&["report", "--run", id, "--history", s(&h), "-o", s(&dir.join("r.html"))]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("has no trace: it is INTERRUPTED"), "{}", o.stderr);
    assert!(!shown.stdout.contains(KEY) && !listed.stdout.contains(KEY));
}

#[test]
fn a_composition_that_ended_before_its_first_phase_has_its_phases_not_started() {
    let trace = tdsl::Trace::from_json(
        r#"{"format": "tdsl-trace/2", "run_id": "comp_000000000001", "tool": "compose",
            "arguments": {"query": " ", "model": "openai:m"}, "status": "FAILED",
            "started_at": "2026-11-27T00:00:00.000Z", "ended_at": "2026-11-27T00:00:00.000Z",
            "duration_ms": 0, "total_retries": 0, "circuit_breaker_trips": 0, "max_in_flight": 1,
            "step_results": []}"#,
    )
    .unwrap();
    assert!(tdsl::testing::report::is_composition(&trace));
    let html = tdsl::testing::report::html(&trace, None);
    assert_eq!(html.matches(r#"data-status="NOT STARTED""#).count(), 4);
    assert!(html.contains("The plan never ran: the composition ended before its first phase."), "{html}");
}

// ---------------------------------------------------------------------------------------
// Hostile round (docs/compose.md, "Tried against the report"): a query of markup, a
// terminal's escape sequences and 100 KB; a composition killed in each phase.

/// A query no page or terminal should act on: markup that would end the page's script,
/// an event handler, a terminal's colour and title sequences, NUL, and 100 KB of text.
fn hostile_query() -> String {
    format!(
        "</script><script>alert(1)</script><img src=x onerror=alert(2)> \u{1b}[31mred\u{1b}]0;title\u{7} {}",
        "Q".repeat(100_000)
    )
}

#[test]
fn a_hostile_query_is_text_in_the_report() {
    let dir = out_dir("composition-hostile");
    let h = dir.join("h.db");
    let server = ModelServer::start(
        &[
            ("decompose", Answer::File("decompose_ok.json")),
            ("plan", Answer::File("plan_ok.json")),
            ("synthesize", Answer::File("synthesize_ok.json")),
        ],
        Some(KEY),
    );
    let (r, base, query) = (root(), server.url(""), hostile_query());
    let mut args = query_args(&r, "anthropic:test-model", &base, &["--history", s(&h)]);
    args[0] = &query;
    let out = tdsl_compose(&args, "anthropic", KEY);
    assert_eq!(out.json["status"], "SUCCESS", "{}\n{}", out.stdout, out.stderr);
    let id = out.json["composition_id"].as_str().unwrap();
    let html = report_of(&h, id, &dir.join("report.html"));
    // The page's own three scripts end where they should; the query's markup is text.
    assert_eq!(html.matches("</script>").count(), 3, "the query ended a script");
    assert!(!html.contains("<img src=x"), "the query's markup is in the page");
    assert!(html.contains("query: &lt;/script&gt;&lt;script&gt;alert(1)"), "the query as text");
    // No control character reaches the page: the escape sequences show as their pictures.
    assert!(!html.contains('\u{1b}') && !html.contains('\u{7}'), "a terminal's escape sequence in the page");
    assert!(html.contains("\u{241b}[31mred"), "ESC drawn as ␛");
    // The query is cut in the page (not 100 KB in one paragraph).
    let para = &html[html.find(r#"id="query""#).unwrap()..];
    let para = &para[..para.find("</p>").unwrap()];
    assert!(para.len() < 20_000, "the query's paragraph is {} bytes", para.len());
    // The history's text view of the run does not replay the sequences either.
    let shown = tdsl(&["history", "show", id, "--history", s(&h)]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(!shown.stdout.contains('\u{1b}'), "history show printed an escape sequence");
}

#[test]
fn a_composition_killed_in_any_phase_reads_interrupted_there() {
    let slow = |file: &'static str| Answer::Slow(60_000, Box::new(Answer::File(file)));
    let test_root = compose_support::data("root").display().to_string();
    type Script = Vec<(&'static str, Answer)>;
    let cases: [(&str, Script, String); 3] = [
        ("decompose", vec![("decompose", slow("decompose_ok.json"))], root()),
        (
            "execute",
            vec![("decompose", Answer::File("decompose_ok.json")), ("plan", Answer::File("plan_slow.json"))],
            test_root,
        ),
        (
            "synthesize",
            vec![
                ("decompose", Answer::File("decompose_ok.json")),
                ("plan", Answer::File("plan_ok.json")),
                ("synthesize", slow("synthesize_ok.json")),
            ],
            root(),
        ),
    ];
    for (phase, script, r) in cases {
        let dir = out_dir(&format!("composition-killed-in-{phase}"));
        let h = dir.join("h.db");
        let server = ModelServer::start(&script, Some(KEY));
        let (base, query) = (server.url(""), hostile_query());
        let mut args = query_args(&r, "anthropic:test-model", &base, &["--history", s(&h)]);
        args[0] = &query;
        let mut child = compose_support::command(&args, "anthropic", KEY)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tdsl starts");
        let waited = std::time::Instant::now();
        let id = loop {
            let shown = tdsl(&["history", "show", "1", "--history", s(&h), "--format", "json"]);
            let run: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap_or_default();
            let steps = run["steps"].as_array().cloned().unwrap_or_default();
            if steps.iter().any(|st| st["path"] == phase && st["status"] == "RUNNING") {
                break run["run_id"].as_str().unwrap().to_string();
            }
            assert!(waited.elapsed() < Duration::from_secs(60), "{phase} never started: {}", shown.stdout);
            std::thread::sleep(Duration::from_millis(100));
        };
        child.kill().expect("kill");
        child.wait().expect("wait");
        let shown = tdsl(&["history", "show", &id, "--history", s(&h), "--format", "json"]);
        let run: serde_json::Value = serde_json::from_str(&shown.stdout).expect(&shown.stderr);
        assert_eq!(run["status"], "INTERRUPTED", "{phase}: {run}");
        // The 100 KB query is past the history's payload bound (64 KiB): kept as its start,
        // its size and its hash (issue 38 item 2, docs/history.md).
        let cut = &run["arguments"]["$tdsl_cut"];
        let query_json = serde_json::to_string(&query).unwrap();
        assert!(cut["bytes"].as_u64().is_some_and(|n| n > query_json.len() as u64), "{phase}: the size: {cut}");
        let prefix = cut["prefix"].as_str().unwrap_or_default();
        let start = format!(r#"{{"query":{}"#, &query_json[..200]);
        assert!(prefix.starts_with(&start), "{phase}: the start of the query as given: {prefix}");
        let last = run["steps"].as_array().and_then(|a| a.last()).cloned().unwrap_or_default();
        assert_eq!((last["path"].as_str(), last["status"].as_str()), (Some(phase), Some("INTERRUPTED")), "{run}");
        let o = tdsl(&["report", "--run", &id, "--history", s(&h), "-o", s(&dir.join("r.html"))]);
        assert_eq!(o.code, 2, "{phase}: {}", o.stderr);
        assert!(o.stderr.contains("has no trace: it is INTERRUPTED"), "{phase}: {}", o.stderr);
        let text = tdsl(&["history", "show", &id, "--history", s(&h)]);
        assert!(!text.stdout.contains('\u{1b}'), "{phase}: history show printed an escape sequence");
    }
}

/// Hostile round: a 1 MB model name (a trace file says what it likes) is cut in the page as
/// the query is; it was embedded whole.
#[test]
fn a_huge_model_name_is_cut_in_the_page() {
    let trace = serde_json::json!({"format": "tdsl-trace/2", "run_id": "comp_000000000001", "tool": "compose",
        "arguments": {"query": "q", "model": format!("openai:{}\u{1b}[2J", "m".repeat(1 << 20))}, "status": "FAILED",
        "started_at": "2026-11-27T00:00:00.000Z", "ended_at": "2026-11-27T00:00:00.000Z",
        "duration_ms": 0, "total_retries": 0, "circuit_breaker_trips": 0, "max_in_flight": 1,
        "step_results": []});
    let trace = tdsl::Trace::from_json(&trace.to_string()).unwrap();
    let html = tdsl::testing::report::html(&trace, None);
    assert!(html.len() < 200_000, "the page is {} bytes", html.len());
    assert!(html.contains("query: q · model openai:mmm"), "the model's start is shown");
}

/// Hostile round 12 (finding 10): a trace and a report hold every payload of a run, so they
/// are created readable by their owner alone, as the history is — and a file written over
/// is made so — whatever the umask says.
#[cfg(unix)]
#[test]
fn traces_and_reports_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).expect("written").permissions().mode() & 0o777;
    let dir = out_dir("private");
    let trace = run_the_composite(&dir);
    assert_eq!(mode(&trace), 0o600, "the trace");
    let page = dir.join("report.html");
    std::fs::write(&page, "old").expect("write");
    std::fs::set_permissions(&page, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = tdsl(&["report", s(&trace), "-o", s(&page)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(mode(&page), 0o600, "the report");
    let replayed = dir.join("replayed.json");
    let o = tdsl(&["replay", s(&trace), "--root", ROOT, "--trace-out", s(&replayed)]);
    assert_eq!(mode(&replayed), 0o600, "the replay's trace: {}", o.stderr);
}
