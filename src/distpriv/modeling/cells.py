"""Histograms and marginal tables as statistics: a ``[query]``'s cells, named for reports.

A histogram of a numeric column or a one-/two-way marginal of categorical columns releases
one count per cell: the query F of Chen & Ohrimenko 2023, §3 with one linear statistic
``count_if(<cell predicate>)`` per cell. This module expands a compact description (what a
release configuration's ``[query] histogram = {column = "age", bins = 20}`` or
``marginal = ["sex", "race"]`` says) into those statistics, with names a report shows as
they are (``age in [20, 30)``, ``sex=Female & race=White``). Every expression is written
here from quoted identifiers and SQL literals (sqlglot) and still goes through the
locked-down expression layer like any hand-written statistic.

Where rows go
-------------
* Bins follow :func:`numpy.histogram`: ``[e₀, e₁), …, [e_{k-2}, e_{k-1}]`` — every bin
  half-open but the last, which holds its right edge.
* Values outside the edges go, with ``outside = "cell"``, to two more cells
  (``age < e₀`` and ``age > e_{k-1}``) so that the cells partition the rows; with
  ``outside = "drop"`` they are counted in no cell (the cells then do not partition).
* A categorical value that is not listed goes, with ``others = true``, to the cell
  ``sex=(other)``; otherwise to no cell.
* NULL is in no cell: the release's missing-value policy (``[data] missing``) refuses or
  drops such rows before anything is counted, so the cells partition the rows it keeps.

When the edges or the values are not given they come from the *modelling* table (its
range, its distinct values), never from the released rows; then the extra cells default
off, since on that table they are empty by construction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from ..errors import ParameterError
from .histogram import _literal
from .tables import Table

__all__ = ["MAX_CELLS", "CellTable", "expand_cells", "histogram_cells", "marginal_cells"]

#: Most cells one ``[query]`` expands to: the model keeps m × m covariances per value of
#: the secret (2,048² doubles are 32 MiB each) and the moments query stays one statement.
MAX_CELLS = 2048

_OUTSIDE = ("cell", "drop")
_HISTOGRAM_KEYS = frozenset({"column", "bins", "edges", "values", "range", "outside", "others"})
_MARGINAL_KEYS = frozenset({"columns", "values", "others"})

TableSource = Table | Callable[[], Table] | None


@dataclass(frozen=True)
class CellTable:
    """The cells of one histogram or marginal table.

    Attributes
    ----------
    kind : str
        ``"histogram"`` or ``"marginal"``.
    columns : tuple of str
        The binned column(s).
    names : tuple of str, length m
        The statistics' names, as reports show them.
    expressions : tuple of str, length m
        ``count_if(<predicate>)`` per cell (DuckDB dialect).
    partition : bool
        Whether every row with no NULL in ``columns`` is in exactly one cell, so the m
        counts of an n-row dataset sum to n.
    note : str
        Where rows outside the cells go, in words (for reports).
    """

    kind: str
    columns: tuple[str, ...]
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    partition: bool
    note: str

    def query(self) -> dict[str, str]:
        """Statistic name → expression, in cell order."""
        return dict(zip(self.names, self.expressions, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return {
            "kind": self.kind,
            "columns": list(self.columns),
            "cells": len(self.names),
            "partition": self.partition,
            "note": self.note,
        }


def _quoted(column: str) -> str:
    return exp.column(column, quoted=True).sql(dialect="duckdb")


def _number(x: float) -> str:
    """A readable edge: an integer as such, a float with 6 significant digits."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else f"{x:.6g}"


def _resolve(table: TableSource) -> Table | None:
    return table() if callable(table) and not isinstance(table, Table) else table


def _check_column(table: Table, column: str, key: str) -> str:
    if column not in table.columns and column.lower() not in {c.lower() for c in table.columns}:
        raise ParameterError(
            f"{key}: unknown column {column!r}; the modelling table has "
            f"{', '.join(map(repr, table.columns))}"
        )
    return table.column_name(column)


