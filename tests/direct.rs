//! The one-pass compiler (`compile::compiler::direct`) against the reference pipeline.
//!
//! `Engine::compile` compiles a program without problems in one pass from its text when the
//! one-pass compiler models all of it, and by the reference pipeline (parse, check, fold,
//! generate) otherwise. The two must give the same program: the same chunk (instructions
//! and spans, tables, call sites, templates and their fast forms), the same type, the same
//! REFs and free names, and the one pass must never answer for a program the reference
//! pipeline reports anything about. Checked here on a corpus whose expectation (answered or
//! declined) is in the data, and on generated programs.

mod common;

use proptest::prelude::*;
use tdsl::testing::compile::direct_agrees;
use tdsl::{Engine, Scope, Value};

/// `tests/direct/cases.txt`: `answered` or `declined`, a tab, a program (open scope).
#[test]
fn the_corpus_compiles_alike_both_ways() {
    let engine = Engine::new();
    let text = include_str!("direct/cases.txt");
    let mut failures = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((want, src)) = line.split_once('\t') else { panic!("line {}: no tab", n + 1) };
        match (want, direct_agrees(&engine, src, &Scope::open())) {
            (_, Err(e)) => failures.push(format!("line {}: {src}\n{e}", n + 1)),
            ("answered", Ok(true)) | ("declined", Ok(false)) => {}
            (want, Ok(got)) => failures.push(format!("line {}: {src}: expected {want}, answered: {got}", n + 1)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `item`, then up to three fields (or an index segment).
fn item_path() -> impl Strategy<Value = String> {
    let seg = prop::sample::select(vec!["id", "name", "score", "status", "profile", "age", "email", "tags", "0"]);
    prop::collection::vec(seg, 0..=3).prop_map(|segs| {
        let mut s = String::from("item");
        for g in segs {
            s.push('.');
            s.push_str(g);
        }
        s
    })
}

/// A filter condition of the shapes plans write: comparisons of an element's fields with
/// constants, fields alone, `not`, `and`, `or`, parentheses; now and then an operator or a
/// shape the one pass declines (`+`, a field compared with a field, a call).
fn condition() -> impl Strategy<Value = String> {
    let konst =
        prop::sample::select(vec!["5", "50", "2.5", "'active'", "\"x\"", "true", "null", "''", "[1]", "{a: 1}"]);
    let op = prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]);
    let leaf = prop_oneof![
        4 => (item_path(), op.clone(), konst).prop_map(|(p, o, k)| format!("{p} {o} {k}")),
        1 => item_path(),
        1 => (item_path(), op, item_path()).prop_map(|(a, o, b)| format!("{a} {o} {b}")),
        1 => item_path().prop_map(|p| format!("{p} + 1 > 2")),
        1 => item_path().prop_map(|p| format!("length({p}) > 0")),
        1 => item_path().prop_map(|p| format!("{p}[0] == 1")),
        1 => (item_path(), konst2()).prop_map(|(p, k)| format!("({p}) != ({k})")),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(vec![" and ", " or ", " && ", " || "]), inner.clone())
                .prop_map(|(a, o, b)| format!("{a}{o}{b}")),
            inner.clone().prop_map(|a| format!("not {a}")),
            inner.prop_map(|a| format!("({a})")),
        ]
    })
}

/// A constant, for comparisons written with parentheses.
fn konst2() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["1", "'a'", "null", "true"])
}

/// A template's body: a field, an object or list of fields.
fn template() -> impl Strategy<Value = String> {
    prop_oneof![
        item_path(),
        prop::collection::vec((prop::sample::select(vec!["id", "email", "tag", "n"]), item_path()), 1..4).prop_map(
            |kv| {
                let mut seen = Vec::new();
                let body: Vec<String> = kv
                    .into_iter()
                    .filter(|(k, _)| {
                        let fresh = !seen.contains(k);
                        seen.push(*k);
                        fresh
                    })
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                format!("{{{}}}", body.join(", "))
            }
        ),
        (item_path(), item_path()).prop_map(|(a, b)| format!("[{a}, {b}]")),
    ]
}

/// Programs of the reference benchmark's W5 shape and its neighbours.
fn plan_expression() -> impl Strategy<Value = String> {
    let list = prop::sample::select(vec![
        "records",
        "items",
        "REF:step.items",
        "data.rows",
        "x[0]",
        "(records)",
        "((REF:step.items))",
        "(x)[0]",
        "(data.rows)",
        "(sort(array=records))",
        "((filter(array=records, condition_string='item.a')))",
        "(range(3))",
    ]);
    prop_oneof![
        (list.clone(), condition()).prop_map(|(l, c)| format!("filter(array={l}, condition_string=\"{c}\")")),
        (list.clone(), condition(), template())
            .prop_map(|(l, c, t)| format!("map(array=filter(array={l}, condition_string=\"{c}\"), template={t})")),
        (list.clone(), template()).prop_map(|(l, t)| format!("map(array={l}, template=\"{t}\")")),
        (list.clone(), template(), condition()).prop_map(|(l, t, c)| format!(
            "map(array=filter(array={l}, condition_string=\"{c}\"), template=\"{}\")",
            t.replace('"', "'")
        )),
        (list.clone(), item_path()).prop_map(|(l, p)| format!("sort(array={l}, key_path=\"{p}\")")),
        (list, item_path(), condition()).prop_map(|(l, p, c)| format!(
            "map(array=sort(array=filter(array={l}, condition_string=\"{c}\"), key_path=\"{p}\"), template={p})"
        )),
    ]
}

