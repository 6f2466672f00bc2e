//! Plans over MCP (`tdsl serve --mcp --plans`, SPEC §13): the tools `check_plan` and
//! `run_plan`, the resources `tdsl://guide` and `tdsl://tools`, and the prompt `plan`.
//!
//! The checking and running are the plan core's ([`crate::plans::PlanDesk`]); this module is its
//! MCP surface: it hands the core the served tools and the upstream servers' schemas
//! ([`super::upstream`]), runs plans with a runner that sends `SERVER/TOOL` calls to their
//! upstream server and every other call to the host runner, and says what a model reads.
//! `run_plan` goes through the same served-call path as any composite ([`super::McpServer`]):
//! cancellation, progress, logging and the history work the same.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value as Json};

use super::served::Served;
use super::upstream::{upstream_tool, ToolList, UpstreamRunner, Upstreams};
use crate::exec::{CancelToken, Event, Observer, Runner};
use crate::host::ToolEnv;
use crate::plans::{Callable, PlanDesk, PlanLimits, PlanRefused, RunPlanOptions, UpstreamTool};
use crate::tool::ToolKind;
use crate::value::Value;

/// The tool that checks a plan.
pub(crate) const CHECK_PLAN: &str = "check_plan";
/// The tool that checks and runs a plan.
pub const RUN_PLAN: &str = "run_plan";
/// The guide a model reads before it writes a plan.
pub(crate) const GUIDE_URI: &str = "tdsl://guide";
/// Every tool a plan may call, compactly.
pub const TOOLS_URI: &str = "tdsl://tools";
/// The prompt that asks for a plan.
pub(crate) const PLAN_PROMPT: &str = "plan";

/// The guide (`tdsl://guide`), at most 16,000 characters (`GUIDE_LIMIT`, a test checks it).
pub(crate) const GUIDE: &str = include_str!("guide.md");

