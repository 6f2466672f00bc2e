//! The stack VM that runs compiled chunks.
//!
//! Owns the interpreter loop, fuel and depth accounting, and the [`Caller`] that built-ins
//! use to apply templates. Values are read in place wherever possible: field paths are
//! walked by reference and only their result is cloned (a reference-count increment), and
//! a `filter` condition like `item.score > 50` compares without cloning at all. The VM
//! never parses or compiles source text itself: run-time templates come from a
//! [`TemplateSource`] the caller supplies.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

mod budget;
mod fast;

use crate::compile::{fast_in, CallInfo, CallParam, Chunk, Fast, Op, Origin, ParamSite, Root};
use crate::diagnostic::Code;
use crate::files::FileStore;
use crate::functions::{Args, BuiltinFn, Caller, Consumer, Elems, Failure, FunctionTable, Implementation, Producer};
use crate::ops;
use crate::runtime::{Clock, EvalError, Interrupt, Limits, RunBudget, INTERRUPT_POLL_UNITS};
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, Name};
use crate::value::{SegmentError, Value};
use budget::settle;
use fast::{fast_path, pred, ReadAhead};

/// Compiles template text met at run time (a template held in a variable).
pub trait TemplateSource {
    /// The chunk for `source`, with `item` in `slot` (and `alias`, the name the call gave
    /// the element with `as`); bare dotted paths are relative to `item` when `relative`.
    /// Implementations cache by their arguments.
    fn template(
        &self,
        source: &str,
        relative: bool,
        slot: u32,
        alias: Option<&Name>,
    ) -> Result<Arc<Chunk>, crate::template::TemplateError>;
}

/// Everything one evaluation reads.
pub struct Env<'a> {
    /// The variables (an object; names are its keys).
    pub vars: &'a Value,
    /// The REF contexts (an object; contexts are its keys).
    pub refs: &'a Value,
    /// The functions calls refer to.
    pub funcs: &'a FunctionTable,
    /// The limits in force.
    pub limits: &'a Limits,
    /// The clock.
    pub clock: &'a dyn Clock,
    /// Where run-time templates come from.
    pub templates: &'a dyn TemplateSource,
    /// The file store file functions read, if the host configured one.
    pub files: Option<&'a dyn FileStore>,
    /// Polled with the fuel: stops the evaluation when cancelled or past its deadline.
    pub interrupt: Option<&'a Interrupt>,
}

thread_local! {
    /// Stacks kept between evaluations, so evaluating a small program allocates nothing.
    static STACKS: RefCell<Vec<(Vec<Value>, Vec<Value>)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `chunk` to completion.
#[inline]
pub fn run(chunk: &Chunk, env: &Env<'_>) -> Result<Value, EvalError> {
    // A program that is one read (`profile.email`, a constant, `REF:step.x`) needs no
    // stack: answer it directly, without even setting up the interpreter.
    if let Some(op) = chunk.code.single() {
        if let Some(v) = single_read(chunk, op, env.vars, env.refs) {
            return v;
        }
    }
    interpret(chunk, env)
}

#[inline(never)]
fn interpret(chunk: &Chunk, env: &Env<'_>) -> Result<Value, EvalError> {
    let (stack, locals) = STACKS.with(|s| s.borrow_mut().pop()).unwrap_or_default();
    let mut vm = Vm {
        env,
        stack,
        locals,
        loc: Vec::new(),
        fuel: env.limits.fuel,
        reserve: 0,
        alloc: env.limits.max_alloc_bytes as u64,
        budget: env.interrupt.and_then(Interrupt::budget).map(|b| &**b),
        drawn: 0,
        taken: 0,
        depth: 0,
        serial: 0,
        arg_pool: Vec::new(),
    };
    if env.interrupt.is_some() {
        // Fuel is handed out a tick at a time: when a tick runs out, the interrupt is
        // polled and the next tick taken from the reserve (and from the run's budget).
        vm.reserve = vm.fuel.saturating_sub(INTERRUPT_POLL_UNITS);
        vm.fuel -= vm.reserve;
        if let Some(b) = vm.budget {
            let got = b.take_fuel(0, vm.fuel).unwrap_or(0);
            vm.reserve += vm.fuel - got;
            vm.fuel = got;
        }
    }
    if vm.locals.len() < chunk.locals as usize {
        vm.locals.resize(chunk.locals as usize, Value::Null);
    }
    let result = vm.exec(chunk);
    if let Some(b) = vm.budget {
        settle(b, &vm, &result);
    }
    let Vm { mut stack, mut locals, .. } = vm;
    stack.clear();
    locals.clear();
    STACKS.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < 4 {
            s.push((stack, locals));
        }
    });
    result
}

