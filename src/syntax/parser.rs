//! pest pairs → AST.
//!
//! Parsing never fails: it returns an expression (with [`ExprKind::Error`] standing in for
//! what did not parse) and every diagnostic found. pest stops at the first syntax error, so
//! the grammar is deliberately loose where a precise message is more useful than a generic
//! "expected …": comparison chains and string escapes are accepted by the grammar and
//! reported here, all of them in one pass. Nesting depth is checked before pest runs, so
//! deeply nested input is a clean error instead of a stack overflow.

use std::sync::Arc;

use pest::iterators::{Pair, Pairs};
use pest::Parser as _;

use super::ast::*;
use super::escape::{unescape, Dialect};
use super::fast;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::{Span, Spanned};

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/tdsl.pest"]
struct Grammar;

/// The outcome of parsing: an expression and every problem found.
#[derive(Clone, Debug)]
pub struct Parse {
    /// The expression; parts that did not parse are [`ExprKind::Error`].
    pub expr: Expr,
    /// Every problem found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Nesting deeper than this is refused before parsing (SPEC §4.8).
pub const DEFAULT_MAX_NESTING: usize = 128;

/// The most nesting any limit can allow (see [`parse_with_limit`]).
pub const MAX_NESTING_CAP: usize = 192;

/// Parses an expression with the default nesting limit.
pub fn parse(src: &str) -> Parse {
    parse_with_limit(src, DEFAULT_MAX_NESTING)
}

/// Parses an expression, refusing nesting deeper than `max_nesting`.
pub fn parse_with_limit(src: &str, max_nesting: usize) -> Parse {
    // Parsing, checking and compiling recurse once per level: whatever the host asks for,
    // nesting stays where every stage fits in a 2 MiB thread stack even in a debug build
    // (measured: about 6.5 KiB per level there; 300 levels overflow).
    let max_nesting = max_nesting.min(MAX_NESTING_CAP);
    if let Some(d) = check_nesting(src, max_nesting) {
        return Parse { expr: Expr::new(ExprKind::Error, Span::new(0, src.len())), diagnostics: vec![d] };
    }
    // The hand-written parser answers for input without problems; the pest grammar and the
    // builder below parse everything else and report every problem (see `fast.rs`).
    if let Some(expr) = fast::parse(src, max_nesting) {
        return Parse { expr, diagnostics: Vec::new() };
    }
    reference(src, max_nesting)
}

/// The reference path: the pest grammar's `program`, then the AST builder. The nesting
/// check has been done.
fn reference(src: &str, max_nesting: usize) -> Parse {
    let whole = Span::new(0, src.len());
    match Grammar::parse(Rule::program, src) {
        Ok(mut pairs) => {
            let mut b = Builder { diagnostics: Vec::new(), max_depth: max_nesting, too_deep: false };
            let program = pairs.next();
            let expr = program
                .and_then(|p| p.into_inner().next())
                .map(|p| b.expr(p).0)
                .unwrap_or_else(|| Expr::new(ExprKind::Error, whole));
            b.diagnostics.sort_by_key(|d| d.span.start);
            Parse { expr, diagnostics: b.diagnostics }
        }
        Err(e) => Parse { expr: Expr::new(ExprKind::Error, whole), diagnostics: vec![syntax_error(src, &e)] },
    }
}

/// Parses a string that is a REF on its own (`REF:step.items.0`), as found in JSON values.
/// A REF of more than [`MAX_REF_SEGMENTS`] segments is malformed.
pub fn parse_ref(src: &str) -> Result<RefPath, Diagnostic> {
    parse_ref_unbounded(src).and_then(|r| match r.segments.get(MAX_REF_SEGMENTS) {
        Some(extra) => Err(Diagnostic::new(
            Code::InvalidRef,
            extra.span,
            format!("the REF has {} segments, more than {MAX_REF_SEGMENTS}", r.segments.len()),
        )
        .with_label("too deep")
        .with_help("read a deep value in steps: give the intermediate value a name with a transform, then REF that")),
        None => Ok(r),
    })
}

fn parse_ref_unbounded(src: &str) -> Result<RefPath, Diagnostic> {
    if let Some(r) = fast::parse_ref(src) {
        return Ok(r);
    }
    match Grammar::parse(Rule::ref_program, src) {
        Ok(mut pairs) => {
            let pair = pairs.next().and_then(|p| p.into_inner().next());
            match pair {
                Some(p) => Ok(ref_path(p)),
                None => Err(Diagnostic::new(Code::InvalidRef, Span::new(0, src.len()), "empty REF")),
            }
        }
        Err(e) => {
            let mut d = syntax_error(src, &e);
            d.code = Code::InvalidRef;
            d.message = format!("malformed REF `{src}`: {}", d.message);
            Err(d.with_help(
                "a REF is `REF:<arguments|response|step_id>` followed by `.segment`s (names, indices, `length`, `first`, `last`), with no spaces",
            ))
        }
    }
}

/// Finds the first place where brackets or prefix operators nest deeper than `max`.
pub(crate) fn check_nesting(src: &str, max: usize) -> Option<Diagnostic> {
    let bytes = src.as_bytes();
    // Every level counted below is one of these bytes, so fewer of them than `max` cannot
    // nest too deeply; counting them is a vectorised pass, several times cheaper than the
    // scan (measured: docs/performance.md, W5); a text no longer than `max` has no more of
    // them than that, so it is not even counted (a template string usually).
    if bytes.len() <= max || count_nesting_bytes(bytes) <= max {
        return None;
    }
    let mut depth = 0usize;
    let mut prefix_run = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' | b'\'' => {
                // Skip the string; an unterminated one is pest's to report.
                i += 1;
                while i < bytes.len() && bytes[i] != b {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                prefix_run = 0;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth + prefix_run > max {
                    return Some(too_deep(i, max));
                }
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                prefix_run = 0;
            }
            b'-' | b'!' if bytes.get(i + 1) != Some(&b'=') => {
                prefix_run += 1;
                if depth + prefix_run > max {
                    return Some(too_deep(i, max));
                }
            }
            b'n' if src[i..].starts_with("not")
                && !bytes.get(i + 3).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                prefix_run += 1;
                if depth + prefix_run > max {
                    return Some(too_deep(i, max));
                }
                i += 2;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => prefix_run = 0,
        }
        i += 1;
    }
    None
}

