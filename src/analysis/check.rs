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

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;

use super::dag;
use super::lints::expected_keys;
use super::plan::*;
use super::refs::{quoted, Fields, RefEnv, RefInfo};
use super::root::{prefixed, ExactTypes, LoadedTool, MissingCallees, Resolved, ToolRoot};
use super::transform::{BlockSpec, ListLiterals, Names};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::engine::Engine;
use crate::span::Span;
use crate::tool::{
    Condition, DoneCheck, Instruction, JsonNode, Operator, ParallelExecution, Param, RefPlace, RefSite, ToolDef,
    ToolKind, Transform, TransformBlock, TypeName,
};
use crate::types::{Fit, Type};

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
}

/// What a callee's declared responses say about the steps that call it.
struct Shapes {
    /// Its raw response.
    response: Type,
    /// A plain step's result before its own transforms (with the `response` alias).
    result: Type,
    /// The declared response names, when it declares them.
    fields: Option<Fields>,
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
            let names = Names { list: self.args.clone(), open: !self.tool.declares_arguments };
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
            let names = Names { list: result_fields.clone(), open: false };
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

    /// A step without an `expected_key` is also known by its callee's `output_key` (seed
    /// 002, SPEC §5), unless that name is already an execution id or an `expected_key`, or
    /// several such steps call tools with that `output_key`: then REFs could not tell them
    /// apart, and the name is left to nobody (a REF to it says why).
    fn default_keys(&mut self) {
        let mut by_key: IndexMap<Arc<str>, Vec<usize>> = IndexMap::new();
        for (i, s) in self.steps.iter().enumerate() {
            if s.ins.expected_key.is_some() {
                continue;
            }
            let Some(key) = s.callee.as_ref().and_then(|c| c.def.as_ref()).and_then(|d| d.output_key.as_ref()) else {
                continue;
            };
            by_key.entry(Arc::from(key.node.as_str())).or_default().push(i);
        }
        for (key, users) in by_key {
            if self.ids.contains_key(&key) {
                continue;
            }
            if let [only] = users[..] {
                self.ids.insert(key.clone(), only);
                self.steps[only].key = Some(key);
            } else {
                self.ambiguous_keys.insert(key, users);
            }
        }
    }

    /// A composite callee whose own composite callees nest deeper than a run allows (E0619):
    /// the chain, once, at the step that starts it.
    fn too_deep(
        &mut self,
        root: &mut ToolRoot,
        callee: &Arc<LoadedTool>,
        name: &str,
        path: &crate::span::Spanned<String>,
        max_nesting: usize,
    ) {
        let chain = root.nesting_from(callee);
        let depth = chain.len();
        if depth <= max_nesting {
            return;
        }
        let walk = std::iter::once(name).chain(chain.iter().map(String::as_str)).collect::<Vec<_>>().join(" → ");
        self.diags.push(
            Diagnostic::new(
                Code::CompositesTooDeep,
                path.span,
                format!("`{}` nests composites {depth} deep, past the limit of {max_nesting}: {walk}", path.node),
            )
            .with_label(format!("{depth} composites deep from here"))
            .with_help(if crate::ranges::MAX_NESTING.contains(depth as f64) {
                format!(
                    "a run refuses to start a composite nested deeper than {max_nesting} (E0810): call fewer composites inside each other, or raise the limit with \
                     `tdsl run --max-nesting {depth}` (and check with `tdsl check --max-nesting {depth}`)"
                )
            } else {
                format!(
                    "a run refuses to start a composite nested deeper than {max_nesting} (E0810), and no run nests composites deeper than {}: call fewer composites inside each other",
                    crate::ranges::MAX_NESTING.max
                )
            }),
        );
    }

    /// Resolves every callee, reports those that do not resolve or load, and recursion.
    fn callees(&mut self, root: &mut ToolRoot, name: &str, max_nesting: usize) {
        let mut reported: HashSet<String> = HashSet::new();
        let mut suggestions: HashMap<String, Option<String>> = HashMap::new();
        for i in 0..self.steps.len() {
            let ins = self.steps[i].ins;
            let Some(path) = &ins.tool_definition_path else {
                // A transform step calls nothing.
                self.steps[i].fields = self.known_fields(i);
                continue;
            };
            match root.resolve(&path.node) {
                Resolved::Found(t) => {
                    if t.has_errors() {
                        let n = t.diagnostics.iter().filter(|d| d.is_error()).count();
                        self.diags.push(
                            Diagnostic::new(
                                Code::CalleeInvalid,
                                path.span,
                                format!("callee `{}` does not load: it has {n} error{}", path.node, plural(n)),
                            )
                            .with_label("this tool has errors")
                            .with_help(format!("check `{}` on its own to see them", path.node)),
                        );
                    }
                    if let Some(chain) = root.cycle_from(&t) {
                        if reported.insert(path.node.clone()) {
                            let walk = prefixed(name, chain);
                            let itself = walk.first() == walk.last();
                            let message = if itself {
                                format!("`{name}` calls itself: {}", walk.join(" → "))
                            } else {
                                format!("`{}` never returns: its callees recurse: {}", path.node, walk[1..].join(" → "))
                            };
                            self.diags.push(
                                Diagnostic::new(Code::ToolRecursion, path.span, message)
                                    .with_label("recursion starts here")
                                    .with_help("a tool may not reach itself through its callees: break the chain"),
                            );
                        }
                    } else if reported.insert(path.node.clone()) {
                        self.too_deep(root, &t, name, path, max_nesting);
                    }
                    self.steps[i].callee = Some(t);
                }
                Resolved::Missing(file) => {
                    if root.missing_callees() == MissingCallees::Error {
                        let mut d = Diagnostic::new(
                            Code::UnresolvedToolPath,
                            path.span,
                            format!("`{}` does not resolve: there is no {}", path.node, file.display()),
                        )
                        .with_label("no such tool under the root");
                        let suggestion = suggestions
                            .entry(path.node.clone())
                            .or_insert_with(|| sibling_suggestion(&path.node, &file));
                        if let Some(s) = suggestion {
                            d = d.with_help(format!("did you mean `{s}`?"));
                        } else if let Some(server) = upstream_server(&path.node) {
                            // A skill's call of an upstream server's tool (`SERVER/TOOL`).
                            d = d.with_help(format!(
                                "`{}` reads as the tool of an upstream MCP server `{server}`: pass `--upstream {server}=COMMAND|URL`",
                                path.node
                            ));
                        } else {
                            d = d.with_help(format!(
                                "tool paths resolve against the tool root, {}; pass `--root` to change it",
                                root.dir().display()
                            ));
                        }
                        self.diags.push(d);
                    }
                }
                Resolved::Invalid(why) => match root.refusal(&path.node) {
                    // A name the tools known by name refused (an upstream server's): their reason.
                    Some(r) => self.diags.push(
                        Diagnostic::new(r.code, path.span, r.message.clone())
                            .with_label(r.label.clone())
                            .with_help(r.help.clone()),
                    ),
                    None => self.diags.push(
                        Diagnostic::new(
                            Code::UnresolvedToolPath,
                            path.span,
                            format!("`{}` does not resolve: {why}", path.node),
                        )
                        .with_label("not a tool under the root")
                        .with_help("write tool paths from the root, like `/tools/scanner.tool`"),
                    ),
                },
            }
            self.steps[i].fields = self.known_fields(i);
        }
    }

