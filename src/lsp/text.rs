//! An open document's text and the conversions between byte offsets (what spans hold) and
//! LSP positions (0-based lines, columns in the negotiated encoding: UTF-16 code units by
//! default, UTF-8 bytes when the client offers it).

use std::cell::OnceCell;

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
    /// Marks inside long lines, for UTF-16 columns: found on the first conversion after a
    /// change (see [`Mark`]).
    marks: OnceCell<Vec<Mark>>,
}

/// A point inside a line longer than [`STRIDE`]: every `STRIDE` bytes of such a line (at a
/// character boundary), the UTF-16 units from the line's start to it. A UTF-16 column is
/// then counted from the nearest mark, not from the line's start: on a minified file (one
/// line) each of its thousands of diagnostics counted the line up to its place, and a 1 MB
/// file took 18 s to check.
#[derive(Clone, Copy, Debug)]
struct Mark {
    at: usize,
    units: usize,
}

/// The distance between marks, in bytes.
const STRIDE: usize = 1024;

impl Text {
    /// Indexes `text`.
    pub(crate) fn new(text: String) -> Text {
        let starts = line_starts(&text);
        Text { text, starts, marks: OnceCell::new() }
    }

    /// The marks of the current text.
    fn marks(&self) -> &[Mark] {
        self.marks.get_or_init(|| {
            let mut marks = Vec::new();
            let bytes = self.text.as_bytes();
            for (line, &start) in self.starts.iter().enumerate() {
                let end = self.content_end(line);
                if end - start <= STRIDE {
                    continue;
                }
                let (mut from, mut units) = (start, 0);
                let mut at = start + STRIDE;
                while at < end {
                    while !self.text.is_char_boundary(at) {
                        at -= 1;
                    }
                    units += utf16_units(&bytes[from..at]);
                    marks.push(Mark { at, units });
                    from = at;
                    at += STRIDE;
                }
            }
            marks
        })
    }

