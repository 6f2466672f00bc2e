//! The state of a REPL session — the engine and the variables — and what each input does.
//!
//! Both front ends (the line editor and the script reader) hand every input to
//! [`Session::run`], so a command behaves the same typed or scripted; they differ only in
//! how values are laid out ([`Layout`]) and whether colour is used.

use std::io::Write;
use std::time::{Duration, Instant};

use super::command::{self, Input, Slice, COMMANDS};
use super::json::{self, Layout};
use super::scan::is_ident;
use crate::cli::render;
use crate::diagnostic::{did_you_mean, Diagnostic};
use crate::engine::{Analysis, Engine, Program};
use crate::functions::{Param, ParamKind, Signature};
use crate::types::signature::ELEMENT_NAME;
use crate::types::Scope;
use crate::value::Value;

/// The name diagnostics give the input line.
const SOURCE_NAME: &str = "<input>";

/// How long `:time` aims to spend measuring.
const TIME_BUDGET: Duration = Duration::from_millis(200);

/// `:time` measures batches doubling in size until one takes this long, to estimate the
/// cost of one evaluation before the measured run.
const CALIBRATION: Duration = Duration::from_millis(20);

/// `:time` never runs an expression more often than this.
const MAX_RUNS: u64 = 100_000_000;

/// Types longer than this are shortened in `:vars` and `:load`.
const TYPE_WIDTH: usize = 100;

/// Where output goes and how it looks.
pub(crate) struct Output<'w> {
    /// Values and command output.
    pub out: &'w mut dyn Write,
    /// Diagnostics and errors.
    pub err: &'w mut dyn Write,
    /// How values are laid out.
    pub layout: Layout,
    /// Whether diagnostics are coloured.
    pub color_err: bool,
}

impl Output<'_> {
    fn value(&mut self, v: &Value) {
        let _ = writeln!(self.out, "{}", json::render(v, self.layout));
    }

    fn text(&mut self, text: &str) {
        let _ = writeln!(self.out, "{}", text.trim_end_matches('\n'));
    }

    fn error(&mut self, message: &str) {
        let label = if self.color_err { "\x1b[1;31merror\x1b[0m" } else { "error" };
        let _ = writeln!(self.err, "{label}: {message}");
    }

    /// Renders diagnostics found in `slice` against the whole input line, so the span
    /// underlined is where the user typed it (after `:let x =` too).
    fn diagnostics(&mut self, diags: &[Diagnostic], line: &str, slice: Slice<'_>) {
        if diags.is_empty() {
            return;
        }
        let shift = |s: crate::span::Span| s.shift(slice.offset as u32);
        let shifted: Vec<Diagnostic> = diags.iter().map(|d| d.clone().map_spans(&shift)).collect();
        let _ = self.out.flush();
        let _ = write!(self.err, "{}", render(&shifted, SOURCE_NAME, line, self.color_err));
    }

    fn flush(&mut self) {
        let _ = self.out.flush();
        let _ = self.err.flush();
    }
}

/// What happened to one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// It did what was asked.
    Done,
    /// It failed; the reason was printed.
    Failed,
    /// `:quit`.
    Quit,
}

/// An engine and the variables of the session.
pub(crate) struct Session {
    engine: Engine,
    /// An object: the variables, which are also the REF contexts.
    vars: Value,
    /// The variables given on the command line, which `:clear` goes back to.
    initial: Value,
}

impl Session {
    /// A session starting with `vars` (an object).
    pub(crate) fn new(engine: Engine, vars: Value) -> Session {
        Session { engine, initial: vars.clone(), vars }
    }

    /// The variables, an object.
    pub(crate) fn vars(&self) -> &Value {
        &self.vars
    }

    /// The engine (for its functions).
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs one input and prints what it produces.
    pub(crate) fn run(&mut self, line: &str, out: &mut Output<'_>) -> Step {
        let step = match command::parse(line) {
            Ok(input) => self.input(line, input, out),
            Err(message) => {
                out.error(&message);
                Step::Failed
            }
        };
        out.flush();
        step
    }

