//! Hover, definition, references, rename, completion and code actions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_server::ErrorCode;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, CompletionItem, CompletionItemKind,
    CompletionParams, CompletionTextEdit, GotoDefinitionParams, GotoDefinitionResponse, Hover, HoverContents,
    HoverParams, Location, MarkupContent, MarkupKind, Position, Range, ReferenceParams, RenameParams, TextEdit, Url,
    WorkspaceEdit,
};

use super::symbols::{self, Occurrence, Resolver, Sym};
use super::{Doc, Failure, Server, Text};
use crate::diagnostic::Code;
use crate::span::Span;
use crate::tool::keys::{self, Level, Shape};
use crate::tool::{is_identifier, JsonKind, Logic, Operator, Param, ToolDef, TypeName, RESERVED_IDS};
use crate::types::signature::ELEMENT_NAME;

/// What [`Server::file_occurrences`] calls for a file: its URI, text, model and occurrences.
type EachFile<'a> = dyn FnMut(&Url, &Text, &ToolDef, &[Occurrence]) + 'a;

/// A file of the workspace: an open document's text, or the file's on disk.
struct FileView {
    uri: Url,
    text: Text,
    tool: Option<Arc<ToolDef>>,
}

impl Server {
    fn doc(&self, uri: &Url) -> Option<&Doc> {
        self.docs.get(uri)
    }

