"""Exact (ε, δ) profiles and divergence DistP of mechanisms with a finite output space.

For a pair (λ₀, λ₁) the output distributions μ_b = A#(λ_b) determine everything
(KM 2019a, Def. 8; KM 2019b, Def. 11):

* δ(ε) = max over the two directions of Σ_y max(0, μ₀[y] − e^ε μ₁[y]) — the smallest δ
  with A#(λ₀)[R] ≤ e^ε A#(λ₁)[R] + δ and vice versa for every R ⊆ Y;
* ε(δ) = max(0, D∞^δ(μ₀ ‖ μ₁), D∞^δ(μ₁ ‖ μ₀)), its inverse;
* the divergences KL, TV, χ², Hellinger and D∞^δ in both directions.

Also here: the DP ⇒ DistP (KM 2019a, Thm 1) and XDP ⇒ W∞-XDistP (Thm 2) guarantees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..distances import winf_distance
from ..divergences import (
    check_distribution,
    chi2_divergence,
    hellinger_divergence,
    hockey_stick,
    kl_divergence,
    max_divergence,
    total_variation,
)
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import Assumption, PrivacyGuarantee, to_jsonable
from ..util.records import field_values
from ..util.validation import check_array, check_delta
from .mechanisms import MatrixMechanism

__all__ = [
    "DIVERGENCE_NAMES",
    "DistPProfile",
    "Divergences",
    "distp_delta",
    "distp_epsilon",
    "distp_profile",
    "divergence_distp",
    "theorem1_guarantee",
    "theorem2_guarantee",
]

#: Divergences reported by :meth:`DistPProfile.divergences`, in order.
DIVERGENCE_NAMES: tuple[str, ...] = ("dinf", "kl", "tv", "chi2", "hellinger")


@dataclass(frozen=True)
class Divergences:
    """Divergence DistP of one pair in both directions (KM 2019b, Def. 11)."""

    #: D(μ₀ ‖ μ₁) and D(μ₁ ‖ μ₀) for ``dinf`` (D∞^δ), ``kl``, ``tv``, ``chi2`` and
    #: ``hellinger``.
    forward: dict[str, float]
    backward: dict[str, float]
    #: The δ of ``dinf``.
    delta: float = 0.0
    #: Monte Carlo standard errors of the worst direction (``None`` when exact).
    errors: dict[str, float] | None = None

    def worst(self, name: str) -> float:
        """max over the two directions: the ε of (ε, D)-DistP w.r.t. {(λ₀, λ₁), (λ₁, λ₀)}."""
        if name not in self.forward:
            raise ParameterError(f"divergence must be one of {sorted(self.forward)}, got {name!r}")
        return max(self.forward[name], self.backward[name])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                **field_values(self, "delta forward backward"),
                "worst": {n: self.worst(n) for n in self.forward},
                "standard_errors": self.errors,
            }
        )


def _directed(mu0: np.ndarray, mu1: np.ndarray, delta: float) -> dict[str, float]:
    return {
        "dinf": float(max_divergence(mu0, mu1, delta=delta)),
        "kl": float(kl_divergence(mu0, mu1)),
        "tv": float(total_variation(mu0, mu1)),
        "chi2": float(chi2_divergence(mu0, mu1)),
        "hellinger": float(hellinger_divergence(mu0, mu1)),
    }


@dataclass(frozen=True, eq=False)
class DistPProfile:
    """The exact DistP profile of a pair of output distributions μ₀, μ₁ over a finite set.

    Parameters
    ----------
    mu0, mu1 : ndarray, shape (n,)
        A#(λ₀) and A#(λ₁) (or, for the tupling mechanism, distributions over Y^{k+1}).
    """

    mu0: np.ndarray
    mu1: np.ndarray

    def __post_init__(self) -> None:
        a = check_distribution(self.mu0, "mu0")
        b = check_distribution(self.mu1, "mu1", size=a.size)
        a.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "mu0", a)
        object.__setattr__(self, "mu1", b)

    def delta(self, epsilon: float | ArrayLike) -> float | np.ndarray:
        """δ(ε) = max(Σ max(0, μ₀ − e^ε μ₁), Σ max(0, μ₁ − e^ε μ₀)) for any ε (any shape)."""
        eps = check_array(epsilon, "epsilon", min_size=1)
        out = np.maximum(
            hockey_stick(self.mu0, self.mu1, eps), hockey_stick(self.mu1, self.mu0, eps)
        )
        return float(out) if np.ndim(out) == 0 else out

    def epsilon(self, delta: float | ArrayLike = 0.0) -> float | np.ndarray:
        """ε(δ) = max(0, D∞^δ(μ₀ ‖ μ₁), D∞^δ(μ₁ ‖ μ₀)): the smallest ε of (ε, δ)-DistP.

        ``inf`` when no finite ε works (one output distribution puts more than δ mass
        where the other has none).
        """
        d = check_array(delta, "delta", min_size=1, nonnegative=True)
        if np.any(d >= 1):
            raise ParameterError(f"delta must be < 1, got {float(d.max())!r}")
        fwd = max_divergence(self.mu0, self.mu1, delta=d)
        bwd = max_divergence(self.mu1, self.mu0, delta=d)
        out = np.maximum(np.maximum(fwd, bwd), 0.0)
        return float(out) if np.ndim(out) == 0 else out

    def to_dict(self, deltas: tuple[float, ...] = (0.0, 0.001, 0.01, 0.1)) -> dict[str, Any]:
        """JSON-safe summary: the support size and ε at a few δ."""
        return to_jsonable(
            {
                "n_outputs": int(self.mu0.size),
                "epsilon": {f"{d:g}": self.epsilon(d) for d in deltas},
            }
        )

    def divergences(self, delta: float = 0.0) -> Divergences:
        """KL, TV, χ², Hellinger and D∞^δ in both directions (KM 2019b, Def. 11)."""
        dlt = check_delta(delta)
        return Divergences(
            _directed(self.mu0, self.mu1, dlt), _directed(self.mu1, self.mu0, dlt), dlt
        )


def _output_pair(mechanism: Any, lam0: ArrayLike, lam1: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    from .coupling import CouplingMechanism

    if isinstance(mechanism, MatrixMechanism):
        return mechanism.lift(lam0), mechanism.lift(lam1)
    if isinstance(mechanism, CouplingMechanism):
        return mechanism.lift(lam0, 0), mechanism.lift(lam1, 1)
    raise ParameterTypeError(
        "mechanism must be a MatrixMechanism or a CouplingMechanism (for the tupling "
        f"mechanism use distpriv.local.tupling), got {type(mechanism).__name__}"
    )


def distp_profile(mechanism: Any, lam0: ArrayLike, lam1: ArrayLike) -> DistPProfile:
    """Exact DistP profile of a matrix mechanism for the pair (λ₀, λ₁).

    Parameters
    ----------
    mechanism : MatrixMechanism or CouplingMechanism
        For a coupling mechanism, λ₀ is obfuscated by C(s₀, ·) and λ₁ by C(s₁, ·), the
        states of its two estimates (KM 2019b, Def. 15).
    lam0, lam1 : array_like, shape (n_x,)
        The input distributions.
    """
    mu0, mu1 = _output_pair(mechanism, lam0, lam1)
    return DistPProfile(mu0, mu1)


def distp_delta(mechanism: Any, lam0: ArrayLike, lam1: ArrayLike, epsilon: float) -> float:
    """δ(ε) of the pair, both directions (see :class:`DistPProfile`)."""
    return distp_profile(mechanism, lam0, lam1).delta(epsilon)  # type: ignore[return-value]


def distp_epsilon(mechanism: Any, lam0: ArrayLike, lam1: ArrayLike, delta: float = 0.0) -> float:
    """ε(δ) of the pair, both directions (see :class:`DistPProfile`)."""
    return distp_profile(mechanism, lam0, lam1).epsilon(delta)  # type: ignore[return-value]


def divergence_distp(
    mechanism: Any, lam0: ArrayLike, lam1: ArrayLike, *, delta: float = 0.0
) -> Divergences:
    """KL, TV, χ², Hellinger and D∞^δ between A#(λ₀) and A#(λ₁) (KM 2019b, Def. 11)."""
    return distp_profile(mechanism, lam0, lam1).divergences(delta)


