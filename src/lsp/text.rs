//! An open document's text and the conversions between byte offsets (what spans hold) and
//! LSP positions (0-based lines, columns in the negotiated encoding: UTF-16 code units by
//! default, UTF-8 bytes when the client offers it).

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

use crate::span::Span;

/// How an LSP position counts columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16 code units (the protocol's default).
    Utf16,
    /// UTF-8 bytes (negotiated through `general.positionEncodings`).
    Utf8,
}

/// A document's text with its line starts.
#[derive(Clone, Debug)]
pub struct Text {
    text: String,
    /// Byte offset where each line starts; the first is 0.
    starts: Vec<usize>,
}

impl Text {
    /// Indexes `text`.
    pub fn new(text: String) -> Text {
        let starts = line_starts(&text);
        Text { text, starts }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The LSP position of byte `offset` (clamped to the text, moved back to a character
    /// boundary).
    pub fn position(&self, offset: u32, enc: Encoding) -> Position {
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
    pub fn range(&self, span: Span, enc: Encoding) -> Range {
        Range { start: self.position(span.start, enc), end: self.position(span.end.max(span.start), enc) }
    }

    /// The byte offset of an LSP position. A line past the end is the end of the text; a
    /// column past the end of its line is the end of the line (the protocol asks servers
    /// to be lenient); a column inside a character is that character's start.
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else { return self.text.len() };
        let end = self.starts.get(pos.line as usize + 1).map_or(self.text.len(), |&e| e - 1);
        let line = &self.text[start..end.max(start)];
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
    pub fn span(&self, range: Range, enc: Encoding) -> Span {
        let a = self.offset(range.start, enc);
        let b = self.offset(range.end, enc);
        Span::new(a.min(b), a.max(b))
    }

    /// Applies one change of `textDocument/didChange`: a range replaced, or the whole text
    /// when there is no range.
    pub fn apply(&mut self, change: &TextDocumentContentChangeEvent, enc: Encoding) {
        match change.range {
            Some(range) => {
                let span = self.span(range, enc);
                let (a, b) = (span.start as usize, span.end as usize);
                self.text.replace_range(a..b, &change.text);
                // The line starts up to `a` stay, those in the replaced bytes go, the
                // inserted text's come in, and the later ones move by the change in length
                // (no scan of the whole text for each keystroke).
                let first = self.starts.partition_point(|&s| s <= a);
                let after = self.starts.partition_point(|&s| s <= b);
                let tail: Vec<usize> = self.starts[after..].iter().map(|&s| s - (b - a) + change.text.len()).collect();
                self.starts.truncate(first);
                self.starts.extend(change.text.match_indices('\n').map(|(i, _)| a + i + 1));
                self.starts.extend(tail);
            }
            None => {
                self.text.clone_from(&change.text);
                self.starts = line_starts(&self.text);
            }
        }
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let (l0, c0, l1, c1) = range;
            let change = TextDocumentContentChangeEvent {
                range: Some(Range {
                    start: Position { line: l0, character: c0 },
                    end: Position { line: l1, character: c1 },
                }),
                range_length: None,
                text: text.to_string(),
            };
            t.apply(&change, Encoding::Utf16);
            assert_eq!(t.starts, line_starts(t.as_str()), "after {range:?} → {text:?}: {:?}", t.as_str());
        }
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: "{}\n".to_string() };
        t.apply(&full, Encoding::Utf16);
        assert_eq!(t.as_str(), "{}\n");
        assert_eq!(t.position(3, Encoding::Utf16), Position { line: 1, character: 0 });
    }
}
