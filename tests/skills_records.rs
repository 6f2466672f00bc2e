//! Outside round 11: what `serve --mcp --plans --skills` records of its skills. A
//! `save_skill` in flight when the server shuts down is answered, and the answer says what
//! the folder and the history hold (finding 3); a skill nesting deeper than 128 levels is
//! checked again when a tool it calls changes (finding 8). Each test starts the real binary.
#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::process::Process;
use serde_json::{json, Value};

/// `serve --mcp --plans --skills ROOT/skills --history HISTORY` with `extra` arguments.
fn serve(root: &Path, history: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
    cmd.args(["serve", "--mcp", "--plans", "--root"])
        .arg(root)
        .arg("--skills")
        .arg(root.join("skills"))
        .arg("--history")
        .arg(history)
        .args(extra);
    cmd
}

/// The runs of the history at `path`: (tool, status) each.
fn runs(path: &Path) -> Vec<(String, String)> {
    let out = common::tdsl(&["history", "list", "--history", path.to_str().expect("a path"), "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed: Value = serde_json::from_str(&out.stdout).expect("JSON");
    listed
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| (r["tool"].as_str().unwrap_or("").to_string(), r["status"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Eight `save_skill` calls (three names, each saved again with `replace`) sent at once, then
/// the server shut down (`sigterm`, or the end of its input): every call is answered, and
/// each answer is true to the folder — every version answered saved is there, nothing else
/// is, and the history records one `save_skill` run per save.
fn saves_then_shutdown(sigterm: bool) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("skills")).expect("the root");
    let history = dir.path().join("history.db");
    let (mut process, mut stdin, stdout) =
        Process::spawn_piped("tdsl serve --skills", &mut serve(&root, &history, &[]));
    let mut stdout = BufReader::new(stdout);
    let send = |stdin: &mut std::process::ChildStdin, m: Value| {
        writeln!(stdin, "{m}").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the handshake");
    assert!(line.contains("serverInfo"), "{line}");
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut early_answers = Vec::new();
    for i in 0..8u64 {
        let plan = json!({"instructions": [{"execution_id": "s", "transform_responses": {"variables": {},
            "transforms": {"x": format!("{i}")}}}], "response_reference_map": {"x": "REF:s.x"}});
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {"name": "save_skill",
            "arguments": {"name": format!("s{}", i % 3), "description": format!("save {i}"), "plan": plan,
                "replace": true}}}),
        );
    }
    if sigterm {
        // A request still unread when the signal comes is never seen: a `ping` answered
        // says the saves before it were read (their answers may come before it).
        send(&mut stdin, json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}));
        let mut early = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read") > 0, "the server ended");
            let m: Value = serde_json::from_str(&line).expect("JSON");
            if m["id"] == 99 {
                break;
            }
            early.push(m);
        }
        process.sigterm();
        early_answers = early;
    }
    // The end of its input (the client is done), or after the signal, its input all the same.
    drop(stdin);
    let mut answers = BTreeMap::new();
    let rest = stdout.lines().map(|line| serde_json::from_str::<Value>(&line.expect("a line")).expect("JSON"));
    for m in early_answers.into_iter().chain(rest) {
        if let Some(id) = m["id"].as_u64().filter(|id| *id >= 100) {
            answers.insert(id, m["result"].clone());
        }
    }
    let status = process.exit_within(Duration::from_secs(10));
    let output = process.output();
    assert!(status.success(), "{status:?}: {output}");
    assert_eq!(answers.len(), 8, "every save is answered: {answers:?}\n{output}");
    // What the answers say was saved, by name: the versions.
    let mut saved: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (id, result) in &answers {
        let s = &result["structuredContent"];
        if s["saved"] == true {
            let version = s["version"].as_u64().expect("a version");
            assert!(saved.entry(format!("s{}", (id - 100) % 3)).or_default().insert(version), "{answers:?}");
        } else {
            assert_eq!(s["code"], "E0813", "a save not carried out says it was stopped: {result}");
            assert_eq!(result["isError"], true, "{result}");
        }
    }
    // The folder holds exactly those versions.
    let mut on_disk: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for name in ["s0", "s1", "s2"] {
        let versions = root.join("skills/.versions").join(name);
        let count = std::fs::read_dir(&versions).map_or(0, Iterator::count) as u64;
        if count > 0 {
            on_disk.insert(name.to_string(), (1..=count).collect());
        }
        assert_eq!(root.join("skills").join(format!("{name}.tool")).exists(), count > 0, "{name}");
    }
    assert_eq!(saved, on_disk, "answered saved vs the folder's versions\n{output}");
    let recorded = runs(&history);
    let count: usize = saved.values().map(BTreeSet::len).sum();
    assert_eq!(recorded.len(), count, "{recorded:?}");
    assert!(recorded.iter().all(|(tool, status)| tool == "save_skill" && status == "SUCCESS"), "{recorded:?}");
}

