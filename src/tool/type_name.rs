//! A declared `type_name` (`string`, `list<object>`, …), read by the model and by the
//! declaration constraints alike.

use std::fmt;

/// A declared `type_name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeName {
    /// `string`
    String,
    /// `number`
    Number,
    /// `integer`
    Integer,
    /// `boolean`
    Boolean,
    /// `list`, or `list<T>` with an element type.
    List(Option<Box<TypeName>>),
    /// `object`
    Object,
    /// `file`: a path string or an object with a `path` (SPEC §1).
    File,
    /// `any`
    Any,
}

impl TypeName {
    /// The simple type names, as written.
    pub const SIMPLE: &'static [&'static str] =
        &["string", "number", "integer", "boolean", "list", "object", "file", "any"];

    /// Parses a `type_name`: one of [`TypeName::SIMPLE`] or `list<T>` (spaces inside the
    /// angle brackets are allowed).
    pub fn parse(s: &str) -> Option<TypeName> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            return TypeName::parse(inner).map(|t| TypeName::List(Some(Box::new(t))));
        }
        Some(match s {
            "string" => TypeName::String,
            "number" => TypeName::Number,
            "integer" => TypeName::Integer,
            "boolean" => TypeName::Boolean,
            "list" => TypeName::List(None),
            "object" => TypeName::Object,
            "file" => TypeName::File,
            "any" => TypeName::Any,
            _ => return None,
        })
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeName::String => f.write_str("string"),
            TypeName::Number => f.write_str("number"),
            TypeName::Integer => f.write_str("integer"),
            TypeName::Boolean => f.write_str("boolean"),
            TypeName::List(None) => f.write_str("list"),
            TypeName::List(Some(t)) => write!(f, "list<{t}>"),
            TypeName::Object => f.write_str("object"),
            TypeName::File => f.write_str("file"),
            TypeName::Any => f.write_str("any"),
        }
    }
}