    /// The fields a REF into step `i`'s result may name: for a parallel step `response`
    /// and its outputs; for another, the callee's declared responses and its outputs, when
    /// the callee declares them.
    fn known_fields(&self, i: usize) -> Option<Arc<Fields>> {
        let ins = self.steps[i].ins;
        if ins.output_path.is_some() {
            // The result is a value inside the response: its fields are not the callee's.
            return None;
        }
        let outputs = ins.transform_responses.iter().flat_map(|t| t.transforms.iter().map(|(k, _)| k.node.as_str()));
        let mut fields = Fields::new();
        if ins.is_transform_step() {
            // Its result is the object of its transforms, and nothing else.
            fields.extend(outputs.map(Arc::from));
            return Some(Arc::new(fields));
        }
        if ins.parallel_execution.is_none() {
            let callee = self.steps[i].callee.as_ref()?;
            if !callee.declares_responses {
                return None;
            }
            let def = callee.def.as_ref()?;
            fields.extend(def.responses.iter().map(|p| Arc::from(p.name.node.as_str())));
        }
        fields.insert(Arc::from("response"));
        if ins.continue_on_error.as_ref().is_some_and(|c| c.node) {
            // What a failure leaves (`failure_type`).
            fields.extend(["status", "error_message"].map(Arc::from));
        }
        fields.extend(outputs.map(Arc::from));
        Some(Arc::new(fields))
    }

