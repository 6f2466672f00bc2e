//! An MCP server's JSON Schema made whole: its local references resolved and its
//! combinators flattened into the plain forms the rest of tdsl reads (`type`, `properties`,
//! `required`, `items`, `enum`, bounds).
//!
//! The official SDKs generate schemas in two styles, and both are read:
//!
//! - Python (pydantic): nested models as `{"$ref": "#/$defs/Model"}`, a model field as
//!   `{"allOf": [{"$ref": …}], "description": …}` (older pydantic), `Optional[T]` as
//!   `{"anyOf": [T, {"type": "null"}], "default": null}`, `Literal["a"]` as `const`;
//! - TypeScript (zod-to-json-schema): `#/definitions/Name`, a repeated object as a pointer to
//!   its first place (`#/properties/billing`), the root as `#`, `nullable` as
//!   `"type": ["string", "null"]`, `"additionalProperties": false` on every object.
//!
//! A reference is any local JSON pointer (`#…`); a remote one (`https://…`) is not followed
//! and reads as any value. A recursive schema (a comment whose `replies` are comments) is
//! followed [`RECURSION_DEPTH`] times inside itself; past that the value is any value,
//! marked `"x-tdsl-cut"` with the reference. The whole expansion is bounded
//! ([`MAX_NODES`] schema nodes, [`MAX_REF_NESTING`] references inside one another), so a
//! schema that references one definition many times cannot make the result grow without
//! bound: past the bound, parts read as any value.
//!
//! `anyOf`/`oneOf` with `null` becomes the other alternative with `"null"` added to its
//! `type` (`["string", "null"]`); `allOf` of objects is merged into one object; `const` is a
//! one-value `enum`. Other unions stay `anyOf` (any value to the checker).
//!
//! The bounds are fixed (each a range of one value in [`crate::ranges`], no flag): past one a
//! part reads as any value, which loosens the check and fails no call. So are two on what
//! is copied: an `enum` of more than [`MAX_ENUM_VALUES`] is left out, and past
//! [`MAX_COPIED_BYTES`] of copied values (descriptions, `enum`s, defaults) the rest are.

use serde_json::{json, Map, Value as Json};

/// How many times one `$ref` is followed inside itself: a recursive model's third level
/// down (`replies.0.replies.0.replies`) is any value.
pub(crate) const RECURSION_DEPTH: usize = crate::ranges::SCHEMA_RECURSION_DEPTH.max as usize;

/// The most schema nodes one resolution makes (past it, parts read as any value).
pub(crate) const MAX_NODES: usize = crate::ranges::SCHEMA_NODES.max as usize;

/// The most references followed inside one another (a chain of distinct definitions).
pub(crate) const MAX_REF_NESTING: usize = crate::ranges::SCHEMA_REF_NESTING.max as usize;

/// The most values of an `enum` kept: a longer one is left out (the value reads as its
/// type alone). An upstream's `enum` of seven million zeros (14 MB, within the bound of one
/// listing) once cost every check 17 s and 2.5 GB.
pub(crate) const MAX_ENUM_VALUES: usize = crate::ranges::SCHEMA_ENUM_VALUES.max as usize;

/// The most bytes of values (descriptions, `enum`s, defaults, patterns) one resolution
/// copies into its result: past it they are left out. A `$defs` entry with a long
/// description referenced from 20,000 places would otherwise copy it 20,000 times.
pub(crate) const MAX_COPIED_BYTES: usize = crate::ranges::SCHEMA_COPIED_BYTES.max as usize;

/// The deepest nesting of schemas (`properties` in `items` in …) followed: a schema deeper
/// than that (only a hostile server writes one) reads as any value below it, so no walk of
/// the result recurses without bound.
pub(crate) const MAX_DEPTH: usize = crate::ranges::SCHEMA_DEPTH.max as usize;

/// The key that marks where a recursive reference was cut (its value is the reference).
pub(crate) const CUT: &str = "x-tdsl-cut";

/// `schema` with its local references resolved and its combinators flattened.
pub(crate) fn resolve_schema(schema: &Json) -> Json {
    let mut r = Resolver { root: schema, stack: Vec::new(), nodes: 0, depth: 0, copy_left: MAX_COPIED_BYTES };
    r.node(schema)
}

struct Resolver<'a> {
    root: &'a Json,
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    nodes: usize,
    /// How deep the schema being resolved is.
    depth: usize,
    /// What is left of [`MAX_COPIED_BYTES`].
    copy_left: usize,
}

