//! # tdsl — a typed, compiled language for composing tools
//!
//! Composite tools wire steps together with `REF:step.field` references and transform
//! expressions (`map`, `filter`, `group_by`, `sort`, `sum`, `join`, `if`, `pipeline`, …).
//! tdsl parses an expression with a pest grammar into an AST with spans, type-checks it,
//! folds constants, compiles it to bytecode and runs it on a small stack VM.
//!
//! ```
//! use tdsl::{Engine, Scope, Value};
//!
//! let vars: Value = serde_json::from_str(r#"{
//!     "users": [
//!         {"name": "Ada", "score": 91, "active": true},
//!         {"name": "Bob", "score": 42, "active": false},
//!         {"name": "Cy",  "score": 77, "active": true}
//!     ]
//! }"#).unwrap();
//!
//! let engine = Engine::new();
//! // Compile once (names are checked against the variables' types)…
//! let program = engine
//!     .compile_in(
//!         r#"join(array=map(array=filter(array=users, condition_string="item.active"),
//!                           template="item.name"),
//!                 separator=", ")"#,
//!         &Scope::from_vars(&vars),
//!     )
//!     .unwrap();
//! // …evaluate many times.
//! assert_eq!(program.eval(&vars).unwrap(), Value::from("Ada, Cy"));
//!
//! // Problems are diagnostics with a stable code, a span and a suggestion.
//! let errors = engine.compile_in("sum(usres)", &Scope::from_vars(&vars)).unwrap_err();
//! assert_eq!(errors[0].code.as_str(), "E0101");
//! assert_eq!(errors[0].help.as_deref(), Some("did you mean `users`?"));
//! ```
//!
//! The `.tool` half: load a root, check a composite, look at its plan, run it with a
//! host-supplied tool (needs the feature `engine`, on by default).
//!
//! ```
//! # #[cfg(feature = "engine")] {
//! use tdsl::{Analyzer, Executor, RunStatus, ToolCall, ToolError, ToolRoot, Value, Workflow};
//!
//! let root = std::env::temp_dir().join(format!("tdsl-lib-doc-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("tools")).unwrap();
//! std::fs::write(root.join("tools/lookup.tool"), r#"{
//!   "arguments": [{"name": "city", "type_name": "string", "required": true}],
//!   "responses": [{"name": "celsius", "type_name": "number", "required": true}],
//!   "system_event_endpoint": "exec:./lookup"
//! }"#).unwrap();
//! let main = r#"{
//!   "arguments": [{"name": "cities", "type_name": "list<string>", "required": true}],
//!   "instructions": [
//!     {"execution_id": "temps", "tool_definition_path": "/tools/lookup.tool",
//!      "parallel_execution": {"iterate_over": "REF:arguments.cities", "child_argument_name": "city"},
//!      "transform_responses": {"transforms": {
//!        "warmest": "max(array=map(array=REF:response, template=\"item.celsius\"))"
//!      }}}
//!   ],
//!   "responses": [{"name": "warmest", "type_name": "number", "required": true}],
//!   "response_reference_map": {"warmest": "REF:temps.warmest"}
//! }"#;
//! std::fs::write(root.join("main.tool"), main).unwrap();
//!
//! // Check: every REF, expression and type, before anything runs.
//! let mut analyzer = Analyzer::new(ToolRoot::new(&root));
//! let checked = analyzer.check_source("main.tool", main);
//! assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
//! // The plan: the steps by level of the dependency graph derived from the REFs.
//! let plan = checked.plan.as_ref().unwrap();
//! assert_eq!(plan.levels(), [vec!["temps"]]);
//!
//! // Run: the host supplies the primitive tools (here a closure instead of `exec:`).
//! let workflow = Workflow::load(&root, &root.join("main.tool")).unwrap();
//! let runner = |call: &ToolCall<'_>| -> Result<Value, ToolError> {
//!     let celsius = match call.arguments.get_direct("city").and_then(Value::as_str) {
//!         Some("Lisbon") => 21_i64,
//!         _ => 9,
//!     };
//!     Ok(Value::object_from([("celsius", Value::from(celsius))]))
//! };
//! let cities = Value::from(vec![Value::from("Oslo"), Value::from("Lisbon")]);
//! let run = Executor::new(runner).run(&workflow, Value::object_from([("cities", cities)])).unwrap();
//! assert_eq!(run.status, RunStatus::Success);
//! assert_eq!(run.result.unwrap().to_string(), r#"{"warmest":21}"#);
//! std::fs::remove_dir_all(&root).ok();
//! # }
//! ```
//!
//! Everything above is re-exported at the crate's root: the expression engine ([`Engine`],
//! [`Program`], [`Value`], [`Limits`]), diagnostics ([`Diagnostic`], [`Code`]), checking
//! ([`Analyzer`], [`ToolRoot`], [`CheckedTool`], [`Plan`]), running ([`Executor`], the
//! [`Runner`] a host implements, [`Trace`] with every type it holds), plans written by models
//! ([`PlanDesk`]) and, with the feature `compose`, the Tool Composer ([`Composer`]). No public
//! field names a type that is not at the root. The stages behind them, data flowing one
//! way — source → AST → typed AST → bytecode → VM, and `.tool` → model → analysis → plan →
//! execution — are the crate's own modules; `docs/architecture.md` describes them.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// pest_derive without its `std` feature names `alloc` (see Cargo.toml: the parser runs
// without pest's stack probe, which our own nesting limit makes redundant).
extern crate alloc;

