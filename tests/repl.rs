//! `tdsl repl`, tested by running the real binary.
//!
//! - Transcripts: each `tests/data/repl/*.txt` is a session, one input per line, fed
//!   through standard input (so the REPL runs in its scripted mode). Leading
//!   `# args: …` lines give the command-line arguments; they run with
//!   `tests/data/repl/` as the working directory, so `:load x files/x.json` finds the
//!   test's data. The snapshot is the transcript: each input after `> `, then what it
//!   printed on standard output and standard error, in order, then the exit status.
//!   Regenerate with `cargo insta test --accept --test repl` and review the diff.
//! - The scripted contract: values alone on standard output, one per line.
//! - The terminal mode, driven through a pseudo-terminal: multi-line input, completion,
//!   hints and the history file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A string expression the harness puts after every input: its value, printed alone on a
/// line, marks where that input's output ends. It changes no state.
fn marker(i: usize) -> String {
    format!("\"--- end of input {i} ---\"")
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("data").join("repl")
}

struct Run {
    /// Standard output and standard error, interleaved as written.
    output: String,
    code: i32,
}

/// Runs `tdsl repl ARGS` with `input` on standard input and both output streams on one
/// pipe, so the order of values and diagnostics is kept.
fn run_repl(args: &[String], input: String) -> Run {
    let (mut reader, writer) = std::io::pipe().expect("a pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .arg("repl")
        .args(args)
        .current_dir(data_dir())
        .env("NO_COLOR", "1")
        .env("TDSL_HISTORY", "")
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().expect("a second writer"))
        .stderr(writer)
        .spawn()
        .expect("tdsl runs");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // Written from another thread: the REPL's output fills the pipe while input remains.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut output = String::new();
    reader.read_to_string(&mut output).expect("the output is UTF-8");
    feeder.join().expect("the input is written");
    let code = child.wait().expect("tdsl exits").code().unwrap_or(-1);
    Run { output, code }
}

/// The lines of a transcript file: the arguments, and the inputs.
fn parse_transcript(text: &str) -> (Vec<String>, Vec<&str>) {
    let mut args = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(a) = lines.peek().and_then(|l| l.strip_prefix("# args:")) {
        args.extend(split_args(a));
        lines.next();
    }
    (args, lines.collect())
}

/// Splits arguments at spaces, keeping single-quoted parts together (as a shell would).
fn split_args(s: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        args.push(current);
    }
    args
}

/// `:time` prints durations that change from run to run; its shape is checked and the
/// numbers replaced.
fn redact_timing(line: &str) -> String {
    let Some((each, rest)) = line.split_once(" per evaluation (") else { return line.to_string() };
    let Some((runs, total)) = rest.strip_suffix(')').and_then(|r| r.split_once(" runs in ")) else {
        panic!("malformed :time output: {line}")
    };
    assert!(is_duration(each) && is_duration(total), "malformed durations in {line}");
    assert!(runs.parse::<u64>().is_ok_and(|n| n >= 1), "malformed run count in {line}");
    "<duration> per evaluation (<n> runs in <duration>)".to_string()
}

fn is_duration(s: &str) -> bool {
    let Some((number, unit)) = s.split_once(' ') else { return false };
    number.parse::<f64>().is_ok() && ["ns", "µs", "ms", "s"].contains(&unit)
}

/// Runs a transcript and renders it: each input, then its output.
fn transcript(text: &str) -> String {
    let (args, inputs) = parse_transcript(text);
    let mut script = String::new();
    for (i, input) in inputs.iter().enumerate() {
        script.push_str(input);
        script.push('\n');
        script.push_str(&marker(i));
        script.push('\n');
    }
    let run = run_repl(&args, script);
    let mut rest = run.output.as_str();
    let mut out = String::new();
    if !args.is_empty() {
        out.push_str(&format!("$ tdsl repl {}\n", args.join(" ")));
    }
    for (i, input) in inputs.iter().enumerate() {
        out.push_str(&format!("> {input}\n"));
        let end = format!("{}\n", marker(i));
        let Some(at) = rest.find(&end) else {
            // The session ended here (`:quit`): what is left is this input's output.
            out.push_str(rest);
            rest = "";
            break;
        };
        for line in rest[..at].lines() {
            out.push_str(&redact_timing(line));
            out.push('\n');
        }
        rest = &rest[at + end.len()..];
    }
    assert!(rest.is_empty(), "output after the last input: {rest}");
    out.push_str(&format!("[exit status {}]\n", run.code));
    out
}

#[test]
fn transcripts() {
    insta::glob!("data/repl/*.txt", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        insta::assert_snapshot!(transcript(&text));
    });
}

