//! `.tool` files: strict JSON with spans → the tool model, with every schema problem found
//! in one pass.
//!
//! This module owns the `.tool` format of SPEC §5: the JSON reader that keeps a span on
//! every key and value ([`json`]), the one table of the format's keys ([`keys`]), the
//! model types ([`model`]), the schema checks (`schema`), where REF strings are resolved
//! and how they map back into the file ([`refs`]), and line/column positions for
//! diagnostics ([`position`]). It never reads other files, never resolves a REF against
//! anything and never compiles an expression: those are analysis steps that start from
//! the model built here.
//!
//! ```
//! let source = r#"{
//!   "description": "Greets",
//!   "arguments": [{"name": "who", "type_name": "string", "required": true}],
//!   "instructions": [
//!     {"execution_id": "greet", "tool_definition_path": "/tools/echo.tool",
//!      "arguments": {"text": "REF:arguments.who"}}
//!   ],
//!   "response_reference_map": {"greeting": "REF:greet.text"}
//! }"#;
//! let (tool, diagnostics) = tdsl::testing::tool::load(source);
//! assert!(diagnostics.is_empty());
//! let tool = tool.unwrap();
//! let refs = tool.instructions()[0].refs();
//! assert_eq!(refs[0].0.dotted(), "arguments.who");
//! assert_eq!(&source[refs[0].1.range()], "REF:arguments.who");
//! ```

pub(crate) mod constraints;
mod globs;
pub(crate) mod json;
pub(crate) mod keys;
mod load;
pub(crate) mod mistakes;
pub(crate) mod model;
pub(crate) mod position;
pub(crate) mod refs;
mod type_name;
pub(crate) mod validate;

pub use constraints::Constraints;
pub use globs::tool_globs;
pub use json::{JsonKind, JsonNode, JsonStr};
// For the language server's renames and `tdsl schema`.
#[cfg(feature = "lsp")]
pub(crate) use load::RESERVED_IDS;
// For those, and the help of a REF naming a field that is no identifier.
pub(crate) use load::is_identifier;
pub(crate) use load::{tool_path_respelled, tool_path_spelling};
pub use model::*;
pub use position::LineIndex;
pub(crate) use refs::parse_ref_string;
pub use refs::{RefPlace, RefSite, TransformBlock};

use crate::diagnostic::Diagnostic;

/// Loads a `.tool` file from its text.
///
/// Returns the model whenever the text is a JSON object whose kind (primitive or composite)
/// can be told, together with every problem found, in source order. Parts that are broken
/// are reported and left out of the model (an instruction without an `execution_id`, a key
/// with the wrong JSON type), so when the diagnostics hold errors the model is partial:
/// later stages may run on it to report more, but must not execute it. Never panics.
pub fn load(source: &str) -> (Option<ToolDef>, Vec<Diagnostic>) {
    let (tool, _, diagnostics) = load_with_tree(source);
    (tool, diagnostics)
}

/// Like [`load`], and also the JSON tree the model was read from, for checks that must tell
/// an absent key from an empty one (a callee with no `arguments` key declares nothing about
/// its arguments; `"arguments": []` declares that it takes none).
pub(crate) fn load_with_tree(source: &str) -> (Option<ToolDef>, Option<JsonNode>, Vec<Diagnostic>) {
    let (root, mut diagnostics) = json::parse(source);
    let tool = root.as_ref().and_then(|root| load::tool(root, &mut diagnostics));
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
    (tool, root, diagnostics)
}
