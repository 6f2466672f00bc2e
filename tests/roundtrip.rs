//! Properties of the front end (issue 7, item 4):
//!
//! * compiling any string never panics: arbitrary text, and text made of tdsl's own tokens
//!   so that it gets past the first few characters;
//! * printing a tree in canonical form and parsing the text gives the same tree, spans
//!   aside. Trees come from the fuzzing generator (`tdsl::fuzzing::expr`), driven by bytes
//!   that proptest draws and shrinks, so both the fuzzer and this test build the same
//!   shapes: every built-in with positional and keyword arguments, template strings, REFs,
//!   operators at every precedence.
//!
//! * the hand-written parser and the pest grammar agree: the same tree for every input the
//!   grammar accepts without a problem, and a refusal (so the grammar reports) otherwise.
//!
//! The fuzz targets `parse` and `eval` check the same properties for much longer; this
//! runs on stable Rust with every `cargo test`.

use arbitrary::Unstructured;
use proptest::prelude::*;
use tdsl::fuzzing::{check_round_trip, strip_spans};
use tdsl::testing::syntax::{parse, print};
use tdsl::Engine;

/// Pieces of tdsl text, joined by proptest into mostly-plausible sources.
const TOKENS: &[&str] = &[
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
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "and",
    "or",
    "not",
    "!",
    "&&",
    "||",
    "true",
    "false",
    "null",
    "item",
    "current",
    "x",
    "xs",
    "a.b",
    "0",
    "1",
    "2.5",
    "1e308",
    "9223372036854775808",
    "\"s\"",
    "'q'",
    "\"item.score > 1\"",
    "\"\\u00e9\\n\"",
    "\"\\x\"",
    "REF:",
    "REF:arguments.xs",
    "REF:step-1.items.0",
    "map(",
    "filter(",
    "sort(",
    "group_by(",
    "pipeline(",
    "sum(",
    "join(",
    "if(",
    "range(",
    "json_parse(",
    "create_object(",
    "template=",
    "array=",
    "condition_string=",
    "key_path=",
    "operations=",
    "direction=\"desc\"",
    "as=\"el\"",
    "as=",
    "el",
    " ",
    "\n",
    "é",
    "\"",
];

fn token_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn compiling_any_string_does_not_panic(src in any::<String>()) {
        let _ = Engine::new().compile(&src);
    }

    #[test]
    fn compiling_token_soup_does_not_panic(src in token_text()) {
        tdsl::fuzzing::compile(src.as_bytes());
    }

    #[test]
    fn printed_trees_parse_back_to_themselves(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut u = Unstructured::new(&bytes);
        if let Ok(tree) = tdsl::fuzzing::expr(&mut u, 6) {
            check_round_trip(&tree);
        }
    }

    #[test]
    fn fast_parser_agrees_with_the_grammar_on_token_soup(src in token_text()) {
        if let Err(e) = tdsl::testing::syntax::fast_path_agrees(&src) {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn fast_parser_agrees_with_the_grammar_on_printed_trees(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut u = Unstructured::new(&bytes);
        if let Ok(tree) = tdsl::fuzzing::expr(&mut u, 6) {
            let printed = print(&tree);
            if let Err(e) = tdsl::testing::syntax::fast_path_agrees(&printed) {
                prop_assert!(false, "{}", e);
            }
        }
    }

    /// Printed trees respaced: whitespace of every kind inserted between random characters
    /// and spaces dropped, which moves token boundaries (`a and b` → `aand b`) as often as
    /// it keeps them.
    #[test]
    fn fast_parser_agrees_with_the_grammar_on_respaced_trees(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0..5usize), 0..6),
    ) {
        let mut u = Unstructured::new(&bytes);
        if let Ok(tree) = tdsl::fuzzing::expr(&mut u, 6) {
            let mut text: Vec<char> = print(&tree).chars().collect();
            for (at, what) in edits {
                let i = at.index(text.len() + 1);
                match what {
                    0 if text.get(i) == Some(&' ') => { text.remove(i); }
                    0 | 1 => text.insert(i, ' '),
                    2 => text.insert(i, '\n'),
                    3 => { text.insert(i, '\t'); text.insert(i, '\r'); }
                    _ => text.insert(i, '\u{b}'), // not whitespace to tdsl
                }
            }
            let src: String = text.into_iter().collect();
            if let Err(e) = tdsl::testing::syntax::fast_path_agrees(&src) {
                prop_assert!(false, "{}", e);
            }
        }
    }

    #[test]
    fn parsed_text_prints_to_a_fixed_point(src in token_text()) {
        let first = parse(&src);
        if first.diagnostics.is_empty() {
            let printed = print(&first.expr);
            let second = parse(&printed);
            prop_assert!(second.diagnostics.is_empty(), "`{}` printed as `{}`", src, printed);
            prop_assert_eq!(strip_spans(&second.expr), strip_spans(&first.expr));
            prop_assert_eq!(print(&second.expr), printed);
        }
    }
}
