//! A light scan of partial input: which brackets and strings are still open, and which call
//! the cursor is inside.
//!
//! The parser answers "is this a valid expression"; the line editor needs different answers
//! while the user is still typing — "should Enter continue the input?", "which function's
//! parameters may be completed here?" — about text that is usually not valid yet. This scan
//! knows only the lexical shape of the language (strings with their escapes, brackets,
//! identifiers, `=` after a keyword argument); it never reports errors, which stay the
//! parser's job.

use std::ops::Range;

/// What is open at the end of the scanned text.
#[derive(Debug, Default)]
pub(crate) struct Open {
    /// Unclosed brackets, outermost first.
    pub frames: Vec<Frame>,
    /// The byte offset of the opening quote of an unterminated string.
    pub string: Option<usize>,
    /// A closing bracket that matched nothing: the input is wrong, not unfinished.
    pub mismatched: bool,
}

/// One unclosed bracket.
#[derive(Debug)]
pub(crate) struct Frame {
    /// `(`, `[` or `{`.
    pub bracket: u8,
    /// For `(` right after an identifier: the identifier, i.e. the function being called.
    pub callee: Option<Range<usize>>,
    /// Keyword arguments already written at this level (`array` in `map(array=xs, `).
    pub keywords: Vec<Range<usize>>,
    /// How many finished arguments at this level were positional (`1` in `sort(xs, `).
    pub positional: usize,
    /// Whether the argument being written started with `name=`.
    keyword_arg: bool,
}

impl Open {
    /// Whether the text stops inside a string or a bracket, so Enter should continue it.
    pub(crate) fn is_incomplete(&self) -> bool {
        !self.mismatched && (self.string.is_some() || !self.frames.is_empty())
    }

    /// The innermost unclosed bracket when it is a call's argument list.
    pub(crate) fn call(&self) -> Option<&Frame> {
        self.frames.last().filter(|f| f.callee.is_some())
    }
}

/// Scans `src` from the start to its end.
pub(crate) fn scan(src: &str) -> Open {
    let bytes = src.as_bytes();
    let mut open = Open::default();
    // The identifier just before the current position, when nothing but spaces separate them.
    let mut prev_ident: Option<Range<usize>> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' => {
                prev_ident = None;
                match string_end(bytes, i) {
                    Some(end) => i = end,
                    None => {
                        open.string = Some(i);
                        return open;
                    }
                }
                continue;
            }
            b'(' | b'[' | b'{' => {
                let callee = if b == b'(' { prev_ident.take() } else { None };
                open.frames.push(Frame { bracket: b, callee, keywords: Vec::new(), positional: 0, keyword_arg: false });
                prev_ident = None;
            }
            b')' | b']' | b'}' => {
                let want = match b {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                match open.frames.last() {
                    Some(f) if f.bracket == want => {
                        open.frames.pop();
                    }
                    _ => open.mismatched = true,
                }
                prev_ident = None;
            }
            b'=' => {
                // `name=` (not `name==`) is a keyword argument of the enclosing call.
                if bytes.get(i + 1) != Some(&b'=') {
                    if let (Some(name), Some(frame)) = (prev_ident.take(), open.frames.last_mut()) {
                        frame.keywords.push(name);
                        frame.keyword_arg = true;
                    }
                } else {
                    i += 1;
                }
                prev_ident = None;
            }
            _ if is_ident_start(b) => {
                let start = i;
                while i < bytes.len() && is_ident_char(bytes[i]) {
                    i += 1;
                }
                prev_ident = Some(start..i);
                continue;
            }
            _ if b.is_ascii_digit() => {
                // A number, including forms such as `1e5` that contain letters.
                while i < bytes.len() && (is_ident_char(bytes[i]) || bytes[i] == b'.') {
                    i += 1;
                }
                prev_ident = None;
                continue;
            }
            b',' => {
                if let Some(frame) = open.frames.last_mut() {
                    if !frame.keyword_arg {
                        frame.positional += 1;
                    }
                    frame.keyword_arg = false;
                }
                prev_ident = None;
            }
            _ if b.is_ascii_whitespace() => {}
            _ => prev_ident = None,
        }
        i += 1;
    }
    open
}

