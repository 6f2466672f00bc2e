//! Strict JSON with a span on every key and value.
//!
//! Parsing is delegated to `jsonc-parser` (the dprint/Deno parser), configured so that every
//! JSONC and JSON5 extension it knows is refused: comments, trailing commas, single quotes,
//! unquoted keys, hexadecimal numbers, `+1`, `.5`, `NaN` and extended escapes. Its AST
//! carries byte ranges, which become [`Span`]s here. What RFC 8259 forbids and that parser
//! lets through (raw control characters inside strings) and what tdsl values cannot hold
//! (numbers beyond `f64`), plus duplicate keys, are reported by this module while the tree
//! is built, so one pass finds them all.
//!
//! Strings keep their decoded text and, when it differs from what was written, the raw text
//! between the quotes, so [`JsonStr::string_map`] can map a span inside the decoded string
//! (an expression, a REF) back to the bytes of the file through every escape.

use std::sync::Arc;

use jsonc_parser::ast;
use jsonc_parser::errors::ParseErrorKind;
use jsonc_parser::{CollectOptions, ParseOptions};

use crate::diagnostic::{Code, Diagnostic};
use crate::span::{SourceMap, Span, Spanned};
use crate::syntax::escape::{unescape, Dialect};
use crate::value::{Map, SmolStr, Value};

/// A JSON value with the span it was written at.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonNode {
    /// What kind of value.
    pub kind: JsonKind,
    /// The bytes of the value in the file, quotes and brackets included.
    pub span: Span,
}

/// The kinds of JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonKind {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number written without fraction or exponent that fits in `i64`.
    Int(i64),
    /// Any other (finite) number.
    Float(f64),
    /// A string.
    Str(JsonStr),
    /// A list.
    List(Vec<JsonNode>),
    /// An object, entries in the order written.
    Object(Vec<(Spanned<String>, JsonNode)>),
}

/// A JSON string: its decoded text and enough of its source to map spans back.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonStr {
    /// The decoded text.
    pub value: Arc<str>,
    /// The string in the file, quotes included.
    pub span: Span,
    /// The text between the quotes when it had escapes (otherwise it equals `value`).
    raw: Option<Box<str>>,
}

/// A JSON object that the schema requires to be an object, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonObject {
    /// Entries in the order written.
    pub entries: Vec<(Spanned<String>, JsonNode)>,
    /// The object in the file, braces included.
    pub span: Span,
}

impl JsonStr {
    /// A string that was written at `span` (quotes included) with text `raw` between the
    /// quotes, which decodes to `value`.
    pub fn new(value: &str, raw: &str, span: Span) -> JsonStr {
        JsonStr { value: Arc::from(value), span, raw: (raw != value).then(|| Box::from(raw)) }
    }

    /// The span of the text between the quotes.
    pub fn content_span(&self) -> Span {
        let start = self.span.start.saturating_add(1).min(self.span.end);
        Span { start, end: self.span.end.saturating_sub(1).max(start) }
    }

    /// Maps byte offsets in [`JsonStr::value`] to byte offsets in the file, through every
    /// escape (`\"`, `\n`, `\uXXXX`, surrogate pairs).
    pub fn string_map(&self) -> SourceMap {
        let start = self.content_span().start;
        match &self.raw {
            None => SourceMap::identity(start, u32::try_from(self.value.len()).unwrap_or(u32::MAX)),
            Some(raw) => unescape(raw, start as usize, Dialect::Json).1,
        }
    }

    /// The byte offset in [`JsonStr::value`] of the character written at `file_offset`
    /// (the inverse of [`JsonStr::map_span`]); `None` outside the string's content.
    pub fn decoded_offset(&self, file_offset: usize) -> Option<usize> {
        self.string_map().decoded(file_offset)
    }

    /// Maps one span in the decoded text to the file.
    pub fn map_span(&self, span: Span) -> Span {
        self.string_map().map(span)
    }

    /// The string as a value.
    pub fn to_value(&self) -> Value {
        Value::Str(SmolStr::new(&self.value))
    }
}

