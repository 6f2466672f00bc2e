//! Plans written by language models (SPEC §13): a composite tool object sent inline, checked
//! against the tools a model may call, explained where it is wrong, and run.
//!
//! Not to be confused with [`crate::analysis::Plan`], the *execution plan* (steps in
//! levels) the analysis makes of any checked composite: a plan here is what a model wrote,
//! and checking it gives, among the rest, that execution plan's levels.
//!
//! A plan names tools as the model was shown them: the served name (`tdsl export` and
//! `serve --mcp` naming, [`crate::export::export_names`]) or the tool path under the root
//! (`/tools/summarize.tool`); `SERVER/TOOL` for a tool of an upstream MCP server, given as
//! data ([`UpstreamTool`]: its input and output schemas). It cannot define a primitive tool,
//! and may call only the callable tools: those of [`Plans`] (after its allow globs) and the
//! upstream ones. The checking is the analysis of `tdsl check` ([`Analyzer`]) over the plan's
//! text, with the names resolved first ([`ToolRoot::alias`]), plus the plan's own checks:
//! limits ([`PlanLimits`]), callable tools, and the mistakes models make (`E13xx`/`W13xx`,
//! `docs/plans.md`). Every diagnostic is located by a JSON pointer into the plan and, inside a
//! string, the character range of the offending text ([`PlanDiagnostic`]).
//!
//! ```
//! use tdsl::Plans;
//!
//! let plans = Plans::for_root("examples/document-analysis", &["/tools/**"]).unwrap();
//! // A model wrote a placeholder of another plan format.
//! let plan = r#"{
//!   "instructions": [
//!     {"execution_id": "check", "tool_definition_path": "document_validator",
//!      "arguments": {"file_paths": ["a.txt"]}},
//!     {"execution_id": "info", "tool_definition_path": "basic_extractor",
//!      "arguments": {"document_path": "{{check.valid_documents[0]}}"}}
//!   ]
//! }"#;
//! let checked = plans.check(plan);
//! assert!(!checked.ok());
//! let d = &checked.diagnostics[0];
//! assert_eq!(d.code, "E1311");
//! assert_eq!(d.pointer, "/instructions/1/arguments/document_path");
//! assert_eq!(d.range, Some([0, 28]));
//! assert!(d.help.as_deref().unwrap().contains("\"REF:check.valid_documents.0\""));
//!
//! // Repaired, it checks: its levels and the type of its result come back.
//! let checked = plans.check(&plan.replace("{{check.valid_documents[0]}}", "REF:check.valid_documents.0"));
//! assert!(checked.ok(), "{}", checked.render());
//! assert_eq!(checked.levels.as_ref().unwrap(), &[vec!["check".to_string()], vec!["info".to_string()]]);
//! ```

mod literal;
mod locate;
#[cfg(feature = "engine")]
mod run;
// Saved plans (`serve --skills`): only the MCP server keeps them.
#[cfg(feature = "mcp")]
pub mod skills;
mod upstream;

use crate::tool::mistakes;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use locate::{locate, Location};
#[cfg(feature = "engine")]
pub use run::{PlanRefused, PlanRun, PlanStep, RunPlanOptions};
#[cfg(feature = "mcp")]
pub(crate) use upstream::untranslatable;
pub use upstream::{upstream_target, UpstreamTool};

use crate::analysis::{Analyzer, CheckedTool, LoadedTool, MissingCallees, Resolved, ToolRoot, TypeAtKind};
use crate::diagnostic::{did_you_mean, Code, Diagnostic, Severity};
use crate::engine::Engine;
use crate::ranges::{self, RangeError};
use crate::runtime::Limits;
use crate::span::Span;
use crate::tool::{JsonNode, LineIndex};
use crate::types::Type;

/// The limits a plan is checked and run under (SPEC §13), each with its range
/// ([`crate::ranges`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PlanLimits {
    /// The most bytes of plan text (256 KiB): a larger plan is refused before it is parsed.
    pub max_bytes: usize,
    /// The deepest nesting of the plan's JSON (64 levels).
    pub max_nesting: usize,
    /// The most steps (64).
    pub max_steps: usize,
    /// The most children of one parallel step (1,000): a literal list is checked before the
    /// run, a list a REF gives when the step fans out (the executor's guard, `E0809`).
    pub max_fan_out: usize,
    /// The whole run's deadline, in seconds (120, phase 3's target in seed 000).
    pub deadline_seconds: f64,
    /// The most calls of a run, fan-out children and composite callees' steps included
    /// (100,000; `E0816` past it).
    pub max_calls_per_run: usize,
    /// The most bytes of a run's result as compact JSON (64 MiB; `E0817` past it).
    pub max_result_bytes: usize,
    /// The expression budgets (fuel, depth, sizes; SPEC §4.8).
    pub expression: Limits,
}

impl Default for PlanLimits {
    fn default() -> PlanLimits {
        PlanLimits {
            max_bytes: 256 * 1024,
            max_nesting: 64,
            max_steps: 64,
            max_fan_out: 1000,
            deadline_seconds: 120.0,
            max_calls_per_run: ranges::SERVE_MAX_CALLS_PER_RUN,
            max_result_bytes: ranges::SERVE_MAX_RESULT_BYTES,
            expression: Limits::default(),
        }
    }
}

impl PlanLimits {
    /// Every limit in its range.
    pub fn validate(&self) -> Result<(), RangeError> {
        ranges::PLAN_BYTES.check(self.max_bytes as f64)?;
        ranges::PLAN_NESTING.check(self.max_nesting as f64)?;
        ranges::PLAN_STEPS.check(self.max_steps as f64)?;
        ranges::MAX_FAN_OUT.check(self.max_fan_out as f64)?;
        ranges::DEADLINE_SECONDS.check(self.deadline_seconds)?;
        ranges::MAX_CALLS_PER_RUN.check(self.max_calls_per_run as f64)?;
        ranges::MAX_RESULT_BYTES.check(self.max_result_bytes as f64)?;
        self.expression.validate()
    }
}

/// A tool a plan may call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Callable {
    /// The name a model is shown: the served name, or `SERVER/TOOL`.
    pub name: String,
    /// The tool path under the root (`/tools/summarize.tool`); `None` for an upstream tool.
    pub tool_path: Option<String>,
}