    /// Where line `line`'s text ends (before its `\n`, `\r\n` or `\r`).
    fn content_end(&self, line: usize) -> usize {
        let start = self.starts.get(line).copied().unwrap_or(self.text.len());
        let end = self.starts.get(line + 1).map_or(self.text.len(), |&e| e).max(start);
        let content = &self.text.as_bytes()[start..end];
        let content = content.strip_suffix(b"\n").unwrap_or(content);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        start + content.len()
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
        let character = match enc {
            Encoding::Utf8 => offset - start,
            Encoding::Utf16 => {
                // From the last mark of this line before the offset, if any.
                let marks = self.marks();
                let (from, units) = match marks.partition_point(|m| m.at <= offset).checked_sub(1) {
                    Some(i) if marks[i].at >= start => (marks[i].at, marks[i].units),
                    _ => (start, 0),
                };
                units + utf16_units(&self.text.as_bytes()[from..offset])
            }
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
        self.offset_from_marks(pos, enc, true)
    }

    /// [`Text::offset`], from the marks (`use_marks`: building them when the text changed)
    /// or from the line's start (while edits are applied, each changing the text).
    fn offset_from_marks(&self, pos: Position, enc: Encoding, use_marks: bool) -> usize {
        let line = pos.line as usize;
        let Some(&start) = self.starts.get(line) else { return self.text.len() };
        // The line without its end (`\n`, `\r\n` or `\r`): a column past the end is
        // before it, never between a `\r` and its `\n`.
        let end = self.content_end(line);
        let want = pos.character as usize;
        let (mut at, mut units) = (start, 0);
        match enc {
            Encoding::Utf8 => at = start.saturating_add(want).min(end),
            // A column is never more UTF-16 units than the bytes before it.
            Encoding::Utf16 if want >= end - start => at = end,
            Encoding::Utf16 => {
                if use_marks {
                    let marks = self.marks();
                    let lo = marks.partition_point(|m| m.at < start);
                    let hi = marks.partition_point(|m| m.at < end);
                    let line_marks = &marks[lo..hi];
                    if let Some(m) =
                        line_marks.partition_point(|m| m.units <= want).checked_sub(1).map(|i| line_marks[i])
                    {
                        (at, units) = (m.at, m.units);
                    }
                }
                // Whole blocks while they stay at or before the column, then characters.
                let bytes = self.text.as_bytes();
                const BLOCK: usize = 64;
                while at + BLOCK <= end {
                    let u = utf16_units(&bytes[at..at + BLOCK]);
                    if units + u > want {
                        break;
                    }
                    units += u;
                    at += BLOCK;
                }
                // A block may end inside a character it counted.
                while !self.text.is_char_boundary(at) {
                    at += 1;
                }
                for (i, c) in self.text[at..end].char_indices() {
                    if units >= want {
                        return at + i;
                    }
                    units += c.len_utf16();
                    if units > want {
                        return at + i;
                    }
                }
                at = end;
            }
        }
        // A column inside a character is that character's start.
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    /// The span between two LSP positions.
    pub(crate) fn span(&self, range: Range, enc: Encoding) -> Span {
        self.span_from_marks(range, enc, true)
    }

    fn span_from_marks(&self, range: Range, enc: Encoding, use_marks: bool) -> Span {
        let a = self.offset_from_marks(range.start, enc, use_marks);
        let b = self.offset_from_marks(range.end, enc, use_marks);
        Span::new(a.min(b), a.max(b))
    }

    /// Applies one change of `textDocument/didChange`: a range replaced, or the whole text
    /// when there is no range. Returns about how many bytes the change moved and read (the
    /// text after the range, the line before it, the line starts after it), or the length
    /// the text would have when that is over `max` (then nothing changed).
    pub(crate) fn apply(
        &mut self,
        change: &TextDocumentContentChangeEvent,
        enc: Encoding,
        max: usize,
    ) -> Result<u64, usize> {
        match change.range {
            Some(range) => {
                // Marks are found again only when a position is next asked for, not for
                // each of the changes of one message.
                let span = self.span_from_marks(range, enc, false);
                let (a, b) = (span.start as usize, span.end as usize);
                let len = self.text.len() - (b - a) + change.text.len();
                if len > max {
                    return Err(len);
                }
                self.marks.take();
                let line_start = self.starts[self.starts.partition_point(|&s| s <= a).saturating_sub(1)];
                let cost =
                    (a - line_start) + (len - a) + 8 * (self.starts.len() - self.starts.partition_point(|&s| s <= b));
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
                Ok(cost as u64)
            }
            None => {
                if change.text.len() > max {
                    return Err(change.text.len());
                }
                self.text.clone_from(&change.text);
                self.starts = line_starts(&self.text);
                self.marks.take();
                Ok(change.text.len() as u64)
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

/// The UTF-16 units of the characters whose first byte is in `bytes` (a loop the compiler
/// vectorises: a byte that does not continue a character starts one, and one that starts a
/// four-byte character starts a surrogate pair).
fn utf16_units(bytes: &[u8]) -> usize {
    bytes.iter().map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0)).sum()
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

    /// Positions and offsets by counting every line from its start, the plain way.
    fn naive_position(text: &str, starts: &[usize], offset: usize, enc: Encoding) -> Position {
        let line = starts.partition_point(|&s| s <= offset) - 1;
        let piece = &text[starts[line]..offset];
        let character = match enc {
            Encoding::Utf8 => piece.len(),
            Encoding::Utf16 => piece.chars().map(char::len_utf16).sum(),
        };
        Position { line: line as u32, character: character as u32 }
    }

    /// Long lines (counted from marks) against the plain count: every character boundary's
    /// position, and the offset of every column of each line and past it, after edits too.
    #[test]
    fn long_lines_are_counted_from_marks_as_from_their_start() {
        let mut seed = 7u64;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let pieces = ["a", "é", "𝄞", "中", "\r\n", "\n", "\r", "bc"];
        for round in 0..6 {
            let n = [3000, 5000, 2100][round % 3];
            let text: String = (0..n)
                .map(|_| {
                    // Lines of about a thousand pieces, and a few empty ones.
                    let k = next(1000) as usize;
                    if k < 3 {
                        pieces[4 + k]
                    } else {
                        pieces[[0, 1, 2, 3, 7][k % 5]]
                    }
                })
                .collect();
            let mut t = Text::new(text);
            // An edit in the middle, then the marks are those of the new text.
            let at = t.position(t.as_str().len() as u32 / 2, Encoding::Utf16);
            t.apply(
                &ranged((at.line, at.character, at.line, at.character + 3), "𝄞x\u{e9}"),
                Encoding::Utf16,
                usize::MAX,
            )
            .expect("applied");
            let text = t.as_str().to_string();
            let starts = line_starts(&text);
            for enc in [Encoding::Utf16, Encoding::Utf8] {
                for (i, _) in text.char_indices().chain([(text.len(), ' ')]) {
                    let p = naive_position(&text, &starts, i, enc);
                    assert_eq!(t.position(i as u32, enc), p, "round {round}, offset {i}");
                    // Between a `\r` and its `\n` is no column of its own.
                    if !text[..i].ends_with('\r') || !text[i..].starts_with('\n') {
                        assert_eq!(t.offset(p, enc), i, "round {round}, {p:?}");
                    }
                }
                for (line, &start) in starts.iter().enumerate() {
                    let end = t.content_end(line);
                    for col in (0..6000u32).step_by(13).chain([u32::MAX]) {
                        let pos = Position { line: line as u32, character: col };
                        let want = {
                            // The plain walk (the code before the marks).
                            let mut units = 0usize;
                            let mut found = end;
                            for (i, c) in text[start..end].char_indices() {
                                if units >= col as usize {
                                    found = start + i;
                                    break;
                                }
                                units += if enc == Encoding::Utf8 { c.len_utf8() } else { c.len_utf16() };
                                if units > col as usize {
                                    found = start + i;
                                    break;
                                }
                            }
                            found
                        };
                        assert_eq!(t.offset(pos, enc), want, "round {round}, {pos:?}");
                        assert_eq!(t.offset_from_marks(pos, enc, false), want, "round {round}, {pos:?}");
                    }
                }
            }
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
        t.apply(&change, Encoding::Utf16, usize::MAX).expect("applied");
        assert_eq!(t.as_str(), "{\n  \"bé\": 1\n}");
        assert_eq!(t.starts, line_starts(t.as_str()));
        // Lines joined, lines inserted: the line starts are those of the new text.
        for (range, text) in [((0, 1, 1, 2), "x"), ((0, 0, 0, 0), "a\nb\n\n"), ((1, 0, 3, 0), "é\n𝄞")] {
            t.apply(&ranged(range, text), Encoding::Utf16, usize::MAX).expect("applied");
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
            t.apply(&ranged(range, text), Encoding::Utf16, usize::MAX).expect("applied");
            assert_eq!(t.starts, line_starts(t.as_str()), "after {range:?} → {text:?}: {:?}", t.as_str());
        }
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: "{}\n".to_string() };
        t.apply(&full, Encoding::Utf16, usize::MAX).expect("applied");
        assert_eq!(t.as_str(), "{}\n");
        assert_eq!(t.position(3, Encoding::Utf16), Position { line: 1, character: 0 });
    }
}
