//! Upstream MCP servers of `tdsl serve --mcp --plans --upstream` that change under it
//! (issue 38, round 4, d): one slow to list its tools then fast (the remembered failure must
//! give way to the tools once it answers), and one whose tool list changes between
//! listings (a plan checked against the old list, then run). Each test starts the real
//! binary and a scripted upstream (Python's standard library only).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::mcp_stdio::{serve_upstreams, StdioClient};
use common::upstream::script;
use serde_json::{json, Value};

/// An upstream over stdio: its tools are the names in the file `$UP_TOOLS` (one a line),
/// read at each `tools/list`; its first `tools/list` is answered `$UP_SLOW_FIRST` seconds
/// late; with `$UP_NOTIFY` it sends `notifications/tools/list_changed` when the file
/// changes; a call of a tool not in the file is the error MCP servers answer.
const UPSTREAM: &str = r#"
def names():
    with open(os.environ["UP_TOOLS"]) as f:
        return [l.strip() for l in f if l.strip()]
def watch():
    last = names()
    while True:
        time.sleep(0.05)
        now = names()
        if now != last:
            last = now
            out({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
if os.environ.get("UP_NOTIFY"):
    threading.Thread(target=watch, daemon=True).start()
listed = 0
def listing(params):
    global listed
    listed += 1
    if listed == 1:
        time.sleep(float(os.environ.get("UP_SLOW_FIRST", "0")))
    return {"tools": [{"name": n, "description": "echoes x", "inputSchema": {"type": "object",
            "properties": {"x": {"type": "integer"}}}} for n in names()]}
def call(i, name, args):
    if name in names():
        answer(i, {"content": [{"type": "text", "text": json.dumps(args)}], "structuredContent": args})
    else:
        out({"jsonrpc": "2.0", "id": i, "error": {"code": -32602, "message": "Unknown tool: " + name}})
serve(listing, call, list_changed=True)
"#;

fn plan(tool: &str) -> Value {
    json!({"plan": {"instructions": [{"execution_id": "a", "tool_definition_path": tool, "arguments": {"x": 1}}],
        "response_reference_map": {"x": "REF:a.x"}}})
}

/// A plan of one call of `tool`, without arguments, retried once (0.1 s later).
fn retried_plan(tool: &str) -> Value {
    json!({"plan": {"instructions": [{"execution_id": "a", "tool_definition_path": tool, "arguments": {},
        "retry": {"max_retries": 1, "base_delay_seconds": 0.1}}], "response_reference_map": {"a": "REF:a"}}})
}

/// In `dir`: an empty tool root `root` and the scripted upstream `file` (`body`,
/// executable); their paths.
fn scripted(dir: &Path, file: &str, body: &str) -> (PathBuf, PathBuf) {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("the root");
    let upstream = dir.join(file);
    script(&upstream, body);
    (root, upstream)
}

/// `up=PATH`: the scripted upstream at `path` as `serve --upstream` names it.
fn up(path: &Path) -> String {
    format!("up={}", path.display())
}

/// `serve --mcp --plans` over stdio with the scripted upstream `up`, its tools in `tools`.
fn serve(dir: &Path, tools: &str, env: &[(&str, &str)], extra: &[&str]) -> StdioClient {
    let (root, upstream) = scripted(dir, "up.py", UPSTREAM);
    let listed = dir.join("tools.txt");
    std::fs::write(&listed, tools).expect("the tools file");
    let listed = listed.to_str().expect("a UTF-8 path");
    let env: Vec<(&str, &str)> = env.iter().copied().chain([("UP_TOOLS", listed)]).collect();
    serve_upstreams(&root, &[up(&upstream)], None, extra, &env)
}

/// The first listing outlives `--upstream-timeout` (1 s; the upstream answers it after
/// 3 s): the plan waiting for it is answered with the failure, and remembered with a
/// backoff; once the listing answers, plans run — without waiting for the backoff or the
/// timeout again.
#[test]
fn an_upstream_slow_to_list_then_fast_is_used_once_it_answers() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut client = serve(dir.path(), "alpha\n", &[("UP_SLOW_FIRST", "3")], &["--upstream-timeout", "1"]);
    let first = client.call("run_plan", plan("up/alpha"));
    assert_eq!(first["isError"], true, "{first}");
    let problems = first["structuredContent"]["upstream_problems"].to_string();
    assert!(problems.contains("no answer within 1 s"), "{first}");
    let started = Instant::now();
    let ran = loop {
        let r = client.call("run_plan", plan("up/alpha"));
        if r["structuredContent"]["result"] == json!({"x": 1}) {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "never recovered: {r}");
        let problems = r["structuredContent"]["upstream_problems"].to_string();
        assert!(problems.contains("in progress") || problems.contains("listed again"), "{r}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // The listing answered 3 s after it started (about 2 s after the first answer): the
    // plans ran from then, not after the 5 s backoff.
    assert!(ran < Duration::from_secs(5), "recovered only after {ran:?}");
    for _ in 0..3 {
        let r = client.call("run_plan", plan("up/alpha"));
        assert_eq!(r["structuredContent"]["result"], json!({"x": 1}), "{r}");
    }
}

/// The upstream's tools change between a plan's check and its run (`alpha` gone, `beta`
/// new), and it says so (`notifications/tools/list_changed`): the plan naming `alpha` is
/// refused when checked again, naming `beta` in the help, and a plan naming `beta` runs.
#[test]
fn an_upstream_whose_tools_change_is_listed_again() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut client = serve(dir.path(), "alpha\n", &[("UP_NOTIFY", "1")], &[]);
    let checked = client.call("check_plan", plan("up/alpha"));
    assert_eq!(checked["isError"], false, "{checked}");
    std::fs::write(dir.path().join("tools.txt"), "beta\n").expect("the tools changed");
    // The upstream notices within 50 ms and notifies.
    std::thread::sleep(Duration::from_millis(500));
    let run = client.call("run_plan", plan("up/alpha"));
    assert_eq!(run["isError"], true, "{run}");
    let text = run.to_string();
    assert!(text.contains("E1306") && text.contains("up/beta"), "the old tool, checked against the new list: {run}");
    let run = client.call("run_plan", plan("up/beta"));
    assert_eq!(run["structuredContent"]["result"], json!({"x": 1}), "the new tool: {run}");
}

/// The same change from an upstream that does not say so (no `list_changed`): tdsl keeps the
/// list it has (MCP's way to say a list changed is the notification; listing again before
/// each check would cost every plan a round trip), so the plan naming `alpha` passes the
/// check and its call is refused by the upstream — the step fails naming the tool and the
/// upstream's words, at once, and the server goes on.
#[test]
fn an_upstream_that_does_not_say_its_tools_changed_refuses_the_old_tool_itself() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut client = serve(dir.path(), "alpha\n", &[], &[]);
    let checked = client.call("check_plan", plan("up/alpha"));
    assert_eq!(checked["isError"], false, "{checked}");
    std::fs::write(dir.path().join("tools.txt"), "beta\n").expect("the tools changed");
    let run = client.call("run_plan", plan("up/alpha"));
    assert_eq!(run["isError"], true, "{run}");
    let summary = run["structuredContent"]["failure_summary"].as_str().unwrap_or_default();
    assert!(summary.contains("`up/alpha`") && summary.contains("Unknown tool: alpha"), "{run}");
    let checked = client.call("check_plan", plan("up/beta"));
    assert_eq!(checked["isError"], true, "not listed again unasked: {checked}");
    let r = client.request("ping", json!({}));
    assert!(r["result"].is_object(), "{r}");
}

/// Upstreams whose configuration carries a key, as real MCP set-ups do: an option of the
/// command line, a variable set with `env`, a URL's query, a URL's path. Each fails (the
/// program exits, nothing listens), and what the plan's client reads of it — the check's
/// note and `upstream_problems`, `tdsl://tools`, the `plan` prompt — names the upstream
/// and its program or origin, never the key (they once carried the whole command line or
/// URL). The client's own view is what a model reads; the operator has the flags.
#[test]
fn an_upstreams_command_line_or_url_never_reaches_the_client() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("the root");
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("addr").port();
    let cases = [
        ("/bin/false --api-key=sk-live-KEY1111111111", "false …"),
        ("env -i API_KEY=sk-live-KEY2222222222 /bin/false", "false …"),
        // Past an option of `env` that takes a value, the rest may be anything: `env …`.
        ("env -S '/bin/false --token sk-live-KEY5555555555'", "env …"),
        ("env -C /srv/sk-live-KEY6666666666 /bin/false", "env …"),
        ("/opt/sk-live-KEY7777777777/bin/false", "false"),
        (
            &*format!("http://127.0.0.1:{port}/mcp?api_key=sk-live-KEY3333333333"),
            &*format!("http://127.0.0.1:{port}/…"),
        ),
        (&*format!("http://127.0.0.1:{port}/mcp/sk-live-KEY4444444444/sse"), &*format!("http://127.0.0.1:{port}/…")),
    ];
    for (upstream, named) in cases {
        let mut client = serve_upstreams(&root, &[format!("up={upstream}")], None, &["--upstream-timeout", "5"], &[]);
        let checked = client.call("check_plan", plan("up/x"));
        let tools = client.request("resources/read", json!({"uri": "tdsl://tools"}));
        let prompt = client.request("prompts/get", json!({"name": "plan", "arguments": {"task": "anything"}}));
        for (what, answer) in [("check_plan", &checked), ("tdsl://tools", &tools), ("the plan prompt", &prompt)] {
            let text = answer.to_string();
            assert!(!text.contains("sk-live-KEY"), "{upstream}: {what} shows the key: {text}");
        }
        let note = checked.to_string();
        assert!(note.contains(&format!("the upstream server `up` ({named})")), "{upstream}: {note}");
    }
}

