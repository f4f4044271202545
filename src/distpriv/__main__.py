"""``python -m distpriv`` and the ``distpriv`` console script.

Deliberately tiny: it handles Ctrl-C *before* the real command line (:mod:`distpriv.cli`) and
whatever it imports are loaded, so an interrupt in the first second still exits with status
130 and one line instead of a ``KeyboardInterrupt`` traceback.
"""

from __future__ import annotations

import gc
import os
import sys
from types import FrameType

EXIT_INTERRUPTED = 130

# The cyclic garbage collector's generation-0 threshold while a command runs (Python's
# default: 700). A command imports numpy, pandas, scipy.special, sqlglot, DuckDB and rich,
# about a million long-lived objects: at 700 the collector ran about 250 times during
# ``distpriv verify`` and traversed them all twice, 0.1 s of its 1.5 s of CPU
# (measured with gc.callbacks). At 20,000 it runs a few times; garbage without
# cycles is freed by reference counting as before, cyclic garbage a little later. The
# previous thresholds are restored when the command returns (an embedding process,
# e.g. a test calling this function, keeps its own).
GC_GENERATION0 = 20_000

# Whether a command freezes what survives a collection during an import (a
# cold command's cost). What an import allocates (functions, classes, docstrings' tables) lives as
# long as the process, yet each such object was traversed twice: by the generation-0
# collection that found it young, then by a generation-1 one (two of them in ``distpriv
# verify``, 40 ms of its CPU, the imports' 200,000 objects). After a collection that ran
# inside an import, gc.freeze() moves the survivors to the permanent generation, which no
# collection traverses; the command's own objects are collected as before. The lazy
# package exports' imports (``from distpriv.pipeline import run_verify``: most of a
# command's imports) run with the collector off altogether (distpriv.util.import_gc). Frozen
# objects are unfrozen when the command returns (they are collected at exit as usual); a
# caller that froze objects itself keeps its own freezing untouched (nothing is frozen).
FREEZE_IMPORT_SURVIVORS = True

# BLAS threads of a command, unless the user set them. A
# command's linear algebra is thousands of small calls (the exact accountant's m × m
# decompositions already run on one thread, distpriv.util.threads); between them OpenBLAS's
# other threads spin while they wait for work, and that CPU is spent for nothing: measured
# about 0.1 s of the 1.5 s of ``distpriv verify examples/adult-income.toml`` on two cores.
# OpenBLAS reads the variable once, when it is loaded (numpy's, and scipy's own copy when
# scipy.linalg loads), so it is set before any of them and for the command's duration;
# the environment is restored afterwards (an embedding process keeps its own).
BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def _one_blas_thread() -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` unless the user set it or numpy is already loaded
    (then its threads are what they are); True when it was set here."""
    if "numpy" in sys.modules or BLAS_THREADS_VARIABLE in os.environ:
        return False
    os.environ[BLAS_THREADS_VARIABLE] = "1"
    return True


def _imports_without_collection(value: bool) -> None:
    """Let distpriv.util.import_gc.loading run the command's imports without collections."""
    from .util import import_gc as _import_gc

    _import_gc.ACTIVE = value


def _openblas_one_thread_at_load(value: bool) -> None:
    """Tell distpriv.util.threads that OpenBLAS was loaded on one thread for this command (its
    threadpoolctl limits are then not needed)."""
    from .util import threads as _threads

    _threads.OPENBLAS_ONE_THREAD_AT_LOAD = value


def _in_import(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside an import (importlib's bootstrap is on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _freeze_import_survivors(phase: str, info: dict[str, int]) -> None:
    """gc callback: after a collection that ran inside an import, freeze its survivors."""
    if phase != "stop":
        return
    try:
        frame: FrameType | None = sys._getframe(1)  # what the collection interrupted
    except ValueError:  # a collection with no Python frame below it (e.g. at exit)
        return
    if _in_import(frame):
        gc.freeze()


def main() -> int:
    """Run ``distpriv`` with ``sys.argv``; return the exit status."""
    previous = gc.get_threshold()
    gc.set_threshold(max(GC_GENERATION0, previous[0]), *previous[1:])
    freezing = FREEZE_IMPORT_SURVIVORS and gc.get_freeze_count() == 0
    blas = _one_blas_thread()
    try:
        if freezing:
            gc.callbacks.append(_freeze_import_survivors)
            _imports_without_collection(True)
        if blas:
            _openblas_one_thread_at_load(True)
        from .cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("distpriv: interrupted; nothing was written\n")
        return EXIT_INTERRUPTED
    finally:
        if freezing:
            _imports_without_collection(False)
            if _freeze_import_survivors in gc.callbacks:
                gc.callbacks.remove(_freeze_import_survivors)
            gc.unfreeze()  # back to the oldest generation: collected as usual from here
        gc.set_threshold(*previous)
        if blas:
            os.environ.pop(BLAS_THREADS_VARIABLE, None)
            _openblas_one_thread_at_load(False)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
