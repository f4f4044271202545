"""The noise families of the exact calibration, and optimal-g's choice among them.

What :mod:`distpriv.central.exact_calibration` searches over. Each Gaussian-family
mechanism's noise Σ_Z(s) as a function of one scale (:func:`_family`), the least scale of a
family on a model (:func:`_search`), and optimal-g's candidate shapes, each calibrated
exactly, the cheapest kept (:func:`_optimal`), with the pruning that keeps that affordable:
full-rank shapes first, then every other shape only if, at the cost of the best so far, it
already meets the target; the population set's program not solved where no noise of its rank
can meet the target at any scale (:mod:`distpriv.central._rank_bound`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AssumptionWarning, MechanismNotApplicableError
from ..population.exact import PairCheck, pair_deltas, search_tolerance, smallest_scale
from ..population.pair_pruning import first_failing
from ._rank_bound import rank_limited_floor
from ._round_memo import RoundMemo, grown_scale, member_keys
from .base import CalibratedMechanism
from .montecarlo_shapes import monte_carlo_families, sampled_covariance
from .objective import is_identity_like, isotropic_shape

__all__ = ["scale_at_cost"]

_SET_LABEL = "convex program on the population set's worst members, scaled"
_OTHER_LABEL = "{}'s noise shape (cheaper than the program's)"
_EIGM_LABEL = _OTHER_LABEL.format("eigm")


def _family(name: str, mech: CalibratedMechanism) -> tuple[Callable[[float], np.ndarray], float]:
    """The noise family Σ_Z(s) of a mechanism (non-decreasing in s) and the papers' s."""
    d = mech.diagnostics
    m = mech.dim
    if name == "expm-g":
        return (lambda s: s * s * np.eye(m)), math.sqrt(mech.noise_covariance[0, 0])
    if name == "dirm-g":
        basis = np.asarray(d["directions"])
        proj = basis @ basis.T
        s0 = float(mech.noise.components[0].scales[0]) if basis.shape[1] else 0.0
        return (lambda s: s * s * proj), s0
    if name in ("eigm", "apgm"):
        vecs = np.asarray(d["eigenvectors"])
        lam = np.asarray(d["model_eigenvalues"])  # (k, m): v_kᵀ Σ_θ v_k

        def eig(s: float) -> np.ndarray:
            sig2 = np.max(np.maximum(0.0, s * s - lam), axis=0)
            return (vecs * sig2) @ vecs.T

        return eig, math.sqrt(float(d["target_variance"]))
    if name == "daum":
        v = np.asarray(d["direction"]).reshape(-1, 1)
        vv = v @ v.T
        s0 = math.sqrt(max(float(d["noise_variance"]), float(d["directional_expm_variance"])))
        return (lambda s: s * s * vv), s0
    if name == "optimal-g":
        cov = mech.noise_covariance
        return (lambda s: s * s * cov), 1.0
    raise ValueError(name)  # pragma: no cover - registry passes only EXACT_MECHANISMS


def _family_parts(name: str, mech: CalibratedMechanism) -> tuple[Any, ...]:
    """What :func:`_family` reads of ``mech`` (DauM's or EigM's), for a cache key."""
    d = mech.diagnostics
    if name == "daum":
        return (np.asarray(d["direction"]), d["noise_variance"], d["directional_expm_variance"])
    if name in ("eigm", "apgm"):
        vecs, lam = np.asarray(d["eigenvectors"]), np.asarray(d["model_eigenvalues"])
        return (vecs, lam, float(d["target_variance"]))
    raise ValueError(name)  # pragma: no cover - only the shapes optimal-g tries


def _search(
    name: str,
    gm: Any,
    family: Callable[[float], np.ndarray],
    start: float,
    epsilon: float,
    delta: float,
    known: dict[float, float] | None = None,
) -> tuple[np.ndarray, float, PairCheck]:
    scale, check = smallest_scale(
        gm, family, epsilon=epsilon, delta=delta, start=start, name=name, known=known
    )
    return family(scale), scale, check


