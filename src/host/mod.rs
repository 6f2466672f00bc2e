//! The host adapters: how the engine's calls reach the world. The engine ([`crate::exec`])
//! runs composites and calls primitive tools only through its [`Runner`](crate::Runner)
//! trait, and does no I/O of its own; what starts processes, speaks HTTP and MCP, and reads
//! mock files is here, behind that trait.
//!
//! - [`runner`]: [`HostRunner`], the command line's runner (`exec:` programs, `builtin:`
//!   tools, mocks), and the process-group bookkeeping that ends every child on a signal;
//! - [`env`]: what a tool's process starts with ([`ToolEnv`], the program's path);
//! - [`tails`]: where the end of a failed program's standard error goes ([`StderrTails`]):
//!   to the operator, never to a client;
//! - [`endpoint`]: the one parser of `system_event_endpoint`s, which `tdsl check` judges too;
//! - [`http`]: `http(s)://` endpoints (feature `http`);
//! - [`mcp_client`]: the MCP *client* for `mcp:` endpoints and `--upstream` servers, over
//!   stdio and Streamable HTTP (features `mcp`, `mcp-http`). The MCP *server* is
//!   [`crate::mcp`].
//!
//! Nothing here is imported by `exec`; the arrows run from here down to it.

pub(crate) mod endpoint;
pub(crate) mod env;
#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "mcp")]
pub(crate) mod mcp_client;
mod orphans;
pub(crate) mod runner;
mod tails;
#[cfg(all(target_os = "linux", feature = "cli"))]
pub(crate) mod watchdog;

#[cfg(feature = "mcp")]
pub(crate) use endpoint::refuse_token_in_clear;
pub use env::ToolEnv;
// For the `tdsl` command: `check`'s endpoint warning, `run --max-tool-output`, the cleanup.
#[cfg(feature = "cli")]
pub(crate) use orphans::{adopt_orphans, end_children};
#[cfg(feature = "cli")]
pub(crate) use runner::{check_endpoint, DEFAULT_MAX_STDOUT, TERM_GRACE};
pub use runner::{HostRunner, Mock};
#[cfg(feature = "mcp")]
pub(crate) use tails::log as log_stderr;
pub(crate) use tails::StderrTails;
