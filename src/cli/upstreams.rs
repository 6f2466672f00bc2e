//! The `--upstream` flags of `check`, `run` and `replay` (`serve --plans` reads the same
//! ones through [`Upstreams::from_flags`]), and the tool root that knows the upstream tools.

use std::sync::Arc;

use clap::Args;

use super::UsageError;
use crate::analysis::ToolRoot;
use crate::mcp::upstream::{UpstreamCatalog, Upstreams};

/// `--upstream NAME=COMMAND|URL` and its options (of `check` and `run`; `serve --plans` has
/// the same flags): the tools of an MCP server, callable as `NAME/TOOL` as a plan or a skill
/// (`serve --skills`) calls them, declared from the schemas its `tools/list` gives.
#[derive(Debug, Args)]
pub(crate) struct UpstreamArgs {
    /// Make the tools of an MCP server callable as `NAME/TOOL`, as `serve --mcp --plans
    /// --upstream` does: a command line started over stdio (split like `exec:`), or an
    /// http:// or https:// URL (repeatable). A skill saved by `serve --skills`, or any
    /// composite, that calls `NAME/TOOL` is checked against that tool's schemas (and `run`
    /// calls it there).
    #[arg(long, value_name = "NAME=COMMAND|URL")]
    upstream: Vec<String>,
    /// With --upstream NAME=URL: send `Authorization: Bearer <token>` to that server, the
    /// token being this file's content (a file only its owner can read; repeatable).
    #[arg(long = "upstream-token", value_name = "NAME=FILE", requires = "upstream")]
    upstream_token: Vec<String>,
    /// With --upstream NAME=https://…: also trust the CA certificates of this PEM file for
    /// that server's certificate (repeatable, one per upstream).
    #[arg(long = "upstream-ca", value_name = "NAME=FILE", requires = "upstream")]
    upstream_ca: Vec<String>,
    /// With --upstream: how long to wait for an upstream server's `tools/list`, in seconds
    /// (0.1–300; default 30); a server that does not answer in time is E0903.
    #[arg(long = "upstream-timeout", value_name = "S", requires = "upstream")]
    upstream_timeout: Option<f64>,
}

impl UpstreamArgs {
    /// Whether any `--upstream` was given.
    pub(crate) fn given(&self) -> bool {
        !self.upstream.is_empty()
    }

    /// The servers, none started yet (`None` without `--upstream`), or the usage error.
    pub(crate) fn upstreams(&self) -> Result<Option<Upstreams>, UsageError> {
        if !self.given() {
            return Ok(None);
        }
        Upstreams::from_flags(&self.upstream, &self.upstream_token, &self.upstream_ca, self.upstream_timeout)
            .map(|u| Some(u.listed_once()))
            .map_err(UsageError)
    }
}

/// `root` knowing the tools of `upstreams` as `NAME/TOOL` (each server listed the first time
/// a file names one of its tools).
pub(crate) fn with_upstreams(root: ToolRoot, upstreams: Option<&Arc<Upstreams>>) -> ToolRoot {
    match upstreams {
        Some(ups) => {
            let catalog = UpstreamCatalog::new(ups.clone(), root.dir());
            root.with_named(Arc::new(catalog))
        }
        None => root,
    }
}
