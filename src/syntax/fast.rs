//! The hand-written fast path: the language of `grammar/tdsl.pest`, for inputs without
//! problems.
//!
//! pest's generated parsers spend 800–1,000 instructions per token on rule bookkeeping
//! (call limits, stack snapshots, attempt tracking for error messages, the pair queue),
//! which puts a 100-character expression far beyond the compile budget of SPEC's
//! performance bar (docs/performance.md, W5). This module parses the same language by
//! recursive descent straight into the AST, with no pairs in between.
//!
//! It is an accelerator, not a second definition: it answers only when the input is free
//! of problems, and then with exactly the tree the pest grammar and the AST builder in
//! `parser.rs` build, spans and string source maps included. On anything the reference
//! path would report — a syntax error, a comparison chain, a bad escape, a number out of
//! range, a keyword used as a name, a tree deeper than the limit — it returns `None`
//! without a word, and the reference path runs and reports. So every diagnostic still
//! comes from the pest grammar and the builder, and the two paths can only disagree by
//! building different trees for a valid input or accepting an invalid one; the property
//! tests in `parser.rs` and the `parse` fuzz target compare them for exactly that.

use std::sync::Arc;

use super::ast::*;
use super::escape::{unescape, Dialect};
use super::pool::{self, Pool};
use crate::span::{SourceMap, Span, Spanned};
use crate::value::same_key;

/// Parses a whole expression, or `None` when the reference path must (see the module
/// docs). `max_depth` is the builder's limit on tree height.
pub(super) fn parse(src: &str, max_depth: usize) -> Option<Expr> {
    // The thread's name table, borrowed once for the whole parse rather than per name.
    // And the allocations of dropped trees, to build in (`pool`).
    NAMES.with(|table| {
        let mut table = table.try_borrow_mut();
        pool::with(|pool| {
            let names = table.as_deref_mut().ok().map(|t| &mut **t);
            let mut p = Parser { src, b: src.as_bytes(), pos: 0, max_depth, names, pool };
            p.ws();
            let (e, _) = p.climb(0)?;
            (p.pos == p.b.len()).then_some(e)
        })
    })
}

/// Runs `f` with a cursor over `src` at its start (the thread's name table borrowed for
/// the whole run, as [`parse`] does): the one-pass compiler's lexer
/// (`compile::compiler::direct`), which reads the same tokens as this parser.
pub(crate) fn with_cursor<R>(src: &str, f: impl FnOnce(&mut Parser<'_>) -> R) -> R {
    NAMES.with(|table| {
        let mut table = table.try_borrow_mut();
        let names = table.as_deref_mut().ok().map(|t| &mut **t);
        let mut p = Parser { src, b: src.as_bytes(), pos: 0, max_depth: 0, names, pool: None };
        f(&mut p)
    })
}

/// Parses a string that is a REF on its own (`ref_program`: whitespace around it is
/// allowed, as pest's implicit whitespace allows it), or `None` for the reference path.
pub(super) fn parse_ref(src: &str) -> Option<RefPath> {
    let mut p = Parser { src, b: src.as_bytes(), pos: 0, max_depth: 0, names: None, pool: None };
    p.ws();
    let (r, _) = p.ref_path()?;
    p.ws();
    (p.pos == p.b.len()).then_some(r)
}

pub(crate) struct Parser<'s> {
    src: &'s str,
    b: &'s [u8],
    pub(crate) pos: usize,
    max_depth: usize,
    /// The thread's table of names ([`intern`]), when it could be borrowed.
    names: Option<&'s mut [Option<Name>]>,
    /// The thread's kept allocations ([`pool`]), when they could be borrowed.
    pool: Option<&'s mut Pool>,
}

/// A node and the height of its tree, as the builder counts it.
pub(crate) type Built = Option<(Expr, usize)>;

/// Precedence of `not` and unary `-` (as in the builder).
const NOT_PRECEDENCE: usize = 3;
const NEG_PRECEDENCE: usize = 7;

/// How many names [`intern`] keeps per thread (in sets of two), and the longest it keeps.
const NAME_SLOTS: usize = 128;
const NAME_KEPT_LEN: usize = 32;