/// An upstream over stdio that pages its `tools/list`: `$UP_PAGES` pages of `$UP_PER_PAGE`
/// tools (`t0`, `t1`, …) with descriptions of `$UP_DESC` bytes, each page but the last
/// naming the next with `nextCursor` (`$UP_PAGES` of 0: for ever).
const PAGING: &str = r#"
pages, per, desc = int(os.environ["UP_PAGES"]), int(os.environ["UP_PER_PAGE"]), int(os.environ["UP_DESC"])
def listing(params):
    page = int(params.get("cursor") or 0)
    result = {"tools": [{"name": "t%d" % (page * per + k), "description": "d" * desc,
                         "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}
                        for k in range(per)]}
    if pages == 0 or page + 1 < pages:
        result["nextCursor"] = str(page + 1)
    return result
def call(i, name, args):
    answer(i, {"content": [{"type": "text", "text": "{}"}], "structuredContent": args})
serve(listing, call)
"#;

/// A listing follows `nextCursor` within bounds: three pages are read whole (a tool of the
/// last page is callable); a server that pages for ever is abandoned after 1,000 pages, and
/// one whose pages add up to more than 16 MiB (the bound of one message, which paging would
/// get around) once it passes that — each failing the listing with a message that says
/// which, where it once grew the server for as long as the listing's 30 s timeout allowed
/// (2.75 GB).
#[test]
fn a_paged_listing_is_read_within_its_bounds() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (root, upstream) = scripted(dir.path(), "paging.py", PAGING);
    let serve = |pages: &str, per: &str, desc: &str| {
        let env = [("UP_PAGES", pages), ("UP_PER_PAGE", per), ("UP_DESC", desc)];
        // Room for a loaded 2-core machine (a whole suite and a build beside it took this
        // test past 20 s once); the message says which bound ended the listing, not the timeout.
        serve_upstreams(&root, &[up(&upstream)], None, &["--upstream-timeout", "60"], &env)
    };
    let mut client = serve("3", "2", "10");
    let r = client.call("run_plan", plan("up/t5"));
    assert_eq!(r["structuredContent"]["result"], json!({"x": 1}), "{r}");
    drop(client);
    for (pages, per, desc, says) in
        [("0", "1", "10", "went on past 1000 pages"), ("0", "500", "1000", "listed more than 16 MiB of tools")]
    {
        let mut client = serve(pages, per, desc);
        let started = Instant::now();
        let r = client.call("check_plan", plan("up/t0"));
        let problems = r["structuredContent"]["upstream_problems"].to_string();
        assert!(problems.contains(says), "{pages} pages of {per}: {r}");
        assert!(started.elapsed() < Duration::from_secs(50), "took {:?}", started.elapsed());
    }
}

