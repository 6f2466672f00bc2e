//! JSON tree → [`ToolDef`], checking the schema of SPEC §5 as it goes.
//!
//! Every problem is reported and reading carries on past it, so one run lists them all:
//! a key with the wrong JSON type is reported and treated as absent, an instruction without
//! an `execution_id` or `tool_definition_path` is reported and left out of the model. Only
//! what the file says on its own is checked here; whether a REF names a real step, whether
//! expressions compile, whether a callee exists are for the stages after this one.

mod declarations;
mod steps;

pub(crate) use steps::{tool_path_respelled, tool_path_spelling};

use crate::diagnostic::{Code, Diagnostic};
use crate::ranges;
use crate::span::{Span, Spanned};

use super::json::{JsonKind, JsonNode, JsonObject};
use super::keys::{quoted_list as list, Level};
use super::model::*;
use super::refs;

/// Execution ids that would shadow a REF context or an expression name.
pub(crate) const RESERVED_IDS: &[&str] = &["arguments", "response", "item", "current"];

/// The longest execution id, in bytes (an id is ASCII). Each call a step makes is recorded
/// under its path of ids (`d[0]/e[159]`) in the run history, which indexes it, once per
/// fan-out child: a plan's 100,000-character id fanned out 1,000 times once wrote 204 MB of
/// history from a 205 KB plan (hostile round 15).
pub(crate) const MAX_EXECUTION_ID_BYTES: usize = 128;

/// Reads a whole tool definition from its root object. Returns `None` only when the kind
/// of tool cannot be told (both or neither of `system_event_endpoint` and `instructions`).
pub(crate) fn tool(root: &JsonNode, diags: &mut Vec<Diagnostic>) -> Option<ToolDef> {
    let mut l = Loader { diags, left_out: Vec::new() };
    let obj = l.object(root, "the tool definition", Level::Tool, Owner::Root)?;
    let description = obj.get("description").and_then(|n| l.string(&obj, "description", n));
    let arguments = obj.get("arguments").map_or_else(Vec::new, |n| l.params(&obj, "arguments", n));
    let responses = obj.get("responses").map_or_else(Vec::new, |n| l.params(&obj, "responses", n));
    let output_key = obj.get("output_key").and_then(|n| l.string(&obj, "output_key", n));
    if let Some(key) = &output_key {
        l.result_name(key, "output_key");
    }

    // The composite parts are read even when the kind is in doubt, so that their problems
    // are reported in the same run as the doubt.
    let instructions = obj.get("instructions").map(|n| l.instructions(&obj, n));
    let primitive_only = obj.key("instructions").is_none() && obj.key("system_event_endpoint").is_some();
    let mut composite_part = |key: &str| {
        let k = obj.key(key)?;
        if primitive_only {
            l.push(
                Diagnostic::new(
                    Code::CompositeOnlyKey,
                    k.span,
                    format!("`{key}` is only for composite tools"),
                )
                .with_label("on a primitive tool")
                .with_help("a primitive tool returns what the host returns; remove this key, or replace `system_event_endpoint` with `instructions`"),
            );
            return None;
        }
        obj.get(key)
    };
    let map_node = composite_part("response_reference_map");
    let transform_arguments_node = composite_part("transform_arguments");
    let transform_responses_node = composite_part("transform_responses");
    let response_reference_map = map_node.and_then(|n| l.response_map(&obj, n));
    let transform_arguments = transform_arguments_node.and_then(|n| l.transform(&obj, "transform_arguments", n));
    let transform_responses = transform_responses_node.and_then(|n| l.transform(&obj, "transform_responses", n));
    let tool_level = refs::tool_level_strings(
        response_reference_map.as_ref(),
        transform_arguments.as_ref(),
        transform_responses.as_ref(),
    );
    for (s, place) in tool_level {
        l.check_ref_string(s, place);
    }

    let kind = match (obj.key("system_event_endpoint"), obj.key("instructions")) {
        (Some(e), Some(i)) => {
            l.push(
                Diagnostic::new(
                    Code::PrimitiveAndComposite,
                    i.span,
                    "a tool cannot be both primitive and composite",
                )
                .with_label("`instructions` makes it composite")
                .with_secondary(e.span, "`system_event_endpoint` makes it primitive")
                .with_help("keep `system_event_endpoint` for a tool the host runs, or `instructions` for a tool made of other tools"),
            );
            None
        }
        // A key of another format standing for one of them was reported as such.
        (None, None) if obj.has_alias_of("instructions") || obj.has_alias_of("system_event_endpoint") => None,
        (None, None) => {
            l.push(
                Diagnostic::new(
                    Code::NeitherPrimitiveNorComposite,
                    open_brace(root.span),
                    "the tool has neither `system_event_endpoint` nor `instructions`",
                )
                .with_label("this tool definition")
                .with_help("add `system_event_endpoint` for a tool the host runs, or `instructions` for a tool made of other tools"),
            );
            None
        }
        (Some(_), None) => obj
            .get("system_event_endpoint")
            .and_then(|n| l.string(&obj, "system_event_endpoint", n))
            .map(|system_event_endpoint| ToolKind::Primitive { system_event_endpoint }),
        (None, Some(_)) => {
            Some(ToolKind::Composite { instructions: instructions.unwrap_or_default(), response_reference_map })
        }
    };
    let tool = ToolDef {
        description,
        arguments,
        responses,
        declares_arguments: obj.key("arguments").is_some(),
        declares_responses: obj.key("responses").is_some(),
        kind: kind?,
        transform_arguments,
        transform_responses,
        output_key,
        left_out: std::mem::take(&mut l.left_out),
        span: root.span,
    };
    Some(tool)
}

