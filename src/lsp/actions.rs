//! Code actions: the diagnostics' suggestions ([`crate::diagnostic::Suggestion`], else a
//! "did you mean" read from the help), and declaring an argument a REF names.

use std::collections::HashMap;

use lsp_types::{CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, Range, TextEdit, WorkspaceEdit};

use super::Server;
use crate::diagnostic::Code;
use crate::span::Span;
use crate::tool::{is_identifier, JsonKind};

/// `textDocument/codeAction`: the "did you mean" suggestions, and declaring an argument
/// a REF names but the tool does not declare.
pub(super) fn code_actions(s: &Server, p: &CodeActionParams) -> Option<Vec<CodeActionOrCommand>> {
    let uri = &p.text_document.uri;
    let doc = s.doc(uri)?;
    let checked = doc.checked.as_ref()?;
    let want = doc.text.span(p.range, s.encoding);
    let src = doc.text.as_str();
    let mut out = Vec::new();
    // Where an argument is declared, read once a request: it was read (the whole file
    // parsed) for each undeclared argument, and a code action over a 900 KB file of 8,000
    // of them took 200 s.
    let declared_at = std::cell::OnceCell::new();
    for (n, d) in checked.diagnostics.iter().enumerate() {
        if d.span.end < want.start || d.span.start > want.end {
            continue;
        }
        // A cancelled request stops (its answer is `-32800`).
        if n.is_multiple_of(256) && s.cancelled() {
            break;
        }
        let lsp_diag = s.to_lsp(uri, &doc.text, d);
        let edit = |range: Range, new_text: String| WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), vec![TextEdit { range, new_text }])])),
            ..WorkspaceEdit::default()
        };
        // The diagnostic's own edits first: the span and the text as they are to be written.
        if let Some(x) = &d.suggestion {
            let shown = d.help.as_deref().and_then(suggested).unwrap_or(&x.replacement);
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Replace with `{shown}`"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![lsp_diag.clone()]),
                edit: Some(edit(doc.text.range(x.span, s.encoding), x.replacement.clone())),
                is_preferred: Some(true),
                ..CodeAction::default()
            }));
        }
        // Else a "did you mean" in the help's words (the diagnostics that give no edit yet).
        if let Some(suggestion) = d.help.as_deref().and_then(suggested).filter(|_| d.suggestion.is_none()) {
            let written = src.get(d.span.range()).unwrap_or("");
            let new_text = if written.starts_with('"') && written.ends_with('"') && written.len() >= 2 {
                serde_json::to_string(suggestion).unwrap_or_default()
            } else if suggestion.starts_with("REF:") && !written.starts_with("REF:") {
                suggestion.trim_start_matches("REF:").to_string()
            } else {
                suggestion.to_string()
            };
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Replace with `{suggestion}`"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![lsp_diag.clone()]),
                edit: Some(edit(doc.text.range(d.span, s.encoding), new_text)),
                is_preferred: Some(true),
                ..CodeAction::default()
            }));
        }
        if d.code == Code::UndeclaredArgument {
            let name = src.get(d.span.range()).unwrap_or("");
            if is_identifier(name) {
                if let Some((at, text)) = declared_at.get_or_init(|| declaration_point(src)).map(|p| p.declare(name)) {
                    out.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: format!("Declare argument `{name}`"),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![lsp_diag]),
                        edit: Some(edit(doc.text.range(Span::new(at, at), s.encoding), text)),
                        ..CodeAction::default()
                    }));
                }
            }
        }
    }
    Some(out)
}

/// `X` from a help line `did you mean `X`?`.
pub(super) fn suggested(help: &str) -> Option<&str> {
    let rest = help.strip_prefix("did you mean `")?;
    rest.strip_suffix("`?")
}

/// Where a declaration of an argument goes: after the last one of the `arguments` list, in
/// the empty list (its closing bracket), or as a new `arguments` key first in the object.
#[derive(Clone, Copy, Debug)]
pub(super) enum DeclarationPoint {
    AfterLast(usize),
    InEmptyList(usize),
    NewKey(usize),
}

impl DeclarationPoint {
    /// Where to insert a declaration of argument `name`, and the text.
    pub(super) fn declare(self, name: &str) -> (usize, String) {
        let decl = format!("{{\"name\": \"{name}\", \"type_name\": \"any\", \"required\": true}}");
        match self {
            DeclarationPoint::AfterLast(at) => (at, format!(", {decl}")),
            DeclarationPoint::InEmptyList(at) => (at, decl),
            DeclarationPoint::NewKey(at) => (at, format!("\n  \"arguments\": [{decl}],")),
        }
    }
}

/// Where arguments are declared in `src`.
pub(super) fn declaration_point(src: &str) -> Option<DeclarationPoint> {
    let (root, _) = crate::tool::json::parse(src);
    let root = root?;
    let entries = root.as_object()?;
    match entries.iter().find(|(k, _)| k.node == "arguments").map(|(_, v)| v) {
        Some(list) => {
            let JsonKind::List(items) = &list.kind else { return None };
            Some(match items.last() {
                Some(last) => DeclarationPoint::AfterLast(last.span.end as usize),
                None => DeclarationPoint::InEmptyList(list.span.end as usize - 1),
            })
        }
        None => Some(DeclarationPoint::NewKey(root.span.start as usize + 1)),
    }
}
