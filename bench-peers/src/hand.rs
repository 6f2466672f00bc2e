//! The baseline: what a Rust programmer writes by hand over `serde_json::Value`.

use std::hint::black_box;

use indexmap::IndexMap;
use serde_json::Value as J;

use crate::{check_eq, Inputs, Prepared, W};

fn email(r: &J) -> Option<&J> {
    r.get("profile")?.get("email")
}

fn w2(records: &J) -> i64 {
    let mut sum = 0;
    for r in records.as_array().into_iter().flatten() {
        if r.get("status").and_then(J::as_str) == Some("active") {
            if let Some(s) = r.get("score").and_then(J::as_i64) {
                if s > 50 {
                    sum += s;
                }
            }
        }
    }
    sum
}

fn w3(records: &J) -> IndexMap<&str, usize> {
    let mut counts: IndexMap<&str, usize> = IndexMap::new();
    for r in records.as_array().into_iter().flatten() {
        if let Some(c) = r.get("category").and_then(J::as_str) {
            *counts.entry(c).or_default() += 1;
        }
    }
    counts
}

fn w4(records: &J) -> String {
    let mut rs: Vec<(i64, &str)> = records
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r.get("score").and_then(J::as_i64).unwrap_or(0),
                r.get("name").and_then(J::as_str).unwrap_or(""),
            )
        })
        .collect();
    // Stable: ties keep their input order.
    rs.sort_by(|a, b| b.0.cmp(&a.0));
    let mut out = String::new();
    for (i, (_, name)) in rs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

pub fn prepare(w: W, inp: &Inputs) -> Prepared {
    let e = &inp.expect;
    match w {
        W::W0 => {
            let records = inp.records.clone();
            check_eq("hand", w, &records.clone(), &inp.records);
            Prepared::run_note(move || drop(black_box(black_box(&records).clone())), "deep clone of serde_json::Value")
        }
        W::W1 => {
            let one = inp.one.clone();
            check_eq("hand", w, email(&one).and_then(J::as_str), Some(e.email.as_str()));
            Prepared::run(move || {
                black_box(email(black_box(&one)));
            })
        }
        W::W2 => {
            let records = inp.records.clone();
            check_eq("hand", w, w2(&records), e.sum);
            Prepared::run(move || {
                black_box(w2(black_box(&records)));
            })
        }
        W::W3 => {
            let records = inp.records.clone();
            let got: Vec<(String, usize)> =
                w3(&records).into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            check_eq("hand", w, got, e.counts.clone());
            Prepared::run(move || {
                black_box(w3(black_box(&records)));
            })
        }
        W::W4 => {
            let records = inp.records.clone();
            check_eq("hand", w, w4(&records), e.joined.clone());
            Prepared::run(move || {
                black_box(w4(black_box(&records)));
            })
        }
        W::W5 => Prepared::na("nothing to compile"),
    }
}
