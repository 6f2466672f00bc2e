//! Checking large composites, against a root with one callee:
//!
//! - `check/steps`: 1,000 and 4,000 steps and 5 REFs each (4 REF strings in each step's
//!   `arguments` and one REF atom in a `transform_arguments` expression), each step reading
//!   the five before it;
//! - `check/independent`: 1,000, 10,000 and 50,000 independent steps (each reads only the
//!   composite's argument), the shape issue 15 found growing as n^2.4.
//!
//! Every analysis pass is linear in steps plus edges: the larger cases show the time grows
//! with the size, not its square. Figures are in `docs/performance.md`.
//!
//! - `check/transform block`: one transform block of 2,000 and 20,000 variables and a tenth
//!   as many transforms, each reading ten variables and the output before it (each
//!   transform's scope is every name before it: shared, not copied, so linear).
//!
//! - `plans`: plans as a language model sends them (`tdsl::testing::plans`, issue 29): a typical
//!   two-step plan against a root of four tools; the largest plan the default limits let
//!   through (64 steps) clean, and with a placeholder mistake in every step, each located
//!   and rendered.
//!
//! `cargo bench --bench check` (`--no-default-features` builds only what these need)

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tdsl::testing::analysis::{Analyzer, ToolRoot};

/// A root folder with the callee every step calls.
fn root() -> PathBuf {
    let callee = r#"{
  "arguments": [
    {"name": "a0", "type_name": "integer"}, {"name": "a1", "type_name": "integer"},
    {"name": "a2", "type_name": "integer"}, {"name": "a3", "type_name": "list"},
    {"name": "a4", "type_name": "integer"}
  ],
  "responses": [{"name": "out", "type_name": "integer", "required": true}, {"name": "items", "type_name": "list"}],
  "system_event_endpoint": "builtin:echo"
}"#;
    common::tool_root("check", &[("tools/step.tool", callee)])
}

/// A composite of `n` steps; step `i` reads the five steps before it (fewer at the start).
fn composite(n: usize) -> (String, usize) {
    let mut s = String::from(
        "{\n  \"arguments\": [{\"name\": \"seed\", \"type_name\": \"integer\", \"required\": true}, {\"name\": \"seeds\", \"type_name\": \"list\", \"required\": true}],\n  \"instructions\": [\n",
    );
    let mut refs = 0;
    for i in 0..n {
        let src = |k: usize| if i > k { format!("REF:s{}", i - k - 1) } else { "REF:arguments".to_string() };
        let field = |k: usize| if i > k { "out" } else { "seed" };
        let _ = write!(
            s,
            "    {{\"execution_id\": \"s{i}\", \"tool_definition_path\": \"/tools/step.tool\",\n     \"arguments\": {{\"a0\": \"{}.{}\", \"a1\": \"{}.{}\", \"a2\": \"{}.{}\", \"a3\": \"{}\"}},\n     \"transform_arguments\": {{\"transforms\": {{\"a4\": \"{}.{} + 1\"}}}}}}{}\n",
            src(0),
            field(0),
            src(1),
            field(1),
            src(2),
            field(2),
            if i > 3 { format!("REF:s{}.items", i - 4) } else { "REF:arguments.seeds".to_string() },
            src(4),
            field(4),
            if i + 1 < n { "," } else { "" }
        );
        refs += 5;
    }
    let _ = write!(s, "  ],\n  \"response_reference_map\": {{\"last\": \"REF:s{}.out\"}}\n}}\n", n - 1);
    (s, refs + 1)
}

/// A composite of `n` independent steps: each passes the composite's argument on, and the
/// response map reads every step, so the check is clean and the DAG has one level.
fn independent(n: usize) -> String {
    let mut s = String::from(
        "{\n  \"arguments\": [{\"name\": \"seed\", \"type_name\": \"integer\", \"required\": true}],\n  \"instructions\": [\n",
    );
    for i in 0..n {
        let _ = writeln!(
            s,
            "    {{\"execution_id\": \"s{i}\", \"tool_definition_path\": \"/tools/step.tool\", \"arguments\": {{\"a0\": \"REF:arguments.seed\"}}}}{}",
            if i + 1 < n { "," } else { "" }
        );
    }
    s.push_str("  ]\n}\n");
    s
}

