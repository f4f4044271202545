"""Reproductions and demonstrations built on the library (Chen & Ohrimenko 2023 §5)."""

from .base import Comparison, Experiment, ExperimentResult, single_run_interval
from .paper import ADULT_STATISTICS, INCOME_SECRET, resolve_source
from .registry import EXPERIMENTS, reproduction_markdown, run_experiment, run_experiments

__all__ = [
    "ADULT_STATISTICS",
    "EXPERIMENTS",
    "INCOME_SECRET",
    "Comparison",
    "Experiment",
    "ExperimentResult",
    "reproduction_markdown",
    "resolve_source",
    "run_experiment",
    "run_experiments",
    "single_run_interval",
]
