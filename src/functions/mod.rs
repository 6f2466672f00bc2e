//! Functions callable from expressions: their signatures (what the checker needs) and
//! their implementations (what the VM and the reference evaluator call).
//!
//! A built-in never sees the AST or bytecode: it receives its arguments as values in
//! parameter order, and calls back through [`Caller`] to apply a template (deferred
//! parameter) to an element. That is what lets the VM and the reference evaluator share
//! one implementation of every built-in, and lets the differential test focus on the
//! compiler and the VM.

mod builtins;

// Signatures belong to the checker (`types`), which reads them; they are re-exported here
// because an embedder registering a function builds one.
pub use crate::types::signature::{FuncId, Param, ParamKind, ReturnRule, Signature};

use std::borrow::Cow;
use std::sync::Arc;

use crate::diagnostic::Code;
use crate::files::FileStore;
use crate::runtime::{Clock, EvalError, Limits};
use crate::types::signature::Signatures;
use crate::types::Type;
use crate::value::Value;

/// The elements a list function runs over: a list's own, or the ones a fused producer
/// handed over borrowed. A slice either way, so that an evaluator's loop over them is a
/// plain loop (no call per element to get the next one).
#[derive(Clone, Copy)]
pub enum Elems<'a> {
    /// A list's elements.
    Values(&'a [Value]),
    /// Elements borrowed from a list.
    Refs(&'a [&'a Value]),
}

impl<'a> Elems<'a> {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            Elems::Values(xs) => xs.len(),
            Elems::Refs(xs) => xs.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a Value> + 'a {
        let (values, refs): (&'a [Value], &'a [&'a Value]) = match *self {
            Elems::Values(xs) => (xs, &[]),
            Elems::Refs(xs) => (&[], xs),
        };
        values.iter().chain(refs.iter().copied())
    }
}

/// What a built-in can ask of the evaluator that called it.
pub trait Caller {
    /// Applies the deferred argument for parameter `param` to `item`, element `index` of
    /// the list being processed (the index goes into error locations).
    fn apply(&mut self, param: usize, item: &Value, index: usize) -> Result<Value, EvalError>;
    /// Applies a template for its truthiness (conditions). Evaluators may answer without
    /// building the template's value.
    fn test(&mut self, param: usize, item: &Value, index: usize) -> Result<bool, EvalError> {
        Ok(self.apply(param, item, index)?.truthy())
    }
    /// Tests every element of `xs` with the condition `param`, in order, and pushes those
    /// that pass onto `out`: what one [`Caller::test`] per element does, which evaluators
    /// with a faster way to run a whole list (no call per element) override.
    fn select<'a>(&mut self, param: usize, xs: &'a [Value], out: &mut Vec<&'a Value>) -> Result<(), EvalError> {
        for (i, x) in xs.iter().enumerate() {
            if self.test(param, x, i)? {
                out.push(x);
            }
        }
        Ok(())
    }
    /// Applies a template whose result is only read (keys, numbers to add). Evaluators may
    /// return a part of `item` without cloning it.
    fn project<'v>(&mut self, param: usize, item: &'v Value, index: usize) -> Result<Cow<'v, Value>, EvalError> {
        self.apply(param, item, index).map(Cow::Owned)
    }
    /// Applies template `param` to each element `xs` yields, in order, pushing the results
    /// onto `out`: what one [`Caller::apply`] per element does (`map`'s loop), which
    /// evaluators with a faster way to run a whole list (no call per element) override.
    fn apply_each(&mut self, param: usize, xs: Elems<'_>, out: &mut Vec<Value>) -> Result<(), EvalError> {
        for (i, x) in xs.iter().enumerate() {
            out.push(self.apply(param, x, i)?);
        }
        Ok(())
    }

    /// Reads template `param` of the elements of `xs` in order, as one [`Caller::project`]
    /// each would, while the keys are integers: pushes `(key, element)` onto `out`, and
    /// answers with the index and key of the first element whose key is not an integer
    /// (`None` when every key is one). `sort`'s common case; evaluators with a faster way to
    /// read a whole list (no call per element) override it.
    #[allow(clippy::type_complexity)]
    fn int_keys<'a>(
        &mut self,
        param: usize,
        xs: &'a [Value],
        out: &mut Vec<(i64, &'a Value)>,
    ) -> Result<Option<(usize, Cow<'a, Value>)>, EvalError> {
        for (i, x) in xs.iter().enumerate() {
            let k = self.project(param, x, i)?;
            match &*k {
                Value::Int(n) => out.push((*n, x)),
                _ => return Ok(Some((i, k))),
            }
        }
        Ok(None)
    }

    /// Spends `units` of fuel.
    fn charge(&mut self, units: usize) -> Result<(), EvalError>;
    /// Charges `bytes` of values built against the memory limit
    /// ([`Limits::max_alloc_bytes`]).
    fn alloc(&mut self, bytes: usize) -> Result<(), EvalError>;
    /// The limits in force.
    fn limits(&self) -> &Limits;
    /// The clock `datetime_now` reads.
    fn clock(&self) -> &dyn Clock;
    /// The file store the file functions read, when the host configured one.
    fn files(&self) -> Option<&dyn FileStore> {
        None
    }
    /// Fuel left: the budget of a metered walk ([`Value::eq_within`] and its kin).
    fn fuel_left(&self) -> u64 {
        u64::MAX
    }
    /// Bytes of values the evaluation may still build.
    fn alloc_left(&self) -> u64 {
        u64::MAX
    }
}