fn bench(c: &mut Criterion) {
    let dir = root();
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    for n in [1_000, 10_000, 50_000] {
        let source = independent(n);
        let mut analyzer = Analyzer::new(ToolRoot::new(&dir));
        let checked = analyzer.check_source("independent.tool", &source);
        assert!(checked.diagnostics.is_empty(), "{:?}", &checked.diagnostics[..checked.diagnostics.len().min(3)]);
        let plan = checked.plan.as_ref().expect("a plan");
        assert_eq!((plan.execution_ids().len(), plan.levels().len()), (n, 1));
        group.bench_with_input(BenchmarkId::new("independent", n), &source, |b, source| {
            b.iter(|| analyzer.check_source("independent.tool", source))
        });
    }
    group.sample_size(20);
    for n in [1_000, 4_000] {
        let (source, refs) = composite(n);
        // Every step but the last is read by a later one, so the check is clean.
        let mut analyzer = Analyzer::new(ToolRoot::new(&dir));
        let checked = analyzer.check_source("bench.tool", &source);
        assert!(checked.diagnostics.is_empty(), "{:?}", &checked.diagnostics[..checked.diagnostics.len().min(3)]);
        assert_eq!(checked.plan.as_ref().map(|p| p.execution_ids().len()), Some(n));
        group.bench_with_input(BenchmarkId::new(format!("steps/{refs} refs"), n), &source, |b, source| {
            b.iter(|| analyzer.check_source("bench.tool", source))
        });
        // The same without types from use (issue 18), for its share of the time.
        analyzer.set_types_from_use(false);
        group.bench_with_input(
            BenchmarkId::new(format!("steps without types from use/{refs} refs"), n),
            &source,
            |b, source| b.iter(|| analyzer.check_source("bench.tool", source)),
        );
    }
    for n in [2_000, 20_000] {
        let source = common::transform_block(n);
        let mut analyzer = Analyzer::new(ToolRoot::new(&dir));
        assert!(analyzer.check_source("block.tool", &source).plan.is_some());
        group.bench_with_input(BenchmarkId::new("transform block", n), &source, |b, source| {
            b.iter(|| analyzer.check_source("block.tool", source))
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(dir);
}

/// A plan of `n` steps against `tests/data/plans/root`: each step summarizes the text of
/// the one before (step 0 a literal); with `mistake`, every REF is written `{{sN.summary}}`.
fn plan(n: usize, mistake: bool) -> String {
    let mut steps = Vec::new();
    for i in 0..n {
        let text = match i {
            0 => "\"a b c d e f\"".to_string(),
            _ if mistake => format!("\"{{{{s{}.summary}}}}\"", i - 1),
            _ => format!("\"REF:s{}.summary\"", i - 1),
        };
        steps.push(format!(
            "    {{\"execution_id\": \"s{i}\", \"tool_definition_path\": \"summarize\", \"arguments\": {{\"text\": {text}}}}}"
        ));
    }
    format!(
        "{{\n  \"instructions\": [\n{}\n  ],\n  \"response_reference_map\": {{\"summary\": \"REF:s{}.summary\"}}\n}}\n",
        steps.join(",\n"),
        n - 1
    )
}

fn bench_plans(c: &mut Criterion) {
    use tdsl::testing::plans::PlanDesk;
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let plans = PlanDesk::for_root(manifest.join("tests/data/plans/root"), &["/tools/*.tool"]).expect("the root loads");
    let mut group = c.benchmark_group("plans");
    let typical = std::fs::read_to_string(manifest.join("tests/data/plans/cli/clean.json")).expect("the plan");
    assert!(plans.check(&typical).ok());
    group.bench_function("check/typical", |b| b.iter(|| plans.check(&typical)));
    let clean = plan(64, false);
    assert!(plans.check(&clean).ok());
    group.bench_function("check/64 steps", |b| b.iter(|| plans.check(&clean)));
    let wrong = plan(64, true);
    assert_eq!(plans.check(&wrong).counts().0, 63);
    group.bench_function("check/64 steps, 63 placeholders", |b| b.iter(|| plans.check(&wrong)));
    group.finish();
}

criterion_group!(benches, bench, bench_plans);
criterion_main!(benches);
