//! Hover: what a key, a step, a REF, an argument or an expression's type is.

use lsp_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind};

use super::json_context::*;
use super::symbols::{self, Occurrence, Resolver, Sym};
use super::{Doc, Server};
use crate::span::Span;
use crate::tool::keys::{self};
use crate::tool::{Param, ToolDef};

/// `textDocument/hover`.
pub(super) fn hover(s: &Server, p: &HoverParams) -> Option<Hover> {
    let tdp = &p.text_document_position_params;
    let doc = s.doc(&tdp.text_document.uri)?;
    let offset = s.offset(doc, tdp.position);
    let occs = s.doc_occurrences(doc);
    let tool = doc.checked.as_ref().and_then(|c| c.tool.as_deref());
    let symbol =
        tool.and_then(|tool| symbols::at(occs, offset).and_then(|o| Some((o.span, symbol_hover(s, doc, tool, o)?))));
    let typed = tool.and_then(|tool| type_hover(doc, tool, offset));
    let (span, value) = match (symbol, typed) {
        (Some((span, text)), Some((_, t))) if !text.contains("\n\ntype: ") => (span, format!("{text}\n\n{t}")),
        (Some(found), _) => found,
        (None, Some(found)) => found,
        (None, None) => key_hover(doc, tool, offset)?,
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
        range: Some(doc.text.range(span, s.encoding)),
    })
}

/// The documentation of the `.tool` key under the cursor (from [`keys`]), with the span of
/// the key's string.
pub(super) fn key_hover(doc: &Doc, tool: Option<&ToolDef>, offset: usize) -> Option<(Span, String)> {
    let text = doc.text.as_str();
    let cx = json_context_at(text.get(..offset)?, tool);
    let (start, true) = cx.string? else { return None };
    let end = string_end(text, start)?;
    let name = decoded(text.get(start..end)?);
    let (level, key) = key_of(cx.level()?, &name)?;
    Some((Span::new(start - 1, end + 1), keys::describe(level, key)))
}

/// What the symbol under the cursor is: a step, a declaration, a callee, a function or a
/// transform variable.
pub(super) fn symbol_hover(s: &Server, doc: &Doc, tool: &ToolDef, o: &Occurrence) -> Option<String> {
    let checked = doc.checked.as_ref()?;
    let text = match &o.sym {
        Sym::Step { id, .. } => {
            let ins = tool.instructions().iter().find(|i| &i.execution_id.node == id)?;
            let mut t = match ins.tool_path() {
                Some(path) => format!("**step {}** calls {}", code(id), code(path)),
                None => format!(
                    "**transform step {}**: calls nothing; its result is the object of its `transform_responses`",
                    code(id)
                ),
            };
            if let Some(step) = checked.plan.as_ref().and_then(|pl| pl.step(id)) {
                t.push_str(&format!("\n\nresult: {}", code(&step.result_type.to_string())));
            }
            if let Some(callee) = ins.tool_path().and_then(|p| (Resolver { root: &doc.root.0 }).file(p)) {
                if let Some(def) = s.tool_at(&callee) {
                    t.push_str(&format!("\n\n{}", describe_tool(&def)));
                }
            }
            t
        }
        Sym::Argument { file, name } => {
            let def = s.tool_at(file)?;
            let param = def.arguments.iter().find(|a| &a.name.node == name)?;
            format!("**argument** {}", describe_param(param))
        }
        Sym::Response { file, name } => {
            let def = s.tool_at(file)?;
            let param = def.responses.iter().find(|a| &a.name.node == name)?;
            format!("**response** {}", describe_param(param))
        }
        Sym::ToolPath { path, file } => {
            let def = s.tool_at(file.as_ref()?)?;
            format!("**{}**\n\n{}", code(path), describe_tool(&def))
        }
        Sym::Function(name) => {
            let f = s.engine.functions().lookup(name)?;
            let sig = &s.engine.functions().get(f).signature;
            let params: Vec<String> = sig
                .params
                .iter()
                .map(|p| {
                    let req = if p.is_required() { "" } else { " (optional)" };
                    format!("- `{}`: `{}`{req}", p.name, p.ty)
                })
                .collect();
            format!("```\n{}\n```\n{}\n\n{}", sig.display(), sig.summary, params.join("\n"))
        }
        Sym::Variable { block, name } => variable_hover(doc, tool, *block, name)?,
    };
    Some(text)
}

/// The type at the cursor: of the innermost REF, variable or transform output there (with
/// what its uses demand when it is `any`), else of the innermost sub-expression of a
/// transform expression (when the file checked without errors, so that it compiled).
pub(super) fn type_hover(doc: &Doc, tool: &ToolDef, offset: usize) -> Option<(Span, String)> {
    let checked = doc.checked.as_ref()?;
    let holds = |sp: Span| (sp.start as usize) <= offset && offset < sp.end as usize;
    if let Some(t) = checked.types.iter().filter(|t| holds(t.span)).min_by_key(|t| t.span.len()) {
        let mut text = format!("type: {}", code(&t.ty.to_string()));
        if let Some(inferred) = &t.inferred {
            text.push_str(&format!(" — its uses need {}", code(&inferred.to_string())));
        }
        return Some((t.span, text));
    }
    let plan = checked.plan.as_ref()?;
    let blocks = transform_blocks(tool);
    for (step, args, t) in blocks {
        let Some((name, expr)) = t.transforms.iter().find(|(_, e)| holds(e.content_span())) else { continue };
        let program = compiled(plan, step, args, &name.node)?;
        let at = expr.decoded_offset(offset)?;
        let (span, ty) = program.type_at(at)?;
        let written: String = expr.value.get(span.range()).unwrap_or("").chars().take(80).collect();
        return Some((expr.map_span(span), format!("{}: {}", code(&written), code(&ty.to_string()))));
    }
    None
}

