"""The floor of each statistic: grid steps, or a fraction of its spread when continuous.

The floored mechanisms (:mod:`distpriv.central.floored`) add independent noise N(0, F),
F = diag(f_k), to every statistic. A statistic on a lattice of step h_k gets
f_k = (floor · h_k)² (one grid step blurs the grid); a statistic with no lattice
(continuous values) gets f_k = (CONTINUOUS_FLOOR · sd_k)², sd_k its
standard deviation under the model, so that the noise is always of full rank m.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import MechanismNotApplicableError, ParameterError
from ..querymodel import GaussianQueryModel

__all__ = ["CONTINUOUS_FLOOR", "continuous_floor", "floor_variances", "statistic_spread"]

# Floor of a statistic with no lattice (continuous values), as a fraction of its standard
# deviation under the model: no grid can pin it, so the floor only keeps
# the noise of full rank (no direction published exactly); its variance, 1e-4 of the
# statistic's own, costs next to nothing.
CONTINUOUS_FLOOR = 0.01


def floor_variances(steps: Any, floor: float, spread: Any = None) -> np.ndarray:
    """Floor variances (floor · h_k)², shape (m,); continuous statistics (NaN step) get
    (:data:`CONTINUOUS_FLOOR` · spread_k)² when ``spread`` is given, else 0.

    Parameters
    ----------
    steps : array_like, shape (m,)
        Lattice steps h_k (NaN: not on a lattice).
    floor : float
        Standard deviation of the floor in grid steps, ≥ 0.
    spread : array_like, shape (m,), optional
        Standard deviation of each statistic under the model (its spread across datasets).
    """
    h = np.asarray(steps, dtype=float)
    grid = (floor * np.nan_to_num(h)) ** 2
    cont = 0.0 if spread is None else (CONTINUOUS_FLOOR * np.asarray(spread, dtype=float)) ** 2
    return np.where(np.isfinite(h), grid, cont)


def statistic_spread(gm: GaussianQueryModel) -> np.ndarray:
    """Standard deviation of each statistic under the model (mean variance over θ), (m,)."""
    var = np.diagonal(np.asarray(gm.covariances), axis1=1, axis2=2).mean(axis=0)
    return np.sqrt(np.clip(var, 0.0, None))


def continuous_floor(gm: GaussianQueryModel, steps: np.ndarray, c: float) -> np.ndarray:
    """The floor variances with continuous statistics floored relative to their spread.

    Raises
    ------
    MechanismNotApplicableError
        A continuous statistic has no spread under the model (no scale for its floor): the
        noise could not be of full rank.
    """
    spread = statistic_spread(gm)
    flat = [
        s
        for s, h, sd in zip(gm.statistics, steps, spread, strict=True)
        if not np.isfinite(h) and not sd > 0
    ]
    if flat and c > 0:
        raise MechanismNotApplicableError(
            f"floored mechanisms: statistic(s) {', '.join(flat)} have no lattice and no "
            "spread under the model (constant): no floor relative to the spread can be set, "
            "and the noise would not be of full rank; give their lattice step, or drop them"
        )
    return floor_variances(steps, c, spread)


def lattice_steps(lattice: Any, m: int) -> np.ndarray:
    if lattice is None:
        raise MechanismNotApplicableError(
            "floored mechanisms need the lattice step of each statistic: pass lattice=[h_1, "
            "..., h_m] (e.g. distpriv.modeling.lattice.query_lattices(table, query, n)), or "
            "release through the pipeline, which detects it from the modelling table"
        )
    out = []
    for item in lattice:
        step = getattr(item, "step", item)
        if step is None:
            out.append(math.nan)
            continue
        try:
            s = float(step)
        except (TypeError, ValueError):
            raise ParameterError(f"lattice steps must be numbers or None, got {step!r}") from None
        if math.isnan(s):
            out.append(s)
            continue
        if not (s > 0 and math.isfinite(s)):
            raise ParameterError(f"lattice steps must be positive and finite, got {step!r}")
        out.append(s)
    if len(out) != m:
        raise ParameterError(f"lattice must give {m} steps (one per statistic), got {len(out)}")
    return np.array(out)


def check_floor(floor: Any) -> float:
    try:
        c = float(floor)
    except (TypeError, ValueError):
        raise ParameterError(f"floor must be a number of grid steps, got {floor!r}") from None
    if not (c >= 0 and math.isfinite(c)):
        raise ParameterError(f"floor must be finite and >= 0 (grid steps), got {floor!r}")
    return c