# --------------------------------------------------------------------------------------------
# Theorems 1 and 2 of KM 2019a
# --------------------------------------------------------------------------------------------


def _pairwise_dp_epsilon(mechanism: MatrixMechanism, delta: float) -> float:
    """max over ordered pairs x ≠ x' of the exact ε(δ) of A(x) versus A(x')."""
    a = mechanism.matrix
    n = a.shape[0]
    best = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                best = max(best, float(max_divergence(a[i], a[j], delta=delta)))
    return best


def theorem1_guarantee(
    mechanism: MatrixMechanism, *, delta: float = 0.0, labels: tuple[str, str] = ("lam0", "lam1")
) -> PrivacyGuarantee:
    """DP ⇒ DistP (KM 2019a, Thm 1) with Φ = all pairs of inputs.

    If A is (ε, δ)-DP w.r.t. Φ, it is (ε, δ·|Φ|)-DistP w.r.t. Φ# (here every pair of
    distributions). ε is the exact DP parameter of the matrix at δ; |Φ| counts the ordered
    pairs x ≠ x'. With δ = 0 this is (ε, 0)-DistP for every pair, e.g. randomized response.

    Parameters
    ----------
    mechanism : MatrixMechanism
    delta : float
        δ of the point DP (0 by default; δ > 0 costs O(n_x² n_y log n_y)).
    labels : (str, str)
        Names of the pair in the guarantee.
    """
    if not isinstance(mechanism, MatrixMechanism):
        raise ParameterTypeError(
            f"mechanism must be a MatrixMechanism, got {type(mechanism).__name__}"
        )
    dlt = check_delta(delta)
    n = mechanism.n_inputs
    eps = mechanism.dp_epsilon() if dlt == 0.0 else _pairwise_dp_epsilon(mechanism, dlt)
    size = n * (n - 1)
    return PrivacyGuarantee(
        epsilon=eps,
        delta=min(dlt * size, 1.0),
        pairs=(tuple(labels),),  # type: ignore[arg-type]
        mechanism=mechanism.name,
        theorem="Kawamoto & Murakami 2019a, Thm 1",
        notion="distribution privacy",
        assumptions=(
            Assumption(
                "point-dp",
                "A is (eps, delta)-DP w.r.t. every pair of inputs",
                True,
                f"measured exactly from the matrix: eps = {eps:.6g} at delta = {dlt:g}; "
                f"|Phi| = {size} ordered pairs",
            ),
        ),
    )


