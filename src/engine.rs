//! The library's front door: an [`Engine`] holds functions, limits and a clock, and turns
//! source text into a [`Program`] that evaluates many times.
//!
//! `compile` runs every stage in order — parse, check, fold, generate code — and either
//! returns a program or every diagnostic found. A `Program` is immutable and `Send + Sync`;
//! the only state it shares between evaluations is the cache of templates compiled at run
//! time, which is bounded.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::compile::{self, Chunk, Op};
use crate::diagnostic::Diagnostic;
use crate::files::FileStore;
use crate::functions::{Function, FunctionTable, HostFn, Implementation, Signature};
use crate::runtime::{Clock, EvalError, Interrupt, Limits, SystemClock};
use crate::span::Span;
use crate::syntax::{self, ast::Name};
use crate::types::{self, typed::TExpr, RefUse, Scope, Type};
use crate::value::Value;
use crate::vm::{self, Env, TemplateSource};

/// Functions, limits, a clock and a file store: what programs are compiled and run with.
#[derive(Clone)]
pub struct Engine {
    funcs: Arc<FunctionTable>,
    limits: Limits,
    /// Whether `limits` are within their ranges (checked when they are set, not per compile).
    limits_valid: bool,
    clock: Arc<dyn Clock>,
    files: Option<Arc<dyn FileStore>>,
}

