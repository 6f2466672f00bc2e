//! Plans versus direct tool calling (issue 29, SPEC §13): the tokens that enter a model's
//! context, and the model round trips, when a task is done
//!
//! - **directly**, as an MCP client does it: the model sees every served tool's definition
//!   (the `tools/list` JSON of `tdsl serve --mcp`), then makes one tool call per round trip,
//!   and each call and its result enter the context; or
//! - **with one plan**, as `tdsl serve --mcp --plans` offers it: the model sees the plan
//!   tools `check_plan` and `run_plan` as the server lists them (the condensed guide is
//!   run_plan's description) and the tools a plan may call — either the whole `tools/list`
//!   of `--plans` (the default) or the compact `tdsl://tools` listing —, writes one plan that
//!   names the tools by their served names, and only run_plan's answer comes back.
//!
//! Nothing in either transcript is invented or copied: the tool definitions, the listing and
//! the guide come from the library's server ([`McpServer::with_plans`], [`PlanServer`]). The
//! direct transcript is made by a scripted client that calls the tools through tdsl's own MCP
//! server ([`McpServer::call`], the `tools/call` result a real client gets). The plan runs
//! with the plan core ([`PlanDesk::run`], what `run_plan` does; its `to_json()` is run_plan's
//! answer), and its trace's calls must be the direct client's calls, with the same responses
//! ([`Measured::check`]). Both must give the same final answer.
//!
//! What is counted is in `README` form in `results.md` and docs/performance.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value as Json};
use tdsl::testing::host::HostRunner;
use tdsl::testing::exec::Outcome;
use tdsl::testing::mcp::plans::{answer_text, PlanOptions, PlanServer, RUN_PLAN, TOOLS_URI};
use tdsl::testing::mcp::upstream::Upstreams;
use tdsl::testing::mcp::McpServer;
use tdsl::testing::plans::{Callable, PlanLimits, PlanDesk, RunPlanOptions};

mod tasks;
pub mod upstream;
pub use tasks::{tasks, Task};
pub use upstream::{upstream_tasks, Upstream};

/// The crate's directory: the tool root (`/tools/…`), `plans/`, `data/`.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tokenizer: o200k_base, a real BPE vocabulary.
pub struct Tokens(tiktoken_rs::CoreBPE);

impl Tokens {
    pub fn o200k() -> Result<Tokens, String> {
        tiktoken_rs::o200k_base().map(Tokens).map_err(|e| format!("o200k_base: {e}"))
    }

    /// Tokens of `text` (ordinary text: special-token markers are not special).
    pub fn count(&self, text: &str) -> usize {
        self.0.encode_ordinary(text).len()
    }
}

/// What the model's context holds before the task in the plan way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanContext {
    /// The whole `tools/list` of `serve --mcp --plans`: the served tools and the two plan
    /// tools. What every MCP client gets from the server, hence the default.
    FullList,
    /// Only the two plan tools' definitions and the `tdsl://tools` listing (what the guide
    /// tells a model to read): a client that hides the served tools from the model.
    Compact,
}

/// What the benchmark runs against: the tools under the crate's `tools/`, served.
pub struct Bench {
    pub root: PathBuf,
    /// `tdsl serve --mcp`: the direct way's server.
    pub server: McpServer,
    /// `tdsl serve --mcp --plans` over the same tools.
    pub plan_server: McpServer,
    /// The plan core as `serve --mcp --plans` makes it: the served tools by their names.
    pub plans: PlanDesk,
}

impl Bench {
    /// The bench over `crate_dir()`.
    pub fn new() -> Result<Bench, String> {
        Bench::over(crate_dir())
    }

