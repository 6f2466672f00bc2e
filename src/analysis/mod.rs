//! Static analysis of `.tool` files: REFs, types across steps, the dependency DAG, and the
//! checked [`Plan`] the execution engine runs (SPEC §6.1, §9).
//!
//! ```
//! use tdsl::{Analyzer, ToolRoot};
//!
//! let source = r#"{
//!   "arguments": [{"name": "folder", "type_name": "string", "required": true}],
//!   "instructions": [
//!     {"execution_id": "scan", "tool_definition_path": "/tools/scanner.tool",
//!      "arguments": {"directory": "REF:arguments.folder"}},
//!     {"execution_id": "count", "tool_definition_path": "/tools/counter.tool",
//!      "transform_arguments": {"transforms": {"n": "REF:scan.files.length"}}},
//!     {"execution_id": "report", "tool_definition_path": "/tools/reporter.tool",
//!      "arguments": {"total": "REF:count.n", "files": "REF:scan.fils"}}
//!   ]
//! }"#;
//! // No callee files here: with an assumed root, calls to them are not checked.
//! let mut analyzer = Analyzer::new(ToolRoot::assumed("/nonexistent"));
//! let checked = analyzer.check_source("main.tool", source);
//! assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
//! let plan = checked.plan.unwrap();
//! assert_eq!(plan.levels(), [vec!["scan"], vec!["count"], vec!["report"]]);
//!
//! // A REF to a step that does not exist is found before anything runs.
//! let broken = source.replace("REF:count.n", "REF:cuont.n");
//! let checked = analyzer.check_source("main.tool", &broken);
//! assert_eq!(checked.diagnostics[0].code.as_str(), "E0108");
//! assert_eq!(checked.diagnostics[0].help.as_deref(), Some("did you mean `REF:count`?"));
//! assert!(checked.plan.is_none());
//! ```
//!
//! The analysis starts from the model of [`crate::tool`] and never runs a tool: it reads
//! callee files through a [`ToolRoot`] only for what they declare. Every check is in
//! `docs/analysis.md` with its code.

mod check;
mod dag;
mod declared_types;
pub(crate) mod infer;
mod lints;
pub(crate) mod plan;
mod refs;
mod render;
pub(crate) mod root;
mod transform;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use infer::{TypeAt, TypeAtKind};
pub use plan::{Plan, RefContext, RefPlan, StepId, StepPlan, ValuePlan};
// What the engine runs of a plan.
#[cfg(feature = "engine")]
pub use plan::{ConditionPlan, DoneCheckPlan, ParallelPlan, TransformPlan};
pub(crate) use refs::mentioned_contexts;
pub(crate) use root::tool_files_under;
pub use root::{ExactTypes, LoadedTool, MissingCallees, NameRefusal, NamedTools, Resolved, ToolRoot};

use crate::diagnostic::Diagnostic;
use crate::engine::Engine;
use crate::tool::ToolDef;

/// Checks tools against a root: callees are loaded once and shared by every check.
#[derive(Debug)]
pub struct Analyzer {
    engine: Engine,
    root: ToolRoot,
    types_from_use: bool,
    max_nesting: usize,
    /// Whether values written in another plan format's syntax (`"$1.total"`, JSONPath) are
    /// reported ([`crate::tool::mistakes::in_tool_file`]); the plan check reports them itself.
    foreign_values: bool,
    /// Whether a callee's declared result is a closed object ([`Analyzer::set_closed_results`]).
    closed_results: bool,
}

/// Everything checking one tool found.
#[derive(Debug)]
pub struct CheckedTool {
    /// How messages name the tool: its tool path under the root (`/tools/main.tool`), or
    /// its file path, or the name given with the source.
    pub name: String,
    /// The file, when the tool was read from one.
    pub file: Option<PathBuf>,
    /// The text checked (diagnostic spans point into it).
    pub source: Arc<str>,
    /// The model, when the file could be read as one (partial when there are errors): the
    /// crate's own `.tool` model (the language server reads it).
    #[cfg_attr(not(feature = "lsp"), allow(dead_code))]
    pub(crate) tool: Option<Arc<ToolDef>>,
    /// Every problem, errors and warnings, in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// The plan: for a composite tool with no error.
    pub plan: Option<Plan>,
    /// The type of every REF, variable and transform output, in source order (empty for a
    /// primitive tool): what `tdsl check --explain-types` prints and an editor shows on
    /// hover. See [`explain_types`].
    pub types: Vec<TypeAt>,
}

