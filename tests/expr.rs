//! Data-driven tests of the expression language: one behaviour per file under
//! `tests/data/expr/ok/` (must evaluate) and `tests/data/expr/err/` (must fail to compile
//! or to evaluate). A file is an optional `# vars: {json}` line, an optional `# fuel: N`
//! line (the instruction budget), the expression, and what it must give, in the file:
//!
//! - `# => <value>`: the result, exactly as `tdsl eval` prints it (`ok/`);
//! - `# error: E0201`: the code of every error, in order, at compile time or at run time
//!   (`err/`);
//! - `# warning: W0101`: the code of every warning, in order (no line: no warning).
//!
//! Snapshots hold the rendered diagnostics, where the rendering is the point: every `err/`
//! file, and the `ok/` files with warnings. A case whose in-file expectation disagrees
//! fails even when its snapshot matches.
//!
//! Regenerate the in-file expectations with `UPDATE_EXPECT=1 cargo test --test expr` and
//! the snapshots with `cargo insta test --accept` (review both diffs).

use std::path::Path;

use tdsl::testing::diagnostic::render_plain;
use tdsl::{Engine, FixedClock, Limits, Scope, Value};

/// What a case gave: its value or error codes, its warnings, and the rendered diagnostics.
struct Outcome {
    /// `Ok`: the value as `tdsl eval` prints it; `Err`: the error codes in order.
    result: Result<String, Vec<String>>,
    /// The warning codes in order.
    warnings: Vec<String>,
    /// What the snapshot holds: the value and rendered warnings, or the rendered errors.
    rendered: String,
}

/// The lines of a case file that state what it must give.
fn is_expectation(line: &str) -> bool {
    line.starts_with("# =>") || line.starts_with("# error:") || line.starts_with("# warning:")
}

/// Evaluates a test file.
fn run(text: &str) -> Outcome {
    let mut vars = Value::object(Default::default());
    let mut limits = Limits::default();
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(json) = line.strip_prefix("# vars:") {
            vars = serde_json::from_str(json.trim()).expect("test vars are JSON");
        } else if let Some(n) = line.strip_prefix("# fuel:") {
            limits.fuel = n.trim().parse().expect("fuel is a number");
        } else if !line.starts_with("# ") {
            lines.push(line);
        }
    }
    let src = lines.join("\n");
    let src = src.trim_end();
    // A fixed clock: `datetime_now` is deterministic in tests.
    let engine = Engine::new().with_limits(limits).with_clock(std::sync::Arc::new(FixedClock(1_767_225_600_123)));
    let analysis = engine.analyze(src, &Scope::from_vars(&vars));
    let rendered = render_plain(&analysis.diagnostics, "expr", src);
    let codes = |errors: bool| -> Vec<String> {
        analysis.diagnostics.iter().filter(|d| d.is_error() == errors).map(|d| d.code.to_string()).collect()
    };
    let warnings = codes(false);
    let Some(program) = &analysis.program else { return Outcome { result: Err(codes(true)), warnings, rendered } };
    match program.eval(&vars) {
        Ok(v) => {
            Outcome { result: Ok(v.to_string()), warnings, rendered: format!("{v}\n{rendered}").trim_end().to_string() }
        }
        Err(e) => Outcome {
            result: Err(vec![e.code.to_string()]),
            warnings,
            rendered: render_plain(&[e.to_diagnostic()], "expr", src),
        },
    }
}

/// The expectation lines `out` calls for.
fn expectation(out: &Outcome) -> Vec<String> {
    let mut lines = match &out.result {
        Ok(v) => vec![format!("# => {v}")],
        Err(codes) => codes.iter().map(|c| format!("# error: {c}")).collect(),
    };
    lines.extend(out.warnings.iter().map(|w| format!("# warning: {w}")));
    lines
}

/// Checks the file's own expectation against `out` (or rewrites it under `UPDATE_EXPECT`).
fn check_in_file(path: &Path, text: &str, out: &Outcome) {
    let want: Vec<&str> = text.lines().filter(|l| is_expectation(l)).collect();
    let got = expectation(out);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let body: Vec<&str> = text.lines().filter(|l| !is_expectation(l)).collect();
        let new = format!("{}\n{}\n", body.join("\n").trim_end(), got.join("\n"));
        std::fs::write(path, new).expect("writable");
        return;
    }
    assert!(!want.is_empty(), "{} states no `# =>` or `# error:` line; it gives:\n{}", path.display(), got.join("\n"));
    assert_eq!(want, got, "{}: the in-file expectation (left) disagrees with what it gives (right)", path.display());
}

