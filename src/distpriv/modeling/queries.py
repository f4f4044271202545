"""Queries: a named vector of statistics, as DuckDB SQL aggregates or a Python callable.

Statistics that are sums, counts or means of a row-level expression (``avg(age)``,
``sum(x)``, ``count_if(sex = 'Female')``, ``count(*)``) are *linear*: their value on any
subset is a sum of per-row features, computed once for the whole table. Linear queries take
a fast numpy path for Monte Carlo modelling and admit exact analytic moments
(:func:`distpriv.model_query`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from .tables import Table, as_table

__all__ = ["Query", "Statistic"]

_AGG = re.compile(r"^\s*(avg|mean|sum|count_if|count)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)


def _balanced(text: str) -> bool:
    """True when the parentheses of ``text`` balance and never close more than they open."""
    depth, quote = 0, None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and quote is None


@dataclass(frozen=True)
class Statistic:
    """One released statistic.

    Attributes
    ----------
    name : str
        Its name in reports.
    expression : str
        The SQL aggregate.
    row_expression : str or None
        For linear statistics, the per-row SQL expression whose sum (or mean) it is.
    scale : str or None
        ``"sum"`` or ``"mean"`` for linear statistics.
    """

    name: str
    expression: str
    row_expression: str | None
    scale: str | None

    @property
    def linear(self) -> bool:
        """Whether the statistic is a sum or mean of a row-level expression."""
        return self.row_expression is not None


def _parse(name: str, expr: str) -> Statistic:
    match = _AGG.match(expr)
    if match is None or not _balanced(match.group(2)):
        return Statistic(name, expr, None, None)
    func, arg = match.group(1).lower(), match.group(2).strip()
    if re.match(r"(?i)^distinct\b", arg) or not arg:
        return Statistic(name, expr, None, None)
    if func == "count":
        row = "1" if arg == "*" else f"(({arg}) IS NOT NULL)"
        return Statistic(name, expr, row, "sum")
    if func == "count_if":
        return Statistic(name, expr, f"coalesce(CAST(({arg}) AS BOOLEAN), false)", "sum")
    return Statistic(name, expr, arg, "mean" if func in ("avg", "mean") else "sum")


class Query:
    """A named vector F of statistics to release.

    Parameters
    ----------
    statistics : mapping of name → SQL aggregate, sequence of SQL aggregates, or callable
        SQL aggregates are evaluated by DuckDB on a table named ``data``. A callable
        receives a pandas DataFrame (one dataset) and returns m numbers.
    names : sequence of str, optional
        Names of the statistics; required for a callable, defaults to the SQL text.

    Examples
    --------
    >>> q = Query({"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"})
    >>> q.names, q.is_linear
    (('avg_age', 'n_female'), True)
    """

    def __init__(
        self,
        statistics: Mapping[str, str] | Sequence[str] | Callable[[Any], Any],
        *,
        names: Sequence[str] | None = None,
    ) -> None:
        self.function: Callable[[Any], Any] | None = None
        if callable(statistics) and not isinstance(statistics, Mapping):
            if names is None:
                raise ParameterError("names is required when statistics is a callable")
            self.function = statistics
            self.statistics: tuple[Statistic, ...] = tuple(
                Statistic(str(n), "<callable>", None, None) for n in names
            )
        else:
            if isinstance(statistics, Mapping):
                items = [(str(k), v) for k, v in statistics.items()]
            elif isinstance(statistics, Sequence) and not isinstance(statistics, str):
                items = [(str(v), v) for v in statistics]
            else:
                raise ParameterTypeError(
                    "statistics must be a mapping of name to SQL aggregate, a list of SQL "
                    f"aggregates, or a callable; got {type(statistics).__name__}"
                )
            for name, expr in items:
                if not isinstance(expr, str) or not expr.strip():
                    raise ParameterTypeError(
                        f"statistic {name!r} must be a non-empty SQL string, got {expr!r}"
                    )
            if names is not None:
                if len(names) != len(items):
                    raise ParameterError(
                        f"names has {len(names)} entries for {len(items)} statistics"
                    )
                items = [(str(n), e) for n, (_, e) in zip(names, items, strict=True)]
            self.statistics = tuple(_parse(n, e) for n, e in items)
        if not self.statistics:
            raise ParameterError("a query needs at least one statistic")
        seen = [s.name for s in self.statistics]
        if len(set(seen)) != len(seen):
            raise ParameterError(f"statistic names must be distinct, got {seen}")

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the m statistics."""
        return tuple(s.name for s in self.statistics)

    @property
    def dim(self) -> int:
        """Number m of statistics."""
        return len(self.statistics)

    @property
    def is_linear(self) -> bool:
        """All statistics are sums/means of row expressions (fast path, analytic moments)."""
        return self.function is None and all(s.linear for s in self.statistics)

    def __repr__(self) -> str:
        body = ", ".join(f"{s.name}={s.expression!r}" for s in self.statistics)
        return f"Query({body})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return {s.name: s.expression for s in self.statistics}

    # -- evaluation -------------------------------------------------------------------

    def row_features(self, table: Table) -> np.ndarray:
        """Per-row features of a linear query, shape (n_rows, m)."""
        return table.row_values(
            [s.row_expression for s in self.statistics],
            [f"statistic {s.name!r} ({s.expression})" for s in self.statistics],
        )

    def evaluate(self, data: Any) -> np.ndarray:
        """F on a whole table (DataFrame, Arrow table, path or Table), shape (m,)."""
        table = as_table(data)
        if self.function is not None:
            return self._call(table.frame)
        return table.aggregate(
            [s.expression for s in self.statistics],
            [f"statistic {s.name!r} ({s.expression})" for s in self.statistics],
        )

    def evaluate_subsets(self, table: Table, rows: np.ndarray) -> np.ndarray:
        """F on each row set ``rows[r]`` (shape (s, n)) without the linear fast path."""
        if self.function is not None:
            return np.stack([self._call(table.subset_frame(r)) for r in rows])
        return table.aggregate(
            [s.expression for s in self.statistics],
            [f"statistic {s.name!r} ({s.expression})" for s in self.statistics],
            rows=rows,
        )

    def _call(self, frame: Any) -> np.ndarray:
        try:
            out = np.asarray(self.function(frame), dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"the query callable did not return numbers: {exc}") from exc
        if out.shape != (self.dim,):
            raise ParameterError(
                f"the query callable returned {out.size} values for {self.dim} names"
            )
        if not np.all(np.isfinite(out)):
            raise ParameterError("the query callable returned NaN or infinite values")
        return out
