//! An upstream MCP server's tool as a primitive tool the analysis can check a plan against.
//!
//! A plan calls `SERVER/TOOL`; the tool is known only by what the server's `tools/list`
//! says: its input JSON Schema and, when it has one, its output schema. Each becomes a
//! declaration (`type_name` as `tdsl check --mcp-schemas` reads schemas,
//! [`crate::export::compare`]), and the tool a `.tool` text whose endpoint is
//! `upstream:SERVER/TOOL` — a scheme no runner of tdsl's knows, so only a host that routes
//! upstream calls ([`upstream_target`]) can run it.

use serde_json::{json, Value as Json};

use crate::export::compare::type_name_of;

/// A tool of an upstream MCP server, as its `tools/list` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamTool {
    /// The server's name (`--upstream NAME=…`): a plan calls the tool as `SERVER/TOOL`.
    pub server: String,
    /// The tool's name on that server.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its `inputSchema` (a JSON Schema of an object).
    pub input_schema: Json,
    /// Its `outputSchema`, when it has one: without one, its results are not checked
    /// statically (any field may be read).
    pub output_schema: Option<Json>,
}

/// The endpoint scheme of an upstream tool's synthetic definition.
pub const UPSTREAM_SCHEME: &str = "upstream:";

impl UpstreamTool {
    /// How a plan names it: `SERVER/TOOL`.
    pub fn plan_name(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    /// The `.tool` text that stands for it in the analysis: a primitive tool with the
    /// schemas' properties as declarations and the endpoint `upstream:SERVER/TOOL`.
    pub fn tool_source(&self) -> String {
        let mut tool = serde_json::Map::new();
        tool.insert(
            "description".into(),
            Json::String(self.description.clone().unwrap_or_else(|| format!("`{}` of {}", self.name, self.server))),
        );
        if let Some(args) = declarations(&self.input_schema) {
            tool.insert("arguments".into(), Json::Array(args));
        }
        if let Some(responses) = self.output_schema.as_ref().and_then(declarations) {
            tool.insert("responses".into(), Json::Array(responses));
        }
        tool.insert("system_event_endpoint".into(), Json::String(format!("{UPSTREAM_SCHEME}{}", self.plan_name())));
        serde_json::to_string_pretty(&Json::Object(tool)).unwrap_or_default()
    }
}

/// The declarations of an object schema's properties (`None` when it lists none: then
/// anything is accepted).
fn declarations(schema: &Json) -> Option<Vec<Json>> {
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Json::as_array)
        .map_or(Vec::new(), |r| r.iter().filter_map(Json::as_str).collect());
    Some(
        properties
            .iter()
            .map(|(name, prop)| {
                let mut d = json!({
                    "name": name,
                    "type_name": type_name_of(prop),
                    "required": required.contains(&name.as_str()),
                });
                if let Some(text) = prop.get("description").and_then(Json::as_str) {
                    d["description"] = Json::String(text.to_string());
                }
                d
            })
            .collect(),
    )
}

/// The server and tool an upstream tool's definition calls (`upstream:SERVER/TOOL`), for a
/// host runner that routes those calls: `None` for any other endpoint.
pub fn upstream_target(def: &crate::tool::ToolDef) -> Option<(&str, &str)> {
    let crate::tool::ToolKind::Primitive { system_event_endpoint } = &def.kind else { return None };
    system_event_endpoint.node.strip_prefix(UPSTREAM_SCHEME)?.split_once('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_become_declarations() {
        let t = UpstreamTool {
            server: "web".into(),
            name: "fetch".into(),
            description: None,
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}, "max": {"type": "integer"}}, "required": ["url"]}),
            output_schema: Some(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
        };
        let (def, diags) = crate::tool::load(&t.tool_source());
        assert!(diags.is_empty(), "{diags:?}");
        let def = def.expect("a tool");
        assert_eq!(def.arguments.len(), 2);
        assert!(def.arguments[0].is_required());
        assert_eq!(def.responses[0].name.node, "text");
        assert_eq!(upstream_target(&def), Some(("web", "fetch")));
    }
}
