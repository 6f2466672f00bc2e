//! Nothing silently wrong in a plan (SPEC §13): what a `.tool` file is only warned of, a
//! plan is refused for, and text that a model meant computed but that goes to the tool as
//! written is pointed out.
//!
//! - An expression the checker knows is always `null` (`W0102`: a field the callee's schema
//!   does not declare) is the error `E1320`, with the declared fields in the help.
//! - A plan argument read but not declared (`W0606`) is the error `E1321`.
//! - A string value that is sent as literal text though it reads as computed is the warning
//!   `W1320`, with the tdsl form: `REF:` after other text (`"Rate is REF:fx.rate"`: only a
//!   whole string is a REF), a call (`"upper(name)"`), a Python f-string (`f"{city}"`) or a
//!   `{name}` template placeholder. (`{{x}}`, `${x}`, `$1` and `#E1` are `mistakes`'.)

use std::sync::OnceLock;

use regex::Regex;

use super::mistakes::{Role, Site};
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;

/// The plan's form of a `.tool` file's warning that would let a plan run wrong: `W0102`
/// becomes `E1320`, `W0606` `E1321`; others are returned as they are.
pub(crate) fn plan_error(mut d: Diagnostic) -> Diagnostic {
    match d.code {
        Code::UnknownField => {
            d.code = Code::PlanAlwaysNull;
            d.message = format!("{} (a plan does not run with it)", d.message);
            d.help = Some(match d.help.take() {
                Some(h) => format!("{h}; read a declared field (the schema's fields are listed in tdsl://tools)"),
                None => "read a declared field (tdsl://tools lists them)".to_string(),
            });
        }
        Code::OpenArgument => {
            let name = d
                .message
                .split_once("`REF:arguments.")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map_or("NAME", |(n, _)| n)
                .to_string();
            d.code = Code::PlanUndeclaredArgument;
            d.message = format!("`REF:arguments.{name}` reads an argument this plan does not declare");
            d.help = Some(format!(
                "declare it in the plan, \"arguments\": [{{\"name\": \"{name}\", \"type_name\": \"string\", \"required\": true}}], and pass its value in run_plan's \"arguments\": {{\"{name}\": …}}; or write the value itself instead of the REF"
            ));
        }
        _ => {}
    }
    d
}

/// An argument found to be `null` where the callee wants a value (`E0613`, "and this is
/// null") when the plan reads a field that is always null (`E1320`): the value is null
/// *because* of that read, so the model gets the one cause, not its echo at every use.
pub(crate) fn drop_null_echoes(diags: &mut Vec<Diagnostic>) {
    if diags.iter().any(|d| d.code == Code::PlanAlwaysNull) {
        diags.retain(|d| !(d.code == Code::CalleeArgumentType && d.message.ends_with(", and this is null")));
    }
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|e| panic!("the pattern {pattern} is valid: {e}")))
}

/// `W1320` for one string of the plan: a value (not a transform variable, not an
/// expression) that reads as something computed but will be sent as it is written.
pub(crate) fn check_site(site: &Site<'_>, out: &mut Vec<Diagnostic>) {
    if site.role != Role::Value || site.variable {
        return;
    }
    let text = &*site.text.value;
    if text.starts_with("REF:") {
        return;
    }
    let at = |start: usize, end: usize| site.text.map_span(Span::new(start, end));
    static REF: OnceLock<Regex> = OnceLock::new();
    static FSTRING: OnceLock<Regex> = OnceLock::new();
    static BRACE: OnceLock<Regex> = OnceLock::new();
    static CALL: OnceLock<Regex> = OnceLock::new();

    let refs: Vec<regex::Match<'_>> =
        regex(&REF, r"REF:[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*").find_iter(text).collect();
    if let Some(first) = refs.first() {
        // The text as an expression: its literal parts quoted, each REF as text.
        let mut parts = Vec::new();
        let mut last = 0;
        for m in &refs {
            if m.start() > last {
                parts.push(serde_json::Value::from(&text[last..m.start()]).to_string());
            }
            parts.push(format!("to_string({})", m.as_str()));
            last = m.end();
        }
        if last < text.len() {
            parts.push(serde_json::Value::from(&text[last..]).to_string());
        }
        let expression = parts.join(" + ");
        out.push(
            Diagnostic::new(
                Code::PlanLiteralText,
                at(first.start(), first.end()),
                format!(
                    "`{}` is inside text: only a string that is one whole REF is replaced, so the tool gets this text as written",
                    first.as_str()
                ),
            )
            .with_label("sent as literal text")
            .with_help(format!(
                "compute the text in the step's `transform_arguments`: \"transforms\": {{\"<argument>\": {}}} (or `join(array=[…], separator=\"\")`)",
                serde_json::Value::from(expression)
            )),
        );
        return;
    }
    if let Some(m) = regex(&FSTRING, r#"\bf("[^"]*\{[^"]*"|'[^']*\{[^']*')"#).find(text) {
        out.push(
            Diagnostic::new(
                Code::PlanLiteralText,
                at(m.start(), m.end()),
                format!("`{}` is a Python f-string: tdsl does not evaluate it, so the tool gets this text as written", m.as_str()),
            )
            .with_label("sent as literal text")
            .with_help("build the text with `+` in the step's `transform_arguments`: \"transforms\": {\"<argument>\": \"\\\"Weather in \\\" + REF:arguments.city\"}"),
        );
        return;
    }
    if let Some(c) =
        regex(&BRACE, r"(?:^|[^{$])(\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+|\[\d+\])*)\s*\})(?:[^}]|$)")
            .captures(text)
    {
        if let (Some(m), Some(name)) = (c.get(1), c.get(2)) {
            out.push(
                Diagnostic::new(
                    Code::PlanLiteralText,
                    at(m.start(), m.end()),
                    format!("`{}` is a template placeholder that tdsl does not fill: the tool gets this text as written", m.as_str()),
                )
                .with_label("sent as literal text")
                .with_help(format!(
                    "for a value write the whole string \"REF:<step>.{}\" (or \"REF:arguments.{}\"); to put it into text, build the text with `+` in `transform_arguments`: \"\\\"…\\\" + REF:<step>.{}\"",
                    name.as_str(),
                    name.as_str(),
                    name.as_str()
                )),
            );
            return;
        }
    }
    if let Some(c) = regex(&CALL, r"^\s*([A-Za-z_][A-Za-z0-9_]*)\((.*)\)\s*$").captures(text) {
        if let (Some(name), Some(m)) = (c.get(1), c.get(0)) {
            let call = text.trim();
            out.push(
                Diagnostic::new(
                    Code::PlanLiteralText,
                    at(m.start(), m.end()),
                    format!(
                        "`{call}` reads as a call of `{}`, but a string value is text: the tool gets `{call}` as written",
                        name.as_str()
                    ),
                )
                .with_label("sent as literal text")
                .with_help(format!(
                    "to compute it, make it a transform of the step: \"transform_arguments\": {{\"variables\": {{\"x\": \"REF:<step>.<field>\"}}, \"transforms\": {{\"<argument>\": {}}}}}",
                    serde_json::Value::from(call)
                )),
            );
        }
    }
}
