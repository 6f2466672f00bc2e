//! The built-in functions of SPEC §4.5 and their (ext) companions.
//!
//! Each body takes its arguments in parameter order and never panics: every type it cannot
//! take is an [`FnError`] naming the parameter (and element, for lists). Lists are read in
//! place; only results are allocated.
//!
//! One file per family of functions. Each function is one `pub(super) fn name() ->
//! Function` (its signature) followed by its body, so adding a function touches its family
//! file and the registry [`table`] below. What the families share (argument conversion,
//! limits, the metered walks) is here; the family files see it, and the imports below,
//! through `use super::*`.

mod control;
mod dates;
mod files;
mod json;
mod lists;
mod numbers;
mod objects;
mod strings;

pub(super) use lists::{filter_refs, group_by_counted_body, map_core, sort_refs};
pub(super) use numbers::sum_core;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use super::{list_arg, list_or_null, Args, Caller, Elems, Failure, FnError, Function, Implementation};
use crate::diagnostic::Code;
use crate::files::{ops, FileError, FileStore, Version, MAX_READ_FILES};
use crate::types::signature::{Param, ParamKind, ReturnRule, Signature};
use crate::types::Type;
use crate::value::{Map, SmolStr, Value};

type R = Result<Value, Failure>;

fn f(sig: Signature, body: super::BuiltinFn) -> Function {
    Function { signature: sig, implementation: Implementation::Builtin(body) }
}

fn inline(sig: Signature) -> Function {
    Function { signature: sig, implementation: Implementation::Inline }
}

fn file(sig: Signature, body: super::BuiltinFn) -> Function {
    Function { signature: sig, implementation: Implementation::File(body) }
}

fn fixed(t: Type) -> ReturnRule {
    ReturnRule::Fixed(t)
}

fn list_of(t: Type) -> Type {
    if t == Type::Any {
        return Type::any_list();
    }
    Type::List(Arc::new(t))
}

/// A list of the elements of `t` (the type of `filter`, `sort` and `unique`): `t` itself,
/// shared, when it is a list type already.
fn list_like(t: &Type) -> Type {
    match t {
        Type::List(_) => t.clone(),
        _ => list_of(t.element()),
    }
}

fn str_or_null() -> Type {
    Type::Str.union(Type::Null)
}

fn array() -> Param {
    Param::required("array", list_or_null())
}

fn type_err(param: usize, name: &str, want: &str, found: &Value) -> Failure {
    Failure::Fn(FnError::arg(Code::RuntimeType, param, format!("`{name}` must be {want}, found {:#}", found.kind())))
}

fn str_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<&'a str, Failure> {
    match args.get(i) {
        Value::Str(s) => Ok(s),
        other => Err(type_err(i, name, "a string", other)),
    }
}

fn int_param(args: &Args<'_>, i: usize, name: &str) -> Result<i64, Failure> {
    match args.get(i) {
        Value::Int(n) => Ok(*n),
        Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(*x as i64),
        other => Err(type_err(i, name, "an integer", other)),
    }
}

fn check_list_len(r: &dyn Caller, len: usize) -> Result<(), Failure> {
    if len > r.limits().max_list_len {
        return Err(FnError::new(
            Code::ListLimit,
            format!("list of {len} elements exceeds the limit of {}", r.limits().max_list_len),
        )
        .into());
    }
    Ok(())
}

fn check_str_len(r: &dyn Caller, len: usize) -> Result<(), Failure> {
    if len > r.limits().max_string_len {
        return Err(FnError::new(
            Code::StringLimit,
            format!("string of {len} bytes exceeds the limit of {}", r.limits().max_string_len),
        )
        .into());
    }
    Ok(())
}

/// Runs a metered walk ([`Value::eq_within`] and its kin) with the fuel left as its
/// budget, and charges the nodes it visited; out of fuel when the walk did not finish.
fn metered<T>(r: &mut dyn Caller, walk: impl FnOnce(&mut u64) -> Option<T>) -> Result<T, Failure> {
    let left = r.fuel_left();
    let mut budget = left;
    let out = walk(&mut budget);
    match out {
        Some(t) => {
            let used = left - budget;
            if used > 0 {
                r.charge(usize::try_from(used).unwrap_or(usize::MAX))?;
            }
            Ok(t)
        }
        None => {
            r.charge(usize::MAX)?;
            Err(FnError::new(Code::FuelExhausted, "evaluation ran out of fuel").into())
        }
    }
}

/// The error for text that would pass the string limit.
fn text_too_long(r: &dyn Caller) -> Failure {
    FnError::new(Code::StringLimit, format!("the text exceeds the string limit of {} bytes", r.limits().max_string_len))
        .into()
}

/// `v` as text by [`Value::key_text`], within the string limit, charged per 64 bytes.
fn key_text(r: &mut dyn Caller, v: &Value) -> Result<SmolStr, Failure> {
    let text = v.key_text_within(r.limits().max_string_len).ok_or_else(|| text_too_long(&*r))?;
    r.charge(text.len() / 64)?;
    Ok(text)
}

/// Applies an optional template for reading, or passes the element through when it is
/// absent; borrows from the element where the evaluator can.
fn project<'v>(
    r: &mut dyn Caller,
    args: &Args<'_>,
    param: usize,
    item: &'v Value,
    index: usize,
) -> Result<Cow<'v, Value>, Failure> {
    if args.has(param) {
        Ok(r.project(param, item, index)?)
    } else {
        Ok(Cow::Borrowed(item))
    }
}

/// Tests an optional condition template, or the element's own truthiness when absent.
fn test(r: &mut dyn Caller, args: &Args<'_>, param: usize, item: &Value, index: usize) -> Result<bool, Failure> {
    if args.has(param) {
        Ok(r.test(param, item, index)?)
    } else {
        Ok(item.truthy())
    }
}

/// Every built-in, in the order the docs list them.
pub(super) fn table() -> Vec<Function> {
    vec![
        objects::get_object_property(),
        json::json_parse(),
        control::pipeline(),
        lists::map(),
        lists::filter(),
        numbers::sum(),
        strings::join(),
        control::r#if(),
        lists::group_by(),
        lists::sort(),
        lists::unique(),
        lists::flatten(),
        dates::datetime_now(),
        control::create_object(),
        files::list_files(),
        files::read_file(),
        files::read_files(),
        files::list_file_versions(),
        files::describe_version(),
        lists::length(),
        objects::keys(),
        objects::values(),
        lists::contains(),
        strings::starts_with(),
        strings::ends_with(),
        strings::lower(),
        strings::upper(),
        strings::trim(),
        strings::split(),
        strings::replace(),
        strings::to_string(),
        numbers::to_number(),
        numbers::round(),
        numbers::min(),
        numbers::max(),
        numbers::avg(),
        lists::count(),
        control::default(),
        objects::merge(),
        objects::from_entries(),
        objects::to_entries(),
        objects::pick(),
        objects::omit(),
        lists::zip(),
        lists::range(),
        lists::slice(),
        lists::any(),
        lists::all(),
        lists::find(),
        dates::format_datetime(),
        json::json_stringify(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let fs = table();
        let mut names: Vec<_> = fs.iter().map(|f| f.signature.name.clone()).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
