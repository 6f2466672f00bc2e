//! Types from use (issue 18): what the uses of an untyped value say about it.
//!
//! Most callees declare loose types or none, so much of the data flowing through `REF`s is
//! `any` and the type checker lets it pass. This pass looks at every value whose static type
//! is `any` — an undeclared or `any` response field, an argument of a tool that declares
//! none, what a REF reaches into such a value — and collects what each **use** demands of
//! it: a list-taking parameter (`map`, `sum`, …; `null` where the function takes it as
//! empty), a string function, an operator, a `response_reference_map` target (its declared
//! type; `required` ⇒ not null), a callee's declared argument (its type and `enum`), a
//! condition operator, `iterate_over`, a path segment (`.name` needs an object).
//!
//! A use is **certain** when it happens in every successful run: its step has no
//! `conditions` (only the first condition is certain: the rest may be skipped), no
//! `done_check`, no `continue_on_error`, and the use is not inside a branch of `if`, the
//! right side of `and`/`or`, a template (run once per element) or a pipeline operation.
//! Otherwise it is **conditional**.
//!
//! Demands are kept as sets of JSON kinds (null, boolean, number, string, list, object):
//! each set contains every kind of value with which the use can succeed at run time, so an
//! empty intersection of the certain uses proves that no run can succeed (`E0650`); a
//! conditional use whose set misses that intersection fails whenever it happens (`W0650`).
//! Nothing is reported where some value could satisfy every certain use.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::check::Checker;
use super::declared_types::accepted_type;
use crate::diagnostic::{Code, Diagnostic};
use crate::functions::{FunctionTable, ParamKind};
use crate::span::{SourceMap, Span};
use crate::syntax::ast::{BinaryOp, ExprKind, Name, UnaryOp};
use crate::tool::{
    parse_ref_string, Condition, DoneCheck, Instruction, JsonKind, JsonNode, JsonStr, Operator, Param, ToolKind,
    Transform,
};
use crate::types::typed::{TArg, TExpr, TKind};
use crate::types::{Scope, Type};

/// The type of one place of a tool, for `tdsl check --explain-types` and editor hovers.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeAt {
    /// Where: the REF's text (without quotes), or the key of a variable or transform output.
    pub span: Span,
    /// What is there.
    pub kind: TypeAtKind,
    /// The REF as written (`REF:scan.files`), or the variable's or output's name.
    pub name: String,
    /// The static type: what the declarations and expressions say.
    pub ty: Type,
    /// When the static type is `any`: what its certain uses demand (`list | null` for a
    /// value passed to `map`), when they demand anything.
    pub inferred: Option<Type>,
}

/// What a [`TypeAt`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TypeAtKind {
    /// A REF string, or a REF atom in an expression.
    Ref,
    /// A transform variable.
    Variable,
    /// A transform output.
    Output,
}

impl TypeAtKind {
    /// `ref`, `variable`, `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            TypeAtKind::Ref => "ref",
            TypeAtKind::Variable => "variable",
            TypeAtKind::Output => "output",
        }
    }
}

impl TypeAt {
    /// The type to show: the static type, with what the uses demand when it is `any`.
    pub fn shown(&self) -> String {
        match &self.inferred {
            Some(t) => format!("{} (from its uses: {t})", self.ty),
            None => self.ty.to_string(),
        }
    }
}

/// A set of JSON kinds: the values with which a use can succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kinds(u8);

impl Kinds {
    const NULL: Kinds = Kinds(1);
    const BOOL: Kinds = Kinds(2);
    const NUM: Kinds = Kinds(4);
    const STR: Kinds = Kinds(8);
    const LIST: Kinds = Kinds(16);
    const OBJ: Kinds = Kinds(32);
    const ALL: Kinds = Kinds(63);
    const NONE: Kinds = Kinds(0);

    fn or(self, o: Kinds) -> Kinds {
        Kinds(self.0 | o.0)
    }

    fn and(self, o: Kinds) -> Kinds {
        Kinds(self.0 & o.0)
    }

    fn has(self, o: Kinds) -> bool {
        self.0 & o.0 == o.0
    }

    /// The kinds of the values of a static type (`file`: a string or an object).
    pub(crate) fn of(t: &Type) -> Kinds {
        match t {
            Type::Any => Kinds::ALL,
            Type::Never => Kinds::NONE,
            Type::Null => Kinds::NULL,
            Type::Bool => Kinds::BOOL,
            Type::Int | Type::Number => Kinds::NUM,
            Type::Str | Type::Enum(_) => Kinds::STR,
            Type::File => Kinds::STR.or(Kinds::OBJ),
            Type::List(_) => Kinds::LIST,
            Type::Object(_) => Kinds::OBJ,
            Type::Union(parts) => parts.iter().fold(Kinds::NONE, |k, t| k.or(Kinds::of(t))),
        }
    }

