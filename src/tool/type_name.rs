//! A declared `type_name` (`string`, `list<object>`, …), read by the model and by the
//! declaration constraints alike.

use std::fmt;

use crate::ranges::MAX_TYPE_NAME_NESTING;

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
    /// angle brackets are allowed), with `list<…>` nested at most
    /// [`MAX_TYPE_NAME_NESTING`] deep: a deeper name is not a type (its declaration says
    /// why: [`TypeName::list_depth`]), so no walk of a declared type runs out of stack.
    pub fn parse(s: &str) -> Option<TypeName> {
        let (depth, inner) = TypeName::lists(s);
        if depth > MAX_TYPE_NAME_NESTING {
            return None;
        }
        let mut t = TypeName::simple(inner)?;
        for _ in 0..depth {
            t = TypeName::List(Some(Box::new(t)));
        }
        Some(t)
    }

    /// How many `list<…>` a type name opens around its innermost part (counted without
    /// recursion, however deep).
    pub fn list_depth(s: &str) -> usize {
        TypeName::lists(s).0
    }

    /// The `list<…>` around a type name's innermost part: how many, and that part.
    fn lists(s: &str) -> (usize, &str) {
        let mut s = s.trim();
        let mut depth = 0;
        while let Some(inner) = s.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            depth += 1;
            s = inner.trim();
        }
        (depth, s)
    }

    fn simple(s: &str) -> Option<TypeName> {
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
