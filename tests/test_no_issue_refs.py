"""No "issue N" citations in the code, the tests or the docs: a newcomer cannot follow them.

Say the reason in words instead (docs/architecture.md, conventions). The pattern is the one
the repository is checked with: ``issue`` and a number, or ``#`` and two digits as a word.
Binary files (docs/report.png) are skipped. Notebook outputs hold HTML numeric entities of
apostrophes; docs/make_tutorial.py writes their ``#`` as a JSON escape, so they do not match.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "tests", "docs")
FILES = ("README.md", "CONTRIBUTING.md", "SECURITY.md", ".ci/run")
PATTERN = re.compile(r"issue [0-9]+|#[0-9]{2}\b")
_SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}


def _text(path: Path) -> str | None:
    """The file's text, or ``None`` for a binary file (a NUL byte, or not UTF-8)."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def citations(paths: list[Path], root: Path) -> list[str]:
    """``file:line: text`` of every line of the text files under ``paths`` that matches."""
    found = []
    for top in paths:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for f in files:
            if _SKIP_PARTS.intersection(f.parts):
                continue
            text = _text(f)
            if text is None:
                continue
            for i, line in enumerate(text.splitlines(), 1):
                if PATTERN.search(line):
                    found.append(f"{f.relative_to(root)}:{i}: {line.strip()[:120]}")
    return found


def test_no_issue_citations_in_src_tests_docs():
    paths = [ROOT / d for d in FOLDERS] + [ROOT / f for f in FILES if (ROOT / f).exists()]
    found = citations(paths, ROOT)
    assert not found, "say the reason in words instead of citing an issue:\n" + "\n".join(found)


def test_the_scan_finds_citations_and_skips_binary_files(tmp_path):
    # Built from pieces, so that this file holds no citation itself.
    cite, hash_cite = "issue " + "27", "#" + "13"
    (tmp_path / "a.py").write_text(f"x = 1  # ({cite} item 3)\ny = 2\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"Spark ({hash_cite} item 2).\n", encoding="utf-8")
    # Not citations: a colour, one digit, three digits, a word boundary missing.
    (tmp_path / "c.html").write_text(
        'color:#1a7f37; #4:0.45; #123 issues; "#' + '12ab"\n', encoding="utf-8"
    )
    (tmp_path / "d.png").write_bytes(b"\x89PNG\0" + cite.encode())
    found = citations([tmp_path], tmp_path)
    assert [f.split(":")[0:2] for f in found] == [["a.py", "1"], ["b.md", "1"]]
