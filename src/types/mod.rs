//! Static types and the checker.
//!
//! [`Type`] is what the checker knows about a value before it exists. `any` stands for
//! unknown JSON, so the checker only reports what **cannot** succeed: an operation is an
//! error when no value of the operand's type could make it work ([`Fit::No`]), and is left
//! to run time when some could ([`Fit::Maybe`]).

mod check;
mod enums;
mod join;
#[cfg(test)]
pub(crate) use join::STEPS as TYPE_STEPS;
mod scope;
pub mod signature;
pub(crate) mod stop;
pub mod typed;

pub(crate) use check::compare::{disjoint_help, enum_mismatch, never_equal, outside_enum, quoted, Spelling};
pub use check::{check, check_template, RefUse};
pub(crate) use check::{plain_field_type, relative_path, FreeNames, SeenKeys};
pub(crate) use enums::show_quoted;
pub use enums::StrEnum;
pub(crate) use scope::NameTable;
#[cfg(test)]
pub(crate) use scope::RefScope;
pub use scope::Scope;

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::value::KeyHash;

/// A static type.
///
/// Equality is structural (an object's `origin` aside), and takes a step per pair of
/// distinct nodes however much the two types share (`src/types/join.rs`).
#[derive(Clone, Debug)]
pub enum Type {
    /// Unknown: any JSON value.
    Any,
    /// No value: the type of an expression that always fails.
    Never,
    /// `null`
    Null,
    /// `boolean`
    Bool,
    /// `integer` (a subtype of `number`)
    Int,
    /// `number`
    Number,
    /// `string`
    Str,
    /// A string that is one of a known set of values: a JSON Schema `enum` (or `const`) of
    /// strings, shown `"open" | "closed"` ([`StrEnum`]). A subtype of `string`.
    Enum(Arc<StrEnum>),
    /// `file`: a path string, or an object with a string `path`.
    File,
    /// `list<T>`
    List(Arc<Type>),
    /// `object{…}`
    Object(Arc<ObjectType>),
    /// One of several types (never nested, never containing `any`; at most one enum, and
    /// none beside `string`, which holds it).
    Union(Vec<Type>),
}

/// The fields of an object type, by name.
pub type Fields = IndexMap<Arc<str>, Type, KeyHash>;

/// The fields of an object type.
#[derive(Clone, Debug, Default)]
pub struct ObjectType {
    /// Known fields and their types, in order (hashed with [`KeyHash`]: short names, looked
    /// up for every field read the checker sees).
    pub fields: Fields,
    /// Whether other fields may exist.
    pub open: bool,
    /// Whose declared result this object is, when it is one a plan's check closed (a
    /// callee's name as the plan writes it: `shop/list_orders`, `/tools/extract.tool`): a
    /// field it lacks is reported as that tool's (`W0102`, `E1320` in a plan). Not part of
    /// the type: two objects that differ only here are equal.
    pub origin: Option<Arc<str>>,
}

impl PartialEq for ObjectType {
    fn eq(&self, other: &ObjectType) -> bool {
        join::Work::default().same_objects(self, other)
    }
}

impl PartialEq for Type {
    fn eq(&self, other: &Type) -> bool {
        join::Work::default().same(self, other)
    }
}

/// The origin of the join of two objects: theirs when they have the same.
fn merge_origin(a: &ObjectType, b: &ObjectType) -> Option<Arc<str>> {
    if a.origin == b.origin {
        a.origin.clone()
    } else {
        None
    }
}

/// Whether a value of one type can be used where another is expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Always.
    Yes,
    /// For some values: checked at run time.
    Maybe,
    /// Never: a static error.
    No,
}

impl Type {
    /// `list<any>` (one shared allocation: the type of every list nothing is known of).
    pub fn any_list() -> Type {
        static ANY_LIST: std::sync::LazyLock<Type> = std::sync::LazyLock::new(|| Type::List(Arc::new(Type::Any)));
        ANY_LIST.clone()
    }

    /// An open object with no known fields.
    pub fn any_object() -> Type {
        Type::Object(Arc::new(ObjectType { fields: Fields::default(), open: true, origin: None }))
    }

    /// An object with these fields, open (other fields may exist) or closed.
    pub fn object(fields: impl IntoIterator<Item = (Arc<str>, Type)>, open: bool) -> Type {
        Type::Object(Arc::new(ObjectType { fields: fields.into_iter().collect(), open, origin: None }))
    }

