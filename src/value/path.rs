//! Path segments (SPEC §2): applying one, walking several, and [`Path`], a field path
//! with an inline cache of key positions.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use super::{Kind, Map, SegmentError, Value};

impl Value {
    /// Applies one path segment (SPEC §2) without cloning anything but the result.
    ///
    /// Returns a borrowed value when the segment selects part of `self`, and an owned one
    /// when it derives something (`length`, `file_name`, …).
    pub fn segment(&self, seg: &str) -> Result<Value, SegmentError> {
        match self {
            Value::Null => Ok(Value::Null),
            Value::Object(map) => {
                if let Some(v) = lookup(map, seg) {
                    return Ok(v.clone());
                }
                Ok(match seg {
                    "length" => Value::Int(map.len() as i64),
                    "file_name" | "parent_directory" => match map.get("path") {
                        Some(Value::Str(p)) => file_attribute(p, seg),
                        _ => Value::Null,
                    },
                    _ => Value::Null,
                })
            }
            Value::List(items) => match seg {
                "length" => Ok(Value::Int(items.len() as i64)),
                "first" => Ok(items.first().cloned().unwrap_or_default()),
                "last" => Ok(items.last().cloned().unwrap_or_default()),
                _ => match parse_index(seg) {
                    Some(i) => Ok(items.get(i).cloned().unwrap_or_default()),
                    None => Err(SegmentError { found: Kind::List }),
                },
            },
            Value::Str(s) => match seg {
                "length" => Ok(Value::Int(s.chars().count() as i64)),
                "path" => Ok(self.clone()),
                "file_name" | "parent_directory" => Ok(file_attribute(s, seg)),
                _ => Err(SegmentError { found: Kind::Str }),
            },
            other => Err(SegmentError { found: other.kind() }),
        }
    }

