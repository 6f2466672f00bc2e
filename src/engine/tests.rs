//! The engine's unit tests (compile, evaluate, fused calls, deferred template chunks).

use super::*;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn program_is_send_and_sync() {
    assert_send_sync::<Program>();
    assert_send_sync::<Engine>();
}

/// A condition with a fast form is compiled into a chunk by the reference pipeline only
/// when the fast form cannot answer (an element of the wrong type): not by the compile,
/// not while every element fits, and then it answers as a chunk compiled at once does
/// (code, message, span, data location). (The one-pass compiler emits the chunk as it
/// reads the condition: nothing is left to defer.)
#[test]
fn a_conditions_chunk_is_compiled_when_first_needed() {
    use crate::compile::CallParam;
    fn compiled(program: &Program) -> Vec<bool> {
        let params = program.inner.chunk.calls.iter().flat_map(|c| c.params.iter());
        params
            .filter_map(|p| if let CallParam::Template(c, ..) = &p.pass { Some(c.is_compiled()) } else { None })
            .collect()
    }
    let src = "map(array=filter(array=xs, condition_string=\"item.a > 1 and item.b == 'x'\"), template={a: item.a})";
    let engine = Engine::new();
    let reference = || engine.analyze(src, &Scope::open()).program;
    let (Some(lazy), Some(eager)) = (reference(), reference()) else { panic!("`{src}` compiles") };
    assert_eq!(compiled(&lazy), [false, true], "the condition's chunk waits; the object template's does not");
    let fits = Value::from(&serde_json::json!({"xs": [{"a": 3, "b": "x"}, {"a": 0, "b": "y"}]}));
    assert_eq!(lazy.eval(&fits).map(|v| v.to_string()), Ok("[{\"a\":3}]".to_string()));
    assert_eq!(compiled(&lazy), [false, true], "the fast form answered every element");
    let listing = eager.disassemble();
    assert_eq!(compiled(&eager), [true, true]);
    let mismatch = Value::from(&serde_json::json!({"xs": [{"a": 3, "b": "x"}, {"a": "s", "b": "y"}]}));
    let (Err(got), Err(want)) = (lazy.eval(&mismatch), eager.eval(&mismatch)) else {
        panic!("comparing a string with 1 fails")
    };
    assert_eq!(got, want);
    assert_eq!(got.location.as_deref(), Some("$.xs[1].a"), "{got:?}");
    assert_eq!(compiled(&lazy), [true, true], "the chunk ran, so it was compiled");
    assert_eq!(lazy.disassemble(), listing);
}

