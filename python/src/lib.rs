//! `tdsl._tdsl`: the native half of the Python package (SPEC §15). The Python half
//! (`python/tdsl/__init__.py`) holds the exception classes and the `Diagnostic` class and
//! documents the API; this module converts values, compiles, checks and runs.
//!
//! Values cross as Python objects, converted directly (no JSON text): `dict` ↔ object (key
//! order kept), `list`/`tuple` → list, `str`, `int` (64-bit), `float` (finite), `bool`,
//! `None`. Evaluation and runs release the GIL; Python tools are called with it held.

/// The extension's own allocations (the values a conversion builds and drops: millions of
/// small objects for 100,000 records) go to mimalloc rather than the C library's malloc,
/// whose freeing and consolidating of them was a quarter of a conversion's time
/// (docs/performance.md, "From Python"). Python's own objects are not affected.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use rustc_hash::FxHashMap;
use smol_str::SmolStr;
use tdsl::{
    Analyzer, CancelToken, Diagnostic, Engine, Executor, HostRunner, LineIndex, LoadError, Map, Options, PlanDesk, Run,
    RunPlanOptions, RunStatus, Runner, Scope, ToolCall, ToolError, ToolRoot, Value, Workflow,
};

/// How deep a value may nest when it crosses between Python and tdsl (tdsl's own depth
/// limit, `Limits::max_depth`). Deeper data (or a cyclic container) is refused, so that no
/// conversion can overflow the stack.
const MAX_DEPTH: usize = 128;

// ---------------------------------------------------------------------------------------
// The Python classes defined in `tdsl/_errors.py`.

fn class<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyAny>>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    attr(py, cell, "tdsl._errors", name)
}

fn attr<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let c = cell.get_or_try_init(py, || -> PyResult<Py<PyAny>> { Ok(py.import(module)?.getattr(name)?.unbind()) })?;
    Ok(c.bind(py).clone())
}

