//! The static types a tool's declarations give: a `type_name`'s, a declared argument's as
//! the composite sees it and as a caller may pass it, a callee's response and a plain step's
//! result, and what a failure under `continue_on_error` leaves. A leaf: the checker's passes
//! (`check/`) and type inference from use (`infer.rs`) both read it.

use std::sync::Arc;

use super::root::ExactTypes;
use crate::tool::constraints::Constraints;
use crate::tool::{Param, TypeName};
use crate::types::Type;

/// The static type of a declared `type_name`.
pub(crate) fn declared_type(t: &TypeName) -> Type {
    match t {
        TypeName::String => Type::Str,
        TypeName::Number => Type::Number,
        TypeName::Integer => Type::Int,
        TypeName::Boolean => Type::Bool,
        TypeName::List(None) => Type::any_list(),
        TypeName::List(Some(e)) => Type::List(Arc::new(declared_type(e))),
        TypeName::Object => Type::any_object(),
        TypeName::File => Type::File,
        TypeName::Any => Type::Any,
    }
}

/// The type of a declared argument's or response's value: its `type_name` narrowed by its
/// constraints, an `enum` of strings to a string enum (`"enum": ["asc", "desc"]` is
/// `"asc" | "desc"`) and a list's `items` to its element type.
pub(crate) fn value_type(p: &Param) -> Type {
    constrained_type(&p.type_or_any(), &p.constraints)
}

fn constrained_type(t: &TypeName, c: &Constraints) -> Type {
    let base = match (t, &c.items) {
        (TypeName::List(_), Some(e)) | (TypeName::Any, Some(e)) => {
            Type::List(Arc::new(constrained_type(&e.type_name, &e.constraints)))
        }
        _ => declared_type(t),
    };
    match &c.enum_values {
        Some(values) => base.narrowed_to(&values.node),
        None => base,
    }
}

/// A declared argument's or response's type: its value's ([`value_type`]), or null when not
/// required.
pub(crate) fn param_type(p: &Param) -> Type {
    param_type_as(p, value_type(p))
}

/// [`param_type`] with the declared value's type `t` (an exact type, [`ExactTypes`]).
pub(crate) fn param_type_as(p: &Param, t: Type) -> Type {
    if p.is_required() {
        t
    } else {
        t.union(Type::Null)
    }
}

/// A callee's declaration's value type: the exact one when the callee has it (an upstream
/// tool's schema), else its `type_name`'s.
pub(crate) fn exact_type(exact: Option<&ExactTypes>, p: &Param, response: bool) -> Type {
    let known = exact.and_then(|e| if response { &e.responses } else { &e.arguments }.get(p.name.node.as_str()));
    known.cloned().unwrap_or_else(|| value_type(p))
}

/// A composite's own argument as `REF:arguments.X` sees it: a declaration with a `default`
/// is never null inside, since the run fills the default in for an absent or null value.
pub(crate) fn argument_type(p: &Param) -> Type {
    if crate::tool::validate::default_of(p).is_some() {
        value_type(p)
    } else {
        param_type(p)
    }
}

/// What a caller may pass for a callee's argument: its type, or null when it is optional or
/// has a `default` (which the run then fills in).
pub(crate) fn accepted_type(p: &Param) -> Type {
    accepted_type_as(p, value_type(p))
}

/// [`accepted_type`] with the declared value's type `t`.
pub(crate) fn accepted_type_as(p: &Param, t: Type) -> Type {
    if p.is_required() && crate::tool::validate::default_of(p).is_none() {
        t
    } else {
        t.union(Type::Null)
    }
}

/// What a step or a fan-out child that failed under `continue_on_error` leaves:
/// `{"status": "failed", "error_message": …}` (`exec::data::failed_result`), exactly.
pub(crate) fn failure_type() -> Type {
    Type::object([(Arc::from("status"), Type::Str), (Arc::from("error_message"), Type::Str)], false)
}

