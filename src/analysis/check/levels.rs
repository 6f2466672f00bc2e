//! Pass 5, the DAG: `dependencies` edges, unknown dependencies, cycles (the shortest, with where
//! each step uses the next), levels.

use super::{Checker, Use, UseKind};
use crate::analysis::dag;
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::Span;

impl<'a> Checker<'a> {
    /// Adds the `dependencies` edges, reports unknown ones and cycles; returns the levels
    /// when the graph is acyclic.
    pub(super) fn dag(&mut self) -> Option<Vec<usize>> {
        for i in 0..self.steps.len() {
            let ins = self.steps[i].ins;
            for dep in &ins.dependencies {
                match self.ids.get(dep.node.as_str()) {
                    Some(&j) => self.steps[i].uses.push(Use {
                        to: j,
                        span: dep.span,
                        carries: String::new(),
                        kind: UseKind::Dependency,
                    }),
                    None => {
                        let ids = self.steps.iter().map(|s| s.ins.execution_id.node.as_str());
                        let mut d = Diagnostic::new(
                            Code::UnknownDependency,
                            dep.span,
                            format!("step `{}` depends on `{}`, which is not a step", ins.execution_id.node, dep.node),
                        )
                        .with_label("no such step");
                        d = match did_you_mean(&dep.node, ids) {
                            Some(s) => d.with_help(format!("did you mean `{s}`?")),
                            None => d.with_help("`dependencies` lists execution ids of steps of this tool"),
                        };
                        self.diags.push(d);
                    }
                }
            }
        }
        let deps = self.deps();
        let comps = dag::components(&deps);
        let mut cyclic = false;
        for comp in comps.iter().filter(|c| dag::is_cycle(c, &deps)) {
            cyclic = true;
            let cycle = dag::shortest_cycle(comp[0], comp, &deps);
            self.cycle(&cycle, comp.len());
        }
        if cyclic {
            return None;
        }
        dag::levels(&deps)
    }

    pub(super) fn deps(&self) -> Vec<Vec<usize>> {
        self.steps
            .iter()
            .map(|s| {
                let mut d: Vec<usize> = s.uses.iter().map(|u| u.to).collect();
                d.sort_unstable();
                d.dedup();
                d
            })
            .collect()
    }

    pub(super) fn cycle(&mut self, cycle: &[usize], size: usize) {
        let id = |i: usize| self.steps[i].ins.execution_id.node.as_str();
        let names: Vec<String> = cycle.iter().map(|&i| format!("`{}`", id(i))).collect();
        let mut labels: Vec<(Span, String)> = Vec::new();
        for pair in cycle.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            if let Some(u) = self.steps[from].uses.iter().find(|u| u.to == to) {
                let how = match u.kind {
                    UseKind::Ref => format!("`{}` uses `{}` here", id(from), id(to)),
                    UseKind::Dependency => format!("`{}` waits for `{}` here", id(from), id(to)),
                };
                labels.push((u.span, how));
            }
        }
        let message = if cycle.len() == 2 {
            format!("step {} depends on itself", names[0])
        } else {
            format!("dependency cycle: {}", names.join(" → "))
        };
        let Some(((first_span, first_label), rest)) = labels.split_first() else { return };
        let mut d = Diagnostic::new(Code::DependencyCycle, *first_span, message).with_label(first_label.clone());
        for (span, label) in rest {
            d = d.with_secondary(*span, label.clone());
        }
        let more = if size > cycle.len() - 1 {
            format!(" ({size} steps are caught in cycles here; this is the shortest through {})", names[0])
        } else {
            String::new()
        };
        // A step's own transform that names the step: its result there is `REF:response`.
        let own = cycle.len() == 2 && cycle[0] == cycle[1] && {
            let ins = self.steps[cycle[0]].ins;
            ins.transform_responses
                .as_ref()
                .is_some_and(|t| t.span.start <= first_span.start && first_span.end <= t.span.end)
        };
        let help = if own {
            let me = id(cycle[0]);
            format!(
                "inside `{me}`'s own `transform_responses` its result is `REF:response`: write `REF:response.<field>` for `REF:{me}.<field>`"
            )
        } else {
            format!(
                "a step can only use the results of steps that finish before it: remove one of these references or dependencies{more}"
            )
        };
        self.diags.push(d.with_help(help));
    }
}
