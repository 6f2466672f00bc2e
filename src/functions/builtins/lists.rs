//! Lists: templates over elements (`map`, `filter`, `sort`…), construction and queries.

use super::*;

/// `map`: the signature; the body follows.
pub(super) fn map() -> Function {
    f(
        Signature::new(
            "map",
            vec![array(), Param::deferred("template", ParamKind::Template)],
            ReturnRule::Computed(|a| list_of(a[1].clone())),
            "the template applied to every element",
        ),
        map_body,
    )
}

fn map_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    map_core(r, Elems::Values(list_arg(args, 0, "array")?))
}

/// `map`'s loop, over the elements of its list or of a fused producer's.
pub(in crate::functions) fn map_core(r: &mut dyn Caller, xs: Elems<'_>) -> R {
    // The list itself, before the elements the template builds (which `invoke` would
    // otherwise count in its place).
    r.alloc(crate::ops::list_bytes(xs.len()))?;
    let mut out = Vec::with_capacity(xs.len());
    r.apply_each(1, xs, &mut out)?;
    Ok(Value::list(out))
}

/// `filter`: the signature; the body follows.
pub(super) fn filter() -> Function {
    f(
        Signature::new(
            "filter",
            vec![array(), Param::deferred("condition_string", ParamKind::Template)],
            ReturnRule::Computed(|a| list_like(&a[0])),
            "the elements whose condition is truthy, in order",
        ),
        filter_body,
    )
}

fn filter_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    Ok(Value::list(filter_refs(r, args)?.into_iter().cloned().collect()))
}

/// `filter`'s elements, borrowed (what `filter` clones into its list, and what a fused
/// consumer reads).
pub(in crate::functions) fn filter_refs<'a>(r: &mut dyn Caller, args: &Args<'a>) -> Result<Vec<&'a Value>, Failure> {
    let xs = list_arg(args, 0, "array")?;
    // Room for every element: one allocation of a pointer each, instead of doubling
    // through a dozen as the matches come in.
    let mut out = Vec::with_capacity(xs.len());
    r.select(1, xs, &mut out)?;
    Ok(out)
}

/// `group_by`: the signature; the body follows.
pub(super) fn group_by() -> Function {
    f(
        Signature::new(
            "group_by",
            vec![array(), Param::deferred("key_path", ParamKind::PathTemplate)],
            fixed(Type::any_object()),
            "an object from key to the elements with that key, keys in first-seen order",
        ),
        group_by_body,
    )
}

fn group_by_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    group_by_core(r, args, true)
}

/// `group_by` with every grouped element left out (a `null` in its place): the same keys,
/// group sizes, fuel, memory and errors, for a caller that only counts the groups'
/// elements ([`crate::functions::FunctionTable::counted_groups`]). No reference count of a
/// grouped element is taken, or released when the groups are dropped.
pub(in crate::functions) fn group_by_counted_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    group_by_core(r, args, false)
}

/// The index of the group with key `key`: a short key among a few groups (the usual case:
/// statuses, categories) by a scan comparing lengths first, which beats hashing the key (as
/// `value::path`'s lookup does for small objects); a long key, or among more groups, by
/// hash (eight long keys sharing a prefix would be compared whole eight times).
fn group_of<V>(groups: &indexmap::IndexMap<SmolStr, V, crate::value::KeyHash>, key: &str) -> Option<usize> {
    if groups.len() <= 8 && key.len() <= 16 {
        groups.keys().position(|k| crate::value::same_key(k.as_bytes(), key.as_bytes()))
    } else {
        groups.get_index_of(key)
    }
}

