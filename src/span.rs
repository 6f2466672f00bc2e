//! Byte positions in source text.
//!
//! One position type for the whole crate: a half-open range of `u32` byte offsets into the
//! text a diagnostic is about. Spans inside string literals that hold templates are mapped
//! back to the outer source through a [`SourceMap`], so a diagnostic always underlines the
//! characters the user typed.

use std::fmt;

/// A half-open byte range `start..end` in a source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end` (saturating at `u32::MAX`).
    pub fn new(start: usize, end: usize) -> Span {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Span { start: clamp(start), end: clamp(end.max(start)) }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// The span as a `usize` range, for slicing.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// Number of bytes covered.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// True when the span covers no bytes.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// This span moved `by` bytes to the right.
    pub fn shift(self, by: u32) -> Span {
        Span { start: self.start.saturating_add(by), end: self.end.saturating_add(by) }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(span: Span) -> Self {
        miette::SourceSpan::new((span.start as usize).into(), span.len())
    }
}

/// A value with the span it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub node: T,
    /// Where it was written.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Pair a value with its span.
    pub fn new(node: T, span: Span) -> Self {
        Spanned { node, span }
    }
}

/// Maps byte offsets in a decoded string (after escapes were replaced) back to byte offsets
/// in the text it was written in.
///
/// Built while unescaping: every decoded character records where its source starts. Used
/// for template strings inside expressions and, one level up, for expressions inside JSON
/// strings, so spans compose through both layers of escaping.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceMap {
    /// `(decoded offset, source offset)` of each decoded character that does not simply
    /// continue the verbatim run before it, in order.
    points: Points,
    /// Decoded length and the source offset just past the last character.
    end: (u32, u32),
}

/// A source map's points: most strings have no escapes, so one point (held inline, no
/// allocation) maps them all.
#[derive(Clone, Debug, Default, PartialEq)]
enum Points {
    #[default]
    None,
    One((u32, u32)),
    /// Two or more (never fewer: equal maps are built equal).
    Many(Vec<(u32, u32)>),
}

impl Points {
    fn as_slice(&self) -> &[(u32, u32)] {
        match self {
            Points::None => &[],
            Points::One(p) => std::slice::from_ref(p),
            Points::Many(v) => v,
        }
    }

    fn push(&mut self, p: (u32, u32)) {
        match self {
            Points::None => *self = Points::One(p),
            Points::One(q) => *self = Points::Many(vec![*q, p]),
            Points::Many(v) => v.push(p),
        }
    }
}

impl SourceMap {
    /// A map for text that was copied verbatim from `source_start`.
    pub fn identity(source_start: u32, len: u32) -> SourceMap {
        SourceMap { points: Points::One((0, source_start)), end: (len, source_start.saturating_add(len)) }
    }

    /// Records that the decoded character at offset `decoded` starts at `source` in the
    /// source text. Calls must come in increasing order of both offsets.
    pub fn push(&mut self, decoded: usize, source: usize) {
        let c = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let (d, s) = (c(decoded), c(source));
        // Skip points that a verbatim run already implies.
        if let Some(&(pd, ps)) = self.points.as_slice().last() {
            if d.wrapping_sub(pd) == s.wrapping_sub(ps) {
                return;
            }
        }
        self.points.push((d, s));
    }

    /// Marks the end of the decoded text and of its source.
    pub fn finish(&mut self, decoded_len: usize, source_end: usize) {
        let c = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.end = (c(decoded_len), c(source_end));
    }

    /// The source offset where decoded offset `at` starts.
    fn offset(&self, at: u32) -> u32 {
        if at >= self.end.0 {
            return self.end.1;
        }
        // A string without escapes (most): one verbatim run, no search.
        if let Points::One((d, s)) = self.points {
            return if d <= at { (s + (at - d)).min(self.end.1) } else { self.end.1 };
        }
        self.search(at)
    }

