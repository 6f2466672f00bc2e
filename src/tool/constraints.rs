//! JSON Schema constraints on argument and response declarations (SPEC §5 ext, as
//! `seeds/003` writes tool schemas): `enum`, `minimum`, `maximum`, `min_length`,
//! `max_length`, `pattern`, `items` and `default`.
//!
//! Reading checks each constraint against the declared type and against the others, so
//! that a declaration that no value can satisfy never loads:
//!
//! - `E0540`: a constraint that does not apply to the declared type (`pattern` on an
//!   `integer`, `items` on a `string`, an `enum` value of another type, `items` naming
//!   another element type than `list<T>`);
//! - `E0541`: a constraint whose own value is invalid (a regex that does not compile, a
//!   negative `min_length`, an empty `enum`, `minimum` above `maximum`);
//! - `E0542`: a `default` that its own declaration refuses.
//!
//! [`Constraints::violation`] says which constraint a value breaks; the engine calls it at
//! the boundary (run and `serve --mcp`), `check` on literal arguments and responses.
//! Numeric bounds apply to numbers, length bounds to strings (in characters) and lists (in
//! elements), `pattern` to strings (unanchored, as in JSON Schema: anchor with `^…$`).

use std::fmt;

use crate::diagnostic::{Code, Diagnostic};
use crate::span::{Span, Spanned};
use crate::value::Value;

use super::json::{JsonKind, JsonNode};
use super::keys::Level;
use super::type_name::TypeName;

/// The longest compiled regex a `pattern` may give (bytes of the regex crate's program).
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The constraints of one declaration (or of a list's elements). Empty when none is given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Constraints {
    /// `enum`: the allowed values.
    pub enum_values: Option<Spanned<Vec<Value>>>,
    /// `minimum`: the smallest allowed number.
    pub minimum: Option<Spanned<f64>>,
    /// `maximum`: the largest allowed number.
    pub maximum: Option<Spanned<f64>>,
    /// `min_length`: the fewest characters of a string or elements of a list.
    pub min_length: Option<Spanned<u64>>,
    /// `max_length`: the most characters of a string or elements of a list.
    pub max_length: Option<Spanned<u64>>,
    /// `pattern`: a regular expression a string must contain a match of.
    pub pattern: Option<Spanned<Pattern>>,
    /// `items`: the declaration every element of a list satisfies.
    pub items: Option<Box<Element>>,
    /// `default`: the value an absent optional parameter stands for (documentation for the
    /// caller; exported as JSON Schema `default`).
    pub default: Option<Spanned<Value>>,
}

/// `items` of a list declaration: the element type and the element's own constraints.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// The element type (`any` when not given).
    pub type_name: TypeName,
    /// `description` of an element written as an object.
    pub description: Option<String>,
    /// The element's constraints.
    pub constraints: Constraints,
    /// The `items` value in the file.
    pub span: Span,
}

/// A compiled `pattern`.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    regex: regex::Regex,
}

impl Pattern {
    /// The regex as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `s` contains a match.
    pub fn is_match(&self, s: &str) -> bool {
        self.regex.is_match(s)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source
    }
}

/// A constraint a value breaks, for messages: `must be one of "a", "b" (\`enum\`)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// The constraint key, as written in a `.tool` file (`minimum`, `items`…).
    pub key: &'static str,
    /// What the value must be, in words.
    pub rule: String,
    /// Where it is inside the value (`element 2`), empty for the value itself.
    pub at: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.at.is_empty() {
            write!(f, "{}: ", self.at)?;
        }
        write!(f, "must {} (`{}`)", self.rule, self.key)
    }
}

