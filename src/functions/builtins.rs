//! The built-in functions of SPEC §4.5 and their (ext) companions.
//!
//! Each body takes its arguments in parameter order and never panics: every type it cannot
//! take is an [`FnError`] naming the parameter (and element, for lists). Lists are read in
//! place; only results are allocated.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::signature::{Param, ParamKind, ReturnRule, Signature};
use super::{list_arg, list_or_null, Args, Failure, FnError, Function, Implementation, Runner};
use crate::diagnostic::Code;
use crate::files::{ops, FileError, FileStore, Version, MAX_READ_FILES};
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
    Type::List(Arc::new(t))
}

/// A version object, as [`version_value`] makes it: closed, so that a misspelt field
/// (`.id` for `.version_id`) is caught before the expression runs.
fn version_type() -> Type {
    Type::object(
        [
            (Arc::from("version_id"), Type::Str),
            (Arc::from("created_at"), str_or_null()),
            (Arc::from("size"), Type::Int),
            (Arc::from("author"), str_or_null()),
            (Arc::from("message"), str_or_null()),
        ],
        false,
    )
}

fn str_or_null() -> Type {
    Type::Str.union(Type::Null)
}

fn obj_or_null() -> Type {
    Type::any_object().union(Type::Null)
}

fn num_or_null() -> Type {
    Type::Number.union(Type::Null)
}

fn array() -> Param {
    Param::required("array", list_or_null())
}

