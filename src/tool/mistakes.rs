//! The mistakes language models make when they write a plan, found in the plan's strings
//! before and after the analysis: placeholders of other plan formats, jq and JSONPath,
//! Python and JavaScript literals, the file functions without a file store.
//!
//! Each finding is at the exact characters, with a help that shows the tdsl form. Which are
//! errors: a placeholder or path that names one of the plan's own steps (or its arguments)
//! is an error — it would otherwise run with the placeholder as text; one that names
//! nothing the plan has is a warning, since the text may be meant. A Python or JavaScript
//! literal inside an expression is an error (it is an unknown name there); as a whole JSON
//! string it is a warning (the string `"None"` may be meant).

use std::cell::OnceCell;
use std::sync::OnceLock;

use regex::Regex;

use crate::diagnostic::{Code, Diagnostic};
use crate::span::{SourceMap, Span};
use crate::tool::{JsonKind, JsonNode, JsonStr};

/// How a string of the plan is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A value: text, or a REF when the whole string is one (`arguments`, `variables`,
    /// condition operands, `done_value`).
    Value,
    /// Only a REF means anything here (`iterate_over`, `response_reference_map`).
    RefOnly,
    /// A transform expression (or a `done_check` expression).
    Expression,
}

/// A string of the plan with its role.
pub(crate) struct Site<'a> {
    pub text: &'a JsonStr,
    pub role: Role,
    /// Whether it is a transform variable (where a string may be a call-string).
    pub variable: bool,
    /// The step whose own `transform_responses` holds it: there, that step's result is
    /// `REF:response`.
    pub own_step: Option<usize>,
    /// The map from the decoded string to the plan's text, made once (when a finding needs
    /// it): made per finding, a string of 40,000 placeholders and escapes was decoded
    /// 40,000 times.
    map: OnceCell<SourceMap>,
}

impl Site<'_> {
    /// The plan's text span of bytes `start..end` of the decoded string.
    fn span(&self, start: usize, end: usize) -> Span {
        self.map.get_or_init(|| self.text.string_map()).map(Span::new(start, end))
    }
}

/// Spans of a string already claimed by a finding, kept sorted and disjoint so that "is
/// this match inside one?" is a binary search, not a scan of every finding so far (120,000
/// `$a` in one string was 23 s of CPU).
#[derive(Default)]
struct Claimed(Vec<(usize, usize)>);

impl Claimed {
    /// Claims the spans `found` holds (found in order by one pattern each).
    fn extend(&mut self, found: impl IntoIterator<Item = (usize, usize)>) {
        self.0.extend(found);
        self.0.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.0.len());
        for (start, end) in self.0.drain(..) {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        self.0 = merged;
    }

    /// Whether `start..end` lies inside a claimed span.
    fn covers(&self, start: usize, end: usize) -> bool {
        let i = self.0.partition_point(|s| s.0 <= start);
        i > 0 && end <= self.0[i - 1].1
    }
}

/// Every string of the plan that holds a value, a REF or an expression.
pub(crate) fn sites(root: &JsonNode) -> Vec<Site<'_>> {
    let mut out = Vec::new();
    let mut path: Vec<String> = Vec::new();
    walk(root, &mut path, &mut out);
    out
}

