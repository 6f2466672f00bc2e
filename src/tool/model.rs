//! The `.tool` model: what a tool definition says, with the span of every key and value.
//!
//! These types are plain data built by [`crate::tool::load`]. They hold no resolved
//! references, no compiled expressions and no knowledge of other files: REF strings stay
//! JSON strings (see [`crate::tool::refs`] for extracting them) and transform expressions stay
//! [`JsonStr`]s, so later stages parse them with spans that map back into the file.

use std::fmt;

use crate::span::{Span, Spanned};

use super::constraints::Constraints;
pub use super::json::{JsonNode, JsonObject, JsonStr};
pub use super::type_name::TypeName;

/// A parsed `.tool` file.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDef {
    /// `description`.
    pub description: Option<Spanned<String>>,
    /// `arguments`: what the tool takes. Empty both when the key is absent and when it is
    /// `[]`; [`ToolDef::declares_arguments`] tells them apart.
    pub arguments: Vec<Param>,
    /// `responses`: what the tool returns. Empty both when the key is absent and when it is
    /// `[]`; [`ToolDef::declares_responses`] tells them apart.
    pub responses: Vec<Param>,
    /// Whether the file has an `arguments` key (SPEC §5). Without one the tool declares
    /// nothing and accepts any argument: `REF:arguments.X` is `any` (with a warning), callers
    /// may pass anything, and an exported schema is open. `"arguments": []` declares none.
    pub declares_arguments: bool,
    /// Whether the file has a `responses` key: without one the tool may return anything and
    /// `response_reference_map` may map any name. `"responses": []` declares none.
    pub declares_responses: bool,
    /// Primitive or composite, with the keys that only that kind has.
    pub kind: ToolKind,
    /// `transform_arguments` on the tool as a whole (composite only).
    pub transform_arguments: Option<Transform>,
    /// `transform_responses` on the tool as a whole (composite only).
    pub transform_responses: Option<Transform>,
    /// `output_key` (seed 002's `ToolSpec`): the default `expected_key` of every step that
    /// calls this tool; a step's own `expected_key` wins (SPEC §5).
    pub output_key: Option<Spanned<String>>,
    /// The execution ids of instructions left out of `instructions` for their errors
    /// (reported when loading: no `tool_definition_path`, …): a REF to one of them is not
    /// reported again as naming no step.
    pub left_out: Vec<String>,
    /// The whole root object.
    pub span: Span,
}

/// What runs when the tool is called.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolKind {
    /// A tool the host runs (`system_event_endpoint`, SPEC §7).
    Primitive {
        /// How the host runs it: `exec:…`, `builtin:…`, `https://…`.
        system_event_endpoint: Spanned<String>,
    },
    /// A tool made of steps.
    Composite {
        /// `instructions`, in the order written.
        instructions: Vec<Instruction>,
        /// `response_reference_map`: declared response name → REF string. `None` when the
        /// key is absent (the result is then every step's result by execution id).
        response_reference_map: Option<JsonObject>,
    },
}

/// A declared argument or response: `{name, type_name, description, required}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// `name`.
    pub name: Spanned<String>,
    /// `type_name`; absent means `any`.
    pub type_name: Option<Spanned<TypeName>>,
    /// `description`.
    pub description: Option<Spanned<String>>,
    /// `required`; absent means `false`.
    pub required: Option<Spanned<bool>>,
    /// `enum`, `minimum`, `maximum`, `min_length`, `max_length`, `pattern`, `items`,
    /// `default` (SPEC §5 ext; see [`super::constraints`]).
    pub constraints: Constraints,
    /// The whole `{…}` object.
    pub span: Span,
}

impl Param {
    /// Whether the parameter must be given (`required`, default `false`).
    pub fn is_required(&self) -> bool {
        self.required.as_ref().is_some_and(|r| r.node)
    }

    /// The declared type, `any` when none is given.
    pub fn type_or_any(&self) -> TypeName {
        self.type_name.as_ref().map_or(TypeName::Any, |t| t.node.clone())
    }
}

