//! Completion: keys where a key goes, REFs, step names, functions and their arguments, read from the text as typed (it may be broken).

use std::sync::Arc;

use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionTextEdit, MarkupContent, MarkupKind, TextEdit,
};

use super::hover::describe_param;
use super::json_context::*;
use super::symbols::Resolver;
use super::{Doc, Server};
use crate::diagnostic::escape_hidden as visible;
use crate::span::Span;
use crate::tool::keys::{self, Level};
use crate::tool::{Logic, Operator, Param, ToolDef, TypeName};
use crate::types::signature::ELEMENT_NAME;

/// `textDocument/completion`.
pub(super) fn completion(s: &Server, p: &CompletionParams) -> Option<Vec<CompletionItem>> {
    let tdp = &p.text_document_position;
    let doc = s.doc(&tdp.text_document.uri)?;
    let offset = s.offset(doc, tdp.position);
    let before = doc.text.as_str().get(..offset)?;
    let cx = json_context_at(before, doc.checked.as_ref().and_then(|c| c.tool.as_deref()));
    let tool = doc.last_tool.as_deref();
    let (start, is_key) = cx.string?;
    let prefix = &before[start..];
    let word_len = prefix.chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').count();
    let word_start = offset - word_len;
    let range = doc.text.range(Span::new(word_start, offset), s.encoding);
    // What is inserted goes inside a JSON string: a name holding a quote, a backslash or a
    // control character is written escaped, as the file must hold it (and so shown).
    let item = |label: &str, kind: CompletionItemKind, detail: Option<String>| {
        let written = json_escaped(label);
        CompletionItem {
            label: written.clone(),
            kind: Some(kind),
            detail: detail.map(|d| visible(&d, &[])),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit { range, new_text: written })),
            ..CompletionItem::default()
        }
    };
    let keys = |level: Level| {
        let key_item = |k: &keys::Key| CompletionItem {
            documentation: Some(lsp_types::Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value: keys::describe(level, k),
            })),
            ..item(k.name, CompletionItemKind::PROPERTY, Some(k.shape.describe().to_string()))
        };
        let mut items: Vec<CompletionItem> = level.keys().map(key_item).collect();
        // A condition is a leaf or a group: both kinds of keys are offered.
        if level == Level::ConditionLeaf {
            items.extend(Level::ConditionGroup.keys().map(key_item));
        }
        items
    };
    // The kind of object holding the string, and of the object holding that.
    let containers = cx.containers();
    let level = match containers.last() {
        Some(Container::Object(level)) => Some(*level),
        _ => None,
    };
    let n = containers.len();
    let parent = n.checked_sub(2).map(|i| containers[i]);
    let container_key = cx.frames.last().and_then(|f| f.1.as_deref());
    if is_key {
        return Some(match level {
            Some(level) => keys(level),
            // A step's `arguments`: the callee's.
            None if parent == Some(Container::Object(Level::Instruction)) && container_key == Some("arguments") => {
                let callee = step_callee_at(s, doc, tool, offset)?;
                callee.arguments.iter().map(|a| param_item(&item, a)).collect()
            }
            _ => Vec::new(),
        });
    }
    // A value.
    if let Some(r) = last_ref(prefix) {
        return Some(ref_completion(s, doc, tool, r, offset, &item));
    }
    // The value of a key of the format (not of a key of the same name in a value the
    // writer shapes), or an expression of a transform block.
    let expression = parent == Some(Container::Object(Level::Transform)) && container_key == Some("transforms");
    Some(match (level, cx.key.as_deref()) {
        (Some(Level::ConditionLeaf), Some("operator")) => {
            Operator::ALL.iter().map(|o| item(o.as_str(), CompletionItemKind::OPERATOR, None)).collect()
        }
        (Some(Level::ConditionLeaf), Some("logic")) => {
            Logic::NAMES.iter().map(|l| item(l, CompletionItemKind::KEYWORD, None)).collect()
        }
        (Some(Level::Param | Level::Element), Some("type_name")) => {
            TypeName::SIMPLE.iter().map(|t| item(t, CompletionItemKind::TYPE_PARAMETER, None)).collect()
        }
        (Some(Level::Instruction), Some("done_check")) => expression_completion(s, tool, prefix, offset, &item),
        _ if expression => expression_completion(s, tool, prefix, offset, &item),
        _ => Vec::new(),
    })
}

