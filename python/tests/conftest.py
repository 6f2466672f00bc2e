import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _import_tdsl():
    try:
        import tdsl  # noqa: F401
    except ImportError as e:  # never skip: say why
        raise RuntimeError(
            f"the tdsl package is not installed in {sys.executable}: run scripts/python-package ({e})"
        ) from e


_import_tdsl()


@pytest.fixture
def root():
    """The tool root of the tests: tools/up.tool, tools/count.tool (Python tools),
    tools/echo.tool (builtin:echo), shout.tool and passthrough.tool (composites)."""
    return os.path.join(HERE, "root")


def up(args):
    return {"word": args["word"].upper()}


def count(args):
    return {"letters": len(args["text"].replace(" ", ""))}


@pytest.fixture
def tools():
    return {"up": up, "count": count}