    fn input(&mut self, line: &str, input: Input<'_>, out: &mut Output<'_>) -> Step {
        match input {
            Input::Empty => Step::Done,
            Input::Expr(expr) => match self.evaluate(line, expr, out) {
                Some(v) => {
                    out.value(&v);
                    Step::Done
                }
                None => Step::Failed,
            },
            Input::Help(None) => {
                out.text(&self.help());
                Step::Done
            }
            Input::Help(Some(name)) => match self.help_on(name) {
                Ok(text) => {
                    out.text(&text);
                    Step::Done
                }
                Err(message) => fail(out, &message),
            },
            Input::Vars => {
                out.text(&self.list_vars());
                Step::Done
            }
            Input::Let(name, expr) => {
                if let Err(message) = check_name(name) {
                    return fail(out, &message);
                }
                match self.evaluate(line, expr, out) {
                    Some(v) => {
                        out.value(&v);
                        self.set(name, v);
                        Step::Done
                    }
                    None => Step::Failed,
                }
            }
            Input::Load(name, path) => self.load(name, path, out),
            Input::Type(expr) => {
                let analysis = self.analyze(line, expr, out);
                if analysis.program.is_none() {
                    return Step::Failed;
                }
                out.text(&analysis.ty.to_string());
                Step::Done
            }
            Input::Ast(expr) => {
                let analysis = self.analyze(line, expr, out);
                // The tree is printed even when checking failed: it is what was parsed.
                out.text(&crate::syntax::dump(&analysis.ast));
                if analysis.program.is_some() {
                    Step::Done
                } else {
                    Step::Failed
                }
            }
            Input::Bytecode(expr) => match self.analyze(line, expr, out).program {
                Some(program) => {
                    out.text(&program.disassemble());
                    Step::Done
                }
                None => Step::Failed,
            },
            Input::Time(expr) => match self.analyze(line, expr, out).program {
                Some(program) => self.time(&program, line, expr, out),
                None => Step::Failed,
            },
            Input::Clear(names) => self.clear(&names, out),
            Input::Quit => Step::Quit,
        }
    }

    /// Checks `expr` against the current variables and prints its diagnostics.
    fn analyze(&self, line: &str, expr: Slice<'_>, out: &mut Output<'_>) -> Analysis {
        let analysis = self.engine.analyze(expr.text, &Scope::from_vars(&self.vars));
        out.diagnostics(&analysis.diagnostics, line, expr);
        analysis
    }

    /// Compiles and evaluates `expr`, printing any diagnostic; `None` when it failed.
    fn evaluate(&self, line: &str, expr: Slice<'_>, out: &mut Output<'_>) -> Option<Value> {
        let program = self.analyze(line, expr, out).program?;
        match program.eval(&self.vars) {
            Ok(v) => Some(v),
            Err(e) => {
                out.diagnostics(&[e.to_diagnostic()], line, expr);
                None
            }
        }
    }

    fn set(&mut self, name: &str, v: Value) {
        let mut map = self.vars.as_object().cloned().unwrap_or_default();
        map.insert(name.into(), v);
        self.vars = Value::object(map);
    }

