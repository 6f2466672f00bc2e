//! What a plan's `tool_definition_path` names: a served tool (by name or tool path), an upstream
//! `SERVER/TOOL`, or why not, with the nearest callable name and a bounded list of the others.

use std::path::{Component, Path};
use std::sync::Arc;

use super::{Callable, PlanDesk, UpstreamTool};
use crate::analysis::{LoadedTool, Resolved, ToolRoot};
use crate::diagnostic::{did_you_mean, Code, Diagnostic};
use crate::span::Span;

impl PlanDesk {
    /// What a `tool_definition_path` names: a callable tool, loaded (and aliased in `root`
    /// under the name written), or why not.
    pub(super) fn resolve(
        &self,
        root: &mut ToolRoot,
        written: &str,
        candidates: &std::cell::OnceCell<Vec<String>>,
    ) -> Result<(Arc<LoadedTool>, String), Unresolved> {
        // `"search\r\n"`, `" /tools/search.tool"`, `"search\u00a0"`: the tool a clean
        // spelling names, refused with that name (one tool, one identity).
        // A spelling that names no callable tool even when clean gets that error instead.
        if let Some(clean) = crate::tool::tool_path_respelled(written) {
            let (_, canonical) = self.resolve(root, &clean, candidates)?;
            let d = crate::tool::tool_path_spelling(written, Span::new(0, 0), &canonical);
            return Err(Unresolved {
                code: d.code,
                message: d.message,
                label: "a second spelling of a tool".into(),
                help: d.help.unwrap_or_default(),
            });
        }
        let written_trim = written;
        // An upstream tool: `SERVER/TOOL`.
        if let Some((server, _)) = written_trim.split_once('/').filter(|(s, _)| !s.is_empty()) {
            if let Some(names) = self.upstream_names.get(server) {
                let found = self.upstream.get(written_trim);
                return match found {
                    Some(u) => {
                        // A schema tdsl cannot declare (a property `@type`, `x.y`): say so, with
                        // the first problem — the model cannot "check the callee on its own".
                        let loaded = match self.upstream.load(written_trim, written) {
                            Some(loaded) => loaded,
                            None => u.load_under(&self.root, written),
                        };
                        let loaded = loaded.map_err(|first| Unresolved {
                            code: Code::CalleeInvalid,
                            message: format!(
                                "the upstream tool `{written}` cannot be called from a plan: its schema does not translate ({first})"
                            ),
                            label: "schema tdsl cannot declare".into(),
                            help: format!(
                                "call another tool; the tools a plan may call: {}",
                                self.list_but(&[], Some(u))
                            ),
                        })?;
                        let canonical = u.plan_name();
                        root.alias(written, Resolved::Found(loaded.clone()));
                        root.alias(&canonical, Resolved::Found(loaded.clone()));
                        Ok((loaded, canonical))
                    }
                    None => Err(self.unknown(written, names)),
                };
            }
        }
        // A served name.
        if let Some(c) = self.served.iter().find(|c| c.name == written_trim) {
            return self.load_served(root, written, c);
        }
        // A tool path.
        let looks_like_path = written_trim.contains('/') || written_trim.ends_with(".tool");
        if looks_like_path {
            if Path::new(written_trim).components().any(|c| matches!(c, Component::ParentDir))
                || written_trim.contains('\\')
                || written_trim.contains("://")
            {
                return Err(Unresolved {
                    code: Code::PlanPathEscapes,
                    message: format!("`{written}` is not a tool path under the tool root"),
                    label: "leaves the tool root".into(),
                    help: "name a tool by its name or by its path from the root, like `/tools/summarize.tool`; `..` is refused".into(),
                });
            }
            let normal = format!("/{}", written_trim.trim_start_matches("./").trim_start_matches('/'));
            let normal = if normal.ends_with(".tool") { normal } else { format!("{normal}.tool") };
            if let Some(c) = self.served.iter().find(|c| c.tool_path.as_deref() == Some(normal.as_str())) {
                return self.load_served(root, written, c);
            }
            if root.file_path(&normal).is_ok_and(|f| f.is_file()) {
                return Err(Unresolved {
                    code: Code::PlanToolNotAllowed,
                    message: format!("`{written}` is not among the tools this server lets plans call"),
                    label: "not allowed".into(),
                    help: format!("the tools a plan may call: {}", self.list(&[])),
                });
            }
        }
        let candidates = candidates.get_or_init(|| {
            let mut names: Vec<String> = self.callable().into_iter().map(|c| c.name).collect();
            names.extend(self.served.iter().filter_map(|c| c.tool_path.clone()));
            names
        });
        Err(self.unknown(written, candidates))
    }

