"""Queries: a named vector of statistics, as DuckDB SQL aggregates or a Python callable.

Statistics that are sums, counts or means of a row-level expression (``avg(age)``,
``sum(x)``, ``count_if(sex = 'Female')``, ``count(*)``) are *linear*: their value on any
subset is a sum of per-row features, computed once for the whole table. Linear queries take
a fast numpy path for Monte Carlo modelling and admit exact analytic moments
(:func:`distpriv.model_query`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlglot import exp

from ..errors import ParameterError, ParameterTypeError
from .expressions import ParsedExpression, parse_expression
from .tables import MissingReport, Table, as_table, check_missing_policy

__all__ = ["Query", "QueryEvaluation", "Statistic"]


@dataclass(frozen=True)
class Statistic:
    """One released statistic."""

    #: Its name in reports.
    name: str
    #: The SQL aggregate as the user wrote it (for reports; never executed as such).
    expression: str
    #: For linear statistics, the per-row SQL expression whose sum (or mean) it is,
    #: rendered by sqlglot.
    row_expression: str | None
    #: ``"sum"`` or ``"mean"`` for linear statistics.
    scale: str | None
    #: The validated aggregate (``None`` for a callable's output).
    parsed: ParsedExpression | None = field(default=None, compare=False, repr=False)
    #: The validated row expression of a linear statistic.
    row_parsed: ParsedExpression | None = field(default=None, compare=False, repr=False)

    @property
    def linear(self) -> bool:
        """Whether the statistic is a sum or mean of a row-level expression."""
        return self.row_expression is not None


def _tree(s: Statistic) -> ParsedExpression:
    """The validated aggregate of a statistic of a SQL query (every one is parsed)."""
    if s.parsed is None:
        raise ParameterError(f"statistic {s.name!r} has no SQL expression")
    return s.parsed


def _row_tree(s: Statistic) -> ParsedExpression:
    """The validated row expression of a linear statistic."""
    if s.row_parsed is None:
        raise ParameterError(f"statistic {s.name!r} is not linear (no row expression)")
    return s.row_parsed


def _row_sql(s: Statistic) -> str:
    """The rendered row expression of a linear statistic."""
    if s.row_expression is None:
        raise ParameterError(f"statistic {s.name!r} is not linear (no row expression)")
    return s.row_expression


_LINEAR = (exp.Avg, exp.Sum, exp.Count, exp.CountIf)


def _parse(name: str, expr: str) -> Statistic:
    """Validate one statistic and recognise a linear one from its syntax tree."""
    what = f"statistic {name!r}"
    parsed = parse_expression(expr, what=what, kind="aggregate")
    top = parsed.tree
    while isinstance(top, exp.Paren):
        top = top.this
    if not isinstance(top, _LINEAR) or isinstance(top.this, exp.Distinct):
        return Statistic(name, expr, None, None, parsed)
    arg = top.this
    if arg is None or any(isinstance(n, exp.AggFunc) for n in arg.walk()):
        return Statistic(name, expr, None, None, parsed)
    # The row expression is assembled from sqlglot's rendering of the validated argument
    # and re-validated: user text is never spliced.
    if isinstance(top, exp.Count):
        if isinstance(arg, exp.Star):
            row, scale = "1", "sum"
        else:
            row, scale = f"CAST(({arg.sql(dialect='duckdb')}) IS NOT NULL AS INTEGER)", "sum"
    elif isinstance(top, exp.CountIf):
        row = f"CAST(coalesce(CAST(({arg.sql(dialect='duckdb')}) AS BOOLEAN), false) AS INTEGER)"
        scale = "sum"
    else:
        row = arg.sql(dialect="duckdb")
        scale = "mean" if isinstance(top, exp.Avg) else "sum"
    row_parsed = parse_expression(row, what=f"{what} (row expression)", kind="scalar")
    return Statistic(name, expr, row_parsed.sql(), scale, parsed, row_parsed)


@dataclass(frozen=True)
class QueryEvaluation:
    """F on a table, with what the missing-value policy did."""

    #: ndarray, shape (m,)
    value: np.ndarray
    #: Rows the statistics were computed on (after any drop).
    n_rows: int
    missing: MissingReport

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (includes the true values: curator-private)."""
        return {
            "value": self.value.tolist(),
            "n_rows": self.n_rows,
            "missing": self.missing.to_dict(),
        }


