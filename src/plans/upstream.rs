//! An upstream MCP server's tool as a primitive tool the analysis can check a plan against.
//!
//! A plan calls `SERVER/TOOL`; the tool is known only by what the server's `tools/list`
//! says: its input JSON Schema and, when it has one, its output schema. Both are read whole
//! first ([`resolve_schema`]: local `$ref`s into `$defs`/`definitions` followed, recursive
//! ones cut at a depth of two, `export::resolve::RECURSION_DEPTH`, `anyOf`/`oneOf` with `null` as a nullable type, `allOf`
//! merged). Each property then becomes a declaration (`type_name` as `tdsl check
//! --mcp-schemas` reads schemas, [`crate::export::compare`], with the schema's `enum`,
//! `minimum`/`maximum`, lengths and `default` as the declaration's constraints, so literals
//! are held against them as in a `.tool` file, [`crate::tool::constraints`]), and the tool a
//! `.tool` text whose endpoint is `upstream:SERVER/TOOL` — a scheme no runner of tdsl's
//! knows, so only a host that routes upstream calls ([`upstream_target`]) can run it.
//!
//! What a declaration cannot say — the fields of a nested object, of a list's elements — the
//! analysis gets as [`ExactTypes`]: an object with `properties` is a closed object type (the
//! SDKs' models return exactly their fields; `additionalProperties` other than `false` opens
//! it), so a REF or a template that reads a field the schema does not declare is found
//! before the run (`W0102`, an error in a plan: `E1315`).

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Map, Value as Json};

use crate::analysis::{ExactTypes, LoadedTool, NameRefusal, NamedTools};
use crate::export::resolve::{resolve_schema, type_name_of, CUT};
use crate::tool::TypeName;
use crate::types::Type;
use crate::value::Value;

/// A tool of an upstream MCP server, as its `tools/list` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct UpstreamTool {
    /// The server's name (`--upstream NAME=…`): a plan calls the tool as `SERVER/TOOL`.
    pub server: String,
    /// The tool's name on that server.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its `inputSchema` (a JSON Schema of an object).
    pub input_schema: Json,
    /// Its `outputSchema`, when it has one: without one, its results are not checked
    /// statically (any field may be read).
    pub output_schema: Option<Json>,
}

/// Upstream tools by the name a plan calls them (`SERVER/TOOL`), for a tool root under
/// `root`: what a plan's check resolves its own steps with, and — as the root's
/// [`NamedTools`] — the steps of the composites it calls (a skill's file names its upstream
/// tools the same way).
#[derive(Debug, Default)]
pub(crate) struct UpstreamIndex {
    root: std::path::PathBuf,
    /// The tools, in the order given.
    pub(crate) tools: Vec<UpstreamTool>,
    /// Each `SERVER/TOOL`'s position in `tools`.
    pub(crate) at: std::collections::HashMap<String, usize>,
    /// The tools' schemas once resolved, by position: a check asks for a tool's several
    /// times a step (its declarations, its exact types, the literals held against it), and
    /// a schema of 20,000 nodes (within the bounds of one resolution) cost a tenth of a
    /// second each time — a 64-step plan took seconds. Kept for the index's life, which is
    /// one check's (a copy starts empty).
    resolved: Mutex<std::collections::HashMap<usize, Arc<Resolved>>>,
}

impl Clone for UpstreamIndex {
    fn clone(&self) -> UpstreamIndex {
        UpstreamIndex {
            root: self.root.clone(),
            tools: self.tools.clone(),
            at: self.at.clone(),
            resolved: Mutex::default(),
        }
    }
}

impl UpstreamIndex {
    /// None yet, for a tool root at `root`.
    pub(crate) fn new(root: std::path::PathBuf) -> UpstreamIndex {
        UpstreamIndex { root, ..UpstreamIndex::default() }
    }

    /// The tool a plan calls as `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&UpstreamTool> {
        self.at.get(name).map(|i| &self.tools[*i])
    }

    /// The schemas of the tool a plan calls as `name`, resolved once for the index.
    pub(crate) fn resolved(&self, name: &str) -> Option<Arc<Resolved>> {
        let at = *self.at.get(name)?;
        if let Some(r) = self.resolved.lock().unwrap_or_else(PoisonError::into_inner).get(&at) {
            return Some(r.clone());
        }
        // Resolved without the lock: another step's lookup does not wait for this one.
        let r = Arc::new(self.tools[at].resolved());
        self.resolved.lock().unwrap_or_else(PoisonError::into_inner).insert(at, r.clone());
        Some(r)
    }

    /// The tool a plan calls as `name`, as the analysis loads it when first named `written`
    /// ([`UpstreamTool::load_under`]), from its schemas resolved once.
    pub(crate) fn load(&self, name: &str, written: &str) -> Option<Result<Arc<LoadedTool>, String>> {
        let schemas = self.resolved(name)?;
        Some(self.get(name)?.load_with(&self.root, written, &schemas))
    }
}