    /// Step `i` mentions step `j` (in a REF string, or after `REF:` in an expression): the
    /// order in which types are worked out.
    fn type_order(&self, sites: &[Vec<RefSite>]) -> Vec<Vec<usize>> {
        let mut deps = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let mut d: Vec<usize> =
                sites[i].iter().filter_map(|s| self.ids.get(&*s.path.context.node).copied()).collect();
            let ins = step.ins;
            let mut texts: Vec<&str> = Vec::new();
            for t in [&ins.transform_arguments, &ins.transform_responses].into_iter().flatten() {
                texts.extend(t.transforms.iter().map(|(_, e)| &*e.value));
                for (_, v) in &t.variables {
                    v.walk(&mut |n| texts.extend(n.as_str().map(|s| &*s.value)));
                }
            }
            if let Some(DoneCheck::Expression(e)) = &ins.done_check {
                texts.push(&e.value);
            }
            for t in texts {
                d.extend(super::refs::mentioned_contexts(t).iter().filter_map(|c| self.ids.get(*c).copied()));
            }
            d.sort_unstable();
            d.dedup();
            deps.push(d);
        }
        deps
    }

    /// Checks and types the REF strings of `sites` whose place passes `keep`.
    fn site_info(&mut self, sites: &[RefSite], keep: impl Fn(RefPlace) -> bool, env: &RefEnv<'_>) -> RefInfo {
        let mut info = RefInfo::new();
        for site in sites.iter().filter(|s| keep(s.place)) {
            let r = self.json_ref(site, env);
            info.insert(site.span.start, r);
        }
        info
    }

    /// Checks step `i` and works out its result type.
    fn step(&mut self, i: usize, sites: &[RefSite]) {
        let ins = self.steps[i].ins;
        let callee = self.steps[i].callee.clone();
        let def = callee.as_ref().and_then(|c| c.def.as_ref());
        let declared_responses = callee.as_ref().filter(|c| c.declares_responses).and(def).map(|d| &d.responses[..]);
        let shapes = self.callee_shapes(callee.as_ref(), declared_responses);
        let parallel = ins.parallel_execution.as_ref();
        let continues = ins.continue_on_error.as_ref().is_some_and(|c| c.node);
        let mut element = parallel_element(declared_responses, &shapes);
        if continues {
            // A child that failed leaves `{"status": "failed", …}` in the list (`exec::data::gather_children`).
            element = element.union(failure_type());
        }
        let raw = if parallel.is_some() { Type::List(Arc::new(element.clone())) } else { shapes.response.clone() };
        let raw_fields: Option<&Fields> = if parallel.is_some() { None } else { shapes.fields.as_ref() };
        let owner = Owner::Step(i);
        // A transform step (SPEC §6.4 ext) has no response: `REF:response` is an error there.
        let transform_step = ins.is_transform_step();
        let callee_path = ins.tool_path().unwrap_or_default().to_string();
        let response_env = RefEnv {
            owner,
            response: (!transform_step).then_some(&raw),
            response_fields: raw_fields,
            response_source: &callee_path,
            transformed: None,
        };

        let info = self.step_refs(ins, owner, sites, response_env);
        let mut supplied: IndexMap<Arc<str>, Supplied> = IndexMap::new();
        let (arguments, argument_names) = self.step_arguments(ins, &info, &mut supplied);
        let transform_arguments = ins
            .transform_arguments
            .as_ref()
            .map(|t| self.step_transform_arguments(t, owner, &argument_names, &info, &mut supplied));
        let conditions = ins.conditions.iter().map(|c| self.condition(c, &info)).collect();
        let done_check = ins.done_check.as_ref().and_then(|d| self.step_done_check(d, owner, &argument_names, &info));
        let done_value = ins.done_value.as_ref().map(|v| self.value(v, &info, None));
        let parallel_plan = parallel.map(|p| self.step_parallel(p, &info, &mut supplied));

        if let Some(c) = &callee {
            let supplied: Vec<Supplied> = supplied.into_values().collect();
            self.call(ins, c, &supplied);
        }

        let transform_responses = ins.transform_responses.as_ref().map(|t| {
            let names = match (parallel, declared_responses) {
                _ if transform_step => Names::default(),
                (Some(_), _) => Names::default(),
                (None, Some(rs)) => Names {
                    list: rs
                        .iter()
                        .map(|p| {
                            let exact = callee.as_ref().and_then(|c| c.exact.as_deref());
                            (Arc::from(p.name.node.as_str()), param_type_as(p, exact_type(exact, p, true)))
                        })
                        .collect(),
                    open: false,
                },
                (None, None) => Names { list: IndexMap::new(), open: true },
            };
            self.transform(t, BlockSpec { names, env: response_env, warn_pass_through: false }, &info)
        });

        if transform_step {
            self.no_response_in_transform_step(ins);
        }

        // The result, as REFs to this step see it (SPEC §6.4): a transform step's is exactly
        // the object of its transforms.
        let mut fields: crate::types::Fields = match parallel {
            _ if transform_step => crate::types::Fields::default(),
            Some(_) => [(Arc::from("response"), Type::List(Arc::new(element.clone())))].into_iter().collect(),
            None => object_fields(&shapes.result).into_iter().collect(),
        };
        for (k, ty) in transform_responses.iter().flat_map(|r| &r.outputs) {
            fields.insert(k.clone(), ty.clone());
        }
        let mut result = Type::object(fields, !transform_step);
        if let Some(path) = &ins.output_path {
            result = self.output_path_type(ins, path, result);
        }
        self.retries_past_breaker(ins);
        if continues {
            // A failure leaves `{"status": "failed", "error_message": …}` for REFs
            // (`exec::data::failed_result`), whatever the callee declares.
            result = result.union(failed_step_type());
        }
        if !ins.conditions.is_empty() {
            result = result.union(Type::Null);
        }
        if ins.done_check.is_some() {
            result = result.union(done_value.as_ref().map_or(Type::Null, |(_, t)| t.clone()));
        }
        self.steps[i].result = Some(result);
        self.steps[i].parts = Some(Parts {
            arguments,
            transform_arguments,
            conditions,
            parallel: parallel_plan,
            done_check,
            done_value: done_value.map(|(p, _)| p),
            transform_responses: transform_responses.map(|r| r.plan),
        });
    }

    /// `REF:response` in a transform step (E0109 from the REF or the expression checker,
    /// whose message says "only inside `transform_responses`", where it is): say instead
    /// that a transform step has no response, and what to read.
    fn no_response_in_transform_step(&mut self, ins: &Instruction) {
        for d in self.diags.iter_mut().filter(|d| {
            d.code == Code::ResponseOutsideTransform && ins.span.start <= d.span.start && d.span.end <= ins.span.end
        }) {
            d.message = format!(
                "`REF:response` has no value in transform step `{}`: it calls nothing, so it has no response",
                ins.execution_id.node
            );
            d.help = Some(
                "read the results it joins as `REF:<execution_id>.field`, in `variables` or inside its transforms"
                    .to_string(),
            );
        }
    }

    /// Every REF string of a step, checked and typed: those in `transform_responses` see
    /// the raw response (`response_env`), `iterate_over` sees the names the step's own
    /// `transform_arguments` produce (to report them), the others see neither.
    fn step_refs(&mut self, ins: &Instruction, owner: Owner, sites: &[RefSite], response_env: RefEnv<'_>) -> RefInfo {
        let transformed: Vec<Arc<str>> = ins
            .transform_arguments
            .iter()
            .flat_map(|t| t.transforms.iter().map(|(k, _)| Arc::from(k.node.as_str())))
            .collect();
        let mut info = RefInfo::new();
        for site in sites {
            let env = match site.place {
                RefPlace::Variable(TransformBlock::Responses) => response_env,
                RefPlace::IterateOver => RefEnv { transformed: Some(&transformed), ..RefEnv::plain(owner) },
                _ => RefEnv::plain(owner),
            };
            let r = self.json_ref(site, &env);
            info.insert(site.span.start, r);
        }
        info
    }

    /// A step's `arguments`, as written: their plans, and their names with their types
    /// (the scope of the step's expressions). Each is recorded in `supplied`.
    fn step_arguments(
        &mut self,
        ins: &Instruction,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> (Vec<(Arc<str>, ValuePlan)>, Names) {
        let mut names = Names::default();
        let mut arguments = Vec::new();
        for (k, v) in ins.arguments.iter().flat_map(|a| &a.entries) {
            let (plan, ty) = self.value(v, info, None);
            let key: Arc<str> = Arc::from(k.node.as_str());
            names.set(&key, ty.clone());
            supplied.insert(
                key.clone(),
                Supplied { name: key.clone(), key_span: k.span, ty, value_span: v.span, what: "argument" },
            );
            arguments.push((key, plan));
        }
        (arguments, names)
    }

    /// A step's `transform_arguments`: each output replaces what `supplied` held under its
    /// name.
    fn step_transform_arguments(
        &mut self,
        t: &Transform,
        owner: Owner,
        names: &Names,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> TransformPlan {
        let spec = BlockSpec { names: names.clone(), env: RefEnv::plain(owner), warn_pass_through: true };
        let r = self.transform(t, spec, info);
        // The last transform written to a key decides its value and where it is reported.
        for (tk, e) in &t.transforms {
            let name: Arc<str> = Arc::from(tk.node.as_str());
            let Some(ty) = r.outputs.get(&name) else { continue };
            let s = Supplied {
                name: name.clone(),
                key_span: tk.span,
                ty: ty.clone(),
                value_span: e.span,
                what: "transform output",
            };
            supplied.shift_remove(&name);
            supplied.insert(name, s);
        }
        r.plan
    }

    /// A step's `done_check`: conditions, or an expression over the step's arguments.
    fn step_done_check(&mut self, d: &DoneCheck, owner: Owner, names: &Names, info: &RefInfo) -> Option<DoneCheckPlan> {
        match d {
            DoneCheck::Conditions(cs) => {
                Some(DoneCheckPlan::Conditions(cs.iter().map(|c| self.condition(c, info)).collect()))
            }
            DoneCheck::Expression(e) => {
                let compiled = self.compile(e, names, &RefEnv::plain(owner), &ListLiterals::new());
                compiled.program.map(DoneCheckPlan::Expression)
            }
        }
    }

    /// A step's `parallel_execution`: `iterate_over` must be a list; its element is supplied
    /// to each child under `child_argument_name`.
    fn step_parallel(
        &mut self,
        p: &ParallelExecution,
        info: &RefInfo,
        supplied: &mut IndexMap<Arc<str>, Supplied>,
    ) -> ParallelPlan {
        let (plan, ty) = self.value(&p.iterate_over, info, None);
        let list_or_null = Type::any_list().union(Type::Null);
        if ty.fits(&list_or_null) == Fit::No {
            self.diags.push(
                Diagnostic::new(
                    Code::IterateOverNotList,
                    p.iterate_over.span,
                    format!("`iterate_over` must be a list, and this is {ty:#}"),
                )
                .with_label(format!("this is {ty}"))
                .with_help("iterate over a list: a REF to a list field, or a literal list"),
            );
        }
        let elem = ty.element();
        let elem = if elem == Type::Never { Type::Any } else { elem };
        let name: Arc<str> = Arc::from(p.child_argument_name.node.as_str());
        supplied.shift_remove(&name);
        supplied.insert(
            name.clone(),
            Supplied {
                name: name.clone(),
                key_span: p.child_argument_name.span,
                ty: elem,
                value_span: p.iterate_over.span,
                what: "element",
            },
        );
        ParallelPlan { iterate_over: plan, child_argument_name: name }
    }

    fn callee_shapes(&mut self, callee: Option<&Arc<LoadedTool>>, declared: Option<&[Param]>) -> Arc<Shapes> {
        let exact = callee.and_then(|c| c.exact.as_deref());
        let make = || {
            Arc::new(Shapes {
                response: response_type(declared, exact),
                result: plain_result_type(declared, exact),
                fields: declared.map(|rs| rs.iter().map(|p| Arc::from(p.name.node.as_str())).collect()),
            })
        };
        match callee {
            Some(c) => self.shapes.entry(c.file.clone()).or_insert_with(make).clone(),
            None => make(),
        }
    }

    /// A condition as a plan, reporting comparisons that cannot succeed.
    fn condition(&mut self, c: &Condition, info: &RefInfo) -> ConditionPlan {
        match c {
            Condition::Leaf { param, operator, value, span } => {
                let (param_plan, param_ty) = self.value(param, info, None);
                let value = value.as_ref().map(|v| (v, self.value(v, info, None)));
                if is_numeric(operator.node) {
                    let number = Type::Number.union(Type::Null);
                    let operands = std::iter::once((param, &param_ty)).chain(value.as_ref().map(|(v, (_, t))| (*v, t)));
                    for (node, ty) in operands {
                        if ty.fits(&number) == Fit::No {
                            self.diags.push(
                                Diagnostic::new(
                                    Code::ConditionType,
                                    node.span,
                                    format!("`{}` compares numbers, and this is {ty:#}", operator.node),
                                )
                                .with_label(format!("this is {ty}"))
                                .with_secondary(operator.span, "a numeric comparison")
                                .with_help("compare numbers, or use `equals` / `contains` for other values"),
                            );
                        }
                    }
                }
                ConditionPlan::Leaf {
                    param: param_plan,
                    operator: operator.node,
                    value: value.map(|(_, (p, _))| p),
                    span: *span,
                }
            }
            Condition::Group { logic, conditions, span } => ConditionPlan::Group {
                logic: logic.node,
                conditions: conditions.iter().map(|c| self.condition(c, info)).collect(),
                span: *span,
            },
        }
    }

    /// The call against the callee's declared arguments: undeclared, missing, mistyped.
    fn call(&mut self, ins: &Instruction, callee: &LoadedTool, supplied: &[Supplied]) {
        let Some(def) = &callee.def else { return };
        let path = ins.tool_path().unwrap_or_default();
        let by_name: HashMap<&str, &Param> = def.arguments.iter().map(|p| (p.name.node.as_str(), p)).collect();
        let given: HashSet<&str> = supplied.iter().map(|s| &*s.name).collect();
        if callee.declares_arguments {
            let declared: Vec<&str> = def.arguments.iter().map(|p| p.name.node.as_str()).collect();
            for s in supplied.iter().filter(|s| !by_name.contains_key(&*s.name)) {
                let mut d = Diagnostic::new(
                    Code::UndeclaredCalleeArgument,
                    s.key_span,
                    format!("`{path}` has no argument `{}`", s.name),
                )
                .with_label(format!("this {} is not an argument of the callee", s.what));
                d = match did_you_mean(&s.name, declared.iter().copied()) {
                    Some(m) => d.with_help(format!("did you mean `{m}`?")),
                    None if declared.is_empty() => d.with_help(format!("`{path}` declares no arguments")),
                    None => d.with_help(format!("`{path}` declares {}", quoted(&declared))),
                };
                self.diags.push(d);
            }
        }
        let missing: Vec<&str> = def
            .arguments
            .iter()
            .filter(|p| {
                p.is_required()
                    && crate::tool::validate::default_of(p).is_none()
                    && !given.contains(p.name.node.as_str())
            })
            .map(|p| p.name.node.as_str())
            .collect();
        if !missing.is_empty() {
            let list = quoted(&missing);
            let n = missing.len();
            self.diags.push(
                Diagnostic::new(
                    Code::MissingCalleeArgument,
                    ins.tool_definition_path.as_ref().map_or(ins.span, |p| p.span),
                    format!(
                        "step `{}` does not supply the required argument{} {list} of `{path}`",
                        ins.execution_id.node,
                        plural(n)
                    ),
                )
                .with_label(format!("called without {list}"))
                .with_help("add it to `arguments` (or produce it with a `transform_arguments` output)"),
            );
        }
        self.literal_constraints(ins, &by_name);
        for s in supplied {
            let Some(p) = by_name.get(&*s.name) else { continue };
            let expected = accepted_type_as(p, exact_type(callee.exact.as_deref(), p, false));
            if s.ty.fits(&expected) == Fit::No {
                let declared = p.type_or_any();
                self.diags.push(
                    Diagnostic::new(
                        Code::CalleeArgumentType,
                        s.value_span,
                        format!(
                            "argument `{}` of `{path}` must be {}, and this is {:#}",
                            s.name,
                            a_type(&declared),
                            s.ty
                        ),
                    )
                    .with_label(format!("this is {}", s.ty))
                    .with_secondary(s.key_span, format!("{} `{}`", s.what, s.name))
                    .with_help(format!(
                        "`{path}` declares `{}` with \"type_name\": \"{declared}\"{}",
                        s.name,
                        if p.is_required() && crate::tool::validate::default_of(p).is_none() {
                            ""
                        } else {
                            " (or null)"
                        }
                    )),
                );
            }
        }
    }

    /// Literal arguments against the callee's declared constraints (`enum`, `minimum`,
    /// `pattern`, …): a literal that breaks one can never be called (E0630). Arguments with
    /// a REF inside are left to the run, and so are those of the wrong type (E0613).
    fn literal_constraints(&mut self, ins: &Instruction, by_name: &HashMap<&str, &Param>) {
        let Some(args) = &ins.arguments else { return };
        for (k, v) in &args.entries {
            let Some(p) = by_name.get(k.node.as_str()).filter(|p| !p.constraints.is_empty()) else { continue };
            let Some(value) = crate::tool::constraints::literal(v) else { continue };
            if value.is_null() || !crate::tool::validate::fits(&value, &p.type_or_any()) {
                continue;
            }
            if let Some(why) = p.constraints.violation(&value) {
                let path = ins.tool_path().unwrap_or_default();
                self.diags.push(constraint_diagnostic(
                    v.span,
                    format!("argument `{}` of `{path}` {why}", k.node),
                    p,
                    why.key,
                    format!("`{path}` declares the allowed values of `{}`", k.node),
                    false,
                ));
            }
        }
    }

    /// `response_reference_map` against the declared responses.
    fn responses(
        &mut self,
        subject: &Subject<'_>,
        map: Option<&[(crate::span::Spanned<String>, JsonNode)]>,
        result_fields: &IndexMap<Arc<str>, Type>,
        outputs: &HashSet<Arc<str>>,
    ) {
        let declared = &self.tool.responses;
        if let Some(map) = map.filter(|_| subject.declares_responses) {
            let names: Vec<&str> = declared.iter().map(|p| p.name.node.as_str()).collect();
            for (k, v) in map {
                match declared.iter().find(|p| p.name.node == k.node) {
                    None => {
                        let mut d = Diagnostic::new(
                            Code::UnknownResponse,
                            k.span,
                            format!("`{}` is not a declared response of this tool", k.node),
                        )
                        .with_label("not in `responses`");
                        d = match did_you_mean(&k.node, names.iter().copied()) {
                            Some(s) => d.with_help(format!("did you mean `{s}`?")),
                            None if names.is_empty() => d.with_help("this tool declares no responses"),
                            None => d.with_help(format!("the declared responses are {}", quoted(&names))),
                        };
                        self.diags.push(d);
                    }
                    Some(p) => {
                        let literal = crate::tool::constraints::literal(v)
                            .filter(|x| !x.is_null() && crate::tool::validate::fits(x, &p.type_or_any()));
                        if let Some(why) = literal.and_then(|x| p.constraints.violation(&x)) {
                            self.diags.push(constraint_diagnostic(
                                v.span,
                                format!("response `{}` {why}", k.node),
                                p,
                                why.key,
                                "map the response to a value its declaration allows".to_string(),
                                true,
                            ));
                        }
                        let ty = result_fields.get(k.node.as_str()).cloned().unwrap_or(Type::Any);
                        let expected = param_type(p);
                        if ty.fits(&expected) == Fit::No {
                            let declared = p.type_or_any();
                            self.diags.push(
                                Diagnostic::new(
                                    Code::ResponseType,
                                    v.span,
                                    format!("response `{}` must be {}, and this is {ty:#}", k.node, a_type(&declared)),
                                )
                                .with_label(format!("this is {ty}"))
                                .with_secondary(p.type_name.as_ref().map_or(p.name.span, |t| t.span), "declared here")
                                .with_help(
                                    "map the response to a value of its declared type, or change its `type_name`",
                                ),
                            );
                        }
                    }
                }
            }
        }
        for p in declared.iter().filter(|p| p.is_required()) {
            let name = p.name.node.as_str();
            let mapped = result_fields.contains_key(name) || outputs.contains(name);
            if !mapped {
                let help = if map.is_some() {
                    format!("add `\"{name}\": \"REF:<step>.<field>\"` to `response_reference_map`")
                } else {
                    format!(
                        "without a `response_reference_map` the result holds each step's result by id; add `\"response_reference_map\": {{\"{name}\": \"REF:<step>.<field>\"}}`"
                    )
                };
                self.diags.push(
                    Diagnostic::new(
                        Code::UnmappedResponse,
                        p.name.span,
                        format!("required response `{name}` is never mapped"),
                    )
                    .with_label("required, but nothing produces it")
                    .with_help(help),
                );
            }
        }
    }

    fn unused_results(&mut self) {
        let unused: Vec<&Instruction> = self.steps.iter().filter(|s| !s.used).map(|s| s.ins).collect();
        for ins in unused {
            {
                let id = &ins.execution_id.node;
                self.diags.push(
                    Diagnostic::new(Code::UnusedStepResult, ins.execution_id.span, format!("the result of step `{id}` is never used"))
                        .with_label("no REF reads it and no response maps it")
                        .with_help(format!(
                            "map it in `response_reference_map` or read it with `REF:{id}.…`; if the step runs only for its effects, this is expected"
                        )),
                );
            }
        }
    }

    /// Adds the `dependencies` edges, reports unknown ones and cycles; returns the levels
    /// when the graph is acyclic.
    fn dag(&mut self) -> Option<Vec<usize>> {
        for i in 0..self.steps.len() {
            let ins = self.steps[i].ins;
            for dep in &ins.dependencies {
                match self.ids.get(dep.node.as_str()) {
                    Some(&j) => self.steps[i].uses.push(Use {
                        to: j,
                        span: dep.span,
                        carries: String::new(),
                        kind: UseKind::Dependency,
                    }),
                    None => {
                        let ids = self.steps.iter().map(|s| s.ins.execution_id.node.as_str());
                        let mut d = Diagnostic::new(
                            Code::UnknownDependency,
                            dep.span,
                            format!("step `{}` depends on `{}`, which is not a step", ins.execution_id.node, dep.node),
                        )
                        .with_label("no such step");
                        d = match did_you_mean(&dep.node, ids) {
                            Some(s) => d.with_help(format!("did you mean `{s}`?")),
                            None => d.with_help("`dependencies` lists execution ids of steps of this tool"),
                        };
                        self.diags.push(d);
                    }
                }
            }
        }
        let deps = self.deps();
        let comps = dag::components(&deps);
        let mut cyclic = false;
        for comp in comps.iter().filter(|c| dag::is_cycle(c, &deps)) {
            cyclic = true;
            let cycle = dag::shortest_cycle(comp[0], comp, &deps);
            self.cycle(&cycle, comp.len());
        }
        if cyclic {
            return None;
        }
        dag::levels(&deps)
    }

    fn deps(&self) -> Vec<Vec<usize>> {
        self.steps
            .iter()
            .map(|s| {
                let mut d: Vec<usize> = s.uses.iter().map(|u| u.to).collect();
                d.sort_unstable();
                d.dedup();
                d
            })
            .collect()
    }

    fn cycle(&mut self, cycle: &[usize], size: usize) {
        let id = |i: usize| self.steps[i].ins.execution_id.node.as_str();
        let names: Vec<String> = cycle.iter().map(|&i| format!("`{}`", id(i))).collect();
        let mut labels: Vec<(Span, String)> = Vec::new();
        for pair in cycle.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            if let Some(u) = self.steps[from].uses.iter().find(|u| u.to == to) {
                let how = match u.kind {
                    UseKind::Ref => format!("`{}` uses `{}` here", id(from), id(to)),
                    UseKind::Dependency => format!("`{}` waits for `{}` here", id(from), id(to)),
                };
                labels.push((u.span, how));
            }
        }
        let message = if cycle.len() == 2 {
            format!("step {} depends on itself", names[0])
        } else {
            format!("dependency cycle: {}", names.join(" → "))
        };
        let Some(((first_span, first_label), rest)) = labels.split_first() else { return };
        let mut d = Diagnostic::new(Code::DependencyCycle, *first_span, message).with_label(first_label.clone());
        for (span, label) in rest {
            d = d.with_secondary(*span, label.clone());
        }
        let more = if size > cycle.len() - 1 {
            format!(" ({size} steps are caught in cycles here; this is the shortest through {})", names[0])
        } else {
            String::new()
        };
        // A step's own transform that names the step: its result there is `REF:response`.
        let own = cycle.len() == 2 && cycle[0] == cycle[1] && {
            let ins = self.steps[cycle[0]].ins;
            ins.transform_responses
                .as_ref()
                .is_some_and(|t| t.span.start <= first_span.start && first_span.end <= t.span.end)
        };
        let help = if own {
            let me = id(cycle[0]);
            format!(
                "inside `{me}`'s own `transform_responses` its result is `REF:response`: write `REF:response.<field>` for `REF:{me}.<field>`"
            )
        } else {
            format!(
                "a step can only use the results of steps that finish before it: remove one of these references or dependencies{more}"
            )
        };
        self.diags.push(d.with_help(help));
    }

    /// Puts the plan together: steps in execution order, REF contexts renumbered.
    fn plan(
        &mut self,
        subject: &Subject<'_>,
        levels: &[usize],
        transform_arguments: Option<TransformPlan>,
        response_map: Option<Vec<(Arc<str>, RefPlan)>>,
        transform_responses: Option<TransformPlan>,
    ) -> Plan {
        let mut order: Vec<usize> = (0..self.steps.len()).collect();
        order.sort_by(|&a, &b| {
            let key = |i: usize| (levels[i], self.steps[i].ins.execution_id.node.as_str(), i);
            key(a).cmp(&key(b))
        });
        let mut new_id = vec![StepId(0); self.steps.len()];
        for (pos, &i) in order.iter().enumerate() {
            new_id[i] = StepId(pos);
        }
        let deps = self.deps();
        let mut by_level: Vec<Vec<StepId>> = Vec::new();
        let mut steps = Vec::with_capacity(order.len());
        for &i in &order {
            let step = &mut self.steps[i];
            let ins = step.ins;
            let parts = step.parts.take().unwrap_or_else(|| Parts {
                arguments: Vec::new(),
                transform_arguments: None,
                conditions: Vec::new(),
                parallel: None,
                done_check: None,
                done_value: None,
                transform_responses: None,
            });
            let mut depends_on: Vec<StepId> = deps[i].iter().map(|&j| new_id[j]).collect();
            depends_on.sort_unstable();
            let mut inputs: Vec<StepInput> = Vec::new();
            let mut slot: HashMap<StepId, usize> = HashMap::new();
            let mut seen: HashSet<(StepId, &str)> = HashSet::new();
            for u in &step.uses {
                let from = new_id[u.to];
                let at = *slot.entry(from).or_insert_with(|| {
                    inputs.push(StepInput { from, carries: Vec::new(), manual: false });
                    inputs.len() - 1
                });
                match u.kind {
                    UseKind::Dependency => inputs[at].manual = true,
                    UseKind::Ref => {
                        if seen.insert((from, u.carries.as_str())) {
                            inputs[at].carries.push(Arc::from(u.carries.as_str()));
                        }
                    }
                }
            }
            inputs.sort_by_key(|x| x.from);
            let level = levels[i];
            if by_level.len() <= level {
                by_level.resize(level + 1, Vec::new());
            }
            by_level[level].push(new_id[i]);
            let mut plan = StepPlan {
                id: new_id[i],
                execution_id: Arc::from(ins.execution_id.node.as_str()),
                index: i,
                tool_path: ins.tool_path().map(Arc::from),
                callee_file: step.callee.as_ref().map(|c| c.file.clone()),
                level,
                depends_on,
                inputs,
                arguments: parts.arguments,
                transform_arguments: parts.transform_arguments,
                conditions: parts.conditions,
                parallel: parts.parallel,
                done_check: parts.done_check,
                done_value: parts.done_value,
                transform_responses: parts.transform_responses,
                retry: ins.retry.clone(),
                timeout_seconds: ins.timeout_seconds.as_ref().map(|t| t.node),
                continue_on_error: ins.continue_on_error.as_ref().is_some_and(|c| c.node),
                output_path: ins
                    .output_path
                    .as_ref()
                    .map(|p| p.segments.iter().map(|s| s.node.clone()).collect::<Vec<_>>().into()),
                expected_key: step.key.clone(),
                result_type: step.result.clone().unwrap_or(Type::Any),
                span: ins.span,
            };
            renumber_step(&mut plan, &new_id);
            steps.push(plan);
        }
        let mut plan = Plan {
            tool: subject.tool.clone(),
            file: subject.file.clone(),
            transform_arguments,
            steps,
            levels: by_level,
            response_map,
            transform_responses,
        };
        if let Some(map) = &mut plan.response_map {
            for (_, r) in map {
                renumber_ref(r, &new_id);
            }
        }
        for t in plan.transform_responses.iter_mut().chain(plan.transform_arguments.iter_mut()) {
            renumber_transform(t, &new_id);
        }
        plan
    }
}

