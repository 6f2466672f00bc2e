//! `tdsl serve --mcp --root DIR [--allow GLOB]...`: serves the tools under a root over MCP
//! on standard input and output (see [`crate::mcp`] and `docs/mcp.md`).
//!
//! Exit status: 0 when the client closes the connection or on SIGTERM (calls in flight
//! are cancelled and their programs killed; the exit comes within about 3 s), 1 when two
//! tools get the same name, 2 when the command itself cannot run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{usage_failure, UsageError};
use crate::mcp::McpServer;

/// Arguments of `tdsl serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Speak the Model Context Protocol on standard input and output (the only protocol).
    #[arg(long, required = true)]
    mcp: bool,
    /// The tool root whose `.tool` files are offered (default: the current folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Offer only tools whose tool path (`/tools/main.tool`) matches one of these globs
    /// (repeatable).
    #[arg(long, value_name = "GLOB")]
    allow: Vec<String>,
}

/// Runs `tdsl serve`.
pub fn run(args: ServeArgs) -> ExitCode {
    let _ = args.mcp;
    let root = match super::check::tool_root(args.root.as_deref()) {
        Ok(r) => r.dir().to_path_buf(),
        Err(e) => return usage_failure(&e),
    };
    let (server, skipped) = match McpServer::load(&root, &args.allow) {
        Ok(s) => s,
        Err(e) if e.starts_with("--allow") => return usage_failure(&UsageError(e)),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    for s in skipped {
        eprintln!("warning: not served: {s}");
    }
    eprintln!("tdsl: serving {} tool(s) from {} over MCP on stdio", server.tools().len(), root.display());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage_failure(&UsageError(format!("cannot start the async runtime: {e}"))),
    };
    let result = runtime.block_on(server.serve_stdio());
    // Calls cancelled at shutdown may still be winding down on blocking threads: their
    // programs are already killed, so the process does not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => usage_failure(&UsageError(e)),
    }
}
