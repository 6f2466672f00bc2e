//! Where the end of a failed program's standard error goes.
//!
//! An `mcp:` or `--upstream` server that dies, and an `exec:` program that fails, leave
//! their last lines of standard error on the error ([`ToolError::stderr_tail`]), apart from
//! the message (an `exec:` program's were in the message, for every client, until hostile
//! round 12). Those lines may say anything
//! of how the operator started the server — a folder, a key it echoes — so they are the
//! operator's to read, and only the front end knows who reads the run: it chooses with
//! [`StderrTails`] when it builds its runner ([`super::HostRunner`]), and the engine, which
//! records messages only, never sees the choice.
//!
//! Architecture invariant: nothing that reaches an MCP client or a model — a tool result,
//! an error, a check's or a run's diagnostics, progress and log notifications, a trace, a
//! history row — is made from the tail. It is in a message only where the operator reads
//! the run ([`StderrTails::InMessage`]).

use crate::exec::ToolError;

/// Where a runner sends what a failed program last wrote on its standard error.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum StderrTails {
    /// Left on the error, out of its message (the default): the engine records the message
    /// alone, so no trace, run error, event or history row holds the tail. For runs a client
    /// or a model reads (`tdsl compose`), and for embedders, whose own runner may read it.
    #[default]
    Withheld,
    /// Put at the end of the message: the operator reads the run (`tdsl run`, a Temporal
    /// worker), its trace and its history.
    InMessage,
    /// Written on this process's standard error, the message left without it but saying
    /// where it is (`serve`): the operator reads the server's log, the client the message.
    Logged,
}

impl StderrTails {
    /// `error` with its tail sent where `self` says: the error the engine then gets.
    pub(crate) fn deliver(self, error: ToolError) -> ToolError {
        if error.stderr_tail.is_none() {
            return error;
        }
        match self {
            StderrTails::Withheld => error,
            StderrTails::InMessage => ToolError { message: error.for_operator(), stderr_tail: None, ..error },
            StderrTails::Logged => {
                log(&error.for_operator());
                let message = format!("{} (what it wrote on standard error is on the server's log)", error.message);
                ToolError { message, stderr_tail: None, ..error }
            }
        }
    }
}

/// One line on this process's standard error (`serve`'s log), with the control characters
/// a program may have written shown, not obeyed, by the operator's terminal.
pub(crate) fn log(text: &str) {
    eprintln!("tdsl: {}", crate::diagnostic::escape_hidden(text, &[]));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dying() -> ToolError {
        ToolError::transient("`t`: the MCP tool `t` of srv failed: connection closed").with_stderr_tail("key=sk-1")
    }

    #[test]
    fn the_tail_is_in_the_message_only_where_the_operator_reads_it() {
        let withheld = StderrTails::Withheld.deliver(dying());
        assert_eq!(withheld.to_string(), "`t`: the MCP tool `t` of srv failed: connection closed");
        assert_eq!(withheld.stderr_tail.as_deref(), Some("key=sk-1"));
        let shown = StderrTails::InMessage.deliver(dying());
        assert_eq!(
            (shown.message.as_str(), shown.stderr_tail),
            ("`t`: the MCP tool `t` of srv failed: connection closed (its standard error ends: key=sk-1)", None)
        );
        let logged = StderrTails::Logged.deliver(dying());
        assert_eq!(
            (logged.message.as_str(), logged.stderr_tail),
            (
                "`t`: the MCP tool `t` of srv failed: connection closed (what it wrote on standard error is on the \
                 server's log)",
                None
            )
        );
        // No tail: nothing to send anywhere.
        assert_eq!(StderrTails::InMessage.deliver(ToolError::permanent("x")), ToolError::permanent("x"));
        assert_eq!(ToolError::permanent("x").with_stderr_tail("").stderr_tail, None);
    }
}