/// An upstream over stdio listing `$UP_TOOLS` tools whose input and output schemas are a
/// `$defs` bomb: 15 levels, each object's `a` and `b` the next level (3 KB; resolved, 2^15
/// nodes cut at the bound of one resolution, 20,000). With `$UP_DISTINCT` each tool's
/// schema differs (a description naming it), so that no two resolve alike.
const BOMB: &str = r##"
count, distinct = int(os.environ["UP_TOOLS"]), bool(os.environ.get("UP_DISTINCT"))
def schema(i):
    defs = {"d%d" % l: {"type": "object", "properties": {"a": {"$ref": "#/$defs/d%d" % (l + 1)},
            "b": {"$ref": "#/$defs/d%d" % (l + 1)}}} for l in range(15)}
    defs["d15"] = {"type": "string", "description": "tool %d" % i if distinct else "leaf"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
serve([{"name": "b%d" % i, "description": "bomb", "inputSchema": schema(i), "outputSchema": schema(i)}
       for i in range(count)])
"##;

/// Hostile round 7: an upstream tool whose schemas are a `$defs` bomb (within the documented
/// bounds of one resolution). A check of 64 steps calling it answered 33 MB — each step's
/// result type shown whole, 520 KB — after 23 s of work in a release build, from a 4.8 KB
/// plan; and the schemas were resolved again three times a step. Now the result type is
/// shown cut (at most 4,000 characters, then `…`), the schemas are resolved once, and
/// `tdsl://tools` is made once a listing: 20 tools with schemas that all differ, read three
/// times, the same text each time.
#[test]
fn an_upstream_schema_bomb_costs_a_check_little_and_its_answer_is_small() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (root, upstream) = scripted(dir.path(), "bomb.py", BOMB);
    let serve = |tools: &str, distinct: bool| {
        // The script reads an empty `UP_DISTINCT` as unset.
        let env = [("UP_TOOLS", tools), ("UP_DISTINCT", if distinct { "1" } else { "" })];
        serve_upstreams(&root, &[up(&upstream)], None, &[], &env)
    };
    let mut client = serve("1", false);
    let steps: Vec<Value> = (0..64)
        .map(|k| json!({"execution_id": format!("a{k}"), "tool_definition_path": "up/b0", "arguments": {}}))
        .collect();
    let r = client.call("check_plan", json!({"plan": {"instructions": steps}}));
    let answer = r.to_string();
    assert!(answer.len() < 64 * 1024, "an answer of {} bytes", answer.len());
    let shown = r["structuredContent"]["result_type"].as_str().unwrap_or_else(|| panic!("a result type: {r}"));
    assert!(shown.starts_with("object{a0: object{x: object{a: ") && shown.ends_with('…'), "{shown:.200}");
    assert_eq!(shown.chars().count(), 4_001);
    drop(client);
    let mut client = serve("20", true);
    let mut first = None;
    for _ in 0..3 {
        let r = client.request("resources/read", json!({"uri": "tdsl://tools"}));
        let text = r["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("a text: {r}")).to_string();
        assert!(text.contains("`up/b19("), "{text:.300}");
        assert_eq!(first.get_or_insert_with(|| text.clone()), &text, "the same listing each time");
    }
}

/// An upstream over stdio whose tool `boom` writes `sk-secret-<its first argument>` on its
/// standard error and dies; started with `deaf`, it writes `sk-secret-deaf` and dies before
/// the handshake (its listing fails). Given a second argument, a marker file, it serves
/// once: started again (the marker there), it dies before the handshake too.
const SECRETIVE: &str = r#"
tag = sys.argv[1] if len(sys.argv) > 1 else "none"
marker = sys.argv[2] if len(sys.argv) > 2 else None
def die():
    sys.stderr.write("starting with API_KEY=sk-secret-%s\n" % tag); sys.stderr.flush()
    time.sleep(0.3)
    os._exit(3)
if tag == "deaf" or (marker and os.path.exists(marker)):
    die()
if marker:
    open(marker, "w").close()
serve([{"name": "boom", "inputSchema": {"type": "object"}}], lambda i, name, args: die())
"#;

/// What an upstream (or an `mcp:` server) last wrote on its standard error may hold anything
/// of how the operator started it — here a key. It once ended the message of every failed
/// call, so a plan's client read it in `run_plan`'s answer, the step's retry notification
/// and the history; and a served tool's client in its error. Now it is the error's own
/// field: `serve` writes it on its standard error, and no answer, notification, listing or
/// history row holds it — while each still says what failed.
#[test]
fn an_upstreams_standard_error_reaches_serves_log_but_no_client_nor_the_history() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (root, up) = scripted(dir.path(), "secretive.py", SECRETIVE);
    let up = up.display();
    std::fs::write(
        root.join("boom.tool"),
        json!({"arguments": [], "system_event_endpoint": format!("mcp:'{up}' served#boom")}).to_string(),
    )
    .expect("the served tool");
    let history = dir.path().join("history.db");
    let upstreams = [format!("up='{up}' upstream"), format!("deaf='{up}' deaf")];
    let mut client = serve_upstreams(&root, &upstreams, Some(&history), &["--upstream-timeout", "10"], &[]);
    client.request("logging/setLevel", json!({"level": "debug"}));
    let mut seen = Vec::new();
    // An upstream's call, an `mcp:` tool's from a plan and called directly: each fails
    // saying so, without the server's last words.
    for (answer, says) in [
        // An upstream's tool is named by the upstream's name, as the plan names it.
        (
            client.call("run_plan", retried_plan("up/boom")),
            "the MCP tool `boom` of the upstream server `up` (secretive.py …) failed",
        ),
        (client.call("run_plan", retried_plan("boom")), "the MCP tool `boom` of secretive.py … failed"),
        (client.call("boom", json!({})), "the MCP tool `boom` of secretive.py … failed"),
        (client.call("check_plan", retried_plan("deaf/boom")), "the upstream server `deaf` (secretive.py …)"),
    ] {
        assert_eq!(answer["isError"], true, "{answer}");
        assert!(answer.to_string().contains(says), "{answer}");
        seen.push(answer.to_string());
    }
    seen.push(client.request("resources/read", json!({"uri": "tdsl://tools"})).to_string());
    let retried = client.notes.iter().map(Value::to_string).filter(|n| n.contains("\"retried\"")).count();
    assert!(retried > 0, "no retry was told: {:?}", client.notes);
    seen.extend(client.notes.iter().map(Value::to_string));
    let leaked = |seen: &[String]| {
        for text in seen {
            assert!(
                !text.contains("sk-secret-"),
                "an upstream's standard error reached a client or the history: {text}"
            );
        }
    };
    leaked(&seen);
    // The operator reads each one on `serve`'s standard error.
    for tag in ["upstream", "served", "deaf"] {
        client.process.wait_for_line(&format!("sk-secret-{tag}"), Duration::from_secs(20), |l| {
            (l.starts_with("tdsl: ")
                && l.contains(&format!("its standard error ends: starting with API_KEY=sk-secret-{tag}")))
            .then_some(())
        });
    }
    drop(client);
    for entry in std::fs::read_dir(dir.path()).expect("the folder").flatten() {
        if entry.path().to_string_lossy().contains("history.db") {
            seen.push(String::from_utf8_lossy(&std::fs::read(entry.path()).expect("read")).into_owned());
        }
    }
    let history = history.to_str().expect("path");
    let listed = common::tdsl(&["history", "list", "--history", history, "--format", "json"]);
    assert!(listed.stdout.contains("run_plan") && listed.stdout.contains("FAILED"), "{}", listed.stdout);
    seen.push(listed.stdout);
    leaked(&seen);
}