fn group_by_core(r: &mut dyn Caller, args: &Args<'_>, keep: bool) -> R {
    let xs = list_arg(args, 0, "array")?;
    // Each group's elements (`keep`), or only how many there are: counted groups hold as
    // many `null`s, made at once at the end.
    let mut groups: indexmap::IndexMap<SmolStr, (Vec<Value>, usize), crate::value::KeyHash> = Default::default();
    for (i, x) in xs.iter().enumerate() {
        let key = r.project(1, x, i)?;
        let at = match &*key {
            // A key seen before (most are) is found by its text: no key is built for it.
            // Hashing a long key reads it whole: a unit per 64 bytes, as for any text.
            Value::Str(s) => {
                if s.len() >= 64 {
                    r.charge(s.len() / 64)?;
                }
                match group_of(&groups, s.as_str()) {
                    Some(at) => at,
                    None => groups.insert_full(s.clone(), Default::default()).0,
                }
            }
            other => {
                let mut t = String::new();
                if !other.join_text_within(&mut t, r.limits().max_string_len) {
                    return Err(text_too_long(&*r));
                }
                r.charge(t.len() / 64)?;
                let entry = groups.entry(SmolStr::from(t));
                let at = entry.index();
                entry.or_default();
                at
            }
        };
        if let Some((_, (elements, count))) = groups.get_index_mut(at) {
            if keep {
                elements.push(x.clone());
            }
            *count += 1;
        }
    }
    // The elements, each group's list and its entry in the working map, and the result.
    let groups_bytes = groups.len().saturating_mul(crate::ops::LIST_BYTES + crate::ops::OBJECT_ENTRY_BYTES);
    r.alloc(
        crate::ops::list_bytes(xs.len())
            .saturating_add(groups_bytes)
            .saturating_add(crate::ops::object_bytes(groups.len())),
    )?;
    let map: Map = groups
        .into_iter()
        .map(|(k, (elements, count))| (k, Value::list(if keep { elements } else { vec![Value::Null; count] })))
        .collect();
    Ok(Value::object(map))
}

/// `sort`: the signature; the body follows.
pub(super) fn sort() -> Function {
    f(
        Signature::new(
            "sort",
            vec![
                array(),
                Param::deferred("key_path", ParamKind::PathTemplate).or_null(),
                Param::optional("direction", Type::Str, Value::str("asc")).one_of(&["asc", "desc"]),
            ],
            ReturnRule::Computed(|a| list_like(&a[0])),
            "a stable sort by the total order of values",
        ),
        sort_body,
    )
}

fn sort_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    Ok(Value::list(sort_refs(r, args)?.into_iter().cloned().collect()))
}

