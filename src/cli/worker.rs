//! `tdsl worker --engine temporal --root DIR [--temporal-address HOST:PORT] [--namespace NS]
//! [--task-queue Q] [--concurrency N]`: a Temporal worker that runs composites started by
//! `tdsl run --engine temporal` (feature `temporal`; docs/distributed.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{usage_failure, UsageError};

/// Where composites run: on this machine, or on a Temporal server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Engine {
    /// On this machine (the default).
    #[default]
    Local,
    /// On a Temporal server, through `tdsl worker` processes (feature `temporal`).
    Temporal,
}

/// The Temporal server, namespace and task queue (`--engine temporal`).
#[derive(Clone, Debug, Args)]
#[cfg_attr(not(feature = "temporal"), allow(dead_code))]
pub(crate) struct ConnectionArgs {
    /// The Temporal server's frontend, HOST:PORT (with `--engine temporal`).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7233")]
    pub(crate) temporal_address: String,
    /// The Temporal namespace (with `--engine temporal`).
    #[arg(long, value_name = "NS", default_value = "default")]
    pub(crate) namespace: String,
    /// The Temporal task queue workers poll (with `--engine temporal`).
    #[arg(long, value_name = "QUEUE", default_value = "tdsl")]
    pub(crate) task_queue: String,
}

#[cfg(feature = "temporal")]
impl ConnectionArgs {
    pub(crate) fn connection(&self) -> crate::temporal::Connection {
        crate::temporal::Connection {
            address: self.temporal_address.clone(),
            namespace: self.namespace.clone(),
            task_queue: self.task_queue.clone(),
        }
    }
}

/// Arguments of `tdsl worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The engine to work for: `temporal`.
    #[arg(long, value_enum)]
    engine: Engine,
    /// The tool root: primitive tools (and the programs of `exec:` endpoints) are found here.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The most tool calls this worker runs at once (1–1024).
    #[arg(long, value_name = "N", default_value_t = 8)]
    concurrency: usize,
}

/// The error of `--engine temporal` in a build without the feature.
#[cfg(not(feature = "temporal"))]
pub(crate) fn feature_missing() -> UsageError {
    UsageError(
        "--engine temporal: this tdsl was built without the `temporal` feature; rebuild it with `cargo build --release --features temporal`"
            .to_string(),
    )
}

/// Runs `tdsl worker`.
pub(crate) fn run(args: WorkerArgs) -> ExitCode {
    if args.engine != Engine::Temporal {
        return usage_failure(&UsageError("--engine: a worker runs for `temporal`".to_string()));
    }
    if let Err(e) = crate::ranges::CONCURRENCY.check(args.concurrency as f64) {
        return usage_failure(&UsageError(format!("--concurrency: {e}")));
    }
    if !args.root.is_dir() {
        return usage_failure(&UsageError(format!("--root {}: no such directory", args.root.display())));
    }
    start(args)
}

#[cfg(not(feature = "temporal"))]
fn start(_args: WorkerArgs) -> ExitCode {
    usage_failure(&feature_missing())
}

#[cfg(feature = "temporal")]
fn start(args: WorkerArgs) -> ExitCode {
    let root = std::fs::canonicalize(&args.root).unwrap_or(args.root.clone());
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage_failure(&UsageError(format!("cannot start the async runtime: {e}"))),
    };
    let conn = args.connection.connection();
    match runtime.block_on(crate::temporal::worker::run_worker(&conn, root, args.concurrency)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
