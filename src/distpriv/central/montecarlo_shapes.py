"""optimal-g's noise shapes on a Monte Carlo model of non-linear statistics.

A Monte Carlo model (a median, a quantile, a variance, a released regression's
coefficients: ``model_query(..., method="montecarlo")``) has covariances Σ_θ estimated
from draws, so no two of them are equal: besides the mean gap of a pair (what the convex
program of Chen & Ohrimenko 2023, Cor. A.1 shapes the noise for), δ also comes from the
pair's covariance mismatch, in every direction. The program's noise alone leaves
directions without noise, and its exact calibration (or the population set's members,
whose variances are moved to the corners of their confidence box) needs a repair that
covers every direction. The isotropic repair, and expm-g's isotropic noise itself, used to
win there, so that optimal-g silently returned expm-g's shape.

Here the repair follows the model's own sampled covariance Σ̄ (the average of Σ_θ over
θ): noise s²Σ̄ shrinks every whitened covariance ratio (λ + s²)/(1 + s²) at once, the
mismatch's own coordinates, whatever the statistics' correlation (a regression's
coefficients are strongly correlated) and units. optimal-g's candidates on such a model
are the program's noise scaled, the program's noise plus s²Σ̄, s²Σ̄ alone, and (under an
objective that weighs statistics, ``relative`` by default) the program's noise plus the
sampled variances' diagonal; each is calibrated by the same exact accountant (and
population set) as every other shape, the cheapest is kept and its name is reported.
expm-g's isotropic noise is no longer one of optimal-g's candidates on such a model: it is
expm-g's (``auto`` compares both). If no shaped candidate meets the target, optimal-g
refuses, naming expm-g.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..moment_uncertainty import BootstrapUncertainty
from .objective import is_identity_like

__all__ = [
    "EXPM_SHAPE",
    "SAMPLED_KEY",
    "is_monte_carlo",
    "mark_monte_carlo",
    "monte_carlo_families",
    "sampled_covariance",
]

# The diagnostics key (of the papers' calibration, which the exact calibration passes
# around) that carries Σ̄ of a Monte Carlo model.
SAMPLED_KEY = "monte_carlo_sampled_covariance"
# The label of the isotropic candidate in central/_exact_families.py.
EXPM_SHAPE = "isotropic noise (expm-g's shape)"

Family = tuple[str, Callable[[float], np.ndarray], float]


def is_monte_carlo(model: Any, gm: Any) -> bool:
    """Whether ``model`` is a Monte Carlo model of non-linear statistics: one with a
    bootstrap population layer, or built by ``method="montecarlo"`` from a non-linear
    query (read by attribute: the model's class lives in a lower layer)."""
    if isinstance(getattr(gm, "uncertainty", None), BootstrapUncertainty):
        return True
    query = getattr(model, "query", None)
    return (
        getattr(model, "method", None) == "montecarlo"
        and query is not None
        and not bool(getattr(query, "is_linear", True))
    )


def mark_monte_carlo(model: Any, gm: Any, paper: Any) -> None:
    """Put Σ̄ of a Monte Carlo model into ``paper``'s diagnostics (:data:`SAMPLED_KEY`),
    where optimal-g's exact calibration reads it; nothing for other models."""
    if paper is None or not is_monte_carlo(model, gm):
        return
    cov = np.mean(np.asarray(gm.covariances, dtype=float), axis=0)
    paper.diagnostics[SAMPLED_KEY] = (cov + cov.T) / 2


def sampled_covariance(paper: Any) -> np.ndarray | None:
    """Σ̄ put there by :func:`mark_monte_carlo`, or ``None`` (not a Monte Carlo model)."""
    if paper is None:
        return None
    cov = paper.diagnostics.get(SAMPLED_KEY)
    return None if cov is None else np.asarray(cov, dtype=float)


def monte_carlo_families(
    families: list[Family], base: np.ndarray, sampled: np.ndarray, weights: np.ndarray
) -> list[Family]:
    """optimal-g's candidate shapes on a Monte Carlo model (module docstring).

    Parameters
    ----------
    families : list of (label, family, start)
        The candidates of the analytic models (their isotropic ones first).
    base : ndarray, shape (m, m)
        The convex program's noise.
    sampled : ndarray, shape (m, m)
        Σ̄, the model's sampled covariance averaged over θ.
    weights : ndarray, shape (m, m)
        W of the objective.

    Returns
    -------
    list of (label, family, start)
        The sampled-covariance shapes first, then ``families`` without expm-g's isotropic
        shape (with W ∝ I it *is* expm-g's noise); under another W the isotropic shape is
        the diagonal of Σ̄ (each statistic's noise ∝ its sampling sd) and is kept, named so.
    """
    cost = max(float(np.sum(weights * sampled)), 1e-300)
    # Start where s²Σ̄ costs what the program's noise does (or a unit of the sampled
    # spread when the program adds none).
    start = math.sqrt(max(float(np.sum(weights * base)), 1e-12 * cost) / cost)
    out: list[Family] = [
        (
            "convex program's noise plus the model's sampled covariance (Monte Carlo repair)",
            lambda s: base + s * s * sampled,
            start,
        ),
        ("the model's sampled covariance, scaled", lambda s: s * s * sampled, start),
    ]
    identity = is_identity_like(weights)
    for label, fam, s0 in families:
        if label == EXPM_SHAPE:
            if identity:
                continue  # expm-g's own noise: not optimal-g's answer
            label = "the model's sampled variances (noise sd proportional to sampling sd)"
        out.append((label, fam, s0))
    return out
