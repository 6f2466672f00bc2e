//! `peers <engine> <workload> <N>`: one (engine, workload, N) measurement per process.
//!
//! The process generates the data deterministically, prepares the engine outside the timed
//! region (compile the program, convert the input once), checks that the engine's answer
//! matches the hand-written reference, then times the workload with criterion and prints one
//! machine-readable line:
//!
//! ```text
//! PEERS<TAB>engine<TAB>workload<TAB>N<TAB>ns_per_iter<TAB>note
//! ```
//!
//! `ns_per_iter` is criterion's median estimate, or `n/a` (with the reason in `note`) when the
//! engine has no sensible way to express the workload. Other invocations:
//!
//! - `peers list` prints the engines and the workloads, one per line, for `run.sh`;
//! - `peers report <results.tsv>` renders the collected lines as the markdown of results.md;
//! - `peers interleave <N> [reps]` times tdsl and its baseline for issue 33's cells
//!   alternately, in one process, and prints the medians (see `src/interleave.rs`);
//!   `peers loop <cell> <base|tdsl> <N> <iters>` runs one side untimed, for callgrind;
//! - `peers check <N>` prepares and checks every (engine, workload) pair in this one process
//!   without timing anything (a quick correctness test of the whole matrix).
//!
//! Environment: `PEERS_WARMUP_MS` (default 1000), `PEERS_MEASURE_MS` (default 3000),
//! `PEERS_CRITERION_DIR` (default `<crate>/target/peers-criterion`), `PEERS_NO_TIME=1`
//! (check only, print the line with the single check run's time).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map as JMap, Value as J};

mod data;
mod hand;
#[cfg(feature = "tdsl")]
mod interleave;
mod jaq;
mod jmes;
mod report;
mod rhai_peer;
#[cfg(feature = "tdsl")]
mod tdsl_peer;

/// The workloads. See README.md for what each one measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum W {
    /// Convert the input list into the engine's own value type.
    W0,
    /// `profile.email` on one record.
    W1,
    /// filter(status == "active" and score > 50) | map(score) | sum.
    W2,
    /// group by category, count per group.
    W3,
    /// sort by score descending, map name, join with ", ".
    W4,
    /// compile a ~100-character filter + object template.
    W5,
}

pub const WORKLOADS: [W; 6] = [W::W0, W::W1, W::W2, W::W3, W::W4, W::W5];

pub const ENGINES: [&str; 7] = [
    "hand",
    "tdsl",
    "jaq",
    "jaq-alt",
    "jmespath",
    "jmespath-search",
    "rhai",
];

impl W {
    fn parse(s: &str) -> Option<W> {
        WORKLOADS.iter().copied().find(|w| w.name().eq_ignore_ascii_case(s))
    }
    pub fn name(self) -> &'static str {
        match self {
            W::W0 => "W0",
            W::W1 => "W1",
            W::W2 => "W2",
            W::W3 => "W3",
            W::W4 => "W4",
            W::W5 => "W5",
        }
    }
}

/// The timed operation of one (engine, workload) pair, already prepared and checked.
pub type Timed = Box<dyn FnMut()>;

/// What preparing an (engine, workload) pair gives.
pub enum Prepared {
    /// The timed closure, and a note printed in the result line (may be empty).
    Run(Timed, String),
    /// The engine cannot express the workload (reason).
    NotApplicable(String),
}

impl Prepared {
    pub fn run(f: impl FnMut() + 'static) -> Prepared {
        Prepared::Run(Box::new(f), String::new())
    }
    pub fn run_note(f: impl FnMut() + 'static, note: &str) -> Prepared {
        Prepared::Run(Box::new(f), note.to_string())
    }
    pub fn na(reason: &str) -> Prepared {
        Prepared::NotApplicable(reason.to_string())
    }
}

/// The input of every workload and the answers every engine must give.
pub struct Inputs {
    /// The N records, as a JSON array.
    pub records: J,
    /// `{"records": [...]}`, the variables object of the tdsl programs.
    pub vars: J,
    /// The record W1 reads (index N/2).
    pub one: J,
    pub expect: Expected,
}

pub struct Expected {
    /// W1: the email of `one`.
    pub email: String,
    /// W2: sum of the scores of active records scoring over 50.
    pub sum: i64,
    /// W3: per-category counts, categories in first-seen order.
    pub counts: Vec<(String, usize)>,
    /// W4: names sorted by score descending (ties keep input order), joined with ", ".
    pub joined: String,
    /// W5: what the compiled W5 program gives on the records: `{id, email}` of the active
    /// records with score > 50 and age < 40.
    pub w5: J,
}

impl Expected {
    /// W3 counts in category order (the order of jq's `group_by`).
    pub fn counts_sorted(&self) -> Vec<(String, usize)> {
        let mut c = self.counts.clone();
        c.sort();
        c
    }
    pub fn counts_object(&self) -> J {
        J::Object(self.counts.iter().map(|(k, v)| (k.clone(), J::from(*v))).collect::<JMap<_, _>>())
    }
}

/// Compare an engine's answer with the expected one; panics with both on a mismatch.
pub fn check_eq<T: PartialEq + std::fmt::Debug>(engine: &str, w: W, got: T, want: T) {
    if got != want {
        let g = format!("{got:?}");
        let e = format!("{want:?}");
        panic!(
            "{engine} {}: wrong answer\n  got:  {}\n  want: {}",
            w.name(),
            clip(&g),
            clip(&e)
        );
    }
}

