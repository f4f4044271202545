"""One command, one load: a per-command cache scope for data the command reads repeatedly.

``distpriv audit`` needs the paper's Adult split three times (model, auxiliary, test) and
``demo`` four; each time meant copying and permuting the whole table again. Inside
:func:`command_scope` (entered by the CLI around each command) the split is made once per
seed and every later request gets a copy of its part. Outside a scope nothing is cached, and
a scope ends with its command: two calls with different arguments never share data.

The scope also keeps the ledger rows the command is committing (:func:`note_record`), so
that a command interrupted or failing after its release was recorded can say exactly that
(:func:`recorded_note`).

Standard library only, so that the command line can enter the scope without importing pandas.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = ["command_cache", "command_scope", "note_record", "recorded_note"]

_CACHE: ContextVar[dict[Any, Any] | None] = ContextVar("distpriv_command_cache", default=None)
# The ledger rows the current command is committing or has committed (see note_record).
_RECORDS = "ledger records"


@contextlib.contextmanager
def command_scope() -> Iterator[dict[Any, Any]]:
    """A fresh cache for the duration of one command (nested scopes share the outer one)."""
    if _CACHE.get() is not None:
        yield _CACHE.get()  # type: ignore[misc]
        return
    cache: dict[Any, Any] = {}
    token = _CACHE.set(cache)
    try:
        yield cache
    finally:
        _CACHE.reset(token)


def command_cache() -> dict[Any, Any] | None:
    """The cache of the current command, or ``None`` outside :func:`command_scope`."""
    return _CACHE.get()


def note_record(note: dict[str, Any]) -> None:
    """Remember, for the current command, a ledger row about to be committed.

    Called by the ledger just before its COMMIT, so that a command interrupted or failing
    afterwards (Ctrl-C while the HTML report renders) can say exactly what was recorded:
    the CLI looks the row up in the file (:func:`recorded_note`). Outside a
    :func:`command_scope` nothing is kept.
    """
    cache = _CACHE.get()
    if cache is not None:
        cache.setdefault(_RECORDS, []).append(dict(note))


def _in_ledgers(notes: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """``(ledger path, release id)`` of the noted rows that are in their file (committed).

    Looked up by id and checksum through a read-only connection, so the answer is exact
    whichever side of the COMMIT the command stopped.
    """
    import sqlite3

    out = []
    for note in notes:
        path = Path(note["ledger"])
        if not path.is_file():
            continue
        try:
            con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
            try:
                found = con.execute(
                    "SELECT 1 FROM releases WHERE id = ? AND row_mac = ?",
                    (note["id"], note["row_mac"]),
                ).fetchone()
            finally:
                con.close()
        except sqlite3.Error:
            continue
        if found:
            out.append((str(path), int(note["id"])))
    return out


OUTPUT_FLAGS = ("--out", "--private-out", "--html")


def recorded_note(scope: Mapping[Any, Any], args: Any) -> str | None:
    """What a failed or interrupted command left in a ledger, or ``None`` when nothing.

    A release is recorded in the transaction that draws its noise, before any output is
    written (a recorded release that was not published is safe, a published one that was
    not recorded is not: SECURITY.md). When the command then stops, the user must know the
    release is in the ledger and which outputs are missing.

    Parameters
    ----------
    scope : dict
        The command's scope (:func:`command_scope`), after or during the command.
    args : namespace
        The command's arguments; its ``--out``, ``--private-out`` and ``--html`` files are
        refused up front when they exist, so one that exists now was written by it.
    """
    rows = _in_ledgers(scope.get(_RECORDS, []))
    if not rows:
        return None
    where = ", ".join(f"release {i} of {p!r}" for p, i in rows)
    given = [(f, getattr(args, f[2:].replace("-", "_"), None)) for f in OUTPUT_FLAGS]
    files = [(f, Path(p)) for f, p in given if p is not None]
    missing = [f"{f} {str(p)!r}" for f, p in files if not p.exists()]
    written = [f"{f} {str(p)!r}" for f, p in files if p.exists()]
    return (
        f"the release was recorded in the ledger ({where}): it counts in the composition "
        "and budget of every later release of its data and secret, and its values are kept "
        f"there (distpriv ledger show {rows[0][0]!r}); outputs not written: "
        + ", ".join([*missing, "the report on stdout"])
        + (f"; written: {', '.join(written)}" if written else "")
    )
