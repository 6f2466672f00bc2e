//! Places in the data: field chains (`item.a.b`, `REF:step.x`) and indexing, and where a
//! value comes from (`Compiler::origin`) for run-time error locations.

use super::{Compiler, SCANNED};
use crate::compile::chunk::{Origin, Root};
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::ast::Name;
use crate::types::typed::{TExpr, TKind};
use crate::value::{no_segments, Path, Segments};

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

/// The segment `depth` fields below the top of the field chain `e` (0: its last one).
fn segment_at(e: &TExpr, depth: usize) -> Name {
    let mut cur = e;
    for _ in 0..depth {
        if let TKind::Field(inner, _) = &cur.kind {
            cur = inner;
        }
    }
    match &cur.kind {
        TKind::Field(_, seg) => seg.clone(),
        // Never: callers ask only for the segments `field_root` counted.
        _ => Name::from(""),
    }
}

/// The `n` segments of the field chain `e` in source order, each found from the top: an
/// iterator of known length, so a list collected from it is allocated once, at its final
/// size (quadratic in the chain's length, which is a handful; see [`field_segments`]).
fn chain_segments(e: &TExpr, n: usize) -> impl Iterator<Item = Name> + '_ {
    (0..n).rev().map(move |d| segment_at(e, d))
}

/// The `n` segments of the field chain `e`, after `lead` when given: `item.a.b` → [a, b].
/// One allocation (none for no segments), and only once the caller knows it wants them.
pub(super) fn field_segments(e: &TExpr, n: usize, lead: Option<&Name>) -> Segments {
    if n == 0 && lead.is_none() {
        return no_segments();
    }
    if n > 16 {
        // A long chain: walked once into a list, then copied.
        let mut segs: Vec<Name> = Vec::with_capacity(n + usize::from(lead.is_some()));
        let mut cur = e;
        while let TKind::Field(inner, seg) = &cur.kind {
            segs.push(seg.clone());
            cur = inner;
        }
        segs.extend(lead.cloned());
        segs.reverse();
        return segs.into();
    }
    lead.into_iter().cloned().chain(chain_segments(e, n)).collect()
}

/// Whether `segs` are `lead` (when given) and the `n` segments of the field chain `e`.
fn chain_is(segs: &[Name], e: &TExpr, n: usize, lead: Option<&Name>) -> bool {
    let k = usize::from(lead.is_some());
    if segs.len() != n + k || lead.is_some_and(|l| segs.first() != Some(l)) {
        return false;
    }
    let mut cur = e;
    for want in segs[k..].iter().rev() {
        match &cur.kind {
            TKind::Field(inner, seg) if seg == want => cur = inner,
            _ => return false,
        }
    }
    true
}

/// The `n` segments of the field chain `e`: those of an equal path in `paths` (shared, no
/// allocation), else new ones.
fn shared_segments(e: &TExpr, n: usize, paths: &[Path]) -> Segments {
    if n == 0 {
        return no_segments();
    }
    // Not searched in a chunk of many paths: the sharing saves an allocation, the search
    // would make the compile quadratic in them.
    if paths.len() > SCANNED {
        return field_segments(e, n, None);
    }
    match paths.iter().find(|p| chain_is(p, e, n, None)) {
        Some(p) => p.segments().clone(),
        None => field_segments(e, n, None),
    }
}

/// Where the value of `e` comes from, when that is a fixed place in the data; its segments
/// shared with an equal path of `paths` when there is one.
fn origin_in(e: &TExpr, paths: &[Path]) -> Option<Origin> {
    let (root, n) = field_root(e);
    let root = match &root.kind {
        TKind::Global(n) => Root::Global(n.clone()),
        TKind::Local(s) => Root::Local(*s),
        TKind::Ref(ctx, rsegs) => {
            let all = if rsegs.is_empty() && n == 0 {
                no_segments()
            } else {
                rsegs.iter().cloned().chain(chain_segments(e, n)).collect()
            };
            return Some(Origin { root: Root::Ref(ctx.clone()), segments: all });
        }
        _ => return None,
    };
    Some(Origin { root, segments: shared_segments(e, n, paths) })
}

impl Compiler {
    /// `a.b.c`: one path instruction, inline-cached, merged into its root when the root is a variable, a local or a `REF`.
    pub(super) fn field(&mut self, e: &TExpr, span: Span) {
        let (root, len) = field_root(e);
        if let TKind::Global(n) = &root.kind {
            // The variable's name leads the path, so its lookup is inline-cached like
            // the fields after it.
            let p = self.field_path(e, len, Some(n));
            let n = self.name(n);
            self.emit(Op::GlobalPath(n, p), span);
            return;
        }
        match &root.kind {
            TKind::Local(s) => {
                self.use_slot(*s);
                let p = self.field_path(e, len, None);
                self.emit(Op::LocalPath(*s, p), span);
            }
            // `(REF:step).response` is a field access, not the response alias of
            // `REF:step.response`: merge only when the alias cannot change meaning.
            TKind::Ref(ctx, rsegs) if !rsegs.is_empty() || len == 0 || &*segment_at(e, len - 1) != "response" => {
                let n = self.name(ctx);
                let p = self.path(rsegs.iter().cloned().chain(chain_segments(e, len)).collect());
                self.emit(Op::Ref(n, p), span);
            }
            _ => {
                self.expr(root);
                let p = self.field_path(e, len, None);
                let at = self.emit(Op::Path(p), span);
                self.record(at, [self.origin(root), None]);
            }
        }
    }

    /// The chunk's path for the field chain `e` (its `n` segments, after `lead` when
    /// given): an equal one already there, else a new one.
    pub(super) fn field_path(&mut self, e: &TExpr, n: usize, lead: Option<&Name>) -> u32 {
        // Past a few paths, through the chunk's index ([`Compiler::path`]), not a scan.
        if self.chunk.paths.len() > SCANNED {
            return self.path(field_segments(e, n, lead));
        }
        if let Some(i) = self.chunk.paths.iter().position(|p| chain_is(p, e, n, lead)) {
            return i as u32;
        }
        self.chunk.paths.push(Path::shared(field_segments(e, n, lead)));
        (self.chunk.paths.len() - 1) as u32
    }

    /// Where the value of `e` comes from, when that is a fixed place in the data
    /// ([`origin_in`]), its segments shared with the chunk's path that reads them.
    pub(super) fn origin(&self, e: &TExpr) -> Option<Origin> {
        origin_in(e, &self.chunk.paths)
    }

    /// `v[k]`.
    pub(super) fn index(&mut self, v: &TExpr, k: &TExpr, span: Span) {
        self.expr(v);
        self.expr(k);
        let at = self.emit(Op::Index, span);
        self.record(at, [self.origin(v), self.origin(k)]);
    }
}