/// The condensed guide in `run_plan`'s description, at most 2,500 characters
/// (`DESCRIPTION_LIMIT`, a test checks it): for clients that never read resources.
pub const RUN_PLAN_DESCRIPTION: &str = r#"Run a tdsl plan: one JSON object that calls several tools and combines their results on the server; only its result comes back. Checked first (as check_plan): with an error nothing runs. Answer: {status, result, steps, failure_summary?}; not SUCCESS is a tool error.
Plan: {"arguments": [{"name": "q", "type_name": "string", "required": true}], "instructions": [STEP, ...], "response_reference_map": {"out": "REF:b.total"}}
STEP: {"execution_id": "a", "tool_definition_path": "<name from tdsl://tools; SERVER/TOOL upstream>", "arguments": {"x": "REF:arguments.q", "y": 3}}
- REF: a string that is entirely "REF:arguments.q" or "REF:a.field.0.name" (also .first .last .length) is that value, typed; REFs order the steps, the independent run at once. No other placeholder ($1, #E1, {{a.x}}, ${a.x}, jq). Literals: true false null. SDK tools returning a list give {"result": [...]}: REF:a.result.
- Transforms on a step: "transform_responses": {"variables": {"d": "REF:response"}, "transforms": {"total": "sum(array=d, item_path=\"n\")"}} adds "total" to the step's result (REF:a.total); "transform_arguments" computes arguments. Expressions: + - * / % == != < > and or not, a.b, a[0], [..], {k: v}, functions: map(array, template="item.x", as="x"), filter(array, condition_string="item.n > 2"), sort(array, key_path="n", direction="desc"), sum/min/max/avg(array, item_path), count, any, all, find, join(array, separator), group_by, unique, flatten, slice(value, start, end), length, keys, values, contains, upper, lower, split, replace, zip(left, right), default(value, fallback), if(condition, true_value, false_value), merge, pick, omit, to_number, to_string, round.
- A step with no tool_definition_path is a transform step: its transforms are its result; it joins steps.
- Conditions: "conditions": [{"param": "REF:a.count", "operator": "greater_than", "value": 0}] (equals, less_than, exists, contains, in; groups {"logic": "OR", "conditions": [...]}): else the step is SKIPPED, its result null.
- Fan-out: "parallel_execution": {"iterate_over": "REF:a.items", "child_argument_name": "arg"} calls the tool once per element; REF:step.response is the list of results, in order (zip pairs them with the inputs).
- "continue_on_error": true, "timeout_seconds": 30, "retry": {"max_retries": 2} (else only read-only/idempotent tools retry). Limits: 64 steps, 1,000 children, 120 s.
Read tdsl://guide (worked plans) and tdsl://tools (the tools)."#;
/// The line `run_plan`'s description has when the server offers skills (`serve --skills`),
/// before its last: without them there is no `save_skill` to point to.
pub(crate) const SKILLS_LINE: &str = "- A plan that worked and is needed again: save_skill.";

/// What `--plans` adds to a server.
#[derive(Debug)]
pub struct PlanOptions {
    /// The limits plans are checked and run under.
    pub limits: PlanLimits,
    /// The folder the file functions may read (`--files DIR`); none without it.
    pub files: Option<PathBuf>,
}

/// The plans side of a server: the core's settings and the upstream servers.
#[derive(Debug)]
pub struct PlanServer {
    root: PathBuf,
    served: Vec<Callable>,
    /// The served tools' descriptions for `tdsl://tools`, made once.
    served_listing: String,
    /// The served tools' files, by name and by tool path: what a skill's record of its
    /// check covers ([`PlanServer::served_text`]).
    served_files: HashMap<String, PathBuf>,
    /// Each upstream server's part of `tdsl://tools`, made once a listing: a part is
    /// worked out from the tools' schemas read whole, which a hostile server can make cost
    /// milliseconds a tool, and any client may read the resource again and again.
    upstream_listings: Mutex<HashMap<String, (ToolList, Arc<str>)>>,
    options: PlanOptions,
    upstreams: Arc<Upstreams>,
    /// The environment of the processes plans' tools start.
    tool_env: ToolEnv,
    /// The most values one output of a plan's tool may hold.
    max_tool_values: usize,
    /// The skills (`serve --skills`), callable from plans like served tools; empty without.
    skills: super::skills::SkillSet,
}

impl PlanServer {
    /// The plans of a server over `root` serving `served`, with the upstream servers.
    pub fn new(root: PathBuf, served: &[Served], options: PlanOptions, upstreams: Arc<Upstreams>) -> PlanServer {
        let callable =
            served.iter().map(|s| Callable { name: s.name.clone(), tool_path: Some(s.tool_path.clone()) }).collect();
        let served_listing = served.iter().map(served_line).collect::<Vec<_>>().join("");
        let served_files = served
            .iter()
            .flat_map(|s| [(s.name.clone(), s.file.clone()), (s.tool_path.clone(), s.file.clone())])
            .collect();
        PlanServer {
            root,
            served: callable,
            served_listing,
            served_files,
            upstream_listings: Mutex::default(),
            options,
            upstreams,
            tool_env: ToolEnv::Inherit,
            max_tool_values: crate::ranges::SERVE_MAX_TOOL_VALUES,
            skills: super::skills::SkillSet::default(),
        }
    }

    /// The same plans, their `exec:` tools started with the environment `env` allows
    /// (`serve --clean-env`).
    pub fn with_tool_env(mut self, env: ToolEnv) -> PlanServer {
        self.tool_env = env;
        self
    }

    /// The same plans, each output of their tools read as at most `values` values
    /// (`serve --max-tool-values`; upstream servers have theirs,
    /// [`Upstreams::with_max_values`]).
    pub fn with_max_tool_values(mut self, values: usize) -> PlanServer {
        self.max_tool_values = values;
        self
    }

    /// The skills plans may call (`serve --skills`): shared with [`super::skills::Skills`].
    pub fn skill_set(&self) -> &super::skills::SkillSet {
        &self.skills
    }

    /// The served tools (name and tool path).
    pub(super) fn served(&self) -> &[Callable] {
        &self.served
    }

    /// The served tools and the skills that check, as plans may call them.
    fn callable(&self) -> Vec<Callable> {
        let mut out = self.served.clone();
        out.extend(super::skills::callable(&self.skills));
        out
    }

    /// The upstream servers (shut them down outside the async runtime when the server ends).
    pub fn upstreams(&self) -> &Arc<Upstreams> {
        &self.upstreams
    }

    /// The plan core for one check or run: the served tools, the tools of the upstream
    /// servers the plan may name (each started on first use), the limits and the files.
    /// A server that cannot be listed is named in the second value.
    fn core(&self, plan: &Json) -> (PlanDesk, Vec<String>) {
        let parsed;
        let plan = match self.plan_value(plan) {
            Some(p) => {
                parsed = p;
                &parsed
            }
            None => plan,
        };
        let callable = self.callable();
        let mut plans = PlanDesk::with_served(&self.root, callable.clone()).with_limits(self.options.limits.clone());
        if let Some(dir) = &self.options.files {
            if let Ok(store) = crate::files::LocalStore::open(dir) {
                plans = plans.with_file_store(Arc::new(store));
            }
        }
        let mut problems = Vec::new();
        let names = self.upstreams.names();
        let mut needed = upstreams_needed(plan, &names, &callable);
        super::skills::add_upstreams(&self.skills, plan, &names, &mut needed);
        if !needed.is_empty() {
            let mut tools = Vec::new();
            for (server, listed) in self.upstreams.tools_of(&needed) {
                match listed {
                    Ok(list) => tools.extend(list.iter().filter_map(|t| upstream_tool(&server, t))),
                    Err(e) => problems.push(e),
                }
            }
            plans = plans.with_upstream(tools);
        }
        (plans, problems)
    }

    /// A plan sent as JSON text, parsed (within the size limit): what [`upstreams_needed`]
    /// reads; `None` for a plan sent as a value.
    fn plan_value(&self, plan: &Json) -> Option<Json> {
        match plan {
            Json::String(text) if text.len() <= self.options.limits.max_bytes => {
                Some(serde_json::from_str::<Json>(text).unwrap_or(Json::Null))
            }
            _ => None,
        }
    }

    /// Waits, without holding a thread, for the first listings of the upstream servers a
    /// `check_plan` or `run_plan` call's plan needs (starting them): the server calls it
    /// before the call takes a slot of `--max-calls`, so that a hung upstream holds none.
    pub async fn prepare(&self, arguments: &Json) {
        let Some(plan) = arguments.get("plan") else { return };
        if self.upstreams.is_empty() {
            return;
        }
        let parsed = self.plan_value(plan);
        let names = self.upstreams.names();
        let plan = parsed.as_ref().unwrap_or(plan);
        let mut needed = upstreams_needed(plan, &names, &self.callable());
        super::skills::add_upstreams(&self.skills, plan, &names, &mut needed);
        if !needed.is_empty() {
            self.upstreams.prepare(&needed).await;
        }
    }

    /// `check_plan {plan}`: the check as JSON (`ok`, `diagnostics`, and when it checks,
    /// `levels` and `result_type`), a tool error when the plan has errors.
    pub fn check_plan(&self, arguments: &Json) -> Json {
        self.check_plan_cancellable(arguments, &CancelToken::new())
    }

    /// [`PlanServer::check_plan`], the check stopped soon after `cancel` is cancelled (its
    /// answer is then the error `E0407`; a client that cancelled gets none).
    pub fn check_plan_cancellable(&self, arguments: &Json, cancel: &CancelToken) -> Json {
        let plan = match plan_argument(arguments) {
            Ok(p) => p,
            Err(e) => return super::served::tool_error(e),
        };
        let text = plan_text(plan, self.options.limits.max_bytes);
        let (core, problems) = self.core(plan);
        let cancel = cancel.clone();
        let interrupt = crate::runtime::Interrupt::new()
            .with_probe(Arc::new(move || cancel.is_cancelled().then_some(crate::runtime::InterruptReason::Cancelled)));
        let check = core.check_interruptible(&text, &interrupt);
        let mut out = check.to_json();
        add_problems(&mut out, &problems);
        let summary = summary_text(&check, &problems);
        structured(out, summary, !check.ok())
    }

    /// The check of a plan (a skill's file as its text), with the upstream servers that
    /// could not be listed.
    pub(super) fn check_only(&self, plan: &Json) -> (crate::plans::PlanCheck, Vec<String>) {
        let text = plan_text(plan, self.options.limits.max_bytes);
        let (core, problems) = self.core(plan);
        (core.check(&text), problems)
    }

    /// [`PlanServer::check_only`], stopped soon after `cancel` is cancelled (`E0407`).
    pub(super) fn check_only_cancellable(
        &self,
        plan: &Json,
        cancel: &CancelToken,
    ) -> (crate::plans::PlanCheck, Vec<String>) {
        let text = plan_text(plan, self.options.limits.max_bytes);
        let (core, problems) = self.core(plan);
        let cancel = cancel.clone();
        let interrupt = crate::runtime::Interrupt::new()
            .with_probe(Arc::new(move || cancel.is_cancelled().then_some(crate::runtime::InterruptReason::Cancelled)));
        (core.check_interruptible(&text, &interrupt), problems)
    }

    /// The text of the served tool a plan names `path` (its name or tool path), read now;
    /// `None` when no served tool has that name or its file cannot be read.
    pub(super) fn served_text(&self, path: &str) -> Option<String> {
        crate::input::read_text(self.served_files.get(path)?).ok()
    }

    /// What a check depends on besides the plan and the tools it names: the limits and the
    /// file folder, as text.
    pub(super) fn options_key(&self) -> String {
        format!("{:?}", self.options)
    }

    /// The largest plan, in bytes.
    pub(super) fn max_plan_bytes(&self) -> usize {
        self.options.limits.max_bytes
    }

    /// The largest result of a run, in bytes of compact JSON.
    pub(super) fn max_result_bytes(&self) -> usize {
        self.options.limits.max_result_bytes
    }

    /// `run_plan {plan, arguments}`: checks, then runs with the served tools and the
    /// upstream servers; `{status, result, steps, failure_summary?}`.
    pub fn run_plan(&self, arguments: &Json, cancel: &CancelToken, observer: Option<Arc<dyn Observer>>) -> Json {
        super::spliced::expand(self.run_plan_marked(arguments, cancel, observer))
    }

    /// [`PlanServer::run_plan`], the answer's text written once from the run's values
    /// (compact, [`PlanServer::max_result_bytes`] measured before it is written) and, when
    /// large, marked to be spliced in as it goes out ([`super::spliced`]): no tree of JSON
    /// values is built for it.
    pub(super) fn run_plan_marked(
        &self,
        arguments: &Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
    ) -> Json {
        match self.run_as(arguments, cancel, observer, RUN_PLAN.to_string(), Json::Null) {
            Ok(run) => match run_text(&run, self.max_result_bytes()) {
                Some(text) => super::spliced::answer(text, true, !run.succeeded()),
                None => super::served::tool_error(format!(
                    "FAILED: the result exceeds the output limit of {} bytes [{}]",
                    self.max_result_bytes(),
                    crate::diagnostic::Code::ResultTooLarge.as_str()
                )),
            },
            Err(answer) => answer,
        }
    }

    /// Checks and runs `{plan, arguments}`, the run recorded as the tool `tool` with
    /// `{plan, arguments}` and, when not null, `recorded` as `skill`: the run, or the tool
    /// error to answer.
    pub(super) fn run_as(
        &self,
        arguments: &Json,
        cancel: &CancelToken,
        observer: Option<Arc<dyn Observer>>,
        tool: String,
        recorded: Json,
    ) -> Result<crate::plans::PlanRun, Json> {
        let plan = plan_argument(arguments).map_err(super::served::tool_error)?;
        let args = match arguments.get("arguments") {
            None | Some(Json::Null) => Json::Object(serde_json::Map::new()),
            Some(a @ Json::Object(_)) => a.clone(),
            Some(other) => {
                return Err(super::served::tool_error(format!(
                    "`arguments` must be an object of the plan's arguments (or left out), not {}",
                    super::framing::kind(other)
                )))
            }
        };
        let text = plan_text(plan, self.options.limits.max_bytes);
        let (core, problems) = self.core(plan);
        let values: Value = match serde_json::from_value(args.clone()) {
            Ok(v) => v,
            Err(e) => return Err(super::served::tool_error(format!("`arguments` cannot be read: {e}"))),
        };
        let runner: Arc<dyn Runner> = Arc::new(UpstreamRunner::new(
            super::served::host_runner(&self.tool_env, self.max_tool_values),
            self.upstreams.clone(),
        ));
        let observer = observer.map(|o| {
            Arc::new(PlanRecorded { inner: o, plan: plan.clone(), args, tool, skill: recorded }) as Arc<dyn Observer>
        });
        let options = RunPlanOptions { cancel: cancel.clone(), observer, ..RunPlanOptions::default() };
        match core.run(&text, values, runner, &options) {
            Ok(run) => Ok(run),
            Err(PlanRefused::Invalid(check)) => {
                let mut out = check.to_json();
                add_problems(&mut out, &problems);
                let text = format!("the plan was not run: {}", summary_text(&check, &problems));
                Err(structured(out, text, true))
            }
            Err(refused @ PlanRefused::Refused { .. }) => {
                let out = refused.to_json();
                Err(structured(out, refused.to_string(), true))
            }
        }
    }

    /// How many steps a `run_plan` call's plan has: the `total` of its progress.
    pub fn steps_of(arguments: &Json) -> usize {
        arguments.get("plan").and_then(|p| p.get("instructions")).and_then(Json::as_array).map_or(1, Vec::len).max(1)
    }

    /// `tdsl://tools`: every tool a plan may call, one paragraph each:
    /// `name(arg: type!, …) -> {field: type, …}` and its description. Blocking (lists the
    /// upstream servers, starting them).
    pub fn tools_listing(&self) -> String {
        let mut out = String::from(
            "# Tools a plan may call\n\nAs `name(argument: type, …) → {response: type, …}`; `!` marks a required argument. \
             Use the name as `tool_definition_path`.\n\n",
        );
        out.push_str(&self.served_listing);
        out.push_str(&super::skills::listing(&self.skills));
        for (server, listed) in self.upstreams.all_tools() {
            out.push_str(&format!("\n## Upstream server `{server}` (call its tools as `{server}/TOOL`)\n\n"));
            match listed {
                Ok(tools) => out.push_str(&self.upstream_listing(&server, &tools)),
                Err(e) => out.push_str(&format!("(not available now: {e})\n")),
            }
        }
        out
    }

    /// `server`'s part of `tdsl://tools` for its listing `tools`: made again only when the
    /// server was listed again.
    fn upstream_listing(&self, server: &str, tools: &ToolList) -> Arc<str> {
        if let Some((listed, text)) = self.upstream_listings.lock().unwrap_or_else(PoisonError::into_inner).get(server)
        {
            if Arc::ptr_eq(listed, tools) {
                return text.clone();
            }
        }
        let text: Arc<str> = tools
            .iter()
            .filter_map(|t| upstream_tool(server, t).map(|u| upstream_line(&u, t)))
            .collect::<String>()
            .into();
        self.upstream_listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(server.to_string(), (tools.clone(), text.clone()));
        text
    }

    /// The `check_plan` and `run_plan` tools of a server without skills, as MCP `Tool` objects.
    pub fn tools() -> Vec<Json> {
        PlanServer::tools_for(false)
    }

    /// `run_plan`'s description: the condensed guide, with [`SKILLS_LINE`] when the server
    /// offers skills.
    pub fn description(skills: bool) -> String {
        match (skills, RUN_PLAN_DESCRIPTION.rsplit_once('\n')) {
            (true, Some((head, last))) => format!("{head}\n{SKILLS_LINE}\n{last}"),
            _ => RUN_PLAN_DESCRIPTION.to_string(),
        }
    }

    /// The `check_plan` and `run_plan` tools, as MCP `Tool` objects; `skills`: whether the
    /// server offers skills (`run_plan`'s description then points to `save_skill`).
    /// What the two share is said once: the plan's form in `run_plan`'s description,
    /// a diagnostic's fields in `check_plan`'s output schema.
    pub fn tools_for(skills: bool) -> Vec<Json> {
        let plan =
            json!({"type": "object", "description": "The plan: a tdsl composite tool object (see tdsl://guide)."});
        let diagnostics = json!({"type": "array", "items": {"type": "object", "properties": {
            "code": {"type": "string"}, "severity": {"type": "string"}, "message": {"type": "string"},
            "help": {"type": ["string", "null"]}, "pointer": {"type": "string"},
            "range": {"type": "array", "items": {"type": "integer"}}}}});
        vec![
            json!({
                "name": CHECK_PLAN,
                "description": "Check a plan as run_plan takes it, without running it: each problem with a JSON pointer into \
                    the plan and a help that shows the tdsl form; when it checks, its steps level by level and its result's \
                    type. A plan with errors is a tool error.",
                "inputSchema": {"type": "object", "properties": {"plan": {"type": "object"}}, "required": ["plan"]},
                "outputSchema": {"type": "object", "properties": {
                    "ok": {"type": "boolean"}, "errors": {"type": "integer"}, "warnings": {"type": "integer"},
                    "diagnostics": diagnostics,
                    "levels": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                    "result_type": {"type": "string"}}, "required": ["ok", "diagnostics"]},
            }),
            json!({
                "name": RUN_PLAN,
                "description": PlanServer::description(skills),
                "inputSchema": {"type": "object", "properties": {
                    "plan": plan,
                    "arguments": {"type": "object", "description": "The plan's arguments (REF:arguments.NAME)."}},
                    "required": ["plan"]},
            }),
        ]
    }

    /// `resources/list`.
    pub fn resources() -> Json {
        json!({"resources": [
            {"uri": GUIDE_URI, "name": "guide", "title": "How to write a tdsl plan",
             "description": "REFs, transforms, every function, conditions, fan-out, transform steps, and four worked plans.",
             "mimeType": "text/markdown", "size": GUIDE.len()},
            {"uri": TOOLS_URI, "name": "tools", "title": "Tools a plan may call",
             "description": "Every callable tool (served and upstream) with typed arguments and responses.",
             "mimeType": "text/markdown"},
        ]})
    }

    /// `resources/read` of `uri`, or `None` for an unknown one. Blocking for `tdsl://tools`.
    pub fn read(&self, uri: &str) -> Option<Json> {
        let (text, mime) = self.read_text(uri)?;
        Some(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}))
    }

    /// The text of resource `uri` and its MIME type, or `None` for an unknown one. Blocking
    /// for `tdsl://tools`.
    fn read_text(&self, uri: &str) -> Option<(String, &'static str)> {
        match uri {
            GUIDE_URI => Some((GUIDE.to_string(), "text/markdown")),
            TOOLS_URI => Some((self.tools_listing(), "text/markdown")),
            super::skills::SKILLS_URI => Some((super::skills::resource(&self.skills), "application/json")),
            _ => None,
        }
    }

    /// `prompts/list`.
    pub fn prompts() -> Json {
        json!({"prompts": [{
            "name": PLAN_PROMPT,
            "title": "Write a tdsl plan",
            "description": "Asks for a tdsl plan that does a task with the callable tools, with the guide and the tools in the message.",
            "arguments": [{"name": "task", "description": "What the plan should do.", "required": true}],
        }]})
    }

    /// `prompts/get` of `plan` with `task`: a user message with the task, the condensed
    /// guide and the tools. Blocking (lists the upstream servers).
    pub fn prompt(&self, task: &str) -> Json {
        prompt_message(self.prompt_text(task))
    }

    /// The text of [`PlanServer::prompt`]'s message. Blocking.
    fn prompt_text(&self, task: &str) -> String {
        format!(
            "Write a tdsl plan that does this task, then check it with the `check_plan` tool, fix what it reports, and run it \
             with `run_plan`.\n\nTask: {task}\n\nHow to write a plan (the full guide is the resource {GUIDE_URI}):\n\n\
             {RUN_PLAN_DESCRIPTION}\n\n{}",
            self.tools_listing()
        )
    }

    /// What `serve --compose`'s composer plans with ([`crate::compose::sampling`]): the plan
    /// core over the served tools and every upstream server's tools (each listed, so started,
    /// now), the names a tool mapping may use, the tools listing the model reads
    /// (`tdsl://tools`) and `run_plan`'s runner. Blocking.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn compose_parts(&self) -> (PlanDesk, Vec<Callable>, String, Arc<dyn Runner>) {
        let (mut plans, _) = self.core(&Json::Null);
        let mut callable = self.callable();
        let mut tools = Vec::new();
        for (server, listed) in self.upstreams.all_tools() {
            // A server that cannot be listed is named in the listing; its tools are unknown.
            tools.extend(listed.unwrap_or_default().iter().filter_map(|t| upstream_tool(&server, t)));
        }
        callable.extend(tools.iter().map(|t| Callable { name: format!("{}/{}", t.server, t.name), tool_path: None }));
        if !tools.is_empty() {
            plans = plans.with_upstream(tools);
        }
        let runner: Arc<dyn Runner> = Arc::new(UpstreamRunner::new(
            super::served::host_runner(&self.tool_env, self.max_tool_values),
            self.upstreams.clone(),
        ));
        (plans, callable, self.tools_listing(), runner)
    }
}

