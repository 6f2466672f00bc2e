//! A readable listing of compiled code, for `tdsl eval --emit bytecode`, the REPL's
//! `:bytecode` and golden tests.

use std::fmt::Write;

use super::chunk::{CallParam, Chunk};
use super::op::Op;

/// Lists a chunk and, indented after it, the templates it calls.
pub fn disassemble(chunk: &Chunk) -> String {
    let mut out = String::new();
    write_chunk(&mut out, chunk, "main", 0);
    out
}

fn write_chunk(out: &mut String, chunk: &Chunk, title: &str, indent: usize) {
    let pad = "    ".repeat(indent);
    let _ = writeln!(out, "{pad}== {title} == ({} instructions, {} locals)", chunk.code.len(), chunk.locals);
    for (pc, op) in chunk.code.iter().enumerate() {
        let operand = describe(chunk, op);
        let span = chunk.span(pc);
        let _ = writeln!(out, "{pad}{pc:04}  {:<22}{:<32}@{span}", op.name(), operand);
    }
    let mut n = 0;
    for call in &chunk.calls {
        for (i, p) in call.params.iter().enumerate() {
            if let CallParam::Template(sub, slot) = &p.pass {
                let how = if sub.fast().is_some() { ", fast form" } else { "" };
                let title = format!("template #{n}: {}(…{}) item in slot {slot}{how}", call.name, i);
                write_chunk(out, sub, &title, indent + 1);
                n += 1;
            }
        }
    }
}

fn path(chunk: &Chunk, p: u32) -> String {
    chunk.paths.get(p as usize).map(|segs| segs.iter().map(|s| format!(".{s}")).collect::<String>()).unwrap_or_default()
}

fn name(chunk: &Chunk, n: u32) -> String {
    chunk.names.get(n as usize).map(|s| s.to_string()).unwrap_or_default()
}

fn describe(chunk: &Chunk, op: &Op) -> String {
    match *op {
        Op::Const(i) => chunk.consts.get(i as usize).map(|v| truncate(&v.to_string())).unwrap_or_default(),
        Op::Global(n) => name(chunk, n),
        Op::Local(s) | Op::SetLocal(s) => format!("slot {s}"),
        Op::GlobalPath(_, p) => path(chunk, p).trim_start_matches('.').to_string(),
        Op::LocalPath(s, p) => format!("slot {s}{}", path(chunk, p)),
        Op::Ref(n, p) => format!("REF:{}{}", name(chunk, n), path(chunk, p)),
        Op::Path(p) => path(chunk, p),
        Op::List(n) => format!("{n} items"),
        Op::Object(k, n) => chunk
            .keys
            .get(k as usize..(k as usize).saturating_add(n as usize))
            .map(|ks| format!("{{{}}}", ks.join(", ")))
            .unwrap_or_default(),
        Op::Binary(b) => b.symbol().to_string(),
        Op::CmpLocalPathConst(b, s, p, c) => format!(
            "slot {s}{} {} {}",
            path(chunk, p),
            b.symbol(),
            chunk.consts.get(c as usize).map(|v| truncate(&v.to_string())).unwrap_or_default()
        ),
        Op::Jump(t) | Op::JumpIfFalse(t) | Op::AndJump(t) | Op::OrJump(t) => format!("→ {t:04}"),
        Op::Call(i) | Op::CallGroupsCounted(i) => {
            chunk.calls.get(i as usize).map(|c| format!("{}/{}", c.name, c.params.len())).unwrap_or_default()
        }
        Op::Fused(i, o) => {
            let site = |i: u32| chunk.calls.get(i as usize).map(|c| format!("{}/{}", c.name, c.params.len()));
            format!("{}({})", site(o).unwrap_or_default(), site(i).unwrap_or_default())
        }
        Op::Index | Op::Not | Op::Neg | Op::ToBool => String::new(),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 30 {
        format!("{}…", s.chars().take(29).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Everything a chunk holds, its templates' chunks and fast forms included, as text: two
/// chunks with equal fingerprints run alike and report alike (the one-pass compiler's
/// differential tests compare them). Not a stable format.
pub fn fingerprint(chunk: &Chunk) -> String {
    let mut out = String::new();
    write_fingerprint(&mut out, chunk);
    out
}

fn write_fingerprint(out: &mut String, chunk: &Chunk) {
    let _ = writeln!(out, "locals {} source {:?}", chunk.locals, chunk.source);
    for (pc, op) in chunk.code.iter().enumerate() {
        let _ = writeln!(out, "{pc} {op:?} @{:?}", chunk.span(pc));
    }
    let _ = writeln!(out, "consts {:?}", chunk.consts);
    let _ = writeln!(out, "names {:?}", chunk.names);
    let paths: Vec<Vec<&str>> = chunk.paths.iter().map(|p| p.iter().map(|s| &**s).collect()).collect();
    let _ = writeln!(out, "paths {paths:?}");
    let _ = writeln!(out, "keys {:?}", chunk.keys);
    let _ = writeln!(out, "origins {:?}", chunk.origins);
    for call in &chunk.calls {
        let _ = writeln!(out, "call {:?} {} given {:b}", call.func, call.name, call.given);
        for p in call.params.iter() {
            let _ = writeln!(out, "  param @{:?} origin {:?}", p.span, p.origin);
            match &p.pass {
                CallParam::Template(sub, slot) => {
                    let _ = writeln!(out, "  template slot {slot} fast {:?} {{", sub.fast());
                    write_fingerprint(out, sub);
                    let _ = writeln!(out, "  }}");
                }
                other => {
                    let _ = writeln!(out, "  {other:?}");
                }
            }
        }
    }
}
