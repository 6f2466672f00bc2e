//! Definition, references and rename, and the workspace's files and occurrences they read
//! (hover, completion and code actions are `hover.rs`, `completion.rs`, `actions.rs`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use lsp_server::ErrorCode;
use lsp_types::{
    GotoDefinitionParams, GotoDefinitionResponse, Location, Position, Range, ReferenceParams, RenameParams, TextEdit,
    Url, WorkspaceEdit,
};

use super::symbols::{self, Occurrence, Resolver, Sym};
use super::{Doc, Failure, Server, Text};
use crate::tool::{is_identifier, ToolDef, RESERVED_IDS};

/// The most files and folders one walk of a root reads for references and rename: a
/// workspace folder of `/` or a home folder is walked again for each request (6 s for `/`
/// of a small machine; minutes for a home folder), so the walk stops here, and rename,
/// which must see every caller, is then refused.
pub(super) const MAX_WALKED_ENTRIES: usize = 50_000;

/// What [`Server::file_occurrences`] calls for a file: its URI, text, model and occurrences.
type EachFile<'a> = dyn FnMut(&Url, &Text, &ToolDef, &[Occurrence]) + 'a;

/// The files on disk that requests read, loaded, by path: references and rename read every
/// file of the root for each request, and loading them again each time was most of a
/// rename's work (48 ms each over the 88 files of the check corpus in a debug build). A
/// file is read each time still, and its model reused only when the text is the same, so
/// an edit made outside the editor is seen by the next request. Files over
/// [`DiskFiles::FILE_BYTES`] are not kept, and past [`DiskFiles::TOTAL_BYTES`] of text
/// kept the table starts again empty.
#[derive(Default)]
pub(super) struct DiskFiles {
    files: HashMap<PathBuf, Rc<FileView>>,
    bytes: usize,
}

impl DiskFiles {
    const FILE_BYTES: usize = 256 * 1024;
    const TOTAL_BYTES: usize = 64 * 1024 * 1024;

    /// The view of `path` kept, when its text is still `text`.
    fn get(&self, path: &Path, text: &str) -> Option<Rc<FileView>> {
        self.files.get(path).filter(|v| v.text.as_str() == text).cloned()
    }

    /// Keeps `view` as the view of `path` (replacing an older one).
    fn keep(&mut self, path: &Path, view: &Rc<FileView>) {
        let len = view.text.as_str().len();
        if len > DiskFiles::FILE_BYTES {
            return;
        }
        if self.bytes + len > DiskFiles::TOTAL_BYTES {
            self.files.clear();
            self.bytes = 0;
        }
        if let Some(old) = self.files.insert(path.to_path_buf(), view.clone()) {
            self.bytes -= old.text.as_str().len();
        }
        self.bytes += len;
    }
}

/// A file of the workspace on disk: its text and model.
pub(super) struct FileView {
    pub(super) uri: Url,
    pub(super) text: Text,
    pub(super) tool: Option<Arc<ToolDef>>,
    /// Its occurrences, found the last time, and the files its steps called then
    /// ([`symbols::callees`]): they are found again when those change (a callee created,
    /// removed or moved), and otherwise depend on the text alone.
    occurrences: RefCell<Option<KeptOccurrences>>,
}

/// A file's occurrences and the files its steps called when they were found.
type KeptOccurrences = (Vec<Option<PathBuf>>, Rc<Vec<Occurrence>>);

/// A place a symbol is named, with its range already converted (each file's text is read
/// where it is, never copied for each place: a step with 8,000 REFs in a 1 MB file made
/// 8,000 copies of it, 8.7 GB, for one `references`).
pub(super) type Found = (Url, Range, Occurrence);

impl Server {
    pub(super) fn doc(&self, uri: &Url) -> Option<&Doc> {
        self.docs.get(uri)
    }