static TDSL_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RUN_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static OPTION_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TRANSIENT_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static START_CALL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Threads taking the GIL back, and whether the interpreter is exiting (set by an
/// `atexit` hook). A thread that waits for the GIL while the interpreter finalizes is ended
/// by CPython with `pthread_exit`, which unwinds through Rust frames and aborts the
/// process: an engine thread calling a tool, or a daemon thread inside `run` or `eval`
/// when the main thread exits. So no thread takes the GIL from here once the hook has run:
/// an engine thread gives up (the call fails), a thread coming back from work done without
/// the GIL waits forever (the process is ending). The hook waits for the threads counted in
/// to be done with the GIL.
struct Gate {
    /// (exiting, threads counted in)
    state: Mutex<(bool, usize)>,
    idle: Condvar,
}

static GATE: Gate = Gate { state: Mutex::new((false, 0)), idle: Condvar::new() };

impl Gate {
    /// Counts a thread in before it takes the GIL; false once the interpreter is exiting.
    fn enter(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.0 {
            return false;
        }
        s.1 += 1;
        true
    }

    fn leave(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.1 = s.1.saturating_sub(1);
        if s.1 == 0 {
            self.idle.notify_all();
        }
    }
}

/// Runs `f` with the GIL from an engine thread, unless the interpreter is exiting.
fn with_python<T>(f: impl FnOnce(Python<'_>) -> T) -> Option<T> {
    if !GATE.enter() {
        return None;
    }
    let out = Python::attach(f);
    GATE.leave();
    Some(out)
}

/// `py.detach(f)`, that never takes the GIL back once the interpreter is exiting: the
/// thread then waits forever (the process is ending; a daemon thread is not joined).
fn detach<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    let out = py.detach(|| {
        let out = f();
        if !GATE.enter() {
            loop {
                std::thread::park();
            }
        }
        out
    });
    GATE.leave();
    out
}

/// The `atexit` hook: no thread takes the GIL from here after it.
#[pyfunction]
fn _at_exit(py: Python<'_>) {
    py.detach(|| {
        let mut s = GATE.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.0 = true;
        // Bounded: the threads counted in convert values or start a tool's thread.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while s.1 > 0 {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            s = GATE.idle.wait_timeout(s, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    });
}

const EXITING: &str = "the Python interpreter is exiting";

/// A `tdsl.TdslError(message, code, span, diagnostics)`.
fn tdsl_error(
    py: Python<'_>,
    message: String,
    code: &str,
    span: Option<(usize, usize)>,
    diagnostics: Option<Py<PyAny>>,
) -> PyErr {
    match class(py, &TDSL_ERROR, "TdslError").and_then(|c| c.call1((message, code, span, diagnostics))) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

fn diagnostics_error(py: Python<'_>, diags: &[Diagnostic], name: &str, source: &str) -> PyErr {
    let first = diags.iter().find(|d| d.is_error()).or(diags.first());
    let Some(first) = first else {
        return tdsl_error(py, "failed without a diagnostic".into(), "E0000", None, None);
    };
    let list = match diagnostic_dicts(py, diags, name, source) {
        Ok(l) => l,
        Err(e) => return e,
    };
    tdsl_error(
        py,
        first.message.clone(),
        first.code.as_str(),
        Some((first.span.start as usize, first.span.end as usize)),
        Some(list),
    )
}

fn diagnostic_dicts(py: Python<'_>, diags: &[Diagnostic], name: &str, source: &str) -> PyResult<Py<PyAny>> {
    let index = LineIndex::new(source);
    let out = PyList::empty(py);
    for d in diags {
        let p = index.position(d.span);
        let dict = PyDict::new(py);
        dict.set_item("code", d.code.as_str())?;
        dict.set_item("severity", severity(d))?;
        dict.set_item("message", &d.message)?;
        dict.set_item("file", name)?;
        dict.set_item("line", p.line)?;
        dict.set_item("column", p.column)?;
        dict.set_item("end_line", p.end_line)?;
        dict.set_item("end_column", p.end_column)?;
        dict.set_item("help", d.help.as_deref())?;
        dict.set_item("span", (d.span.start, d.span.end))?;
        dict.set_item("rendered", tdsl::render_plain(std::slice::from_ref(d), name, source))?;
        out.append(dict)?;
    }
    Ok(out.into_any().unbind())
}

fn severity(d: &Diagnostic) -> &'static str {
    if d.is_error() {
        "error"
    } else {
        "warning"
    }
}

// ---------------------------------------------------------------------------------------
// Values.

/// Where in the data a conversion failed: `$.orders[3].total` (the parts from the
/// innermost out, as the error travels up).
fn at(path: &[PathPart]) -> String {
    let mut s = String::from("$");
    for p in path.iter().rev() {
        match p {
            PathPart::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            PathPart::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

enum PathPart {
    Key(String),
    Index(usize),
}

/// Why a conversion failed, and where: the message is made once the whole path is known.
struct Refused {
    type_error: bool,
    /// The text, with `{at}` where the path goes.
    text: String,
    path: Vec<PathPart>,
}

impl Refused {
    fn value(text: String) -> Refused {
        Refused { type_error: false, text, path: Vec::new() }
    }

    fn kind(text: String) -> Refused {
        Refused { type_error: true, text, path: Vec::new() }
    }

    fn into_pyerr(self) -> PyErr {
        let text = self.text.replace("{at}", &at(&self.path));
        if self.type_error {
            PyTypeError::new_err(text)
        } else {
            PyValueError::new_err(text)
        }
    }
}

impl From<PyErr> for Refused {
    fn from(e: PyErr) -> Refused {
        Refused::value(format!("the value at {{at}} could not be read: {e}"))
    }
}

/// A Python object as a tdsl value (dicts, lists, tuples, str, int, float, bool, None).
fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut conv = Conv { open: Vec::new(), strings: FxHashMap::default(), shared: FxHashMap::default(), reach: 0 };
    conv.convert(obj).map_err(Refused::into_pyerr)
}

/// One conversion's state.
struct Conv {
    /// The containers being converted (their ids), to name a cycle as one and bound the
    /// depth.
    open: Vec<usize>,
    /// Short strings already converted, by object: dict keys and repeated values (`"active"`)
    /// are usually the same Python object, and reading a `str`'s UTF-8 under the stable ABI
    /// of Python 3.9 copies it. The objects outlive the conversion (the input holds them
    /// and no Python code runs meanwhile), so their addresses are stable keys.
    strings: FxHashMap<usize, SmolStr>,
    /// Containers held in more than one place (by reference count), converted before: their
    /// value (shared: values are reference-counted and never change) and how many levels it
    /// nests. Data that holds the same list twice at each of 40 levels is 2^40 values as a
    /// tree; each shared container is converted once (its identity is stable for the same
    /// reason as the strings').
    shared: FxHashMap<usize, (Value, usize)>,
    /// The deepest `open.len()` reached, to know how deep a container nests.
    reach: usize,
}

/// How many distinct short strings one conversion remembers.
const STRING_CACHE: usize = 4096;

impl Conv {
    fn string(&mut self, s: &Bound<'_, PyString>) -> Result<SmolStr, Refused> {
        let id = s.as_ptr() as usize;
        if let Some(v) = self.strings.get(&id) {
            return Ok(v.clone());
        }
        let v = SmolStr::new(&*s.to_cow()?);
        if v.len() <= 23 && self.strings.len() < STRING_CACHE {
            self.strings.insert(id, v.clone());
        }
        Ok(v)
    }

    fn convert(&mut self, obj: &Bound<'_, PyAny>) -> Result<Value, Refused> {
        convert(obj, self)
    }

    /// The value of a shared container converted before, when it is one (refused when it
    /// nests too deep here).
    fn reuse(&mut self, obj: &Bound<'_, PyAny>) -> Result<Option<Value>, Refused> {
        let Some((value, height)) = self.shared.get(&(obj.as_ptr() as usize)) else { return Ok(None) };
        let reach = self.open.len() + height;
        if reach > MAX_DEPTH {
            return Err(too_deep());
        }
        self.reach = self.reach.max(reach);
        Ok(Some(value.clone()))
    }

    /// Enters a container: refused when it contains itself or nests too deep. Returns the
    /// `reach` to restore on leaving.
    fn enter(&mut self, obj: &Bound<'_, PyAny>) -> Result<usize, Refused> {
        enter(obj, self)?;
        Ok(std::mem::replace(&mut self.reach, self.open.len()))
    }

    /// Leaves the container entered last, whose value is `value`: remembers it when it is
    /// held elsewhere too (our reference and its container's are two).
    fn leave(&mut self, obj: &Bound<'_, PyAny>, outer: usize, value: &Value) {
        let height = self.reach + 1 - self.open.len();
        self.open.pop();
        self.reach = self.reach.max(outer);
        if obj.get_refcnt() > 2 {
            self.shared.insert(obj.as_ptr() as usize, (value.clone(), height));
        }
    }
}

fn too_deep() -> Refused {
    Refused::value(format!("the value at {{at}} nests deeper than {MAX_DEPTH} levels, tdsl's depth limit"))
}

/// `open`: the containers being converted (their ids), to name a cycle as one and bound
/// the depth.
fn enter(obj: &Bound<'_, PyAny>, conv: &mut Conv) -> Result<(), Refused> {
    let open = &mut conv.open;
    let id = obj.as_ptr() as usize;
    if open.contains(&id) {
        return Err(Refused::value(format!(
            "the value at {{at}} contains itself (a cyclic {}): tdsl values are trees",
            type_name(obj)
        )));
    }
    if open.len() >= MAX_DEPTH {
        return Err(too_deep());
    }
    open.push(id);
    Ok(())
}

fn convert(obj: &Bound<'_, PyAny>, conv: &mut Conv) -> Result<Value, Refused> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(conv.string(s)?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        if let Some(v) = conv.reuse(obj)? {
            return Ok(v);
        }
        let outer = conv.enter(obj)?;
        let mut map = Map::with_capacity_and_hasher(d.len(), Default::default());
        for (k, v) in d.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(Refused::kind(format!(
                    "the dict at {{at}} has a key of type {}: tdsl object keys are strings",
                    type_name(&k)
                )));
            };
            let key = conv.string(k)?;
            match convert(&v, conv) {
                Ok(value) => {
                    map.insert(key, value);
                }
                Err(mut e) => {
                    e.path.push(PathPart::Key(key.to_string()));
                    return Err(e);
                }
            }
        }
        let value = Value::Object(Arc::new(map));
        conv.leave(obj, outer, &value);
        return Ok(value);
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) => Err(Refused::value(
                "the integer at {at} does not fit in 64 bits (tdsl integers are signed 64-bit): pass it as a string or a float"
                    .to_string(),
            )),
        };
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        if !v.is_finite() {
            return Err(Refused::value(format!(
                "the float at {{at}} is {v}: tdsl numbers are finite (JSON has no NaN or infinity)"
            )));
        }
        return Ok(Value::Float(v));
    }
    let list = obj.cast::<PyList>().ok();
    let tuple = obj.cast::<PyTuple>().ok();
    if list.is_some() || tuple.is_some() {
        if let Some(v) = conv.reuse(obj)? {
            return Ok(v);
        }
        let outer = conv.enter(obj)?;
        // The C API's own length and items (PyList_Size, PyTuple_GetItem): no Python code
        // (a subclass's `__len__` or `__iter__`) runs during a conversion.
        let len = list.map_or_else(|| tuple.map_or(0, |t| t.len()), |l| l.len());
        let mut items = Vec::with_capacity(len);
        for i in 0..len {
            let item = match (list, tuple) {
                (Some(l), _) => l.get_item(i),
                (None, Some(t)) => t.get_item(i),
                (None, None) => break,
            };
            // A list shortened meanwhile ends the conversion where it ends.
            let Ok(item) = item else { break };
            match convert(&item, conv) {
                Ok(v) => items.push(v),
                Err(mut e) => {
                    e.path.push(PathPart::Index(i));
                    return Err(e);
                }
            }
        }
        let value = Value::List(items.into());
        conv.leave(obj, outer, &value);
        return Ok(value);
    }
    // Data converted before: its value, shared (no copy).
    if let Ok(d) = obj.cast::<Data>() {
        return Ok(d.get().value.clone());
    }
    Err(Refused::kind(format!(
        "the value at {{at}} is {}, which is not JSON-like: tdsl takes dict, list, tuple, str, int, float, bool, None and tdsl.Data",
        with_article(&type_name(obj))
    )))
}