/// Outside round 11 (finding 3): saves in flight when the input closes were carried out and
/// never answered (the server waited for ever to send `notifications/tools/list_changed`
/// first, then exited after its grace).
#[test]
fn saves_in_flight_at_the_end_of_input_are_answered_as_the_folder_says() {
    saves_then_shutdown(false);
}

/// The same on SIGTERM.
#[test]
fn saves_in_flight_at_sigterm_are_answered_as_the_folder_says() {
    saves_then_shutdown(true);
}

/// Starts the server with no client (its input at its end at once): what it said on its
/// standard error while loading the skills.
fn start_once(root: &Path, history: &Path) -> String {
    let mut process = Process::spawn("tdsl serve --skills", &mut serve(root, history, &["--max-plan-nesting", "150"]));
    let status = process.exit_within(Duration::from_secs(20));
    let output = process.output();
    assert!(status.success(), "{status:?}: {output}");
    output
}

/// Outside round 11 (finding 8): a skill whose plan nests past 128 levels (a plan may nest up
/// to `--max-plan-nesting`, 192 at most) had a record that covered none of the tools it calls
/// (their names were read by a reader that stops at 128): the skill stayed listed callable
/// when a tool it calls changed. Its callees are read as the plan's check reads them now.
#[test]
fn a_skill_nesting_past_128_levels_is_checked_again_when_its_callee_changes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("skills")).expect("the skills");
    std::fs::create_dir_all(root.join("tools")).expect("the tools");
    let history = dir.path().join("history.db");
    let callee = |n: &str| {
        json!({"description": "takes any x, answers n",
            "arguments": [{"name": n, "type_name": "integer", "required": true},
                          {"name": "x", "type_name": "any", "required": false}],
            "responses": [{"name": "n", "type_name": "integer", "required": true}],
            "system_event_endpoint": "builtin:echo"})
        .to_string()
    };
    std::fs::write(root.join("tools/deep.tool"), callee("n")).expect("the callee");
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    let skill = format!(
        r#"{{"description": "deep", "arguments": [{{"name": "n", "type_name": "integer", "required": true}}],
        "instructions": [{{"execution_id": "d", "tool_definition_path": "/tools/deep.tool",
            "arguments": {{"n": "REF:arguments.n", "x": {deep}}}}}],
        "response_reference_map": {{"n": "REF:d.n"}}}}"#
    );
    std::fs::write(root.join("skills/deep1.tool"), skill).expect("the skill");
    let first = start_once(&root, &history);
    assert!(first.contains("skills: 1 checked"), "{first}");
    assert!(!first.contains("not callable"), "{first}");
    assert!(root.join("skills/.checked/deep1").exists(), "the check is recorded\n{first}");
    // Its callee's argument `n` is renamed: the skill no longer checks.
    std::fs::write(root.join("tools/deep.tool"), callee("count")).expect("the callee");
    let second = start_once(&root, &history);
    assert!(second.contains("skill `deep1` is not callable"), "{second}");
    assert!(second.contains("skills: 1 checked, 0 unchanged"), "{second}");
}
