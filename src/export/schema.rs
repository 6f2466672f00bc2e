//! JSON Schemas from `.tool` definitions: `arguments` → the input schema, `responses` → the
//! output schema.
//!
//! | `type_name` | JSON Schema |
//! |---|---|
//! | `string`, `number`, `integer`, `boolean`, `object` | `{"type": …}` |
//! | `list` | `{"type": "array"}` |
//! | `list<T>` | `{"type": "array", "items": <T>}` |
//! | `file` | `{"oneOf": [{"type": "string"}, {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}]}` |
//! | `any`, or no `type_name` | `{}` |
//!
//! Constraints (SPEC §5 ext) follow the type: `enum`, `minimum`, `maximum` as they are,
//! `min_length`/`max_length` as `minLength`/`maxLength` on a string and
//! `minItems`/`maxItems` on a list, `pattern`, `default`, and `items` as the element's
//! schema ([`declaration_schema`]).
//!
//! Each parameter's `description` goes on its property; `required: true` parameters are
//! listed in `required`. Both schemas are objects (`{"type": "object", "properties": …}`).
//! A composite that declares no `responses` but has a `response_reference_map` gets one
//! property per key of the map, of any type; with neither, the output schema is any object.

use serde_json::{json, Map, Value as Json};

use crate::tool::{Constraints, Param, ToolDef, ToolKind, TypeName};

/// The JSON Schema of a declared type.
pub(crate) fn type_schema(t: &TypeName) -> Json {
    match t {
        TypeName::String => json!({"type": "string"}),
        TypeName::Number => json!({"type": "number"}),
        TypeName::Integer => json!({"type": "integer"}),
        TypeName::Boolean => json!({"type": "boolean"}),
        TypeName::Object => json!({"type": "object"}),
        TypeName::List(None) => json!({"type": "array"}),
        TypeName::List(Some(item)) => json!({"type": "array", "items": type_schema(item)}),
        TypeName::File => json!({"oneOf": [
            {"type": "string"},
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        ]}),
        TypeName::Any => json!({}),
    }
}

/// The schema of a declared type with its constraints: [`type_schema`], the element
/// declaration of `items` in place of the plain element type, then the constraint
/// keywords (`enum`, `minimum`, `maximum`, `minLength`/`minItems`,
/// `maxLength`/`maxItems`, `pattern`, `default`).
pub(crate) fn declaration_schema(t: &TypeName, constraints: &Constraints) -> Map<String, Json> {
    let mut schema = match type_schema(t) {
        Json::Object(m) => m,
        _ => Map::new(),
    };
    if let (TypeName::List(_), Some(item)) = (t, &constraints.items) {
        let mut items = Map::new();
        if let Some(d) = &item.description {
            items.insert("description".into(), json!(d));
        }
        items.append(&mut declaration_schema(&item.type_name, &item.constraints));
        schema.insert("items".into(), Json::Object(items));
    }
    for (k, v) in constraints.schema_keywords(t) {
        schema.insert(k.into(), v);
    }
    schema
}

/// The object schema of a list of declared parameters.
pub(crate) fn params_schema(params: &[Param]) -> Json {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params {
        let mut schema = declaration_schema(&p.type_or_any(), &p.constraints);
        if let Some(d) = &p.description {
            // The description first, so that it reads well.
            let mut with = Map::new();
            with.insert("description".into(), json!(d.node));
            with.append(&mut schema);
            schema = with;
        }
        properties.insert(p.name.node.clone(), Json::Object(schema));
        if p.is_required() {
            required.push(json!(p.name.node));
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Json::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Json::Array(required));
    }
    Json::Object(out)
}

/// The input schema: the tool's `arguments`.
pub(crate) fn input_schema(def: &ToolDef) -> Json {
    params_schema(&def.arguments)
}

/// The output schema: the tool's `responses` (see the module documentation for composites
/// that declare none).
pub(crate) fn output_schema(def: &ToolDef) -> Json {
    if !def.responses.is_empty() {
        return params_schema(&def.responses);
    }
    if let ToolKind::Composite { response_reference_map: Some(map), .. } = &def.kind {
        let properties: Map<String, Json> = map.entries.iter().map(|(k, _)| (k.node.clone(), json!({}))).collect();
        return json!({"type": "object", "properties": properties});
    }
    json!({"type": "object"})
}

/// Checks arguments against a tool's input schema: an object, every required argument
/// present, every given argument of its declared type. The first problem, in words.
/// An optional argument may also be `null` (the engine reads it as absent).
pub fn validate_arguments(def: &ToolDef, args: &Json) -> Result<(), String> {
    let Some(map) = args.as_object() else {
        return Err(format!("the arguments must be an object, not {}", kind(args)));
    };
    for p in &def.arguments {
        let name = p.name.node.as_str();
        match map.get(name) {
            None | Some(Json::Null) if p.is_required() => {
                return Err(format!("required argument `{name}` is missing"));
            }
            None | Some(Json::Null) => {}
            Some(v) => {
                let t = p.type_or_any();
                if !fits(v, &t) {
                    return Err(format!("argument `{name}` must be {t}, and it is {}", kind(v)));
                }
                if !p.constraints.is_empty() {
                    let value: crate::value::Value = serde_json::from_value(v.clone())
                        .map_err(|e| format!("argument `{name}` cannot be read: {e}"))?;
                    if let Some(why) = p.constraints.violation(&value) {
                        return Err(format!(
                            "argument `{name}` {why}, and it is {}",
                            crate::tool::validate::shown(&value)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn fits(v: &Json, t: &TypeName) -> bool {
    match t {
        TypeName::Any => true,
        TypeName::String => v.is_string(),
        TypeName::Number => v.is_number(),
        TypeName::Integer => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        TypeName::Boolean => v.is_boolean(),
        TypeName::Object => v.is_object(),
        TypeName::File => v.is_string() || v.get("path").is_some_and(Json::is_string),
        TypeName::List(None) => v.is_array(),
        TypeName::List(Some(item)) => v.as_array().is_some_and(|a| a.iter().all(|i| fits(i, item))),
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(src: &str) -> ToolDef {
        let (t, d) = crate::tool::load(src);
        assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
        t.expect("tool")
    }

    #[test]
    fn validates() {
        let t = def(r#"{"arguments": [
            {"name": "n", "type_name": "integer", "required": true},
            {"name": "xs", "type_name": "list<string>"},
            {"name": "f", "type_name": "file"}
        ], "system_event_endpoint": "builtin:echo"}"#);
        assert!(validate_arguments(&t, &json!({"n": 1})).is_ok());
        assert!(validate_arguments(&t, &json!({"n": 1, "xs": ["a"], "f": {"path": "p"}})).is_ok());
        assert_eq!(validate_arguments(&t, &json!({})).unwrap_err(), "required argument `n` is missing");
        assert_eq!(
            validate_arguments(&t, &json!({"n": "one"})).unwrap_err(),
            "argument `n` must be integer, and it is a string"
        );
        assert!(validate_arguments(&t, &json!({"n": 1, "xs": [1]})).is_err());
        assert!(validate_arguments(&t, &json!({"n": 1, "f": {"name": "p"}})).is_err());
        assert!(validate_arguments(&t, &json!([])).is_err());
    }
}
