"""The population layer of Monte Carlo models of non-linear statistics: a stratified bootstrap.

A model of statistics that are sums of per-row features knows the uncertainty of its
moments in closed form (central-limit laws of the strata moments, :class:`MomentUncertainty`).
A median, a quantile or a fitted regression's coefficients have no such form; here the
uncertainty is estimated by a seeded bootstrap of the modelling table (Efron & Tibshirani
1993, ch. 6; stratified: Davison & Hinkley 1997, §3.2):

1. draw once ``n_samples`` datasets as *positions* into the two strata (i.i.d., the
   sampling of a model of a population the table samples), common to every value θ of
   the secret: θ's datasets take the first k_θ positions into stratum A and the first
   n − k_θ into B (common random numbers, :func:`common_positions`);
2. the fitted model evaluates the statistics on the positions into the table itself;
   for b = 1..B, resample each stratum of the table with replacement (N_s rows out of
   N_s) and evaluate the statistics on the same positions into the resample;
3. the spread of the members' mean gaps (per pair of Ψ, an m × m covariance) and of the
   level and log ratio of each pair's variances (per statistic) estimates how far the
   fitted model is from the population's.

The positions are fixed, but a resample maps them to rows drawn i.i.d. from the table, so a
member is a fresh Monte Carlo model of its resample with as many draws as the fitted model:
its spread counts both errors of the fitted model, the table's and the draws' (for a sum of
k rows, Var = k²σ²/N_s + kσ²/n_samples) — the bootstrap of the whole estimator. Its cost is
B more Monte Carlo models (all members' datasets of one θ go to the engine in one batch).
The common positions make the two θs of a pair share most rows of each dataset, so the
Monte Carlo errors of their moments cancel in the mean gap and in the variance ratio that
the set must cover (with independent draws per θ they were the larger part of the layer's
price on a released logistic regression). The
result is a :class:`~distpriv.moment_uncertainty.BootstrapUncertainty`, which the calibration turns
into a (1 − β) set (:mod:`distpriv.population.bootstrap`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..moment_uncertainty import BootstrapUncertainty
from .sampling import chunk_rows

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "MIN_BOOTSTRAP",
    "BootstrapDraws",
    "bootstrap_draws",
    "check_bootstrap",
    "common_positions",
]

DEFAULT_BOOTSTRAP = 50
# Fewer resamples estimate the spread too poorly to trust even with Student t quantiles
# (the standard error of a standard deviation from B members is about 1/√(2B): 16 % at 20).
MIN_BOOTSTRAP = 20


def check_bootstrap(bootstrap: object) -> int | None:
    """``bootstrap``: ``None`` (no population layer) or an integer ≥ :data:`MIN_BOOTSTRAP`."""
    if bootstrap is None:
        return None
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int | np.integer):
        raise ParameterError(
            f"bootstrap must be an integer number of resamples (>= {MIN_BOOTSTRAP}) or None, "
            f"got {bootstrap!r}"
        )
    if bootstrap < MIN_BOOTSTRAP:
        raise ParameterError(
            f"bootstrap={bootstrap} is too small: the bootstrap layer needs at least "
            f"{MIN_BOOTSTRAP} resamples of the modelling table to estimate the spread of "
            f"the moments (default {DEFAULT_BOOTSTRAP}); bootstrap=None switches it off"
        )
    return int(bootstrap)


def _finite_variance(values: np.ndarray) -> np.ndarray:
    """Variance over axis 0 (divisor count − 1) of the finite entries; 0 with fewer than 2."""
    finite = np.isfinite(values)
    count = finite.sum(axis=0)
    filled = np.where(finite, values, 0.0)
    mean = filled.sum(axis=0) / np.maximum(count, 1)
    dev = np.where(finite, values - mean, 0.0)
    return np.where(count >= 2, (dev**2).sum(axis=0) / np.maximum(count - 1, 1), 0.0)


@dataclass(frozen=True)
class BootstrapDraws:
    """A Monte Carlo model's draws and their bootstrap uncertainty, from common positions.

    Attributes
    ----------
    samples : tuple of ndarray, shape (draws, m) each
        The fitted model's datasets per θ, evaluated on the modelling table itself.
    uncertainty : BootstrapUncertainty
        The spread of the same estimator over the resamples of the table.
    """

    samples: tuple[np.ndarray, ...]
    uncertainty: BootstrapUncertainty


def common_positions(
    counts: tuple[int, ...] | list[int], n: int, sizes: tuple[int, int], draws: int, rng: Any
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per θ, (draws, k) positions into stratum A and (draws, n − k) into stratum B, as
    prefixes of one i.i.d. array per stratum (common random numbers).

    Each θ's datasets are i.i.d. draws from its strata (a prefix of i.i.d. positions is
    i.i.d.), so every θ's law is unchanged; but dataset r of θᵢ and of θⱼ share their
    first min(kᵢ, kⱼ) rows of A and min(n − kᵢ, n − kⱼ) of B (90 of 100 rows for the
    shares 0.45 and 0.55), so the Monte Carlo errors of the two θs' moments nearly cancel
    in what δ depends on: the mean gap and the ratio of the variances. With independent
    draws per θ the log ratio of two variances from d draws has Monte Carlo sd
    ≈ 2/√d (0.063 at d = 1,000), the whole of the measured bootstrap spread on Adult's
    logistic regression; with the common draws it is ≈ 2√(1 − ρ²)/√d, ρ the correlation
    of the two θs' statistics on the shared rows (Glasserman 2004, §4.2, common random
    numbers).
    """
    k_max, b_max = max(counts), n - min(counts)
    pa = rng.integers(0, sizes[0], (draws, k_max))
    pb = rng.integers(0, sizes[1], (draws, b_max))
    return [(pa[:, :k], pb[:, : n - k]) for k in counts]


