"""What APMQM is calibrated on (Zhang, Ohrimenko & Cummings 2022, §5.1, Def. 5, Alg. 2).

:class:`ColumnQuery` is a query F by the attributes it reads and its column-neighbour
sensitivities Δ_SF; :class:`AttributeNetworkModel` pairs it with the parameter network and
the sensitive attributes C. The mechanism itself is in :mod:`distpriv.central.apmqm`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_positive_int, check_real
from .bayesnet import ParameterNetwork, attribute_names

__all__ = ["AttributeNetworkModel", "ColumnQuery"]


# ---------------------------------------------------------------------------- the query
def _names_for(statistics: Sequence[str] | None, default: Sequence[str]) -> tuple[str, ...]:
    if statistics is None:
        return tuple(default)
    if isinstance(statistics, str) or not isinstance(statistics, Sequence):
        raise ParameterTypeError(f"statistics must be a sequence of names, got {statistics!r}")
    names = tuple(str(s) for s in statistics)
    if len(names) != len(default):
        raise ParameterError(
            f"statistics must name each of the {len(default)} statistics, got {len(names)}"
        )
    return names


@dataclass(frozen=True, init=False, eq=False)
class ColumnQuery:
    """A query F by the attributes A it reads and its column-neighbour sensitivities Δ_SF.

    Zhang, Ohrimenko & Cummings 2022, §5.1: X and X' are S-column-neighbours if they differ
    only in the columns S (arbitrarily), and Δ_SF = max |F(X) − F(X')|₁ over such pairs.
    Δ_SF depends only on S ∩ A and is monotone in S.

    Build one with :meth:`count`, :meth:`means` or :meth:`sums` (sensitivities derived
    from n and the column bounds), or give the sensitivities directly.

    Parameters
    ----------
    attributes : str or sequence of str
        A, the attributes F reads.
    sensitivities : float or mapping
        A float c: Δ_SF = c for every S meeting A (e.g. a count over n rows: c = n).
        A mapping from an attribute or a tuple of attributes to Δ_SF; the full A must be
        listed, and an unlisted S takes the value of its smallest listed superset
        (monotonicity). Values must be finite, ≥ 0, and monotone among listed sets.
    statistics : sequence of str, optional
        Names of the released statistics (default one statistic named after A).

    Examples
    --------
    >>> q = ColumnQuery.count(["height", "sat"], n=100)
    >>> q.sensitivity(["sat"]), q.sensitivity(["weight"])
    (100.0, 0.0)
    """

    attributes: tuple[str, ...]
    statistics: tuple[str, ...]
    kind: str
    derived: bool
    _constant: float | None = field(repr=False)
    _weights: dict[str, float] | None = field(repr=False)
    _table: dict[frozenset[str], float] | None = field(repr=False)

    def __init__(
        self,
        attributes: str | Sequence[str],
        sensitivities: float | Mapping[str | tuple[str, ...], float],
        *,
        statistics: Sequence[str] | None = None,
    ) -> None:
        attrs = attribute_names(attributes, "attributes", distinct=True)
        const = weights = table = None
        if isinstance(sensitivities, Mapping):
            table = {}
            for key, val in sensitivities.items():
                cols = frozenset(attribute_names(key, "sensitivities key", distinct=True))
                unknown = sorted(cols - set(attrs))
                if unknown:
                    raise ParameterError(
                        f"sensitivities key {key!r} names {unknown[0]!r}, which the query does "
                        f"not read; attributes: {list(attrs)}"
                    )
                table[cols] = check_real(val, f"sensitivities[{key!r}]", low=0.0)
            if frozenset(attrs) not in table:
                raise ParameterError(
                    f"sensitivities must give Delta_A F for all the query's attributes "
                    f"{tuple(attrs)!r}"
                )
            for s, vs in table.items():
                for t, vt in table.items():
                    if s < t and vs > vt:
                        raise ParameterError(
                            f"sensitivities must be monotone: Delta for {sorted(s)} is {vs!r} "
                            f"> {vt!r} for its superset {sorted(t)}"
                        )
        else:
            const = check_real(sensitivities, "sensitivities", low=0.0)
        name = f"F({', '.join(attrs)})"
        self._set(attrs, _names_for(statistics, [name]), "given", False, const, weights, table)

    def _set(
        self,
        attrs: tuple[str, ...],
        stats: tuple[str, ...],
        kind: str,
        derived: bool,
        const: float | None,
        weights: dict[str, float] | None,
        table: dict[frozenset[str], float] | None,
    ) -> None:
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "statistics", stats)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "derived", derived)
        object.__setattr__(self, "_constant", const)
        object.__setattr__(self, "_weights", weights)
        object.__setattr__(self, "_table", table)

    @classmethod
    def count(
        cls, attributes: str | Sequence[str], *, n: int, statistic: str | None = None
    ) -> ColumnQuery:
        """The number of rows (of n) whose attributes A satisfy a predicate.

        Changing any non-empty subset of A's columns can flip every row: Δ_SF = n for
        every S meeting A.
        """
        nn = check_positive_int(n, "n")
        attrs = attribute_names(attributes, "attributes", distinct=True)
        q = cls.__new__(cls)
        stat = statistic or f"count({', '.join(attrs)})"
        q._set(attrs, (stat,), "count", True, float(nn), None, None)
        return q

    @classmethod
    def means(
        cls,
        bounds: Mapping[str, tuple[float, float]],
        *,
        statistics: Sequence[str] | None = None,
    ) -> ColumnQuery:
        """The vector of column means of bounded columns: Δ_SF = Σ_{a ∈ S∩A} (hi_a − lo_a)."""
        return cls._additive(bounds, 1, statistics, "mean")

    @classmethod
    def sums(
        cls,
        bounds: Mapping[str, tuple[float, float]],
        *,
        n: int,
        statistics: Sequence[str] | None = None,
    ) -> ColumnQuery:
        """The vector of column sums over n rows: Δ_SF = n Σ_{a ∈ S∩A} (hi_a − lo_a)."""
        return cls._additive(bounds, check_positive_int(n, "n"), statistics, "sum")

    @classmethod
    def _additive(
        cls,
        bounds: Mapping[str, tuple[float, float]],
        n: int,
        statistics: Sequence[str] | None,
        kind: str,
    ) -> ColumnQuery:
        if not isinstance(bounds, Mapping) or not bounds:
            raise ParameterTypeError("bounds must map each column to its (low, high) range")
        weights = {}
        for a, b in bounds.items():
            if not isinstance(a, str):
                raise ParameterTypeError(f"bounds keys must be attribute names, got {a!r}")
            if not isinstance(b, Sequence) or isinstance(b, str) or len(b) != 2:
                raise ParameterError(f"bounds[{a!r}] must be (low, high), got {b!r}")
            lo = check_real(b[0], f"bounds[{a!r}][0]")
            hi = check_real(b[1], f"bounds[{a!r}][1]")
            if hi < lo:
                raise ParameterError(f"bounds[{a!r}] must have low <= high, got {b!r}")
            weights[a] = n * (hi - lo)
        attrs = tuple(bounds)
        q = cls.__new__(cls)
        stats = _names_for(statistics, [f"{kind}({a})" for a in attrs])
        q._set(attrs, stats, kind, True, None, weights, None)
        return q

    @property
    def dim(self) -> int:
        """Number m of released statistics."""
        return len(self.statistics)

    def sensitivity(self, columns: Iterable[str]) -> float:
        """Δ_SF for the columns S (only S ∩ A matters); 0 when S misses A."""
        s = frozenset(columns) & frozenset(self.attributes)
        if not s:
            return 0.0
        if self._constant is not None:
            return self._constant
        if self._weights is not None:
            return float(sum(self._weights[a] for a in self.attributes if a in s))
        table = self._table or {}
        return min(v for t, v in table.items() if s <= t)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict with Δ for each single attribute and for A."""
        return {
            "kind": self.kind,
            "attributes": list(self.attributes),
            "statistics": list(self.statistics),
            "derived": self.derived,
            "sensitivity_all": self.sensitivity(self.attributes),
            "sensitivity_each": {a: self.sensitivity([a]) for a in self.attributes},
        }


# ---------------------------------------------------------------------------- the model
@dataclass(frozen=True, init=False, eq=False)
class AttributeNetworkModel:
    """What APMQM is calibrated on: the parameter network, the secrets C and the query.

    Zhang, Ohrimenko & Cummings 2022, Def. 5 and Alg. 2. The pairs protected are every
    two values of φ_i for each i ∈ C (a secret φ_i ∈ Φ_a for any subset Φ_a is then
    covered too: its likelihood is a mixture over the values).

    Parameters
    ----------
    network : ParameterNetwork
        The hyper-prior P over (φ_1, …, φ_m).
    secrets : str or sequence of str
        C, the sensitive attributes (each with at least two parameter values).
    query : ColumnQuery
        F, its attributes A (all in the network) and sensitivities.
    """

    network: ParameterNetwork
    secrets: tuple[str, ...]
    query: ColumnQuery

    def __init__(
        self, network: ParameterNetwork, secrets: str | Sequence[str], query: ColumnQuery
    ) -> None:
        if not isinstance(network, ParameterNetwork):
            raise ParameterTypeError(
                f"network must be a ParameterNetwork, got {type(network).__name__}"
            )
        if not isinstance(query, ColumnQuery):
            raise ParameterTypeError(f"query must be a ColumnQuery, got {type(query).__name__}")
        sec = attribute_names(secrets, "secrets", distinct=True)
        for s in sec:
            k = network.index(s, "secret")
            if len(network.supports[k]) < 2:
                raise ParameterError(
                    f"secret {s!r} has a single parameter value {network.supports[k]!r}: "
                    "there is nothing to hide"
                )
        for a in query.attributes:
            network.index(a, "query attribute")
        object.__setattr__(self, "network", network)
        object.__setattr__(self, "secrets", sec)
        object.__setattr__(self, "query", query)

    @property
    def dim(self) -> int:
        """Number m of released statistics."""
        return self.query.dim

    @property
    def statistics(self) -> tuple[str, ...]:
        """Names of the released statistics."""
        return self.query.statistics

    @property
    def pair_labels(self) -> tuple[tuple[str, str], ...]:
        """Every pair of parameter values of each secret, as ``"attr=value"`` labels."""
        out: list[tuple[str, str]] = []
        for s in self.secrets:
            vals = self.network.supports[self.network.index(s)]
            out.extend(
                (f"{s}={vals[a]}", f"{s}={vals[b]}")
                for a in range(len(vals))
                for b in range(a + 1, len(vals))
            )
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "type": "attribute-network",
            "network": self.network.to_dict(),
            "secrets": list(self.secrets),
            "query": self.query.to_dict(),
            "pairs": [list(p) for p in self.pair_labels],
        }
