//! The command line, tested by running the real binary.

mod common;
use common::tdsl;

#[test]
fn eval_prints_the_value_as_json() {
    let o = tdsl(&[
        "eval",
        "map(array=users, template=\"item.name\")",
        "--var",
        r#"users=[{"name":"a"},{"name":"b"}]"#,
        "--compact",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "[\"a\",\"b\"]\n");
    assert_eq!(o.stderr, "");
}

#[test]
fn eval_pretty_prints_by_default() {
    let o = tdsl(&["eval", "{a: [1]}"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, "{\n  \"a\": [\n    1\n  ]\n}\n");
}

#[test]
fn eval_reads_vars_from_a_file_and_var_wins() {
    let dir = std::env::temp_dir().join(format!("tdsl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("vars.json");
    std::fs::write(&file, r#"{"a": 1, "b": 2}"#).expect("write vars");
    let o = tdsl(&["eval", "a + b", "--vars", file.to_str().expect("utf-8 path"), "--var", "b=10"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "11");
}

#[test]
fn compile_errors_exit_1_with_a_rendered_diagnostic() {
    let o = tdsl(&["eval", "map(array=usres, template=\"item.name\")", "--var", "users=[]"]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stdout, "");
    assert!(o.stderr.contains("E0101"), "{}", o.stderr);
    assert!(o.stderr.contains("unknown name `usres`"), "{}", o.stderr);
    assert!(o.stderr.contains("did you mean `users`?"), "{}", o.stderr);
}

#[test]
fn runtime_errors_exit_1_and_name_the_data_location() {
    let o = tdsl(&["eval", "sum(array=users, item_path=\"score\")", "--var", r#"users=[{"score":1},{"score":"x"}]"#]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("E0301"), "{}", o.stderr);
    assert!(o.stderr.contains("$.users[1].score"), "{}", o.stderr);
}

#[test]
fn every_problem_is_reported_in_one_run() {
    let o = tdsl(&["eval", "[jion(xs), upper(1, 2), \"\\q\"]", "--var", "xs=[]"]);
    assert_eq!(o.code, 1);
    for code in ["E0002", "E0102", "E0103"] {
        assert!(o.stderr.contains(code), "missing {code} in {}", o.stderr);
    }
}

#[test]
fn warnings_do_not_stop_evaluation() {
    let o = tdsl(&["eval", "json_parse(42)", "--compact"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.trim(), "42");
    assert!(o.stderr.contains("W0101"), "{}", o.stderr);
}

#[test]
fn bad_var_json_is_a_usage_error() {
    let o = tdsl(&["eval", "x", "--var", "x=alice"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("quote it"), "{}", o.stderr);
}

#[test]
fn missing_vars_file_is_a_usage_error() {
    let o = tdsl(&["eval", "1", "--vars", "/nonexistent/vars.json"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot read"), "{}", o.stderr);
}

#[test]
fn unknown_option_is_a_usage_error() {
    let o = tdsl(&["eval", "1", "--frobnicate"]);
    assert_eq!(o.code, 2);
}

#[test]
fn emit_type() {
    let o = tdsl(&["eval", "map(xs, template={n: item.name})", "--var", r#"xs=[{"name":"a"}]"#, "--emit", "type"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "list<object{n: string}>");
}

#[test]
fn emit_ast() {
    let o = tdsl(&["eval", "1 + x.y", "--var", r#"x={"y": 2}"#, "--emit", "ast"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!(o.stdout);
}

#[test]
fn emit_bytecode() {
    let o = tdsl(&[
        "eval",
        "sum(array=filter(array=records, condition_string=\"item.status == 'active' and item.score > 50\"), item_path=\"score\")",
        "--var",
        "records=[]",
        "--emit",
        "bytecode",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!(o.stdout);
}

#[test]
fn now_fixes_the_clock() {
    let o = tdsl(&["eval", "datetime_now()", "--now", "2026-05-04T03:02:01Z"]);
    assert_eq!(o.stdout.trim(), "\"2026-05-04T03:02:01.000Z\"");
    let o = tdsl(&["eval", "datetime_now()", "--now", "yesterday"]);
    assert_eq!(o.code, 2);
}
