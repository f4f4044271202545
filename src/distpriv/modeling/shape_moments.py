"""Third and fourth cross moments of the strata's row features (issue 25, the price).

The "tight" population set (:mod:`distpriv.central._robust_corr`) combines a pair's errors
— the mean gap's and every stratum's log-variances' — with their correlations instead of
the worst case. By the delta method, for a stratum of N rows with row feature y (mean 0,
variances σ², kurtosis κ), the stratum mean m̂ and the log-variances log σ̂² have
asymptotic covariances

    Cov(m̂_j, log σ̂²_l) = E[y_j y_l²] / (N σ_l²),
    Cov(log σ̂²_l, log σ̂²_k) = (E[y_l² y_k²] / (σ_l² σ_k²) − 1) / N,

i.e. the correlation matrix of u = (y/σ, (y²/σ² − 1)/√(κ − 1)), which this module
estimates per stratum: from the rows (:func:`shape_correlation_from_rows`) or in the
engine, one grouped aggregate of the centred features' products
(:func:`table_shape_correlation`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .engines import missing_condition
from .expressions import ParsedExpression
from .sql_literals import sql_double
from .tables import Table

__all__ = ["shape_correlation_from_rows", "shape_correlation_from_sums", "table_shape_correlation"]

# Statistics above this many use the box set anyway (central/_robust_joint.JOINT_MAX_COORDS
# over two strata): no cross moments are computed (the query has m² + m(m + 1)/2 sums).
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


def table_shape_correlation(
    table: Table,
    features: list[ParsedExpression],
    predicate: ParsedExpression,
    means: tuple[np.ndarray, np.ndarray],
    *,
    missing: str,
) -> np.ndarray | None:
    """Per stratum (rows satisfying the predicate, then the others) the correlation matrix
    of u, from one grouped aggregate query in the engine; ``None`` above
    :data:`MAX_STATISTICS` statistics.

    Parameters
    ----------
    table : Table
    features : list of ParsedExpression, length m
        The statistics' row features (validated by :func:`~distpriv.modeling.moments.
        table_moments`, which ran first).
    predicate : ParsedExpression
    means : tuple of ndarray, each shape (m,)
        The strata's feature means (the predicate's stratum first), to centre the rows.
    missing : {"error", "drop"}
        Rows with a missing value in a used column are left out (under ``"error"``
        :func:`~distpriv.modeling.moments.table_moments` has refused them already).

    Returns
    -------
    ndarray, shape (2, 2m, 2m), or None
    """
    m = len(features)
    if m > MAX_STATISTICS:
        return None
    used = sorted({table.column_name(c) for f in [*features, predicate] for c in f.columns})
    flags = [missing_condition(c, table.engine) for c in used]
    bad = " OR ".join(flags) if flags else "false"
    cond = f"coalesce(CAST(({predicate.sql()}) AS BOOLEAN), false)"
    cte = ", ".join(
        [
            f"CAST({cond} AS INTEGER) AS s",
            f"CAST(({bad}) AS INTEGER) AS bad",
            *(
                f"CAST(({f.sql()}) AS DOUBLE) - (CASE WHEN {cond} THEN "
                f"{sql_double(float(means[0][j]))} ELSE {sql_double(float(means[1][j]))} END)"
                f" AS y{j}"
                for j, f in enumerate(features)
            ),
        ]
    )
    select = ["s", "bad", "count(*)"]
    select += [f"sum(y{j})" for j in range(m)]
    select += [f"sum(y{j} * y{k})" for j in range(m) for k in range(j, m)]
    select += [f"sum(y{j} * (y{k} * y{k}))" for j in range(m) for k in range(m)]
    select += [f"sum((y{j} * y{j}) * (y{k} * y{k}))" for j in range(m) for k in range(j, m)]
    rows = table.run(
        select, what="cross moments of the statistics' row features", group_by="s, bad", cte=cte
    )
    good: dict[int, tuple[Any, ...]] = {int(r[0]): r for r in rows if not int(r[1])}
    if set(good) != {0, 1}:  # pragma: no cover - table_moments refused such tables
        return None
    iu = np.triu_indices(m)
    out = []
    for s in (1, 0):
        row = good[s]
        vals = np.array([np.nan if v is None else float(v) for v in row[3:]])
        if not np.all(np.isfinite(vals)):
            return None  # e.g. fourth powers overflow: the set bounds the correlations
        n, at = int(row[2]), 0
        s1 = vals[:m]
        at = m
        k = iu[0].size
        s2 = np.zeros((m, m))
        s2[iu] = vals[at : at + k]
        s2 = s2 + np.triu(s2, 1).T
        at += k
        s3 = vals[at : at + m * m].reshape(m, m)
        at += m * m
        s4 = np.zeros((m, m))
        s4[iu] = vals[at : at + k]
        s4 = s4 + np.triu(s4, 1).T
        out.append(shape_correlation_from_sums(n, s1, s2, s3, s4))
    return np.stack(out)