    /// The bench over the tools under `root`.
    pub fn over(root: PathBuf) -> Result<Bench, String> {
        let (server, skipped) = McpServer::load(&root, &[])?;
        if !skipped.is_empty() {
            return Err(format!("tools that do not load: {}", skipped.join("; ")));
        }
        let options = PlanOptions { limits: PlanLimits::default(), files: None };
        let plan_server = server.for_session().with_plans(options, Arc::new(Upstreams::new(Vec::new())));
        let served = server
            .tools()
            .iter()
            .map(|s| Callable { name: s.name.clone(), tool_path: Some(s.tool_path.clone()) })
            .collect();
        let plans = PlanDesk::with_served(&root, served);
        Ok(Bench { root, server, plan_server, plans })
    }

    /// The `tools/list` result of the served tools, as `tdsl serve --mcp` answers it.
    pub fn tools_list(&self) -> Json {
        json!({"tools": self.server.tools().iter().map(|t| t.tool.clone()).collect::<Vec<_>>()})
    }

    /// The `check_plan` and `run_plan` tool objects `serve --mcp --plans` lists (the
    /// server's own, [`PlanServer::tools`]; run_plan's description is the condensed guide).
    pub fn plan_tools(&self) -> Vec<Json> {
        PlanServer::tools()
            .into_iter()
            .filter(|t| !self.plan_server.tools().iter().any(|s| t["name"] == s.name.as_str()))
            .collect()
    }

    /// The `tools/list` result of `serve --mcp --plans`: the served tools, then the two plan
    /// tools (as the server's `list_tools` puts them together).
    pub fn tools_list_with_plans(&self) -> Json {
        let mut tools: Vec<Json> = self.plan_server.tools().iter().map(|t| t.tool.clone()).collect();
        tools.extend(self.plan_tools());
        json!({ "tools": tools })
    }

