//! Results as JSON: indented for people, one line for scripts, coloured for terminals.
//!
//! Without colour the text is exactly what `serde_json` prints (the tests hold it to that),
//! so a copied result is valid JSON and matches `tdsl eval`.

use crate::value::{SmolStr, Value};

/// How to lay a value out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Indented over several lines, as `tdsl eval` prints; otherwise on one line.
    pub pretty: bool,
    /// With ANSI colours.
    pub color: bool,
}

const KEY: &str = "\x1b[1;34m";
const STRING: &str = "\x1b[32m";
const NUMBER: &str = "\x1b[36m";
const BOOLEAN: &str = "\x1b[33m";
const NULL: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Renders `v` as JSON.
pub(crate) fn render(v: &Value, layout: Layout) -> String {
    let mut out = String::new();
    write(&mut out, v, layout, 0);
    out
}

fn write(out: &mut String, v: &Value, layout: Layout, depth: usize) {
    match v {
        Value::Null => paint(out, layout, NULL, "null"),
        Value::Bool(b) => paint(out, layout, BOOLEAN, if *b { "true" } else { "false" }),
        Value::Int(_) | Value::Float(_) => paint(out, layout, NUMBER, &v.to_string()),
        Value::Str(_) => paint(out, layout, STRING, &v.to_string()),
        Value::List(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separate(out, layout, depth + 1, i == 0);
                write(out, item, layout, depth + 1);
            }
            separate_end(out, layout, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                separate(out, layout, depth + 1, i == 0);
                paint(out, layout, KEY, &Value::Str(SmolStr::new(k)).to_string());
                out.push_str(if layout.pretty { ": " } else { ":" });
                write(out, item, layout, depth + 1);
            }
            separate_end(out, layout, depth);
            out.push('}');
        }
    }
}

fn paint(out: &mut String, layout: Layout, color: &str, text: &str) {
    if layout.color {
        out.push_str(color);
        out.push_str(text);
        out.push_str(RESET);
    } else {
        out.push_str(text);
    }
}

/// Before an element: a comma unless it is the first, then a new indented line if pretty.
fn separate(out: &mut String, layout: Layout, depth: usize, first: bool) {
    if !first {
        out.push(',');
    }
    if layout.pretty {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    }
}

/// Before a closing bracket: a new line at the outer indentation if pretty.
fn separate_end(out: &mut String, layout: Layout, depth: usize) {
    if layout.pretty {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Value> {
        [
            "null",
            "1.5",
            r#""a\"b\n""#,
            "[]",
            "{}",
            r#"[1, [], {}, [2, [3]], {"a": {"b": null}}]"#,
            r#"{"k": [true, false], "é": "ü", "": {"x": -0.25e-10}}"#,
        ]
        .iter()
        .map(|s| serde_json::from_str(s).expect("sample JSON"))
        .collect()
    }

    #[test]
    fn plain_output_is_what_serde_json_prints() {
        for v in samples() {
            let pretty = render(&v, Layout { pretty: true, color: false });
            assert_eq!(pretty, serde_json::to_string_pretty(&v).expect("serialisable"));
            let compact = render(&v, Layout { pretty: false, color: false });
            assert_eq!(compact, serde_json::to_string(&v).expect("serialisable"));
        }
    }

    #[test]
    fn colour_only_adds_escapes() {
        for v in samples() {
            for pretty in [true, false] {
                let coloured = render(&v, Layout { pretty, color: true });
                let stripped = coloured.replace(RESET, "").replace(KEY, "").replace(STRING, "");
                let stripped = stripped.replace(NUMBER, "").replace(BOOLEAN, "").replace(NULL, "");
                assert_eq!(stripped, render(&v, Layout { pretty, color: false }));
            }
        }
        let coloured =
            render(&serde_json::from_str(r#"{"a": 1}"#).expect("JSON"), Layout { pretty: false, color: true });
        assert_eq!(coloured, "{\x1b[1;34m\"a\"\x1b[0m:\x1b[36m1\x1b[0m}");
    }
}
