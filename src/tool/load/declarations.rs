//! A tool's declarations: its `arguments` and `responses` (names, `type_name`s, constraints)
//! and its `response_reference_map`.

use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::ranges::MAX_TYPE_NAME_NESTING;
use crate::span::Spanned;

use super::super::json::{JsonKind, JsonNode, JsonObject};
use super::super::keys::Level;
use super::super::model::*;
use super::{a, is_identifier, list, Loader, Obj, Owner, RESERVED_IDS};

impl Loader<'_> {
    /// `arguments` / `responses` of a tool.
    pub(super) fn params(&mut self, tool: &Obj<'_>, key: &str, node: &JsonNode) -> Vec<Param> {
        let Some(items) = self.list(tool, key, node) else {
            return Vec::new();
        };
        let singular = if key == "arguments" { "argument" } else { "response" };
        let mut out: Vec<Param> = Vec::with_capacity(items.len());
        // The first declaration of each name, found by lookup (an upstream schema may declare
        // 20,000 fields: a scan of those before each was quadratic).
        let mut first_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (i, item) in items.iter().enumerate() {
            let Some(param) = self.param(singular, i, item) else {
                continue;
            };
            let at = *first_of.entry(param.name.node.clone()).or_insert(out.len());
            if let Some(first) = out.get(at) {
                self.push(
                    Diagnostic::new(
                        Code::DuplicateParam,
                        param.name.span,
                        format!("{singular} `{}` is declared twice", param.name.node),
                    )
                    .with_label("declared again here")
                    .with_secondary(first.name.span, "first declared here")
                    .with_help(format!("give each {singular} its own name, or remove one")),
                );
            }
            out.push(param);
        }
        out
    }

    pub(super) fn param(&mut self, singular: &str, i: usize, node: &JsonNode) -> Option<Param> {
        let name_text = node
            .as_object()
            .and_then(|es| es.iter().find(|(k, _)| k.node == "name"))
            .and_then(|(_, v)| v.as_str())
            .map(|s| s.value.to_string());
        let what = match &name_text {
            Some(n) => format!("{singular} `{n}`"),
            None => format!("{singular} #{}", i + 1),
        };
        let shape = "{\"name\": \"…\", \"type_name\": \"string\", \"required\": true}";
        let obj = self.object(node, what, Level::Param, Owner::Element(shape))?;
        let name = match obj.get("name") {
            Some(n) => self.string(&obj, "name", n),
            None => {
                self.missing(&obj, "name", &format!("add `\"name\": \"…\"`: the name the {singular} is known by"));
                None
            }
        };
        if let Some(name) = &name {
            if !is_identifier(&name.node) {
                self.push(
                    Diagnostic::new(
                        Code::InvalidIdentifier,
                        name.span,
                        format!("{singular} name `{}` is not an identifier", name.node),
                    )
                    .with_label("REF paths could not name it")
                    .with_help("names start with a letter or `_` and go on with letters, digits, `_` and `-`"),
                );
            }
        }
        let type_name = obj.get("type_name").and_then(|n| self.type_name(&obj, n));
        let description = obj.get("description").and_then(|n| self.string(&obj, "description", n));
        let required = obj.get("required").and_then(|n| self.boolean(&obj, "required", n));
        let (constraints, refined) =
            super::super::constraints::read(obj.entries, type_name.as_ref(), &obj.what, self.diags);
        let type_name = match (refined, type_name) {
            (Some(t), Some(given)) => Some(Spanned::new(t, given.span)),
            (Some(t), None) => Some(Spanned::new(t, obj.get("items").map_or(node.span, |n| n.span))),
            (None, given) => given,
        };
        Some(Param { name: name?, type_name, description, required, constraints, span: node.span })
    }

    pub(super) fn type_name(&mut self, obj: &Obj<'_>, node: &JsonNode) -> Option<Spanned<TypeName>> {
        let text = self.string(obj, "type_name", node)?;
        let depth = TypeName::list_depth(&text.node);
        if depth > MAX_TYPE_NAME_NESTING {
            self.push(
                Diagnostic::new(
                    Code::NestingTooDeep,
                    text.span,
                    format!(
                        "the `type_name` in {} nests `list<…>` {depth} deep, past the limit of {MAX_TYPE_NAME_NESTING}",
                        obj.what
                    ),
                )
                .with_label("nested too deeply")
                .with_help("declare `list` with the elements' type as `items`, or `any`, for data this deep"),
            );
            return None;
        }
        match TypeName::parse(&text.node) {
            Some(t) => Some(Spanned::new(t, text.span)),
            None => {
                let mut d = Diagnostic::new(
                    Code::UnknownTypeName,
                    text.span,
                    format!("unknown type `{}` in {}", text.node, obj.what),
                )
                .with_label("not a type");
                d = match suggest_type(&text.node) {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")),
                    None => d.with_help(format!("the types are {}, and `list<T>`", list(TypeName::SIMPLE))),
                };
                self.push(d);
                None
            }
        }
    }

    /// `expected_key` (or a tool's `output_key`, its default, `what`) names a step's result
    /// in REFs: the same shape as an execution id.
    pub(super) fn result_name(&mut self, key: &Spanned<String>, what: &str) {
        if RESERVED_IDS.contains(&key.node.as_str()) {
            self.push(
                Diagnostic::new(Code::ReservedExecutionId, key.span, format!("`{}` cannot be an `{what}`", key.node))
                    .with_label("reserved name")
                    .with_help(format!(
                        "{} are reserved for REFs and expressions; choose another key, like `{}_result`",
                        list(RESERVED_IDS),
                        key.node
                    )),
            );
        } else if !is_identifier(&key.node) {
            self.push(
                Diagnostic::new(
                    Code::InvalidIdentifier,
                    key.span,
                    format!("`{what}` `{}` is not an identifier", key.node),
                )
                .with_label("REFs could not name it")
                .with_help("keys start with a letter or `_` and go on with letters, digits, `_` and `-`"),
            );
        }
    }

    pub(super) fn response_map(&mut self, tool: &Obj<'_>, node: &JsonNode) -> Option<JsonObject> {
        let map = self.json_object(tool, "response_reference_map", node)?;
        for (k, v) in &map.entries {
            let what = format!("`response_reference_map` value for `{}`", k.node);
            match &v.kind {
                JsonKind::Str(s) if s.value.starts_with("REF:") => {}
                JsonKind::Str(s) => self.expected_ref(v, s, what),
                _ => self.push(
                    Diagnostic::new(
                        Code::ExpectedRef,
                        v.span,
                        format!("{what} must be a REF string, found {}", a(v.type_name())),
                    )
                    .with_label("not a REF")
                    .with_help("map each response to `REF:<step>.<key>` or `REF:arguments.<name>`"),
                ),
            }
        }
        Some(map)
    }
}

