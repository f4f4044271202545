"""One BLAS thread around loops of small dense linear algebra.

The exact accountant decomposes thousands of m × m matrices (m up to a few hundred) one
after another. OpenBLAS spreads each call over its threads, which at these sizes costs
more than it saves, and its waiting threads spin: measured at m = 100 on two cores,
``numpy.linalg.eigh`` takes 7.5 ms CPU on two threads against 1.8 ms on one, and far more
when other processes share the cores (``benchmarks/bench_calibration_scale.py``). Results
change only by rounding (the blocking of a product may depend on the thread count).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

__all__ = ["on_one_blas_thread", "one_blas_thread"]

F = TypeVar("F", bound=Callable[..., Any])

_CONTROLLER: Any = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """Context in which BLAS/LAPACK use one thread; the previous limits come back on exit.

    The libraries are found once (threadpoolctl, imported lazily); without threadpoolctl
    this does nothing. The limit is process-wide while it lasts, as with scikit-learn's
    own use of threadpoolctl.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency of scikit-learn
            return nullcontext()
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def on_one_blas_thread(fn: F) -> F:
    """Decorator: ``fn`` runs inside :func:`one_blas_thread`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
