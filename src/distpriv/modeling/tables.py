"""Tables: records where they live (pandas, Arrow, Parquet/CSV, DuckDB relation, Spark).

A :class:`Table` is an engine (:mod:`distpriv.modeling.engines`) plus an optional row filter
(rows dropped under ``missing="drop"``). Aggregates — the released statistics, the analytic
model's moments (:mod:`distpriv.modeling.moments`), NULL counts — run in the engine, where the
data is: a Parquet file is never copied into pandas for them.

The row-level path (Monte Carlo resampling, non-linear statistics, Python callables) needs
the rows in memory, in a fixed order. :attr:`Table.frame` materialises them once, refusing
tables of more than :data:`MAX_IN_MEMORY_ROWS` rows *before* loading.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from ..errors import ParameterError
from .engines import (
    DuckDBEngine,
    SparkEngine,
    is_pandas_frame,
    is_spark_dataframe,
    locked_connection,
    make_engine,
    missing_condition,
)
from .expressions import parse_expression

if TYPE_CHECKING:  # imported where a frame is made: ``distpriv verify`` never needs pandas
    import pandas as pd

__all__ = [
    "MAX_IN_MEMORY_ROWS",
    "MISSING_POLICIES",
    "MissingReport",
    "Table",
    "as_table",
    "sample_table",
]

_NAME = "data"
_ROWID = "__distpriv_rowid"

#: Largest table the in-memory (row-level) path materialises; the analytic model of linear
#: statistics and the released statistics have no such limit (they run in the engine).
MAX_IN_MEMORY_ROWS = 5_000_000

#: What to do with NULL/NaN in a column a statistic or the secret uses.
MISSING_POLICIES = ("error", "drop")


@dataclass(frozen=True)
class MissingReport:
    """NULL/NaN values found in the columns used, and what was done with them."""

    #: ``"error"`` or ``"drop"``.
    policy: str
    #: The columns checked.
    columns: tuple[str, ...]
    #: Column → number of NULL/NaN values (only columns that have some).
    counts: dict[str, int] = field(default_factory=dict)
    #: Rows removed under ``"drop"`` (a row with several missing values counts once).
    rows_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return {
            "policy": self.policy,
            "columns": list(self.columns),
            "missing_counts": dict(self.counts),
            "rows_dropped": self.rows_dropped,
        }


def check_missing_policy(missing: Any) -> str:
    """Validate the ``missing`` parameter (``"error"`` or ``"drop"``)."""
    if missing not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    return str(missing)


class Table:
    """A table of records with an engine over it.

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table, duckdb relation, str/Path, Spark DataFrame, or
        a ready engine
        The records (one row each). Must not be empty.
    source : str, optional
        Where the records came from, for messages and reports.
    where : str, optional
        A row filter (generated SQL, DuckDB dialect), e.g. to drop rows with NULLs.
    """

    def __init__(self, data: Any, source: str | None = None, *, where: str | None = None) -> None:
        if isinstance(data, DuckDBEngine | SparkEngine):
            self.engine = data
        else:
            label = source or _label(data)
            if is_pandas_frame(data):
                if data.shape[1] == 0:
                    raise ParameterError(f"data has no columns: {label}")
                data = data.reset_index(drop=True)
            self.engine = make_engine(data, label)
            self._given_frame = data if is_pandas_frame(data) else None
        if not hasattr(self, "_given_frame"):
            self._given_frame = None
        self.source = source or self.engine.label
        self.where = where
        self._frame: pd.DataFrame | None = None
        self._local: duckdb.DuckDBPyConnection | None = None
        self._n_rows: int | None = None
        self.last_missing: dict[str, int] = {}
        self.last_missing_rows = 0
        # Spark: counting is a job of its own; an empty table fails at its first aggregate.
        if self.dialect == "duckdb" and self.n_rows == 0:
            raise ParameterError(f"data is empty: the table {self.source} has no rows")

    # -- engine side -------------------------------------------------------------------

    @property
    def dialect(self) -> str:
        """``"duckdb"`` or ``"spark"``."""
        return self.engine.dialect

    @property
    def columns(self) -> tuple[str, ...]:
        """Column names."""
        return self.engine.columns

    @property
    def n_rows(self) -> int:
        """Number of records (after the row filter)."""
        if self._n_rows is None:
            self._n_rows = int(self.run(["count(*)"], what=f"counting rows of {self.source}")[0][0])
        return self._n_rows

    def column_name(self, name: str) -> str:
        """The table's spelling of a column referenced as ``name`` (case-insensitive)."""
        for c in self.columns:
            if c.lower() == name.lower():
                return c
        raise ParameterError(f"unknown column {name!r}; the table has columns: {self.columns}")

    def run(
        self, select: list[str], *, what: str, group_by: str | None = None, cte: str | None = None
    ) -> list[tuple[Any, ...]]:
        """Run ``SELECT select FROM data [WHERE filter] [GROUP BY …]`` in the engine.

        ``select`` items are generated SQL (DuckDB dialect) built from validated
        expressions; with ``cte`` the query reads ``FROM f`` where ``f`` is
        ``cte`` evaluated over the filtered table.
        """
        rel = self.engine.relation
        where = f" WHERE {self.where}" if self.where else ""
        if cte is not None:
            sql = f"WITH f AS (SELECT {cte} FROM {rel}{where}) SELECT {', '.join(select)} FROM f"
        else:
            sql = f"SELECT {', '.join(select)} FROM {rel}{where}"
        if group_by:
            sql += f" GROUP BY {group_by}"
        return self.engine.query(sql, what)

    def sample_where(
        self, predicate: str, k: int, rng: np.random.Generator, what: str, *, negate: bool = False
    ) -> tuple[pd.DataFrame, int]:
        """Up to ``k`` rows drawn uniformly without replacement, in the engine, among the rows
        satisfying ``predicate`` (NULL counts as false, as in :meth:`predicate`; with
        ``negate`` the other rows); and how many rows there are to draw from.

        For tables too large for memory (Monte Carlo row pools): only the sample leaves the
        engine.
        """
        cond = f"coalesce(CAST(({self.safe_sql(predicate, what, 'scalar')}) AS BOOLEAN), false)"
        cond = f"NOT {cond}" if negate else cond
        where = cond if self.where is None else f"({self.where}) AND {cond}"
        size = int(self.run([f"count(*) FILTER (WHERE {cond})"], what=what)[0][0])
        if size == 0:
            return self.engine.fetch_frame("*", "false", what), 0
        seed = int(rng.integers(2**31 - 1))
        return self.engine.sample_frame(where, min(k, size), seed, what), size

    def missing_counts(self, columns: Iterable[str]) -> dict[str, int]:
        """NULL (and NaN, for float columns) values per column, in one query."""
        cols = sorted({self.column_name(c) for c in columns})
        if not cols:
            return {}
        select = [
            f"sum(CASE WHEN {missing_condition(c, self.engine)} THEN 1 ELSE 0 END)" for c in cols
        ]
        row = self.run(select, what=f"counting missing values in {self.source}")[0]
        return {c: int(v or 0) for c, v in zip(cols, row, strict=True) if v}

    def complete(
        self,
        columns: Iterable[str],
        *,
        missing: str = "error",
        what: str = "table",
        counts: dict[str, int] | None = None,
        rows_missing: int | None = None,
    ) -> tuple[Table, MissingReport]:
        """Apply the missing-value policy to the columns used.

        Parameters
        ----------
        columns : iterable of str
            Columns a statistic or the secret uses.
        missing : {"error", "drop"}
            ``"error"``: any NULL/NaN raises. ``"drop"``: rows with one are left out and
            counted.
        what : str
            Names the table in the error message (e.g. ``"modelling data"``).
        counts : dict, optional
            Missing values per column, when already counted (saves a query).
        rows_missing : int, optional
            Rows with at least one of them, when already counted (saves a query).

        Returns
        -------
        (Table, MissingReport)
            This table (nothing missing, or ``"error"``) or a filtered view of it.

        Raises
        ------
        ParameterError
            With ``missing="error"``: names the first column with NULL/NaN values and the count.
            With ``"drop"``: when no row is left.
        """
        policy = check_missing_policy(missing)
        cols = tuple(sorted({self.column_name(c) for c in columns}))
        counts = self.missing_counts(cols) if counts is None else counts
        if not counts:
            return self, MissingReport(policy, cols)
        if policy == "error":
            col, cnt = next(iter(counts.items()))
            others = "" if len(counts) == 1 else f" (and {len(counts) - 1} other column(s))"
            raise ParameterError(
                f"column {col!r} of the {what} has {cnt} missing (NULL/NaN) value(s){others}; "
                "clean the data or choose missing='drop' to leave such rows out"
            )
        cond = " OR ".join(missing_condition(c, self.engine) for c in counts)
        keep = f"NOT ({cond})"
        where = keep if self.where is None else f"({self.where}) AND {keep}"
        empty = ParameterError(f"every row of the {what} has a missing value in {list(counts)}")
        if rows_missing is not None and rows_missing >= self.n_rows:
            raise empty
        try:
            out = Table(self.engine, self.source, where=where)
        except ParameterError as exc:
            raise empty from exc
        if rows_missing is not None:
            out._n_rows = self.n_rows - rows_missing
        if out.n_rows == 0:
            raise empty
        return out, MissingReport(policy, cols, counts, self.n_rows - out.n_rows)

    def safe_sql(self, text: str, what: str, kind: str = "any") -> str:
        """Validate ``text`` as one expression over this table's columns; sqlglot's rendering.

        Every SQL text a Table method receives goes through here, so a caller passing user
        text straight through still cannot reach the engine with a statement, a subquery
        or a file-reading function.
        """
        return parse_expression(text, what=what, kind=kind, columns=self.columns).sql()

    # -- row-level (in-memory) side ----------------------------------------------------

    def _check_in_memory(self) -> None:
        if self.n_rows > MAX_IN_MEMORY_ROWS:
            raise ParameterError(
                f"the table {self.source} has {self.n_rows} rows; the row-level path "
                f"(Monte Carlo, non-linear statistics, callables) holds at most "
                f"{MAX_IN_MEMORY_ROWS} in memory: use linear statistics with "
                "method='analytic' (computed in the engine), or a sample of the table"
            )

    @property
    def frame(self) -> pd.DataFrame:
        """The records as a pandas DataFrame (materialised once; row limit checked first)."""
        if self._frame is None:
            if self._given_frame is not None and self.where is None:
                self._frame = self._given_frame
            else:
                self._check_in_memory()
                self._frame = self.engine.fetch_frame(
                    "*", self.where, f"loading {self.source}"
                ).reset_index(drop=True)
        return self._frame

    def _conn(self) -> duckdb.DuckDBPyConnection:
        if self._local is None:
            conn = locked_connection()  # locked before any generated SQL runs on it
            engine = self.engine
            framed = self._frame is not None or self._given_frame is not None
            if isinstance(engine, DuckDBEngine) and not framed:
                # The rows as Arrow, straight from DuckDB, and their positions beside them
                # (a positional join keeps the rows' order): no pandas frame is made for a
                # table read by DuckDB (``distpriv verify``'s check).
                self._check_in_memory()
                rows = engine.fetch_arrow("*", self.where, f"loading {self.source}")
                conn.register("__distpriv_rows", rows)
                ids = {_ROWID: np.arange(rows.num_rows, dtype=np.int64)}  # numpy: no pandas
                conn.register("__distpriv_ids", ids)
                conn.execute(
                    f"CREATE TEMP VIEW {_NAME} AS SELECT * FROM __distpriv_rows "
                    "POSITIONAL JOIN __distpriv_ids"
                )
            else:
                frame = self.frame
                conn.register(
                    _NAME, frame.assign(**{_ROWID: np.arange(len(frame), dtype=np.int64)})
                )
            self._local = conn
        return self._local

    def sql(self, query: str, what: str) -> duckdb.DuckDBPyRelation:
        """Run generated SQL over the in-memory rows (named ``data``); errors name ``what``."""
        try:
            return self._conn().sql(query)
        except duckdb.Error as exc:
            msg = " ".join(str(exc).split())
            raise ParameterError(f"{what}: {msg}") from exc

    def row_values(self, expressions: list[str], what: list[str]) -> np.ndarray:
        """Evaluate row-level SQL expressions on every row, shape (n_rows, k), float64.

        One query for all expressions. Raises :class:`ParameterError` naming the expression
        on invalid SQL, non-numeric results, or NULL/NaN/infinite values.
        """
        select = ", ".join(
            f"CAST(({self.safe_sql(expr, name, 'scalar')}) AS DOUBLE) AS v{j}"
            for j, (expr, name) in enumerate(zip(expressions, what, strict=True))
        )
        rel = self.sql(f"SELECT {select} FROM {_NAME} ORDER BY {_ROWID}", ", ".join(what))
        try:
            arrays = rel.fetchnumpy()
        except duckdb.Error as exc:
            raise ParameterError(f"{', '.join(what)}: {' '.join(str(exc).split())}") from exc
        cols = []
        for j, name in enumerate(what):
            values = np.ma.filled(np.ma.asarray(arrays[f"v{j}"], dtype=np.float64), np.nan)
            bad = ~np.isfinite(values)
            if np.any(bad):
                raise ParameterError(
                    f"{name}: {int(bad.sum())} row(s) give NULL, NaN or infinite values "
                    f"(first at row {int(np.argmax(bad))}); the statistic is undefined there"
                )
            cols.append(values)
        return np.stack(cols, axis=1)

    def predicate(self, predicate: str, what: str) -> np.ndarray:
        """Boolean mask of the rows satisfying a SQL predicate (NULL counts as false)."""
        predicate = self.safe_sql(predicate, what, "scalar")
        rel = self.sql(
            f"SELECT coalesce(CAST(({predicate}) AS BOOLEAN), false) AS v FROM {_NAME} "
            f"ORDER BY {_ROWID}",
            what,
        )
        try:
            return np.asarray(rel.fetchnumpy()["v"], dtype=bool)
        except duckdb.Error as exc:
            raise ParameterError(f"{what}: {' '.join(str(exc).split())}") from exc

    def _name_failing(self, expressions: list[str], what: list[str]) -> None:
        """After a joint aggregate failed: run each expression alone and raise naming the
        first that fails by itself (not every statistic of the query); return if none does."""
        if len(expressions) < 2:
            return
        for e, name in zip(expressions, what, strict=True):
            self.run([f"CAST(({e}) AS DOUBLE)"], what=f"{name} on {self.source}")

    def check_aggregates(self, expressions: list[str], what: list[str]) -> None:
        """Run SQL aggregates once over all rows, their values unchecked: one the engine
        cannot compute on this table (a type or binder error) is named alone."""
        exprs = [
            self.safe_sql(e, name, "aggregate") for e, name in zip(expressions, what, strict=True)
        ]
        try:
            self.run([f"CAST(({e}) AS DOUBLE)" for e in exprs], what=", ".join(what))
        except ParameterError:
            self._name_failing(exprs, what)
            raise

    def aggregate(
        self,
        expressions: list[str],
        what: list[str],
        rows: np.ndarray | None = None,
        *,
        missing_in: Iterable[str] = (),
    ) -> np.ndarray:
        """SQL aggregates over all rows (in the engine), or over each row set in ``rows``.

        Returns shape (k,) for all rows, (s, k) with ``rows`` (shape (s, n)). Over all rows,
        one query in the engine; with ``rows``, one grouped query over the in-memory rows.
        Over all rows, the NULL/NaN counts of the columns ``missing_in`` ride along in the
        same query and are left in :attr:`last_missing` (the values are then only valid
        when there are none).
        """
        expressions = [
            self.safe_sql(e, name, "aggregate") for e, name in zip(expressions, what, strict=True)
        ]
        if rows is None:
            # The row count rides along (one round trip, which matters on Spark).
            cols = sorted({self.column_name(c) for c in missing_in})
            select = [f"CAST(({e}) AS DOUBLE)" for e in expressions] + ["count(*)"]
            conds = [missing_condition(c, self.engine) for c in cols]
            select += [f"sum(CASE WHEN {c} THEN 1 ELSE 0 END)" for c in conds]
            if conds:
                select.append(f"sum(CASE WHEN {' OR '.join(conds)} THEN 1 ELSE 0 END)")
            try:
                row = self.run(select, what=", ".join(what))[0]
            except ParameterError:
                self._name_failing(expressions, what)
                raise
            m = len(expressions)
            values, count = row[:m], row[m]
            self._n_rows = int(count)
            self.last_missing = {
                c: int(v or 0)
                for c, v in zip(cols, row[m + 1 : m + 1 + len(cols)], strict=True)
                if v
            }
            self.last_missing_rows = int(row[-1] or 0) if conds else 0
            if self.last_missing:
                return np.full(m, np.nan)
            if self._n_rows == 0:
                raise ParameterError(f"data is empty: the table {self.source} has no rows")
            out = np.array([np.nan if v is None else float(v) for v in values])
            for name, v in zip(what, out, strict=True):
                if not np.isfinite(v):
                    raise ParameterError(f"{name}: the aggregate is NULL, NaN or infinite")
            return out
        columns: list[np.ndarray] = []
        for expr, name in zip(expressions, what, strict=True):
            sid = np.repeat(np.arange(rows.shape[0], dtype=np.int64), rows.shape[1])
            pick = {"sid": sid, _ROWID: rows.reshape(-1).astype(np.int64)}  # numpy columns
            self._conn().register("__distpriv_subsets", pick)
            rel = self.sql(
                f"SELECT CAST(({expr}) AS DOUBLE) AS v FROM __distpriv_subsets "
                f"JOIN {_NAME} USING ({_ROWID}) GROUP BY sid ORDER BY sid",
                name,
            )
            try:
                arr = rel.fetchnumpy()["v"]
            except duckdb.Error as exc:
                raise ParameterError(f"{name}: {' '.join(str(exc).split())}") from exc
            col = np.ma.filled(np.ma.asarray(arr, dtype=np.float64), np.nan)
            if not np.all(np.isfinite(col)):
                raise ParameterError(f"{name}: the aggregate is NULL, NaN or infinite")
            columns.append(col)
        return np.stack(columns, axis=-1)

    def subset_frame(self, rows: np.ndarray) -> pd.DataFrame:
        """The records at positions ``rows`` as a DataFrame (for Python callables)."""
        return self.frame.iloc[rows]


