"""Each package declares its exports once: the imports of its ``if TYPE_CHECKING:`` block.

Type checkers do not follow a module ``__getattr__`` (distpriv.util.lazy): they read the block;
at run time ``attach_declared`` reads the same block and imports each submodule on first use.
These tests read the block independently (the standard ``ast`` module, not distpriv's reader)
and check that ``__all__`` and the lazy look-ups give exactly what a type checker sees.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import distpriv
from distpriv.util.lazy import declared_exports

PACKAGE = Path(distpriv.__file__).parent
LAZY_INITS = sorted(p for p in PACKAGE.rglob("__init__.py") if "attach_declared(" in p.read_text())


def _typed(path: Path) -> list[tuple[str, str]]:
    """(submodule, name) for every import of the TYPE_CHECKING block, in order."""
    typed: list[tuple[str, str]] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1, ast.dump(imp)
                typed += [(imp.module or "", a.name) for a in imp.names]
    return typed


def _package(path: Path):
    return importlib.import_module(".".join(path.parent.relative_to(PACKAGE.parent).parts))


def test_there_are_lazy_packages() -> None:
    assert len(LAZY_INITS) >= 8  # distpriv and its subpackages
    assert not [p for p in PACKAGE.rglob("__init__.py") if "_EXPORTS" in p.read_text()]


@pytest.mark.parametrize("path", LAZY_INITS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_all_is_what_type_checkers_see(path: Path) -> None:
    typed = _typed(path)
    assert typed, f"{path}: no TYPE_CHECKING imports"
    package = _package(path)
    assert len(package.__all__) == len(set(package.__all__))
    assert sorted(package.__all__) == sorted(name for _, name in typed)


@pytest.mark.parametrize("path", LAZY_INITS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_lazy_name_is_the_declared_object(path: Path) -> None:
    """``package.name`` is the object a type checker says it is: ``module.name``."""
    package = _package(path)
    for module, name in _typed(path):
        if module:
            expected = getattr(importlib.import_module(f"{package.__name__}.{module}"), name)
        else:
            expected = importlib.import_module(f"{package.__name__}.{name}")
        assert getattr(package, name) is expected, (package.__name__, module, name)
        assert name in dir(package)


def test_declared_exports_reads_modules_and_names(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from . import sub, other\n"
        "    from .a import x, y\n"
        "    from .b.c import (\n        z,\n    )\n"
        "    from .a import w\n"
        "def f():\n    from .hidden import nope\n"
    )
    exports, modules = declared_exports(str(init))
    assert exports == {"a": ("x", "y", "w"), "b.c": ("z",)}
    assert modules == ("sub", "other")


@pytest.mark.parametrize(
    "line",
    ["import os", "from os import path", "from .a import x as y", "X = 1", "from ..up import x"],
)
def test_declared_exports_refuses_what_would_not_mean_the_same(tmp_path: Path, line: str) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(f"if TYPE_CHECKING:\n    from .a import ok\n    {line}\n")
    with pytest.raises(ImportError, match="line 3"):
        declared_exports(str(init))
