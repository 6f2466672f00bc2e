//! What one input is: an expression, or a `:command` with its arguments.
//!
//! The table of commands here is the single source for parsing, `:help` and completion.
//! Parsing only splits the line; it never evaluates anything.

use crate::diagnostic::did_you_mean;

/// A REPL command: its name (without the colon), its arguments and one line of help.
pub(crate) struct Spec {
    /// The name typed after `:`.
    pub name: &'static str,
    /// The arguments, as shown by `:help`.
    pub args: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// Every command, in the order `:help` lists them.
pub(crate) const COMMANDS: &[Spec] = &[
    Spec { name: "help", args: "[NAME]", help: "list the commands, or describe a function or command" },
    Spec { name: "vars", args: "", help: "list the variables and their types" },
    Spec { name: "let", args: "NAME = EXPR", help: "evaluate EXPR and keep the result as variable NAME" },
    Spec { name: "load", args: "NAME FILE.json", help: "read a JSON file into variable NAME" },
    Spec { name: "type", args: "EXPR", help: "print the inferred type of EXPR (without evaluating it)" },
    Spec { name: "ast", args: "EXPR", help: "print the syntax tree of EXPR, with spans" },
    Spec { name: "bytecode", args: "EXPR", help: "print the compiled bytecode of EXPR" },
    Spec { name: "time", args: "EXPR", help: "evaluate EXPR repeatedly and print the time per evaluation" },
    Spec { name: "clear", args: "[NAME...]", help: "forget the named variables, or all but those given at start" },
    Spec { name: "quit", args: "", help: "leave the REPL (Ctrl-D does too)" },
];

/// A part of the input line, with its offset so diagnostics can point into the line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Slice<'a> {
    /// The text.
    pub text: &'a str,
    /// Where it starts in the line.
    pub offset: usize,
}

