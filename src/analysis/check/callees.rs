//! Pass 1, the callees: every `tool_definition_path` resolved against the root (each file loaded
//! once), recursion and nesting through them, and the other names a step's result goes by.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;

use super::{plural, Checker};
use crate::analysis::refs::Fields;
use crate::analysis::root::{prefixed, LoadedTool, MissingCallees, Resolved, ToolRoot};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};

impl<'a> Checker<'a> {
    /// A step without an `expected_key` is also known by its callee's `output_key` (seed
    /// 002, SPEC §5), unless that name is already an execution id or an `expected_key`, or
    /// several such steps call tools with that `output_key`: then REFs could not tell them
    /// apart, and the name is left to nobody (a REF to it says why).
    pub(super) fn default_keys(&mut self) {
        let mut by_key: IndexMap<Arc<str>, Vec<usize>> = IndexMap::new();
        for (i, s) in self.steps.iter().enumerate() {
            if s.ins.expected_key.is_some() {
                continue;
            }
            let Some(key) = s.callee.as_ref().and_then(|c| c.def.as_ref()).and_then(|d| d.output_key.as_ref()) else {
                continue;
            };
            by_key.entry(Arc::from(key.node.as_str())).or_default().push(i);
        }
        for (key, users) in by_key {
            if self.ids.contains_key(&key) {
                continue;
            }
            if let [only] = users[..] {
                self.ids.insert(key.clone(), only);
                self.steps[only].key = Some(key);
            } else {
                self.ambiguous_keys.insert(key, users);
            }
        }
    }

    /// A composite callee whose own composite callees nest deeper than a run allows (E0619):
    /// the chain, once, at the step that starts it.
    pub(super) fn too_deep(
        &mut self,
        root: &mut ToolRoot,
        callee: &Arc<LoadedTool>,
        name: &str,
        path: &crate::span::Spanned<String>,
        max_nesting: usize,
    ) {
        let chain = root.nesting_from(callee);
        let depth = chain.len();
        if depth <= max_nesting {
            return;
        }
        let walk = std::iter::once(name).chain(chain.iter().map(String::as_str)).collect::<Vec<_>>().join(" → ");
        self.diags.push(
            Diagnostic::new(
                Code::CompositesTooDeep,
                path.span,
                format!("`{}` nests composites {depth} deep, past the limit of {max_nesting}: {walk}", path.node),
            )
            .with_label(format!("{depth} composites deep from here"))
            .with_help(if crate::ranges::MAX_NESTING.contains(depth as f64) {
                format!(
                    "a run refuses to start a composite nested deeper than {max_nesting} (E0810): call fewer composites inside each other, or raise the limit with \
                     `tdsl run --max-nesting {depth}` (and check with `tdsl check --max-nesting {depth}`)"
                )
            } else {
                format!(
                    "a run refuses to start a composite nested deeper than {max_nesting} (E0810), and no run nests composites deeper than {}: call fewer composites inside each other",
                    crate::ranges::MAX_NESTING.max
                )
            }),
        );
    }

