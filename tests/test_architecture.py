"""docs/architecture.md names every package of src/distpriv, in the layer order the code keeps.

The map a newcomer reads must be the house as built: a package that exists and is not on the
map, or a package on the map that does not exist, fails; so does a map whose top-to-bottom
order contradicts the import layers of tests/test_layers.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "distpriv"
DOC = ROOT / "docs" / "architecture.md"


def _layout_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## 2. Layout", 1)[1].split("\n## 3.", 1)[0]
    return section.split("```", 2)[1]


def _mapped_packages() -> list[str]:
    """Package paths named in the layout block, e.g. ``central``, ``pipeline/stages``."""
    out: list[str] = []
    parents: dict[int, str] = {}
    for line in _layout_block().splitlines():
        m = re.match(r"^( +)([a-z_]+)/(?:\s|$)", line)
        if not m:
            continue
        indent = len(m.group(1))
        parents = {k: v for k, v in parents.items() if k < indent}
        outer = [parents[k] for k in sorted(parents)]
        path = "/".join([*outer, m.group(2)])
        parents[indent] = m.group(2)
        out.append(path)
    return out


def _real_packages() -> set[str]:
    return {
        str(p.parent.relative_to(SRC))
        for p in SRC.rglob("__init__.py")
        if p.parent != SRC and "__pycache__" not in p.parts
    }


def test_every_package_is_on_the_map_and_every_mapped_package_exists() -> None:
    mapped = {p for p in _mapped_packages() if p not in {"src", "tests", "benchmarks", "docs"}}
    mapped = {p.removeprefix("src/distpriv/") for p in mapped}
    real = _real_packages()
    assert real - mapped == set(), "packages missing from docs/architecture.md §2"
    assert mapped - real == set(), "docs/architecture.md §2 names packages that do not exist"


def test_the_map_lists_packages_in_layer_order() -> None:
    tops = [p for p in _mapped_packages() if "/" not in p and p in LAYERS]
    ranks = [LAYERS[p] for p in tops]
    assert len(tops) >= 8
    assert ranks == sorted(ranks), list(zip(tops, ranks, strict=True))


def test_every_top_level_module_is_on_the_map() -> None:
    block = _layout_block()
    modules = sorted(p.name for p in SRC.glob("*.py") if p.name != "__init__.py")
    missing = [m for m in modules if m not in block]
    assert missing == []
