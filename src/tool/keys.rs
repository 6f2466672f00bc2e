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

use crate::diagnostic::did_you_mean;

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

/// Keys that other tool, plan and tool-call formats use — MCP's and OpenAI's tool
/// declarations, workflow engines', agent frameworks' — with the key a `.tool` file writes for
/// the same thing, per kind of object. The loader's unknown-key error names the rename, and a
/// key's absence is not reported again when an alias of it is there (`"steps"` is one error,
/// not also "the tool has neither `system_event_endpoint` nor `instructions`").
const ALIASES: &[(Level, &[&str], &str)] = &[
    (Level::Tool, &["steps", "plan", "tasks", "nodes", "calls", "workflow", "actions"], "instructions"),
    (Level::Tool, &["input_schema", "inputSchema", "parameters", "params", "inputs", "input", "args"], "arguments"),
    (Level::Tool, &["output_schema", "outputSchema", "returns"], "responses"),
    (Level::Tool, &["outputs", "output", "result", "results", "return"], "response_reference_map"),
    (Level::Tool, &["endpoint", "command", "exec", "url", "entrypoint"], "system_event_endpoint"),
    (Level::Tool, &["summary", "desc", "about"], "description"),
    (
        Level::Instruction,
        &["depends_on", "dependsOn", "depends", "after", "needs", "requires", "wait_for"],
        "dependencies",
    ),
    (
        Level::Instruction,
        &["tool", "tool_name", "toolName", "function", "function_name", "action", "tool_path", "call", "uses"],
        "tool_definition_path",
    ),
    (Level::Instruction, &["id", "step_id", "stepId", "step", "name", "step_name"], "execution_id"),
    (
        Level::Instruction,
        &["args", "parameters", "params", "input", "inputs", "action_input", "tool_input", "with"],
        "arguments",
    ),
    (
        Level::Instruction,
        &["foreach", "for_each", "forEach", "loop", "map", "parallel", "iterate"],
        "parallel_execution",
    ),
    (Level::Instruction, &["condition", "if", "when", "only_if"], "conditions"),
    (Level::Instruction, &["timeout", "timeout_secs", "timeout_s", "timeoutSeconds"], "timeout_seconds"),
    (
        Level::Instruction,
        &["on_error", "continue_on_failure", "ignore_errors", "ignore_error", "allow_failure"],
        "continue_on_error",
    ),
    (Level::Instruction, &["retries", "retry_policy", "retryPolicy"], "retry"),
    (Level::Instruction, &["summary", "desc"], "description"),
    (Level::Param, &["type", "datatype", "data_type", "typeName"], "type_name"),
    (Level::Param, &["desc", "summary"], "description"),
    (Level::Param, &["is_required", "mandatory"], "required"),
    (Level::Param, &["values", "choices", "options", "allowed", "allowed_values"], "enum"),
    (Level::Param, &["min", "minValue"], "minimum"),
    (Level::Param, &["max", "maxValue"], "maximum"),
    (Level::Param, &["minLength", "minItems", "min_items"], "min_length"),
    (Level::Param, &["maxLength", "maxItems", "max_items"], "max_length"),
    (Level::Param, &["regex"], "pattern"),
    (Level::Param, &["default_value", "defaultValue"], "default"),
    (Level::Param, &["element", "elements", "item", "element_type"], "items"),
    (Level::Transform, &["expressions", "fields", "compute", "outputs", "mappings"], "transforms"),
    (Level::Transform, &["vars", "inputs", "bindings"], "variables"),
    (Level::ConditionLeaf, &["op", "operation", "comparator", "compare"], "operator"),
    (Level::ConditionLeaf, &["left", "lhs", "field", "path", "subject"], "param"),
    (Level::ConditionLeaf, &["right", "rhs", "expected", "target"], "value"),
    (Level::ConditionGroup, &["rules", "clauses", "children", "items", "all", "any"], "conditions"),
    (Level::ConditionGroup, &["combinator", "mode"], "logic"),
    (Level::Parallel, &["over", "items", "list", "array", "foreach", "for_each", "iterate"], "iterate_over"),
    (
        Level::Parallel,
        &["as", "item_name", "argument", "argument_name", "child_argument", "item_argument", "arg_name"],
        "child_argument_name",
    ),
    (Level::Retry, &["retries", "maxRetries"], "max_retries"),
    (Level::Retry, &["delay", "initial_delay", "base_delay", "backoff", "delay_seconds"], "base_delay_seconds"),
    (Level::Retry, &["multiplier", "backoff_factor", "backoff_multiplier"], "factor"),
    (Level::Retry, &["max_delay", "maxDelay"], "max_delay_seconds"),
];

