//! Checking one tool: every check of SPEC §9 that needs more than the file itself, and the
//! plan when none fails.
//!
//! The passes, each linear in steps plus REFs:
//!
//! 1. **Callees**: resolve every `tool_definition_path` against the root (loading each file
//!    once) and look for recursion through them.
//! 2. **Type order**: steps are visited so that a step comes after the steps it mentions,
//!    because a step's result type includes its `transform_responses` outputs, which are
//!    inferred from its expressions. Steps in a cycle see each other as `object`.
//! 3. **Steps**: for each, its REFs (checked and typed), `arguments`, transforms,
//!    conditions, `parallel_execution`, `done_check`, and the call against the callee's
//!    declared arguments.
//! 4. **The tool**: `response_reference_map` against the declared responses, the tool-level
//!    transforms, unused step results.
//! 5. **The DAG**: edges from REFs and `dependencies`, cycles, levels.
//!
//! Each pass is a child module adding its `impl Checker` block (`callees`, `steps` with
//! `calls`, `responses`, `levels`), and `assemble` puts the plan together; this file holds
//! the checker's state and runs the passes in order. The types declarations give are
//! `super::declared_types`.

mod assemble;
mod callees;
mod calls;
mod levels;
mod responses;
mod steps;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;

use super::dag;
use super::declared_types::argument_type;
use super::lints::expected_keys;
use super::plan::*;
use super::refs::{Fields, RefEnv};
use super::root::{LoadedTool, ToolRoot};
use super::transform::{BlockSpec, Names};
use crate::diagnostic::Diagnostic;
use crate::engine::Engine;
use crate::span::Span;
use crate::tool::{Instruction, RefPlace, RefSite, ToolDef, ToolKind, TransformBlock, TypeName};
use crate::types::Type;

/// Who holds a REF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Step `i` (by position in `instructions`).
    Step(usize),
    /// The tool as a whole, after its steps (`response_reference_map`, tool-level
    /// `transform_responses`).
    Tool,
    /// The tool-level `transform_arguments`, which runs before any step.
    ToolArguments,
}

/// One reason a step depends on another.
#[derive(Clone, Debug)]
pub(crate) struct Use {
    pub to: usize,
    pub span: Span,
    /// The path after the step id (`files.length`, `*` for the whole result).
    pub carries: String,
    pub kind: UseKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UseKind {
    Ref,
    Dependency,
}

pub(crate) struct Step<'a> {
    pub ins: &'a Instruction,
    /// The other name of its result: its own `expected_key`, or its callee's `output_key`
    /// (SPEC §5).
    pub key: Option<Arc<str>>,
    pub callee: Option<Arc<LoadedTool>>,
    /// The fields a REF into this step's result may name, when known.
    pub fields: Option<Arc<Fields>>,
    /// The static type of the result, once the step is checked.
    pub result: Option<Type>,
    pub uses: Vec<Use>,
    /// Whether any REF reads this step's result.
    pub used: bool,
    parts: Option<Parts>,
}

/// What a checked step contributes to the plan.
struct Parts {
    arguments: Vec<(Arc<str>, ValuePlan)>,
    transform_arguments: Option<TransformPlan>,
    conditions: Vec<ConditionPlan>,
    parallel: Option<ParallelPlan>,
    done_check: Option<DoneCheckPlan>,
    done_value: Option<ValuePlan>,
    transform_responses: Option<TransformPlan>,
}

