"""The guarantee that remains when covariances differ within a pair (Chen & Ohrimenko §4.4).

Models estimated from data never have Σ_θᵢ = Σ_θⱼ exactly. Thm 4.6 then still gives a
guarantee: if the mechanism is (ε, δ)-private for approximations f̃_θ and
max(D∞^η(f̃_θ‖f_θ), D∞^η(f_θ‖f̃_θ)) ≤ λ for every θ, it is
(ε + 2λ, (1 + e^(ε+λ))η + e^λ δ)-private for the true f_θ.

We apply it to the released output F + Z (itself a query whose mechanism is the identity,
so Thm 4.6's independence condition holds trivially): the true output under θ is
N(μ_θ, Σ_θ + Σ_Z) and the approximation is N(μ_θ, Σ_r + Σ_Z) for one reference θ_r for
which the calibration is verified. For two Gaussians with one mean, λ has a closed-form
bound (:func:`gaussian_covariance_divergence`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from scipy import linalg
from scipy.stats import chi2

from ..errors import ParameterError
from ..guarantees import Assumption, PrivacyGuarantee
from ..querymodel import GaussianQueryModel
from .base import CalibratedMechanism

__all__ = [
    "covariance_fallback",
    "fallback_delta",
    "fallback_eta",
    "gaussian_covariance_divergence",
]


def fallback_eta(delta: float) -> float:
    """η used for the fallback: δ/10 (or 1e-9 for a pure mechanism)."""
    return delta / 10.0 if delta > 0 else 1e-9


def fallback_delta(epsilon: float, delta: float, lam: float, eta: float) -> float:
    """Thm 4.6's δ' = min(1, (1 + e^(ε+λ)) η + e^λ δ), computed in log space.

    λ grows with the number of statistics and the covariance gap (hundreds on 200 unequal
    statistics), where e^(ε+λ) overflows a float; any term above 1 makes δ' = 1 (a true,
    if empty, guarantee), so the sum is formed only when every term is below 1.

    Parameters
    ----------
    epsilon, delta : float
        The mechanism's guarantee on the reference covariance.
    lam : float
        λ ≥ 0 (:func:`gaussian_covariance_divergence`).
    eta : float
        η in (0, 1).

    Returns
    -------
    float
        δ' in (0, 1].
    """
    if not math.isfinite(lam):
        return 1.0
    log_eta = math.log(eta)
    logs = [log_eta, log_eta + epsilon + lam]
    if delta > 0:
        logs.append(lam + math.log(delta))
    if max(logs) >= 0.0:
        return 1.0
    return min(1.0, math.fsum(math.exp(v) for v in logs))


@functools.lru_cache(maxsize=256)
def _chi2_quantile(q: float, dof: int) -> float:
    """χ²_dof⁻¹(q), remembered: a fallback asks it for every ordered pair of hypotheses
    (thousands of calls for a range secret) at one q and at most m degrees of freedom."""
    return float(chi2.ppf(q, dof))


def gaussian_covariance_divergence(cov_p: np.ndarray, cov_q: np.ndarray, eta: float) -> float:
    """An upper bound λ on D∞^η(N(μ, A) ‖ N(μ, B)) (Chen & Ohrimenko 2023, Def. 4.1).

    With γ_k the generalised eigenvalues of (A, B) (eigenvalues of B⁻¹A), the privacy
    loss under P = N(μ, A) is L = −½ Σ log γ_k + ½ Σ (γ_k − 1) z_k², z ~ N(0, I). Dropping
    the negative terms, L ≤ c + ½ g χ²_d with g = max(γ_k − 1) and d = #{γ_k > 1}, so
    λ = c + ½ g · χ²_d⁻¹(1 − η) has P(L > λ) ≤ η, hence P(S) ≤ e^λ Q(S) + η for all S.

    Parameters
    ----------
    cov_p, cov_q : ndarray, shape (m, m)
        Positive definite covariances A (of P) and B (of Q).
    eta : float
        η in (0, 1).

    Returns
    -------
    float
        λ ≥ 0; ``inf`` if a covariance is singular.
    """
    try:
        gam = linalg.eigh(cov_p, cov_q, eigvals_only=True)
    except (linalg.LinAlgError, ValueError):
        return math.inf
    if np.any(gam <= 0) or not np.all(np.isfinite(gam)):
        return math.inf
    c = -0.5 * float(np.sum(np.log(gam)))
    up = gam[gam > 1.0] - 1.0
    tail = 0.5 * float(up.max()) * _chi2_quantile(1.0 - eta, up.size) if up.size else 0.0
    return max(0.0, c + tail)


def _pair_condition_holds(model: GaussianQueryModel, cov: np.ndarray, d_star: float) -> bool:
    """Cor. A.1 with the shared covariance ``cov`` for every pair."""
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return False
    z = np.linalg.solve(chol, model.mean_differences.T)
    return bool(np.all(np.sum(z * z, axis=0) <= d_star**2 * (1 + 1e-9)))


def covariance_fallback(
    mech: CalibratedMechanism,
    model: GaussianQueryModel,
    *,
    uses_model_covariance: bool,
    d_star: float | None,
) -> CalibratedMechanism:
    """Attach the Thm 4.6 fallback guarantee to a mechanism calibrated on unequal covariances.

    Parameters
    ----------
    mech : CalibratedMechanism
        The calibrated mechanism; its guarantee must have a failed covariance assumption.
    model : GaussianQueryModel
        The model it was calibrated on.
    uses_model_covariance : bool
        True for EigM, DauM and the noiseless release: the reference covariance must then
        satisfy Cor. A.1 for every pair (checked); translation mechanisms are private for
        any shared covariance.
    d_star : float or None
        D*(ε, δ) of the mechanism (needed when ``uses_model_covariance``).
    """
    if uses_model_covariance and d_star is None:
        raise ParameterError("covariance_fallback: d_star is needed with uses_model_covariance")
    g = mech.guarantee
    gaussian_noise = all(c.kind == "gaussian" for c in mech.noise.components)
    noise_cov = mech.noise_covariance if gaussian_noise else np.zeros((model.dim,) * 2)
    eta = fallback_eta(g.delta)
    outputs = model.covariances + noise_cov
    best: tuple[float, int] | None = None
    # Each ordered divergence once (the loop below asks each twice, as (t, r) and (r, t)):
    # the same calls on the same matrices, so the same λ bit for bit, at half the work
    # (a range secret has dozens of values: 41² ordered pairs on Adult's [0.2, 0.6]).
    div: dict[tuple[int, int], float] = {}

    def divergence(a: int, b: int) -> float:
        if (a, b) not in div:
            div[(a, b)] = gaussian_covariance_divergence(outputs[a], outputs[b], eta)
        return div[(a, b)]

    for r in range(model.n_thetas):
        if (
            uses_model_covariance
            and d_star is not None
            and not _pair_condition_holds(model, outputs[r], d_star)
        ):
            continue
        lam = max(max(divergence(t, r), divergence(r, t)) for t in range(model.n_thetas))
        if best is None or lam < best[0]:
            best = (lam, r)
    if best is None or not math.isfinite(best[0]):
        note = (
            "no weaker guarantee could be computed for the unequal covariances (a "
            "covariance is singular, or no reference covariance satisfies Cor. A.1)"
        )
        return dataclasses.replace(mech, guarantee=dataclasses.replace(g, notes=(*g.notes, note)))
    lam, r = best
    eps2 = g.epsilon + 2 * lam
    dlt2 = fallback_delta(g.epsilon, g.delta, lam, eta)
    target = "F + Z" if gaussian_noise else "F"
    approx = Assumption(
        "covariance-approximation",
        f"the law of {target} under theta is within lambda = {lam:.4g} of "
        f"N(mu_theta, Sigma_ref + Sigma_Z) in eta-approximate max-divergence "
        f"(eta = {eta:.3g}), both directions",
        True,
        f"reference theta = {model.labels[r]}; bound from the chi-square tail of the "
        "privacy loss between the true and reference Gaussians",
    )
    kept = tuple(a for a in g.assumptions if a.name not in ("equal-covariance", "translation"))
    fallback = PrivacyGuarantee(
        epsilon=eps2,
        delta=dlt2,
        pairs=g.pairs,
        mechanism=g.mechanism,
        theorem=f"{g.theorem}; Chen & Ohrimenko 2023, Thm 4.6",
        calibration=g.calibration,
        notion=g.notion,
        assumptions=(*kept, approx),
        notes=(
            f"holds without the equal-covariance assumption, for Gaussian f_theta; "
            f"lambda = {lam:.4g}, eta = {eta:.3g}",
        ),
    )
    return dataclasses.replace(mech, guarantee=dataclasses.replace(g, fallback=fallback))
