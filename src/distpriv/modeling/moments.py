"""The analytic query model pushed down to the engine: the strata's moments where the data is.

For linear statistics F = Σ_r x_r (sums, counts; means are sums scaled by 1/n) of a dataset
made of k rows drawn without replacement from stratum A (rows satisfying the secret
predicate) and n − k from stratum B (Chen & Ohrimenko 2023, App. C.1), the exact mean and
covariance of F — and its third and fourth cumulants, for the non-Gaussianity diagnostics —
depend on each stratum only through its count, the sums and the sums of cross-products of
the row features, and the sums of their third and fourth powers. :func:`table_moments`
computes them where the data is (DuckDB over Parquet/CSV or a frame, or Spark SQL), reading
only the columns the statistics and the secret use: with a few
statistics in ONE grouped aggregate query; with many (a histogram's hundreds of cells) in
one pass over rows streamed from DuckDB into BLAS, or in aggregate statements of bounded
size — never one statement whose size grows as m² (:mod:`distpriv.modeling.moment_sums`).

Numerical stability: the features are shifted by a per-feature constant c (an integer near
the mean, from a 1,000-row probe) before the power sums, so the central moments are
recovered without catastrophic cancellation at 10⁸ rows; integer-valued features (ages,
counts) keep integer shifted values whose power sums are exact in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .cell_moments import cell_counts, cell_stratum, indicator_conditions
from .engines import DuckDBEngine, missing_condition
from .expressions import ParsedExpression
from .moment_sums import (
    RawSums,
    parse_sums,
    run_chunked,
    streamed_sums,
    sum_aggregates,
)
from .sql_literals import sql_double
from .tables import MissingReport, Table, check_missing_policy

__all__ = [
    "STREAM_FROM",
    "StratumSums",
    "TableMoments",
    "iid_cumulants",
    "row_kurtosis",
    "streams",
    "sum_cumulants",
    "table_moments",
]

_PROBE_ROWS = 1000
#: From this many statistics, a DuckDB table's rows are streamed into BLAS rather than
#: summed by m(m − 1)/2 aggregates in the engine (:func:`streams`).
STREAM_FROM = 24
# As modeling.shape_moments.MAX_STATISTICS (not imported: that module imports the engine's).
_MAX_CROSS = 12
_FINITE = "1.7976931348623157e308"


@dataclass(frozen=True)
class StratumSums:
    """Central moments of the row features of one stratum (population, divisor-free)."""

    #: N, rows in the stratum.
    count: int
    #: ndarray, shape (m,)
    mean: np.ndarray
    #: ndarray, shape (m, m)
    #: Σ_r (x_r − μ)(x_r − μ)ᵀ.
    cross: np.ndarray
    #: ndarray, shape (m,)
    #: Σ_r (x_rj − μ_j)³ and Σ_r (x_rj − μ_j)⁴.
    p3: np.ndarray
    p4: np.ndarray
    #: ndarray, shape (m, m), or None
    #: Σ_r y_rj y_rl² and Σ_r y_rl² y_rk² (y = x − μ): the third and fourth cross moments
    #: the tight population set's correlations need
    #: (:mod:`distpriv.modeling.shape_moments`); ``None`` above
    #: :data:`~distpriv.modeling.shape_moments.MAX_STATISTICS` statistics.
    cross3: np.ndarray | None = None
    cross4: np.ndarray | None = None


@dataclass(frozen=True)
class TableMoments:
    """Per-stratum sums for the analytic model, and the missing-value report."""

    #: Rows satisfying / not satisfying the predicate.
    a: StratumSums
    b: StratumSums
    missing: MissingReport
    #: The statements that were run (DuckDB dialect, separated by ``;``), for audit.
    sql: str
    #: How the sums were computed, for the model's description.
    how: str = "one aggregate query in duckdb"


def _probe_shift(table: Table, features: list[str]) -> np.ndarray:
    """Integer shifts near each feature's mean, from the first rows of the table.

    With few features, their averages over the first :data:`_PROBE_ROWS` rows in one
    aggregate query; with many, those rows' features fetched and averaged here: DuckDB 2.0
    takes seconds to plan one aggregate per feature when there are a thousand of them (5 s
    at m = 1,000 on 1,000 rows).
    """
    rel = table.engine.relation
    where = f" WHERE {table.where}" if table.where else ""
    inner = ", ".join(f"CAST(({f}) AS DOUBLE) AS d{j}" for j, f in enumerate(features))
    sub = f"SELECT {inner} FROM {rel}{where} LIMIT {_PROBE_ROWS}"
    what = "probing the statistics' scale"
    m = len(features)
    if m < STREAM_FROM or not isinstance(table.engine, DuckDBEngine):
        cols = [f"avg(CASE WHEN abs(d{j}) <= {_FINITE} THEN d{j} END)" for j in range(m)]
        row = table.engine.query(f"SELECT {', '.join(cols)} FROM ({sub}) AS probe", what)[0]
        mean = np.array([np.nan if v is None else float(v) for v in row], dtype=np.float64)
        return _integer_shift(mean)
    batches = list(table.engine.stream(sub, what, _PROBE_ROWS))
    rows = np.zeros((sum(b.num_rows for b in batches), m))
    at = 0
    for b in batches:
        for j in range(m):
            rows[at : at + b.num_rows, j] = b.column(j).to_numpy(zero_copy_only=False)
        at += b.num_rows
    finite = np.isfinite(rows)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.where(finite, rows, 0.0).sum(axis=0)
        mean = total / np.maximum(finite.sum(axis=0), 1)
    return _integer_shift(mean)


def _integer_shift(mean: np.ndarray) -> np.ndarray:
    # The shift only buys precision: any finite value is exact, so an average that overflowed
    # (values near 1.8e308) or is undefined falls back to no shift rather than an infinite one.
    shift = np.round(mean)
    return np.where(np.isfinite(shift), shift, 0.0)


def streams(table: Table, m: int) -> bool:
    """Whether :func:`table_moments` streams the rows out of the engine for m statistics.

    From :data:`STREAM_FROM` statistics on DuckDB: the m(m − 1)/2 cross-product sums then
    cost the engine more than BLAS costs on the streamed rows. Spark keeps the rows where
    they are (aggregate statements of bounded size).
    """
    return table.dialect == "duckdb" and m >= STREAM_FROM


def table_moments(
    table: Table,
    features: list[ParsedExpression],
    predicate: ParsedExpression,
    *,
    names: list[str],
    missing: str = "error",
    what: str = "modelling data",
    stream: bool | None = None,
) -> TableMoments:
    """Per-stratum moments of the row features, computed where the data is.

    With few statistics, one aggregate query grouped by stratum. With many, no statement
    grows as m²: the per-feature counts (rows, NULL/NaN/infinite values, missing values)
    in aggregate statements of bounded size, then the sums either from the rows streamed
    out of DuckDB as Arrow batches into BLAS, or (Spark) in more such statements
    (:mod:`distpriv.modeling.moment_sums`).

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
    stream : bool, optional
        Stream the rows (DuckDB only) or aggregate in the engine; default :func:`streams`.

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
    flags = [missing_condition(c, table.engine) for c in used]
    bad = " OR ".join(flags) if flags else "false"
    head = [
        f"CAST(coalesce(CAST(({predicate.sql()}) AS BOOLEAN), false) AS INTEGER) AS s",
        f"CAST(({bad}) AS INTEGER) AS bad",
        *(f"CAST({flag} AS INTEGER) AS miss{i}" for i, flag in enumerate(flags)),
    ]
    cross = _cross_terms(m) > 0
    label = f"moments of the statistics on the {what}"
    # Disjoint counts (a histogram's, a marginal's cells): one count per stratum and cell
    # gives every moment exactly, O(rows) values instead of O(rows * m).
    conds = indicator_conditions(features) if m >= STREAM_FROM else None
    cells = None if conds is None else cell_counts(table, conds, head, len(flags), what=label)
    shift = np.zeros(m) if cells is not None else _probe_shift(table, feats)
    cte = ", ".join(
        [
            *head,
            *(
                f"CAST(({f}) AS DOUBLE) - {sql_double(shift[j])} AS d{j}"
                for j, f in enumerate(feats)
            ),
        ]
    )
    stream = streams(table, m) if stream is None else bool(stream)
    # The counts per stratum (rows, values that are not finite, missing values), and the
    # sums: streamed in the same pass, or as aggregates riding along with the counts (one
    # statement while they fit in one).
    aggs = [f"sum(CASE WHEN abs(d{j}) <= {_FINITE} THEN 0 ELSE 1 END)" for j in range(m)]
    aggs += [f"sum(miss{i})" for i in range(len(flags))]
    n_checks = len(aggs)
    raw: dict[int, RawSums] = {}
    groups: dict[tuple[int, ...], tuple[int, np.ndarray]]
    if cells is not None:
        groups = {
            key: (int(c.sum()), np.concatenate([np.zeros(m), cells.missing[key]]))
            for key, c in cells.counts.items()
        }
        statements = [cells.sql]
    elif stream:
        groups, raw, sql = streamed_sums(table, cte, m, len(flags), cross=cross, what=label)
        statements = [sql]
    else:
        aggs += sum_aggregates(m, cross=cross)
        groups, statements = run_chunked(table, aggs, what=label, keys=("s", "bad"), cte=cte)

    counts_missing = {c: 0 for c in used}
    dropped = 0
    good: dict[int, tuple[int, np.ndarray]] = {}
    for (s, is_bad), (n, vals) in groups.items():
        for c, v in zip(used, vals[m:n_checks], strict=True):
            counts_missing[c] += 0 if np.isnan(v) else int(v)
        if is_bad:
            dropped += n
        else:
            good[s] = (n, vals)
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
    for s in (1, 0):
        _check_finite(good[s][1][:m], names)
    if cells is not None:
        strata = [StratumSums(*cell_stratum(cells.counts[s, 0], cross=cross)) for s in (1, 0)]
        how = f"one count of the rows per stratum and cell in {table.dialect} (disjoint cells)"
        return TableMoments(strata[0], strata[1], report, statements[0], how)
    if not stream:
        raw = {s: parse_sums(n, vals[n_checks:], m, cross=cross) for s, (n, vals) in good.items()}
    strata = [_stratum(raw[s], shift, names) for s in (1, 0)]
    if stream:
        how = "one pass over the rows streamed from duckdb into BLAS"
    elif len(statements) == 1:
        how = f"one aggregate query in {table.dialect}"
    else:
        how = f"{len(statements)} aggregate queries in {table.dialect}"
    return TableMoments(strata[0], strata[1], report, ";\n".join(statements), how)