/// About how many bytes `v` takes as JSON, when at most `limit` (counted without writing it,
/// and no further than `limit`).
fn size_within(v: &Json, limit: usize) -> Option<usize> {
    let mut total = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total += match v {
            Json::Null | Json::Bool(_) | Json::Number(_) => 8,
            Json::String(t) => t.len() + 2,
            Json::Array(items) => {
                stack.extend(items);
                2 + items.len()
            }
            Json::Object(m) => {
                stack.extend(m.values());
                2 + m.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        };
        if total > limit {
            return None;
        }
    }
    Some(total)
}

impl Resolver<'_> {
    fn node(&mut self, s: &Json) -> Json {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.depth >= MAX_DEPTH {
            return json!({});
        }
        self.depth += 1;
        let out = self.node_inner(s);
        self.depth -= 1;
        out
    }

    /// Whether `v` may be copied into the result: it fits in what is left of
    /// [`MAX_COPIED_BYTES`] (taken from it), or it is small (a `type`, a bound).
    fn copy(&mut self, v: &Json) -> bool {
        match size_within(v, self.copy_left) {
            Some(n) => {
                self.copy_left -= n;
                true
            }
            None => {
                // Nothing larger than a few bytes is copied any more.
                self.copy_left = 0;
                size_within(v, 64).is_some()
            }
        }
    }

    fn node_inner(&mut self, s: &Json) -> Json {
        let Some(obj) = s.as_object() else {
            // `true` (anything) and any non-schema: any value. `false` accepts nothing, which
            // no tool argument or response means.
            return json!({});
        };
        let mut out = Map::new();
        for (k, v) in obj {
            match k.as_str() {
                "$ref" | "$defs" | "definitions" | "allOf" | "anyOf" | "oneOf" | "$schema" | "$id" => {}
                "properties" => {
                    let props = v
                        .as_object()
                        .map(|m| m.iter().map(|(name, p)| (name.clone(), self.node(p))).collect::<Map<_, _>>())
                        .unwrap_or_default();
                    out.insert(k.clone(), Json::Object(props));
                }
                "items" if v.is_object() => {
                    out.insert(k.clone(), self.node(v));
                }
                // A tuple (`prefixItems`, old-style `items: [...]`): its elements are not typed.
                "items" | "prefixItems" => {}
                // Fields named by a pattern: kept as a mark that the object is open
                // (`plans::upstream::closed_schema`), not as schemas (nothing reads them).
                "patternProperties" if v.as_object().is_some_and(|m| !m.is_empty()) => {
                    out.insert(k.clone(), Json::Bool(true));
                }
                "additionalProperties" if v.is_object() => {
                    out.insert(k.clone(), self.node(v));
                }
                "const" if self.copy(v) => {
                    out.insert("enum".into(), Json::Array(vec![v.clone()]));
                }
                "const" => {}
                // Too many values to hold against: the value is read as its type alone.
                "enum" if v.as_array().is_some_and(|a| a.len() > MAX_ENUM_VALUES) => {}
                // What tdsl reads of a schema; the rest (`title`, `examples`, `x-…`) is left out.
                "type"
                | "enum"
                | "default"
                | "description"
                | "required"
                | "minimum"
                | "maximum"
                | "minLength"
                | "maxLength"
                | "minItems"
                | "maxItems"
                | "pattern"
                | "format"
                | "additionalProperties"
                | CUT
                    if self.copy(v) =>
                {
                    out.insert(k.clone(), v.clone());
                }
                _ => {}
            }
        }
        let mut base = Json::Object(out);
        if let Some(r) = obj.get("$ref").and_then(Json::as_str) {
            let target = self.reference(r);
            // The siblings of `$ref` (a field's `description`, `default`) win over the target's.
            base = merge_over(target, base);
        }
        if let Some(parts) = obj.get("allOf").and_then(Json::as_array) {
            for p in parts {
                let part = self.node(p);
                base = merge_all_of(base, part);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alts) = obj.get(key).and_then(Json::as_array) {
                base = self.union(base, alts);
            }
        }
        base
    }

    /// The schema a local reference points at, resolved (any value when it cannot be).
    fn reference(&mut self, r: &str) -> Json {
        let Some(pointer) = r.strip_prefix('#') else { return json!({}) };
        let recurred = self.stack.iter().filter(|s| *s == r).count();
        if recurred >= RECURSION_DEPTH || self.stack.len() >= MAX_REF_NESTING {
            return json!({ CUT: r });
        }
        let Some(target) = self.root.pointer(&decode_pointer(pointer)) else { return json!({}) };
        self.stack.push(r.to_string());
        let resolved = self.node(target);
        self.stack.pop();
        resolved
    }

    /// `anyOf` / `oneOf`: `null` alternatives make the rest nullable; one other alternative
    /// is merged into `base`, several stay a union.
    fn union(&mut self, base: Json, alts: &[Json]) -> Json {
        let resolved: Vec<Json> = alts.iter().map(|a| self.node(a)).collect();
        let (nulls, others): (Vec<Json>, Vec<Json>) = resolved.into_iter().partition(is_null_schema);
        let nullable = !nulls.is_empty();
        let mut base = match others.len() {
            0 => merge_over(json!({"type": "null"}), base),
            1 => merge_over(others.into_iter().next().unwrap_or_else(|| json!({})), base),
            _ => {
                let mut alts = others;
                if nullable {
                    alts.push(json!({"type": "null"}));
                }
                let mut b = base;
                if let Some(m) = b.as_object_mut() {
                    m.insert("anyOf".into(), Json::Array(alts));
                }
                return b;
            }
        };
        if nullable {
            add_null(&mut base);
        }
        base
    }
}