/// An argument the step passes to its callee, from wherever it comes.
struct Supplied {
    name: Arc<str>,
    key_span: Span,
    ty: Type,
    value_span: Span,
    /// `argument`, `transform output` or `element` (of a parallel step), for labels.
    what: &'static str,
}

/// E0630: a literal that breaks a declared constraint. `declared_here` when the
/// declaration is in the same file (a response), so that a secondary label can show it.
fn constraint_diagnostic(
    span: Span,
    message: String,
    p: &Param,
    key: &str,
    help: String,
    declared_here: bool,
) -> Diagnostic {
    let c = &p.constraints;
    let at = match key {
        "enum" => c.enum_values.as_ref().map(|x| x.span),
        "minimum" => c.minimum.as_ref().map(|x| x.span),
        "maximum" => c.maximum.as_ref().map(|x| x.span),
        "min_length" => c.min_length.as_ref().map(|x| x.span),
        "max_length" => c.max_length.as_ref().map(|x| x.span),
        "pattern" => c.pattern.as_ref().map(|x| x.span),
        "items" => c.items.as_ref().map(|x| x.span),
        _ => None,
    };
    let d = Diagnostic::new(Code::LiteralBreaksConstraint, span, message)
        .with_label(format!("refused by `{key}`"))
        .with_help(help);
    match at.filter(|_| declared_here) {
        Some(s) => d.with_secondary(s, "declared here"),
        None => d,
    }
}