def bootstrap_draws(
    sampler: Any,
    pairs: tuple[tuple[int, int], ...],
    *,
    draws: int,
    resamples: int,
    rng: np.random.Generator,
) -> BootstrapDraws:
    """The fitted Monte Carlo model and its bootstrap uncertainty (module docstring).

    The fitted model's datasets and every bootstrap member's use the same positions
    (:func:`common_positions`, common across θ too): the fitted model maps them to the
    table's rows, member b to its resample's, so the members' spread is that of the fitted
    estimator itself, Monte Carlo error included.

    Parameters
    ----------
    sampler : StratifiedSampler
        The model's sampler (its table, query, strata ``rows_a``/``rows_b`` and ``counts``),
        with i.i.d. draws (``replace=True``).
    pairs : tuple of (int, int)
        Ψ as index pairs, in the model's order.
    draws : int
        Datasets per θ, of the fitted model and of each member (≥ 2).
    resamples : int
        B (≥ :data:`MIN_BOOTSTRAP`).
    rng : numpy.random.Generator

    Returns
    -------
    BootstrapDraws

    Raises
    ------
    ParameterError
        ``resamples`` too small; a statistic fails or is not finite on a member's dataset
        (the query names it).
    """
    b_count = check_bootstrap(resamples)
    if b_count is None:  # pragma: no cover - callers pass an integer
        raise ParameterError("resamples must be an integer")
    d = int(draws)
    n, q, table = sampler.n, sampler.query, sampler.table
    strata = (sampler.rows_a, sampler.rows_b)
    positions = common_positions(sampler.counts, n, (strata[0].size, strata[1].size), d, rng)
    k_vals, m = len(sampler.counts), q.dim
    means = np.empty((b_count, k_vals, m))
    log_vars = np.empty((b_count, k_vals, m))
    fitted: list[np.ndarray] = []
    step = chunk_rows(n)
    # The table itself (member 0: the fitted model), then every member's resample of each
    # stratum (positions into the stratum's rows).
    members = [list(strata)] + [
        [rows[rng.integers(0, rows.size, rows.size)] for rows in strata] for _ in range(b_count)
    ]
    for t, (pa, pb) in enumerate(positions):
        # All members' datasets at this θ in one batch of ((B + 1)·draws, n) row indices,
        # so a SQL aggregate costs one grouped query per chunk, not one per member.
        rows = np.concatenate(
            [np.concatenate([ra[pa], rb[pb]], axis=1) for ra, rb in members], axis=0
        )
        vals = np.concatenate(
            [q.evaluate_subsets(table, rows[s : s + step]) for s in range(0, rows.shape[0], step)]
        ).reshape(b_count + 1, d, m)
        fitted.append(vals[0])
        vals = vals[1:]
        means[:, t] = vals.mean(axis=1)
        var = vals.var(axis=1, ddof=1)
        # A statistic constant on every draw of a member has no log variance: its spread
        # is taken from the other members (and the Monte Carlo part below).
        log_vars[:, t] = np.log(np.where(var > 0, var, 1.0)) + np.where(var > 0, 0.0, np.nan)
    gaps = np.empty((len(pairs), m, m))
    spreads = np.empty((len(pairs), 2, m))
    for p, (i, j) in enumerate(pairs):
        gaps[p] = np.atleast_2d(np.cov(means[:, i] - means[:, j], rowvar=False, ddof=1))
        # Level and log ratio of the pair's variances: both θs come from the same table
        # (and the same positions), so their variances move together and the ratio is
        # known much better.
        level = (log_vars[:, i] + log_vars[:, j]) / 2
        ratio = log_vars[:, i] - log_vars[:, j]
        spreads[p] = np.sqrt(np.stack([_finite_variance(level), _finite_variance(ratio)]))
    unc = BootstrapUncertainty(
        gaps,
        spreads,
        resamples=b_count,
        draws=d,
        method="stratified bootstrap of the modelling table (rows resampled with replacement "
        "within each stratum of the secret; common random numbers across the values)",
    )
    return BootstrapDraws(tuple(fitted), unc)
