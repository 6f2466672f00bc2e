//! What a compile allocates: folding copies nothing when nothing folds, and a template's
//! paths, its fast form and the origins of the values read there share one segment list.

use std::borrow::Cow;
use std::sync::Arc;

use super::{compile, fold, CallParam, Chunk, Fast, Pred};
use crate::functions::FunctionTable;
use crate::runtime::Limits;
use crate::types::typed::TExpr;
use crate::types::Scope;

fn typed(src: &str) -> TExpr {
    checked(src).0
}

/// The checked tree, and whether the checker found a node with constant operands.
fn checked(src: &str) -> (TExpr, bool) {
    let parsed = crate::syntax::parse(src);
    assert!(parsed.diagnostics.is_empty(), "{src}: {:?}", parsed.diagnostics);
    let checked = crate::types::check(&parsed.expr, &Scope::open(), &FunctionTable::builtins(), 128);
    assert!(checked.diagnostics.is_empty(), "{src}: {:?}", checked.diagnostics);
    (checked.expr, checked.constant_operands)
}

/// A program in which nothing folds is compiled from the checked tree itself, borrowed;
/// one in which something does gets the folded tree, constants computed as before. The
/// checker says which is which ahead of folding (`constant_operands`: the engine does not
/// walk a tree to fold it when no node has operands that are all constants), and never
/// says "nothing" of a tree in which something folds.
#[test]
fn folding_copies_nothing_when_nothing_folds() {
    let (funcs, limits) = (FunctionTable::builtins(), Limits::default());
    for src in [
        "map(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), template={id: item.id, tag: item.tags[0]})",
        "pipeline(xs, [length(current), current + 1])",
        "if(a, [b, c.d], {e: -f})",
    ] {
        let (t, constant_operands) = checked(src);
        assert!(!constant_operands, "{src}: no node has constant operands");
        assert!(matches!(fold(&t, &funcs, &limits), Cow::Borrowed(_)), "{src}");
    }
    for (src, want) in [
        ("1 + 2", "3"),
        ("upper(\"a\")", "\"A\""),
        ("[x, 1 + 2]", "3"),
        ("map(xs, item.a + (2 * 3))", "6"),
        ("if(true, x, y)", "x"),
        ("{a: x, b: length([1, 2])}", "2"),
        ("{a: 7}.a", "7"),
        ("[5, 6][1]", "6"),
        ("not true", "false"),
        ("[x, []]", "[]"),
        ("filter(xs, \"item.a > 2 + 3\")", "5"),
    ] {
        let (t, constant_operands) = checked(src);
        assert!(constant_operands, "{src}: a node has constant operands");
        let folded = fold(&t, &funcs, &limits);
        assert!(matches!(folded, Cow::Owned(_)), "{src}");
        let listing = super::disassemble(&compile(&folded));
        assert!(listing.contains(want), "{src}: {listing}");
    }
}

/// The chunk of a condition template reads `item.a.b` through a path whose segments are the
/// ones the comparison's error origin holds (one allocation, two users); the fast form, made
/// with the call site, holds equal paths of its own. The chunk is compiled on first use.
#[test]
fn a_templates_paths_fast_form_and_origins_share_segments() {
    let chunk = compile(&typed("filter(xs, \"item.a.b > 1 and item.c == 'x'\")"));
    let Some(CallParam::Template(sub, _)) = chunk.calls.first().and_then(|c| c.param(1)) else {
        panic!("a template: {:?}", chunk.calls)
    };
    let Some(fast) = sub.fast() else { panic!("a template with a fast form: {sub:?}") };
    assert!(!sub.is_compiled(), "a template with a fast form is compiled on first use");
    let sub: &Chunk = sub;
    assert_eq!(sub.paths.len(), 2);
    let Fast::Pred(Pred::And(parts)) = fast else { panic!("{fast:?}") };
    for (part, path) in parts.iter().zip(&sub.paths) {
        let Pred::Cmp(_, p, _) = part else { panic!("{part:?}") };
        assert_eq!(p.segments(), path.segments(), "fast form and chunk: {p:?}");
    }
    let origins: Vec<_> = sub.origins.iter().filter_map(|(_, [o, _])| o.clone()).collect();
    assert_eq!(origins.len(), 2, "{:?}", sub.origins);
    for (o, path) in origins.iter().zip(&sub.paths) {
        assert!(Arc::ptr_eq(&o.segments, path.segments()), "origin and chunk: {o:?}");
    }
}