/// A JSON pointer as written after `#` in a reference (percent-encoded characters decoded).
fn decode_pointer(p: &str) -> String {
    if !p.contains('%') {
        return p.to_string();
    }
    let bytes = p.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_null_schema(s: &Json) -> bool {
    s.get("type").and_then(Json::as_str) == Some("null") && s.get("properties").is_none()
}

/// Adds `"null"` to a schema's `type` (nothing when it has none: it already allows null).
fn add_null(s: &mut Json) {
    let Some(m) = s.as_object_mut() else { return };
    let ty = match m.get("type") {
        Some(Json::String(t)) if t != "null" => json!([t, "null"]),
        Some(Json::Array(ts)) if !ts.iter().any(|t| t == "null") => {
            let mut ts = ts.clone();
            ts.push(json!("null"));
            Json::Array(ts)
        }
        _ => return,
    };
    m.insert("type".into(), ty);
    if let Some(Json::Array(values)) = m.get_mut("enum") {
        if !values.contains(&Json::Null) {
            values.push(Json::Null);
        }
    }
}

/// `over`'s keys on top of `under`'s.
fn merge_over(under: Json, over: Json) -> Json {
    match (under, over) {
        (Json::Object(mut u), Json::Object(o)) => {
            for (k, v) in o {
                u.insert(k, v);
            }
            Json::Object(u)
        }
        (u, _) => u,
    }
}

/// Two parts of an `allOf`: their properties and required names together; other keys of
/// `base` (a field's own `description`, `default`) win.
fn merge_all_of(base: Json, part: Json) -> Json {
    let (Json::Object(mut b), Json::Object(p)) = (base, part) else { return json!({}) };
    for (k, v) in p {
        match (k.as_str(), b.get_mut(&k)) {
            ("properties", Some(Json::Object(bp))) => {
                if let Json::Object(pp) = v {
                    for (name, s) in pp {
                        bp.entry(name).or_insert(s);
                    }
                }
            }
            ("required", Some(Json::Array(br))) => {
                if let Json::Array(pr) = v {
                    for r in pr {
                        if !br.contains(&r) {
                            br.push(r);
                        }
                    }
                }
            }
            (_, Some(_)) => {}
            (_, None) => {
                b.insert(k, v);
            }
        }
    }
    Json::Object(b)
}

/// The JSON types a schema allows (without `null`); `None` when it does not say.
pub(crate) fn types(schema: &Json) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Json::String(t) => Some(vec![t.as_str()]),
        Json::Array(ts) => Some(ts.iter().filter_map(Json::as_str).filter(|t| *t != "null").collect()),
        _ => None,
    }
}

