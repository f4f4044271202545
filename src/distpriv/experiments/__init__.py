"""Reproductions and demonstrations built on the library (Chen & Ohrimenko 2023 §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

# Imported on first use (distpriv.util.lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "base": (
        "Comparison",
        "Experiment",
        "ExperimentResult",
        "single_run_interval",
    ),
    "paper": (
        "ADULT_STATISTICS",
        "INCOME_SECRET",
        "resolve_source",
    ),
    "registry": (
        "EXPERIMENTS",
        "reproduction_markdown",
        "run_experiment",
        "run_experiments",
    ),
}

# The one export list: __all__ and the type checkers' imports follow _EXPORTS.
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .base import Comparison, Experiment, ExperimentResult, single_run_interval
    from .paper import ADULT_STATISTICS, INCOME_SECRET, resolve_source
    from .registry import EXPERIMENTS, reproduction_markdown, run_experiment, run_experiments

__getattr__, __dir__ = attach(__name__, _EXPORTS)