def theorem2_guarantee(
    mechanism: MatrixMechanism,
    lam0: ArrayLike,
    lam1: ArrayLike,
    *,
    xdp_epsilon: float | None = None,
    labels: tuple[str, str] = ("lam0", "lam1"),
) -> PrivacyGuarantee:
    """XDP ⇒ XDistP (KM 2019a, Thm 2): ε-DistP with ε = ε_XDP · W∞,d(λ₀, λ₁).

    Parameters
    ----------
    mechanism : MatrixMechanism
        Built on a Domain (its input coordinates and metric define d and W∞).
    lam0, lam1 : array_like, shape (n_x,)
    xdp_epsilon : float, optional
        The XDP constant; measured exactly by :meth:`MatrixMechanism.xdp_epsilon` when
        omitted (for the discretised planar Laplace it lies in [ε, 2ε]).
    labels : (str, str)
        Names of the pair.

    Notes
    -----
    W∞ comes from :func:`distpriv.distances.winf_distance` (exact, max-flow based).
    """
    if not isinstance(mechanism, MatrixMechanism) or mechanism.domain is None:
        raise ParameterTypeError("theorem2_guarantee needs a MatrixMechanism built on a Domain")
    dom = mechanism.domain
    p = dom.check_distribution(lam0, "lam0")
    q = dom.check_distribution(lam1, "lam1")
    if p.ndim != 1 or q.ndim != 1:
        raise ParameterError("lam0 and lam1 must be single distributions of shape (n_x,)")
    measured = xdp_epsilon is None
    xdp = mechanism.xdp_epsilon() if measured else float(check_array(xdp_epsilon, "xdp_epsilon"))
    w = winf_distance(dom.inputs, dom.inputs, u_weights=p, v_weights=q, metric=dom.metric)
    return PrivacyGuarantee(
        epsilon=xdp * w,
        delta=0.0,
        pairs=(tuple(labels),),  # type: ignore[arg-type]
        mechanism=mechanism.name,
        theorem="Kawamoto & Murakami 2019a, Thm 2",
        notion="extended distribution privacy (W-infinity)",
        assumptions=(
            Assumption(
                "xdp",
                "A is (eps_XDP, d, 0)-XDP on the inputs",
                True if measured else None,
                f"eps_XDP = {xdp:.6g} ({'measured exactly' if measured else 'given'}); "
                f"W-infinity(lam0, lam1) = {w:.6g} in the {dom.metric} metric",
            ),
        ),
    )