/// The tools plans may call and the limits they run under: check and run plans with it.
#[derive(Clone, Debug)]
pub struct Plans {
    root: PathBuf,
    /// Served tools: name and tool path, in the order given.
    served: Vec<Callable>,
    /// The upstream tools, each found by one lookup of its `SERVER/TOOL`, not a scan of
    /// every tool (a server may list tens of thousands); shared with the checks' tool roots.
    upstream: Arc<upstream::UpstreamIndex>,
    /// Each upstream server's tools as plans call them (`SERVER/TOOL`).
    upstream_names: HashMap<String, Vec<String>>,
    limits: PlanLimits,
    engine: Engine,
    /// Whether the file functions have a store.
    files: bool,
}

pub use crate::tool::tool_globs;

impl Plans {
    /// The tools under `root` whose tool paths match one of `allow` (every tool when `allow`
    /// is empty) and that load without errors, named as `serve --mcp` names them. The
    /// error names an invalid glob or a root that cannot be read.
    pub fn for_root<S: AsRef<str>>(root: impl Into<PathBuf>, allow: &[S]) -> Result<Plans, String> {
        let root = root.into();
        let globs = tool_globs(allow)?;
        let tool_root = ToolRoot::new(&root);
        let files = crate::analysis::tool_files_under(&root).map_err(|(d, e)| format!("{}: {e}", d.display()))?;
        let mut paths = Vec::new();
        for file in files {
            let Some(tool_path) = tool_root.tool_path_of(&file) else { continue };
            if !allow.is_empty() && !globs.is_match(&tool_path) {
                continue;
            }
            let Ok(text) = crate::input::read_text(&file) else { continue };
            let (def, diags) = crate::tool::load(&text);
            if def.is_some() && !diags.iter().any(Diagnostic::is_error) {
                paths.push(tool_path);
            }
        }
        let names = crate::export::export_names(&paths);
        let served = names.into_iter().zip(paths).map(|(name, p)| Callable { name, tool_path: Some(p) }).collect();
        Ok(Plans::with_served(root, served))
    }

    /// The tools a server already chose and named (`serve --mcp --plans` passes its own):
    /// each [`Callable`] with its tool path under `root`.
    pub fn with_served(root: impl Into<PathBuf>, served: Vec<Callable>) -> Plans {
        let root = root.into();
        Plans {
            upstream: Arc::new(upstream::UpstreamIndex::new(root.clone())),
            root,
            served: served.into_iter().filter(|c| c.tool_path.is_some()).collect(),
            upstream_names: HashMap::new(),
            limits: PlanLimits::default(),
            engine: Engine::new(),
            files: false,
        }
    }

    /// Adds the tools of upstream MCP servers (`SERVER/TOOL`).
    pub fn with_upstream(mut self, tools: Vec<UpstreamTool>) -> Plans {
        let index = Arc::make_mut(&mut self.upstream);
        for t in tools {
            index.at.entry(t.plan_name()).or_insert(index.tools.len());
            self.upstream_names.entry(t.server.clone()).or_default().push(t.plan_name());
            index.tools.push(t);
        }
        self
    }

    /// Replaces the limits (check them with [`PlanLimits::validate`] first: a plan is
    /// checked and run with whatever is given).
    pub fn with_limits(mut self, limits: PlanLimits) -> Plans {
        self.engine = self.engine.with_limits(limits.expression.clone());
        self.limits = limits;
        self
    }

    /// Gives plans' expressions a file store (`serve --files DIR`): without one, a plan that
    /// uses a file function is refused (`E1310`).
    pub fn with_file_store(mut self, store: Arc<dyn crate::files::FileStore>) -> Plans {
        self.engine = self.engine.with_file_store(store);
        self.files = true;
        self
    }

    /// The tool root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits.
    pub fn limits(&self) -> &PlanLimits {
        &self.limits
    }

    /// The upstream tools.
    pub fn upstream(&self) -> &[UpstreamTool] {
        &self.upstream.tools
    }

    /// Every tool a plan may call: the served ones, then the upstream ones.
    pub fn callable(&self) -> Vec<Callable> {
        let up = self.upstream.tools.iter().map(|u| Callable { name: u.plan_name(), tool_path: None });
        self.served.iter().cloned().chain(up).collect()
    }

    /// The definition of a callable tool, by the name a plan calls it (what a tool listing
    /// shows: its arguments and responses): a served tool's file, an upstream tool's
    /// schemas as declarations. `None` for a name that is not callable or does not load.
    pub fn definition(&self, name: &str) -> Option<crate::tool::ToolDef> {
        if let Some(u) = self.upstream.get(name) {
            return crate::tool::load(&u.tool_source()).0;
        }
        let c = self.served.iter().find(|c| c.name == name)?;
        match ToolRoot::new(&self.root).resolve(c.tool_path.as_deref()?) {
            Resolved::Found(t) => t.def.clone(),
            _ => None,
        }
    }

    /// Checks a plan given as JSON text.
    pub fn check(&self, plan: &str) -> PlanCheck {
        self.check_with(plan, self.engine.clone()).0
    }

    /// Checks a plan given as a JSON value (an MCP argument): its compact JSON text is what
    /// the diagnostics point into.
    pub fn check_value(&self, plan: &serde_json::Value) -> PlanCheck {
        self.check(&plan_text(plan, self.limits.max_bytes))
    }

    /// The steps a checked plan's steps wait for (through REFs or `dependencies`): each
    /// execution id with the ids it depends on, in plan order; `None` when the plan has an
    /// error. The composer (`tdsl compose`) reports them as seed 000's `depends_on_steps`.
    pub fn dependencies(&self, plan: &str) -> Option<Vec<(String, Vec<String>)>> {
        let (check, ready) = self.check_with(plan, self.engine.clone());
        let (_, checked) = ready.filter(|_| check.ok())?;
        let plan = checked.plan.as_ref()?;
        Some(
            plan.steps
                .iter()
                .map(|s| {
                    let deps = s.depends_on.iter().map(|d| plan.steps[d.0].execution_id.to_string()).collect();
                    (s.execution_id.to_string(), deps)
                })
                .collect(),
        )
    }

