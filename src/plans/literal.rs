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

use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use crate::tool::mistakes::{Role, Site};

/// The plan's form of a `.tool` file's warning that would let a plan run wrong: `W0102`
/// becomes `E1320`, `W0606` `E1321`; others are returned as they are.
pub(crate) fn plan_error(mut d: Diagnostic) -> Diagnostic {
    match d.code {
        Code::UnknownField => {
            d.code = Code::PlanAlwaysNull;
            // A field a tool's declared result lacks (closed results, `docs/plans.md`): the
            // message says so as it is, not that the field is null — the tool may return it
            // (an output schema without `additionalProperties` is read as closed).
            let field = d.message.split_once(" declares no field `").and_then(|(_, r)| r.split_once('`'));
            match field {
                Some((field, _)) => {
                    let field = field.to_string();
                    d.message = format!("{}: a plan reads the fields a tool declares", d.message);
                    d.help = Some(format!(
                        "{}; a field the tool returns though it does not declare it is read by key, `r['{field}']` (`r` a transform variable holding the result): `.{field}` and REF paths read declared fields only",
                        d.help.take().unwrap_or_else(|| "read a declared field (tdsl://tools lists them)".to_string())
                    ));
                }
                None => {
                    d.message = format!("{} (a plan does not run with it)", d.message);
                    d.help = Some(match d.help.take() {
                        Some(h) => {
                            format!("{h}; read a declared field (the schema's fields are listed in tdsl://tools)")
                        }
                        None => "read a declared field (tdsl://tools lists them)".to_string(),
                    });
                }
            }
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
/// null") when the plan reads a field that is always null (`E1320`), or when the REF that
/// is the argument's value reads a field its step does not declare (`E1314`: on a closed
/// result that field is null too): the value is null *because* of that read, so the model
/// gets the one cause, not its echo at every use.
pub(crate) fn drop_null_echoes(diags: &mut Vec<Diagnostic>) {
    let always_null = diags.iter().any(|d| d.code == Code::PlanAlwaysNull);
    let undeclared: Vec<Span> = diags.iter().filter(|d| d.code == Code::PlanUnknownField).map(|d| d.span).collect();
    if !always_null && undeclared.is_empty() {
        return;
    }
    diags.retain(|d| {
        let null_echo = d.code == Code::CalleeArgumentType && d.message.ends_with(", and this is null");
        let caused = always_null || undeclared.iter().any(|u| d.span.start <= u.start && u.end <= d.span.end);
        !(null_echo && caused)
    });
}

/// A required parameter reported missing (`E0106`) at a call where a misspelt keyword
/// (`E0104`, "did you mean `condition_string`?") is that parameter: one mistake, one
/// diagnostic (`filter(array=xs, condition="…")` got both).
pub(crate) fn drop_keyword_echoes(diags: &mut Vec<Diagnostic>) {
    let meant: Vec<(Span, String)> = diags
        .iter()
        .filter(|d| d.code == Code::UnknownKeyword)
        .filter_map(|d| {
            let help = d.help.as_deref()?;
            let (_, rest) = help.split_once("did you mean `")?;
            let (name, _) = rest.split_once('`')?;
            Some((d.span, name.to_string()))
        })
        .collect();
    if meant.is_empty() {
        return;
    }
    diags.retain(|d| {
        d.code != Code::MissingArgument
            || !meant.iter().any(|(at, name)| {
                d.span.start <= at.start
                    && at.end <= d.span.end
                    && d.message.ends_with(&format!("is missing argument `{name}`"))
            })
    });
}

/// The help of a malformed REF (`E0006`) written with brackets, `"REF:bugs.issues[0].number"`:
/// the same REF dotted, which is how a REF indexes (`REF:bugs.issues.0.number`). `None` when
/// the REF has no brackets or is still malformed without them.
pub(crate) fn dotted_ref(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("malformed REF `")?;
    let (written, _) = rest.split_once("`:")?;
    if !written.contains('[') {
        return None;
    }
    static INDEX: OnceLock<Regex> = OnceLock::new();
    let dotted = regex(&INDEX, r#"\[\s*(?:(\d+)|"([A-Za-z_][A-Za-z0-9_-]*)"|'([A-Za-z_][A-Za-z0-9_-]*)')\s*\]"#)
        .replace_all(written, |c: &regex::Captures<'_>| {
            let segment = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).map_or("", |m| m.as_str());
            format!(".{segment}")
        })
        .into_owned();
    crate::syntax::parse_ref(&dotted).ok()?;
    Some(format!("a REF's path is dotted, indices too: write \"{dotted}\""))
}

/// The help of a malformed REF (`E0006`) that is an expression, `"REF:a.issues.0.id + 1"`:
/// a REF reads a value and computes nothing, so the value is computed in the step's
/// `transform_arguments` (the REF at `pointer` is an argument's) or in a transform step
/// (hostile round 10, finding 18). `None` when the REF holds no operator, call or space.
/// The expression offered is one that checks: the text itself, or another language's method
/// call as tdsl's (`REF:i.title.upper()` is `upper(REF:i.title)`); when neither checks, the
/// help says so, and shows no expression (outside round 11, finding 7).
pub(crate) fn computed_ref(message: &str, pointer: &str) -> Option<String> {
    let (_, rest) = message.split_once("malformed REF `")?;
    let (written, _) = rest.rsplit_once("`:")?;
    let path_end = written.find(|c: char| c.is_whitespace() || "+-*/%<>=!(),&|".contains(c))?;
    // A hyphen inside a name (`get-user`) is a name's.
    if written[path_end..].starts_with('-') && !written[..path_end].ends_with(' ') {
        let after = &written[path_end + 1..];
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
    }
    let segments: Vec<&str> = pointer.split('/').collect();
    let expression = [Some(written.to_string()), crate::syntax::foreign::method_call(written)]
        .into_iter()
        .flatten()
        .find(|e| checks(e));
    let value = match &expression {
        Some(e) => serde_json::to_string(e).ok()?,
        None => "<a tdsl expression>".to_string(),
    };
    let (place, write) = match segments.as_slice() {
        ["", "instructions", _, "arguments", name] => (
            "in the step's `transform_arguments` (in place of the argument)".to_string(),
            format!("\"transform_arguments\": {{\"transforms\": {{\"{name}\": {value}}}}}"),
        ),
        _ => (
            "in a transform step".to_string(),
            format!(
                "{{\"execution_id\": \"calc\", \"transform_responses\": {{\"transforms\": {{\"value\": {value}}}}}}}, and write \"REF:calc.value\""
            ),
        ),
    };
    Some(match expression {
        Some(_) => format!("a REF reads a value and computes nothing: compute it {place}: {write}"),
        None => {
            // Another language's form, said in tdsl's, unless that is what did not check.
            let also = crate::syntax::foreign::syntax(written)
                .filter(|_| crate::syntax::foreign::method_call(written).is_none())
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            format!(
                "a REF reads a value and computes nothing, and this text is no tdsl expression either{also}: compute the value with one {place}: {write}; a function takes the value as its argument, `f(REF:…)`"
            )
        }
    })
}

/// Whether `expression` parses and checks with its REFs of any type: what a help may offer
/// to be pasted.
pub(crate) fn checks(expression: &str) -> bool {
    let contexts = crate::analysis::mentioned_contexts(expression);
    let mut scope = crate::types::Scope::closed().with_ref_contexts();
    for c in &contexts {
        scope = scope.with_ref(c, crate::types::Type::Any);
    }
    let analysis = crate::Engine::new().analyze(expression, &scope);
    !analysis.diagnostics.iter().any(Diagnostic::is_error)
}

/// The help of a malformed REF (`E0006`) whose path names a field that is no identifier,
/// `"REF:user.2fa"`: a REF path cannot name it, an expression can (`r['2fa']`). `None` when
/// no segment is such a name.
pub(crate) fn odd_field_ref(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("malformed REF `")?;
    let (written, _) = rest.split_once("`:")?;
    let (context, path) = written.strip_prefix("REF:")?.split_once('.')?;
    let odd = path
        .split('.')
        .find(|s| !s.is_empty() && !s.bytes().all(|b| b.is_ascii_digit()) && !crate::tool::is_identifier(s))?;
    let before = path.split_once(&format!(".{odd}")).map_or(String::new(), |(b, _)| format!(".{b}"));
    let before = if path.starts_with(odd) { String::new() } else { before };
    Some(format!(
        "a REF path cannot name the field `{odd}`: read it in a transform, `\"variables\": {{\"r\": \"REF:{context}{before}\"}}` and `r['{odd}']`"
    ))
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

/// One step of the way into an argument's value: a field of an object, an element of a list.
enum Step<'a> {
    Field(&'a str),
    Element(usize),
}

/// `E0630` for the literals inside an upstream tool's arguments (`"filter": {"state":
/// "pending"}`, `"labels": [{"kind": "feature"}]`) that break the `enum` or bounds the
/// (resolved) input schema gives them: in an object's property, in a list's elements, in a
/// `$ref`'d definition. The analysis holds an argument's own value and the elements of a
/// list of plain values against the declaration ([`super::upstream`]); what lies deeper only
/// the schema says. `ins` is the step (its `arguments` and a literal `iterate_over`, whose
/// elements are the child argument's values), `tool` its callee.
pub(crate) fn nested_constraints(
    ins: &crate::tool::JsonNode,
    name: &str,
    input: &serde_json::Value,
    out: &mut Vec<Diagnostic>,
) {
    let Some(entries) = ins.as_object() else { return };
    let get = |k: &str| entries.iter().find(|(key, _)| key.node == k).map(|(_, v)| v);
    let Some(props) = input.get("properties").and_then(serde_json::Value::as_object) else { return };
    if let Some(args) = get("arguments").and_then(crate::tool::JsonNode::as_object) {
        for (k, v) in args {
            if let Some(schema) = props.get(&k.node) {
                walk_value(v, schema, &mut Vec::new(), name, &k.node, out);
            }
        }
    }
    // A fan-out over a literal list: each element is the value of the child argument.
    let parallel = get("parallel_execution").and_then(crate::tool::JsonNode::as_object);
    let field = |k: &str| parallel.and_then(|p| p.iter().find(|(key, _)| key.node == k)).map(|(_, v)| v);
    if let (Some(items), Some(child)) = (
        field("iterate_over").and_then(crate::tool::JsonNode::as_list),
        field("child_argument_name").and_then(crate::tool::JsonNode::as_str),
    ) {
        if let Some(schema) = props.get(&*child.value) {
            for (i, item) in items.iter().enumerate() {
                walk_value(item, schema, &mut vec![Step::Element(i)], name, &child.value, out);
            }
        }
    }
}

/// Holds `node` (at `path` inside argument `arg`) against `schema`, then its fields and
/// elements against theirs. Only what lies inside an object, or two levels down, is
/// reported here: the argument itself and a list's plain elements are the analysis'.
fn walk_value<'a>(
    node: &'a crate::tool::JsonNode,
    schema: &serde_json::Value,
    path: &mut Vec<Step<'a>>,
    tool: &str,
    arg: &str,
    out: &mut Vec<Diagnostic>,
) {
    use crate::tool::JsonKind;
    if schema.get(crate::export::resolve::CUT).is_some() || path.len() > crate::export::resolve::MAX_DEPTH {
        return;
    }
    match &node.kind {
        JsonKind::Object(entries) => {
            let Some(props) = schema.get("properties").and_then(serde_json::Value::as_object) else { return };
            // The object's field names and their listing, made once for all its unknown
            // fields (20,000 of them against 5,000 names made 100 million copies).
            let mut known: Option<Known<'_>> = None;
            for (k, v) in entries {
                if let Some(s) = props.get(&k.node) {
                    path.push(Step::Field(&k.node));
                    walk_value(v, s, path, tool, arg, out);
                    path.pop();
                } else if super::upstream::closed_schema(schema) {
                    let known = known.get_or_insert_with(|| Known::of(props));
                    out.push(unknown_field(k, known, path, tool, arg));
                }
            }
        }
        JsonKind::List(items) => {
            let Some(s) = schema.get("items") else { return };
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Element(i));
                walk_value(item, s, path, tool, arg, out);
                path.pop();
            }
        }
        JsonKind::Null => {}
        JsonKind::Str(s) if s.value.starts_with("REF:") => {}
        _ => {
            let inside_object = path.iter().any(|s| matches!(s, Step::Field(_)));
            if !inside_object && path.len() < 2 {
                return;
            }
            let value = node.to_value();
            let Some(why) = schema_constraints(schema).violation(&value) else { return };
            let (at, dotted) = place(path, arg);
            let declares = format!(
                "`{tool}` declares the allowed values of `{dotted}` in its input schema (tdsl://tools shows them)"
            );
            let help = match nearest_allowed(&value, schema) {
                Some(meant) => format!("did you mean {meant}? {declares}"),
                None => declares,
            };
            out.push(
                Diagnostic::new(
                    Code::LiteralBreaksConstraint,
                    node.span,
                    format!("argument `{arg}` of `{tool}`, {at}, must {} (`{}`)", why.rule, why.key),
                )
                .with_label(format!("refused by `{}`", why.key))
                .with_help(help),
            );
        }
    }
}