/// The state of checking one tool.
pub(crate) struct Checker<'a> {
    pub engine: &'a Engine,
    pub source: &'a str,
    pub diags: Vec<Diagnostic>,
    /// Step positions by the names REFs use: execution ids, `expected_key`s and the
    /// `output_key` defaults of callees.
    pub ids: HashMap<Arc<str>, usize>,
    pub steps: Vec<Step<'a>>,
    /// The composite's arguments (declared, then the tool-level transform outputs).
    pub args: IndexMap<Arc<str>, Type>,
    pub args_type: Type,
    pub tool: &'a ToolDef,
    /// The undeclared arguments already warned about (a tool without an `arguments` key):
    /// one warning per name, at its first REF.
    pub undeclared_warned: HashSet<Arc<str>>,
    /// The types a callee's declarations give, by callee file: many steps call one tool.
    shapes: HashMap<PathBuf, Arc<Shapes>>,
    /// The type of every REF, variable and transform output (`--explain-types`).
    pub explained: Vec<super::infer::TypeAt>,
    /// `output_key`s that name no step because several steps call their tool (by key: those
    /// steps), for the help of a REF that uses one.
    pub ambiguous_keys: HashMap<Arc<str>, Vec<usize>>,
    /// Whether callees' declared results are closed (`Analyzer::set_closed_results`).
    closed_results: bool,
}

/// What a callee's declared responses say about the steps that call it.
struct Shapes {
    /// Its raw response.
    response: Type,
    /// A plain step's result before its own transforms (with the `response` alias).
    result: Type,
    /// The declared response names, when it declares them.
    fields: Option<Fields>,
    /// The callee's name, when its result is closed: the declared responses exactly.
    closed: Option<Arc<str>>,
}

