//! Objects: property paths, keys and values, merging and picking.

use super::*;

fn obj_or_null() -> Type {
    Type::any_object().union(Type::Null)
}

/// The union of an object type's field types (`any` when open).
fn field_union(t: &Type) -> Type {
    Type::union_all(t.alternatives().iter().map(|t| match t {
        Type::Object(o) if !o.open => Type::union_all(o.fields.values().cloned()),
        Type::Null => Type::Never,
        _ => Type::Any,
    }))
}

fn obj_param<'a>(args: &'a Args<'_>, i: usize, name: &str) -> Result<Option<&'a Map>, Failure> {
    match args.get(i) {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(type_err(i, name, "an object", other)),
    }
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

/// `get_object_property`: the signature; the body follows.
pub(super) fn get_object_property() -> Function {
    f(
        Signature::new(
            "get_object_property",
            vec![Param::required("obj", Type::Any), Param::required("property_path", Type::Str)],
            fixed(Type::Any),
            "the value at a dotted path (`data.items.0.title`), null if absent",
        ),
        get_object_property_body,
    )
}

fn get_object_property_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
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

/// `keys`: the signature; the body follows.
pub(super) fn keys() -> Function {
    f(
        Signature::new(
            "keys",
            vec![Param::required("obj", obj_or_null())],
            fixed(list_of(Type::Str)),
            "an object's keys",
        ),
        keys_body,
    )
}

fn keys_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        Value::Object(o) => Ok(Value::list(o.keys().map(|k| Value::Str(SmolStr::new(k))).collect())),
        other => Err(type_err(0, "obj", "an object", other)),
    }
}

/// `values`: the signature; the body follows.
pub(super) fn values() -> Function {
    f(
        Signature::new(
            "values",
            vec![Param::required("obj", obj_or_null())],
            ReturnRule::Computed(|a| list_of(field_union(&a[0]))),
            "an object's values",
        ),
        values_body,
    )
}

fn values_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
    match args.get(0) {
        Value::Null => Ok(Value::list(Vec::new())),
        Value::Object(o) => Ok(Value::list(o.values().cloned().collect())),
        other => Err(type_err(0, "obj", "an object", other)),
    }
}

/// `merge`: the signature; the body follows.
pub(super) fn merge() -> Function {
    f(
        Signature::new(
            "merge",
            vec![Param::required("left", obj_or_null()), Param::required("right", obj_or_null())],
            fixed(Type::any_object()),
            "both objects' entries, the right one winning",
        ),
        merge_body,
    )
}

fn merge_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
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

/// `pick`: the signature; the body follows.
pub(super) fn pick() -> Function {
    f(
        Signature::new(
            "pick",
            vec![Param::required("obj", obj_or_null()), Param::required("keys", list_of(Type::Str).union(Type::Null))],
            fixed(Type::any_object()),
            "only the given keys",
        ),
        pick_body,
    )
}

fn pick_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
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

/// `omit`: the signature; the body follows.
pub(super) fn omit() -> Function {
    f(
        Signature::new(
            "omit",
            vec![Param::required("obj", obj_or_null()), Param::required("keys", list_of(Type::Str).union(Type::Null))],
            fixed(Type::any_object()),
            "all but the given keys",
        ),
        omit_body,
    )
}

fn omit_body(_: &mut dyn Runner, args: &Args<'_>) -> R {
    let obj = obj_param(args, 0, "obj")?;
    let keys: FxHashSet<&str> = key_set(args, 1)?.into_iter().collect();
    let out: Map = obj
        .map(|o| o.iter().filter(|(k, _)| !keys.contains(&***k)).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok(Value::object(out))
}
