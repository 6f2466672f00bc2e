//! Drawing a plan's DAG: Mermaid flowcharts and Graphviz DOT.
//!
//! Both show the levels (Mermaid subgraphs, DOT clusters of equal rank), draw conditional
//! steps (`conditions` or `done_check`) and parallel steps with their own shapes, and label
//! every edge with the paths it carries from one step's result to the next (`files`,
//! `files.length`); an edge that only `dependencies` makes is dashed.

use std::fmt::Write as _;

use super::plan::{Plan, StepInput, StepPlan};

impl Plan {
    /// The DAG as a Mermaid flowchart.
    pub fn to_mermaid(&self) -> String {
        let mut out = String::from("flowchart TD\n");
        for (level, ids) in self.levels.iter().enumerate() {
            let _ = writeln!(out, "    subgraph level{level} [\"level {level}\"]");
            for id in ids {
                let s = &self.steps[id.0];
                let label = mermaid_text(&lines(s).join("<br/>"));
                let (open, close) = match (conditional(s), s.parallel.is_some()) {
                    (true, _) => ("{{", "}}"),
                    (false, true) => ("[[", "]]"),
                    (false, false) => ("[", "]"),
                };
                let _ = writeln!(out, "        s{}{open}\"{label}\"{close}", id.0);
            }
            out.push_str("    end\n");
        }
        for s in &self.steps {
            for input in &s.inputs {
                match carried(input) {
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
                    (false, false) => {}
                }
                let _ = writeln!(out, "        {} [{}];", dot_string(&s.execution_id), attrs.join(", "));
            }
            out.push_str("    }\n");
        }
        for s in &self.steps {
            for input in &s.inputs {
                let from = dot_string(&self.steps[input.from.0].execution_id);
                let attrs = match carried(input) {
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
    let mut out = vec![s.execution_id.to_string(), s.tool_path.to_string()];
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

/// The label of a REF edge (at most three paths), `None` for a dependency-only edge.
fn carried(input: &StepInput) -> Option<String> {
    if input.carries.is_empty() {
        return None;
    }
    let shown: Vec<&str> = input.carries.iter().take(3).map(|c| &**c).collect();
    let more = if input.carries.len() > 3 { ", …" } else { "" };
    Some(format!("{}{more}", shown.join(", ")))
}

/// Text inside a quoted Mermaid label: quotes become entities.
fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;")
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