/// The server's capabilities and instructions with plans on: tools, logging, resources and
/// prompts.
#[allow(deprecated)] // logging: SEP-2577 deprecates it, MCP 2025-11-25 clients use it
pub(super) fn server_config(skills: bool) -> ServerConfig {
    let capabilities =
        ServerCapabilities::builder().enable_logging().enable_prompts().enable_resources().enable_tools();
    // With skills the tools change while a client is connected (`notifications/tools/list_changed`).
    let capabilities = if skills { capabilities.enable_tool_list_changed().build() } else { capabilities.build() };
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new("tdsl", env!("CARGO_PKG_VERSION")))
        .with_instructions(
        "Composite tools defined in .tool files, run by the tdsl engine, and plans: instead of calling tools one at a \
         time, write one tdsl plan that calls them and send it to run_plan (check_plan checks it). Read the resource \
         tdsl://guide for how to write a plan and tdsl://tools for the tools a plan may call.",
    )
}

/// The `prompts/get` result of the prompt `plan` whose message is `text`.
fn prompt_message(text: String) -> Json {
    json!({
        "description": "A tdsl plan for a task",
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    })
}

fn from_json<T: serde::de::DeserializeOwned>(v: Json) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// `resources/list`: the guide and the tools with plans on, none without.
pub(super) fn list_resources(on: bool, skills: bool) -> Result<ListResourcesResult, McpError> {
    let mut list = if on { PlanServer::resources() } else { json!({"resources": []}) };
    if let (true, Some(all)) = (skills, list["resources"].as_array_mut()) {
        all.push(super::skills::resource_entry());
    }
    from_json(list)
}

