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

/// The keys of parameter `i`, charged a unit per 64 bytes of them: each is hashed whole,
/// and a list of one long string shared a million times is cheap to build.
fn key_set<'a>(r: &mut dyn Caller, args: &'a Args<'_>, i: usize) -> Result<Vec<&'a str>, Failure> {
    let keys = list_arg(args, i, "keys")?;
    let mut out = Vec::with_capacity(keys.len());
    for (j, k) in keys.iter().enumerate() {
        let k = k.as_str().ok_or_else(|| {
            FnError::element(Code::RuntimeType, i, j, format!("keys must be strings, found {:#}", k.kind()))
        })?;
        if k.len() >= 64 {
            r.charge(k.len() / 64)?;
        }
        out.push(k);
    }
    Ok(out)
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

fn get_object_property_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
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

fn keys_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
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

fn values_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
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
            vec![Param::required("left", obj_or_null()), Param::optional("right", obj_or_null(), Value::Null)],
            ReturnRule::Computed(merged_type),
            "the objects' entries, a later object winning on a shared key",
        )
        .repeating_last(),
        merge_body,
    )
}

/// The type of `merge`'s result: the fields of every object in turn, a later one's type
/// replacing an earlier one's; `object` when an argument is not known to be one object (or
/// `null`, which adds nothing).
fn merged_type(args: &[Type]) -> Type {
    let mut fields = crate::types::Fields::default();
    let mut open = false;
    for t in args {
        match t {
            Type::Null | Type::Never => {}
            Type::Object(o) => {
                open |= o.open;
                if o.open {
                    // An open object may hold any earlier field, with a value of any type:
                    // the earlier type is no longer known (it claimed `integer` for a list).
                    for (k, v) in fields.iter_mut() {
                        if !o.fields.contains_key(k) {
                            *v = Type::Any;
                        }
                    }
                }
                for (k, v) in &o.fields {
                    fields.insert(k.clone(), v.clone());
                }
            }
            _ => return Type::any_object(),
        }
    }
    Type::object(fields, open)
}

fn merge_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    let mut out: Option<Map> = None;
    for i in 0..args.values.len() {
        let name = if i == 0 { "left" } else { "right" };
        let Some(o) = obj_param(args, i, name)? else { continue };
        match &mut out {
            None => out = Some(o.clone()),
            Some(m) => {
                for (k, v) in o.iter() {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Ok(Value::object(out.unwrap_or_default()))
}

/// `from_entries`: the signature; the body follows.
pub(super) fn from_entries() -> Function {
    f(
        Signature::new(
            "from_entries",
            vec![Param::required("entries", list_or_null())],
            fixed(Type::any_object()),
            "an object from `[key, value]` pairs or `{key, value}` objects",
        ),
        from_entries_body,
    )
}

fn from_entries_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    const NULL: &Value = &Value::Null;
    let entries = list_arg(args, 0, "entries")?;
    let bad = |j: usize, what: String| -> Failure { FnError::element(Code::RuntimeType, 0, j, what).into() };
    let mut out = Map::default();
    for (j, e) in entries.iter().enumerate() {
        let (k, v) = match e {
            Value::List(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
            Value::List(pair) => {
                let n = pair.len();
                let what = format!("{n} element{}", if n == 1 { "" } else { "s" });
                return Err(bad(j, format!("an entry list must hold a key and a value, found {what}")));
            }
            Value::Object(o) => match o.get("key") {
                Some(k) => (k, o.get("value").unwrap_or(NULL)),
                None => return Err(bad(j, "an entry object must have a `key`".to_string())),
            },
            other => {
                return Err(bad(
                    j,
                    format!(
                        "an entry must be a `[key, value]` list or a `{{key, value}}` object, found {:#}",
                        other.kind()
                    ),
                ))
            }
        };
        let key = match k {
            Value::Str(s) => {
                // Hashing the key reads it whole: a unit per 64 bytes, as for any text.
                r.charge(s.len() / 64)?;
                s.clone()
            }
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => key_text(r, k)?,
            other => {
                return Err(bad(j, format!("a key must be a string, number or boolean, found {:#}", other.kind())))
            }
        };
        out.insert(key, v.clone());
    }
    Ok(Value::object(out))
}

/// `to_entries`: the signature; the body follows.
pub(super) fn to_entries() -> Function {
    f(
        Signature::new(
            "to_entries",
            vec![Param::required("obj", obj_or_null())],
            ReturnRule::Computed(|a| {
                list_of(Type::object([(Arc::from("key"), Type::Str), (Arc::from("value"), field_union(&a[0]))], false))
            }),
            "an object's entries as `{key, value}` objects, in order",
        ),
        to_entries_body,
    )
}

fn to_entries_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let Some(o) = obj_param(args, 0, "obj")? else { return Ok(Value::list(Vec::new())) };
    // Each entry is an object of two entries of its own.
    r.alloc(o.len().saturating_mul(crate::ops::LIST_ELEMENT_BYTES + 2 * crate::ops::OBJECT_ENTRY_BYTES))?;
    let (key, value) = (SmolStr::new_inline("key"), SmolStr::new_inline("value"));
    Ok(Value::list(
        o.iter()
            .map(|(k, v)| {
                let mut m = Map::with_capacity_and_hasher(2, Default::default());
                m.insert(key.clone(), Value::Str(k.clone()));
                m.insert(value.clone(), v.clone());
                Value::object(m)
            })
            .collect(),
    ))
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

fn pick_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let obj = obj_param(args, 0, "obj")?;
    let keys = key_set(r, args, 1)?;
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

fn omit_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let obj = obj_param(args, 0, "obj")?;
    let keys: crate::value::KeyHashSet<&str> = key_set(r, args, 1)?.into_iter().collect();
    let out: Map = obj
        .map(|o| o.iter().filter(|(k, _)| !keys.contains(&***k)).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok(Value::object(out))
}
