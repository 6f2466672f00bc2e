//! What evaluation needs from its host and reports back: limits, the clock, and the
//! runtime error type. Shared by the VM and the reference evaluator so both enforce the
//! same limits and fail with the same error kinds.

use std::fmt;
use std::sync::Arc;

use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use crate::value::Value;

/// The longest text of a template given at run time (`crate::template`): limits live here,
/// and the template module takes it from here.
pub(crate) const MAX_TEMPLATE_TEXT_BYTES: usize = 64 * 1024;

/// Bounds on one evaluation (SPEC §4.8). Exceeding one is an [`EvalError`] naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions executed (fuel); every template application and every element a
    /// built-in visits costs at least one unit.
    pub fuel: u64,
    /// Nesting of expressions in source, of template calls at run time, and of values built.
    pub max_depth: usize,
    /// Bytes in any string built.
    pub max_string_len: usize,
    /// Elements in any list built.
    pub max_list_len: usize,
    /// Approximate bytes of the result's JSON form.
    pub max_output_bytes: usize,
    /// Approximate bytes of the values one evaluation builds, summed (whether or not they
    /// are still held): 16 per list element, 48 per object entry, one per string byte, as
    /// list and object literals, operators and built-ins make them. Fuel bounds the work;
    /// this bounds memory, which fuel alone would not (one `split` can build a million
    /// strings).
    pub max_alloc_bytes: usize,
    /// Children of one parallel step (enforced by the engine).
    pub max_fan_out: usize,
    /// Distinct dynamic template strings compiled and cached per program.
    pub max_cached_templates: usize,
    /// Bytes in one file read by `read_file` or `read_files` (a larger file is an error
    /// before it is read). The string limit applies too: the smaller one wins.
    pub max_file_bytes: usize,
    /// Directory entries one `list_files` call may visit while it walks (bounds the I/O of
    /// a `**` pattern over a big tree).
    pub max_listing_entries: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            fuel: 50_000_000,
            max_depth: 128,
            max_string_len: 16 * 1024 * 1024,
            max_list_len: 1_000_000,
            max_output_bytes: 64 * 1024 * 1024,
            max_alloc_bytes: 256 * 1024 * 1024,
            max_fan_out: 1_000,
            max_cached_templates: 256,
            max_file_bytes: 1024 * 1024,
            max_listing_entries: 10_000,
        }
    }
}

/// Template nesting from which template results are checked against the depth limit.
///
/// A dynamic template that names its own variable applies itself, and each application can
/// wrap its result in more levels (`"[[[…map([item], template=t)…]]]"`), so without a check
/// 128 levels of templates could build a value 16,000 levels deep, deep enough for
/// rendering or comparing it to overflow the stack. Templates nested this deep are rare and
/// checking costs a walk of the result, so shallower ones are not checked: they add at
/// most a few hundred levels on top of a checked result.
pub(crate) const CHECKED_TEMPLATE_DEPTH: usize = 4;

/// The result of a template applied at nesting `depth`: refused when it is checked and
/// nests deeper than the depth limit.
pub(crate) fn template_result(v: Value, depth: usize, limits: &Limits, span: Span) -> Result<Value, EvalError> {
    if depth >= CHECKED_TEMPLATE_DEPTH && v.measure(usize::MAX, limits.max_depth).1 {
        return Err(EvalError::new(
            Code::DepthLimit,
            span,
            format!("a template's result nests deeper than {} levels", limits.max_depth),
        ));
    }
    Ok(v)
}

/// Why an [`Interrupt`] stopped an evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptReason {
    /// The host cancelled it ([`Interrupt::cancel`], or the probe said so).
    Cancelled,
    /// Its deadline passed.
    Deadline,
}

/// A probe the host supplies: asked now and then while an evaluation runs, it answers
/// whether (and why) the evaluation must stop.
pub(crate) type InterruptProbe = Arc<dyn Fn() -> Option<InterruptReason> + Send + Sync>;