    /// run_plan's description: the condensed guide.
    pub fn guide(&self) -> String {
        self.plan_tools()
            .iter()
            .find(|t| t["name"] == RUN_PLAN)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    /// The text of the resource `tdsl://tools` (`resources/read`): every tool a plan may
    /// call, compactly.
    pub fn tools_listing(&self) -> Result<String, String> {
        let read = self.plan_server.plans().and_then(|p| p.read(TOOLS_URI)).ok_or("no resource tdsl://tools")?;
        read["contents"][0]["text"].as_str().map(str::to_string).ok_or_else(|| format!("{TOOLS_URI}: no text"))
    }

    /// What the model reads before the task in the plan way, piece by piece.
    pub fn plan_header(&self, context: PlanContext) -> Vec<String> {
        match context {
            PlanContext::FullList => vec![self.tools_list_with_plans().to_string()],
            PlanContext::Compact => {
                vec![json!({ "tools": self.plan_tools() }).to_string(), self.tools_listing().unwrap_or_default()]
            }
        }
    }

    /// The MCP name of the tool at `tool_path`.
    pub fn served_name(&self, tool_path: &str) -> Option<&str> {
        self.server.tools().iter().find(|t| t.tool_path == tool_path).map(|t| t.name.as_str())
    }

    /// Runs `task` both ways.
    pub fn measure(&self, task: &Task) -> Result<Measured, String> {
        let mut client = Client::new(&self.server);
        let answer = (task.direct)(&mut client)?;
        let direct = Direct { batches: client.batches, answer, seen: None };
        let plan = self.run_plan(task)?;
        Ok(Measured { task: task.clone(), direct, plan })
    }

    /// Runs the task's plan (`plans/<id>.json`) with its arguments as `run_plan` does:
    /// [`PlanDesk::run`] (checked, then run with the host runner); the answer is its
    /// `to_json()`.
    pub fn run_plan(&self, task: &Task) -> Result<PlanRun, String> {
        let file = self.root.join("plans").join(format!("{}.json", task.id));
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let plan: Json = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let arguments = (task.arguments)();
        let args = serde_json::from_value(arguments.clone()).map_err(|e| format!("arguments of {}: {e}", task.id))?;
        let run = self
            .plans
            .run(&text, args, Arc::new(HostRunner::new()), &RunPlanOptions::default())
            .map_err(|e| format!("plan {} refused: {e}\n{}", task.id, e.to_json()))?;
        let warnings: Vec<String> = run.check.diagnostics.iter().map(|d| d.rendered.clone()).collect();
        let answer = run.to_json();
        if !run.succeeded() {
            return Err(format!("plan {} ended {}: {answer}", task.id, run.status.as_str()));
        }
        let result = answer["result"].clone();
        let mut calls = Vec::new();
        for step in &run.trace.steps {
            let name = self.served_name(&step.tool).unwrap_or(&step.tool).to_string();
            let mut one = |arguments: &Option<tdsl::testing::value::Value>,
                           attempts: &[tdsl::testing::exec::Attempt]| {
                for a in attempts.iter().filter(|a| a.outcome == Outcome::Ok) {
                    let args = arguments.as_ref().map(|v| serde_json::to_value(v).unwrap_or(Json::Null));
                    let response = a.response.as_ref().map(|v| serde_json::to_value(v).unwrap_or(Json::Null));
                    calls.push((name.clone(), args.unwrap_or(Json::Null), response.unwrap_or(Json::Null)));
                }
            };
            match &step.children {
                Some(children) => children.iter().for_each(|c| one(&c.arguments, &c.attempts)),
                None => one(&step.arguments, &step.attempts),
            }
        }
        let repair = self.repair(task, &plan, &arguments)?;
        Ok(PlanRun { plan, arguments, answer, result, calls, warnings, repair })
    }

    /// The plan with one mistake a model makes — the first step's tool misspelt — and what
    /// `run_plan` of `serve --mcp --plans` answers it (nothing runs): the `tools/call`
    /// result's text content, the checker's diagnostics rendered with their pointers.
    fn repair(&self, task: &Task, plan: &Json, arguments: &Json) -> Result<(Json, String), String> {
        let mut broken = plan.clone();
        let name = broken["instructions"][0]["tool_definition_path"]
            .as_str()
            .ok_or_else(|| format!("plan {}: no first step", task.id))?
            .to_string();
        let wrong = match name.strip_suffix('s') {
            Some(s) => s.to_string(),
            None => format!("{name}s"),
        };
        broken["instructions"][0]["tool_definition_path"] = json!(wrong);
        let answer = self
            .plan_server
            .call(RUN_PLAN, run_arguments(&broken, arguments))
            .ok_or_else(|| "the server has no run_plan".to_string())?;
        if answer["isError"] != json!(true) {
            return Err(format!("plan {}: the misspelt tool `{wrong}` is not an error: {answer}", task.id));
        }
        // Messages may name the root's absolute path: left out, so that counts do not depend
        // on where the crate is.
        let root = format!("{}/", self.root.display());
        let text = answer["content"][0]["text"].as_str().unwrap_or_default().replace(&root, "");
        Ok((broken, text))
    }
}

/// run_plan's arguments: `{plan}`, and `arguments` when the plan has some.
pub fn run_arguments(plan: &Json, arguments: &Json) -> Json {
    let mut out = json!({ "plan": plan });
    if arguments.as_object().is_some_and(|o| !o.is_empty()) {
        out["arguments"] = arguments.clone();
    }
    out
}

/// A model's client calling tools directly: every call goes through the MCP server's
/// `tools/call`. Calls made together in [`Client::batch`] are independent of each other
/// (one round trip each when the model makes one call per turn, one round trip together
/// when it makes parallel tool calls).
pub struct Client<'a> {
    server: &'a dyn Caller,
    batches: Vec<Vec<Call>>,
}

/// Whatever answers the direct way's `tools/call`: tdsl's MCP server, or an MCP client
/// connected to an upstream server ([`Upstream`]).
pub trait Caller {
    /// The `tools/call` result (`{content, structuredContent?, isError}`).
    fn call_tool(&self, name: &str, arguments: Json) -> Result<Json, String>;
}