/// A server that cannot be started again, after its call ended it: the retry's failed
/// start names an upstream as plans do (`the upstream server \`up\` (once.py …)`) — several
/// upstreams may run one program — and an `mcp:` tool's server by its program, as before.
#[test]
fn a_failed_start_names_an_upstream_by_its_name() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (root, once) = scripted(dir.path(), "once.py", SECRETIVE);
    let once = once.display();
    let marker = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(
        root.join("boom.tool"),
        json!({"arguments": [], "system_event_endpoint": format!("mcp:'{once}' served '{}'#boom", marker("served"))})
            .to_string(),
    )
    .expect("the served tool");
    let upstreams = [format!("up='{once}' upstream '{}'", marker("upstream"))];
    let mut client = serve_upstreams(&root, &upstreams, None, &["--upstream-timeout", "10"], &[]);
    for (tool, says) in [
        ("up/boom", "the upstream server `up` (once.py …) failed the handshake"),
        ("boom", "the MCP server once.py … failed the handshake"),
    ] {
        let answer = client.call("run_plan", retried_plan(tool));
        assert_eq!(answer["isError"], true, "{answer}");
        assert!(answer.to_string().contains(says), "{tool}: {answer}");
    }
}

/// An upstream whose tools say whether they are safe to call twice (MCP annotations), and
/// that writes each call it reads to `$UP_LOG` (one tool name a line) before it answers:
/// `refund` (destructive) and `lookup` (read-only) sleep `seconds` — `lookup` on its first
/// call only —, `crash` ends the server, `fence` answers at once. Its `$UP_DEAF_START`-th
/// start (counted in `$UP_LOG.starts`) exits before the handshake.
const HINTED: &str = r#"
log_path = os.environ["UP_LOG"]
with open(log_path + ".starts", "a") as f:
    f.write("start\n")