/// One parsed input.
#[derive(Debug, PartialEq)]
pub(crate) enum Input<'a> {
    /// Nothing but spaces.
    Empty,
    /// An expression to evaluate.
    Expr(Slice<'a>),
    /// `:help [NAME]`
    Help(Option<&'a str>),
    /// `:vars`
    Vars,
    /// `:let NAME = EXPR`
    Let(&'a str, Slice<'a>),
    /// `:load NAME FILE.json`
    Load(&'a str, &'a str),
    /// `:type EXPR`
    Type(Slice<'a>),
    /// `:ast EXPR`
    Ast(Slice<'a>),
    /// `:bytecode EXPR`
    Bytecode(Slice<'a>),
    /// `:time EXPR`
    Time(Slice<'a>),
    /// `:clear [NAME...]`
    Clear(Vec<&'a str>),
    /// `:quit`
    Quit,
}

/// Finds the command a word names: exactly, or as the unique command it starts.
pub(crate) fn lookup(word: &str) -> Result<&'static Spec, String> {
    if let Some(spec) = COMMANDS.iter().find(|c| c.name == word) {
        return Ok(spec);
    }
    let matches: Vec<&Spec> = COMMANDS.iter().filter(|c| !word.is_empty() && c.name.starts_with(word)).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => {
            let mut msg = format!("unknown command `:{word}`");
            if let Some(s) = did_you_mean(word, COMMANDS.iter().map(|c| c.name)) {
                msg.push_str(&format!(" (did you mean `:{s}`?)"));
            } else {
                msg.push_str(" (`:help` lists the commands)");
            }
            Err(msg)
        }
        many => {
            let names: Vec<String> = many.iter().map(|c| format!("`:{}`", c.name)).collect();
            Err(format!("`:{word}` is ambiguous: {}", names.join(" or ")))
        }
    }
}

/// Where a command line's argument text starts: after the command word and its spaces.
/// `None` when `line` is not a command.
pub(crate) fn split_command(line: &str) -> Option<(&str, Slice<'_>)> {
    let start = line.len() - line.trim_start().len();
    let rest = line[start..].strip_prefix(':')?;
    let word_len = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    let word = &rest[..word_len];
    let after = &rest[word_len..];
    let args = after.trim_start();
    let offset = line.len() - args.len();
    Some((word, Slice { text: args.trim_end(), offset }))
}

/// Where the expression of `line` starts: `0` for an expression, after the command word
/// (or after `=` for `:let`) for a command that takes one, `None` for other commands.
pub(crate) fn expr_start(line: &str) -> Option<usize> {
    let Some((word, args)) = split_command(line) else { return Some(0) };
    match lookup(word).ok()?.name {
        "let" => args.text.find('=').map(|i| args.offset + i + 1),
        "type" | "ast" | "bytecode" | "time" => Some(args.offset),
        _ => None,
    }
}

/// Splits one input into an expression or a command with its arguments.
pub(crate) fn parse(line: &str) -> Result<Input<'_>, String> {
    if line.trim().is_empty() {
        return Ok(Input::Empty);
    }
    let Some((word, args)) = split_command(line) else {
        return Ok(Input::Expr(Slice { text: line, offset: 0 }));
    };
    let spec = lookup(word)?;
    let usage = || format!("usage: :{} {}", spec.name, spec.args);
    let expr = |args: Slice<'_>| if args.text.is_empty() { Err(usage()) } else { Ok(()) };
    let no_args = || if args.text.is_empty() { Ok(()) } else { Err(format!("`:{}` takes no arguments", spec.name)) };
    Ok(match spec.name {
        "help" => match args.text {
            "" => Input::Help(None),
            name if !name.contains(char::is_whitespace) => Input::Help(Some(name.trim_start_matches(':'))),
            _ => return Err(usage()),
        },
        "vars" => no_args().map(|()| Input::Vars)?,
        "let" => {
            let Some((name, _)) = args.text.split_once('=') else { return Err(usage()) };
            let eq = name.len();
            let name = name.trim();
            let text = &args.text[eq + 1..];
            let trimmed = text.trim_start();
            let value = Slice { text: trimmed, offset: args.offset + eq + 1 + (text.len() - trimmed.len()) };
            if name.is_empty() || value.text.is_empty() {
                return Err(usage());
            }
            Input::Let(name, value)
        }
        "load" => {
            let Some((name, path)) = args.text.split_once(char::is_whitespace) else { return Err(usage()) };
            Input::Load(name, path.trim())
        }
        "type" => expr(args).map(|()| Input::Type(args))?,
        "ast" => expr(args).map(|()| Input::Ast(args))?,
        "bytecode" => expr(args).map(|()| Input::Bytecode(args))?,
        "time" => expr(args).map(|()| Input::Time(args))?,
        "clear" => Input::Clear(args.text.split_whitespace().collect()),
        "quit" => no_args().map(|()| Input::Quit)?,
        other => unreachable!("command `{other}` is in the table but not parsed"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_and_commands() {
        assert_eq!(parse("  "), Ok(Input::Empty));
        assert_eq!(parse("1 + 2"), Ok(Input::Expr(Slice { text: "1 + 2", offset: 0 })));
        assert_eq!(parse(":q"), Ok(Input::Quit));
        assert_eq!(parse(":help map"), Ok(Input::Help(Some("map"))));
        assert_eq!(parse(":help :let"), Ok(Input::Help(Some("let"))));
        assert_eq!(parse(":let x =  1 + 2 "), Ok(Input::Let("x", Slice { text: "1 + 2", offset: 10 })));
        assert_eq!(parse(" :type  [1]"), Ok(Input::Type(Slice { text: "[1]", offset: 8 })));
        assert_eq!(parse(":load users data/u s.json"), Ok(Input::Load("users", "data/u s.json")));
        assert_eq!(parse(":clear a b"), Ok(Input::Clear(vec!["a", "b"])));
    }

    #[test]
    fn mistakes_are_explained() {
        assert_eq!(parse(":lte x = 1"), Err("unknown command `:lte` (did you mean `:let`?)".into()));
        assert_eq!(parse(":t 1"), Err("`:t` is ambiguous: `:type` or `:time`".into()));
        assert_eq!(parse(":let x"), Err("usage: :let NAME = EXPR".into()));
        assert_eq!(parse(":type"), Err("usage: :type EXPR".into()));
        assert_eq!(parse(":vars x"), Err("`:vars` takes no arguments".into()));
    }

    #[test]
    fn every_command_parses() {
        for spec in COMMANDS {
            let args = match spec.name {
                "let" => "x = 1",
                "load" => "x f.json",
                _ if spec.args.contains("EXPR") => "1",
                _ => "",
            };
            assert!(parse(&format!(":{} {args}", spec.name)).is_ok(), ":{}", spec.name);
        }
    }
}
