"""What a secret is, as the ledger counts it: its canonical SQL and its keyed meaning.

A property's budget is only a budget if rewording the property cannot open a fresh
account. Two layers decide when two secrets are one:

* :func:`canonical_sql` — the predicate or expression as sqlglot parses it, rendered after
  the rewrites that never change its value: parentheses dropped, identifiers and keywords
  in one case, the operands of ``=``, ``<>``, ``AND``, ``OR``, ``+`` and ``*`` in a fixed
  order, ``<``/``>`` comparisons with the operands in that order (the operator mirrored),
  IN-lists sorted and deduplicated, and casts of a literal to its own type dropped. It is
  a text key with no data in it, shown in reports.
* :func:`secret_accounts` — beyond syntax: what the secret *computes on the released rows*.
  Each row's value of the secret (a proportion's predicate as 1/0, NULL counted as false
  as the model counts it; a mean's expression) is mapped affinely onto [0, 1] (minimum to
  0, maximum to 1), oriented so that the mapped values average at most one half (both
  orientations are digested when they tie, and the smaller digest kept), rounded to nine
  decimals, and fingerprinted together with the row it belongs to by the engine's keyed,
  order-blind multiset fingerprint (:func:`~distpriv.modeling.identity.fingerprint_sums`).
  So ``gender = 'female'`` and ``lower(gender) = 'female'`` on a lower-case column, a
  predicate and its complement, and ``age`` and ``age * 12`` have one account on the
  same rows, whatever their spelling, while two predicates that select different rows
  keep two. The digest is an HMAC under the ledger's key: no one without the key can test
  a guessed predicate or table against it.

Merging errs on the side of privacy: two secrets merged by mistake (e.g. two expressions
constant on the released rows) only compose more releases together.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ..errors import ParameterError
from .expressions import quiet_sqlglot
from .sql_literals import sql_double

__all__ = [
    "MEANING_PREFIX",
    "canonical_sql",
    "check_distinct_attributes",
    "secret_accounts",
    "secret_texts",
]

MEANING_PREFIX = "meaning-hmac-sha256:"
_VERSION = "distpriv-secret-meaning-v1"
_DIGITS = 9  # decimals kept of the mapped values: affine images agree to float rounding
_VALUE = "__distpriv_secret_value"

_COMMUTATIVE = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Add, exp.Mul)
_MIRROR: dict[type, type] = {exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE}
_TEXT_TYPES = {exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR}


def _key(node: exp.Expr) -> str:
    return node.sql(dialect="duckdb")


def _swap(a: exp.Expr, b: exp.Expr) -> bool:
    """Whether ``a op b`` is written ``b op a``: literals to the right, else by text."""
    return (isinstance(a, exp.Literal), _key(a)) > (isinstance(b, exp.Literal), _key(b))


def _sides(node: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    return node.args["this"], node.args["expression"]


def _flatten(node: exp.Expr, kind: type) -> list[exp.Expr]:
    if isinstance(node, kind):
        a, b = _sides(node)
        return _flatten(a, kind) + _flatten(b, kind)
    return [node]


def _rewrite(node: exp.Expr) -> exp.Expr:
    """One bottom-up step of :func:`canonical_sql` (children are already canonical)."""
    if isinstance(node, exp.Paren):
        return node.this
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        to = node.args.get("to")
        lit = node.this
        if isinstance(to, exp.DataType):
            if lit.is_string and to.this in _TEXT_TYPES and not to.expressions:
                return lit
            if not lit.is_string and to.this == exp.DataType.Type.DOUBLE:
                return lit
    if isinstance(node, exp.And | exp.Or):
        kind = type(node)
        parts = sorted({_key(p): p for p in _flatten(node, kind)}.items())
        out = parts[0][1]
        for _, p in parts[1:]:
            out = kind(this=out, expression=p)
        return out
    if isinstance(node, _COMMUTATIVE):
        a, b = _sides(node)
        if _swap(a, b):
            return type(node)(this=b, expression=a)
        return node
    if type(node) in _MIRROR:
        a, b = _sides(node)
        if _swap(a, b):
            return _MIRROR[type(node)](this=b, expression=a)
        return node
    if isinstance(node, exp.In) and node.expressions:
        items = sorted({_key(e): e for e in node.expressions}.items())
        return exp.In(this=node.this, expressions=[e for _, e in items])
    return node


def canonical_sql(text: str) -> str:
    """The canonical spelling of a predicate or row expression (DuckDB dialect).

    Parameters
    ----------
    text : str
        A SQL expression, e.g. ``"('female' = Gender)"``.

    Returns
    -------
    str
        sqlglot's rendering after the value-preserving rewrites listed in the module
        docstring, e.g. ``"gender = 'female'"`` for ``gender='female'``,
        ``'female' = gender`` and ``(GENDER = 'female')`` alike. Text sqlglot cannot parse
        is returned with its whitespace normalised (the validation elsewhere names it).
    """
    plain = " ".join(str(text).split())
    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(plain, read="duckdb")
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError):
        return plain
    if tree is None:
        return plain
    tree = normalize_identifiers(tree, dialect="duckdb")
    # Quoted identifiers keep their case in normalize_identifiers; DuckDB (and Spark)
    # resolve column names case-insensitively, so the key lowers them too.
    for col in tree.find_all(exp.Identifier):
        col.set("this", str(col.this).lower())
        col.set("quoted", False)
    return _bottom_up(tree).sql(dialect="duckdb")


def _bottom_up(node: exp.Expr) -> exp.Expr:
    """:func:`_rewrite` applied to the children first, then to ``node``: the order of
    commuted operands is decided on their canonical forms."""
    for name, value in list(node.args.items()):
        if isinstance(value, exp.Expr):
            node.set(name, _bottom_up(value))
        elif isinstance(value, list):
            node.set(name, [_bottom_up(v) if isinstance(v, exp.Expr) else v for v in value])
    return _rewrite(node)


def secret_texts(secret: Any) -> tuple[tuple[str, str], ...]:
    """(kind, SQL text) of each attribute of ``secret``: ``("proportion", predicate)`` or
    ``("mean", expression)``; several secrets give one item per attribute."""
    attrs = getattr(secret, "attributes", None) or (secret,)
    out = []
    for a in attrs:
        a = getattr(a, "source", None) or a  # events: the proportion or mean they range over
        expression = getattr(a, "expression", None)
        if expression is not None:
            out.append(("mean", str(expression)))
        else:
            out.append(("proportion", str(a.predicate)))
    return tuple(out)


def _row_value(kind: str, text: str, table: Any) -> str:
    sql = table.safe_sql(text, f"secret {text!r}", "scalar")
    if kind == "proportion":
        return f"CASE WHEN coalesce(CAST(({sql}) AS BOOLEAN), false) THEN 1.0 ELSE 0.0 END"
    return f"CAST(({sql}) AS DOUBLE)"


def _digest(table: Any, key: bytes, value: str, flip: bool) -> str:
    from .identity import fingerprint_sums

    mapped = f"(1.0 - ({value}))" if flip else value
    rounded = f"round({mapped}, {_DIGITS})"  # DuckDB SQL, generated from validated text
    if table.dialect == "spark":  # the fingerprint's query is written in the engine's SQL
        rounded = table.engine.translate(rounded)
    count, sums = fingerprint_sums(table, key, list(table.columns), extra={_VALUE: rounded})
    message = json.dumps([_VERSION, sorted(table.columns), count, sums]).encode()
    return MEANING_PREFIX + hmac.new(key, message, hashlib.sha256).hexdigest()


def _one_account(table: Any, key: bytes, kind: str, text: str) -> str:
    raw = _row_value(kind, text, table)
    what = f"the secret's values ({text})"
    # One scan for the span and the mean: the mapped values' mean is (mean − low) / span.
    low, high, avg = table.engine.query(
        f"SELECT min(v), max(v), avg(v) FROM (SELECT {raw} AS v FROM {table.engine.relation}) AS s",
        what,
    )[0]
    if low is None or high is None or not high > low:
        value = f"CASE WHEN ({raw}) IS NULL THEN NULL ELSE 0.0 END"  # constant on these rows
        return _digest(table, key, value, flip=False)
    scale = sql_double(float(high) - float(low))
    value = f"((({raw}) - {sql_double(float(low))}) / {scale})"
    mean = (float(avg) - float(low)) / (float(high) - float(low))
    if abs(mean - 0.5) > 1e-9:
        return _digest(table, key, value, flip=mean > 0.5)
    return min(_digest(table, key, value, flip=False), _digest(table, key, value, flip=True))


def secret_accounts(table: Any, secret: Any, *, key: bytes) -> tuple[str, ...]:
    """The keyed meaning of each attribute of ``secret`` on the released rows.

    Parameters
    ----------
    table : Table or anything :func:`~distpriv.modeling.tables.as_table` reads
        The released rows.
    secret : Secret
        A proportion, mean or several secret (one account per attribute).
    key : bytes
        The ledger's identity key (≥ 16 bytes).

    Returns
    -------
    tuple of str
        ``"meaning-hmac-sha256:<64 hex>"`` per attribute: equal for two secrets whose
        values on these rows are affine images of each other (a predicate and its
        complement included), in any row order; unrelated to any unkeyed digest.

    Raises
    ------
    ParameterError
        Two attributes of one several secret that are one property on these rows (naming
        both); an expression the table cannot evaluate (naming it).
    """
    from .identity import _check_key
    from .tables import as_table

    k = _check_key(key)
    tab = as_table(table)
    texts = secret_texts(secret)
    out: list[str] = []
    for kind, text in texts:
        acct = _one_account(tab, k, kind, text)
        if acct in out:
            first = texts[out.index(acct)][1]
            raise ParameterError(
                f"secret attributes {first!r} and {text!r} are one property on the released "
                "rows (they select the same rows, or complementary ones, or one is an affine "
                "image of the other): hide it once, as one attribute"
            )
        out.append(acct)
    return tuple(out)


def check_distinct_attributes(table: Any, secret: Any) -> None:
    """Refuse several secrets at once whose attributes are one property on ``table``.

    Before any modelling, with or without a ledger (a fresh key: only equality within
    this call matters). Does nothing for a secret with one attribute.

    Raises
    ------
    ParameterError
        Naming both attributes (:func:`secret_accounts`).
    """
    if len(getattr(secret, "attributes", ()) or ()) > 1:
        from .identity import new_identity_key

        secret_accounts(table, secret, key=new_identity_key())
