"""What the privacy audit returns: per attack, per mechanism and for the whole audit.

:class:`AuditAttackResult`, :class:`MechanismAudit` and :class:`AuditReport` (frozen
dataclasses with ``to_dict``), and :func:`accuracy_interval`, the Clopper–Pearson interval of
an attack's accuracy. The audit itself is :func:`distpriv.attacks.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.version import __version__
from .bounds import EpsilonBound, accuracy_allowed, clopper_pearson
from .verify import DataLevelCheck

__all__ = ["AuditAttackResult", "AuditReport", "MechanismAudit", "accuracy_interval"]

UNDEFENDED = "none"
#: Confidence of the accuracy intervals (two-sided Clopper–Pearson).
ACCURACY_CONFIDENCE = 0.95


@dataclass(frozen=True)
class AuditAttackResult:
    """One attack against one mechanism in the audit, over all repetitions.

    (Not to be confused with :class:`distpriv.local.AttackResult`, the Bayes attack on a
    local mechanism.)
    """

    #: e.g. ``"logistic"``, ``"logistic (mechanism-aware)"``, ``"likelihood-ratio"``.
    attack: str
    #: Mean accuracy over repetitions (= pooled accuracy: every repetition makes the same
    #: number of decisions).
    accuracy: float
    #: 95 % two-sided Clopper–Pearson interval of the accuracy from the pooled decisions;
    #: always inside [0, 1].
    interval: tuple[float, float]
    per_repetition: tuple[float, ...]
    #: Pooled (tp, fn, fp, tn), θ₁ being the positive class.
    confusion: tuple[int, int, int, int]
    #: ε lower bound from the pooled decisions.
    bound: EpsilonBound

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                **field_values(self, "attack accuracy interval per_repetition confusion"),
                "epsilon_lower_bound": self.bound.to_dict(),
            }
        )


@dataclass(frozen=True)
class MechanismAudit:
    """The audit of one mechanism: claim, attacks, bound, verdict and data-level check."""

    mechanism: str
    epsilon: float
    delta: float
    attacks: tuple[AuditAttackResult, ...]
    epsilon_lower: float
    strongest: str
    verdict: str
    fallback: tuple[float, float] | None = None
    verification: DataLevelCheck | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (``verification`` is ``None`` unless the audit ran it)."""
        return to_jsonable(
            {
                "mechanism": self.mechanism,
                "claimed_epsilon": self.epsilon,
                "claimed_delta": self.delta,
                "epsilon_lower_bound": self.epsilon_lower,
                "strongest_attack": self.strongest,
                "verdict": self.verdict,
                "fallback": self.fallback,
                "accuracy_allowed": accuracy_allowed(self.epsilon, self.delta),
                "attacks": [a.to_dict() for a in self.attacks],
                "verification": None if self.verification is None else self.verification.to_dict(),
            }
        )


@dataclass(frozen=True)
class AuditReport:
    """Every audited mechanism, the undefended baseline and the setting."""

    mechanisms: tuple[MechanismAudit, ...]
    pair: tuple[float, float]
    repetitions: int
    n_shadow: int
    n_test: int
    confidence: float
    classifiers: tuple[str, ...]
    seed: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: The pair in words (mean, event and several-attribute secrets).
    labels: tuple[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""

        return to_jsonable(
            {
                "version": __version__,
                **field_values(
                    self, "seed pair repetitions n_shadow n_test confidence classifiers notes"
                ),
                "mechanisms": [m.to_dict() for m in self.mechanisms],
                **({} if self.labels is None else {"labels": self.labels}),
            }
        )

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter (from the package templates)."""
        from ..util.templates import repr_audit

        return repr_audit(self.to_dict())

    def get(self, mechanism: str) -> MechanismAudit:
        """The audit of ``mechanism`` (``"none"`` for the undefended release)."""
        for m in self.mechanisms:
            if m.mechanism == mechanism:
                return m
        raise KeyError(mechanism)


def accuracy_interval(
    correct: int, total: int, confidence: float = ACCURACY_CONFIDENCE
) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval of an accuracy from ``correct`` of ``total``.

    Exact for independent decisions with a common success rate; for pooled repetitions
    whose rates differ slightly it covers their average rate (Hoeffding 1956). It is
    always inside [0, 1], also with few decisions or all of them correct.
    """
    side = 1.0 - (1.0 - confidence) / 2.0
    return (
        clopper_pearson(correct, total, side, "lower"),
        clopper_pearson(correct, total, side, "upper"),
    )