pub(crate) mod analysis;
// The `tdsl` binary's subcommands; public only so that src/main.rs can reach them.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub(crate) mod compile;
#[cfg(feature = "compose")]
pub(crate) mod compose;
pub(crate) mod diagnostic;
mod engine;
#[cfg(feature = "engine")]
pub(crate) mod exec;
pub(crate) mod export;
pub(crate) mod files;
pub(crate) mod functions;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "history")]
pub(crate) mod history;
// The engine's adapters: processes, HTTP, the MCP client (the engine itself does no I/O).
#[cfg(feature = "engine")]
pub(crate) mod host;
pub(crate) mod input;
#[cfg(feature = "lsp")]
pub(crate) mod lsp;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod ops;
pub(crate) mod plans;
pub(crate) mod processes;
pub mod ranges;
pub(crate) mod reference;
#[cfg(feature = "engine")]
pub(crate) mod report;
pub(crate) mod runtime;
// The secrets the process holds and their redaction: what talks to peers, what reads tool
// outputs and the file functions use it.
pub(crate) mod secrets;
pub(crate) mod span;
pub(crate) mod suggest;
pub(crate) mod syntax;
mod template;
#[cfg(feature = "temporal")]
pub(crate) mod temporal;
pub(crate) mod tool;
pub(crate) mod types;
pub(crate) mod value;
pub(crate) mod vm;

/// The examples of `docs/embedding.md`, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingDoc;

#[cfg(all(doctest, feature = "engine"))]
#[doc = include_str!("../docs/plans.md")]
pub struct PlansDoc;

#[cfg(all(doctest, feature = "compose"))]
#[doc = include_str!("../docs/compose.md")]
pub struct ComposeDoc;

// The public API. Everything an embedder needs is re-exported here; the modules behind it
// are the crate's own (`pub(crate)`), so their internals can change without breaking anyone.
// `docs/architecture.md` ("The public facade") lists what is here and why.

// Expressions: compile once, evaluate many times.
pub use engine::{Analysis, Engine, Program, References};
pub use runtime::{
    Clock, ErrorDetails, EvalError, FixedClock, Interrupt, InterruptReason, Limits, MemoryPool, RunBudget, SystemClock,
};
pub use types::{Fit, RefUse, Scope, StrEnum, Type};
pub use value::{Map, Value};
// Host functions: `Engine::register_function(signature, body)`.
pub use functions::{FunctionTable, HostFn, Param, ParamKind, ReturnRule, Signature};
pub use span::Span;

// Diagnostics: a stable code, a message, a span and a help.
pub use diagnostic::{render_plain, Applicability, Code, Diagnostic, Label, Severity, Suggestion};
pub use tool::LineIndex;

