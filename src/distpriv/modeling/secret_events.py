"""Event secrets: hide which range a secret's value falls in.

Zhang, Ohrimenko & Cummings (2022, §3, Def. 4) let a secret be an *event* g(X) ∈ U, a value
or a range, and protect pairs of events: "the share of high earners is in [0.20, 0.30]"
against "it is in [0.40, 0.50]". A dataset of n rows whose share falls in an event has one of
the grid values k/n the event allows, so the law of the release given the event is a
mixture over those values,

    P_E = Σ_{v ∈ E} w_E(v) P_v,

weighted by how likely each value is in the population the datasets come from. **Premise**
(for a proportion): a protected dataset is n rows drawn i.i.d. from a population whose base
rate of the predicate is π, so its count is Binomial(n, π); given the event, the count has
that law restricted to the event's counts and renormalised, w_E(k/n) ∝ C(n, k) πᵏ (1−π)ⁿ⁻ᵏ
(:func:`event_weights`).

**Guarantee (certified, whatever the weights).** The hockey-stick divergence
δ_ε(P‖Q) = sup_S P(S) − e^ε Q(S) is jointly convex in (P, Q) (a supremum of functions
linear in (P, Q)), so with P_E = Σᵢ wᵢ Pᵢ and P_F = Σⱼ vⱼ Qⱼ,

    δ_ε(P_E ‖ P_F) = δ_ε(Σᵢⱼ wᵢvⱼ Pᵢ ‖ Σᵢⱼ wᵢvⱼ Qⱼ) ≤ Σᵢⱼ wᵢvⱼ δ_ε(Pᵢ ‖ Qⱼ)
                   ≤ max_{i,j} δ_ε(Pᵢ ‖ Qⱼ).

So an event secret is calibrated as the value secret whose values are every grid value the
events allow and whose pairs Ψ are every value of one event against every value of the
other (both directions are checked by the accountant): the noise that meets (ε, δ) on all
those pairs meets it on the mixtures, for any weights — the population's base rate is not
needed for the guarantee, only to say what the mixture is. No Gaussian is fitted to a
mixture.

The machinery is generic over a *value-indexed* secret: anything with ``predicate`` whose
values are a grid (a :class:`~distpriv.modeling.secrets.ProportionSecret`, via
:func:`~distpriv.modeling.secret_grid.grid_values`), or a secret offering
``event_grid(low, high, subset_size)`` and ``with_values(values, pairs)`` (a
:class:`~distpriv.modeling.secret_mean_events.MeanGrid`: mean events, whose grid and
premise :mod:`distpriv.modeling.secret_mean_events` states).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from .secret_grid import check_range
from .secrets import ProportionSecret

__all__ = ["EventSecret", "event_weights"]

_SLACK = 1e-9


def _check_events(events: object, unit: bool) -> tuple[tuple[float, float], ...]:
    if isinstance(events, str) or not isinstance(events, Sequence) or len(events) < 2:
        raise ParameterError(f"events must list at least two ranges [low, high], got {events!r}")
    out = tuple(check_range(e, f"events[{k}]", unit=unit) for k, e in enumerate(events))
    order = sorted(range(len(out)), key=lambda k: out[k])
    for a, b in itertools.pairwise(order):
        if out[b][0] <= out[a][1] + _SLACK:
            raise ParameterError(
                f"events[{a}] {list(out[a])} and events[{b}] {list(out[b])} overlap: a "
                "dataset's share would be in both; give disjoint ranges"
            )
    return out


def _check_event_pairs(pairs: object, n_events: int) -> tuple[tuple[int, int], ...]:
    if pairs is None:
        return tuple((a, b) for a in range(n_events) for b in range(a + 1, n_events))
    if isinstance(pairs, str) or not isinstance(pairs, Sequence) or not pairs:
        raise ParameterError(f"pairs must list pairs [i, j] of event indices, got {pairs!r}")
    out = []
    for pair in pairs:
        ok = (
            isinstance(pair, Sequence)
            and len(pair) == 2
            and all(isinstance(k, int | np.integer) and not isinstance(k, bool) for k in pair)
            and all(0 <= int(k) < n_events for k in pair)
            and pair[0] != pair[1]
        )
        if not ok:
            raise ParameterError(
                f"pairs entry {pair!r} must join two different event indices in 0 … {n_events - 1}"
            )
        out.append((int(pair[0]), int(pair[1])))
    return tuple(out)


@dataclass(frozen=True, init=False)
class EventSecret:
    """Hide which of several ranges the secret's value falls in (module docstring).

    Parameters
    ----------
    secret : str or value-indexed secret
        A SQL predicate (the share of rows satisfying it, as :class:`ProportionSecret`), a
        :class:`~distpriv.modeling.secret_mean_events.MeanGrid` (the dataset's average of a
        row expression: mean events), or a value-indexed secret (its values are ignored;
        only what it measures is used). It is kept as ``source``; after :meth:`grid`,
        ``base`` is the value secret of the grid (a ``ProportionSecret``, or a
        ``MeanSecret`` for a ``MeanGrid``).
    events : sequence of (float, float)
        At least two disjoint closed ranges [low, high] of the secret's value.
    pairs : sequence of (int, int), optional
        The pairs of events (indices into ``events``) to make indistinguishable; default
        every pair.

    Examples
    --------
    >>> s = EventSecret("income = '>50K'", events=[(0.2, 0.3), (0.4, 0.5)]).grid(100)
    >>> len(s.values), len(s.pairs)
    (22, 121)
    """

    kind: ClassVar[str] = "event"
    base: Any
    source: Any
    events: tuple[tuple[float, float], ...]
    event_pairs: tuple[tuple[int, int], ...]
    values: tuple[Any, ...]
    pairs: tuple[tuple[Any, Any], ...]
    subset_size: int | None

    def __init__(
        self,
        secret: Any,
        events: Sequence[Sequence[float]],
        *,
        pairs: Sequence[Sequence[int]] | None = None,
    ) -> None:
        if isinstance(secret, str):
            secret = ProportionSecret(secret, range=(0.0, 1.0))
        if not isinstance(secret, ProportionSecret) and not hasattr(secret, "event_grid"):
            raise ParameterTypeError(
                "secret must be a predicate or a value-indexed secret (ProportionSecret, …), "
                f"got {type(secret).__name__}"
            )
        evs = _check_events(events, unit=isinstance(secret, ProportionSecret))
        for name, value in (
            ("base", secret),
            ("source", secret),
            ("events", evs),
            ("event_pairs", _check_event_pairs(pairs, len(evs))),
            ("values", ()),
            ("pairs", ()),
            ("subset_size", None),
        ):
            object.__setattr__(self, name, value)

    # -- the grid ---------------------------------------------------------------------

    @property
    def is_grid(self) -> bool:
        """Whether the values are not materialised yet (:meth:`grid`)."""
        return self.subset_size is None

    def event_values(self, subset_size: int) -> tuple[tuple[Any, ...], ...]:
        """The grid values each event allows in a dataset of ``subset_size`` rows.

        Raises
        ------
        ParameterError
            An event with no grid value.
        """
        out = []
        for k, (lo, hi) in enumerate(self.events):
            if hasattr(self.source, "event_grid"):
                vals = tuple(self.source.event_grid(lo, hi, subset_size))
            else:
                n = subset_size
                first, last = int(np.ceil(lo * n - _SLACK)), int(np.floor(hi * n + _SLACK))
                vals = tuple(c / n for c in range(first, last + 1))
            if not vals:
                raise ParameterError(
                    f"events[{k}] [{lo:g}, {hi:g}] holds no value of the grid of subset_size "
                    f"{subset_size} (multiples of 1/{subset_size}): widen it"
                )
            out.append(vals)
        return tuple(out)

    def grid(self, subset_size: int) -> EventSecret:
        """The secret with its values materialised for ``subset_size`` rows: every value an
        event allows, and Ψ = every value of one event against every value of the other,
        for each pair of events (the certificate of the module docstring)."""
        if not self.is_grid:
            if subset_size != self.subset_size:
                raise ParameterError(
                    f"this event secret is on the grid of subset_size {self.subset_size}, "
                    f"not {subset_size}"
                )
            return self
        per = self.event_values(subset_size)
        values = tuple(v for vals in per for v in vals)
        pairs = tuple((a, b) for e, f in self.event_pairs for a in per[e] for b in per[f])
        if hasattr(self.source, "with_values"):
            base = self.source.with_values(values, pairs)
        else:
            base = ProportionSecret(self.base.predicate, values, pairs=pairs)
        out = EventSecret.__new__(EventSecret)
        for name, value in (
            ("base", base),
            ("source", self.source),
            ("events", self.events),
            ("event_pairs", self.event_pairs),
            ("values", values),
            ("pairs", pairs),
            ("subset_size", int(subset_size)),
        ):
            object.__setattr__(out, name, value)
        return out

    # -- what the model builder uses (the materialised value secret's) ------------------

    @property
    def predicate(self) -> str:
        """The base secret's predicate (what is measured; a mean's expression)."""
        return str(getattr(self.base, "predicate", None) or self.base.expression)

    @property
    def parsed(self) -> Any:
        """The base secret's validated predicate."""
        return self.base.parsed

    @property
    def columns(self) -> frozenset[str]:
        """Columns the base secret reads."""
        return frozenset(self.base.columns)

    def counts(self, subset_size: int) -> tuple[int, ...]:
        """Rows satisfying the predicate per value (of the materialised grid)."""
        return tuple(self.grid(subset_size).base.counts(subset_size))

    def value_secret(self) -> Any:
        """The materialised value secret (values and cross pairs) the noise is calibrated
        on; raises before :meth:`grid`."""
        if self.is_grid:
            raise ParameterError("the event secret's grid is not materialised: call grid(n)")
        return self.base

    # -- the Secret protocol -------------------------------------------------------------

    def describe(self) -> str:
        """The secret in words."""
        what = self.base.describe().split(", anywhere between")[0]
        ev = " vs ".join(f"in [{lo:g}, {hi:g}]" for lo, hi in self.events)
        how = (
            "the law given an event is the mixture over the values it allows, certified by "
            "every value of one event against every value of the other"
            if isinstance(self.source, ProportionSecret) or not hasattr(self.source, "step")
            # mean events: a continuum of averages, represented by a grid
            else "each range on a grid of averages, every grid value of one event against "
            "every grid value of the other; between grid values the premise of "
            "docs/guarantees.md, Mean events"
        )
        return f"whether {what} is {ev} (event pairs {list(map(list, self.event_pairs))}; {how})"

    def ledger_key(self) -> str:
        """The base secret's key: releases about the same property compose."""
        return str(self.base.ledger_key())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        what = (
            {"predicate": self.predicate}
            if isinstance(self.source, ProportionSecret)
            # a mean's events: its key keeps it apart from predicates in the ledger
            else {"expression": self.predicate, "key": self.ledger_key()}
        )
        return {
            "type": "event",
            **what,
            "events": [list(e) for e in self.events],
            "event_pairs": [list(p) for p in self.event_pairs],
            "values": list(self.values),
            "pairs": [list(p) for p in self.pairs],
            "certificate": "joint convexity: max over cross pairs of values",
        }


def event_weights(
    secret: EventSecret, subset_size: int, base_rate: float
) -> tuple[np.ndarray, ...]:
    """The population weights of each event's values (the module's premise).

    Parameters
    ----------
    secret : EventSecret
        With a proportion base.
    subset_size : int
        n.
    base_rate : float
        π, the population's share of rows satisfying the predicate, in (0, 1).

    Returns
    -------
    tuple of ndarray
        Per event, w_E(k/n) ∝ C(n, k) πᵏ (1 − π)ⁿ⁻ᵏ over its values, summing to 1.
    """
    from scipy.stats import binom

    if not isinstance(secret.source, ProportionSecret):
        raise ParameterError(
            "event_weights applies to events about a proportion (a predicate); the weights "
            "of mean events are not modelled (their certificate holds for any weights)"
        )
    if not 0.0 < float(base_rate) < 1.0:
        raise ParameterError(f"base_rate must be in (0, 1), got {base_rate!r}")
    out = []
    for vals in secret.event_values(subset_size):
        counts = np.rint(np.asarray(vals, dtype=float) * subset_size).astype(int)
        logw = binom.logpmf(counts, subset_size, float(base_rate))
        w = np.exp(logw - logw.max())
        out.append(w / w.sum())
    return tuple(out)