/// Evaluates a one-instruction program that only reads, or `None` for other instructions
/// (and for reads that fail: the general path builds the located error).
#[inline]
pub fn single_read(chunk: &Chunk, op: Op, vars: &Value, refs: &Value) -> Option<Result<Value, EvalError>> {
    match op {
        Op::Const(i) => Some(Ok(chunk.consts[i as usize].clone())),
        Op::Global(n) => Some(Ok(vars.get_direct(&chunk.names[n as usize]).cloned().unwrap_or_default())),
        Op::GlobalPath(_, p) => {
            let path = &chunk.paths[p as usize];
            if let Ok(v) = vars.follow_hints(path) {
                return Some(Ok(v.clone()));
            }
            Some(Ok(global_path(vars, path).ok()?))
        }
        Op::Ref(n, p) => {
            let Some(start) = refs.get_direct(&chunk.names[n as usize]) else { return Some(Ok(Value::Null)) };
            Some(Ok(start.walk_ref(&chunk.paths[p as usize]).ok()?.into_owned()))
        }
        _ => None,
    }
}

/// Reads `vars.name.seg…` (the path starts with the variable's name); a missing variable
/// is `null`. On failure, the index of the failing segment after the name.
#[inline]
fn global_path(vars: &Value, path: &crate::value::Path) -> Result<Value, (usize, SegmentError)> {
    match vars {
        Value::Object(_) => match vars.walk_path(path) {
            Ok(v) => Ok(v.into_owned()),
            Err((at, e)) => Err((at.saturating_sub(1), e)),
        },
        _ => Ok(Value::Null),
    }
}

/// Where a local's value came from: element `index` of the list at `origin`.
#[derive(Clone)]
struct LocalLoc {
    origin: Option<Origin>,
    index: usize,
    serial: u64,
}

struct Vm<'a> {
    env: &'a Env<'a>,
    stack: Vec<Value>,
    locals: Vec<Value>,
    loc: Vec<Option<LocalLoc>>,
    /// Fuel left in the current tick (all of it when there is no interrupt to poll).
    fuel: u64,
    /// Fuel left after the current tick.
    reserve: u64,
    /// Bytes of values this evaluation may still build ([`Limits::max_alloc_bytes`]).
    alloc: u64,
    /// The run's budget, when the evaluation is part of a run ([`Interrupt::budget`]).
    budget: Option<&'a RunBudget>,
    /// Bytes taken from the run's budget and not yet built.
    drawn: u64,
    /// Bytes taken from the run's budget in all.
    taken: u64,
    depth: usize,
    serial: u64,
    arg_pool: Vec<Vec<Value>>,
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(x) if x.is_ascii_alphabetic() || x == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn push_segment(out: &mut String, seg: &str) {
    if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
        out.push('[');
        out.push_str(seg);
        out.push(']');
    } else if is_ident(seg) {
        out.push('.');
        out.push_str(seg);
    } else {
        out.push_str(&format!("[{seg:?}]"));
    }
}

impl<'a> Vm<'a> {
    fn render_origin(&self, o: &Origin, upto: usize) -> String {
        let mut s = match &o.root {
            Root::Global(n) => {
                let mut s = String::from("$");
                push_segment(&mut s, n);
                s
            }
            Root::Ref(c) => format!("REF:{c}"),
            Root::Local(slot) => self.render_local(*slot),
        };
        for seg in o.segments.iter().take(upto) {
            push_segment(&mut s, seg);
        }
        s
    }

    fn render_local(&self, slot: u32) -> String {
        match self.loc.get(slot as usize).and_then(Option::as_ref) {
            Some(LocalLoc { origin: Some(o), index, .. }) => format!("{}[{index}]", self.render_origin(o, usize::MAX)),
            Some(LocalLoc { origin: None, index, .. }) => format!("item[{index}]"),
            None => "current".to_string(),
        }
    }

    fn segment_error(&self, span: Span, root: Root, segs: &[Arc<str>], at: usize, e: SegmentError) -> EvalError {
        let origin = Origin { root, segments: segs.into() };
        let loc = self.render_origin(&origin, at);
        let seg = segs.get(at).map_or("", |s| &**s);
        let mut err = EvalError::new(Code::RuntimeType, span, format!("cannot read `.{seg}` of {:#}", e.found));
        err.location = Some(loc);
        err
    }

