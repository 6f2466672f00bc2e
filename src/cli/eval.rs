//! `tdsl eval EXPR [--vars FILE.json] [--var NAME=JSON]... [--emit value|ast|bytecode|type] [--files DIR]`

use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{color_stderr, open_files, render, usage_failure, UsageError};
use crate::engine::Engine;
use crate::types::Scope;
use crate::value::Value;

/// Arguments of `tdsl eval`.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The expression.
    expr: String,
    /// A JSON object whose keys become variables (and REF contexts).
    #[arg(long, value_name = "FILE.json")]
    vars: Option<std::path::PathBuf>,
    /// One variable as NAME=JSON (repeatable; wins over --vars).
    #[arg(long = "var", value_name = "NAME=JSON")]
    var: Vec<String>,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Emit::Value)]
    emit: Emit,
    /// Print the value on one line instead of indented.
    #[arg(long)]
    compact: bool,
    /// Fix the clock `datetime_now` reads (RFC 3339, e.g. 2026-01-01T00:00:00Z).
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// Serve the files under DIR to the file functions (`read_file`, `list_files`, …);
    /// paths are confined to DIR. Versions come from git when DIR is in a git work tree.
    #[arg(long, value_name = "DIR")]
    files: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Emit {
    /// The result as JSON.
    Value,
    /// The syntax tree with spans.
    Ast,
    /// The compiled bytecode.
    Bytecode,
    /// The inferred type.
    Type,
}

/// Loads the variables from `--vars` and `--var`.
pub(crate) fn load_vars(file: Option<&std::path::Path>, vars: &[String]) -> Result<Value, UsageError> {
    super::named_values::named_values(file, vars, "--var")
}

/// Runs `tdsl eval`.
pub(crate) fn run(args: EvalArgs) -> ExitCode {
    let vars = match load_vars(args.vars.as_deref(), &args.var) {
        Ok(v) => v,
        Err(e) => return usage_failure(&e),
    };
    let mut engine = Engine::new();
    if let Some(now) = &args.now {
        match super::fixed_clock(now) {
            Ok(clock) => engine = engine.with_clock(clock),
            Err(e) => return usage_failure(&e),
        }
    }
    if let Some(dir) = &args.files {
        match open_files(dir) {
            Ok(store) => engine = engine.with_file_store(store),
            Err(e) => return usage_failure(&e),
        }
    }
    let color = color_stderr();
    let source = args.expr.as_str();
    let scope = Scope::from_vars(&vars);
    let analysis = engine.analyze(source, &scope);
    if !analysis.diagnostics.is_empty() {
        eprint!("{}", render(&analysis.diagnostics, "<expr>", source, color));
    }
    match args.emit {
        Emit::Ast => {
            return print_then(&crate::syntax::dump(&analysis.ast), analysis.program.is_some());
        }
        Emit::Type => {
            let text = if analysis.program.is_some() { format!("{}\n", analysis.ty) } else { String::new() };
            return print_then(&text, analysis.program.is_some());
        }
        _ => {}
    }
    let Some(program) = analysis.program else { return ExitCode::from(1) };
    if let Emit::Bytecode = args.emit {
        return print_then(&program.disassemble(), true);
    }
    match program.eval(&vars) {
        Ok(v) => {
            let text = if args.compact { serde_json::to_string(&v) } else { serde_json::to_string_pretty(&v) };
            match text {
                Ok(t) => print_then(&(t + "\n"), true),
                Err(e) => usage_failure(&UsageError(format!("cannot print the result: {e}"))),
            }
        }
        Err(e) => {
            eprint!("{}", render(&[e.to_diagnostic()], "<expr>", source, color));
            ExitCode::from(1)
        }
    }
}

/// Prints `text`, then exits 0 when `ok`, 1 when not (or 1 when standard output failed).
fn print_then(text: &str, ok: bool) -> ExitCode {
    if let Err(code) = super::print_stdout(text) {
        return code;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
