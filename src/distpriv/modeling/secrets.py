"""Secrets: the global property to hide, and the pairs Ψ of its values (Chen & Ohrimenko §2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_real
from .expressions import ParsedExpression, SqlTextHolder, parse_expression

__all__ = ["ProportionSecret", "Secret"]


@runtime_checkable
class Secret(Protocol):
    """What every kind of secret offers the pipeline (Chen & Ohrimenko 2023, §2: a set of
    values θ and the pairs Ψ of them to make indistinguishable).

    A kind is a frozen dataclass with a class-level ``kind`` name (the config file's
    ``[secret] kind``), its protected ``values`` (labels of the query model's components,
    in order), the ``pairs`` Ψ of those values, the table ``columns`` it reads, a
    plain-language :meth:`describe`, a JSON-safe :meth:`to_dict` (with ``"type"`` = the kind)
    and a :meth:`ledger_key` under which the ledger composes releases about it.
    """

    kind: ClassVar[str]

    @property
    def values(self) -> tuple[Any, ...]: ...

    @property
    def pairs(self) -> tuple[tuple[Any, Any], ...]: ...

    @property
    def columns(self) -> frozenset[str]: ...

    def describe(self) -> str:
        """A plain-language description for reports ("the share of rows with …")."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description, with ``"type"`` the kind."""
        ...

    def ledger_key(self) -> str:
        """The text the ledger groups releases about this secret under."""
        ...