impl Default for Engine {
    fn default() -> Engine {
        Engine::new()
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("limits", &self.limits)
            .field("file_store", &self.files.is_some())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine with the built-in functions, default limits and the system clock.
    pub fn new() -> Engine {
        Engine {
            funcs: Arc::new(FunctionTable::builtins()),
            limits: Limits::default(),
            limits_valid: Limits::default().validate().is_ok(),
            clock: Arc::new(SystemClock),
            files: None,
        }
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Engine {
        self.limits_valid = limits.validate().is_ok();
        self.limits = limits;
        self
    }

    /// Replaces the clock `datetime_now` reads.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Engine {
        self.clock = clock;
        self
    }

    /// Sets the file store the file functions (`read_file`, `list_files`, …) read. Without
    /// one they fail with `E0308`. See [`crate::files`] for the stores that come with tdsl.
    pub fn with_file_store(mut self, store: Arc<dyn FileStore>) -> Engine {
        self.files = Some(store);
        self
    }

    /// The file store, if one is set.
    pub fn file_store(&self) -> Option<&Arc<dyn FileStore>> {
        self.files.as_ref()
    }

    /// Registers a host function. Its parameters must be value parameters; calls are
    /// checked against the signature like built-ins (arity, keywords, types).
    pub fn register_function(&mut self, signature: Signature, body: HostFn) {
        Arc::make_mut(&mut self.funcs).insert(Function { signature, implementation: Implementation::Host(body) });
    }

    /// The functions programs can call.
    pub fn functions(&self) -> &FunctionTable {
        &self.funcs
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Compiles `source` in an open scope: any name and REF context is accepted (as `any`)
    /// and resolved against the variables at run time.
    pub fn compile(&self, source: &str) -> Result<Program, Vec<Diagnostic>> {
        self.compile_in(source, &Scope::open())
    }

    /// Compiles `source` in `scope`: unknown names are errors and types flow from the
    /// scope's declarations.
    pub fn compile_in(&self, source: &str, scope: &Scope) -> Result<Program, Vec<Diagnostic>> {
        // A program without problems is compiled in one pass from its text, when the
        // one-pass compiler models all of it; everything else (and every diagnostic) is the
        // reference pipeline's.
        if self.limits_valid {
            if let Some(direct) = compile::compile_direct(source, scope, &*self.funcs, &self.limits) {
                return Ok(self.direct_program(source, scope, direct));
            }
        }
        let analysis = self.run_stages(source, scope, false);
        // The tree is not handed out: its nodes are kept for the next parse on this thread.
        syntax::recycle(analysis.ast);
        match analysis.program {
            Some(p) => Ok(p),
            None => Err(analysis.diagnostics),
        }
    }

    /// Runs every stage and returns everything: the program when there is no error, and all
    /// diagnostics (warnings included) either way.
    pub fn analyze(&self, source: &str, scope: &Scope) -> Analysis {
        self.run_stages(source, scope, true)
    }

    /// [`Engine::analyze`]; without `references`, the analysis's `references` are left
    /// empty when there is a program (which holds them), sparing a copy.
    fn run_stages(&self, source: &str, scope: &Scope, references: bool) -> Analysis {
        if !self.limits_valid {
            if let Err(e) = self.limits.validate() {
                return limits_out_of_range(&e);
            }
        }
        let parsed = syntax::parse_with_limit(source, self.limits.max_depth);
        let mut diagnostics = parsed.diagnostics;
        let checked = types::check(&parsed.expr, scope, &self.funcs, self.limits.max_depth);
        // A syntax error makes further type errors noise: report the syntax first.
        if diagnostics.iter().all(|d| d.code != crate::diagnostic::Code::Syntax) {
            diagnostics.extend(checked.diagnostics);
        }
        if !diagnostics.iter().any(Diagnostic::is_error) {
            // A list or object literal past the list limit (a program's source is bounded
            // by its host only): refused now, not built when it runs.
            if let Some((span, n)) = crate::template::literal_past(source, &checked.expr, self.limits.max_list_len) {
                diagnostics.push(crate::template::literal_error(span, n, self.limits.max_list_len));
            }
        }
        diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
        let mut refs = References { refs: checked.refs, names: checked.names };
        if diagnostics.iter().any(Diagnostic::is_error) {
            return Analysis { program: None, diagnostics, ast: parsed.expr, ty: checked.expr.ty, references: refs };
        }
        let ty = checked.expr.ty.clone();
        // A tree without a node whose operands are all constants folds to itself: no walk.
        let folded = if checked.constant_operands {
            compile::fold(&checked.expr, &self.funcs, &self.limits)
        } else {
            debug_assert!(matches!(compile::fold(&checked.expr, &self.funcs, &self.limits), Cow::Borrowed(_)));
            Cow::Borrowed(&checked.expr)
        };
        let chunk = compile::compile(&folded);
        let warnings: Vec<Diagnostic> = diagnostics.clone();
        let program = Program {
            inner: Arc::new(Inner {
                source: Arc::from(source),
                chunk,
                typed: OnceLock::from(checked.expr),
                scope: None,
                ty: ty.clone(),
                references: if references { refs.clone() } else { std::mem::take(&mut refs) },
                warnings,
                funcs: self.funcs.clone(),
                limits: self.limits.clone(),
                clock: self.clock.clone(),
                files: self.files.clone(),
                cache: Mutex::new(HashMap::new()),
            }),
        };
        Analysis { program: Some(program), diagnostics, ast: parsed.expr, ty, references: refs }
    }
}

impl Engine {
    /// The program the one-pass compiler made: its typed tree is built from the source when
    /// first asked for ([`Program::typed`]), so the scope is kept for it.
    fn direct_program(&self, source: &str, scope: &Scope, direct: compile::Direct) -> Program {
        let compile::Direct { chunk, ty, refs, names } = direct;
        Program {
            inner: Arc::new(Inner {
                source: Arc::from(source),
                chunk,
                typed: OnceLock::new(),
                scope: Some(scope.clone()),
                ty,
                references: References { refs, names },
                warnings: Vec::new(),
                funcs: self.funcs.clone(),
                limits: self.limits.clone(),
                clock: self.clock.clone(),
                files: self.files.clone(),
                cache: Mutex::new(HashMap::new()),
            }),
        }
    }
}

/// Compiles `source` in `scope` both ways, in one pass and by the reference pipeline:
/// `Ok(true)` when the one-pass compiler answered and its program is the reference
/// pipeline's (chunk, templates and fast forms, type, REFs, free names, no diagnostic);
/// `Ok(false)` when it declined; `Err` saying what differs. For the differential tests and
/// the `compile` fuzz target.
pub fn direct_agrees(engine: &Engine, source: &str, scope: &Scope) -> Result<bool, String> {
    if engine.limits.validate().is_err() {
        return Ok(false);
    }
    let Some(direct) = compile::compile_direct(source, scope, &*engine.funcs, &engine.limits) else {
        return Ok(false);
    };
    let analysis = engine.run_stages(source, scope, true);
    syntax::recycle(analysis.ast);
    if !analysis.diagnostics.is_empty() {
        let codes: Vec<String> = analysis.diagnostics.iter().map(|d| d.code.to_string()).collect();
        return Err(format!("answered, but the reference pipeline reports {codes:?}"));
    }
    let Some(program) = analysis.program else { return Err("answered, but no reference program".into()) };
    let reference = &*program.inner;
    let (a, b) = (compile::fingerprint(&direct.chunk), compile::fingerprint(&reference.chunk));
    if a != b {
        return Err(format!("chunks differ:\n--- one pass\n{a}\n--- reference\n{b}"));
    }
    if direct.ty != reference.ty || format!("{:?}", direct.ty) != format!("{:?}", reference.ty) {
        return Err(format!("types differ: {:?} against {:?}", direct.ty, reference.ty));
    }
    let refs = References { refs: direct.refs, names: direct.names };
    if refs != reference.references {
        return Err(format!("references differ: {refs:?} against {:?}", reference.references));
    }
    Ok(true)
}

/// What `analyze` gives for an engine whose limits are out of range: `E0409`, nothing else.
fn limits_out_of_range(e: &crate::ranges::RangeError) -> Analysis {
    let d = Diagnostic::new(
        crate::diagnostic::Code::LimitOutOfRange,
        Span::new(0, 0),
        format!("the engine's limits are out of range: `Limits::{}", &e.to_string()[1..]),
    )
    .with_help("set every limit within its range (`tdsl::ranges`; `Limits::validate` checks them)");
    Analysis {
        program: None,
        diagnostics: vec![d],
        ast: syntax::parse("null").expr,
        ty: Type::Any,
        references: References::default(),
    }
}

/// Everything `analyze` found.
#[derive(Debug)]
pub struct Analysis {
    /// The program, when there were no errors.
    pub program: Option<Program>,
    /// Errors and warnings, in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// The parsed tree (the crate's own: its shape changes with the language).
    pub(crate) ast: syntax::ast::Expr,
    /// The inferred type of the whole expression.
    pub ty: Type,
    /// The REF paths and free names used.
    pub references: References,
}

/// What a program reads from outside: REF paths and free names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct References {
    /// REF paths, in source order, with their spans (inside template strings too).
    pub refs: Vec<RefUse>,
    /// Free names read from the variables, in first-use order, with a span each.
    pub names: Vec<(Arc<str>, Span)>,
}

/// A compiled expression: immutable, shareable across threads, evaluated many times.
#[derive(Clone)]
pub struct Program {
    inner: Arc<Inner>,
}

struct Inner {
    source: Arc<str>,
    chunk: Chunk,
    /// The checked tree before folding: the reference evaluator's input, so that
    /// differential tests cover folding too. Built with the program by the reference
    /// pipeline; from the source when first asked for, for a program compiled in one pass.
    typed: OnceLock<TExpr>,
    /// The scope a program compiled in one pass was compiled in, to build its typed tree.
    scope: Option<Scope>,
    ty: Type,
    references: References,
    warnings: Vec<Diagnostic>,
    funcs: Arc<FunctionTable>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    files: Option<Arc<dyn FileStore>>,
    /// Templates compiled at run time, by (text, relative, slot, alias).
    cache: Mutex<HashMap<TemplateKey, Arc<Chunk>>>,
}

/// A run-time template: its text, whether paths are relative to `item`, `item`'s slot, and
/// the element's second name (`as`), which changes what the text's names mean.
type TemplateKey = (Arc<str>, bool, u32, Option<Name>);

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("source", &self.inner.source)
            .field("type", &self.inner.ty)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// Evaluates with `vars` (an object, or `null` for none) as both the variables and the
    /// REF contexts.
    #[inline]
    pub fn eval(&self, vars: &Value) -> Result<Value, EvalError> {
        self.eval_with(vars, vars)
    }

