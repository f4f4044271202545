"""The results of the data-level check (:func:`distpriv.attacks.verify_on_data`): verdicts,
per-direction checks, the null control and the advice shown to the curator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..guarantees import to_jsonable
from ..util.records import field_values

__all__ = ["VERDICTS", "DataLevelCheck", "DirectionCheck", "NullControl", "advice"]


VERDICTS = ("violation", "inconclusive", "no evidence")


# Power at which the detectable δ is reported.
POWER = 0.8


@dataclass(frozen=True)
class DirectionCheck:
    """The data-level check of one pair in one direction (θ_i → θ_j)."""

    #: Labels (θ_i, θ_j); δ bounds P_i(S) − e^ε P_j(S).
    pair: tuple[str, str]
    #: Held-out estimate of P_i(S) − e^ε P_j(S) ≤ δ_{i→j}(ε) for the chosen set S
    #: (clipped at 0).
    estimate: float
    #: Interval of that quantity (joint ``confidence``): Clopper–Pearson for a counted
    #: set, empirical Bernstein for the expected-hit half-space
    #: (:mod:`distpriv.attacks.verify_expected`).
    interval: tuple[float, float]
    #: Certified lower bound on δ_{i→j}(ε) (the largest over the evaluated sets), ≥ 0.
    lower: float
    #: Name of the chosen set.
    selected: str
    #: Held-out certified lower bound of each evaluated set (the chosen one and, when it
    #: runs, ``"lattice decoding"``).
    tests: dict[str, float]
    #: Samples of θ_i in the fit, train and evaluation splits.
    n_mixture: int
    n_train: int
    n_eval: int
    #: Observed P_i(S) and P_j(S) of the chosen set on the evaluation draws (the mean
    #: expected hits for the half-space).
    rates: tuple[float, float] = (0.0, 0.0)
    #: About one standard error below the estimate (the same bound at one-sided
    #: confidence 0.84 for a counted set; mean − sd/√n for expected hits): above the
    #: target it makes the verdict "inconclusive".
    lower_1se: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                "rates": list(self.rates),
                "lower_1se": self.lower_1se,
                "pair": list(self.pair),
                "estimate": self.estimate,
                "interval": list(self.interval),
                "lower": self.lower,
                "selected": self.selected,
                "tests": dict(self.tests),
                **field_values(self, "n_mixture n_train n_eval"),
            }
        )


@dataclass(frozen=True)
class NullControl:
    """The same check on draws from the fitted Gaussian model, whose δ is exact."""

    #: Exact δ_{i→j}(ε) of the fitted Gaussian model plus noise, per direction (in the
    #: order of ``DataLevelCheck.per_pair``).
    exact: tuple[float, ...]
    #: The check's estimate on the null draws, per direction.
    estimates: tuple[float, ...]
    intervals: tuple[tuple[float, float], ...]
    #: Estimate − exact in the direction of the largest exact δ (the measured bias of
    #: the method there; negative means the chosen set misses part of δ).
    bias: float
    #: Every exact δ lies inside its interval.
    covered: bool

    @property
    def exact_delta(self) -> float:
        """The largest exact δ over directions."""
        return max(self.exact)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                "exact": list(self.exact),
                "exact_delta": self.exact_delta,
                "estimates": list(self.estimates),
                "intervals": [list(i) for i in self.intervals],
                "bias": self.bias,
                "covered": self.covered,
            }
        )


@dataclass(frozen=True)
class DataLevelCheck:
    """δ(ε) of the mechanism's actual outputs f_θ + Z, checked on resampled f_θ."""

    mechanism: str
    #: The mechanism's guarantee (the ε at which δ is checked, and its claimed δ).
    epsilon: float
    target_delta: float
    #: Largest held-out estimate over pairs and directions (a lower estimate of δ: it
    #: is unbiased for the chosen set's P_i(S) − e^ε P_j(S)).
    delta_estimate: float
    #: Certified lower bound on the largest δ_{i→j}(ε), at joint ``confidence``.
    delta_lower: float
    #: Upper end of the estimate's interval in that direction (NOT an upper bound on δ).
    delta_upper: float
    #: {"violation", "inconclusive", "no evidence"}
    verdict: str
    #: A δ this large in any direction would have been certified with probability
    #: ≥ ``power`` (for sets as good as the chosen ones).
    detectable_delta: float
    power: float
    #: None when the noise has no Gaussian form (Laplace), so no exact reference.
    null: NullControl | None
    #: Share of evaluation releases whose statistics the lattice decoder recovered
    #: exactly (None when it did not run).
    recovery: float | None
    confidence: float
    #: Dimension of the noise's range (m when it covers every direction).
    noise_rank: int
    per_pair: tuple[DirectionCheck, ...]
    notes: tuple[str, ...]
    #: Resampled datasets per value the verdict rests on (the smallest over values).
    n_samples: int = 0
    #: Looks taken by a sequential check (1 for a fixed-size check).
    looks: int = 1
    #: Looks the sequential check was allowed (its bounds are Bonferroni-corrected over
    #: all of them, so the confidence holds whenever it stopped).
    max_looks: int = 1
    #: Why a sequential check stopped ("certified", "below the target", "first look
    #: clear" (its early stop), "sample budget", "time budget"), or "" for a fixed-size
    #: check.
    stopped: str = ""

    @property
    def consistent(self) -> bool:
        """No certified violation (``verdict != "violation"``)."""
        return self.verdict != "violation"

    @property
    def advice(self) -> str:
        """One sentence for the curator: what the verdict means and what to do next."""
        return advice(
            self.verdict,
            self.delta_estimate,
            self.delta_lower,
            self.target_delta,
            self.detectable_delta,
            self.confidence,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                **field_values(
                    self,
                    "mechanism epsilon target_delta verdict advice"
                    " delta_estimate delta_lower delta_upper detectable_delta power consistent",
                ),
                "null_control": None if self.null is None else self.null.to_dict(),
                **field_values(self, "recovery confidence noise_rank"),
                "per_pair": [p.to_dict() for p in self.per_pair],
                "notes": list(self.notes),
                **field_values(self, "n_samples looks max_looks stopped"),
            }
        )


def advice(
    verdict: str,
    estimate: float,
    lower: float,
    target: float,
    detectable: float,
    confidence: float,
) -> str:
    """The curator's sentence for a verdict (used by the CLI, JSON and HTML)."""
    if verdict == "violation":
        return (
            f"violation: on resampled data delta is at least {lower:.3g} (certified at "
            f"confidence {confidence:g}), above the claimed {target:g}; do not publish — use "
            "noise in every direction (or a larger noise floor) or more noise, and check again"
        )
    if verdict == "inconclusive":
        return (
            f"inconclusive: the estimate {estimate:.3g} is above the claimed {target:g} but "
            "no excess is certified (it may be sampling error); re-run the check with more "
            "resampled datasets before publishing, or publish knowing it could not be ruled out"
        )
    return (
        f"no evidence of a violation: the estimate {estimate:.3g} is within sampling error of "
        f"the claimed {target:g}; the check would have detected delta >= {detectable:.3g} with "
        f"{POWER:.0%} power, smaller excesses are not ruled out"
    )
