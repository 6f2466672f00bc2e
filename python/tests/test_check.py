import os

import pytest

import tdsl

BAD = """{
  "arguments": [{"name": "xs", "type_name": "list<number>", "required": true}],
  "instructions": [],
  "responses": [{"name": "total", "type_name": "number", "required": true}],
  "response_reference_map": {"total": "REF:arguments.xs.lenght"}
}"""


def test_check_clean_folder(root):
    assert tdsl.check(root, root=root) == []
    assert tdsl.check([os.path.join(root, "shout.tool")], root=root) == []


def test_check_reports_diagnostics(tmp_path):
    f = tmp_path / "main.tool"
    f.write_text(BAD)
    found = tdsl.check(f)
    d = next(d for d in found if d.code == "E0203")
    assert d.severity == "error"
    assert d.message == "cannot read `.lenght` of a list<number>"
    assert (d.line, d.column) == (5, 57)  # the `l` of `.lenght`, inside the JSON string
    assert d.end_line == 5 and d.end_column > d.column
    assert "`.lenght` does not apply to list<number>" in str(d)
    assert d.to_dict()["code"] == "E0203"


def test_check_missing_callee_with_root(tmp_path, root):
    f = tmp_path / "main.tool"
    f.write_text(
        '{"instructions": [{"execution_id": "a", "tool_definition_path": "/tools/nope.tool"}],'
        ' "response_reference_map": {}}'
    )
    codes = [d.code for d in tdsl.check(str(f), root=root)]
    assert "E0601" in codes


def test_check_unreadable_file(tmp_path):
    with pytest.raises(tdsl.TdslError, match="cannot read"):
        tdsl.check(tmp_path / "missing.tool")


PLAN = {
    "instructions": [
        {"execution_id": "u", "tool_definition_path": "up", "arguments": {"word": "hi"}},
        {"execution_id": "c", "tool_definition_path": "count", "arguments": {"text": "{{u.word}}"}},
    ],
    "response_reference_map": {"letters": "REF:c.letters"},
}


def test_check_plan_finds_the_placeholder(root):
    found = tdsl.check_plan(PLAN, root=root)
    assert [d.code for d in found] == ["E1311"]
    d = found[0]
    assert d.pointer == "/instructions/1/arguments/text"
    assert d.range == [0, 10]
    assert d.help == 'tdsl reads another step\'s result with a REF: write "REF:u.word"'
    answer = tdsl.check_plan(PLAN, root=root, as_dict=True)
    assert answer["ok"] is False and answer["errors"] == 1


def test_check_plan_ok_and_as_text(root):
    import json

    fixed = json.loads(json.dumps(PLAN).replace("{{u.word}}", "REF:u.word"))
    answer = tdsl.check_plan(fixed, root=root, as_dict=True)
    assert answer["ok"] is True
    assert answer["result_type"] == "object{letters: integer}"
    assert tdsl.check_plan(json.dumps(fixed), root=root) == []


def test_check_plan_bad_input(root):
    with pytest.raises(TypeError, match="a plan is a dict"):
        tdsl.check_plan([1], root=root)
    assert tdsl.check_plan("[1]", root=root)[0].code == "E1303"