    /// The kinds of a literal JSON value.
    fn of_value(v: &crate::value::Value) -> Kinds {
        Kinds::of(&crate::types::type_of(v))
    }

    /// The widest type of these kinds.
    pub(crate) fn to_type(self) -> Type {
        if self == Kinds::ALL {
            return Type::Any;
        }
        let parts = [
            (Kinds::LIST, Type::any_list()),
            (Kinds::OBJ, Type::any_object()),
            (Kinds::STR, Type::Str),
            (Kinds::NUM, Type::Number),
            (Kinds::BOOL, Type::Bool),
            (Kinds::NULL, Type::Null),
        ];
        Type::union_all(parts.into_iter().filter(|(k, _)| self.has(*k)).map(|(_, t)| t))
    }

    /// "a list", "a string or an object"; null is left out unless it is all there is.
    fn describe(self) -> String {
        let names = [
            (Kinds::LIST, "a list"),
            (Kinds::OBJ, "an object"),
            (Kinds::STR, "a string"),
            (Kinds::NUM, "a number"),
            (Kinds::BOOL, "a boolean"),
        ];
        let shown: Vec<&str> = names.iter().filter(|(k, _)| self.has(*k)).map(|(_, n)| *n).collect();
        match shown.split_last() {
            None if self.has(Kinds::NULL) => "null".to_string(),
            None => "nothing".to_string(),
            Some((last, [])) => (*last).to_string(),
            Some((last, init)) => format!("{} or {last}", init.join(", ")),
        }
    }
}

/// Where a tracked value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Origin {
    /// The composite's arguments.
    Argument,
    /// Step `i`'s result (as `REF:<id>` sees it).
    Step(usize),
    /// Step `i`'s raw response, in its own `transform_responses`.
    Response(usize),
    /// A value not tracked: an argument of the tool that its own `transform_arguments`
    /// replaces, read before it is replaced (the steps see the replacement).
    Hidden,
}

/// A value: its origin and the path into it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    origin: Origin,
    path: Vec<Name>,
}

/// One use of a value.
#[derive(Clone, Debug)]
struct Demand {
    kinds: Kinds,
    span: Span,
    /// "used as a list", "required as an object": for messages.
    short: String,
    /// The same, with who uses it (`by \`map\``): for labels.
    what: String,
    certain: bool,
}

/// What a name in an expression is bound to.
#[derive(Clone, Default)]
struct Bindings {
    names: HashMap<Name, Option<Key>>,
    /// What a name not bound here reads (the raw response's fields, or the tool's open
    /// arguments).
    fallback: Option<Origin>,
}

impl Bindings {
    fn resolve(&self, name: &str) -> Option<Key> {
        match self.names.get(name) {
            Some(k) => k.clone(),
            None => self.fallback.clone().map(|origin| Key { origin, path: vec![Name::from(name)] }),
        }
    }
}

/// The inference pass over a checked tool.
struct Infer<'c, 'a> {
    c: &'c Checker<'a>,
    funcs: &'c FunctionTable,
    uses: IndexMap<Key, Vec<Demand>>,
    /// The value each REF and variable names, by the start of its span.
    at: HashMap<u32, Key>,
    /// While in the tool's own `transform_arguments`: the arguments its outputs replace.
    replaced: Vec<Name>,
}

/// Runs the pass on a checked composite: reports conflicting uses and fills in the
/// inferred types of `checker.explained`.
pub(crate) fn infer(checker: &mut Checker<'_>) {
    let ToolKind::Composite { response_reference_map, .. } = &checker.tool.kind else { return };
    let mut inf = Infer {
        c: checker,
        funcs: checker.engine.functions(),
        uses: IndexMap::new(),
        at: HashMap::new(),
        replaced: Vec::new(),
    };
    for i in 0..inf.c.steps.len() {
        inf.step(i);
    }
    inf.tool(response_reference_map.as_ref().map(|m| &m.entries[..]));
    let (diags, inferred) = inf.verdicts();
    let at = std::mem::take(&mut inf.at);
    checker.diags.extend(diags);
    for t in &mut checker.explained {
        if t.ty != Type::Any || t.kind == TypeAtKind::Output {
            continue;
        }
        if let Some(k) = at.get(&t.span.start).and_then(|key| inferred.get(key)) {
            t.inferred = Some(k.to_type());
        }
    }
}