    /// [`SourceMap::offset`] by searching the points (any number of them), below the end.
    fn search(&self, at: u32) -> u32 {
        let points = self.points.as_slice();
        let idx = points.partition_point(|p| p.0 <= at);
        match idx.checked_sub(1).and_then(|i| points.get(i)) {
            Some(&(d, s)) => {
                // Within a verbatim run, but never past the next point's source offset.
                let limit = points.get(idx).map_or(self.end.1, |p| p.1);
                (s + (at - d)).min(limit)
            }
            None => self.end.1,
        }
    }

    /// Maps a span in decoded text to a span in the source text.
    pub fn map(&self, span: Span) -> Span {
        let start = self.offset(span.start);
        let end = if span.is_empty() { start } else { self.offset(span.end) };
        Span { start, end: end.max(start) }
    }

    /// The decoded offset of the character whose source text holds source offset `at` (an
    /// escape's every byte maps to the character it decodes to); `None` outside the source.
    pub fn decoded(&self, at: usize) -> Option<usize> {
        let at = u32::try_from(at).ok()?;
        let points = self.points.as_slice();
        let first = points.first()?;
        if at < first.1 || at >= self.end.1 {
            return None;
        }
        let idx = points.partition_point(|p| p.1 <= at);
        let &(d, s) = points.get(idx.checked_sub(1)?)?;
        // Within a verbatim run, but never onto the next point's character.
        let next = points.get(idx).map_or(self.end.0, |p| p.0);
        let last = next.saturating_sub(1).max(d);
        Some(d.saturating_add(at - s).min(last) as usize)
    }

    /// Maps a decoded span through this map and then through `outer`, for text that was
    /// decoded twice (a template string inside an expression inside a JSON string).
    pub fn then(&self, span: Span, outer: &SourceMap) -> Span {
        outer.map(self.map(span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_offsets_invert_the_map() {
        let m = SourceMap::identity(10, 5);
        assert_eq!((m.decoded(9), m.decoded(10), m.decoded(14), m.decoded(15)), (None, Some(0), Some(4), None));
        // `a\"b`: the two bytes of the escape both decode to `"`, at 1.
        let mut m = SourceMap::default();
        m.push(0, 0);
        m.push(1, 1);
        m.push(2, 3);
        m.finish(3, 4);
        assert_eq!([0, 1, 2, 3].map(|o| m.decoded(o)), [Some(0), Some(1), Some(1), Some(2)]);
        for d in 0..3 {
            assert_eq!(m.decoded(m.map(Span::new(d, d + 1)).start as usize), Some(d));
        }
    }

    proptest::proptest! {
        /// A map of one verbatim run (a string without escapes) answers without a search
        /// exactly what the search answers, at every offset, the end and past it included.
        #[test]
        fn one_run_maps_as_the_search_does(d in 0u32..40, s in 0u32..1000, len in 0u32..80, extra in 0u32..50) {
            let mut m = SourceMap::default();
            m.push(d as usize, s as usize);
            let end = d + len;
            m.finish(end as usize, (s + len + extra) as usize);
            proptest::prop_assert!(matches!(m.points, Points::One(_)));
            for at in 0..end + 5 {
                let want = if at >= m.end.0 { m.end.1 } else { m.search(at) };
                proptest::prop_assert_eq!(m.offset(at), want, "at {}", at);
            }
        }
    }

    #[test]
    fn identity_map_shifts() {
        let m = SourceMap::identity(10, 5);
        assert_eq!(m.map(Span::new(1, 3)), Span::new(11, 13));
        assert_eq!(m.map(Span::new(0, 5)), Span::new(10, 15));
    }

    #[test]
    fn escapes_widen_in_source() {
        // source:  a \n b   (bytes: a=0, \=1, n=2, b=3) decoded: a, LF, b
        let mut m = SourceMap::default();
        m.push(0, 0);
        m.push(1, 1);
        m.push(2, 3);
        m.finish(3, 4);
        assert_eq!(m.map(Span::new(1, 2)), Span::new(1, 3));
        assert_eq!(m.map(Span::new(2, 3)), Span::new(3, 4));
        assert_eq!(m.map(Span::new(0, 3)), Span::new(0, 4));
    }
}