#[test]
fn ok() {
    insta::glob!("data/expr/ok/*.tdsl", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        let out = run(&text);
        if let Err(codes) = &out.result {
            panic!("{} should evaluate, but failed with {codes:?}:\n{}", path.display(), out.rendered);
        }
        check_in_file(path, &text, &out);
        if !out.warnings.is_empty() {
            insta::assert_snapshot!(out.rendered);
        }
    });
}

#[test]
fn err() {
    insta::glob!("data/expr/err/*.tdsl", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        let out = run(&text);
        if let Ok(v) = &out.result {
            panic!("{} should fail, but gave {}", path.display(), v.chars().take(300).collect::<String>());
        }
        check_in_file(path, &text, &out);
        insta::assert_snapshot!(out.rendered);
    });
}

/// `round` of an integer with `digits <= 0` is exact (docs/language.md): against an `i128`
/// reference that rounds half away from zero by adding half a step to the magnitude; a
/// result past `i64` is the nearest float.
mod round_integers {
    use proptest::prelude::*;
    use tdsl::{Engine, Value};

    fn reference(i: i64, digits: i64) -> Value {
        if digits >= 0 {
            return Value::Int(i);
        }
        let step = 10i128.pow((-digits) as u32);
        let x = i128::from(i);
        let half = step / 2;
        let r = if x >= 0 { (x + half) / step * step } else { -((-x + half) / step * step) };
        i64::try_from(r).map_or(Value::Float(r as f64), Value::Int)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn exact(i in prop_oneof![any::<i64>(), -10_000i64..10_000, Just(i64::MAX), Just(i64::MIN)], digits in -17i64..=2) {
            let engine = Engine::new();
            let program = engine.compile("round(value=x, digits=d)").expect("compiles");
            let vars: Value = serde_json::from_str(&format!(r#"{{"x": {i}, "d": {digits}}}"#)).expect("JSON");
            let got = program.eval(&vars).expect("rounds");
            // `digits` is clamped to ±15.
            prop_assert_eq!(got, reference(i, digits.clamp(-15, 15)));
        }
    }
}

/// `as="NAME"` (SPEC §4.4) is a second name for the element's slot: it costs nothing at run
/// time, so a template written with it compiles to the very bytecode of one written with
/// `item`, and a call without it to the bytecode it always had.
mod element_name {
    use tdsl::{Engine, Scope, Value};

    fn bytecode(src: &str) -> String {
        let vars: Value =
            serde_json::from_str(r#"{"repos": [{"name": "r", "issues": [{"number": 1}]}], "xs": [{"a": 1}]}"#)
                .expect("JSON");
        let analysis = Engine::new().analyze(src, &Scope::from_vars(&vars));
        let program = analysis.program.unwrap_or_else(|| panic!("{src} compiles: {:?}", analysis.diagnostics));
        program.disassemble()
    }

    /// The listing without its source spans (`@25..32`), which differ with the text.
    fn without_spans(listing: &str) -> String {
        listing
            .lines()
            .map(|l| l.rsplit_once(" @").map_or(l, |(code, _)| code).trim_end())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn nested_map_reads_the_outer_slot() {
        insta::assert_snapshot!(bytecode(
            r#"map(array=repos, as="repo", template=map(array=repo.issues, template={repo: repo.name, number: item.number}))"#
        ));
    }

    #[test]
    fn the_name_compiles_as_item_does() {
        for (named, plain) in [
            (r#"map(xs, as="x", template=x.a + 1)"#, "map(xs, template=item.a + 1)"),
            (r#"filter(xs, as="x", condition_string="x.a > 0")"#, r#"filter(xs, condition_string="item.a > 0")"#),
            (r#"sort(xs, as="x", key_path="x.a")"#, r#"sort(xs, key_path="a")"#),
            (
                r#"sum(filter(xs, as="x", condition_string=x.a > 0), as="y", item_path=y.a)"#,
                "sum(filter(xs, condition_string=item.a > 0), item_path=item.a)",
            ),
        ] {
            assert_eq!(without_spans(&bytecode(named)), without_spans(&bytecode(plain)), "{named} and {plain} differ");
        }
    }
}