/// A scope with typed variables, so that the one pass meets types other than `any`.
fn typed_scope() -> Scope {
    let vars: Value = serde_json::from_str(
        r#"{"records": [{"id": 1, "status": "active", "score": 60, "profile": {"age": 30, "email": "a@b"}, "tags": ["t"]}],
            "items": [1, 2], "data": {"rows": [{"id": 2}]}, "x": [[{"id": 3}]], "a": 1, "b": "s", "c": true}"#,
    )
    .unwrap();
    Scope::from_vars(&vars)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Plans' expressions: wherever the one pass answers, it answers the reference
    /// pipeline's program, in an open scope and in a typed one.
    #[test]
    fn plan_expressions_compile_alike(src in plan_expression()) {
        let engine = Engine::new();
        for scope in [Scope::open(), typed_scope()] {
            if let Err(e) = direct_agrees(&engine, &src, &scope) {
                prop_assert!(false, "`{src}`: {e}");
            }
        }
    }

    /// Trees of every shape the parser builds (the fuzzing generator's), printed.
    #[test]
    fn generated_programs_compile_alike(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut u = arbitrary::Unstructured::new(&bytes);
        if let Ok(tree) = tdsl::fuzzing::expr(&mut u, 6) {
            let src = tdsl::testing::syntax::print(&tree);
            let engine = Engine::new();
            for scope in [Scope::open(), typed_scope()] {
                if let Err(e) = direct_agrees(&engine, &src, &scope) {
                    prop_assert!(false, "`{src}`: {e}");
                }
            }
        }
    }
}

/// The generator above is not vacuous: most of what it writes is answered in one pass
/// (a fixed sample, so the count is the same every run).
#[test]
fn most_plan_expressions_are_answered_in_one_pass() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let engine = Engine::new();
    let (mut answered, mut total) = (0, 0);
    for _ in 0..300 {
        let src = plan_expression().new_tree(&mut runner).unwrap().current();
        total += 1;
        if direct_agrees(&engine, &src, &Scope::open()) == Ok(true) {
            answered += 1;
        }
    }
    assert!(answered * 3 >= total, "only {answered} of {total} answered in one pass");
}

/// A program compiled in one pass runs as the reference pipeline's does, on the VM and on
/// the reference evaluator (its typed tree built when first asked for), and `type_at` sees
/// into its template strings.
#[test]
fn a_program_compiled_in_one_pass_runs_and_hovers_as_the_reference() {
    let engine = Engine::new();
    let src = r#"map(array=filter(array=records, condition_string="item.status == 'active' and item.score > 50"), template={id: item.id, tag: item.tags[0]})"#;
    assert_eq!(direct_agrees(&engine, src, &Scope::open()), Ok(true));
    let program = engine.compile(src).unwrap();
    let vars: Value = serde_json::from_str(
        r#"{"records": [{"id": 1, "status": "active", "score": 60, "tags": ["a"]},
                        {"id": 2, "status": "active", "score": 10, "tags": []},
                        {"id": 3, "status": "gone", "score": 90, "tags": ["c"]}]}"#,
    )
    .unwrap();
    let out = program.eval(&vars).unwrap();
    assert_eq!(out.to_string(), r#"[{"id":1,"tag":"a"}]"#);
    assert_eq!(program.eval_reference(&vars, &Value::Null).unwrap(), out);
    let at = src.find("score").unwrap();
    let (span, ty) = program.type_at(at).unwrap();
    assert_eq!((&src[span.range()], ty.to_string().as_str()), ("item.score", "any"));
    assert!(program.warnings().is_empty());
    assert_eq!(program.references().names.len(), 1);
}

/// A program nested as deep as the largest limit a host may set compiles in one pass on a
/// 2 MiB thread (the one pass recurses once per level, as the parsers do), and one level
/// deeper is declined, for the reference pipeline to report.
#[test]
fn the_deepest_program_allowed_compiles_on_a_small_stack() {
    let max = tdsl::ranges::MAX_DEPTH.max as usize;
    let engine = Engine::new().with_limits(tdsl::Limits { max_depth: max, ..tdsl::Limits::default() });
    let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        let mut answered = Vec::new();
        for unit in ["(", "[", "{a: ", "not "] {
            for depth in [max / 2, max, max + 1] {
                let src = common::nested(unit, depth, "x");
                let agrees = direct_agrees(&engine, &src, &Scope::open());
                assert!(agrees.is_ok(), "{unit} × {depth}: {agrees:?}");
                answered.push((unit, depth, agrees == Ok(true)));
            }
        }
        answered
    });
    let answered = worker.unwrap().join().expect("no stack overflow");
    // `not` nests one level a word, brackets one level a pair, lists and objects two (the
    // parser's chain levels): at half the limit each is answered, past it none is.
    for (unit, depth, yes) in answered {
        if depth == max / 2 {
            assert!(yes, "{unit} × {depth} declined");
        }
        if depth > max {
            assert!(!yes, "{unit} × {depth} answered");
        }
    }
}
