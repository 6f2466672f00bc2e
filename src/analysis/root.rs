//! The tool root: where `tool_definition_path`s point, and the callees loaded from it.
//!
//! A `tool_definition_path` such as `/tools/scanner.tool` names a file under the root
//! directory (the leading `/` is the root, not the file system's). Each callee is read and
//! loaded once, whatever number of steps or tools call it, and kept for the cross-tool checks
//! (declared arguments and responses, recursion). Loading a callee never checks it: its own
//! problems are reported when it is checked itself.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::{Code, Diagnostic};
use crate::tool::{self, JsonNode, ToolDef};

/// What to do with a `tool_definition_path` that names no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingCallees {
    /// Report it (`E0601`): the root was given, so every callee must be in it.
    Error,
    /// Skip the cross-tool checks for that step: the root is only a guess (the current
    /// directory when `--root` is not given).
    Skip,
}

/// A directory that `tool_definition_path`s resolve against, with the callees loaded so far.
#[derive(Debug)]
pub struct ToolRoot {
    dir: PathBuf,
    missing: MissingCallees,
    /// Loaded tools by canonical file path.
    loaded: HashMap<PathBuf, Arc<LoadedTool>>,
    /// Resolutions by `tool_definition_path` as written.
    resolved: HashMap<String, Resolved>,
    /// [`ToolRoot::cycle_from`] results by canonical file path.
    cycles: HashMap<PathBuf, Option<Vec<String>>>,
    /// [`ToolRoot::nesting_from`] by canonical file path: how many composites deep the
    /// deepest chain of calls from that tool goes (itself included), and its next link (the
    /// tool path called and its file).
    nesting: HashMap<PathBuf, (usize, Option<(String, PathBuf)>)>,
    /// Tools known by name rather than as files (an upstream MCP server's), asked first.
    named: Option<std::sync::Arc<dyn NamedTools>>,
    /// Why the names `named` refused were refused, by name.
    refusals: HashMap<String, NameRefusal>,
}

/// Tools a host knows by name rather than as files under the root: the tools of the upstream
/// MCP servers of `tdsl check --upstream` and `tdsl run --upstream`, `SERVER/TOOL`. A
/// `tool_definition_path` is offered to them before it is looked for under the root (once per
/// name: the answer is kept).
pub trait NamedTools: Send + Sync + std::fmt::Debug {
    /// The tool `tool_path` names, or why that name cannot be called; `None` when it is none
    /// of these tools' names (it is then looked for under the root).
    fn resolve(&self, tool_path: &str) -> Option<Result<Arc<LoadedTool>, NameRefusal>>;
}

/// Why [`NamedTools`] refused a name it owns: an upstream server that offers no such tool
/// (`E0901`), or that could not be listed (`E0903`). The name resolves to
/// [`Resolved::Invalid`] with the message, and the analysis reports the rest
/// ([`ToolRoot::refusal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameRefusal {
    /// The diagnostic's code.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// The label at the `tool_definition_path`.
    pub label: String,
    /// What to do.
    pub help: String,
}

/// A tool file read from the root.
#[derive(Debug)]
pub struct LoadedTool {
    /// The canonical file path.
    pub file: PathBuf,
    /// The tool path it was first reached by (`/tools/scanner.tool`), for messages.
    pub tool_path: String,
    /// The file's text.
    pub source: Arc<str>,
    /// The model, when the file is a JSON object whose kind can be told.
    pub def: Option<ToolDef>,
    /// What loading found (JSON and schema problems only).
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the file has an `arguments` key: without one, the tool declares nothing about
    /// its arguments and any are accepted.
    pub declares_arguments: bool,
    /// Whether the file has a `responses` key: without one, the tool's result fields are
    /// unknown and REFs into them are not checked.
    pub declares_responses: bool,
    /// Types of its declarations that say more than their `type_name`s (an upstream MCP
    /// tool's schemas: the fields of nested objects and list elements), when known.
    pub exact: Option<Arc<ExactTypes>>,
}

