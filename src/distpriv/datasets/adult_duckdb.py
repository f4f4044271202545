"""The bundled Adult data parsed by DuckDB, for the pipeline's ``"adult:<split>"`` sources.

Why: :func:`~distpriv.datasets.load_adult` parses the files with pandas, and ``import pandas``
alone costs about 0.3–0.4 s of CPU — more than half of what ``import numpy, pandas``, the
yardstick of a cold ``distpriv verify``, costs. The pipeline's tables live in
DuckDB anyway (:func:`distpriv.pipeline.stages.data.open_table`), so DuckDB reads the two gzip
files itself, applies :func:`load_adult`'s cleaning in SQL and keeps the rows of one split,
in the order :func:`~distpriv.datasets.split` gives them (same permutation, from
``distpriv.datasets.adult._split_positions``). ``tests/datasets/test_adult_duckdb.py``
compares every split, row by row, with the pandas parse.

The SQL is distpriv's own (no user text reaches it); the connection is locked down
(:func:`~distpriv.modeling.engines.locked_connection`) before it reads the two files, which
are the only ones it may read.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import sqlglot

from ..errors import ParameterError
from ..modeling.engines import DuckDBEngine, locked_connection
from .adult import _DATA_FILES, _INT_COLUMNS, ADULT_COLUMNS, PAPER_SPLIT, _split_positions

__all__ = ["adult_engine", "bundled_paths"]

# The cleaned rows (all of Adult) on the instance that read the files (rowid: the position).
_ALL = "distpriv_adult"
_POS = "__distpriv_pos"


def bundled_paths() -> tuple[Path, ...] | None:
    """The bundled gzip files as paths on disk, or ``None`` when the package is not on a
    file system (e.g. imported from a zip: the caller then uses the pandas parse)."""
    out: list[Path] = []
    for name, _ in _DATA_FILES:
        res = resources.files(__package__).joinpath("data", name)
        if not isinstance(res, Path) or not res.is_file():
            return None
        out.append(res.resolve())
    return tuple(out)


def _clean_sql(paths: tuple[Path, ...]) -> list[str]:
    """Statements that create :data:`_ALL`: both files, in order, cleaned as load_adult.

    As pandas' parse: fields separated by ``", "`` (pandas: ``,`` and
    ``skipinitialspace``), no quoting in the files, the integer columns parsed as BIGINT by
    the reader; a row is dropped when a field is ``?`` (read as NULL) or the line is
    blank; the test file's labels ``>50K.`` / ``<=50K.`` normalised (any other label
    becomes NULL, as ``_INCOME_LABELS.get`` makes it). The table is filled in the files'
    line order (data file first; DuckDB keeps insertion order), so its ``rowid`` is the
    row's position in :func:`load_adult` (no sort, no window: they cost a cold start).
    """
    spec = ", ".join(
        f"'{c}': '{'BIGINT' if c in _INT_COLUMNS else 'VARCHAR'}'" for c in ADULT_COLUMNS
    )
    keep = " AND ".join(f"{c} IS NOT NULL" for c in ADULT_COLUMNS)
    cols = ", ".join(
        "CASE WHEN income IN ('>50K', '>50K.') THEN '>50K' "
        "WHEN income IN ('<=50K', '<=50K.') THEN '<=50K' END AS income"
        if c == "income"
        else c
        for c in ADULT_COLUMNS
    )
    stmts = []
    for i, ((_, skip), path) in enumerate(zip(_DATA_FILES, paths, strict=True)):
        literal = sqlglot.exp.Literal.string(str(path)).sql(dialect="duckdb")
        reader = (
            f"read_csv({literal}, header = false, delim = ', ', quote = '', escape = '', "
            f"skip = {int(skip)}, columns = {{{spec}}}, auto_detect = false, "
            "nullstr = '?', compression = 'gzip')"
        )
        select = f"SELECT {cols} FROM {reader} WHERE {keep}"
        stmts.append(
            f"CREATE TABLE {_ALL} AS {select}" if i == 0 else f"INSERT INTO {_ALL} {select}"
        )
    return stmts


def _instance(cache: dict[Any, Any] | None) -> Any:
    """The locked instance holding :data:`_ALL` (once per command when ``cache`` is given)."""
    key = ("adult-duckdb",)
    if cache is not None and key in cache:
        return cache[key]
    paths = bundled_paths()
    if paths is None:  # pragma: no cover - only for a package imported from a zip file
        return None
    conn = locked_connection([str(p) for p in paths])
    for stmt in _clean_sql(paths):
        conn.execute(stmt)
    if cache is not None:
        cache[key] = conn
    return conn


def adult_engine(
    part: str, split_seed: int, *, cache: dict[Any, Any] | None = None
) -> DuckDBEngine | None:
    """An engine over one part of the bundled Adult data, parsed and split in DuckDB.

    Parameters
    ----------
    part : str
        ``"all"`` (the 45,222 clean rows in file order) or a key of
        :data:`~distpriv.datasets.PAPER_SPLIT` (the rows of that part of
        ``paper_split(rng=split_seed)``, in its order).
    split_seed : int
        The split's seed.
    cache : dict, optional
        The command's cache (:func:`distpriv.pipeline.scope.command_cache`): the files are
        parsed once per command, each part is a cursor of that instance.

    Returns
    -------
    DuckDBEngine or None
        ``None`` when the bundled files are not on a file system (use the pandas parse).
    """
    if part not in PAPER_SPLIT and part != "all":
        raise ParameterError(
            f"unknown Adult split {part!r}; use one of {', '.join([*PAPER_SPLIT, 'all'])}"
        )
    base = _instance(cache)
    if base is None:  # pragma: no cover - see bundled_paths
        return None
    conn = base.cursor()  # its own temporary table ``data``; the instance's settings
    label = f"adult:{part}"
    if part == "all":
        conn.execute(f"CREATE TEMP TABLE data AS SELECT * FROM {_ALL} ORDER BY rowid")
        return DuckDBEngine.over_relation(conn, label)
    n = int(conn.execute(f"SELECT count(*) FROM {_ALL}").fetchall()[0][0])
    rows = _split_positions(n, PAPER_SPLIT, rng=split_seed)[part]
    pick = {_POS: rows.astype(np.int64), "__distpriv_k": np.arange(len(rows), dtype=np.int64)}
    conn.register("__distpriv_pick", pick)
    conn.execute(
        f"CREATE TEMP TABLE data AS SELECT a.* EXCLUDE ({_POS}) FROM __distpriv_pick p "
        f"JOIN (SELECT rowid AS {_POS}, * FROM {_ALL}) a USING ({_POS}) "
        "ORDER BY p.__distpriv_k"
    )
    conn.unregister("__distpriv_pick")
    return DuckDBEngine.over_relation(conn, label)