/// The segments of SPEC §2 that never name a field.
fn is_special(seg: &str) -> bool {
    matches!(seg, "response" | "length" | "first" | "last" | "path" | "file_name" | "parent_directory")
}

/// What applying a segment demands of the value it applies to (`Value::segment`): `None`
/// when it cannot fail.
fn segment_demand(seg: &str) -> Option<(Kinds, String)> {
    let base = Kinds::NULL.or(Kinds::OBJ);
    let k = match seg {
        // The response alias (SPEC §2) is resolved on step results: no demand.
        "response" => return None,
        "length" => base.or(Kinds::LIST).or(Kinds::STR),
        "first" | "last" => base.or(Kinds::LIST),
        "path" | "file_name" | "parent_directory" => base.or(Kinds::STR),
        s if s.bytes().all(|b| b.is_ascii_digit()) => base.or(Kinds::LIST),
        _ => base,
    };
    Some((k, format!("read as|by `.{seg}`")))
}

impl Infer<'_, '_> {
    /// Records a use: `what` is `verb` and `by` separated by `|` (`used as|by \`map\``),
    /// the kinds are described between them.
    fn add(&mut self, key: Option<Key>, kinds: Kinds, span: Span, what: String, certain: bool) {
        let Some(key) = key else { return };
        if kinds == Kinds::ALL {
            return;
        }
        let (verb, by) = what.split_once('|').unwrap_or((&what, ""));
        let short = format!("{verb} {}", kinds.describe());
        let what = if by.is_empty() { short.clone() } else { format!("{short} {by}") };
        self.uses.entry(key).or_default().push(Demand { kinds, span, short, what, certain });
    }

    /// A raw-response field is the step result's field when nothing can come between them:
    /// a plain step, no `output_path`, no transform output or default of that name.
    fn normalize(&self, mut key: Key) -> Key {
        if key.origin == Origin::Argument && key.path.first().is_some_and(|f| self.replaced.contains(f)) {
            key.origin = Origin::Hidden;
        }
        if let Origin::Response(i) = key.origin {
            let Some(first) = key.path.first() else { return key };
            let ins = self.c.steps[i].ins;
            let outputs = ins.transform_responses.iter().flat_map(|t| t.transforms.iter().map(|(k, _)| &k.node));
            let defaulted =
                self.c.steps[i].callee.as_ref().and_then(|c| c.def.as_ref()).is_some_and(|d| {
                    d.responses.iter().any(|p| p.name.node == **first && p.constraints.default.is_some())
                });
            let same = ins.parallel_execution.is_none()
                && ins.output_path.is_none()
                && !is_special(first)
                && !defaulted
                && !outputs.into_iter().any(|o| **o == **first);
            if same {
                key.origin = Origin::Step(i);
            }
        }
        key
    }

    /// The value a REF names, before its segments.
    fn context(&self, context: &str, owner: Option<usize>) -> Option<Origin> {
        match context {
            "arguments" => Some(Origin::Argument),
            "response" => owner.map(Origin::Response),
            id => self.c.ids.get(id).map(|&j| Origin::Step(j)),
        }
    }

    /// A REF's segments applied in turn: each demands what it needs of the value before it.
    /// Returns the value the whole REF names.
    fn ref_uses(&mut self, origin: Origin, segs: &[&str], span: Span, certain: bool) -> Key {
        let mut key = Key { origin, path: Vec::new() };
        for (n, seg) in segs.iter().enumerate() {
            // The first segment of a step or the arguments applies to an object.
            if n > 0 || matches!(key.origin, Origin::Response(_)) {
                if let Some((kinds, what)) = segment_demand(seg) {
                    self.add(Some(key.clone()), kinds, span, what, certain);
                }
            }
            key.path.push(Name::from(*seg));
            key = self.normalize(key);
        }
        key
    }

    /// A REF string: its segments' demands; the value it names.
    fn json_ref(&mut self, node: &JsonNode, owner: Option<usize>, certain: bool) -> Option<Key> {
        let JsonKind::Str(s) = &node.kind else { return None };
        let path = parse_ref_string(s)?.ok()?;
        let origin = self.context(&path.context.node, owner)?;
        let segs: Vec<&str> = path.segments.iter().map(|s| &*s.node).collect();
        let span = s.content_span();
        let key = self.ref_uses(origin, &segs, span, certain);
        self.at.insert(span.start, key.clone());
        Some(key)
    }