    /// Resolves every callee, reports those that do not resolve or load, and recursion.
    pub(super) fn callees(&mut self, root: &mut ToolRoot, name: &str, max_nesting: usize) {
        let mut reported: HashSet<String> = HashSet::new();
        let mut suggestions: HashMap<String, Option<String>> = HashMap::new();
        for i in 0..self.steps.len() {
            let ins = self.steps[i].ins;
            let Some(path) = &ins.tool_definition_path else {
                // A transform step calls nothing.
                self.steps[i].fields = self.known_fields(i);
                continue;
            };
            match root.resolve(&path.node) {
                Resolved::Found(t) => {
                    if t.has_errors() {
                        let n = t.diagnostics.iter().filter(|d| d.is_error()).count();
                        self.diags.push(
                            Diagnostic::new(
                                Code::CalleeInvalid,
                                path.span,
                                format!("callee `{}` does not load: it has {n} error{}", path.node, plural(n)),
                            )
                            .with_label("this tool has errors")
                            .with_help(format!("check `{}` on its own to see them", path.node)),
                        );
                    }
                    if let Some(chain) = root.cycle_from(&t) {
                        if reported.insert(path.node.clone()) {
                            let walk = prefixed(name, chain);
                            let itself = walk.first() == walk.last();
                            let message = if itself {
                                format!("`{name}` calls itself: {}", walk.join(" → "))
                            } else {
                                format!("`{}` never returns: its callees recurse: {}", path.node, walk[1..].join(" → "))
                            };
                            self.diags.push(
                                Diagnostic::new(Code::ToolRecursion, path.span, message)
                                    .with_label("recursion starts here")
                                    .with_help("a tool may not reach itself through its callees: break the chain"),
                            );
                        }
                    } else if reported.insert(path.node.clone()) {
                        self.too_deep(root, &t, name, path, max_nesting);
                    }
                    self.steps[i].callee = Some(t);
                }
                Resolved::Missing(file) => {
                    if root.missing_callees() == MissingCallees::Error {
                        let mut d = Diagnostic::new(
                            Code::UnresolvedToolPath,
                            path.span,
                            format!("`{}` does not resolve: there is no {}", path.node, file.display()),
                        )
                        .with_label("no such tool under the root");
                        let suggestion = suggestions
                            .entry(path.node.clone())
                            .or_insert_with(|| sibling_suggestion(&path.node, &file));
                        if let Some(s) = suggestion {
                            d = d.with_help(format!("did you mean `{s}`?"));
                        } else if let Some(server) = upstream_server(&path.node) {
                            // A skill's call of an upstream server's tool (`SERVER/TOOL`).
                            d = d.with_help(format!(
                                "`{}` reads as the tool of an upstream MCP server `{server}`: pass `--upstream {server}=COMMAND|URL`",
                                path.node
                            ));
                        } else {
                            d = d.with_help(format!(
                                "tool paths resolve against the tool root, {}; pass `--root` to change it",
                                root.dir().display()
                            ));
                        }
                        self.diags.push(d);
                    }
                }
                Resolved::Invalid(why) => match root.refusal(&path.node) {
                    // A name the tools known by name refused (an upstream server's): their reason.
                    Some(r) => self.diags.push(
                        Diagnostic::new(r.code, path.span, r.message.clone())
                            .with_label(r.label.clone())
                            .with_help(r.help.clone()),
                    ),
                    None => self.diags.push(
                        Diagnostic::new(
                            Code::UnresolvedToolPath,
                            path.span,
                            format!("`{}` does not resolve: {why}", path.node),
                        )
                        .with_label("not a tool under the root")
                        .with_help("write tool paths from the root, like `/tools/scanner.tool`"),
                    ),
                },
            }
            self.steps[i].fields = self.known_fields(i);
        }
    }

    /// The fields a REF into step `i`'s result may name: for a parallel step `response`
    /// and its outputs; for another, the callee's declared responses and its outputs, when
    /// the callee declares them.
    pub(super) fn known_fields(&self, i: usize) -> Option<Arc<Fields>> {
        let ins = self.steps[i].ins;
        if ins.output_path.is_some() {
            // The result is a value inside the response: its fields are not the callee's.
            return None;
        }
        let outputs = ins.transform_responses.iter().flat_map(|t| t.transforms.iter().map(|(k, _)| k.node.as_str()));
        let mut fields = Fields::new();
        if ins.is_transform_step() {
            // Its result is the object of its transforms, and nothing else.
            fields.extend(outputs.map(Arc::from));
            return Some(Arc::new(fields));
        }
        if ins.parallel_execution.is_none() {
            let callee = self.steps[i].callee.as_ref()?;
            if !callee.declares_responses {
                return None;
            }
            let def = callee.def.as_ref()?;
            fields.extend(def.responses.iter().map(|p| Arc::from(p.name.node.as_str())));
        }
        fields.insert(Arc::from("response"));
        if ins.continue_on_error.as_ref().is_some_and(|c| c.node) {
            // What a failure leaves (`failure_type`).
            fields.extend(["status", "error_message"].map(Arc::from));
        }
        fields.extend(outputs.map(Arc::from));
        Some(Arc::new(fields))
    }
}

/// The server of a `tool_definition_path` written as an upstream MCP server's tool,
/// `SERVER/TOOL` (no leading `/`, no `.tool`, one `/`): what `--upstream SERVER=…` names.
pub(super) fn upstream_server(tool_path: &str) -> Option<&str> {
    let (server, tool) = tool_path.split_once('/')?;
    let word = |w: &str, dot: bool| {
        !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (dot && b == b'.'))
    };
    (word(server, false) && word(tool, true) && !tool.ends_with(".tool")).then_some(server)
}

/// A tool path next to `wanted` whose file name is close to the one missing.
pub(super) fn sibling_suggestion(tool_path: &str, file: &std::path::Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    let dir = file.parent()?;
    let entries: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tool"))
        .collect();
    let best = did_you_mean(name, entries.iter().map(String::as_str))?;
    let prefix = tool_path.rsplit_once('/').map_or("", |(p, _)| p);
    Some(format!("{prefix}/{best}"))
}