fn is_numeric(op: Operator) -> bool {
    matches!(
        op,
        Operator::GreaterThan | Operator::LessThan | Operator::GreaterThanOrEquals | Operator::LessThanOrEquals
    )
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

/// The static type of a declared `type_name`.
pub(crate) fn declared_type(t: &TypeName) -> Type {
    match t {
        TypeName::String => Type::Str,
        TypeName::Number => Type::Number,
        TypeName::Integer => Type::Int,
        TypeName::Boolean => Type::Bool,
        TypeName::List(None) => Type::any_list(),
        TypeName::List(Some(e)) => Type::List(Arc::new(declared_type(e))),
        TypeName::Object => Type::any_object(),
        TypeName::File => Type::File,
        TypeName::Any => Type::Any,
    }
}

/// A declared argument's or response's type: its `type_name`, or null when not required.
pub(crate) fn param_type(p: &Param) -> Type {
    param_type_as(p, declared_type(&p.type_or_any()))
}

/// [`param_type`] with the declared value's type `t` (an exact type, [`ExactTypes`]).
fn param_type_as(p: &Param, t: Type) -> Type {
    if p.is_required() {
        t
    } else {
        t.union(Type::Null)
    }
}

/// A callee's declaration's value type: the exact one when the callee has it (an upstream
/// tool's schema), else its `type_name`'s.
fn exact_type(exact: Option<&ExactTypes>, p: &Param, response: bool) -> Type {
    let known = exact.and_then(|e| if response { &e.responses } else { &e.arguments }.get(p.name.node.as_str()));
    known.cloned().unwrap_or_else(|| declared_type(&p.type_or_any()))
}

/// A composite's own argument as `REF:arguments.X` sees it: a declaration with a `default`
/// is never null inside, since the run fills the default in for an absent or null value.
pub(crate) fn argument_type(p: &Param) -> Type {
    if crate::tool::validate::default_of(p).is_some() {
        declared_type(&p.type_or_any())
    } else {
        param_type(p)
    }
}

/// What a caller may pass for a callee's argument: its type, or null when it is optional or
/// has a `default` (which the run then fills in).
pub(crate) fn accepted_type(p: &Param) -> Type {
    accepted_type_as(p, declared_type(&p.type_or_any()))
}

/// [`accepted_type`] with the declared value's type `t`.
fn accepted_type_as(p: &Param, t: Type) -> Type {
    if p.is_required() && crate::tool::validate::default_of(p).is_none() {
        t
    } else {
        t.union(Type::Null)
    }
}

/// What a step or a fan-out child that failed under `continue_on_error` leaves:
/// `{"status": "failed", "error_message": …}` (`exec::data::failed_result`), exactly.
pub(crate) fn failure_type() -> Type {
    Type::object([(Arc::from("status"), Type::Str), (Arc::from("error_message"), Type::Str)], false)
}

/// [`failure_type`] as REFs to the step see it: `REF:<step>.response` is the whole failure
/// (the response alias, SPEC §2: it has no `response` key), while the value itself has no
/// `response` field (null when read in an expression).
fn failed_step_type() -> Type {
    let failure = failure_type();
    Type::object(
        [
            (Arc::from("status"), Type::Str),
            (Arc::from("error_message"), Type::Str),
            (Arc::from("response"), failure.union(Type::Null)),
        ],
        false,
    )
}

/// A callee's raw response: an object of its declared responses (open: a tool may return
/// more than it declares), or any object when it declares none.
fn response_type(declared: Option<&[Param]>, exact: Option<&ExactTypes>) -> Type {
    match declared {
        Some(rs) => Type::object(
            rs.iter().map(|p| (Arc::from(p.name.node.as_str()), param_type_as(p, exact_type(exact, p, true)))),
            true,
        ),
        None => Type::any_object(),
    }
}

/// A plain step's result before its transforms: the response with the `response` alias
/// (SPEC §2: the key `response` when declared, else the whole result).
fn plain_result_type(declared: Option<&[Param]>, exact: Option<&ExactTypes>) -> Type {
    let raw = response_type(declared, exact);
    let mut fields = object_fields(&raw);
    if !fields.iter().any(|(k, _)| &**k == "response") {
        let alias = if declared.is_some() { raw.clone() } else { Type::Any };
        fields.push((Arc::from("response"), alias));
    }
    Type::object(fields, true)
}

/// A parallel child's element is its callee's response as returned (SPEC §6.3): the
/// declared response object, or the value of a declared `response` when the tool returns a
/// non-object; anything when it declares no responses.
fn parallel_element(declared_responses: Option<&[Param]>, shapes: &Shapes) -> Type {
    match declared_responses {
        None => Type::Any,
        Some(_) => match object_fields(&shapes.response).into_iter().find(|(k, _)| &**k == "response") {
            Some((_, alias)) => shapes.response.clone().union(alias),
            None => shapes.response.clone(),
        },
    }
}

fn object_fields(t: &Type) -> Vec<(Arc<str>, Type)> {
    match t {
        Type::Object(o) => o.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    }
}

/// The server of a `tool_definition_path` written as an upstream MCP server's tool,
/// `SERVER/TOOL` (no leading `/`, no `.tool`, one `/`): what `--upstream SERVER=…` names.
fn upstream_server(tool_path: &str) -> Option<&str> {
    let (server, tool) = tool_path.split_once('/')?;
    let word = |w: &str, dot: bool| {
        !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (dot && b == b'.'))
    };
    (word(server, false) && word(tool, true) && !tool.ends_with(".tool")).then_some(server)
}

