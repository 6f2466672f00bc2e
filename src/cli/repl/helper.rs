//! What the line editor asks while the user types: completions, hints, whether Enter ends
//! the input, and highlighting.
//!
//! Everything here works on partial input through [`scan`](super::scan), and knows the
//! session only through a snapshot of its variables and the function signatures, refreshed
//! after every input. It never evaluates anything.

use std::borrow::Cow;

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter, MatchingBracketHighlighter};
use rustyline::hint::{Hint, Hinter};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use super::command::{self, COMMANDS};
use super::scan::{is_ident, path_before, scan, word_start, Open};
use crate::functions::Signature;
use crate::types::signature::ELEMENT_NAME;
use crate::value::Value;

/// The line editor's helper.
pub(crate) struct ReplHelper {
    functions: Vec<Signature>,
    /// The session's variables (an object), as of the last input.
    vars: Value,
    files: FilenameCompleter,
    brackets: MatchingBracketHighlighter,
}

impl ReplHelper {
    /// A helper that knows these functions and variables.
    pub(crate) fn new(mut functions: Vec<Signature>, vars: Value) -> ReplHelper {
        // Sorted, so a list of candidates reads alphabetically.
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        ReplHelper { functions, vars, files: FilenameCompleter::new(), brackets: MatchingBracketHighlighter::new() }
    }

    /// Takes the variables as they are after an input.
    pub(crate) fn set_vars(&mut self, vars: Value) {
        self.vars = vars;
    }

    fn function(&self, name: &str) -> Option<&Signature> {
        self.functions.iter().find(|s| &*s.name == name)
    }

    fn var_names(&self) -> impl Iterator<Item = &str> {
        self.vars.as_object().into_iter().flat_map(|m| m.keys().map(|k| &**k))
    }

    /// The completions at `pos`: where the replaced text starts, and the candidates.
    pub(crate) fn completions(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        if let Some((word, args)) = command::split_command(line) {
            let word_end = args.offset - (line[..args.offset].len() - line[..args.offset].trim_end().len());
            if pos <= word_end {
                let start = line[..pos].rfind(':').map_or(0, |i| i + 1);
                let typed = &line[start..pos];
                let found = COMMANDS.iter().filter(|c| c.name.starts_with(typed));
                return (start, found.map(|c| pair(format!(":{}", c.name), format!("{} ", c.name))).collect());
            }
            match command::lookup(word).map(|c| c.name) {
                Ok("help") => {
                    let start = word_start(line, pos);
                    let names = self.functions.iter().map(|s| &*s.name).chain(COMMANDS.iter().map(|c| c.name));
                    return (start, matching(&line[start..pos], names.map(|n| (n.to_string(), n.to_string()))));
                }
                Ok("load") if line[args.offset..pos].contains(char::is_whitespace) => {
                    return self.files.complete_path(line, pos).unwrap_or((pos, Vec::new()));
                }
                Ok("clear") => {
                    let start = word_start(line, pos);
                    let names = self.var_names().map(|n| (n.to_string(), n.to_string()));
                    return (start, matching(&line[start..pos], names));
                }
                _ => {}
            }
        }
        match command::expr_start(line) {
            Some(expr) if expr <= pos => self.expr_completions(line, expr, pos),
            _ => (pos, Vec::new()),
        }
    }

    /// Completions inside an expression that starts at `expr`.
    fn expr_completions(&self, line: &str, expr: usize, pos: usize) -> (usize, Vec<Pair>) {
        let open = scan(&line[expr..pos]);
        let start = word_start(line, pos).max(expr);
        let word = &line[start..pos];
        if open.string.is_some() || word.starts_with(|c: char| c.is_ascii_digit()) {
            return (pos, Vec::new());
        }
        let before = &line[expr..start];
        if before.ends_with('.') {
            return (start, self.field_completions(line, start - 1, word));
        }
        if before.ends_with("REF:") {
            return (start, matching(word, self.var_names().map(|n| (n.to_string(), n.to_string()))));
        }
        let mut found = Vec::new();
        if let Some(sig) = self.callee(&line[expr..pos], &open) {
            let given = given_keywords(&line[expr..pos], &open);
            let params = sig.params.iter().filter(|p| !given.contains(&&*p.name));
            // A call that takes a template also takes `as=` (SPEC §4.4), after its parameters.
            let element_name = (sig.takes_element_name() && !given.contains(&ELEMENT_NAME)).then_some(ELEMENT_NAME);
            let names = params.map(|p| &*p.name).chain(element_name);
            found.extend(matching(word, names.map(|n| (format!("{n}="), format!("{n}=")))));
        }
        found.extend(matching(word, self.functions.iter().map(|s| (format!("{}(", s.name), format!("{}(", s.name)))));
        found.extend(matching(word, self.var_names().map(|n| (n.to_string(), n.to_string()))));
        (start, found)
    }