impl Level {
    /// The key of this kind of object that `key`, a key of another format, stands for
    /// (`steps` → `instructions` on a tool, `id` → `execution_id` on an instruction), when
    /// `key` is not a key here itself.
    ///
    /// ```
    /// use tdsl::testing::tool::keys::Level;
    ///
    /// assert_eq!(Level::Tool.alias("inputSchema"), Some("arguments"));
    /// assert_eq!(Level::Instruction.alias("depends_on"), Some("dependencies"));
    /// assert_eq!(Level::Param.alias("type"), Some("type_name"));
    /// // An element declaration has no `default`, so `defaultValue` stands for nothing there.
    /// assert_eq!(Level::Element.alias("defaultValue"), None);
    /// assert_eq!(Level::Instruction.alias("arguments"), None);
    /// ```
    pub fn alias(self, key: &str) -> Option<&'static str> {
        if self.has(key) {
            return None;
        }
        let table = if self == Level::Element { Level::Param } else { self };
        ALIASES
            .iter()
            .find(|(level, keys, _)| *level == table && keys.contains(&key))
            .map(|(_, _, ours)| *ours)
            .filter(|ours| self.has(ours))
    }
}

impl Level {
    /// The help of the error for `key`, which is not a key of this kind of object: the rename
    /// when it is another format's word for one ([`Level::alias`]), else the nearest key,
    /// else where `key` belongs, else the keys there are.
    pub(crate) fn unknown_key_help(self, key: &str) -> String {
        if let Some(ours) = self.alias(key) {
            return match self.key(ours).map(|k| k.shape) {
                // `input_schema` holds a JSON Schema object; a `.tool` file's declarations
                // are a list.
                Some(Shape::ListOf(Level::Param)) => format!(
                    "tdsl calls it `{ours}`: rename `{key}` to `{ours}`, a list of declarations like \
                     `{{\"name\": \"url\", \"type_name\": \"string\", \"required\": true}}` (not a JSON Schema object)"
                ),
                _ => format!("tdsl calls it `{ours}`: rename `{key}` to `{ours}`"),
            };
        }
        if self == Level::Tool && matches!(key, "name" | "title" | "id") {
            return format!(
                "a tool's name is not a key: a `.tool` file is named by its path from the tool root \
                 (`/tools/search.tool`), and a plan needs none; remove `{key}`"
            );
        }
        if let Some(s) = did_you_mean(key, self.names()) {
            return format!("did you mean `{s}`?");
        }
        let keys: Vec<&str> = self.names().collect();
        match Level::ALL.iter().find(|l| l.has(key)) {
            Some(home) => {
                format!("`{key}` is a key of {}; the keys here are {}", home.describe(), quoted_list(&keys))
            }
            None => format!("the keys here are {}", quoted_list(&keys)),
        }
    }
}

/// `a`, `b` and `c`, each in backticks.
pub(crate) fn quoted_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("`{s}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
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
    fn every_alias_stands_for_a_key_of_its_level_and_is_none_itself() {
        for (level, keys, ours) in ALIASES {
            assert!(level.has(ours), "{level:?}: `{ours}` is no key here");
            for key in *keys {
                assert!(!level.has(key), "{level:?}: `{key}` is a key here, not an alias");
                assert_eq!(level.alias(key), Some(*ours), "{level:?}: `{key}`");
            }
            let mut sorted: Vec<&str> = keys.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), keys.len(), "{level:?}: an alias listed twice");
        }
        // One alias stands for one key per level.
        for level in Level::ALL {
            let mut all: Vec<&str> =
                ALIASES.iter().filter(|(l, _, _)| *l == level).flat_map(|(_, keys, _)| keys.iter().copied()).collect();
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n, "{level:?}: an alias stands for two keys");
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