/// The `type_name` that matches a schema best.
pub(crate) fn type_name_of(schema: &Json) -> String {
    match types(schema).as_deref() {
        Some(["string"]) => "string".to_string(),
        Some(["integer"]) => "integer".to_string(),
        Some(["number"]) => "number".to_string(),
        Some(["boolean"]) => "boolean".to_string(),
        Some(["object"]) => "object".to_string(),
        Some(["array"]) => match schema.get("items").map(type_name_of) {
            Some(item) if item != "any" => format!("list<{item}>"),
            _ => "list".to_string(),
        },
        _ => "any".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_enums_and_copies_past_the_budget_are_left_out() {
        // An `enum` of more than 1,000 values reads as its type alone; 1,000 are kept.
        let many: Vec<u32> = (0..1_001).collect();
        let s = json!({"type": "object", "properties": {
            "many": {"type": "integer", "enum": many},
            "some": {"type": "integer", "enum": many[..1_000]}
        }});
        let r = resolve_schema(&s);
        assert_eq!(r["properties"]["many"], json!({"type": "integer"}));
        assert_eq!(r["properties"]["some"]["enum"].as_array().map(Vec::len), Some(1_000));
        // A definition with a 100 KB description referenced from 100 places: the copies
        // stop at 4 MiB (40 of them), the types stay.
        let text = "d".repeat(100_000);
        let props: serde_json::Map<String, Json> =
            (0..100).map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/D"}))).collect();
        let s = json!({"type": "object", "properties": props,
                       "$defs": {"D": {"type": "string", "description": text}}});
        let r = resolve_schema(&s);
        let described = (0..100).filter(|i| r["properties"][format!("p{i}")].get("description").is_some()).count();
        assert_eq!(described, MAX_COPIED_BYTES / 100_002);
        assert!((0..100).all(|i| r["properties"][format!("p{i}")]["type"] == "string"));
    }

    #[test]
    fn references_into_defs_and_definitions_are_inlined() {
        let s = json!({
            "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
            "definitions": {"N": {"type": "integer", "minimum": 1}},
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "n": {"$ref": "#/definitions/N", "description": "how many"},
                "again": {"$ref": "#/properties/items"},
            },
        });
        let r = resolve_schema(&s);
        assert_eq!(r["properties"]["items"]["items"]["properties"]["id"]["type"], "string");
        assert_eq!(r["properties"]["n"], json!({"type": "integer", "minimum": 1, "description": "how many"}));
        assert_eq!(r["properties"]["again"]["items"]["required"], json!(["id"]));
        assert!(r.get("$defs").is_none());
    }

    #[test]
    fn optional_all_of_and_const_are_flattened() {
        let s = json!({
            "$defs": {"Status": {"enum": ["open", "closed"], "type": "string"}},
            "properties": {
                "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}], "default": null},
                "owner": {"allOf": [{"$ref": "#/$defs/Status"}], "description": "who"},
                "kind": {"const": "issue", "type": "string"},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            },
        });
        let r = resolve_schema(&s);
        let p = &r["properties"];
        assert_eq!(p["status"]["type"], json!(["string", "null"]));
        assert_eq!(p["status"]["enum"], json!(["open", "closed", null]));
        assert_eq!(p["status"]["default"], Json::Null);
        assert_eq!(p["owner"]["description"], "who");
        assert_eq!(p["owner"]["enum"], json!(["open", "closed"]));
        assert_eq!(p["kind"]["enum"], json!(["issue"]));
        assert_eq!(p["either"]["anyOf"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn recursion_is_cut_at_the_stated_depth() {
        let s = json!({
            "$defs": {"C": {"type": "object", "properties": {
                "text": {"type": "string"},
                "replies": {"type": "array", "items": {"$ref": "#/$defs/C"}}}}},
            "$ref": "#/$defs/C",
        });
        let r = resolve_schema(&s);
        // The root is `C` itself (followed once): its replies are `C` again (twice), and
        // theirs are cut.
        let level1 = &r["properties"]["replies"]["items"];
        assert_eq!(level1["properties"]["text"]["type"], "string");
        assert_eq!(level1["properties"]["replies"]["items"], json!({CUT: "#/$defs/C"}));
        // The root itself (`#`), as zod-to-json-schema writes a recursive root.
        let root = json!({"type": "object", "properties": {"child": {"$ref": "#"}}});
        let r = resolve_schema(&root);
        assert_eq!(r["properties"]["child"]["properties"]["child"]["properties"]["child"], json!({CUT: "#"}));
    }

    #[test]
    fn a_deep_schema_is_cut() {
        let mut s = json!({"type": "string"});
        for _ in 0..10_000 {
            // (Not `json!`, which would serialize `s` again, recursively.)
            let mut m = Map::new();
            m.insert("type".into(), json!("array"));
            m.insert("items".into(), s);
            s = Json::Object(m);
        }
        let r = resolve_schema(&s);
        let mut depth = 0;
        let mut at = &r;
        while let Some(items) = at.get("items") {
            depth += 1;
            at = items;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(*at, json!({}));
        // Taken apart without recursion (serde_json's drop recurses).
        let mut stack = vec![s];
        while let Some(mut v) = stack.pop() {
            if let Some(items) = v.get_mut("items") {
                stack.push(items.take());
            }
        }
    }

    #[test]
    fn a_schema_that_doubles_at_every_level_stays_bounded() {
        let mut defs = Map::new();
        for i in 0..40 {
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/$defs/D{}", i + 1)},
                    "b": {"$ref": format!("#/$defs/D{}", i + 1)}}}),
            );
        }
        let s = json!({"$defs": defs, "$ref": "#/$defs/D0"});
        let r = resolve_schema(&s);
        let mut count = 0;
        let mut stack = vec![&r];
        while let Some(n) = stack.pop() {
            count += 1;
            if let Some(m) = n.as_object() {
                stack.extend(m.values());
            }
        }
        assert!(count < 10 * MAX_NODES, "{count} nodes");
    }
}
