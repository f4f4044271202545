"""The privacy audit of a release that hides several attributes at once (issue 27 item 4).

Zhang, Ohrimenko & Cummings (2022, §3) protect a set C of attributes with one release;
Ψ is the union of each attribute's pairs. An attacker targets one attribute at a time, so
the audit is one :func:`distpriv.attacks.audit` per attribute: attribute i's two values
(its first pair), datasets drawn with i's share fixed and the other attributes as in the
population, the *same* mechanisms (calibrated for every attribute at once), and i's block
of the query model for the likelihood-ratio test (:mod:`distpriv.attacks.audit_kinds`).
:class:`SeveralAuditReport` keeps each attribute's :class:`AuditReport` and a combined view
(per mechanism, every attribute's attacks, the largest ε lower bound, the worst verdict).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .._validation import check_real, check_rng
from ..errors import ParameterTypeError
from ..guarantees import to_jsonable
from ..modeling.secret_several import AttributeValue, SeveralSecrets
from .audit_report import AuditAttackResult, AuditReport, MechanismAudit

__all__ = ["SeveralAuditReport", "audit_attributes"]


def _combined(name: str, parts: list[tuple[str, MechanismAudit]]) -> MechanismAudit:
    """One mechanism over every attribute: each attack named with its attribute, the
    largest ε lower bound, violated when any attribute's audit is."""
    first = parts[0][1]
    attacks = tuple(
        AuditAttackResult(
            f"{attr}: {a.attack}", a.accuracy, a.interval, a.per_repetition, a.confusion, a.bound
        )
        for attr, m in parts
        for a in m.attacks
    )
    verdicts = {m.verdict for _, m in parts}
    verdict = "violated" if "violated" in verdicts else first.verdict
    strongest = max(attacks, key=lambda a: a.accuracy).attack
    return MechanismAudit(
        name,
        first.epsilon,
        first.delta,
        attacks,
        max(m.epsilon_lower for _, m in parts),
        strongest,
        verdict,
        first.fallback,
        None,
    )


@dataclass(frozen=True)
class SeveralAuditReport:
    """The audit of each attribute of a :class:`~distpriv.modeling.SeveralSecrets`.

    Attributes
    ----------
    attributes : tuple of str
        Each attribute's predicate, in the secret's order.
    reports : tuple of AuditReport
        Each attribute's audit (its pair, attacks and verdicts).
    """

    attributes: tuple[str, ...]
    reports: tuple[AuditReport, ...]
    confidence: float = 0.95

    @property
    def mechanisms(self) -> tuple[MechanismAudit, ...]:
        """Per mechanism, the combined audit over every attribute (:func:`_combined`)."""
        names = [m.mechanism for m in self.reports[0].mechanisms]
        pairs_of = self.attributes
        return tuple(
            _combined(name, [(a, r.get(name)) for a, r in zip(pairs_of, self.reports, strict=True)])
            for name in names
        )

    def get(self, mechanism: str, attribute: int | None = None) -> MechanismAudit:
        """The combined audit of ``mechanism``, or attribute ``attribute``'s own."""
        if attribute is not None:
            return self.reports[attribute].get(mechanism)
        for m in self.mechanisms:
            if m.mechanism == mechanism:
                return m
        raise KeyError(mechanism)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: the setting, the combined ``mechanisms`` and ``attributes`` (each
        attribute's predicate with its own audit report)."""
        first = self.reports[0].to_dict()
        keep = ("version", "seed", "repetitions", "n_shadow", "n_test")
        return to_jsonable(
            {
                **{k: first[k] for k in keep},
                "confidence": self.confidence,
                "classifiers": first["classifiers"],
                "pair": None,
                "notes": [n for r in self.reports for n in r.notes],
                "mechanisms": [m.to_dict() for m in self.mechanisms],
                "attributes": [
                    {"predicate": a, **r.to_dict()}
                    for a, r in zip(self.attributes, self.reports, strict=True)
                ],
            }
        )

    def _repr_html_(self) -> str:
        """Each attribute's compact HTML summary (Jupyter)."""
        return "".join(
            f"<div><code>{a}</code></div>{r._repr_html_()}"
            for a, r in zip(self.attributes, self.reports, strict=True)
        )


def audit_attributes(
    *,
    secret: SeveralSecrets,
    progress: Callable[[int, int], None] | None = None,
    **kw: Any,
) -> SeveralAuditReport:
    """One :func:`~distpriv.attacks.audit` per attribute of a several-attribute secret.

    Parameters
    ----------
    secret : SeveralSecrets
    progress : callable, optional
        ``progress(done, total)`` over all attributes' repetitions.
    confidence : float, in ``kw``
        Joint confidence of the combined ε lower bound per mechanism: each attribute's
        audit runs at 1 − (1 − confidence)/|C| (Bonferroni over the attributes).
    **kw
        The other arguments of :func:`~distpriv.attacks.audit` (``pair`` excepted: each
        attribute's first pair is audited). ``mechanisms`` should be calibrated on the
        several-attribute model (a named mechanism is calibrated on ``model``, which is).

    Returns
    -------
    SeveralAuditReport
    """
    from .audit import audit

    if not isinstance(secret, SeveralSecrets):
        raise ParameterTypeError(f"secret must be a SeveralSecrets, got {type(secret).__name__}")
    kw.pop("pair", None)
    confidence = check_real(
        kw.get("confidence", 0.95),
        "confidence",
        low=0.0,
        high=1.0,
        low_inclusive=False,
        high_inclusive=False,
    )
    # Bonferroni over the attributes: the combined ε lower bound (the largest) and verdict
    # hold at ``confidence`` jointly.
    kw["confidence"] = 1.0 - (1.0 - confidence) / len(secret.attributes)
    seed = kw.get("rng")
    # One generator across the attributes: each attribute's datasets are fresh draws.
    kw["rng"] = check_rng(seed)
    reports = []
    total = len(secret.attributes)
    for a, attr in enumerate(secret.attributes):
        lo, hi = attr.pairs[0]
        report = audit(
            secret=secret,
            pair=(AttributeValue(attr.predicate, lo), AttributeValue(attr.predicate, hi)),
            progress=_offset(progress, a, total),
            **kw,
        )
        if isinstance(seed, int) and not isinstance(seed, bool):
            report = replace(report, seed=seed)
        reports.append(report)
    return SeveralAuditReport(secret.predicates, tuple(reports), confidence)


def _offset(
    progress: Callable[[int, int], None] | None, done: int, total: int
) -> Callable[[int, int], None] | None:
    """``progress`` counting attribute ``done``'s repetitions after the earlier ones."""
    if progress is None:
        return None
    report = progress

    def tick(r: int, reps: int) -> None:
        report(done * reps + r, total * reps)

    return tick