def _data_range(table: Table, column: str, key: str) -> tuple[float, float]:
    name = _check_column(table, column, key)
    col = _quoted(name)
    try:
        row = table.run(
            [f"min(CAST({col} AS DOUBLE))", f"max(CAST({col} AS DOUBLE))"],
            what=f"{key}: the range of {column!r}",
        )[0]
    except ParameterError as exc:
        raise ParameterError(f"{key}: column {column!r} is not numeric ({exc})") from exc
    lo, hi = row
    if lo is None or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError(
            f"{key}: column {column!r} of the modelling table has no finite value to take "
            "the range from; give edges or range"
        )
    return float(lo), float(hi)


def _data_values(table: Table, column: str, key: str) -> list[object]:
    name = _check_column(table, column, key)
    col = _quoted(name)
    rows = table.run(
        [col],
        what=f"{key}: the values of {column!r}",
        group_by=f"{col} HAVING {col} IS NOT NULL ORDER BY {col} LIMIT {MAX_CELLS + 1}",
    )
    values = [r[0] for r in rows]
    if len(values) > MAX_CELLS:
        raise ParameterError(
            f"{key}: column {column!r} has more than {MAX_CELLS} distinct values (the cap on "
            "cells, MAX_CELLS); list the values to count or bin the column with a histogram"
        )
    if not values:
        raise ParameterError(f"{key}: column {column!r} of the modelling table is all NULL")
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def _edges(
    column: str, bins: Any, edges: Any, rng: Any, table: TableSource, key: str
) -> list[float]:
    if edges is not None:
        if bins is not None or rng is not None:
            raise ParameterError(f"{key}: give edges, or bins (with an optional range), not both")
        ok = isinstance(edges, Sequence) and not isinstance(edges, str)
        ok = ok and all(isinstance(e, int | float) and not isinstance(e, bool) for e in edges)
        if not ok or len(edges) < 2:
            raise ParameterError(
                f"{key}: edges must be a list of at least two numbers, got {edges!r}"
            )
        e = [float(x) for x in edges]
        bad = [x for x in e if not math.isfinite(x)]
        if bad:
            raise ParameterError(f"{key}: edges must be finite, got {bad[0]!r}")
        for a, b in itertools.pairwise(e):
            if b <= a:
                raise ParameterError(
                    f"{key}: edges must be strictly increasing, got {_number(a)} then {_number(b)}"
                )
        return e
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ParameterError(f"{key}: bins must be an integer >= 1, got {bins!r}")
    if bins > MAX_CELLS:
        raise ParameterError(f"{key}: bins={bins} is more than {MAX_CELLS} cells (MAX_CELLS)")
    if rng is None:
        src = _resolve(table)
        if src is None:
            raise ParameterError(
                f"{key}: bins without range needs the modelling table (or give range = [lo, hi])"
            )
        lo, hi = _data_range(src, column, key)
    else:
        ok = isinstance(rng, Sequence) and len(rng) == 2
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in rng)
        if not ok or not all(math.isfinite(v) for v in rng):
            raise ParameterError(
                f"{key}: range must be [low, high], two finite numbers, got {rng!r}"
            )
        lo, hi = float(rng[0]), float(rng[1])
    if not lo < hi:
        if rng is not None:
            raise ParameterError(f"{key}: range must have low < high, got {rng!r}")
        raise ParameterError(
            f"{key}: column {column!r} takes the single value {_number(lo)} on the modelling "
            "table: nothing to bin; give edges or range"
        )
    # numpy's own edges (np.histogram's), so the cells match it exactly.
    return [float(x) for x in np.histogram_bin_edges([lo, hi], bins=bins, range=(lo, hi))]


def _check_values(values: Any, column: str, key: str) -> list[object]:
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) == 0:
        raise ParameterError(
            f"{key}: values of {column!r} must be a non-empty list, got {values!r}"
        )
    for v in values:
        _literal(v)  # numbers or strings, finite
    if len({(type(v) is str, v) for v in values}) != len(values):
        raise ParameterError(f"{key}: values of {column!r} must be distinct, got {list(values)!r}")
    return list(values)