impl JsonNode {
    /// The string payload, when this is a string.
    pub fn as_str(&self) -> Option<&JsonStr> {
        match &self.kind {
            JsonKind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The map from the decoded text to the file, when this is a string.
    pub fn string_map(&self) -> Option<SourceMap> {
        self.as_str().map(JsonStr::string_map)
    }

    /// The entries, when this is an object.
    pub fn as_object(&self) -> Option<&[(Spanned<String>, JsonNode)]> {
        match &self.kind {
            JsonKind::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// The elements, when this is a list.
    pub fn as_list(&self) -> Option<&[JsonNode]> {
        match &self.kind {
            JsonKind::List(items) => Some(items),
            _ => None,
        }
    }

    /// The JSON type's name, as messages say it: `string`, `number`, `boolean`, `null`,
    /// `list`, `object`.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            JsonKind::Null => "null",
            JsonKind::Bool(_) => "boolean",
            JsonKind::Int(_) | JsonKind::Float(_) => "number",
            JsonKind::Str(_) => "string",
            JsonKind::List(_) => "list",
            JsonKind::Object(_) => "object",
        }
    }

    /// The value this node denotes, spans dropped. On a duplicate key the later entry wins
    /// (duplicates are reported as errors when loading, so this only matters for partial
    /// models).
    pub fn to_value(&self) -> Value {
        match &self.kind {
            JsonKind::Null => Value::Null,
            JsonKind::Bool(b) => Value::Bool(*b),
            JsonKind::Int(i) => Value::Int(*i),
            // Non-finite numbers never reach the tree (see `number`).
            JsonKind::Float(f) => Value::float(*f).unwrap_or(Value::Null),
            JsonKind::Str(s) => s.to_value(),
            JsonKind::List(items) => Value::list(items.iter().map(JsonNode::to_value).collect()),
            JsonKind::Object(entries) => object_value(entries),
        }
    }

    /// Calls `f` on this node and every node inside it, parents before children.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a JsonNode)) {
        f(self);
        match &self.kind {
            JsonKind::List(items) => items.iter().for_each(|n| n.walk(f)),
            JsonKind::Object(entries) => entries.iter().for_each(|(_, n)| n.walk(f)),
            _ => {}
        }
    }
}

impl JsonObject {
    /// The value of the key `name`, if present (the first one written).
    pub fn get(&self, name: &str) -> Option<&JsonNode> {
        self.entries.iter().find(|(k, _)| k.node == name).map(|(_, v)| v)
    }