/// Calls a built-in's body: the one way every evaluator calls one, and where what a call
/// visits and builds is charged, so that a function added later is bounded without its
/// body remembering to charge (SPEC §4.8).
///
/// * Visiting: a unit of fuel per 8 top-level elements or entries, or 64 string bytes, of
///   every argument, charged before the body runs (a body that reads its arguments once
///   is paid for; one that walks deeper uses the metered walks of [`Value`] and charges
///   what they visit through [`Caller::charge`]).
/// * Building: the result's top level by the operators' convention
///   ([`crate::ops::build_cost`], [`crate::ops::build_bytes`]) less what the body charged
///   itself while it ran, unless the result is one of the arguments.
///
/// Bodies that build large values charge before they build ([`Caller::alloc`]), so memory
/// stays bounded even inside one call.
pub(crate) fn invoke(body: BuiltinFn, r: &mut dyn Caller, args: &Args<'_>) -> Result<Value, Failure> {
    charge_visit(r, args.values.iter().map(crate::ops::build_cost).sum())?;
    let (fuel, alloc) = (r.fuel_left(), r.alloc_left());
    let v = body(r, args)?;
    if matches!(v, Value::Str(_) | Value::List(_) | Value::Object(_)) && !args.values.iter().any(|a| a.same_as(&v)) {
        charge_built(r, (fuel, alloc), crate::ops::build_cost(&v), crate::ops::build_bytes(&v) as u64)?;
    }
    Ok(v)
}

/// What [`invoke`] charges before a body runs: `visit` units for reading the arguments.
fn charge_visit(r: &mut dyn Caller, visit: u64) -> Result<(), Failure> {
    if visit > 0 {
        r.charge(usize::try_from(visit).unwrap_or(usize::MAX))?;
    }
    Ok(())
}

/// What [`invoke`] charges after a body built a value of `cost` units and `bytes` bytes:
/// what the body did not charge itself since `before` (fuel and memory left then).
fn charge_built(r: &mut dyn Caller, before: (u64, u64), cost: u64, bytes: u64) -> Result<(), Failure> {
    let (fuel, alloc) = before;
    let cost = cost.saturating_sub(fuel.saturating_sub(r.fuel_left()));
    if cost > 0 {
        r.charge(usize::try_from(cost).unwrap_or(usize::MAX))?;
    }
    let bytes = bytes.saturating_sub(alloc.saturating_sub(r.alloc_left()));
    if bytes > 0 {
        r.alloc(usize::try_from(bytes).unwrap_or(usize::MAX))?;
    }
    Ok(())
}

