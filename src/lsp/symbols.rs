//! What each part of a `.tool` file names: the occurrences of steps, arguments, responses,
//! callees, functions and variables, with the exact bytes that name them (inside JSON
//! strings, through escapes), for hover, definition, references, rename and completion.

use std::path::{Path, PathBuf};

use crate::engine::Engine;
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind};
use crate::tool::{DoneCheck, JsonStr, ToolDef, ToolKind, Transform, TransformBlock};
use crate::types::Scope;

/// Something a file names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sym {
    /// A step of the composite in `file`, by `execution_id`.
    Step {
        /// The composite.
        file: PathBuf,
        /// The execution id.
        id: String,
    },
    /// An argument the tool in `file` declares (or is passed).
    Argument {
        /// The tool.
        file: PathBuf,
        /// The argument's name.
        name: String,
    },
    /// A response the tool in `file` declares (or a REF reads).
    Response {
        /// The tool.
        file: PathBuf,
        /// The response's name.
        name: String,
    },
    /// A `tool_definition_path`: the file it names (when it resolves).
    ToolPath {
        /// As written.
        path: String,
        /// The file.
        file: Option<PathBuf>,
    },
    /// A function called in an expression.
    Function(String),
    /// A transform variable or output read in an expression, or declared.
    Variable {
        /// Where its block is (the `transform_…` object).
        block: Span,
        /// Its name.
        name: String,
    },
}

/// One place a symbol is named.
#[derive(Clone, Debug, PartialEq)]
pub struct Occurrence {
    /// What is named.
    pub sym: Sym,
    /// The bytes that name it (the text to replace on a rename).
    pub span: Span,
    /// Whether this is the declaration.
    pub decl: bool,
}

/// Resolves `tool_definition_path`s of one file against its root.
pub struct Resolver<'a> {
    /// The root directory.
    pub root: &'a Path,
}

impl Resolver<'_> {
    /// The file a tool path names, when it is a regular file (canonical). Not a device, a
    /// FIFO or a folder, which the analysis does not read either: go to definition handed
    /// the editor `/dev/zero` or a FIFO (which it then opened and read without end, or
    /// waited on) through a link in a hostile repository.
    pub fn file(&self, tool_path: &str) -> Option<PathBuf> {
        let rel = tool_path.trim_start_matches('/');
        if rel.is_empty() || rel.split('/').any(|p| p == "..") {
            return None;
        }
        std::fs::canonicalize(self.root.join(rel)).ok().filter(|f| f.is_file())
    }
}

/// Every occurrence in one file.
pub fn occurrences(engine: &Engine, file: &Path, tool: &ToolDef, resolver: &Resolver<'_>) -> Vec<Occurrence> {
    occurrences_with(engine, file, tool, callees(tool, resolver))
}

/// The file each step of `tool` calls, in step order (`None` for a transform step or a
/// path that names no file): all [`occurrences`] reads of other files.
pub(crate) fn callees(tool: &ToolDef, resolver: &Resolver<'_>) -> Vec<Option<PathBuf>> {
    // Each tool path resolved once (a file system call each).
    let mut resolved: std::collections::HashMap<&str, Option<PathBuf>> = std::collections::HashMap::new();
    tool.instructions()
        .iter()
        .map(|i| {
            // A transform step calls nothing.
            let path = i.tool_path()?;
            resolved.entry(path).or_insert_with(|| resolver.file(path)).clone()
        })
        .collect()
}

