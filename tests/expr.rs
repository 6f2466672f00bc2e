//! Data-driven tests of the expression language: one behaviour per file under
//! `tests/data/expr/ok/` (must evaluate) and `tests/data/expr/err/` (must fail to compile
//! or to evaluate). A file is an optional `# vars: {json}` line, an optional `# fuel: N`
//! line (the instruction budget) and the expression.
//! Snapshots hold the value, or the rendered diagnostics.
//! Regenerate with `cargo insta test --accept` (review with `cargo insta review`).

use tdsl::diagnostic::render_plain;
use tdsl::{Engine, FixedClock, Limits, Scope, Value};

/// Evaluates a test file; `Ok` is the value (plus rendered warnings), `Err` the rendered
/// diagnostics.
fn run(text: &str) -> Result<String, String> {
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
    let Some(program) = analysis.program else { return Err(rendered) };
    match program.eval(&vars) {
        Ok(v) => Ok(format!("{v}\n{rendered}").trim_end().to_string()),
        Err(e) => Err(render_plain(&[e.to_diagnostic()], "expr", src)),
    }
}

#[test]
fn ok() {
    insta::glob!("data/expr/ok/*.tdsl", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        match run(&text) {
            Ok(out) => insta::assert_snapshot!(out),
            Err(diags) => panic!("{} should evaluate, but:\n{diags}", path.display()),
        }
    });
}

#[test]
fn err() {
    insta::glob!("data/expr/err/*.tdsl", |path| {
        let text = std::fs::read_to_string(path).expect("readable");
        match run(&text) {
            Ok(v) => panic!("{} should fail, but gave {}", path.display(), v.chars().take(300).collect::<String>()),
            Err(diags) => insta::assert_snapshot!(diags),
        }
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
