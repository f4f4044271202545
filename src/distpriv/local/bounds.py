"""Theorem 3 of KM 2019a: the (ε_α, δ_α)-DistP of the tupling mechanism, and when it holds.

ε_α = ln((k + (α + β)|Y|) / (k − α|Y|)) and δ_α = 2 exp(−2α²/(kβ²)) + η for 0 < α < k/|Y|,
w.r.t. the distributions λ with Pr_{y uniform}[A#(λ)[y] ≤ β] ≥ 1 − η. The proof (App. B.8)
is sound for η = 0; :func:`tupling_bound` uses that case by default and records, as a
failed assumption, when it is asked to use η > 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ParameterError
from ..guarantees import Assumption, PrivacyGuarantee, to_jsonable
from ..util.records import field_values
from ..util.validation import check_delta, check_positive_int, check_real
from .tupling import TuplingMechanism, _weights

__all__ = ["TuplingBound", "theorem3_bound", "tupling_bound"]


def theorem3_bound(
    *, k: int, n_outputs: int, beta: float, eta: float, alpha: float
) -> tuple[float, float]:
    """(ε_α, δ_α) of KM 2019a, Thm 3, as stated.

    ε_α = ln((k + (α + β)|Y|) / (k − α|Y|)) and δ_α = 2 exp(−2α² / (kβ²)) + η, for
    0 < α < k/|Y|: the (k, ν, A)-tupling mechanism with uniform ν is (ε_α, δ_α)-DistP
    w.r.t. Λ_{β,η,A}², the distributions λ with Pr_{y uniform}[A#(λ)[y] ≤ β] ≥ 1 − η.

    Parameters
    ----------
    k : int
        Dummies (≥ 1).
    n_outputs : int
        |Y| (≥ 1).
    beta, eta : float
        In [0, 1].
    alpha : float
        In (0, k/|Y|).

    Raises
    ------
    ParameterError
        If α is outside (0, k/|Y|), k < 1, or β, η outside [0, 1].

    Notes
    -----
    The proof's Hoeffding step needs every dummy term A#(λ)[y_j] ≤ β, and its last step
    treats Pr[A#(λ₀)[y_i] > β] for the *real* output as η although η is a probability
    under uniform y. Both hold when η = 0, and then the theorem is sound; for η > 0 it can
    fail (see :func:`tupling_bound`).
    """
    kk = check_positive_int(k, "k", minimum=1)
    ny = check_positive_int(n_outputs, "n_outputs", minimum=1)
    b = check_real(beta, "beta", low=0.0, high=1.0)
    e = check_real(eta, "eta", low=0.0, high=1.0)
    a = check_real(alpha, "alpha")
    if not 0.0 < a < kk / ny:
        raise ParameterError(
            f"alpha must be in (0, k/|Y|) = (0, {kk / ny:.6g}) (KM 2019a, Thm 3), got {a!r}"
        )
    eps = math.log((kk + (a + b) * ny) / (kk - a * ny))
    dlt = (2.0 * math.exp(-2.0 * a * a / (kk * b * b)) if b > 0 else 0.0) + e
    return eps, dlt


@dataclass(frozen=True)
class TuplingBound:
    """Thm 3 of KM 2019a evaluated for a pair, with β and η measured from A#(λ)."""

    #: (ε_α, δ_α); ε = ``inf`` when no admissible α reaches the requested δ.
    epsilon: float
    delta: float
    #: The parameters that minimise ε_α subject to δ_α ≤ the requested δ.
    beta: float
    eta: float
    alpha: float
    k: int
    n_outputs: int
    requested_delta: float
    #: Uniform dummies; η = 0 (the case the proof covers).
    assumptions: tuple[Assumption, ...]

    def guarantee(
        self, mechanism: str = "tupling", labels: tuple[str, str] = ("lam0", "lam1")
    ) -> PrivacyGuarantee:
        """As a :class:`~distpriv.PrivacyGuarantee`."""
        return PrivacyGuarantee(
            epsilon=self.epsilon,
            delta=self.delta,
            pairs=(tuple(labels),),  # type: ignore[arg-type]
            mechanism=mechanism,
            theorem="Kawamoto & Murakami 2019a, Thm 3",
            notion="distribution privacy",
            assumptions=self.assumptions,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                **field_values(self, "epsilon delta beta eta alpha k n_outputs requested_delta"),
                "assumptions": [a.to_dict() for a in self.assumptions],
            }
        )


def _alpha_for(delta: float, eta: float, beta: float, k: int) -> float:
    """Smallest α with 2 exp(−2α²/(kβ²)) + η ≤ δ."""
    return beta * math.sqrt(k * math.log(2.0 / (delta - eta)) / 2.0)


def tupling_bound(
    mechanism: TuplingMechanism,
    lam0: ArrayLike,
    lam1: ArrayLike,
    *,
    delta: float,
    allow_eta: bool = False,
) -> TuplingBound:
    """The smallest ε Thm 3 of KM 2019a certifies at δ for the pair (λ₀, λ₁).

    β and η are measured from A#(λ₀) and A#(λ₁): for a candidate β, η is the larger
    fraction of outputs y with A#(λ_b)[y] > β; α is the smallest value with δ_α ≤ δ, and
    the result minimises ε_α over the candidates (it is ``inf`` if none has α < k/|Y|).

    Parameters
    ----------
    mechanism : TuplingMechanism
        Thm 3 needs uniform dummies; the result records whether they are.
    lam0, lam1 : array_like, shape (n_x,)
    delta : float
        Target δ in (0, 1).
    allow_eta : bool
        ``False`` (default): β = max_y A#(λ_b)[y], η = 0 — the case the proof covers, and
        then ε_α ≥ the exact ε(δ). ``True``: also try η > 0, as the theorem is stated.
        This is *not* sound: with A the identity and two point masses on |Y| = 6, k = 2,
        δ = 0.5, β = 0, η = 1/6, the stated bound tends to ε = 0 while the exact ε(0.5) is
        positive (total variation ≥ (5/6)² > 0.5). The result then records a failed
        assumption.
    """
    a0, a1, _, _ = _weights(mechanism, lam0, lam1)
    dlt = check_delta(delta, positive=True)
    k, ny = mechanism.k, mechanism.n_outputs
    top = max(float(a0.max()), float(a1.max()))
    candidates = np.unique(np.concatenate([a0, a1])) if allow_eta else np.array([top])
    best = (math.inf, math.nan, math.nan, math.nan, math.nan)
    for beta in candidates:
        eta = max(float(np.mean(a0 > beta)), float(np.mean(a1 > beta)))
        if eta >= dlt:
            continue
        alpha = _alpha_for(dlt, eta, float(beta), k)
        if alpha <= 0.0:  # β = 0: every A#(λ)[y] is 0 there; any tiny α works
            alpha = 1e-12 * k / ny
        if alpha >= k / ny:
            continue
        eps, d_alpha = theorem3_bound(k=k, n_outputs=ny, beta=float(beta), eta=eta, alpha=alpha)
        if eps < best[0]:
            best = (eps, d_alpha, float(beta), eta, alpha)
    eps, d_alpha, beta, eta, alpha = best
    uniform = mechanism.uniform_dummies
    assumptions = (
        Assumption(
            "uniform-dummies",
            "the dummies are uniform over Y (KM 2019a, Thm 3)",
            uniform,
            "nu is uniform" if uniform else "nu is not uniform: Thm 3 does not apply",
        ),
        Assumption(
            "eta-zero",
            "eta = 0: every output has A#(lambda)[y] <= beta (the case the proof covers)",
            None if math.isnan(eta) else bool(eta == 0.0),
            "no admissible alpha < k/|Y| reaches this delta"
            if math.isnan(eta)
            else f"beta = {beta:.6g}, eta = {eta:.6g}"
            + (
                ""
                if eta == 0.0
                else "; with eta > 0 the proof's Hoeffding step is unproven and the bound "
                "can be below the exact epsilon"
            ),
        ),
    )
    return TuplingBound(
        epsilon=eps,
        delta=d_alpha if math.isfinite(eps) else 1.0,
        beta=beta,
        eta=eta,
        alpha=alpha,
        k=k,
        n_outputs=ny,
        requested_delta=dlt,
        assumptions=assumptions,
    )