/// A tool path next to `wanted` whose file name is close to the one missing.
fn sibling_suggestion(tool_path: &str, file: &std::path::Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    let dir = file.parent()?;
    let entries: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tool"))
        .collect();
    let best = did_you_mean(name, entries.iter().map(String::as_str))?;
    let prefix = tool_path.rsplit_once('/').map_or("", |(p, _)| p);
    Some(format!("{prefix}/{best}"))
}

fn renumber_ref(r: &mut RefPlan, new_id: &[StepId]) {
    if let RefContext::Step(id) = &mut r.context {
        *id = new_id[id.0];
    }
}

fn renumber_value(v: &mut ValuePlan, new_id: &[StepId]) {
    match v {
        ValuePlan::Ref(r) => renumber_ref(r, new_id),
        ValuePlan::List(items) => items.iter_mut().for_each(|x| renumber_value(x, new_id)),
        ValuePlan::Object(entries) => entries.iter_mut().for_each(|(_, x)| renumber_value(x, new_id)),
        ValuePlan::Literal(_) | ValuePlan::Call(_) => {}
    }
}

fn renumber_transform(t: &mut TransformPlan, new_id: &[StepId]) {
    for (_, v) in &mut t.variables {
        renumber_value(v, new_id);
    }
}

fn renumber_condition(c: &mut ConditionPlan, new_id: &[StepId]) {
    match c {
        ConditionPlan::Leaf { param, value, .. } => {
            renumber_value(param, new_id);
            if let Some(v) = value {
                renumber_value(v, new_id);
            }
        }
        ConditionPlan::Group { conditions, .. } => conditions.iter_mut().for_each(|c| renumber_condition(c, new_id)),
    }
}