/// Where a value lies inside argument `arg`, in words (`element 0, field \`sku\``) and
/// dotted (`query.lines[0].sku`).
fn place(path: &[Step<'_>], arg: &str) -> (String, String) {
    let mut at = String::new();
    let mut dotted = arg.to_string();
    for s in path {
        let sep = if at.is_empty() { "" } else { ", " };
        match s {
            Step::Field(f) => {
                at.push_str(&format!("{sep}field `{f}`"));
                dotted.push('.');
                dotted.push_str(f);
            }
            Step::Element(i) => {
                at.push_str(&format!("{sep}element {i}"));
                dotted.push_str(&format!("[{i}]"));
            }
        }
    }
    (at, dotted)
}

/// `E1322`: a field of an object literal inside an argument that the input schema does not
/// declare there (`"query": {"state": "open"}` when the model has `status`).
/// The fields an object schema declares: their names, and how a help lists them (the
/// first [`SHOWN_FIELDS`], then how many in all).
struct Known<'a> {
    names: Vec<&'a str>,
    listed: String,
}

/// The most field names the help of `E1322` lists.
const SHOWN_FIELDS: usize = 40;

impl<'a> Known<'a> {
    fn of(props: &'a serde_json::Map<String, serde_json::Value>) -> Known<'a> {
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        let listed = if names.len() > SHOWN_FIELDS {
            format!("{}, … ({} in all)", names[..SHOWN_FIELDS].join(", "), names.len())
        } else {
            names.join(", ")
        };
        Known { names, listed }
    }
}

fn unknown_field(
    key: &crate::span::Spanned<String>,
    known: &Known<'_>,
    path: &[Step<'_>],
    tool: &str,
    arg: &str,
) -> Diagnostic {
    let (_, dotted) = place(path, arg);
    let fields = &known.listed;
    let help = match crate::suggest::did_you_mean(&key.node, known.names.iter().copied()) {
        Some(s) => format!("did you mean `{s}`? known fields of `{dotted}`: {fields}"),
        None => format!("known fields of `{dotted}`: {fields} (tdsl://tools shows them)"),
    };
    Diagnostic::new(
        Code::PlanUnknownArgumentField,
        key.span,
        format!(
            "`{tool}` takes no field `{}` in `{dotted}`: the tool would never see it (its input schema drops or refuses it)",
            key.node
        ),
    )
    .with_label("not in the input schema")
    .with_help(help)
}

/// The allowed value a string outside a schema's `enum` was most likely meant to be
/// ([`meant_value`]), quoted as JSON.
fn nearest_allowed(value: &crate::value::Value, schema: &serde_json::Value) -> Option<String> {
    let allowed: Vec<&str> = schema.get("enum")?.as_array()?.iter().filter_map(serde_json::Value::as_str).collect();
    meant_value(&allowed, value.as_str()?)
}

/// Of the `allowed` values, the one `written` was most likely meant to be
/// ([`crate::suggest::meant_value`]), quoted as JSON.
fn meant_value(allowed: &[&str], written: &str) -> Option<String> {
    crate::suggest::meant_value(allowed, written).map(|m| serde_json::Value::from(m).to_string())
}

/// "did you mean …?" for a value outside an enum that the analysis reports with its allowed
/// values in the message: `E0630` (`argument \`state\` of \`gh/search_issues\` must be one
/// of "open", "closed" (\`enum\`)`, the value being `literal`, the JSON text at the span)
/// and `E0204` (`\`direction\` of \`sort\` must be one of "asc", "desc", found
/// "descending"`). `None` when nothing allowed is near, or the message has no such list.
pub(crate) fn enum_hint(message: &str, literal: &str) -> Option<String> {
    let (_, rest) = message.split_once(" must be one of ")?;
    let (list, written) = match rest.split_once(", found ") {
        Some((list, found)) => (list, serde_json::from_str::<String>(found.trim()).ok()?),
        None => (rest.strip_suffix(" (`enum`)")?, serde_json::from_str::<String>(literal).ok()?),
    };
    let allowed: Vec<serde_json::Value> = serde_json::from_str(&format!("[{list}]")).ok()?;
    let allowed: Vec<&str> = allowed.iter().filter_map(serde_json::Value::as_str).collect();
    meant_value(&allowed, &written).map(|m| format!("did you mean {m}?"))
}

/// The `enum` (or `const`) and bounds a (resolved) schema gives a plain value, as a
/// declaration's constraints ([`crate::tool::constraints`] words the violation).
fn schema_constraints(schema: &serde_json::Value) -> crate::tool::constraints::Constraints {
    use crate::span::Spanned;
    let mut c = crate::tool::constraints::Constraints::default();
    let values = schema
        .get("enum")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .or_else(|| schema.get("const").map(|v| vec![v.clone()]))
        .filter(|v| !v.is_empty());
    if let Some(values) = values {
        let values = values.iter().map(crate::value::Value::from).collect();
        c.enum_values = Some(Spanned::new(values, Span::default()));
    }
    let number = |k: &str| schema.get(k).and_then(serde_json::Value::as_f64).map(|n| Spanned::new(n, Span::default()));
    c.minimum = number("minimum");
    c.maximum = number("maximum");
    c
}