/// Every built-in, in the order the docs list them.
pub(super) fn table() -> Vec<Function> {
    vec![
        // ---- the source document's functions ----
        f(
            Signature::new(
                "get_object_property",
                vec![Param::required("obj", Type::Any), Param::required("property_path", Type::Str)],
                fixed(Type::Any),
                "the value at a dotted path (`data.items.0.title`), null if absent",
            ),
            get_object_property,
        ),
        f(
            Signature::new(
                "json_parse",
                vec![Param::required("json_string", Type::Any)],
                ReturnRule::Computed(|a| if a[0] == Type::Str || a[0] == Type::Any { Type::Any } else { a[0].clone() }),
                "parses a JSON string; a non-string is returned unchanged",
            ),
            json_parse,
        ),
        inline(Signature::new(
            "pipeline",
            vec![Param::required("initial_value", Type::Any), Param::deferred("operations", ParamKind::Operations)],
            ReturnRule::Computed(|a| a[1].clone()),
            "runs operations in turn, each with `current` bound to the previous result",
        )),
        f(
            Signature::new(
                "map",
                vec![array(), Param::deferred("template", ParamKind::Template)],
                ReturnRule::Computed(|a| list_of(a[1].clone())),
                "the template applied to every element",
            ),
            map,
        ),
        f(
            Signature::new(
                "filter",
                vec![array(), Param::deferred("condition_string", ParamKind::Template)],
                ReturnRule::Computed(|a| list_of(a[0].element())),
                "the elements whose condition is truthy, in order",
            ),
            filter,
        ),
        f(
            Signature::new(
                "sum",
                vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
                ReturnRule::Computed(|a| {
                    let t = if a[1] == Type::Never { a[0].element() } else { a[1].clone() };
                    if t.fits(&Type::Int.union(Type::Bool).union(Type::Null)) == crate::types::Fit::Yes {
                        Type::Int
                    } else {
                        Type::Number
                    }
                }),
                "the sum of numbers (true counts 1, false 0, null is skipped)",
            ),
            sum,
        ),
        f(
            Signature::new(
                "join",
                vec![array(), Param::optional("separator", Type::Str, Value::str(""))],
                fixed(Type::Str),
                "the elements as text, separated",
            ),
            join,
        ),
        inline(Signature::new(
            "if",
            vec![
                Param::required("condition", Type::Any),
                Param::deferred("true_value", ParamKind::Lazy),
                Param::deferred("false_value", ParamKind::Lazy).or_null(),
            ],
            ReturnRule::Computed(|a| a[1].clone().union(a[2].clone())),
            "one of two values; only the chosen one is evaluated",
        )),
        f(
            Signature::new(
                "group_by",
                vec![array(), Param::deferred("key_path", ParamKind::PathTemplate)],
                fixed(Type::any_object()),
                "an object from key to the elements with that key, keys in first-seen order",
            ),
            group_by,
        ),
        f(
            Signature::new(
                "sort",
                vec![
                    array(),
                    Param::deferred("key_path", ParamKind::PathTemplate).or_null(),
                    Param::optional("direction", Type::Str, Value::str("asc")).one_of(&["asc", "desc"]),
                ],
                ReturnRule::Computed(|a| list_of(a[0].element())),
                "a stable sort by the total order of values",
            ),
            sort,
        ),
        f(
            Signature::new(
                "unique",
                vec![array()],
                ReturnRule::Computed(|a| list_of(a[0].element())),
                "the first occurrence of every distinct element",
            ),
            unique,
        ),
        f(
            Signature::new(
                "flatten",
                vec![array()],
                ReturnRule::Computed(|a| {
                    let e = a[0].element();
                    let inner = Type::union_all(e.alternatives().iter().map(|t| match t {
                        Type::List(x) => (**x).clone(),
                        other => other.clone(),
                    }));
                    list_of(inner)
                }),
                "lists inside the list spliced in, one level deep",
            ),
            flatten,
        ),
        f(
            Signature::new(
                "datetime_now",
                vec![Param::optional("format", Type::Str, Value::str("iso")).one_of(&["iso", "unix"])],
                ReturnRule::Computed(|_| Type::Str.union(Type::Int)),
                "the clock's time: RFC 3339 (`iso`) or Unix seconds (`unix`)",
            ),
            datetime_now,
        ),
        inline(Signature {
            any_keywords: true,
            ..Signature::new(
                "create_object",
                vec![],
                fixed(Type::any_object()),
                "an object from keyword arguments, in order",
            )
        }),
        file(
            Signature::new(
                "list_files",
                vec![
                    Param::required("directory_path", Type::Str),
                    Param::optional("pattern", str_or_null(), Value::Null),
                ],
                fixed(list_of(Type::Str)),
                "paths in a directory matching a glob, sorted, at most 50",
            ),
            list_files,
        ),
        file(
            Signature::new(
                "read_file",
                vec![
                    Param::required("file_path", Type::File),
                    Param::optional("version_id", str_or_null(), Value::Null),
                ],
                fixed(Type::Str),
                "a file's content",
            ),
            read_file,
        ),
        file(
            Signature::new(
                "read_files",
                vec![Param::required("file_paths", list_or_null())],
                fixed(list_of(Type::Str)),
                "the contents of at most 5 files",
            ),
            read_files,
        ),
        file(
            Signature::new(
                "list_file_versions",
                vec![Param::required("file_path", Type::File)],
                fixed(list_of(version_type())),
                "a file's versions, newest first",
            ),
            list_file_versions,
        ),
        file(
            Signature::new(
                "describe_version",
                vec![
                    Param::required("file_path", Type::File),
                    Param::optional("version_id", str_or_null(), Value::Null),
                ],
                fixed(version_type()),
                "one version of a file",
            ),
            describe_version,
        ),
        // ---- (ext) ----
        f(
            Signature::new(
                "length",
                vec![Param::required("value", list_or_null().union(Type::Str).union(Type::any_object()))],
                fixed(Type::Int),
                "the number of elements, characters or keys (0 for null)",
            ),
            length,
        ),
        f(
            Signature::new(
                "keys",
                vec![Param::required("obj", obj_or_null())],
                fixed(list_of(Type::Str)),
                "an object's keys",
            ),
            keys,
        ),
        f(
            Signature::new(
                "values",
                vec![Param::required("obj", obj_or_null())],
                ReturnRule::Computed(|a| list_of(a[0].field_union())),
                "an object's values",
            ),
            values,
        ),
        f(
            Signature::new(
                "contains",
                vec![Param::required("haystack", Type::Any), Param::required("needle", Type::Any)],
                fixed(Type::Bool),
                "substring, list element or object key",
            ),
            contains,
        ),
        f(
            Signature::new(
                "starts_with",
                vec![Param::required("string", str_or_null()), Param::required("prefix", Type::Str)],
                fixed(Type::Bool),
                "whether a string starts with a prefix",
            ),
            starts_with,
        ),
        f(
            Signature::new(
                "ends_with",
                vec![Param::required("string", str_or_null()), Param::required("suffix", Type::Str)],
                fixed(Type::Bool),
                "whether a string ends with a suffix",
            ),
            ends_with,
        ),
        f(Signature::new("lower", vec![Param::required("string", str_or_null())], str_rule(), "lower case"), lower),
        f(Signature::new("upper", vec![Param::required("string", str_or_null())], str_rule(), "upper case"), upper),
        f(
            Signature::new(
                "trim",
                vec![Param::required("string", str_or_null())],
                str_rule(),
                "without surrounding whitespace",
            ),
            trim,
        ),
        f(
            Signature::new(
                "split",
                vec![
                    Param::required("string", str_or_null()),
                    Param::optional("separator", Type::Str, Value::str(",")),
                ],
                fixed(list_of(Type::Str)),
                "the parts between separators (`\"\"` splits into characters)",
            ),
            split,
        ),
        f(
            Signature::new(
                "replace",
                vec![
                    Param::required("string", str_or_null()),
                    Param::required("old", Type::Str),
                    Param::required("new", Type::Str),
                ],
                str_rule(),
                "every occurrence of `old` replaced by `new`",
            ),
            replace,
        ),
        f(
            Signature::new(
                "to_string",
                vec![Param::required("value", Type::Any)],
                fixed(Type::Str),
                "text: strings as-is, others as JSON",
            ),
            to_string,
        ),
        f(
            Signature::new(
                "to_number",
                vec![Param::required("value", Type::Any)],
                ReturnRule::Computed(|a| if a[0] == Type::Null { Type::Null } else { Type::Number }),
                "a number from a number, numeric string or boolean",
            ),
            to_number,
        ),
        f(
            Signature::new(
                "round",
                vec![Param::required("value", num_or_null()), Param::optional("digits", Type::Int, Value::Int(0))],
                fixed(num_or_null()),
                "rounded half away from zero to `digits` decimals",
            ),
            round,
        ),
        f(
            Signature::new(
                "min",
                vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
                ReturnRule::Computed(projected_element),
                "the smallest value by the total order (null skipped, null when empty)",
            ),
            min,
        ),
        f(
            Signature::new(
                "max",
                vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
                ReturnRule::Computed(projected_element),
                "the largest value by the total order (null skipped, null when empty)",
            ),
            max,
        ),
        f(
            Signature::new(
                "avg",
                vec![array(), Param::deferred("item_path", ParamKind::PathTemplate).or_null()],
                fixed(num_or_null()),
                "the mean of the numbers (null skipped, null when empty)",
            ),
            avg,
        ),
        f(
            Signature::new(
                "count",
                vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
                fixed(Type::Int),
                "the number of elements (that satisfy the condition)",
            ),
            count,
        ),
        f(
            Signature::new(
                "default",
                vec![Param::required("value", Type::Any), Param::required("fallback", Type::Any)],
                ReturnRule::Computed(|a| a[0].non_null().union(a[1].clone())),
                "the value, or the fallback when the value is null",
            ),
            default,
        ),
        f(
            Signature::new(
                "merge",
                vec![Param::required("left", obj_or_null()), Param::required("right", obj_or_null())],
                fixed(Type::any_object()),
                "both objects' entries, the right one winning",
            ),
            merge,
        ),
        f(
            Signature::new(
                "pick",
                vec![
                    Param::required("obj", obj_or_null()),
                    Param::required("keys", list_of(Type::Str).union(Type::Null)),
                ],
                fixed(Type::any_object()),
                "only the given keys",
            ),
            pick,
        ),
        f(
            Signature::new(
                "omit",
                vec![
                    Param::required("obj", obj_or_null()),
                    Param::required("keys", list_of(Type::Str).union(Type::Null)),
                ],
                fixed(Type::any_object()),
                "all but the given keys",
            ),
            omit,
        ),
        f(
            Signature::new(
                "zip",
                vec![Param::required("left", list_or_null()), Param::required("right", list_or_null())],
                ReturnRule::Computed(|a| list_of(list_of(a[0].element().union(a[1].element())))),
                "pairs `[left[i], right[i]]` up to the shorter length",
            ),
            zip,
        ),
        f(
            Signature::new(
                "range",
                vec![
                    Param::required("start", Type::Int),
                    Param::optional("stop", Type::Int.union(Type::Null), Value::Null),
                    Param::optional("step", Type::Int, Value::Int(1)),
                ],
                fixed(list_of(Type::Int)),
                "integers from start (or 0) up to, not including, stop",
            ),
            range,
        ),
        f(
            Signature::new(
                "slice",
                vec![
                    Param::required("value", list_or_null().union(Type::Str)),
                    Param::required("start", Type::Int),
                    Param::optional("end", Type::Int.union(Type::Null), Value::Null),
                ],
                ReturnRule::Computed(|a| a[0].clone()),
                "part of a list or string; negative positions count from the end",
            ),
            slice,
        ),
        f(
            Signature::new(
                "any",
                vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
                fixed(Type::Bool),
                "whether some element (or its condition) is truthy",
            ),
            any,
        ),
        f(
            Signature::new(
                "all",
                vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
                fixed(Type::Bool),
                "whether every element (or its condition) is truthy",
            ),
            all,
        ),
        f(
            Signature::new(
                "find",
                vec![array(), Param::deferred("condition_string", ParamKind::Template)],
                ReturnRule::Computed(|a| a[0].element().union(Type::Null)),
                "the first element whose condition is truthy, or null",
            ),
            find,
        ),
        f(
            Signature::new(
                "format_datetime",
                vec![Param::required("value", Type::Any), Param::optional("format", Type::Str, Value::str("iso"))],
                ReturnRule::Computed(|_| Type::Str.union(Type::Int)),
                "a timestamp (Unix seconds or RFC 3339) as `iso`, `unix` or a strftime pattern",
            ),
            format_datetime,
        ),
        f(
            Signature::new(
                "json_stringify",
                vec![Param::required("value", Type::Any)],
                fixed(Type::Str),
                "compact JSON text",
            ),
            json_stringify,
        ),
    ]
}

