//! The one declaration of the `.tool` format's keys (SPEC §5): for each kind of object,
//! its keys in order, each with its JSON shape, a line of documentation, whether it is
//! required and whether it goes beyond the source documents (**(ext)** in SPEC).
//!
//! Everything that knows the keys reads them here: the loader's unknown-key checks and
//! their "it is a key of …" help (`schema.rs`), the language server's completion and hover
//! of keys, and the JSON Schema that `tdsl schema` prints (which renders each [`Shape`]).
//! Adding a key is one row here, plus the code that reads its value.
//!
//! ```
//! use tdsl::testing::tool::keys::Level;
//!
//! let retry: Vec<&str> = Level::Retry.names().collect();
//! assert_eq!(retry, ["max_retries", "base_delay_seconds", "factor", "max_delay_seconds", "jitter"]);
//! let key = Level::Param.key("pattern").unwrap();
//! assert!(key.ext && !key.required);
//! ```

/// A kind of object in a `.tool` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// The file's root object.
    Tool,
    /// An entry of `instructions`.
    Instruction,
    /// An entry of `arguments` or `responses`.
    Param,
    /// `items` written as an object: a declaration of a list's elements (a [`Level::Param`]
    /// without `name`, `required` and `default`).
    Element,
    /// `transform_arguments` or `transform_responses`.
    Transform,
    /// A condition `{param, operator, value}`.
    ConditionLeaf,
    /// A condition group `{logic, conditions}`.
    ConditionGroup,
    /// `parallel_execution`.
    Parallel,
    /// `retry`.
    Retry,
}

/// The JSON shape of a key's value, as the JSON Schema states it. The loader checks the
/// same shapes (and more: REFs, expressions, ranges) in its own code, key by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Any string.
    Text,
    /// `true` or `false`.
    Boolean,
    /// Any number.
    Number,
    /// A number ≥ 0.
    NonNegative,
    /// A number > 0.
    Positive,
    /// A number from 0 to 1.
    Fraction,
    /// A whole number ≥ 0.
    Count,
    /// Any JSON value.
    Any,
    /// Any list.
    List,
    /// Any object (its keys are the writer's).
    Object,
    /// A name: `[A-Za-z_][A-Za-z0-9_-]*`.
    Identifier,
    /// An identifier that is not a reserved name (an execution id).
    ExecutionId,
    /// A `.tool` path from the tool root.
    ToolPath,
    /// A type name: `string`, `list<integer>`…
    TypeName,
    /// A `REF:` string.
    Ref,
    /// An object whose values are `REF:` strings.
    RefMap,
    /// An object whose values are expression strings.
    Expressions,
    /// A REF string or a literal list.
    RefOrList,
    /// A list of identifiers.
    Identifiers,
    /// A list of keys (strings) and indices (whole numbers ≥ 0).
    Path,
    /// A condition operator.
    Operator,
    /// A group's logic: `AND`, `OR`, `NOT`.
    Logic,
    /// A list of conditions (leaves or groups).
    Conditions,
    /// A list of conditions, or an expression string.
    DoneCheck,
    /// A type name, or a declaration object (`items`).
    Items,
    /// A list of objects of this level.
    ListOf(Level),
    /// One object of this level.
    One(Level),
}

/// One key of one kind of object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key as written.
    pub name: &'static str,
    /// Its value's JSON shape.
    pub shape: Shape,
    /// What it means, in one or two sentences (Markdown).
    pub doc: &'static str,
    /// Whether every such object must have it.
    pub required: bool,
    /// Whether it goes beyond the source documents (SPEC's **(ext)**).
    pub ext: bool,
}

const fn key(name: &'static str, shape: Shape, doc: &'static str) -> Key {
    Key { name, shape, doc, required: false, ext: false }
}

const fn required(name: &'static str, shape: Shape, doc: &'static str) -> Key {
    Key { name, shape, doc, required: true, ext: false }
}

const fn ext(name: &'static str, shape: Shape, doc: &'static str) -> Key {
    Key { name, shape, doc, required: false, ext: true }
}

