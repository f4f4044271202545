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

__all__ = ["command_cache", "command_scope"]

_CACHE: ContextVar[dict[Any, Any] | None] = ContextVar("distpriv_command_cache", default=None)


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
