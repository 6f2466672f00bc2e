//! A primitive tool's declaration against the schemas its MCP server gives
//! (`tdsl check --mcp-schemas`): the other direction of [`super::schema`].
//!
//! The server's `inputSchema` is what the tool accepts and its `outputSchema` (when it has
//! one) what it returns. Errors are what would fail at run time:
//!
//! - `E0901`: the server offers no tool of that name;
//! - `E0902`: an argument the server requires that the file does not declare as required,
//!   an argument type the server does not accept, a declared response the output schema
//!   does not have, or a response type the declaration cannot accept.
//!
//! `W0901` is drift that does not fail by itself: a declared argument the server's schema
//! does not list. The server's schemas are read whole first ([`super::resolve`]: local
//! `$ref`s followed, `anyOf` with `null` as a nullable type); a schema without a `type` (a
//! union of several types) matches anything.

use serde_json::Value as Json;

use super::resolve::{type_name_of, types};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::Span;
use crate::tool::{Param, ToolDef, TypeName};

/// The diagnostics of comparing `def` (read from `source`), whose endpoint names the tool
/// `tool`, with the tools the server lists (`tools/list` entries).
pub(crate) fn compare_with_server(
    def: &ToolDef,
    source: &str,
    endpoint: (&str, Span),
    tools: &[Json],
) -> Vec<Diagnostic> {
    let (tool, endpoint_span) = endpoint;
    let Some(server) = tools.iter().find(|t| t.get("name").and_then(Json::as_str) == Some(tool)) else {
        let names: Vec<&str> = tools.iter().filter_map(|t| t.get("name").and_then(Json::as_str)).collect();
        let mut d = Diagnostic::new(
            Code::McpToolUnknown,
            tool_name_span(source, endpoint_span, tool),
            format!("the MCP server offers no tool `{tool}`"),
        );
        d = match did_you_mean(tool, names.iter().copied()) {
            Some(s) => d.with_label(format!("did you mean `{s}`?")),
            None => d.with_label("not in the server's `tools/list`"),
        };
        let list = if names.is_empty() {
            "it offers no tools".to_string()
        } else {
            format!("it offers {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))
        };
        return vec![d.with_help(list)];
    };
    let mut out = Vec::new();
    // `$ref`s and `anyOf`-with-null read as the SDKs write them (`super::resolve`).
    let resolved = |key: &str| server.get(key).filter(|s| s.is_object()).map(super::resolve::resolve_schema);
    let input = ObjectSchema::of(resolved("inputSchema").as_ref());
    for (name, schema) in &input.properties {
        let declared = def.arguments.iter().find(|p| p.name.node == *name);
        let server_requires = input.required.iter().any(|r| r == name);
        match declared {
            None if server_requires => out.push(
                Diagnostic::new(
                    Code::McpSchemaMismatch,
                    arguments_span(def),
                    format!("the MCP tool `{tool}` requires the argument `{name}`, which this file does not declare"),
                )
                .with_label("declared arguments")
                .with_help(format!(
                    "declare it: {{\"name\": \"{name}\", \"type_name\": \"{}\", \"required\": true}}",
                    type_name_of(schema)
                )),
            ),
            None => {}
            Some(p) => {
                if server_requires && !p.is_required() {
                    out.push(
                        Diagnostic::new(
                            Code::McpSchemaMismatch,
                            p.required.as_ref().map_or(p.span, |r| r.span),
                            format!("the MCP tool `{tool}` requires the argument `{name}`, declared optional here"),
                        )
                        .with_label("calls without it would fail")
                        .with_help("add `\"required\": true`"),
                    );
                }
                let sent = p.type_or_any();
                if !accepts(schema, &sent) {
                    out.push(type_mismatch(tool, "argument", p, schema));
                }
            }
        }
    }
    for p in &def.arguments {
        if !input.properties.iter().any(|(n, _)| *n == p.name.node) && !input.open {
            out.push(
                Diagnostic::new(
                    Code::McpSchemaDrift,
                    p.name.span,
                    format!("the MCP tool `{tool}` does not list the argument `{}`", p.name.node),
                )
                .with_label("not in the server's input schema")
                .with_help(
                    match did_you_mean(&p.name.node, input.properties.iter().map(|(n, _)| n.as_str())) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => "the server may ignore or refuse it".to_string(),
                    },
                ),
            );
        }
    }
    if server.get("outputSchema").is_some_and(Json::is_object) {
        let output = ObjectSchema::of(resolved("outputSchema").as_ref());
        for p in &def.responses {
            match output.properties.iter().find(|(n, _)| *n == p.name.node) {
                None if !output.open => out.push(
                    Diagnostic::new(
                        Code::McpSchemaMismatch,
                        p.name.span,
                        format!("the MCP tool `{tool}` does not return `{}`", p.name.node),
                    )
                    .with_label("not in the server's output schema")
                    .with_help(format!(
                        "it returns {}",
                        output.properties.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    )),
                ),
                Some((_, schema)) if !returns_into(schema, &p.type_or_any()) => {
                    out.push(type_mismatch(tool, "response", p, schema));
                }
                _ => {}
            }
        }
    }
    out
}

