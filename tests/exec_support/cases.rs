//! Engine cases as data (tests/data/exec/README.md): a folder of `.tool` files and one or
//! more runs, each a `NAME.run.json` (the arguments, the called tools' scripted answers in
//! the `--mock` format, the options as `tdsl run` flags) beside its expected outcome
//! `NAME.expected.json` (the trace without what says when, how long or where).
//!
//! [`check_local`] runs a case on the local engine (in process, virtual clock, seeded
//! randomness), compares its outcome with the expectation, then replays the recorded trace
//! and compares again: the replay must reproduce it, with no divergence. tests/temporal.rs
//! runs the same cases on Temporal and compares with [`compare`]. `TDSL_BLESS=1` writes the
//! local outcome as the expectation instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value as Json};
use tdsl::testing::exec::{
    replay, Executor, GuardError, Guards, ManualTime, Options, Run, SeededRandom, Trace, Workflow,
};
use tdsl::testing::host::Mock;
use tdsl::HostRunner;

/// The seed of a case's randomness (retry jitter) unless its options say `seed`.
pub const SEED: u64 = 7;

/// 2026-01-01T00:00:00Z, where a case's virtual clock starts.
const WALL_START: i64 = 1_767_225_600_000;

/// The folder of every case.
pub fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/exec")
}

/// One run of a case: `NAME.run.json` in the case's folder.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The case's folder: the tool root.
    pub dir: PathBuf,
    /// `case/NAME`, for messages.
    pub name: String,
    /// The composite run (a tool path under the root; `/main.tool` unless `tool` says).
    pub tool: String,
    /// The run's arguments.
    pub args: Json,
    /// The scripted answers of the called tools, a `--mock` file's JSON (docs/execution.md).
    pub answers: Option<Json>,
    /// The options, by `tdsl run` flag without its dashes (`"concurrency": 1`).
    pub options: Map<String, Json>,
    /// How an engine legitimately differs: `{"temporal": {"ignore": [KEY…], "why": …}}`.
    pub engines: Map<String, Json>,
    /// Where the expectation is.
    pub expected: PathBuf,
}