    /// Every REF string of a JSON value (at any depth): their segments' demands.
    fn json_refs(&mut self, node: &JsonNode, owner: Option<usize>, certain: bool) {
        node.walk(&mut |n| {
            if n.as_str().is_some_and(|s| s.value.starts_with("REF:")) {
                let _ = self.json_ref(n, owner, certain);
            }
        });
    }

    fn step(&mut self, i: usize) {
        let ins: &Instruction = self.c.steps[i].ins;
        let owner = Some(i);
        let coe = ins.continue_on_error.as_ref().is_some_and(|c| c.node);
        // Conditions come first; then arguments, done_check, transform_arguments, the call.
        let runs = ins.conditions.is_empty() && !coe;
        let body = runs && ins.done_check.is_none();
        for (n, c) in ins.conditions.iter().enumerate() {
            self.condition(c, owner, n == 0 && !coe);
        }
        let mut args = Bindings::default();
        let mut arg_keys: IndexMap<Name, (Option<Key>, Span)> = IndexMap::new();
        for (k, v) in ins.arguments.iter().flat_map(|a| &a.entries) {
            self.json_refs(v, owner, runs);
            let key = self.json_ref_quiet(v, owner);
            args.names.insert(Name::from(k.node.as_str()), key.clone());
            arg_keys.insert(Name::from(k.node.as_str()), (key, v.span_inside()));
        }
        if let Some(d) = &ins.done_check {
            match d {
                DoneCheck::Conditions(cs) => cs.iter().for_each(|c| self.condition(c, owner, false)),
                DoneCheck::Expression(e) => self.expression(e, &args, owner, false),
            }
        }
        if let Some(v) = &ins.done_value {
            self.json_refs(v, owner, false);
        }
        if let Some(t) = &ins.transform_arguments {
            self.block(t, args.clone(), owner, body);
            for (k, _) in &t.transforms {
                arg_keys.shift_remove(k.node.as_str());
            }
        }
        if let Some(p) = &ins.parallel_execution {
            // Each child gets the element under this name, whatever `arguments` says.
            arg_keys.shift_remove(p.child_argument_name.node.as_str());
            self.json_refs(&p.iterate_over, owner, body);
            let key = self.json_ref_quiet(&p.iterate_over, owner);
            let list = Kinds::LIST.or(Kinds::NULL);
            self.add(key, list, p.iterate_over.span_inside(), "iterated over as|by `iterate_over`".into(), body);
        }
        // The call: the callee's declared arguments (a parallel step with no element calls
        // nothing, so its calls are conditional).
        let callee_def = self.c.steps[i].callee.as_ref().and_then(|c| c.def.clone());
        if let Some(def) = callee_def {
            let certain = body && ins.parallel_execution.is_none();
            for (name, (key, span)) in &arg_keys {
                let Some(p) = def.arguments.iter().find(|p| *p.name.node == **name) else { continue };
                let kinds = accepted_kinds(p);
                let what = format!("passed as|to argument `{name}` of `{}`", ins.tool_path().unwrap_or_default());
                self.add(key.clone(), kinds, *span, what, certain);
            }
        }
        if let Some(t) = &ins.transform_responses {
            // A transform step has no response: its names are its variables only.
            let calls = ins.parallel_execution.is_none() && !ins.is_transform_step();
            let fallback = if calls { Some(Origin::Response(i)) } else { None };
            self.block(t, Bindings { names: HashMap::new(), fallback }, owner, body);
        }
    }

    /// The value a REF string names, without recording its segments again.
    fn json_ref_quiet(&mut self, node: &JsonNode, owner: Option<usize>) -> Option<Key> {
        let JsonKind::Str(s) = &node.kind else { return None };
        let path = parse_ref_string(s)?.ok()?;
        let origin = self.context(&path.context.node, owner)?;
        let mut key = Key { origin, path: Vec::new() };
        for seg in &path.segments {
            key.path.push(seg.node.clone());
            key = self.normalize(key);
        }
        Some(key)
    }