fn str_rule() -> ReturnRule {
    ReturnRule::Computed(|a| if a[0] == Type::Str { Type::Str } else { str_or_null() })
}

fn projected_element(a: &[Type]) -> Type {
    let t = if a[1] == Type::Never { a[0].element() } else { a[1].clone() };
    t.union(Type::Null)
}

impl Type {
    /// The union of an object type's field types (`any` when open).
    fn field_union(&self) -> Type {
        Type::union_all(self.alternatives().iter().map(|t| match t {
            Type::Object(o) if !o.open => Type::union_all(o.fields.values().cloned()),
            Type::Null => Type::Never,
            _ => Type::Any,
        }))
    }
}

// ---------------------------------------------------------------------------------------
// helpers

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

fn check_list_len(r: &dyn Runner, len: usize) -> Result<(), Failure> {
    if len > r.limits().max_list_len {
        return Err(FnError::new(
            Code::ListLimit,
            format!("list of {len} elements exceeds the limit of {}", r.limits().max_list_len),
        )
        .into());
    }
    Ok(())
}

fn check_str_len(r: &dyn Runner, len: usize) -> Result<(), Failure> {
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
fn metered<T>(r: &mut dyn Runner, walk: impl FnOnce(&mut u64) -> Option<T>) -> Result<T, Failure> {
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
fn text_too_long(r: &dyn Runner) -> Failure {
    FnError::new(Code::StringLimit, format!("the text exceeds the string limit of {} bytes", r.limits().max_string_len))
        .into()
}

/// `v` as text by [`Value::key_text`], within the string limit, charged per 64 bytes.
fn key_text(r: &mut dyn Runner, v: &Value) -> Result<SmolStr, Failure> {
    let text = v.key_text_within(r.limits().max_string_len).ok_or_else(|| text_too_long(&*r))?;
    r.charge(text.len() / 64)?;
    Ok(text)
}

/// Applies an optional template for reading, or passes the element through when it is
/// absent; borrows from the element where the evaluator can.
fn project<'v>(
    r: &mut dyn Runner,
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
fn test(r: &mut dyn Runner, args: &Args<'_>, param: usize, item: &Value, index: usize) -> Result<bool, Failure> {
    if args.has(param) {
        Ok(r.test(param, item, index)?)
    } else {
        Ok(item.truthy())
    }
}

// ---------------------------------------------------------------------------------------
// the source document's functions

fn get_object_property(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let path = str_param(args, 1, "property_path")?;
    let mut cur = args.get(0).clone();
    if path.is_empty() {
        return Ok(cur);
    }
    for seg in path.split('.') {
        // Lenient by design: anything that does not resolve is null.
        cur = cur.segment(seg).unwrap_or(Value::Null);
        if cur.is_null() {
            break;
        }
    }
    Ok(cur)
}

fn json_parse(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let s = match args.get(0) {
        Value::Str(s) => s,
        other => return Ok(other.clone()),
    };
    r.charge(s.len() / 64)?;
    // The parsed value takes about four times its text (16-byte slots for 2-byte elements).
    r.alloc(s.len().saturating_mul(4))?;
    match serde_json::from_str::<Value>(s) {
        Ok(v) => {
            if v.depth() > r.limits().max_depth {
                return Err(FnError::new(
                    Code::DepthLimit,
                    format!("parsed JSON nests deeper than {} levels", r.limits().max_depth),
                )
                .into());
            }
            Ok(v)
        }
        Err(e) => Err(FnError::arg(
            Code::InvalidJson,
            0,
            format!("invalid JSON at line {} column {}: {}", e.line(), e.column(), strip_position(&e.to_string())),
        )
        .into()),
    }
}

fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map_or(msg, |i| &msg[..i])
}

fn map(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut out = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        out.push(r.apply(1, x, i)?);
    }
    Ok(Value::list(out))
}

