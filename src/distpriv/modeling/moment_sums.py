"""Raw power and cross-product sums of the row features per stratum, in statements whose
size does not grow as m².

:func:`~distpriv.modeling.moments.table_moments` needs, per stratum, Σ d, Σ ddᵀ, Σ d³ and
Σ d⁴ of the shifted row features d (and for a few statistics the third and fourth cross
sums). Written as aggregates these are 3 + 5m + m(m − 1)/2 sums: one statement holding them
all stops working long before m reaches the hundreds of cells of a histogram (DuckDB 2.0
raises a floating-point exception, killing the process, past about 2¹⁴ aggregates, i.e.
m ≈ 177). Two ways that scale are here:

* :func:`sum_aggregates` run by :func:`run_chunked`: the aggregates split into statements
  of at most :data:`MAX_AGGREGATES` each, every one grouped by stratum, for any engine
  (Spark SQL included); with few statistics that is one statement.
* :func:`streamed_sums` (DuckDB): the per-row features leave the engine as Arrow record
  batches, and Σ ddᵀ is accumulated with BLAS (XᵀX in float64 per batch; a sparse product
  for a histogram's cells) and a blocked, compensated (Kahan) sum across batches, in memory
  bounded by the batch, whatever the table's size.
  Integer-valued shifted features give integer products, summed exactly in float64 (below
  2⁵³) by either path, so both reproduce the old single statement's sums bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..util.threads import one_blas_thread
from .engines import DuckDBEngine
from .tables import Table

__all__ = [
    "MAX_AGGREGATES",
    "RawSums",
    "parse_sums",
    "run_chunked",
    "streamed_sums",
    "sum_aggregates",
]

#: Most aggregates one generated statement holds (DuckDB 2.0 crashes past about 16,384; a
#: Spark plan of thousands of aggregates also compiles slowly).
MAX_AGGREGATES = 2048

# Values (rows × features) per streamed batch: 2²¹ doubles are 16 MiB, so the batch, its
# per-stratum copy and its squares stay near 64 MiB whatever m is.
_BATCH_VALUES = 1 << 21
_MIN_BATCH_ROWS = 1024
_MAX_BATCH_ROWS = 1 << 16
# Batch sums added plainly before one compensated addition (:class:`_Compensated`).
_BLOCK = 16
# Share of non-zero features below which a batch's XᵀX is taken sparse (:func:`_gram`).
_SPARSE_SHARE = 1 / 32


@dataclass(frozen=True)
class RawSums:
    """Sums of the shifted row features d of one stratum (before centring)."""

    #: Rows in the stratum.
    count: int
    #: ndarray, shape (m,)
    #: Σ d, Σ d³, Σ d⁴.
    s1: np.ndarray
    #: ndarray, shape (m, m)
    #: Σ ddᵀ (its diagonal is Σ d²).
    s2: np.ndarray
    #: ndarray, shape (m,)
    #: Σ d, Σ d³, Σ d⁴.
    s3: np.ndarray
    s4: np.ndarray
    #: ndarray, shape (m, m), or None
    #: T3[j, k] = Σ d_j d_k², T4[j, k] = Σ d_j² d_k² (only when asked for).
    t3: np.ndarray | None = None
    t4: np.ndarray | None = None


def run_chunked(
    table: Table,
    aggregates: list[str],
    *,
    what: str,
    keys: tuple[str, ...] = (),
    cte: str | None = None,
) -> tuple[dict[tuple[int, ...], tuple[int, np.ndarray]], list[str]]:
    """Aggregates over the table grouped by ``keys``, at most :data:`MAX_AGGREGATES` per
    statement.

    Parameters
    ----------
    table : Table
    aggregates : list of str
        Generated aggregate SQL (DuckDB dialect), length K.
    what : str
        Names the computation in engine errors.
    keys : tuple of str
        Integer-valued grouping columns of ``cte`` (none: one group, key ``()``).
    cte : str, optional
        As :meth:`Table.run`'s.

    Returns
    -------
    (dict, list of str)
        Group key → (row count, values of the K aggregates as float64, NaN for NULL), and
        the statements run (for audit).
    """
    chunks = [aggregates[i : i + MAX_AGGREGATES] for i in range(0, len(aggregates), MAX_AGGREGATES)]
    group_by = ", ".join(keys) if keys else None
    rel = table.engine.relation
    where = f" WHERE {table.where}" if table.where else ""
    out: dict[tuple[int, ...], tuple[int, list[np.ndarray]]] = {}
    statements: list[str] = []
    for chunk in chunks or [[]]:
        select = [*keys, "count(*)", *chunk]
        rows = table.run(select, what=what, group_by=group_by, cte=cte)
        body = f"SELECT {', '.join(select)} FROM " + ("f" if cte is not None else f"{rel}{where}")
        head = f"WITH f AS (SELECT {cte} FROM {rel}{where}) " if cte is not None else ""
        statements.append(head + body + (f" GROUP BY {group_by}" if group_by else ""))
        for row in rows:
            key = tuple(int(v) for v in row[: len(keys)])
            n = int(row[len(keys)])
            vals = np.array(
                [np.nan if v is None else float(v) for v in row[len(keys) + 1 :]], dtype=np.float64
            )
            out.setdefault(key, (n, []))[1].append(vals)
    merged = {
        k: (n, np.concatenate(parts) if parts else np.zeros(0)) for k, (n, parts) in out.items()
    }
    return merged, statements


def sum_aggregates(m: int, *, cross: bool) -> list[str]:
    """The aggregates of the sums of :class:`RawSums` over the columns ``d0 … d{m-1}``, in
    the order :func:`parse_sums` reads them: Σ d, Σ d², Σ d³, Σ d⁴ (m each), Σ d_i d_j
    (i < j), and with ``cross`` Σ d_j d_k² (j ≠ k) and Σ d_j² d_k² (j < k)."""
    aggs = [f"sum(d{j})" for j in range(m)]
    aggs += [f"sum(d{j} * d{j})" for j in range(m)]
    aggs += [f"sum(d{j} * d{j} * d{j})" for j in range(m)]
    aggs += [f"sum((d{j} * d{j}) * (d{j} * d{j}))" for j in range(m)]
    aggs += [f"sum(d{i} * d{j})" for i in range(m) for j in range(i + 1, m)]
    if cross:
        aggs += [f"sum(d{j} * (d{k} * d{k}))" for j in range(m) for k in range(m) if j != k]
        aggs += [f"sum((d{j} * d{j}) * (d{k} * d{k}))" for j in range(m) for k in range(j + 1, m)]
    return aggs


def parse_sums(count: int, values: np.ndarray, m: int, *, cross: bool) -> RawSums:
    """:class:`RawSums` from the values of :func:`sum_aggregates`' aggregates (same order)."""
    iu = np.triu_indices(m, k=1)
    n_off = m * (m - 1) // 2
    s1, sq, s3, s4 = (values[i * m : (i + 1) * m] for i in range(4))
    s2 = _symmetric(sq, values[4 * m : 4 * m + n_off], iu)
    t3 = t4 = None
    if cross:
        at = 4 * m + n_off
        t3 = np.diag(s3)
        t3[~np.eye(m, dtype=bool)] = values[at : at + m * (m - 1)]
        t4 = _symmetric(s4, values[at + m * (m - 1) : at + m * (m - 1) + n_off], iu)
    return RawSums(count, s1, s2, s3, s4, t3, t4)


