"""The layer order of docs/architecture.md §2, checked on every module's imports (ast).

A module imports only from its own layer or from layers above it (lower rank here), and no
module inside the package imports the package root (``from .. import x`` naming something
that is not a submodule, or ``import distpriv``): that makes import order matter and hides
cycles.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "distpriv"

# docs/architecture.md §2, top to bottom; a module may import only from its own rank or a lower one.
LAYERS: dict[str, int] = {
    "errors": 0,
    "util": 0,  # validation, threads, lazy exports, text, templates, scipy-free helpers
    "accounting": 1,  # the accountant package: calibrations and the exact pair profile
    "distances": 2,
    "divergences": 2,
    "_bottleneck": 2,  # the threshold feasibility tests of distances (numpy, scipy only)
    "noise": 3,
    "guarantees": 4,
    "querymodel": 4,
    "moment_uncertainty": 4,  # how well a data-built model's moments are known
    "population": 5,  # the population's confidence sets: used by every central calibration
    "central": 6,
    "local": 7,
    "modeling": 8,
    "composition": 9,  # the joint accountant over release events, given a model
    "attacks": 10,
    "datasets": 11,
    "pipeline": 12,
    "report": 13,  # renders what the pipeline's commands return; never calibrates
    "experiments": 14,
    "_cli_parser": 15,
    "cli": 15,
    "__main__": 15,
}


def _modules(src: Path = SRC) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if p != src / "__init__.py")


def _top(path: Path, src: Path = SRC) -> str:
    return path.relative_to(src).parts[0].removesuffix(".py")


def _is_module(dotted: str, src: Path) -> bool:
    rel = Path(*dotted.split(".")[1:])
    return (src / rel).is_dir() or (src / rel).with_suffix(".py").is_file()


def _imports(path: Path, src: Path = SRC) -> list[tuple[str, int]]:
    """(absolute dotted target inside distpriv, line) for every import in the module.

    ``from . import x`` resolves to ``<package>.x`` when x is a submodule, and to the
    package itself (a root import when the package is distpriv) otherwise.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = ["distpriv", *path.relative_to(src).parent.parts]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - (node.level - 1)])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if not (mod == "distpriv" or mod.startswith("distpriv.")):
                continue
            if node.module is None or mod == "distpriv":
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    out.append((sub if _is_module(sub, src) else mod, node.lineno))
            else:
                out.append((mod, node.lineno))
        elif isinstance(node, ast.Import):
            out += [
                (a.name, node.lineno)
                for a in node.names
                if a.name == "distpriv" or a.name.startswith("distpriv.")
            ]
    return out


def _violations(path: Path, src: Path = SRC) -> list[str]:
    own = LAYERS[_top(path, src)]
    where = path.relative_to(src)
    out = []
    for target, line in _imports(path, src):
        parts = target.split(".")
        if len(parts) == 1:
            out.append(f"{where}:{line} imports the package root")
        elif parts[1] not in LAYERS:
            out.append(f"{where}:{line} imports {target}, which has no layer in LAYERS")
        elif LAYERS[parts[1]] > own:
            out.append(
                f"{where}:{line} imports {target} from a lower layer "
                f"({parts[1]} rank {LAYERS[parts[1]]} > {_top(path, src)} rank {own})"
            )
    return out


def test_every_module_has_a_layer():
    missing = sorted({_top(p) for p in _modules()} - set(LAYERS))
    assert not missing, f"add these to LAYERS (docs/architecture.md §2): {missing}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_follow_the_layer_order(path):
    assert not _violations(path)


def test_the_checker_finds_upward_and_root_imports(tmp_path):
    src = tmp_path / "distpriv"
    (src / "central").mkdir(parents=True)
    (src / "pipeline").mkdir()
    (src / "pipeline" / "__init__.py").write_text("")
    (src / "noise.py").write_text("")
    bad = src / "central" / "x.py"
    bad.write_text(
        "from .. import __version__\n"
        "from ..pipeline import run_release\n"
        "import distpriv\n"
        "from .. import noise\n"
        "from ..noise import Noise\n"
    )
    found = _violations(bad, src)
    assert len(found) == 3, found
    assert "x.py:1 imports the package root" in found[0]
    assert "lower layer" in found[1] and "x.py:3 imports the package root" in found[2]