    /// The occurrences in an open document, from its last check (found once per check).
    fn doc_occurrences<'d>(&self, doc: &'d Doc) -> &'d [Occurrence] {
        doc.occurrences.get_or_init(|| {
            let Some(tool) = doc.checked.as_ref().and_then(|c| c.tool.as_ref()) else { return Vec::new() };
            symbols::occurrences(&self.engine, &doc.path, tool, &Resolver { root: &doc.root.0 })
        })
    }

    /// A file by path: the open document when there is one (the model of its last check),
    /// else the file on disk.
    fn view(&self, path: &Path) -> Option<FileView> {
        if let Some((uri, d)) = self.docs.iter().find(|(_, d)| d.path == path) {
            let tool = match d.checked.as_ref().and_then(|c| c.tool.clone()) {
                Some(t) => Some(t),
                None => crate::tool::load(d.text.as_str()).0.map(Arc::new),
            };
            return Some(FileView { uri: uri.clone(), text: d.text.clone(), tool });
        }
        let text = crate::input::read_text(path).ok()?;
        let (tool, _) = crate::tool::load(&text);
        Some(FileView { uri: Url::from_file_path(path).ok()?, text: Text::new(text), tool: tool.map(Arc::new) })
    }

    /// Every `.tool` file under `root` (open documents included), sorted.
    fn workspace_files(&self, root: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    if !hidden && e.file_name() != "target" {
                        dirs.push(path);
                    }
                } else if path.extension().is_some_and(|x| x == "tool") {
                    found.push(std::fs::canonicalize(&path).unwrap_or(path));
                }
            }
        }
        for d in self.docs.values() {
            if d.path.starts_with(root) && !found.contains(&d.path) {
                found.push(d.path.clone());
            }
        }
        found.sort();
        found
    }

    /// Every occurrence of `sym` in the workspace of `doc`.
    fn all_occurrences(&self, doc: &Doc, sym: &Sym) -> Vec<(Url, Text, Occurrence)> {
        let local = matches!(sym, Sym::Step { .. } | Sym::Variable { .. });
        let files = if local { vec![doc.path.clone()] } else { self.workspace_files(&doc.root.0) };
        let mut out = Vec::new();
        for f in files {
            self.file_occurrences(&f, &mut |uri, text, _, occs| {
                out.extend(occs.iter().filter(|o| &o.sym == sym).map(|o| (uri.clone(), text.clone(), o.clone())))
            });
        }
        out
    }

    /// Calls `each` with a file's URI, text, model and occurrences (the open document's
    /// from its last check, else the file on disk's); nothing when it does not load.
    fn file_occurrences(&self, f: &Path, each: &mut EachFile<'_>) {
        if let Some((uri, d)) = self.docs.iter().find(|(_, d)| d.path == f) {
            if let Some(tool) = d.checked.as_ref().and_then(|c| c.tool.as_ref()) {
                each(uri, &d.text, tool, self.doc_occurrences(d));
                return;
            }
        }
        let Some(view) = self.view(f) else { return };
        let Some(tool) = &view.tool else { return };
        let root = self.root_for(f).0;
        let occs = symbols::occurrences(&self.engine, f, tool, &Resolver { root: &root });
        each(&view.uri, &view.text, tool, &occs);
    }

    /// Renaming argument `name` of the tool in `callee` to `new`: what else must change in
    /// its callers besides their `arguments` keys — each caller step's `transform_arguments`
    /// output `name` (it is that argument) and the names in that block's expressions that
    /// read it. Refused when `new` is already a name there or a key of the step's
    /// `arguments` (issue 28: the rename left those, and `check` then reported E0611 and
    /// E0101).
    fn argument_in_callers(
        &self,
        doc: &Doc,
        callee: &Path,
        name: &str,
        new: &str,
    ) -> Result<Vec<(Url, Text, Occurrence)>, String> {
        let mut out = Vec::new();
        let mut refused = None;
        for f in self.workspace_files(&doc.root.0) {
            let resolver_root = self.root_for(&f).0;
            let resolver = Resolver { root: &resolver_root };
            self.file_occurrences(&f, &mut |uri, text, tool, occs| {
                // The tool's own `transform_arguments`: its expressions read the argument by
                // name (unless a variable of the block has that name), and an output of
                // that name replaces it.
                if f == callee {
                    if let Some(t) = &tool.transform_arguments {
                        let mut names = t
                            .variables
                            .iter()
                            .map(|(k, _)| k.node.as_str())
                            .chain(t.transforms.iter().map(|(k, _)| k.node.as_str()));
                        if new != name && names.any(|n| n == new) {
                            refused.get_or_insert(format!(
                                "cannot rename `{name}` to `{new}`: the tool's `transform_arguments` already has a \
                                 name `{new}`"
                            ));
                        }
                        if !t.variables.iter().any(|(k, _)| k.node == name) {
                            let sym = Sym::Variable { block: t.span, name: name.to_string() };
                            out.extend(
                                occs.iter().filter(|o| o.sym == sym).map(|o| (uri.clone(), text.clone(), o.clone())),
                            );
                        }
                    }
                }
                for ins in tool.instructions() {
                    let Some(path) = ins.tool_path() else { continue };
                    if resolver.file(path).as_deref() != Some(callee) {
                        continue;
                    }
                    let passed = ins.arguments.as_ref().is_some_and(|a| a.entries.iter().any(|(k, _)| k.node == new));
                    let Some(t) = &ins.transform_arguments else {
                        if passed && new != name {
                            refused.get_or_insert(format!(
                                "cannot rename `{name}` to `{new}`: step `{}` of {} already passes `{new}`",
                                ins.execution_id.node,
                                f.display()
                            ));
                        }
                        continue;
                    };
                    let mut names = t
                        .variables
                        .iter()
                        .map(|(k, _)| k.node.as_str())
                        .chain(t.transforms.iter().map(|(k, _)| k.node.as_str()));
                    if new != name && (passed || names.any(|n| n == new)) {
                        refused.get_or_insert(format!(
                            "cannot rename `{name}` to `{new}`: step `{}` of {} already has a name `{new}` in its \
                             `arguments` or `transform_arguments`",
                            ins.execution_id.node,
                            f.display()
                        ));
                        continue;
                    }
                    if !t.transforms.iter().any(|(k, _)| k.node == name) {
                        continue;
                    }
                    let sym = Sym::Variable { block: t.span, name: name.to_string() };
                    out.extend(occs.iter().filter(|o| o.sym == sym).map(|o| (uri.clone(), text.clone(), o.clone())));
                }
            });
        }
        match refused {
            Some(why) => Err(why),
            None => Ok(out),
        }
    }

    fn offset(&self, doc: &Doc, pos: Position) -> usize {
        doc.text.offset(pos, self.encoding)
    }
}

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
fn key_hover(doc: &Doc, tool: Option<&ToolDef>, offset: usize) -> Option<(Span, String)> {
    let text = doc.text.as_str();
    let cx = json_context_at(text.get(..offset)?, tool);
    let (start, true) = cx.string? else { return None };
    let end = string_end(text, start)?;
    let name = decoded(text.get(start..end)?);
    let (level, key) = key_of(cx.level()?, &name)?;
    Some((Span::new(start - 1, end + 1), keys::describe(level, key)))
}