/// "a set", "an object", "an int".
fn with_article(name: &str) -> String {
    let vowel = name.chars().next().is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {name}", if vowel { "an" } else { "a" })
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

/// A tdsl value as a Python object.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    to_py_at(py, v, 0)
}

fn to_py_at<'py>(py: Python<'py>, v: &Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH + 8 {
        return Err(PyValueError::new_err(format!("a tdsl value nests deeper than {MAX_DEPTH} levels")));
    }
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items.iter() {
                list.append(to_py_at(py, item, depth + 1)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map.iter() {
                dict.set_item(k.as_str(), to_py_at(py, item, depth + 1)?)?;
            }
            dict.into_any()
        }
    })
}

fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &Value::from(v))
}

fn vars_of(vars: Option<&Bound<'_, PyAny>>) -> PyResult<Value> {
    match vars {
        None => Ok(Value::Null),
        Some(v) if v.is_none() => Ok(Value::Null),
        Some(v) if v.is_instance_of::<Data>() => {
            let value = to_value(v)?;
            if !matches!(value, Value::Object(_)) {
                return Err(PyTypeError::new_err(format!(
                    "vars must be a dict, not a tdsl.Data of {}",
                    describe_value(&value)
                )));
            }
            Ok(value)
        }
        Some(v) => {
            if !v.is_instance_of::<PyDict>() {
                return Err(PyTypeError::new_err(format!("vars must be a dict, not {}", type_name(v))));
            }
            to_value(v)
        }
    }
}

