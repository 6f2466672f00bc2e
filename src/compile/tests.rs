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
    let parsed = crate::syntax::parse(src);
    assert!(parsed.diagnostics.is_empty(), "{src}: {:?}", parsed.diagnostics);
    let checked = crate::types::check(&parsed.expr, &Scope::open(), &FunctionTable::builtins(), 128);
    assert!(checked.diagnostics.is_empty(), "{src}: {:?}", checked.diagnostics);
    checked.expr
}

/// A program in which nothing folds is compiled from the checked tree itself, borrowed;
/// one in which something does gets the folded tree, constants computed as before.
#[test]
fn folding_copies_nothing_when_nothing_folds() {
    let (funcs, limits) = (FunctionTable::builtins(), Limits::default());
    for src in [
        "map(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), template={id: item.id, tag: item.tags[0]})",
        "pipeline(xs, [length(current), current + 1])",
        "if(a, [b, c.d], {e: -f})",
    ] {
        let t = typed(src);
        assert!(matches!(fold(&t, &funcs, &limits), Cow::Borrowed(_)), "{src}");
    }
    for (src, want) in [
        ("1 + 2", "3"),
        ("upper(\"a\")", "\"A\""),
        ("[x, 1 + 2]", "3"),
        ("map(xs, item.a + (2 * 3))", "6"),
        ("if(true, x, y)", "x"),
        ("{a: x, b: length([1, 2])}", "2"),
    ] {
        let t = typed(src);
        let folded = fold(&t, &funcs, &limits);
        assert!(matches!(folded, Cow::Owned(_)), "{src}");
        let listing = super::disassemble(&compile(&folded));
        assert!(listing.contains(want), "{src}: {listing}");
    }
}

/// The chunk of a condition template reads `item.a.b` through a path whose segments are the
/// ones its fast form and the comparison's error origin hold (one allocation, three users).
#[test]
fn a_templates_paths_fast_form_and_origins_share_segments() {
    let chunk = compile(&typed("filter(xs, \"item.a.b > 1 and item.c == 'x'\")"));
    let Some(CallParam::Template(sub, _, Some(fast))) = chunk.calls.first().and_then(|c| c.params.get(1)) else {
        panic!("a template with a fast form: {:?}", chunk.calls)
    };
    let sub: &Chunk = sub;
    assert_eq!(sub.paths.len(), 2);
    let Fast::Pred(Pred::And(parts)) = &**fast else { panic!("{fast:?}") };
    for (part, path) in parts.iter().zip(&sub.paths) {
        let Pred::Cmp(_, p, _) = part else { panic!("{part:?}") };
        assert!(Arc::ptr_eq(p.segments(), path.segments()), "fast form and chunk: {p:?}");
    }
    let origins: Vec<_> = sub.origins.iter().filter_map(|(_, [o, _])| o.clone()).collect();
    assert_eq!(origins.len(), 2, "{:?}", sub.origins);
    for (o, path) in origins.iter().zip(&sub.paths) {
        assert!(Arc::ptr_eq(&o.segments, path.segments()), "origin and chunk: {o:?}");
    }
}
