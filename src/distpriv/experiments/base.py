"""Experiment results: a table, comparisons with the paper, figures; written as CSV/JSON/PNG."""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.version import __version__

__all__ = [
    "Comparison",
    "Experiment",
    "ExperimentResult",
    "make_result",
    "positive",
    "save_figure",
    "single_run_interval",
]


def single_run_interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, low, high): a 95 % prediction interval for one more run of the pipeline.

    The paper reports one run of its pipeline (one random split, one 1000-subset model, one
    set of repetitions). From our k independent runs, a new run falls in
    mean ± t₀.₉₇₅,ₖ₋₁ · sd · √(1 + 1/k) with probability 95 % (normal prediction interval).
    With one run, the interval is just the value.
    """
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=float)
    k = v.size
    if k < 2:
        return float(v.mean()), float(v.mean()), float(v.mean())
    half = float(student_t.ppf(0.975, k - 1) * v.std(ddof=1) * np.sqrt(1 + 1 / k))
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


@dataclass(frozen=True)
class Comparison:
    """One published number next to ours."""

    quantity: str
    paper: float
    ours: float
    low: float
    high: float

    @property
    def within(self) -> bool:
        """Whether the paper's value lies in our interval."""
        return self.low <= self.paper <= self.high

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return field_values(self, "quantity paper ours low high within")


@dataclass(frozen=True)
class ExperimentResult:
    """What an experiment run produced."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    comparisons: tuple[Comparison, ...]
    figures: tuple[str, ...]
    params: dict[str, Any]
    seed: int
    quick: bool
    elapsed: float
    checks: dict[str, bool] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""

        return to_jsonable(
            {
                "name": self.name,
                "title": self.title,
                "version": __version__,
                "seed": self.seed,
                "quick": self.quick,
                "elapsed_seconds": self.elapsed,
                "params": self.params,
                "columns": self.columns,
                "rows": [list(r) for r in self.rows],
                "comparisons": [c.to_dict() for c in self.comparisons],
                **field_values(self, "figures checks notes"),
            }
        )

    def write(self, out_dir: Path) -> list[Path]:
        """Write ``NAME.csv`` and ``NAME.json`` (atomically); figures are already there."""
        import pandas as pd

        out_dir.mkdir(parents=True, exist_ok=True)
        frame = pd.DataFrame(list(self.rows), columns=list(self.columns))
        paths = [out_dir / f"{self.name}.csv", out_dir / f"{self.name}.json"]
        texts = [
            frame.to_csv(index=False),
            json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n",
        ]
        for path, text in zip(paths, texts, strict=True):
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{path.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        return paths

    def format_value(self, v: Any) -> str:
        """Short text for a table cell."""
        if isinstance(v, float):
            if math.isnan(v):
                return "-"
            return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
        return str(v)


@dataclass(frozen=True)
class Experiment:
    """A registered reproduction."""

    name: str
    title: str
    paper: str
    run: Callable[..., ExperimentResult]


@dataclass(frozen=True)
class RunInfo:
    """How one experiment was run: its seed, quick or full, and when it started."""

    seed: int
    quick: bool
    #: Its start, a ``time.perf_counter()`` value.
    t0: float


def make_result(
    name: str,
    title: str,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    comparisons: list[Comparison],
    figures: list[str],
    params: dict[str, Any],
    run: RunInfo,
    checks: dict[str, bool] | None = None,
    notes: tuple[str, ...] = (),
) -> ExperimentResult:
    """An :class:`ExperimentResult` of ``run``, timed from its start."""
    return ExperimentResult(
        name,
        title,
        tuple(columns),
        tuple(rows),
        tuple(comparisons),
        tuple(figures),
        params,
        run.seed,
        run.quick,
        time.perf_counter() - run.t0,
        checks or {},
        notes,
    )


def save_figure(out_dir: Path | None, name: str, draw: Callable[[Any], Any]) -> list[str]:
    """Draw with matplotlib (Agg) and save ``NAME.png`` in ``out_dir``; [] without one.

    ``draw`` receives ``matplotlib.pyplot`` and returns the figure.
    """
    if out_dir is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig = draw(plt)
    path = out_dir / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [path.name]


def positive(values: Any) -> np.ndarray:
    """Zeros (e.g. no noise needed) cannot sit on a log axis: leave them out of the curve."""
    arr = np.asarray(values, dtype=float)
    return np.where(arr > 0, arr, np.nan)