/// What a value is, in a few words (`a dict of 3 keys`, `a list of 2 items`, `a str`).
fn describe_value(v: &Value) -> String {
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match v {
        Value::Object(m) => format!("a dict of {}", plural(m.len(), "key", "keys")),
        Value::List(l) => format!("a list of {}", plural(l.len(), "item", "items")),
        Value::Str(_) => "a str".to_string(),
        Value::Int(_) => "an int".to_string(),
        Value::Float(_) => "a float".to_string(),
        Value::Bool(_) => "a bool".to_string(),
        Value::Null => "None".to_string(),
    }
}

/// Python data converted to a tdsl value once, to pass many times: wherever the package
/// takes data (`vars`, a value inside them, `args`, what a tool returns), a `Data` is its
/// value without converting the Python objects again. It is a snapshot: changing the
/// Python objects afterwards does not change it.
#[pyclass(frozen, module = "tdsl", name = "Data")]
struct Data {
    value: Value,
}

#[pymethods]
impl Data {
    /// Converts `obj` (what `vars` may hold), with the same errors.
    #[new]
    fn new(obj: &Bound<'_, PyAny>) -> PyResult<Data> {
        Ok(Data { value: to_value(obj)? })
    }

    /// The value as new Python objects.
    fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.value)
    }

    fn __len__(&self) -> usize {
        match &self.value {
            Value::Object(m) => m.len(),
            Value::List(l) => l.len(),
            _ => 0,
        }
    }

    fn __repr__(&self) -> String {
        format!("tdsl.Data(<{}>)", describe_value(&self.value))
    }

    /// Pickled as its value: unpickling converts it again (`pickle`, `multiprocessing`).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, (Bound<'py, PyAny>,))> {
        Ok((slf.get_type(), (to_py(slf.py(), &slf.get().value)?,)))
    }

    /// A `Data` never changes: a copy is itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

// ---------------------------------------------------------------------------------------
// Expressions.

fn eval_error(py: Python<'_>, e: &tdsl::EvalError, source: &str) -> PyErr {
    let mut message = e.message.clone();
    if let Some(l) = &e.location {
        message.push_str(&format!(" (at {l})"));
    }
    let d = Diagnostic::new(e.code, e.span, &message);
    let list = diagnostic_dicts(py, std::slice::from_ref(&d), "<expr>", source).ok();
    tdsl_error(py, message, e.code.as_str(), Some((e.span.start as usize, e.span.end as usize)), list)
}

/// A compiled expression: compile once, evaluate many times, from any thread.
#[pyclass(frozen, module = "tdsl", name = "Program")]
struct Program {
    inner: tdsl::Program,
}

#[pymethods]
impl Program {
    /// Evaluates the program with `vars` (a dict of the names it reads).
    #[pyo3(signature = (vars=None))]
    fn eval<'py>(&self, py: Python<'py>, vars: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let vars = vars_of(vars)?;
        let program = &self.inner;
        match detach(py, || program.eval(&vars)) {
            Ok(v) => to_py(py, &v),
            Err(e) => Err(eval_error(py, &e, program.source())),
        }
    }

    /// The expression's source text.
    #[getter]
    fn source(&self) -> &str {
        self.inner.source()
    }

    /// The static type of its result, as tdsl writes types.
    #[getter]
    fn result_type(&self) -> String {
        self.inner.result_type().to_string()
    }

    fn __repr__(&self) -> String {
        format!("tdsl.Program({:?})", self.inner.source())
    }
}

#[pyfunction]
fn compile(py: Python<'_>, expr: &str) -> PyResult<Program> {
    let engine = Engine::new();
    match detach(py, || engine.compile(expr)) {
        Ok(inner) => Ok(Program { inner }),
        Err(diags) => Err(diagnostics_error(py, &diags, "<expr>", expr)),
    }
}

#[pyfunction]
#[pyo3(signature = (expr, vars=None))]
fn eval<'py>(py: Python<'py>, expr: &str, vars: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let vars = vars_of(vars)?;
    let engine = Engine::new();
    let compiled = detach(py, || {
        let scope = if vars.is_null() { Scope::open() } else { Scope::from_vars(&vars) };
        engine.compile_in(expr, &scope).map(|p| {
            let r = p.eval(&vars);
            (p, r)
        })
    });
    match compiled {
        Err(diags) => Err(diagnostics_error(py, &diags, "<expr>", expr)),
        Ok((_, Ok(v))) => to_py(py, &v),
        Ok((p, Err(e))) => Err(eval_error(py, &e, p.source())),
    }
}

// ---------------------------------------------------------------------------------------
// Checking.

