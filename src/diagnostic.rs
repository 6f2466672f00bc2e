//! Diagnostics: what every stage reports, with a stable code, a message that names things,
//! labelled spans and a help line.
//!
//! One [`Diagnostic`] type serves parsing, checking, evaluation and the `.tool` analysis, so
//! the command line renders them all the same way (through miette) and the JSON output has
//! one shape. Each [`Code`] is documented with an input that triggers it; the full list
//! with examples is `docs/diagnostics.md`, and a test keeps the two in step.

use std::fmt;

use crate::span::Span;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The program cannot run.
    Error,
    /// Suspicious but runnable.
    Warning,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, $sev:ident; )*) => {
        /// Every diagnostic code tdsl can emit. Codes are stable: once published, a code
        /// keeps its meaning and is never reused.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[$doc])* $name, )*
        }

        impl Code {
            /// All codes, in order.
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];

            /// The stable code string (`E0101`).
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$name => $code,)* }
            }

            /// The code whose string is `s` (`E0101`), if this build has it.
            #[cfg_attr(not(feature = "engine"), allow(dead_code))]
            pub(crate) fn parse(s: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str() == s)
            }

            /// The severity diagnostics with this code have.
            pub fn severity(self) -> Severity {
                match self { $(Code::$name => Severity::$sev,)* }
            }
        }
    };
}

