"""The report of an audit of many pairs (:func:`distpriv.attacks.audit_pairs`).

One :class:`~distpriv.attacks.AuditReport` per audited pair, grouped per attribute (one
group for a secret of one attribute), and combined views: per attribute and per mechanism,
every pair's attacks with the largest ε lower bound and the worst verdict; and the same
over every attribute. Every pair's bounds were computed at the Bonferroni-adjusted
confidence, so the combined largest bound holds at :attr:`PairsAuditReport.confidence`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..guarantees import to_jsonable
from .audit_report import AuditAttackResult, AuditReport, MechanismAudit

__all__ = ["PairsAuditReport", "pair_words"]


def pair_words(report: AuditReport) -> str:
    """The audited pair in words: its labels, or ``p = a vs b``."""
    if report.labels is not None:
        return f"{report.labels[0]} vs {report.labels[1]}"
    return f"{report.pair[0]:g} vs {report.pair[1]:g}"


def combined(name: str, parts: list[tuple[str, MechanismAudit]]) -> MechanismAudit:
    """One mechanism over several audits: each attack named with its audit (``"what:
    attack"``), the largest ε lower bound, violated when any part is."""
    first = parts[0][1]
    attacks = tuple(
        AuditAttackResult(
            f"{what}: {a.attack}", a.accuracy, a.interval, a.per_repetition, a.confusion, a.bound
        )
        for what, m in parts
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
class PairsAuditReport:
    """Every audited pair's audit, per attribute."""

    #: Each attribute's name (its predicate; the secret's description for other kinds).
    attributes: tuple[str, ...]
    #: One per audited pair, attribute by attribute, in Ψ's order.
    reports: tuple[AuditReport, ...]
    #: Per report, its attribute (an index into :attr:`attributes`).
    groups: tuple[int, ...]
    #: Per attribute, how many pairs Ψ holds for it (audited or not).
    totals: tuple[int, ...]
    #: How the pairs were chosen (``"all"``, ``"binding"``, ``"first"`` or a number per
    #: attribute; :func:`~distpriv.attacks.audit_pairs.choose_pairs`).
    selection: str = "all"
    #: Joint confidence of every bound (Bonferroni over the audited pairs).
    confidence: float = 0.95
    #: What the report must say about the whole audit.
    notes: tuple[str, ...] = ()
    #: The secret's kind (``"proportion"``, ``"several"``, ``"mean"``, ``"event"``).
    kind: str = "several"

    def pair_reports(self, attribute: int) -> tuple[AuditReport, ...]:
        """The audits of one attribute's pairs."""
        return tuple(r for r, g in zip(self.reports, self.groups, strict=True) if g == attribute)

    def _combine(self, reports: tuple[AuditReport, ...]) -> tuple[MechanismAudit, ...]:
        names = [m.mechanism for m in reports[0].mechanisms]
        return tuple(combined(nm, [(pair_words(r), r.get(nm)) for r in reports]) for nm in names)

    def attribute_mechanisms(self, attribute: int) -> tuple[MechanismAudit, ...]:
        """Per mechanism, the combined audit of one attribute's pairs."""
        return self._combine(self.pair_reports(attribute))

    @property
    def mechanisms(self) -> tuple[MechanismAudit, ...]:
        """Per mechanism, the combined audit of every audited pair of every attribute."""
        return self._combine(self.reports)

    def get(self, mechanism: str, attribute: int | None = None) -> MechanismAudit:
        """The combined audit of ``mechanism`` (over one attribute's pairs, or all)."""
        pool = self.mechanisms if attribute is None else self.attribute_mechanisms(attribute)
        for m in pool:
            if m.mechanism == mechanism:
                return m
        raise KeyError(mechanism)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: the setting, the combined ``mechanisms`` and ``attributes`` (each
        with its pairs of Ψ, how many were audited, its combined ``mechanisms`` and each
        audited pair's own report under ``pairs``)."""
        first = self.reports[0].to_dict()
        keep = ("version", "seed", "repetitions", "n_shadow", "n_test")
        own = ("version", "seed", "repetitions", "n_shadow", "n_test", "classifiers")
        return to_jsonable(
            {
                **{k: first[k] for k in keep},
                "confidence": self.confidence,
                "classifiers": first["classifiers"],
                "pair": None,
                "pairs_selection": self.selection,
                "notes": [*self.notes, *dict.fromkeys(n for r in self.reports for n in r.notes)],
                "mechanisms": [m.to_dict() for m in self.mechanisms],
                "attributes": [
                    {
                        "predicate": name,
                        "pairs_total": self.totals[a],
                        "pairs_audited": len(self.pair_reports(a)),
                        "mechanisms": [m.to_dict() for m in self.attribute_mechanisms(a)],
                        "pairs": [
                            {
                                "words": pair_words(r),
                                **{k: v for k, v in r.to_dict().items() if k not in own},
                            }
                            for r in self.pair_reports(a)
                        ],
                    }
                    for a, name in enumerate(self.attributes)
                ],
            }
        )

    def _repr_html_(self) -> str:
        """Each audited pair's compact HTML summary (Jupyter)."""
        return "".join(
            f"<div><code>{self.attributes[g]}</code>: {pair_words(r)}</div>{r._repr_html_()}"
            for r, g in zip(self.reports, self.groups, strict=True)
        )