fn walk<'a>(node: &'a JsonNode, path: &mut Vec<String>, out: &mut Vec<Site<'a>>) {
    match &node.kind {
        JsonKind::Str(s) => {
            if let Some(role) = role(path) {
                let variable = path.iter().any(|p| p == "variables");
                let own_step = match path.as_slice() {
                    [ins, i, tr, ..] if ins == "instructions" && tr == "transform_responses" => i.parse().ok(),
                    _ => None,
                };
                out.push(Site { text: s, role, variable, own_step, map: OnceCell::new() });
            }
        }
        JsonKind::List(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                walk(item, path, out);
                path.pop();
            }
        }
        JsonKind::Object(entries) => {
            for (k, v) in entries {
                path.push(k.node.clone());
                walk(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn role(path: &[String]) -> Option<Role> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let (rest, in_step) = match p.as_slice() {
        ["instructions", _, rest @ ..] => (rest, true),
        rest => (rest, false),
    };
    match rest {
        ["arguments", ..] | ["done_value", ..] if in_step => Some(Role::Value),
        ["done_check"] if in_step => Some(Role::Expression),
        ["conditions" | "done_check", ..] if rest.iter().any(|s| *s == "param" || *s == "value") => Some(Role::Value),
        ["parallel_execution", "iterate_over"] if in_step => Some(Role::RefOnly),
        ["response_reference_map", _] if !in_step => Some(Role::RefOnly),
        ["transform_arguments" | "transform_responses", "variables", ..] => Some(Role::Value),
        ["transform_arguments" | "transform_responses", "transforms", _] => Some(Role::Expression),
        _ => None,
    }
}

/// What the plan has that a placeholder may name.
pub(crate) struct Names<'a> {
    /// The steps' execution ids, in the order written.
    pub steps: &'a [String],
    /// Each step's callee's declared response names, when known.
    pub fields: &'a [Option<Vec<String>>],
    /// The plan's declared argument names.
    pub args: &'a [String],
}

/// A reference met in a placeholder or a path: what it names in the plan.
struct Target {
    /// `REF:…` as tdsl writes it (without a wildcard's tail).
    reference: String,
    /// The path after a `[*]` / `[]` wildcard (`name` in `$.items[*].name`), when any.
    each: Option<String>,
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|e| panic!("the pattern {pattern} is valid: {e}")))
}

/// Splits a path written `a.b[0]["c"][*].d` into segments; a wildcard is `*`.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    inner.push(c);
                }
                let inner = inner.trim().trim_matches(['"', '\'']).to_string();
                out.push(if inner.is_empty() { "*".to_string() } else { inner });
            }
            c if c.is_whitespace() => {}
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What `segs` names in the plan: a step (by id, or `steps.<id>`), or its arguments.
fn target(segs: &[String], names: &Names<'_>) -> Option<Target> {
    let (head, rest) = segs.split_first()?;
    let (ctx, rest, step) = if let Some(i) = names.steps.iter().position(|s| s == head) {
        (head.clone(), rest, Some(i))
    } else if matches!(head.as_str(), "steps" | "step" | "outputs" | "results" | "nodes") {
        let (second, rest) = rest.split_first()?;
        let i = names.steps.iter().position(|s| s == second)?;
        (second.clone(), rest, Some(i))
    } else if matches!(head.as_str(), "arguments" | "args" | "inputs" | "input" | "params" | "parameters") {
        ("arguments".to_string(), rest, None)
    } else if names.args.iter().any(|a| a == head) {
        // A bare argument name: `{{url}}` for `REF:arguments.url`.
        ("arguments".to_string(), segs, None)
    } else {
        return None;
    };
    Some(with_context(ctx, rest, step, names))
}

/// `REF:<ctx>.<rest>`, dropping a generic first segment (`output`, `result`, …) that the
/// step's callee does not declare, and splitting at a wildcard.
fn with_context(ctx: String, rest: &[String], step: Option<usize>, names: &Names<'_>) -> Target {
    let mut rest: Vec<String> = rest.to_vec();
    if let (Some(first), Some(i)) = (rest.first(), step) {
        let declared = names.fields.get(i).and_then(Option::as_ref);
        let generic = matches!(first.as_str(), "output" | "outputs" | "result" | "results" | "data" | "value");
        if generic && !declared.is_some_and(|f| f.iter().any(|n| n == first)) {
            rest.remove(0);
        }
    }
    let (head, each) = match rest.iter().position(|s| s == "*") {
        Some(w) => {
            let tail = rest[w + 1..].join(".");
            (rest[..w].to_vec(), Some(tail))
        }
        None => (rest, None),
    };
    let mut reference = format!("REF:{ctx}");
    for s in &head {
        reference.push('.');
        reference.push_str(s);
    }
    Target { reference, each }
}

impl Target {
    /// What the REF starts from: a step's id, or `arguments`.
    fn context(&self) -> &str {
        let rest = self.reference.strip_prefix("REF:").unwrap_or(&self.reference);
        rest.split('.').next().unwrap_or(rest)
    }
}