/// Where the JSON string whose text starts at `start` ends (its closing quote; escaped
/// quotes are inside it).
fn string_end(text: &str, start: usize) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in text.as_bytes().get(start..)?.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(start + i),
            b'\n' | b'\r' => return None,
            _ => {}
        }
    }
    None
}

/// The text of a JSON string as written between its quotes, its escapes decoded (as the
/// loader reads it: `"\u0072etry"` is the key `retry`); as written when it does not decode.
fn decoded(raw: &str) -> std::borrow::Cow<'_, str> {
    if !raw.contains('\\') {
        return raw.into();
    }
    serde_json::from_str::<String>(&format!("\"{raw}\"")).map_or(raw.into(), Into::into)
}

/// What the symbol under the cursor is: a step, a declaration, a callee, a function or a
/// transform variable.
fn symbol_hover(s: &Server, doc: &Doc, tool: &ToolDef, o: &Occurrence) -> Option<String> {
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
                if let Some(def) = s.view(&callee).and_then(|v| v.tool) {
                    t.push_str(&format!("\n\n{}", describe_tool(&def)));
                }
            }
            t
        }
        Sym::Argument { file, name } => {
            let def = s.view(file)?.tool?;
            let param = def.arguments.iter().find(|a| &a.name.node == name)?;
            format!("**argument** {}", describe_param(param))
        }
        Sym::Response { file, name } => {
            let def = s.view(file)?.tool?;
            let param = def.responses.iter().find(|a| &a.name.node == name)?;
            format!("**response** {}", describe_param(param))
        }
        Sym::ToolPath { path, file } => {
            let def = s.view(file.as_ref()?)?.tool?;
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
fn type_hover(doc: &Doc, tool: &ToolDef, offset: usize) -> Option<(Span, String)> {
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
fn compiled<'p>(plan: &'p crate::Plan, step: Option<usize>, args: bool, name: &str) -> Option<&'p crate::Program> {
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
fn transform_blocks(tool: &ToolDef) -> Vec<(Option<usize>, bool, &crate::tool::Transform)> {
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
fn variable_hover(doc: &Doc, tool: &ToolDef, block: Span, name: &str) -> Option<String> {
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

fn describe_param(p: &Param) -> String {
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
fn code(text: &str) -> String {
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
fn prose(text: &str) -> String {
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
fn describe_tool(def: &ToolDef) -> String {
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

/// `textDocument/definition`.
pub(super) fn definition(s: &Server, p: &GotoDefinitionParams) -> Option<GotoDefinitionResponse> {
    let tdp = &p.text_document_position_params;
    let doc = s.doc(&tdp.text_document.uri)?;
    let offset = s.offset(doc, tdp.position);
    let occs = s.doc_occurrences(doc);
    let o = symbols::at(occs, offset)?;
    let location = match &o.sym {
        Sym::ToolPath { file, .. } => {
            let uri = Url::from_file_path(file.as_ref()?).ok()?;
            Location { uri, range: Range::default() }
        }
        Sym::Function(_) => return None,
        sym => {
            let (uri, text, d) = s.all_occurrences(doc, sym).into_iter().find(|(_, _, o)| o.decl)?;
            Location { uri, range: text.range(d.span, s.encoding) }
        }
    };
    Some(GotoDefinitionResponse::Scalar(location))
}

/// `textDocument/references`.
pub(super) fn references(s: &Server, p: &ReferenceParams) -> Option<Vec<Location>> {
    let tdp = &p.text_document_position;
    let doc = s.doc(&tdp.text_document.uri)?;
    let offset = s.offset(doc, tdp.position);
    let occs = s.doc_occurrences(doc);
    let o = symbols::at(occs, offset)?;
    let all = s.all_occurrences(doc, &o.sym);
    Some(
        all.into_iter()
            .filter(|(_, _, o)| p.context.include_declaration || !o.decl)
            .map(|(uri, text, o)| Location { uri, range: text.range(o.span, s.encoding) })
            .collect(),
    )
}

/// `textDocument/rename`: an `execution_id` (every REF and dependency naming it, in its
/// file) or an argument (its REFs, and the `arguments` keys of every caller in the
/// workspace). A name that is not an identifier, is reserved or is taken is refused.
pub(super) fn rename(s: &Server, p: &RenameParams) -> Result<Option<WorkspaceEdit>, Failure> {
    let tdp = &p.text_document_position;
    let refuse = |m: String| (ErrorCode::InvalidRequest, m);
    let doc = s.doc(&tdp.text_document.uri).ok_or_else(|| refuse("the document is not open".into()))?;
    let offset = s.offset(doc, tdp.position);
    let occs = s.doc_occurrences(doc);
    let o = symbols::at(occs, offset)
        .ok_or_else(|| refuse("nothing to rename here: put the cursor on an execution id or an argument".into()))?;
    let new = p.new_name.as_str();
    if !is_identifier(new) {
        return Err(refuse(format!(
            "`{new}` is not a valid name: use letters, digits, `_` and `-`, not starting with a digit"
        )));
    }
    let sym = o.sym.clone();
    match &sym {
        Sym::Step { id, .. } => {
            let tool = doc
                .checked
                .as_ref()
                .and_then(|c| c.tool.as_ref())
                .ok_or_else(|| refuse("the file does not load".into()))?;
            // A REF may name a step by its callee's `output_key` (the default `expected_key`,
            // SPEC §5): that name is declared in the callee, not here, and renaming the REFs
            // alone would leave them naming nothing.
            let declared_here = tool
                .instructions()
                .iter()
                .any(|i| i.execution_id.node == *id || i.expected_key.as_ref().is_some_and(|k| k.node == *id));
            if !declared_here {
                return Err(refuse(format!(
                    "`{id}` is not an execution id or `expected_key` of this file (it is a callee's `output_key`, \
                     or names no step): rename it where it is declared"
                )));
            }
            if RESERVED_IDS.contains(&new) {
                return Err(refuse(format!("`{new}` is reserved: it cannot be an execution id")));
            }
            let taken = tool
                .instructions()
                .iter()
                .any(|i| i.execution_id.node == new || i.expected_key.as_ref().is_some_and(|k| k.node == new));
            if taken && new != id {
                return Err(refuse(format!("cannot rename `{id}` to `{new}`: a step `{new}` already exists")));
            }
        }
        Sym::Argument { file, name } => {
            let def = s.view(file).and_then(|v| v.tool).ok_or_else(|| refuse("the tool does not load".into()))?;
            let outputs = def.transform_arguments.iter().flat_map(|t| t.transforms.iter().map(|(k, _)| &k.node));
            let taken = def.arguments.iter().map(|a| &a.name.node).chain(outputs).any(|n| n == new);
            if taken && new != name {
                return Err(refuse(format!("cannot rename `{name}` to `{new}`: an argument `{new}` already exists")));
            }
            if !def.arguments.iter().any(|a| &a.name.node == name) {
                return Err(refuse(format!("`{name}` is not a declared argument of this tool")));
            }
        }
        _ => return Err(refuse("only an execution id or an argument can be renamed".into())),
    }
    let mut all = s.all_occurrences(doc, &sym);
    if let Sym::Argument { file, name } = &sym {
        all.extend(s.argument_in_callers(doc, file, name, new).map_err(refuse)?);
    }
    let mut changes: HashMap<Url, Vec<TextEdit>> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for (uri, text, o) in all {
        if !seen.insert((uri.clone(), o.span)) {
            continue;
        }
        changes
            .entry(uri)
            .or_default()
            .push(TextEdit { range: text.range(o.span, s.encoding), new_text: new.to_string() });
    }
    Ok(Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }))
}

/// Where the cursor is in the JSON text, read without a parser (the text may be broken
/// while typing).
#[derive(Debug, Default)]
struct JsonContext {
    /// For each open container: `(is_object, the key it is the value of)`; a container in
    /// a list takes the list's key.
    frames: Vec<(bool, Option<String>)>,
    /// When the innermost container is an object: the key whose value is being written.
    key: Option<String>,
    /// The string the cursor is in: where its text starts, whether it is a key.
    string: Option<(usize, bool)>,
}

/// What an open container is, found from the root down: an object of the format (its keys
/// are those of a [`Level`]), a list of such objects, or a value the writer shapes (an
/// instruction's `arguments`, a `default`, `done_value`, `enum`, `variables`…), whose keys
/// are the writer's at any depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Object(Level),
    List(Level),
    Free,
}

/// The key `name` of a `level` object; a condition may be a leaf or a group.
fn key_of(level: Level, name: &str) -> Option<(Level, &'static keys::Key)> {
    match level.key(name) {
        Some(k) => Some((level, k)),
        None if level == Level::ConditionLeaf => Some((Level::ConditionGroup, Level::ConditionGroup.key(name)?)),
        None => None,
    }
}

impl JsonContext {
    /// What each open container is, outermost first.
    fn containers(&self) -> Vec<Container> {
        let mut out: Vec<Container> = Vec::with_capacity(self.frames.len());
        for (is_object, key) in &self.frames {
            let this = match out.last() {
                None if *is_object => Container::Object(Level::Tool),
                None | Some(Container::Free) => Container::Free,
                Some(Container::List(level)) if *is_object => Container::Object(*level),
                Some(Container::List(_)) => Container::Free,
                Some(Container::Object(parent)) => {
                    match (key.as_deref().and_then(|k| key_of(*parent, k)).map(|(_, k)| k.shape), is_object) {
                        (Some(Shape::ListOf(level)), false) => Container::List(level),
                        (Some(Shape::One(level)), true) => Container::Object(level),
                        (Some(Shape::Conditions | Shape::DoneCheck), false) => Container::List(Level::ConditionLeaf),
                        (Some(Shape::Items), true) => Container::Object(Level::Element),
                        _ => Container::Free,
                    }
                }
            };
            out.push(this);
        }
        out
    }

    /// The kind of object the cursor is in, when it is one of the format's (its keys are
    /// those of [`keys::Level`]).
    fn level(&self) -> Option<Level> {
        match self.containers().last() {
            Some(Container::Object(level)) => Some(*level),
            _ => None,
        }
    }
}

/// Where the cursor at the end of `before` is. The text is read from its start, or from
/// the start of the instruction that holds the cursor (found in the last model, by
/// position), so that the cost does not grow with the steps before it.
fn json_context_at(before: &str, tool: Option<&ToolDef>) -> JsonContext {
    let at = before.len();
    let ins = tool.map_or(&[][..], ToolDef::instructions);
    let i = ins.partition_point(|i| (i.span.start as usize) <= at);
    if let Some(ins) = i.checked_sub(1).and_then(|i| ins.get(i)).filter(|i| at < i.span.end as usize) {
        // A list's frame takes its key; the instruction's own `{` opens the third frame.
        let frames = vec![(true, None), (false, Some("instructions".to_string()))];
        if let Some(from) = before.get(ins.span.start as usize..) {
            let mut cx = json_context(from, frames);
            // Offsets into `before`, not into the instruction.
            if let Some((start, _)) = &mut cx.string {
                *start += ins.span.start as usize;
            }
            return cx;
        }
    }
    json_context(before, Vec::new())
}

/// Where the cursor at the end of `before` is, `before` starting inside the containers
/// `frames`.
fn json_context(before: &str, frames: Vec<(bool, Option<String>)>) -> JsonContext {
    let mut cx = JsonContext { frames, ..JsonContext::default() };
    // The key of the value being written in each open container (objects only).
    let mut keys: Vec<Option<String>> = vec![None; cx.frames.len()];
    let mut last_string: Option<String> = None;
    let mut in_string: Option<usize> = None;
    let mut escaped = false;
    for (i, c) in before.char_indices() {
        if let Some(start) = in_string {
            if c == '\n' || c == '\r' {
                // A JSON string cannot hold a line break: one left open while typing ends at
                // its line, and the lines after it are read as they are.
                in_string = None;
                escaped = false;
            } else if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                last_string = Some(decoded(&before[start..i]).into_owned());
                in_string = None;
            }
            continue;
        }
        match c {
            '"' => in_string = Some(i + 1),
            ':' => {
                if let Some(k) = keys.last_mut() {
                    *k = last_string.take();
                }
            }
            ',' => {
                if let Some(k) = keys.last_mut() {
                    *k = None;
                }
            }
            '{' | '[' => {
                let key = match cx.frames.last() {
                    Some((true, _)) => keys.last().cloned().flatten(),
                    Some((false, k)) => k.clone(),
                    None => None,
                };
                cx.frames.push((c == '{', key));
                keys.push(None);
            }
            '}' | ']' => {
                cx.frames.pop();
                keys.pop();
            }
            _ => {}
        }
    }
    let in_object = cx.frames.last().is_some_and(|f| f.0);
    cx.key = if in_object { keys.last().cloned().flatten() } else { None };
    if let Some(start) = in_string {
        cx.string = Some((start, in_object && cx.key.is_none()));
    }
    cx
}

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
fn param_item(item: &dyn Fn(&str, CompletionItemKind, Option<String>) -> CompletionItem, p: &Param) -> CompletionItem {
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
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_string()
}

/// The REF being written at the end of `prefix` (`REF:step.fi` → `step.fi`).
fn last_ref(prefix: &str) -> Option<&str> {
    let at = prefix.rfind("REF:")?;
    let rest = &prefix[at + 4..];
    rest.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')).then_some(rest)
}

/// The callee of the instruction whose text holds `offset`.
fn step_callee_at(s: &Server, doc: &Doc, tool: Option<&ToolDef>, offset: usize) -> Option<Arc<ToolDef>> {
    let ins = tool?.instructions().iter().find(|i| i.span.range().contains(&offset))?;
    callee_def(s, doc, ins.tool_path()?)
}

fn callee_def(s: &Server, doc: &Doc, tool_path: &str) -> Option<Arc<ToolDef>> {
    let file = Resolver { root: &doc.root.0 }.file(tool_path)?;
    s.view(&file)?.tool
}

fn ref_completion(
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
fn expression_completion(
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
fn enclosing_call(prefix: &str) -> Option<&str> {
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
fn element_names(prefix: &str) -> Vec<(&str, &str)> {
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
fn element_name_in(args: &str) -> Option<&str> {
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

/// `textDocument/codeAction`: the "did you mean" suggestions, and declaring an argument
/// a REF names but the tool does not declare.
pub(super) fn code_actions(s: &Server, p: &CodeActionParams) -> Option<Vec<CodeActionOrCommand>> {
    let uri = &p.text_document.uri;
    let doc = s.doc(uri)?;
    let checked = doc.checked.as_ref()?;
    let want = doc.text.span(p.range, s.encoding);
    let src = doc.text.as_str();
    let mut out = Vec::new();
    for d in &checked.diagnostics {
        if d.span.end < want.start || d.span.start > want.end {
            continue;
        }
        let lsp_diag = s.to_lsp(uri, &doc.text, d);
        let edit = |range: Range, new_text: String| WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), vec![TextEdit { range, new_text }])])),
            ..WorkspaceEdit::default()
        };
        if let Some(suggestion) = d.help.as_deref().and_then(suggested) {
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
                if let Some((at, text)) = declare_argument(src, name) {
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
fn suggested(help: &str) -> Option<&str> {
    let rest = help.strip_prefix("did you mean `")?;
    rest.strip_suffix("`?")
}

/// Where to insert a declaration of argument `name`, and the text: at the end of the
/// `arguments` list, or a new `arguments` key first in the object.
fn declare_argument(src: &str, name: &str) -> Option<(usize, String)> {
    let (root, _) = crate::tool::json::parse(src);
    let root = root?;
    let entries = root.as_object()?;
    let decl = format!("{{\"name\": \"{name}\", \"type_name\": \"any\", \"required\": true}}");
    match entries.iter().find(|(k, _)| k.node == "arguments").map(|(_, v)| v) {
        Some(list) => {
            let JsonKind::List(items) = &list.kind else { return None };
            let at = list.span.end as usize - 1;
            match items.last() {
                Some(last) => Some((last.span.end as usize, format!(", {decl}"))),
                None => Some((at, decl)),
            }
        }
        None => Some((root.span.start as usize + 1, format!("\n  \"arguments\": [{decl}],"))),
    }
}