    /// A condition: the first leaf evaluated is certain when `certain`; the others may be
    /// skipped by short-circuiting.
    fn condition(&mut self, c: &Condition, owner: Option<usize>, certain: bool) {
        match c {
            Condition::Group { conditions, .. } => {
                for (n, c) in conditions.iter().enumerate() {
                    self.condition(c, owner, certain && n == 0);
                }
            }
            Condition::Leaf { param, operator, value, .. } => {
                self.json_refs(param, owner, certain);
                if let Some(v) = value {
                    self.json_refs(v, owner, certain);
                }
                let op = operator.node;
                let maybe_null = Kinds::NULL;
                // A comparison with null is false, whatever the other side: each side is
                // constrained only when the other is a literal that is not null.
                let literal = |n: Option<&JsonNode>| match n.map(|n| &n.kind) {
                    Some(JsonKind::Null) | None => false,
                    Some(JsonKind::Str(s)) => !s.value.starts_with("REF:"),
                    Some(_) => true,
                };
                let both = |k: Kinds| {
                    let p = if literal(value.as_ref()) { k } else { Kinds::ALL };
                    let v = if literal(Some(param)) { k } else { Kinds::ALL };
                    (p, v)
                };
                let (p_kinds, v_kinds) = match op {
                    Operator::GreaterThan
                    | Operator::LessThan
                    | Operator::GreaterThanOrEquals
                    | Operator::LessThanOrEquals => both(maybe_null.or(Kinds::NUM)),
                    Operator::StartsWith | Operator::EndsWith => both(maybe_null.or(Kinds::STR)),
                    Operator::Contains => (maybe_null.or(Kinds::LIST).or(Kinds::STR).or(Kinds::OBJ), Kinds::ALL),
                    Operator::In => (Kinds::ALL, maybe_null.or(Kinds::LIST).or(Kinds::STR).or(Kinds::OBJ)),
                    _ => (Kinds::ALL, Kinds::ALL),
                };
                let what = format!("compared as|by `{op}`");
                let key = self.json_ref_quiet(param, owner);
                self.add(key, p_kinds, param.span_inside(), what.clone(), certain);
                if let Some(v) = value {
                    let key = self.json_ref_quiet(v, owner);
                    self.add(key, v_kinds, v.span_inside(), what, certain);
                }
            }
        }
    }

    /// A transform block: variables bound to what their REFs name, transforms in order
    /// (an output hides the name it writes).
    fn block(&mut self, t: &Transform, mut names: Bindings, owner: Option<usize>, certain: bool) {
        for (k, v) in &t.variables {
            self.json_refs(v, owner, certain);
            let key = self.json_ref_quiet(v, owner);
            if let Some(key) = &key {
                self.at.insert(k.span.start, key.clone());
            }
            if let Some(s) = v.as_str().filter(|s| !s.value.starts_with("REF:")) {
                self.call_string(s, owner, certain);
            }
            names.names.insert(Name::from(k.node.as_str()), key);
        }
        for (k, e) in &t.transforms {
            self.expression(e, &names, owner, certain);
            names.names.insert(Name::from(k.node.as_str()), None);
        }
    }

    /// A variable string that is a call of a known function (SPEC §3): its REFs.
    fn call_string(&mut self, s: &JsonStr, owner: Option<usize>, certain: bool) {
        let parsed = crate::syntax::parse(&s.value);
        if parsed.diagnostics.iter().any(|d| d.is_error()) {
            return;
        }
        let ExprKind::Call(call) = &parsed.expr.kind else { return };
        if self.funcs.lookup(&call.name.node).is_none() {
            return;
        }
        self.expression(s, &Bindings::default(), owner, certain);
    }

    /// An expression: the demands of its operations on the values it reads.
    fn expression(&mut self, s: &JsonStr, names: &Bindings, owner: Option<usize>, certain: bool) {
        let max_depth = self.c.engine.limits().max_depth;
        let parsed = crate::syntax::parse_with_limit(&s.value, max_depth);
        if parsed.diagnostics.iter().any(|d| d.is_error()) {
            return;
        }
        let scope = Scope::open().with_response(Type::Any);
        let checked = crate::types::check(&parsed.expr, &scope, self.funcs, max_depth);
        let map = s.string_map();
        let mut cx = ExprCx { names, owner, map: &map };
        self.walk(&checked.expr, &mut cx, certain);
    }

    /// The value an expression reads directly: a name, a REF, a field of one.
    fn track(&self, e: &TExpr, cx: &ExprCx<'_>) -> Option<Key> {
        match &e.kind {
            TKind::Global(n) => cx.names.resolve(n).map(|k| self.normalize(k)),
            TKind::Ref(context, segs) => {
                let mut key = Key { origin: self.context(context, cx.owner)?, path: Vec::new() };
                for s in segs {
                    key.path.push(s.clone());
                    key = self.normalize(key);
                }
                Some(key)
            }
            TKind::Field(inner, seg) => {
                let mut key = self.track(inner, cx)?;
                key.path.push(seg.clone());
                Some(self.normalize(key))
            }
            _ => None,
        }
    }

    fn demand(&mut self, e: &TExpr, cx: &ExprCx<'_>, kinds: Kinds, what: String, certain: bool) {
        let key = self.track(e, cx);
        self.add(key, kinds, cx.map.map(e.span), what, certain);
    }