impl Caller for McpServer {
    fn call_tool(&self, name: &str, arguments: Json) -> Result<Json, String> {
        self.call(name, arguments).ok_or_else(|| format!("no tool `{name}`"))
    }
}

impl<'a> Client<'a> {
    /// A client calling through `server`.
    pub fn new(server: &'a dyn Caller) -> Client<'a> {
        Client { server, batches: Vec::new() }
    }
}

/// One direct tool call: what the model wrote and what came back.
#[derive(Clone, Debug)]
pub struct Call {
    pub name: String,
    pub arguments: Json,
    /// The `tools/call` result's text content (what the client puts in the context).
    pub text: String,
    /// The `structuredContent` (what the scripted client reads).
    pub result: Json,
}

impl Client<'_> {
    /// One call, the result's structured content.
    pub fn call(&mut self, name: &str, arguments: Json) -> Result<Json, String> {
        Ok(self.batch(vec![(name, arguments)])?.remove(0))
    }

    /// Calls that do not depend on each other.
    pub fn batch(&mut self, calls: Vec<(&str, Json)>) -> Result<Vec<Json>, String> {
        let mut made = Vec::new();
        for (name, arguments) in calls {
            let answer = self.server.call_tool(name, arguments.clone())?;
            if answer["isError"] == json!(true) {
                return Err(format!("{name} {arguments}: {}", answer["content"][0]["text"]));
            }
            let text = content_text(&answer);
            let result = answer.get("structuredContent").cloned().unwrap_or(Json::Null);
            made.push(Call { name: name.to_string(), arguments, text, result });
        }
        let results = made.iter().map(|c| c.result.clone()).collect();
        self.batches.push(made);
        Ok(results)
    }
}

