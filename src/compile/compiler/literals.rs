//! Literals: `[…]` and `{…}` (constants and names are one instruction each, in the
//! dispatcher).

use super::Compiler;
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::ast::Name;
use crate::types::typed::TExpr;
use crate::value::SmolStr;

impl Compiler {
    /// `[a, b]`: the elements, then one instruction that collects them.
    pub(super) fn list(&mut self, items: &[TExpr], span: Span) {
        for x in items {
            self.expr(x);
        }
        self.emit(Op::List(items.len() as u32), span);
    }

    /// `{k: v}`: the values in order, then one instruction with the keys.
    pub(super) fn object(&mut self, entries: &[(Name, TExpr)], span: Span) {
        for (_, v) in entries {
            self.expr(v);
        }
        let k = self.chunk.keys.len() as u32;
        self.chunk.keys.extend(entries.iter().map(|(k, _)| SmolStr::new(k)));
        self.emit(Op::Object(k, entries.len() as u32), span);
    }
}
