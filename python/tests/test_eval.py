import datetime
from concurrent.futures import ThreadPoolExecutor

import pytest

import tdsl


def test_eval_with_and_without_vars():
    assert tdsl.eval("1 + 2") == 3
    assert tdsl.eval("sum(array=xs)", {"xs": [1, 2, 3]}) == 6
    assert tdsl.eval("x", {"x": 1.5}) == 1.5
    assert tdsl.eval("upper(s)", {"s": "héllo"}) == "HÉLLO"


def test_values_cross_as_python_objects_key_order_kept():
    data = {"z": 1, "a": [True, None, 2.5, "s", {"k": [1]}], "m": (1, 2)}
    out = tdsl.eval("d", {"d": data})
    assert out == {"z": 1, "a": [True, None, 2.5, "s", {"k": [1]}], "m": [1, 2]}
    assert list(out) == ["z", "a", "m"]
    assert type(out["a"][0]) is bool and type(out["z"]) is int
    big = 2**63 - 1
    assert tdsl.eval("n", {"n": big}) == big


def test_compile_once_eval_many():
    p = tdsl.compile("x * 2")
    assert [p.eval({"x": i}) for i in range(5)] == [0, 2, 4, 6, 8]
    assert p.source == "x * 2"
    assert "Program" in repr(p)


def test_program_shared_across_threads():
    p = tdsl.compile("sum(array=map(array=xs, template=\"item * k\"))")

    def work(k):
        return [p.eval({"xs": list(range(100)), "k": k}) for _ in range(50)]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(16)))
    for k, r in enumerate(results):
        assert r == [4950 * k] * 50


def test_compile_error_has_code_message_span():
    with pytest.raises(tdsl.TdslError) as info:
        tdsl.eval("sum(ordres)", {"orders": [1]})
    e = info.value
    assert e.code == "E0101"
    assert e.message == "unknown name `ordres`"
    assert e.span == (4, 10)
    assert "did you mean `orders`?" in str(e)
    assert e.diagnostics[0]["line"] == 1 and e.diagnostics[0]["column"] == 5


def test_syntax_error():
    with pytest.raises(tdsl.TdslError) as info:
        tdsl.compile("1 +")
    assert info.value.code.startswith("E0")


def test_evaluation_error_is_a_tdsl_error():
    p = tdsl.compile("a / b")
    with pytest.raises(tdsl.TdslError) as info:
        p.eval({"a": 1, "b": 0})
    assert info.value.code.startswith("E")
    assert info.value.span is not None


def test_int_beyond_64_bits_refused():
    with pytest.raises(ValueError, match=r"\$\.n does not fit in 64 bits"):
        tdsl.eval("n", {"n": 2**64})


@pytest.mark.parametrize(
    "value,kind",
    [({1, 2}, "a set"), (datetime.datetime(2026, 1, 1), "a datetime"), (object(), "an object"), (b"x", "a bytes")],
)
def test_non_json_values_refused(value, kind):
    with pytest.raises(TypeError, match=rf"\$\.v\[1\] is {kind}, which is not JSON-like"):
        tdsl.eval("v", {"v": [0, value]})


def test_cyclic_dict_refused():
    d = {"a": 1}
    d["self"] = d
    with pytest.raises(ValueError, match=r"\$\.d\.self contains itself"):
        tdsl.eval("d", {"d": d})


def test_nan_and_non_string_keys_refused():
    with pytest.raises(ValueError, match="finite"):
        tdsl.eval("x", {"x": float("nan")})
    with pytest.raises(TypeError, match="key of type int"):
        tdsl.eval("x", {"x": {1: 2}})


def test_vars_must_be_a_dict():
    with pytest.raises(TypeError, match="vars must be a dict"):
        tdsl.eval("1", [1])


def test_deep_nesting_refused_without_stack_overflow():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper than 128 levels"):
        tdsl.eval("d", {"d": deep})
    shallow = []
    for _ in range(100):
        shallow = [shallow]
    assert tdsl.eval("d", {"d": shallow}) == shallow


def test_huge_input():
    xs = list(range(1_000_000))
    assert tdsl.eval("sum(array=xs)", {"xs": xs}) == sum(xs)
    records = [{"id": i, "name": f"n{i}", "tags": ["a", "b"]} for i in range(100_000)]
    assert tdsl.eval("length(r)", {"r": records}) == 100_000