    fn op_error(&self, chunk: &Chunk, pc: usize, e: ops::OpError) -> EvalError {
        let span = chunk.span(pc);
        let mut err = EvalError::new(e.code, span, e.message);
        if let Some(origins) = chunk.origins_at(pc) {
            // The blamed operand's place, else whichever operand has one.
            let pick = match e.operand {
                Some(i) => origins[i as usize].as_ref().or(origins[1 - i as usize].as_ref()),
                None => origins[0].as_ref().or(origins[1].as_ref()),
            };
            if let Some(o) = pick {
                err.location = Some(self.render_origin(o, usize::MAX));
            }
        }
        err
    }

    fn exec(&mut self, chunk: &Chunk) -> Result<Value, EvalError> {
        let code = &chunk.code;
        let mut pc = 0;
        while let Some(op) = code.get(pc) {
            if self.fuel == 0 {
                self.refuel(1, chunk.span(pc))?;
            } else {
                self.fuel -= 1;
            }
            pc += 1;
            match op {
                Op::Const(i) => self.stack.push(chunk.consts[i as usize].clone()),
                Op::Global(n) => {
                    let v = self.env.vars.get_direct(&chunk.names[n as usize]).cloned().unwrap_or_default();
                    self.stack.push(v);
                }
                Op::Local(s) => {
                    let v = self.locals[s as usize].clone();
                    self.stack.push(v);
                }
                Op::GlobalPath(n, p) => {
                    let path = &chunk.paths[p as usize];
                    match global_path(self.env.vars, path) {
                        Ok(v) => self.stack.push(v),
                        Err((at, e)) => {
                            let name = chunk.names[n as usize].clone();
                            return Err(self.segment_error(chunk.span(pc - 1), Root::Global(name), &path[1..], at, e));
                        }
                    }
                }
                Op::LocalPath(s, p) => {
                    let segs = &chunk.paths[p as usize];
                    let v = match self.locals[s as usize].walk_path(segs) {
                        Ok(v) => v.into_owned(),
                        Err((at, e)) => {
                            return Err(self.segment_error(chunk.span(pc - 1), Root::Local(s), segs, at, e))
                        }
                    };
                    self.stack.push(v);
                }
                Op::Ref(n, p) => {
                    let ctx = &chunk.names[n as usize];
                    let segs = &chunk.paths[p as usize];
                    let v = match self.env.refs.get_direct(ctx) {
                        Some(root) => match root.walk_ref(segs) {
                            Ok(v) => v.into_owned(),
                            Err((at, e)) => {
                                return Err(self.segment_error(chunk.span(pc - 1), Root::Ref(ctx.clone()), segs, at, e))
                            }
                        },
                        None => Value::Null,
                    };
                    self.stack.push(v);
                }
                Op::Path(p) => {
                    let segs = &chunk.paths[p as usize];
                    let top = self.pop();
                    let v = match top.walk_path(segs) {
                        Ok(v) => v.into_owned(),
                        Err((at, e)) => {
                            let mut err = EvalError::new(
                                Code::RuntimeType,
                                chunk.span(pc - 1),
                                format!("cannot read `.{}` of {:#}", segs.get(at).map_or("", |s| &**s), e.found),
                            );
                            if let Some(Some(o)) = chunk.origins_at(pc - 1).map(|o| &o[0]) {
                                err.location = Some(self.render_origin(o, usize::MAX));
                            }
                            return Err(err);
                        }
                    };
                    self.stack.push(v);
                }
                Op::Index => {
                    let key = self.pop();
                    let v = self.pop();
                    match v.index(&key) {
                        Ok(x) => self.stack.push(x),
                        Err(e) => {
                            let mut err = EvalError::new(
                                Code::RuntimeType,
                                chunk.span(pc - 1),
                                format!("cannot index {:#} with {:#}", e.found, key.kind()),
                            );
                            if let Some(Some(o)) = chunk.origins_at(pc - 1).map(|o| &o[0]) {
                                err.location = Some(self.render_origin(o, usize::MAX));
                            }
                            return Err(err);
                        }
                    }
                }
                Op::List(n) => {
                    self.alloc(ops::list_bytes(n as usize), chunk.span(pc - 1))?;
                    let at = self.stack.len() - n as usize;
                    let items: Vec<Value> = self.stack.drain(at..).collect();
                    self.stack.push(Value::list(items));
                }
                Op::Object(k, n) => {
                    let keys = &chunk.keys[k as usize..k as usize + n as usize];
                    self.alloc(ops::object_bytes(keys.len()), chunk.span(pc - 1))?;
                    let at = self.stack.len() - keys.len();
                    let mut map = crate::value::Map::with_capacity_and_hasher(keys.len(), Default::default());
                    for (key, v) in keys.iter().zip(self.stack.drain(at..)) {
                        map.insert(key.clone(), v);
                    }
                    self.stack.push(Value::object(map));
                }
                Op::Not => {
                    let v = self.pop();
                    self.stack.push(Value::Bool(!v.truthy()));
                }
                Op::Neg => {
                    let v = self.pop();
                    match ops::neg(&v) {
                        Ok(x) => self.stack.push(x),
                        Err(e) => return Err(self.op_error(chunk, pc - 1, e)),
                    }
                }
                Op::Binary(op) => {
                    let b = self.pop();
                    let a = self.pop();
                    if matches!(op, BinaryOp::Eq | BinaryOp::Ne) && a.is_container() && b.is_container() {
                        // Comparing nested values walks them: charged per node visited.
                        let same = self.equal(&a, &b, chunk.span(pc - 1))?;
                        self.stack.push(Value::Bool(same == (op == BinaryOp::Eq)));
                        continue;
                    }
                    let cmp = ops::compare_cost(&a, &b);
                    if cmp > 0 && !matches!(op, BinaryOp::Add) {
                        self.burn(cmp, chunk.span(pc - 1))?;
                    }
                    match ops::binary(op, &a, &b, self.env.limits) {
                        Ok(x) => {
                            let cost = ops::build_cost(&x);
                            if cost > 0 {
                                self.burn(cost, chunk.span(pc - 1))?;
                            }
                            self.alloc(ops::build_bytes(&x), chunk.span(pc - 1))?;
                            self.stack.push(x)
                        }
                        Err(e) => return Err(self.op_error(chunk, pc - 1, e)),
                    }
                }
                Op::CmpLocalPathConst(op, s, p, c) => {
                    let segs = &chunk.paths[p as usize];
                    let konst = &chunk.consts[c as usize];
                    let field = match self.locals[s as usize].walk_path(segs) {
                        Ok(v) => v,
                        Err((at, e)) => {
                            return Err(self.segment_error(chunk.span(pc - 1), Root::Local(s), segs, at, e))
                        }
                    };
                    // Long strings compared: charged (a unit per 64 bytes), the field held
                    // by its own reference meanwhile.
                    if matches!(op, BinaryOp::Eq | BinaryOp::Ne) && field.is_container() && konst.is_container() {
                        // Comparing nested values walks them: charged per node visited.
                        let field = field.into_owned();
                        let same = self.equal(&field, konst, chunk.span(pc - 1))?;
                        self.stack.push(Value::Bool(same == (op == BinaryOp::Eq)));
                        continue;
                    }
                    let cmp = ops::compare_cost(&field, konst);
                    let field = if cmp > 0 {
                        let owned = field.into_owned();
                        self.burn(cmp, chunk.span(pc - 1))?;
                        std::borrow::Cow::Owned(owned)
                    } else {
                        field
                    };
                    let r = match op {
                        BinaryOp::Eq => Ok(Value::Bool(*field == *konst)),
                        BinaryOp::Ne => Ok(Value::Bool(*field != *konst)),
                        _ => ops::binary(op, &field, konst, self.env.limits),
                    };
                    match r {
                        Ok(x) => self.stack.push(x),
                        Err(e) => {
                            drop(field);
                            return Err(self.op_error(chunk, pc - 1, e));
                        }
                    }
                }
                Op::ToBool => {
                    let v = self.pop();
                    self.stack.push(Value::Bool(v.truthy()));
                }
                Op::Jump(t) => pc = t as usize,
                Op::JumpIfFalse(t) => {
                    if !self.pop().truthy() {
                        pc = t as usize;
                    }
                }
                Op::AndJump(t) => {
                    if self.stack.last().is_some_and(|v| !v.truthy()) {
                        if let Some(top) = self.stack.last_mut() {
                            *top = Value::Bool(false);
                        }
                        pc = t as usize;
                    } else {
                        self.pop();
                    }
                }
                Op::OrJump(t) => {
                    if self.stack.last().is_some_and(Value::truthy) {
                        if let Some(top) = self.stack.last_mut() {
                            *top = Value::Bool(true);
                        }
                        pc = t as usize;
                    } else {
                        self.pop();
                    }
                }
                Op::SetLocal(s) => {
                    let v = self.pop();
                    self.locals[s as usize] = v;
                    if let Some(l) = self.loc.get_mut(s as usize) {
                        *l = None;
                    }
                }
                Op::Call(i) => {
                    let v = self.call(chunk, &chunk.calls[i as usize], chunk.span(pc - 1))?;
                    self.stack.push(v);
                }
                Op::CallGroupsCounted(i) => {
                    let info = &chunk.calls[i as usize];
                    let v = self.call_as(info, chunk.span(pc - 1), self.env.funcs.counted_groups(info.func))?;
                    self.stack.push(v);
                }
                Op::Fused(i, o) => {
                    // The instruction stands for two calls: the second one's unit of fuel.
                    self.burn(1, chunk.span(pc - 1))?;
                    let v =
                        self.fused(chunk, &chunk.calls[i as usize], &chunk.calls[o as usize], chunk.span(pc - 1))?;
                    self.stack.push(v);
                }
            }
        }
        Ok(self.pop())
    }

