"""Reproductions and demonstrations built on the library (Chen & Ohrimenko 2023 §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .base import Comparison, Experiment, ExperimentResult, single_run_interval
    from .paper import ADULT_STATISTICS, INCOME_SECRET, resolve_source
    from .registry import EXPERIMENTS, reproduction_markdown, run_experiment, run_experiments

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
