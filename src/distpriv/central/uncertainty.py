"""Mechanisms that exploit adversarial uncertainty (Chen & Ohrimenko 2023, §4.3 and App. A).

When f_θ = N(μ_θ, Σ_θ) with Σ_θᵢ = Σ_θⱼ on each pair, the released F + Z is Gaussian with
covariance Σ_θ + Σ_Z, and (Cor. A.1) the release is (ε, δ)-private as soon as
(μᵢ − μⱼ)ᵀ(Σ_θ + Σ_Z)⁻¹(μᵢ − μⱼ) ≤ D*(ε, δ)² for every pair, where D* = ε/c classically
(Thm 4.4) or the exact root of δ(ε; D) = δ (analytic; docs/architecture.md §4). The model's own
randomness then replaces part of the noise.
"""

from __future__ import annotations

import numpy as np

from ..errors import MechanismNotApplicableError, ParameterError
from ..guarantees import Assumption
from ..noise import Noise
from ..util.validation import check_array
from ._common import (
    COV_RTOL,
    QueryModel,
    calibration_assumptions,
    difference_basis,
    equal_covariance_assumption,
    gaussian_assumption,
    is_singular,
    mahalanobis,
    make_guarantee,
    target_distance,
)
from ._constant import constant_directions
from .base import CalibratedMechanism
from .expected_value import gaussian_diagnostics

__all__ = ["calibrate_daum", "calibrate_eigm", "calibrate_noiseless", "daum_variance"]