/// `sort`'s elements in order, borrowed (what `sort` clones into its list, and what a
/// fused consumer reads).
pub(in crate::functions) fn sort_refs<'a>(r: &mut dyn Caller, args: &Args<'a>) -> Result<Vec<&'a Value>, Failure> {
    let xs = list_arg(args, 0, "array")?;
    let desc = match str_param(args, 2, "direction")? {
        "asc" => false,
        "desc" => true,
        other => {
            return Err(FnError::arg(
                Code::RuntimeArgument,
                2,
                format!("`direction` must be \"asc\" or \"desc\", found {}", crate::functions::quoted(other)),
            )
            .into())
        }
    };
    // Keys that are all integers (the common case) sort as plain integers, collected
    // straight into the vector that is sorted; at the first other key, every key so far
    // moves to the general form and the rest follow it. Both sorts are stable, and agree
    // where both apply.
    let mut ints: Vec<(i64, &'a Value)> = Vec::with_capacity(xs.len());
    let mut keyed: Vec<(Cow<'a, Value>, &'a Value)> = Vec::new();
    // The integer keys in one run through the evaluator; the first other key, already
    // read, starts the general loop below.
    let (rest, mut first) = if args.has(1) {
        match r.int_keys(1, xs, &mut ints)? {
            None => (&xs[xs.len()..], None),
            Some((i, k)) => (&xs[i..], Some(k)),
        }
    } else {
        (xs, None)
    };
    let start = xs.len() - rest.len();
    for (i, x) in rest.iter().enumerate() {
        let i = start + i;
        let k = match first.take() {
            Some(k) => k,
            None => project(r, args, 1, x, i)?,
        };
        match (&*k, keyed.is_empty()) {
            (Value::Int(n), true) => ints.push((*n, x)),
            _ => {
                if keyed.is_empty() {
                    keyed.reserve_exact(xs.len());
                    keyed.extend(ints.drain(..).map(|(n, x)| (Cow::Owned(Value::Int(n)), x)));
                }
                keyed.push((k, x));
            }
        }
    }
    // Comparing keys walks them: what a walk of each visits, then n log n comparisons,
    // charged up front.
    for (k, _) in &keyed {
        if matches!(**k, Value::List(_) | Value::Object(_)) {
            metered(r, |b| k.nodes_within(*b))?;
        }
    }
    r.charge(xs.len() * (usize::BITS - xs.len().leading_zeros()) as usize / 4)?;
    let order: Vec<&Value> = if keyed.is_empty() {
        sort_int_keys(&mut ints, desc);
        ints.into_iter().map(|(_, x)| x).collect()
    } else {
        // Each comparison metered: what it visits beyond the unit the `n log n` charge
        // above paid for, so keys sharing long strings or deep parts (walked once each
        // above, compared `log n` times each here) run out of fuel instead of time. The
        // first failure stops the charging; the sort then ends on equal answers.
        let mut failed: Option<Failure> = None;
        keyed.sort_by(|a, b| {
            if failed.is_some() {
                return Ordering::Equal;
            }
            let (a, b) = if desc { (&b.0, &a.0) } else { (&a.0, &b.0) };
            let left = r.fuel_left();
            let mut budget = left;
            let ord = a.cmp_within(b, &mut budget);
            let extra = (left - budget).saturating_sub(1);
            let charged = if ord.is_none() {
                Err(Failure::from(FnError::new(Code::FuelExhausted, "evaluation ran out of fuel")))
            } else if extra > 0 {
                r.charge(usize::try_from(extra).unwrap_or(usize::MAX)).map_err(Failure::from)
            } else {
                Ok(())
            };
            match (charged, ord) {
                (Ok(()), Some(ord)) => ord,
                (Err(e), _) => {
                    failed = Some(e);
                    Ordering::Equal
                }
                (Ok(()), None) => Ordering::Equal,
            }
        });
        if let Some(e) = failed {
            if matches!(&e, Failure::Fn(f) if f.code == Code::FuelExhausted) {
                r.charge(usize::MAX)?;
            }
            return Err(e);
        }
        keyed.into_iter().map(|(_, x)| x).collect()
    };
    Ok(order)
}

/// From how many elements integer keys are radix-sorted: below it, the standard library's
/// comparison sort is as fast (radsort's own benchmarks put the crossover at about a hundred
/// elements).
const RADIX_MIN: usize = 128;

/// Sorts elements by integer keys, stably (equal keys keep their order), ascending or
/// descending. From [`RADIX_MIN`] elements on, a radix sort: linear, and without the
/// comparison sort's branch on every comparison, which random keys mispredict half the time
/// (most of the time a sort of records by a score takes). `!k` orders the keys the other way
/// round without overflow (`!i64::MIN` is `i64::MAX`).
fn sort_int_keys(ints: &mut [(i64, &Value)], desc: bool) {
    match (ints.len() >= RADIX_MIN, desc) {
        (true, false) => radsort::sort_by_key(ints, |a| a.0),
        (true, true) => radsort::sort_by_key(ints, |a| !a.0),
        (false, false) => ints.sort_by_key(|a| a.0),
        (false, true) => ints.sort_by_key(|a| std::cmp::Reverse(a.0)),
    }
}

/// `unique`: the signature; the body follows.
pub(super) fn unique() -> Function {
    f(
        Signature::new(
            "unique",
            vec![array()],
            ReturnRule::Computed(|a| list_like(&a[0])),
            "the first occurrence of every distinct element",
        ),
        unique_body,
    )
}

fn unique_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    r.charge(xs.len() / 4)?;
    let keep = distinct(r, xs)?;
    Ok(Value::list(xs.iter().zip(keep).filter(|(_, k)| *k).map(|(x, _)| x.clone()).collect()))
}

