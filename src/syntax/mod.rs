//! Source text → AST.
//!
//! Owns the pest grammar binding, string-escape decoding with source maps, and the AST
//! types. Parsing never fails and never evaluates anything: it returns an AST and a list of
//! diagnostics. Nothing here knows about types, functions or values.

pub mod ast;
pub mod escape;
mod parser;
mod printer;

pub use parser::{parse, parse_ref, parse_with_limit, Parse, DEFAULT_MAX_NESTING};
pub use printer::{dump, print};

#[cfg(test)]
mod smoke {
    #[test]
    fn smoke() {
        for src in [
            "map(array=users, template={name: item.full_name, email: item.contact.email})",
            "filter(array=all_records, condition_string=\"item.status == 'active'\")",
            "REF:scan.total - 1 + -x.y[0].z",
            "1 < x < 3",
            "a and not b or c",
            "\"a\\q\" + 'b'",
            "map(array=xs,",
            "x = 1",
            "create_object(n=REF:scanner.files.length)",
        ] {
            let p = super::parse(src);
            eprintln!(
                "{src}\n{}{:?}\n{}",
                super::dump(&p.expr),
                p.diagnostics.iter().map(|d| (&d.message, d.span, &d.help)).collect::<Vec<_>>(),
                super::print(&p.expr)
            );
        }
    }
}
