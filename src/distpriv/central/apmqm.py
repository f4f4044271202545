"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings 2022, §5).

Distributional attribute privacy (Def. 5) hides the parameter φ_i of a sensitive column.
The parameters form a Bayesian network (:class:`~distpriv.central.bayesnet.ParameterNetwork`)
and APMQM (Alg. 2) adds Laplace noise of scale max_{i ∈ C} b_i, where b_i starts at the
trivial quilt's Δ_AF/ε and is lowered to Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)) by every Markov
quilt (X_Q, X_N, X_R) of X_i with max-influence e_Θ(X_Q | X_i) < ε. Here Δ_SF is the
S-column-neighbour sensitivity of the query (§5.1): the largest change of F when the
columns in S change arbitrarily. Thm 3: the release is (ε, 0)-distributionally attribute
private.

:func:`school_network` builds the school of Example 1 (family income, SAT, gender, height,
weight), where Q = {gender} is a Markov quilt of income with N = {income, SAT} and
R = {height, weight}.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_epsilon, check_positive_int, check_real
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import Assumption
from ..noise import Noise
from ._common import make_guarantee, pure_delta_note
from .base import CalibratedMechanism
from .bayesnet import MarkovQuilt, ParameterNetwork

__all__ = [
    "AttributeNetworkModel",
    "ColumnQuery",
    "QuiltNoise",
    "QuiltSearch",
    "apmqm_accuracy",
    "apmqm_quilts",
    "calibrate_apmqm",
    "school_network",
]

THEOREM = "Zhang, Ohrimenko & Cummings 2022, Alg. 2 / Thm 3"
NOTION = "distributional attribute privacy"
ACCURACY_BETA = 0.05
# Two quilts whose noise scales agree to this relative tolerance tie (their max-influences
# are sums over the same joint in different orders); the tie goes to the smaller influence,
# then to the smaller nearby set.
_TIE_RTOL = 1e-12


# ---------------------------------------------------------------------------- the query
def _attr_tuple(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        raise ParameterTypeError(f"{what} must be an attribute name or a sequence of them")
    out = tuple(value)
    if not out:
        raise ParameterError(f"{what} must name at least one attribute")
    for v in out:
        if not isinstance(v, str):
            raise ParameterTypeError(f"{what} must hold attribute names (str), got {v!r}")
    if len(set(out)) != len(out):
        raise ParameterError(f"{what} must not repeat an attribute, got {list(out)}")
    return out


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
        attrs = _attr_tuple(attributes, "attributes")
        const = weights = table = None
        if isinstance(sensitivities, Mapping):
            table = {}
            for key, val in sensitivities.items():
                cols = frozenset(_attr_tuple(key, "sensitivities key"))
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
        attrs = _attr_tuple(attributes, "attributes")
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
        sec = _attr_tuple(secrets, "secrets")
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
        out = []
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


# ---------------------------------------------------------------------------- Alg. 2
@dataclass(frozen=True)
class QuiltNoise:
    """A Markov quilt with the Laplace scale it would give (Zhang et al. 2022, Alg. 2).

    Attributes
    ----------
    quilt : MarkovQuilt
        (X_Q, X_N, X_R) and e_Θ(X_Q | X_i).
    queried_nearby : tuple of str
        A ∩ N, the queried attributes the quilt cannot shield.
    sensitivity : float
        Δ_{A∩N}F.
    scale : float
        Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)), or ``inf`` when e_Θ ≥ ε (not usable).
    """

    quilt: MarkovQuilt
    queried_nearby: tuple[str, ...]
    sensitivity: float
    scale: float

    @property
    def usable(self) -> bool:
        """e_Θ(X_Q | X_i) < ε, i.e. the quilt is in Alg. 2's G_i (with a finite scale)."""
        return math.isfinite(self.scale)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            **self.quilt.to_dict(),
            "queried_nearby": list(self.queried_nearby),
            "sensitivity": self.sensitivity,
            "scale": self.scale if self.usable else "inf",
            "usable": self.usable,
        }


@dataclass(frozen=True)
class QuiltSearch:
    """Alg. 2's search for one sensitive attribute: every quilt and the one chosen.

    Attributes
    ----------
    secret : str
        X_i.
    candidates : tuple of QuiltNoise
        The trivial quilt first, then every other quilt (:meth:`ParameterNetwork.markov_quilts`).
    chosen : QuiltNoise
        Smallest scale b_i; ties go to the smaller max-influence, then the smaller X_N.
    fell_back : bool
        True when no quilt other than the trivial one has max-influence < ε (G_i = ∅).
    note : str
        What happened, in words, for the guarantee.
    """

    secret: str
    candidates: tuple[QuiltNoise, ...]
    chosen: QuiltNoise
    fell_back: bool
    note: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "secret": self.secret,
            "chosen": self.chosen.to_dict(),
            "fell_back": self.fell_back,
            "note": self.note,
            "quilts": [c.to_dict() for c in self.candidates],
        }


