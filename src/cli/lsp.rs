//! `tdsl lsp`: the language server on standard input and output (`docs/editors.md`).

use std::process::ExitCode;

use clap::Args;

/// Arguments of `tdsl lsp`.
#[derive(Debug, Args)]
pub struct LspArgs {
    /// Accepted for editors that pass it (the server only speaks over stdio).
    #[arg(long)]
    stdio: bool,
}

/// Runs the server until the client shuts it down.
pub fn run(_args: LspArgs) -> ExitCode {
    let (connection, io) = lsp_server::Connection::stdio();
    let served = crate::lsp::serve(&connection, Some(super::check::check_endpoint));
    drop(connection);
    let joined = io.join();
    match (served, joined) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("error: tdsl lsp: {e}");
            ExitCode::from(2)
        }
        (Ok(()), Err(e)) => {
            eprintln!("error: tdsl lsp: {e}");
            ExitCode::from(2)
        }
    }
}
