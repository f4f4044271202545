"""Numbers in generated SQL as typed literals, never as Python's ``repr`` spliced into text.

Why: ``f"... - ({x!r})"`` with a data-derived ``x`` that overflowed to ``inf`` became the SQL
``- (inf)``, which DuckDB reads as a column name (``Binder Error: Referenced column "inf" not
found``); ``nan`` the same. :func:`sql_double` always yields a ``DOUBLE`` expression that
DuckDB and Spark SQL parse alike, whatever the value.
"""

from __future__ import annotations

import math
import numbers

from ..errors import ParameterTypeError

__all__ = ["sql_double"]


def sql_double(value: float) -> str:
    """``value`` as a SQL ``DOUBLE`` literal: ``CAST(<repr> AS DOUBLE)``.

    Parameters
    ----------
    value : real number
        Any float, including ``inf``, ``-inf`` and ``nan`` (written as the strings
        ``'Infinity'``, ``'-Infinity'`` and ``'NaN'``, which both engines cast).

    Returns
    -------
    str
        A parenthesised SQL expression of type ``DOUBLE``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"a SQL number must be real, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(x):
        return "CAST('Infinity' AS DOUBLE)" if x > 0 else "CAST('-Infinity' AS DOUBLE)"
    return f"CAST({x!r} AS DOUBLE)"  # repr of a finite float is a valid SQL numeral