/// The offset just past the string starting with the quote at `start`, or `None` when the
/// string is not terminated.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Whether `b` may start an identifier.
pub(crate) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// Whether `b` may continue an identifier.
pub(crate) fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `s` is an identifier (a name the grammar accepts, keywords aside).
pub(crate) fn is_ident(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_ident_start(b[0]) && b.iter().all(|&c| is_ident_char(c))
}

/// The start of the identifier (or partial identifier) that ends at `pos`.
pub(crate) fn word_start(line: &str, pos: usize) -> usize {
    let bytes = line.as_bytes();
    let mut start = pos;
    while start > 0 && is_ident_char(bytes[start - 1]) {
        start -= 1;
    }
    start
}

/// The dotted path written just before `end` (the offset of a `.`): `users.0` in
/// `users.0.na`, with whether it was a `REF:` path. `None` when what precedes the dot is not
/// a plain path (a call, an index, a literal).
pub(crate) fn path_before(line: &str, end: usize) -> Option<(Vec<&str>, bool)> {
    let bytes = line.as_bytes();
    let mut segments = Vec::new();
    let mut i = end;
    loop {
        let start = {
            let mut s = i;
            while s > 0 && (is_ident_char(bytes[s - 1]) || bytes[s - 1] == b'-') {
                s -= 1;
            }
            s
        };
        if start == i {
            return None;
        }
        segments.push(&line[start..i]);
        if start > 0 && bytes[start - 1] == b'.' {
            i = start - 1;
            continue;
        }
        segments.reverse();
        let is_ref = line[..start].ends_with("REF:");
        let first_ok = is_ref || segments.first().is_some_and(|s| is_ident(s));
        return first_ok.then_some((segments, is_ref));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callee(src: &str) -> Option<&str> {
        scan(src).call().and_then(|f| f.callee.clone()).map(|r| &src[r])
    }

    #[test]
    fn unbalanced_brackets_and_strings_are_incomplete() {
        for src in ["map(", "[1,", "{a: [", "\"abc", "'it\\'s", "f(\"(\")(", "sum(xs,\n"] {
            assert!(scan(src).is_incomplete(), "{src:?} should continue");
        }
        for src in ["1 + 2", "map(xs, \"(\")", "[1, 2]", "\"a\\\"b\"", "'['", "1)", "(]", ""] {
            assert!(!scan(src).is_incomplete(), "{src:?} should be complete");
        }
    }

    #[test]
    fn the_innermost_call_and_its_keywords() {
        assert_eq!(callee("map(array=xs, te"), Some("map"));
        assert_eq!(callee("map (xs, "), Some("map"));
        assert_eq!(callee("map(xs, {a: "), None);
        assert_eq!(callee("map(xs, sort(ys, "), Some("sort"));
        assert_eq!(callee("map(xs, sort(ys), "), Some("map"));
        assert_eq!(callee("(1 + "), None);
        assert_eq!(callee("map(xs, \"f("), Some("map"));
        assert_eq!(scan("map(xs, \"f(").string, Some(8));
        let src = "sort(array=xs, key_path=\"a\", direction == ";
        let open = scan(src);
        let kws: Vec<&str> = open.frames[0].keywords.iter().map(|r| &src[r.clone()]).collect();
        assert_eq!(kws, ["array", "key_path"]);
        assert_eq!(scan("sort(xs, key_path=\"a\", ").frames[0].positional, 1);
        assert_eq!(scan("sort(xs, [1, 2], ").frames[0].positional, 2);
    }

    #[test]
    fn paths_before_a_dot() {
        assert_eq!(path_before("users.0.", 7), Some((vec!["users", "0"], false)));
        assert_eq!(path_before("f(REF:step-1.data.", 17), Some((vec!["step-1", "data"], true)));
        assert_eq!(path_before("f(x).", 4), None);
        assert_eq!(path_before("1.", 1), None);
    }
}
