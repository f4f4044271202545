"""The attack audit on a released logistic regression.

Chen & Ohrimenko 2023's motivating case: the coefficients of a model trained on the
released 100-row subset of Adult (who is a woman, from age, schooling and weekly hours; the
income column is not an input) leak the share of high earners (0.45 vs 0.55). The audit
shows the attack on the undefended coefficients beating chance, the defended release (the
default calibration on the bootstrap population layer) consistent with its claim, and
the guarantee's population premise. benchmarks/bench_released_model.py prints the same with
more repetitions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv.attacks import audit
from distpriv.datasets.adult import paper_split
from distpriv.modeling import ProportionSecret, model_query
from distpriv.modeling.regression import logistic_regression_query

QUERY = logistic_regression_query("sex = 'Female'", ["age", "education_num", "hours_per_week"])
SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])


@pytest.fixture(scope="module")
def report():
    parts = paper_split(rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(
            parts["modeling"],
            QUERY,
            SECRET,
            subset_size=100,
            method="montecarlo",
            n_samples=1000,
            rng=0,
            bootstrap=20,
        )
        defended = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
        out = audit(
            auxiliary=parts["auxiliary"],
            test=parts["test"],
            query=QUERY,
            secret=SECRET,
            subset_size=100,
            mechanisms=["none", defended],
            model=model,
            repetitions=10,
            rng=0,
        )
    return out, defended


def test_undefended_release_of_the_model_leaks(report):
    out, _ = report
    none = out.get("none")
    best = max(none.attacks, key=lambda a: a.accuracy)
    print(f"\nundefended: {best.attack} accuracy {best.accuracy:.3f} {best.interval}")
    # The attack beats chance: the lower end of its 95 % interval is above 1/2.
    assert best.interval[0] > 0.5


def test_defended_release_is_consistent_with_its_guarantee(report):
    out, defended = report
    mech = out.get("expm-g")
    best = max(mech.attacks, key=lambda a: a.accuracy)
    print(
        f"\ndefended: {best.attack} accuracy {best.accuracy:.3f} {best.interval}; "
        f"epsilon lower bound {mech.epsilon_lower:.3g} <= claim {mech.epsilon:g}"
    )
    assert mech.verdict == "consistent"
    assert mech.epsilon_lower <= mech.epsilon
    # Every attack's accuracy is at most what (epsilon, delta) allows (e^eps + delta ...).
    bound = (np.exp(1.0) + 1e-3) / (1 + np.exp(1.0))
    assert all(a.interval[0] <= bound for a in mech.attacks)
    # The noise covers the population set, not only the fitted model.
    premise = defended.guarantee.premises[-1]
    assert premise.name == "population" and "bootstrap" in premise.statement
    undefended = max(a.accuracy for a in out.get("none").attacks)
    assert best.accuracy <= undefended + 0.05