codes! {
    // ---- syntax (E00xx) ----
    /// The text does not follow the grammar: `map(array=xs,`
    Syntax = "E0001", Error;
    /// An unknown escape in a string literal: `"a\q"`
    InvalidEscape = "E0002", Error;
    /// Comparisons do not chain: `1 < x < 3`
    ChainedComparison = "E0003", Error;
    /// Brackets or prefix operators nested deeper than the limit: `((((…1…))))`
    NestingTooDeep = "E0004", Error;
    /// A number literal beyond the range of a 64-bit float: `1e400`
    InvalidNumber = "E0005", Error;
    /// A malformed REF string in a JSON value: `"REF:"`, `"REF:a..b"`
    InvalidRef = "E0006", Error;

    // ---- names and calls (E01xx) ----
    /// A name that is not in scope: `usr` when only `user` is defined
    UnknownName = "E0101", Error;
    /// A function that does not exist: `jion(xs)`
    UnknownFunction = "E0102", Error;
    /// More positional arguments than the function takes: `upper("a", "b")`
    TooManyArguments = "E0103", Error;
    /// A keyword the function does not take: `join(array=xs, sep=",")`
    UnknownKeyword = "E0104", Error;
    /// The same parameter given twice: `join(xs, array=ys)`
    DuplicateArgument = "E0105", Error;
    /// A required parameter not given: `map(array=xs)`
    MissingArgument = "E0106", Error;
    /// A positional argument after a keyword argument: `join(array=xs, ", ")`
    PositionalAfterKeyword = "E0107", Error;
    /// A REF to a context that does not exist: `REF:nosuchstep.x`
    UnknownRefContext = "E0108", Error;
    /// `REF:response` outside `transform_responses`
    ResponseOutsideTransform = "E0109", Error;
    /// `pipeline` operations that are not a list literal: `pipeline(x, ops)`
    OperationsNotList = "E0110", Error;
    /// A template's element named by something other than a string literal:
    /// `map(xs, as=repo, template=repo.name)`
    ElementNameNotLiteral = "E0111", Error;
    /// A template's element named by a string that is not a name, or is a keyword:
    /// `map(xs, as="2nd", template=item)`, `as="null"`
    ElementNameInvalid = "E0112", Error;
    /// A template's element named by a name bound there already (`item`, `current`, a
    /// variable, a REF context, an enclosing `as`):
    /// `map(repos, as="r", template=map(r.issues, as="r", template=item))`
    ElementNameTaken = "E0113", Error;

    // ---- types (E02xx) ----
    /// An argument whose type can never be accepted: `join(array=42)`
    ArgumentType = "E0201", Error;
    /// An operator applied to operands it cannot take: `"a" - 1`
    OperandType = "E0202", Error;
    /// A path segment applied to a value that has none: `(5).name`
    SegmentType = "E0203", Error;
    /// A constant argument outside the accepted set: `sort(xs, direction="up")`
    InvalidArgumentValue = "E0204", Error;
    /// A template given as a name whose value is not a string: `map(xs, template=count)`
    TemplateNotString = "E0205", Error;
    /// Indexing with a key of the wrong type: `xs[true]`
    IndexType = "E0206", Error;
    /// A value of a string enum compared with a string that is not one of its values, which
    /// is always false (`==`) or always true (`!=`): `item.status == 'OPEN'` where `status` is
    /// `"open" | "closed"`
    EnumComparison = "E0207", Error;
    /// Two values compared with `==` or `!=` whose types hold no value in common (a number
    /// and a string, a boolean and a string, a list or an object and a scalar), which is
    /// always false (`==`) or always true (`!=`): `item.priority == '1'` where `priority` is
    /// an `integer`
    DisjointComparison = "E0208", Error;

    // ---- evaluation (E03xx) ----
    /// A value of the wrong type met at run time: `sum(array=["a"])`
    RuntimeType = "E0301", Error;
    /// Division or remainder by zero: `1 / 0`
    DivisionByZero = "E0302", Error;
    /// A result that is not a finite number: `1e308 * 10`
    NumberOverflow = "E0303", Error;
    /// `json_parse` of text that is not JSON: `json_parse("{")`
    InvalidJson = "E0304", Error;
    /// An argument value a function cannot take at run time: `sort(xs, direction=d)` with `d = "up"`
    RuntimeArgument = "E0305", Error;
    /// A template string held in a variable that does not compile
    DynamicTemplate = "E0306", Error;
    /// A host-registered function reported an error
    HostFunction = "E0307", Error;
    /// A file function with no file store configured: `read_file("a.txt")` in `tdsl eval` without `--files DIR`
    NoFileStore = "E0308", Error;

    // ---- limits (E04xx) ----
    /// The instruction budget (fuel) ran out: `count(range(1000000), condition_string=count(range(100), condition_string=true) > 0)`
    FuelExhausted = "E0401", Error;
    /// Values or calls nested deeper than the limit
    DepthLimit = "E0402", Error;
    /// A string longer than the limit
    StringLimit = "E0403", Error;
    /// A list longer than the limit: `range(1000000000)`
    ListLimit = "E0404", Error;
    /// A result larger than the output-size limit
    OutputLimit = "E0405", Error;
    /// The values built in one evaluation add up to more than the memory limit:
    /// `map(range(100), template=range(1000000))`
    MemoryLimit = "E0406", Error;
    /// The host cancelled the evaluation while it ran ([`crate::Interrupt::cancel`])
    Interrupted = "E0407", Error;
    /// The evaluation's deadline passed while it ran ([`crate::Interrupt::with_deadline`])
    EvalDeadline = "E0408", Error;
    /// The engine's [`crate::Limits`] are out of their ranges ([`crate::Limits::validate`]):
    /// `Limits { max_depth: 100_000, .. }`
    LimitOutOfRange = "E0409", Error;

    // ---- warnings (W01xx) ----
    /// `json_parse` of a value that is known not to be a string: `json_parse(42)`
    JsonParseNonString = "W0101", Warning;
    /// A field the declared type says cannot exist: `user.nmae` on `{name, email}`
    UnknownField = "W0102", Warning;
    /// A value that cannot be null compared with `null`, which is always false (`==`) or
    /// always true (`!=`): `name == null` where `name` is a `string`
    NullComparison = "W0103", Warning;

    // ---- .tool files (E05xx) ----
    /// A `.tool` file that is not strict JSON: `{"description": "x",}` or a `// comment`
    JsonSyntax = "E0501", Error;
    /// The same key twice in one JSON object: `{"description": "a", "description": "b"}`
    DuplicateKey = "E0502", Error;
    /// A key whose value has the wrong JSON type: `"required": "yes"`
    WrongJsonType = "E0503", Error;
    /// A required key is absent: an instruction without `"execution_id"`
    MissingKey = "E0504", Error;
    /// A key the format does not define: `"instuctions": [...]`
    UnknownKey = "E0505", Error;
    /// A tool with both `"system_event_endpoint"` and `"instructions"`
    PrimitiveAndComposite = "E0506", Error;
    /// A tool with neither `"system_event_endpoint"` nor `"instructions"`: `{"description": "x"}`
    NeitherPrimitiveNorComposite = "E0507", Error;
    /// A key that only a composite tool may have, on a primitive one: `"response_reference_map"` beside `"system_event_endpoint"`
    CompositeOnlyKey = "E0508", Error;
    /// A condition operator that does not exist: `"operator": "equal"`
    UnknownOperator = "E0509", Error;
    /// A comparison condition without `"value"`: `{"param": "REF:a.b", "operator": "equals"}`
    MissingConditionValue = "E0510", Error;
    /// A `"value"` on `exists` / `not_exists`: `{"param": "REF:a.b", "operator": "exists", "value": 1}`
    SuperfluousConditionValue = "E0511", Error;
    /// A condition group `logic` other than `AND`, `OR`, `NOT`: `"logic": "XOR"`
    UnknownLogic = "E0512", Error;
    /// A `NOT` group without exactly one condition: `{"logic": "NOT", "conditions": []}`
    NotConditionCount = "E0513", Error;
    /// A condition that mixes leaf and group keys, or has neither: `{"logic": "AND", "param": "REF:a.b"}`
    MalformedCondition = "E0514", Error;
    /// Two instructions with the same `execution_id`
    DuplicateExecutionId = "E0515", Error;
    /// An `execution_id` that names a built-in REF context: `"execution_id": "arguments"`
    ReservedExecutionId = "E0516", Error;
    /// An `execution_id` (or `child_argument_name`) that is not an identifier: `"execution_id": "step 1"`
    InvalidIdentifier = "E0517", Error;
    /// A `type_name` that is not a known type: `"type_name": "strng"`
    UnknownTypeName = "E0518", Error;
    /// Two declared arguments (or responses) with the same name
    DuplicateParam = "E0519", Error;
    /// A plain string where only a REF string is meaningful: `"iterate_over": "files"`
    ExpectedRef = "E0520", Error;
    /// A number outside the range its key accepts: `"max_retries": -1`, `"jitter": 2`
    NumberOutOfRange = "E0521", Error;
    /// A key that configures a call on a transform step (an instruction without
    /// `tool_definition_path`, which calls nothing): `"retry": {…}` on a step that only joins
    /// other steps' results
    NotOnTransformStep = "E0522", Error;
    /// A `tool_definition_path` with surrounding whitespace, control characters or
    /// look-alike spaces: `"/tools/fetch.tool\r\n"`, `" fetch"`, `"fetch\u00a0page"`
    ToolPathSpelling = "E0530", Error;
    /// A constraint that does not apply to the declared type: `"type_name": "integer", "pattern": "^a"`
    ConstraintNotForType = "E0540", Error;
    /// A constraint whose value is invalid: `"pattern": "(("`, `"min_length": -1`, `"enum": []`
    InvalidConstraint = "E0541", Error;
    /// A `default` that its own declaration refuses: `"enum": ["a"], "default": "b"`
    InvalidDefault = "E0542", Error;

    // ---- .tool warnings (W05xx) ----
    /// A string in a REF position that looks like a REF but is plain text: `" REF:scan.files"`, `"ref:scan.files"`
    LooksLikeRef = "W0501", Warning;
    /// A composite tool whose `instructions` list is empty: `"instructions": []`
    EmptyInstructions = "W0502", Warning;

    // ---- analysis (E06xx / W06xx) ----
    /// A `tool_definition_path` that names no file under the tool root (with `--root`): `"tool_definition_path": "/tools/nope.tool"`
    UnresolvedToolPath = "E0601", Error;
    /// A callee whose own file does not load (invalid JSON, schema errors): `"/tools/broken.tool"` holding `{"description": 1}`
    CalleeInvalid = "E0602", Error;
    /// A tool that reaches itself through its callees: `/tools/a.tool` calls `/tools/b.tool`, which calls `/tools/a.tool`
    ToolRecursion = "E0603", Error;
    /// A REF to an argument the composite does not declare: `"REF:arguments.folder"` with no argument `folder`
    UndeclaredArgument = "E0604", Error;
    /// Steps that depend on each other in a cycle: `a` uses `"REF:b.x"` and `b` uses `"REF:a.y"`
    DependencyCycle = "E0605", Error;
    /// A manual dependency on a step that does not exist: `"dependencies": ["fetch_dta"]`
    UnknownDependency = "E0606", Error;
    /// `iterate_over` whose value can never be a list: `"iterate_over": "REF:arguments.count"` with `count` an integer
    IterateOverNotList = "E0607", Error;
    /// `iterate_over` that refers to the step's own transformed arguments: `"iterate_over": "REF:arguments.chunks"` where `chunks` is a `transform_arguments` output
    IterateOverTransformed = "E0608", Error;
    /// A `response_reference_map` key that is not a declared response: `{"totl": "REF:sum.total"}` with response `total`
    UnknownResponse = "E0609", Error;
    /// A required response that nothing maps: response `summary` is `"required": true` and absent from `response_reference_map`
    UnmappedResponse = "E0610", Error;
    /// An argument the callee does not declare: `"arguments": {"folder": …}` for a callee that declares only `directory`
    UndeclaredCalleeArgument = "E0611", Error;
    /// A required argument of the callee that the step does not supply: the callee requires `directory` and the step passes nothing
    MissingCalleeArgument = "E0612", Error;
    /// An argument whose type the callee's declared `type_name` can never accept: `"count": "REF:arguments.name"` (a string) for an `integer`
    CalleeArgumentType = "E0613", Error;
    /// A mapped response whose type its declared `type_name` can never accept: `"count": "REF:scan.files"` (a list) for a `number`
    ResponseType = "E0614", Error;
    /// `read_files` with more than 5 literal paths: `read_files(file_paths=["a", "b", "c", "d", "e", "f"])`
    TooManyReadFiles = "E0615", Error;
    /// A condition whose operator cannot apply to its operands' types: `{"param": "REF:scan.files", "operator": "greater_than", "value": 3}`
    ConditionType = "E0616", Error;
    /// An `expected_key` that is already an execution id or another step's `expected_key`: `"expected_key": "scan"` beside a step `scan`
    DuplicateExpectedKey = "E0617", Error;
    /// An `output_path` that can never reach a value of the callee's declared response: `"output_path": ["files", "name"]` when `files` is a list
    OutputPathType = "E0618", Error;
    /// Composite callees nested deeper than a run allows (8 by default, `--max-nesting`): `main` calls `/tools/c1.tool`, which calls `/tools/c2.tool`, … down to `/tools/c9.tool`
    CompositesTooDeep = "E0619", Error;
    /// A literal argument or mapped response that breaks a declared constraint:
    /// `"direction": "up"` for an argument declared with `"enum": ["higher", "lower", "target"]`
    LiteralBreaksConstraint = "E0630", Error;
    /// A value of type `any` whose certain uses no JSON value satisfies (types from use):
    /// `REF:agg.summary` mapped over as a list and mapped to a required `object` response
    ConflictingUses = "E0650", Error;

    // ---- analysis warnings (W06xx) ----
    /// A transform variable that no transform reads: `"variables": {"unused": "REF:scan.files"}`
    UnusedVariable = "W0601", Warning;
    /// A transform that only passes a variable through unchanged: `"transforms": {"user_id": "user_id"}`
    PassThroughTransform = "W0602", Warning;
    /// A step whose result no REF reads while the tool maps its responses: `cleanup` in a tool whose `response_reference_map` names only `scan`
    UnusedStepResult = "W0603", Warning;
    /// A REF to a field the callee's declared responses do not have: `"REF:scan.fils"` when `/tools/scanner.tool` declares `files`
    UndeclaredResponseField = "W0604", Warning;
    /// A literal string in `variables` that looks like a call of an unknown function: `"now": "datetime_nwo()"`
    UnknownFunctionInVariable = "W0605", Warning;
    /// `REF:arguments.X` in a tool without an `arguments` key (the argument is `any`): `"REF:arguments.api_endpoint"` in a tool that declares nothing
    OpenArgument = "W0606", Warning;
    /// A step whose `max_retries` reaches the circuit breaker's failure threshold, so the last attempts can never run: `"retry": {"max_retries": 4}` with the default threshold 3
    RetriesPastBreaker = "W0607", Warning;
    /// A step whose conditions hold only after another step failed, while that step has no `continue_on_error`: `{"param": "REF:primary_task.status", "operator": "equals", "value": "failed"}`
    HandlerNeverRuns = "W0608", Warning;
    /// A conditional use of an `any` value that fails whenever it happens, given the value's
    /// certain uses: `REF:agg.summary` used as a string in a step with `conditions`, and as a
    /// list everywhere else
    ConditionalUseConflict = "W0650", Warning;

    // ---- files (E07xx) ----
    /// A path that would leave the file store's root: `read_file("../secret.txt")`,
    /// `read_file("/etc/passwd")`, or a symbolic link in the root that points outside it
    PathEscapesRoot = "E0701", Error;
    /// Path text the file store refuses: `read_file("a\u0000b")` (control characters),
    /// `read_file("a\\b.txt")` (backslashes), `read_file(".git/config")` (git's metadata)
    InvalidPath = "E0702", Error;
    /// No file or directory at a path: `read_file("nosuch.txt")`
    FileNotFound = "E0703", Error;
    /// A path that is not a regular file where one is needed: `read_file("reports")` on a directory
    NotAFile = "E0704", Error;
    /// A path that is not a directory where one is needed: `list_files("notes.txt")`
    NotADirectory = "E0705", Error;
    /// A file that is not UTF-8 text: `read_file("logo.png")`
    BinaryFile = "E0706", Error;
    /// A file larger than the file size limit: `read_file("huge.log")` with a 2 MiB file
    FileTooLarge = "E0707", Error;
    /// `read_files` given more than 5 paths at run time: `read_files(paths)` with six paths in `paths`
    TooManyFiles = "E0708", Error;
    /// A version id the file does not have: `read_file("notes.txt", version_id="v9")`
    UnknownVersion = "E0709", Error;
    /// A glob pattern that does not parse: `list_files(".", pattern="[a-")`
    InvalidGlob = "E0710", Error;
    /// A listing that visits more directory entries than the limit (10,000): `list_files(".", pattern="**/*")` over a huge tree
    ListingTooLarge = "E0711", Error;
    /// The file store failed for another reason (permission denied, `git` failing): `read_file("locked.txt")`
    FileStoreIo = "E0712", Error;

    // ---- execution (E08xx) ----
    /// An argument does not match what the tool declares, found at run time: a required
    /// argument that resolved to `null`, or a string where a number is declared
    ArgumentInvalid = "E0801", Error;
    /// A tool's response, or a composite's result, does not match its declared `responses`
    ResponseInvalid = "E0802", Error;
    /// A tool call failed: a permanent error, or a transient one after the last retry
    ToolFailed = "E0803", Error;
    /// An attempt outlived the step's `timeout_seconds`
    StepTimeout = "E0804", Error;
    /// The run's deadline passed
    RunDeadline = "E0805", Error;
    /// The tool's circuit breaker was open and refused the call
    CircuitOpen = "E0806", Error;
    /// A guard refused a tool path that no allowed pattern matches
    ToolNotAllowed = "E0807", Error;
    /// A guard refused a run that could execute more steps than allowed
    TooManySteps = "E0808", Error;
    /// A parallel step fans out to more children than allowed
    FanOutTooWide = "E0809", Error;
    /// Composite callees nest deeper than the executor allows
    CompositeTooDeep = "E0810", Error;
    /// A step's callee is not among the tools the workflow loaded (an internal invariant:
    /// [`crate::exec::Workflow`] loads every callee its plans name; a callee with no file
    /// reaches the runner, whose refusal is `E0803`)
    ToolUnavailable = "E0811", Error;
    /// `iterate_over` resolved to something other than a list at run time
    IterateOverNotListAtRun = "E0812", Error;
    /// The host cancelled the run (an MCP client's `notifications/cancelled`, a library
    /// caller's [`crate::exec::CancelToken`])
    RunCancelled = "E0813", Error;
    /// A number that configures execution, set by the host, is out of its range
    SettingOutOfRange = "E0814", Error;
    /// A run on Temporal reached a limit of Temporal's (a payload's size, the events of one
    /// workflow's history) before the call that would pass it
    EngineLimit = "E0815", Error;
    /// A run reached its limit of calls (`--max-calls-per-run`): the call that would pass it
    /// does not start, and the run stops
    TooManyCalls = "E0816", Error;
    /// A run's result is larger, as JSON, than its limit (`--max-result-bytes`): counted
    /// while serializing, which stops at the limit
    ResultTooLarge = "E0817", Error;
    /// An answer of `tdsl serve` larger than the bytes it holds for answers waiting to be
    /// sent (`--max-answer-bytes-held`): the call answers this error instead
    AnswerTooLarge = "E0818", Error;

    // ---- a tool against its endpoint (E09xx/W09xx: `tdsl check`, `--mcp-schemas`) ----
    /// The MCP server of an `mcp:` endpoint offers no tool of that name
    McpToolUnknown = "E0901", Error;
    /// A declaration the MCP server's schemas contradict: a required argument not declared
    /// (or declared optional), an argument or response type that does not match, a declared
    /// response the output schema does not have
    McpSchemaMismatch = "E0902", Error;
    /// The MCP server of an `mcp:` endpoint could not be started or asked for its tools
    McpServerUnavailable = "E0903", Error;
    /// A declared argument the MCP server's input schema does not list
    McpSchemaDrift = "W0901", Warning;
    /// An endpoint the command line's runner cannot run: an unknown scheme, a builtin that
    /// does not exist, a malformed `exec:` or `mcp:` (a warning: a library host's runner may
    /// know it)
    UnknownEndpoint = "W0902", Warning;
    /// `tdsl export`: a feature of a tool that the format cannot express (responses for
    /// OpenAI and Anthropic, a `file` type, `min_length`/`max_length`/`default` for OpenAI)
    ExportLossy = "W0903", Warning;

    // ---- plans written by language models (E13xx/W13xx: `crate::plans`, SPEC §13) ----
    /// A plan larger than the plan size limit (256 KiB by default): refused before it is parsed
    PlanTooLarge = "E1301", Error;
    /// A plan whose JSON nests deeper than the limit (64 levels by default): `[[[[…]]]]`
    PlanTooDeep = "E1302", Error;
    /// A plan that is not a JSON object: `[{"execution_id": "a"}]`, `"run search"`
    PlanNotObject = "E1303", Error;
    /// A plan that defines a primitive tool: `{"system_event_endpoint": "exec:rm -rf /"}`
    PlanDefinesPrimitive = "E1304", Error;
    /// A plan with more steps than the limit (64 by default)
    PlanTooManySteps = "E1305", Error;
    /// A plan step that calls a tool the plan cannot call because it does not exist:
    /// `"tool_definition_path": "web_search"` when the tools are `search` and `fetch`
    PlanUnknownTool = "E1306", Error;
    /// A plan step that calls a tool outside the allowed set: `"/tools/admin/drop.tool"`
    /// with `--allow '/tools/public/**'`
    PlanToolNotAllowed = "E1307", Error;
    /// A plan step whose tool path leaves the tool root: `"../../bin/sh"`
    PlanPathEscapes = "E1308", Error;
    /// A plan step that fans out over a literal list longer than the fan-out limit (1,000
    /// children by default)
    PlanFanOutTooWide = "E1309", Error;
    /// A file function in a plan when no file store is configured: `read_file(path)` without
    /// `--files DIR`
    PlanNoFiles = "E1310", Error;
    /// A placeholder of another plan format that names one of the plan's steps or its
    /// arguments: `"{{fetch.output}}"`, `"${fetch.text}"`, `"#E1"`, `"$1"`
    PlanPlaceholder = "E1311", Error;
    /// jq or JSONPath where tdsl expects a REF or an expression, or that names a step:
    /// `"$.search.results[*].url"`, `".items[] | .name"`
    PlanPathSyntax = "E1312", Error;
    /// A Python or JavaScript literal in an expression: `if(condition=True, …)`, `x == None`
    PlanLiteral = "E1313", Error;
    /// A REF, in a plan, to a field the callee's declared responses do not have (in a
    /// `.tool` file this is the warning `W0604`; a plan's author has the tool listing, and
    /// the field would be `null` at run time): `"REF:fetch.body"` when `fetch` declares `text`
    PlanUnknownField = "E1314", Error;
    /// A plan whose check did not end within the plan's deadline (`--plan-deadline`, 120 s
    /// by default): the check stops there, and the plan is neither checked nor run
    PlanCheckDeadline = "E1316", Error;
    /// Text that looks like a placeholder of another plan format but names nothing in the
    /// plan: `"Total: $5"`, `"{{name}}"` with no step `name`
    PlanPlaceholderText = "W1311", Warning;
    /// A string argument that looks like jq or JSONPath but names nothing in the plan:
    /// `"$.store.book[*].author"` as a literal query argument
    PlanPathText = "W1312", Warning;
    /// A whole JSON string that is a Python or JavaScript literal: `"flag": "True"`,
    /// `"limit": "None"`
    PlanLiteralString = "W1313", Warning;
    /// An expression the checker knows is always `null`, in a plan (the warning `W0102` in a
    /// `.tool` file): a field the callee's schema does not declare, `item.id` over elements
    /// `{order_id, …}`
    PlanAlwaysNull = "E1320", Error;
    /// A plan argument that is read but not declared: `"REF:arguments.city"` in a plan
    /// without `arguments` (the warning `W0606` in a `.tool` file)
    PlanUndeclaredArgument = "E1321", Error;
    /// A field of an object written inside an argument that the upstream tool's input schema
    /// does not declare there, which the tool would drop or refuse: `"query": {"state":
    /// "open"}` when the model's field is `status`
    PlanUnknownArgumentField = "E1322", Error;
    /// A string value that is sent as literal text though it reads as something computed:
    /// `"Rate is REF:fx.rate"`, `"upper(name)"`, `"f\"{x}\""`, `"{x}"`
    PlanLiteralText = "W1320", Warning;
    /// A value that may be null (`string | null`: an optional field, a step with
    /// `conditions`) passed to a required argument or mapped to a required response, where
    /// null fails the call (`E0801`) or the run (`E0802`): `"body": "REF:c.email"` with
    /// `email` optional and `body` required
    PlanMaybeNull = "W1330", Warning;
    /// A step with `continue_on_error` whose callee declares a `status` of its own: a failed
    /// call leaves `{"status": "failed", "error_message": …}` (SPEC §6.5), which a result
    /// whose `status` may be `"failed"` (a CI job's) cannot be told from by `status`:
    /// `"continue_on_error": true` on a fan-out over `ci/get_job`
    PlanFailureStatus = "W1331", Warning;
    // ---- skills (E14xx: `crate::plans::skills`, SPEC §16) ----
    /// `save_skill` when the skills folder holds as many skills as its limit (256 by default,
    /// `serve --max-skills`)
    SkillTooMany = "E1401", Error;
    /// A skill name that breaks the rule `[a-z][a-z0-9_]{0,63}`: `"../x"`, `"Report"`, `"wеekly"`
    /// (a Cyrillic `е`)
    SkillBadName = "E1402", Error;
    /// A skill name that is another callable tool's (served, upstream, `run_plan`…), or that
    /// differs only by case from a file of the skills folder
    SkillNameTaken = "E1403", Error;
    /// `save_skill` of an existing name without `replace: true`
    SkillExists = "E1404", Error;
    /// A skill that cannot be written (a read-only folder, a full disk): nothing was changed
    SkillWrite = "E1405", Error;
    /// `delete_skill` of a name that is not a skill
    SkillMissing = "E1406", Error;
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A labelled span inside a diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What to say there (may be empty).
    pub message: String,
}