def _search(model: AttributeNetworkModel, secret: str, epsilon: float) -> QuiltSearch:
    query = model.query
    cands = []
    for q in model.network.markov_quilts(secret):
        near = tuple(a for a in query.attributes if a in q.nearby)
        sens = query.sensitivity(near)
        if q.max_influence < epsilon:
            scale = sens / (epsilon - q.max_influence) if sens > 0 else 0.0
        else:
            scale = math.inf
        cands.append(QuiltNoise(q, near, sens, scale))
    trivial = cands[0]
    best = min(c.scale for c in cands)  # the trivial quilt is always finite
    near_best = [c for c in cands if c.scale <= best * (1 + _TIE_RTOL)]
    e_min = min(c.quilt.max_influence for c in near_best)
    near_best = [c for c in near_best if c.quilt.max_influence <= e_min + _TIE_RTOL]
    chosen = min(near_best, key=lambda c: (len(c.quilt.nearby), len(c.quilt.quilt)))
    usable = [c for c in cands[1:] if c.usable]
    fell_back = not usable
    if fell_back:
        worst = min((c.quilt.max_influence for c in cands[1:]), default=math.inf)
        note = (
            f"secret {secret!r}: no Markov quilt other than the trivial one has max-influence "
            f"below epsilon = {epsilon:g} (smallest {worst:.4g}); fell back to the trivial "
            f"quilt, scale Delta_A F / epsilon = {trivial.scale:.6g}"
        )
    elif chosen.quilt.trivial:
        note = (
            f"secret {secret!r}: {len(usable)} Markov quilt(s) have max-influence below "
            f"epsilon, but none gives less noise than the trivial quilt "
            f"(Delta_A F / epsilon = {trivial.scale:.6g})"
        )
    else:
        q = chosen.quilt
        note = (
            f"secret {secret!r}: quilt Q = {{{', '.join(q.quilt)}}}, N = "
            f"{{{', '.join(q.nearby)}}}, R = {{{', '.join(q.remote)}}} with max-influence "
            f"{q.max_influence:.4g} gives scale {chosen.scale:.6g} (trivial: {trivial.scale:.6g})"
        )
    return QuiltSearch(secret, tuple(cands), chosen, fell_back, note)


def apmqm_quilts(model: AttributeNetworkModel, *, epsilon: float) -> dict[str, QuiltSearch]:
    """Alg. 2's quilt search for every sensitive attribute (Zhang et al. 2022, Alg. 2).

    Parameters
    ----------
    model : AttributeNetworkModel
    epsilon : float
        ε > 0.

    Returns
    -------
    dict str -> QuiltSearch
        Per sensitive attribute, every quilt with its scale and the chosen one.
    """
    if not isinstance(model, AttributeNetworkModel):
        raise ParameterTypeError(
            f"model must be an AttributeNetworkModel, got {type(model).__name__}"
        )
    eps = check_epsilon(epsilon)
    return {s: _search(model, s, eps) for s in model.secrets}