    /// The check of a plan of `len` bytes that is too large to be read (`E1301`), or `None`
    /// when it is within the limit: for a caller that has not read it yet (a file).
    pub fn refuse_size(&self, len: u64) -> Option<PlanCheck> {
        (len > self.limits.max_bytes as u64).then(|| self.too_large(Some(len)))
    }

    /// The refusal of a plan found larger than the limit while it was read (a file that grew
    /// after its size was taken, or that reports no size): its exact size is not known.
    pub fn refuse_read_past_limit(&self) -> PlanCheck {
        self.too_large(None)
    }

    fn too_large(&self, len: Option<u64>) -> PlanCheck {
        let max = self.limits.max_bytes;
        let message = match len {
            Some(len) => format!("the plan is {len} bytes, more than the limit of {max} bytes"),
            None => format!("the plan is more than the limit of {max} bytes"),
        };
        let d = Diagnostic::new(Code::PlanTooLarge, Span::new(0, 0), message)
        .with_label("not read")
        .with_help("a plan is a short program: fan out over a list with `parallel_execution` instead of writing steps out, and pass data as arguments");
        PlanCheck::finish(Arc::from(""), None, vec![d], None)
    }

    /// The check, and what a run needs.
    fn check_with(&self, text: &str, engine: Engine) -> (PlanCheck, Option<(Analyzer, CheckedTool)>) {
        // However many names the plan misspells, its "did you mean"s share one allowance.
        let _allowance = crate::suggest::limit_suggestions(MAX_SUGGESTION_WORK);
        if let Some(refused) = self.refuse_size(text.len() as u64) {
            return (refused, None);
        }
        let source: Arc<str> = Arc::from(text);
        if let Some(d) = too_deep(text, self.limits.max_nesting) {
            return (PlanCheck::finish(source, None, vec![d], None), None);
        }
        let (tree, json_diags) = crate::tool::json::parse(text);
        let Some(tree) = tree else {
            let diags = json_diags.into_iter().map(|d| python_in_json(d, text)).collect();
            return (PlanCheck::finish(source, None, diags, None), None);
        };
        let Some(entries) = tree.as_object() else {
            let mut d = Diagnostic::new(
                Code::PlanNotObject,
                tree.span,
                format!("a plan is a JSON object, and this is {}", article(tree.type_name())),
            )
            .with_label("not an object")
            .with_help("send {\"instructions\": [{\"execution_id\": \"…\", \"tool_definition_path\": \"<tool>\", \"arguments\": {…}}, …]}");
            if let Some(inner) = tree.as_str() {
                d = plan_sent_as_a_string(d, inner);
            }
            return (PlanCheck::finish(source, Some(tree), vec![d], None), None);
        };
        let mut diags = json_diags;
        if let Some((key, _)) = entries.iter().find(|(k, _)| k.node == "system_event_endpoint") {
            diags.push(
                Diagnostic::new(
                    Code::PlanDefinesPrimitive,
                    key.span,
                    "a plan cannot define a primitive tool: it calls the tools it is given",
                )
                .with_label("a primitive tool's endpoint")
                .with_help("remove `system_event_endpoint` and call a callable tool from `instructions`"),
            );
            return (PlanCheck::finish(source, Some(tree), diags, None), None);
        }
        let instructions: &[JsonNode] =
            entries.iter().find(|(k, _)| k.node == "instructions").and_then(|(_, v)| v.as_list()).unwrap_or_default();
        if instructions.len() > self.limits.max_steps {
            let extra = &instructions[self.limits.max_steps];
            diags.push(
                Diagnostic::new(
                    Code::PlanTooManySteps,
                    extra.span,
                    format!(
                        "the plan has {} steps, more than the limit of {}",
                        instructions.len(),
                        self.limits.max_steps
                    ),
                )
                .with_label(format!("step {} of at most {}", self.limits.max_steps + 1, self.limits.max_steps))
                .with_help("fan out over a list with `parallel_execution` instead of writing one step per element"),
            );
            return (PlanCheck::finish(source, Some(tree), diags, None), None);
        }

        // Names: resolve every tool_definition_path as the model wrote it.
        let mut root = ToolRoot::with_policy(&self.root, MissingCallees::Skip);
        // The composites a plan calls (a skill) name upstream tools as the plan does.
        if !self.upstream.tools.is_empty() {
            root = root.with_named(self.upstream.clone());
        }
        // The names an unknown tool is compared with, gathered once for the whole plan.
        let candidates = std::cell::OnceCell::new();
        // Each tool as written, and the one name it has in a run (its tool path, or
        // `SERVER/TOOL`): what `TDSL_TOOL`, `X-Tdsl-Tool` and the history see.
        let mut canonical_of: HashMap<String, String> = HashMap::new();
        // The tool paths already refused here: the load's own `E0530` about one is an echo.
        let mut unresolved: Vec<Span> = Vec::new();
        let mut step_ids: Vec<String> = Vec::new();
        let mut step_fields: Vec<Option<Vec<String>>> = Vec::new();
        // (the tool as written, the step's id, the span of its id) of each step.
        let mut step_tools: Vec<(String, String, Span)> = Vec::new();
        for ins in instructions {
            let field = |k: &str| ins.as_object().and_then(|e| e.iter().find(|(key, _)| key.node == k)).map(|(_, v)| v);
            step_ids
                .push(field("execution_id").and_then(JsonNode::as_str).map_or(String::new(), |s| s.value.to_string()));
            let mut fields = None;
            if let (Some(path), Some(id)) =
                (field("tool_definition_path").and_then(JsonNode::as_str), field("execution_id"))
            {
                let written = path.value.trim().trim_end_matches(".tool");
                let written = written.rsplit('/').next().unwrap_or(written).to_string();
                let id_text = id.as_str().map_or(String::new(), |s| s.value.to_string());
                step_tools.push((written, id_text, id.span));
            }
            if let Some(path) = field("tool_definition_path").and_then(JsonNode::as_str) {
                match self.resolve(&mut root, &path.value, &candidates) {
                    Ok((tool, canonical)) => {
                        if let Some(u) = self.upstream.get(&canonical) {
                            literal::nested_constraints(ins, u, &mut diags);
                        }
                        canonical_of.insert(path.value.to_string(), canonical);
                        fields = tool
                            .def
                            .as_ref()
                            .filter(|_| tool.declares_responses)
                            .map(|d| d.responses.iter().map(|p| p.name.node.clone()).collect::<Vec<String>>());
                    }
                    Err(d) => {
                        unresolved.push(path.span);
                        diags.push(d.at(path.span));
                        root.alias(&path.value, Resolved::Missing(self.root.join(".plan-unresolved")));
                    }
                }
            }
            if let Some(items) = field("parallel_execution")
                .and_then(JsonNode::as_object)
                .and_then(|e| e.iter().find(|(k, _)| k.node == "iterate_over"))
                .and_then(|(_, v)| v.as_list())
            {
                if items.len() > self.limits.max_fan_out {
                    let over = &items[self.limits.max_fan_out];
                    diags.push(
                        Diagnostic::new(
                            Code::PlanFanOutTooWide,
                            over.span,
                            format!(
                                "this step fans out over {} elements, more than the limit of {} children",
                                items.len(),
                                self.limits.max_fan_out
                            ),
                        )
                        .with_label(format!("element {}", self.limits.max_fan_out + 1))
                        .with_help(
                            "split the list into several plans, or narrow it with a transform before fanning out",
                        ),
                    );
                }
            }
            step_fields.push(fields);
        }

        // The mistakes models make, in the plan's strings.
        // The plan's declared arguments: `{{url}}` and `$url` name one as much as `{{page.text}}`
        // names a step.
        let arg_names: Vec<String> = entries
            .iter()
            .find(|(k, _)| k.node == "arguments")
            .and_then(|(_, v)| v.as_list())
            .unwrap_or_default()
            .iter()
            .filter_map(|a| {
                a.as_object()?.iter().find(|(k, _)| k.node == "name")?.1.as_str().map(|n| n.value.to_string())
            })
            .collect();
        let names = mistakes::Names { steps: &step_ids, fields: &step_fields, args: &arg_names };
        let mut found = Vec::new();
        let mut named = Vec::new();
        // Strings a finding explains: the analysis' complaints about them are its echoes.
        // Each string's own findings decide (the strings are disjoint, in the order of the
        // text, so this stays sorted for the binary search below).
        let mut explained: Vec<Span> = Vec::new();
        let sites = mistakes::sites(&tree);
        for site in &sites {
            let before = found.len();
            mistakes::check_site(site, &names, self.files, &mut found, &mut named);
            if found.len() == before {
                literal::check_site(site, &mut found);
            } else if found[before..].iter().any(|d| matches!(d.code, Code::PlanPlaceholder | Code::PlanPathSyntax)) {
                explained.push(site.text.span);
            }
        }
        let named: std::collections::HashSet<String> = named.into_iter().collect();
        // A step a placeholder means is used: "never used" would be an echo.
        let used: Vec<Span> = instructions
            .iter()
            .zip(&step_ids)
            .filter(|(_, id)| named.contains(*id))
            .filter_map(|(ins, _)| ins.as_object()?.iter().find(|(k, _)| k.node == "execution_id").map(|(_, v)| v.span))
            .collect();
        // A fan-out whose `iterate_over` is explained binds no child argument for the
        // analysis: its "missing argument" is an echo too.
        let echo_missing: Vec<Span> = instructions
            .iter()
            .filter_map(|ins| {
                let entries = ins.as_object()?;
                let get = |k: &str| entries.iter().find(|(key, _)| key.node == k).map(|(_, v)| v);
                let over =
                    get("parallel_execution")?.as_object()?.iter().find(|(k, _)| k.node == "iterate_over")?.1.span;
                explained.binary_search(&over).is_ok().then(|| get("tool_definition_path").map(|p| p.span))?
            })
            .collect();
        diags.extend(found);

        // The analysis: the same checks as `tdsl check`.
        let mut analyzer = Analyzer::with_engine(root, engine);
        analyzer.set_foreign_values(false);
        let mut checked = analyzer.check_text(PLAN_TOOL.to_string(), source.clone(), None);
        // A run calls each tool by its one name, however the plan spelt it.
        if let Some(plan) = checked.plan.as_mut() {
            for step in &mut plan.steps {
                // A transform step calls nothing: it has no name to make one.
                if let Some(canonical) = step.tool_path.as_deref().and_then(|t| canonical_of.get(t)) {
                    step.tool_path = Some(Arc::from(canonical.as_str()));
                }
            }
        }
        // A REF to a tool's name where the step that calls it was meant: that step is used.
        let mut used = used;
        for d in checked.diagnostics.iter().filter(|d| d.code == Code::UnknownRefContext) {
            let ctx = source.get(d.span.range()).unwrap_or_default();
            used.extend(step_tools.iter().filter(|(tool, _, _)| tool == ctx).map(|(_, _, span)| *span));
        }
        for d in &checked.diagnostics {
            let inside = {
                let i = explained.partition_point(|s| s.start <= d.span.start);
                i > 0 && d.span.end <= explained[i - 1].end
            };
            let echo = matches!(d.code.as_str().get(..3), Some("E00" | "E01" | "E02"))
                || matches!(
                    d.code,
                    // The type of a placeholder's text is not the type of what it means.
                    Code::ExpectedRef | Code::LooksLikeRef | Code::UndeclaredResponseField | Code::CalleeArgumentType
                );
            if (inside && echo)
                || (d.code == Code::MissingCalleeArgument && echo_missing.contains(&d.span))
                || (d.code == Code::UnusedStepResult && used.contains(&d.span))
                || (d.code == Code::ToolPathSpelling && unresolved.contains(&d.span))
            {
                continue;
            }
            diags.push(adapt(d, &source, &step_tools));
        }
        literal::drop_null_echoes(&mut diags);
        let result_type = if diags.iter().any(Diagnostic::is_error) { None } else { result_type(&checked) };
        let check = PlanCheck::finish(source, Some(tree), diags, checked.plan.as_ref().map(levels).zip(result_type));
        let ok = check.ok();
        (check, ok.then_some((analyzer, checked)))
    }

