"""The analytic query model pushed down to the engine: one aggregate query per table.

For linear statistics F = Σ_r x_r (sums, counts; means are sums scaled by 1/n) of a dataset
made of k rows drawn without replacement from stratum A (rows satisfying the secret
predicate) and n − k from stratum B (Chen & Ohrimenko 2023, App. C.1), the exact mean and
covariance of F — and its third and fourth cumulants, for the non-Gaussianity diagnostics —
depend on each stratum only through its count, the sums and the sums of cross-products of
the row features, and the sums of their third and fourth powers. :func:`table_moments`
computes them in ONE grouped aggregate query, executed where the data is (DuckDB over
Parquet/CSV or a frame, or Spark SQL), reading only the columns the statistics and the
secret use.

Numerical stability: the features are shifted by a per-feature constant c (an integer near
the mean, from a 1,000-row probe) before the power sums, so the central moments are
recovered without catastrophic cancellation at 10⁸ rows; integer-valued features (ages,
counts) keep integer shifted values whose power sums are exact in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from .engines import missing_condition
from .expressions import ParsedExpression
from .sql_literals import sql_double
from .tables import MissingReport, Table, check_missing_policy

__all__ = [
    "StratumSums",
    "TableMoments",
    "iid_cumulants",
    "row_kurtosis",
    "sum_cumulants",
    "table_moments",
]

_PROBE_ROWS = 1000
# As modeling.shape_moments.MAX_STATISTICS (not imported: that module imports the engine's).
_MAX_CROSS = 12
_FINITE = "1.7976931348623157e308"


@dataclass(frozen=True)
class StratumSums:
    """Central moments of the row features of one stratum (population, divisor-free).

    Attributes
    ----------
    count : int
        N, rows in the stratum.
    mean : ndarray, shape (m,)
    cross : ndarray, shape (m, m)
        Σ_r (x_r − μ)(x_r − μ)ᵀ.
    p3, p4 : ndarray, shape (m,)
        Σ_r (x_rj − μ_j)³ and Σ_r (x_rj − μ_j)⁴.
    cross3, cross4 : ndarray, shape (m, m), or None
        Σ_r y_rj y_rl² and Σ_r y_rl² y_rk² (y = x − μ): the third and fourth cross moments
        the tight population set's correlations need
        (:mod:`distpriv.modeling.shape_moments`); ``None`` above
        :data:`~distpriv.modeling.shape_moments.MAX_STATISTICS` statistics.
    """

    count: int
    mean: np.ndarray
    cross: np.ndarray
    p3: np.ndarray
    p4: np.ndarray
    cross3: np.ndarray | None = None
    cross4: np.ndarray | None = None


@dataclass(frozen=True)
class TableMoments:
    """Per-stratum sums for the analytic model, and the missing-value report.

    Attributes
    ----------
    a, b : StratumSums
        Rows satisfying / not satisfying the predicate.
    missing : MissingReport
    sql : str
        The aggregate query that was run (DuckDB dialect), for audit.
    """

    a: StratumSums
    b: StratumSums
    missing: MissingReport
    sql: str


def _probe_shift(table: Table, features: list[str]) -> np.ndarray:
    """Integer shifts near each feature's mean, from the first rows of the table."""
    inner = ", ".join(f"CAST(({f}) AS DOUBLE) AS d{j}" for j, f in enumerate(features))
    cols = [f"avg(CASE WHEN abs(d{j}) <= {_FINITE} THEN d{j} END)" for j in range(len(features))]
    rel = table.engine.relation
    where = f" WHERE {table.where}" if table.where else ""
    sql = (
        f"SELECT {', '.join(cols)} FROM (SELECT {inner} FROM {rel}{where} "
        f"LIMIT {_PROBE_ROWS}) AS probe"
    )
    row = table.engine.query(sql, "probing the statistics' scale")[0]
    # The shift only buys precision: any finite value is exact, so an average that overflowed
    # (values near 1.8e308) falls back to no shift rather than an infinite one.
    shifts = [0.0 if v is None else float(np.round(float(v))) for v in row]
    return np.array([s if math.isfinite(s) else 0.0 for s in shifts])


