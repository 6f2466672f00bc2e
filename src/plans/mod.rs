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
//! and may call only the callable tools: those of [`PlanDesk`] (after its allow globs) and the
//! upstream ones. The checking is the analysis of `tdsl check` ([`Analyzer`]) over the plan's
//! text, with the names resolved first ([`ToolRoot::alias`]), plus the plan's own checks:
//! limits ([`PlanLimits`]), callable tools, and the mistakes models make (`E13xx`/`W13xx`,
//! `docs/plans.md`). Every diagnostic is located by a JSON pointer into the plan and, inside a
//! string, the character range of the offending text ([`PlanDiagnostic`]).
//!
//! ```
//! use tdsl::PlanDesk;
//!
//! let plans = PlanDesk::for_root("examples/document-analysis", &["/tools/**"]).unwrap();
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

mod check;
mod literal;
mod locate;
mod plan_check;
mod resolve;
#[cfg(feature = "engine")]
mod run;
// Saved plans (`serve --skills`): only the MCP server keeps them.
#[cfg(feature = "mcp")]
pub mod skills;
mod upstream;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "mcp")]
pub(crate) use check::plan_text;
pub use check::MAX_SUGGESTION_WORK;
pub use locate::Location;
pub use plan_check::{escape_controls, PlanCheck, PlanDiagnostic, PLAN_TOOL};
#[cfg(feature = "engine")]
pub use run::{PlanRefused, PlanRun, PlanStep, RunPlanOptions};
#[cfg(feature = "mcp")]
pub(crate) use upstream::untranslatable;
pub use upstream::{upstream_target, UpstreamTool};

use crate::analysis::{Resolved, ToolRoot};
use crate::diagnostic::Diagnostic;
use crate::engine::Engine;
use crate::ranges::{self, RangeError};
use crate::runtime::{Limits, MemoryPool};

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
    /// The fuel of all the run's expressions together (500,000,000; `E0401` past it).
    pub max_run_fuel: u64,
    /// The most bytes of values the run holds at once (512 MiB; `E0406` past it).
    pub max_run_memory: u64,
    /// Memory shared with the other runs in flight (`serve --max-memory-in-flight`).
    pub memory_in_flight: Option<MemoryPool>,
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
            max_run_fuel: ranges::SERVE_RUN_FUEL,
            max_run_memory: ranges::SERVE_RUN_MEMORY,
            memory_in_flight: None,
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
        ranges::RUN_FUEL.check(self.max_run_fuel as f64)?;
        ranges::RUN_MEMORY.check(self.max_run_memory as f64)?;
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

/// The desk plans are handed to: the tools they may call and the limits they run under;
/// it checks plans ([`PlanDesk::check`]) and runs them (`PlanDesk::run`, feature `engine`).
/// Not a plan itself: the checked run plan of a composite is [`crate::analysis::Plan`], and
/// the MCP surface in front of a desk (`check_plan`, `run_plan`) is `mcp::plans::PlanServer`.
#[derive(Clone, Debug)]
pub struct PlanDesk {
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

impl PlanDesk {
    /// The tools under `root` whose tool paths match one of `allow` (every tool when `allow`
    /// is empty) and that load without errors, named as `serve --mcp` names them. The
    /// error names an invalid glob or a root that cannot be read.
    pub fn for_root<S: AsRef<str>>(root: impl Into<PathBuf>, allow: &[S]) -> Result<PlanDesk, String> {
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
        Ok(PlanDesk::with_served(root, served))
    }

    /// The tools a server already chose and named (`serve --mcp --plans` passes its own):
    /// each [`Callable`] with its tool path under `root`.
    pub fn with_served(root: impl Into<PathBuf>, served: Vec<Callable>) -> PlanDesk {
        let root = root.into();
        PlanDesk {
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
    pub fn with_upstream(mut self, tools: Vec<UpstreamTool>) -> PlanDesk {
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
    pub fn with_limits(mut self, limits: PlanLimits) -> PlanDesk {
        self.engine = self.engine.with_limits(limits.expression.clone());
        self.limits = limits;
        self
    }

    /// Gives plans' expressions a file store (`serve --files DIR`): without one, a plan that
    /// uses a file function is refused (`E1310`).
    pub fn with_file_store(mut self, store: Arc<dyn crate::files::FileStore>) -> PlanDesk {
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
}
