//! `tdsl graph <TOOL> [--root DIR] [--format mermaid|dot] [--types]`: the checked DAG of a composite
//! tool, with its levels, on standard output.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::check::{tool_file, tool_root};
use super::{color_stderr, render, usage_failure, UsageError};
use crate::analysis::Analyzer;

/// Arguments of `tdsl graph`.
#[derive(Debug, Args)]
pub(crate) struct GraphArgs {
    /// The tool: a file path or, when no such file exists and `--root` is given, a tool
    /// path under the root (`/tools/main.tool`).
    #[arg(value_name = "TOOL")]
    tool: String,
    /// The tool root `tool_definition_path`s resolve against.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The drawing language.
    #[arg(long, value_enum, default_value_t = Format::Mermaid)]
    format: Format,
    /// Label each path an edge carries with its type (inferred from its uses where the
    /// declarations say `any`).
    #[arg(long)]
    types: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// A Mermaid flowchart.
    Mermaid,
    /// A Graphviz digraph.
    Dot,
}

/// Runs `tdsl graph`.
pub(crate) fn run(args: GraphArgs) -> ExitCode {
    let root = match tool_root(args.root.as_deref()) {
        Ok(r) => r,
        Err(e) => return usage_failure(&e),
    };
    let file = match tool_file(&args.tool, &root, args.root.is_some()) {
        Ok(f) => f,
        Err(e) => return usage_failure(&e),
    };
    let mut analyzer = Analyzer::new(root);
    let checked = match analyzer.check_file(&file) {
        Ok(c) => c,
        Err(e) => return usage_failure(&UsageError(format!("cannot read {}: {e}", file.display()))),
    };
    if !checked.diagnostics.is_empty() {
        eprint!("{}", render(&checked.diagnostics, &args.tool, &checked.source, color_stderr()));
    }
    let Some(plan) = checked.plan else {
        if !checked.has_errors() {
            eprintln!("error: {} is a primitive tool: it has no steps to draw", args.tool);
        }
        return ExitCode::from(1);
    };
    let text = match (args.format, args.types) {
        (Format::Mermaid, false) => plan.to_mermaid(),
        (Format::Dot, false) => plan.to_dot(&checked.name),
        (Format::Mermaid, true) => plan.to_mermaid_typed(&checked.types),
        (Format::Dot, true) => plan.to_dot_typed(&checked.name, &checked.types),
    };
    match super::print_stdout(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