/// How sure a [`Suggestion`] is, as rustc's `Applicability`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applicability {
    /// The replacement is what was meant: a tool may apply it without asking.
    MachineApplicable,
    /// The replacement is a guess (the nearest name): shown, applied when chosen.
    MaybeIncorrect,
}

/// A fix a diagnostic knows: the text at `span` replaced by `replacement` (exactly as it is
/// to be written there: a JSON key with its quotes, a name without them). What a help line
/// says in words ("did you mean `count`?"), for a tool (the language server's quick fix,
/// the plan layer) to read without parsing the words.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    /// What to replace.
    pub span: Span,
    /// The text to write there.
    pub replacement: String,
    /// How sure it is.
    pub applicability: Applicability,
}

/// A problem found in some source text.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// The stable code.
    pub code: Code,
    /// The one-line message.
    pub message: String,
    /// The primary span: what is wrong.
    pub span: Span,
    /// The text of the primary label.
    pub label: String,
    /// Secondary labels.
    pub secondary: Vec<Label>,
    /// How to fix it, when known.
    pub help: Option<String>,
    /// The fix it knows as an edit, when it knows one (the help says it in words). Boxed:
    /// a diagnostic is the error of many `Result`s, kept small.
    pub suggestion: Option<Box<Suggestion>>,
}