/// The text a client puts in the context for a `tools/call` result: every text content
/// block (the Python SDK gives a returned list as one block per element), one per line.
pub fn content_text(answer: &Json) -> String {
    let blocks = answer["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// The direct way's transcript: the calls, grouped by independence, and the answer.
#[derive(Clone, Debug)]
pub struct Direct {
    pub batches: Vec<Vec<Call>>,
    pub answer: Json,
    /// The calls as the upstream server itself recorded them (`{name, arguments}`), for the
    /// upstream tasks; compared with the plan's.
    pub seen: Option<Vec<Json>>,
}

/// The plan's run.
#[derive(Clone, Debug)]
pub struct PlanRun {
    /// The plan the model writes.
    pub plan: Json,
    /// Its arguments.
    pub arguments: Json,
    /// run_plan's answer: `{status, result, steps, failure_summary?}` ([`tdsl::testing::plans::PlanRun::to_json`]).
    pub answer: Json,
    /// The plan's result: the final answer.
    pub result: Json,
    /// Every successful call of the run, from its trace: (MCP name, arguments, response).
    pub calls: Vec<(String, Json, Json)>,
    /// The checker's warnings about the plan.
    pub warnings: Vec<String>,
    /// A first attempt with a mistake, and the text of run_plan's error answer to it.
    pub repair: (Json, String),
}

/// A task done both ways.
#[derive(Clone, Debug)]
pub struct Measured {
    pub task: Task,
    pub direct: Direct,
    pub plan: PlanRun,
}

/// The tokens and round trips of one way of doing a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Tool calls made.
    pub calls: usize,
    /// Requests to the model (round trips): one per turn that ends in tool calls, plus the
    /// turn that writes the final answer.
    pub requests: usize,
    /// Input tokens summed over every request (the whole context is re-read each time).
    pub sent_total: usize,
    /// Tokens in the context after the final answer.
    pub context_end: usize,
    /// Tokens the model wrote (calls, plan, final answer).
    pub generated: usize,
}

impl std::ops::AddAssign for Count {
    fn add_assign(&mut self, o: Count) {
        self.calls += o.calls;
        self.requests += o.requests;
        self.sent_total += o.sent_total;
        self.context_end += o.context_end;
        self.generated += o.generated;
    }
}

/// A turn: what the model writes, then what comes back.
#[derive(Clone)]
struct Turn {
    written: Vec<String>,
    returned: Vec<String>,
}

fn account(tokens: &Tokens, header: &[String], turns: &[Turn], answer: &str, calls: usize) -> Count {
    let mut context: usize = header.iter().map(|t| tokens.count(t)).sum();
    let mut count = Count { calls, ..Count::default() };
    for turn in turns {
        count.requests += 1;
        count.sent_total += context;
        let written: usize = turn.written.iter().map(|t| tokens.count(t)).sum();
        let returned: usize = turn.returned.iter().map(|t| tokens.count(t)).sum();
        count.generated += written;
        context += written + returned;
    }
    count.requests += 1;
    count.sent_total += context;
    let a = tokens.count(answer);
    count.generated += a;
    count.context_end = context + a;
    count
}

/// The tool call as the model writes it: `{"name", "arguments"}`, compact.
pub fn call_text(name: &str, arguments: &Json) -> String {
    json!({"name": name, "arguments": arguments}).to_string()
}

/// What the model reads before the task: directly, and in the plan way with the full tool
/// list and with the compact context (the same for `--plans-only`).
#[derive(Clone, Debug)]
pub struct Headers {
    pub direct: Vec<String>,
    pub full: Vec<String>,
    pub compact: Vec<String>,
}

/// The three ways counted for one task.
#[derive(Clone, Copy, Debug)]
pub struct Counts {
    /// Direct, one tool call per model turn.
    pub direct: Count,
    /// Direct, the independent calls of a step made together as parallel tool calls.
    pub direct_parallel: Count,
    /// One run_plan call, the context holding the whole `tools/list` of `--plans` (the
    /// default).
    pub plan: Count,
    /// A run_plan call refused for a mistake, then the repaired plan's (whole list).
    pub plan_repaired: Count,
    /// One run_plan call, the context holding the plan tools and `tdsl://tools`.
    pub plan_compact: Count,
    /// Refused, then repaired, with the compact context.
    pub plan_compact_repaired: Count,
}

impl Measured {
    /// The final answer as the model writes it (compact JSON; the same text both ways).
    pub fn answer_text(&self) -> String {
        self.plan.result.to_string()
    }

    /// Every check that makes the comparison fair: the same final answer both ways, and
    /// the plan's run made exactly the direct client's calls (as a multiset of name and
    /// arguments) with the same responses.
    pub fn check(&self) -> Result<(), String> {
        if !same(&self.direct.answer, &self.plan.result) {
            return Err(format!(
                "{}: the answers differ\n direct: {}\n plan:   {}",
                self.task.id, self.direct.answer, self.plan.result
            ));
        }
        let (mut direct, mut planned): (Vec<String>, Vec<String>) = match &self.direct.seen {
            // Upstream: what the server recorded both ways (it answers the same arguments
            // the same way).
            Some(seen) => (
                seen.iter().map(canonical).collect(),
                self.plan.calls.iter().map(|(n, a, _)| canonical(&json!({"name": n, "arguments": a}))).collect(),
            ),
            None => (
                self.direct
                    .batches
                    .iter()
                    .flatten()
                    .map(|c| canonical(&json!([c.name, c.arguments, c.result])))
                    .collect(),
                self.plan.calls.iter().map(|(n, a, r)| canonical(&json!([n, a, r]))).collect(),
            ),
        };
        direct.sort();
        planned.sort();
        if direct != planned {
            return Err(format!(
                "{}: the plan's calls are not the direct client's\n direct: {direct:#?}\n plan: {planned:#?}",
                self.task.id
            ));
        }
        Ok(())
    }

    /// The tokens and round trips of each way.
    pub fn counts(&self, bench: &Bench, tokens: &Tokens) -> Counts {
        let headers = Headers {
            direct: vec![bench.tools_list().to_string()],
            full: bench.plan_header(PlanContext::FullList),
            compact: bench.plan_header(PlanContext::Compact),
        };
        self.counts_with(&headers, tokens)
    }

    /// The counts, the model having read `headers` before the task.
    pub fn counts_with(&self, headers: &Headers, tokens: &Tokens) -> Counts {
        let prompt = self.task.prompt.to_string();
        let answer = self.answer_text();
        let calls = self.direct.batches.iter().map(Vec::len).sum();
        let mut header = headers.direct.clone();
        header.push(prompt.clone());
        let one_each: Vec<Turn> = self
            .direct
            .batches
            .iter()
            .flatten()
            .map(|c| Turn { written: vec![call_text(&c.name, &c.arguments)], returned: vec![c.text.clone()] })
            .collect();
        let together: Vec<Turn> = self
            .direct
            .batches
            .iter()
            .map(|b| Turn {
                written: b.iter().map(|c| call_text(&c.name, &c.arguments)).collect(),
                returned: b.iter().map(|c| c.text.clone()).collect(),
            })
            .collect();
        let run_args = run_arguments(&self.plan.plan, &self.plan.arguments);
        let plan_turn = Turn {
            written: vec![call_text(RUN_PLAN, &run_args)],
            returned: vec![answer_text(&self.plan.answer)],
        };
        let refused = Turn {
            written: vec![call_text(RUN_PLAN, &run_arguments(&self.plan.repair.0, &self.plan.arguments))],
            returned: vec![self.plan.repair.1.clone()],
        };
        let with = |pieces: &[String]| {
            let mut header = pieces.to_vec();
            header.push(prompt.clone());
            header
        };
        let (full, compact) = (with(&headers.full), with(&headers.compact));
        Counts {
            direct: account(tokens, &header, &one_each, &answer, calls),
            direct_parallel: account(tokens, &header, &together, &answer, calls),
            plan: account(tokens, &full, std::slice::from_ref(&plan_turn), &answer, 1),
            plan_repaired: account(tokens, &full, &[refused.clone(), plan_turn.clone()], &answer, 1),
            plan_compact: account(tokens, &compact, std::slice::from_ref(&plan_turn), &answer, 1),
            plan_compact_repaired: account(tokens, &compact, &[refused, plan_turn], &answer, 1),
        }
    }
}

/// Where the tokens of a task come from.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// The run_plan call the model writes (the plan and its arguments).
    pub plan_call: usize,
    /// run_plan's answer.
    pub plan_answer: usize,
    /// Every direct tool result together.
    pub direct_results: usize,
    /// Every direct tool call the model writes together.
    pub direct_calls: usize,
}

