//! Running composites (SPEC §6, §7): the runner interface hosts implement, the scheduler,
//! the data flow between steps, validation at the boundary, retries, circuit breakers,
//! timeouts, the execution trace and its replay.
//!
//! ```
//! use std::sync::Arc;
//! use tdsl::{Executor, ManualTime, RunStatus, ToolCall, ToolError, Workflow};
//! use tdsl::Value;
//!
//! // A tool root with one composite and one primitive tool.
//! let root = std::env::temp_dir().join(format!("tdsl-doc-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("tools")).unwrap();
//! std::fs::write(root.join("tools/upper.tool"), r#"{
//!   "arguments": [{"name": "text", "type_name": "string", "required": true}],
//!   "responses": [{"name": "text", "type_name": "string", "required": true}],
//!   "system_event_endpoint": "exec:./upper"
//! }"#).unwrap();
//! std::fs::write(root.join("main.tool"), r#"{
//!   "arguments": [{"name": "names", "type_name": "list<string>", "required": true}],
//!   "instructions": [
//!     {"execution_id": "shout", "tool_definition_path": "/tools/upper.tool",
//!      "parallel_execution": {"iterate_over": "REF:arguments.names", "child_argument_name": "text"},
//!      "transform_responses": {"transforms": {
//!        "greeting": "join(array=map(array=REF:response, template=\"item.text\"), separator=\" and \")"
//!      }}}
//!   ],
//!   "responses": [{"name": "greeting", "type_name": "string", "required": true}],
//!   "response_reference_map": {"greeting": "REF:shout.greeting"}
//! }"#).unwrap();
//!
//! let workflow = Workflow::load(&root, &root.join("main.tool")).unwrap();
//! // The runner: a closure from the call to a JSON value (or a transient/permanent error).
//! let runner = |call: &ToolCall<'_>| -> Result<Value, ToolError> {
//!     let text = call.arguments.get_direct("text").and_then(Value::as_str).unwrap_or_default();
//!     Ok(Value::object_from([("text", Value::str(&text.to_uppercase()))]))
//! };
//! let executor = Executor::new(runner).with_time(Arc::new(ManualTime::new(0)));
//! let args: Value = serde_json::from_str(r#"{"names": ["ada", "bob"]}"#).unwrap();
//! let run = executor.run(&workflow, args).unwrap();
//! assert_eq!(run.status, RunStatus::Success);
//! assert_eq!(run.result.unwrap().to_string(), r#"{"greeting":"ADA and BOB"}"#);
//! assert_eq!(run.trace.steps[0].children.as_ref().unwrap().len(), 2);
//! ```
//!
//! The module consumes checked plans from [`crate::analysis`] (through [`Workflow`]); it
//! never parses or checks a `.tool` file itself, and nothing upstream knows it exists.
//! `docs/execution.md` has the semantics for users, the trace format and the mock format.

pub(crate) mod breaker;
// `clock` and `data` are crate-visible for the Temporal interpreter (feature `temporal`),
// which evaluates steps with the same data flow.
pub(crate) mod clock;
pub(crate) mod data;
mod executor;
pub(crate) mod file_reads;
pub(crate) mod guard;
pub mod replay;
pub(crate) mod retry;
mod runner;
mod scheduler;
pub(crate) mod step;
mod threads;
pub(crate) mod time;
pub(crate) mod trace;
mod workflow;

pub(crate) use clock::ExecClock;
pub use executor::{Event, Executor, Observer, Options, Run};
pub use guard::{GuardError, Guards};
pub use replay::{replay, Divergence, Replay};
pub use runner::{CancelToken, ErrorKind, NonBlocking, Runner, ToolCall, ToolError};
pub use time::{ManualTime, Random, SeededRandom, Signal, SystemTime, Time};
pub use trace::{Attempt, ChildTrace, Outcome, RunError, RunLimits, RunStatus, StepStatus, StepTrace, Trace};
pub use workflow::{engine, LoadError, Tool, Workflow};