/// How many bytes are `(`, `[`, `{`, `-`, `!` or `n`: written as byte-wide sums over short
/// chunks so that the compiler vectorises it.
fn count_nesting_bytes(bytes: &[u8]) -> usize {
    let hit = |b: u8| {
        u8::from(b == b'(')
            | u8::from(b == b'[')
            | u8::from(b == b'{')
            | u8::from(b == b'-')
            | u8::from(b == b'!')
            | u8::from(b == b'n')
    };
    bytes.chunks(255).map(|c| usize::from(c.iter().fold(0u8, |n, &b| n.wrapping_add(hit(b))))).sum()
}

fn too_deep(at: usize, max: usize) -> Diagnostic {
    Diagnostic::new(Code::NestingTooDeep, Span::new(at, at + 1), format!("expression nested deeper than {max} levels"))
        .with_label("this level is too deep")
        .with_help("split the expression into several transforms, or raise the nesting limit")
}

/// A user-facing name for a grammar rule, used in "expected …" messages.
fn rule_name(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of input",
        Rule::expr => "an expression",
        Rule::or_op => "`or`",
        Rule::and_op => "`and`",
        Rule::not_op => "`not`",
        Rule::cmp_op => "a comparison operator",
        Rule::sum_op => "`+` or `-`",
        Rule::prod_op => "`*`, `/` or `%`",
        Rule::neg_op => "`-`",
        Rule::field => "`.`",
        Rule::segment => "a field name or index",
        Rule::index => "`[`",
        Rule::word => "a name or a call",
        Rule::args => "`(`",
        Rule::kwarg => "a keyword argument",
        Rule::list => "a list",
        Rule::object => "an object",
        Rule::entry => "an object entry `key: value`",
        Rule::ident => "a name",
        Rule::ref_path | Rule::ref_program => "a REF path",
        Rule::ref_context => "a REF context (`arguments`, `response` or a step id)",
        Rule::ref_segment | Rule::ref_ident => "a REF segment",
        Rule::number => "a number",
        Rule::string | Rule::dq_inner | Rule::sq_inner => "a string",
        Rule::paren => "`(`",
        Rule::exponent => "an exponent",
        Rule::ident_char => "a name character",
        Rule::program
        | Rule::WHITESPACE
        | Rule::primary
        | Rule::arg
        | Rule::obj_key
        | Rule::operand
        | Rule::prefix_op
        | Rule::postfix_op
        | Rule::infix => "an expression",
    }
}

