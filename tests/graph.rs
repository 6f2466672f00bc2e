//! `tdsl graph`: the DAG drawn as Mermaid and DOT, run through the real binary.
//!
//! Regenerate snapshots with `cargo insta test --review --test graph`.

mod common;
use common::tdsl;

const ROOT: &str = "tests/data/check/root";

fn graph(tool: &str, format: &str) -> String {
    let o = tdsl(&["graph", tool, "--root", ROOT, "--format", format]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
}

/// Levels, a conditional step, a parallel step, REF edges and dependency-only edges.
#[test]
fn mermaid() {
    insta::assert_snapshot!(graph("/flows/scan_and_count.tool", "mermaid"));
}

#[test]
fn dot() {
    insta::assert_snapshot!(graph("/flows/scan_and_count.tool", "dot"));
}

/// The complete example of the source document: six levels, parallel and conditional steps.
#[test]
fn complete_example_mermaid() {
    insta::assert_snapshot!(graph(
        "tests/data/check/ok/seed_66_complete_example_advanced_document_analy.tool",
        "mermaid"
    ));
}

#[test]
fn complete_example_dot() {
    insta::assert_snapshot!(graph("tests/data/check/ok/seed_66_complete_example_advanced_document_analy.tool", "dot"));
}

/// A transform step joining two fan-outs: both fan-outs on level 0, side by side, the join
/// (a stadium, a rounded box) on level 1 (SPEC §6.4 ext).
#[test]
fn a_transform_step_joins_two_fan_outs_on_the_same_level() {
    let tool = "tests/data/check/ok/transform_step_joins_two_fan_outs.tool";
    let mermaid = graph(tool, "mermaid");
    insta::assert_snapshot!("transform_step_mermaid", mermaid);
    assert!(mermaid.contains("subgraph level0 [\"level 0\"]\n        s0[[\"docs<br/>/tools/lister.tool<br/>for each directory\"]]\n        s1[[\"sources"), "{mermaid}");
    assert!(mermaid.contains("s2([\"join<br/>transform step\"])"), "{mermaid}");
    let dot = graph(tool, "dot");
    assert!(dot.contains(r#""join" [label="join\ntransform step", style=rounded];"#), "{dot}");
}

/// `--types`: each path with its type, inferred from its uses where it is `any`.
#[test]
fn typed_edges() {
    let typed = |tool: &str, format: &str| {
        let o = tdsl(&["graph", tool, "--root", ROOT, "--format", format, "--types"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout
    };
    insta::assert_snapshot!("typed_mermaid", typed("/flows/scan_and_count.tool", "mermaid"));
    insta::assert_snapshot!("typed_dot_inferred", typed("tests/data/check/ok/infer_conditional_use.tool", "dot"));
}

#[test]
fn mermaid_is_the_default() {
    let o = tdsl(&["graph", "/flows/scan_and_count.tool", "--root", ROOT]);
    assert!(o.stdout.starts_with("flowchart TD\n"), "{}", o.stdout);
}

#[test]
fn a_tool_with_errors_is_not_drawn() {
    let o = tdsl(&["graph", "tests/data/check/err/dependency_cycle.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stdout, "");
    assert!(o.stderr.contains("E0605"), "{}", o.stderr);
}

#[test]
fn a_primitive_tool_has_nothing_to_draw() {
    let o = tdsl(&["graph", "/tools/counter.tool", "--root", ROOT]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("primitive"), "{}", o.stderr);
}

#[test]
fn a_missing_tool_exits_2() {
    assert_eq!(tdsl(&["graph", "/flows/nothing.tool", "--root", ROOT]).code, 2);
    assert_eq!(tdsl(&["graph", "/flows/scan_and_count.tool"]).code, 2);
}
