"""The Expected Value Mechanism and its directional variant (Chen & Ohrimenko 2023, §4.1–4.2).

Under the translation assumption (f_θᵢ is f_θⱼ shifted by μᵢ − μⱼ), noise calibrated to
the largest distance between expected values Δ_E,n = max_Ψ ‖μᵢ − μⱼ‖ₙ gives distribution
privacy exactly as the Laplace/Gaussian mechanisms give DP (Thm 4.1, 4.2). When the
differences span a low-dimensional subspace, noise along it suffices (Thm 4.3).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..accounting.pair_profile import gaussian_delta
from ..guarantees import Assumption, PrivacyGuarantee
from ..noise import Noise
from ._common import (
    QueryModel,
    calibration_assumptions,
    difference_basis,
    make_guarantee,
    pair_distances,
    pure_delta_note,
    target_distance,
    translation_assumption,
)
from .base import CalibratedMechanism

__all__ = ["calibrate_dirm", "calibrate_expm", "gaussian_diagnostics"]


def gaussian_diagnostics(
    model: QueryModel, noise: Noise, epsilon: float, d_star: float, *, include_model: bool
) -> dict[str, Any]:
    """Per-pair Mahalanobis distances of the output and the exact δ(ε) they give.

    On ill-conditioned covariances the computed distance can exceed D* by rounding; that
    is reported (``distance_excess``), not raised: the headline of every Gaussian
    mechanism is checked afterwards by the exact profile (:mod:`distpriv.population.exact`).
    """
    dist = pair_distances(model, noise.covariance, include_model=include_model)
    worst = float(dist.max())
    return {
        "distance_excess": max(0.0, worst / d_star - 1.0) if d_star > 0 else 0.0,
        "allowed_distance": d_star,
        "pair_distances": dist,
        "achieved_delta": float(gaussian_delta(worst, epsilon=epsilon))
        if np.isfinite(worst)
        else 1.0,
        "distances_include_model_covariance": include_model,
    }


def _guarantee(
    model: QueryModel,
    kind: str,
    name: str,
    theorem: str,
    assumptions: list[Assumption],
    notes: list[str],
    calibration: str,
    *,
    epsilon: float,
    delta: float,
) -> PrivacyGuarantee:
    """ExpM's and DirM's guarantee: (ε, 0) with Laplace noise, (ε, δ) with Gaussian noise.

    Laplace noise needs no δ (a note says so when one was given); Gaussian noise carries the
    assumptions of its ``calibration`` (Thm 4.2's constant, or the exact analytic root).
    """
    if kind == "laplace":
        return make_guarantee(
            name,
            model,
            epsilon=epsilon,
            delta=0.0,
            theorem=theorem,
            assumptions=assumptions,
            notes=notes + pure_delta_note(delta),
        )
    return make_guarantee(
        name,
        model,
        epsilon=epsilon,
        delta=delta,
        theorem=theorem,
        assumptions=assumptions + calibration_assumptions(epsilon, calibration, delta),
        calibration=calibration,
        notes=notes,
    )


def calibrate_expm(
    model: QueryModel, *, epsilon: float, delta: float, kind: str, calibration: str = "analytic"
) -> CalibratedMechanism:
    """ExpM: i.i.d. noise scaled to Δ_E (Chen & Ohrimenko 2023, Thm 4.1 (L), Thm 4.2 (G)).

    Laplace: scale Δ_E,1/ε per coordinate, (ε, 0). Gaussian: σ = Δ_E,2 / D*(ε, δ) per
    coordinate; with ``calibration="classical"`` D* = ε/c as in Thm 4.2, with
    ``"analytic"`` the exact root of δ(ε; D) = δ (Balle & Wang 2018).
    """
    diffs = model.mean_differences
    m = model.dim
    assumptions = [translation_assumption(model)]
    if kind == "laplace":
        sens = float(np.abs(diffs).sum(axis=1).max())
        noise = Noise.isotropic("laplace", m, sens / epsilon)
        name, theorem = "expm-l", "Chen & Ohrimenko 2023, Thm 4.1"
        diag = {"sensitivity_l1": sens}
    else:
        sens = float(np.linalg.norm(diffs, axis=1).max())
        d_star, d_target = target_distance(epsilon, delta, calibration)
        noise = Noise.isotropic("gaussian", m, sens / d_target)
        name, theorem = "expm-g", "Chen & Ohrimenko 2023, Thm 4.2"
        diag = {
            "sensitivity_l2": sens,
            **gaussian_diagnostics(model, noise, epsilon, d_star, include_model=False),
        }
    guarantee = _guarantee(
        model, kind, name, theorem, assumptions, [], calibration, epsilon=epsilon, delta=delta
    )
    return CalibratedMechanism(name, noise, guarantee, model.statistics, diag)


def calibrate_dirm(
    model: QueryModel, *, epsilon: float, delta: float, kind: str, calibration: str = "analytic"
) -> CalibratedMechanism:
    """DirM: noise only along the span of the mean differences (Chen & Ohrimenko 2023, Thm 4.3).

    With V (m × d) an orthonormal basis of span{μᵢ − μⱼ}, the output is F + V Y, where
    Y has i.i.d. coordinates. Because both outputs of a pair live in the same affine
    subspace F + span(V), only the law of Y matters: Laplace with scale
    max_Ψ ‖Vᵀ(μᵢ − μⱼ)‖₁ / ε gives (ε, 0); Gaussian with σ = max_Ψ ‖Vᵀ(μᵢ − μⱼ)‖₂ / D*
    gives (ε, δ). For parallel differences (d = 1) this is exactly Thm 4.3 with
    v = (μᵢ − μⱼ)/‖μᵢ − μⱼ‖; for non-parallel ones it is the extension described after it.
    """
    diffs = model.mean_differences
    basis, resid = difference_basis(diffs)
    proj = diffs @ basis
    assumptions = [translation_assumption(model)]
    rank = basis.shape[1]
    notes = [
        f"mean differences span {rank} direction(s)"
        + (
            " (parallel, as Thm 4.3 assumes)"
            if rank == 1
            else "; noise is added along an orthonormal basis of their span"
        )
        + (
            f"; components below relative size {resid:.1e} were treated as zero"
            if resid > 0
            else ""
        )
    ]
    diag: dict[str, Any] = {"directions": basis, "rank": rank, "span_residual": resid}
    if kind == "laplace":
        sens = float(np.abs(proj).sum(axis=1).max()) if rank else 0.0
        noise = Noise.along("laplace", basis, np.full(rank, sens / epsilon))
        name, theorem = "dirm-l", "Chen & Ohrimenko 2023, Thm 4.3"
        diag["sensitivity_l1_projected"] = sens
    else:
        sens = float(np.linalg.norm(proj, axis=1).max()) if rank else 0.0
        d_star, d_target = target_distance(epsilon, delta, calibration)
        noise = Noise.along("gaussian", basis, np.full(rank, sens / d_target))
        name, theorem = "dirm-g", "Chen & Ohrimenko 2023, Thm 4.3 (Gaussian variant)"
        diag["sensitivity_l2_projected"] = sens
        if rank:
            diag.update(gaussian_diagnostics(model, noise, epsilon, d_star, include_model=False))
    guarantee = _guarantee(
        model, kind, name, theorem, assumptions, notes, calibration, epsilon=epsilon, delta=delta
    )
    return CalibratedMechanism(name, noise, guarantee, model.statistics, diag)