impl CheckedTool {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

impl Analyzer {
    /// An analyzer with the built-in functions.
    pub fn new(root: ToolRoot) -> Analyzer {
        Analyzer::with_engine(root, Engine::new())
    }

    /// An analyzer whose expressions compile with `engine` (for host functions).
    pub fn with_engine(root: ToolRoot, engine: Engine) -> Analyzer {
        Analyzer {
            engine,
            root,
            types_from_use: true,
            max_nesting: crate::ranges::DEFAULT_MAX_NESTING,
            foreign_values: true,
            closed_results: false,
        }
    }

    /// Whether a value written in another plan format's syntax — a placeholder naming a step
    /// (`"$1.total"`, `"{{scan.total}}"`, `"#E1"`) or JSONPath (`"$.scan.files[*].name"`) — is
    /// reported as in a plan (`E1311`, `E1312`, `W1311`, `W1312`, with the same help). On by
    /// default; the plan check, which finds them itself, turns it off.
    pub(crate) fn set_foreign_values(&mut self, on: bool) {
        self.foreign_values = on;
    }

    /// Whether the result of a callee that declares its responses is exactly those
    /// responses (a closed object named after the callee, [`crate::types::Type::result_of`]),
    /// so that a field read on it that the callee does not declare — through a REF, on a
    /// fan-out's results, on a step's result held in a variable, through `zip` — is
    /// `W0102` ("`shop/list_orders`'s declared result has no field `x`"). Off by default: a
    /// `.tool` file's primitive callee may return more than it declares, and its author can
    /// read the callee's file. The plan check turns it on, where `W0102` is the error
    /// `E1320`: a model sees only the declared responses (`tdsl://tools`), so a field
    /// outside them is a guess that would run as `null`. An upstream tool's output schema
    /// that allows other fields (`additionalProperties` other than `false`,
    /// `patternProperties`) keeps its result open ([`ExactTypes::responses_open`]).
    pub(crate) fn set_closed_results(&mut self, on: bool) {
        self.closed_results = on;
    }

    /// Whether the analysis also infers types from how `any` values are used (on by
    /// default; `E0650`, `W0650`, the inferred types of [`CheckedTool::types`]). Off, only
    /// what the declared types prove is reported.
    pub fn set_types_from_use(&mut self, on: bool) {
        self.types_from_use = on;
    }

    /// How deep composite callees may nest below the tool checked (8 by default, as a run's
    /// [`crate::ranges::DEFAULT_MAX_NESTING`]): a deeper chain of composite calls is `E0619`,
    /// which names the chain. Give it the limit the run will have (`--max-nesting`).
    pub fn set_max_nesting(&mut self, max: usize) {
        self.max_nesting = max;
    }

    /// The nesting limit [`Analyzer::set_max_nesting`] set.
    pub fn max_nesting(&self) -> usize {
        self.max_nesting
    }

    /// The root callees resolve against.
    pub fn root(&self) -> &ToolRoot {
        &self.root
    }

    /// The root, to resolve tool paths through its cache.
    pub fn root_mut(&mut self) -> &mut ToolRoot {
        &mut self.root
    }

    /// The engine expressions compile with.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Reads and checks a `.tool` file: only a regular file, of bounded size
    /// ([`crate::input`]). A file that is not UTF-8 is checked as far as an `E0501` at its
    /// first invalid byte.
    pub fn check_file(&mut self, path: &Path) -> std::io::Result<CheckedTool> {
        let bytes = crate::input::read_bytes(path)?;
        let name = self.root.tool_path_of(path).unwrap_or_else(|| path.display().to_string());
        let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        match String::from_utf8(bytes) {
            Ok(text) => Ok(self.check(name, Arc::from(text), Some(file))),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                // The text shown is the valid part: the span ends where the bad byte is.
                let source: Arc<str> = Arc::from(String::from_utf8_lossy(&e.as_bytes()[..at]).as_ref());
                let span = crate::span::Span::new(at, at);
                let diagnostic = Diagnostic::new(
                    crate::diagnostic::Code::JsonSyntax,
                    span,
                    format!("the file is not valid UTF-8: byte {at} starts an invalid sequence"),
                )
                .with_label("invalid UTF-8 here")
                .with_help("save the file as UTF-8");
                Ok(CheckedTool {
                    name,
                    file: Some(file),
                    source,
                    tool: None,
                    diagnostics: vec![diagnostic],
                    plan: None,
                    types: Vec::new(),
                })
            }
        }
    }