    fn walk(&mut self, e: &TExpr, cx: &mut ExprCx<'_>, certain: bool) {
        match &e.kind {
            TKind::Ref(context, segs) => {
                let Some(origin) = self.context(context, cx.owner) else { return };
                let segs: Vec<&str> = segs.iter().map(|s| &**s).collect();
                let span = cx.map.map(e.span);
                let key = self.ref_uses(origin, &segs, span, certain);
                self.at.insert(span.start, key);
            }
            TKind::Field(inner, seg) => {
                if let Some((kinds, what)) = segment_demand(seg) {
                    self.demand(inner, cx, kinds, what, certain);
                }
                self.walk(inner, cx, certain);
            }
            TKind::Index(ab) => {
                let [a, b] = &**ab;
                self.walk(a, cx, certain);
                self.walk(b, cx, certain);
            }
            TKind::List(items) => items.iter().for_each(|x| self.walk(x, cx, certain)),
            TKind::Object(entries) => entries.iter().for_each(|(_, x)| self.walk(x, cx, certain)),
            TKind::Unary(op, x) => {
                if *op == UnaryOp::Neg {
                    self.demand(x, cx, Kinds::NUM, "used as|by `-`".into(), certain);
                }
                self.walk(x, cx, certain);
            }
            TKind::Binary(op, lr) => {
                let [l, r] = &**lr;
                use BinaryOp::*;
                let kinds = match op {
                    Or | And | Eq | Ne => Kinds::ALL,
                    Lt | Le | Gt | Ge => Kinds::NULL.or(Kinds::NUM).or(Kinds::STR),
                    Add => Kinds::NUM.or(Kinds::STR).or(Kinds::LIST).or(Kinds::OBJ),
                    Sub | Mul | Div | Rem => Kinds::NUM,
                };
                // A comparison with null is false, whatever the other side: a side is
                // constrained only when the other can never be null.
                let other = |t: &TExpr| {
                    if matches!(op, Lt | Le | Gt | Ge) && Kinds::of(&t.ty).has(Kinds::NULL) {
                        Kinds::ALL
                    } else {
                        kinds
                    }
                };
                let what = format!("used as|by `{}`", op.symbol());
                self.demand(l, cx, other(r), what.clone(), certain);
                self.walk(l, cx, certain);
                // `and` / `or` evaluate their right side only sometimes.
                let right = certain && !matches!(op, Or | And);
                self.demand(r, cx, other(l), what, right);
                self.walk(r, cx, right);
            }
            TKind::If(cab) => {
                let [c, a, b] = &**cab;
                self.walk(c, cx, certain);
                self.walk(a, cx, false);
                self.walk(b, cx, false);
            }
            TKind::Pipeline { init, ops, .. } => {
                self.walk(init, cx, certain);
                ops.iter().for_each(|x| self.walk(x, cx, false));
            }
            TKind::Call(call) => {
                let sig = &self.funcs.get(call.func).signature;
                let params: Vec<(Name, ParamKind, Type)> = (0..call.args.len())
                    .map_while(|n| sig.param_at(n))
                    .map(|p| (p.name.clone(), p.kind, p.ty.clone()))
                    .collect();
                for (n, arg) in call.args.iter().enumerate() {
                    match arg {
                        TArg::Value(x) => {
                            if let Some((pname, ParamKind::Value, ty)) = params.get(n) {
                                let kinds = Kinds::of(ty);
                                let what = format!("used as|by `{}` (`{pname}`)", call.name);
                                self.demand(x, cx, kinds, what, certain);
                            }
                            self.walk(x, cx, certain);
                        }
                        TArg::Template { body, .. } => self.walk(body, cx, false),
                        TArg::Dynamic { source, .. } => self.walk(source, cx, certain),
                        TArg::Absent => {}
                    }
                }
            }
            TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Error => {}
        }
    }

