//! Template text met at run time (a template given by name, e.g. `map(xs, template=t)`
//! with `t` holding `"item.a"`): parsed and type-checked here, then either folded and
//! compiled for the VM (`engine.rs`) or walked as it is by the reference evaluator
//! (`reference.rs`). This is the only step the two share, so a folding or code-generation
//! bug in a run-time template shows up in the differential tests.
//!
//! Text built at run time can be as long as any string (16 MiB), and a program's source
//! is bounded by its host, not by the engine: so a template's text is capped
//! ([`MAX_TEMPLATE_BYTES`]) and its compile is charged to the evaluation, fuel and memory,
//! per byte of text, before it starts (hostile round 12e).

use crate::diagnostic::Code;
use crate::functions::FunctionTable;
use crate::runtime::Limits;
use crate::span::Span;
use crate::syntax;
use crate::syntax::ast::Name;
use crate::types::typed::{TArg, TKind};
use crate::types::{self, typed::TExpr, Scope};

/// The most bytes of text a template given by name may hold (`E0403` past it): a template
/// is one expression, and a plan's whole source is at most 256 KiB.
pub const MAX_TEMPLATE_BYTES: usize = crate::runtime::MAX_TEMPLATE_TEXT_BYTES;

/// The most bytes of template text a program's cache of compiled templates holds, summed
/// (with at most [`Limits::max_cached_templates`] templates): what is compiled from it is
/// some 64 times as big, and a program lives as long as its host keeps it.
pub(crate) const MAX_CACHED_TEMPLATE_BYTES: usize = 256 * 1024;

/// Bytes of a template's text compiled for a unit of fuel: parsing, checking, folding and
/// generating code cost about an instruction's time per byte.
pub(crate) const TEMPLATE_BYTES_PER_FUEL: usize = 1;

/// Bytes of memory charged per byte of a template's text: what its tree and code hold
/// while it is compiled (a list literal of 32 Ki elements, `[1,1,…]`, holds about 64 bytes
/// a byte of text).
pub(crate) const TEMPLATE_MEMORY_PER_BYTE: usize = 64;

/// Why a template's text cannot be used: a code and a message.
pub(crate) type TemplateError = (Code, String);

/// What compiling `source` costs the evaluation, in fuel and in bytes of memory; refused
/// (`E0403`) past [`MAX_TEMPLATE_BYTES`]. Charged on every use, cached or not, so that what
/// an evaluation may do does not depend on what ran before it.
pub(crate) fn cost(source: &str) -> Result<(u64, usize), TemplateError> {
    if source.len() > MAX_TEMPLATE_BYTES {
        return Err((
            Code::StringLimit,
            format!(
                "a template given by name is {} bytes, more than the limit of {MAX_TEMPLATE_BYTES} bytes: {}",
                source.len(),
                crate::functions::quoted(source)
            ),
        ));
    }
    let fuel = (source.len() / TEMPLATE_BYTES_PER_FUEL) as u64 + 1;
    Ok((fuel, source.len().saturating_mul(TEMPLATE_MEMORY_PER_BYTE)))
}

/// Parses and checks template text: `relative` texts may be a bare path (`"a.b"` for
/// `item.a.b`); `slot` is the local the template's element is bound to, as `item` and as
/// `alias` when the call named it (`as`). The error is the first error diagnostic's message
/// (cut short: it may quote the text), or a list or object literal longer than the list
/// limit (`E0404`).
pub(crate) fn check_text(
    source: &str,
    relative: bool,
    slot: u32,
    alias: Option<&Name>,
    funcs: &FunctionTable,
    limits: &Limits,
) -> Result<TExpr, TemplateError> {
    let expr = match relative.then(|| types::relative_path(source, alias.map(|a| &**a))).flatten() {
        Some(e) => e,
        None => {
            let p = syntax::parse_with_limit(source, limits.max_depth);
            if let Some(d) = p.diagnostics.iter().find(|d| d.is_error()) {
                return Err((Code::DynamicTemplate, crate::functions::cut(&d.message)));
            }
            p.expr
        }
    };
    let checked = types::check_template(&expr, &Scope::open(), funcs, limits.max_depth, slot, alias);
    if let Some(d) = checked.diagnostics.iter().find(|d| d.is_error()) {
        return Err((Code::DynamicTemplate, crate::functions::cut(&d.message)));
    }
    if let Some((_, n)) = literal_past(source, &checked.expr, limits.max_list_len) {
        return Err((Code::ListLimit, literal_message(n, limits.max_list_len)));
    }
    Ok(checked.expr)
}

