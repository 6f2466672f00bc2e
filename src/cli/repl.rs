//! `tdsl repl [--vars FILE.json] [--var NAME=JSON]... [--now TIME]`
//!
//! Two front ends over one [`Session`]: on a terminal, a line editor (rustyline) with
//! history, completion, hints and multi-line input, printing indented coloured JSON; when
//! standard input is not a terminal, a script reader that takes one input per line and
//! prints each value on one line, so sessions can be scripted and tested.
//!
//! Module map: `command` splits an input into an expression or a `:command`; `session`
//! runs it against the variables; `json` lays values out; `scan` reads the lexical shape of
//! partial input; `helper` answers the line editor (completion, hints, Enter).

mod command;
mod helper;
mod json;
mod scan;
mod session;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Cmd, CompletionType, Config, Editor, KeyCode, KeyEvent, Modifiers};

use self::helper::ReplHelper;
use self::json::Layout;
use self::session::{Output, Session, Step};
use super::eval::load_vars;
use super::{color_stderr, fixed_clock, usage_failure, StdoutGuard, UsageError};
use crate::engine::Engine;

/// The end of `tdsl repl --help`.
pub(crate) const AFTER_HELP: &str = "\
On a terminal: `:help` lists the commands; Tab completes; Ctrl-R searches the history, which is kept in
$TDSL_HISTORY (empty: nowhere), else $XDG_DATA_HOME/tdsl/history, else ~/.local/share/tdsl/history.
Otherwise standard input is a script: one input per line, one compact JSON value per line out.
See docs/repl.md.";

/// The prompt.
const PROMPT: &str = "tdsl> ";

/// How many inputs the history keeps.
const HISTORY_SIZE: usize = 10_000;

/// Arguments of `tdsl repl`.
#[derive(Debug, Args)]
pub(crate) struct ReplArgs {
    /// A JSON object whose keys become variables (and REF contexts).
    #[arg(long, value_name = "FILE.json")]
    vars: Option<PathBuf>,
    /// One variable as NAME=JSON (repeatable; wins over --vars).
    #[arg(long = "var", value_name = "NAME=JSON")]
    var: Vec<String>,
    /// Fix the clock `datetime_now` reads (RFC 3339, e.g. 2026-01-01T00:00:00Z).
    #[arg(long, value_name = "TIME")]
    now: Option<String>,
    /// Serve the files under DIR to the file functions (`read_file`, `list_files`, …);
    /// without it they fail with "no file store configured".
    #[arg(long, value_name = "DIR")]
    files: Option<PathBuf>,
}

/// Runs `tdsl repl`.
pub(crate) fn run(args: ReplArgs) -> ExitCode {
    let vars = match load_vars(args.vars.as_deref(), &args.var) {
        Ok(v) => v,
        Err(e) => return usage_failure(&e),
    };
    let mut engine = Engine::new();
    if let Some(now) = &args.now {
        match fixed_clock(now) {
            Ok(clock) => engine = engine.with_clock(clock),
            Err(e) => return usage_failure(&e),
        }
    }
    if let Some(dir) = &args.files {
        match super::open_files(dir) {
            Ok(store) => engine = engine.with_file_store(store),
            Err(e) => return usage_failure(&e),
        }
    }
    let session = Session::new(engine, vars);
    if std::io::stdin().is_terminal() {
        interactive(session)
    } else {
        scripted(session)
    }
}

/// Whether values on standard output are coloured.
fn color_stdout() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}