def _check_outside(value: Any, key: str, name: str) -> None:
    if not isinstance(value, bool):
        raise ParameterError(f"{key}: {name} must be true or false, got {value!r}")


def _cap(m: int, key: str) -> None:
    if m > MAX_CELLS:
        raise ParameterError(
            f"{key}: {m} cells is more than the cap of {MAX_CELLS} (MAX_CELLS); use fewer "
            "bins or values"
        )


def histogram_cells(
    column: str,
    *,
    bins: int | None = None,
    edges: Sequence[float] | None = None,
    values: Sequence[object] | None = None,
    range: Sequence[float] | None = None,  # numpy.histogram's name
    outside: str | None = None,
    table: TableSource = None,
) -> CellTable:
    """The cells of a histogram of one column: bins of a numeric column, or listed values.

    Parameters
    ----------
    column : str
    bins : int, optional
        That many equal-width bins over ``range`` (default: the column's range on
        ``table``), as :func:`numpy.histogram` cuts them.
    edges : sequence of float, optional
        Strictly increasing edges: bins ``[e_i, e_{i+1})``, the last one closed.
    values : sequence of str or number, optional
        One cell per listed value (``column = value``).
    range : (float, float), optional
        With ``bins``: the range cut, instead of the modelling table's.
    outside : {"cell", "drop"}, optional
        Where rows outside the edges (or whose value is not listed) go: to extra cells
        (``age < 17``, ``age > 90``; ``age=(other)``) or to none. Default ``"cell"`` when
        the edges or values are given, ``"drop"`` when they come from ``table``.
    table : Table or callable returning one, optional
        The modelling table, read only when ``bins`` has no ``range``.

    Returns
    -------
    CellTable

    Raises
    ------
    ParameterError
        Not exactly one of bins, edges and values; bins < 1; edges not increasing or not
        finite; values repeated; an unknown column; more than :data:`MAX_CELLS` cells.

    Examples
    --------
    >>> h = histogram_cells("age", edges=[20, 30, 40])
    >>> h.names
    ('age in [20, 30)', 'age in [30, 40]', 'age < 20', 'age > 40')
    >>> h.expressions[0]
    'count_if("age" >= 20 AND "age" < 30)'
    """
    key = f"histogram of {column!r}"
    if sum(x is not None for x in (bins, edges, values)) != 1:
        raise ParameterError(f"{key}: give exactly one of bins, edges, values")
    if range is not None and bins is None:
        raise ParameterError(f"{key}: range applies to bins only")
    if outside is not None and outside not in _OUTSIDE:
        raise ParameterError(
            f"{key}: outside must be one of {', '.join(_OUTSIDE)}, got {outside!r}"
        )
    col = _quoted(column)
    if values is not None:
        vals = _check_values(values, column, key)
        extra = outside != "drop"
        _cap(len(vals) + extra, key)
        names = [f"{column}={v}" for v in vals]
        preds = [f"{col} = {_literal(v)}" for v in vals]
        if extra:
            names.append(f"{column}=(other)")
            preds.append(f"{col} NOT IN ({', '.join(_literal(v) for v in vals)})")
        note = (
            f"a value of {column!r} not listed is counted in {column}=(other)"
            if extra
            else f"a value of {column!r} not listed is counted in no cell"
        )
        return _table("histogram", (column,), names, preds, note, extra)
    given = edges is not None or range is not None
    e = _edges(column, bins, edges, range, table, key)
    extra = (outside or ("cell" if given else "drop")) == "cell"
    _cap(len(e) - 1 + 2 * extra, key)
    lits = [_literal(int(x) if x.is_integer() and abs(x) < 2**53 else x) for x in e]
    shown = [_number(x) for x in e]
    if len(set(shown)) != len(shown):  # edges closer than 6 digits: show them exactly
        shown = [repr(x) for x in e]
    names, preds = [], []
    last = len(e) - 2
    for i, (a, b) in enumerate(itertools.pairwise(zip(shown, lits, strict=True))):
        close, op = ("]", "<=") if i == last else (")", "<")
        names.append(f"{column} in [{a[0]}, {b[0]}{close}")
        preds.append(f"{col} >= {a[1]} AND {col} {op} {b[1]}")
    if extra:
        names += [f"{column} < {shown[0]}", f"{column} > {shown[-1]}"]
        preds += [f"{col} < {lits[0]}", f"{col} > {lits[-1]}"]
        note = (
            f"values of {column!r} outside [{shown[0]}, {shown[-1]}] are counted in the two "
            "outer cells"
        )
    else:
        note = f"values of {column!r} outside [{shown[0]}, {shown[-1]}] are counted in no cell"
    return _table("histogram", (column,), names, preds, note, extra)


