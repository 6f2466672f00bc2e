//! The checked plan: what the execution engine runs.
//!
//! A [`Plan`] is built only for a composite tool that checked without errors. Everything the
//! engine must decide at run time is already decided here: REF strings are parsed and their
//! contexts resolved to [`StepId`]s, transform expressions and call-strings are compiled
//! [`Program`]s, conditions are trees of operators, and the steps are in a deterministic
//! order, grouped into levels. The plan holds no file handles and no callee plans: a callee
//! that is itself composite gets its own plan from the same [`crate::analysis::Analyzer`].
//!
//! *Invariant*: `steps` is in execution order — by level, then by `execution_id` — and a
//! step's `depends_on` only names steps of lower levels.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::engine::Program;
use crate::span::Span;
use crate::tool::{Logic, Operator, PathSegment, Retry, ToolDef};
use crate::types::Type;
use crate::value::Value;

/// A step's position in [`Plan::steps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepId(pub usize);

/// A checked composite tool, ready to run.
///
/// What an embedder sees of it is its shape: the steps' execution ids by level
/// ([`Plan::levels`]) and the file. The compiled steps themselves are the engine's own
/// working form (their fields change with the engine), so they are not part of the API.
///
/// ```
/// use tdsl::{Analyzer, ToolRoot};
///
/// let source = r#"{
///   "instructions": [
///     {"execution_id": "a", "tool_definition_path": "/tools/t.tool"},
///     {"execution_id": "b", "tool_definition_path": "/tools/t.tool"},
///     {"execution_id": "c", "tool_definition_path": "/tools/t.tool",
///      "arguments": {"x": "REF:a", "y": "REF:b"}}
///   ]
/// }"#;
/// let root = std::env::temp_dir().join(format!("tdsl-plan-doc-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("tools")).unwrap();
/// std::fs::write(root.join("tools/t.tool"), r#"{"system_event_endpoint": "builtin:echo"}"#).unwrap();
/// let mut analyzer = Analyzer::new(ToolRoot::new(&root));
/// let checked = analyzer.check_source("main.tool", source);
/// let plan = checked.plan.expect("a plan");
/// assert_eq!(plan.levels(), [vec!["a", "b"], vec!["c"]]);
/// assert_eq!(plan.execution_ids().collect::<Vec<_>>(), ["a", "b", "c"]);
/// std::fs::remove_dir_all(&root).ok();
/// ```
#[derive(Clone, Debug)]
pub struct Plan {
    /// The definition the plan was made from (descriptions, declared arguments and
    /// responses, for validation at run time).
    pub(crate) tool: Arc<ToolDef>,
    /// The file, when the tool was read from one.
    pub file: Option<PathBuf>,
    /// The tool-level `transform_arguments`, run on the tool's arguments before any step.
    pub(crate) transform_arguments: Option<TransformPlan>,
    /// The steps in execution order: level by level, by `execution_id` within a level.
    pub(crate) steps: Vec<StepPlan>,
    /// The levels: `levels[n]` lists the steps of level `n`, in order. Steps of one level do
    /// not depend on each other and may run concurrently.
    pub(crate) levels: Vec<Vec<StepId>>,
    /// `response_reference_map`, in the order written; `None` when the tool has none (its
    /// result is then every step's result by execution id).
    pub(crate) response_map: Option<Vec<(Arc<str>, RefPlan)>>,
    /// The tool-level `transform_responses`, run on the tool's result.
    pub(crate) transform_responses: Option<TransformPlan>,
    /// [`Plan::dependents`], made when a run first needs it and kept for the next runs.
    #[cfg_attr(not(feature = "engine"), allow(dead_code))]
    pub(crate) graph: OnceLock<Graph>,
}

/// Who waits for whom: for each step, the steps that depend on it (in plan order), and how
/// many distinct steps it waits for.
#[derive(Clone, Debug, Default)]
#[cfg_attr(not(feature = "engine"), allow(dead_code))]
pub(crate) struct Graph {
    pub(crate) dependents: Vec<Vec<StepId>>,
    pub(crate) waits_for: Vec<usize>,
}

impl StepPlan {
    /// Its callee's path, `""` for a transform step (what traces and messages write).
    pub fn tool(&self) -> &str {
        self.tool_path.as_deref().unwrap_or_default()
    }
}

impl Plan {
    /// The levels of the dependency graph, each as its steps' execution ids in order: the
    /// steps of a level do not depend on each other and may run concurrently; each waits
    /// only for steps of lower levels.
    pub fn levels(&self) -> Vec<Vec<&str>> {
        self.levels.iter().map(|level| level.iter().map(|id| &*self.steps[id.0].execution_id).collect()).collect()
    }

