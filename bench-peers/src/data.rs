//! Deterministic input data and the reference answers.

use indexmap::IndexMap;
use serde_json::{Map as JMap, Value as J};

use crate::{Expected, Inputs};

/// splitmix64 with a fixed seed: every engine, every process, sees the same records.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const STATUSES: [&str; 3] = ["active", "inactive", "pending"];
const CATEGORIES: [&str; 10] = [
    "books", "music", "games", "sports", "garden", "tools", "toys", "food", "health", "travel",
];
const TAGS: [&str; 8] = ["new", "sale", "hot", "eco", "gift", "vip", "bulk", "rare"];

/// N records `{id, name, status, score, category, tags, profile: {email, age}}`, from the data
/// set `PEERS_DATA` names: `reference` (the default) is `../shared/peerbench`'s generator, the
/// one the project's speed is judged by; `splitmix` is this harness's first data set (random
/// fields from a fixed seed: 10 categories, a third of the records `active`, one in six
/// passing W2's filter), kept because its selectivity and group count show other costs.
pub fn records(n: usize) -> J {
    match std::env::var("PEERS_DATA").as_deref() {
        Ok("splitmix") => splitmix_records(n),
        Ok("reference") | Err(_) => reference_records(n),
        Ok(other) => panic!("PEERS_DATA={other:?}: the data sets are `reference` (the default) and `splitmix`"),
    }
}

const REFERENCE_CATEGORIES: [&str; 4] = ["a", "b", "c", "d"];
const REFERENCE_TAGS: [&str; 7] = ["red", "green", "blue", "new", "vip", "beta", "eu"];

/// `../shared/peerbench`'s records, field for field (its `src/data.rs`): record `i` is
/// `inactive` when `i % 3 == 0` (two in three `active`), scores `(i * 37) % 100` (about a third
/// of the records pass W2's filter), 4 categories in turn, 2 or 3 tags, ages 20–69.
fn reference_records(n: usize) -> J {
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let ntags = 2 + (i % 2) as usize;
        let tags: Vec<J> = (0..ntags).map(|k| J::from(REFERENCE_TAGS[(i as usize + 3 * k) % REFERENCE_TAGS.len()])).collect();
        let mut profile = JMap::new();
        profile.insert("email".into(), J::from(format!("u{i}@x.org")));
        profile.insert("age".into(), J::from(20 + (i % 50) as i64));
        let mut r = JMap::new();
        r.insert("id".into(), J::from(i as i64));
        r.insert("name".into(), J::from(format!("user{i}")));
        r.insert("status".into(), J::from(if i % 3 == 0 { "inactive" } else { "active" }));
        r.insert("score".into(), J::from(((i * 37) % 100) as i64));
        r.insert("category".into(), J::from(REFERENCE_CATEGORIES[(i % 4) as usize]));
        r.insert("tags".into(), J::Array(tags));
        r.insert("profile".into(), J::Object(profile));
        out.push(J::Object(r));
    }
    J::Array(out)
}

/// The `splitmix` data set (see [`records`]).
fn splitmix_records(n: usize) -> J {
    let mut rng = SplitMix(0x7D51_2024);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let status = STATUSES[rng.below(3) as usize];
        let score = rng.below(101) as i64;
        let category = CATEGORIES[rng.below(10) as usize];
        let ntags = 2 + rng.below(3) as usize;
        let tags: Vec<J> = (0..ntags)
            .map(|_| J::from(TAGS[rng.below(TAGS.len() as u64) as usize]))
            .collect();
        let age = 18 + rng.below(63) as i64;
        let mut profile = JMap::new();
        profile.insert("email".into(), J::from(format!("user{i}@example.com")));
        profile.insert("age".into(), J::from(age));
        let mut r = JMap::new();
        r.insert("id".into(), J::from(i as i64));
        r.insert("name".into(), J::from(format!("user{i}")));
        r.insert("status".into(), J::from(status));
        r.insert("score".into(), J::from(score));
        r.insert("category".into(), J::from(category));
        r.insert("tags".into(), J::Array(tags));
        r.insert("profile".into(), J::Object(profile));
        out.push(J::Object(r));
    }
    J::Array(out)
}

/// The records plus the reference answers, computed directly on `serde_json::Value`.
pub fn inputs(n: usize) -> Inputs {
    let records = records(n);
    let list = records.as_array().unwrap();
    let one = list[n / 2].clone();
    let email = one["profile"]["email"].as_str().unwrap().to_string();

    let sum = list
        .iter()
        .filter(|r| r["status"] == "active" && r["score"].as_i64().unwrap() > 50)
        .map(|r| r["score"].as_i64().unwrap())
        .sum();

    let mut counts: IndexMap<String, usize> = IndexMap::new();
    for r in list {
        *counts.entry(r["category"].as_str().unwrap().to_string()).or_default() += 1;
    }

    let mut sorted: Vec<&J> = list.iter().collect();
    sorted.sort_by(|a, b| b["score"].as_i64().cmp(&a["score"].as_i64()));
    let joined = sorted
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join(", ");

    let w5 = J::Array(
        list.iter()
            .filter(|r| {
                r["status"] == "active"
                    && r["score"].as_i64().unwrap() > 50
                    && r["profile"]["age"].as_i64().unwrap() < 40
            })
            .map(|r| {
                let mut o = JMap::new();
                o.insert("id".into(), r["id"].clone());
                o.insert("email".into(), r["profile"]["email"].clone());
                J::Object(o)
            })
            .collect(),
    );

    let mut vars = JMap::new();
    vars.insert("records".into(), records.clone());
    Inputs {
        records,
        vars: J::Object(vars),
        one,
        expect: Expected {
            email,
            sum,
            counts: counts.into_iter().collect(),
            joined,
            w5,
        },
    }
}
