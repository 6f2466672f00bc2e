//! Text from tools and data, made safe to print for people: a tool's error message or a
//! recorded reason may hold terminal escape sequences (`ESC [31m`, a BEL, an OSC that sets
//! the window title or writes the clipboard). Every place that prints such text on a
//! terminal (`run`'s error lines, `history list|show|stats`, the progress lines) passes it
//! through [`printable`] first.

use std::borrow::Cow;

/// `text` with every control character but newline and tab shown escaped: the C0 controls
/// and DEL as `\x1b`, the C1 controls (U+0080–U+009F) as `\u{9b}`. Other text, and text
/// that needs nothing, is returned as it is.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn controls_are_escaped_but_newline_and_tab_kept() {
        assert_eq!(printable("plain\ttext\nline"), "plain\ttext\nline");
        assert_eq!(printable("\u{1b}[31mred\u{7}\r"), "\\x1b[31mred\\x07\\x0d");
        assert_eq!(printable("del\u{7f} csi\u{9b}2J é"), "del\\x7f csi\\u{9b}2J é");
    }
}
