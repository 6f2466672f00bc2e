//! AST → text: the canonical source form and an indented tree dump.

use std::fmt::Write;

use super::ast::*;

/// Prints an expression in canonical form: keyword arguments as `name=value`, strings in
/// double quotes with JSON escapes, minimal parentheses. Parsing the output gives back the
/// same tree (up to spans).
pub fn print(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, e, 0);
    out
}

fn write_str(out: &mut String, s: &str) {
    // JSON string syntax is a subset of tdsl's.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\"")));
}

fn write_expr(out: &mut String, e: &Expr, min_prec: u8) {
    match &e.kind {
        ExprKind::Null => out.push_str("null"),
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Int(i) => {
            if *i < 0 {
                // A negative literal only arises from folding; print it as negation.
                let _ = write!(out, "(-{})", i.unsigned_abs());
            } else {
                let _ = write!(out, "{i}");
            }
        }
        ExprKind::Float(f) => {
            let s = serde_json::to_string(f).unwrap_or_else(|_| String::from("0.0"));
            if *f < 0.0 {
                let _ = write!(out, "(-{})", &s[1..]);
            } else {
                out.push_str(&s);
            }
        }
        ExprKind::Str(s) => write_str(out, &s.value),
        ExprKind::Ref(r) => {
            out.push_str("REF:");
            out.push_str(&r.dotted());
        }
        ExprKind::Name(n) => out.push_str(n),
        ExprKind::Field(inner, seg) => {
            // `(REF:s).response` is not `REF:s.response` (the response alias applies only
            // inside a REF), and `(1).0` is not the number `1.0`.
            let glued = match &inner.kind {
                ExprKind::Ref(_) => true,
                ExprKind::Int(_) => seg.node.starts_with(|c: char| c.is_ascii_digit()),
                _ => false,
            };
            if glued {
                out.push('(');
            }
            write_expr(out, inner, 9);
            if glued {
                out.push(')');
            }
            out.push('.');
            out.push_str(&seg.node);
        }
        ExprKind::Index(ik) => {
            let [inner, key] = &**ik;
            write_expr(out, inner, 9);
            out.push('[');
            write_expr(out, key, 0);
            out.push(']');
        }
        ExprKind::List(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(out, x, 0);
            }
            out.push(']');
        }
        ExprKind::Object(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if super::is_identifier(&k.node) {
                    out.push_str(&k.node);
                } else {
                    write_str(out, &k.node);
                }
                out.push_str(": ");
                write_expr(out, v, 0);
            }
            out.push('}');
        }
        ExprKind::Call(c) => {
            out.push_str(&c.name.node);
            out.push('(');
            for (i, a) in c.args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if let Some(k) = &a.keyword {
                    out.push_str(&k.node);
                    out.push('=');
                }
                write_expr(out, &a.value, 0);
            }
            out.push(')');
        }
        ExprKind::Unary(op, inner) => {
            let prec = match op {
                UnaryOp::Not => 3,
                UnaryOp::Neg => 7,
            };
            let paren = prec < min_prec;
            if paren {
                out.push('(');
            }
            out.push_str(match op {
                UnaryOp::Not => "not ",
                UnaryOp::Neg => "-",
            });
            write_expr(out, inner, prec);
            if paren {
                out.push(')');
            }
        }
        ExprKind::Binary(op, lr) => {
            let [l, r] = &**lr;
            let prec = op.precedence();
            let paren = prec < min_prec;
            if paren {
                out.push('(');
            }
            // Left-associative: the right operand needs parentheses at equal precedence;
            // comparisons are non-associative, so both sides do.
            let left_min = if op.is_comparison() { prec + 1 } else { prec };
            write_expr(out, l, left_min);
            let _ = write!(out, " {} ", op.symbol());
            write_expr(out, r, prec + 1);
            if paren {
                out.push(')');
            }
        }
        ExprKind::Error => out.push_str("<error>"),
    }
}

/// Dumps the tree, one node per line with its span, for `tdsl eval --emit ast`.
#[cfg(any(feature = "cli", feature = "fuzzing"))]
pub fn dump(e: &Expr) -> String {
    let mut out = String::new();
    dump_into(&mut out, e, 0, "");
    out
}

#[cfg(any(feature = "cli", feature = "fuzzing"))]
fn dump_into(out: &mut String, e: &Expr, indent: usize, prefix: &str) {
    let pad = "  ".repeat(indent);
    let _ = write!(out, "{pad}{prefix}");
    let sp = e.span;
    match &e.kind {
        ExprKind::Null => {
            let _ = writeln!(out, "Null @{sp}");
        }
        ExprKind::Bool(b) => {
            let _ = writeln!(out, "Bool {b} @{sp}");
        }
        ExprKind::Int(i) => {
            let _ = writeln!(out, "Int {i} @{sp}");
        }
        ExprKind::Float(f) => {
            let _ = writeln!(out, "Float {f:?} @{sp}");
        }
        ExprKind::Str(s) => {
            let _ = writeln!(out, "Str {:?} @{sp}", &*s.value);
        }
        ExprKind::Ref(r) => {
            let _ = writeln!(out, "Ref REF:{} @{sp}", r.dotted());
        }
        ExprKind::Name(n) => {
            let _ = writeln!(out, "Name {n} @{sp}");
        }
        ExprKind::Field(inner, seg) => {
            let _ = writeln!(out, "Field .{} @{sp}", seg.node);
            dump_into(out, inner, indent + 1, "");
        }
        ExprKind::Index(ik) => {
            let [inner, key] = &**ik;
            let _ = writeln!(out, "Index @{sp}");
            dump_into(out, inner, indent + 1, "");
            dump_into(out, key, indent + 1, "key: ");
        }
        ExprKind::List(items) => {
            let _ = writeln!(out, "List @{sp}");
            for x in items {
                dump_into(out, x, indent + 1, "");
            }
        }
        ExprKind::Object(entries) => {
            let _ = writeln!(out, "Object @{sp}");
            for (k, v) in entries {
                dump_into(out, v, indent + 1, &format!("{}: ", k.node));
            }
        }
        ExprKind::Call(c) => {
            let _ = writeln!(out, "Call {} @{sp}", c.name.node);
            for a in &c.args {
                let p = a.keyword.as_ref().map_or(String::new(), |k| format!("{}=", k.node));
                dump_into(out, &a.value, indent + 1, &p);
            }
        }
        ExprKind::Unary(op, inner) => {
            let _ = writeln!(out, "Unary {op:?} @{sp}");
            dump_into(out, inner, indent + 1, "");
        }
        ExprKind::Binary(op, lr) => {
            let [l, r] = &**lr;
            let _ = writeln!(out, "Binary {} @{sp}", op.symbol());
            dump_into(out, l, indent + 1, "");
            dump_into(out, r, indent + 1, "");
        }
        ExprKind::Error => {
            let _ = writeln!(out, "Error @{sp}");
        }
    }
}
