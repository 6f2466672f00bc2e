"""tdsl.Data: Python data converted once, passed many times (issue 32's leftover)."""

import pytest

import tdsl


def records(n):
    return [{"id": i, "status": "active" if i % 2 else "off", "score": i % 100, "tags": ["a", "b"]} for i in range(n)]


def test_data_is_accepted_wherever_data_is_with_the_same_result(root):
    rs = records(50)
    d = tdsl.Data(rs)
    p = tdsl.compile('sum(array=filter(array=records, condition_string="item.status == \'active\'"), item_path="score")')
    want = p.eval({"records": rs})
    # Inside vars, as the vars, through eval and compile, many times.
    assert p.eval({"records": d}) == want
    assert p.eval(tdsl.Data({"records": rs})) == want
    assert tdsl.eval("length(records)", {"records": d}) == 50
    assert [p.eval({"records": d}) for _ in range(3)] == [want] * 3
    # As run arguments, and nested in them.
    value = {"b": [1, 2.5, None], "a": {"x": True}}
    assert tdsl.run("/passthrough.tool", root=root, args={"value": tdsl.Data(value)}) == {"value": value}
    assert tdsl.run("/passthrough.tool", root=root, args=tdsl.Data({"value": value})) == {"value": value}
    # As what a Python tool returns.
    tools = {"up": lambda a: tdsl.Data({"word": a["word"].upper()}), "count": lambda a: {"letters": 7}}
    assert tdsl.run("/shout.tool", root=root, args={"words": ["a", "bc"]}, tools=tools) == {
        "words": ["A", "BC"],
        "letters": 7,
    }
    # A tool's Data must hold a dict, as a tool's result must be one.
    tools["up"] = lambda a: tdsl.Data([a["word"]])
    with pytest.raises(tdsl.RunError, match=r"returned a tdsl\.Data of a list of 1 item, not a dict"):
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools=tools)


def test_data_is_a_snapshot_and_converts_back():
    rs = records(3)
    d = tdsl.Data({"records": rs})
    rs.append({"id": 99})
    rs[0]["score"] = 1000
    assert tdsl.eval("length(d.records)", {"d": d}) == 3
    assert tdsl.eval("d.records[0].score", {"d": d}) == 0
    back = d.to_python()
    assert back == {"records": records(3)} and back is not rs
    assert len(d) == 1 and len(tdsl.Data([1, 2, 3])) == 3
    assert repr(d) == "tdsl.Data(<a dict of 1 key>)"
    assert repr(tdsl.Data([1, 2])) == "tdsl.Data(<a list of 2 items>)"
    # A Data of a Data is the same value.
    assert tdsl.Data(d).to_python() == back


def test_data_refuses_what_vars_refuse_and_says_where():
    with pytest.raises(TypeError, match=r"the value at \$\.xs\[1\] is a set"):
        tdsl.Data({"xs": [1, {2}]})
    with pytest.raises(ValueError, match=r"the float at \$\[0\] is NaN"):
        tdsl.Data([float("nan")])
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="contains itself"):
        tdsl.Data(cyclic)
    with pytest.raises(TypeError, match=r"vars must be a dict, not a tdsl\.Data of a list of 2 items"):
        tdsl.eval("1", tdsl.Data([1, 2]))
    with pytest.raises(TypeError, match=r"vars must be a dict, not a tdsl\.Data of a str"):
        tdsl.compile("1").eval(tdsl.Data("s"))