    /// The object as a value.
    pub fn to_value(&self) -> Value {
        object_value(&self.entries)
    }
}

fn object_value(entries: &[(Spanned<String>, JsonNode)]) -> Value {
    let mut map = Map::with_capacity_and_hasher(entries.len(), Default::default());
    for (k, v) in entries {
        map.insert(SmolStr::new(k.node.as_str()), v.to_value());
    }
    Value::object(map)
}

/// Parses strict JSON. Returns the tree when the text is JSON (possibly with problems that
/// still let a tree be built, such as duplicate keys) and every problem found.
///
/// A leading byte-order mark, which some editors write, is read as whitespace (RFC 8259
/// §8.1 allows ignoring it); spans still count its three bytes.
pub fn parse(source: &str) -> (Option<JsonNode>, Vec<Diagnostic>) {
    let without_bom;
    let source = match source.strip_prefix('\u{feff}') {
        Some(rest) => {
            without_bom = format!("   {rest}");
            without_bom.as_str()
        }
        None => source,
    };
    let options = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    match jsonc_parser::parse_to_ast(source, &CollectOptions::default(), &options) {
        Ok(result) => match result.value {
            Some(value) => {
                let mut b = Builder { source, diagnostics: Vec::new() };
                let node = b.value(&value);
                (Some(node), b.diagnostics)
            }
            None => {
                let d = Diagnostic::new(Code::JsonSyntax, Span::new(0, source.len()), "the file holds no JSON value")
                    .with_label("expected a JSON object here")
                    .with_help("a `.tool` file is one JSON object: `{\"description\": \"…\", …}`");
                (None, vec![d])
            }
        },
        Err(e) => (None, vec![syntax_error(source, &e)]),
    }
}

/// Turns the parser's error into a diagnostic with a message and help for the common cases.
fn syntax_error(source: &str, e: &jsonc_parser::errors::ParseError) -> Diagnostic {
    let range = e.range();
    let mut span = Span::new(range.start, range.end);
    let next = source.get(range.start..).and_then(|rest| rest.chars().next());
    if let Some(c) = next.filter(|c| span.is_empty() && *c != '\n' && *c != '\r') {
        // Point at the character rather than between two.
        span = Span::new(range.start, range.start + c.len_utf8());
    }
    let kind = e.kind();
    let message = format!("invalid JSON: {}", lower_first(&kind.to_string()));
    let unterminated = match kind {
        ParseErrorKind::UnterminatedObject => Some(("object", '}')),
        ParseErrorKind::UnterminatedArray => Some(("list", ']')),
        _ => None,
    };
    if let Some((what, close)) = unterminated {
        // The parser's range is the whole unclosed value; the fix goes at its end.
        let end = source.trim_end().len().max(range.start + 1);
        return Diagnostic::new(Code::JsonSyntax, Span::new(end, end), message)
            .with_label(format!("expected `{close}` here"))
            .with_secondary(Span::new(range.start, range.start + 1), format!("this {what} is never closed"))
            .with_help(format!("add the missing `{close}`"));
    }
    let (label, help) = match kind {
        ParseErrorKind::CommentsNotAllowed => {
            ("comment", "`.tool` files are strict JSON: remove the comment, or move the note into a `description`")
        }
        ParseErrorKind::TrailingCommasNotAllowed => ("trailing comma", "remove the comma after the last element"),
        ParseErrorKind::SingleQuotedStringsNotAllowed => ("single quotes", "JSON strings use double quotes: \"…\""),
        ParseErrorKind::ExpectedStringObjectProperty => {
            ("key without quotes", "JSON object keys are strings in double quotes: \"key\": …")
        }
        ParseErrorKind::ExpectedComma => {
            ("a `,` is missing here", "separate list elements and object entries with commas")
        }
        ParseErrorKind::ExpectedColonAfterObjectKey => ("expected `:`", "write an object entry as \"key\": value"),
        ParseErrorKind::MultipleRootJsonValues => ("second value", "a `.tool` file holds exactly one JSON object"),
        ParseErrorKind::UnexpectedWord => (
            "not a JSON value",
            "strings need double quotes; the only bare words in JSON are `true`, `false` and `null`",
        ),
        ParseErrorKind::NonFiniteNumbersNotAllowed
        | ParseErrorKind::HexadecimalNumbersNotAllowed
        | ParseErrorKind::UnaryPlusNumbersNotAllowed
        | ParseErrorKind::BareDecimalPointNumbersNotAllowed => {
            ("not a JSON number", "JSON numbers are decimal, like `-12`, `0.5` or `1e3`")
        }
        ParseErrorKind::String(_) => {
            ("in this string", "valid JSON escapes are \\\\ \\\" \\/ \\n \\r \\t \\b \\f \\uXXXX")
        }
        _ => ("here", "check the JSON syntax near this point"),
    };
    Diagnostic::new(Code::JsonSyntax, span, message).with_label(label).with_help(help)
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Builds the spanned tree from the parser's AST, checking what the parser does not.
struct Builder<'s> {
    source: &'s str,
    diagnostics: Vec<Diagnostic>,
}

impl Builder<'_> {
    fn value(&mut self, v: &ast::Value<'_>) -> JsonNode {
        match v {
            ast::Value::NullKeyword(n) => JsonNode { kind: JsonKind::Null, span: span_of(n.range) },
            ast::Value::BooleanLit(b) => JsonNode { kind: JsonKind::Bool(b.value), span: span_of(b.range) },
            ast::Value::NumberLit(n) => self.number(n.value, span_of(n.range)),
            ast::Value::StringLit(s) => {
                let s = self.string(s.range, &s.value);
                JsonNode { span: s.span, kind: JsonKind::Str(s) }
            }
            ast::Value::Array(a) => {
                let items = a.elements.iter().map(|e| self.value(e)).collect();
                JsonNode { kind: JsonKind::List(items), span: span_of(a.range) }
            }
            ast::Value::Object(o) => {
                let mut entries: Vec<(Spanned<String>, JsonNode)> = Vec::with_capacity(o.properties.len());
                // A duplicate is looked for by name past a few keys: looked for among every
                // key before it, an object of 20,000 keys (a 256 KB plan) took half a
                // minute.
                let mut by_name: Option<std::collections::HashMap<String, Span>> =
                    (o.properties.len() > 16).then(std::collections::HashMap::new);
                for p in &o.properties {
                    let key = match &p.name {
                        ast::ObjectPropName::String(s) => {
                            let s = self.string(s.range, &s.value);
                            Spanned::new(s.value.to_string(), s.span)
                        }
                        // Unquoted keys are refused by the parser options; kept for totality.
                        ast::ObjectPropName::Word(w) => Spanned::new(w.value.to_string(), span_of(w.range)),
                    };
                    let first = match by_name.as_mut() {
                        Some(seen) => match seen.entry(key.node.clone()) {
                            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                            std::collections::hash_map::Entry::Vacant(e) => {
                                e.insert(key.span);
                                None
                            }
                        },
                        None => entries.iter().find(|(k, _)| k.node == key.node).map(|(k, _)| k.span),
                    };
                    if let Some(first) = first {
                        self.diagnostics.push(
                            Diagnostic::new(Code::DuplicateKey, key.span, format!("duplicate key `{}`", key.node))
                                .with_label("written again here")
                                .with_secondary(first, "first written here")
                                .with_help("a key may appear once per object; remove one of them"),
                        );
                    }
                    let value = self.value(&p.value);
                    entries.push((key, value));
                }
                JsonNode { kind: JsonKind::Object(entries), span: span_of(o.range) }
            }
        }
    }