// `.tool` files: load a root, check, plan.
pub use analysis::{Analyzer, CheckedTool, Plan, ToolRoot, TypeAt, TypeAtKind};

// Where the file functions read and write (`--files DIR`, or the host's own store).
pub use files::{FileStore, LocalStore, MemoryStore};

// Running composites (the engine): an executor, the runner trait a host implements, the trace.
#[cfg(feature = "engine")]
pub use exec::{
    Attempt, CancelToken, ChildTrace, ErrorKind, Event, Executor, GuardError, Guards, LoadError, ManualTime,
    NonBlocking, Observer, Options, Outcome, Random, Run, RunError, RunStatus, Runner, SeededRandom, StepStatus,
    StepTrace, SystemTime, Time, ToolCall, ToolError, Trace, Workflow,
};
#[cfg(feature = "engine")]
pub use host::{HostRunner, ToolEnv};
// The policies `Options` (and `ComposeConfig`) carry, and a breaker's state in a trace.
#[cfg(feature = "engine")]
pub use exec::{breaker::BreakerPolicy, breaker::BreakerState, retry::RetryPolicy};
// What a trace records besides its steps: the limits in force, the file reads a replay answers.
#[cfg(feature = "engine")]
pub use exec::file_reads::{FileAnswer, FileOp, FileRead, VersionRecord};
#[cfg(feature = "engine")]
pub use exec::RunLimits;
// Replaying a trace: `replay(..)`, and the module's `engine`, `FileRecorder`.
#[cfg(feature = "engine")]
pub use exec::{replay, Divergence, Replay};

// The run history (SQLite): a store and the observer that records a run into it.
#[cfg(feature = "history")]
pub use history::{HistoryStore, Recorder, RunContext, RunFilter, SqliteStore};

// Plans written by models (SPEC section 13): check a plan given as JSON, run it.
pub use plans::{upstream_target, Location, PlanCheck, PlanDesk, PlanDiagnostic, PlanLimits, UpstreamTool};
#[cfg(feature = "engine")]
pub use plans::{PlanRefused, PlanRun, PlanStep, RunPlanOptions};

// The Tool Composer's four phases (SPEC section 14).
#[cfg(feature = "compose")]
pub use compose::{
    client_for, ComposeConfig, ComposedResponse, Composer, CompositionResult, CompositionStatus, DecompositionResult,
    ExecutionPlan, ExecutionStep, Intent, Message, ModelClient, ModelError, ModelReply, ModelRequest, Phase,
    PhaseUsage, SubQuestion, ToolMapping, Usage,
};

/// The crate's internals that its own tests, benchmarks (`benches/`, `bench-plans/`) and
/// doctests reach, named one by one. Not part of the public API: anything here may change in
/// any release. Embedders use the items at the crate's root.
///
/// Each name is here because something outside `src/` uses it (tests/public_api.rs checks
/// that every one is used): a name no test needs stays the crate's own, so that rustc's
/// dead-code check sees the internals (a `*` here would make every `pub` item reachable).
#[doc(hidden)]
pub mod testing {
    #![allow(missing_docs)]
    pub mod analysis {
        pub use crate::analysis::{
            explain_types, Analyzer, CheckedTool, RefContext, Resolved, ToolRoot, TypeAtKind, ValuePlan,
        };
        use crate::analysis::{Plan, RefPlan, StepId, StepPlan};
        use std::sync::Arc;

        /// The plan's steps, in execution order (`Plan::steps`, the crate's own field).
        pub fn steps(plan: &Plan) -> &[StepPlan] {
            &plan.steps
        }

        /// The plan's levels, as positions in [`steps`].
        pub fn levels(plan: &Plan) -> &[Vec<StepId>] {
            &plan.levels
        }