    /// Follows a path of segments, borrowing as long as the path selects parts of `self`
    /// and cloning only what it returns. On failure, the index of the segment that could
    /// not be applied.
    pub fn walk<'v>(&'v self, segs: &[Arc<str>]) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        let mut cur = self;
        for (i, s) in segs.iter().enumerate() {
            match cur {
                Value::Object(m) => {
                    if let Some(v) = lookup(m, s) {
                        cur = v;
                        continue;
                    }
                }
                Value::List(l) => {
                    if let Some(idx) = parse_index(s) {
                        match l.get(idx) {
                            Some(v) => {
                                cur = v;
                                continue;
                            }
                            None => return Ok(Cow::Owned(Value::Null)),
                        }
                    }
                }
                Value::Null => return Ok(Cow::Owned(Value::Null)),
                _ => {}
            }
            // A derived segment (`length`, `first`, `file_name`, …): owned from here on.
            let mut owned = cur.segment(s).map_err(|e| (i, e))?;
            for (j, s2) in segs[i + 1..].iter().enumerate() {
                owned = owned.segment(s2).map_err(|e| (i + 1 + j, e))?;
            }
            return Ok(Cow::Owned(owned));
        }
        Ok(Cow::Borrowed(cur))
    }

    /// [`Value::walk`] with a position hint per segment (see [`Path`]): when an object has
    /// the key where the last object on this path had it, no search is needed.
    ///
    /// Inlined wherever it is called in optimized builds (the loops over records); in
    /// unoptimized ones, a call: inlined there, every call site in the VM's recursive
    /// `exec` would keep its own copy of the locals, and templates nested to the depth limit
    /// would overflow a test thread's stack.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub fn walk_path<'v>(&'v self, path: &Path) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        match self.probe_path(path) {
            Some(v) => Ok(Cow::Borrowed(v)),
            None => self.walk_path_searched(path),
        }
    }

    /// Follows `path` through objects as long as every key is where its hint says: the
    /// value reached, or the index of the first segment that needs more and the value it
    /// applies to. The hot path of every field read, kept small enough to inline.
    #[inline]
    pub fn follow_hints<'v>(&'v self, path: &Path) -> Result<&'v Value, (usize, &'v Value)> {
        let mut cur = self;
        for (i, (s, hint)) in path.segs.iter().zip(path.hints().iter()).enumerate() {
            let Value::Object(m) = cur else { return Err((i, cur)) };
            match m.get_index(hint.load(Relaxed) as usize) {
                Some((k, v)) if same_key(k.as_bytes(), s.as_bytes()) => cur = v,
                _ => return Err((i, cur)),
            }
        }
        Ok(cur)
    }

    /// The value at `path` when every key of it is where its hint says (the hot path of a
    /// loop over records), or `None` for [`Value::walk_path`] to search and report. Small
    /// enough to inline into the loops that read a field of every element.
    #[inline(always)]
    pub(crate) fn probe_path<'v>(&'v self, path: &Path) -> Option<&'v Value> {
        let mut cur = self;
        for (s, hint) in path.segs.iter().zip(path.hints()) {
            let Value::Object(m) = cur else { return None };
            let (k, v) = m.get_index(hint.load(Relaxed) as usize)?;
            if !same_key(k.as_bytes(), s.as_bytes()) {
                return None;
            }
            cur = v;
        }
        Some(cur)
    }

    /// [`Value::walk_path`] when a key is not where its hint says (or the path meets a
    /// list, a derived segment or an absent key): searches for keys that are not where
    /// their hints say, and updates the hints. Out of line, so that the check before it
    /// stays small at every place that reads a field.
    #[inline(never)]
    fn walk_path_searched<'v>(&'v self, path: &Path) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        let mut cur = self;
        for (i, s) in path.segs.iter().enumerate() {
            if let (Value::Object(m), Some(hint)) = (cur, path.hints().get(i)) {
                if let Some((k, v)) = m.get_index(hint.load(Relaxed) as usize) {
                    if same_key(k.as_bytes(), s.as_bytes()) {
                        cur = v;
                        continue;
                    }
                }
                if let Some((at, _, v)) = m.get_full(&**s) {
                    hint.store(u32::try_from(at).unwrap_or(0), Relaxed);
                    cur = v;
                    continue;
                }
            }
            // Everything else (lists, derived segments, absent keys): the general rules.
            return match cur.walk(&path.segs[i..]) {
                Ok(v) => Ok(Cow::Owned(v.into_owned())),
                Err((at, e)) => Err((i + at, e)),
            };
        }
        Ok(Cow::Borrowed(cur))
    }

    /// Resolves a REF path's segments on a step result (SPEC §2), applying the response
    /// alias: a leading `response` segment selects the key `response` when the result has
    /// one and is skipped otherwise.
    pub fn walk_ref<'v>(&'v self, segs: &[Arc<str>]) -> Result<Cow<'v, Value>, (usize, SegmentError)> {
        if let (Some(first), Value::Object(m)) = (segs.first(), self) {
            if &**first == "response" && !m.contains_key("response") {
                return self.walk(&segs[1..]).map_err(|(i, e)| (i + 1, e));
            }
        }
        self.walk(segs)
    }

    /// Borrowing lookup of an object key or list index, for the hot path of field access;
    /// `None` when the segment needs the general rules of [`Value::segment`].
    #[inline]
    pub fn get_direct(&self, seg: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => lookup(map, seg),
            _ => None,
        }
    }

    /// Indexing with a computed key: `value[key]`.
    ///
    /// A list takes an integer (negative counts from the end) and an object a string; both
    /// give `null` when absent, as does indexing `null`.
    pub fn index(&self, key: &Value) -> Result<Value, SegmentError> {
        match (self, key) {
            (Value::Null, _) => Ok(Value::Null),
            (Value::List(items), Value::Int(i)) => {
                let len = items.len() as i64;
                let at = if *i < 0 { len + *i } else { *i };
                Ok(usize::try_from(at).ok().and_then(|i| items.get(i)).cloned().unwrap_or_default())
            }
            (Value::List(_), Value::Float(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                self.index(&Value::Int(*f as i64))
            }
            (Value::Object(_), Value::Str(k)) | (Value::List(_), Value::Str(k)) => self.segment(k),
            (Value::Str(_), Value::Str(k)) => self.segment(k),
            (other, _) => Err(SegmentError { found: other.kind() }),
        }
    }
}

