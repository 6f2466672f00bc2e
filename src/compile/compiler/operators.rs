//! Operators: unary, binary, and `and`/`or`, which short-circuit with a jump.

use super::places::field_root;
use super::Compiler;
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, UnaryOp};
use crate::types::typed::{TExpr, TKind};

impl Compiler {
    /// `-x`, `not x`.
    pub(super) fn unary(&mut self, op: UnaryOp, x: &TExpr, span: Span) {
        self.expr(x);
        let at = self.emit(if op == UnaryOp::Not { Op::Not } else { Op::Neg }, span);
        self.record(at, [self.origin(x), None]);
    }

    /// `l and r`, `l or r`: the right operand runs only when the left does not decide.
    pub(super) fn short_circuit(&mut self, op: BinaryOp, l: &TExpr, r: &TExpr, span: Span) {
        self.expr(l);
        let j = self.emit(if op == BinaryOp::And { Op::AndJump(0) } else { Op::OrJump(0) }, span);
        self.expr(r);
        self.emit(Op::ToBool, span);
        self.patch(j);
    }

    /// Every other binary operator.
    pub(super) fn binary(&mut self, op: BinaryOp, l: &TExpr, r: &TExpr, span: Span) {
        // `item.field <op> constant` is the common shape of filter conditions:
        // compare in place, without cloning the field.
        if let (TKind::Field(..), Some(c)) = (&l.kind, r.as_const()) {
            let (root, len) = field_root(l);
            if let TKind::Local(slot) = root.kind {
                self.use_slot(slot);
                let p = self.field_path(l, len, None);
                let c = self.constant(c.clone());
                let at = self.emit(Op::CmpLocalPathConst(op, slot, p, c), span);
                self.record(at, [self.origin(l), None]);
                return;
            }
        }
        self.expr(l);
        self.expr(r);
        let at = self.emit(Op::Binary(op), span);
        self.record(at, [self.origin(l), self.origin(r)]);
    }
}