/// `resources/read`: `tdsl://guide`, `tdsl://tools` or `tdsl://skills` (read off the async
/// runtime: the listing may start upstream servers), made within `making`'s bounds (a large
/// text held and given as its mark, tied to `stream` over HTTP); any other URI is the error
/// `-32002`. Gives up when `stop` completes first.
pub(super) async fn read_resource(
    plans: Option<Arc<PlanServer>>,
    uri: String,
    making: &super::making::Making,
    stream: Option<super::spliced::Stream>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<ReadResourceResponse, McpError> {
    let Some(plans) = plans else {
        return Err(McpError::resource_not_found(format!("no resource `{uri}`: this server offers none"), None));
    };
    let read = if uri == GUIDE_URI {
        // A text of the binary, 16 KB: nothing to make, so it never waits behind the others.
        plans.read_text(&uri)
    } else {
        let uri = uri.clone();
        making.make(move || plans.read_text(&uri), stop).await.map_err(|e| not_made(e, "reading the resource"))?
    };
    match read {
        Some((text, mime)) => {
            tie(stream.as_ref(), &text);
            Ok(from_json::<ReadResourceResult>(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}))?
                .into())
        }
        None => Err(McpError::resource_not_found(
            format!("no resource `{uri}`; the resources are {GUIDE_URI} and {TOOLS_URI}"),
            Some(json!({"uri": uri})),
        )),
    }
}