    /// What a `tool_definition_path` names: a callable tool, loaded (and aliased in `root`
    /// under the name written), or why not.
    fn resolve(
        &self,
        root: &mut ToolRoot,
        written: &str,
        candidates: &std::cell::OnceCell<Vec<String>>,
    ) -> Result<(Arc<LoadedTool>, String), Unresolved> {
        // `"search\r\n"`, `" /tools/search.tool"`, `"search\u00a0"`: the tool a clean
        // spelling names, refused with that name (one tool, one identity).
        // A spelling that names no callable tool even when clean gets that error instead.
        if let Some(clean) = crate::tool::tool_path_respelled(written) {
            let (_, canonical) = self.resolve(root, &clean, candidates)?;
            let d = crate::tool::tool_path_spelling(written, Span::new(0, 0), &canonical);
            return Err(Unresolved {
                code: d.code,
                message: d.message,
                label: "a second spelling of a tool".into(),
                help: d.help.unwrap_or_default(),
            });
        }
        let written_trim = written;
        // An upstream tool: `SERVER/TOOL`.
        if let Some((server, _)) = written_trim.split_once('/').filter(|(s, _)| !s.is_empty()) {
            if let Some(names) = self.upstream_names.get(server) {
                let found = self.upstream.get(written_trim);
                return match found {
                    Some(u) => {
                        // A schema tdsl cannot declare (a property `@type`, `x.y`): say so, with
                        // the first problem — the model cannot "check the callee on its own".
                        let loaded = u.load_under(&self.root, written).map_err(|first| Unresolved {
                            code: Code::CalleeInvalid,
                            message: format!(
                                "the upstream tool `{written}` cannot be called from a plan: its schema does not translate ({first})"
                            ),
                            label: "schema tdsl cannot declare".into(),
                            help: format!("call another tool; the tools a plan may call: {}", self.list(&[])),
                        })?;
                        let canonical = u.plan_name();
                        root.alias(written, Resolved::Found(loaded.clone()));
                        root.alias(&canonical, Resolved::Found(loaded.clone()));
                        Ok((loaded, canonical))
                    }
                    None => Err(self.unknown(written, names)),
                };
            }
        }
        // A served name.
        if let Some(c) = self.served.iter().find(|c| c.name == written_trim) {
            return self.load_served(root, written, c);
        }
        // A tool path.
        let looks_like_path = written_trim.contains('/') || written_trim.ends_with(".tool");
        if looks_like_path {
            if Path::new(written_trim).components().any(|c| matches!(c, Component::ParentDir))
                || written_trim.contains('\\')
                || written_trim.contains("://")
            {
                return Err(Unresolved {
                    code: Code::PlanPathEscapes,
                    message: format!("`{written}` is not a tool path under the tool root"),
                    label: "leaves the tool root".into(),
                    help: "name a tool by its name or by its path from the root, like `/tools/summarize.tool`; `..` is refused".into(),
                });
            }
            let normal = format!("/{}", written_trim.trim_start_matches("./").trim_start_matches('/'));
            let normal = if normal.ends_with(".tool") { normal } else { format!("{normal}.tool") };
            if let Some(c) = self.served.iter().find(|c| c.tool_path.as_deref() == Some(normal.as_str())) {
                return self.load_served(root, written, c);
            }
            if root.file_path(&normal).is_ok_and(|f| f.is_file()) {
                return Err(Unresolved {
                    code: Code::PlanToolNotAllowed,
                    message: format!("`{written}` is not among the tools this server lets plans call"),
                    label: "not allowed".into(),
                    help: format!("the tools a plan may call: {}", self.list(&[])),
                });
            }
        }
        let candidates = candidates.get_or_init(|| {
            let mut names: Vec<String> = self.callable().into_iter().map(|c| c.name).collect();
            names.extend(self.served.iter().filter_map(|c| c.tool_path.clone()));
            names
        });
        Err(self.unknown(written, candidates))
    }