    /// The occurrences in an open document, from its last check (found once per check).
    pub(super) fn doc_occurrences<'d>(&self, doc: &'d Doc) -> &'d [Occurrence] {
        doc.occurrences.get_or_init(|| {
            let Some(tool) = doc.checked.as_ref().and_then(|c| c.tool.as_ref()) else { return Vec::new() };
            symbols::occurrences(&self.engine, &doc.path, tool, &Resolver { root: &doc.root.0 })
        })
    }

    /// The model of a file by path: the open document's (of its last check) when there is
    /// one, else the file's on disk.
    pub(super) fn tool_at(&self, path: &Path) -> Option<Arc<ToolDef>> {
        if let Some(d) = self.docs.values().find(|d| d.path == path) {
            return match d.checked.as_ref().and_then(|c| c.tool.clone()) {
                Some(t) => Some(t),
                None => crate::tool::load(d.text.as_str()).0.map(Arc::new),
            };
        }
        self.disk_view(path)?.tool.clone()
    }

    /// A file on disk, read and loaded: loaded again only when its text changed since the
    /// last request that read it ([`DiskFiles`]).
    fn disk_view(&self, path: &Path) -> Option<Rc<FileView>> {
        let text = crate::input::read_text(path).ok()?;
        if let Some(view) = self.disk.borrow().get(path, &text) {
            return Some(view);
        }
        let (tool, _) = crate::tool::load(&text);
        let view = Rc::new(FileView {
            uri: Url::from_file_path(path).ok()?,
            text: Text::new(text),
            tool: tool.map(Arc::new),
            occurrences: RefCell::default(),
        });
        self.disk.borrow_mut().keep(path, &view);
        Some(view)
    }

    /// Every `.tool` file under `root` (open documents included), sorted, and whether the
    /// walk saw the whole root: it stops after [`MAX_WALKED_ENTRIES`].
    pub(super) fn workspace_files(&self, root: &Path) -> (Vec<PathBuf>, bool) {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        let mut walked = 0usize;
        let mut whole = true;
        'walk: while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                walked += 1;
                // A cancelled request stops here too (its answer is `-32800`).
                if walked > MAX_WALKED_ENTRIES || (walked.is_multiple_of(256) && self.cancelled()) {
                    whole = false;
                    break 'walk;
                }
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
        (found, whole)
    }

    /// Every occurrence of `sym` in the workspace of `doc`.
    pub(super) fn all_occurrences(&self, doc: &Doc, sym: &Sym) -> Vec<Found> {
        let local = matches!(sym, Sym::Step { .. } | Sym::Variable { .. });
        // A walk cut short finds fewer places: references say what they found.
        let files = if local { vec![doc.path.clone()] } else { self.workspace_files(&doc.root.0).0 };
        let mut out = Vec::new();
        for f in files {
            if self.cancelled() {
                break;
            }
            self.file_occurrences(&f, &mut |uri, text, _, occs| {
                out.extend(occs.iter().filter(|o| &o.sym == sym).map(|o| found(uri, text, o, self.encoding)))
            });
        }
        out
    }

    /// Calls `each` with a file's URI, text, model and occurrences (the open document's
    /// from its last check, else the file on disk's); nothing when it does not load.
    pub(super) fn file_occurrences(&self, f: &Path, each: &mut EachFile<'_>) {
        if let Some((uri, d)) = self.docs.iter().find(|(_, d)| d.path == f) {
            if let Some(tool) = d.checked.as_ref().and_then(|c| c.tool.as_ref()) {
                each(uri, &d.text, tool, self.doc_occurrences(d));
                return;
            }
        }
        let Some(view) = self.disk_view(f) else { return };
        let Some(tool) = &view.tool else { return };
        let root = self.root_for(f).0;
        // The occurrences found for this text before, while its steps call the same files.
        let callees = symbols::callees(tool, &Resolver { root: &root });
        let kept = view.occurrences.borrow().as_ref().filter(|(c, _)| *c == callees).map(|(_, o)| o.clone());
        let occs = match kept {
            Some(occs) => occs,
            None => {
                let occs = Rc::new(symbols::occurrences_with(&self.engine, f, tool, callees.clone()));
                *view.occurrences.borrow_mut() = Some((callees, occs.clone()));
                occs
            }
        };
        each(&view.uri, &view.text, tool, &occs);
    }

    /// Renaming argument `name` of the tool in `callee` to `new`: what else must change in
    /// its callers besides their `arguments` keys — each caller step's `transform_arguments`
    /// output `name` (it is that argument) and the names in that block's expressions that
    /// read it. Refused when `new` is already a name there or a key of the step's
    /// `arguments` (issue 28: the rename left those, and `check` then reported E0611 and
    /// E0101).
    pub(super) fn argument_in_callers(
        &self,
        doc: &Doc,
        callee: &Path,
        name: &str,
        new: &str,
    ) -> Result<Vec<Found>, String> {
        let mut out = Vec::new();
        let mut refused = None;
        let (files, whole) = self.workspace_files(&doc.root.0);
        if !whole {
            return Err(format!(
                "cannot rename `{name}`: the tool root {} holds more than {MAX_WALKED_ENTRIES} files and folders, so \
                 its callers cannot all be found; mark a narrower root with a `.tdsl-root` file",
                doc.root.0.display()
            ));
        }
        for f in files {
            if self.cancelled() {
                break;
            }
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
                                occs.iter().filter(|o| o.sym == sym).map(|o| found(uri, text, o, self.encoding)),
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
                    out.extend(occs.iter().filter(|o| o.sym == sym).map(|o| found(uri, text, o, self.encoding)));
                }
            });
        }
        match refused {
            Some(why) => Err(why),
            None => Ok(out),
        }
    }

    pub(super) fn offset(&self, doc: &Doc, pos: Position) -> usize {
        doc.text.offset(pos, self.encoding)
    }
}