def _label(data: Any) -> str:
    if isinstance(data, str | Path):
        return str(data)
    if is_pandas_frame(data):
        return "<DataFrame>"
    if is_spark_dataframe(data):
        return "<Spark DataFrame>"
    if isinstance(data, duckdb.DuckDBPyRelation):
        return "<DuckDB relation>"
    return "<Arrow table>"


def as_table(data: Any) -> Table:
    """Normalise a data source to a :class:`Table`.

    Parameters
    ----------
    data : Table, pandas.DataFrame, pyarrow.Table, duckdb relation, str/Path to a
        CSV/Parquet file, or pyspark DataFrame (the ``spark`` extra)

    Raises
    ------
    ParameterTypeError
        Unsupported type.
    ParameterError
        Missing or unreadable file, unknown extension, or an empty table.
    """
    if isinstance(data, Table):
        return data
    return Table(data)


def sample_table(table: Table, n: int, rng: np.random.Generator, what: str) -> Table:
    """A uniformly random ``n``-row subset of ``table``, selected in its engine.

    The positions are drawn as :func:`distpriv.pipeline.stages.data.sample_subset` draws
    them (so a seeded release is unchanged) and bound as a parameter; only the ``n``
    chosen rows leave the engine.
    """
    size = table.n_rows
    if n > size:
        raise ParameterError(f"{what}: cannot sample {n} rows from a table of {size} rows")
    positions = np.sort(rng.choice(size, size=n, replace=False))
    engine = table.engine
    if not isinstance(engine, DuckDBEngine):
        raise ParameterError(f"{what}: sampling a subset is done for DuckDB tables only")
    rel = engine.relation
    sql = (
        f"SELECT * EXCLUDE (__distpriv_pos) FROM (SELECT *, row_number() OVER () - 1 AS "
        f"__distpriv_pos FROM {rel}) WHERE list_contains($pos, __distpriv_pos) "
        "ORDER BY __distpriv_pos"
    )
    try:
        frame = engine.conn.execute(sql, {"pos": positions.tolist()}).df()
    except duckdb.Error as exc:
        raise ParameterError(f"{what}: {' '.join(str(exc).split())}") from exc
    return Table(frame, f"{table.source} (random {n}-row subset)")