    fn pop(&mut self) -> Value {
        // The compiler never emits an instruction that pops an empty stack.
        self.stack.pop().unwrap_or_default()
    }

    fn call(&mut self, _chunk: &Chunk, info: &CallInfo, span: Span) -> Result<Value, EvalError> {
        self.call_as(info, span, None)
    }

    /// A call, with `body` in place of the built-in's own when given.
    fn call_as(&mut self, info: &CallInfo, span: Span, body: Option<BuiltinFn>) -> Result<Value, EvalError> {
        let n = info.params.len();
        let mut args = self.arg_pool.pop().unwrap_or_default();
        let at = self.stack.len() - n;
        args.extend(self.stack.drain(at..));
        let func = self.env.funcs.get(info.func);
        let result = match &func.implementation {
            Implementation::Builtin(own) | Implementation::File(own) => {
                let body = body.unwrap_or(*own);
                let mut held = 0;
                let dynamic = self.resolve_dynamic(info, &args, span, &mut held);
                let result = match dynamic {
                    Err(e) => Err(e),
                    Ok(dynamic) => {
                        self.serial += 1;
                        let serial = self.serial;
                        let params = &info.params;
                        let mut frame = Frame { vm: self, info, params, dynamic, serial, span, ahead: None };
                        match crate::functions::invoke(body, &mut frame, &Args { values: &args, given: info.given }) {
                            Ok(v) => Ok(v),
                            Err(f) => Err(self.failure(info, span, f)),
                        }
                    }
                };
                // The run-time templates' compiles are dropped with the call: what they held
                // is the evaluation's again.
                self.release(held);
                result
            }
            Implementation::Host(f) => f(&args).map_err(|msg| {
                let mut e = EvalError::new(Code::HostFunction, span, msg);
                e.function = Some(info.name.clone());
                e
            }),
            Implementation::Inline => Err(EvalError::new(Code::RuntimeArgument, span, "inline function called")),
        };
        args.clear();
        self.arg_pool.push(args);
        result
    }

