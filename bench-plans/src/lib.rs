//! Plans versus direct tool calling (issue 29, SPEC §13): the tokens that enter a model's
//! context, and the model round trips, when a task is done
//!
//! - **directly**, as an MCP client does it: the model sees every served tool's definition
//!   (the `tools/list` JSON of `tdsl serve --mcp`), then makes one tool call per round trip,
//!   and each call and its result enter the context; or
//! - **with one plan**: the model sees the same tool definitions plus `check_plan` and
//!   `run_plan` (with the condensed guide in `run_plan`'s description), writes one plan, and
//!   only run_plan's answer `{status, result, steps}` comes back.
//!
//! Nothing in either transcript is invented. The direct transcript is made by a scripted
//! client that calls the tools through tdsl's own MCP server ([`McpServer::call`], the
//! `tools/call` result a real client gets). The plan runs with the library (checked by
//! [`Analyzer`], loaded by [`Workflow::from_checked`], run by [`Executor`] with the host
//! runner), and its trace's calls must be the direct client's calls, with the same
//! responses ([`Measured::check`]). Both must give the same final answer.
//!
//! What is counted is in `README` form in `results.md` and docs/performance.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value as Json};
use tdsl::analysis::{Analyzer, ToolRoot};
use tdsl::exec::host::HostRunner;
use tdsl::exec::{Executor, Outcome, Workflow};
use tdsl::mcp::McpServer;

mod tasks;
pub use tasks::{tasks, Task};

/// The crate's directory: the tool root (`/tools/…`), `plans/`, `data/`.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The placeholder for the condensed guide in `run_plan`'s description (exactly 2,500
/// characters), used until the real guide is on main; `BENCH_GUIDE=FILE` replaces it.
pub const PLACEHOLDER_GUIDE: &str = include_str!("../guide-placeholder.txt");

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

/// What the benchmark runs against: the tools under the crate's `tools/`, served.
pub struct Bench {
    pub root: PathBuf,
    pub server: McpServer,
    /// The text put at the end of `run_plan`'s description.
    pub guide: String,
    /// Where the guide came from (for the report).
    pub guide_source: String,
    /// The check_plan and run_plan definitions of `BENCH_PLAN_TOOLS` (a JSON list, as
    /// `serve --mcp --plans` lists them), used instead of [`Bench::plan_tools`]' own.
    pub plan_tools: Option<Vec<Json>>,
}