impl NamedTools for UpstreamIndex {
    fn resolve(&self, tool_path: &str) -> Option<Result<std::sync::Arc<LoadedTool>, NameRefusal>> {
        Some(self.load(tool_path, tool_path)?.map_err(|first| untranslatable(tool_path, &first)))
    }
}

/// The refusal of an upstream tool whose schema does not translate into declarations.
pub(crate) fn untranslatable(tool_path: &str, first: &str) -> NameRefusal {
    NameRefusal {
        code: crate::diagnostic::Code::CalleeInvalid,
        message: format!("the upstream tool `{tool_path}` cannot be called: its schema does not translate ({first})"),
        label: "schema tdsl cannot declare".into(),
        help: "call another tool of that server".into(),
    }
}

/// An upstream tool's schemas read whole, and the static types they give (worked out once).
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The input schema, resolved.
    pub(crate) input: Json,
    /// The output schema, resolved, when there is one.
    pub(crate) output: Option<Json>,
    exact: std::sync::OnceLock<ExactTypes>,
}

impl Resolved {
    /// The static types of the tool's arguments and responses as the schemas give them.
    pub(crate) fn exact_types(&self) -> ExactTypes {
        let of = |schema: &Json| {
            schema
                .get("properties")
                .and_then(Json::as_object)
                .map(|p| p.iter().map(|(k, s)| (k.clone(), schema_type(s))).collect())
                .unwrap_or_default()
        };
        self.exact
            .get_or_init(|| ExactTypes {
                arguments: of(&self.input),
                responses: self.output.as_ref().map(of).unwrap_or_default(),
                responses_open: self.output.as_ref().is_some_and(|o| !closed_schema(o)),
            })
            .clone()
    }
}

/// The endpoint scheme of an upstream tool's synthetic definition.
pub(crate) const UPSTREAM_SCHEME: &str = "upstream:";

/// The most `enum` values a listing line shows of one schema.
const SHOWN_VALUES: usize = 12;