fn filter(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut out = Vec::new();
    for (i, x) in xs.iter().enumerate() {
        if r.test(1, x, i)? {
            out.push(x.clone());
        }
    }
    Ok(Value::list(out))
}

/// Adds `v` to a running integer/float sum; `Err` describes an unsummable value.
fn add_number(int_acc: &mut i64, float_acc: &mut Option<f64>, v: &Value) -> Result<(), ()> {
    let n = match v {
        Value::Null => return Ok(()),
        Value::Bool(b) => i64::from(*b),
        Value::Int(n) => *n,
        Value::Float(x) => {
            *float_acc = Some(float_acc.unwrap_or(*int_acc as f64) + x);
            return Ok(());
        }
        _ => return Err(()),
    };
    match float_acc {
        Some(f) => *f += n as f64,
        None => match int_acc.checked_add(n) {
            Some(s) => *int_acc = s,
            // Beyond i64: the sum continues as a float (SPEC §1).
            None => *float_acc = Some(*int_acc as f64 + n as f64),
        },
    }
    Ok(())
}

fn number_result(int_acc: i64, float_acc: Option<f64>) -> R {
    match float_acc {
        None => Ok(Value::Int(int_acc)),
        Some(f) => {
            Value::float(f).ok_or_else(|| FnError::new(Code::NumberOverflow, "the sum is not a finite number").into())
        }
    }
}

fn sum(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let (mut acc, mut facc) = (0i64, None);
    for (i, x) in xs.iter().enumerate() {
        let v = project(r, args, 1, x, i)?;
        if add_number(&mut acc, &mut facc, &v).is_err() {
            return Err(FnError::element(Code::RuntimeType, 0, i, format!("cannot add {:#} to a sum", v.kind())).into());
        }
    }
    number_result(acc, facc)
}

fn join(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let sep = str_param(args, 1, "separator")?;
    let mut out = String::new();
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        if !x.join_text_within(&mut out, r.limits().max_string_len) {
            return Err(text_too_long(&*r));
        }
    }
    r.charge(out.len() / 64)?;
    r.alloc(out.len())?;
    Ok(Value::Str(SmolStr::from(out)))
}

fn group_by(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut groups: indexmap::IndexMap<SmolStr, Vec<Value>, crate::value::FxBuild> = Default::default();
    for (i, x) in xs.iter().enumerate() {
        let key = r.project(1, x, i)?;
        let key = match &*key {
            Value::Str(s) => s.clone(),
            other => {
                let mut t = String::new();
                if !other.join_text_within(&mut t, r.limits().max_string_len) {
                    return Err(text_too_long(&*r));
                }
                r.charge(t.len() / 64)?;
                SmolStr::from(t)
            }
        };
        groups.entry(key).or_default().push(x.clone());
    }
    r.alloc(xs.len().saturating_mul(crate::ops::LIST_ELEMENT_BYTES))?;
    let map: Map = groups.into_iter().map(|(k, v)| (k, Value::list(v))).collect();
    Ok(Value::object(map))
}