/// The message for a list or object literal of `n` elements, past the list limit `max`.
pub(crate) fn literal_message(n: usize, max: usize) -> String {
    format!("a list or object literal of {n} elements exceeds the list limit of {max}")
}

/// A compile error for a list or object literal of `n` elements at `span`, past the list
/// limit `max`.
pub(crate) fn literal_error(span: Span, n: usize, max: usize) -> crate::diagnostic::Diagnostic {
    crate::diagnostic::Diagnostic::new(Code::ListLimit, span, literal_message(n, max))
        .with_help("build a long list with a function (`range`, `map`, `json_parse`) or raise `Limits::max_list_len`")
}

/// The first list or object literal in `e`, the tree of `source`, with more than `max`
/// elements or entries: its span and its length. Not walked when the text is too short to
/// hold one (an element is at least a byte and a comma).
pub(crate) fn literal_past(source: &str, e: &TExpr, max: usize) -> Option<(Span, usize)> {
    if source.len() / 2 <= max {
        return None;
    }
    literal_in(e, max)
}

/// [`literal_past`]'s walk. (The tree is at most the depth limit deep.)
fn literal_in(e: &TExpr, max: usize) -> Option<(Span, usize)> {
    let here = |n: usize| (n > max).then_some((e.span, n));
    match &e.kind {
        TKind::Const(_) | TKind::Global(_) | TKind::Local(_) | TKind::Ref(..) | TKind::Error => None,
        TKind::Field(x, _) | TKind::Unary(_, x) => literal_in(x, max),
        TKind::Index(xs) | TKind::Binary(_, xs) => xs.iter().find_map(|x| literal_in(x, max)),
        TKind::If(xs) => xs.iter().find_map(|x| literal_in(x, max)),
        TKind::List(xs) => here(xs.len()).or_else(|| xs.iter().find_map(|x| literal_in(x, max))),
        TKind::Object(xs) => here(xs.len()).or_else(|| xs.iter().find_map(|(_, x)| literal_in(x, max))),
        TKind::Pipeline { init, ops, .. } => {
            literal_in(init, max).or_else(|| ops.iter().find_map(|x| literal_in(x, max)))
        }
        TKind::Call(call) => call.args.iter().find_map(|a| match a {
            TArg::Value(x) | TArg::Dynamic { source: x, .. } => literal_in(x, max),
            TArg::Template { body, .. } => literal_in(body, max),
            TArg::Absent => None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::runtime::{Interrupt, InterruptReason};
    use crate::{Code, Engine, Scope, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// The interrupt is polled before a template is compiled, not only when a tick of fuel
    /// runs out: an evaluation far within its first tick stops at a cancel that came after
    /// it started.
    #[test]
    fn the_interrupt_is_polled_before_a_template_is_compiled() {
        let vars = Value::object_from([("t", Value::str("item + 1"))]);
        let program = Engine::new().compile_in("map(array=[1, 2], template=t)", &Scope::from_vars(&vars)).unwrap();
        // The first poll (as the evaluation starts) says go on; every later one, stop.
        let polls = Arc::new(AtomicUsize::new(0));
        let seen = polls.clone();
        let probe = Arc::new(move || (seen.fetch_add(1, Ordering::SeqCst) > 0).then_some(InterruptReason::Cancelled));
        let interrupt = Interrupt::new().with_probe(probe);
        let e = program.eval_interruptible(&vars, &vars, &interrupt).unwrap_err();
        assert_eq!(e.code, Code::Interrupted, "{e}");
        assert!(polls.load(Ordering::SeqCst) >= 2);
        // Not cancelled, it runs.
        let v = program.eval_interruptible(&vars, &vars, &Interrupt::new()).unwrap();
        assert_eq!(v, Value::list(vec![Value::Int(2), Value::Int(3)]));
    }
}
