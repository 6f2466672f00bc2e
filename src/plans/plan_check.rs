//! What checking a plan found: [`PlanCheck`] (every diagnostic located by a JSON pointer
//! and rendered, errors first past [`MAX_PLAN_DIAGNOSTICS`], and the levels and result type
//! of a plan without errors), as `check_plan` and `tdsl check --plan` answer it.

use std::sync::Arc;

use serde::Serialize;

use super::locate::{locate, Location};
use crate::diagnostic::{Diagnostic, Severity};
use crate::span::Span;
use crate::tool::{JsonNode, LineIndex};
use crate::types::Type;

/// The most diagnostics a plan's check reports (errors first): a plan of thousands of
/// mistakes gets the first of them, and a count of the rest, instead of an answer of
/// megabytes rendered in quadratic time (each rendering reads the plan's text).
pub const MAX_PLAN_DIAGNOSTICS: usize = 50;

/// The most characters of one diagnostic's rendered text (a plan written on one long line
/// would otherwise be echoed whole by every diagnostic in it).
pub const MAX_RENDERED_CHARS: usize = 4_000;

/// The fewest bytes all of a check's renderings may take together, as JSON writes them (the
/// answer's text block); a plan larger than twice this gets half its own size: a plan of
/// many long values gets an answer about its size, each diagnostic past the bound rendered
/// as its code, message, place and help (outside round 11, finding 10).
pub(crate) const MIN_RENDERED_TOTAL: usize = 32_000;

/// The most characters of a diagnostic's message, and of its help, in a plan's check: a
/// message quotes a value cut ([`crate::diagnostic::quoted`]), and this bounds the rest.
pub(crate) const MAX_MESSAGE_CHARS: usize = 2_000;

/// `text` with control characters and bidirectional-text controls written as `\u001b`: a
/// diagnostic echoes what the plan wrote (a step id, a tool name), and a terminal or a
/// model reading it must see the escape, not obey it.
pub fn escape_controls(text: &str) -> String {
    crate::diagnostic::escape_hidden(text, &[])
}

/// `text` cut to at most `max` characters, saying so.
pub(super) fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n  … (cut: the rendered text is longer than {max} characters)\n", &text[..at]),
        None => text,
    }
}

/// A message or a help cut to [`MAX_MESSAGE_CHARS`], saying how long it was.
fn cut_line(text: String) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!("{}… (cut: {} characters)", &text[..at], text.chars().count()),
        None => text,
    }
}

/// One diagnostic of a plan, located.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlanDiagnostic {
    /// The stable code (`E1311`).
    pub code: &'static str,
    /// `error` or `warning`.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// How to fix it, in tdsl's form.
    pub help: Option<String>,
    /// A JSON pointer to the value (RFC 6901; `""` for the whole plan).
    pub pointer: String,
    /// Inside a string: the characters (start, end exclusive) of the offending text in the
    /// decoded string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[usize; 2]>,
    /// 1-based line of the span in the plan's text.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
    /// Line of the span's end.
    pub end_line: u32,
    /// Column of the span's end.
    pub end_column: u32,
    /// The diagnostic as `tdsl check` renders it (no colour), with the plan's text. Not in
    /// the JSON answer (`check_plan`'s text block carries it: once is enough).
    #[serde(skip)]
    pub rendered: String,
    /// The span in the plan's text (bytes).
    #[serde(skip)]
    pub span: Span,
    /// The diagnostic itself.
    #[serde(skip)]
    pub diagnostic: Diagnostic,
}

/// What checking a plan found.
#[derive(Clone, Debug)]
pub struct PlanCheck {
    /// The plan's text (what spans and lines point into).
    pub source: Arc<str>,
    /// Every diagnostic, in the order of the text.
    pub diagnostics: Vec<PlanDiagnostic>,
    /// The steps' execution ids level by level, when the plan has no error: steps of one
    /// level run concurrently.
    pub levels: Option<Vec<Vec<String>>>,
    /// The type of the plan's result, when it has no error (`{total: integer}`).
    pub result_type: Option<String>,
    /// The same type, as the checker has it (what a skill saved without `responses`
    /// declares); boxed, as a refused run carries the check. Read by the MCP server's
    /// skills.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    result: Option<Box<Type>>,
    /// The errors and the warnings left out of `diagnostics` (past
    /// [`MAX_PLAN_DIAGNOSTICS`]).
    omitted: [usize; 2],
}

/// How a plan's run names it (the trace's `tool` and `plan_id`, the history's run).
pub const PLAN_TOOL: &str = "<plan>";

/// The name rendered diagnostics give a plan sent inline.
pub const PLAN_NAME: &str = "plan.json";

