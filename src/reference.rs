//! The reference evaluator: walks the typed AST directly.
//!
//! It exists to test the compiler and the VM against (`tests/differential.rs`): for every
//! well-typed program both must give the same value or fail with the same error code. It
//! shares the operator semantics ([`crate::ops`]) and the built-in bodies with the VM, and
//! deliberately shares nothing else — no bytecode, no fused instructions, no folding.

use std::sync::Arc;

use crate::diagnostic::Code;
use crate::files::FileStore;
use crate::functions::{Args, Caller, Failure, FunctionTable, Implementation};
use crate::runtime::{Clock, EvalError, Limits};
use crate::syntax::ast::{BinaryOp, UnaryOp};
use crate::types::typed::{TArg, TCall, TExpr, TKind};
use crate::value::{SmolStr, Value};

/// Evaluates `e` with `vars` as the variables and `refs` as the REF contexts, with no file
/// store.
pub fn evaluate(
    e: &TExpr,
    vars: &Value,
    refs: &Value,
    funcs: &FunctionTable,
    limits: &Limits,
    clock: &dyn Clock,
) -> Result<Value, EvalError> {
    evaluate_with_files(e, vars, refs, funcs, limits, clock, None)
}

/// Evaluates `e` as [`evaluate`] does, with file functions reading `files`.
pub(crate) fn evaluate_with_files(
    e: &TExpr,
    vars: &Value,
    refs: &Value,
    funcs: &FunctionTable,
    limits: &Limits,
    clock: &dyn Clock,
    files: Option<&dyn FileStore>,
) -> Result<Value, EvalError> {
    let mut ev = Evaluator {
        vars,
        refs,
        funcs,
        limits,
        clock,
        files,
        locals: Vec::new(),
        fuel: limits.fuel,
        alloc: limits.max_alloc_bytes as u64,
        depth: 0,
    };
    ev.eval(e)
}

struct Evaluator<'a> {
    vars: &'a Value,
    refs: &'a Value,
    funcs: &'a FunctionTable,
    limits: &'a Limits,
    clock: &'a dyn Clock,
    files: Option<&'a dyn FileStore>,
    locals: Vec<Value>,
    fuel: u64,
    alloc: u64,
    depth: usize,
}

fn seg_err(e: &TExpr, seg: &str, found: crate::value::Kind) -> EvalError {
    EvalError::new(Code::RuntimeType, e.span, format!("cannot read `.{seg}` of {found:#}"))
}