/// A built-in whose list result a [`Consumer`] can read borrowed: it only selects or
/// reorders the elements of its `array`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    /// `filter(array, condition_string)`
    Filter,
    /// `sort(array, key_path, direction)`
    Sort,
}

/// A built-in that reads its `array` once, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// `map(array, template)`
    Map,
    /// `sum(array, item_path)`
    Sum,
}

/// Runs a [`Producer`] as [`invoke`] would run its built-in, charging the same fuel and
/// memory (the list it stands for included), but hands back its elements borrowed from
/// its `array` argument instead of a list of clones.
pub(crate) fn produce<'a>(p: Producer, r: &mut dyn Caller, args: &Args<'a>) -> Result<Vec<&'a Value>, Failure> {
    charge_visit(r, args.values.iter().map(crate::ops::build_cost).sum())?;
    let before = (r.fuel_left(), r.alloc_left());
    let xs = match p {
        Producer::Filter => builtins::filter_refs(r, args)?,
        Producer::Sort => builtins::sort_refs(r, args)?,
    };
    let n = xs.len();
    charge_built(r, before, (n / 8) as u64, crate::ops::list_bytes(n) as u64)?;
    Ok(xs)
}

/// Runs a [`Consumer`] on the elements a [`produce`] handed over, as [`invoke`] would run
/// its built-in on the list of them: `args` holds its arguments with a placeholder first.
pub(crate) fn consume(c: Consumer, r: &mut dyn Caller, xs: &[&Value], args: &Args<'_>) -> Result<Value, Failure> {
    let rest: u64 = args.values.iter().skip(1).map(crate::ops::build_cost).sum();
    charge_visit(r, (xs.len() / 8) as u64 + rest)?;
    let before = (r.fuel_left(), r.alloc_left());
    let v = match c {
        Consumer::Map => builtins::map_core(r, Elems::Refs(xs))?,
        Consumer::Sum => builtins::sum_core(r, args, xs.iter().copied())?,
    };
    if matches!(v, Value::Str(_) | Value::List(_) | Value::Object(_)) && !args.values.iter().any(|a| a.same_as(&v)) {
        charge_built(r, before, crate::ops::build_cost(&v), crate::ops::build_bytes(&v) as u64)?;
    }
    Ok(v)
}

/// The arguments of one call, in parameter order. Deferred parameters hold `null` here and
/// are applied through the [`Caller`]; `given` says which optional parameters were passed.
pub struct Args<'a> {
    /// Argument values in parameter order (defaults filled in).
    pub values: &'a [Value],
    /// Bit `i` is set when parameter `i` was given by the caller.
    pub given: u64,
}

impl Args<'_> {
    /// Whether parameter `i` was given.
    pub fn has(&self, i: usize) -> bool {
        i < 64 && self.given & (1 << i) != 0
    }

    /// The value of parameter `i` (`null` when out of range).
    pub fn get(&self, i: usize) -> &Value {
        const NULL: &Value = &Value::Null;
        self.values.get(i).unwrap_or(NULL)
    }
}

/// An error raised by a function body, before the evaluator adds the call's span, the
/// function's name and the data location.
#[derive(Clone, Debug, PartialEq)]
pub struct FnError {
    /// The stable code.
    pub code: Code,
    /// What went wrong.
    pub message: String,
    /// The parameter whose value is at fault, if one is.
    pub param: Option<usize>,
    /// The element of that parameter's list at fault, if one is.
    pub index: Option<usize>,
}

impl FnError {
    /// An error about the whole call.
    pub fn new(code: Code, message: impl Into<String>) -> FnError {
        FnError { code, message: message.into(), param: None, index: None }
    }