    /// A closed object with these fields: the declared result of the tool `origin`, which a
    /// field it lacks is reported against ([`ObjectType::origin`]).
    pub fn result_of(fields: impl IntoIterator<Item = (Arc<str>, Type)>, origin: Arc<str>) -> Type {
        Type::Object(Arc::new(ObjectType { fields: fields.into_iter().collect(), open: false, origin: Some(origin) }))
    }

    /// This type with whatever nests deeper than `depth` levels of lists and objects
    /// replaced by `any`. Keeps types inferred along a long `pipeline` (each operation
    /// wrapping `current` once more) from growing with the number of operations.
    pub fn truncated(&self, depth: usize) -> Type {
        join::Work::default().truncated(self, depth)
    }

    /// The union of two types, simplified.
    pub fn union(self, other: Type) -> Type {
        join::Work::default().union(self, other)
    }

    /// The union of many types, simplified: `any` absorbs everything, `integer` merges
    /// into `number`, lists merge their element types, objects their fields, duplicates go.
    pub fn union_all(types: impl IntoIterator<Item = Type>) -> Type {
        join::Work::default().union_all(types)
    }

    /// The alternatives of a union, or the type itself.
    pub fn alternatives(&self) -> &[Type] {
        match self {
            Type::Union(v) => v,
            other => std::slice::from_ref(other),
        }
    }

    /// Whether a value of type `self` can be used where `expected` is required.
    pub fn fits(&self, expected: &Type) -> Fit {
        if matches!(expected, Type::Any) || matches!(self, Type::Never) {
            return Fit::Yes;
        }
        if matches!(self, Type::Any) {
            return Fit::Maybe;
        }
        if let Type::Union(alts) = self {
            // Yes when every alternative fits, No when none can, Maybe otherwise.
            let (mut all_yes, mut all_no) = (true, true);
            for a in alts.iter() {
                let f = a.fits(expected);
                all_yes &= f == Fit::Yes;
                all_no &= f == Fit::No;
            }
            return match (all_yes, all_no) {
                (true, _) => Fit::Yes,
                (_, true) => Fit::No,
                _ => Fit::Maybe,
            };
        }
        if let Type::Union(alts) = expected {
            // The best fit among the alternatives.
            let mut best = Fit::No;
            for a in alts.iter() {
                match self.fits(a) {
                    Fit::Yes => return Fit::Yes,
                    Fit::Maybe => best = Fit::Maybe,
                    Fit::No => {}
                }
            }
            return best;
        }
        match (self, expected) {
            // Element types never make a list unusable: the list may be empty.
            (Type::List(_), Type::List(_)) => Fit::Yes,
            (Type::Object(_), Type::Object(_)) => Fit::Yes,
            (a, b) if a == b => Fit::Yes,
            (Type::Int, Type::Number) => Fit::Yes,
            (Type::Number, Type::Int) => Fit::Maybe,
            (Type::Str, Type::File) => Fit::Yes,
            (Type::Enum(_), Type::Str | Type::File) => Fit::Yes,
            (Type::Str | Type::File, Type::Enum(_)) => Fit::Maybe,
            (Type::Enum(a), Type::Enum(b)) if a.is_subset(b) => Fit::Yes,
            (Type::Enum(a), Type::Enum(b)) if a.is_disjoint(b) => Fit::No,
            (Type::Enum(_), Type::Enum(_)) => Fit::Maybe,
            (Type::File, Type::Str) | (Type::File, Type::Object(_)) => Fit::Maybe,
            (Type::Object(o), Type::File) => match o.fields.get("path") {
                Some(t) => t.fits(&Type::Str),
                None if o.open => Fit::Maybe,
                None => Fit::No,
            },
            _ => Fit::No,
        }
    }

    /// The element type of a list type (`any` when unknown, `never` when not a list).
    pub fn element(&self) -> Type {
        match self {
            Type::List(e) => return (**e).clone(),
            Type::Any => return Type::Any,
            Type::Union(_) => {}
            _ => return Type::Never,
        }
        Type::union_all(self.alternatives().iter().map(|t| match t {
            Type::List(e) => (**e).clone(),
            Type::Any => Type::Any,
            _ => Type::Never,
        }))
    }