impl Evaluator<'_> {
    fn alloc(&mut self, bytes: usize, span: crate::span::Span) -> Result<(), EvalError> {
        let bytes = bytes as u64;
        if bytes > self.alloc {
            self.alloc = 0;
            return Err(EvalError::new(Code::MemoryLimit, span, crate::ops::memory_error(self.limits)));
        }
        self.alloc -= bytes;
        Ok(())
    }

    fn local(&mut self, slot: u32) -> &mut Value {
        let s = slot as usize;
        if self.locals.len() <= s {
            self.locals.resize(s + 1, Value::Null);
        }
        &mut self.locals[s]
    }

    fn eval(&mut self, e: &TExpr) -> Result<Value, EvalError> {
        if self.fuel == 0 {
            return Err(EvalError::new(Code::FuelExhausted, e.span, "evaluation ran out of fuel"));
        }
        self.fuel -= 1;
        match &e.kind {
            TKind::Const(v) => Ok(v.clone()),
            TKind::Global(n) => Ok(self.vars.get_direct(n).cloned().unwrap_or_default()),
            TKind::Local(s) => Ok(self.local(*s).clone()),
            TKind::Ref(ctx, segs) => match self.refs.get_direct(ctx) {
                Some(root) => {
                    root.walk_ref(segs).map(|v| v.into_owned()).map_err(|(i, err)| seg_err(e, &segs[i], err.found))
                }
                None => Ok(Value::Null),
            },
            TKind::Field(inner, seg) => {
                let v = self.eval(inner)?;
                v.segment(seg).map_err(|err| seg_err(e, seg, err.found))
            }
            TKind::Index(vk) => {
                let [v, k] = &**vk;
                let v = self.eval(v)?;
                let k = self.eval(k)?;
                v.index(&k).map_err(|err| {
                    EvalError::new(
                        Code::RuntimeType,
                        e.span,
                        format!("cannot index {:#} with {:#}", err.found, k.kind()),
                    )
                })
            }
            TKind::List(items) => {
                self.alloc(crate::ops::list_bytes(items.len()), e.span)?;
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(self.eval(x)?);
                }
                Ok(Value::list(out))
            }
            TKind::Object(entries) => {
                self.alloc(crate::ops::object_bytes(entries.len()), e.span)?;
                let mut pairs = Vec::with_capacity(entries.len());
                for (k, x) in entries {
                    pairs.push((SmolStr::new(&**k), self.eval(x)?));
                }
                Ok(Value::object(pairs.into_iter().collect()))
            }
            TKind::Unary(UnaryOp::Not, x) => Ok(Value::Bool(!self.eval(x)?.truthy())),
            TKind::Unary(UnaryOp::Neg, x) => {
                let v = self.eval(x)?;
                crate::ops::neg(&v).map_err(|o| EvalError::new(o.code, e.span, o.message))
            }
            TKind::Binary(BinaryOp::And, lr) => {
                Ok(Value::Bool(self.eval(&lr[0])?.truthy() && self.eval(&lr[1])?.truthy()))
            }
            TKind::Binary(BinaryOp::Or, lr) => {
                Ok(Value::Bool(self.eval(&lr[0])?.truthy() || self.eval(&lr[1])?.truthy()))
            }
            TKind::Binary(op, lr) => {
                let [l, r] = &**lr;
                let a = self.eval(l)?;
                let b = self.eval(r)?;
                if matches!(op, BinaryOp::Eq | BinaryOp::Ne) && a.is_container() && b.is_container() {
                    let mut budget = self.fuel;
                    return match a.eq_within(&b, &mut budget) {
                        Some(same) => {
                            self.fuel = budget;
                            Ok(Value::Bool(same == (*op == BinaryOp::Eq)))
                        }
                        None => {
                            self.fuel = 0;
                            Err(EvalError::new(Code::FuelExhausted, e.span, "evaluation ran out of fuel"))
                        }
                    };
                }
                let cmp = if matches!(op, BinaryOp::Add) { 0 } else { crate::ops::compare_cost(&a, &b) };
                if cmp > self.fuel {
                    self.fuel = 0;
                    return Err(EvalError::new(Code::FuelExhausted, e.span, "evaluation ran out of fuel"));
                }
                self.fuel -= cmp;
                let v = crate::ops::binary(*op, &a, &b, self.limits)
                    .map_err(|o| EvalError::new(o.code, e.span, o.message))?;
                let cost = crate::ops::build_cost(&v);
                if cost > self.fuel {
                    self.fuel = 0;
                    return Err(EvalError::new(Code::FuelExhausted, e.span, "evaluation ran out of fuel"));
                }
                self.fuel -= cost;
                self.alloc(crate::ops::build_bytes(&v), e.span)?;
                Ok(v)
            }
            TKind::If(ctf) => {
                let [c, t, f] = &**ctf;
                if self.eval(c)?.truthy() {
                    self.eval(t)
                } else {
                    self.eval(f)
                }
            }
            TKind::Pipeline { init, slot, ops } => {
                let mut cur = self.eval(init)?;
                for op in ops {
                    *self.local(*slot) = cur;
                    cur = self.eval(op)?;
                }
                Ok(cur)
            }
            TKind::Call(call) => self.call(call, e),
            TKind::Error => Err(EvalError::new(Code::RuntimeArgument, e.span, "program has errors")),
        }
    }

    fn call(&mut self, call: &TCall, e: &TExpr) -> Result<Value, EvalError> {
        let mut values = Vec::with_capacity(call.args.len());
        let mut templates: Vec<Option<(Arc<TExpr>, u32)>> = Vec::with_capacity(call.args.len());
        for a in &call.args {
            match a {
                TArg::Value(x) => {
                    values.push(self.eval(x)?);
                    templates.push(None);
                }
                TArg::Template { body, slot } => {
                    values.push(Value::Null);
                    templates.push(Some((body.clone(), *slot)));
                }
                TArg::Dynamic { source, .. } => {
                    // Checked when the call starts, after every argument (as the VM compiles it then).
                    values.push(self.eval(source)?);
                    templates.push(None);
                }
                TArg::Absent => {
                    values.push(Value::Null);
                    templates.push(None);
                }
            }
        }
        // The bytes the call's run-time templates hold while it runs (charged, given back
        // when it ends, as the VM does).
        let mut held = 0;
        let result = self.call_with(call, e, values, templates, &mut held);
        self.alloc = self.alloc.saturating_add(held);
        result
    }

    /// [`Evaluator::call`] once the arguments are evaluated: its run-time templates checked
    /// and charged (`held` counts their memory), then the call.
    fn call_with(
        &mut self,
        call: &TCall,
        e: &TExpr,
        values: Vec<Value>,
        mut templates: Vec<Option<(Arc<TExpr>, u32)>>,
        held: &mut u64,
    ) -> Result<Value, EvalError> {
        for (i, a) in call.args.iter().enumerate() {
            let TArg::Dynamic { source, relative, slot, alias } = a else { continue };
            let Value::Str(text) = &values[i] else {
                let mut err = EvalError::new(
                    Code::RuntimeType,
                    source.span,
                    "a template given by name must hold an expression string",
                );
                err.function = Some(call.name.clone());
                return Err(err);
            };
            let named = |(code, m): crate::template::TemplateError| {
                let mut err = EvalError::new(code, source.span, m);
                err.function = Some(call.name.clone());
                err
            };
            // Charged as the VM charges it (the compile's fuel and memory).
            let (fuel, bytes) = crate::template::cost(text).map_err(named)?;
            if fuel > self.fuel {
                self.fuel = 0;
                return Err(EvalError::new(Code::FuelExhausted, source.span, "evaluation ran out of fuel"));
            }
            self.fuel -= fuel;
            self.alloc(bytes, source.span)?;
            *held += bytes as u64;
            let body = crate::template::check_text(text, *relative, *slot, alias.as_ref(), self.funcs, self.limits)
                .map_err(named)?;
            templates[i] = Some((Arc::new(body), *slot));
        }
        let with_name = |mut err: EvalError| {
            if err.function.is_none() {
                err.function = Some(call.name.clone());
            }
            err
        };
        match &self.funcs.get(call.func).implementation {
            Implementation::Builtin(body) | Implementation::File(body) => {
                let mut frame = RefFrame { ev: self, templates };
                crate::functions::invoke(*body, &mut frame, &Args { values: &values, given: call.given }).map_err(|f| {
                    match f {
                        Failure::Eval(err) => with_name(err),
                        Failure::Fn(fe) => with_name(EvalError::new(fe.code, e.span, fe.message)),
                    }
                })
            }
            Implementation::Host(f) => f(&values).map_err(|m| with_name(EvalError::new(Code::HostFunction, e.span, m))),
            Implementation::Inline => Err(EvalError::new(Code::RuntimeArgument, e.span, "inline function called")),
        }
    }
}