impl PlanCheck {
    pub(super) fn finish(
        source: Arc<str>,
        tree: Option<JsonNode>,
        mut diags: Vec<Diagnostic>,
        clean: Option<(Vec<Vec<String>>, Type)>,
    ) -> PlanCheck {
        diags.sort_by_key(|d| (d.span.start, d.span.end));
        diags.dedup_by(|a, b| a.code == b.code && a.span == b.span);
        // At most MAX_PLAN_DIAGNOSTICS, errors first (so that `ok()` stays true to the
        // plan), then back in the order of the text.
        let mut omitted = [0, 0];
        if diags.len() > MAX_PLAN_DIAGNOSTICS {
            let (mut kept, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
                diags.into_iter().partition(Diagnostic::is_error);
            kept.extend(warnings);
            for d in kept.drain(MAX_PLAN_DIAGNOSTICS..) {
                omitted[usize::from(!d.is_error())] += 1;
            }
            kept.sort_by_key(|d| (d.span.start, d.span.end));
            diags = kept;
        }
        let lines = LineIndex::new(&source);
        let shown = crate::diagnostic::printable_source(&source);
        // What the renderings may still take: past it, a diagnostic is rendered short.
        let mut room = MIN_RENDERED_TOTAL.max(source.len() / 2);
        let diagnostics = diags
            .into_iter()
            .map(|d| d.escaped(&[]))
            .map(|mut d| {
                d.message = cut_line(std::mem::take(&mut d.message));
                d.help = d.help.take().map(cut_line);
                d
            })
            .map(|d| {
                let loc = match &tree {
                    Some(t) => locate(t, d.span),
                    None => Location { pointer: String::new(), range: None },
                };
                let p = lines.position(d.span);
                PlanDiagnostic {
                    code: d.code.as_str(),
                    severity: d.severity(),
                    message: d.message.clone(),
                    help: d.help.clone(),
                    pointer: loc.pointer,
                    range: loc.range,
                    line: p.line,
                    column: p.column,
                    end_line: p.end_line,
                    end_column: p.end_column,
                    rendered: {
                        let full = cut(
                            crate::diagnostic::render_plain(std::slice::from_ref(&d), PLAN_NAME, &shown),
                            MAX_RENDERED_CHARS,
                        );
                        let n = serde_json::to_string(&full).map_or(usize::MAX, |j| j.len());
                        if n <= room {
                            room -= n;
                            full
                        } else {
                            room = 0;
                            let help = d.help.as_deref().map(|h| format!("\n  help: {h}")).unwrap_or_default();
                            format!(
                                "{}\n  {} (line {}, column {}; not rendered: the check's renderings are past their bound)\n{help}\n",
                                d.code, d.message, p.line, p.column
                            )
                        }
                    },
                    span: d.span,
                    diagnostic: d,
                }
            })
            .collect::<Vec<_>>();
        let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
        let (levels, result) = match clean.filter(|_| !has_errors) {
            Some((l, t)) => (Some(l), Some(t)),
            None => (None, None),
        };
        let result_type = result.as_ref().map(Type::to_string);
        PlanCheck { source, diagnostics, levels, result_type, result: result.map(Box::new), omitted }
    }

    /// The type of the plan's result as the checker has it, when the plan has no error.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn result(&self) -> Option<&Type> {
        self.result.as_deref()
    }

    /// Whether the plan may run: no error (warnings allowed).
    pub fn ok(&self) -> bool {
        self.omitted[0] == 0 && !self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    /// The number of errors and of warnings, those left out of `diagnostics` included.
    pub fn counts(&self) -> (usize, usize) {
        let errors = self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        (errors + self.omitted[0], self.diagnostics.len() - errors + self.omitted[1])
    }

    /// How many diagnostics were left out (past [`MAX_PLAN_DIAGNOSTICS`]).
    pub fn omitted(&self) -> usize {
        self.omitted[0] + self.omitted[1]
    }

    /// Every diagnostic rendered, one after the other.
    pub fn render(&self) -> String {
        let mut out: String = self.diagnostics.iter().map(|d| d.rendered.as_str()).collect();
        if self.omitted() > 0 {
            out.push_str(&format!("… and {} more diagnostics, not shown\n", self.omitted()));
        }
        out
    }

    /// The plan's text as diagnostics render it: control characters replaced byte for byte
    /// by `?` (spans stay valid), so that a snippet cannot drive a terminal.
    pub fn printable_source(&self) -> String {
        crate::diagnostic::printable_source(&self.source).into_owned()
    }

    /// The bare diagnostics (spans into [`PlanCheck::source`]).
    pub fn raw_diagnostics(&self) -> Vec<Diagnostic> {
        self.diagnostics.iter().map(|d| d.diagnostic.clone()).collect()
    }

    /// The check as JSON: `{ok, errors, warnings, diagnostics: [...], levels?, result_type?}`
    /// — what `check_plan` answers.
    pub fn to_json(&self) -> serde_json::Value {
        let (errors, warnings) = self.counts();
        let mut out = serde_json::json!({
            "ok": self.ok(),
            "errors": errors,
            "warnings": warnings,
            "diagnostics": self.diagnostics,
        });
        if self.omitted() > 0 {
            out["omitted"] = serde_json::json!(self.omitted());
        }
        if let (Some(levels), Some(t)) = (&self.levels, &self.result_type) {
            out["levels"] = serde_json::json!(levels);
            out["result_type"] = serde_json::json!(t);
        }
        out
    }
}
