"""Every distpriv name that README.md and docs/*.md mention resolves (no public
name moved without an import that still works).

Three spellings are collected from the text: ``from distpriv.x import a, b``, dotted paths
``distpriv.x.y.z`` and ``dp.x`` (the README's ``import distpriv as dp``). A dotted path is
resolved the way Python would: the longest prefix that imports as a module, then attributes.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FROM = re.compile(r"from (distpriv(?:\.\w+)*) import (?:\(([\w,\s]+)\)|([\w, ]+))")
_DOTTED = re.compile(r"\b(distpriv(?:\.[A-Za-z_]\w*)+)")
_DP = re.compile(r"\bdp\.([A-Za-z_]\w*)")


def _names() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for doc in DOCS:
        text = doc.read_text()
        for module, grouped, names in _FROM.findall(text):
            for name in re.split(r"[,\s]+", grouped or names):
                if name and name != "as":
                    found.add((doc.name, f"{module}.{name}"))
        for path in _DOTTED.findall(text):
            found.add((doc.name, path.rstrip(".")))
        for name in _DP.findall(text):
            found.add((doc.name, f"distpriv.{name}"))
    return sorted(found)


def _resolve(path: str) -> object:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(path)


NAMES = _names()


def test_the_docs_mention_names_at_all():
    # The collector itself could silently find nothing (a changed regex, a moved doc).
    assert len(NAMES) > 30
    assert ("README.md", "distpriv.accounting") in NAMES


@pytest.mark.parametrize(("doc", "path"), NAMES, ids=[f"{d}:{p}" for d, p in NAMES])
def test_name_in_the_docs_resolves(doc, path):
    try:
        _resolve(path)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{doc} mentions {path}, which does not resolve: {exc}")