    pub(super) fn load_served(
        &self,
        root: &mut ToolRoot,
        written: &str,
        c: &Callable,
    ) -> Result<(Arc<LoadedTool>, String), Unresolved> {
        let path = c.tool_path.as_deref().unwrap_or_default();
        match root.resolve(path) {
            Resolved::Found(t) => {
                root.alias(written, Resolved::Found(t.clone()));
                Ok((t, path.to_string()))
            }
            _ => Err(Unresolved {
                code: Code::PlanUnknownTool,
                message: format!("`{written}` cannot be loaded from the tool root"),
                label: "no such tool".into(),
                help: format!("the tools a plan may call: {}", self.list(&[])),
            }),
        }
    }

    pub(super) fn unknown(&self, written: &str, candidates: &[String]) -> Unresolved {
        let stem = written.trim().trim_start_matches('/').trim_end_matches(".tool");
        let stem = stem.rsplit('/').next().unwrap_or(stem);
        // The two searches of a name inside another are linear in the candidates' text:
        // they spend from the plan's allowance for suggestions like `did_you_mean` does.
        let text_of_all = || candidates.iter().map(|c| c.len() as u64 + 1).sum::<u64>() + written.len() as u64;
        let near = did_you_mean(written.trim(), candidates.iter().map(String::as_str))
            .or_else(|| did_you_mean(stem, candidates.iter().map(String::as_str)))
            // `forecast`, `weather.forecast` for the upstream `weather/forecast`.
            .or_else(|| {
                let lower = written.trim().to_lowercase();
                crate::suggest::spend(text_of_all()).then_some(())?;
                candidates
                    .iter()
                    .filter(|c| c.split_once('/').is_some_and(|(_, tool)| !tool.is_empty() && lower.ends_with(tool)))
                    .min_by_key(|c| c.len())
                    .map(String::as_str)
            })
            // `web_search` for `search`, `search_tool` for `search`: a name inside the other.
            .or_else(|| {
                let lower = stem.to_lowercase();
                crate::suggest::spend(text_of_all()).then_some(())?;
                candidates
                    .iter()
                    .filter(|c| !c.contains('/') && c.len() >= 3 && (lower.contains(c.as_str()) || c.contains(&lower)))
                    .min_by_key(|c| c.len().abs_diff(lower.len()))
                    .map(String::as_str)
            })
            .map(str::to_string);
        let mut near_list: Vec<String> = Vec::new();
        if let Some(n) = &near {
            near_list.push(n.clone());
        }
        let help = match &near {
            Some(n) => format!("did you mean `{n}`? The tools a plan may call: {}", self.list(&near_list)),
            None => format!("the tools a plan may call: {}", self.list(&[])),
        };
        Unresolved {
            code: Code::PlanUnknownTool,
            message: format!("there is no tool `{written}` that this plan can call"),
            label: "unknown tool".into(),
            help,
        }
    }

    /// The callable names, for a help line: `first`, then the others, at most 20 named and
    /// a count of the rest (one pass: a server may have 60,000 upstream tools).
    pub(super) fn list(&self, first: &[String]) -> String {
        self.list_but(first, None)
    }

    /// [`Self::list`] without the upstream tool `but` (one that cannot be called).
    pub(super) fn list_but(&self, first: &[String], but: Option<&UpstreamTool>) -> String {
        const SHOWN: usize = 20;
        let mut names: Vec<String> = first.iter().take(SHOWN).cloned().collect();
        let mut more = first.len().saturating_sub(SHOWN);
        let mut add = |name: &dyn Fn() -> String| {
            if names.len() < SHOWN {
                names.push(name());
            } else {
                more += 1;
            }
        };
        for c in self.served.iter().filter(|c| !first.contains(&c.name)) {
            add(&|| c.name.clone());
        }
        for u in self.upstream.tools.iter().filter(|u| but.is_none_or(|b| b.server != u.server || b.name != u.name)) {
            // `SERVER/TOOL` compared without being built: most are only counted.
            if !first.iter().any(|f| f.split_once('/') == Some((u.server.as_str(), u.name.as_str()))) {
                add(&|| u.plan_name());
            }
        }
        let mut text = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        if names.is_empty() {
            text = "none".to_string();
        }
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    }
}

/// Why a tool name does not resolve, before it has a span.
pub(super) struct Unresolved {
    pub(super) code: Code,
    pub(super) message: String,
    pub(super) label: String,
    pub(super) help: String,
}

impl Unresolved {
    pub(super) fn at(self, span: Span) -> Diagnostic {
        Diagnostic::new(self.code, span, self.message).with_label(self.label).with_help(self.help)
    }
}
