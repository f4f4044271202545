"""Monte Carlo model of a mean secret: real datasets whose average falls at each value.

``model_query(..., method="montecarlo")`` for a :class:`~distpriv.modeling.MeanSecret`
draws datasets of n rows i.i.d. from the modelling table and keeps those whose average of
the secret's expression lies within a narrow window [v − h, v + h] of each value
(rejection sampling), until ``n_samples`` are kept per value. No tilting or Gaussian
conditioning is involved: the kept datasets are real subsets of the table, so the model is
the data-level reference the analytic (conditional limit) model is checked against, and
what ``distpriv verify`` and ``release --verify`` resample.

The window: h = 0.05 sd(s)/√n (a twentieth of the dataset average's spread), widened to
half the average's lattice step when s is integer-valued on a coarser grid, so that it
always holds a reachable average. Averages in the window differ from v by at most h, which
moves the statistics by at most |b| h (b the slope on the average): 5 % of one standard
error of the average.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ParameterError
from .model_diagnostics import _diagnostics
from .sampling import chunk_rows
from .secret_mean import MeanSecret

__all__ = ["WINDOW_FRACTION", "conditioned_draws", "window"]

WINDOW_FRACTION = 0.05
# Give up when fewer than one dataset in this many lands in a value's window.
_MIN_ACCEPTANCE = 1e-3


def window(s: np.ndarray, n: int) -> float:
    """h for the secret's row values ``s`` and datasets of ``n`` rows (module docstring)."""
    h = WINDOW_FRACTION * float(s.std()) / math.sqrt(n)
    values = np.unique(s)
    if values.size > 1 and np.all(values == np.round(values)):
        h = max(h, float(np.diff(values).min()) / (2 * n))
    return h


def conditioned_draws(
    x: np.ndarray,
    s: np.ndarray,
    secret: MeanSecret,
    *,
    n: int,
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[tuple[np.ndarray, ...], float, int]:
    """Statistics of ``n_samples`` real n-row datasets per value whose average of ``s`` is
    within :func:`window` of it.

    Parameters
    ----------
    x : ndarray, shape (N, m)
        Per-row features of the statistics, in their units.
    s : ndarray, shape (N,)
        The secret's expression per row.
    secret : MeanSecret
    n, n_samples : int
    rng : numpy.random.Generator

    Returns
    -------
    (tuple of ndarray (n_samples, m), float, int)
        The statistics per value, the window h, the datasets drawn.

    Raises
    ------
    ParameterError
        When fewer than one dataset in 1,000 falls in a value's window (a value too rare
        for rejection sampling; the analytic model still applies).
    """
    h = window(s, n)
    big_n = s.shape[0]
    chunk = chunk_rows(n)
    kept: list[list[np.ndarray]] = [[] for _ in secret.values]
    have = np.zeros(len(secret.values), dtype=int)
    drawn = 0
    limit = math.ceil(n_samples / _MIN_ACCEPTANCE)
    while np.any(have < n_samples):
        if drawn >= limit:
            t = int(np.argmin(have))
            raise ParameterError(
                f"secret values: only {have[t]} of {drawn} datasets of {n} rows drawn from the "
                f"modelling table have an average of {secret.expression} within {h:.3g} of "
                f"{secret.values[t]:g}: too rare for method='montecarlo' (use "
                "method='analytic', or values nearer the table's average)"
            )
        idx = rng.integers(0, big_n, size=(chunk, n))
        means = s[idx].mean(axis=1)
        drawn += chunk
        for t, v in enumerate(secret.values):
            need = n_samples - int(have[t])
            if need <= 0:
                continue
            hit = np.flatnonzero(np.abs(means - v) <= h)[:need]
            if hit.size:
                kept[t].append(x[idx[hit]].sum(axis=1))
                have[t] += hit.size
    return tuple(np.concatenate(k) for k in kept), h, drawn


def sampled_moments(
    samples: tuple[np.ndarray, ...], pairs_idx: tuple[tuple[int, int], ...]
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Sample means, covariances and the diagnostics of the kept datasets."""
    means = np.stack([d.mean(axis=0) for d in samples])
    covs = np.stack([np.atleast_2d(np.cov(d, rowvar=False)) for d in samples])
    return means, covs, _diagnostics(means, covs, list(samples), pairs_idx)
