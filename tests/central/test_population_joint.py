"""The joint population set against Monte Carlo: "Validity of the set".

A known population with heavy-tailed columns (kurtosis ≥ 50) and a rare secret (the secret's
stratum has ≤ 60 rows in a 250-row modelling table). For a noise fixed before the draw (the
population's own least noise of a shape), the set *covers the truth* when its worst member
is at least as private-breaking as the population: the largest δ(ε) over the members for
that noise is ≥ the population's δ(ε) (both by the exact accountant). The share of seeded
modelling tables where it does not must be ≤ β within a binomial margin. The reference (the
population's own model, moments exact) is independent of the set.

Not vacuous: the fitted moments alone (no set) fail to cover on many tables, and the joint
set is tighter than the box it replaces (its worst member's δ is smaller on most tables).
"""

from __future__ import annotations

import os
from functools import partial

import numpy as np
import pytest
from scipy.stats import binom, kurtosis

import distpriv as dp
from distpriv.errors import ParameterError
from distpriv.modeling import model_query
from distpriv.population.confidence import (
    SET_METHODS,
    confidence_set,
    population_model,
    population_set,
)
from support import quiet, worst_pair_delta

from .test_population_coverage import HEAVY_SECRET, HEAVY_STATS, heavy_population

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
TABLES = 100
ROWS = 250


# The largest δ(ε) over both directions of every pair of a model for a noise.
worst_delta = partial(worst_pair_delta, epsilon=EPS)


def least_noise(pop, shape: np.ndarray, delta: float = DELTA) -> np.ndarray:
    """The least multiple of ``shape`` whose worst δ on ``pop`` meets ``delta`` (doubling,
    then 40 halvings of the bracket; returned at the bracket's upper end)."""
    lo, hi = 0.0, 1.0
    while worst_delta(pop, hi * shape) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst_delta(pop, mid * shape) > delta else (lo, mid)
    return hi * shape


@pytest.fixture(scope="module")
def tables():
    """The population, its own model, and the ``TABLES`` seeded modelling tables' models."""
    frame = heavy_population()
    pop = quiet(
        model_query,
        frame,
        HEAVY_STATS,
        HEAVY_SECRET,
        subset_size=100,
        method="analytic",
        population=True,
    )
    rng = np.random.default_rng(2525)
    models = []
    secret_rows = []
    for _ in range(TABLES):
        sample = frame.iloc[rng.choice(len(frame), ROWS, replace=False)]
        secret_rows.append(int(sample["s"].sum()))
        models.append(
            quiet(
                model_query, sample, HEAVY_STATS, HEAVY_SECRET, subset_size=100, method="analytic"
            )
        )
    return frame, pop, models, secret_rows


def fixed_noise(pop, shape: str) -> np.ndarray:
    """A noise fixed before any table is drawn: the shape at the population's least scale."""
    if shape == "isotropic":
        return quiet(dp.calibrate, "expm-g", pop, epsilon=EPS, delta=DELTA).noise_covariance
    return least_noise(pop, np.diag(np.diag(pop.covariances.mean(axis=0))))


# The diagonal shape's 100 tables run in the slow stage of .ci/run (DISTPRIV_SLOW=1); the
# suite keeps the same test on the isotropic shape (the same tables, the same set).
SHAPES = [
    "isotropic",
    pytest.param(
        "diagonal",
        marks=pytest.mark.skipif(
            not os.environ.get("DISTPRIV_SLOW"),
            reason="slow (a second noise shape on 100 tables; a stage of its own in .ci/run): "
            "set DISTPRIV_SLOW=1",
        ),
    ),
]


@pytest.fixture(scope="module", params=SHAPES)
def draws(request, tables):
    """Per table, for one noise shape fixed in advance (isotropic; the population's
    variances): the population's δ, the fitted model's, the joint and the box set's worst
    members'."""
    _, pop, models, _ = tables
    noise = fixed_noise(pop, request.param)
    truth = worst_delta(pop, noise)  # the population's: the same for every table
    rows = []
    for model in models:
        fitted = worst_delta(model, noise)
        sets = {}
        for method in SET_METHODS:
            with population_set(method):
                members = population_model(model, beta=BETA, noise_cov=noise, epsilon=EPS)
            sets[method] = worst_delta(members, noise)
        rows.append((truth, fitted, sets["joint"], sets["box"]))
    return request.param, rows


def allowed(n: int, beta: float = BETA) -> int:
    """Failures allowed among n draws: the 99.9 % quantile of Binomial(n, β)."""
    return int(binom.ppf(0.999, n, beta))


def test_premise_of_the_monte_carlo(tables):
    frame, _, _, secret_rows = tables
    assert kurtosis(frame["heavy"], fisher=False) >= 50
    assert kurtosis(frame["rare"], fisher=False) >= 50
    assert max(secret_rows) <= 60


def test_joint_set_covers_the_population_within_the_binomial_margin(draws):
    shape, rows = draws
    r = np.array(rows)
    truth, fitted, joint, box = r.T
    miss = int(np.sum(joint < truth * (1 - 1e-9)))
    fitted_miss = int(np.sum(fitted < truth))
    print(
        f"\n{shape}: joint set misses the truth on {miss}/{len(r)} tables (allowed "
        f"{allowed(len(r))}); fitted moments alone miss on {fitted_miss}; median worst "
        f"member / truth: joint {np.median(joint / truth):.3g}, box {np.median(box / truth):.3g}"
    )
    assert miss <= allowed(len(r))
    # Not vacuous: without a set the fitted moments miss far more often than β allows.
    assert fitted_miss > allowed(len(r))
    # Tighter than the box it replaces: its worst member is below the box's on most tables.
    assert np.mean(joint < box) > 0.5


def test_the_box_remains_selectable_and_bad_names_are_refused():
    frame = heavy_population(n=20_000)
    sample = frame.iloc[:ROWS]
    model = quiet(
        model_query, sample, HEAVY_STATS, HEAVY_SECRET, subset_size=100, method="analytic"
    )
    assert confidence_set(model, beta=BETA).method == "box"  # the default
    with population_set("box"):
        cs = confidence_set(model, beta=BETA)
        members = population_model(model, beta=BETA, noise_cov=np.eye(model.dim), epsilon=EPS)
    assert cs.method == "box" and len(members.pairs) == 4  # 2 strata: 4 corners per pair
    with population_set("joint"):
        joint = population_model(model, beta=BETA, noise_cov=np.eye(model.dim), epsilon=EPS)
    assert len(joint.pairs) == 1 and "joint" in str(joint.labels[0])
    with (
        pytest.raises(ParameterError, match=r"population_set must be one of .*got 'ellipse'"),
        population_set("ellipse"),
    ):
        pass