/// One step of a composite tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// `execution_id`: unique within the composite, an identifier, not a reserved name.
    pub execution_id: Spanned<String>,
    /// `tool_definition_path`: the callee, e.g. `/tools/summarizer.tool`. `None` for a
    /// transform step (SPEC §6.4 ext), which calls nothing: its `transform_responses`
    /// compute its result.
    pub tool_definition_path: Option<Spanned<String>>,
    /// `description`: a note for readers; the engine ignores it.
    pub description: Option<Spanned<String>>,
    /// `arguments`: values for the callee, REFs allowed at any depth.
    pub arguments: Option<JsonObject>,
    /// `transform_arguments` (SPEC §3).
    pub transform_arguments: Option<Transform>,
    /// `transform_responses` (SPEC §3).
    pub transform_responses: Option<Transform>,
    /// `conditions`: all must hold for the step to run (SPEC §6.2).
    pub conditions: Vec<Condition>,
    /// `parallel_execution` (SPEC §6.3).
    pub parallel_execution: Option<ParallelExecution>,
    /// `dependencies`: extra edges, as execution ids.
    pub dependencies: Vec<Spanned<String>>,
    /// `done_check` (SPEC §6.6).
    pub done_check: Option<DoneCheck>,
    /// `done_value`: the step's result when `done_check` holds (a REF or a literal).
    pub done_value: Option<JsonNode>,
    /// `retry` (SPEC §6.5).
    pub retry: Option<Retry>,
    /// `timeout_seconds`: bound on one attempt, greater than zero.
    pub timeout_seconds: Option<Spanned<f64>>,
    /// `continue_on_error`.
    pub continue_on_error: Option<Spanned<bool>>,
    /// `output_path` (seed 002): the step's result is the value at this path of its
    /// response, taken after `transform_responses` and validation (SPEC §5, §6.4).
    pub output_path: Option<OutputPath>,
    /// `expected_key` (seed 002): another name for the step's result, so that
    /// `REF:<expected_key>…` works like `REF:<execution_id>…`. Unique among ids and keys.
    pub expected_key: Option<Spanned<String>>,
    /// The whole `{…}` object.
    pub span: Span,
}

/// `output_path`: a list of object keys and list indices.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputPath {
    /// The segments, in order.
    pub segments: Vec<Spanned<PathSegment>>,
    /// The whole `[…]` list.
    pub span: Span,
}

/// One step of an [`OutputPath`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// An object key (a JSON string).
    Key(String),
    /// A list index (a non-negative JSON integer).
    Index(usize),
}

impl fmt::Display for PathSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathSegment::Key(k) => write!(f, "{k:?}"),
            PathSegment::Index(i) => write!(f, "{i}"),
        }
    }
}

/// `transform_arguments` / `transform_responses`: variables, then transforms (SPEC §3).
#[derive(Clone, Debug, PartialEq)]
pub struct Transform {
    /// `variables`, in declaration order: REF strings, literals, lists and objects of them.
    pub variables: Vec<(Spanned<String>, JsonNode)>,
    /// `transforms`, in declaration order: output key → expression string.
    pub transforms: Vec<(Spanned<String>, JsonStr)>,
    /// The whole `{…}` object.
    pub span: Span,
}

/// One entry of `conditions`.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// `{"param": P, "operator": OP, "value": V}`
    Leaf {
        /// `param`: a REF or a literal.
        param: JsonNode,
        /// `operator`.
        operator: Spanned<Operator>,
        /// `value`: required except for `exists` / `not_exists`, which take none.
        value: Option<JsonNode>,
        /// The whole `{…}` object.
        span: Span,
    },
    /// `{"logic": "AND" | "OR" | "NOT", "conditions": [...]}`
    Group {
        /// `logic`.
        logic: Spanned<Logic>,
        /// `conditions`; exactly one for `NOT`.
        conditions: Vec<Condition>,
        /// The whole `{…}` object.
        span: Span,
    },
}

impl Condition {
    /// The whole condition object.
    pub fn span(&self) -> Span {
        match self {
            Condition::Leaf { span, .. } | Condition::Group { span, .. } => *span,
        }
    }
}

