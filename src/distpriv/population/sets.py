"""The joint population set: one confidence statement per pair, in the
quantities its privacy loss depends on, with the worst member found by optimisation.

:mod:`distpriv.population.confidence`'s ``"box"`` set spends β/2 on the mean gaps and β/2 on a
Bonferroni box over strata × statistics of the variances (z = Φ⁻¹(1 − β/(4 S m)) ≈ 3.0 for
two strata and five statistics), and takes the worst member among the 2^S corners where
every statistic of a stratum is at its low or its high end. What the guarantee needs is
less: for the noise Σ_Z being checked, one *scalar* per pair, h = δ(ε) of the pair's output
laws N(μᵢ, Σᵢ + Σ_Z), N(μⱼ, Σⱼ + Σ_Z) on the population, must not exceed what the set's
worst member gives.

The set ("joint"). Write the population's parameters of a pair as the fitted ones plus
errors: the mean gap Δ = Δ̂ − e, e ≈ N(0, V) (V = Σ_s (w_is − w_js)² C_s / N_s, the
central limit theorem, independent strata), and each stratum's variance of each statistic
σ²_sl = σ̂²_sl · exp(−η_sl) with η_sl ≈ N(0, τ²_sl), τ²_sl = (κ_l − 1)/N_s (the delta method
on log σ̂², κ_l the statistic's largest kurtosis over the strata of its attribute, as for the
box). The correlations between the η's and between η and e (third and fourth cross
moments) are not estimated. For one pair at level z, with M = ((Σᵢ + Σⱼ)/2 + Σ_Z)^(−1/2)
the output metric and B = M V^(1/2), the set is the product of

* the *whitened gap's distance*: {Δ : ‖MΔ‖ ≤ ‖MΔ̂‖ + z‖B‖₂} (the gap's distance along its
  own direction u moves by uᵀB ξ, ξ ~ N(0, I), whose sd ‖Bᵀu‖ is at most ‖B‖₂ whatever the
  unknown u is; the member sits on the boundary, along the farthest point of the error
  ellipsoid, :func:`~distpriv.population._stack._worst_shift`), and
* the *covariance ratio*, through every stratum's variance of every statistic:
  {η : |η_sl| ≤ z τ_sl for every stratum s the pair weighs and statistic l}; the member's
  covariances are Σ̂ + Σ_s w_s (Λ_s Ĉ_s Λ_s − Ĉ_s), Λ_s = diag exp(η_s / 2) (correlations
  kept, as in the box). V is taken at the member's own covariances.

Why coverage ≥ 1 − β (asymptotically, for a noise fixed in advance). Linearise the pair's
δ, h, at the fitted parameters in the gap's distance d = ‖MΔ‖ and η: h(population) −
h(fit) ≈ −(a·(uᵀBξ) + Σ b_sl η_sl), a scalar, asymptotically normal with sd at most
|a|‖B‖₂ + Σ |b_sl| τ_sl whatever the unknown correlations are (the sd of a sum is at most
the sum of the sds). The sup of the linearised h over the product set is h(fit) +
z (|a|‖B‖₂ + Σ |b_sl| τ_sl) (the sup of a linear function over a product is the sum of the
sups: the distance's at the boundary, the box's at the corner of the signs of b). So the
population's h exceeds the worst member's only if a standard normal exceeds z:
probability ≤ Φ(−z). With P pairs, z = Φ⁻¹(1 − β/P) (one-sided, Bonferroni over the
pairs), so every pair holds at once with probability ≥ 1 − β. For the calibrated noise, the
test inversion of :mod:`distpriv.population.confidence` carries this over from the population's
least scale of a fixed shape (proven for fixed shapes; measured for fitted ones, as for the
box).

Compared with the box: one z for the gap and the variances instead of Φ⁻¹(1 − β/4) and
Φ⁻¹(1 − β/(4 S m)) (1.64 against 1.96 and 3.02 for one pair, two strata, five statistics);
and each statistic's variance moves on its own, so a kurtotic column moves only as far as
its own τ and only in the direction that raises δ (the box moves every statistic of a
stratum together, at a Bonferroni z).

The worst member is found by optimisation, for the noise being checked and at the ε being
calibrated: a coordinate search on the variance box — each η_sl set to the end of its
interval that gives the larger δ on its own, then single flips while any raises δ,
starting from the best of that corner and the box set's stratum corners — with the gap on
its boundary at every point. The objective is the exact accountant
(:func:`~distpriv.accounting.pair_profile.pair_profiles_unchecked`, both directions).

The box is the default, the joint set is opt-in (``population_set("joint")``). Made the
default (branch jointdefault) every test passed, after a real
fix (the ledger's composed ε on the members worst at that ε) and tests rewritten where
they held only on the box's wide corners; but the locked suite took about 20 minutes on
two idle cores against its 10-minute budget (the joint set's member searches run for every
calibration with a population layer), so the switch waits for a cheaper search. Under
``"joint"``, above
:data:`JOINT_MAX_PAIRS` pairs (range secrets: hundreds of pairs, tens of accountant calls
each per noise), above :data:`JOINT_MAX_COORDS` variances per pair (the search asks about
three exact profiles per variance, each O(m) per quadrature node) and for bootstrap
uncertainties, the box is used.

Cost: the members of every point a step of the search needs are built at once
(batch axis first, :meth:`_Pair.members`); the exact profiles are then asked one member at a
time, only where the search compares them, and remembered per point. The certified Rényi
bounds of :mod:`distpriv.accounting.pair_screen` were measured as pruning certificates and
not used: on these members they are about 10× the exact δ (0.0016 against 0.00016, 0.019
against 0.00055 at m = 34), while the comparisons of the search are between members whose
δ differ by a few per cent, so no member would be pruned. Within one calibration
(:func:`~distpriv.central.exact_calibration.calibrate_exact`) the members of each noise are
remembered, and the last round checks the noise as published, so the strict check does not
search again.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from scipy.special import ndtri

from ..accounting.pair_profile import pair_profiles_unchecked
from ..errors import ParameterError
from ..moment_uncertainty import MomentUncertainty
from ..querymodel import GaussianQueryModel
from ._corr import corr_signs
from ._stack import (
    _worst_shift_stack,
    clip_psd_in_units,
    inv_sqrt_in_units,
    sqrt_in_units,
    unit_coordinates,
)
from ._tight import quantile_shift_stack

__all__: list[str] = []  # helpers of population.confidence

# The population sets: "joint" (this module: one scalar statement per
# pair, the worst member by optimisation; opt-in) and "box" (population/confidence.py's
# docstring: the Bonferroni box and its corners; the default, and used where the joint
# set's search would be too costly: set_method).
# "tight": the joint set with the gap's distance at the quantile of its bootstrap law
# (population/_tight.py; opt-in).
SET_METHODS = ("joint", "box", "tight")
# The public name: distpriv.population_set, [mechanism] population_set.
POPULATION_SETS = SET_METHODS
_SET: contextvars.ContextVar[str] = contextvars.ContextVar("distpriv_population_set", default="box")
# The joint set's search costs tens of accountant calls per pair and noise: above this many
# pairs (range secrets: hundreds) the box set is used (its members are vectorised).
JOINT_MAX_PAIRS = 12
# The search asks the exact accountant of about 3 members per variance of a pair (strata it
# weighs × statistics), each O(m) per quadrature node: above this many variances per pair
# (e.g. more than 12 statistics over two strata) the box set is used.
JOINT_MAX_COORDS = 24


@contextmanager
def population_set(method: str) -> Iterator[None]:
    """Calibrate, compose and report with the population set ``method`` (one of
    :data:`POPULATION_SETS`) inside the ``with`` block.

    ``"box"`` (the default: the Bonferroni box of :mod:`distpriv.population.confidence`),
    ``"joint"`` (this module) or ``"tight"`` (the joint set with the gap at the quantile
    of the sampling law of δ's own distance and correlated variances,
    :mod:`distpriv.population._direction`, :mod:`distpriv.population._tight`,
    :mod:`distpriv.population._corr`: the least noise at the same stated confidence;
    measured coverage for noise shaped from the table 95.0 % on Adult and 99.0 %
    on RAND HIE against the stated 95 %; about ten times the calibration time of the box).
    Public as ``distpriv.population_set`` (``with distpriv.population_set("tight"): ...``) and, for
    the commands, ``[mechanism] population_set`` (docs/guarantees.md, "Choosing the
    set"). Every calibration, ``auto``'s comparison, the price report and the ledger's
    composition in the block use the set, and each guarantee's population premise names
    it.

    Raises
    ------
    ParameterError
        ``method`` is not one of :data:`POPULATION_SETS`.
    """
    if method not in SET_METHODS:
        raise ParameterError(
            f"population_set must be one of {', '.join(SET_METHODS)}, got {method!r}"
        )
    token = _SET.set(method)
    try:
        yield
    finally:
        _SET.reset(token)


def selected_set() -> str:
    """The population set selected by :func:`population_set` (``"box"`` by default)."""
    return _SET.get()


def set_method(model: GaussianQueryModel) -> str:
    """The set used for ``model``: the selected one, except that a model with more than
    :data:`JOINT_MAX_PAIRS` pairs, or more than :data:`JOINT_MAX_COORDS` variances per pair,
    or a bootstrap uncertainty, uses the box."""
    if _SET.get() not in ("joint", "tight") or len(model.pairs) > JOINT_MAX_PAIRS:
        return "box"
    unc = model.uncertainty
    if isinstance(unc, MomentUncertainty):
        w = np.asarray(unc.weights) > 0
        strata = max((int(np.sum(w[i] | w[j])) for i, j in model.pairs), default=0)
        if strata * unc.dim > JOINT_MAX_COORDS:
            return "box"
    return "joint"


# Accuracy of the accountant inside the search (the members are then checked strictly by
# the calibration); relative to the largest δ met.
_SEARCH_TOL = 1e-8
# Passes of single flips after the sign corner (each pass is one δ per coordinate).
_FLIP_PASSES = 2
# Members built per batch: at most this many bytes of covariances.
_BATCH_BYTES = 64 * 2**20


def joint_z(beta: float, n_pairs: int) -> float:
    """Φ⁻¹(1 − β/P): the one-sided level of each pair's scalar statement (Bonferroni)."""
    return float(ndtri(1.0 - beta / max(n_pairs, 1)))


def _clip_psd(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    return (v * np.clip(w, 0.0, None)) @ v.T


class _Pair:
    """One pair of Ψ: its members as a function of the variance point η (the gap at its
    farthest point for that η), and the δ the search maximises.

    Members are built a batch at a time (every trial point of a step of the search at
    once, batch axis first: :meth:`members`), with the arithmetic of one member on stacks;
    δ is then asked of the accountant one member at a time, only where the search needs
    it, and remembered per point."""

    def __init__(
        self,
        model: GaussianQueryModel,
        unc: MomentUncertainty,
        i: int,
        j: int,
        tau: np.ndarray,
        z: float,
        noise: np.ndarray,
        epsilon: float,
        quantile_gap: bool = False,
    ) -> None:
        self.model, self.unc, self.i, self.j = model, unc, i, j
        # The tight set (population/_tight.py): the gap at the quantile of its distance.
        self.quantile_gap = quantile_gap
        self.support = np.flatnonzero((unc.weights[i] > 0) | (unc.weights[j] > 0))
        self.tau, self.z, self.noise, self.epsilon = tau, z, noise, epsilon
        sizes = np.asarray(unc.stratum_sizes, dtype=float)
        sup = self.support
        # What does not depend on the point: the support's row covariances, weights, the
        # half log-steps z·τ/2 and the gap's error weights (w_i − w_j)²/N.
        self.c_hat = unc.row_covariances[sup]
        self.w_i, self.w_j = unc.weights[i, sup], unc.weights[j, sup]
        self.half = 0.5 * z * tau[sup]
        self.err_w = (unc.weights[i, sup] - unc.weights[j, sup]) ** 2 / sizes[sup]
        self.gap = model.means[i] - model.means[j]
        self.r = unit_coordinates(model.covariances, model.means)  # decompositions at unit spread
        # The coordinates that move (τ > 0), in the search's order (stratum, statistic).
        self.coords = [
            (r, c) for r in range(sup.size) for c in range(unc.dim) if self.half[r, c] != 0.0
        ]
        self.seen: dict[bytes, float] = {}
        self.moments: dict[bytes, tuple[np.ndarray, ...]] = {}
        # The tight set's gap, once its δ-distance statement has been made
        # (population/_direction.py, set by _corr.corr_signs): the same shift at
        # every point of the variances; None: the distance statement, point by point.
        self.fixed_shift: np.ndarray | None = None

    @staticmethod
    def key(signs: np.ndarray) -> bytes:
        # Float bytes: the tight set's points are fractions of the box (population/_corr.py).
        return np.asarray(signs, dtype=float).tobytes()

    def members(self, signs: np.ndarray) -> tuple[np.ndarray, ...]:
        """(mean_i, cov_i, mean_j, cov_j) at η = signs · z τ for a batch of points.

        Parameters
        ----------
        signs : ndarray, shape (B, n_support, m)
            Each point's end of every interval (−1, 0 or +1).

        Returns
        -------
        tuple of ndarray
            Shapes (B, m), (B, m, m), (B, m), (B, m, m): exactly :meth:`member`'s arithmetic
            (the same operations in the same order), one member per point.
        """
        model, noise = self.model, self.noise
        lam = np.exp(self.half[None] * signs)  # (B, S', m)
        scaled = lam[..., :, None] * self.c_hat[None] * lam[..., None, :]  # (B, S', m, m)
        b = signs.shape[0]
        cov_i = np.broadcast_to(model.covariances[self.i], (b, *noise.shape)).copy()
        cov_j = np.broadcast_to(model.covariances[self.j], (b, *noise.shape)).copy()
        for r in range(self.support.size):
            moved = scaled[:, r] - self.c_hat[r]
            cov_i += self.w_i[r] * moved
            cov_j += self.w_j[r] * moved
        # The gap's error law at each member (its own covariances), radius z.
        spread = sqrt_in_units(np.einsum("s,bsxy->bxy", self.err_w, scaled), self.r)
        metric = inv_sqrt_in_units((cov_i + cov_j) / 2 + noise, self.r)
        gaps = np.broadcast_to(self.gap, (b, self.gap.size))
        if self.quantile_gap and self.fixed_shift is not None:
            shift = np.broadcast_to(self.fixed_shift, gaps.shape)
        elif self.quantile_gap:
            shift = quantile_shift_stack(gaps, metric, spread, self.z)
        else:
            shift = _worst_shift_stack(gaps, metric, spread, self.z)
        mean_i = model.means[self.i] + shift
        mean_j = np.broadcast_to(model.means[self.j], mean_i.shape)
        return mean_i, clip_psd_in_units(cov_i, self.r), mean_j, clip_psd_in_units(cov_j, self.r)

    def prepare(self, points: list[np.ndarray]) -> None:
        """Build the members of the points not met yet, in one batch."""
        todo, keys = [], set()
        for p in points:
            k = self.key(p)
            if k not in self.moments and k not in keys:
                todo.append(p)
                keys.add(k)
        # Batches of at most _BATCH_BYTES of covariances (a stack of m × m matrices per
        # stratum and point): large m builds in several batches.
        per_point = 8 * (self.support.size + 6) * self.unc.dim**2
        size = max(1, _BATCH_BYTES // per_point)
        for lo in range(0, len(todo), size):
            chunk = todo[lo : lo + size]
            mi, ci, mj, cj = self.members(np.stack(chunk))
            for t, p in enumerate(chunk):
                self.moments[self.key(p)] = (mi[t], ci[t], mj[t], cj[t])

    def delta(self, signs: np.ndarray) -> float:
        k = self.key(signs)
        if k not in self.seen:
            if k not in self.moments:
                self.prepare([signs])
            # Its δ is remembered, its moments are not (memory at large m): the worst
            # member's are rebuilt at the end.
            mi, ci, mj, cj = self.moments.pop(k)
            fwd, bwd = pair_profiles_unchecked(
                mi, ci + self.noise, mj, cj + self.noise, self.epsilon, _SEARCH_TOL
            )
            self.seen[k] = max(fwd.delta, bwd.delta)
        return self.seen[k]

    def worst(self) -> tuple[np.ndarray, ...]:
        """The member of largest δ the coordinate search finds (the tight set: the member
        of its correlated variance statement, :func:`~distpriv.population._corr.
        corr_signs`)."""
        if self.quantile_gap:
            mi, ci, mj, cj = self.members(corr_signs(self)[None])
            return mi[0], ci[0], mj[0], cj[0]
        n_sup, m = self.support.size, self.unc.dim
        zero = np.zeros((n_sup, m))
        # Every point the sign step and the starts need, built at once.
        ups, downs = [], []
        for r, col in self.coords:
            up, down = zero.copy(), zero.copy()
            up[r, col], down[r, col] = 1.0, -1.0
            ups.append(up)
            downs.append(down)
        corners = [
            np.array([[1.0 if (c >> r) & 1 else -1.0] * m for r in range(n_sup)])
            for c in range(2**n_sup)
        ]  # the box set's stratum corners
        self.prepare([zero, *[x for pair in zip(ups, downs, strict=True) for x in pair], *corners])
        base = self.delta(zero)
        signs = np.zeros((n_sup, m))
        for (r, col), up, down in zip(self.coords, ups, downs, strict=True):
            du, dd = self.delta(up), self.delta(down)
            # Ties (δ flat here): the high end, which widens the gap's ellipsoid.
            signs[r, col] = 1.0 if du >= dd else -1.0
        starts = [signs, *corners]
        self.prepare(starts)
        best = max(starts, key=self.delta).copy()
        for _ in range(_FLIP_PASSES):
            moved = False
            # The pass's trials from the current best, built at once (rebuilt from the
            # next coordinate on whenever a flip is kept: the same trials, in the same
            # order, as one at a time).
            pending = True
            for t, (r, col) in enumerate(self.coords):
                if pending:
                    trials = []
                    for r2, c2 in self.coords[t:]:
                        trial = best.copy()
                        trial[r2, c2] = -trial[r2, c2]
                        trials.append(trial)
                    self.prepare(trials)
                    pending = False
                trial = best.copy()
                trial[r, col] = -trial[r, col]
                if self.delta(trial) > self.delta(best):
                    best, moved, pending = trial, True, True
            if not moved:
                break
        if self.delta(best) < base:  # pragma: no cover - the corners include a larger one
            best = zero
        mi, ci, mj, cj = self.members(best[None])
        return mi[0], ci[0], mj[0], cj[0]


def joint_members(
    model: GaussianQueryModel,
    kurtosis: np.ndarray,
    *,
    beta: float,
    noise_cov: np.ndarray,
    epsilon: float,
) -> GaussianQueryModel:
    """The worst member of the joint set of every pair of Ψ for ``noise_cov``.

    Parameters
    ----------
    model : GaussianQueryModel
        With a :class:`~distpriv.moment_uncertainty.MomentUncertainty`.
    kurtosis : ndarray, shape (S, m)
        Each stratum's kurtosis of each statistic as the set uses it (the largest over the
        strata of the attribute, :func:`distpriv.population.confidence.confidence_set`).
    beta : float
    noise_cov : ndarray, shape (m, m)
    epsilon : float
        The ε at which δ is maximised.

    Returns
    -------
    GaussianQueryModel
        One member (two hypotheses) per pair of Ψ, in pair order.
    """
    unc = model.uncertainty
    if not isinstance(unc, MomentUncertainty):  # pragma: no cover - callers check
        raise ValueError("model has no moment uncertainty")
    noise = (noise_cov + noise_cov.T) / 2
    sizes = np.asarray(unc.stratum_sizes, dtype=float)[:, None]
    tau = np.sqrt(np.clip(kurtosis - 1.0, 0.0, None) / sizes)
    z = joint_z(beta, len(model.pairs))
    tight = _SET.get() == "tight"
    means, covs, labels = [], [], []
    for i, j in model.pairs:
        mi, ci, mj, cj = _Pair(model, unc, i, j, tau, z, noise, epsilon, tight).worst()
        means += [mi, mj]
        covs += [ci, cj]
        li, lj = str(model.labels[i]), str(model.labels[j])
        labels += [f"{li}[joint; gap+]", f"{lj}[joint]"]
    k = len(model.pairs)
    return GaussianQueryModel(
        np.stack(means),
        np.stack(covs),
        [(2 * t, 2 * t + 1) for t in range(k)],
        labels=[f"#{t}:{lab}" for t, lab in enumerate(labels)],
        statistics=model.statistics,
        fitted=model.fitted,
    )


def joint_corners(
    model: GaussianQueryModel,
    kurtosis: np.ndarray,
    *,
    beta: float,
    noise_cov: np.ndarray,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Members of the joint set at the corners of its variance box where every statistic
    of a stratum is at the same end (2^S' per pair, S' the strata the pair weighs), with
    the gap on its boundary for ``noise_cov``: no accountant call.

    They are members of the set like the worst one; optimal-g's program is solved against
    them as well as against the worst members (cutting planes), so that
    its noise covers the directions in which the set's members move, not only the one
    member of the noise last checked (:func:`~distpriv.central.exact_calibration.
    _calibrate_robust`).

    Returns
    -------
    list of tuple (mean_i, cov_i, mean_j, cov_j)
        In pair order, the corners of each pair in the order of the box set's corners.
    """
    unc = model.uncertainty
    if not isinstance(unc, MomentUncertainty):  # pragma: no cover - callers check
        raise ValueError("model has no moment uncertainty")
    noise = (noise_cov + noise_cov.T) / 2
    sizes = np.asarray(unc.stratum_sizes, dtype=float)[:, None]
    tau = np.sqrt(np.clip(kurtosis - 1.0, 0.0, None) / sizes)
    z = joint_z(beta, len(model.pairs))
    tight = _SET.get() == "tight"
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for i, j in model.pairs:
        pair = _Pair(model, unc, i, j, tau, z, noise, 1.0, tight)
        n_sup, m = pair.support.size, unc.dim
        corners = np.array(
            [[[1.0 if (c >> r) & 1 else -1.0] * m for r in range(n_sup)] for c in range(2**n_sup)]
        )
        if tight:
            # The tight set's statement is an ellipsoid-like set in the S'·m log-variances
            # (population/_corr.py): its corners at the radius of a point of it whose
            # coordinates are all equal.
            corners = corners / np.sqrt(n_sup * m)
        mi, ci, mj, cj = pair.members(corners)
        out += [(mi[t], ci[t], mj[t], cj[t]) for t in range(corners.shape[0])]
    return out