/// Which elements of `xs` are the first occurrence of their value, with a worst case
/// bounded by fuel whatever the elements (docs/security.md, round 10d):
///
/// * each element is hashed whole ([`Value::hash_within`]: every node, however deep),
///   charged as a walk of it — a list or object a node a unit, a string a unit per 64 bytes;
/// * the `(hash, index)` pairs are radix-sorted by hash (stable: indices stay in order), so
///   no hash table is probed and no probe sequence can grow;
/// * within a run of equal hashes each element is compared with the distinct values seen
///   so far in the run, each comparison charged what it visits and at least a unit, so
///   values crafted to share a hash run out of fuel instead of time.
///
/// Every charge goes through [`Caller::charge`], which polls the evaluation's interrupt.
fn distinct(r: &mut dyn Caller, xs: &[Value]) -> Result<Vec<bool>, Failure> {
    let mut hashed: Vec<(u64, usize)> = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        let h = match x {
            Value::List(_) | Value::Object(_) => metered(r, |b| x.hash_within(b))?,
            _ => {
                if let Value::Str(s) = x {
                    r.charge(s.len() / 64)?;
                }
                let mut budget = u64::MAX;
                x.hash_within(&mut budget).unwrap_or_default()
            }
        };
        hashed.push((h, i));
    }
    radsort::sort_by_key(&mut hashed, |p| p.0);
    let mut keep = vec![false; xs.len()];
    let mut reps: Vec<usize> = Vec::new();
    for run in hashed.chunk_by(|a, b| a.0 == b.0) {
        if let [(_, i)] = run {
            keep[*i] = true;
            continue;
        }
        reps.clear();
        for &(_, i) in run {
            let mut seen = false;
            for &j in &reps {
                if metered(r, |b| xs[i].eq_within(&xs[j], b))? {
                    seen = true;
                    break;
                }
            }
            if !seen {
                reps.push(i);
                keep[i] = true;
            }
        }
    }
    Ok(keep)
}

/// `flatten`: the signature; the body follows.
pub(super) fn flatten() -> Function {
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
        flatten_body,
    )
}

fn flatten_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
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

/// `length`: the signature; the body follows.
pub(super) fn length() -> Function {
    f(
        Signature::new(
            "length",
            vec![Param::required("value", list_or_null().union(Type::Str).union(Type::any_object()))],
            fixed(Type::Int),
            "the number of elements, characters or keys (0 for null)",
        ),
        length_body,
    )
}

fn length_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    Ok(Value::Int(match args.get(0) {
        Value::Null => 0,
        Value::List(l) => l.len() as i64,
        Value::Object(o) => o.len() as i64,
        Value::Str(s) => s.chars().count() as i64,
        other => return Err(type_err(0, "value", "a list, string or object", other)),
    }))
}

/// `contains`: the signature; the body follows.
pub(super) fn contains() -> Function {
    f(
        Signature::new(
            "contains",
            vec![Param::required("haystack", Type::Any), Param::required("needle", Type::Any)],
            fixed(Type::Bool),
            "substring, list element or object key",
        ),
        contains_body,
    )
}

fn contains_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let needle = args.get(1);
    Ok(Value::Bool(match args.get(0) {
        Value::Null => false,
        Value::Str(s) => match needle {
            Value::Str(n) => s.contains(&**n),
            _ => false,
        },
        Value::List(l) => {
            // A unit per element compared, and what comparing nested values visits:
            // charged element by element, so a long search polls the interrupt.
            let mut found = false;
            for x in l.iter() {
                if metered(r, |b| x.eq_within(needle, b))? {
                    found = true;
                    break;
                }
            }
            found
        }
        Value::Object(o) => match needle {
            Value::Str(n) => o.contains_key(&**n),
            _ => false,
        },
        other => return Err(type_err(0, "haystack", "a string, list or object", other)),
    }))
}

/// `count`: the signature; the body follows.
pub(super) fn count() -> Function {
    f(
        Signature::new(
            "count",
            vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
            fixed(Type::Int),
            "the number of elements (that satisfy the condition)",
        ),
        count_body,
    )
}

