"""The guarantee of a release for each attribute of several secrets hidden at once.

The release's guarantee covers Ψ = the union of every attribute's pairs (Zhang, Ohrimenko
& Cummings 2022, §3); the report states it per attribute, with the largest δ at the
guarantee's ε over that attribute's own pairs (evaluated as the calibration checks:
on the worst members of the population's (1 − β) confidence set for the released noise,
or on the fitted model when the model carries no uncertainty or β is ``none``), so a
curator sees which attribute binds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..population.confidence import checked_members
from ..population.exact import pair_deltas

__all__ = ["attribute_guarantees"]


def attribute_guarantees(
    attributes: list[dict[str, Any]], model: Any, mech: Any, *, beta: float | None
) -> list[dict[str, Any]]:
    """Each attribute's block of the public report with its ``guarantee``.

    Parameters
    ----------
    attributes : list of dict
        The ``attributes`` of the secret's public dict
        (:meth:`~distpriv.modeling.secret_several.SeveralSecrets.to_dict`), in order.
    model : SeveralQueryModel
        The model the mechanism was calibrated on (its ``parts`` are the attributes).
    mech : CalibratedMechanism
    beta : float or None
        The calibration's confidence on the population.

    Returns
    -------
    list of dict
        The same dicts, each with ``guarantee``: ``epsilon``, ``delta`` (the release's,
        which holds for every pair of this attribute), ``pairs`` and ``delta_at_epsilon``
        (the largest exact δ(ε) over this attribute's pairs and both directions; ``None``
        for noise that is not Gaussian).
    """
    g = mech.guarantee
    noise = np.asarray(mech.noise_covariance, dtype=float)
    gaussian = all(c.kind == "gaussian" for c in mech.noise.components if c.basis.shape[1])
    worst: dict[int, float] = {}
    if gaussian:
        # The calibration's own check: every pair of Ψ on the worst members of the joint
        # confidence set (each pair of the model has the same number of members, in order).
        members = checked_members(model, beta, epsilon=float(g.epsilon))(noise)
        deltas = pair_deltas(members, noise, epsilon=float(g.epsilon)).deltas
        per = len(members.pairs) // len(model.pairs)
        attr_of = [model.secret.attribute_of(i) for i, _ in model.pairs]
        for r, d in enumerate(deltas.max(axis=1)):
            a = attr_of[r // per]
            worst[a] = max(worst.get(a, 0.0), float(d))
    out = []
    for a, attr in enumerate(attributes):
        pairs = [
            [str(model.labels[i]), str(model.labels[j])]
            for i, j in model.pairs
            if model.secret.attribute_of(i) == a
        ]
        out.append(
            {
                **attr,
                "guarantee": {
                    "epsilon": float(g.epsilon),
                    "delta": float(g.delta),
                    "pairs": pairs,
                    "delta_at_epsilon": worst.get(a) if gaussian else None,
                },
            }
        )
    return out