const TOOL: &[Key] = &[
    key("description", Shape::Text, "What the tool does."),
    key(
        "arguments",
        Shape::ListOf(Level::Param),
        "What the tool takes. Without this key the tool accepts any argument.",
    ),
    key(
        "responses",
        Shape::ListOf(Level::Param),
        "What the tool returns. Without this key its result fields are unknown.",
    ),
    key(
        "system_event_endpoint",
        Shape::Text,
        "How the host runs a primitive tool: `exec:…`, `builtin:…`, `mcp:…`, `https://…`.",
    ),
    key("instructions", Shape::ListOf(Level::Instruction), "The steps of a composite tool."),
    key("response_reference_map", Shape::RefMap, "Declared response name → `REF:` string."),
    ext(
        "transform_arguments",
        Shape::One(Level::Transform),
        "Composite only: reshapes the tool's own arguments before any step runs.",
    ),
    ext("transform_responses", Shape::One(Level::Transform), "Composite only: reshapes the tool's result."),
    key(
        "output_key",
        Shape::Identifier,
        "The default `expected_key` of every step that calls this tool (seed 002); a step's own `expected_key` wins.",
    ),
];

const INSTRUCTION: &[Key] = &[
    required(
        "execution_id",
        Shape::ExecutionId,
        "The step's name, used by REFs (`REF:<execution_id>.key`); unique in the tool, not `arguments`, `response`, `item` or `current`.",
    ),
    key(
        "tool_definition_path",
        Shape::ToolPath,
        "The callee, from the tool root: `/tools/scanner.tool`. Without it the step is a transform step: it calls nothing, and its `transform_responses` compute its result.",
    ),
    key("description", Shape::Text, "A note for readers; the engine ignores it."),
    key("arguments", Shape::Object, "Values for the callee's arguments; `REF:` strings at any depth."),
    key("transform_arguments", Shape::One(Level::Transform), "Reshapes the resolved arguments before the call."),
    key("transform_responses", Shape::One(Level::Transform), "Reshapes the step's result after the call."),
    key(
        "conditions",
        Shape::Conditions,
        "All must hold for the step to run; otherwise it is skipped and its result is `null`.",
    ),
    key("parallel_execution", Shape::One(Level::Parallel), "Calls the tool once per element of a list."),
    key("dependencies", Shape::Identifiers, "Execution ids this step waits for, beyond those its REFs imply."),
    key(
        "done_check",
        Shape::DoneCheck,
        "Conditions or an expression: when it holds before the step runs, the step is skipped as done (seed 002).",
    ),
    key("done_value", Shape::Any, "The step's result when `done_check` holds (REFs resolved at any depth)."),
    key("retry", Shape::One(Level::Retry), "Retries after transient failures."),
    key("timeout_seconds", Shape::Positive, "Bound on one attempt, in seconds (1 to 300; 60 by default)."),
    key(
        "continue_on_error",
        Shape::Boolean,
        "When `true`, a failure becomes the result `{\"status\": \"failed\", \"error_message\": …}` and the run goes on.",
    ),
    key(
        "output_path",
        Shape::Path,
        "The step's result is the value at this path (keys and indices) of what it produced, taken last (seed 002).",
    ),
    key(
        "expected_key",
        Shape::Identifier,
        "Another name for the step's result: `REF:<expected_key>…` works like `REF:<execution_id>…` (seed 002).",
    ),
];

const PARAM: &[Key] = &[
    required(
        "name",
        Shape::Identifier,
        "An identifier, unique in its list, so that `REF:arguments.<name>` can name it.",
    ),
    key("type_name", Shape::TypeName, "string, number, integer, boolean, list, list<T>, object, file or any."),
    key("description", Shape::Text, "What it is."),
    key(
        "required",
        Shape::Boolean,
        "Whether it must be given (for responses: present and not null); `false` when absent.",
    ),
    ext("enum", Shape::List, "The allowed values, each of the declared type."),
    ext("minimum", Shape::Number, "Inclusive lower bound of a number."),
    ext("maximum", Shape::Number, "Inclusive upper bound of a number."),
    ext("min_length", Shape::Count, "Fewest characters of a string, or elements of a list."),
    ext("max_length", Shape::Count, "Most characters of a string, or elements of a list."),
    ext("pattern", Shape::Text, "A regular expression a string must contain a match of (anchor it with `^…$`)."),
    ext("items", Shape::Items, "The elements' declaration of a list: a type name, or an object like this one."),
    ext("default", Shape::Any, "The value an argument takes when it is absent or `null`."),
];