#[pyfunction]
#[pyo3(signature = (paths, root=None))]
fn check_files<'py>(py: Python<'py>, paths: Vec<PathBuf>, root: Option<PathBuf>) -> PyResult<Bound<'py, PyList>> {
    let results = detach(py, || {
        let tool_root = match &root {
            Some(r) => ToolRoot::new(r),
            None => ToolRoot::assumed(std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))),
        };
        let mut analyzer = Analyzer::new(tool_root);
        paths
            .iter()
            .map(|p| (p.clone(), analyzer.check_file(p).map(|c| (c.name, c.source, c.diagnostics))))
            .collect::<Vec<_>>()
    });
    let out = PyList::empty(py);
    for (path, result) in results {
        match result {
            Ok((name, source, diags)) => {
                let list = diagnostic_dicts(py, &diags, &name, &source)?;
                for d in list.bind(py).try_iter()? {
                    out.append(d?)?;
                }
            }
            Err(e) => {
                return Err(tdsl_error(py, format!("cannot read {}: {e}", path.display()), "E0001", None, None));
            }
        }
    }
    Ok(out)
}

fn plans_for(root: &Path, allow: Option<Vec<String>>) -> Result<PlanDesk, String> {
    let allow = allow.unwrap_or_else(|| vec!["**/*.tool".to_string()]);
    PlanDesk::for_root(root, &allow)
}

/// The plan check's JSON (`{ok, errors, warnings, diagnostics, levels?, result_type?}`).
#[pyfunction]
#[pyo3(signature = (plan, root, allow=None))]
fn check_plan<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    root: PathBuf,
    allow: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let text = plan_text(plan)?;
    let check = detach(py, || plans_for(&root, allow).map(|p| p.check(&text).to_json()));
    match check {
        Ok(json) => json_to_py(py, &json),
        Err(e) => Err(tdsl_error(py, e, "E0814", None, None)),
    }
}

/// A plan as text: a `str` as it is, a dict converted (key order kept).
fn plan_text(plan: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = plan.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    if !plan.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!("a plan is a dict (or its JSON text), not {}", type_name(plan))));
    }
    let v = to_value(plan)?;
    Ok(v.to_string())
}

// ---------------------------------------------------------------------------------------
// Running.

/// Calls Python functions for the tools they are given for, and the host runner
/// (`exec:` programs) for the rest.
struct PyRunner {
    tools: HashMap<String, Py<PyAny>>,
    host: HostRunner,
    /// A `KeyboardInterrupt` or `SystemExit` raised by a tool: the run is cancelled and it
    /// propagates when the run ends.
    interrupt: Mutex<Option<PyErr>>,
    cancel: CancelToken,
    /// The tool root: a call is matched by its tool path, its file's path under the root,
    /// or the file's stem (the tool's served name).
    root: PathBuf,
}

fn tool_key(path: &str) -> String {
    let p = path.trim_start_matches('/');
    p.strip_suffix(".tool").unwrap_or(p).to_string()
}

impl Runner for PyRunner {
    fn call(&self, call: &ToolCall<'_>) -> Result<Value, ToolError> {
        let Some(f) = self.lookup(call) else {
            return self.host.call(call);
        };
        if call.cancel.is_cancelled() {
            return Err(ToolError::permanent("cancelled before the Python function was called"));
        }
        // The function runs on a Python thread of its own (`tdsl/_calls.py`); this thread
        // waits for it without the GIL, and stops waiting when the call is cancelled.
        let slot = Arc::new(Slot::default());
        with_python(|py| self.start_python(py, f, call, &slot))
            .unwrap_or_else(|| Err(ToolError::permanent(EXITING)))?;
        let outcome = loop {
            if let Some(outcome) = slot.wait(Duration::from_millis(20)) {
                break outcome;
            }
            if call.cancel.is_cancelled() {
                return Err(ToolError::permanent(
                    "cancelled while the Python function ran (it is left to return on its own)",
                ));
            }
        };
        with_python(|py| self.python_outcome(py, outcome, call)).unwrap_or_else(|| Err(ToolError::permanent(EXITING)))
    }
}

/// Where a tool function's thread leaves its outcome: the result, or the exception.
#[derive(Default)]
struct Slot {
    outcome: Mutex<Option<Result<Py<PyAny>, Py<PyAny>>>>,
    ready: Condvar,
}

impl Slot {
    fn wait(&self, timeout: Duration) -> Option<Result<Py<PyAny>, Py<PyAny>>> {
        let mut o = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        if o.is_none() {
            o = self.ready.wait_timeout(o, timeout).unwrap_or_else(PoisonError::into_inner).0;
        }
        o.take()
    }
}

/// The callable a tool function's thread calls with its outcome (`done(result, error)`).
#[pyclass(frozen, name = "_Done", module = "tdsl._tdsl")]
struct Done {
    slot: Arc<Slot>,
}

#[pymethods]
impl Done {
    fn __call__(&self, result: Py<PyAny>, error: Py<PyAny>, py: Python<'_>) {
        let outcome = if error.is_none(py) { Ok(result) } else { Err(error) };
        let mut o = self.slot.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        if o.is_none() {
            *o = Some(outcome);
        }
        drop(o);
        self.slot.ready.notify_all();
    }
}

