//! Templates: an argument evaluated per element (`map`'s `template`, `filter`'s condition), the element's name (`item`, or the one `as` gives), and the relative paths of `key_path`/`item_path`.

use std::sync::Arc;

use super::super::scope::Binding;
use super::super::typed::{TArg, TExpr, TKind};
use super::super::{Fit, Type};
use super::*;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::{Span, Spanned};
use crate::syntax::ast::{Arg, Expr, ExprKind, Name};

impl Checker<'_> {
    /// Checks a template argument: a string literal (parsed now), a bare name (compiled at
    /// run time from its string value) or any other expression (deferred as is). The
    /// element is `item`, and `alias` too when the call gave it one (`as`).
    pub(super) fn template(
        &mut self,
        e: &Expr,
        elem: Type,
        relative: bool,
        alias: Option<&(Name, Span)>,
    ) -> (TArg, Type) {
        let slot = self.locals.len() as u32;
        match &e.kind {
            ExprKind::Str(lit) => {
                if self.maps.len() >= 8 {
                    self.error(
                        Diagnostic::new(Code::NestingTooDeep, e.span, "template strings nested too deeply")
                            .with_label("too deep")
                            .with_help("write inner templates as expressions rather than strings"),
                    );
                    return (TArg::Absent, Type::Never);
                }
                let parsed = match relative.then(|| relative_path(&lit.value, alias.map(|a| &*a.0))).flatten() {
                    Some(path) => path,
                    None => {
                        let p = crate::syntax::parse_with_limit(&lit.value, self.max_depth);
                        self.maps.push(lit.map.clone());
                        for d in p.diagnostics {
                            self.error(d);
                        }
                        self.maps.pop();
                        p.expr
                    }
                };
                self.maps.push(lit.map.clone());
                let body = self.element_bound(elem, alias, |c| c.expr(&parsed));
                self.maps.pop();
                // Checked: its nodes are kept for the next parse on this thread.
                crate::syntax::recycle(parsed);
                let ty = body.ty.clone();
                (TArg::Template { body: Arc::new(body), slot }, ty)
            }
            // A bare name that is an element (`item`, or an enclosing template's `as`) is
            // the template itself, not a template held in a variable.
            ExprKind::Name(n)
                if &**n != "item"
                    && &**n != "current"
                    && alias.is_none_or(|a| a.0 != *n)
                    && !self.aliases.iter().any(|a| a.name == *n) =>
            {
                let source = self.expr(e);
                if source.ty.fits(&Type::Str) == Fit::No && !matches!(source.kind, TKind::Error) {
                    self.error(
                        Diagnostic::new(
                            Code::TemplateNotString,
                            e.span,
                            format!("template `{n}` is {:#}, not a template string", source.ty),
                        )
                        .with_label(format!("this is {}", source.ty))
                        .with_help("a template given by name must hold an expression string, like \"item.name\""),
                    );
                }
                (TArg::Dynamic { source, relative, slot, alias: alias.map(|a| a.0.clone()) }, Type::Any)
            }
            _ => {
                let body = self.element_bound(elem, alias, |c| c.expr(e));
                let ty = body.ty.clone();
                (TArg::Template { body: Arc::new(body), slot }, ty)
            }
        }
    }

    /// Runs `f` with a template's element bound in the next slot: to `item`, and to `alias`
    /// when the call named it.
    pub(super) fn element_bound(
        &mut self,
        elem: Type,
        alias: Option<&(Name, Span)>,
        f: impl FnOnce(&mut Self) -> TExpr,
    ) -> TExpr {
        let slot = self.locals.len() as u32;
        self.locals.push((LocalKind::Item, elem));
        if let Some((name, span)) = alias {
            self.aliases.push(Alias { name: name.clone(), slot, span: *span });
        }
        let body = f(self);
        if alias.is_some() {
            self.aliases.pop();
        }
        self.locals.pop();
        body
    }

    /// Checks the value of `as="NAME"` (SPEC §4.4): a string literal holding a name that is
    /// not a keyword, `item`, `current`, nor bound here already (a variable, a REF context,
    /// the `as` of an enclosing template). The name, unless it is no name at all or not
    /// literal (a clash is reported and the name still bound, so its uses are checked), with
    /// where it was given in the program's source.
    pub(super) fn element_name(&mut self, a: &Arg) -> Option<(Name, Span)> {
        let value = &a.value;
        let ExprKind::Str(lit) = &value.kind else {
            let help = match &value.kind {
                ExprKind::Name(n) => format!("write the name itself, quoted: `as=\"{n}\"`"),
                _ => "write the name as a string literal: `as=\"repo\"`".to_string(),
            };
            self.error(
                Diagnostic::new(Code::ElementNameNotLiteral, value.span, "`as` must be a string literal")
                    .with_label("not a string literal")
                    .with_help(help),
            );
            // `as=repo` means `as="repo"`: the templates are checked with that name bound, so
            // its uses are not reported as well.
            return match &value.kind {
                ExprKind::Name(n) => Some((n.clone(), self.sp(value.span))),
                _ => None,
            };
        };
        let name = &*lit.value;
        if crate::syntax::KEYWORDS.contains(&name) {
            self.error(
                Diagnostic::new(
                    Code::ElementNameInvalid,
                    value.span,
                    format!("`as` cannot be `{name}`: it is a keyword"),
                )
                .with_label("a keyword")
                .with_help("choose a name that is not `and`, `or`, `not`, `true`, `false` or `null`"),
            );
            return None;
        }
        if !crate::syntax::is_identifier(name) {
            self.error(
                Diagnostic::new(Code::ElementNameInvalid, value.span, format!("`as` must be a name, found {name:?}"))
                    .with_label("not a name")
                    .with_help("a name is letters, digits and `_`, not starting with a digit: `as=\"repo\"`"),
            );
            return None;
        }
        let name = crate::syntax::intern(name);
        let at = self.sp(value.span);
        let clash = if matches!(&*name, "item" | "current") {
            let what = if &*name == "item" {
                "the element is `item` already"
            } else {
                "`current` is the value of a `pipeline` operation"
            };
            Some(
                Diagnostic::new(Code::ElementNameTaken, at, format!("`as` cannot be `{name}`: {what}"))
                    .with_label("already bound"),
            )
        } else if let Some(outer) = self.aliases.iter().rev().find(|x| x.name == name) {
            Some(
                Diagnostic::new(
                    Code::ElementNameTaken,
                    at,
                    format!("`{name}` already names the element of an enclosing template"),
                )
                .with_label("named again here")
                .with_secondary(outer.span, "first named here"),
            )
        } else {
            match self.scope.binding(&name) {
                Some(Binding::Variable) => Some(
                    Diagnostic::new(
                        Code::ElementNameTaken,
                        at,
                        format!("`as` cannot be `{name}`: it is a variable here"),
                    )
                    .with_label("already a variable"),
                ),
                Some(Binding::RefContext) => Some(
                    Diagnostic::new(
                        Code::ElementNameTaken,
                        at,
                        format!("`as` cannot be `{name}`: it is a REF context here (`REF:{name}`)"),
                    )
                    .with_label("already a REF context"),
                ),
                None => None,
            }
        };
        if let Some(d) = clash {
            // Spans are already the program's: pushed as they are, not mapped again.
            self.diags
                .push(d.with_help(format!("choose a name not in use here, as in `as=\"{}\"`", self.free_name(&name))));
        }
        Some((name, at))
    }

    /// A name like `taken` that nothing here binds, for help texts: `x` for `item` and
    /// `current`, else `taken2`, `taken3`, ….
    pub(super) fn free_name(&self, taken: &str) -> String {
        let base = if matches!(taken, "item" | "current") { "x" } else { taken };
        let free = |n: &str| self.scope.binding(n).is_none() && !self.aliases.iter().any(|a| &*a.name == n);
        std::iter::once(base.to_string())
            .chain((2..100).map(|i| format!("{base}{i}")))
            .find(|n| n != taken && free(n))
            .unwrap_or_else(|| base.to_string())
    }
}

/// For `key_path` / `item_path`: a bare dotted path (`score`, `profile.age`, `tags.0`)
/// whose first segment is not `item` (nor `alias`, the element's name given by `as`) means a
/// path under `item`.
pub(crate) fn relative_path(s: &str, alias: Option<&str>) -> Option<Expr> {
    let segs: Vec<&str> = s.split('.').collect();
    let ok = segs.iter().all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    if !ok || segs.first() == Some(&"item") || (alias.is_some() && segs.first().copied() == alias) {
        return None;
    }
    let whole = Span::new(0, s.len());
    let mut e = Expr::new(ExprKind::Name(crate::syntax::intern("item")), Span::new(0, 0));
    let mut at = 0;
    for g in segs {
        let span = Span::new(at, at + g.len());
        e = Expr::new(
            ExprKind::Field(crate::syntax::boxed(e), Spanned::new(crate::syntax::intern(g), span)),
            Span::new(0, at + g.len()),
        );
        at += g.len() + 1;
    }
    e.span = whole;
    Some(e)
}