/// The keys of an instruction that a transform step (one without `tool_definition_path`,
/// SPEC §6.4 ext) cannot have: they configure a call, and it makes none.
pub const NOT_ON_TRANSFORM_STEPS: &[&str] = &[
    "arguments",
    "transform_arguments",
    "parallel_execution",
    "retry",
    "timeout_seconds",
    "continue_on_error",
    "done_check",
    "done_value",
];

/// The keys of a declaration that an element declaration (`items`) does not have.
const NOT_OF_ELEMENTS: &[&str] = &["name", "required", "default"];

const TRANSFORM: &[Key] = &[
    key("variables", Shape::Object, "Name → `REF:` string or literal."),
    key(
        "transforms",
        Shape::Expressions,
        "Output key → expression (SPEC §4), evaluated in order; each result is written to its key.",
    ),
];

const CONDITION_LEAF: &[Key] = &[
    required("param", Shape::Any, "The value tested, usually a `REF:` string."),
    required("operator", Shape::Operator, "How `param` is compared with `value`: `equals`, `exists`, `in`…"),
    key("value", Shape::Any, "What `param` is compared with (none for `exists` and `not_exists`)."),
];

const CONDITION_GROUP: &[Key] = &[
    required(
        "logic",
        Shape::Logic,
        "How the group combines its conditions: `AND`, `OR`, or **(ext)** `NOT` (exactly one condition).",
    ),
    required("conditions", Shape::Conditions, "The group's conditions; groups nest."),
];

const PARALLEL: &[Key] = &[
    required("iterate_over", Shape::RefOrList, "The list to fan out over: a REF to a list, or a literal list."),
    required("child_argument_name", Shape::Identifier, "The argument each call receives its element as."),
];

const RETRY: &[Key] = &[
    key("max_retries", Shape::Count, "Retries after the first attempt (0 to 5)."),
    key("base_delay_seconds", Shape::NonNegative, "Delay before the first retry (0.1 to 10 seconds)."),
    key("factor", Shape::NonNegative, "Growth of the delay per retry (1 to 4)."),
    key("max_delay_seconds", Shape::NonNegative, "Upper bound of a delay (1 to 120 seconds)."),
    key("jitter", Shape::Fraction, "Random fraction added to or taken from each delay (0 to 0.5)."),
];

impl Level {
    /// Every kind of object, in the order "it is a key of …" helps look a key up.
    pub const ALL: [Level; 9] = [
        Level::Tool,
        Level::Instruction,
        Level::Param,
        Level::Element,
        Level::Transform,
        Level::ConditionLeaf,
        Level::ConditionGroup,
        Level::Parallel,
        Level::Retry,
    ];

    /// Its keys, in the order the format documents them.
    pub fn keys(self) -> impl Iterator<Item = &'static Key> + Clone {
        let table = match self {
            Level::Tool => TOOL,
            Level::Instruction => INSTRUCTION,
            Level::Param | Level::Element => PARAM,
            Level::Transform => TRANSFORM,
            Level::ConditionLeaf => CONDITION_LEAF,
            Level::ConditionGroup => CONDITION_GROUP,
            Level::Parallel => PARALLEL,
            Level::Retry => RETRY,
        };
        let element = self == Level::Element;
        table.iter().filter(move |k| !element || !NOT_OF_ELEMENTS.contains(&k.name))
    }

    /// The names of its keys.
    pub fn names(self) -> impl Iterator<Item = &'static str> + Clone {
        self.keys().map(|k| k.name)
    }

    /// Whether `name` is one of its keys.
    pub fn has(self, name: &str) -> bool {
        self.key(name).is_some()
    }

    /// The key called `name`.
    pub fn key(self, name: &str) -> Option<&'static Key> {
        self.keys().find(|k| k.name == name)
    }

    /// What messages call such an object.
    pub fn describe(self) -> &'static str {
        match self {
            Level::Tool => "a tool definition",
            Level::Instruction => "an instruction",
            Level::Param => "an argument or response declaration",
            Level::Element => "an element declaration (`items`)",
            Level::Transform => "a transform block",
            Level::ConditionLeaf => "a condition",
            Level::ConditionGroup => "a condition group",
            Level::Parallel => "`parallel_execution`",
            Level::Retry => "`retry`",
        }
    }
}