/// A handle that stops a running evaluation from outside: cancelled from another thread,
/// or past a deadline. The evaluator polls it with its fuel (every
/// [`INTERRUPT_POLL_UNITS`] units of fuel, a few microseconds of work apart), so a
/// running expression stops soon after — with `E0407` when cancelled, `E0408` when the
/// deadline passed. Clones share the cancellation flag.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tdsl::{Code, Engine, Interrupt, Value};
///
/// let program = Engine::new().compile("count(range(1000000), condition_string=count(range(1000), condition_string=true) > 0)").unwrap();
/// let interrupt = Interrupt::new().with_deadline(Instant::now() + Duration::from_millis(50));
/// let err = program.eval_interruptible(&Value::Null, &Value::Null, &interrupt).unwrap_err();
/// assert_eq!(err.code, Code::EvalDeadline);
///
/// let cancelled = Interrupt::new();
/// cancelled.cancel();
/// let err = program.eval_interruptible(&Value::Null, &Value::Null, &cancelled).unwrap_err();
/// assert_eq!(err.code, Code::Interrupted);
/// ```
#[derive(Clone, Default)]
pub struct Interrupt {
    cancelled: Arc<std::sync::atomic::AtomicBool>,
    deadline: Option<std::time::Instant>,
    probe: Option<InterruptProbe>,
    budget: Option<Arc<RunBudget>>,
}

/// Fuel units between two polls of an [`Interrupt`].
pub(crate) const INTERRUPT_POLL_UNITS: u64 = 1 << 14;

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupt")
            .field("cancelled", &self.is_cancelled())
            .field("deadline", &self.deadline)
            .field("probe", &self.probe.is_some())
            .field("budget", &self.budget)
            .finish()
    }
}

impl Interrupt {
    /// A handle not cancelled, with no deadline.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// The same handle, also stopping evaluations at `deadline`.
    pub fn with_deadline(mut self, deadline: std::time::Instant) -> Interrupt {
        self.deadline = Some(match self.deadline {
            Some(d) => d.min(deadline),
            None => deadline,
        });
        self
    }

    /// The same handle, also asking `probe` whether to stop (a host's own cancellation
    /// token or clock).
    pub fn with_probe(mut self, probe: InterruptProbe) -> Interrupt {
        self.probe = Some(probe);
        self
    }

    /// The same handle, also charging every evaluation polling it to `budget`: the fuel
    /// and memory of one run, shared by all its evaluations (see [`RunBudget`]).
    pub fn with_budget(mut self, budget: Arc<RunBudget>) -> Interrupt {
        self.budget = Some(budget);
        self
    }

    /// The run budget evaluations polling this handle are charged to, if any.
    pub fn budget(&self) -> Option<&Arc<RunBudget>> {
        self.budget.as_ref()
    }

    /// Stops every evaluation polling this handle (or a clone of it).
    pub fn cancel(&self) {
        self.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Interrupt::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether an evaluation must stop now, and why.
    pub fn check(&self) -> Option<InterruptReason> {
        if self.is_cancelled() {
            return Some(InterruptReason::Cancelled);
        }
        if let Some(p) = &self.probe {
            if let Some(r) = p() {
                return Some(r);
            }
        }
        match self.deadline {
            Some(d) if std::time::Instant::now() >= d => Some(InterruptReason::Deadline),
            _ => None,
        }
    }

    /// Runs `f` with this handle as the ambient interrupt of the current thread: every
    /// [`crate::Program::eval_with`] inside it polls this handle (an explicit one passed to
    /// [`crate::Program::eval_interruptible`] wins). Hosts that evaluate through layers
    /// they do not control (the engine's transforms) use this.
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                AMBIENT.with(|s| s.borrow_mut().pop());
            }
        }
        AMBIENT.with(|s| s.borrow_mut().push(self.clone()));
        let _pop = Pop;
        f()
    }

    /// The innermost handle [`Interrupt::enter`] opened on this thread.
    pub fn ambient() -> Option<Interrupt> {
        AMBIENT.with(|s| s.borrow().last().cloned())
    }

    /// The error for `reason`.
    pub fn error(reason: InterruptReason, span: Span) -> EvalError {
        match reason {
            InterruptReason::Cancelled => {
                EvalError::new(Code::Interrupted, span, "evaluation was cancelled by its host")
            }
            InterruptReason::Deadline => EvalError::new(Code::EvalDeadline, span, "evaluation ran past its deadline"),
        }
    }
}

