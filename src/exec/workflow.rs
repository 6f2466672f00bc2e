//! A workflow: a checked composite and every tool it can reach, loaded before the run.
//!
//! Loading checks the composite with [`Analyzer`] and then every composite callee, through
//! any depth, so that nothing is parsed or checked while the run is under way and a
//! problem anywhere is reported before any tool is called. Primitive callees are kept with
//! their definitions for the runner and for validation at the boundary.
//!
//! Expressions are compiled with an engine whose clock is the run's ([`ExecClock`]), so
//! `datetime_now` reads the executor's time and the trace records every read.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::clock::ExecClock;
use crate::analysis::{Analyzer, CheckedTool, Plan, Resolved, ToolRoot};
use crate::diagnostic::Diagnostic;
use crate::engine::Engine;
use crate::tool::ToolDef;

/// A tool a step can call.
#[derive(Clone, Debug)]
pub enum Tool {
    /// A composite tool, checked, with its plan.
    Composite {
        /// The plan.
        plan: Arc<Plan>,
    },
    /// A primitive tool: the runner runs it.
    Primitive {
        /// Its definition.
        def: Arc<ToolDef>,
        /// Its file.
        file: PathBuf,
    },
    /// No file under the root: only a runner that knows the tool path (a mock) can run it.
    Missing {
        /// Where it was looked for.
        looked_for: PathBuf,
    },
}

/// A composite and the tools it reaches, ready to run.
#[derive(Clone, Debug)]
pub struct Workflow {
    name: String,
    plan: Arc<Plan>,
    root: PathBuf,
    /// Fx-hashed: looked up at every step and call, by the paths the workflow's own files name.
    tools: rustc_hash::FxHashMap<String, Tool>,
    /// The evaluation limits its expressions were compiled with (recorded in traces).
    limits: crate::Limits,
}

