"""The lazy exports of each package are also imported under ``if TYPE_CHECKING:``.

Type checkers do not follow a module ``__getattr__`` (distpriv.util.lazy.attach): a public name
missing from the TYPE_CHECKING block is ``Any`` to every user's type checker, silently.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import distpriv

PACKAGE = Path(distpriv.__file__).parent
LAZY_INITS = sorted(p for p in PACKAGE.rglob("__init__.py") if "attach(" in p.read_text())


def _lazy_and_typed(path: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    tree = ast.parse(path.read_text())
    lazy: set[tuple[str, str]] = set()
    typed: set[tuple[str, str]] = set()
    constants = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS":
            exports = ast.literal_eval(node.value)
            lazy |= {(mod, name) for mod, names in exports.items() for name in names}
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for kw in node.value.keywords:
                if kw.arg == "modules":
                    value = constants.get(getattr(kw.value, "id", ""), kw.value)
                    lazy |= {("", m) for m in ast.literal_eval(value)}
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 1:
                    typed |= {(imp.module or "", a.name) for a in imp.names}
    return lazy, typed


def test_there_are_lazy_packages() -> None:
    assert len(LAZY_INITS) >= 8  # distpriv and its seven subpackages


@pytest.mark.parametrize("path", LAZY_INITS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_type_checking_block_matches_lazy_exports(path: Path) -> None:
    lazy, typed = _lazy_and_typed(path)
    assert lazy, f"{path}: no _EXPORTS found"
    assert lazy - typed == set(), "exported lazily but invisible to type checkers"
    assert typed - lazy == set(), "imported for type checkers but not exported"


@pytest.mark.parametrize("path", LAZY_INITS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_all_is_the_lazy_exports(path: Path) -> None:
    """One export list per package: ``__all__`` names exactly what ``_EXPORTS`` lists."""
    import importlib

    lazy, _ = _lazy_and_typed(path)
    rel = path.parent.relative_to(PACKAGE.parent).parts
    package = importlib.import_module(".".join(rel))
    assert sorted(package.__all__) == sorted(name for _, name in lazy)
