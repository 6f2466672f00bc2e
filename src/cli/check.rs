//! `tdsl check <PATH>... [--root DIR] [--format human|json] [--deny-warnings]`
//!
//! Every problem of every file in one run. Human output is miette's rendering on standard
//! error, followed by a summary line; JSON output is one array on standard output, one
//! object per diagnostic (`docs/analysis.md`). Exit status: 0 clean (warnings allowed
//! unless `--deny-warnings`), 1 problems found, 2 the command could not run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{color_stderr, render, usage_failure, UsageError};
use crate::analysis::{Analyzer, CheckedTool, ToolRoot};
use crate::diagnostic::Severity;
use crate::tool::LineIndex;

/// Arguments of `tdsl check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// `.tool` files, and folders to search for them (recursively).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The tool root `tool_definition_path`s resolve against. When given, a path that names
    /// no file is an error; by default the current directory is assumed and such callees
    /// are not checked.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    deny_warnings: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Rendered diagnostics with the JSON source, on standard error.
    Human,
    /// One JSON array of diagnostics on standard output.
    Json,
}

/// One diagnostic in `--format json` output.
#[derive(serde::Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    severity: Severity,
    message: &'a str,
    file: &'a str,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    help: Option<&'a str>,
}

/// The root `--root` names, or the current directory assumed.
pub(crate) fn tool_root(dir: Option<&Path>) -> Result<ToolRoot, UsageError> {
    match dir {
        Some(d) if d.is_dir() => Ok(ToolRoot::new(d)),
        Some(d) => Err(UsageError(format!("--root {}: no such directory", d.display()))),
        None => std::env::current_dir()
            .map(ToolRoot::assumed)
            .map_err(|e| UsageError(format!("cannot read the current directory: {e}"))),
    }
}

/// Runs `tdsl check`.
pub fn run(args: CheckArgs) -> ExitCode {
    let root = match tool_root(args.root.as_deref()) {
        Ok(r) => r,
        Err(e) => return usage_failure(&e),
    };
    let files = match super::collect_tools(&args.paths, super::EmptyFolder::Error) {
        Ok(f) => f,
        Err(e) => return usage_failure(&e),
    };
    let mut analyzer = Analyzer::new(root);
    let mut checked: Vec<(String, CheckedTool)> = Vec::with_capacity(files.len());
    let mut unreadable = false;
    for f in &files {
        match analyzer.check_file(f) {
            Ok(c) => checked.push((f.display().to_string(), c)),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                unreadable = true;
            }
        }
    }
    let count = |sev: Severity| -> usize {
        checked.iter().map(|(_, c)| c.diagnostics.iter().filter(|d| d.severity() == sev).count()).sum()
    };
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    match args.format {
        Format::Human => {
            let color = color_stderr();
            for (name, c) in &checked {
                if !c.diagnostics.is_empty() {
                    eprint!("{}", render(&c.diagnostics, name, &c.source, color));
                }
            }
            eprintln!(
                "checked {} file{}: {errors} error{}, {warnings} warning{}",
                checked.len(),
                plural(checked.len()),
                plural(errors),
                plural(warnings)
            );
        }
        Format::Json => {
            let mut out = Vec::new();
            for (name, c) in &checked {
                let lines = LineIndex::new(&c.source);
                for d in &c.diagnostics {
                    let p = lines.position(d.span);
                    out.push(JsonDiagnostic {
                        code: d.code.as_str(),
                        severity: d.severity(),
                        message: &d.message,
                        file: name,
                        line: p.line,
                        column: p.column,
                        end_line: p.end_line,
                        end_column: p.end_column,
                        help: d.help.as_deref(),
                    });
                }
            }
            match serde_json::to_string_pretty(&out) {
                Ok(text) => println!("{text}"),
                Err(e) => return usage_failure(&UsageError(format!("cannot print the diagnostics: {e}"))),
            }
        }
    }
    if unreadable {
        ExitCode::from(2)
    } else if errors > 0 || (args.deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
