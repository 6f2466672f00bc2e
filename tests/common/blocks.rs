// Large transform blocks, for the checker's bounds on work: its unit tests
// (`src/types/scope.rs`) and its benches (`benches/common`) `include!` this file, so that the
// library carries no test data. Items only (no inner attributes): it is included, not a module.

/// A `.tool` whose one transform block has `n` variables and `n / 10` transforms, each
/// transform reading ten variables and the output before it (every variable is used).
#[allow(dead_code)] // not every bench checks it
pub fn transform_block(n: usize) -> String {
    let variables: serde_json::Map<String, serde_json::Value> =
        (0..n).map(|k| (format!("v{k}"), serde_json::json!(k))).collect();
    let mut transforms = serde_json::Map::new();
    for k in 0..n / 10 {
        let mut e: Vec<String> = (10 * k..10 * k + 10).map(|i| format!("v{i}")).collect();
        if k > 0 {
            e.push(format!("t{}", k - 1));
        }
        transforms.insert(format!("t{k}"), e.join(" + ").into());
    }
    serde_json::json!({
        "instructions": [{"execution_id": "s",
            "transform_responses": {"variables": variables, "transforms": transforms}}],
        "response_reference_map": {"r": format!("REF:s.t{}", (n / 10).max(1) - 1)}
    })
    .to_string()
}
