"""The noise families a floored mechanism calibrates (:mod:`distpriv.central.floored`).

Each candidate is a family s ↦ Σ_Z(s) = s²·(main shape) + F, F = diag(floor variances) on
the statistics' lattice steps, with its starting scale and the noise it publishes at a
scale: DauM's direction (Chen & Ohrimenko 2023, Alg. 1 / Thm A.1), DirM's span (Thm 4.3),
optimal-g's shapes (Cor. A.1 and its convex program, the papers' way and the exact one),
the program over Σ_Z ⪰ F, the objective's isotropic shape raised to the floor, and for a
Monte Carlo model its sampled covariance (:mod:`distpriv.central.montecarlo_shapes`).
Which of them a mechanism tries, and how each is scaled and checked, is
:mod:`distpriv.central.floored`'s concern; this module only builds them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import MechanismNotApplicableError
from ..noise import Noise, gaussian_of_covariance
from ..querymodel import GaussianQueryModel
from ._common import QueryModel
from .base import CalibratedMechanism
from .exact_calibration import calibrate_exact
from .expected_value import calibrate_dirm, calibrate_expm
from .montecarlo_shapes import is_monte_carlo
from .objective import is_identity_like, isotropic_shape
from .optimal import calibrate_optimal
from .uncertainty import calibrate_daum, calibrate_eigm

__all__ = ["Cand", "candidates", "covers_floor", "fixed_candidate", "floor_noise", "psd_noise"]


def psd_noise(cov: np.ndarray) -> Noise:
    """Gaussian noise with covariance ``cov`` (its rank judged at unit diagonal, so that a
    statistic in small units is not dropped for being small: noise.unit_free_rank)."""
    return gaussian_of_covariance(cov)


def floor_noise(fvar: np.ndarray) -> Noise:
    m = fvar.shape[0]
    keep = fvar > 0
    if not np.any(keep):
        return Noise.none(m)
    return Noise.along("gaussian", np.eye(m)[:, keep], np.sqrt(fvar[keep]))


# A candidate: (label, family s -> Σ_Z(s), start, noise_of(s)).
Cand = tuple[str, Callable[[float], np.ndarray], float, Callable[[float], Noise]]


def directional(label: str, basis: np.ndarray, fvar: np.ndarray, start: float) -> Cand:
    proj = basis @ basis.T
    fmat = np.diag(fvar)

    def noise_of(s: float) -> Noise:
        main = (
            Noise.along("gaussian", basis, np.full(basis.shape[1], s))
            if basis.shape[1] and s > 0
            else Noise.none(fvar.shape[0])
        )
        return main.plus(floor_noise(fvar))

    return label, (lambda s: s * s * proj + fmat), start, noise_of


def shaped(label: str, shape: np.ndarray, fvar: np.ndarray) -> Cand:
    fmat = np.diag(fvar)
    return (
        label,
        lambda s: s * s * shape + fmat,
        1.0,
        lambda s: psd_noise(s * s * shape).plus(floor_noise(fvar)),
    )


def isotropic_floor(fvar: np.ndarray, start: float, unit: np.ndarray | None = None) -> Cand:
    """diag(max(F, s² u)): u = 1 (expm-g's shape) under E‖Z‖², u the diagonal of W⁻¹ (each
    statistic's sampling variance under the relative objective: central/objective.py)."""
    u = np.ones(fvar.shape[0]) if unit is None else unit

    def noise_of(s: float) -> Noise:
        return Noise.along("gaussian", np.eye(fvar.shape[0]), np.sqrt(np.maximum(fvar, s * s * u)))

    return (
        "isotropic noise raised to the floor (expm-g's shape)",
        lambda s: np.diag(np.maximum(fvar, s * s * u)),
        start,
        noise_of,
    )


def candidates(
    name: str,
    model: QueryModel,
    gm: GaussianQueryModel,
    fvar: np.ndarray,
    opts: dict[str, Any],
    eps: float,
    dlt: float,
    beta: float | None = None,
) -> tuple[list[Cand], CalibratedMechanism]:
    """The noise families to calibrate, and the main mechanism the papers' way."""
    if name == "daum-floor":
        paper = calibrate_daum(model, epsilon=eps, delta=dlt, calibration="analytic", **opts)
        d = paper.diagnostics
        start = math.sqrt(max(float(d["noise_variance"]), float(d["directional_expm_variance"])))
        v = np.asarray(d["direction"]).reshape(-1, 1)
        return [directional("DauM's direction plus the floor", v, fvar, start)], paper
    if name == "dirm-g-floor":
        paper = calibrate_dirm(model, epsilon=eps, delta=dlt, kind="gaussian")
        basis = np.asarray(paper.diagnostics["directions"])
        comps = paper.noise.components
        start = float(comps[0].scales[0]) if comps and basis.shape[1] else 1.0
        return [directional("DirM's span plus the floor", basis, fvar, start)], paper
    paper = calibrate_optimal(model, epsilon=eps, delta=dlt, calibration="analytic", **opts)
    weights = np.asarray(paper.diagnostics["weights"])
    cands: list[Cand] = []
    iso = calibrate_expm(gm, epsilon=eps, delta=dlt, kind="gaussian", calibration="analytic")
    start = math.sqrt(float(iso.noise_covariance[0, 0]))
    sampled = is_monte_carlo(model, gm)
    if sampled:
        # A Monte Carlo model: its sampled covariance plus the floor, and no expm-g shape
        # (central/montecarlo_shapes.py).
        sbar = np.mean(np.asarray(gm.covariances, dtype=float), axis=0)
        cands.append(shaped("the model's sampled covariance plus the floor", sbar, fvar))
    if is_identity_like(weights):
        if not sampled:
            cands.append(isotropic_floor(fvar, start))
    else:  # the objective's isotropic shape, started where its cost is expm-g's
        unit = np.diag(isotropic_shape(weights)).copy()
        start *= math.sqrt(float(np.trace(weights)) / float(np.sum(np.diag(weights) * unit)))
        iso_floor = isotropic_floor(fvar, start, unit)
        if sampled:  # diag(v), not expm-g's σ²I: named for what it is
            iso_floor = ("the model's sampled variances raised to the floor", *iso_floor[1:])
        cands.append(iso_floor)
    # The program with Σ_Z = F + S: optimal-g on the model whose covariances include F.
    floored_model = GaussianQueryModel(
        gm.means,
        gm.covariances + np.diag(fvar),
        pairs=gm.pairs,
        labels=gm.labels,
        statistics=gm.statistics,
    )
    prog = calibrate_optimal(
        floored_model, epsilon=eps, delta=dlt, calibration="analytic", weights=weights
    )
    if np.trace(prog.noise_covariance) > 0:
        cands.append(shaped("convex program over Sigma_Z >= F", prog.noise_covariance, fvar))
    if np.trace(paper.noise_covariance) > 0:
        cands.append(shaped("optimal-g's shape plus the floor", paper.noise_covariance, fvar))
    # optimal-g's exact calibration (its program's noise scaled, or repaired isotropically,
    # or DauM's/EigM's shape: central/exact_calibration.py), with the floor added.
    exact = optimal_exact(model, gm, weights, eps, dlt, beta)
    if exact is not None and np.trace(exact.noise_covariance) > 0:
        shape = exact.noise_covariance
        cands.append(shaped("optimal-g's exact noise plus the floor", shape, fvar))
        if covers_floor(shape, fvar):  # already at or above the floor: a candidate as is
            cands.append(fixed_candidate("optimal-g's exact noise (at or above the floor)", shape))
    try:
        dm = calibrate_daum(gm, epsilon=eps, delta=dlt, calibration="analytic")
    except MechanismNotApplicableError:
        dm = None
    if dm is not None:
        d = dm.diagnostics
        start = math.sqrt(max(float(d["noise_variance"]), float(d["directional_expm_variance"])))
        v = np.asarray(d["direction"]).reshape(-1, 1)
        cands.append(directional("DauM's direction plus the floor", v, fvar, start))
    return cands, paper


def covers_floor(cov: np.ndarray, fvar: np.ndarray) -> bool:
    """Σ_Z ⪰ F = diag(fvar), up to rounding relative to the largest entry."""
    gap = float(np.linalg.eigvalsh(cov - np.diag(fvar))[0])
    return gap >= -1e-12 * max(float(np.abs(cov).max()), float(fvar.max(initial=0.0)))


def fixed_candidate(label: str, cov: np.ndarray) -> Cand:
    """A covariance already verified: checked as is, never scaled (start −1 marks it)."""
    return label, (lambda s: s * s * cov), -1.0, (lambda s: psd_noise(s * s * cov))


def optimal_exact(
    model: QueryModel,
    gm: GaussianQueryModel,
    weights: np.ndarray,
    eps: float,
    dlt: float,
    beta: float | None = None,
) -> CalibratedMechanism | None:
    """optimal-g with the exact calibration (rank one or not), or None if it fails."""
    builders: dict[str, Callable[..., CalibratedMechanism]] = {
        "optimal-g": lambda **kw: calibrate_optimal(model, weights=weights, **kw),
        "daum": lambda **kw: calibrate_daum(model, **kw),
        "eigm": lambda **kw: calibrate_eigm(model, **kw),
    }

    def build(other: str, *, calibration: str) -> CalibratedMechanism:
        return builders[other](epsilon=eps, delta=dlt, calibration=calibration)

    try:
        extra = {} if beta is None else {"beta": beta}
        return calibrate_exact("optimal-g", model, gm, build, epsilon=eps, delta=dlt, **extra)
    except MechanismNotApplicableError:
        return None
