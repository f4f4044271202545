"""Datasets with a fixed value of a proportion secret, drawn from a table's two strata.

θ_p = "n rows, round(p·n) of them satisfying the predicate", drawn without replacement
from the rows that satisfy it (stratum A) and from the others (stratum B) — the modelling of
Chen & Ohrimenko 2023, App. C.1, used by :func:`model_query` and by the attacks' shadow and
test datasets (§5.3).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_positive_int
from .atoms import FeatureAtoms, feature_atoms
from .cell_moments import stratum_cell_counts
from .moments import STREAM_FROM
from .queries import Query, _row_sql
from .sampling import chunk_rows, sample_subsets
from .secrets import ProportionSecret
from .tables import Table, as_table

__all__ = ["StratifiedSampler"]

# Per-row features larger than this (rows · m float64 values) are first looked for as the
# query's distinct feature rows (modeling/atoms.py) when only the datasets' values are
# needed: a large table has far fewer distinct feature rows than rows for thresholds,
# bands and categories, and the draws then hold no per-row array at all.
ATOMS_FROM_BYTES = 64 * 1024**2
# The atoms' own memory bound (D · m float64 values).
ATOMS_MAX_BYTES = 256 * 1024**2


class StratifiedSampler:
    """Draws datasets of ``subset_size`` rows at each value of a secret, as query values.

    Validates everything once — the predicate, the strata sizes against every value's
    counts, and every statistic (unknown column, invalid SQL, NULLs) — and, for linear
    queries, computes the per-row features once, so each draw is an index array and a sum.

    Parameters
    ----------
    data : DataFrame, Arrow table, path or Table
    query : Query
    secret : ProportionSecret
    subset_size : int
    role : str
        Names the table in error messages (e.g. "auxiliary data").
    replace : bool
        ``False`` (default, Chen & Ohrimenko App. C.1): rows drawn without replacement from
        the table, which is then the population. ``True``: rows drawn i.i.d. (with
        replacement) from each stratum, the law of a dataset drawn from a large population
        of which the table is a sample (no finite-population correction against
        a modelling sample).
    only_values : bool
        The caller needs F on drawn datasets only (not :attr:`features` nor :meth:`rows`):
        when the statistics are disjoint counts (a histogram's or a marginal's cells,
        checked on the table), each dataset's counts are drawn from the strata's cell
        counts — multinomial (``replace``) or multivariate hypergeometric, the exact law
        of the sum of the drawn rows' 0/1 indicators — in memory O(m), not O(rows · m).
        Otherwise, when the per-row features would pass ``ATOMS_FROM_BYTES``, from the
        query's distinct feature rows and their counts per stratum
        (:mod:`distpriv.modeling.atoms`: the same law), if they fit ``ATOMS_MAX_BYTES``;
        the rows of the table are then never copied out of the engine.
    """

    def __init__(
        self,
        data: Any,
        query: Query,
        secret: ProportionSecret,
        subset_size: int,
        *,
        role: str = "table",
        replace: bool = False,
        only_values: bool = False,
    ) -> None:
        self.replace = bool(replace)
        if not isinstance(secret, ProportionSecret):
            raise ParameterTypeError(
                f"secret must be a ProportionSecret, got {type(secret).__name__}"
            )
        self.table: Table = as_table(data)
        self.query = query
        self.secret = secret
        self.n = check_positive_int(subset_size, "subset_size")
        self.counts = secret.counts(self.n)
        # The query's distinct feature rows (only_values, large tables): no per-row arrays.
        self._atoms = self._find_atoms(query, secret) if only_values else None
        if self._atoms is not None:
            self.rows_a = self.rows_b = np.empty(0, dtype=np.int64)  # never drawn from
            sizes = self._atoms.stratum_sizes
        else:
            mask = self.table.predicate(secret.predicate, f"secret predicate ({secret.predicate})")
            self.rows_a, self.rows_b = np.flatnonzero(mask), np.flatnonzero(~mask)
            sizes = (self.rows_a.size, self.rows_b.size)
        self._check_strata(sizes, role)
        # Per-stratum cell counts (m + 1: the last, rows in no cell) of disjoint counts.
        self._cells: tuple[np.ndarray, np.ndarray] | None = None
        if only_values and self._atoms is None and query.is_linear and query.dim >= STREAM_FROM:
            self._cells = stratum_cell_counts(self.table, query, secret.predicate)
        linear = query.is_linear and self._cells is None and self._atoms is None
        self.features = query.row_features(self.table) if linear else None
        if (
            self.features is None
            and self._cells is None
            and self._atoms is None
            and query.function is None
        ):
            query.evaluate_subsets(self.table, np.arange(min(self.n, self.table.n_rows))[None, :])
        self.scale: np.ndarray | None = None
        self._columns: tuple[np.ndarray, np.ndarray] | None = None
        if query.is_linear:
            self.scale = np.array(
                [1.0 / self.n if s.scale == "mean" else 1.0 for s in query.statistics]
            )
        if self.features is not None:
            # One contiguous row of features per statistic and stratum: gathering k values
            # from a contiguous column is about twice as fast as k rows of an (N, m) array.
            self._columns = (
                np.ascontiguousarray(self.features[self.rows_a].T),
                np.ascontiguousarray(self.features[self.rows_b].T),
            )

    def _find_atoms(self, query: Query, secret: ProportionSecret) -> FeatureAtoms | None:
        """The query's atoms when its per-row features would be large (class docstring)."""
        if not query.is_linear or query.dim < 1:
            return None
        if self.table.n_rows * query.dim * 8.0 <= ATOMS_FROM_BYTES:
            return None
        query.check_columns(self.table)  # an unknown column: named, as the row path names it
        return feature_atoms(
            self.table,
            [_row_sql(s) for s in query.statistics],
            secret.predicate,
            columns=sorted(self.table.column_name(c) for c in query.columns | secret.columns),
            max_bytes=ATOMS_MAX_BYTES,
            what="the statistics' distinct feature rows per stratum",
        )

    def _check_strata(self, sizes: tuple[int, int], role: str) -> None:
        """Both strata hold rows, enough for every value's dataset."""
        predicate = self.secret.predicate
        if sizes[0] == 0:
            raise ParameterError(
                f"secret predicate {predicate!r} is satisfied by no row of the {role}"
            )
        if sizes[1] == 0:
            raise ParameterError(
                f"secret predicate {predicate!r} is satisfied by every row of the {role}"
            )
        for p, k in zip(self.secret.values, self.counts, strict=True):
            if k > sizes[0]:
                raise ParameterError(
                    f"subset_size={self.n} with p={p} needs {k} rows satisfying the "
                    f"predicate; the {role} has {sizes[0]}"
                )
            if self.n - k > sizes[1]:
                raise ParameterError(
                    f"subset_size={self.n} with p={p} needs {self.n - k} rows not satisfying "
                    f"the predicate; the {role} has {sizes[1]}"
                )

    def value_index(self, value: float) -> int:
        """Position of a secret value."""
        if value not in self.secret.values:
            raise ParameterError(
                f"{value!r} is not one of the secret's values {self.secret.values}"
            )
        return self.secret.values.index(value)

    def rows(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Row indices of ``count`` datasets at the index-th value, shape (count, n)."""
        k = self.counts[index]
        return np.concatenate(
            [
                self.rows_a[self._indices(self.rows_a.size, k, count, rng)],
                self.rows_b[self._indices(self.rows_b.size, self.n - k, count, rng)],
            ],
            axis=1,
        )

    def _indices(
        self, size: int, k: int, count: int, rng: np.random.Generator, *, ordered: bool = True
    ) -> np.ndarray:
        """(count, k) positions in a stratum of ``size`` rows: subsets, or i.i.d. draws."""
        if self.replace:
            return rng.integers(0, size, size=(count, k))
        return sample_subsets(size, k, count, rng, ordered=ordered)

    def draw_chunks(
        self, index: int, count: int, rng: np.random.Generator, *, chunk: int | None = None
    ) -> Iterator[np.ndarray]:
        """F on ``count`` datasets at the index-th value, in chunks of shape (≤ chunk, m).

        Memory is bounded by the chunk, not by ``count``: each chunk draws its row indices
        per stratum (:func:`~distpriv.modeling.sampling.sample_subsets`), sums the linear
        features or evaluates the query on it, and is released before the next. ``chunk``
        defaults to about 2²⁰ row indices per chunk.
        """
        k = self.counts[index]
        step = chunk_rows(self.n) if chunk is None else max(1, int(chunk))
        for start in range(0, count, step):
            c = min(step, count - start)
            if self._cells is not None and self.scale is not None:
                yield self._cell_draws(k, c, rng) * self.scale
                continue
            if self._atoms is not None and self.scale is not None:
                got = self._atoms.draw(0, k, c, rng, replace=self.replace)
                got += self._atoms.draw(1, self.n - k, c, rng, replace=self.replace)
                yield got * self.scale
                continue
            if self._columns is None:
                yield self.query.evaluate_subsets(self.table, self.rows(index, c, rng))
                continue
            ia = self._indices(self.rows_a.size, k, c, rng, ordered=False)
            ib = self._indices(self.rows_b.size, self.n - k, c, rng, ordered=False)
            cols_a, cols_b = self._columns
            out = np.empty((c, cols_a.shape[0]))
            for j in range(cols_a.shape[0]):
                out[:, j] = np.take(cols_a[j], ia).sum(axis=1) + np.take(cols_b[j], ib).sum(axis=1)
            # The columns exist only for a linear query, which always has its scale.
            if self.scale is None:  # pragma: no cover - an invariant, not user input
                raise RuntimeError("per-row columns without a linear query's scale")
            yield out * self.scale

    def _cell_draws(self, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Counts of ``count`` datasets (k rows from stratum A, n − k from B), (count, m)."""
        out = np.zeros((count, self.query.dim))
        if self._cells is None:  # pragma: no cover - an invariant, not user input
            raise RuntimeError("cell draws without the strata's cell counts")
        for cells, size in zip(self._cells, (k, self.n - k), strict=True):
            if self.replace:
                drawn = rng.multinomial(size, cells / cells.sum(), size=count)
            else:
                drawn = rng.multivariate_hypergeometric(cells, size, size=count)
            out += drawn[:, :-1]
        return out

    def draw(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """F on ``count`` datasets at the index-th value, shape (count, m), drawn in chunks."""
        out = np.empty((count, self.query.dim))
        start = 0
        for block in self.draw_chunks(index, count, rng):
            out[start : start + block.shape[0]] = block
            start += block.shape[0]
        return out
