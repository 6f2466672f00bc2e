//! `tdsl check <PATH>... [--root DIR] [--format human|json] [--deny-warnings] [--mcp-schemas] [--upstream NAME=…]
//! [--explain-types] [--max-nesting N]`
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
use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::export::compare_with_server;
use crate::host::mcp_client::{McpClients, McpEndpoint};
use crate::tool::LineIndex;
use crate::tool::ToolKind;

/// Arguments of `tdsl check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// `.tool` files, and folders to search for them (recursively).
    #[arg(required_unless_present = "plan", conflicts_with = "plan", value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Check a plan saved as a JSON file (a composite tool object as a language model writes
    /// it, `docs/plans.md`) against the tools under the root, with every diagnostic located
    /// by a JSON pointer into the plan.
    #[arg(long, value_name = "FILE.json")]
    plan: Option<PathBuf>,
    /// With `--plan`: the tools the plan may call, as `serve --mcp --allow` (every tool under
    /// the root when none is given).
    #[arg(long, value_name = "GLOB", requires = "plan")]
    allow: Vec<String>,
    /// With `--plan`: the folder the file functions read (`read_file`, …); without it a plan
    /// that uses them is refused (E1310).
    #[arg(long, value_name = "DIR", requires = "plan")]
    files: Option<PathBuf>,
    /// With `--plan`: the largest plan, in bytes, as `serve --mcp --plans --max-plan-bytes`
    /// (1 KiB–16 MiB; default 256 KiB).
    #[arg(long = "max-plan-bytes", value_name = "N", requires = "plan")]
    max_plan_bytes: Option<f64>,
    /// With `--plan`: the most steps of a plan, as `serve`'s flag (1–1,024; default 64).
    #[arg(long = "max-plan-steps", value_name = "N", requires = "plan")]
    max_plan_steps: Option<f64>,
    /// With `--plan`: the deepest nesting of a plan's JSON, as `serve`'s flag (4–192; default 64).
    #[arg(long = "max-plan-nesting", value_name = "N", requires = "plan")]
    max_plan_nesting: Option<f64>,
    /// With `--plan`: the most children of a fan-out step, as `serve`'s flag (1–100,000;
    /// default 1,000).
    #[arg(long = "max-fan-out", value_name = "N", requires = "plan")]
    max_fan_out: Option<f64>,
    /// The upstream MCP servers whose tools a plan or a `.tool` file (a skill, `serve
    /// --skills`) calls as `NAME/TOOL`: checked against their schemas.
    #[command(flatten)]
    upstream: super::upstreams::UpstreamArgs,
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
    /// Start the MCP server of every `mcp:` endpoint and check the tool's declared arguments
    /// and responses against the schemas the server gives (E09xx). Off by default: it runs
    /// the servers' programs.
    #[arg(long)]
    mcp_schemas: bool,
    /// Print the type of every REF, variable and transform output on standard output (with
    /// what its uses demand where the declarations say `any`): one line each, or one JSON
    /// array with `--format json`. Diagnostics are then rendered on standard error.
    #[arg(long)]
    explain_types: bool,
    /// How deep composite callees may nest, as `tdsl run --max-nesting` (1–32, default 8): a
    /// deeper chain of composite calls is E0619.
    #[arg(long, value_name = "N", default_value_t = crate::ranges::DEFAULT_MAX_NESTING)]
    max_nesting: usize,
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

/// The file a command's `TOOL` argument names: the path as given when it is a file (or a
/// non-directory that exists, such as a pipe), else, with `--root`, the tool path under the
/// root (`tdsl graph`, `tdsl run`).
pub(crate) fn tool_file(tool: &str, root: &ToolRoot, root_given: bool) -> Result<PathBuf, UsageError> {
    let is_file = |p: &Path| p.is_file() || (p.exists() && !p.is_dir());
    let given = PathBuf::from(tool);
    if is_file(&given) {
        return Ok(given);
    }
    if !root_given {
        return Err(UsageError(format!("{tool}: no such file")));
    }
    match root.file_path(tool) {
        Ok(p) if is_file(&p) => Ok(p),
        Ok(p) => Err(UsageError(format!("{tool}: no such file (looked for {})", p.display()))),
        Err(e) => Err(UsageError(e)),
    }
}