impl Bench {
    /// The bench over `crate_dir()`, with the guide of `BENCH_GUIDE` (a file) or the
    /// placeholder.
    pub fn new() -> Result<Bench, String> {
        let (guide, guide_source) = match std::env::var_os("BENCH_GUIDE") {
            Some(f) => {
                let text =
                    std::fs::read_to_string(&f).map_err(|e| format!("BENCH_GUIDE {}: {e}", f.to_string_lossy()))?;
                (text, format!("`{}`", f.to_string_lossy()))
            }
            None => (PLACEHOLDER_GUIDE.to_string(), "placeholder (guide-placeholder.txt)".to_string()),
        };
        let mut bench = Bench::with_guide(crate_dir(), guide, guide_source)?;
        if let Some(f) = std::env::var_os("BENCH_PLAN_TOOLS") {
            let name = f.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&f).map_err(|e| format!("BENCH_PLAN_TOOLS {name}: {e}"))?;
            let tools: Vec<Json> =
                serde_json::from_str(&text).map_err(|e| format!("BENCH_PLAN_TOOLS {name}: not a JSON list: {e}"))?;
            // The guide is then in their run_plan's description: reported whole.
            let run_plan = tools.iter().find(|t| t["name"] == "run_plan");
            bench.guide = run_plan.and_then(|t| t["description"].as_str()).unwrap_or_default().to_string();
            bench.guide_source = format!("run_plan's whole description in `{name}`");
            bench.plan_tools = Some(tools);
        }
        Ok(bench)
    }

    pub fn with_guide(root: PathBuf, guide: String, guide_source: String) -> Result<Bench, String> {
        let (server, skipped) = McpServer::load(&root, &[])?;
        if !skipped.is_empty() {
            return Err(format!("tools that do not load: {}", skipped.join("; ")));
        }
        Ok(Bench { root, server, guide, guide_source, plan_tools: None })
    }

    /// The `tools/list` result of the served tools, as `tdsl serve --mcp` answers it.
    pub fn tools_list(&self) -> Json {
        json!({"tools": self.server.tools().iter().map(|t| t.tool.clone()).collect::<Vec<_>>()})
    }

    /// The `check_plan` and `run_plan` tool definitions (SPEC §13), `run_plan`'s
    /// description ending with the guide (or those of `BENCH_PLAN_TOOLS`, which then hold
    /// their own guide).
    pub fn plan_tools(&self) -> Vec<Json> {
        if let Some(tools) = &self.plan_tools {
            return tools.clone();
        }
        let plan = json!({
            "type": "object",
            "description": "The plan: a tdsl composite tool object (instructions, response_reference_map, optional arguments/responses), sent inline"
        });
        vec![
            json!({
                "name": "check_plan",
                "description": "Checks a tdsl plan without running it. Answers the diagnostics of `tdsl check` (code, severity, message, help), each located by a JSON pointer into the plan, and, when the plan checks, its levels and the type of its result.",
                "inputSchema": {"type": "object", "properties": {"plan": plan}, "required": ["plan"]}
            }),
            json!({
                "name": "run_plan",
                "description": format!("Checks a tdsl plan, then runs it with the served tools and answers {{status, result, steps: [{{execution_id, status, duration_ms, error?}}], failure_summary?}}; a plan with errors does not run and the answer carries its diagnostics.\n\n{}", self.guide),
                "inputSchema": {
                    "type": "object",
                    "properties": {"plan": plan, "arguments": {"type": "object", "description": "The plan's own arguments (REF:arguments.NAME)"}},
                    "required": ["plan"]
                }
            }),
        ]
    }

    /// The `tools/list` result of `serve --mcp --plans`: the served tools and the two plan
    /// tools.
    pub fn tools_list_with_plans(&self) -> Json {
        let mut tools: Vec<Json> = self.server.tools().iter().map(|t| t.tool.clone()).collect();
        tools.extend(self.plan_tools());
        json!({ "tools": tools })
    }

    /// The MCP name of the tool at `tool_path`.
    pub fn served_name(&self, tool_path: &str) -> Option<&str> {
        self.server.tools().iter().find(|t| t.tool_path == tool_path).map(|t| t.name.as_str())
    }

    /// Runs `task` both ways.
    pub fn measure(&self, task: &Task) -> Result<Measured, String> {
        let mut client = Client { server: &self.server, batches: Vec::new() };
        let answer = (task.direct)(&mut client)?;
        let direct = Direct { batches: client.batches, answer };
        let plan = self.run_plan(task)?;
        Ok(Measured { task: task.clone(), direct, plan })
    }

    /// Runs the task's plan (`plans/<id>.json`) with its arguments, as `run_plan` would:
    /// checked against the tool root, then run with the host runner.
    pub fn run_plan(&self, task: &Task) -> Result<PlanRun, String> {
        let file = self.root.join("plans").join(format!("{}.json", task.id));
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let plan: Json = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let arguments = (task.arguments)();
        let mut analyzer = Analyzer::with_engine(ToolRoot::new(&self.root), tdsl::exec::engine());
        let checked = analyzer.check_text(task.id.to_string(), Arc::from(text.as_str()), None);
        let warnings: Vec<String> = checked.diagnostics.iter().map(|d| d.to_string()).collect();
        if checked.has_errors() {
            return Err(format!("plan {} does not check:\n{}", task.id, warnings.join("\n")));
        }
        let workflow = Workflow::from_checked(analyzer, checked).map_err(|e| format!("plan {}: {e}", task.id))?;
        let args = serde_json::from_value(arguments.clone()).map_err(|e| format!("arguments of {}: {e}", task.id))?;
        let run = Executor::new(HostRunner::new())
            .run(&workflow, args)
            .map_err(|e| format!("plan {} refused: {e}", task.id))?;
        let result = run.result.as_ref().map(|r| serde_json::to_value(r).unwrap_or(Json::Null)).unwrap_or(Json::Null);
        let steps: Vec<Json> = run
            .trace
            .steps
            .iter()
            .map(|s| json!({"execution_id": s.execution_id, "status": s.status.as_str(), "duration_ms": s.duration_ms}))
            .collect();
        let answer = json!({"status": run.status.as_str(), "result": result, "steps": steps});
        if run.status.as_str() != "SUCCESS" {
            return Err(format!("plan {} ended {}: {:?}", task.id, run.status.as_str(), run.error));
        }
        let mut calls = Vec::new();
        for step in &run.trace.steps {
            let name = self.served_name(&step.tool).unwrap_or(&step.tool).to_string();
            let mut one = |arguments: &Option<tdsl::value::Value>, attempts: &[tdsl::exec::Attempt]| {
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
        let repair = self.repair(task, &plan)?;
        Ok(PlanRun { plan, arguments, answer, result, calls, warnings, repair })
    }

    /// The plan with one mistake a model makes — the first step's tool misspelt — and
    /// the real diagnostics the checker gives it, as run_plan's error answer would carry
    /// them (`{isError, diagnostics: [{code, severity, message, help, pointer}]}`; the
    /// pointer is the one of the mistake, which this function knows).
    fn repair(&self, task: &Task, plan: &Json) -> Result<(Json, Json), String> {
        let mut broken = plan.clone();
        let path = broken["instructions"][0]["tool_definition_path"]
            .as_str()
            .ok_or_else(|| format!("plan {}: no first step", task.id))?
            .to_string();
        let stem = path.trim_end_matches(".tool");
        let wrong = match stem.strip_suffix('s') {
            Some(s) => format!("{s}.tool"),
            None => format!("{stem}s.tool"),
        };
        broken["instructions"][0]["tool_definition_path"] = json!(wrong);
        let text = serde_json::to_string_pretty(&broken).unwrap_or_default();
        let mut analyzer = Analyzer::with_engine(ToolRoot::new(&self.root), tdsl::exec::engine());
        let checked = analyzer.check_text(task.id.to_string(), Arc::from(text.as_str()), None);
        // Messages name the root's absolute path: left out, so that counts do not depend on
        // where the crate is.
        let root = format!("{}/", self.root.display());
        let diagnostics: Vec<Json> = checked
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| {
                json!({
                    "code": d.code.as_str(),
                    "severity": "error",
                    "message": d.message.replace(&root, ""),
                    "help": d.help,
                    "pointer": "/instructions/0/tool_definition_path"
                })
            })
            .collect();
        if diagnostics.is_empty() {
            return Err(format!("plan {}: the misspelt tool `{wrong}` is not an error", task.id));
        }
        Ok((broken, json!({"isError": true, "diagnostics": diagnostics})))
    }
}

