//! Control flow compiled inline: `if` (jumps; only the chosen branch runs) and `pipeline`
//! (each operation sees `current` in a local slot).

use super::Compiler;
use crate::compile::op::Op;
use crate::span::Span;
use crate::types::typed::TExpr;

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

    /// `pipeline(init, [ops])`.
    pub(super) fn pipeline(&mut self, init: &TExpr, slot: u32, ops: &[TExpr]) {
        self.use_slot(slot);
        self.expr(init);
        for op in ops {
            self.emit(Op::SetLocal(slot), op.span);
            self.expr(op);
        }
    }
}
