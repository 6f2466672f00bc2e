//! `bench-plans`: runs the suite both ways and writes `results.md` (see `run.sh`).
//!
//!   bench-plans [OUT.md]     # default: results.md in the crate
//!
//! `BENCH_GUIDE=FILE` puts FILE's text in run_plan's description instead of the placeholder.

use std::fmt::Write as _;
use std::process::ExitCode;

use tdsl_bench_plans::{tasks, Bench, Count, Tokens};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-plans: {e}");
            ExitCode::FAILURE
        }
    }
}

fn pct(plan: usize, direct: usize) -> String {
    if direct == 0 {
        return "n/a".into();
    }
    format!("{:.1} %", 100.0 * (1.0 - plan as f64 / direct as f64))
}

fn times(direct: usize, plan: usize) -> String {
    format!("{:.1}×", direct as f64 / plan.max(1) as f64)
}

fn run() -> Result<(), String> {
    let out = std::env::args().nth(1).map_or_else(|| tdsl_bench_plans::crate_dir().join("results.md"), Into::into);
    let bench = Bench::new()?;
    let tokens = Tokens::o200k()?;
    let mut rows = String::new();
    let mut why_not = String::new();
    let (mut direct, mut parallel, mut plan) = (Count::default(), Count::default(), Count::default());
    for task in tasks() {
        let m = bench.measure(&task)?;
        m.check()?;
        for w in &m.plan.warnings {
            eprintln!("{}: {w}", task.id);
        }
        let c = m.counts(&bench, &tokens);
        eprintln!("{}: {:?}", task.id, c);
        let _ = writeln!(
            rows,
            "| {} | {} | {} | {} / {} / {} | {} | {} / {} / {} | {} | {} / {} | {} |",
            task.id,
            task.shape,
            c.direct.calls,
            c.direct.requests,
            c.direct_parallel.requests,
            c.plan.requests,
            times(c.direct.requests, c.plan.requests),
            c.direct.sent_total,
            c.direct_parallel.sent_total,
            c.plan.sent_total,
            pct(c.plan.sent_total, c.direct.sent_total),
            c.direct.context_end,
            c.plan.context_end,
            pct(c.plan.context_end, c.direct.context_end),
        );
        let saved = 1.0 - c.plan.sent_total as f64 / c.direct.sent_total as f64;
        let fewer = c.direct.requests as f64 / c.plan.requests as f64;
        if saved < 0.9 || fewer < 3.0 {
            let _ = writeln!(
                why_not,
                "- `{}` ({} tool call{}): {:.1} % fewer tokens, {:.1}× fewer round trips.",
                task.id,
                c.direct.calls,
                if c.direct.calls == 1 { "" } else { "s" },
                100.0 * saved,
                fewer
            );
        }
        direct += c.direct;
        parallel += c.direct_parallel;
        plan += c.plan;
    }
    let guide_tokens = tokens.count(&bench.guide);
    let header_direct = tokens.count(&bench.tools_list().to_string());
    let header_plan = tokens.count(&bench.tools_list_with_plans().to_string());
    let mut md = String::new();
    let _ = writeln!(md, "# Plans versus direct tool calling: results\n");
    let _ = writeln!(md, "Written by `bench-plans/run.sh` (tokenizer: o200k_base, `tiktoken-rs`). Guide in run_plan's description: {} ({} characters, {} tokens). Tool definitions: {} tokens for the 11 served tools (`tools/list`), {} with check_plan and run_plan.\n", bench.guide_source, bench.guide.chars().count(), guide_tokens, header_direct, header_plan);
    let _ = writeln!(md, "Round trips are requests to the model, written direct (one call a turn) / direct (parallel calls) / plan. Tokens sent are the input tokens summed over those requests, direct / direct (parallel calls) / plan; the context at the end is direct / plan (the same whether calls are parallel or not).\n");
    let _ = writeln!(md, "| task | shape | tool calls | round trips | fewer | tokens sent | saved | context at end | saved |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    md.push_str(&rows);
    let _ = writeln!(
        md,
        "| **suite** | | {} | {} / {} / {} | {} | {} / {} / {} | {} | {} / {} | {} |",
        direct.calls,
        direct.requests,
        parallel.requests,
        plan.requests,
        times(direct.requests, plan.requests),
        direct.sent_total,
        parallel.sent_total,
        plan.sent_total,
        pct(plan.sent_total, direct.sent_total),
        direct.context_end,
        plan.context_end,
        pct(plan.context_end, direct.context_end),
    );
    let _ = writeln!(
        md,
        "\nAgainst parallel tool calls: {} fewer tokens sent, {} fewer round trips. Tokens the model writes: direct {}, plan {}.\n",
        pct(plan.sent_total, parallel.sent_total),
        times(parallel.requests, plan.requests),
        direct.generated,
        plan.generated
    );
    if why_not.is_empty() {
        md.push_str("Every task meets the target (≥ 90 % fewer tokens sent, ≥ 3× fewer round trips).\n");
    } else {
        md.push_str("Tasks short of the target (≥ 90 % fewer tokens sent, ≥ 3× fewer round trips):\n\n");
        md.push_str(&why_not);
    }
    std::fs::write(&out, &md).map_err(|e| format!("{}: {e}", out.display()))?;
    print!("{md}");
    Ok(())
}