impl Measured {
    /// The sizes of the pieces, in tokens.
    pub fn sizes(&self, tokens: &Tokens) -> Sizes {
        let args = run_arguments(&self.plan.plan, &self.plan.arguments);
        let calls = self.direct.batches.iter().flatten();
        Sizes {
            plan_call: tokens.count(&call_text(RUN_PLAN, &args)),
            plan_answer: tokens.count(&answer_text(&self.plan.answer)),
            direct_results: calls.clone().map(|c| tokens.count(&c.text)).sum(),
            direct_calls: calls.map(|c| tokens.count(&call_text(&c.name, &c.arguments))).sum(),
        }
    }
}

/// Deep equality with numbers compared as numbers (`10` and `10.0` are the same; floats
/// within 1e-9).
pub fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
            _ => x == y,
        },
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// JSON text with object keys sorted and numbers written as f64, so that two values that
/// are [`same`] up to key order and number form have the same text.
pub fn canonical(v: &Json) -> String {
    match v {
        Json::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Json::String((*k).clone()), canonical(&m[*k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Json::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Json::Number(n) => format!("{:?}", n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// The tool root's `tools/` directory exists (a sanity check for the binary's callers).
pub fn has_tools(root: &Path) -> bool {
    root.join("tools").is_dir()
}