/// Why a workflow could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// A file could not be read.
    Io(String),
    /// A tool has errors: its diagnostics, with the text they point into.
    Invalid {
        /// How messages name the tool.
        name: String,
        /// Its text.
        source: Arc<str>,
        /// Every diagnostic (warnings too).
        diagnostics: Vec<Diagnostic>,
    },
    /// The tool is primitive: there are no steps to run.
    Primitive(String),
    /// A tool path names no file under the root, or cannot name one.
    Unresolved {
        /// The tool path.
        tool: String,
        /// Why.
        why: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => f.write_str(e),
            LoadError::Invalid { name, diagnostics, .. } => {
                let n = diagnostics.iter().filter(|d| d.is_error()).count();
                write!(f, "`{name}` has {n} error{}", if n == 1 { "" } else { "s" })
            }
            LoadError::Primitive(name) => write!(f, "`{name}` is a primitive tool: there are no steps to run"),
            LoadError::Unresolved { tool, why } => write!(f, "`{tool}` does not resolve: {why}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// The engine the workflow's expressions compile with: the built-in functions, and a clock
/// that the executor controls during a run.
pub fn engine() -> Engine {
    Engine::new().with_clock(Arc::new(ExecClock))
}

impl Workflow {
    /// Loads the composite in `file`, with callees under `root`.
    pub fn load(root: &Path, file: &Path) -> Result<Workflow, LoadError> {
        Workflow::load_with_engine(root, file, engine())
    }

    /// [`Workflow::load`] with the expressions compiled by `engine` (for host functions or
    /// a file store); its clock is replaced by [`ExecClock`], the run's.
    pub fn load_with_engine(root: &Path, file: &Path, engine: Engine) -> Result<Workflow, LoadError> {
        Workflow::load_with_nesting(root, file, engine, crate::ranges::DEFAULT_MAX_NESTING)
    }

    /// [`Workflow::load_with_engine`] for a run whose composites may nest `max_nesting`
    /// deep ([`crate::exec::Options::max_depth`]): a deeper chain of composite callees is
    /// refused here (`E0619`, [`Analyzer::set_max_nesting`]) rather than failing the run.
    pub fn load_with_nesting(
        root: &Path,
        file: &Path,
        engine: Engine,
        max_nesting: usize,
    ) -> Result<Workflow, LoadError> {
        Workflow::load_from(ToolRoot::assumed(root), file, engine, max_nesting)
    }

    /// [`Workflow::load_with_nesting`] with the callees resolved by `root`: a
    /// [`ToolRoot::assumed`] root that knows some tools by name
    /// ([`ToolRoot::with_named`]: the upstream servers' tools of `tdsl run --upstream`).
    pub fn load_from(root: ToolRoot, file: &Path, engine: Engine, max_nesting: usize) -> Result<Workflow, LoadError> {
        // Limits out of range would fail every expression with E0409: say it once.
        if let Err(e) = engine.limits().validate() {
            let error = engine.analyze("null", &crate::types::Scope::open()).diagnostics;
            debug_assert!(error.iter().any(|d| d.code == crate::diagnostic::Code::LimitOutOfRange), "{e}");
            return Err(LoadError::Invalid {
                name: file.display().to_string(),
                source: Arc::from(""),
                diagnostics: error,
            });
        }
        // Callees with no file are kept as `Tool::Missing`: a mock may still answer for them.
        let engine = engine.with_clock(Arc::new(ExecClock));
        let mut analyzer = Analyzer::with_engine(root, engine);
        analyzer.set_max_nesting(max_nesting);
        let checked =
            analyzer.check_file(file).map_err(|e| LoadError::Io(format!("cannot read {}: {e}", file.display())))?;
        Workflow::from_checked(analyzer, checked)
    }

    /// Loads a composite given by its tool path under `root` (`/tools/main.tool`).
    pub fn load_tool_path(root: &Path, tool_path: &str) -> Result<Workflow, LoadError> {
        let file = ToolRoot::new(root)
            .file_path(tool_path)
            .map_err(|why| LoadError::Unresolved { tool: tool_path.to_string(), why })?;
        Workflow::load(root, &file)
    }

    /// Finishes loading from a checked tool: checks and loads every callee it can reach.
    /// The analyzer's engine should be [`engine()`], so that the run's clock is used.
    pub fn from_checked(mut analyzer: Analyzer, checked: CheckedTool) -> Result<Workflow, LoadError> {
        let (checked_name, plan) = take_plan(checked)?;
        let plan = Arc::new(plan);
        let dir = analyzer.root().dir();
        let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut tools: rustc_hash::FxHashMap<String, Tool> = rustc_hash::FxHashMap::default();
        let mut queue: Vec<Arc<Plan>> = vec![plan.clone()];
        while let Some(p) = queue.pop() {
            // A transform step calls nothing: there is no tool to load for it.
            for s in p.steps.iter().filter(|s| s.tool_path.is_some()) {
                let path = s.tool().to_string();
                if tools.contains_key(&path) {
                    continue;
                }
                let tool = match analyzer.root_mut().resolve(&path) {
                    Resolved::Found(t) => match &t.def {
                        Some(def) if def.is_composite() => {
                            let c = analyzer
                                .check_file(&t.file)
                                .map_err(|e| LoadError::Io(format!("cannot read {}: {e}", t.file.display())))?;
                            let (_, callee) = take_plan(c)?;
                            let callee = Arc::new(callee);
                            queue.push(callee.clone());
                            Tool::Composite { plan: callee }
                        }
                        Some(def) => Tool::Primitive { def: Arc::new(def.clone()), file: t.file.clone() },
                        None => {
                            return Err(LoadError::Invalid {
                                name: t.tool_path.clone(),
                                source: t.source.clone(),
                                diagnostics: t.diagnostics.clone(),
                            })
                        }
                    },
                    Resolved::Missing(looked_for) => Tool::Missing { looked_for },
                    Resolved::Invalid(why) => return Err(LoadError::Unresolved { tool: path, why }),
                };
                tools.insert(path, tool);
            }
        }
        let name = plan
            .file
            .as_deref()
            .and_then(|f| analyzer.root().tool_path_of(f))
            .or_else(|| plan.file.as_ref().map(|f| f.display().to_string()))
            // A tool checked from text (a plan sent inline): the name it was checked under.
            .unwrap_or(checked_name);
        let limits = analyzer.engine().limits().clone();
        Ok(Workflow { name, plan, root, tools, limits })
    }

    /// The evaluation limits its expressions were compiled with (fuel, memory, …).
    pub fn limits(&self) -> &crate::Limits {
        &self.limits
    }

    /// How the trace names the composite: its tool path under the root, or its file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The composite's plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The tool root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tool a tool path names.
    pub fn tool(&self, tool_path: &str) -> Option<&Tool> {
        self.tools.get(tool_path)
    }

    /// The tool paths that name no file, sorted: a runner must know them some other way.
    pub fn missing_tools(&self) -> Vec<&str> {
        let mut out: Vec<&str> =
            self.tools.iter().filter(|(_, t)| matches!(t, Tool::Missing { .. })).map(|(k, _)| k.as_str()).collect();
        out.sort_unstable();
        out
    }
}

fn take_plan(checked: CheckedTool) -> Result<(String, Plan), LoadError> {
    if checked.has_errors() {
        return Err(LoadError::Invalid {
            name: checked.name,
            source: checked.source,
            diagnostics: checked.diagnostics,
        });
    }
    match checked.plan {
        Some(p) => Ok((checked.name, p)),
        None => Err(LoadError::Primitive(checked.name)),
    }
}