    fn number(&mut self, text: &str, span: Span) -> JsonNode {
        let integral = !text.contains(['.', 'e', 'E']);
        if integral {
            if let Ok(i) = text.parse::<i64>() {
                return JsonNode { kind: JsonKind::Int(i), span };
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => JsonNode { kind: JsonKind::Float(f), span },
            _ => {
                self.diagnostics.push(
                    Diagnostic::new(Code::JsonSyntax, span, format!("number `{text}` is too large"))
                        .with_label("beyond the range of a 64-bit float")
                        .with_help("numbers must stay within ±1.7e308"),
                );
                JsonNode { kind: JsonKind::Null, span }
            }
        }
    }

    /// A string at `range` (quotes included) that the parser decoded to `decoded`.
    fn string(&mut self, range: jsonc_parser::common::Range, decoded: &str) -> JsonStr {
        let span = span_of(range);
        let raw = self.source.get(range.start + 1..range.end.saturating_sub(1)).unwrap_or(decoded);
        // RFC 8259 §7: control characters must be escaped. The parser accepts them raw.
        for (i, c) in raw.char_indices().filter(|(_, c)| u32::from(*c) < 0x20) {
            let at = range.start + 1 + i;
            let shown = match c {
                '\n' => "\\n".to_string(),
                '\t' => "\\t".to_string(),
                '\r' => "\\r".to_string(),
                c => format!("\\u{:04x}", u32::from(c)),
            };
            self.diagnostics.push(
                Diagnostic::new(
                    Code::JsonSyntax,
                    Span::new(at, at + 1),
                    "invalid JSON: raw control character in a string",
                )
                .with_label("this character must be escaped")
                .with_help(format!("write it as `{shown}`")),
            );
        }
        JsonStr::new(decoded, raw, span)
    }
}

fn span_of(range: jsonc_parser::common::Range) -> Span {
    Span::new(range.start, range.end)
}

/// Calls `opened(offset, depth)` for every `[` or `{` of `text` outside strings, with the
/// depth it opens (1 for the outermost), without recursion — so that what a recursive
/// parser would overflow on is measured first — and stops when `opened` returns `false`.
fn walk_nesting(text: &str, mut opened: impl FnMut(usize, usize) -> bool) {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if !opened(i, depth) {
                    return;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// How deep `text`'s JSON nests (lists and objects, outside strings); 0 for a scalar.
#[cfg(feature = "engine")]
pub(crate) fn nesting_depth(text: &str) -> usize {
    let mut max = 0;
    walk_nesting(text, |_, depth| {
        max = max.max(depth);
        true
    });
    max
}

/// The byte offset of the first bracket that opens a level deeper than `max`, if any.
pub(crate) fn nesting_past(text: &str, max: usize) -> Option<usize> {
    let mut past = None;
    walk_nesting(text, |at, depth| {
        if depth > max {
            past = Some(at);
        }
        past.is_none()
    });
    past
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(src: &str) -> JsonNode {
        let (node, diags) = parse(src);
        assert!(diags.is_empty(), "{diags:?}");
        node.expect("a tree")
    }

    #[test]
    fn spans_cover_keys_and_values() {
        let src = r#"{"a": [1, 2.5, "x"], "b": null}"#;
        let t = tree(src);
        let entries = t.as_object().expect("object");
        assert_eq!(&src[entries[0].0.span.range()], r#""a""#);
        assert_eq!(&src[entries[0].1.span.range()], r#"[1, 2.5, "x"]"#);
        let items = entries[0].1.as_list().expect("list");
        assert_eq!(items[0].kind, JsonKind::Int(1));
        assert_eq!(items[1].kind, JsonKind::Float(2.5));
        assert_eq!(&src[items[2].span.range()], r#""x""#);
        assert_eq!(&src[entries[1].1.span.range()], "null");
    }

    #[test]
    fn strictness() {
        for (src, needle) in [
            ("{\"a\": 1,}", "trailing"),
            ("{\"a\": 1} // c", "comment"),
            ("{'a': 1}", "single"),
            ("{a: 1}", ""),
            ("{\"a\": 0x10}", "hexadecimal"),
            ("{\"a\": +1}", "plus"),
            ("{\"a\": .5}", "decimal"),
            ("{\"a\": NaN}", ""),
            ("{\"a\": 1 \"b\": 2}", "comma"),
            ("{\"a\": \"\\x41\"}", "escape"),
        ] {
            let (node, diags) = parse(src);
            assert!(node.is_none(), "{src} parsed");
            assert_eq!(diags.len(), 1, "{src}");
            assert_eq!(diags[0].code, Code::JsonSyntax);
            assert!(diags[0].message.to_lowercase().contains(needle), "{src}: {}", diags[0].message);
        }
    }

    #[test]
    fn byte_order_mark_is_whitespace() {
        let src = "\u{feff}{\"a\": 1}";
        let t = tree(src);
        assert_eq!(&src[t.as_object().expect("object")[0].0.span.range()], "\"a\"");
    }

    #[test]
    fn checks_beyond_the_parser() {
        let (node, diags) = parse("{\"a\": \"x\ty\", \"a\": 1e999}");
        assert!(node.is_some());
        let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::JsonSyntax, Code::DuplicateKey, Code::JsonSyntax]);
    }

    #[test]
    fn string_map_through_escapes() {
        let src = r#"{"e": "a\"b\u00e9c"}"#;
        let t = tree(src);
        let s = t.as_object().expect("object")[0].1.as_str().expect("string").clone();
        assert_eq!(&*s.value, "a\"béc");
        // `c` is decoded at byte 5 and written after the six-byte escape.
        let c = s.map_span(Span::new(5, 6));
        assert_eq!(&src[c.range()], "c");
        let quote = s.map_span(Span::new(1, 2));
        assert_eq!(&src[quote.range()], "\\\"");
    }

    #[test]
    fn values() {
        let t = tree(r#"{"a": [1, 2.5, true, null, "s"], "b": {"c": -3}}"#);
        let v = t.to_value();
        let expected: serde_json::Value = serde_json::json!({"a": [1, 2.5, true, null, "s"], "b": {"c": -3}});
        assert_eq!(v, Value::from(&expected));
        assert_eq!(tree("12345678901234567890").to_value(), Value::Float(12345678901234567890.0));
    }

    #[test]
    fn duplicate_keys_of_a_large_object_are_found_by_name() {
        // Past 16 keys the duplicate is looked up, not searched for: the same finding, the
        // first written place as its secondary label, and many keys in linear time.
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        let src = format!("{{{}, \"k7\": 0}}", keys.join(", "));
        let (_, diags) = parse(&src);
        assert_eq!(diags.iter().map(|d| d.code).collect::<Vec<_>>(), [Code::DuplicateKey]);
        let first = src.find("\"k7\"").expect("k7");
        assert!(diags[0].secondary.iter().any(|l| l.span.start as usize == first), "{:?}", diags[0]);
        // 40,000 keys: 800 million comparisons before (over two minutes of a debug build),
        // milliseconds now; the bound is an order of magnitude under the defect.
        let many: Vec<String> = (0..40_000).map(|i| format!("\"k{i}\": 0")).collect();
        let started = std::time::Instant::now();
        let (_, diags) = parse(&format!("{{{}}}", many.join(",")));
        assert!(diags.is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    }
}