with open(log_path + ".starts") as f:
    if len(f.readlines()) == int(os.environ.get("UP_DEAF_START", "0")):
        sys.exit(3)
def calls(name):
    with open(log_path) as f:
        return [l.strip() for l in f].count(name)
arg = {"type": "object", "properties": {"seconds": {"type": "number"}}}
tools = [
    {"name": "refund", "inputSchema": arg,
     "annotations": {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True}},
    {"name": "lookup", "inputSchema": arg, "annotations": {"readOnlyHint": True}},
    {"name": "crash", "inputSchema": arg, "annotations": {"destructiveHint": True}},
    {"name": "fence", "inputSchema": arg},
]
def call(i, name, args):
    with open(log_path, "a") as f:
        f.write(name + "\n")
    if name == "crash":
        os._exit(1)
    if name == "refund" or (name == "lookup" and calls("lookup") == 1):
        time.sleep(float(args.get("seconds", 0)))
    answer(i, {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"done": name}})
serve(tools, call, name="hinted")
"#;

/// A plan of one call of `tool` sleeping `seconds`, its attempts bounded to 1 s, with the
/// step's own `retry` when given.
fn slow_plan(tool: &str, seconds: f64, retry: Option<Value>) -> Value {
    let mut step = json!({"execution_id": "a", "tool_definition_path": tool, "arguments": {"seconds": seconds},
        "timeout_seconds": 1});
    if let Some(r) = retry {
        step["retry"] = r;
    }
    json!({"plan": {"instructions": [step], "response_reference_map": {"a": "REF:a"}}})
}

