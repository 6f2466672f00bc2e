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
//! The stages, one module each, data flowing one way: [`syntax`] (source → AST) →
//! [`types`] (AST → typed AST) → [`compile`] (typed AST → bytecode) → [`vm`] (bytecode →
//! [`Value`]). [`reference`] evaluates the typed AST directly and exists to test the VM
//! against. See `docs/architecture.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// pest_derive without its `std` feature names `alloc` (see Cargo.toml: the parser runs
// without pest's stack probe, which our own nesting limit makes redundant).
extern crate alloc;

pub mod analysis;
// The `tdsl` binary's subcommands; public only so that src/main.rs can reach them.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub mod compile;
#[cfg(feature = "compose")]
pub mod compose;
pub mod diagnostic;
mod engine;
#[cfg(feature = "engine")]
pub mod exec;
pub mod export;
pub mod files;
pub mod functions;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "history")]
pub mod history;
pub mod input;
#[cfg(feature = "lsp")]
pub mod lsp;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod ops;
pub mod plans;
pub mod ranges;
pub mod reference;
#[cfg(feature = "engine")]
pub mod report;
pub mod runtime;
pub mod span;
pub mod syntax;
mod template;
#[cfg(feature = "temporal")]
pub mod temporal;
pub mod tool;
pub mod types;
pub mod value;
pub mod vm;

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

pub use analysis::{Analyzer, CheckedTool, Plan, ToolRoot};
pub use diagnostic::{Code, Diagnostic, Severity};
pub use engine::{Analysis, Engine, Program, References};
pub use runtime::{Clock, ErrorDetails, EvalError, FixedClock, Interrupt, InterruptReason, Limits, SystemClock};
pub use types::{RefUse, Scope, Type};
pub use value::Value;
