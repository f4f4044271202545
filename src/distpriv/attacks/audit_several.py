"""The privacy audit of a release that hides several attributes at once.

Zhang, Ohrimenko & Cummings (2022, §3) protect a set C of attributes with one release;
Ψ is the union of each attribute's pairs. An attacker targets one attribute at a time, so
the audit runs attribute by attribute and, within each, on every pair of that attribute
(:func:`distpriv.attacks.audit_pairs`): datasets drawn at the pair's two values of
attribute i with the other attributes as in the population, the *same* mechanisms
(calibrated for every attribute at once), and i's block of the query model for the
likelihood-ratio test (:mod:`distpriv.attacks.audit_kinds`). Each pair's verdict is judged
against the release's own (ε, δ), which holds for every pair of Ψ; the report
(:class:`SeveralAuditReport`, a :class:`~distpriv.attacks.audit_pairs_report.PairsAuditReport`)
keeps every pair's audit and combined views per attribute and over all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ParameterTypeError
from ..modeling.secret_several import SeveralSecrets
from .audit_pairs import audit_pairs
from .audit_pairs_report import PairsAuditReport

__all__ = ["SeveralAuditReport", "audit_attributes"]

#: The report of :func:`audit_attributes` (every audited pair, per attribute).
SeveralAuditReport = PairsAuditReport


def audit_attributes(
    *,
    secret: SeveralSecrets,
    pairs: str | int = "all",
    progress: Callable[[int, int], None] | None = None,
    **kw: Any,
) -> PairsAuditReport:
    """The audit of every attribute of a several-attribute secret, on its pairs.

    Parameters
    ----------
    secret : SeveralSecrets
    pairs : {"all", "binding", "auto", "first"} or int
        Which pairs of each attribute (:func:`~distpriv.attacks.audit_pairs.choose_pairs`);
        default every pair of Ψ.
    progress : callable, optional
        ``progress(done, total)`` over all attributes' repetitions.
    **kw
        The other arguments of :func:`~distpriv.attacks.audit_pairs` (``pair`` is
        ignored). ``confidence`` is the joint confidence over every audited pair
        (Bonferroni). ``mechanisms`` should be calibrated on the several-attribute model
        (a named mechanism is calibrated on ``model``, which is).

    Returns
    -------
    SeveralAuditReport
    """
    if not isinstance(secret, SeveralSecrets):
        raise ParameterTypeError(f"secret must be a SeveralSecrets, got {type(secret).__name__}")
    kw.pop("pair", None)
    return audit_pairs(secret=secret, pairs=pairs, progress=progress, **kw)