    /// The tool as a whole: its own transforms and `response_reference_map`.
    fn tool(&mut self, map: Option<&[(crate::span::Spanned<String>, JsonNode)]>) {
        let tool = self.c.tool;
        if let Some(t) = &tool.transform_arguments {
            self.replaced = t.transforms.iter().map(|(k, _)| Name::from(k.node.as_str())).collect();
            let mut names = Bindings::default();
            for p in &tool.arguments {
                let name = Name::from(p.name.node.as_str());
                let key = self.normalize(Key { origin: Origin::Argument, path: vec![name.clone()] });
                names.names.insert(name, Some(key));
            }
            if !tool.declares_arguments {
                names.fallback = Some(Origin::Argument);
            }
            self.block(t, names, None, true);
            self.replaced.clear();
        }
        let outputs: Vec<&str> =
            tool.transform_responses.iter().flat_map(|t| t.transforms.iter().map(|(k, _)| k.node.as_str())).collect();
        let mut result = Bindings::default();
        for (k, v) in map.unwrap_or_default() {
            self.json_refs(v, None, true);
            let key = self.json_ref_quiet(v, None);
            result.names.insert(Name::from(k.node.as_str()), key.clone());
            // The composite's result is checked against its declared responses (SPEC §6.4),
            // after its own transforms, which may replace the value.
            let Some(p) = tool.responses.iter().find(|p| p.name.node == k.node) else { continue };
            if !tool.declares_responses || outputs.contains(&k.node.as_str()) {
                continue;
            }
            let kinds = accepted_kinds(p);
            let required = if kinds.has(Kinds::NULL) { "required as" } else { "required (not null) as" };
            let what = format!("{required}|by the response `{}`", k.node);
            self.add(key, kinds, v.span_inside(), what, true);
        }
        if let Some(t) = &tool.transform_responses {
            self.block(t, result, None, true);
        }
    }

    /// The conflicts, and the kinds the certain uses of each value allow.
    fn verdicts(&self) -> (Vec<Diagnostic>, HashMap<Key, Kinds>) {
        let mut diags = Vec::new();
        let mut inferred = HashMap::new();
        for (key, uses) in &self.uses {
            if self.static_type(key) != Type::Any {
                continue;
            }
            let certain: Vec<&Demand> = uses.iter().filter(|d| d.certain).collect();
            let all = certain.iter().fold(Kinds::ALL, |k, d| k.and(d.kinds));
            if certain.is_empty() {
                continue;
            }
            if all == Kinds::NONE {
                diags.push(self.conflict(key, &certain));
                continue;
            }
            inferred.insert(key.clone(), all);
            let bad: Vec<&Demand> = uses.iter().filter(|d| !d.certain && d.kinds.and(all) == Kinds::NONE).collect();
            if let Some((first, rest)) = bad.split_first() {
                diags.push(self.conditional_conflict(key, first, rest, &certain, all));
            }
        }
        (diags, inferred)
    }

    /// E0650: the certain uses of `key` have no value in common.
    fn conflict(&self, key: &Key, certain: &[&Demand]) -> Diagnostic {
        // The primary use is one that conflicts with all the others together, when there is
        // one (the odd one out); else the first.
        let odd = (0..certain.len()).find(|&n| {
            let others =
                certain.iter().enumerate().filter(|(m, _)| *m != n).fold(Kinds::ALL, |k, (_, d)| k.and(d.kinds));
            others != Kinds::NONE && others.and(certain[n].kinds) == Kinds::NONE
        });
        let primary = certain[odd.unwrap_or(0)];
        let mut related: Vec<&Demand> = certain
            .iter()
            .copied()
            .filter(|d| !std::ptr::eq(*d, primary) && d.kinds.and(primary.kinds) == Kinds::NONE)
            .collect();
        if related.is_empty() {
            related = certain.iter().copied().filter(|d| !std::ptr::eq(*d, primary)).collect();
        }
        let name = self.name(key);
        let mut whats: Vec<&str> = vec![&primary.short];
        for d in &related {
            if !whats.contains(&d.short.as_str()) {
                whats.push(&d.short);
            }
        }
        let mut d = Diagnostic::new(
            Code::ConflictingUses,
            primary.span,
            format!("no value of `{name}` can satisfy all its uses: it is {}", whats.join(" and ")),
        )
        .with_label(format!("{} here", primary.what));
        let mut seen: Vec<(Span, &str)> = vec![(primary.span, primary.what.as_str())];
        for r in related {
            if seen.contains(&(r.span, r.what.as_str())) {
                continue;
            }
            seen.push((r.span, &r.what));
            d = d.with_secondary(r.span, format!("{} here", r.what));
        }
        d.with_help(format!("every use happens in any successful run, so no run can succeed: {}", self.fix(key)))
    }