/// Ties `text`, when it is a mark, to the HTTP response its answer goes out on.
fn tie(stream: Option<&super::spliced::Stream>, text: &str) {
    if let Some(stream) = stream {
        stream.tie_mark(text);
    }
}

/// The error of an answer `what` that was not made.
fn not_made(why: super::making::NotMade, what: &str) -> McpError {
    match why {
        super::making::NotMade::Stopped => McpError::internal_error("cancelled", None),
        super::making::NotMade::Panicked(e) => McpError::internal_error(format!("{what} panicked: {e}"), None),
    }
}

/// `prompts/list`: the prompt `plan` with plans on, none without.
pub(super) fn list_prompts(on: bool) -> Result<ListPromptsResult, McpError> {
    from_json(if on { PlanServer::prompts() } else { json!({"prompts": []}) })
}

/// `prompts/get` of `plan` with its `task`, made as [`read_resource`] makes its answer.
pub(super) async fn get_prompt(
    plans: Option<Arc<PlanServer>>,
    request: GetPromptRequestParams,
    making: &super::making::Making,
    stream: Option<super::spliced::Stream>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<GetPromptResponse, McpError> {
    let plans = plans.filter(|_| request.name == PLAN_PROMPT).ok_or_else(|| {
        McpError::invalid_params(format!("no prompt named `{}`; the prompt is `{PLAN_PROMPT}`", request.name), None)
    })?;
    let task = match request.arguments.as_ref().and_then(|a| a.get("task")) {
        Some(Json::String(t)) if !t.trim().is_empty() => t.clone(),
        _ => {
            return Err(McpError::invalid_params(
                "the prompt `plan` needs the argument `task`: what the plan should do",
                None,
            ))
        }
    };
    let made =
        making.make(move || Some((plans.prompt_text(&task), ())), stop).await.map_err(|e| not_made(e, "the prompt"))?;
    let text = made.map(|(t, ())| t).unwrap_or_default();
    tie(stream.as_ref(), &text);
    Ok(from_json::<GetPromptResult>(prompt_message(text))?.into())
}

/// The upstream servers whose tools checking a plan needs: for each step that names a tool
/// that is not served, its server when it is written `NAME/TOOL` with an upstream `NAME`, and
/// every server for any other unknown name (a tool named without its server, a misspelt
/// one), so that the nearest names include theirs. None when every step names a served tool.
fn upstreams_needed<'a>(plan: &Json, names: &[&'a str], served: &[Callable]) -> Vec<&'a str> {
    let Some(steps) = plan.get("instructions").and_then(Json::as_array) else { return Vec::new() };
    let mut needed: Vec<&'a str> = Vec::new();
    for path in steps.iter().filter_map(|s| s.get("tool_definition_path").and_then(Json::as_str)) {
        if served.iter().any(|c| c.name == path || c.tool_path.as_deref() == Some(path)) {
            continue;
        }
        match path.split_once('/').and_then(|(n, _)| names.iter().find(|m| **m == n)) {
            Some(name) if !needed.contains(name) => needed.push(name),
            Some(_) => {}
            None => return names.to_vec(),
        }
    }
    needed
}