/// The fuel and memory of one run, shared by every evaluation it makes (SPEC §4.8): its
/// steps' transforms, running in parallel or one after another, its fan-out children's
/// `transform_arguments` and `transform_responses`, its composite callees'. Each
/// evaluation still has its own [`Limits`]; the run's budget bounds their sum.
///
/// * **Fuel** is spent for good: an evaluation takes it from the run a tick at a time
///   (with the polls of its [`Interrupt`]) and gives back what it did not use when it
///   ends. Once the run's fuel is spent every evaluation of the run fails with `E0401`.
/// * **Memory** is held: an evaluation takes the bytes it builds (as
///   [`Limits::max_alloc_bytes`] counts them) while it runs and gives them back when it
///   ends, keeping only the bytes of its result, which the run holds; the host charges the
///   tool answers it holds too ([`RunBudget::hold`]). Past the budget the evaluation (or
///   the call) fails with `E0406`.
///
/// ```
/// use std::sync::Arc;
/// use tdsl::{Code, Engine, Interrupt, RunBudget, Value};
///
/// let budget = Arc::new(RunBudget::new(100_000, 1 << 30));
/// let run = Interrupt::new().with_budget(budget.clone());
/// let program = Engine::new().compile("count(range(0, 40000), condition_string='item > 0')").unwrap();
/// assert!(program.eval_interruptible(&Value::Null, &Value::Null, &run).is_ok());
/// // The second evaluation finds the run's fuel spent by the first and the third.
/// let err = program.eval_interruptible(&Value::Null, &Value::Null, &run)
///     .and_then(|_| program.eval_interruptible(&Value::Null, &Value::Null, &run))
///     .unwrap_err();
/// assert_eq!(err.code, Code::FuelExhausted);
/// assert!(budget.fuel_spent() <= 100_000);
/// ```
#[derive(Debug)]
pub struct RunBudget {
    fuel: u64,
    fuel_left: std::sync::atomic::AtomicU64,
    memory: u64,
    memory_left: std::sync::atomic::AtomicU64,
    memory_peak: std::sync::atomic::AtomicU64,
    /// A budget shared with other runs, which every byte held here is taken from too.
    pool: Option<Arc<RunBudget>>,
}

impl Drop for RunBudget {
    fn drop(&mut self) {
        // What the run still held goes back to the pool it shares with other runs.
        if let Some(pool) = &self.pool {
            pool.give_back_memory(self.memory_held());
        }
    }
}

impl RunBudget {
    /// A run of at most `fuel` units of fuel and `memory` bytes held at once.
    pub fn new(fuel: u64, memory: u64) -> RunBudget {
        use std::sync::atomic::AtomicU64;
        RunBudget {
            fuel,
            fuel_left: AtomicU64::new(fuel),
            memory,
            memory_left: AtomicU64::new(memory),
            memory_peak: AtomicU64::new(0),
            pool: None,
        }
    }

    /// A share of a run's budget lent to a place that evaluates for the run elsewhere (on
    /// Temporal, a fan-out chunk's child workflow, docs/distributed.md): `fuel_lent` units
    /// and `memory_lent` bytes to be had, of the run's `fuel` and `memory`, which its errors
    /// name. What the share spent and holds is what it was lent less what is left
    /// ([`RunBudget::fuel_left`], [`RunBudget::memory_left`]).
    #[cfg_attr(not(feature = "temporal"), allow(dead_code))]
    pub(crate) fn lent(fuel: u64, fuel_lent: u64, memory: u64, memory_lent: u64) -> RunBudget {
        use std::sync::atomic::AtomicU64;
        RunBudget {
            fuel,
            fuel_left: AtomicU64::new(fuel_lent.min(fuel)),
            memory,
            memory_left: AtomicU64::new(memory_lent.min(memory)),
            memory_peak: AtomicU64::new(0),
            pool: None,
        }
    }

    /// This budget, every byte it holds taken from `pool` too (and given back to it when the
    /// budget is dropped, at the run's end).
    pub fn within(mut self, pool: &MemoryPool) -> RunBudget {
        self.pool = Some(pool.0.clone());
        self
    }

    /// The run's fuel in all.
    pub fn fuel(&self) -> u64 {
        self.fuel
    }

    /// The run's memory in all, in bytes.
    pub fn memory(&self) -> u64 {
        self.memory
    }

    /// The fuel spent so far (taken by evaluations and not given back).
    pub fn fuel_spent(&self) -> u64 {
        self.fuel - self.fuel_left()
    }

