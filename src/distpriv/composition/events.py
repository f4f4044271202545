"""One release as the composition sees it, and its noise law as recorded in the ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CompositionError, ParameterError
from ..noise import Noise, NoiseComponent

__all__ = ["ReleaseSpec", "noise_from_dict", "noise_to_dict"]


@dataclass(frozen=True)
class ReleaseSpec:
    """One release as the composition sees it: its statistics and its noise law."""

    statistics: tuple[tuple[str, str], ...]
    #: The noise added to these m statistics (components in orthonormal bases).
    noise: Noise
    mechanism: str
    #: The δ the release was calibrated for (used as the reference δ when none is given).
    delta: float = 0.0

    def __post_init__(self) -> None:
        if len(self.statistics) != self.noise.dim:
            raise ParameterError(
                f"release has {len(self.statistics)} statistics but noise of dimension "
                f"{self.noise.dim}"
            )

    @classmethod
    def from_record(cls, record: Any) -> ReleaseSpec:
        """From a :class:`~distpriv.pipeline.ledger.LedgerEntry` (its stored noise law)."""
        noise = noise_from_dict(record.noise, len(record.statistics))
        return cls(
            tuple(record.statistics),
            noise,
            record.mechanism,
            float(record.guarantee.get("delta", 0.0)),
        )


def noise_to_dict(noise: Noise) -> dict[str, Any]:
    """The noise law as stored in the ledger: covariance and components."""
    return {
        "covariance": noise.covariance.tolist(),
        "components": [
            {"kind": c.kind, "basis": c.basis.tolist(), "scales": c.scales.tolist()}
            for c in noise.components
        ],
    }


def noise_from_dict(data: Mapping[str, Any], dim: int) -> Noise:
    """Inverse of :func:`noise_to_dict`."""
    try:
        comps = tuple(
            NoiseComponent(
                c["kind"],
                np.asarray(c["basis"], dtype=np.float64).reshape(dim, -1),
                np.asarray(c["scales"], dtype=np.float64),
            )
            for c in data["components"]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CompositionError(f"a recorded noise law cannot be read: {exc}") from exc
    return Noise(dim, comps)
