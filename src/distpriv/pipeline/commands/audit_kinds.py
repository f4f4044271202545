"""``distpriv audit`` for several attributes at once: each attribute's guarantee.

The audit of a :class:`~distpriv.modeling.SeveralSecrets` is one audit per attribute
(:func:`distpriv.attacks.audit_attributes`); its public report states, per attribute and
audited mechanism, the guarantee the release gives that attribute's pairs
(:func:`distpriv.pipeline.report_several.attribute_guarantees`: the release's (ε, δ) and the
largest δ at ε over the attribute's own pairs) beside that attribute's attack accuracies.
"""

from __future__ import annotations

from typing import Any

from ...attacks.bounds import accuracy_allowed
from ..report_several import attribute_guarantees

__all__ = ["several_audit_blocks"]


def several_audit_blocks(
    public: dict[str, Any], model: Any, mechs: list[Any], *, beta: float | None
) -> list[str]:
    """Add each attribute's guarantees to ``public["attributes"]`` (in place); return the
    report's lines saying them.

    Parameters
    ----------
    public : dict
        The audit's public report, with ``secret`` (a several-attribute secret's dict) and
        ``attributes`` (:meth:`~distpriv.attacks.audit_several.SeveralAuditReport.to_dict`).
    model : SeveralQueryModel
        The model the mechanisms were calibrated on.
    mechs : list of CalibratedMechanism
    beta : float or None
        The calibration's confidence on the population.

    Returns
    -------
    list of str
        One line per attribute and mechanism.
    """
    lines = []
    for mech in mechs:
        per = attribute_guarantees(public["secret"]["attributes"], model, mech, beta=beta)
        for block, attr in zip(public["attributes"], per, strict=True):
            g = attr["guarantee"]
            g = {**g, "accuracy_allowed": accuracy_allowed(g["epsilon"], g["delta"])}
            block.setdefault("guarantees", {})[mech.name] = g
            at = g["delta_at_epsilon"]
            lines.append(
                f"{attr['description']}: {mech.name} guarantees (epsilon {g['epsilon']:g}, "
                f"delta {g['delta']:g}) for its pairs"
                + ("" if at is None else f" (largest delta at epsilon over them: {at:.3g})")
                + f"; any attack's accuracy at most {g['accuracy_allowed']:.3f}"
            )
    return lines
