"""Clopper–Pearson and the ε lower bound: exact values, coverage, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from distpriv import ParameterError
from distpriv.attacks import clopper_pearson, epsilon_lower_bound


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (137, 400)])
def test_clopper_pearson_matches_scipy(k, n):
    # A one-sided bound at 1 − α is the two-sided exact interval at 1 − 2α.
    ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson(k, n, 0.95, "lower") == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson(k, n, 0.95, "upper") == pytest.approx(ci.high, abs=1e-12)


def test_epsilon_bound_value():
    b = epsilon_lower_bound(750, 250, 250, 750, delta=0.0, confidence=0.95)
    each = 0.975
    expected = math.log(
        clopper_pearson(750, 1000, each, "lower") / clopper_pearson(250, 1000, each, "upper")
    )
    assert b.epsilon_lower == pytest.approx(expected)
    assert 0.9 < b.epsilon_lower < math.log(3)
    assert b.tpr == 0.75 and b.fpr == 0.25
    # A useless attack gives no evidence.
    assert epsilon_lower_bound(500, 500, 500, 500).epsilon_lower < 0
    # Perfect separation on 50 + 50 datasets: strong evidence in both directions.
    perfect = epsilon_lower_bound(50, 0, 0, 50)
    assert perfect.epsilon_lower > 2.5
    # The symmetric form dominates when θ₁ is almost never missed but θ₀ often is.
    sym = epsilon_lower_bound(198, 2, 80, 120)
    assert (
        sym.epsilon_lower == pytest.approx(math.log(sym.tnr_lower / sym.fnr_upper))
        and sym.epsilon_lower > 0
    )


def test_bound_covers_the_true_epsilon():
    # Randomized response at exactly ε: TPR = e^ε/(1+e^ε), FPR = 1/(1+e^ε). The 95 % lower
    # bound must not exceed ε in more than about 5 % of independent trials.
    rng = np.random.default_rng(0)
    eps, n, trials = 1.0, 500, 400
    p = math.exp(eps) / (1 + math.exp(eps))
    tp = rng.binomial(n, p, trials)
    fp = rng.binomial(n, 1 - p, trials)
    over = sum(
        epsilon_lower_bound(int(a), n - int(a), int(b), n - int(b)).epsilon_lower > eps
        for a, b in zip(tp, fp, strict=True)
    )
    # Binomial(400, 0.05) exceeds 35 with probability < 1e-4.
    assert over <= 35


@pytest.mark.parametrize("conf", [0.0, 1.0, -0.5, 1.5, float("nan")])
def test_bad_confidence(conf):
    with pytest.raises(ParameterError, match="confidence"):
        epsilon_lower_bound(5, 5, 5, 5, confidence=conf)


def test_bad_counts():
    with pytest.raises(ParameterError, match="both hypotheses"):
        epsilon_lower_bound(0, 0, 5, 5)
    with pytest.raises(ParameterError, match="delta"):
        epsilon_lower_bound(5, 5, 5, 5, delta=1.0)
