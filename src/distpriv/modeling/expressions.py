"""User-supplied SQL, parsed and locked down: one expression over the named table, nothing else.

Statistics (``avg(age)``) and secret predicates (``income = '>50K'``) come from configs that a
curator may not have written. They are parsed with sqlglot (DuckDB dialect) into a syntax tree
and accepted only when the tree is a single expression built from an allow-list of node types
and scalar/aggregate functions, whose column references all name columns of the table. What
reaches an engine is the tree rendered back to SQL by sqlglot (DuckDB, or Spark SQL through
sqlglot's translation), never the user's text: no statements (``;``, ``COPY``, ``ATTACH``,
``SET``), no subqueries, no table functions (``read_text``, ``read_csv``, ``glob``), no
functions that read settings or the environment (``getenv``, ``current_setting``), no
window functions. The engines add a second wall (DuckDB with ``enable_external_access=false``
and a locked configuration, :mod:`distpriv.modeling.engines`).

This is the locked-down SQL (user expressions parsed, never spliced); the statistics are
the query F of Chen & Ohrimenko 2023, §3 and §5.1.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import ParameterError, ParameterTypeError


def _drop(record: logging.LogRecord) -> bool:
    return False


@contextlib.contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """Keep sqlglot's own log lines (e.g. "Falling back to parsing as a 'Command'") off
    stderr while we parse untrusted text: our error already says what is wrong, once."""
    logger = logging.getLogger("sqlglot")
    logger.addFilter(_drop)
    try:
        yield
    finally:
        logger.removeFilter(_drop)


__all__ = [
    "ALLOWED_FUNCTIONS",
    "ParsedExpression",
    "SqlTextHolder",
    "parse_expression",
    "quote_column",
]

# Longer texts are refused before parsing (deeply nested input exhausts the parser's stack).
_MAX_LENGTH = 10_000

# Structural nodes an expression may contain (operators, literals, casts, CASE ...).
_NODES: tuple[type[exp.Expression], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.Neg,
    exp.Not,
    exp.And,
    exp.Or,
    exp.Xor,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.IntDiv,
    exp.Mod,
    exp.EQ,
    exp.NEQ,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Tuple,
    exp.DataType,
    exp.Star,
    exp.Distinct,
    exp.DPipe,
)

# Scalar and aggregate functions: pure computations on their arguments (no I/O, no
# settings, no randomness). Keyed by sqlglot's class, so spelling or quoting cannot alias
# another function.
_FUNCTIONS: tuple[type[exp.Func], ...] = (
    # aggregates
    exp.Avg,
    exp.Sum,
    exp.Count,
    exp.CountIf,
    exp.Min,
    exp.Max,
    exp.Median,
    exp.Stddev,
    exp.StddevPop,
    exp.StddevSamp,
    exp.Variance,
    exp.VariancePop,
    exp.PercentileCont,
    exp.PercentileDisc,
    exp.Quantile,
    exp.CovarPop,
    exp.CovarSamp,
    exp.Corr,
    # scalar
    exp.Case,
    exp.If,
    exp.Cast,
    exp.TryCast,
    exp.Coalesce,
    exp.Nullif,
    exp.Abs,
    exp.Sign,
    exp.Ln,
    exp.Log,
    exp.Exp,
    exp.Sqrt,
    exp.Pow,
    exp.Round,
    exp.Floor,
    exp.Ceil,
    exp.Greatest,
    exp.Least,
    exp.IsNan,
    exp.IsInf,
    exp.Lower,
    exp.Upper,
    exp.Length,
    exp.Substring,
    exp.Trim,
    exp.Concat,
    exp.StartsWith,
)

# Functions sqlglot does not model as classes, allowed by name (DuckDB spelling).
_ANONYMOUS = frozenset({"mean", "isfinite", "ends_with", "contains"})

ALLOWED_FUNCTIONS: tuple[str, ...] = tuple(
    sorted({f.sql_names()[0].lower() for f in _FUNCTIONS} | _ANONYMOUS)
)


@dataclass(frozen=True)
class ParsedExpression:
    """A validated single SQL expression."""

    #: The user's text (for messages and reports only; never executed).
    text: str
    # exp.Expr is the base of every node in recent sqlglot (exp.Expression derives from it);
    # annotations are strings here, so releases without the name still import this module.
    #: The validated syntax tree.
    tree: exp.Expr
    #: The column names it references (as written, case preserved).
    columns: frozenset[str]
    #: Whether it contains an aggregate function.
    aggregate: bool
    #: What it is, for messages (e.g. ``"statistic 'avg_age'"``).
    what: str

    def sql(self, dialect: str = "duckdb") -> str:
        """The expression rendered by sqlglot for ``dialect`` (``"duckdb"`` or ``"spark"``)."""
        return self.tree.sql(dialect=dialect)

    def check_columns(self, columns: Iterable[str]) -> None:
        """Raise :class:`ParameterError` naming any referenced column not in ``columns``.

        Matching is case-insensitive, as in DuckDB and Spark SQL.
        """
        known = {c.lower() for c in columns}
        unknown = sorted(c for c in self.columns if c.lower() not in known)
        if unknown:
            listed = ", ".join(sorted(columns))
            raise ParameterError(
                f"{self.what} ({self.text}) refers to unknown column {unknown[0]!r}; the table "
                f"has columns: {listed}"
            )


class SqlTextHolder:
    """Mixin of the secrets defined by one SQL text: its parse tree and its columns.

    The class sets ``_parsed`` (a :class:`ParsedExpression`) when it is constructed; the
    proportion, mean and mean-grid secrets share these two read-only views of it.
    """

    __slots__ = ()
    if TYPE_CHECKING:
        _parsed: ParsedExpression

    @property
    def parsed(self) -> ParsedExpression:
        """The validated SQL text (render it with ``.sql()``; never run the raw text)."""
        return self._parsed

    @property
    def columns(self) -> frozenset[str]:
        """Columns the SQL text references."""
        return self._parsed.columns


def quote_column(name: str, dialect: str = "duckdb") -> str:
    """A column name as a quoted SQL identifier, rendered by sqlglot."""
    return exp.column(name, quoted=True).sql(dialect=dialect)


def _reject(what: str, text: str, reason: str) -> ParameterError:
    return ParameterError(f"{what} ({text}) is not allowed: {reason}")


def _check_node(node: exp.Expr, what: str, text: str) -> None:
    if isinstance(node, exp.Anonymous):
        name = str(node.name).lower()
        if name not in _ANONYMOUS:
            raise _reject(what, text, f"function {node.name!r} is not on the allow-list")
        return
    if isinstance(node, exp.Query | exp.Subquery | exp.Table | exp.From):
        raise _reject(what, text, "subqueries and table references are not allowed")
    if isinstance(node, exp.Window):
        raise _reject(what, text, "window functions are not allowed")
    if not isinstance(node, _NODES + _FUNCTIONS):
        if isinstance(node, exp.Func):
            name = node.sql_name().lower()
            raise _reject(what, text, f"function {name!r} is not on the allow-list")
        raise _reject(what, text, f"SQL construct {type(node).__name__} is not allowed")
    if isinstance(node, exp.Column) and (node.table or node.args.get("db")):
        raise _reject(
            what, text, f"qualified column {node.sql()!r}: name columns of the table directly"
        )
    if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
        raise _reject(what, text, "'*' is only allowed in count(*)")
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        raise _reject(what, text, "subqueries are not allowed")


def parse_expression(
    text: str,
    *,
    what: str,
    kind: str = "any",
    columns: Iterable[str] | None = None,
) -> ParsedExpression:
    """Parse and validate one SQL expression (DuckDB dialect).

    Parameters
    ----------
    text : str
        The expression, e.g. ``"avg(age)"`` or ``"income = '>50K'"``.
    what : str
        What it is, for error messages (``"statistic 'avg_age'"``, ``"secret predicate"``).
    kind : {"any", "aggregate", "scalar"}
        ``"aggregate"`` requires an aggregate (a statistic); ``"scalar"`` forbids one (a
        row expression or predicate).
    columns : iterable of str, optional
        The table's columns; when given, every column reference must be one of them.

    Returns
    -------
    ParsedExpression

    Raises
    ------
    ParameterTypeError
        ``text`` is not a string.
    ParameterError
        Empty or unparsable text, more than one statement, a statement rather than an
        expression, a subquery, a function off the allow-list, a window function, a
        qualified or unknown column, or the wrong ``kind``. The message names ``what``
        and quotes the user's text, never data.
    """
    if not isinstance(text, str):
        raise ParameterTypeError(f"{what} must be a SQL string, got {type(text).__name__}")
    if not text.strip():
        raise ParameterError(f"{what} is empty")
    if len(text) > _MAX_LENGTH:
        raise ParameterError(f"{what} is {len(text)} characters long (at most {_MAX_LENGTH})")
    if kind not in ("any", "aggregate", "scalar"):
        raise ParameterError(f"kind must be 'any', 'aggregate' or 'scalar', got {kind!r}")
    parsed = _parse_validated(text, what, kind)
    if columns is not None:
        parsed.check_columns(columns)
    return parsed


# A release parses each statistic several times (the query, its row expression, each
# engine query built from it): 100 statistics took ~2 s of sqlglot parsing per release.
# The result depends only on (text, what, kind) and is never mutated; errors are not cached.
@functools.lru_cache(maxsize=4096)
def _parse_validated(text: str, what: str, kind: str) -> ParsedExpression:
    try:
        with quiet_sqlglot():
            trees = [t for t in sqlglot.parse(text, read="duckdb") if t is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ParameterError(f"{what} ({text}) is not valid SQL: {first}") from exc
    except RecursionError as exc:
        raise ParameterError(f"{what} ({text}) is nested too deeply") from exc
    if len(trees) != 1:
        raise _reject(what, text, "exactly one expression is expected (no ';', no statements)")
    tree = trees[0]
    if isinstance(tree, exp.Query | exp.Subquery) or not isinstance(tree, exp.Condition):
        raise _reject(what, text, f"a {type(tree).__name__} statement is not an expression")
    for node in tree.walk():
        _check_node(node, what, text)
    # DuckDB's alias mean(x) is avg(x): one spelling, so that it is recognised as an
    # aggregate (and as linear) and translates to Spark.
    tree = tree.transform(
        lambda n: (
            exp.Avg(this=n.expressions[0])
            if isinstance(n, exp.Anonymous)
            and str(n.name).lower() == "mean"
            and len(n.expressions) == 1
            else n
        )
    )
    # What runs is the rendering, so the rendering is what is validated: re-parse it and
    # check it again (sqlglot accepts a few malformed literals, e.g. ".0.0", whose rendering
    # parses to something else).
    rendered = tree.sql(dialect="duckdb")
    try:
        with quiet_sqlglot():
            reparsed = sqlglot.parse_one(rendered, read="duckdb")
    except SqlglotError as exc:
        raise ParameterError(f"{what} ({text}) is not valid SQL") from exc
    for node in reparsed.walk():
        _check_node(node, what, text)
    if reparsed.sql(dialect="duckdb") != rendered:
        raise ParameterError(f"{what} ({text}) is not valid SQL")
    tree = reparsed
    is_agg = any(isinstance(n, exp.AggFunc) for n in tree.walk())
    if kind == "aggregate" and not is_agg:
        raise _reject(what, text, "a statistic must be an aggregate such as avg(x) or count(*)")
    if kind == "scalar" and is_agg:
        raise _reject(what, text, "an aggregate is not allowed here (a row-level expression)")
    cols = frozenset(str(c.name) for c in tree.find_all(exp.Column))
    return ParsedExpression(text=text, tree=tree, columns=cols, aggregate=is_agg, what=what)
