//! Drawing a plan's DAG: Mermaid flowcharts and Graphviz DOT.
//!
//! Both show the levels (Mermaid subgraphs, DOT clusters of equal rank), draw conditional
//! steps (`conditions` or `done_check`), parallel steps and transform steps (no tool) with
//! their own shapes, and label
//! every edge with the paths it carries from one step's result to the next (`files`,
//! `files.length`), with its type when asked (`tdsl graph --types`); an edge that only
//! `dependencies` makes is dashed.

use std::fmt::Write as _;

use super::infer::TypeAt;
use super::plan::{Plan, StepInput, StepPlan};
use crate::types::Type;

impl Plan {
    /// The DAG as a Mermaid flowchart.
    pub fn to_mermaid(&self) -> String {
        self.mermaid(None)
    }

    /// The DAG as a Mermaid flowchart whose edges show the type of each path they carry:
    /// the producer's result type along the path or, where that is `any`, what the uses
    /// demand (from `types`, [`super::CheckedTool::types`]).
    pub fn to_mermaid_typed(&self, types: &[TypeAt]) -> String {
        self.mermaid(Some(types))
    }

    /// The DAG as a Graphviz digraph named `name`, with typed edges as
    /// [`Plan::to_mermaid_typed`].
    pub fn to_dot_typed(&self, name: &str, types: &[TypeAt]) -> String {
        self.dot(name, Some(types))
    }

    /// The type a path carried from a step has: its static type, with what the uses demand
    /// where that is `any` (`any (list | null)`).
    fn edge_type(&self, input: &StepInput, path: &str, types: &[TypeAt]) -> String {
        let from = &self.steps[input.from.0];
        if path == "*" {
            return short(&from.result_type.to_string());
        }
        let ty = path.split('.').fold(from.result_type.clone(), |t, seg| super::infer::segment_type(&t, seg));
        if ty == Type::Any {
            let name = format!("REF:{}.{path}", from.execution_id);
            if let Some(k) = types.iter().find(|t| t.name == name).and_then(|t| t.inferred.as_ref()) {
                return format!("any ({k})");
            }
        }
        short(&ty.to_string())
    }

    fn mermaid(&self, types: Option<&[TypeAt]>) -> String {
        let mut out = String::from("flowchart TD\n");
        for (level, ids) in self.levels.iter().enumerate() {
            let _ = writeln!(out, "    subgraph level{level} [\"level {level}\"]");
            for id in ids {
                let s = &self.steps[id.0];
                let label: Vec<String> = lines(s).iter().map(|l| mermaid_text(l)).collect();
                let label = label.join("<br/>");
                let (open, close) = match (conditional(s), s.parallel.is_some()) {
                    (true, _) => ("{{", "}}"),
                    (false, true) => ("[[", "]]"),
                    // A transform step calls nothing: a stadium.
                    (false, false) if s.tool_path.is_none() => ("([", "])"),
                    (false, false) => ("[", "]"),
                };
                let _ = writeln!(out, "        s{}{open}\"{label}\"{close}", id.0);
            }
            out.push_str("    end\n");
        }
        for s in &self.steps {
            for input in &s.inputs {
                match self.carried(input, types) {
                    Some(label) => {
                        let _ = writeln!(out, "    s{} -->|\"{}\"| s{}", input.from.0, mermaid_text(&label), s.id.0);
                    }
                    None => {
                        let _ = writeln!(out, "    s{} -.->|dependency| s{}", input.from.0, s.id.0);
                    }
                }
            }
        }
        let classes: [StepClass; 2] = [
            ("conditional", conditional, "stroke-dasharray: 5 3"),
            ("parallel", |s| s.parallel.is_some(), "stroke-width: 3px"),
        ];
        for (class, has, style) in classes {
            let members: Vec<String> = self.steps.iter().filter(|s| has(s)).map(|s| format!("s{}", s.id.0)).collect();
            if !members.is_empty() {
                let _ = writeln!(out, "    classDef {class} {style}");
                let _ = writeln!(out, "    class {} {class}", members.join(","));
            }
        }
        out
    }