/// The `plan` argument. An object is the plan; a string is taken as the plan's JSON text
/// (diagnostics then point into it as written); any other value goes to the check too, which
/// says that a plan is an object.
fn plan_argument(arguments: &Json) -> Result<&Json, String> {
    match arguments.get("plan") {
        Some(p) => Ok(p),
        None => Err("the argument `plan` is missing: send {\"plan\": {\"instructions\": [...]}}".to_string()),
    }
}

/// The text the diagnostics point into: a string as it is, anything else as pretty JSON
/// within the size limit, compact past it (as the core's `check_value` writes it): a plan
/// is never pretty-printed past the limit before it is refused.
fn plan_text(plan: &Json, max_bytes: usize) -> String {
    match plan {
        Json::String(text) => text.clone(),
        other => crate::plans::plan_text(other, max_bytes),
    }
}

pub(super) fn add_problems(out: &mut Json, problems: &[String]) {
    if !problems.is_empty() {
        out["upstream_problems"] = json!(problems);
    }
}

/// A check's text block: a line of counts, each rendered diagnostic, and the levels.
pub(super) fn summary_text(check: &crate::plans::PlanCheck, problems: &[String]) -> String {
    let (errors, warnings) = check.counts();
    let mut text = if check.ok() {
        format!("the plan checks: {warnings} warning(s)")
    } else {
        format!("the plan has {errors} error(s) and {warnings} warning(s)")
    };
    for d in &check.diagnostics {
        let pointer = if d.pointer.is_empty() { "/" } else { &d.pointer };
        text.push_str(&format!(
            "\n\n{} at {pointer}:\n{}",
            if d.severity == crate::diagnostic::Severity::Error { "error" } else { "warning" },
            d.rendered.trim_end()
        ));
    }
    if let (Some(levels), Some(ty)) = (&check.levels, &check.result_type) {
        let levels: Vec<String> = levels.iter().map(|l| l.join(", ")).collect();
        text.push_str(&format!("\nlevels: {}\nresult: {ty}", levels.join(" → ")));
    }
    if check.omitted() > 0 {
        text.push_str(&format!("\n\n… and {} more diagnostics, not shown: fix these first", check.omitted()));
    }
    for p in problems {
        text.push_str(&format!("\nnote: {p}"));
    }
    text
}

/// The text block of `run_plan`'s answer, what a model reads: the answer as compact JSON
/// (indentation would be a third of its tokens, and says nothing a model needs).
pub fn answer_text(answer: &Json) -> String {
    answer.to_string()
}