/// One input per line of standard input, one compact value per line of output. Exits 1
/// when any input failed, so a script can tell.
fn scripted(mut session: Session) -> ExitCode {
    let (mut stdout, mut stderr) = (StdoutGuard::new(std::io::stdout().lock()), std::io::stderr());
    let layout = Layout { pretty: false, color: color_stdout() };
    let mut failed = false;
    for line in std::io::stdin().lock().lines() {
        // A closed standard output ends the script quietly; a full one is an error.
        if let Err(code) = stdout.check() {
            return code;
        }
        if stdout.closed() {
            break;
        }
        let mut out = Output { out: &mut stdout, err: &mut stderr, layout, color_err: color_stderr() };
        let line = match line {
            Ok(l) => l,
            Err(e) => return usage_failure(&UsageError(format!("cannot read standard input: {e}"))),
        };
        match session.run(&line, &mut out) {
            Step::Done => {}
            Step::Failed => failed = true,
            Step::Quit => break,
        }
    }
    if let Err(code) = stdout.check() {
        return code;
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The line editor.
fn interactive(mut session: Session) -> ExitCode {
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .history_ignore_space(true)
        .max_history_size(HISTORY_SIZE)
        .and_then(|c| c.history_ignore_dups(true))
        .map(|c| c.build());
    let mut editor: Editor<ReplHelper, FileHistory> = match config.and_then(Editor::with_config) {
        Ok(e) => e,
        Err(e) => return usage_failure(&UsageError(format!("cannot start the line editor: {e}"))),
    };
    let functions = session.engine().functions().iter().map(|f| f.signature.clone()).collect();
    editor.set_helper(Some(ReplHelper::new(functions, session.vars().clone())));
    // Alt-Enter starts a new line even when the input is complete.
    editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);

    let history = history_path();
    if let Some(path) = &history {
        // A missing file is the first run; anything else is worth a word.
        if path.exists() {
            if let Err(e) = editor.load_history(path) {
                eprintln!("warning: cannot read the history {}: {e}", path.display());
            }
        }
    }
    let (mut stdout, mut stderr) = (StdoutGuard::new(std::io::stdout()), std::io::stderr());
    let _ = writeln!(stdout, "tdsl {} — `:help` lists the commands, Ctrl-D quits", env!("CARGO_PKG_VERSION"));
    let layout = Layout { pretty: true, color: color_stdout() };
    let mut out = Output { out: &mut stdout, err: &mut stderr, layout, color_err: color_stderr() };
    let mut history_warned = false;
    loop {
        let line = match editor.readline(PROMPT) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: cannot read the input: {e}");
                return ExitCode::from(2);
            }
        };
        if !line.trim().is_empty() {
            let _ = editor.add_history_entry(line.as_str());
            if let Some(path) = &history {
                // Saved after every input, so a session that is killed keeps its history.
                if let Err(e) = save_history(&mut editor, path) {
                    if !history_warned {
                        eprintln!("warning: cannot save the history to {}: {e}", path.display());
                        history_warned = true;
                    }
                }
            }
        }
        if session.run(&line, &mut out) == Step::Quit {
            break;
        }
        if let Some(h) = editor.helper_mut() {
            h.set_vars(session.vars().clone());
        }
    }
    let _ = out.out.flush();
    match stdout.check() {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

fn save_history(editor: &mut Editor<ReplHelper, FileHistory>, path: &std::path::Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    editor.append_history(path).map_err(|e| e.to_string())
}

/// Where the history is kept: `$TDSL_HISTORY` (empty: nowhere), else
/// `$XDG_DATA_HOME/tdsl/history`, else `~/.local/share/tdsl/history`.
fn history_path() -> Option<PathBuf> {
    history_path_from(|name| std::env::var_os(name))
}

fn history_path_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(path) = env("TDSL_HISTORY") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let data = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local").join("share")))?;
    Some(data.join("tdsl").join("history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_with(vars: &[(&str, &str)]) -> Option<PathBuf> {
        history_path_from(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).into()))
    }

    #[test]
    fn the_history_lives_in_the_data_directory() {
        assert_eq!(path_with(&[("HOME", "/home/u")]), Some("/home/u/.local/share/tdsl/history".into()));
        let xdg = [("HOME", "/home/u"), ("XDG_DATA_HOME", "/data")];
        assert_eq!(path_with(&xdg), Some("/data/tdsl/history".into()));
        // The XDG spec says relative paths are to be ignored.
        let relative = [("HOME", "/home/u"), ("XDG_DATA_HOME", "data")];
        assert_eq!(path_with(&relative), Some("/home/u/.local/share/tdsl/history".into()));
        assert_eq!(path_with(&[("TDSL_HISTORY", "/tmp/h"), ("HOME", "/home/u")]), Some("/tmp/h".into()));
        assert_eq!(path_with(&[("TDSL_HISTORY", ""), ("HOME", "/home/u")]), None);
        assert_eq!(path_with(&[]), None);
    }
}