def _shared_eigenvectors(covs: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    """Symmetric matrices share an eigenbasis iff they commute; measure ‖ΣR − RΣ‖/‖Σ‖‖R‖."""
    worst = 0.0
    for cov in covs:
        den = np.linalg.norm(cov) * np.linalg.norm(ref)
        if den > 0:
            worst = max(worst, float(np.linalg.norm(cov @ ref - ref @ cov) / den))
    return worst <= COV_RTOL, worst


def calibrate_eigm(
    model: QueryModel, *, epsilon: float, delta: float, calibration: str = "analytic"
) -> CalibratedMechanism:
    """EigM: Gaussian noise along the eigenvectors of Σ_θ (Chen & Ohrimenko 2023, Thm 4.5).

    With s² = (Δ_E,2 / D*)² and v_k the eigenvectors, σ_k² = max_θ max(0, s² − v_kᵀΣ_θv_k)
    and Σ_Z = Σ_k σ_k² v_k v_kᵀ, so that every Σ_θ + Σ_Z ⪰ s² I (Cor. A.2).

    When the Σ_θ do not share eigenvectors (data-driven models), v_k are the eigenvectors
    of the average covariance and the smallest isotropic top-up that restores
    λ_min(Σ_θ + Σ_Z) ≥ s² for every θ is added; the "shared-eigenvectors" assumption is
    then reported as failed, but the guarantee still follows from Cor. A.2.
    """
    gm, gauss = gaussian_assumption(model)
    d_star, d_target = target_distance(epsilon, delta, calibration)
    sens = float(np.linalg.norm(gm.mean_differences, axis=1).max())
    s2 = (sens / d_target) ** 2
    ref = gm.covariances.mean(axis=0)
    _, vecs = np.linalg.eigh(ref)
    shared, comm = _shared_eigenvectors(gm.covariances, ref)
    # v_kᵀ Σ_θ v_k for every θ and k: the eigenvalues when the basis is shared.
    lam = np.einsum("mk,tmn,nk->tk", vecs, gm.covariances, vecs)
    sig2 = np.max(np.maximum(0.0, s2 - lam), axis=0)
    topup = 0.0
    for cov in gm.covariances:
        low = float(np.linalg.eigvalsh(cov + (vecs * sig2) @ vecs.T)[0])
        topup = max(topup, s2 - low)
    if topup > 1e-13 * s2:
        sig2 = sig2 + topup
    else:
        topup = 0.0
    noise = Noise.along("gaussian", vecs, np.sqrt(sig2))
    assumptions = [
        gauss,
        equal_covariance_assumption(gm),
        Assumption(
            "shared-eigenvectors",
            "the covariances Sigma_theta share their eigenvectors (Thm 4.5)",
            shared,
            f"largest relative commutator {comm:.3g}"
            + (
                f"; an isotropic top-up of variance {topup:.4g} keeps Cor. A.2 satisfied"
                if topup
                else ""
            ),
        ),
        *calibration_assumptions(epsilon, calibration, delta),
    ]
    guarantee = make_guarantee(
        "eigm",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem="Chen & Ohrimenko 2023, Thm 4.5 (via Cor. A.2)",
        assumptions=assumptions,
        calibration=calibration,
    )
    diag = {
        "sensitivity_l2": sens,
        "target_variance": s2,
        "eigenvectors": vecs,
        "model_eigenvalues": lam,
        "noise_variances": sig2,
        "isotropic_topup": topup,
        **gaussian_diagnostics(gm, noise, epsilon, d_star, include_model=True),
    }
    return CalibratedMechanism("eigm", noise, guarantee, model.statistics, diag)


def daum_variance(
    cov: np.ndarray, diff: np.ndarray, direction: np.ndarray, distance: float
) -> float:
    """Smallest σ² with dᵀ(Σ + σ² v vᵀ)⁻¹ d ≤ D² (Chen & Ohrimenko 2023, Alg. 1 line 7).

    By Sherman–Morrison, with a = vᵀΣ⁻¹v, b = vᵀΣ⁻¹d and q = dᵀΣ⁻¹d,
    dᵀ(Σ + σ² vvᵀ)⁻¹d = q − σ² b² / (1 + σ² a). With q⊥ = q − b²/a (the part of d the
    direction v cannot reach, 0 when d ∥ v), the condition solves to

        σ² = (q − D²) / (a (D² − q⊥))     when q > D²  (0 otherwise),

    which for d = αv is α²/D² − 1/a, the closed form of Alg. 1's positive-definiteness
    condition (docs/architecture.md §4). q⊥ is computed as a projected norm rather than as
    b² − a q, which cancels catastrophically when q ≫ D². Returns +inf when
    q⊥ ≥ D² (no multiple of vvᵀ suffices).

    Parameters
    ----------
    cov : ndarray, shape (m, m)
        Σ_θ, positive definite.
    diff : ndarray, shape (m,)
        μᵢ − μⱼ.
    direction : ndarray, shape (m,)
        Unit vector v.
    distance : float
        D, the largest admissible Mahalanobis distance.
    """
    chol = np.linalg.cholesky(cov)
    sv = np.linalg.solve(chol, direction)
    sd = np.linalg.solve(chol, diff)
    a, q = float(sv @ sv), float(sd @ sd)
    excess = q - distance**2
    if excess <= 0:
        return 0.0
    q_perp = float(np.sum((sd - (sv @ sd / a) * sv) ** 2))
    room = distance**2 - q_perp
    if room <= 0:
        return float("inf")
    return excess / (a * room)


def calibrate_daum(
    model: QueryModel,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "analytic",
    direction: object = None,
) -> CalibratedMechanism:
    """DauM: Gaussian noise along one direction v, using the model's own variance.

    Chen & Ohrimenko 2023, Alg. 1 / Thm A.1, with the σ² of line 7 in closed form
    (:func:`daum_variance`). v defaults to the direction of the mean differences (their
    top singular vector when there are several pairs). The per-pair condition of Cor. A.1
    is solved exactly for any v, so the guarantee does not need the differences to be
    parallel; when they are not, the note says so, and a direction that cannot hide
    some pair raises :class:`MechanismNotApplicableError`.

    Parameters
    ----------
    direction : array_like, shape (m,), optional
        The unit vector v (normalised if needed).
    """
    gm, gauss = gaussian_assumption(model)
    diffs = gm.mean_differences
    basis, _ = difference_basis(diffs)
    if direction is None:
        v = np.eye(gm.dim)[:, 0] if basis.shape[1] == 0 else basis[:, 0]
    else:
        v = check_array(direction, "direction", shape=(gm.dim,))
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            raise ParameterError("direction must be a non-zero vector")
        v = v / norm
    # Directions constant under every hypothesis with equal means (a full-coverage
    # histogram's sum) reveal nothing: calibrate in their complement (central/_constant.py).
    const = constant_directions(gm, "daum")
    red = const.reduce(gm) if const.count else gm
    v_red = const.complement.T @ v
    if const.count:
        norm = float(np.linalg.norm(v_red))
        if norm <= 1e-12:
            raise MechanismNotApplicableError(
                f"daum: the direction lies along the constant direction(s) "
                f"({const.describe(gm.statistics)}), where noise hides nothing; give a "
                "direction with a component along the mean differences"
            )
        v_red = v_red / norm
        v = const.complement @ v_red
    for t, cov in enumerate(red.covariances):
        if is_singular(cov):
            raise MechanismNotApplicableError(
                f"daum needs covariances positive definite outside the directions constant "
                f"under every hypothesis; Sigma for theta {gm.labels[t]!s} is singular "
                f"{'in their complement ' if const.count else ''}(a direction with zero "
                "variance under this hypothesis only): use 'eigm' or 'expm-g'"
            )
    d_star, d_target = target_distance(epsilon, delta, calibration)
    per_pair = np.empty(len(gm.pairs))
    for p, ((i, j), d) in enumerate(zip(red.pairs, red.mean_differences, strict=True)):
        per_pair[p] = max(daum_variance(red.covariances[t], d, v_red, d_target) for t in (i, j))
    if not np.all(np.isfinite(per_pair)):
        bad = gm.pair_labels[int(np.argmax(~np.isfinite(per_pair)))]
        raise MechanismNotApplicableError(
            f"daum: noise along direction {np.round(v, 6).tolist()} cannot hide pair "
            f"{bad}: its mean difference points too far away from it; use 'eigm' or 'expm-g' "
            "(full-rank noise), or mechanism='auto'"
        )
    sig2 = float(per_pair.max())
    noise = Noise.along("gaussian", v.reshape(-1, 1), np.array([np.sqrt(sig2)]))
    parallel = np.abs(diffs @ v)
    off = np.linalg.norm(diffs - np.outer(diffs @ v, v), axis=1)
    rel_off = float(np.max(off / np.maximum(np.linalg.norm(diffs, axis=1), 1e-300)))
    notes = []
    if rel_off > 1e-9:
        notes.append(
            f"mean differences are not all parallel to the noise direction (largest relative "
            f"orthogonal part {rel_off:.3g}); the guarantee follows from Cor. A.1, checked "
            "per pair, not from Thm A.1's parallel assumption"
        )
    assumptions = [
        gauss,
        equal_covariance_assumption(gm),
        *([const.assumption(gm.statistics)] if const.count else []),
        *calibration_assumptions(epsilon, calibration, delta),
    ]
    guarantee = make_guarantee(
        "daum",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem="Chen & Ohrimenko 2023, Alg. 1 / Thm A.1 (via Cor. A.1)",
        assumptions=assumptions,
        calibration=calibration,
        notes=notes,
    )
    diag = {
        "direction": v,
        "alphas": parallel,
        "pair_variances": per_pair,
        "noise_variance": sig2,
        "directional_expm_variance": float((parallel.max() / d_target) ** 2),
        "constant_directions": const.null,
        **gaussian_diagnostics(gm, noise, epsilon, d_star, include_model=True),
    }
    return CalibratedMechanism("daum", noise, guarantee, model.statistics, diag)


def calibrate_noiseless(
    model: QueryModel, *, epsilon: float, delta: float, calibration: str = "analytic"
) -> CalibratedMechanism:
    """Release F(Data) without noise when the model already hides the secret.

    Chen & Ohrimenko 2023, Thm 4.4 (Cor. A.1 with Σ_Z = 0): private iff every pair's
    Mahalanobis distance √((μᵢ − μⱼ)ᵀΣ_θ⁻¹(μᵢ − μⱼ)) ≤ D*(ε, δ). Refuses otherwise.
    """
    gm, gauss = gaussian_assumption(model)
    d_star, _ = target_distance(epsilon, delta, calibration)
    dist = np.array(
        [
            max(mahalanobis(d, gm.covariances[t]) for t in (i, j))
            for (i, j), d in zip(gm.pairs, gm.mean_differences, strict=True)
        ]
    )
    worst = int(np.argmax(dist))
    if dist[worst] > d_star:
        a, b = gm.pair_labels[worst]
        raise MechanismNotApplicableError(
            f"noiseless release is not ({epsilon:g}, {delta:g})-private: pair ({a}, {b}) has "
            f"Mahalanobis distance {dist[worst]:.4g} > D* = {d_star:.4g}; use 'eigm' or "
            "'expm-g' (full-rank noise), or mechanism='auto'"
        )
    assumptions = [
        gauss,
        equal_covariance_assumption(gm),
        *calibration_assumptions(epsilon, calibration, delta),
    ]
    guarantee = make_guarantee(
        "noiseless",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem="Chen & Ohrimenko 2023, Thm 4.4 / Cor. A.1",
        assumptions=assumptions,
        calibration=calibration,
    )
    noise = Noise.none(gm.dim)
    diag = gaussian_diagnostics(gm, noise, epsilon, d_star, include_model=True)
    return CalibratedMechanism("noiseless", noise, guarantee, model.statistics, diag)
