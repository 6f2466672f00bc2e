//! Skills (`tdsl serve --mcp --plans --skills DIR`, SPEC §16, `docs/plans.md` "Skills"),
//! driven by the official Python SDK's client (`tests/mcp_py/skills.py`), and the command
//! line around them.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tdsl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tdsl"))
}

/// A copy of `tests/data/mcp/tools` under a fresh root (the skills are written next to it).
fn root_with_tools(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("root");
    let status = Command::new("cp").arg("-R").arg(repo().join("tests/data/mcp/tools")).arg(root.join("tools")).status();
    assert!(status.is_ok_and(|s| s.success()), "cannot copy the tools");
    root
}

/// `text` with every run of white space one space: miette wraps long lines.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn tdsl_out(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(tdsl()).args(args).env("NO_COLOR", "1").output().expect("tdsl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An MCP client saves a plan, sees the tool appear in the same session (after
/// `notifications/tools/list_changed`), calls it and calls it from a second plan, restarts the
/// server and calls it again; the refusals (names, a plan with an error, a second save
/// without `replace`, a skill calling itself), versions, `tdsl://skills`, a skill broken at
/// start, delete. Then the history shows every save and delete, with the client's name.
#[test]
fn a_client_saves_a_skill_and_calls_it_after_a_restart() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let history = work.path().join("history.db");
    let mut cmd = Command::new(common::python::python());
    cmd.arg(repo().join("tests/mcp_py/skills.py")).arg("session").arg(tdsl()).arg(&root).arg(&history);
    let mut process = common::process::Process::spawn("skills.py session", &mut cmd);
    let status = process.exit_within(std::time::Duration::from_secs(240));
    assert!(status.success(), "skills.py session failed ({status}):\n{}", process.output());

    // The skill file is an ordinary composite `.tool` file: `tdsl check` accepts it. (The
    // session deleted it at its end; its last version is kept, and is the same text.)
    let versions = root.join("skills/.versions/pause_twice");
    let mut kept: Vec<PathBuf> =
        std::fs::read_dir(&versions).expect("versions").filter_map(Result::ok).map(|e| e.path()).collect();
    kept.sort();
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(!root.join("skills/pause_twice.tool").exists());
    let file = work.path().join("pause_twice.tool");
    std::fs::copy(&kept[2], &file).expect("copy");
    let (code, out, err) = tdsl_out(&["check", file.to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "tdsl check of the skill file:\n{out}{err}");
    let text = std::fs::read_to_string(&file).expect("the skill file");
    assert!(text.contains("\"tool_definition_path\": \"/tools/pause.tool\""), "{text}");
    assert!(text.contains("\"description\": \"Adds one to n\""), "{text}");

    // Every save and delete is in the history, with who made it.
    let db = history.to_str().expect("utf-8");
    let (code, out, err) = tdsl_out(&["history", "list", "--history", db, "--format", "json", "--tool", "*_skill"]);
    assert_eq!(code, 0, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).expect("json");
    let tools: Vec<&str> = runs.as_array().expect("runs").iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(tools.iter().filter(|t| **t == "save_skill").count(), 5, "{out}");
    assert_eq!(tools.iter().filter(|t| **t == "delete_skill").count(), 2, "{out}");
    assert!(out.contains("\"client\"") && out.contains("\"skill\""), "who and which skill: {out}");
    // A run of a skill is recorded under its name and version.
    let (code, out, err) = tdsl_out(&["history", "list", "--history", db, "--tool", "pause_twice*"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pause_twice (skill v1)") && out.contains("pause_twice (skill v2)"), "{out}");
    // …and the report of such a run names the skill and its version.
    let (code, out, err) =
        tdsl_out(&["history", "list", "--history", db, "--format", "json", "--tool", "pause_twice*"]);
    assert_eq!(code, 0, "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).expect("json");
    let id = runs.as_array().expect("runs").iter().find(|r| r["tool"] == "pause_twice (skill v2)").expect("a v2 run")
        ["id"]
        .to_string();
    let page = work.path().join("report.html");
    let (code, _, err) = tdsl_out(&["report", "--run", &id, "--history", db, "-o", page.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).expect("the report");
    assert!(html.contains("pause_twice (skill v2)"), "the report does not name the skill");
}

/// `--skills` needs a folder under the root, and `--max-skills` is in its range.
#[test]
fn the_skills_folder_and_limit_are_checked_before_serving() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let outside = work.path().join("elsewhere");
    let r = root.to_str().expect("utf-8");
    let (code, _, err) = tdsl_out(&[
        "serve",
        "--mcp",
        "--plans",
        "--no-history",
        "--root",
        r,
        "--skills",
        outside.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must be under the tool root"), "{err}");
    let inside = root.join("skills");
    let s = inside.to_str().expect("utf-8");
    let (code, _, err) =
        tdsl_out(&["serve", "--mcp", "--plans", "--no-history", "--root", r, "--skills", s, "--max-skills", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-skills 0"), "{err}");
    let (code, _, err) = tdsl_out(&["serve", "--mcp", "--root", r, "--skills", s]);
    assert_eq!(code, 2, "--skills needs --plans: {err}");
}

/// `check --plan --upstream`: a plan or skill file that calls an upstream server's tools
/// checks outside the server too (SPEC §16); without `--upstream` its tool is unknown.
#[test]
fn check_plan_takes_upstream_servers() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let plan = work.path().join("skill.tool");
    let write = |tool: &str| {
        let text = format!(
            r#"{{"description": "calls up", "instructions": [
                {{"execution_id": "a", "tool_definition_path": "{tool}", "arguments": {{"n": 1}}}}],
                "response_reference_map": {{"n": "REF:a.n"}}}}"#
        );
        std::fs::write(&plan, text).expect("write");
    };
    let upstream = format!(
        "up='{}' serve --mcp --no-history --root '{}'",
        tdsl().display(),
        repo().join("tests/data/mcp").display()
    );
    let args = |with_upstream: bool| -> (i32, String, String) {
        let mut a = vec!["check", "--plan", plan.to_str().expect("utf-8"), "--root", root.to_str().expect("utf-8")];
        if with_upstream {
            a.extend(["--upstream", upstream.as_str()]);
        }
        tdsl_out(&a)
    };
    write("up/pause");
    let (code, out, err) = args(true);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = args(false);
    assert_eq!(code, 1, "without --upstream: {err}");
    assert!(err.contains("E1306"), "{err}");
    // Without `--plan` the file is checked as a `.tool` file, against the same upstream.
    let r = root.to_str().expect("utf-8");
    let (code, _, err) =
        tdsl_out(&["check", "--root", r, "--upstream", upstream.as_str(), plan.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    write("up/pasue");
    let (code, _, err) = args(true);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E1306") && err.contains("up/pause"), "the nearest name: {err}");
}

/// `--upstream` of `shop`, the pydantic FastMCP server of `tests/mcp_py/shop.py`.
fn shop() -> String {
    format!("shop='{}' '{}'", common::python::python().display(), repo().join("tests/mcp_py/shop.py").display())
}

/// A plan over the upstream `shop`: the ids of a customer's shipped orders.
fn shipped_orders_plan() -> serde_json::Value {
    serde_json::json!({
        "arguments": [{"name": "customer_id", "type_name": "string", "required": true}],
        "instructions": [{
            "execution_id": "orders",
            "tool_definition_path": "shop/list_orders",
            "arguments": {"customer_id": "REF:arguments.customer_id", "status": "shipped"},
            "transform_responses": {"variables": {"found": "REF:response.result"},
                                    "transforms": {"ids": "map(array=found, template=\"item.order_id\")"}}
        }],
        "responses": [{"name": "ids", "type_name": "list", "required": true}],
        "response_reference_map": {"ids": "REF:orders.ids"}
    })
}

/// Issue 40, item 3: a skill the server saved that calls an upstream server's tool
/// (`shop/list_orders` of the pydantic FastMCP `tests/mcp_py/shop.py`) is an ordinary `.tool`
/// file: `tdsl check --upstream` checks it against the tool's schemas (a misspelt argument, a
/// misspelt tool are errors), `tdsl run --upstream` runs it; without `--upstream` both say
/// which flag is missing, and an upstream that cannot be reached is `E0903` with its reason,
/// soon (never a hang).
#[test]
fn a_skill_over_an_upstream_checks_and_runs_outside_the_server() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let r = root.to_str().expect("utf-8");
    let skills = root.join("skills");
    let shop = shop();

    // Saved through the server, as a client saves it.
    let mut server = common::mcp_stdio::StdioClient::start(Command::new(tdsl()).args([
        "serve",
        "--mcp",
        "--plans",
        "--no-history",
        "--root",
        r,
        "--skills",
        skills.to_str().expect("utf-8"),
        "--upstream",
        &shop,
    ]));
    let saved = server.call(
        "save_skill",
        serde_json::json!({"name": "shipped_orders", "description": "The ids of a customer's shipped orders",
                           "plan": shipped_orders_plan()}),
    );
    assert_eq!(saved["isError"], false, "{saved}");
    // A skill named as an upstream tool would be called by a plan that names that tool
    // without its server: refused.
    let shadow = server.call(
        "save_skill",
        serde_json::json!({"name": "list_orders", "description": "Shadows", "plan": shipped_orders_plan()}),
    );
    assert_eq!(shadow["structuredContent"]["code"], "E1403", "{shadow}");
    assert!(
        shadow["structuredContent"]["message"].as_str().unwrap_or_default().contains("`shop/list_orders`"),
        "{shadow}"
    );
    let called = server.call("shipped_orders", serde_json::json!({"customer_id": "c-1"}));
    assert_eq!(called["structuredContent"]["ids"], serde_json::json!(["o-2"]), "{called}");
    // A later plan that calls the skill: the skill's upstream tool is resolved (and its
    // server listed) for the plan too.
    let caller = serde_json::json!({"instructions": [
        {"execution_id": "s", "tool_definition_path": "shipped_orders", "arguments": {"customer_id": "c-1"}}],
        "response_reference_map": {"ids": "REF:s.ids"}});
    let ran = server.call("run_plan", serde_json::json!({"plan": caller}));
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["structuredContent"]["result"]["ids"], serde_json::json!(["o-2"]), "{ran}");
    drop(server);
    let file = skills.join("shipped_orders.tool");
    let f = file.to_str().expect("utf-8");
    let text = std::fs::read_to_string(&file).expect("the skill's file");
    assert!(text.contains("\"tool_definition_path\": \"shop/list_orders\""), "{text}");

    // `tdsl check --upstream`: against the schemas `shop` lists.
    let (code, out, err) = tdsl_out(&["check", "--root", r, "--upstream", &shop, f]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("checked 1 file: 0 errors, 0 warnings"), "{err}");
    // Without it, the help names the flag.
    let (code, _, err) = tdsl_out(&["check", "--root", r, f]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E0601") && flat(&err).contains("pass `--upstream shop=COMMAND|URL`"), "{err}");
    // A misspelt argument of the upstream tool, a misspelt tool.
    let misspelt = work.path().join("misspelt.tool");
    let m = misspelt.to_str().expect("utf-8");
    std::fs::write(&misspelt, text.replace("\"customer_id\": \"REF:", "\"customr_id\": \"REF:")).expect("write");
    let (code, _, err) = tdsl_out(&["check", "--root", r, "--upstream", &shop, m]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E0611") && err.contains("customr_id"), "{err}");
    assert!(err.contains("E0612") && err.contains("customer_id"), "the required argument: {err}");
    std::fs::write(&misspelt, text.replace("shop/list_orders", "shop/list_ordrs")).expect("write");
    let (code, _, err) = tdsl_out(&["check", "--root", r, "--upstream", &shop, m]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E0901") && flat(&err).contains("did you mean `shop/list_orders`?"), "{err}");
    // A misspelt field of its result, in a template: a warning (`--deny-warnings` fails it).
    std::fs::write(&misspelt, text.replace("item.order_id", "item.ordr_id")).expect("write");
    let (code, _, err) = tdsl_out(&["check", "--root", r, "--upstream", &shop, "--deny-warnings", m]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("W0102") && flat(&err).contains("did you mean `order_id`?"), "{err}");

    // `tdsl run --upstream`: the skill runs outside the server, with the same result.
    let trace = work.path().join("trace.json");
    let t = trace.to_str().expect("utf-8");
    let (code, out, err) = tdsl_out(&[
        "run",
        "--no-history",
        "--root",
        r,
        "--upstream",
        &shop,
        f,
        "--arg",
        "customer_id=\"c-1\"",
        "--trace",
        t,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let result: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(result, serde_json::json!({"ids": ["o-2"]}), "{out}");
    // Its replay needs the schema (the run filled in `limit`'s default), not the calls.
    let (code, _, err) = tdsl_out(&["replay", t, "--root", r, "--upstream", &shop]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("replay matches the recording"), "{err}");
    let (code, _, err) = tdsl_out(&["replay", t, "--root", r]);
    assert_eq!(code, 1, "{err}");
    assert!(flat(&err).contains("replay with the run's --upstream"), "{err}");
    let (code, _, err) = tdsl_out(&["run", "--no-history", "--root", r, f, "--arg", "customer_id=\"c-1\""]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`shop/list_orders` does not resolve") && err.contains("--upstream shop="), "{err}");

    // An upstream that cannot be reached: E0903 with its reason, at once or within
    // `--upstream-timeout`, from `check` and from `run` alike.
    let closed = format!("shop=http://127.0.0.1:{}/mcp", common::process::free_port());
    for (upstream, extra) in [
        ("shop=/nonexistent/upstream-server".to_string(), vec![]),
        (closed, vec![]),
        ("shop=sleep 60".to_string(), vec!["--upstream-timeout", "1"]),
    ] {
        for command in ["check", "run"] {
            let started = std::time::Instant::now();
            let mut args = vec![command, "--root", r, "--upstream", &upstream];
            args.extend(&extra);
            if command == "run" {
                args.extend(["--no-history", "--arg", "customer_id=\"c-1\""]);
            }
            args.push(f);
            let (code, _, err) = tdsl_out(&args);
            let err = flat(&err);
            assert_eq!(code, 1, "{command} {upstream}: {err}");
            assert!(
                err.contains("E0903")
                    && err.contains("`shop/list_orders` cannot be checked: the upstream server `shop`"),
                "{command} {upstream}: {err}"
            );
            assert!(err.contains("check `--upstream shop=…`"), "the help: {err}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{command} {upstream} took {:?}",
                started.elapsed()
            );
        }
    }
}

/// The effective user id, from `id -u`.
fn euid() -> u32 {
    let out = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a user id")
}

/// A skills folder the server cannot write: `save_skill` is `E1405` with the system's reason,
/// nothing is written and no tool appears. Run as root (CI), root would write the folder
/// whatever its mode: the server then runs as `nobody` (`setpriv`), and the test fails,
/// saying why, when that cannot be arranged — it never passes without checking.
#[test]
fn a_read_only_skills_folder_refuses_saves() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().expect("tempdir");
    // Readable by another user: the server may run as `nobody`.
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let root = root_with_tools(work.path());
    let skills = root.join("skills");
    std::fs::create_dir(&skills).expect("the skills folder");
    std::fs::set_permissions(&skills, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // As root: as `nobody`, with no supplementary group.
    let as_nobody = euid() == 0;
    let command = |program: &Path| -> Command {
        if as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    };
    // The folder must be unwritable to the user the server runs as: tried first.
    let probe = command(Path::new("sh"))
        .arg("-c")
        .arg("echo x > \"$1\"/.probe")
        .arg("sh")
        .arg(&skills)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the probe{}: {e}", if as_nobody { " with setpriv" } else { "" }));
    assert!(
        !probe.status.success(),
        "cannot arrange a skills folder the server cannot write: {} wrote into it{}",
        if as_nobody { "`nobody` (setpriv)" } else { "this user" },
        if as_nobody { "" } else { " despite mode 0555" }
    );
    let stderr = String::from_utf8_lossy(&probe.stderr);
    assert!(stderr.contains("Permission denied"), "the probe failed for another reason: {stderr}");

    // The server's binary must be one `nobody` can run: under a private folder (a checkout in
    // /root) it is not, and a copy in the (readable) work folder is run instead.
    let runs = |binary: &Path| command(binary).arg("--version").output().is_ok_and(|o| o.status.success());
    let binary = if runs(tdsl()) {
        tdsl().to_path_buf()
    } else {
        let copy = work.path().join("tdsl");
        if std::fs::hard_link(tdsl(), &copy).is_err() {
            std::fs::copy(tdsl(), &copy).expect("a copy of tdsl");
        }
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(runs(&copy), "cannot run {} as the server's user, even copied to {}", tdsl().display(), copy.display());
        copy
    };
    let mut cmd = command(&binary);
    cmd.args(["serve", "--mcp", "--plans", "--no-history", "--root"]).arg(&root).arg("--skills").arg(&skills);
    let mut server = common::mcp_stdio::StdioClient::start(&mut cmd);
    let plan = serde_json::json!({"instructions": [
        {"execution_id": "a", "tool_definition_path": "pause", "arguments": {"n": 1}}],
        "response_reference_map": {"n": "REF:a.n"}});
    let r = server.call("save_skill", serde_json::json!({"name": "once", "description": "Pauses once", "plan": plan}));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["code"], "E1405", "{r}");
    let message = r["structuredContent"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Permission denied") && message.contains("nothing was changed"), "{r}");
    let listed = server.request("tools/list", serde_json::json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"once"), "{names:?}");
    drop(server);
    let left: Vec<_> =
        std::fs::read_dir(&skills).expect("the folder").filter_map(Result::ok).map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "nothing is written: {left:?}");
}

/// Issue 40's hostile round: a skill whose upstream tool's schema changed since it was saved
/// is not callable after the next start (listed with the error) and fails `tdsl check
/// --upstream`; a skill whose upstream server is down at start stays callable, unchecked
/// (`tdsl://skills` says why), and a call checks it first and answers with the reason.
#[test]
fn a_skill_whose_upstream_changed_or_is_down_at_start() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let r = root.to_str().expect("utf-8");
    let skills = root.join("skills");
    std::fs::create_dir(&skills).expect("skills");
    let plan = shipped_orders_plan();
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "description": "The ids of a customer's shipped orders",
        "arguments": plan["arguments"], "instructions": plan["instructions"],
        "responses": plan["responses"], "response_reference_map": plan["response_reference_map"]}))
    .expect("JSON");
    let file = skills.join("shipped_orders.tool");
    std::fs::write(&file, text).expect("the skill, as a save writes it");

    // `shop` now: its `list_orders` takes `customer`, not `customer_id` (a tdsl server).
    let changed = work.path().join("changed");
    std::fs::create_dir_all(changed.join("tools")).expect("dir");
    std::fs::write(
        changed.join("tools/list_orders.tool"),
        r#"{"description": "Orders", "arguments": [{"name": "customer", "type_name": "string", "required": true},
            {"name": "status", "type_name": "string"}],
            "responses": [{"name": "result", "type_name": "list"}], "system_event_endpoint": "builtin:echo"}"#,
    )
    .expect("write");
    let shop_changed = format!("shop='{}' serve --mcp --no-history --root '{}'", tdsl().display(), changed.display());
    let (code, _, err) = tdsl_out(&["check", "--root", r, "--upstream", &shop_changed, file.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("E0611") && err.contains("customer_id") && err.contains("E0612"), "{err}");
    let serve = |upstream: &str| {
        common::mcp_stdio::StdioClient::start(Command::new(tdsl()).args([
            "serve",
            "--mcp",
            "--plans",
            "--no-history",
            "--root",
            r,
            "--skills",
            skills.to_str().expect("utf-8"),
            "--upstream",
            upstream,
            "--upstream-timeout",
            "5",
        ]))
    };
    let names = |server: &mut common::mcp_stdio::StdioClient| -> Vec<String> {
        let listed = server.request("tools/list", serde_json::json!({}));
        listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };
    let skill_entry = |server: &mut common::mcp_stdio::StdioClient| -> serde_json::Value {
        let read = server.request("resources/read", serde_json::json!({"uri": "tdsl://skills"}));
        let text = read["result"]["contents"][0]["text"].as_str().expect("text").to_string();
        let all: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        all["skills"][0].clone()
    };

    let mut server = serve(&shop_changed);
    assert!(!names(&mut server).contains(&"shipped_orders".to_string()), "a broken skill is not listed");
    let entry = skill_entry(&mut server);
    assert_eq!(entry["callable"], false, "{entry}");
    assert!(entry["error"].as_str().unwrap_or_default().contains("customer_id"), "{entry}");
    drop(server);

    // Down at start: callable, unchecked; a call checks it and says why it cannot run.
    let mut server = serve("shop=/nonexistent/upstream-server");
    assert!(names(&mut server).contains(&"shipped_orders".to_string()), "an unchecked skill stays listed");
    let entry = skill_entry(&mut server);
    assert_eq!(entry["callable"], true, "{entry}");
    // The upstream named by its program's file name: its path is the operator's, not the
    // client's (docs/security.md, "How an upstream is named to a client").
    let unchecked = entry["unchecked"].as_str().unwrap_or_default();
    assert!(unchecked.contains("the upstream server `shop` (upstream-server)"), "{entry}");
    assert!(!unchecked.contains("/nonexistent"), "{entry}");
    let tools = server.request("resources/read", serde_json::json!({"uri": "tdsl://tools"}));
    let listing = tools["result"]["contents"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(listing.contains("(not checked now, checked when called: "), "{listing}");
    let called = server.call("shipped_orders", serde_json::json!({"customer_id": "c-1"}));
    assert_eq!(called["isError"], true, "{called}");
    let said = called["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        said.contains("was not run")
            && said.contains("cannot start the MCP server upstream-server")
            && !said.contains("/nonexistent"),
        "{called}"
    );
    let stderr = server.process.output();
    assert!(stderr.contains("skill `shipped_orders` is not checked"), "{stderr}");
}

/// An upstream named like a folder of the root (`--upstream tools=…`) does not take over the
/// root's files: `tools/pause.tool`, which that server does not offer, is still the file,
/// while `tools/pause` is the server's tool.
#[test]
fn an_upstream_named_like_a_folder_leaves_its_files_alone() {
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let r = root.to_str().expect("utf-8");
    let upstream = format!(
        "tools='{}' serve --mcp --no-history --root '{}'",
        tdsl().display(),
        repo().join("tests/data/mcp").display()
    );
    let file = work.path().join("both.tool");
    std::fs::write(
        &file,
        r#"{"description": "both", "instructions": [
            {"execution_id": "a", "tool_definition_path": "tools/pause.tool", "arguments": {"n": 1}},
            {"execution_id": "b", "tool_definition_path": "tools/pause", "arguments": {"n": "REF:a.n"}}],
            "response_reference_map": {"n": "REF:b.n"}}"#,
    )
    .expect("write");
    let f = file.to_str().expect("utf-8");
    let (code, out, err) = tdsl_out(&["check", "--root", r, "--upstream", &upstream, f]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = tdsl_out(&["run", "--no-history", "--root", r, "--upstream", &upstream, f]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).expect("JSON"), serde_json::json!({"n": 3}), "{out}");
}

/// `--upstream` and its options on `check`, `run` and `replay` are read as `serve` reads them:
/// a malformed one is a usage error (exit 2) naming the flag, before anything starts.
#[test]
fn upstream_flags_are_checked_before_anything_runs() {
    let work = tempfile::tempdir().expect("tempdir");
    let file = work.path().join("t.tool");
    std::fs::write(
        &file,
        r#"{"description": "t", "instructions": [{"execution_id": "a", "tool_definition_path": "up/x"}]}"#,
    )
    .expect("write");
    let f = file.to_str().expect("utf-8");
    for command in ["check", "run", "replay"] {
        for (flags, said) in [
            (vec!["--upstream", "up"], "write NAME=COMMAND or NAME=URL"),
            (vec!["--upstream", "a/b=x"], "must be 1 to 64"),
            (vec!["--upstream", "up=x", "--upstream", "up=y"], "two upstream servers are named `up`"),
            (vec!["--upstream", "up=x", "--upstream-timeout", "0"], "--upstream-timeout 0"),
            (vec!["--upstream", "up=x", "--upstream-timeout", "301"], "--upstream-timeout 301"),
            (vec!["--upstream", "up=x", "--upstream-token", "other=f"], "no --upstream named `other`"),
            (vec!["--upstream", "up=x", "--upstream-token", "up=f"], "started as a command"),
        ] {
            let mut args = vec![command, f];
            args.extend(&flags);
            let (code, _, err) = tdsl_out(&args);
            assert_eq!(code, 2, "{command} {flags:?}: {err}");
            assert!(err.contains(said), "{command} {flags:?}: {err}");
        }
    }
}

/// Hostile round 11b (finding 4): a skill is checked when it is saved, and at a later start
/// only when its file, or a file its check reads (a tool it calls), changed since: a skill
/// whose check is slow does not hold every start's `initialize`. Changed, it is checked
/// again; the tool it calls gone, it is not callable, its file unchanged.
#[test]
fn an_unchanged_skill_is_not_checked_again_at_start() {
    use common::mcp_stdio::{serve_upstreams, StdioClient};
    use serde_json::json;
    let work = tempfile::tempdir().expect("tempdir");
    let root = root_with_tools(work.path());
    let skills = root.join("skills");
    let extra = ["--skills", skills.to_str().expect("utf-8")];
    let start = || serve_upstreams(&root, &[], None, &extra, &[]);
    let note = |client: &StdioClient| {
        client.process.wait_for_line("the note on the skills", std::time::Duration::from_secs(30), |l| {
            l.strip_prefix("tdsl: skills: ").map(str::to_string)
        })
    };
    let plan = json!({"arguments": [{"name": "text", "type_name": "string", "required": true}],
        "instructions": [{"execution_id": "a", "tool_definition_path": "echo", "arguments": {"text": "REF:arguments.text"}}],
        "response_reference_map": {"text": "REF:a.text"}});
    let mut client = start();
    let saved = client.call("save_skill", json!({"name": "say", "description": "Says it", "plan": plan}));
    assert_eq!(saved["structuredContent"]["saved"], true, "{saved}");
    drop(client);

    let mut client = start();
    assert_eq!(note(&client), "0 checked, 1 unchanged since their last check");
    let said = client.call("say", json!({"text": "hi"}));
    assert_eq!(said["structuredContent"]["text"], "hi", "{said}");
    drop(client);

    // Its file changed (by hand): checked again, and recorded again.
    let file = skills.join("say.tool");
    let text = std::fs::read_to_string(&file).expect("the skill");
    std::fs::write(&file, format!("{text}\n")).expect("the skill");
    let client = start();
    assert_eq!(note(&client), "1 checked, 0 unchanged since their last check");
    drop(client);
    let client = start();
    assert_eq!(note(&client), "0 checked, 1 unchanged since their last check");
    drop(client);

    // The tool it calls is gone: checked, and not callable.
    std::fs::remove_file(root.join("tools/echo.tool")).expect("remove");
    let mut client = start();
    assert_eq!(note(&client), "1 checked, 0 unchanged since their last check");
    let said = client.request("tools/call", json!({"name": "say", "arguments": {"text": "hi"}}));
    assert!(said["error"]["message"].as_str().is_some_and(|m| m.contains("no tool named `say`")), "{said}");
    let output = client.process.output();
    assert!(output.contains("warning: skill `say` is not callable"), "{output}");
}