impl Shape {
    /// How the documentation says it.
    pub fn describe(self) -> &'static str {
        match self {
            Shape::Text => "string",
            Shape::Boolean => "boolean",
            Shape::Number => "number",
            Shape::NonNegative => "number ≥ 0",
            Shape::Positive => "number > 0",
            Shape::Fraction => "number from 0 to 1",
            Shape::Count => "integer ≥ 0",
            Shape::Any => "any JSON",
            Shape::List => "list",
            Shape::Object => "object",
            Shape::Identifier => "identifier",
            Shape::ExecutionId => "identifier (not reserved)",
            Shape::ToolPath => "`.tool` path",
            Shape::TypeName => "type name",
            Shape::Ref => "REF string",
            Shape::RefMap => "object: name → REF string",
            Shape::Expressions => "object: name → expression",
            Shape::RefOrList => "REF string or list",
            Shape::Identifiers => "list of identifiers",
            Shape::Path => "list of keys and indices",
            Shape::Operator => "operator",
            Shape::Logic => "`AND`, `OR` or `NOT`",
            Shape::Conditions => "list of conditions",
            Shape::DoneCheck => "list of conditions, or an expression string",
            Shape::Items => "type name or element declaration",
            Shape::ListOf(Level::Param) => "list of declarations",
            Shape::ListOf(Level::Instruction) => "list of instructions",
            Shape::ListOf(_) => "list of objects",
            Shape::One(Level::Transform) => "transform block",
            Shape::One(_) => "object",
        }
    }
}

/// A key's documentation as hover and completion show it: its shape, whether it is
/// required or ext, and its line of documentation.
#[cfg(feature = "lsp")]
pub(crate) fn describe(level: Level, key: &Key) -> String {
    let mut marks = Vec::new();
    if key.required {
        marks.push("required");
    }
    if key.ext {
        marks.push("ext");
    }
    let marks = if marks.is_empty() { String::new() } else { format!(" ({})", marks.join(", ")) };
    format!("**`{}`** — {}, key of {}{marks}\n\n{}", key.name, key.shape.describe(), level.describe(), key.doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_level_and_every_nested_level_is_reachable() {
        for level in Level::ALL {
            let names: Vec<&str> = level.names().collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{level:?} declares a key twice");
        }
        let nested: Vec<Level> = Level::ALL
            .iter()
            .flat_map(|l| l.keys())
            .filter_map(|k| match k.shape {
                Shape::ListOf(l) | Shape::One(l) => Some(l),
                Shape::Conditions => Some(Level::ConditionLeaf),
                Shape::Items => Some(Level::Element),
                _ => None,
            })
            .collect();
        for level in [Level::Instruction, Level::Param, Level::Element, Level::Transform, Level::Parallel, Level::Retry]
        {
            assert!(nested.contains(&level), "{level:?} is no key's value");
        }
    }

    #[test]
    fn what_a_transform_step_cannot_have_are_keys_of_an_instruction() {
        for name in NOT_ON_TRANSFORM_STEPS {
            assert!(Level::Instruction.has(name), "{name}");
        }
        for name in ["execution_id", "tool_definition_path", "transform_responses", "conditions", "dependencies"] {
            assert!(!NOT_ON_TRANSFORM_STEPS.contains(&name), "{name}");
        }
    }
}