/// A known type close to `text`: a near miss, a name from another type system
/// (`int`, `array`, `dict`), or the same inside `list<…>`.
fn suggest_type(text: &str) -> Option<String> {
    suggest_type_within(text, MAX_TYPE_NAME_NESTING)
}

/// [`suggest_type`], looking inside at most `depth` more brackets.
fn suggest_type_within(text: &str, depth: usize) -> Option<String> {
    const ALIASES: &[(&str, &str)] = &[
        ("int", "integer"),
        ("float", "number"),
        ("double", "number"),
        ("decimal", "number"),
        ("bool", "boolean"),
        ("str", "string"),
        ("text", "string"),
        ("array", "list"),
        ("dict", "object"),
        ("map", "object"),
        ("path", "file"),
    ];
    let t = text.trim();
    for (open, close) in [("list<", ">"), ("array<", ">"), ("list[", "]"), ("List[", "]"), ("List<", ">")] {
        if let Some(inner) = t.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            let inner = if TypeName::parse(inner).is_some() {
                inner.trim().to_string()
            } else {
                suggest_type_within(inner, depth.checked_sub(1)?)?
            };
            return Some(format!("list<{inner}>"));
        }
    }
    let lower = t.to_ascii_lowercase();
    if TypeName::parse(&lower).is_some() {
        return Some(lower);
    }
    if let Some((_, to)) = ALIASES.iter().find(|(from, _)| *from == lower) {
        return Some((*to).to_string());
    }
    did_you_mean(&lower, TypeName::SIMPLE.iter().copied()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_suggestions() {
        assert_eq!(suggest_type("strng").as_deref(), Some("string"));
        assert_eq!(suggest_type("int").as_deref(), Some("integer"));
        assert_eq!(suggest_type("String").as_deref(), Some("string"));
        assert_eq!(suggest_type("array<str>").as_deref(), Some("list<string>"));
        assert_eq!(suggest_type("list<strng>").as_deref(), Some("list<string>"));
        assert_eq!(suggest_type("zzzzzz"), None);
    }
}