/// `{status, result, steps, failure_summary?}` of a run as compact JSON, written from its
/// values (the same text as [`answer_text`] of [`crate::plans::PlanRun::to_json`]); `None`
/// when the result's JSON is over `max_result_bytes`.
fn run_text(run: &crate::plans::PlanRun, max_result_bytes: usize) -> Option<String> {
    let result = match &run.result {
        Some(r) => crate::value::to_json_at_most(r, max_result_bytes)?,
        None => "null".to_string(),
    };
    let steps = serde_json::to_string(&run.steps).ok()?;
    let mut text = String::with_capacity(result.len() + steps.len() + 64);
    text.push_str("{\"status\":");
    text.push_str(&Json::from(run.status.as_str()).to_string());
    text.push_str(",\"result\":");
    text.push_str(&result);
    drop(result);
    text.push_str(",\"steps\":");
    text.push_str(&steps);
    if let Some(s) = &run.failure_summary {
        text.push_str(",\"failure_summary\":");
        text.push_str(&Json::from(s.as_str()).to_string());
    }
    text.push('}');
    Some(text)
}

pub(super) fn structured(content: Json, text: String, is_error: bool) -> Json {
    json!({"content": [{"type": "text", "text": text}], "structuredContent": content, "isError": is_error})
}

/// One served tool in `tdsl://tools`.
pub(super) fn served_line(s: &Served) -> String {
    let def = &s.def;
    let args: Vec<String> = def
        .arguments
        .iter()
        .map(|p| format!("{}: {}{}", p.name.node, p.type_or_any(), if p.is_required() { "!" } else { "" }))
        .collect();
    let mut line = format!("- `{}({})`", s.name, args.join(", "));
    let responses: Vec<String> =
        def.responses.iter().map(|p| format!("{}: {}", p.name.node, p.type_or_any())).collect();
    if !responses.is_empty() {
        line.push_str(&format!(" → `{{{}}}`", responses.join(", ")));
    } else if let ToolKind::Composite { .. } = def.kind {
        line.push_str(" → `object`");
    }
    if let Some(d) = def.description.as_ref().map(|d| d.node.trim()).filter(|d| !d.is_empty()) {
        line.push_str(&format!(": {d}"));
    }
    line.push('\n');
    line
}

/// One upstream tool in `tdsl://tools`, from its schemas read whole
/// ([`UpstreamTool::listing_line`]), its first line ending with what its MCP annotations
/// (`listed`, its `Tool` object) say of calling it twice: `[read-only]` or `[idempotent]`
/// (retried by default), `[destructive]` (docs/plans.md, "Retries").
fn upstream_line(t: &UpstreamTool, listed: &Json) -> String {
    let line = t.listing_line();
    let hint = |key: &str| listed.get("annotations").and_then(|a| a.get(key)) == Some(&Json::Bool(true));
    let mark = if hint("readOnlyHint") {
        " [read-only]"
    } else if hint("idempotentHint") {
        " [idempotent]"
    } else if hint("destructiveHint") {
        " [destructive]"
    } else {
        return line;
    };
    match line.split_once('\n') {
        Some((first, rest)) => format!("{first}{mark}\n{rest}"),
        None => format!("{line}{mark}"),
    }
}

/// The run's observer, with the run recorded as the plan itself: its `RunStarted` names
/// `run_plan` and carries `{plan, arguments}`, so that the history keeps the plan.
struct PlanRecorded {
    inner: Arc<dyn Observer>,
    plan: Json,
    args: Json,
    /// The tool the run is recorded as: `run_plan`, or a skill's name.
    tool: String,
    /// A skill's name and version, recorded as `skill` (null for `run_plan`).
    skill: Json,
}

