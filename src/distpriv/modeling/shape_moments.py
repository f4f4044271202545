"""Third and fourth cross moments of the strata's row features.

The "tight" population set (:mod:`distpriv.population._corr`) combines a pair's errors
— the mean gap's and every stratum's log-variances' — with their correlations instead of
the worst case. By the delta method, for a stratum of N rows with row feature y (mean 0,
variances σ², kurtosis κ), the stratum mean m̂ and the log-variances log σ̂² have
asymptotic covariances

    Cov(m̂_j, log σ̂²_l) = E[y_j y_l²] / (N σ_l²),
    Cov(log σ̂²_l, log σ̂²_k) = (E[y_l² y_k²] / (σ_l² σ_k²) − 1) / N,

i.e. the correlation matrix of u = (y/σ, (y²/σ² − 1)/√(κ − 1)), which this module
estimates per stratum: from the rows (:func:`shape_correlation_from_rows`) or from the
cross sums that :func:`~distpriv.modeling.moments.table_moments` adds to its one aggregate
query (:func:`shape_correlation_of_stratum`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "MAX_STATISTICS",
    "shape_correlation_from_rows",
    "shape_correlation_from_sums",
    "shape_correlation_of_stratum",
]

# Statistics above this many use the box set anyway (population/sets.JOINT_MAX_COORDS
# over two strata): no cross moments are computed (the query adds 3m(m − 1)/2 sums).
MAX_STATISTICS = 12


def shape_correlation_from_sums(
    n: int, s1: np.ndarray, s2: np.ndarray, s3: np.ndarray, s4: np.ndarray
) -> np.ndarray:
    """The correlation matrix of u (module docstring) from power sums of centred rows.

    Parameters
    ----------
    n : int
        Rows.
    s1 : ndarray, shape (m,)
        Σ y_j (≈ 0: the rows are centred at the stratum's mean).
    s2 : ndarray, shape (m, m)
        Σ y_j y_k.
    s3 : ndarray, shape (m, m)
        Σ y_j y_l² (row j, column l).
    s4 : ndarray, shape (m, m)
        Σ y_l² y_k².

    Returns
    -------
    ndarray, shape (2m, 2m)
        Rows and columns of a feature with no variance, or whose square has none (a binary
        feature at share 1/2), are 0; the rest is a correlation matrix (clipped to be
        positive semi-definite against rounding).
    """
    e = s1 / n
    mu2 = s2 / n - np.outer(e, e)
    sq = np.diag(s2) / n  # E[y_l²]
    c3 = s3 / n - np.outer(e, sq)  # Cov(y_j, y_l²)
    c4 = s4 / n - np.outer(sq, sq)  # Cov(y_l², y_k²)
    cov = np.block([[mu2, c3], [c3.T, c4]])
    cov = (cov + cov.T) / 2
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    # A square whose variance is below rounding of the fourth moment is constant.
    scale = np.concatenate([np.diag(mu2), np.diag(mu2) ** 2])
    ok = sd > 1e-7 * np.sqrt(np.maximum(scale, 1e-300))
    inv = np.where(ok, 1.0 / np.where(ok, sd, 1.0), 0.0)
    corr = cov * inv[:, None] * inv[None, :]
    w, v = np.linalg.eigh(corr)
    corr = (v * np.clip(w, 0.0, None)) @ v.T
    d = np.sqrt(np.clip(np.diag(corr), 0.0, None))
    dd = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
    return np.asarray(corr * dd[:, None] * dd[None, :])


def shape_correlation_from_rows(rows: np.ndarray) -> np.ndarray:
    """:func:`shape_correlation_from_sums` of the rows (shape (N, m)) of one stratum."""
    y = np.asarray(rows, dtype=float)
    y = y - y.mean(axis=0)
    y2 = y * y
    return shape_correlation_from_sums(y.shape[0], y.sum(axis=0), y.T @ y, y.T @ y2, y2.T @ y2)


def shape_correlation_of_stratum(stratum: Any) -> np.ndarray | None:
    """:func:`shape_correlation_from_sums` of a
    :class:`~distpriv.modeling.moments.StratumSums` (its central sums, from the one
    aggregate query of :func:`~distpriv.modeling.moments.table_moments`); ``None`` when the
    query did not compute the cross moments (above :data:`MAX_STATISTICS` statistics, or
    sums that overflowed)."""
    if stratum.cross3 is None or stratum.cross4 is None:
        return None
    m = stratum.cross.shape[0]
    return shape_correlation_from_sums(
        stratum.count, np.zeros(m), stratum.cross, stratum.cross3, stratum.cross4
    )