    /// `outer(inner(…), …)` for [`Op::Fused`]: the inner built-in's elements handed to the
    /// outer one borrowed, or, when the table's functions are not the built-ins, the two
    /// calls one after the other.
    fn fused(&mut self, chunk: &Chunk, inner: &CallInfo, outer: &CallInfo, span: Span) -> Result<Value, EvalError> {
        let inner_span = outer.arg_span(0).unwrap_or(span);
        // The outer call's arguments after the first, a placeholder for the list first.
        let mut rest = self.arg_pool.pop().unwrap_or_default();
        rest.push(Value::Null);
        let at = self.stack.len() - (outer.params.len() - 1);
        rest.extend(self.stack.drain(at..));
        let Some((producer, consumer)) = self.env.funcs.fusion(inner.func, outer.func) else {
            let list = self.call(chunk, inner, inner_span);
            let r = list.and_then(|list| {
                rest[0] = list;
                self.stack.append(&mut rest);
                self.call(chunk, outer, span)
            });
            rest.clear();
            self.arg_pool.push(rest);
            return r;
        };
        let mut args = self.arg_pool.pop().unwrap_or_default();
        let at = self.stack.len() - inner.params.len();
        args.extend(self.stack.drain(at..));
        let ahead = match (producer, consumer, args.first()) {
            (Producer::Sort, Consumer::Map, Some(list)) => ReadAhead::of(list, outer, self.fuel_left()),
            _ => None,
        };
        self.serial += 1;
        let serial = self.serial;
        let params = &inner.params;
        let mut frame =
            Frame { vm: self, info: inner, params, dynamic: Vec::new(), serial, span: inner_span, ahead: None };
        let result = match crate::functions::produce(producer, &mut frame, &Args { values: &args, given: inner.given })
        {
            Err(f) => Err(self.failure(inner, inner_span, f)),
            Ok(xs) => {
                self.serial += 1;
                let serial = self.serial;
                let params = &outer.params;
                let mut frame = Frame { vm: self, info: outer, params, dynamic: Vec::new(), serial, span, ahead };
                let out = Args { values: &rest, given: outer.given };
                crate::functions::consume(consumer, &mut frame, &xs, &out).map_err(|f| self.failure(outer, span, f))
            }
        };
        args.clear();
        rest.clear();
        self.arg_pool.push(args);
        self.arg_pool.push(rest);
        result
    }

