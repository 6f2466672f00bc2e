//! Byte offsets → line and column, for the JSON diagnostic output of `tdsl check` (SPEC §8).
//!
//! Lines and columns are 1-based; a column counts characters (Unicode scalar values), not
//! bytes, from the start of its line. A line ends at `\n`, so a `\r\n` pair counts as one
//! break and the `\r` is the last character of its line. The end of a span is exclusive: the
//! end column is the column just past the last character, as in LSP and rustc's JSON output.

use crate::span::Span;

/// Line starts of one text, built once and queried for many offsets.
#[derive(Clone, Debug)]
pub struct LineIndex<'s> {
    text: &'s str,
    /// Byte offset where each line starts; the first is always 0.
    starts: Vec<usize>,
}

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct LineCol {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
}

/// Where a span starts and ends, as `tdsl check --format json` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Position {
    /// Line of the first character, from 1.
    pub line: u32,
    /// Column of the first character, from 1.
    pub column: u32,
    /// Line of the end.
    pub end_line: u32,
    /// Column just past the last character.
    pub end_column: u32,
}

impl<'s> LineIndex<'s> {
    /// Indexes the lines of `text`.
    pub fn new(text: &'s str) -> LineIndex<'s> {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { text, starts }
    }

    /// The line and column of byte `offset`. An offset past the end is the end of the text;
    /// one inside a multi-byte character is that character's.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let mut start = self.starts.get(line).copied().unwrap_or(0);
        if start == 0 && self.text.starts_with('\u{feff}') {
            // A byte-order mark is invisible in editors: columns start after it.
            start = offset.min(3);
        }
        let column = self.text[start..offset].chars().count();
        let c = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        LineCol { line: c(line + 1), column: c(column + 1) }
    }

    /// The start and (exclusive) end of `span`.
    pub fn position(&self, span: Span) -> Position {
        let start = self.line_col(span.start);
        let end = self.line_col(span.end.max(span.start));
        Position { line: start.line, column: start.column, end_line: end.line, end_column: end.column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let text = "ab\ncé\r\nd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(idx.line_col(2), LineCol { line: 1, column: 3 });
        assert_eq!(idx.line_col(3), LineCol { line: 2, column: 1 });
        // `é` is two bytes but one column.
        assert_eq!(idx.line_col(6), LineCol { line: 2, column: 3 });
        // inside `é`: the character's own column
        assert_eq!(idx.line_col(5), LineCol { line: 2, column: 2 });
        assert_eq!(idx.line_col(8), LineCol { line: 3, column: 1 });
        assert_eq!(idx.line_col(99), LineCol { line: 3, column: 2 });
    }

    #[test]
    fn spans() {
        let text = "{\n  \"a\": 1\n}";
        let idx = LineIndex::new(text);
        let p = idx.position(Span::new(4, 7));
        assert_eq!(p, Position { line: 2, column: 3, end_line: 2, end_column: 6 });
        let whole = idx.position(Span::new(0, text.len()));
        assert_eq!(whole, Position { line: 1, column: 1, end_line: 3, end_column: 2 });
    }

    #[test]
    fn byte_order_mark_takes_no_column() {
        let idx = LineIndex::new("\u{feff}{}");
        assert_eq!(idx.line_col(3), LineCol { line: 1, column: 1 });
        assert_eq!(idx.line_col(4), LineCol { line: 1, column: 2 });
    }

    #[test]
    fn empty_text() {
        let idx = LineIndex::new("");
        assert_eq!(idx.line_col(0), LineCol { line: 1, column: 1 });
    }
}
