//! tdsl
#![forbid(unsafe_code)]
pub mod cli;
pub mod compile;
pub mod diagnostic;
mod engine;
pub mod functions;
pub mod ops;
pub mod reference;
pub mod runtime;
pub mod span;
pub mod syntax;
pub mod types;
pub mod value;
pub mod vm;

pub use diagnostic::{Code, Diagnostic, Severity};
pub use engine::{Analysis, Engine, Program, References};
pub use runtime::{Clock, EvalError, FixedClock, Limits, SystemClock};
pub use types::{Scope, Type};
pub use value::Value;
