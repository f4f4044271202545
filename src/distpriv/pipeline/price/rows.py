"""One statistic's row of the price table (:mod:`distpriv.pipeline.price.table`),
apart from the table's computation so that its words (:mod:`distpriv.pipeline.price.table.words`)
and its numbers (``price.py``) both read it without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["COLLINEAR_R2", "StatisticPrice"]

# A statistic is "nearly collinear" with the others from this R² on (VIF = 1/(1 − R²) ≥ 10).
COLLINEAR_R2 = 0.9


def _safe(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class StatisticPrice:
    """The price row of one statistic."""

    name: str
    #: √(Σ_Z)_kk of the calibrated noise.
    noise_sd: float
    #: The statistic's standard deviation across datasets under the model (pooled over θ).
    spread: float
    #: ``noise_sd / spread`` (``inf`` for a statistic that never varies, with noise).
    noise_to_spread: float
    #: Noise sd of the same mechanism calibrated on the fitted moments only (no population
    #: layer); ``None`` when there is no layer or the re-calibration failed.
    noise_sd_fitted: float | None
    #: Relative fall of the other statistics' E‖Z‖² if this one were dropped (0.3: 30 %
    #: less); ``None`` when not computed.
    drop_saving: float | None
    #: Collinearity with the other statistics (pooled model covariance).
    r_squared: float
    #: max_θ μ_θ,k − min_θ μ_θ,k, the statistic's spread across the secret's values.
    gap: float = math.nan
    #: The mean of μ_θ,k over θ (the statistic's typical value under the model).
    value: float = math.nan
    #: Largest ratio of the statistic's variances under two values of the secret (1: equal;
    #: ``inf`` when one is 0 and the other not).
    variance_ratio: float = 1.0
    #: Noise sd when this statistic's weight is ``WEIGHT_PROBE`` times larger (the others
    #: kept); ``None`` when the mechanism takes no weights or it was not computed.
    noise_sd_weighted: float | None = None

    @property
    def premise_factor(self) -> float | None:
        """Noise sd with the population layer over noise sd without it."""
        if self.noise_sd_fitted is None or self.noise_sd_fitted <= 0:
            return None
        return self.noise_sd / self.noise_sd_fitted

    @property
    def collinear(self) -> bool:
        """R² ≥ :data:`COLLINEAR_R2`."""
        return self.r_squared >= COLLINEAR_R2

    @property
    def dominated(self) -> bool:
        """The noise is at least the statistic's own spread across datasets."""
        return self.noise_to_spread >= 1.0

    @property
    def noise_to_gap(self) -> float:
        """``noise_sd / gap`` (``inf`` when the secret does not move the mean)."""
        if self.gap > 0:
            return self.noise_sd / self.gap
        return 0.0 if self.noise_sd == 0 else math.inf

    @property
    def swamps_value(self) -> bool:
        """The noise sd is at least the statistic's typical value (in absolute terms)."""
        return math.isfinite(self.value) and self.noise_sd >= abs(self.value) > 0

    @property
    def reveals_secret(self) -> bool:
        """The statistic does not vary between datasets with the same value of the secret,
        but differs between values: publishing it exactly would publish the secret."""
        return self.spread == 0 and self.gap > 0

    @property
    def weight_effect(self) -> float | None:
        """Relative fall of the noise sd under the weight probe (0.4: 40 % less)."""
        if self.noise_sd_weighted is None or self.noise_sd <= 0:
            return None
        return 1.0 - self.noise_sd_weighted / self.noise_sd

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (non-finite numbers as ``None``)."""
        return {
            "statistic": self.name,
            "value": _safe(self.value),
            "noise_sd": _safe(self.noise_sd),
            "spread": _safe(self.spread),
            "noise_to_spread": _safe(self.noise_to_spread),
            "secret_gap": _safe(self.gap),
            "noise_to_gap": _safe(self.noise_to_gap),
            "variance_ratio": _safe(self.variance_ratio),
            "noise_sd_without_population": _safe(self.noise_sd_fitted),
            "population_premise_factor": _safe(self.premise_factor),
            "drop_saves_others": _safe(self.drop_saving),
            "r_squared": _safe(self.r_squared),
            "nearly_collinear": self.collinear,
            "dominated_by_noise": self.dominated,
            "noise_exceeds_value": self.swamps_value,
            "reveals_secret": self.reveals_secret,
            "noise_sd_at_weight_x10": _safe(self.noise_sd_weighted),
            "weight_effect": _safe(self.weight_effect),
        }
