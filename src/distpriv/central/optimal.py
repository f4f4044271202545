"""Optimal Gaussian noise for distribution privacy ("optimal-g"; new in distpriv).

Chen & Ohrimenko's Gaussian mechanisms fix the shape of the noise in advance: isotropic
(ExpM), along the eigenvectors of Σ_θ (EigM), or along the mean difference (DauM). Under the
same assumptions (f_θ Gaussian, equal covariance within each pair) Cor. A.1 says that any
noise covariance Σ_Z with

    dᵀ(Σ_θ + Σ_Z)⁻¹ d ≤ D*(ε, δ)²   for every pair (θᵢ, θⱼ) in Ψ, d = μᵢ − μⱼ,

gives (ε, δ)-distribution privacy. The cheapest such Σ_Z solves the convex program

    minimise tr(W Σ_Z)  subject to  Σ_Z ⪰ 0,  [[Σ_θ + Σ_Z, d], [dᵀ, D*²]] ⪰ 0  for every pair,

(the constraint is the Schur complement form of the quadratic one). For a single pair with
W = I it has a rank-one closed form (:func:`single_pair_optimum`). With more than
``_GENERIC_MAX_DIM`` statistics the program is solved by the structured solver of
:mod:`distpriv.central._optimal_solver` (the optimum has rank at most the number of binding
constraints; exact restricted programs on small subspaces; a duality-gap certificate),
which scales to hundreds of statistics (docs/scale.md).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ..accounting.calibration_cache import active_cache, fingerprint, uncertainty_parts
from ..errors import MechanismNotApplicableError, ParameterError
from ..noise import Noise, gaussian_of_covariance, unit_free_rank
from ..population.pair_pruning import implied_constraints
from ..querymodel import GaussianQueryModel
from ..util.roots import brentq  # scipy.optimize's, without its import cost
from ..util.validation import check_array
from ._common import (
    QueryModel,
    calibration_assumptions,
    equal_covariance_assumption,
    gaussian_assumption,
    mahalanobis,
    make_guarantee,
    target_distance,
)
from ._optimal_solver import solve_structured
from .base import CalibratedMechanism
from .expected_value import gaussian_diagnostics
from .objective import DEFAULT_OBJECTIVE, objective_kind, objective_weights, whitening

__all__ = ["calibrate_optimal", "single_pair_optimum"]

# Solver target: a hair inside D* so that the solver's tolerance rarely needs the
# isotropic correction; the verification below is exact either way.
_SOLVER_MARGIN = 1e-6
# Eigenvalues of the program's answer below this fraction of the largest are the solver's
# tolerance, not noise (Clarabel's relative gap is 1e-8; measured residue 1e-9 to 1e-8).
_SOLVER_RESIDUE = 1e-7
# Up to this many statistics the generic program (cvxpy, Clarabel) is fast (≲ 1 s) and
# is kept; above it the structured solver takes over (199 s against ≲ 1 s at m = 100).
_GENERIC_MAX_DIM = 30


def single_pair_optimum(cov: np.ndarray, diff: np.ndarray, distance: float) -> np.ndarray:
    """The optimal Σ_Z for one pair and W = I, in closed form (rank one).

    With r = dᵀΣ⁻¹d − D² > 0 and M = Σ⁻¹ddᵀΣ⁻¹ − rΣ⁻¹, the noise is s uuᵀ with u the top
    eigenvector of M and s = r / λ_max(M); no noise when r ≤ 0.

    Parameters
    ----------
    cov : ndarray, shape (m, m)
        Σ_θ, positive definite.
    diff : ndarray, shape (m,)
        μᵢ − μⱼ.
    distance : float
        D, the admissible Mahalanobis distance.

    Returns
    -------
    ndarray, shape (m, m)
    """
    inv = np.linalg.inv(cov)
    inv = (inv + inv.T) / 2
    a = inv @ diff
    r = float(diff @ a) - distance**2
    if r <= 0:
        return np.zeros_like(cov)
    m_mat = np.outer(a, a) - r * inv
    w, v = np.linalg.eigh(m_mat)
    u = v[:, -1]
    return (r / w[-1]) * np.outer(u, u)


def _weights_matrix(weights: object, m: int) -> np.ndarray:
    if weights is None:
        return np.eye(m)
    w = check_array(weights, "weights", ndim=(1, 2))
    if w.ndim == 1:
        if w.shape != (m,) or np.any(w <= 0):
            raise ParameterError(
                f"weights must be {m} positive numbers (one per statistic), got {w.tolist()}"
            )
        return np.diag(w)
    if w.shape != (m, m) or np.max(np.abs(w - w.T)) > 1e-10 * np.abs(w).max():
        raise ParameterError(f"weights must be a symmetric {m}x{m} matrix, got shape {w.shape}")
    if np.linalg.eigvalsh(w)[0] <= 0:
        raise ParameterError("weights matrix must be positive definite")
    return (w + w.T) / 2


def _solve_sdp(
    constraints: list[tuple[np.ndarray, np.ndarray]], weights: np.ndarray, distance: float
) -> tuple[np.ndarray, str]:
    """The convex program in units where the answer is O(1).

    With c = max‖d‖²/D² (the variance ExpM would add), Σ' = Σ/c, S' = S/c and
    d' = d/(D√c), the constraint becomes d'ᵀ(Σ' + S')⁻¹d' ≤ 1: every number the solver sees
    is of order one, whatever ε, δ and the units of the statistics.
    """
    import cvxpy as cp

    m = weights.shape[0]
    scale = max(float(d @ d) for _, d in constraints) / distance**2
    w_scale = float(np.trace(weights)) / m
    s = cp.Variable((m, m), PSD=True)
    one = np.ones((1, 1))
    cons = []
    for cov, diff in constraints:
        d = (diff / (distance * math.sqrt(scale))).reshape(-1, 1)
        cons.append(cp.bmat([[cov / scale + s, d], [d.T, one]]) >> 0)
    prob = cp.Problem(cp.Minimize(cp.trace((weights / w_scale) @ s)), cons)
    status = "unsolved"
    for solver in ("CLARABEL", "SCS"):
        try:
            # The program only proposes a shape, which the exact accountant then scales and
            # checks, so an inaccurate solution is acceptable (taken below); cvxpy's
            # UserWarning about it would reach the caller as noise (on the joint set's
            # corners it does, e.g. in docs/tutorial.ipynb).
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                prob.solve(solver=solver)
        except (cp.error.SolverError, ValueError, ArithmeticError):
            continue
        status = f"{solver}: {prob.status}"
        if prob.status in ("optimal", "optimal_inaccurate") and s.value is not None:
            return np.asarray(s.value) * scale, status
    raise MechanismNotApplicableError(
        f"optimal-g: the convex program could not be solved ({status}); use 'daum' or 'eigm'"
    )


def _repair(sigma: np.ndarray, residue: float = 0.0) -> np.ndarray:
    """Symmetrise and clip the solver's tiny negative eigenvalues (and, with ``residue``,
    those below ``residue`` times the largest) to 0."""
    sym = (sigma + sigma.T) / 2
    w, v = np.linalg.eigh(sym)
    w = np.where(w > residue * max(float(w.max()), 0.0), w, 0.0)
    return (v * np.clip(w, 0.0, None)) @ v.T


def _isotropic_correction(
    constraints: list[tuple[np.ndarray, np.ndarray]], sigma: np.ndarray, distance: float
) -> float:
    """Smallest τ ≥ 0 with dᵀ(Σ_θ + Σ_Z + τI)⁻¹d ≤ D² for every constraint."""
    tau = 0.0
    for cov, diff in constraints:
        total = cov + sigma
        if mahalanobis(diff, total) <= distance:
            continue
        w, v = np.linalg.eigh(total)
        proj2 = (v.T @ diff) ** 2

        def excess(t: float, w: np.ndarray = w, proj2: np.ndarray = proj2) -> float:
            return float(np.sum(proj2 / np.maximum(w + t, 1e-300))) - distance**2

        if excess(0.0) <= 0:
            continue  # within D* to rounding (the two computations may differ by an ulp)
        hi = max(float(proj2.sum()) / distance**2, 1e-300)
        while excess(hi * 2.0) > 0 and hi < 1e300:
            hi *= 2.0
        tau = max(tau, brentq(excess, 0.0, hi * 2.0, xtol=1e-14 * hi, rtol=1e-15))
    # brentq brackets the root within tolerance: step to the feasible side.
    return tau * (1 + 1e-12) if tau > 0 else 0.0


def calibrate_optimal(
    model: QueryModel,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "analytic",
    weights: object = None,
    objective: str = DEFAULT_OBJECTIVE,
) -> CalibratedMechanism:
    """Optimal-G: the Gaussian noise of least weighted squared error satisfying Cor. A.1.

    Parameters
    ----------
    weights : array_like, shape (m,) or (m, m), optional
        W in tr(W Σ_Z) declared by the curator: per-statistic weights (e.g. 1/tolerance²)
        or a positive definite matrix. When given, ``objective`` is not used.
    objective : {"relative", "l2"}, default "relative"
        Without declared weights: ``"relative"`` weighs each statistic's noise against its
        sampling variance under the model (W = diag(1/v), v the diagonal of Σ_θ averaged
        over θ: unit-free, so rescaling a statistic rescales only its own noise;
        :mod:`distpriv.central.objective`); ``"l2"`` is W = I, the papers' E‖Z‖² (Chen &
        Ohrimenko 2023 compare mechanisms by it), kept to reproduce their tables.

    Notes
    -----
    Each pair is constrained with both covariances of the pair (they are equal when the
    equal-covariance assumption holds). Pairs with zero mean difference impose nothing.
    A single constraint with W = I uses the closed form; otherwise, up to
    ``_GENERIC_MAX_DIM`` statistics, cvxpy solves the program (Clarabel, then SCS), and
    above it the structured solver of :mod:`distpriv.central._optimal_solver` does: it
    uses that the optimum has rank at most p (the number of binding constraints), solves
    the program restricted to small subspaces exactly (a k × k program), and stops on a
    relative duality gap below 1e-7 (weak duality gives the lower bound); inactive
    constraints are redundant there and dropped. The solution's tiny negative eigenvalues
    are clipped, every constraint is re-checked in floating point, and the smallest isotropic
    correction τI is added if the solver's tolerance left one short (reported in the
    diagnostics). When the model alone satisfies every constraint, no noise is added.
    """
    kind = objective_kind(objective, weights)
    declared = objective_weights(model, objective=objective, weights=weights)
    wmat = _weights_matrix(declared, model.dim)
    cache = active_cache()
    if cache is None or not isinstance(model, GaussianQueryModel):
        return _calibrate_optimal(model, epsilon, delta, calibration, wmat, kind)
    # A pure function of these (accounting/calibration_cache.py): optimal-g-full and the
    # set's program repeat optimal-g's solves within one call.
    key = (
        type(model).__qualname__,
        _model_key(model),
        float(epsilon),
        float(delta),
        calibration,
        fingerprint(wmat),
        kind,
    )
    known = cache.get(cache.optimal, key)
    if known is None:
        known = _calibrate_optimal(model, epsilon, delta, calibration, wmat, kind)
        cache.optimal[key] = known
    # Callers may add to the diagnostics of their copy.
    return dataclasses.replace(known, diagnostics=dict(known.diagnostics))


def _model_key(model: GaussianQueryModel) -> str:
    unc = model.uncertainty
    return fingerprint(
        np.asarray(model.means),
        np.asarray(model.covariances),
        tuple(map(tuple, model.pairs)),
        tuple(map(str, model.labels)),
        None if model.statistics is None else tuple(model.statistics),
        model.fitted,
        *uncertainty_parts(unc),
    )


def _calibrate_optimal(
    model: QueryModel,
    epsilon: float,
    delta: float,
    calibration: str,
    wmat: np.ndarray,
    kind: str,
) -> CalibratedMechanism:
    gm, gauss = gaussian_assumption(model)
    m = gm.dim
    d_star, d_target = target_distance(epsilon, delta, calibration)
    # A diagonal W not ∝ I: the program is solved in the coordinates x_k √w_k, where the
    # objective is tr(Σ_Z) and a statistic's units do not reach the solver (the same
    # numbers whatever the units: central/objective.py); mapped back below.
    r = whitening(wmat)
    covs = gm.covariances if r is None else gm.covariances * np.outer(r, r)
    diffs = gm.mean_differences if r is None else gm.mean_differences * r
    wsolve = wmat if r is None else np.eye(m)
    constraints: list[tuple[np.ndarray, np.ndarray]] = []
    for (i, j), d in zip(gm.pairs, diffs, strict=True):
        if np.any(d != 0):
            for t in dict.fromkeys((i, j)):
                key = (covs[t], d)
                if not any(
                    np.array_equal(c, key[0]) and np.array_equal(x, d) for c, x in constraints
                ):
                    constraints.append(key)
    active = [(c, d) for c, d in constraints if mahalanobis(d, c) > d_target]
    method = "no noise needed"
    if not active:
        sigma = np.zeros((m, m))
    elif (
        len(active) == 1
        and np.allclose(wsolve, np.eye(m))
        and (np.linalg.eigvalsh(active[0][0])[0] > 1e-12 * np.abs(active[0][0]).max())
    ):
        sigma = single_pair_optimum(active[0][0], active[0][1], d_target)
        method = "closed form (single pair, rank one)"
    elif m <= _GENERIC_MAX_DIM:
        # Constraints implied by a longer parallel one are dropped (exact; every one is
        # re-checked by the isotropic correction below): population/pair_pruning.py.
        sdp = implied_constraints(constraints)
        sigma, method = _solve_sdp(sdp, wsolve, d_target * (1 - _SOLVER_MARGIN))
    else:
        # Many statistics: the structured solver (rank ≤ p, small restricted programs,
        # a duality-gap certificate); see distpriv.central._optimal_solver.
        result = solve_structured(active, wsolve, d_target * (1 - _SOLVER_MARGIN))
        sigma, method = result.sigma, result.describe()
    # In the objective's coordinates the solver's residue (eigenvalues at its tolerance,
    # which the units would otherwise turn into "noise" on a small statistic) is dropped;
    # the isotropic correction below restores every constraint exactly.
    sigma = _repair(sigma, 0.0 if r is None else _SOLVER_RESIDUE)
    tau = _isotropic_correction(constraints, sigma, d_target)
    if tau > 0:
        sigma = sigma + tau * np.eye(m)
    if r is None:
        w, v = np.linalg.eigh(sigma)
        w = np.clip(w, 0.0, None)
        noise = Noise.along("gaussian", v, np.sqrt(w))
    else:  # back to the statistics' own units, its rank judged unit-free
        noise = gaussian_of_covariance(sigma / np.outer(r, r))
    assumptions = [
        gauss,
        equal_covariance_assumption(gm),
        *calibration_assumptions(epsilon, calibration, delta),
    ]
    guarantee = make_guarantee(
        "optimal-g",
        model,
        epsilon=epsilon,
        delta=delta,
        theorem="Chen & Ohrimenko 2023, Cor. A.1, with the noise covariance that minimises "
        "tr(W Sigma_Z) (convex program; distpriv)",
        assumptions=assumptions,
        calibration=calibration,
    )
    diag = {
        "method": method,
        "weights": wmat,
        "objective": float(np.trace(wmat @ noise.covariance)),
        "objective_kind": kind,
        "isotropic_correction": tau,
        "noise_rank": (
            int(np.sum(w > 1e-12 * max(w.max(), 1e-300))) if r is None else unit_free_rank(sigma)
        ),
        **gaussian_diagnostics(gm, noise, epsilon, d_star, include_model=True),
    }
    return CalibratedMechanism("optimal-g", noise, guarantee, model.statistics, diag)
