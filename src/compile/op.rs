//! The instruction set. Each instruction's doc line gives its stack effect as
//! `[before] → [after]` (top of stack on the right).

use crate::syntax::ast::BinaryOp;

/// One instruction. Operands index into the chunk's tables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// `[] → [consts[i]]`
    Const(u32),
    /// `[] → [vars[names[i]]]` (`null` when absent)
    Global(u32),
    /// `[] → [locals[slot]]`
    Local(u32),
    /// `[] → [vars . paths[p]…]`: a variable (`names[n]`, also the path's first segment)
    /// followed by field segments, read without cloning the intermediate values.
    GlobalPath(u32, u32),
    /// `[] → [locals[slot] . paths[p]…]`
    LocalPath(u32, u32),
    /// `[] → [refs[names[n]] . paths[p]…]`: `REF:context.segments`
    Ref(u32, u32),
    /// `[v] → [v . paths[p]…]`
    Path(u32),
    /// `[v, key] → [v[key]]`
    Index,
    /// `[a1 … an] → [[a1, …, an]]`
    List(u32),
    /// `[v1 … vn] → [{keys[k]: v1, …, keys[k + n - 1]: vn}]` (the chunk's keys from `k`, `n` of
    /// them: one table for all the chunk's objects)
    Object(u32, u32),
    /// `[v] → [not truthy(v)]`
    Not,
    /// `[v] → [-v]`
    Neg,
    /// `[a, b] → [a op b]` for every operator but `and` / `or`
    Binary(BinaryOp),
    /// `[] → [locals[slot].paths[p] op consts[c]]`: a fused comparison of an element's
    /// field with a constant, the common shape of `filter` conditions.
    CmpLocalPathConst(BinaryOp, u32, u32, u32),
    /// `[v] → [truthy(v)]`
    ToBool,
    /// `[] → []`, continue at `target`
    Jump(u32),
    /// `[v] → []`, continue at `target` when `v` is falsy
    JumpIfFalse(u32),
    /// `[v] → [false]` and jump when `v` is falsy; `[v] → []` otherwise (`and`)
    AndJump(u32),
    /// `[v] → [true]` and jump when `v` is truthy; `[v] → []` otherwise (`or`)
    OrJump(u32),
    /// `[v] → []`, `locals[slot] = v` (`pipeline`'s `current`)
    SetLocal(u32),
    /// `[a1 … an] → [f(a1 … an)]`: calls `calls[i]` with one stack value per parameter
    /// (a placeholder `null` for template parameters, the template text for dynamic ones)
    Call(u32),
    /// `[b1 … bm, a2 … an] → [f(g(b1 … bm), a2 … an)]`: calls `calls[o]` (`f`: `map` or
    /// `sum`) on the list `calls[i]` (`g`: `filter` or `sort`) gives, without building
    /// that list: `g` hands over its elements borrowed. Fuel, memory and errors are those
    /// of the two calls. The stack holds `g`'s arguments, then `f`'s but the first.
    Fused(u32, u32),
    /// `[a1 … an] → [group_by(a1 … an)]` for `calls[i]`, a `group_by` whose result the next
    /// operation of its `pipeline` reads only through `keys` of it and `length` of each of
    /// its `values`: the groups hold a `null` for each element (same keys, same sizes, same
    /// fuel, memory and errors), so no grouped element is shared. A plain `CALL` when the
    /// table's `group_by`, `keys`, `values`, `map` or `length` is not the built-in.
    CallGroupsCounted(u32),
}

impl Op {
    /// The instruction's name in listings.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Const(_) => "CONST",
            Op::Global(_) => "GLOBAL",
            Op::Local(_) => "LOCAL",
            Op::GlobalPath(..) => "GLOBAL_PATH",
            Op::LocalPath(..) => "LOCAL_PATH",
            Op::Ref(..) => "REF",
            Op::Path(_) => "PATH",
            Op::Index => "INDEX",
            Op::List(_) => "LIST",
            Op::Object(..) => "OBJECT",
            Op::Not => "NOT",
            Op::Neg => "NEG",
            Op::Binary(_) => "BINARY",
            Op::CmpLocalPathConst(..) => "CMP_LOCAL_PATH_CONST",
            Op::ToBool => "TO_BOOL",
            Op::Jump(_) => "JUMP",
            Op::JumpIfFalse(_) => "JUMP_IF_FALSE",
            Op::AndJump(_) => "AND_JUMP",
            Op::OrJump(_) => "OR_JUMP",
            Op::SetLocal(_) => "SET_LOCAL",
            Op::Call(_) => "CALL",
            Op::Fused(..) => "CALL_FUSED",
            Op::CallGroupsCounted(_) => "CALL_GROUPS_COUNTED",
        }
    }
}
