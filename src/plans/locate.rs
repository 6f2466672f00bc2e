//! Where a diagnostic is in a plan, said the way a program that sent the plan as JSON can
//! use it: a JSON pointer (RFC 6901) to the value, and inside a string the range of the
//! offending characters in the decoded string (not in the JSON text, which the sender may
//! never have seen).

use crate::span::Span;
use crate::tool::{JsonKind, JsonNode};

/// A JSON pointer and, inside a string, a character range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// `/instructions/1/arguments/doc` (`""` for the whole plan).
    pub pointer: String,
    /// When the span lies inside a string value (or key): the range of characters (Unicode
    /// scalar values, end exclusive) of the decoded string it covers.
    pub range: Option<[usize; 2]>,
}

/// One segment of a JSON pointer, escaped (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn contains(outer: Span, inner: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// The location of `span` in the tree `root` was parsed into.
pub fn locate(root: &JsonNode, span: Span) -> Location {
    let mut pointer = String::new();
    let mut node = root;
    loop {
        let next = match &node.kind {
            JsonKind::Object(entries) => {
                let mut found = None;
                for (key, value) in entries {
                    if contains(value.span, span) {
                        found = Some((key.node.as_str(), value));
                        break;
                    }
                    if contains(key.span, span) {
                        // The key itself: point at its entry; the range is inside the key.
                        pointer.push('/');
                        pointer.push_str(&escape(&key.node));
                        let range = string_range(key.span, &key.node, span);
                        return Location { pointer, range };
                    }
                }
                found.map(|(k, v)| (escape(k), v))
            }
            JsonKind::List(items) => {
                items.iter().enumerate().find(|(_, v)| contains(v.span, span)).map(|(i, v)| (i.to_string(), v))
            }
            _ => None,
        };
        match next {
            Some((segment, child)) => {
                pointer.push('/');
                pointer.push_str(&segment);
                node = child;
            }
            None => break,
        }
    }
    let range = match &node.kind {
        JsonKind::Str(s) => {
            let content = s.content_span();
            if contains(content, span) && span != node.span {
                let start = s.decoded_offset(span.start as usize).unwrap_or(0);
                let end = if span.end >= content.end {
                    s.value.len()
                } else {
                    s.decoded_offset(span.end as usize).unwrap_or(s.value.len())
                };
                Some(chars(&s.value, start, end))
            } else {
                None
            }
        }
        _ => None,
    };
    Location { pointer, range }
}

/// The character range of `span` inside a key written at `key_span` (without escapes in
/// keys the offsets map one to one; with escapes, the whole key).
fn string_range(key_span: Span, key: &str, span: Span) -> Option<[usize; 2]> {
    let content = Span { start: key_span.start + 1, end: key_span.end.saturating_sub(1) };
    if !contains(content, span) || span == key_span {
        return None;
    }
    if content.len() != key.len() {
        return Some([0, key.chars().count()]);
    }
    let start = (span.start - content.start) as usize;
    let end = (span.end - content.start) as usize;
    Some(chars(key, start, end))
}

/// Byte offsets in `text` as character offsets.
fn chars(text: &str, start: usize, end: usize) -> [usize; 2] {
    let count = |at: usize| text.get(..at.min(text.len())).map_or(0, |t| t.chars().count());
    [count(start), count(end.max(start))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_and_ranges() {
        let src = r#"{"instructions": [{"a": 1}, {"arguments": {"d/oc": "x é {{fetch.output}}"}}]}"#;
        let (root, diags) = crate::tool::json::parse(src);
        assert!(diags.is_empty());
        let root = root.expect("tree");
        let at = src.find("{{").expect("placeholder");
        let end = src.find("}}\"").expect("end") + 2;
        let loc = locate(&root, Span::new(at, end));
        assert_eq!(loc.pointer, "/instructions/1/arguments/d~1oc");
        // `x é ` is four characters (five bytes).
        assert_eq!(loc.range, Some([4, 20]));
        let whole = src.find("\"x é").expect("string");
        let loc = locate(&root, Span::new(whole, end + 1));
        assert_eq!(loc.range, None);
        assert_eq!(locate(&root, Span::new(0, 1)).pointer, "");
        let key = src.find("\"a\"").expect("key");
        assert_eq!(locate(&root, Span::new(key, key + 3)).pointer, "/instructions/0/a");
    }
}
