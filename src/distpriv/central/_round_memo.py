"""What one cutting-plane round of optimal-g's calibration on the population set leaves to the next.

optimal-g's calibration for the population set (:func:`~distpriv.central.exact_calibration.
_calibrate_robust`) is a cutting-plane loop: each round searches the least scale of every
candidate noise shape on the *active* members of the set, checks the result on every member
of its noise, and adds the members that fail. On data-built models of a hundred statistics
it takes up to eight rounds that add one member each, and each round searched every shape
again on all its members from the papers' scale (two thirds of optimal-g's CPU on the
cumulative-shares model of the calibration benchmark).

Why a round can reuse the last one's scale. Within one loop the active members only grow
(members are added, never dropped) and a shape that does not depend on the members (the
program's noise on the fitted model, its isotropic repair, expm-g's, DauM's and EigM's
shapes of the fitted model) is the same family Σ_Z(s) in every round. δ(ε) of each member
only falls as s grows (adding independent noise is post-processing), so the least scale on
the members of this round is the larger of the least scale on the last round's members
(remembered here) and the least scale on the members added since: only those are searched,
from the remembered scale, and the result is checked strictly on them, as the full search's
result is on every member (:func:`grown_scale`): the earlier members passed that strict check
at the remembered scale, and pass at every larger one. The scale found is the full search's
to the search's accuracy. What is published is checked as before: the noise as sampled,
strictly, on every member of the set for that noise.

Shapes that move with the members (the program solved on the set's members, EigM's shape in
the objective's coordinates, which :func:`~distpriv.central._exact_families._weighted_eigm`
computes on the members) are never reused: their labels are listed by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..accounting.calibration_cache import fingerprint
from ..errors import MechanismNotApplicableError
from ..population.exact import PairCheck, pair_deltas, search_tolerance, smallest_scale
from ..population.member_search import member_moments, moments_model

__all__ = ["RoundMemo", "grown_scale", "member_keys"]


def member_keys(model: Any) -> tuple[str, ...]:
    """One digest per pair of ``model``: its two means and covariances (μᵢ, Σᵢ, μⱼ, Σⱼ)."""
    out = []
    for i, j in model.pairs:
        out.append(
            fingerprint(model.means[i], model.covariances[i], model.means[j], model.covariances[j])
        )
    return tuple(out)


@dataclass
class RoundMemo:
    """The last round's choice and each member-free shape's least scale on its members.

    Attributes
    ----------
    last : (str, float) or None
        The shape chosen in the last round and its scale (where that shape's search starts,
        and which shape is tried first: a best to prune the others against).
    scales : dict
        Shape label → (digest of Σ_Z(1), least scale, digests of the members it was found on).
    failed : dict
        Shape label → digest of the member on which its last pruning check failed (tried
        first at the next: the member that binds for a shape seldom changes).
    """

    last: tuple[str, float] | None = None
    scales: dict[str, tuple[str, float, frozenset[str]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def failed_first(self, label: str, members: tuple[str, ...]) -> list[int]:
        """Where the member that failed ``label``'s last pruning check now is (or [])."""
        key = self.failed.get(label)
        return [k for k, m in enumerate(members) if m == key]

    def prior(
        self, label: str, fam: Callable[[float], np.ndarray], members: tuple[str, ...]
    ) -> tuple[float, list[int]] | None:
        """(least scale on earlier members, indices of the members added since), or None.

        None unless this very family (Σ_Z(1) bit for bit) was searched on members that are
        all among ``members``.
        """
        known = self.scales.get(label)
        if known is None or known[0] != fingerprint(np.asarray(fam(1.0))):
            return None
        _, scale, before = known
        if not before <= set(members):
            return None
        return scale, [k for k, key in enumerate(members) if key not in before]

    def remember(
        self,
        label: str,
        fam: Callable[[float], np.ndarray],
        scale: float,
        members: tuple[str, ...],
    ) -> None:
        """``scale`` is the least of ``fam`` on ``members`` (to the search's accuracy)."""
        self.scales[label] = (fingerprint(np.asarray(fam(1.0))), scale, frozenset(members))


def grown_scale(
    gm: Any,
    fam: Callable[[float], np.ndarray],
    prior: tuple[float, list[int]],
    epsilon: float,
    delta: float,
    name: str,
) -> tuple[float, PairCheck]:
    """Least s with every pair of ``gm`` meeting (ε, δ) at Σ_Z = ``fam(s)``, given ``prior``.

    Parameters
    ----------
    gm : GaussianQueryModel
        The members of this round.
    fam : callable(float) -> ndarray, shape (m, m)
        Non-decreasing in s in the positive semi-definite order.
    prior : (float, list of int)
        The least scale on the other pairs of ``gm`` and the indices of the pairs added
        since (:meth:`RoundMemo.prior`).
    epsilon, delta : float
    name : str
        The mechanism, for messages.

    Returns
    -------
    (float, PairCheck)
        The scale, and the strict check at it (which passes) of the added pairs (of every
        pair when none was added): the others passed it at the prior scale, verified by
        the same strict check, and pass at every larger one.

    Raises
    ------
    MechanismNotApplicableError
        No scale meets the target on the added pairs (then none meets it on ``gm``).
    """
    scale, added = prior
    if not added:  # the members the prior scale was verified on, strictly: the same check
        return scale, pair_deltas(gm, fam(scale), epsilon=epsilon, screen=delta)
    new = moments_model(gm, member_moments(gm, added))
    # As the full search evaluates a scale (pairs certified below δ/2 screened).
    tol = search_tolerance(delta)
    at = pair_deltas(new, fam(scale), epsilon=epsilon, tol=tol, screen=delta / 2).worst
    if at > delta:  # the added members need more: their least scale, from here up
        scale, _ = smallest_scale(
            new, fam, epsilon=epsilon, delta=delta, start=scale, name=name, known={scale: at}
        )
    # The strict check of the added members, stepping up as the full search's end does
    # should the search's accuracy have left the scale a hair short. The earlier members
    # passed the strict check at the prior scale, and a member that passes at a noise
    # passes at every larger one (adding independent noise is post-processing).
    for k in range(60):
        check = pair_deltas(new, fam(scale), epsilon=epsilon, screen=delta)
        if check.worst <= delta:
            return scale, check
        scale *= 1.0 + 1e-6 * 2.0**k
    raise MechanismNotApplicableError(  # pragma: no cover - each part was verified
        f"{name}: the exact calibration could not be verified; use calibration='analytic'"
    )
