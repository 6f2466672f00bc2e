//! `tdsl export [TOOL|DIR]... --format openai|anthropic|mcp [--root DIR]`: prints the tools
//! as a JSON list in a provider's native tool format — of the paths given, or of every tool
//! under the root (the current folder by default) when none is (SPEC §8).
//!
//! Names are file stems, or tool paths relative to the root where stems clash
//! ([`crate::export::names`]). What the format cannot express is listed on standard error,
//! one `warning[W0903]` line per feature naming the feature, the tool and the format
//! ([`crate::export::lossy`]). Exit status: 0 printed, 1 a tool does not load, two tools
//! get the same name, or a feature is lost under `--deny-warnings`; 2 the command itself
//! could not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::check::tool_root;
use super::{color_stderr, render, usage_failure, UsageError};
use crate::diagnostic::Code;
use crate::export::{export_names, export_tool_with_warnings, Format};
use crate::tool::ToolDef;

/// Arguments of `tdsl export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// `.tool` files, and folders to walk for them (default: every tool under the root).
    #[arg(value_name = "TOOL|DIR")]
    paths: Vec<PathBuf>,
    /// The provider format.
    #[arg(long, value_enum)]
    format: FormatArg,
    /// The tool root names are relative to (default: the current folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Fail (exit 1, nothing printed) when the format cannot express a feature of a tool.
    #[arg(long)]
    deny_warnings: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FormatArg {
    /// OpenAI function tools.
    Openai,
    /// Anthropic tools.
    Anthropic,
    /// MCP `Tool` objects.
    Mcp,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Openai => Format::OpenAi,
            FormatArg::Anthropic => Format::Anthropic,
            FormatArg::Mcp => Format::Mcp,
        }
    }
}

/// A tool to export: its name, its tool path, its file and its definition.
pub(crate) struct Named {
    pub name: String,
    pub tool_path: String,
    pub file: PathBuf,
    pub def: ToolDef,
}

/// Why tools could not be named.
pub(crate) enum NameError {
    /// The command cannot run (exit 2).
    Usage(UsageError),
    /// Problems were printed (exit 1).
    Problems,
}

/// Runs `tdsl export`.
pub(crate) fn run(args: ExportArgs) -> ExitCode {
    let root = match tool_root(args.root.as_deref()) {
        Ok(r) => r,
        Err(e) => return usage_failure(&e),
    };
    let paths = if args.paths.is_empty() { vec![root.dir().to_path_buf()] } else { args.paths };
    let files = match super::collect_tools(&paths, super::EmptyFolder::Allowed) {
        Ok(f) => f,
        Err(e) => return usage_failure(&e),
    };
    let tools = match load_named(root.dir(), &files) {
        Ok(t) => t,
        Err(NameError::Usage(e)) => return usage_failure(&e),
        Err(NameError::Problems) => return ExitCode::from(1),
    };
    let format = Format::from(args.format);
    let mut out = Vec::with_capacity(tools.len());
    let mut lost = 0usize;
    for t in &tools {
        let (tool, warnings) = export_tool_with_warnings(format, &t.name, &t.def);
        for w in warnings {
            let severity = if args.deny_warnings { "error" } else { "warning" };
            eprintln!("{severity}[{}]: {w} ({})", Code::ExportLossy, t.tool_path);
            lost += 1;
        }
        out.push(tool);
    }
    if args.deny_warnings && lost > 0 {
        eprintln!(
            "error: {lost} feature{} lost in the {} format, and --deny-warnings is set",
            if lost == 1 { "" } else { "s" },
            format.as_str()
        );
        return ExitCode::from(1);
    }
    let text = serde_json::to_string_pretty(&out).unwrap_or_default() + "\n";
    match super::print_stdout(&text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// Loads each file, names it among the exported set ([`export_names`]: the file stem
/// unless two stems clash), and reports load errors and name collisions on standard error.
/// The same file given twice is exported once.
pub(crate) fn load_named(root: &Path, files: &[PathBuf]) -> Result<Vec<Named>, NameError> {
    let tool_root = crate::analysis::ToolRoot::new(root);
    let mut loaded: Vec<(String, PathBuf, ToolDef)> = Vec::new();
    let mut problems = false;
    for file in files {
        let Some(tool_path) = tool_root.tool_path_of(file) else {
            return Err(NameError::Usage(UsageError(format!(
                "{}: not under the tool root {} (pass --root)",
                file.display(),
                root.display()
            ))));
        };
        if loaded.iter().any(|(p, _, _)| *p == tool_path) {
            continue;
        }
        let source = crate::input::read_text(file)
            .map_err(|e| NameError::Usage(UsageError(format!("cannot read {}: {e}", file.display()))))?;
        let (def, diags) = crate::tool::load(&source);
        let errors: Vec<_> = diags.into_iter().filter(|d| d.is_error()).collect();
        let Some(def) = def.filter(|_| errors.is_empty()) else {
            eprint!("{}", render(&errors, &file.display().to_string(), &source, color_stderr()));
            eprintln!("error: {} cannot be exported: it does not load", file.display());
            problems = true;
            continue;
        };
        loaded.push((tool_path, file.clone(), def));
    }
    let paths: Vec<&str> = loaded.iter().map(|(p, _, _)| p.as_str()).collect();
    let names = export_names(&paths);
    let mut tools: Vec<Named> = Vec::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    for ((tool_path, file, def), name) in loaded.into_iter().zip(names) {
        if let Some(&i) = by_name.get(&name) {
            eprintln!(
                "error: {} and {} both get the tool name `{name}`; rename one of them",
                tools[i].file.display(),
                file.display()
            );
            problems = true;
            continue;
        }
        by_name.insert(name.clone(), tools.len());
        tools.push(Named { name, tool_path, file, def });
    }
    if problems {
        return Err(NameError::Problems);
    }
    Ok(tools)
}