    /// An error about parameter `param`.
    pub fn arg(code: Code, param: usize, message: impl Into<String>) -> FnError {
        FnError { code, message: message.into(), param: Some(param), index: None }
    }

    /// An error about element `index` of parameter `param`.
    pub fn element(code: Code, param: usize, index: usize, message: impl Into<String>) -> FnError {
        FnError { code, message: message.into(), param: Some(param), index: Some(index) }
    }
}

/// How a function failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The function's own error.
    Fn(FnError),
    /// An error from a template it applied, already located.
    Eval(EvalError),
}

impl From<FnError> for Failure {
    fn from(e: FnError) -> Failure {
        Failure::Fn(e)
    }
}

impl From<EvalError> for Failure {
    fn from(e: EvalError) -> Failure {
        Failure::Eval(e)
    }
}

/// A built-in's body.
pub(crate) type BuiltinFn = fn(&mut dyn Caller, &Args<'_>) -> Result<Value, Failure>;

/// A host function's body: argument values in parameter order.
pub type HostFn = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// How a function is carried out.
#[derive(Clone)]
pub enum Implementation {
    /// A built-in body.
    Builtin(BuiltinFn),
    /// Compiled inline by the compiler (`if`, `pipeline`, `create_object`): never called.
    Inline,
    /// A host-registered function.
    Host(HostFn),
    /// A file function: a built-in body that reads through [`Caller::files`]. Never folded,
    /// since files change between runs.
    File(BuiltinFn),
}

impl std::fmt::Debug for Implementation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Implementation::Builtin(_) => "Builtin",
            Implementation::Inline => "Inline",
            Implementation::Host(_) => "Host",
            Implementation::File(_) => "File",
        })
    }
}

/// A function: signature and implementation.
#[derive(Clone, Debug)]
pub struct Function {
    /// What the checker knows.
    pub signature: Signature,
    /// What runs.
    pub implementation: Implementation,
}

/// The functions an engine knows.
#[derive(Clone, Debug)]
pub struct FunctionTable {
    funcs: Vec<Function>,
    by_name: rustc_hash::FxHashMap<Arc<str>, FuncId>,
    /// The built-ins `filter`, `sort`, `map` and `sum`, while no host function replaced
    /// them: the pairs of them the VM may run fused ([`FunctionTable::fusion`]).
    fusable: [Option<FuncId>; 4],
    /// The built-ins `group_by`, `keys`, `values`, `map` and `length`, while no host
    /// function replaced them: what [`FunctionTable::counted_groups`] needs.
    counting: [Option<FuncId>; 5],
}

impl Default for FunctionTable {
    fn default() -> FunctionTable {
        FunctionTable::builtins()
    }
}

impl FunctionTable {
    /// The built-in functions of SPEC §4.5.
    pub fn builtins() -> FunctionTable {
        let mut t = FunctionTable {
            funcs: Vec::new(),
            by_name: rustc_hash::FxHashMap::default(),
            fusable: [None; 4],
            counting: [None; 5],
        };
        for f in builtins::table() {
            t.insert(f);
        }
        t.fusable = ["filter", "sort", "map", "sum"].map(|n| t.lookup(n));
        t.counting = ["group_by", "keys", "values", "map", "length"].map(|n| t.lookup(n));
        t
    }

    /// Adds or replaces a function.
    pub fn insert(&mut self, f: Function) -> FuncId {
        if let Some(&id) = self.by_name.get(&f.signature.name) {
            self.funcs[id.0 as usize] = f;
            // A replaced built-in no longer runs fused.
            for slot in self.fusable.iter_mut().chain(&mut self.counting) {
                if *slot == Some(id) {
                    *slot = None;
                }
            }
            return id;
        }
        let id = FuncId(u16::try_from(self.funcs.len()).unwrap_or(u16::MAX));
        self.by_name.insert(f.signature.name.clone(), id);
        self.funcs.push(f);
        id
    }

