"""Mean secrets: the average over the released dataset of a row expression.

Zhang, Ohrimenko & Cummings 2022, §3, Def. 4: a secret is a function over an attribute's
values across all records, e.g. "the average income of individuals in a dataset"; the
pairs Q of its values must be indistinguishable. Here the function is the dataset's mean of
a validated SQL row expression (a column or an arithmetic expression over columns), and
its values are listed; the model of the statistics given each value is built by
:func:`distpriv.modeling.model_mean.mean_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_real
from .expressions import ParsedExpression, SqlTextHolder, parse_expression

__all__ = ["MAX_MEAN_VALUES", "MeanSecret"]

# Every value is a hypothesis the model conditions on and the calibration checks: on Adult
# (5 statistics, 100 rows, within = 0.05) 101 values took 0.4 GiB and 1,001 took 1.5 GiB;
# 10,000 ran past 3 GiB. Ranges of the average belong to kind = "event" (a bounded grid).
MAX_MEAN_VALUES = 201


def resolve_pairs(
    vals: tuple[float, ...],
    pairs: Sequence[Sequence[float]] | None,
    within: float | None,
) -> tuple[tuple[float, float], ...]:
    """Ψ from explicit ``pairs``, from ``within`` (every pair at most k apart, Chen &
    Ohrimenko 2023 Ex. 2.1) or, by default, every pair of ``vals``."""
    if pairs is not None and within is not None:
        raise ParameterError("give either pairs or within, not both")
    if pairs is not None:
        if isinstance(pairs, str) or not isinstance(pairs, Sequence | np.ndarray):
            raise ParameterTypeError(f"pairs must be a sequence of value pairs, got {pairs!r}")
        out = []
        for pair in pairs:
            if (
                isinstance(pair, str)
                or not isinstance(pair, Sequence | np.ndarray)
                or len(pair) != 2
                or any(p not in vals for p in pair)
                or pair[0] == pair[1]
            ):
                raise ParameterError(
                    f"pairs entry {pair!r} must join two different values of {vals}"
                )
            out.append((float(pair[0]), float(pair[1])))
        if not out:
            raise ParameterError("pairs must hold at least one pair")
        return tuple(out)
    if within is not None:
        k = check_real(within, "within", low=0.0, low_inclusive=False)
        found = [
            (a, b)
            for i, a in enumerate(vals)
            for b in vals[i + 1 :]
            if abs(a - b) <= k * (1 + 1e-12) + 1e-12
        ]
        if not found:
            raise ParameterError(f"no two values of {vals} are within {k} of each other")
        return tuple(found)
    return tuple((a, b) for i, a in enumerate(vals) for b in vals[i + 1 :])


@dataclass(frozen=True, init=False)
class MeanSecret(SqlTextHolder):
    """The average, over the rows of the released dataset, of a row expression.

    θ_v is "a dataset of n rows drawn from the population whose mean of ``expression`` is
    v" (Zhang, Ohrimenko & Cummings 2022, §3, Def. 4: a secret defined by a function of
    an attribute over all records; here the function is the mean). The law of the
    statistics under θ_v is built from the modelling table by joint central-limit
    conditioning (:func:`distpriv.modeling.model_mean.mean_model`).

    Parameters
    ----------
    expression : str
        A DuckDB SQL row expression with a numeric value (a column such as ``"age"``, or
        e.g. ``"hours_per_week * 52"``), validated as one scalar expression
        (:func:`~distpriv.modeling.expressions.parse_expression`: no statement, subquery,
        aggregate or file access; only columns of the table). It is never run as raw text.
    values : sequence of float
        At least two distinct finite means. Each must lie strictly inside the range of
        the expression on the modelling table (checked when the model is built).
    pairs : sequence of (float, float), optional
        Ψ as pairs of values. Default: every pair of values, or, with ``within``, the
        pairs at most ``within`` apart.
    within : float, optional
        k > 0: protect every pair of values with |vᵢ − vⱼ| ≤ k.

    Examples
    --------
    >>> MeanSecret("age", values=[37, 40]).describe()
    'the average of age'
    >>> MeanSecret("age", values=[37, 40]).ledger_key()
    'mean:age'
    """

    kind: ClassVar[str] = "mean"
    expression: str
    values: tuple[float, ...]
    pairs: tuple[tuple[float, float], ...]
    if TYPE_CHECKING:
        _parsed: ParsedExpression

    def __init__(
        self,
        expression: str,
        values: Sequence[float],
        *,
        pairs: Sequence[Sequence[float]] | None = None,
        within: float | None = None,
    ) -> None:
        if not isinstance(expression, str) or not expression.strip():
            raise ParameterTypeError(
                f"expression must be a non-empty SQL row expression, got {expression!r}"
            )
        parsed = parse_expression(expression, what="secret expression", kind="scalar")
        if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
            raise ParameterTypeError(f"values must be a sequence of means, got {values!r}")
        if len(values) > MAX_MEAN_VALUES:
            raise ParameterError(
                f"values: {len(values)} means given, a mean secret takes at most "
                f"{MAX_MEAN_VALUES} (each is modelled and calibrated for: 1,001 took 1.5 GiB "
                "of memory); protect fewer values, or ranges of the average with "
                'kind = "event", an expression and a step'
            )
        vals = tuple(check_real(v, "values") for v in values)
        if len(set(vals)) != len(vals) or len(vals) < 2:
            raise ParameterError(f"values must hold at least two distinct means, got {vals}")
        object.__setattr__(self, "expression", expression)
        object.__setattr__(self, "_parsed", parsed)
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "pairs", resolve_pairs(vals, pairs, within))

    def describe(self) -> str:
        """The secret in words, as reports show it."""
        return f"the average of {self.expression}"

    def ledger_key(self) -> str:
        """``"mean:" + expression``: cannot collide with a proportion secret's predicate
        (a predicate is a boolean SQL expression and never starts with ``mean:``)."""
        return "mean:" + self.expression

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description, with the ledger key."""
        return {
            "type": "mean",
            "expression": self.expression,
            "values": list(self.values),
            "pairs": [list(p) for p in self.pairs],
            "key": self.ledger_key(),
        }
