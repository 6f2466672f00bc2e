//! Expressions inside a tool: transform blocks, call-strings in `variables`, a `done_check`
//! expression.
//!
//! Every expression is compiled by the [`Engine`](crate::Engine) in a scope built for where
//! it is written (SPEC §3): its names are the keys of the object transformed, the
//! variables laid over them and the earlier outputs; its REF contexts are `arguments`, the
//! steps it mentions (typed from their callees' declared responses) and, in
//! `transform_responses`, `response`. Every diagnostic is moved from the expression's
//! offsets to the file's through the JSON string's escapes, so it underlines the exact
//! characters.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;

use super::check::Checker;
use super::plan::{TransformPlan, ValuePlan};
use super::refs::{mentioned_contexts, RefEnv, RefInfo};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::engine::Program;
use crate::span::{SourceMap, Span};
use crate::syntax::{
    self,
    ast::{Expr, ExprKind, Name},
};
use crate::tool::{JsonKind, JsonNode, JsonStr, Transform};
use crate::types::{type_of, NameTable, Scope, Type};
use crate::value::Value;

#[cfg(test)]
thread_local! {
    /// Variables looked at by the pass-through check on this thread, for the tests' bound on
    /// its work.
    static PROBED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts a variable looked at by the pass-through check (tests only).
#[inline]
fn probed() {
    #[cfg(test)]
    PROBED.with(|p| p.set(p.get() + 1));
}

/// The names an expression may use, with their types.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    /// Shared with the scope of each expression compiled (`Scope::with_names`), not copied.
    pub list: Arc<NameTable>,
    /// Whether other names are accepted too (as `any`): the object transformed has keys
    /// nothing declares.
    pub open: bool,
}

impl Names {
    /// Adds a name, or retypes it when present (a later value wins, as in the context).
    pub(crate) fn set(&mut self, name: &Arc<str>, ty: Type) {
        Arc::make_mut(&mut self.list).insert(name.clone(), ty);
    }
}

/// A compiled expression.
pub(crate) struct Compiled {
    /// The program, when it compiled without errors.
    pub program: Option<Program>,
    /// Its inferred type.
    pub ty: Type,
    /// The names it reads.
    pub names: Vec<Name>,
}

/// Where a transform block is, which decides what its scope holds and what is checked.
pub(crate) struct BlockSpec<'e> {
    /// The context keys before the variables.
    pub names: Names,
    /// The REFs it may use.
    pub env: RefEnv<'e>,
    /// Whether a transform that only passes a variable through is worth a warning (in a
    /// step's `transform_arguments`, where the value could go straight into `arguments`).
    pub warn_pass_through: bool,
}

/// A compiled transform block and its outputs with their types.
pub(crate) struct BlockResult {
    pub plan: TransformPlan,
    pub outputs: IndexMap<Arc<str>, Type>,
}