/// [`failure_type`] as REFs to the step see it: `REF:<step>.response` is the whole failure
/// (the response alias, SPEC §2: it has no `response` key), never null: the union with the
/// step's own result is one object, whose `response` is then the callee's response or the
/// failure (an object, which `filter(array=…)` refuses at check as at run).
pub(crate) fn failed_step_type() -> Type {
    let failure = failure_type();
    Type::object(
        [(Arc::from("status"), Type::Str), (Arc::from("error_message"), Type::Str), (Arc::from("response"), failure)],
        false,
    )
}

/// A callee's raw response: an object of its declared responses, or any object when it
/// declares none. Open (a tool may return more than it declares) unless `closed` names the
/// callee: then exactly the declared responses, a field outside them reported as that
/// tool's ([`Type::result_of`]; `Analyzer::set_closed_results` says when).
pub(crate) fn response_type(declared: Option<&[Param]>, exact: Option<&ExactTypes>, closed: Option<&Arc<str>>) -> Type {
    match declared {
        Some(rs) => {
            let fields =
                rs.iter().map(|p| (Arc::from(p.name.node.as_str()), param_type_as(p, exact_type(exact, p, true))));
            match closed {
                Some(tool) => Type::result_of(fields, tool.clone()),
                None => Type::object(fields, true),
            }
        }
        None => Type::any_object(),
    }
}

/// A plain step's result before its transforms: the response with the `response` alias
/// (SPEC §2: the key `response` when declared, else the whole result); closed as
/// [`response_type`] is.
pub(crate) fn plain_result_type(
    declared: Option<&[Param]>,
    exact: Option<&ExactTypes>,
    closed: Option<&Arc<str>>,
) -> Type {
    let raw = response_type(declared, exact, closed);
    let mut fields = object_fields(&raw);
    if !fields.iter().any(|(k, _)| &**k == "response") {
        let alias = if declared.is_some() { raw.clone() } else { Type::Any };
        fields.push((Arc::from("response"), alias));
    }
    step_result(fields, closed)
}

/// A step's result as REFs to it see it, of these fields: closed and named after the
/// callee when `closed` names it, else open.
pub(crate) fn step_result(fields: impl IntoIterator<Item = (Arc<str>, Type)>, closed: Option<&Arc<str>>) -> Type {
    match closed {
        Some(tool) => Type::result_of(fields, tool.clone()),
        None => Type::object(fields, true),
    }
}

pub(crate) fn object_fields(t: &Type) -> Vec<(Arc<str>, Type)> {
    match t {
        Type::Object(o) => o.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod default_tests {
    use super::*;

    fn param(src: &str) -> Param {
        let text = format!(r#"{{"arguments": [{src}], "system_event_endpoint": "builtin:echo"}}"#);
        let (def, diags) = crate::tool::load(&text);
        assert!(diags.is_empty(), "{diags:?}");
        def.expect("a tool").arguments.remove(0)
    }

    #[test]
    fn a_default_makes_the_argument_non_null_inside_and_optional_outside() {
        let plain = param(r#"{"name": "a", "type_name": "string"}"#);
        assert_eq!(argument_type(&plain), Type::Str.union(Type::Null));
        let defaulted = param(r#"{"name": "a", "type_name": "string", "default": "x"}"#);
        assert_eq!(argument_type(&defaulted), Type::Str);
        assert_eq!(accepted_type(&defaulted), Type::Str.union(Type::Null));
        let null_default = param(r#"{"name": "a", "type_name": "string", "default": null}"#);
        assert_eq!(argument_type(&null_default), Type::Str.union(Type::Null));
        let required = param(r#"{"name": "a", "type_name": "string", "required": true}"#);
        assert_eq!(accepted_type(&required), Type::Str);
        let both = param(r#"{"name": "a", "type_name": "string", "required": true, "default": "x"}"#);
        assert_eq!(argument_type(&both), Type::Str);
        assert_eq!(accepted_type(&both), Type::Str.union(Type::Null));
    }
}