/// The tdsl form of a target, for a help line.
fn tdsl_form(t: &Target) -> String {
    match t.each.as_deref() {
        None => format!("\"{}\"", t.reference),
        Some("") => format!("\"{}\" (the whole list)", t.reference),
        Some(tail) => format!(
            "a transform: `map(array={}, template=\"item.{tail}\")` (in `transform_arguments`), or fan out over `{}`",
            t.reference, t.reference
        ),
    }
}

/// The diagnostics of one string of the plan.
/// `named` gets the execution ids that an error's placeholder or path means (their results
/// are used, though no REF says so yet).
pub(crate) fn check_site(
    site: &Site<'_>,
    names: &Names<'_>,
    files: bool,
    out: &mut Vec<Diagnostic>,
    named: &mut Vec<String>,
) {
    let text = &*site.text.value;
    let whole = site.text.span;
    let before = out.len();
    if site.role != Role::Expression {
        loose_ref(site, names, out, named);
    }
    if out.len() == before {
        placeholders(site, names, out, named);
    }
    if out.len() == before {
        paths(site, names, out, named);
    }
    if site.role == Role::Value {
        if let Some((json, what)) = literal(text) {
            out.push(
                Diagnostic::new(
                    Code::PlanLiteralString,
                    whole,
                    format!("`\"{text}\"` is the string \"{text}\", not {what}'s `{text}`"),
                )
                .with_label("a string")
                .with_help(format!(
                    "for the JSON value write `{json}` without quotes; keep the quotes if the text is meant"
                )),
            );
        }
    }
    if !files {
        static FILE_CALL: OnceLock<Regex> = OnceLock::new();
        let re = regex(&FILE_CALL, r"\b(read_files|read_file|list_files|list_file_versions|describe_version)\s*\(");
        // Expressions, and the call-strings of `variables`; any other string is text.
        let calls = site.role == Role::Expression || (site.variable && text.trim_end().ends_with(')'));
        if calls {
            for m in re.captures_iter(text) {
                let Some(name) = m.get(1) else { continue };
                out.push(
                    Diagnostic::new(
                        Code::PlanNoFiles,
                        site.span(name.start(), name.end()),
                        format!("`{}` reads files, and this server gives plans no files", name.as_str()),
                    )
                    .with_label("no file store")
                    .with_help("the file functions work only when the server is started with `--files DIR`; pass the text as an argument instead"),
                );
            }
        }
    }
}

/// The placeholders and paths of other plan formats among a `.tool` file's values and REFs
/// (`"$1.total"`, `"{{scan.total}}"`, `"#E2"`, `"$.scan.files[*].name"`): the findings a plan
/// gets for them, with the same help (an error when one names a step or an argument of the
/// tool, a warning otherwise). An expression is
/// left to the parser, whose syntax error there has the same help
/// ([`crate::syntax::foreign`]).
pub(crate) fn in_tool_file(tree: &JsonNode) -> InToolFile {
    let entries = tree.as_object().unwrap_or_default();
    let get = |k: &str| entries.iter().find(|(key, _)| key.node == k).map(|(_, v)| v);
    let names_of = |list: Option<&JsonNode>, key: &str| -> Vec<String> {
        list.and_then(JsonNode::as_list)
            .unwrap_or_default()
            .iter()
            .map(|n| {
                n.as_object()
                    .and_then(|e| e.iter().find(|(k, _)| k.node == key))
                    .and_then(|(_, v)| v.as_str())
                    .map_or(String::new(), |s| s.value.to_string())
            })
            .collect()
    };
    let steps = names_of(get("instructions"), "execution_id");
    let args = names_of(get("arguments"), "name");
    let fields = vec![None; steps.len()];
    let names = Names { steps: &steps, fields: &fields, args: &args };
    let (mut out, mut explained, mut named) = (Vec::new(), Vec::new(), Vec::new());
    for site in sites(tree).iter().filter(|s| s.role != Role::Expression) {
        let before = out.len();
        placeholders(site, &names, &mut out, &mut named);
        if out.len() == before {
            paths(site, &names, &mut out, &mut named);
        }
        if out[before..].iter().any(Diagnostic::is_error) {
            explained.push(site.text.span);
        }
    }
    InToolFile { diagnostics: out, explained, named }
}