fn type_mismatch(tool: &str, what: &str, p: &Param, schema: &Json) -> Diagnostic {
    let declared = p.type_or_any();
    let span = p.type_name.as_ref().map_or(p.span, |t| t.span);
    Diagnostic::new(
        Code::McpSchemaMismatch,
        span,
        format!(
            "the MCP tool `{tool}` has the {what} `{}` as {}, declared `{}` here",
            p.name.node,
            describe(schema),
            declared
        ),
    )
    .with_label(format!("the server says {}", describe(schema)))
    .with_help(format!("declare `\"type_name\": \"{}\"`", type_name_of(schema)))
}

/// An object schema's properties (in order) and required names; `open` when it lists none
/// (any property goes).
struct ObjectSchema {
    properties: Vec<(String, Json)>,
    required: Vec<String>,
    open: bool,
}

impl ObjectSchema {
    fn of(schema: Option<&Json>) -> ObjectSchema {
        let props = schema.and_then(|s| s.get("properties")).and_then(Json::as_object);
        let properties: Vec<(String, Json)> =
            props.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
        let required = schema
            .and_then(|s| s.get("required"))
            .and_then(Json::as_array)
            .map(|r| r.iter().filter_map(Json::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        ObjectSchema { open: props.is_none(), properties, required }
    }
}

/// The JSON types a value of a declared type can have.
fn json_types(t: &TypeName) -> &'static [&'static str] {
    match t {
        TypeName::String => &["string"],
        TypeName::Number => &["number", "integer"],
        TypeName::Integer => &["integer"],
        TypeName::Boolean => &["boolean"],
        TypeName::Object => &["object"],
        TypeName::List(_) => &["array"],
        TypeName::File => &["string", "object"],
        TypeName::Any => &["string", "number", "integer", "boolean", "object", "array"],
    }
}

/// Whether every value the file can send as `sent` fits the server's schema. An integer
/// fits `number`; `any` and `file` are not judged (the file does not say enough).
fn accepts(schema: &Json, sent: &TypeName) -> bool {
    let Some(allowed) = types(schema) else { return true };
    if matches!(sent, TypeName::Any | TypeName::File) || allowed.is_empty() {
        return true;
    }
    let fits = |t: &str| allowed.contains(&t) || (t == "integer" && allowed.contains(&"number"));
    json_types(sent).iter().all(|t| fits(t)) && items_fit(schema, sent, accepts)
}

/// Whether every value the server can return under `schema` fits the declared type.
fn returns_into(schema: &Json, declared: &TypeName) -> bool {
    let Some(returned) = types(schema) else { return true };
    if returned.is_empty() {
        return true;
    }
    let ok = json_types(declared);
    returned.iter().all(|t| ok.contains(t)) && items_fit(schema, declared, returns_into)
}

/// For a list with an element type and an array schema with `items`: the elements too.
fn items_fit(schema: &Json, t: &TypeName, check: fn(&Json, &TypeName) -> bool) -> bool {
    match (t, schema.get("items")) {
        (TypeName::List(Some(item)), Some(items)) => check(items, item),
        _ => true,
    }
}

/// How a schema reads in a message: `integer`, `string or integer`, `an array of strings`.
fn describe(schema: &Json) -> String {
    match types(schema) {
        None => "any value".to_string(),
        Some(ts) if ts == ["array"] => match schema.get("items").and_then(types) {
            Some(items) if !items.is_empty() => format!("an array of {}", items.join(" or ")),
            _ => "an array".to_string(),
        },
        Some(ts) => ts.join(" or "),
    }
}

/// Where the tool name is written inside the endpoint string (the whole string when it
/// cannot be told, as with escapes).
fn tool_name_span(source: &str, endpoint: Span, tool: &str) -> Span {
    let (start, end) = (endpoint.start as usize, endpoint.end as usize);
    let inner_end = end.saturating_sub(1);
    match source.get(start..inner_end) {
        Some(text) if text.ends_with(tool) && !tool.is_empty() => {
            let len = u32::try_from(tool.len()).unwrap_or(0);
            Span { start: endpoint.end.saturating_sub(1).saturating_sub(len), end: endpoint.end.saturating_sub(1) }
        }
        _ => endpoint,
    }
}

/// The span of the `arguments` list, or of the whole tool when it has none.
fn arguments_span(def: &ToolDef) -> Span {
    match (def.arguments.first(), def.arguments.last()) {
        (Some(a), Some(b)) => Span { start: a.span.start, end: b.span.end },
        _ => def.span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The server's schemas are read whole: a `$ref` into `$defs` and an `anyOf` with `null`
    /// have a type, so a declaration of another type is found (they matched anything before).
    #[test]
    fn references_and_optional_types_are_compared() {
        let source = r#"{"description": "x", "arguments": [{"name": "n", "type_name": "string", "required": true}, {"name": "s", "type_name": "integer"}], "system_event_endpoint": "mcp:srv#t"}"#;
        let (def, diags) = crate::tool::load(source);
        assert!(diags.is_empty(), "{diags:?}");
        let def = def.expect("a tool");
        let tools = [json!({"name": "t", "inputSchema": {
            "$defs": {"N": {"type": "integer"}},
            "type": "object",
            "properties": {"n": {"$ref": "#/$defs/N"}, "s": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
            "required": ["n"]}})];
        let found = compare_with_server(&def, source, ("t", Span::new(0, 0)), &tools);
        let messages: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(found.len(), 2, "{messages:?}");
        assert!(messages[0].contains("the argument `n` as integer"), "{messages:?}");
        assert!(messages[1].contains("the argument `s` as string"), "{messages:?}");
    }
}