impl Diagnostic {
    /// This diagnostic with every text it echoes (message, label, help, secondary labels)
    /// escaped by [`escape_hidden`], keeping the characters of `keep`.
    pub(crate) fn escaped(mut self, keep: &[char]) -> Diagnostic {
        self.message = escape_hidden(&self.message, keep);
        self.label = escape_hidden(&self.label, keep);
        self.help = self.help.map(|h| escape_hidden(&h, keep));
        for l in &mut self.secondary {
            l.message = escape_hidden(&l.message, keep);
        }
        self
    }

    /// A diagnostic with a code, message and primary span.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            help: None,
            suggestion: None,
        }
    }

    /// Sets the suggestion: `span` replaced by `text`, `how` sure.
    pub fn with_suggestion(mut self, span: Span, text: impl Into<String>, how: Applicability) -> Diagnostic {
        self.suggestion = Some(Box::new(Suggestion { span, replacement: text.into(), applicability: how }));
        self
    }

    /// "did you mean `name`?" at the primary span: the help line and the suggestion that
    /// replaces the span (a name as written there, `replacement`) by the nearest name.
    pub(crate) fn with_did_you_mean(self, name: &str, replacement: impl Into<String>) -> Diagnostic {
        let span = self.span;
        self.with_help(format!("did you mean `{name}`?")).with_suggestion(
            span,
            replacement,
            Applicability::MaybeIncorrect,
        )
    }

    /// Sets the primary label's text.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// Adds a secondary label.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label { span, message: message.into() });
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// The severity, from the code.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity() == Severity::Error
    }

    /// Maps every span through `f` (used to move spans from a template string or a JSON
    /// string into the text around it).
    pub fn map_spans(mut self, f: &impl Fn(Span) -> Span) -> Diagnostic {
        self.span = f(self.span);
        for l in &mut self.secondary {
            l.span = f(l.span);
        }
        if let Some(x) = &mut self.suggestion {
            x.span = f(x.span);
        }
        self
    }

    /// This diagnostic with its source attached, ready for miette to render. On a long
    /// line (a plan a client sent on one line) it shows a window of the line around its
    /// labels ([`Window`]).
    pub fn with_source(&self, name: &str, source: &str) -> Report {
        let mut diagnostic = self.clone();
        let windows = Window::around(&mut diagnostic, source);
        Report { diagnostic, source: Windowed { name: name.to_string(), text: source.to_string(), windows } }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// A diagnostic together with the source it points into.
#[derive(Debug)]
pub struct Report {
    diagnostic: Diagnostic,
    source: Windowed,
}

/// A part of a long line a rendering shows: miette lays out every line it shows whole, so
/// the 50 diagnostics of a 256 KB plan sent on one line were each laid out over 256 KB
/// (0.6 s of a check in a release build, 5 s in a debug one), and the rendering, cut to its
/// first 4,000 characters for a client, showed the line's start rather than the place.
/// Labels close together share a window; labels far apart on the line each have their own,
/// shown as snippets of their own, so what is laid out never spans the distance between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    start: usize,
    end: usize,
}

