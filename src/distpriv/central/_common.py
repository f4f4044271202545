"""Shared pieces of the central mechanisms: assumption checks, linear algebra, guarantees.

Each check returns an :class:`~distpriv.guarantees.Assumption` with the measured quantity
behind the verdict, so that the guarantee can state honestly what was verified
(docs/architecture.md §3, "Honest guarantees"; Chen & Ohrimenko 2023 §4.4).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

from ..accounting import classical_covers, max_distance
from ..accounting.calibration_cache import active_cache, fingerprint
from ..accounting.pair_profile import covariance_gap, gaussian_delta
from ..errors import AssumptionWarning, ParameterTypeError
from ..guarantees import Assumption, PrivacyGuarantee
from ..querymodel import GaussianQueryModel, SampledQueryModel

QueryModel = GaussianQueryModel | SampledQueryModel

# Relative tolerance under which two covariance matrices count as equal, or a matrix
# commutes with another: above it the difference is real, not rounding.
COV_RTOL = 1e-9
# Relative tolerance (to the largest singular value, after per-statistic scaling) for
# the span of mean differences: rounding level only, so no real direction is dropped.
SPAN_RTOL = 1e-13
# Gaussian mechanisms calibrate to D*(1 − margin), so that floating-point rounding in the
# noise computation can never push the exact δ(ε) of the output above the target δ.
DISTANCE_MARGIN = 1e-12

FALLBACK_NOTE = (
    "If f_theta differs from the model: with approximations whose eta-approximate "
    "max-divergence from the truth is at most lambda in both directions, the release is "
    "(eps + 2 lambda, (1 + e^(eps + lambda)) eta + e^lambda delta)-private (Chen & Ohrimenko "
    "2023, Thm 4.6); or add Laplace noise W/lambda per coordinate with W the "
    "infinity-Wasserstein model error for (eps + 2 lambda, e^lambda delta) (Thm 4.7; "
    "distpriv.relax_wasserstein)."
)


def target_distance(epsilon: float, delta: float, calibration: str) -> tuple[float, float]:
    """(D*, D* with the safety margin) for the Gaussian calibration."""
    d_star = max_distance(epsilon, delta, calibration)
    return d_star, d_star * (1.0 - DISTANCE_MARGIN)


def calibration_assumptions(
    epsilon: float, calibration: str, delta: float | None = None
) -> list[Assumption]:
    """The classical constant is proven only for ε < 1; the analytic one needs nothing.

    Outside the proof, the detail reports the exact δ(ε) at the classical distance ε/c,
    so the reader sees whether the noise happens to suffice anyway.
    """
    if calibration != "classical":
        return []
    ok = classical_covers(epsilon)
    detail = f"epsilon = {epsilon:g}"
    if not ok:
        detail += "; outside the theorem"
        if delta is not None:
            exact = float(
                gaussian_delta(max_distance(epsilon, delta, "classical"), epsilon=epsilon)
            )
            verdict = "within" if exact <= delta else "ABOVE"
            detail += (
                f"; the exact profile at the classical distance eps/c gives delta(eps) = "
                f"{exact:.3g}, {verdict} the target {delta:g}"
            )
        detail += "; use calibration='analytic' for a proven calibration"
    return [
        Assumption(
            "classical-epsilon",
            "epsilon < 1, where c = sqrt(2 ln(1.25/delta)) is proven (Chen & Ohrimenko 2023, "
            "Thm 4.2; Dwork & Roth 2014, Thm A.1)",
            ok,
            detail,
        )
    ]


def gaussian_assumption(model: QueryModel) -> tuple[GaussianQueryModel, Assumption]:
    """Return a Gaussian model, fitting one to samples if needed, with its assumption."""
    gm = model if isinstance(model, GaussianQueryModel) else model.to_gaussian()
    if gm.fitted is None:
        return gm, Assumption(
            "gaussian",
            "f_theta is Gaussian N(mu_theta, Sigma_theta)",
            True,
            "the query model is given as Gaussian",
        )
    return gm, Assumption(
        "gaussian",
        "f_theta is Gaussian N(mu_theta, Sigma_theta)",
        None,
        f"Gaussian approximation: {gm.fitted}; not verified",
    )


def covariance_gaps(model: GaussianQueryModel) -> np.ndarray:
    """Scale-free covariance difference per pair, shape (p,), in [0, 1].

    max_k |a_k − b_k| after whitening both covariances of the pair jointly
    (:func:`distpriv.accounting.covariance_gap`): exactly 0 for equal matrices, and a
    statistic measured in small units counts as much as any other (docs/architecture.md §4).
    """
    idx = model.pair_index
    cache = active_cache()
    key = None
    if cache is not None:
        # A pure function of the covariances and the pairs (accounting/calibration_cache.py):
        # every mechanism of one ``auto`` call checks it on the same model (a range secret:
        # 190 pairs, one joint whitening each, for each of ~35 calibrations).
        key = ("covariance_gaps", fingerprint(np.asarray(model.covariances), np.asarray(idx)))
        known = cache.get(cache.pair_checks, key)
        if known is not None:
            return np.array(known)
    gaps = np.array([covariance_gap(model.covariances[i], model.covariances[j]) for i, j in idx])
    if cache is not None:
        cache.pair_checks[key] = gaps.copy()
    return gaps


def equal_covariance_assumption(
    model: GaussianQueryModel, *, name: str = "equal-covariance", statement: str | None = None
) -> Assumption:
    """Σ_θᵢ = Σ_θⱼ for every pair in Ψ (Chen & Ohrimenko 2023, Thm 4.4/4.5, Alg. 1)."""
    gaps = covariance_gaps(model)
    worst = int(np.argmax(gaps))
    a, b = model.pair_labels[worst]
    # Equal means equal: any difference, however small, is checked by the exact profile.
    holds = bool(gaps[worst] == 0.0)
    return Assumption(
        name,
        statement or "Sigma_theta_i = Sigma_theta_j for every pair in Psi",
        holds,
        f"largest whitened difference max|a_k - b_k| = {gaps[worst]:.3g} (pair ({a}, {b}); "
        "0 when equal, 1 when the supports differ)",
    )


def translation_assumption(model: QueryModel) -> Assumption:
    """f_θᵢ is a translation of f_θⱼ for every pair (Chen & Ohrimenko 2023, Thm 4.1–4.3)."""
    statement = "f_theta_i is a translation of f_theta_j for every pair in Psi"
    if isinstance(model, GaussianQueryModel):
        return equal_covariance_assumption(
            model,
            name="translation",
            statement=statement + " (for Gaussians: equal covariances)",
        )
    fitted = model.to_gaussian() if all(s.shape[0] >= 2 for s in model.samples) else None
    detail = "cannot be verified from samples"
    if fitted is not None:
        gaps = covariance_gaps(fitted)
        detail += f"; largest whitened difference of sample covariances {gaps.max():.3g}"
    return Assumption("translation", statement, None, detail)


def difference_basis(diffs: np.ndarray) -> tuple[np.ndarray, float]:
    """Orthonormal basis (m, d) of the span of the mean differences, and the residual.

    Scale-free: the rank is decided on the differences with each statistic scaled by its
    largest absolute difference (statistics whose differences are exactly zero are left
    out exactly), so a small-unit statistic is never dropped as rounding. The residual is
    the largest part of a (scaled) difference the basis leaves out, relative to its norm:
    only rounding-level components (below ``SPAN_RTOL``) can be left out.
    """
    m = diffs.shape[1]
    col = np.max(np.abs(diffs), axis=0) if diffs.size else np.zeros(m)
    live = col > 0
    if not np.any(live):
        return np.zeros((m, 0)), 0.0
    scaled = diffs[:, live] / col[live]
    _, s, vt = np.linalg.svd(scaled, full_matrices=False)
    keep = s > SPAN_RTOL * s[0]
    # Back to the original coordinates: the span of D·v for the scaled directions v.
    back = np.zeros((m, int(keep.sum())))
    back[live] = vt[keep].T * col[live][:, None]
    basis, _ = np.linalg.qr(back)
    # Deterministic orientation: the largest entry of each direction is positive.
    signs = np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(basis.shape[1])])
    basis = basis * signs
    s_basis, _ = np.linalg.qr(vt[keep].T)
    resid = scaled - (scaled @ s_basis) @ s_basis.T
    norms = np.linalg.norm(scaled, axis=1)
    rel = np.divide(np.linalg.norm(resid, axis=1), norms, out=np.zeros_like(norms), where=norms > 0)
    return basis, float(rel.max())


def standardise(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(D^(-1/2) S D^(-1/2), D^(-1/2)) with D = diag(S); exactly-zero variances kept as 0.

    Rank and null-space decisions are made on the standardised matrix, so that they do
    not depend on the units of the statistics (docs/architecture.md §4).
    """
    var = np.diagonal(cov).copy()
    inv = np.zeros_like(var)
    pos = var > 0
    inv[pos] = 1.0 / np.sqrt(var[pos])
    return cov * np.outer(inv, inv), inv


