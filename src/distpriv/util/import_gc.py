"""The cyclic garbage collector around the imports of a command.

What an import leaves (functions, classes, their tables) lives as long as the process, so
collecting while importing only traverses objects that will never be garbage: in
``distpriv verify`` about 15 collections of 20,000 young objects each, 40 ms of its CPU,
all during imports. While :data:`ACTIVE` holds (set by ``python -m distpriv`` for the
command's duration, :mod:`distpriv.__main__`), :func:`loading` runs a block of imports with
the collector off and then freezes what is alive (``gc.freeze``: the permanent generation,
which no later collection traverses; ``python -m distpriv`` unfreezes it when the command
returns). Cyclic garbage an import leaves is then collected only after the command, a
bounded amount (the modules' own). Outside a command (a library user, a test calling
:func:`distpriv.cli.main`) :func:`loading` does nothing: the collector is the caller's.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ACTIVE", "loading"]

# Set by distpriv.__main__ while it runs a command (and only when nothing was frozen before).
ACTIVE = False


@contextmanager
def loading() -> Iterator[None]:
    """Imports in this block run without collections; what is alive after it is frozen.

    A no-op unless :data:`ACTIVE`, and inside another :func:`loading` block (or with the
    collector already off): the outermost block decides.
    """
    if not ACTIVE or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