impl Window {
    /// A line longer than this is shown as windows.
    const LONG_LINE: usize = 1_000;
    /// What a window shows on each side of its labels.
    const MARGIN: usize = 120;
    /// The longest a label is underlined in a window (longer ones are cut).
    const LABEL: usize = 200;

    /// The windows of `source` around `d`'s labels when they are on one line longer than
    /// [`Window::LONG_LINE`], in order, their spans cut to [`Window::LABEL`]: labels less
    /// than two margins apart share one; empty otherwise (the source shown as it is).
    fn around(d: &mut Diagnostic, source: &str) -> Vec<Window> {
        let spans =
            |d: &Diagnostic| std::iter::once(d.span).chain(d.secondary.iter().map(|l| l.span)).collect::<Vec<_>>();
        let (Some(first), Some(last)) =
            (spans(d).iter().map(|s| s.start as usize).min(), spans(d).iter().map(|s| s.end as usize).max())
        else {
            return Vec::new();
        };
        if last > source.len() || !source.is_char_boundary(first) {
            return Vec::new();
        }
        let line_start = source[..first].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[first..].find('\n').map_or(source.len(), |i| first + i);
        if last > line_end || line_end - line_start <= Window::LONG_LINE {
            return Vec::new();
        }
        let cut = |span: &mut Span| {
            let end = boundary(source, (span.start as usize).saturating_add(Window::LABEL), false);
            if (span.end as usize) > end {
                *span = Span::new(span.start as usize, end);
            }
        };
        cut(&mut d.span);
        d.secondary.iter_mut().for_each(|l| cut(&mut l.span));
        let mut spans = spans(d);
        spans.sort_by_key(|s| (s.start, s.end));
        let mut windows: Vec<Window> = Vec::new();
        for s in spans {
            let start = boundary(source, (s.start as usize).saturating_sub(Window::MARGIN).max(line_start), true);
            let end = boundary(source, (s.end as usize).saturating_add(Window::MARGIN).min(line_end), false);
            match windows.last_mut() {
                Some(w) if start <= w.end => w.end = w.end.max(end),
                _ => windows.push(Window { start, end }),
            }
        }
        windows
    }
}

