"""The Wasserstein Mechanism and its approximate variant (Chen & Ohrimenko 2023, §3).

Laplace noise per coordinate with scale Δ/ε, where Δ is the largest ∞-Wasserstein
distance (L1 ground metric) between the f_θ of a pair (Thm 3.1, (ε, 0)), or a W for which
every pair is (W, δ)-close (Thm 3.2, (ε, δ)); Thm 3.3 gives such a W from means and tail
bounds alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..distances import closeness, winf_distance
from ..errors import MechanismNotApplicableError
from ..guarantees import Assumption
from ..noise import Noise
from ..querymodel import GaussianQueryModel, SampledQueryModel
from ..util.validation import check_choice
from ._common import (
    QueryModel,
    covariance_gaps,
    equal_covariance_assumption,
    make_guarantee,
    pure_delta_note,
)
from .base import CalibratedMechanism

__all__ = ["calibrate_approx_wasserstein", "calibrate_wasserstein", "gaussian_l1_tail"]

CLOSENESS_METHODS = ("coupling", "bound")


def _empirical_assumption(model: SampledQueryModel) -> Assumption:
    sizes = ", ".join(str(s.shape[0]) for s in model.samples)
    return Assumption(
        "empirical-model",
        "the samples are the distributions f_theta (their empirical measures)",
        None,
        f"sample sizes {sizes}; for a continuous f_theta the distance between samples can "
        "understate the true one",
    )


def calibrate_wasserstein(
    model: QueryModel, *, epsilon: float, delta: float
) -> CalibratedMechanism:
    """Wasserstein Mechanism, Laplace scale Δ_W/ε (Chen & Ohrimenko 2023, Thm 3.1).

    For a Gaussian model with equal covariances on a pair, f_θᵢ is f_θⱼ translated by
    d = μᵢ − μⱼ, so W∞ = ‖d‖₁ (the translation coupling attains Jensen's lower bound).
    With unequal covariances W∞ is infinite and the mechanism does not apply. For a
    sampled model W∞ is computed exactly between the empirical distributions.
    """
    if isinstance(model, GaussianQueryModel):
        gaps = covariance_gaps(model)
        if np.any(gaps > 1e-9):
            a, b = model.pair_labels[int(np.argmax(gaps))]
            raise MechanismNotApplicableError(
                f"wasserstein: the infinity-Wasserstein distance between Gaussians with "
                f"different covariances is infinite (pair ({a}, {b}), relative difference "
                f"{gaps.max():.3g}); use 'approx-wasserstein'"
            )
        dists = np.abs(model.mean_differences).sum(axis=1)
        assumptions = [equal_covariance_assumption(model)]
    else:
        dists = np.array(
            [winf_distance(model.samples[i], model.samples[j], metric="l1") for i, j in model.pairs]
        )
        assumptions = [_empirical_assumption(model)]
    sens = float(dists.max())
    noise = Noise.isotropic("laplace", model.dim, sens / epsilon)
    guarantee = make_guarantee(
        "wasserstein",
        model,
        epsilon=epsilon,
        delta=0.0,
        theorem="Chen & Ohrimenko 2023, Thm 3.1",
        assumptions=assumptions,
        notes=pure_delta_note(delta),
    )
    diag = {"pair_winf": dists, "sensitivity_winf": sens}
    return CalibratedMechanism("wasserstein", noise, guarantee, model.statistics, diag)


def gaussian_l1_tail(cov: np.ndarray, prob: float) -> float:
    """A c with P(‖X − E X‖₁ > c) ≤ prob for X ~ N(·, cov).

    Union bound over coordinates: c = Σ_k σ_k Φ⁻¹(1 − prob/(2m)), so each
    P(|X_k| > σ_k Φ⁻¹(…)) = prob/m. Exact enough for Thm 3.3 and needs no sampling.
    """
    m = cov.shape[0]
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return float(sd.sum() * ndtri(1.0 - prob / (2.0 * m)))


def calibrate_approx_wasserstein(
    model: QueryModel, *, epsilon: float, delta: float, method: str | None = None
) -> CalibratedMechanism:
    """Approximate Wasserstein Mechanism, Laplace scale W/ε (Chen & Ohrimenko 2023, Thm 3.2).

    W is the largest, over pairs, of a value for which the pair is (W, δ)-close:

    * Gaussian model: Thm 3.3 per pair, W = ‖μᵢ − μⱼ‖₁ + cᵢ + cⱼ with c_θ the
      Gaussian L1 tail bound at probability δ/2 (:func:`gaussian_l1_tail`); the proof of
      Thm 3.3 goes through with a radius per θ. Needs δ > 0.
    * Sampled model: ``method="coupling"`` (default) discards at most δ of an optimal
      coupling's mass (:func:`distpriv.closeness`); ``method="bound"`` uses Thm 3.3 with
      empirical quantiles.

    Parameters
    ----------
    method : {"coupling", "bound"}, optional
        For sampled models only.
    """
    if isinstance(model, GaussianQueryModel):
        if method not in (None, "bound"):
            check_choice(method, "method", ("bound",))
        if delta <= 0:
            raise MechanismNotApplicableError(
                "approx-wasserstein on a Gaussian model needs delta > 0 (a Gaussian has "
                "unbounded support, so W is infinite at delta = 0)"
            )
        tails = np.array([gaussian_l1_tail(c, delta / 2.0) for c in model.covariances])
        idx = model.pair_index
        ws = np.abs(model.mean_differences).sum(axis=1) + tails[idx[:, 0]] + tails[idx[:, 1]]
        method = "bound"
        assumptions = [
            Assumption(
                "gaussian",
                "f_theta is Gaussian N(mu_theta, Sigma_theta)",
                True,
                "the query model is given as Gaussian",
            )
        ]
        theorem = "Chen & Ohrimenko 2023, Thm 3.2 with Thm 3.3"
        diag: dict[str, Any] = {"tail_radius": tails}
    else:
        method = check_choice(method or "coupling", "method", CLOSENESS_METHODS)
        ws = np.array(
            [
                closeness(model.samples[i], model.samples[j], delta=delta, method=method)
                for i, j in model.pairs
            ]
        )
        assumptions = [_empirical_assumption(model)]
        theorem = "Chen & Ohrimenko 2023, Thm 3.2" + (" with Thm 3.3" if method == "bound" else "")
        diag = {}
    w = float(ws.max())
    if not math.isfinite(w):
        raise MechanismNotApplicableError("approx-wasserstein: W is infinite for this model")
    noise = Noise.isotropic("laplace", model.dim, w / epsilon)
    guarantee = make_guarantee(
        "approx-wasserstein",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem=theorem,
        assumptions=assumptions,
        notes=[f"(W, delta)-closeness computed by '{method}'"],
    )
    diag.update({"pair_closeness": ws, "closeness_w": w, "method": method})
    return CalibratedMechanism("approx-wasserstein", noise, guarantee, model.statistics, diag)
