"""Histogram (GROUP BY of counts) statistics as locked-down ``count_if`` expressions.

A histogram release publishes one count per bin: the query F of Chen & Ohrimenko 2023, §3
with one linear statistic per bin, ``count_if(<bin predicate>)``. This module writes those
expressions for a numeric column cut at bin edges or a column's listed values, optionally
crossed with a second column's values (a two-way marginal table). The expressions are
ordinary statistics: a config lists them under ``[query]`` (examples/adult-histogram.toml
was generated with :func:`histogram_queries`) and they go through
:func:`~distpriv.modeling.parse_expression` like any other, so no user text reaches an
engine as a statement. Column names are quoted by sqlglot, values are SQL literals.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence

from sqlglot import exp

from ..errors import ParameterError

__all__ = ["histogram_queries"]


def _literal(value: object) -> str:
    if isinstance(value, bool):
        raise ParameterError(f"histogram values must be numbers or strings, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(float(value)):
            raise ParameterError(f"histogram values must be finite, got {value!r}")
        return exp.Literal.number(value).sql(dialect="duckdb")
    if isinstance(value, str):
        return exp.Literal.string(value).sql(dialect="duckdb")
    raise ParameterError(f"histogram values must be numbers or strings, got {value!r}")


def _slug(value: object) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", str(value)).strip("_").lower() or "blank"


def _cells(
    column: str, edges: Sequence[float] | None, values: Sequence[object] | None
) -> list[tuple[str, str]]:
    col = exp.column(column, quoted=True).sql(dialect="duckdb")
    if (edges is None) == (values is None):
        raise ParameterError(f"give exactly one of edges or values for column {column!r}")
    if values is not None:
        if len(values) == 0 or len(set(map(repr, values))) != len(values):
            raise ParameterError(f"values for column {column!r} must be distinct and non-empty")
        return [(f"{_slug(column)}_{_slug(v)}", f"{col} = {_literal(v)}") for v in values]
    # Integral edges stay integers in the SQL (17, not 17.0).
    e = [int(x) if float(x).is_integer() else float(x) for x in edges]  # type: ignore[union-attr]
    if (
        len(e) < 2
        or any(not math.isfinite(x) for x in e)
        or any(b <= a for a, b in itertools.pairwise(e))
    ):
        raise ParameterError(
            f"edges for column {column!r} must be at least two finite increasing numbers, "
            f"got {list(edges)}"  # type: ignore[arg-type]
        )
    out = []
    for a, b in itertools.pairwise(e):
        name = f"{_slug(column)}_{_slug(f'{a:g}')}_{_slug(f'{b:g}')}"
        out.append((name, f"{col} >= {_literal(a)} AND {col} < {_literal(b)}"))
    return out


def histogram_queries(
    column: str,
    *,
    edges: Sequence[float] | None = None,
    values: Sequence[object] | None = None,
    by: str | None = None,
    by_values: Sequence[object] | None = None,
    prefix: str = "n",
) -> dict[str, str]:
    """One ``count_if`` statistic per bin of ``column`` (× each value of ``by``).

    Parameters
    ----------
    column : str
        The column to bin.
    edges : sequence of float, optional
        Increasing bin edges; bin i is ``edges[i] <= column < edges[i+1]``.
    values : sequence of str or number, optional
        One bin per listed value (``column = value``). Give exactly one of edges, values.
    by : str, optional
        A second column: every bin is split by each of ``by_values`` (a two-way table).
    by_values : sequence of str or number, optional
        The values of ``by`` (required with ``by``).
    prefix : str
        Start of every statistic name.

    Returns
    -------
    dict of str → str
        Statistic name → expression, in bin order (``by`` varies fastest): as many
        statistics as bins × len(by_values).

    Examples
    --------
    >>> q = histogram_queries("age", edges=[17, 30, 50])
    >>> q["n_age_17_30"]
    'count_if("age" >= 17 AND "age" < 30)'
    >>> len(histogram_queries("age", edges=range(17, 68), by="sex", by_values=["Female", "Male"]))
    100
    """
    cells = _cells(column, edges, values)
    if by is not None:
        if by_values is None:
            raise ParameterError("by_values is required with by")
        inner = _cells(by, None, by_values)
        cells = [(f"{a}_{b}", f"{p} AND {q}") for a, p in cells for b, q in inner]
    elif by_values is not None:
        raise ParameterError("by_values needs by (the column they belong to)")
    out = {f"{prefix}_{name}": f"count_if({pred})" for name, pred in cells}
    if len(out) != len(cells):
        raise ParameterError("two bins got the same statistic name; rename or merge the bins")
    return out