    /// The type without `null` (`any` stays `any`).
    pub fn non_null(&self) -> Type {
        match self {
            Type::Null => return Type::Never,
            Type::Union(_) => {}
            other => return other.clone(),
        }
        Type::union_all(self.alternatives().iter().filter(|t| **t != Type::Null).cloned())
    }

    /// Parses a declared `type_name`: `string`, `number`, `integer`, `boolean`, `list`,
    /// `object`, `file`, `any`, `null`, and `list<T>`.
    pub fn from_type_name(name: &str) -> Option<Type> {
        // `list<…>` unwrapped without recursion, at most as deep as a declaration allows.
        let mut name = name.trim();
        let mut depth = 0;
        while let Some(inner) = name.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            depth += 1;
            if depth > crate::ranges::MAX_TYPE_NAME_NESTING {
                return None;
            }
            name = inner.trim();
        }
        let mut t = match name {
            "string" | "str" => Type::Str,
            "number" | "float" => Type::Number,
            "integer" | "int" => Type::Int,
            "boolean" | "bool" => Type::Bool,
            "list" | "array" => Type::any_list(),
            "object" | "dict" => Type::any_object(),
            "file" => Type::File,
            "any" => Type::Any,
            "null" => Type::Null,
            _ => return None,
        };
        for _ in 0..depth {
            t = Type::List(Arc::new(t));
        }
        Some(t)
    }
}

/// The most characters a type is shown with ([`Type`]'s `Display`): past them it ends with
/// `…`. A type read from an upstream's schema can have 20,000 nodes (the bound of one
/// resolution), and shown whole it took 260 KB in each step of a check's answer (64 steps:
/// 33 MB and seconds of work from a 4.8 KB plan); every message, hover and answer that
/// shows a type shows at most this much of it.
pub const MAX_SHOWN_CHARS: usize = 4_000;

impl fmt::Display for Type {
    /// The type, at most [`MAX_SHOWN_CHARS`] of it; with `{:#}`, preceded by its article
    /// ("an integer", "a list<string>").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            let article = match self {
                Type::Int | Type::Object(_) | Type::Any => "an ",
                Type::Null | Type::Never | Type::Union(_) | Type::Enum(_) => "",
                _ => "a ",
            };
            f.write_str(article)?;
        }
        let mut out = Shown { f, left: MAX_SHOWN_CHARS, cut: false };
        match self.show(&mut out) {
            Err(_) if out.cut => out.f.write_str("…"),
            shown => shown,
        }
    }
}

/// How many of an enum's values its type shows (`Display`); the rest are counted.
const SHOWN_ENUM_VALUES: usize = 16;

/// Where a type is shown: at most `left` more bytes, then `cut`, and every write fails so
/// that the walk stops.
struct Shown<'a, 'f> {
    f: &'a mut fmt::Formatter<'f>,
    left: usize,
    cut: bool,
}

impl fmt::Write for Shown<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.len() <= self.left {
            self.left -= s.len();
            return self.f.write_str(s);
        }
        let mut end = self.left;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.left = 0;
        self.cut = true;
        self.f.write_str(&s[..end])?;
        Err(fmt::Error)
    }
}

impl Type {
    /// Writes the type (no article) into `out`, stopping when `out` is full.
    fn show(&self, out: &mut Shown<'_, '_>) -> fmt::Result {
        use fmt::Write;
        match self {
            Type::Any => out.write_str("any"),
            Type::Never => out.write_str("never"),
            Type::Null => out.write_str("null"),
            Type::Bool => out.write_str("boolean"),
            Type::Int => out.write_str("integer"),
            Type::Number => out.write_str("number"),
            Type::Str => out.write_str("string"),
            Type::File => out.write_str("file"),
            Type::Enum(e) => {
                for (i, v) in e.values().take(SHOWN_ENUM_VALUES).enumerate() {
                    if i > 0 {
                        out.write_str(" | ")?;
                    }
                    // JSON-quoted, each value cut first: one value may be long.
                    show_quoted(out, v)?;
                }
                if e.len() > SHOWN_ENUM_VALUES {
                    out.write_fmt(format_args!(" | … ({} values)", e.len()))?;
                }
                Ok(())
            }
            Type::List(e) if **e == Type::Any => out.write_str("list"),
            Type::List(e) => {
                out.write_str("list<")?;
                e.show(out)?;
                out.write_str(">")
            }
            Type::Object(o) => {
                if o.fields.is_empty() {
                    return out.write_str("object");
                }
                out.write_str("object{")?;
                for (i, (k, t)) in o.fields.iter().enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    out.write_str(k)?;
                    out.write_str(": ")?;
                    t.show(out)?;
                }
                if o.open {
                    out.write_str(", …")?;
                }
                out.write_str("}")
            }
            Type::Union(alts) => {
                for (i, t) in alts.iter().enumerate() {
                    if i > 0 {
                        out.write_str(" | ")?;
                    }
                    t.show(out)?;
                }
                Ok(())
            }
        }
    }
}