/// The same engine with `filter`, `sort`, `map` and `sum` re-registered as themselves:
/// the VM then runs every fused pair as its two calls.
/// `src` compiled as usual and with `map`, `sum`, `filter` and `sort` unfused gives the
/// same value, or the same error, at `limits`.
fn fused_matches_two_calls(src: &str, vars: &Value, limits: &Limits) {
    let a = Engine::new().with_limits(limits.clone()).compile(src).map(|p| p.eval(vars));
    let b = unfused(limits.clone()).compile(src).map(|p| p.eval(vars));
    let (Ok(a), Ok(b)) = (a, b) else { panic!("`{src}` does not compile") };
    match (&a, &b) {
        (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}` at {limits:?}"),
        (Err(x), Err(y)) => assert_eq!(**x, **y, "`{src}` at {limits:?}"),
        _ => panic!("`{src}` at {limits:?}: fused {a:?}, two calls {b:?}"),
    }
}

fn unfused(limits: Limits) -> Engine {
    let mut funcs = FunctionTable::builtins();
    for name in ["filter", "sort", "map", "sum"] {
        let Some(id) = funcs.lookup(name) else { panic!("{name} is a built-in") };
        let f = funcs.get(id).clone();
        funcs.insert(f);
    }
    Engine { funcs: Arc::new(funcs), ..Engine::new().with_limits(limits) }
}

/// A fused `map`/`sum` over a `filter`/`sort` gives what the two calls give: the same
/// value, or the same error (code, message, span, function and data location), and runs
/// out of fuel and memory at the same budgets.
/// A chain of `and`s (or `or`s) in a condition becomes one flat list in its fast form,
/// whichever way it is grouped, and answers as the chunk does: short-circuiting left to
/// right, so an operand that cannot be compared is only a failure when it is reached.
#[test]
fn condition_chains_are_flat_and_answer_as_the_chunk_does() {
    use crate::compile::{CallParam, Fast, Pred};
    fn fast_of(program: &Program) -> Option<Pred> {
        program.inner.chunk.calls.iter().flat_map(|c| c.params.iter()).find_map(|p| match &p.pass {
            CallParam::Template(t, _) => match t.fast() {
                Some(Fast::Pred(p)) => Some(p.clone()),
                _ => None,
            },
            _ => None,
        })
    }
    let engine = Engine::new();
    let shape = |src: &str| {
        let p = engine.compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        match fast_of(&p) {
            Some(Pred::And(ps)) => format!("and{}", ps.len()),
            Some(Pred::Or(ps)) => format!("or{}", ps.len()),
            other => format!("{other:?}"),
        }
    };
    assert_eq!(shape("filter(xs, 'item.a > 1 and item.b > 2 and item.c')"), "and3");
    assert_eq!(shape("filter(xs, 'item.a > 1 and (item.b > 2 and item.c)')"), "and3");
    assert_eq!(shape("filter(xs, 'item.a or item.b or item.c or item.d')"), "or4");
    assert_eq!(shape("filter(xs, '(item.a or item.b) and item.c')"), "and2");
    let vars = Value::from(&serde_json::json!({
        "xs": [
            {"a": 3, "b": "x", "c": true, "d": null},
            {"a": 1, "b": 7, "c": false, "d": 1},
            {"a": 2, "b": 5, "c": null, "d": "s"},
            {"a": 5, "b": 1, "c": true, "d": [1]}
        ]
    }));
    for cond in [
        "item.a > 1 and item.b > 2 and item.c",
        "item.a > 2 and item.b > 'a'",
        "item.a > 0 and item.b > 'a'",
        "item.a < 2 or item.b > 2 or item.d",
        "item.a < 2 or item.b > 'a'",
        "not item.c and (item.a > 1 or item.d) and item.b != 5",
        "item.c or item.a > 1 and item.b < 6",
    ] {
        // The same condition written so it has no fast form (a call in it) is the chunk's answer.
        let fast = engine.compile(&format!("filter(xs, \"{cond}\")")).map(|p| p.eval(&vars));
        let slow = engine.compile(&format!("filter(xs, \"({cond}) and to_string(1) == '1'\")")).map(|p| p.eval(&vars));
        let (Ok(fast), Ok(slow)) = (fast, slow) else { panic!("`{cond}` does not compile") };
        match (&fast, &slow) {
            (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{cond}`"),
            (Err(_), Err(_)) => {}
            _ => panic!("`{cond}`: fast form {fast:?}, chunk {slow:?}"),
        }
    }
}

