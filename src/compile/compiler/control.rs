//! Control flow compiled inline: `if` (jumps; only the chosen branch runs) and `pipeline`
//! (each operation sees `current` in a local slot).

use super::Compiler;
use crate::compile::op::Op;
use crate::span::Span;
use crate::types::typed::{TArg, TCall, TExpr, TKind};

impl Compiler {
    /// `if(c, t, f)`.
    pub(super) fn if_(&mut self, c: &TExpr, t: &TExpr, f: &TExpr, span: Span) {
        self.expr(c);
        let j = self.emit(Op::JumpIfFalse(0), span);
        self.expr(t);
        let end = self.emit(Op::Jump(0), span);
        self.patch(j);
        self.expr(f);
        self.patch(end);
    }

    /// `pipeline(init, [ops])`. A `group_by` whose groups the first operation only counts
    /// runs as [`Op::CallGroupsCounted`].
    pub(super) fn pipeline(&mut self, init: &TExpr, slot: u32, ops: &[TExpr]) {
        self.use_slot(slot);
        match (&init.kind, ops.first()) {
            (TKind::Call(call), Some(first))
                if &*call.name == "group_by"
                    && !call.args.iter().any(|a| matches!(a, TArg::Dynamic { .. }))
                    && only_counted(first, slot) =>
            {
                let i = self.call_site(call, init.span, false);
                self.emit(Op::CallGroupsCounted(i), init.span);
            }
            _ => self.expr(init),
        }
        for op in ops {
            self.emit(Op::SetLocal(slot), op.span);
            self.expr(op);
        }
    }
}

/// Whether `e` reads the object in `slot` only through `keys(slot)` and
/// `map(array=values(slot), template=length(item))`: what the object's lists hold is never
/// read, only how many elements each has. Conservative: a template by name anywhere in `e`
/// (compiled at run time) answers no.
fn only_counted(e: &TExpr, slot: u32) -> bool {
    let is_slot = |a: Option<&TArg>| matches!(a, Some(TArg::Value(TExpr { kind: TKind::Local(s), .. })) if *s == slot);
    fn call_of<'t>(a: Option<&'t TArg>, name: &str) -> Option<&'t TCall> {
        match a {
            Some(TArg::Value(TExpr { kind: TKind::Call(c), .. })) if &*c.name == name => Some(c),
            _ => None,
        }
    }
    match &e.kind {
        TKind::Local(s) => *s != slot,
        TKind::Const(_) | TKind::Global(_) | TKind::Ref(..) | TKind::Error => true,
        TKind::Field(x, _) | TKind::Unary(_, x) => only_counted(x, slot),
        TKind::Index(ab) | TKind::Binary(_, ab) => ab.iter().all(|x| only_counted(x, slot)),
        TKind::List(items) => items.iter().all(|x| only_counted(x, slot)),
        TKind::Object(entries) => entries.iter().all(|(_, x)| only_counted(x, slot)),
        TKind::If(cab) => cab.iter().all(|x| only_counted(x, slot)),
        TKind::Pipeline { init, ops, .. } => only_counted(init, slot) && ops.iter().all(|x| only_counted(x, slot)),
        TKind::Call(c) if &*c.name == "keys" && c.args.len() == 1 && is_slot(c.args.first()) => true,
        TKind::Call(c) if &*c.name == "map" && c.args.len() == 2 => {
            let counted = call_of(c.args.first(), "values")
                .is_some_and(|v| v.args.len() == 1 && is_slot(v.args.first()))
                && matches!(c.args.get(1), Some(TArg::Template { body, slot: item })
                    if matches!(&body.kind, TKind::Call(l) if &*l.name == "length" && l.args.len() == 1
                        && matches!(l.args.first(), Some(TArg::Value(TExpr { kind: TKind::Local(s), .. })) if s == item)));
            counted || args_only_counted(c, slot)
        }
        TKind::Call(c) => args_only_counted(c, slot),
    }
}

/// Whether every argument of `c` reads `slot` only as [`only_counted`] allows.
fn args_only_counted(c: &TCall, slot: u32) -> bool {
    c.args.iter().all(|a| match a {
        TArg::Value(x) => only_counted(x, slot),
        TArg::Template { body, .. } => only_counted(body, slot),
        TArg::Dynamic { .. } => false,
        TArg::Absent => true,
    })
}
