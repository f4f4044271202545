"""The layer order of DESIGN.md §2, checked on every module's imports (ast).

A module imports only from layers above it (lower rank here) or from its own layer, and no
module inside the package imports the package root (``from .. import x`` / ``import
distpriv``), which would make import order matter and hide cycles.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "distpriv"

# DESIGN.md §2, top to bottom; a module may import only from its own rank or a lower one.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_validation": 0,
    "_version": 0,
    "accounting": 1,
    "distances": 2,
    "divergences": 2,
    "noise": 3,
    "guarantees": 4,
    "querymodel": 4,
    "central": 5,
    "local": 6,
    "modeling": 7,
    "attacks": 8,
    "datasets": 9,
    "pipeline": 10,
    "experiments": 11,
    "rendering": 12,
    "_cli_parser": 12,
    "cli": 12,
    "__main__": 12,
}


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p.name != "__init__.py" or p.parent != SRC)


def _top(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[str, int]]:
    """(absolute dotted target inside distpriv, line) for every import in the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = ["distpriv", *path.relative_to(SRC).parent.parts]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)]
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
                if node.module is None:  # from . import a, b
                    out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
                    continue
            else:
                mod = node.module or ""
            if mod == "distpriv" or mod.startswith("distpriv."):
                out.append((mod, node.lineno))
        elif isinstance(node, ast.Import):
            out += [
                (a.name, node.lineno)
                for a in node.names
                if a.name == "distpriv" or a.name.startswith("distpriv.")
            ]
    return out


def test_every_module_has_a_layer():
    missing = sorted({_top(p) for p in _modules()} - set(LAYERS))
    assert not missing, f"add these to LAYERS (DESIGN.md §2): {missing}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_follow_the_layer_order(path):
    own = LAYERS[_top(path)]
    for target, line in _imports(path):
        parts = target.split(".")
        assert len(parts) > 1, f"{path.relative_to(SRC)}:{line} imports the package root"
        assert parts[1] in LAYERS, f"{path.relative_to(SRC)}:{line}: unknown module {target}"
        assert LAYERS[parts[1]] <= own, (
            f"{path.relative_to(SRC)}:{line} imports {target} from a lower layer "
            f"({parts[1]}, rank {LAYERS[parts[1]]} > {_top(path)}, rank {own})"
        )


def test_the_checker_sees_a_violation(tmp_path):
    """The checker itself: an upward import and a root import are both found."""
    bad = SRC / "central" / "base.py"
    imports = dict(_imports(bad))
    assert any(t.startswith("distpriv.noise") for t in imports)  # resolved relative import
    fake = tmp_path / "x.py"
    fake.write_text("from .. import __version__\nfrom ..pipeline import run_release\n")
    tree = ast.parse(fake.read_text())
    kinds = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert kinds == [None, "pipeline"]