fn syntax_error(src: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let found = src[pos..].chars().next();
    let end = pos + found.map_or(0, char::len_utf8);
    let found_text = match found {
        None => "end of input".to_string(),
        Some(c) => format!("`{}`", token_at(src, pos).unwrap_or_else(|| c.to_string())),
    };
    let expected = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            // A `(` after a name would make it a call; listing it is noise, like the operators.
            let operators = [
                Rule::or_op,
                Rule::and_op,
                Rule::cmp_op,
                Rule::sum_op,
                Rule::prod_op,
                Rule::field,
                Rule::index,
                Rule::args,
            ];
            // Anything that can start an operand is, to a reader, "an expression".
            let operand_starts = [
                Rule::paren,
                Rule::neg_op,
                Rule::not_op,
                Rule::ref_path,
                Rule::list,
                Rule::object,
                Rule::word,
                Rule::number,
                Rule::string,
                Rule::primary,
                Rule::operand,
                Rule::prefix_op,
                Rule::expr,
                Rule::ident,
            ];
            let mut names: Vec<&str> = positives
                .iter()
                .map(|r| {
                    if operators.contains(r) {
                        "an operator"
                    } else if operand_starts.contains(r) {
                        "an expression"
                    } else {
                        rule_name(*r)
                    }
                })
                .collect();
            names.sort_unstable();
            names.dedup();
            names
        }
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    let expected_text = match expected.as_slice() {
        [] => String::from("something else"),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {}", rest.join(", "), last),
    };
    let mut d =
        Diagnostic::new(Code::Syntax, Span::new(pos, end), format!("expected {expected_text}, found {found_text}"))
            .with_label(format!("expected {expected_text}"));
    if let Some(help) = super::foreign::syntax(src).or_else(|| syntax_help(src, pos)) {
        d = d.with_help(help);
    }
    d
}

/// The word or symbol at `pos`, for "found …".
fn token_at(src: &str, pos: usize) -> Option<String> {
    let rest = &src[pos..];
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    if !word.is_empty() {
        return Some(word);
    }
    rest.chars().next().map(|c| c.to_string())
}

/// A hint for common slips.
fn syntax_help(src: &str, pos: usize) -> Option<String> {
    let before = src[..pos].trim_end();
    let rest = &src[pos..];
    if rest.is_empty() {
        let opens = src.matches('(').count() as i64 - src.matches(')').count() as i64;
        if opens > 0 {
            return Some("a `(` is never closed".into());
        }
        let opens = src.matches('[').count() as i64 - src.matches(']').count() as i64;
        if opens > 0 {
            return Some("a `[` is never closed".into());
        }
        let quotes = src.matches('"').count() - src.matches("\\\"").count();
        if quotes % 2 == 1 {
            return Some("a string is never closed: add the closing `\"`".into());
        }
    }
    if rest.starts_with('=') && !rest.starts_with("==") {
        return Some("to compare, write `==`; `=` only names a keyword argument inside a call".into());
    }
    if before.ends_with(',') && (rest.starts_with(')') || rest.starts_with(']')) {
        return None;
    }
    for kw in ["and", "or", "not", "true", "false", "null"] {
        if rest.starts_with(kw) && before.ends_with(['(', ',']) && rest[kw.len()..].trim_start().starts_with('=') {
            return Some(format!("`{kw}` is a keyword and cannot be a name"));
        }
    }
    None
}