/// Runs `tdsl check`.
pub(crate) fn run(args: CheckArgs) -> ExitCode {
    if let Some(plan) = &args.plan {
        return check_plan(plan, &args);
    }
    // clap waives `requires = "plan"` when PATHs (which conflict with `--plan`) are given:
    // a plan's option without a plan would be silently ignored.
    let plan_only = [
        ("--allow", !args.allow.is_empty()),
        ("--files", args.files.is_some()),
        ("--max-plan-bytes", args.max_plan_bytes.is_some()),
        ("--max-plan-steps", args.max_plan_steps.is_some()),
        ("--max-plan-nesting", args.max_plan_nesting.is_some()),
        ("--max-fan-out", args.max_fan_out.is_some()),
    ];
    if let Some((flag, _)) = plan_only.iter().find(|(_, given)| *given) {
        return usage_failure(&UsageError(format!("{flag} applies to `--plan FILE.json` only")));
    }
    let root = match tool_root(args.root.as_deref()) {
        Ok(r) => r,
        Err(e) => return usage_failure(&e),
    };
    let files = match super::collect_tools(&args.paths, super::EmptyFolder::Error) {
        Ok(f) => f,
        Err(e) => return usage_failure(&e),
    };
    if let Err(e) = crate::ranges::MAX_NESTING.check(args.max_nesting as f64) {
        return usage_failure(&UsageError(format!("--max-nesting: {e}")));
    }
    // The upstream servers, each listed (started) when a file first names one of its tools.
    let upstreams = match args.upstream.upstreams() {
        Ok(u) => u.map(std::sync::Arc::new),
        Err(e) => return usage_failure(&e),
    };
    let code = check_files(&args, &files, super::upstreams::with_upstreams(root, upstreams.as_ref()));
    if let Some(ups) = upstreams {
        ups.shut_down();
    }
    code
}

/// [`run`] once the files and the root are known.
fn check_files(args: &CheckArgs, files: &[PathBuf], root: ToolRoot) -> ExitCode {
    let mut analyzer = Analyzer::new(root);
    analyzer.set_max_nesting(args.max_nesting);
    let mut checked: Vec<(String, CheckedTool)> = Vec::with_capacity(files.len());
    let mut unreadable = false;
    for f in files {
        match analyzer.check_file(f) {
            Ok(c) => checked.push((f.display().to_string(), c)),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                unreadable = true;
            }
        }
    }
    for (_, c) in &mut checked {
        check_endpoint(c);
    }
    if args.mcp_schemas {
        let clients = McpClients::new();
        for (_, c) in &mut checked {
            check_mcp_schemas(&clients, c);
        }
    }
    let count = |sev: Severity| -> usize {
        checked.iter().map(|(_, c)| c.diagnostics.iter().filter(|d| d.severity() == sev).count()).sum()
    };
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    if args.explain_types {
        if let Err(code) = explain_types(&checked, args.format) {
            return code;
        }
    }
    match args.format {
        Format::Human => summary(&checked, errors, warnings),
        Format::Json if args.explain_types => summary(&checked, errors, warnings),
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
                Ok(text) => {
                    if let Err(code) = super::print_stdout(&(text + "\n")) {
                        return code;
                    }
                }
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

/// One entry of `--explain-types --format json`.
#[derive(serde::Serialize)]
struct JsonType<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    kind: &'static str,
    name: &'a str,
    #[serde(rename = "type")]
    ty: String,
    inferred: Option<String>,
}