macro_rules! operators {
    ($( $(#[$doc:meta])* $name:ident = $text:literal, $takes_value:literal; )*) => {
        /// A condition operator (SPEC §6.2).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Operator {
            $( $(#[$doc])* $name, )*
        }

        impl Operator {
            /// Every operator, in the order the spec lists them.
            pub const ALL: &'static [Operator] = &[$(Operator::$name,)*];

            /// The operator as written in JSON.
            pub fn as_str(self) -> &'static str {
                match self { $(Operator::$name => $text,)* }
            }

            /// Whether the operator compares against a `value` (all but `exists` /
            /// `not_exists`).
            pub fn takes_value(self) -> bool {
                match self { $(Operator::$name => $takes_value,)* }
            }

            /// The operator written `text`, if any.
            pub fn parse(text: &str) -> Option<Operator> {
                match text { $($text => Some(Operator::$name),)* _ => None }
            }
        }
    };
}

operators! {
    /// Deep equality.
    Equals = "equals", true;
    /// Not deeply equal.
    NotEquals = "not_equals", true;
    /// `param` is not `null`.
    Exists = "exists", false;
    /// `param` is `null`.
    NotExists = "not_exists", false;
    /// Numeric `>`.
    GreaterThan = "greater_than", true;
    /// Numeric `<`.
    LessThan = "less_than", true;
    /// Numeric `>=`.
    GreaterThanOrEquals = "greater_than_or_equals", true;
    /// Numeric `<=`.
    LessThanOrEquals = "less_than_or_equals", true;
    /// String contains substring, list contains element, object has key.
    Contains = "contains", true;
    /// `param` is an element / substring / key of `value`.
    In = "in", true;
    /// String prefix.
    StartsWith = "starts_with", true;
    /// String suffix.
    EndsWith = "ends_with", true;
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a condition group combines its conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Logic {
    /// All hold.
    And,
    /// At least one holds.
    Or,
    /// The single condition does not hold.
    Not,
}

impl Logic {
    /// The spellings, as written in JSON.
    pub const NAMES: &'static [&'static str] = &["AND", "OR", "NOT"];

    /// The logic written `text` (upper case only), if any.
    pub fn parse(text: &str) -> Option<Logic> {
        match text {
            "AND" => Some(Logic::And),
            "OR" => Some(Logic::Or),
            "NOT" => Some(Logic::Not),
            _ => None,
        }
    }

    /// The logic as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Logic::And => "AND",
            Logic::Or => "OR",
            Logic::Not => "NOT",
        }
    }
}

/// `parallel_execution: {iterate_over, child_argument_name}` (SPEC §6.3).
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelExecution {
    /// A REF string to a list, or a literal list.
    pub iterate_over: JsonNode,
    /// The argument each child receives its element as.
    pub child_argument_name: Spanned<String>,
    /// The whole `{…}` object.
    pub span: Span,
}

/// `done_check`: a condition list, or an expression string (SPEC §6.6).
#[derive(Clone, Debug, PartialEq)]
pub enum DoneCheck {
    /// A list of conditions, all of which must hold.
    Conditions(Vec<Condition>),
    /// An expression, evaluated for truthiness.
    Expression(JsonStr),
}

/// `retry`: exponential backoff for transient errors (SPEC §6.5). Absent keys take the
/// engine's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Retry {
    /// `max_retries`: a non-negative integer.
    pub max_retries: Option<Spanned<u32>>,
    /// `base_delay_seconds`: non-negative.
    pub base_delay_seconds: Option<Spanned<f64>>,
    /// `factor`: non-negative.
    pub factor: Option<Spanned<f64>>,
    /// `max_delay_seconds`: non-negative.
    pub max_delay_seconds: Option<Spanned<f64>>,
    /// `jitter`: a fraction between 0 and 1.
    pub jitter: Option<Spanned<f64>>,
    /// The whole `{…}` object.
    pub span: Span,
}

impl Instruction {
    /// The callee's path as written; `None` for a transform step.
    pub fn tool_path(&self) -> Option<&str> {
        self.tool_definition_path.as_ref().map(|p| p.node.as_str())
    }

    /// Whether it is a transform step: it has no `tool_definition_path`, calls nothing,
    /// and its result is the object of its `transform_responses` outputs (SPEC §6.4 ext).
    pub fn is_transform_step(&self) -> bool {
        self.tool_definition_path.is_none()
    }
}

impl ToolDef {
    /// The instructions of a composite tool (none for a primitive one).
    pub fn instructions(&self) -> &[Instruction] {
        match &self.kind {
            ToolKind::Composite { instructions, .. } => instructions,
            ToolKind::Primitive { .. } => &[],
        }
    }

    /// True for a composite tool.
    pub fn is_composite(&self) -> bool {
        matches!(self.kind, ToolKind::Composite { .. })
    }
}