/// A model's client calling tools directly: every call goes through the MCP server's
/// `tools/call`. Calls made together in [`Client::batch`] are independent of each other
/// (one round trip each when the model makes one call per turn, one round trip together
/// when it makes parallel tool calls).
pub struct Client<'a> {
    server: &'a McpServer,
    batches: Vec<Vec<Call>>,
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
            let answer = self.server.call(name, arguments.clone()).ok_or_else(|| format!("no tool `{name}`"))?;
            if answer["isError"] == json!(true) {
                return Err(format!("{name} {arguments}: {}", answer["content"][0]["text"]));
            }
            let text = answer["content"][0]["text"].as_str().unwrap_or_default().to_string();
            let result = answer.get("structuredContent").cloned().unwrap_or(Json::Null);
            made.push(Call { name: name.to_string(), arguments, text, result });
        }
        let results = made.iter().map(|c| c.result.clone()).collect();
        self.batches.push(made);
        Ok(results)
    }
}

/// The direct way's transcript: the calls, grouped by independence, and the answer.
#[derive(Clone, Debug)]
pub struct Direct {
    pub batches: Vec<Vec<Call>>,
    pub answer: Json,
}

/// The plan's run.
#[derive(Clone, Debug)]
pub struct PlanRun {
    /// The plan the model writes.
    pub plan: Json,
    /// Its arguments.
    pub arguments: Json,
    /// run_plan's answer: `{status, result, steps}`.
    pub answer: Json,
    /// The plan's result: the final answer.
    pub result: Json,
    /// Every successful call of the run, from its trace: (MCP name, arguments, response).
    pub calls: Vec<(String, Json, Json)>,
    /// The checker's warnings about the plan.
    pub warnings: Vec<String>,
    /// A first attempt with a mistake, and run_plan's error answer to it.
    pub repair: (Json, Json),
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

/// The three ways counted for one task.
#[derive(Clone, Copy, Debug)]
pub struct Counts {
    /// Direct, one tool call per model turn.
    pub direct: Count,
    /// Direct, the independent calls of a step made together as parallel tool calls.
    pub direct_parallel: Count,
    /// One run_plan call.
    pub plan: Count,
    /// A run_plan call refused for a mistake, then the repaired plan's.
    pub plan_repaired: Count,
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
        let mut direct: Vec<String> =
            self.direct.batches.iter().flatten().map(|c| canonical(&json!([c.name, c.arguments, c.result]))).collect();
        let mut planned: Vec<String> = self.plan.calls.iter().map(|(n, a, r)| canonical(&json!([n, a, r]))).collect();
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
        let prompt = self.task.prompt.to_string();
        let answer = self.answer_text();
        let calls = self.direct.batches.iter().map(Vec::len).sum();
        let header = vec![bench.tools_list().to_string(), prompt.clone()];
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
        let plan_header = vec![bench.tools_list_with_plans().to_string(), prompt];
        let mut run_arguments = json!({"plan": self.plan.plan});
        if self.plan.arguments.as_object().is_some_and(|o| !o.is_empty()) {
            run_arguments["arguments"] = self.plan.arguments.clone();
        }
        let plan_turn = Turn {
            written: vec![call_text("run_plan", &run_arguments)],
            returned: vec![serde_json::to_string_pretty(&self.plan.answer).unwrap_or_default()],
        };
        let mut broken_arguments = run_arguments.clone();
        broken_arguments["plan"] = self.plan.repair.0.clone();
        let refused = Turn {
            written: vec![call_text("run_plan", &broken_arguments)],
            returned: vec![serde_json::to_string_pretty(&self.plan.repair.1).unwrap_or_default()],
        };
        let plan = account(tokens, &plan_header, std::slice::from_ref(&plan_turn), &answer, 1);
        Counts {
            direct: account(tokens, &header, &one_each, &answer, calls),
            direct_parallel: account(tokens, &header, &together, &answer, calls),
            plan,
            plan_repaired: account(tokens, &plan_header, &[refused, plan_turn], &answer, 1),
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
        let mut run_arguments = json!({"plan": self.plan.plan});
        if self.plan.arguments.as_object().is_some_and(|o| !o.is_empty()) {
            run_arguments["arguments"] = self.plan.arguments.clone();
        }
        let calls = self.direct.batches.iter().flatten();
        Sizes {
            plan_call: tokens.count(&call_text("run_plan", &run_arguments)),
            plan_answer: tokens.count(&serde_json::to_string_pretty(&self.plan.answer).unwrap_or_default()),
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
