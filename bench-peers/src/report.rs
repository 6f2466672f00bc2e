//! `peers report <results.tsv>`: the markdown tables of results.md from the `PEERS` lines.
//!
//! A line is `PEERS engine workload N ns_per_iter note` (tab-separated); `ns_per_iter` may be
//! `n/a` or `FAIL` (run.sh writes `FAIL` when the process exited non-zero, e.g. on a wrong
//! answer). Ratios are to `hand` (W0: a deep clone of the `serde_json::Value`); W5 has no
//! hand-written counterpart, so its ratios are to `tdsl`.

use std::collections::BTreeMap;

use crate::{ENGINES, WORKLOADS};

struct Cell {
    value: String,
    note: String,
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

pub fn report(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    // (N, workload, engine) -> cell
    let mut cells: BTreeMap<(usize, String, String), Cell> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 5 || f[0] != "PEERS" {
            continue;
        }
        let n: usize = match f[3].parse() {
            Ok(n) => n,
            Err(_) => continue,
        };
        cells.insert(
            (n, f[2].to_string(), f[1].to_string()),
            Cell {
                value: f[4].to_string(),
                note: f.get(5).unwrap_or(&"").to_string(),
            },
        );
    }
    let ns_of = |c: Option<&Cell>| c.and_then(|c| c.value.parse::<f64>().ok());
    let engines: Vec<&str> = ENGINES
        .iter()
        .copied()
        .filter(|e| cells.keys().any(|(_, _, k)| k == e))
        .collect();
    let mut sizes: Vec<usize> = cells.keys().map(|(n, _, _)| *n).collect();
    sizes.dedup();

    let mut out = String::new();
    for n in &sizes {
        out.push_str(&format!("\n### N = {n}\n\n"));
        out.push_str("| workload |");
        for e in &engines {
            out.push_str(&format!(" {e} |"));
        }
        out.push_str("\n|---|");
        for _ in &engines {
            out.push_str("---:|");
        }
        out.push('\n');
        for w in WORKLOADS {
            let w = w.name();
            let base_engine = if w == "W5" { "tdsl" } else { "hand" };
            let base = ns_of(cells.get(&(*n, w.to_string(), base_engine.to_string())));
            if engines.iter().all(|e| !cells.contains_key(&(*n, w.to_string(), e.to_string()))) {
                continue;
            }
            out.push_str(&format!("| {w} |"));
            for e in &engines {
                let cell = cells.get(&(*n, w.to_string(), e.to_string()));
                let text = match (cell, ns_of(cell)) {
                    (_, Some(ns)) => match base {
                        Some(b) if b > 0.0 => format!("{} (×{:.2})", fmt_ns(ns), ns / b),
                        _ => fmt_ns(ns),
                    },
                    (Some(c), None) => c.value.clone(),
                    (None, None) => "–".to_string(),
                };
                out.push_str(&format!(" {text} |"));
            }
            out.push('\n');
        }
    }

    // Notes: what each measured cell did, and why the n/a cells are n/a, once per engine and
    // text, with the workloads it applies to.
    let mut notes: BTreeMap<(usize, String, bool), Vec<String>> = BTreeMap::new();
    for ((_, w, e), c) in &cells {
        let measured = c.value.parse::<f64>().is_ok();
        if c.note.is_empty() {
            continue;
        }
        let rank = engines.iter().position(|x| x == e).unwrap_or(usize::MAX);
        let text = format!("{}{}", if measured { "" } else { "n/a: " }, c.note);
        let ws = notes.entry((rank, text, !measured)).or_default();
        if !ws.contains(w) {
            ws.push(w.clone());
        }
    }
    if !notes.is_empty() {
        out.push_str("\n### Notes\n\n");
        for ((rank, text, _), ws) in &notes {
            let mut ws = ws.clone();
            ws.sort();
            let e = engines.get(*rank).copied().unwrap_or("?");
            out.push_str(&format!("- **{e}** {}: {text}\n", ws.join(", ")));
        }
    }
    out
}
