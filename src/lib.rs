//! tdsl
#![forbid(unsafe_code)]
pub mod diagnostic;
pub mod functions;
pub mod runtime;
pub mod span;
pub mod syntax;
pub mod types;
pub mod value;