fn found(uri: &Url, text: &Text, o: &Occurrence, enc: super::Encoding) -> Found {
    (uri.clone(), text.range(o.span, enc), o.clone())
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
            let (uri, range, _) = s.all_occurrences(doc, sym).into_iter().find(|(_, _, o)| o.decl)?;
            Location { uri, range }
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
            .map(|(uri, range, _)| Location { uri, range })
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
            let def = s.tool_at(file).ok_or_else(|| refuse("the tool does not load".into()))?;
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
    for (uri, range, o) in all {
        if !seen.insert((uri.clone(), o.span)) {
            continue;
        }
        changes.entry(uri).or_default().push(TextEdit { range, new_text: new.to_string() });
    }
    Ok(Some(WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(path: &Path, len: usize) -> Rc<FileView> {
        Rc::new(FileView {
            uri: Url::from_file_path(path).unwrap_or_else(|()| Url::parse("file:///x").unwrap()),
            text: Text::new("x".repeat(len)),
            tool: None,
            occurrences: RefCell::default(),
        })
    }

    /// The files kept stay within their bounds: a file too large is not kept, and past the
    /// total the table starts again; a file's view is found only for the same text.
    #[test]
    fn disk_files_are_kept_within_bounds() {
        let mut disk = DiskFiles::default();
        let small = Path::new("/r/small.tool");
        disk.keep(small, &view(small, 10));
        assert!(disk.get(small, &"x".repeat(10)).is_some());
        assert!(disk.get(small, &"x".repeat(11)).is_none(), "another text is loaded again");
        let big = Path::new("/r/big.tool");
        disk.keep(big, &view(big, DiskFiles::FILE_BYTES + 1));
        assert!(disk.get(big, &"x".repeat(DiskFiles::FILE_BYTES + 1)).is_none());
        assert_eq!(disk.bytes, 10);
        // Replacing a file's view counts its new text, not both.
        disk.keep(small, &view(small, 20));
        assert_eq!(disk.bytes, 20);
        let per = DiskFiles::FILE_BYTES;
        for i in 0..(DiskFiles::TOTAL_BYTES / per + 1) {
            let p = PathBuf::from(format!("/r/f{i}.tool"));
            disk.keep(&p, &view(&p, per));
            assert!(disk.bytes <= DiskFiles::TOTAL_BYTES, "{} bytes kept", disk.bytes);
        }
        assert!(disk.files.len() < DiskFiles::TOTAL_BYTES / per, "the table started again");
    }
}
