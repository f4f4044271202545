"""The joint population set (issue 25 item 1): one confidence statement per pair, in the
quantities its privacy loss depends on, with the worst member found by optimisation.

:mod:`distpriv.central.robust`'s ``"box"`` set spends β/2 on the mean gaps and β/2 on a
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
  ellipsoid, :func:`~distpriv.central._robust_stack._worst_shift`), and
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
test inversion of :mod:`distpriv.central.robust` carries this over from the population's
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

Above :data:`JOINT_MAX_PAIRS` pairs (range secrets: hundreds of pairs, tens of accountant
calls each per noise) and for bootstrap uncertainties, the box is used.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from scipy.special import ndtri

from ..accounting.pair_profile import pair_profiles_unchecked
from ..errors import ParameterError
from ..querymodel import GaussianQueryModel, MomentUncertainty
from ._robust_stack import _inv_sqrt, _sqrt_psd, _worst_shift

__all__: list[str] = []  # helpers of central.robust

# The population sets (issue 25 item 1): "joint" (central/_robust_joint.py: one scalar
# statement per pair, the worst member by optimisation) and "box" (this module's
# docstring: the Bonferroni box and its corners). The box stays the default: the joint
# set's search (tens of exact accountant calls per pair and noise) made calibrations 2-14x
# slower, against the calibration-time target of the same issue; it is opt-in until its
# search is cheaper.
SET_METHODS = ("joint", "box")
_SET: contextvars.ContextVar[str] = contextvars.ContextVar("distpriv_population_set", default="box")
# The joint set's search costs tens of accountant calls per pair and noise: above this many
# pairs (range secrets: hundreds) the box set is used (its members are vectorised).
JOINT_MAX_PAIRS = 12


@contextmanager
def population_set(method: str) -> Iterator[None]:
    """Calibrate with the population set ``method`` (one of :data:`SET_METHODS`) inside
    the ``with`` block: ``"box"`` (default) or ``"joint"`` (tighter, slower to calibrate:
    ``with distpriv.central.robust.population_set("joint"): ...``,
    ``benchmarks/bench_price.py --set joint``)."""
    if method not in SET_METHODS:
        raise ParameterError(f"population set must be one of {SET_METHODS}, got {method!r}")
    token = _SET.set(method)
    try:
        yield
    finally:
        _SET.reset(token)


def set_method(model: GaussianQueryModel) -> str:
    """The set used for ``model``: the selected one, except that a model with more than
    :data:`JOINT_MAX_PAIRS` pairs, or a bootstrap uncertainty, uses the box."""
    if _SET.get() == "joint" and len(model.pairs) <= JOINT_MAX_PAIRS:
        return "joint"
    return "box"


# Accuracy of the accountant inside the search (the members are then checked strictly by
# the calibration); relative to the largest δ met.
_SEARCH_TOL = 1e-8
# Passes of single flips after the sign corner (each pass is one δ per coordinate).
_FLIP_PASSES = 2


def joint_z(beta: float, n_pairs: int) -> float:
    """Φ⁻¹(1 − β/P): the one-sided level of each pair's scalar statement (Bonferroni)."""
    return float(ndtri(1.0 - beta / max(n_pairs, 1)))


def _clip_psd(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    return (v * np.clip(w, 0.0, None)) @ v.T


class _Pair:
    """One pair of Ψ: its members as a function of the variance point η (the gap at its
    farthest point for that η), and the δ the search maximises."""

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
    ) -> None:
        self.model, self.unc, self.i, self.j = model, unc, i, j
        self.support = np.flatnonzero((unc.weights[i] > 0) | (unc.weights[j] > 0))
        self.tau, self.z, self.noise, self.epsilon = tau, z, noise, epsilon
        self.sizes = np.asarray(unc.stratum_sizes, dtype=float)
        self.seen: dict[bytes, tuple[float, tuple[np.ndarray, ...]]] = {}

    def member(self, signs: np.ndarray) -> tuple[np.ndarray, ...]:
        """(mean_i, cov_i, mean_j, cov_j) at η = signs · z τ on the support's strata."""
        unc, model, i, j = self.unc, self.model, self.i, self.j
        c_hat = unc.row_covariances
        cov_i, cov_j = model.covariances[i].copy(), model.covariances[j].copy()
        scaled = c_hat.copy()
        for r, s in enumerate(self.support):
            lam = np.exp(0.5 * self.z * self.tau[s] * signs[r])
            scaled[s] = lam[:, None] * c_hat[s] * lam[None, :]
            cov_i += unc.weights[i, s] * (scaled[s] - c_hat[s])
            cov_j += unc.weights[j, s] * (scaled[s] - c_hat[s])
        # The gap's error law at this member (its own covariances), radius z.
        dw = unc.weights[i] - unc.weights[j]
        spread = _sqrt_psd(np.einsum("s,sab->ab", dw**2 / self.sizes, scaled))
        metric = _inv_sqrt((cov_i + cov_j) / 2 + self.noise)
        gap = model.means[i] - model.means[j]
        shift = _worst_shift(gap, metric, spread, self.z)
        return model.means[i] + shift, _clip_psd(cov_i), model.means[j], _clip_psd(cov_j)

    def delta(self, signs: np.ndarray) -> float:
        key = signs.astype(np.int8).tobytes()
        if key not in self.seen:
            mi, ci, mj, cj = self.member(signs)
            fwd, bwd = pair_profiles_unchecked(
                mi, ci + self.noise, mj, cj + self.noise, self.epsilon, _SEARCH_TOL
            )
            self.seen[key] = (max(fwd.delta, bwd.delta), (mi, ci, mj, cj))
        return self.seen[key][0]

    def worst(self) -> tuple[np.ndarray, ...]:
        """The member of largest δ the coordinate search finds."""
        n_sup, m = self.support.size, self.unc.dim
        zero = np.zeros((n_sup, m))
        base = self.delta(zero)
        signs = np.zeros((n_sup, m))
        for r in range(n_sup):
            for col in range(m):
                if self.tau[self.support[r], col] == 0.0:
                    continue
                up, down = zero.copy(), zero.copy()
                up[r, col], down[r, col] = 1.0, -1.0
                du, dd = self.delta(up), self.delta(down)
                # Ties (δ flat here): the high end, which widens the gap's ellipsoid.
                signs[r, col] = 1.0 if du >= dd else -1.0
        starts = [signs]
        for c in range(2**n_sup):  # the box set's stratum corners
            starts.append(np.array([[1.0 if (c >> r) & 1 else -1.0] * m for r in range(n_sup)]))
        best = max(starts, key=self.delta).copy()
        for _ in range(_FLIP_PASSES):
            moved = False
            for r in range(n_sup):
                for col in range(m):
                    if self.tau[self.support[r], col] == 0.0:
                        continue
                    trial = best.copy()
                    trial[r, col] = -trial[r, col]
                    if self.delta(trial) > self.delta(best):
                        best, moved = trial, True
            if not moved:
                break
        if self.delta(best) < base:  # pragma: no cover - the corners include a larger one
            best = zero
        return self.seen[best.astype(np.int8).tobytes()][1]


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
        With a :class:`~distpriv.querymodel.MomentUncertainty`.
    kurtosis : ndarray, shape (S, m)
        Each stratum's kurtosis of each statistic as the set uses it (the largest over the
        strata of the attribute, :func:`distpriv.central.robust.confidence_set`).
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
    means, covs, labels = [], [], []
    for i, j in model.pairs:
        mi, ci, mj, cj = _Pair(model, unc, i, j, tau, z, noise, epsilon).worst()
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