    /// Looks a function up by name.
    pub fn lookup(&self, name: &str) -> Option<FuncId> {
        self.by_name.get(name).copied()
    }

    /// Whether a call of `outer` on the list a call of `inner` gives can run fused
    /// ([`produce`] then [`consume`]): both are the built-ins, not host replacements.
    pub fn fusion(&self, inner: FuncId, outer: FuncId) -> Option<(Producer, Consumer)> {
        let is = |i: usize, id: FuncId| self.fusable[i] == Some(id);
        let p = if is(0, inner) {
            Producer::Filter
        } else if is(1, inner) {
            Producer::Sort
        } else {
            return None;
        };
        let c = if is(2, outer) {
            Consumer::Map
        } else if is(3, outer) {
            Consumer::Sum
        } else {
            return None;
        };
        Some((p, c))
    }

    /// The body to run a call of `func` with when the call's result is read only through
    /// `keys` of it and `length` of the elements of `values` of it
    /// ([`crate::compile::Op::CallGroupsCounted`]): `group_by`'s, with every grouped
    /// element left out, when `func` is the built-in `group_by` and none of those readers
    /// was replaced by a host function (one could read the elements).
    pub fn counted_groups(&self, func: FuncId) -> Option<BuiltinFn> {
        let all = self.counting.iter().all(Option::is_some);
        (all && self.counting[0] == Some(func)).then_some(builtins::group_by_counted_body as BuiltinFn)
    }

    /// The function with this id.
    pub fn get(&self, id: FuncId) -> &Function {
        &self.funcs[id.0 as usize]
    }

    /// All function names, for suggestions and completion.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.iter().map(|f| &*f.signature.name)
    }

    /// All functions in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Function> {
        self.funcs.iter()
    }
}

impl Signatures for FunctionTable {
    fn lookup(&self, name: &str) -> Option<FuncId> {
        FunctionTable::lookup(self, name)
    }

    fn signature(&self, id: FuncId) -> &Signature {
        &self.get(id).signature
    }

    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(FunctionTable::names(self))
    }
}

/// A list argument: `null` is the empty list.
pub(crate) fn list_arg<'a>(args: &Args<'a>, i: usize, name: &str) -> Result<&'a [Value], FnError> {
    match args.values.get(i) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::List(l)) => Ok(l),
        Some(other) => {
            Err(FnError::arg(Code::RuntimeType, i, format!("`{name}` must be a list, found {:#}", other.kind())))
        }
    }
}

/// The type a parameter accepts when it takes a list (`null` counts as empty).
pub(crate) fn list_or_null() -> Type {
    Type::any_list().union(Type::Null)
}

/// The most bytes of a value or of source text an error quotes: an error is copied into a
/// step's error, the run's summary, its answer (twice) and the history, so an error that
/// quoted a 16 MiB string whole made answers of hundreds of megabytes (hostile round 12e).
pub(crate) const QUOTED_IN_ERROR: usize = 200;

/// The most bytes of a message an error passes on from elsewhere (a template's parse error).
pub(crate) const MESSAGE_IN_ERROR: usize = 1024;

/// The head of `text` of at most `max` bytes, cut on a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` as an error quotes it: in quotes and escaped, at most its first
/// [`QUOTED_IN_ERROR`] bytes, then `…` and its length when it was longer.
pub(crate) fn quoted(text: &str) -> String {
    let shown = head(text, QUOTED_IN_ERROR);
    if shown.len() == text.len() {
        return format!("{text:?}");
    }
    format!("{shown:?}… ({} bytes)", text.len())
}

/// A message passed on in an error: at most its first [`MESSAGE_IN_ERROR`] bytes, then `…`
/// and its length when it was longer.
pub(crate) fn cut(message: &str) -> String {
    let shown = head(message, MESSAGE_IN_ERROR);
    if shown.len() == message.len() {
        return message.to_string();
    }
    format!("{shown}… ({} bytes)", message.len())
}