    /// The call's run-time templates, compiled (or taken from the cache), each charged its
    /// compile's fuel and, for as long as the call holds it, its memory: `held` counts the
    /// bytes charged, which the caller gives back ([`Vm::release`]) when the call ends — so
    /// templates of different texts nested in each other are charged together while the
    /// inner ones run, and a template applied in a loop is not charged for good.
    fn resolve_dynamic(
        &mut self,
        info: &CallInfo,
        args: &[Value],
        span: Span,
        held: &mut u64,
    ) -> Result<Vec<Resolved>, EvalError> {
        if !info.params.iter().any(|p| matches!(p.pass, CallParam::Dynamic { .. })) {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(info.params.len());
        for (i, p) in info.params.iter().enumerate() {
            let CallParam::Dynamic { relative, slot, alias } = &p.pass else {
                out.push(None);
                continue;
            };
            let at = info.arg_span(i).unwrap_or(span);
            let src = match &args[i] {
                Value::Str(s) => s,
                other => {
                    let mut e = EvalError::new(
                        Code::RuntimeType,
                        at,
                        format!("a template given by name must hold an expression string, found {:#}", other.kind()),
                    );
                    e.function = Some(info.name.clone());
                    return Err(e);
                }
            };
            let named = |mut e: EvalError| {
                e.function = Some(info.name.clone());
                e
            };
            *held += self.template_cost(src, at).map_err(named)?;
            match self.env.templates.template(src, *relative, *slot, alias.as_ref()) {
                Ok(c) => out.push(Some((c, *slot))),
                Err((code, msg)) => {
                    let message = format!("template {} does not compile: {msg}", crate::functions::quoted(src));
                    return Err(named(EvalError::new(code, at, message)));
                }
            }
        }
        Ok(out)
    }

    /// Charges the compile of a run-time template's text (refused past its length limit),
    /// after polling the interrupt: a run of many templates stops at its deadline. Its fuel
    /// is spent; its memory is charged and the bytes returned, to be given back when the
    /// call that holds the compile ends.
    fn template_cost(&mut self, src: &str, at: Span) -> Result<u64, EvalError> {
        let (fuel, bytes) = crate::template::cost(src).map_err(|(code, msg)| EvalError::new(code, at, msg))?;
        if let Some(reason) = self.env.interrupt.and_then(Interrupt::check) {
            self.give_back_tick();
            self.reserve = 0;
            return Err(Interrupt::error(reason, at));
        }
        self.burn(fuel, at)?;
        self.alloc(bytes, at)?;
        Ok(bytes as u64)
    }

    fn failure(&self, info: &CallInfo, span: Span, f: Failure) -> EvalError {
        match f {
            Failure::Eval(mut e) => {
                if e.function.is_none() {
                    e.function = Some(info.name.clone());
                }
                e
            }
            Failure::Fn(fe) => {
                let at = fe.param.and_then(|p| info.arg_span(p)).unwrap_or(span);
                let mut e = EvalError::new(fe.code, at, fe.message);
                e.function = Some(info.name.clone());
                if let Some(p) = fe.param {
                    let base = info.origin(p).map(|o| self.render_origin(o, usize::MAX));
                    // When the element was read through a path template (`item_path="score"`),
                    // the place is that field of the element.
                    let suffix = fe.index.and_then(|_| path_template_suffix(info)).unwrap_or_default();
                    e.location = match (base, fe.index) {
                        (Some(b), Some(i)) => Some(format!("{b}[{i}]{suffix}")),
                        (Some(b), None) => Some(b),
                        (None, Some(i)) => Some(format!("element {i}")),
                        (None, None) => None,
                    };
                }
                e
            }
        }
    }
}

/// A run-time template resolved for one call: its chunk and `item`'s slot (`None` for
/// parameters that are not run-time templates).
type Resolved = Option<(Arc<Chunk>, u32)>;

/// `.a.b` when the call's template is just a path on `item` (`item.a.b`).
fn path_template_suffix(info: &CallInfo) -> Option<String> {
    info.params.iter().find_map(|p| match &p.pass {
        CallParam::Template(chunk, slot) => match chunk.code.single() {
            Some(Op::LocalPath(s, p)) if s == *slot => {
                let mut out = String::new();
                for seg in chunk.paths.get(p as usize)?.iter() {
                    push_segment(&mut out, seg);
                }
                Some(out)
            }
            _ => None,
        },
        _ => None,
    })
}

/// The runner a built-in gets: the VM plus the call site's templates.
struct Frame<'v, 'a> {
    vm: &'v mut Vm<'a>,
    info: &'v CallInfo,
    /// `info`'s parameters, read out of their table once per call: per element the
    /// template's fast form and chunk are found in this list.
    params: &'v [ParamSite],
    dynamic: Vec<Resolved>,
    serial: u64,
    /// The call's span, for errors the built-in raises through the runner.
    span: Span,
    /// `map`'s template read ahead over the list a fused `sort` reorders.
    ahead: Option<ReadAhead<'v>>,
}

impl Frame<'_, '_> {
    /// The fast form of parameter `param`'s template, if it has one.
    #[inline]
    fn fast(&self, param: usize) -> Option<&Fast> {
        fast_in(self.params, param)
    }