/// [`occurrences`] with the files the steps call ([`callees`]).
pub(crate) fn occurrences_with(
    engine: &Engine,
    file: &Path,
    tool: &ToolDef,
    callees: Vec<Option<PathBuf>>,
) -> Vec<Occurrence> {
    let mut out = Vec::new();
    let this = file.to_path_buf();
    for p in &tool.arguments {
        out.push(Occurrence {
            sym: Sym::Argument { file: this.clone(), name: p.name.node.clone() },
            span: inner(p.name.span),
            decl: true,
        });
    }
    for p in &tool.responses {
        out.push(Occurrence {
            sym: Sym::Response { file: this.clone(), name: p.name.node.clone() },
            span: inner(p.name.span),
            decl: true,
        });
    }
    let ins = tool.instructions();
    // The step a REF context names (its `execution_id` or `expected_key`), by name: a scan
    // of the steps for every REF made hover quadratic in the file (issue 28).
    let mut by_name: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (n, i) in ins.iter().enumerate() {
        by_name.entry(&i.execution_id.node).or_insert(n);
    }
    for (n, i) in ins.iter().enumerate() {
        if let Some(k) = &i.expected_key {
            by_name.entry(&k.node).or_insert(n);
        }
    }
    let step_callee = |id: &str| -> Option<PathBuf> { by_name.get(id).and_then(|&n| callees[n].clone()) };
    let scan = FileScan { file: &this, engine, step_callee: &step_callee };
    for (n, i) in ins.iter().enumerate() {
        out.push(Occurrence {
            sym: Sym::Step { file: this.clone(), id: i.execution_id.node.clone() },
            span: inner(i.execution_id.span),
            decl: true,
        });
        // The key the step's result is stored under names it too (`REF:<key>`).
        if let Some(k) = &i.expected_key {
            out.push(Occurrence {
                sym: Sym::Step { file: this.clone(), id: k.node.clone() },
                span: inner(k.span),
                decl: true,
            });
        }
        if let Some(path) = &i.tool_definition_path {
            out.push(Occurrence {
                sym: Sym::ToolPath { path: path.node.clone(), file: callees[n].clone() },
                span: inner(path.span),
                decl: false,
            });
        }
        for d in &i.dependencies {
            out.push(Occurrence {
                sym: Sym::Step { file: this.clone(), id: d.node.clone() },
                span: inner(d.span),
                decl: false,
            });
        }
        if let (Some(args), Some(callee)) = (&i.arguments, &callees[n]) {
            for (k, _) in &args.entries {
                out.push(Occurrence {
                    sym: Sym::Argument { file: callee.clone(), name: k.node.clone() },
                    span: inner(k.span),
                    decl: false,
                });
            }
        }
        if let (Some(p), Some(callee)) = (&i.parallel_execution, &callees[n]) {
            out.push(Occurrence {
                sym: Sym::Argument { file: callee.clone(), name: p.child_argument_name.node.clone() },
                span: inner(p.child_argument_name.span),
                decl: false,
            });
        }
        let own = callees[n].clone();
        for site in i.ref_sites() {
            scan.ref_path(&site.path, own.as_ref(), &mut out);
        }
        for (t, block) in
            [(&i.transform_arguments, TransformBlock::Arguments), (&i.transform_responses, TransformBlock::Responses)]
        {
            if let Some(t) = t {
                scan.transform(t, block, own.as_ref(), &mut out);
            }
        }
        if let Some(DoneCheck::Expression(e)) = &i.done_check {
            scan.expression(e, None, own.as_ref(), &mut out);
        }
    }
    for site in tool.ref_sites() {
        scan.ref_path(&site.path, None, &mut out);
    }
    for t in [&tool.transform_arguments, &tool.transform_responses].into_iter().flatten() {
        scan.transform(t, TransformBlock::Arguments, None, &mut out);
    }
    if let ToolKind::Composite { response_reference_map: Some(map), .. } = &tool.kind {
        for (k, _) in &map.entries {
            out.push(Occurrence {
                sym: Sym::Response { file: this.clone(), name: k.node.clone() },
                span: inner(k.span),
                decl: false,
            });
        }
    }
    out.sort_by_key(|o| (o.span.start, o.span.end));
    out
}

/// The occurrence whose span holds `offset` (the narrowest).
pub(crate) fn at(occurrences: &[Occurrence], offset: usize) -> Option<&Occurrence> {
    let offset = u32::try_from(offset).unwrap_or(u32::MAX);
    occurrences
        .iter()
        .filter(|o| o.span.start <= offset && offset <= o.span.end)
        .min_by_key(|o| o.span.end - o.span.start)
}

/// What finding the occurrences of one file reads: the file, the engine (to parse its
/// expressions), and the callee of each step by the names REFs use for it.
struct FileScan<'a> {
    file: &'a PathBuf,
    engine: &'a Engine,
    step_callee: &'a dyn Fn(&str) -> Option<PathBuf>,
}

