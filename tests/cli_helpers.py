"""Helpers shared by the CLI tests (one copy instead of one per test file).

Imported as ``from cli_helpers import run, one_line_error``: pytest puts ``tests/`` on
``sys.path`` for every test module (rootdir-relative "prepend" import mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from distpriv.cli import main


def run(argv: Sequence[Any], capsys: Any) -> tuple[int | str | None, str, str]:
    """Run ``distpriv ARGV`` in-process: (exit status, stdout, stderr).

    Arguments are passed through ``str`` (paths are fine); argparse's ``SystemExit`` (usage
    errors, ``--help``) becomes the status.
    """
    try:
        status: int | str | None = main([str(a) for a in argv])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(status: Any, err: str, *words: str) -> str:
    """The CLI refused with exit status 2 and exactly one ``distpriv: error:`` line
    containing every word of ``words``, and no traceback; returns that line."""
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("distpriv: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]