impl Spec {
    /// Reads `dir/NAME.run.json`.
    pub fn read(dir: &Path, run: &str) -> Spec {
        let path = dir.join(format!("{run}.run.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let v: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        let Json::Object(mut m) = v else { panic!("{}: not an object", path.display()) };
        for key in m.keys() {
            let known = ["about", "tool", "args", "answers", "options", "engines"];
            assert!(known.contains(&key.as_str()), "{}: unknown key `{key}` (known: {known:?})", path.display());
        }
        assert!(m.get("about").and_then(Json::as_str).is_some_and(|a| !a.is_empty()), "{}: no `about`", path.display());
        let object = |v: Option<Json>| match v {
            None => Map::new(),
            Some(Json::Object(o)) => o,
            Some(other) => panic!("{}: an object expected, not {other}", path.display()),
        };
        let case = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Spec {
            dir: dir.to_path_buf(),
            name: format!("{case}/{run}"),
            tool: m.remove("tool").and_then(|t| t.as_str().map(str::to_string)).unwrap_or_else(|| "/main.tool".into()),
            args: m.remove("args").unwrap_or_else(|| Json::Object(Map::new())),
            answers: m.remove("answers"),
            options: object(m.remove("options")),
            engines: object(m.remove("engines")),
            expected: dir.join(format!("{run}.expected.json")),
        }
    }

    /// The options as the library's, and the seed.
    pub fn options(&self) -> (Options, u64) {
        let mut o = Options::default();
        let mut seed = SEED;
        let mut guards = Guards::new();
        for (k, v) in &self.options {
            let n = || v.as_f64().unwrap_or_else(|| panic!("{}: option `{k}` takes a number", self.name));
            match k.as_str() {
                "concurrency" => o.max_concurrency = n() as usize,
                "deadline" => o.deadline = Some(Duration::from_secs_f64(n())),
                "breaker-threshold" => o.breaker.failure_threshold = n() as u32,
                "breaker-reset-seconds" => o.breaker.reset_timeout_seconds = n(),
                "breaker-half-open-calls" => o.breaker.half_open_calls = n() as u32,
                "max-steps" => guards = guards.max_steps(n() as usize),
                "max-fan-out" => guards = guards.max_fan_out(n() as usize),
                "max-calls-per-run" => guards = guards.max_calls_per_run(n() as usize),
                "max-result-bytes" => guards = guards.max_result_bytes(n() as usize),
                "max-nesting" => o.max_depth = n() as usize,
                "seed" => seed = n() as u64,
                "allow-tool" => {
                    let globs: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Json::as_str).collect();
                    guards = guards.allow_tools(&globs).unwrap_or_else(|e| panic!("{}: {e}", self.name));
                }
                _ => panic!("{}: unknown option `{k}`", self.name),
            }
        }
        o.guards = guards;
        (o, seed)
    }

    /// The options as `tdsl run` flags (`--seed` always, so that both engines draw the same).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if !self.options.contains_key("seed") {
            flags.extend(["--seed".to_string(), SEED.to_string()]);
        }
        for (k, v) in &self.options {
            for v in v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]) {
                flags.push(format!("--{k}"));
                flags.push(v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
        }
        flags
    }

    /// The keys an engine leaves out of the comparison: the engine's own
    /// ([`ENGINE_IGNORES`]) and the case's, which says why.
    pub fn ignored_on(&self, engine: &str) -> Vec<String> {
        let mut keys: Vec<String> = ENGINE_IGNORES
            .iter()
            .filter(|(e, _, _)| *e == engine)
            .flat_map(|(_, keys, _)| keys.iter().map(|k| k.to_string()))
            .collect();
        let Some(e) = self.engines.get(engine) else { return keys };
        assert!(
            e.get("why").and_then(Json::as_str).is_some_and(|w| !w.is_empty()),
            "{}: `engines.{engine}` must say `why`",
            self.name
        );
        let listed = e.get("ignore").and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str);
        keys.extend(listed.map(String::from));
        keys
    }

    /// Why an engine does not run this case at all, if it does not.
    pub fn skipped_on(&self, engine: &str) -> Option<String> {
        let e = self.engines.get(engine)?;
        e.get("skip").and_then(Json::as_bool).filter(|s| *s)?;
        Some(e.get("why").and_then(Json::as_str).unwrap_or_default().to_string())
    }

    /// The expected outcome, as written.
    pub fn expectation(&self) -> Result<Json, String> {
        let text = std::fs::read_to_string(&self.expected)
            .map_err(|e| format!("{}: no expectation ({e}); bless it with TDSL_BLESS=1", self.expected.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", self.expected.display()))
    }
}

/// What an engine leaves out of every case's comparison, and why (documented differences).
pub const ENGINE_IGNORES: [(&str, &[&str], &str); 1] = [(
    "temporal",
    &["circuit_state", "circuit_breaker_trips"],
    "the circuit breakers are the workers' on Temporal: a run's trace has no circuit state (docs/distributed.md)",
)];

/// Every run of every case, sorted.
pub fn all() -> Vec<Spec> {
    let mut specs = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(data())
        .expect("tests/data/exec")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let mut runs: Vec<String> = std::fs::read_dir(&dir)
            .expect("a case")
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".run.json").map(str::to_string))
            .collect();
        runs.sort();
        assert!(!runs.is_empty(), "{}: a case without a NAME.run.json", dir.display());
        specs.extend(runs.iter().map(|r| Spec::read(&dir, r)));
    }
    specs
}

/// The run `case/run` (`case` alone is `case/run`).
pub fn spec(name: &str) -> Spec {
    let (case, run) = name.split_once('/').unwrap_or((name, "run"));
    Spec::read(&data().join(case), run)
}

