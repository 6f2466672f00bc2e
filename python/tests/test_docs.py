"""docs/python.md's examples run: every ```python block, in order, in one namespace, from
the repository's root (as a reader would after `pip install ./python`)."""

import os
import re

from conftest import REPO

DOC = os.path.join(REPO, "docs", "python.md")


def blocks():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_docs_have_the_agent_example():
    found = blocks()
    assert len(found) >= 4
    assert any("check_plan" in b and "run_plan" in b and "tool_calls" in b for b in found)


def test_docs_examples_run(capsys):
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        namespace = {"__name__": "docs_python"}
        for i, block in enumerate(blocks()):
            code = compile(block, f"docs/python.md[python block {i + 1}]", "exec")
            exec(code, namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