def _symmetric(diag: np.ndarray, upper: np.ndarray, iu: tuple[np.ndarray, np.ndarray]) -> Any:
    out = np.diag(diag)
    out[iu] = upper
    out[(iu[1], iu[0])] = upper
    return out


class _Compensated:
    """A running sum of float64 arrays of one shape, blocked and compensated: batch sums
    are added plainly in blocks of :data:`_BLOCK`, and the blocks with Kahan's compensation
    (Higham 2002, §4.3), so thousands of batches add an error of a few roundings, not one
    per batch, for about one pass over the array per batch."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self._total = np.zeros(shape)
        self._carry = np.zeros(shape)
        self._next = np.zeros(shape)
        self._block = np.zeros(shape)
        self._in_block = 0

    def add(self, value: np.ndarray) -> None:
        np.add(self._block, value, out=self._block)
        self._in_block += 1
        if self._in_block == _BLOCK:
            self._flush()

    def _flush(self) -> None:
        y = np.subtract(self._block, self._carry, out=self._block)
        t = np.add(self._total, y, out=self._next)
        np.subtract(t, self._total, out=self._carry)
        np.subtract(self._carry, y, out=self._carry)
        self._next, self._total = self._total, t
        self._block[...] = 0.0
        self._in_block = 0

    @property
    def total(self) -> np.ndarray:
        """The sum so far."""
        if self._in_block:
            self._flush()
        return self._total


class _StratumAccumulator:
    """Running sums of one stratum's batches of shifted features (rows × m)."""

    def __init__(self, m: int, cross: bool) -> None:
        self.count = 0
        self.s1 = _Compensated((m,))
        self.s2 = _Compensated((m, m))
        self.s3 = _Compensated((m,))
        self.s4 = _Compensated((m,))
        self.cross = cross
        self.t3 = _Compensated((m, m)) if cross else None
        self.t4 = _Compensated((m, m)) if cross else None

    def add(self, x: np.ndarray, total: np.ndarray) -> None:
        """Add a batch ``x`` (rows × m) whose column sums are ``total``."""
        if x.shape[0] == 0:
            return
        self.count += x.shape[0]
        sq = x * x
        self.s1.add(total)
        self.s2.add(_gram(x))
        self.s3.add((sq * x).sum(axis=0))
        self.s4.add((sq * sq).sum(axis=0))
        if self.t3 is not None and self.t4 is not None:
            self.t3.add(x.T @ sq)
            self.t4.add(sq.T @ sq)

    def sums(self) -> RawSums:
        s2 = self.s2.total
        t3 = None if self.t3 is None else self.t3.total
        t4 = None if self.t4 is None else (self.t4.total + self.t4.total.T) / 2
        return RawSums(
            self.count, self.s1.total, (s2 + s2.T) / 2, self.s3.total, self.s4.total, t3, t4
        )


