"""The Attribute-Private Gaussian Mechanism and its Gaussian instantiation (Zhang et al. 2022, §4).

Dataset attribute privacy (Zhang, Ohrimenko & Cummings 2022, Def. 4) is Pufferfish privacy
whose secrets are events g_i(X_i) = a about a function g_i of a sensitive column, whose
pairs are secrets of the same attribute, and whose Θ holds the possible record
distributions. APGM (Alg. 1) releases F(X) + N(0, σ²) with

    σ² = max_i (cΔ_iF/ε)² − min_θ Var(F(X) | g_i(X_i), θ)      (no noise when ≤ 0),

Δ_iF = max_θ max_(s_a, s_b) |E[F | s_a, θ] − E[F | s_b, θ]| (Eq. 1). Read as a query model
whose hypotheses are the combinations (θ, secret value) and whose pairs Ψ are the secret
pairs within one θ, this is the one-dimensional case of Chen & Ohrimenko's EigM (2023,
Thm 4.5: σ² = max_θ max(0, s² − Var_θ) with s = Δ/D*), and the vector extension described
at the end of §4.1 (ℓ2 sensitivity, conditional covariances) is EigM itself. APGM is
therefore calibrated by :func:`~distpriv.central.uncertainty.calibrate_eigm`, with its own
guarantee (notion, Thm 1, assumptions) and the accuracy bound of Thm 2. As for the other
Gaussian mechanisms, ``calibration="analytic"`` (default) replaces c/ε by the exact
D*(ε, δ) of Balle & Wang (2018); ``"classical"`` reproduces the paper.

§4.2 instantiates Alg. 1 for records drawn i.i.d. from N(μ, V) with F and g averages of
columns over n records: given g = a, F ~ N(μ_j + (V_ij/V_ii)(a − μ_i), (V_jj − V_ij²/V_ii)/n),
so Δ_iF = |V_ij/V_ii| d(U) (:func:`gaussian_conditional`, :func:`gaussian_attribute_model`,
:func:`gaussian_attribute_bounds`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.stats import chi2

from ..accounting import CALIBRATIONS, max_distance
from ..errors import AssumptionWarning, ParameterError
from ..guarantees import Assumption
from ..util.validation import (
    check_choice,
    check_covariance,
    check_privacy,
    check_real,
)
from ._common import FALLBACK_NOTE, QueryModel, make_guarantee
from .apgm_models import (
    GaussianAttributeBounds,
    attribute_query_model,
    gaussian_attribute_bounds,
    gaussian_attribute_model,
    gaussian_conditional,
    theta_grid,
)
from .base import CalibratedMechanism
from .uncertainty import calibrate_eigm

__all__ = [
    "GaussianAttributeBounds",
    "apgm_accuracy",
    "apgm_noise_variance",
    "attribute_query_model",
    "calibrate_apgm",
    "gaussian_attribute_bounds",
    "gaussian_attribute_model",
    "gaussian_conditional",
    "theta_grid",
]

THEOREM = "Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1"
NOTION = "dataset attribute privacy"
# β of the accuracy bound reported in the diagnostics (Thm 2).
ACCURACY_BETA = 0.05


# ---------------------------------------------------------------------------- Alg. 1
def apgm_noise_variance(
    sensitivity: float,
    min_variance: float,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "analytic",
) -> float:
    """σ² of Alg. 1 for a scalar query: max(0, (Δ/D*)² − min_θ Var), D* = ε/c classically.

    Zhang, Ohrimenko & Cummings 2022, Alg. 1 with c = √(2 ln(1.25/δ)) (``"classical"``,
    proven for ε < 1) or the exact D*(ε, δ) (``"analytic"``). Uses D* itself; the
    registered mechanism calibrates to D*(1 − 1e-12) so that rounding never exceeds δ.

    Parameters
    ----------
    sensitivity : float
        Δ_iF ≥ 0.
    min_variance : float
        min_θ Var(F(X) | g_i(X_i), θ) ≥ 0.
    epsilon, delta : float
        ε > 0 and δ in (0, 1).
    calibration : {"analytic", "classical"}

    Examples
    --------
    §4.2, average weight: Δ = 6.125, Var = 4.5, ε = 1, δ = 1e-3.

    >>> round(apgm_noise_variance(6.125, 4.5, epsilon=1.0, delta=1e-3, calibration="classical"), 2)
    530.54
    """
    sens = check_real(sensitivity, "sensitivity", low=0.0)
    var = check_real(min_variance, "min_variance", low=0.0)
    eps, dlt = check_privacy(epsilon, delta, delta_positive=True)
    cal = check_choice(calibration, "calibration", CALIBRATIONS)
    return max(0.0, (sens / max_distance(eps, dlt, cal)) ** 2 - var)


def apgm_accuracy(noise_covariance: Any, beta: float = ACCURACY_BETA) -> float:
    """α with P(‖Z‖₂ > α) ≤ β for the APGM noise Z (Zhang et al. 2022, Thm 2).

    For a scalar query α = σ Φ⁻¹(1 − β/2), Thm 2. For vector noise N(0, Σ_Z) of rank r
    with largest eigenvalue λ, ‖Z‖² ≤ λ χ²_r, so α = √(λ · χ²_r⁻¹(1 − β)) (equal to
    Thm 2's value when r = 1).

    Parameters
    ----------
    noise_covariance : array_like, shape (m, m), or CalibratedMechanism
        Σ_Z (or a mechanism, whose noise covariance is used).
    beta : float
        β in (0, 1).
    """
    if isinstance(noise_covariance, CalibratedMechanism):
        noise_covariance = noise_covariance.noise_covariance
    cov = check_covariance(noise_covariance, "noise_covariance")
    if cov.ndim != 2:
        raise ParameterError(f"noise_covariance must be one (m, m) matrix, got {cov.shape}")
    b = check_real(beta, "beta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    w = np.linalg.eigvalsh(cov)
    rank = int(np.sum(w > 1e-12 * max(float(w[-1]), 1e-300)))
    if rank == 0 or w[-1] <= 0:
        return 0.0
    return float(math.sqrt(w[-1] * chi2.ppf(1.0 - b, rank)))


_STATEMENTS = {
    "gaussian": "F(X) given the secret s_a and theta is Gaussian (Zhang et al. 2022, Thm 1)",
    "equal-covariance": (
        "Var(F(X) | s_a, theta) = Var(F(X) | s_b, theta) for every secret pair "
        "(Zhang et al. 2022, §4: constant conditional variance)"
    ),
    "classical-epsilon": (
        "epsilon < 1, where the constant c = sqrt(2 ln(1.25/delta)) of Zhang et al. 2022, "
        "Alg. 1 is proven (Dwork & Roth 2014, Thm A.1)"
    ),
    "shared-eigenvectors": (
        "vector queries: the conditional covariances share their eigenvectors, so that "
        "Alg. 1's per-direction variance reduction applies (Chen & Ohrimenko 2023, Thm 4.5)"
    ),
}


def calibrate_apgm(
    model: QueryModel, *, epsilon: float, delta: float, calibration: str = "analytic"
) -> CalibratedMechanism:
    """APGM: Gaussian noise reduced by the query's own conditional variance.

    Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1 ((ε, δ)-dataset attribute privacy
    when F | g_i, θ is Gaussian), with accuracy by Thm 2. ``model`` holds one hypothesis
    per (θ, secret) and the secret pairs within each θ (:func:`attribute_query_model`,
    :func:`gaussian_attribute_model`); any :class:`GaussianQueryModel` is read that way.

    For a scalar query σ² = max(0, (Δ/D*)² − min Var) (Alg. 1); for a vector query the
    noise variance along each eigenvector v_k of the conditional covariances is
    max(0, (Δ_2/D*)² − min_θ v_kᵀΣ_θv_k) (§4.1's extension; it is EigM, Chen & Ohrimenko
    2023, Thm 4.5). Several sensitive attributes in one model share the largest Δ and the
    smallest variance, which is never less noise than Alg. 1's max over i; calibrate one
    model per attribute and keep the largest noise to match Alg. 1 exactly.

    Diagnostics: ``sensitivity`` (Δ, ℓ2), ``min_conditional_variance``,
    ``target_variance`` (Δ/D*)², ``noise_variance`` (σ², scalar queries),
    ``accuracy_alpha`` and ``accuracy_beta`` (Thm 2), and EigM's per-pair distances.
    """
    with warnings.catch_warnings():
        # The same assumptions are re-issued below under APGM's name and wording.
        warnings.simplefilter("ignore", AssumptionWarning)
        eig = calibrate_eigm(model, epsilon=epsilon, delta=delta, calibration=calibration)
    assumptions: list[Assumption] = []
    for a in eig.guarantee.assumptions:
        if a.name == "shared-eigenvectors" and model.dim == 1:
            continue  # a scalar query has one direction: nothing to share
        text = _STATEMENTS.get(a.name)
        assumptions.append(replace(a, statement=text) if text else a)
    notes = []
    if any(a.holds is not True for a in assumptions if a.name in ("gaussian", "equal-covariance")):
        # The model of F | s_a, θ is only approximate: Chen & Ohrimenko §4.4 applies.
        notes.append(FALLBACK_NOTE)
    if model.dim > 1:
        notes.append(
            "vector query: l2 sensitivity and conditional covariances (Zhang et al. 2022, "
            "§4.1, last paragraph), calibrated per eigenvector as EigM"
        )
    guarantee = make_guarantee(
        "apgm",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem=THEOREM,
        assumptions=assumptions,
        calibration=calibration,
        notes=notes,
        notion=NOTION,
    )
    d = dict(eig.diagnostics)
    sig2 = np.asarray(d["noise_variances"])
    diag = {
        "sensitivity": d.pop("sensitivity_l2"),
        "min_conditional_variance": float(np.min(d["model_eigenvalues"])),
        "noise_variance": float(sig2[0]) if model.dim == 1 else sig2,
        "accuracy_beta": ACCURACY_BETA,
        "accuracy_alpha": apgm_accuracy(eig.noise_covariance, ACCURACY_BETA),
        **d,
    }
    return CalibratedMechanism("apgm", eig.noise, guarantee, model.statistics, diag)