/// What [`in_tool_file`] finds.
pub(crate) struct InToolFile {
    pub diagnostics: Vec<Diagnostic>,
    /// The strings an error explains: the analysis' diagnostics inside them are echoes.
    pub explained: Vec<Span>,
    /// The execution ids the placeholders name (those steps' results are used).
    pub named: Vec<String>,
}

/// A REF tdsl does not read as one — `ref:page.text`, `Ref:page.text`, `" REF:page.text"` —
/// that names a step or the arguments: an error, since the tool would get the text.
fn loose_ref(site: &Site<'_>, names: &Names<'_>, out: &mut Vec<Diagnostic>, named: &mut Vec<String>) {
    let text = &*site.text.value;
    let trimmed = text.trim();
    if text.starts_with("REF:") || !trimmed.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("ref:")) {
        return;
    }
    let Some(t) = target(&segments(trimmed[4..].trim()), names) else { return };
    named.push(t.context().to_string());
    out.push(
        Diagnostic::new(
            Code::PlanPlaceholder,
            site.span(0, text.len()),
            format!("`{trimmed}` is not read as a REF (only a string that starts with `REF:` exactly is): the tool would get this text"),
        )
        .with_label(format!("means `{}`", t.reference))
        .with_help(format!("write \"{}\": upper-case `REF:`, no spaces around it", t.reference)),
    );
}