/// Finding 8 of round 10: a timed-out call of a tool that is not known to be safe to call
/// twice is not sent again unless the step asks (`retry`); a read-only one is retried as
/// before; a failure before the call was sent (the server's start failed) is retried
/// whatever the tool. Counted by the calls the upstream read, not by timing.
#[test]
fn a_timed_out_call_is_sent_again_only_to_a_tool_safe_to_repeat_or_when_the_step_asks() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (root, upstream) = scripted(dir.path(), "hinted.py", HINTED);
    let log = dir.path().join("calls.log");
    std::fs::write(&log, "").expect("the log");
    let log_env = log.to_str().expect("a UTF-8 path");
    let env = [("UP_LOG", log_env), ("UP_DEAF_START", "2")];
    let mut client = serve_upstreams(&root, &[up(&upstream)], None, &[], &env);
    // The calls the upstream read so far, by tool, once it has read every call sent before.
    let reached = |client: &mut StdioClient, tool: &str| {
        // With a generous bound: the fence may start the server, slow on a loaded machine.
        let mut fence = slow_plan("up/fence", 0.0, None);
        fence["plan"]["instructions"][0]["timeout_seconds"] = json!(30);
        let fenced = client.call("run_plan", fence);
        assert_eq!(fenced["structuredContent"]["status"], "SUCCESS", "{fenced}");
        std::fs::read_to_string(&log).expect("the log").lines().filter(|l| *l == tool).count()
    };

    let refund = client.call("run_plan", slow_plan("up/refund", 1.5, None));
    assert_eq!(refund["structuredContent"]["status"], "TIMEOUT", "{refund}");
    assert!(refund.to_string().contains("not retried: `up/refund` is not marked read-only or idempotent"), "{refund}");
    assert_eq!(reached(&mut client, "refund"), 1, "a destructive tool timing out is called once");

    let asked = client
        .call("run_plan", slow_plan("up/refund", 1.5, Some(json!({"max_retries": 1, "base_delay_seconds": 0.1}))));
    assert_eq!(asked["structuredContent"]["status"], "TIMEOUT", "{asked}");
    assert_eq!(reached(&mut client, "refund"), 3, "the step's own `retry` is honoured: two more calls");

    let lookup = client.call("run_plan", slow_plan("up/lookup", 1.5, None));
    assert_eq!(lookup["structuredContent"]["status"], "SUCCESS", "{lookup}");
    assert_eq!(reached(&mut client, "lookup"), 2, "a read-only tool is retried by default");

    // The server dies in a call (not retried: it may have acted); its next start fails
    // before the call is sent, which is retried, and the third start takes the call.
    let crash = client.call("run_plan", slow_plan("up/crash", 0.0, None));
    assert_eq!(crash["isError"], true, "{crash}");
    // No wait for the client to see the server's end: the failed call dropped (or marked
    // for a ping) the connection it failed on. The attempt's bound is generous here: it
    // covers two starts of the server (the failed one and the one that takes the call),
    // slow on a loaded machine.
    let mut plan = slow_plan("up/refund", 0.0, None);
    plan["plan"]["instructions"][0]["timeout_seconds"] = json!(30);
    let again = client.call("run_plan", plan);
    assert_eq!(again["structuredContent"]["status"], "SUCCESS", "{again}");
    assert_eq!(reached(&mut client, "crash"), 1);
    assert_eq!(reached(&mut client, "refund"), 4, "{again}");
    let starts = std::fs::read_to_string(dir.path().join("calls.log.starts")).expect("the starts");
    assert_eq!(starts.lines().count(), 3, "{again}");
}