    fn load_served(
        &self,
        root: &mut ToolRoot,
        written: &str,
        c: &Callable,
    ) -> Result<(Arc<LoadedTool>, String), Unresolved> {
        let path = c.tool_path.as_deref().unwrap_or_default();
        match root.resolve(path) {
            Resolved::Found(t) => {
                root.alias(written, Resolved::Found(t.clone()));
                Ok((t, path.to_string()))
            }
            _ => Err(Unresolved {
                code: Code::PlanUnknownTool,
                message: format!("`{written}` cannot be loaded from the tool root"),
                label: "no such tool".into(),
                help: format!("the tools a plan may call: {}", self.list(&[])),
            }),
        }
    }

    fn unknown(&self, written: &str, candidates: &[String]) -> Unresolved {
        let stem = written.trim().trim_start_matches('/').trim_end_matches(".tool");
        let stem = stem.rsplit('/').next().unwrap_or(stem);
        // The two searches of a name inside another are linear in the candidates' text:
        // they spend from the plan's allowance for suggestions like `did_you_mean` does.
        let text_of_all = || candidates.iter().map(|c| c.len() as u64 + 1).sum::<u64>() + written.len() as u64;
        let near = did_you_mean(written.trim(), candidates.iter().map(String::as_str))
            .or_else(|| did_you_mean(stem, candidates.iter().map(String::as_str)))
            // `forecast`, `weather.forecast` for the upstream `weather/forecast`.
            .or_else(|| {
                let lower = written.trim().to_lowercase();
                crate::suggest::spend(text_of_all()).then_some(())?;
                candidates
                    .iter()
                    .filter(|c| c.split_once('/').is_some_and(|(_, tool)| !tool.is_empty() && lower.ends_with(tool)))
                    .min_by_key(|c| c.len())
                    .map(String::as_str)
            })
            // `web_search` for `search`, `search_tool` for `search`: a name inside the other.
            .or_else(|| {
                let lower = stem.to_lowercase();
                crate::suggest::spend(text_of_all()).then_some(())?;
                candidates
                    .iter()
                    .filter(|c| !c.contains('/') && c.len() >= 3 && (lower.contains(c.as_str()) || c.contains(&lower)))
                    .min_by_key(|c| c.len().abs_diff(lower.len()))
                    .map(String::as_str)
            })
            .map(str::to_string);
        let mut near_list: Vec<String> = Vec::new();
        if let Some(n) = &near {
            near_list.push(n.clone());
        }
        let help = match &near {
            Some(n) => format!("did you mean `{n}`? The tools a plan may call: {}", self.list(&near_list)),
            None => format!("the tools a plan may call: {}", self.list(&[])),
        };
        Unresolved {
            code: Code::PlanUnknownTool,
            message: format!("there is no tool `{written}` that this plan can call"),
            label: "unknown tool".into(),
            help,
        }
    }