def marginal_cells(
    columns: Sequence[str],
    *,
    values: Mapping[str, Sequence[object]] | None = None,
    others: bool | None = None,
    table: TableSource = None,
) -> CellTable:
    """The cells of a one- or two-way marginal table of categorical columns.

    Parameters
    ----------
    columns : sequence of str, length 1 or 2
    values : mapping of column → list of values, optional
        The values to count per column; a column not listed takes the modelling table's
        distinct non-NULL values (sorted).
    others : bool, optional
        Count a value not listed in an ``(other)`` cell of its column (default: true when
        every column's values are listed, false when some come from ``table``).
    table : Table or callable returning one, optional
        The modelling table (read only for columns whose values are not listed).

    Returns
    -------
    CellTable
        Cells in row-major order (the last column varies fastest), named
        ``sex=Female & race=White``.

    Examples
    --------
    >>> t = marginal_cells(["sex"], values={"sex": ["Female", "Male"]}, others=False)
    >>> t.names, t.partition
    (('sex=Female', 'sex=Male'), False)
    """
    key = f"marginal of {list(columns)!r}" if not isinstance(columns, str) else "marginal"
    if isinstance(columns, str) or not isinstance(columns, Sequence):
        raise ParameterError(f"{key}: columns must be a list of one or two column names")
    cols = list(columns)
    if not 1 <= len(cols) <= 2 or not all(isinstance(c, str) and c for c in cols):
        raise ParameterError(
            f"{key}: columns must be a list of one or two column names, got {cols!r}"
        )
    if len(set(cols)) != len(cols):
        raise ParameterError(f"{key}: a column is named twice")
    listed = dict(values or {})
    for c in listed:
        if c not in cols:
            raise ParameterError(f"{key}: values are given for {c!r}, which is not one of {cols!r}")
    if others is not None:
        _check_outside(others, key, "others")
    extra = all(c in listed for c in cols) if others is None else others
    per: list[list[tuple[str, str]]] = []
    for c in cols:
        if c in listed:
            vals = _check_values(listed[c], c, key)
        else:
            src = _resolve(table)
            if src is None:
                raise ParameterError(
                    f"{key}: values of {c!r} are not listed and no modelling table is given"
                )
            vals = _data_values(src, c, key)
        col = _quoted(c)
        cells = [(f"{c}={v}", f"{col} = {_literal(v)}") for v in vals]
        if extra:
            cells.append((f"{c}=(other)", f"{col} NOT IN ({', '.join(_literal(v) for v in vals)})"))
        per.append(cells)
        _cap(math.prod(len(p) for p in per), key)
    names, preds = [], []
    for combo in itertools.product(*per):
        names.append(" & ".join(n for n, _ in combo))
        preds.append(" AND ".join(p for _, p in combo))
    note = (
        "a value not listed is counted in its column's (other) cells"
        if extra
        else "a value not listed is counted in no cell"
    )
    return _table("marginal", tuple(cols), names, preds, note, extra)


def _table(
    kind: str, cols: tuple[str, ...], names: list[str], preds: list[str], note: str, partition: bool
) -> CellTable:
    if len(set(names)) != len(names):
        raise ParameterError(f"{kind} of {list(cols)!r}: two cells got the same name {names!r}")
    return CellTable(
        kind, cols, tuple(names), tuple(f"count_if({p})" for p in preds), partition, note
    )