    fn load(&mut self, name: &str, path: &str, out: &mut Output<'_>) -> Step {
        if let Err(message) = check_name(name) {
            return fail(out, &message);
        }
        let text = match crate::input::read_text(std::path::Path::new(path)) {
            Ok(t) => t,
            Err(e) => return fail(out, &format!("cannot read {path}: {e}")),
        };
        let v: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => return fail(out, &format!("{path} is not valid JSON: {e}")),
        };
        out.text(&describe_var(name, &v));
        self.set(name, v);
        Step::Done
    }

    fn clear(&mut self, names: &[&str], out: &mut Output<'_>) -> Step {
        if names.is_empty() {
            self.vars = self.initial.clone();
            return Step::Done;
        }
        let mut map = self.vars.as_object().cloned().unwrap_or_default();
        for name in names {
            if map.shift_remove(*name).is_none() {
                let mut message = format!("no variable `{name}`");
                if let Some(s) = did_you_mean(name, map.keys().map(|k| &**k)) {
                    message.push_str(&format!(" (did you mean `{s}`?)"));
                }
                return fail(out, &message);
            }
        }
        self.vars = Value::object(map);
        Step::Done
    }

    fn time(&self, program: &Program, line: &str, expr: Slice<'_>, out: &mut Output<'_>) -> Step {
        // One evaluation first, so an expression that fails is reported rather than timed.
        if let Err(e) = program.eval(&self.vars) {
            out.diagnostics(&[e.to_diagnostic()], line, expr);
            return Step::Failed;
        }
        let measure = |runs: u64| {
            let start = Instant::now();
            for _ in 0..runs {
                let _ = std::hint::black_box(program.eval(std::hint::black_box(&self.vars)));
            }
            start.elapsed()
        };
        let mut batch = 1;
        let mut took = measure(batch);
        while took < CALIBRATION && batch < MAX_RUNS {
            batch *= 2;
            took = measure(batch);
        }
        let per_run = took.as_secs_f64() / batch as f64;
        let runs = ((TIME_BUDGET.as_secs_f64() / per_run.max(1e-12)).ceil() as u64).clamp(1, MAX_RUNS);
        let total = measure(runs);
        let each = total.div_f64(runs as f64);
        out.text(&format!("{} per evaluation ({runs} runs in {})", format_duration(each), format_duration(total)));
        Step::Done
    }

    fn list_vars(&self) -> String {
        let lines: Vec<String> = match self.vars.as_object() {
            Some(map) if !map.is_empty() => map.iter().map(|(k, v)| describe_var(k, v)).collect(),
            _ => vec!["no variables: add one with `:let NAME = EXPR` or `:load NAME FILE.json`".into()],
        };
        lines.join("\n")
    }

    fn help(&self) -> String {
        let mut s = String::from("Type an expression to see its value as JSON, or a command:\n");
        let usage: Vec<String> = COMMANDS.iter().map(|c| format!(":{} {}", c.name, c.args)).collect();
        let width = usage.iter().map(|u| u.len()).max().unwrap_or(0);
        for (c, u) in COMMANDS.iter().zip(&usage) {
            s.push_str(&format!("  {u:width$}  {}\n", c.help));
        }
        s.push_str("Commands may be shortened to a unique prefix (`:q`).\n\n");
        s.push_str("Keys: Tab completes functions, parameters, variables and commands; Ctrl-R searches\n");
        s.push_str("the history; an unclosed bracket or string continues on the next line (Alt-Enter\n");
        s.push_str("starts a new line anyway); Ctrl-C cancels the input; Ctrl-D quits.\n\n");
        s.push_str("Functions (`:help NAME` describes one):\n");
        let mut names: Vec<&str> = self.engine.functions().names().collect();
        names.sort_unstable();
        s.push_str(&wrap(&names, 88, "  "));
        s
    }

    fn help_on(&self, name: &str) -> Result<String, String> {
        let funcs = self.engine.functions();
        if let Some(id) = funcs.lookup(name) {
            return Ok(describe_function(&funcs.get(id).signature));
        }
        if let Some(c) = COMMANDS.iter().find(|c| c.name == name) {
            return Ok(format!(":{} {}\n  {}", c.name, c.args, c.help));
        }
        let mut message = format!("no function or command `{name}`");
        let candidates = funcs.names().chain(COMMANDS.iter().map(|c| c.name));
        if let Some(s) = did_you_mean(name, candidates) {
            message.push_str(&format!(" (did you mean `{s}`?)"));
        }
        Err(message)
    }
}