impl UpstreamTool {
    /// How a plan names it: `SERVER/TOOL`.
    pub fn plan_name(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    /// Its schemas, read whole ([`resolve_schema`]).
    pub(crate) fn resolved(&self) -> Resolved {
        Resolved {
            input: resolve_schema(&self.input_schema),
            output: self.output_schema.as_ref().map(resolve_schema),
            exact: std::sync::OnceLock::new(),
        }
    }

    /// Its description, whole, with a docstring's indentation taken off.
    pub(crate) fn description_text(&self) -> Option<String> {
        self.description.as_deref().map(clean_doc).filter(|d| !d.is_empty())
    }

    /// The `.tool` text that stands for it in the analysis: a primitive tool with the
    /// schemas' properties as declarations (with their constraints) and the endpoint
    /// `upstream:SERVER/TOOL`.
    pub fn tool_source(&self) -> String {
        let schemas = self.resolved();
        self.source_of(&schemas.input, schemas.output.as_ref(), true)
    }

    fn source_of(&self, input: &Json, output: Option<&Json>, constraints: bool) -> String {
        let mut tool = Map::new();
        tool.insert(
            "description".into(),
            Json::String(self.description_text().unwrap_or_else(|| format!("`{}` of {}", self.name, self.server))),
        );
        if let Some(args) = declarations(input, false, constraints) {
            tool.insert("arguments".into(), Json::Array(args));
        }
        if let Some(responses) = output.and_then(|o| declarations(o, true, constraints)) {
            tool.insert("responses".into(), Json::Array(responses));
        }
        tool.insert("system_event_endpoint".into(), Json::String(format!("{UPSTREAM_SCHEME}{}", self.plan_name())));
        serde_json::to_string_pretty(&Json::Object(tool)).unwrap_or_default()
    }

    /// The static types of its arguments and responses as the schemas give them.
    #[cfg(test)]
    pub(crate) fn exact_types(&self) -> ExactTypes {
        self.resolved().exact_types()
    }

    /// The tool as the analysis loads it (at `file`, first named `written`): its `.tool`
    /// text and its exact types. A constraint the loader refuses (a schema's `default` its
    /// own bounds refuse) is dropped with the others rather than make the tool uncallable.
    fn loaded_from(&self, schemas: &Resolved, file: std::path::PathBuf, written: String) -> LoadedTool {
        let (input, output) = (&schemas.input, &schemas.output);
        let load = |text: String| {
            let mut loaded = LoadedTool::from_source(file.clone(), written.clone(), std::sync::Arc::from(text));
            // A field whose name is no identifier (`2fa`, `host.name`, `first name`) is still
            // a field: a plan passes it as an argument's key and reads it with `r['2fa']`;
            // only a REF path cannot name it (`E1314` says to read it so).
            loaded.diagnostics.retain(|d| d.code != crate::diagnostic::Code::InvalidIdentifier);
            loaded
        };
        let mut loaded = load(self.source_of(input, output.as_ref(), true));
        if loaded.has_errors() {
            let again = load(self.source_of(input, output.as_ref(), false));
            if !again.has_errors() {
                loaded = again;
            }
        }
        loaded.with_exact(schemas.exact_types())
    }

    /// The tool as the analysis of a plan or a `.tool` file under `root` loads it (at
    /// `ROOT/.upstream/SERVER/TOOL.tool`, a name for messages: there is no such file), first
    /// named `written`; or, when its schema does not translate into declarations (a property
    /// `@type`, `x.y`), the first problem.
    pub(crate) fn load_under(
        &self,
        root: &std::path::Path,
        written: &str,
    ) -> Result<std::sync::Arc<LoadedTool>, String> {
        self.load_with(root, written, &self.resolved())
    }

    /// [`UpstreamTool::load_under`] from its schemas resolved already.
    pub(crate) fn load_with(
        &self,
        root: &std::path::Path,
        written: &str,
        schemas: &Resolved,
    ) -> Result<std::sync::Arc<LoadedTool>, String> {
        let file = root.join(".upstream").join(&self.server).join(format!("{}.tool", self.name));
        let loaded = self.loaded_from(schemas, file, written.to_string());
        match loaded.diagnostics.iter().find(|d| d.is_error()) {
            Some(first) => Err(first.message.clone()),
            None => Ok(std::sync::Arc::new(loaded)),
        }
    }

    /// Its line in `tdsl://tools`: `SERVER/TOOL(argument: type!, …) → {response: type, …}`
    /// with nested objects' fields, `enum` values, bounds and defaults, then its whole
    /// description and its arguments' and responses' descriptions, indented.
    pub fn listing_line(&self) -> String {
        let schemas = self.resolved();
        let (input, output) = (&schemas.input, &schemas.output);
        let esc = super::escape_controls;
        let args: Vec<String> = properties(input)
            .map(|(n, s, required)| {
                let mut a = format!("{}: {}", esc(n), show(s, 0, Side::Input));
                if required {
                    a.push('!');
                }
                if let Some(d) = s.get("default").filter(|d| !d.is_null()) {
                    a.push_str(&shown_default(d));
                }
                a
            })
            .collect();
        let mut line = format!("- `{}({})`", self.plan_name(), args.join(", "));
        match &output {
            Some(out) if out.get("properties").is_some() => {
                line.push_str(&format!(" → `{}`", show(out, 0, Side::Output)));
            }
            Some(_) => line.push_str(" → `object`"),
            None => line.push_str(" → `{response: any}` (no output schema: read `REF:step.response`)"),
        }
        if let Some(d) = self.description_text() {
            let mut lines = d.lines();
            line.push_str(&format!(": {}", esc(lines.next().unwrap_or_default())));
            for l in lines {
                line.push_str(&if l.trim().is_empty() { "\n".to_string() } else { format!("\n  {}", esc(l)) });
            }
        }
        line.push('\n');
        let described = properties(input)
            .map(|p| (p, "argument"))
            .chain(output.iter().flat_map(properties).map(|p| (p, "response")));
        for ((name, schema, _), what) in described {
            if let Some(d) = schema.get("description").and_then(Json::as_str).map(clean_doc).filter(|d| !d.is_empty()) {
                line.push_str(&format!("  - {what} `{}`: {}\n", esc(name), esc(&d.replace('\n', " "))));
            }
        }
        line
    }
}

/// The properties of an object schema: name, schema, whether required.
fn properties(schema: &Json) -> impl Iterator<Item = (&str, &Json, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Json::as_array)
        .map_or(Vec::new(), |r| r.iter().filter_map(Json::as_str).collect());
    schema
        .get("properties")
        .and_then(Json::as_object)
        .into_iter()
        .flatten()
        .map(move |(n, s)| (n.as_str(), s, required.contains(&n.as_str())))
}