    /// W0650: a conditional use that fails whenever it happens.
    fn conditional_conflict(
        &self,
        key: &Key,
        first: &Demand,
        rest: &[&Demand],
        certain: &[&Demand],
        all: Kinds,
    ) -> Diagnostic {
        let name = self.name(key);
        let mut d = Diagnostic::new(
            Code::ConditionalUseConflict,
            first.span,
            format!(
                "this use of `{name}` fails whenever it happens: it is {} here, and the uses that always happen need {}",
                first.short,
                all.describe()
            ),
        )
        .with_label(format!("{} here", first.what));
        let mut seen: Vec<(Span, &str)> = vec![(first.span, first.what.as_str())];
        for r in rest.iter().chain(certain.iter().filter(|c| c.kinds.and(first.kinds) == Kinds::NONE)) {
            if seen.contains(&(r.span, r.what.as_str())) {
                continue;
            }
            seen.push((r.span, &r.what));
            d = d.with_secondary(r.span, format!("{} here", r.what));
        }
        d.with_help(format!("the use runs only sometimes (a condition, a branch, an element, `continue_on_error`); when it runs, the step fails: {}", self.fix(key)))
    }

    /// How to fix a conflict on `key`.
    fn fix(&self, key: &Key) -> String {
        match key.origin {
            Origin::Step(i) | Origin::Response(i) => {
                let ins = self.c.steps[i].ins;
                let field = key.path.first().map_or("", |s| &**s);
                format!(
                    "change the uses that disagree, or declare `{field}` with a `type_name` in the `responses` of `{}` so that its calls are checked",
                    ins.tool_path().unwrap_or_default()
                )
            }
            Origin::Argument | Origin::Hidden => {
                let arg = key.path.first().map_or("", |s| &**s);
                format!("change the uses that disagree, or declare the argument `{arg}` with a `type_name`")
            }
        }
    }

    /// A value as a REF.
    fn name(&self, key: &Key) -> String {
        let context = match key.origin {
            Origin::Argument => "arguments".to_string(),
            Origin::Step(i) => self.c.steps[i].ins.execution_id.node.clone(),
            Origin::Response(_) => "response".to_string(),
            Origin::Hidden => "arguments".to_string(),
        };
        let mut s = format!("REF:{context}");
        for p in &key.path {
            s.push('.');
            s.push_str(p);
        }
        s
    }

    /// The static type of a value (`any` is what this pass looks at).
    fn static_type(&self, key: &Key) -> Type {
        let (base, path): (Type, &[Name]) = match key.origin {
            Origin::Hidden => return Type::Never,
            Origin::Argument => {
                let Some((first, rest)) = key.path.split_first() else { return Type::any_object() };
                match self.c.args.get(first) {
                    Some(t) => (t.clone(), rest),
                    None if !self.c.tool.declares_arguments => (Type::Any, rest),
                    None => return Type::Never,
                }
            }
            Origin::Step(i) | Origin::Response(i) => {
                if matches!(key.origin, Origin::Response(_)) && self.c.steps[i].ins.parallel_execution.is_some() {
                    return Type::Never;
                }
                (self.c.steps[i].result.clone().unwrap_or_else(Type::any_object), &key.path[..])
            }
        };
        path.iter().fold(base, |t, seg| segment_type(&t, seg))
    }
}

/// Where an expression is and what its names read.
struct ExprCx<'b> {
    names: &'b Bindings,
    owner: Option<usize>,
    map: &'b SourceMap,
}

/// The type a segment gives (only whether it is `any` matters here).
pub(crate) fn segment_type(t: &Type, seg: &str) -> Type {
    match t {
        Type::Any => Type::Any,
        Type::Null => Type::Null,
        Type::Object(o) => o.fields.get(seg).cloned().unwrap_or(if o.open { Type::Any } else { Type::Null }),
        Type::List(e) if seg == "first" || seg == "last" || seg.bytes().all(|b| b.is_ascii_digit()) => {
            (**e).clone().union(Type::Null)
        }
        Type::Union(parts) => Type::union_all(parts.iter().map(|p| segment_type(p, seg))),
        _ if seg == "length" => Type::Int,
        _ => Type::Never,
    }
}

/// What a declared argument or response accepts: its type (and `enum`), `null` when it is
/// optional or has a default.
fn accepted_kinds(p: &Param) -> Kinds {
    let accepted = accepted_type(p);
    let mut kinds = Kinds::of(&accepted);
    if let Some(values) = &p.constraints.enum_values {
        let allowed = values.node.iter().fold(Kinds::NONE, |k, v| k.or(Kinds::of_value(v)));
        kinds = kinds.and(allowed.or(Kinds::of(&accepted).and(Kinds::NULL)));
    }
    kinds
}

trait SpanInside {
    fn span_inside(&self) -> Span;
}

impl SpanInside for JsonNode {
    fn span_inside(&self) -> Span {
        match &self.kind {
            JsonKind::Str(s) => s.content_span(),
            _ => self.span,
        }
    }
}
