"""Frozen result types: assumptions, privacy guarantees and releases.

A release always carries its guarantee: ε, δ, the pairs Ψ, the mechanism and theorem, the
calibration, and every assumption the theorem needs with the outcome of checking it on the
query model (docs/architecture.md §3, "Honest guarantees").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .util.records import field_values

__all__ = ["Assumption", "PrivacyGuarantee", "Release", "to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """Convert numpy arrays/scalars and tuples to JSON-safe Python values.

    Non-finite floats become strings ("inf", "-inf", "nan") because JSON has no such
    numbers.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return obj


@dataclass(frozen=True)
class Assumption:
    """One assumption of the theorem a mechanism implements, checked on the model."""

    #: Short identifier, e.g. ``"equal-covariance"``.
    name: str
    #: What the theorem assumes, in words.
    statement: str
    #: ``True``/``False`` when the model lets us check it; ``None`` when it cannot be
    #: checked from the model (e.g. that the query really is Gaussian).
    holds: bool | None
    #: The measured quantity behind the verdict, and what is known if it fails.
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return field_values(self)


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (ε, δ) guarantee w.r.t. the pairs Ψ, with its provenance and assumptions."""

    #: The privacy parameters the release satisfies: always values verified under the
    #: stated model and the checked assumptions (for the Gaussian family, by the exact
    #: privacy profile of the outputs). When the target could not be met they are the
    #: weaker pair that holds, and the target is in ``requested_epsilon``/``requested_delta``.
    epsilon: float
    delta: float
    #: Ψ as pairs of θ labels; each pair is protected in both directions.
    pairs: tuple[tuple[str, str], ...]
    #: Registry name of the mechanism.
    mechanism: str
    #: The result implemented, e.g. ``"Chen & Ohrimenko 2023, Thm 4.5"``.
    theorem: str
    #: ``"analytic"``/``"classical"`` for Gaussian noise, ``None`` otherwise.
    calibration: str | None = None
    #: ``"distribution privacy"`` or ``"group differential privacy"``.
    notion: str = "distribution privacy"
    #: Every assumption of the theorem with its checked outcome.
    assumptions: tuple[Assumption, ...] = field(default_factory=tuple)
    #: What else a reader should know (ignored parameters, how to relax).
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: A weaker guarantee that still holds when some assumption fails (Chen & Ohrimenko
    #: 2023, §4.4), with the assumptions it needs instead.
    fallback: PrivacyGuarantee | None = None
    #: The target (ε, δ) the mechanism was calibrated for; ``None`` means the same as
    #: ``epsilon``/``delta``.
    requested_epsilon: float | None = None
    requested_delta: float | None = None
    #: What the guarantee is conditional on rather than what was checked: for the
    #: Gaussian family, "f_θ is Gaussian with the model's moments", with the model's
    #: normality diagnostics in the detail. Not counted by :attr:`holds`: the guarantee
    #: is verified *under* its premises.
    premises: tuple[Assumption, ...] = field(default_factory=tuple)

    @property
    def target(self) -> tuple[float, float]:
        """The requested (ε, δ) (equal to the headline unless it could not be met)."""
        return (
            self.epsilon if self.requested_epsilon is None else self.requested_epsilon,
            self.delta if self.requested_delta is None else self.requested_delta,
        )

    @property
    def meets_target(self) -> bool:
        """Whether the verified headline is at least as strong as the requested target."""
        eps, dlt = self.target
        return self.epsilon <= eps and self.delta <= dlt

    @property
    def holds(self) -> bool | None:
        """``True`` if all assumptions were verified, ``False`` if any failed, else ``None``."""
        verdicts = [a.holds for a in self.assumptions]
        if any(v is False for v in verdicts):
            return False
        if any(v is None for v in verdicts):
            return None
        return True

    @property
    def failed(self) -> tuple[Assumption, ...]:
        """The assumptions that were checked and do not hold."""
        return tuple(a for a in self.assumptions if a.holds is False)

    def summary(self) -> str:
        """One line: ``(ε, δ)-notion w.r.t. Ψ by theorem [status]``."""
        status = {
            True: "all assumptions verified",
            False: "ASSUMPTIONS FAILED",
            None: "some assumptions unverifiable",
        }[self.holds]
        pairs = ", ".join(f"({a}, {b})" for a, b in self.pairs)
        text = (
            f"({self.epsilon:.6g}, {self.delta:.6g})-{self.notion} w.r.t. {{{pairs}}} "
            f"by {self.theorem} [{status}]"
        )
        if not self.meets_target:
            eps, dlt = self.target
            text += f"; requested ({eps:g}, {dlt:g}) could not be met"
        if self.fallback is not None:
            text += (
                f"; without the failed assumptions: ({self.fallback.epsilon:.4g}, "
                f"{self.fallback.delta:.3g})"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            **field_values(self, "epsilon delta notion"),
            "pairs": [list(p) for p in self.pairs],
            **field_values(self, "mechanism theorem calibration holds"),
            "assumptions": [a.to_dict() for a in self.assumptions],
            "notes": list(self.notes),
            "fallback": None if self.fallback is None else self.fallback.to_dict(),
            "requested_epsilon": self.target[0],
            "requested_delta": self.target[1],
            "meets_target": self.meets_target,
            "premises": [a.to_dict() for a in self.premises],
        }

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter (from the package templates)."""
        from .util.templates import repr_guarantee

        return repr_guarantee(self.to_dict())


@dataclass(frozen=True)
class Release:
    """Noisy statistics, the guarantee they were released under, and how the noise was drawn."""

    #: ndarray, shape (m,) or (batch, m)
    #: The released statistics F(Data) + Z (read-only).
    value: np.ndarray
    #: The guarantee of the mechanism that produced them.
    guarantee: PrivacyGuarantee
    #: Names of the m statistics.
    statistics: tuple[str, ...]
    #: How Z was drawn: the secure sampler (OpenDP discrete Gaussian/Laplace on a grid,
    #: OS entropy, with how the grid rounding is accounted for), the numpy simulation, or
    #: none (a noiseless release). See :func:`distpriv.noise.sampler_description`.
    sampler: str = "unspecified"
    #: ``True`` only when no seed or numpy generator was involved: the noise came from the
    #: secure sampler (or there is none). ``False`` marks a reproducible simulation whose
    #: noise anyone with the seed can subtract: NOT private, not for publication.
    secure: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "value": to_jsonable(self.value),
            "statistics": list(self.statistics),
            "guarantee": self.guarantee.to_dict(),
            "sampler": self.sampler,
            "secure": self.secure,
        }

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter (from the package templates)."""
        from .util.templates import repr_release

        return repr_release(self.to_dict())