/// The char boundary at or before (`down`) or after `at` in `text` (clamped to its length).
fn boundary(text: &str, at: usize, down: bool) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at = if down { at - 1 } else { at + 1 };
    }
    at
}

/// A report's named source, read through its [`Window`]s when it has them.
#[derive(Debug)]
struct Windowed {
    name: String,
    text: String,
    windows: Vec<Window>,
}

impl miette::SourceCode for Windowed {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let window = self.windows.iter().find(|w| w.start <= span.offset() && span.offset() <= w.end);
        // A span reaching past its window's end is two labels' (miette joins the labels of
        // one line into one span before reading it): refused, so that miette shows each
        // label in a snippet of its own, from its own window.
        if window.is_some_and(|w| span.offset() + span.len() > w.end) {
            return Err(miette::MietteError::OutOfBounds);
        }
        let full = <str as miette::SourceCode>::read_span(&self.text, span, before, after)?;
        let (from, data) = (full.span().offset(), full.data());
        // What of the contents lies in the window of the span: the line, line count and
        // column (in bytes, as miette counts them) of where it starts.
        let (start, end) = match window {
            Some(w) if w.start.max(from) < w.end.min(from + data.len()) => {
                (w.start.max(from) - from, w.end.min(from + data.len()) - from)
            }
            _ => (0, data.len()),
        };
        let head = &data[..start];
        let line = full.line() + head.iter().filter(|&&b| b == b'\n').count();
        let column = match head.iter().rposition(|&b| b == b'\n') {
            Some(i) => head.len() - i - 1,
            None => full.column() + head.len(),
        };
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            &data[start..end],
            miette::SourceSpan::new((from + start).into(), end - start),
            line,
            column,
            full.line_count(),
        )))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.diagnostic.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity() {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.diagnostic.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let d = &self.diagnostic;
        let primary =
            miette::LabeledSpan::new_primary_with_span((!d.label.is_empty()).then(|| d.label.clone()), d.span);
        let rest = d
            .secondary
            .iter()
            .map(|l| miette::LabeledSpan::new_with_span((!l.message.is_empty()).then(|| l.message.clone()), l.span));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Renders diagnostics as miette does on a terminal, without colour (for tests, logs and
/// non-terminal output).
pub fn render_plain(diags: &[Diagnostic], name: &str, source: &str) -> String {
    render(diags, name, source, false)
}

/// Renders diagnostics as miette does, coloured or not. What a diagnostic echoes from its
/// input (a step id, a tool path, a snippet of the source) cannot drive a terminal: control
/// and bidirectional characters in its texts are written escaped ([`escape_hidden`]; line
/// breaks and tabs kept), and in the source snippet replaced byte for byte by `?`, so that
/// spans stay where they are.
pub(crate) fn render(diags: &[Diagnostic], name: &str, source: &str, color: bool) -> String {
    let theme = if color { miette::GraphicalTheme::unicode() } else { miette::GraphicalTheme::unicode_nocolor() };
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    let shown = printable_source(source);
    let mut out = String::new();
    for d in diags {
        let d = d.clone().escaped(&['\n', '\t']);
        let report = d.with_source(name, &shown);
        let _ = handler.render_report(&mut out, &report);
    }
    out
}

/// Whether `c` must not reach a terminal, a client or a model as it is: a control character
/// (a terminal's escape sequences start with one), a bidirectional control (it reorders
/// what is shown) or an invisible one (a zero-width space, a byte-order mark).
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// The most characters of a value a message or a help quotes: past it, [`quoted`] shows
/// the start and the length (a plan's long value is not echoed whole, let alone three times;
/// outside round 11, finding 10).
pub(crate) const MAX_QUOTED_CHARS: usize = 80;

/// `text` between single quotes for a message (`'bug'`), cut past [`MAX_QUOTED_CHARS`]:
/// `'abc…' (6,000 characters)`. Shown, not meant to be pasted: text to paste is whole.
pub(crate) fn quoted(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((at, _)) => format!("'{}…' ({} characters)", &text[..at], thousands(text.chars().count())),
        None => format!("'{text}'"),
    }
}

/// `n` with a comma every three digits (`6,000`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` with the characters of [`is_hidden`] but those in `keep` written as JSON writes
/// them (`\u001b`): seen, not obeyed.
pub(crate) fn escape_hidden(text: &str, keep: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) && !keep.contains(&c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `source` for rendering: every hidden character but line ends and tabs replaced, byte
/// for byte, by `?` (spans stay where they are).
pub(crate) fn printable_source(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.chars().any(|c| is_hidden(c) && !matches!(c, '\n' | '\t')) {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push(c),
            '\n' | '\t' => out.push(c),
            c if is_hidden(c) => out.extend(std::iter::repeat_n('?', c.len_utf8())),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

pub(crate) use crate::suggest::did_you_mean;

#[cfg(test)]
mod tests {
    use super::*;

    /// A diagnostic far into a long line (a plan sent on one line) is shown in a window of
    /// the line around its labels, at its true line and column, its long label cut; short
    /// lines are shown whole.
    #[test]
    fn a_long_line_is_shown_around_the_labels() {
        let mut source = format!("{{\"pad\": \"{}\", ", "p".repeat(5_000));
        let at = source.len();
        source.push_str(&format!("\"bad\": \"{}\"}}", "é".repeat(1_000)));
        let d = Diagnostic::new(Code::UnknownName, Span::new(at, source.len()), "unknown key").with_label("here");
        let shown = render_plain(std::slice::from_ref(&d), "plan.json", &source);
        assert!(shown.contains(&format!("[plan.json:1:{}]", at + 1)), "{shown}");
        assert!(shown.contains("here") && shown.contains("\"bad\""), "{shown}");
        assert!(!shown.contains("{\"pad\""), "the line's start is not shown: {shown}");
        assert!(shown.len() < 2_000, "{} bytes: {shown}", shown.len());
        // A secondary label near the first widens its window to it.
        let near = d.clone().with_secondary(Span::new(at - 60, at - 50), "and here");
        let shown = render_plain(std::slice::from_ref(&near), "plan.json", &source);
        assert!(shown.contains("and here") && shown.contains("here"), "{shown}");
        assert_eq!(shown.matches("[plan.json:1:").count(), 1, "one snippet: {shown}");
        // One at the line's start, 5,000 bytes away, is shown in a window of its own: what
        // is laid out does not span the distance between them.
        let both = d.clone().with_secondary(Span::new(2, 5), "and here");
        let shown = render_plain(std::slice::from_ref(&both), "plan.json", &source);
        assert!(shown.contains("{\"pad\"") && shown.contains("and here") && shown.contains("here"), "{shown}");
        assert!(shown.contains("[plan.json:1:3]") && shown.contains(&format!("[plan.json:1:{}]", at + 1)), "{shown}");
        assert!(shown.len() < 3_000, "{} bytes: {shown}", shown.len());
        // Lines of ordinary length: shown whole, as miette shows them.
        let short = "{\n  \"a\": 1,\n  \"bad\": 2\n}";
        let d = Diagnostic::new(Code::UnknownName, Span::new(16, 21), "unknown key").with_label("here");
        let shown = render_plain(std::slice::from_ref(&d), "plan.json", short);
        assert!(shown.contains("[plan.json:3:5]") && shown.contains("  \"a\": 1,"), "{shown}");
    }

    #[test]
    fn codes_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
        }
    }
}
