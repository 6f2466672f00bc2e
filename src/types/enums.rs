//! String enums: the type of a value a schema lists the allowed strings of (a JSON Schema
//! `enum` or `const`), and how a declared type is narrowed by its `enum`.
//!
//! Mixed enums are never refused: strings make a [`StrEnum`], `null` makes the type
//! nullable, and any other value adds its own type (`["a", 1]` is `"a" | integer`). Past
//! [`MAX_ENUM_VALUES`] the values are plain `string`, a supertype: the check loosens.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexSet;

use super::{type_of, Fit, Type};
use crate::value::{KeyHash, Value};

/// The most values a string enum holds ([`Type::string_enum`]): a longer one, or a join of
/// enums that would grow past it, is plain `string` (a supertype: the check loosens, never
/// refuses). The bound upstream schemas' `enum`s are read with already
/// ([`crate::ranges::SCHEMA_ENUM_VALUES`]).
pub(crate) const MAX_ENUM_VALUES: usize = crate::ranges::SCHEMA_ENUM_VALUES.max as usize;

/// The values of a string enum type, in declaration order and without duplicates. Held in
/// a hash set, so that membership, subset tests and joins cost one lookup per value
/// however large the enum (at most [`MAX_ENUM_VALUES`]). Two enums are equal when they
/// hold the same values, in whatever order.
#[derive(Clone, Debug, Default)]
pub struct StrEnum {
    values: IndexSet<Arc<str>, KeyHash>,
}

impl StrEnum {
    /// The values, in declaration order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        self.values.iter().map(|v| &**v)
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none (never, in a [`Type::Enum`]).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `s` is one of the values.
    pub fn contains(&self, s: &str) -> bool {
        self.values.contains(s)
    }

    /// Whether every value of `self` is one of `other`'s.
    pub fn is_subset(&self, other: &StrEnum) -> bool {
        self.len() <= other.len() && self.values.iter().all(|v| other.values.contains(v))
    }

    /// Whether no value is in both.
    pub fn is_disjoint(&self, other: &StrEnum) -> bool {
        let (small, large) = if self.len() <= other.len() { (self, other) } else { (other, self) };
        !small.values.iter().any(|v| large.values.contains(v))
    }
}

impl PartialEq for StrEnum {
    fn eq(&self, other: &StrEnum) -> bool {
        self.len() == other.len() && self.is_subset(other)
    }
}

impl StrEnum {
    /// Adds `other`'s values; false (and `self` unchanged past the bound) when they would
    /// make more than [`MAX_ENUM_VALUES`].
    pub(super) fn extend(&mut self, other: &StrEnum) -> bool {
        let new = other.values.iter().filter(|v| !self.values.contains(*v)).count();
        if self.values.len() + new > MAX_ENUM_VALUES {
            return false;
        }
        self.values.extend(other.values.iter().cloned());
        true
    }
}

impl Type {
    /// The enum of these string values (duplicates dropped, first place kept): `never` when
    /// there are none, `string` when there are more than [`MAX_ENUM_VALUES`].
    pub fn string_enum<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> Type {
        let mut set: IndexSet<Arc<str>, KeyHash> = IndexSet::default();
        for v in values {
            if set.len() == MAX_ENUM_VALUES && !set.contains(v.as_ref()) {
                return Type::Str;
            }
            if !set.contains(v.as_ref()) {
                set.insert(Arc::from(v.as_ref()));
            }
        }
        if set.is_empty() {
            return Type::Never;
        }
        Type::Enum(Arc::new(StrEnum { values: set }))
    }

    /// The type of exactly these values (a JSON Schema `enum`): the strings an enum of them,
    /// `null` nullable, every other value its own type (`1` an integer, `true` a boolean):
    /// `["open", "closed", null]` is `"open" | "closed" | null`, `["a", 1]` is
    /// `"a" | integer`. `never` when there are none.
    pub fn of_values<'v>(values: impl IntoIterator<Item = &'v Value> + Clone) -> Type {
        let strings = values.clone().into_iter().filter_map(Value::as_str);
        let others = values.into_iter().filter(|v| v.as_str().is_none()).map(type_of);
        Type::union_all(std::iter::once(Type::string_enum(strings)).chain(others))
    }

    /// This declared type narrowed by an `enum` of `values`: the values of the declared type
    /// ([`Type::of_values`]); the declared type itself when none of them is of it (a schema
    /// nothing satisfies is the server's to refuse, not the checker's).
    pub fn narrowed_to<'v>(self, values: impl IntoIterator<Item = &'v Value> + Clone) -> Type {
        let kept: Vec<&Value> = values.into_iter().filter(|v| type_of(v).fits(&self) == Fit::Yes).collect();
        match Type::of_values(kept.iter().copied()) {
            Type::Never => self,
            t => t,
        }
    }

    /// This type with an enum alternative widened to `string`: the type of what a string
    /// operation (`slice`, `+`) makes of a value of it, which is no longer one of the values.
    pub fn widen_enums(&self) -> Type {
        match self {
            Type::Enum(_) => Type::Str,
            Type::Union(parts) if parts.iter().any(|p| matches!(p, Type::Enum(_))) => {
                Type::union_all(parts.iter().map(|p| if matches!(p, Type::Enum(_)) { Type::Str } else { p.clone() }))
            }
            other => other.clone(),
        }
    }
}