impl PyRunner {
    fn lookup(&self, call: &ToolCall<'_>) -> Option<&Py<PyAny>> {
        if self.tools.is_empty() {
            return None;
        }
        if let Some(f) = self.tools.get(&tool_key(call.tool_path)) {
            return Some(f);
        }
        let file = call.file?;
        let root = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        if let Ok(rel) = file.strip_prefix(&root).or_else(|_| file.strip_prefix(&self.root)) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if let Some(f) = self.tools.get(&tool_key(&rel)) {
                return Some(f);
            }
        }
        self.tools.get(file.file_stem()?.to_str()?)
    }

    fn start_python(
        &self,
        py: Python<'_>,
        f: &Py<PyAny>,
        call: &ToolCall<'_>,
        slot: &Arc<Slot>,
    ) -> Result<(), ToolError> {
        let args = to_py(py, call.arguments).map_err(|e| ToolError::permanent(describe(py, &e)))?;
        let done = Done { slot: slot.clone() };
        attr(py, &START_CALL, "tdsl._calls", "start_call")
            .and_then(|start| start.call1((f.bind(py), args, done)))
            .map(|_| ())
            .map_err(|e| ToolError::permanent(format!("cannot call the Python function: {}", describe(py, &e))))
    }

    fn python_outcome(
        &self,
        py: Python<'_>,
        outcome: Result<Py<PyAny>, Py<PyAny>>,
        call: &ToolCall<'_>,
    ) -> Result<Value, ToolError> {
        match outcome {
            Ok(r) => {
                let r = r.into_bound(py);
                let not_a_dict = |what: String| {
                    ToolError::permanent(format!(
                        "the Python function for {} returned {what}, not a dict (the tool's response object)",
                        call.tool_path
                    ))
                };
                if let Ok(d) = r.cast::<Data>() {
                    // Converted before: used as it is, once it is a dict.
                    return match &d.get().value {
                        v @ Value::Object(_) => Ok(v.clone()),
                        v => Err(not_a_dict(format!("a tdsl.Data of {}", describe_value(v)))),
                    };
                }
                if !r.is_instance_of::<PyDict>() {
                    return Err(not_a_dict(format!("a {}", type_name(&r))));
                }
                to_value(&r).map_err(|e| {
                    ToolError::permanent(format!(
                        "the Python function for {} returned a value tdsl cannot take: {}",
                        call.tool_path,
                        describe(py, &e)
                    ))
                })
            }
            Err(e) => {
                let e = PyErr::from_value(e.into_bound(py));
                if e.is_instance_of::<PyKeyboardInterrupt>(py) || e.is_instance_of::<pyo3::exceptions::PySystemExit>(py)
                {
                    let text = describe(py, &e);
                    let mut slot = self.interrupt.lock().unwrap_or_else(PoisonError::into_inner);
                    if slot.is_none() {
                        *slot = Some(e);
                    }
                    self.cancel.cancel();
                    return Err(ToolError::permanent(text));
                }
                let transient = class(py, &TRANSIENT_ERROR, "TransientError")
                    .map(|c| e.value(py).is_instance(&c).unwrap_or(false))
                    .unwrap_or(false);
                let text = describe(py, &e);
                if transient {
                    Err(ToolError::transient(text))
                } else {
                    Err(ToolError::permanent(text))
                }
            }
        }
    }
}

/// The most bytes of an exception's text that a tool's error keeps (the same 64 KiB as an
/// `exec:` tool's standard error): a function that raises with a 50 MB message fails its
/// step with the first 64 KiB and the count of the rest, in the trace and the `RunError`.
const MAX_ERROR_TEXT: usize = 64 * 1024;

/// `ValueError: boom`, cut at [`MAX_ERROR_TEXT`] bytes.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    let text = e.value(py).str().ok();
    let text = text.as_ref().and_then(|s| s.to_cow().ok()).unwrap_or_default();
    let whole = if text.is_empty() { name } else { format!("{name}: {text}") };
    capped(whole, MAX_ERROR_TEXT)
}

/// `text` cut at `max` bytes (on a character boundary), saying how much was left out.
fn capped(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let left = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… [{left} more bytes left out]"));
    text
}

const OPTIONS: &str = "concurrency, deadline, timeout, retries, retry_delay, retry_max_delay, max_depth, cancel_grace";

/// How long `cancel_grace` may be, in seconds.
const CANCEL_GRACE: tdsl::ranges::Range =
    tdsl::ranges::Range { name: "cancel_grace", min: 0.0, max: 3600.0, integer: false, unit: "seconds" };

/// An option's number: an `int` or a `float` (not a `bool`, not a string), in its range
/// (`E0814` when out of it, NaN and infinity included).
fn option_number(
    py: Python<'_>,
    function: &str,
    name: &str,
    v: &Bound<'_, PyAny>,
    range: &tdsl::ranges::Range,
) -> PyResult<f64> {
    let n = if v.is_instance_of::<PyBool>() || !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!(
            "{function}() option `{name}` must be {}, not {}",
            if range.integer { "an int" } else { "a number (int or float)" },
            type_name(v)
        )));
    } else if v.is_instance_of::<PyInt>() {
        // Beyond 64 bits: out of every range.
        v.extract::<i64>().map(|i| i as f64).unwrap_or(f64::INFINITY)
    } else {
        v.extract::<f64>()?
    };
    if range.integer && v.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!("{function}() option `{name}` must be an int, not float")));
    }
    // Out of range: an `OptionError`, both a `TdslError` (`E0814`) and a `ValueError`.
    range.check(n).map_err(|e| {
        let message = format!("{function}() option `{name}`: {e}");
        match class(py, &OPTION_ERROR, "OptionError").and_then(|c| c.call1((message, "E0814"))) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })?;
    Ok(n)
}