/// The static types of a tool's declarations where they are known beyond the `type_name`
/// (`list<object>` of a declaration, `list<{id: string, …}>` from the schema), by name: the
/// type of a declared value (`null` added by the analysis when it is optional, as for any
/// declaration). A name without one has its `type_name`'s type.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactTypes {
    /// By argument name.
    pub arguments: HashMap<String, crate::types::Type>,
    /// By response name.
    pub responses: HashMap<String, crate::types::Type>,
    /// Whether the result may hold fields besides the declared responses (an output
    /// schema with `additionalProperties` other than `false`, or `patternProperties`): it
    /// then stays an open object even where declared results are closed.
    pub responses_open: bool,
}

impl LoadedTool {
    /// Whether loading found errors (the model is then partial or absent).
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Loads a tool from its text.
    pub fn from_source(file: PathBuf, tool_path: String, source: Arc<str>) -> LoadedTool {
        let (def, json, diagnostics) = tool::load_with_tree(&source);
        let has = |key: &str| {
            json.as_ref()
                .and_then(JsonNode::as_object)
                .is_some_and(|entries| entries.iter().any(|(k, _)| k.node == key))
        };
        let (declares_arguments, declares_responses) = (has("arguments"), has("responses"));
        LoadedTool { file, tool_path, source, def, diagnostics, declares_arguments, declares_responses, exact: None }
    }

    /// With the exact types of its declarations.
    pub fn with_exact(mut self, exact: ExactTypes) -> LoadedTool {
        self.exact = Some(Arc::new(exact));
        self
    }
}

/// What a `tool_definition_path` resolves to.
#[derive(Clone, Debug)]
pub enum Resolved {
    /// The tool, loaded.
    Found(Arc<LoadedTool>),
    /// No file there (the path it was looked for at).
    Missing(PathBuf),
    /// The path cannot name a file under the root, or the file cannot be read.
    Invalid(String),
}

/// Every `.tool` file under `dir`, sorted by path. Symbolic links to folders are not
/// followed, so the walk always ends; it iterates (a heap stack of folders), so any depth
/// is fine. The error names the folder that could not be read.
pub(crate) fn tool_files_under(dir: &Path) -> Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => return Err((dir, e)),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => return Err((dir, e)),
            };
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "tool") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

impl ToolRoot {
    /// A root that was given: every callee must resolve in it.
    pub fn new(dir: impl Into<PathBuf>) -> ToolRoot {
        ToolRoot::with_policy(dir, MissingCallees::Error)
    }

    /// A root that was assumed (the current directory): callees that do not resolve are
    /// not checked, and not reported.
    pub fn assumed(dir: impl Into<PathBuf>) -> ToolRoot {
        ToolRoot::with_policy(dir, MissingCallees::Skip)
    }

    /// A root with an explicit policy for missing callees.
    pub fn with_policy(dir: impl Into<PathBuf>, missing: MissingCallees) -> ToolRoot {
        ToolRoot {
            dir: dir.into(),
            missing,
            loaded: HashMap::new(),
            resolved: HashMap::new(),
            cycles: HashMap::new(),
            nesting: HashMap::new(),
            named: None,
            refusals: HashMap::new(),
        }
    }

    /// The same root, asking `tools` first what a `tool_definition_path` names.
    pub fn with_named(mut self, tools: Arc<dyn NamedTools>) -> ToolRoot {
        self.named = Some(tools);
        self
    }