impl FileScan<'_> {
    /// A REF path whose spans are already in the file. `own` is the callee of the step
    /// the REF is in (what `REF:response` reads).
    fn ref_path(&self, path: &crate::syntax::ast::RefPath, own: Option<&PathBuf>, out: &mut Vec<Occurrence>) {
        self.ref_parts(
            &path.context.node,
            path.context.span,
            path.segments.first().map(|s| (&*s.node, s.span)),
            own,
            out,
        );
    }

    fn ref_parts(
        &self,
        context: &str,
        context_span: Span,
        first: Option<(&str, Span)>,
        own: Option<&PathBuf>,
        out: &mut Vec<Occurrence>,
    ) {
        match context {
            "arguments" => {
                if let Some((name, span)) = first {
                    out.push(Occurrence {
                        sym: Sym::Argument { file: self.file.clone(), name: name.to_string() },
                        span,
                        decl: false,
                    });
                }
            }
            "response" => {
                if let (Some((name, span)), Some(callee)) = (first, own) {
                    out.push(Occurrence {
                        sym: Sym::Response { file: callee.clone(), name: name.to_string() },
                        span,
                        decl: false,
                    });
                }
            }
            id => {
                out.push(Occurrence {
                    sym: Sym::Step { file: self.file.clone(), id: id.to_string() },
                    span: context_span,
                    decl: false,
                });
                if let (Some((name, span)), Some(callee)) = (first, (self.step_callee)(id)) {
                    out.push(Occurrence {
                        sym: Sym::Response { file: callee, name: name.to_string() },
                        span,
                        decl: false,
                    });
                }
            }
        }
    }

    fn transform(&self, t: &Transform, _block: TransformBlock, own: Option<&PathBuf>, out: &mut Vec<Occurrence>) {
        for (k, _) in &t.variables {
            out.push(Occurrence {
                sym: Sym::Variable { block: t.span, name: k.node.clone() },
                span: inner(k.span),
                decl: true,
            });
        }
        for (k, e) in &t.transforms {
            out.push(Occurrence {
                sym: Sym::Variable { block: t.span, name: k.node.clone() },
                span: inner(k.span),
                decl: true,
            });
            self.expression(e, Some(t.span), own, out);
        }
    }

    /// An expression string: its REFs, function calls and names.
    fn expression(&self, e: &JsonStr, block: Option<Span>, own: Option<&PathBuf>, out: &mut Vec<Occurrence>) {
        let analysis = self.engine.analyze(&e.value, &Scope::open());
        let map = e.string_map();
        for r in &analysis.references.refs {
            // `REF:` (its letters may be escaped inside a template string) then the
            // context, then `.first`: spans inside the expression text.
            let text = e.value.get(r.span.range()).unwrap_or("");
            let Some(colon) = text.find(':') else { continue };
            let rest = &text[colon + 1..];
            let start = r.span.start as usize + colon + 1;
            if !rest.starts_with(&*r.context) {
                continue;
            }
            let context_span = map.map(Span::new(start, start + r.context.len()));
            let first = r.segments.first().and_then(|seg| {
                let s = start + r.context.len() + 1;
                let written = rest.get(r.context.len() + 1..)?;
                written.starts_with(&**seg).then(|| (&**seg, map.map(Span::new(s, s + seg.len()))))
            });
            self.ref_parts(&r.context, context_span, first, own, out);
        }
        let mut calls = Vec::new();
        let mut names = Vec::new();
        walk(&analysis.ast, &mut calls, &mut names);
        for (name, span) in calls {
            out.push(Occurrence { sym: Sym::Function(name), span: map.map(span), decl: false });
        }
        if let Some(block) = block {
            // Every use of each free name: the analysis keeps the first use of each (which
            // may be inside a template string), the tree has the others.
            // By set, not by scanning the list for each name: `[x0, x1, …, x19999]` took 2 s.
            let mut uses: Vec<(&str, Span)> = analysis.references.names.iter().map(|(n, s)| (&**n, *s)).collect();
            let free: std::collections::HashSet<&str> = uses.iter().map(|(n, _)| *n).collect();
            let mut seen: std::collections::HashSet<Span> = uses.iter().map(|(_, s)| *s).collect();
            for (n, s) in &names {
                if free.contains(&**n) && seen.insert(*s) {
                    uses.push((n, *s));
                }
            }
            for (name, span) in uses {
                out.push(Occurrence {
                    sym: Sym::Variable { block, name: name.to_string() },
                    span: map.map(span),
                    decl: false,
                });
            }
        }
    }
}

/// Function names called in an expression, and bare names read (string templates are
/// not entered).
fn walk(e: &Expr, out: &mut Vec<(String, Span)>, names: &mut Vec<(crate::syntax::ast::Name, Span)>) {
    match &e.kind {
        ExprKind::Call(c) => {
            out.push((c.name.node.to_string(), c.name.span));
            for a in &c.args {
                walk(&a.value, out, names);
            }
        }
        ExprKind::Name(n) => names.push((n.clone(), e.span)),
        ExprKind::Field(x, _) | ExprKind::Unary(_, x) => walk(x, out, names),
        ExprKind::Index(ab) | ExprKind::Binary(_, ab) => ab.iter().for_each(|x| walk(x, out, names)),
        ExprKind::List(items) => items.iter().for_each(|x| walk(x, out, names)),
        ExprKind::Object(entries) => entries.iter().for_each(|(_, x)| walk(x, out, names)),
        _ => {}
    }
}

/// A JSON string's span without its quotes.
pub(crate) fn inner(span: Span) -> Span {
    if span.end >= span.start + 2 {
        Span { start: span.start + 1, end: span.end - 1 }
    } else {
        span
    }
}