    /// The callable names, for a help line: `first`, then the others, at most 20 named and
    /// a count of the rest (one pass: a server may have 60,000 upstream tools).
    fn list(&self, first: &[String]) -> String {
        const SHOWN: usize = 20;
        let mut names: Vec<String> = first.iter().take(SHOWN).cloned().collect();
        let mut more = first.len().saturating_sub(SHOWN);
        let mut add = |name: &dyn Fn() -> String| {
            if names.len() < SHOWN {
                names.push(name());
            } else {
                more += 1;
            }
        };
        for c in self.served.iter().filter(|c| !first.contains(&c.name)) {
            add(&|| c.name.clone());
        }
        for u in &self.upstream.tools {
            // `SERVER/TOOL` compared without being built: most are only counted.
            if !first.iter().any(|f| f.split_once('/') == Some((u.server.as_str(), u.name.as_str()))) {
                add(&|| u.plan_name());
            }
        }
        let mut text = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        if names.is_empty() {
            text = "none".to_string();
        }
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    }
}

/// A diagnostic of the analysis, as a plan's: a field the callee does not declare is an
/// error (`E1314`), a Python literal in an expression `E1313`; a REF to a tool's name gets
/// the step that calls it, a key of another plan format its tdsl name.
fn adapt(d: &Diagnostic, source: &str, step_tools: &[(String, String, Span)]) -> Diagnostic {
    let mut d = d.clone();
    let text = source.get(d.span.range()).unwrap_or_default();
    match d.code {
        // Other languages' syntax gets the tdsl form from the analysis itself
        // (`crate::syntax::foreign`), in a plan as in a `.tool` file.
        Code::UndeclaredResponseField => d.code = Code::PlanUnknownField,
        // Nothing silently wrong (SPEC §13): what a `.tool` file is warned of, a plan is refused.
        Code::UnknownField | Code::OpenArgument => d = literal::plan_error(d),
        // A plan cannot be primitive: the help of a `.tool` file would send the model to
        // `system_event_endpoint`, which a plan may not have (`E1304`).
        Code::NeitherPrimitiveNorComposite | Code::EmptyInstructions => {
            d.help = Some(
                "a plan's steps are its `instructions`: [{\"execution_id\": \"a\", \"tool_definition_path\": \"<a tool of tdsl://tools>\", \"arguments\": {…}}, …]; it cannot have `system_event_endpoint`"
                    .to_string(),
            );
        }
        Code::UnknownName => {
            if let Some((tdsl, lang)) = mistakes::expression_literal(text) {
                d = Diagnostic::new(
                    Code::PlanLiteral,
                    d.span,
                    format!("`{text}` is {lang}; tdsl expressions write `{tdsl}`"),
                )
                .with_label(format!("write `{tdsl}`"))
                .with_help(format!(
                    "tdsl's literals are JSON's: `true`, `false`, `null`; replace `{text}` with `{tdsl}`"
                ));
            }
        }
        Code::UnknownRefContext => {
            let steps: Vec<&str> =
                step_tools.iter().filter(|(tool, _, _)| tool == text).map(|(_, id, _)| id.as_str()).collect();
            if let [step] = steps.as_slice() {
                let rest: String = source
                    .get(d.span.end as usize..)
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    .collect();
                d.help = Some(format!(
                    "`{text}` is a tool; a REF names the step that calls it by its `execution_id`: write `REF:{step}{rest}`"
                ));
            }
        }
        Code::UnknownKey => {
            let key = text.trim_matches('"');
            if let Some(tdsl) = key_alias(key) {
                d.help = Some(format!("tdsl calls it `{tdsl}`: rename `{key}` to `{tdsl}`"));
            }
        }
        _ => {}
    }
    d
}

/// The tdsl key for a key of another plan or tool-call format.
fn key_alias(key: &str) -> Option<&'static str> {
    Some(match key {
        "depends_on" | "dependsOn" | "depends" | "after" | "needs" | "requires" | "wait_for" => "dependencies",
        "tool" | "tool_name" | "toolName" | "function" | "function_name" | "action" | "tool_path" | "call" => {
            "tool_definition_path"
        }
        "id" | "step_id" | "stepId" | "step" | "name" | "step_name" => "execution_id",
        "args" | "parameters" | "params" | "input" | "inputs" | "action_input" | "tool_input" => "arguments",
        "foreach" | "for_each" | "forEach" | "loop" | "map" | "parallel" | "iterate" => "parallel_execution",
        "condition" | "if" | "when" | "only_if" => "conditions",
        "steps" | "plan" | "tasks" | "nodes" | "calls" => "instructions",
        "outputs" | "output" | "returns" | "return" | "result" | "results" => "response_reference_map",
        _ => return None,
    })
}

/// Why a tool name does not resolve, before it has a span.
struct Unresolved {
    code: Code,
    message: String,
    label: String,
    help: String,
}

impl Unresolved {
    fn at(self, span: Span) -> Diagnostic {
        Diagnostic::new(self.code, span, self.message).with_label(self.label).with_help(self.help)
    }
}

/// `E1303` for a plan sent as a JSON string (`{"plan": "{\"instructions\": …}"}`): the
/// text it holds, checked as JSON, says where the fix is — send the object itself, and, if
/// the text is not JSON either, where and why (Python's `True`/`None`, single quotes).
fn plan_sent_as_a_string(d: Diagnostic, inner: &crate::tool::JsonStr) -> Diagnostic {
    let held = inner.value.trim_start();
    if !held.starts_with('{') {
        return d;
    }
    let (tree, errors) = crate::tool::json::parse(&inner.value);
    let what = "the plan was sent as a JSON string holding its text: send the object itself — `\"plan\": {\"instructions\": […]}`, not `\"plan\": \"{\\\"instructions\\\": …}\"`";
    let d = d.with_label("a string holding a plan");
    match (tree, errors.iter().find(|e| e.is_error())) {
        (Some(t), None) if t.as_object().is_some() => d.with_help(what),
        (_, Some(e)) => {
            let e = python_in_json(e.clone(), &inner.value);
            let at = inner.value[..(e.span.start as usize).min(inner.value.len())].chars().count();
            let inner_d = Diagnostic::new(e.code, inner.map_span(e.span), e.message.clone()).with_label("here");
            let fix = e.help.as_deref().map_or(String::new(), |h| format!(": {h}"));
            Diagnostic::new(d.code, d.span, d.message.clone())
                .with_label("a string holding a plan")
                .with_secondary(inner_d.span, format!("not JSON at character {at}"))
                .with_help(format!("{what}; and its text is not JSON at character {at} ({}){fix}", e.message))
        }
        _ => d.with_help(what),
    }
}

