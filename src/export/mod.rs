//! Tools for language models: JSON Schemas from `.tool` definitions ([`schema`]), tool
//! names derived from tool paths ([`names`]), and each provider's native tool format
//! ([`Format`]): OpenAI function tools, Anthropic tools, MCP `Tool` objects.
//!
//! ```
//! use tdsl::export::{export_tool, tool_name, Format};
//!
//! let (def, _) = tdsl::tool::load(r#"{
//!   "description": "Greets someone",
//!   "arguments": [{"name": "who", "type_name": "string", "required": true}],
//!   "system_event_endpoint": "builtin:echo"
//! }"#);
//! let name = tool_name("/tools/greet.tool");
//! assert_eq!(name, "tools__greet");
//! let tool = export_tool(Format::Anthropic, &name, &def.unwrap());
//! assert_eq!(tool["input_schema"]["required"][0], "who");
//! ```
//!
//! `docs/mcp.md` documents the mapping and the naming rule.

pub mod compare;
pub mod names;
pub mod schema;

use serde_json::{json, Map, Value as Json};

pub use compare::compare_with_server;
pub use names::{tool_name, MAX_NAME_LEN};
pub use schema::{input_schema, output_schema, type_schema, validate_arguments};

use crate::tool::ToolDef;

/// A provider's tool format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenAI function tools: `{"type": "function", "function": {name, description, parameters}}`.
    OpenAi,
    /// Anthropic tools: `{name, description, input_schema}`.
    Anthropic,
    /// MCP `Tool` objects: `{name, description, inputSchema, outputSchema}`.
    Mcp,
}

impl Format {
    /// Parses `openai`, `anthropic` or `mcp`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "openai" => Some(Format::OpenAi),
            "anthropic" => Some(Format::Anthropic),
            "mcp" => Some(Format::Mcp),
            _ => None,
        }
    }
}

/// One tool in a provider's format, named `name`.
pub fn export_tool(format: Format, name: &str, def: &ToolDef) -> Json {
    let description = def.description.as_ref().map(|d| d.node.clone());
    let mut out = Map::new();
    match format {
        Format::OpenAi => {
            let mut function = Map::new();
            function.insert("name".into(), json!(name));
            if let Some(d) = description {
                function.insert("description".into(), json!(d));
            }
            function.insert("parameters".into(), input_schema(def));
            out.insert("type".into(), json!("function"));
            out.insert("function".into(), Json::Object(function));
        }
        Format::Anthropic => {
            out.insert("name".into(), json!(name));
            if let Some(d) = description {
                out.insert("description".into(), json!(d));
            }
            out.insert("input_schema".into(), input_schema(def));
        }
        Format::Mcp => {
            out.insert("name".into(), json!(name));
            if let Some(d) = description {
                out.insert("description".into(), json!(d));
            }
            out.insert("inputSchema".into(), input_schema(def));
            out.insert("outputSchema".into(), output_schema(def));
        }
    }
    Json::Object(out)
}
