//! Tools for language models: JSON Schemas from `.tool` definitions ([`schema`]), tool
//! names derived from tool paths ([`names`]), and each provider's native tool format
//! ([`Format`]): OpenAI function tools, Anthropic tools, MCP `Tool` objects.
//!
//! ```
//! use tdsl::testing::export::{export_names, export_tool, Format};
//!
//! let (def, _) = tdsl::testing::tool::load(r#"{
//!   "description": "Greets someone",
//!   "arguments": [{"name": "who", "type_name": "string", "required": true}],
//!   "system_event_endpoint": "builtin:echo"
//! }"#);
//! let names = export_names(&["/tools/greet.tool", "/a/echo.tool", "/b/echo.tool"]);
//! assert_eq!(names, ["greet", "a__echo", "b__echo"]);
//! let tool = export_tool(Format::Anthropic, &names[0], &def.unwrap());
//! assert_eq!(tool["input_schema"]["required"][0], "who");
//! ```
//!
//! `docs/mcp.md` documents the mapping and the naming rule.

// `tdsl check --mcp-schemas`.
#[cfg(feature = "cli")]
pub(crate) mod compare;
pub(crate) mod lossy;
pub(crate) mod names;
pub(crate) mod resolve;
pub(crate) mod schema;

use serde_json::{json, Map, Value as Json};

#[cfg(feature = "cli")]
pub(crate) use compare::compare_with_server;
pub use lossy::lossy_features;
#[cfg(feature = "cli")]
pub use lossy::ExportWarning;
pub use names::{export_names, tool_name};
pub use schema::validate_arguments;
pub(crate) use schema::{input_schema, output_schema};

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

/// The input schema as `format` can express it: without the keywords it does not
/// support ([`lossy`]).
fn input_schema_for(format: Format, def: &ToolDef) -> Json {
    let mut schema = input_schema(def);
    if let Some(Json::Object(props)) = schema.get_mut("properties") {
        for p in &def.arguments {
            if let Some(Json::Object(prop)) = props.get_mut(&p.name.node) {
                lossy::strip(format, &p.type_or_any(), prop);
            }
        }
    }
    schema
}

/// The tool in `format` with what the format lost ([`lossy_features`]).
#[cfg(feature = "cli")]
pub(crate) fn export_tool_with_warnings(format: Format, name: &str, def: &ToolDef) -> (Json, Vec<ExportWarning>) {
    (export_tool(format, name, def), lossy_features(format, name, def))
}

/// One tool in a provider's format, named `name` (what the format cannot express is left
/// out: [`export_tool_with_warnings`] says what).
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
            function.insert("parameters".into(), input_schema_for(format, def));
            out.insert("type".into(), json!("function"));
            out.insert("function".into(), Json::Object(function));
        }
        Format::Anthropic => {
            out.insert("name".into(), json!(name));
            if let Some(d) = description {
                out.insert("description".into(), json!(d));
            }
            out.insert("input_schema".into(), input_schema_for(format, def));
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
