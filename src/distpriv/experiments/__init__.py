"""Reproductions and demonstrations built on the library (Chen & Ohrimenko 2023 §5)."""

from .demo import DemoReport, run_demo
from .paper import ADULT_STATISTICS, INCOME_SECRET, resolve_source

__all__ = ["ADULT_STATISTICS", "INCOME_SECRET", "DemoReport", "resolve_source", "run_demo"]