    /// The fuel still to be had.
    pub fn fuel_left(&self) -> u64 {
        self.fuel_left.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bytes still to be had.
    pub(crate) fn memory_left(&self) -> u64 {
        self.memory_left.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bytes held now.
    pub fn memory_held(&self) -> u64 {
        self.memory - self.memory_left()
    }

    /// The most bytes held at once so far.
    pub fn memory_peak(&self) -> u64 {
        self.memory_peak.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes at least `need` and at most `want` (no less than `need`) units of fuel: how
    /// many were taken, or `None` (and nothing taken) when fewer than `need` are left.
    pub(crate) fn take_fuel(&self, need: u64, want: u64) -> Option<u64> {
        take(&self.fuel_left, need, want.max(need))
    }

    /// Gives back `units` of fuel taken and not spent.
    pub(crate) fn give_back_fuel(&self, units: u64) {
        self.fuel_left.fetch_add(units, std::sync::atomic::Ordering::Relaxed);
    }

    /// Takes at least `need` and at most `want` bytes, as [`RunBudget::take_fuel`] (from
    /// the pool too, when the run shares one); the message of `E0406` when they are not to
    /// be had.
    pub(crate) fn take_memory(&self, need: u64, want: u64) -> Result<u64, String> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut got = take(&self.memory_left, need, want.max(need)).ok_or_else(|| self.memory_error())?;
        if let Some(pool) = &self.pool {
            match take(&pool.memory_left, need, got) {
                Some(shared) => {
                    self.memory_left.fetch_add(got - shared, Relaxed);
                    got = shared;
                    pool.memory_peak.fetch_max(pool.memory_held(), Relaxed);
                }
                None => {
                    self.memory_left.fetch_add(got, Relaxed);
                    return Err(format!(
                        "the server's runs in flight hold more values than it allows ({} bytes for all of them, \
                         `--max-memory-in-flight`)",
                        pool.memory
                    ));
                }
            }
        }
        self.memory_peak.fetch_max(self.memory_held(), Relaxed);
        Ok(got)
    }

    /// Gives back `bytes` taken.
    pub(crate) fn give_back_memory(&self, bytes: u64) {
        self.memory_left.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        if let Some(pool) = &self.pool {
            pool.give_back_memory(bytes);
        }
    }

    /// Holds `bytes` for the rest of the run (a tool answer the run keeps), or `Err` with
    /// the message of `E0406` when they do not fit (nothing is held then).
    pub fn hold(&self, bytes: u64) -> Result<(), String> {
        self.take_memory(bytes, bytes).map(|_| ())
    }

    /// The message of `E0406` when the run's memory is spent.
    pub(crate) fn memory_error(&self) -> String {
        format!(
            "the run holds more values than its memory budget allows ({} bytes, shared by all its expressions \
             and the tool answers it keeps; `--max-run-memory` raises it)",
            self.memory
        )
    }

    /// The message of `E0401` when the run's fuel is spent.
    pub(crate) fn fuel_error(&self) -> String {
        format!(
            "the run ran out of fuel (its budget is {} instructions, shared by all its expressions; \
             `--max-run-fuel` raises it)",
            self.fuel
        )
    }
}

/// Memory that several runs share — a server's runs in flight — on top of each run's own
/// budget: a run [`RunBudget::within`] it takes every byte it holds from the pool too, and
/// gives them back as it does to its own budget (the rest when it ends). Clones share the
/// pool; two pools are equal when they are the same pool.
#[derive(Clone, Debug)]
pub struct MemoryPool(Arc<RunBudget>);

impl MemoryPool {
    /// A pool of `bytes`.
    pub fn new(bytes: u64) -> MemoryPool {
        MemoryPool(Arc::new(RunBudget::new(u64::MAX, bytes)))
    }

    /// The pool's bytes in all.
    pub fn memory(&self) -> u64 {
        self.0.memory()
    }

    /// The bytes the runs in it hold now.
    pub fn memory_held(&self) -> u64 {
        self.0.memory_held()
    }

    /// The most bytes they held at once so far.
    pub fn memory_peak(&self) -> u64 {
        self.0.memory_peak()
    }
}

impl PartialEq for MemoryPool {
    fn eq(&self, other: &MemoryPool) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Takes between `need` and `want` from `left`: what was taken, or `None` below `need`.
fn take(left: &std::sync::atomic::AtomicU64, need: u64, want: u64) -> Option<u64> {
    use std::sync::atomic::Ordering::Relaxed;
    let mut got = 0;
    left.fetch_update(Relaxed, Relaxed, |l| {
        if l < need {
            return None;
        }
        got = l.min(want);
        Some(l - got)
    })
    .ok()?;
    Some(got)
}

thread_local! {
    static AMBIENT: std::cell::RefCell<Vec<Interrupt>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The time source `datetime_now` reads. Hosts replace it for tests and replay.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock stopped at one instant.
#[derive(Clone, Copy, Debug)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_millis(&self) -> i64 {
        self.0
    }
}

/// A failed evaluation: what went wrong, where in the expression, in which function, and
/// at which place in the data. The details live behind one pointer (read them through
/// `Deref`: `err.code`, `err.message`, …), so a `Result<Value, EvalError>` is no bigger
/// than a value and the success path moves no more than it must.
#[derive(Clone, PartialEq)]
pub struct EvalError(Box<ErrorDetails>);

/// The details of an [`EvalError`].
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorDetails {
    /// The stable code; also the error's kind for differential testing.
    pub code: Code,
    /// What went wrong.
    pub message: String,
    /// The expression span (in the program's source).
    pub span: Span,
    /// The built-in function that failed, if any.
    pub function: Option<Arc<str>>,
    /// Where in the data (`$.users[2].score`), when known.
    pub location: Option<String>,
}

impl std::ops::Deref for EvalError {
    type Target = ErrorDetails;
    fn deref(&self) -> &ErrorDetails {
        &self.0
    }
}

impl std::ops::DerefMut for EvalError {
    fn deref_mut(&mut self) -> &mut ErrorDetails {
        &mut self.0
    }
}

impl fmt::Debug for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl EvalError {
    /// An error at a span.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> EvalError {
        EvalError(Box::new(ErrorDetails { code, message: message.into(), span, function: None, location: None }))
    }

    /// As a diagnostic for rendering: the message names the function and data location.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut label = String::new();
        if let Some(f) = &self.function {
            label.push_str(&format!("in `{f}`"));
        }
        if let Some(loc) = &self.location {
            if !label.is_empty() {
                label.push_str(", ");
            }
            label.push_str(&format!("at {loc}"));
        }
        let d = Diagnostic::new(self.code, self.span, self.to_string());
        let d = if label.is_empty() { d.with_label("evaluation failed here") } else { d.with_label(label) };
        match self.code {
            Code::FuelExhausted => {
                d.with_help("the expression does too much work; raise the fuel limit if this is expected")
            }
            Code::MemoryLimit => d.with_help(
                "the expression builds too much data; build less (filter first, keep shared lists), \
                 or raise `Limits::max_alloc_bytes` if this is expected",
            ),
            Code::StringLimit => d.with_help(format!(
                "build shorter text, or raise `Limits::max_string_len` if this is expected; a template \
                 held in a variable is at most {} bytes",
                MAX_TEMPLATE_TEXT_BYTES
            )),
            Code::DivisionByZero => d.with_help("guard the divisor: `if(d != 0, n / d, 0)`"),
            Code::NoFileStore => d.with_help(
                "`tdsl eval --files DIR` serves the files under DIR; a host calls `Engine::with_file_store`",
            ),
            Code::PathEscapesRoot => {
                d.with_help("paths are inside the file store (`/` is its root) and must stay there")
            }
            Code::FileTooLarge => d.with_help("raise `Limits::max_file_bytes` if the file is expected to be this big"),
            Code::ListingTooLarge => d.with_help("list a smaller directory, or use a pattern without `**`"),
            Code::TooManyFiles => d.with_help("split the paths into groups of at most 5 and read each group"),
            _ => d,
        }
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(func) = &self.function {
            write!(f, "{func}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(loc) = &self.location {
            write!(f, " (at {loc})")?;
        }
        Ok(())
    }
}

impl std::error::Error for EvalError {}

impl Limits {
    /// Every limit in its range (the `Limits` ranges above; `max_fan_out` is
    /// [`crate::ranges::MAX_FAN_OUT`]): the first one out of range, if any. [`crate::Engine`] refuses to
    /// compile with limits that do not pass (`E0409`), so no setting can overflow the
    /// evaluator's arithmetic or let a recursion outgrow the stack.
    ///
    /// ```
    /// use tdsl::Limits;
    /// assert!(Limits::default().validate().is_ok());
    /// let deep = Limits { max_depth: 100_000, ..Limits::default() };
    /// assert_eq!(deep.validate().unwrap_err().to_string(),
    ///     "`max_depth` must be an integer from 1 to 192, and it is 100000");
    /// ```
    pub fn validate(&self) -> Result<(), crate::ranges::RangeError> {
        // A u64 or usize past 2^53 is not exact as f64, but it is out of range either way.
        use crate::ranges::*;
        let checks = [
            (FUEL, self.fuel as f64),
            (MAX_DEPTH, self.max_depth as f64),
            (MAX_STRING_LEN, self.max_string_len as f64),
            (MAX_LIST_LEN, self.max_list_len as f64),
            (MAX_OUTPUT_BYTES, self.max_output_bytes as f64),
            (MAX_ALLOC_BYTES, self.max_alloc_bytes as f64),
            (MAX_FAN_OUT, self.max_fan_out as f64),
            (MAX_CACHED_TEMPLATES, self.max_cached_templates as f64),
            (MAX_FILE_BYTES, self.max_file_bytes as f64),
            (MAX_LISTING_ENTRIES, self.max_listing_entries as f64),
        ];
        for (range, value) in checks {
            range.check(value)?;
        }
        Ok(())
    }
}
