//! An open document's text and the conversions between byte offsets (what spans hold) and
//! LSP positions (0-based lines, columns in the negotiated encoding: UTF-16 code units by
//! default, UTF-8 bytes when the client offers it).

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

use crate::span::Span;

/// How an LSP position counts columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-16 code units (the protocol's default).
    Utf16,
    /// UTF-8 bytes (negotiated through `general.positionEncodings`).
    Utf8,
}

/// A document's text with its line starts.
#[derive(Clone, Debug)]
pub(crate) struct Text {
    text: String,
    /// Byte offset where each line starts; the first is 0.
    starts: Vec<usize>,
}

impl Text {
    /// Indexes `text`.
    pub(crate) fn new(text: String) -> Text {
        let starts = line_starts(&text);
        Text { text, starts }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The LSP position of byte `offset` (clamped to the text, moved back to a character
    /// boundary).
    pub(crate) fn position(&self, offset: u32, enc: Encoding) -> Position {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let piece = &self.text[start..offset];
        let character = match enc {
            Encoding::Utf8 => piece.len(),
            Encoding::Utf16 => piece.chars().map(char::len_utf16).sum(),
        };
        Position { line: to_u32(line), character: to_u32(character) }
    }

    /// The LSP range of a span.
    pub(crate) fn range(&self, span: Span, enc: Encoding) -> Range {
        Range { start: self.position(span.start, enc), end: self.position(span.end.max(span.start), enc) }
    }

    /// The byte offset of an LSP position. A line past the end is the end of the text; a
    /// column past the end of its line is the end of the line (the protocol asks servers
    /// to be lenient); a column inside a character is that character's start.
    pub(crate) fn offset(&self, pos: Position, enc: Encoding) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else { return self.text.len() };
        let end = self.starts.get(pos.line as usize + 1).map_or(self.text.len(), |&e| e);
        // The line without its end (`\n`, `\r\n` or `\r`): a column past the end is
        // before it, never between a `\r` and its `\n`.
        let line = &self.text[start..end.max(start)];
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let want = pos.character as usize;
        let mut units = 0usize;
        for (i, c) in line.char_indices() {
            if units >= want {
                return start + i;
            }
            units += match enc {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
            if units > want {
                return start + i;
            }
        }
        start + line.len()
    }

    /// The span between two LSP positions.
    pub(crate) fn span(&self, range: Range, enc: Encoding) -> Span {
        let a = self.offset(range.start, enc);
        let b = self.offset(range.end, enc);
        Span::new(a.min(b), a.max(b))
    }

    /// Applies one change of `textDocument/didChange`: a range replaced, or the whole text
    /// when there is no range.
    pub(crate) fn apply(&mut self, change: &TextDocumentContentChangeEvent, enc: Encoding) {
        match change.range {
            Some(range) => {
                let span = self.span(range, enc);
                let (a, b) = (span.start as usize, span.end as usize);
                self.text.replace_range(a..b, &change.text);
                // The line starts before `a` stay, those from `a` to `b` are found again in
                // the new text from `a` to the end of the inserted text (whether a line
                // starts at `a` or right after the insertion depends on the bytes on both
                // sides: a `\r` and a `\n` may have been joined or parted), and the later
                // ones move by the change in length (no scan of the whole text for each
                // keystroke).
                let end = a + change.text.len();
                let first = self.starts.partition_point(|&s| s < a).max(1);
                let after = self.starts.partition_point(|&s| s <= b);
                let tail: Vec<usize> = self.starts[after..].iter().map(|&s| s - (b - a) + change.text.len()).collect();
                self.starts.truncate(first);
                let bytes = self.text.as_bytes();
                self.starts.extend((a.max(1)..=end).filter(|&p| starts_line(bytes, p)));
                self.starts.extend(tail);
            }
            None => {
                self.text.clone_from(&change.text);
                self.starts = line_starts(&self.text);
            }
        }
    }
}

/// Where the lines start: after each `\n`, `\r\n` and lone `\r` — the line ends LSP
/// defines, which clients count lines by.
fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    std::iter::once(0).chain((1..=bytes.len()).filter(|&p| starts_line(bytes, p))).collect()
}

/// Whether a line starts at byte `p` (> 0): after a `\n`, or after a `\r` not followed by
/// a `\n`.
fn starts_line(bytes: &[u8], p: usize) -> bool {
    match bytes.get(p - 1) {
        Some(b'\n') => true,
        Some(b'\r') => bytes.get(p) != Some(&b'\n'),
        _ => false,
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change of the range `(start line, start character, end line, end character)` to `text`.
    fn ranged((l0, c0, l1, c1): (u32, u32, u32, u32), text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range {
                start: Position { line: l0, character: c0 },
                end: Position { line: l1, character: c1 },
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn utf16_and_utf8_columns() {
        // `é` is 2 UTF-8 bytes and 1 UTF-16 unit; `𝄞` is 4 bytes and 2 units.
        let t = Text::new("ab\n\"é𝄞x\"\n".to_string());
        let x = t.as_str().find('x').unwrap();
        assert_eq!(t.position(x as u32, Encoding::Utf16), Position { line: 1, character: 4 });
        assert_eq!(t.position(x as u32, Encoding::Utf8), Position { line: 1, character: 7 });
        assert_eq!(t.offset(Position { line: 1, character: 4 }, Encoding::Utf16), x);
        assert_eq!(t.offset(Position { line: 1, character: 7 }, Encoding::Utf8), x);
        // Inside the surrogate pair: the character's start.
        assert_eq!(t.offset(Position { line: 1, character: 3 }, Encoding::Utf16), x - 4);
        // Past the line's end: the line's end; past the last line: the text's end.
        assert_eq!(t.offset(Position { line: 0, character: 99 }, Encoding::Utf16), 2);
        assert_eq!(t.offset(Position { line: 9, character: 0 }, Encoding::Utf16), t.as_str().len());
    }

    /// LSP's line ends are `\n`, `\r\n` and `\r`; clients count lines by all three (a file
    /// with `\r` alone had one line here: hover missed, diagnostics were on line 0, and an
    /// edit on line 2 was applied at the end of the text).
    #[test]
    fn every_line_end_of_lsp_ends_a_line() {
        let t = Text::new("a\rb\r\nc\nd".to_string());
        for (line, text_at) in [(0, "a"), (1, "b"), (2, "c"), (3, "d")] {
            let at = t.offset(Position { line, character: 0 }, Encoding::Utf16);
            assert_eq!(&t.as_str()[at..at + 1], text_at);
            assert_eq!(t.position(at as u32, Encoding::Utf16), Position { line, character: 0 });
        }
        // A column past a line's end is before its line end, not between `\r` and `\n`.
        assert_eq!(t.offset(Position { line: 1, character: 9 }, Encoding::Utf16), 3);
        assert_eq!(t.offset(Position { line: 0, character: 9 }, Encoding::Utf16), 1);
    }

    #[test]
    fn incremental_changes() {
        let mut t = Text::new("{\n  \"a\": 1\n}".to_string());
        let change = TextDocumentContentChangeEvent {
            range: Some(Range { start: Position { line: 1, character: 3 }, end: Position { line: 1, character: 4 } }),
            range_length: None,
            text: "bé".to_string(),
        };
        t.apply(&change, Encoding::Utf16);
        assert_eq!(t.as_str(), "{\n  \"bé\": 1\n}");
        assert_eq!(t.starts, line_starts(t.as_str()));
        // Lines joined, lines inserted: the line starts are those of the new text.
        for (range, text) in [((0, 1, 1, 2), "x"), ((0, 0, 0, 0), "a\nb\n\n"), ((1, 0, 3, 0), "é\n𝄞")] {
            t.apply(&ranged(range, text), Encoding::Utf16);
            assert_eq!(t.starts, line_starts(t.as_str()), "after {range:?} → {text:?}: {:?}", t.as_str());
        }
        // `\r` ends a line too: a `\n` typed after it joins them into one line end, text
        // typed between them parts them into two.
        let mut t = Text::new("{\r\"a\": 1\r\n}".to_string());
        for (range, text) in [
            ((0, 1, 0, 1), "\n"),
            ((1, 0, 1, 0), "x"),
            ((1, 0, 1, 1), ""),
            ((2, 6, 2, 6), "\r"),
            ((0, 1, 1, 0), ""),
            ((2, 0, 2, 1), "\n"),
            ((0, 0, 9, 0), "\r\r\n\n\r"),
        ] {
            t.apply(&ranged(range, text), Encoding::Utf16);
            assert_eq!(t.starts, line_starts(t.as_str()), "after {range:?} → {text:?}: {:?}", t.as_str());
        }
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: "{}\n".to_string() };
        t.apply(&full, Encoding::Utf16);
        assert_eq!(t.as_str(), "{}\n");
        assert_eq!(t.position(3, Encoding::Utf16), Position { line: 1, character: 0 });
    }
}