impl Checker<'_> {
    /// Compiles one expression string in the scope `names` + the contexts it mentions.
    pub(crate) fn compile(&mut self, s: &JsonStr, names: &Names, env: &RefEnv<'_>, lists: &ListLiterals) -> Compiled {
        // A stopped check compiles nothing more: the rest of it is `any` (`crate::types::stop`).
        if crate::types::stop::poll() {
            return Compiled { program: None, ty: Type::Any, names: Vec::new() };
        }
        let mut contexts: Vec<Arc<str>> = mentioned_contexts(&s.value).into_iter().map(Arc::from).collect();
        let analysis = loop {
            // The names before it, shared and not copied: a block's scopes cost the same
            // whatever its length.
            let mut scope = if names.open { Scope::open() } else { Scope::closed() }
                .with_ref_contexts()
                .with_names(names.list.clone());
            for c in &contexts {
                // Unknown contexts are typed `any` here and reported once, by the REF check.
                scope = scope.with_ref(c, self.context_type(c, env).unwrap_or(Type::Any));
            }
            if let Some(t) = env.response {
                scope = scope.with_response(t.clone());
            }
            let analysis = self.engine.analyze(&s.value, &scope);
            // A REF that the text scan could not see (written with escapes inside a template
            // string) is added and the expression compiled again.
            let unseen: Vec<Arc<str>> = analysis
                .references
                .refs
                .iter()
                .filter(|r| &*r.context != "response" && !contexts.contains(&r.context))
                .map(|r| r.context.clone())
                .collect();
            if unseen.is_empty() {
                break analysis;
            }
            contexts.extend(unseen);
            contexts.dedup();
        };
        let map = s.string_map();
        for d in analysis.diagnostics {
            let d = as_written(d, &s.value);
            self.diags.push(d.map_spans(&|span| map.map(span)));
        }
        for r in &analysis.references.refs {
            self.expression_ref(r, &map, env);
        }
        self.read_files_limit(&analysis.ast, &map, lists);
        Compiled {
            program: analysis.program,
            ty: analysis.ty,
            names: analysis.references.names.into_iter().map(|(n, _)| n).collect(),
        }
    }

    /// Compiles a transform block: its variables, then its transforms in order, each seeing
    /// the earlier outputs.
    pub(crate) fn transform(&mut self, t: &Transform, spec: BlockSpec<'_>, info: &RefInfo) -> BlockResult {
        let BlockSpec { mut names, env, warn_pass_through } = spec;
        let mut variables = Vec::with_capacity(t.variables.len());
        let mut lists = ListLiterals::new();
        for (k, node) in &t.variables {
            let (plan, ty) = self.value(node, info, Some(&env));
            let name: Arc<str> = Arc::from(k.node.as_str());
            if let Some(items) = node.as_list() {
                lists.insert(name.clone(), (items.len(), k.span));
            }
            self.explain(k.span, super::infer::TypeAtKind::Variable, &name, &ty);
            names.set(&name, ty);
            variables.push((name, plan));
        }
        // Made once a block, not a scan of the variables for each transform: that was
        // quadratic in a step's variables.
        let positions = if warn_pass_through { positions(t) } else { HashMap::new() };
        let mut used: HashSet<Name> = HashSet::new();
        let mut transforms = Vec::with_capacity(t.transforms.len());
        let mut outputs: IndexMap<Arc<str>, Type> = IndexMap::with_capacity(t.transforms.len());
        for (k, expr) in &t.transforms {
            let compiled = self.compile(expr, &names, &env, &lists);
            let key: Arc<str> = Arc::from(k.node.as_str());
            if warn_pass_through {
                self.pass_through(k.span, &key, expr, t, &variables, &positions);
            }
            used.extend(compiled.names);
            self.explain(k.span, super::infer::TypeAtKind::Output, &key, &compiled.ty);
            names.set(&key, compiled.ty.clone());
            outputs.insert(key.clone(), compiled.ty);
            if let Some(p) = compiled.program {
                transforms.push((key, p));
            }
        }
        for (k, _) in &t.variables {
            if !used.contains(k.node.as_str()) {
                self.diags.push(
                    Diagnostic::new(Code::UnusedVariable, k.span, format!("variable `{}` is never used", k.node))
                        .with_label("no transform reads it")
                        .with_help(format!(
                            "variables are not written to the result: use `{}` in a transform, or remove it",
                            k.node
                        )),
                );
            }
        }
        BlockResult { plan: TransformPlan { variables, transforms }, outputs }
    }

    /// Records the type of a variable or output for `--explain-types`.
    fn explain(&mut self, span: Span, kind: super::infer::TypeAtKind, name: &str, ty: &Type) {
        let t = super::infer::TypeAt { span, kind, name: name.to_string(), ty: ty.clone(), inferred: None };
        self.explained.push(t);
    }

    /// Warns about `"key": "name"` where `name` is a variable holding a REF or a literal:
    /// the value could be written in `arguments` directly. `variables` are the plans of
    /// `t`'s variables, in the same order; `positions` is [`positions`] of `t`.
    fn pass_through(
        &mut self,
        key_span: Span,
        key: &str,
        expr: &JsonStr,
        t: &Transform,
        variables: &[(Arc<str>, ValuePlan)],
        positions: &HashMap<&str, usize>,
    ) {
        let name = expr.value.trim();
        probed();
        let Some(&at) = positions.get(name) else { return };
        let (Some((var_key, node)), Some((_, plan))) = (t.variables.get(at), variables.get(at)) else { return };
        if has_call(plan) {
            return;
        }
        let written = &self.source[node.span.range()];
        self.diags.push(
            Diagnostic::new(
                Code::PassThroughTransform,
                expr.span,
                format!("transform `{key}` only passes variable `{name}` through unchanged"),
            )
            .with_label("no transformation")
            .with_secondary(key_span, "written to this argument")
            .with_secondary(var_key.span, "the variable")
            .with_help(format!(
                "write `\"{key}\": {written}` in the step's `arguments` and remove the variable and the transform"
            )),
        );
    }

    /// A JSON value as a plan and its type: REF strings resolved (from `info`), call-strings
    /// compiled when `calls` is given (in `variables`), everything else literal.
    pub(crate) fn value(&mut self, node: &JsonNode, info: &RefInfo, calls: Option<&RefEnv<'_>>) -> (ValuePlan, Type) {
        match &node.kind {
            JsonKind::Str(s) if s.value.starts_with("REF:") => match info.get(&s.content_span().start) {
                Some((Some(r), ty)) => (ValuePlan::Ref(r.clone()), ty.clone()),
                // A malformed or invalid REF: reported already.
                _ => (ValuePlan::Literal(Value::Null), Type::Any),
            },
            JsonKind::Str(s) => {
                if let Some(env) = calls {
                    if let Some(r) = self.call_string(s, env) {
                        return r;
                    }
                }
                (ValuePlan::Literal(s.to_value()), Type::Str)
            }
            JsonKind::List(items) => {
                let parts: Vec<(ValuePlan, Type)> = items.iter().map(|n| self.value(n, info, calls)).collect();
                let elem = Type::union_all(parts.iter().map(|(_, t)| t.clone()));
                let elem = if elem == Type::Never { Type::Any } else { elem };
                let ty = Type::List(Arc::new(elem));
                if parts.iter().all(|(p, _)| matches!(p, ValuePlan::Literal(_))) {
                    return (ValuePlan::Literal(node.to_value()), ty);
                }
                (ValuePlan::List(parts.into_iter().map(|(p, _)| p).collect()), ty)
            }
            JsonKind::Object(entries) => {
                let parts: Vec<(Arc<str>, ValuePlan, Type)> = entries
                    .iter()
                    .map(|(k, n)| {
                        let (p, t) = self.value(n, info, calls);
                        (Arc::from(k.node.as_str()), p, t)
                    })
                    .collect();
                let ty = Type::object(parts.iter().map(|(k, _, t)| (k.clone(), t.clone())), false);
                if parts.iter().all(|(_, p, _)| matches!(p, ValuePlan::Literal(_))) {
                    return (ValuePlan::Literal(node.to_value()), ty);
                }
                (ValuePlan::Object(parts.into_iter().map(|(k, p, _)| (k, p)).collect()), ty)
            }
            _ => {
                let v = node.to_value();
                let ty = type_of(&v);
                (ValuePlan::Literal(v), ty)
            }
        }
    }

    /// A `variables` string that parses as a call (SPEC §3): compiled when the function
    /// exists, warned about when it does not. `None` for any other text.
    fn call_string(&mut self, s: &JsonStr, env: &RefEnv<'_>) -> Option<(ValuePlan, Type)> {
        looks_like_call(&s.value)?;
        let parsed = syntax::parse(&s.value);
        if parsed.diagnostics.iter().any(|d| d.is_error()) {
            return None;
        }
        let ExprKind::Call(call) = &parsed.expr.kind else { return None };
        if self.engine.functions().lookup(&call.name.node).is_none() {
            let name = &call.name.node;
            let mut d = Diagnostic::new(
                Code::UnknownFunctionInVariable,
                s.map_span(call.name.span),
                format!("this variable looks like a call of `{name}`, which is not a function"),
            )
            .with_label("not a known function");
            d = match did_you_mean(name, self.engine.functions().names()) {
                Some(f) => d.with_help(format!("did you mean `{f}`? As written, the value is this text, literally")),
                None => d.with_help("as written, the value is this text, literally"),
            };
            self.diags.push(d);
            return None;
        }
        // Variables may not refer to each other: a call sees no names, only REFs.
        let compiled = self.compile(s, &Names::default(), env, &ListLiterals::new());
        let plan = match compiled.program {
            Some(p) => ValuePlan::Call(p),
            None => ValuePlan::Literal(Value::Null),
        };
        Some((plan, compiled.ty))
    }

    /// `read_files` with more than 5 paths written out, in a list literal or in a variable
    /// holding one (SPEC §4.5).
    fn read_files_limit(&mut self, e: &Expr, map: &SourceMap, lists: &ListLiterals) {
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Call(call) => {
                    if &*call.name.node == "read_files" {
                        let arg = call
                            .args
                            .iter()
                            .find(|a| a.keyword.as_ref().is_some_and(|k| &*k.node == "file_paths"))
                            .or_else(|| call.args.first().filter(|a| a.keyword.is_none()));
                        if let Some(arg) = arg {
                            self.too_many_files(&arg.value, map, lists);
                        }
                    }
                    stack.extend(call.args.iter().map(|a| &a.value));
                }
                ExprKind::Field(inner, _) | ExprKind::Unary(_, inner) => stack.push(inner),
                ExprKind::Index(ab) | ExprKind::Binary(_, ab) => stack.extend(ab.iter()),
                ExprKind::List(items) => stack.extend(items),
                ExprKind::Object(entries) => stack.extend(entries.iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    fn too_many_files(&mut self, arg: &Expr, map: &SourceMap, lists: &ListLiterals) {
        let (count, secondary) = match &arg.kind {
            ExprKind::List(items) => (items.len(), None),
            ExprKind::Name(n) => match lists.get(n) {
                Some(&(count, span)) => (count, Some(span)),
                None => return,
            },
            _ => return,
        };
        if count <= crate::files::MAX_READ_FILES {
            return;
        }
        let mut d = Diagnostic::new(
            Code::TooManyReadFiles,
            map.map(arg.span),
            format!("`read_files` reads at most {} files, and {count} paths are given", crate::files::MAX_READ_FILES),
        )
        .with_label(format!("{count} paths"))
        .with_help("split the paths over several `read_files` calls, or read them with `map` and `read_file`");
        if let Some(span) = secondary {
            d = d.with_secondary(span, "the list is written here");
        }
        self.diags.push(d);
    }
}

/// Each variable of `t` by name: its position in `t.variables` (the first, for a name
/// written twice, as a scan finds it).
fn positions(t: &Transform) -> HashMap<&str, usize> {
    let mut positions = HashMap::with_capacity(t.variables.len());
    for (at, (k, _)) in t.variables.iter().enumerate() {
        probed();
        positions.entry(k.node.as_str()).or_insert(at);
    }
    positions
}

/// Variables holding a list literal: name → (length, span of the variable's key).
pub(crate) type ListLiterals = HashMap<Arc<str>, (usize, Span)>;

/// Whether the text has the shape `name(…)`: the only strings worth parsing as calls.
fn looks_like_call(text: &str) -> Option<&str> {
    let t = text.trim();
    let end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let name = &t[..end];
    let starts_well = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    (starts_well && t[end..].trim_start().starts_with('(') && t.ends_with(')')).then_some(name)
}

fn has_call(plan: &ValuePlan) -> bool {
    match plan {
        ValuePlan::Call(_) => true,
        ValuePlan::List(items) => items.iter().any(has_call),
        ValuePlan::Object(entries) => entries.iter().any(|(_, p)| has_call(p)),
        ValuePlan::Literal(_) | ValuePlan::Ref(_) => false,
    }
}

/// `E0202`'s `to_string(…)` with its operand as the expression wrote it (the checker prints
/// the operand, in double quotes), in the help and in the suggestion, which replaces text
/// inside a JSON string and so is written escaped for it (outside round 11, finding 7).
fn as_written(mut d: Diagnostic, expression: &str) -> Diagnostic {
    if d.code != Code::OperandType {
        return d;
    }
    let Some(x) = d.suggestion.as_deref_mut() else { return d };
    let Some(written) = expression.get(x.span.range()) else { return d };
    let fix = format!("to_string({written})");
    if let Some(help) = &mut d.help {
        *help = help.replace(&format!("`{}`", x.replacement), &format!("`{fix}`"));
    }
    let escaped = serde_json::to_string(&fix).unwrap_or_default();
    x.replacement = escaped.get(1..escaped.len().saturating_sub(1)).unwrap_or_default().to_string();
    d
}

#[cfg(test)]
mod tests {
    use super::{looks_like_call, PROBED};
    use crate::analysis::Analyzer;
    use crate::diagnostic::Code;
    use crate::ToolRoot;

    /// Checks a step whose `transform_arguments` has `n` variables and `n` transforms, each
    /// passing one variable through: the pass-through warnings, and the variables the check
    /// looked at for them.
    fn check_pass_throughs(n: usize) -> (usize, u64) {
        let variables: serde_json::Map<String, serde_json::Value> =
            (0..n).map(|k| (format!("v{k}"), serde_json::json!(k))).collect();
        let transforms: serde_json::Map<String, serde_json::Value> =
            (0..n).map(|k| (format!("a{k}"), format!("v{k}").into())).collect();
        let source = serde_json::json!({"instructions": [{"execution_id": "s", "tool_definition_path": "/t.tool",
            "transform_arguments": {"variables": variables, "transforms": transforms}}]})
        .to_string();
        let before = PROBED.with(|p| p.get());
        let checked = Analyzer::new(ToolRoot::assumed("/nonexistent")).check_source("main.tool", &source);
        let warned = checked.diagnostics.iter().filter(|d| d.code == Code::PassThroughTransform).count();
        (warned, PROBED.with(|p| p.get()) - before)
    }

    /// Each transform of a step's `transform_arguments` that names a variable finds it by an
    /// index made once a block: the pass-through check's work grows with the block, not its
    /// square (it scanned the variables for each transform: n² for n of each).
    #[test]
    fn the_pass_through_check_looks_at_each_variable_a_bounded_number_of_times() {
        let n = 4_000;
        let (warned, probed) = check_pass_throughs(n);
        assert_eq!(warned, n, "each transform passes a variable through");
        // The index: each variable once; the lookups: one a transform.
        assert!(probed <= 4 * n as u64, "{probed} variables looked at for {n} variables and transforms");
        // Twice the block, about twice the work.
        let (_, half) = check_pass_throughs(n / 2);
        assert!(probed < 3 * half, "{probed} looked at for {n}, {half} for {}", n / 2);
    }

    #[test]
    fn call_shapes() {
        assert_eq!(looks_like_call("datetime_now()"), Some("datetime_now"));
        assert_eq!(looks_like_call(" upper (x) "), Some("upper"));
        assert_eq!(looks_like_call("data.user.profile"), None);
        assert_eq!(looks_like_call("Hello (world"), None);
        assert_eq!(looks_like_call("(a)"), None);
        assert_eq!(looks_like_call("2(a)"), None);
    }
}
