"""The "tight" population set (population/_tight.py) against brute
force and Monte Carlo.

* The gap's member sits at the quantile of its distance's sampling law: checked against an
  independent Monte Carlo of 400,000 draws.
* The gap statement covers Gaussian gap errors at its level when the noise is shaped from
  the *estimate* (along the fitted gap, a small floor across), as the floored mechanisms'
  is — where a statement along the gap's own direction (exact for a noise fixed in advance)
  misses more often; and its distance is below the joint set's d̂ + z‖B‖₂.
* The whole set covers a known heavy-tailed population with a small secret stratum
  (kurtosis ≥ 50, ≤ 60 secret rows) for noises fixed in advance, including one shaped along
  the gap.
* Slow (``DISTPRIV_SLOW=1``): calibrated on Adult and RAND HIE tables with the set, the
  floored and optimal mechanisms (noise shaped from the table) cover the population.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import binom

import distpriv as dp
from adult_setup import ADULT_STATS, INCOME
from distpriv.errors import MechanismNotApplicableError
from distpriv.modeling import model_query
from distpriv.population._stack import gap_bound
from distpriv.population._tight import quantile_level, quantile_shift_stack
from distpriv.population.confidence import population_model, population_set
from support import quiet

from .test_population_coverage import (
    HEAVY_SECRET,
    HEAVY_STATS,
    RAND_SECRET,
    RAND_STATS,
    heavy_population,
    heavy_population_model,
    load_randhie,
    true_delta,
)
from .test_population_joint import least_noise, worst_delta

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
Z = float(ndtri(1 - BETA))


def allowed(n: int, beta: float = BETA) -> int:
    """Failures allowed among n draws: the 99.9 % quantile of Binomial(n, β)."""
    return int(binom.ppf(0.999, n, beta))


def _inv_sqrt(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(cov)
    return (v / np.sqrt(w)) @ v.T


def test_member_is_at_the_quantile_of_an_independent_monte_carlo():
    """D against the quantile of ‖M(Δ̂ − V^(1/2)η)‖ from 400,000 fresh draws: between the
    law's Φ(z) quantile and a slightly higher one (the design's margin)."""
    rng = np.random.default_rng(7)
    for _ in range(12):
        m = int(rng.integers(2, 6))
        a_ = rng.normal(size=(m, m))
        metric = _inv_sqrt(a_ @ a_.T + 0.05 * np.eye(m))
        spread = rng.normal(size=(m, m)) * rng.exponential(size=m)
        gap = rng.normal(size=m) * rng.exponential() * 3
        shift = quantile_shift_stack(gap[None], metric[None], spread[None], Z)[0]
        dist = float(np.linalg.norm(metric @ (gap + shift)))
        draws = np.linalg.norm((gap - rng.normal(size=(400_000, m)) @ spread.T) @ metric.T, axis=1)
        lo, hi = np.quantile(draws, [1 - BETA, quantile_level(Z) + 0.01])
        assert lo * (1 - 2e-3) <= dist <= hi


def test_gap_statement_covers_with_noise_shaped_from_the_estimate():
    """Δ̂ = Δ + V^(1/2)ξ with the true Δ known; per draw the noise is shaped along the
    *estimated* gap with a small floor (as a floored mechanism's), so the metric depends
    on the draw and magnifies the error across the fitted gap."""
    rng = np.random.default_rng(3)
    m, draws = 3, 2000
    gap = np.array([1.0, 0.5, -0.3])
    c = rng.normal(size=(m, m))
    spread = 0.1 * (c @ c.T + np.eye(m)) / m
    est = gap + rng.normal(size=(draws, m)) @ spread.T
    units = rng.normal(size=(4000, m))
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    metrics, truth, directional, joint = [], [], [], []
    for e in est:
        u = e / np.linalg.norm(e)
        metric = _inv_sqrt(0.05 * np.eye(m) + np.outer(u, u) + 0.01 * np.eye(m))
        metrics.append(metric)
        truth.append(np.linalg.norm(metric @ gap))
        b = metric @ spread
        # The direction-only statement: max over u of uᵀMΔ̂ + z‖Bᵀu‖ (sampled directions).
        directional.append(np.max(units @ (metric @ e) + Z * np.linalg.norm(units @ b, axis=1)))
        joint.append(gap_bound(e, metric, spread, Z))
    metrics_arr, truth_arr = np.array(metrics), np.array(truth)
    shifts = quantile_shift_stack(
        est, metrics_arr, np.broadcast_to(spread, (draws, m, m)).copy(), Z
    )
    tight = np.linalg.norm(np.einsum("bij,bj->bi", metrics_arr, est + shifts), axis=1)
    miss = int(np.sum(tight < truth_arr))
    miss_dir = int(np.sum(np.array(directional) < truth_arr))
    print(
        f"\nquantile misses {miss}/{draws} (allowed {allowed(draws)}); direction-only "
        f"{miss_dir}; median distance / truth: quantile {np.median(tight / truth_arr):.4g},"
        f" joint {np.median(np.array(joint) / truth_arr):.4g}"
    )
    assert miss <= allowed(draws)
    # Sharp, not vacuous: it misses about as often as its level says (the direction-only
    # statement more), and it is below the joint set's bound on most draws.
    assert miss >= 0.02 * draws and miss_dir > miss
    assert np.mean(tight < np.array(joint)) > 0.9


@pytest.fixture(scope="module")
def heavy_draws():
    """Per table and noise: the population's δ and the tight and joint sets' worst members'
    δ, for three noises fixed before the draw (isotropic, the population's variances, and
    one shaped along the population's gap with a small floor), each at the population's
    least scale."""
    frame = heavy_population()
    pop = heavy_population_model(frame)
    var = np.diag(np.diag(pop.covariances.mean(axis=0)))
    gap = pop.means[0] - pop.means[1]
    noises = {
        "isotropic": quiet(dp.calibrate, "expm-g", pop, epsilon=EPS, delta=DELTA).noise_covariance,
        "diagonal": least_noise(pop, var),
        "along-gap": least_noise(pop, np.outer(gap, gap) + 0.02 * var),
    }
    rng = np.random.default_rng(2527)
    rows = []
    for _ in range(80):
        sample = frame.iloc[rng.choice(len(frame), 250, replace=False)]
        model = quiet(
            model_query, sample, HEAVY_STATS, HEAVY_SECRET, subset_size=100, method="analytic"
        )
        row = {}
        for name, noise in noises.items():
            out = [worst_delta(pop, noise)]
            for method in ("tight", "joint"):
                with population_set(method):
                    members = population_model(model, beta=BETA, noise_cov=noise, epsilon=EPS)
                out.append(worst_delta(members, noise))
            row[name] = out
        rows.append(row)
    return rows


@pytest.mark.skipif(
    not os.environ.get("DISTPRIV_SLOW"),
    reason="slow (80 tables, tight and joint members; a stage of its own in .ci/run): "
    "set DISTPRIV_SLOW=1",
)
@pytest.mark.parametrize("shape", ["isotropic", "diagonal", "along-gap"])
def test_tight_set_covers_a_heavy_tailed_population(heavy_draws, shape):
    r = np.array([row[shape] for row in heavy_draws])
    truth, tight, joint = r.T
    miss = int(np.sum(tight < truth * (1 - 1e-9)))
    print(
        f"\n{shape}: tight misses {miss}/{len(r)} (allowed {allowed(len(r))}), joint "
        f"{int(np.sum(joint < truth * (1 - 1e-9)))}; median worst member / truth: tight "
        f"{np.median(tight / truth):.3g}, joint {np.median(joint / truth):.3g}"
    )
    assert miss <= allowed(len(r))


def test_tight_is_selectable():
    frame = heavy_population(n=20_000)
    model = quiet(
        model_query,
        frame.iloc[:250],
        HEAVY_STATS,
        HEAVY_SECRET,
        subset_size=100,
        method="analytic",
    )
    noise = np.eye(model.dim) * 1e-3
    with population_set("tight"):
        tight = population_model(model, beta=BETA, noise_cov=noise, epsilon=EPS)
    with population_set("joint"):
        joint = population_model(model, beta=BETA, noise_cov=noise, epsilon=EPS)
    assert len(tight.pairs) == 1
    assert not np.allclose(tight.means, joint.means)  # a different gap statement


slow = pytest.mark.skipif(
    not os.environ.get("DISTPRIV_SLOW"),
    reason="slow (optimal-g-full on 80 tables): set DISTPRIV_SLOW=1",
)


@slow
@pytest.mark.parametrize("which", ["adult", "randhie"])
def test_shaped_noise_calibrated_on_the_tight_set_covers_the_population(which):
    from distpriv.datasets.adult import load_adult

    if which == "adult":
        frame, stats, secret = load_adult(), ADULT_STATS, INCOME
    else:
        frame, stats, secret = load_randhie(), RAND_STATS, RAND_SECRET
    pop = quiet(
        model_query, frame, stats, secret, subset_size=100, method="analytic", population=True
    )
    rng = np.random.default_rng(2528)
    ratios: dict[str, list[float]] = {"daum-floor": [], "optimal-g-full": []}
    for size in (1000, 4000):
        for _ in range(20):
            sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
            model = quiet(model_query, sample, stats, secret, subset_size=100, method="analytic")
            for name in ratios:
                try:
                    with population_set("tight"):
                        mech = quiet(dp.calibrate, name, model, epsilon=EPS, delta=DELTA)
                except MechanismNotApplicableError:
                    continue
                ratios[name].append(true_delta(pop, mech.noise_covariance) / DELTA)
    for name, r in ratios.items():
        arr = np.array(r)
        bad = int(np.sum(arr > 1 + 1e-6))
        print(f"\n{which} {name}: {bad}/{arr.size} violate; largest {arr.max():.3g}")
        assert bad <= allowed(arr.size)