impl Observer for PlanRecorded {
    fn event(&self, event: &Event<'_>) {
        if let Event::RunStarted { run_id, started_at, .. } = event {
            let mut recorded = json!({"plan": self.plan, "arguments": self.args});
            if !self.skill.is_null() {
                recorded["skill"] = self.skill.clone();
            }
            let recorded: Value = serde_json::from_value(recorded).unwrap_or(Value::Null);
            self.inner.event(&Event::RunStarted { run_id, tool: &self.tool, arguments: &recorded, started_at });
            return;
        }
        // A skill's trace names the skill and its version (the history's report draws it so).
        if let (Event::RunEnded { trace }, false) = (event, self.skill.is_null()) {
            let mut named = (*trace).clone();
            named.tool.clone_from(&self.tool);
            self.inner.event(&Event::RunEnded { trace: &named });
            return;
        }
        self.inner.event(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most characters the guide may have (SPEC §13).
    const GUIDE_LIMIT: usize = 16_000;
    /// The most characters `run_plan`'s description may have (SPEC §13).
    const DESCRIPTION_LIMIT: usize = 2_500;

    #[test]
    fn the_guide_and_the_description_keep_their_limits() {
        assert!(GUIDE.chars().count() <= GUIDE_LIMIT, "the guide has {} characters", GUIDE.chars().count());
        for skills in [false, true] {
            let d = PlanServer::description(skills);
            assert!(
                d.chars().count() <= DESCRIPTION_LIMIT,
                "run_plan's description has {} characters",
                d.chars().count()
            );
            assert_eq!(d.contains("save_skill"), skills, "{d}");
            assert!(d.ends_with("Read tdsl://guide (worked plans) and tdsl://tools (the tools)."), "{d}");
        }
    }

    #[test]
    fn the_guide_names_every_function() {
        let table = crate::functions::FunctionTable::builtins();
        let missing: Vec<&str> = table.names().filter(|n| !GUIDE.contains(&format!("{n}("))).collect();
        assert!(missing.is_empty(), "the guide does not describe {missing:?}");
    }

    #[test]
    fn plans_name_upstream_servers() {
        let served = [Callable { name: "echo".into(), tool_path: Some("/tools/echo.tool".into()) }];
        let needed = |plan: Json, names: &[&'static str]| upstreams_needed(&plan, names, &served);
        let two = ["docs", "web"];
        assert_eq!(needed(json!({"instructions": [{"tool_definition_path": "docs/upper"}]}), &two), ["docs"]);
        assert!(needed(json!({"instructions": [{"tool_definition_path": "docs/upper"}]}), &[]).is_empty());
        let served_only =
            json!({"instructions": [{"tool_definition_path": "/tools/echo.tool"}, {"tool_definition_path": "echo"}]});
        assert!(needed(served_only, &two).is_empty());
        assert_eq!(needed(json!({"instructions": [{"tool_definition_path": "upper"}]}), &two), two);
        assert_eq!(needed(json!({"instructions": [{"tool_definition_path": "dcs/upper"}]}), &two), two);
    }

    #[test]
    fn upstream_tools_are_listed_with_their_types() {
        let mut listed = json!({"name": "upper", "description": "Upper-cases\nmore", "inputSchema": {"type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]},
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}});
        let t = upstream_tool("docs", &listed).expect("a tool");
        // The whole description; a response the schema does not require may be absent (`?`).
        assert_eq!(
            upstream_line(&t, &listed),
            "- `docs/upper(text: string!, n: integer)` → `{text?: string}`: Upper-cases\n  more\n"
        );
        // What its annotations say of calling it twice ends its first line.
        for (annotations, mark) in [
            (json!({"readOnlyHint": true, "destructiveHint": true}), "[read-only]"),
            (json!({"idempotentHint": true}), "[idempotent]"),
            (json!({"readOnlyHint": false, "destructiveHint": true}), "[destructive]"),
        ] {
            listed["annotations"] = annotations;
            let line = upstream_line(&t, &listed);
            assert!(
                line.starts_with(&format!(
                    "- `docs/upper(text: string!, n: integer)` → `{{text?: string}}`: Upper-cases {mark}\n"
                )),
                "{line}"
            );
        }
    }

    /// A plan's large answer is held as one text, not a tree of JSON values: what the
    /// server hands rmcp is a few hundred bytes of marks, whatever the result's size, and
    /// the library's caller gets the values (hostile round 13).
    #[test]
    fn a_large_plan_answer_is_one_text_marked_for_the_output() {
        let root = tempfile::tempdir().expect("tempdir");
        let (server, _) = crate::mcp::McpServer::load(root.path(), &[]).expect("the server");
        let options = PlanOptions { limits: PlanLimits::default(), files: None };
        let server = server.with_plans(options, Arc::new(Upstreams::new(Vec::new())));
        let mut transforms = serde_json::Map::new();
        transforms.insert("x0".into(), json!("[1]"));
        for i in 1..=15 {
            transforms.insert(format!("x{i}"), json!(format!("[x{}, x{}]", i - 1, i - 1)));
        }
        let plan = json!({"instructions": [{"execution_id": "g", "transform_responses": {"transforms": transforms}}],
            "response_reference_map": {"v": "REF:g.x15"}});
        let plans = server.plans.clone().expect("plans");
        let marked = plans.run_plan_marked(&json!({"plan": plan}), &CancelToken::new(), None);
        assert!(marked.to_string().len() < 400, "{}", &marked.to_string()[..400.min(marked.to_string().len())]);
        let sent = super::super::spliced::splice(
            json!({"jsonrpc": "2.0", "id": 1, "result": marked}).to_string().into_bytes(),
        );
        let sent: Json = serde_json::from_slice(&sent).expect("JSON");
        let answer = &sent["result"];
        assert_eq!(answer["structuredContent"]["status"], "SUCCESS");
        let text: Json = serde_json::from_str(answer["content"][0]["text"].as_str().expect("text")).expect("JSON");
        assert_eq!(text, answer["structuredContent"]);
        assert!(text.to_string().len() > super::super::spliced::SPLICED_FROM);
        // The library's caller gets the values.
        let whole = server.call(RUN_PLAN, json!({"plan": plan})).expect("answered");
        assert_eq!(whole["structuredContent"]["result"], answer["structuredContent"]["result"]);
    }

    /// A `check_plan` call cancelled before its check ends (here before it starts) stops
    /// it and answers the error `E0407`, never the plan's verdict: the call's thread
    /// comes back at the check's next poll, and the slot or leftover place it holds with it.
    #[test]
    fn a_cancelled_check_plan_stops_its_check() {
        let root = tempfile::tempdir().expect("tempdir");
        let (server, _) = crate::mcp::McpServer::load(root.path(), &[]).expect("the server");
        let options = PlanOptions { limits: PlanLimits::default(), files: None };
        let server = server.with_plans(options, Arc::new(Upstreams::new(Vec::new())));
        let plan = json!({"instructions": [{"execution_id": "s",
            "transform_responses": {"variables": {}, "transforms": {"x": "1"}}}],
            "response_reference_map": {"r": "REF:s.x"}});
        let checks = server.call_with(CHECK_PLAN, json!({"plan": plan}), &CancelToken::new(), None).expect("answered");
        assert_eq!(checks["isError"], false, "{checks}");
        let cancel = CancelToken::new();
        cancel.cancel();
        let answer = server.call_with(CHECK_PLAN, json!({"plan": plan}), &cancel, None).expect("answered");
        assert_eq!(answer["isError"], true, "{answer}");
        assert_eq!(answer["structuredContent"]["ok"], false, "{answer}");
        assert!(answer.to_string().contains("E0407"), "{answer}");
    }
}