fn fail(out: &mut Output<'_>, message: &str) -> Step {
    out.error(message);
    Step::Failed
}

/// Whether `name` can be a variable: an identifier that is not a keyword nor a name that
/// templates bind.
fn check_name(name: &str) -> Result<(), String> {
    if !is_ident(name) {
        return Err(format!("`{name}` is not a name: use letters, digits and `_`, not starting with a digit"));
    }
    if crate::syntax::KEYWORDS.contains(&name) {
        return Err(format!("`{name}` is a keyword and cannot be a variable"));
    }
    if name == "item" || name == "current" {
        return Err(format!("`{name}` is bound by templates and cannot be a variable"));
    }
    Ok(())
}

/// `name: type`, the type shortened when long.
fn describe_var(name: &str, v: &Value) -> String {
    let mut ty = crate::types::type_of(v).to_string();
    if ty.chars().count() > TYPE_WIDTH {
        ty = ty.chars().take(TYPE_WIDTH - 1).collect::<String>() + "…";
    }
    format!("{name}: {ty}")
}

fn describe_function(sig: &Signature) -> String {
    let mut s = format!("{}\n  {}\n", sig.display(), sig.summary);
    let width = sig.params.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &sig.params {
        s.push_str(&format!("  {:width$}  {}\n", p.name, describe_param(p)));
    }
    if sig.any_keywords {
        s.push_str("  any keyword arguments\n");
    }
    if sig.takes_element_name() {
        s.push_str(&format!(
            "  {ELEMENT_NAME:width$}  a string literal: a second name for `item` in its templates (optional)\n"
        ));
    }
    s
}

fn describe_param(p: &Param) -> String {
    let mut s = match p.kind {
        ParamKind::Value => p.ty.to_string(),
        ParamKind::Template => "template: an expression evaluated per element, with `item`".into(),
        ParamKind::PathTemplate => "template with `item`; a bare path like \"a.b\" means item.a.b".into(),
        ParamKind::Operations => "a list of expressions, each over `current`".into(),
        ParamKind::Lazy => "evaluated only when chosen".into(),
    };
    if !p.one_of.is_empty() {
        let choices: Vec<String> = p.one_of.iter().map(|c| format!("\"{c}\"")).collect();
        s.push_str(&format!(", one of {}", choices.join(", ")));
    }
    match &p.default {
        None => {}
        Some(Value::Null) if p.kind != ParamKind::Value => s.push_str(" (optional)"),
        Some(d) => s.push_str(&format!(" (default {d})")),
    }
    s
}

/// Words joined by ", " in lines of at most `width` characters, each line indented.
fn wrap(words: &[&str], width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for (i, w) in words.iter().enumerate() {
        let piece = if i + 1 < words.len() { format!("{w}, ") } else { (*w).to_string() };
        if !line.is_empty() && indent.len() + line.len() + piece.trim_end().len() > width {
            out.push_str(indent);
            out.push_str(line.trim_end());
            out.push('\n');
            line.clear();
        }
        line.push_str(&piece);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A duration with three significant digits: `812 ns`, `1.25 µs`, `40.1 ms`, `2.00 s`.
pub(crate) fn format_duration(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_three_significant_digits() {
        assert_eq!(format_duration(Duration::from_nanos(812)), "812 ns");
        assert_eq!(format_duration(Duration::from_nanos(1_250)), "1.25 µs");
        assert_eq!(format_duration(Duration::from_micros(40_120)), "40.1 ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2.00 s");
    }

    #[test]
    fn names_must_be_free_identifiers() {
        assert!(check_name("users_2").is_ok());
        for bad in ["2x", "a-b", "", "null", "item", "current"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wrapping_keeps_lines_short() {
        let words = ["alpha", "beta", "gamma", "delta"];
        assert_eq!(wrap(&words, 20, "  "), "  alpha, beta,\n  gamma, delta\n");
    }
}
