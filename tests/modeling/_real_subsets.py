"""Monte Carlo of real subsets of Adult, and a Gaussian-free estimate of the released δ(ε).

Shared by the range and event secret tests. The reference makes no Gaussian assumption
about the statistics: the release is F(dataset) + Z with Z ~ N(0, Σ_Z), so the density of
the release given a value (or an event) is p(y) = E_F[φ_Z(y − F)], estimated by averaging
the noise density over many real subsets; δ(ε) = E_{Y~P}[(1 − e^ε q(Y)/p(Y))₊] is then
averaged over fresh releases Y = F' + Z of independent subsets.
"""

from __future__ import annotations

import numpy as np

from distpriv.datasets.adult import load_adult

STATS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
PREDICATE = "income = '>50K'"


def adult_features() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features of every row, rows with income >50K, rows without) of the whole table,
    the features scaled so that a subset's statistics are sums of its rows' (n = 100)."""
    df = load_adult()
    n = 100
    x = np.column_stack(
        [
            df["age"].to_numpy(float) / n,
            df["education_num"].to_numpy(float) / n,
            (df["marital_status"] == "Never-married").to_numpy(float),
            (df["sex"] == "Female").to_numpy(float),
            df["hours_per_week"].to_numpy(float) / n,
        ]
    )
    rich = (df["income"] == ">50K").to_numpy()
    return x, np.flatnonzero(rich), np.flatnonzero(~rich)


def subsets(
    x: np.ndarray,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Statistics of one real subset of 100 rows per entry of ``counts`` (k rows drawn
    i.i.d. from the >50K rows, 100 − k from the others: the population premise)."""
    n = 100
    out = np.empty((counts.size, x.shape[1]))
    for k in np.unique(counts):
        sel = np.flatnonzero(counts == k)
        ia = rows_a[rng.integers(0, rows_a.size, size=(sel.size, k))]
        ib = rows_b[rng.integers(0, rows_b.size, size=(sel.size, n - k))]
        out[sel] = x[ia].sum(axis=1) + x[ib].sum(axis=1)
    return out


def _log_density(y: np.ndarray, centres: np.ndarray, chol_inv: np.ndarray) -> np.ndarray:
    """log E_F φ_Z(y − F) up to a constant shared by both hypotheses (same Σ_Z)."""
    out = np.empty(y.shape[0])
    zc = centres @ chol_inv.T
    for s in range(0, y.shape[0], 500):
        zy = y[s : s + 500] @ chol_inv.T
        d2 = np.sum(zy**2, axis=1)[:, None] - 2 * zy @ zc.T + np.sum(zc**2, axis=1)[None, :]
        lo = -0.5 * d2
        top = lo.max(axis=1, keepdims=True)
        out[s : s + 500] = top[:, 0] + np.log(np.mean(np.exp(lo - top), axis=1))
    return out


def mc_delta(
    dens_p: np.ndarray,
    dens_q: np.ndarray,
    eval_p: np.ndarray,
    noise_cov: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """(estimate, standard error) of δ_ε(P‖Q) for releases F + Z: ``dens_*`` are subsets
    for the densities, ``eval_p`` independent subsets of P released with fresh noise."""
    chol = np.linalg.cholesky(noise_cov)
    y = eval_p + rng.standard_normal(eval_p.shape) @ chol.T
    chol_inv = np.linalg.inv(chol)
    log_ratio = _log_density(y, dens_q, chol_inv) - _log_density(y, dens_p, chol_inv)
    terms = np.clip(1.0 - np.exp(epsilon + log_ratio), 0.0, None)
    return float(terms.mean()), float(terms.std(ddof=1) / np.sqrt(terms.size))
