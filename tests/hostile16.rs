//! Hostile round 16 (docs/security.md, "Hostile round 16"): the requests outside
//! `--max-calls` whose answers cost to make, sent in a burst.
#![cfg(unix)]

mod common;

use common::mcp_stdio::{serve_upstreams, StdioClient};
use common::process::{peak_kib, script};
use common::upstream::MANY_TOOLS;
use serde_json::json;

/// `serve --mcp --plans` over stdio in a root of its own, fronting [`MANY_TOOLS`] as `up`.
fn serve_many_tools() -> (tempfile::TempDir, StdioClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let upstream = dir.path().join("many.py");
    script(&upstream, MANY_TOOLS);
    let client = serve_upstreams(&root, &[format!("up={}", upstream.display())], None, &[], &[]);
    (dir, client)
}

/// Reads the answers to `ids`, in any order: how many were whole `tdsl://tools` listings
/// (of more than 8 MB), and the first that was not.
fn read_listings(client: &mut StdioClient, ids: Vec<u64>) -> (usize, Option<String>) {
    let mut left: std::collections::BTreeSet<u64> = ids.into_iter().collect();
    let (mut whole, mut other) = (0, None);
    let mut judge = |answer: &serde_json::Value| {
        let text = answer["result"]["contents"][0]["text"].as_str().unwrap_or_default();
        if text.len() > 8_000_000 && text.starts_with("# Tools a plan may call") {
            whole += 1;
        } else if other.is_none() {
            other = Some(format!("{:.600}", answer.to_string()));
        }
    };
    while let Some(&id) = left.iter().next() {
        let answer = client.answer_or_end(id);
        let Some(answer) = answer else { panic!("read {id} is not answered:\n{}", client.process.output()) };
        judge(&answer);
        left.remove(&id);
        // Those read while waiting for `id`.
        for note in client.notes.drain(..) {
            if let Some(other) = note["id"].as_u64().filter(|o| left.contains(o)) {
                judge(&note);
                left.remove(&other);
            }
        }
    }
    (whole, other)
}

/// Requests outside `--max-calls` were answered as they arrived, each on a thread of its
/// own: 40 `resources/read` of a 9 MB `tdsl://tools` sent at once, before the upstream was
/// first listed, waited for the listing together and then made their 40 answers at once —
/// the peak grew by 640 MB (a client reading every answer), of which the listing itself is
/// about 125 MB. Now two answers are made at a time, and one made waits to be held while
/// 32 MiB of those made are not yet written: the client gets all 40, whole, and the peak
/// grows by the listing and a few answers (the bound, 300 MB: the listing, the budget and
/// four answers being made or written, with room; half of what it grew by before).
#[test]
fn a_burst_of_large_resource_reads_is_made_a_few_at_a_time() {
    let (_dir, mut client) = serve_many_tools();
    let pid = client.process.pid();
    let before = peak_kib(pid);
    let ids: Vec<u64> =
        (0..40).map(|_| client.start_request("resources/read", json!({"uri": "tdsl://tools"}))).collect();
    let (whole, other) = read_listings(&mut client, ids);
    let grown = peak_kib(pid).saturating_sub(before);
    assert_eq!(whole, 40, "every read gets the whole listing; not: {other:?}");
    assert!(grown < 300 * 1024, "serve's peak grew by {grown} KiB for 40 reads");
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
}

/// The same for `prompts/get` of `plan`, whose message holds the listing: 40 at once.
#[test]
fn a_burst_of_large_prompts_is_made_a_few_at_a_time() {
    let (_dir, mut client) = serve_many_tools();
    let pid = client.process.pid();
    let before = peak_kib(pid);
    let ids: Vec<u64> = (0..40)
        .map(|_| client.start_request("prompts/get", json!({"name": "plan", "arguments": {"task": "list"}})))
        .collect();
    let mut left: std::collections::BTreeSet<u64> = ids.into_iter().collect();
    let mut whole = 0;
    while let Some(&id) = left.iter().next() {
        let Some(answer) = client.answer_or_end(id) else { panic!("{}", client.process.output()) };
        let mut answers = vec![answer];
        answers.extend(client.notes.drain(..).filter(|n| n["id"].as_u64().is_some_and(|o| left.contains(&o))));
        for a in answers {
            let text = a["result"]["messages"][0]["content"]["text"].as_str().unwrap_or_default();
            assert!(text.len() > 8_000_000 && text.contains("Task: list"), "{:.600}", a.to_string());
            whole += 1;
            left.remove(&a["id"].as_u64().unwrap_or_default());
        }
    }
    let grown = peak_kib(pid).saturating_sub(before);
    assert_eq!(whole, 40);
    assert!(grown < 300 * 1024, "serve's peak grew by {grown} KiB for 40 prompts");
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
}

