//! Calls in one pass: arguments bound in parameter order and compiled as their parameter
//! takes them (templates into chunks of their own, with their fast forms), defaults, the
//! call site and its instruction (a `map` of a `filter` or `sort` fused).

use std::sync::Arc;

use super::{ChainRoot, Form, D, LEVEL, V};
use crate::compile::chunk::{CallInfo, CallParam, Fast, ParamSite, Params, TemplateChunk};
use crate::compile::compiler::Compiler;
use crate::compile::op::Op;
use crate::span::Span;
use crate::syntax::check_nesting;
use crate::types::signature::ParamKind;
use crate::types::{type_of, Fit, Type};
use crate::value::{Path, Value};

impl D<'_, '_, '_> {
    /// A call, the cursor after its `(`: arguments in parameter order, each compiled as its
    /// parameter takes it; then the call site and its instruction.
    pub(super) fn call(&mut self, start: usize, end: usize) -> Option<V> {
        let funcs = self.funcs;
        let id = funcs.lookup(self.p.text(start, end))?;
        let sig = funcs.signature(id);
        if sig.variadic
            || sig.any_keywords
            || matches!(&*sig.name, "if" | "pipeline" | "create_object" | "sum" | "avg" | "json_parse")
        {
            return None;
        }
        let base = self.arg_types.len();
        let mut sites = Sites::default();
        // Defaults take the call's span, known at its `)`.
        let mut defaults: [usize; 8] = [0; 8];
        let mut n_defaults = 0usize;
        let (mut next, mut given, mut h) = (0usize, 0u64, 0u32);
        let (mut keyworded, mut all_const, mut inner) = (false, true, None);
        let mut drops_nulls = false;
        loop {
            if self.p.peek() == Some(b')') {
                self.p.pos += 1;
                break;
            }
            let i = match self.p.kwarg_span() {
                Some((ks, ke)) => {
                    keyworded = true;
                    sig.param_index(self.p.text(ks, ke))?
                }
                None if keyworded => return None,
                None => next,
            };
            if i < next {
                return None; // out of parameter order, or given twice
            }
            for q in next..i {
                self.absent(sig, q, &mut sites, &mut defaults, &mut n_defaults)?;
            }
            let param = sig.params.get(i)?;
            if i < 64 {
                given |= 1 << i;
            }
            match param.kind {
                ParamKind::Value | ParamKind::Lazy => {
                    let v = self.climb(0)?;
                    if param.kind == ParamKind::Value {
                        if self.ty(v.ty).fits(&param.ty) == Fit::No {
                            return None;
                        }
                        if let Some(Value::Str(s)) = self.konst(&v) {
                            if !param.one_of.is_empty() && !param.one_of.contains(&&**s) {
                                return None;
                            }
                        }
                    }
                    all_const &= v.is_const();
                    h = h.max(v.h);
                    if i == 0 {
                        if let Form::Call { site, at } = v.form {
                            inner = Some((site, at));
                        }
                    }
                    let t = self.ty(v.ty).clone();
                    self.arg_types.push(t);
                    sites.push(ParamSite { pass: CallParam::Value, span: v.span, origin: self.origin(&v) });
                }
                ParamKind::Template | ParamKind::PathTemplate => {
                    all_const = false;
                    let elem = match i {
                        0 => Type::Any,
                        _ => self.arg_types.get(base).map_or(Type::Any, Type::element),
                    };
                    let elem = if elem == Type::Never { Type::Any } else { elem };
                    let (site, ty, text_drops_nulls) = self.template(elem, param.kind == ParamKind::PathTemplate)?;
                    drops_nulls |= i == 1 && text_drops_nulls;
                    h = h.max(1);
                    self.arg_types.push(ty);
                    sites.push(site);
                }
                ParamKind::Operations => return None,
            }
            next = i + 1;
            match self.p.peek()? {
                b',' => {
                    self.p.pos += 1;
                    self.p.ws();
                }
                b')' => {
                    self.p.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
        for q in next..sig.params.len() {
            self.absent(sig, q, &mut sites, &mut defaults, &mut n_defaults)?;
        }
        if all_const || (drops_nulls && &*sig.name == "filter") {
            return None; // folded, or typed by the checker's special case
        }
        let span = Span::new(start, self.p.pos);
        let h = self.fits(h + LEVEL)?;
        for &at in &defaults[..n_defaults] {
            self.c.chunk.code.set_span(at, span);
        }
        sites.defaults_at(span);
        let ty = sig.return_type(self.arg_types.get(base..).unwrap_or_default());
        let ty = self.keep_ty(ty);
        self.arg_types.truncate(base);
        let params = sites.into_params();
        let rest_plain = params.iter().skip(1).all(|s| matches!(s.pass, CallParam::Template(..) | CallParam::Absent));
        let inner_is =
            |i: u32| self.c.chunk.calls.get(i as usize).is_some_and(|c| matches!(&*c.name, "filter" | "sort"));
        let fused = match inner {
            Some((i, at)) if &*sig.name == "map" && rest_plain && inner_is(i) => Some((i, at)),
            _ => None,
        };
        self.c.chunk.calls.push(CallInfo { func: id, name: sig.name.clone(), params, given });
        let o = (self.c.chunk.calls.len() - 1) as u32;
        match fused {
            Some((i, at)) => {
                // The inner call's list is never built: its `CALL` gives way to the pair's.
                self.c.chunk.code.remove(at as usize);
                self.c.emit(Op::Fused(i, o), span);
                let at = self.c.chunk.code.len().saturating_sub(1) as u32;
                Some(V::new(ty, span, h, Form::Call { site: o, at }))
            }
            None => {
                let at = self.c.emit(Op::Call(o), span) as u32;
                Some(V::new(ty, span, h, Form::Call { site: o, at }))
            }
        }
    }

    /// Parameter `q` of `sig`, not given: its default, `null`, or an absent template (its
    /// instruction's span is the call's, set at its end).
    fn absent(
        &mut self,
        sig: &crate::types::signature::Signature,
        q: usize,
        sites: &mut Sites,
        defaults: &mut [usize; 8],
        n: &mut usize,
    ) -> Option<()> {
        let param = sig.params.get(q)?;
        // A required parameter missing (of any kind): reported by the checker.
        let default = param.default.as_ref()?;
        let (v, ty, pass) = match param.kind {
            ParamKind::Value => (default.clone(), type_of(default), CallParam::Value),
            ParamKind::Lazy => (Value::Null, Type::Null, CallParam::Value),
            ParamKind::Template | ParamKind::PathTemplate => (Value::Null, Type::Never, CallParam::Absent),
            ParamKind::Operations => return None,
        };
        let i = self.c.constant(v);
        let at = self.c.emit(Op::Const(i), Span::default());
        *defaults.get_mut(*n)? = at;
        *n += 1;
        self.arg_types.push(ty);
        sites.push(ParamSite { pass, span: Span::default(), origin: None });
        Some(())
    }

    /// A template argument: a string literal read now, or an expression, compiled into a
    /// chunk of its own with the element in the next slot. Its parameter's entry, its type,
    /// and whether its text is `item != null`.
    fn template(&mut self, elem: Type, relative: bool) -> Option<(ParamSite, Type, bool)> {
        let slot = self.items.len() as u32;
        let outer = std::mem::replace(&mut self.c, Compiler::new());
        let elem = self.keep_ty(elem);
        self.items.push(elem);
        let body = self.template_body(relative);
        // A template held in a variable is compiled at run time: the reference pipeline's.
        let body = body.filter(|(b, _)| !matches!(b.form, Form::Chain { root: ChainRoot::Global(_), n: 0, .. }));
        let fast = body.as_ref().and_then(|(b, _)| self.template_fast(b, slot));
        self.items.pop();
        let mut sub = std::mem::replace(&mut self.c, outer);
        let (body, drops_nulls) = body?;
        sub.chunk.locals = sub.chunk.locals.max(slot + 1);
        if fast.is_none() {
            self.c.chunk.locals = self.c.chunk.locals.max(sub.chunk.locals);
        }
        self.c.use_slot(slot);
        let i = self.c.constant(Value::Null);
        self.c.emit(Op::Const(i), body.span);
        let chunk = match fast {
            Some(fast) => TemplateChunk::with_fast(sub.chunk, fast),
            None => TemplateChunk::ready(sub.chunk),
        };
        let site = ParamSite { pass: CallParam::Template(Arc::new(chunk), slot), span: body.span, origin: None };
        Some((site, self.ty(body.ty).clone(), drops_nulls))
    }

    /// The template's fast form, read from its body's summary (the code generator's
    /// `fast_template`), the template's chunk being the current one.
    fn template_fast(&mut self, body: &V, slot: u32) -> Option<Fast> {
        match body.form {
            Form::Chain { root: ChainRoot::Local(s), path, .. } if s == slot => {
                Some(Fast::Path(Path::shared(self.segments_of(path, 0))))
            }
            _ => self.pred(body).map(Fast::Pred),
        }
    }

    /// The body of a template, compiled into the current chunk: a string literal's
    /// contents, or the argument's expression.
    fn template_body(&mut self, relative: bool) -> Option<(V, bool)> {
        if !matches!(self.p.peek()?, b'"' | b'\'') {
            return self.climb(0).map(|v| (v, false));
        }
        let (inner, end, escapes) = self.p.string_raw()?;
        let after = self.p.pos;
        self.p.ws();
        if escapes || !matches!(self.p.peek()?, b',' | b')') || self.strings >= 8 {
            return None;
        }
        let text = self.p.text(inner, end);
        if relative && crate::types::relative_path(text, None).is_some() {
            return None;
        }
        let drops_nulls = text.trim() == "item != null";
        if check_nesting(text, self.max_nesting).is_some() {
            return None;
        }
        let whole = self.p.narrow(inner, end);
        self.strings += 1;
        self.p.ws();
        let mark = self.segs.len();
        let body = self.climb(0).filter(|_| self.p.at_end());
        self.segs.truncate(mark);
        self.strings -= 1;
        self.p.restore(whole, after);
        self.p.ws();
        let body = body?;
        // The string's tree is the template's: its height was checked against the limit on
        // its own (as the checker parses it); the argument is one node in the call's.
        Some((body, drops_nulls))
    }
}

/// A call site's parameter entries as they are read: one or two (nearly every call) held
/// here, more in a list, so that no list is allocated for the usual call.
#[derive(Default)]
struct Sites {
    few: [Option<ParamSite>; 2],
    many: Vec<ParamSite>,
    n: usize,
}

impl Sites {
    fn push(&mut self, site: ParamSite) {
        if self.n < 2 {
            self.few[self.n] = Some(site);
        } else {
            if self.n == 2 {
                self.many.extend(self.few.iter_mut().filter_map(Option::take));
            }
            self.many.push(site);
        }
        self.n += 1;
    }

    /// Gives the defaults (the entries of parameters not given) the call's span.
    fn defaults_at(&mut self, span: Span) {
        let entries = self.few.iter_mut().flatten().chain(self.many.iter_mut());
        for s in entries {
            if s.span == Span::default() && matches!(s.pass, CallParam::Value | CallParam::Absent) {
                s.span = span;
            }
        }
    }

    fn into_params(self) -> Params {
        match (self.n, self.few) {
            (1, [Some(a), _]) => Params::One([a]),
            (2, [Some(a), Some(b)]) => Params::Two([a, b]),
            _ => Params::Many(self.many.into_boxed_slice()),
        }
    }
}