fn options_from(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    use tdsl::ranges;
    let mut o = Options::default();
    let Some(kwargs) = kwargs else { return Ok(o) };
    for (k, v) in kwargs.iter() {
        let key: String = k.extract()?;
        let range = match key.as_str() {
            "concurrency" => ranges::CONCURRENCY,
            "deadline" => ranges::DEADLINE_SECONDS,
            "timeout" => ranges::TIMEOUT_SECONDS,
            "retries" => ranges::MAX_RETRIES,
            "retry_delay" => ranges::BASE_DELAY_SECONDS,
            "retry_max_delay" => ranges::MAX_DELAY_SECONDS,
            "max_depth" => ranges::MAX_NESTING,
            "cancel_grace" => CANCEL_GRACE,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "run() got an unknown option `{other}`; the options are {OPTIONS}"
                )))
            }
        };
        // None: the default.
        if v.is_none() {
            continue;
        }
        let n = option_number(py, "run", &key, &v, &range)?;
        match key.as_str() {
            "concurrency" => o.max_concurrency = n as usize,
            "deadline" => o.deadline = Some(Duration::from_secs_f64(n)),
            "timeout" => o.timeout_seconds = n,
            "retries" => o.retry.max_retries = n as u32,
            "retry_delay" => o.retry.base_delay_seconds = n,
            "retry_max_delay" => o.retry.max_delay_seconds = n,
            "max_depth" => o.max_depth = n as usize,
            _ => o.cancel_grace = Duration::from_secs_f64(n),
        }
    }
    Ok(o)
}

fn python_tools(tools: Option<&Bound<'_, PyDict>>) -> PyResult<HashMap<String, Py<PyAny>>> {
    let mut out = HashMap::new();
    if let Some(tools) = tools {
        for (k, f) in tools.iter() {
            let key: String =
                k.extract().map_err(|_| PyTypeError::new_err("tools maps tool paths (str) to callables"))?;
            if !f.is_callable() {
                return Err(PyTypeError::new_err(format!("tools[{key:?}] is a {}, not a callable", type_name(&f))));
            }
            out.insert(tool_key(&key), f.unbind());
        }
    }
    Ok(out)
}

fn load_error(py: Python<'_>, e: LoadError) -> PyErr {
    match e {
        LoadError::Invalid { name, source, diagnostics } => diagnostics_error(py, &diagnostics, &name, &source),
        other => tdsl_error(py, other.to_string(), "E0811", None, None),
    }
}

/// Runs `work` on its own thread and waits for it while polling for signals, so that
/// Ctrl-C (`KeyboardInterrupt`) cancels it: then `cancel` is cancelled, the work is given
/// `grace` to end (it is left to finish on its own after that: a Python tool may never
/// return), and the exception returned.
fn run_interruptible<T: Send + 'static>(
    py: Python<'_>,
    cancel: &CancelToken,
    grace: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let done: Arc<(Mutex<Option<T>>, Condvar)> = Arc::new((Mutex::new(None), Condvar::new()));
    let theirs = done.clone();
    std::thread::Builder::new()
        .name("tdsl-run".into())
        .spawn(move || {
            let out = work();
            *theirs.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
            theirs.1.notify_all();
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the run's thread: {e}")))?;
    let wait = |timeout: Duration| -> Option<T> {
        let deadline = std::time::Instant::now() + timeout;
        let mut slot = done.0.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(v) = slot.take() {
                return Some(v);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return None;
            }
            slot = done.1.wait_timeout(slot, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    };
    loop {
        if let Some(v) = detach(py, || wait(Duration::from_millis(50))) {
            return Ok(v);
        }
        if let Err(e) = py.check_signals() {
            cancel.cancel();
            let _ = detach(py, || wait(grace + Duration::from_millis(500)));
            return Err(e);
        }
    }
}

fn run_error(py: Python<'_>, run: &Run) -> PyErr {
    let (message, code) = match &run.error {
        Some(e) => (e.to_string(), e.code.clone()),
        None => (
            format!("the run ended {}: {}", run.status.as_str(), run.trace.failure_summary.clone().unwrap_or_default()),
            "E0803".to_string(),
        ),
    };
    let trace = serde_json::to_value(&run.trace)
        .ok()
        .and_then(|t| json_to_py(py, &t).ok())
        .map(|t| t.unbind())
        .unwrap_or_else(|| py.None());
    match class(py, &RUN_ERROR, "RunError").and_then(|c| c.call1((message, code, py.None(), py.None(), trace))) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

fn finish<'py>(py: Python<'py>, runner: &PyRunner, run: Run, want_trace: bool) -> PyResult<Bound<'py, PyAny>> {
    if let Some(e) = runner.interrupt.lock().unwrap_or_else(PoisonError::into_inner).take() {
        return Err(e);
    }
    let ok = matches!(run.status, RunStatus::Success | RunStatus::Partial) && run.result.is_some();
    if !ok {
        return Err(run_error(py, &run));
    }
    let result = to_py(py, run.result.as_ref().unwrap_or(&Value::Null))?;
    if want_trace {
        let trace = serde_json::to_value(&run.trace).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyTuple::new(py, [result, json_to_py(py, &trace)?])?.into_any())
    } else {
        Ok(result)
    }
}

