"""Directions a Gaussian query model holds constant under every hypothesis.

When the cells of a histogram cover every row, each hypothesis' covariance is
diag(c) − ccᵀ/N: singular along the vector of ones, because the counts sum to the release
size n, which is public. Along such a direction u (Σ_θ u = 0 for every θ) the statistic uᵀF
takes one value per hypothesis; if that value is the same for both hypotheses of every pair
in Ψ, uᵀF reveals nothing about the secret and needs no noise. Splitting F into
(Bᵀ F, Nᵀ F), B an orthonormal basis of the complement of the constant directions N, is an
invertible orthogonal map, so a mechanism that adds noise only inside span(B) is exactly as
private as its restriction (Bᵀ F + Bᵀ Z) to the reduced model N(Bᵀ μ_θ, Bᵀ Σ_θ B), whose
covariances may be positive definite where the full ones are not.

If a direction has zero variance under every hypothesis but the means of a pair differ
along it, the two output distributions live on disjoint affine subspaces (infinite privacy
loss): a mechanism that relies on the model's variance must refuse, naming it.

Both decisions are scale-free and use the exact accountant's tolerances: the null space is
judged on the standardised sum of the covariances (rounding level relative to its largest
eigenvalue), and a mean difference along it on the standardised differences
(:mod:`distpriv.accounting.pair_profile`, whose whitening drops the same directions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MechanismNotApplicableError
from ..guarantees import Assumption
from ..querymodel import GaussianQueryModel

__all__ = ["ConstantDirections", "constant_directions", "structural_assumptions"]

# Eigenvalues of the standardised covariance sum at rounding level, relative to the largest,
# times the dimension: the same null-space rule as the exact accountant's joint whitening.
NULL_RTOL = 64 * np.finfo(float).eps
# A (standardised) mean difference whose part along the null space is above this fraction of
# its norm is a real difference, not rounding (the accountant's rule as well).
NULL_DIFF_RTOL = 1e-10


@dataclass(frozen=True)
class ConstantDirections:
    """The constant directions N of a model and the orthonormal complement B.

    Attributes
    ----------
    null : ndarray, shape (m, k)
        Orthonormal basis (original coordinates) of the directions u with Σ_θ u = 0 for
        every θ; k = 0 when there are none.
    complement : ndarray, shape (m, m − k)
        Orthonormal basis of their orthogonal complement (the range of the covariances).
    values : ndarray, shape (t, k)
        Nᵀ μ_θ per hypothesis: the constant values.
    relative_gap : float
        Largest part of a pair's standardised mean difference along N, relative to its
        norm (0 when exactly equal); at most :data:`NULL_DIFF_RTOL` when N is returned.
    """

    null: np.ndarray
    complement: np.ndarray
    values: np.ndarray
    relative_gap: float

    @property
    def count(self) -> int:
        """k, the number of constant directions."""
        return int(self.null.shape[1])

    def reduce(self, gm: GaussianQueryModel) -> GaussianQueryModel:
        """The model of Bᵀ F: means (t, m − k), covariances (t, m − k, m − k)."""
        b = self.complement
        covs = np.einsum("mi,tmn,nj->tij", b, np.asarray(gm.covariances), b)
        covs = 0.5 * (covs + np.swapaxes(covs, 1, 2))
        return GaussianQueryModel(
            np.asarray(gm.means) @ b,
            covs,
            pairs=gm.pairs,
            labels=gm.labels,
            statistics=[f"b{k}" for k in range(b.shape[1])],
        )

    def describe(self, statistics: tuple[str, ...] | list[str]) -> str:
        """The constant directions in words (the sum of the cells, a statistic, a vector)."""
        parts = []
        for k in range(self.count):
            parts.append(describe_direction(self.null[:, k], statistics))
        return "; ".join(parts)

    def assumption(self, statistics: tuple[str, ...] | list[str]) -> Assumption:
        """The checked assumption a mechanism calibrated in the complement rests on."""
        vals = ", ".join(f"{v:.10g}" for v in self.values[0])
        return Assumption(
            "constant-directions",
            "every direction with zero variance under every hypothesis has the same mean "
            "under both hypotheses of each pair in Psi (e.g. cells that sum to the public "
            "release size): it reveals nothing, so the noise shape is calibrated in its "
            "complement and needs no component along it",
            self.relative_gap <= NULL_DIFF_RTOL,
            f"{self.count} constant direction(s): {self.describe(statistics)} = {vals}; "
            f"largest relative mean difference along them {self.relative_gap:.3g} "
            f"(tolerance {NULL_DIFF_RTOL:g}, judged on standardised statistics)",
        )


def describe_direction(u: np.ndarray, statistics: tuple[str, ...] | list[str]) -> str:
    """A unit direction in words: the sum of the statistics, one statistic, or a vector."""
    big = np.abs(u) > 1e-9 * np.abs(u).max()
    if int(big.sum()) == 1:
        return f"statistic {statistics[int(np.argmax(big))]}"
    if np.allclose(u, u[0], rtol=1e-9, atol=0.0):
        return f"the sum of the {u.size} statistics"
    shown = np.flatnonzero(big)[:6]
    terms = " + ".join(f"{u[k] / np.abs(u[big]).max():.3g}*{statistics[k]}" for k in shown)
    more = " + ..." if big.sum() > shown.size else ""
    return f"the combination {terms}{more}"


def constant_directions(gm: GaussianQueryModel, name: str) -> ConstantDirections:
    """Find the directions constant under every hypothesis, and check their means agree.

    Parameters
    ----------
    gm : GaussianQueryModel
        t hypotheses, m statistics.
    name : str
        The mechanism, for the message.

    Returns
    -------
    ConstantDirections
        k = 0 (``null`` of shape (m, 0), ``complement`` the identity) when the summed
        covariance is non-singular.

    Raises
    ------
    MechanismNotApplicableError
        A direction has zero variance under every hypothesis but a pair's means differ
        along it: the outputs are mutually singular there (infinite privacy loss); the
        message names the direction and the pair.
    """
    covs = np.asarray(gm.covariances, dtype=float)
    m = covs.shape[1]
    total = covs.sum(axis=0)
    var = np.diagonal(total).copy()
    live = var > 0
    inv = np.zeros(m)
    inv[live] = 1.0 / np.sqrt(var[live])
    # Exactly-zero variances (a cell no row can fall in) are null directions e_k as such.
    null_cols = [np.eye(m)[:, k] for k in np.flatnonzero(~live)]
    if np.any(live):
        std = total[np.ix_(live, live)] * np.outer(inv[live], inv[live])
        w, u = np.linalg.eigh(std)
        small = w <= NULL_RTOL * w.size * max(float(w[-1]), 0.0)
        for k in np.flatnonzero(small):
            # Σ (D^(-1/2) u) = 0 in the original coordinates.
            col = np.zeros(m)
            col[live] = u[:, k] * inv[live]
            null_cols.append(col)
    if not null_cols:
        return ConstantDirections(np.zeros((m, 0)), np.eye(m), np.zeros((covs.shape[0], 0)), 0.0)
    null, _ = np.linalg.qr(np.column_stack(null_cols))
    k = null.shape[1]
    gap, worst = _mean_gap(gm, null, inv, live)
    if gap > NULL_DIFF_RTOL:
        a, b = gm.pair_labels[worst]
        raise MechanismNotApplicableError(
            f"{name}: {describe_direction(_worst_direction(gm, null, worst), gm.statistics)} "
            f"has zero variance under every hypothesis, but the means of pair ({a}, {b}) "
            f"differ along it (relative part {gap:.3g} of their standardised difference): "
            "the release would tell the pair apart exactly there (infinite privacy loss), "
            "and the model's variance cannot hide it; use 'expm-g' or 'dirm-g' (noise "
            "along every difference), or check the model"
        )
    full, _ = np.linalg.qr(null, mode="complete")
    complement = full[:, k:]
    values = np.asarray(gm.means) @ null
    return ConstantDirections(null, complement, values, gap)


def _mean_gap(
    gm: GaussianQueryModel, null: np.ndarray, inv: np.ndarray, live: np.ndarray
) -> tuple[float, int]:
    """Largest relative part of a pair's standardised mean difference along the null space.

    The differences are standardised by the summed covariance's diagonal (statistics with
    none are compared in their own units: any non-zero difference there is real).
    """
    diffs = np.asarray(gm.mean_differences, dtype=float)
    scale = np.where(live, inv, 1.0)
    std_d = diffs * scale
    # The null space in standardised coordinates: D^(1/2) N (then orthonormalised).
    std_null, _ = np.linalg.qr(null / scale[:, None])
    part = np.linalg.norm(std_d @ std_null, axis=1)
    norm = np.linalg.norm(std_d, axis=1)
    rel = np.divide(part, norm, out=np.zeros_like(part), where=norm > 0)
    worst = int(np.argmax(rel)) if rel.size else 0
    return (float(rel[worst]) if rel.size else 0.0), worst


def _worst_direction(gm: GaussianQueryModel, null: np.ndarray, pair: int) -> np.ndarray:
    """The constant direction along which pair ``pair``'s means differ most."""
    d = np.asarray(gm.mean_differences, dtype=float)[pair]
    u = null @ (null.T @ d)
    n = float(np.linalg.norm(u))
    return u / n if n > 0 else null[:, 0]


def structural_assumptions(paper: Any) -> tuple[Assumption, ...]:
    """The constant-directions assumption of a mechanism calibrated the papers' way, if any.

    An exact calibration replaces the papers' assumptions by the exact check, but the noise
    shape it scales was found in the complement of the constant directions: that checked
    assumption stays in the guarantee (``paper``: a CalibratedMechanism or None).
    """
    if paper is None:
        return ()
    return tuple(a for a in paper.guarantee.assumptions if a.name == "constant-directions")