/// A template's chunk compiled on first use is the chunk compiling it with the call site
/// gave: the same listing (instructions, spans, locals), for templates with and without a
/// fast form, and the calling chunk's locals count the template's slot either way.
#[test]
fn a_chunk_compiled_on_first_use_is_the_one_compiled_at_once() {
    for (src, deferred) in [
        ("filter(xs, \"item.a.b > 1 and item.c == 'x'\")", true),
        ("map(filter(xs, 'item.a or not item.b'), 'item.c.d')", true),
        ("map(xs, map(item.ys, item.z + 1))", false),
        ("filter(xs, 'length(item.a) > 1')", false),
    ] {
        let t = typed(src);
        let chunk = compile(&t);
        let mut listed = 0;
        for call in &chunk.calls {
            for p in call.params.iter() {
                let (CallParam::Template(sub, slot), span) = (&p.pass, &p.span) else { continue };
                assert_eq!(!sub.is_compiled(), deferred && sub.fast().is_some(), "{src}");
                let Some(body) = template_body(&t, *span) else { panic!("{src}: no template at {span}") };
                let at_once = super::disassemble(&compile_at_once(body, *slot));
                assert_eq!(super::disassemble(sub), at_once, "{src}");
                assert!(sub.is_compiled());
                assert!(chunk.locals > *slot, "{src}: {} locals", chunk.locals);
                listed += 1;
            }
        }
        assert!(listed > 0, "{src}");
    }
}

/// `compile` of a template's body as the call site compiles it at once.
fn compile_at_once(body: &TExpr, slot: u32) -> Chunk {
    let mut c = compile(body);
    c.locals = c.locals.max(slot + 1);
    c
}

/// The body of the template written at `span` in `e`.
fn template_body(e: &TExpr, span: crate::span::Span) -> Option<&TExpr> {
    use crate::types::typed::{TArg, TKind};
    let TKind::Call(call) = &e.kind else { return None };
    call.args.iter().find_map(|a| match a {
        TArg::Template { body, .. } if body.span == span => Some(&**body),
        TArg::Template { body, .. } => template_body(body, span),
        TArg::Value(x) => template_body(x, span),
        _ => None,
    })
}

/// A call site's table has one entry per parameter, each with its argument's span and its
/// value's origin: the value of `xs` comes from `$.xs`, the other parameters' from nowhere
/// known, and a literal's from nowhere.
#[test]
fn a_call_sites_parameters_carry_their_spans_and_origins() {
    for (src, with_origins) in
        [("sort(array=xs, key_path=\"item.a\")", true), ("filter(xs, \"item.a > 1\")", true), ("length([1, 2])", false)]
    {
        let chunk = compile(&typed(src));
        let call = chunk.calls.first().expect("a call site");
        assert!(!call.params.is_empty(), "{src}");
        if with_origins {
            assert!(matches!(call.origin(0), Some(o) if matches!(&o.root, super::Root::Global(n) if &**n == "xs")));
            assert_eq!(call.arg_span(0).map(|s| &src[s.range()]), Some("xs"), "{src}");
        } else {
            assert!(call.origin(0).is_none(), "{src}");
            assert_eq!(call.arg_span(0).map(|s| &src[s.range()]), Some("[1, 2]"), "{src}");
        }
        assert!((1..call.params.len()).all(|i| call.origin(i).is_none()), "{src}");
        assert!(call.origin(call.params.len()).is_none() && call.arg_span(call.params.len()).is_none());
    }
}

/// A chunk's names past the few it scans are found through the compiler's index: each name
/// once, in first-use order, and every read of it by the same index (a scan per name made
/// compiling thousands of distinct names quadratic).
#[test]
fn many_names_are_interned_once_in_first_use_order() {
    let names: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
    let reversed: Vec<&str> = names.iter().rev().map(String::as_str).collect();
    let src = format!("[{}, {}, a.b]", names.join(", "), reversed.join(", "));
    let chunk = compile(&typed(&src));
    let got: Vec<&str> = chunk.names.iter().map(|n| &**n).collect();
    let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
    want.push("a");
    assert_eq!(got, want);
    let reads: Vec<u32> = chunk
        .code
        .iter()
        .filter_map(|op| match op {
            super::Op::Global(i) | super::Op::GlobalPath(i, _) => Some(*i),
            _ => None,
        })
        .collect();
    let want: Vec<u32> = (0..100).chain((0..100).rev()).chain([100]).collect();
    assert_eq!(reads, want);
}