def _optimal(
    gm: Any,
    paper: CalibratedMechanism,
    build: Callable[..., CalibratedMechanism],
    epsilon: float,
    delta: float,
    weights: np.ndarray,
    for_set: bool = False,
    memo: RoundMemo | None = None,
    program: Callable[..., np.ndarray | None] | None = None,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """optimal-g: the convex program's Σ_Z scaled, or repaired; never noisier than daum.

    Candidates, each calibrated exactly: the program's noise scaled; the program's noise
    plus isotropic noise (a repair that covers every direction); DauM's and EigM's noise
    shapes. The one of least tr(W Σ_Z) is kept. With ``for_set`` (``gm`` is made of the
    population set's worst members) the program is also solved on those
    members themselves — a shape chosen for the set, not the fitted shape scaled up — and
    :func:`_calibrate_robust` adds members until none binds (cutting planes). ``memo``:
    what the previous round of those cutting planes left (:mod:`distpriv.central._round_memo`):
    its shape is tried first and its search starts at its scale (warm start; the scale
    found is the least all the same), and a shape that does not move with the members is
    searched only on the members added since its least scale was found; updated here.
    """
    base = paper.noise_covariance
    if np.trace(base) == 0:
        # The papers' program adds no noise: if the exact profile agrees, none is needed.
        # (Only then: the strict check of a rank-deficient noise can need the 50-digit
        # whitening, seconds per pair at m = 20.)
        check0 = pair_deltas(gm, base, epsilon=epsilon, screen=delta)
        if check0.worst <= delta:
            return base, 0.0, check0, "no noise needed"
    # "Isotropic" for the objective: I under E‖Z‖², W⁻¹ (each statistic's own sampling
    # variance under "relative") otherwise, so that no candidate depends on the units.
    unit = isotropic_shape(weights)
    floor = 1e-12 * float(np.sum(weights * gm.covariances[0])) / gm.dim
    iso = math.sqrt(max(float(np.sum(weights * base)) / gm.dim, floor))
    if is_identity_like(weights):  # the papers' objective: the start as it always was
        tiny = 1e-12 * float(np.trace(gm.covariances[0]))
        iso = math.sqrt(max(float(np.trace(base)) / gm.dim, tiny))
    # Full-rank shapes first (they always reach the target): the shapes that may leave a
    # direction without noise (the programs' own, DauM's, EigM's) are then only searched
    # if, at the scale where they cost as much as the best so far, they already meet the
    # target (one check at a moderate scale), instead of a search that walks them up to
    # huge scales, where the pair's exact profile needs extended precision, before it
    # finds that no scale will do. The least cost over the candidates is the same.
    families: list[tuple[str, Callable[[float], np.ndarray], float]] = [
        (
            "convex program's noise plus isotropic repair",
            lambda s: base + s * s * unit,
            iso,
        ),
        # expm-g's shape too (W-isotropic: expm-g's under E‖Z‖²): optimal-g is then never
        # noisier than it (independent covariances can leave no cheaper shape: every
        # direction needs noise).
        ("isotropic noise (expm-g's shape)", _scaled(unit), iso),
    ]
    # The set program's optimum has rank ≤ its constraints (two per pair: _optimal_solver,
    # fact 2); if the members' covariances differ so much that no noise of that rank can
    # meet the target at any scale (a proven floor, central/_rank_bound.py), its shape
    # could only fail its search: the program is not solved (most of the time at m = 50).
    if for_set and rank_limited_floor(
        gm, 2 * len(gm.pairs), epsilon=epsilon, level=_FLOOR_MARGIN * delta
    ) <= (_FLOOR_MARGIN * delta):
        shaped = (program or _set_program)(gm, epsilon, delta, weights)
        if shaped is not None and np.trace(shaped) > 0:
            families.append((_SET_LABEL, _scaled(shaped), 1.0))
    if np.trace(base) > 0:
        families.append(("convex program's noise, scaled", lambda s: s * s * base, 1.0))
    for other in ("daum", "eigm"):
        try:
            if other == "eigm" and not is_identity_like(weights):
                # EigM's eigenvectors depend on the units: taken in the objective's
                # coordinates (DauM's direction, the mean difference, rescales as is).
                fam, s0 = _weighted_eigm(gm, weights, epsilon, delta)
            else:
                fam, s0 = _family(other, build(other, calibration="analytic"))
        except MechanismNotApplicableError:
            continue
        families.append((_OTHER_LABEL.format(other), fam, s0))
    sampled = sampled_covariance(paper)
    if sampled is not None:  # a Monte Carlo model: its own shapes (central/montecarlo_shapes.py)
        families = monte_carlo_families(families, base, sampled, weights)
    best: tuple[np.ndarray, float, PairCheck, str] | None = None
    errors = []
    # Shapes computed on the members themselves change from round to round: never reused.
    moving = {_SET_LABEL, *([] if is_identity_like(weights) else [_EIGM_LABEL])}
    keys = member_keys(gm) if memo is not None else ()
    if memo is not None and memo.last is not None:
        # The last round's shape first: a best that the others are checked against at once.
        last = memo.last[0]
        families.sort(key=lambda f: f[0] != last)
    for label, fam, start in families:
        known = None
        if memo is not None and memo.last is not None and memo.last[0] == label:
            start = memo.last[1] if memo.last[1] > 0 else start
        if best is not None:
            # Prune: at the scale where this shape costs as much as the best so far, it
            # must already meet the target, or its least scale would cost more.
            cap = scale_at_cost(fam, weights, float(np.trace(weights @ best[0])), start)
            # pair_deltas' verdict at the search accuracy, stopped at the first failing
            # member (tried first: the one that failed this shape's last such check).
            hint = memo.failed_first(label, keys) if memo is not None else []
            k, _ = first_failing(
                gm, fam(cap), epsilon=epsilon, delta=delta, tol=search_tolerance(delta), first=hint
            )
            if k >= 0:
                if memo is not None:
                    memo.failed[label] = keys[k]
                continue
            start = cap  # the search starts where this left off
        prior = None
        if memo is not None and label not in moving:
            prior = memo.prior(label, fam, keys)
        try:
            if prior is not None:
                s, chk = grown_scale(gm, fam, prior, epsilon, delta, "optimal-g")
                cov = fam(s)
            else:
                cov, s, chk = _search("optimal-g", gm, fam, start, epsilon, delta, known)
        except MechanismNotApplicableError as exc:
            errors.append(str(exc))
            continue
        if memo is not None and label not in moving:
            memo.remember(label, fam, s, keys)
        if best is None or np.trace(weights @ cov) < np.trace(weights @ best[0]):
            best = (cov, s, chk, label)
    if best is None and sampled is not None:
        raise MechanismNotApplicableError(
            "optimal-g: on this Monte Carlo model no noise shaped by the convex program or by "
            "the model's sampled covariance meets the target at any scale; use 'expm-g'"
        )
    if best is None:
        raise MechanismNotApplicableError("; ".join(errors))
    if memo is not None:
        memo.last = (best[3], best[1])
    return best


def _weighted_eigm(
    gm: Any, weights: np.ndarray, epsilon: float, delta: float
) -> tuple[Callable[[float], np.ndarray], float]:
    """EigM's family computed on the model in the coordinates where W is I, mapped back.

    With T = W^(1/2) (the inverse of :func:`~distpriv.central.objective.isotropic_shape`'s
    square root), EigM of the model (T μ_θ, T Σ_θ T) gives Σ'(s); Σ_Z(s) = T⁻¹ Σ'(s) T⁻¹. A
    linear bijection of the release is post-processing both ways, so this is a noise
    shape like any other, checked exactly by the search.
    """
    from ..querymodel import GaussianQueryModel
    from .uncertainty import calibrate_eigm

    if np.all(weights == np.diag(np.diag(weights))):
        r = np.sqrt(np.diag(weights))
        half, inv_half = np.diag(r), np.diag(1.0 / r)
    else:
        vals, vecs = np.linalg.eigh(weights)
        half = (vecs * np.sqrt(vals)) @ vecs.T
        inv_half = (vecs / np.sqrt(vals)) @ vecs.T
    moved = GaussianQueryModel(
        np.asarray(gm.means) @ half.T,
        half @ np.asarray(gm.covariances) @ half.T,
        pairs=gm.pairs,
        labels=gm.labels,
        statistics=gm.statistics,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        fam, s0 = _family(
            "eigm", calibrate_eigm(moved, epsilon=epsilon, delta=delta, calibration="analytic")
        )
    return (lambda s: inv_half @ fam(s) @ inv_half), s0


# A shape is skipped only when the floor exceeds δ by this factor (the floor's own
# rounding: generalised eigenvalues to a few ulps times the condition number).
_FLOOR_MARGIN = 1.01


def _scaled(cov: np.ndarray) -> Callable[[float], np.ndarray]:
    return lambda s: s * s * cov


def _set_program(
    members: Any, epsilon: float, delta: float, weights: np.ndarray
) -> np.ndarray | None:
    """optimal-g's program (Cor. A.1, analytic D*) with every pair of ``members`` a
    constraint, for each of its two covariances; ``None`` if it cannot be solved."""
    from .optimal import calibrate_optimal

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            mech = calibrate_optimal(
                members, epsilon=epsilon, delta=delta, calibration="analytic", weights=weights
            )
    except MechanismNotApplicableError:
        return None
    return mech.noise_covariance


def scale_at_cost(
    fam: Callable[[float], np.ndarray], weights: np.ndarray, cost: float, start: float
) -> float:
    """The s with tr(W Σ_Z(s)) = cost (bisection; the cost is non-decreasing in s).

    tr(W Σ) is summed elementwise (W symmetric): O(m²) per step instead of the O(m³)
    product, which dominated at m = 500. The bisection stops at relative width 1e-12.
    """

    def at(s: float) -> float:
        return float(np.sum(weights * fam(s)))

    lo, hi = 0.0, max(start, 1e-300)
    while at(hi) < cost and hi < 1e300:
        lo, hi = hi, hi * 2.0
    for _ in range(60):
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if at(mid) < cost:
            lo = mid
        else:
            hi = mid
    return lo