fn sort(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let desc = match str_param(args, 2, "direction")? {
        "asc" => false,
        "desc" => true,
        other => {
            return Err(FnError::arg(
                Code::RuntimeArgument,
                2,
                format!("`direction` must be \"asc\" or \"desc\", found {:?}", other),
            )
            .into())
        }
    };
    let mut keyed: Vec<(Cow<'_, Value>, &Value)> = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        keyed.push((project(r, args, 1, x, i)?, x));
    }
    // Comparing keys walks them: what a walk of each visits, then n log n comparisons,
    // charged up front.
    for (k, _) in &keyed {
        if matches!(**k, Value::List(_) | Value::Object(_)) {
            metered(r, |b| k.nodes_within(*b))?;
        }
    }
    r.charge(xs.len() * (usize::BITS - xs.len().leading_zeros()) as usize / 4)?;
    // Keys that are all integers (the common case) sort as plain integers; anything else
    // by the total order. Both sorts are stable, and agree where both apply.
    let ints: Option<Vec<i64>> =
        keyed.iter().map(|(k, _)| if let Value::Int(i) = **k { Some(i) } else { None }).collect();
    let order: Vec<&Value> = match ints {
        Some(ints) => {
            let mut idx: Vec<(i64, &Value)> = ints.into_iter().zip(keyed.iter().map(|(_, x)| *x)).collect();
            if desc {
                idx.sort_by_key(|a| std::cmp::Reverse(a.0));
            } else {
                idx.sort_by_key(|a| a.0);
            }
            idx.into_iter().map(|(_, x)| x).collect()
        }
        None => {
            if desc {
                keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
            } else {
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            keyed.into_iter().map(|(_, x)| x).collect()
        }
    };
    Ok(Value::list(order.into_iter().cloned().collect()))
}

fn unique(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    r.charge(xs.len() / 4)?;
    // Hashing and comparing elements walks them: charged as a walk of each.
    for x in xs {
        if matches!(x, Value::List(_) | Value::Object(_)) {
            metered(r, |b| x.nodes_within(*b))?;
        }
    }
    let mut seen: FxHashSet<&Value> = FxHashSet::default();
    let mut out = Vec::new();
    for x in xs {
        if seen.insert(x) {
            out.push(x.clone());
        }
    }
    Ok(Value::list(out))
}

fn flatten(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut out = Vec::with_capacity(xs.len());
    for x in xs {
        match x {
            Value::List(inner) => out.extend(inner.iter().cloned()),
            other => out.push(other.clone()),
        }
        check_list_len(r, out.len())?;
    }
    r.charge(out.len() / 8)?;
    r.alloc(out.len().saturating_mul(crate::ops::LIST_ELEMENT_BYTES))?;
    Ok(Value::list(out))
}

fn datetime_now(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let millis = r.clock().now_millis();
    format_millis(millis, args, 0, r.limits().max_string_len)
}

/// Text that refuses to grow past `max` bytes.
struct CappedText {
    text: String,
    max: usize,
    over: bool,
}

impl std::fmt::Write for CappedText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.max {
            self.over = true;
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

fn format_millis(millis: i64, args: &Args<'_>, fmt_param: usize, max_len: usize) -> R {
    let format = str_param(args, fmt_param, "format")?;
    let Some(t) = chrono::DateTime::from_timestamp_millis(millis) else {
        return Err(FnError::new(Code::RuntimeArgument, "timestamp out of range").into());
    };
    match format {
        "iso" => Ok(Value::str(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))),
        "unix" => Ok(Value::Int(millis.div_euclid(1000))),
        pattern if fmt_param > 0 => {
            use chrono::format::{Item, StrftimeItems};
            use std::fmt::Write;
            if StrftimeItems::new(pattern).any(|i| matches!(i, Item::Error)) {
                let shown: String = pattern.chars().take(64).collect();
                let more = if shown.len() < pattern.len() { "…" } else { "" };
                return Err(FnError::arg(
                    Code::RuntimeArgument,
                    fmt_param,
                    format!("invalid strftime pattern {shown:?}{more}"),
                )
                .into());
            }
            // A pattern can expand many times over (`%c` is 24 bytes): rendered into text
            // that refuses to pass the string limit.
            let mut out = CappedText { text: String::new(), max: max_len, over: false };
            if write!(out, "{}", t.format_with_items(StrftimeItems::new(pattern))).is_err() {
                if !out.over {
                    return Err(
                        FnError::arg(Code::RuntimeArgument, fmt_param, "the pattern cannot format this date").into()
                    );
                }
                return Err(FnError::new(
                    Code::StringLimit,
                    format!("the formatted date exceeds the string limit of {max_len} bytes"),
                )
                .into());
            }
            Ok(Value::Str(SmolStr::from(out.text)))
        }
        other => Err(FnError::arg(
            Code::RuntimeArgument,
            fmt_param,
            format!("`format` must be \"iso\" or \"unix\", found {other:?}"),
        )
        .into()),
    }
}

// ---------------------------------------------------------------------------------------
// files: argument conversion only; the rules are in `crate::files::ops`

/// Fuel one file operation costs before it runs: a system call or more, far more work
/// than an instruction, so a loop of file reads runs out of fuel after at most
/// `fuel / FILE_OP_FUEL` operations.
const FILE_OP_FUEL: usize = 1000;

/// The runner's file store, or the error every file function gives without one.
fn store(r: &dyn Runner) -> Result<&dyn FileStore, Failure> {
    r.files().ok_or_else(|| FnError::new(Code::NoFileStore, "no file store configured; pass --files DIR").into())
}

/// A file error, blamed on parameter `param` (element `index` of it, for a list).
fn file_err(e: FileError, param: usize, index: Option<usize>) -> Failure {
    FnError { code: e.code, message: e.message, param: Some(param), index }.into()
}

/// The path of a file value: a string, or an object's string `path`.
fn file_path(v: &Value) -> Option<&str> {
    match v {
        Value::Str(s) => Some(s),
        Value::Object(o) => o.get("path").and_then(Value::as_str),
        _ => None,
    }
}

const FILE_VALUE: &str = "a path string or an object with a string `path`";

fn path_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<&'a str, Failure> {
    file_path(args.get(i)).ok_or_else(|| type_err(i, name, FILE_VALUE, args.get(i)))
}

fn opt_str_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<Option<&'a str>, Failure> {
    match args.get(i) {
        Value::Null => Ok(None),
        Value::Str(s) => Ok(Some(s)),
        other => Err(type_err(i, name, "a string or null", other)),
    }
}

/// The largest file a read may return: the file limit, and never more than a string may hold.
fn max_file_bytes(r: &dyn Runner) -> u64 {
    r.limits().max_file_bytes.min(r.limits().max_string_len) as u64
}