/// A declared argument or response as a completion: its type (and whether it is required)
/// as the detail, which clients show as plain text, and its declaration, description
/// included, as Markdown documentation.
pub(super) fn param_item(
    item: &dyn Fn(&str, CompletionItemKind, Option<String>) -> CompletionItem,
    p: &Param,
) -> CompletionItem {
    let mut detail = p.type_or_any().to_string();
    if p.is_required() {
        detail.push_str(" (required)");
    }
    CompletionItem {
        documentation: Some(lsp_types::Documentation::MarkupContent(MarkupContent {
            kind: MarkupKind::Markdown,
            value: describe_param(p),
        })),
        ..item(&p.name.node, CompletionItemKind::FIELD, Some(detail))
    }
}

/// `text` as it is written between the quotes of a JSON string.
pub(super) fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_string()
}

/// The REF being written at the end of `prefix` (`REF:step.fi` → `step.fi`).
pub(super) fn last_ref(prefix: &str) -> Option<&str> {
    let at = prefix.rfind("REF:")?;
    let rest = &prefix[at + 4..];
    rest.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).then_some(rest)
}

/// The callee of the instruction whose text holds `offset`.
pub(super) fn step_callee_at(s: &Server, doc: &Doc, tool: Option<&ToolDef>, offset: usize) -> Option<Arc<ToolDef>> {
    let ins = tool?.instructions().iter().find(|i| i.span.range().contains(&offset))?;
    callee_def(s, doc, ins.tool_path()?)
}

pub(super) fn callee_def(s: &Server, doc: &Doc, tool_path: &str) -> Option<Arc<ToolDef>> {
    let file = Resolver { root: &doc.root.0 }.file(tool_path)?;
    s.tool_at(&file)
}

pub(super) fn ref_completion(
    s: &Server,
    doc: &Doc,
    tool: Option<&ToolDef>,
    r: &str,
    offset: usize,
    item: &dyn Fn(&str, CompletionItemKind, Option<String>) -> CompletionItem,
) -> Vec<CompletionItem> {
    let Some(tool) = tool else { return Vec::new() };
    let parts: Vec<&str> = r.split('.').collect();
    if parts.len() == 1 {
        let mut out = vec![item("arguments", CompletionItemKind::MODULE, Some("the composite's arguments".into()))];
        let here = tool.instructions().iter().find(|i| i.span.range().contains(&offset));
        // A transform step has no response (SPEC §6.4 ext).
        let responds = |i: &&crate::tool::Instruction| {
            !i.is_transform_step() && i.transform_responses.as_ref().is_some_and(|t| t.span.range().contains(&offset))
        };
        if here.as_ref().is_some_and(responds) {
            out.push(item("response", CompletionItemKind::MODULE, Some("this step's raw response".into())));
        }
        for i in tool.instructions() {
            if here.is_some_and(|h| h.execution_id == i.execution_id) {
                continue;
            }
            let detail = match i.tool_path() {
                Some(path) => format!("step calling {path}"),
                None => "transform step".to_string(),
            };
            out.push(item(&i.execution_id.node, CompletionItemKind::VARIABLE, Some(detail)));
        }
        return out;
    }
    if parts.len() != 2 {
        return Vec::new();
    }
    if parts[0] == "arguments" {
        let mut out: Vec<CompletionItem> = tool.arguments.iter().map(|a| param_item(item, a)).collect();
        if let Some(t) = &tool.transform_arguments {
            out.extend(
                t.transforms
                    .iter()
                    .map(|(k, _)| item(&k.node, CompletionItemKind::FIELD, Some("transform output".into()))),
            );
        }
        return out;
    }
    let Some(ins) = tool.instructions().iter().find(|i| i.execution_id.node == parts[0]) else { return Vec::new() };
    let mut out = Vec::new();
    if let Some(def) = ins.tool_path().and_then(|p| callee_def(s, doc, p)) {
        out.extend(def.responses.iter().map(|a| param_item(item, a)));
    }
    if !ins.is_transform_step() {
        out.push(item("response", CompletionItemKind::FIELD, Some("the raw response".into())));
    }
    if let Some(t) = &ins.transform_responses {
        out.extend(
            t.transforms.iter().map(|(k, _)| item(&k.node, CompletionItemKind::FIELD, Some("transform output".into()))),
        );
    }
    out
}