    /// Checks a tool given as text; `name` names it in messages.
    pub fn check_source(&mut self, name: &str, source: &str) -> CheckedTool {
        self.check(name.to_string(), Arc::from(source), None)
    }

    /// Checks a tool given as text that stands for `file` (an editor's unsaved buffer):
    /// `name` names it in messages, as [`Analyzer::check_file`] would.
    pub fn check_text(&mut self, name: String, source: Arc<str>, file: Option<PathBuf>) -> CheckedTool {
        self.check(name, source, file)
    }

    fn check(&mut self, name: String, source: Arc<str>, file: Option<PathBuf>) -> CheckedTool {
        let (tool, mut diagnostics) = crate::tool::load(&source);
        let Some(tool) = tool.map(Arc::new) else {
            return CheckedTool { name, file, source, tool: None, diagnostics, plan: None, types: Vec::new() };
        };
        let declares_responses = tool.declares_responses;
        let subject = check::Subject {
            tool: &tool,
            file: file.clone(),
            source: &source,
            name: name.clone(),
            declares_responses,
            types_from_use: self.types_from_use,
            max_nesting: self.max_nesting,
            closed_results: self.closed_results,
        };
        let checker = check::Checker::new(&self.engine, &subject);
        let (found, plan, types) = checker.run(&mut self.root, &subject);
        diagnostics.extend(found);
        if self.foreign_values {
            if let (Some(tree), _) = crate::tool::json::parse(&source) {
                let found = crate::tool::mistakes::in_tool_file(&tree);
                // What the analysis says of such a value (a string where a number is
                // declared, not a REF) is an echo of the finding, and a step a placeholder
                // names is used.
                diagnostics.retain(|d| {
                    let inside = found.explained.iter().any(|s| s.start <= d.span.start && d.span.end <= s.end);
                    let named = d.code == crate::diagnostic::Code::UnusedStepResult
                        && source
                            .get(d.span.range())
                            .is_some_and(|t| found.named.iter().any(|n| t.trim_matches('"') == n));
                    !inside && !named
                });
                diagnostics.extend(found.diagnostics);
            }
        }
        diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
        let plan = plan.filter(|_| !diagnostics.iter().any(Diagnostic::is_error));
        CheckedTool { name, file, source: source.clone(), tool: Some(tool), diagnostics, plan, types }
    }
}

/// The type of every REF, variable and transform output of a tool given as text, in source
/// order: each with its span in `source`, its static type and, where that is `any`, what its
/// certain uses demand (types from use, `docs/analysis.md`). The same list is
/// [`CheckedTool::types`]; the tool need not be free of errors.
///
/// ```
/// use tdsl::testing::analysis::{explain_types, TypeAtKind};
/// use tdsl::{Analyzer, ToolRoot};
///
/// let source = r#"{
///   "instructions": [
///     {"execution_id": "fetch", "tool_definition_path": "/tools/fetch.tool"},
///     {"execution_id": "report", "tool_definition_path": "/tools/report.tool",
///      "transform_arguments": {
///        "variables": {"rows": "REF:fetch.rows"},
///        "transforms": {"count": "length(rows)", "total": "sum(array=rows)"}}}
///   ]
/// }"#;
/// let mut analyzer = Analyzer::new(ToolRoot::assumed("/nonexistent"));
/// let types = explain_types(&mut analyzer, "main.tool", source);
/// let rows = types.iter().find(|t| t.kind == TypeAtKind::Ref).unwrap();
/// assert_eq!(&source[rows.span.range()], "REF:fetch.rows");
/// assert_eq!(rows.ty.to_string(), "any");
/// // `sum` takes a list, or null as empty: that is what the value must be.
/// assert_eq!(rows.inferred.as_ref().unwrap().to_string(), "list | null");
/// let total = types.iter().find(|t| t.name == "total").unwrap();
/// assert_eq!((total.kind, total.ty.to_string().as_str()), (TypeAtKind::Output, "number"));
/// ```
pub fn explain_types(analyzer: &mut Analyzer, name: &str, source: &str) -> Vec<TypeAt> {
    analyzer.check_source(name, source).types
}