/// A JSON syntax error at a Python literal (`True`, `False`, `None`) or a JavaScript one
/// (`undefined`, `NaN`): the help names the JSON spelling.
fn python_in_json(mut d: Diagnostic, text: &str) -> Diagnostic {
    if d.code != Code::JsonSyntax {
        return d;
    }
    let rest = text.get(d.span.start as usize..).unwrap_or_default();
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let json = match word.as_str() {
        "True" => "true",
        "False" => "false",
        "None" | "undefined" | "NaN" | "Infinity" => "null",
        _ => return d,
    };
    let lang = if matches!(word.as_str(), "True" | "False" | "None") { "Python" } else { "JavaScript" };
    d.help = Some(format!("`{word}` is {lang}: JSON writes `{json}` — replace `{word}` with `{json}`"));
    d
}

fn article(kind: &str) -> String {
    match kind {
        "object" => "an object".into(),
        "null" => "null".into(),
        k => format!("a {k}"),
    }
}

/// `E1302` when the JSON nests deeper than `max` (brackets outside strings), before the
/// parser (which recurses) sees it.
fn too_deep(text: &str, max: usize) -> Option<Diagnostic> {
    let at = crate::tool::json::nesting_past(text, max)?;
    Some(
        Diagnostic::new(Code::PlanTooDeep, Span::new(at, at + 1), format!("the plan nests deeper than {max} levels"))
            .with_label(format!("level {}", max + 1))
            .with_help("a plan's values are shallow: pass deep data as an argument of the run instead"),
    )
}

/// The text of a plan given as a JSON value: pretty JSON when that stays within `max_bytes`,
/// else the compact JSON — never a pretty text past the limit: pretty-printing a deeply
/// nested value multiplies its size (2 spaces a level on every line), so a few MiB sent
/// would become a GiB before the size check refused it. A compact text over the limit is
/// refused by its size (`E1301`) as sent.
pub fn plan_text(plan: &serde_json::Value, max_bytes: usize) -> String {
    /// A writer that fails once it holds more than `max` bytes.
    struct Bounded {
        buf: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.buf.len() + b.len() > self.max {
                return Err(std::io::Error::other("over the limit"));
            }
            self.buf.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut pretty = Bounded { buf: Vec::new(), max: max_bytes };
    if serde_json::to_writer_pretty(&mut pretty, plan).is_ok() {
        if let Ok(text) = String::from_utf8(pretty.buf) {
            return text;
        }
    }
    serde_json::to_string(plan).unwrap_or_default()
}

/// The most diagnostics a plan's check reports (errors first): a plan of thousands of
/// mistakes gets the first of them, and a count of the rest, instead of an answer of
/// megabytes rendered in quadratic time (each rendering reads the plan's text).
pub const MAX_PLAN_DIAGNOSTICS: usize = 50;

/// The most work (characters looked at, distance-table cells: [`crate::suggest`]) the "did
/// you mean"s of one plan's check spend together: a plan that misspells a tool in each of
/// its steps, against 60,000 upstream tools, gets its hints for the first of them and the
/// list of callable tools for all. Fixed: its range is
/// [`crate::ranges::PLAN_SUGGESTION_WORK`], of one value.
pub const MAX_SUGGESTION_WORK: u64 = crate::ranges::PLAN_SUGGESTION_WORK.max as u64;

/// The most characters of one diagnostic's rendered text (a plan written on one long line
/// would otherwise be echoed whole by every diagnostic in it).
pub const MAX_RENDERED_CHARS: usize = 4_000;

/// `text` with control characters and bidirectional-text controls written as `\u001b`: a
/// diagnostic echoes what the plan wrote (a step id, a tool name), and a terminal or a
/// model reading it must see the escape, not obey it.
pub fn escape_controls(text: &str) -> String {
    crate::diagnostic::escape_hidden(text, &[])
}

/// `text` cut to at most `max` characters, saying so.
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n  … (cut: the rendered text is longer than {max} characters)\n", &text[..at]),
        None => text,
    }
}

/// The execution ids of each level.
fn levels(plan: &crate::analysis::Plan) -> Vec<Vec<String>> {
    plan.levels.iter().map(|l| l.iter().map(|id| plan.steps[id.0].execution_id.to_string()).collect()).collect()
}

/// The type of the plan's result: its mapped responses, or every step's result by id.
fn result_type(checked: &CheckedTool) -> Option<String> {
    let plan = checked.plan.as_ref()?;
    let ty = match &plan.response_map {
        Some(map) => {
            let declared: HashMap<&str, Type> = plan
                .tool
                .responses
                .iter()
                .filter_map(|p| Some((p.name.node.as_str(), Type::from_type_name(&p.type_or_any().to_string())?)))
                .filter(|(_, t)| *t != Type::Any)
                .collect();
            Type::object(
                map.iter().map(|(name, r)| {
                    let ty = declared.get(&**name).cloned().or_else(|| {
                        checked
                            .types
                            .iter()
                            .find(|t| t.kind == TypeAtKind::Ref && t.span == r.span)
                            .map(|t| t.ty.clone())
                    });
                    (name.clone(), ty.unwrap_or(Type::Any))
                }),
                false,
            )
        }
        None => Type::object(plan.steps.iter().map(|s| (s.execution_id.clone(), s.result_type.clone())), false),
    };
    Some(ty.to_string())
}

