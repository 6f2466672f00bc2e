//! Decoding string escapes while remembering where each character came from.

use crate::diagnostic::{Code, Diagnostic};
use crate::span::{SourceMap, Span};

/// Which escapes a string syntax allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// tdsl string literals: JSON's escapes plus `\'`.
    Expression,
    /// JSON strings (RFC 8259).
    Json,
}

/// Decodes the escapes in `raw` (the text between the quotes), which starts at byte
/// `offset` of its source. Returns the decoded text, a map from decoded offsets to source
/// offsets, and a diagnostic for every invalid escape (the text keeps going past them, so
/// one pass reports them all).
pub fn unescape(raw: &str, offset: usize, dialect: Dialect) -> (String, SourceMap, Vec<Diagnostic>) {
    let mut out = String::with_capacity(raw.len());
    let mut map = SourceMap::default();
    let mut errors = Vec::new();
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        let start = i;
        map.push(out.len(), offset + start);
        if bytes[i] != b'\\' {
            // Copy the run up to the next escape at once: its characters map verbatim, so
            // the point just recorded stands for all of them (and a backslash, being
            // ASCII, always starts a character).
            let end = bytes[i..].iter().position(|&b| b == b'\\').map_or(raw.len(), |n| i + n);
            out.push_str(&raw[i..end]);
            i = end;
            continue;
        }
        let esc = raw[i + 1..].chars().next();
        let simple = match esc {
            Some('"') => Some('"'),
            Some('\\') => Some('\\'),
            Some('/') => Some('/'),
            Some('n') => Some('\n'),
            Some('r') => Some('\r'),
            Some('t') => Some('\t'),
            Some('b') => Some('\u{8}'),
            Some('f') => Some('\u{c}'),
            Some('\'') if dialect == Dialect::Expression => Some('\''),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        if esc == Some('u') {
            match decode_u(raw, i) {
                Ok((c, len)) => {
                    out.push(c);
                    i += len;
                }
                Err(len) => {
                    errors.push(
                        Diagnostic::new(
                            Code::InvalidEscape,
                            Span::new(offset + i, offset + i + len),
                            "invalid unicode escape",
                        )
                        .with_label("expected four hex digits naming a character")
                        .with_help("write `\\uXXXX`; characters beyond U+FFFF need a surrogate pair `\\uD83D\\uDE00`"),
                    );
                    i += len;
                }
            }
            continue;
        }
        let len = 1 + esc.map_or(0, char::len_utf8);
        let shown: String = raw[i..i + len].to_string();
        errors.push(
            Diagnostic::new(
                Code::InvalidEscape,
                Span::new(offset + i, offset + i + len),
                format!("unknown escape `{shown}` in string"),
            )
            .with_label("not a valid escape")
            .with_help(match dialect {
                Dialect::Expression => {
                    "valid escapes are \\\\ \\\" \\' \\/ \\n \\r \\t \\b \\f \\uXXXX; write `\\\\` for a backslash"
                }
                Dialect::Json => "valid JSON escapes are \\\\ \\\" \\/ \\n \\r \\t \\b \\f \\uXXXX",
            }),
        );
        i += len;
    }
    map.finish(out.len(), offset + raw.len());
    (out, map, errors)
}

/// Decodes `\uXXXX` (and a following low surrogate) at byte `i`; on error, the number of
/// bytes to skip.
fn decode_u(raw: &str, i: usize) -> Result<(char, usize), usize> {
    let hex = |at: usize| -> Option<u32> {
        let h = raw.get(at..at + 4)?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(h, 16).ok()
    };
    let bad_len = 2 + raw[i + 2..].chars().take(4).take_while(char::is_ascii_hexdigit).count();
    let hi = hex(i + 2).ok_or(bad_len)?;
    if (0xD800..0xDC00).contains(&hi) {
        if raw.get(i + 6..i + 8) == Some("\\u") {
            if let Some(lo) = hex(i + 8) {
                if (0xDC00..0xE000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(c).map(|c| (c, 12)).ok_or(12);
                }
            }
        }
        return Err(6);
    }
    char::from_u32(hi).map(|c| (c, 6)).ok_or(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_maps() {
        let (s, map, errs) = unescape(r#"a\"b\u00e9c"#, 10, Dialect::Expression);
        assert!(errs.is_empty());
        assert_eq!(s, "a\"béc");
        // `c` is decoded at byte 5 (é takes two bytes) and was written at 10 + 10.
        assert_eq!(map.map(Span::new(5, 6)), Span::new(20, 21));
        // the quote came from the two-byte escape
        assert_eq!(map.map(Span::new(1, 2)), Span::new(11, 13));
    }

    #[test]
    fn reports_every_bad_escape() {
        let (_, _, errs) = unescape(r#"\q and \u12 and \z"#, 0, Dialect::Expression);
        assert_eq!(errs.len(), 3);
        assert_eq!(errs[0].span, Span::new(0, 2));
    }

    #[test]
    fn surrogate_pairs() {
        let (s, _, errs) = unescape(r"\uD83D\uDE00", 0, Dialect::Json);
        assert!(errs.is_empty());
        assert_eq!(s, "😀");
        let (_, _, errs) = unescape(r"\uD83D", 0, Dialect::Json);
        assert_eq!(errs.len(), 1);
    }

    #[test]
    fn single_quote_only_in_expressions() {
        assert!(unescape(r"\'", 0, Dialect::Expression).2.is_empty());
        assert_eq!(unescape(r"\'", 0, Dialect::Json).2.len(), 1);
    }
}
