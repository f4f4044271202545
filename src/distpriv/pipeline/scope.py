"""One command, one load: a per-command cache scope for data the command reads repeatedly.

``distpriv audit`` needs the paper's Adult split three times (model, auxiliary, test) and
``demo`` four; each time meant copying and permuting the whole table again. Inside
:func:`command_scope` (entered by the CLI around each command) the split is made once per
seed and every later request gets a copy of its part. Outside a scope nothing is cached, and
a scope ends with its command: two calls with different arguments never share data.

Standard library only, so that the command line can enter the scope without importing pandas.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["command_cache", "command_records", "command_scope", "note_record"]

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
    the CLI looks the row up in the file (:func:`command_records`). Outside a
    :func:`command_scope` nothing is kept.
    """
    cache = _CACHE.get()
    if cache is not None:
        cache.setdefault(_RECORDS, []).append(dict(note))


def command_records() -> list[dict[str, Any]]:
    """The notes of :func:`note_record` made in the current command (oldest first)."""
    cache = _CACHE.get()
    return list(cache.get(_RECORDS, [])) if cache is not None else []