fn renumber_step(s: &mut StepPlan, new_id: &[StepId]) {
    for (_, v) in &mut s.arguments {
        renumber_value(v, new_id);
    }
    for t in s.transform_arguments.iter_mut().chain(s.transform_responses.iter_mut()) {
        renumber_transform(t, new_id);
    }
    for c in &mut s.conditions {
        renumber_condition(c, new_id);
    }
    if let Some(DoneCheckPlan::Conditions(cs)) = &mut s.done_check {
        cs.iter_mut().for_each(|c| renumber_condition(c, new_id));
    }
    if let Some(p) = &mut s.parallel {
        renumber_value(&mut p.iterate_over, new_id);
    }
    if let Some(v) = &mut s.done_value {
        renumber_value(v, new_id);
    }
}

#[cfg(test)]
mod default_tests {
    use super::*;

    fn param(src: &str) -> Param {
        let text = format!(r#"{{"arguments": [{src}], "system_event_endpoint": "builtin:echo"}}"#);
        let (def, diags) = crate::tool::load(&text);
        assert!(diags.is_empty(), "{diags:?}");
        def.expect("a tool").arguments.remove(0)
    }

    #[test]
    fn a_default_makes_the_argument_non_null_inside_and_optional_outside() {
        let plain = param(r#"{"name": "a", "type_name": "string"}"#);
        assert_eq!(argument_type(&plain), Type::Str.union(Type::Null));
        let defaulted = param(r#"{"name": "a", "type_name": "string", "default": "x"}"#);
        assert_eq!(argument_type(&defaulted), Type::Str);
        assert_eq!(accepted_type(&defaulted), Type::Str.union(Type::Null));
        let null_default = param(r#"{"name": "a", "type_name": "string", "default": null}"#);
        assert_eq!(argument_type(&null_default), Type::Str.union(Type::Null));
        let required = param(r#"{"name": "a", "type_name": "string", "required": true}"#);
        assert_eq!(accepted_type(&required), Type::Str);
        let both = param(r#"{"name": "a", "type_name": "string", "required": true, "default": "x"}"#);
        assert_eq!(argument_type(&both), Type::Str);
        assert_eq!(accepted_type(&both), Type::Str.union(Type::Null));
    }
}