class Query:
    """A named vector F of statistics to release.

    Parameters
    ----------
    statistics : mapping of name → SQL aggregate, sequence of SQL aggregates, or callable
        SQL aggregates are evaluated by DuckDB on a table named ``data``. A callable
        receives a pandas DataFrame (one dataset) and returns m numbers.
    names : sequence of str, optional
        Names of the statistics; required for a callable, defaults to the SQL text.
    ranges : mapping of name → (low, high), optional
        The valid range of a statistic (e.g. ``(1, 5)`` for a mean rating, ``(0, inf)`` for a
        count). A release clamps its noisy value to the range and intersects its interval
        with it — post-processing, which costs no privacy — and says so in the report
        (:meth:`clamp`).

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
        ranges: Mapping[str, Sequence[float]] | None = None,
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
        if any(not n.strip() for n in seen):
            raise ParameterError(f"statistic names must not be empty, got {seen}")
        if len(set(seen)) != len(seen):
            raise ParameterError(f"statistic names must be distinct, got {seen}")
        self.ranges: dict[str, tuple[float, float]] = _check_ranges(ranges, seen)

    def range_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds per statistic, shape (m,) each (±inf where undeclared)."""
        lo = np.array([self.ranges.get(n, (-np.inf, np.inf))[0] for n in self.names])
        hi = np.array([self.ranges.get(n, (-np.inf, np.inf))[1] for n in self.names])
        return lo, hi

    def clamp(self, value: Any) -> tuple[np.ndarray, np.ndarray]:
        """Clamp released values to the declared ranges (post-processing: no privacy cost).

        Parameters
        ----------
        value : array_like, shape (m,) or (batch, m)

        Returns
        -------
        clamped : ndarray, same shape
        changed : ndarray of bool, same shape
            Where a value lay outside its range and was moved to the nearest bound.
        """
        v = np.asarray(value, dtype=np.float64)
        lo, hi = self.range_bounds()
        out = np.clip(v, lo, hi)
        return out, out != v

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
        """JSON-safe description (name → expression; declared ranges are in ``ranges``)."""
        return {s.name: s.expression for s in self.statistics}

    # -- evaluation -------------------------------------------------------------------

    @property
    def columns(self) -> frozenset[str]:
        """Columns the SQL statistics reference (empty for a callable)."""
        out: set[str] = set()
        for s in self.statistics:
            if s.parsed is not None:
                out |= s.parsed.columns
        return frozenset(out)

    def check_columns(self, table: Table) -> None:
        """Raise :class:`ParameterError` naming a statistic that uses an unknown column."""
        for s in self.statistics:
            if s.parsed is not None:
                s.parsed.check_columns(table.columns)

    def row_features(self, table: Table) -> np.ndarray:
        """Per-row features of a linear query, shape (n_rows, m) (row-level path)."""
        self.check_columns(table)
        return table.row_values(
            [_row_sql(s) for s in self.statistics],
            [f"statistic {s.name!r} ({s.expression})" for s in self.statistics],
        )

    def evaluate(self, data: Any, *, missing: str = "error") -> np.ndarray:
        """F on a whole table, shape (m,); see :meth:`evaluation`."""
        return self.evaluation(data, missing=missing).value

    def evaluation(
        self, data: Any, *, missing: str = "error", also: Iterable[str] = ()
    ) -> QueryEvaluation:
        """F on a whole table, computed in its engine (DuckDB or Spark), with the NULL policy.

        Parameters
        ----------
        data : DataFrame, Arrow table, CSV/Parquet path, DuckDB relation, Spark DataFrame
            or Table
        missing : {"error", "drop"}
            NULL/NaN in a column a statistic uses: ``"error"`` raises naming the column and
            the count; ``"drop"`` leaves those rows out and reports how
            many (:attr:`QueryEvaluation.missing`). A Python callable receives the table
            as a DataFrame, NULLs included: it handles them itself.
        also : iterable of str
            Further columns the policy covers (the secret's): those the table has are
            checked (``"error"``) or filtered (``"drop"``) like the statistics' own, since
            the released rows are the rows whose property the secret describes.

        Returns
        -------
        QueryEvaluation
        """
        table = as_table(data)
        if self.function is not None:
            report = MissingReport(missing, ())
            return QueryEvaluation(self._call(table.frame), table.n_rows, report)
        self.check_columns(table)
        check_missing_policy(missing)
        exprs = [_tree(s).sql() for s in self.statistics]
        what = [f"statistic {s.name!r} ({s.expression})" for s in self.statistics]
        # One query: the statistics and the NULL/NaN counts of their columns. Only when
        # something is missing does a second query (the errors or the drop) follow.
        have = {c.lower() for c in table.columns}
        used = self.columns | {c for c in also if c.lower() in have}
        value = table.aggregate(exprs, what, missing_in=used)
        report = MissingReport(missing, tuple(sorted(used)))
        if table.last_missing:
            table, report = table.complete(
                used,
                missing=missing,
                what="released data",
                counts=table.last_missing,
                rows_missing=table.last_missing_rows,
            )
            value = table.aggregate(exprs, what)
        return QueryEvaluation(value, table.n_rows, report)

    def check_on(self, data: Any) -> None:
        """Compute the SQL statistics once on ``data`` (one query), before any modelling:
        a statistic the engine cannot compute there (a text column in ``avg``, a bad cast)
        is named alone with the engine's reason. A callable is not checked here."""
        if self.function is not None:
            return
        table = as_table(data)
        self.check_columns(table)
        exprs = [_tree(s).sql() for s in self.statistics]
        table.check_aggregates(
            exprs, [f"statistic {s.name!r} ({s.expression})" for s in self.statistics]
        )

    def evaluate_subsets(self, table: Table, rows: np.ndarray) -> np.ndarray:
        """F on each row set ``rows[r]`` (shape (s, n)) without the linear fast path."""
        if self.function is not None:
            return np.stack([self._call(table.subset_frame(r)) for r in rows])
        self.check_columns(table)
        return table.aggregate(
            [_tree(s).sql() for s in self.statistics],
            [f"statistic {s.name!r} ({s.expression})" for s in self.statistics],
            rows=rows,
        )

    def _call(self, frame: Any) -> np.ndarray:
        if self.function is None:  # only called on a callable's query
            raise ParameterError("the query has no callable")
        names = ", ".join(map(repr, self.names))
        try:
            result = self.function(frame)
        except ParameterError:
            raise
        except Exception as exc:  # a user's callable: any failure becomes one clear line
            raise ParameterError(
                f"the query callable (statistics {names}) failed on a dataset of "
                f"{len(frame)} rows: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            out = np.asarray(result, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ParameterError(
                f"the query callable (statistics {names}) did not return numbers: {exc}"
            ) from exc
        if out.shape != (self.dim,):
            raise ParameterError(
                f"the query callable returned {out.size} values for {self.dim} names"
            )
        if not np.all(np.isfinite(out)):
            bad = ", ".join(
                repr(n) for n, v in zip(self.names, out, strict=True) if not np.isfinite(v)
            )
            raise ParameterError(
                f"the query callable returned NaN or infinite values for statistic(s) {bad} "
                f"on a dataset of {len(frame)} rows"
            )
        return out


def _check_ranges(ranges: Any, names: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Validate ``ranges``: known statistic names, two numbers each, low < high, no NaN."""
    if ranges is None:
        return {}
    if not isinstance(ranges, Mapping):
        raise ParameterTypeError(
            f"ranges must map statistic names to [low, high], got {type(ranges).__name__}"
        )
    out: dict[str, tuple[float, float]] = {}
    for name, bounds in ranges.items():
        if name not in names:
            raise ParameterError(
                f"ranges: {name!r} is not a statistic of the query (statistics: "
                f"{', '.join(map(repr, names))})"
            )
        try:
            lo, hi = (float(b) for b in bounds)
        except (TypeError, ValueError):
            raise ParameterError(
                f"ranges: {name!r} must be [low, high] (two numbers), got {bounds!r}"
            ) from None
        if isinstance(bounds, str) or np.isnan(lo) or np.isnan(hi) or not lo < hi:
            raise ParameterError(
                f"ranges: {name!r} must be [low, high] with low < high, got {bounds!r}"
            )
        out[str(name)] = (lo, hi)
    return out
