"""Empirical ε lower bounds from an attack's decisions (one-sided Clopper–Pearson)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from ..util.distributions import beta_ppf
from ..util.validation import check_delta, check_real

__all__ = ["EpsilonBound", "accuracy_allowed", "clopper_pearson", "epsilon_lower_bound"]


def clopper_pearson(successes: int, trials: int, confidence: float, side: str) -> float:
    """One-sided exact binomial bound: ``side="lower"`` or ``"upper"``.

    With probability at least ``confidence`` the true rate is above the lower (below the
    upper) bound.
    """
    if trials <= 0:
        raise ParameterError(f"trials must be positive, got {trials}")
    if not 0 <= successes <= trials:
        raise ParameterError(f"successes must be in [0, {trials}], got {successes}")
    alpha = 1.0 - confidence
    if side == "lower":
        return 0.0 if successes == 0 else float(beta_ppf(alpha, successes, trials - successes + 1))
    if side == "upper":
        return (
            1.0
            if successes == trials
            else float(beta_ppf(1 - alpha, successes + 1, trials - successes))
        )
    raise ParameterError(f"side must be 'lower' or 'upper', got {side!r}")


@dataclass(frozen=True)
class EpsilonBound:
    """ε lower bound from decisions on fresh datasets."""

    #: max of the two directions of ln((TPR_lower − δ) / FPR_upper); −inf when
    #: uninformative.
    epsilon_lower: float
    #: Joint confidence of the bound (Bonferroni over the two directions).
    confidence: float
    #: Observed rates (θ₁ detected when θ₁; θ₁ claimed when θ₀).
    tpr: float
    fpr: float
    #: The Clopper–Pearson bounds used.
    tpr_lower: float
    fpr_upper: float
    tnr_lower: float
    fnr_upper: float
    #: Number of test datasets under θ₁ and θ₀.
    positives: int
    negatives: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (−inf as a string)."""
        from ..guarantees import to_jsonable

        return to_jsonable(self.__dict__)


def _log_ratio(num: float, den: float) -> float:
    if num <= 0:
        return -math.inf
    if den <= 0:
        return math.inf
    return math.log(num / den)


def epsilon_lower_bound(
    tp: int, fn: int, fp: int, tn: int, *, delta: float = 0.0, confidence: float = 0.95
) -> EpsilonBound:
    """ε_LB = ln((TPR_lower − δ)/FPR_upper), and the symmetric form, from a confusion matrix.

    If a mechanism is (ε, δ)-private for the pair, every test satisfies
    TPR ≤ e^ε FPR + δ and TNR ≤ e^ε FNR + δ, so with one-sided Clopper–Pearson bounds at
    confidence 1 − α/2 each, ε ≥ the returned value with probability ≥ ``confidence``
    (Bonferroni over the two directions). The decisions must come from datasets not used
    to choose the attack.

    Parameters
    ----------
    tp, fn : int
        Decisions on datasets from θ₁: detected as θ₁ / as θ₀.
    fp, tn : int
        Decisions on datasets from θ₀: claimed θ₁ / θ₀.
    delta : float
        The δ of the claimed guarantee.
    confidence : float
        In (0, 1).
    """
    conf = check_real(
        confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    dlt = check_delta(delta)
    pos, neg = tp + fn, fp + tn
    if pos <= 0 or neg <= 0:
        raise ParameterError(f"need decisions on both hypotheses; got {pos} and {neg}")
    each = 1.0 - (1.0 - conf) / 2.0
    tpr_lo = clopper_pearson(tp, pos, each, "lower")
    fpr_hi = clopper_pearson(fp, neg, each, "upper")
    tnr_lo = clopper_pearson(tn, neg, each, "lower")
    fnr_hi = clopper_pearson(fn, pos, each, "upper")
    eps = max(_log_ratio(tpr_lo - dlt, fpr_hi), _log_ratio(tnr_lo - dlt, fnr_hi))
    return EpsilonBound(eps, conf, tp / pos, fp / neg, tpr_lo, fpr_hi, tnr_lo, fnr_hi, pos, neg)


def accuracy_allowed(epsilon: float, delta: float) -> float:
    """The largest accuracy of any attack on two equally likely values under (ε, δ).

    An (ε, δ)-indistinguishable pair gives every test with false-positive rate α and
    false-negative rate β both 1 − β ≤ e^ε α + δ and 1 − α ≤ e^ε β + δ; adding them,
    α + β ≥ 2(1 − δ)/(1 + e^ε), so the accuracy 1 − (α + β)/2 is at most
    (e^ε + δ)/(1 + e^ε) (Kairouz, Oh & Viswanath 2015, Thm. 2.1, at equal priors).

    Parameters
    ----------
    epsilon, delta : float
        The claim; ε = inf (no protection) gives 1.

    Returns
    -------
    float
        In [0.5, 1].
    """
    if math.isinf(epsilon):
        return 1.0
    e = math.exp(-epsilon)  # (e^ε + δ)/(1 + e^ε), written without overflow
    return min(1.0, (1.0 + delta * e) / (1.0 + e))