impl Constraints {
    /// Whether no constraint is given.
    pub fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }

    /// The first constraint `v` breaks (`null` breaks none: absence is the business of
    /// `required`). Bounds apply only to values of the kind they constrain.
    pub fn violation(&self, v: &Value) -> Option<Violation> {
        if v.is_null() {
            return None;
        }
        let broke = |key: &'static str, rule: String| Some(Violation { key, rule, at: String::new() });
        if let Some(e) = &self.enum_values {
            if !e.node.iter().any(|x| x == v) {
                return broke("enum", format!("be one of {}", list_values(&e.node)));
            }
        }
        if let Some(n) = v.as_f64().filter(|_| matches!(v, Value::Int(_) | Value::Float(_))) {
            if let Some(min) = &self.minimum {
                if n < min.node {
                    return broke("minimum", format!("be at least {}", number(min.node)));
                }
            }
            if let Some(max) = &self.maximum {
                if n > max.node {
                    return broke("maximum", format!("be at most {}", number(max.node)));
                }
            }
        }
        let length = match v {
            Value::Str(s) => Some((s.chars().count() as u64, "character")),
            Value::List(xs) => Some((xs.len() as u64, "element")),
            _ => None,
        };
        if let Some((len, unit)) = length {
            if let Some(min) = &self.min_length {
                if len < min.node {
                    return broke("min_length", format!("have at least {} {unit}{}", min.node, plural(min.node)));
                }
            }
            if let Some(max) = &self.max_length {
                if len > max.node {
                    return broke("max_length", format!("have at most {} {unit}{}", max.node, plural(max.node)));
                }
            }
        }
        if let (Some(p), Value::Str(s)) = (&self.pattern, v) {
            if !p.node.is_match(s) {
                return broke("pattern", format!("match the pattern `{}`", p.node.as_str()));
            }
        }
        if let (Some(items), Value::List(xs)) = (&self.items, v) {
            for (i, x) in xs.iter().enumerate() {
                if let Some(mut inner) = items.constraints.violation(x) {
                    inner.at =
                        if inner.at.is_empty() { format!("element {i}") } else { format!("element {i}, {}", inner.at) };
                    return Some(inner);
                }
            }
        }
        None
    }

    /// The JSON Schema keywords of these constraints, in a stable order (`items` is left to
    /// the caller, which knows the element type).
    pub fn schema_keywords(&self, ty: &TypeName) -> Vec<(&'static str, serde_json::Value)> {
        let mut out = Vec::new();
        let list = matches!(ty, TypeName::List(_));
        if let Some(e) = &self.enum_values {
            out.push(("enum", serde_json::Value::Array(e.node.iter().map(to_json).collect())));
        }
        if let Some(m) = &self.minimum {
            out.push(("minimum", json_number(m.node)));
        }
        if let Some(m) = &self.maximum {
            out.push(("maximum", json_number(m.node)));
        }
        if let Some(m) = &self.min_length {
            out.push((if list { "minItems" } else { "minLength" }, serde_json::Value::from(m.node)));
        }
        if let Some(m) = &self.max_length {
            out.push((if list { "maxItems" } else { "maxLength" }, serde_json::Value::from(m.node)));
        }
        if let Some(p) = &self.pattern {
            out.push(("pattern", serde_json::Value::from(p.node.as_str())));
        }
        if let Some(d) = &self.default {
            out.push(("default", to_json(&d.node)));
        }
        out
    }
}

fn to_json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// A whole float as an integer (`1`, not `1.0`), others as they are.
fn json_number(n: f64) -> serde_json::Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        serde_json::Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

