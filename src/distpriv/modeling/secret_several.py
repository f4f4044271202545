"""Several sensitive attributes hidden by one release (Zhang, Ohrimenko & Cummings 2022, §3).

Zhang et al. protect a set C of sensitive attributes at once: for each attribute i ∈ C a
set of secret values and pairs Q_i of them; the release must make every pair of every
attribute indistinguishable. In Chen & Ohrimenko's notation (2023, §2) the hypotheses are
the union of each attribute's θ's and Ψ = ⋃_i Ψ_i, the union of each attribute's pairs —
there is no pair *across* attributes (a share of women against a share of high earners is
not a question anyone asks of the data).

Each attribute's θ's say only what that attribute's secret is: "n rows, round(p·n) of
them satisfying the attribute's predicate", with every other attribute varying as it does
in the population. So each attribute's part of the query model is exactly the model of
its own :class:`~distpriv.modeling.secrets.ProportionSecret` (stratified on its predicate
only), and the several-attribute model stacks them (:func:`several_model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from ..errors import ParameterError, ParameterTypeError
from .secrets import ProportionSecret

__all__ = ["AttributeValue", "SeveralSecrets"]


class AttributeValue(NamedTuple):
    """One hypothesis of a :class:`SeveralSecrets`: an attribute (its predicate) at a value.

    A plain tuple ``(predicate, value)`` (hashable, JSON-safe as a list); printed as
    ``share[sex = 'Female']=0.3`` in reports and pair labels.
    """

    predicate: str
    value: float

    def __str__(self) -> str:
        return f"share[{self.predicate}]={self.value:g}"


def _normal_predicate(predicate: str) -> str:
    """The predicate in canonical SQL, as the ledger keys its text, to find duplicates
    (what two predicates select on the released rows is compared at the release:
    :func:`~distpriv.modeling.secret_identity.secret_accounts`)."""
    from .secret_identity import canonical_sql

    return canonical_sql(predicate)


@dataclass(frozen=True, init=False)
class SeveralSecrets:
    """Several proportion secrets hidden at once: Ψ = the union of each one's pairs.

    Zhang, Ohrimenko & Cummings 2022, §3 (the set C of sensitive attributes, Def. 4 with
    i ∈ C); Chen & Ohrimenko 2023, §2 (Ψ a set of pairs). The hypotheses are the
    (attribute, value) pairs :class:`AttributeValue`, attribute by attribute in the order
    given; pairs join two values of the *same* attribute only.

    Parameters
    ----------
    attributes : sequence of ProportionSecret
        At least two, with different predicates (after whitespace normalisation). Each
        keeps its own values and pairs (or ``within``).

    Examples
    --------
    >>> s = SeveralSecrets([ProportionSecret("sex = 'Female'", [0.3, 0.4]),
    ...                     ProportionSecret("income = '>50K'", [0.2, 0.3])])
    >>> [str(v) for v in s.values][:2]
    ["share[sex = 'Female']=0.3", "share[sex = 'Female']=0.4"]
    >>> len(s.pairs)
    2
    """

    kind: ClassVar[str] = "several"
    attributes: tuple[ProportionSecret, ...]
    values: tuple[AttributeValue, ...]
    pairs: tuple[tuple[AttributeValue, AttributeValue], ...]

    def __init__(self, attributes: Sequence[ProportionSecret]) -> None:
        if isinstance(attributes, str | bytes) or not isinstance(attributes, Sequence):
            raise ParameterTypeError(
                "attributes must be a sequence of ProportionSecret, got "
                f"{type(attributes).__name__}"
            )
        attrs = tuple(attributes)
        for k, a in enumerate(attrs):
            if isinstance(a, SeveralSecrets):
                raise ParameterTypeError(
                    f"attributes[{k}] is itself a SeveralSecrets: list its attributes directly"
                )
            if not isinstance(a, ProportionSecret):
                raise ParameterTypeError(
                    f"attributes[{k}] must be a ProportionSecret, got {type(a).__name__}"
                )
        for k, a in enumerate(attrs):
            if a.is_grid and a.value_range is not None:
                # The grid needs the subset size, which only the model knows; listing the
                # grid here keeps the hypotheses (and their labels) fixed from the start.
                lo, hi = a.value_range
                raise ParameterError(
                    f"attributes[{k}] is a range [{lo:g}, {hi:g}], which needs the subset "
                    "size to become values: pass its grid, "
                    f"ProportionSecret({a.predicate!r}, range=[{lo:g}, {hi:g}], "
                    "...).grid(subset_size)"
                )
        if len(attrs) < 2:
            raise ParameterError(
                f"attributes must hold at least two secrets, got {len(attrs)}: for one "
                "attribute use its ProportionSecret directly"
            )
        seen: dict[str, int] = {}
        for k, a in enumerate(attrs):
            key = _normal_predicate(a.predicate)
            if key in seen:
                raise ParameterError(
                    f"attributes[{k}] repeats the predicate {a.predicate!r} of "
                    f"attributes[{seen[key]}]: give each attribute once (its values and "
                    "pairs together)"
                )
            seen[key] = k
        values = tuple(AttributeValue(a.predicate, v) for a in attrs for v in a.values)
        pairs = tuple(
            (AttributeValue(a.predicate, x), AttributeValue(a.predicate, y))
            for a in attrs
            for x, y in a.pairs
        )
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "pairs", pairs)

    @property
    def columns(self) -> frozenset[str]:
        """Columns any attribute's predicate references."""
        return frozenset().union(*(a.columns for a in self.attributes))

    @property
    def predicates(self) -> tuple[str, ...]:
        """The attributes' predicates, in order."""
        return tuple(a.predicate for a in self.attributes)

    def attribute_of(self, index: int) -> int:
        """The attribute (its position in :attr:`attributes`) of the index-th value."""
        if not 0 <= index < len(self.values):
            raise ParameterError(f"value index {index} is not in [0, {len(self.values)})")
        pred = self.values[index].predicate
        return self.predicates.index(pred)

    def describe(self) -> str:
        """The secrets in words, as reports show them."""
        return "at once: " + "; ".join(a.describe() for a in self.attributes)

    def ledger_keys(self) -> tuple[str, ...]:
        """Every attribute's ledger key (its predicate): the release composes with earlier
        releases about any of them."""
        return tuple(a.ledger_key() for a in self.attributes)

    def ledger_key(self) -> str:
        """A key for the release as a whole (``"several:"`` + the predicates joined by
        ``" | "``), which no predicate can equal; the ledger records the release under each
        attribute's own key as well (:meth:`ledger_keys`)."""
        return "several:" + " | ".join(_normal_predicate(p) for p in self.predicates)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: each attribute's own dict (with its description and
        ledger key), the keys, and the values and pairs as their label strings."""
        return {
            "type": "several",
            "key": self.ledger_key(),
            "keys": list(self.ledger_keys()),
            "attributes": [
                {"description": a.describe(), "key": a.ledger_key(), **a.to_dict()}
                for a in self.attributes
            ],
            "values": [str(v) for v in self.values],
            "pairs": [[str(a), str(b)] for a, b in self.pairs],
        }


def several_from_spec(specs: Any, *, what: str = "attributes") -> SeveralSecrets:
    """A :class:`SeveralSecrets` from plain mappings (the config's ``[[secret.attributes]]``).

    Each mapping has ``predicate`` and ``values`` and optionally ``pairs`` or ``within``
    (the keys of a proportion secret). Errors name ``what[k]`` and the key.
    """
    if not isinstance(specs, list | tuple):
        raise ParameterTypeError(f"{what} must be a list of tables, got {type(specs).__name__}")
    secrets = []
    for k, spec in enumerate(specs):
        where = f"{what}[{k}]"
        if not isinstance(spec, dict):
            raise ParameterTypeError(f"{where} must be a table, got {type(spec).__name__}")
        try:
            secrets.append(
                ProportionSecret(
                    spec["predicate"],
                    spec["values"],
                    pairs=spec.get("pairs"),
                    within=spec.get("within"),
                )
            )
        except KeyError as exc:
            raise ParameterError(f"{where} needs {exc.args[0]!r}") from None
        except (ParameterError, ParameterTypeError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
    return SeveralSecrets(secrets)