/// Loads the case's composite with its nesting limit.
pub fn load(spec: &Spec, options: &Options) -> Workflow {
    let file = spec.dir.join(spec.tool.trim_start_matches('/'));
    match Workflow::load_with_nesting(&spec.dir, &file, tdsl::testing::exec::engine(), options.max_depth) {
        Ok(w) => w,
        Err(e) => panic!("{}: does not load: {e:?}", spec.name),
    }
}

/// Runs a case on the local engine: its answers from a mock, a virtual clock, seeded
/// randomness. The clock is returned for tests that look at it.
pub fn run_local(spec: &Spec) -> (Result<Run, GuardError>, Arc<ManualTime>) {
    let (options, seed) = spec.options();
    let workflow = load(spec, &options);
    let mut runner = HostRunner::new();
    if let Some(answers) = &spec.answers {
        runner =
            runner.with_mock(Mock::from_json(&answers.to_string()).unwrap_or_else(|e| panic!("{}: {e}", spec.name)));
    }
    let time = Arc::new(ManualTime::new(WALL_START));
    let ex = Executor::new(runner)
        .with_time(time.clone())
        .with_random(Arc::new(SeededRandom::new(seed)))
        .with_options(options);
    let args = serde_json::from_value(spec.args.clone()).expect("the arguments as a value");
    (ex.run(&workflow, args), time)
}

/// A run's outcome as a case records it: its trace without what says when, how long, how
/// wide or where it ran; or the refusal before it.
pub fn outcome(run: &Result<Run, GuardError>) -> Json {
    match run {
        Ok(run) => normalized(&serde_json::from_str(&run.trace.to_json()).expect("the trace is JSON")),
        Err(refused) => serde_json::json!({"refused": format!("{refused} [{}]", refused.code())}),
    }
}

/// The keys of a trace whose values change from run to run, or engine to engine, with the
/// same outcome: kept (whether they are there is part of the outcome), their values
/// replaced by `"…"`.
const RUN_KEYS: [&str; 7] =
    ["trace_id", "run_id", "started_at", "completed_at", "total_duration_ms", "max_in_flight", "clock_reads"];
/// Where the composite's file and root were (a `tdsl run` records them, the library does not)
/// and the file reads: left out.
const WHERE_KEYS: [&str; 3] = ["file", "root", "files"];
/// The same as [`RUN_KEYS`] for a step, a fan-out child and an attempt.
const STEP_KEYS: [&str; 7] =
    ["started_at", "completed_at", "duration_ms", "started_ms", "ended_ms", "clock_reads", "callee_clock_reads"];

fn blur(m: &mut Map<String, Json>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = m.get_mut(*k) {
            *v = Json::String("…".into());
        }
    }
}

/// A trace (JSON) with the values of [`RUN_KEYS`] and [`STEP_KEYS`] blurred, without
/// [`WHERE_KEYS`].
pub fn normalized(trace: &Json) -> Json {
    let mut t = trace.clone();
    if let Some(m) = t.as_object_mut() {
        blur(m, &RUN_KEYS);
        for k in WHERE_KEYS {
            m.remove(k);
        }
        if let Some(steps) = m.get_mut("step_results") {
            steps_blurred(steps);
        }
    }
    t
}

fn steps_blurred(steps: &mut Json) {
    for s in steps.as_array_mut().into_iter().flatten() {
        let Some(m) = s.as_object_mut() else { continue };
        blur(m, &STEP_KEYS);
        for a in m.get_mut("attempts").and_then(Json::as_array_mut).into_iter().flatten() {
            if let Some(a) = a.as_object_mut() {
                blur(a, &STEP_KEYS);
            }
        }
        if let Some(children) = m.get_mut("children") {
            steps_blurred(children);
        }
        if let Some(nested) = m.get_mut("steps") {
            steps_blurred(nested);
        }
    }
}