#[pyfunction]
#[pyo3(signature = (tool, root=None, args=None, tools=None, trace=false, **options))]
fn run<'py>(
    py: Python<'py>,
    tool: PathBuf,
    root: Option<PathBuf>,
    args: Option<&Bound<'py, PyAny>>,
    tools: Option<&Bound<'py, PyDict>>,
    trace: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let arguments = match vars_of(args)? {
        Value::Null => Value::Object(Arc::new(Map::default())),
        v => v,
    };
    let opts = options_from(py, options)?;
    if let Err(e) = opts.validate() {
        return Err(tdsl_error(py, e.to_string(), "E0814", None, None));
    }
    let root = match root {
        Some(r) => r,
        None => std::env::current_dir()
            .map_err(|e| PyValueError::new_err(format!("no root given and no current directory: {e}")))?,
    };
    let loaded = detach(py, || {
        let as_tool_path = tool.to_string_lossy().starts_with('/') && !tool.is_file();
        if as_tool_path {
            Workflow::load_tool_path(&root, &tool.to_string_lossy())
        } else {
            // A file as given (absolute, or relative to the current directory), else under
            // the root.
            let file = if tool.is_absolute() || tool.is_file() { tool.clone() } else { root.join(&tool) };
            Workflow::load(&root, &file)
        }
    });
    let workflow = loaded.map_err(|e| load_error(py, e))?;
    let cancel = CancelToken::new();
    let runner = Arc::new(PyRunner {
        tools: python_tools(tools)?,
        host: HostRunner::new(),
        interrupt: Mutex::new(None),
        cancel: cancel.clone(),
        root: root.clone(),
    });
    let grace = opts.cancel_grace;
    let executor = Executor::with_runner(runner.clone()).with_options(opts);
    let token = cancel.clone();
    let outcome =
        run_interruptible(py, &cancel, grace, move || executor.run_cancellable(&workflow, arguments, &token))?;
    let run = outcome.map_err(|e| tdsl_error(py, e.to_string(), e.code().as_str(), None, None))?;
    finish(py, &runner, run, trace)
}

/// Checks a plan and, with no error, runs it: `run_plan`'s JSON
/// (`{status, result, steps, failure_summary?}`, or the check's JSON when refused).
#[pyfunction]
#[pyo3(signature = (plan, root, args=None, tools=None, allow=None, concurrency=None))]
#[allow(clippy::too_many_arguments)]
fn run_plan<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PyAny>,
    root: PathBuf,
    args: Option<&Bound<'py, PyAny>>,
    tools: Option<&Bound<'py, PyDict>>,
    allow: Option<Vec<String>>,
    concurrency: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    // As `run` checks it: an int (not a bool) in its range, else TypeError or E0814.
    let concurrency = match concurrency.filter(|c| !c.is_none()) {
        Some(c) => Some(option_number(py, "run_plan", "concurrency", c, &tdsl::ranges::CONCURRENCY)? as usize),
        None => None,
    };
    let text = plan_text(plan)?;
    let arguments = match vars_of(args)? {
        Value::Null => Value::Object(Arc::new(Map::default())),
        v => v,
    };
    let plans = detach(py, || plans_for(&root, allow)).map_err(|e| tdsl_error(py, e, "E0814", None, None))?;
    let cancel = CancelToken::new();
    let runner = Arc::new(PyRunner {
        tools: python_tools(tools)?,
        host: HostRunner::new(),
        interrupt: Mutex::new(None),
        cancel: cancel.clone(),
        root: root.clone(),
    });
    let options = RunPlanOptions { cancel: cancel.clone(), max_concurrency: concurrency, ..RunPlanOptions::default() };
    let dyn_runner: Arc<dyn Runner> = runner.clone();
    let outcome = run_interruptible(py, &cancel, Duration::from_secs(2), move || {
        plans.run(&text, arguments, dyn_runner, &options).map(|r| r.to_json()).map_err(|e| e.to_json())
    })?;
    if let Some(e) = runner.interrupt.lock().unwrap_or_else(PoisonError::into_inner).take() {
        return Err(e);
    }
    match outcome {
        Ok(json) => json_to_py(py, &json),
        Err(refused) => json_to_py(py, &refused),
    }
}

#[pymodule]
fn _tdsl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_class::<Data>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(check_files, m)?)?;
    m.add_function(wrap_pyfunction!(check_plan, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_plan, m)?)?;
    m.add("MAX_DEPTH", MAX_DEPTH)?;
    m.add_class::<Done>()?;
    let at_exit = wrap_pyfunction!(_at_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (at_exit,))?;
    Ok(())
}