/// `serve --mcp --plans --listen` in a root of its own, fronting [`MANY_TOOLS`] as `up`,
/// with `extra` arguments.
fn listen_with_many_tools(extra: &[&str]) -> (tempfile::TempDir, common::http_raw::Http) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("root");
    let upstream = dir.path().join("many.py");
    script(&upstream, MANY_TOOLS);
    let up = format!("up={}", upstream.display());
    let mut args = vec!["--upstream", up.as_str()];
    args.extend_from_slice(extra);
    let http = common::http_raw::Http::start(&root, &args);
    (dir, http)
}

/// Over `--listen` the same: each read a POST of its own, on a connection of its own, the
/// 40 at once (unique ids in one session) once the upstream has been listed. They were made
/// at once too: the peak grew by about 410 MB. Now by a few answers (the bound, 150 MB, is
/// the budget and four answers, with room).
#[test]
fn over_http_a_burst_of_large_resource_reads_is_made_a_few_at_a_time() {
    let (_dir, http) = listen_with_many_tools(&[]);
    let session = http.session();
    let read =
        |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": "tdsl://tools"}});
    // Listed once first (the listing's own cost is not measured).
    let (status, _, body) = http.post(Some(&session), read(2).to_string().as_bytes());
    assert_eq!(status, 200, "{:.600}", body);
    let pid = http.process.pid();
    let before = peak_kib(pid);
    let streams: Vec<_> = (0..40u64)
        .map(|k| {
            let body = read(100 + k).to_string();
            http.send(Some(&session), body.len(), body.as_bytes())
        })
        .collect();
    let readers: Vec<_> =
        streams.into_iter().map(|s| std::thread::spawn(move || common::http_raw::answer(s))).collect();
    for reader in readers {
        let (status, _, body) = reader.join().expect("reader");
        assert_eq!(status, 200, "{:.600}", body);
        let message = common::http_raw::message(&body);
        let text = message["result"]["contents"][0]["text"].as_str().unwrap_or_default();
        assert!(text.len() > 8_000_000 && text.starts_with("# Tools a plan may call"), "{:.600}", body);
    }
    let grown = peak_kib(pid).saturating_sub(before);
    assert!(grown < 150 * 1024, "serve's peak grew by {grown} KiB for 40 reads over HTTP");
}

/// A skills folder under a root of its own holding `count` skills over `builtin:echo`, each
/// described in `description` bytes (as `save_skill` writes them).
fn root_with_skills(count: usize, description: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("tools")).expect("tools");
    std::fs::create_dir_all(root.join("skills")).expect("skills");
    std::fs::write(
        root.join("tools/echo.tool"),
        r#"{"description": "echoes", "arguments": [{"name": "i", "type_name": "any"}], "system_event_endpoint": "builtin:echo"}"#,
    )
    .expect("echo.tool");
    for k in 0..count {
        let skill = json!({"description": "d".repeat(description),
            "instructions": [{"execution_id": "a", "tool_definition_path": "/tools/echo.tool", "arguments": {"i": 1}}],
            "responses": [{"name": "n", "type_name": "object", "required": true}],
            "response_reference_map": {"n": "REF:a"}});
        std::fs::write(root.join(format!("skills/s{k}.tool")), skill.to_string()).expect("skill");
    }
    (dir, root)
}

