"""What the benchmarks share: where the repository's pieces are, how to time a call and read
peak memory, how to export a baseline's source tree, and the real-subset reference of the tests.

Every benchmark runs from the repository root as a module, ``python -m benchmarks.bench_x``,
with distpriv importable (``pip install -e .``, or ``PYTHONPATH=src``). The root is then on
the path, so ``benchmarks`` and ``tests`` import as packages and no script edits ``sys.path``.
A child interpreter that must import a given source tree (this checkout's or a baseline's)
gets it through its environment (:func:`src_env`), never by patching its path.
"""

from __future__ import annotations

import os
import resource
import subprocess
import tarfile
import time
import warnings
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The repository root (the directory holding ``src/``, ``tests/`` and ``benchmarks/``).
ROOT = Path(__file__).resolve().parents[1]
#: This checkout's source tree, for child interpreters that must import it.
SRC = ROOT / "src"
#: The example configurations and their data.
EXAMPLES = ROOT / "examples"
#: The bundled data files (Adult, RAND HIE, …) shipped inside the package.
DATA = SRC / "distpriv" / "datasets" / "data"


# The tests' Monte Carlo of real Adult subsets (tests/modeling/_real_subsets.py), the reference
# of the range and event benchmarks. Loaded on first use, not at import: the memory and cold-start
# benchmarks import this module in the very child processes whose peak memory they measure.
_REAL_SUBSETS = ("PREDICATE", "STATS", "adult_features", "mc_delta", "subsets")


def __getattr__(name: str) -> Any:
    if name in _REAL_SUBSETS:
        from tests.modeling import _real_subsets

        return getattr(_real_subsets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def src_env(src: Path = SRC) -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` set to ``src`` only, so that a child
    interpreter imports distpriv from that tree (this checkout's, or a baseline's exported
    by :func:`export_src`) whatever is installed."""
    return {**os.environ, "PYTHONPATH": str(src)}


def export_src(commit: str, into: Path) -> Path:
    """``git archive <commit> src`` unpacked into ``into``; returns its ``src`` directory
    (the previous implementation a benchmark measures against in the same run)."""
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def best_of(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """(best wall-clock seconds over ``repeat`` calls of ``fn``, the last call's value): the
    minimum is the least disturbed by other work on a shared machine."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def timed(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> tuple[T, float, float]:
    """(value, CPU seconds of this process, wall seconds) of one call ``fn(*args, **kwargs)``.
    On a loaded machine the CPU seconds are the figure to read."""
    cpu, wall = time.process_time(), time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.process_time() - cpu, time.perf_counter() - wall


def timed_quietly(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> tuple[T, float, float]:
    """:func:`timed` with warnings silenced (the assumption warnings a benchmark expects on
    every call would otherwise flood its table)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return timed(fn, *args, **kwargs)


def peak_mib() -> float:
    """Peak resident memory of this process image in MiB (``VmHWM``; ``ru_maxrss`` on other
    systems). On Linux ``ru_maxrss`` also counts the parent's pages at fork time."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