/// Key equality without a call into `memcmp` for short keys (most keys are): overlapping
/// fixed-size loads compare any length from 4 to 16 bytes in two steps.
#[inline]
pub(crate) fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word =
        |x: &[u8], at: usize| x.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()).map(u64::from_ne_bytes);
    let half =
        |x: &[u8], at: usize| x.get(at..at + 4).and_then(|w| <[u8; 4]>::try_from(w).ok()).map(u32::from_ne_bytes);
    match n {
        0..=3 => a == b,
        4..=8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        9..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// A field path with an inline cache: one position hint per segment.
///
/// Records read in a loop usually have the same keys in the same order, so the position
/// where a key was found in the last object is almost always where it is in the next one.
/// Checking that position first replaces a search with one comparison. The hints are only
/// hints (relaxed atomics, so a shared program stays `Sync`): a wrong one costs a search,
/// never a wrong answer.
///
/// The hints of a path of up to [`INLINE_HINTS`] segments (nearly all of them) live in the
/// path itself, so building one allocates only its segment list (W5's compile builds eight).
#[derive(Debug, Default)]
pub struct Path {
    segs: Segments,
    hints: Hints,
}

/// How many segments' hints a [`Path`] holds without an allocation of their own.
const INLINE_HINTS: usize = 4;

#[derive(Debug)]
enum Hints {
    /// For paths of up to `INLINE_HINTS` segments (the first `segs.len()` are used).
    Inline([AtomicU32; INLINE_HINTS]),
    /// For longer ones, one per segment.
    Heap(Box<[AtomicU32]>),
}

impl Default for Hints {
    fn default() -> Hints {
        Hints::Inline(Default::default())
    }
}

/// A path's segments, shared: a chunk's path, the fast form of its template and the origin
/// of a value read there (`compile::Origin`) hold one list, allocated once.
pub type Segments = Arc<[Arc<str>]>;

/// No segments, shared (an `Arc` of nothing still allocates its counts).
pub(crate) fn no_segments() -> Segments {
    static NONE: std::sync::LazyLock<Segments> = std::sync::LazyLock::new(|| Arc::from([]));
    NONE.clone()
}

impl Path {
    /// A path over these segments.
    pub fn new(segs: Vec<Arc<str>>) -> Path {
        Path::shared(segs.into())
    }

    /// A path over segments shared with whatever else holds them.
    pub(crate) fn shared(segs: Segments) -> Path {
        let hints = if segs.len() <= INLINE_HINTS {
            Hints::Inline(Default::default())
        } else {
            Hints::Heap(segs.iter().map(|_| AtomicU32::new(0)).collect())
        };
        Path { segs, hints }
    }

    /// Its segments, to share.
    pub(crate) fn segments(&self) -> &Segments {
        &self.segs
    }

    /// One hint per segment.
    #[inline]
    fn hints(&self) -> &[AtomicU32] {
        match &self.hints {
            Hints::Inline(h) => h.get(..self.segs.len()).unwrap_or(&[]),
            Hints::Heap(h) => h,
        }
    }
}

impl std::ops::Deref for Path {
    type Target = [Arc<str>];
    fn deref(&self) -> &[Arc<str>] {
        &self.segs
    }
}

impl Clone for Path {
    fn clone(&self) -> Path {
        Path::shared(self.segs.clone())
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.segs == other.segs
    }
}

/// Looks a key up in an object. Records are small, and for a handful of short keys a
/// scan that compares lengths first beats hashing the key (measured: W1 in
/// `docs/performance.md`).
#[inline]
pub(crate) fn lookup<'m>(map: &'m Map, key: &str) -> Option<&'m Value> {
    if map.len() <= 8 {
        let kb = key.as_bytes();
        map.iter().find(|(k, _)| same_key(k.as_bytes(), kb)).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

fn parse_index(seg: &str) -> Option<usize> {
    if seg.is_empty() || !seg.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // An index too large for usize is simply out of range.
    Some(seg.parse::<usize>().unwrap_or(usize::MAX))
}

/// `file_name` (the last `/`-separated segment) or `parent_directory` (everything before
/// the last `/`, `""` when there is none) of a path.
fn file_attribute(path: &str, attr: &str) -> Value {
    let (parent, name) = match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    };
    Value::str(if attr == "file_name" { name } else { parent })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(depth: usize) -> Value {
        // `{x: 0, k0: {x: 0, k1: {… {x: 0, k<depth-1>: "end"}}}}`, each wanted key second.
        let mut v = Value::from("end");
        for i in (0..depth).rev() {
            v = Value::object_from([("x", Value::from(0)), (format!("k{i}").as_str(), v)]);
        }
        v
    }

    #[test]
    fn short_paths_keep_their_hints_inline_and_long_ones_on_the_heap() {
        let segs = |n: usize| (0..n).map(|i| Arc::from(format!("k{i}"))).collect::<Vec<Arc<str>>>();
        assert!(matches!(Path::new(segs(1)).hints, Hints::Inline(_)));
        assert!(matches!(Path::new(segs(INLINE_HINTS)).hints, Hints::Inline(_)));
        assert!(matches!(Path::new(segs(INLINE_HINTS + 1)).hints, Hints::Heap(_)));
        for n in [0, 1, INLINE_HINTS, INLINE_HINTS + 1, 9] {
            let p = Path::new(segs(n));
            assert_eq!(p.hints().len(), n);
            assert_eq!(p.len(), n);
        }
    }

    #[test]
    fn hints_learn_positions_whatever_the_path_length() {
        for n in [1, 3, INLINE_HINTS, INLINE_HINTS + 1, 7] {
            let segs: Vec<Arc<str>> = (0..n).map(|i| Arc::from(format!("k{i}"))).collect();
            let path = Path::new(segs);
            let v = record(n);
            // Every hint starts at 0 (`x`), so the first walk searches and learns position 1.
            assert!(v.follow_hints(&path).is_err(), "{n}");
            assert_eq!(v.walk_path(&path).ok().as_deref(), Some(&Value::from("end")), "{n}");
            assert!(path.hints().iter().all(|h| h.load(Relaxed) == 1), "{n}");
            assert_eq!(v.follow_hints(&path).ok(), Some(&Value::from("end")), "{n}");
            assert_eq!(path.clone().hints().len(), n);
        }
    }
}