fn number(n: f64) -> String {
    json_number(n).to_string()
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn list_values(vs: &[Value]) -> String {
    let shown: Vec<String> = vs.iter().take(10).map(|v| to_json(v).to_string()).collect();
    let more = if vs.len() > 10 { format!(", … ({} in all)", vs.len()) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

/// The value of a literal JSON node, or `None` when a REF string is inside it (then only
/// the run can tell its value).
pub(crate) fn literal(node: &JsonNode) -> Option<Value> {
    let mut has_ref = false;
    node.walk(&mut |n| {
        if let JsonKind::Str(s) = &n.kind {
            if s.value.starts_with("REF:") {
                has_ref = true;
            }
        }
    });
    (!has_ref).then(|| node.to_value())
}

/// Reads the constraints among a declaration's `entries`, checking them against `ty` (the
/// declared type, `None` when absent) and each other. Returns the constraints and, when
/// `items` gives the element type of a plain `list` (or of an untyped declaration), the
/// type the declaration has with it (`list<T>`).
pub(crate) fn read(
    entries: &[(Spanned<String>, JsonNode)],
    ty: Option<&Spanned<TypeName>>,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) -> (Constraints, Option<TypeName>) {
    let mut r = Reader { diags, what };
    r.read(entries, ty, true)
}

struct Reader<'d, 'w> {
    diags: &'d mut Vec<Diagnostic>,
    what: &'w str,
}

/// Which declared types a constraint applies to.
fn applies(key: &str, ty: &TypeName) -> bool {
    match key {
        "minimum" | "maximum" => matches!(ty, TypeName::Number | TypeName::Integer | TypeName::Any),
        "min_length" | "max_length" => matches!(ty, TypeName::String | TypeName::List(_) | TypeName::Any),
        "pattern" => matches!(ty, TypeName::String | TypeName::Any),
        "items" => matches!(ty, TypeName::List(_) | TypeName::Any),
        _ => true,
    }
}

/// A JSON type name with its article: `a string`, `an object`, `null`.
fn article(t: &str) -> String {
    match t {
        "null" => t.to_string(),
        t if t.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {t}"),
        t => format!("a {t}"),
    }
}

fn a_type(t: &TypeName) -> String {
    match t {
        TypeName::Object | TypeName::Integer | TypeName::Any => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

impl Reader<'_, '_> {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn read(
        &mut self,
        entries: &[(Spanned<String>, JsonNode)],
        ty: Option<&Spanned<TypeName>>,
        top: bool,
    ) -> (Constraints, Option<TypeName>) {
        let get = |k: &str| entries.iter().find(|(key, _)| key.node == k);
        let declared = ty.map_or(TypeName::Any, |t| t.node.clone());
        let mut c = Constraints::default();
        // The type a constraint is judged against; `items` may refine a plain `list`.
        let mut effective = declared.clone();
        let mut refined = None;
        for key in ["minimum", "maximum", "min_length", "max_length", "pattern", "items"] {
            let Some((k, _)) = get(key) else { continue };
            if !applies(key, &declared) {
                let fits = match key {
                    "minimum" | "maximum" => "`number` and `integer`",
                    "min_length" | "max_length" => "`string` and `list`",
                    "pattern" => "`string`",
                    _ => "`list`",
                };
                let mut d = Diagnostic::new(
                    Code::ConstraintNotForType,
                    k.span,
                    format!("`{key}` does not apply to {} ({})", a_type(&declared), self.what),
                )
                .with_label(format!("not a constraint of {}", a_type(&declared)))
                .with_help(format!("`{key}` constrains {fits} values; remove it or change the `type_name`"));
                if let Some(t) = ty {
                    d = d.with_secondary(t.span, "declared here");
                }
                self.push(d);
            }
        }
        if let Some((_, n)) = get("minimum").filter(|_| applies("minimum", &declared)) {
            c.minimum = self.number(n, "minimum");
        }
        if let Some((_, n)) = get("maximum").filter(|_| applies("maximum", &declared)) {
            c.maximum = self.number(n, "maximum");
        }
        if let (Some(min), Some(max)) = (&c.minimum, &c.maximum) {
            if min.node > max.node {
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        min.span,
                        format!(
                            "`minimum` {} is above `maximum` {} ({})",
                            number(min.node),
                            number(max.node),
                            self.what
                        ),
                    )
                    .with_label("no number is at least this")
                    .with_secondary(max.span, "and at most this")
                    .with_help("swap them, or fix one"),
                );
                c.minimum = None;
                c.maximum = None;
            }
        }
        if let Some((_, n)) = get("min_length").filter(|_| applies("min_length", &declared)) {
            c.min_length = self.length(n, "min_length");
        }
        if let Some((_, n)) = get("max_length").filter(|_| applies("max_length", &declared)) {
            c.max_length = self.length(n, "max_length");
        }
        if let (Some(min), Some(max)) = (&c.min_length, &c.max_length) {
            if min.node > max.node {
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        min.span,
                        format!("`min_length` {} is above `max_length` {} ({})", min.node, max.node, self.what),
                    )
                    .with_label("no value is at least this long")
                    .with_secondary(max.span, "and at most this long")
                    .with_help("swap them, or fix one"),
                );
                c.min_length = None;
                c.max_length = None;
            }
        }
        if let Some((_, n)) = get("pattern").filter(|_| applies("pattern", &declared)) {
            c.pattern = self.pattern(n);
        }
        if let Some((_, n)) = get("items").filter(|_| applies("items", &declared)) {
            let given_elem = match &declared {
                TypeName::List(Some(t)) => Some((**t).clone()),
                _ => None,
            };
            if let Some(item) = self.element(n, given_elem.as_ref(), ty.map(|t| t.span)) {
                if given_elem.is_none() {
                    effective = TypeName::List(Some(Box::new(item.type_name.clone())));
                    refined = Some(effective.clone());
                }
                c.items = Some(Box::new(item));
            }
        }
        if let Some((k, n)) = get("enum") {
            c.enum_values = self.enum_values(k, n, &effective);
        }
        if let Some((k, n)) = get("default") {
            if top {
                c.default = self.default(k, n, &effective, &c);
            }
        }
        (c, refined)
    }

    fn number(&mut self, n: &JsonNode, key: &str) -> Option<Spanned<f64>> {
        match n.kind {
            JsonKind::Int(i) => Some(Spanned::new(i as f64, n.span)),
            JsonKind::Float(f) => Some(Spanned::new(f, n.span)),
            _ => {
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        n.span,
                        format!("`{key}` must be a number, found {} ({})", n.type_name(), self.what),
                    )
                    .with_label("expected a number"),
                );
                None
            }
        }
    }

    fn length(&mut self, n: &JsonNode, key: &str) -> Option<Spanned<u64>> {
        match n.kind {
            JsonKind::Int(i) if i >= 0 => Some(Spanned::new(i as u64, n.span)),
            _ => {
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        n.span,
                        format!("`{key}` must be a whole number of zero or more ({})", self.what),
                    )
                    .with_label("expected 0, 1, 2, …"),
                );
                None
            }
        }
    }

    fn pattern(&mut self, n: &JsonNode) -> Option<Spanned<Pattern>> {
        let JsonKind::Str(s) = &n.kind else {
            self.push(
                Diagnostic::new(
                    Code::InvalidConstraint,
                    n.span,
                    format!("`pattern` must be a string holding a regular expression ({})", self.what),
                )
                .with_label("expected a string"),
            );
            return None;
        };
        match regex::RegexBuilder::new(&s.value).size_limit(PATTERN_SIZE_LIMIT).build() {
            Ok(regex) => Some(Spanned::new(Pattern { source: s.value.to_string(), regex }, n.span)),
            Err(e) => {
                let why = e.to_string();
                let last = why.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("invalid").trim();
                let last = last.strip_prefix("error: ").unwrap_or(last).to_string();
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        n.span,
                        format!("`pattern` is not a valid regular expression ({}): {last}", self.what),
                    )
                    .with_label("does not compile")
                    .with_help("patterns use the syntax of the Rust `regex` crate (no look-around or back-references); escape literal characters with `\\`"),
                );
                None
            }
        }
    }

    /// `items`: a type name or an element declaration.
    fn element(&mut self, n: &JsonNode, given: Option<&TypeName>, list_span: Option<Span>) -> Option<Element> {
        let (type_node, entries): (Option<&JsonNode>, &[(Spanned<String>, JsonNode)]) = match &n.kind {
            JsonKind::Str(_) => (Some(n), &[]),
            JsonKind::Object(es) => {
                for (k, _) in es.iter().filter(|(k, _)| !Level::Element.has(&k.node)) {
                    let mut d = Diagnostic::new(
                        Code::UnknownKey,
                        k.span,
                        format!("unknown key `{}` in `items` of {}", k.node, self.what),
                    )
                    .with_label("not a key here");
                    d = d.with_help(Level::Element.unknown_key_help(&k.node));
                    self.push(d);
                }
                (es.iter().find(|(k, _)| k.node == "type_name").map(|(_, v)| v), es.as_slice())
            }
            _ => {
                self.push(
                    Diagnostic::new(
                        Code::InvalidConstraint,
                        n.span,
                        format!(
                            "`items` must be a type name or an element declaration, found {} ({})",
                            n.type_name(),
                            self.what
                        ),
                    )
                    .with_label("expected a string or an object")
                    .with_help(
                        "write `\"items\": \"string\"` or `\"items\": {\"type_name\": \"string\", \"enum\": [...]}`",
                    ),
                );
                return None;
            }
        };
        let ty = match type_node {
            None => None,
            Some(t) => {
                let parsed = match &t.kind {
                    JsonKind::Str(s) => TypeName::parse(&s.value),
                    _ => None,
                };
                match parsed {
                    Some(p) => Some(Spanned::new(p, t.span)),
                    None => {
                        self.push(
                            Diagnostic::new(
                                Code::UnknownTypeName,
                                t.span,
                                format!("`items` of {} does not name a type", self.what),
                            )
                            .with_label("not a type")
                            .with_help(format!(
                                "the types are {}, and `list<T>`",
                                TypeName::SIMPLE.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                            )),
                        );
                        return None;
                    }
                }
            }
        };
        if let (Some(t), Some(g)) = (&ty, given) {
            if t.node != *g {
                let mut d = Diagnostic::new(
                    Code::ConstraintNotForType,
                    t.span,
                    format!("`items` says `{}`, and the declared type says elements are `{g}` ({})", t.node, self.what),
                )
                .with_label("another element type")
                .with_help("declare the element type once: `\"type_name\": \"list\"` with `items`, or `list<T>` alone");
                if let Some(s) = list_span {
                    d = d.with_secondary(s, "declared here");
                }
                self.push(d);
                return None;
            }
        }
        let elem_ty = ty.clone().or_else(|| given.map(|g| Spanned::new(g.clone(), n.span)));
        let what = format!("the elements of {}", self.what);
        let mut inner = Reader { diags: self.diags, what: &what };
        let (constraints, refined) = inner.read(entries, elem_ty.as_ref(), false);
        let description = entries.iter().find(|(k, _)| k.node == "description").and_then(|(_, v)| match &v.kind {
            JsonKind::Str(s) => Some(s.value.to_string()),
            _ => None,
        });
        let type_name = refined.or_else(|| elem_ty.map(|t| t.node)).unwrap_or(TypeName::Any);
        Some(Element { type_name, description, constraints, span: n.span })
    }

    fn enum_values(&mut self, k: &Spanned<String>, n: &JsonNode, ty: &TypeName) -> Option<Spanned<Vec<Value>>> {
        let JsonKind::List(items) = &n.kind else {
            self.push(
                Diagnostic::new(
                    Code::InvalidConstraint,
                    n.span,
                    format!("`enum` must be a list of the allowed values, found {} ({})", n.type_name(), self.what),
                )
                .with_label("expected a list")
                .with_help("write `\"enum\": [\"a\", \"b\"]`"),
            );
            return None;
        };
        if items.is_empty() {
            self.push(
                Diagnostic::new(
                    Code::InvalidConstraint,
                    n.span,
                    format!("`enum` is empty ({}): no value is allowed", self.what),
                )
                .with_label("no values")
                .with_secondary(k.span, "this constraint")
                .with_help("list the allowed values, or remove `enum`"),
            );
            return None;
        }
        let mut ok = true;
        for item in items {
            let v = item.to_value();
            if !v.is_null() && !crate::tool::validate::fits(&v, ty) {
                ok = false;
                self.push(
                    Diagnostic::new(
                        Code::ConstraintNotForType,
                        item.span,
                        format!(
                            "this `enum` value is {}, and {} is {}",
                            article(item.type_name()),
                            self.what,
                            a_type(ty)
                        ),
                    )
                    .with_label(format!("not {}", a_type(ty)))
                    .with_help("every allowed value must have the declared type"),
                );
            }
        }
        ok.then(|| Spanned::new(items.iter().map(JsonNode::to_value).collect(), n.span))
    }

    fn default(&mut self, k: &Spanned<String>, n: &JsonNode, ty: &TypeName, c: &Constraints) -> Option<Spanned<Value>> {
        let v = n.to_value();
        let why = if v.is_null() {
            None
        } else if !crate::tool::validate::fits(&v, ty) {
            Some(format!("is {}, and the declaration is {}", n.type_name(), a_type(ty)))
        } else {
            c.violation(&v).map(|x| format!("breaks its own declaration: it {x}"))
        };
        match why {
            None => Some(Spanned::new(v, n.span)),
            Some(why) => {
                self.push(
                    Diagnostic::new(Code::InvalidDefault, n.span, format!("the `default` of {} {why}", self.what))
                        .with_label("refused by its own declaration")
                        .with_secondary(k.span, "this default")
                        .with_help("give a default that the declaration accepts"),
                );
                None
            }
        }
    }
}