    /// Why the tools known by name refused `tool_path`, when they did (it resolved to
    /// [`Resolved::Invalid`]).
    pub fn refusal(&self, tool_path: &str) -> Option<&NameRefusal> {
        self.refusals.get(tool_path)
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The policy for callees that do not resolve.
    pub fn missing_callees(&self) -> MissingCallees {
        self.missing
    }

    /// The file a tool path names: the root joined with the path, which may not leave the
    /// root through `..`.
    pub fn file_path(&self, tool_path: &str) -> Result<PathBuf, String> {
        let mut out = self.dir.clone();
        let mut depth = 0usize;
        for c in Path::new(tool_path).components() {
            match c {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::Normal(part) => {
                    out.push(part);
                    depth += 1;
                }
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(format!("`{tool_path}` leaves the tool root through `..`"));
                    }
                    out.pop();
                    depth -= 1;
                }
            }
        }
        if depth == 0 {
            return Err(format!("`{tool_path}` names the tool root itself, not a file"));
        }
        Ok(out)
    }

    /// The tool path (`/tools/main.tool`) of a file under the root, if it is under it.
    pub fn tool_path_of(&self, file: &Path) -> Option<String> {
        let dir = std::fs::canonicalize(&self.dir).ok()?;
        let file = std::fs::canonicalize(file).ok()?;
        let rel = file.strip_prefix(&dir).ok()?;
        let parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        Some(format!("/{}", parts.join("/")))
    }

    /// Uses `source` as the text of `file` (a canonical path under the root) instead of
    /// what is on disk: an editor's unsaved buffer (`tdsl lsp`).
    pub fn preload(&mut self, file: PathBuf, tool_path: String, source: Arc<str>) {
        let t = Arc::new(LoadedTool::from_source(file.clone(), tool_path, source));
        self.loaded.insert(file, t);
    }

    /// Makes the `tool_definition_path` `written` resolve to `to`, whatever the root holds:
    /// how a plan (`crate::plans`) names a tool by its served name (`summarize` for
    /// `/tools/summarize.tool`) or calls an upstream server's tool (`SERVER/TOOL`), and how
    /// it keeps a tool it may not call out of the checks that follow.
    pub fn alias(&mut self, written: &str, to: Resolved) {
        self.resolved.insert(written.to_string(), to);
    }

    /// Resolves and loads a `tool_definition_path` (once per path and per file).
    pub fn resolve(&mut self, tool_path: &str) -> Resolved {
        if let Some(r) = self.resolved.get(tool_path) {
            return r.clone();
        }
        let r = match self.named.as_ref().and_then(|n| n.resolve(tool_path)) {
            Some(Ok(t)) => Resolved::Found(t),
            Some(Err(refusal)) => {
                let r = Resolved::Invalid(refusal.message.clone());
                self.refusals.insert(tool_path.to_string(), refusal);
                r
            }
            None => self.resolve_uncached(tool_path),
        };
        self.resolved.insert(tool_path.to_string(), r.clone());
        r
    }

    fn resolve_uncached(&mut self, tool_path: &str) -> Resolved {
        let path = match self.file_path(tool_path) {
            Ok(p) => p,
            Err(e) => return Resolved::Invalid(e),
        };
        if !path.is_file() {
            return Resolved::Missing(path);
        }
        let file = std::fs::canonicalize(&path).unwrap_or(path);
        if let Some(t) = self.loaded.get(&file) {
            return Resolved::Found(t.clone());
        }
        match crate::input::read_text(&file) {
            Ok(text) => {
                let t = Arc::new(LoadedTool::from_source(file.clone(), tool_path.to_string(), Arc::from(text)));
                self.loaded.insert(file, t.clone());
                Resolved::Found(t)
            }
            Err(e) => Resolved::Invalid(format!("cannot read {}: {e}", file.display())),
        }
    }

    /// A walk through callees from `start` that ends on a tool already on the walk
    /// (`[a, b, c, b]`), when `start` can reach a cycle of calls. Each file is explored once
    /// per root: results are kept.
    pub fn cycle_from(&mut self, start: &Arc<LoadedTool>) -> Option<Vec<String>> {
        struct Frame {
            tool: Arc<LoadedTool>,
            callees: Vec<String>,
            next: usize,
            found: Option<Vec<String>>,
        }
        let frame = |tool: Arc<LoadedTool>| {
            let callees = tool
                .def
                .as_ref()
                .map(|d| d.instructions().iter().filter_map(|i| i.tool_path().map(str::to_string)).collect())
                .unwrap_or_default();
            Frame { tool, callees, next: 0, found: None }
        };
        if let Some(r) = self.cycles.get(&start.file) {
            return r.clone();
        }
        let mut stack = vec![frame(start.clone())];
        while let Some(top) = stack.last_mut() {
            let done = top.found.is_some() || top.next >= top.callees.len();
            if done {
                let Some(finished) = stack.pop() else { break };
                self.cycles.insert(finished.tool.file.clone(), finished.found.clone());
                match stack.last_mut() {
                    Some(parent) => {
                        if let Some(chain) = finished.found {
                            parent.found = Some(prefixed(&parent.tool.tool_path, chain));
                        }
                    }
                    None => return finished.found,
                }
                continue;
            }
            let path = top.callees[top.next].clone();
            top.next += 1;
            let Resolved::Found(callee) = self.resolve(&path) else { continue };
            if let Some(pos) = stack.iter().position(|f| f.tool.file == callee.file) {
                let mut chain: Vec<String> = stack[pos..].iter().map(|f| f.tool.tool_path.clone()).collect();
                chain.push(path);
                // Start the walk at the tool that found it, so parents can prefix themselves.
                let last = chain.len() - 2;
                let walk: Vec<String> = chain[last..].iter().chain(&chain[1..=last]).cloned().collect();
                if let Some(top) = stack.last_mut() {
                    top.found = Some(walk);
                }
                continue;
            }
            match self.cycles.get(&callee.file) {
                Some(Some(chain)) => {
                    let chain = chain.clone();
                    if let Some(top) = stack.last_mut() {
                        top.found = Some(prefixed(&top.tool.tool_path, chain));
                    }
                }
                Some(None) => {}
                None => stack.push(frame(callee)),
            }
        }
        None
    }
}