@dataclass(frozen=True, init=False)
class ProportionSecret(SqlTextHolder):
    """The proportion p of rows satisfying a SQL predicate (e.g. ``"income = '>50K'"``).

    θ_p is "a dataset of n rows of which round(p·n) satisfy the predicate" (Chen &
    Ohrimenko 2023, §5.1 and App. C.1).

    Parameters
    ----------
    predicate : str
        A DuckDB SQL boolean expression over a row, validated as a single row-level
        expression (:func:`~distpriv.modeling.expressions.parse_expression`: no statement,
        subquery or file access; only columns of the table). NULL/NaN in a column it
        uses is an error unless the model is built with ``missing="drop"``.
    values : sequence of float
        At least two distinct proportions in [0, 1].
    pairs : sequence of (float, float), optional
        Ψ as pairs of values. Default: every pair of values, or, with ``within``, the
        pairs at most ``within`` apart (Chen & Ohrimenko 2023, Ex. 2.1).
    within : float, optional
        k > 0: protect every pair of values with |pᵢ − pⱼ| ≤ k.
    range : (float, float), optional
        Instead of ``values``: every share on the subset's grid k/n with
        low ≤ k/n ≤ high, materialised by :meth:`grid` when the model is built with
        ``subset_size`` n (:mod:`distpriv.modeling.secret_grid`). Until
        then ``values`` and ``pairs`` are empty. With ``within``, Ψ is every pair of grid
        values at most ``within`` apart, else every pair.

    Examples
    --------
    >>> ProportionSecret("income = '>50K'", values=[0.45, 0.55]).pairs
    ((0.45, 0.55),)
    >>> len(ProportionSecret("x > 0", values=[0.3, 0.4, 0.5, 0.6], within=0.1).pairs)
    3
    >>> wide = ProportionSecret("x > 0", range=(0.2, 0.6), within=0.05)
    >>> len(wide.grid(100).values), len(wide.grid(100).pairs)
    (41, 190)
    """

    kind: ClassVar[str] = "proportion"
    predicate: str
    values: tuple[float, ...]
    pairs: tuple[tuple[float, float], ...]
    if TYPE_CHECKING:
        # Set in __init__ (not a dataclass field: kept out of repr, equality and hashing).
        _parsed: ParsedExpression
    # The range a grid secret was given as, and its within (None: listed values); within
    # is not compared: the pairs already say it.
    value_range: tuple[float, float] | None = None
    within: float | None = field(default=None, compare=False)

    def __init__(
        self,
        predicate: str,
        values: Sequence[float] | None = None,
        *,
        pairs: Sequence[Sequence[float]] | None = None,
        within: float | None = None,
        range: Sequence[float] | None = None,  # the name (shadows the builtin here)
    ) -> None:
        if not isinstance(predicate, str) or not predicate.strip():
            raise ParameterTypeError(f"predicate must be a non-empty SQL string, got {predicate!r}")
        parsed = parse_expression(predicate, what="secret predicate", kind="scalar")
        if range is not None:
            self._init_range(predicate, parsed, values, pairs, within, range)
            return
        if values is None:
            raise ParameterError("give the secret's values, or a range = [low, high]")
        if isinstance(values, str) or not isinstance(values, Sequence | np.ndarray):
            raise ParameterTypeError(f"values must be a sequence of proportions, got {values!r}")
        vals = tuple(check_real(v, "values", low=0.0, high=1.0) for v in values)
        if len(set(vals)) != len(vals) or len(vals) < 2:
            raise ParameterError(f"values must hold at least two distinct proportions, got {vals}")
        if pairs is not None and within is not None:
            raise ParameterError("give either pairs or within, not both")
        if pairs is not None:
            out = []
            for pair in pairs:
                if len(pair) != 2 or any(p not in vals for p in pair) or pair[0] == pair[1]:
                    raise ParameterError(
                        f"pairs entry {tuple(pair)!r} must join two different values of {vals}"
                    )
                out.append((float(pair[0]), float(pair[1])))
        elif within is not None:
            k = check_real(within, "within", low=0.0, low_inclusive=False)
            out = [
                (a, b) for i, a in enumerate(vals) for b in vals[i + 1 :] if abs(a - b) <= k + 1e-12
            ]
            if not out:
                raise ParameterError(f"no two values of {vals} are within {k} of each other")
        else:
            out = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1 :]]
        object.__setattr__(self, "predicate", predicate)
        object.__setattr__(self, "_parsed", parsed)
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "pairs", tuple(out))
        object.__setattr__(self, "value_range", None)
        object.__setattr__(self, "within", None if within is None else float(within))

    def _init_range(
        self,
        predicate: str,
        parsed: ParsedExpression,
        values: object,
        pairs: object,
        within: float | None,
        value_range: Sequence[float],
    ) -> None:
        """A range secret, its grid not yet materialised (:meth:`grid`)."""
        from .secret_grid import check_range

        if values is not None:
            raise ParameterError("give either values or range, not both")
        if pairs is not None:
            raise ParameterError("pairs do not apply to a range; use within")
        lo_hi = check_range(value_range)
        k = None if within is None else check_real(within, "within", low=0.0, low_inclusive=False)
        for name, value in (
            ("predicate", predicate),
            ("_parsed", parsed),
            ("values", ()),
            ("pairs", ()),
            ("value_range", lo_hi),
            ("within", k),
        ):
            object.__setattr__(self, name, value)

    @property
    def is_grid(self) -> bool:
        """Whether this is a range whose values are not materialised yet (:meth:`grid`)."""
        return self.value_range is not None and not self.values

    def grid(self, subset_size: int) -> ProportionSecret:
        """The secret with its values on the grid of ``subset_size`` rows.

        A range secret becomes the secret of every k/n in its range, with the pairs at most
        ``within`` apart (or every pair); it keeps its ``value_range`` and ``within`` so that
        reports can say it was a range. A secret with explicit values is returned as it is.

        Raises
        ------
        ParameterError
            Fewer than two grid values in the range, or no pair within ``within``.
        """
        if not self.is_grid or self.value_range is None:
            return self
        from .secret_grid import grid_values, within_pairs

        lo, hi = self.value_range
        vals = grid_values(lo, hi, subset_size)
        out = ProportionSecret(self.predicate, vals, pairs=within_pairs(vals, self.within or 2.0))
        object.__setattr__(out, "value_range", self.value_range)
        object.__setattr__(out, "within", self.within)
        return out

    def counts(self, subset_size: int) -> tuple[int, ...]:
        """Rows satisfying the predicate in a dataset of ``subset_size`` rows, per value.

        round(p·n) with halves rounded up (so 0.445·100 → 45 regardless of float error
        of ±1e-9). Raises if two protected values give the same count.
        """
        counts = tuple(math.floor(p * subset_size + 0.5 + 1e-9) for p in self.values)
        for a, b in self.pairs:
            if counts[self.values.index(a)] == counts[self.values.index(b)]:
                raise ParameterError(
                    f"values {a} and {b} give the same count "
                    f"{counts[self.values.index(a)]} at subset_size {subset_size}: the pair "
                    "is indistinguishable by construction; use a larger subset_size"
                )
        return counts

    def describe(self) -> str:
        """The secret in words, as reports show it."""
        text = f"the share of rows with {self.predicate}"
        if self.value_range is not None:
            lo, hi = self.value_range
            gap = "" if self.within is None else f" to within {self.within:g}"
            text += f", anywhere between {lo:g} and {hi:g}{gap}"
        return text

    def ledger_key(self) -> str:
        """The predicate: releases about the same predicate compose, whatever their values
        and pairs (:func:`distpriv.pipeline.ledger.identity.secret_key`)."""
        return self.predicate

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return {
            "type": "proportion",
            "predicate": self.predicate,
            "values": list(self.values),
            "pairs": [list(p) for p in self.pairs],
            **(
                {}
                if self.value_range is None
                else {"range": list(self.value_range), "within": self.within}
            ),
        }