/// Each `save_skill` (and `delete_skill`) loads and checks every skill of the folder again,
/// on a thread of its own, and nothing bounded how many did so at once (they hold no slot
/// of `--max-calls`): over 256 skills of 250 KB, 40 saves sent at once (10 MB) held 8.9 GB.
/// One change is carried out at a time now, all sessions together; the others wait their
/// turn. Here 64 skills of 250 KB and 16 saves at once: the peak grew by about 900 MB
/// before; now by one loading of the set (the bound, 300 MB, is several of them, a third
/// of before), and every save is answered saved.
#[test]
fn saves_of_skills_sent_at_once_are_carried_out_one_at_a_time() {
    let (_dir, root) = root_with_skills(64, 250_000);
    let skills = root.join("skills");
    let skills = skills.to_str().expect("utf-8");
    let mut client = serve_upstreams(&root, &[], None, &["--skills", skills], &[]);
    let pid = client.process.pid();
    let before = peak_kib(pid);
    let plan = json!({"instructions": [{"execution_id": "a", "tool_definition_path": "echo", "arguments": {"i": 1}}],
        "response_reference_map": {"n": "REF:a"}});
    let ids: Vec<u64> = (0..16)
        .map(|k| {
            client.start_request(
                "tools/call",
                json!({"name": "save_skill", "arguments": {"name": format!("s{k}"), "description": "e".repeat(250_000),
                    "plan": plan, "replace": true}}),
            )
        })
        .collect();
    // Answered in any order: those read while waiting for another are in `notes`.
    let mut left: std::collections::BTreeSet<u64> = ids.into_iter().collect();
    while let Some(&id) = left.iter().next() {
        let answer = client.answer_or_end(id).unwrap_or_else(|| panic!("{}", client.process.output()));
        let mut answers = vec![answer];
        answers.extend(client.notes.drain(..).filter(|n| n["id"].as_u64().is_some_and(|o| left.contains(&o))));
        for a in answers {
            assert_eq!(a["result"]["structuredContent"]["saved"], true, "{:.600}", a.to_string());
            left.remove(&a["id"].as_u64().unwrap_or_default());
        }
    }
    let grown = peak_kib(pid).saturating_sub(before);
    assert!(grown < 300 * 1024, "serve's peak grew by {grown} KiB for 16 saves");
    let finished = client.finish(std::time::Duration::from_secs(60));
    assert!(finished.status.success(), "{}", finished.output);
}

/// The budget of answers made and not yet written is shared by every session: a client
/// that leaves its large reads unread holds it until `--read-timeout` closes its
/// connections, and the reads of others wait behind its own (docs/security.md, "Hostile
/// round 16", Left: 27 s behind 4 such reads, 87 s behind 10). The guide is the binary's
/// own 16 KB, with nothing to make: it is answered at once all the same, where it waited
/// its turn behind them (until the first client's connections were closed, 60 s here).
/// The bound on its wait, 30 s, is half the read timeout.
#[test]
fn the_guide_does_not_wait_behind_a_client_that_reads_nothing() {
    let (_dir, http) = listen_with_many_tools(&["--read-timeout", "60"]);
    let (hog, other) = (http.session(), http.session());
    let read =
        |id: u64, uri: &str| json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}});
    let (status, _, body) = http.post(Some(&hog), read(2, "tdsl://tools").to_string().as_bytes());
    assert_eq!(status, 200, "{:.600}", body);
    // Six reads of the 9 MB listing, never read: three fill the budget, the others wait.
    let _unread: Vec<_> = (0..6u64)
        .map(|k| {
            let body = read(10 + k, "tdsl://tools").to_string();
            http.send(Some(&hog), body.len(), body.as_bytes())
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let body = read(3, "tdsl://guide").to_string();
    let asked = std::time::Instant::now();
    let (status, _, text) = common::http_raw::answer(http.send(Some(&other), body.len(), body.as_bytes()));
    let waited = asked.elapsed();
    assert_eq!(status, 200, "{:.600}", text);
    assert!(text.contains("Writing a tdsl plan"), "{:.600}", text);
    // Not a measure of speed: behind the first client's reads it came after they were
    // closed (56.9 s); at once, it comes in a second or two.
    assert!(waited < std::time::Duration::from_secs(30), "the guide was answered after {waited:?}");
}
