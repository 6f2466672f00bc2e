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
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn program_is_send_and_sync() {
        assert_send_sync::<Program>();
        assert_send_sync::<Engine>();
    }

    /// A condition with a fast form is compiled into a chunk by the reference pipeline only
    /// when the fast form cannot answer (an element of the wrong type): not by the compile,
    /// not while every element fits, and then it answers as a chunk compiled at once does
    /// (code, message, span, data location). (The one-pass compiler emits the chunk as it
    /// reads the condition: nothing is left to defer.)
    #[test]
    fn a_conditions_chunk_is_compiled_when_first_needed() {
        use crate::compile::CallParam;
        fn compiled(program: &Program) -> Vec<bool> {
            let params = program.inner.chunk.calls.iter().flat_map(|c| c.params.iter());
            params
                .filter_map(|p| if let CallParam::Template(c, ..) = &p.pass { Some(c.is_compiled()) } else { None })
                .collect()
        }
        let src =
            "map(array=filter(array=xs, condition_string=\"item.a > 1 and item.b == 'x'\"), template={a: item.a})";
        let engine = Engine::new();
        let reference = || engine.analyze(src, &Scope::open()).program;
        let (Some(lazy), Some(eager)) = (reference(), reference()) else { panic!("`{src}` compiles") };
        assert_eq!(compiled(&lazy), [false, true], "the condition's chunk waits; the object template's does not");
        let fits = Value::from(&serde_json::json!({"xs": [{"a": 3, "b": "x"}, {"a": 0, "b": "y"}]}));
        assert_eq!(lazy.eval(&fits).map(|v| v.to_string()), Ok("[{\"a\":3}]".to_string()));
        assert_eq!(compiled(&lazy), [false, true], "the fast form answered every element");
        let listing = eager.disassemble();
        assert_eq!(compiled(&eager), [true, true]);
        let mismatch = Value::from(&serde_json::json!({"xs": [{"a": 3, "b": "x"}, {"a": "s", "b": "y"}]}));
        let (Err(got), Err(want)) = (lazy.eval(&mismatch), eager.eval(&mismatch)) else {
            panic!("comparing a string with 1 fails")
        };
        assert_eq!(got, want);
        assert_eq!(got.location.as_deref(), Some("$.xs[1].a"), "{got:?}");
        assert_eq!(compiled(&lazy), [true, true], "the chunk ran, so it was compiled");
        assert_eq!(lazy.disassemble(), listing);
    }

    /// The same engine with `filter`, `sort`, `map` and `sum` re-registered as themselves:
    /// the VM then runs every fused pair as its two calls.
    /// `src` compiled as usual and with `map`, `sum`, `filter` and `sort` unfused gives the
    /// same value, or the same error, at `limits`.
    fn fused_matches_two_calls(src: &str, vars: &Value, limits: &Limits) {
        let a = Engine::new().with_limits(limits.clone()).compile(src).map(|p| p.eval(vars));
        let b = unfused(limits.clone()).compile(src).map(|p| p.eval(vars));
        let (Ok(a), Ok(b)) = (a, b) else { panic!("`{src}` does not compile") };
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}` at {limits:?}"),
            (Err(x), Err(y)) => assert_eq!(**x, **y, "`{src}` at {limits:?}"),
            _ => panic!("`{src}` at {limits:?}: fused {a:?}, two calls {b:?}"),
        }
    }

    fn unfused(limits: Limits) -> Engine {
        let mut funcs = FunctionTable::builtins();
        for name in ["filter", "sort", "map", "sum"] {
            let Some(id) = funcs.lookup(name) else { panic!("{name} is a built-in") };
            let f = funcs.get(id).clone();
            funcs.insert(f);
        }
        Engine { funcs: Arc::new(funcs), ..Engine::new().with_limits(limits) }
    }

    /// A fused `map`/`sum` over a `filter`/`sort` gives what the two calls give: the same
    /// value, or the same error (code, message, span, function and data location), and runs
    /// out of fuel and memory at the same budgets.
    /// A chain of `and`s (or `or`s) in a condition becomes one flat list in its fast form,
    /// whichever way it is grouped, and answers as the chunk does: short-circuiting left to
    /// right, so an operand that cannot be compared is only a failure when it is reached.
    #[test]
    fn condition_chains_are_flat_and_answer_as_the_chunk_does() {
        use crate::compile::{CallParam, Fast, Pred};
        fn fast_of(program: &Program) -> Option<Pred> {
            program.inner.chunk.calls.iter().flat_map(|c| c.params.iter()).find_map(|p| match &p.pass {
                CallParam::Template(t, _) => match t.fast() {
                    Some(Fast::Pred(p)) => Some(p.clone()),
                    _ => None,
                },
                _ => None,
            })
        }
        let engine = Engine::new();
        let shape = |src: &str| {
            let p = engine.compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            match fast_of(&p) {
                Some(Pred::And(ps)) => format!("and{}", ps.len()),
                Some(Pred::Or(ps)) => format!("or{}", ps.len()),
                other => format!("{other:?}"),
            }
        };
        assert_eq!(shape("filter(xs, 'item.a > 1 and item.b > 2 and item.c')"), "and3");
        assert_eq!(shape("filter(xs, 'item.a > 1 and (item.b > 2 and item.c)')"), "and3");
        assert_eq!(shape("filter(xs, 'item.a or item.b or item.c or item.d')"), "or4");
        assert_eq!(shape("filter(xs, '(item.a or item.b) and item.c')"), "and2");
        let vars = Value::from(&serde_json::json!({
            "xs": [
                {"a": 3, "b": "x", "c": true, "d": null},
                {"a": 1, "b": 7, "c": false, "d": 1},
                {"a": 2, "b": 5, "c": null, "d": "s"},
                {"a": 5, "b": 1, "c": true, "d": [1]}
            ]
        }));
        for cond in [
            "item.a > 1 and item.b > 2 and item.c",
            "item.a > 2 and item.b > 'a'",
            "item.a > 0 and item.b > 'a'",
            "item.a < 2 or item.b > 2 or item.d",
            "item.a < 2 or item.b > 'a'",
            "not item.c and (item.a > 1 or item.d) and item.b != 5",
            "item.c or item.a > 1 and item.b < 6",
        ] {
            // The same condition written so it has no fast form (a call in it) is the chunk's answer.
            let fast = engine.compile(&format!("filter(xs, \"{cond}\")")).map(|p| p.eval(&vars));
            let slow =
                engine.compile(&format!("filter(xs, \"({cond}) and to_string(1) == '1'\")")).map(|p| p.eval(&vars));
            let (Ok(fast), Ok(slow)) = (fast, slow) else { panic!("`{cond}` does not compile") };
            match (&fast, &slow) {
                (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{cond}`"),
                (Err(_), Err(_)) => {}
                _ => panic!("`{cond}`: fast form {fast:?}, chunk {slow:?}"),
            }
        }
    }

    #[test]
    fn fused_calls_match_the_two_calls() {
        let vars = Value::from(&serde_json::json!({
            "xs": [
                {"a": 3, "b": "x", "c": true, "t": [1]},
                {"a": 1, "b": "y", "c": false, "t": []},
                {"a": 2, "b": "z", "c": null, "t": [2, 3]},
                {"a": 5, "b": 7, "c": true, "t": [4]}
            ],
            "m": [3, "a", null, 1.5, [1]],
            "n": null,
            "o": {"k": 1}
        }));
        let programs = [
            "sum(array=filter(array=xs, condition_string=\"item.a > 1\"), item_path=\"item.a\")",
            "sum(filter(xs, 'item.c'), 'item.a')",
            "sum(filter(xs, 'item.c'))",
            "sum(filter(xs, 'item.a > 2'), 'item.b')",
            "sum(sort(xs, 'item.a', 'desc'), 'item.a * 2')",
            "map(sort(xs, 'item.a', 'desc'), 'item.b')",
            "map(sort(m), item)",
            "map(sort(xs, 'item.b'), item.a)",
            "map(filter(xs, item.b > 'x'), item.a)",
            "map(filter(xs, item.a > 1), item.t[0] + 1)",
            "map(filter(xs, item.a >= 1 and item.t.0 > 0), {id: item.a, b: item.b})",
            "map(filter(n, 'item'), item)",
            "sum(filter(m, item != null))",
            "map(filter(json_parse('3'), 'item'), item)",
            "sum(sort(json_parse('{}')))",
            "map(sort(xs, 'item.a', json_parse('\"up\"')), item)",
            "map(filter(xs, 'item.a > 1'), map(filter(item.t, item > 1), item * 10))",
            "map(array=filter(array=o.k, condition_string=item), template=item)",
            // Hostile round: errors inside the fused predicate, key and template.
            "map(filter(xs, item.a / 0 > 1), item)",
            "map(filter(xs, item.a > 1), item.b + 1)",
            "sum(filter(xs, item.b > 'a'), item.a)",
            "sum(sort(xs, item.b), item.a)",
            "map(sort(m, item), item)",
            "map(sort(xs, item.t), item.a)",
            "sum(sort(m), item)",
            "map(filter(m, item), item * 2)",
            "sum(filter(xs, item.a > 0), 'item.a / (item.a - 2)')",
            "map(sort(xs, 'item.a'), {k: item.b, t: item.t})",
            "sum(filter(xs, item.t), length(item.t))",
        ];
        for src in programs {
            let fused = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            assert!(fused.disassemble().contains("CALL_FUSED"), "`{src}` is not fused:\n{}", fused.disassemble());
            let limits = [
                Limits::default(),
                Limits { fuel: 3, ..Limits::default() },
                Limits { fuel: 9, ..Limits::default() },
                Limits { fuel: 12, ..Limits::default() },
                Limits { fuel: 20, ..Limits::default() },
                Limits { max_alloc_bytes: 16, ..Limits::default() },
                Limits { max_alloc_bytes: 40, ..Limits::default() },
            ];
            for limits in limits {
                fused_matches_two_calls(src, &vars, &limits);
            }
            // Every budget from nothing to enough: the fused pair runs out at exactly the
            // fuel and memory the two calls run out at (no off-by-one either way).
            for n in 0..=80u64 {
                for limits in [
                    Limits { fuel: n, ..Limits::default() },
                    Limits { max_alloc_bytes: n as usize * 8, ..Limits::default() },
                ] {
                    fused_matches_two_calls(src, &vars, &limits);
                }
            }
        }
    }

    /// A `map` over a `sort` of 64 elements or more reads its path template ahead, in list
    /// order, before the sort: the same values and errors as the two calls, and the same
    /// fuel and memory at every budget, around the budget from which it reads ahead too;
    /// with keys out of their usual order, a key missing, a value that is a list, an element
    /// that is not an object.
    #[test]
    fn a_map_over_a_sort_that_reads_ahead_matches_the_two_calls() {
        let record = |i: i64| serde_json::json!({"a": (i * 37) % 100, "b": format!("n{i}"), "c": {"d": i}});
        let big: Vec<serde_json::Value> = (0..150).map(record).collect();
        let mut mixed = big.clone();
        mixed[70] = serde_json::json!({"b": "moved", "c": {"d": 0}, "a": 7});
        mixed[90] = serde_json::json!({"a": 9, "c": {"d": 1}});
        mixed[120] = serde_json::json!({"a": 12, "b": [1, 2], "c": {"d": 2}});
        let mut odd = big.clone();
        odd[100] = serde_json::json!(5);
        let vars = Value::from(&serde_json::json!({"big": big, "mixed": mixed, "odd": odd}));
        let programs = [
            "map(sort(big, 'item.a', 'desc'), 'item.b')",
            "map(sort(big, 'item.a'), item.c.d)",
            "map(sort(mixed, 'item.a', 'desc'), 'item.b')",
            "map(sort(mixed, 'item.a'), item.c.d)",
            "map(sort(big, 'item.a'), 'item.zz')",
            "map(sort(odd, 'item.a', 'desc'), 'item.b')",
            "map(sort(mixed, 'item.c.d'), 'item.b')",
        ];
        let mut budgets = vec![Limits::default()];
        for n in (0..=700u64).step_by(7).chain([299, 300, 301, 449, 450, 451]) {
            budgets.push(Limits { fuel: n, ..Limits::default() });
        }
        for n in [0usize, 800, 2_400, 2_600, 4_000] {
            budgets.push(Limits { max_alloc_bytes: n, ..Limits::default() });
        }
        for src in programs {
            for limits in &budgets {
                fused_matches_two_calls(src, &vars, limits);
            }
        }
    }

    /// `sort`'s integer keys and `map`'s path templates run over the whole list at once in
    /// the VM (`Caller::int_keys`, `Caller::apply_each`); the reference evaluator reads them
    /// element by element. Where the keys stop being integers part-way, where an element is
    /// not an object, where a key is missing, and where the template fails on one element,
    /// both give the same value or the same error (code, message, span, data location).
    #[test]
    fn whole_list_keys_and_paths_match_element_by_element() {
        let vars = Value::from(&serde_json::json!({
            "xs": [{"a": 3, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2}, {"a": 5, "b": 7}],
            "late": [{"a": 3}, {"a": 1}, {"a": "z"}, {"a": 2}, {"a": null}],
            "odd": [{"a": 3}, 4, {"a": 1}, "s", null],
            "deep": [{"p": {"q": 2}}, {"p": 3}, {"p": {"q": 1}}]
        }));
        for src in [
            "sort(xs, 'item.a', 'desc')",
            "sort(late, 'item.a')",
            "sort(odd, 'item.a')",
            "sort(deep, 'item.p.q', 'desc')",
            "map(xs, 'item.b')",
            "map(odd, 'item.a')",
            "map(deep, 'item.p.q')",
            "map(sort(late, 'item.a'), 'item.a')",
            "map(sort(odd, 'item.a', 'desc'), item.a)",
            "join(map(sort(xs, 'item.a', 'desc'), 'item.b'), ', ')",
        ] {
            let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            let (vm, reference) = (p.eval(&vars), p.eval_reference(&vars, &vars));
            match (&vm, &reference) {
                (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}`"),
                // The reference evaluator names no data location; the VM's is checked below.
                (Err(x), Err(y)) => assert_eq!((x.code, &x.message, x.span), (y.code, &y.message, y.span), "`{src}`"),
                _ => panic!("`{src}`: the VM gives {vm:?}, the reference evaluator {reference:?}"),
            }
        }
        // An element the key path cannot be walked on, read in the run of keys: the error
        // names that element, as one `project` per element does.
        for (src, at) in [("sort(odd, 'item.a')", "$.odd[1]"), ("map(odd, 'item.a')", "$.odd[1]")] {
            let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            let Err(e) = p.eval(&vars) else { panic!("`{src}` does not fail") };
            assert_eq!(e.location.as_deref(), Some(at), "`{src}`: {e:?}");
        }
    }

    /// The same engine with `group_by` re-registered as itself: every
    /// `CALL_GROUPS_COUNTED` then runs as the plain call, elements kept.
    fn groups_kept(limits: Limits) -> Engine {
        let mut funcs = FunctionTable::builtins();
        let Some(id) = funcs.lookup("group_by") else { panic!("group_by is a built-in") };
        let f = funcs.get(id).clone();
        funcs.insert(f);
        Engine { funcs: Arc::new(funcs), ..Engine::new().with_limits(limits) }
    }

    /// A `group_by` whose groups the next pipeline operation only counts runs without its
    /// elements (`CALL_GROUPS_COUNTED`), and gives what the plain call gives: the same
    /// value, or the same error (code, message, span, function, data location), running
    /// out of fuel and memory at the same budgets.
    #[test]
    fn counted_groups_match_the_plain_group_by() {
        let vars = Value::from(&serde_json::json!({
            "xs": [
                {"a": 3, "b": "x", "c": true, "t": [1]},
                {"a": 1, "b": "y", "c": false, "t": []},
                {"a": 2, "b": "x", "c": null, "t": [2, 3]},
                {"a": 5, "b": 7, "c": true, "t": [4]},
                {"a": 3, "b": "x", "c": 1.5, "t": [1]}
            ],
            "m": [3, "a", null, 1.5, [1], {"k": 2}, 3, "3", null],
            "n": null,
            "o": {"k": 1}
        }));
        let programs = [
            "pipeline(group_by(array=xs, key_path=\"item.b\"), [map(array=values(current), template=length(item))])",
            "pipeline(group_by(xs, 'item.a'), [zip(keys(current), map(values(current), length(item)))])",
            "pipeline(group_by(xs, item.c), [from_entries(zip(keys(current), map(values(current), length(item))))])",
            "pipeline(group_by(m, item), [map(values(current), length(item))])",
            "pipeline(group_by(m, 'item'), [keys(current)])",
            "pipeline(group_by(xs, item.t), [keys(current)])",
            "pipeline(group_by(n, item), [map(values(current), length(item))])",
            "pipeline(group_by(xs, 'item.b'), [{n: length(keys(current)), sizes: map(values(current), length(item))}, current.sizes])",
            "pipeline(group_by(xs, item.b), [if(length(keys(current)) > 1, map(values(current), length(item)), [])])",
            "pipeline(group_by(xs, item.b), [map(values(current), length(item)), map(current, item * 2)])",
            "pipeline(group_by(xs, item.a), [sum(map(values(current), length(item))) + length(keys(current))])",
            // Hostile round: errors in the array and the key, and keys past the string limit.
            "pipeline(group_by(o, item), [keys(current)])",
            "pipeline(group_by(json_parse('3'), item), [keys(current)])",
            "pipeline(group_by(xs, item.a / 0), [keys(current)])",
            "pipeline(group_by(xs, item.b + 1), [map(values(current), length(item))])",
            "pipeline(group_by(xs, item.t.0 > 1), [keys(current)])",
            "pipeline(group_by(xs, [item.t, item.t, item.t, item.t, item.t, item.t, item.t, item.t]), [keys(current)])",
        ];
        for src in programs {
            let counted = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            let listing = counted.disassemble();
            assert!(listing.contains("CALL_GROUPS_COUNTED"), "`{src}` does not count its groups:\n{listing}");
            let limits = [
                Limits::default(),
                Limits { max_string_len: 12, ..Limits::default() },
                Limits { max_depth: 6, ..Limits::default() },
                Limits { max_depth: 7, ..Limits::default() },
            ];
            let budgets = (0..=80u64).flat_map(|n| {
                [
                    Limits { fuel: n, ..Limits::default() },
                    Limits { max_alloc_bytes: n as usize * 8, ..Limits::default() },
                ]
            });
            for limits in limits.into_iter().chain(budgets) {
                let a = Engine::new().with_limits(limits.clone()).compile(src).map(|p| p.eval(&vars));
                let b = groups_kept(limits.clone()).compile(src).map(|p| p.eval(&vars));
                let (a, b) = match (a, b) {
                    (Ok(a), Ok(b)) => (a, b),
                    // Nested past a small depth limit: neither compiles.
                    (Err(_), Err(_)) => continue,
                    (a, b) => panic!("`{src}` at {limits:?}: counted {:?}, plain {:?}", a.is_ok(), b.is_ok()),
                };
                match (&a, &b) {
                    (Ok(x), Ok(y)) => assert_eq!(x.to_string(), y.to_string(), "`{src}` at {limits:?}"),
                    (Err(x), Err(y)) => assert_eq!(**x, **y, "`{src}` at {limits:?}"),
                    _ => panic!("`{src}` at {limits:?}: counted {a:?}, plain {b:?}"),
                }
            }
        }
    }

    /// A `group_by` whose elements may be read keeps them: its result read otherwise than
    /// by `keys` and `length` of its `values`, and every reader a host replaced.
    #[test]
    fn groups_read_otherwise_keep_their_elements() {
        let vars =
            Value::from(&serde_json::json!({"xs": [{"b": "x", "a": 1}, {"b": "y", "a": 2}, {"b": "x", "a": 3}]}));
        for src in [
            "pipeline(group_by(xs, item.b), [values(current)])",
            "pipeline(group_by(xs, item.b), [current])",
            "pipeline(group_by(xs, item.b), [map(values(current), item[0].a)])",
            "pipeline(group_by(xs, item.b), [map(values(current), length(current))])",
            "pipeline(group_by(xs, item.b), [map(keys(current), current[item])])",
            "pipeline(group_by(xs, item.b), [map(values(current), length(item)), current])",
            "pipeline(group_by(xs, item.b), [map(values(current), length(item) + length(current))])",
            "pipeline(group_by(xs, item.b), [{n: map(values(current), 'length(item)'), v: values(current)}])",
            "map(values(group_by(xs, item.b)), length(item))",
        ] {
            let p = Engine::new().compile(src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
            let listing = p.disassemble();
            let counted = listing.contains("CALL_GROUPS_COUNTED");
            // The sixth program's `current` in its second operation is the first one's result.
            assert_eq!(counted, src.ends_with("length(item)), current])"), "`{src}`:\n{listing}");
        }
        // A host's `length` that reads the elements: the groups keep them.
        for name in ["length", "values", "keys", "map"] {
            let mut e = Engine::new();
            let Some(id) = e.funcs.lookup(name) else { panic!("{name} is a built-in") };
            let sig = e.funcs.get(id).signature.clone();
            let body: HostFn = match name {
                "length" => {
                    Arc::new(|a: &[Value]| Ok(a[0].as_list().and_then(|l| l.first()).cloned().unwrap_or_default()))
                }
                "values" => Arc::new(|a: &[Value]| {
                    let firsts = a[0].as_object().map(|o| o.values().filter_map(|g| g.as_list()?.first().cloned()));
                    Ok(Value::list(firsts.map(Iterator::collect).unwrap_or_default()))
                }),
                "keys" => Arc::new(|a: &[Value]| {
                    Ok(Value::list(a[0].as_object().map(|o| o.values().cloned().collect()).unwrap_or_default()))
                }),
                _ => Arc::new(|a: &[Value]| Ok(a[0].clone())),
            };
            e.register_function(sig, body);
            let src = match name {
                "keys" => "pipeline(group_by(xs, item.b), [keys(current)])",
                _ => "pipeline(group_by(xs, item.b), [map(values(current), length(item))])",
            };
            let p = e.compile(src).unwrap_or_else(|d| panic!("`{src}` with a host `{name}`: {d:?}"));
            let got = p.eval(&vars).unwrap_or_else(|err| panic!("`{src}` with a host `{name}`: {err:?}"));
            let want = match name {
                "length" => r#"[{"b":"x","a":1},{"b":"y","a":2}]"#,
                "values" => "[2,2]",
                _ => r#"[[{"b":"x","a":1},{"b":"x","a":3}],[{"b":"y","a":2}]]"#,
            };
            assert_eq!(got.to_string(), want, "`{src}` with a host `{name}`");
        }
    }
}