def table_moments(
    table: Table,
    features: list[ParsedExpression],
    predicate: ParsedExpression,
    *,
    names: list[str],
    missing: str = "error",
    what: str = "modelling data",
) -> TableMoments:
    """Per-stratum moments of the row features, in one aggregate query in the engine.

    Parameters
    ----------
    table : Table
    features : list of ParsedExpression, length m
        Row-level expressions (validated); their sums are the statistics.
    predicate : ParsedExpression
        The secret's predicate; NULL counts as false.
    names : list of str
        Names of the statistics, for messages.
    missing : {"error", "drop"}
        NULL/NaN in a used column: raise naming the column and the count, or leave the row
        out (counted in the report).
    what : str
        Names the table in messages.

    Returns
    -------
    TableMoments

    Raises
    ------
    ParameterError
        Unknown column, missing values under ``"error"``, a feature that is NULL, NaN or
        infinite on some complete row (naming the statistic), a predicate satisfied by no
        row or by every row.
    """
    policy = check_missing_policy(missing)
    for f in [*features, predicate]:
        f.check_columns(table.columns)
    used = sorted({table.column_name(c) for f in [*features, predicate] for c in f.columns})
    m = len(features)
    feats = [f.sql() for f in features]
    shift = _probe_shift(table, feats)
    flags = [missing_condition(c, table.engine) for c in used]
    bad = " OR ".join(flags) if flags else "false"
    cte = ", ".join(
        [
            f"CAST(coalesce(CAST(({predicate.sql()}) AS BOOLEAN), false) AS INTEGER) AS s",
            f"CAST(({bad}) AS INTEGER) AS bad",
            *(
                f"CAST(({f}) AS DOUBLE) - {sql_double(shift[j])} AS d{j}"
                for j, f in enumerate(feats)
            ),
            *(f"CAST({flag} AS INTEGER) AS miss{i}" for i, flag in enumerate(flags)),
        ]
    )
    select = ["s", "bad", "count(*)"]
    for j in range(m):
        select += [f"sum(d{j})", f"sum(d{j} * d{j})", f"sum(d{j} * d{j} * d{j})"]
        select += [f"sum((d{j} * d{j}) * (d{j} * d{j}))"]
        select += [f"sum(CASE WHEN abs(d{j}) <= {_FINITE} THEN 0 ELSE 1 END)"]
    select += [f"sum(d{i} * d{j})" for i in range(m) for j in range(i + 1, m)]
    # The third and fourth cross moments (the tight set's correlations), in the same query.
    n_cross = _cross_terms(m)
    if n_cross:
        select += [f"sum(d{j} * (d{k} * d{k}))" for j in range(m) for k in range(m) if j != k]
        select += [f"sum((d{j} * d{j}) * (d{k} * d{k}))" for j in range(m) for k in range(j + 1, m)]
    select += [f"sum(miss{i})" for i in range(len(flags))]
    rows = table.run(
        select, what=f"moments of the statistics on the {what}", group_by="s, bad", cte=cte
    )
    rel = table.engine.relation
    sql = f"WITH f AS (SELECT {cte} FROM {rel}) SELECT {', '.join(select)} FROM f GROUP BY s, bad"

    counts_missing = {c: 0 for c in used}
    dropped = 0
    good: dict[int, tuple[Any, ...]] = {}
    for row in rows:
        s, is_bad, n = int(row[0]), int(row[1]), int(row[2])
        tail = row[3 + 5 * m + m * (m - 1) // 2 + n_cross :]
        for c, v in zip(used, tail, strict=True):
            counts_missing[c] += int(v or 0)
        if is_bad:
            dropped += n
        else:
            good[s] = row
    counts_missing = {c: v for c, v in counts_missing.items() if v}
    if counts_missing and policy == "error":
        col, cnt = next(iter(counts_missing.items()))
        others = (
            "" if len(counts_missing) == 1 else f" (and {len(counts_missing) - 1} other column(s))"
        )
        raise ParameterError(
            f"column {col!r} of the {what} has {cnt} missing (NULL/NaN) value(s){others}; "
            "clean the data or choose missing='drop' to leave such rows out"
        )
    report = MissingReport(policy, tuple(used), counts_missing, dropped)
    for s in (1, 0):
        if s not in good:
            which = "no row" if s == 1 else "every row"
            raise ParameterError(
                f"secret predicate {predicate.text!r} is satisfied by {which} of the {what}"
                + (" (after dropping rows with missing values)" if dropped else "")
            )
    strata = []
    for s in (1, 0):
        strata.append(_stratum(good[s], m, shift, names))
    return TableMoments(strata[0], strata[1], report, sql)


def _stratum(row: tuple[Any, ...], m: int, shift: np.ndarray, names: list[str]) -> StratumSums:
    n = int(row[2])
    vals = np.array([np.nan if v is None else float(v) for v in row[3:]], dtype=np.float64)
    per = vals[: 5 * m].reshape(m, 5)
    s1, s2, s3, s4, nonfinite = per.T
    for j in range(m):
        if nonfinite[j] > 0:
            raise ParameterError(
                f"statistic {names[j]!r}: {int(nonfinite[j])} row(s) give NULL, NaN or "
                "infinite values; the statistic is undefined there"
            )
        if not np.isfinite(s1[j]) or not np.isfinite(s2[j]):
            # Finite values whose squares or sums pass 1.8e308: the model's moments cannot be
            # represented in double precision (and a mean/variance of inf would be garbage).
            raise ParameterError(
                f"statistic {names[j]!r}: its values are too large in magnitude for double "
                "precision (the sum of their squares overflows 1.8e308); rescale the column "
                "(e.g. divide by a power of ten) in the statistic's expression"
            )
    cross_raw = np.diag(s2)
    off = vals[5 * m : 5 * m + m * (m - 1) // 2]
    iu = np.triu_indices(m, k=1)
    cross_raw[iu] = off
    cross_raw[(iu[1], iu[0])] = off
    a = s1 / n  # mean of the shifted features
    cross = cross_raw - np.outer(s1, s1) / n
    p3 = s3 - 3 * a * s2 + 2 * n * a**3
    p4 = s4 - 4 * a * s3 + 6 * a**2 * s2 - 3 * n * a**4
    c3 = c4 = None
    at = 5 * m + m * (m - 1) // 2
    if _cross_terms(m):
        # Raw sums of the shifted features: T3[j, k] = Σ d_j d_k², T4[j, k] = Σ d_j² d_k².
        t3 = np.diag(s3)
        off3 = vals[at : at + m * (m - 1)]
        t3[~np.eye(m, dtype=bool)] = off3
        t4 = np.diag(s4)
        off4 = vals[at + m * (m - 1) : at + m * (m - 1) + m * (m - 1) // 2]
        t4[iu] = off4
        t4[(iu[1], iu[0])] = off4
        if np.all(np.isfinite(t3)) and np.all(np.isfinite(t4)):
            c3, c4 = _central_cross(n, a, s1, cross_raw, t3, t4)
    # Rounding can leave tiny negative even moments for a constant feature.
    np.fill_diagonal(cross, np.maximum(np.diag(cross), 0.0))
    return StratumSums(n, shift + a, cross, p3, np.maximum(p4, 0.0), c3, c4)


def _cross_terms(m: int) -> int:
    """Sums of the cross moments the query adds for m statistics (0 above the tight set's
    :data:`~distpriv.modeling.shape_moments.MAX_STATISTICS`)."""
    return 3 * m * (m - 1) // 2 if m <= _MAX_CROSS else 0


def _central_cross(
    n: int, a: np.ndarray, s1: np.ndarray, s2: np.ndarray, t3: np.ndarray, t4: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Σ y_j y_k² and Σ y_j² y_k² (y = d − a, a the mean) from the raw sums of d: S1 = Σ d,
    S2 = Σ ddᵀ, T3[j, k] = Σ d_j d_k², T4[j, k] = Σ d_j² d_k² (the shift keeps d near 0, so
    the expansion does not cancel catastrophically)."""
    sq = np.diag(s2)  # Σ d_k²
    aj, ak = a[:, None], a[None, :]
    c3 = t3 - 2 * ak * s2 - aj * sq[None, :] + ak**2 * s1[:, None] + 2 * aj * ak * s1[None, :]
    c3 = c3 - n * aj * ak**2
    # Σ (d_j − a_j)²(d_k − a_k)², expanded; t3.T[j, k] = Σ d_k d_j² = Σ d_j² d_k.
    c4 = (
        t4
        - 2 * ak * t3.T
        - 2 * aj * t3
        + ak**2 * sq[:, None]
        + aj**2 * sq[None, :]
        + 4 * aj * ak * s2
        - 2 * aj * ak**2 * s1[:, None]
        - 2 * aj**2 * ak * s1[None, :]
        + n * aj**2 * ak**2
    )
    return c3, (c4 + c4.T) / 2


def _inclusion(k: int, big_n: int, r: int) -> float:
    """π_r: probability that r given rows are all in a uniform k-subset of N rows."""
    if k < r:
        return 0.0
    out = 1.0
    for i in range(r):
        out *= (k - i) / (big_n - i)
    return out


def sum_cumulants(
    stratum: StratumSums, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact moments of the sum of k rows drawn without replacement from a stratum.

    With centred row values y (Σ y = 0), power sums P_r = Σ yʳ and π_r the probability that
    r given rows are all drawn: E[T] = kμ, Cov[T] = (π₁ − π₂) Σ yyᵀ (the finite-population
    correction k(N−k)/(N(N−1))), E[T³] = (π₁ − 3π₂ + 2π₃) P₃ and
    E[T⁴] = (π₁ − 7π₂ + 12π₃ − 6π₄) P₄ + 3(π₂ − 2π₃ + π₄) P₂², by expanding the powers of
    T = Σ_{r∈S} y_r over coincidence patterns of the indices.

    Returns
    -------
    mean (m,), covariance (m, m), third cumulant (m,), fourth cumulant (m,)
    """
    n = stratum.count
    p1, p2, p3, p4 = (_inclusion(k, n, r) for r in (1, 2, 3, 4))
    cov = (p1 - p2) * stratum.cross
    p2sum = np.diag(stratum.cross)
    k3 = (p1 - 3 * p2 + 2 * p3) * stratum.p3
    m4 = (p1 - 7 * p2 + 12 * p3 - 6 * p4) * stratum.p4 + 3 * (p2 - 2 * p3 + p4) * p2sum**2
    k4 = m4 - 3 * np.diag(cov) ** 2
    return k * stratum.mean, cov, k3, k4


def iid_cumulants(
    stratum: StratumSums, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Moments of the sum of k rows drawn i.i.d. from the population the stratum samples.

    The modelling table is a sample of N rows of a population stratum; a protected dataset
    takes k rows of that population, not of the table, so no finite-population correction
    against the table applies. With the unbiased row covariance
    S = Σ yyᵀ/(N − 1): E[T] = kμ, Cov[T] = kS, and the third and fourth cumulants are k
    times the row cumulants (plug-in P₃/N and P₄/N − 3(P₂/N)²).

    Returns
    -------
    mean (m,), covariance (m, m), third cumulant (m,), fourth cumulant (m,)
    """
    n = stratum.count
    cov = k * stratum.cross / max(n - 1, 1)
    p2 = np.diag(stratum.cross) / n
    k3 = k * stratum.p3 / n
    k4 = k * (stratum.p4 / n - 3 * p2**2)
    return k * stratum.mean, cov, k3, k4


def row_kurtosis(stratum: StratumSums) -> np.ndarray:
    """Kurtosis E[(x − μ)⁴]/Var² of each row feature (0 for a constant feature), shape (m,)."""
    n = stratum.count
    var = np.diag(stratum.cross) / n
    ok = var > 0
    return np.where(ok, stratum.p4 / n / np.where(ok, var, 1.0) ** 2, 0.0)