/// The compiled transform output `name` of a block (see [`transform_blocks`]).
pub(super) fn compiled<'p>(
    plan: &'p crate::Plan,
    step: Option<usize>,
    args: bool,
    name: &str,
) -> Option<&'p crate::Program> {
    let block = match step {
        Some(n) => {
            let st = plan.steps.iter().find(|st| st.index == n)?;
            if args {
                st.transform_arguments.as_ref()
            } else {
                st.transform_responses.as_ref()
            }
        }
        None if args => plan.transform_arguments.as_ref(),
        None => plan.transform_responses.as_ref(),
    }?;
    block.transforms.iter().find(|(k, _)| &**k == name).map(|(_, p)| p)
}

/// Every transform block of a tool: the step it belongs to (`None`: the composite's own),
/// whether it transforms arguments (else responses), and the block.
pub(super) fn transform_blocks(tool: &ToolDef) -> Vec<(Option<usize>, bool, &crate::tool::Transform)> {
    let mut blocks = Vec::new();
    for (n, i) in tool.instructions().iter().enumerate() {
        blocks.extend(i.transform_arguments.iter().map(|t| (Some(n), true, t)));
        blocks.extend(i.transform_responses.iter().map(|t| (Some(n), false, t)));
    }
    blocks.extend(tool.transform_arguments.iter().map(|t| (None, true, t)));
    blocks.extend(tool.transform_responses.iter().map(|t| (None, false, t)));
    blocks
}

/// A transform variable (its value as written) or output (its expression and type).
pub(super) fn variable_hover(doc: &Doc, tool: &ToolDef, block: Span, name: &str) -> Option<String> {
    let checked = doc.checked.as_ref()?;
    let src = doc.text.as_str();
    let (step, args, t) = transform_blocks(tool).into_iter().find(|(_, _, t)| t.span == block)?;
    if let Some((_, v)) = t.variables.iter().find(|(k, _)| k.node == name) {
        let written = src.get(v.span.range()).unwrap_or("");
        return Some(format!("**variable {}** = {}", code(name), code(written)));
    }
    let (_, e) = t.transforms.iter().find(|(k, _)| k.node == name)?;
    let mut out = format!("**transform output {}** = {}", code(name), code(&e.value));
    if let Some(prog) = checked.plan.as_ref().and_then(|plan| compiled(plan, step, args, name)) {
        out.push_str(&format!("\n\ntype: {}", code(&prog.result_type().to_string())));
    }
    Some(out)
}

pub(super) fn describe_param(p: &Param) -> String {
    let mut t = format!("{}: {}", code(&p.name.node), code(&p.type_or_any().to_string()));
    if p.is_required() {
        t.push_str(" (required)");
    }
    if let Some(d) = &p.description {
        t.push_str(&format!(" — {}", prose(&d.node)));
    }
    t
}

use crate::diagnostic::escape_hidden as visible;

/// Text from a file (a name, a path, a value, an expression, a type naming the file's
/// keys) as a Markdown code span that shows it as written: hidden characters escaped, fenced
/// by more backticks than any run of backticks inside it (CommonMark), so that nothing in
/// it ends the span or starts other Markdown.
pub(super) fn code(text: &str) -> String {
    // Line breaks and tabs (an expression written over lines) as spaces, as a code span
    // shows them; a blank line would end it.
    let shown = visible(&text.replace(['\n', '\r', '\t'], " "), &[]);
    let run = shown.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(run + 1);
    let pad = shown.starts_with(['`', ' ']) || shown.ends_with(['`', ' ']);
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{shown}{pad}{fence}")
}

/// A description from a file as Markdown that shows it as written: hidden characters
/// escaped (line breaks and tabs kept), and the characters that open code, HTML, emphasis,
/// links, headings or tables backslash-escaped — an unclosed fence or comment in one tool's
/// description cannot swallow the rest of a hover.
pub(super) fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in visible(text, &['\n', '\t']).chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' | '#' | '|' | '~') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A callee's description, declared arguments and responses.
pub(super) fn describe_tool(def: &ToolDef) -> String {
    let mut t = String::new();
    if let Some(d) = &def.description {
        t.push_str(&prose(&d.node));
        t.push_str("\n\n");
    }
    let list = |params: &[Param], declared: bool| -> String {
        if !declared {
            return "not declared".to_string();
        }
        if params.is_empty() {
            return "none".to_string();
        }
        params.iter().map(|p| format!("\n- {}", describe_param(p))).collect()
    };
    t.push_str(&format!("arguments: {}", list(&def.arguments, def.declares_arguments)));
    t.push_str(&format!("\n\nresponses: {}", list(&def.responses, def.declares_responses)));
    t
}
