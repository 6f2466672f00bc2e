//! Outside round 11: what `serve --mcp --plans --skills` records of its skills. A
//! `save_skill` in flight when the server shuts down is answered, and the answer says what
//! the folder and the history hold (finding 3); a skill nesting deeper than 128 levels is
//! checked again when a tool it calls changes (finding 8). Each test starts the real binary.
#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::mcp_stdio::{serve_command, serve_upstreams};
use common::process::Process;
use serde_json::json;

/// The skills folder of `root` (`ROOT/skills`), for `--skills`.
fn skills(root: &Path) -> String {
    root.join("skills").to_str().expect("a UTF-8 path").to_string()
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
    let mut client = serve_upstreams(&root, &[], Some(&history), &["--skills", &skills(&root)], &[]);
    // The request id of each save: which of the eight it is.
    let mut saves = BTreeMap::new();
    for i in 0..8u64 {
        let plan = json!({"instructions": [{"execution_id": "s", "transform_responses": {"variables": {},
            "transforms": {"x": format!("{i}")}}}], "response_reference_map": {"x": "REF:s.x"}});
        let id = client.start_request(
            "tools/call",
            json!({"name": "save_skill", "arguments": {"name": format!("s{}", i % 3),
                "description": format!("save {i}"), "plan": plan, "replace": true}}),
        );
        saves.insert(id, i);
    }
    if sigterm {
        // A request still unread when the signal comes is never seen: a `ping` answered
        // says the saves before it were read (their answers may come before it).
        client.request("ping", json!({}));
        client.process.sigterm();
    }
    // The end of its input (the client is done), or after the signal, its input all the same.
    let ended = client.finish(Duration::from_secs(10));
    let mut answers = BTreeMap::new();
    for m in ended.messages {
        if let Some(i) = m["id"].as_u64().and_then(|id| saves.get(&id)) {
            answers.insert(*i, m["result"].clone());
        }
    }
    let output = ended.output;
    assert!(ended.status.success(), "{:?}: {output}", ended.status);
    assert_eq!(answers.len(), 8, "every save is answered: {answers:?}\n{output}");
    // What the answers say was saved, by name: the versions.
    let mut saved: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (i, result) in &answers {
        let s = &result["structuredContent"];
        if s["saved"] == true {
            let version = s["version"].as_u64().expect("a version");
            assert!(saved.entry(format!("s{}", i % 3)).or_default().insert(version), "{answers:?}");
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
    let recorded = common::runs(&history);
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
    let extra = ["--skills", &skills(root), "--max-plan-nesting", "150"];
    let mut process = Process::spawn("tdsl serve --skills", &mut serve_command(root, Some(history), &extra));
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
