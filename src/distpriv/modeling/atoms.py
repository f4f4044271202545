"""A linear query's distinct feature rows on a table, with their count in each stratum.

A linear statistic's value on a dataset is a sum over the dataset's rows of a row feature,
so a dataset of the query is Σ_rows x(row), x(row) ∈ Rᵐ. Rows with the same feature vector
are interchangeable for every statistic. Call the distinct feature vectors of a table its
*atoms* x_1 … x_D, and c_s their counts in stratum s (N_s = Σ_d c_sd rows). Then:

* rows drawn i.i.d. from stratum s (the law of ``distpriv verify``'s resampled datasets)
  give atoms drawn i.i.d. with probabilities c_s / N_s, and a dataset of k rows is
  Σ_d K_d x_d with K ~ Multinomial(k, c_s / N_s) — the same law, exactly;
* rows drawn without replacement give K ~ multivariate hypergeometric(c_s, k).

Threshold shares of a column (m thresholds: at most m + 1 atoms), averages of a few-valued
column over bands, indicator counts of categorical columns: a table of millions of rows has
a few thousand atoms at most, and the draws need D·m values in memory instead of rows·m
(1,000 shares of 10⁶ rows: 8 MB instead of 8 GB, and no copy of the table's rows). The
disjoint cells of a histogram (:mod:`distpriv.modeling.cell_moments`) are the special case
x_d = e_d.

The atoms are found in the engine by one grouped statement over each row's list of m
features, after a HyperLogLog estimate (``approx_count_distinct``) says they fit the
caller's memory bound. When the rows repeat on the columns the features read (estimated
first, without computing a feature), the rows are grouped by those columns and the features
computed once per group. A table whose feature rows are mostly distinct (a continuous
column's average) is left to the row-level path without the grouped statement's cost in
memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .engines import DuckDBEngine
from .tables import Table

__all__ = ["FeatureAtoms", "feature_atoms"]

# Names of the stratum flag and the row count in the grouped statement (apart from any
# column of a user's table).
_S, _C = "__distpriv_stratum", "__distpriv_rows"

# The HyperLogLog estimate's relative error is about 1-2 %; the bound is checked against
# the estimate grown by this factor, and again, exactly, on the atoms found.
_ESTIMATE_MARGIN = 1.25


@dataclass(frozen=True)
class FeatureAtoms:
    """The distinct feature rows of a linear query and their counts per stratum.

    Attributes
    ----------
    values : ndarray, shape (D, m)
        The atoms x_d (float64, finite), in no particular order.
    counts : tuple of two ndarrays, shape (D,) each
        Rows of each atom among the rows satisfying the secret's predicate (stratum A) and
        among the others (stratum B); an atom may have count 0 in one stratum.
    """

    values: np.ndarray
    counts: tuple[np.ndarray, np.ndarray]

    @property
    def stratum_sizes(self) -> tuple[int, int]:
        """Rows of stratum A and of stratum B."""
        return int(self.counts[0].sum()), int(self.counts[1].sum())

    def draw(
        self, stratum: int, size: int, count: int, rng: np.random.Generator, *, replace: bool
    ) -> np.ndarray:
        """Σ of the features of ``size`` rows drawn from a stratum, for ``count`` datasets.

        Parameters
        ----------
        stratum : {0, 1}
            0: the rows satisfying the predicate, 1: the others.
        size : int
            Rows drawn from the stratum per dataset.
        count : int
            Datasets.
        rng : Generator
        replace : bool
            Rows i.i.d. (multinomial atom counts) or without replacement (multivariate
            hypergeometric).

        Returns
        -------
        ndarray, shape (count, m)
        """
        c = self.counts[stratum]
        d, m = self.values.shape
        if size == 0:
            return np.zeros((count, m))
        if replace and d > 4 * size:
            # Many more atoms than rows drawn: the rows' atoms themselves, i.i.d. (count·size
            # draws), summed feature by feature, rather than count·D atom counts and their
            # product with the atoms (measured: 200 band averages, D = 6,482 atoms, 450
            # rows: 4-5 s per 10,000 datasets against 6.5 s; 1,000 shares, D = 1,001:
            # the counts' product is 6x faster, 2.1 s against 13 s).
            idx = rng.choice(d, size=(count, size), p=c / c.sum())
            out = np.empty((count, m))
            for j, column in enumerate(self._columns):
                out[:, j] = np.take(column, idx).sum(axis=1)
            return out
        if replace:
            drawn = rng.multinomial(size, c / c.sum(), size=count)
        else:
            drawn = rng.multivariate_hypergeometric(c, size, size=count)
        return drawn.astype(np.float64) @ self.values

    @cached_property
    def _columns(self) -> np.ndarray:
        """The atoms feature by feature, shape (m, D), contiguous (gathers per feature)."""
        return np.ascontiguousarray(self.values.T)


def feature_atoms(
    table: Table,
    features: list[str],
    predicate: str,
    *,
    columns: Sequence[str],
    max_bytes: float,
    what: str,
) -> FeatureAtoms | None:
    """The atoms of ``features`` on ``table`` and their counts per stratum, or None.

    None when the table is not in DuckDB (Spark tables keep the row-level path), when the
    atoms would take more than ``max_bytes`` (D·m float64 values, estimated first), when
    they are not fewer than half the rows (no gain), or when a feature is NULL, NaN or
    infinite on some row (the row-level path names the statistic and the row).

    Parameters
    ----------
    table : Table
        The rows the draws come from (missing values already handled).
    features : list of str, length m
        Each statistic's row expression (validated through :meth:`Table.safe_sql`).
    predicate : str
        The secret's predicate: its rows are stratum A (a NULL counts as false, as in
        :class:`~distpriv.modeling.strata.StratifiedSampler`).
    columns : sequence of str
        The columns the features read (and the predicate). When their distinct rows are
        fewer than half the rows, the features are computed once per distinct row.
    max_bytes : float
        Memory bound of the atoms.
    what : str
        Names the computation in engine errors.
    """
    engine = table.engine
    if not isinstance(engine, DuckDBEngine) or not features:
        return None
    m = len(features)
    row_list = ", ".join(f"CAST(({table.safe_sql(f, what, 'scalar')}) AS DOUBLE)" for f in features)
    pred = table.safe_sql(predicate, "secret predicate", "scalar")
    where = f" WHERE {table.where}" if table.where else ""
    flag = f"CAST(coalesce(CAST(({pred}) AS BOOLEAN), false) AS INTEGER)"
    raw = ", ".join(table.safe_sql(c, what, "scalar") for c in sorted(columns))
    source = f"{engine.relation}{where}"
    rows, estimate = engine.query(
        f"SELECT count(*), approx_count_distinct(row({flag}{', ' + raw if raw else ''})) "
        f"FROM {source}",
        what,
    )[0]
    rows, estimate = int(rows), int(estimate or 0)
    if estimate <= rows / 2:
        # Rows that repeat on the columns: group them by those first and compute the
        # features once per group (they read only these columns).
        grouped = (
            f"SELECT {flag} AS {_S}, {raw}{', ' if raw else ''}count(*) AS {_C} FROM {source} "
            f"GROUP BY ALL"
        )
        base = f"SELECT {_S} AS s, [{row_list}] AS l, {_C} AS c FROM ({grouped})"
    else:
        base = f"SELECT {flag} AS s, [{row_list}] AS l, 1 AS c FROM {source}"
    # The atoms' number before they leave the engine (thresholds of a continuous column:
    # many distinct rows of the columns, few distinct features).
    atoms = engine.query(f"WITH b AS ({base}) SELECT approx_count_distinct(l) FROM b", what)
    if not _fits(_ESTIMATE_MARGIN * int(atoms[0][0] or 0), m, rows, max_bytes):
        return None
    sql = f"WITH b AS ({base}) SELECT s, l, CAST(sum(c) AS BIGINT) AS c FROM b GROUP BY s, l"
    got = _grouped(engine, sql, what)
    if got is None:
        return None
    s, flat, c = got
    if flat.size != s.size * m or not np.all(np.isfinite(flat)):
        return None  # a NULL or non-finite feature: the row-level path names it
    values = flat.reshape(s.size, m)
    # One atom per distinct vector, its counts in both strata (a vector can be in both).
    uniq, inverse = np.unique(values, axis=0, return_inverse=True)
    if not _fits(uniq.shape[0], m, rows, max_bytes):
        return None
    counts = tuple(
        np.bincount(inverse[s == flag], weights=c[s == flag], minlength=uniq.shape[0]).astype(
            np.int64
        )
        for flag in (1, 0)
    )
    return FeatureAtoms(np.ascontiguousarray(uniq), (counts[0], counts[1]))


def _fits(atoms: float, m: int, rows: int, max_bytes: float) -> bool:
    return atoms * m * 8.0 <= max_bytes and atoms <= rows / 2


def _grouped(
    engine: DuckDBEngine, sql: str, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The grouped statement's stratum flags, flattened feature lists and counts (Arrow)."""
    arrow: Any = engine.query_arrow(sql, what)
    lists = arrow.column("l").combine_chunks()
    if lists.null_count:
        return None
    flat = lists.flatten().to_numpy(zero_copy_only=False)
    if np.ma.isMaskedArray(flat) or lists.flatten().null_count:
        return None
    s = arrow.column("s").to_numpy().astype(np.int64)
    c = arrow.column("c").to_numpy().astype(np.float64)
    return s, np.asarray(flat, dtype=np.float64), c
