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