/// The longest an enum's value is shown in a type, in characters: past it, `…"`.
const SHOWN_VALUE_CHARS: usize = 64;

/// `v` as a JSON string, at most [`SHOWN_VALUE_CHARS`] characters of it.
pub(crate) fn show_quoted(out: &mut impl fmt::Write, v: &str) -> fmt::Result {
    match v.char_indices().nth(SHOWN_VALUE_CHARS) {
        Some((end, _)) => write!(out, "{}…\"", serde_json::Value::from(&v[..end]).to_string().trim_end_matches('"')),
        None => write!(out, "{}", serde_json::Value::from(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(values: &[&str]) -> Type {
        Type::string_enum(values.iter().copied())
    }

    #[test]
    fn an_enum_is_a_string_of_known_values() {
        let status = e(&["open", "closed"]);
        assert_eq!(status.to_string(), r#""open" | "closed""#);
        assert_eq!(status.fits(&Type::Str), Fit::Yes);
        assert_eq!(Type::Str.fits(&status), Fit::Maybe);
        assert_eq!(status.fits(&Type::Int), Fit::No);
        assert_eq!(e(&["open"]).fits(&status), Fit::Yes);
        assert_eq!(e(&["open", "merged"]).fits(&status), Fit::Maybe);
        assert_eq!(e(&["OPEN"]).fits(&status), Fit::No);
        // Order and duplicates do not make another type.
        assert_eq!(e(&["closed", "open", "open"]), status);
        assert_eq!(e(&[]), Type::Never);
    }

    #[test]
    fn enums_join_to_their_union() {
        let joined = e(&["a", "b"]).union(e(&["b", "c"]));
        assert_eq!(joined.to_string(), r#""a" | "b" | "c""#);
        assert_eq!(e(&["a"]).union(Type::Str), Type::Str);
        assert_eq!(Type::Str.union(e(&["a"])), Type::Str);
        assert_eq!(e(&["a"]).union(Type::Null).to_string(), r#""a" | null"#);
        assert_eq!(e(&["a"]).union(Type::Null).non_null(), e(&["a"]));
        assert_eq!(Type::union_all([e(&["a"]), Type::Int, e(&["b"])]).to_string(), r#""a" | "b" | integer"#);
        assert_eq!(e(&["a"]).union(Type::Int).widen_enums(), Type::Str.union(Type::Int));
    }

    #[test]
    fn mixed_values_are_never_refused() {
        let values: Vec<Value> = serde_json::from_str::<Vec<serde_json::Value>>(r#"["a", 1, null, true, "b", 2.5]"#)
            .unwrap_or_default()
            .iter()
            .map(Value::from)
            .collect();
        assert_eq!(Type::of_values(&values).to_string(), r#""a" | "b" | null | boolean | number"#);
        // Beside a declared type only its values count; none of them: the type alone.
        assert_eq!(Type::Str.narrowed_to(&values).to_string(), r#""a" | "b""#);
        assert_eq!(Type::Int.narrowed_to(&values), Type::Int);
        assert_eq!(Type::Bool.narrowed_to(&values), Type::Bool);
        assert_eq!(Type::Object(Default::default()).narrowed_to(&values), Type::Object(Default::default()));
    }

    /// Past the bound an enum is `string`, built and joined without quadratic work.
    #[test]
    fn a_large_enum_is_bounded() {
        let many: Vec<String> = (0..100_000).map(|i| format!("v{i}")).collect();
        assert_eq!(Type::string_enum(&many), Type::Str);
        let most = Type::string_enum(&many[..MAX_ENUM_VALUES]);
        assert!(matches!(&most, Type::Enum(x) if x.len() == MAX_ENUM_VALUES));
        let shown = most.to_string();
        assert!(shown.ends_with(r#""v15" | … (1000 values)"#), "{shown}");
        // A thousand enums of a thousand values, a million values in all: joined in one
        // pass, each lookup hashed, and past the bound `string`.
        let parts = (0..1_000).map(|k| Type::string_enum(&many[k..k + MAX_ENUM_VALUES]));
        assert_eq!(Type::union_all(parts), Type::Str);
        let same = (0..1_000).map(|_| most.clone());
        assert_eq!(Type::union_all(same), most);
        // A long value is shown cut.
        let long = Type::string_enum(["x".repeat(10_000)]).to_string();
        assert!(long.len() < 80 && long.ends_with("…\""), "{long}");
    }
}