def _one_spec(kind: str, spec: Any, table: TableSource, where: str) -> CellTable:
    key = f"{where} {kind}"
    if kind == "histogram":
        if not isinstance(spec, Mapping):
            raise ParameterError(
                f'{key} must be a table such as {{column = "age", bins = 20}}, got {spec!r}'
            )
        unknown = sorted(set(spec) - _HISTOGRAM_KEYS)
        if unknown:
            raise ParameterError(
                f"{key}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_HISTOGRAM_KEYS))})"
            )
        column = spec.get("column")
        if not isinstance(column, str) or not column:
            raise ParameterError(f'{key} needs column = "<name>", got {column!r}')
        if "others" in spec and "outside" in spec:
            raise ParameterError(f"{key}: give outside or others, not both")
        out = spec.get("outside")
        if "others" in spec:
            _check_outside(spec["others"], key, "others")
            out = "cell" if spec["others"] else "drop"
        try:
            return histogram_cells(
                column,
                bins=spec.get("bins"),
                edges=spec.get("edges"),
                values=spec.get("values"),
                range=spec.get("range"),
                outside=out,
                table=table,
            )
        except ParameterError as exc:
            raise ParameterError(f"{where} {exc}") from exc
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - _MARGINAL_KEYS)
        if unknown:
            raise ParameterError(
                f"{key}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_MARGINAL_KEYS))})"
            )
        cols: Any = spec.get("columns")
        vals, others = spec.get("values"), spec.get("others")
        if vals is not None and not isinstance(vals, Mapping):
            raise ParameterError(f"{key}: values must map each column to its list of values")
    else:
        cols, vals, others = spec, None, None
    try:
        return marginal_cells(cols, values=vals, others=others, table=table)
    except ParameterError as exc:
        raise ParameterError(f"{where} {exc}") from exc


def expand_cells(
    query: Mapping[str, Any], *, table: TableSource = None, where: str = "[query]"
) -> tuple[dict[str, str], tuple[CellTable, ...]]:
    """A ``[query]`` table with its ``histogram`` and ``marginal`` keys expanded to cells.

    Parameters
    ----------
    query : mapping
        Statistic name → SQL aggregate, plus optionally ``histogram`` (a table
        ``{column, bins | edges | values, range, outside}`` or a list of them) and
        ``marginal`` (a list of one or two columns, a table ``{columns, values, others}``,
        or a list of those).
    table : Table or callable returning one, optional
        The modelling table, opened only if a range or values must come from it.
    where : str
        Prefix of messages (the file and table).

    Returns
    -------
    (dict of str → str, tuple of CellTable)
        Every statistic in order (the plain ones first, then the cells), and the tables.

    Raises
    ------
    ParameterError
        A bad histogram or marginal (see :func:`histogram_cells`, :func:`marginal_cells`), a
        cell name equal to another statistic's, more than :data:`MAX_CELLS` cells in all.
    """
    out = {k: v for k, v in query.items() if k not in ("histogram", "marginal")}
    tables: list[CellTable] = []
    cached: list[Table] = []

    def source() -> Table | None:  # open the modelling table once, and only if needed
        if not cached:
            t = _resolve(table)
            if t is None:
                return None
            cached.append(t)
        return cached[0]

    lazy: TableSource = None if table is None else source  # type: ignore[assignment]
    for kind in ("histogram", "marginal"):
        if kind not in query:
            continue
        spec = query[kind]
        many = isinstance(spec, list) and (
            kind == "histogram" or (bool(spec) and not all(isinstance(c, str) for c in spec))
        )
        for one in spec if many else [spec]:
            tables.append(_one_spec(kind, one, lazy, where))
    for t in tables:
        for name, expr in zip(t.names, t.expressions, strict=True):
            if name in out:
                raise ParameterError(f"{where}: the cell {name!r} is named like another statistic")
            out[name] = expr
    if tables and len(out) > MAX_CELLS:
        raise ParameterError(
            f"{where}: {len(out)} statistics is more than the cap of {MAX_CELLS} (MAX_CELLS)"
        )
    return out, tuple(tables)