/// Inside an expression: the keyword parameters of the call the cursor is in (`as=` too
/// when it takes a template), the names enclosing calls gave their elements with `as`,
/// functions, and the names of the transform block.
pub(super) fn expression_completion(
    s: &Server,
    tool: Option<&ToolDef>,
    prefix: &str,
    offset: usize,
    item: &dyn Fn(&str, CompletionItemKind, Option<String>) -> CompletionItem,
) -> Vec<CompletionItem> {
    let funcs = s.engine.functions();
    let mut out = Vec::new();
    if let Some(name) = enclosing_call(prefix) {
        if let Some(id) = funcs.lookup(name) {
            let sig = &funcs.get(id).signature;
            for p in &sig.params {
                let mut it = item(
                    &format!("{}=", p.name),
                    CompletionItemKind::VARIABLE,
                    Some(format!("{}: {}", sig.display(), p.ty)),
                );
                it.label = format!("{}=", p.name);
                out.push(it);
            }
            if sig.takes_element_name() {
                let detail = format!("{}: a name for the element in its templates, as=\"name\"", sig.display());
                out.push(item(&format!("{ELEMENT_NAME}="), CompletionItemKind::VARIABLE, Some(detail)));
            }
        }
    }
    for (function, name) in element_names(prefix) {
        if funcs.lookup(function).is_some_and(|id| funcs.get(id).signature.takes_element_name()) {
            let detail = format!("the element of `{function}` (as=\"{name}\")");
            out.push(item(name, CompletionItemKind::VARIABLE, Some(detail)));
        }
    }
    for f in funcs.iter() {
        let sig = &f.signature;
        let mut it = item(&sig.name, CompletionItemKind::FUNCTION, Some(sig.display()));
        it.documentation = Some(lsp_types::Documentation::String(sig.summary.to_string()));
        out.push(it);
    }
    if let Some(tool) = tool {
        let blocks = tool
            .instructions()
            .iter()
            .flat_map(|i| [&i.transform_arguments, &i.transform_responses])
            .chain([&tool.transform_arguments, &tool.transform_responses])
            .flatten();
        for t in blocks.filter(|t| t.span.range().contains(&offset)) {
            for (k, _) in &t.variables {
                out.push(item(&k.node, CompletionItemKind::VARIABLE, Some("variable".into())));
            }
            for (k, e) in &t.transforms {
                if e.span.end as usize <= offset {
                    out.push(item(&k.node, CompletionItemKind::VARIABLE, Some("earlier output".into())));
                }
            }
        }
    }
    out
}

/// The function whose argument list the end of `prefix` is in.
pub(super) fn enclosing_call(prefix: &str) -> Option<&str> {
    let bytes = prefix.as_bytes();
    let mut depth = 0i32;
    for i in (0..bytes.len()).rev() {
        match bytes[i] {
            b')' | b']' | b'}' => depth += 1,
            b'[' | b'{' => depth -= 1,
            b'(' if depth == 0 => {
                let head = &prefix[..i];
                let name_len = head.chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
                return (name_len > 0).then(|| &head[head.len() - name_len..]);
            }
            b'(' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The names the calls around the end of `prefix` (raw JSON string text) give their elements
/// with `as="NAME"` written before it, innermost first, with each call's function name. A
/// text scan, as [`enclosing_call`]: completion meets text that does not parse yet.
pub(super) fn element_names(prefix: &str) -> Vec<(&str, &str)> {
    let bytes = prefix.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    for i in (0..bytes.len()).rev() {
        match bytes[i] {
            b')' | b']' | b'}' => depth += 1,
            b'[' | b'{' if depth > 0 => depth -= 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' => {
                let head = &prefix[..i];
                let name_len = head.chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
                if let Some(name) = element_name_in(&prefix[i + 1..]) {
                    out.push((&head[head.len() - name_len..], name));
                }
            }
            _ => {}
        }
    }
    out
}

/// The `NAME` of an `as="NAME"` (or `as='NAME'`, or `as=\"NAME\"` as a JSON string holds
/// it) among the top-level arguments of `args`, the text after a call's `(`.
pub(super) fn element_name_in(args: &str) -> Option<&str> {
    let bytes = args.as_bytes();
    let mut depth = 0i32;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'a' if depth == 0
                && args[i..].starts_with(ELEMENT_NAME)
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let Some(rest) = args[i + ELEMENT_NAME.len()..].trim_start().strip_prefix('=') else { continue };
                let rest = rest.trim_start().trim_start_matches(['\\', '"', '\'']);
                let len = rest.bytes().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count();
                if len > 0 {
                    return Some(&rest[..len]);
                }
            }
            _ => {}
        }
    }
    None
}