/// `--explain-types`: the types, on standard output.
fn explain_types(checked: &[(String, CheckedTool)], format: Format) -> Result<(), ExitCode> {
    let mut text = String::new();
    let mut json = Vec::new();
    for (name, c) in checked {
        let lines = LineIndex::new(&c.source);
        for t in &c.types {
            let p = lines.position(t.span);
            match format {
                Format::Human => {
                    text.push_str(&format!(
                        "{name}:{}:{}: {} `{}`: {}\n",
                        p.line,
                        p.column,
                        t.kind.as_str(),
                        t.name,
                        t.shown()
                    ));
                }
                Format::Json => json.push(JsonType {
                    file: name,
                    line: p.line,
                    column: p.column,
                    end_line: p.end_line,
                    end_column: p.end_column,
                    kind: t.kind.as_str(),
                    name: &t.name,
                    ty: t.ty.to_string(),
                    inferred: t.inferred.as_ref().map(ToString::to_string),
                }),
            }
        }
    }
    if let Format::Json = format {
        text = serde_json::to_string_pretty(&json)
            .map_err(|e| usage_failure(&UsageError(format!("cannot print the types: {e}"))))?;
        text.push('\n');
    }
    super::print_stdout(&text)
}

/// With `--explain-types`, the diagnostics go to standard error, rendered.
fn summary(checked: &[(String, CheckedTool)], errors: usize, warnings: usize) {
    let color = color_stderr();
    for (name, c) in checked {
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

/// A primitive tool's endpoint, as the command line's runner would take it (W0902).
pub(crate) fn check_endpoint(c: &mut CheckedTool) {
    let Some(def) = c.tool.clone() else { return };
    let ToolKind::Primitive { system_event_endpoint } = &def.kind else { return };
    if let Err(why) = crate::host::check_endpoint(&system_event_endpoint.node) {
        c.diagnostics.push(
            Diagnostic::new(Code::UnknownEndpoint, system_event_endpoint.span, why)
                .with_label("`tdsl run` cannot call this")
                .with_help("a library host's own runner may still know it; `tdsl run` would fail the call"),
        );
        c.diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
    }
}

/// With `--mcp-schemas`: a primitive tool with an `mcp:` endpoint against its server's
/// `tools/list` (servers are shared between files through `clients`).
fn check_mcp_schemas(clients: &McpClients, c: &mut CheckedTool) {
    let Some(def) = c.tool.clone() else { return };
    let ToolKind::Primitive { system_event_endpoint } = &def.kind else { return };
    let Some(spec) = system_event_endpoint.node.strip_prefix("mcp:") else { return };
    let span = system_event_endpoint.span;
    let unavailable = |message: String| {
        Diagnostic::new(Code::McpServerUnavailable, span, message)
            .with_label("this server")
            .with_help("check the command line; `tdsl check` without `--mcp-schemas` does not start it")
    };
    let endpoint = match McpEndpoint::parse(spec) {
        Ok(e) => e,
        Err(e) => {
            c.diagnostics.push(unavailable(e));
            return;
        }
    };
    match clients.list_tools(&endpoint, c.file.as_deref()) {
        Ok(tools) => {
            c.diagnostics.extend(compare_with_server(&def, &c.source, (&endpoint.tool, span), &tools));
        }
        // The operator's command: what the server last wrote on standard error is shown.
        Err(e) => {
            c.diagnostics.push(unavailable(format!("cannot ask the MCP server for its tools: {}", e.for_operator())))
        }
    }
    c.diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// One diagnostic of `check --plan --format json`: the objects of `check`, with the JSON
/// pointer and the range inside a string.
#[derive(serde::Serialize)]
struct JsonPlanDiagnostic<'a> {
    #[serde(flatten)]
    check: JsonDiagnostic<'a>,
    pointer: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<[usize; 2]>,
}

/// `tdsl check --plan FILE.json`: the plan against the tools under the root (all of them,
/// or those `--allow` matches), as `serve --mcp --plans` would check it.
fn check_plan(path: &Path, args: &CheckArgs) -> ExitCode {
    let root = match &args.root {
        Some(d) if d.is_dir() => d.clone(),
        Some(d) => return usage_failure(&UsageError(format!("--root {}: no such directory", d.display()))),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => return usage_failure(&UsageError(format!("cannot read the current directory: {e}"))),
        },
    };
    let limits = match super::plan_limits(
        [
            ("--max-plan-bytes", args.max_plan_bytes),
            ("--max-plan-steps", args.max_plan_steps),
            ("--max-plan-nesting", args.max_plan_nesting),
            ("--max-fan-out", args.max_fan_out),
        ],
        None,
    ) {
        Ok(l) => l,
        Err(e) => return usage_failure(&UsageError(e)),
    };
    let mut plans = match crate::plans::PlanDesk::for_root(&root, &args.allow) {
        Ok(p) => p.with_limits(limits),
        Err(e) => return usage_failure(&UsageError(format!("--allow: {e}"))),
    };
    if let Some(dir) = &args.files {
        match super::open_files(dir) {
            Ok(store) => plans = plans.with_file_store(store),
            Err(e) => return usage_failure(&e),
        }
    }
    // The upstream servers' tools, listed now (each started, then shut down).
    let upstreams = match args.upstream.upstreams() {
        Ok(u) => u,
        Err(e) => return usage_failure(&e),
    };
    if let Some(ups) = &upstreams {
        let mut tools = Vec::new();
        for (server, listed) in ups.all_tools() {
            match listed {
                Ok(list) => tools.extend(list.iter().filter_map(|t| crate::mcp::upstream::upstream_tool(&server, t))),
                Err(e) => eprintln!("warning: --upstream {server}: {e}"),
            }
        }
        plans = plans.with_upstream(tools);
    }
    let code = check_plan_with(path, args, &plans);
    if let Some(ups) = upstreams {
        ups.shut_down();
    }
    code
}

/// [`check_plan`] once the callable tools are known.
fn check_plan_with(path: &Path, args: &CheckArgs, plans: &crate::plans::PlanDesk) -> ExitCode {
    let name = path.display().to_string();
    // The size first: a plan over the limit is not read.
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => return usage_failure(&UsageError(format!("cannot read {name}: {e}"))),
    };
    // …and the read bounded by the limit too: a file that grows after its size was taken,
    // or reports none (`/proc`), is not read past it.
    let limit = plans.limits().max_bytes as u64;
    let checked = match plans.refuse_size(len) {
        Some(refused) => refused,
        None => match crate::input::read_bytes_capped(path, limit) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => plans.check(&text),
                Err(e) => {
                    let e = crate::input::InputError::NotUtf8 { at: e.utf8_error().valid_up_to() };
                    return usage_failure(&UsageError(format!("cannot read {name}: {e}")));
                }
            },
            Err(crate::input::InputError::TooLarge { .. }) => plans.refuse_read_past_limit(),
            Err(e) => return usage_failure(&UsageError(format!("cannot read {name}: {e}"))),
        },
    };
    let (errors, warnings) = checked.counts();
    match args.format {
        Format::Human => {
            if !checked.diagnostics.is_empty() {
                eprint!("{}", render(&checked.raw_diagnostics(), &name, &checked.printable_source(), color_stderr()));
            }
            if checked.omitted() > 0 {
                eprintln!("… and {} more diagnostics, not shown", checked.omitted());
            }
            if let (Some(levels), Some(ty)) = (&checked.levels, &checked.result_type) {
                let levels: Vec<String> = levels.iter().map(|l| format!("[{}]", l.join(", "))).collect();
                eprintln!("levels: {}", levels.join(" → "));
                eprintln!("result: {ty}");
            }
            eprintln!("checked plan {name}: {errors} error{}, {warnings} warning{}", plural(errors), plural(warnings));
        }
        Format::Json => {
            let out: Vec<JsonPlanDiagnostic<'_>> = checked
                .diagnostics
                .iter()
                .map(|d| JsonPlanDiagnostic {
                    check: JsonDiagnostic {
                        code: d.code,
                        severity: d.severity,
                        message: &d.message,
                        file: &name,
                        line: d.line,
                        column: d.column,
                        end_line: d.end_line,
                        end_column: d.end_column,
                        help: d.help.as_deref(),
                    },
                    pointer: &d.pointer,
                    range: d.range,
                })
                .collect();
            match serde_json::to_string_pretty(&out) {
                Ok(text) => {
                    if let Err(code) = super::print_stdout(&(text + "\n")) {
                        return code;
                    }
                }
                Err(e) => return usage_failure(&UsageError(format!("cannot print the diagnostics: {e}"))),
            }
        }
    }
    if errors > 0 || (args.deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