/// An object being read: its entries and what to call it in messages.
struct Obj<'a> {
    entries: &'a [(Spanned<String>, JsonNode)],
    span: Span,
    what: String,
    level: Level,
}

impl<'a> Obj<'a> {
    fn get(&self, key: &str) -> Option<&'a JsonNode> {
        self.entries.iter().find(|(k, _)| k.node == key).map(|(_, v)| v)
    }

    fn key(&self, key: &str) -> Option<&'a Spanned<String>> {
        self.entries.iter().find(|(k, _)| k.node == key).map(|(k, _)| k)
    }

    /// Whether a key of another format that stands for `key` is here ([`Level::alias`]):
    /// its unknown-key error names the rename, so `key`'s absence is not reported again.
    fn has_alias_of(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| self.level.alias(&k.node) == Some(key))
    }
}

/// The first byte of an object: where "this object lacks a key" points, so that the
/// underline stays one character wide however large the object is.
fn open_brace(span: Span) -> Span {
    Span { start: span.start, end: span.start.saturating_add(1).min(span.end) }
}

/// A JSON type name with its article, as messages say it: `a string`, `an object`, `null`.
fn a(type_name: &str) -> String {
    match type_name {
        "null" => "null".to_string(),
        t if t.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {t}"),
        t => format!("a {t}"),
    }
}