/// The type of a runtime value, as precise as its content allows (list element types are
/// the union of the elements' types, objects are closed).
pub fn type_of(v: &crate::value::Value) -> Type {
    use crate::value::Value;
    fn go(v: &Value, depth: usize) -> Type {
        if depth > 8 {
            return Type::Any;
        }
        match v {
            Value::Null => Type::Null,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Float(_) => Type::Number,
            Value::Str(_) => Type::Str,
            Value::List(l) => {
                // Sample a bounded number of elements: types of huge inputs stay cheap.
                let elem = Type::union_all(l.iter().take(64).map(|x| go(x, depth + 1)));
                let elem = if l.len() > 64 || elem == Type::Never { Type::Any } else { elem };
                Type::List(Arc::new(elem))
            }
            Value::Object(o) => {
                if o.len() > 256 {
                    return Type::any_object();
                }
                Type::object(o.iter().map(|(k, x)| (Arc::from(k.as_str()), go(x, depth + 1))), false)
            }
        }
    }
    go(v, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_simplify() {
        assert_eq!(Type::Int.union(Type::Number), Type::Number);
        assert_eq!(Type::Str.union(Type::Any), Type::Any);
        assert_eq!(Type::Str.union(Type::Str), Type::Str);
        assert_eq!(Type::Null.union(Type::Str).to_string(), "null | string");
    }

    #[test]
    fn fitting() {
        assert_eq!(Type::Int.fits(&Type::Number), Fit::Yes);
        assert_eq!(Type::Any.fits(&Type::Number), Fit::Maybe);
        assert_eq!(Type::Str.fits(&Type::Number), Fit::No);
        assert_eq!(Type::Str.union(Type::Int).fits(&Type::Number), Fit::Maybe);
        let list_or_null = Type::any_list().union(Type::Null);
        assert_eq!(Type::Int.fits(&list_or_null), Fit::No);
        assert_eq!(Type::Null.fits(&list_or_null), Fit::Yes);
    }

    #[test]
    fn type_names() {
        assert_eq!(Type::from_type_name("list<string>"), Some(Type::List(Arc::new(Type::Str))));
        assert_eq!(Type::from_type_name("lst"), None);
        // `list<…>` at most 32 deep, unwrapped without recursion.
        let deep = |n: usize| format!("{}int{}", "list< ".repeat(n), " >".repeat(n));
        let mut t = Type::Int;
        for _ in 0..32 {
            t = Type::List(Arc::new(t));
        }
        assert_eq!(Type::from_type_name(&deep(32)), Some(t));
        assert_eq!(Type::from_type_name(&deep(33)), None);
        assert_eq!(Type::from_type_name(&deep(100_000)), None);
    }

    /// A type is shown with at most `MAX_SHOWN_CHARS` characters, then `…`; a small one
    /// whole, with its article under `{:#}`.
    #[test]
    fn a_large_type_is_shown_cut() {
        let mut t = Type::Str;
        for _ in 0..16 {
            t = Type::object([("a".into(), t.clone()), ("b".into(), t)], false);
        }
        let shown = t.to_string();
        assert_eq!(shown.chars().count(), MAX_SHOWN_CHARS + 1, "{shown:.80}");
        assert!(shown.starts_with("object{a: object{a: ") && shown.ends_with('…'));
        assert_eq!(format!("{t:#}").chars().count(), "an ".len() + MAX_SHOWN_CHARS + 1);
        let small = Type::object([("a".into(), Type::List(Arc::new(Type::Int)))], true);
        assert_eq!(small.to_string(), "object{a: list<integer>, …}");
        assert_eq!(format!("{small:#}"), "an object{a: list<integer>, …}");
        assert_eq!(format!("{:#}", Type::union_all([Type::Int, Type::Null])), "integer | null");
    }
}