/// `value` without the object keys `keys`, at any depth.
fn without(value: &Json, keys: &[String]) -> Json {
    match value {
        Json::Object(m) => Json::Object(
            m.iter().filter(|(k, _)| !keys.contains(k)).map(|(k, v)| (k.clone(), without(v, keys))).collect(),
        ),
        Json::Array(a) => Json::Array(a.iter().map(|v| without(v, keys)).collect()),
        other => other.clone(),
    }
}

/// Compares an outcome of `spec` on `engine` with its expectation, leaving out the keys the
/// case says that engine legitimately differs in. `Err` is a readable diff.
pub fn compare(spec: &Spec, engine: &str, actual: &Json) -> Result<(), String> {
    let expected = spec.expectation()?;
    let ignored = spec.ignored_on(engine);
    let (want, got) = (without(&expected, &ignored), without(actual, &ignored));
    if want == got {
        return Ok(());
    }
    let pretty = |v: &Json| serde_json::to_string_pretty(v).unwrap_or_default();
    Err(format!(
        "{} on {engine} differs from {} (- expected, + actual; TDSL_BLESS=1 rewrites the expectation):\n{}",
        spec.name,
        spec.expected.display(),
        diff(&pretty(&want), &pretty(&got))
    ))
}

/// Whether expectations are being written (`TDSL_BLESS=1`).
pub fn blessing() -> bool {
    std::env::var("TDSL_BLESS").is_ok_and(|v| v == "1")
}

/// Runs `spec` on the local engine and by replay of its recorded trace, and compares both
/// with its expectation (or writes it, when blessing).
pub fn check_local(spec: &Spec) -> Result<(), String> {
    let (run, _) = run_local(spec);
    let got = outcome(&run);
    if blessing() {
        std::fs::write(&spec.expected, serde_json::to_string_pretty(&got).unwrap_or_default() + "\n")
            .map_err(|e| format!("{}: {e}", spec.expected.display()))?;
    }
    compare(spec, "local", &got)?;
    let Ok(run) = run else { return Ok(()) };
    within_concurrency(spec, run.trace.max_in_flight as u64)?;
    // The replay reads the trace back from its JSON, as `tdsl replay` does.
    let trace =
        Trace::from_json(&run.trace.to_json()).map_err(|e| format!("{}: the trace does not read: {e}", spec.name))?;
    let (options, _) = spec.options();
    let replayed = replay(&load(spec, &options), &trace, options)
        .map_err(|e| format!("{}: the replay is refused: {e}", spec.name))?;
    if !replayed.divergences.is_empty() {
        return Err(format!("{}: the replay diverges: {:?}", spec.name, replayed.divergences));
    }
    compare(spec, "local", &outcome(&Ok(replayed.run))).map_err(|e| format!("by replay: {e}"))
}

/// The most calls in flight at once stayed within the case's `concurrency`, if it sets one.
pub fn within_concurrency(spec: &Spec, max_in_flight: u64) -> Result<(), String> {
    match spec.options.get("concurrency").and_then(Json::as_u64) {
        Some(limit) if max_in_flight > limit => {
            Err(format!("{}: {max_in_flight} calls in flight at once, over --concurrency {limit}", spec.name))
        }
        _ => Ok(()),
    }
}

/// A line diff of two texts: `-` lines only in `want`, `+` lines only in `got`, two lines
/// of context around each change.
pub fn diff(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    // The longest common subsequence, by dynamic programming from the ends.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut lines = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            lines.push(('+', b[j]));
            j += 1;
        } else {
            lines.push(('-', a[i]));
            i += 1;
        }
    }
    let near = |k: usize| lines[k.saturating_sub(2)..(k + 3).min(lines.len())].iter().any(|(c, _)| *c != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in lines.iter().enumerate() {
        if near(k) {
            out.push_str(&format!("{c} {line}\n"));
            skipped = false;
        } else if !skipped {
            out.push_str("  …\n");
            skipped = true;
        }
    }
    out
}