/// A chunk's constants past the few it scans are found through the compiler's index: each
/// once, in first-use order, `1` and `1.0` apart; every read by the same index (a scan per
/// constant made `[x, 0, 1, …, 19999]` take 4.6 s of a debug build's compile).
#[test]
fn many_constants_are_interned_once_in_first_use_order() {
    use crate::value::Value;
    let ints: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let back: Vec<&str> = ints.iter().rev().map(String::as_str).collect();
    let src = format!("[x, {}, {}, 1.0, 1, 'a', 'a', [1], [1], 1.0]", ints.join(", "), back.join(", "));
    let chunk = compile(&typed(&src));
    let mut want: Vec<Value> = (0..100).map(Value::Int).collect();
    want.extend([Value::Float(1.0), Value::str("a")]);
    assert_eq!(chunk.consts.len(), want.len(), "{:?}", chunk.consts);
    for (got, want) in chunk.consts.iter().zip(&want) {
        assert!(got == want && matches!(got, Value::Float(_)) == matches!(want, Value::Float(_)), "{got:?} {want:?}");
    }
    let reads: Vec<u32> = chunk
        .code
        .iter()
        .filter_map(|op| match op {
            super::Op::Const(i) => Some(*i),
            _ => None,
        })
        .collect();
    let want: Vec<u32> = (0..100).chain((0..100).rev()).chain([100, 1, 101, 101, 1, 1, 100]).collect();
    assert_eq!(reads, want);
}

/// The same of paths: `x.f0 … x.f99` read twice share one path each, through the index past
/// the few scanned.
#[test]
fn many_paths_are_interned_once() {
    let fields: Vec<String> = (0..100).map(|i| format!("x.f{i}")).collect();
    let src = format!("[{}, {}]", fields.join(", "), fields.join(", "));
    let chunk = compile(&typed(&src));
    assert_eq!(chunk.paths.len(), 100);
    let reads: Vec<u32> = chunk
        .code
        .iter()
        .filter_map(|op| match op {
            super::Op::GlobalPath(_, p) => Some(*p),
            _ => None,
        })
        .collect();
    let want: Vec<u32> = (0..100).chain(0..100).collect();
    assert_eq!(reads, want);
}

/// 100,000 distinct constants, names and paths compile (a hang guard, not a measure: a
/// scan per entry took minutes here).
#[test]
fn a_chunk_of_many_distinct_entries_compiles() {
    for item in ["{i}", "'s{i}'", "v{i}", "x.f{i}"] {
        let src = format!(
            "[x, {}]",
            (0..100_000).map(|i| item.replace("{i}", &i.to_string())).collect::<Vec<_>>().join(", ")
        );
        let e = typed(&src);
        let started = std::time::Instant::now();
        let chunk = compile(&e);
        assert!(chunk.code.len() > 100_000, "{item}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{item}: {:?}", started.elapsed());
    }
}

/// A chunk's objects share one table of keys, each object reading its own run of it
/// (`Op::Object(k, n)`): nested and side by side, every object gets its own keys, in the
/// listing and when it is built.
#[test]
fn objects_read_their_own_runs_of_the_chunks_keys() {
    use crate::value::Value;
    let src = "[{a: {b: x, c: 2}, d: 3}, {e: x}, {}]";
    let chunk = compile(&typed(src));
    let keys: Vec<&str> = chunk.keys.iter().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["b", "c", "a", "d", "e"]);
    let listing = super::disassemble(&chunk);
    for want in ["{b, c}", "{a, d}", "{e}", "{}"] {
        assert!(listing.contains(want), "{want}: {listing}");
    }
    let program = crate::Engine::new().compile(src).expect("compiles");
    let got = program.eval(&Value::object_from([("x", Value::from(1))])).expect("evaluates");
    let want = Value::from(&serde_json::json!([{"a": {"b": 1, "c": 2}, "d": 3}, {"e": 1}, {}]));
    assert_eq!(got, want);
}