/// True for `[A-Za-z_][A-Za-z0-9_-]*`, the shape of execution ids and REF segments.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What holds an object that is being read.
#[derive(Clone, Copy)]
enum Owner<'o, 'a> {
    /// Nothing: it is the whole file.
    Root,
    /// It is the value of a key of another object.
    Key(&'o Obj<'a>, &'o str),
    /// It is an element of a list (its `what` says which); the help shows its shape.
    Element(&'static str),
    /// It was already checked to be an object.
    Known,
}

struct Loader<'d> {
    diags: &'d mut Vec<Diagnostic>,
    /// The execution ids of the instructions left out of the model for their errors.
    left_out: Vec<String>,
}

impl Loader<'_> {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// Checks that `node` is an object and that it has only `keys`. `owner` says what holds
    /// the object, for the message when it is not an object.
    fn object<'a>(
        &mut self,
        node: &'a JsonNode,
        what: impl Into<String>,
        level: Level,
        owner: Owner<'_, '_>,
    ) -> Option<Obj<'a>> {
        let what = what.into();
        let JsonKind::Object(entries) = &node.kind else {
            if let Owner::Key(parent, key) = owner {
                self.wrong_type(parent, key, node, "an object");
                return None;
            }
            let mut d = Diagnostic::new(
                Code::WrongJsonType,
                node.span,
                format!("{what} must be a JSON object, found {}", a(node.type_name())),
            )
            .with_label("expected an object");
            match owner {
                Owner::Root => {
                    d = d.with_help("a `.tool` file is one JSON object: `{\"description\": \"…\", …}`");
                }
                Owner::Element(shape) => d = d.with_help(format!("write it as `{shape}`")),
                Owner::Key(..) | Owner::Known => {}
            }
            self.push(d);
            return None;
        };
        for (k, _) in entries {
            if !level.has(&k.node) {
                self.unknown_key(k, &what, level);
            }
        }
        Some(Obj { entries, span: node.span, what, level })
    }

    fn unknown_key(&mut self, key: &Spanned<String>, what: &str, level: Level) {
        let mut d = Diagnostic::new(Code::UnknownKey, key.span, format!("unknown key `{}` in {what}", key.node))
            .with_label("not a key here");
        d = d.with_help(level.unknown_key_help(&key.node));
        self.push(d);
    }

    fn missing(&mut self, obj: &Obj<'_>, key: &str, help: &str) {
        if obj.has_alias_of(key) {
            return;
        }
        self.push(
            Diagnostic::new(Code::MissingKey, open_brace(obj.span), format!("{} has no `{key}`", obj.what))
                .with_label(format!("`{key}` is required here"))
                .with_help(help.to_string()),
        );
    }

    fn wrong_type(&mut self, obj: &Obj<'_>, key: &str, node: &JsonNode, expected: &str) {
        let mut d = Diagnostic::new(
            Code::WrongJsonType,
            node.span,
            format!("`{key}` in {} must be {expected}, found {}", obj.what, a(node.type_name())),
        )
        .with_label(format!("expected {expected}"));
        if let JsonKind::Str(s) = &node.kind {
            let text = s.value.trim();
            let boolean = expected == "a boolean" && (text == "true" || text == "false");
            let number = (expected.contains("number") || expected.contains("integer")) && text.parse::<f64>().is_ok();
            if boolean || number {
                d = d.with_help(format!("write `{text}` without quotes"));
            }
        }
        if d.help.is_none() && expected == "a boolean" {
            d = d.with_help("write `true` or `false`, without quotes");
        }
        self.push(d);
    }

    fn string(&mut self, obj: &Obj<'_>, key: &str, node: &JsonNode) -> Option<Spanned<String>> {
        match &node.kind {
            JsonKind::Str(s) => Some(Spanned::new(s.value.to_string(), node.span)),
            _ => {
                self.wrong_type(obj, key, node, "a string");
                None
            }
        }
    }

    fn boolean(&mut self, obj: &Obj<'_>, key: &str, node: &JsonNode) -> Option<Spanned<bool>> {
        match node.kind {
            JsonKind::Bool(b) => Some(Spanned::new(b, node.span)),
            _ => {
                self.wrong_type(obj, key, node, "a boolean");
                None
            }
        }
    }

    /// A number that must satisfy `ok`, described by `range` in the message when it does not.
    fn number(
        &mut self,
        obj: &Obj<'_>,
        key: &str,
        node: &JsonNode,
        ok: impl Fn(f64) -> bool,
        range: &str,
    ) -> Option<Spanned<f64>> {
        let n = match node.kind {
            JsonKind::Int(i) => i as f64,
            JsonKind::Float(f) => f,
            _ => {
                self.wrong_type(obj, key, node, "a number");
                return None;
            }
        };
        if !ok(n) {
            self.out_of_range(obj, key, node, range);
            return None;
        }
        Some(Spanned::new(n, node.span))
    }

    /// A number that configures execution: in its range (SPEC §6.5), or `E0521`.
    fn ranged(&mut self, obj: &Obj<'_>, range: &ranges::Range, node: &JsonNode) -> Option<Spanned<f64>> {
        let integer = matches!(node.kind, JsonKind::Int(_));
        if range.integer && !integer {
            self.wrong_type(obj, range.name, node, "an integer");
            return None;
        }
        self.number(obj, range.name, node, |x| range.contains(x), &range.describe())
    }

    fn out_of_range(&mut self, obj: &Obj<'_>, key: &str, node: &JsonNode, range: &str) {
        self.push(
            Diagnostic::new(Code::NumberOutOfRange, node.span, format!("`{key}` in {} must be {range}", obj.what))
                .with_label("out of range"),
        );
    }

    fn list<'a>(&mut self, obj: &Obj<'_>, key: &str, node: &'a JsonNode) -> Option<&'a [JsonNode]> {
        match &node.kind {
            JsonKind::List(items) => Some(items),
            _ => {
                self.wrong_type(obj, key, node, "a list");
                None
            }
        }
    }

    fn json_object(&mut self, obj: &Obj<'_>, key: &str, node: &JsonNode) -> Option<JsonObject> {
        match &node.kind {
            JsonKind::Object(entries) => Some(JsonObject { entries: entries.clone(), span: node.span }),
            _ => {
                self.wrong_type(obj, key, node, "an object");
                None
            }
        }
    }
}

fn operator_names() -> Vec<&'static str> {
    Operator::ALL.iter().map(|o| o.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        for ok in ["a", "_", "step_1", "fetch-data", "A9"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "1a", "-a", "a b", "a.b", "é"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn lists_read_well() {
        assert_eq!(list(&["a"]), "`a`");
        assert_eq!(list(&["a", "b", "c"]), "`a`, `b` and `c`");
    }
}
