"""A structured solver for the convex program of optimal-g, for hundreds of statistics.

The program (:mod:`distpriv.central.optimal`) is

    minimise tr(W S)  subject to  S ⪰ 0,  [[Σₜ + S, dₜ], [dₜᵀ, D²]] ⪰ 0  (t = 1…p),

one constraint per pair (θᵢ, θⱼ) of Ψ and covariance Σₜ ∈ {Σ_θᵢ, Σ_θⱼ}, with dₜ = μᵢ − μⱼ.
A generic interior-point solver handles it as p linear matrix inequalities of size m + 1 and
an m × m matrix variable: its cost grows like m⁶ (199 s at m = 100). This module uses three
facts about its structure instead.

**1. The constraints are matrix upper bounds.** Because D² > 0, the Schur complement on
the D² block gives

    [[Σₜ + S, dₜ], [dₜᵀ, D²]] ⪰ 0   ⟺   S ⪰ Aₜ := dₜdₜᵀ/D² − Σₜ,

so the program asks for the W-cheapest positive semi-definite upper bound of the matrices
A₁ … A_p (each has at most one positive eigenvalue) and 0. Constraints with Aₜ ⪯ 0
(dₜᵀΣₜ⁻¹dₜ ≤ D²) impose nothing and are dropped by the caller.

**2. Lagrange duality gives a certificate and the shape of the optimum.** For any
Xₜ ⪰ 0 with ΣₜXₜ ⪯ W and any feasible S, tr(W S) ≥ Σₜ tr(Xₜ S) ≥ Σₜ tr(Xₜ Aₜ): a lower
bound on the optimum (weak duality). The dual optimum is attained with Xₜ = λₜ gₜgₜᵀ,
gₜ = (Σₜ + S)⁻¹dₜ (complementary slackness: the dual block of a constraint of rank ≥ m
has rank ≤ 1), and stationarity gives (W − Σₜ λₜ gₜgₜᵀ) S = 0: **the optimal S has rank
at most p and its range lies in span{W⁻¹gₜ}** — rank one for a single pair with W = I,
the closed form of :func:`~distpriv.central.optimal.single_pair_optimum`.

**3. The program restricted to a subspace is small and exact there.** Let Q (m × k,
orthonormal columns) span a subspace containing every dₜ (dₜ = Qcₜ) and write S = QYQᵀ.
Then, for k × k symmetric Y,

    S ⪰ Aₜ  ⟺  Σₜ + Q(Y − cₜcₜᵀ/D²)Qᵀ ⪰ 0  ⟺  Y ⪰ Kₜ := cₜcₜᵀ/D² − (QᵀΣₜ⁻¹Q)⁻¹,

by the Schur complement of Σₜ on the blocks (Q, Q⊥): (QᵀΣₜ⁻¹Q)⁻¹ is that complement,
the covariance Σₜ "shorted" to the subspace. So the restricted program, minimise
tr(QᵀWQ Y) subject to Y ⪰ 0 and Y ⪰ Kₜ, has a k × k variable, and its solution is
feasible for the full program (a restriction can only cost more). In particular, when
the mean differences span k dimensions, every S with range in a subspace is checked
exactly in k-dimensional terms; low-rank gaps (one pair: k = 1) keep the program small.

The solver starts from Q = span{dₜ, W⁻¹Σₜ⁻¹dₜ} (the directions of the optimum at S = 0)
and, when there are few constraints, the resolvents W⁻¹(Σₜ + σI)⁻¹dₜ on a geometric grid
of shifts σ over Σₜ's spectrum (for one pair and W = I the optimum is such a resolvent).
It solves the restricted program and evaluates the dual bound of fact 2 with the current
gₜ (the λₜ solved as a p-variable program); it stops when the gap between the restricted
optimum (an upper bound) and the dual bound (a lower bound) is below ``rtol`` relative.
Otherwise a first-order solve of the low-rank form (minimise tr(UᵀWU) subject to
dₜᵀ(Σₜ + UUᵀ)⁻¹dₜ ≤ D², U with p columns; augmented Lagrangian, L-BFGS) finds the
optimum's range, and the following rounds add the directions W⁻¹gₜ — where fact 2 says
the optimum lives — keeping the subspace (warm start). When k would reach ``_FULL_SHARE``
of m it solves the full program in the S ⪰ Aₜ form. Cost per round O(p m² k) plus a
k × k program; the Cholesky factors of the Σₜ are computed once (O(p m³)).

A singular Σₜ (e.g. histogram counts that sum to the subset size) is factored with a
jitter of ``_JITTER`` relative to its mean variance. That weakens each constraint by at
most the jitter; the caller re-checks every constraint with the true covariances and
adds the least isotropic correction when needed, and the exact calibration verifies
the released noise with the exact privacy profile either way — the solver only chooses
the *shape* of the noise.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ..errors import MechanismNotApplicableError

__all__ = ["SolverResult", "solve_structured"]

# Jitter added to each Σₜ before its Cholesky factor, relative to its mean variance.
_JITTER = 1e-10
# Columns whose part outside the current subspace is below this (relative) are not added.
_NEW_DIRECTION_RTOL = 1e-9
# Solve the full program once the subspace would cover this share of the dimensions
# (only up to _FULL_MAX_DIM statistics: beyond, the full program stalls a generic solver —
# k = 3 hypotheses at m = 50 with the population set's members: > 400 s;
# more than 198 s at m = 150 — and the best restricted answer, feasible, is returned).
_FULL_SHARE = 0.6
_FULL_MAX_DIM = 30
# Resolvent directions at most this many (they make the first restricted program large).
_RESOLVENT_MAX = 20
# The first-order solve above _FULL_MAX_DIM statistics: augmented-Lagrangian rounds and
# L-BFGS iterations per round (12 and 400 below; 61 s at m = 500 with six constraints).
_LARGE_OUTER = 6
_LARGE_INNER = 60
_LARGE_ROUNDS = 3
# Above _FULL_MAX_DIM statistics a certified relative gap of 1e-5 ends the rounds: the
# answer is a shape that the exact calibration scales, and on Adult's 100 cumulative shares
# (condition number 4.2e3) round 2 reached gaps of 1e-7 to 1e-6 while round 3, the
# largest program, lowered the objective by nothing (half of the solver's time).
_LARGE_RTOL = 1e-5
# Stop when the duality gap is below this and a round no longer lowers the upper bound by
# more than ``rtol`` (the small solver's accuracy, not the subspace, limits the gap then).
_STALL_GAP = 1e-5
# Shifts of the resolvent directions per constraint, over [max(λ_min, range·λ_max), λ_max].
_SHIFTS = 8
_SHIFT_RANGE = 1e-6
# Resolvent directions only while they stay below this share of the dimensions.
_RESOLVENT_BUDGET = 0.4
# Restricted programs larger than this (k × k) go to SCS first, smaller ones to Clarabel
# (interior point: exact to 1e-8 and fast while the cones are small; 1.2 s at k = 25,
# p = 10 against SCS's 0.24 s, 54 s against 0.74 s at k = 40).
_CLARABEL_MAX_K = 12
# SCS to 1e-8 (absolute and relative): on the random programs above its objective agrees
# with Clarabel's to 1e-8 relative, constraints met to 1e-7.
_SOLVER_OPTIONS = {"SCS": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iters": 20_000}}


@dataclass(frozen=True)
class SolverResult:
    """The structured solver's answer.

    Attributes
    ----------
    sigma : ndarray, shape (m, m)
        The noise covariance S (in the caller's units).
    upper : float
        tr(W S) of the restricted optimum (an upper bound on the program's optimum, up
        to the small solver's tolerance).
    lower : float
        The dual (weak-duality) lower bound on the optimum; ``-inf`` if none was found.
    rounds : int
        Restricted programs solved.
    dimension : int
        k, the dimension of the final subspace (m: the full program).
    """

    sigma: np.ndarray
    upper: float
    lower: float
    rounds: int
    dimension: int

    @property
    def gap(self) -> float:
        """Relative duality gap (upper − lower) / upper; 0 when both are 0."""
        if self.upper <= 0:
            return 0.0
        return max(0.0, (self.upper - self.lower) / self.upper)

    def describe(self) -> str:
        """One line for the diagnostics."""
        return (
            f"structured solver: {self.rounds} restricted program(s), subspace of dimension "
            f"{self.dimension}, relative duality gap {self.gap:.2g}"
        )


def _cholesky(cov: np.ndarray) -> tuple[np.ndarray, bool]:
    """Cholesky factor of Σ + ηI (η relative to the mean variance, grown until it works)."""
    m = cov.shape[0]
    base = max(float(np.trace(cov)) / m, 1e-300)
    eta = _JITTER * base
    for _ in range(12):
        try:
            return cho_factor(cov + eta * np.eye(m), lower=True)
        except np.linalg.LinAlgError:
            eta *= 100.0
    raise MechanismNotApplicableError(
        "optimal-g: a covariance of the model is not positive semi-definite to working "
        "precision; use 'daum' or 'eigm'"
    )


def _orthonormal_extend(basis: np.ndarray, vecs: list[np.ndarray]) -> np.ndarray:
    """``basis`` with the parts of ``vecs`` outside its span appended (twice Gram-Schmidt)."""
    cols = [basis] if basis.size else []
    current = basis
    for v in vecs:
        norm = float(np.linalg.norm(v))
        if norm == 0 or not math.isfinite(norm):
            continue
        u = v / norm
        for _ in range(2):
            if current.size:
                u = u - current @ (current.T @ u)
        r = float(np.linalg.norm(u))
        if r > _NEW_DIRECTION_RTOL:
            u = u / r
            cols.append(u.reshape(-1, 1))
            current = np.hstack(cols)
    return current


def _small_program(wq: np.ndarray, bounds: list[np.ndarray]) -> np.ndarray:
    """min tr(wq Y) s.t. Y ⪰ 0 and Y ⪰ K for every K in ``bounds`` (k × k; Clarabel, SCS)."""
    import cvxpy as cp

    k = wq.shape[0]
    y = cp.Variable((k, k), PSD=True)
    cons = [y - (b + b.T) / 2 >> 0 for b in bounds]
    prob = cp.Problem(cp.Minimize(cp.trace(((wq + wq.T) / 2) @ y)), cons)
    status = "unsolved"
    # Clarabel factors the KKT system of the p + 1 cones with dense fill-in: 54 s at
    # k = 40, p = 10, where SCS (first order, one k × k eigendecomposition per cone and
    # iteration) takes 0.7 s to the same objective within 1e-8 relative. The answer is only
    # a shape: the caller restores every constraint exactly and the exact accountant
    # verifies the published noise, so SCS's feasibility tolerance costs no privacy.
    order = ("SCS", "CLARABEL") if k > _CLARABEL_MAX_K else ("CLARABEL", "SCS")
    for solver in order:
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                prob.solve(solver=solver, **_SOLVER_OPTIONS.get(solver, {}))
        except (cp.error.SolverError, ValueError, ArithmeticError):
            continue
        status = f"{solver}: {prob.status}"
        if prob.status in ("optimal", "optimal_inaccurate") and y.value is not None:
            val = np.asarray(y.value)
            return (val + val.T) / 2
    raise MechanismNotApplicableError(
        f"optimal-g: the convex program could not be solved ({status}); use 'daum' or 'eigm'"
    )


def _dual_bound(gs: list[np.ndarray], values: np.ndarray, w_chol: tuple[np.ndarray, bool]) -> float:
    """max Σₜ λₜ valuesₜ over λ ≥ 0 with Σₜ λₜ gₜgₜᵀ ⪯ W (weak duality; fact 2)."""
    keep = [t for t in range(len(gs)) if values[t] > 0]
    if not keep:
        return 0.0
    # Σ λₜ hₜhₜᵀ ⪯ I with hₜ = L_W⁻¹gₜ; with H = P R (thin QR) this is R diag(λ) Rᵀ ⪯ I.
    h = solve_triangular(w_chol[0], np.column_stack([gs[t] for t in keep]), lower=True)
    scale = np.linalg.norm(h, axis=0)
    if np.any(scale == 0):
        return -math.inf
    h = h / scale
    vals = values[keep] / scale**2
    if len(keep) == 1:
        return float(vals[0])
    import cvxpy as cp

    _, r = np.linalg.qr(h)
    lam = cp.Variable(len(keep), nonneg=True)
    mat = r @ cp.diag(lam) @ r.T
    prob = cp.Problem(cp.Maximize(vals @ lam), [np.eye(r.shape[0]) - (mat + mat.T) / 2 >> 0])
    try:
        prob.solve(solver="CLARABEL")
    except (cp.error.SolverError, ValueError, ArithmeticError):
        return -math.inf
    if prob.status != "optimal" or lam.value is None:
        return -math.inf
    lv = np.clip(np.asarray(lam.value), 0.0, None)
    # Make the multipliers exactly feasible (the small solver's tolerance): shrink them.
    top = float(np.linalg.eigvalsh((r * lv) @ r.T)[-1])
    if top > 1.0:
        lv = lv / top
    return float(vals @ lv)


def _resolvent_directions(
    covs: list[np.ndarray], diffs: list[np.ndarray], w_chol: tuple[np.ndarray, bool]
) -> list[np.ndarray]:
    """W⁻¹(Σₜ + σI)⁻¹dₜ for σ on a geometric grid over Σₜ's spectrum (and σ = 0).

    For one pair with W = I the optimum is rank one along (λΣ + rI)⁻¹d for some λ, r > 0
    (the top eigenvector of Σ⁻¹ddᵀΣ⁻¹ − rΣ⁻¹), a resolvent of Σ applied to d; with several
    constraints the optimum's range is span{W⁻¹(Σₜ + S)⁻¹dₜ} (fact 2). A rational Krylov
    space of resolvents on a grid of shifts approximates such vectors well with few
    shifts, where the plain Krylov space of the expansion step converges slowly.
    """
    out = []
    for c, d in zip(covs, diffs, strict=True):
        ev, vec = np.linalg.eigh((c + c.T) / 2)
        top = max(float(ev[-1]), 1e-300)
        low = max(float(ev[0]), _SHIFT_RANGE * top)
        proj = vec.T @ d
        for sigma in (0.0, *np.geomspace(low, top, _SHIFTS)):
            denom = np.maximum(ev + sigma, _JITTER * top)
            out.append(cho_solve(w_chol, vec @ (proj / denom)))
    return out


def solve_structured(
    constraints: list[tuple[np.ndarray, np.ndarray]],
    weights: np.ndarray,
    distance: float,
    *,
    rtol: float = 1e-7,
    max_rounds: int = 40,
) -> SolverResult:
    """Solve the convex program of optimal-g by subspace expansion (see the module notes).

    Parameters
    ----------
    constraints : list of (ndarray (m, m), ndarray (m,))
        (Σₜ, dₜ) for the constraints that bind at S = 0 (dₜᵀΣₜ⁻¹dₜ > D²).
    weights : ndarray, shape (m, m)
        W, symmetric positive definite.
    distance : float
        D > 0.
    rtol : float
        Stop when the relative duality gap is below this.
    max_rounds : int
        Restricted programs at most (the last answer is feasible either way).

    Returns
    -------
    SolverResult
    """
    m = weights.shape[0]
    # Units where the answer is O(1) (as in the generic solver): d' = d/(D√c), Σ' = Σ/c.
    scale = max(float(d @ d) for _, d in constraints) / distance**2
    w_scale = float(np.trace(weights)) / m
    prob = _Program(
        [c / scale for c, _ in constraints],
        [d / (distance * math.sqrt(scale)) for _, d in constraints],
        weights / w_scale,
    )
    # Round 1: the dₜ and the directions of the optimum at S = 0 (fact 2, gₜ = Σₜ⁻¹dₜ).
    q = _orthonormal_extend(np.zeros((m, 0)), prob.diffs)
    q = _orthonormal_extend(q, [prob.w_solve(prob.grad_dirs(None)[0][t]) for t in range(prob.n)])
    if prob.n * (_SHIFTS + 1) <= min(_RESOLVENT_BUDGET * m, _RESOLVENT_MAX):
        # Few constraints: resolvents (Σₜ + σI)⁻¹dₜ usually hold the optimum already.
        q = _orthonormal_extend(q, _resolvent_directions(prob.covs, prob.diffs, prob.w_chol))
    best = prob.restricted(q)
    rounds = 1
    if m > _FULL_MAX_DIM:
        # Each expansion round adds p directions for a few 1e-4 of the objective (m = 500:
        # 0.9246 → 0.9242 over four rounds, each slower): the shape is all the caller needs.
        max_rounds = min(max_rounds, _LARGE_ROUNDS)
        rtol = max(rtol, _LARGE_RTOL)
    while best.gap > rtol and rounds < max_rounds and q.shape[1] < m:
        if rounds == 1:
            # A low-rank first-order solve over S = UUᵀ (rank ≤ p by fact 2) finds the
            # optimum's range; the restricted program then polishes and certifies it.
            u = prob.low_rank(best.factor)
            gs, _ = prob.grad_dirs(u)
            vecs = [*(u.T), *(prob.w_solve(g) for g in gs)]
            q = _orthonormal_extend(_orthonormal_extend(np.zeros((m, 0)), prob.diffs), vecs)
        else:
            # Warm start: keep the subspace, add where fact 2 says the optimum lives.
            q = _orthonormal_extend(q, [prob.w_solve(g) for g in best.gs])
        if q.shape[1] >= _FULL_SHARE * m:
            if m > _FULL_MAX_DIM:
                break  # the best restricted answer (feasible), with its gap reported
            q = np.eye(m)
        rounds += 1
        trial = prob.restricted(q)
        # Large m only: there no full program can close the last digits of the gap.
        stalled = m > _FULL_MAX_DIM and rounds > 2 and trial.upper >= best.upper * (1 - rtol)
        if trial.upper <= best.upper or trial.gap < best.gap:
            best = _Round(
                trial.sigma, trial.factor, trial.gs, trial.upper, max(trial.lower, best.lower)
            )
        if stalled and best.gap <= _STALL_GAP:
            break
    return SolverResult(
        best.sigma * scale,
        best.upper * scale * w_scale,
        best.lower * scale * w_scale,
        rounds,
        q.shape[1],
    )


@dataclass
class _Round:
    sigma: np.ndarray
    factor: np.ndarray
    gs: list[np.ndarray]
    upper: float
    lower: float

    @property
    def gap(self) -> float:
        if self.upper <= 0:
            return 0.0
        return (self.upper - self.lower) / self.upper


class _Program:
    """The scaled program: Σₜ, dₜ (D = 1), W, with the Cholesky factors computed once."""

    def __init__(self, covs: list[np.ndarray], diffs: list[np.ndarray], w: np.ndarray) -> None:
        self.covs, self.diffs, self.w = covs, diffs, w
        self.n, self.m = len(covs), w.shape[0]
        self.chols = [_cholesky(c) for c in covs]
        self.w_chol = cho_factor(w, lower=True)
        self.cinv_d = [cho_solve(ch, d) for ch, d in zip(self.chols, diffs, strict=True)]
        # Explicit inverses (once, O(p m³)): Σₜ⁻¹U is then one matrix product per call; a
        # triangular solve with a few right-hand sides is memory-bound (84 ms at m = 500).
        eye = np.eye(self.m)
        self.invs = [cho_solve(ch, eye) for ch in self.chols]
        self.invs = [(a + a.T) / 2 for a in self.invs]

    def w_solve(self, x: np.ndarray) -> np.ndarray:
        return cho_solve(self.w_chol, x)

    def grad_dirs(self, u: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray]:
        """gₜ = (Σₜ + UUᵀ)⁻¹dₜ (Woodbury) and hₜ = dₜᵀgₜ."""
        gs, hs = [], np.empty(self.n)
        for t in range(self.n):
            g = self.cinv_d[t]
            if u is not None and u.shape[1]:
                cinv_u = self.invs[t] @ u
                inner = np.eye(u.shape[1]) + u.T @ cinv_u
                g = g - cinv_u @ np.linalg.solve(inner, u.T @ g)
            gs.append(g)
            hs[t] = float(self.diffs[t] @ g)
        return gs, hs

    def restricted(self, q: np.ndarray) -> _Round:
        """Solve the program over S = QYQᵀ (fact 3) and bound the optimum from below."""
        bounds = []
        if q.shape[1] == self.m:
            q = np.eye(self.m)
            bounds = [np.outer(d, d) - c for c, d in zip(self.covs, self.diffs, strict=True)]
        else:
            for ch, d in zip(self.chols, self.diffs, strict=True):
                # (Qᵀ Σ⁻¹ Q)⁻¹ = R⁻¹R⁻ᵀ with L⁻¹Q = P R: Σ shorted to the subspace.
                _, r = np.linalg.qr(solve_triangular(ch[0], q, lower=True))
                r_inv = solve_triangular(r, np.eye(r.shape[0]))
                c = q.T @ d
                bounds.append(np.outer(c, c) - r_inv @ r_inv.T)
        y = _small_program(q.T @ self.w @ q, bounds)
        sigma = q @ y @ q.T
        sigma = (sigma + sigma.T) / 2
        ev, evec = np.linalg.eigh(y)
        pos = ev > 1e-14 * max(float(ev[-1]), 1e-300)
        u = q @ (evec[:, pos] * np.sqrt(ev[pos]))
        gs, hs = self.grad_dirs(u)
        # gᵀAₜg = (dᵀg)² − gᵀΣₜg (D = 1 in these units).
        vals = np.array(
            [h * h - float(g @ c @ g) for g, h, c in zip(gs, hs, self.covs, strict=True)]
        )
        lower = _dual_bound(gs, vals, self.w_chol)
        return _Round(sigma, u, gs, float(np.trace(self.w @ sigma)), lower)

    def low_rank(self, u0: np.ndarray) -> np.ndarray:
        """min tr(UᵀWU) s.t. dₜᵀ(Σₜ + UUᵀ)⁻¹dₜ ≤ 1, U of p columns (augmented Lagrangian)."""
        from scipy.optimize import minimize

        m, r = self.m, max(min(self.n, self.m), u0.shape[1])
        u = np.zeros((m, r))
        u[:, : u0.shape[1]] = u0
        if u0.shape[1] < r:
            # Start the missing columns along the gradient directions, small.
            gs, _ = self.grad_dirs(u0 if u0.shape[1] else None)
            for j in range(u0.shape[1], r):
                v = self.w_solve(gs[j % self.n])
                u[:, j] = 1e-3 * v / max(float(np.linalg.norm(v)), 1e-300)
        lam = np.zeros(self.n)
        mu = 10.0

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            uu = x.reshape(m, r)
            gs, hs = self.grad_dirs(uu)
            wu = self.w @ uu
            val = float(np.sum(uu * wu))
            grad = 2.0 * wu
            for t in range(self.n):
                s = max(0.0, lam[t] + mu * (hs[t] - 1.0))
                val += (s * s - lam[t] ** 2) / (2.0 * mu)
                grad -= 2.0 * s * np.outer(gs[t], gs[t] @ uu)
            return val, grad.ravel()

        x = u.ravel()
        # Many statistics: a coarser first-order solve (its range is what matters; the
        # restricted program polishes it and the certificate reports the gap).
        outer, inner = (12, 400) if m <= _FULL_MAX_DIM else (_LARGE_OUTER, _LARGE_INNER)
        for _ in range(outer):
            res = minimize(
                fun, x, jac=True, method="L-BFGS-B", options={"maxiter": inner, "gtol": 1e-10}
            )
            x = res.x
            _, hs = self.grad_dirs(x.reshape(m, r))
            viol = float(np.max(hs - 1.0))
            lam = np.maximum(0.0, lam + mu * (hs - 1.0))
            if viol < 1e-7:
                break
            mu *= 4.0
        return x.reshape(m, r)