/// The children of an `expr` pair, operand parts and operators in one flat stream.
struct Items<'i>(std::iter::Peekable<Pairs<'i, Rule>>);

impl<'i> Items<'i> {
    fn new(expr: Pair<'i, Rule>) -> Items<'i> {
        Items(expr.into_inner().peekable())
    }

    /// The next item, left in the stream.
    fn peek(&mut self) -> Option<&Pair<'i, Rule>> {
        self.0.peek()
    }

    /// The next item, taken from the stream.
    fn advance(&mut self) -> Option<Pair<'i, Rule>> {
        self.0.next()
    }
}

struct Builder {
    diagnostics: Vec<Diagnostic>,
    max_depth: usize,
    too_deep: bool,
}

fn span_of(p: &Pair<'_, Rule>) -> Span {
    Span::new(p.as_span().start(), p.as_span().end())
}

fn name_of(p: &Pair<'_, Rule>) -> Spanned<Name> {
    Spanned::new(Arc::from(p.as_str()), span_of(p))
}

/// A built node and the height of its tree, so no tree grows deeper than the limit (long
/// operator chains nest without brackets).
type Built = (Expr, usize);

/// How tightly `not` and unary `-` take their operand: `not` looser than comparisons
/// (`not a == b` is `not (a == b)`), `-` tighter than `*`.
const NOT_PRECEDENCE: usize = 3;
const NEG_PRECEDENCE: usize = 7;

impl Builder {
    /// Makes a node of the given height, or an error node when it is too deep.
    fn node(&mut self, kind: ExprKind, span: Span, height: usize) -> Built {
        if height > self.max_depth.saturating_mul(super::CHAIN_LEVEL) {
            if !self.too_deep {
                self.too_deep = true;
                self.diagnostics.push(too_deep(span.start as usize, self.max_depth));
            }
            return (Expr::new(ExprKind::Error, span), 0);
        }
        (Expr::new(kind, span), height)
    }

    /// Builds an `expr` pair: a flat sequence of operands and operators, folded by
    /// precedence climbing.
    fn expr(&mut self, p: Pair<'_, Rule>) -> Built {
        self.climb(&mut Items::new(p), 0)
    }

    /// Parses operands and infix operators from `items` whose operators bind at least as
    /// tightly as `min`.
    fn climb(&mut self, items: &mut Items<'_>, min: usize) -> Built {
        let (mut lhs, mut height) = self.operand(items);
        let mut lhs_is_comparison = false;
        while let Some(op_pair) = items.peek() {
            if !matches!(op_pair.as_rule(), Rule::or_op | Rule::and_op | Rule::cmp_op | Rule::sum_op | Rule::prod_op) {
                break;
            }
            let op = binary_op(op_pair.as_str());
            let prec = usize::from(op.precedence());
            if prec < min {
                break;
            }
            let op_span = span_of(op_pair);
            items.advance();
            // Left-associative: the right side takes only tighter operators.
            let (rhs, rh) = self.climb(items, prec + 1);
            let span = lhs.span.to(rhs.span);
            if op.is_comparison() && lhs_is_comparison {
                self.diagnostics.push(
                    Diagnostic::new(Code::ChainedComparison, op_span, "comparison operators cannot be chained")
                        .with_label("second comparison")
                        .with_secondary(lhs.span, "this is already a comparison")
                        .with_help("combine the comparisons with `and`: `a < b and b < c`"),
                );
                // The chain is an error anyway: keep the tree shallow.
                lhs = Expr::new(ExprKind::Error, span);
                height = 0;
                lhs_is_comparison = false;
                continue;
            }
            lhs_is_comparison = op.is_comparison();
            (lhs, height) =
                self.node(ExprKind::Binary(op, Box::new([lhs, rhs])), span, (height + 1).max(rh + super::CHAIN_LEVEL));
        }
        (lhs, height)
    }