    /// The DAG as a Graphviz digraph named `name`.
    pub fn to_dot(&self, name: &str) -> String {
        self.dot(name, None)
    }

    fn dot(&self, name: &str, types: Option<&[TypeAt]>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", dot_string(name));
        out.push_str(
            "    rankdir=TB;\n    node [shape=box, fontname=\"Helvetica\"];\n    edge [fontname=\"Helvetica\"];\n",
        );
        for (level, ids) in self.levels.iter().enumerate() {
            let _ = writeln!(out, "    subgraph cluster_level_{level} {{");
            let _ = writeln!(out, "        label=\"level {level}\"; style=dashed; color=gray;");
            for id in ids {
                let s = &self.steps[id.0];
                let mut attrs = vec![format!("label={}", dot_string(&lines(s).join("\n")))];
                match (conditional(s), s.parallel.is_some()) {
                    (true, true) => attrs.extend(["shape=hexagon".into(), "peripheries=2".into()]),
                    (true, false) => attrs.extend(["shape=hexagon".into(), "style=dashed".into()]),
                    (false, true) => attrs.push("shape=box3d".into()),
                    (false, false) if s.tool_path.is_none() => attrs.push("style=rounded".into()),
                    (false, false) => {}
                }
                let _ = writeln!(out, "        {} [{}];", dot_string(&s.execution_id), attrs.join(", "));
            }
            out.push_str("    }\n");
        }
        for s in &self.steps {
            for input in &s.inputs {
                let from = dot_string(&self.steps[input.from.0].execution_id);
                let attrs = match self.carried(input, types) {
                    Some(label) => format!("label={}", dot_string(&label)),
                    None => "label=\"dependency\", style=dashed".to_string(),
                };
                let _ = writeln!(out, "    {from} -> {} [{attrs}];", dot_string(&s.execution_id));
            }
        }
        out.push_str("}\n");
        out
    }
}

/// A Mermaid class: its name, which steps have it, its style.
type StepClass = (&'static str, fn(&StepPlan) -> bool, &'static str);

/// Whether the step may be skipped: it has `conditions` or a `done_check`.
fn conditional(s: &StepPlan) -> bool {
    !s.conditions.is_empty() || s.done_check.is_some()
}

/// A node's lines: id, callee, and what makes it special.
fn lines(s: &StepPlan) -> Vec<String> {
    let callee = s.tool_path.as_deref().map_or_else(|| "transform step".to_string(), str::to_string);
    let mut out = vec![s.execution_id.to_string(), callee];
    if !s.conditions.is_empty() {
        out.push("if conditions hold".to_string());
    }
    if s.done_check.is_some() {
        out.push("unless done".to_string());
    }
    if let Some(p) = &s.parallel {
        out.push(format!("for each {}", p.child_argument_name));
    }
    out
}

impl Plan {
    /// The label of a REF edge (at most three paths, each with its type when `types` is
    /// given), `None` for a dependency-only edge.
    fn carried(&self, input: &StepInput, types: Option<&[TypeAt]>) -> Option<String> {
        if input.carries.is_empty() {
            return None;
        }
        let shown: Vec<String> = input
            .carries
            .iter()
            .take(3)
            .map(|c| match types {
                Some(t) => format!("{c}: {}", self.edge_type(input, c, t)),
                None => c.to_string(),
            })
            .collect();
        let more = if input.carries.len() > 3 { ", …" } else { "" };
        Some(format!("{}{more}", shown.join(", ")))
    }
}

/// A type for an edge label: at most 40 characters.
fn short(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Text inside a quoted Mermaid label: quotes and angle brackets (`list<string>`, which
/// Mermaid would take for HTML) become entities.
fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;").replace('<', "#lt;").replace('>', "#gt;")
}

/// A DOT string literal.
fn dot_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