    /// [`Program::eval`] without taking ownership of the result where it can be avoided: a
    /// program that reads a part of `vars` (`profile.email`, `user`) returns that part
    /// borrowed, with no reference count touched (an owned result costs two atomic
    /// operations: the clone, and the caller's drop). Any other program's result is owned.
    /// Same values and errors as [`Program::eval`].
    ///
    /// ```
    /// use std::borrow::Cow;
    /// let program = tdsl::Engine::new().compile("profile.email").unwrap();
    /// let record: tdsl::Value = serde_json::from_str(r#"{"profile": {"email": "ada@example.com"}}"#).unwrap();
    /// let email = program.eval_ref(&record).unwrap();
    /// assert!(matches!(email, Cow::Borrowed(_)));
    /// assert_eq!(email.as_str(), Some("ada@example.com"));
    /// ```
    #[inline]
    pub fn eval_ref<'v>(&self, vars: &'v Value) -> Result<Cow<'v, Value>, EvalError> {
        let inner = &*self.inner;
        let found: Option<&'v Value> = match inner.chunk.code.single() {
            // The inline cache first; on a miss, the search that refills it.
            Some(Op::GlobalPath(_, p)) => {
                inner.chunk.paths.get(p as usize).and_then(|path| match vars.follow_hints(path) {
                    Ok(v) => Some(v),
                    Err(_) => Self::searched(vars, path),
                })
            }
            Some(Op::Global(n)) => inner.chunk.names.get(n as usize).and_then(|name| vars.get_direct(name)),
            _ => None,
        };
        match found {
            Some(v @ Value::Str(s)) if s.len() + 2 <= inner.limits.max_output_bytes => Ok(Cow::Borrowed(v)),
            Some(v @ (Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_))) => Ok(Cow::Borrowed(v)),
            Some(v @ (Value::List(_) | Value::Object(_)))
                if check_output(v, &inner.limits, Span::new(0, inner.source.len())).is_ok() =>
            {
                Ok(Cow::Borrowed(v))
            }
            _ => self.eval(vars).map(Cow::Owned),
        }
    }

    /// A path read whose inline cache missed: the search that refills it, out of line.
    #[inline(never)]
    fn searched<'v>(vars: &'v Value, path: &crate::value::Path) -> Option<&'v Value> {
        match vars.walk_path(path) {
            Ok(Cow::Borrowed(v)) => Some(v),
            _ => None,
        }
    }

    /// Evaluates with separate variables and REF contexts.
    pub fn eval_with(&self, vars: &Value, refs: &Value) -> Result<Value, EvalError> {
        match self.cached_read(vars) {
            Some(v) => Ok(v),
            None => self.eval_general(vars, refs),
        }
    }

    /// The answer of a program that is one path read (`profile.email`) when every key is
    /// where the path's inline cache says and the result is a scalar or a string within the
    /// output limit; `None` otherwise. The commonest program, answered in a few
    /// instructions per segment and a reference-count increment: a leaf function, so it
    /// saves no registers for the general case.
    #[inline]
    fn cached_read(&self, vars: &Value) -> Option<Value> {
        let inner = &*self.inner;
        let Some(Op::GlobalPath(_, p)) = inner.chunk.code.single() else { return None };
        match vars.follow_hints(inner.chunk.paths.get(p as usize)?).ok()? {
            Value::Str(s) if s.len() + 2 <= inner.limits.max_output_bytes => Some(Value::Str(s.clone())),
            v @ (Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_)) => Some(v.clone()),
            _ => None,
        }
    }

    #[inline(never)]
    fn eval_general(&self, vars: &Value, refs: &Value) -> Result<Value, EvalError> {
        let inner = &*self.inner;
        // A program that is one read (`profile.email`, a constant, `REF:step.x`) is answered
        // before any evaluation state is set up.
        if let Some(op) = inner.chunk.code.single() {
            if let Some(v) = vm::single_read(&inner.chunk, op, vars, refs) {
                let v = v?;
                if let Value::Str(s) = &v {
                    if s.len() + 2 <= inner.limits.max_output_bytes {
                        return Ok(v);
                    }
                }
                return self.checked(v);
            }
        }
        self.run_vm(vars, refs, Interrupt::ambient().as_ref())
    }

    /// [`Program::eval_with`] that stops when `interrupt` is cancelled or its deadline
    /// passes (`E0407`, `E0408`): the evaluator polls it with its fuel, so a running
    /// expression stops within microseconds of the signal. See [`Interrupt`].
    pub fn eval_interruptible(&self, vars: &Value, refs: &Value, interrupt: &Interrupt) -> Result<Value, EvalError> {
        if let Some(reason) = interrupt.check() {
            return Err(Interrupt::error(reason, Span::new(0, self.inner.source.len())));
        }
        match self.cached_read(vars) {
            Some(v) => Ok(v),
            None => {
                if let Some(op) = self.inner.chunk.code.single() {
                    if vm::single_read(&self.inner.chunk, op, vars, refs).is_some() {
                        return self.eval_general(vars, refs);
                    }
                }
                self.run_vm(vars, refs, Some(interrupt))
            }
        }
    }

    #[inline(never)]
    fn run_vm(&self, vars: &Value, refs: &Value, interrupt: Option<&Interrupt>) -> Result<Value, EvalError> {
        let inner = &*self.inner;
        let env = Env {
            interrupt,
            vars,
            refs,
            funcs: &inner.funcs,
            limits: &inner.limits,
            clock: &*inner.clock,
            templates: inner,
            files: inner.files.as_deref(),
        };
        let v = vm::run(&inner.chunk, &env)?;
        self.checked(v)
    }

    /// The result, if it is within the output limit.
    #[inline(never)]
    fn checked(&self, v: Value) -> Result<Value, EvalError> {
        let inner = &*self.inner;
        if !matches!(v, Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_)) {
            check_output(&v, &inner.limits, Span::new(0, inner.source.len()))?;
        }
        Ok(v)
    }

    /// Evaluates with the tree-walking reference evaluator instead of the VM (for
    /// differential testing; same results, slower).
    pub fn eval_reference(&self, vars: &Value, refs: &Value) -> Result<Value, EvalError> {
        let inner = &*self.inner;
        let v = crate::reference::evaluate_with_files(
            self.typed(),
            vars,
            refs,
            &inner.funcs,
            &inner.limits,
            &*inner.clock,
            inner.files.as_deref(),
        )?;
        check_output(&v, &inner.limits, Span::new(0, inner.source.len()))?;
        Ok(v)
    }

    /// The checked tree before folding (built now, the first time, for a program compiled
    /// in one pass: the program has no problem, so checking it again finds none).
    fn typed(&self) -> &TExpr {
        let inner = &*self.inner;
        inner.typed.get_or_init(|| {
            let scope = inner.scope.clone().unwrap_or_else(Scope::open);
            let parsed = syntax::parse_with_limit(&inner.source, inner.limits.max_depth);
            let checked = types::check(&parsed.expr, &scope, &*inner.funcs, inner.limits.max_depth);
            syntax::recycle(parsed.expr);
            checked.expr
        })
    }

    /// The REF paths and free names the program reads.
    pub fn references(&self) -> &References {
        &self.inner.references
    }

    /// The inferred result type.
    pub fn result_type(&self) -> &Type {
        &self.inner.ty
    }

    /// The innermost sub-expression at byte offset `at` of the source: its span and its
    /// type (what an editor shows on hover). Template strings are looked into.
    ///
    /// ```
    /// let program = tdsl::Engine::new().compile("length([1, 2]) + 1").unwrap();
    /// let (span, ty) = program.type_at(1).unwrap();
    /// assert_eq!((&program.source()[span.range()], ty.to_string().as_str()), ("length([1, 2])", "integer"));
    /// ```
    pub fn type_at(&self, at: usize) -> Option<(crate::span::Span, &Type)> {
        let node = self.typed().innermost_at(at)?;
        Some((node.span, &node.ty))
    }

    /// Warnings found while compiling.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.inner.warnings
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// How many run-time templates are cached (at most `Limits::max_cached_templates`).
    #[doc(hidden)]
    pub fn cached_templates(&self) -> usize {
        self.inner.cache.lock().map_or(0, |c| c.len())
    }

    /// A readable listing of the bytecode.
    pub fn disassemble(&self) -> String {
        compile::disassemble(&self.inner.chunk)
    }
}