    /// One operand: prefix operators, a primary, postfix operators.
    fn operand(&mut self, items: &mut Items<'_>) -> Built {
        let Some(first) = items.advance() else { return (Expr::new(ExprKind::Error, Span::default()), 0) };
        match first.as_rule() {
            rule @ (Rule::not_op | Rule::neg_op) => {
                let start = span_of(&first).start as usize;
                let (op, prec) =
                    if rule == Rule::neg_op { (UnaryOp::Neg, NEG_PRECEDENCE) } else { (UnaryOp::Not, NOT_PRECEDENCE) };
                let (operand, h) = self.climb(items, prec);
                let span = Span::new(start, operand.span.end as usize);
                self.node(ExprKind::Unary(op, Box::new(operand)), span, super::CHAIN_LEVEL + h)
            }
            _ => {
                let (mut acc, mut height) = self.primary(first);
                while let Some(post) = items.peek() {
                    let rule = post.as_rule();
                    if rule != Rule::field && rule != Rule::index {
                        break;
                    }
                    let span = acc.span.to(span_of(post));
                    let Some(x) = items.advance().and_then(|post| post.into_inner().next()) else { continue };
                    (acc, height) = if rule == Rule::field {
                        self.node(ExprKind::Field(Box::new(acc), name_of(&x)), span, height + super::CHAIN_LEVEL)
                    } else {
                        let (key, kh) = self.expr(x);
                        self.node(ExprKind::Index(Box::new([acc, key])), span, super::CHAIN_LEVEL + height.max(kh))
                    };
                }
                (acc, height)
            }
        }
    }

    /// A primary: literal, REF, call, name, list, object or parenthesised expression.
    fn primary(&mut self, p: Pair<'_, Rule>) -> Built {
        let span = span_of(&p);
        match p.as_rule() {
            Rule::paren => match p.into_inner().next() {
                Some(inner) => {
                    let (mut e, h) = self.expr(inner);
                    // Parentheses are part of the node's span, so `(a + b).x` underlines them.
                    e.span = span;
                    (e, h)
                }
                None => (Expr::new(ExprKind::Error, span), 0),
            },
            Rule::number => {
                let text = p.as_str();
                let integral = !text.contains(['.', 'e', 'E']);
                match (integral, text.parse::<i64>(), text.parse::<f64>()) {
                    (true, Ok(i), _) => (Expr::new(ExprKind::Int(i), span), 1),
                    // Beyond i64, or with a fraction or exponent: a float (SPEC §1).
                    (_, _, Ok(f)) if f.is_finite() => (Expr::new(ExprKind::Float(f), span), 1),
                    _ => {
                        self.diagnostics.push(
                            Diagnostic::new(Code::InvalidNumber, span, format!("number `{text}` is out of range"))
                                .with_label("not a finite 64-bit float"),
                        );
                        (Expr::new(ExprKind::Error, span), 0)
                    }
                }
            }
            Rule::string => (self.string(p), 1),
            Rule::ref_path => {
                let r = ref_path(p);
                match r.segments.get(MAX_REF_SEGMENTS) {
                    Some(extra) => {
                        self.diagnostics.push(
                            Diagnostic::new(
                                Code::InvalidRef,
                                extra.span,
                                format!("the REF has {} segments, more than {MAX_REF_SEGMENTS}", r.segments.len()),
                            )
                            .with_label("too deep"),
                        );
                        (Expr::new(ExprKind::Error, span), 0)
                    }
                    None => (Expr::new(ExprKind::Ref(r), span), 1),
                }
            }
            Rule::word => self.word(p),
            Rule::list => {
                let mut height = 0;
                let mut items = Vec::new();
                for x in p.into_inner() {
                    let (e, h) = self.expr(x);
                    height = height.max(h);
                    items.push(e);
                }
                self.node(ExprKind::List(items), span, height + super::CHAIN_LEVEL)
            }
            Rule::object => {
                let mut height = 0;
                let mut entries = Vec::new();
                for entry in p.into_inner() {
                    let mut parts = entry.into_inner();
                    let (Some(k), Some(v)) = (parts.next(), parts.next()) else { continue };
                    let key = if k.as_rule() == Rule::string {
                        let s = self.string(k);
                        match s.kind {
                            ExprKind::Str(lit) => Spanned::new(lit.value, s.span),
                            _ => Spanned::new(Arc::from(""), s.span),
                        }
                    } else {
                        name_of(&k)
                    };
                    let (e, h) = self.expr(v);
                    height = height.max(h);
                    entries.push((key, e));
                }
                self.node(ExprKind::Object(entries), span, height + super::CHAIN_LEVEL)
            }
            _ => (Expr::new(ExprKind::Error, span), 0),
        }
    }