#[test]
fn a_script_gets_one_value_per_line_on_standard_output() {
    let out = Command::new(env!("CARGO_BIN_EXE_tdsl"))
        .args(["repl", "--var", "xs=[1, 2]"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let script = ":let ys = map(xs, \"item * 10\")\n\n{total: sum(ys)}\nsum(zs)\n[1,\nys\n";
            child.stdin.take().expect("stdin").write_all(script.as_bytes())?;
            child.wait_with_output()
        })
        .expect("tdsl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "[10,20]\n{\"total\":30}\n[10,20]\n", "stderr: {stderr}");
    // Errors go to standard error, and an unclosed bracket does not swallow the next line.
    assert!(stderr.contains("E0101") && stderr.contains("E0001"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "a failed input makes the exit status 1");
}

#[test]
fn a_clean_script_exits_0() {
    let run = run_repl(&[], ":let a = 1\na + 1\n:quit\nthis is never read(\n".into());
    assert_eq!(run.output, "1\n2\n");
    assert_eq!(run.code, 0);
}

#[test]
fn bad_arguments_exit_2() {
    let run = run_repl(&["--var".into(), "x".into()], String::new());
    assert_eq!(run.code, 2, "{}", run.output);
    assert!(run.output.contains("must be NAME=JSON"), "{}", run.output);
    let run = run_repl(&["--now".into(), "yesterday".into()], String::new());
    assert_eq!(run.code, 2, "{}", run.output);
}

#[test]
fn the_harness_redacts_only_timings() {
    assert_eq!(
        redact_timing("1.25 µs per evaluation (160000 runs in 200 ms)"),
        "<duration> per evaluation (<n> runs in <duration>)"
    );
    assert_eq!(redact_timing("[1,2]"), "[1,2]");
    assert!(std::panic::catch_unwind(|| redact_timing("fast per evaluation (many runs in no time)")).is_err());
}

/// The terminal mode, through a pseudo-terminal: what a person at a keyboard gets.
#[cfg(unix)]
mod terminal {
    use std::path::Path;
    use std::process::Command;

    use rexpect::session::{spawn_command, PtySession};

    /// How long to wait for each expected output.
    const TIMEOUT_MS: u64 = 15_000;

    const PROMPT: &str = "tdsl> ";

    fn start(history: &Path) -> PtySession {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdsl"));
        cmd.args(["repl", "--var", r#"users=[{"name": "Ada", "team": "red"}, {"name": "Bob", "team": "blue"}]"#])
            .env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .env("TDSL_HISTORY", history);
        let mut p = spawn_command(cmd, Some(TIMEOUT_MS)).expect("tdsl starts in a pseudo-terminal");
        p.exp_string(PROMPT).expect("a prompt");
        p
    }

    /// Sends keys and waits until `expected` is printed; returns what came before it. Keys
    /// typed after an input is accepted and before the next prompt may be lost (as they can
    /// be in any line editor), so a test waits for the prompt between inputs.
    fn keys(p: &mut PtySession, keys: &str, expected: &str) -> String {
        p.send(keys).expect("keys are sent");
        p.flush().expect("keys are flushed");
        p.exp_string(expected).unwrap_or_else(|e| panic!("after {keys:?}, expected {expected:?}: {e}"))
    }

    /// Sends an input and waits for `value` on a line of its own, then for the next prompt;
    /// returns what was printed before the value.
    fn input(p: &mut PtySession, text: &str, value: &str) -> String {
        let before = keys(p, text, &format!("\n{value}\r\n"));
        p.exp_string(PROMPT).unwrap_or_else(|e| panic!("no prompt after {text:?}: {e}"));
        before
    }

    #[test]
    fn multi_line_input_completion_hints_and_history() {
        let dir = std::env::temp_dir().join(format!("tdsl-repl-pty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // The history's directory does not exist yet: the REPL makes it.
        let history = dir.join("data").join("history");
        let mut p = start(&history);

        // An unclosed bracket continues the input on the next line instead of failing; had
        // Enter ended the input, the first line would fail alone and 42 would never come.
        let before = input(&mut p, "sum([40,\r2])\r", "42");
        assert!(!before.contains("E0001"), "{before}");
        // An unterminated string continues too.
        input(&mut p, "\"two\rlines\"\r", "\"two\\nlines\"");

        // Tab completes a function name, then a keyword parameter of that function.
        keys(&mut p, "grou\t", "group_by(");
        // Inside the call, the hint shows the rest of the signature.
        keys(&mut p, "users, ", "key_path)");
        keys(&mut p, "key_pa\t", "key_path=");
        let out = keys(&mut p, "\"team\")\r", "\"blue\": [");
        assert!(out.contains("\"red\": ["), "the value is printed as indented JSON: {out}");
        p.exp_string(PROMPT).expect("a prompt");

        // Commands and variables complete as well.
        keys(&mut p, ":le\t", ":let ");
        keys(&mut p, "n = length(us\t", "users");
        input(&mut p, ")\r", "2");
        input(&mut p, "n * 21\r", "42");

        // Ctrl-C abandons the input being typed, not the session.
        keys(&mut p, "map(", "array, template)");
        p.send_control('c').expect("Ctrl-C");
        p.exp_string(PROMPT).expect("a prompt after Ctrl-C");
        keys(&mut p, ":quit\r", ":quit");
        p.exp_eof().expect("the REPL exits");

        let saved = std::fs::read_to_string(&history).expect("the history is saved");
        assert!(saved.contains("group_by(users, key_path=\"team\")"), "{saved}");
        assert!(saved.contains("sum([40,"), "{saved}");

        // The next session reads it back, and Ctrl-R searches it: the two-line input runs again.
        let mut p = start(&history);
        p.send_control('r').expect("Ctrl-R");
        keys(&mut p, "sum([", "sum([");
        input(&mut p, "\r", "42");
        p.send_control('d').expect("Ctrl-D");
        p.exp_eof().expect("Ctrl-D quits");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The ```` ```transcript ```` blocks of `docs/repl.md` are what the REPL prints.
#[test]
fn the_transcripts_in_the_docs_are_true() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join("repl.md");
    let doc = std::fs::read_to_string(&path).expect("docs/repl.md is readable");
    let mut blocks = 0;
    let mut rest = doc.as_str();
    while let Some(start) = rest.find("```transcript\n") {
        let body = &rest[start + "```transcript\n".len()..];
        let end = body.find("```\n").expect("the block is closed");
        let block = &body[..end];
        let inputs: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("> ")).collect();
        let got = transcript(&inputs.join("\n"));
        let got = got.rsplit_once("[exit status").map_or(got.as_str(), |(t, _)| t);
        assert_eq!(got, block, "a transcript in docs/repl.md differs from what the REPL prints");
        blocks += 1;
        rest = &body[end..];
    }
    assert!(blocks > 0, "docs/repl.md has no transcript block");
}