/// What the caller knows about the tool being checked.
pub(crate) struct Subject<'a> {
    pub tool: &'a Arc<ToolDef>,
    /// Its file, when it was read from one.
    pub file: Option<PathBuf>,
    pub source: &'a str,
    /// How messages name this tool (its tool path under the root, or its file name).
    pub name: String,
    pub declares_responses: bool,
    /// Whether to infer types from use (`super::infer`).
    pub types_from_use: bool,
    /// How deep composite callees may nest (E0619).
    pub max_nesting: usize,
    /// Whether callees' declared results are closed (`Analyzer::set_closed_results`).
    pub closed_results: bool,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(engine: &'a Engine, subject: &Subject<'a>) -> Checker<'a> {
        let tool = subject.tool;
        let args: IndexMap<Arc<str>, Type> =
            tool.arguments.iter().map(|p| (Arc::from(p.name.node.as_str()), argument_type(p))).collect();
        let args_type = Type::object(args.iter().map(|(k, t)| (k.clone(), t.clone())), true);
        let mut ids = HashMap::new();
        for (i, ins) in tool.instructions().iter().enumerate() {
            ids.entry(Arc::from(ins.execution_id.node.as_str())).or_insert(i);
        }
        let mut diags = Vec::new();
        expected_keys(tool.instructions(), &mut ids, &mut diags);
        let steps = tool
            .instructions()
            .iter()
            .map(|ins| Step {
                ins,
                key: ins.expected_key.as_ref().map(|k| Arc::from(k.node.as_str())),
                callee: None,
                fields: None,
                result: None,
                uses: Vec::new(),
                used: false,
                parts: None,
            })
            .collect();
        Checker {
            engine,
            source: subject.source,
            diags,
            ids,
            steps,
            args,
            args_type,
            tool,
            undeclared_warned: HashSet::new(),
            shapes: HashMap::new(),
            explained: Vec::new(),
            ambiguous_keys: HashMap::new(),
            closed_results: subject.closed_results,
        }
    }

    /// Runs every pass; returns the diagnostics, when there is no error the plan, and the
    /// types of every REF, variable and transform output.
    pub(crate) fn run(
        mut self,
        root: &mut ToolRoot,
        subject: &Subject<'a>,
    ) -> (Vec<Diagnostic>, Option<Plan>, Vec<super::infer::TypeAt>) {
        let ToolKind::Composite { response_reference_map, .. } = &self.tool.kind else {
            return (self.diags, None, Vec::new());
        };
        self.callees(root, &subject.name, subject.max_nesting);
        self.default_keys();
        let tool_sites = self.tool.ref_sites();

        // The tool-level transform_arguments first: its outputs are arguments to the steps.
        let tool_transform_arguments = self.tool.transform_arguments.as_ref().map(|t| {
            let env = RefEnv::plain(Owner::ToolArguments);
            let info = self.site_info(&tool_sites, |p| p == RefPlace::Variable(TransformBlock::Arguments), &env);
            let names = Names { list: Arc::new(self.args.clone()), open: !self.tool.declares_arguments };
            let r = self.transform(t, BlockSpec { names, env, warn_pass_through: false }, &info);
            for (k, ty) in &r.outputs {
                self.args.insert(k.clone(), ty.clone());
            }
            self.args_type = Type::object(self.args.iter().map(|(k, t)| (k.clone(), t.clone())), true);
            r.plan
        });

        let sites: Vec<Vec<RefSite>> = self.steps.iter().map(|s| s.ins.ref_sites()).collect();
        for comp in dag::components(&self.type_order(&sites)) {
            for i in comp {
                // A unit of the check's work: a stopped check runs out (`crate::types::stop`).
                crate::types::stop::poll();
                self.step(i, &sites[i]);
            }
        }

        // The tool as a whole, after its steps.
        let env = RefEnv::plain(Owner::Tool);
        let info = self.site_info(&tool_sites, |p| p == RefPlace::ResponseMap, &env);
        let mut result_fields: IndexMap<Arc<str>, Type> = IndexMap::new();
        let response_map = response_reference_map.as_ref().map(|map| {
            let mut out = Vec::new();
            for (k, v) in &map.entries {
                let key: Arc<str> = Arc::from(k.node.as_str());
                let (plan, ty) = self.value(v, &info, None);
                result_fields.insert(key.clone(), ty);
                if let ValuePlan::Ref(r) = plan {
                    out.push((key, r));
                }
            }
            out
        });
        if response_reference_map.is_none() {
            for s in &self.steps {
                result_fields
                    .insert(Arc::from(s.ins.execution_id.node.as_str()), s.result.clone().unwrap_or(Type::Any));
            }
        }
        let tool_transform_responses = self.tool.transform_responses.as_ref().map(|t| {
            let result_type = Type::object(result_fields.iter().map(|(k, t)| (k.clone(), t.clone())), false);
            let env = RefEnv {
                owner: Owner::Tool,
                response: Some(&result_type),
                response_fields: None,
                response_source: "",
                transformed: None,
            };
            let info = self.site_info(&tool_sites, |p| p == RefPlace::Variable(TransformBlock::Responses), &env);
            let names = Names { list: Arc::new(result_fields.clone()), open: false };
            self.transform(t, BlockSpec { names, env, warn_pass_through: false }, &info)
        });
        let outputs: HashSet<Arc<str>> =
            tool_transform_responses.as_ref().map(|r| r.outputs.keys().cloned().collect()).unwrap_or_default();
        self.responses(subject, response_reference_map.as_ref().map(|m| &m.entries[..]), &result_fields, &outputs);
        if response_reference_map.is_some() {
            self.unused_results();
        }
        self.failure_handlers();
        if subject.types_from_use {
            super::infer::infer(&mut self);
        }
        let levels = self.dag();

        let has_errors = self.diags.iter().any(Diagnostic::is_error);
        let plan = match (levels, has_errors) {
            (Some(levels), false) => Some(self.plan(
                subject,
                &levels,
                tool_transform_arguments,
                response_map,
                tool_transform_responses.map(|r| r.plan),
            )),
            _ => None,
        };
        let mut explained = std::mem::take(&mut self.explained);
        explained.sort_by_key(|t| (t.span.start, t.span.end));
        (self.diags, plan, explained)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A declared type name with its article: `an integer`, `a list<string>`.
fn a_type(t: &TypeName) -> String {
    let s = t.to_string();
    if s.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {s}")
    } else {
        format!("a {s}")
    }
}
