//! Source text → AST.
//!
//! Owns the pest grammar binding, string-escape decoding with source maps, and the AST
//! types. Parsing never fails and never evaluates anything: it returns an AST and a list of
//! diagnostics. Nothing here knows about types, functions or values.

pub mod ast;
pub mod escape;
mod parser;
mod printer;

pub(crate) mod fast;
pub(crate) mod foreign;
mod pool;
pub(crate) use fast::intern;

/// The parsers count a tree's height in units: a level of nesting (brackets, calls, prefix
/// operators, fields, the right side of an operator) is `CHAIN_LEVEL` units, one more link
/// of a flat operator chain (`1 + 1 + …`, whose tree grows down its left side) one unit.
/// A tree may be `max_depth` levels high, so a flat chain of up to `max_depth × 2`
/// operands is not "nested too deeply", while the depth later stages recurse to stays
/// bounded (at most `max_depth × 2` nodes).
pub(crate) const CHAIN_LEVEL: usize = 2;

pub(crate) use parser::{check_nesting, MAX_NESTING_CAP};
pub use parser::{fast_path_agrees, parse, parse_ref, parse_with_limit};
pub(crate) use pool::{boxed, recycle};
#[cfg(any(feature = "cli", feature = "fuzzing"))]
pub use printer::dump;
pub use printer::print;

/// The words that cannot be names (SPEC §4.1).
pub const KEYWORDS: [&str; 6] = ["and", "or", "not", "true", "false", "null"];

/// Whether `s` has the shape of a name, `[A-Za-z_][A-Za-z0-9_]*` (keywords included: see
/// [`KEYWORDS`]).
pub fn is_identifier(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

#[cfg(test)]
mod tests {
    /// Parses and prints with full parentheses, to show the tree's shape.
    fn shape(src: &str) -> String {
        fn go(e: &super::ast::Expr) -> String {
            use super::ast::ExprKind::*;
            match &e.kind {
                Binary(op, lr) => format!("({} {} {})", go(&lr[0]), op.symbol(), go(&lr[1])),
                Unary(super::ast::UnaryOp::Not, x) => format!("(not {})", go(x)),
                Unary(super::ast::UnaryOp::Neg, x) => format!("(-{})", go(x)),
                Field(x, seg) => format!("{}.{}", go(x), seg.node),
                Index(xk) => format!("{}[{}]", go(&xk[0]), go(&xk[1])),
                _ => super::print(e),
            }
        }
        let p = super::parse(src);
        assert!(p.diagnostics.is_empty(), "{src}: {:?}", p.diagnostics);
        go(&p.expr)
    }

    #[test]
    fn precedence_and_associativity() {
        for (src, want) in [
            ("a or b and c", "(a or (b and c))"),
            ("a || b || c", "((a or b) or c)"),
            ("not a == b and c", "((not (a == b)) and c)"),
            ("a - b - c", "((a - b) - c)"),
            ("a + b * c % d", "(a + ((b * c) % d))"),
            ("-a * b", "((-a) * b)"),
            ("-a.b[0]", "(-a.b[0])"),
            ("1 + not x == y", "(1 + (not (x == y)))"),
            ("!a != b", "(not (a != b))"),
            ("a < b == c", "(a < b) == c"),
        ] {
            if src == "a < b == c" {
                // Comparisons do not chain, whatever the operators.
                assert_eq!(super::parse(src).diagnostics[0].code, crate::diagnostic::Code::ChainedComparison);
                continue;
            }
            assert_eq!(shape(src), want, "{src}");
        }
    }

    #[test]
    fn long_chains_are_bounded_not_recursive() {
        let src = vec!["1"; 5000].join(" + ");
        let p = super::parse(&src);
        assert_eq!(p.diagnostics.len(), 1);
        assert_eq!(p.diagnostics[0].code, crate::diagnostic::Code::NestingTooDeep);
        let src = format!("x{}", ".a".repeat(5000));
        assert_eq!(super::parse(&src).diagnostics[0].code, crate::diagnostic::Code::NestingTooDeep);
    }

    /// Names are shared within an expression, across expressions parsed one after another
    /// on a thread (a program and its template strings), and never confused.
    #[test]
    fn names_are_shared_not_reallocated() {
        use std::sync::Arc;
        fn names(src: &str) -> Vec<super::ast::Name> {
            fn go(e: &super::ast::Expr, out: &mut Vec<super::ast::Name>) {
                use super::ast::ExprKind::*;
                match &e.kind {
                    Name(n) => out.push(n.clone()),
                    Field(x, seg) => {
                        go(x, out);
                        out.push(seg.node.clone());
                    }
                    Binary(_, ab) => ab.iter().for_each(|x| go(x, out)),
                    List(items) => items.iter().for_each(|x| go(x, out)),
                    Call(c) => {
                        out.push(c.name.node.clone());
                        for a in &c.args {
                            out.extend(a.keyword.as_ref().map(|k| k.node.clone()));
                            go(&a.value, out);
                        }
                    }
                    _ => {}
                }
            }
            let p = super::parse(src);
            assert!(p.diagnostics.is_empty(), "{src}");
            let mut out = Vec::new();
            go(&p.expr, &mut out);
            out
        }
        let a = names("map(array=item.status, template=item.score)");
        let b = names("item.status == 'active' and item.score > 50");
        let texts: Vec<&str> = a.iter().map(|n| &**n).collect();
        assert_eq!(texts, ["map", "array", "item", "status", "template", "item", "score"]);
        assert!(Arc::ptr_eq(&a[2], &a[5]), "`item` twice in one expression");
        assert!(Arc::ptr_eq(&a[2], &b[0]), "`item` in the next expression");
        assert!(Arc::ptr_eq(&a[3], &b[1]), "`status` in the next expression");
        // Names past the cached length, and many distinct names, are still right.
        let long = "a_name_longer_than_any_the_cache_keeps";
        assert_eq!(&*names(&format!("{long}.{long}"))[1], long);
        let many: Vec<String> = (0..300).map(|i| format!("n{i}")).collect();
        let list = format!("[{}]", many.join(", "));
        assert_eq!(names(&list).iter().map(|n| n.to_string()).collect::<Vec<_>>(), many[..]);
    }

    #[test]
    fn printing_round_trips() {
        for src in [
            "map(array=users, template={name: item.full_name, \"e-mail\": item.contact.email})",
            "filter(xs, condition_string=\"item.status == 'active'\")",
            "REF:scan.total - 1 + -x.y[0].z",
            "not (a and b) or c",
            "(a + b) * c",
            "if(a, [1, 2.5, null, true], {})",
        ] {
            let first = super::parse(src);
            assert!(first.diagnostics.is_empty(), "{src}");
            let printed = super::print(&first.expr);
            let second = super::parse(&printed);
            assert!(second.diagnostics.is_empty(), "{printed}");
            assert_eq!(super::print(&second.expr), printed);
        }
    }
}