fn clip(s: &str) -> String {
    if s.len() > 600 {
        let mut end = 600;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} chars)", &s[..end], s.len())
    } else {
        s.to_string()
    }
}

fn prepare(engine: &str, w: W, inp: &Inputs) -> Prepared {
    match engine {
        "hand" => hand::prepare(w, inp),
        "tdsl" => {
            #[cfg(feature = "tdsl")]
            {
                tdsl_peer::prepare(w, inp)
            }
            #[cfg(not(feature = "tdsl"))]
            {
                Prepared::na("built without the `tdsl` feature")
            }
        }
        "jaq" => jaq::prepare(w, inp, false),
        "jaq-alt" => jaq::prepare(w, inp, true),
        "jmespath" => jmes::prepare(w, inp, false),
        "jmespath-search" => jmes::prepare(w, inp, true),
        "rhai" => rhai_peer::prepare(w, inp),
        other => {
            eprintln!("unknown engine {other:?}; engines: {}", ENGINES.join(", "));
            std::process::exit(2)
        }
    }
}

fn env_ms(name: &str, default: u64) -> Duration {
    Duration::from_millis(
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
    )
}

/// Time `f` with criterion; returns criterion's median estimate in ns per call.
fn measure(engine: &str, w: W, n: usize, f: &mut Timed) -> f64 {
    // A pilot call decides how many samples fit: slow workloads get fewer, flat samples.
    let t = Instant::now();
    f();
    let pilot = t.elapsed();
    let warm = env_ms("PEERS_WARMUP_MS", 1000);
    let meas = env_ms("PEERS_MEASURE_MS", 3000);
    let dir = std::env::var_os("PEERS_CRITERION_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peers-criterion"));
    let mut c = criterion::Criterion::default()
        .output_directory(&dir)
        .without_plots()
        .nresamples(20_000);
    let id = format!("{}-{}", w.name(), n);
    {
        let mut g = c.benchmark_group(engine);
        g.warm_up_time(warm).measurement_time(meas);
        if pilot > Duration::from_millis(2) {
            g.sample_size(10).sampling_mode(criterion::SamplingMode::Flat);
        } else if pilot > Duration::from_micros(200) {
            g.sample_size(30).sampling_mode(criterion::SamplingMode::Flat);
        } else {
            g.sample_size(100);
        }
        g.bench_function(&id, |b| b.iter(&mut *f));
        g.finish();
    }
    let path = dir.join(engine).join(&id).join("new").join("estimates.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading criterion's {}: {e}", path.display()));
    let est: J = serde_json::from_str(&text).expect("criterion estimates.json");
    est["median"]["point_estimate"]
        .as_f64()
        .expect("median.point_estimate in estimates.json")
}

fn usage() -> ! {
    eprintln!(
        "usage: peers <engine> <workload> <N>   engines: {}; workloads: W0..W5\n       peers list\n       peers check <N>\n       peers report <results.tsv>",
        ENGINES.join(", ")
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            println!("engines {}", ENGINES.join(" "));
            println!(
                "workloads {}",
                WORKLOADS.iter().map(|w| w.name()).collect::<Vec<_>>().join(" ")
            );
        }
        Some("report") if args.len() == 2 => {
            print!("{}", report::report(&args[1]));
        }
        #[cfg(feature = "tdsl")]
        Some("interleave") => {
            let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
            let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
            interleave::run(n, reps);
        }
        #[cfg(feature = "tdsl")]
        Some("loop") if args.len() == 5 => {
            let n: usize = args[3].parse().unwrap_or_else(|_| usage());
            let iters: usize = args[4].parse().unwrap_or_else(|_| usage());
            interleave::run_loop(&args[1], &args[2], n, iters);
        }
        Some("check") => {
            let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
            let inp = data::inputs(n);
            for engine in ENGINES {
                for w in WORKLOADS {
                    let t = Instant::now();
                    let what = match prepare(engine, w, &inp) {
                        Prepared::Run(mut f, note) => {
                            f();
                            let note = if note.is_empty() { String::new() } else { format!("  ({note})") };
                            format!("ok, prepare+check+1 run {:?}{note}", t.elapsed())
                        }
                        Prepared::NotApplicable(why) => format!("n/a: {why}"),
                    };
                    println!("{engine:16} {} N={n}: {what}", w.name());
                }
            }
        }
        Some(engine) if args.len() == 3 => {
            let w = W::parse(&args[1]).unwrap_or_else(|| usage());
            let n: usize = args[2].parse().unwrap_or_else(|_| usage());
            let inp = data::inputs(n);
            match prepare(engine, w, &inp) {
                Prepared::NotApplicable(why) => {
                    println!("PEERS\t{engine}\t{}\t{n}\tn/a\t{why}", w.name());
                }
                Prepared::Run(mut f, note) => {
                    // The data is only needed by the closures now.
                    drop(inp);
                    let ns = if std::env::var_os("PEERS_NO_TIME").is_some() {
                        let t = Instant::now();
                        f();
                        t.elapsed().as_nanos() as f64
                    } else {
                        measure(engine, w, n, &mut f)
                    };
                    println!("PEERS\t{engine}\t{}\t{n}\t{ns:.1}\t{note}", w.name());
                }
            }
        }
        _ => usage(),
    }
    black_box(());
}
