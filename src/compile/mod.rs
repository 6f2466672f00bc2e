//! Typed AST → bytecode: the instruction set, chunks with a span per instruction,
//! constant folding, the compiler and the disassembler.
//!
//! Templates are compiled once, into chunks of their own that the call site refers to (a
//! template with a fast form on its first use: `TemplateChunk`); nothing is parsed
//! or compiled per element. This module never evaluates user data: it
//! only folds constants.

mod chunk;
mod compiler;
mod disasm;
mod fold;
mod op;

pub use chunk::{fast_in, CallInfo, CallParam, Chunk, Fast, Origin, ParamSite, Pred, Root};
pub use compiler::compile;
pub(crate) use compiler::{compile_direct, Direct};
pub use disasm::{disassemble, fingerprint};
pub use fold::fold;
pub use op::Op;

#[cfg(test)]
mod tests;
