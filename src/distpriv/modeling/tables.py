"""Tables: any pandas DataFrame, Arrow table, or CSV/Parquet path, queried through DuckDB.

Everything is materialised once as a pandas DataFrame registered in a private DuckDB
connection, so that SQL row expressions, aggregates and Python callables all see the same
rows in the same order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..errors import ParameterError, ParameterTypeError

__all__ = ["Table", "as_table"]

_NAME = "data"
_ROWID = "__distpriv_rowid"


class Table:
    """A table of records with a DuckDB connection over it.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records (one row each). Must not be empty.
    source : str
        Where the records came from, for messages and reports.
    """

    def __init__(self, frame: pd.DataFrame, source: str = "<DataFrame>") -> None:
        if frame.shape[0] == 0:
            raise ParameterError(f"data is empty: the table {source} has no rows")
        if frame.shape[1] == 0:
            raise ParameterError(f"data has no columns: {source}")
        self.frame = frame.reset_index(drop=True)
        self.source = source
        self._conn = duckdb.connect()
        indexed = self.frame.assign(**{_ROWID: np.arange(len(self.frame), dtype=np.int64)})
        self._conn.register(_NAME, indexed)

    @property
    def n_rows(self) -> int:
        """Number of records."""
        return int(self.frame.shape[0])

    @property
    def columns(self) -> tuple[str, ...]:
        """Column names."""
        return tuple(str(c) for c in self.frame.columns)

    def sql(self, query: str, what: str) -> duckdb.DuckDBPyRelation:
        """Run SQL over the table (named ``data``); errors name ``what`` was evaluated."""
        try:
            return self._conn.sql(query)
        except duckdb.Error as exc:
            msg = " ".join(str(exc).split())
            raise ParameterError(f"{what}: {msg}") from exc

    def row_values(self, expressions: list[str], what: list[str]) -> np.ndarray:
        """Evaluate row-level SQL expressions on every row, shape (n_rows, k), float64.

        Raises :class:`ParameterError` naming the expression on invalid SQL, non-numeric
        results, or NULL/NaN values.
        """
        cols = []
        for expr, name in zip(expressions, what, strict=True):
            rel = self.sql(
                f"SELECT CAST(({expr}) AS DOUBLE) AS v FROM {_NAME} ORDER BY {_ROWID}", name
            )
            try:
                arr = rel.fetchnumpy()["v"]
            except duckdb.Error as exc:
                raise ParameterError(f"{name}: {' '.join(str(exc).split())}") from exc
            values = np.ma.filled(np.ma.asarray(arr, dtype=np.float64), np.nan)
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
        rel = self.sql(
            f"SELECT coalesce(CAST(({predicate}) AS BOOLEAN), false) AS v FROM {_NAME} "
            f"ORDER BY {_ROWID}",
            what,
        )
        try:
            return np.asarray(rel.fetchnumpy()["v"], dtype=bool)
        except duckdb.Error as exc:
            raise ParameterError(f"{what}: {' '.join(str(exc).split())}") from exc

    def aggregate(
        self, expressions: list[str], what: list[str], rows: np.ndarray | None = None
    ) -> np.ndarray:
        """SQL aggregates over all rows, or over each row set in ``rows`` (shape (s, n)).

        Returns shape (k,) for all rows, (s, k) with ``rows``. With ``rows`` the subsets
        are joined in one query (grouped by subset), not evaluated one by one.
        """
        out = []
        for expr, name in zip(expressions, what, strict=True):
            if rows is None:
                rel = self.sql(f"SELECT CAST(({expr}) AS DOUBLE) AS v FROM {_NAME}", name)
            else:
                sid = np.repeat(np.arange(rows.shape[0], dtype=np.int64), rows.shape[1])
                pick = pd.DataFrame({"sid": sid, _ROWID: rows.reshape(-1).astype(np.int64)})
                self._conn.register("__distpriv_subsets", pick)
                rel = self.sql(
                    f"SELECT CAST(({expr}) AS DOUBLE) AS v FROM __distpriv_subsets "
                    f"JOIN {_NAME} USING ({_ROWID}) GROUP BY sid ORDER BY sid",
                    name,
                )
            try:
                arr = rel.fetchnumpy()["v"]
            except duckdb.Error as exc:
                raise ParameterError(f"{name}: {' '.join(str(exc).split())}") from exc
            values = np.ma.filled(np.ma.asarray(arr, dtype=np.float64), np.nan)
            if not np.all(np.isfinite(values)):
                raise ParameterError(f"{name}: the aggregate is NULL, NaN or infinite")
            out.append(values)
        stacked = np.stack(out, axis=-1)
        return stacked[0] if rows is None else stacked

    def subset_frame(self, rows: np.ndarray) -> pd.DataFrame:
        """The records at positions ``rows`` as a DataFrame (for Python callables)."""
        return self.frame.iloc[rows]


def as_table(data: Any) -> Table:
    """Normalise a pandas DataFrame, a pyarrow Table, or a CSV/Parquet path to a Table.

    Raises
    ------
    ParameterTypeError
        Unsupported type.
    ParameterError
        Missing or unreadable file, unknown extension, or an empty table.
    """
    if isinstance(data, Table):
        return data
    if isinstance(data, pd.DataFrame):
        return Table(data)
    if type(data).__module__.startswith("pyarrow") and hasattr(data, "to_pandas"):
        return Table(data.to_pandas(), "<Arrow table>")
    if isinstance(data, str | Path):
        path = Path(data)
        if not path.is_file():
            raise ParameterError(f"data file not found: {str(path)!r}")
        suffix = "".join(path.suffixes[-2:]).lower()
        if suffix.endswith((".csv", ".csv.gz", ".tsv")):
            reader = "read_csv_auto"
        elif suffix.endswith(".parquet"):
            reader = "read_parquet"
        else:
            raise ParameterError(
                f"data file {str(path)!r} must end in .csv, .csv.gz, .tsv or .parquet"
            )
        try:
            frame = duckdb.connect().execute(f"SELECT * FROM {reader}(?)", [str(path)]).df()
        except duckdb.Error as exc:
            raise ParameterError(
                f"cannot read data file {str(path)!r}: {' '.join(str(exc).split())}"
            ) from exc
        return Table(frame, str(path))
    raise ParameterTypeError(
        f"data must be a pandas DataFrame, a pyarrow Table or a CSV/Parquet path, got "
        f"{type(data).__name__}"
    )
