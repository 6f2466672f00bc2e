//! The allocations of trees already dropped, kept per thread for the next parse.
//!
//! A compile parses its expression and its template strings into trees it drops once they
//! are checked: every field, operator, argument list and entry list of those trees is an
//! allocation made and freed again, and a program compiled after another makes the same
//! ones. [`recycle`] takes a tree apart and keeps its boxes and lists (emptied, at most
//! [`KEPT`] of each kind); the fast parser builds its nodes in them ([`boxed`], [`pair`],
//! [`args`], …) and allocates only when none is kept. Nothing is shared: a kept box is
//! overwritten with its new node, a kept list is empty, so a tree built from kept
//! allocations is equal to one built from new ones. No `unsafe`: a `Box` is reused by
//! assigning through it.

use std::cell::RefCell;

use super::ast::{Arg, Expr, ExprKind, Name};
use crate::span::Spanned;

/// How many allocations of each kind a thread keeps (a larger tree's rest is freed).
const KEPT: usize = 64;

/// A list longer than this is freed, not kept (a kept list holds its capacity).
const KEPT_CAPACITY: usize = 16;

/// The allocations kept, by kind (the boxes themselves are what is kept, hence lists of
/// boxes).
#[derive(Default)]
#[allow(clippy::vec_box)]
pub(super) struct Pool {
    exprs: Vec<Box<Expr>>,
    pairs: Vec<Box<[Expr; 2]>>,
    args: Vec<Vec<Arg>>,
    items: Vec<Vec<Expr>>,
    entries: Vec<Vec<(Spanned<Name>, Expr)>>,
}

thread_local! {
    /// On the heap, made at the thread's first use: held in the thread-local block itself,
    /// it would take static TLS, of which a library loaded with `dlopen` (the Python
    /// extension module) has little (see `fast::NAMES`).
    static POOL: RefCell<Option<Box<Pool>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's kept allocations (`None` while they are in use: a parse
/// inside a parse, which then allocates as usual). A parse borrows them once, not per node.
pub(super) fn with<R>(f: impl FnOnce(Option<&mut Pool>) -> R) -> R {
    POOL.with(|p| match p.try_borrow_mut() {
        Ok(mut p) => f(Some(p.get_or_insert_with(Box::default))),
        Err(_) => f(None),
    })
}

/// `Box::new(e)`, in a kept box when there is one.
pub(crate) fn boxed(e: Expr) -> Box<Expr> {
    with(|p| match p {
        Some(p) => p.boxed(e),
        None => Box::new(e),
    })
}

impl Pool {
    /// `Box::new(e)`, in a kept box when there is one.
    pub(super) fn boxed(&mut self, e: Expr) -> Box<Expr> {
        match self.exprs.pop() {
            Some(mut b) => {
                *b = e;
                b
            }
            None => Box::new(e),
        }
    }

    /// `Box::new([a, b])`, in a kept box when there is one.
    pub(super) fn pair(&mut self, a: Expr, b: Expr) -> Box<[Expr; 2]> {
        match self.pairs.pop() {
            Some(mut bx) => {
                *bx = [a, b];
                bx
            }
            None => Box::new([a, b]),
        }
    }

    /// An empty list of arguments (a kept one when there is one).
    pub(super) fn args(&mut self) -> Vec<Arg> {
        self.args.pop().unwrap_or_default()
    }

    /// An empty list of items.
    pub(super) fn items(&mut self) -> Vec<Expr> {
        self.items.pop().unwrap_or_default()
    }

    /// An empty list of object entries.
    pub(super) fn entries(&mut self) -> Vec<(Spanned<Name>, Expr)> {
        self.entries.pop().unwrap_or_default()
    }
}

/// Drops `e`, keeping its boxes and lists for the next parse on this thread. The same as
/// dropping it when the pool is in use or full.
pub(crate) fn recycle(mut e: Expr) {
    with(|p| {
        if let Some(p) = p {
            give(p, &mut e.kind);
        }
    });
}

/// Keeps `list` (emptied) in `kept` when there is room.
fn keep<T>(kept: &mut Vec<Vec<T>>, mut list: Vec<T>) {
    list.clear();
    if kept.len() < KEPT && list.capacity() <= KEPT_CAPACITY {
        kept.push(list);
    }
}

/// Takes the node `kind` apart into `pool`, children first, in place (no node is moved
/// out of its box), and leaves `null` in its place. Recursion is bounded by the tree's
/// height (the parser's nesting limit), as dropping it is.
fn give(pool: &mut Pool, kind: &mut ExprKind) {
    match kind {
        ExprKind::Field(b, _) | ExprKind::Unary(_, b) => give(pool, &mut b.kind),
        ExprKind::Index(b) | ExprKind::Binary(_, b) => {
            give(pool, &mut b[0].kind);
            give(pool, &mut b[1].kind);
        }
        ExprKind::List(items) => items.iter_mut().for_each(|x| give(pool, &mut x.kind)),
        ExprKind::Object(entries) => entries.iter_mut().for_each(|(_, x)| give(pool, &mut x.kind)),
        ExprKind::Call(call) => call.args.iter_mut().for_each(|a| give(pool, &mut a.value.kind)),
        // A leaf: dropped here (nothing of it is kept).
        _ => {}
    }
    // Its children are `null` now: keeping its box or list keeps nothing else.
    match std::mem::replace(kind, ExprKind::Null) {
        ExprKind::Field(b, _) | ExprKind::Unary(_, b) if pool.exprs.len() < KEPT => pool.exprs.push(b),
        ExprKind::Index(b) | ExprKind::Binary(_, b) if pool.pairs.len() < KEPT => pool.pairs.push(b),
        ExprKind::List(items) => keep(&mut pool.items, items),
        ExprKind::Object(entries) => keep(&mut pool.entries, entries),
        ExprKind::Call(call) => keep(&mut pool.args, call.args),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    /// How many allocations this thread keeps, by kind.
    fn kept() -> [usize; 5] {
        super::with(|p| {
            let p = p.expect("the pool is free");
            [p.exprs.len(), p.pairs.len(), p.args.len(), p.items.len(), p.entries.len()]
        })
    }

    /// A tree parsed in kept allocations is the tree parsed in new ones, and so is every
    /// tree after it, whatever shapes came before; a parse takes what the last tree left.
    #[test]
    fn trees_built_in_kept_allocations_are_the_same() {
        let sources = [
            "map(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), template={id: item.id, email: item.profile.email, tag: item.tags[0]})",
            "item.status == 'active' and item.score > 50 and item.profile.age < 40",
            "[1, [2, [3, {a: -x.y[0].z, b: not (a or b)}]], f(g(h(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18)))]",
            "if(a, [1, 2.5, null, true], {})",
        ];
        let fresh: Vec<_> = sources.iter().map(|s| parse(s)).collect();
        for round in 0..3 {
            for (s, want) in sources.iter().zip(&fresh) {
                let before: usize = kept().iter().sum();
                let got = parse(s);
                assert_eq!(got.expr, want.expr, "round {round}: {s}");
                if round > 0 {
                    assert!(kept().iter().sum::<usize>() < before, "round {round}: {s} took nothing kept");
                }
                super::recycle(got.expr);
            }
        }
        assert!(kept().iter().all(|&n| n > 0), "every kind is kept: {:?}", kept());
    }
}