def is_singular(cov: np.ndarray) -> bool:
    """Whether S is singular to rounding, judged on the standardised matrix."""
    std, inv = standardise(cov)
    if np.any(inv == 0):
        return True
    return bool(np.linalg.eigvalsh(std)[0] <= 64 * np.finfo(float).eps * cov.shape[0])


def mahalanobis(diff: np.ndarray, cov: np.ndarray) -> float:
    """√(dᵀ S⁻¹ d), +inf when d has a component outside the range of a singular S.

    Computed on the standardised matrix (scale-free); a statistic with exactly zero
    variance and a non-zero difference gives +inf, with a zero difference nothing.
    """
    std, inv = standardise(cov)
    zero = inv == 0
    if np.any(diff[zero] != 0):
        return math.inf
    if np.all(zero):  # every statistic constant and equal: nothing tells the pair apart
        return 0.0
    d = diff[~zero] * inv[~zero]
    w, v = np.linalg.eigh(std[np.ix_(~zero, ~zero)])
    proj = v.T @ d
    tol = max(float(w[-1]), 0.0) * w.size * 64 * np.finfo(float).eps
    null = w <= tol
    if np.any(null & (np.abs(proj) > 1e-10 * max(float(np.linalg.norm(d)), 1e-300))):
        return math.inf
    return float(math.sqrt(np.sum(proj[~null] ** 2 / w[~null])))


