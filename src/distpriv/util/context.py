"""A function run inside a context manager, as a decorator.

Why: "run ``fn`` with one BLAS thread" and "run ``fn`` sharing one calibration cache" were
each a hand-written wrapper; :func:`run_inside` is the one wrapper both use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

__all__ = ["run_inside"]

F = TypeVar("F", bound=Callable[..., Any])


def run_inside(context: Callable[[], AbstractContextManager[Any]], fn: F) -> F:
    """``fn`` wrapped so that every call runs inside a fresh ``context()``.

    Parameters
    ----------
    context : callable
        Returns a new context manager per call (e.g. a ``@contextmanager`` function).
    fn : callable
        The function to wrap; its name, docstring and signature are kept
        (:func:`functools.wraps`).

    Returns
    -------
    callable
        The wrapped function.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with context():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