    /// Keys of the object a dotted path before the dot at `dot` leads to.
    fn field_completions(&self, line: &str, dot: usize, word: &str) -> Vec<Pair> {
        let Some((segments, _)) = path_before(line, dot) else { return Vec::new() };
        let Some((root, rest)) = segments.split_first() else { return Vec::new() };
        let Some(mut v) = self.vars.as_object().and_then(|m| m.get(*root)).cloned() else { return Vec::new() };
        for seg in rest {
            match v.segment(seg) {
                Ok(next) => v = next,
                Err(_) => return Vec::new(),
            }
        }
        let Some(map) = v.as_object() else { return Vec::new() };
        matching(word, map.keys().filter(|k| is_ident(k)).map(|k| (k.to_string(), k.to_string())))
    }

    /// The signature of the function whose argument list `text` ends in.
    fn callee(&self, text: &str, open: &Open) -> Option<&Signature> {
        let range = open.call()?.callee.clone()?;
        self.function(&text[range])
    }

    /// The hint at the end of `line`: the rest of the only completion, or else the rest of
    /// the signature of the call the cursor is in.
    pub(crate) fn hint_at(&self, line: &str, pos: usize) -> Option<CommandHint> {
        if pos < line.len() {
            return None;
        }
        let (start, candidates) = self.completions(line, pos);
        if let [only] = candidates.as_slice() {
            let typed = &line[start..pos];
            if !typed.is_empty() && only.replacement.len() > typed.len() && only.replacement.starts_with(typed) {
                let rest = only.replacement[typed.len()..].trim_end().to_string();
                return Some(CommandHint { display: rest.clone(), completion: Some(rest) });
            }
        }
        if let Some((word, args)) = command::split_command(line) {
            if args.text.is_empty() && line.ends_with(' ') {
                let spec = command::lookup(word).ok()?;
                return (!spec.args.is_empty()).then(|| CommandHint { display: spec.args.into(), completion: None });
            }
        }
        let expr = command::expr_start(line)?;
        let text = &line[expr..];
        let open = scan(text);
        if word_start(line, pos) < pos || open.string.is_some() {
            return None;
        }
        let sig = self.callee(text, &open)?;
        let frame = open.call()?;
        let before = text.trim_end();
        if before.ends_with('=') {
            // Right after `name=`: the choices, when the parameter is an enumeration.
            let kw = frame.keywords.last().map(|r| &text[r.clone()])?;
            let param = sig.params.iter().find(|p| &*p.name == kw)?;
            let choices: Vec<String> = param.one_of.iter().map(|c| format!("\"{c}\"")).collect();
            return (!choices.is_empty()).then(|| CommandHint { display: choices.join(" | "), completion: None });
        }
        if !before.ends_with(['(', ',']) {
            return None;
        }
        let given = given_keywords(text, &open);
        let rest: Vec<String> = sig
            .params
            .iter()
            .skip(frame.positional)
            .filter(|p| !given.contains(&&*p.name))
            .map(|p| if p.is_required() { p.name.to_string() } else { format!("{}=…", p.name) })
            .collect();
        let mut display = rest.join(", ");
        if sig.any_keywords {
            display.push_str(if rest.is_empty() { "**kwargs" } else { ", **kwargs" });
        }
        display.push(')');
        Some(CommandHint { display, completion: None })
    }
}

/// The keyword arguments already given in the innermost call of `text`.
fn given_keywords<'t>(text: &'t str, open: &Open) -> Vec<&'t str> {
    open.call().map(|f| f.keywords.iter().map(|r| &text[r.clone()]).collect()).unwrap_or_default()
}

/// The candidates whose replacement starts with `word`, shown as `display`.
fn matching(word: &str, candidates: impl Iterator<Item = (String, String)>) -> Vec<Pair> {
    candidates.filter(|(_, replacement)| replacement.starts_with(word)).map(|(d, r)| pair(d, r)).collect()
}

fn pair(display: String, replacement: String) -> Pair {
    Pair { display, replacement }
}

