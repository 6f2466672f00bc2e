//! What a provider format cannot express (SPEC §8), as `seeds/001`'s `ExportWithWarnings`
//! reports it: one [`ExportWarning`] per feature lost, naming the feature, the tool and
//! the format.
//!
//! | feature | OpenAI | Anthropic | MCP |
//! |---|---|---|---|
//! | `responses` (an output schema) | lost: function tools have no output schema | lost: tools have no output schema | kept (`outputSchema`) |
//! | a `file` type | a path string or `{path}`: that it names a file in the tool root is lost | same | same |
//! | `min_length`, `max_length` on a string | left out: function schemas do not support `minLength`/`maxLength` | kept | kept |
//! | `default` | left out: function schemas do not support `default` | kept | kept |
//!
//! Every other constraint (`enum`, `minimum`, `maximum`, `pattern`, `items`, and
//! `min_length`/`max_length` on a list as `minItems`/`maxItems`) is kept in every format.

use std::fmt;

use serde_json::Value as Json;

use super::Format;
use crate::tool::{Constraints, Param, ToolDef, TypeName};

/// A feature of a tool that a format cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportWarning {
    /// What is lost: `responses`, `` `file` type of argument `f` ``, `` `default` of argument `n` ``.
    pub feature: String,
    /// The exported tool name.
    pub tool: String,
    /// The format.
    pub format: Format,
    /// What became of it.
    pub detail: String,
}

impl fmt::Display for ExportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} lost converting `{}` to {}: {}", self.feature, self.tool, self.format.as_str(), self.detail)
    }
}

impl Format {
    /// `openai`, `anthropic` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Mcp => "mcp",
        }
    }
}

/// The constraint keywords `format` leaves out of a schema of type `ty` (JSON Schema
/// names).
pub(crate) fn dropped_keywords(format: Format, ty: &TypeName) -> &'static [&'static str] {
    match (format, ty) {
        (Format::OpenAi, TypeName::List(_)) => &["default"],
        (Format::OpenAi, _) => &["minLength", "maxLength", "default"],
        _ => &[],
    }
}

/// Removes what `format` cannot express from a declaration's schema, at every depth of
/// `items`.
pub(crate) fn strip(format: Format, ty: &TypeName, schema: &mut serde_json::Map<String, Json>) {
    for k in dropped_keywords(format, ty) {
        schema.remove(*k);
    }
    if let (TypeName::List(Some(elem)), Some(Json::Object(items))) = (ty, schema.get_mut("items")) {
        strip(format, elem, items);
    }
}

/// Every feature of `def`, exported under `name`, that `format` loses.
pub fn lossy_features(format: Format, name: &str, def: &ToolDef) -> Vec<ExportWarning> {
    let mut out = Vec::new();
    let mut warn = |feature: String, detail: &str| {
        out.push(ExportWarning { feature, tool: name.to_string(), format, detail: detail.to_string() })
    };
    for p in &def.arguments {
        param(format, "argument", p, &mut warn);
    }
    match format {
        Format::OpenAi | Format::Anthropic if !def.responses.is_empty() => {
            warn("`responses`".to_string(), "the format has no output schema; the declared responses are left out");
        }
        Format::Mcp => {
            for p in &def.responses {
                param(format, "response", p, &mut warn);
            }
        }
        _ => {}
    }
    out
}

fn param(format: Format, noun: &str, p: &Param, warn: &mut impl FnMut(String, &str)) {
    let what = format!("{noun} `{}`", p.name.node);
    declaration(format, &what, &p.type_or_any(), &p.constraints, warn);
}

fn declaration(format: Format, what: &str, ty: &TypeName, c: &Constraints, warn: &mut impl FnMut(String, &str)) {
    if contains_file(ty) {
        warn(
            format!("the `file` type of {what}"),
            "exported as a path string or a `{path}` object; that it names a file under the tool root is lost",
        );
    }
    let dropped = dropped_keywords(format, ty);
    let checks: [(&str, &str, bool); 3] = [
        ("minLength", "min_length", c.min_length.is_some()),
        ("maxLength", "max_length", c.max_length.is_some()),
        ("default", "default", c.default.is_some()),
    ];
    for (keyword, key, given) in checks {
        if given && dropped.contains(&keyword) {
            let enforced = if key == "default" { "" } else { " (the engine still enforces it)" };
            warn(
                format!("`{key}` of {what}"),
                &format!("the format's schemas do not support `{keyword}`; left out{enforced}"),
            );
        }
    }
    if let (TypeName::List(Some(elem)), Some(items)) = (ty, &c.items) {
        declaration(format, &format!("the elements of {what}"), elem, &items.constraints, warn);
    }
}

fn contains_file(ty: &TypeName) -> bool {
    match ty {
        TypeName::File => true,
        TypeName::List(Some(t)) => contains_file(t),
        _ => false,
    }
}
