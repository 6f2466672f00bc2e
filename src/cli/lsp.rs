//! `tdsl lsp`: the language server on standard input and output (`docs/editors.md`).

use std::process::ExitCode;

use clap::Args;

use crate::lsp::Ended;

/// Arguments of `tdsl lsp`.
#[derive(Debug, Args)]
pub(crate) struct LspArgs {
    /// Accepted for editors that pass it (the server only speaks over stdio).
    #[arg(long)]
    stdio: bool,
    /// The longest message the server reads, in bytes (1 KiB to 4 GiB; default 64 MiB).
    /// A longer one is skipped and answered with an error. It is also the longest
    /// document followed: edits past it stop the server checking that document.
    #[arg(long, value_name = "BYTES", default_value_t = crate::lsp::framing::DEFAULT_MAX_MESSAGE_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1024..=4 * 1024 * 1024 * 1024))]
    max_message_bytes: u64,
}

/// Runs the server until the client shuts it down: exit status 0 after `shutdown` and
/// `exit` (or at the end of the input), 1 for `exit` without `shutdown`, 2 when the
/// handshake or standard output fails.
pub(crate) fn run(args: LspArgs) -> ExitCode {
    let max = usize::try_from(args.max_message_bytes).unwrap_or(usize::MAX);
    let (connection, io) = crate::lsp::framing::stdio(max);
    let served = crate::lsp::serve_with(&connection, Some(super::check::check_endpoint), max);
    drop(connection);
    let joined = io.join();
    match (served, joined) {
        // LSP: `exit` without `shutdown` first is exit status 1.
        (Ok(Ended::Exit { after_shutdown: false }), Ok(())) => {
            eprintln!("tdsl lsp: `exit` came without `shutdown` first");
            ExitCode::from(1)
        }
        (Ok(_), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("error: tdsl lsp: {e}");
            ExitCode::from(2)
        }
        (Ok(_), Err(e)) => {
            eprintln!("error: tdsl lsp: {e}");
            ExitCode::from(2)
        }
    }
}