/// A hint: what is shown dimmed after the cursor, and what the right arrow inserts.
pub(crate) struct CommandHint {
    display: String,
    completion: Option<String>,
}

impl Hint for CommandHint {
    fn display(&self) -> &str {
        &self.display
    }

    fn completion(&self) -> Option<&str> {
        self.completion.as_deref()
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(self.completions(line, pos))
    }
}

impl Hinter for ReplHelper {
    type Hint = CommandHint;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<CommandHint> {
        self.hint_at(line, pos)
    }
}

impl Validator for ReplHelper {
    /// Enter continues the input while a bracket or a string of the expression is open.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        let open = command::expr_start(input).is_some_and(|start| scan(&input[start..]).is_incomplete());
        Ok(if open { ValidationResult::Incomplete } else { ValidationResult::Valid(None) })
    }
}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, pos: usize) -> Cow<'l, str> {
        self.brackets.highlight(line, pos)
    }

    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, default: bool) -> Cow<'b, str> {
        if default {
            Cow::Owned(format!("\x1b[1;32m{prompt}\x1b[0m"))
        } else {
            Cow::Borrowed(prompt)
        }
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }

    fn highlight_char(&self, line: &str, pos: usize, kind: CmdKind) -> bool {
        self.brackets.highlight_char(line, pos, kind)
    }
}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    fn helper() -> ReplHelper {
        let functions = Engine::new().functions().iter().map(|f| f.signature.clone()).collect();
        let vars = serde_json::from_str(r#"{"users": [{"name": "a", "profile": {"age": 3}}], "user_count": 1}"#)
            .expect("vars are JSON");
        ReplHelper::new(functions, vars)
    }

    fn complete(line: &str) -> Vec<String> {
        let (start, found) = helper().completions(line, line.len());
        found.into_iter().map(|p| format!("{}{}", &line[..start], p.replacement)).collect()
    }

    fn hint(line: &str) -> Option<String> {
        helper().hint_at(line, line.len()).map(|h| h.display)
    }

    #[test]
    fn completes_functions_variables_and_parameters() {
        assert_eq!(complete("grou"), ["group_by("]);
        assert_eq!(complete("map(us"), ["map(users", "map(user_count"]);
        assert_eq!(complete("sort(xs, di"), ["sort(xs, direction="]);
        assert_eq!(complete("sort(xs, direction=\"asc\", di"), Vec::<String>::new());
        assert_eq!(complete("map(array=users, te"), ["map(array=users, template="]);
        assert_eq!(
            complete("map(array=users, a"),
            ["map(array=users, as=", "map(array=users, all(", "map(array=users, any(", "map(array=users, avg("]
        );
        assert_eq!(complete("users.0.pro"), ["users.0.profile"]);
        assert_eq!(complete("REF:user_"), ["REF:user_count"]);
        assert!(complete("\"gro").is_empty());
        // `as=` in a call that takes a template (and not twice, nor in one that takes none).
        assert_eq!(complete("map(array=users, as"), ["map(array=users, as="]);
        assert_eq!(complete("map(users, as=\"u\", template=u, as"), Vec::<String>::new());
        assert_eq!(complete("length(users, as"), Vec::<String>::new());
    }

    #[test]
    fn completes_commands_and_their_arguments() {
        assert_eq!(complete(":ty"), [":type "]);
        assert_eq!(complete(":type grou"), [":type group_by("]);
        assert_eq!(complete(":let x = user_c"), [":let x = user_count"]);
        assert_eq!(complete(":help group"), [":help group_by"]);
        assert_eq!(complete(":clear us"), [":clear users", ":clear user_count"]);
        assert!(complete(":let us").is_empty());
        // Tests run in the crate's directory.
        assert_eq!(complete(":load cfg Cargo.to"), [":load cfg Cargo.toml"]);
    }

    #[test]
    fn hints_finish_words_and_show_the_rest_of_a_signature() {
        assert_eq!(hint("grou").as_deref(), Some("p_by("));
        assert_eq!(hint("map(").as_deref(), Some("array, template)"));
        assert_eq!(hint("sort(users, ").as_deref(), Some("key_path=…, direction=…)"));
        assert_eq!(hint("sort(users, direction=").as_deref(), Some("\"asc\" | \"desc\""));
        assert_eq!(hint(":let ").as_deref(), Some("NAME = EXPR"));
        assert_eq!(hint("map(users, \"").as_deref(), None);
        assert_eq!(hint("1 + ").as_deref(), None);
    }
}