fn count_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
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

/// `zip`: the signature; the body follows.
pub(super) fn zip() -> Function {
    f(
        Signature::new(
            "zip",
            vec![Param::required("left", list_or_null()), Param::required("right", list_or_null())],
            ReturnRule::Computed(|a| list_of(list_of(a[0].element().union(a[1].element())))),
            "pairs `[left[i], right[i]]` up to the shorter length",
        ),
        zip_body,
    )
}

fn zip_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let a = list_arg(args, 0, "left")?;
    let b = list_arg(args, 1, "right")?;
    // Each pair is a list of its own.
    let n = a.len().min(b.len());
    r.alloc(n.saturating_mul(crate::ops::LIST_ELEMENT_BYTES * 3))?;
    Ok(Value::list(a.iter().zip(b.iter()).map(|(x, y)| Value::list(vec![x.clone(), y.clone()])).collect()))
}

/// `range`: the signature; the body follows.
pub(super) fn range() -> Function {
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
        range_body,
    )
}

fn range_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
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

/// `slice`: the signature; the body follows.
pub(super) fn slice() -> Function {
    f(
        Signature::new(
            "slice",
            vec![
                Param::required("value", list_or_null().union(Type::Str)),
                Param::required("start", Type::Int),
                Param::optional("end", Type::Int.union(Type::Null), Value::Null),
            ],
            ReturnRule::Computed(|a| a[0].widen_enums()),
            "part of a list or string; negative positions count from the end",
        ),
        slice_body,
    )
}

fn slice_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
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

/// `any`: the signature; the body follows.
pub(super) fn any() -> Function {
    f(
        Signature::new(
            "any",
            vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
            fixed(Type::Bool),
            "whether some element (or its condition) is truthy",
        ),
        any_body,
    )
}

fn any_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if test(r, args, 1, x, i)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

/// `all`: the signature; the body follows.
pub(super) fn all() -> Function {
    f(
        Signature::new(
            "all",
            vec![array(), Param::deferred("condition_string", ParamKind::Template).or_null()],
            fixed(Type::Bool),
            "whether every element (or its condition) is truthy",
        ),
        all_body,
    )
}

fn all_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if !test(r, args, 1, x, i)? {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// `find`: the signature; the body follows.
pub(super) fn find() -> Function {
    f(
        Signature::new(
            "find",
            vec![array(), Param::deferred("condition_string", ParamKind::Template)],
            ReturnRule::Computed(|a| a[0].element().union(Type::Null)),
            "the first element whose condition is truthy, or null",
        ),
        find_body,
    )
}

fn find_body(r: &mut dyn Caller, args: &Args<'_>) -> R {
    let xs = list_arg(args, 0, "array")?;
    for (i, x) in xs.iter().enumerate() {
        if r.test(1, x, i)? {
            return Ok(x.clone());
        }
    }
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The radix sort of integer keys gives what the standard library's stable sort
        /// gives, both ways, whatever the keys (extremes, many equal ones) and on both sides
        /// of `RADIX_MIN`: the same order of equal keys included.
        #[test]
        fn integer_keys_sort_as_the_stable_comparison_sort(
            keys in proptest::collection::vec(
                proptest::prop_oneof![
                    -3i64..3,
                    0i64..100,
                    proptest::strategy::Just(i64::MIN),
                    proptest::strategy::Just(i64::MAX),
                    proptest::arbitrary::any::<i64>(),
                ],
                0..400,
            ),
            desc in proptest::arbitrary::any::<bool>(),
        ) {
            let items: Vec<Value> = (0..keys.len()).map(|i| Value::Int(i as i64)).collect();
            let mut got: Vec<(i64, &Value)> = keys.iter().copied().zip(items.iter()).collect();
            let mut want = got.clone();
            sort_int_keys(&mut got, desc);
            if desc {
                want.sort_by_key(|a| std::cmp::Reverse(a.0));
            } else {
                want.sort_by_key(|a| a.0);
            }
            proptest::prop_assert_eq!(got, want);
        }
    }
}
