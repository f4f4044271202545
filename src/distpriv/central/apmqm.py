"""The Attribute-Private Markov Quilt Mechanism (Zhang, Ohrimenko & Cummings 2022, §5).

Distributional attribute privacy (Def. 5) hides the parameter φ_i of a sensitive column.
The parameters form a Bayesian network (:class:`~distpriv.central.bayesnet.ParameterNetwork`)
and APMQM (Alg. 2) adds Laplace noise of scale max_{i ∈ C} b_i, where b_i starts at the
trivial quilt's Δ_AF/ε and is lowered to Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)) by every Markov
quilt (X_Q, X_N, X_R) of X_i with max-influence e_Θ(X_Q | X_i) < ε. Here Δ_SF is the
S-column-neighbour sensitivity of the query (§5.1): the largest change of F when the
columns in S change arbitrarily. Thm 3: the release is (ε, 0)-distributionally attribute
private.

What the mechanism is calibrated on (:class:`ColumnQuery`, :class:`AttributeNetworkModel`)
is in :mod:`distpriv.central.attribute_network`. The school of Example 1
(:func:`distpriv.datasets.school_network`) is worked-example data and lives in
:mod:`distpriv.datasets.networks` (a layer above this one, docs/architecture.md §2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterTypeError
from ..guarantees import Assumption
from ..noise import Noise
from ..util.validation import check_epsilon, check_positive_int, check_real
from ._common import make_guarantee, pure_delta_note
from .attribute_network import AttributeNetworkModel, ColumnQuery
from .base import CalibratedMechanism
from .bayesnet import MarkovQuilt

__all__ = [
    "AttributeNetworkModel",
    "ColumnQuery",
    "QuiltNoise",
    "QuiltSearch",
    "apmqm_accuracy",
    "apmqm_quilts",
    "calibrate_apmqm",
]

THEOREM = "Zhang, Ohrimenko & Cummings 2022, Alg. 2 / Thm 3"
NOTION = "distributional attribute privacy"
ACCURACY_BETA = 0.05
# Two quilts whose noise scales agree to this relative tolerance tie (their max-influences
# are sums over the same joint in different orders); the tie goes to the smaller influence,
# then to the smaller nearby set.
_TIE_RTOL = 1e-12


# ---------------------------------------------------------------------------- Alg. 2
@dataclass(frozen=True)
class QuiltNoise:
    """A Markov quilt with the Laplace scale it would give (Zhang et al. 2022, Alg. 2)."""

    #: (X_Q, X_N, X_R) and e_Θ(X_Q | X_i).
    quilt: MarkovQuilt
    #: A ∩ N, the queried attributes the quilt cannot shield.
    queried_nearby: tuple[str, ...]
    #: Δ_{A∩N}F.
    sensitivity: float
    #: Δ_{A∩N}F / (ε − e_Θ(X_Q | X_i)), or ``inf`` when e_Θ ≥ ε (not usable).
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
    """Alg. 2's search for one sensitive attribute: every quilt and the one chosen."""

    #: X_i.
    secret: str
    #: The trivial quilt first, then every other quilt (:meth:`ParameterNetwork.markov_quilts`).
    candidates: tuple[QuiltNoise, ...]
    #: Smallest scale b_i; ties go to the smaller max-influence, then the smaller X_N.
    chosen: QuiltNoise
    #: True when no quilt other than the trivial one has max-influence < ε (G_i = ∅).
    fell_back: bool
    #: What happened, in words, for the guarantee.
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