def apmqm_accuracy(scale: float, beta: float = ACCURACY_BETA, dim: int = 1) -> float:
    """α with P(‖Z‖_∞ > α) ≤ β for m i.i.d. Laplace(b) coordinates: α = b ln(m/β).

    Zhang et al. 2022, Thm 4 states α = b log(1/(2β)); for one Laplace coordinate
    P(|Z| > b log(1/(2β))) = 2β, so we report the bound that holds with probability β.

    Parameters
    ----------
    scale : float
        Laplace scale b ≥ 0.
    beta : float
        β in (0, 1).
    dim : int
        Number m of coordinates (union bound).
    """
    b = check_real(scale, "scale", low=0.0)
    be = check_real(beta, "beta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    m = check_positive_int(dim, "dim")
    return b * math.log(m / be) if b > 0 else 0.0


def calibrate_apmqm(
    model: AttributeNetworkModel, *, epsilon: float, delta: float = 0.0
) -> CalibratedMechanism:
    """APMQM: Laplace noise scaled by the best Markov quilt (Zhang et al. 2022, Alg. 2 / Thm 3).

    For each sensitive attribute X_i, b_i = min over the trivial quilt (Δ_AF/ε) and every
    Markov quilt with e_Θ(X_Q | X_i) < ε of Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)); the noise is
    i.i.d. Laplace(max_i b_i) on each statistic (none when that is 0), which gives
    (ε, 0)-distributional attribute privacy (Thm 3).

    Diagnostics: ``scale``; ``trivial_scale`` (Δ_AF/ε); ``per_secret`` with every quilt
    considered (Q, N, R, max-influence, A ∩ N, Δ_{A∩N}F, scale, usable), the chosen one,
    ``fell_back`` and a note; ``accuracy_alpha`` at ``accuracy_beta`` (Thm 4, corrected).
    """
    searches = apmqm_quilts(model, epsilon=epsilon)
    scale = max(s.chosen.scale for s in searches.values())
    m = model.dim
    noise = Noise.none(m) if scale == 0.0 else Noise.isotropic("laplace", m, scale)
    q = model.query
    assumptions = [
        Assumption(
            "bayesian-network",
            "the attribute parameters (phi_1, ..., phi_m) are drawn from the given Bayesian "
            "network (the hyper-prior P of Def. 5)",
            True,
            "validated: acyclic, conditional tables are probability vectors (within 1e-9), "
            "every parameter value has positive probability",
        ),
        Assumption(
            "conditional-independence",
            "the columns are mutually independent given (phi_1, ..., phi_m), column k "
            "governed by phi_k (Zhang et al. 2022, §3 and §5: 'naive' conditional independence)",
            None,
            "a property of the data-generating process; it cannot be checked on the network",
        ),
        Assumption(
            "column-sensitivity",
            "Delta_S F bounds |F(X) - F(X')|_1 for every S-column-neighbours X, X' (§5.1)",
            True if q.derived else None,
            f"derived for a {q.kind} query" if q.derived else "given by the caller; not verified",
        ),
    ]
    notes = [*pure_delta_note(delta), *(s.note for s in searches.values())]
    guarantee = make_guarantee(
        "apmqm",
        model,  # type: ignore[arg-type]  # only its pair_labels are used
        epsilon=epsilon,
        delta=0.0,
        theorem=THEOREM,
        assumptions=assumptions,
        notes=notes,
        notion=NOTION,
    )
    diag = {
        "scale": scale,
        "trivial_scale": q.sensitivity(q.attributes) / epsilon,
        "sensitivity_all": q.sensitivity(q.attributes),
        "per_secret": {s: r.to_dict() for s, r in searches.items()},
        "accuracy_beta": ACCURACY_BETA,
        "accuracy_alpha": apmqm_accuracy(scale, ACCURACY_BETA, m),
    }
    return CalibratedMechanism("apmqm", noise, guarantee, model.statistics, diag)


# ---------------------------------------------------------------------------- Example 1
def school_network() -> ParameterNetwork:
    """The school of Zhang et al. 2022, Example 1, as a parameter network.

    Attributes (φ = a school-level parameter of each column) and the DAG of Fig. 1 as we
    read it: income → SAT, income → gender, gender → height, gender → weight,
    height → weight.

    - ``income``: share of high-income families, {0.2, 0.5, 0.8}, prior (0.3, 0.4, 0.3).
    - ``gender``: share of female students, {0.3, 0.5, 0.7}; mildly dependent on income
      (e_Θ(X_gender | X_income) = log 1.6 ≈ 0.47).
    - ``sat``: share of SAT scores above 1300, {0.1, 0.3, 0.5}; strongly dependent on
      income (e_Θ = log 7 ≈ 1.95).
    - ``height``: share taller than 66 in = 0.2·φ_gender + 0.6·(1 − φ_gender) (per-gender
      shares 0.2 and 0.6), i.e. {0.32, 0.40, 0.48}.
    - ``weight``: mean weight in lb = 130·φ_gender + 160·(1 − φ_gender), {139, 145, 151}.

    Height and weight parameters are functions of the gender mix because the per-gender
    height and weight distributions are population facts; their CPTs are therefore 0/1.

    Returns
    -------
    ParameterNetwork
        {gender} is a Markov quilt of income with N = {income, sat} and
        R = {height, weight}.
    """
    gender = (0.3, 0.5, 0.7)
    height = tuple(round(0.2 * g + 0.6 * (1 - g), 10) for g in gender)
    weight = tuple(round(130 * g + 160 * (1 - g), 10) for g in gender)
    h_sorted, w_sorted = sorted(height), sorted(weight)
    h_cpt = np.zeros((3, 3))
    for gi, h in enumerate(height):
        h_cpt[gi, h_sorted.index(h)] = 1.0
    w_cpt = np.zeros((3, 3, 3))  # (gender, height, weight): weight follows gender
    for gi, w in enumerate(weight):
        w_cpt[gi, :, w_sorted.index(w)] = 1.0
    return ParameterNetwork(
        {
            "income": [0.2, 0.5, 0.8],
            "sat": [0.1, 0.3, 0.5],
            "gender": list(gender),
            "height": h_sorted,
            "weight": w_sorted,
        },
        {
            "income": [0.3, 0.4, 0.3],
            "sat": [[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]],
            "gender": [[0.40, 0.35, 0.25], [0.30, 0.40, 0.30], [0.25, 0.35, 0.40]],
            "height": h_cpt,
            "weight": w_cpt,
        },
        parents={
            "sat": ["income"],
            "gender": ["income"],
            "height": ["gender"],
            "weight": ["gender", "height"],
        },
    )
