//! Template text met at run time (a template given by name, e.g. `map(xs, template=t)`
//! with `t` holding `"item.a"`): parsed and type-checked here, then either folded and
//! compiled for the VM (`engine.rs`) or walked as it is by the reference evaluator
//! (`reference.rs`). This is the only step the two share, so a folding or code-generation
//! bug in a run-time template shows up in the differential tests.

use crate::functions::FunctionTable;
use crate::runtime::Limits;
use crate::syntax;
use crate::syntax::ast::Name;
use crate::types::{self, typed::TExpr, Scope};

/// Parses and checks template text: `relative` texts may be a bare path (`"a.b"` for
/// `item.a.b`); `slot` is the local the template's element is bound to, as `item` and as
/// `alias` when the call named it (`as`). The error is the first error diagnostic's message.
pub(crate) fn check_text(
    source: &str,
    relative: bool,
    slot: u32,
    alias: Option<&Name>,
    funcs: &FunctionTable,
    limits: &Limits,
) -> Result<TExpr, String> {
    let expr = match relative.then(|| types::relative_path(source, alias.map(|a| &**a))).flatten() {
        Some(e) => e,
        None => {
            let p = syntax::parse_with_limit(source, limits.max_depth);
            if let Some(d) = p.diagnostics.iter().find(|d| d.is_error()) {
                return Err(d.message.clone());
            }
            p.expr
        }
    };
    let checked = types::check_template(&expr, &Scope::open(), funcs, limits.max_depth, slot, alias);
    if let Some(d) = checked.diagnostics.iter().find(|d| d.is_error()) {
        return Err(d.message.clone());
    }
    Ok(checked.expr)
}