    /// The steps' execution ids in execution order (level by level, by id within a level).
    pub fn execution_ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.steps.iter().map(|s| &*s.execution_id)
    }

    /// The step with this `execution_id`.
    pub(crate) fn step(&self, execution_id: &str) -> Option<&StepPlan> {
        self.steps.iter().find(|s| &*s.execution_id == execution_id)
    }

    /// Who waits for whom: for each step, the steps that depend on it (in plan order), and
    /// how many distinct steps it waits for. A scheduler starts the steps with no wait and,
    /// as each ends, counts its dependents down.
    #[cfg(feature = "engine")]
    pub(crate) fn dependents(&self) -> &Graph {
        self.graph.get_or_init(|| self.graph_now())
    }

    #[cfg(feature = "engine")]
    fn graph_now(&self) -> Graph {
        let mut dependents: Vec<Vec<StepId>> = vec![Vec::new(); self.steps.len()];
        let mut pending = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let mut deps = s.depends_on.clone();
            deps.sort_unstable();
            deps.dedup();
            for d in &deps {
                dependents[d.0].push(s.id);
            }
            pending.push(deps.len());
        }
        Graph { dependents, waits_for: pending }
    }
}

/// One step of a plan.
#[derive(Clone, Debug)]
pub struct StepPlan {
    /// Its position in [`Plan::steps`].
    pub id: StepId,
    /// `execution_id`.
    pub execution_id: Arc<str>,
    /// Its position in the definition's `instructions`.
    pub index: usize,
    /// `tool_definition_path`, as written; `None` for a transform step (SPEC §6.4 ext),
    /// which calls nothing: its result is the object of its `transform_responses`.
    pub tool_path: Option<Arc<str>>,
    /// The callee's file, when it resolved under the tool root.
    pub callee_file: Option<PathBuf>,
    /// Its level: 0 for a step that depends on none, else one more than its deepest
    /// dependency's.
    pub level: usize,
    /// The steps it waits for (through REFs or `dependencies`), in order.
    pub depends_on: Vec<StepId>,
    /// Why it waits for each of them, in the same order.
    pub inputs: Vec<StepInput>,
    /// `arguments`, with REFs to resolve.
    pub arguments: Vec<(Arc<str>, ValuePlan)>,
    /// `transform_arguments`: its transforms run against the resolved arguments.
    pub transform_arguments: Option<TransformPlan>,
    /// The optional arguments of the callee whose schema does not allow `null` (an upstream
    /// tool's `"since": {"type": "string"}`): one whose value is `null` fails the step before
    /// the call (`E0801`). Sent, such a server refuses it or takes it as a value; left out,
    /// it can widen the call (`list_orders` without its `customer_id`: everyone's orders).
    pub non_null_optional: Vec<Arc<str>>,
    /// `conditions`: all must hold, or the step is skipped.
    pub conditions: Vec<ConditionPlan>,
    /// `parallel_execution`.
    pub parallel: Option<ParallelPlan>,
    /// `done_check`.
    pub done_check: Option<DoneCheckPlan>,
    /// `done_value`.
    pub done_value: Option<ValuePlan>,
    /// `transform_responses`: its transforms run against the raw response.
    pub transform_responses: Option<TransformPlan>,
    /// `retry`, as written (absent keys take the engine's defaults).
    pub retry: Option<Retry>,
    /// `timeout_seconds`.
    pub timeout_seconds: Option<f64>,
    /// `continue_on_error` (default `false`).
    pub continue_on_error: bool,
    /// `output_path`: the step's result is the value at this path of what the step
    /// produced (after `transform_responses` and validation); see [`value_at`].
    pub output_path: Option<Arc<[PathSegment]>>,
    /// `expected_key`: another name REFs may use for this step's result (already resolved
    /// to this step in every [`RefPlan`]).
    pub expected_key: Option<Arc<str>>,
    /// The static type of the step's result, as REFs to it see it.
    pub result_type: Type,
    /// The whole instruction in the file.
    pub span: Span,
}

/// Why a step waits for another.
#[derive(Clone, Debug, PartialEq)]
pub struct StepInput {
    /// The step waited for.
    pub from: StepId,
    /// The paths read from its result, after the execution id (`files`, `files.length`;
    /// `*` for the whole result), in first-use order.
    pub carries: Vec<Arc<str>>,
    /// Whether `dependencies` names it.
    pub manual: bool,
}

/// A value to build at run time: JSON with REFs (and, in `variables`, call-strings) in it.
/// Subtrees without either are folded into one [`ValuePlan::Literal`].
#[derive(Clone, Debug)]
pub enum ValuePlan {
    /// A literal value.
    Literal(Value),
    /// A REF, resolved keeping the referenced value's type.
    Ref(RefPlan),
    /// A call-string of a `variables` entry (`"datetime_now(format=\"iso\")"`): the value
    /// is the program's result.
    Call(Program),
    /// A list, element by element.
    List(Vec<ValuePlan>),
    /// An object, entry by entry in the order written.
    Object(Vec<(Arc<str>, ValuePlan)>),
}

/// A parsed REF with its context resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct RefPlan {
    /// What the REF starts from.
    pub context: RefContext,
    /// The segments after the context (`files`, `0`, `length`, …).
    pub segments: Vec<Arc<str>>,
    /// The REF in the file.
    pub span: Span,
}

