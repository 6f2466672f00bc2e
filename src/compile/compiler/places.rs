//! Places in the data: field chains (`item.a.b`, `REF:step.x`) and indexing, and where a
//! value comes from ([`origin_of`]) for run-time error locations.

use std::sync::Arc;

use super::Compiler;
use crate::compile::chunk::{Origin, Root};
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::ast::Name;
use crate::types::typed::{TExpr, TKind};

/// A field chain's root and its number of segments: `item.a.b` → (`item`, 2).
pub(super) fn field_root(e: &TExpr) -> (&TExpr, usize) {
    let mut n = 0;
    let mut cur = e;
    while let TKind::Field(inner, _) = &cur.kind {
        n += 1;
        cur = inner;
    }
    (cur, n)
}

/// The `n` segments of the field chain `e`, after `lead` when given: `item.a.b` → [a, b].
/// Allocated once at the final size (the list usually becomes a boxed slice, which spare
/// capacity would cost a reallocation), and only once the caller knows it wants them.
pub(super) fn field_segments(e: &TExpr, n: usize, lead: Option<&Name>) -> Vec<Name> {
    let mut segs = Vec::with_capacity(n + usize::from(lead.is_some()));
    segs.extend(lead.cloned());
    let from = segs.len();
    let mut cur = e;
    while let TKind::Field(inner, seg) = &cur.kind {
        segs.push(seg.clone());
        cur = inner;
    }
    segs[from..].reverse();
    segs
}

/// Where the value of `e` comes from, when that is a fixed place in the data.
pub(crate) fn origin_of(e: &TExpr) -> Option<Arc<Origin>> {
    let (root, n) = field_root(e);
    let root = match &root.kind {
        TKind::Global(n) => Root::Global(n.clone()),
        TKind::Local(s) => Root::Local(*s),
        TKind::Ref(ctx, rsegs) => {
            let mut all = Vec::with_capacity(rsegs.len() + n);
            all.extend(rsegs.iter().cloned());
            all.extend(field_segments(e, n, None));
            return Some(Arc::new(Origin { root: Root::Ref(ctx.clone()), segments: all.into_boxed_slice() }));
        }
        _ => return None,
    };
    Some(Arc::new(Origin { root, segments: field_segments(e, n, None).into_boxed_slice() }))
}

impl Compiler {
    /// `a.b.c`: one path instruction, inline-cached, merged into its root when the root is a variable, a local or a `REF`.
    pub(super) fn field(&mut self, e: &TExpr, span: Span) {
        let (root, len) = field_root(e);
        if let TKind::Global(n) = &root.kind {
            // The variable's name leads the path, so its lookup is inline-cached like
            // the fields after it.
            let p = self.chunk.path(field_segments(e, len, Some(n)));
            let n = self.chunk.name(n);
            self.emit(Op::GlobalPath(n, p), span);
            return;
        }
        let segs = field_segments(e, len, None);
        match &root.kind {
            TKind::Local(s) => {
                self.use_slot(*s);
                let p = self.chunk.path(segs);
                self.emit(Op::LocalPath(*s, p), span);
            }
            // `(REF:step).response` is a field access, not the response alias of
            // `REF:step.response`: merge only when the alias cannot change meaning.
            TKind::Ref(ctx, rsegs) if !rsegs.is_empty() || segs.first().is_none_or(|s| &**s != "response") => {
                let n = self.chunk.name(ctx);
                let mut all = rsegs.clone();
                all.extend(segs);
                let p = self.chunk.path(all);
                self.emit(Op::Ref(n, p), span);
            }
            _ => {
                self.expr(root);
                let p = self.chunk.path(segs);
                let at = self.emit(Op::Path(p), span);
                self.record(at, [origin_of(root), None]);
            }
        }
    }

    /// `v[k]`.
    pub(super) fn index(&mut self, v: &TExpr, k: &TExpr, span: Span) {
        self.expr(v);
        self.expr(k);
        let at = self.emit(Op::Index, span);
        self.record(at, [origin_of(v), origin_of(k)]);
    }
}