#[test]
fn fused_calls_match_the_two_calls() {
    let vars = Value::from(&serde_json::json!({
        "xs": [
            {"a": 3, "b": "x", "c": true, "t": [1]},
            {"a": 1, "b": "y", "c": false, "t": []},
            {"a": 2, "b": "z", "c": null, "t": [2, 3]},
            {"a": 5, "b": 7, "c": true, "t": [4]}
        ],
        "m": [3, "a", null, 1.5, [1]],
        "n": null,
        "o": {"k": 1}
    }));
    let programs = [
        "sum(array=filter(array=xs, condition_string=\"item.a > 1\"), item_path=\"item.a\")",
        "sum(filter(xs, 'item.c'), 'item.a')",
        "sum(filter(xs, 'item.c'))",
        "sum(filter(xs, 'item.a > 2'), 'item.b')",
        "sum(sort(xs, 'item.a', 'desc'), 'item.a * 2')",
        "map(sort(xs, 'item.a', 'desc'), 'item.b')",
        "map(sort(m), item)",
        "map(sort(xs, 'item.b'), item.a)",
        "map(filter(xs, item.b > 'x'), item.a)",
        "map(filter(xs, item.a > 1), item.t[0] + 1)",
        "map(filter(xs, item.a >= 1 and item.t.0 > 0), {id: item.a, b: item.b})",
        "map(filter(n, 'item'), item)",
        "sum(filter(m, item != null))",
        "map(filter(json_parse('3'), 'item'), item)",
        "sum(sort(json_parse('{}')))",
        "map(sort(xs, 'item.a', json_parse('\"up\"')), item)",
        "map(filter(xs, 'item.a > 1'), map(filter(item.t, item > 1), item * 10))",
        "map(array=filter(array=o.k, condition_string=item), template=item)",
        // Hostile round: errors inside the fused predicate, key and template.
        "map(filter(xs, item.a / 0 > 1), item)",
        "map(filter(xs, item.a > 1), item.b + 1)",
        "sum(filter(xs, item.b > 'a'), item.a)",
        "sum(sort(xs, item.b), item.a)",
        "map(sort(m, item), item)",
        "map(sort(xs, item.t), item.a)",
        "sum(sort(m), item)",
        "map(filter(m, item), item * 2)",
        "sum(filter(xs, item.a > 0), 'item.a / (item.a - 2)')",
        "map(sort(xs, 'item.a'), {k: item.b, t: item.t})",
        "sum(filter(xs, item.t), length(item.t))",
    ];
    for src in programs {
        let fused = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        assert!(fused.disassemble().contains("CALL_FUSED"), "`{src}` is not fused:\n{}", fused.disassemble());
        let limits = [
            Limits::default(),
            Limits { fuel: 3, ..Limits::default() },
            Limits { fuel: 9, ..Limits::default() },
            Limits { fuel: 12, ..Limits::default() },
            Limits { fuel: 20, ..Limits::default() },
            Limits { max_alloc_bytes: 16, ..Limits::default() },
            Limits { max_alloc_bytes: 40, ..Limits::default() },
        ];
        for limits in limits {
            fused_matches_two_calls(src, &vars, &limits);
        }
        // Every budget from nothing to enough: the fused pair runs out at exactly the
        // fuel and memory the two calls run out at (no off-by-one either way).
        for n in 0..=80u64 {
            for limits in [
                Limits { fuel: n, ..Limits::default() },
                Limits { max_alloc_bytes: n as usize * 8, ..Limits::default() },
            ] {
                fused_matches_two_calls(src, &vars, &limits);
            }
        }
    }
}

/// A `map` over a `sort` of 64 elements or more reads its path template ahead, in list
/// order, before the sort: the same values and errors as the two calls, and the same
/// fuel and memory at every budget, around the budget from which it reads ahead too;
/// with keys out of their usual order, a key missing, a value that is a list, an element
/// that is not an object.
#[test]
fn a_map_over_a_sort_that_reads_ahead_matches_the_two_calls() {
    let record = |i: i64| serde_json::json!({"a": (i * 37) % 100, "b": format!("n{i}"), "c": {"d": i}});
    let big: Vec<serde_json::Value> = (0..150).map(record).collect();
    let mut mixed = big.clone();
    mixed[70] = serde_json::json!({"b": "moved", "c": {"d": 0}, "a": 7});
    mixed[90] = serde_json::json!({"a": 9, "c": {"d": 1}});
    mixed[120] = serde_json::json!({"a": 12, "b": [1, 2], "c": {"d": 2}});
    let mut odd = big.clone();
    odd[100] = serde_json::json!(5);
    let vars = Value::from(&serde_json::json!({"big": big, "mixed": mixed, "odd": odd}));
    let programs = [
        "map(sort(big, 'item.a', 'desc'), 'item.b')",
        "map(sort(big, 'item.a'), item.c.d)",
        "map(sort(mixed, 'item.a', 'desc'), 'item.b')",
        "map(sort(mixed, 'item.a'), item.c.d)",
        "map(sort(big, 'item.a'), 'item.zz')",
        "map(sort(odd, 'item.a', 'desc'), 'item.b')",
        "map(sort(mixed, 'item.c.d'), 'item.b')",
    ];
    let mut budgets = vec![Limits::default()];
    for n in (0..=700u64).step_by(7).chain([299, 300, 301, 449, 450, 451]) {
        budgets.push(Limits { fuel: n, ..Limits::default() });
    }
    for n in [0usize, 800, 2_400, 2_600, 4_000] {
        budgets.push(Limits { max_alloc_bytes: n, ..Limits::default() });
    }
    for src in programs {
        for limits in &budgets {
            fused_matches_two_calls(src, &vars, limits);
        }
    }
}

