"""Moved to :mod:`distpriv.pipeline.ledger.compose`; kept so that old imports still work.

``from distpriv.pipeline.compose import compose, ReleaseSpec`` resolves to the same objects
as ``distpriv.pipeline.ledger.compose``.
"""

from __future__ import annotations

from .ledger.compose import (
    ComposedGuarantee,
    ReleaseSpec,
    compose,
    gaussian_pair_composition,
    joint_model,
    laplace_composition,
    noise_from_dict,
    noise_to_dict,
)

__all__ = [
    "ComposedGuarantee",
    "ReleaseSpec",
    "compose",
    "gaussian_pair_composition",
    "joint_model",
    "laplace_composition",
    "noise_from_dict",
    "noise_to_dict",
]