    /// `apply_each`'s loop, for either kind of element slice: a template that is a path on
    /// the element found once, not per element; an element it cannot be walked on goes
    /// through `apply`, which runs the chunk.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn apply_all<'x>(
        &mut self,
        param: usize,
        xs: impl Iterator<Item = &'x Value>,
        out: &mut Vec<Value>,
    ) -> Result<(), EvalError> {
        let path = fast_path(self.params, param);
        for (i, x) in xs.enumerate() {
            match path.map(|p| x.walk_path(p)) {
                Some(Ok(v)) => {
                    self.spend()?;
                    out.push(v.into_owned());
                }
                _ => out.push(self.apply(param, x, i)?),
            }
        }
        Ok(())
    }

    /// Spends one unit of fuel for a fast application.
    fn spend(&mut self) -> Result<(), EvalError> {
        if self.vm.fuel == 0 {
            return self.vm.refuel(1, self.span);
        }
        self.vm.fuel -= 1;
        Ok(())
    }
}

/// The text of a run-time template, for messages (its spans cover its whole text).
fn chunk_source(chunk: &Chunk) -> &str {
    chunk.source.as_deref().unwrap_or("")
}

impl Caller for Frame<'_, '_> {
    fn select<'x>(&mut self, param: usize, xs: &'x [Value], out: &mut Vec<&'x Value>) -> Result<(), EvalError> {
        let info = self.info;
        let Some(fast) = info.fast(param) else {
            for (i, x) in xs.iter().enumerate() {
                if self.test(param, x, i)? {
                    out.push(x);
                }
            }
            return Ok(());
        };
        let Fast::Pred(p) = fast else {
            for (i, x) in xs.iter().enumerate() {
                if self.test(param, x, i)? {
                    out.push(x);
                }
            }
            return Ok(());
        };
        // The condition in place, element after element, without a call per element: what
        // `test` does for each, a unit of fuel each.
        for (i, x) in xs.iter().enumerate() {
            let pass = match pred(p, x) {
                Some(b) => {
                    self.spend()?;
                    b
                }
                None => self.apply(param, x, i)?.truthy(),
            };
            if pass {
                out.push(x);
            }
        }
        Ok(())
    }

    fn test(&mut self, param: usize, item: &Value, index: usize) -> Result<bool, EvalError> {
        let answer = match self.fast(param) {
            Some(Fast::Pred(p)) => pred(p, item),
            Some(Fast::Path(path)) => item.walk_path(path).ok().map(|v| v.truthy()),
            None => None,
        };
        match answer {
            Some(b) => self.spend().map(|()| b),
            None => Ok(self.apply(param, item, index)?.truthy()),
        }
    }

    fn apply_each(&mut self, param: usize, xs: Elems<'_>, out: &mut Vec<Value>) -> Result<(), EvalError> {
        match (xs, self.ahead.take()) {
            (Elems::Values(xs), _) => self.apply_all(param, xs.iter(), out),
            (Elems::Refs(xs), None) => self.apply_all(param, xs.iter().copied(), out),
            (Elems::Refs(xs), Some(ahead)) => {
                for (i, x) in xs.iter().enumerate() {
                    match ahead.get(x) {
                        Some(v) => {
                            self.spend()?;
                            out.push(v.clone());
                        }
                        None => out.push(self.apply(param, x, i)?),
                    }
                }
                Ok(())
            }
        }
    }

    fn int_keys<'x>(
        &mut self,
        param: usize,
        xs: &'x [Value],
        out: &mut Vec<(i64, &'x Value)>,
    ) -> Result<Option<(usize, Cow<'x, Value>)>, EvalError> {
        // The key path found once, not per element; an element it cannot be walked on goes
        // through `project`, which runs the chunk and reports as it would.
        let path = fast_path(self.params, param);
        for (i, x) in xs.iter().enumerate() {
            let k = match path.map(|p| x.walk_path(p)) {
                Some(Ok(v)) => {
                    self.spend()?;
                    v
                }
                _ => self.project(param, x, i)?,
            };
            match &*k {
                Value::Int(n) => out.push((*n, x)),
                _ => return Ok(Some((i, k))),
            }
        }
        Ok(None)
    }

    fn project<'v>(&mut self, param: usize, item: &'v Value, index: usize) -> Result<Cow<'v, Value>, EvalError> {
        if let Some(Fast::Path(path)) = self.fast(param) {
            if let Ok(v) = item.walk_path(path) {
                self.spend()?;
                return Ok(v);
            }
        }
        self.apply(param, item, index).map(Cow::Owned)
    }

    fn apply(&mut self, param: usize, item: &Value, index: usize) -> Result<Value, EvalError> {
        if let Some(Fast::Path(path)) = self.fast(param) {
            if let Ok(v) = item.walk_path(path) {
                self.spend()?;
                return Ok(v.into_owned());
            }
        }
        // A run-time template's spans are offsets in its own text: errors from it point at
        // the argument that named it.
        let (chunk, slot, named_at): (&Chunk, u32, Option<Span>) = match self.params.get(param).map(|p| &p.pass) {
            Some(CallParam::Template(c, s)) => (c, *s, None),
            Some(CallParam::Dynamic { .. }) => match self.dynamic.get(param).and_then(Option::as_ref) {
                Some((c, s)) => (c, *s, self.info.arg_span(param)),
                None => return Ok(item.clone()),
            },
            _ => return Ok(item.clone()),
        };
        let vm = &mut *self.vm;
        if vm.fuel == 0 {
            vm.refuel(1, chunk.span(0))?;
        } else {
            vm.fuel -= 1;
        }
        if vm.depth >= vm.env.limits.max_depth {
            return Err(EvalError::new(
                Code::DepthLimit,
                chunk.span(0),
                format!("templates nested deeper than {} levels", vm.env.limits.max_depth),
            ));
        }
        let s = slot as usize;
        let needed = (chunk.locals as usize).max(s + 1);
        if vm.locals.len() < needed {
            vm.locals.resize(needed, Value::Null);
        }
        if vm.loc.len() < needed {
            vm.loc.resize(needed, None);
        }
        // The element's origin is set once per call; per element only the index changes.
        match &mut vm.loc[s] {
            Some(l) if l.serial == self.serial => l.index = index,
            other => *other = Some(LocalLoc { origin: self.info.origin(0).cloned(), index, serial: self.serial }),
        }
        vm.locals[s] = item.clone();
        vm.depth += 1;
        let r = vm.exec(chunk).and_then(|v| crate::runtime::template_result(v, vm.depth, vm.env.limits, chunk.span(0)));
        vm.depth -= 1;
        match (r, named_at) {
            (Err(mut e), Some(at)) => {
                // The outermost run-time template decides the span: only its argument is
                // in the program's source.
                e.span = at;
                if !e.message.starts_with("in template") {
                    e.message = format!("in template {}: {}", crate::functions::quoted(chunk_source(chunk)), e.message);
                }
                Err(e)
            }
            (r, _) => r,
        }
    }

    fn charge(&mut self, units: usize) -> Result<(), EvalError> {
        self.vm.burn(units as u64, self.span)
    }

    fn fuel_left(&self) -> u64 {
        self.vm.fuel_left()
    }

    fn alloc_left(&self) -> u64 {
        self.vm.alloc
    }

    fn alloc(&mut self, bytes: usize) -> Result<(), EvalError> {
        self.vm.alloc(bytes, self.span)
    }

    fn limits(&self) -> &Limits {
        self.vm.env.limits
    }

    fn clock(&self) -> &dyn Clock {
        self.vm.env.clock
    }

    fn files(&self) -> Option<&dyn FileStore> {
        self.vm.env.files
    }
}