/// `sort`'s integer keys and `map`'s path templates run over the whole list at once in
/// the VM (`Caller::int_keys`, `Caller::apply_each`); the reference evaluator reads them
/// element by element. Where the keys stop being integers part-way, where an element is
/// not an object, where a key is missing, and where the template fails on one element,
/// both give the same value or the same error (code, message, span, data location).
#[test]
fn whole_list_keys_and_paths_match_element_by_element() {
    let vars = Value::from(&serde_json::json!({
        "xs": [{"a": 3, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2}, {"a": 5, "b": 7}],
        "late": [{"a": 3}, {"a": 1}, {"a": "z"}, {"a": 2}, {"a": null}],
        "odd": [{"a": 3}, 4, {"a": 1}, "s", null],
        "deep": [{"p": {"q": 2}}, {"p": 3}, {"p": {"q": 1}}]
    }));
    for src in [
        "sort(xs, 'item.a', 'desc')",
        "sort(late, 'item.a')",
        "sort(odd, 'item.a')",
        "sort(deep, 'item.p.q', 'desc')",
        "map(xs, 'item.b')",
        "map(odd, 'item.a')",
        "map(deep, 'item.p.q')",
        "map(sort(late, 'item.a'), 'item.a')",
        "map(sort(odd, 'item.a', 'desc'), item.a)",
        "join(map(sort(xs, 'item.a', 'desc'), 'item.b'), ', ')",
    ] {
        let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        let (vm, reference) = (p.eval(&vars), p.eval_reference(&vars, &vars));
        match (&vm, &reference) {
            (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}`"),
            // The reference evaluator names no data location; the VM's is checked below.
            (Err(x), Err(y)) => assert_eq!((x.code, &x.message, x.span), (y.code, &y.message, y.span), "`{src}`"),
            _ => panic!("`{src}`: the VM gives {vm:?}, the reference evaluator {reference:?}"),
        }
    }
    // An element the key path cannot be walked on, read in the run of keys: the error
    // names that element, as one `project` per element does.
    for (src, at) in [("sort(odd, 'item.a')", "$.odd[1]"), ("map(odd, 'item.a')", "$.odd[1]")] {
        let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        let Err(e) = p.eval(&vars) else { panic!("`{src}` does not fail") };
        assert_eq!(e.location.as_deref(), Some(at), "`{src}`: {e:?}");
    }
}

/// The same engine with `group_by` re-registered as itself: every
/// `CALL_GROUPS_COUNTED` then runs as the plain call, elements kept.
fn groups_kept(limits: Limits) -> Engine {
    let mut funcs = FunctionTable::builtins();
    let Some(id) = funcs.lookup("group_by") else { panic!("group_by is a built-in") };
    let f = funcs.get(id).clone();
    funcs.insert(f);
    Engine { funcs: Arc::new(funcs), ..Engine::new().with_limits(limits) }
}

/// A `group_by` whose groups the next pipeline operation only counts runs without its
/// elements (`CALL_GROUPS_COUNTED`), and gives what the plain call gives: the same
/// value, or the same error (code, message, span, function, data location), running
/// out of fuel and memory at the same budgets.
#[test]
fn counted_groups_match_the_plain_group_by() {
    let vars = Value::from(&serde_json::json!({
        "xs": [
            {"a": 3, "b": "x", "c": true, "t": [1]},
            {"a": 1, "b": "y", "c": false, "t": []},
            {"a": 2, "b": "x", "c": null, "t": [2, 3]},
            {"a": 5, "b": 7, "c": true, "t": [4]},
            {"a": 3, "b": "x", "c": 1.5, "t": [1]}
        ],
        "m": [3, "a", null, 1.5, [1], {"k": 2}, 3, "3", null],
        "n": null,
        "o": {"k": 1}
    }));
    let programs = [
        "pipeline(group_by(array=xs, key_path=\"item.b\"), [map(array=values(current), template=length(item))])",
        "pipeline(group_by(xs, 'item.a'), [zip(keys(current), map(values(current), length(item)))])",
        "pipeline(group_by(xs, item.c), [from_entries(zip(keys(current), map(values(current), length(item))))])",
        "pipeline(group_by(m, item), [map(values(current), length(item))])",
        "pipeline(group_by(m, 'item'), [keys(current)])",
        "pipeline(group_by(xs, item.t), [keys(current)])",
        "pipeline(group_by(n, item), [map(values(current), length(item))])",
        "pipeline(group_by(xs, 'item.b'), [{n: length(keys(current)), sizes: map(values(current), length(item))}, current.sizes])",
        "pipeline(group_by(xs, item.b), [if(length(keys(current)) > 1, map(values(current), length(item)), [])])",
        "pipeline(group_by(xs, item.b), [map(values(current), length(item)), map(current, item * 2)])",
        "pipeline(group_by(xs, item.a), [sum(map(values(current), length(item))) + length(keys(current))])",
        // Hostile round: errors in the array and the key, and keys past the string limit.
        "pipeline(group_by(o, item), [keys(current)])",
        "pipeline(group_by(json_parse('3'), item), [keys(current)])",
        "pipeline(group_by(xs, item.a / 0), [keys(current)])",
        "pipeline(group_by(xs, item.b + 1), [map(values(current), length(item))])",
        "pipeline(group_by(xs, item.t.0 > 1), [keys(current)])",
        "pipeline(group_by(xs, [item.t, item.t, item.t, item.t, item.t, item.t, item.t, item.t]), [keys(current)])",
    ];
    for src in programs {
        let counted = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        let listing = counted.disassemble();
        assert!(listing.contains("CALL_GROUPS_COUNTED"), "`{src}` does not count its groups:\n{listing}");
        let limits = [
            Limits::default(),
            Limits { max_string_len: 12, ..Limits::default() },
            Limits { max_depth: 6, ..Limits::default() },
            Limits { max_depth: 7, ..Limits::default() },
        ];
        let budgets = (0..=80u64).flat_map(|n| {
            [Limits { fuel: n, ..Limits::default() }, Limits { max_alloc_bytes: n as usize * 8, ..Limits::default() }]
        });
        for limits in limits.into_iter().chain(budgets) {
            let a = Engine::new().with_limits(limits.clone()).compile(src).map(|p| p.eval(&vars));
            let b = groups_kept(limits.clone()).compile(src).map(|p| p.eval(&vars));
            let (a, b) = match (a, b) {
                (Ok(a), Ok(b)) => (a, b),
                // Nested past a small depth limit: neither compiles.
                (Err(_), Err(_)) => continue,
                (a, b) => panic!("`{src}` at {limits:?}: counted {:?}, plain {:?}", a.is_ok(), b.is_ok()),
            };
            match (&a, &b) {
                (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}` at {limits:?}"),
                (Err(x), Err(y)) => assert_eq!(**x, **y, "`{src}` at {limits:?}"),
                _ => panic!("`{src}` at {limits:?}: counted {a:?}, plain {b:?}"),
            }
        }
    }
}