impl ToolRoot {
    /// The deepest chain of composite calls from `start`: the tool paths of the composites
    /// that would run nested inside each other, `start` first (empty when `start` is not a
    /// composite). A run nests `start`'s callee chain that many levels below the caller
    /// (`exec::Options::max_depth`). Calls back into a tool already on the chain (recursion,
    /// reported by [`ToolRoot::cycle_from`]) are not followed. Each file is explored once
    /// per root, without recursion.
    pub fn nesting_from(&mut self, start: &Arc<LoadedTool>) -> Vec<String> {
        struct Frame {
            tool: Arc<LoadedTool>,
            /// The tool path it was called by.
            via: String,
            callees: Vec<String>,
            next: usize,
            best: (usize, Option<(String, PathBuf)>),
        }
        let composite = |t: &LoadedTool| t.def.as_ref().is_some_and(ToolDef::is_composite);
        let frame = |tool: Arc<LoadedTool>, via: String| {
            let callees = tool
                .def
                .as_ref()
                .map(|d| d.instructions().iter().filter_map(|i| i.tool_path().map(str::to_string)).collect())
                .unwrap_or_default();
            Frame { tool, via, callees, next: 0, best: (0, None) }
        };
        if !composite(start) {
            return Vec::new();
        }
        if !self.nesting.contains_key(&start.file) {
            let mut stack = vec![frame(start.clone(), start.tool_path.clone())];
            while let Some(top) = stack.last_mut() {
                if top.next >= top.callees.len() {
                    let Some(done) = stack.pop() else { break };
                    let height = done.best.0 + 1;
                    self.nesting.insert(done.tool.file.clone(), (height, done.best.1));
                    if let Some(parent) = stack.last_mut() {
                        if height > parent.best.0 {
                            parent.best = (height, Some((done.via, done.tool.file.clone())));
                        }
                    }
                    continue;
                }
                let path = top.callees[top.next].clone();
                top.next += 1;
                let Resolved::Found(callee) = self.resolve(&path) else { continue };
                if !composite(&callee) || stack.iter().any(|f| f.tool.file == callee.file) {
                    continue;
                }
                match self.nesting.get(&callee.file) {
                    Some(&(height, _)) => {
                        if let Some(top) = stack.last_mut() {
                            if height > top.best.0 {
                                top.best = (height, Some((path, callee.file.clone())));
                            }
                        }
                    }
                    None => stack.push(frame(callee, path)),
                }
            }
        }
        let mut chain = vec![start.tool_path.clone()];
        let mut at = start.file.clone();
        while let Some((_, Some((path, file)))) = self.nesting.get(&at) {
            if chain.len() > self.nesting.len() {
                break;
            }
            chain.push(path.clone());
            at = file.clone();
        }
        chain
    }
}

/// `head` followed by `chain`, cut just after the first tool that repeats.
pub(crate) fn prefixed(head: &str, chain: Vec<String>) -> Vec<String> {
    let mut out = vec![head.to_string()];
    for t in chain {
        let repeat = out.contains(&t);
        out.push(t);
        if repeat {
            break;
        }
    }
    out
}