fn version_value(v: Version) -> Value {
    let opt = |s: Option<String>| s.map_or(Value::Null, |s| Value::str(&s));
    let created = v
        .created_at_millis
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or(Value::Null, |t| Value::str(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
    Value::object_from([
        ("version_id", Value::str(&v.id)),
        ("created_at", created),
        ("size", Value::Int(i64::try_from(v.size).unwrap_or(i64::MAX))),
        ("author", opt(v.author)),
        ("message", opt(v.message)),
    ])
}

fn list_files(r: &mut dyn Runner, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let dir = path_param(args, 0, "directory_path")?;
    let pattern = opt_str_param(args, 1, "pattern")?;
    let max_entries = r.limits().max_listing_entries;
    let listing = ops::list(store(r)?, dir, pattern, max_entries).map_err(|e| {
        let param = usize::from(e.code == Code::InvalidGlob);
        file_err(e, param, None)
    })?;
    r.charge(listing.visited)?;
    Ok(Value::list(listing.paths.iter().map(|p| Value::str(p)).collect()))
}

fn read_file(r: &mut dyn Runner, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let version = opt_str_param(args, 1, "version_id")?;
    let text = ops::read_text(store(r)?, path, version, max_file_bytes(r)).map_err(|e| {
        let param = usize::from(e.code == Code::UnknownVersion);
        file_err(e, param, None)
    })?;
    r.charge(text.len() / 64)?;
    r.alloc(text.len())?;
    Ok(Value::str(&text))
}

fn read_files(r: &mut dyn Runner, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let paths = list_arg(args, 0, "file_paths")?;
    if paths.len() > MAX_READ_FILES {
        return Err(FnError::arg(
            Code::TooManyFiles,
            0,
            format!("reads at most {MAX_READ_FILES} files, but {} paths were given", paths.len()),
        )
        .into());
    }
    let max = max_file_bytes(r);
    let mut out = Vec::with_capacity(paths.len());
    for (i, v) in paths.iter().enumerate() {
        let Some(path) = file_path(v) else {
            let msg = format!("`file_paths` must hold {FILE_VALUE}s, found {:#}", v.kind());
            return Err(FnError::element(Code::RuntimeType, 0, i, msg).into());
        };
        let text = ops::read_text(store(r)?, path, None, max).map_err(|e| file_err(e, 0, Some(i)))?;
        r.charge(text.len() / 64)?;
        r.alloc(text.len())?;
        out.push(Value::str(&text));
    }
    Ok(Value::list(out))
}

fn list_file_versions(r: &mut dyn Runner, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let versions = ops::versions(store(r)?, path).map_err(|e| file_err(e, 0, None))?;
    check_list_len(&*r, versions.len())?;
    r.charge(versions.len())?;
    Ok(Value::list(versions.into_iter().map(version_value).collect()))
}

fn describe_version(r: &mut dyn Runner, args: &Args<'_>) -> R {
    r.charge(FILE_OP_FUEL)?;
    let path = path_param(args, 0, "file_path")?;
    let version = opt_str_param(args, 1, "version_id")?;
    let v = ops::describe(store(r)?, path, version).map_err(|e| {
        let param = usize::from(e.code == Code::UnknownVersion);
        file_err(e, param, None)
    })?;
    Ok(version_value(v))
}

// ---------------------------------------------------------------------------------------
// (ext)

fn length(_: &mut dyn Runner, args: &Args<'_>) -> R {
    Ok(Value::Int(match args.get(0) {
        Value::Null => 0,
        Value::List(l) => l.len() as i64,
        Value::Object(o) => o.len() as i64,
        Value::Str(s) => s.chars().count() as i64,
        other => return Err(type_err(0, "value", "a list, string or object", other)),
    }))
}

fn keys(_: &mut dyn Runner, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        Value::Object(o) => Ok(Value::list(o.keys().map(|k| Value::Str(SmolStr::new(k))).collect())),
        other => Err(type_err(0, "obj", "an object", other)),
    }
}

fn values(_: &mut dyn Runner, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        Value::Object(o) => Ok(Value::list(o.values().cloned().collect())),
        other => Err(type_err(0, "obj", "an object", other)),
    }
}

fn contains(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let needle = args.get(1);
    Ok(Value::Bool(match args.get(0) {
        Value::Null => false,
        Value::Str(s) => match needle {
            Value::Str(n) => s.contains(&**n),
            _ => false,
        },
        Value::List(l) => {
            // A unit per element compared, and what comparing nested values visits.
            metered(r, |b| {
                for x in l.iter() {
                    if x.eq_within(needle, b)? {
                        return Some(true);
                    }
                }
                Some(false)
            })?
        }
        Value::Object(o) => match needle {
            Value::Str(n) => o.contains_key(&**n),
            _ => false,
        },
        other => return Err(type_err(0, "haystack", "a string, list or object", other)),
    }))
}

/// Runs a string function with `null` passing through.
fn on_str(args: &Args<'_>, f: impl FnOnce(&str) -> Result<Value, Failure>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        Value::Str(s) => f(s),
        other => Err(type_err(0, "string", "a string", other)),
    }
}

fn starts_with(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let p = str_param(args, 1, "prefix")?;
    match args.get(0) {
        Value::Null => Ok(Value::Bool(false)),
        _ => on_str(args, |s| Ok(Value::Bool(s.starts_with(p)))),
    }
}

fn ends_with(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let p = str_param(args, 1, "suffix")?;
    match args.get(0) {
        Value::Null => Ok(Value::Bool(false)),
        _ => on_str(args, |s| Ok(Value::Bool(s.ends_with(p)))),
    }
}

fn lower(r: &mut dyn Runner, args: &Args<'_>) -> R {
    on_str(args, |s| {
        r.alloc(s.len())?;
        Ok(Value::str(&s.to_lowercase()))
    })
}

fn upper(r: &mut dyn Runner, args: &Args<'_>) -> R {
    on_str(args, |s| {
        r.alloc(s.len())?;
        Ok(Value::str(&s.to_uppercase()))
    })
}

