"""Exact calibration and verification of the Gaussian mechanisms on unequal covariances.

Under the query model, the output of θ is N(μ_θ, Σ_θ + Σ_Z). Chen & Ohrimenko's
theorems (2023, Thm 4.2–4.5, Cor. A.1) need Σ_θᵢ = Σ_θⱼ on every pair; models built from
data never have that. The exact privacy profile of two Gaussians with different
covariances (:func:`distpriv.accounting.gaussian_pair_delta`, a generalised chi-square
computation) needs no such assumption, so here

* :func:`pair_deltas` checks every pair of Ψ in both directions under that profile;
* :func:`smallest_scale` finds the least scale of a given noise shape at which every
  check passes. Adding independent noise is post-processing, so every δ(ε) is
  non-increasing along a family Σ_Z(s) that grows in the positive semi-definite order:
  a bracketed search is enough (docs/architecture.md §4);
* :func:`verified_headline` turns the outcome into the headline of a guarantee: the
  target when it is met, otherwise the weaker (ε', δ) that holds (ε' from
  :func:`distpriv.accounting.gaussian_pair_epsilon`), with the target kept as
  "requested".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accounting.calibration_cache import active_cache, fingerprint
from ..accounting.pair_profile import (  # _check_pair: gaussian_pair_profile's own checks
    GaussianPairProfile,
    _check_pair,
    gaussian_pair_epsilon,
    pair_profile_unchecked,
    pair_profiles_unchecked,
)
from ..errors import MechanismNotApplicableError
from ..guarantees import Assumption, PrivacyGuarantee
from ..querymodel import GaussianQueryModel
from ..util.roots import brentq  # scipy.optimize's, without its import cost
from ..util.threads import one_blas_thread
from ..util.validation import check_real
from ._stalled import stalled_message

__all__ = [
    "PairCheck",
    "gaussian_premise",
    "pair_deltas",
    "published_noise",
    "search_tolerance",
    "smallest_scale",
    "verified_headline",
]

# Accuracy of the profile during the search, relative to the target δ; the final check
# uses the strict default of gaussian_pair_profile and is what the guarantee reports.
_SEARCH_RTOL = 1e-4
# Relative width of the final bracket of the scale search.
_SCALE_RTOL = 1e-5
# The search gives up when the scale would have to exceed this multiple of its start.
_MAX_GROWTH = 2.0**40

EXACT_THEOREM = (
    "exact privacy profile of the Gaussian outputs N(mu_theta, Sigma_theta + Sigma_Z) "
    "(generalised chi-square; distpriv.gaussian_pair_delta)"
)


@dataclass(frozen=True)
class PairCheck:
    """Every pair of Ψ in both directions at one ε under the exact profile.

    Attributes
    ----------
    epsilon : float
    profiles : tuple of (GaussianPairProfile, GaussianPairProfile)
        Per pair: (θᵢ against θⱼ, θⱼ against θᵢ).
    labels : tuple of (str, str)
    """

    epsilon: float
    profiles: tuple[tuple[GaussianPairProfile, GaussianPairProfile], ...]
    labels: tuple[tuple[str, str], ...]

    @property
    def deltas(self) -> np.ndarray:
        """Upper bounds on δ(ε), shape (p, 2)."""
        return np.array([[a.delta, b.delta] for a, b in self.profiles]).reshape(-1, 2)

    @property
    def worst(self) -> float:
        """The largest upper bound over pairs and directions."""
        return float(self.deltas.max())

    @property
    def error_bound(self) -> float:
        """The largest numerical error bound included in those upper bounds."""
        return max((max(a.error_bound, b.error_bound) for a, b in self.profiles), default=0.0)

    def describe(self) -> str:
        """The worst pair and direction, in words."""
        d = self.deltas
        p, k = np.unravel_index(int(np.argmax(d)), d.shape)
        a, b = self.labels[p] if k == 0 else self.labels[p][::-1]
        prof = self.profiles[p][k]
        return (
            f"largest delta({self.epsilon:g}) = {d[p, k]:.6g} (output of {a} against {b}; "
            f"{prof.method}, numerical error bound {prof.error_bound:.2g} included)"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "epsilon": self.epsilon,
            "pairs": [list(p) for p in self.labels],
            "delta_upper": self.deltas.tolist(),
            "error_bound": self.error_bound,
        }


def pair_deltas(
    model: GaussianQueryModel,
    noise_cov: np.ndarray,
    *,
    epsilon: float,
    tol: float = 1e-12,
    screen: float | None = None,
) -> PairCheck:
    """Exact δ(ε) of every pair's outputs N(μ_θ, Σ_θ + Σ_Z), both directions.

    Parameters
    ----------
    model : GaussianQueryModel
    noise_cov : ndarray, shape (m, m)
        Σ_Z.
    epsilon : float
    tol : float
        Absolute accuracy asked of each profile. At the strict accuracy (the default:
        the checks behind a guarantee) each direction is computed exactly as the public
        :func:`~distpriv.gaussian_pair_profile` computes it, on the same matrices, so a
        guarantee never states less than the public accountant reports for its noise
        (where the inversion is near ill-conditioned, the rounding of a different
        whitening can move the accountant to its looser certified bound). During a
        scale search (a looser ``tol``) both directions share one joint whitening.
    screen : float, optional
        The level that matters (the target δ, or a fraction of it during a search). With
        it, a pair dominated by another (equal covariances, parallel and shorter mean
        difference) reports the other's profile, and a pair whose certified Rényi bound
        is at most ``screen`` in both directions reports that bound
        (:mod:`distpriv.population.pair_pruning`): upper bounds, never below the exact
        profile, and the exact profile of every pair that could exceed ``screen``.
        ``None`` (default): every pair exactly.
    """
    if tol <= _STRICT_TOL and screen is not None and _WHAT_IF.get():
        # A what-if calibration (what_if_accuracy): the search's accuracy, still certified.
        tol = search_tolerance(screen)
    cache = active_cache()
    key = None
    if cache is not None:
        # A pure function of these (accounting/calibration_cache.py): remembered per call.
        key = (cache.model_key(model), fingerprint(np.asarray(noise_cov)), epsilon, tol, screen)
        known = cache.get(cache.pair_checks, key)
        if known is not None:
            return PairCheck(epsilon, known, model.pair_labels)
    out: list[Any] = [None] * len(model.pairs)
    strict = tol <= _STRICT_TOL
    eps = check_real(epsilon, "epsilon", low=0.0)
    if not strict:
        noise_cov = (noise_cov + noise_cov.T) / 2
    rep = np.arange(len(model.pairs))
    if screen is not None and len(model.pairs) > 1:
        from .pair_pruning import dominating_pairs, screened_profiles

        rep = dominating_pairs(model)
        own = np.flatnonzero(rep == np.arange(rep.size))
        for k, prof in screened_profiles(
            model, noise_cov, own, epsilon=epsilon, level=screen
        ).items():
            out[k] = prof
    with one_blas_thread():
        for k, (i, j) in enumerate(model.pairs):
            if out[k] is not None or rep[k] != k:
                continue
            ci = model.covariances[i] + noise_cov
            cj = model.covariances[j] + noise_cov
            mi, mj = model.means[i], model.means[j]
            if strict:
                # Exactly gaussian_pair_profile's computation in each direction, with the
                # pair's input checks (one eigendecomposition per covariance) done once for
                # both directions: the same checked arrays, so the same answers bit for bit.
                mp, sp, mq, sq = _check_pair(mi, ci, mj, cj)
                out[k] = (
                    pair_profile_unchecked(mp, sp, mq, sq, eps, tol),
                    pair_profile_unchecked(mq, sq, mp, sp, eps, tol),
                )
            else:  # both directions share one joint whitening (two eigendecompositions)
                out[k] = pair_profiles_unchecked(mi, ci, mj, cj, epsilon, tol)
    for low in np.flatnonzero(rep != np.arange(rep.size)):
        out[low] = out[rep[low]]  # dominated: the dominating pair's profile bounds it
    if cache is not None:
        cache.pair_checks[key] = tuple(out)
    return PairCheck(epsilon, tuple(out), model.pair_labels)


# The accuracy of the checks behind a guarantee (pair_deltas' default).
_STRICT_TOL = 1e-12


# Inside what_if_accuracy(): the checks asked at the strict accuracy run at the search's.
_WHAT_IF: ContextVar[bool] = ContextVar("distpriv_what_if_accuracy", default=False)


@contextmanager
def what_if_accuracy() -> Iterator[None]:
    """Calibrations in this block check their result at the search's accuracy.

    For calibrations whose noise is never published — the price table's "without the
    population premise" and "dropping a statistic" (:mod:`distpriv.pipeline.price.table`), shown
    to four significant digits. A check at the search's accuracy is a certified upper
    bound all the same (so such a calibration still meets its target, with noise larger
    by at most the search's resolution); what the strict accuracy adds is the least noise
    to the last digit and agreement with :func:`~distpriv.gaussian_pair_profile` bit for
    bit, which a published guarantee needs and a what-if figure does not
    (the strict checks were a fifth of the price table's CPU). The calibration cache keys
    every check by the accuracy it ran at, so nothing computed here answers a strict
    check outside the block.
    """
    token = _WHAT_IF.set(True)
    try:
        yield
    finally:
        _WHAT_IF.reset(token)


def search_tolerance(delta: float) -> float:
    """Accuracy of the profile during a scale search (relative to the target δ)."""
    return max(delta * _SEARCH_RTOL, 1e-15)


# Above this many pairs the scale search runs on an active set of the pairs that bind
# (every pair is still checked at the result); below it, on every pair at once.
_ACTIVE_MIN = 12
# Pairs added to the active set per round (the worst violators), and the rounds.
_ACTIVE_STEP = 6
_ACTIVE_ROUNDS = 12


def smallest_scale(
    model: GaussianQueryModel,
    noise_of: Callable[[float], np.ndarray],
    *,
    epsilon: float,
    delta: float,
    start: float,
    name: str,
    known: dict[float, float] | None = None,
) -> tuple[float, PairCheck]:
    """Least s ≥ 0 with every pair's exact δ(ε) ≤ δ for the noise Σ_Z = ``noise_of(s)``.

    With many pairs (a range secret: hundreds) the search runs on an *active set*: the
    pairs of largest certified bound at the starting noise; the scale found for them is
    then checked on every pair (:func:`pair_deltas` with ``screen=delta``), the worst
    violators join the active set, and the search runs again. The least scale for a subset
    of the pairs is at most the least scale for all of them, so a scale that passes every
    pair is the least for all of them (to the search's accuracy); and it is returned only
    once it passes every pair. See :func:`_smallest_scale_all` for the search itself.
    """
    pairs = model.pairs
    if len(pairs) <= _ACTIVE_MIN:
        return _smallest_scale_all(
            model, noise_of, epsilon=epsilon, delta=delta, start=start, name=name, known=known
        )
    from ..accounting.pair_screen import renyi_delta_bounds

    s0 = start if start > 0 and math.isfinite(start) else 1.0
    noise = noise_of(s0)
    idx = np.asarray(pairs, dtype=int)
    bounds = renyi_delta_bounds(
        model.means[idx[:, 0]],
        model.covariances[idx[:, 0]] + noise,
        model.means[idx[:, 1]],
        model.covariances[idx[:, 1]] + noise,
        epsilon=epsilon,
    ).max(axis=1)
    # Pairs without a certificate (inf) first, then the largest bounds.
    active = [
        int(k) for k in np.argsort(-np.where(np.isfinite(bounds), bounds, 2.0))[:_ACTIVE_STEP]
    ]
    scale = s0
    for _ in range(_ACTIVE_ROUNDS):
        sub = _sub_model(model, active)
        scale, _ = _smallest_scale_all(
            sub, noise_of, epsilon=epsilon, delta=delta, start=scale, name=name
        )
        check = pair_deltas(model, noise_of(scale), epsilon=epsilon, screen=delta)
        if check.worst <= delta:
            return scale, check
        worst = check.deltas.max(axis=1)
        worst[active] = -1.0
        new = [int(k) for k in np.argsort(-worst)[:_ACTIVE_STEP] if worst[k] > delta]
        active.extend(new)
    # Did not settle: the search on every pair (slow, but the same answer).
    return _smallest_scale_all(
        model, noise_of, epsilon=epsilon, delta=delta, start=scale, name=name
    )


def _sub_model(model: GaussianQueryModel, active: list[int]) -> GaussianQueryModel:
    """``model`` restricted to the pairs ``active`` (same hypotheses, fewer pairs)."""
    return GaussianQueryModel(
        model.means,
        model.covariances,
        [model.pairs[k] for k in active],
        labels=list(range(model.means.shape[0])),
        statistics=model.statistics,
    )


def _smallest_scale_all(
    model: GaussianQueryModel,
    noise_of: Callable[[float], np.ndarray],
    *,
    epsilon: float,
    delta: float,
    start: float,
    name: str,
    known: dict[float, float] | None = None,
    model_at: Callable[[float], GaussianQueryModel] | None = None,
) -> tuple[float, PairCheck]:
    """Least s ≥ 0 with every pair's exact δ(ε) ≤ δ for the noise Σ_Z = ``noise_of(s)``.

    ``model_at``: the pairs to check at scale s, when they move with the noise (a
    population set's worst members *for* ``noise_of(s)``, :mod:`distpriv.population.
    member_search`); ``model`` (the fitted one) then only gives the statistics' spread.
    ``noise_of`` must be non-decreasing in the positive semi-definite order (then every
    δ(ε) is non-increasing in s: adding independent noise is post-processing). The search
    brackets the root starting from ``start`` (e.g. the papers' calibration), solves
    log δ(s) = log δ with Brent's method on log s, and returns the upper end, re-checked
    with the strict accuracy: the returned scale is verified, not extrapolated.
    ``known`` maps scales to the worst δ already computed at :func:`search_tolerance`.

    Raises
    ------
    MechanismNotApplicableError
        No scale meets the target (δ(ε) stays above δ as the noise grows: the noise shape
        leaves a direction where the hypotheses differ unprotected).
    """
    search_tol = search_tolerance(delta)
    # Brent's method starts by evaluating both ends of the bracket, already known.
    seen: dict[float, float] = dict(known or {})
    # How the worst pair was computed at each scale: the refusal names its cause.
    how: dict[float, str] = {}

    def pairs_at(s: float) -> GaussianQueryModel:
        return model if model_at is None else model_at(s)

    def worst(s: float) -> float:
        if s not in seen:
            # Pairs certified below δ/2 cannot be the worst near the root: screened.
            check = pair_deltas(
                pairs_at(s), noise_of(s), epsilon=epsilon, tol=search_tol, screen=delta / 2
            )
            seen[s], how[s] = check.worst, check.describe()
        return seen[s]

    s0 = start if start > 0 and math.isfinite(start) else 1.0
    lo, hi = 0.0, s0
    f_hi = worst(hi)
    # The papers' scale is usually within a few percent of the answer: the first step
    # of the bracket is small (1.25), the following ones large (4).
    if f_hi <= delta:
        # Walk down; below 1e-6 of the start, see whether no noise at all will do: if so
        # (strictly) that is the answer, if only to within the search accuracy the root
        # is verified upward from there, else walk on until the target fails (δ(s) →
        # δ(0) > δ as s → 0, so it does: a start far above the root).
        lo = hi / 1.25
        while worst(lo) <= delta:
            hi, lo = lo, lo / 4.0
            if lo < 1e-6 * s0 and worst(0.0) <= delta:
                check = pair_deltas(pairs_at(0.0), noise_of(0.0), epsilon=epsilon, screen=delta)
                if check.worst <= delta:
                    return 0.0, check
                lo = 0.0  # no noise meets the target only to within the search accuracy
                break
            if lo < 1e-300:  # pragma: no cover - a root below the smallest float
                lo = 0.0
                break
    else:
        # δ(s) decreases to the δ of the directions the noise does not reach; but it also
        # stays flat while the noise is negligible against the model's spread (a start
        # far below the answer). So a step without progress means "no scale will do"
        # only once the noise is at least the model's spread on every statistic it
        # touches; and 20 steps (a 4²⁰-fold growth) without progress always do.
        spread = np.max(np.diagonal(model.covariances, axis1=1, axis2=2), axis=0)
        history: list[float] = []
        step = 1.25
        while f_hi > delta:
            d = np.diag(noise_of(hi))
            touched = d > 0
            matters = bool(touched.any()) and bool(np.all(d[touched] >= spread[touched]))
            lo = hi
            hi *= step
            step = 4.0
            history.append(f_hi)
            flat = len(history) > 1 and f_hi > 0.999 * history[-2]
            stalled = (flat and matters) or (len(history) > 20 and f_hi > 0.999 * history[-21])
            if stalled or (matters and hi > _MAX_GROWTH * s0) or hi > 1e250:
                raise MechanismNotApplicableError(
                    stalled_message(name, (epsilon, delta), noise_of, seen, (lo, how.get(lo)))
                )
            f_hi = worst(hi)

    # The ends map back to the scales evaluated (exp(log s) may differ from s by an ulp).
    ends = {math.log(lo): lo, math.log(hi): hi} if lo > 0.0 else {}

    def g(x: float) -> float:
        s = ends.get(x, math.exp(x)) if lo > 0.0 else x
        return math.log(max(worst(s), 1e-300)) - math.log(delta)

    if lo == 0.0 and worst(0.0) <= delta:
        root = hi  # the search accuracy cannot place the root below hi: verify upward
    elif lo > 0.0:
        root = math.exp(brentq(g, math.log(lo), math.log(hi), xtol=_SCALE_RTOL))
    else:
        root = brentq(g, 0.0, hi, xtol=_SCALE_RTOL * hi)
    hi = min(hi, root * (1.0 + 2 * _SCALE_RTOL))
    # The strict check; step up if the search accuracy left the root short, by steps
    # that double (1e-6, 2e-6, … relative): a hair costs one step, 1 % about fifteen.
    for k in range(60):
        check = pair_deltas(pairs_at(hi), noise_of(hi), epsilon=epsilon, screen=delta)
        if check.worst <= delta:
            return hi, check
        hi *= 1.0 + 1e-6 * 2.0**k
    raise MechanismNotApplicableError(  # pragma: no cover - the search bracket was wrong
        f"{name}: the exact calibration could not be verified; use calibration='analytic'"
    )


def published_noise(
    build: Callable[[float], Any],
    members: Callable[[np.ndarray], GaussianQueryModel],
    *,
    epsilon: float,
    delta: float,
    name: str,
) -> tuple[Any, PairCheck]:
    """The noise to publish for a verified scale, checked as it is published.

    A :class:`~distpriv.noise.Noise` holds its covariance as an eigendecomposition (tiny
    or negative eigenvalues dropped), which differs by rounding from the covariance the
    scale search verified; where δ(ε) is at the target, or the accountant is at the edge
    between two of its methods, that can cross the target. So the strict check is
    repeated on ``noise.covariance`` itself, with the models ``members(covariance)``
    (the fitted model, or the population set's worst members for that noise), and the
    noise is raised by doubling relative steps (variance × (1 + 1e-6 · 2ᵏ)) until it
    passes: the guarantee is about the covariance that is sampled.

    Parameters
    ----------
    build : callable(factor) -> Noise
        The noise with every variance multiplied by ``factor`` (1: as verified).
    members : callable(covariance) -> GaussianQueryModel
    epsilon, delta : float
    name : str
        The mechanism, for the message.

    Raises
    ------
    MechanismNotApplicableError
        No small raise verifies (not expected: the search verified the scale).
    """
    for k in range(40):
        factor = 1.0 if k == 0 else 1.0 + 1e-6 * 2.0 ** (k - 1)
        noise = build(factor)
        cov = noise.covariance
        check = pair_deltas(members(cov), cov, epsilon=epsilon, screen=delta)
        if check.worst <= delta:
            return noise, check
    raise MechanismNotApplicableError(  # pragma: no cover - the search verified the scale
        f"{name}: the noise as published could not be verified at ({epsilon:g}, {delta:g}); "
        "use calibration='analytic'"
    )


def gaussian_premise(model: object, gm: GaussianQueryModel) -> Assumption:
    """The one premise left for the Gaussian family, with the model's normality diagnostics."""
    statement = "f_theta is Gaussian N(mu_theta, Sigma_theta) with the model's moments"
    if gm.fitted is None:
        return Assumption("gaussian", statement, True, "the query model is given as Gaussian")
    detail = f"Gaussian approximation: {gm.fitted}"
    diag = getattr(model, "diagnostics", None)
    if isinstance(diag, dict) and "skewness" in diag and "gaussian_se" in diag:
        se = diag["gaussian_se"]
        skew = np.abs(np.asarray(diag["skewness"], dtype=float))
        kurt = np.abs(np.asarray(diag["excess_kurtosis"], dtype=float))
        detail += (
            f"; normality diagnostics over {diag.get('diagnostic_draws', '?')} draws: largest "
            f"|skewness| {skew.max():.3g} ({skew.max() / se['skewness']:.1f} standard errors), "
            f"largest |excess kurtosis| {kurt.max():.3g} "
            f"({kurt.max() / se['excess_kurtosis']:.1f} standard errors)"
        )
    detail += "; check the data-level delta with distpriv.attacks.verify_on_data"
    return Assumption("gaussian", statement, None, detail)


def exact_assumption(check: PairCheck, delta: float) -> Assumption:
    """The verification behind the headline, as a checked assumption."""
    return Assumption(
        "exact-profile",
        "delta(eps) <= delta for every pair in Psi, both directions, under the exact privacy "
        "profile of the outputs N(mu_theta, Sigma_theta + Sigma_Z) with each theta's own "
        "covariance (no equal-covariance assumption)",
        check.worst <= delta,
        check.describe(),
    )


def verified_headline(
    guarantee: PrivacyGuarantee, model: GaussianQueryModel, noise_cov: np.ndarray
) -> tuple[PrivacyGuarantee, PairCheck]:
    """Replace the headline of a guarantee by what the exact profile verifies.

    If every pair meets the target (ε, δ) the headline stays and the check is recorded.
    Otherwise the headline becomes (ε', δ) with ε' the largest
    :func:`~distpriv.accounting.gaussian_pair_epsilon` over pairs and directions, or
    (ε, δ') with δ' the largest exact δ(ε) when no finite ε' exists; the target becomes
    the "requested" pair.
    """
    eps, dlt = guarantee.epsilon, guarantee.delta
    check = pair_deltas(model, noise_cov, epsilon=eps, screen=dlt)
    assumption = exact_assumption(check, dlt)
    kept = tuple(a for a in guarantee.assumptions if a.name != "exact-profile")
    if check.worst <= dlt:
        return dataclasses.replace(guarantee, assumptions=(*kept, assumption)), check
    eps2 = 0.0
    for i, j in model.pairs:
        ci, cj = model.covariances[i] + noise_cov, model.covariances[j] + noise_cov
        mi, mj = model.means[i], model.means[j]
        eps2 = max(
            eps2,
            gaussian_pair_epsilon(mi, ci, mj, cj, delta=dlt),
            gaussian_pair_epsilon(mj, cj, mi, ci, delta=dlt),
        )
    if math.isfinite(eps2):
        head_eps, head_dlt = eps2, dlt
        note = (
            f"the target ({eps:g}, {dlt:g}) is not met under the exact profile "
            f"({check.describe()}); the verified guarantee is ({eps2:.6g}, {dlt:g})"
        )
    else:
        head_eps, head_dlt = eps, check.worst
        note = (
            f"the target ({eps:g}, {dlt:g}) is not met and no finite epsilon gives delta = "
            f"{dlt:g} (the outputs have different supports); the verified guarantee is "
            f"({eps:g}, {check.worst:.6g})"
        )
    headline = Assumption(
        "exact-profile",
        f"the headline ({head_eps:.6g}, {head_dlt:.6g}) holds for every pair in Psi, both "
        "directions, under the exact privacy profile of the outputs with each theta's own "
        "covariance",
        True,
        note,
    )
    return (
        dataclasses.replace(
            guarantee,
            epsilon=head_eps,
            delta=head_dlt,
            requested_epsilon=eps,
            requested_delta=dlt,
            assumptions=(*kept, headline),
            notes=(*guarantee.notes, note),
        ),
        check,
    )