/// A docstring as `inspect.cleandoc` makes it: the first line trimmed, the others without
/// their common indentation, blank lines at both ends dropped.
fn clean_doc(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    for (i, l) in lines.drain(..).enumerate() {
        let l = if i == 0 { l.trim() } else { l.get(indent..).unwrap_or(l.trim_start()).trim_end() };
        out.push(l.to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    out.join("\n")
}

/// The non-null JSON types a schema names.
fn json_types(schema: &Json) -> (Vec<&str>, bool) {
    let all: Vec<&str> = match schema.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let nullable = all.contains(&"null");
    (all.into_iter().filter(|t| *t != "null").collect(), nullable)
}

/// The static type of a value a (resolved) schema describes: an object with `properties` is
/// closed unless `additionalProperties` says otherwise, and its fields that are neither
/// required nor defaulted may be `null` (absent).
pub(crate) fn schema_type(schema: &Json) -> Type {
    if schema.get(CUT).is_some() {
        return Type::Any;
    }
    if let Some(alts) = schema.get("anyOf").and_then(Json::as_array) {
        return Type::union_all(alts.iter().map(schema_type));
    }
    let (types, nullable) = json_types(schema);
    // `enum` (or `const`, a one-value enum): strings make a string enum, other values their
    // own types (`Type::of_values`); beside a `type`, only the values of that type count.
    let values: Option<Vec<Value>> = match (schema.get("enum").and_then(Json::as_array), schema.get("const")) {
        (Some(values), _) => Some(values.iter().map(Value::from).collect()),
        (None, Some(one)) => Some(vec![Value::from(one)]),
        (None, None) => None,
    };
    let t = if types.is_empty() {
        match (schema.get("properties"), &values) {
            (Some(_), _) => object_type(schema),
            (None, Some(values)) if !values.is_empty() => Type::of_values(values),
            _ if nullable => Type::Null,
            _ => Type::Any,
        }
    } else {
        Type::union_all(types.iter().map(|t| match *t {
            "string" => Type::Str,
            "integer" => Type::Int,
            "number" => Type::Number,
            "boolean" => Type::Bool,
            "array" => match schema.get("items") {
                Some(items) => Type::List(std::sync::Arc::new(schema_type(items))),
                None => Type::any_list(),
            },
            "object" => object_type(schema),
            _ => Type::Any,
        }))
    };
    let t = match &values {
        Some(values) if !types.is_empty() => t.narrowed_to(values),
        _ => t,
    };
    if nullable {
        t.union(Type::Null)
    } else {
        t
    }
}

fn object_type(schema: &Json) -> Type {
    let Some(props) = schema.get("properties").and_then(Json::as_object).filter(|p| !p.is_empty()) else {
        // `{"type": "object", "additionalProperties": false}`: the empty object.
        return match schema.get("additionalProperties") {
            Some(Json::Bool(false)) if closed_schema(schema) => Type::object([], false),
            _ => Type::any_object(),
        };
    };
    let open = !closed_schema(schema);
    let fields: Vec<(std::sync::Arc<str>, Type)> = properties(schema)
        .map(|(name, s, required)| {
            let t = schema_type(s);
            let t = if required || s.get("default").is_some_and(|d| !d.is_null()) { t } else { t.union(Type::Null) };
            (std::sync::Arc::from(name), t)
        })
        .collect();
    debug_assert_eq!(fields.len(), props.len());
    Type::object(fields, open)
}

/// Whether an object schema says what its fields are: no `additionalProperties` other
/// than `false` and no `patternProperties`. A field it does not declare is refused by the
/// server (`additionalProperties: false`, zod's `.strict()`) or, more often, dropped without
/// a word (pydantic's default, zod's default strip): either way the tool never sees it, nor
/// returns it. An absent `additionalProperties` counts as closed, though JSON Schema allows
/// other fields then: the SDKs write their models' schemas so (pydantic's default), and
/// their models take and return exactly their fields. `additionalProperties: true` or a
/// schema, and any `patternProperties` (fields named by a pattern), are open.
pub(crate) fn closed_schema(schema: &Json) -> bool {
    let open = |k: &str| schema.get(k).is_some_and(|v| *v != Json::Bool(false));
    !open("additionalProperties") && !open("patternProperties")
}

/// Which way a schema's values go: what a tool takes shows the defaults the server fills
/// in; what it returns has every field with a default filled in already.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

/// How a (resolved) schema reads in `tdsl://tools`: `string`, `"a"|"b"`, `integer (1..100)`,
/// `list<{id: string, tags: list<string>}>`, `{…}` where recursion was cut.
fn show(schema: &Json, depth: usize, side: Side) -> String {
    if schema.get(CUT).is_some() {
        return "…".to_string();
    }
    if depth > 8 {
        return "…".to_string();
    }
    if let Some(alts) = schema.get("anyOf").and_then(Json::as_array) {
        return alts.iter().map(|a| show(a, depth + 1, side)).collect::<Vec<_>>().join(" | ");
    }
    let (types, nullable) = json_types(schema);
    let enumerated = schema.get("enum").and_then(Json::as_array).map(|values| {
        let mut shown: Vec<String> =
            values.iter().filter(|v| !v.is_null()).take(SHOWN_VALUES).map(Json::to_string).collect();
        if values.len() > SHOWN_VALUES {
            shown.push("…".into());
        }
        shown.join("|")
    });
    let mut parts: Vec<String> = Vec::new();
    if let Some(e) = enumerated {
        parts.push(e);
    } else if types.is_empty() {
        parts.push(if schema.get("properties").is_some() { show_object(schema, depth, side) } else { "any".into() });
    } else {
        for t in &types {
            parts.push(match *t {
                "array" => match schema.get("items") {
                    Some(items) => format!("list<{}>", show(items, depth + 1, side)),
                    None => "list".to_string(),
                },
                "object" => show_object(schema, depth, side),
                t => format!("{t}{}", bounds(schema)),
            });
        }
    }
    if nullable {
        parts.push("null".into());
    }
    parts.join(" | ")
}

fn show_object(schema: &Json, depth: usize, side: Side) -> String {
    let fields: Vec<String> = properties(schema)
        .map(|(n, s, required)| {
            let default = s.get("default").filter(|d| !d.is_null());
            let optional = !required && default.is_none();
            // A field the server fills in when it is left out shows its value, as an
            // argument's does (`direction: "asc"|"desc" = "desc"`): without it the field
            // read as required.
            let filled = match default.filter(|_| !required && side == Side::Input) {
                Some(d) => shown_default(d),
                None => String::new(),
            };
            format!(
                "{}{}: {}{filled}",
                super::escape_controls(n),
                if optional { "?" } else { "" },
                show(s, depth + 1, side)
            )
        })
        .collect();
    if fields.is_empty() {
        return "object".to_string();
    }
    let open = !closed_schema(schema);
    format!("{{{}{}}}", fields.join(", "), if open { ", …" } else { "" })
}

/// ` = 10`, ` = "desc"`: a default as `tdsl://tools` shows it, its JSON cut at 60
/// characters and its control characters escaped.
fn shown_default(d: &Json) -> String {
    let text = d.to_string();
    let shown = match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    };
    format!(" = {}", super::escape_controls(&shown))
}

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`): zod 4
/// bounds every `.int()` by it and its negation, which says no more than `integer`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// ` (1..100)`, ` (≥1)`, ` (≤7)`, or nothing (a bound at ±[`MAX_SAFE_INTEGER`] is none).
fn bounds(schema: &Json) -> String {
    let n =
        |k: &str| schema.get(k).filter(|v| v.as_f64().is_some_and(|f| f.abs() < MAX_SAFE_INTEGER)).map(Json::to_string);
    match (n("minimum"), n("maximum")) {
        (Some(a), Some(b)) => format!(" ({a}..{b})"),
        (Some(a), None) => format!(" (≥{a})"),
        (None, Some(b)) => format!(" (≤{b})"),
        (None, None) => String::new(),
    }
}

/// The declarations of an object schema's properties (`None` when it lists none: then
/// anything is accepted). `responses`: a response is required when the schema requires it
/// and it cannot be null. With `constraints`, each carries the schema's `enum`, bounds,
/// lengths and `default` that apply to its type.
fn declarations(schema: &Json, responses: bool, constraints: bool) -> Option<Vec<Json>> {
    schema.get("properties")?.as_object()?;
    Some(
        properties(schema)
            .map(|(name, prop, required)| {
                let type_name = type_name_of(prop);
                let nullable = json_types(prop).1;
                let mut d = Map::new();
                d.insert("name".into(), json!(name));
                d.insert("type_name".into(), json!(type_name));
                d.insert("required".into(), json!(required && !(responses && nullable)));
                if let Some(text) = prop.get("description").and_then(Json::as_str).map(clean_doc) {
                    d.insert("description".into(), Json::String(text));
                }
                if constraints {
                    let ty = TypeName::parse(&type_name).unwrap_or(TypeName::Any);
                    add_constraints(&mut d, prop, &ty, !responses);
                    if let (TypeName::List(Some(elem)), Some(items)) = (&ty, prop.get("items")) {
                        let mut e = Map::new();
                        add_constraints(&mut e, items, elem, false);
                        if !e.is_empty() {
                            e.insert("type_name".into(), json!(elem.to_string()));
                            d.insert("type_name".into(), json!("list"));
                            d.insert("items".into(), Json::Object(e));
                        }
                    }
                }
                Json::Object(d)
            })
            .collect(),
    )
}

/// The constraints of `prop` that apply to a declaration of type `ty` (as
/// [`crate::tool::constraints`] reads them), each only when the loader would take it.
fn add_constraints(d: &mut Map<String, Json>, prop: &Json, ty: &TypeName, with_default: bool) {
    let numeric = matches!(ty, TypeName::Number | TypeName::Integer | TypeName::Any);
    let sized = matches!(ty, TypeName::String | TypeName::List(_) | TypeName::Any);
    let fits = |v: &Json| v.is_null() || crate::tool::validate::fits(&Value::from(v), ty);
    if let Some(values) = prop.get("enum").and_then(Json::as_array).filter(|v| !v.is_empty()) {
        if values.iter().all(fits) && values.iter().any(|v| !v.is_null()) {
            d.insert("enum".into(), Json::Array(values.clone()));
        }
    }
    let mut min = None;
    for (key, to) in [("minimum", "minimum"), ("maximum", "maximum")] {
        if let Some(n) = prop.get(key).filter(|n| n.is_number() && numeric) {
            if key == "minimum" {
                min = n.as_f64();
            } else if min.zip(n.as_f64()).is_some_and(|(a, b)| a > b) {
                continue;
            }
            d.insert(to.into(), n.clone());
        }
    }
    let (min_key, max_key) =
        if matches!(ty, TypeName::List(_)) { ("minItems", "maxItems") } else { ("minLength", "maxLength") };
    for (key, to) in [(min_key, "min_length"), (max_key, "max_length")] {
        if let Some(n) = prop.get(key).filter(|n| n.is_u64() && sized) {
            d.insert(to.into(), n.clone());
        }
    }
    if with_default {
        if let Some(v) = prop.get("default").filter(|v| fits(v)) {
            d.insert("default".into(), v.clone());
        }
    }
}

/// The server and tool an upstream tool's endpoint calls (`upstream:SERVER/TOOL`), for a
/// host runner that routes those calls: `None` for any other endpoint. A runner reads the
/// endpoint of its call with `ToolCall::endpoint`:
///
/// ```
/// use tdsl::upstream_target;
///
/// assert_eq!(upstream_target("upstream:weather/forecast"), Some(("weather", "forecast")));
/// assert_eq!(upstream_target("exec:./forecast"), None);
/// // In a runner: `call.endpoint().and_then(upstream_target)`.
/// ```
pub fn upstream_target(endpoint: &str) -> Option<(&str, &str)> {
    endpoint.strip_prefix(UPSTREAM_SCHEME)?.split_once('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_become_declarations() {
        let t = UpstreamTool {
            server: "web".into(),
            name: "fetch".into(),
            description: None,
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}, "max": {"type": "integer"}}, "required": ["url"]}),
            output_schema: Some(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
        };
        let (def, diags) = crate::tool::load(&t.tool_source());
        assert!(diags.is_empty(), "{diags:?}");
        let def = def.expect("a tool");
        assert_eq!(def.arguments.len(), 2);
        assert!(def.arguments[0].is_required());
        assert_eq!(def.responses[0].name.node, "text");
        let crate::tool::ToolKind::Primitive { system_event_endpoint } = &def.kind else { panic!("a primitive") };
        assert_eq!(upstream_target(&system_event_endpoint.node), Some(("web", "fetch")));
    }

    /// The tools of `tests/mcp_py/shop.py` as the Python SDK lists them (pydantic models).
    fn shop() -> Vec<UpstreamTool> {
        let listed: Json = serde_json::from_str(include_str!("../../tests/data/plans/upstream/pydantic_tools.json"))
            .expect("the fixture is JSON");
        listed
            .as_array()
            .expect("a list")
            .iter()
            .map(|t| UpstreamTool {
                server: "shop".into(),
                name: t["name"].as_str().expect("a name").into(),
                description: t["description"].as_str().map(str::to_string),
                input_schema: t["inputSchema"].clone(),
                output_schema: t.get("outputSchema").cloned(),
            })
            .collect()
    }

    fn tool(name: &str) -> UpstreamTool {
        shop().into_iter().find(|t| t.name == name).expect("a tool of the fixture")
    }

    #[test]
    fn pydantic_models_become_exact_types() {
        let t = tool("list_orders");
        let exact = t.exact_types();
        let result = exact.responses.get("result").expect("the SDK's `result` wrapping").to_string();
        assert!(result.starts_with("list<object{order_id: string, customer: object{customer_id: string"), "{result}");
        assert!(result.contains("lines: list<object{sku: string, quantity: integer, price: number}>"), "{result}");
        assert!(result.contains("note: string | null"), "{result}");
        // An enum in `$defs`, through `$ref` and `anyOf` with null: its values, nullable.
        let status = exact.arguments.get("status").map(Type::to_string);
        assert_eq!(status.as_deref(), Some(r#""open" | "shipped" | "cancelled" | null"#));
        // A recursive model: followed twice, then any value.
        let thread = tool("thread").exact_types();
        let replies = thread.responses.get("replies").expect("replies").to_string();
        assert!(replies.contains("replies: list<object{author: string, text: string, replies: list}>"), "{replies}");
    }

    #[test]
    fn constraints_and_whole_descriptions_are_declared() {
        let (def, diags) = crate::tool::load(&tool("list_orders").tool_source());
        assert!(diags.is_empty(), "{diags:?}");
        let def = def.expect("a tool");
        let description = def.description.as_ref().expect("a description").node.clone();
        assert_eq!(
            description,
            "Lists a customer's orders, newest first.\n\nGive `status` to keep only the orders in that state."
        );
        let limit = def.arguments.iter().find(|p| p.name.node == "limit").expect("limit");
        assert_eq!(limit.constraints.minimum.as_ref().map(|m| m.node), Some(1.0));
        assert_eq!(limit.constraints.maximum.as_ref().map(|m| m.node), Some(100.0));
        assert_eq!(limit.constraints.default.as_ref().map(|d| d.node.clone()), Some(Value::Int(10)));
        let status = def.arguments.iter().find(|p| p.name.node == "status").expect("status");
        let values = &status.constraints.enum_values.as_ref().expect("an enum").node;
        assert!(values.contains(&Value::from("shipped")) && values.contains(&Value::Null), "{values:?}");
        let (rate, diags) = crate::tool::load(&tool("rate").tool_source());
        assert!(diags.is_empty(), "{diags:?}");
        assert!(rate.expect("rate").arguments[0].constraints.enum_values.is_some());
    }

    #[test]
    fn the_listing_shows_fields_values_bounds_and_descriptions() {
        let line = tool("list_orders").listing_line();
        assert!(line.starts_with("- `shop/list_orders(customer_id: string!, status: \"open\"|\"shipped\"|\"cancelled\" | null, limit: integer (1..100) = 10)`"), "{line}");
        assert!(line.contains("→ `{result: list<{order_id: string, customer: {customer_id: string, name: string, email?: string | null}, lines: list<{sku: string, quantity: integer (≥1), price: number}>, status: \"open\"|\"shipped\"|\"cancelled\", note?: string | null}>}`"), "{line}");
        assert!(line.contains("newest first.\n\n  Give `status`"), "{line}");
        assert!(line.contains("  - argument `limit`: The most orders to return.\n"), "{line}");
        let thread = tool("thread").listing_line();
        assert!(thread.contains("replies: list<…>"), "{thread}");
    }
}