        /// The step with this `execution_id`.
        pub fn step<'p>(plan: &'p Plan, execution_id: &str) -> Option<&'p StepPlan> {
            plan.step(execution_id)
        }

        /// The plan's `response_reference_map`, resolved.
        pub fn response_map(plan: &Plan) -> Option<&[(Arc<str>, RefPlan)]> {
            plan.response_map.as_deref()
        }
    }
    pub mod compile {
        pub use crate::compile::{compile, fold};
        pub use crate::engine::direct_agrees;
    }
    pub mod diagnostic {
        pub use crate::diagnostic::{render_plain, Code, Diagnostic};
    }
    pub mod suggest {
        pub use crate::suggest::{work_spent, SUGGESTION_BUDGET};
    }
    #[cfg(feature = "engine")]
    pub mod exec {
        pub use crate::exec::{
            engine, replay, Attempt, CancelToken, Event, Executor, GuardError, Guards, LoadError, ManualTime,
            NonBlocking, Observer, Options, Outcome, Run, RunStatus, Runner, SeededRandom, Signal, StepStatus,
            StepTrace, SystemTime, Time, ToolCall, ToolError, Trace, Workflow,
        };
        pub mod breaker {
            pub use crate::exec::breaker::{BreakerPolicy, BreakerState, DEFAULT_FAILURE_THRESHOLD};
        }
        pub mod retry {
            pub use crate::exec::retry::RetryPolicy;
        }
    }
    pub mod export {
        pub use crate::export::{export_names, export_tool, lossy_features, tool_name, validate_arguments, Format};
    }
    pub mod files {
        pub use crate::files::{Entry, FileError, FileStore, LocalStore, MemoryStore, StorePath, Version};
    }
    pub mod functions {
        pub use crate::functions::{Param, ReturnRule, Signature};
    }
    #[cfg(feature = "engine")]
    pub mod host {
        pub use crate::host::{HostRunner, Mock};
    }
    #[cfg(feature = "history")]
    pub mod history {
        pub use crate::history::{
            schema_version, HistoryStore, Invocation, NewRun, Recorder, RunContext, RunFilter, SqliteStore, MIGRATIONS,
            SCHEMA_VERSION,
        };
    }
    #[cfg(feature = "lsp")]
    pub mod lsp {
        pub use crate::lsp::serve;
        pub mod symbols {
            pub use crate::lsp::symbols::{occurrences, Resolver, Sym};
        }
    }
    #[cfg(feature = "mcp")]
    pub mod mcp {
        pub use crate::mcp::McpServer;
        pub mod plans {
            pub use crate::mcp::plans::{
                answer_text, PlanOptions, PlanServer, RUN_PLAN, RUN_PLAN_DESCRIPTION, TOOLS_URI,
            };
        }
        pub mod upstream {
            pub use crate::mcp::upstream::{UpstreamSpec, Upstreams};
        }
    }
    pub mod plans {
        pub use crate::plans::{
            upstream_target, Callable, PlanCheck, PlanDesk, PlanLimits, UpstreamTool, MAX_SUGGESTION_WORK, PLAN_TOOL,
        };
        #[cfg(feature = "engine")]
        pub use crate::plans::{PlanRefused, PlanRun, RunPlanOptions};
    }
    pub mod reference {
        pub use crate::reference::evaluate;
    }
    #[cfg(feature = "engine")]
    pub mod report {
        pub use crate::report::{html, is_composition};
    }
    pub mod span {
        pub use crate::span::Span;
    }
    pub mod syntax {
        pub use crate::syntax::{fast_path_agrees, parse, parse_ref, parse_with_limit, print};
    }
    #[cfg(feature = "temporal")]
    pub mod temporal {
        pub use crate::temporal::retry_delay;
        pub mod worker {
            pub use crate::temporal::worker::replay;
        }
    }
    pub mod tool {
        pub use crate::tool::{
            load, Condition, Constraints, DoneCheck, JsonKind, JsonStr, LineIndex, Logic, PathSegment, RefSite,
            ToolDef, TypeName,
        };
        pub mod json {
            pub use crate::tool::json::parse;
        }
        pub mod keys {
            pub use crate::tool::keys::{Level, NOT_ON_TRANSFORM_STEPS};
        }
    }
    pub mod types {
        pub use crate::types::check;
    }
    pub mod value {
        pub use crate::value::Value;
    }
}
