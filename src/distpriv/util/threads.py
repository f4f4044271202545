"""One BLAS thread around loops of small dense linear algebra.

The exact accountant decomposes thousands of m × m matrices (m up to a few hundred) one
after another. OpenBLAS spreads each call over its threads, which at these sizes costs
more than it saves, and its waiting threads spin: measured at m = 100 on two cores,
``numpy.linalg.eigh`` takes 7.5 ms CPU on two threads against 1.8 ms on one, and far more
when other processes share the cores (``benchmarks/bench_calibration_scale.py``). Results
change only by rounding (the blocking of a product may depend on the thread count).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from .context import run_inside

__all__ = ["on_one_blas_thread", "one_blas_thread"]

F = TypeVar("F", bound=Callable[..., Any])

_CONTROLLER: Any = None

# True while ``python -m distpriv`` runs a command for which it loaded OpenBLAS with
# OPENBLAS_NUM_THREADS=1 (distpriv.__main__): numpy's OpenBLAS (and scipy's, loaded during
# the command) then runs on one thread already, and threadpoolctl's import, its scan of the
# loaded libraries and two calls per block (about 20 ms of a cold ``distpriv
# verify``) change nothing. Only when numpy's BLAS is OpenBLAS (its build configuration
# says so); any other BLAS is limited through threadpoolctl as before.
OPENBLAS_ONE_THREAD_AT_LOAD = False
_NUMPY_OPENBLAS: bool | None = None


def _numpy_blas_is_openblas() -> bool:
    """Whether numpy was built against OpenBLAS (read once from its build configuration)."""
    global _NUMPY_OPENBLAS
    if _NUMPY_OPENBLAS is None:
        import numpy as np

        try:
            name = str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"])
        except (AttributeError, KeyError, TypeError):  # pragma: no cover - older numpy
            name = ""
        _NUMPY_OPENBLAS = "openblas" in name.lower()
    return _NUMPY_OPENBLAS


def one_blas_thread() -> AbstractContextManager[Any]:
    """Context in which BLAS/LAPACK use one thread; the previous limits come back on exit.

    The libraries are found once (threadpoolctl, imported lazily); without threadpoolctl
    this does nothing. The limit is process-wide while it lasts, as with scikit-learn's
    own use of threadpoolctl. Nothing to do while :data:`OPENBLAS_ONE_THREAD_AT_LOAD`
    holds and numpy's BLAS is OpenBLAS (loaded on one thread).
    """
    global _CONTROLLER
    if OPENBLAS_ONE_THREAD_AT_LOAD and _numpy_blas_is_openblas():
        return nullcontext()
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency of scikit-learn
            return nullcontext()
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def on_one_blas_thread(fn: F) -> F:
    """Decorator: ``fn`` runs inside :func:`one_blas_thread`."""
    # Looked up at each call (not bound now), so that replacing the module's function works.
    return run_inside(lambda: one_blas_thread(), fn)