fn trim(_: &mut dyn Runner, args: &Args<'_>) -> R {
    on_str(args, |s| Ok(Value::str(s.trim())))
}

fn split(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let sep = str_param(args, 1, "separator")?;
    let max = r.limits().max_list_len;
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        _ => on_str(args, |s| {
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars().take(max + 1).map(|c| Value::str(c.encode_utf8(&mut [0; 4]))).collect()
            } else {
                s.split(sep).take(max + 1).map(Value::str).collect()
            };
            check_list_len(&*r, parts.len())?;
            // Each part is a string of its own: a slot and a small allocation.
            r.alloc(parts.len().saturating_mul(crate::ops::LIST_ELEMENT_BYTES * 2).saturating_add(s.len()))?;
            Ok(Value::list(parts))
        }),
    }
}

fn replace(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let old = str_param(args, 1, "old")?;
    let new = str_param(args, 2, "new")?;
    on_str(args, |s| {
        // Bound the result before building it.
        let hits = if old.is_empty() { s.chars().count() + 1 } else { s.matches(old).count() };
        let len = s.len() + hits.saturating_mul(new.len());
        check_str_len(&*r, len)?;
        r.alloc(len)?;
        Ok(Value::str(&s.replace(old, new)))
    })
}

fn to_string(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let text = key_text(r, args.get(0))?;
    r.alloc(text.len())?;
    Ok(Value::Str(text))
}

fn to_number(_: &mut dyn Runner, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        v @ (Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
        Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
        Value::Str(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            match t.parse::<f64>().ok().and_then(Value::float) {
                Some(v)
                    if !t.is_empty() && !t.eq_ignore_ascii_case("nan") && !t.to_ascii_lowercase().contains("inf") =>
                {
                    Ok(v)
                }
                _ => {
                    let shown: String = s.chars().take(64).collect();
                    let more = if shown.len() < s.len() { "…" } else { "" };
                    Err(FnError::arg(Code::RuntimeArgument, 0, format!("{shown:?}{more} is not a number")).into())
                }
            }
        }
        other => Err(type_err(0, "value", "a number, string or boolean", other)),
    }
}

fn round(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let digits = int_param(args, 1, "digits")?.clamp(-15, 15);
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        Value::Int(i) if digits >= 0 => Ok(Value::Int(*i)),
        Value::Int(i) => Ok(round_integer(*i, digits)),
        v @ Value::Float(_) => {
            let x = v.as_f64().unwrap_or(0.0);
            let scale = 10f64.powi(digits as i32);
            let rounded = (x * scale).round() / scale;
            if digits <= 0 && rounded.abs() < 9.0e15 {
                Ok(Value::Int(rounded as i64))
            } else {
                Value::float(rounded).ok_or_else(|| FnError::new(Code::NumberOverflow, "rounding overflowed").into())
            }
        }
        other => Err(type_err(0, "value", "a number", other)),
    }
}

/// An integer rounded half away from zero to a multiple of `10^-digits` (`digits` in
/// -15..=-1), exactly: in `i128`, where neither the multiple nor the step can overflow. A
/// result beyond `i64` continues as the nearest float, as integer arithmetic does.
pub(crate) fn round_integer(i: i64, digits: i64) -> Value {
    let step = 10i128.pow(u32::try_from(-digits).unwrap_or(0).min(15));
    let x = i128::from(i);
    let (q, r) = (x / step, x % step);
    let q = if 2 * r.abs() >= step { q + x.signum() } else { q };
    let rounded = q * step;
    i64::try_from(rounded).map_or(Value::Float(rounded as f64), Value::Int)
}

fn extreme(r: &mut dyn Runner, args: &Args<'_>, want: Ordering) -> R {
    let xs = list_arg(args, 0, "array")?;
    let mut best: Option<Cow<'_, Value>> = None;
    for (i, x) in xs.iter().enumerate() {
        let v = project(r, args, 1, x, i)?;
        if v.is_null() {
            continue;
        }
        best = match best {
            Some(b) if metered(r, |budget| v.cmp_within(&b, budget))? != want => Some(b),
            _ => Some(v),
        };
    }
    Ok(best.map(Cow::into_owned).unwrap_or_default())
}

fn min(r: &mut dyn Runner, args: &Args<'_>) -> R {
    extreme(r, args, Ordering::Less)
}

fn max(r: &mut dyn Runner, args: &Args<'_>) -> R {
    extreme(r, args, Ordering::Greater)
}

fn avg(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    let (mut total, mut n) = (0f64, 0usize);
    for (i, x) in xs.iter().enumerate() {
        let v = project(r, args, 1, x, i)?;
        match &*v {
            Value::Null => {}
            Value::Bool(b) => {
                total += f64::from(u8::from(*b));
                n += 1;
            }
            Value::Int(_) | Value::Float(_) => {
                total += v.as_f64().unwrap_or(0.0);
                n += 1;
            }
            other => {
                return Err(
                    FnError::element(Code::RuntimeType, 0, i, format!("cannot average {:#}", other.kind())).into()
                )
            }
        }
    }
    if n == 0 {
        return Ok(Value::Null);
    }
    Value::float(total / n as f64)
        .ok_or_else(|| FnError::new(Code::NumberOverflow, "the mean is not a finite number").into())
}

fn count(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    if !args.has(1) {
        return Ok(Value::Int(xs.len() as i64));
    }
    let mut n = 0;
    for (i, x) in xs.iter().enumerate() {
        if r.test(1, x, i)? {
            n += 1;
        }
    }
    Ok(Value::Int(n))
}

fn default(_: &mut dyn Runner, args: &Args<'_>) -> R {
    Ok(if args.get(0).is_null() { args.get(1).clone() } else { args.get(0).clone() })
}