def pair_distances(model: QueryModel, noise_cov: np.ndarray, *, include_model: bool) -> np.ndarray:
    """Mahalanobis distance of each pair's means under the released output's covariance.

    With ``include_model`` the output covariance is Σ_θ + Σ_Z, evaluated with both
    covariances of the pair (the larger distance is kept); otherwise Σ_Z alone (what the
    translation-based theorems use). Returns shape (p,).
    """
    covs = model.covariances if isinstance(model, GaussianQueryModel) else None
    if include_model and covs is None:
        raise ParameterTypeError("pair_distances: include_model needs a GaussianQueryModel")
    out = np.empty(len(model.pairs))
    for p, ((i, j), d) in enumerate(zip(model.pairs, model.mean_differences, strict=True)):
        if covs is not None and include_model:
            out[p] = max(mahalanobis(d, covs[t] + noise_cov) for t in (i, j))
        else:
            out[p] = mahalanobis(d, noise_cov)
    return out


def warn_failed(name: str, assumptions: Iterable[Assumption]) -> None:
    """One AssumptionWarning per failed assumption."""
    for a in assumptions:
        if a.holds is False:
            warnings.warn(
                f"{name}: assumption '{a.name}' does not hold ({a.statement}): {a.detail}",
                AssumptionWarning,
                stacklevel=5,  # warn_failed < make_guarantee < mechanism < calibrate
            )


def make_guarantee(
    name: str,
    model: QueryModel,
    *,
    epsilon: float,
    delta: float,
    theorem: str,
    assumptions: list[Assumption],
    calibration: str | None = None,
    notes: Iterable[str] = (),
    notion: str = "distribution privacy",
) -> PrivacyGuarantee:
    """Build the guarantee, warn on failed assumptions, add the §4.4 fallback note."""
    notes = list(notes)
    if any(a.holds is not True for a in assumptions) and notion == "distribution privacy":
        notes.append(FALLBACK_NOTE)
    warn_failed(name, assumptions)
    return PrivacyGuarantee(
        epsilon=epsilon,
        delta=delta,
        pairs=model.pair_labels,
        mechanism=name,
        theorem=theorem,
        calibration=calibration,
        notion=notion,
        assumptions=tuple(assumptions),
        notes=tuple(notes),
    )


def pure_delta_note(delta: float) -> list[str]:
    """Note for a pure-DP mechanism given a δ > 0 it does not use."""
    if delta > 0:
        return [f"delta={delta:g} was given; this mechanism satisfies delta = 0"]
    return []