/// `{{step.x}}`, `${step.x}`, `#E1`, `$1`, `$step.x`.
fn placeholders(site: &Site<'_>, names: &Names<'_>, out: &mut Vec<Diagnostic>, named: &mut Vec<String>) {
    static MUSTACHE: OnceLock<Regex> = OnceLock::new();
    static DOLLAR_BRACE: OnceLock<Regex> = OnceLock::new();
    static REWOO: OnceLock<Regex> = OnceLock::new();
    static NUMBERED: OnceLock<Regex> = OnceLock::new();
    static NAMED: OnceLock<Regex> = OnceLock::new();
    let text = &*site.text.value;
    let whole_string = |start: usize, end: usize| start == 0 && end == text.len();
    let mut found: Vec<(usize, usize, &'static str, Option<Target>)> = Vec::new();
    for (re, format) in [
        (regex(&MUSTACHE, r"\{\{\s*([^{}]*?)\s*\}\}"), "a `{{…}}` template placeholder"),
        (regex(&DOLLAR_BRACE, r"\$\{\s*([^{}]*?)\s*\}"), "a `${…}` placeholder"),
    ] {
        for c in re.captures_iter(text) {
            let (Some(m), Some(inner)) = (c.get(0), c.get(1)) else { continue };
            let inner = inner.as_str().trim_start_matches('$').trim_start_matches('.');
            found.push((m.start(), m.end(), format, target(&segments(inner), names)));
        }
    }
    let numbered = |n: &str| -> Option<Target> {
        let n: usize = n.parse().ok()?;
        let id = names.steps.get(n.checked_sub(1)?)?;
        Some(with_context(id.clone(), &[], Some(n - 1), names))
    };
    // `#E1.message_id`, `$1.count`: the path after the number is the field of that step.
    let numbered = |n: &str, tail: &str| -> Option<Target> {
        let t = numbered(n)?;
        let rest = segments(tail);
        let i = names.steps.iter().position(|s| s.as_str() == t.context())?;
        Some(with_context(t.context().to_string(), &rest, Some(i), names))
    };
    for c in regex(&REWOO, r"#E(\d+)\b((?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*)").captures_iter(text) {
        let (Some(m), Some(n)) = (c.get(0), c.get(1)) else { continue };
        let tail = c.get(2).map_or("", |t| t.as_str());
        found.push((m.start(), m.end(), "a ReWOO `#E<n>` placeholder", numbered(n.as_str(), tail)));
    }
    // `$1` and `$name` inside a `{{…}}`, a `${…}` or a `#E1` are part of that placeholder.
    let mut claimed = Claimed::default();
    claimed.extend(found.iter().map(|f| (f.0, f.1)));
    let before = found.len();
    for c in regex(&NUMBERED, r"\$(\d+)\b((?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*)").captures_iter(text) {
        let (Some(m), Some(n)) = (c.get(0), c.get(1)) else { continue };
        if claimed.covers(m.start(), m.end()) {
            continue;
        }
        let tail = c.get(2).map_or("", |t| t.as_str());
        found.push((m.start(), m.end(), "an LLMCompiler `$<n>` placeholder", numbered(n.as_str(), tail)));
    }
    claimed.extend(found[before..].iter().map(|f| (f.0, f.1)));
    for c in regex(&NAMED, r"\$([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+|\[[^\]]*\])*)").captures_iter(text) {
        let (Some(m), Some(name)) = (c.get(0), c.get(1)) else { continue };
        if claimed.covers(m.start(), m.end()) {
            continue;
        }
        let segs = segments(&m.as_str()[1..]);
        // `$HOME`, `$price`: only a name of the plan's is a placeholder.
        if let Some(t) = target(&segs, names).filter(|_| !name.as_str().is_empty()) {
            found.push((m.start(), m.end(), "a `$name` placeholder", Some(t)));
        }
    }
    found.sort_by_key(|f| f.0);
    for (start, end, format, t) in found {
        let span = site.span(start, end);
        let written = &text[start..end];
        // Inside a step's own `transform_responses`, its result is `REF:response` (a REF to
        // the step itself there is a cycle).
        let t = t.map(|mut t| {
            if let Some(own) = site.own_step.and_then(|i| names.steps.get(i)).filter(|id| **id == t.context()) {
                t.reference = format!("REF:response{}", &t.reference["REF:".len() + own.len()..]);
            }
            t
        });
        match t {
            Some(t) => {
                named.push(t.context().to_string());
                let help = if whole_string(start, end) && site.role != Role::Expression {
                    format!("tdsl reads another step's result with a REF: write {}", tdsl_form(&t))
                } else if site.role == Role::Expression {
                    format!("inside an expression a REF is an atom: write `{}`", t.reference)
                } else {
                    format!(
                        "a REF is the whole string; to put it into text, build the text in `transform_arguments`: \"transforms\": {{\"<argument>\": \"\\\"…\\\" + {}\"}}",
                        t.reference
                    )
                };
                out.push(
                    Diagnostic::new(
                        Code::PlanPlaceholder,
                        span,
                        format!("`{written}` is {format}, which tdsl does not replace: the tool would get this text"),
                    )
                    .with_label(format!("means `{}`", t.reference))
                    .with_help(help),
                );
            }
            None => out.push(
                Diagnostic::new(
                    Code::PlanPlaceholderText,
                    span,
                    format!("`{written}` looks like {format}; it names nothing in this plan or tool and is passed on as text"),
                )
                .with_label("passed as text")
                .with_help("to use a step's result write \"REF:<execution_id>.<field>\"; keep it if the text is meant"),
            ),
        }
    }
}

/// JSONPath (`$.items[*].name`) and jq (`.items[] | .name`).
fn paths(site: &Site<'_>, names: &Names<'_>, out: &mut Vec<Diagnostic>, named: &mut Vec<String>) {
    static JSONPATH: OnceLock<Regex> = OnceLock::new();
    static JQ: OnceLock<Regex> = OnceLock::new();
    let text = &*site.text.value;
    let jsonpath = regex(&JSONPATH, r"\$((?:\.\.?[A-Za-z_*][A-Za-z0-9_-]*|\[[^\]]*\])+)");
    let jq = regex(
        &JQ,
        r"^\s*\.[A-Za-z_][A-Za-z0-9_-]*(?:\[[^\]]*\]|\.[A-Za-z_][A-Za-z0-9_-]*)*(?:\s*\|\s*\.[A-Za-z_][A-Za-z0-9_\[\].-]*)*\s*$",
    );
    let mut hits: Vec<(usize, usize, &'static str, Vec<String>)> = Vec::new();
    for m in jsonpath.find_iter(text) {
        hits.push((m.start(), m.end(), "JSONPath", segments(&m.as_str()[1..])));
    }
    if hits.is_empty() {
        if let Some(m) = jq.find(text) {
            let is_jq = m.as_str().contains('[') || m.as_str().contains('|') || site.role != Role::Value;
            if is_jq {
                let joined: String = m.as_str().split('|').map(str::trim).collect::<Vec<_>>().join("");
                let start = text.len() - text.trim_start().len();
                hits.push((start, text.trim_end().len(), "jq", segments(&joined)));
            }
        }
    }
    for (start, end, syntax, segs) in hits {
        let span = site.span(start, end);
        let written = &text[start..end];
        let t = target(&segs, names);
        if let Some(t) = &t {
            named.push(t.context().to_string());
        }
        let names_plan = t.is_some();
        let error = names_plan || site.role != Role::Value;
        let form = match &t {
            Some(t) => tdsl_form(t),
            // In an expression, names are the context's keys (the response's fields in
            // `transform_responses`): the path reads them directly.
            None if site.role == Role::Expression => {
                let plain = |s: &[String]| s.join(".");
                match segs.iter().position(|s| s == "*") {
                    Some(w) if w + 1 < segs.len() => {
                        format!("`map(array={}, template=\"item.{}\")`", plain(&segs[..w]), plain(&segs[w + 1..]))
                    }
                    Some(w) => format!("`{}`", plain(&segs[..w])),
                    None => format!("`{}`", plain(&segs)),
                }
            }
            None => {
                let tail: Vec<String> = segs.iter().filter(|s| *s != "*").cloned().collect();
                format!(
                    "\"REF:<execution_id>.{}\" for a step's result, `map(array=…, template=\"item.<field>\")` for a field of every element",
                    tail.join(".")
                )
            }
        };
        let d = if error {
            Diagnostic::new(Code::PlanPathSyntax, span, format!("`{written}` is {syntax}, which tdsl does not read"))
                .with_label(if syntax == "jq" { "jq syntax" } else { "JSONPath syntax" })
                .with_help(format!("write {form}"))
        } else {
            Diagnostic::new(
                Code::PlanPathText,
                span,
                format!("`{written}` looks like {syntax}; tdsl passes it on as text"),
            )
            .with_label("passed as text")
            .with_help(format!("to read a value write {form}; keep it if the text is meant"))
        };
        out.push(d);
    }
}

/// A whole string that is a Python or JavaScript literal: its JSON spelling and language.
pub(crate) fn literal(text: &str) -> Option<(&'static str, &'static str)> {
    Some(match text {
        "True" | "TRUE" => ("true", "Python"),
        "False" | "FALSE" => ("false", "Python"),
        "None" => ("null", "Python"),
        "undefined" => ("null", "JavaScript"),
        "null" | "NULL" | "nil" => ("null", "JSON"),
        _ => return None,
    })
}

/// The tdsl spelling of a Python or JavaScript name met in an expression.
pub(crate) fn expression_literal(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "True" | "TRUE" => ("true", "Python"),
        "False" | "FALSE" => ("false", "Python"),
        "None" => ("null", "Python"),
        "undefined" => ("null", "JavaScript"),
        "nil" | "NULL" | "Null" => ("null", "other languages"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting_paths() {
        assert_eq!(segments("a.b[0][\"c\"][*].d"), ["a", "b", "0", "c", "*", "d"]);
        assert_eq!(segments(".items[].name"), ["items", "*", "name"]);
    }

    #[test]
    fn targets() {
        let steps = ["fetch".to_string(), "sum".to_string()];
        let fields = [Some(vec!["text".to_string()]), None];
        let args = ["url".to_string()];
        let names = Names { steps: &steps, fields: &fields, args: &args };
        let t = target(&segments("fetch.output"), &names).expect("names fetch");
        assert_eq!(t.reference, "REF:fetch");
        let t = target(&segments("steps.sum.output.total"), &names).expect("names sum");
        assert_eq!(t.reference, "REF:sum.total");
        let t = target(&segments("fetch.items[*].name"), &names).expect("names fetch");
        assert_eq!((t.reference.as_str(), t.each.as_deref()), ("REF:fetch.items", Some("name")));
        assert!(target(&segments("HOME"), &names).is_none());
        assert_eq!(target(&segments("url"), &names).expect("names the argument").reference, "REF:arguments.url");
    }
}