/// The deepest result a JSON reader reads back: `serde_json` refuses a 128th level of
/// brackets, and so do `json_parse`, `--vars` and every file tdsl reads. A result nests at
/// most this deep (and at most the depth limit), so what is printed can be read back.
pub(crate) const MAX_RESULT_DEPTH: usize = 127;

fn check_output(v: &Value, limits: &Limits, span: Span) -> Result<(), EvalError> {
    let max_depth = limits.max_depth.min(MAX_RESULT_DEPTH);
    let (size, too_deep) = match v {
        Value::Str(s) => (s.len() + 2, false),
        _ => v.measure(limits.max_output_bytes, max_depth),
    };
    if too_deep {
        return Err(EvalError::new(
            crate::diagnostic::Code::DepthLimit,
            span,
            format!("the result nests deeper than {max_depth} levels (what is printed must read back as JSON)"),
        ));
    }
    if size > limits.max_output_bytes {
        return Err(EvalError::new(
            crate::diagnostic::Code::OutputLimit,
            span,
            format!("the result exceeds the output limit of {} bytes", limits.max_output_bytes),
        ));
    }
    Ok(())
}

impl TemplateSource for Inner {
    fn template(
        &self,
        source: &str,
        relative: bool,
        slot: u32,
        alias: Option<&Name>,
    ) -> Result<Arc<Chunk>, crate::template::TemplateError> {
        let key = (Arc::from(source), relative, slot, alias.cloned());
        if let Ok(cache) = self.cache.lock() {
            if let Some(c) = cache.get(&key) {
                return Ok(c.clone());
            }
        }
        // Parse and check (as the reference evaluator does), then fold and generate code.
        let checked = crate::template::check_text(source, relative, slot, alias, &self.funcs, &self.limits)?;
        let typed = compile::fold(&checked, &self.funcs, &self.limits);
        let mut chunk = compile::compile(&typed);
        chunk.locals = chunk.locals.max(slot + 1);
        chunk.source = Some(key.0.clone());
        let chunk = Arc::new(chunk);
        if let Ok(mut cache) = self.cache.lock() {
            // Bounded, in number and in text: past either limit, templates are compiled per
            // call instead of cached (each call is charged for it anyway).
            let held: usize = cache.keys().map(|k| k.0.len()).sum();
            if cache.len() < self.limits.max_cached_templates
                && held + source.len() <= crate::template::MAX_CACHED_TEMPLATE_BYTES
            {
                cache.insert(key, chunk.clone());
            }
        }
        Ok(chunk)
    }
}

#[cfg(test)]
mod tests;