fn obj_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<Option<&'a Map>, Failure> {
    match args.get(i) {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(type_err(i, name, "an object", other)),
    }
}

fn merge(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let left = obj_param(args, 0, "left")?;
    let right = obj_param(args, 1, "right")?;
    let mut out = left.cloned().unwrap_or_default();
    if let Some(r) = right {
        for (k, v) in r.iter() {
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::object(out))
}

fn key_set<'a>(args: &'a Args<'_>, i: usize) -> Result<Vec<&'a str>, Failure> {
    let keys = list_arg(args, i, "keys")?;
    keys.iter()
        .enumerate()
        .map(|(j, k)| {
            k.as_str().ok_or_else(|| {
                FnError::element(Code::RuntimeType, i, j, format!("keys must be strings, found {:#}", k.kind())).into()
            })
        })
        .collect()
}

fn pick(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let obj = obj_param(args, 0, "obj")?;
    let keys = key_set(args, 1)?;
    let mut out = Map::default();
    if let Some(o) = obj {
        for k in keys {
            if let Some((key, v)) = o.get_key_value(k) {
                out.insert(key.clone(), v.clone());
            }
        }
    }
    Ok(Value::object(out))
}

fn omit(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let obj = obj_param(args, 0, "obj")?;
    let keys: FxHashSet<&str> = key_set(args, 1)?.into_iter().collect();
    let out: Map = obj
        .map(|o| o.iter().filter(|(k, _)| !keys.contains(&***k)).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok(Value::object(out))
}

fn zip(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let a = list_arg(args, 0, "left")?;
    let b = list_arg(args, 1, "right")?;
    // Each pair is a list of its own.
    let n = a.len().min(b.len());
    r.alloc(n.saturating_mul(crate::ops::LIST_ELEMENT_BYTES * 3))?;
    Ok(Value::list(a.iter().zip(b.iter()).map(|(x, y)| Value::list(vec![x.clone(), y.clone()])).collect()))
}

fn range(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let first = int_param(args, 0, "start")?;
    let (start, stop) = match args.get(1) {
        Value::Null => (0, first),
        _ => (first, int_param(args, 1, "stop")?),
    };
    let step = int_param(args, 2, "step")?;
    if step == 0 {
        return Err(FnError::arg(Code::RuntimeArgument, 2, "`step` must not be 0").into());
    }
    let span = i128::from(stop) - i128::from(start);
    let n = if (span > 0) == (step > 0) && span != 0 {
        (span.abs() + i128::from(step).abs() - 1) / i128::from(step).abs()
    } else {
        0
    };
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    check_list_len(&*r, n)?;
    r.charge(n / 8)?;
    r.alloc(n.saturating_mul(crate::ops::LIST_ELEMENT_BYTES))?;
    Ok(Value::list((0..n).map(|i| Value::Int(start + step * i as i64)).collect()))
}

fn slice(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let start = int_param(args, 1, "start")?;
    let end = match args.get(2) {
        Value::Null => None,
        _ => Some(int_param(args, 2, "end")?),
    };
    let bounds = |len: usize| {
        let len_i = len as i64;
        let fix = |i: i64| if i < 0 { (len_i + i).max(0) } else { i.min(len_i) } as usize;
        let s = fix(start);
        let e = end.map_or(len, fix);
        (s, e.max(s))
    };
    match args.get(0) {
        Value::Null => Ok(Value::Null),
        Value::List(l) => {
            let (s, e) = bounds(l.len());
            if s == 0 && e == l.len() {
                // The whole list: shared, not copied.
                return Ok(args.get(0).clone());
            }
            r.alloc((e - s).saturating_mul(crate::ops::LIST_ELEMENT_BYTES))?;
            Ok(Value::list(l[s..e].to_vec()))
        }
        Value::Str(st) => {
            let (s, e) = bounds(st.chars().count());
            let byte = |i: usize| st.char_indices().nth(i).map_or(st.len(), |(b, _)| b);
            let (bs, be) = (byte(s), byte(e));
            r.alloc(be - bs)?;
            Ok(Value::str(&st[bs..be]))
        }
        other => Err(type_err(0, "value", "a list or string", other)),
    }
}

fn any(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if test(r, args, 1, x, i)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn all(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if !test(r, args, 1, x, i)? {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn find(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if r.test(1, x, i)? {
            return Ok(x.clone());
        }
    }
    Ok(Value::Null)
}

fn format_datetime(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let millis = match args.get(0) {
        Value::Int(s) => s.checked_mul(1000),
        Value::Float(s) => {
            let m = s * 1000.0;
            (m.abs() < 9.0e15).then_some(m as i64)
        }
        Value::Str(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis()),
        other => return Err(type_err(0, "value", "Unix seconds or an RFC 3339 string", other)),
    };
    let Some(millis) = millis else {
        return Err(FnError::arg(Code::RuntimeArgument, 0, format!("{} is not a timestamp", args.get(0))).into());
    };
    format_millis(millis, args, 1, r.limits().max_string_len)
}

fn json_stringify(r: &mut dyn Runner, args: &Args<'_>) -> R {
    let text = args.get(0).json_within(r.limits().max_string_len).ok_or_else(|| text_too_long(&*r))?;
    r.charge(text.len() / 64)?;
    r.alloc(text.len())?;
    Ok(Value::Str(SmolStr::from(text)))
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

    #[test]
    fn add_number_promotes_on_overflow() {
        let (mut a, mut f) = (i64::MAX, None);
        add_number(&mut a, &mut f, &Value::Int(1)).unwrap();
        assert_eq!(number_result(a, f).unwrap(), Value::Float(i64::MAX as f64 + 1.0));
    }
}