/// One diagnostic of a plan, located.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanDiagnostic {
    /// The stable code (`E1311`).
    pub code: &'static str,
    /// `error` or `warning`.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// How to fix it, in tdsl's form.
    pub help: Option<String>,
    /// A JSON pointer to the value (RFC 6901; `""` for the whole plan).
    pub pointer: String,
    /// Inside a string: the characters (start, end exclusive) of the offending text in the
    /// decoded string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[usize; 2]>,
    /// 1-based line of the span in the plan's text.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
    /// Line of the span's end.
    pub end_line: u32,
    /// Column of the span's end.
    pub end_column: u32,
    /// The diagnostic as `tdsl check` renders it (no colour), with the plan's text.
    pub rendered: String,
    /// The span in the plan's text (bytes).
    #[serde(skip)]
    pub span: Span,
    /// The diagnostic itself.
    #[serde(skip)]
    pub diagnostic: Diagnostic,
}

/// What checking a plan found.
#[derive(Clone, Debug)]
pub struct PlanCheck {
    /// The plan's text (what spans and lines point into).
    pub source: Arc<str>,
    /// Every diagnostic, in the order of the text.
    pub diagnostics: Vec<PlanDiagnostic>,
    /// The steps' execution ids level by level, when the plan has no error: steps of one
    /// level run concurrently.
    pub levels: Option<Vec<Vec<String>>>,
    /// The type of the plan's result, when it has no error (`{total: integer}`).
    pub result_type: Option<String>,
    /// The errors and the warnings left out of `diagnostics` (past
    /// [`MAX_PLAN_DIAGNOSTICS`]).
    omitted: [usize; 2],
}

/// How a plan's run names it (the trace's `tool` and `plan_id`, the history's run).
pub const PLAN_TOOL: &str = "<plan>";

/// The name rendered diagnostics give a plan sent inline.
pub const PLAN_NAME: &str = "plan.json";

impl PlanCheck {
    fn finish(
        source: Arc<str>,
        tree: Option<JsonNode>,
        mut diags: Vec<Diagnostic>,
        clean: Option<(Vec<Vec<String>>, String)>,
    ) -> PlanCheck {
        diags.sort_by_key(|d| (d.span.start, d.span.end));
        diags.dedup_by(|a, b| a.code == b.code && a.span == b.span);
        // At most MAX_PLAN_DIAGNOSTICS, errors first (so that `ok()` stays true to the
        // plan), then back in the order of the text.
        let mut omitted = [0, 0];
        if diags.len() > MAX_PLAN_DIAGNOSTICS {
            let (mut kept, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
                diags.into_iter().partition(Diagnostic::is_error);
            kept.extend(warnings);
            for d in kept.drain(MAX_PLAN_DIAGNOSTICS..) {
                omitted[usize::from(!d.is_error())] += 1;
            }
            kept.sort_by_key(|d| (d.span.start, d.span.end));
            diags = kept;
        }
        let lines = LineIndex::new(&source);
        let shown = crate::diagnostic::printable_source(&source);
        let diagnostics = diags
            .into_iter()
            .map(|d| d.escaped(&[]))
            .map(|d| {
                let loc = match &tree {
                    Some(t) => locate(t, d.span),
                    None => Location { pointer: String::new(), range: None },
                };
                let p = lines.position(d.span);
                PlanDiagnostic {
                    code: d.code.as_str(),
                    severity: d.severity(),
                    message: d.message.clone(),
                    help: d.help.clone(),
                    pointer: loc.pointer,
                    range: loc.range,
                    line: p.line,
                    column: p.column,
                    end_line: p.end_line,
                    end_column: p.end_column,
                    rendered: cut(
                        crate::diagnostic::render_plain(std::slice::from_ref(&d), PLAN_NAME, &shown),
                        MAX_RENDERED_CHARS,
                    ),
                    span: d.span,
                    diagnostic: d,
                }
            })
            .collect::<Vec<_>>();
        let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
        let (levels, result_type) = match clean.filter(|_| !has_errors) {
            Some((l, t)) => (Some(l), Some(t)),
            None => (None, None),
        };
        PlanCheck { source, diagnostics, levels, result_type, omitted }
    }

    /// Whether the plan may run: no error (warnings allowed).
    pub fn ok(&self) -> bool {
        self.omitted[0] == 0 && !self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    /// The number of errors and of warnings, those left out of `diagnostics` included.
    pub fn counts(&self) -> (usize, usize) {
        let errors = self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        (errors + self.omitted[0], self.diagnostics.len() - errors + self.omitted[1])
    }

    /// How many diagnostics were left out (past [`MAX_PLAN_DIAGNOSTICS`]).
    pub fn omitted(&self) -> usize {
        self.omitted[0] + self.omitted[1]
    }

    /// Every diagnostic rendered, one after the other.
    pub fn render(&self) -> String {
        let mut out: String = self.diagnostics.iter().map(|d| d.rendered.as_str()).collect();
        if self.omitted() > 0 {
            out.push_str(&format!("… and {} more diagnostics, not shown\n", self.omitted()));
        }
        out
    }

    /// The plan's text as diagnostics render it: control characters replaced byte for byte
    /// by `?` (spans stay valid), so that a snippet cannot drive a terminal.
    pub fn printable_source(&self) -> String {
        crate::diagnostic::printable_source(&self.source).into_owned()
    }

    /// The bare diagnostics (spans into [`PlanCheck::source`]).
    pub fn raw_diagnostics(&self) -> Vec<Diagnostic> {
        self.diagnostics.iter().map(|d| d.diagnostic.clone()).collect()
    }

    /// The check as JSON: `{ok, errors, warnings, diagnostics: [...], levels?, result_type?}`
    /// — what `check_plan` answers.
    pub fn to_json(&self) -> serde_json::Value {
        let (errors, warnings) = self.counts();
        let mut out = serde_json::json!({
            "ok": self.ok(),
            "errors": errors,
            "warnings": warnings,
            "diagnostics": self.diagnostics,
        });
        if self.omitted() > 0 {
            out["omitted"] = serde_json::json!(self.omitted());
        }
        if let (Some(levels), Some(t)) = (&self.levels, &self.result_type) {
            out["levels"] = serde_json::json!(levels);
            out["result_type"] = serde_json::json!(t);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_counted_outside_strings() {
        assert!(too_deep(r#"{"a": "[[[[[[[[[["}"#, 3).is_none());
        assert!(too_deep(r#"{"a": [[[1]]]}"#, 3).is_some());
        assert!(too_deep(r#"{"a": "\"[[[["}"#, 2).is_none());
    }
}
