//! tdsl
#![forbid(unsafe_code)]
pub mod diagnostic;
pub mod span;
pub mod syntax;
pub mod tool;
pub mod value;