/// The start of a REF path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefContext {
    /// `REF:arguments`: the composite's arguments (after its own `transform_arguments`).
    Arguments,
    /// `REF:response`: the raw response, inside `transform_responses` only.
    Response,
    /// `REF:<execution_id>`: that step's result.
    Step(StepId),
}

/// A compiled transform block (SPEC §3).
#[derive(Clone, Debug, Default)]
pub struct TransformPlan {
    /// `variables`, in declaration order.
    pub variables: Vec<(Arc<str>, ValuePlan)>,
    /// `transforms`, in declaration order: output key and its program. A program's names
    /// are the context keys (the object transformed, the variables over it, the earlier
    /// outputs); its REF contexts are `arguments`, the step ids and, in
    /// `transform_responses`, `response`.
    pub transforms: Vec<(Arc<str>, Program)>,
}

/// A condition (SPEC §6.2).
#[derive(Clone, Debug)]
pub enum ConditionPlan {
    /// `{"param": P, "operator": OP, "value": V}`
    Leaf {
        /// The value tested.
        param: ValuePlan,
        /// The operator.
        operator: Operator,
        /// What it is compared with (`None` for `exists` / `not_exists`).
        value: Option<ValuePlan>,
        /// The condition in the file.
        span: Span,
    },
    /// `{"logic": …, "conditions": [...]}`
    Group {
        /// How the conditions combine.
        logic: Logic,
        /// The conditions.
        conditions: Vec<ConditionPlan>,
        /// The group in the file.
        span: Span,
    },
}

/// `parallel_execution`.
#[derive(Clone, Debug)]
pub struct ParallelPlan {
    /// The list to fan out over.
    pub iterate_over: ValuePlan,
    /// The argument each child gets its element as.
    pub child_argument_name: Arc<str>,
}

/// `done_check`.
#[derive(Clone, Debug)]
pub enum DoneCheckPlan {
    /// A condition list: all must hold.
    Conditions(Vec<ConditionPlan>),
    /// An expression, true when its value is truthy. Its names are the step's resolved
    /// `arguments` (before `transform_arguments`).
    Expression(Program),
}

/// The value at `path` of `value` (`output_path`, SPEC §5): a key reads an object's key (or a
/// REF segment such as `length`), an index reads a list's element; an absent key or an index
/// past the end gives `null`, as does any segment of `null`. A segment that cannot apply (a
/// key of a number, an index of an object) is an error naming the path up to it.
#[cfg(feature = "engine")]
pub(crate) fn value_at(value: &Value, path: &[PathSegment]) -> Result<Value, String> {
    let mut current = value.clone();
    for (n, segment) in path.iter().enumerate() {
        let key = match segment {
            PathSegment::Key(k) => Value::from(k.as_str()),
            PathSegment::Index(i) => match i64::try_from(*i) {
                Ok(i) => Value::Int(i),
                Err(_) => return Ok(Value::Null),
            },
        };
        let next = match (&current, segment) {
            (Value::Object(_), PathSegment::Index(_)) => Err(()),
            _ => current.index(&key).map_err(|_| ()),
        };
        current = next.map_err(|()| {
            let walked: Vec<String> = path[..n].iter().map(ToString::to_string).collect();
            format!(
                "`output_path` [{}] cannot apply: the value at [{}] is {:#}, which has no {} {segment}",
                path.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                walked.join(", "),
                current.kind(),
                match segment {
                    PathSegment::Key(_) => "key",
                    PathSegment::Index(_) => "index",
                }
            )
        })?;
    }
    Ok(current)
}

#[cfg(all(test, feature = "engine"))]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn values_at_output_paths() {
        let key = |k: &str| PathSegment::Key(k.to_string());
        let doc = v(r#"{"data": {"Revenue": [1, 2], "name": "x"}}"#);
        assert_eq!(value_at(&doc, &[]), Ok(doc.clone()));
        assert_eq!(value_at(&doc, &[key("data"), key("Revenue"), PathSegment::Index(1)]), Ok(v("2")));
        // Absent keys, indices past the end and anything under null are null.
        assert_eq!(value_at(&doc, &[key("nope"), key("deeper")]), Ok(Value::Null));
        assert_eq!(value_at(&doc, &[key("data"), key("Revenue"), PathSegment::Index(9)]), Ok(Value::Null));
        assert_eq!(value_at(&doc, &[key("data"), key("Revenue"), key("length")]), Ok(v("2")));
        // A segment that cannot apply names the path.
        let e = value_at(&doc, &[key("data"), PathSegment::Index(0)]).expect_err("an index of an object");
        assert!(e.contains("[\"data\", 0]") && e.contains("no index 0"), "{e}");
        let e = value_at(&doc, &[key("data"), key("name"), key("x")]).expect_err("a key of a string");
        assert!(e.contains("the value at [\"data\", \"name\"] is a string"), "{e}");
    }
}