    /// A word: a call when arguments follow, a keyword literal, or a name.
    fn word(&mut self, p: Pair<'_, Rule>) -> Built {
        let span = span_of(&p);
        let mut inner = p.into_inner();
        let Some(ident) = inner.next() else { return (Expr::new(ExprKind::Error, span), 0) };
        if let Some(args) = inner.next() {
            let mut height = 0;
            let mut list = Vec::new();
            for a in args.into_inner() {
                let (keyword, value) = if a.as_rule() == Rule::kwarg {
                    let mut kv = a.into_inner();
                    let k = kv.next().map(|k| name_of(&k));
                    (k, kv.next().map_or((Expr::new(ExprKind::Error, span), 0), |v| self.expr(v)))
                } else {
                    (None, self.expr(a))
                };
                height = height.max(value.1);
                list.push(Arg { keyword, value: value.0 });
            }
            return self.node(
                ExprKind::Call(Call { name: name_of(&ident), args: list }),
                span,
                height + super::CHAIN_LEVEL,
            );
        }
        let kind = match ident.as_str() {
            "true" => ExprKind::Bool(true),
            "false" => ExprKind::Bool(false),
            "null" => ExprKind::Null,
            kw @ ("and" | "or" | "not") => {
                self.diagnostics.push(
                    Diagnostic::new(Code::Syntax, span, format!("expected an expression, found the keyword `{kw}`"))
                        .with_label("a keyword, not a value")
                        .with_help(format!("`{kw}` is an operator and cannot be used as a name")),
                );
                ExprKind::Error
            }
            name => ExprKind::Name(Arc::from(name)),
        };
        (Expr::new(kind, span), 1)
    }

    fn string(&mut self, p: Pair<'_, Rule>) -> Expr {
        let span = span_of(&p);
        let inner = p.into_inner().next();
        let (raw, offset) = inner.map_or(("", span.start as usize + 1), |i| (i.as_str(), i.as_span().start()));
        let (text, map, errors) = unescape(raw, offset, Dialect::Expression);
        self.diagnostics.extend(errors);
        Expr::new(ExprKind::Str(StrLit { value: Arc::from(text), map }), span)
    }
}

fn binary_op(s: &str) -> BinaryOp {
    match s {
        "or" | "||" => BinaryOp::Or,
        "and" | "&&" => BinaryOp::And,
        "==" => BinaryOp::Eq,
        "!=" => BinaryOp::Ne,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        _ => BinaryOp::Rem,
    }
}

fn ref_path(p: Pair<'_, Rule>) -> RefPath {
    let mut inner = p.into_inner();
    let context = inner.next().map_or_else(|| Spanned::new(Arc::from(""), Span::default()), |c| name_of(&c));
    RefPath { context, segments: inner.map(|s| name_of(&s)).collect() }
}

