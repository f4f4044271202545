"""No merge-conflict markers are ever committed (a merge once left some in the user guide)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)
SUFFIXES = {".py", ".md", ".toml", ".j2", ".css", ".txt", ".cfg", ".ipynb", ".json", ".yml"}


def test_no_conflict_markers():
    bad = []
    for sub in ("src", "tests", "docs", "examples", "benchmarks"):
        for path in (ROOT / sub).rglob("*"):
            if path.is_file() and path.suffix in SUFFIXES:
                text = path.read_text(encoding="utf-8", errors="replace")
                bad += [
                    f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
                    for m in MARKER.finditer(text)
                ]
    for top in ROOT.glob("*.md"):
        bad += [str(top.name) for _ in MARKER.finditer(top.read_text(encoding="utf-8"))]
    assert not bad, f"conflict markers in {bad}"