/// A `group_by` whose elements may be read keeps them: its result read otherwise than
/// by `keys` and `length` of its `values`, and every reader a host replaced.
#[test]
fn groups_read_otherwise_keep_their_elements() {
    let vars = Value::from(&serde_json::json!({"xs": [{"b": "x", "a": 1}, {"b": "y", "a": 2}, {"b": "x", "a": 3}]}));
    for src in [
        "pipeline(group_by(xs, item.b), [values(current)])",
        "pipeline(group_by(xs, item.b), [current])",
        "pipeline(group_by(xs, item.b), [map(values(current), item[0].a)])",
        "pipeline(group_by(xs, item.b), [map(values(current), length(current))])",
        "pipeline(group_by(xs, item.b), [map(keys(current), current[item])])",
        "pipeline(group_by(xs, item.b), [map(values(current), length(item)), current])",
        "pipeline(group_by(xs, item.b), [map(values(current), length(item) + length(current))])",
        "pipeline(group_by(xs, item.b), [{n: map(values(current), 'length(item)'), v: values(current)}])",
        "map(values(group_by(xs, item.b)), length(item))",
    ] {
        let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
        let listing = p.disassemble();
        let counted = listing.contains("CALL_GROUPS_COUNTED");
        // The sixth program's `current` in its second operation is the first one's result.
        assert_eq!(counted, src.ends_with("length(item)), current])"), "`{src}`:\n{listing}");
    }
    // A host's `length` that reads the elements: the groups keep them.
    for name in ["length", "values", "keys", "map"] {
        let mut e = Engine::new();
        let Some(id) = e.funcs.lookup(name) else { panic!("{name} is a built-in") };
        let sig = e.funcs.get(id).signature.clone();
        let body: HostFn = match name {
            "length" => Arc::new(|a: &[Value]| Ok(a[0].as_list().and_then(|l| l.first()).cloned().unwrap_or_default())),
            "values" => Arc::new(|a: &[Value]| {
                let firsts = a[0].as_object().map(|o| o.values().filter_map(|g| g.as_list()?.first().cloned()));
                Ok(Value::list(firsts.map(Iterator::collect).unwrap_or_default()))
            }),
            "keys" => Arc::new(|a: &[Value]| {
                Ok(Value::list(a[0].as_object().map(|o| o.values().cloned().collect()).unwrap_or_default()))
            }),
            _ => Arc::new(|a: &[Value]| Ok(a[0].clone())),
        };
        e.register_function(sig, body);
        let src = match name {
            "keys" => "pipeline(group_by(xs, item.b), [keys(current)])",
            _ => "pipeline(group_by(xs, item.b), [map(values(current), length(item))])",
        };
        let p = e.compile(src).unwrap_or_else(|d| panic!("`{src}` with a host `{name}`: {d:?}"));
        let got = p.eval(&vars).unwrap_or_else(|err| panic!("`{src}` with a host `{name}`: {err:?}"));
        let want = match name {
            "length" => r#"[{"b":"x","a":1},{"b":"y","a":2}]"#,
            "values" => "[2,2]",
            _ => r#"[[{"b":"x","a":1},{"b":"x","a":3}],[{"b":"y","a":2}]]"#,
        };
        assert_eq!(got.to_string(), want, "`{src}` with a host `{name}`");
    }
}

/// A program compiled in one pass keeps its scope to build its typed tree later: a closed
/// list of REF contexts (a plan's steps) is shared with it, not copied per program.
#[test]
fn a_one_pass_program_shares_its_scopes_ref_contexts() {
    use crate::types::RefScope;
    let mut scope = Scope::closed();
    for i in 0..1_000 {
        scope = scope.with_ref(&format!("step{i}"), Type::Any);
    }
    let program = Engine::new().compile_in("REF:step7.x", &scope).expect("compiles");
    let kept = program.inner.scope.as_ref().expect("compiled in one pass, so the scope is kept");
    match (&scope.refs, &kept.refs) {
        (RefScope::Closed(a), RefScope::Closed(b)) => assert!(Arc::ptr_eq(a, b), "the contexts were copied"),
        _ => panic!("a closed list of contexts"),
    }
    assert_eq!(program.type_at(0).map(|(_, t)| t.clone()), Some(Type::Any));
}