thread_local! {
    /// Names made recently on this thread, in sets of two chosen by a hash of their text.
    /// On the heap, made at the thread's first parse: a table held in the thread-local
    /// block itself (2 KiB) outgrows the static TLS that a library loaded with `dlopen`
    /// may use, and Python could no longer import the extension module (`cannot allocate
    /// memory in static TLS block`).
    static NAMES: std::cell::RefCell<Box<[Option<Name>]>> =
        std::cell::RefCell::new(vec![None; NAME_SLOTS].into_boxed_slice());
}

/// The name `text`, shared with the last one made with the same text on this thread when
/// it is still cached.
///
/// Expressions repeat their names (`item`, `array`, a record's keys), and so do the
/// expressions a program compiles one after another (its template strings, the next
/// transform of a plan): cloning a shared name is one reference-count increment, making
/// one is an allocation and, later, a free. The cache is a fixed table of `NAME_SLOTS`
/// short names per thread, two-way set-associative (a name is equal to its text whichever allocation holds it,
/// so sharing changes nothing but the allocation count).
pub(crate) fn intern(text: &str) -> Name {
    NAMES.with(|names| match names.try_borrow_mut() {
        Ok(mut names) => intern_in(&mut names, text),
        Err(_) => Arc::from(text),
    })
}

/// [`intern`] with the thread's table at hand.
fn intern_in(names: &mut [Option<Name>], text: &str) -> Name {
    let b = text.as_bytes();
    if b.is_empty() || b.len() > NAME_KEPT_LEN {
        return Arc::from(text);
    }
    // The length and three of the bytes, mixed: no loop and no copy, and different enough
    // for the handful of names an expression has.
    let n = b.len();
    let h = (n as u64 | u64::from(b[0]) << 8 | u64::from(b[n - 1]) << 16 | u64::from(b[n / 2]) << 24)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // Two ways per set: a name and the one it would have evicted are both kept.
    let set = (h >> 58) as usize % (NAME_SLOTS / 2) * 2;
    for way in set..set + 2 {
        // Compared without a call into `memcmp` (names are short).
        if let Some(n) = names.get(way).and_then(Option::as_ref).filter(|n| same_key(n.as_bytes(), b)) {
            return n.clone();
        }
    }
    let n: Name = Arc::from(text);
    if let Some(pair) = names.get_mut(set..set + 2) {
        pair.swap(0, 1);
        pair[0] = Some(n.clone());
    }
    n
}

/// `[A-Za-z0-9_]`, by byte: one load where the ranges take several comparisons (names are
/// most of an expression's text).
static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_';
        c += 1;
    }
    t
};

fn is_ident_char(c: u8) -> bool {
    IDENT[usize::from(c)]
}

/// The length of the run of name characters (`[A-Za-z0-9_]`) that `b` starts with: one
/// slice scan, where a cursor moved a character at a time checked its bounds per step.
fn ident_run(b: &[u8]) -> usize {
    b.iter().position(|&c| !is_ident_char(c)).unwrap_or(b.len())
}

pub(crate) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

impl<'s> Parser<'s> {
    pub(crate) fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    pub(crate) fn at(&self, i: usize) -> Option<u8> {
        self.b.get(self.pos + i).copied()
    }

    /// `Box::new(e)`, in a kept box when there is one.
    fn boxed(&mut self, e: Expr) -> Box<Expr> {
        match self.pool.as_deref_mut() {
            Some(pool) => pool.boxed(e),
            None => Box::new(e),
        }
    }

    /// `Box::new([a, b])`, in a kept box when there is one.
    fn pair(&mut self, a: Expr, b: Expr) -> Box<[Expr; 2]> {
        match self.pool.as_deref_mut() {
            Some(pool) => pool.pair(a, b),
            None => Box::new([a, b]),
        }
    }

    /// Skips `WHITESPACE*`: space, tab, line feed, carriage return.
    pub(crate) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The text from `start` to the cursor as a name, shared with an earlier equal one.
    fn name(&mut self, start: usize) -> Spanned<Name> {
        let text = &self.src[start..self.pos];
        let span = Span::new(start, self.pos);
        let name = match self.names.as_deref_mut() {
            Some(table) => intern_in(table, text),
            None => intern(text),
        };
        Spanned::new(name, span)
    }