def _gram(x: np.ndarray) -> np.ndarray:
    """XᵀX of a batch (rows × m), dense or sparse by the batch's share of non-zeros.

    Dense: BLAS (numpy recognises the transposed product of one array: syrk), about
    rows·m²/2 multiply-adds. A histogram's cells (one non-zero per row among m, the shift
    of a rare cell being 0) cost rows·m² that way for rows non-zero products; below
    :data:`_SPARSE_SHARE` non-zeros the product is taken sparse (scipy), in about
    Σ_rows nnz_row² operations. Integer products stay exact either way (sums below 2⁵³).
    """
    if x.size and np.count_nonzero(x) <= _SPARSE_SHARE * x.size:
        from scipy import sparse

        sp = sparse.csr_array(x)
        return np.asarray((sp.T @ sp).toarray())
    return x.T @ x


def batch_rows(m: int) -> int:
    """Rows per streamed batch for m features (about :data:`_BATCH_VALUES` values)."""
    return int(min(_MAX_BATCH_ROWS, max(_MIN_BATCH_ROWS, _BATCH_VALUES // max(m, 1))))


def streamed_sums(
    table: Table, cte: str, m: int, n_flags: int, *, cross: bool, what: str
) -> tuple[dict[tuple[int, ...], tuple[int, np.ndarray]], dict[int, RawSums], str]:
    """Per-stratum :class:`RawSums` of the columns ``d0 … d{m-1}`` of ``cte`` and the
    checks :func:`~distpriv.modeling.moments.table_moments` needs, in ONE pass over the
    rows streamed out of DuckDB as Arrow batches.

    Parameters
    ----------
    table : Table
    cte : str
        Defines ``s`` (stratum flag), ``bad`` (a used column is missing),
        ``d0 … d{m-1}`` (shifted features) and ``miss0 … miss{n_flags-1}`` (per-column
        missing flags).
    m, n_flags : int
    cross : bool
        Also the third and fourth cross sums T3, T4.
    what : str
        Names the computation in engine errors.

    Returns
    -------
    (dict, dict, str)
        (s, bad) → (rows, [NULL/NaN/infinite values per feature (m), missing flags per
        column (n_flags)]) — as :func:`run_chunked` returns those aggregates; stratum →
        sums over the rows with ``bad = 0`` (meaningless once a feature there is not
        finite: the caller refuses it); the statement run.

    Raises
    ------
    ParameterError
        The engine is not DuckDB, or DuckDB fails while reading the rows.
    """
    engine = table.engine
    if not isinstance(engine, DuckDBEngine):
        raise ParameterError(f"{what}: streaming the rows is done for DuckDB tables only")
    where = f" WHERE {table.where}" if table.where else ""
    cols = [*(f"miss{i}" for i in range(n_flags)), *(f"d{j}" for j in range(m))]
    head = f"WITH f AS (SELECT {cte} FROM {engine.relation}{where}) "
    sql = head + f"SELECT s, bad, {', '.join(cols)} FROM f"
    acc = {1: _StratumAccumulator(m, cross), 0: _StratumAccumulator(m, cross)}
    checks: dict[tuple[int, ...], np.ndarray] = {
        (s, b): np.zeros(m + n_flags) for s in (0, 1) for b in (0, 1)
    }
    counts = dict.fromkeys(checks, 0)
    # One BLAS thread: DuckDB's threads produce the next batches meanwhile, and OpenBLAS's
    # spinning threads on shared cores cost several times the product itself (measured 6 s
    # against 1 s of CPU at m = 64 on 10⁶ rows, two cores).
    with one_blas_thread():
        for s, bad, miss, x in _batches(engine, sql, m, n_flags, what):
            for key in checks:
                rows = (s == key[0]) & (bad == key[1])
                n = int(rows.sum())
                if n == 0:
                    continue
                counts[key] += n
                checks[key][m:] += miss[rows].sum(axis=0)
                if key[1]:
                    continue  # rows left out: their features are not used
                xs = x[rows] if n < len(rows) else x
                total = xs.sum(axis=0)
                if np.all(np.isfinite(total)):
                    acc[key[0]].add(xs, total)
                else:  # NaN/inf somewhere (or a sum that overflowed): count them
                    checks[key][:m] += np.count_nonzero(~np.isfinite(xs), axis=0)
    groups = {k: (counts[k], v) for k, v in checks.items() if counts[k]}
    out = {s: a.sums() for s, a in acc.items() if a.count}
    return groups, out, sql


def _batches(
    engine: DuckDBEngine, sql: str, m: int, n_flags: int, what: str
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per Arrow batch: stratum flags (rows,), left-out flags (rows,), missing flags
    (rows, n_flags) and features (rows, m) float64 (NaN where NULL)."""
    for batch in engine.stream(sql, what, batch_rows(m + n_flags)):
        rows = batch.num_rows
        if rows == 0:
            continue
        s, bad = (np.asarray(batch.column(i).to_numpy(zero_copy_only=False)) for i in (0, 1))
        miss = np.empty((rows, n_flags), dtype=np.int64)
        for i in range(n_flags):
            miss[:, i] = batch.column(2 + i).to_numpy(zero_copy_only=False)
        # Column-major: each Arrow column is copied into contiguous memory.
        x = np.empty((rows, m), dtype=np.float64, order="F")
        for j in range(m):
            # A double column: pyarrow gives NaN for NULL (the check counts them).
            x[:, j] = batch.column(2 + n_flags + j).to_numpy(zero_copy_only=False)
        yield s, bad, miss, x
