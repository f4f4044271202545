"""``auto``'s comparison as the reports read it: each mechanism's row and the choice.

:func:`~distpriv.pipeline.stages.calibrate.choose_mechanism` calibrates every candidate and
returns an :class:`AutoChoice`; the release report, the HTML page and the price table read
its rows (:meth:`AutoChoice.public`), with the price of full-rank noise against the
rank-one optimum. These are the results; how they are computed is in
:mod:`.calibrate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...central import CalibratedMechanism
from ...central.objective import CRITERIA, DEFAULT_OBJECTIVE

__all__ = ["AutoChoice", "Candidate"]


@dataclass(frozen=True)
class Candidate:
    """One mechanism calibrated at the requested (ε, δ), or why it could not be."""

    #: Registry name.
    mechanism: str
    #: Expected (weighted) squared error E[Zᵀ W Z]; ``nan`` when not calibrated.
    mse: float
    #: The guarantee holds on the model and meets the request.
    verified: bool
    #: The guarantee's headline (``nan`` when not calibrated).
    epsilon: float
    delta: float
    #: Why it is not a candidate (empty when it is).
    reason: str
    calibrated: CalibratedMechanism | None = field(default=None, repr=False, compare=False)
    # Dimension of the noise's range, and whether only partial noise kept it from verifying
    # (the rank-one optimum that the floored mechanisms are priced against).
    noise_rank: int | None = None
    partial_noise: bool = False
    # Not calibrated because it provably cannot be chosen (central/auto_pruning.py), and
    # the least E[Zᵀ W Z] its calibration could have (its error is more than this), when the
    # certificate gives one.
    pruned: bool = False
    mse_above: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row of the public report's ``choice`` table (JSON-safe)."""

        def safe(x: float | None) -> float | None:
            return x if x is not None and math.isfinite(x) else None

        return {
            "mechanism": self.mechanism,
            "mse": safe(self.mse),
            "verified": self.verified,
            "epsilon": safe(self.epsilon),
            "delta": safe(self.delta),
            "reason": self.reason,
            "noise_rank": self.noise_rank,
            "calibrated": self.calibrated is not None,
            "pruned": self.pruned,
            "mse_above": safe(self.mse_above),
        }


@dataclass(frozen=True)
class AutoChoice:
    """The chosen mechanism and the comparison that led to it."""

    #: The chosen, calibrated mechanism.
    mechanism: CalibratedMechanism
    #: Every mechanism considered, in registry order.
    candidates: tuple[Candidate, ...]
    #: The request.
    epsilon: float
    delta: float
    #: Diagonal of W in E[Zᵀ W Z] (``None``: W = I).
    weights: tuple[float, ...] | None = None
    #: What W is: ``"relative"`` (1/sampling variance), ``"l2"`` (I) or
    #: ``"declared weights"``.
    objective: str = DEFAULT_OBJECTIVE

    @property
    def pruned(self) -> tuple[str, ...]:
        """Mechanisms not calibrated because they provably cannot be chosen (``prune``)."""
        return tuple(c.mechanism for c in self.candidates if c.pruned)

    @property
    def name(self) -> str:
        """Registry name of the chosen mechanism."""
        return self.mechanism.name

    @property
    def rank_one_optimum(self) -> float | None:
        """Least error among mechanisms that verify but leave directions uncovered (or None).

        The price of full-rank noise is measured against it: the ``vs_rank_one``
        column of :meth:`rows`. ``None`` as well when the mechanisms of partial noise were
        not calibrated (pruned: they cannot be chosen without ``allow_partial_noise``);
        ``choose_mechanism(..., prune=False)`` calibrates them.
        """
        m = self.mechanism.dim
        errs = [
            c.mse
            for c in self.candidates
            if c.noise_rank is not None
            and c.noise_rank < m
            and (c.verified or c.partial_noise)
            and math.isfinite(c.mse)
        ]
        return min(errs) if errs else None

    def public(self) -> dict[str, Any]:
        """The comparison behind the choice as a release report shows it (CLI and library
        alike): the candidates' rows, the weights and the objective they were compared by."""
        return {
            "choice": self.rows(),
            "choice_weights": None if self.weights is None else list(self.weights),
            "choice_objective": self.objective,
        }

    def rows(self) -> list[dict[str, Any]]:
        """The comparison table (the public report's ``choice``), with ``vs_rank_one``."""
        ref = self.rank_one_optimum
        out = []
        for c in self.candidates:
            row = c.to_dict()
            ok = ref is not None and ref > 0 and math.isfinite(c.mse)
            row["vs_rank_one"] = c.mse / ref if ok and ref is not None else None
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: the chosen name, the request, the weights and the table."""
        return {
            "chosen": self.name,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "weights": None if self.weights is None else list(self.weights),
            "objective": self.objective,
            "criterion": "least expected squared error E[Z^T W Z] among verified mechanisms"
            + CRITERIA[self.objective],
            "rank_one_optimum": self.rank_one_optimum,
            "pruned": list(self.pruned),
            "rows": self.rows(),
        }