    /// Consumes `c` and the whitespace after it, or fails.
    pub(crate) fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| {
            self.pos += 1;
            self.ws();
        })
    }

    /// Whether the keyword `kw` is at the cursor, not followed by a name character.
    pub(crate) fn keyword(&self, kw: &[u8]) -> bool {
        self.b[self.pos..].starts_with(kw) && !self.at(kw.len()).is_some_and(is_ident_char)
    }

    /// A node of the given height, or `None` past the limit (the builder reports it).
    fn node(&self, kind: ExprKind, span: Span, height: usize) -> Built {
        (height <= self.max_depth.saturating_mul(super::CHAIN_LEVEL)).then_some((Expr::new(kind, span), height))
    }

    /// `ident`, without the whitespace after it.
    pub(crate) fn ident(&mut self) -> Option<Spanned<Name>> {
        let start = self.pos;
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        self.pos += 1 + ident_run(&self.b[self.pos + 1..]);
        Some(self.name(start))
    }

    /// Operands and infix operators binding at least as tightly as `min` (the builder's
    /// precedence climbing, over text instead of pairs).
    fn climb(&mut self, min: usize) -> Built {
        let (mut lhs, mut height) = self.operand()?;
        let mut lhs_is_comparison = false;
        while let Some((op, len)) = self.infix() {
            let prec = usize::from(op.precedence());
            if prec < min {
                break;
            }
            self.pos += len;
            self.ws();
            let (rhs, rh) = self.climb(prec + 1)?;
            if op.is_comparison() && lhs_is_comparison {
                return None; // a comparison chain: the builder reports it
            }
            lhs_is_comparison = op.is_comparison();
            let span = lhs.span.to(rhs.span);
            let kind = ExprKind::Binary(op, self.pair(lhs, rhs));
            (lhs, height) = self.node(kind, span, (height + 1).max(rh + super::CHAIN_LEVEL))?;
        }
        Some((lhs, height))
    }

    /// The infix operator at the cursor and its length in bytes.
    pub(crate) fn infix(&self) -> Option<(BinaryOp, usize)> {
        let two = |op| Some((op, 2));
        let one = |op| Some((op, 1));
        match (self.peek()?, self.at(1)) {
            (b'|', Some(b'|')) => two(BinaryOp::Or),
            (b'&', Some(b'&')) => two(BinaryOp::And),
            (b'o', _) if self.keyword(b"or") => two(BinaryOp::Or),
            (b'a', _) if self.keyword(b"and") => Some((BinaryOp::And, 3)),
            (b'=', Some(b'=')) => two(BinaryOp::Eq),
            (b'!', Some(b'=')) => two(BinaryOp::Ne),
            (b'>', Some(b'=')) => two(BinaryOp::Ge),
            (b'<', Some(b'=')) => two(BinaryOp::Le),
            (b'>', _) => one(BinaryOp::Gt),
            (b'<', _) => one(BinaryOp::Lt),
            (b'+', _) => one(BinaryOp::Add),
            (b'-', _) => one(BinaryOp::Sub),
            (b'*', _) => one(BinaryOp::Mul),
            (b'/', _) => one(BinaryOp::Div),
            (b'%', _) => one(BinaryOp::Rem),
            _ => None,
        }
    }

    /// Prefix operators, a primary, postfix operators; the whitespace after it.
    fn operand(&mut self) -> Built {
        let start = self.pos;
        let prefix = match self.peek()? {
            b'!' if self.at(1) != Some(b'=') => Some((UnaryOp::Not, NOT_PRECEDENCE, 1)),
            b'n' if self.keyword(b"not") => Some((UnaryOp::Not, NOT_PRECEDENCE, 3)),
            b'-' => Some((UnaryOp::Neg, NEG_PRECEDENCE, 1)),
            _ => None,
        };
        if let Some((op, prec, len)) = prefix {
            self.pos += len;
            self.ws();
            let (operand, h) = self.climb(prec)?;
            let span = Span::new(start, operand.span.end as usize);
            let kind = ExprKind::Unary(op, self.boxed(operand));
            return self.node(kind, span, super::CHAIN_LEVEL + h);
        }
        let (mut acc, mut height) = self.primary()?;
        self.ws();
        loop {
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    self.ws();
                    let seg = self.segment()?;
                    let span = acc.span.to(seg.span);
                    let kind = ExprKind::Field(self.boxed(acc), seg);
                    (acc, height) = self.node(kind, span, height + super::CHAIN_LEVEL)?;
                }
                Some(b'[') => {
                    self.pos += 1;
                    self.ws();
                    let (key, kh) = self.climb(0)?;
                    if self.peek() != Some(b']') {
                        return None;
                    }
                    self.pos += 1;
                    let span = Span::new(acc.span.start as usize, self.pos);
                    let kind = ExprKind::Index(self.pair(acc, key));
                    (acc, height) = self.node(kind, span, super::CHAIN_LEVEL + height.max(kh))?;
                }
                _ => return Some((acc, height)),
            }
            self.ws();
        }
    }

    /// A field segment: a name (keywords allowed) or digits.
    pub(crate) fn segment(&mut self) -> Option<Spanned<Name>> {
        if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            let start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            return Some(self.name(start));
        }
        self.ident()
    }

    /// A primary, without the whitespace after it.
    fn primary(&mut self) -> Built {
        let start = self.pos;
        match self.peek()? {
            b'"' | b'\'' => Some((self.string()?, 1)),
            b'0'..=b'9' => self.number(),
            // Not a REF after all (`REF:1`): pest reads the word `REF`, and the `:` after it
            // is an error, so `None` either way.
            b'R' if self.b[self.pos..].starts_with(b"REF:") => {
                // Too deep a REF: the reference path reports it.
                self.ref_path()
                    .filter(|(r, _)| r.segments.len() <= super::ast::MAX_REF_SEGMENTS)
                    .map(|(r, span)| (Expr::new(ExprKind::Ref(r), span), 1))
            }
            c if is_ident_start(c) => self.word(),
            b'[' => {
                self.pos += 1;
                self.ws();
                let mut items = self.pool.as_deref_mut().map(Pool::items).unwrap_or_default();
                let height = self.sequence(b']', |p| {
                    let (e, h) = p.climb(0)?;
                    items.push(e);
                    Some(h)
                })?;
                self.node(ExprKind::List(items), Span::new(start, self.pos), height + super::CHAIN_LEVEL)
            }
            b'{' => {
                self.pos += 1;
                self.ws();
                let mut entries = self.pool.as_deref_mut().map(Pool::entries).unwrap_or_default();
                let height = self.sequence(b'}', |p| {
                    let key = match p.peek()? {
                        b'"' | b'\'' => {
                            let s = p.string()?;
                            match s.kind {
                                ExprKind::Str(lit) => Spanned::new(lit.value, s.span),
                                _ => return None,
                            }
                        }
                        _ => p.ident()?,
                    };
                    p.ws();
                    p.expect(b':')?;
                    let (e, h) = p.climb(0)?;
                    entries.push((key, e));
                    Some(h)
                })?;
                self.node(ExprKind::Object(entries), Span::new(start, self.pos), height + super::CHAIN_LEVEL)
            }
            b'(' => {
                self.pos += 1;
                self.ws();
                let (mut e, h) = self.climb(0)?;
                if self.peek() != Some(b')') {
                    return None;
                }
                self.pos += 1;
                // Parentheses are part of the node's span, as in the builder.
                e.span = Span::new(start, self.pos);
                Some((e, h))
            }
            _ => None,
        }
    }

    /// `item ("," item)* ","?` up to `close`, the cursor after the opening bracket and its
    /// whitespace; leaves the cursor just after `close`. Returns the tallest item's height.
    fn sequence(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<usize>) -> Option<usize> {
        let mut height = 0;
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Some(height);
            }
            height = height.max(item(self)?);
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                c if c == close => {
                    self.pos += 1;
                    return Some(height);
                }
                _ => return None,
            }
        }
    }

    /// A name, a keyword literal or a call.
    fn word(&mut self) -> Built {
        let ident = self.ident()?;
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.ws();
            let mut args = self.pool.as_deref_mut().map(Pool::args).unwrap_or_default();
            let height = self.sequence(b')', |p| {
                let keyword = p.kwarg();
                let (value, h) = p.climb(0)?;
                args.push(Arg { keyword, value });
                Some(h)
            })?;
            let span = Span::new(ident.span.start as usize, self.pos);
            return self.node(ExprKind::Call(Call { name: ident, args }), span, height + super::CHAIN_LEVEL);
        }
        let kind = match &*ident.node {
            "true" => ExprKind::Bool(true),
            "false" => ExprKind::Bool(false),
            "null" => ExprKind::Null,
            "and" | "or" | "not" => return None, // a keyword as a name: the builder reports it
            _ => ExprKind::Name(ident.node),
        };
        Some((Expr::new(kind, ident.span), 1))
    }

    /// `name =` (not `==`) at the cursor: consumes it and returns the keyword; otherwise
    /// leaves the cursor where it was.
    pub(crate) fn kwarg(&mut self) -> Option<Spanned<Name>> {
        let (start, end) = self.kwarg_span()?;
        let after = self.pos;
        self.pos = end;
        let keyword = self.name(start);
        self.pos = after;
        Some(keyword)
    }

    /// [`Parser::kwarg`] without making the name: where the keyword starts and ends.
    pub(crate) fn kwarg_span(&mut self) -> Option<(usize, usize)> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        let end = start + 1 + ident_run(&self.b[start + 1..]);
        let mut i = end;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(i) {
            i += 1;
        }
        if self.b.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(i) {
            i += 1;
        }
        if self.b.get(i) == Some(&b'=') {
            return None;
        }
        self.pos = i;
        Some((start, end))
    }

    /// [`Parser::ident`] without making the name: where it starts and ends.
    pub(crate) fn ident_span(&mut self) -> Option<(usize, usize)> {
        let start = self.pos;
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        self.pos += 1 + ident_run(&self.b[self.pos + 1..]);
        Some((start, self.pos))
    }

    /// The text from `start` to `end` as a name, shared with an earlier equal one.
    pub(crate) fn name_at(&mut self, start: usize, end: usize) -> Name {
        let text = &self.src[start..end];
        match self.names.as_deref_mut() {
            Some(table) => intern_in(table, text),
            None => intern(text),
        }
    }

    /// A number: an integer when it has no fraction or exponent and fits in `i64`.
    pub(crate) fn number(&mut self) -> Built {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.pos += 1;
            }
            p.pos > from
        };
        digits(self);
        let whole = self.pos;
        if self.peek() == Some(b'.') && self.at(1).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
            digits(self);
        }
        if let Some(b'e' | b'E') = self.peek() {
            let mark = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !digits(self) {
                self.pos = mark;
            }
        }
        if self.peek().is_some_and(is_ident_char) {
            return None;
        }
        let text = &self.src[start..self.pos];
        let span = Span::new(start, self.pos);
        // An integer when it is written as one and fits; else a float (read only then:
        // reading a float costs several times what reading an integer does).
        if self.pos == whole {
            // Digits only: up to 18 of them fit in `i64` whatever they are, folded here
            // without `str::parse`'s checks; more are read by it (and may not fit).
            let int = match text.len() {
                ..=18 => Some(text.bytes().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))),
                _ => text.parse::<i64>().ok(),
            };
            if let Some(i) = int {
                return Some((Expr::new(ExprKind::Int(i), span), 1));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Some((Expr::new(ExprKind::Float(f), span), 1)),
            _ => None, // out of range: the builder reports it
        }
    }

    /// A string literal, decoded, without the whitespace after it.
    fn string(&mut self) -> Option<Expr> {
        let start = self.pos;
        let (inner, end, _) = self.string_raw()?;
        let raw = &self.src[inner..end];
        let (value, map) = if raw.contains('\\') {
            let (text, map, errors) = unescape(raw, inner, Dialect::Expression);
            if !errors.is_empty() {
                return None; // a bad escape: the builder reports it
            }
            (Arc::from(text), map)
        } else {
            // Nothing to decode: the text as written, and the map `unescape` would make.
            let mut map = SourceMap::default();
            if !raw.is_empty() {
                map.push(0, inner);
            }
            map.finish(raw.len(), inner + raw.len());
            (Arc::from(raw), map)
        };
        let span = Span::new(start, self.pos);
        Some(Expr::new(ExprKind::Str(StrLit { value, map }), span))
    }

    /// A string literal's text as written, without the whitespace after it: where its
    /// contents start and end (before the closing quote), and whether they hold a `\\`
    /// (an escape to decode). The cursor ends after the closing quote.
    pub(crate) fn string_raw(&mut self) -> Option<(usize, usize, bool)> {
        let quote = self.peek()?;
        self.pos += 1;
        let inner = self.pos;
        let mut escapes = false;
        loop {
            let rest = &self.b[self.pos..];
            // A condition string is most of a call's text: found by the vectorised search.
            let n = memchr::memchr2(quote, b'\\', rest)?;
            self.pos += n;
            if self.b[self.pos] == quote {
                break;
            }
            escapes = true;
            // A backslash and the character after it, whatever it is.
            let escaped = self.src.get(self.pos + 1..)?.chars().next()?;
            self.pos += 1 + escaped.len_utf8();
        }
        let end = self.pos;
        self.pos += 1;
        Some((inner, end, escapes))
    }

    /// The text, the cursor at `start`, ending at `end` (a template string's contents, read
    /// in place: spans stay the program's); what [`Parser::restore`] takes back.
    pub(crate) fn narrow(&mut self, start: usize, end: usize) -> &'s str {
        let whole = self.src;
        self.src = &whole[..end];
        self.b = self.src.as_bytes();
        self.pos = start;
        whole
    }

    /// The whole text again, after [`Parser::narrow`], the cursor at `pos`.
    pub(crate) fn restore(&mut self, whole: &'s str, pos: usize) {
        self.src = whole;
        self.b = whole.as_bytes();
        self.pos = pos;
    }

    /// The text from `start` to `end`.
    pub(crate) fn text(&self, start: usize, end: usize) -> &'s str {
        &self.src[start..end]
    }

    /// The byte at `i`, if the text has one.
    pub(crate) fn byte(&self, i: usize) -> Option<u8> {
        self.b.get(i).copied()
    }

    /// Whether the text at the cursor starts with `prefix`.
    pub(crate) fn starts_with(&self, prefix: &[u8]) -> bool {
        self.b.get(self.pos..).is_some_and(|rest| rest.starts_with(prefix))
    }

    /// Whether the cursor is at the end of the text.
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.b.len()
    }

    /// `REF:context.segment…`, without the whitespace after it; the REF and its span.
    pub(crate) fn ref_path(&mut self) -> Option<(RefPath, Span)> {
        let start = self.pos;
        if !self.b[self.pos..].starts_with(b"REF:") {
            return None;
        }
        self.pos += 4;
        let context = self.ref_segment(false)?;
        let mut segments = Vec::new();
        while self.peek() == Some(b'.') {
            let mark = self.pos;
            self.pos += 1;
            match self.ref_segment(true) {
                Some(seg) => segments.push(seg),
                None => {
                    // The `.` is not part of the REF (pest backtracks out of it).
                    self.pos = mark;
                    break;
                }
            }
        }
        Some((RefPath { context, segments }, Span::new(start, self.pos)))
    }

    /// A REF name (`[A-Za-z_][A-Za-z0-9_-]*`) or, when `digits` allows, a run of digits.
    fn ref_segment(&mut self, digits: bool) -> Option<Spanned<Name>> {
        let start = self.pos;
        let first = self.peek()?;
        if is_ident_start(first) {
            self.pos += 1;
            while self.peek().is_some_and(|c| is_ident_char(c) || c == b'-') {
                self.pos += 1;
            }
        } else if digits && first.is_ascii_digit() {
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        } else {
            return None;
        }
        Some(self.name(start))
    }
}
