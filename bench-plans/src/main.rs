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
    let guide_tokens = tokens.count(&bench.guide);
    let header_direct = tokens.count(&bench.tools_list().to_string());
    let header_plan = tokens.count(&bench.tools_list_with_plans().to_string());
    let mut why_not = String::new();
    let mut pieces = String::new();
    let (mut direct, mut parallel, mut plan, mut repaired) =
        (Count::default(), Count::default(), Count::default(), Count::default());
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
            "| {} | {} | {} | {} / {} / {} | {} | {} / {} / {} | {} | {} ({}) | {} / {} | {} |",
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
            c.plan_repaired.sent_total,
            pct(c.plan_repaired.sent_total, c.direct.sent_total),
            c.direct.context_end,
            c.plan.context_end,
            pct(c.plan.context_end, c.direct.context_end),
        );
        if task.id == "densest" {
            eprintln!("a refused first attempt answers: {}", m.plan.repair.1);
        }
        let z = m.sizes(&tokens);
        let _ = writeln!(
            pieces,
            "| {} | {} | {} ({} a call) | {} ({} a result) | {} | {} |",
            task.id,
            c.direct.calls,
            z.direct_calls,
            z.direct_calls / c.direct.calls.max(1),
            z.direct_results,
            z.direct_results / c.direct.calls.max(1),
            z.plan_call,
            z.plan_answer
        );
        let saved = 1.0 - c.plan.sent_total as f64 / c.direct.sent_total as f64;
        let fewer = c.direct.requests as f64 / c.plan.requests as f64;
        if saved < 0.9 || fewer < 3.0 {
            let _ = writeln!(
                why_not,
                "- `{}`: {:.1} % fewer tokens sent, {:.1}× fewer round trips. Direct: {} request{}, each re-reading the tool list ({} tokens) and what came before; its {} tool result{}: {} tokens in all. Plan: 2 requests, each re-reading the tool list with check_plan and run_plan ({} tokens); the plan adds {} tokens and run_plan's answer {}.",
                task.id,
                100.0 * saved,
                fewer,
                c.direct.requests,
                if c.direct.requests == 1 { "" } else { "s" },
                header_direct,
                c.direct.calls,
                if c.direct.calls == 1 { "" } else { "s" },
                z.direct_results,
                header_plan,
                z.plan_call,
                z.plan_answer
            );
        }
        direct += c.direct;
        parallel += c.direct_parallel;
        plan += c.plan;
        repaired += c.plan_repaired;
    }
    let mut md = String::new();
    let _ = writeln!(md, "# Plans versus direct tool calling: results\n");
    let _ = writeln!(md, "Written by `bench-plans/run.sh` at tdsl `{}`; what is counted: `bench-plans/README.md` (tokenizer: o200k_base, `tiktoken-rs`). Guide in run_plan's description: {} ({} characters, {} tokens). Tool definitions: {} tokens for the 11 served tools (`tools/list`), {} with check_plan and run_plan.\n", std::env::var("BENCH_COMMIT").unwrap_or_else(|_| "(commit not given)".into()), bench.guide_source, bench.guide.chars().count(), guide_tokens, header_direct, header_plan);
    let _ = writeln!(md, "Round trips are requests to the model, written direct (one call a turn) / direct (parallel calls) / plan. Tokens sent are the input tokens summed over those requests, direct / direct (parallel calls) / plan; the context at the end is direct / plan (the same whether calls are parallel or not).\n");
    let _ = writeln!(md, "| task | shape | tool calls | round trips | fewer | tokens sent | saved | plan after one repair | context at end | saved |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    md.push_str(&rows);
    let _ = writeln!(
        md,
        "| **suite** | | {} | {} / {} / {} | {} | {} / {} / {} | {} | {} ({}) | {} / {} | {} |",
        direct.calls,
        direct.requests,
        parallel.requests,
        plan.requests,
        times(direct.requests, plan.requests),
        direct.sent_total,
        parallel.sent_total,
        plan.sent_total,
        pct(plan.sent_total, direct.sent_total),
        repaired.sent_total,
        pct(repaired.sent_total, direct.sent_total),
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
    let _ = writeln!(md, "Where the tokens come from (tokens; the tool list is {header_direct} tokens direct, {header_plan} with the plan tools):\n");
    let _ = writeln!(md, "| task | tool calls | direct: calls written | direct: results | plan written (run_plan call) | run_plan's answer |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
    md.push_str(&pieces);
    md.push('\n');
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