/// Whether the hand-written parser agrees with the reference path on `src`: when it
/// answers, the reference finds no problem and builds the same tree (spans and string maps
/// included); when it declines, the reference reports at least one problem. For the
/// property tests and the `parse` fuzz target; `Err` says how they differ.
pub fn fast_path_agrees(src: &str) -> Result<(), String> {
    let max = DEFAULT_MAX_NESTING;
    if check_nesting(src, max).is_some() {
        return Ok(()); // neither path runs
    }
    let reference = reference(src, max);
    match (fast::parse(src, max), reference.diagnostics.is_empty()) {
        (Some(fast), true) if fast == reference.expr => Ok(()),
        (Some(fast), true) => Err(format!("{src:?}: different trees\nfast: {fast:?}\nreference: {:?}", reference.expr)),
        (Some(_), false) => {
            Err(format!("{src:?}: the fast path accepts it, the reference reports {:?}", reference.diagnostics))
        }
        (None, false) => Ok(()),
        (None, true) => Err(format!("{src:?}: the fast path declines input the reference accepts")),
    }?;
    // A REF on its own, when the text is one.
    let pest_ref =
        Grammar::parse(Rule::ref_program, src).ok().and_then(|mut p| p.next()?.into_inner().next()).map(ref_path);
    match (fast::parse_ref(src), pest_ref) {
        (a, b) if a == b => Ok(()),
        (a, b) => Err(format!("{src:?} as a REF: fast {a:?}, reference {b:?}")),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// The fast path and the reference path agree (see [`super::fast_path_agrees`]).
    fn agree(src: &str) {
        if let Err(e) = super::fast_path_agrees(src) {
            panic!("{e}");
        }
    }

    /// Pieces that meet at every kind of boundary: operators and their look-alikes,
    /// keywords and names that start like them, every bracket, literals, REFs, and
    /// whitespace of every kind.
    const PIECES: &[&str] = &[
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        ".",
        "=",
        "==",
        "!=",
        "!",
        "<",
        "<=",
        ">",
        ">=",
        "+",
        "-",
        "*",
        "/",
        "%",
        "&&",
        "||",
        "and",
        "or",
        "not",
        "nothing",
        "order",
        "android",
        "true",
        "null",
        "x",
        "item",
        "f",
        "map",
        "a_1",
        "_",
        "0",
        "12",
        "3.5",
        "1e3",
        "2E-2",
        "1.",
        "\"s\"",
        "'t'",
        "\"a\\\"b\"",
        "'\\'",
        "\"",
        "'",
        "REF:",
        "REF:s",
        "REF:s.a-1",
        "REF:s.0",
        "REF",
        "R",
        "x=",
        "é",
    ];

    #[test]
    fn fast_path_agrees_with_reference_on_known_inputs() {
        for src in [
            "map(array=filter(array=records, condition_string=\"item.a == 'x'\"), template={id: item.id})",
            "f(a = b)",
            "f(a= =b)",
            "f(a == b)",
            "f (x)",
            "x . y",
            "x .0",
            "x[ 1 ]",
            "- - x",
            "not not x",
            "!x",
            "! = x",
            "nothing",
            "not(x)",
            "a or b",
            "a order",
            "REF:s.a - 1",
            "REF:s.a-1",
            "REF :s",
            "{a: 1, 'b': 2,}",
            "{ }",
            "[ ]",
            "[1,]",
            "[,]",
            "f(,)",
            "f(x,)",
            "f(x y)",
            "1e400",
            "x.null",
            "x.and",
            "and",
            "a < b < c",
            " x ",
            "",
            " ",
            "(x",
            "x)",
            "\"\\q\"",
            "'it''s'",
            "f(a=1, b)",
            "{a:}",
            "{:1}",
            "x[]",
            "x.",
            ".x",
            "REF:s.",
            "REF:s. a",
            "REF:s.-a",
            "REF:1",
            "REF:s.0x",
            "REF:s.a[0].b",
            " REF:s ",
            "{REF:s}",
            "1.",
            "1.a",
            "1.e3",
            "1e+",
            "1ex",
            "12abc",
            "x.0.1",
            "x .a",
            "x. a",
            "true(1)",
            "and(x)",
            "or (x)",
            "a or(b)",
            "f(and=1)",
            "f(g(x)=1)",
            "'\\u00e9'",
            "\"\\ud800\"",
            "\"a\\\\\"",
            "9223372036854775808",
            "-9223372036854775808",
            "-x.y[0] * 2",
            "a.b-1",
            "x[0][1].c",
            "{'a b': 1, c: [2, {d: 3}]}",
        ] {
            agree(src);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn fast_path_agrees_with_reference(pieces in proptest::collection::vec(0..PIECES.len(), 0..14)) {
            let src: String = pieces.iter().map(|&i| PIECES[i]).collect();
            agree(&src);
        }
    }
}