struct RefFrame<'e, 'a> {
    ev: &'e mut Evaluator<'a>,
    templates: Vec<Option<(Arc<TExpr>, u32)>>,
}

impl Caller for RefFrame<'_, '_> {
    fn apply(&mut self, param: usize, item: &Value, _index: usize) -> Result<Value, EvalError> {
        let Some(Some((body, slot))) = self.templates.get(param) else { return Ok(item.clone()) };
        let (body, slot) = (body.clone(), *slot);
        if self.ev.fuel == 0 {
            return Err(EvalError::new(Code::FuelExhausted, body.span, "evaluation ran out of fuel"));
        }
        self.ev.fuel -= 1;
        if self.ev.depth >= self.ev.limits.max_depth {
            return Err(EvalError::new(Code::DepthLimit, body.span, "templates nested too deeply"));
        }
        *self.ev.local(slot) = item.clone();
        self.ev.depth += 1;
        let r = self.ev.eval(&body);
        let r = r.and_then(|v| crate::runtime::template_result(v, self.ev.depth, self.ev.limits, body.span));
        self.ev.depth -= 1;
        r
    }

    fn charge(&mut self, units: usize) -> Result<(), EvalError> {
        let units = units as u64;
        if units > self.ev.fuel {
            self.ev.fuel = 0;
            return Err(EvalError::new(Code::FuelExhausted, Default::default(), "evaluation ran out of fuel"));
        }
        self.ev.fuel -= units;
        Ok(())
    }

    fn alloc(&mut self, bytes: usize) -> Result<(), EvalError> {
        self.ev.alloc(bytes, Default::default())
    }

    fn fuel_left(&self) -> u64 {
        self.ev.fuel
    }

    fn alloc_left(&self) -> u64 {
        self.ev.alloc
    }

    fn limits(&self) -> &Limits {
        self.ev.limits
    }

    fn clock(&self) -> &dyn Clock {
        self.ev.clock
    }

    fn files(&self) -> Option<&dyn FileStore> {
        self.ev.files
    }
}