def _check_finite(nonfinite: np.ndarray, names: list[str]) -> None:
    """Refuse a statistic whose row feature is NULL, NaN or infinite on some kept row."""
    for j, v in enumerate(nonfinite):
        if v > 0:
            raise ParameterError(
                f"statistic {names[j]!r}: {int(v)} row(s) give NULL, NaN or "
                "infinite values; the statistic is undefined there"
            )


def _stratum(raw: RawSums, shift: np.ndarray, names: list[str]) -> StratumSums:
    n, s1, s3, s4 = raw.count, raw.s1, raw.s3, raw.s4
    s2 = np.diag(raw.s2)
    for j in range(len(s1)):
        if not np.isfinite(s1[j]) or not np.isfinite(s2[j]):
            # Finite values whose squares or sums pass 1.8e308: the model's moments cannot be
            # represented in double precision (and a mean/variance of inf would be garbage).
            raise ParameterError(
                f"statistic {names[j]!r}: its values are too large in magnitude for double "
                "precision (the sum of their squares overflows 1.8e308); rescale the column "
                "(e.g. divide by a power of ten) in the statistic's expression"
            )
    a = s1 / n  # mean of the shifted features
    cross = raw.s2 - np.outer(s1, s1) / n
    p3 = s3 - 3 * a * s2 + 2 * n * a**3
    p4 = s4 - 4 * a * s3 + 6 * a**2 * s2 - 3 * n * a**4
    c3 = c4 = None
    t3, t4 = raw.t3, raw.t4
    if t3 is not None and t4 is not None and np.all(np.isfinite(t3)) and np.all(np.isfinite(t4)):
        c3, c4 = _central_cross(n, a, s1, raw.s2, t3, t4)
    # Rounding can leave tiny negative even moments for a constant feature.
    np.fill_diagonal(cross, np.maximum(np.diag(cross), 0.0))
    return StratumSums(n, shift + a, cross, p3, np.maximum(p4, 0.0), c3, c4)


def _cross_terms(m: int) -> int:
    """Sums of the cross moments computed for m statistics (0 above the tight set's
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
